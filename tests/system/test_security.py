#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Attacks on the control channel of twoflow-server, on loopback (suite
'system', ~40 s; docs/security.md). Throw-away certificates are made with
scripts/make-test-certs.sh (certtool). Checked:

  * proxies fetch over TLS: CA file + token, pinned fingerprint + client
    certificate; a wrong pin, a plaintext proxy, a wrong token fail;
  * an unauthenticated connection (no AUTH, a wrong token, not JSON) gets
    one error line, then the connection closes; plaintext to the TLS port
    gets no reply;
  * PLAY with a host other than the control peer is refused (no
    reflection): that address gets one probe no larger than the request;
    with the probe's token echoed as host_token the PLAY is accepted;
  * per-client session limit: over it, refused with a reason;
  * a running fetch while 1,000 connections and huge lines hit the server:
    the fetch completes with every frame, the server's RSS stays bounded,
    the server answers an authenticated client afterwards;
  * the proxy's RTSP server: basic authentication (401 without, 200 with)
    and RTSPS; its HTTP side: basic authentication (401 without, 200 with;
    /healthz open).
"""
import base64
import json
import os
import random
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import shutil

from twoflowlab.checks import (TlsControl as Control, check, failures, free_port,
                               mpeg2_clip_argv, result_line)
from twoflowlab.loopback import raise_fd_limit, test_certs


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    server_exe, proxy_exe = sys.argv[1], sys.argv[2]
    raise_fd_limit()
    work = tempfile.mkdtemp(prefix="twoflow-security-")
    procs = []
    try:
        certs = os.path.join(work, "certs")
        ca, _, token = test_certs(certs)
        other = os.path.join(work, "other")
        test_certs(other)
        pin = open(os.path.join(certs, "server.sha256")).read().strip()
        videos = os.path.join(work, "videos")
        os.makedirs(videos)
        # 250 frames (10 s) for the fetch under attack, 25 for the others
        for n, name in ((25, "short.m2v"), (250, "long.m2v")):
            subprocess.run(mpeg2_clip_argv(os.path.join(videos, name), n),
                           check=True, timeout=120)
        cport = free_port()
        slog = os.path.join(work, "server.log")
        server = subprocess.Popen(
            [server_exe, "--dir", videos, "--port", str(cport), "--address", "127.0.0.1",
             "--tls-cert", os.path.join(certs, "server.pem"),
             "--tls-key", os.path.join(certs, "server.key"),
             "--tokens", os.path.join(certs, "tokens"),
             "--tls-client-ca", ca, "--max-client-sessions", "2",
             "--max-connections", "64", "--auth-timeout", "3"],
            stdout=open(slog, "w"), stderr=subprocess.STDOUT)
        procs.append(server)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", cport), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        # the server needs TLS or an explicit --insecure
        r = subprocess.run([server_exe, "--dir", videos, "--port", "0"],
                           capture_output=True, text=True, timeout=10)
        check(r.returncode == 2 and "--insecure" in r.stderr,
              f"server without --tls-cert or --insecure refuses to start: {r.stderr.strip()}")

        base = [proxy_exe, "--server", f"127.0.0.1:{cport}", "--segment-duration", "1",
                "--prefix-dir", os.path.join(work, "prefix")]

        def fetch(extra, name="short.m2v", timeout=60):
            out = os.path.join(work, f"out-{random.randrange(1 << 30)}.m2v")
            res = subprocess.run(base + extra + ["--fetch", name, "--output", out],
                                 capture_output=True, text=True, timeout=timeout)
            return res, result_line(res.stdout, "FETCH-RESULT")

        # 1. proxies over TLS
        res, rep = fetch(["--tls-ca", ca, "--token", token])
        check(res.returncode == 0 and rep and rep["merge"]["output-frames"] == 25,
              f"fetch over TLS (CA file, token): {res.returncode} {res.stderr.strip()[-200:]}")
        res, rep = fetch(["--tls-pin", pin, "--tls-cert", os.path.join(certs, "client.pem"),
                          "--tls-key", os.path.join(certs, "client.key")])
        check(res.returncode == 0 and rep and rep["merge"]["output-frames"] == 25,
              f"fetch over TLS (pinned, client certificate): {res.returncode} "
              f"{res.stderr.strip()[-200:]}")
        # media keys travel in PLAY over TLS: ERAP sealed, rUDP as SRTP
        res, rep = fetch(["--tls-ca", ca, "--token", token, "--essential", "erap"])
        with open(slog) as f:
            ends = [json.loads(l.split(" ", 1)[1]) for l in f if l.startswith("SESSION-END ")]
        check(res.returncode == 0 and rep and rep["merge"]["output-frames"] == 25
              and rep["merge"]["E_f"] == 0 and rep.get("rudpsrc", {}).get("srtp") is True
              and ends and ends[-1]["essential_stats"].get("encrypted") is True,
              f"fetch over TLS with ERAP: keyed from the control channel (ERAP encrypted "
              f"{ends and ends[-1]['essential_stats'].get('encrypted')}, rUDP SRTP "
              f"{rep and rep.get('rudpsrc', {}).get('srtp')})")
        # another pin: its first byte changed ("00" + pin[2:] was the pin
        # itself for one certificate in 256)
        wrong = ("ff" if pin[:2].lower() != "ff" else "00") + pin[2:]
        res, rep = fetch(["--tls-pin", wrong, "--token", token])
        check(res.returncode != 0 and "does not match the pinned" in res.stderr,
              f"a wrong pin: no connection ({res.stderr.strip()[-120:]})")
        res, rep = fetch(["--tls-ca", os.path.join(other, "ca.pem"), "--token", token])
        check(res.returncode != 0, "a server certificate from another CA: no connection")
        res, rep = fetch(["--tls-ca", ca, "--tls-cert", os.path.join(other, "client.pem"),
                          "--tls-key", os.path.join(other, "client.key")])
        check(res.returncode != 0, "a client certificate from another CA: no connection")
        res, rep = fetch(["--insecure", "--token", token])
        check(res.returncode != 0, "a plaintext proxy gets nothing from a TLS server")
        res, rep = fetch(["--tls-ca", ca, "--token", "x" * 48])
        check(res.returncode != 0 and "unauthenticated" in res.stderr,
              f"a wrong token: refused ({res.stderr.strip()[-120:]})")

        # 2. unauthenticated connections: one error line, then closed
        for what, data in (("no AUTH", b'{"cmd":"LIST"}\n'),
                           ("a wrong token", b'{"cmd":"AUTH","token":"' + b"y" * 40 + b'"}\n'),
                           ("not JSON", b"GET / HTTP/1.0\r\n\r\n")):
            c = Control(cport, ca)
            c.send_raw(data)
            line = c.f.readline()
            r = json.loads(line) if line else {}
            check(r.get("ok") is False and "unauthenticated" in r.get("error", "")
                  and "videos" not in r and c.closed(),
                  f"unauthenticated ({what}): one error line, closed: {line[:100]!r}")
            c.close()
        c = Control(cport, ca)
        t0 = time.monotonic()
        line = c.f.readline()
        closed = b"unauthenticated" in line and c.closed()
        # (after the 3 s timeout; the upper bound only tells it from "never")
        check(closed and 2.5 < time.monotonic() - t0 < 20,
              f"a connection that never authenticates is closed after --auth-timeout "
              f"({time.monotonic() - t0:.1f} s)")
        c.close()
        with socket.create_connection(("127.0.0.1", cport), timeout=5) as s:
            s.sendall(b'{"cmd":"LIST"}\n')
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            check(b"videos" not in data and b"short.m2v" not in data,
                  f"plaintext to the TLS port: no answer ({data[:40]!r})")

        # 3. no reflection: PLAY to a third address is refused; the only
        # thing the third address gets is one probe with a validation token,
        # no larger than the request; echoed back as host_token, the PLAY is
        # accepted (the address proved it asked)
        c = Control(cport, ca)
        r = c.request({"cmd": "AUTH", "token": token})
        check(r and r.get("ok") and r.get("identity") == "proxy1",
              f"AUTH with a token: {r}")
        victim = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        victim.bind(("127.0.0.2", 0))
        victim.settimeout(2)
        vport = victim.getsockname()[1]

        def recv_all(wait):
            victim.settimeout(wait)
            got = []
            try:
                while True:
                    got.append(victim.recv(65536))
            except socket.timeout:
                pass
            return got

        req = {"cmd": "PLAY", "video": "short.m2v", "essential": "erap",
               "flows": "essential", "host": "127.0.0.2", "essential_port": vport}
        req_len = len(json.dumps(req)) + 1
        r = c.request(req)
        check(r and r.get("ok") is False and "no reflection" in r.get("error", "")
              and "host_token" in r.get("error", ""),
              f"PLAY to a third address refused: {r}")
        got = recv_all(1.0)
        probe = got[0] if got else b""
        check(len(got) == 1 and probe.startswith(b"TWOFLOW-VALIDATE ")
              and len(probe) <= req_len,
              f"the third address got one probe only: {len(got)} datagram(s), "
              f"{len(probe)} bytes for a {req_len}-byte request")
        tok = probe.split()[1].decode() if probe else "0.0"
        forged = tok[:-1] + ("0" if tok[-1] != "0" else "1")
        r = c.request(dict(req, host_token=forged))
        check(r and r.get("ok") is False and "invalid" in r.get("error", ""),
              f"PLAY with a forged host_token refused: {r.get('error') if r else r}")
        recv_all(0.3)
        r = c.request(dict(req, host_token=tok))
        check(r and r.get("ok") is True, f"PLAY with the echoed host_token accepted: {r}")
        got = recv_all(1.5)
        check(len(got) > 0 and not got[0].startswith(b"TWOFLOW-VALIDATE"),
              f"media reach the validated address: {len(got)} datagrams")
        if r and r.get("session"):
            c.request({"cmd": "TEARDOWN", "session": r["session"]})
        victim.close()

        # 4. per-client session limit (--max-client-sessions 2): the third
        # PLAY of identity proxy1 is refused, the connection stays usable
        sinks, oks = [], []
        for _ in range(3):
            sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sink.bind(("127.0.0.1", 0))
            sinks.append(sink)
            oks.append(c.request({"cmd": "PLAY", "video": "long.m2v", "essential": "erap",
                                  "flows": "essential",
                                  "essential_port": sink.getsockname()[1]}))
        check(oks[0].get("ok") and oks[1].get("ok") and oks[2].get("ok") is False
              and "too many sessions" in oks[2].get("error", ""),
              f"session limit: third PLAY refused ({oks[2]})")
        r = c.request({"cmd": "STATUS"})
        check(r and r.get("ok") and r.get("sessions") == 2,
              f"the connection still serves after a refusal: {r}")
        c.close()
        for sink in sinks:
            sink.close()
        time.sleep(1.0)

        # 5. a fetch under attack: 1,000 connections and huge lines
        out = os.path.join(work, "attacked.m2v")
        fetcher = subprocess.Popen(base + ["--tls-ca", ca, "--token", token, "--fetch",
                                           "long.m2v", "--output", out],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(fetcher)
        time.sleep(2.0)
        rss0 = rss_kb(server.pid)
        huge_errors = []
        huge_ready = threading.Semaphore(0)

        def huge(authenticated):
            h = None
            try:
                h = Control(cport, ca)
                if authenticated:
                    h.request({"cmd": "AUTH", "token": token})
            except (OSError, ssl.SSLError):
                pass
            huge_ready.release()                # connected (or not): the flood may start
            try:
                if h is None:
                    raise OSError("not connected")
                chunk = b"a" * 65536
                for _ in range(160):            # 10 MB without a newline
                    h.send_raw(chunk)
            except (OSError, ssl.SSLError):
                pass                            # closed by the server: expected
            if h is None:                       # refused at connect (the flood)
                huge_errors.append("")
                return
            try:
                line = h.f.readline()
                huge_errors.append(json.loads(line).get("error", "") if line else "")
            except (OSError, ssl.SSLError, ValueError):
                huge_errors.append("")
            h.close()

        threads = [threading.Thread(target=huge, args=(i % 2 == 0,)) for i in range(8)]
        for t in threads:
            t.start()
        # the huge lines' connections first (under load the flood's
        # connections took the server's accept queue before them)
        for t in threads:
            huge_ready.acquire(timeout=30)
        flood, connected = [], 0
        for i in range(1000):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(2)
            try:
                s.connect(("127.0.0.1", cport))
                connected += 1
            except OSError:
                pass
            flood.append(s)
        for t in threads:
            t.join(30)
        time.sleep(2.0)
        rss1 = rss_kb(server.pid)
        for s in flood:
            s.close()
        # the server's own account: each huge line refused without being
        # kept; the reply reaches a client that is still sending only when
        # it reads it before the close's RST (under load 3 of 8 did)
        with open(slog) as f:
            refused_long = sum("refused: line too long" in l for l in f)
        check(refused_long >= 6 and any("line too long" in e for e in huge_errors),
              f"huge lines: refused with 'line too long' ({refused_long} of 8 in the "
              f"server's log; the clients read: {huge_errors})")
        check(rss1 - rss0 < 64 * 1024,
              f"1,000 connections ({connected} accepted by TCP) + 8 x 10 MB lines: "
              f"server RSS {rss0 // 1024} -> "
              f"{rss1 // 1024} MB (bound: +64 MB)")
        try:
            fout, ferr = fetcher.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            fetcher.kill()
            fout, ferr = fetcher.communicate()
        rep = result_line(fout, "FETCH-RESULT")
        check(fetcher.returncode == 0 and rep and rep["merge"]["output-frames"] == 250
              and rep["merge"]["E_f"] == 0,
              f"the fetch under attack completed with every frame: "
              f"{rep and rep['merge'].get('output-frames')} {ferr.strip()[-200:]}")
        time.sleep(4.0)        # the flood's connections time out (--auth-timeout 3)
        c = Control(cport, ca)
        r = c.request({"cmd": "AUTH", "token": token})
        r = r and c.request({"cmd": "STATUS"})
        check(r and r.get("ok") and r.get("refused", 0) > 0,
              f"after the flood the server answers (refused {r and r.get('refused')}, "
              f"clients {r and r.get('clients')})")
        c.close()

        # 6. viewers: RTSP basic authentication and RTSPS
        rport, tport, hport = free_port(), free_port(), free_port()
        plog = os.path.join(work, "proxy.log")
        proxy = subprocess.Popen(base + ["--tls-ca", ca, "--token", token,
                                         "--rtsp-port", str(rport), "--rtsp-user", "viewer",
                                         "--rtsp-password", "s3cret",
                                         "--http-port", str(hport), "--http-user", "ops",
                                         "--http-password", "h77p-s3cret",
                                         "--hls-dir", os.path.join(work, "hls")],
                                 stdout=open(plog, "w"), stderr=subprocess.STDOUT)
        procs.append(proxy)
        proxy2 = subprocess.Popen(base + ["--tls-ca", ca, "--token", token,
                                          "--rtsp-port", str(tport),
                                          "--rtsp-tls-cert", os.path.join(certs, "server.pem"),
                                          "--rtsp-tls-key", os.path.join(certs, "server.key")],
                                  stdout=open(plog + "2", "w"), stderr=subprocess.STDOUT)
        procs.append(proxy2)
        time.sleep(1.0)

        def rtsp(port, auth=None, tls=False):
            url = f"rtsp://127.0.0.1:{port}/video/short.m2v"
            req = f"DESCRIBE {url} RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n"
            if auth:
                req += "Authorization: Basic " + base64.b64encode(auth.encode()).decode() + "\r\n"
            s = socket.create_connection(("127.0.0.1", port), timeout=20)
            if tls:
                s = ssl.create_default_context(cafile=ca).wrap_socket(
                    s, server_hostname="127.0.0.1")
            s.sendall((req + "\r\n").encode())
            data = s.recv(4096).decode(errors="replace")
            s.close()
            return data.split("\r\n", 1)[0]

        st = rtsp(rport)
        check(" 401 " in st, f"RTSP DESCRIBE without credentials: {st}")
        st = rtsp(rport, "viewer:wrong")
        check(" 401 " in st, f"RTSP DESCRIBE with a wrong password: {st}")
        st = rtsp(rport, "viewer:s3cret")
        check(" 200 " in st, f"RTSP DESCRIBE with the password: {st}")
        st = rtsp(tport, tls=True)
        check(" 200 " in st, f"RTSPS DESCRIBE (certificate verified by the CA): {st}")

        # 7. the proxy's HTTP side: basic authentication (off by default)
        def http(path, auth=None):
            req = f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n"
            if auth:
                req += "Authorization: Basic " + base64.b64encode(auth.encode()).decode() + "\r\n"
            with socket.create_connection(("127.0.0.1", hport), timeout=10) as s:
                s.sendall((req + "\r\n").encode())
                data = b""
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    data += d
            head, _, body = data.partition(b"\r\n\r\n")
            return int(head.split()[1]) if head else 0, body

        codes = {what: http(path, auth)[0] for what, path, auth in (
            ("/status without credentials", "/status", None),
            ("/status with a wrong password", "/status", "ops:wrong"),
            ("/metrics without credentials", "/metrics", None),
            ("/hls/short.m2v/index.m3u8 without credentials", "/hls/short.m2v/index.m3u8", None),
            ("/healthz without credentials", "/healthz", None),
            ("/metrics with the password", "/metrics", "ops:h77p-s3cret"))}
        code, body = http("/status", "ops:h77p-s3cret")
        check(codes["/status without credentials"] == 401
              and codes["/status with a wrong password"] == 401
              and codes["/metrics without credentials"] == 401
              and codes["/hls/short.m2v/index.m3u8 without credentials"] == 401
              and codes["/healthz without credentials"] == 200
              and codes["/metrics with the password"] == 200
              and code == 200 and json.loads(body).get("sessions") is not None,
              f"HTTP basic authentication on the proxy: {codes}, /status with the "
              f"password {code}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        if failures:
            print(f"work directory kept: {work}")
            try:
                print(open(os.path.join(work, "server.log")).read()[-3000:])
            except OSError:
                pass
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("all security checks passed")


if __name__ == "__main__":
    main()
