#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Required prefix size vs number of sessions (two-flow paper Fig. 10),
measured on the emulated testbed: the counterpart of prefix_model.py.

Setup (root; traffic only inside the twoflowlab.testbed namespaces),
as in tables.py: n sessions, each replaying its own excerpt of the Star
Wars IV trace (swtrace.py, --seconds from a seeded random I frame), one
twoflow-server, one twoflow-proxy --fetch per session started within
--spread s, cTCP essential flow (ctcpsink, Reno) and rUDP enhanced flow,
across a pipe of fixed capacity (10 Mbit/s by default; 20 ms each way,
drop-tail queue of --queue-ms).

The model's setup (docs/results.md "Required prefix vs number of
sessions"): playback starts with the session, the first segment is
pre-stored at the proxy (the floor of the required prefix), the essential
flow runs one segment ahead of playback and the enhanced flows play in
real time from the start. On the testbed: every session's first segment is
pre-staged first (twoflow-proxy --prestage, all at once, before the timed
part), then the fetches run with that prefix: the server skips segment 0
and starts the enhanced flow at once (lead 0). Each proxy logs the arrival
of every essential frame (--arrivals); segment k is due when it starts
playing, k*T after PLAY was answered (plus the lead, 0 here). As in the
model, the required prefix of a session is the largest shortfall

    prefix_i = max_k ( D_i(k) - A_i(k*T) ),

D_i(k) = essential bytes of segments 0..k, A_i(t) = essential bytes that
arrived by t (the pre-staged segment 0 not included, so prefix_i >= S_0):
the smallest pre-stored amount from the start with which no segment is
late. Reported in kB and in seconds of video it covers (the model's
conversion: whole seconds of decode time, mean and max over sessions).
--modes ctcp tcp measures both essential transports (Fig. 10 both ways):
TCP mode hands each segment to plain TCP one segment ahead of playback.
--no-prestage measures the system without a prefix instead (lead = one
segment; the shortfall is then what a prefix would have to add to it).

  sudo experiments/system/prefix_measured.py --build build --modes ctcp tcp \\
      --n 10 28 32 34 36 --seconds 120 --out /tmp/prefix-measured --doc
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
from tables import TRACE, ENH_BASE, ESS_BASE, PORTS  # noqa: E402
from twoflowlab.records import tagged  # noqa: E402
from twoflowlab.systembed import SystemTestbed  # noqa: E402

PRESTAGE_BASE = 7050            # essential ports of the pre-staging runs


def essential_of(path, segment, policy="i"):
    """Per segment and per second of decode time: essential bytes (records,
    header included) of an excerpt file."""
    seg, sec = {}, {}
    with open(path) as f:
        for k, line in enumerate(f):
            p = line.split()
            if len(p) != 4 or not (p[1] == "I" or (policy == "ip" and p[1] == "P")):
                continue
            b = int(p[3]) + swtrace.HEADER
            t = k / swtrace.FPS
            s = int(t // segment + 1e-9)
            seg[s] = seg.get(s, 0) + b
            sec[int(t)] = sec.get(int(t), 0) + b
    nseg = max(seg) + 1
    nsec = max(sec) + 1
    return [seg.get(i, 0) for i in range(nseg)], [sec.get(i, 0) for i in range(nsec)]


def required_prefix(seg_bytes, sec_bytes, arrivals, started_us, lead, segment, skip):
    """(prefix bytes, seconds of video it covers, late segments, worst
    lateness s of those that came, segments that never came, whole
    segments to pre-store) of one session from its arrival log. The last
    is the non-fluid reading: every segment up to the last late one
    (the server can only skip whole segments, and a segment whose last
    frame is late is not helped by bytes of another one)."""
    arr = sorted(((us - started_us) / 1e6 - lead, s, b) for us, s, b in arrivals
                 if s >= skip)
    last = {}
    for t, s, _b in arr:
        last[s] = t
    D, prefix, j, got = 0, 0, 0, 0
    late, worst, never, whole = 0, 0.0, 0, max(skip, 1)
    for k, sk in enumerate(seg_bytes):
        D += sk
        due = k * segment
        while j < len(arr) and arr[j][0] <= due:
            got += arr[j][2]
            j += 1
        prefix = max(prefix, D - got)
        if k >= skip:
            t = last.get(k)
            if t is None:
                never += 1
            elif t > due:
                worst = max(worst, t - due)
            if t is None or t > due:
                late += 1
                whole = k + 1
    cum, secs = 0, 0
    while secs < len(sec_bytes) and cum < prefix - 1e-6:
        cum += sec_bytes[secs]
        secs += 1
    return prefix, secs, late, worst, never, whole


def workdir_of(args, mode, n):
    """OUT/nN for cTCP (as before the TCP mode), OUT/tcp-nN for TCP."""
    return os.path.join(args.out, f"n{n}" if mode == "ctcp" else f"{mode}-n{n}")


def run_point(args, build, n, workdir, mode="ctcp"):
    shutil.rmtree(workdir, ignore_errors=True)
    videos = os.path.join(workdir, "videos")
    prefix_dir = os.path.join(workdir, "prefix")
    ex = swtrace.make_excerpts(TRACE, videos, n, args.seconds, args.seed + n)
    capacity = args.capacity
    common = ["--segment-duration", str(args.segment), "--essential", mode,
              "--prefix-dir", prefix_dir]
    rnd = random.Random(args.seed * 1000 + n)
    starts = sorted(rnd.uniform(0, args.spread) for _ in range(n))
    skip = 0 if args.no_prestage else 1
    t_run = time.monotonic()
    with SystemTestbed(build, workdir, videos, capacity, args.queue_ms, PORTS,
                       ["--enhanced-rate", args.enhanced_rate]) as st:
        if not args.no_prestage:
            pre = [st.proxy(common + ["--prestage", name, "--essential-ports",
                                      str(PRESTAGE_BASE + i)])
                   for i, (name, *_r) in enumerate(ex)]
            for i, p in enumerate(pre):
                text = p.communicate(timeout=args.segment * 4 + 60)[0]
                if not tagged(text, "PRESTAGE-RESULT") or \
                        tagged(text, "PRESTAGE-RESULT")[0].get("result") != "ok":
                    raise RuntimeError(f"pre-staging {ex[i][0]} failed: {text[-300:]}")
        t_prestaged = time.monotonic()
        results = st.fetch_staggered(
            [e[0] for e in ex], starts,
            lambda i, name: common + [
                "--fetch", name, "--output", os.path.join(workdir, f"{name}.out"),
                "--arrivals", os.path.join(workdir, f"{name}.arrivals"),
                "--essential-ports", str(ESS_BASE + i),
                "--enhanced-ports", str(ENH_BASE + i)],
            args.seconds + args.segment + args.spread + 60)
    summary = st.summary

    sessions = [session_metrics(args, workdir, name, mean, res, skip)
                for (name, _peak, mean, *_r), res in zip(ex, results)]
    fwd = summary.get("fwd", {})
    with open(os.path.join(workdir, "server.log")) as f:
        ends = tagged(f.read(), "SESSION-END")
    # the pre-staging sessions all end before the fetches start
    ess = [e.get("essential_stats", {}) for e in ends[-n:]]
    row = {
        "n": n, "mode": mode, "enhanced_rate": args.enhanced_rate,
        "capacity_bps": round(capacity), "seconds": args.seconds,
        "segment_s": args.segment, "prestaged": not args.no_prestage,
        "load": round(sum(s["mean_bps"] for s in sessions) / capacity, 3),
        "ctcp_segments_late": sum(e.get("segments-late", 0) for e in ess),
        "retransmissions": sum(e.get("retransmissions", 0) for e in ess),
        "link_drops": (fwd.get("drops_queue") or 0) + (fwd.get("drops_loss") or 0),
        "prestage_s": round(t_prestaged - t_run, 1),
        "wall_s": round(time.monotonic() - t_run, 1),
        "errors": [r.get("result") for r in results if r.get("result") != "ok"][:3],
    }
    return aggregate(row, sessions)


def session_metrics(args, workdir, name, mean, res, skip):
    """One session's required prefix from its excerpt and arrival log."""
    seg_bytes, sec_bytes = essential_of(os.path.join(workdir, "videos", name),
                                        args.segment)
    arrivals, started, lead = [], res.get("started_us"), res.get("lead", 0.0)
    path = os.path.join(workdir, f"{name}.arrivals")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                p = line.split()
                if line.startswith("# started_us"):
                    started, lead = int(p[2]), float(p[4])
                elif len(p) == 6 and not line.startswith("#"):
                    arrivals.append((int(p[0]), int(p[2]), int(p[5])))
    # a fetch killed at the timeout still has its log: every deadline
    # (<= --seconds) lies before the kill, what never came is late
    ok = started is not None
    pre_b, pre_s, late, worst, never, whole = required_prefix(
        seg_bytes, sec_bytes, arrivals, started, lead, args.segment,
        skip) if ok else (None,) * 6
    return {"video": name, "ok": bool(ok), "finished": res.get("result") == "ok",
            "mean_bps": round(mean), "segment0_B": seg_bytes[0],
            "prefix_B": pre_b, "prefix_s": pre_s, "late_segments": late,
            "worst_late_s": round(worst, 2) if ok else None, "never": never,
            "whole_segments": whole,
            "whole_B": sum(seg_bytes[:whole]) if ok else None,
            "E_f": res.get("merge", {}).get("E_f")}


def aggregate(row, sessions):
    """The row's per-n figures from its sessions."""
    good = [s for s in sessions if s["ok"]]
    row.update({
        "sessions_ok": len(good),
        "sessions_finished": sum(1 for s in sessions if s["finished"]),
        "mean_s": round(sum(s["prefix_s"] for s in good) / len(good), 1) if good else None,
        "max_s": max((s["prefix_s"] for s in good), default=None),
        "mean_kB": round(sum(s["prefix_B"] for s in good) / len(good) / 1e3, 1) if good else None,
        "max_kB": round(max((s["prefix_B"] for s in good), default=0) / 1e3, 1),
        "mean_seg0_kB": round(sum(s["segment0_B"] for s in good) / len(good) / 1e3, 1) if good else None,
        "sessions_over_floor": sum(1 for s in good if s["prefix_B"] > s["segment0_B"]),
        "late_segments": sum(s["late_segments"] for s in good),
        "worst_late_s": max((s["worst_late_s"] for s in good), default=0),
        "never_arrived_segments": sum(s["never"] for s in good),
        "mean_whole_s": round(sum(s["whole_segments"] for s in good) / len(good)
                              * row["segment_s"], 1) if good else None,
        "max_whole_s": max((s["whole_segments"] for s in good), default=0) * row["segment_s"],
        "max_whole_kB": round(max((s["whole_B"] for s in good), default=0) / 1e3, 1),
        "E_f": sum(s["E_f"] or 0 for s in sessions),
        "sessions": sessions,
    })
    return row


def reanalyse(args, row):
    """Recomputes a row's sessions from its work directory (same excerpts:
    the seed makes them again)."""
    n = row["n"]
    workdir = workdir_of(args, row.get("mode", "ctcp"), n)
    ex = swtrace.make_excerpts(TRACE, os.path.join(workdir, "videos"), n,
                               row["seconds"], args.seed + n)
    results = {}
    for f in sorted(os.listdir(workdir)):
        if f.startswith("proxy-") and f.endswith(".log"):
            with open(os.path.join(workdir, f)) as fh:
                for r in tagged(fh.read(), "FETCH-RESULT"):
                    results[r.get("video")] = r
    skip = 1 if row.get("prestaged", True) else 0
    sessions = [session_metrics(args, workdir, name, mean, results.get(name, {}), skip)
                for name, _peak, mean, *_r in ex]
    return aggregate(row, sessions)


MODE_NAME = {"ctcp": "cTCP", "tcp": "TCP"}


def doc_section(rows):
    r0 = rows[0]
    lines = [
        f"{r0['capacity_bps'] / 1e6:g} Mbit/s pipe, segments of {r0['segment_s']:g} s, "
        f"{r0['seconds']} s excerpts, first segment pre-staged, cTCP or TCP (Reno) / rUDP; "
        "prefix in seconds of video (kB in brackets); the floor is the first "
        f"segment ({r0['segment_s']:g} s):", "",
        "| essential flow | n | load (Σ mean / pipe) | mean prefix | max prefix | sessions above the floor "
        "| late segments (worst, s) | whole-segment prefix: mean | whole-segment prefix: max "
        "| fetches done in time | ΣE_f | link drops | TCP rexmits |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r.get("mode", "ctcp") != "ctcp", r["n"])):
        lines.append(
            f"| {MODE_NAME[r.get('mode', 'ctcp')]} | {r['n']} | {r['load']:.2f} | "
            f"{r['mean_s']} ({r['mean_kB']}) | "
            f"{r['max_s']} ({r['max_kB']}) | {r['sessions_over_floor']}/{r['sessions_ok']} | "
            f"{r['late_segments']} ({r['worst_late_s']}) | {r['mean_whole_s']} | "
            f"{r['max_whole_s']:g} ({r['max_whole_kB']}) | "
            f"{r['sessions_finished']}/{r['n']} | {r['E_f']} | {r['link_drops']} | "
            f"{r['retransmissions']} |")
    return "\n".join(lines)


def plot(rows, path):
    """Fig. 10 both ways: required prefix (fluid mean/max and whole-segment
    mean) vs n, cTCP and TCP."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.6), dpi=80)
    colour = {"ctcp": "tab:blue", "tcp": "tab:red"}
    for mode in ("ctcp", "tcp"):
        sel = sorted((r for r in rows if r.get("mode", "ctcp") == mode
                      and r.get("mean_s") is not None), key=lambda r: r["n"])
        if not sel:
            continue
        xs = [r["n"] for r in sel]
        c, name = colour[mode], MODE_NAME[mode]
        a1.plot(xs, [r["mean_s"] for r in sel], "o-", color=c, label=f"{name}: mean")
        a1.plot(xs, [r["max_s"] for r in sel], "x--", color=c, label=f"{name}: max")
        a2.plot(xs, [r["mean_whole_s"] for r in sel], "o-", color=c, label=f"{name}: mean")
        a2.plot(xs, [r["max_whole_s"] for r in sel], "x--", color=c, label=f"{name}: max")
    r0 = rows[0]
    for ax, t in ((a1, "fluid: max_k D(k) − A(kT)"), (a2, "whole segments")):
        ax.axhline(r0["segment_s"], color="grey", lw=0.8, ls=":")
        ax.set_xlabel("sessions n")
        ax.set_ylabel("required prefix (s of video)")
        ax.set_title(t, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"Required prefix on the testbed, {r0['capacity_bps'] / 1e6:g} Mbit/s pipe, "
                 f"{r0['seconds']} s sessions", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="/tmp/twoflow-prefix-measured")
    ap.add_argument("--n", type=int, nargs="+", default=[10, 28, 32, 34, 36])
    ap.add_argument("--capacity", type=float, default=10e6, help="pipe, bit/s")
    ap.add_argument("--seconds", type=int, default=120, help="trace seconds per session")
    ap.add_argument("--segment", type=float, default=10.0, help="segment duration (s)")
    ap.add_argument("--spread", type=float, default=2.0, help="start times within (s)")
    ap.add_argument("--queue-ms", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--enhanced-rate", choices=["smooth", "peak"], default="smooth",
                    help="the server's pacing of the enhanced flow (smooth: its default; "
                    "peak: the level above 1.25 x the 1 s peak, as before the smoothing)")
    ap.add_argument("--modes", nargs="+", choices=["ctcp", "tcp"], default=["ctcp"],
                    help="essential flow: cTCP and/or TCP (segments released one "
                    "segment ahead, sent as fast as TCP allows)")
    ap.add_argument("--no-prestage", action="store_true",
                    help="no prefix: the enhanced flow starts one segment later")
    ap.add_argument("--report-only", action="store_true",
                    help="no runs: --doc from the last row per n of OUT/results.json")
    ap.add_argument("--reanalyse", action="store_true",
                    help="with --report-only: recompute the sessions from OUT/nN/")
    ap.add_argument("--doc", action="store_true",
                    help="write experiments/system/results/prefix-measured.json and the table "
                    "in docs/results.md")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    os.environ["GST_PLUGIN_PATH"] = os.path.join(build, "gst")
    os.environ.setdefault("TWOFLOW_BUILD_ROOT", build)
    # the testbed would take the newest link emulator of any build dir
    emu = os.path.join(build, "tools", "linkemu", "twoflow-linkemu")
    if os.path.exists(emu):
        os.environ.setdefault("TWOFLOW_LINKEMU", emu)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    if args.report_only:
        last = {}
        with open(os.path.join(args.out, "results.json")) as f:
            for line in f:
                r = json.loads(line)
                last[(r.get("mode", "ctcp"), r["n"])] = r
        rows = [last[(m, n)] for m in args.modes for n in args.n if (m, n) in last]
        if args.reanalyse:
            rows = [reanalyse(args, r) for r in rows]
            for r in rows:
                print(json.dumps({k: v for k, v in r.items() if k != "sessions"}))
    for mode, n in [] if args.report_only else [(m, n) for m in args.modes for n in args.n]:
        # one point at a time: the machine is shared
        row = run_point(args, build, n, workdir_of(args, mode, n), mode)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "sessions"}), flush=True)
        with open(os.path.join(args.out, "results.json"), "a") as f:
            f.write(json.dumps(row) + "\n")
    if args.doc:
        import report_tables
        with open(os.path.join(HERE, "results", "prefix-measured.json"), "w") as f:
            json.dump({"command": " ".join(sys.argv[1:]), "rows": rows}, f, indent=1)
        plot(rows, os.path.join(HERE, "results", "prefix-measured.png"))
        report_tables.replace_section("prefix-measured", doc_section(rows))


if __name__ == "__main__":
    main()
