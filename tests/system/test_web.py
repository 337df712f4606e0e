#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Operations of twoflow-server and twoflow-proxy (suite 'web'):

- both read a GKeyFile --config whose keys are the long options, the
  command line overriding it (the server's config names a missing --dir
  that the command line replaces);
- /healthz, and /metrics parsed by prometheus_client's text parser, during
  a live HLS session (sessions, rates, E_f/E_g, admissions) and after;
- HLS: /hls/<video>/index.m3u8 while the merge runs (naming the segment
  being written, which is streamed as it grows; a blocking reload,
  _HLS_msn, held until the next segment is listed), then the cached VoD
  (EXT-X-ENDLIST, segments with video and audio, by ffprobe);
- SIGHUP keeps both running and reloads the video list;
- SIGTERM during a fetch leaves a playable file (ffprobe: video and audio);
- an HLS run that fails answers the waiting playlist request with its
  reason (503 "HLS of V failed: ELEMENT: message") at once;
- the prefix store's --prefix-max-bytes evicts the least recently used.

  test_web.py SERVER PROXY MAKE_CORPUS CORPUS_DIR
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families
from twoflowlab.checks import free_port, wait_log  # noqa: E402

failures = []

SOURCE = os.environ.get("TWOFLOW_SOURCE_ROOT",
                        os.path.join(os.path.dirname(__file__), "../.."))


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def get(url, timeout=40):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


def metrics(port):
    _, body = get(f"http://127.0.0.1:{port}/metrics")
    fams = {f.name: f for f in text_string_to_metric_families(body.decode())}
    return fams


def sample(fams, name, **labels):
    for f in fams.values():
        for s in f.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return None


def ffprobe(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-show_entries",
                        "stream=codec_type,codec_name:format=duration",
                        "-of", "json", path], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    j = json.loads(r.stdout)
    return {"types": sorted(s["codec_type"] for s in j.get("streams", [])),
            "duration": float(j.get("format", {}).get("duration", 0) or 0)}



def main():
    server_exe, proxy_exe, make_corpus, corpus = sys.argv[1:5]
    r = subprocess.run([make_corpus, corpus], capture_output=True, text=True,
                       timeout=300)
    check(r.returncode == 0, "corpus made")
    work = tempfile.mkdtemp(prefix="twoflow-web-")
    procs = []
    try:
        cport, sport, hport, rport = (free_port() for _ in range(4))
        sconf = os.path.join(work, "server.conf")
        with open(sconf, "w") as f:
            f.write(f"[twoflow-server]\ndir=/nonexistent\nport={cport}\n"
                    f"address=127.0.0.1\nhttp-port={sport}\ninsecure=true\n")
        pconf = os.path.join(work, "proxy.conf")
        with open(pconf, "w") as f:
            f.write(f"[twoflow-proxy]\nserver=127.0.0.1:{cport}\ninsecure=true\n"
                    f"rtsp-port={rport}\nhttp-port={hport}\n"
                    f"hls-dir={work}/hls\nprefix-dir={work}/prefix\n"
                    "segment-duration=1\n")
        version = re.search(r"version : '([^']+)'",
                            open(os.path.join(SOURCE, "meson.build")).read()).group(1)
        for exe in (server_exe, proxy_exe):
            r = subprocess.run([exe, "--version"], capture_output=True, text=True,
                               timeout=10)
            check(r.returncode == 0 and version in r.stdout,
                  f"{os.path.basename(exe)} --version: {r.stdout.strip()}")
        bad = os.path.join(work, "bad.conf")
        with open(bad, "w") as f:
            f.write("[twoflow-proxy]\nno-such-option=1\n")
        r = subprocess.run([proxy_exe, "--config", bad], capture_output=True,
                           text=True, timeout=10)
        check(r.returncode == 2 and "no-such-option" in r.stderr,
              f"an unknown config key is refused: exit {r.returncode}, {r.stderr.strip()}")

        slog, plog = os.path.join(work, "server.log"), os.path.join(work, "proxy.log")
        server = subprocess.Popen([server_exe, "--config", sconf, "--dir", corpus],
                                  stdout=open(slog, "w"), stderr=subprocess.STDOUT)
        procs.append(server)
        check(wait_log(slog, "HTTP on port"), "server: --dir from the command line "
              "overrides the config, HTTP port from the config")
        proxy = subprocess.Popen([proxy_exe, "--config", pconf],
                                 stdout=open(plog, "w"), stderr=subprocess.STDOUT)
        procs.append(proxy)
        check(wait_log(plog, "HTTP on port"), "proxy: started from its config")

        for name, port in (("server", sport), ("proxy", hport)):
            st, body = get(f"http://127.0.0.1:{port}/healthz")
            check(st == 200 and body == b"ok\n", f"{name} /healthz: {st} {body!r}")
        st, body = get(f"http://127.0.0.1:{hport}/videos")
        vids = json.loads(body)["videos"]
        check("h264-aac.mp4" in vids, f"proxy /videos lists the server's videos ({len(vids)})")
        st, body = get(f"http://127.0.0.1:{hport}/")
        check(st == 200 and b"twoflow" in body and b"hls.min.js" in body,
              "the page at /")

        # live HLS: the playlist is answered while the merge runs
        video = "h264-aac.mkv"
        t0 = time.monotonic()
        first = {}

        def first_get():
            first["r"] = get(f"http://127.0.0.1:{hport}/hls/{video}/index.m3u8")
            first["t"] = time.monotonic() - t0
            # the playlist names the segment being written at once; it is
            # sent as it grows (chunked), and a blocking reload for the next
            # segment (_HLS_msn) is held until that one is listed
            names = [x for x in first["r"][1].decode().splitlines() if x.endswith(".ts")]
            if names and b"ENDLIST" not in first["r"][1]:
                first["open"] = names[-1]
                with urllib.request.urlopen(f"http://127.0.0.1:{hport}/hls/{video}/"
                                            f"{names[-1]}", timeout=40) as r:
                    first["chunked"] = r.headers.get("Transfer-Encoding") == "chunked"
                    first["seg"] = r.read()
                first["msn"] = len(names)
                first["reload"] = get(f"http://127.0.0.1:{hport}/hls/{video}/"
                                      f"index.m3u8?_HLS_msn={len(names)}")
        th = threading.Thread(target=first_get)
        th.start()
        time.sleep(2.0)   # the session runs, its first segment not yet cut
        pm, sm = metrics(hport), metrics(sport)
        check(sample(pm, "twoflow_proxy_sessions") == 1,
              f"proxy metrics: 1 session live ({sample(pm, 'twoflow_proxy_sessions')})")
        ef = sample(pm, "twoflow_proxy_session_damaged_frames_total", video=video, kind="hls")
        eg = sample(pm, "twoflow_proxy_session_damaged_gops_total", video=video, kind="hls")
        check(ef == 0 and eg == 0, f"proxy metrics: E_f {ef}, E_g {eg} of the HLS session")
        rate = sample(pm, "twoflow_proxy_session_rate_bits_per_second",
                      video=video, flow="essential")
        check(rate is not None and rate > 0, f"proxy metrics: essential rate {rate} bit/s")
        check(sample(pm, "twoflow_proxy_admissions_total", decision="admit") >= 1,
              "proxy metrics: admissions counted")
        check(sample(sm, "twoflow_server_sessions") == 1,
              f"server metrics: 1 session ({sample(sm, 'twoflow_server_sessions')})")
        st, body = get(f"http://127.0.0.1:{hport}/status")
        s = json.loads(body)
        check(len(s["sessions"]) == 1 and s["sessions"][0]["kind"] == "hls"
              and s["decisions"][-1]["decision"] == "admit",
              "/status: the session and its admission")
        th.join(40)
        st, body = first["r"]
        check(st == 200 and b"#EXTM3U" in body and b"segment" in body,
              f"live playlist after {first['t']:.1f} s: "
              f"{'ENDLIST' if b'ENDLIST' in body else 'live'}")
        check(b"ENDLIST" not in body and b"CAN-BLOCK-RELOAD=YES" in body
              and first.get("chunked"),
              f"the live playlist names the open segment {first.get('open')}, "
              f"sent chunked as it grows ({len(first.get('seg') or b'')} bytes)")
        rst, rbody = first.get("reload") or (None, b"")
        rsegs = [x for x in rbody.decode().splitlines() if x.endswith(".ts")]
        check(rst == 200 and (len(rsegs) > first.get("msn", 1 << 30)
                              or b"#EXT-X-ENDLIST" in rbody),
              f"a blocking reload for segment {first.get('msn')} answers once it is "
              f"listed: {len(rsegs)} segments")

        # VoD once cached
        done = os.path.join(work, "hls", video, "complete")
        t0 = time.monotonic()
        while not os.path.exists(done) and time.monotonic() - t0 < 20:
            time.sleep(0.2)
        st, body = get(f"http://127.0.0.1:{hport}/hls/{video}/index.m3u8")
        segs = [l for l in body.decode().splitlines() if l.endswith(".ts")]
        check(os.path.exists(done) and b"#EXT-X-ENDLIST" in body and segs
              and b"CAN-BLOCK-RELOAD" not in body,
              f"VoD playlist with EXT-X-ENDLIST, {len(segs)} segments")
        # where its start-up went (docs/system.md, "Start-up"): every stage
        # up to the first segment byte seen, in order
        wait_log(plog, '"kind":"hls"')
        with open(plog) as f:
            ends = [json.loads(x.split("SESSION-END", 1)[1]) for x in f
                    if x.startswith("SESSION-END") and '"kind":"hls"' in x]
        su = (ends[-1].get("startup") if ends else None) or {}
        check(0 <= su.get("play_answered", -1) <= su.get("output", -1)
              and 0 <= su.get("essential", -1) and 0 <= su.get("enhanced", -1)
              and 0 <= su.get("first_frame", -1) <= su.get("mux", -1)
              <= su.get("output", -1),
              f"the HLS session's start-up timeline in its report: {su}")
        if first.get("open"):
            with open(os.path.join(work, "hls", video, first["open"]), "rb") as f:
                whole = f.read()
            check(first.get("seg") == whole,
                  f"the segment streamed while written is the whole file "
                  f"({len(first.get('seg') or b'')} of {len(whole)} bytes)")
        cat = os.path.join(work, "all.ts")
        with open(cat, "wb") as out:
            for sg in segs:
                out.write(get(f"http://127.0.0.1:{hport}/hls/{video}/{sg}")[1])
        fp = ffprobe(cat)
        check(fp and fp["types"] == ["audio", "video"] and 2.5 < fp["duration"] < 3.5,
              f"HLS segments: {fp}")
        pm = metrics(hport)
        check(sample(pm, "twoflow_proxy_sessions") == 0 and
              sample(pm, "twoflow_proxy_received_bytes_total", flow="essential") > 0,
              "proxy metrics after the session: 0 live, bytes counted")
        t0 = time.monotonic()
        get(f"http://127.0.0.1:{hport}/hls/{video}/index.m3u8")
        # (no new session: a fetch would take seconds to its first segment;
        # the session count is the real check, the time a loose one)
        check(time.monotonic() - t0 < 2.0 and sample(metrics(hport), "twoflow_proxy_sessions") == 0,
              "the cached video is served without a new session")

        # SIGHUP
        for p, log in ((server, slog), (proxy, plog)):
            p.send_signal(signal.SIGHUP)
        check(wait_log(slog, "SIGHUP: video list reloaded") and
              wait_log(plog, "SIGHUP: video list reloaded") and
              server.poll() is None and proxy.poll() is None,
              "SIGHUP reloads, both keep running")

        # SIGTERM during a fetch
        out = os.path.join(work, "cut.mkv")
        fl = os.path.join(work, "fetch.log")
        f = subprocess.Popen([proxy_exe, "--server", f"127.0.0.1:{cport}", "--insecure",
                              "--segment-duration", "1",
                              "--prefix-dir", os.path.join(work, "noprefix"),
                              "--fetch", "h264-aac.mp4", "--output", out],
                             stdout=open(fl, "w"), stderr=subprocess.STDOUT)
        wait_log(fl, "playing h264-aac.mp4")
        time.sleep(1.5)
        f.send_signal(signal.SIGTERM)
        rc = f.wait(15)
        fp = ffprobe(out) if os.path.exists(out) else None
        with open(fl) as lf:
            log = lf.read()
        check(fp and fp["types"] == ["audio", "video"] and 0.3 < fp["duration"] < 2.9
              and '"interrupted":true' in log,
              f"SIGTERM during a fetch: exit {rc}, file {fp}")

        # prefix store LRU
        pdir = os.path.join(work, "lru")
        base = [proxy_exe, "--server", f"127.0.0.1:{cport}", "--insecure", "--segment-duration", "1",
                "--prefix-dir", pdir]

        def prestage(name, limit=0):
            r = subprocess.run(base + ["--prestage", name, "--prefix-max-bytes", str(limit)],
                               capture_output=True, text=True, timeout=30)
            return r.returncode == 0

        names = ["h264-aac.mp4", "mpeg2-mp2.ts", "h264-aac.mkv"]
        ok = prestage(names[0]) and prestage(names[1])
        time.sleep(1.1)
        sizes = {n: os.path.getsize(os.path.join(pdir, n + ".prefix.twf")) for n in names[:2]}
        # use the first prefix again: it becomes the most recently used
        r = subprocess.run(base + ["--fetch", names[0], "--output",
                                   os.path.join(work, "again.mkv")],
                           capture_output=True, text=True, timeout=30)
        ok = ok and r.returncode == 0
        time.sleep(1.1)
        ok = ok and prestage(names[2], sizes[names[0]] + sizes[names[1]])
        left = sorted(n[:-len(".prefix.twf")] for n in os.listdir(pdir))
        check(ok and left == sorted([names[0], names[2]]),
              f"--prefix-max-bytes {sizes[names[0]] + sizes[names[1]]}: the least "
              f"recently used ({names[1]}) evicted, left {left}")

        sm = metrics(sport)
        check(sample(sm, "twoflow_server_sessions_started_total") >= 3,
              "server metrics: sessions counted")

        # SIGTERM while an HLS run merges: its playlist ends (EXT-X-ENDLIST),
        # the run is not kept as the cached VoD; the proxy exits 0
        video = "h264-opengop-opus.mkv"
        th = threading.Thread(target=lambda: get(
            f"http://127.0.0.1:{hport}/hls/{video}/index.m3u8"), daemon=True)
        th.start()
        # the run has begun once its playlist names a segment (a fixed
        # wait saw none under load)
        pl = os.path.join(work, "hls", video, "index.m3u8")
        for _ in range(300):
            if os.path.exists(pl) and ".ts" in open(pl).read():
                break
            time.sleep(0.1)
        sm = metrics(sport)
        names = {s.name for f in sm.values() for s in f.samples}
        check({"twoflow_server_session_retransmissions_total",
               "twoflow_server_session_late_segments_total"} <= names,
              "server metrics: retransmissions and late segments of the live session")
        proxy.send_signal(signal.SIGTERM)
        check(proxy.wait(10) == 0, "SIGTERM during an HLS run: the proxy exits 0")
        body = open(pl).read() if os.path.exists(pl) else ""
        check("#EXT-X-ENDLIST" in body and not os.path.exists(
            os.path.join(work, "hls", video, "complete")),
            f"the cut run's playlist ends ({body.count('.ts')} segments), not cached")

        server.send_signal(signal.SIGTERM)
        check(server.wait(10) == 0, "SIGTERM: the server exits 0")

        # SIGTERM while an RTSP viewer plays a 15 s video: the viewer gets
        # the end of the stream (ffmpeg exits 0 with what it had)
        vdir = os.path.join(work, "long")
        os.makedirs(vdir)
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
                        "-i", "testsrc=size=320x240:rate=25:duration=15", "-c:v",
                        "mpeg2video", "-b:v", "800k", "-g", "12", "-f", "mpeg2video",
                        os.path.join(vdir, "long.m2v")], check=True, timeout=60)
        cport, rport, hport = free_port(), free_port(), free_port()
        s2log, p2log = os.path.join(work, "server2.log"), os.path.join(work, "proxy2.log")
        # an HLS dir that cannot hold segments (a regular file): the run fails
        nodir = os.path.join(work, "not-a-dir")
        open(nodir, "w").close()
        server = subprocess.Popen([server_exe, "--dir", vdir, "--port", str(cport),
                                   "--address", "127.0.0.1", "--insecure"],
                                  stdout=open(s2log, "w"), stderr=subprocess.STDOUT)
        procs.append(server)
        wait_log(s2log, "control port")
        proxy = subprocess.Popen([proxy_exe, "--server", f"127.0.0.1:{cport}", "--insecure",
                                  "--rtsp-port", str(rport), "--segment-duration", "1",
                                  "--prefix-dir", os.path.join(work, "p2"),
                                  "--http-port", str(hport), "--http-address", "127.0.0.1",
                                  "--hls-dir", nodir],
                                 stdout=open(p2log, "w"), stderr=subprocess.STDOUT)
        procs.append(proxy)
        wait_log(p2log, "HTTP on port")

        # an HLS run that fails: the waiting playlist request gets the
        # reason at once (not "playlist not ready" after 30 s), logged at
        # error level
        t0 = time.monotonic()
        try:
            st, body = get(f"http://127.0.0.1:{hport}/hls/long.m2v/index.m3u8")
        except urllib.error.HTTPError as e:
            st, body = e.code, e.read()
        took = time.monotonic() - t0
        body = body.decode(errors="replace").strip()
        check(st == 503 and body.startswith("HLS of long.m2v failed: ") and took < 20
              and wait_log(p2log, "error HLS of long.m2v failed: ", 5),
              f"a failed HLS run: {st} '{body}' after {took:.1f} s, logged as an error")
        rec = os.path.join(work, "rtsp.ts")
        viewer = subprocess.Popen(["ffmpeg", "-hide_banner", "-nostats", "-loglevel", "error",
                                   "-y", "-rtsp_transport", "tcp", "-i",
                                   f"rtsp://127.0.0.1:{rport}/video/long.m2v", "-c", "copy",
                                   "-f", "mpegts", rec], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        procs.append(viewer)
        wait_log(p2log, "playing long.m2v")
        time.sleep(2.5)
        t0 = time.monotonic()
        proxy.send_signal(signal.SIGTERM)
        vrc = viewer.wait(15)
        took = time.monotonic() - t0
        prc = proxy.wait(10)
        r = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v",
                            "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", rec],
                           capture_output=True, text=True)
        nums = [int(x) for x in r.stdout.replace(",", " ").split() if x.isdigit()]
        frames = nums[0] if nums else 0
        check(vrc == 0 and prc == 0 and 25 <= frames < 375 and took < 12
              and wait_log(p2log, "ending 1 session(s)", 1),
              f"SIGTERM with an RTSP viewer: viewer exit {vrc} after {took:.1f} s with "
              f"{frames} of 375 frames, proxy exit {prc}")
        server.send_signal(signal.SIGTERM)
        server.wait(10)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if failures:
            for name in ("server.log", "proxy.log", "fetch.log", "server2.log", "proxy2.log"):
                path = os.path.join(work, name)
                if os.path.exists(path):
                    print(f"--- {name}\n" + open(path).read()[-3000:])
    for name in ("server.log", "proxy.log", "fetch.log", "server2.log", "proxy2.log"):
        path = os.path.join(work, name)
        if os.path.exists(path):
            text = open(path).read()
            check("CRITICAL" not in text and "-WARNING **" not in text,
                  f"no GLib/GStreamer criticals or warnings in {name}")
    if not failures:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
