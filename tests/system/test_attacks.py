#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The attack suite (suite 'security'): each attack on the control plane
that once worked, run against the defended programs on loopback, asserting
the defended behaviour (docs/security.md, "Attacks and what stops them").

  * a flood of silent connections from many addresses, renewed as the
    server closes them: proxies still authenticate (the oldest silent
    connection is shed for a newcomer; one address holds at most
    --max-pending-per-address of them);
  * an authenticated client that sends requests and stops reading: the
    server keeps answering others, drops that client once its replies pass
    --max-output, and still stops at once on SIGTERM, also with a log
    reader that stops reading;
  * a line of 200,000 '[' under a 2 MB stack with a raised --max-line: an
    error reply, no crash (nesting is bounded before json-glib parses);
  * another identity asks STATS / TEARDOWN of a running session: both
    refused alike; session ids are random;
  * the server's HTTP side: on the control address only, with basic
    authentication but /healthz;
  * out of file descriptors: accepting pauses instead of spinning;
  * every listening socket (control, HTTP, RTSP) has a backlog >= 128;
  * RTSP admission is taken and the server session started at PLAY: 50
    DESCRIBEs and a SETUP never played hold no capacity and no server
    session (a real viewer is served), the SETUP's media is released;
  * a control server that accepts and never answers: the proxy's /videos
    and HLS start wait for it (502, 503 with the reason) while its main
    loop still answers /healthz at once.

  test_attacks.py SERVER PROXY
"""
import base64
import os
import re
import resource
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

from twoflowlab.checks import (TlsControl as Control, check, failures, free_port,
                               mpeg2_clip_argv, wait_port)
from twoflowlab.loopback import raise_fd_limit, test_certs


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def listen_backlog(port):
    """The backlog of the socket listening on TCP port (ss's Send-Q)."""
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True,
                         text=True).stdout.split()
    return int(out[2]) if len(out) >= 3 else None


def http_get(url, auth=None):
    req = urllib.request.Request(url)
    if auth:
        req.add_header("Authorization", "Basic " +
                       base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


class Server:
    def __init__(self, exe, work, name, args, preexec=None):
        self.port = free_port()
        self.log = os.path.join(work, name + ".log")
        self.p = subprocess.Popen([exe, "--port", str(self.port)] + args,
                                  stdout=open(self.log, "w"),
                                  stderr=subprocess.STDOUT, preexec_fn=preexec)
        wait_port(self.port)

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


class Rtsp:
    """A raw RTSP/1.0 client on one TCP connection (from source, any of
    127.0.0.0/8)."""

    def __init__(self, port, source="127.0.0.1"):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30,
                                          source_address=(source, 0))
        self.f = self.s.makefile("rb")
        self.cseq = 0

    def request(self, method, url, *headers):
        """Status line and headers (lower-case names) of the answer."""
        self.cseq += 1
        self.s.sendall((f"{method} {url} RTSP/1.0\r\nCSeq: {self.cseq}\r\n" +
                        "".join(h + "\r\n" for h in headers) + "\r\n").encode())
        status = self.f.readline().decode(errors="replace").strip()
        fields = {}
        for line in iter(self.f.readline, b"\r\n"):
            if not line:
                break
            k, _, v = line.decode(errors="replace").partition(":")
            fields[k.strip().lower()] = v.strip()
        self.f.read(int(fields.get("content-length", 0)))
        return status, fields

    def first_data(self):
        """True once an interleaved RTP packet ('$') arrives (30 s)."""
        try:
            return self.f.read(1) == b"$"
        except OSError:
            return False

    def close(self):
        self.f.close()
        self.s.close()


def flood(port, stop, opened):
    """Silent connections from 127.0.0.2 .. 127.0.0.101, 300 held at a time,
    the oldest renewed, ~300 new ones a second."""
    held = []
    n = 0
    while not stop.is_set():
        try:
            s = socket.socket()
            s.setblocking(False)
            s.bind((f"127.0.0.{2 + n % 100}", 0))
            s.connect_ex(("127.0.0.1", port))
            held.append(s)
            n += 1
        except OSError:
            pass
        if len(held) > 300:
            held.pop(0).close()
        time.sleep(1 / 300)
    opened.append(n)
    for s in held:
        s.close()


def main():
    server_exe, proxy_exe = sys.argv[1], sys.argv[2]
    raise_fd_limit()
    work = tempfile.mkdtemp(prefix="twoflow-attacks-")
    servers = []
    try:
        certs = os.path.join(work, "certs")
        ca, tokens, token = test_certs(certs)
        evil = os.urandom(24).hex()
        with open(tokens, "a") as f:
            f.write(f"evil {evil}\n")
        videos = os.path.join(work, "videos")
        os.makedirs(videos)
        subprocess.run(mpeg2_clip_argv(os.path.join(videos, "long.m2v"), 250),
                       check=True, timeout=120)
        tls = ["--dir", videos, "--address", "127.0.0.1",
               "--tls-cert", os.path.join(certs, "server.pem"),
               "--tls-key", os.path.join(certs, "server.key"), "--tokens", tokens]
        http_port = free_port()
        srv = Server(server_exe, work, "server", tls + [
            "--http-port", str(http_port), "--http-user", "ops",
            "--http-password", "secret"])
        servers.append(srv)

        # 1. silent flood from 100 addresses: proxies still get in
        stop, opened = threading.Event(), []
        t = threading.Thread(target=flood, args=(srv.port, stop, opened))
        t.start()
        time.sleep(2)
        ok = 0
        for _ in range(3):
            try:
                c = Control(srv.port, ca, token=token)
                r = c.request({"cmd": "LIST"})
                ok += bool(r and r.get("ok"))
                c.close()
            except (OSError, AssertionError) as e:
                print("AUTH during the flood failed:", e)
            time.sleep(1)
        stop.set()
        t.join()
        c = Control(srv.port, ca, token=token)
        st = c.request({"cmd": "STATUS"})
        c.close()
        check(ok == 3 and st["shed"] > 0,
              f"{opened[0]} silent connections from 100 addresses: {ok}/3 proxies "
              f"authenticated, {st['shed']} silent connections shed")
        # one address alone holds at most --max-pending-per-address (8)
        held = [socket.create_connection(("127.0.0.1", srv.port),
                                         source_address=("127.0.0.200", 0))
                for _ in range(20)]
        time.sleep(1)
        c = Control(srv.port, ca, token=token)
        st2 = c.request({"cmd": "STATUS"})
        c.close()
        for s in held:
            s.close()
        check(st2["refused"] - st["refused"] >= 12,
              f"20 silent connections from one address: "
              f"{st2['refused'] - st['refused']} refused over the 8 it may hold")

        # 2. a client that sends requests and never reads
        slow = Control(srv.port, ca, token=token)
        slow.s.settimeout(None)
        sent = []

        def writer():
            line = b'{"cmd":"LIST"}\n' * 100
            try:
                for i in range(2000):
                    slow.s.sendall(line)
                    sent.append(i)
            except OSError:
                pass
        w = threading.Thread(target=writer, daemon=True)
        w.start()
        time.sleep(3)
        t0 = time.monotonic()
        c = Control(srv.port, ca, token=token)
        r = c.request({"cmd": "STATUS"})
        took = time.monotonic() - t0
        c.close()
        check(r and r.get("ok") and took < 10,
              f"a client that stops reading: STATUS on another connection "
              f"answered in {took * 1000:.0f} ms")
        w.join(timeout=60)
        text = srv.text()
        check("not reading its replies" in text and not w.is_alive(),
              "the client that stops reading is closed once its replies "
              "pass --max-output")

        # 3. sessions belong to an identity
        out = os.path.join(work, "long.m2v")
        proxy = subprocess.Popen(
            [proxy_exe, "--server", f"127.0.0.1:{srv.port}", "--tls-ca", ca,
             "--token", token, "--segment-duration", "1",
             "--prefix-dir", os.path.join(work, "prefix"),
             "--fetch", "long.m2v", "--output", out],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sid = None
        for _ in range(200):
            m = re.search(r"session (\d+):", srv.text())
            if m:
                sid = int(m.group(1))
                break
            time.sleep(0.05)
        bad = Control(srv.port, ca, token=evil)
        rs = bad.request({"cmd": "STATS", "session": sid})
        rt = bad.request({"cmd": "TEARDOWN", "session": sid})
        bad.close()
        own = Control(srv.port, ca, token=token)
        ro = own.request({"cmd": "STATS", "session": sid})
        own.close()
        proxy.wait(timeout=120)
        check(sid is not None and sid > 1000, f"session ids are random ({sid})")
        check(not rs["ok"] and not rt["ok"] and rs["error"] == rt["error"]
              and "stats" not in rs and ro["ok"],
              f"identity evil: STATS '{rs.get('error')}', TEARDOWN "
              f"'{rt.get('error')}'; the owner's STATS ok: {ro['ok']}")

        # 4. the HTTP side: the control address, basic authentication
        check(http_get(f"http://127.0.0.2:{http_port}/healthz") is None,
              "server HTTP: nothing on another address than --address")
        codes = (http_get(f"http://127.0.0.1:{http_port}/status"),
                 http_get(f"http://127.0.0.1:{http_port}/status", "ops:wrong"),
                 http_get(f"http://127.0.0.1:{http_port}/status", "ops:secret"),
                 http_get(f"http://127.0.0.1:{http_port}/healthz"))
        check(codes == (401, 401, 200, 200),
              f"server HTTP /status: 401 without or with a wrong password, 200 "
              f"with it; /healthz open: {codes}")

        # 5. backlogs of every listening socket
        rtsp_port, phttp_port = free_port(), free_port()
        plog = os.path.join(work, "proxy.log")
        c = Control(srv.port, ca, token=token)
        peak = c.request({"cmd": "INFO", "video": "long.m2v"})["peak_rate"]
        c.close()
        px = subprocess.Popen(
            [proxy_exe, "--server", f"127.0.0.1:{srv.port}", "--tls-ca", ca,
             "--wan-capacity", str(int(peak * 1.5)),
             "--token", token, "--rtsp-port", str(rtsp_port), "--http-port",
             str(phttp_port), "--prefix-dir", os.path.join(work, "prefix2"),
             "--hls-dir", os.path.join(work, "hls"), "--segment-duration", "1"],
            stdout=open(plog, "w"), stderr=subprocess.STDOUT)
        wait_port(rtsp_port)
        wait_port(phttp_port)
        backlogs = [listen_backlog(p) for p in (srv.port, http_port, rtsp_port,
                                                 phttp_port)]
        check(all(b is not None and b >= 128 for b in backlogs),
              f"listen backlogs (server control, server HTTP, proxy RTSP, proxy "
              f"HTTP): {backlogs}")

        # 5b. admission is taken and the server session started at PLAY:
        # 50 strangers' DESCRIBEs (kept open) and a SETUP never played hold
        # neither capacity nor a server session; a real viewer is then
        # served (the capacity fits one)
        url = f"rtsp://127.0.0.1:{rtsp_port}/video/long.m2v"
        strangers = []
        for i in range(50):
            r = Rtsp(rtsp_port, f"127.0.0.{10 + i}")
            strangers.append((r, r.request("DESCRIBE", url, "Accept: application/sdp")[0]))
        described = sum(st.endswith("200 OK") for _, st in strangers)
        lurker = Rtsp(rtsp_port, "127.0.0.99")
        lurker.request("DESCRIBE", url, "Accept: application/sdp")
        setup = lurker.request("SETUP", url + "/stream=0",
                               "Transport: RTP/AVP/TCP;unicast;interleaved=0-1")
        time.sleep(1)
        with open(plog) as f:
            started = f.read().count(": playing ")
        check(described == 50 and setup[0].endswith("200 OK") and started == 0,
              f"50 DESCRIBEs and a SETUP without PLAY: {described} described, "
              f"SETUP {setup[0]!r}, {started} server session(s) started")
        viewer = Rtsp(rtsp_port)
        steps = [viewer.request("DESCRIBE", url, "Accept: application/sdp")]
        steps.append(viewer.request("SETUP", url + "/stream=0",
                                    "Transport: RTP/AVP/TCP;unicast;interleaved=0-1"))
        session = steps[-1][1].get("session", "").split(";")[0]
        steps.append(viewer.request("PLAY", url + "/", f"Session: {session}"))
        data = viewer.first_data()
        # the proxy logs "playing" from its main loop, which a loaded
        # machine may run after the first RTP packets went out
        for _ in range(100):
            with open(plog) as f:
                started = f.read().count(": playing ")
            if started:
                break
            time.sleep(0.1)
        check(all(st.endswith("200 OK") for st, _ in steps) and data and started == 1,
              f"a viewer after 50 DESCRIBEs and a SETUP never played: "
              f"{[st for st, _ in steps]}, RTP data: {data}, {started} server "
              f"session(s)")
        released = False
        for _ in range(300):
            with open(plog) as f:
                released = "released (never played)" in f.read()
            if released:
                break
            time.sleep(0.1)
        check(released, "the SETUP never played is released while the viewer "
              "stays connected")
        for r, _ in strangers:
            r.close()
        lurker.close()
        viewer.close()
        px.terminate()
        px.wait(timeout=10)
        with open(plog) as f:
            stages = re.findall(r'"decision":"(\w+)","stage":"(\w+)"', f.read())
        check(("admit", "play") in stages and ("reject", "play") not in stages,
              f"admission decided at PLAY: {sorted(set(stages))}")

        # 6. SIGTERM while a client holds replies it does not read
        slow2 = socket.create_connection(("127.0.0.1", srv.port))
        t0 = time.monotonic()
        srv.p.send_signal(signal.SIGTERM)
        try:
            srv.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - t0
        slow2.close()
        slow.close()
        check(srv.p.poll() is not None and took < 2,
              f"SIGTERM with clients connected: stopped in {took:.2f} s")

        # 7. deep nesting under a small stack, before and after AUTH
        def small_stack():
            resource.setrlimit(resource.RLIMIT_STACK, (2 << 20, 2 << 20))
        deep = Server(server_exe, work, "deep",
                      ["--dir", videos, "--address", "127.0.0.1", "--insecure",
                       "--tokens", tokens, "--max-line", "1000000"], small_stack)
        servers.append(deep)
        replies = []
        for auth in (False, True):
            s = socket.create_connection(("127.0.0.1", deep.port), timeout=10)
            f = s.makefile("rwb")
            if auth:
                f.write(b'{"cmd":"AUTH","token":"%s"}\n' % token.encode())
                f.flush()
                f.readline()
            f.write(b"[" * 200000 + b"\n")
            f.flush()
            replies.append(f.readline().decode().strip())
            s.close()
        time.sleep(0.5)
        check(deep.p.poll() is None and "not a request" in replies[0]
              and "nested deeper than 32" in replies[1],
              f"200,000 '[' under a 2 MB stack: server alive, replies {replies}")

        # 8. out of file descriptors: no spinning
        def few_fds():
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        emfile = Server(server_exe, work, "emfile",
                        ["--dir", videos, "--address", "127.0.0.1", "--insecure"],
                        few_fds)
        servers.append(emfile)
        conns = []
        for _ in range(80):
            try:
                conns.append(socket.create_connection(("127.0.0.1", emfile.port),
                                                      timeout=2))
            except OSError:
                break
        time.sleep(0.5)
        cpu0 = cpu_seconds(emfile.p.pid)
        time.sleep(3)
        cpu = cpu_seconds(emfile.p.pid) - cpu0
        lines = emfile.text().count("accept failed")
        for s in conns:
            s.close()
        rc = emfile.p.poll()
        check(cpu < 1.0 and 0 < lines < 100 and rc is None,
              f"80 connections against 64 descriptors: {cpu:.2f} s of CPU in 3 s, "
              f"{lines} 'accept failed' lines, server "
              + ("alive" if rc is None else
                 f"exited {rc}: {emfile.text()[-1500:]}"))

        # 9. a log reader that stops reading: the control plane goes on
        # and SIGTERM still ends the server (its lines wait in a bounded
        # queue of their own, not in the main loop)
        stalled_port = free_port()
        stalled = subprocess.Popen(
            [server_exe, "--port", str(stalled_port), "--dir", videos,
             "--address", "127.0.0.1", "--insecure"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            wait_port(stalled_port)
            served = 0
            for _ in range(1500):      # about 200 KB of log lines
                try:
                    s = socket.create_connection(("127.0.0.1", stalled_port),
                                                 timeout=10)
                    s.sendall(b"not json\n")
                    s.close()
                    served += 1
                except OSError:
                    break
            answer = ""
            try:
                s = socket.create_connection(("127.0.0.1", stalled_port),
                                             timeout=10)
                f = s.makefile("rwb")
                f.write(b'{"cmd":"LIST"}\n')
                f.flush()
                answer = f.readline().decode()
                s.close()
            except OSError as e:
                answer = str(e)
            t0 = time.monotonic()
            stalled.send_signal(signal.SIGTERM)
            try:
                stalled.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            took = time.monotonic() - t0
            check(served == 1500 and '"ok":true' in answer.replace(" ", "")
                  and stalled.poll() is not None and took < 2,
                  f"stdout a pipe nobody reads: {served}/1500 connections "
                  f"served, LIST after them {answer.strip()[:60]!r}, SIGTERM "
                  f"stopped it in {took:.2f} s")
        finally:
            if stalled.poll() is None:
                stalled.kill()
                stalled.wait()
            stalled.stdout.close()

        # 10. a control server that accepts and never answers: /videos and
        # an HLS start wait for it (until their timeouts: 502, 503 with the
        # reason) while the proxy's main loop serves /healthz at once
        mute = socket.socket()
        mute.bind(("127.0.0.1", 0))
        mute.listen(16)
        mute.settimeout(0.2)
        held, quiet = [], threading.Event()

        def accept_all():
            while not quiet.is_set():
                try:
                    held.append(mute.accept()[0])
                except OSError:
                    pass
        acceptor = threading.Thread(target=accept_all)
        acceptor.start()
        mhttp = free_port()
        mp = subprocess.Popen(
            [proxy_exe, "--server", f"127.0.0.1:{mute.getsockname()[1]}",
             "--insecure", "--rtsp-port", str(free_port()), "--http-port",
             str(mhttp), "--hls-dir", os.path.join(work, "hls-mute"),
             "--prefix-dir", os.path.join(work, "prefix-mute")],
            stdout=open(os.path.join(work, "mute-proxy.log"), "w"),
            stderr=subprocess.STDOUT)
        answers = {}

        def waiting_get(name, path):
            t0 = time.monotonic()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{mhttp}{path}",
                                            timeout=60) as r:
                    answers[name] = (r.status, r.read())
            except urllib.error.HTTPError as e:
                answers[name] = (e.code, e.read())
            except OSError as e:
                answers[name] = (None, str(e).encode())
            answers[name] += (time.monotonic() - t0,)
        try:
            wait_port(mhttp)
            waiters = [threading.Thread(target=waiting_get, args=a) for a in
                       (("videos", "/videos"),
                        ("hls", "/hls/long.m2v/index.m3u8"),
                        ("hls again", "/hls/long.m2v/index.m3u8"))]
            for w in waiters:
                w.start()
            for _ in range(100):        # all three reached the mute server
                if len(held) >= 2:
                    break
                time.sleep(0.05)
            time.sleep(0.5)
            t0 = time.monotonic()
            health = http_get(f"http://127.0.0.1:{mhttp}/healthz")
            took = time.monotonic() - t0
            for w in waiters:
                w.join(60)
            # the blocking proxy held its loop 5 s for /videos and 10 s per
            # HLS start; 4 s leaves a loaded machine room
            check(health == 200 and took < 4 and len(held) == 2,
                  f"/healthz while /videos and an HLS start wait on a control "
                  f"server that never answers: {health} in {took:.2f} s "
                  f"({len(held)} control connections: /videos and the HLS video)")
            got = {k: (v[0], v[1].decode(errors="replace").strip())
                   for k, v in answers.items()}
            check(got.get("videos", (0, ""))[0] == 502
                  and "timed out" in got["videos"][1]
                  and all(got.get(k, (0, ""))[0] == 503
                          and "timed out" in got[k][1]
                          for k in ("hls", "hls again")),
                  f"then /videos 502 and both playlist requests 503 with the "
                  f"reason: {got}")
        finally:
            quiet.set()
            acceptor.join()
            mp.terminate()
            try:
                mp.wait(timeout=10)
            except subprocess.TimeoutExpired:
                mp.kill()
                mp.wait()
            for s in held:
                s.close()
            mute.close()
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
