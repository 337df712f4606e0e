#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""ERAP against the RAP baseline, the ERAP paper's Figs. 6-9, one command
each; every figure runs RAP and ERAP in the same invocation.

  sudo experiments/erap/figures.py fig6a [--duration 120] [--sizes 100,512,1024]
  sudo experiments/erap/figures.py fig6b [--duration 120] [--pauses 5,5]
       experiments/erap/figures.py fig7  [--sessions 1,10,50,100,150,200,250]
  sudo experiments/erap/figures.py fig89 [--duration 120] [--size 512]
       experiments/erap/figures.py plot  (redraw from --out/*.json)
  sudo experiments/erap/figures.py smoke (all four briefly, with checks; CI)

Common: --build BUILD (default build/), --queue PACKETS (default 10, the
paper's), --out DIR (json + png; default
experiments/erap/results), --work DIR (raw CSVs; default a /tmp dir).

RAP is erapsink/erapsrc protocol=rap (docs/erap.md, "RAP baseline"): RAP's
24-byte header on data and ACKs, one ACK datagram per data packet, a socket
and an ACK thread per session, RAP's IPG/RTT timers running while there is
nothing to send; the same rate law (RAP's AIMD) and reliability as ERAP.

fig6a  one flow alone on the paper's topology (1 MB/s bottleneck, 10 ms each
       way, 10-packet drop-tail queue) with 100/512/1024-byte datagrams:
       goodput (payload acknowledged), link utilization, header overhead.
fig6b  the same link, 1024-byte datagrams, the application sending in
       bursts (--pauses ON,OFF seconds; 64 KB sender queue so a pause
       empties it): payload rate over time, timer wakeups while paused,
       sender CPU.
fig7   CPU of one process with N concurrent low-rate sessions on loopback
       (bench-erap-sessions; --rate buffers/s of --bufsize bytes each):
       RAP's thread per session against ERAP's shared ACK thread.
fig8/9 one flow on the paper's topology (--size datagrams), per second:
       goodput (Fig. 8) and header bytes per payload byte, both directions,
       with and without IP/UDP (Fig. 9).
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
from twoflowlab.testbed import Testbed, SkipTest, check_environment  # noqa

PORT = 7000
LINK_BPS = 8e6            # 1 MB/s
PROTOS = ("rap", "erap")
HDR = {"rap": 24, "erap": 8}          # data header bytes
ACK = {"rap": 24, "erap": 20}         # ACK bytes per data packet
IPUDP = 28
LABEL = {"rap": "RAP (24-byte header, ACK datagram per packet, "
         "thread per session)",
         "erap": "ERAP (8-byte header, bundled 20-byte ACKs, shared ACK "
         "thread)"}
SHORT = {"rap": "RAP", "erap": "ERAP"}
COLOR = {"rap": "tab:red", "erap": "tab:blue"}


def tool(a, name="bench-erap-tool"):
    return os.path.join(a.build, "bench", "erap", name)


def env(a):
    e = dict(os.environ)
    e["GST_PLUGIN_PATH_1_0"] = os.path.join(a.build, "gst")
    e["GST_REGISTRY_1_0"] = os.path.join(a.work, "registry.bin")
    return e


def summary(text):
    lines = [l for l in text.strip().splitlines() if "=" in l and " " in l]
    if not lines:
        raise RuntimeError("no summary in: %r" % text[-500:])
    return {k: float(v) for k, v in (x.split("=") for x in lines[-1].split())}


def read_rows(path):
    with open(path) as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


def source_file(a, seconds):
    """A sparse file larger than the link can carry in @seconds."""
    path = os.path.join(a.work, "src-%d.bin" % seconds)
    size = int(LINK_BPS / 8 * (seconds + 10))
    if not os.path.exists(path) or os.path.getsize(path) < size:
        with open(path, "wb") as f:
            f.truncate(size)
    return path


# ---------------------------------------------------------------- one flow

def run_flow(a, proto, size, dur, name, pauses=None, extra=""):
    """One RAP or ERAP flow alone over the paper's topology; returns the
    run's figures and time series."""
    d = os.path.join(a.work, name)
    os.makedirs(d, exist_ok=True)
    scsv, rcsv = os.path.join(d, "send.csv"), os.path.join(d, "recv.csv")
    src = source_file(a, dur)
    with Testbed(rate_bps=LINK_BPS, delay_ms=10, queue_pkts=a.queue,
                 track_ports=[PORT], workdir=d, keep_workdir=True,
                 csv_interval_ms=100) as tb:
        rx = tb.client.popen([tool(a), "recv", str(PORT), "/dev/null",
                              "-t", str(dur + 1.5), "-o", "protocol=" + proto,
                              "-c", rcsv], env=env(a),
                             stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        argv = [tool(a), "send", tb.client_ip, str(PORT), src, "-d",
                str(dur), "-c", scsv, "-r", "1000000", "-b", "65536", "-o",
                ("protocol=%s mtu=%d " % (proto, size)) + extra]
        if pauses:
            argv += ["-p", "%g,%g" % tuple(pauses)]
        tx = tb.server.run(argv, env=env(a), timeout=dur + 60, capture=True)
        rout = rx.communicate(timeout=dur + 30)[0]
        link = tb.stop_emulator()
        rows = tb.read_csv("fwd")
    snd, rcv = summary(tx.stdout), summary(rout)
    fwd = link["fwd"]
    # the link over the run, from 5 s on (after the start-up ramp; from
    # a quarter of the run in short ones)
    tail = [r for r in rows if min(5, dur / 4) <= r["time_s"] <= dur]
    util = sum(r["delivered_bytes"] for r in tail) * 8 / (
        LINK_BPS * max(1e-9, len(tail) * 0.1))
    payload = snd["bytes_sent"]
    hdr = snd["sent"] * HDR[proto] + rcv["acks"] * ACK[proto]
    ipudp = IPUDP * (snd["sent"] + rcv["ack_datagrams"])
    r = {
        "protocol": proto, "datagram_bytes": size, "seconds": dur,
        "goodput_mbps": snd["acked"] * 8 / dur / 1e6,
        "utilization": util,
        "link_loss": fwd["drops_queue"] / max(1, fwd["arrived_pkts"]),
        "packets_sent": snd["sent"], "loss_reactions": snd["reactions"],
        "acks": rcv["acks"], "ack_datagrams": rcv["ack_datagrams"],
        "header_per_payload": hdr / max(1, payload),
        "header_ipudp_per_payload": (hdr + ipudp) / max(1, payload),
        "ticks": snd["ticks"], "idle_wakeups": snd["idle_wakeups"],
        "cpu_s": snd["cpu_s"],
        "series": series(proto, scsv, rcsv),
    }
    print("%-4s %4d B: goodput %.3f Mbit/s, utilization %.3f, link loss "
          "%.3f, header/payload %.4f (+IP/UDP %.4f), %d ACKs in %d "
          "datagrams, ticks %d, idle IPG wakeups %d, CPU %.2f s" % (
              SHORT[proto], size, r["goodput_mbps"], util, r["link_loss"],
              r["header_per_payload"], r["header_ipudp_per_payload"],
              r["acks"], r["ack_datagrams"], r["ticks"], r["idle_wakeups"],
              r["cpu_s"]), flush=True)
    return r


def series(proto, scsv, rcsv, step=1.0):
    """Per-second goodput, payload rate, header overhead (both directions)
    and timer runs, from the sender's and the receiver's 50 ms logs (the
    same CLOCK_MONOTONIC)."""
    s = read_rows(scsv)
    rv = read_rows(rcsv) if os.path.exists(rcsv) else []
    if not s:
        return {}
    t0 = s[0]["t_s"]

    def at(rows, t, key):
        v = 0.0
        for r in rows:
            if r["t_s"] > t:
                break
            v = r[key]
        return v

    out = {k: [] for k in ("t", "goodput_mbps", "payload_mbps",
                           "header_per_payload", "header_ipudp_per_payload",
                           "timer_runs")}
    t = t0
    end = s[-1]["t_s"]
    while t + step <= end + 1e-6:
        d = {k: at(s, t + step, k) - at(s, t, k) for k in
             ("bytes_acked", "bytes_sent", "packets_sent", "ticks",
              "idle_wakeups")}
        acks = at(rv, t + step, "acks_sent") - at(rv, t, "acks_sent")
        dg = at(rv, t + step, "ack_datagrams") - at(rv, t, "ack_datagrams")
        hdr = d["packets_sent"] * HDR[proto] + acks * ACK[proto]
        out["t"].append(round(t + step - t0, 3))
        out["goodput_mbps"].append(d["bytes_acked"] * 8 / step / 1e6)
        out["payload_mbps"].append(d["bytes_sent"] * 8 / step / 1e6)
        out["header_per_payload"].append(
            hdr / d["bytes_sent"] if d["bytes_sent"] else None)
        out["header_ipudp_per_payload"].append(
            (hdr + IPUDP * (d["packets_sent"] + dg)) / d["bytes_sent"]
            if d["bytes_sent"] else None)
        out["timer_runs"].append(d["ticks"] + d["idle_wakeups"])
        t += step
    return out


# ---------------------------------------------------------------- figures

def fig6a(a):
    res = {"setup": "1 MB/s bottleneck, 10 ms each way, 10-packet drop-tail "
           "queue, one flow alone, %d s per run" % a.duration, "runs": []}
    for size in a.sizes:
        for proto in PROTOS:
            res["runs"].append(run_flow(a, proto, size, a.duration,
                                        "fig6a-%s-%d" % (proto, size)))
    return res


def fig6b(a):
    res = {"setup": "1 MB/s, 10 ms each way, 10-packet queue, %d-byte "
           "datagrams, application %g s on / %g s off, %d s" % (
               a.size6b, a.pauses[0], a.pauses[1], a.duration),
           "pauses": a.pauses, "runs": []}
    for proto in PROTOS:
        r = run_flow(a, proto, a.size6b, a.duration, "fig6b-" + proto,
                     pauses=a.pauses, extra="max-queue-bytes=65536")
        sr = r["series"]
        on, off = a.pauses
        cyc = on + off
        # the 1 s bins wholly inside an OFF phase (the phases count from
        # the first buffer, the bins from the sender's start: the same
        # within ms), 0.2 s after it began (the 64 KB queue drains)
        paused = [i for i, t in enumerate(sr["t"])
                  if (t - 1) % cyc >= on + 0.2 and
                  (t - 1) // cyc == (t - 1e-6) // cyc]
        r["timer_runs_per_paused_s"] = (
            sum(sr["timer_runs"][i] for i in paused) / max(1, len(paused)))
        r["paused_seconds"] = len(paused)
        r["goodput_on_mbps"] = r["goodput_mbps"] * (on + off) / on
        print("%-4s timer runs per second of pause: %.0f (%d s paused)" % (
            SHORT[proto], r["timer_runs_per_paused_s"], len(paused)),
            flush=True)
        res["runs"].append(r)
    return res


def fig7(a):
    res = {"setup": "N erapsinks in one process on loopback, %d x %d-byte "
           "buffers/s each, %d s window after %d s warm-up; CPU of the "
           "sending process (receivers in a child process)" % (
               a.rate, a.bufsize, a.window, a.warmup), "runs": []}
    for proto in PROTOS:
        out = subprocess.run(
            [tool(a, "bench-erap-sessions"), "-c", "-p", proto, "-r",
             str(a.rate), "-s", str(a.bufsize), "-w", str(a.window), "-W",
             str(a.warmup)] + [str(n) for n in a.sessions],
            env=env(a), capture_output=True, text=True, timeout=3600,
            check=True).stdout
        for line in out.strip().splitlines():
            p, n, th, rss, us, pct, pk = line.split(",")
            r = {"protocol": p, "sessions": int(n), "threads_added": int(th),
                 "rss_mb": float(rss), "cpu_us_per_packet": float(us),
                 "cpu_percent": float(pct), "packets": int(pk)}
            print("%-4s N=%4d: +%d threads, CPU %.1f %% (%.0f us/packet)" % (
                SHORT[p], r["sessions"], r["threads_added"],
                r["cpu_percent"], r["cpu_us_per_packet"]), flush=True)
            res["runs"].append(r)
    return res


def fig89(a):
    res = {"setup": "1 MB/s, 10 ms each way, 10-packet queue, %d-byte "
           "datagrams, one flow alone, %d s" % (a.size, a.duration),
           "runs": []}
    for proto in PROTOS:
        res["runs"].append(run_flow(a, proto, a.size, a.duration,
                                    "fig89-" + proto))
    return res


# ---------------------------------------------------------------- plots

def plt_or_none():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print("matplotlib missing: no plots", flush=True)
        return None


def plot(name, res, out):
    plt = plt_or_none()
    if plt is None:
        return
    runs = res["runs"]
    if name == "fig6a":
        sizes = sorted({r["datagram_bytes"] for r in runs})
        fig, ax = plt.subplots(1, 3, figsize=(14, 4))
        w = 0.38
        for k, proto in enumerate(PROTOS):
            rr = {r["datagram_bytes"]: r for r in runs
                  if r["protocol"] == proto}
            xs = [i + (k - 0.5) * w for i in range(len(sizes))]
            ax[0].bar(xs, [rr[s]["goodput_mbps"] for s in sizes], w,
                      color=COLOR[proto], label=SHORT[proto])
            ax[1].bar(xs, [rr[s]["utilization"] for s in sizes], w,
                      color=COLOR[proto], label=SHORT[proto])
            ax[2].bar(xs, [rr[s]["header_ipudp_per_payload"] for s in sizes],
                      w, color=COLOR[proto], label=SHORT[proto])
        for x, t in zip(ax, ("goodput (payload acked), Mbit/s",
                             "link utilization",
                             "header+IP/UDP bytes per payload byte")):
            x.set_xticks(range(len(sizes)))
            x.set_xticklabels(["%d B" % s for s in sizes])
            x.set_title(t, fontsize=10)
            x.grid(alpha=0.3, axis="y")
        ax[0].axhline(8.0, color="k", lw=0.6, ls=":")
        ax[0].legend()
        fig.suptitle("Fig. 6a: " + res["setup"], fontsize=10)
    elif name == "fig6b":
        fig, ax = plt.subplots(3, 1, figsize=(12, 8), sharex=True)
        for r in runs:
            sr = r["series"]
            ax[0].plot(sr["t"], sr["payload_mbps"], color=COLOR[r["protocol"]],
                       lw=0.9, label=SHORT[r["protocol"]])
            ax[1].plot(sr["t"], sr["goodput_mbps"],
                       color=COLOR[r["protocol"]], lw=0.9,
                       label=SHORT[r["protocol"]])
            ax[2].plot(sr["t"], sr["timer_runs"], color=COLOR[r["protocol"]],
                       lw=0.9, label="%s (%.0f per s of pause)" % (
                           SHORT[r["protocol"]],
                           r["timer_runs_per_paused_s"]))
        ax[0].set_ylabel("payload sent, Mbit/s")
        ax[1].set_ylabel("goodput, Mbit/s")
        ax[2].set_ylabel("timer runs per s")
        ax[2].set_yscale("symlog")
        ax[2].set_xlabel("s")
        for x in ax:
            x.grid(alpha=0.3)
            x.legend(fontsize=8, loc="upper right")
        fig.suptitle("Fig. 6b: " + res["setup"], fontsize=10)
    elif name == "fig7":
        fig, ax = plt.subplots(1, 2, figsize=(12, 4))
        for proto in PROTOS:
            rr = sorted((r for r in runs if r["protocol"] == proto),
                        key=lambda r: r["sessions"])
            n = [r["sessions"] for r in rr]
            ax[0].plot(n, [r["cpu_percent"] for r in rr], "o-",
                       color=COLOR[proto], label=LABEL[proto])
            ax[1].plot(n, [r["threads_added"] for r in rr], "o-",
                       color=COLOR[proto], label=SHORT[proto])
        ax[0].set_ylabel("CPU of the sending process, % of one core")
        ax[1].set_ylabel("threads added")
        for x in ax:
            x.set_xlabel("concurrent sessions")
            x.grid(alpha=0.3)
        ax[0].legend(fontsize=7)
        ax[1].legend()
        fig.suptitle("Fig. 7: " + res["setup"], fontsize=9)
    elif name == "fig89":
        for fname, key, ylabel in (
                ("fig8", "goodput_mbps", "goodput, Mbit/s"),
                ("fig9", None, "header bytes per payload byte")):
            fig, ax = plt.subplots(figsize=(12, 4))
            for r in runs:
                sr = r["series"]
                if key:
                    ax.plot(sr["t"], sr[key], color=COLOR[r["protocol"]],
                            lw=0.9, label="%s, mean %.2f Mbit/s" % (
                                SHORT[r["protocol"]], r["goodput_mbps"]))
                else:
                    ax.plot(sr["t"], sr["header_per_payload"],
                            color=COLOR[r["protocol"]], lw=0.9,
                            label="%s headers, mean %.4f" % (
                                SHORT[r["protocol"]],
                                r["header_per_payload"]))
                    ax.plot(sr["t"], sr["header_ipudp_per_payload"],
                            color=COLOR[r["protocol"]], lw=0.9, ls="--",
                            label="%s with IP/UDP, mean %.4f" % (
                                SHORT[r["protocol"]],
                                r["header_ipudp_per_payload"]))
            ax.set_xlabel("s")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
            ax.set_title("Fig. %s: %s" % (fname[-1], res["setup"]),
                         fontsize=10)
            fig.tight_layout()
            fig.savefig(os.path.join(out, fname + ".png"), dpi=100)
            plt.close(fig)
        return
    fig.tight_layout()
    fig.savefig(os.path.join(out, name + ".png"), dpi=100)
    plt.close(fig)


def save(a, name, res):
    os.makedirs(a.out, exist_ok=True)
    res["command"] = " ".join(sys.argv)
    res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    res["loadavg"] = os.getloadavg()
    with open(os.path.join(a.out, name + ".json"), "w") as f:
        json.dump(res, f, indent=1)
    plot(name, res, a.out)


# ---------------------------------------------------------------- smoke

def smoke(a):
    """Each experiment briefly (~50 s), asserting what the figures show."""
    bad = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            bad.append(what)

    a.duration, a.sizes = 4, [512]
    r6a = fig6a(a)
    by = {r["protocol"]: r for r in r6a["runs"]}
    for p in PROTOS:
        check(by[p]["goodput_mbps"] > 2.0, "fig6a %s moves data (%.2f Mbit/s)"
              % (p, by[p]["goodput_mbps"]))
    check(by["rap"]["ack_datagrams"] == by["rap"]["acks"],
          "fig6a RAP: one ACK datagram per data packet")
    # header bytes per packet, both directions: 48 against 28
    ratio = by["rap"]["header_per_payload"] / by["erap"]["header_per_payload"]
    want = (48 / (512 - 24)) / (28 / (512 - 8))
    check(abs(ratio / want - 1) < 0.1, "fig6a header overhead RAP/ERAP %.2f "
          "(expected %.2f)" % (ratio, want))
    # fig 8/9 are these per-second series
    for p in PROTOS:
        sr = by[p]["series"]
        check(len(sr["t"]) >= 3 and max(sr["goodput_mbps"]) > 2.0,
              "fig8 %s goodput series" % p)
    hr = [x for x in by["rap"]["series"]["header_per_payload"] if x]
    he = [x for x in by["erap"]["series"]["header_per_payload"] if x]
    check(hr and he and min(hr) > max(he), "fig9 RAP's header overhead above "
          "ERAP's every second")

    a.duration, a.pauses = 6, [1.5, 1.5]
    r6b = fig6b(a)
    by = {r["protocol"]: r for r in r6b["runs"]}
    check(by["erap"]["idle_wakeups"] == 0, "fig6b ERAP: no IPG timer runs "
          "while paused")
    check(by["rap"]["idle_wakeups"] > 100, "fig6b RAP: IPG timer runs while "
          "paused (%d)" % by["rap"]["idle_wakeups"])
    check(by["rap"]["timer_runs_per_paused_s"] >
          10 * max(1, by["erap"]["timer_runs_per_paused_s"]),
          "fig6b timer runs per second of pause: RAP %.0f, ERAP %.0f" % (
              by["rap"]["timer_runs_per_paused_s"],
              by["erap"]["timer_runs_per_paused_s"]))

    a.sessions, a.window, a.warmup = [30], 2, 1
    r7 = fig7(a)
    by = {r["protocol"]: r for r in r7["runs"]}
    check(by["rap"]["threads_added"] >= 30, "fig7 RAP: a thread per session "
          "(+%d)" % by["rap"]["threads_added"])
    check(by["erap"]["threads_added"] <= 3, "fig7 ERAP: shared ACK thread "
          "(+%d)" % by["erap"]["threads_added"])
    for p in PROTOS:
        check(by[p]["packets"] >= 0.8 * 30 * a.rate * a.window,
              "fig7 %s sent its packets (%d)" % (p, by[p]["packets"]))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", choices=["fig6a", "fig6b", "fig7", "fig89",
                                     "plot", "smoke"])
    ap.add_argument("--build", default=os.environ.get(
        "TWOFLOW_BUILD_ROOT", os.path.join(ROOT, "build")))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--emulator", default=None)
    ap.add_argument("--duration", type=int, default=120)
    ap.add_argument("--sizes", default="100,512,1024")
    ap.add_argument("--size", type=int, default=512, help="fig89")
    ap.add_argument("--size6b", type=int, default=1024)
    ap.add_argument("--pauses", default="5,5")
    ap.add_argument("--queue", type=int, default=10,
                    help="bottleneck queue, packets (the paper's 10)")
    ap.add_argument("--sessions", default="1,10,50,100,150,200,250")
    ap.add_argument("--rate", type=int, default=10)
    ap.add_argument("--bufsize", type=int, default=1000)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    a.out = os.path.abspath(a.out)
    a.sizes = [int(x) for x in a.sizes.split(",")]
    a.pauses = [float(x) for x in a.pauses.split(",")]
    a.sessions = [int(x) for x in a.sessions.split(",")]
    if a.what == "plot":
        for name in ("fig6a", "fig6b", "fig7", "fig89"):
            p = os.path.join(a.out, name + ".json")
            if os.path.exists(p):
                with open(p) as f:
                    plot(name, json.load(f), a.out)
        return 0
    a.work = os.path.abspath(a.work or tempfile.mkdtemp(prefix="erap-fig-"))
    os.makedirs(a.work, exist_ok=True)
    if a.emulator:
        os.environ["TWOFLOW_LINKEMU"] = os.path.abspath(a.emulator)
    os.environ.setdefault("TWOFLOW_LINKEMU", os.path.join(
        a.build, "tools", "linkemu", "twoflow-linkemu"))
    if a.what != "fig7":
        try:
            check_environment()
        except SkipTest as e:
            print("SKIP: %s" % e)
            return 77
    if a.what == "smoke":
        a.out = os.path.join(a.work, "out")
        return smoke(a)
    res = {"fig6a": fig6a, "fig6b": fig6b, "fig7": fig7,
           "fig89": fig89}[a.what](a)
    save(a, a.what, res)
    print("results in %s (raw data in %s)" % (a.out, a.work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
