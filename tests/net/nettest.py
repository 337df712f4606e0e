# SPDX-License-Identifier: LGPL-2.1-or-later
"""Shared helpers of the `net` test suite (standard library only).

A test script calls nettest.main(fn): argv[1] may name the emulator binary
(meson passes it); exit 77 (skip) without root or netns; 1 on failure.
The testbed is twoflowlab.testbed: meson's test environment puts python/
on PYTHONPATH (by hand: sudo env PYTHONPATH=python python3 tests/net/...).
"""

import json
import os
import subprocess
import sys
import time
import traceback

from twoflowlab import tool_argv
from twoflowlab.testbed import (Testbed, Link, Red, GilbertElliott,
                                SkipTest, check_environment, SKIP)

UDPTOOL = tool_argv("udptool", sys.executable)   # python3 -m twoflowlab.udptool
WIRE = 42                       # Ethernet + IPv4 + UDP header bytes
# udp_send's SCHED_FIFO priority, below the emulator's (10): a paced
# sender held up by a loaded machine catches up in a burst, which the
# tests would take for the link's doing (RED's forced drops under load)
SENDER_RT = 5

__all__ = ["Testbed", "Link", "Red", "GilbertElliott", "UDPTOOL", "WIRE",
           "expect", "main", "udp_recv", "udp_send", "collect", "log"]


class Failure(Exception):
    pass


def log(*args):
    print(*args, flush=True)


def expect(cond, what, *values):
    """Records a named check; raises Failure when it does not hold."""
    msg = what % values if values else what
    log("%s %s" % ("ok  " if cond else "FAIL", msg))
    if not cond:
        raise Failure(msg)


def wait_bound(host, port, proto="udp", timeout=60):
    """Waits until something in host listens on port (udp or tcp): a
    receiver that starts slowly on a loaded machine (gst-launch loading
    its plugins) must have bound before the sender starts."""
    flag = "-Hlnu" if proto == "udp" else "-Hlnt"
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = host.run(["ss", flag, "sport = :%d" % port], check=False)
        if r.stdout.strip():
            return
        time.sleep(0.05)
    raise Failure("nothing bound %s port %d within %d s" % (proto, port,
                                                          timeout))


def udp_recv(host, port, *args):
    """Starts a udptool receiver in host; collect() returns its JSON."""
    p = host.popen(UDPTOOL + ["recv", "--port", str(port)] +
                   [str(a) for a in args], stdout=subprocess.PIPE, text=True)
    wait_bound(host, port)
    return p


def udp_send(host, to, port, *args, timeout=60):
    """Runs a udptool sender in host to completion; returns its JSON."""
    r = host.run(["chrt", "-f", str(SENDER_RT)] + UDPTOOL +
                 ["send", "--to", to, "--port", str(port)] +
                 [str(a) for a in args], timeout=timeout)
    return json.loads(r.stdout)


def collect(p, timeout=60):
    out, _ = p.communicate(timeout=timeout)
    return json.loads(out)


def main(fn):
    if len(sys.argv) > 1:
        os.environ["TWOFLOW_LINKEMU"] = os.path.abspath(sys.argv[1])
    try:
        check_environment()
    except SkipTest as e:
        log("SKIP: %s" % e)
        sys.exit(SKIP)
    t0 = time.monotonic()
    try:
        fn()
    except SkipTest as e:
        log("SKIP: %s" % e)
        sys.exit(SKIP)
    except Failure:
        log("FAILED after %.1f s" % (time.monotonic() - t0))
        sys.exit(1)
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    log("PASS (%.1f s)" % (time.monotonic() - t0))
    sys.exit(0)
