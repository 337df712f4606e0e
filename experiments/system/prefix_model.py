#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Required prefix size vs number of sessions (two-flow paper Fig. 10), from
the Star Wars IV trace with a fluid model of the staggered system.

Definition (our reading of the paper): n sessions of the video share a WAN
pipe of fixed capacity C. Each session starts at a random point of the
trace (circular, seeded) and plays the whole hour. The enhanced flows are
real time: in second t session i sends enh_i(t) (its P/B bytes of that
second of decode time) and the pipe's residual R(t) = C - sum enh_i(t) is
what the essential flows (I frames) can use, shared equally (water-filling:
a session that needs less leaves the rest to the others). Each session's
essential flow may run ahead of playback by at most `ahead` seconds (one
segment, as the server sends it; `inf` = as far as it likes). The prefix
of a session is the essential data pre-stored at the proxy before it
starts, so that no essential byte arrives after its frame's decode time:

    prefix_i = max_t ( D_i(t) - A_i(t) ),

D_i(t) = essential bytes with decode time <= t, A_i(t) = essential bytes
delivered by t (after the prefix; A_i never passes D_i(t + ahead)). The
smallest such prefix is found by simulating with the prefix's bytes counted
as delivered at time 0 and taking the largest shortfall. We report the mean
and the maximum over sessions, in kB and in seconds of the session's
essential playback (the prefix divided by its mean essential rate), for
n = 1 .. until sum of mean rates > C.

  experiments/system/prefix_model.py --capacity 10e6 --out experiments/system/results --doc
"""
import argparse
import json
import lzma
import os
import random

TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "..", "..", "data", "star-wars-iv.txt.xz")
HEADER = 68
FPS = 25


def per_second(path, policy="i"):
    ess, enh = [], []
    with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as f:
        for k, line in enumerate(f):
            p = line.split()
            if len(p) != 4:
                continue
            s = k // FPS
            while len(ess) <= s:
                ess.append(0)
                enh.append(0)
            b = int(p[3]) + HEADER
            if p[1] == "I" or (policy == "ip" and p[1] == "P"):
                ess[s] += b
            else:
                enh[s] += b
    return ess, enh


def simulate(ess, enh, n, capacity, segment, ahead_segments, seed):
    """Required prefix per session: (bytes, seconds of video it covers)."""
    L = len(ess)
    T = int(segment)
    rnd = random.Random(seed)
    offs = [rnd.randrange(L) for _ in range(n)]
    cap = capacity / 8.0
    E = [[ess[(t + o) % L] for t in range(L)] for o in offs]
    H = [[enh[(t + o) % L] for t in range(L)] for o in offs]
    cum = []                 # cum[i][s] = essential bytes of seconds < s
    for e in E:
        c, acc = [0], 0
        for x in e:
            acc += x
            c.append(acc)
        cum.append(c)
    total = [c[-1] for c in cum]
    got = [0.0] * n          # delivered so far (prefix not included)
    short = [0.0] * n        # max shortfall = required prefix
    for t in range(L):
        seg_end = min(L, (t // T + 1) * T)      # segment playing at t is due
        for i in range(n):
            short[i] = max(short[i], cum[i][seg_end] - got[i])
        resid = max(0.0, cap - sum(h[t] for h in H))
        if ahead_segments is None:
            lim = [total[i] - got[i] for i in range(n)]
        else:
            a = min(L, (t // T + 1 + ahead_segments) * T)
            lim = [max(0.0, cum[i][a] - got[i]) for i in range(n)]
        # water-filling of the residual among sessions with data to send
        active = [i for i in range(n) if lim[i] > 1e-9]
        left = resid
        while active and left > 1e-9:
            share = left / len(active)
            nxt = []
            for i in active:
                g = min(share, lim[i])
                got[i] += g
                lim[i] -= g
                left -= g
                if lim[i] > 1e-9:
                    nxt.append(i)
            if len(nxt) == len(active):
                break
            active = nxt
    secs = []
    for i in range(n):
        s_ = 0
        while s_ < L and cum[i][s_] < short[i] - 1e-6:
            s_ += 1
        secs.append(s_)
    return short, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capacity", type=float, default=10e6, help="pipe, bit/s")
    ap.add_argument("--segment", type=float, default=10.0,
                    help="how far (s) the essential flow may run ahead")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--step", type=int, default=2)
    ap.add_argument("--out", default=None, help="directory for prefix.json/.png")
    ap.add_argument("--doc", action="store_true",
                    help="write the table into docs/results.md")
    args = ap.parse_args()
    ess, enh = per_second(TRACE)
    L = len(ess)
    mean_total = (sum(ess) + sum(enh)) * 8 / L
    nmax = int(args.capacity / mean_total)
    rows = []
    ns = [1] + list(range(args.step, nmax + 1, args.step))
    if ns[-1] != nmax:
        ns.append(nmax)
    for n in ns:
        row = {"n": n}
        for label, ahead in (("seg", 1), ("inf", None)):
            pre, secs = simulate(ess, enh, n, args.capacity, args.segment, ahead,
                                 args.seed + n)
            row[f"mean_kB_{label}"] = round(sum(pre) / n / 1e3, 1)
            row[f"max_kB_{label}"] = round(max(pre) / 1e3, 1)
            row[f"mean_s_{label}"] = round(sum(secs) / n, 1)
            row[f"max_s_{label}"] = round(max(secs), 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "prefix.json"), "w") as f:
            json.dump({"capacity_bps": args.capacity, "segment_s": args.segment,
                       "mean_rate_bps": mean_total, "rows": rows}, f, indent=1)
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=90)
        x = [r["n"] for r in rows]
        ax.plot(x, [r["mean_s_seg"] for r in rows], "o-", label="mean, one segment ahead")
        ax.plot(x, [r["max_s_seg"] for r in rows], "s--", label="max, one segment ahead")
        ax.plot(x, [r["mean_s_inf"] for r in rows], "^-", label="mean, unlimited lead")
        # the testbed's figures (prefix_measured.py --out DIR, same DIR)
        measured = os.path.join(args.out, "prefix-measured.json")
        if os.path.exists(measured):
            with open(measured) as f:
                allrows = [r for r in json.load(f)["rows"] if r.get("mean_s") is not None]
            for mode, colour, name in (("ctcp", "black", "cTCP"), ("tcp", "tab:red", "TCP")):
                mrows = sorted((r for r in allrows if r.get("mode", "ctcp") == mode),
                               key=lambda r: r["n"])
                if not mrows:
                    continue
                mx = [r["n"] for r in mrows]
                ax.plot(mx, [r["mean_s"] for r in mrows], "D", color=colour,
                        label=f"mean, measured on the testbed, {name} (120 s)")
                ax.plot(mx, [r["max_s"] for r in mrows], "x", color=colour, ms=8,
                        label=f"max, measured on the testbed, {name} (120 s)")
        ax.axhline(args.segment, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("sessions n")
        ax.set_ylabel("required prefix (s of video)")
        ax.set_title(f"Star Wars IV, {args.capacity / 1e6:g} Mbit/s pipe "
                     f"(mean {mean_total / 1e3:.0f} kbit/s per session)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "prefix.png"))
    if args.doc:
        import report_tables
        lines = [f"{args.capacity / 1e6:g} Mbit/s pipe, segments of {args.segment:g} s, "
                 f"mean rate {mean_total / 1e3:.0f} kbit/s per session "
                 f"(so at most {nmax} sessions on average); prefix in seconds of video "
                 "(kB in brackets):", "",
                 "| n | mean, one segment ahead | max, one segment ahead "
                 "| mean, unlimited lead | max, unlimited lead |",
                 "|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['n']} | {r['mean_s_seg']} ({r['mean_kB_seg']}) | "
                         f"{r['max_s_seg']} ({r['max_kB_seg']}) | {r['mean_s_inf']} "
                         f"({r['mean_kB_inf']}) | {r['max_s_inf']} ({r['max_kB_inf']}) |")
        report_tables.replace_section("prefix", "\n".join(lines))


if __name__ == "__main__":
    main()
