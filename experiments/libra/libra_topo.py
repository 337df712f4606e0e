#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Libra (erapsink congestion-control=libra) at the paper's own setup
("Balancing Video on Demand Flows over Links with Heterogeneous Delays",
Figs. 4-8), on the emulated WAN (twoflowlab.testbed). One command per
figure (root; traffic only inside the testbed's namespaces):

  sudo experiments/libra/libra_topo.py capacity     # what the emulator carries
  sudo experiments/libra/libra_topo.py topology     # Figs. 4-6
  sudo experiments/libra/libra_topo.py cross        # Fig. 7
  sudo experiments/libra/libra_topo.py friendliness # Fig. 8
  sudo experiments/libra/libra_topo.py half         # the loss law's 1/2
  sudo experiments/libra/libra_topo.py alpha        # 10 Mbit/s: Libra's C
  /usr/bin/python3 experiments/libra/libra_topo.py plot
  sudo experiments/libra/libra_topo.py smoke        # the CI smoke (~40 s)

Common options: --build B (default build/), --out D (default
/tmp/libra-topo), --figs D (the PNGs; default --out), --rate R (the
bottleneck, bit/s; default the paper's 100M, see capacity), --duration S
(default 45), --runs N (default 2), --protos (default libra,rap,cubic).

capacity:     8 cubic flows (iperf3) and 8 Libra flows on a 100 Mbit/s
              bottleneck (RTTs and buffer of the topology, 83 packets),
              20 s each: link utilization, the emulator's CPU and socket
              drops, and the load of the machine, i.e. whether this 2-core
              machine can emulate the paper's 100 Mbit/s.
topology:     the multi-link topology: 8 flows, each on its own access link
              (the emulator's delay classes: RTT 10, 20, 40, 60, 90, 120,
              150, 180 ms, half on the data and half on the ACK path) into
              one shared bottleneck of --rate with a drop-tail buffer of 83
              and of 1500 packets scaled to the rate (the paper's 10 ms and
              180 ms of a 100 Mbit/s link: 83 x R/100M packets); Libra, rap
              and TCP cubic, --runs runs of --duration s each (Fig. 4:
              throughput per flow against RTT; Fig. 5: rates over time;
              Fig. 6: Jain's index and utilization per buffer).
cross:        a short flow (RTT 20 ms) on its own bottleneck (83-packet
              buffer, scaled) with k = 0-4 cross flows (RTT 180 ms) of the
              same protocol: the short flow's wire rate over the 2nd half
              of the run against its fair share R/(k+1) (Fig. 7).
friendliness: 4 Libra + 4 cubic flows (each of RTT 20, 60, 120, 180 ms once
              per protocol) against 8 cubic flows (Fig. 8): TCP "not
              significantly affected" (the cubic flows' mean >= 0.8 x what
              they get among cubic only) and Libra not starved (a Libra
              flow's mean within 0.67-1.5 of a cubic flow's).
alpha:        the issue's 10 Mbit/s friendliness setup (3 Libra + 3 cubic,
              RTT 30/90/180 ms, 80 packets) for Libra's C = 10 (packet
              pairs: alpha as published, also with the delay brakes always
              on, and with the default floor libra-tcp-rtt), 20, 40 and 100
              Mbit/s: how alpha = X C sets Libra against TCP.
half:         the loss law W -= W B / (2 (T+A)) with and without its 1/2
              (libra-loss-divisor 2 / 1): the topology's Libra runs and the
              friendliness mix with divisor 1 (divisor 2 is the default,
              measured by topology and friendliness).
plot:         the PNGs from DIR/results.json.

Libra's alpha = X C e^(-Y beta) takes C in Mbit/s, so Libra's increase
relative to TCP's depends on the link's absolute capacity. On a link
scaled down by k, with RTTs and BDP-relative buffers kept, TCP's steady
state R = 1.22/(T sqrt p) falls by k at a loss rate k^2 p, and Libra's
R = sqrt(2 alpha/(p B)) falls by k at the same loss rate only with the
same alpha: so the Libra flows are given the paper's C (capacity=100M,
--libra-capacity) and keep its relation to TCP; --libra-capacity 0 makes
them measure C with packet pairs instead.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
from twoflowlab.testbed import (Testbed, SkipTest, check_environment,  # noqa
                                jain_index, read_csv)
from libra_testbed import genv, load, save, summary_line, tool  # noqa: E402

PAPER_RATE = 100e6
PAPER_BUFFERS = (83, 1500)          # packets at 100 Mbit/s: 10 ms, 180 ms
TOPO_RTTS = [10, 20, 40, 60, 90, 120, 150, 180]
CROSS_SHORT_RTT = 20
CROSS_LONG_RTT = 180
FRIEND_RTTS = [20, 60, 120, 180]
ERAP_MTU = 1400                     # erapsink default: datagram incl. header
ERAP_FRAME = ERAP_MTU + 28 + 14
TCP_FRAME = 1514
ERAP_BASE = 7001
TCP_BASE = 5201
PROTOS = ("libra", "rap", "cubic")
FRIEND_GOAL_TCP = 0.8
FRIEND_GOAL_SHARE = (0.67, 1.5)


# ---------------------------------------------------------------- runner

_warm = set()


def warm_registry(a):
    """Build the GStreamer registry before any flow starts: a cold one
    (a fresh --out) takes 10-20 s to scan on the loaded machine, and the
    ERAP senders then started that late beside the TCP flows."""
    reg = genv(a)["GST_REGISTRY_1_0"]
    if reg not in _warm:
        subprocess.run(["gst-inspect-1.0", "erapsink"], env=genv(a),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        _warm.add(reg)


def scaled_queue(a, paper_pkts):
    """the paper's buffer (packets of a 100 Mbit/s link) kept in time"""
    return max(2, int(round(paper_pkts * a.rate / PAPER_RATE)))


def proc_cpu(pid):
    """user + system seconds of a live process and its waited children"""
    try:
        with open("/proc/%d/stat" % pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
        tck = os.sysconf("SC_CLK_TCK")
        return sum(int(x) for x in v[11:15]) / tck
    except OSError:
        return 0.0


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_flows(a, name, flows, queue, rate=None, duration=None, seed=1,
              libra_opts=""):
    """flows: list of (proto, rtt_ms); proto libra | rap | cubic | reno.
    Every flow gets its own port and delay class (its own access link);
    all share the fwd bottleneck. Returns the run's figures."""
    rate = rate or a.rate
    dur = duration or a.duration
    d = os.path.join(a.out, "runs", name)
    os.makedirs(d, exist_ok=True)
    src = os.path.join(a.out, "payload.bin")
    if not os.path.exists(src):
        with open(src, "wb") as f:   # sparse: reads as zeros, costs no disk
            f.truncate(4 << 30)
    ports, cls = [], {}
    ne = nt = 0
    for proto, rtt in flows:
        if proto in ("libra", "rap"):
            p = ERAP_BASE + ne
            ne += 1
        else:
            p = TCP_BASE + nt
            nt += 1
        ports.append(p)
        cls[p] = rtt / 2.0
    warm_registry(a)
    frame_ms = TCP_FRAME * 8 / rate * 1e3
    print("== %s: %g Mbit/s, queue %d, %s, %d s" % (
        name, rate / 1e6, queue,
        " ".join("%s/%d" % f for f in flows), dur), flush=True)
    la0 = loadavg()
    with Testbed(rate_bps=rate, queue_pkts=queue, delay_ms=5,
                 delay_classes=cls, workdir=d, keep_workdir=True,
                 jitter_ms=frame_ms, csv_interval_ms=100, seed=seed) as tb:
        rx, tx, tcp, srv = [], [], [], []
        for (proto, rtt), p in zip(flows, ports):
            if proto in ("libra", "rap"):
                rx.append(tb.client.popen(
                    [tool(a), "recv", str(p), "/dev/null", "-t",
                     str(dur + 40)], env=genv(a), stdout=subprocess.PIPE,
                    text=True))
            else:
                srv.append(tb.server.popen(
                    ["iperf3", "-s", "-1", "-p", str(p)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.7)
        cpu_before = {}
        for i, ((proto, rtt), p) in enumerate(zip(flows, ports)):
            if proto in ("libra", "rap"):
                continue
            tcp.append((p, tb.client.popen(
                ["iperf3", "-c", tb.server_ip, "-p", str(p), "-R", "-C",
                 proto, "-t", str(dur), "-J"],
                stdout=subprocess.PIPE, text=True)))
        for i, ((proto, rtt), p) in enumerate(zip(flows, ports)):
            if proto not in ("libra", "rap"):
                continue
            opts = "congestion-control=%s" % proto
            if proto == "libra":
                opts += " libra-seed=%d" % (i + 1 + 100 * seed)
                opts += " capacity=%d" % int(a.libra_capacity)
                for o in (a.libra_opts, libra_opts):
                    if o:
                        opts += " " + o
            tx.append((p, tb.server.popen(
                [tool(a), "send", tb.client_ip, str(p), src, "-d", str(dur),
                 "-c", os.path.join(d, "send-%d.csv" % p), "-r",
                 str(int(a.initial_rate)), "-l", "1", "-o", opts],
                env=genv(a), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True)))
        t_start = time.monotonic()
        # the ERAP senders' CPU, sampled just before they end
        time.sleep(max(0, dur - 1.5))
        sender_cpu = sum(proc_cpu(t.pid) for _, t in tx)
        recv_cpu = sum(proc_cpu(r.pid) for r in rx)
        snd = {}
        for p, t in tx:
            out, err = t.communicate(timeout=dur + 60)
            snd[p] = summary_line(out)
            if not snd[p]:
                raise RuntimeError("sender %d: %s" % (p, err[-800:]))
        tcpj = {}
        for p, t in tcp:
            j = json.loads(t.communicate(timeout=dur + 60)[0])
            if "error" in j:
                raise RuntimeError("iperf3 port %d: %s" % (p, j["error"]))
            tcpj[p] = j
        wall = time.monotonic() - t_start
        for r in rx:
            r.kill()
            r.communicate()
        summary = tb.stop_emulator()
        rows = tb.read_csv("fwd")
    la1 = loadavg()
    # each flow's data start: its first 0.1 s interval with 4 kB
    starts = []
    for p in ports:
        st = None
        for r in rows:
            if r.get("bytes_%d" % p, 0) >= 4000:
                st = r["time_s"] - 0.1
                break
        starts.append(st if st is not None else float("inf"))
    # the window: from the first data of any flow
    t0 = min(starts)
    t1 = t0 + dur
    # the common window, all flows sending: from the last start (plus 2 s)
    # to the first end; shares are judged on the wire rates over it
    c0, c1 = max(starts) + 2.0, min(starts) + dur
    csel = [r for r in rows if c0 < r["time_s"] <= c1 + 1e-9]
    cspan = max(1e-9, len(csel) * 0.1)
    common = [sum(r.get("bytes_%d" % p, 0) for r in csel) * 8 / cspan / 1e6
              for p in ports]
    sel = [r for r in rows if t0 < r["time_s"] <= t1 + 1e-9]
    span = max(1e-9, len(sel) * 0.1)
    half = [r for r in sel if r["time_s"] > t0 + dur / 2]
    hspan = max(1e-9, len(half) * 0.1)
    wire = [sum(r.get("bytes_%d" % p, 0) for r in sel) * 8 / span / 1e6
            for p in ports]
    wire2 = [sum(r.get("bytes_%d" % p, 0) for r in half) * 8 / hspan / 1e6
             for p in ports]
    drops = [sum(r.get("drops_%d" % p, 0) for r in sel) for p in ports]
    gp = []
    for (proto, rtt), p in zip(flows, ports):
        if p in snd:
            gp.append(snd[p].get("acked", 0) * 8 / dur / 1e6)
        else:
            gp.append(tcpj[p]["end"]["sum_received"]["bits_per_second"] / 1e6)
    util = sum(r["delivered_bytes"] for r in sel) * 8 / (rate * span)
    util2 = sum(r["delivered_bytes"] for r in half) * 8 / (rate * hspan)
    r = {"name": name, "rate_bps": rate, "queue_pkts": queue,
         "duration_s": dur, "seed": seed,
         "flows": [{"proto": f[0], "rtt_ms": f[1], "port": p,
                    "goodput_mbps": g, "wire_mbps": w,
                    "wire_mbps_2nd_half": w2, "common_mbps": cm,
                    "data_start_s": st - t0, "drops": dr,
                    "lost": snd.get(p, {}).get("lost"),
                    "reactions": snd.get(p, {}).get("reactions"),
                    "timeouts": snd.get(p, {}).get("timeouts"),
                    "spurious": snd.get(p, {}).get("spurious"),
                    "undone": snd.get(p, {}).get("undone"),
                    "retransmits": (tcpj[p]["end"]["sum_sent"].get(
                        "retransmits") if p in tcpj else None)}
                   for f, p, g, w, w2, cm, st, dr in zip(
                       flows, ports, gp, wire, wire2, common, starts,
                       drops)],
         "jain": jain_index(gp), "jain_wire_2nd_half": jain_index(wire2),
         "jain_common": jain_index(common), "common_window_s": [c0 - t0,
                                                               c1 - t0],
         "utilization": util, "utilization_2nd_half": util2,
         "mean_queue_pkts": sum(x["queue_pkts"] for x in sel) / max(1, len(sel)),
         "drops_queue": summary["fwd"]["drops_queue"],
         "emulator_cpu_s": summary["cpu_user_s"] + summary["cpu_sys_s"],
         "emulator_socket_drops": summary.get("socket_drops"),
         "erap_sender_cpu_s": sender_cpu, "erap_receiver_cpu_s": recv_cpu,
         "wall_s": wall, "loadavg": [la0, la1], "window_s": [t0, t1],
         "libra_opts": " ".join(o for o in (a.libra_opts, libra_opts) if o),
         "libra_capacity": a.libra_capacity,
         "emulator_csv": os.path.join(d, "linkemu.csv")}
    print("   starts %s s; common window %.1f-%.1f s: wire %s Mbit/s, "
          "Jain %.3f" % (" ".join("%.1f" % (x - t0) for x in starts),
                         c0 - t0, c1 - t0,
                         " ".join("%.2f" % x for x in common),
                         r["jain_common"]), flush=True)
    print("   goodput %s Mbit/s; Jain %.3f (wire, 2nd half %.3f); "
          "utilization %.3f (2nd half %.3f); queue %.1f; emulator cpu %.1f s,"
          " socket drops %s; ERAP senders cpu %.1f s; load %.1f-%.1f" % (
              " ".join("%s/%d:%.2f" % (f[0][0], f[1], g)
                       for f, g in zip(flows, gp)),
              r["jain"], r["jain_wire_2nd_half"], util, util2,
              r["mean_queue_pkts"], r["emulator_cpu_s"],
              r["emulator_socket_drops"], sender_cpu, la0, la1), flush=True)
    return r


def means(runs, key_fn):
    xs = [key_fn(r) for r in runs]
    return sum(xs) / max(1, len(xs))


# ---------------------------------------------------------------- figures

def exp_capacity(a):
    class A:
        pass
    res = {}
    q = 83
    for proto in ("cubic", "libra"):
        flows = [(proto, t) for t in TOPO_RTTS]
        r = run_flows(a, "capacity-%s-100M" % proto, flows, q,
                      rate=PAPER_RATE, duration=a.capacity_duration)
        res[proto] = r
    res["verdict"] = {p: res[p]["utilization"] for p in ("cubic", "libra")}
    save(a, "capacity", res)


def topo_runs(a, buffers, protos, libra_opts="", tag=""):
    res = {}
    for b in buffers:
        q = scaled_queue(a, b)
        for proto in protos:
            key = "%s-b%d%s" % (proto, b, tag)
            runs = []
            for i in range(a.runs):
                runs.append(run_flows(
                    a, "topo-%s-%d" % (key, i + 1),
                    [(proto, t) for t in TOPO_RTTS], q, seed=i + 1,
                    libra_opts=libra_opts if proto == "libra" else ""))
            res[key] = {"proto": proto, "paper_buffer": b, "queue_pkts": q,
                        "runs": runs,
                        "mean_mbps": [means(runs, lambda r, k=k:
                                            r["flows"][k]["common_mbps"])
                                      for k in range(len(TOPO_RTTS))],
                        "mean_goodput_mbps": [means(
                            runs, lambda r, k=k:
                            r["flows"][k]["goodput_mbps"])
                            for k in range(len(TOPO_RTTS))],
                        "jain": [r["jain_common"] for r in runs],
                        "jain_goodput": [r["jain"] for r in runs],
                        "utilization": [r["utilization"] for r in runs]}
            print("-- %s: mean Mbit/s by RTT %s; Jain %s; utilization %s" % (
                key, " ".join("%.2f" % x for x in res[key]["mean_mbps"]),
                " ".join("%.3f" % x for x in res[key]["jain"]),
                " ".join("%.3f" % x for x in res[key]["utilization"])),
                flush=True)
    return res


def exp_topology(a):
    res = load(a).get("topology", {})
    res.update(topo_runs(a, a.buffers, a.protos.split(","), tag=a.tag))
    res["rtts_ms"] = TOPO_RTTS
    res["rate_bps"] = a.rate
    save(a, "topology", res)
    exp_plot(a)


def exp_cross(a):
    res = load(a).get("cross", {})
    q = scaled_queue(a, PAPER_BUFFERS[0])
    for proto in a.protos.split(","):
        rows = []
        for k in range(0, 5):
            flows = [(proto, CROSS_SHORT_RTT)] + [(proto, CROSS_LONG_RTT)] * k
            runs = [run_flows(a, "cross-%s-k%d-%d" % (proto, k, i + 1),
                              flows, q, seed=i + 1)
                    for i in range(a.runs)]
            fair = a.rate / 1e6 / (k + 1)
            # the second half: the steady state (a lone Libra flow needs
            # ~40 s to fill 100 Mbit/s from 1 Mbit/s at alpha/(T+A))
            short = means(runs, lambda r: r["flows"][0]["wire_mbps_2nd_half"])
            cross = (means(runs, lambda r: sum(
                f["wire_mbps_2nd_half"] for f in r["flows"][1:]) / k)
                if k else None)
            rows.append({"k": k, "short_mbps": short, "cross_mbps": cross,
                         "fair_mbps": fair,
                         "short_over_fair": short / fair,
                         "short_over_fair_goodput": means(
                             runs, lambda r: r["flows"][0]["goodput_mbps"]) /
                         fair,
                         "utilization_2nd_half": means(
                             runs, lambda r: r["utilization_2nd_half"]),
                         "runs": runs})
            print("-- cross %s k=%d: short %.2f, cross %s, fair %.2f: "
                  "short/fair %.2f" % (proto, k, short,
                                       "%.2f" % cross if k else "-", fair,
                                       short / fair), flush=True)
        res[proto] = rows
    res["queue_pkts"] = q
    res["rate_bps"] = a.rate
    save(a, "cross", res)
    exp_plot(a)


def friend_pair(a, buf, libra_opts="", tag=""):
    q = scaled_queue(a, buf)
    out = {"runs": [], "paper_buffer": buf, "queue_pkts": q}
    for i in range(a.runs):
        base = run_flows(a, "friend-b%d-cubic8-%d" % (buf, i + 1),
                         [("cubic", t) for t in FRIEND_RTTS] * 2, q,
                         seed=i + 1) if not tag else None
        mix = run_flows(a, "friend-b%d-libra4-cubic4%s-%d" % (buf, tag, i + 1),
                        [("libra", t) for t in FRIEND_RTTS] +
                        [("cubic", t) for t in FRIEND_RTTS], q, seed=i + 1,
                        libra_opts=libra_opts)
        out["runs"].append({"baseline": base, "mix": mix})
    return out


def friend_figures(res, baseline_runs):
    mix = [r["mix"] for r in res["runs"]]
    # per-flow wire rates over the window all flows were sending
    libra = means(mix, lambda r: sum(f["common_mbps"] for f in r["flows"]
                                     if f["proto"] == "libra") / 4)
    cubic = means(mix, lambda r: sum(f["common_mbps"] for f in r["flows"]
                                     if f["proto"] == "cubic") / 4)
    base = means(baseline_runs, lambda r: sum(
        f["common_mbps"] for f in r["flows"]) / 8) if baseline_runs else None
    res["libra_flow_mbps"] = libra
    res["cubic_flow_mbps"] = cubic
    res["cubic_flow_baseline_mbps"] = base
    res["libra_over_cubic"] = libra / max(1e-9, cubic)
    res["per_run_libra_over_cubic"] = [
        (sum(f["common_mbps"] for f in r["flows"] if f["proto"] == "libra") /
         max(1e-9, sum(f["common_mbps"] for f in r["flows"]
                       if f["proto"] == "cubic"))) for r in mix]
    res["per_rtt_libra_over_cubic"] = [
        means(mix, lambda r, i=i: [f for f in r["flows"]
                                   if f["proto"] == "libra"][i]
              ["common_mbps"]) /
        max(1e-9, means(mix, lambda r, i=i: [f for f in r["flows"]
                                             if f["proto"] == "cubic"][i]
                        ["common_mbps"])) for i in range(len(FRIEND_RTTS))]
    if base:
        res["cubic_vs_baseline"] = cubic / base
    res["goal"] = {"cubic_vs_baseline_min": FRIEND_GOAL_TCP,
                   "libra_over_cubic": FRIEND_GOAL_SHARE}
    res["met"] = bool(
        (base is None or cubic / base >= FRIEND_GOAL_TCP) and
        FRIEND_GOAL_SHARE[0] <= libra / max(1e-9, cubic) <=
        FRIEND_GOAL_SHARE[1])
    print("friendliness: Libra flow %.2f, cubic flow %.2f Mbit/s (ratio %.2f,"
          " goal 0.67-1.5); cubic among cubic %s (cubic now/then %s, goal >= "
          "0.8): %s" % (libra, cubic, libra / max(1e-9, cubic),
                        "%.2f" % base if base else "-",
                        "%.2f" % (cubic / base) if base else "-",
                        "met" if res["met"] else "NOT met"), flush=True)
    return res


def exp_friendliness(a):
    res = load(a).get("friendliness", {})
    for b in a.buffers:
        r = friend_pair(a, b)
        res["b%d" % b] = friend_figures(r, [x["baseline"] for x in r["runs"]])
    res["rate_bps"] = a.rate
    save(a, "friendliness", res)
    exp_plot(a)


def exp_half(a):
    """the same runs with the loss law's 1/2 removed (divisor 1)"""
    prev = load(a)
    res = prev.get("half", {})
    res["topology"] = topo_runs(a, a.buffers, ["libra"],
                                libra_opts="libra-loss-divisor=1",
                                tag="-nohalf")
    for b in a.buffers:
        fr = friend_pair(a, b, libra_opts="libra-loss-divisor=1",
                         tag="-nohalf")
        base = [r["baseline"] for r in prev.get("friendliness", {}).get(
            "b%d" % b, {}).get("runs", [])]
        res["friendliness-b%d" % b] = friend_figures(fr, base)
    save(a, "half", res)
    exp_plot(a)


PUBLISHED = "libra-tcp-rtt=0 libra-tcp-base-rtt=0"   # alpha = X C e^(-Y beta)
ALPHA_VARIANTS = [
    ("C 10 (pairs), alpha as published, brakes always", 0,
     PUBLISHED + " libra-loss-memory=0"),
    ("C 10 (pairs), alpha as published", 0, PUBLISHED),
    ("C 10 (pairs), default (floors)", 0, ""),
    ("C 20", 20e6, PUBLISHED),
    ("C 40", 40e6, PUBLISHED),
    ("C 100 (paper)", 100e6, "")]
ALPHA_RTTS = [30, 90, 180]


def exp_alpha(a):
    """the issue's friendliness setup (10 Mbit/s, 80-packet queue, three
    Libra + three cubic flows of RTT 30/90/180 ms, against six cubic) for
    Libra's C = 10 Mbit/s (packet pairs) with alpha as published (with
    and without the delay brakes always on) and with the default floor,
    and for C = 20, 40, 100 Mbit/s configured: alpha = X C sets Libra's
    aggressiveness relative to TCP"""
    a.rate = 10e6
    res = {"rate_bps": a.rate, "queue_pkts": 80, "variants": []}
    base = [run_flows(a, "alpha-cubic6-%d" % (i + 1),
                      [("cubic", t) for t in ALPHA_RTTS] * 2, 80,
                      seed=i + 1) for i in range(a.runs)]
    bflow = means(base, lambda r: sum(f["common_mbps"]
                                      for f in r["flows"]) / 6)
    res["cubic_flow_baseline_mbps"] = bflow
    res["baseline"] = base
    cap0 = a.libra_capacity
    sel = ([int(x) for x in a.alpha_variants.split(",")]
           if a.alpha_variants else range(len(ALPHA_VARIANTS)))
    for label, cap, opts in [ALPHA_VARIANTS[k] for k in sel]:
        a.libra_capacity = cap
        runs = [run_flows(a, "alpha-v%d-%d" % (
            len(res["variants"]) + 1, i + 1),
            [("libra", t) for t in ALPHA_RTTS] +
            [("cubic", t) for t in ALPHA_RTTS], 80, seed=i + 1,
            libra_opts=opts) for i in range(a.runs)]
        lib = means(runs, lambda r: sum(f["common_mbps"] for f in r["flows"]
                                        if f["proto"] == "libra") / 3)
        cub = means(runs, lambda r: sum(f["common_mbps"] for f in r["flows"]
                                        if f["proto"] == "cubic") / 3)
        v = {"label": label, "capacity": cap, "libra_opts": opts,
             "libra_flow_mbps": lib, "cubic_flow_mbps": cub,
             "libra_over_cubic": lib / max(1e-9, cub),
             "cubic_vs_baseline": cub / max(1e-9, bflow),
             "libra_mbps": [means(runs, lambda r, i=i: r["flows"][i]
                                  ["common_mbps"]) for i in range(3)],
             "runs": runs}
        v["met"] = bool(v["cubic_vs_baseline"] >= FRIEND_GOAL_TCP and
                        FRIEND_GOAL_SHARE[0] <= v["libra_over_cubic"] <=
                        FRIEND_GOAL_SHARE[1])
        print("-- alpha %s: Libra flow %.2f, cubic flow %.2f (among cubic "
              "%.2f): Libra/cubic %.2f, cubic now/then %.2f: %s" % (
                  label, lib, cub, bflow, v["libra_over_cubic"],
                  v["cubic_vs_baseline"], "met" if v["met"] else "not met"),
              flush=True)
        res["variants"].append(v)
    a.libra_capacity = cap0
    save(a, "alpha", res)
    exp_plot(a)


def plot_alpha(a, res):
    plt = _plt()
    vs = res["variants"]
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = range(len(vs))
    ax.bar([x - 0.18 for x in xs], [v["libra_over_cubic"] for v in vs], 0.36,
           color=COLORS["libra"], label="Libra flow / cubic flow")
    ax.bar([x + 0.18 for x in xs], [v["cubic_vs_baseline"] for v in vs],
           0.36, color=COLORS["cubic"],
           label="cubic flow / cubic flow among cubic only")
    for x, v in zip(xs, vs):
        ax.text(x - 0.18, v["libra_over_cubic"] + 0.02,
                "%.2f" % v["libra_over_cubic"], ha="center", fontsize=7)
        ax.text(x + 0.18, v["cubic_vs_baseline"] + 0.02,
                "%.2f" % v["cubic_vs_baseline"], ha="center", fontsize=7)
    ax.axhspan(FRIEND_GOAL_SHARE[0], FRIEND_GOAL_SHARE[1], color="tab:green",
               alpha=0.08, label="goal for Libra/cubic (0.67-1.5)")
    ax.axhline(FRIEND_GOAL_TCP, color="tab:blue", lw=0.7, ls=":",
               label="goal for cubic (>= 0.8)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([v["label"].replace(", ", ",\n") for v in vs],
                       fontsize=6)
    ax.set_title("3 Libra + 3 cubic (RTT 30/90/180 ms), 10 Mbit/s, 80 pkts:"
                 " Libra's C in alpha = X C", fontsize=9)
    ax.set_ylim(0, 2.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(os.path.join(a.figs, "alpha.png"), dpi=90)
    plt.close(fig)


def exp_smoke(a):
    """CI: 2 Libra flows (RTT 20 and 120 ms) + 2 cubic flows on a 10
    Mbit/s link with an 80-packet buffer (the setup in which three Libra
    flows got 0.79 of 10 Mbit/s beside three cubic flows), --duration s:
    the link is used, the four flows overlap, both Libra flows carry data
    at comparable rates (within 2x), and Libra with erapsink's defaults
    (C from packet pairs) is not starved nor starving (its mean flow
    within 0.5-2 of cubic's, wire rates while all four send)."""
    a.rate = 10e6
    a.libra_capacity = 0        # erapsink's default: C from packet pairs
    flows = [("libra", 20), ("libra", 120), ("cubic", 20), ("cubic", 120)]
    r = run_flows(a, "smoke", flows, 80, duration=a.duration)
    # the window all four flows were sending (their wire rates there)
    g = [f["common_mbps"] for f in r["flows"]]
    libra, cubic = (g[0] + g[1]) / 2, (g[2] + g[3]) / 2
    ok = True

    def expect(cond, msg):
        nonlocal ok
        print("%s: %s" % ("ok" if cond else "FAIL", msg), flush=True)
        ok = ok and cond
    expect(r["utilization_2nd_half"] >= 0.85,
           "utilization over the 2nd half %.3f >= 0.85" %
           r["utilization_2nd_half"])
    expect(r["common_window_s"][1] - r["common_window_s"][0] >= 0.6 *
           a.duration, "all four flows sent together for %.1f s" % (
               r["common_window_s"][1] - r["common_window_s"][0]))
    expect(min(g[0], g[1]) > 0 and max(g[0], g[1]) / min(g[0], g[1])
           <= 2.0, "Libra RTT 20 / 120 ms %.2f / %.2f Mbit/s within 2x" % (
               g[0], g[1]))
    expect(0.5 <= libra / max(1e-9, cubic) <= 2.0,
           "Libra flow %.2f vs cubic flow %.2f Mbit/s: ratio %.2f within "
           "0.5-2 (not starved, not starving)" % (libra, cubic,
                                                  libra / max(1e-9, cubic)))
    return 0 if ok else 1


# ---------------------------------------------------------------- plots

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


COLORS = {"libra": "tab:green", "rap": "tab:orange", "cubic": "tab:blue",
          "libra-nohalf": "tab:olive"}


def plot_rates(r, png, smooth_s=2.0):
    plt = _plt()
    if not os.path.exists(r["emulator_csv"]):
        return
    rows = read_csv(r["emulator_csv"], "fwd")
    n = max(1, int(round(smooth_s / 0.1)))
    t0 = r["window_s"][0]
    plt.figure(figsize=(10, 4))
    for f in r["flows"]:
        p = f["port"]
        vals = [row.get("bytes_%d" % p, 0) for row in rows]
        ts = [row["time_s"] for row in rows]
        xs, ys = [], []
        for k in range(0, len(vals) - n + 1, n):
            xs.append(ts[k + n - 1] - t0)
            ys.append(sum(vals[k:k + n]) * 8 / (n * 0.1) / 1e6)
        plt.plot(xs, ys, lw=1, ls="-" if f["proto"] == "libra" else "--",
                 label="%s RTT %d ms" % (f["proto"], f["rtt_ms"]))
    plt.xlim(0, r["duration_s"])
    plt.xlabel("s")
    plt.ylabel("Mbit/s at the bottleneck (%g s bins)" % smooth_s)
    plt.title("%s: %g Mbit/s, %d-packet buffer; Jain %.3f, utilization %.2f"
              % (r["name"], r["rate_bps"] / 1e6, r["queue_pkts"], r["jain"],
                 r["utilization"]))
    plt.grid(alpha=0.3)
    plt.legend(fontsize=7, ncol=4)
    plt.tight_layout()
    plt.savefig(png, dpi=90)
    plt.close()


def plot_topology(a, res, half):
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    last = None
    for ax, b in zip(axes, PAPER_BUFFERS):
        for proto in PROTOS + ("libra-nohalf",):
            key = "%s-b%d" % (proto, b)
            src = res
            if proto == "libra-nohalf":
                key = "libra-b%d-nohalf" % b
                src = half
            t = src.get(key)
            if not t:
                continue
            last = t
            for r in t["runs"]:
                ax.plot(TOPO_RTTS, [f["common_mbps"] for f in r["flows"]],
                        ".", color=COLORS[proto], alpha=0.4)
            ax.plot(TOPO_RTTS, t["mean_mbps"], "-o", color=COLORS[proto],
                    label="%s (Jain %.3f)" % (
                        "libra without the 1/2" if proto == "libra-nohalf"
                        else proto, sum(t["jain"]) / len(t["jain"])))
        ax.axhline(res["rate_bps"] / 1e6 / len(TOPO_RTTS), color="k", lw=0.6,
                   ls=":")
        ax.set_title("buffer %d packets at 100 Mbit/s = %d here" % (
            b, scaled_queue(a, b)))
        ax.set_xlabel("RTT, ms")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("Mbit/s per flow at the bottleneck (dots: runs)")
    fig.suptitle("8 flows, %g Mbit/s bottleneck%s, "
                 "%d runs x %d s" % (res["rate_bps"] / 1e6,
                                     " (the paper's)" if res["rate_bps"] ==
                                     PAPER_RATE else
                                     " (the paper's 100 scaled)",
                                     len(last["runs"]), last["runs"][0]
                                     ["duration_s"]))
    fig.tight_layout()
    fig.savefig(os.path.join(a.figs, "topo-throughput.png"), dpi=90)
    plt.close(fig)
    # Jain and utilization per buffer
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    names, jains, utils, cols = [], [], [], []
    for b in PAPER_BUFFERS:
        for proto in PROTOS + ("libra-nohalf",):
            key = "%s-b%d" % (proto, b)
            src = res
            if proto == "libra-nohalf":
                key, src = "libra-b%d-nohalf" % b, half
            t = src.get(key)
            if not t:
                continue
            names.append("%s\n%d pkts" % (proto.replace("-nohalf",
                                                         "\nno 1/2"), b))
            jains.append(sum(t["jain"]) / len(t["jain"]))
            utils.append(sum(t["utilization"]) / len(t["utilization"]))
            cols.append(COLORS[proto])
    for ax, vals, lab in ((axes[0], jains, "Jain's index (mean of runs)"),
                          (axes[1], utils, "utilization (mean of runs)")):
        bars = ax.bar(range(len(vals)), vals, color=cols)
        for bar, v in zip(bars, vals):
            ax.text(bar.get_x() + bar.get_width() / 2, v + 0.01, "%.3f" % v,
                    ha="center", fontsize=7)
        ax.set_xticks(range(len(vals)))
        ax.set_xticklabels(names, fontsize=7)
        ax.set_ylim(0, 1.08)
        ax.set_ylabel(lab)
    fig.suptitle("8 flows, RTT 10-180 ms; buffers: the paper's 83 and 1500 "
                 "packets (100 Mbit/s)")
    fig.tight_layout()
    fig.savefig(os.path.join(a.figs, "topo-jain.png"), dpi=90)
    plt.close(fig)
    for proto in PROTOS:
        t = res.get("%s-b%d" % (proto, PAPER_BUFFERS[0]))
        if t:
            plot_rates(t["runs"][0], os.path.join(
                a.figs, "topo-rates-%s-b%d.png" % (proto, PAPER_BUFFERS[0])))


def plot_cross(a, res):
    plt = _plt()
    plt.figure(figsize=(6.5, 4))
    for proto in PROTOS:
        rows = res.get(proto)
        if not rows:
            continue
        plt.plot([x["k"] for x in rows], [x["short_over_fair"] for x in rows],
                 "-o", color=COLORS[proto], label=proto)
    plt.axhline(1, color="k", lw=0.6, ls=":")
    plt.xlabel("cross flows (RTT %d ms)" % CROSS_LONG_RTT)
    plt.ylabel("short flow (RTT %d ms) / fair share, 2nd half" %
               CROSS_SHORT_RTT)
    plt.yscale("log")
    plt.title("a short flow on its own %g Mbit/s link, %d-packet buffer" % (
        res["rate_bps"] / 1e6, res["queue_pkts"]))
    plt.grid(alpha=0.3, which="both")
    plt.legend()
    plt.tight_layout()
    plt.savefig(os.path.join(a.figs, "cross.png"), dpi=90)
    plt.close()


def plot_friend(a, res, half):
    plt = _plt()
    bufs = [b for b in PAPER_BUFFERS if "b%d" % b in res]
    if not bufs:
        return
    fig, axes = plt.subplots(1, len(bufs), figsize=(7 * len(bufs), 4.2),
                             squeeze=False)
    w = 0.35
    for ax, b in zip(axes[0], bufs):
        fr = res["b%d" % b]
        sets = [("with the 1/2", fr)]
        if half.get("friendliness-b%d" % b):
            sets.append(("without", half["friendliness-b%d" % b]))
        for j, (lab, st) in enumerate(sets):
            mix = [r["mix"] for r in st["runs"]]
            for k, proto in enumerate(("libra", "cubic")):
                vals = [means(mix, lambda r, i=i: [
                    f for f in r["flows"] if f["proto"] == proto][i]
                    ["common_mbps"]) for i in range(len(FRIEND_RTTS))]
                xs = [x + (2 * j + k) * w / 2 - w
                      for x in range(len(FRIEND_RTTS))]
                ax.bar(xs, vals, w / 2, color=COLORS[proto],
                       alpha=1 - 0.45 * j, label="%s, %s" % (proto, lab))
        base = fr.get("cubic_flow_baseline_mbps")
        if base:
            ax.axhline(base, color="k", lw=0.8, ls=":",
                       label="mean cubic flow among 8 cubic (%.2f)" % base)
        ax.set_xticks(range(len(FRIEND_RTTS)))
        ax.set_xticklabels(["RTT %d ms" % t for t in FRIEND_RTTS])
        ax.set_ylabel("Mbit/s at the bottleneck, all flows sending")
        ax.set_title("buffer %d pkts: Libra/cubic %.2f, cubic vs among cubic"
                     " %.2f%s" % (
                         fr["queue_pkts"], fr["libra_over_cubic"],
                         fr.get("cubic_vs_baseline") or 0,
                         ("; without the 1/2: %.2f" % half[
                             "friendliness-b%d" % b]["libra_over_cubic"])
                         if half.get("friendliness-b%d" % b) else ""),
                     fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle("4 Libra + 4 cubic flows, %g Mbit/s" % (
        res["rate_bps"] / 1e6))
    fig.tight_layout()
    fig.savefig(os.path.join(a.figs, "friendliness.png"), dpi=90)
    plt.close(fig)
    for b in bufs:
        plot_rates(res["b%d" % b]["runs"][0]["mix"], os.path.join(
            a.figs, "friendliness-rates-b%d.png" % b))


def exp_plot(a):
    res = load(a)
    os.makedirs(a.figs, exist_ok=True)
    if "topology" in res:
        plot_topology(a, res["topology"], res.get("half", {}).get(
            "topology", {}))
    if "cross" in res:
        plot_cross(a, res["cross"])
    if "friendliness" in res:
        plot_friend(a, res["friendliness"], res.get("half", {}))
    if "alpha" in res:
        plot_alpha(a, res["alpha"])


def _m(xs):
    return sum(xs) / max(1, len(xs))


def exp_report(a):
    """markdown tables of DIR/results.json (for docs/results.md)"""
    res = load(a)
    out = []
    c = res.get("capacity")
    if c:
        out.append("| 100 Mbit/s, 83 pkts, 8 flows, 20 s | utilization "
                   "(2nd half) | emulator CPU | socket drops | ERAP senders "
                   "CPU | load avg |")
        out.append("|---|---|---|---|---|---|")
        for p in ("cubic", "libra"):
            r = c[p]
            out.append("| %s | %.3f (%.3f) | %.1f s (%.0f %% of a core) | %s "
                       "| %.1f s | %.1f-%.1f |" % (
                           p, r["utilization"], r["utilization_2nd_half"],
                           r["emulator_cpu_s"],
                           100 * r["emulator_cpu_s"] / r["wall_s"],
                           r["emulator_socket_drops"], r["erap_sender_cpu_s"],
                           r["loadavg"][0], r["loadavg"][1]))
        out.append("")
    t = res.get("topology")
    h = res.get("half", {}).get("topology", {})
    if t:
        out.append("| run | buffer | Mbit/s by RTT %s ms (mean of runs) | "
                   "Jain (runs) | utilization (runs) |" %
                   "/".join(str(x) for x in TOPO_RTTS))
        out.append("|---|---|---|---|---|")
        keys = [k for k in t if isinstance(t[k], dict) and "runs" in t[k]]
        keys += [k for k in h if isinstance(h[k], dict) and "runs" in h[k]]
        for k in keys:
            v = t.get(k) or h.get(k)
            out.append("| %s | %d | %s | %s | %s |" % (
                k.rsplit("-b", 1)[0] + (" " + k.split("-", 2)[2]
                                        if k.count("-") > 1 else ""),
                v["queue_pkts"],
                " / ".join("%.1f" % x for x in v["mean_mbps"]),
                ", ".join("%.3f" % x for x in v["jain"]),
                ", ".join("%.3f" % x for x in v["utilization"])))
        out.append("")
    cr = res.get("cross")
    if cr:
        out.append("| cross flows k | %s |" % " | ".join(
            p for p in PROTOS if p in cr))
        out.append("|---|%s" % ("---|" * len([p for p in PROTOS if p in cr])))
        for k in range(5):
            out.append("| %d | %s |" % (k, " | ".join(
                "%.2f (%.1f of %.1f Mbit/s)" % (
                    cr[p][k]["short_over_fair"], cr[p][k]["short_mbps"],
                    cr[p][k]["fair_mbps"]) for p in PROTOS if p in cr)))
        out.append("")
    fr = res.get("friendliness", {})
    for b in PAPER_BUFFERS:
        for lab, f in (("with the 1/2", fr.get("b%d" % b)),
                       ("without the 1/2", res.get("half", {}).get(
                           "friendliness-b%d" % b))):
            if not f:
                continue
            out.append("* buffer %d, %s: Libra flow %.2f, cubic flow %.2f "
                       "Mbit/s: Libra/cubic **%.2f** (runs %s; per RTT %s: "
                       "%s); cubic flow among 8 cubic %s: cubic now/then "
                       "**%s**; %s" % (
                           f["queue_pkts"], lab, f["libra_flow_mbps"],
                           f["cubic_flow_mbps"], f["libra_over_cubic"],
                           ", ".join("%.2f" % x for x in
                                     f["per_run_libra_over_cubic"]),
                           "/".join(str(x) for x in FRIEND_RTTS),
                           " / ".join("%.2f" % x for x in
                                      f["per_rtt_libra_over_cubic"]),
                           "%.2f" % f["cubic_flow_baseline_mbps"]
                           if f.get("cubic_flow_baseline_mbps") else "-",
                           "%.2f" % f["cubic_vs_baseline"]
                           if f.get("cubic_vs_baseline") else "-",
                           "met" if f["met"] else "not met"))
    if fr:
        out.append("")
    al = res.get("alpha")
    if al:
        out.append("| Libra's C (alpha = 2C) | Libra flow | cubic flow | "
                   "Libra/cubic (0.67-1.5) | cubic now/then (>= 0.8) |")
        out.append("|---|---|---|---|---|")
        for v in al["variants"]:
            out.append("| %s | %.2f | %.2f | %.2f | %.2f |" % (
                v["label"], v["libra_flow_mbps"], v["cubic_flow_mbps"],
                v["libra_over_cubic"], v["cubic_vs_baseline"]))
        out.append("(cubic flow among six cubic: %.2f Mbit/s)" %
                   al["cubic_flow_baseline_mbps"])
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", choices=("capacity", "topology", "cross",
                                     "friendliness", "half", "alpha", "plot",
                                     "report", "smoke"))
    ap.add_argument("--build", default=os.environ.get(
        "TWOFLOW_BUILD_ROOT", os.path.join(ROOT, "build")))
    ap.add_argument("--out", default="/tmp/libra-topo")
    ap.add_argument("--figs", help="where the PNGs go (default: --out)")
    ap.add_argument("--rate", type=float, default=100e6,
                    help="bottleneck, bit/s (default the paper's 100 Mbit/s,"
                    " which capacity showed this machine can emulate; lower "
                    "rates scale the buffers with it)")
    ap.add_argument("--duration", type=int, default=45)
    ap.add_argument("--capacity-duration", type=int, default=20)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--protos", default=",".join(PROTOS))
    ap.add_argument("--buffers", default="83,1500",
                    help="the paper's buffers (packets at 100 Mbit/s) to run")
    ap.add_argument("--initial-rate", type=float, default=1e6,
                    help="erapsink initial-rate, bit/s")
    ap.add_argument("--libra-capacity", type=float, default=PAPER_RATE,
                    help="Libra's C, bit/s (default the paper's 100 Mbit/s;"
                    " 0: packet pairs)")
    ap.add_argument("--libra-opts", default="",
                    help="more erapsink properties for every Libra flow, "
                    "e.g. \"libra-loss-memory=0\"")
    ap.add_argument("--tag", default="",
                    help="topology: suffix of the result keys, for a variant"
                    " run with --libra-opts (e.g. -nomem)")
    ap.add_argument("--alpha-variants", default="",
                    help="alpha: the variants to run, 0-based indices "
                    "(default all; 2 = erapsink's defaults)")
    ap.add_argument("--emulator", help="twoflow-linkemu binary")
    ap.add_argument("--skip-unless-root", action="store_true")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    a.out = os.path.abspath(a.out)
    a.figs = os.path.abspath(a.figs or a.out)
    a.buffers = [int(x) for x in a.buffers.split(",")]
    os.makedirs(a.out, exist_ok=True)
    if a.what == "plot":
        exp_plot(a)
        return 0
    if a.what == "report":
        exp_report(a)
        return 0
    emu = a.emulator or os.path.join(a.build, "tools", "linkemu",
                                     "twoflow-linkemu")
    os.environ.setdefault("TWOFLOW_LINKEMU", emu)
    try:
        check_environment()
    except SkipTest as e:
        print("SKIP: %s" % e)
        return 77
    if a.what == "smoke":
        if not os.access(tool(a), os.X_OK):
            print("SKIP: no %s (benchmarks not built)" % tool(a))
            return 77
        return exp_smoke(a)
    {"capacity": exp_capacity, "topology": exp_topology, "cross": exp_cross,
     "friendliness": exp_friendliness, "half": exp_half,
     "alpha": exp_alpha}[a.what](a)
    print("results in %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
