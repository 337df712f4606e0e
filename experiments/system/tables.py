#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Two-flow paper Table I/II on the real system: n Star Wars sessions through
twoflow-server and twoflow-proxy across the emulated WAN, cTCP/rUDP against
TCP/rUDP, damage per n.

Setup (root; traffic only inside the twoflowlab.testbed namespaces):
* n sessions, each replaying its own excerpt of the Star Wars IV trace
  (experiments/system/swtrace.py: --seconds of the trace from a seeded random
  I frame; the full hour per session is not feasible here), started within
  the first --spread seconds in random order.
* one twoflow-server (server namespace) and one twoflow-proxy --fetch per
  session (client namespace; merged stream to a file), segments of
  --segment s, no prefix (the enhanced flow starts one segment later).
  Essential flow: ctcpsink mode=ctcp (cTCP/rUDP) or ctcpsink mode=tcp with
  each segment released one segment ahead of playback (TCP/rUDP); enhanced
  flow: rtpgstpay ! rudpsink (fixed rate) in real time. TCP is Reno.
* the bottleneck (server -> proxy) has capacity = factor x the sum of the
  sessions' peak rates (1 s windows, as the server computes them;
  --pipe peak) or x the sum of their mean rates (--pipe mean: the records'
  bytes; --pipe wire-mean: as the link carries them, with RTP/UDP/IP, TCP/IP
  and Ethernet headers, swtrace.wire_mean; the paper's pipe is 1.07 x the sum
  of the means), one-way delay 20 ms, drop-tail queue of --queue-ms of
  the capacity.
* the enhanced flow: the server's default (--enhanced-rate auto: total
  for these traces), or paced per smoothing window and sent the smoothing
  lead ahead (--enhanced-rate smooth; window
  --smoothing-window, default the segment duration up to 60 s), with the
  session's total constant (--enhanced-rate total: the enhanced flow read
  ahead at what the essential flow leaves of one constant rate per
  session) or at the level above 1.25 x its 1 s peak (--enhanced-rate
  peak, the old pacing).
* --policy i (default) or ip: what the essential flow carries.
* --server-rt PRIO: twoflow-server at SCHED_FIFO PRIO (below the
  emulator's 10), so the other work of a shared machine does not stall
  its pacing.
* damage from twoflowmerge's stats at the proxy, per session: E_f P/B
  frames affected by loss (missing, or dropped because a reference is
  missing), E_g affected GOPs, G_max / G_avg most / mean affected frames
  per affected GOP, G_con_max / G_con_avg the longest run of consecutive
  affected frames per affected GOP (max, mean); a run's row gives them
  averaged over the sessions as the paper's Table I/II (aggregate()), the
  sums as *_sum / *_all, and every session in `sessions`.
  Also: essential segments late at the server (ctcpsink deadlines), TCP
  retransmissions, rUDP packets lost, drops at the bottleneck.

  sudo experiments/system/tables.py --out /tmp/tables            # full set
  sudo experiments/system/tables.py --n 1 5 --modes ctcp --factors 1.0
  sudo experiments/system/tables.py --n 1 5 --modes ctcp --pipe mean --factors 1.07
Writes results.json (appended per run) and, with --doc, the tables and
plots into experiments/system/results/ (see docs/results.md).
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
from twoflowlab.records import tagged  # noqa: E402,F401 (also for the other experiments)
from twoflowlab.systembed import SystemTestbed  # noqa: E402

TRACE = os.path.join(ROOT, "data", "star-wars-iv.txt.xz")
ESS_BASE, ENH_BASE = 7000, 7100


PORTS = [(ESS_BASE, ESS_BASE + 99), (ENH_BASE, ENH_BASE + 99)]  # tracked per flow


GCOLS = ["G_max", "G_avg", "G_con_max", "G_con_avg"]


def aggregate(merges):
    """Damage of a run from its sessions' merge stats, as the paper's
    Table I/II give it: per session, averaged over the sessions.

    E_f and E_g are averaged over all n sessions (an undamaged session
    counts 0). G_max, G_avg, G_con_max and G_con_avg describe the affected
    GOPs of a session and are undefined for a session without one: they
    are averaged over the damaged sessions (0 when there is none). This is
    our reading of "averaged over the sessions" (docs/results.md).
    The sums over the sessions are kept as *_sum (G_max_all / G_con_max_all:
    the largest over all sessions; G_avg_all / G_con_avg_all: pooled over
    all affected GOPs of the run)."""
    n = len(merges) or 1
    ef = sum(m.get("E_f", 0) for m in merges)
    eg = sum(m.get("E_g", 0) for m in merges)
    con = sum(m.get("G_con_total", 0) for m in merges)
    dam = [m for m in merges if m.get("E_f", 0) > 0]
    out = {"E_f": round(ef / n, 2), "E_g": round(eg / n, 2)}
    for c in GCOLS:
        out[c] = round(sum(m.get(c, 0) for m in dam) / len(dam), 2) if dam else 0.0
    out.update({
        "E_f_sum": ef, "E_g_sum": eg,
        "G_max_all": max([m.get("G_max", 0) for m in merges] or [0]),
        "G_avg_all": round(ef / eg, 2) if eg else 0.0,
        "G_con_total": con,
        "G_con_max_all": max([m.get("G_con_max", 0) for m in merges] or [0]),
        "G_con_avg_all": round(con / eg, 2) if eg else 0.0,
        "metrics": "paper",
    })
    return out


def essential_share(videos, names, policy):
    """Share of the essential flow in the sessions' bytes (records with
    their header, as the server sends them)."""
    ess = tot = 0
    for name in names:
        with open(os.path.join(videos, name)) as f:
            for line in f:
                p = line.split()
                if len(p) != 4:
                    continue
                b = int(p[3]) + swtrace.HEADER
                tot += b
                if p[1] == "I" or (policy == "ip" and p[1] == "P"):
                    ess += b
    return round(ess / tot, 3) if tot else None


def session_row(name, ex, r):
    """One session's figures (kept in the run's `sessions` list)."""
    m = r.get("merge", {})
    return {"video": name, "peak_bps": round(ex[1]), "mean_bps": round(ex[2]),
            "result": r.get("result"), "frames": m.get("output-frames", 0),
            **{k: m.get(k, 0) for k in ["E_f", "E_g"] + GCOLS + ["G_con_total"]},
            "rudp_lost": r.get("rudpsrc", {}).get("lost", 0)}


def run_one(args, build, n, mode, factor, workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    videos = os.path.join(workdir, "videos")
    ex = swtrace.make_excerpts(TRACE, videos, n, args.seconds, args.seed + n)
    peaks = sum(e[1] for e in ex)
    means = sum(e[2] for e in ex)
    wire_means = sum(e[5] for e in ex)
    capacity = factor * {"mean": means, "wire-mean": wire_means,
                         "peak": peaks}[args.pipe]
    server_args = ["--enhanced-rate", args.enhanced_rate]
    if args.smoothing_window:
        server_args += ["--smoothing-window", str(args.smoothing_window)]
    rnd = random.Random(args.seed * 1000 + n)
    starts = sorted(rnd.uniform(0, args.spread) for _ in range(n))
    t_run = time.monotonic()
    with SystemTestbed(build, workdir, videos, capacity, args.queue_ms, PORTS,
                       server_args, server_rt=args.server_rt) as st:
        results = st.fetch_staggered(
            [e[0] for e in ex], starts,
            lambda i, name: ["--segment-duration", str(args.segment),
                             "--essential", mode,
                             "--policy", args.policy,
                             "--fetch", name,
                             "--output", os.path.join(workdir, f"{name}.out"),
                             "--prefix-dir", os.path.join(workdir, "prefix"),
                             "--essential-ports", str(ESS_BASE + i),
                             "--enhanced-ports", str(ENH_BASE + i)],
            args.seconds + args.segment + args.spread + 60)
    queue, summary = st.queue, st.summary
    with open(os.path.join(workdir, "server.log")) as f:
        sends = tagged(f.read(), "SESSION-END")
    merges = [r.get("merge", {}) for r in results]
    ess = [s.get("essential_stats", {}) for s in sends]
    fwd = summary.get("fwd", {})
    row = {
        "n": n, "mode": mode, "factor": factor, "pipe": args.pipe,
        "size_by": args.pipe, "policy": args.policy,
        # (the server's auto is total for these traces)
        "enhanced_rate": "total" if args.enhanced_rate == "auto" else args.enhanced_rate,
        "smoothing_window": args.smoothing_window,
        "server_rt": args.server_rt,
        "capacity_bps": round(capacity), "sum_peak_bps": round(peaks),
        "sum_mean_bps": round(means), "load": round(means / capacity, 3),
        "essential_share": essential_share(videos, [e[0] for e in ex], args.policy),
        "sum_wire_mean_bps": round(wire_means),
        "wire_load": round(wire_means / capacity, 3),
        "playout_depth_ms": max([r.get("playout_depth_ms", 0) for r in results] or [0]),
        "queue_pkts": queue, "seconds": args.seconds, "segment_s": args.segment,
        "sessions_ok": sum(1 for r in results if r.get("result") == "ok"),
        "frames": sum(m.get("output-frames", 0) for m in merges),
        "missing_p": sum(m.get("missing-p", 0) for m in merges),
        "missing_b": sum(m.get("missing-b", 0) for m in merges),
        "dropped": sum(m.get("dropped", 0) for m in merges),
        **aggregate(merges),
        "sessions_damaged": sum(1 for m in merges if m.get("E_f", 0) > 0),
        "segments_late": sum(e.get("segments-late", 0) for e in ess),
        "retransmissions": sum(e.get("retransmissions", 0) for e in ess),
        "rudp_lost": sum(r.get("rudpsrc", {}).get("lost", 0) for r in results),
        "jb_late": sum(r.get("jitterbuffer", {}).get("num-late", 0) for r in results),
        "jb_lost": sum(r.get("jitterbuffer", {}).get("num-lost", 0) for r in results),
        "link_drops": (fwd.get("drops_queue") or 0) + (fwd.get("drops_loss") or 0),
        "link_delivered_bytes": fwd.get("delivered_bytes"),
        # the proxy's measured health (measured admission's view) per session
        "health_unhealthy_sessions": sum(1 for r in results
                                         if r.get("health", {}).get("unhealthy_samples", 0) > 0),
        "health_unhealthy_samples": sum(r.get("health", {}).get("unhealthy_samples", 0)
                                        for r in results),
        "health_samples": sum(r.get("health", {}).get("samples", 0) for r in results),
        "wall_s": round(time.monotonic() - t_run, 1),
        "errors": [r.get("result") for r in results if r.get("result") != "ok"][:3],
        "sessions": [session_row(e[0], e, r) for e, r in zip(ex, results)],
    }
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="/tmp/twoflow-tables")
    ap.add_argument("--n", type=int, nargs="+", default=[1, 5, 10, 20, 50])
    ap.add_argument("--modes", nargs="+", default=["ctcp", "tcp"])
    ap.add_argument("--factors", type=float, nargs="+", default=[1.0, 1.1])
    ap.add_argument("--pipe", choices=["peak", "mean", "wire-mean"], default="peak",
                    help="capacity = factor x the sum of the peak (1 s) or mean rates "
                    "(records; wire-mean: with the RTP/UDP/IP, TCP/IP and Ethernet headers)")
    ap.add_argument("--enhanced-rate", choices=["auto", "smooth", "total", "peak"], default="auto",
                    help="the server's pacing of the enhanced flow")
    ap.add_argument("--smoothing-window", type=float, default=0,
                    help="the server's smoothing window (s; 0: its default)")
    ap.add_argument("--policy", choices=["i", "ip"], default="i",
                    help="essential flow: I frames (i) or I and P frames (ip)")
    ap.add_argument("--seconds", type=int, default=60, help="trace seconds per session")
    ap.add_argument("--segment", type=float, default=5.0, help="segment duration (s)")
    ap.add_argument("--spread", type=float, default=2.0, help="start times within (s)")
    ap.add_argument("--queue-ms", type=float, default=100.0)
    ap.add_argument("--server-rt", type=int, default=0,
                    help="run twoflow-server at this SCHED_FIFO priority (0: normal; "
                    "the emulator runs at 10): a shared machine's other work then "
                    "does not stall the server's pacing")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--doc", action="store_true",
                    help="write experiments/system/results/tables.json and the plots")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    os.environ["GST_PLUGIN_PATH"] = os.path.join(build, "gst")
    os.environ.setdefault("TWOFLOW_BUILD_ROOT", build)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for factor in args.factors:
        for n in args.n:
            for mode in args.modes:
                wd = os.path.join(args.out, f"{mode}-n{n}-{args.pipe}x{factor}-"
                                  f"{args.enhanced_rate}"
                                  f"{'-ip' if args.policy == 'ip' else ''}")
                row = run_one(args, build, n, mode, factor, wd)
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "sessions"}),
                      flush=True)
                with open(os.path.join(args.out, "results.json"), "a") as f:
                    f.write(json.dumps(row) + "\n")
    if args.doc:
        import report_tables
        report_tables.write(rows, args.out)


if __name__ == "__main__":
    main()
