#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The generated MPEG-2 test stream of the main job and the benchmarks:
# 352x288, 25 fps, 12-frame GOPs IBBPBBPBBPBB (mpeg2enc), N frames of
# videotestsrc's ball. Written atomically; kept if it exists.
#   scripts/make-test-stream.sh OUT.m2v [FRAMES]   (default 600)
# The element tests make theirs in-process (tests/check/elements/
# twoflowtestutil.c) with the same encoder settings.
set -euo pipefail
out=$1
frames=${2:-600}
[ -f "$out" ] && exit 0
mkdir -p "$(dirname "$out")"
gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball ! \
  video/x-raw,width=352,height=288,framerate=25/1 ! \
  mpeg2enc format=3 b-per-refframe=2 min-gop-size=12 max-gop-size=12 ! \
  filesink location="$out.tmp"
mv "$out.tmp" "$out"
