# SPDX-License-Identifier: LGPL-2.1-or-later
"""The showdown's outputs: showdown.json (every run, with its per-slot
series), showdown.md (the tables) and showdown-CLIP.png (the plots); the
goals twoflow must reach, per scenario; the smoke test's sanity checks."""

import json
import math
import os

LOSSLESS_DB = 60.0     # where a lossless run is drawn in the plots
PEERS = ("srt-120", "srt-1000", "rist", "tcp")
GOAL_PSNR_MARGIN = 0.5
GOAL_SHARE = (0.7, 1.3)
GOAL_RECOVERY_S = 3.0


def psnr_value(r):
    """Freeze-aware PSNR as a number (inf when lossless)."""
    if r.get("lossless"):
        return math.inf
    v = r.get("psnr_db")
    return v if v is not None else -math.inf


def fmt_psnr(r):
    if r.get("lossless"):
        return "lossless"
    v = r.get("psnr_db")
    return "–" if v is None else "%.2f" % v


def fmt(v, f="%.2f"):
    return "–" if v is None else f % v


def goals(rows, clip, scenario, system):
    """The goal checks of one twoflow run: (text, all met)."""
    by = {r["system"]: r for r in rows if r["clip"] == clip and r["scenario"] == scenario}
    r = by.get(system)
    if not r:
        return None
    checks = []
    peers = [psnr_value(by[p]) for p in PEERS if p in by]
    if peers:
        best = max(peers)
        mine = psnr_value(r)
        ok = mine >= best - GOAL_PSNR_MARGIN if math.isfinite(best) else mine == best
        checks.append(("PSNR ≥ best peer − 0.5 dB", ok))
    checks.append(("no stall", (r.get("stall_s") or 0) == 0))
    loss = {"loss0.5": 0.005, "loss1": 0.01, "loss3": 0.03}.get(scenario)
    if loss is not None:
        need = 99.0 if loss <= 0.01 else 95.0
        checks.append(("≥ %g %% frames" % need, (r.get("shown_pct") or 0) >= need))
    if "fair_ratio" in r:
        lo, hi = GOAL_SHARE
        checks.append(("share %.1f–%.1f" % (lo, hi),
                       r["fair_ratio"] is not None and lo <= r["fair_ratio"] <= hi))
    if scenario == "step":
        dl, q = recoveries(r)
        checks.append(("frames back ≤ 3 s", dl is not None and dl <= GOAL_RECOVERY_S))
        checks.append(("quality back ≤ 3 s", q is not None and q <= GOAL_RECOVERY_S))
    return checks


def recoveries(r, hold=50, good_db=40.0):
    """After the capacity step: seconds from the capacity's return to the
    first slot due after it from which `hold` slots (2 s) all show their
    own frame (delivery) / their own frame at good_db or better (quality);
    0 when not degraded after the return, None when never. From the
    run's slot series."""
    if r.get("step_up_mono") is None or not r.get("slot_due_s"):
        return None, None
    up = r["step_up_mono"] - r["t_req_mono"]
    due, own, ps = r["slot_due_s"], r["slot_own"], r["slot_psnr"]
    n = len(due)
    start = next((k for k in range(n) if due[k] >= up), None)
    if start is None:
        return None, None
    out = []
    for good in ([own[k] for k in range(n)],
                 [own[k] and ps[k] >= good_db for k in range(n)]):
        res = None
        for k in range(start, n):
            end = min(n, k + hold)
            if all(good[k:end]) and end - k >= min(hold, n - start):
                res = round(max(0.0, due[k] - up), 2)
                break
        out.append(res)
    return tuple(out)


def startup(r):
    """Request -> the first slot that shows its own frame (from the slot
    series; older rows stored slot 0's due time, before the first frame
    when that one was lost)."""
    own, due = r.get("slot_own"), r.get("slot_due_s")
    if own and due and any(own):
        return due[own.index(True)]
    return r.get("startup_s")


def table(rows, clip):
    out = ["| scenario | system | frames shown | freeze-aware PSNR (dB) | stall (s) | "
           "longest freeze (s) | start-up (s) | stall-free start-up (s) | link MB fwd / rev | "
           "share (÷ fair) / recovery (s) | load |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["clip"] != clip:
            continue
        extra = ""
        if "fair_ratio" in r:
            extra = "%.2f Mbit/s ÷ %.2f = **%.2f** (bulk %.2f; whole: %.2f)" % (
                r["media_rate_steady_bps"] / 1e6, r["fair_share_bps"] / 1e6, r["fair_ratio"],
                r.get("bulk_rate_bps", 0) / 1e6, r.get("fair_ratio_all", 0))
        elif r.get("step_up_mono") is not None:
            dl, q = recoveries(r)
            extra = "frames back %s, quality back %s" % (
                "after %.2f s" % dl if dl is not None else "never",
                "after %.2f s" % q if q is not None else "never")
        out.append("| %s | %s | %s / %s (%s %%) | %s | %s | %s | %s | %s | %.2f / %.2f | %s | %s |" % (
            r["scenario"], r["system"], r.get("shown", 0), r["N"],
            fmt(r.get("shown_pct"), "%.1f"), fmt_psnr(r), fmt(r.get("stall_s")),
            fmt(r.get("max_freeze_s")), fmt(startup(r)),
            fmt(r.get("stall_free_startup_s")),
            r.get("media_fwd_bytes", 0) / 1e6, r.get("media_rev_bytes", 0) / 1e6,
            extra, fmt(r.get("load1"), "%.1f")))
    return out


def goal_table(rows, clip):
    systems = [s for s in ("twoflow-ctcp", "twoflow-erap")
               if any(r["system"] == s and r["clip"] == clip for r in rows)]
    scen = []
    for r in rows:
        if r["clip"] == clip and r["scenario"] not in scen:
            scen.append(r["scenario"])
    out = ["| scenario | best peer | " + " | ".join(systems) + " |",
           "|---|---|" + "---|" * len(systems)]
    for sc in scen:
        by = {r["system"]: r for r in rows if r["clip"] == clip and r["scenario"] == sc}
        peers = [(psnr_value(by[p]), p) for p in PEERS if p in by]
        best = max(peers) if peers else None
        cells = []
        for s in systems:
            g = goals(rows, clip, sc, s)
            if not g:
                cells.append("–")
                continue
            cells.append(", ".join(("✓ " if ok else "✗ ") + name for name, ok in g))
        out.append("| %s | %s | %s |" % (
            sc, "%s (%s)" % (fmt_psnr(by[best[1]]), best[1]) if best else "–",
            " | ".join(cells)))
    return out


def markdown(rows, meta):
    clips = []
    for r in rows:
        if r["clip"] not in clips:
            clips.append(r["clip"])
    lines = ["# Showdown results", ""]
    for m in (meta if isinstance(meta, list) else [meta]):
        lines += ["Run: `%s`, started %s, %s s; load average (1/5/15 min) at the start %s, "
                  "at the end %s, on %s cores; display model playout %g ms; seed %s; "
                  "namespace default TCP %s." % (
                      " ".join(["experiments/showdown/showdown.py"] + m.get("argv", [])),
                      m.get("started"), m.get("elapsed_s", "?"),
                      "/".join("%.1f" % x for x in m.get("load_at_start", [])),
                      "/".join("%.1f" % x for x in m.get("load_at_end", [])) or "?",
                      m.get("nproc"), m.get("playout_ms", 0), m.get("seed"),
                      m.get("tcp_default_cc", "?")), ""]
    for c in clips:
        lines += ["## %s" % c, ""] + table(rows, c) + [""]
        lines += ["Goals (twoflow):", ""] + goal_table(rows, c) + [""]
    return "\n".join(lines) + "\n"


def plot(rows, clip, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    scen, systems = [], []
    for r in rows:
        if r["clip"] != clip:
            continue
        if r["scenario"] not in scen:
            scen.append(r["scenario"])
        if r["system"] not in systems:
            systems.append(r["system"])
    if not scen:
        return
    by = {(r["scenario"], r["system"]): r for r in rows if r["clip"] == clip}
    fig, axes = plt.subplots(3, 1, figsize=(max(8, 1.3 * len(scen) + 2), 9), sharex=True)
    w = 0.8 / max(1, len(systems))
    for i, s in enumerate(systems):
        xs = [j + (i - (len(systems) - 1) / 2) * w for j in range(len(scen))]
        ps, fr, st = [], [], []
        for sc in scen:
            r = by.get((sc, s), {})
            v = psnr_value(r) if r else float("nan")
            ps.append(LOSSLESS_DB if v == math.inf else (v if math.isfinite(v) else 0))
            fr.append(r.get("shown_pct") or 0)
            st.append(r.get("stall_s") or 0)
        axes[0].bar(xs, ps, w, label=s)
        axes[1].bar(xs, fr, w, label=s)
        axes[2].bar(xs, st, w, label=s)
    axes[0].set_ylabel("freeze-aware PSNR (dB)\n(lossless drawn at %g)" % LOSSLESS_DB)
    axes[1].set_ylabel("frames shown (%)")
    axes[1].set_ylim(0, 105)
    axes[2].set_ylabel("stall (s)")
    axes[2].set_xticks(range(len(scen)))
    axes[2].set_xticklabels(scen, rotation=20)
    axes[0].legend(ncol=min(6, len(systems)), fontsize=8, loc="lower left")
    axes[0].set_title("Showdown, %s clip (10 Mbit/s, 40 ms RTT, 80-packet queue)" % clip)
    for ax in axes:
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(outdir, rows, meta):
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "showdown.json"), "w") as f:
        json.dump({"meta": meta, "runs": rows}, f, indent=1)
    with open(os.path.join(outdir, "showdown.md"), "w") as f:
        f.write(markdown(rows, meta))
    for c in {r["clip"] for r in rows}:
        try:
            plot(rows, c, os.path.join(outdir, "showdown-%s.png" % c))
        except Exception as e:  # a plot must not lose the results
            print("plot failed:", e)


def merge(rows, metas, new_rows, new_metas):
    """Runs of several commands in one set: a new run replaces the earlier
    one of its clip, scenario and system (in its place), and a command's
    meta stays only while some run of it does (runs name theirs in "run",
    its start time). Returns (rows, metas)."""
    key = lambda r: (r["clip"], r["scenario"], r["system"])
    new = {key(r): r for r in new_rows}
    out = [new.pop(key(r), r) for r in rows] + [r for r in new_rows if key(r) in new]
    used = {r.get("run") for r in out}
    keep = [m for m in metas + new_metas
            if None in used or m.get("started") in used]
    seen, uniq = set(), []
    for m in keep:
        if m.get("started") not in seen:
            seen.add(m.get("started"))
            uniq.append(m)
    return out, uniq


def metas_of(d):
    return d["meta"] if isinstance(d["meta"], list) else [d["meta"]]


def sanity(rows):
    """The smoke test's checks: every run measured, numbers in range, and
    every system shows frames on the clean link. (Whether twoflow beats
    its peers is not checked here: that is the rate controller's job.)"""
    bad = []
    for r in rows:
        tag = "%s/%s/%s" % (r["clip"], r["scenario"], r["system"])
        n = r.get("N", 0)
        if n <= 0:
            bad.append(tag + ": no reference frames")
            continue
        if not 0 <= (r.get("shown") or 0) <= n:
            bad.append(tag + ": frames shown out of range")
        if r["scenario"] == "clean" and (r.get("shown") or 0) == 0:
            bad.append(tag + ": no frames on the clean link")
        if r["scenario"] == "clean" and (r.get("shown") or 0) < 0.5 * n:
            bad.append(tag + ": under half the frames on the clean link")
        if (r.get("shown") or 0) > 0:
            p = psnr_value(r)
            if not (p == math.inf or 5 <= p <= 100):
                bad.append(tag + ": PSNR %s out of range" % p)
            st = r.get("startup_s")
            if st is None or not 0 <= st <= 30:
                bad.append(tag + ": start-up %s s out of range" % st)
            if not 0 <= (r.get("stall_s") or 0) <= 30:
                bad.append(tag + ": stall out of range")
        if (r.get("media_fwd_bytes") or 0) <= 0:
            bad.append(tag + ": no media bytes on the link")
    return bad


def doc_block(rows, meta):
    """The generated part of docs/results.md's "Showdown" section."""
    md = markdown(rows, meta).split("\n", 2)[2]      # without the title
    return md.replace("## ", "#### ")


def write_doc(path, rows, meta, tag="showdown"):
    """Replaces the block between <!-- showdown:begin --> and
    <!-- showdown:end --> in docs/results.md (left alone without them)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return False
    b, e = "<!-- %s:begin -->" % tag, "<!-- %s:end -->" % tag
    if b not in text or e not in text:
        return False
    head, rest = text.split(b, 1)
    _, tail = rest.split(e, 1)
    with open(path, "w") as f:
        f.write(head + b + "\n" + doc_block(rows, meta).strip() + "\n" + e + tail)
    return True


if __name__ == "__main__":
    # report.py [--doc] SHOWDOWN.JSON...: the tables and plots of the runs
    # in the JSON files (merged in order: a later file's run replaces an
    # earlier one of the same clip, scenario and system) next to the first
    # one, or with --doc in experiments/showdown/results/ and
    # docs/results.md's block
    import sys
    args = sys.argv[1:]
    doc = "--doc" in args
    files = [x for x in args if x != "--doc"]
    runs, metas = [], []
    for path in files:
        with open(path) as f:
            d = json.load(f)
        runs, metas = merge(runs, metas, d["runs"], metas_of(d))
    meta = metas if len(metas) > 1 else metas[0]
    here = os.path.dirname(os.path.abspath(__file__))
    write(os.path.join(here, "results") if doc else
          os.path.dirname(os.path.abspath(files[0])), runs, meta)
    if doc:
        root = os.path.dirname(os.path.dirname(here))
        print("docs block written" if write_doc(os.path.join(root, "docs", "results.md"),
                                                runs, meta) else "no showdown block")
