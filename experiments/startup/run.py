#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Issue 23 (item 3): time to the first frame at the programs' defaults.

twoflow-server --dir MEDIA and twoflow-proxy --server ... on loopback with
no tuning flag (10 s segments; --insecure for the lab's plaintext control
channel), the media of scripts/make-defaults-media.sh (a 5.3 s 720p and a
30 s 1080p 5 Mbit/s H.264 + AAC MP4). For each video, one viewer and then
two simultaneous viewers of each kind:

* fetch: `twoflow-proxy --fetch V --output X.ts` (its FETCH-RESULT's
  first_frame_s / second_frame_s: the merge's first two video frames
  after the request);
* rtsp-ffmpeg: `ffmpeg -rtsp_transport tcp -i rtsp://... -vf showinfo`
  (the first two decoded frames' showinfo lines);
* rtsp-rtspsrc: rtspsrc ! decodebin (rtspsrc_first.py);
* hls: `ffmpeg -i http://.../hls/V/index.m3u8 -vf showinfo` (each HLS run
  on a proxy of its own with an empty --hls-dir: a cached video would
  start at once);
* page: the proxy's web page in headless Chromium (scripts/page_check.py,
  ?play=V: hls.js), on a proxy of its own like hls; the page's own
  firstFrameS (play() to the first frame presented,
  requestVideoFrameCallback), its stalls (`waiting` after the first frame)
  and the frames Chromium decoded in --page-seconds.

Times are from each viewer's start (its request) to its first and
second decoded video frames; every viewer plays the whole video. The
proxies' SESSION-END / FETCH-RESULT give the kernel receive-buffer drops
(rudpsrc/erapsrc `kernel-drops`) and the frames delivered. One JSON line
per viewer on stdout (RESULT ...) and, with --out, all of them in a file;
a table at the end. Each row has the 1-minute load average when its
viewers started (`load`) and, for RTSP and HLS, the proxy's start-up
timeline (`proxy_startup`: ms from its session's creation to PLAY's
answer, each flow's first byte, the merge's first frames, the muxer's
first byte and first second, HLS's first segment byte).

usage: run.py [--build BUILD] [--media DIR] [--videos a.mp4,b.mp4]
    [--kinds fetch,rtsp-ffmpeg,rtsp-rtspsrc,hls,page] [--page-seconds S]
    [--server-arg=--startup=segment] [--proxy-arg=--www-dir=DIR]
    [--plugin-path DIR] [--out FILE]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
from twoflowlab.checks import free_port  # noqa: E402
from twoflowlab.records import tagged  # noqa: E402

KINDS = ["fetch", "rtsp-ffmpeg", "rtsp-rtspsrc", "hls", "page"]
SHOWINFO = re.compile(r"Parsed_showinfo.*\] n:\s*(\d+) ")


class Proc:
    """A program whose output is kept (read by a thread)."""

    def __init__(self, argv, env, log=None):
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env=env, bufsize=1)
        self.lines, self.frames = [], []
        self.log = log
        self.th = threading.Thread(target=self._read, daemon=True)
        self.th.start()

    def _read(self):
        for line in self.p.stdout:
            t = time.monotonic() - self.t0
            self.lines.append(line)
            if self.log:
                self.log.write(line)
            m = SHOWINFO.search(line)
            if m:
                self.frames.append(t)

    def wait(self, timeout):
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.th.join(timeout=5)
        return "".join(self.lines)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
        return self.wait(10)


def viewer(kind, video, args, ports, env, work, i):
    """Starts one viewer; returns a function that waits for it and gives
    its result."""
    if kind == "fetch":
        out = os.path.join(work, f"fetch-{i}.ts")
        p = Proc([args.proxy, "--server", f"127.0.0.1:{ports['control']}", "--insecure",
                  "--fetch", video, "--output", out] + args.proxy_arg, env)

        def done():
            text = p.wait(args.timeout)
            res = (tagged(text, "FETCH-RESULT") or [{}])[-1]
            dl = res.get("delivery", {})
            return {"first_frame_s": res.get("first_frame_s"),
                    "second_frame_s": res.get("second_frame_s"),
                    "frames": dl.get("output_frames"), "source_frames": dl.get("frames"),
                    "kernel_drops": dl.get("kernel_drops"), "lead": res.get("lead"),
                    "result": res.get("result")}
        return done
    if kind in ("rtsp-ffmpeg", "hls"):
        url = (f"rtsp://127.0.0.1:{ports['rtsp']}/video/{video}" if kind == "rtsp-ffmpeg"
               else f"http://127.0.0.1:{ports['http']}/hls/{video}/index.m3u8")
        pre = ["-rtsp_transport", "tcp"] if kind == "rtsp-ffmpeg" else []
        p = Proc(["ffmpeg", "-nostdin", "-hide_banner", "-v", "info"] + pre +
                 ["-i", url, "-map", "0:v:0", "-vf", "showinfo", "-f", "null", "-"], env)

        def done():
            text = p.wait(args.timeout)
            return {"first_frame_s": round(p.frames[0], 3) if p.frames else None,
                    "second_frame_s": round(p.frames[1], 3) if len(p.frames) > 1 else None,
                    "frames": len(p.frames),
                    "error": None if p.p.returncode == 0 else text.strip()[-300:]}
        return done
    if kind == "page":
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "page_check", os.path.join(ROOT, "scripts", "page_check.py"))
        pc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(pc)
        box = {}
        th = threading.Thread(target=lambda: box.update(pc.run(
            f"http://127.0.0.1:{ports['http']}/", play=video,
            seconds=args.page_seconds)), daemon=True)
        th.start()

        def done():
            th.join(args.timeout)
            reps = box.get("reports") or [{}]
            last = reps[-1]
            return {"first_frame_s": last.get("firstFrameS"),
                    "first_frame_page_s": last.get("firstFramePageS"),
                    "stalls": last.get("stalls"), "frames": last.get("decodedFrames"),
                    "error": box.get("error") or ([e for e in last.get("errors") or []
                                                   if e != "bufferStalledError"] or None)}
        return done
    # rtsp-rtspsrc
    p = Proc(["/usr/bin/python3", os.path.join(HERE, "rtspsrc_first.py"),
              f"rtsp://127.0.0.1:{ports['rtsp']}/video/{video}",
              "--timeout", str(args.timeout)], env)

    def done():
        text = p.wait(args.timeout + 10)
        for line in reversed(text.splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        return {"error": text[-300:]}
    return done


def start_proxy(args, ports, env, work, tag):
    log = open(os.path.join(work, f"proxy-{tag}.log"), "w")
    hls = os.path.join(work, f"hls-{tag}")
    p = Proc([args.proxy, "--server", f"127.0.0.1:{ports['control']}", "--insecure",
              "--rtsp-port", str(ports["rtsp"]), "--rtsp-address", "127.0.0.1",
              "--http-port", str(ports["http"]), "--http-address", "127.0.0.1",
              "--hls-dir", hls, "--prefix-dir", os.path.join(work, f"prefix-{tag}")]
             + args.proxy_arg, env, log)
    time.sleep(1.0)
    return p, log


def proxy_sessions(text):
    """kernel drops and output frames per proxy session (RTSP and HLS)."""
    out = []
    for r in tagged(text, "SESSION-END"):
        dl = r.get("delivery", {})
        out.append({"kind": r.get("kind"), "first_frame_s": r.get("first_frame_s"),
                    "second_frame_s": r.get("second_frame_s"),
                    "startup": r.get("startup"),
                    "kernel_drops": dl.get("kernel_drops"),
                    "output_frames": dl.get("output_frames"), "frames": dl.get("frames")})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--media", default=None,
                    help="default: BUILD/tests/system/defaults-media (made if absent)")
    ap.add_argument("--videos", default="short-720p.mp4,hd-5mbit-30s.mp4")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--viewers", default="1,2")
    ap.add_argument("--server-arg", action="append", default=[])
    ap.add_argument("--proxy-arg", action="append", default=[],
                    help="for every proxy (--proxy-arg=--www-dir=DIR: another page; "
                    "--proxy-arg=--essential=erap)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--page-seconds", type=float, default=12,
                    help="how long the page plays (page kind)")
    ap.add_argument("--plugin-path", default=None,
                    help="GST_PLUGIN_PATH (default BUILD/gst): programs of another "
                    "build (before/after) with this build's plugins")
    ap.add_argument("--out")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    args.proxy = os.path.join(build, "tools", "proxy", "twoflow-proxy")
    server_exe = os.path.join(build, "tools", "server", "twoflow-server")
    media = args.media or os.path.join(build, "tests", "system", "defaults-media")
    subprocess.run([os.path.join(ROOT, "scripts", "make-defaults-media.sh"), media],
                   check=True)
    env = dict(os.environ, GST_PLUGIN_PATH=args.plugin_path or os.path.join(build, "gst"))
    work = tempfile.mkdtemp(prefix="twoflow-startup-")
    ports = {"control": free_port(), "rtsp": free_port(), "http": free_port()}
    slog = open(os.path.join(work, "server.log"), "w")
    server = Proc([server_exe, "--dir", media, "--port", str(ports["control"]),
                   "--insecure"] + args.server_arg, env, slog)
    time.sleep(1.0)
    results = []
    try:
        for video in args.videos.split(","):
            for kind in args.kinds.split(","):
                for n in (int(x) for x in args.viewers.split(",")):
                    proxy = None
                    if kind != "fetch":
                        proxy, plog = start_proxy(args, ports, env, work,
                                                  f"{kind}-{n}-{video}")
                    load = os.getloadavg()[0]
                    waits = [viewer(kind, video, args, ports, env, work, i)
                             for i in range(n)]
                    rows = [w() for w in waits]
                    sessions = []
                    if proxy:
                        time.sleep(1.0)
                        sessions = proxy_sessions(proxy.stop())
                        plog.close()
                    for i, r in enumerate(rows):
                        r.update(video=video, kind=kind, viewers=n, viewer=i,
                                 server_args=args.server_arg, load=round(load, 2))
                        if sessions and r.get("kernel_drops") is None:
                            # HLS: one proxy session for all its viewers
                            s = sessions[min(i, len(sessions) - 1)]
                            r["kernel_drops"] = s["kernel_drops"]
                            r["proxy_first_frame_s"] = s["first_frame_s"]
                            r["proxy_output_frames"] = s["output_frames"]
                            # where the time went (ms after the proxy's
                            # session was asked for; docs/system.md)
                            r["proxy_startup"] = s["startup"]
                        print("RESULT " + json.dumps(r), flush=True)
                        results.append(r)
    finally:
        server.stop()
        slog.close()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    print(f"\n{'video':<22}{'kind':<14}{'n':>2} {'viewer':>6} {'first s':>8} "
          f"{'second s':>9} {'frames':>7} {'kdrops':>7}")
    for r in results:
        print(f"{r['video']:<22}{r['kind']:<14}{r['viewers']:>2} {r['viewer']:>6} "
              f"{str(r.get('first_frame_s')):>8} {str(r.get('second_frame_s')):>9} "
              f"{str(r.get('frames')):>7} {str(r.get('kernel_drops')):>7}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
