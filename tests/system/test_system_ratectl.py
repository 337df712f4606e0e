#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Random loss is not congestion (issue 28; suite 'system-net', root; exit 77
otherwise; ~30 s).

twoflow-server at its defaults (the session rate controller) and
twoflow-proxy --fetch at its defaults (segment 5 s to keep it short) across
twoflow-linkemu: 10 Mbit/s, 40 ms RTT, 80-packet drop-tail queue, 1 %
random loss. The source: 15 s of 720x576 MPEG-2 at 3 Mbit/s (375 frames,
GOP 12). Checked:

* the fetched stream decodes to at least 99 % of the source's frames
  (lost enhanced packets are NACKed and resent, the essential flow is
  reliable);
* the session rate controller ran, saw the loss events (the loss is
  there), and its target never went below the video's rate: the
  transcoder passed every frame (nothing re-encoded, nothing dropped).

usage: test_system_ratectl.py SERVER_EXE PROXY_EXE
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from twoflowlab import testbed as tbm
from twoflowlab.checks import check, failures, wait_log
from twoflowlab.records import tagged

FRAMES = 375


def count_frames(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                        "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path],
                       capture_output=True, text=True)
    try:
        return int(r.stdout.strip().split(",")[0])
    except ValueError:
        return 0


def main():
    try:
        tbm.check_environment()
    except tbm.SkipTest as e:
        print(f"skip: {e}")
        return 77
    if not shutil.which("ffmpeg") or not shutil.which("ffprobe"):
        print("skip: ffmpeg/ffprobe missing")
        return 77
    server_exe, proxy_exe = (os.path.abspath(a) for a in sys.argv[1:3])
    work = tempfile.mkdtemp(prefix="twoflow-system-ratectl-")
    videos = os.path.join(work, "videos")
    os.makedirs(videos)
    out = os.path.join(work, "out.m2v")
    try:
        r = subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                            "testsrc2=size=720x576:rate=25", "-t", str(FRAMES / 25),
                            "-c:v", "mpeg2video", "-b:v", "3M", "-minrate", "3M",
                            "-maxrate", "3M", "-bufsize", "1835k", "-g", "12", "-bf", "2",
                            "-f", "mpeg2video", os.path.join(videos, "clip.m2v")],
                           capture_output=True, timeout=120)
        check(r.returncode == 0, f"generated {FRAMES} frames of 3 Mbit/s MPEG-2")
        with tbm.Testbed(rate_bps=10e6, delay_ms=20, queue_pkts=80, loss=0.01, seed=3,
                         workdir=os.path.join(work, "tb"), keep_workdir=True) as tb:
            slog = open(os.path.join(work, "server.log"), "w")
            server = tb.server.popen([server_exe, "--dir", videos, "--port", "5500",
                                      "--insecure"],
                                     stdout=slog, stderr=subprocess.STDOUT)
            wait_log(os.path.join(work, "server.log"), "control port", proc=server)
            fetch = tb.client.run([proxy_exe, "--server", f"{tb.server.ip}:5500", "--insecure",
                                   "--segment-duration", "5", "--fetch", "clip.m2v",
                                   "--output", out], timeout=90, check=False)
            time.sleep(0.5)
            server.terminate()
            server.wait(timeout=10)
            slog.close()
        ptext = fetch.stdout + fetch.stderr
        with open(os.path.join(work, "proxy.log"), "w") as f:
            f.write(ptext)
        stext = open(os.path.join(work, "server.log")).read()
        res = tagged(ptext, "FETCH-RESULT")
        check(fetch.returncode == 0 and len(res) == 1 and res[0].get("result") == "ok",
              f"fetched ({fetch.returncode}, {res[0].get('result') if res else ptext[-300:]})")
        n = count_frames(out) if os.path.exists(out) else 0
        print("merge:", json.dumps(res[0].get("merge") if res else None))
        check(n >= 0.99 * FRAMES, f"{n} of {FRAMES} frames decode (>= 99 %)")
        ends = [e for e in tagged(stext, "SESSION-END") if e.get("transcoder_stats")]
        check(len(ends) == 1, f"one server session with a transcoder ({len(ends)})")
        if ends:
            e = ends[0]
            tc, rc = e["transcoder_stats"], e.get("rate_controller", {})
            enh = e.get("enhanced_stats", {})
            print("rate controller:", json.dumps(rc))
            print("transcoder:", {k: tc.get(k) for k in tc if "bitrate" in k or "frames" in k})
            print("retransmission:", {k: enh.get(k) for k in enh if k.startswith("rtx")})
            check(e.get("rate_adaptation") == "session" and rc.get("updates", 0) > 0,
                  "the session rate controller ran")
            check(rc.get("loss-events", 0) > 0,
                  f"it saw the random loss ({rc.get('loss-events')} loss events, "
                  f"loss event rate {rc.get('loss-event-rate', 0):.4f})")
            check(rc.get("min-target", 0) >= tc.get("input-bitrate", 1 << 62),
                  f"its target stayed at or above the video's rate "
                  f"({rc.get('min-target')} >= {tc.get('input-bitrate')})")
            check(tc.get("frames-reencoded", -1) == 0 and tc.get("frames-dropped", -1) == 0
                  and tc.get("frames-passed") == FRAMES,
                  f"the transcoder passed every frame ({tc.get('frames-passed')} passed, "
                  f"{tc.get('frames-reencoded')} re-encoded, {tc.get('frames-dropped')} dropped)")
    finally:
        if os.environ.get("TWOFLOW_KEEP") is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all system-ratectl checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
