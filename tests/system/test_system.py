#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Loopback end-to-end test of twoflow-server + twoflow-proxy (suite 'system').

On 127.0.0.1 with random free ports: fetch the shared sample, a generated
MPEG-2 elementary stream and the same stream in a transport stream through
the proxy to files (decoded frame counts; byte-identical to the parsed
source, the transcoder passing through), once more over ERAP, with
strangers on 127.0.0.2 aiming TCP junk, forged ERAP and forged RTP at the
proxy's media ports (byte-identical all the same), and a Star
Wars trace excerpt (replayed live); pre-stage a prefix and fetch with
it; pull over RTSP with a stock client (rtspsrc ! decodebin) decoding every
frame while a second viewer is rejected by admission control (503 with a
reason), and a 250-frame stream decoded frame-exact; a fetching proxy killed mid-session leaves the server with no
session.

usage: test_system.py SERVER_EXE PROXY_EXE
"""
import hashlib
import json
import lzma
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

from twoflowlab.checks import check, failures, free_port, result_line  # noqa: E402
from twoflowlab.loopback import control, start_server  # noqa: E402

SOURCE = os.environ.get("TWOFLOW_SOURCE_ROOT",
                        os.path.join(os.path.dirname(__file__), "../.."))
MEDIA = os.environ.get("TWOFLOW_MEDIA", "tests/media")  # scripts/make-media.sh
SEGMENT = "1"


def run(desc, timeout=60):
    p = Gst.parse_launch(desc)
    p.set_state(Gst.State.PLAYING)
    m = p.get_bus().timed_pop_filtered(timeout * Gst.SECOND,
                                       Gst.MessageType.EOS | Gst.MessageType.ERROR)
    p.set_state(Gst.State.NULL)
    if m is None or m.type != Gst.MessageType.EOS:
        raise RuntimeError("pipeline failed: " + desc)


def count_frames(desc, timeout=60, hashes=None):
    """Decoded frames of a pipeline ending in '... ! decodebin'; (n, error).
    With a list as hashes, the MD5 of every decoded frame is appended."""
    p = Gst.parse_launch(desc + " ! fakesink name=sink sync=false")
    n = [0]

    def probe(_pad, info):
        n[0] += 1
        if hashes is not None:
            buf = info.get_buffer()
            ok, m = buf.map(Gst.MapFlags.READ)
            if ok:
                hashes.append(hashlib.md5(m.data).hexdigest())
                buf.unmap(m)
        return Gst.PadProbeReturn.OK

    p.get_by_name("sink").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, probe)
    p.set_state(Gst.State.PLAYING)
    m = p.get_bus().timed_pop_filtered(timeout * Gst.SECOND,
                                       Gst.MessageType.EOS | Gst.MessageType.ERROR)
    p.set_state(Gst.State.NULL)
    err = None
    if m is None:
        err = "timeout"
    elif m.type == Gst.MessageType.ERROR:
        e, dbg = m.parse_error()
        err = f"{e.message} {dbg}"
    return n[0], err


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    server_exe, proxy_exe = sys.argv[1], sys.argv[2]
    Gst.init(None)
    work = tempfile.mkdtemp(prefix="twoflow-system-")
    videos = os.path.join(work, "videos")
    os.makedirs(videos)
    procs = []
    try:
        shutil.copy(os.path.join(MEDIA, "greyramp.m2v"), videos)
        gen = os.path.join(videos, "ball.m2v")
        run("videotestsrc num-buffers=100 pattern=ball ! "
            "video/x-raw,width=352,height=288,framerate=25/1 ! "
            "mpeg2enc format=3 b-per-refframe=2 min-gop-size=12 max-gop-size=12 "
            f"! tee name=t t. ! queue ! filesink location={gen} "
            f"t. ! queue ! mpegvideoparse ! mpegtsmux ! filesink location={videos}/ball.ts")
        # 250 frames: the count that once lost its last frame over RTSP
        run("videotestsrc num-buffers=250 pattern=ball ! "
            "video/x-raw,width=352,height=288,framerate=25/1 ! "
            "mpeg2enc format=3 b-per-refframe=2 min-gop-size=12 max-gop-size=12 "
            f"! filesink location={videos}/ball250.m2v")
        with lzma.open(os.path.join(SOURCE, "data", "star-wars-iv.txt.xz"), "rt") as f, \
                open(os.path.join(videos, "sw.txt"), "w") as g:
            g.writelines(f.readlines()[:100])
        rport = free_port()
        # its output to a file: a pipe nobody reads fills up and blocks it
        server, cport = start_server(server_exe, videos,
                                     os.path.join(work, "server.log"))
        procs.append(server)
        proxy_base = [proxy_exe, "--server", f"127.0.0.1:{cport}", "--insecure",
                      "--segment-duration", SEGMENT,
                      "--prefix-dir", os.path.join(work, "prefix")]

        # 1. fetch to files: decodable, right frame count, byte-identical
        for name, frames in (("greyramp.m2v", 25), ("ball.m2v", 100), ("ball.ts", 100)):
            out = os.path.join(work, name + ".out.m2v")
            parsed = os.path.join(work, name + ".parsed.m2v")
            res = subprocess.run(proxy_base + ["--fetch", name, "--output", out],
                                 capture_output=True, text=True, timeout=60)
            rep = result_line(res.stdout, "FETCH-RESULT")
            check(res.returncode == 0 and rep is not None and rep["result"] == "ok",
                  f"fetch {name}: exit {res.returncode} {res.stderr.strip()[-200:]}")
            if res.returncode != 0:
                continue
            n, err = count_frames(f"filesrc location={out} ! mpegvideoparse ! decodebin")
            check(n == frames and err is None, f"fetch {name}: decoded {n}/{frames} frames ({err})")
            check(rep["merge"]["output-frames"] == frames and rep["merge"]["E_f"] == 0,
                  f"fetch {name}: merge output {rep['merge']['output-frames']}, E_f {rep['merge']['E_f']}")
            src = os.path.join(videos, name if name.endswith(".m2v") else "ball.m2v")
            run(f"filesrc location={src} ! mpegvideoparse ! filesink location={parsed}")
            check(sha(parsed) == sha(out), f"fetch {name}: byte-identical to the parsed source")

        # 1b. ERAP as the essential transport: same bytes
        out = os.path.join(work, "ball-erap.m2v")
        res = subprocess.run(proxy_base + ["--essential", "erap", "--fetch", "ball.m2v",
                                           "--output", out],
                             capture_output=True, text=True, timeout=60)
        rep = result_line(res.stdout, "FETCH-RESULT")
        check(res.returncode == 0 and rep and rep["merge"]["output-frames"] == 100
              and rep["merge"]["E_f"] == 0, f"fetch over ERAP: {rep and rep['merge']}")
        check(res.returncode == 0 and sha(out) == sha(os.path.join(work, "ball.m2v.parsed.m2v")),
              "fetch over ERAP: byte-identical to the parsed source")

        # 1d. plaintext is lab-only, not open (issue 24): strangers on
        # 127.0.0.2 aim at the proxy's media ports (fixed with
        # --essential-ports/--enhanced-ports) before and during a fetch: a
        # TCP connection with junk to the essential port (before:
        # tcpserversrc took it, 0 frames), forged ERAP data packets and
        # forged RTP (sequence numbers far ahead: before, the rUDP level
        # went to 0). The receivers take media only from the server's
        # address: the fetches are byte-identical.
        for essential in ("ctcp", "erap"):
            ess_port = free_port(socket.SOCK_STREAM if essential == "ctcp"
                                 else socket.SOCK_DGRAM)
            enh_port = free_port(socket.SOCK_DGRAM)
            stop = threading.Event()
            tries = {"tcp": 0, "udp": 0}

            def stranger():
                rtp = bytes([0x80, 96]) + bytes(10) + bytes(188)
                erap = (1).to_bytes(4, "big") + (0xc0000000).to_bytes(4, "big") + b"forged"
                while not stop.is_set():
                    if essential == "ctcp":
                        try:
                            with socket.socket() as t:
                                t.bind(("127.0.0.2", 0))
                                t.settimeout(0.2)
                                t.connect(("127.0.0.1", ess_port))
                                t.sendall(b"forged essential data" * 100)
                                tries["tcp"] += 1
                        except OSError:
                            pass
                    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                        u.bind(("127.0.0.2", 0))
                        seq = 1000 + 500 * tries["udp"]
                        u.sendto(rtp[:2] + (seq % 65536).to_bytes(2, "big") + rtp[4:],
                                 ("127.0.0.1", enh_port))
                        if essential == "erap":
                            u.sendto(erap, ("127.0.0.1", ess_port))
                        tries["udp"] += 1
                    time.sleep(0.005)

            th = threading.Thread(target=stranger, daemon=True)
            th.start()
            time.sleep(0.2)
            out = os.path.join(work, f"ball-strangers-{essential}.m2v")
            res = subprocess.run(proxy_base + ["--essential", essential,
                                               "--essential-ports", str(ess_port),
                                               "--enhanced-ports", str(enh_port),
                                               "--fetch", "ball.m2v", "--output", out],
                                 capture_output=True, text=True, timeout=60)
            stop.set()
            th.join()
            rep = result_line(res.stdout, "FETCH-RESULT") or {}
            rs = rep.get("rudpsrc", {})
            check(res.returncode == 0 and rep.get("merge", {}).get("output-frames") == 100
                  and rep["merge"]["E_f"] == 0
                  and sha(out) == sha(os.path.join(work, "ball.m2v.parsed.m2v")),
                  f"fetch ({essential}) with strangers on the media ports: exit "
                  f"{res.returncode}, {rep.get('merge')}")
            check(rs.get("foreign-packets", 0) > 0 and rs.get("lost") == 0,
                  f"fetch ({essential}) with strangers: rudpsrc foreign-packets "
                  f"{rs.get('foreign-packets')}, lost {rs.get('lost')}")
            if essential == "erap":
                es = rep.get("erapsrc", {})
                check(es.get("foreign", 0) > 0, f"fetch (erap) with strangers: "
                      f"erapsrc foreign {es.get('foreign')}")
            else:
                check(tries["tcp"] > 0, "a stranger connected to the essential port")
            print(f"strangers ({essential}): {tries['tcp']} TCP connections, "
                  f"{tries['udp']} UDP rounds; rudpsrc foreign-packets "
                  f"{rs.get('foreign-packets')}, lost {rs.get('lost')}; erapsrc "
                  f"foreign {rep.get('erapsrc', {}).get('foreign')}")

        # 1c. a frame trace (Star Wars, first 100 frames) through the server
        res = subprocess.run(proxy_base + ["--fetch", "sw.txt", "--output",
                                           os.path.join(work, "sw.out")],
                             capture_output=True, text=True, timeout=60)
        rep = result_line(res.stdout, "FETCH-RESULT")
        m = rep["merge"] if rep else {}
        # a trace is paced at a constant session total by default
        # (--enhanced-rate auto: total for traces, docs/system.md "Which
        # pacing is the default"): the enhanced flow is read ahead and
        # paced, not played at its frames' times, so the fetch ends a
        # little before the last frame's time (3.96 s) but is no burst
        check(res.returncode == 0 and m.get("output-frames") == 100 and m.get("E_f") == 0
              and m.get("received-i") == 9 and rep["elapsed"] >= 2.5,
              f"fetch of a trace: {m}, {rep and rep['elapsed']:.2f} s (paced: >= 2.5 s; "
              f"a fetch not paced takes < 1 s)")
        # the enhanced flow was paced (the rate changed with the essential
        # flow's segments), the session's lead is the segment (no start-up
        # ramp under a constant total) and the proxy's playout buffer is
        # that lead plus the jitter (400 ms)
        rep = rep or {}
        check(rep.get("smoothing") is True and rep.get("enhanced_rate_changes", 0) >= 1
              and rep.get("lead") == 1.0 and rep.get("playout_depth_ms") == 1400,
              f"fetch of a trace: paced ({rep.get('smoothing')}, "
              f"{rep.get('enhanced_rate_changes')} rate changes), lead {rep.get('lead')} s, "
              f"playout buffer {rep.get('playout_depth_ms')} ms")

        # 2. pre-staged prefix: the server skips segment 0 of the essential flow
        res = subprocess.run(proxy_base + ["--prestage", "ball.m2v"],
                             capture_output=True, text=True, timeout=60)
        check(res.returncode == 0 and os.path.getsize(
            os.path.join(work, "prefix", "ball.m2v.prefix.twf")) > 0, "prestage ball.m2v")
        out = os.path.join(work, "ball-prefix.m2v")
        res = subprocess.run(proxy_base + ["--fetch", "ball.m2v", "--output", out],
                             capture_output=True, text=True, timeout=60)
        rep = result_line(res.stdout, "FETCH-RESULT")
        check(res.returncode == 0 and rep and rep["merge"]["prefix-frames"] > 0
              and rep["merge"]["output-frames"] == 100,
              f"fetch with prefix: {rep and rep['merge']}")
        check(res.returncode == 0 and sha(out) == sha(os.path.join(work, "ball.m2v.parsed.m2v")),
              "fetch with prefix: byte-identical")
        # a trace with a prefix: every essential segment after the prefix is
        # there when it starts playing (segment k at k*T after the start);
        # the server once sent the caps record as a segment of its own, a few
        # bytes/s, and made every segment late
        res = subprocess.run(proxy_base + ["--prestage", "sw.txt"],
                             capture_output=True, text=True, timeout=60)
        arrivals = os.path.join(work, "sw-prefix.arrivals")
        res = subprocess.run(proxy_base + ["--fetch", "sw.txt", "--output",
                                           os.path.join(work, "sw-prefix.out"),
                                           "--arrivals", arrivals],
                             capture_output=True, text=True, timeout=60)
        rep = result_line(res.stdout, "FETCH-RESULT")
        check(res.returncode == 0 and rep and rep["merge"]["prefix-frames"] > 0
              and rep["merge"]["output-frames"] == 100 and rep["merge"]["E_f"] == 0,
              f"fetch of a trace with prefix: {rep and rep['merge']}")
        late, started, lead, last = [], None, 0.0, {}
        if os.path.exists(arrivals):
            with open(arrivals) as f:
                for line in f:
                    p = line.split()
                    if line.startswith("# started_us"):
                        started, lead = int(p[2]), float(p[4])
                    elif len(p) == 6 and not line.startswith("#"):
                        last[int(p[2])] = int(p[0])
        T = float(SEGMENT)
        ends = {}
        for k, us in sorted(last.items()):
            t = (us - started) / 1e6 - lead if started is not None else None
            ends[k] = t is not None and round(t, 2)
            if t is None or t > k * T + 0.5:
                late.append(k)
        check(started is not None and min(last, default=0) >= 1 and len(last) >= 3
              and not late,
              f"fetch of a trace with prefix: segments on time (last frame of "
              f"each, s: {ends}; late: {late})")

        # 3. RTSP: one viewer decodes every frame; a second is rejected
        info = control(cport, {"cmd": "INFO", "video": "greyramp.m2v"})
        capacity = int(info["peak_rate"] * 1.5)
        proxy = subprocess.Popen(proxy_base + ["--rtsp-port", str(rport),
                                               "--rtsp-address", "127.0.0.1",
                                               "--wan-capacity", str(capacity)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(proxy)
        time.sleep(0.5)
        url = f"rtsp://127.0.0.1:{rport}/video/greyramp.m2v"
        first = {}

        def viewer():
            first["n"], first["err"] = count_frames(
                f"rtspsrc location={url} protocols=tcp ! decodebin", timeout=30)

        t = threading.Thread(target=viewer)
        t.start()
        time.sleep(1.0)
        n2, err2 = count_frames(f"rtspsrc location={url} protocols=tcp ! decodebin", timeout=15)
        t.join()
        check(first["err"] is None and first["n"] >= 24,
              f"RTSP viewer decoded {first['n']}/25 frames ({first['err']})")
        check(first["n"] == 25, f"RTSP viewer decoded every frame ({first['n']}/25)")
        check(n2 == 0 and err2 is not None and "503" in err2 and "WAN capacity" in err2,
              f"second viewer rejected with 503 and a reason: {err2 and err2[-160:]}")
        proxy.send_signal(signal.SIGTERM)
        pout = proxy.communicate(timeout=10)[0]
        decisions = [json.loads(line[10:]) for line in pout.splitlines()
                     if line.startswith("ADMISSION ")]
        check(any(d["decision"] == "reject" for d in decisions)
              and any(d["decision"] == "admit" for d in decisions),
              f"admission log: {[d['decision'] for d in decisions]}")

        # 3b. RTSP, stock client, no prefix (the start-up ramp): every one of 250
        # frames decoded, identical to decoding the source file
        proxy = subprocess.Popen(proxy_base + ["--rtsp-port", str(rport),
                                               "--rtsp-address", "127.0.0.1"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(proxy)
        time.sleep(0.5)
        ref, got = [], []
        count_frames(f"filesrc location={videos}/ball250.m2v ! mpegvideoparse ! decodebin",
                     hashes=ref)
        n, err = count_frames(f"rtspsrc location=rtsp://127.0.0.1:{rport}/video/ball250.m2v "
                              "protocols=tcp ! decodebin", timeout=40, hashes=got)
        check(err is None and n == 250 and len(ref) == 250,
              f"RTSP viewer decoded every frame of ball250.m2v ({n}/250, {err})")
        check(got == ref, "RTSP viewer's frames identical to decoding the source "
              f"({sum(a == b for a, b in zip(got, ref))}/{len(ref)} equal)")
        proxy.send_signal(signal.SIGTERM)
        proxy.communicate(timeout=10)

        # 4. a client vanishing mid-session leaves the server clean
        vanish = subprocess.Popen(proxy_base + ["--fetch", "ball.m2v", "--output",
                                                os.path.join(work, "vanish.m2v")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        active = 0
        for _ in range(60):
            time.sleep(0.05)
            active = control(cport, {"cmd": "STATUS"})["sessions"]
            if active:
                break
        check(active == 1, "session active before the client vanishes")
        time.sleep(1.0)
        vanish.kill()
        vanish.wait()
        for _ in range(100):
            active = control(cport, {"cmd": "STATUS"})["sessions"]
            if active == 0:
                break
            time.sleep(0.05)
        check(active == 0, f"server sessions back to 0 after the client vanished ({active})")
        check(server.poll() is None, "server still running")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
        if os.environ.get("TWOFLOW_KEEP") is None:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all system checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
