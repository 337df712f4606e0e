#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""ERAP across the emulated WAN (about 10 s).

4 MB in 1316-byte buffers from `filesrc ! erapsink` in the server
namespace to `erapsrc ! filesink` in the client namespace, over a
20 Mbit/s bottleneck with 10 ms each way, a 50-packet queue and 2 %
random loss on the data path:
* the file arrives bit-exactly (reliability through loss, on veths);
* the sender lost and resent packets and reacted to the losses;
* erapsink's runs of equal-sized packets (UDP_SEGMENT) reach the link
  as single packets, never as one oversize datagram, on these veths
  whose offloads are off (the kernel segments them; where it refuses
  the sink falls back to one datagram per packet, logged at INFO)."""

import hashlib
import os
import subprocess
import time

from nettest import Testbed, expect, main, log, wait_bound

PORT = 7000
SIZE = 4 * 1000 * 1000


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test():
    build = os.environ.get("TWOFLOW_BUILD_ROOT")
    env = dict(os.environ)
    if build and "GST_PLUGIN_PATH_1_0" not in env:
        env["GST_PLUGIN_PATH_1_0"] = os.path.join(build, "gst")
    with Testbed(rate_bps=20e6, delay_ms=10, queue_pkts=50, loss=0.02,
                 track_ports=[PORT]) as tb:
        src = os.path.join(tb.workdir, "in.bin")
        dst = os.path.join(tb.workdir, "out.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(SIZE))
        rx = tb.client.popen(["gst-launch-1.0", "-q", "erapsrc",
                              "port=%d" % PORT, "!", "filesink",
                              "location=" + dst], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        wait_bound(tb.client, PORT)
        tx_env = dict(env, GST_DEBUG="erapsink:4", GST_DEBUG_NO_COLOR="1")
        t0 = time.monotonic()
        tx = tb.server.run(["gst-launch-1.0", "-m", "filesrc",
                            "location=" + src, "blocksize=1316", "!",
                            "erapsink", "name=s", "host=" + tb.client_ip,
                            "port=%d" % PORT], env=tx_env, timeout=60)
        secs = time.monotonic() - t0
        out, _ = rx.communicate(timeout=20)
        summary = tb.stop_emulator()
        got = os.path.getsize(dst) if os.path.exists(dst) else -1
        same = got == SIZE and sha256(dst) == sha256(src)
        if not same:
            log("received %d of %d bytes; receiver said: %s" % (got, SIZE, out[-500:]))
            log("sender stderr: " + tx.stderr[-1500:])

    log("sender exit %d after %.1f s; receiver exit %d" % (
        tx.returncode, secs, rx.returncode))
    expect(tx.returncode == 0 and rx.returncode == 0,
           "both pipelines ended at EOS (sender %d, receiver %d)",
           tx.returncode, rx.returncode)
    expect(same, "4 MB arrived bit-exactly through 2 % loss")
    lost = summary["fwd"]["drops_loss"]
    expect(lost > 0, "the link dropped %d data packets", lost)
    expect(summary["oversize"] == [0, 0],
           "no datagram above the MTU reached the link (oversize %s)",
           summary["oversize"])
    log("sink INFO lines: %d, UDP_SEGMENT fallback: %s" % (
        tx.stderr.count("erapsink"), "UDP_SEGMENT refused" in tx.stderr))
    reactions = tx.stdout.count("GstNetworkCongestion")
    expect(reactions > 0, "the sender reacted to the losses (%d "
           "GstNetworkCongestion messages)", reactions)


if __name__ == "__main__":
    main(test)
