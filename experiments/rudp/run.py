#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The UDP paper's scenario on the emulated WAN: the receiver-driven rate
levels (rudp) against an unresponsive CBR flow, each beside one TCP.

2 Mbit/s bottleneck with RED (min 5, max 10 packets, w 0.002, max_p 0.1,
queue 20), 10 ms one-way delay, 6 Mbit/s access (tbf on the server's
link). The TCP flow is, as in the paper's script, one bulk (FTP)
connection (reno) with its window clamped to 15 segments of 1000 bytes
(`ip route ... cwnd lock 15`, TCP_MAXSEG 1000: ns-2's window_ 15,
packetSize_ 1000); --tcp pareto gives the older load (one connection of
Poisson-arriving Pareto-sized transfers, 1.76 Mbit/s offered). For
--duration seconds (default 50) the bottleneck also carries either
  rudp  the media flow (rudpsink rate-control=receiver -> rudpsrc,
        1000-byte RTP packets, 10 levels of 160 kbit/s .. 1.6 Mbit/s), or
  cbr   an unresponsive CBR flow (rudpsink rate=--cbr-rate, 0.8 Mbit/s
        as in the paper's script), or
  rudp-ecn  (--ecn) the media flow sent ECN-capable (rudpsink ecn=true,
        ECT(0)) through the same RED queue with ECN marking on (linkemu
        --red-ecn: an early drop of an ECT packet becomes a CE mark; the
        TCP and CBR flows are not ECN-capable, so RED still drops theirs);
        rudpsrc halves its level on a CE mark as on a loss.
The TCP flow starts 2 s before the media flow and runs throughout (and
beyond: it stops ~4 s after the media flow).

Goals checked (over the sums of the runs): rudp's drops at the bottleneck
<= 1/10 of cbr's, and rudp's throughput within 0.67 .. 1.5 of the
competing TCP's (the TCP-fair share), both over the whole media window;
the same for rudp-ecn with --ecn.

--sweep K1,K2,... runs the rudp case (no ECN) with the level table capped
at level K (levels 0..K of the default table, on both ends) for each K:
media drops against the share, the trade-off without ECN
(results-sweep.json, fig17.png).

  sudo experiments/rudp/run.py [--out DIR] [--duration 50] [--build DIR]
                               [--runs 3] [--src-props "increase-time=..."]
                               [--ecn] [--sweep 1,3,5,7] [--doc]

Run data (emulator CSVs, tool output) go to --out (/tmp/rudp-experiment);
results.json and the figures (figures.py: fig06.png .. fig16.png) go to
--out too, or with --doc to experiments/rudp/results/. With --runs N each
case runs N times (seeds seed .. seed+N-1, alternating rudp, cbr, ...).
The CI smoke test (tests/net/test_rudp_share.py, net-rudp-share) runs
run_case() of this file for a short media case.
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
from twoflowlab import tool_argv  # noqa
from twoflowlab.testbed import Testbed, Red, SkipTest, check_environment  # noqa

MEDIA_PORT = 5004
TCP_PORT = 5201
LINK = 2e6
INTERVAL = 0.1          # emulator CSV resolution, s
TCP_LEAD = 2.0          # TCP starts this long before the media flow
RUDPTOOL = tool_argv("rudptool")
SHARE_LO, SHARE_HI = 0.67, 1.5


def tool_json(p, timeout):
    out, _ = p.communicate(timeout=timeout)
    lines = [ln for ln in (out or "").splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def level_table(max_level):
    """The default table (160 kbit/s steps) up to level max_level, as a
    quoted GstValueArray for a launch line."""
    return '"<%s>"' % ",".join("(guint64)%d" % (160000 * (i + 1))
                               for i in range(max_level + 1))


def run_case(case, a, workdir):
    env = dict(os.environ)
    env["GST_PLUGIN_PATH_1_0"] = os.path.join(a.build, "gst")
    env["GST_REGISTRY_1_0"] = os.path.join(workdir, "registry.bin")
    env.setdefault("GST_DEBUG", "1")
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + (
        ":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    ecn = case == "rudp-ecn"
    levels = getattr(a, "max_level", None)
    lv = (" levels=%s" % level_table(levels)) if levels is not None else ""
    with Testbed(rate_bps=LINK, delay_ms=10, queue_pkts=20,
                 red=Red(5, 10, 0.002, 0.1, ecn=ecn),
                 track_ports=[MEDIA_PORT, TCP_PORT],
                 csv_interval_ms=int(INTERVAL * 1000), workdir=workdir,
                 keep_workdir=True, seed=a.seed) as tb:
        # 6 Mbit/s access link out of the server
        tb.server.run(["tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
                       "rate", "6mbit", "burst", "6kb", "latency", "20ms"])
        tcp_args = []
        if a.tcp == "bulk":
            # ns-2's window_ 15: the congestion window never exceeds 15
            tb.server.run(["ip", "route", "replace", tb.client_ip + "/32",
                           "dev", "eth0", "cwnd", "lock", str(a.window)])
            tcp_args = ["--bulk", "--mss", "1000"]
        media_s = a.duration + 1
        rx = tb.client.popen(
            RUDPTOOL + ["recv", "--port", str(MEDIA_PORT), "--duration",
                        str(media_s + 3), "--props", a.src_props + lv],
            env=env, stdout=subprocess.PIPE, text=True)
        tcp_rx = tb.client.popen(
            [sys.executable, os.path.join(HERE, "paretotcp.py"), "recv",
             str(TCP_PORT), "--duration", str(a.duration + TCP_LEAD + 14)],
            stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        tcp_tx = tb.server.popen(
            [sys.executable, os.path.join(HERE, "paretotcp.py"), "send",
             tb.client_ip, str(TCP_PORT), "--duration",
             str(a.duration + TCP_LEAD + 6), "--seed", str(a.seed)] +
            tcp_args + (["--cc", a.cc] if a.cc else []),
            stdout=subprocess.PIPE, text=True)
        time.sleep(TCP_LEAD)
        if case == "rudp":
            props = lv
        elif case == "rudp-ecn":
            props = "ecn=true" + lv
        else:
            props = "rate-control=fixed rate=%d" % a.cbr_rate
        t0 = time.monotonic()
        tx = tb.server.popen(
            RUDPTOOL + ["send", "--host", tb.client_ip, "--port",
                        str(MEDIA_PORT), "--duration", str(media_s),
                        "--props", props],
            env=env, stdout=subprocess.PIPE, text=True)
        snd = tool_json(tx, media_s + 60)
        rcv = tool_json(rx, 30)
        tcp_out, _ = tcp_tx.communicate(timeout=TCP_LEAD + 40)
        rx_out, _ = tcp_rx.communicate(timeout=30)
        elapsed = time.monotonic() - t0
        emu_t0 = tb.emulator_start
        tb.stop_emulator()
        rows = tb.read_csv("fwd")
    return analyse(case, a, rows, snd, rcv, tcp_out, rx_out, emu_t0, elapsed)


def analyse(case, a, rows, snd, rcv, tcp_out, rx_out, emu_t0, elapsed):
    t_first = None
    for r in rows:
        if float(r["bytes_%d" % MEDIA_PORT]) > 0:
            t_first = float(r["time_s"])
            break
    if t_first is None:
        raise RuntimeError("%s: no media packet crossed the link" % case)
    # the window of the experiment: the first a.duration seconds of media
    win = [r for r in rows
           if t_first < float(r["time_s"]) <= t_first + a.duration]
    dur = len(win) * INTERVAL

    def col(name):
        return [float(r[name]) for r in win]

    def col0(name):
        return [float(r.get(name) or 0) for r in win]

    mb, md = col("bytes_%d" % MEDIA_PORT), col("drops_%d" % MEDIA_PORT)
    tb_, td = col("bytes_%d" % TCP_PORT), col("drops_%d" % TCP_PORT)
    mm, tm = col0("marks_%d" % MEDIA_PORT), col0("marks_%d" % TCP_PORT)
    media_bytes, tcp_bytes = sum(mb), sum(tb_)
    media_drops, tcp_drops = sum(md), sum(td)
    st = snd.get("stats", {})
    # the media flow's mean RTP packet (the sender's count) + UDP, IP, Eth
    rtp_mean = (st["bytes-sent"] / st["packets-sent"]
                if st.get("packets-sent") else 1012.0)
    frame = rtp_mean + 8 + 20 + 14
    tcp_frame = 1000 + 20 + 20 + 12 + 14     # MSS, TCP + timestamps, IP, Eth
    # each 100 ms bin's drop fraction (media and TCP together) applied to
    # the media flow's packets in it: what it would lose if RED treated it
    # as the average packet of that bin
    binwise = 0.0
    for k in range(len(win)):
        mp, tp = mb[k] / frame + md[k], tb_[k] / tcp_frame + td[k]
        if mp + tp > 0:
            binwise += mp * (md[k] + td[k]) / (mp + tp)
    # the sender's level over time (rudptool samples: t, level, rate, ...)
    levels = [[s[0] - emu_t0 - t_first, s[1], s[2]]
              for s in snd.get("samples", [])]
    rst = rcv.get("stats", {})
    # the RTP packets the receiver saw lost (sequence numbers) and received
    # in the window, from its 100 ms samples [t, level, received, lost, ..]:
    # the emulator's drops on the media port also count the sender's RTCP
    # notices (small packets, dropped by RED like any other)
    rs = [(x[0] - emu_t0 - t_first, x[2], x[3]) for x in
          rcv.get("samples", []) if x[2] is not None]

    def at(t):
        v = (0, 0)
        for x in rs:
            if x[0] > t:
                break
            v = (x[1], x[2])
        return v

    r0, r1 = at(0.0), at(a.duration)
    rtp_received, rtp_lost = r1[0] - r0[0], r1[1] - r0[1]
    media_mbps = media_bytes * 8 / dur / 1e6
    tcp_mbps = tcp_bytes * 8 / dur / 1e6
    res = {
        "case": case,
        "seconds": dur,
        "media_mbps": media_mbps,
        "media_packets": media_bytes / frame,
        "media_drops": media_drops,
        "media_drop_fraction": media_drops / max(1.0, media_drops +
                                                 media_bytes / frame),
        "media_rtp_bytes": rtp_mean,
        "media_rtp_received": rtp_received,
        "media_rtp_lost": rtp_lost,
        "media_rtp_loss_fraction": rtp_lost / max(1, rtp_lost +
                                                  rtp_received),
        # (the emulator counts drops in packets; bytes at the mean size)
        "media_drop_bytes": media_drops * frame,
        "media_drops_binwise": binwise,
        "media_marks": sum(mm),
        "tcp_marks": sum(tm),
        "tcp_drop_fraction": tcp_drops / max(1.0, tcp_drops +
                                             tcp_bytes / tcp_frame),
        "drops_queue": sum(col0("drops_queue")),
        "drops_red_early": sum(col0("drops_red_early")),
        "drops_red_forced": sum(col0("drops_red_forced")),
        "ecn": case == "rudp-ecn",
        "max_level_cap": getattr(a, "max_level", None),
        "tcp_mbps": tcp_mbps,
        "tcp_link_share": tcp_bytes * 8 / dur / LINK,
        "tcp_drops": tcp_drops,
        "media_to_tcp": media_mbps / tcp_mbps if tcp_mbps > 0 else None,
        "queue_avg_pkts": statistics.mean(col("queue_pkts")),
        "red_avg": statistics.mean(col("red_avg")),
        "level_mean": (statistics.mean(x[1] for x in levels)
                       if levels else None),
        "level_max": max((x[1] for x in levels), default=None),
        "level_changes": st.get("level-changes"),
        "receiver": {k: rst.get(k) for k in ("received", "lost", "increases",
                                             "decreases", "srtt",
                                             "ect-received", "ce-marked",
                                             "ce-marked-rtcp",
                                             "ce-decreases")},
        "tcp_sender": json.loads(tcp_out or "{}"),
        "tcp_receiver": json.loads(rx_out or "{}"),
        "wall_s": elapsed,
        # time series (s from the first media packet, per 100 ms)
        "series": {
            "t": [round(float(r["time_s"]) - t_first, 3) for r in win],
            "queue": col("queue_pkts"),
            "red_avg": [round(x, 3) for x in col("red_avg")],
            "media_bytes": mb, "media_drops": md, "media_marks": mm,
            "tcp_bytes": tb_, "tcp_drops": td,
            "level": [[round(x[0], 2), x[1], x[2]] for x in levels
                      if 0 <= x[0] <= a.duration],
        },
    }
    return res


def summary_line(r):
    return ("media %.2f Mbit/s, %d drops (%.1f %%; RTP lost %d, %.1f %%), "
            "%d CE marks; TCP %.2f "
            "Mbit/s (%.0f %% of the link), media/TCP %.2f; queue avg %.1f pkts "
            "(RED avg %.1f); level mean %s max %s" % (
                r["media_mbps"], r["media_drops"],
                100 * r["media_drop_fraction"], r.get("media_rtp_lost", -1),
                100 * r.get("media_rtp_loss_fraction", 0),
                r.get("media_marks", 0),
                r["tcp_mbps"],
                100 * r["tcp_link_share"], r["media_to_tcp"] or 0,
                r["queue_avg_pkts"], r["red_avg"],
                "%.1f" % r["level_mean"] if r["level_mean"] is not None
                else "-", r["level_max"]))


def goals(runs, media="rudp"):
    ru, cb = runs.get(media, []), runs.get("cbr", [])
    g = {}
    if ru:
        mb = sum(r["media_mbps"] for r in ru)
        tb = sum(r["tcp_mbps"] for r in ru)
        share = mb / tb if tb > 0 else 0.0
        g.update({
            "media_to_tcp": share,
            "media_to_tcp_per_run": [r["media_to_tcp"] for r in ru],
            "share_goal_met": SHARE_LO <= share <= SHARE_HI,
            "level_max": max(r["level_max"] or 0 for r in ru),
        })
    if ru and cb:
        drops_ru = sum(r["media_drops"] for r in ru)
        drops_cb = sum(r["media_drops"] for r in cb)
        ratio = drops_ru / max(1.0, drops_cb)
        # the media packets alone (RTP, from the receiver's sequence
        # numbers): the port's drops also count the sender's RTCP notices
        rtp_ru = sum(r.get("media_rtp_lost", 0) for r in ru)
        rtp_cb = sum(r.get("media_rtp_lost", 0) for r in cb)
        g.update({
            "media_rtp_lost_rudp": rtp_ru,
            "media_rtp_lost_cbr": rtp_cb,
            "media_rtp_lost_ratio": rtp_ru / max(1.0, rtp_cb),
            "media_rtp_goal_met": rtp_ru / max(1.0, rtp_cb) <= 0.1,
            "media_drops_rudp": drops_ru,
            "media_drops_cbr": drops_cb,
            "media_drops_ratio": ratio,
            "media_drops_ratio_per_run": [
                x["media_drops"] / max(1.0, y["media_drops"])
                for x, y in zip(ru, cb)],
            "media_drops_goal_met": ratio <= 0.1,
        })
    return g


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", default="/tmp/rudp-experiment")
    p.add_argument("--doc", action="store_true",
                   help="results.json and figures to experiments/rudp/results")
    p.add_argument("--duration", type=float, default=50.0)
    p.add_argument("--build", default=os.environ.get(
        "TWOFLOW_BUILD_ROOT", os.path.join(ROOT, "build")))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cc", default="reno",
                   help="TCP congestion control (reno)")
    p.add_argument("--tcp", choices=["bulk", "pareto"], default="bulk")
    p.add_argument("--window", type=int, default=15,
                   help="bulk TCP's window clamp in segments (15)")
    p.add_argument("--cbr-rate", type=int, default=800000,
                   help="the CBR flow's rate, bit/s (800000)")
    p.add_argument("--cases", default=None,
                   help="rudp,cbr (default; with --ecn rudp,cbr,rudp-ecn)")
    p.add_argument("--ecn", action="store_true",
                   help="also the rudp-ecn case (ECN-capable media flow, "
                   "RED marks)")
    p.add_argument("--sweep", default=None,
                   help="K1,K2,...: the rudp case with the table capped at "
                   "level K, for each K (results-sweep.json)")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--src-props", default="",
                   help="extra rudpsrc properties, e.g. increase-time=0")
    p.add_argument("--no-figures", action="store_true")
    a = p.parse_args()
    a.build = os.path.abspath(a.build)
    try:
        check_environment()
    except SkipTest as e:
        print("skipped:", e)
        return 77
    os.makedirs(a.out, exist_ok=True)
    dest = os.path.join(HERE, "results") if a.doc else a.out
    os.makedirs(dest, exist_ok=True)
    if a.sweep:
        return sweep(a, dest)
    a.cases = a.cases or ("rudp,cbr,rudp-ecn" if a.ecn else "rudp,cbr")
    cases = a.cases.split(",")
    runs = {c: [] for c in cases}
    seed0 = a.seed
    for k in range(a.runs):
        a.seed = seed0 + k
        for case in cases:
            name = "%s-%d" % (case, k + 1)
            wd = os.path.join(a.out, name)
            shutil.rmtree(wd, ignore_errors=True)
            r = run_case(case, a, wd)
            r["seed"] = a.seed
            runs[case].append(r)
            print("%-7s %s" % (name, summary_line(r)), flush=True)
    g = goals(runs)
    if "rudp-ecn" in runs:
        g["ecn"] = goals(runs, "rudp-ecn")
    results = {"scenario": {
        "link_bps": LINK, "delay_ms": 10, "queue_pkts": 20,
        "red": [5, 10, 0.002, 0.1], "access": "tbf 6mbit",
        "tcp": a.tcp, "tcp_window": a.window if a.tcp == "bulk" else None,
        "cc": a.cc, "cbr_bps": a.cbr_rate, "duration": a.duration,
        "src_props": a.src_props}, "runs": runs, "goals": g}
    for case in cases:
        rs = runs[case]
        print("%-7s mean of %d: media %.2f Mbit/s, %.0f drops, TCP %.2f "
              "Mbit/s, queue %.1f" % (
                  case, len(rs), statistics.mean(r["media_mbps"] for r in rs),
                  statistics.mean(r["media_drops"] for r in rs),
                  statistics.mean(r["tcp_mbps"] for r in rs),
                  statistics.mean(r["queue_avg_pkts"] for r in rs)))
    if "media_to_tcp" in g:
        print("rudp/TCP throughput = %.2f (goal %.2f..%.2f: %s); level max %d"
              % (g["media_to_tcp"], SHARE_LO, SHARE_HI, g["share_goal_met"],
                 g["level_max"]))
    if "media_drops_ratio" in g:
        print("media drops rudp/cbr = %d/%d = %.3f (goal <= 0.1: %s); RTP "
              "packets lost %d/%d = %.3f" % (
                  g["media_drops_rudp"], g["media_drops_cbr"],
                  g["media_drops_ratio"], g["media_drops_goal_met"],
                  g["media_rtp_lost_rudp"], g["media_rtp_lost_cbr"],
                  g["media_rtp_lost_ratio"]))
    ge = g.get("ecn", {})
    if "media_to_tcp" in ge:
        print("with ECN: rudp-ecn/TCP throughput = %.2f (goal %.2f..%.2f: %s)"
              % (ge["media_to_tcp"], SHARE_LO, SHARE_HI,
                 ge["share_goal_met"]))
    if "media_drops_ratio" in ge:
        print("with ECN: media drops rudp-ecn/cbr = %d/%d = %.3f (goal <= "
              "0.1: %s); RTP packets lost %d/%d = %.3f (%s); CE marks %d" % (
                  ge["media_drops_rudp"], ge["media_drops_cbr"],
                  ge["media_drops_ratio"], ge["media_drops_goal_met"],
                  ge["media_rtp_lost_rudp"], ge["media_rtp_lost_cbr"],
                  ge["media_rtp_lost_ratio"], ge["media_rtp_goal_met"],
                  sum(r["media_marks"] for r in runs["rudp-ecn"])))
    with open(os.path.join(dest, "results.json"), "w") as f:
        json.dump(results, f, indent=None, separators=(",", ":"))
        f.write("\n")
    if not a.no_figures:
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "figures.py"),
                        os.path.join(dest, "results.json"), "-o", dest],
                       check=False)
    return 0


def sweep(a, dest):
    """The no-ECN trade-off: the rudp case with the top level capped."""
    caps = [int(x) for x in a.sweep.split(",")]
    points = []
    seed0 = a.seed
    for k in range(a.runs):
        a.seed = seed0 + k
        for cap in caps:
            a.max_level = cap
            name = "sweep-%d-%d" % (cap, k + 1)
            wd = os.path.join(a.out, name)
            shutil.rmtree(wd, ignore_errors=True)
            r = run_case("rudp", a, wd)
            r["seed"] = a.seed
            r.pop("series", None)
            points.append(r)
            print("%-11s %s" % (name, summary_line(r)), flush=True)
    res = {"scenario": {"duration": a.duration, "cbr_bps": a.cbr_rate,
                        "caps": caps, "runs": a.runs}, "points": points}
    with open(os.path.join(dest, "results-sweep.json"), "w") as f:
        json.dump(res, f, indent=None, separators=(",", ":"))
        f.write("\n")
    if not a.no_figures:
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "figures.py"),
                        "--sweep", os.path.join(dest, "results-sweep.json"),
                        "-o", dest], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
