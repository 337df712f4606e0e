#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Can rudpsink/rudpsrc carry SRTP made by srtpenc/srtpdec instead of
their own (issue 26, item 7)? Measured on loopback through a userspace
relay that drops 2 % of the RTP packets (seeded) and plays the on-path
attacker: after the flow settled it replays the receiver's first feedback
datagram (the request for the lowest rate level) 20 times to the sender.

Runs of the same flow (250 frames of 80x60 I420 at 25 fps through
rtpgstpay, ~1.5 Mbit/s; rate levels 2, 4, 8 Mbit/s, rate-control=receiver,
retransmission on, rtpjitterbuffer 300 ms):

  builtin   rudpsink key=K ... rudpsrc key=K (libsrtp2 inside the elements)
  composed  rtpgstpay ! srtpenc key=K ! capssetter(application/x-rtp) !
            rudpsink ... rudpsrc ! capssetter(application/x-srtp, key) !
            srtpdec ! rtpjitterbuffer ...
  direct    srtpenc ! rudpsink without capssetter: does it link?

Each of builtin and composed runs twice: with 2 % loss (the NACK
retransmissions: rtpjitterbuffer do-retransmission=true asks rudpsrc,
upstream through srtpdec in the composed run) and loss-free (the level
climbs to the top, then the replayed requests for the lowest level).
Reported per run: frames out of rtpgstdepay, RTP packets into and out of
srtpdec, the sink's rtx-sent, feedback-received, auth-failures,
replayed, level-changes, its level just before and after the replays.
Results: experiments/rudp/results/srtp_compose.txt.

  /usr/bin/python3 experiments/rudp/srtp_compose.py [--plugins build/gst]
"""
import argparse
import os
import random
import socket
import sys
import threading
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

KEY = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d"
SSRC = 0x1234ABCD
LEVELS = "<2000000, 4000000, 8000000>"
RTP_CAPS = "application/x-rtp,media=application,clock-rate=90000,encoding-name=X-GST"
SRTP_CAPS = (f"application/x-srtp,media=application,clock-rate=90000,encoding-name=X-GST,"
             f"ssrc=(uint){SSRC},srtp-key=(buffer){KEY},srtp-cipher=aes-128-icm,"
             f"srtp-auth=hmac-sha1-80,srtcp-cipher=aes-128-icm,srtcp-auth=hmac-sha1-80,"
             f"roc=(uint)0")
FRAMES = 250


def is_rtcp(d):
    return len(d) >= 2 and 192 <= d[1] <= 223


class Relay:
    """sink -> A ... B -> rudpsrc: drops `loss` of the RTP, forwards all
    feedback back; keeps the first feedback datagram for the replay."""

    def __init__(self, loss, seed=7):
        self.a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.a.bind(("127.0.0.1", 0))
        self.b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.b.bind(("127.0.0.1", 0))
        self.a.settimeout(0.2)
        self.b.settimeout(0.2)
        self.loss, self.rng = loss, random.Random(seed)
        self.sink_addr = self.src_addr = None
        self.first_feedback = None
        self.dropped = self.forwarded = 0
        self.stop = False
        self.threads = [threading.Thread(target=self.fwd, daemon=True),
                        threading.Thread(target=self.back, daemon=True)]
        for t in self.threads:
            t.start()

    def fwd(self):
        while not self.stop:
            try:
                d, addr = self.a.recvfrom(65536)
            except socket.timeout:
                continue
            if addr != self.sink_addr and not is_rtcp(d):
                self.sink_addr = addr
            if self.src_addr is None:
                continue
            if not is_rtcp(d) and self.rng.random() < self.loss:
                self.dropped += 1
                continue
            self.forwarded += 1
            self.b.sendto(d, self.src_addr)

    def back(self):
        while not self.stop:
            try:
                d, _ = self.b.recvfrom(65536)
            except socket.timeout:
                continue
            if self.first_feedback is None:
                self.first_feedback = d
            if self.sink_addr:
                self.a.sendto(d, self.sink_addr)

    def replay(self, n):
        for _ in range(n):
            if self.first_feedback and self.sink_addr:
                self.a.sendto(self.first_feedback, self.sink_addr)
            time.sleep(0.01)

    def close(self):
        self.stop = True
        for t in self.threads:
            t.join()
        self.a.close()
        self.b.close()


def stats(el, name):
    st = el.get_property(name)
    return {st.nth_field_name(i): st.get_value(st.nth_field_name(i))
            for i in range(st.n_fields())}


def counter(pad, box, key):
    def probe(_pad, info):
        box[key] += 1
        return Gst.PadProbeReturn.OK
    pad.add_probe(Gst.PadProbeType.BUFFER, probe)


def run(mode, loss):
    relay = Relay(loss)
    builtin = mode == "builtin"
    key = f" key={KEY}" if builtin else ""
    rx_desc = (f"rudpsrc name=src address=127.0.0.1 port=0 caps=\"{RTP_CAPS}\" "
               f"levels=\"{LEVELS}\" feedback-interval=20000000 retransmission=true{key} ! ")
    if not builtin:
        rx_desc += (f"capssetter caps=\"{SRTP_CAPS}\" replace=true join=false ! dec.rtp_sink "
                    "srtpdec name=dec dec.rtp_src ! ")
    rx_desc += "rtpjitterbuffer latency=300 do-retransmission=true ! rtpgstdepay ! fakesink name=out sync=false"
    rx = Gst.parse_launch(rx_desc)
    box = {"dec-in": 0, "dec-out": 0, "frames": 0}
    out = rx.get_by_name("out")
    counter(out.get_static_pad("sink"), box, "frames")
    dec = rx.get_by_name("dec")
    if dec:
        counter(dec.get_static_pad("rtp_sink"), box, "dec-in")
        counter(dec.get_static_pad("rtp_src"), box, "dec-out")
    rx.set_state(Gst.State.PLAYING)
    src = rx.get_by_name("src")
    port = 0
    for _ in range(500):
        port = stats(src, "stats").get("port", 0)
        if port:
            break
        time.sleep(0.01)
    relay.src_addr = ("127.0.0.1", port)
    pay = (f"videotestsrc is-live=true num-buffers={FRAMES} pattern=ball ! "
           "video/x-raw,format=I420,width=80,height=60,framerate=25/1 ! "
           f"rtpgstpay mtu=1000 config-interval=1 ssrc={SSRC} ! ")
    sink = (f"rudpsink name=sink host=127.0.0.1 port={relay.a.getsockname()[1]} "
            f"rate-control=receiver levels=\"{LEVELS}\" rtx-time=1000000000")
    if builtin:
        tx_desc = pay + sink + key
    elif mode == "composed":
        tx_desc = (pay + f"srtpenc key={KEY} ! capssetter caps=application/x-rtp replace=true join=false ! "
                   + sink)
    else:
        tx_desc = pay + f"srtpenc key={KEY} ! " + sink
    try:
        tx = Gst.parse_launch(tx_desc)
    except GLib.Error as e:
        relay.close()
        rx.set_state(Gst.State.NULL)
        return {"mode": mode, "error": f"parse: {e.message}"}
    tx.set_state(Gst.State.PLAYING)
    bus = tx.get_bus()
    err = None
    t0 = time.monotonic()
    replayed_at = None
    before = after = None
    while True:
        m = bus.timed_pop_filtered(100 * Gst.MSECOND,
                                   Gst.MessageType.EOS | Gst.MessageType.ERROR)
        if m and m.type == Gst.MessageType.ERROR:
            e, dbg = m.parse_error()
            err = f"{m.src.get_name()}: {e.message}"
            break
        if m and m.type == Gst.MessageType.EOS:
            break
        if replayed_at is None and time.monotonic() - t0 > 4:
            before = stats(tx.get_by_name("sink"), "stats")
            relay.replay(20)
            replayed_at = time.monotonic()
            after = stats(tx.get_by_name("sink"), "stats")
        if time.monotonic() - t0 > 60:
            err = "timeout"
            break
    time.sleep(1.0)  # the jitterbuffer's latency, and the last rtx
    st = stats(tx.get_by_name("sink"), "stats")
    res = {"mode": mode, "error": err, "frames": box["frames"], "frames_sent": FRAMES,
           "dec_in": box["dec-in"], "dec_out": box["dec-out"],
           "relay_dropped": relay.dropped,
           "level_before_replay": before.get("level") if before else None,
           "level_after_replay": after.get("level") if after else None,
           "feedback_during_replay": (after["feedback-received"] - before["feedback-received"])
           if before else None}
    for k in ("rtx-sent", "rtx-requested", "feedback-received", "auth-failures", "replayed",
              "level-changes", "level", "srtp"):
        res[k] = st.get(k)
    tx.set_state(Gst.State.NULL)
    rx.set_state(Gst.State.NULL)
    relay.close()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plugins", default=os.path.join(os.path.dirname(__file__),
                                                      "../../build/gst"))
    ap.add_argument("--loss", type=float, default=0.02)
    args = ap.parse_args()
    os.environ["GST_PLUGIN_PATH"] = os.path.abspath(args.plugins)
    Gst.init(None)
    # NACK/rtx and rate control under loss; then the replay attack on a
    # loss-free flow, whose level has climbed to the top and stays there
    for mode, loss in (("direct", args.loss), ("builtin", args.loss),
                       ("composed", args.loss), ("builtin", 0.0), ("composed", 0.0)):
        r = run(mode, loss)
        print(f"loss={loss} " + " ".join(f"{k}={v}" for k, v in r.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
