# SPDX-License-Identifier: LGPL-2.1-or-later
"""The UDP paper's scenario for the net smokes: one case of
experiments/rudp/run.py (same code) and the media flow's share of the
TCP's throughput after the climb from level 0."""

import argparse
import importlib.util
import os
import tempfile

from nettest import expect

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_PY = os.path.join(HERE, "..", "..", "experiments", "rudp", "run.py")
SETTLE_S = 5.0          # the climb from level 0 and TCP's head start


def load_run():
    spec = importlib.util.spec_from_file_location("rudp_run", RUN_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_case(case, duration, src_props=""):
    """Runs @case ("rudp", "rudp-ecn", ...) for @duration s; returns the
    run.py module and the case's result."""
    run = load_run()
    build = os.environ.get("TWOFLOW_BUILD_ROOT") or os.path.join(
        HERE, "..", "..", "build")
    a = argparse.Namespace(build=os.path.abspath(build), seed=1, cc="reno",
                           tcp="bulk", window=15, cbr_rate=800000,
                           duration=duration, src_props=src_props)
    with tempfile.TemporaryDirectory(prefix="twoflow-%s-" % case) as wd:
        return run, run.run_case(case, a, os.path.join(wd, case))


def expect_fair_share(run, r):
    """Expects the media flow's throughput after SETTLE_S within the
    TCP-fair range of the TCP's; returns the TCP's Mbit/s."""
    s = r["series"]
    late = [k for k, t in enumerate(s["t"]) if t > SETTLE_S]
    secs = len(late) * 0.1
    media = sum(s["media_bytes"][k] for k in late) * 8 / secs / 1e6
    tcp = sum(s["tcp_bytes"][k] for k in late) * 8 / secs / 1e6
    share = media / tcp if tcp > 0 else 0.0
    expect(run.SHARE_LO <= share <= run.SHARE_HI,
           "over %.0f .. %.0f s media %.2f Mbit/s vs TCP %.2f Mbit/s: %.2f "
           "of TCP's (%.2f .. %.2f)", SETTLE_S, SETTLE_S + secs, media, tcp,
           share, run.SHARE_LO, run.SHARE_HI)
    return tcp
