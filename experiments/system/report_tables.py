#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tables and plot of experiments/system/tables.py runs, written into
docs/results.md (between the `tables` markers) and experiments/system/results/.

  experiments/system/report_tables.py RESULTS.json [RESULTS.json...]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DOC = os.path.join(ROOT, "docs", "results.md")
COLS = ["E_f", "E_g", "G_max", "G_avg", "G_con_total", "G_con_max", "G_con_avg"]


def replace_section(name, text, path=DOC):
    """Replaces the lines between <!-- name:begin --> and <!-- name:end -->."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    with open(path) as f:
        doc = f.read()
    a, b = doc.index(begin) + len(begin), doc.index(end)
    with open(path, "w") as f:
        f.write(doc[:a] + "\n" + text.rstrip() + "\n" + doc[b:])


def table(rows, mode, factor, seg):
    sel = sorted((r for r in rows if r["mode"] == mode and r["factor"] == factor
                  and r["segment_s"] == seg), key=lambda r: r["n"])
    if not sel:
        return ""
    head = ("| n | pipe Mbit/s | frames | " + " | ".join(COLS) +
            " | sessions damaged | late ess. segments | TCP rexmits | rUDP lost | link drops |")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in sel:
        out.append(f"| {r['n']} | {r['capacity_bps'] / 1e6:.2f} | {r['frames']} | " +
                   " | ".join(str(r[c]) for c in COLS) +
                   f" | {r['sessions_damaged']}/{r['n']} | {r['segments_late']} | "
                   f"{r['retransmissions']} | {r['rudp_lost']} | {r['link_drops']} |")
    return "\n".join(out)


def write(rows, _out=None):
    # the last run of each (n, mode, factor, segment) counts
    last = {}
    for r in rows:
        last[(r["n"], r["mode"], r["factor"], r["segment_s"])] = r
    rows = list(last.values())
    d = os.path.join(HERE, "results")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tables.json"), "w") as f:
        json.dump(sorted(rows, key=lambda r: (-r["segment_s"], r["factor"], r["mode"], r["n"])),
                  f, indent=1)
    parts = []
    names = {"tcp": "TCP/rUDP (Table I)", "ctcp": "cTCP/rUDP (Table II)"}
    for seg in sorted({r["segment_s"] for r in rows}, reverse=True):
        secs = {r["seconds"] for r in rows if r["segment_s"] == seg}
        for factor in sorted({r["factor"] for r in rows if r["segment_s"] == seg}):
            for mode in ("tcp", "ctcp"):
                t = table(rows, mode, factor, seg)
                if t:
                    parts.append(f"**{names[mode]}, pipe = {factor:g} × Σ peak rates, "
                                 f"segments of {seg:g} s, {'/'.join(map(str, secs))} s "
                                 f"per session**\n\n{t}\n")
    text = "\n".join(parts)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=80)
    style = {"tcp": "o", "ctcp": "s"}
    for seg in sorted({r["segment_s"] for r in rows}, reverse=True):
        for factor in sorted({r["factor"] for r in rows}):
            for mode in ("tcp", "ctcp"):
                sel = sorted((r for r in rows if r["mode"] == mode and r["factor"] == factor
                              and r["segment_s"] == seg), key=lambda r: r["n"])
                if sel:
                    ax.plot([r["n"] for r in sel],
                            [r["E_f"] / max(r["frames"], 1) * 100 for r in sel],
                            style[mode], ls="-" if factor == 1.0 else "--",
                            alpha=1.0 if seg == max(r["segment_s"] for r in rows) else 0.4,
                            label=f"{'TCP' if mode == 'tcp' else 'cTCP'}/rUDP, "
                                  f"{factor:g}×, T={seg:g} s")
    ax.set_xscale("log")
    ax.set_xlabel("sessions n")
    ax.set_ylabel("E_f, % of frames")
    ax.set_title("Star Wars sessions: damaged P/B frames")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "tables.png"))
    replace_section("tables", text)
    print(text)


if __name__ == "__main__":
    rows = []
    for path in sys.argv[1:]:
        with open(path) as f:
            for line in f:
                if line.strip():
                    rows.append(json.loads(line))
    write(rows)
