#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Split+merge throughput on one core, side by side with a baseline pipeline.
#   bench/twoflow/run.sh [BUILD_DIR] [FRAMES]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
FRAMES=${2:-200000}
export GST_PLUGIN_PATH="$PWD/$BUILD/gst"
STREAM="$BUILD/bench/twoflow/ball-600.m2v"
scripts/make-test-stream.sh "$STREAM" 600
exec taskset -c 0 "$BUILD/bench/twoflow/bench-splitmerge" "$STREAM" "$FRAMES"
