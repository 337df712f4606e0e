#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Seeking over RTSP on loopback (suite 'system', issue 23 item 4).

A 12 s H.264 + AAC clip of the corpus (a key frame every second) served by
twoflow-server and twoflow-proxy:

* DESCRIBE's SDP carries the duration (a=range:npt=0-12...);
* ffmpeg -ss T (PLAY, PAUSE, PLAY with Range, in the MPEG-TS's own time):
  the first video frame is the key frame before T (its MPEG-TS timestamp
  minus mpegtsmux's 3600 s base within one GOP below T), every frame from
  there follows without a gap, and the audio from there;
* ffmpeg -ss in an MPEG-2 + AC-3 TS (open GOPs, PTS from 11 h);
* rtspsrc, seeking during playback: the first frame after the seek is the
  key frame before T;
* the proxy's seeked session delivered every frame and audio record the
  server sent from its start (delivery complete, nothing lost).

usage: test_seek.py SERVER_EXE PROXY_EXE MAKE_CORPUS CORPUS_DIR
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from twoflowlab.checks import check, failures, free_port, stop_programs

CLIP = "h264-aac-12s.mp4"
FPS = 25
TS_BASE = 3600.0        # mpegtsmux's clock base
GOP = 1.0               # the clip's key frame interval, s

RTSPSRC_SEEK = """
import sys, threading, gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst
Gst.init(None)
url, t, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
p = Gst.parse_launch(f"rtspsrc location={url} protocols=tcp ! rtpmp2tdepay ! "
                     f"filesink name=sink location={out}")
first, flushed = threading.Event(), [False]
def probe(pad, info):
    if info.type & Gst.PadProbeType.EVENT_FLUSH:
        if info.get_event().type == Gst.EventType.FLUSH_STOP:
            flushed[0] = True
        return Gst.PadProbeReturn.OK
    if info.type & Gst.PadProbeType.BUFFER:
        first.set()
        # what came before the seek is not written
        return Gst.PadProbeReturn.OK if flushed[0] else Gst.PadProbeReturn.DROP
    return Gst.PadProbeReturn.OK
p.get_by_name("sink").get_static_pad("sink").add_probe(
    Gst.PadProbeType.BUFFER | Gst.PadProbeType.EVENT_FLUSH, probe)
p.set_state(Gst.State.PLAYING)
if not first.wait(60):
    print("no data before the seek"); sys.exit(1)
if not p.seek_simple(Gst.Format.TIME, Gst.SeekFlags.FLUSH | Gst.SeekFlags.KEY_UNIT,
                     int(t * Gst.SECOND)):
    print("seek refused"); sys.exit(1)
m = p.get_bus().timed_pop_filtered(90 * Gst.SECOND,
                                   Gst.MessageType.EOS | Gst.MessageType.ERROR)
p.set_state(Gst.State.NULL)
if m is None or m.type != Gst.MessageType.EOS:
    print(m.parse_error()[0].message if m else "timeout"); sys.exit(1)
"""


def control(port, req):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        f = s.makefile("rw")
        f.write(json.dumps(req) + "\n")
        f.flush()
        return json.loads(f.readline())


def describe(port, path):
    """The SDP of DESCRIBE's answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(f"DESCRIBE rtsp://127.0.0.1:{port}{path} RTSP/1.0\r\nCSeq: 1\r\n"
                  "Accept: application/sdp\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        m = re.search(rb"Content-Length:\s*(\d+)", head, re.I)
        need = int(m.group(1)) if m else 0
        while len(body) < need:
            chunk = s.recv(4096)
            if not chunk:
                break
            body += chunk
        return head.decode(errors="replace"), body.decode(errors="replace")


def pts_list(text, filt):
    return [float(m.group(1)) for m in
            re.finditer(r"\[Parsed_%s_\d+ @ [^]]+\] n: *\d+ .*?pts_time:([-\d.]+)" % filt,
                        text)]


def ts_video_pts(path):
    res = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v",
                          "-show_entries", "frame=pts_time", "-of", "csv=p=0", path],
                         capture_output=True, text=True, timeout=60)
    return [float(x.split(",")[0]) for x in res.stdout.split() if x.split(",")[0]]


def main():
    server_exe, proxy_exe, make_corpus, corpus = sys.argv[1:5]
    res = subprocess.run([make_corpus, corpus], capture_output=True, text=True,
                         timeout=300)
    check(res.returncode == 0, f"corpus made ({res.stderr.strip()[-200:]})")
    work = tempfile.mkdtemp(prefix="twoflow-seek-")
    procs = []
    try:
        cport, rport = free_port(), free_port()
        slog, plog = os.path.join(work, "server.log"), os.path.join(work, "proxy.log")
        procs.append(subprocess.Popen([server_exe, "--dir", corpus, "--port", str(cport),
                                       "--address", "127.0.0.1", "--insecure"],
                                      stdout=open(slog, "w"), stderr=subprocess.STDOUT))
        for _ in range(100):
            try:
                control(cport, {"cmd": "STATUS"})
                break
            except OSError:
                time.sleep(0.05)
        info = control(cport, {"cmd": "INFO", "video": CLIP})
        duration, frames = info.get("duration", 0), info.get("frames", 0)
        check(frames == 300 and 11.9 < duration < 12.1,
              f"INFO {CLIP}: {frames} frames, {duration} s")
        procs.append(subprocess.Popen([proxy_exe, "--server", f"127.0.0.1:{cport}",
                                       "--insecure", "--segment-duration", "2",
                                       "--rtsp-port", str(rport),
                                       "--rtsp-address", "127.0.0.1",
                                       "--prefix-dir", os.path.join(work, "prefix")],
                                      stdout=open(plog, "w"), stderr=subprocess.STDOUT))
        time.sleep(0.5)
        url = f"rtsp://127.0.0.1:{rport}/video/{CLIP}"

        # 1. the SDP carries the duration
        head, sdp = describe(rport, f"/video/{CLIP}")
        m = re.search(r"a=range:npt=0-([\d.]+)", sdp)
        check(head.startswith("RTSP/1.0 200") and m
              and abs(float(m.group(1)) - duration) < 0.05,
              f"SDP range: {m.group(0) if m else sdp[:200]!r}")

        # 2. rtspsrc seeks during playback (beside ffmpeg, in a thread)
        rs_out = os.path.join(work, "rtspsrc.ts")
        T_RS = 5.4
        rs = {}

        def rtspsrc_seek():
            r = subprocess.run(["/usr/bin/python3", "-c", RTSPSRC_SEEK, url, str(T_RS),
                                rs_out], capture_output=True, text=True, timeout=120)
            rs["rc"], rs["out"] = r.returncode, (r.stdout + r.stderr).strip()[-300:]

        th = threading.Thread(target=rtspsrc_seek)
        th.start()

        # 3. ffmpeg -ss T: its first frame is the key frame before T
        T = 7.5
        ff = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-rtsp_transport", "tcp",
                             "-ss", str(T), "-noaccurate_seek", "-copyts", "-i", url,
                             "-vf", "showinfo", "-af", "ashowinfo", "-f", "null", "-"],
                            capture_output=True, text=True, timeout=120)
        check(ff.returncode == 0, f"ffmpeg -ss {T}: exit {ff.returncode} "
              f"{ff.stderr.strip()[-200:]}")
        video = [p - TS_BASE for p in pts_list(ff.stderr, "showinfo")]
        audio = [p - TS_BASE for p in pts_list(ff.stderr, "ashowinfo")]
        first = video[0] if video else -1
        gaps = [round(b - a, 3) for a, b in zip(video, video[1:]) if b - a > 1.5 / FPS]
        check(T - GOP - 0.1 <= first <= T,
              f"ffmpeg -ss {T}: first frame at {first:.3f} s (the GOP before {T})")
        # from the key frame (every GOP s; its picture is shown 80 ms on,
        # after the B frames' reordering) to the end
        want = round((duration - int(first / GOP) * GOP) * FPS)
        check(abs(len(video) - want) <= 1 and not gaps,
              f"ffmpeg -ss {T}: {len(video)} frames from there (want {want}), gaps {gaps}")
        # the audio from the start on (an audio packet or two of the
        # stream before the seek may still reach ffmpeg over UDP; TCP here)
        after = [a for a in audio if a >= first - 0.1]
        check(after and abs(after[0] - first) < 0.15
              and after[-1] - after[0] > duration - first - 0.3,
              f"ffmpeg -ss {T}: audio from {after[0] if after else None} to "
              f"{after[-1] if after else None} s ({len(after)} frames)")

        # MPEG-2 with open GOPs (a key frame every 0.48 s) whose PTS start
        # 11 h in: the start counts from the first key frame
        T2 = 1.5
        ff2 = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-rtsp_transport", "tcp",
                              "-ss", str(T2), "-noaccurate_seek", "-copyts", "-i",
                              f"rtsp://127.0.0.1:{rport}/video/mpeg2-ac3.ts",
                              "-vf", "showinfo", "-af", "ashowinfo", "-f", "null", "-"],
                             capture_output=True, text=True, timeout=120)
        v2 = [p - TS_BASE for p in pts_list(ff2.stderr, "showinfo")]
        a2 = [p - TS_BASE for p in pts_list(ff2.stderr, "ashowinfo")]
        check(ff2.returncode == 0 and v2 and T2 - 0.6 <= v2[0] <= T2 and len(v2) >= 40
              and a2 and abs(a2[0] - v2[0]) < 0.5,
              f"ffmpeg -ss {T2} in mpeg2-ac3.ts: first frame at "
              f"{v2[0] if v2 else None} s, {len(v2)} frames, audio from "
              f"{a2[0] if a2 else None} s")

        th.join(130)
        check(rs.get("rc") == 0, f"rtspsrc seek to {T_RS}: {rs.get('out')}")
        vpts = [p - TS_BASE for p in ts_video_pts(rs_out)] if os.path.exists(rs_out) else []
        check(vpts and T_RS - GOP - 0.1 <= vpts[0] <= T_RS and len(vpts) >= FPS,
              f"rtspsrc seek to {T_RS}: first frame at "
              f"{vpts[0] if vpts else None} s, {len(vpts)} frames after it")
        time.sleep(1)
        log = open(plog).read()
        seeks = re.findall(r"RTSP seek in \S+ to ([\d.]+) s", log)
        starts = [float(x) for x in re.findall(r"playing \S+ from ([\d.]+) s", log)]
        check(len(seeks) >= 3 and any(abs(s - 7.0) < 0.01 for s in starts)
              and any(abs(s - 5.0) < 0.01 for s in starts),
              f"the proxy started new server sessions at the key frames: seeks {seeks}, "
              f"starts {starts}")
        ends = [json.loads(line[len("SESSION-END "):]) for line in log.splitlines()
                if line.startswith("SESSION-END ")]
        seeked = [e["delivery"] for e in ends if "delivery" in e
                  and 0 < e["delivery"].get("frames", 0) < frames]
        # a seek starts like a first PLAY: the start-up ramp's short lead,
        # not the 2 s segment's stagger
        leads = [e.get("lead") for e in ends if "delivery" in e
                 and 0 < e["delivery"].get("frames", 0) < frames]
        check(leads and all(x is not None and x < 2.0 for x in leads),
              f"the seeked sessions start with the start-up ramp: leads {leads}")
        check(seeked and all(d["complete"] and d["lost_frames"] == 0
                             and d["audio_missing"] == 0 for d in seeked),
              f"the seeked sessions delivered what the server sent from their start: "
              f"{[(d['frames'], d['output_frames'], d['audio_records'], d['audio_output']) for d in seeked]}")
    finally:
        stop_programs(("twoflow-server", "twoflow-proxy"), procs)
        if failures:
            for n in ("server.log", "proxy.log"):
                path = os.path.join(work, n)
                if os.path.exists(path):
                    print(f"--- {n}\n" + open(path).read()[-3000:])
    for name in ("server.log", "proxy.log"):
        path = os.path.join(work, name)
        if os.path.exists(path):
            text = open(path).read()
            check("CRITICAL" not in text and "-WARNING **" not in text,
                  f"no GLib/GStreamer criticals or warnings in {name}")
    if not failures:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
