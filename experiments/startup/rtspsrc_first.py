#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""GStreamer's RTSP viewer, timed: rtspsrc (TCP) ! decodebin ! fakesink
on the video pad. Prints one JSON line: seconds from the start to the
first and second decoded video frames, frames decoded, error.

  /usr/bin/python3 rtspsrc_first.py URL [--timeout S]
"""
import argparse
import json
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    Gst.init(None)
    t0 = time.monotonic()
    pipe = Gst.parse_launch(f"rtspsrc location={args.url} protocols=tcp "
                            "! decodebin name=d")
    times = []

    def probe(_pad, _info):
        times.append(time.monotonic() - t0)
        return Gst.PadProbeReturn.OK

    def pad_added(_d, pad):
        caps = pad.get_current_caps() or pad.query_caps(None)
        kind = caps.get_structure(0).get_name() if caps and caps.get_size() else ""
        sink = Gst.ElementFactory.make("fakesink", None)
        sink.set_property("sync", False)
        pipe.add(sink)
        sink.sync_state_with_parent()
        pad.link(sink.get_static_pad("sink"))
        if kind.startswith("video/"):
            sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, probe)

    pipe.get_by_name("d").connect("pad-added", pad_added)
    pipe.set_state(Gst.State.PLAYING)
    msg = pipe.get_bus().timed_pop_filtered(int(args.timeout * Gst.SECOND),
                                            Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipe.set_state(Gst.State.NULL)
    err = None
    if msg is None:
        err = "timeout"
    elif msg.type == Gst.MessageType.ERROR:
        err = msg.parse_error()[0].message
    print(json.dumps({"first_frame_s": round(times[0], 3) if times else None,
                      "second_frame_s": round(times[1], 3) if len(times) > 1 else None,
                      "frames": len(times), "error": err}), flush=True)


if __name__ == "__main__":
    main()
