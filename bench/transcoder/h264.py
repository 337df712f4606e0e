#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""H.264 benchmark of ratetranscoder (issue #17), ratios in one run.

On the same generated input (1280x720 25 fps, x264enc with a B-pyramid of
3 B frames, GOPs of 25, 4 Mbit/s) and at the same target and x264 preset,
one core each (every codec single-threaded):

  * decode only: gst-launch ... ! avdec_h264 max-threads=1 ! fakesink
  * ratetranscoder keep=none target-bitrate=T preset=P
  * ffmpeg -threads 1 -i in -c:v libx264 -threads 1 -preset P -b:v T
    -maxrate T -bufsize 0.75*T, key frames where the source has them
    (the settings ratetranscoder gives libx264)

frames/s from CPU time (user+sys, best of --runs), output bitrate against
the target (whole stream and each GOP from the second), Y-PSNR against
the decoded source (a dropped frame shows the one before it: the output
is brought back to 25 fps before comparing); and ratetranscoder keep=i
(non-essential pictures re-encoded) and keep=ip (disposable pictures
re-encoded, dropped below the codec's floor) at their own targets.

Usage: bench/transcoder/h264.py [--build build] [--frames 250]
       [--runs 3] [--target 0.5] [--keep-i-target T] [--keep-ip-target T]
       [--preset veryfast]
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
    ap.add_argument('--keep-i-target', type=float, default=None,
                    help='keep=i target, fraction of the input (--target)')
    ap.add_argument('--keep-ip-target', type=float, default=None,
                    help='keep=ip target, fraction of the input (--target)')
    ap.add_argument('--preset', default='veryfast')
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    env = dict(os.environ, GST_PLUGIN_PATH_1_0=os.path.join(build, 'gst'))
    fps = 25
    tmp = tempfile.mkdtemp(prefix='h264bench-')
    src = os.path.join(tmp, 'src.mkv')
    subprocess.run(['gst-launch-1.0', '-q', 'videotestsrc', 'pattern=zone-plate',
                    'kx2=20', 'ky2=20', 'kt2=1', 'num-buffers=%d' % a.frames, '!',
                    'video/x-raw,format=I420,width=1280,height=720,framerate=25/1',
                    '!', 'x264enc', 'bitrate=4000', 'bframes=3', 'b-adapt=false',
                    'key-int-max=25', 'speed-preset=veryfast',
                    'option-string=b-pyramid=normal', '!',
                    'video/x-h264,profile=high', '!', 'h264parse', '!',
                    'matroskamux', '!', 'filesink', 'location=' + src],
                   check=True, env=env)
    raw = os.path.join(tmp, 'src.y4m')
    subprocess.run(['ffmpeg', '-v', 'error', '-y', '-i', src, raw], check=True)
    src_rate, src_gops, _ = rates(src, fps, a.frames)
    target = int(src_rate * a.target)
    ti = int(src_rate * (a.keep_i_target or a.target))
    tip = int(src_rate * (a.keep_ip_target or a.target))
    print('# input: %d frames 1280x720 25 fps, %.0f bit/s; target %d bit/s '
          '(%.0f%%), preset %s, best of %d' % (a.frames, src_rate, target,
                                               a.target * 100, a.preset, a.runs))

    def gst(out, elem):
        return ['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, '!',
                'matroskademux', '!', 'h264parse', '!'] + elem + \
            ['!', 'h264parse', '!', 'matroskamux', '!', 'filesink',
             'location=' + out]

    configs = [
        ('decode only (avdec_h264)', None,
         ['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, '!',
          'matroskademux', '!', 'h264parse', '!', 'avdec_h264',
          'max-threads=1', '!', 'fakesink']),
        ('ratetranscoder keep=none', 'rt.mkv',
         gst(os.path.join(tmp, 'rt.mkv'),
             ['ratetranscoder', 'target-bitrate=%d' % target, 'recovery=0',
              'preset=' + a.preset])),
        ('ffmpeg -c:v libx264', 'ff.mkv',
         ['ffmpeg', '-v', 'error', '-y', '-threads', '1', '-i', src, '-c:v',
          'libx264', '-threads', '1', '-preset', a.preset, '-bf', '3',
          '-b:v', str(target), '-maxrate', str(target), '-bufsize',
          str(int(target * 0.75)), '-g', '100000', '-force_key_frames',
          'expr:eq(mod(n,25),0)', '-x264-params',
          'rc-lookahead=5:sync-lookahead=0:scenecut=0',
          os.path.join(tmp, 'ff.mkv')]),
        ('ratetranscoder keep=i at %.0f%%' % (ti * 100.0 / src_rate), 'rti.mkv',
         gst(os.path.join(tmp, 'rti.mkv'),
             ['ratetranscoder', 'target-bitrate=%d' % ti, 'recovery=0',
              'preset=' + a.preset, 'keep=i'])),
        ('ratetranscoder keep=ip at %.0f%%' % (tip * 100.0 / src_rate), 'rtip.mkv',
         gst(os.path.join(tmp, 'rtip.mkv'),
             ['ratetranscoder', 'target-bitrate=%d' % tip, 'recovery=0',
              'preset=' + a.preset, 'keep=ip'])),
    ]
    report(configs, a, env, tmp, raw, src_gops, target,
           targets={'rti.mkv': ti, 'rtip.mkv': tip}, fps=fps)
    subprocess.run(['rm', '-rf', tmp])


if __name__ == '__main__':
    sys.exit(main())
