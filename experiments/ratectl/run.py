#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.0-or-later
"""Issue 28: frames a default twoflow-proxy fetch delivers across the
emulated WAN (10 Mbit/s, 40 ms RTT, 80-packet drop-tail queue) with random
loss, and across a capacity step, with the server's rate control.

A 30 s 3 Mbit/s MPEG-2 clip (720x576, 25 fps, 750 frames, GOP 12, 2 B per
reference; ffmpeg's mpeg2video from testsrc2) is fetched at the proxy's
defaults (cTCP + rUDP, policy i, segment 10 s) into an .m2v; the frames
ffprobe decodes in it are counted. Per case one JSON line (RESULT) with
the merge's counts, the server's session end (transcoder and rate
controller stats) and the target's time line.

usage (root): run.py --build BUILD [--loss 0,0.01,0.03] [--step]
    [--server-arg=--rate-control=fixed ...] [--seed N] [--out FILE]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
from twoflowlab import testbed as tbm  # noqa: E402
from twoflowlab.records import tagged  # noqa: E402


def make_clip(path):
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=720x576:rate=25", "-t", "30", "-c:v", "mpeg2video",
                    "-b:v", "3M", "-minrate", "3M", "-maxrate", "3M", "-bufsize", "1835k",
                    "-g", "12", "-bf", "2", "-f", "mpeg2video", path], check=True)


def count_frames(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                        "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path],
                       capture_output=True, text=True)
    try:
        return int(r.stdout.strip().split(",")[0])
    except ValueError:
        return 0


def run_case(build, videos, work, loss, seed, schedule, server_args, timeout=120):
    server_exe = os.path.join(build, "tools", "server", "twoflow-server")
    proxy_exe = os.path.join(build, "tools", "proxy", "twoflow-proxy")
    name = f"loss{loss:g}" + ("-step" if schedule else "")
    wd = os.path.join(work, name)
    os.makedirs(wd, exist_ok=True)
    out = os.path.join(wd, "out.m2v")
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(build, "gst"),
               GST_REGISTRY=os.path.join(wd, "registry.bin"))
    with tbm.Testbed(rate_bps=10e6, delay_ms=20, queue_pkts=80, loss=loss, seed=seed,
                     schedule=schedule, workdir=os.path.join(wd, "tb"),
                     keep_workdir=True) as tb:
        slog = open(os.path.join(wd, "server.log"), "w")
        server = tb.server.popen([server_exe, "--dir", videos, "--port", "5500",
                                  "--insecure"] + server_args,
                                 stdout=slog, stderr=subprocess.STDOUT,
                                 env=dict(env, GST_DEBUG="twoflow-server:4"))
        time.sleep(0.5)
        t0 = time.monotonic()
        r = tb.client.run([proxy_exe, "--server", f"{tb.server.ip}:5500", "--insecure",
                           "--fetch", "clip.m2v", "--output", out],
                          timeout=timeout, check=False, env=env)
        elapsed = time.monotonic() - t0
        time.sleep(0.5)
        server.terminate()
        server.wait(timeout=10)
        slog.close()
    with open(os.path.join(wd, "proxy.log"), "w") as f:
        f.write(r.stdout + r.stderr)
    stext = open(os.path.join(wd, "server.log")).read()
    fr = tagged(r.stdout + r.stderr, "FETCH-RESULT")
    fr = fr[0] if fr else {}
    ends = tagged(stext, "SESSION-END")
    end = ends[-1] if ends else {}
    tc = end.get("transcoder_stats", {})
    rc = end.get("rate_controller", {})
    # the controller's targets as the server logged them (s since PLAY)
    line = [(float(m.group(1)), int(m.group(2)))
            for m in re.finditer(r"rate-control t=([0-9.]+) target=(\d+)", stext)]
    frames = count_frames(out) if os.path.exists(out) else 0
    res = {"case": name, "loss": loss, "seed": seed, "schedule": schedule,
           "server_args": server_args, "frames_decoded": frames, "of": 750,
           "elapsed": round(elapsed, 1), "result": fr.get("result"),
           "merge": {k: v for k, v in fr.items() if isinstance(v, (int, float))
                     and ("frame" in k or "missing" in k or "lost" in k)},
           "transcoder": {k: tc.get(k) for k in tc if "bitrate" in k or "frames" in k
                          or k.startswith("events")},
           "rate_controller": rc, "forwarded_events": end.get("forwarded_events"),
           "targets": line[:400]}
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--loss", default="0,0.01,0.03")
    ap.add_argument("--step", action="store_true",
                    help="10 -> 1.5 -> 10 Mbit/s at 15 s and 25 s after the "
                    "emulator starts (the enhanced flow starts ~10 s in), no loss")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--server-arg", action="append", default=[])
    ap.add_argument("--out")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    try:
        tbm.check_environment()
    except tbm.SkipTest as e:
        print(f"skip: {e}")
        return 77
    build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="twoflow-ratectl-")
    videos = os.path.join(work, "videos")
    os.makedirs(videos)
    make_clip(os.path.join(videos, "clip.m2v"))
    cases = []
    if a.step:
        cases.append((0.0, [(15, 1.5e6), (25, 10e6)]))
    else:
        cases += [(float(x), None) for x in a.loss.split(",")]
    results = []
    try:
        for loss, sched in cases:
            res = run_case(build, videos, work, loss, a.seed, sched, a.server_arg)
            results.append(res)
            print("RESULT " + json.dumps({k: v for k, v in res.items() if k != "targets"}),
                  flush=True)
            if res["targets"]:
                print("TARGETS " + json.dumps(res["targets"]), flush=True)
        if a.out:
            with open(a.out, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        if a.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
