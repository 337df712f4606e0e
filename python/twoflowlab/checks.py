# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the system test scripts (tests/system/test_*.py) share: the
check() / failures tally, free loopback ports, the tagged result line of a
log, waiting for a listening port, the MPEG-2 test clips they serve and a
TLS control connection to twoflow-server
(standard library only): ``from twoflowlab.checks import check, failures``.
"""

import json
import random
import socket
import ssl
import subprocess
import time

# every failed check's text, in order; the scripts exit non-zero if any
failures = []


def check(cond, what):
    """Prints "ok   what" or "FAIL what"; a failure is kept in failures."""
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def stop_programs(names, procs, timeout=10, check=check):
    """Checks that each long-running program (procs, Popen, started in
    that order; names, theirs) is still running (a crash during the test
    is named as one, whatever its clients made of the closed connections),
    then stops it with SIGTERM, the last started first (a proxy's sessions
    end before its server's), and checks that it exits 0 (a clean
    shutdown); killed after timeout s. check: a script's own check() when
    it keeps its own tally."""
    for name, p in reversed(list(zip(names, procs))):
        rc = p.poll()
        check(rc is None, f"{name} ran to the end (exit {rc})")
        if rc is not None:
            continue
        p.terminate()
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            rc = f"killed: no exit {timeout} s after SIGTERM"
        check(rc == 0, f"{name} stopped cleanly on SIGTERM (exit {rc})")


def free_port(kind=socket.SOCK_STREAM):
    """A free 127.0.0.1 port of socket type kind. Below the kernel's
    ephemeral range: sockets that tests running in parallel bind to port 0
    cannot take it before the program binds it."""
    for _ in range(100):
        port = random.randrange(20000, 32000)
        s = socket.socket(socket.AF_INET, kind)
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            pass
        finally:
            s.close()
    raise RuntimeError("no free port")


def result_line(out, tag):
    """The first "TAG {json}" record in out, parsed (None if there is none)."""
    for line in out.splitlines():
        if line.startswith(tag + " "):
            return json.loads(line[len(tag) + 1:])
    return None


def wait_log(path, text, timeout=30, proc=None, count=1):
    """Waits until the file at path holds text (a server's "control port"
    line once it listens) count times, at most timeout s or until proc has
    exited; True when it came. A fixed sleep after starting twoflow-server lost
    the race on a loaded machine: the proxy's connect was refused."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            with open(path, errors="replace") as f:
                if f.read().count(text) >= count:
                    return True
        except FileNotFoundError:
            pass
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def wait_port(port, tries=100):
    """Waits (about 5 s at most) until 127.0.0.1:port accepts connections."""
    for _ in range(tries):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)


def mpeg2_clip_argv(path, frames, gop12=False):
    """gst-launch-1.0 arguments writing a CIF 25 fps MPEG-2 elementary stream
    of `frames` ball pictures to path; gop12: two B pictures per reference
    picture and a 12-picture GOP."""
    gop = ["b-per-refframe=2", "min-gop-size=12", "max-gop-size=12"] if gop12 else []
    return (["gst-launch-1.0", "-q", "videotestsrc", f"num-buffers={frames}",
             "pattern=ball", "!", "video/x-raw,width=352,height=288,framerate=25/1", "!",
             "mpeg2enc", "format=3"] + gop + ["!", "filesink", f"location={path}"])


class TlsControl:
    """A TLS control connection to twoflow-server on 127.0.0.1:port (python's
    ssl), verified with the CA; cert/key: a client certificate; token: AUTH
    with it at once (asserted to succeed); source: the local address to
    connect from (any of 127.0.0.0/8)."""

    def __init__(self, port, ca, cert=None, key=None, token=None, source=None):
        ctx = ssl.create_default_context(cafile=ca)
        if cert:
            ctx.load_cert_chain(cert, key)
        raw = socket.create_connection(("127.0.0.1", port), timeout=10,
                                       source_address=(source, 0) if source else None)
        self.s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.f = self.s.makefile("rwb")
        if token is not None:
            r = self.request({"cmd": "AUTH", "token": token})
            assert r and r.get("ok"), r

    def send_raw(self, data):
        self.f.write(data)
        self.f.flush()

    def request(self, req):
        """Sends req; its reply (events before it are passed over), None at
        EOF."""
        self.send_raw((json.dumps(req) + "\n").encode())
        return self.next(reply=True)

    def next(self, reply=False):
        """The next line the server sends (reply: the next that is no
        event), None at EOF."""
        while True:
            line = self.f.readline()
            if not line:
                return None
            r = json.loads(line)
            if not reply or "event" not in r:
                return r

    def closed(self):
        """True when the server has closed the connection (EOF)."""
        try:
            return self.f.readline() == b""
        except (OSError, ssl.SSLError):
            return True

    def close(self):
        try:
            self.f.close()      # the file holds the socket open too
            self.s.close()
        except OSError:
            pass
