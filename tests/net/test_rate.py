#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The bottleneck delivers its configured rate (within 3 %) in each
direction, measured at the receivers and in the emulator's time series."""

import subprocess

from nettest import (Testbed, Link, expect, main, udp_recv, udp_send,
                     collect, WIRE, log, UDPTOOL)

FWD_RATE = 20e6
REV_RATE = 8e6
SIZE = 1400                     # UDP payload; 1442-byte frames


def measured_rate(res, skip=0.5, tail=0.3):
    pk = res["packets"]
    t_first, t_last = pk[0][1], pk[-1][1]
    win = [p for p in pk if t_first + skip <= p[1] <= t_last - tail]
    bits = sum(p[2] + WIRE for p in win[1:]) * 8
    return bits / (win[-1][1] - win[0][1])


def test():
    with Testbed(rate_bps=FWD_RATE, delay_ms=5, queue_pkts=100,
                 rev=Link(rate_bps=REV_RATE, delay_ms=5, queue_pkts=100),
                 track_ports=[6001, 6002]) as tb:
        rc = udp_recv(tb.client, 6001, "--idle", 1.0)
        rs = udp_recv(tb.server, 6002, "--idle", 1.0)
        # overload both directions by 20-25 % for 4 s, at the same time
        ps = tb.server.popen(
            UDPTOOL + [str(a) for a in (
                "send", "--to", tb.client_ip, "--port", 6001, "--rate",
                FWD_RATE * 1.2, "--size", SIZE, "--duration", 4)],
            stdout=subprocess.DEVNULL)
        udp_send(tb.client, tb.server_ip, 6002, "--rate", REV_RATE * 1.25,
                 "--size", SIZE, "--duration", 4)
        ps.wait(30)
        fwd, rev = collect(rc), collect(rs)
        tb.stop_emulator()
        rows = tb.read_csv()

    for name, res, want in (("fwd", fwd, FWD_RATE), ("rev", rev, REV_RATE)):
        r = measured_rate(res)
        expect(abs(r / want - 1) < 0.03,
               "%s rate at receiver %.3f Mbit/s, configured %.3f (%+.2f %%)",
               name, r / 1e6, want / 1e6, (r / want - 1) * 100)
        # the emulator's own time series agrees (steady part only)
        port = 6001 if name == "fwd" else 6002
        steady = [x for x in rows if x["dir"] == name and x["queue_pkts"] > 0
                  and 1.0 <= x["time_s"] <= 3.5]
        expect(len(steady) >= 15, "%s: %d saturated CSV intervals",
               name, len(steady))
        csv_rate = (sum(x["bytes_%d" % port] for x in steady) * 8 /
                    (0.1 * len(steady)))
        expect(abs(csv_rate / want - 1) < 0.03,
               "%s rate in CSV %.3f Mbit/s (%+.2f %%)", name, csv_rate / 1e6,
               (csv_rate / want - 1) * 100)
        log("%s: %d packets received" % (name, res["received"]))


if __name__ == "__main__":
    main(test)
