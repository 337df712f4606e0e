# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the loopback system tests (tests/system) share: a plaintext
twoflow-server on 127.0.0.1 and its control channel, ffprobe's JSON,
stopping the programs a test started, running independent cases side by
side, the test certificates, the descriptor limit and the closing lines."""

import json
import os
import resource
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from twoflowlab.checks import failures, free_port


def control(port, req, timeout=30):
    """One JSON request on a new plaintext control connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        f = s.makefile("rw")
        f.write(json.dumps(req) + "\n")
        f.flush()
        return json.loads(f.readline())


def start_server(server_exe, videos, log, *extra):
    """twoflow-server --insecure on 127.0.0.1 serving `videos`, its output
    in the file `log`, answering STATUS: (process, control port)."""
    port = free_port()
    p = subprocess.Popen([server_exe, "--dir", videos, "--port", str(port),
                          "--address", "127.0.0.1", "--insecure", *extra],
                         stdout=open(log, "w"), stderr=subprocess.STDOUT)
    for _ in range(100):
        try:
            control(port, {"cmd": "STATUS"})
            break
        except OSError:
            time.sleep(0.05)
    return p, port


def stop(procs, timeout=5):
    """SIGTERM to each process still running, SIGKILL after timeout."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def ffprobe(path, *args, timeout=120):
    """ffprobe's JSON about path ({} when it has none)."""
    res = subprocess.run(["ffprobe", "-v", "error", "-of", "json", *args, path],
                         capture_output=True, text=True, timeout=timeout)
    try:
        return json.loads(res.stdout or "{}")
    except ValueError:
        return {}


def side_by_side(fn, items, workers=None):
    """fn(item) for every item, up to `workers` at a time (default: one per
    CPU, at least 2: the cases are live-paced fetches and viewers that
    mostly wait), the results in the items' order."""
    workers = workers or max(2, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def raise_fd_limit(n=4096):
    """Up to n descriptors (the attacks open hundreds of connections)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n), hard))


def test_certs(directory):
    """scripts/make-test-certs.sh into directory: (CA file, tokens file,
    the first token)."""
    source = os.environ.get("TWOFLOW_SOURCE_ROOT",
                            os.path.join(os.path.dirname(__file__), "../.."))
    subprocess.run([os.path.join(source, "scripts", "make-test-certs.sh"), directory],
                   check=True)
    tokens = os.path.join(directory, "tokens")
    with open(tokens) as f:
        token = f.read().split()[1]
    return os.path.join(directory, "ca.pem"), tokens, token


def finish(t0, passed):
    """The closing lines of a test script and its exit status: its time, and
    how many checks failed or `passed`."""
    print(f"{time.monotonic() - t0:.1f} s")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print(passed)
    return 0
