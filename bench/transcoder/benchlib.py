# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the codec benchmarks of ratetranscoder (h264.py, h265.py, av1.py)
share: CPU time of a run, the packets' rates, freeze-aware PSNR, and the
table of configurations measured in one run."""
import json
import os
import re
import resource
import subprocess


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
    """(bit/s over the source's duration, [bit/s of each GOP], packets)"""
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


def report(configs, a, env, tmp, raw, src_gops, target, targets=None,
           skip=None, fps=25):
    """Runs each (name, output file or None, command) best of a.runs, prints
    the table (frames/s from CPU time against the first row's, output rate
    against the target of the file (targets, else target), each GOP from
    the second, PSNR against raw) and the ratios of the second row
    (ratetranscoder) to the third (ffmpeg). skip: also the rate from that
    unit on (where re-encoding starts)."""
    targets = targets or {}
    rows, gop_list, speeds, out_rates = [], [], [], []
    for name, out, cmd in configs:
        best = min(cpu_run(cmd, env) for _ in range(a.runs))
        fr = a.frames / best
        speeds.append(fr)
        # slow encoders: a decimal, so that the ratio is not rounded
        row = [name, '%.1f' % fr, '%.3f' % (fr / speeds[0])]
        if not out:
            rows.append(row + [''] * (6 if skip else 5))
            out_rates.append(None)
            continue
        path = os.path.join(tmp, out)
        t = targets.get(out, target)
        total, gops, n = rates(path, fps, a.frames)
        out_rates.append(total)
        worst = max((abs(g / t - 1) for g in gops[1:]), default=0)
        if n == a.frames:
            gop_list.append('%s: %s' % (name, ' '.join(
                '%+.0f%%' % ((g / t - 1) * 100) for g in gops)))
        row += ['%.0f' % total, '%+.1f%%' % ((total / t - 1) * 100)]
        if skip:
            sizes = [int(k['size']) for k in packets(path)]
            late = sum(sizes[skip:]) * 8 / ((len(sizes) - skip) / fps)
            row.append('%+.1f%%' % ((late / t - 1) * 100) if n == a.frames else '–')
        # GOPs of packets count only when no frame is dropped
        row += ['%.1f%%' % (worst * 100) if n == a.frames else '–', str(n),
                psnr(raw, path)]
        rows.append(row)
    hdr = ['configuration', 'fps', 'vs decode only', 'output bit/s', 'vs target'] + \
        (['from unit %d' % skip] if skip else []) + \
        ['worst GOP from the 2nd', 'frames', 'Y-PSNR dB']
    print('| ' + ' | '.join(hdr) + ' |')
    print('|' + '---|' * len(hdr))
    for r in rows:
        print('| ' + ' | '.join(r) + ' |')
    print('\ninput GOPs, bit/s: ' + ' '.join('%.0f' % g for g in src_gops))
    print('per GOP against the target:')
    for g in gop_list:
        print('  ' + g)
    print('\nratetranscoder / ffmpeg speed: %.2f' % (speeds[1] / speeds[2]))
    print('ratetranscoder / ffmpeg output rate: %.3f' % (out_rates[1] / out_rates[2]))
