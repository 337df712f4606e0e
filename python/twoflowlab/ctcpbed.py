# SPDX-License-Identifier: LGPL-2.1-or-later
"""Shared helpers of the cTCP experiments and net tests: run ctcptool
senders (server namespace = the central server) and receivers (client
namespace = the proxy, a stock tcpserversrc) across a Testbed."""

import json
import os
import subprocess

from twoflowlab import PY, SOURCE_ROOT, build_dir, tool_argv
from twoflowlab.testbed import Testbed, Link, SkipTest, check_environment  # noqa: F401

__all__ = ["ROOT", "TOOL", "Testbed", "Link", "SkipTest", "check_environment",
           "setup_env", "receiver", "sender", "result", "interval_rates"]

ROOT = SOURCE_ROOT
TOOL = tool_argv("ctcptool", PY)  # python3 -m twoflowlab.ctcptool


def setup_env(build=None):
    """Points GStreamer at the build's plugins (and the emulator)."""
    build = build_dir(build)
    os.environ["GST_PLUGIN_PATH_1_0"] = os.path.join(build, "gst")
    os.environ["GST_PLUGIN_PATH"] = os.path.join(build, "gst")
    os.environ.setdefault("GST_REGISTRY_1_0",
                          os.path.join(build, "ctcp-experiments-registry.bin"))
    os.environ["TWOFLOW_BUILD_ROOT"] = build
    emu = os.path.join(build, "tools", "linkemu", "twoflow-linkemu")
    if os.path.exists(emu):
        os.environ.setdefault("TWOFLOW_LINKEMU", emu)
    return build


def receiver(tb, port, client=0, duration=None, out=None):
    argv = TOOL + ["recv", "--port", str(port)]
    if duration:
        argv += ["--duration", str(duration)]
    if out:
        argv += ["--out", out]
    p = tb.clients[client].popen(argv, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()         # {"ready": true}: listening
    if "ready" not in line:
        raise RuntimeError("receiver did not start: %r" % line)
    return p


def sender(tb, port, server=0, **opts):
    argv = TOOL + ["send", "--host", tb.clients[0].ip if "client" not in
                   opts else tb.clients[opts.pop("client")].ip, "--port", str(port)]
    for k, v in opts.items():
        if v is None or v is False:
            continue
        argv.append("--" + k.replace("_", "-"))
        if v is not True:
            argv.append(str(v))
    return tb.servers[server].popen(argv, stdout=subprocess.PIPE, text=True)


def result(p, timeout=600):
    out, _ = p.communicate(timeout=timeout)
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1])


def interval_rates(samples, t_start, width, t_stop=None):
    """Goodput (bytes/s) per interval [t_start + k*width, +width) from
    (t, bytes_acked) samples, interpolated at the interval edges."""
    pts = [(s[0], s[1]) for s in samples]
    if not pts:
        return []

    def at(t):
        if t <= pts[0][0]:
            return pts[0][1] if t >= pts[0][0] - 1e-9 else 0
        for (t0, b0), (t1, b1) in zip(pts, pts[1:]):
            if t0 <= t <= t1:
                return b0 + (b1 - b0) * (t - t0) / (t1 - t0)
        return pts[-1][1]
    end = t_stop if t_stop is not None else pts[-1][0]
    rates, k = [], 0
    while t_start + (k + 1) * width <= end + 1e-6:
        a, b = t_start + k * width, t_start + (k + 1) * width
        rates.append((at(b) - at(a)) / width)
        k += 1
    return rates
