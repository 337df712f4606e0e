#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Libra (ERAP's RTT-fair congestion control) on the emulated WAN.

One command per experiment (root; traffic only inside the testbed's
namespaces, twoflowlab.testbed):

  sudo experiments/libra/libra_testbed.py fairness      [--build B] [--out D]
  sudo experiments/libra/libra_testbed.py buffers       [--build B] [--out D]
  sudo experiments/libra/libra_testbed.py friendliness  [--build B] [--out D]
  sudo experiments/libra/libra_testbed.py tcp           [--out D]
  /usr/bin/python3 experiments/libra/libra_testbed.py plot --out D

fairness:     10 Mbit/s bottleneck, 80-packet drop-tail queue, three flows
              with RTT 30/90/180 ms (delay classes by port), 60 s: Libra,
              then rap in the same setup. Jain's index of the goodputs and
              link utilization. Goal: Libra Jain >= 0.99, utilization >= 90 %.
buffers:      the same with the bottleneck buffer at the pipe of the
              bottleneck (C x 30 ms, the RTT of the shortest path = the
              shared link alone: 25 packets) and at the pipe of the longest
              path (C x 180 ms: 150 packets), Libra and rap.
friendliness: three Libra flows plus three TCP cubic flows (RTT 30/90/180
              each), against the baseline of six cubic flows: the TCP flows'
              goodput must be >= 80 % of what they get in the baseline.
tcp:          experiments/testbed/fairness.py for cubic, reno and bbr over
              the same duration (the TCP reference next to Libra and rap).
plot:         per-flow rate over time (one figure per run) and the bar chart
              of Jain's index per protocol, from DIR/results.json.

Everything lands in DIR (default /tmp/libra-tb): results.json, each run's
emulator CSV and sender logs, and the PNGs.
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
                             jain_index)

RATE = 10e6
RTTS = [30, 90, 180]
ERAP_PORTS = [7001, 7002, 7003]
TCP_PORTS = [5201, 5202, 5203]
TCP_PORTS_B = [5204, 5205, 5206]   # the baseline's cubic flows in Libra's place
# the reference (DESIGN.md, "Testbed"): three TCP flows, same setup, 30 s
TCP_REFERENCE = {"cubic": 0.978, "reno": 0.814, "bbr": 0.880}
MTU = 1400                          # erapsink default: datagram incl. header
FRAME = MTU + 28 + 14               # IPv4 + UDP + Ethernet on the bottleneck


def tool(a):
    return os.path.join(a.build, "bench", "erap", "bench-erap-tool")


def genv(a):
    e = dict(os.environ)
    e["GST_PLUGIN_PATH_1_0"] = os.path.join(a.build, "gst")
    e["GST_REGISTRY_1_0"] = os.path.join(a.out, "registry.bin")
    return e


def summary_line(text):
    lines = [l for l in text.strip().splitlines() if "eos=" in l]
    if not lines:
        return {}
    return {k: float(v) for k, v in (x.split("=") for x in lines[-1].split())}


def load(a):
    p = os.path.join(a.out, "results.json")
    if os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    return {}


def save(a, key, value):
    res = load(a)
    res[key] = value
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)


def classes(ports_lists):
    """one-way delay class per port: RTT/2, half on data, half on ACKs"""
    d = {}
    for ports in ports_lists:
        for p, rtt in zip(ports, RTTS):
            d[p] = rtt / 2.0
    return d


def data_window(rows, ports, dur):
    """[t0, t0 + dur] from the first interval carrying data of any flow"""
    for r in rows:
        if any(r.get("bytes_%d" % p, 0) >= 4000 for p in ports):
            t0 = r["time_s"] - 0.1
            return t0, t0 + dur
    return 0.0, dur


def link_figures(rows, ports, t0, t1, rate):
    sel = [r for r in rows if t0 < r["time_s"] <= t1 + 1e-9]
    span = max(1e-9, len(sel) * 0.1)
    util = sum(r["delivered_bytes"] for r in sel) * 8 / (rate * span)
    wire = [sum(r.get("bytes_%d" % p, 0) for r in sel) * 8 / span / 1e6
            for p in ports]
    drops = [sum(r.get("drops_%d" % p, 0) for r in sel) for p in ports]
    q = sum(r["queue_pkts"] for r in sel) / max(1, len(sel))
    return util, wire, drops, q


def run_mix(a, name, erap_cc, queue, tcp_sets, erap_ports=ERAP_PORTS):
    """erap_cc None: no ERAP flows. tcp_sets: lists of ports of cubic flows
    (three each, RTT 30/90/180). Returns the run's figures."""
    d = os.path.join(a.out, name)
    os.makedirs(d, exist_ok=True)
    dur = a.duration
    src = os.path.join(a.out, "payload.bin")
    if not os.path.exists(src):
        with open(src, "wb") as f:
            for _ in range(120):
                f.write(os.urandom(1 << 20))
    if erap_cc:
        # a cold registry (fresh --out) takes 10-20 s to build on the loaded
        # machine: build it before the flows, or the ERAP senders start late
        subprocess.run(["gst-inspect-1.0", "erapsink"], env=genv(a),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
    eports = list(erap_ports) if erap_cc else []
    tports = [p for s in tcp_sets for p in s]
    cls = classes(([eports] if eports else []) + list(tcp_sets))
    print("== %s: %s, queue %d, ERAP %s, TCP cubic %s, %d s" % (
        name, erap_cc or "-", queue, eports, tports, dur), flush=True)
    with Testbed(rate_bps=RATE, queue_pkts=queue, delay_ms=RTTS[0] / 2.0,
                 delay_classes=cls, workdir=d, keep_workdir=True,
                 csv_interval_ms=100, seed=1) as tb:
        rx, tx, tcp = [], [], []
        for p in eports:
            rx.append(tb.client.popen(
                [tool(a), "recv", str(p), "/dev/null", "-t", str(dur + 40)],
                env=genv(a), stdout=subprocess.PIPE, text=True))
        for p in tports:
            tb.server.popen(["iperf3", "-s", "-1", "-p", str(p)],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        time.sleep(0.7)
        # TCP first: iperf3 exchanges control messages for a few RTTs
        for p in tports:
            tcp.append(tb.client.popen(
                ["iperf3", "-c", tb.server_ip, "-p", str(p), "-R", "-C",
                 "cubic", "-t", str(dur), "-J"],
                stdout=subprocess.PIPE, text=True))
        for i, p in enumerate(eports):
            opts = "congestion-control=%s" % erap_cc
            if erap_cc == "libra":
                opts += " libra-seed=%d" % (i + 1)
                if a.capacity:
                    opts += " capacity=%d" % a.capacity
                if a.libra_opts:
                    opts += " " + a.libra_opts
            tx.append(tb.server.popen(
                [tool(a), "send", tb.client_ip, str(p), src, "-d", str(dur),
                 "-c", os.path.join(d, "send-%d.csv" % p), "-r",
                 str(int(a.initial_rate)), "-l", "1", "-o", opts],
                env=genv(a), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True))
        snd = [summary_line(t.communicate(timeout=dur + 60)[0]) for t in tx]
        tcpj = [json.loads(t.communicate(timeout=dur + 60)[0]) for t in tcp]
        for r in rx:
            r.kill()
            r.communicate()
        summary = tb.stop_emulator()
        rows = tb.read_csv("fwd")
    allports = eports + tports
    t0, t1 = data_window(rows, allports, dur)
    util, wire, drops, q = link_figures(rows, allports, t0, t1, RATE)
    util_tail, _, _, _ = link_figures(rows, allports, t1 - 50, t1, RATE)
    # goodput: ERAP from bytes acknowledged over the sender's run, TCP from
    # iperf3's receiver
    gp = {}
    for p, s in zip(eports, snd):
        gp[p] = s.get("acked", 0) * 8 / dur / 1e6
    for p, j in zip(tports, tcpj):
        if "error" in j:
            raise RuntimeError("iperf3 port %d: %s" % (p, j["error"]))
        gp[p] = j["end"]["sum_received"]["bits_per_second"] / 1e6
    r = {"name": name, "cc": erap_cc, "queue_pkts": queue, "duration_s": dur,
         "erap_ports": eports, "tcp_ports": tports,
         "goodput_mbps": {str(p): gp[p] for p in allports},
         "wire_mbps": {str(p): w for p, w in zip(allports, wire)},
         "drops": {str(p): x for p, x in zip(allports, drops)},
         "utilization": util, "utilization_last50": util_tail,
         "mean_queue_pkts": q, "window_s": [t0, t1],
         "drops_queue": summary["fwd"]["drops_queue"],
         "emulator_csv": os.path.join(d, "linkemu.csv")}
    if eports:
        g = [gp[p] for p in eports]
        r["erap_mbps"] = g
        r["jain"] = jain_index(g)
        r["erap_reactions"] = [s.get("reactions", 0) for s in snd]
        r["erap_lost"] = [s.get("lost", 0) for s in snd]
        r["capacity_estimate"] = [s.get("capacity_estimate", 0) for s in snd]
        r["erap_timeouts"] = [s.get("timeouts", 0) for s in snd]
        r["erap_spurious"] = [s.get("spurious", 0) for s in snd]
    for k, ports in (("tcp_mbps", tcp_sets[0] if tcp_sets else []),
                     ("tcp_b_mbps", tcp_sets[1] if len(tcp_sets) > 1 else [])):
        if ports:
            r[k] = [gp[p] for p in ports]
    print("   goodput %s Mbit/s; Jain %s; utilization %.3f (last 50 s %.3f);"
          " mean queue %.1f pkts" % (
              " / ".join("%d:%.2f" % (p, gp[p]) for p in allports),
              "%.4f" % r["jain"] if "jain" in r else "-", util, util_tail, q),
          flush=True)
    plot_run(r, os.path.join(d, "rates.png"))
    return r


def exp_fairness(a):
    res = load(a).get("fairness", {})
    for cc in a.ccs.split(","):
        res[cc] = run_mix(a, "fair-%s-q80" % cc, cc, 80, [])
    if "libra" not in res:
        return
    res["goal"] = {"libra_jain": 0.99, "libra_utilization": 0.90}
    res["met"] = (res["libra"]["jain"] >= 0.99 and
                  res["libra"]["utilization"] >= 0.90)
    save(a, "fairness", res)
    plot_jain(a)


def exp_buffers(a):
    res = {}
    pipes = {"bottleneck": int(round(RATE * RTTS[0] / 1000 / 8 / FRAME)),
             "longest": int(round(RATE * RTTS[-1] / 1000 / 8 / FRAME))}
    for label, q in pipes.items():
        for cc in a.ccs.split(","):
            res["%s-%s" % (cc, label)] = run_mix(
                a, "buf-%s-q%d" % (cc, q), cc, q, [])
    res["pipes_pkts"] = pipes
    save(a, "buffers", res)
    plot_jain(a)


def exp_friendliness(a):
    base = run_mix(a, "friend-cubic6", None, 80, [TCP_PORTS, TCP_PORTS_B])
    mix = run_mix(a, "friend-libra3-cubic3", "libra", 80, [TCP_PORTS])
    tb, tm = sum(base["tcp_mbps"]), sum(mix["tcp_mbps"])
    res = {"baseline": base, "libra": mix,
           "tcp_vs_cubic_mbps": tb, "tcp_vs_libra_mbps": tm,
           "ratio": tm / max(1e-9, tb), "goal": 0.8}
    res["met"] = res["ratio"] >= 0.8
    print("friendliness: three cubic flows got %.2f Mbit/s against three "
          "cubic, %.2f against three Libra: %.2f (goal >= 0.80); Libra "
          "flows %.2f, the other cubic flows %.2f Mbit/s" % (
              tb, tm, res["ratio"], sum(mix["erap_mbps"]),
              sum(base["tcp_b_mbps"])), flush=True)
    save(a, "friendliness", res)


def exp_tcp(a):
    out = os.path.join(a.out, "tcp")
    cmd = [sys.executable, os.path.join(ROOT, "experiments", "testbed",
                                        "fairness.py"),
           "--duration", str(a.duration), "--out", out]
    if a.emulator:
        cmd += ["--emulator", a.emulator]
    subprocess.run(cmd, check=True)
    with open(os.path.join(out, "results.json")) as f:
        j = json.load(f)
    runs = j if isinstance(j, list) else j.get("runs", j.get("results", j))
    res = {}
    items = runs.values() if isinstance(runs, dict) else runs
    for r in items:
        if isinstance(r, dict) and "cc" in r:
            res[r["cc"]] = {"mbps": r["mbps"], "jain": r["jain"],
                            "reference": TCP_REFERENCE.get(r["cc"])}
    save(a, "tcp", res)
    plot_jain(a)


# ---------------------------------------------------------------- plots

def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def plot_run(r, png, smooth_s=1.0):
    plt = _plt()
    if not plt or not os.path.exists(r["emulator_csv"]):
        return
    from twoflowlab.testbed import read_csv
    rows = read_csv(r["emulator_csv"], "fwd")
    n = max(1, int(round(smooth_s / 0.1)))
    t0 = r["window_s"][0]
    plt.figure(figsize=(10, 4))
    labels = {}
    for i, p in enumerate(r["erap_ports"]):
        labels[p] = "%s RTT %d ms" % (r["cc"], RTTS[i % 3])
    for i, p in enumerate(r["tcp_ports"]):
        labels[p] = "cubic RTT %d ms (%d)" % (RTTS[i % 3], p)
    for p in r["erap_ports"] + r["tcp_ports"]:
        xs, ys = [], []
        vals = [row.get("bytes_%d" % p, 0) for row in rows]
        ts = [row["time_s"] for row in rows]
        for k in range(0, len(vals) - n + 1, n):
            xs.append(ts[k + n - 1] - t0)
            ys.append(sum(vals[k:k + n]) * 8 / (n * 0.1) / 1e6)
        plt.plot(xs, ys, lw=1, label=labels[p],
                 ls="-" if p in r["erap_ports"] else "--")
    plt.xlim(0, r["duration_s"])
    plt.xlabel("s")
    plt.ylabel("Mbit/s at the bottleneck (%g s bins)" % smooth_s)
    title = "%s, %d-packet queue" % (r["name"], r["queue_pkts"])
    if "jain" in r:
        title += ": Jain %.3f, utilization %.2f" % (r["jain"],
                                                      r["utilization"])
    plt.title(title)
    plt.grid(alpha=0.3)
    plt.legend(fontsize=8, ncol=2)
    plt.tight_layout()
    plt.savefig(png, dpi=100)
    plt.close()


def plot_jain(a):
    plt = _plt()
    if not plt:
        return
    res = load(a)
    names, vals, colors = [], [], []
    f = res.get("fairness", {})
    for cc, col in (("libra", "tab:green"), ("rap", "tab:orange")):
        if cc in f:
            names.append(cc)
            vals.append(f[cc]["jain"])
            colors.append(col)
    for cc in ("cubic", "reno", "bbr"):
        t = res.get("tcp", {}).get(cc)
        if t:
            names.append("%s\n(measured)" % cc)
            vals.append(t["jain"])
            colors.append("tab:blue")
        names.append("%s\n(reference)" % cc)
        vals.append(TCP_REFERENCE[cc])
        colors.append("tab:gray")
    b = res.get("buffers", {})
    for key in ("libra-bottleneck", "libra-longest", "rap-bottleneck",
                "rap-longest"):
        if key in b:
            names.append("%s\nq=%d" % (key.split("-")[0],
                                       b[key]["queue_pkts"]))
            vals.append(b[key]["jain"])
            colors.append("tab:olive" if key.startswith("libra") else
                          "tab:brown")
    if not vals:
        return
    plt.figure(figsize=(max(6, len(vals) * 0.9), 4))
    bars = plt.bar(range(len(vals)), vals, color=colors)
    for bar, v in zip(bars, vals):
        plt.text(bar.get_x() + bar.get_width() / 2, v + 0.005, "%.3f" % v,
                 ha="center", va="bottom", fontsize=8)
    plt.xticks(range(len(vals)), names, fontsize=8)
    plt.ylim(min(0.5, min(vals) - 0.05), 1.02)
    plt.axhline(0.99, color="k", lw=0.6, ls=":")
    plt.ylabel("Jain's index")
    plt.title("Three flows, RTT 30/90/180 ms, 10 Mbit/s, drop-tail "
              "(80 packets unless q=)")
    plt.tight_layout()
    plt.savefig(os.path.join(a.out, "jain.png"), dpi=100)
    plt.close()


def exp_plot(a):
    res = load(a)
    for group in ("fairness", "buffers"):
        for k, r in res.get(group, {}).items():
            if isinstance(r, dict) and "emulator_csv" in r:
                plot_run(r, os.path.join(os.path.dirname(r["emulator_csv"]),
                                         "rates.png"))
    for k in ("baseline", "libra"):
        r = res.get("friendliness", {}).get(k)
        if r:
            plot_run(r, os.path.join(os.path.dirname(r["emulator_csv"]),
                                     "rates.png"))
    plot_jain(a)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", choices=("fairness", "buffers", "friendliness",
                                     "tcp", "plot"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="/tmp/libra-tb")
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--initial-rate", type=float, default=1e6,
                    help="erapsink initial-rate, bit/s")
    ap.add_argument("--capacity", type=float, default=0,
                    help="Libra's capacity, bit/s (0: packet pairs)")
    ap.add_argument("--emulator", help="twoflow-linkemu binary")
    ap.add_argument("--libra-opts", default="",
                    help="more erapsink properties for the Libra flows, "
                    "e.g. \"libra-state=window\"")
    ap.add_argument("--ccs", default="libra,rap",
                    help="ERAP laws to run in fairness and buffers")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    a.out = os.path.abspath(a.out)
    os.makedirs(a.out, exist_ok=True)
    if a.what == "plot":
        exp_plot(a)
        return 0
    emu = a.emulator or os.path.join(a.build, "tools", "linkemu",
                                     "twoflow-linkemu")
    os.environ.setdefault("TWOFLOW_LINKEMU", emu)
    a.emulator = os.environ["TWOFLOW_LINKEMU"]
    try:
        check_environment()
    except SkipTest as e:
        print("SKIP: %s" % e)
        return 77
    {"fairness": exp_fairness, "buffers": exp_buffers,
     "friendliness": exp_friendliness, "tcp": exp_tcp}[a.what](a)
    print("results in %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
