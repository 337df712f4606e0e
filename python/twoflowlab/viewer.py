#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A stock RTSP viewer: rtspsrc ! decodebin ! fakesink, counting decoded
frames; prints one JSON line {url, frames, error, seconds}.

  python3 -m twoflowlab.viewer rtsp://HOST:8554/video/NAME [--timeout S]
"""
import argparse
import json
import time

from twoflowlab.gst import count_frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    t0 = time.monotonic()
    frames, err = count_frames(f"rtspsrc location={args.url} protocols=tcp ! decodebin "
                               "! fakesink name=sink sync=false", timeout=args.timeout)
    print(json.dumps({"url": args.url, "frames": frames, "error": err,
                      "seconds": round(time.monotonic() - t0, 2)}), flush=True)


if __name__ == "__main__":
    main()
