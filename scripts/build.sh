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
