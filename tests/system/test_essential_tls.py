#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The essential cTCP/TCP flow over TLS when the control channel is TLS, and
the bounded connect (suite 'system', ~35 s, loopback; docs/security.md,
"cTCP over TLS"). Checked:

  * fetches over a TLS control channel: cTCP direct (the server connects),
    cTCP --nat (the proxy connects) and plain TCP (--essential tcp): the
    server's ctcpsink reports TLS 1.3, no late segment, and the fetched
    file is byte-identical to the same fetch from a plaintext (--insecure)
    server;
  * PLAY over TLS without essential_token is refused;
  * the server's listening essential port (nat): a plaintext client gets
    nothing of the stream, a TLS client with a wrong token gets nothing,
    the right token gets the whole essential flow;
  * a proxy address that silently drops the server's SYN (a listener with
    a full accept queue): the control channel keeps answering during the
    stall, the session ends after --connect-timeout with an error event,
    and the server serves the next request.
"""
import json
import os
import random
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import shutil

from twoflowlab.checks import (TlsControl, check, failures, free_port, mpeg2_clip_argv,
                               result_line, stop_programs, wait_port)

SOURCE = os.environ.get("TWOFLOW_SOURCE_ROOT",
                        os.path.join(os.path.dirname(__file__), "../.."))


def session_ends(slog):
    with open(slog) as f:
        return [json.loads(l.split(" ", 1)[1]) for l in f
                if l.startswith("SESSION-END ")]


def main():
    server_exe, proxy_exe = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="twoflow-esstls-")
    procs = []
    try:
        certs = os.path.join(work, "certs")
        subprocess.run([os.path.join(SOURCE, "scripts", "make-test-certs.sh"), certs],
                       check=True)
        ca = os.path.join(certs, "ca.pem")
        token = open(os.path.join(certs, "tokens")).read().split()[1]
        videos = os.path.join(work, "videos")
        os.makedirs(videos)
        subprocess.run(mpeg2_clip_argv(os.path.join(videos, "clip.m2v"), 75),
                       check=True, timeout=120)
        tport, pport = free_port(), free_port()
        slog = os.path.join(work, "server-tls.log")
        procs.append(subprocess.Popen(
            [server_exe, "--dir", videos, "--port", str(tport), "--address", "127.0.0.1",
             "--tls-cert", os.path.join(certs, "server.pem"),
             "--tls-key", os.path.join(certs, "server.key"),
             "--tokens", os.path.join(certs, "tokens"), "--connect-timeout", "2"],
            stdout=open(slog, "w"), stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen(
            [server_exe, "--dir", videos, "--port", str(pport), "--address", "127.0.0.1",
             "--insecure"],
            stdout=open(os.path.join(work, "server-plain.log"), "w"),
            stderr=subprocess.STDOUT))
        wait_port(tport)
        wait_port(pport)

        def fetch(port, extra):
            out = os.path.join(work, f"out-{random.randrange(1 << 30)}.m2v")
            res = subprocess.run([proxy_exe, "--server", f"127.0.0.1:{port}",
                                  "--segment-duration", "1", "--rtsp-port", "0"]
                                 + extra + ["--fetch", "clip.m2v", "--output", out],
                                 capture_output=True, text=True, timeout=60)
            rep = result_line(res.stdout, "FETCH-RESULT")
            data = open(out, "rb").read() if os.path.exists(out) else b""
            return res, rep, data

        # 1. fetches: TLS essential flow, byte-identical to plaintext
        tls_args = ["--tls-ca", ca, "--token", token]
        for what, extra in (("cTCP, the server connects", []),
                            ("cTCP, --nat: the proxy connects", ["--nat"]),
                            ("plain TCP (--essential tcp)", ["--essential", "tcp"])):
            res, rep, ref = fetch(pport, ["--insecure"] + extra)
            res2, rep2, got = fetch(tport, tls_args + extra)
            ends = session_ends(slog)
            st = ends[-1]["essential_stats"] if ends else {}
            check(res.returncode == 0 and res2.returncode == 0 and rep2
                  and rep2["merge"]["output-frames"] == 75 and len(ref) > 0
                  and got == ref and st.get("tls") is True
                  and st.get("tls-protocol") == "TLS 1.3"
                  and st.get("segments-late") == 0
                  and st.get("bytes-acked") == rep2["essential_bytes"],
                  f"{what}: essential flow over {st.get('tls-protocol')} "
                  f"({st.get('tls-ciphersuite')}), {st.get('bytes-acked')} stream bytes in "
                  f"{st.get('wire-bytes-sent')} wire bytes, late {st.get('segments-late')}, "
                  f"min slack {st.get('min-deadline-slack', 0) / 1e6:.0f} ms; "
                  f"{len(got)} bytes identical to plaintext: {got == ref} "
                  f"(rc {res2.returncode} {res2.stderr.strip()[-200:]})")

        # 2. PLAY without essential_token over TLS is refused
        c = TlsControl(tport, ca, token=token)
        r = c.request({"cmd": "PLAY", "video": "clip.m2v", "nat": True,
                       "flows": "essential", "segment_duration": 1})
        check(r and r.get("ok") is False and "essential_token" in r.get("error", ""),
              f"PLAY over TLS without essential_token refused: {r}")

        # 3. the server's listening (nat) TLS essential port
        etoken = os.urandom(16).hex()
        r = c.request({"cmd": "PLAY", "video": "clip.m2v", "nat": True,
                       "flows": "essential", "segment_duration": 1,
                       "essential_token": etoken})
        eport = r.get("essential_port") if r else None
        check(r and r.get("ok") and eport, f"PLAY nat with a token: port {eport}")
        with socket.create_connection(("127.0.0.1", eport), timeout=3) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            got = b""
            try:
                while True:
                    d = s.recv(4096)
                    if not d:
                        break
                    got += d
            except OSError:
                pass
        check(len(got) <= 7, f"plaintext to the TLS essential port: {len(got)} bytes "
              f"(at most a TLS alert)")
        ctx = ssl.create_default_context(cafile=ca)

        def tls_receive(tok):
            raw = socket.create_connection(("127.0.0.1", eport), timeout=5)
            data = b""
            try:
                s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
                s.sendall(tok.encode())
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    data += d
            except (OSError, ssl.SSLError):
                pass
            raw.close()
            return data

        bad = tls_receive("f" * 32)
        check(bad == b"", f"TLS with a wrong token: {len(bad)} bytes")
        good = tls_receive(etoken)
        ev = c.next()
        while ev and ev.get("event") == "progress":
            ev = c.next()
        st = (ev or {}).get("essential_stats", {})
        check(len(good) > 0 and len(good) == st.get("bytes-acked")
              and st.get("connections-refused") == 2,
              f"TLS with the token: {len(good)} bytes, the whole flow "
              f"({st.get('bytes-acked')}); refused before: {st.get('connections-refused')}")
        c.close()

        # 4. the proxy's address drops the SYN: nothing else stalls
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(0)
        filler = socket.create_connection(ls.getsockname(), timeout=2)
        c = TlsControl(tport, ca, token=token)
        t0 = time.monotonic()
        r = c.request({"cmd": "PLAY", "video": "clip.m2v", "flows": "essential",
                       "segment_duration": 1, "essential_port": ls.getsockname()[1],
                       "essential_token": etoken})
        check(r and r.get("ok"), f"PLAY to an address that drops the SYN: {r}")
        other = TlsControl(tport, ca, token=token)
        worst, n = 0.0, 0
        while time.monotonic() - t0 < 1.8:
            t = time.monotonic()
            st = other.request({"cmd": "STATUS"})
            worst = max(worst, time.monotonic() - t)
            n += 1 if st and st.get("ok") else 0
            time.sleep(0.1)
        # (a channel blocked by the stall answers only after the 2 s
        # connect timeout; a loaded machine answers slower, not that slow)
        check(n >= 4 and worst < 1.0,
              f"the control channel answers during the stall: {n} STATUS, "
              f"slowest {worst * 1000:.0f} ms")
        ev = c.next()
        while ev and ev.get("event") == "progress":
            ev = c.next()
        dt = time.monotonic() - t0
        with open(slog) as f:
            log = f.read()
        check(ev and ev.get("event") == "error" and "Could not connect" in ev.get("message", "")
              and "connect-timeout" in log and 1.8 < dt < 15,
              f"the session ends after --connect-timeout 2: {dt:.1f} s, {ev}")
        st = other.request({"cmd": "STATUS"})
        check(st and st.get("sessions") == 0, f"no session left: {st}")
        res, rep, got = fetch(tport, tls_args)
        check(res.returncode == 0 and rep and rep["merge"]["output-frames"] == 75,
              "a fetch afterwards is served")
        other.close()
        c.close()
        filler.close()
        ls.close()
    finally:
        stop_programs(("twoflow-server (TLS)", "twoflow-server (plain)"), procs)
        if not failures:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s); work dir {work}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
