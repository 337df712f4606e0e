#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The paper's Fig. 9 on the emulated link (root; about 2.5 minutes):

  sudo experiments/ctcp/fig9.py [--build build] [--out /tmp/ctcp-fig9]

64 KB/s bottleneck (512 kbit/s), 40 ms each way, 30-packet drop-tail
queue.  Two cTCP flows (13000 and 27000 B/s: ctcpsink target-rate 104000
and 216000 bit/s, bulk input) from the server to a stock tcpserversrc at
the client, the second starting 12 s after the first; then the same with
two plain TCP flows (mode=tcp).  Goodput per flow from each sender's bytes-acked every 0.25 s.
Checks: every 8 s interval after a cTCP flow's first is within +-10 % of
its target; the two TCP flows share the link roughly equally (their rates
while both run within a factor 1.5).  Writes fig9.png and fig9.json.
"""

import argparse
import json
import os
import sys
import time

from twoflowlab import ctcpbed  # noqa: E402

TARGETS = (13000, 27000)
PORTS = (5401, 5402)
STAGGER = 12.0
RUN = 64.0


def phase(mode, args):
    with ctcpbed.Testbed(rate_bps=512e3, delay_ms=40, queue_pkts=30,
                         track_ports=list(PORTS),
                         workdir=os.path.join(args.out, mode),
                         keep_workdir=True) as tb:
        rx = [ctcpbed.receiver(tb, p, duration=RUN + STAGGER + 10)
              for p in PORTS]
        tx = []
        for i, (port, target) in enumerate(zip(PORTS, TARGETS)):
            if i:
                time.sleep(STAGGER)
            tx.append(ctcpbed.sender(
                tb, port, mode=mode, target_rate=target if mode == "ctcp"
                else None, duration=RUN - i * STAGGER,
                cc=args.cc))
        res = [ctcpbed.result(p, timeout=RUN + 60) for p in tx]
        for p in rx:
            p.terminate()
        tb.stop_emulator()
    return res


def analyse(mode, res):
    out = []
    for i, r in enumerate(res):
        rates = ctcpbed.interval_rates(r["samples"], r["t0"], 8.0,
                                       r["t_end"])
        out.append({"target": TARGETS[i], "start": r["t0"],
                    "end": r["t_end"], "interval_rates": rates,
                    "retransmissions": r["stats"]["retransmissions"],
                    "events": len(r["events"]), "error": r["error"],
                    "samples": r["samples"]})
    return out


def plot(data, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    t_ref = min(f["start"] for f in data["ctcp"])
    for ax, mode in zip(axes, ("ctcp", "tcp")):
        t0 = min(f["start"] for f in data[mode])
        for i, f in enumerate(data[mode]):
            s = f["samples"]
            ts = [(b[0] + a[0]) / 2 - t0 for a, b in zip(s, s[4:])]
            rs = [(b[1] - a[1]) / (b[0] - a[0]) / 1000
                  for a, b in zip(s, s[4:])]
            ax.plot(ts, rs, label="flow %d (%s)" % (
                i + 1, "target %d kB/s" % (f["target"] / 1000)
                if mode == "ctcp" else "plain TCP"))
            if mode == "ctcp":
                ax.axhline(f["target"] / 1000, ls="--", lw=0.8,
                           color="C%d" % i)
        ax.axhline(64, ls=":", color="k", lw=0.8)
        ax.set_ylabel("goodput (kB/s, 1 s)")
        ax.set_title({"ctcp": "cTCP: targets 13 and 27 kB/s",
                      "tcp": "plain TCP"}[mode])
        ax.set_ylim(0, 70)
        ax.legend(loc="upper right", fontsize=8)
    axes[-1].set_xlabel("time (s); 64 kB/s link, RTT 80 ms")
    del t_ref
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build")
    ap.add_argument("--out", default="/tmp/ctcp-fig9")
    ap.add_argument("--cc", default="reno")
    args = ap.parse_args()
    ctcpbed.setup_env(args.build)
    ctcpbed.check_environment()
    os.makedirs(args.out, exist_ok=True)
    data = {m: analyse(m, phase(m, args)) for m in ("ctcp", "tcp")}
    ok = True
    for i, f in enumerate(data["ctcp"]):
        rates = f["interval_rates"][1:]
        dev = [r / f["target"] - 1 for r in rates]
        good = bool(dev) and all(abs(d) <= 0.10 for d in dev)
        ok &= good
        print("cTCP flow %d, target %d B/s: 8 s intervals (after the "
              "first) %s B/s, worst %+.1f %% -> %s" % (
                  i + 1, f["target"], [round(r) for r in rates],
                  100 * max(dev, key=abs) if dev else 0,
                  "ok" if good else "FAIL"))
    # plain TCP: rates while both run
    a, b = data["tcp"]
    both = (b["start"] + 8, min(a["end"], b["end"]))
    width = both[1] - both[0] - 1.0
    ra = ctcpbed.interval_rates(a["samples"], both[0], width)
    rb = ctcpbed.interval_rates(b["samples"], both[0], width)
    ratio = max(ra[0], rb[0]) / max(1, min(ra[0], rb[0]))
    share = ratio <= 1.5
    ok &= share
    print("plain TCP while both run: %.0f and %.0f B/s (ratio %.2f) -> %s"
          % (ra[0], rb[0], ratio, "ok" if share else "FAIL"))
    print("retransmissions: cTCP %s, TCP %s" % (
        [f["retransmissions"] for f in data["ctcp"]],
        [f["retransmissions"] for f in data["tcp"]]))
    with open(os.path.join(args.out, "fig9.json"), "w") as f:
        json.dump(data, f)
    plot(data, os.path.join(args.out, "fig9.png"))
    print("wrote %s" % os.path.join(args.out, "fig9.png"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
