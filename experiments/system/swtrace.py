# SPDX-License-Identifier: LGPL-2.1-or-later
"""Star Wars IV trace excerpts for the system experiments.

The trace (data/star-wars-iv.txt.xz: `index type time_ms bytes`,
decode order, 25 fps, GOP IBBPBBPBBPBB, 89,998 frames = 1 hour) is too
long to replay n times on this machine, so each session replays an excerpt:
`seconds` of the trace from a random I frame (seeded), renumbered from 1,
its times rebased to that I frame, and the open GOP's leading B frames
(which show before the I frame and predict from the previous GOP) left out,
so the excerpt starts like a closed GOP. The peak and mean rates are
computed as twoflow-server does (1 s windows of decode time, 68-byte
record header included), so capacities can be set before the server runs.
"""
import lzma
import os
import random

HEADER = 68
FPS = 25


def load(path):
    frames = []
    with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as f:
        for line in f:
            p = line.split()
            if len(p) == 4:
                frames.append((p[1], int(p[2]), int(p[3])))
    return frames


def excerpt(frames, start, seconds):
    """Frames [start, ...) for `seconds`, start must be an I frame."""
    assert frames[start][0] == "I"
    t0 = frames[start][1]
    out = [frames[start]]
    i = start + 1
    # leading B frames of an open GOP show before the I frame: leave out
    while i < len(frames) and frames[i][0] == "B" and frames[i][1] < t0:
        i += 1
    n = seconds * FPS
    while i < len(frames) and len(out) < n:
        out.append(frames[i])
        i += 1
    return [(t, ms - t0, b) for t, ms, b in out]


def rates(ex, policy="i"):
    """(peak, mean, essential peak, enhanced peak) in bit/s, as the server computes them."""
    win, ess, enh = {}, {}, {}
    total = 0
    for k, (t, _ms, b) in enumerate(ex):
        w = k // FPS
        size = b + HEADER
        win[w] = win.get(w, 0) + size
        e = t == "I" or (policy == "ip" and t == "P")
        d = ess if e else enh
        d[w] = d.get(w, 0) + size
        total += size
    dur = len(ex) / FPS
    return (max(win.values()) * 8, total * 8 / dur,
            max(ess.values()) * 8, max(enh.values()) * 8)


# what the link carries on top of the records (experiments/system/tables.py
# --pipe wire-mean; the emulator's rate counts Ethernet frames): the
# enhanced records cut into RTP packets of at most MTU bytes (RTP 12 +
# rtpgstpay 8 bytes each) in UDP/IPv4/Ethernet (8 + 20 + 14), the
# essential records in TCP segments of MSS bytes (TCP/IPv4 with
# timestamps and Ethernet: 32 + 20 + 14 bytes each)
MTU, RTP_HDR, UDP_IP, MSS, TCP_IP = 1400, 20, 42, 1448, 66


def wire_mean(ex, policy="i"):
    """Mean rate on the wire (bit/s) of an excerpt's two flows."""
    total = 0.0
    for t, _ms, b in ex:
        size = b + HEADER
        if t == "I" or (policy == "ip" and t == "P"):
            total += size * (1 + TCP_IP / MSS)
        else:
            packets = -(-size // (MTU - RTP_HDR))
            total += size + packets * (RTP_HDR + UDP_IP)
    return total * 8 / (len(ex) / FPS)


def write(ex, path):
    with open(path, "w") as f:
        for k, (t, ms, b) in enumerate(ex):
            f.write(f"{k + 1}\t{t}\t{ms}\t{b}\n")


def make_excerpts(trace, outdir, n, seconds, seed, prefix="sw"):
    """n excerpt files in outdir; returns
    [(name, peak, mean, ess_peak, enh_peak, wire_mean)]."""
    frames = load(trace)
    rnd = random.Random(seed)
    i_frames = [k for k, f in enumerate(frames[:len(frames) - (seconds + 2) * FPS])
                if f[0] == "I"]
    os.makedirs(outdir, exist_ok=True)
    out = []
    for i in range(n):
        start = rnd.choice(i_frames)
        ex = excerpt(frames, start, seconds)
        name = f"{prefix}-{i:02d}.txt"
        write(ex, os.path.join(outdir, name))
        out.append((name,) + rates(ex) + (wire_mean(ex),))
    return out
