#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs what is missing and builds twoflow into build/ (or $1).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}

scripts/install-deps.sh
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" >/dev/null
fi
# hls.js for the page: meson fetches it (subprojects/hls.js.wrap)
ninja -C "$BUILD" >/dev/null
# python/ (twoflowlab) for the experiments and benchmarks run by hand:
# an editable install of this checkout into Debian's python3 (the tests
# put python/ on PYTHONPATH themselves, so another checkout's install
# never shadows theirs)
/usr/bin/python3 -m pip install -q --no-deps --no-build-isolation \
  --break-system-packages --root-user-action=ignore -e python
