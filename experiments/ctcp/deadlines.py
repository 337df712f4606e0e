#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Deadlines of a trace-driven essential flow (root; about 2.5 minutes):

  sudo experiments/ctcp/deadlines.py [--build build] [--scale 10]
      [--minutes 20] [--trace ../shared/traces/star-wars-iv.txt]

The essential flow (I frames) of the first 20 minutes of the Star Wars IV
trace (25 fps, decode order; frame i has DTS (i-1)*40 ms) goes through
ctcpsink (segments of 256 s, target S/(T(1-p)) per segment) to a stock
tcpserversrc across a 64 kB/s link (40 ms each way, 30-packet queue)
that a plain TCP bulk flow competes for all the time.

Time-compressed: timestamps, durations and the segment duration are
divided by --scale, and so is every frame's size, so every segment's
target rate (S/T) is the real one and the network sees the real load;
only the number of RTTs per segment shrinks (by --scale), which makes
the check harder, not easier.  --scale 1 runs the real 20 minutes.

Check: every segment is acknowledged before its deadline (slack > 0),
deadline of segment k = t0 + (k+1) T, t0 = when segment 0 was ready.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctcpbed  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build")
    ap.add_argument("--scale", type=float, default=10)
    ap.add_argument("--minutes", type=float, default=20)
    ap.add_argument("--trace", default=os.path.join(
        ctcpbed.ROOT, "..", "shared", "traces", "star-wars-iv.txt"))
    ap.add_argument("--out", default="/tmp/ctcp-deadlines")
    ap.add_argument("--no-competition", action="store_true")
    ap.add_argument("--cc", default="reno",
                    help="congestion control of both flows (default reno: "
                    "with bbr, the host default, a slow flow behind a full "
                    "queue is held to cwnd 4 by BBR's min-RTT BDP)")
    args = ap.parse_args()
    ctcpbed.setup_env(args.build)
    ctcpbed.check_environment()
    seg = 256.0 / args.scale
    run = args.minutes * 60 / args.scale + seg + 30
    with ctcpbed.Testbed(rate_bps=512e3, delay_ms=40, queue_pkts=30,
                         track_ports=[5601, 5602], workdir=args.out,
                         keep_workdir=True) as tb:
        rx = ctcpbed.receiver(tb, 5601, duration=run + 10)
        if not args.no_competition:
            rx2 = ctcpbed.receiver(tb, 5602, duration=run + 10)
            bulk = ctcpbed.sender(tb, 5602, mode="tcp", duration=run,
                                  cc=args.cc)
        tx = ctcpbed.sender(tb, 5601, mode="ctcp", trace=args.trace,
                            scale=args.scale, minutes=args.minutes,
                            segment_duration=seg, duration=run, cc=args.cc)
        res = ctcpbed.result(tx, timeout=run + 60)
        if not args.no_competition:
            bulk.terminate()
            rx2.terminate()
        rx.terminate()
        tb.stop_emulator()
    with open(os.path.join(args.out, "deadlines.json"), "w") as f:
        json.dump(res, f)
    st = res["stats"]
    slack = [s / 1e9 for s in st["deadline-slack"]]
    n_seg = int(args.minutes * 60 // 256 + (1 if (args.minutes * 60) % 256
                                            else 0))
    print("%d essential frames, %d bytes (scaled 1/%g), EOS %s, error %s"
          % (res["frames"], res["bytes"], args.scale, res["eos"],
             res["error"]))
    print("segments done %d of %d, late %d; slack per segment (s): %s "
          "(segment duration %.1f s)" % (
              st["segments"], n_seg, st["segments-late"],
              " ".join("%.2f" % s for s in slack), seg))
    print("retransmissions %d, timeouts %d, events %d" % (
        st["retransmissions"], st["timeouts"], len(res["events"])))
    ok = res["eos"] and st["segments"] == n_seg and \
        st["segments-late"] == 0 and all(s > 0 for s in slack)
    print("every segment before its deadline: %s" % ("ok" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
