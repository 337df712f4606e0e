#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Seek time over RTSP (issue 23 item 4): from a viewer's seek to the first
packet of the new position, on loopback, twoflow-server and twoflow-proxy
at their defaults (or --segment-duration).

A GStreamer rtspsrc viewer plays the corpus clip h264-aac-12s.mp4 (a key
frame every second), waits for the first packet, then seeks (flushing,
key unit) to T; the seek time is from the seek call to the first packet
of the new position (its video timestamp is the key frame before T).
Also the start time (PLAY to the first packet) of the same viewer. ffmpeg:
its seek time is the difference between its first decoded frame with
-ss T (PLAY, PAUSE, PLAY with a Range) and without (it exits there). Each
seek starts a new server session at the key frame before T
(docs/system.md, "Seeking").

    /usr/bin/python3 experiments/system/seek_time.py [--build build]
        [--runs 3] [--targets 5,8,11] [--segment-duration S]
        [--out /tmp/twoflow-seek-time] [--doc]

Prints one JSON line per seek and a summary; --doc writes the summary to
experiments/system/results/seek-time.json.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from twoflowlab.checks import free_port  # noqa: E402

import gi  # noqa: E402
gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

CLIP = "h264-aac-12s.mp4"
TS_BASE = 3600.0        # mpegtsmux's clock base
GOP = 1.0               # the clip's key frame interval


def video_pts(data):
    """The first video PES timestamp (s, the MPEG-TS's) in TS packets."""
    for off in range(0, len(data) - 187, 188):
        pkt = data[off:off + 188]
        if pkt[0] != 0x47 or not pkt[1] & 0x40:
            continue
        i = 4
        if pkt[3] & 0x20:
            i += 1 + pkt[4]
        pes = pkt[i:]
        if len(pes) >= 14 and pes[:3] == b"\0\0\1" and 0xE0 <= pes[3] <= 0xEF \
                and pes[7] & 0x80:
            p = pes[9:14]
            return (((p[0] >> 1) & 7) << 30 | p[1] << 22 | (p[2] >> 1) << 15
                    | p[3] << 7 | p[4] >> 1) / 90000.0
    return None


def control(port, req):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        f = s.makefile("rw")
        f.write(json.dumps(req) + "\n")
        f.flush()
        return json.loads(f.readline())


def one_seek(url, t):
    """(start time, seek time) in s of one rtspsrc viewer seeking to t: the
    seek time ends at the first packet with a video timestamp of the new
    position (packets of the old one may still come after the flush)."""
    p = Gst.parse_launch(f"rtspsrc location={url} protocols=tcp ! rtpmp2tdepay ! "
                         "fakesink name=sink sync=false")
    first, after = threading.Event(), threading.Event()
    flushed = [False]
    stamp = {}
    target = [t]

    def probe(_pad, info):
        if info.type & Gst.PadProbeType.EVENT_FLUSH:
            if info.get_event().type == Gst.EventType.FLUSH_STOP:
                flushed[0] = True
            return Gst.PadProbeReturn.OK
        if not first.is_set():
            stamp["first"] = time.monotonic()
            first.set()
        elif flushed[0] and not after.is_set():
            ok, m = info.get_buffer().map(Gst.MapFlags.READ)
            pts = video_pts(bytes(m.data)) if ok else None
            if ok:
                info.get_buffer().unmap(m)
            # the new position begins at the key frame before the target
            # (its picture 80 ms on; the targets are beyond where the old
            # session is when the viewer seeks, right after its first packet)
            key = int(target[0] / GOP) * GOP
            if pts is not None and key - 0.05 <= pts - TS_BASE <= key + 0.3:
                stamp["after"] = time.monotonic()
                stamp["pts"] = pts - TS_BASE
                after.set()
        return Gst.PadProbeReturn.OK

    p.get_by_name("sink").get_static_pad("sink").add_probe(
        Gst.PadProbeType.BUFFER | Gst.PadProbeType.EVENT_FLUSH, probe)
    t0 = time.monotonic()
    p.set_state(Gst.State.PLAYING)
    res = {"target": t}
    if first.wait(60):
        res["start_s"] = round(stamp["first"] - t0, 3)
        ts = time.monotonic()
        ok = p.seek_simple(Gst.Format.TIME,
                           Gst.SeekFlags.FLUSH | Gst.SeekFlags.KEY_UNIT,
                           int(t * Gst.SECOND))
        if ok and after.wait(60):
            res["seek_s"] = round(stamp["after"] - ts, 3)
            res["first_pts"] = round(stamp["pts"], 3)
        else:
            res["error"] = "seek refused" if not ok else "nothing after the seek"
    else:
        res["error"] = "no first packet"
    p.set_state(Gst.State.NULL)
    return res


def ffmpeg_first_frame(url, t=None):
    """Wall time (s) of ffmpeg from its start to its first decoded frame
    (it exits there), with -ss t (PLAY, PAUSE, PLAY with a Range) or not."""
    ss = ["-ss", str(t), "-noaccurate_seek"] if t is not None else []
    t0 = time.monotonic()
    r = subprocess.run(["ffmpeg", "-v", "error", "-rtsp_transport", "tcp"] + ss
                       + ["-i", url, "-frames:v", "1", "-f", "null", "-"],
                       capture_output=True, timeout=120)
    return round(time.monotonic() - t0, 3) if r.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--targets", default="5,8,11")
    ap.add_argument("--segment-duration", type=float, default=None)
    ap.add_argument("--out", default="/tmp/twoflow-seek-time")
    ap.add_argument("--doc", action="store_true")
    a = ap.parse_args()
    Gst.init(None)
    os.makedirs(a.out, exist_ok=True)
    corpus = os.path.join(a.out, "corpus")
    subprocess.run([os.path.join(ROOT, "scripts", "make-corpus.sh"), corpus],
                   check=True, capture_output=True)
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(a.build, "gst"))
    cport, rport = free_port(), free_port()
    procs = [subprocess.Popen([os.path.join(a.build, "tools/server/twoflow-server"),
                               "--dir", corpus, "--port", str(cport), "--address",
                               "127.0.0.1", "--insecure"], env=env,
                              stdout=open(os.path.join(a.out, "server.log"), "w"),
                              stderr=subprocess.STDOUT)]
    try:
        for _ in range(100):
            try:
                control(cport, {"cmd": "STATUS"})
                break
            except OSError:
                time.sleep(0.05)
        seg = ["--segment-duration", str(a.segment_duration)] if a.segment_duration else []
        procs.append(subprocess.Popen(
            [os.path.join(a.build, "tools/proxy/twoflow-proxy"), "--server",
             f"127.0.0.1:{cport}", "--insecure", "--rtsp-port", str(rport),
             "--rtsp-address", "127.0.0.1", "--prefix-dir",
             os.path.join(a.out, "prefix")] + seg, env=env,
            stdout=open(os.path.join(a.out, "proxy.log"), "w"), stderr=subprocess.STDOUT))
        time.sleep(0.5)
        url = f"rtsp://127.0.0.1:{rport}/video/{CLIP}"
        rows = []
        for _ in range(a.runs):
            for t in [float(x) for x in a.targets.split(",")]:
                r = one_seek(url, t)
                # ffmpeg: its seek costs the difference between its first
                # frame with -ss and without
                plain, seek = ffmpeg_first_frame(url), ffmpeg_first_frame(url, t)
                if plain is not None and seek is not None:
                    r["ffmpeg_first_frame_s"] = plain
                    r["ffmpeg_seek_first_frame_s"] = seek
                    r["ffmpeg_seek_s"] = round(seek - plain, 3)
                print(json.dumps(r), flush=True)
                rows.append(r)
        seeks = [r["seek_s"] for r in rows if "seek_s" in r]
        starts = [r["start_s"] for r in rows if "start_s" in r]
        ff = [r["ffmpeg_seek_s"] for r in rows if "ffmpeg_seek_s" in r]
        summary = {
            "clip": CLIP, "segment_duration": a.segment_duration or "default",
            "seeks": len(seeks), "failed": len(rows) - len(seeks),
            "seek_s": {"median": statistics.median(seeks), "min": min(seeks),
                       "max": max(seeks)} if seeks else None,
            "start_s": {"median": statistics.median(starts), "min": min(starts),
                        "max": max(starts)} if starts else None,
            "ffmpeg_seek_s": {"median": statistics.median(ff), "min": min(ff),
                              "max": max(ff)} if ff else None,
        }
        print(json.dumps({"summary": summary}))
        if a.doc:
            with open(os.path.join(ROOT, "experiments/system/results/seek-time.json"),
                      "w") as f:
                json.dump({"summary": summary, "runs": rows}, f, indent=1)
                f.write("\n")
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


if __name__ == "__main__":
    main()
