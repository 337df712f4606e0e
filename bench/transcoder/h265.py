#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""H.265 benchmark of ratetranscoder (issue 27), ratios in one run.

The rows of h264.py for H.265. On the same generated input (1280x720
25 fps, x265enc with a B-pyramid of 3 B frames, closed GOPs of 25,
4 Mbit/s) and at the same target and x265 preset:

  * decode only: gst-launch ... ! avdec_h265 max-threads=1 ! fakesink
  * ratetranscoder keep=none target-bitrate=T preset=P
  * ffmpeg -threads 1 -i in -c:v libx265 -preset P -b:v T -maxrate T
    -bufsize 0.75*T, key frames where the source has them, with the
    x265-params ratetranscoder gives libx265 (frame-threads=1, 3 B
    frames, a look-ahead of 5)

x265's own thread pool (wavefronts) is left as ratetranscoder leaves it,
for both. frames/s from CPU time (user+sys, best of --runs), output
bitrate against the target (whole stream and each GOP from the second),
Y-PSNR against the decoded source; and ratetranscoder keep=i / keep=ip
(dropping) at the same target.

Usage: bench/transcoder/h265.py [--build build] [--frames 250]
       [--runs 3] [--target 0.5] [--preset veryfast]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import rates, report  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    ap.add_argument('--frames', type=int, default=250)
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--target', type=float, default=0.5)
    ap.add_argument('--preset', default='veryfast')
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    env = dict(os.environ, GST_PLUGIN_PATH_1_0=os.path.join(build, 'gst'))
    fps = 25
    tmp = tempfile.mkdtemp(prefix='h265bench-')
    src = os.path.join(tmp, 'src.mkv')
    subprocess.run(['gst-launch-1.0', '-q', 'videotestsrc', 'pattern=zone-plate',
                    'kx2=20', 'ky2=20', 'kt2=1', 'num-buffers=%d' % a.frames, '!',
                    'video/x-raw,format=I420,width=1280,height=720,framerate=25/1',
                    '!', 'x265enc', 'bitrate=4000', 'key-int-max=25',
                    'speed-preset=veryfast',
                    'option-string=bframes=3:b-adapt=0:b-pyramid=1:open-gop=0:'
                    'scenecut=0', '!', 'h265parse', '!',
                    'matroskamux', '!', 'filesink', 'location=' + src],
                   check=True, env=env)
    raw = os.path.join(tmp, 'src.y4m')
    subprocess.run(['ffmpeg', '-v', 'error', '-y', '-i', src, raw], check=True)
    src_rate, src_gops, _ = rates(src, fps, a.frames)
    target = int(src_rate * a.target)
    print('# input: %d frames 1280x720 25 fps H.265, %.0f bit/s; target %d '
          'bit/s (%.0f%%), preset %s, best of %d' % (
              a.frames, src_rate, target, a.target * 100, a.preset, a.runs))

    def gst(out, elem):
        return ['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, '!',
                'matroskademux', '!', 'h265parse', '!', 'video/x-h265,'
                'stream-format=byte-stream,alignment=au', '!'] + elem + \
            ['!', 'h265parse', '!', 'matroskamux', '!', 'filesink',
             'location=' + os.path.join(tmp, out)]

    rt = ['ratetranscoder', 'target-bitrate=%d' % target, 'recovery=0']
    configs = [
        ('decode only (avdec_h265)', None,
         ['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, '!',
          'matroskademux', '!', 'h265parse', '!', 'avdec_h265',
          'max-threads=1', '!', 'fakesink']),
        ('ratetranscoder keep=none', 'rt.mkv',
         gst('rt.mkv', rt + ['preset=' + a.preset])),
        ('ffmpeg -c:v libx265', 'ff.mkv',
         ['ffmpeg', '-v', 'error', '-y', '-threads', '1', '-i', src, '-c:v',
          'libx265', '-preset', a.preset, '-b:v', str(target), '-maxrate',
          str(target), '-bufsize', str(int(target * 0.75)), '-g', '100000',
          '-forced-idr', '1', '-force_key_frames', 'expr:eq(mod(n,25),0)',
          '-x265-params', 'bframes=3:rc-lookahead=5:frame-threads=1:'
          'repeat-headers=1:scenecut=0:info=0:log-level=none',
          os.path.join(tmp, 'ff.mkv')]),
        ('ratetranscoder keep=i', 'rti.mkv', gst('rti.mkv', rt + ['keep=i'])),
        ('ratetranscoder keep=ip', 'rtip.mkv',
         gst('rtip.mkv', rt + ['keep=ip'])),
    ]
    report(configs, a, env, tmp, raw, src_gops, target, fps=fps)
    subprocess.run(['rm', '-rf', tmp])


if __name__ == '__main__':
    sys.exit(main())
