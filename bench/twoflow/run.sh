#!/usr/bin/env bash
# Split+merge throughput on one core, side by side with a baseline pipeline.
#   bench/twoflow/run.sh [BUILD_DIR] [FRAMES]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
FRAMES=${2:-200000}
export GST_PLUGIN_PATH="$PWD/$BUILD/gst"
STREAM="$BUILD/bench/twoflow/ball-600.m2v"
if [ ! -f "$STREAM" ]; then
  gst-launch-1.0 -q videotestsrc num-buffers=600 pattern=ball ! \
    video/x-raw,width=352,height=288,framerate=25/1 ! \
    mpeg2enc format=3 b-per-refframe=2 min-gop-size=12 max-gop-size=12 ! \
    filesink location="$STREAM.tmp"
  mv "$STREAM.tmp" "$STREAM"
fi
exec taskset -c 0 "$BUILD/bench/twoflow/bench-splitmerge" "$STREAM" "$FRAMES"
