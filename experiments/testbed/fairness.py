#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Reference TCP fairness measurement on the emulated WAN.

10 Mbit/s bottleneck, 80-packet drop-tail queue, three TCP flows (iperf3,
server -> client) with RTTs 30/90/180 ms sharing it for 30 s, for cubic,
reno and bbr.  Prints per-flow goodput and Jain's fairness index and
compares it with the reference (DESIGN.md, "Testbed").

  sudo experiments/testbed/fairness.py [--cc cubic,reno,bbr] [--runs N]
      [--out DIR] [--check] [--duration 30]
      [--start staggered|align|sequential] [--gap S]
      [--jitter MS] [--jitter-at egress|ingress] [--jitter-dirs both|data]
      [--split sym|data|ack]
      [--omit S] [--ss 1] ...

iperf3 exchanges control messages for about five RTTs before its data
flows, so three clients started at once (--start staggered) send data
from 0.15, 0.45 and 0.9 s on, the later ones' handshakes meet the first
one's slow-start overshoot (a lost SYN or control segment delays a flow by
a 1 s timeout), and the per-flow 30 s windows do not coincide.  The
default --start align starts the long-RTT clients earlier by five RTTs'
difference, so the three data transfers begin together; --start
sequential begins them in RTT order --gap s apart (a hypothesis option,
see docs/testbed.md).  The link adds a random delay of up to one
frame time per packet (--jitter, default 1.21 ms at 10 Mbit/s) so that
drop-tail phase effects of a perfectly deterministic emulator do not
decide who loses packets (docs/testbed.md, "Fairness reproduction").
--jitter-at says where: egress (default) adds it to the propagation delay
after the bottleneck queue; ingress delays each packet's entry into the
queue instead (reception latency), so the serializer's spacing survives.

Per run it prints iperf3's goodput per flow (each over its own 30 s) and,
from the emulator's time series, the wire rate per flow over the interval
all three were sending, the mean queue and the drops per flow.

--out keeps each run's emulator CSV (plot with experiments/plot.py), the
senders' `ss -tin` samples (--ss) and writes results.json.  --check exits 1
unless each cc's mean Jain index over the runs, over the window REFERENCE
names (reno, bbr: the whole 30 s; cubic: 15-30 s, its steady state; scaled
with --duration), is within +-0.05 of the reference.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
from twoflowlab.testbed import (Testbed, Link, SkipTest, check_environment,  # noqa
                             jain_index, SKIP)

# The testbed contract (docs/testbed.md, "Reference"): cc -> (reference
# Mbit/s of the 30/90/180 ms flows, Jain's index, first second of the window
# it is judged over).  Each flow's iperf3 goodput over seconds FROM..30 of its
# own 30 s: reno and bbr over the whole 30 s, cubic over 15-30 s (its steady
# state; the first 15 s are its start-up transient, see "Why cubic stays at
# about 0.89").  --check: the mean over the runs within +-TOLERANCE.
REFERENCE = {
    "cubic": ([3.68, 2.94, 2.56], 0.978, 15.0),
    "reno": ([5.11, 2.23, 1.82], 0.814, 0.0),
    "bbr": ([1.47, 3.58, 4.05], 0.880, 0.0),
}
TOLERANCE = 0.05
PORTS = [5201, 5202, 5203]


def cc_available(cc):
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            if cc in f.read().split():
                return True
    except OSError:
        pass
    subprocess.run(["modprobe", "tcp_" + cc], capture_output=True)
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            return cc in f.read().split()
    except OSError:
        return False


def _host_sysctls(tb, a):
    for h in tb.servers + tb.clients:
        for kv in a.sysctl:
            k, v = kv.split("=", 1)
            h.sysctl(k, v)


def _ss_sampler(tb, path, interval, stop):
    """Logs `ss -tin` of the senders (server side) every interval s."""
    with open(path, "w") as f:
        t0 = time.monotonic()
        while not stop.wait(interval):
            r = tb.server.run(["ss", "-tin", "state", "established",
                               "( sport >= :%d and sport <= :%d )" % (
                                   PORTS[0], PORTS[-1])], check=False)
            f.write("@ %.2f\n%s" % (time.monotonic() - t0, r.stdout))


def _links(a):
    """fwd and rev Links: the RTT of each flow split between data and ACK
    paths as --split says (sym: half each way)."""
    frac = {"sym": 0.5, "data": 1.0, "ack": 0.0}[a.split]
    fwd = {p: rtt * frac for p, rtt in zip(PORTS, a.rtts)}
    rev = {p: rtt * (1 - frac) for p, rtt in zip(PORTS, a.rtts)}
    jit = {"jitter_ms": a.jitter} if a.jitter_at == "egress" else \
        {"ingress_jitter_ms": a.jitter}
    rjit = jit if a.jitter_dirs == "both" else {}
    return (Link(rate_bps=a.rate, queue_pkts=a.queue,
                 delay_ms=a.rtts[0] * frac, delay_classes=fwd, **jit),
            Link(delay_ms=a.rtts[0] * (1 - frac), delay_classes=rev, **rjit))


def emulator_stats(rows, window=None):
    """From the emulator's fwd time series: each flow's first and last
    interval with data, and over the interval all flows were active (after
    the last one's first second) wire Mbit/s per flow and the mean queue;
    with window (w0, w1) also the wire Mbit/s per flow over w0..w1 s after
    the last flow's data started (for comparison with iperf3's window)."""
    first, last = {}, {}
    for r in rows:
        for p in PORTS:
            # a few full frames: data, not iperf3's small control messages
            if r["bytes_%d" % p] >= 4000:
                first.setdefault(p, r["time_s"] - 0.1)
                last[p] = r["time_s"]
    if len(first) < len(PORTS):
        return {}
    t0 = max(first.values()) + 1.0
    t1 = min(last.values()) - 0.2
    sel = [r for r in rows if t0 < r["time_s"] <= t1]
    if len(sel) < 10:
        return {}
    span = sel[-1]["time_s"] - sel[0]["time_s"] + (
        sel[1]["time_s"] - sel[0]["time_s"])
    mbps = [sum(r["bytes_%d" % p] for r in sel) * 8 / span / 1e6
            for p in PORTS]
    q = sum(r["queue_pkts"] for r in sel) / len(sel)
    extra = {}
    if window and window[0] > 0:
        start = max(first.values())
        win = [r for r in rows
               if start + window[0] < r["time_s"] <= start + window[1]]
        if len(win) >= 10:
            wspan = win[-1]["time_s"] - win[0]["time_s"] + (
                win[1]["time_s"] - win[0]["time_s"])
            wm = [sum(r["bytes_%d" % p] for r in win) * 8 / wspan / 1e6
                  for p in PORTS]
            extra = {"window_wire_mbps": wm, "window_wire_jain": jain_index(wm)}
    return {**extra,
            "start_s": [first[p] for p in PORTS],
            "common_s": [round(t0, 2), round(t1, 2)],
            "common_mbps": mbps, "common_jain": jain_index(mbps),
            "mean_queue_pkts": q,
            "drops": [sum(r["drops_%d" % p] for r in rows) for p in PORTS]}


def start_leads(a):
    """How long before the last client each client is started, s.

    iperf3's data begins about five RTTs after its client starts.
    staggered: all at once.  align: data of all flows begins together.
    sequential: data begins in RTT order (the order a simultaneous start
    gives) --gap s apart, so that each flow's handshake and slow start
    happen after the previous flow's slow-start overshoot is over."""
    hs = [5 * rtt / 1000.0 for rtt in a.rtts]
    if a.start == "staggered":
        data = hs
    elif a.start == "align":
        data = [0.0] * len(a.rtts)
    else:
        rank = sorted(range(len(a.rtts)), key=lambda i: a.rtts[i])
        data = [0.0] * len(a.rtts)
        for k, i in enumerate(rank):
            data[i] = k * a.gap
    launch = [d - h for d, h in zip(data, hs)]
    last = max(launch)
    return {p: last - t for p, t in zip(PORTS, launch)}


def window_mbps(j, t0, t1):
    """Goodput (Mbit/s) of one iperf3 -J report over [t0, t1] s of its test,
    from the receiver's intervals (-R: the client's), omitted ones left out."""
    nbytes, secs = 0, 0.0
    for iv in j.get("intervals", []):
        sm = iv["sum"]
        if sm.get("omitted") or sm["start"] < t0 - 0.05 or sm["end"] > t1 + 0.05:
            continue
        nbytes += sm["bytes"]
        secs += sm["seconds"]
    return nbytes * 8 / secs / 1e6 if secs > 0 else 0.0


def judged(cc, a):
    """(first, last) second of the window the reference judges cc over."""
    ref_from = REFERENCE[cc][2] if cc in REFERENCE else 0.0
    return ref_from * a.duration / 30.0, float(a.duration)


def run_one(cc, a, workdir):
    fwd, rev = _links(a)
    with Testbed(fwd=fwd, rev=rev, cc=cc, workdir=workdir,
                 csv_interval_ms=100) as tb:
        _host_sysctls(tb, a)
        for p in PORTS:
            tb.server.popen(["iperf3", "-s", "-1", "-p", str(p)],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        stop = threading.Event()
        sampler = None
        if a.ss and workdir:
            os.makedirs(workdir, exist_ok=True)
            sampler = threading.Thread(target=_ss_sampler, args=(
                tb, os.path.join(workdir, "ss.log"), a.ss, stop))
            sampler.start()
        # iperf3 needs about five RTTs of control exchange before data
        # flows; --start align starts the long-RTT clients earlier by that
        # much so that the three data transfers begin together
        lead = start_leads(a)
        order = sorted(PORTS, key=lambda q: -lead[q])
        extra = []
        if a.omit:
            extra += ["-O", str(a.omit)]
        if a.window:
            extra += ["-w", a.window]
        procs = {}
        t0 = time.monotonic()
        lmax = max(lead.values())
        for p in order:
            wait = t0 + lmax - lead[p] - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            procs[p] = tb.client.popen(
                ["iperf3", "-c", tb.server_ip, "-p", str(p), "-R", "-C", cc,
                 "-t", str(a.duration), "-J"] + extra,
                stdout=subprocess.PIPE, text=True)
        outs = [procs[p].communicate(timeout=a.duration + a.omit + 60)[0]
                for p in PORTS]
        stop.set()
        if sampler:
            sampler.join()
        summary = tb.stop_emulator()
        rows = tb.read_csv("fwd")
    mbps, retr, wmbps = [], [], []
    w0, w1 = judged(cc, a)
    for p, out in zip(PORTS, outs):
        j = json.loads(out)
        if "error" in j:
            raise RuntimeError("iperf3 port %d: %s" % (p, j["error"]))
        mbps.append(j["end"]["sum_received"]["bits_per_second"] / 1e6)
        # the whole test: iperf3's own total (as the reference measured it)
        wmbps.append(window_mbps(j, w0, w1) if w0 > 0 else mbps[-1])
        retr.append(j["end"].get("sum_sent", {}).get("retransmits"))
        got_cc = j["end"].get("sender_tcp_congestion")
        if got_cc and got_cc != cc:
            raise RuntimeError("sender used %s, not %s" % (got_cc, cc))
    fwd = summary["fwd"]
    r = {"cc": cc, "mbps": mbps, "jain": jain_index(mbps),
         "window_s": [w0, w1], "window_mbps": wmbps,
         "window_jain": jain_index(wmbps),
         "total_mbps": sum(mbps), "retransmits": retr,
         "drops_queue": fwd["drops_queue"],
         "max_queue_pkts": fwd["max_queue_pkts"],
         "emulator_cpu_s": summary["cpu_user_s"] + summary["cpu_sys_s"],
         "socket_drops": summary["socket_drops"]}
    r.update(emulator_stats(rows, (w0, w1)))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cc", default="cubic,reno,bbr")
    ap.add_argument("--runs", type=int, default=1, help="runs per cc")
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--rate", type=float, default=10e6)
    ap.add_argument("--queue", type=int, default=80)
    ap.add_argument("--rtts", default="30,90,180",
                    help="RTTs in ms of the three flows")
    ap.add_argument("--out", help="keep CSVs and results.json here")
    ap.add_argument("--start", choices=("staggered", "align", "sequential"),
                    default="align",
                    help="staggered: start the three clients at once (data "
                    "begins after ~5 RTTs each); align (default): start "
                    "long-RTT clients earlier so their data begins together; "
                    "sequential: data begins in RTT order --gap s apart")
    ap.add_argument("--gap", type=float, default=2.0,
                    help="--start sequential: s between data starts")
    ap.add_argument("--align", action="store_const", const="align",
                    dest="start", help="same as --start align")
    ap.add_argument("--split", choices=("sym", "data", "ack"), default="sym",
                    help="where each flow's RTT is applied: half on the data "
                    "and half on the ACK path (sym), all on data, all on ACKs")
    ap.add_argument("--jitter", type=float, default=None,
                    help="extra delay per packet, uniform in [0, MS], on "
                    "both paths (default: one 1514-byte frame time at "
                    "--rate, 1.21 ms at 10 Mbit/s; 0 = a perfectly "
                    "deterministic link, with drop-tail phase effects)")
    ap.add_argument("--jitter-at", choices=("egress", "ingress"),
                    default="egress",
                    help="egress (default): added to the propagation delay "
                    "after the queue; ingress: delays each packet's entry "
                    "into the queue (the drop decision included)")
    ap.add_argument("--jitter-dirs", choices=("both", "data"),
                    default="both",
                    help="jitter on both paths (default) or on the data "
                    "path only (ACKs keep the spacing they leave with)")
    ap.add_argument("--omit", type=int, default=0,
                    help="iperf3 -O: omit the first N s (slow start)")
    ap.add_argument("--window", help="iperf3 -w")
    ap.add_argument("--sysctl", action="append", default=[],
                    help="KEY=VALUE in every host namespace (repeatable)")
    ap.add_argument("--ss", type=float, default=0.0,
                    help="log the senders' `ss -tin` every N s (with --out)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless each cc's mean Jain over the runs "
                    "(cubic: over 15-30 s) is within +-0.05 of the reference")
    ap.add_argument("--skip-unless-slow", action="store_true",
                    help="exit 77 unless TWOFLOW_SLOW=1 (meson net-slow)")
    ap.add_argument("--emulator", help="twoflow-linkemu binary")
    a = ap.parse_args()
    a.rtts = [float(x) for x in a.rtts.split(",")]
    if a.jitter is None:
        a.jitter = round(1514 * 8 / a.rate * 1e3, 3)
    if a.skip_unless_slow and os.environ.get("TWOFLOW_SLOW") != "1":
        print("SKIP: slow experiment; set TWOFLOW_SLOW=1 to run it")
        return SKIP
    if a.emulator:
        os.environ["TWOFLOW_LINKEMU"] = os.path.abspath(a.emulator)
    try:
        check_environment()
    except SkipTest as e:
        print("SKIP: %s" % e)
        return SKIP

    results, ok = [], True
    print("%.0f Mbit/s, %d-packet drop-tail queue, RTT %s ms, %d s, start "
          "%s, split %s%s" % (
              a.rate / 1e6, a.queue, "/".join("%g" % r for r in a.rtts),
              a.duration, a.start, a.split,
              "".join(", " + x for x in
                      (["jitter %g ms at %s%s" % (
                          a.jitter, a.jitter_at,
                          "" if a.jitter_dirs == "both" else ", data path only"
                      )]) +
                      (["omit %d s" % a.omit] if a.omit else []) +
                      (["-w " + a.window] if a.window else []) + a.sysctl)),
          flush=True)
    for cc in a.cc.split(","):
        if not cc_available(cc):
            print("%-6s not available in this kernel" % cc, flush=True)
            ok = False
            continue
        for run in range(a.runs):
            wd = None
            if a.out:
                wd = os.path.join(a.out, cc if a.runs == 1 else
                                  "%s-%d" % (cc, run + 1))
            r = run_one(cc, a, wd)
            r["run"] = run + 1
            results.append(r)
            line = "%-6s %s Mbit/s  total %.2f  Jain %.3f" % (
                cc, " / ".join("%.2f" % m for m in r["mbps"]),
                r["total_mbps"], r["jain"])
            w0, w1 = r["window_s"]
            if w0 > 0:
                line += "; %g-%g s: %s Mbit/s, Jain %.3f" % (
                    w0, w1, " / ".join("%.2f" % m for m in r["window_mbps"]),
                    r["window_jain"])
            if cc in REFERENCE:
                ref_mbps, ref_j, _ = REFERENCE[cc]
                good = abs(r["window_jain"] - ref_j) <= TOLERANCE
                r["reference_mbps"], r["reference_jain"] = ref_mbps, ref_j
                line += "  (ref %.3f over %g-%g s: %s)" % (
                    ref_j, w0, w1, "within %g" % TOLERANCE if good
                    else "OUTSIDE %g" % TOLERANCE)
            if "common_mbps" in r:
                line += "\n       common %.1f-%.1f s: %s wire Mbit/s, " \
                    "Jain %.3f; mean queue %.1f pkts; starts %s s; " \
                    "drops %s" % (
                        r["common_s"][0], r["common_s"][1],
                        " / ".join("%.2f" % m for m in r["common_mbps"]),
                        r["common_jain"], r["mean_queue_pkts"],
                        "/".join("%.1f" % t for t in r["start_s"]),
                        "/".join("%d" % d for d in r["drops"]))
            if "window_wire_jain" in r:
                line += "\n       %g-%g s after the data start: %s wire Mbit/s, " \
                    "Jain %.3f" % (w0, w1, " / ".join(
                        "%.2f" % m for m in r["window_wire_mbps"]),
                        r["window_wire_jain"])
            line += "; retx %s; emulator cpu %.1f s" % (
                "/".join(str(x) for x in r["retransmits"]),
                r["emulator_cpu_s"])
            print(line, flush=True)
    # one run of 30 s is noisy (Jain varies by +-0.05..0.1 between runs,
    # see docs/testbed.md): --check judges the mean over the runs, each over
    # the cc's reference window
    for cc in a.cc.split(","):
        rs = [r for r in results if r["cc"] == cc]
        if not rs:
            continue
        w0, w1 = rs[0]["window_s"]
        mean = [sum(r["window_mbps"][i] for r in rs) / len(rs)
                for i in range(len(PORTS))]
        mj = sum(r["window_jain"] for r in rs) / len(rs)
        line = "%-6s mean of %d over %g-%g s: %s Mbit/s, Jain of the means " \
            "%.3f, mean Jain %.3f" % (cc, len(rs), w0, w1,
                                      " / ".join("%.2f" % m for m in mean),
                                      jain_index(mean), mj)
        if w0 > 0:
            line += " (whole %g s: mean Jain %.3f" % (
                a.duration, sum(r["jain"] for r in rs) / len(rs))
            wire = [r["window_wire_jain"] for r in rs if "window_wire_jain" in r]
            if len(wire) == len(rs):
                line += "; emulator wire rates over %g-%g s: mean Jain %.3f" % (
                    w0, w1, sum(wire) / len(wire))
            line += ")"
        if cc in REFERENCE:
            good = abs(mj - REFERENCE[cc][1]) <= TOLERANCE
            ok = ok and good
            line += " (ref %.3f: %s)" % (
                REFERENCE[cc][1], "within %g" % TOLERANCE if good
                else "OUTSIDE %g" % TOLERANCE)
        print(line, flush=True)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump({"args": vars(a), "results": results}, f, indent=2)
    if a.check and not ok:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
