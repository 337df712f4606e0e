#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Media for the tests at the default settings (issue 23: a clip shorter
# than a segment, a 1080p flow at 5 Mbit/s), made with ffmpeg's lavfi
# sources (testsrc2, sine: deterministic; nothing downloaded). Cached: a
# file that exists is kept (written atomically).
#   scripts/make-defaults-media.sh DIR
#
#   short-720p.mp4        5.3 s, 1280x720 25 fps H.264 (libx264, B frames)
#                         + AAC, MP4: shorter than the default 10 s segment
#   short-720p-2audio.mp4 6 s, the same with two AAC tracks (440/660 Hz)
#   hd-5mbit-30s.mp4      30 s, 1920x1080 25 fps H.264 High at 5 Mbit/s
#                         (VBV 5 Mbit/s, 10 Mbit buffer) + AAC, MP4
set -euo pipefail
dir=${1:?usage: make-defaults-media.sh DIR}
mkdir -p "$dir"
# one maker at a time (tests that use the corpus run side by side)
exec 9>"$dir/.lock"
flock 9

make() {   # make NAME FFMPEG-ARGS... (the output is the last argument)
  local out="$dir/$1"; shift
  [ -s "$out" ] && return 0
  rm -f "$out.part.mp4"
  ffmpeg -v error -y -nostdin "$@" "$out.part.mp4"
  mv "$out.part.mp4" "$out"
}

X264="-c:v libx264 -preset veryfast -pix_fmt yuv420p -g 50 -bf 2"
make short-720p.mp4 -f lavfi -i testsrc2=size=1280x720:rate=25 \
  -f lavfi -i sine=frequency=440:sample_rate=48000 -t 5.3 \
  $X264 -c:a aac -b:a 128k -f mp4
make short-720p-2audio.mp4 -f lavfi -i testsrc2=size=1280x720:rate=25 \
  -f lavfi -i sine=frequency=440:sample_rate=48000 \
  -f lavfi -i sine=frequency=660:sample_rate=48000 -t 6 \
  -map 0:v -map 1:a -map 2:a $X264 -c:a aac -b:a 96k -f mp4
make hd-5mbit-30s.mp4 -f lavfi -i testsrc2=size=1920x1080:rate=25 \
  -f lavfi -i sine=frequency=440:sample_rate=48000 -t 30 \
  $X264 -profile:v high -b:v 5M -maxrate 5M -bufsize 10M \
  -c:a aac -b:a 128k -f mp4
