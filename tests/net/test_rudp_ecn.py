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

from nettest import expect, log, main
from rudpcase import expect_fair_share, run_case


def test():
    run, r = run_case("rudp-ecn", 25.0)
    log(run.summary_line(r))
    expect_fair_share(run, r)
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
