#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Each delay class gives its configured RTT (within 2 ms), on one shared
bottleneck, with per-direction delays (asymmetric class included)."""

import json
import statistics
import subprocess

from nettest import Testbed, Link, expect, main, UDPTOOL, wait_bound

# port: (fwd one-way ms, rev one-way ms); None = default class
CLASSES = {7000: (None, None), 7001: (5, 5), 7002: (40, 40),
           7003: (25, 25), 7004: (25, 25), 7005: (30, 10)}
DEFAULT = 10.0


def test():
    fwd = Link(rate_bps=10e6, delay_ms=DEFAULT, queue_pkts=100,
               delay_classes={7001: 5, 7002: 40, (7003, 7004): 25, 7005: 30})
    rev = Link(rate_bps=10e6, delay_ms=DEFAULT, queue_pkts=100,
               delay_classes={7001: 5, 7002: 40, "7003-7004": 25, 7005: 10})
    with Testbed(fwd=fwd, rev=rev) as tb:
        for port in CLASSES:
            tb.server.popen(UDPTOOL + ["echo", "--port", str(port),
                                       "--duration", "30"])
            wait_bound(tb.server, port)
        # all classes probed at once: they share the bottleneck
        pings = {}
        for port in CLASSES:
            pings[port] = tb.client.popen(
                UDPTOOL + ["ping", "--to", tb.server_ip,
                           "--port", str(port), "--count", "25", "--interval", "0.04"],
                stdout=subprocess.PIPE, text=True)
        res = {port: json.loads(p.communicate(timeout=60)[0])
               for port, p in pings.items()}
    for port, (f, r) in CLASSES.items():
        want = (f if f is not None else DEFAULT) + \
            (r if r is not None else DEFAULT)
        rtts = res[port]["rtt_ms"]
        expect(res[port]["lost"] == 0 and len(rtts) == 25,
               "port %d: %d replies, %d lost", port, len(rtts),
               res[port]["lost"])
        med = statistics.median(rtts)
        expect(abs(med - want) < 2.0 and min(rtts) >= want,
               "port %d: RTT median %.2f ms (min %.2f, max %.2f), "
               "configured %.1f ms", port, med, min(rtts), max(rtts), want)


if __name__ == "__main__":
    main(test)
