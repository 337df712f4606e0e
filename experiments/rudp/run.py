#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The UDP paper's scenario on the emulated WAN: rudp rate levels against
an unresponsive CBR flow.

2 Mbit/s bottleneck with RED (min 5, max 10 packets, queue 20), 10 ms
one-way delay, 6 Mbit/s access (tbf on the server's link). A TCP flow
carries Poisson-arriving Pareto-sized transfers (mean 10 KB, shape 1.5,
22 per second: 1.76 Mbit/s offered) and, for 50 s, shares the bottleneck
with either
  rudp  the media flow (rudpsink rate-control=receiver -> rudpsrc,
        1000-byte RTP packets, 10 levels of 160 kbit/s .. 1.6 Mbit/s), or
  cbr   an unresponsive 1.6 Mbit/s CBR UDP flow (rudpsink rate=1600000).
Reports media drops at the bottleneck (goal: rudp <= 1/10 of cbr), the
TCP flow's throughput (goal: >= 40 % of the link with rudp) and the
average queue; writes the CSVs, results.json and plots to --out.

  sudo experiments/rudp/run.py [--out DIR] [--duration 50] [--build DIR]
                               [--runs 3] [--src-props "increase-packets=50"]

With --runs N, each case runs N times (seeds seed .. seed+N-1, in
alternation rudp, cbr, rudp, ...); the drops ratio is taken over the sums.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "../../python"))  # twoflowlab
from twoflowlab.testbed import Testbed, Red, SkipTest, check_environment  # noqa

MEDIA_PORT = 5004
TCP_PORT = 5201
LINK = 2e6


def run_case(case, a, workdir):
    env = dict(os.environ)
    env["GST_PLUGIN_PATH_1_0"] = os.path.join(a.build, "gst")
    env["GST_REGISTRY_1_0"] = os.path.join(workdir, "registry.bin")
    env.setdefault("GST_DEBUG", "1")
    with Testbed(rate_bps=LINK, delay_ms=10, queue_pkts=20,
                 red=Red(5, 10, 0.002, 0.1), track_ports=[MEDIA_PORT, TCP_PORT],
                 csv_interval_ms=100, workdir=workdir, keep_workdir=True,
                 seed=a.seed) as tb:
        # 6 Mbit/s access link out of the server
        tb.server.run(["tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
                       "rate", "6mbit", "burst", "6kb", "latency", "20ms"])
        rx = tb.client.popen(
            ["gst-launch-1.0", "-q", "rudpsrc", "port=%d" % MEDIA_PORT,
             "caps=application/x-rtp,media=application,clock-rate=90000,"
             "encoding-name=X-GST"] + a.src_props.split() +
            ["!", "fakesink", "sync=false"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tcp_rx = tb.client.popen(
            [sys.executable, os.path.join(HERE, "paretotcp.py"), "recv",
             str(TCP_PORT), "--duration", str(a.duration + 8)],
            stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        if case == "rudp":
            ctl = ["rate-control=receiver"]
        else:
            ctl = ["rate=1600000"]
        tx = tb.server.popen(
            ["gst-launch-1.0", "-q", "videotestsrc", "!",
             "video/x-raw,width=320,height=240", "!", "rtpgstpay", "mtu=1000",
             "!", "rudpsink", "host=%s" % tb.client_ip,
             "port=%d" % MEDIA_PORT] + ctl,
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tcp_tx = tb.server.popen(
            [sys.executable, os.path.join(HERE, "paretotcp.py"), "send",
             tb.client_ip, str(TCP_PORT), "--duration", str(a.duration),
             "--seed", str(a.seed)] + (["--cc", a.cc] if a.cc else []),
            stdout=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        tcp_out, _ = tcp_tx.communicate(timeout=a.duration + 60)
        elapsed = time.monotonic() - t0
        for p in (tx, rx):
            p.terminate()
        rx_out, _ = tcp_rx.communicate(timeout=20)
        for p in (tx, rx):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        summary = tb.stop_emulator()
        rows = tb.read_csv("fwd")
    # the window of the experiment: the first a.duration seconds of media
    rows = [r for r in rows if float(r["time_s"]) <= a.duration + 1]
    t_first = None
    for r in rows:
        if float(r["bytes_%d" % MEDIA_PORT]) > 0:
            t_first = float(r["time_s"])
            break
    win = [r for r in rows if t_first is not None and
           t_first < float(r["time_s"]) <= t_first + a.duration]
    dur = len(win) * a_interval(a)
    media_bytes = sum(float(r["bytes_%d" % MEDIA_PORT]) for r in win)
    media_drops = sum(float(r["drops_%d" % MEDIA_PORT]) for r in win)
    tcp_bytes = sum(float(r["bytes_%d" % TCP_PORT]) for r in win)
    tcp_drops = sum(float(r["drops_%d" % TCP_PORT]) for r in win)
    res = {
        "case": case,
        "seconds": dur,
        "media_mbps": media_bytes * 8 / dur / 1e6,
        "media_packets": media_bytes / 1014.0,   # frames of 1000 B RTP
        "media_drops": media_drops,
        "media_drop_fraction": media_drops / max(1.0, media_drops +
                                                 media_bytes / 1014.0),
        "tcp_mbps": tcp_bytes * 8 / dur / 1e6,
        "tcp_link_share": tcp_bytes * 8 / dur / LINK,
        "tcp_drops": tcp_drops,
        "queue_avg_pkts": statistics.mean(float(r["queue_pkts"]) for r in win),
        "red_avg": statistics.mean(float(r["red_avg"]) for r in win),
        "tcp_sender": json.loads(tcp_out or "{}"),
        "tcp_receiver": json.loads(rx_out or "{}"),
        "wall_s": elapsed,
    }
    return res


def a_interval(a):
    return 0.1


def summary_line(r):
    return ("media %.2f Mbit/s, %d drops (%.1f %%); TCP %.2f Mbit/s "
            "(%.0f %% of the link); queue avg %.1f pkts (RED avg %.1f)" % (
                r["media_mbps"], r["media_drops"],
                100 * r["media_drop_fraction"], r["tcp_mbps"],
                100 * r["tcp_link_share"], r["queue_avg_pkts"], r["red_avg"]))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", default="/tmp/rudp-experiment")
    p.add_argument("--duration", type=float, default=50.0)
    p.add_argument("--build", default=os.environ.get(
        "TWOFLOW_BUILD_ROOT", os.path.join(ROOT, "build")))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cc", default="reno",
                   help="TCP congestion control of the transfers (reno)")
    p.add_argument("--cases", default="rudp,cbr")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--src-props", default="",
                   help="extra rudpsrc properties, e.g. increase-packets=20")
    a = p.parse_args()
    a.build = os.path.abspath(a.build)
    try:
        check_environment()
    except SkipTest as e:
        print("skipped:", e)
        return 77
    os.makedirs(a.out, exist_ok=True)
    cases = a.cases.split(",")
    runs = {c: [] for c in cases}
    seed0 = a.seed
    for k in range(a.runs):
        a.seed = seed0 + k
        for case in cases:
            name = case if a.runs == 1 else "%s-%d" % (case, k + 1)
            wd = os.path.join(a.out, name)
            shutil.rmtree(wd, ignore_errors=True)
            r = run_case(case, a, wd)
            r["seed"] = a.seed
            runs[case].append(r)
            print("%-7s %s" % (name, summary_line(r)), flush=True)
            plot = os.path.join(ROOT, "experiments", "plot.py")
            subprocess.run(["/usr/bin/python3", plot,
                            os.path.join(wd, "linkemu.csv"), "-o",
                            os.path.join(a.out, name + ".png"), "--smooth",
                            "5", "--title", "%s vs Pareto/Poisson TCP, "
                            "2 Mbit/s RED (seed %d)" % (case, a.seed)],
                           check=False)
    results = {"src_props": a.src_props, "duration": a.duration,
               "runs": runs}
    if "rudp" in runs and "cbr" in runs:
        ru, cb = runs["rudp"], runs["cbr"]
        drops_ru = sum(r["media_drops"] for r in ru)
        drops_cb = sum(r["media_drops"] for r in cb)
        ratio = drops_ru / max(1.0, drops_cb)
        share = statistics.mean(r["tcp_link_share"] for r in ru)
        results["goals"] = {
            "media_drops_ratio": ratio,
            "media_drops_ratio_per_run": [
                x["media_drops"] / max(1.0, y["media_drops"])
                for x, y in zip(ru, cb)],
            "media_drops_goal_met": ratio <= 0.1,
            "tcp_share_with_rudp": share,
            "tcp_share_goal_met": share >= 0.4,
        }
        for case in ("rudp", "cbr"):
            rs = runs[case]
            print("%-7s mean of %d: media %.2f Mbit/s, %.0f drops, TCP %.0f %%,"
                  " queue %.1f" % (case, len(rs),
                                   statistics.mean(r["media_mbps"] for r in rs),
                                   statistics.mean(r["media_drops"] for r in rs),
                                   100 * statistics.mean(r["tcp_link_share"]
                                                         for r in rs),
                                   statistics.mean(r["queue_avg_pkts"]
                                                   for r in rs)))
        print("media drops rudp/cbr = %.3f (goal <= 0.1: %s); TCP share with "
              "rudp %.0f %% (goal >= 40 %%: %s)" % (
                  ratio, results["goals"]["media_drops_goal_met"],
                  100 * share, results["goals"]["tcp_share_goal_met"]))
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
