#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The sample MPEG-2 stream of the tests, the benchmarks and the main job,
# generated so the repository needs no media from elsewhere:
#   scripts/make-media.sh [-f] OUT.m2v   (e.g. build/tests/media/greyramp.m2v)
# greyramp.m2v: MPEG-2 (mpeg2enc, format 3), 720x576, 25 fps, 25 pictures,
# GOPs of 12 in decode order I P B B P B B ..., about 5.4 Mbit/s. The
# picture is a vertical grey ramp (videotestsrc pattern=gradient) with a
# moving ball and a light grain (pattern=snow at 3.5% opacity), coded at a
# fixed fine quantizer (3): every picture carries real residuals (25-38 kB
# each), and re-encoding at the coarsest quantizer reaches a quarter of the
# rate, so the rate transcoder can take it to a third without dropping
# frames. videotestsrc is deterministic: the file is the same on every run.
# Written atomically; kept if it exists, unless -f. The build generates it
# (tests/media/meson.build); meson tests find it through $TWOFLOW_MEDIA.
set -euo pipefail
force=0
if [ "${1:-}" = -f ]; then force=1; shift; fi
out=$1
[ -f "$out" ] && [ $force = 0 ] && exit 0
mkdir -p "$(dirname "$out")"
tmp="$out.$$.tmp"
trap 'rm -f "$tmp"' EXIT
caps="width=720,height=576,framerate=25/1"
gst-launch-1.0 -q \
  videotestsrc num-buffers=25 pattern=gradient ! "video/x-raw,$caps" ! \
    videoconvert ! c.sink_0 \
  videotestsrc num-buffers=25 pattern=ball animation-mode=frames \
      background-color=0x00000000 ! "video/x-raw,format=AYUV,$caps" ! \
    videoconvert ! c.sink_1 \
  videotestsrc num-buffers=25 pattern=snow ! "video/x-raw,$caps" ! \
    videoconvert ! c.sink_2 \
  compositor name=c background=black sink_2::alpha=0.035 ! videoconvert ! \
    "video/x-raw,format=I420,$caps" ! \
    mpeg2enc format=3 quantisation=3 bitrate=5000 b-per-refframe=2 \
      min-gop-size=12 max-gop-size=12 ! \
    filesink location="$tmp"
mv "$tmp" "$out"
