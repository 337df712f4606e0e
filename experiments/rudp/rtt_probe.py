#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The rUDP RTT as the sender sees it (rudpsink's `rtt` and `srtt` stats:
the receiver's latest sample and its SRTT, docs/rudp.md "RTT") against
the link's base RTT, on a clean emulated link (root).

  sudo PYTHONPATH=python experiments/rudp/rtt_probe.py --build build
       [--rates 200000 1000000 5000000] [--seconds 8]

Link: 10 Mbit/s, 20 ms each way (RTT 40 ms), 80-packet drop-tail queue,
no loss: what the sender sends at a fixed rate far below the capacity
finds no queue, so every sample above 40 ms (+ ~1 ms of serialization
and scheduling) is measurement error. One rudpsink rate-control=fixed
(1000-byte RTP packets) -> rudpsrc per rate; the sink's stats sampled
every 100 ms after the first 2 s. Prints one line per rate: the samples'
median, 90th percentile and maximum, and the SRTT's median."""

import argparse
import json
import os
import subprocess
import sys
import time

from twoflowlab import tool_argv  # noqa: E402
from twoflowlab.testbed import Testbed  # noqa: E402

SEND = r'''
import json, sys, time
from twoflowlab.gst import GLib, Gst, structure_to_dict
Gst.init(None)
host, port, rate, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
pipe = Gst.parse_launch(
    "videotestsrc is-live=false ! video/x-raw,width=320,height=240 ! "
    "rtpgstpay mtu=1000 ! rudpsink name=sink host=%s port=%d "
    "rate-control=fixed rate=%d" % (host, port, rate))
sink = pipe.get_by_name("sink")
out = []
loop = GLib.MainLoop()
t0 = time.monotonic()
def sample():
    st = structure_to_dict(sink.get_property("stats"))
    out.append([time.monotonic() - t0, st.get("rtt"), st.get("rtt-samples"),
                st.get("srtt"), st.get("feedback-received")])
    return True
GLib.timeout_add(100, sample)
GLib.timeout_add(int(secs * 1000), lambda: loop.quit())
pipe.set_state(Gst.State.PLAYING)
loop.run()
pipe.set_state(Gst.State.NULL)
print(json.dumps(out))
'''


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--rates", type=int, nargs="+",
                   default=[200000, 1000000, 5000000])
    p.add_argument("--seconds", type=float, default=8.0)
    a = p.parse_args()
    os.environ["GST_PLUGIN_PATH_1_0"] = os.path.join(
        os.path.abspath(a.build), "gst")
    port = 5004
    for rate in a.rates:
        with Testbed(rate_bps=10e6, delay_ms=20, queue_pkts=80) as tb:
            rx = tb.client.popen(tool_argv("rudptool") + [
                "recv", "--port", str(port), "--duration",
                str(a.seconds + 3)], stdout=subprocess.DEVNULL)
            time.sleep(1.0)
            tx = tb.server.popen(["/usr/bin/python3", "-c", SEND,
                                  tb.client_ip, str(port), str(rate),
                                  str(a.seconds)],
                                 stdout=subprocess.PIPE, text=True)
            out, _ = tx.communicate(timeout=a.seconds + 60)
            rx.wait(timeout=30)
        rows = json.loads(out.strip().splitlines()[-1])
        seen, rtts, srtts = None, [], []
        for t, rtt, n, srtt, _ in rows:
            if t < 2.0:
                seen = n
                continue
            if n != seen and rtt:
                rtts.append(rtt / 1e6)
            seen = n
            if srtt:
                srtts.append(srtt / 1e6)
        print("rate %8d bit/s: rtt samples %3d median %.1f ms p90 %.1f "
              "max %.1f; srtt median %.1f ms (base 40 ms)" % (
                  rate, len(rtts), pct(rtts, 0.5), pct(rtts, 0.9),
                  max(rtts) if rtts else float("nan"), pct(srtts, 0.5)),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
