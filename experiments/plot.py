#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Plots a twoflow-linkemu time series (CSV) as a PNG.

  experiments/plot.py linkemu.csv [-o out.png] [--dir fwd|rev]
      [--smooth N] [--title TEXT]

Top: delivered rate per flow group (bytes_<group> columns) and in total,
with the configured bottleneck rate dashed.  Bottom: queue length in
packets (sampled, and the maximum in each interval), RED's average queue
when RED is on, and drops per interval (queue / RED / loss) on the right
axis.  Uses Debian's python3-matplotlib (hence /usr/bin/python3).
"""

import argparse
import csv
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path, direction):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["dir"] != direction:
                continue
            rows.append({k: (v if k == "dir" else float(v))
                         for k, v in r.items()})
    return rows


def smooth(xs, n):
    if n <= 1:
        return xs
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= n:
            acc -= xs[i - n]
        out.append(acc / min(i + 1, n))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("-o", "--out", help="PNG (default: CSV name .png)")
    ap.add_argument("--dir", default="fwd", choices=("fwd", "rev"))
    ap.add_argument("--smooth", type=int, default=1,
                    help="moving average over N intervals for the rates")
    ap.add_argument("--title")
    ap.add_argument("--labels", help="comma list: name flow groups, e.g. "
                    "5201=30ms,5202=90ms")
    a = ap.parse_args()

    rows = load(a.csv, a.dir)
    if len(rows) < 2:
        sys.exit("%s: no %s rows" % (a.csv, a.dir))
    t = [r["time_s"] for r in rows]
    dt = statistics.median(b - c for b, c in zip(t[1:], t))
    labels = dict(x.split("=", 1) for x in a.labels.split(",")) \
        if a.labels else {}
    groups = [k[len("bytes_"):] for k in rows[0] if k.startswith("bytes_")]
    groups = [g for g in groups if sum(r["bytes_" + g] for r in rows) > 0]

    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(10, 7),
                                   gridspec_kw={"height_ratios": [3, 2]})
    mbit = lambda col: smooth([r[col] * 8 / dt / 1e6 for r in rows],
                              a.smooth)
    for g in groups:
        mean = sum(r["bytes_" + g] for r in rows) * 8 / (dt * len(rows)) / 1e6
        name = labels.get(g, "port " + g if g != "other" else "other")
        ax1.plot(t, mbit("bytes_" + g), lw=1.2,
                 label="%s (mean %.2f Mbit/s)" % (name, mean))
    if len(groups) > 1:
        ax1.plot(t, mbit("delivered_bytes"), color="k", lw=0.8, alpha=0.6,
                 label="total")
    rate = [r["rate_bps"] / 1e6 if r["rate_bps"] != float("inf") else None
            for r in rows]
    if any(x is not None for x in rate):
        ax1.step(t, [x if x is not None else float("nan") for x in rate],
                 where="pre", color="grey", ls="--", lw=1,
                 label="bottleneck rate")
    ax1.set_ylabel("delivered rate (Mbit/s, %g ms bins%s)" % (
        dt * 1000, ", smoothed x%d" % a.smooth if a.smooth > 1 else ""))
    ax1.set_ylim(bottom=0)
    ax1.grid(alpha=0.3)
    ax1.legend(loc="upper right", fontsize=8)

    ax2.plot(t, [r["queue_max_pkts"] for r in rows], color="tab:blue",
             lw=0.6, alpha=0.5, label="queue max in interval")
    ax2.plot(t, [r["queue_pkts"] for r in rows], color="tab:blue", lw=1.2,
             label="queue (sampled)")
    if any(r["red_avg"] for r in rows):
        ax2.plot(t, [r["red_avg"] for r in rows], color="tab:green", lw=1.2,
                 label="RED average")
    ax2.set_ylabel("queue (packets)")
    ax2.set_xlabel("time (s)")
    ax2.set_ylim(bottom=0)
    ax2.grid(alpha=0.3)
    ax3 = ax2.twinx()
    drops = [r["drops_queue"] + r["drops_red_early"] + r["drops_red_forced"]
             + r["drops_loss"] for r in rows]
    if any(drops):
        ax3.bar(t, drops, width=dt * 0.8, color="tab:red", alpha=0.5,
                label="drops")
        ax3.set_ylabel("drops per interval", color="tab:red")
        ax3.set_ylim(bottom=0)
    h1, l1 = ax2.get_legend_handles_labels()
    h3, l3 = ax3.get_legend_handles_labels()
    ax2.legend(h1 + h3, l1 + l3, loc="upper right", fontsize=8)
    fig.suptitle(a.title or "%s (%s)" % (os.path.basename(a.csv), a.dir))
    fig.tight_layout()
    out = a.out or os.path.splitext(a.csv)[0] + ".png"
    fig.savefig(out, dpi=100)
    print(out)


if __name__ == "__main__":
    main()
