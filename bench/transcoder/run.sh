#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Speed of ratetranscoder on one core against decoding alone, and PSNR of
# its output per target. Usage: bench/transcoder/run.sh [BUILD_DIR] [args]
#   args: -n FRAMES (default 250), -r RUNS (3), --psnr, or a FILE.m2v
set -e
build=${1:-build}
[ $# -gt 0 ] && shift
build=$(cd "$build" && pwd)
export GST_PLUGIN_PATH_1_0="$build/gst"
export GST_REGISTRY_1_0="$build/bench/transcoder/registry.bin"
cd "$build/bench/transcoder"
exec ./bench-ratetranscoder "$@"
