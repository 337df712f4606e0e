#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The real-media test corpus: short files (3 s, 320x240, 25 fps, a 440 Hz
# tone) in the containers and codecs twoflow serves, made with Debian's
# encoders only (nothing downloaded). Cached: a file that exists is kept
# (written atomically), so a second run does nothing.
#   scripts/make-corpus.sh [--new-codecs] DIR
#
#   h264-aac.mp4          x264enc (B frames) + avenc_aac, mp4mux
#   h264-aac.mkv          x264enc + voaacenc, matroskamux
#   h264-opengop-opus.mkv x264enc open GOPs (non-IDR I frames) + opusenc
#   h264-2audio.mkv       x264enc + two audio tracks: AAC tagged English,
#                         MP3 (660 Hz) tagged French (track selection)
#   h264-field-mp3.ts     x264enc interlaced (MBAFF: x264 codes interlaced
#                         video as field macroblock pairs, no PAFF) + lame
#   mpeg2-mp2.ts          mpeg2enc (open GOPs) + twolamemp2enc, mpegtsmux,
#                         PTS starting 26.5 h in: it wraps (2^33 / 90 kHz)
#                         1.5 s into the file
#   mpeg2-ac3.ts          mpeg2enc + avenc_ac3, mpegtsmux, PTS from 11 h
#   mpeg2-ac3.mpg         mpeg2-ac3.ts remuxed by ffmpeg into a DVD-style
#                         program stream (-f vob)
#   h264-late-video.mp4   x264enc + avenc_aac, the video 1.5 s after the
#                         audio (an empty edit): the audio before the first
#                         picture is kept, with the A/V offset
#   h264-early-audio.mp4  the same with the video 0.6 s after the audio:
#                         the picture sent that lead early (start-up)
#   h264-eac3.ts          ffmpeg: libx264 + E-AC-3 in MPEG-TS (DVB-style;
#                         mpegtsmux and mp4mux of 1.22 cannot carry E-AC-3:
#                         the proxy transcodes it to AAC for them)
#   mpeg2-mp2.mpg         mpeg2enc + avenc_mp2, mpegpsmux (program stream);
#                         not in the system test: GStreamer's psdemux loses
#                         this file's first sequence header (ffmpeg reads
#                         it), so nothing GStreamer parses from it decodes
#   h264-vfr.mp4          ffmpeg: libx264 (B frames) at 25 then 15 fps (a
#                         variable frame rate, its reordering delay grows)
#                         + AAC: an MP4 fetch keeps the last picture
#   h264-aac-12s.mp4      as h264-aac.mp4, 12 s (a key frame every second):
#                         seeking (RTSP Range, tests/system/test_seek.py)
# and the bad inputs (served to check the error paths):
#   bad-truncated.mp4     the first 60 % of h264-aac.mp4 (no moov)
#   bad-audio-only.mp4    avenc_aac in mp4mux, no video
#   bad-text.mp4          a text file
# With --new-codecs the H.265 and AV1 clips instead (ffmpeg: libx265,
# libsvtav1, libaom-av1 have no GStreamer element in Debian 12), in a
# directory of their own (tests/system/test_media.py --new-codecs serves
# it; the default corpus's tests see no new files):
#   h265-aac.mp4          libx265 closed GOPs, B pyramids, hvc1 + AAC
#   h265-opengop-main10-aac.ts  libx265 Main 10, open GOPs (CRA + RASL),
#                         B pyramids + AAC in MPEG-TS
#   h265-opus.mkv         libx265 open GOPs + Opus, Matroska
#   h265-1080p-aac.mp4    libx265 1920x1080, B pyramids + AAC (2 s)
#   h265-interlaced-aac.ts  libx265 interlaced (interlace=tff: 320x240 at
#                         25 fps coded as 150 field pictures with pic_struct
#                         SEI), B pyramids + AAC in MPEG-TS
#   av1-svt-opus.mkv      libsvtav1 hierarchical (mini-GOPs of 8, hidden
#                         frames shown by show_existing_frame) + Opus
#   av1-aom-aac.mp4       libaom-av1 alt-ref frames + AAC
#   av1-1080p-opus.mkv    libsvtav1 1920x1080 hierarchical + Opus (2 s)
set -euo pipefail
new_codecs=false
if [ "${1:-}" = --new-codecs ]; then
  new_codecs=true
  shift
fi
dir=${1:?usage: make-corpus.sh [--new-codecs] DIR}
mkdir -p "$dir"
# one maker at a time (tests that use the corpus run side by side)
exec 9>"$dir/.lock"
flock 9
N=75            # video frames (3 s)
AN=141          # audio buffers of 1024 samples at 48 kHz (~3 s)
V="videotestsrc num-buffers=$N pattern=ball"
VCAPS="video/x-raw,width=320,height=240,framerate=25/1"
A="audiotestsrc num-buffers=$AN samplesperbuffer=1024 freq=440 wave=sine"
ACAPS="audio/x-raw,rate=48000,channels=2"
HOURS=3600000000000

make() {   # make NAME PIPELINE... (its "filesink" writes NAME)
  local out="$dir/$1"; shift
  [ -s "$out" ] && return 0
  rm -f "$out.part"
  # shellcheck disable=SC2048,SC2086
  gst-launch-1.0 -q ${*/filesink/filesink location=$out.part} >/dev/null
  mv "$out.part" "$out"
}

if $new_codecs; then
  ffmake() {   # ffmake NAME SIZE SECONDS FFMPEG-ARGS... (testsrc2 + a tone)
    local out="$dir/$1" size=$2 secs=$3 ext=${1##*.}; shift 3
    [ -s "$out" ] && return 0
    SVT_LOG=1 ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=$size:rate=25" \
      -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$secs" -ac 2 \
      "$@" -f "$(case $ext in mp4) echo mp4;; mkv) echo matroska;;
                 ts) echo mpegts;; esac)" "$out.part"
    mv "$out.part" "$out"
  }
  X265="-c:v libx265 -preset ultrafast -x265-params"
  GOP="keyint=25:min-keyint=25:scenecut=0:bframes=4:b-pyramid=1"
  SVT="-c:v libsvtav1 -preset 12 -g 50 -svtav1-params hierarchical-levels=3"

  ffmake h265-aac.mp4 320x240 3 $X265 "$GOP:open-gop=0:log-level=error" \
    -tag:v hvc1 -c:a aac -b:a 128k
  ffmake h265-opengop-main10-aac.ts 320x240 3 -pix_fmt yuv420p10le \
    $X265 "$GOP:open-gop=1:log-level=error" -c:a aac -b:a 128k
  ffmake h265-opus.mkv 320x240 3 $X265 "$GOP:open-gop=1:log-level=error" \
    -c:a libopus -b:a 96k
  ffmake h265-1080p-aac.mp4 1920x1080 2 $X265 "$GOP:open-gop=0:log-level=error" \
    -tag:v hvc1 -b:v 4M -c:a aac -b:a 128k
  ffmake h265-interlaced-aac.ts 320x240 3 -vf separatefields \
    $X265 "keyint=50:min-keyint=50:scenecut=0:bframes=4:b-pyramid=1:open-gop=0:interlace=tff:log-level=error" \
    -c:a aac -b:a 128k
  ffmake av1-svt-opus.mkv 320x240 3 $SVT -c:a libopus -b:a 96k
  ffmake av1-aom-aac.mp4 320x240 3 -c:v libaom-av1 -cpu-used 8 \
    -lag-in-frames 16 -g 50 -b:v 400k -c:a aac -b:a 128k
  ffmake av1-1080p-opus.mkv 1920x1080 2 $SVT -b:v 3M -c:a libopus -b:a 96k
  exit 0
fi

X264="x264enc bframes=2 key-int-max=25 speed-preset=ultrafast bitrate=600"
M2V="mpeg2enc format=3 b-per-refframe=2 min-gop-size=12 max-gop-size=12 bitrate=800"

make h264-aac.mp4 mp4mux name=m ! filesink \
  $V ! $VCAPS ! $X264 ! h264parse ! queue ! m. \
  $A ! $ACAPS ! audioconvert ! avenc_aac ! aacparse ! queue ! m.
make h264-aac-12s.mp4 mp4mux name=m ! filesink \
  $V num-buffers=300 ! $VCAPS ! $X264 ! h264parse ! queue ! m. \
  $A num-buffers=563 ! $ACAPS ! audioconvert ! avenc_aac ! aacparse ! queue ! m.
make h264-aac.mkv matroskamux name=m ! filesink \
  $V ! $VCAPS ! $X264 ! h264parse ! queue ! m. \
  $A ! $ACAPS ! audioconvert ! voaacenc ! aacparse ! queue ! m.
make h264-opengop-opus.mkv matroskamux name=m ! filesink \
  $V ! $VCAPS ! x264enc bframes=2 key-int-max=25 speed-preset=ultrafast \
  bitrate=600 option-string=open-gop=1 ! h264parse ! queue ! m. \
  $A ! $ACAPS ! audioconvert ! audioresample ! opusenc ! queue ! m.
make h264-2audio.mkv matroskamux name=m ! filesink \
  $V ! $VCAPS ! $X264 ! h264parse ! queue ! m. \
  $A ! $ACAPS ! audioconvert ! avenc_aac ! taginject tags=language-code=eng ! \
  aacparse ! queue ! m. \
  $A freq=660 ! $ACAPS ! audioconvert ! lamemp3enc ! \
  taginject tags=language-code=fra ! mpegaudioparse ! queue ! m.
make h264-field-mp3.ts mpegtsmux name=m ! filesink \
  $V ! $VCAPS ! interlace field-pattern=1:1 top-field-first=true ! \
  x264enc interlaced=true bframes=2 key-int-max=25 speed-preset=ultrafast \
  bitrate=800 ! h264parse ! queue ! m. \
  $A ! $ACAPS ! audioconvert ! lamemp3enc ! mpegaudioparse ! queue ! m.
# mpegtsmux writes running time + its clock base (3600 s): the sources'
# offsets put the first PTS hours in; WRAP puts it 1.5 s before the 33-bit
# PTS wraps (2^33 / 90 kHz = 95443.717688889 s).
WRAP=$((95443717688889 - 3600000000000 - 1500000000))
make mpeg2-mp2.ts mpegtsmux name=m ! filesink \
  $V timestamp-offset=$WRAP ! $VCAPS ! \
  $M2V ! mpegvideoparse ! queue ! m. \
  $A timestamp-offset=$WRAP ! $ACAPS ! \
  audioconvert ! twolamemp2enc ! mpegaudioparse ! queue ! m.
make mpeg2-ac3.ts mpegtsmux name=m ! filesink \
  $V timestamp-offset=$((10 * HOURS)) ! $VCAPS ! $M2V ! mpegvideoparse ! \
  queue ! m. \
  $A timestamp-offset=$((10 * HOURS)) ! $ACAPS ! audioconvert ! \
  avenc_ac3 ! ac3parse ! queue ! m.
make mpeg2-mp2.mpg mpegpsmux name=m ! filesink \
  $V ! $VCAPS ! $M2V ! mpegvideoparse ! queue ! m. \
  $A ! $ACAPS ! audioconvert ! avenc_mp2 ! mpegaudioparse ! queue ! m.

if [ ! -s "$dir/mpeg2-ac3.mpg" ]; then
  ffmpeg -v error -y -i "$dir/mpeg2-ac3.ts" -c copy -f vob \
    "$dir/mpeg2-ac3.mpg.part"
  mv "$dir/mpeg2-ac3.mpg.part" "$dir/mpeg2-ac3.mpg"
fi

# the video starts 1.5 s after the audio (mp4mux writes an empty edit)
make h264-late-video.mp4 mp4mux name=m ! filesink \
  $V timestamp-offset=1500000000 ! $VCAPS ! $X264 ! h264parse ! queue ! m. \
  audiotestsrc num-buffers=211 samplesperbuffer=1024 freq=440 wave=sine ! \
  $ACAPS ! audioconvert ! avenc_aac ! aacparse ! queue ! m.
# the video 0.6 s after the audio: a lead the session sends the picture
# early for (docs/system.md, "Start-up")
make h264-early-audio.mp4 mp4mux name=m ! filesink \
  $V timestamp-offset=600000000 ! $VCAPS ! $X264 ! h264parse ! queue ! m. \
  audiotestsrc num-buffers=169 samplesperbuffer=1024 freq=440 wave=sine ! \
  $ACAPS ! audioconvert ! avenc_aac ! aacparse ! queue ! m.
# a DVB-style broadcast file: H.264 with E-AC-3 in MPEG-TS (ffmpeg: no
# E-AC-3 encoder or TS muxing of it in GStreamer 1.22)
if [ ! -s "$dir/h264-eac3.ts" ]; then
  ffmpeg -v error -y -f lavfi -i "testsrc2=size=320x240:rate=25" \
    -f lavfi -i "sine=frequency=440:sample_rate=48000" -t 3 \
    -c:v libx264 -preset ultrafast -bf 2 -g 25 -b:v 600k \
    -c:a eac3 -b:a 192k -ac 2 -f mpegts "$dir/h264-eac3.ts.part"
  mv "$dir/h264-eac3.ts.part" "$dir/h264-eac3.ts"
fi

# variable frame rate: 1.6 s at 25 fps, 1.4 s at 15 fps, joined by the
# concat filter and encoded with their own timestamps
if [ ! -s "$dir/h264-vfr.mp4" ]; then
  ffmpeg -v error -y -f lavfi -i "testsrc2=size=320x240:rate=25:duration=1.6" \
    -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=1.6" \
    -f lavfi -i "testsrc2=size=320x240:rate=15:duration=1.4" \
    -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=1.4" \
    -filter_complex "[0:v][1:a][2:v][3:a]concat=n=2:v=1:a=1[v][a]" \
    -map "[v]" -map "[a]" -vsync vfr -c:v libx264 -preset ultrafast -bf 2 \
    -g 25 -pix_fmt yuv420p -c:a aac -b:a 128k -f mp4 "$dir/h264-vfr.mp4.part"
  mv "$dir/h264-vfr.mp4.part" "$dir/h264-vfr.mp4"
fi

make bad-audio-only.mp4 mp4mux name=m ! filesink \
  $A ! $ACAPS ! audioconvert ! avenc_aac ! aacparse ! queue ! m.
if [ ! -s "$dir/bad-truncated.mp4" ]; then
  size=$(stat -c %s "$dir/h264-aac.mp4")
  head -c $((size * 6 / 10)) "$dir/h264-aac.mp4" > "$dir/bad-truncated.mp4.part"
  mv "$dir/bad-truncated.mp4.part" "$dir/bad-truncated.mp4"
fi
if [ ! -s "$dir/bad-text.mp4" ]; then
  printf 'This is not a video.\nJust text, named .mp4.\n' > "$dir/bad-text.mp4"
fi
