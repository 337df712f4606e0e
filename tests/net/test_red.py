#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""RED (ns-2) keeps the average queue between its thresholds with early
drops: no drops while the link keeps up; under a 10 % overload, after the
transient of the rate step, random early drops remove the excess while the
average stays between min_th and max_th (no forced drops there) and the
hard limit (100 packets) is never reached."""

import statistics

from nettest import (Testbed, Red, expect, main, udp_recv, udp_send,
                     collect, log)

MIN_TH, MAX_TH = 5, 15
OFFERED = 10e6


def test():
    # below capacity the link has twice the offered rate: a sender
    # descheduled on a loaded machine comes back with a burst, which a
    # 20 % margin drained so slowly that RED's average passed min_th
    with Testbed(rate_bps=20e6, queue_pkts=100,
                 red=Red(MIN_TH, MAX_TH, weight=0.002, max_p=0.1),
                 schedule=[(3.0, 9e6)], track_ports=[9001]) as tb:
        rc = udp_recv(tb.client, 9001, "--idle", 1.0)
        # a sender descheduled on a loaded machine must not come back
        # with a burst of all it owes: RED's average followed such a burst
        # past max_th (71 forced drops in a CI run)
        udp_send(tb.server, tb.client_ip, 9001, "--rate", OFFERED,
                 "--size", 1000, "--duration", 8.5, "--max-burst", 4)
        res = collect(rc)
        s = tb.stop_emulator()["fwd"]
        rows = tb.read_csv("fwd")

    under = [r for r in rows if 0.8 <= r["time_s"] <= 3.0]
    over = [r for r in rows if 5.0 <= r["time_s"] <= 8.5]
    expect(sum(r["drops_red_early"] + r["drops_red_forced"] +
               r["drops_queue"] for r in under) == 0 and
           max(r["red_avg"] for r in under) < MIN_TH,
           "below capacity: no drops, avg queue <= %.2f < min_th",
           max(r["red_avg"] for r in under))
    early = sum(r["drops_red_early"] for r in over)
    forced = sum(r["drops_red_forced"] for r in over)
    expect(early > 0 and forced == 0 and s["drops_queue"] == 0,
           "overload steady state: %d early drops, %d forced; %d tail drops "
           "in the whole run (%d forced in the step transient)", early,
           forced, s["drops_queue"], s["drops_red_forced"])
    avg = statistics.mean(r["red_avg"] for r in over)
    q = statistics.mean(r["queue_pkts"] for r in over)
    expect(MIN_TH < avg < MAX_TH and max(r["red_avg"] for r in over) < MAX_TH,
           "overload: mean avg queue %.2f (max %.2f) between %d and %d, "
           "mean sampled queue %.1f", avg, max(r["red_avg"] for r in over),
           MIN_TH, MAX_TH, q)
    arrived = sum(r["arrived_pkts"] for r in over)
    dropped = early
    expect(abs(dropped / arrived - 0.1) < 0.02,
           "overload: %.1f %% of arrivals dropped early (excess is 10 %%)",
           100.0 * dropped / arrived)
    # ns-2's count makes the gaps between drops uniform with mean about
    # 1/(2 pb), so a drop rate d needs pb = d/2, which RED reaches at
    # avg = min_th + pb / max_p * (max_th - min_th)
    d = dropped / arrived
    pred = MIN_TH + d / 2 / 0.1 * (MAX_TH - MIN_TH)
    expect(abs(avg - pred) < 1.5, "overload: mean avg queue %.2f, RED law "
           "predicts %.2f for this drop rate", avg, pred)
    red_drops = s["drops_red_early"] + s["drops_red_forced"]
    expect(res["received"] + red_drops == s["arrived_pkts"],
           "receiver got %d = %d arrived - %d dropped", res["received"],
           s["arrived_pkts"], red_drops)
    log("max sampled queue in overload: %d" %
        max(r["queue_max_pkts"] for r in over))


if __name__ == "__main__":
    main(test)
