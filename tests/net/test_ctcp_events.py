#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""ctcpsink's TCP congestion events on the emulated link (about 25 s).

* a 2 s outage during a paced cTCP transfer: `rexmt` (one per
  retransmission timeout) then `recovered`; the number of rexmt events
  equals the kernel's own count of timeouts, both per socket
  (tcpi_total_rto) and per namespace (TcpExt TCPTimeouts);
* a single data segment dropped by the link: exactly `dupack` then
  `recovered`; one recovery in the kernel's TcpExt TCPSackRecovery.
Every byte arrives (EOS at the stock tcpserversrc receiver)."""

from nettest import Testbed, expect, main, log
from twoflowlab import ctcpbed

RATE = 100000                     # target, bytes/s
SIZE = 8 * RATE                   # 8 s of data


def transfer(tb, port):
    rx = ctcpbed.receiver(tb, port, duration=25)
    tx = ctcpbed.sender(tb, port, mode="ctcp", target_rate=RATE, size=SIZE,
                        duration=22)
    res = ctcpbed.result(tx, timeout=40)
    rx.terminate()
    summary = tb.stop_emulator()
    types = [e[1] for e in res["events"]]
    log("events: %s" % " ".join(types))
    log("stats: timeouts %s, retransmissions %s, rexmt/dupack/recovered "
        "%s/%s/%s; netstat %s" % (
            res["stats"]["timeouts"], res["stats"]["retransmissions"],
            res["stats"]["rexmt-events"], res["stats"]["dupack-events"],
            res["stats"]["recovered-events"], res["netstat"]))
    expect(res["eos"] and res["error"] is None and
           res["stats"]["bytes-acked"] >= SIZE,
           "transfer complete: %d of %d bytes acknowledged, error %s",
           res["stats"]["bytes-acked"], SIZE, res["error"])
    return res, types, summary


def test_outage():
    with Testbed(rate_bps=4e6, delay_ms=20, queue_pkts=50,
                 schedule=[(4, 0), (6, 4e6)]) as tb:
        res, types, _ = transfer(tb, 5301)
    st, ns = res["stats"], res["netstat"]
    expect(len(types) >= 2 and types[0] == "rexmt" and
           types[-1] == "recovered" and "dupack" not in types,
           "outage: rexmt first, recovered last, no dupack (%s)",
           " ".join(types))
    n_rexmt = types.count("rexmt")
    expect(n_rexmt >= 2 and n_rexmt == st["rexmt-events"] ==
           st["timeouts"] == ns["TCPTimeouts"],
           "rexmt events %d = tcpi_total_rto %d = TcpExt TCPTimeouts %d",
           n_rexmt, st["timeouts"], ns["TCPTimeouts"])
    expect(types.count("recovered") == 1,
           "one recovered for the one episode (%d)", types.count("recovered"))
    # the rexmt events sit inside the outage (+ the RTO that ends it)
    t = [e[0] for e in res["events"]]
    expect(t[-1] - t[0] < 4.0, "episode lasted %.2f s", t[-1] - t[0])


def test_single_drop():
    # the link drops exactly the 200th data segment of the ~550 of this
    # transfer (checked below from the emulator's own count)
    with Testbed(rate_bps=4e6, delay_ms=20, queue_pkts=50,
                 extra_args=["--dir", "fwd", "--drop-nth", "200"]) as tb:
        res, types, summary = transfer(tb, 5302)
    drops = summary["fwd"]["drops_loss"]
    ns = res["netstat"]
    expect(drops == 1, "the link dropped %d segment(s)", drops)
    expect(types == ["dupack", "recovered"],
           "one drop: dupack then recovered (%s)", " ".join(types))
    expect(ns["TCPSackRecovery"] + ns["TCPRenoRecovery"] == 1 and
           res["stats"]["dupack-events"] == 1 and
           ns["TCPTimeouts"] == 0 and res["stats"]["timeouts"] == 0,
           "kernel: %d recovery, %d timeouts",
           ns["TCPSackRecovery"] + ns["TCPRenoRecovery"], ns["TCPTimeouts"])
    expect(res["stats"]["retransmissions"] >= 1, "%d retransmission(s)",
           res["stats"]["retransmissions"])


def test():
    ctcpbed.setup_env()
    test_outage()
    test_single_drop()


if __name__ == "__main__":
    main(test)
