#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tables and plot of experiments/system/tables.py runs, written into
docs/results.md (between the `tables` markers) and experiments/system/results/.

  experiments/system/report_tables.py RESULTS.json [RESULTS.json...]

Rows without `enhanced_rate` were measured before the enhanced-flow
smoothing: their enhanced flow ran at its peak rate ("peak").
RESULTS.json: a run's results.json (JSON lines) or a kept tables.json
(experiments/system/results/tables.json, a JSON array: rows kept from
earlier runs stay in it). The last row of each (n, mode, factor, segment,
sizing, policy) counts.

  experiments/system/report_tables.py --offered DIR/results.json

prints, for each run of DIR, the load the smoothing schedule offers the
pipe per segment (offered_load()), and

  experiments/system/report_tables.py --plan SECONDS SEGMENT N...

the same for both smoothed pacings (smooth, total) before running, for
the excerpts tables.py replays at n (seed 1 + n), pipe 1.07 × Σ wire mean.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DOC = os.path.join(ROOT, "docs", "results.md")
# the paper's columns: per session, averaged over the sessions (tables.py aggregate())
COLS = ["E_f", "E_g", "G_max", "G_avg", "G_con_max", "G_con_avg"]
# the sums over the sessions (and the largest / pooled per-GOP figures)
SUMS = ["E_f_sum", "E_g_sum", "G_max_all", "G_avg_all", "G_con_total", "G_con_max_all",
        "G_con_avg_all"]
MODES = {"tcp": "TCP/rUDP (Table I)", "ctcp": "cTCP/rUDP (Table II)"}
ENH = {"smooth": "smoothed", "peak": "at its peak rate",
       "total": "at a constant session total"}
ENH_ORDER = {"total": 0, "smooth": 1, "peak": 2}


def normalise(r):
    """Rows written before the paper's per-session metrics (E_f etc. were
    sums over the sessions, no per-session data): the sums keep their
    value, E_f / E_g become the exact per-session means (sum / n), the
    per-session G_* means are unknown (None). Also the defaults of the
    newer keys (pipe sized by peak rates, policy i)."""
    r = dict(r)
    r.setdefault("size_by", r.get("pipe", "peak"))
    r.setdefault("pipe", r["size_by"])
    r.setdefault("enhanced_rate", "peak")      # before the smoothing: peak pacing
    r.setdefault("policy", "i")
    if "load" not in r and r.get("sum_mean_bps"):
        r["load"] = round(r["sum_mean_bps"] / r["capacity_bps"], 3)
    if r.get("metrics") != "paper":
        n = r["n"]
        r.update({"E_f_sum": r["E_f"], "E_g_sum": r["E_g"],
                  "G_max_all": r["G_max"], "G_avg_all": r["G_avg"],
                  "G_con_max_all": r["G_con_max"], "G_con_avg_all": r["G_con_avg"],
                  "E_f": round(r["E_f"] / n, 2), "E_g": round(r["E_g"] / n, 2),
                  "G_max": None, "G_avg": None, "G_con_max": None, "G_con_avg": None,
                  "metrics": "sums"})
    return r


def key(r):
    return (r["n"], r["mode"], r["factor"], r["segment_s"], r["size_by"], r["policy"],
            r["enhanced_rate"])


def fmt(v):
    return "–" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def replace_section(name, text, path=DOC):
    """Replaces the lines between <!-- name:begin --> and <!-- name:end -->."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    with open(path) as f:
        doc = f.read()
    a, b = doc.index(begin) + len(begin), doc.index(end)
    with open(path, "w") as f:
        f.write(doc[:a] + "\n" + text.rstrip() + "\n" + doc[b:])


def table(rows, mode, factor, seg, size_by, enh="peak", policy="i"):
    sel = sorted((r for r in rows if r["mode"] == mode and r["factor"] == factor
                  and r["segment_s"] == seg and r["size_by"] == size_by
                  and r["enhanced_rate"] == enh and r["policy"] == policy),
                 key=lambda r: r["n"])
    if not sel:
        return ""
    head = ("| n | pipe Mbit/s | load (records / wire) | frames | E_f | E_g | G_max | G_avg | G^con_max | "
            "G^con_avg | ΣE_f | ΣE_g | max G_max | G_avg (pooled) | ΣG^con | max G^con | "
            "sessions damaged | late ess. segments | TCP rexmits | rUDP lost | link drops |")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in sel:
        wl = f" / {fmt(r['wire_load'])}" if r.get("wire_load") else ""
        out.append(f"| {r['n']} | {r['capacity_bps'] / 1e6:.2f} | {fmt(r.get('load'))}{wl} | "
                   f"{r['frames']} | " + " | ".join(fmt(r[c]) for c in COLS) + " | " +
                   " | ".join(fmt(r[c]) for c in SUMS[:-1]) +
                   f" | {r['sessions_damaged']}/{r['n']} | {r['segments_late']} | "
                   f"{r['retransmissions']} | {r['rudp_lost']} | {r['link_drops']} |")
    return "\n".join(out)


def policy_table(rows):
    """Policy i next to ip: the configurations measured with both."""
    both = {}
    for r in rows:
        both.setdefault((r["mode"], r["n"], r["factor"], r["segment_s"], r["size_by"],
                         r["seconds"], r["enhanced_rate"]), {})[r["policy"]] = r
    keys = sorted((k for k, v in both.items() if "i" in v and "ip" in v),
                  key=lambda k: (k[6] != "smooth", k[3], k[4], k[2], k[1], k[0]))
    if not keys:
        return ""
    head = ("| essential flow | n | pipe | segments, per session | enhanced flow | policy | "
            "essential share "
            "of the bytes | E_f | E_g | G_max | G_avg | G^con_max | G^con_avg | ΣE_f | "
            "sessions damaged | TCP rexmits | rUDP lost | link drops |")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for k in keys:
        for pol in ("i", "ip"):
            r = both[k][pol]
            share = r.get("essential_share")
            out.append(f"| {MODES[r['mode']].split()[0]} | {r['n']} | {r['factor']:g} × Σ "
                       f"{r['size_by']} = {r['capacity_bps'] / 1e6:.2f} Mbit/s | "
                       f"{r['segment_s']:g} s, {r['seconds']} s | "
                       f"{ENH[r['enhanced_rate']]} | {pol} | "
                       f"{fmt(share)} | " + " | ".join(fmt(r[c]) for c in COLS) +
                       f" | {r['E_f_sum']} | {r['sessions_damaged']}/{r['n']} | "
                       f"{r['retransmissions']} | {r['rudp_lost']} | {r['link_drops']} |")
    return "\n".join(out)


def write(rows, _out=None):
    # the last run of each (n, mode, factor, segment, sizing, policy) counts
    last = {}
    for r in map(normalise, rows):
        last[key(r)] = r
    rows = list(last.values())
    d = os.path.join(HERE, "results")
    os.makedirs(d, exist_ok=True)
    order = lambda r: (ENH_ORDER.get(r["enhanced_rate"], 3), r["size_by"] != "mean",
                       -r["segment_s"], r["factor"], r["policy"], r["mode"], r["n"])
    with open(os.path.join(d, "tables.json"), "w") as f:
        json.dump(sorted(rows, key=order), f, indent=1)
    parts = []
    confs = sorted({(r["enhanced_rate"], r["size_by"], r["segment_s"], r["factor"])
                    for r in rows},
                   key=lambda c: (-c[2], ENH_ORDER.get(c[0], 3),
                                  {"wire-mean": 0, "mean": 1}.get(c[1], 2), c[3]))
    for enh, size_by, seg, factor in confs:
        sel = [r for r in rows if (r["enhanced_rate"], r["size_by"], r["segment_s"],
                                   r["factor"]) == (enh, size_by, seg, factor)
               and r["policy"] == "i"]
        secs = sorted({r["seconds"] for r in sel})
        for mode in ("tcp", "ctcp"):
            t = table(rows, mode, factor, seg, size_by, enh)
            if t:
                legacy = any(r["metrics"] != "paper" for r in sel if r["mode"] == mode)
                parts.append(f"**{MODES[mode]}, pipe = {factor:g} × Σ {size_by} rates, "
                             f"segments of {seg:g} s, {'/'.join(map(str, secs))} s "
                             f"per session, enhanced flow {ENH[enh]}**" +
                             (" (measured before the per-session metrics: only E_f, E_g "
                              "and the sums)" if legacy else "") + f"\n\n{t}\n")
    text = "\n".join(parts)
    pt = policy_table(rows)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4), dpi=80)
    style = {"tcp": "o", "ctcp": "s"}
    for enh, size_by, seg, factor in confs:
        if size_by != "peak" and not any(r["n"] > 10 or r["seconds"] >= 600 for r in rows
                                         if (r["enhanced_rate"], r["size_by"], r["segment_s"],
                                             r["factor"]) == (enh, size_by, seg, factor)):
            continue        # the single-n comparisons stay in the tables
        for mode in ("tcp", "ctcp"):
            sel = sorted((r for r in rows if r["mode"] == mode and r["factor"] == factor
                          and r["segment_s"] == seg and r["size_by"] == size_by
                          and r["enhanced_rate"] == enh and r["policy"] == "i"),
                         key=lambda r: r["n"])
            if sel:
                ax.plot([r["n"] for r in sel],
                        # of the frames the sessions replay (25 fps)
                        [r["E_f_sum"] / (r["n"] * r["seconds"] * 25) * 100 for r in sel],
                        style[mode], ls="-" if size_by != "peak" else "--",
                        alpha=1.0 if size_by != "peak" else 0.4,
                        label=f"{'TCP' if mode == 'tcp' else 'cTCP'}/rUDP, "
                              f"{factor:g}× Σ {size_by}, T={seg:g} s"
                              f"{', smoothed' if enh == 'smooth' else ''}"
                              f"{', constant total' if enh == 'total' else ''}"
                              f"{', enh. at peak rate' if enh == 'peak' and size_by != 'peak' else ''}")
    ax.set_xscale("log")
    ax.set_xlabel("sessions n")
    ax.set_ylabel("ΣE_f, % of the frames replayed")
    ax.set_title("Star Wars sessions: damaged P/B frames")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(os.path.join(d, "tables.png"))
    replace_section("tables", text)
    if pt:
        replace_section("policy", pt)
    print(text)
    print(pt)


def session_offered(frames, segment, pacing="smooth", policy="i", p_hat=0.05,
                    headroom=1.01, lead=None):
    """What one session's schedule offers the pipe per segment (bit/s on
    the wire), from its frames [(type, ms, bytes)] (decode order, 25 fps):
    the essential segment k at cTCP's S/(T(1−p̂)), sent in interval k, and
    the enhanced flow (records in RTP packets, rudpsink's bytes) either at
    its window mean × headroom in the same interval (pacing "smooth", W = L
    = T, a fluid approximation of the server's schedule, which raises a
    window where a frame would be late) or at R − ess_k with R the
    session's constant total (pacing "total": twoflowsmoothing's
    compute_total(): the least constant ≥ the session's mean total ×
    headroom and every ess_k + 16 kbit/s at which every enhanced frame,
    sent ahead in decode order, leaves by its deadline, decode time +
    lead (T)). Returns (per-segment wire bit/s, R in the sender's bytes or
    None)."""
    import swtrace
    lead = segment if lead is None else lead
    nseg = int((len(frames) - 1) / swtrace.FPS // segment) + 1
    ess = [0.0] * nseg
    enh = []                # (decode s, rudpsink bytes, wire bytes)
    for k, (t, _ms, b) in enumerate(frames):
        size = b + swtrace.HEADER
        d = k / swtrace.FPS
        if t == "I" or (policy == "ip" and t == "P"):
            ess[int(d // segment)] += size
        else:
            pk = -(-size // (swtrace.MTU - swtrace.RTP_HDR))
            enh.append((d, size + pk * swtrace.RTP_HDR,
                        size + pk * (swtrace.RTP_HDR + swtrace.UDP_IP)))
    essr = [e * 8 / (segment * (1 - p_hat)) for e in ess]
    wf_ess = 1 + swtrace.TCP_IP / swtrace.MSS
    if pacing != "total":
        win = [0.0] * nseg
        for d, _b, w in enh:
            win[int(d // segment)] += w
        return [essr[k] * wf_ess + win[k] * 8 / segment * headroom
                for k in range(nseg)], None
    dur = len(frames) / swtrace.FPS
    enh_bits = sum(e[1] for e in enh) * 8
    R = (sum(essr) * segment * (1 - p_hat) + enh_bits) / dur * headroom
    R = max(R, max(essr) + 16000)
    # cTCP sends the stored segments back to back, each in T(1−p̂)
    P = segment * (1 - p_hat)
    cum_ess = [0.0]
    for e in essr:
        cum_ess.append(cum_ess[-1] + e * P)
    cum = 0.0
    for d, b, _w in enh:
        cum += b * 8
        dl = d + lead
        k = int(dl // P)
        e = cum_ess[min(k, nseg)] + (essr[k] * (dl - k * P) if k < nseg else 0)
        R = max(R, (cum + e) / dl)
    wf_enh = sum(e[2] for e in enh) / max(sum(e[1] for e in enh), 1)
    return [e * wf_ess + (R - e) * wf_enh for e in essr], R


def offered_load(workdir, segment, capacity, policy="i", pacing="smooth", p_hat=0.05,
                 headroom=1.01):
    """What the schedules offer the pipe per segment of a run, from its
    excerpts (WORKDIR/videos), summed over the sessions, as a fraction of
    `capacity` (session_offered()): a value near or above 1 means the pipe
    cannot carry that segment's rates without a queue."""
    sys.path.insert(0, HERE)
    videos = os.path.join(workdir, "videos")
    per = {}
    for name in sorted(os.listdir(videos)):
        frames = []
        with open(os.path.join(videos, name)) as f:
            for line in f:
                p = line.split()
                if len(p) == 4:
                    frames.append((p[1], int(p[2]), int(p[3])))
        off, _ = session_offered(frames, segment, pacing, policy, p_hat, headroom)
        for k, v in enumerate(off):
            per[k] = per.get(k, 0) + v
    return [round(per[k] / capacity, 3) for k in sorted(per)]


def plan(ns, seconds, segment, factor=1.07, seed=1, policy="i"):
    """Before running: the per-segment offered load of both pacings for the
    excerpts tables.py would replay (seed + n), pipe = factor × Σ wire
    mean."""
    sys.path.insert(0, HERE)
    import random
    import swtrace
    frames = swtrace.load(os.path.join(ROOT, "data", "star-wars-iv.txt.xz"))
    for n in ns:
        rnd = random.Random(seed + n)
        firsts = [k for k, f in enumerate(frames[:len(frames) - (seconds + 2) * swtrace.FPS])
                  if f[0] == "I"]
        exs = [swtrace.excerpt(frames, rnd.choice(firsts), seconds) for _ in range(n)]
        cap = factor * sum(swtrace.wire_mean(e, policy) for e in exs)
        for pacing in ("smooth", "total"):
            per = [0.0] * 0
            for e in exs:
                off, _ = session_offered(e, segment, pacing, policy)
                per = [a + b for a, b in zip(per, off)] if per else off
            loads = [round(v / cap, 3) for v in per]
            print(n, pacing, "offered load per segment:", loads, "max", max(loads))


if __name__ == "__main__" and sys.argv[1:2] == ["--plan"]:
    # --plan SECONDS SEGMENT N...: both pacings' offered load, before a run
    plan([int(a) for a in sys.argv[4:]], int(sys.argv[2]), float(sys.argv[3]))
    sys.exit(0)

if __name__ == "__main__" and sys.argv[1:2] == ["--offered"]:
    # --offered RESULTS.json: the offered load per segment of each run in it
    for line in open(sys.argv[2]):
        r = json.loads(line)
        wd = os.path.join(os.path.dirname(sys.argv[2]),
                          f"{r['mode']}-n{r['n']}-{r['pipe']}x{r['factor']}-{r['enhanced_rate']}"
                          f"{'-ip' if r['policy'] == 'ip' else ''}")
        if os.path.isdir(os.path.join(wd, "videos")):
            loads = offered_load(wd, r["segment_s"], r["capacity_bps"], r["policy"],
                                 r.get("enhanced_rate", "smooth"))
            print(r["n"], r["mode"], "offered load per segment:", loads, "max", max(loads))
    sys.exit(0)

if __name__ == "__main__":
    rows = []
    for path in sys.argv[1:]:
        with open(path) as f:
            text = f.read()
        if text.lstrip().startswith("["):        # a kept tables.json
            rows += json.loads(text)
        else:                                    # a run's results.json (JSON lines)
            rows += [json.loads(line) for line in text.splitlines() if line.strip()]
    write(rows)
