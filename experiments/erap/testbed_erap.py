#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""ERAP experiments on the emulated WAN (twoflowlab.testbed).

  sudo experiments/erap/testbed_erap.py [--build build] [--out DIR] [--only a,b,c]

(a) the paper's topology: 1 MB/s bottleneck, 10 ms link delay each way,
    10-packet queue, 60 s of continuous sending: utilization, loss, and
    the rate sawtooth (rate.png from the sender's log, link.png from the
    emulator's CSV, if matplotlib is there);
(b) 10 % random loss (data and ACK paths) plus a 3 s outage: the file
    arrives exactly once, in order (SHA-256 equal);
(c) friendliness: one ERAP flow and one TCP cubic flow over 8 Mbit/s,
    40 ms RTT, 40-packet queue, 60 s: throughput ratio (goal 0.67..1.5).
Results go to DIR/results.json (default: a new /tmp/erap-tb-* directory);
the kept ones are in experiments/erap/results/ (docs/results.md).
"""

import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
from twoflowlab.testbed import Testbed, Link, SkipTest, check_environment  # noqa

PORT = 7000


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def make_file(path, mb):
    with open(path, "wb") as f:
        for _ in range(mb):
            f.write(os.urandom(1 << 20))


def tool(a):
    return os.path.join(a.build, "bench", "erap", "bench-erap-tool")


def env(a):
    e = dict(os.environ)
    e["GST_PLUGIN_PATH_1_0"] = os.path.join(a.build, "gst")
    e["GST_REGISTRY_1_0"] = os.path.join(a.out, "registry.bin")
    return e


def summary_line(text):
    last = [l for l in text.strip().splitlines() if "=" in l][-1]
    return {k: float(v) for k, v in (x.split("=") for x in last.split())}


def plot_rate(csvpath, png, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    t, r = [], []
    with open(csvpath) as f:
        for row in csv.DictReader(f):
            t.append(float(row["t_s"]))
            r.append(float(row["rate_bps"]) / 1e6)
    t0 = t[0]
    plt.figure(figsize=(10, 4))
    plt.plot([x - t0 for x in t], r, lw=0.8)
    plt.xlabel("s")
    plt.ylabel("ERAP allowed rate, Mbit/s")
    plt.title(title)
    plt.grid(alpha=0.3)
    plt.tight_layout()
    plt.savefig(png, dpi=100)
    return True


def exp_a(a, res):
    d = os.path.join(a.out, "a")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(a.out, "a.bin")
    make_file(src, 100)
    dur = a.duration
    with Testbed(rate_bps=8e6, delay_ms=10, queue_pkts=10,
                 track_ports=[PORT], workdir=d, keep_workdir=True,
                 csv_interval_ms=100) as tb:
        rx = tb.client.popen([tool(a), "recv", str(PORT), "/dev/null",
                              "-t", str(dur + 30)], env=env(a),
                             stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        tx = tb.server.run([tool(a), "send", tb.client_ip, str(PORT), src,
                            "-d", str(dur), "-c", os.path.join(d, "rate.csv"),
                            "-r", "1000000"], env=env(a),
                           timeout=dur + 60, capture=True)
        rx.kill()
        rx.communicate()
        s = tb.stop_emulator()
        rows = tb.read_csv("fwd")
    snd = summary_line(tx.stdout)
    fwd = s["fwd"]
    # utilization over the last 50 s (after the start-up ramp)
    tail = [r for r in rows if float(r["time_s"]) >= dur - 50 and
            float(r["time_s"]) <= dur]
    util = sum(float(r["delivered_bytes"]) for r in tail) * 8 / (
        8e6 * max(1e-9, len(tail) * 0.1))
    loss = fwd["drops_queue"] / max(1, fwd["arrived_pkts"])
    r = {"utilization": util, "link_loss": loss,
         "sender_loss": snd["lost"] / max(1, snd["sent"]),
         "loss_reactions": snd["reactions"], "packets_sent": snd["sent"],
         "acked_MB": snd["acked"] / 1e6}
    plot_rate(os.path.join(d, "rate.csv"), os.path.join(d, "rate.png"),
              "ERAP over 1 MB/s, 10 ms, 10-packet queue")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "experiments",
                                                     "plot.py"),
                    tb.csv_path if os.path.exists(tb.csv_path) else
                    os.path.join(d, "linkemu.csv"), "-o",
                    os.path.join(d, "link.png")], capture_output=True)
    res["a"] = r
    print("(a) utilization %.3f, link loss %.4f, sender-seen loss %.4f, "
          "%d loss reactions in %d s" % (util, loss, r["sender_loss"],
                                        snd["reactions"], dur), flush=True)


def exp_b(a, res):
    d = os.path.join(a.out, "b")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(a.out, "b.bin")
    dst = os.path.join(d, "received.bin")
    make_file(src, a.b_mb)
    # the outage starts 3 s in (after the emulator starts) and lasts 3 s
    with Testbed(rate_bps=8e6, delay_ms=20, queue_pkts=40, loss=0.10,
                 schedule=[(4, 0), (7, 8e6)],
                 rev=Link(delay_ms=20, loss=0.10),    # ACKs lost too
                 workdir=d, keep_workdir=True, track_ports=[PORT],
                 seed=5) as tb:
        rx = tb.client.popen([tool(a), "recv", str(PORT), dst,
                              "-t", "600"], env=env(a),
                             stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        tx = tb.server.run([tool(a), "send", tb.client_ip, str(PORT), src,
                            "-c", os.path.join(d, "rate.csv"), "-r",
                            "2000000", "-l", "600"], env=env(a), timeout=900,
                           capture=True)
        print("sender:", tx.stdout.strip(), tx.stderr.strip()[-500:],
              flush=True)
        try:
            out = rx.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            rx.kill()
            out = rx.communicate()[0] + "\neos=0 seconds=0 bytes=0 " \
                "duplicates=0"
        s = tb.stop_emulator()
    snd = summary_line(tx.stdout)
    rcv = summary_line(out)
    same = sha256(src) == sha256(dst)
    r = {"exact": same, "MB": a.b_mb, "seconds": snd["seconds"],
         "sent": snd["sent"], "lost": snd["lost"],
         "retransmitted": snd["retransmitted"],
         "receiver_duplicates": rcv["duplicates"],
         "link_drops_loss_fwd": s["fwd"]["drops_loss"],
         "link_drops_loss_rev": s["rev"]["drops_loss"]}
    res["b"] = r
    print("(b) %d MB over 10 %% loss + 3 s outage: %s in %.1f s; %d sent, "
          "%d lost, %d resent, %d duplicates dropped by the receiver" % (
              a.b_mb, "bit-exact" if same else "DIFFERENT", snd["seconds"],
              snd["sent"], snd["lost"], snd["retransmitted"],
              rcv["duplicates"]), flush=True)


def exp_c(a, res):
    d = os.path.join(a.out, "c")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(a.out, "c.bin")
    make_file(src, 100)
    dur = a.duration
    with Testbed(rate_bps=8e6, delay_ms=20, queue_pkts=40,
                 track_ports=[PORT, 5201], workdir=d, keep_workdir=True,
                 csv_interval_ms=100) as tb:
        tb.server.popen(["iperf3", "-s", "-1", "-p", "5201"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rx = tb.client.popen([tool(a), "recv", str(PORT), "/dev/null",
                              "-t", str(dur + 30)], env=env(a),
                             stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        tcp = tb.client.popen(["iperf3", "-c", tb.server_ip, "-p", "5201",
                               "-R", "-C", "cubic", "-t", str(dur), "-J"],
                              stdout=subprocess.PIPE, text=True)
        tx = tb.server.run([tool(a), "send", tb.client_ip, str(PORT), src,
                            "-d", str(dur), "-c", os.path.join(d, "rate.csv"),
                            "-r", "1000000"], env=env(a), timeout=dur + 60,
                           capture=True)
        tcpj = json.loads(tcp.communicate(timeout=60)[0])
        rx.kill()
        rx.communicate()
        tb.stop_emulator()
        rows = tb.read_csv("fwd")
    # throughput per flow from the emulator, last 50 s
    tail = [r for r in rows if dur - 50 <= float(r["time_s"]) <= dur]
    secs = max(1e-9, len(tail) * 0.1)
    erap = sum(float(r["bytes_%d" % PORT]) for r in tail) * 8 / secs / 1e6
    tcpm = sum(float(r["bytes_5201"]) for r in tail) * 8 / secs / 1e6
    ratio = erap / max(1e-9, tcpm)
    r = {"erap_mbps": erap, "tcp_mbps": tcpm, "ratio": ratio,
         "tcp_cc": tcpj["end"].get("sender_tcp_congestion"),
         "goal": [0.67, 1.5], "met": 0.67 <= ratio <= 1.5}
    plot_rate(os.path.join(d, "rate.csv"), os.path.join(d, "rate.png"),
              "ERAP with TCP cubic, 8 Mbit/s, 40 ms RTT, 40-packet queue")
    res["c"] = r
    print("(c) ERAP %.2f Mbit/s, TCP %s %.2f Mbit/s: ratio %.2f (goal "
          "0.67..1.5)" % (erap, r["tcp_cc"], tcpm, ratio), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default="a,b,c")
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--b-mb", type=int, default=8)
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    a.out = os.path.abspath(a.out or tempfile.mkdtemp(prefix="erap-tb-"))
    os.makedirs(a.out, exist_ok=True)
    os.environ.setdefault("TWOFLOW_LINKEMU", os.path.join(
        a.build, "tools", "linkemu", "twoflow-linkemu"))
    try:
        check_environment()
    except SkipTest as e:
        print("SKIP: %s" % e)
        return 77
    res = {}
    for x in a.only.split(","):
        {"a": exp_a, "b": exp_b, "c": exp_c}[x](a, res)
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump(res, f, indent=1)
    print("results in %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
