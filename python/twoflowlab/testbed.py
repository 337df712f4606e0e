#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""twoflow emulated WAN testbed: network namespaces + twoflow-linkemu.

Python 3 standard library only. Importable (tests, benchmarks, experiments:
``from twoflowlab.testbed import Testbed``) and a command line tool
(``python/twoflowlab/testbed.py --help``: standard library only, so the
file runs by itself; or ``python3 -m twoflowlab.testbed``).

Topology (all names unique per run; traffic stays inside the namespaces)::

   server host(s)                 router                    client host(s)
  +-------------+   veth   +---------------------+   veth   +-------------+
  | tf-P-R-s0   |----------| ea  twoflow-linkemu eb|--------| tf-P-R-c0   |
  | eth0 .1     |          |   (bridge if >1 host) |        | eth0 .101   |
  +-------------+          +---------------------+          +-------------+
           fwd = server -> client (data),  rev = client -> server (ACKs)

Example::

    from twoflowlab.testbed import Testbed
    with Testbed(rate_bps=10e6, delay_ms=20, queue_pkts=80) as tb:
        srv = tb.server.popen(["iperf3", "-s", "-1"])
        out = tb.client.run(["iperf3", "-c", tb.server_ip, "-R", "-t", "5"])
        summary = tb.stop_emulator()

Everything is torn down on leaving the ``with`` block, at interpreter exit,
and on SIGTERM/SIGHUP (SIGINT raises KeyboardInterrupt, which unwinds the
``with`` block).  ``python/twoflowlab/testbed.py cleanup`` removes namespaces
left behind by runs that were killed with SIGKILL.
"""

import argparse
import atexit
import csv
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

__all__ = ["Testbed", "Link", "Red", "GilbertElliott", "Host", "SkipTest",
           "find_emulator", "check_environment", "cleanup_stale", "SKIP",
           "read_csv", "jain_index"]

SKIP = 77                     # meson's "skipped" exit code
NS_PREFIX = "tf-"
HERE = os.path.dirname(os.path.abspath(__file__))


class SkipTest(Exception):
    """The testbed cannot run here (not root, no netns, no emulator)."""


# --------------------------------------------------------------------------
# configuration

class Red:
    """ns-2 RED parameters: thresholds in packets (bytes with a byte-only
    queue limit), queue weight, max_p; gentle ramps max_p..1 up to 2*max;
    ecn marks ECT packets CE instead of dropping them early (RFC 3168)."""

    def __init__(self, min_th, max_th, weight=0.002, max_p=0.1, gentle=False,
                 mean_pkt=None, ecn=False):
        self.min_th, self.max_th = min_th, max_th
        self.weight, self.max_p, self.gentle = weight, max_p, gentle
        self.mean_pkt = mean_pkt
        self.ecn = ecn

    def args(self):
        a = ["--red", "%g,%g,%g,%g" % (self.min_th, self.max_th,
                                        self.weight, self.max_p)]
        if self.gentle:
            a.append("--red-gentle")
        if self.ecn:
            a.append("--red-ecn")
        if self.mean_pkt:
            a += ["--red-mean-pkt", str(int(self.mean_pkt))]
        return a


class GilbertElliott:
    """Two-state burst loss: p = P(good->bad), r = P(bad->good) per packet.
    Mean loss = (p*loss_bad + r*loss_good)/(p+r); mean burst 1/r."""

    def __init__(self, p, r, loss_bad=1.0, loss_good=0.0):
        self.p, self.r, self.loss_bad, self.loss_good = p, r, loss_bad, loss_good

    def args(self):
        return ["--ge", "%g,%g,%g,%g" % (self.p, self.r, self.loss_bad,
                                          self.loss_good)]


def _rate_str(rate):
    if rate is None or rate == float("inf"):
        return "inf"
    return str(int(round(rate)))


def _ports_str(key):
    if isinstance(key, int):
        return str(key)
    if isinstance(key, (tuple, list)):
        return "%d-%d" % (key[0], key[1])
    return str(key)


class Link:
    """One direction of the emulated link.

    rate_bps: bottleneck in bit/s (Ethernet frames; None = unlimited,
        0 = outage).  delay_ms: default one-way delay.  queue_pkts /
        queue_bytes: queue limit (waiting packets; None = emulator default
        of 1000 packets).  red: Red(...) for RED instead of drop-tail.
        loss: random loss probability.  ge: GilbertElliott(...).
        delay_classes: {port | (lo, hi) | "lo-hi": one-way ms}; a packet
        whose destination (else source) port matches gets that delay.
        jitter_ms: extra delay per packet, uniform in [0, jitter_ms], never
        reordering a delay class; about one packet time at the rate
        (1.2 ms for 1514 B at 10 Mbit/s) breaks the phase effects of a
        perfectly deterministic drop-tail link.
        ingress_jitter_ms: each packet enters the queue (loss, AQM and
        queue limit decided then) uniform in [0, ingress_jitter_ms] after
        it arrived, never reordering a delay class: reception latency, which
        breaks phase effects without disturbing the serializer's spacing.
        schedule: [(t_seconds, rate_bps or None)] rate changes after start.
        overhead: bytes added per frame for the rate.
    """

    def __init__(self, rate_bps=None, delay_ms=0.0, queue_pkts=None,
                 queue_bytes=None, red=None, loss=0.0, ge=None,
                 delay_classes=None, schedule=None, overhead=0,
                 jitter_ms=0.0, ingress_jitter_ms=0.0):
        self.rate_bps, self.delay_ms = rate_bps, delay_ms
        self.jitter_ms = jitter_ms
        self.ingress_jitter_ms = ingress_jitter_ms
        self.queue_pkts, self.queue_bytes = queue_pkts, queue_bytes
        self.red, self.loss, self.ge = red, loss, ge
        self.delay_classes = dict(delay_classes or {})
        self.schedule = list(schedule or [])
        self.overhead = overhead

    def args(self):
        a = ["--rate", _rate_str(self.rate_bps),
             "--delay", "%g" % self.delay_ms]
        for key, ms in self.delay_classes.items():
            a += ["--delay-class", "%s=%g" % (_ports_str(key), ms)]
        if self.jitter_ms:
            a += ["--jitter", "%g" % self.jitter_ms]
        if self.ingress_jitter_ms:
            a += ["--ingress-jitter", "%g" % self.ingress_jitter_ms]
        if self.queue_pkts is not None:
            a += ["--queue", str(int(self.queue_pkts))]
        if self.queue_bytes is not None:
            a += ["--queue-bytes", str(int(self.queue_bytes))]
        if self.red:
            a += self.red.args()
        if self.loss:
            a += ["--loss", "%g" % self.loss]
        if self.ge:
            a += self.ge.args()
        if self.schedule:
            a += ["--schedule", ",".join("%g=%s" % (t, _rate_str(r))
                                         for t, r in self.schedule)]
        if self.overhead:
            a += ["--overhead", str(int(self.overhead))]
        return a


# --------------------------------------------------------------------------
# environment

def find_emulator():
    """Path of twoflow-linkemu: $TWOFLOW_LINKEMU, the build tree, PATH."""
    cands = []
    if os.environ.get("TWOFLOW_LINKEMU"):
        cands.append(os.environ["TWOFLOW_LINKEMU"])
    if os.environ.get("TWOFLOW_BUILD_ROOT"):
        cands.append(os.path.join(os.environ["TWOFLOW_BUILD_ROOT"],
                                  "tools", "linkemu", "twoflow-linkemu"))
    root = os.path.dirname(os.path.dirname(HERE))     # python/twoflowlab/..
    for d in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        if d.startswith("build"):
            cands.append(os.path.join(root, d, "tools", "linkemu",
                                      "twoflow-linkemu"))
    found = [c for c in cands if os.path.isfile(c) and os.access(c, os.X_OK)]
    if found:
        if not os.environ.get("TWOFLOW_LINKEMU") and len(found) > 1:
            found.sort(key=os.path.getmtime, reverse=True)
        return found[0]
    return shutil.which("twoflow-linkemu")


def check_environment():
    """Raises SkipTest unless root, ip netns and veth work here."""
    if os.geteuid() != 0:
        raise SkipTest("needs root")
    for tool in ("ip", "ethtool"):
        if not shutil.which(tool):
            raise SkipTest("%s not installed" % tool)
    name = "%sprobe-%d-%04x" % (NS_PREFIX, os.getpid(),
                                random.getrandbits(16))
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True)
    if r.returncode != 0:
        raise SkipTest("ip netns unusable: %s" % r.stderr.decode().strip())
    try:
        r = subprocess.run(["ip", "-n", name, "link", "add", "v0", "type",
                            "veth", "peer", "name", "v1"],
                           capture_output=True)
        if r.returncode != 0:
            raise SkipTest("veth unusable: %s" % r.stderr.decode().strip())
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ns_list():
    r = subprocess.run(["ip", "netns", "list"], capture_output=True,
                       text=True)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def _kill_ns_processes(ns):
    r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                       text=True)
    for tok in r.stdout.split():
        try:
            os.kill(int(tok), signal.SIGKILL)
        except (ValueError, ProcessLookupError, PermissionError):
            pass


def cleanup_stale(verbose=False):
    """Deletes tf-<pid>-* namespaces whose creating process is gone."""
    removed = []
    for ns in _ns_list():
        if not ns.startswith(NS_PREFIX):
            continue
        parts = ns.split("-")
        if len(parts) < 3:
            continue
        try:
            pid = int(parts[1]) if parts[1] != "probe" else int(parts[2])
        except ValueError:
            continue
        if _pid_alive(pid):
            continue
        _kill_ns_processes(ns)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        removed.append(ns)
        if verbose:
            print("removed stale namespace", ns)
    return removed


# --------------------------------------------------------------------------
# teardown on exit and on signals

_live = []
_live_lock = threading.Lock()
_handlers_installed = False


def _teardown_all():
    with _live_lock:
        beds = list(_live)
    for tb in beds:
        try:
            tb.close()
        except Exception as exc:  # keep tearing the others down
            print("testbed teardown: %s" % exc, file=sys.stderr)


def _on_signal(signum, frame):
    _teardown_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers():
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_teardown_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _on_signal)


# --------------------------------------------------------------------------

class Host:
    """A network namespace: a server, client or the router."""

    def __init__(self, tb, role, index, ns, ip=None, mac=None):
        self.tb, self.role, self.index = tb, role, index
        self.ns, self.ip, self.mac = ns, ip, mac
        self.ifname = "eth0"

    def __repr__(self):
        return "<Host %s %s %s>" % (self.role, self.ns, self.ip or "")

    def argv(self, argv):
        """argv prefixed to run inside this namespace."""
        if isinstance(argv, str):
            argv = ["sh", "-c", argv]
        return ["ip", "netns", "exec", self.ns] + list(argv)

    def popen(self, argv, **kwargs):
        """Starts argv (list, or str for sh -c) inside the namespace; returns
        the subprocess.Popen.  It is killed at teardown if still running."""
        kwargs.setdefault("start_new_session", True)
        p = subprocess.Popen(self.argv(argv), **kwargs)
        self.tb._procs.append(p)
        return p

    def run(self, argv, timeout=120, check=True, capture=True, text=True,
            input=None, **kwargs):
        """Runs argv to completion inside the namespace (CompletedProcess)."""
        if capture:
            kwargs.setdefault("stdout", subprocess.PIPE)
            kwargs.setdefault("stderr", subprocess.PIPE)
        if input is not None:
            kwargs["stdin"] = subprocess.PIPE
        p = self.popen(argv, text=text, **kwargs)
        try:
            out, err = p.communicate(input=input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_proc(p)
            out, err = p.communicate()
            raise
        finally:
            if p in self.tb._procs:
                self.tb._procs.remove(p)
        res = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        if check and p.returncode != 0:
            raise subprocess.CalledProcessError(p.returncode, p.args, out, err)
        return res

    def python(self, code_or_script, *args, **kwargs):
        """popen of this Python interpreter with a script path or -c code."""
        if os.path.isfile(code_or_script):
            argv = [sys.executable, code_or_script]
        else:
            argv = [sys.executable, "-c", code_or_script]
        return self.popen(argv + [str(a) for a in args], **kwargs)

    def sysctl(self, key, value):
        self.tb._ip_exec(self.ns, ["sysctl", "-q", "-w", "%s=%s" % (key, value)])


def _kill_proc(p, grace=2.0):
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        try:
            p.terminate()
        except ProcessLookupError:
            return
    try:
        p.wait(grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            p.kill()
        p.wait()


class Testbed:
    """Namespaces, veths, addresses and a running twoflow-linkemu.

    Keyword arguments not listed here describe the fwd direction (server ->
    client: data), see Link: rate_bps, delay_ms, queue_pkts, queue_bytes,
    red, loss, ge, delay_classes, schedule, overhead.  Or pass fwd=Link(...).

    rev: Link for client -> server (ACKs).  Default: unlimited rate, no
        loss, and the same delay_ms, delay_classes, jitter_ms and
        ingress_jitter_ms as fwd (so a delay class of D ms gives an RTT of
        2*D ms).
    n_servers, n_clients: hosts on each side (a bridge joins several).
    track_ports: extra ports (or (lo, hi)) counted per flow in the CSV.
    csv_interval_ms: time series resolution.  duration_s: emulator stops
        by itself after this long.  seed: emulator random seed.
    subnet: first three octets of the private /24 used inside the
        namespaces; servers are .1, .2, ..., clients .101, .102, ...
    cc: default TCP congestion control in the host namespaces.
    realtime: SCHED_FIFO priority for the emulator (0 = normal).
    extra_args: more emulator arguments appended verbatim.
    workdir: where the CSV/summary/log go (default: a temp dir, removed
        at teardown unless keep_workdir=True or the directory was given).
    """

    def __init__(self, fwd=None, rev=None, n_servers=1, n_clients=1,
                 track_ports=(), csv_interval_ms=100, duration_s=None, seed=1,
                 subnet="10.200.0", cc=None, realtime=10, extra_args=(),
                 emulator=None, workdir=None, keep_workdir=False,
                 start_emulator=True, **link_kwargs):
        if fwd is not None and link_kwargs:
            raise TypeError("give either fwd=Link(...) or link keywords")
        self.fwd = fwd if fwd is not None else Link(**link_kwargs)
        if rev is None:
            rev = Link(delay_ms=self.fwd.delay_ms,
                       delay_classes=self.fwd.delay_classes,
                       jitter_ms=self.fwd.jitter_ms,
                       ingress_jitter_ms=self.fwd.ingress_jitter_ms)
        self.rev = rev
        if not 1 <= n_servers <= 99 or not 1 <= n_clients <= 99:
            raise ValueError("1..99 hosts per side")
        self.n_servers, self.n_clients = n_servers, n_clients
        self.track_ports = list(track_ports)
        self.csv_interval_ms = csv_interval_ms
        self.duration_s = duration_s
        self.seed, self.subnet, self.cc = seed, subnet, cc
        self.realtime, self.extra_args = realtime, list(extra_args)
        self.emulator = emulator or find_emulator()
        self._own_workdir = workdir is None
        self.keep_workdir = keep_workdir
        self.workdir = workdir
        self.start_emulator_on_enter = start_emulator
        self.run_id = "%d-%04x" % (os.getpid(), random.getrandbits(16))
        self.prefix = NS_PREFIX + self.run_id
        self.router = Host(self, "router", 0, self.prefix + "-r")
        self.servers = [Host(self, "server", i, "%s-s%d" % (self.prefix, i),
                             "%s.%d" % (subnet, 1 + i),
                             "02:74:66:00:00:%02x" % (1 + i))
                        for i in range(n_servers)]
        self.clients = [Host(self, "client", i, "%s-c%d" % (self.prefix, i),
                             "%s.%d" % (subnet, 101 + i),
                             "02:74:66:00:01:%02x" % (101 + i))
                        for i in range(n_clients)]
        self._procs = []
        self._namespaces = []
        self._emu = None
        self._emu_log = None
        self.summary = None
        self.emulator_start = None    # time.monotonic() when it started
        self.closed = False
        self.csv_path = self.summary_path = self.log_path = None

    # convenience ----------------------------------------------------------
    @property
    def server(self):
        return self.servers[0]

    @property
    def client(self):
        return self.clients[0]

    @property
    def server_ip(self):
        return self.servers[0].ip

    @property
    def client_ip(self):
        return self.clients[0].ip

    @property
    def hosts(self):
        return [self.router] + self.servers + self.clients

    def __enter__(self):
        try:
            self.setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # setup ----------------------------------------------------------------
    def _ip(self, args, check=True):
        r = subprocess.run(["ip"] + args, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))
        return r

    def _ip_exec(self, ns, argv, check=True):
        r = subprocess.run(["ip", "netns", "exec", ns] + argv,
                           capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError("%s: %s: %s" % (ns, " ".join(argv),
                                               r.stderr.strip()))
        return r

    def _add_ns(self, host):
        self._ip(["netns", "add", host.ns])
        self._namespaces.append(host.ns)
        # no IPv6 chatter (router solicitations, DAD) on the emulated link
        self._ip_exec(host.ns, ["sysctl", "-q", "-w",
                                "net.ipv6.conf.all.disable_ipv6=1",
                                "net.ipv6.conf.default.disable_ipv6=1"])
        self._ip(["-n", host.ns, "link", "set", "lo", "up"])

    def _offloads_off(self, ns, dev):
        # segments must be real frames, and checksums complete: a frame
        # captured by AF_PACKET with a partial (offloaded) checksum would be
        # dropped by the receiving host after re-injection
        self._ip_exec(ns, ["ethtool", "-K", dev, "tso", "off", "gso", "off",
                           "gro", "off", "tx", "off"])

    def setup(self):
        if self.emulator is None or not os.path.exists(self.emulator):
            raise SkipTest("twoflow-linkemu not built (set TWOFLOW_LINKEMU)")
        _install_handlers()
        with _live_lock:
            _live.append(self)
        cleanup_stale()
        if self.workdir is None:
            self.workdir = tempfile.mkdtemp(prefix="twoflow-testbed-")
        else:
            os.makedirs(self.workdir, exist_ok=True)
        self.csv_path = os.path.join(self.workdir, "linkemu.csv")
        self.summary_path = os.path.join(self.workdir, "linkemu-summary.json")
        self.log_path = os.path.join(self.workdir, "linkemu.log")

        r = self.router
        self._add_ns(r)
        for h in self.servers + self.clients:
            self._add_ns(h)
            if self.cc:
                # a namespace may only default to a congestion control the
                # host lists in tcp_allowed_congestion_control; otherwise
                # programs must ask per socket (TCP_CONGESTION, iperf3 -C)
                res = self._ip_exec(h.ns, [
                    "sysctl", "-q", "-w",
                    "net.ipv4.tcp_congestion_control=" + self.cc],
                    check=False)
                if res.returncode != 0:
                    print("testbed: cannot make %s the default in %s (not in "
                          "tcp_allowed_congestion_control); set it per socket"
                          % (self.cc, h.ns), file=sys.stderr)
            # no cached ssthresh/RTT across connections of one experiment
            h.sysctl("net.ipv4.tcp_no_metrics_save", 1)
            # socket buffers big enough that receivers do not drop
            for key in ("net.core.rmem_max", "net.core.wmem_max"):
                self._ip_exec(h.ns, ["sysctl", "-q", "-w", key + "=16777216"],
                              check=False)

        for side, hosts, emu_if in (("s", self.servers, "ea"),
                                    ("c", self.clients, "eb")):
            if len(hosts) == 1:
                self._ip(["-n", r.ns, "link", "add", emu_if, "type", "veth",
                          "peer", "name", "eth0", "netns", hosts[0].ns])
                rdevs = [emu_if]
            else:
                br = "br" + side
                self._ip(["-n", r.ns, "link", "add", br, "type", "bridge",
                          "stp_state", "0", "forward_delay", "0"])
                self._ip(["-n", r.ns, "link", "add", emu_if, "type", "veth",
                          "peer", "name", emu_if + "br"])
                self._ip(["-n", r.ns, "link", "set", emu_if + "br", "master",
                          br])
                rdevs = [emu_if, emu_if + "br", br]
                for h in hosts:
                    dev = "%s%d" % (side, h.index)
                    self._ip(["-n", r.ns, "link", "add", dev, "type", "veth",
                              "peer", "name", "eth0", "netns", h.ns])
                    self._ip(["-n", r.ns, "link", "set", dev, "master", br])
                    rdevs.append(dev)
            for dev in rdevs:
                if not dev.startswith("br"):
                    self._offloads_off(r.ns, dev)
                self._ip(["-n", r.ns, "link", "set", dev, "up"])

        everyone = self.servers + self.clients
        for h in everyone:
            self._ip(["-n", h.ns, "link", "set", "eth0", "address", h.mac])
            self._offloads_off(h.ns, "eth0")
            self._ip(["-n", h.ns, "addr", "add", h.ip + "/24", "dev", "eth0"])
            self._ip(["-n", h.ns, "link", "set", "eth0", "up"])
            # static neighbours: no ARP through the emulated link
            for o in everyone:
                if o is not h:
                    self._ip(["-n", h.ns, "neigh", "replace", o.ip, "lladdr",
                              o.mac, "dev", "eth0", "nud", "permanent"])
        self._wait_links_up()
        if self.start_emulator_on_enter:
            self.start_emulator()
        return self

    def _wait_links_up(self, timeout=10.0):
        # the kernel attaches the qdisc (until then: drop all) only when
        # linkwatch marks the device up, which can lag by about a second
        deadline = time.monotonic() + timeout
        while True:
            down = []
            for h in self.hosts:
                r = self._ip(["-n", h.ns, "-br", "link"])
                for line in r.stdout.splitlines():
                    f = line.split()
                    if len(f) >= 2 and f[0] != "lo" and f[1] != "UP":
                        down.append("%s:%s" % (h.ns, f[0]))
            if not down:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("links not up: %s" % " ".join(down))
            time.sleep(0.05)

    def emulator_args(self):
        a = [self.emulator, "-a", "ea", "-b", "eb",
             "--csv", self.csv_path, "--summary", self.summary_path,
             "--interval", "%g" % self.csv_interval_ms,
             "--seed", str(self.seed)]
        if self.realtime:
            a += ["--realtime", str(int(self.realtime))]
        if self.duration_s:
            a += ["--duration", "%g" % self.duration_s]
        for p in self.track_ports:
            a += ["--track", _ports_str(p)]
        a += ["--dir", "fwd"] + self.fwd.args()
        a += ["--dir", "rev"] + self.rev.args()
        return a + self.extra_args

    def start_emulator(self, timeout=5.0):
        """Starts twoflow-linkemu in the router (again, after a stop)."""
        if self._emu is not None and self._emu.poll() is None:
            raise RuntimeError("emulator already running")
        for path in (self.csv_path, self.summary_path):
            if os.path.exists(path):
                os.unlink(path)
        self._emu_log = open(self.log_path, "a")
        self._emu = subprocess.Popen(self.router.argv(self.emulator_args()),
                                     stdout=self._emu_log,
                                     stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._emu.poll() is not None:
                raise RuntimeError("twoflow-linkemu exited (%d): %s" % (
                    self._emu.returncode, self.emulator_log()))
            if os.path.exists(self.csv_path) and os.path.getsize(self.csv_path):
                self.emulator_start = time.monotonic()
                return self._emu
            time.sleep(0.01)
        raise RuntimeError("twoflow-linkemu did not start: %s" %
                           self.emulator_log())

    def emulator_log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def wait_emulator(self, timeout=None):
        """Waits for an emulator started with duration_s; returns summary."""
        if self._emu is not None:
            self._emu.wait(timeout)
        return self._read_summary()

    def stop_emulator(self, timeout=5.0):
        """SIGTERM to the emulator; returns its summary (dict)."""
        if self._emu is not None and self._emu.poll() is None:
            self._emu.send_signal(signal.SIGTERM)
            try:
                self._emu.wait(timeout)
            except subprocess.TimeoutExpired:
                self._emu.kill()
                self._emu.wait()
        return self._read_summary()

    def _read_summary(self):
        if self._emu_log:
            self._emu_log.close()
            self._emu_log = None
        try:
            with open(self.summary_path) as f:
                self.summary = json.load(f)
        except (OSError, ValueError):
            pass
        return self.summary

    def read_csv(self, direction=None):
        """Time series rows as dicts of floats (dir stays a string)."""
        return read_csv(self.csv_path, direction)

    # teardown -------------------------------------------------------------
    def close(self):
        if self.closed:
            return
        self.closed = True
        for p in reversed(self._procs):
            try:
                _kill_proc(p)
            except Exception:
                pass
        self._procs.clear()
        try:
            self.stop_emulator()
        except Exception:
            pass
        for ns in reversed(self._namespaces):
            _kill_ns_processes(ns)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._namespaces.clear()
        if (self._own_workdir and not self.keep_workdir and self.workdir
                and os.path.isdir(self.workdir)):
            shutil.rmtree(self.workdir, ignore_errors=True)
        with _live_lock:
            if self in _live:
                _live.remove(self)


def read_csv(path, direction=None):
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if direction and row["dir"] != direction:
                continue
            out = {}
            for k, v in row.items():
                if k == "dir":
                    out[k] = v
                else:
                    out[k] = float(v)
            rows.append(out)
    return rows


def jain_index(xs):
    xs = list(xs)
    s = sum(xs)
    q = sum(x * x for x in xs)
    return s * s / (len(xs) * q) if q > 0 else 0.0


# --------------------------------------------------------------------------
# command line

def _parse_classes(items):
    out = {}
    for it in items or []:
        port, ms = it.split("=")
        out[int(port) if "-" not in port else port] = float(ms)
    return out


def _parse_rate(s):
    if s is None:
        return None
    s = s.strip()
    if s in ("inf", "unlimited"):
        return None
    mult = {"k": 1e3, "K": 1e3, "M": 1e6, "m": 1e6, "G": 1e9, "g": 1e9}
    if s[-1] in mult:
        return float(s[:-1]) * mult[s[-1]]
    return float(s)


def _parse_schedule(s):
    if not s:
        return None
    out = []
    for it in s.split(","):
        t, r = it.split("=")
        out.append((float(t), _parse_rate(r)))
    return out


def _link_from_args(ns, prefix):
    g = lambda k: getattr(ns, prefix + k)
    red = None
    if g("red"):
        mn, mx, w, mp = (float(x) for x in g("red").split(","))
        red = Red(mn, mx, w, mp)
    ge = None
    if g("ge"):
        ge = GilbertElliott(*(float(x) for x in g("ge").split(",")))
    return Link(rate_bps=_parse_rate(g("rate")), delay_ms=g("delay"),
                queue_pkts=g("queue"), queue_bytes=g("queue_bytes"), red=red,
                loss=g("loss"), ge=ge,
                delay_classes=_parse_classes(g("delay_class")),
                schedule=_parse_schedule(g("schedule")),
                jitter_ms=g("jitter") or 0.0,
                ingress_jitter_ms=g("ingress_jitter") or 0.0)


def _add_link_args(p, prefix, what):
    d = "--" + prefix.replace("_", "-")
    p.add_argument(d + "rate", help="%s rate bit/s (k/M/G; inf)" % what)
    p.add_argument(d + "delay", type=float, default=None if prefix else 0.0,
                   help="%s one-way delay ms" % what)
    p.add_argument(d + "jitter", type=float,
                   help="%s extra delay uniform in [0, MS]" % what)
    p.add_argument(d + "ingress-jitter", type=float,
                   help="%s queue entry delayed uniform in [0, MS]" % what)
    p.add_argument(d + "queue", type=int, help="%s queue limit, packets" % what)
    p.add_argument(d + "queue-bytes", type=int, help="%s queue limit, bytes" % what)
    p.add_argument(d + "red", help="%s RED MIN,MAX,W,MAXP" % what)
    p.add_argument(d + "loss", type=float, default=0.0, help="%s loss" % what)
    p.add_argument(d + "ge", help="%s Gilbert-Elliott P,R[,LB[,LG]]" % what)
    p.add_argument(d + "delay-class", action="append",
                   help="%s PORT=MS (repeatable)" % what)
    p.add_argument(d + "schedule", help="%s T=RATE,... (s, bit/s)" % what)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="twoflow emulated WAN testbed (namespaces + "
                    "twoflow-linkemu). Link options without rev- describe the "
                    "fwd direction (server -> client); the rev direction "
                    "copies the delays unless rev- options are given.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, hlp in (("shell", "set up, print the namespaces and wait for "
                                "Ctrl-C (or --time)"),
                      ("run", "set up, run --server in the background and "
                              "--client to completion, tear down")):
        p = sub.add_parser(name, help=hlp)
        _add_link_args(p, "", "fwd")
        _add_link_args(p, "rev_", "rev")
        p.add_argument("--servers", type=int, default=1)
        p.add_argument("--clients", type=int, default=1)
        p.add_argument("--track", action="append", default=[])
        p.add_argument("--interval", type=float, default=100.0,
                       help="CSV interval ms")
        p.add_argument("--cc", help="TCP congestion control in the hosts")
        p.add_argument("--workdir", help="keep CSV/summary here")
        p.add_argument("--time", type=float, help="shell: seconds to stay up")
        if name == "run":
            p.add_argument("--server", action="append", default=[],
                           help="command in server 0 (background, repeatable)")
            p.add_argument("--client", required=True,
                           help="command in client 0 (foreground); "
                                "$SERVER_IP and $CLIENT_IP are set")
    sub.add_parser("cleanup", help="remove namespaces of dead runs")
    ns = ap.parse_args(argv)

    if ns.cmd == "cleanup":
        cleanup_stale(verbose=True)
        return 0
    try:
        check_environment()
    except SkipTest as e:
        print("testbed unavailable: %s" % e, file=sys.stderr)
        return SKIP
    fwd = _link_from_args(ns, "")
    if any(getattr(ns, "rev_" + k) not in (None, 0.0)
           for k in ("rate", "delay", "jitter", "ingress_jitter", "queue",
                     "queue_bytes", "red", "loss", "ge", "delay_class",
                     "schedule")):
        rev = _link_from_args(ns, "rev_")
        if ns.rev_delay is None:
            rev.delay_ms = fwd.delay_ms
        if ns.rev_jitter is None:
            rev.jitter_ms = fwd.jitter_ms
        if ns.rev_ingress_jitter is None:
            rev.ingress_jitter_ms = fwd.ingress_jitter_ms
        if not rev.delay_classes:
            rev.delay_classes = fwd.delay_classes
    else:
        rev = None
    tracks = [int(t) if "-" not in t else t for t in ns.track]
    with Testbed(fwd=fwd, rev=rev, n_servers=ns.servers, n_clients=ns.clients,
                 track_ports=tracks, csv_interval_ms=ns.interval, cc=ns.cc,
                 workdir=ns.workdir) as tb:
        env = dict(os.environ, SERVER_IP=tb.server_ip, CLIENT_IP=tb.client_ip)
        print("router  %s  (twoflow-linkemu %s)" % (
            tb.router.ns, " ".join(shlex.quote(a) for a in tb.emulator_args()[1:])))
        for h in tb.servers + tb.clients:
            print("%-7s %s  %s" % (h.role, h.ns, h.ip))
        print("csv     %s" % tb.csv_path)
        sys.stdout.flush()
        rc = 0
        if ns.cmd == "shell":
            print("e.g.: ip netns exec %s iperf3 -s" % tb.server.ns)
            print("Ctrl-C to tear down")
            sys.stdout.flush()
            try:
                if ns.time:
                    time.sleep(ns.time)
                else:
                    while True:
                        time.sleep(3600)
            except KeyboardInterrupt:
                pass
        else:
            for cmd in ns.server:
                tb.server.popen(["sh", "-c", cmd], env=env)
            time.sleep(0.3)
            r = tb.client.run(["sh", "-c", ns.client], env=env, capture=False,
                              check=False, timeout=None)
            rc = r.returncode
        summary = tb.stop_emulator()
        if summary:
            for d in ("fwd", "rev"):
                s = summary[d]
                print("%s: delivered %d pkts %d B, drops queue %d red %d "
                      "loss %d, max queue %d" % (
                          d, s["delivered_pkts"], s["delivered_bytes"],
                          s["drops_queue"],
                          s["drops_red_early"] + s["drops_red_forced"],
                          s["drops_loss"], s["max_queue_pkts"]))
        return rc


if __name__ == "__main__":
    sys.exit(main())
