#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Maximum forwarding rate of twoflow-linkemu on one core.

  sudo bench/linkemu/bench_linkemu.py [--duration 5] [--streams 2]

Floods the emulated link server -> client with iperf3 UDP (1472-byte
payloads: 1514-byte Ethernet frames) in three configurations (pass-through;
1 Gbit/s bottleneck with a 10 ms delay; the same with RED and 1 % loss)
and prints, from the emulator's own counters, the packets/s and Mbit/s it
forwarded, its CPU time, and the rate per CPU-second (what one fully busy
core would forward; it counts the CPU spent on dropped packets too, so it
is a lower bound).  The emulator is one thread, so "per CPU-second" is
the one-core figure even when the traffic generator shares the machine.
"""

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
from twoflowlab.testbed import (Testbed, Red, SkipTest,  # noqa: E402
                             check_environment, SKIP)

FRAME = 1514

CONFIGS = [
    ("pass-through (no rate, no delay)", dict()),
    ("1 Gbit/s, 10 ms, 1000 pkt queue", dict(rate_bps=1e9, delay_ms=10,
                                              queue_pkts=1000)),
    ("1 Gbit/s, 10 ms, RED, 1% loss", dict(rate_bps=1e9, delay_ms=10,
                                           queue_pkts=1000, loss=0.01,
                                           red=Red(100, 500, 0.002, 0.1))),
]


def bench(name, link, a):
    with Testbed(realtime=0, **link) as tb:
        tb.client.popen(["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        # iperf3 client on the server host: the flood crosses fwd
        gen = tb.server.run(["iperf3", "-c", tb.client_ip, "-u", "-b", "0",
                             "-l", "1472", "-t", str(a.duration), "-P",
                             str(a.streams)], timeout=a.duration + 30,
                            check=False)
        s = tb.stop_emulator()
        rows = tb.read_csv("fwd")
    if gen.returncode != 0:
        print("iperf3 failed: %s" % gen.stderr.strip(), file=sys.stderr)
    f = s["fwd"]
    cpu = s["cpu_user_s"] + s["cpu_sys_s"]
    pkts = f["delivered_pkts"]
    # rate while the flood ran (the emulator also ran before and after it)
    busy = [r for r in rows if r["delivered_pkts"] > 0]
    wall = 0.1 * len(busy)
    pps = sum(r["delivered_pkts"] for r in busy) / wall
    per_cpu = pkts / cpu if cpu > 0 else float("nan")
    print("%-36s %9.0f pkt/s %8.1f Mbit/s  cpu %4.0f %%  -> one core: "
          "%9.0f pkt/s %8.1f Mbit/s  (socket drops %d, arrived %d)" % (
              name, pps, pps * FRAME * 8 / 1e6, 100 * cpu / s["duration_s"],
              per_cpu,
              per_cpu * FRAME * 8 / 1e6, sum(s["socket_drops"]),
              f["arrived_pkts"]), flush=True)
    return pps, per_cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--streams", type=int, default=2)
    ap.add_argument("--emulator", help="twoflow-linkemu binary")
    a = ap.parse_args()
    if a.emulator:
        os.environ["TWOFLOW_LINKEMU"] = os.path.abspath(a.emulator)
    try:
        check_environment()
    except SkipTest as e:
        print("SKIP: %s" % e)
        return SKIP
    print("twoflow-linkemu forwarding, %d-byte frames, iperf3 UDP x%d, %d s"
          % (FRAME, a.streams, a.duration))
    for name, link in CONFIGS:
        bench(name, link, a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
