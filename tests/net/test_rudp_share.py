#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The UDP system's share against TCP, short (about 45 s): the smoke
version of experiments/rudp/run.py (same code, the rudp case only).

2 Mbit/s RED bottleneck (min 5, max 10, queue 20), 10 ms each way, one
bulk TCP reno connection with its window clamped to 15 segments of 1000
bytes (the UDP paper's script), and for 30 s the media flow (rudpsink
rate-control=receiver -> rudpsrc with its default increase policy):
* the receiver climbs above level 1 (the packets-only rule stalled at
  levels 0-1 here: 50 packets take 2.5 s at level 0),
* the media flow's throughput is within 0.67 .. 1.5 of the TCP's over
  5 .. 30 s, after the climb from level 0 (its TCP-fair share: 0.81 in
  the 50 s runs; the packets-only rule gave 0.15),
* TCP keeps more than 0.5 Mbit/s and the receiver backs off at least once.
RUDP_SRC_PROPS adds rudpsrc properties (e.g. "increase-time=0": the old
rule, which fails this test)."""

import argparse
import importlib.util
import os
import tempfile

from nettest import expect, log, main

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_PY = os.path.join(HERE, "..", "..", "experiments", "rudp", "run.py")
SETTLE_S = 5.0          # the climb from level 0 and TCP's head start


def load_run():
    spec = importlib.util.spec_from_file_location("rudp_run", RUN_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test():
    run = load_run()
    build = os.environ.get("TWOFLOW_BUILD_ROOT") or os.path.join(
        HERE, "..", "..", "build")
    a = argparse.Namespace(build=os.path.abspath(build), seed=1, cc="reno",
                           tcp="bulk", window=15, cbr_rate=800000,
                           duration=30.0,
                           src_props=os.environ.get("RUDP_SRC_PROPS", ""))
    with tempfile.TemporaryDirectory(prefix="twoflow-rudp-share-") as wd:
        r = run.run_case("rudp", a, os.path.join(wd, "rudp"))
    log(run.summary_line(r))
    lv = [x[1] for x in r["series"]["level"]]
    log("levels (every 1 s): %s" % " ".join(str(x) for x in lv[::10]))
    expect(r["level_max"] is not None and r["level_max"] >= 2,
           "the receiver climbed to level %s (above 1)", r["level_max"])
    s = r["series"]
    late = [k for k, t in enumerate(s["t"]) if t > SETTLE_S]
    secs = len(late) * 0.1
    media = sum(s["media_bytes"][k] for k in late) * 8 / secs / 1e6
    tcp = sum(s["tcp_bytes"][k] for k in late) * 8 / secs / 1e6
    share = media / tcp if tcp > 0 else 0.0
    expect(run.SHARE_LO <= share <= run.SHARE_HI,
           "over %.0f .. %.0f s media %.2f Mbit/s vs TCP %.2f Mbit/s: %.2f "
           "of TCP's (%.2f .. %.2f)", SETTLE_S, SETTLE_S + secs, media, tcp,
           share, run.SHARE_LO, run.SHARE_HI)
    expect(tcp > 0.5, "TCP kept %.2f Mbit/s", tcp)
    rx = r["receiver"]
    expect(rx.get("decreases", 0) >= 1, "the receiver backed off %s times",
           rx.get("decreases"))


if __name__ == "__main__":
    main(test)
