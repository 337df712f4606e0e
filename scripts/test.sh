#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole test suite: installs what is missing, builds, runs every meson
# test (the net suite needs root; it skips otherwise), then the unit tests
# under AddressSanitizer/UBSan, then each libFuzzer target briefly.
#   FUZZ_SECONDS=N   seconds per fuzz target (default 15; 0 skips fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-15}
# GStreamer keeps global allocations until exit: leak checks would only
# report those (the typelib's introspection dump, the unit tests, the
# fuzzers); the sanitizer runtime need not come first in the link order.
ASAN_NOLEAKS=detect_leaks=0:verify_asan_link_order=0

scripts/build.sh build

# The ASan and fuzz trees build in the background, at low priority, while
# the tests below run: only what their suites need (a full build of each
# would compile everything again).
prebuild_log=$(mktemp)
(
  if [ ! -f build-asan/build.ninja ]; then
    # GStreamer's own inline readers (GST_READ_UINT32_BE, GstByteReader)
    # load unaligned words by design on x86: UBSan's alignment check is
    # left out.
    meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
      -Dc_args=-fno-sanitize=alignment -Dbenchmarks=disabled
  fi
  # (the typelib's introspection dump runs an ASan binary)
  ASAN_OPTIONS=$ASAN_NOLEAKS nice -n 10 \
    ninja -C build-asan \
    $(scripts/ninja-targets.py build-asan --suite unit --suite fuzz)
  if [ "$FUZZ_SECONDS" -gt 0 ]; then
    if [ ! -f build-fuzz/build.ninja ]; then
      CC=clang meson setup build-fuzz -Dfuzzing=true -Dbenchmarks=disabled
    fi
    nice -n 10 ninja -C build-fuzz $(scripts/ninja-targets.py build-fuzz --fuzzers)
  fi
) >"$prebuild_log" 2>&1 &
prebuild=$!
# a failing run below ends the script: the background build goes with it
trap 'pkill -P $prebuild 2>/dev/null; kill $prebuild 2>/dev/null; true' EXIT

meson test -C build --no-rebuild --print-errorlogs --num-processes 2
prebuild_rc=0
wait $prebuild || prebuild_rc=$?
if [ "$prebuild_rc" != 0 ]; then
  cat "$prebuild_log"
fi
rm -f "$prebuild_log"
trap - EXIT
[ "$prebuild_rc" = 0 ]

echo "== unit tests under -Db_sanitize=address,undefined"
# UBSan findings are fatal.
ASAN_OPTIONS=$ASAN_NOLEAKS \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --suite unit --suite fuzz --print-errorlogs

if [ "$FUZZ_SECONDS" -gt 0 ]; then
  echo "== libFuzzer targets, ${FUZZ_SECONDS}s each"
  # side by side (each for FUZZ_SECONDS of wall time), reported in turn
  fuzzlog=$(mktemp -d)
  for target in $(find build-fuzz/tests/fuzz -type f -executable -name 'fuzz-*' ! -name '*-corpus'); do
    name=$(basename "$target")
    corpus="$fuzzlog/$name.corpus"
    mkdir "$corpus"
    cp -r tests/fuzz/*/corpus/. "$corpus"/ 2>/dev/null || true
    # the run fails on any crash or sanitizer report
    (cd "$corpus" && ASAN_OPTIONS=$ASAN_NOLEAKS "$OLDPWD/$target" \
      -max_total_time="$FUZZ_SECONDS" -print_final_stats=0 . \
      >"$fuzzlog/$name.log" 2>&1; echo $? >"$fuzzlog/$name.rc") &
  done
  wait
  fuzz_failed=0
  for rc in "$fuzzlog"/*.rc; do
    name=$(basename "$rc" .rc)
    echo "-- $name"
    tail -n 1 "$fuzzlog/$name.log"
    if [ "$(cat "$rc")" != 0 ]; then
      tail -n 40 "$fuzzlog/$name.log"
      fuzz_failed=1
    fi
  done
  rm -rf "$fuzzlog"
  [ "$fuzz_failed" = 0 ]
fi
# One closing line over all meson test runs above.
/usr/bin/python3 - build/meson-logs/testlog.json \
  build-asan/meson-logs/testlog.json <<'PY'
import json, sys
ok = bad = skip = 0
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)["result"]
        ok += r in ("OK", "EXPECTEDFAIL")
        skip += r == "SKIP"
        bad += r not in ("OK", "EXPECTEDFAIL", "SKIP")
print(f"{ok} passed, {bad} failed, {skip} skipped")
PY
