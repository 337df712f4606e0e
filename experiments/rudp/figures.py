#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Figures 6-16 of the UDP paper's evaluation from run.py's results.json.

  experiments/rudp/figures.py results.json [-o DIR] [--run 1]

The project's design notes name the paper's scenario but not what each of
its figures plots; this is the reconstruction (queue and throughput over
time for each case, then the comparisons), one PNG per figure:

  fig06  queue at the bottleneck (packets; RED's average), TCP + CBR
  fig07  throughput of TCP and CBR (1 s bins)
  fig08  queue at the bottleneck, TCP + rUDP
  fig09  throughput of TCP and the rUDP media flow (1 s bins)
  fig10  the rUDP rate level (and its rate) over time
  fig11  media drops at the bottleneck, cumulative: CBR vs rUDP
  fig12  TCP drops at the bottleneck, cumulative: beside CBR vs beside rUDP
  fig13  TCP throughput beside CBR vs beside rUDP (1 s bins)
  fig14  media throughput: CBR vs rUDP (1 s bins)
  fig15  rUDP / TCP throughput over time (5 s windows), the 0.67-1.5 band
  fig16  per run: media and TCP throughput and media drops, both cases

With the rudp-ecn case (run.py --ecn) figs. 11, 12, 15 and 16 show it
too, and
  fig18  throughput of TCP and the ECN media flow (1 s bins)
  fig19  queue at the bottleneck, TCP + the ECN media flow
  fig20  the ECN media flow's level, with the CE marks RED made
From run.py --sweep's results-sweep.json (figures.py --sweep FILE
[results.json]):
  fig17  media drops against the media flow's share of TCP's throughput,
         the top level capped (no ECN), beside CBR's drops and the ECN runs

Time series are of run --run (1); fig16 shows every run. Uses Debian's
python3-matplotlib (hence /usr/bin/python3).
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

INTERVAL = 0.1


def bins(series, key, width):
    """Mbit/s per `width` seconds from per-100 ms byte counts."""
    n = int(round(width / INTERVAL))
    xs, ys = [], []
    v = series[key]
    for i in range(0, len(v) - n + 1, n):
        xs.append(series["t"][i + n - 1])
        ys.append(sum(v[i:i + n]) * 8 / width / 1e6)
    return xs, ys


def cumulative(v):
    out, s = [], 0.0
    for x in v:
        s += x
        out.append(s)
    return out


def save(fig, ax, out, name, title):
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out, name + ".png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def queue_fig(r, out, name, label):
    s = r["series"]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.plot(s["t"], s["queue"], lw=0.6, label="queue (packets)")
    ax.plot(s["t"], s["red_avg"], lw=1.4, label="RED average")
    ax.axhline(5, ls=":", c="grey")
    ax.axhline(10, ls=":", c="grey")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("packets")
    ax.set_ylim(0, 21)
    ax.legend(loc="upper right", fontsize=8)
    return save(fig, ax, out, name, "Fig. %s: bottleneck queue, TCP + %s "
                "(mean %.1f packets)" % (name[3:].lstrip("0"), label,
                                         r["queue_avg_pkts"]))


def tput_fig(r, out, name, label, link):
    s = r["series"]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    x, y = bins(s, "tcp_bytes", 1.0)
    ax.plot(x, y, label="TCP (%.2f Mbit/s)" % r["tcp_mbps"])
    x, y = bins(s, "media_bytes", 1.0)
    ax.plot(x, y, label="%s (%.2f Mbit/s)" % (label, r["media_mbps"]))
    ax.axhline(link / 1e6, ls="--", c="grey", lw=0.8)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Mbit/s")
    ax.set_ylim(0, link / 1e6 * 1.1)
    ax.legend(loc="upper right", fontsize=8)
    return save(fig, ax, out, name, "Fig. %s: throughput, TCP + %s" % (
        name[3:].lstrip("0"), label))


def sweep_fig(path, results, out):
    with open(path) as f:
        sw = json.load(f)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    pts = sw["points"]
    for cap in sw["scenario"]["caps"]:
        ps = [q for q in pts if q["max_level_cap"] == cap]
        ax.plot([q["media_to_tcp"] for q in ps],
                [q["media_drops"] for q in ps], "o",
                label="top level %d (%.2f Mbit/s)" % (cap,
                                                      0.16 * (cap + 1)))
    if results:
        with open(results) as f:
            res = json.load(f)
        ru = res["runs"].get("rudp", [])
        if ru:
            ax.plot([q["media_to_tcp"] for q in ru],
                    [q["media_drops"] for q in ru], "s", c="k",
                    label="top level 9 (published table)")
        ec = res["runs"].get("rudp-ecn", [])
        if ec:
            ax.plot([q["media_to_tcp"] for q in ec],
                    [q["media_drops"] for q in ec], "*", ms=10, c="red",
                    label="ECN, top level 9")
        cb = res["runs"].get("cbr", [])
        if cb:
            mean = sum(q["media_drops"] for q in cb) / len(cb)
            ax.axhline(mean, ls="--", c="grey", lw=0.8,
                       label="CBR 0.8 Mbit/s: %.0f drops" % mean)
            ax.axhline(mean / 10, ls=":", c="grey", lw=0.8,
                       label="1/10 of CBR's")
    ax.axvspan(0.67, 1.5, color="green", alpha=0.10, label="TCP-fair share")
    ax.set_xlim(0, 1.6)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("media / TCP throughput")
    ax.set_ylabel("media drops (%.0f s)" % sw["scenario"]["duration"])
    ax.legend(loc="upper left", fontsize=7)
    return save(fig, ax, out, "fig17", "Fig. 17: drops against share "
                "without ECN, the top level capped")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("results", nargs="?")
    p.add_argument("-o", "--out", default=None)
    p.add_argument("--run", type=int, default=1)
    p.add_argument("--sweep", default=None,
                   help="run.py --sweep's results-sweep.json: fig17")
    a = p.parse_args()
    if a.sweep:
        out = a.out or os.path.dirname(os.path.abspath(a.sweep))
        print(sweep_fig(a.sweep, a.results, out))
        return
    with open(a.results) as f:
        res = json.load(f)
    out = a.out or os.path.dirname(os.path.abspath(a.results))
    os.makedirs(out, exist_ok=True)
    link = res["scenario"]["link_bps"]
    cbr_label = "CBR %.1f Mbit/s" % (res["scenario"]["cbr_bps"] / 1e6)
    runs = res["runs"]
    ru = runs.get("rudp", [])
    cb = runs.get("cbr", [])
    ec = runs.get("rudp-ecn", [])
    R = ru[a.run - 1] if len(ru) >= a.run else None
    C = cb[a.run - 1] if len(cb) >= a.run else None
    E = ec[a.run - 1] if len(ec) >= a.run else None
    made = []
    if E:
        made.append(tput_fig(E, out, "fig18", "rUDP with ECN", link))
        made.append(queue_fig(E, out, "fig19", "rUDP with ECN"))
        s = E["series"]
        fig, ax = plt.subplots(figsize=(7, 3.2))
        lv = s["level"]
        ax.step([x[0] for x in lv], [x[1] for x in lv], where="post",
                label="level")
        marks = [t for t, m in zip(s["t"], s.get("media_marks", []))
                 for _ in range(int(m))]
        ax.plot(marks, [9.3] * len(marks), "|", c="red", ms=6,
                label="CE marks (%d)" % E.get("media_marks", 0))
        drops = [t for t, m in zip(s["t"], s["media_drops"])
                 for _ in range(int(m))]
        ax.plot(drops, [8.9] * len(drops), "x", c="k", ms=4,
                label="drops (%d)" % E["media_drops"])
        ax.set_ylim(-0.3, 9.8)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("level (0..9)")
        ax.legend(loc="lower right", fontsize=7)
        made.append(save(fig, ax, out, "fig20", "Fig. 20: the level with "
                         "ECN (mean %.1f), RED's CE marks" % E["level_mean"]))
    if C:
        made.append(queue_fig(C, out, "fig06", cbr_label))
        made.append(tput_fig(C, out, "fig07", cbr_label, link))
    if R:
        made.append(queue_fig(R, out, "fig08", "rUDP"))
        made.append(tput_fig(R, out, "fig09", "rUDP", link))
        s = R["series"]
        fig, ax = plt.subplots(figsize=(7, 3.2))
        lv = s["level"]
        ax.step([x[0] for x in lv], [x[1] for x in lv], where="post",
                label="level")
        ax.set_ylim(-0.3, 9.5)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("level (0..9)")
        # the right axis reads the level as its rate (the default table:
        # (level + 1) x 160 kbit/s)
        ax2 = ax.twinx()
        ax2.set_ylim(0.7 * 0.16, 10.5 * 0.16)
        ax2.set_ylabel("level's rate (Mbit/s)")
        made.append(save(fig, ax, out, "fig10", "Fig. 10: the receiver's "
                         "rate level (mean %.1f, max %d)" % (
                             R["level_mean"], R["level_max"])))
    if R and C:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        for r, lab in ((C, cbr_label), (R, "rUDP")) + (
                ((E, "rUDP with ECN"),) if E else ()):
            s = r["series"]
            ax.plot(s["t"], cumulative(s["media_drops"]),
                    label="%s: %d drops" % (lab, r["media_drops"]))
        if E:
            s = E["series"]
            ax.plot(s["t"], cumulative(s["media_marks"]), ls="--",
                    label="rUDP with ECN: %d CE marks (not drops)" %
                    E["media_marks"])
        ax.set_xlabel("time (s)")
        ax.set_ylabel("media packets dropped")
        ax.legend(loc="upper left", fontsize=8)
        title = "Fig. 11: media drops at the bottleneck (ratio to CBR's %.2f" % (
            R["media_drops"] / max(1.0, C["media_drops"]))
        if E:
            title += ", with ECN %.2f" % (E["media_drops"] /
                                         max(1.0, C["media_drops"]))
        made.append(save(fig, ax, out, "fig11", title + ")"))
        fig, ax = plt.subplots(figsize=(7, 3.2))
        for r, lab in ((C, "TCP beside " + cbr_label),
                       (R, "TCP beside rUDP")) + (
                ((E, "TCP beside rUDP with ECN"),) if E else ()):
            s = r["series"]
            ax.plot(s["t"], cumulative(s["tcp_drops"]),
                    label="%s: %d drops" % (lab, r["tcp_drops"]))
        ax.set_xlabel("time (s)")
        ax.set_ylabel("TCP packets dropped")
        ax.legend(loc="upper left", fontsize=8)
        made.append(save(fig, ax, out, "fig12", "Fig. 12: TCP drops at the "
                         "bottleneck"))
        for key, name, what in (("tcp_bytes", "fig13", "TCP throughput"),
                                ("media_bytes", "fig14",
                                 "media throughput")):
            fig, ax = plt.subplots(figsize=(7, 3.2))
            for r, lab in ((C, "with " + cbr_label), (R, "with rUDP")):
                x, y = bins(r["series"], key, 1.0)
                ax.plot(x, y, label=lab)
            ax.axhline(link / 1e6, ls="--", c="grey", lw=0.8)
            ax.set_ylim(0, link / 1e6 * 1.1)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("Mbit/s")
            ax.legend(loc="upper right", fontsize=8)
            made.append(save(fig, ax, out, name, "Fig. %s: %s, CBR vs rUDP"
                             % (name[3:], what)))
    if ru:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        for k, r in enumerate(ru):
            xm, ym = bins(r["series"], "media_bytes", 5.0)
            xt, yt = bins(r["series"], "tcp_bytes", 5.0)
            ax.plot(xm, [m / t if t > 0 else 0 for m, t in zip(ym, yt)],
                    marker="o", ms=3, label="run %d: %.2f overall" % (
                        k + 1, r["media_to_tcp"]))
        for k, r in enumerate(ec):
            xm, ym = bins(r["series"], "media_bytes", 5.0)
            xt, yt = bins(r["series"], "tcp_bytes", 5.0)
            ax.plot(xm, [m / t if t > 0 else 0 for m, t in zip(ym, yt)],
                    marker="^", ms=3, ls="--", label="ECN run %d: %.2f" % (
                        k + 1, r["media_to_tcp"]))
        ax.axhspan(0.67, 1.5, color="green", alpha=0.12,
                   label="0.67-1.5 (TCP-fair)")
        ax.set_ylim(0, 2.5)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("rUDP / TCP throughput")
        ax.legend(loc="upper right", fontsize=7)
        made.append(save(fig, ax, out, "fig15", "Fig. 15: the media flow's "
                         "share against TCP's (5 s windows)"))
    if ru or cb:
        fig, ax = plt.subplots(figsize=(7, 3.4))
        labels, media, tcp, drops = [], [], [], []
        for case, lab in (("rudp", "rUDP"), ("cbr", "CBR"),
                          ("rudp-ecn", "ECN")):
            for k, r in enumerate(runs.get(case, [])):
                labels.append("%s %d" % (lab, k + 1))
                media.append(r["media_mbps"])
                tcp.append(r["tcp_mbps"])
                drops.append(r["media_drops"])
        xs = range(len(labels))
        ax.bar([x - 0.2 for x in xs], media, 0.4, label="media Mbit/s")
        ax.bar([x + 0.2 for x in xs], tcp, 0.4, label="TCP Mbit/s")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("Mbit/s")
        ax2 = ax.twinx()
        ax2.plot(list(xs), drops, "kD", label="media drops")
        ax2.set_ylabel("media drops")
        ax2.set_ylim(0, max(drops + [1]) * 1.2)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=7)
        made.append(save(fig, ax, out, "fig16", "Fig. 16: per run, media and "
                         "TCP throughput, media drops"))
    for m in made:
        print(m)


if __name__ == "__main__":
    main()
