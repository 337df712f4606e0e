#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The UDP system with ECN, short (about 40 s): the rudp-ecn case of
experiments/rudp/run.py (same code) on the UDP paper's scenario.

2 Mbit/s RED bottleneck (min 5, max 10, queue 20) with ECN marking on
(linkemu --red-ecn), 10 ms each way, one bulk TCP reno connection with
its window clamped to 15 segments of 1000 bytes (not ECN-capable), and
for 25 s the media flow sent ECN-capable (rudpsink ecn=true) to rudpsrc:
* its throughput over 5 .. 25 s is within 0.67 .. 1.5 of the TCP's (the
  TCP-fair share),
* RED marks its packets instead of dropping them: media (RTP) packets
  lost at most 1/10 of the TCP's drops at the same queue (RED drops ~2.5 %
  of the TCP's packets, as it did the media flow's without ECN) and at
  most 1/10 of its own CE marks, and so are all drops on the media port
  (the sender's RTCP notices included),
* rudpsrc sees every packet ECN-capable, counts the CE marks the emulator
  made (on RTP and on the sender's RTCP notices; within a few still in
  flight at the end) and halves the level on them; the TCP flow gets no
  mark."""

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
                           duration=25.0, src_props="")
    with tempfile.TemporaryDirectory(prefix="twoflow-rudp-ecn-") as wd:
        r = run.run_case("rudp-ecn", a, os.path.join(wd, "rudp-ecn"))
    log(run.summary_line(r))
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
    md, td, mm = r["media_drops"], r["tcp_drops"], r["media_marks"]
    lost = r["media_rtp_lost"]
    expect(td >= 20, "RED dropped %d of the TCP's packets (%.1f %%)", td,
           100 * r["tcp_drop_fraction"])
    expect(mm >= 20, "RED marked %d media packets CE", mm)
    expect(lost <= td / 10 and lost <= mm / 10,
           "media (RTP) packets lost %d <= 1/10 of the TCP's %d drops and "
           "of its %d CE marks", lost, td, mm)
    # the port's drops also count the sender's RTCP notices (ECN-capable
    # too, ~10 a second)
    expect(md <= td / 10 and md <= mm / 10,
           "media port drops %d (RTP and RTCP notices) <= 1/10 of the TCP's "
           "%d and of its %d CE marks", md, td, mm)
    expect(r["tcp_marks"] == 0, "TCP packets marked: %d", r["tcp_marks"])
    rx = r["receiver"]
    expect(rx.get("received", 0) > 0
           and rx.get("ect-received") == rx.get("received"),
           "rudpsrc: %s of %s packets ECN-capable", rx.get("ect-received"),
           rx.get("received"))
    # the emulator's window is the first 25 s of media; the tool runs ~1 s
    # longer: rudpsrc may count a few marks more
    ce = rx.get("ce-marked", 0) + rx.get("ce-marked-rtcp", 0)
    expect(mm <= ce <= mm + max(5, mm // 5),
           "rudpsrc counted %d CE marks (%d on RTP, %d on the sender's RTCP "
           "notices), the emulator made %d in the window", ce,
           rx.get("ce-marked", 0), rx.get("ce-marked-rtcp", 0), mm)
    expect(rx.get("ce-decreases", 0) >= 5 and rx.get("decreases", 0) >=
           rx.get("ce-decreases", 0),
           "the receiver halved the level on %s marks (%s decreases)",
           rx.get("ce-decreases"), rx.get("decreases"))
    expect(r["level_max"] is not None and r["level_max"] >= 4,
           "the receiver climbed to level %s", r["level_max"])


if __name__ == "__main__":
    main(test)
