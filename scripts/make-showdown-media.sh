#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The showdown benchmark's clips (experiments/showdown/), made with Debian's
# encoders only (nothing downloaded). Cached: a file that exists is kept
# (written atomically), so a second run does nothing.
#   scripts/make-showdown-media.sh DIR
#
#   mpeg2-360p.ts     MPEG-2 (libavcodec mpeg2video through ffmpeg, 3 Mbit/s,
#                     VBV 3.5 Mbit/s), 640x360, 25 fps, 750 pictures (30 s),
#                     closed GOPs of 12 (I B B P ...), video only, MPEG-TS
#   h264-aac-360p.ts  H.264 main (libx264 veryfast, 1.8 Mbit/s, 2 B frames,
#                     GOPs of 50) 640x360, 25 fps, 750 frames + AAC
#                     (128 kbit/s, a 440 Hz tone), MPEG-TS (about 2 Mbit/s)
#   mpeg2-360p-10s.ts the first 10 s (250 pictures) of mpeg2-360p.ts's
#                     picture, encoded alike: the smoke test's clip
# The picture is the greyramp of make-media.sh at 640x360 (videotestsrc,
# deterministic): a vertical grey ramp, a moving ball and a light grain
# (pattern=snow at 5 % opacity), so every picture differs from its
# neighbours (a frozen picture costs PSNR) and carries real residuals.
# ffmpeg encodes (not mpeg2enc): mpeg2enc's buffers carry PTS = DTS in
# decode order, so a TS made from them has wrong display times for B
# frames, and the benchmark judges each frame against its display time.
set -euo pipefail
dir=${1:?usage: make-showdown-media.sh DIR}
mkdir -p "$dir"
N=750
CAPS="width=640,height=360,framerate=25/1"

picture() {   # the raw picture as YUV4MPEG on stdout
  gst-launch-1.0 -q \
    videotestsrc num-buffers=$N pattern=gradient ! "video/x-raw,$CAPS" ! videoconvert ! c.sink_0 \
    videotestsrc num-buffers=$N pattern=ball animation-mode=frames \
        background-color=0x00000000 ! "video/x-raw,format=AYUV,$CAPS" ! videoconvert ! c.sink_1 \
    videotestsrc num-buffers=$N pattern=snow ! "video/x-raw,$CAPS" ! videoconvert ! c.sink_2 \
    compositor name=c background=black sink_2::alpha=0.05 ! videoconvert ! \
    "video/x-raw,format=I420,$CAPS" ! y4menc ! fdsink fd=1
}

make() {   # make NAME FFMPEG-OPTIONS... (input 0: the picture on stdin)
  local out="$dir/$1"; shift
  [ -s "$out" ] && return 0
  rm -f "$out.part"
  picture | ffmpeg -hide_banner -loglevel error -nostdin -y -f yuv4mpegpipe -i pipe:0 \
    "$@" -f mpegts "$out.part"
  mv "$out.part" "$out"
}

N=250
make mpeg2-360p-10s.ts -c:v mpeg2video -b:v 3M -maxrate 3.5M -bufsize 1835k \
  -g 12 -bf 2 -flags +cgop -sc_threshold 1000000000
[ "${SHOWDOWN_SMOKE_ONLY:-0}" = 1 ] && exit 0
N=750
make mpeg2-360p.ts -c:v mpeg2video -b:v 3M -maxrate 3.5M -bufsize 1835k \
  -g 12 -bf 2 -flags +cgop -sc_threshold 1000000000
make h264-aac-360p.ts -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=30" \
  -map 0:v -map 1:a -c:v libx264 -preset veryfast -profile:v main -b:v 1.8M \
  -maxrate 2M -bufsize 2M -bf 2 -g 50 -c:a aac -b:a 128k -ac 2
