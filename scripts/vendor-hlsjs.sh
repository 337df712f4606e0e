#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs hls.js from npm (Chromium has no native HLS) into build-deps/npm
# and copies it next to the web page in the build dir ($1, default build).
# Never fails the build: without it the page falls back to native HLS.
# meson fetches the same pinned version by itself (subprojects/hls.js.wrap,
# checked by SHA-256); this copy is its fallback for an offline build
# (tools/proxy/meson.build checks it is the same file).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
JS=build-deps/npm/node_modules/hls.js/dist/hls.min.js
if [ ! -f "$JS" ] && command -v npm >/dev/null; then
  mkdir -p build-deps/npm
  npm install --no-save --no-audit --no-fund --prefix build-deps/npm \
    hls.js@1.5.20 >/dev/null 2>&1 || echo "twoflow: npm install hls.js failed" >&2
fi
if [ -f "$JS" ] && [ -d "$BUILD/tools/proxy" ]; then
  cp "$JS" "$BUILD/tools/proxy/hls.min.js"
fi
exit 0
