#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""twoflow main job: the staggered two-flow VoD system across an emulated WAN,
ending with a report.

1. A short check of the elements: split → merge round trips of the 720x576
   sample (scripts/make-media.sh) and a generated MPEG-2 stream
   (byte-identical, decodable), and the merge's damage metrics with 10% of the enhanced frames lost.
2. The system (needs root): twoflow-server in a server namespace and
   twoflow-proxy in a client namespace across twoflow-linkemu (10 Mbit/s
   bottleneck, 40 ms RTT, 80-packet drop-tail queue); the proxy pre-stages a
   prefix, admits sessions against the configured WAN capacity, and viewers
   in another client namespace pull over RTSP with a stock client
   (rtspsrc ! decodebin). One viewer is deliberately rejected. Report:
   frames delivered per type, damage metrics, rates, admission decisions,
   and PNG plots of the emulator's time series (experiments/plot.py).
   Then real media with audio (scripts/make-corpus.sh): an MP4 (H.264 +
   AAC) and an MPEG-TS (MPEG-2 + MP2, PTS from 26.5 h, wrapping) are
   viewed over RTSP by ffmpeg and fetched by the proxy to .mp4/.ts, their
   video frames and audio compared with the source's (ffprobe), and the
   sessions' audio buffers reported with their frames.

Run through scripts/main.sh (which installs and builds first), or directly:
  GST_PLUGIN_PATH=build/gst /usr/bin/python3 scripts/main_job.py --build build
"""
import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
from twoflowlab import testbed as tbm, tool_argv  # noqa: E402
from twoflowlab.gst import Gst, run_to_eos as run, stats  # noqa: E402
from twoflowlab.records import tagged  # noqa: E402


def wait_serving(log, timeout=30.0):
    """Waits until twoflow-server's log (line-buffered stdout) says it
    serves its control port; FALSE after timeout."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(log) as f:
            if "twoflow-server: serving" in f.read():
                return True
        time.sleep(0.05)
    return False


def admitted(log, video):
    """Sessions of video the proxy's log says were admitted (its ADMISSION
    lines with decision admit)."""
    n = 0
    with open(log) as f:
        for line in f:
            if line.startswith("ADMISSION "):
                rec = json.loads(line.split(" ", 1)[1])
                n += rec.get("video") == video and rec.get("decision") == "admit"
    return n


def wait_admitted(log, video, before, timeout=60):
    """Waits until more than `before` sessions of video were admitted."""
    deadline = time.monotonic() + timeout
    while admitted(log, video) <= before and time.monotonic() < deadline:
        time.sleep(0.05)

def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def count_decoded(path):
    counter = {"n": 0}
    p = Gst.parse_launch(f"filesrc location={path} ! mpegvideoparse ! "
                         "avdec_mpeg2video ! fakesink name=sink")
    pad = p.get_by_name("sink").get_static_pad("sink")

    def probe(_pad, _info):
        counter["n"] += 1
        return Gst.PadProbeReturn.OK

    pad.add_probe(Gst.PadProbeType.BUFFER, probe)
    bus = p.get_bus()
    p.set_state(Gst.State.PLAYING)
    msg = bus.timed_pop_filtered(300 * Gst.SECOND, Gst.MessageType.EOS |
                                 Gst.MessageType.ERROR | Gst.MessageType.WARNING)
    p.set_state(Gst.State.NULL)
    if msg is None or msg.type != Gst.MessageType.EOS:
        return None
    return counter["n"]


def greyramp(build):
    """The 720x576 sample (scripts/make-media.sh; the build makes it too)."""
    path = os.path.join(build, "tests", "media", "greyramp.m2v")
    subprocess.run([os.path.join(ROOT, "scripts", "make-media.sh"), path], check=True)
    return path


def generated_stream(build):
    path = os.path.join(build, "mainjob", "ball-600.m2v")
    subprocess.run([os.path.join(ROOT, "scripts", "make-test-stream.sh"), path, "600"],
                   check=True)
    return path


SPLIT_MERGE = (
    "filesrc location={src} ! mpegvideoparse ! twoflowsplit name=s "
    "twoflowmerge name=m ! filesink location={out} "
    "s.essential ! queue max-size-buffers=0 max-size-bytes=0 max-size-time=0 ! m.essential "
    "s.enhanced ! queue ! {loss} m.enhanced")


def session(title, src, workdir, loss):
    parsed = os.path.join(workdir, "parsed.m2v")
    merged = os.path.join(workdir, "merged.m2v")
    run(f"filesrc location={src} ! mpegvideoparse ! filesink location={parsed}")
    lossdesc = f"identity drop-probability={loss} !" if loss else ""
    t0 = time.monotonic()
    p = run(SPLIT_MERGE.format(src=src, out=merged, loss=lossdesc))
    elapsed = time.monotonic() - t0
    split, merge = stats(p, "s"), stats(p, "m")
    decoded = count_decoded(merged)
    identical = sha256(parsed) == sha256(merged)
    print(f"\n== {title}: {os.path.basename(src)}"
          f"{f' with {loss:.0%} of enhanced records lost' if loss else ''}")
    print(f"  frames in:        I {split['frames-i']}  P {split['frames-p']}  "
          f"B {split['frames-b']}  (total {split['frames-i'] + split['frames-p'] + split['frames-b']})")
    print(f"  essential flow:   {split['essential-frames']} frames, "
          f"{split['essential-bytes']} bytes")
    print(f"  enhanced flow:    {split['enhanced-frames']} frames, "
          f"{split['enhanced-bytes']} bytes")
    print(f"  merged:           {merge['output-frames']} frames out, "
          f"received I/P/B {merge['received-i']}/{merge['received-p']}/{merge['received-b']}, "
          f"missing P/B {merge['missing-p']}/{merge['missing-b']}, dropped {merge['dropped']}")
    print(f"  damage:           E_f {merge['E_f']}  E_g {merge['E_g']}  "
          f"G_max {merge['G_max']}  G_avg {merge['G_avg']:.2f}  "
          f"G_con_total {merge['G_con_total']}  G_con_max {merge['G_con_max']}  "
          f"G_con_avg {merge['G_con_avg']:.2f}")
    print(f"  decoded frames:   {decoded}"
          f"{'' if decoded is not None else ' (DECODER ERROR)'}")
    print(f"  byte-identical:   {'yes' if identical else 'no'}"
          f"  ({elapsed * 1000:.0f} ms split+merge)")
    ok = decoded == merge["output-frames"]
    if not loss:
        ok = ok and identical and merge["E_f"] == 0
    return ok


MEDIA = ("h264-aac.mp4", "mpeg2-mp2.ts")


def ffprobe_facts(path):
    """Video codec and decoded frames, audio codec and decoded seconds."""
    def probe(*args):
        r = subprocess.run(["ffprobe", "-v", "error", "-of", "json", *args, path],
                           capture_output=True, text=True, timeout=120)
        try:
            return json.loads(r.stdout or "{}")
        except ValueError:
            return {}
    f = {"video": None, "audio": None, "frames": 0, "audio_s": 0.0}
    for st in probe("-show_entries", "stream=codec_type,codec_name").get("streams", []):
        if st.get("codec_type") in ("video", "audio") and f[st["codec_type"]] is None:
            f[st["codec_type"]] = st.get("codec_name")
    v = probe("-select_streams", "v:0", "-count_frames",
              "-show_entries", "stream=nb_read_frames").get("streams", [{}])
    f["frames"] = int((v[0] if v else {}).get("nb_read_frames", 0) or 0)
    a = probe("-select_streams", "a:0", "-show_entries",
              "frame=nb_samples:stream=sample_rate")
    rate = int((a.get("streams") or [{}])[0].get("sample_rate", 0) or 0)
    if rate:
        f["audio_s"] = sum(int(x.get("nb_samples", 0)) for x in a.get("frames", [])) / rate
    return f


def media_corpus(build):
    corpus = os.path.join(build, "mainjob", "corpus")
    subprocess.run([os.path.join(ROOT, "scripts", "make-corpus.sh"), corpus], check=True,
                   capture_output=True)
    return corpus


def system_section(build, workdir):
    """Server and proxy across the emulated WAN; returns True if all checks pass."""
    print("\n== the two-flow system across the emulated WAN")
    server_exe = os.path.join(build, "tools", "server", "twoflow-server")
    proxy_exe = os.path.join(build, "tools", "proxy", "twoflow-proxy")
    viewer = tool_argv("viewer")
    for exe in (server_exe, proxy_exe):
        if not os.access(exe, os.X_OK):
            print(f"  missing {exe}: build first")
            return False
    try:
        tbm.check_environment()
    except tbm.SkipTest as e:
        print(f"  cannot build the testbed: {e} (run as root)")
        return False
    os.environ.setdefault("TWOFLOW_BUILD_ROOT", build)

    sysdir = os.path.join(workdir, "system")
    shutil.rmtree(sysdir, ignore_errors=True)
    videos = os.path.join(sysdir, "videos")
    os.makedirs(videos)
    shutil.copy(generated_stream(build), os.path.join(videos, "ball.m2v"))
    shutil.copy(greyramp(build), videos)
    corpus = media_corpus(build)
    for name in MEDIA:
        shutil.copy(os.path.join(corpus, name), videos)
    # admission counts the sessions' smoothed rates (the proxy's default):
    # half the bottleneck is this proxy's to give, so the sample's second
    # viewer (2.8 Mbit/s smoothed) no longer fits
    rate, rtt_ms, capacity = 10e6, 40, 5e6
    seg = "2"
    ok = True
    with tbm.Testbed(rate_bps=rate, delay_ms=rtt_ms / 2, queue_pkts=80,
                     n_servers=1, n_clients=2,
                     track_ports=[(7000, 7099), (7100, 7199)],
                     workdir=os.path.join(sysdir, "testbed"),
                     keep_workdir=True) as tb:
        srv_host, proxy_host, viewer_host = tb.server, tb.clients[0], tb.clients[1]
        slog = open(os.path.join(sysdir, "server.log"), "w")
        plog = open(os.path.join(sysdir, "proxy.log"), "w")
        # the control channel over TLS, the proxy authenticated by its token
        # (throw-away certificates: docs/security.md)
        certs = os.path.join(sysdir, "certs")
        subprocess.run([os.path.join(ROOT, "scripts", "make-test-certs.sh"), certs,
                        srv_host.ip], check=True)
        token = open(os.path.join(certs, "tokens")).read().split()[1]
        server = srv_host.popen([server_exe, "--dir", videos, "--port", "5500",
                                 "--tls-cert", os.path.join(certs, "server.pem"),
                                 "--tls-key", os.path.join(certs, "server.key"),
                                 "--tokens", os.path.join(certs, "tokens")],
                                stdout=slog, stderr=subprocess.STDOUT)
        # the control port listens once the server says so (a fixed 0.5 s
        # lost the race on a loaded machine: the prestage's connection
        # refused)
        wait_serving(os.path.join(sysdir, "server.log"))
        common = ["--server", f"{srv_host.ip}:5500", "--segment-duration", seg,
                  "--tls-ca", os.path.join(certs, "ca.pem"), "--token", token,
                  "--prefix-dir", os.path.join(sysdir, "prefix"),
                  "--essential-ports", "7000", "--enhanced-ports", "7100"]
        pre = proxy_host.run([proxy_exe] + common + ["--prestage", "ball.m2v"],
                             timeout=60, check=False)
        prestage = tagged(pre.stdout, "PRESTAGE-RESULT")
        print(f"  prefix store:     ball.m2v first segment pre-staged "
              f"({prestage[0]['essential_bytes'] if prestage else '?'} bytes)"
              if pre.returncode == 0 else f"  prestage FAILED: {pre.stderr[-300:]}")
        ok &= pre.returncode == 0
        proxy = proxy_host.popen([proxy_exe] + common +
                                 ["--wan-capacity", str(int(capacity))],
                                 stdout=plog, stderr=subprocess.STDOUT)
        time.sleep(0.5)
        url = f"rtsp://{proxy_host.ip}:8554/video/"
        views = {}
        # A: the long video (with its prefix); B: the 5 Mbit/s sample;
        # C: the sample again while B runs: residual < its smoothed rate -> 503
        # (each starts once the one before it is admitted: the order holds
        # on a loaded machine)
        for name, video in (("A", "ball.m2v"), ("B", "greyramp.m2v"),
                            ("C", "greyramp.m2v")):
            before = admitted(os.path.join(sysdir, "proxy.log"), video)
            views[name] = viewer_host.popen(viewer + [url + video, "--timeout", "90"],
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                            text=True)
            if name != "C":
                wait_admitted(os.path.join(sysdir, "proxy.log"), video, before)
        results = {}
        for name, p in views.items():
            try:
                results[name] = json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1])
            except (ValueError, IndexError, subprocess.TimeoutExpired):
                results[name] = {"frames": 0, "error": "no result"}
        # real media with audio, one after the other: ffmpeg views over
        # RTSP (recording what it receives), the proxy fetches to a file
        media = {}
        for video in MEDIA:
            rec = os.path.join(sysdir, f"rtsp-{video}.ts")
            r = viewer_host.run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-rtsp_transport",
                                 "tcp", "-i", url + video, "-map", "0", "-c", "copy",
                                 "-f", "mpegts", rec], timeout=120, check=False)
            out = os.path.join(sysdir, "fetch-" + video)
            fr = proxy_host.run([proxy_exe] + common + ["--fetch", video, "--output", out],
                                timeout=120, check=False)
            media[video] = {"rtsp": ffprobe_facts(rec) if r.returncode == 0 else None,
                            "fetch": ffprobe_facts(out) if fr.returncode == 0 else None,
                            "fetch_result": (tagged(fr.stdout, "FETCH-RESULT") or [{}])[0],
                            "source": ffprobe_facts(os.path.join(videos, video)),
                            "error": (r.stderr[-200:] if r.returncode else "")
                            + (fr.stderr[-200:] if fr.returncode else "")}
        time.sleep(1.0)
        proxy.terminate()
        proxy.wait(timeout=10)
        server.terminate()
        server.wait(timeout=10)
        slog.close()
        plog.close()
        summary = tb.stop_emulator()
        csv_path = tb.csv_path
        shutil.copy(csv_path, os.path.join(sysdir, "linkemu.csv"))

    with open(os.path.join(sysdir, "proxy.log")) as f:
        ptext = f.read()
    with open(os.path.join(sysdir, "server.log")) as f:
        stext = f.read()
    admissions = tagged(ptext, "ADMISSION")
    ends = tagged(ptext, "SESSION-END")
    sends = {e["session"]: e for e in tagged(stext, "SESSION-END")}

    print(f"  WAN:              {rate / 1e6:.0f} Mbit/s bottleneck, {rtt_ms} ms RTT, "
          f"80-packet drop-tail queue; admission capacity {capacity / 1e6:.0f} Mbit/s")
    print("  admission decisions:")
    for a in admissions:
        extra = (f"residual {a['residual'] / 1e6:.2f} Mbit/s" if "residual" in a else "")
        print(f"    {a['decision']:6s} {a['video']:14s} {a.get('basis', 'peak')} "
              f"{a.get('rate', a['peak_rate']) / 1e6:.2f} Mbit/s (peak {a['peak_rate'] / 1e6:.2f}) "
              f"{extra}{'  — ' + a['reason'] if a.get('reason') else ''}")
    expected = {"A": 600, "B": 25}
    for name in ("A", "B", "C"):
        r = results[name]
        print(f"  viewer {name}:         {r.get('url', '').rsplit('/', 1)[-1]:14s} "
              f"decoded {r['frames']} frames in {r.get('seconds', 0):.1f} s"
              f"{'  error: ' + r['error'][-140:] if r.get('error') else ''}")
    for e in ends:
        m = e.get("merge", {})
        srv = sends.get(e["server_session"], {})
        es = srv.get("essential_stats", {})
        tc = srv.get("transcoder_stats", {})
        el = max(e["elapsed"], 1e-3)
        print(f"  session {e['session']} ({e['video']}):")
        print(f"    frames delivered: I {m.get('received-i')}  P {m.get('received-p')}  "
              f"B {m.get('received-b')}  (out {m.get('output-frames')} of {e['frames']}, "
              f"{m.get('prefix-frames')} from the prefix store); "
              f"audio buffers {m.get('audio-buffers', 0)}")
        print(f"    missing P/B:      {m.get('missing-p')}/{m.get('missing-b')}, "
              f"dropped {m.get('dropped')}")
        print(f"    damage:           E_f {m.get('E_f')}  E_g {m.get('E_g')}  "
              f"G_max {m.get('G_max')}  G_avg {m.get('G_avg', 0):.2f}  "
              f"G_con_total {m.get('G_con_total')}  G_con_max {m.get('G_con_max')}")
        print(f"    rates:            essential {e['essential_bytes'] * 8 / el / 1e3:.0f} kbit/s, "
              f"enhanced {e['enhanced_bytes'] * 8 / el / 1e3:.0f} kbit/s over {el:.1f} s; "
              f"peak {e['peak_rate'] / 1e3:.0f} kbit/s")
        if es:
            print(f"    cTCP:             target {es.get('target-rate', 0) * 8 / 1e3:.0f} kbit/s, "
                  f"{es.get('segments')} segments ({es.get('segments-late')} late), "
                  f"retransmissions {es.get('retransmissions')}, srtt {es.get('srtt', 0) / 1e6:.1f} ms")
        if tc:
            print(f"    transcoder:       {tc.get('frames-passed')} frames passed, "
                  f"{tc.get('frames-reencoded')} re-encoded, {tc.get('frames-dropped')} dropped; "
                  f"{srv.get('forwarded_events', 0)} congestion events forwarded")
    fwd = summary.get("fwd", {}) if isinstance(summary, dict) else {}
    print(f"  emulator (fwd):   {fwd.get('delivered_pkts')} packets, "
          f"{(fwd.get('delivered_bytes') or 0) / 1e6:.2f} MB delivered, "
          f"{(fwd.get('drops_queue') or 0) + (fwd.get('drops_loss') or 0)} dropped, "
          f"max queue {fwd.get('max_queue_pkts')} packets")

    plots = []
    for d in ("fwd", "rev"):
        png = os.path.join(sysdir, f"linkemu-{d}.png")
        r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "experiments", "plot.py"),
                            os.path.join(sysdir, "linkemu.csv"), "-o", png, "--dir", d,
                            "--smooth", "5", "--labels", "7000-7099=essential cTCP,7100-7199=enhanced rUDP",
                            "--title", f"twoflow system, {d}"],
                           capture_output=True, text=True)
        if r.returncode == 0 and os.path.exists(png):
            plots.append(png)
        else:
            print(f"  plot {d} failed: {r.stderr[-200:]}")
    print("  plots:            " + ", ".join(plots))

    print("  real media with audio (source -> RTSP viewer ffmpeg / proxy fetch):")
    media_ok = True
    for video, r in media.items():
        src = r["source"]
        print(f"    {video}: source {src['video']} {src['frames']} frames + {src['audio']} "
              f"{src['audio_s']:.3f} s")
        for how in ("rtsp", "fetch"):
            g = r[how]
            if g is None:
                print(f"      {how:6s} FAILED {r['error']}")
                media_ok = False
                continue
            good = (g["video"] == src["video"] and g["frames"] == src["frames"]
                    and g["audio"] == src["audio"] and abs(g["audio_s"] - src["audio_s"]) <= 0.1)
            media_ok &= good
            print(f"      {how:6s} {g['video']} {g['frames']} frames + {g['audio']} "
                  f"{g['audio_s']:.3f} s{'' if good else '  MISMATCH'}")
        fm = r["fetch_result"].get("merge", {})
        print(f"      fetch merge: {fm.get('output-frames')} frames, "
              f"{fm.get('audio-buffers')} audio buffers, E_f {fm.get('E_f')}, "
              f"container {r['fetch_result'].get('container')}")
    video_ends = [e for e in ends if e["video"] in ("ball.m2v", "greyramp.m2v")]
    checks = [
        (results["A"]["frames"] == expected["A"] and not results["A"].get("error"),
         "viewer A decoded every frame of ball.m2v"),
        (results["B"]["frames"] == expected["B"] and not results["B"].get("error"),
         "viewer B decoded every frame of greyramp.m2v"),
        (results["C"]["frames"] == 0 and "503" in (results["C"].get("error") or ""),
         "viewer C rejected with 503 by admission control"),
        (any(a["decision"] == "reject" for a in admissions), "a rejection is logged"),
        (len(video_ends) == 2 and all(e["merge"]["E_f"] == 0 for e in video_ends),
         "two sessions merged without damage"),
        (media_ok, "MP4 (H.264+AAC) and TS (MPEG-2+MP2): every frame and the audio "
         "over RTSP and in the fetched files"),
        (any(e["merge"].get("prefix-frames", 0) > 0 for e in ends), "prefix store used"),
        (len(plots) == 2, "plots written"),
    ]
    for good, what in checks:
        print(f"  [{'ok' if good else 'FAIL'}] {what}")
        ok &= good
    print(f"  logs and plots in {sysdir}")
    return ok


def page_section(build, workdir):
    """The proxy's web page in headless Chromium after the sessions: plays
    h264-aac.mp4 over HLS while a second video is merged, saves a screenshot
    of the player and the status view. Never fails the main job."""
    print("\n== the web page (headless Chromium)")
    try:
        import threading
        import urllib.request
        import page_check
        if not page_check.chromium_binary():
            print("  chromium missing (scripts/install-deps.sh installs it): skipped")
            return
        pdir = os.path.join(workdir, "page")
        shutil.rmtree(pdir, ignore_errors=True)
        os.makedirs(pdir)
        corpus = media_corpus(build)
        ports = []
        for _ in range(3):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
            s.close()
        cport, hport, rport = ports
        procs = [subprocess.Popen([os.path.join(build, "tools", "server", "twoflow-server"),
                                   "--dir", corpus, "--port", str(cport), "--address",
                                   "127.0.0.1", "--insecure"], stdout=open(os.path.join(pdir, "server.log"), "w"),
                                  stderr=subprocess.STDOUT)]
        time.sleep(0.3)
        procs.append(subprocess.Popen([os.path.join(build, "tools", "proxy", "twoflow-proxy"),
                                       "--server", f"127.0.0.1:{cport}", "--insecure",
                                       "--rtsp-port", str(rport),
                                       "--http-port", str(hport), "--segment-duration", "1",
                                       "--hls-dir", os.path.join(pdir, "hls"),
                                       "--prefix-dir", os.path.join(pdir, "prefix")],
                                      stdout=open(os.path.join(pdir, "proxy.log"), "w"),
                                      stderr=subprocess.STDOUT))
        try:
            time.sleep(0.5)

            def second():   # a session live in the status view at the screenshot
                time.sleep(2.5)
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{hport}/hls/h264-aac.mkv/"
                                           "index.m3u8", timeout=20).read()
                except OSError:
                    pass
            threading.Thread(target=second, daemon=True).start()
            shot = os.path.join(pdir, "page.png")
            r = page_check.run(f"http://127.0.0.1:{hport}/", play="h264-aac.mp4",
                               seconds=6, screenshot=shot)
        finally:
            for p in procs:
                p.terminate()
                p.wait(10)
        last = (r.get("reports") or [{}])[-1]
        print(f"  player: {last.get('video')} at t = {last.get('currentTime', 0):.1f} s, "
              f"{last.get('width')}x{last.get('height')} {last.get('videoCodec')}, audio "
              f"{last.get('audioCodec')} ({last.get('audioDecodedBytes')} bytes decoded); "
              f"video area luma variance {r.get('video_luma_var', 0):.0f}")
        print(f"  screenshot (player + status view): {r.get('screenshot', r.get('error'))}")
    except Exception as e:  # a report, not a failure
        print(f"  page step skipped: {type(e).__name__}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    os.environ.setdefault("GST_PLUGIN_PATH", os.path.join(args.build, "gst"))
    Gst.init(None)
    for el in ("twoflowsplit", "twoflowmerge"):
        if Gst.ElementFactory.find(el) is None:
            sys.exit(f"element {el} not found: build first (scripts/main.sh)")

    workdir = os.path.join(args.build, "mainjob")
    os.makedirs(workdir, exist_ok=True)
    print("twoflow main job — 1. split/merge round trips")
    ok = True
    for src in (greyramp(args.build),
                generated_stream(args.build)):
        ok &= session("round trip", src, workdir, 0)
    ok &= session("lossy enhanced flow", generated_stream(args.build), workdir, 0.10)
    print("\ntwoflow main job — 2. the system")
    ok &= system_section(args.build, workdir)
    page_section(args.build, workdir)
    print("\nRESULT:", "all checks passed" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
