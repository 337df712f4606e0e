#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Reference TCP fairness measurement on the emulated WAN.

10 Mbit/s bottleneck, 80-packet drop-tail queue, three TCP flows (iperf3,
server -> client) with RTTs 30/90/180 ms sharing it for 30 s, for cubic,
reno and bbr.  Prints per-flow goodput and Jain's fairness index and
compares it with the reference (DESIGN.md, "Testbed").

  sudo experiments/testbed/fairness.py [--cc cubic,reno,bbr] [--out DIR]
      [--check] [--duration 30]

--out keeps each run's emulator CSV (plot with experiments/plot.py) and
writes results.json.  --check exits 1 unless every Jain index is within
+-0.05 of the reference.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "net"))

from twoflow_testbed import (Testbed, SkipTest, check_environment,  # noqa
                             jain_index, SKIP)

REFERENCE = {
    "cubic": ([3.68, 2.94, 2.56], 0.978),
    "reno": ([5.11, 2.23, 1.82], 0.814),
    "bbr": ([1.47, 3.58, 4.05], 0.880),
}
PORTS = [5201, 5202, 5203]


def cc_available(cc):
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            if cc in f.read().split():
                return True
    except OSError:
        pass
    subprocess.run(["modprobe", "tcp_" + cc], capture_output=True)
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            return cc in f.read().split()
    except OSError:
        return False


def run_one(cc, a, workdir):
    classes = {p: rtt / 2.0 for p, rtt in zip(PORTS, a.rtts)}
    with Testbed(rate_bps=a.rate, queue_pkts=a.queue, delay_ms=a.rtts[0] / 2,
                 delay_classes=classes, cc=cc, workdir=workdir,
                 csv_interval_ms=100) as tb:
        for p in PORTS:
            tb.server.popen(["iperf3", "-s", "-1", "-p", str(p)],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        # iperf3 needs about five RTTs of control exchange before data
        # flows; --align starts the long-RTT clients earlier by that much
        # so that the three data transfers begin together
        lead = {p: (max(a.rtts) - rtt) / 1000.0 * 5 if a.align else 0.0
                for p, rtt in zip(PORTS, a.rtts)}
        clients = []
        t0 = time.monotonic()
        for p in sorted(PORTS, key=lambda q: lead[q]):
            wait = t0 + lead[p] - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            clients.append(tb.client.popen(
                ["iperf3", "-c", tb.server_ip, "-p", str(p), "-R", "-C", cc,
                 "-t", str(a.duration), "-J"],
                stdout=subprocess.PIPE, text=True))
        clients = [clients[sorted(PORTS, key=lambda q: lead[q]).index(p)]
                   for p in PORTS]
        outs = [c.communicate(timeout=a.duration + 60)[0] for c in clients]
        summary = tb.stop_emulator()
    mbps = []
    for p, out in zip(PORTS, outs):
        j = json.loads(out)
        if "error" in j:
            raise RuntimeError("iperf3 port %d: %s" % (p, j["error"]))
        mbps.append(j["end"]["sum_received"]["bits_per_second"] / 1e6)
        got_cc = j["end"].get("sender_tcp_congestion")
        if got_cc and got_cc != cc:
            raise RuntimeError("sender used %s, not %s" % (got_cc, cc))
    fwd = summary["fwd"]
    return {"cc": cc, "mbps": mbps, "jain": jain_index(mbps),
            "total_mbps": sum(mbps), "drops_queue": fwd["drops_queue"],
            "max_queue_pkts": fwd["max_queue_pkts"],
            "emulator_cpu_s": summary["cpu_user_s"] + summary["cpu_sys_s"],
            "socket_drops": summary["socket_drops"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cc", default="cubic,reno,bbr")
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--rate", type=float, default=10e6)
    ap.add_argument("--queue", type=int, default=80)
    ap.add_argument("--rtts", default="30,90,180",
                    help="RTTs in ms of the three flows")
    ap.add_argument("--out", help="keep CSVs and results.json here")
    ap.add_argument("--align", action="store_true",
                    help="start the clients so their data begins together")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless Jain within +-0.05 of the reference")
    ap.add_argument("--skip-unless-slow", action="store_true",
                    help="exit 77 unless TWOFLOW_SLOW=1 (meson net-slow)")
    ap.add_argument("--emulator", help="twoflow-linkemu binary")
    a = ap.parse_args()
    a.rtts = [float(x) for x in a.rtts.split(",")]
    if a.skip_unless_slow and os.environ.get("TWOFLOW_SLOW") != "1":
        print("SKIP: slow experiment; set TWOFLOW_SLOW=1 to run it")
        return SKIP
    if a.emulator:
        os.environ["TWOFLOW_LINKEMU"] = os.path.abspath(a.emulator)
    try:
        check_environment()
    except SkipTest as e:
        print("SKIP: %s" % e)
        return SKIP

    results, ok = [], True
    print("%.0f Mbit/s, %d-packet drop-tail queue, RTT %s ms, %d s" % (
        a.rate / 1e6, a.queue, "/".join("%g" % r for r in a.rtts),
        a.duration), flush=True)
    for cc in a.cc.split(","):
        if not cc_available(cc):
            print("%-6s not available in this kernel" % cc, flush=True)
            ok = False
            continue
        wd = os.path.join(a.out, cc) if a.out else None
        r = run_one(cc, a, wd)
        results.append(r)
        line = "%-6s %s Mbit/s  total %.2f  Jain %.3f" % (
            cc, " / ".join("%.2f" % m for m in r["mbps"]), r["total_mbps"],
            r["jain"])
        if cc in REFERENCE:
            ref_mbps, ref_j = REFERENCE[cc]
            good = abs(r["jain"] - ref_j) <= 0.05
            ok = ok and good
            r["reference_mbps"], r["reference_jain"] = ref_mbps, ref_j
            line += "  (reference %s, Jain %.3f: %s)" % (
                " / ".join("%.2f" % m for m in ref_mbps), ref_j,
                "within 0.05" if good else "OUTSIDE 0.05")
        line += "  [queue drops %d, emulator cpu %.1f s]" % (
            r["drops_queue"], r["emulator_cpu_s"])
        print(line, flush=True)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump(results, f, indent=2)
    if a.check and not ok:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
