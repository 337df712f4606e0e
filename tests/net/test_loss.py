#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Random (Bernoulli) and Gilbert-Elliott burst loss: loss rates within
statistical bounds, burst lengths as the models say, and every missing
packet accounted for by the emulator."""

import math

from nettest import (Testbed, GilbertElliott, expect, main, udp_recv,
                     udp_send, collect)


def bursts(res, sent):
    """Lengths of the runs of missing sequence numbers."""
    got = sorted(p[0] for p in res["packets"])
    runs, prev = [], -1
    for s in got + [sent]:
        if s - prev > 1:
            runs.append(s - prev - 1)
        prev = s
    return runs


def run(n, **link):
    with Testbed(seed=7, **link) as tb:
        rc = udp_recv(tb.client, 9100, "--idle", 1.0)
        sent = udp_send(tb.server, tb.client_ip, 9100, "--rate", 10e6,
                        "--size", 200, "--count", n)["sent"]
        res = collect(rc)
        s = tb.stop_emulator()["fwd"]
    expect(sent == n and res["received"] + s["drops_loss"] == n
           and s["drops_queue"] == 0,
           "%d sent = %d received + %d lost in the emulator", sent,
           res["received"], s["drops_loss"])
    return res, bursts(res, n), s["drops_loss"]


def test():
    # Bernoulli p = 5 %: binomial bounds (4 sigma), bursts mostly single
    n, p = 10000, 0.05
    res, runs, lost = run(n, loss=p)
    sigma = math.sqrt(n * p * (1 - p))
    expect(abs(lost - n * p) < 4 * sigma,
           "random loss: %d of %d (%.2f %%), expected %.0f +- %.0f",
           lost, n, 100.0 * lost / n, n * p, 4 * sigma)
    mean_run = sum(runs) / len(runs)
    expect(abs(mean_run - 1 / (1 - p)) < 0.1,
           "random loss: mean burst %.3f packets (model %.3f)", mean_run,
           1 / (1 - p))

    # Gilbert-Elliott: p(G->B) 1 %, p(B->G) 20 %, bad state loses all:
    # stationary loss p/(p+r) = 4.76 %, mean burst 1/r = 5 packets
    n, gp, gr = 20000, 0.01, 0.2
    res, runs, lost = run(n, ge=GilbertElliott(gp, gr))
    pi = gp / (gp + gr)
    # variance of a two-state Markov chain's occupancy: n pi (1-pi) (1+l)/(1-l)
    lam = 1 - gp - gr
    sigma = math.sqrt(n * pi * (1 - pi) * (1 + lam) / (1 - lam))
    expect(abs(lost - n * pi) < 4 * sigma,
           "burst loss: %d of %d (%.2f %%), expected %.0f +- %.0f",
           lost, n, 100.0 * lost / n, n * pi, 4 * sigma)
    mean_run = sum(runs) / len(runs)
    # runs are geometric with mean 5 and sd ~4.5: 4 sigma of the mean
    bound = 4 * math.sqrt(1 - gr) / gr / math.sqrt(len(runs))
    expect(abs(mean_run - 1 / gr) < bound,
           "burst loss: %d bursts, mean %.2f packets (model %.1f +- %.2f)",
           len(runs), mean_run, 1 / gr, bound)


if __name__ == "__main__":
    main(test)
