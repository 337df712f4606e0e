#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The programs' tests under AddressSanitizer: the system, web, security
# and net suites (scripts/test.sh runs only the unit and fuzz suites under
# ASan) against a -Db_sanitize=address tree, every process of a test with
# the ASan runtime preloaded, so the plugins twoflow-server and
# twoflow-proxy load, and the Python and gst-launch clients, run checked.
# The verdict is the sanitizer's: exit 1 when any process wrote a report
# (in $REPORTS), whatever the tests said; a test can fail for ASan's own
# cost (its RSS bounds: the allocator's quarantine).
#   scripts/sanitize-system.sh [TEST ...]   (default: every suite but unit)
# Not in CI (about 30 minutes); it found the proxy's heap-use-after-free
# at a seek (the start-up probe) that crashed system-seek once in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build-sanitize-system
REPORTS=${REPORTS:-$BUILD/asan-reports}

scripts/build.sh build >/dev/null
if [ ! -f $BUILD/build.ninja ]; then
  meson setup $BUILD -Db_sanitize=address -Db_lundef=false \
    -Dbenchmarks=disabled >/dev/null
fi
# (the typelib's introspection dump runs an ASan binary)
ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 ninja -C $BUILD >/dev/null

# Tools that hang or abort with the runtime preloaded (certtool, curl and
# chromium) run without it: they are not under test.
wrappers=$(mktemp -d)
trap 'rm -rf "$wrappers"' EXIT
for tool in certtool curl chromium openssl; do
  path=$(command -v $tool) || continue
  printf '#!/bin/sh\nexec env -u LD_PRELOAD %s "$@"\n' "$path" >"$wrappers/$tool"
  chmod +x "$wrappers/$tool"
done
rm -rf "$REPORTS"
mkdir -p "$REPORTS"
if [ $# -gt 0 ]; then
  tests=("$@")
else
  tests=(--no-suite unit)
fi
rc=0
# GIO's libproxy resolver throws C++ exceptions the preloaded runtime
# cannot intercept: the direct resolver instead (nothing here has a proxy)
PATH="$wrappers:$PATH" GIO_USE_PROXY_RESOLVER=dummy \
  ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:log_path=$PWD/$REPORTS/asan \
  LD_PRELOAD=$(gcc -print-file-name=libasan.so) G_DEBUG=fatal-criticals \
  meson test -C $BUILD --num-processes 2 --timeout-multiplier 3 "${tests[@]}" || rc=$?
echo "meson test: exit $rc (tests that bound RSS fail under ASan's quarantine)"
if compgen -G "$REPORTS/asan.*" >/dev/null; then
  for r in "$REPORTS"/asan.*; do
    echo "== $r"
    head -n 30 "$r"
  done
  exit 1
fi
echo "no sanitizer report"
