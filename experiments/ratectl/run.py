#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Issue 28: frames a default twoflow-proxy fetch delivers across the
emulated WAN (10 Mbit/s, 40 ms RTT, 80-packet drop-tail queue) with random
loss, and across a capacity step, with the server's rate control.

A 30 s 3 Mbit/s MPEG-2 clip (720x576, 25 fps, 750 frames, GOP 12, 2 B per
reference; ffmpeg's mpeg2video from testsrc2) is fetched at the proxy's
defaults (cTCP + rUDP, policy i, segment 10 s) into an .m2v; the frames
ffprobe decodes in it are counted. Per case one JSON line (RESULT) with
the merge's counts, the server's session end (transcoder and rate
controller stats) and the target's time line.

--step: 10 -> 1.5 -> 10 Mbit/s at 15 s and 25 s of the emulator's time
(no loss); the result's `step` says how the controller's target
followed. --tcp: an iperf3 cubic flow beside the session (no loss).
Results of the issue's runs: experiments/ratectl/results/, discussed in
docs/system.md ("Rate control", "Measured").

usage (root): run.py --build BUILD [--loss 0,0.01,0.03 | --step | --tcp]
    [--server-arg=--rate-controller=events ...] [--seed N] [--out FILE]
    [--keep]
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

from twoflowlab import testbed as tbm  # noqa: E402
from twoflowlab.records import tagged  # noqa: E402


ESS_PORTS, ENH_PORTS = 6000, 6200


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


def step_summary(line, schedule, offset, video_rate):
    """The target's answer to a capacity step: seconds from the drop to a
    target at or below the new capacity, the lowest and the mean target
    while it lasts, seconds from the capacity's return to a target at or
    above the video's rate (times: the link's schedule shifted by the
    emulator's start before PLAY)."""
    if not schedule or offset is None or not line:
        return None
    (t_drop, cap), (t_back, _) = schedule[0], schedule[1]
    t_drop -= offset
    t_back -= offset

    def target_at(t):
        v = line[0][1]
        for tt, vv in line:
            if tt > t:
                break
            v = vv
        return v
    below = next((t for t, v in line if t >= t_drop and v <= cap), None)
    during = [target_at(t_drop + 0.1 * i) for i in range(int((t_back - t_drop) * 10))]
    back = next((t for t, v in line if t >= t_back and v >= video_rate), None)
    return {"drop_at": round(t_drop, 2), "back_at": round(t_back, 2),
            "below_capacity_after": round(below - t_drop, 2) if below is not None else None,
            "min_during": min(during) if during else None,
            "mean_during": round(sum(during) / len(during)) if during else None,
            "video_rate_again_after": round(back - t_back, 2) if back is not None else None}


def run_case(build, videos, work, loss, seed, schedule, server_args, timeout=120,
             tcp=False):
    server_exe = os.path.join(build, "tools", "server", "twoflow-server")
    proxy_exe = os.path.join(build, "tools", "proxy", "twoflow-proxy")
    name = f"loss{loss:g}" + ("-step" if schedule else "") + ("-tcp" if tcp else "")
    wd = os.path.join(work, name)
    os.makedirs(wd, exist_ok=True)
    out = os.path.join(wd, "out.m2v")
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(build, "gst"),
               GST_REGISTRY=os.path.join(wd, "registry.bin"))
    # the proxy receives on fixed port ranges, so the emulator's CSV has
    # the essential (cTCP) and enhanced (rUDP) flows' throughput apart
    with tbm.Testbed(rate_bps=10e6, delay_ms=20, queue_pkts=80, loss=loss, seed=seed,
                     schedule=schedule, workdir=os.path.join(wd, "tb"),
                     track_ports=[(ESS_PORTS, ESS_PORTS + 99),
                                  (ENH_PORTS, ENH_PORTS + 99)],
                     keep_workdir=True) as tb:
        slog = open(os.path.join(wd, "server.log"), "w")
        server = tb.server.popen([server_exe, "--dir", videos, "--port", "5500",
                                  "--insecure"] + server_args,
                                 stdout=slog, stderr=subprocess.STDOUT,
                                 env=dict(env, GST_DEBUG="twoflow-server*:4"))
        iperf = None
        if tcp:
            # a cubic bulk flow beside the session for its whole length
            tb.client.popen(["iperf3", "-s", "-p", "5201", "-1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            iperf = tb.server.popen(["iperf3", "-c", tb.client.ip, "-p", "5201", "-t", "45",
                                     "-C", "cubic", "-J"],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True)
        time.sleep(0.5)
        t0 = time.monotonic()
        emu_start = tb.emulator_start
        try:
            r = tb.client.run([proxy_exe, "--server", f"{tb.server.ip}:5500", "--insecure",
                               "--essential-ports", str(ESS_PORTS),
                               "--enhanced-ports", str(ENH_PORTS),
                               "--fetch", "clip.m2v", "--output", out],
                              timeout=timeout, check=False, env=env)
        except subprocess.TimeoutExpired as e:
            r = subprocess.CompletedProcess(e.cmd, -1, stdout=(e.stdout or b"").decode()
                                            if isinstance(e.stdout, bytes) else (e.stdout or ""),
                                            stderr="TIMEOUT")
        elapsed = time.monotonic() - t0
        tcp_bps = None
        if iperf:
            iperf.terminate()
            try:
                j = json.loads(iperf.communicate(timeout=10)[0] or "{}")
                tcp_bps = j.get("end", {}).get("sum_sent", {}).get("bits_per_second")
            except (ValueError, subprocess.TimeoutExpired):
                pass
        time.sleep(0.5)
        server.terminate()
        server.wait(timeout=10)
        slog.close()
    with open(os.path.join(wd, "proxy.log"), "w") as f:
        f.write(r.stdout + r.stderr)
    stext = open(os.path.join(wd, "server.log")).read()
    fr = tagged(r.stdout + r.stderr, "FETCH-RESULT")
    fr = fr[0] if fr else {}
    # the link's schedule runs from the emulator's start, the server's
    # rate-control t= from the session's start (after the video's scan):
    # the proxy's started_us is on the same monotonic clock
    emu_offset = (fr["started_us"] / 1e6 - emu_start
                  if fr.get("started_us") and emu_start else None)
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
           "tcp_bps": tcp_bps,
           "elapsed": round(elapsed, 1), "result": fr.get("result"),
           "emu_offset": round(emu_offset, 2) if emu_offset is not None else None,
           "step": step_summary(line, schedule, emu_offset, tc.get("input-bitrate", 0)),
           "merge": {k: v for k, v in fr.get("merge", {}).items()
                     if "frame" in k or "missing" in k or k == "dropped"},
           "jitterbuffer": {k: v for k, v in fr.get("jitterbuffer", {}).items()
                            if k in ("num-lost", "num-late", "num-duplicates",
                                     "rtx-count", "rtx-success-count")},
           "rudpsrc": {k: v for k, v in fr.get("rudpsrc", {}).items()
                       if k in ("received", "lost", "nacks-sent", "rtx-recovered")},
           "rtx": {k: v for k, v in end.get("enhanced_stats", {}).items()
                   if k.startswith("rtx")},
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
    ap.add_argument("--tcp", action="store_true",
                    help="an iperf3 cubic flow beside the session (no loss)")
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
    if a.tcp:
        cases.append((0.0, None))
    elif a.step:
        cases.append((0.0, [(15, 1.5e6), (25, 10e6)]))
    else:
        cases += [(float(x), None) for x in a.loss.split(",")]
    results = []
    try:
        for loss, sched in cases:
            res = run_case(build, videos, work, loss, a.seed, sched, a.server_arg,
                           tcp=a.tcp)
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
