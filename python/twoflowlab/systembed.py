# SPDX-License-Identifier: LGPL-2.1-or-later
"""The system experiments' testbed: the emulated WAN, twoflow-server in the
server namespace and twoflow-proxy fetches in the client namespace, with
teardown, the emulator's summary and CSV (experiments/system/tables.py,
prefix_measured.py, arrivals.py)."""

import os
import shutil
import subprocess
import time

from twoflowlab.checks import wait_log
from twoflowlab.records import tagged
from twoflowlab.testbed import Testbed


def collect_fetches(procs, workdir, timeout, t0):
    """Waits for the proxies' fetches (killed once `timeout` s have passed
    since t0), keeps each one's output as proxy-NN.log in workdir and
    returns their FETCH-RESULT records, in order."""
    results = []
    for i, p in enumerate(procs):
        try:
            text = p.communicate(timeout=max(1, timeout - (time.monotonic() - t0)))[0]
        except subprocess.TimeoutExpired:
            p.kill()
            text = p.communicate()[0]
        with open(os.path.join(workdir, f"proxy-{i:02d}.log"), "w") as f:
            f.write(text)
        r = tagged(text, "FETCH-RESULT")
        results.append(r[0] if r else {"result": "no result: " + text[-300:]})
    return results


class SystemTestbed:
    """The system experiments' WAN and server: the emulated link server ->
    proxies at `capacity` bit/s, 20 ms each way, a drop-tail queue of
    `queue_ms` of the capacity (at least 10 packets), TCP Reno, the
    sessions' ports tracked (`track_ports`: ports or (lo, hi) ranges);
    twoflow-server in the server namespace serving `videos` (its log: workdir/server.log;
    `server_args`: more of its options; `server_rt` > 0: it runs at that
    SCHED_FIFO priority, below the emulator's, so the other work of a shared
    machine does not stall its pacing; `startup`: the server's --startup,
    "segment" by default: the papers' stagger, playback one segment after
    the essential flow, as their tables and figures assume — not the
    server's default start-up ramp). In the with block start proxies
    with proxy(); at its end (without an error) the server stops, the
    emulator's summary is in .summary, its CSV is copied to
    workdir/linkemu.csv and the fetched *.out files are removed (their merge
    stats are in the proxies' results)."""

    def __init__(self, build, workdir, videos, capacity, queue_ms, track_ports,
                 server_args=(), server_rt=0, startup="segment"):
        self.workdir, self.videos = workdir, videos
        self.startup = startup
        self.server_rt = server_rt
        self.server_args = list(server_args)
        self.queue = max(10, int(capacity * queue_ms / 1000 / 8 / 1500))
        self.server_exe = os.path.join(build, "tools", "server", "twoflow-server")
        self.proxy_exe = os.path.join(build, "tools", "proxy", "twoflow-proxy")
        self.tb = Testbed(rate_bps=capacity, delay_ms=20, queue_pkts=self.queue,
                          cc="reno", n_servers=1, n_clients=1,
                          track_ports=track_ports,
                          workdir=os.path.join(workdir, "testbed"),
                          keep_workdir=True)
        self.summary = {}

    def __enter__(self):
        self.tb.__enter__()
        self.slog = open(os.path.join(self.workdir, "server.log"), "w")
        self.server = self.tb.server.popen(
            # every proxy is one client (one address): lift the per-client
            # session limit (default 32) for the runs with more sessions
            (["chrt", "-f", str(self.server_rt)] if self.server_rt > 0 else [])
            + [self.server_exe, "--dir", self.videos, "--port", "5500", "--insecure",
             "--max-client-sessions", "256"]
            + (["--startup", self.startup] if self.startup else [])
            + self.server_args,
            stdout=self.slog, stderr=subprocess.STDOUT)
        wait_log(os.path.join(self.workdir, "server.log"), "control port",
                 proc=self.server)
        return self

    def proxy(self, argv):
        """A twoflow-proxy of this server in the client namespace."""
        return self.tb.client.popen(
            [self.proxy_exe, "--server", f"{self.tb.server.ip}:5500", "--insecure"] + argv,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def fetch_staggered(self, names, starts, argv_for, timeout):
        """Starts one fetch per name at its offset in `starts` (s, sorted),
        with argv_for(i, name) as the proxy's options, and collects them
        (collect_fetches; killed `timeout` s after the first start)."""
        procs, t0 = [], time.monotonic()
        for i, name in enumerate(names):
            delay = starts[i] - (time.monotonic() - t0)
            if delay > 0:
                time.sleep(delay)
            procs.append(self.proxy(argv_for(i, name)))
        return collect_fetches(procs, self.workdir, timeout, t0)

    def __exit__(self, *exc):
        try:
            if exc[0] is None:
                time.sleep(0.5)
                self.server.terminate()
                try:
                    # its SESSION-END records are logged when each session
                    # ends, so a server slow to stop (many sessions on a
                    # loaded machine) loses nothing by being killed
                    self.server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.server.kill()
                    self.server.wait(timeout=10)
                self.summary = self.tb.stop_emulator()
                shutil.copy(self.tb.csv_path, os.path.join(self.workdir, "linkemu.csv"))
        finally:
            self.slog.close()
            self.tb.__exit__(*exc)
        for f in os.listdir(self.workdir):
            if f.endswith(".out"):
                os.unlink(os.path.join(self.workdir, f))
        return False
