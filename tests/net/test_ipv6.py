#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every network element across the emulated WAN over IPv6 (about 20 s).

The project's testbed (namespaces joined through twoflow-linkemu, which
forwards Ethernet frames of any type) with IPv6 addresses added on top of
its IPv4 ones: server fd00:7466::1, client fd00:7466::65, static
neighbours, no DAD and no router advertisements. 20 Mbit/s, 10 ms each
way, 1 % random loss on the data path:
* erapsink (addressed with an erap://[v6]:port URI) -> erapsrc bound to
  `::`: 2 MB bit-exactly, through losses the sender reacted to;
* ctcpsink -> tcpserversrc host=:: : 2 MB bit-exactly;
* rudpsink (receiver-driven levels) -> rudpsrc address=:: : RTP/X-GST
  frames cross (some are lost: rUDP is unreliable) and the receiver's
  feedback crosses back.
Each flow is counted by the emulator on its own port: the bytes went
through the emulated link as IPv6."""

import hashlib
import os
import re
import subprocess
import time

from nettest import Testbed, expect, main, log, wait_bound

SERVER6, CLIENT6 = "fd00:7466::1", "fd00:7466::65"
ERAP_PORT, CTCP_PORT, RUDP_PORT = 7000, 7002, 7004
SIZE = 2 * 1000 * 1000
FRAMES = 50


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def add_ipv6(tb):
    """IPv6 on the hosts' eth0 (the testbed turns it off by default)."""
    pairs = [(tb.server, SERVER6), (tb.client, CLIENT6)]
    for h, ip in pairs:
        for key in ("all", "default", "eth0", "lo"):
            h.sysctl("net.ipv6.conf.%s.disable_ipv6" % key, 0)
        h.sysctl("net.ipv6.conf.eth0.accept_ra", 0)
        h.sysctl("net.ipv6.conf.eth0.dad_transmits", 0)
        tb._ip(["-n", h.ns, "-6", "addr", "add", ip + "/64", "dev", "eth0",
                "nodad"])
    for h, _ in pairs:
        for o, oip in pairs:
            if o is not h:
                tb._ip(["-n", h.ns, "-6", "neigh", "replace", oip, "lladdr",
                        o.mac, "dev", "eth0", "nud", "permanent"])


def flow(summary, port):
    return summary["fwd"]["flows"].get(str(port), {})


def test():
    build = os.environ.get("TWOFLOW_BUILD_ROOT")
    env = dict(os.environ)
    if build and "GST_PLUGIN_PATH_1_0" not in env:
        env["GST_PLUGIN_PATH_1_0"] = os.path.join(build, "gst")
    with Testbed(rate_bps=20e6, delay_ms=10, queue_pkts=100, loss=0.01,
                 track_ports=[ERAP_PORT, CTCP_PORT, RUDP_PORT]) as tb:
        add_ipv6(tb)
        src = os.path.join(tb.workdir, "in.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(SIZE))

        # ERAP, the sender addressed by URI, the receiver on ::
        erap_out = os.path.join(tb.workdir, "erap.bin")
        rx = tb.client.popen(["gst-launch-1.0", "-q", "erapsrc",
                              "uri=erap://[::]:%d" % ERAP_PORT, "!",
                              "filesink", "location=" + erap_out], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        wait_bound(tb.client, ERAP_PORT)
        tx = tb.server.run(["gst-launch-1.0", "-m", "filesrc",
                            "location=" + src, "blocksize=1316", "!",
                            "erapsink", "uri=erap://[%s]:%d" % (CLIENT6,
                                                               ERAP_PORT)],
                           env=env, timeout=60, check=False)
        rx_out, _ = rx.communicate(timeout=30)
        erap = (tx.returncode, rx.returncode, tx.stdout.count(
            "GstNetworkCongestion"), tx.stderr[-800:] + rx_out[-800:])

        # cTCP to a stock tcpserversrc on ::
        ctcp_out = os.path.join(tb.workdir, "ctcp.bin")
        rx = tb.client.popen(["gst-launch-1.0", "-q", "tcpserversrc",
                              "host=::", "port=%d" % CTCP_PORT, "!",
                              "filesink", "location=" + ctcp_out], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        wait_bound(tb.client, CTCP_PORT, "tcp")
        tx = tb.server.run(["gst-launch-1.0", "-q", "filesrc",
                            "location=" + src, "blocksize=65536", "!",
                            "ctcpsink", "host=" + CLIENT6,
                            "port=%d" % CTCP_PORT, "target-rate=10000000"],
                           env=env, timeout=60, check=False)
        rx_out, _ = rx.communicate(timeout=30)
        ctcp = (tx.returncode, rx.returncode, tx.stderr[-800:] + rx_out[-800:])

        # rUDP, the receiver choosing the level
        caps = ("application/x-rtp,media=application,clock-rate=90000,"
                "encoding-name=X-GST")
        rx = tb.client.popen(["gst-launch-1.0", "-v", "rudpsrc", "address=::",
                              "port=%d" % RUDP_PORT, "caps=" + caps,
                              "feedback-interval=20000000", "!",
                              "rtpjitterbuffer", "latency=200", "!",
                              "rtpgstdepay", "!", "fakesink", "silent=false",
                              "sync=false"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        wait_bound(tb.client, RUDP_PORT)
        tx = tb.server.run(["gst-launch-1.0", "-m", "videotestsrc",
                            "num-buffers=%d" % FRAMES, "is-live=true", "!",
                            "video/x-raw,format=I420,width=64,height=48,"
                            "framerate=25/1", "!", "rtpgstpay", "mtu=1000",
                            "config-interval=1", "!", "rudpsink", "name=s",
                            "host=" + CLIENT6, "port=%d" % RUDP_PORT,
                            "rate-control=receiver"], env=env, timeout=60,
                           check=False)
        time.sleep(1.0)
        rx.terminate()
        rx_out, _ = rx.communicate(timeout=10)
        rendered = len(re.findall(r"fakesink0.*chain", rx_out))
        rudp = (tx.returncode, rendered, tx.stderr[-800:])
        summary = tb.stop_emulator()
        # (the workdir goes with the testbed)
        want = sha256(src)
        erap_same = os.path.exists(erap_out) and sha256(erap_out) == want
        ctcp_same = os.path.exists(ctcp_out) and sha256(ctcp_out) == want

    log("erap: sender %d receiver %d, %d GstNetworkCongestion messages" %
        erap[:3])
    expect(erap[0] == 0 and erap[1] == 0,
           "erapsink -> erapsrc over IPv6 ended at EOS (%d, %d) %s",
           erap[0], erap[1], "" if erap[0] == 0 and erap[1] == 0 else erap[3])
    expect(erap_same,
           "ERAP: 2 MB arrived bit-exactly over IPv6")
    ef = flow(summary, ERAP_PORT)
    expect(ef.get("drops", 0) > 0 and erap[2] > 0,
           "ERAP: the link dropped %d packets, the sender reacted %d times",
           ef.get("drops", 0), erap[2])

    expect(ctcp[0] == 0 and ctcp[1] == 0,
           "ctcpsink -> tcpserversrc over IPv6 ended at EOS (%d, %d) %s",
           ctcp[0], ctcp[1], "" if ctcp[0] == 0 and ctcp[1] == 0 else ctcp[2])
    expect(ctcp_same,
           "cTCP: 2 MB arrived bit-exactly over IPv6")

    expect(rudp[0] == 0, "rudpsink over IPv6 ended at EOS (%d) %s", rudp[0],
           "" if rudp[0] == 0 else rudp[2])
    expect(FRAMES * 0.8 <= rudp[1] <= FRAMES,
           "rUDP: %d of %d frames rendered through 1 %% loss", rudp[1], FRAMES)

    for name, port in (("ERAP", ERAP_PORT), ("cTCP", CTCP_PORT),
                       ("rUDP", RUDP_PORT)):
        f = flow(summary, port)
        back = summary["rev"]["flows"].get(str(port), {})
        log("%s flow on the link: %s, back: %s" % (name, f, back))
        expect(f.get("delivered_bytes", 0) >= (SIZE if port != RUDP_PORT
                                                else 1),
               "%s crossed the emulated link (port %d counted)", name, port)
        # ACKs (ERAP, TCP) and the receiver's rate feedback (rUDP)
        expect(back.get("delivered_bytes", 0) > 0,
               "%s: the receiver's answers crossed back (%d bytes)", name,
               back.get("delivered_bytes", 0))


if __name__ == "__main__":
    main(test)
