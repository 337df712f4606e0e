#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The UDP system's share against TCP, short (about 55 s): the smoke
version of experiments/rudp/run.py (same code, the rudp case only).

2 Mbit/s RED bottleneck (min 5, max 10, queue 20), 10 ms each way, one
bulk TCP reno connection with its window clamped to 15 segments of 1000
bytes (the UDP paper's script), and for 45 s the media flow (rudpsink
rate-control=receiver -> rudpsrc with its default increase policy):
* the receiver climbs above level 1 (the packets-only rule stalled at
  levels 0-1 here: 50 packets take 2.5 s at level 0),
* the media flow's throughput is within 0.67 .. 1.5 of the TCP's over
  5 .. 45 s, after the climb from level 0 (its TCP-fair share: 0.74-0.82
  over 25 s on an idle machine, 0.77-1.01 beside two busy loops, once 0.67
  in a CI run; over 40 s: 0.92-0.94, the TCP's early head start weighs
  less; the packets-only rule gave 0.15),
* TCP keeps more than 0.5 Mbit/s and the receiver backs off at least once.
RUDP_SRC_PROPS adds rudpsrc properties (e.g. "increase-time=0": the old
rule, which fails this test)."""

import os

from nettest import expect, log, main
from rudpcase import expect_fair_share, run_case


def test():
    run, r = run_case("rudp", 45.0, os.environ.get("RUDP_SRC_PROPS", ""))
    log(run.summary_line(r))
    lv = [x[1] for x in r["series"]["level"]]
    log("levels (every 1 s): %s" % " ".join(str(x) for x in lv[::10]))
    expect(r["level_max"] is not None and r["level_max"] >= 2,
           "the receiver climbed to level %s (above 1)", r["level_max"])
    tcp = expect_fair_share(run, r)
    expect(tcp > 0.5, "TCP kept %.2f Mbit/s", tcp)
    rx = r["receiver"]
    expect(rx.get("decreases", 0) >= 1, "the receiver backed off %s times",
           rx.get("decreases"))


if __name__ == "__main__":
    main(test)
