#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Sender and receiver of a rudp media flow (GStreamer via PyGObject, hence
Debian's /usr/bin/python3), for the net test and experiments; run inside
testbed namespaces. GST_PLUGIN_PATH_1_0 must name the build's gst/.

  python3 -m twoflowlab.rudptool recv --port P --duration S [--props "increase-packets=20"]
      rudpsrc ! fakesink; prints JSON {stats, samples [[t, level, received,
      lost]]}
  python3 -m twoflowlab.rudptool send --host H --port P --duration S [--props "..."]
      videotestsrc ! rtpgstpay mtu=1000 ! rudpsink rate-control=receiver
      (1000-byte RTP packets, always backlogged); prints JSON {events
      [[t, type, estimated-bitrate]] (the GstNetworkCongestion bus
      messages), samples [[t, level, rate (bit/s), bytes-sent, packets-sent]],
      stats}

Times are CLOCK_MONOTONIC seconds; samples every --interval (0.1 s).
"""

import argparse
import json
import sys
import time

from twoflowlab.gst import GLib, Gst, structure_to_dict

CAPS = ("application/x-rtp,media=application,clock-rate=90000,"
        "encoding-name=X-GST")


def run(desc, element, duration, interval, fields, on_message=None):
    pipe = Gst.parse_launch(desc)
    el = pipe.get_by_name(element)
    samples = []
    loop = GLib.MainLoop()
    error = []

    def on_bus(bus, msg):
        if msg.type == Gst.MessageType.ERROR:
            err, dbg = msg.parse_error()
            error.append("%s (%s)" % (err.message, dbg))
            loop.quit()
        elif msg.type == Gst.MessageType.ELEMENT and on_message:
            on_message(msg)
        return True

    def sample():
        st = structure_to_dict(el.get_property("stats"))
        samples.append([time.monotonic()] + [st.get(f) for f in fields])
        return True

    def stop():
        loop.quit()
        return False

    bus = pipe.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_bus)
    if pipe.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        print(json.dumps({"error": "cannot start"}))
        return None
    t0 = time.monotonic()
    GLib.timeout_add(int(interval * 1000), sample)
    GLib.timeout_add(int(duration * 1000), stop)
    loop.run()
    stats = structure_to_dict(el.get_property("stats"))
    pipe.set_state(Gst.State.NULL)
    bus.remove_signal_watch()
    return {"t0": t0, "samples": samples, "stats": stats,
            "error": error[0] if error else None}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("mode", choices=["send", "recv"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5004)
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--interval", type=float, default=0.1)
    p.add_argument("--props", default="", help="extra element properties")
    a = p.parse_args()
    Gst.init(None)
    if a.mode == "recv":
        # the paper's law (rudpsrc's default is law=tfrc): the UDP
        # paper's experiments and their smoke tests measure it
        desc = ("rudpsrc name=src port=%d caps=\"%s\" law=halving %s ! "
                "fakesink sync=false" % (a.port, CAPS, a.props))
        res = run(desc, "src", a.duration, a.interval,
                  ("level", "received", "lost", "srtt", "increase-wait"))
    else:
        events = []

        def on_message(msg):
            s = msg.get_structure()
            if s is not None and s.get_name() == "GstNetworkCongestion":
                events.append([time.monotonic(), s.get_value("type"),
                               s.get_value("estimated-bitrate")])

        desc = ("videotestsrc is-live=false ! video/x-raw,width=320,"
                "height=240 ! rtpgstpay mtu=1000 ! rudpsink name=sink "
                "host=%s port=%d rate-control=receiver %s" % (
                    a.host, a.port, a.props))
        res = run(desc, "sink", a.duration, a.interval,
                  ("level", "rate", "bytes-sent", "packets-sent"),
                  on_message)
        if res is not None:
            res["events"] = events
    if res is None:
        return 1
    print(json.dumps(res), flush=True)
    return 0 if res["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
