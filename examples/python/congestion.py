#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""GstNetworkCongestion from Python, through GObject introspection.

Builds  videotestsrc ! queue ! fakesink name=transport,  and does from
Python what every twoflow transport sink does on congestion: sends a
GstNetworkCongestion event upstream from the sink's pad and posts the same
structure as an element message (GstTwoflow.congestion_notify).
A pad probe on the source's pad reads the event as an upstream element
(a rate transcoder) would, and the bus watch reads the message back with
GstTwoflow.congestion_message_parse, as an application does.

From the build tree:
  GI_TYPELIB_PATH=build/gst-libs/gst/twoflow \\
  LD_LIBRARY_PATH=build/gst-libs/gst/twoflow \\
  /usr/bin/python3 examples/python/congestion.py
Installed, GstTwoflow-1.0.typelib is found without the variables.

Prints one line for the event and one for the message, e.g.
  event: type=loss estimated-bitrate=2000000 srtt=40000000 source=transport
  message: type=loss estimated-bitrate=2000000 srtt=40000000 source=transport
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstTwoflow", "1.0")
from gi.repository import GLib, Gst, GstTwoflow  # noqa: E402

Type = GstTwoflow.CongestionType


def describe(kind, ctype, bitrate, srtt, source):
    return "%s: type=%s estimated-bitrate=%d srtt=%d source=%s" % (
        kind, GstTwoflow.congestion_type_to_string(ctype), bitrate,
        srtt, source)


def main(argv):
    Gst.init(argv)
    bitrate = int(argv[1]) if len(argv) > 1 else 2000000
    srtt = 40 * Gst.MSECOND
    pipeline = Gst.parse_launch(
        "videotestsrc name=src is-live=true ! queue ! fakesink name=transport")
    src = pipeline.get_by_name("src")
    transport = pipeline.get_by_name("transport")
    loop = GLib.MainLoop()
    seen = {}

    def on_upstream_event(pad, info):
        ok, ctype, rate, rtt, source = GstTwoflow.congestion_event_parse(
            info.get_event())
        if ok:
            seen["event"] = describe("event", ctype, rate, rtt, source)
        return Gst.PadProbeReturn.OK

    src.get_static_pad("src").add_probe(
        Gst.PadProbeType.EVENT_UPSTREAM, on_upstream_event)

    def on_message(bus, msg):
        if msg.type == Gst.MessageType.ELEMENT:
            ok, ctype, rate, rtt, source = \
                GstTwoflow.congestion_message_parse(msg)
            if ok:
                seen["message"] = describe("message", ctype, rate, rtt, source)
                loop.quit()
        elif msg.type == Gst.MessageType.ERROR:
            err, _ = msg.parse_error()
            seen["error"] = err.message
            loop.quit()
        elif (msg.type == Gst.MessageType.STATE_CHANGED and
              msg.src == pipeline and
              msg.parse_state_changed()[1] == Gst.State.PLAYING and
              "sent" not in seen):
            # what a transport sink does on a loss reaction
            seen["sent"] = True
            GstTwoflow.congestion_notify(
                transport, transport.get_static_pad("sink"), Type.LOSS,
                bitrate, srtt)

    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_message)
    GLib.timeout_add_seconds(10, loop.quit)
    pipeline.set_state(Gst.State.PLAYING)
    loop.run()
    pipeline.set_state(Gst.State.NULL)
    bus.remove_signal_watch()

    if "error" in seen:
        print("error: %s" % seen["error"], file=sys.stderr)
        return 1
    for kind in ("event", "message"):
        if kind not in seen:
            print("no GstNetworkCongestion %s seen" % kind, file=sys.stderr)
            return 1
        print(seen[kind])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
