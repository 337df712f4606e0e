#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The queue limit is exact: a burst that fits (limit + the packet on the
wire) passes whole; every packet beyond it is dropped, in packets and in
bytes, and the emulator's counters agree with what the receiver saw."""

from nettest import Testbed, expect, main, udp_recv, udp_send, collect, WIRE

RATE = 400e3                    # 1042-byte frame: 20.8 ms on the wire
SIZE = 1000


def burst(tb, port, n):
    rc = udp_recv(tb.client, port, "--idle", 0.8)
    udp_send(tb.server, tb.client_ip, port, "--size", SIZE,
             "--count", n)
    return collect(rc)


def check(tb, limit_desc, fits):
    """fits: packets a burst can leave in the link (queue + the one sent)."""
    for port, n in ((8001, fits), (8002, fits + 1), (8003, fits + 29)):
        res = burst(tb, port, n)
        seqs = [p[0] for p in res["packets"]]
        want = min(n, fits)
        expect(res["received"] == want and seqs == list(range(want)),
               "%s: burst of %d -> %d delivered (want the first %d)",
               limit_desc, n, res["received"], want)
    s = tb.stop_emulator()["fwd"]
    dropped = 1 + 29
    expect(s["drops_queue"] == dropped and s["drops_loss"] == 0
           and s["drops_red_early"] + s["drops_red_forced"] == 0,
           "%s: emulator counted %d queue drops (want %d)", limit_desc,
           s["drops_queue"], dropped)
    return s


def test():
    with Testbed(rate_bps=RATE, queue_pkts=20) as tb:
        s = check(tb, "queue 20 pkts", 21)
        expect(s["max_queue_pkts"] == 20, "max queue %d pkts (limit 20)",
               s["max_queue_pkts"])
    frame = SIZE + WIRE
    with Testbed(rate_bps=RATE, queue_bytes=10 * frame + frame - 1) as tb:
        s = check(tb, "queue %d bytes" % (11 * frame - 1), 11)
        expect(s["max_queue_bytes"] == 10 * frame,
               "max queue %d bytes", s["max_queue_bytes"])


if __name__ == "__main__":
    main(test)
