#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Session arrivals and departures (two-flow paper Fig. 8/13) on the real
system: Star Wars sessions arrive at twoflow-proxy (--fetch, one process
per session) and leave when their excerpt ends; admission control keeps
the sum of the admitted sessions' peak rates within the pipe (the proxy's
configured-capacity rule, applied here by the driver because each fetch is
its own proxy process). cTCP/rUDP and/or TCP/rUDP (--modes) across the
emulated WAN (root; testbed namespaces only), the same arrivals for each.

Scenarios:
* --scenario paper (Fig. 8/13): 4 sessions start together, a 5th joins at
  --join s, 2 of the first 4 leave at --leave s (their excerpts end), the
  other 3 end at --length s; the pipe is --capacity or, by default, the
  sum of the 5 sessions' peak rates (so the 5th is admitted).
* --scenario poisson: arrivals as a Poisson process (mean --interarrival s
  apart, for --window s), excerpts of --min-seconds..--max-seconds.

Per segment (bins of --segment s of the run, from the link emulator's
per-flow counters at the bottleneck): essential-flow packets dropped —
each one a TCP retransmission — and enhanced-flow packets dropped (rUDP
losses); with the sessions' ctcpsink retransmission totals beside them.

Output (per mode, OUT/<mode>/): arrivals.json (events, per-session damage,
totals, per-segment drops) and arrivals.png (active sessions, delivered
rate per flow against the pipe); with both modes OUT/arrivals-segments.png
(per-segment retransmissions and losses, cTCP against TCP).

  sudo experiments/system/arrivals.py --scenario paper --modes ctcp tcp --out /tmp/arrivals --doc
  sudo experiments/system/arrivals.py --out /tmp/arrivals --doc       # Poisson, cTCP
"""
import argparse
import json
import os
import random
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
import swtrace  # noqa: E402

from tables import ENH_BASE, ESS_BASE, PORTS, TRACE  # noqa: E402
from twoflowlab.records import tagged  # noqa: E402
from twoflowlab.systembed import SystemTestbed  # noqa: E402


def make_arrivals(args, videos):
    """The sessions to start: [{t, name, seconds, peak, port}], in order."""
    rnd = random.Random(args.seed)
    frames = swtrace.load(TRACE)
    i_frames = [k for k, f in enumerate(frames[:len(frames) - 3000]) if f[0] == "I"]
    arrivals = []

    def add(t, secs):
        k = len(arrivals)
        ex = swtrace.excerpt(frames, rnd.choice(i_frames), secs)
        name = f"sw-{k:02d}.txt"
        swtrace.write(ex, os.path.join(videos, name))
        arrivals.append({"t": round(t, 2), "name": name, "seconds": secs,
                         "peak": swtrace.rates(ex)[0], "mean": swtrace.rates(ex)[1],
                         "port": k})

    if args.scenario == "paper":
        # the enhanced flow (and playback) starts one segment after the
        # fetch: a session's excerpt of L s ends at L + T
        lead = args.segment
        for k in range(4):
            add(0.25 * k, int((args.leave if k < 2 else args.length) - lead))
        add(args.join, int(args.length - args.join - lead))
    else:
        t = rnd.expovariate(1 / args.interarrival)
        while t < args.window:
            add(t, rnd.randint(args.min_seconds, args.max_seconds))
            t += rnd.expovariate(1 / args.interarrival)
    assert len(arrivals) <= 100
    return arrivals


def per_segment(csv_rows, off, segment, end):
    """Drops and delivered bytes per flow in bins of `segment` s of the
    run (emulator time minus off)."""
    def cols(kind, base):
        return [c for c in csv_rows[0] if c.startswith(kind + "_") and str(base) in c]

    ce, cn = cols("drops", ESS_BASE), cols("drops", ENH_BASE)
    be, bn = cols("bytes", ESS_BASE), cols("bytes", ENH_BASE)
    nb = int(end // segment) + 1
    out = [{"segment": k, "t0": k * segment, "ess_drops": 0, "enh_drops": 0,
            "ess_bytes": 0, "enh_bytes": 0} for k in range(nb)]
    for r in csv_rows:
        t = r["time_s"] - off
        if t < 0:
            continue
        k = min(int(t // segment), nb - 1)
        out[k]["ess_drops"] += int(sum(r[c] for c in ce))
        out[k]["enh_drops"] += int(sum(r[c] for c in cn))
        out[k]["ess_bytes"] += int(sum(r[c] for c in be))
        out[k]["enh_bytes"] += int(sum(r[c] for c in bn))
    while len(out) > 1 and not (out[-1]["ess_bytes"] or out[-1]["enh_bytes"]):
        out.pop()
    return out


def run_mode(args, build, mode, arrivals, videos, out):
    capacity = args.capacity
    events, active, results = [], {}, {}
    with SystemTestbed(build, out, videos, capacity, 100.0, PORTS,
                       ["--enhanced-rate", args.enhanced_rate]) as st:
        t0 = time.monotonic()
        pending = list(arrivals)

        def reap():
            for name, (p, a) in list(active.items()):
                if p.poll() is not None:
                    text = p.communicate()[0]
                    results[name] = (tagged(text, "FETCH-RESULT") or
                                     [{"result": text[-300:]}])[0]
                    events.append({"t": round(time.monotonic() - t0, 2), "ev": "depart",
                                   "name": name})
                    del active[name]

        limit = max(a["t"] + a["seconds"] for a in arrivals) + args.segment + 60
        while pending or active:
            reap()
            now = time.monotonic() - t0
            while pending and pending[0]["t"] <= now:
                a = pending.pop(0)
                reserved = sum(x["peak"] for _p, x in active.values())
                ok = a["peak"] <= capacity - reserved + 1
                events.append({"t": round(now, 2), "ev": "admit" if ok else "reject",
                               "name": a["name"], "peak": a["peak"],
                               "residual": round(capacity - reserved)})
                if ok:
                    p = st.proxy(
                        ["--segment-duration", str(args.segment), "--essential", mode,
                         "--fetch", a["name"], "--output",
                         os.path.join(out, a["name"] + ".out"),
                         "--prefix-dir", os.path.join(out, "prefix"),
                         "--essential-ports", str(ESS_BASE + a["port"]),
                         "--enhanced-ports", str(ENH_BASE + a["port"])])
                    active[a["name"]] = (p, a)
            if now > limit:
                for p, _a in active.values():
                    p.kill()
            time.sleep(0.05)
        reap()
    summary = st.summary
    csv_rows = st.tb.read_csv("fwd")
    csv_t0 = summary.get("start_monotonic_s")
    with open(os.path.join(out, "server.log")) as f:
        ends = {e.get("video"): e for e in tagged(f.read(), "SESSION-END")}

    merges = {n: r.get("merge", {}) for n, r in results.items()}
    admitted = [e for e in events if e["ev"] == "admit"]
    rejected = [e for e in events if e["ev"] == "reject"]
    fwd = summary.get("fwd", {})
    ess_stats = [e.get("essential_stats", {}) for e in ends.values()]
    total = {
        "scenario": args.scenario, "capacity_bps": round(capacity), "mode": mode,
        "enhanced_rate": args.enhanced_rate,
        "segment_s": args.segment, "arrivals": len(arrivals),
        "admitted": len(admitted), "rejected": len(rejected),
        "sessions_ok": sum(1 for r in results.values() if r.get("result") == "ok"),
        "sessions_damaged": sum(1 for m in merges.values() if m.get("E_f", 0) > 0),
        "E_f": sum(m.get("E_f", 0) for m in merges.values()),
        "E_g": sum(m.get("E_g", 0) for m in merges.values()),
        "frames": sum(m.get("output-frames", 0) for m in merges.values()),
        "retransmissions": sum(e.get("retransmissions", 0) for e in ess_stats),
        "segments_late": sum(e.get("segments-late", 0) for e in ess_stats),
        "rudp_lost": sum(r.get("rudpsrc", {}).get("lost", 0) for r in results.values()),
        "max_active": 0,
        "link_drops": (fwd.get("drops_queue") or 0) + (fwd.get("drops_loss") or 0),
    }
    n_act, steps = 0, []
    for e in sorted(events, key=lambda e: e["t"]):
        if e["ev"] == "admit":
            n_act += 1
        elif e["ev"] == "depart":
            n_act -= 1
        steps.append((e["t"], n_act))
        total["max_active"] = max(total["max_active"], n_act)
    # emulator rows: time_s since its start (CLOCK_MONOTONIC csv_t0)
    off = t0 - csv_t0 if csv_t0 else 0.5
    end = max(e["t"] for e in events)
    segs = per_segment(csv_rows, off, args.segment, end)
    total["ess_drops"] = sum(x["ess_drops"] for x in segs)
    total["enh_drops"] = sum(x["enh_drops"] for x in segs)
    print(json.dumps(total), flush=True)
    with open(os.path.join(out, "arrivals.json"), "w") as f:
        json.dump({"total": total, "arrivals": arrivals, "events": events,
                   "per_segment": segs, "merge": merges,
                   "sessions": {n: {"retransmissions": e.get("essential_stats", {})
                                    .get("retransmissions", 0)} for n, e in ends.items()},
                   "csv_t0": csv_t0}, f, indent=1)
    plot_rates(args, mode, capacity, steps, admitted, rejected, csv_rows, off,
               os.path.join(out, "arrivals.png"))
    return {"total": total, "per_segment": segs, "steps": steps}


def plot_rates(args, mode, capacity, steps, admitted, rejected, csv_rows, off, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 5.2), dpi=80, sharex=True)
    xs = [0] + [s[0] for s in steps]
    ys = [0] + [s[1] for s in steps]
    a1.step(xs, ys, where="post", color="k", label="active sessions")
    a1.plot([e["t"] for e in admitted], [0.3] * len(admitted), "g^", ms=5, label="admitted arrival")
    a1.plot([e["t"] for e in rejected], [0.3] * len(rejected), "rx", ms=6, label="rejected arrival")
    a1.set_ylabel("sessions")
    a1.legend(fontsize=7, loc="upper right")
    a1.grid(alpha=0.3)
    a1.set_title(f"Star Wars sessions arriving and leaving, {MODE_NAME[mode]}/rUDP, "
                 f"{capacity / 1e6:.2f} Mbit/s pipe")
    tt = [r["time_s"] - off for r in csv_rows]
    dt = (csv_rows[1]["time_s"] - csv_rows[0]["time_s"]) if len(csv_rows) > 1 else 0.1

    def col(name):
        k = [c for c in csv_rows[0] if c.startswith("bytes_") and name in c]
        return [sum(r[c] for c in k) * 8 / dt / 1e6 for r in csv_rows] if k else None

    def sm(v, n=10):
        return [sum(v[max(0, i - n + 1):i + 1]) / len(v[max(0, i - n + 1):i + 1])
                for i in range(len(v))]

    ess, enh = col(str(ESS_BASE)), col(str(ENH_BASE))
    if ess:
        a2.plot(tt, sm(ess), label=f"essential ({MODE_NAME[mode]})")
    if enh:
        a2.plot(tt, sm(enh), label="enhanced (rUDP)")
    if ess and enh:
        a2.plot(tt, sm([a + b for a, b in zip(ess, enh)]), "k", lw=0.8, label="total")
    a2.axhline(capacity / 1e6, color="grey", ls="--", lw=0.8, label="pipe")
    a2.set_xlim(left=0)
    a2.set_xlabel("time (s)")
    a2.set_ylabel("Mbit/s (1 s mean)")
    a2.legend(fontsize=7, loc="upper right")
    a2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def plot_segments(runs, args, png):
    """Fig. 8/13: per segment, essential-flow drops (TCP retransmissions)
    and enhanced-flow drops (rUDP losses), cTCP against TCP."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 1, figsize=(7, 6.6), dpi=80, sharex=True)
    steps = runs[args.modes[0]]["steps"]
    xs = [0] + [s[0] / args.segment for s in steps]
    ys = [0] + [s[1] for s in steps]
    axes[0].step(xs, ys, where="post", color="k")
    axes[0].set_ylabel("active sessions")
    what = ("4 sessions, a 5th joins, 2 leave" if args.scenario == "paper"
            else "Poisson arrivals")
    axes[0].set_title(f"{what}; {args.capacity / 1e6:.2f} Mbit/s pipe, "
                      f"segments of {args.segment:g} s", fontsize=10)
    w = 0.8 / len(args.modes)
    colour = {"ctcp": "tab:blue", "tcp": "tab:red"}
    for j, mode in enumerate(args.modes):
        segs = runs[mode]["per_segment"]
        x = [s["segment"] + 0.1 + w * j + w / 2 for s in segs]
        axes[1].bar(x, [s["ess_drops"] for s in segs], w, color=colour[mode],
                    label=f"{MODE_NAME[mode]}: {runs[mode]['total']['retransmissions']} "
                    "retransmissions in all")
        axes[2].bar(x, [s["enh_drops"] for s in segs], w, color=colour[mode],
                    label=f"{MODE_NAME[mode]}/rUDP: E_f {runs[mode]['total']['E_f']}")
    axes[1].set_ylabel("essential packets\ndropped (rexmits)")
    axes[2].set_ylabel("rUDP packets\ndropped (lost)")
    axes[2].set_xlabel("segment of the run (time / T)")
    for ax in axes:
        ax.grid(alpha=0.3)
    for ax in axes[1:]:
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


MODE_NAME = {"ctcp": "cTCP", "tcp": "TCP"}


def doc_text(args, runs):
    lines = []
    for mode in args.modes:
        t = runs[mode]["total"]
        lines.append(
            f"* {MODE_NAME[mode]}/rUDP ({t['scenario']}, seed {args.seed}, "
            f"{t['capacity_bps'] / 1e6:.2f} Mbit/s): {t['arrivals']} arrivals, "
            f"{t['admitted']} admitted, {t['rejected']} rejected, at most "
            f"{t['max_active']} sessions at once; {t['sessions_ok']} of {t['admitted']} "
            f"completed, {t['frames']} frames merged, E_f {t['E_f']} (E_g {t['E_g']}) in "
            f"{t['sessions_damaged']} session(s); TCP retransmissions {t['retransmissions']}, "
            f"essential / enhanced packets dropped at the bottleneck {t['ess_drops']} / "
            f"{t['enh_drops']} (rUDP lost {t['rudp_lost']}), late essential segments "
            f"{t['segments_late']}.")
    if args.scenario == "paper":
        lines += ["", "Per segment of the run (T = %g s): essential packets dropped "
                  "(retransmitted) / rUDP packets dropped:" % args.segment, ""]
        nseg = max(len(runs[m]["per_segment"]) for m in args.modes)
        lines.append("| segment | " + " | ".join(
            f"{MODE_NAME[m]}: rexmit / lost" for m in args.modes) + " |")
        lines.append("|---|" + "---|" * len(args.modes))
        for k in range(nseg):
            cells = []
            for m in args.modes:
                segs = runs[m]["per_segment"]
                cells.append(f"{segs[k]['ess_drops']} / {segs[k]['enh_drops']}"
                             if k < len(segs) else "–")
            lines.append(f"| {k} ({k * args.segment:g}–{(k + 1) * args.segment:g} s) | " +
                         " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="/tmp/twoflow-arrivals")
    ap.add_argument("--scenario", choices=["poisson", "paper"], default="poisson")
    ap.add_argument("--capacity", type=float, default=None,
                    help="pipe, bit/s (default: poisson 4e6; paper: the sum of the "
                    "5 sessions' peak rates)")
    ap.add_argument("--interarrival", type=float, default=3.0, help="mean, s")
    ap.add_argument("--window", type=float, default=90.0, help="arrivals for s")
    ap.add_argument("--min-seconds", type=int, default=20)
    ap.add_argument("--max-seconds", type=int, default=60)
    ap.add_argument("--join", type=float, default=40.0, help="paper: the 5th joins at s")
    ap.add_argument("--leave", type=float, default=80.0, help="paper: 2 leave at s")
    ap.add_argument("--length", type=float, default=120.0, help="paper: the rest end at s")
    ap.add_argument("--segment", type=float, default=5.0)
    ap.add_argument("--modes", nargs="+", default=["ctcp"], choices=["ctcp", "tcp"])
    ap.add_argument("--mode", dest="modes", action="store", type=lambda m: [m],
                    help="one mode (as --modes MODE)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--enhanced-rate", choices=["smooth", "peak"], default="smooth",
                    help="the server's pacing of the enhanced flow (smooth: its default; "
                    "peak: the level above 1.25 x the 1 s peak, as before the smoothing)")
    ap.add_argument("--doc", action="store_true", help="also copy into experiments/system/results/")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    os.environ["GST_PLUGIN_PATH"] = os.path.join(build, "gst")
    os.environ.setdefault("TWOFLOW_BUILD_ROOT", build)
    shutil.rmtree(args.out, ignore_errors=True)
    videos = os.path.join(args.out, "videos")
    os.makedirs(videos)
    arrivals = make_arrivals(args, videos)
    if args.capacity is None:
        args.capacity = (sum(a["peak"] for a in arrivals) if args.scenario == "paper"
                         else 4e6)
    runs = {}
    for mode in args.modes:
        out = os.path.join(args.out, mode)
        os.makedirs(out)
        runs[mode] = run_mode(args, build, mode, arrivals, videos, out)
    seg_png = os.path.join(args.out, "arrivals-segments.png")
    plot_segments(runs, args, seg_png)
    text = doc_text(args, runs)
    print(text)
    if args.doc:
        d = os.path.join(HERE, "results")
        os.makedirs(d, exist_ok=True)
        tag = "" if args.scenario == "poisson" else f"-{args.scenario}"
        for mode in args.modes:
            shutil.copy(os.path.join(args.out, mode, "arrivals.png"),
                        os.path.join(d, f"arrivals{tag}-{mode}.png"))
            with open(os.path.join(d, f"arrivals{tag}-{mode}.json"), "w") as f:
                json.dump({"total": runs[mode]["total"],
                           "per_segment": runs[mode]["per_segment"]}, f, indent=1)
        if args.scenario == "paper" or len(args.modes) > 1:
            shutil.copy(seg_png, os.path.join(d, f"arrivals{tag}-segments.png"))
        import report_tables
        report_tables.replace_section("arrivals" + tag, text)


if __name__ == "__main__":
    main()
