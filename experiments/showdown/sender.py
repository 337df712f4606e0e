#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A peer's sender for the showdown: runs a gst-launch style pipeline
whose pacing element is named `pace` and, once the clip has gone through
it (EOS there), keeps the pipeline (and so the transport's socket and its
send/retransmission buffer) open for LINGER seconds before it stops.
gst-launch-1.0 would close the socket at EOS, and SRT in live mode drops
what it still holds (the clip's last frames); ristsink never posts EOS.

  sender.py LINGER PIPELINE-DESCRIPTION...
"""
import sys

import gi
gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402


def main():
    linger = float(sys.argv[1])
    Gst.init(None)
    p = Gst.parse_launch(" ".join(sys.argv[2:]))
    loop = GLib.MainLoop()
    rc = [0]

    def done():
        loop.quit()
        return False

    def probe(pad, info):
        if info.get_event().type == Gst.EventType.EOS:
            GLib.idle_add(lambda: GLib.timeout_add(int(linger * 1000), done) and False)
        return Gst.PadProbeReturn.OK

    p.get_by_name("pace").get_static_pad("src").add_probe(
        Gst.PadProbeType.EVENT_DOWNSTREAM, probe)

    def on_msg(bus, msg):
        if msg.type == Gst.MessageType.ERROR:
            err, dbg = msg.parse_error()
            print("ERROR:", msg.src.get_name(), err.message, dbg, flush=True)
            rc[0] = 1
            loop.quit()
    bus = p.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_msg)
    p.set_state(Gst.State.PLAYING)
    loop.run()
    p.set_state(Gst.State.NULL)
    return rc[0]


if __name__ == "__main__":
    sys.exit(main())
