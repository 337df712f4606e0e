#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""cTCP next to a paced enhanced flow (root; about 75 s):

  sudo experiments/ctcp/competition.py [--build build] [--out DIR]

A UDP flow paced at 1.2 Mbit/s (twoflowlab.udptool: 1200-byte
datagrams, the stand-in for rudpsink's near-CBR enhanced flow) and a TCP
flow share a bottleneck of 1.1 x their summed rates (TCP's share: 100 kB/s
= 0.8 Mbit/s; link 2.2 Mbit/s, 20 ms each way, 30-packet drop-tail
queue).  Phase 1: the TCP flow is ctcpsink (target-rate 800000 bit/s = 100 kB/s); phase 2,
same setup: plain TCP (mode=tcp, bulk).  30 s each.  Check: cTCP's
retransmissions <= 1/10 of plain TCP's.  Also prints goodputs, UDP loss
and the link's queue drops.
"""

import argparse
import json
import os
import subprocess
import sys

from twoflowlab import ctcpbed  # noqa: E402

from twoflowlab import tool_argv  # noqa: E402
UDPTOOL = tool_argv("udptool", sys.executable)
TCP_RATE = 100000               # bytes/s
UDP_BPS = 1.2e6
LINK_BPS = 1.1 * (TCP_RATE * 8 + UDP_BPS)
RUN = 30


def phase(mode, args):
    with ctcpbed.Testbed(rate_bps=LINK_BPS, delay_ms=20, queue_pkts=30,
                         track_ports=[5501, 9301],
                         workdir=os.path.join(args.out, mode),
                         keep_workdir=True) as tb:
        rx = ctcpbed.receiver(tb, 5501, duration=RUN + 15)
        urx = tb.client.popen(UDPTOOL + ["recv", "--port",
                               "9301", "--duration", str(RUN + 5)],
                              stdout=subprocess.PIPE, text=True)
        usx = tb.server.popen(UDPTOOL + ["send", "--to",
                               tb.client_ip, "--port", "9301", "--rate",
                               str(UDP_BPS), "--size", "1200", "--duration",
                               str(RUN)], stdout=subprocess.PIPE, text=True)
        tx = ctcpbed.sender(tb, 5501, mode=mode, target_rate=TCP_RATE
                            if mode == "ctcp" else None, duration=RUN,
                            cc=args.cc)
        res = ctcpbed.result(tx, timeout=RUN + 60)
        usent = json.loads(usx.communicate(timeout=60)[0])
        urecv = json.loads(urx.communicate(timeout=60)[0])
        rx.terminate()
        summary = tb.stop_emulator()
    s = res["samples"]
    good = (s[-1][1] - s[0][1]) / (s[-1][0] - s[0][0]) if len(s) > 1 else 0
    sent = usent.get("sent", usent.get("packets_sent", 0))
    got = urecv.get("received", len(urecv.get("packets", [])))
    return {"mode": mode, "retransmissions": res["stats"]["retransmissions"],
            "timeouts": res["stats"]["timeouts"],
            "events": [e[1] for e in res["events"]],
            "tcp_goodput": good, "udp_sent": sent, "udp_received": got,
            "link_drops": summary["fwd"]["drops_queue"],
            "error": res["error"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build")
    ap.add_argument("--out", default="/tmp/ctcp-competition")
    ap.add_argument("--cc", default="cubic")
    args = ap.parse_args()
    ctcpbed.setup_env(args.build)
    ctcpbed.check_environment()
    os.makedirs(args.out, exist_ok=True)
    r = [phase(m, args) for m in ("ctcp", "tcp")]
    for x in r:
        print("%-4s: retransmissions %d, timeouts %d, goodput %.0f B/s, "
              "UDP %s/%s received, link queue drops %d, events %d%s" % (
                  x["mode"], x["retransmissions"], x["timeouts"],
                  x["tcp_goodput"], x["udp_received"], x["udp_sent"],
                  x["link_drops"], len(x["events"]),
                  (", error " + x["error"]) if x["error"] else ""))
    ok = r[0]["retransmissions"] * 10 <= r[1]["retransmissions"] and \
        r[1]["retransmissions"] > 0
    print("cTCP retransmissions %d <= 1/10 of plain TCP's %d: %s" % (
        r[0]["retransmissions"], r[1]["retransmissions"],
        "ok" if ok else "FAIL"))
    with open(os.path.join(args.out, "competition.json"), "w") as f:
        json.dump(r, f)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
