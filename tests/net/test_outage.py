#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A rate schedule: 10 Mbit/s, outage (rate 0) from 2 s to 5 s, back to
10 Mbit/s, step down to 5 Mbit/s at 7 s.  UDP stalls for exactly the
outage and resumes; each rate is delivered; a TCP transfer survives an
outage and resumes."""

import json
import subprocess

from nettest import (Testbed, expect, main, udp_recv, udp_send, collect,
                     WIRE, log)

DELAY = 0.010


def rate_between(rows, t0, t1, col="delivered_bytes"):
    sel = [r for r in rows if t0 < r["time_s"] <= t1]
    return sum(r[col] for r in sel) * 8 / (0.1 * len(sel))


def test_udp():
    with Testbed(rate_bps=10e6, delay_ms=DELAY * 1000, queue_pkts=50,
                 schedule=[(2, 0), (5, 10e6), (7, 5e6)]) as tb:
        rc = udp_recv(tb.client, 9200, "--duration", 10.5)
        udp_send(tb.server, tb.client_ip, 9200, "--rate", 12e6,
                 "--size", 1200, "--duration", 8.6)
        res = collect(rc)
        summary = tb.stop_emulator()
        rows = tb.read_csv("fwd")
    t0 = summary["start_monotonic_s"]
    arr = [p[1] - t0 for p in res["packets"]]
    gaps = sorted(((b - a, a, b) for a, b in zip(arr, arr[1:])),
                  reverse=True)
    gap, a, b = gaps[0]
    frame_t = (1200 + WIRE) * 8 / 10e6
    # the last packet before the outage left the wire at <= 2 s; the first
    # after it starts at 5 s and arrives frame_t + delay later
    expect(abs(a - (2 + DELAY)) < 0.005 and abs(b - (5 + DELAY + frame_t))
           < 0.005, "outage: last packet at %.4f s, next at %.4f s "
           "(expected %.4f and %.4f)", a, b, 2 + DELAY,
           5 + DELAY + frame_t)
    expect(gaps[1][0] < 0.05, "no other stall (next longest gap %.1f ms)",
           gaps[1][0] * 1000)
    # rows cover (t - 0.1, t]; the queue starts draining at 5.0 exactly
    out = [r for r in rows if 2.1 < r["time_s"] < 4.95]
    expect(all(r["delivered_pkts"] == 0 for r in out) and
           all(r["queue_pkts"] == 50 for r in out if r["time_s"] > 2.5) and
           sum(r["drops_queue"] for r in out) > 0,
           "outage: nothing delivered, queue full at 50, %d drops",
           sum(r["drops_queue"] for r in out))
    for t0_, t1_, want in ((0.5, 2.0, 10e6), (5.2, 7.0, 10e6),
                           (7.2, 8.5, 5e6)):
        r = rate_between(rows, t0_, t1_)
        expect(abs(r / want - 1) < 0.03, "%.1f-%.1f s: %.3f Mbit/s "
               "(schedule %.0f)", t0_, t1_, r / 1e6, want / 1e6)


def test_tcp():
    with Testbed(rate_bps=10e6, delay_ms=10, queue_pkts=50,
                 schedule=[(1.5, 0), (4.5, 10e6)]) as tb:
        tb.server.popen(["iperf3", "-s", "-1", "-p", "5201"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tb.client.run(["sleep", "0.3"])
        r = tb.client.run(["iperf3", "-c", tb.server_ip, "-p", "5201", "-R",
                           "-t", "8", "-J"], timeout=30)
        tb.stop_emulator()
        rows = tb.read_csv("fwd")
    j = json.loads(r.stdout)
    ivs = [(iv["sum"]["start"], iv["sum"]["bits_per_second"])
           for iv in j["intervals"]]
    log("iperf3 intervals (Mbit/s): " +
        " ".join("%.1f" % (b / 1e6) for _, b in ivs))
    stalled = rate_between(rows, 1.6, 4.5)
    after = rate_between(rows, 6.5, 8.0)
    expect(stalled == 0 and after > 8e6, "TCP: %.2f Mbit/s during the "
           "outage, %.2f Mbit/s 2-3.5 s after it", stalled / 1e6, after / 1e6)


def test():
    test_udp()
    test_tcp()


if __name__ == "__main__":
    main(test)
