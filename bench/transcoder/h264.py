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
import json
import os
import re
import resource
import subprocess
import sys
import tempfile


def cpu_run(cmd, env=None):
    """Runs cmd; returns its children's CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def packets(path):
    out = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v',
                          '-show_packets', '-show_entries',
                          'packet=size,flags', '-of', 'json', path],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)['packets']


def rates(path, fps, nframes):
    """(bit/s over the source's duration, [bit/s of each GOP])"""
    p = packets(path)
    total = sum(int(k['size']) for k in p) * 8 / (nframes / fps)
    gops, cur = [], None
    for k in p:
        if 'K' in k['flags']:
            cur = [0, 0]
            gops.append(cur)
        if cur is not None:
            cur[0] += int(k['size']) * 8
            cur[1] += 1
    return total, [b * fps / c for b, c in gops if c >= 10], len(p)


def psnr(ref, path):
    # fps=25: a dropped frame's slot shows the frame before it (freeze-aware)
    r = subprocess.run(['ffmpeg', '-v', 'info', '-nostats', '-i', path, '-i', ref,
                        '-lavfi', '[0:v]fps=25[o];[o][1:v]psnr', '-f', 'null',
                        '-'],
                       capture_output=True, text=True)
    m = re.search(r'PSNR y:([0-9.inf]+)', r.stderr)
    return m.group(1) if m else '?'


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
    targets = {'rti.mkv': ti, 'rtip.mkv': tip}
    rows = []
    gop_list = []
    base = None
    for name, out, cmd in configs:
        best = min(cpu_run(cmd, env) for _ in range(a.runs))
        fr = a.frames / best
        base = base or fr
        row = [name, '%.0f' % fr, '%.2f' % (fr / base)]
        if out:
            path = os.path.join(tmp, out)
            t = targets.get(out, target)
            total, gops, n = rates(path, fps, a.frames)
            worst = max((abs(g / t - 1) for g in gops[1:]), default=0)
            if n == a.frames:
                gop_list.append('%s: %s' % (name, ' '.join(
                    '%+.0f%%' % ((g / t - 1) * 100) for g in gops)))
            row += ['%.0f' % total, '%+.1f%%' % ((total / t - 1) * 100),
                    # GOPs of packets count only when no frame is dropped
                    '%.1f%%' % (worst * 100) if n == a.frames else '–',
                    str(n), psnr(raw, path)]
        else:
            row += ['', '', '', '', '']
        rows.append(row)
    hdr = ['configuration', 'fps', 'vs decode only', 'output bit/s',
           'vs target', 'worst GOP from the 2nd', 'frames', 'Y-PSNR dB']
    print('| ' + ' | '.join(hdr) + ' |')
    print('|' + '---|' * len(hdr))
    for r in rows:
        print('| ' + ' | '.join(r) + ' |')
    print('\ninput GOPs, bit/s: ' + ' '.join('%.0f' % g for g in src_gops))
    print('per GOP against the target:')
    for g in gop_list:
        print('  ' + g)
    rt = float(rows[1][1])
    ff = float(rows[2][1])
    print('\nratetranscoder / ffmpeg speed: %.2f' % (rt / ff))
    subprocess.run(['rm', '-rf', tmp])


if __name__ == '__main__':
    sys.exit(main())
