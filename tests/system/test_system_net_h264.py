#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""An H.264 + AAC session across a lossy emulated WAN (suite 'system-net',
root; exit 77 otherwise).

twoflow-server (server namespace) and twoflow-proxy --fetch (client
namespace) across twoflow-linkemu with 15 % random loss. The source: 12 s
of 320x240 H.264 (x264, 3 B frames with b-pyramid, so a third of the
pictures are disposable: nal_ref_idc = 0) and AAC in MP4. The server's
enhanced path runs `ratetranscoder keep=i`; with `--rate-controller
events` (the papers' per-event law) the cTCP congestion events of the
essential flow are forwarded to it and it lowers the rate by re-encoding
the non-I pictures (disposable ones dropped only below the codec's
floor). Checked:

* server session stats: every rexmt/dupack/recovered event forwarded, the
  transcoder received them and re-encoded pictures (frames-reencoded > 0)
  and dropped no I frame (essential frames untouched);
* proxy merge stats: every source frame accounted for (received +
  missing = source frames), no essential frame missing, the transcoder's
  drops among the missing frames;
* the fetched Matroska file: ffmpeg decodes video frames = the merge's output
  frames (nothing else lost in the muxer), as many as the source minus
  the dropped and the lost-and-undecodable, every I frame present;
  decode errors only where a frame lost its reference; the AAC track is
  there and as long as the source's (within 50 ms).

usage: test_system_net_h264.py SERVER_EXE PROXY_EXE
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from twoflowlab import testbed as tbm
from twoflowlab.checks import wait_log
from twoflowlab.records import tagged

FRAMES = 300            # 12 s at 25 fps
AUDIO_BUFFERS = 563     # 1024 samples at 48 kHz: 12.01 s
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def make_source(path):
    r = subprocess.run(
        ["gst-launch-1.0", "-q", "mp4mux", "name=m", "!", "filesink", f"location={path}",
         "videotestsrc", f"num-buffers={FRAMES}", "pattern=ball", "!",
         "video/x-raw,format=I420,width=320,height=240,framerate=25/1", "!",
         "x264enc", "bframes=3", "b-pyramid=true", "key-int-max=50",
         "speed-preset=ultrafast", "bitrate=800", "!", "h264parse", "!", "queue", "!", "m.",
         "audiotestsrc", f"num-buffers={AUDIO_BUFFERS}", "samplesperbuffer=1024",
         "freq=440", "!", "audio/x-raw,rate=48000,channels=2", "!", "audioconvert", "!",
         "avenc_aac", "!", "aacparse", "!", "queue", "!", "m."],
        capture_output=True, timeout=60)
    return r.returncode == 0


def probe(path):
    """(video frames decoded, picture types, audio codec, decoded audio s,
    decode errors)"""
    r = subprocess.run(["ffprobe", "-v", "error", "-show_frames", "-show_streams",
                        "-of", "json", path], capture_output=True, text=True, timeout=60)
    info = json.loads(r.stdout or "{}")
    frames = info.get("frames", [])
    video = [f for f in frames if f.get("media_type") == "video"]
    audio = [s for s in info.get("streams", []) if s.get("codec_type") == "audio"]
    # decoded audio: samples of every audio frame
    adur = sum(int(f.get("nb_samples", 0)) / int(f.get("sample_rate", 48000))
               for f in frames if f.get("media_type") == "audio")
    d = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "null", "-"],
                       capture_output=True, text=True, timeout=60)
    errors = [l for l in d.stderr.splitlines() if l.strip()]
    return len(video), "".join(f.get("pict_type", "?") for f in video), \
        audio[0].get("codec_name") if audio else None, adur, errors


def main():
    try:
        tbm.check_environment()
    except tbm.SkipTest as e:
        print(f"skip: {e}")
        return 77
    server_exe, proxy_exe = (os.path.abspath(a) for a in sys.argv[1:3])
    work = tempfile.mkdtemp(prefix="twoflow-system-net-h264-")
    videos = os.path.join(work, "videos")
    os.makedirs(videos)
    src = os.path.join(videos, "ball.mp4")
    out = os.path.join(work, "out.mkv")
    try:
        check(make_source(src), f"generated {FRAMES} frames of H.264 + AAC")
        n_src, types_src, _, adur_src, err_src = probe(src)
        print("source:", n_src, "frames", types_src[:50], "audio", adur_src, "s")
        with tbm.Testbed(rate_bps=4e6, delay_ms=20, queue_pkts=30, loss=0.15, seed=3,
                         workdir=os.path.join(work, "tb"), keep_workdir=True) as tb:
            slog = open(os.path.join(work, "server.log"), "w")
            # the papers' per-event law (the default is the session rate
            # controller, tests/net/test_ratectl.py): this test checks the
            # event forwarding and the drop layers under it
            server = tb.server.popen([server_exe, "--dir", videos, "--port", "5500",
                                      "--insecure", "--rate-controller", "events"],
                                     stdout=slog, stderr=subprocess.STDOUT)
            wait_log(slog.name, "control port", proc=server)
            t0 = time.monotonic()
            fetch = tb.client.run([proxy_exe, "--server", f"{tb.server.ip}:5500", "--insecure",
                                   "--segment-duration", "1", "--fetch", "ball.mp4",
                                   "--output", out, "--prefix-dir",
                                   os.path.join(work, "prefix")], timeout=60, check=False)
            elapsed = time.monotonic() - t0
            time.sleep(1.0)
            server.terminate()
            server.wait(timeout=10)
            slog.close()
        with open(os.path.join(work, "server.log")) as f:
            stext = f.read()
        print(f"fetch: rc {fetch.returncode} in {elapsed:.1f} s; {fetch.stderr.strip()[-300:]}")
        res = tagged(fetch.stdout, "FETCH-RESULT")
        # frames lost to the network and the transcoder: "degraded", exit
        # 0, never "ok" (the delivery accounting, docs/system.md)
        dlv = res[0].get("delivery", {}) if len(res) == 1 else {}
        check(fetch.returncode == 0 and len(res) == 1
              and str(res[0].get("result", "")).startswith("degraded:")
              and dlv.get("unexplained_frames") == 0
              and dlv.get("cause") in ("network", "transcoder"),
              f"the fetch across the lossy WAN succeeded, degraded: "
              f"{res[0].get('result') if res else None!r}")
        ends = [e for e in tagged(stext, "SESSION-END") if e.get("transcoder_stats")]
        check(len(ends) == 1, f"one server session with a transcoder ({len(ends)})")
        if not ends or not res:
            return 1
        e, r = ends[0], res[0]
        es, tc, mg = e.get("essential_stats", {}), e["transcoder_stats"], r.get("merge", {})
        print("server:", json.dumps(e)[:3000])
        print("proxy:", json.dumps(r)[:3000])
        n_out, types_out, acodec, adur, errs = probe(out)
        print("output:", n_out, "frames", types_out[:80], acodec, adur, "s;",
              len(errs), "decode errors", errs[:5])
        fwd = e.get("forwarded_events", 0)
        print(f"figures: {fwd} events forwarded (rexmt {es.get('rexmt-events')}, dupack "
              f"{es.get('dupack-events')}, recovered {es.get('recovered-events')}), "
              f"{tc.get('events-ignored')} ignored; transcoder input "
              f"{tc.get('input-bitrate')} bit/s -> output {tc.get('output-bitrate')} "
              f"(target {tc.get('target-bitrate')}, floor {tc.get('floor-bitrate')}, "
              f"disposable {tc.get('disposable-bitrate')}); frames in {tc.get('frames-in')}, "
              f"passed {tc.get('frames-passed')}, dropped B {tc.get('frames-dropped-b')} "
              f"P {tc.get('frames-dropped-p')} I {tc.get('frames-dropped-i')}; merge "
              f"missing I/P/B/? {mg.get('missing-i')}/{mg.get('missing-p')}/"
              f"{mg.get('missing-b')}/{mg.get('missing-unknown')}, dependent dropped "
              f"{mg.get('dropped')}, output {mg.get('output-frames')}; rtp packets lost "
              f"{r.get('rudpsrc', {}).get('lost')}; decoded {n_out} of {n_src} "
              f"({types_out.count('I')} I), {len(errs)} decode errors; audio {acodec} "
              f"{adur:.3f} s of {adur_src:.3f} s; fetch {elapsed:.1f} s")

        # congestion events forwarded and the transcoder's reaction
        check(fwd > 0, f"congestion events forwarded to the transcoder: {fwd}")
        check(fwd == es.get("rexmt-events", 0) + es.get("dupack-events", 0)
              + es.get("recovered-events", 0) and e.get("unforwarded_events", 0) == 0,
              "every ctcpsink rexmt/dupack/recovered event forwarded")
        check(tc.get("events") == fwd, f"the transcoder received them ({tc.get('events')})")
        # keep=i re-encodes the non-I pictures while the target is below
        # the input (disposable ones dropped only below the codec's floor)
        check(tc.get("frames-reencoded", 0) > 0,
              f"the transcoder re-encoded pictures ({tc.get('frames-reencoded')}; "
              f"{tc.get('frames-dropped-b')} B dropped)")
        check(tc.get("frames-in") == n_src and tc.get("frames-passed", 0)
              + tc.get("frames-reencoded", 0) + tc.get("frames-dropped", 0) == n_src
              and tc.get("frames-dropped-i") == 0 and tc.get("decode-errors") == 0,
              "every source picture passed, re-encoded or dropped, no I frame dropped")
        # the merge: every frame accounted for, the drops among the missing
        tc_dropped = tc.get("frames-dropped", 0)
        received = sum(mg.get("received-" + t, 0) for t in "ipb")
        missing = sum(mg.get("missing-" + t, 0) for t in ("i", "p", "b", "unknown"))
        check(received + missing == n_src,
              f"the merge accounts for every source frame ({received} received + "
              f"{missing} missing)")
        check(mg.get("missing-i") == 0 and mg.get("received-i") == types_src.count("I"),
              f"every essential (I) frame arrived ({mg.get('received-i')})")
        # packets that never reached the depayloader: with retransmission
        # rudpsrc counts a resent packet received even when it came too
        # late for the jitterbuffer, which then gave up on it
        jb = r.get("jitterbuffer", {})
        lost = max(r.get("rudpsrc", {}).get("lost", 0),
                   jb.get("num-lost", 0) + jb.get("num-late", 0))
        check(tc_dropped <= missing <= tc_dropped + lost,
              f"the missing frames are the transcoder's {tc_dropped} drops and at most "
              f"one per lost packet ({missing - tc_dropped} of {lost} lost packets)")
        check(mg.get("output-frames") == received - mg.get("dropped", 0),
              "merge output = received - dependent frames dropped")
        # the output decodes
        check(n_out == mg.get("output-frames"),
              f"ffmpeg decodes every frame the merge output ({n_out} of "
              f"{mg.get('output-frames')})")
        check(n_out == n_src - tc_dropped - (missing - tc_dropped) - mg.get("dropped", 0),
              f"decoded {n_out} = {n_src} source - {tc_dropped} transcoder drops - "
              f"{missing - tc_dropped} lost - {mg.get('dropped')} undecodable")
        # a run of re-encoded pictures starts with an intra picture
        check(types_out.count("I") >= types_src.count("I"),
              f"every I frame decoded ({types_out.count('I')})")
        check(not errs and not [x for x in err_src],
              f"no decode errors ({errs[:3]})")
        check(acodec == "aac" and abs(adur - adur_src) <= 0.05,
              f"the AAC track is there, {adur:.3f} s of {adur_src:.3f} s")
    finally:
        if os.environ.get("TWOFLOW_KEEP") is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all system-net H.264 checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
