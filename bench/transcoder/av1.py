#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""AV1 benchmark of ratetranscoder (issue 27), ratios in one run.

The rows of h265.py for AV1. On the same generated input (1280x720
25 fps zone plate, SVT-AV1 random access with key frames every 25,
4 Mbit/s) and at the same target and SVT-AV1 preset:

  * decode only: ffmpeg -threads 1 -c:v libdav1d -i in -f null -
  * ratetranscoder keep=none target-bitrate=T preset=P
  * ffmpeg -threads 1 -i in -c:v libsvtav1 -preset P -b:v T
    -bufsize 0.75*T -g 25, with the svtav1-params ratetranscoder gives
    SVT-AV1 (low-delay prediction, CBR, closed GOPs, no TPL)

SVT-AV1's own threads are left as ratetranscoder leaves them, for both.
frames/s from CPU time (user+sys, best of --runs), output bitrate against
the target (whole stream; from the unit where re-encoding starts, half
a second in; each GOP from the second), Y-PSNR against the decoded
source; and ratetranscoder keep=i / keep=ip (dropping) at the same target.

Usage: bench/transcoder/av1.py [--build build] [--frames 250]
       [--runs 3] [--target 0.5] [--preset 12]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import rates, report  # noqa: E402

SVT_PARAMS = 'pred-struct=1:rc=2:irefresh-type=2:enable-tpl-la=0'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    ap.add_argument('--frames', type=int, default=250)
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--target', type=float, default=0.5)
    ap.add_argument('--preset', default='12')
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    env = dict(os.environ, GST_PLUGIN_PATH_1_0=os.path.join(build, 'gst'))
    fps = 25
    tmp = tempfile.mkdtemp(prefix='av1bench-')
    gen = os.path.join(tmp, 'gen.y4m')
    src = os.path.join(tmp, 'src.mkv')
    subprocess.run(['gst-launch-1.0', '-q', 'videotestsrc', 'pattern=zone-plate',
                    'kx2=20', 'ky2=20', 'kt2=1', 'num-buffers=%d' % a.frames, '!',
                    'video/x-raw,format=I420,width=1280,height=720,framerate=25/1',
                    '!', 'y4menc', '!', 'filesink', 'location=' + gen],
                   check=True, env=env)
    subprocess.run(['ffmpeg', '-v', 'error', '-y', '-i', gen, '-c:v',
                    'libsvtav1', '-preset', '10', '-g', '25', '-b:v', '4M',
                    src], check=True)
    raw = os.path.join(tmp, 'src.y4m')
    subprocess.run(['ffmpeg', '-v', 'error', '-y', '-i', src, raw], check=True)
    src_rate, src_gops, _ = rates(src, fps, a.frames)
    target = int(src_rate * a.target)
    print('# input: %d frames 1280x720 25 fps AV1 (SVT-AV1), %.0f bit/s; '
          'target %d bit/s (%.0f%%), SVT-AV1 preset %s, best of %d' % (
              a.frames, src_rate, target, a.target * 100, a.preset, a.runs))

    def gst(out, elem):
        return ['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, '!',
                'matroskademux', '!', 'av1parse', '!', 'video/x-av1,'
                'stream-format=obu-stream,alignment=tu', '!'] + elem + \
            ['!', 'av1parse', '!', 'matroskamux', '!', 'filesink',
             'location=' + os.path.join(tmp, out)]

    rt = ['ratetranscoder', 'target-bitrate=%d' % target, 'recovery=0']
    configs = [
        ('decode only (ffmpeg libdav1d)', None,
         ['ffmpeg', '-v', 'error', '-threads', '1', '-c:v', 'libdav1d',
          '-i', src, '-f', 'null', '-']),
        ('ratetranscoder keep=none', 'rt.mkv',
         gst('rt.mkv', rt + ['preset=' + a.preset])),
        ('ffmpeg -c:v libsvtav1', 'ff.mkv',
         ['ffmpeg', '-v', 'error', '-y', '-threads', '1', '-c:v', 'libdav1d',
          '-i', src, '-c:v', 'libsvtav1', '-preset', a.preset, '-b:v',
          str(target), '-bufsize', str(int(target * 0.75)), '-g', '25',
          '-svtav1-params', SVT_PARAMS, os.path.join(tmp, 'ff.mkv')]),
        ('ratetranscoder keep=i', 'rti.mkv', gst('rti.mkv', rt + ['keep=i'])),
        ('ratetranscoder keep=ip', 'rtip.mkv',
         gst('rtip.mkv', rt + ['keep=ip'])),
    ]
    skip = fps // 2 + 1     # units passed before re-encoding starts
    report(configs, a, env, tmp, raw, src_gops, target, skip=skip, fps=fps)
    subprocess.run(['rm', '-rf', tmp])


if __name__ == '__main__':
    sys.exit(main())
