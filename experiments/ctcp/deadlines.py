#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Deadlines of a trace-driven essential flow (root; about 2.5 minutes):

  sudo experiments/ctcp/deadlines.py [--build build] [--scale 10]
      [--minutes 20] [--trace data/star-wars-iv.txt.xz]
      [--no-competition | --competitors N] [--outage START:LENGTH]
      [--cc reno] [--max-catch-up X]

The essential flow (I frames) of the first 20 minutes of the Star Wars IV
trace (25 fps, decode order; frame i has DTS (i-1)*40 ms) goes through
ctcpsink (segments of 256 s, target S/(T(1-p)) per segment) to a stock
tcpserversrc across a 64 kB/s link (40 ms each way, 30-packet drop-tail
queue).  By default a plain TCP bulk flow (greedy, same congestion
control) competes for the link all the time; --competitors N runs N of
them.  --outage START:LENGTH takes the link down (rate 0) for LENGTH
seconds, START seconds after the emulator starts (the cTCP sender starts
about a second later): a segment that falls behind must catch up.

The competition is a fair setting: the link must have room for the
essential flow's largest per-segment target S/(T(1-p)) next to the
competitors' fair shares, C >= max target + N C/(N+1) (printed and
checked before the run; the trace's segments need 6.0-8.4 kB/s, one
competitor's share is 32 kB/s of 64).  What the cTCP flow gets beyond
its target is only what a TCP flow would get: the kernel's cwnd bounds it.

Time-compressed: timestamps, durations and the segment duration are
divided by --scale, and so is every frame's size, so every segment's
target rate (S/T) is the real one and the network sees the real load;
only the number of RTTs per segment shrinks (by --scale), which makes
the check harder, not easier.  --scale 1 runs the real 20 minutes.

Check: every segment is acknowledged before its deadline (slack > 0),
deadline of segment k = t0 + (k+1) T, t0 = when segment 0 was ready.
"""

import argparse
import collections
import json
import lzma
import os
import sys

from twoflowlab import ctcpbed  # noqa: E402

LINK_BPS = 512e3
LOSS_THRESHOLD = 0.05


def segment_targets(path, minutes, seg_s=256.0):
    """S/(T(1-p)) of each essential (I-frame) segment of the trace, B/s."""
    size = collections.Counter()
    end = minutes * 60
    with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as f:
        for line in f:
            p = line.split()
            if len(p) < 4:
                continue
            t = (int(p[0]) - 1) * 0.04
            if t >= end:
                break
            if p[1] == "I":
                size[int(t // seg_s)] += int(p[3])
    out = []
    for k in sorted(size):
        dur = min(seg_s, end - k * seg_s)
        out.append(size[k] / (dur * (1 - LOSS_THRESHOLD)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build")
    ap.add_argument("--scale", type=float, default=10)
    ap.add_argument("--minutes", type=float, default=20)
    ap.add_argument("--trace", default=os.path.join(
        ctcpbed.ROOT, "data", "star-wars-iv.txt.xz"))
    ap.add_argument("--out", default="/tmp/ctcp-deadlines")
    ap.add_argument("--no-competition", action="store_true")
    ap.add_argument("--competitors", type=int, default=1,
                    help="greedy plain-TCP flows sharing the link (default 1)")
    ap.add_argument("--outage", help="START:LENGTH (s): link down once")
    ap.add_argument("--max-catch-up", type=float,
                    help="ctcpsink max-catch-up (default: the element's, 4; "
                    "1 = the paper's constant segment rate)")
    ap.add_argument("--cc", default="reno",
                    help="congestion control of both flows (default reno: "
                    "with bbr, the host default, a slow flow behind a full "
                    "queue is held to cwnd 4 by BBR's min-RTT BDP)")
    args = ap.parse_args()
    ctcpbed.setup_env(args.build)
    ctcpbed.check_environment()
    seg = 256.0 / args.scale
    run = args.minutes * 60 / args.scale + seg + 30

    n_comp = 0 if args.no_competition else args.competitors
    targets = segment_targets(args.trace, args.minutes)
    cap = LINK_BPS / 8
    share = cap / (n_comp + 1)
    fair = cap >= max(targets) + n_comp * share
    print("link %.0f B/s; segment targets S/(T(1-p)) %s B/s; %d competitor(s)"
          ", fair share %.0f B/s each; room for the largest target next to "
          "them: %s" % (cap, " ".join("%.0f" % t for t in targets), n_comp,
                        share, "yes" if fair else "NO"))
    if not fair:
        sys.exit("not a fair setting")
    schedule = None
    if args.outage:
        start, length = (float(x) for x in args.outage.split(":"))
        schedule = [(start, 0), (start + length, LINK_BPS)]
        print("outage: link down from %g s to %g s" % (start, start + length))

    ports = [5601] + [5602 + i for i in range(n_comp)]
    with ctcpbed.Testbed(rate_bps=LINK_BPS, delay_ms=40, queue_pkts=30,
                         track_ports=ports, workdir=args.out,
                         schedule=schedule, keep_workdir=True) as tb:
        rx = ctcpbed.receiver(tb, 5601, duration=run + 10)
        rx2, bulks = [], []
        for port in ports[1:]:
            rx2.append(ctcpbed.receiver(tb, port, duration=run + 10))
            # greedy until the last deadline (the cTCP flow's whole run)
            bulks.append(ctcpbed.sender(
                tb, port, mode="tcp", duration=args.minutes * 60 /
                args.scale + seg, cc=args.cc))
        tx = ctcpbed.sender(tb, 5601, mode="ctcp", trace=args.trace,
                            scale=args.scale, minutes=args.minutes,
                            segment_duration=seg, duration=run, cc=args.cc,
                            max_catch_up=args.max_catch_up)
        res = ctcpbed.result(tx, timeout=run + 60)
        bulk_res = [ctcpbed.result(b, timeout=run + 60) for b in bulks]
        for p in rx2:
            p.terminate()
        rx.terminate()
        tb.stop_emulator()
    with open(os.path.join(args.out, "deadlines.json"), "w") as f:
        json.dump({"ctcp": res, "competitors": bulk_res}, f)
    st = res["stats"]
    slack = [s / 1e9 for s in st["deadline-slack"]]
    n_seg = len(targets)
    print("%d essential frames, %d bytes (scaled 1/%g), EOS %s, error %s"
          % (res["frames"], res["bytes"], args.scale, res["eos"],
             res["error"]))
    print("segments done %d of %d, late %d; slack per segment (s): %s "
          "(segment duration %.1f s)" % (
              st["segments"], n_seg, st["segments-late"],
              " ".join("%.2f" % s for s in slack), seg))
    s = res["samples"]
    if len(s) > 1:
        span = s[-1][0] - s[0][0]
        peak = max(x[3] for x in s)
        print("cTCP goodput %.0f B/s over %.0f s; highest target-rate %d B/s; "
              "W_target %s..%s packets" % (
                  (s[-1][1] - s[0][1]) / span, span, peak,
                  min(x[4] for x in s if x[4]) if any(x[4] for x in s)
                  else 0, max(x[4] for x in s)))
    for r in bulk_res:
        b = r["samples"]
        if len(b) > 1:
            print("competitor (plain TCP) goodput %.0f B/s, retransmissions "
                  "%d" % ((b[-1][1] - b[0][1]) / (b[-1][0] - b[0][0]),
                          r["stats"]["retransmissions"]))
    print("retransmissions %d, timeouts %d, events %d" % (
        st["retransmissions"], st["timeouts"], len(res["events"])))
    ok = res["eos"] and st["segments"] == n_seg and \
        st["segments-late"] == 0 and all(s > 0 for s in slack)
    print("every segment before its deadline: %s" % ("ok" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
