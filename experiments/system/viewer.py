#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A stock RTSP viewer: rtspsrc ! decodebin ! fakesink, counting decoded
frames; prints one JSON line {url, frames, error, seconds}.

  experiments/system/viewer.py rtsp://HOST:8554/video/NAME [--timeout S]
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
    p = Gst.parse_launch(f"rtspsrc location={args.url} protocols=tcp ! decodebin "
                         "! fakesink name=sink sync=false")
    n = [0]

    def probe(_pad, _info):
        n[0] += 1
        return Gst.PadProbeReturn.OK

    p.get_by_name("sink").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, probe)
    t0 = time.monotonic()
    p.set_state(Gst.State.PLAYING)
    m = p.get_bus().timed_pop_filtered(int(args.timeout * Gst.SECOND),
                                       Gst.MessageType.EOS | Gst.MessageType.ERROR)
    p.set_state(Gst.State.NULL)
    err = None
    if m is None:
        err = "timeout"
    elif m.type == Gst.MessageType.ERROR:
        e, dbg = m.parse_error()
        err = f"{e.message}: {(dbg or '').splitlines()[-1]}"
    print(json.dumps({"url": args.url, "frames": n[0], "error": err,
                      "seconds": round(time.monotonic() - t0, 2)}), flush=True)


if __name__ == "__main__":
    main()
