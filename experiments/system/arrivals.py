#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Session arrivals and departures (two-flow paper Fig. 8/13) on the real
system: Star Wars sessions arrive as a Poisson process at twoflow-proxy
(--fetch, one process per session) and leave when their excerpt ends;
admission control keeps the sum of the admitted sessions' peak rates
within the pipe (the proxy's configured-capacity rule, applied here by the
driver because each fetch is its own proxy process). cTCP/rUDP (or TCP/rUDP
with --mode tcp) across the emulated WAN (root; testbed namespaces only).

Output: arrivals.json (events, per-session damage, totals) and
arrivals.png: active sessions over time with arrivals/rejections marked,
and the delivered rate per flow (essential / enhanced) against the pipe
and the reserved peak rates.

  sudo experiments/system/arrivals.py --out /tmp/arrivals --doc
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
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "../../python"))  # twoflowlab
import swtrace  # noqa: E402

from tables import ENH_BASE, ESS_BASE, PORTS, TRACE  # noqa: E402
from twoflowlab.records import tagged  # noqa: E402
from twoflowlab.systembed import SystemTestbed  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="/tmp/twoflow-arrivals")
    ap.add_argument("--capacity", type=float, default=4e6, help="pipe, bit/s")
    ap.add_argument("--interarrival", type=float, default=3.0, help="mean, s")
    ap.add_argument("--window", type=float, default=90.0, help="arrivals for s")
    ap.add_argument("--min-seconds", type=int, default=20)
    ap.add_argument("--max-seconds", type=int, default=60)
    ap.add_argument("--segment", type=float, default=5.0)
    ap.add_argument("--mode", default="ctcp", choices=["ctcp", "tcp"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--doc", action="store_true", help="also copy into experiments/system/results/")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    os.environ["GST_PLUGIN_PATH"] = os.path.join(build, "gst")
    os.environ.setdefault("TWOFLOW_BUILD_ROOT", build)
    shutil.rmtree(args.out, ignore_errors=True)
    videos = os.path.join(args.out, "videos")
    os.makedirs(videos)

    rnd = random.Random(args.seed)
    frames = swtrace.load(TRACE)
    i_frames = [k for k, f in enumerate(frames[:len(frames) - 3000]) if f[0] == "I"]
    arrivals, t = [], rnd.expovariate(1 / args.interarrival)
    while t < args.window:
        k = len(arrivals)
        secs = rnd.randint(args.min_seconds, args.max_seconds)
        ex = swtrace.excerpt(frames, rnd.choice(i_frames), secs)
        name = f"sw-{k:02d}.txt"
        swtrace.write(ex, os.path.join(videos, name))
        peak = swtrace.rates(ex)[0]
        arrivals.append({"t": round(t, 2), "name": name, "seconds": secs, "peak": peak, "port": k})
        t += rnd.expovariate(1 / args.interarrival)
    assert len(arrivals) <= 100

    events, active, results = [], {}, {}
    with SystemTestbed(build, args.out, videos, args.capacity, 100.0, PORTS) as st:
        t0 = time.monotonic()
        pending = list(arrivals)

        def reap():
            for name, (p, a) in list(active.items()):
                if p.poll() is not None:
                    out = p.communicate()[0]
                    results[name] = (tagged(out, "FETCH-RESULT") or [{"result": out[-300:]}])[0]
                    events.append({"t": round(time.monotonic() - t0, 2), "ev": "depart",
                                   "name": name})
                    del active[name]

        while pending or active:
            reap()
            now = time.monotonic() - t0
            while pending and pending[0]["t"] <= now:
                a = pending.pop(0)
                reserved = sum(x["peak"] for _p, x in active.values())
                ok = a["peak"] <= args.capacity - reserved
                events.append({"t": round(now, 2), "ev": "admit" if ok else "reject",
                               "name": a["name"], "peak": a["peak"],
                               "residual": round(args.capacity - reserved)})
                if ok:
                    p = st.proxy(
                        ["--segment-duration", str(args.segment), "--essential", args.mode,
                         "--fetch", a["name"], "--output",
                         os.path.join(args.out, a["name"] + ".out"),
                         "--prefix-dir", os.path.join(args.out, "prefix"),
                         "--essential-ports", str(ESS_BASE + a["port"]),
                         "--enhanced-ports", str(ENH_BASE + a["port"])])
                    active[a["name"]] = (p, a)
            if now > args.window + args.max_seconds + args.segment + 60:
                for p, _a in active.values():
                    p.kill()
            time.sleep(0.05)
        reap()
    summary = st.summary
    csv_rows = st.tb.read_csv("fwd")
    csv_t0 = summary.get("start_monotonic_s")

    merges = {n: r.get("merge", {}) for n, r in results.items()}
    admitted = [e for e in events if e["ev"] == "admit"]
    rejected = [e for e in events if e["ev"] == "reject"]
    fwd = summary.get("fwd", {})
    total = {
        "capacity_bps": args.capacity, "mode": args.mode, "arrivals": len(arrivals),
        "admitted": len(admitted), "rejected": len(rejected),
        "sessions_ok": sum(1 for r in results.values() if r.get("result") == "ok"),
        "sessions_damaged": sum(1 for m in merges.values() if m.get("E_f", 0) > 0),
        "E_f": sum(m.get("E_f", 0) for m in merges.values()),
        "E_g": sum(m.get("E_g", 0) for m in merges.values()),
        "frames": sum(m.get("output-frames", 0) for m in merges.values()),
        "max_active": 0, "link_drops": (fwd.get("drops_queue") or 0) + (fwd.get("drops_loss") or 0),
    }
    n_act, steps = 0, []
    for e in sorted(events, key=lambda e: e["t"]):
        if e["ev"] == "admit":
            n_act += 1
        elif e["ev"] == "depart":
            n_act -= 1
        steps.append((e["t"], n_act))
        total["max_active"] = max(total["max_active"], n_act)
    print(json.dumps(total))
    with open(os.path.join(args.out, "arrivals.json"), "w") as f:
        json.dump({"total": total, "arrivals": arrivals, "events": events,
                   "merge": merges, "csv_t0": csv_t0, "t0_wall": None}, f, indent=1)

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
    a1.set_title(f"Star Wars sessions arriving and leaving, {args.mode.upper()}/rUDP, "
                 f"{args.capacity / 1e6:g} Mbit/s pipe")
    # emulator rows: time_s since its start (CLOCK_MONOTONIC csv_t0)
    off = t0 - csv_t0 if csv_t0 else 0.5
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
        a2.plot(tt, sm(ess), label="essential (cTCP)" if args.mode == "ctcp" else "essential (TCP)")
    if enh:
        a2.plot(tt, sm(enh), label="enhanced (rUDP)")
    if ess and enh:
        a2.plot(tt, sm([a + b for a, b in zip(ess, enh)]), "k", lw=0.8, label="total")
    a2.axhline(args.capacity / 1e6, color="grey", ls="--", lw=0.8, label="pipe")
    a2.set_xlabel("time (s)")
    a2.set_ylabel("Mbit/s (1 s mean)")
    a2.legend(fontsize=7, loc="upper right")
    a2.grid(alpha=0.3)
    fig.tight_layout()
    png = os.path.join(args.out, "arrivals.png")
    fig.savefig(png)
    if args.doc:
        d = os.path.join(HERE, "results")
        os.makedirs(d, exist_ok=True)
        shutil.copy(png, os.path.join(d, f"arrivals-{args.mode}.png"))
        with open(os.path.join(d, f"arrivals-{args.mode}.json"), "w") as f:
            json.dump(total, f, indent=1)
        import report_tables
        t = total
        report_tables.replace_section(
            "arrivals",
            f"Measured ({args.mode.upper()}/rUDP, seed {args.seed}): {t['arrivals']} arrivals, "
            f"{t['admitted']} admitted, {t['rejected']} rejected (peak rate above the residual), "
            f"at most {t['max_active']} sessions at once; {t['sessions_ok']} of "
            f"{t['admitted']} sessions completed, {t['frames']} frames merged, "
            f"E_f {t['E_f']} (E_g {t['E_g']}) in {t['sessions_damaged']} session(s); "
            f"{t['link_drops']} packets dropped at the bottleneck.")


if __name__ == "__main__":
    main()
