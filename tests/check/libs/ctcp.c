/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — unit tests of the cTCP sans-IO core (virtual clock, synthetic
 * TCP_INFO snapshots)
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#include <string.h>
#include <gst/check/gstcheck.h>
#include <gst/ctcp/ctcp.h>
#include <gst/twoflow/twoflowstartup.h>

#define MS GST_MSECOND
#define S GST_SECOND

/* ---- formulas ---- */

GST_START_TEST (test_target_rate)
{
  /* S/(T(1-p)): 1 MB in 100 s with p = 0.05 */
  fail_unless_equals_uint64 (gst_ctcp_target_rate (1000000, 100 * S, 0.05),
      10527);
  fail_unless_equals_uint64 (gst_ctcp_target_rate (950000, 100 * S, 0.05),
      10000);
  fail_unless_equals_uint64 (gst_ctcp_target_rate (1000, S, 0.0), 1000);
  fail_unless_equals_uint64 (gst_ctcp_target_rate (0, S, 0.05), 0);
}

GST_END_TEST;

GST_START_TEST (test_window_target)
{
  /* target·RTT/MSS = 1e6 · 0.1 / 1000 = 100 packets */
  fail_unless_equals_int (gst_ctcp_window_target (1000000, 100 * MS, 1000,
          FALSE), 100);
  /* losses: /0.75 -> 133.3, rounded up */
  fail_unless_equals_int (gst_ctcp_window_target (1000000, 100 * MS, 1000,
          TRUE), 134);
  /* tiny windows stay at 2 packets */
  fail_unless_equals_int (gst_ctcp_window_target (13000, 80 * MS, 1448,
          FALSE), 2);
}

GST_END_TEST;

/* ---- controller ---- */

static GstCtcpTcpInfo
info_new (guint32 rtt_us, guint32 cwnd, guint32 total_retrans)
{
  GstCtcpTcpInfo i = { 0, };

  i.snd_mss = 1000;
  i.rtt_us = rtt_us;
  i.snd_cwnd = cwnd;
  i.total_retrans = total_retrans;
  i.has_total_rto = TRUE;
  return i;
}

GST_START_TEST (test_controller_intervals)
{
  GstCtcpController c;
  GstClockTime t;
  GstCtcpTcpInfo i;

  gst_ctcp_controller_init (&c, TRUE, 8 * S);
  gst_ctcp_controller_set_target (&c, 1000000, 0);
  /* no window before the first interval ends */
  fail_unless_equals_uint64 (gst_ctcp_controller_window_bytes (&c),
      G_MAXUINT64);

  /* first interval: RTT 80 ms then 120 ms (mean 100), no loss */
  for (t = 0; t < 8 * S; t += 20 * MS) {
    i = info_new (t < 4 * S ? 80000 : 120000, 1000, 0);
    gst_ctcp_controller_update (&c, &i, t);
  }
  fail_unless_equals_int (c.w_target, 0);
  i = info_new (120000, 1000, 0);
  gst_ctcp_controller_update (&c, &i, 8 * S);
  /* RTT = 95th percentile of the readings (120 ms), not their mean:
   * 1e6 · 0.12 / 1000 = 120 packets, + 1 for the delayed ACK */
  fail_unless_equals_uint64 (c.w_rtt, 120 * MS);
  fail_unless_equals_int (c.w_target, 120 + GST_CTCP_WINDOW_ALLOWANCE);
  fail_unless_equals_uint64 (c.adjustments, 1);
  fail_unless_equals_uint64 (gst_ctcp_controller_window_bytes (&c),
      c.w_target * 1000);

  /* second interval: RTT 100 ms, one retransmission -> /0.75 */
  for (t = 8 * S + 20 * MS; t <= 16 * S; t += 20 * MS) {
    i = info_new (100000, 1000, t > 12 * S ? 1 : 0);
    gst_ctcp_controller_update (&c, &i, t);
  }
  fail_unless_equals_int (c.w_target, 134 + 1);
  /* a new target (next segment, catch-up) resizes the window at once,
   * with the RTT and losses of the interval it was sized from */
  gst_ctcp_controller_set_target (&c, 2000000, 16 * S + 10 * MS);
  fail_unless_equals_int (c.w_target, 267 + 1);
  gst_ctcp_controller_set_target (&c, 1000000, 16 * S + 10 * MS);
  fail_unless_equals_int (c.w_target, 134 + 1);

  /* third interval: no new loss -> back to 100 */
  for (t = 16 * S + 20 * MS; t <= 24 * S; t += 20 * MS) {
    i = info_new (100000, 1000, 1);
    gst_ctcp_controller_update (&c, &i, t);
  }
  fail_unless_equals_int (c.w_target, 100 + 1);

  /* effective window = min(cwnd, W_target) */
  i = info_new (100000, 40, 1);
  gst_ctcp_controller_update (&c, &i, 24 * S + 20 * MS);
  fail_unless_equals_uint64 (gst_ctcp_controller_window_bytes (&c), 40000);

  /* plain TCP has neither window nor pacing */
  gst_ctcp_controller_init (&c, FALSE, 8 * S);
  gst_ctcp_controller_set_target (&c, 1000, 0);
  for (t = 0; t <= 9 * S; t += 20 * MS) {
    i = info_new (100000, 10, 0);
    gst_ctcp_controller_update (&c, &i, t);
  }
  fail_unless_equals_uint64 (gst_ctcp_controller_window_bytes (&c),
      G_MAXUINT64);
  fail_unless_equals_uint64 (gst_ctcp_controller_allowance (&c, 1 << 30,
          1 << 30, 9 * S), G_MAXUINT64);
}

GST_END_TEST;

GST_START_TEST (test_rtt_histogram)
{
  GstCtcpRttHistogram h;
  GstClockTime p;
  guint k;

  gst_ctcp_rtt_histogram_reset (&h);
  fail_if (GST_CLOCK_TIME_IS_VALID (gst_ctcp_rtt_histogram_percentile (&h,
              0.95)));
  /* 100 readings 400..598 ms: the 95th is 588 ms, within one bucket */
  for (k = 0; k < 100; k++)
    gst_ctcp_rtt_histogram_add (&h, 400000 + 2000 * k);
  p = gst_ctcp_rtt_histogram_percentile (&h, 0.95);
  fail_unless (p >= 588 * MS && p <= 598 * MS, "%" GST_TIME_FORMAT,
      GST_TIME_ARGS (p));
  /* never above the largest reading */
  fail_unless_equals_uint64 (gst_ctcp_rtt_histogram_percentile (&h, 1.0),
      598 * MS);
  p = gst_ctcp_rtt_histogram_percentile (&h, 0.0);
  fail_unless (p >= 400 * MS && p <= 418 * MS);
  fail_unless_equals_uint64 (h.sum_us / h.n, 499000);
  /* loopback RTTs of tens of microseconds and a 0 (no sample) */
  gst_ctcp_rtt_histogram_reset (&h);
  gst_ctcp_rtt_histogram_add (&h, 0);
  gst_ctcp_rtt_histogram_add (&h, 30);
  fail_unless_equals_int (h.n, 1);
  fail_unless_equals_uint64 (gst_ctcp_rtt_histogram_percentile (&h, 0.95),
      30 * GST_USECOND);
}

GST_END_TEST;

/* The RTT swings between 0.4 and 0.6 s (a competitor's queue): a window
 * sized from the mean RTT delivers less than the target, one sized from
 * the 95th percentile delivers it. Throughput of a window W packets at RTT
 * r: min(target, W·MSS/r), the pacer being the limit when the window is
 * not. */
GST_START_TEST (test_window_rtt_swings)
{
  GstCtcpController c;
  GstCtcpTcpInfo i;
  GstClockTime t;
  /* target·0.5 s/MSS = 5 packets exactly: no rounding headroom */
  const guint64 target = 14480;
  gdouble sent_model = 0, sent = 0, secs = 0;
  guint32 w_mean;

  gst_ctcp_controller_init (&c, TRUE, 8 * S);
  gst_ctcp_controller_set_target (&c, target, 0);
  for (t = 0; t <= 8 * S; t += 50 * MS) {
    /* triangle wave 0.4 .. 0.6 s, period 2 s */
    guint32 ph = (t / (50 * MS)) % 40;
    guint32 rtt = 400000 + 10000 * (ph < 20 ? ph : 40 - ph);

    i = info_new (rtt, 100, 0);
    i.snd_mss = 1448;
    gst_ctcp_controller_update (&c, &i, t);
  }
  fail_unless_equals_uint64 (c.adjustments, 1);
  /* the paper's formula with the interval's mean RTT (0.5 s): 5 packets;
   * from the 95th percentile (~0.59 s): 6, + 1 */
  w_mean = gst_ctcp_window_target (target, 500 * MS, 1448, FALSE);
  fail_unless_equals_int (w_mean, 5);
  fail_unless_equals_int (c.w_target, 6 + GST_CTCP_WINDOW_ALLOWANCE);
  for (t = 0; t < 8 * S; t += 50 * MS) {
    guint32 ph = (t / (50 * MS)) % 40;
    gdouble r = 0.4 + 0.01 * (ph < 20 ? ph : 40 - ph);

    sent_model += MIN ((gdouble) target, w_mean * 1448 / r) * 0.05;
    sent += MIN ((gdouble) target, c.w_target * 1448 / r) * 0.05;
    secs += 0.05;
  }
  /* mean-RTT window: below target; robust window: at target */
  fail_unless (sent_model / secs < 0.97 * target, "%f", sent_model / secs);
  fail_unless (sent / secs >= 0.999 * target, "%f (W %u)", sent / secs,
      c.w_target);
}

GST_END_TEST;

/* Small windows: the delayed-ACK allowance keeps W_target·MSS/RTT above
 * the target when the model gives 2 packets (Fig. 9's 27 kB/s flow). */
GST_START_TEST (test_window_small)
{
  GstCtcpController c;
  GstCtcpTcpInfo i;
  GstClockTime t;

  gst_ctcp_controller_init (&c, TRUE, 8 * S);
  gst_ctcp_controller_set_target (&c, 27000, 0);
  for (t = 0; t <= 8 * S; t += 25 * MS) {
    i = info_new (104000, 10, 0);
    i.snd_mss = 1448;
    gst_ctcp_controller_update (&c, &i, t);
  }
  /* model: 27000 · 0.104 / 1448 = 1.94 -> 2; with the allowance 3 */
  fail_unless_equals_int (gst_ctcp_window_target (27000, 104 * MS, 1448,
          FALSE), 2);
  fail_unless_equals_int (c.w_target, 3);
  fail_unless (c.w_target * 1448 / 0.104 > 1.4 * 27000);
}

GST_END_TEST;

/* A sender that writes whatever the controller allows, in packets, with
 * the socket's queue drained at a fixed link rate. */
GST_START_TEST (test_controller_pacing)
{
  GstCtcpController c;
  GstClockTime t = 0, next;
  guint64 written = 0, wakeups = 0;

  gst_ctcp_controller_init (&c, TRUE, 8 * S);
  c.mss = 1000;
  gst_ctcp_controller_set_target (&c, 100000, 0);
  while (t < 10 * S) {
    guint64 allow = gst_ctcp_controller_allowance (&c, 0, 0, t);

    while (allow >= 1000) {
      gst_ctcp_controller_consume (&c, 1000);
      written += 1000;
      allow -= 1000;
    }
    next = gst_ctcp_controller_pace_wakeup (&c, 1000, t);
    fail_unless (next > t);
    t = next;
    wakeups++;
  }
  /* 10 s at 100 kB/s, paced one packet per wakeup */
  fail_unless (written >= 999000 && written <= 1001000, "%" G_GUINT64_FORMAT,
      written);
  fail_unless (wakeups >= 999 && wakeups <= 1001);

  /* held back by the window for 5 s: at most one second is banked */
  gst_ctcp_controller_allowance (&c, 0, 0, t);
  c.w_target = 10;
  c.cwnd = 100;
  fail_unless_equals_uint64 (gst_ctcp_controller_allowance (&c, 10000, 0,
          t + 5 * S), 0);
  /* the window bounds in-flight bytes; one write may wait unsent */
  fail_unless_equals_uint64 (gst_ctcp_controller_allowance (&c, 9500, 0,
          t + 5 * S), 500);
  fail_unless_equals_uint64 (gst_ctcp_controller_allowance (&c, 4000, 0,
          t + 5 * S), 1000);
  fail_unless_equals_uint64 (gst_ctcp_controller_allowance (&c, 4000, 1000,
          t + 5 * S), 0);
  fail_unless_equals_uint64 (gst_ctcp_controller_allowance (&c, 4000, 400,
          t + 5 * S), 600);
  c.w_target = 0;
  /* at most one second was banked */
  fail_unless (c.tokens <= 100000 && c.tokens >= 99000);

  /* no target: nothing may be sent, no pacing wakeup */
  gst_ctcp_controller_init (&c, TRUE, 8 * S);
  fail_unless_equals_uint64 (gst_ctcp_controller_allowance (&c, 0, 0, 0), 0);
  fail_if (GST_CLOCK_TIME_IS_VALID (gst_ctcp_controller_pace_wakeup (&c,
              1000, 0)));
}

GST_END_TEST;

GST_START_TEST (test_poll_interval)
{
  fail_unless_equals_uint64 (gst_ctcp_poll_interval (80 * MS), 20 * MS);
  fail_unless_equals_uint64 (gst_ctcp_poll_interval (GST_USECOND * 50),
      GST_MSECOND);
  fail_unless_equals_uint64 (gst_ctcp_poll_interval (2 * S), 50 * MS);
  fail_unless_equals_uint64 (gst_ctcp_poll_interval (GST_CLOCK_TIME_NONE),
      10 * MS);
}

GST_END_TEST;

/* ---- event detector ---- */

typedef struct {
  GstClockTime t;
  guint8 ca;
  guint8 retransmits;
  guint16 total_rto;
  guint32 total_retrans;
  const gchar *expect;          /* events, space separated */
  guint32 ssthresh;             /* 0: unknown */
} Step;

static void
run_steps_rtt (const Step * steps, guint n, gboolean has_total_rto,
    guint32 rtt_us)
{
  GstCtcpEventDetector d;
  guint i, k;

  gst_ctcp_event_detector_init (&d);
  for (i = 0; i < n; i++) {
    GstCtcpTcpInfo info = { 0, };
    GstNetworkCongestionType ev[GST_CTCP_MAX_EVENTS];
    GString *got = g_string_new (NULL);

    info.ca_state = steps[i].ca;
    info.retransmits = steps[i].retransmits;
    info.total_rto = steps[i].total_rto;
    info.total_retrans = steps[i].total_retrans;
    info.has_total_rto = has_total_rto;
    info.rtt_us = rtt_us;
    info.snd_cwnd = 10;
    info.snd_ssthresh = steps[i].ssthresh;
    k = gst_ctcp_event_detector_push (&d, &info, steps[i].t, ev);
    for (guint j = 0; j < k; j++)
      g_string_append_printf (got, "%s%s", j ? " " : "",
          gst_network_congestion_type_to_string (ev[j]));
    fail_unless (g_str_equal (got->str, steps[i].expect),
        "step %u: got '%s', expected '%s'", i, got->str, steps[i].expect);
    g_string_free (got, TRUE);
  }
}

static void
run_steps (const Step * steps, guint n, gboolean has_total_rto)
{
  run_steps_rtt (steps, n, has_total_rto, 40000);
}

#define T(ms) ((ms) * MS)

GST_START_TEST (test_events_fast_recovery)
{
  const Step s[] = {
    {T (0), GST_CTCP_CA_OPEN, 0, 0, 0, ""},
    {T (10), GST_CTCP_CA_DISORDER, 0, 0, 0, ""},
    {T (20), GST_CTCP_CA_RECOVERY, 0, 0, 1, "dupack"},
    {T (30), GST_CTCP_CA_RECOVERY, 0, 0, 1, ""},
    {T (40), GST_CTCP_CA_OPEN, 0, 0, 1, "recovered"},
    {T (50), GST_CTCP_CA_OPEN, 0, 0, 1, ""},
    /* a tail loss probe retransmits without any recovery: no event */
    {T (60), GST_CTCP_CA_OPEN, 0, 0, 2, ""},
    /* a late poll: more retransmissions than the probes that fit in
     * 140 ms (1 + 140/(2·40 + 2)) tell of a recovery between the
     * snapshots */
    {T (200), GST_CTCP_CA_OPEN, 0, 0, 5, "dupack recovered"},
    /* two probes in 200 ms are no recovery */
    {T (400), GST_CTCP_CA_OPEN, 0, 0, 7, ""},
  };
  /* with ssthresh known: a cut of it with a retransmission is a recovery
   * even if the poll was on time */
  const Step c[] = {
    {T (0), GST_CTCP_CA_OPEN, 0, 0, 0, "", 0x7fffffff},
    {T (10), GST_CTCP_CA_OPEN, 0, 0, 1, "", 0x7fffffff},
    {T (20), GST_CTCP_CA_OPEN, 0, 0, 2, "dupack recovered", 7},
    /* leaving slow start (HyStart: ssthresh = cwnd, no cut below it) */
    {T (30), GST_CTCP_CA_OPEN, 0, 0, 3, "", 10},
    /* a cut without a retransmission (ECN, local congestion: CWR) */
    {T (40), GST_CTCP_CA_OPEN, 0, 0, 3, "", 5},
  };
  run_steps (s, G_N_ELEMENTS (s), TRUE);
  run_steps (c, G_N_ELEMENTS (c), TRUE);
}

GST_END_TEST;

GST_START_TEST (test_events_timeouts)
{
  const Step s[] = {
    {T (0), GST_CTCP_CA_OPEN, 0, 0, 0, ""},
    {T (300), GST_CTCP_CA_LOSS, 1, 1, 1, "rexmt"},
    {T (310), GST_CTCP_CA_LOSS, 1, 1, 1, ""},
    /* backed-off RTOs during an outage: one rexmt each */
    {T (700), GST_CTCP_CA_LOSS, 2, 2, 2, "rexmt"},
    {T (1500), GST_CTCP_CA_LOSS, 3, 4, 4, "rexmt rexmt"},
    {T (1600), GST_CTCP_CA_OPEN, 0, 4, 4, "recovered"},
    /* a whole RTO episode between two polls */
    {T (1700), GST_CTCP_CA_OPEN, 0, 5, 5, "rexmt recovered"},
    /* fast recovery that fails into a timeout: one recovered at the end */
    {T (1710), GST_CTCP_CA_RECOVERY, 0, 5, 6, "dupack"},
    {T (1900), GST_CTCP_CA_LOSS, 1, 6, 7, "rexmt"},
    {T (1910), GST_CTCP_CA_OPEN, 0, 6, 7, "recovered"},
  };
  run_steps (s, G_N_ELEMENTS (s), TRUE);
}

GST_END_TEST;

/* Kernels before 6.7 have no tcpi_total_rto: tcpi_retransmits counts */
GST_START_TEST (test_events_old_kernel)
{
  const Step s[] = {
    {T (0), GST_CTCP_CA_OPEN, 0, 0, 0, ""},
    {T (300), GST_CTCP_CA_LOSS, 1, 0, 1, "rexmt"},
    {T (900), GST_CTCP_CA_LOSS, 3, 0, 3, "rexmt rexmt"},
    {T (950), GST_CTCP_CA_OPEN, 0, 0, 3, "recovered"},
    {T (960), GST_CTCP_CA_RECOVERY, 0, 0, 4, "dupack"},
    {T (970), GST_CTCP_CA_DISORDER, 0, 0, 4, "recovered"},
  };
  run_steps (s, G_N_ELEMENTS (s), FALSE);
}

GST_END_TEST;

/* Loopback: the RTT (50 us) is far below the 1 ms poll floor, so every
 * poll is "later than one RTT". Tail-loss probes are no recovery; only
 * more retransmissions than probes can account for, or a cut of ssthresh,
 * are. */
GST_START_TEST (test_events_loopback)
{
  const Step s[] = {
    {T (0), GST_CTCP_CA_OPEN, 0, 0, 0, "", 0x7fffffff},
    {T (1), GST_CTCP_CA_OPEN, 0, 0, 1, "", 0x7fffffff},
    {T (2), GST_CTCP_CA_OPEN, 0, 0, 1, "", 0x7fffffff},
    {T (3), GST_CTCP_CA_OPEN, 0, 0, 2, "", 0x7fffffff},
    {T (4), GST_CTCP_CA_OPEN, 0, 0, 3, "", 0x7fffffff},
    /* a thread stalled 20 ms: up to 1 + 20/2.1 = 10 probes */
    {T (24), GST_CTCP_CA_OPEN, 0, 0, 12, "", 0x7fffffff},
    /* 6 retransmissions in 1 ms: a recovery */
    {T (25), GST_CTCP_CA_OPEN, 0, 0, 18, "dupack recovered", 0x7fffffff},
    /* one retransmission and a halved ssthresh: a recovery */
    {T (26), GST_CTCP_CA_OPEN, 0, 0, 19, "dupack recovered", 5},
    /* a recovery seen as such: no double counting */
    {T (27), GST_CTCP_CA_RECOVERY, 0, 0, 20, "dupack", 3},
    {T (28), GST_CTCP_CA_OPEN, 0, 0, 20, "recovered", 3},
    {T (29), GST_CTCP_CA_OPEN, 0, 0, 21, "", 3},
  };
  GstClockTime g;

  run_steps_rtt (s, G_N_ELEMENTS (s), TRUE, 50);
  fail_unless_equals_int (gst_ctcp_tlp_allowance (MS, 50 * GST_USECOND), 1);
  fail_unless_equals_int (gst_ctcp_tlp_allowance (20 * MS,
          50 * GST_USECOND), 10);
  fail_unless_equals_int (gst_ctcp_tlp_allowance (100 * MS, 40 * MS), 2);
  g = GST_CLOCK_TIME_NONE;
  fail_unless_equals_int (gst_ctcp_tlp_allowance (g, g), 1);
}

GST_END_TEST;

GST_START_TEST (test_events_counts)
{
  GstCtcpEventDetector d;
  GstNetworkCongestionType ev[GST_CTCP_MAX_EVENTS];
  GstCtcpTcpInfo i = { 0, };
  guint n;

  gst_ctcp_event_detector_init (&d);
  /* joining during a recovery reports it */
  i.ca_state = GST_CTCP_CA_RECOVERY;
  n = gst_ctcp_event_detector_push (&d, &i, 0, ev);
  fail_unless_equals_int (n, 1);
  fail_unless_equals_int (ev[0], GST_NETWORK_CONGESTION_DUPACK);
  /* a huge RTO jump reports a bounded number of events */
  i.ca_state = GST_CTCP_CA_LOSS;
  i.has_total_rto = TRUE;
  i.total_rto = 0;
  gst_ctcp_event_detector_push (&d, &i, MS, ev);
  i.total_rto = 1000;
  n = gst_ctcp_event_detector_push (&d, &i, 2 * MS, ev);
  fail_unless (n <= GST_CTCP_MAX_EVENTS);
  i.ca_state = GST_CTCP_CA_OPEN;
  n = gst_ctcp_event_detector_push (&d, &i, 3 * MS, ev);
  fail_unless_equals_int (n, 1);
  fail_unless_equals_uint64 (d.dupack, 1);
  fail_unless_equals_uint64 (d.recovered, 1);
  fail_unless (d.rexmt >= 1);
}

GST_END_TEST;

/* ---- segments and deadlines ---- */

GST_START_TEST (test_schedule)
{
  GstCtcpSchedule s;
  GstCtcpSegment *seg;

  gst_ctcp_schedule_init (&s, 10 * S);
  /* segment 3 is the first: ready at 100 s, due at 110 s */
  seg = gst_ctcp_schedule_add (&s, 3, 0, 100 * S);
  fail_unless_equals_uint64 (seg->deadline, 110 * S);
  gst_ctcp_schedule_complete (&s, 95000, GST_CLOCK_TIME_NONE);
  /* S/(T(1-p)): 95000 / (10 · 0.95) */
  fail_unless_equals_uint64 (gst_ctcp_schedule_segment_rate (&s,
          gst_ctcp_schedule_last (&s), 0.05, 4.0, 100 * S), 10000);
  /* started 5 s late: the rest of the time counts */
  fail_unless_equals_uint64 (gst_ctcp_schedule_segment_rate (&s,
          gst_ctcp_schedule_last (&s), 0.05, 4.0, 105 * S), 20000);
  /* ... but never less than T/max-catch-up */
  fail_unless_equals_uint64 (gst_ctcp_schedule_segment_rate (&s,
          gst_ctcp_schedule_last (&s), 0.05, 4.0, 200 * S), 40000);
  fail_unless_equals_uint64 (gst_ctcp_schedule_segment_rate (&s,
          gst_ctcp_schedule_last (&s), 0.05, 2.0, 200 * S), 20000);
  /* catch-up off: always the paper's S/(T(1-p)) */
  fail_unless_equals_uint64 (gst_ctcp_schedule_segment_rate (&s,
          gst_ctcp_schedule_last (&s), 0.05, 1.0, 105 * S), 10000);

  seg = gst_ctcp_schedule_add (&s, 4, 95000, 101 * S);
  fail_unless_equals_uint64 (seg->deadline, 120 * S);
  fail_unless_equals_int (gst_ctcp_schedule_acked (&s, 94999, 108 * S), 0);
  fail_unless_equals_int (gst_ctcp_schedule_acked (&s, 95000, 109 * S), 1);
  /* the open segment is never done */
  fail_unless_equals_int (gst_ctcp_schedule_acked (&s, 500000, 110 * S), 0);
  /* last segment of a stream: 4 s long */
  gst_ctcp_schedule_complete (&s, 135000, 4 * S);
  fail_unless_equals_uint64 (gst_ctcp_schedule_last (&s)->duration, 4 * S);
  /* gap in numbering (segment 6): its own slot */
  seg = gst_ctcp_schedule_add (&s, 6, 135000, 111 * S);
  fail_unless_equals_uint64 (seg->deadline, 140 * S);
  gst_ctcp_schedule_complete (&s, 136000, 1 * S);
  fail_unless_equals_int (gst_ctcp_schedule_acked (&s, 136000, 125 * S), 2);

  seg = &g_array_index (s.segments, GstCtcpSegment, 0);
  fail_unless_equals_int64 (seg->slack, 1 * S);
  seg = &g_array_index (s.segments, GstCtcpSegment, 1);
  fail_unless_equals_int64 (seg->slack, -5 * (gint64) S);
  seg = &g_array_index (s.segments, GstCtcpSegment, 2);
  fail_unless_equals_int64 (seg->slack, 15 * S);
  fail_unless_equals_uint64 (s.segments_done, 3);
  fail_unless_equals_uint64 (s.segments_late, 1);
  fail_unless_equals_int64 (s.min_slack, -5 * (gint64) S);
  gst_ctcp_schedule_clear (&s);
}

GST_END_TEST;

/* Deadline awareness: the rate a segment needs from its residual bytes and
 * time, bounded. */
GST_START_TEST (test_required_rate)
{
  GstCtcpSchedule s;
  GstCtcpSegment *seg;
  guint64 r;

  gst_ctcp_schedule_init (&s, 10 * S);
  seg = gst_ctcp_schedule_add (&s, 0, 0, 0);
  gst_ctcp_schedule_complete (&s, 95000, GST_CLOCK_TIME_NONE);
  seg->nominal_rate = gst_ctcp_target_rate (95000, 10 * S, 0.05);
  seg->target_rate = gst_ctcp_schedule_segment_rate (&s, seg, 0.05, 4.0, 0);
  fail_unless_equals_uint64 (seg->target_rate, 10000);
  /* on schedule (half acknowledged at 4 s): the constant rate */
  fail_unless_equals_uint64 (gst_ctcp_schedule_required_rate (&s, seg,
          47500, 100 * MS, 0.05, 4.0, 4 * S), 10000);
  /* ahead: still the constant rate (never slower) */
  fail_unless_equals_uint64 (gst_ctcp_schedule_required_rate (&s, seg,
          90000, 100 * MS, 0.05, 4.0, 2 * S), 10000);
  /* behind: 57000 left at 5 s, 5 s - 2 RTT = 4.8 s left:
   * 57000 / (4.8 · 0.95) = 12500, on a 1/64-of-nominal grid */
  r = gst_ctcp_schedule_required_rate (&s, seg, 38000, 100 * MS, 0.05, 4.0,
      5 * S);
  fail_unless (r >= 12500 && r < 12500 + 10000 / 64 + 1, "%" G_GUINT64_FORMAT,
      r);
  fail_unless_equals_uint64 (r % (10000 / 64), 0);
  /* far behind: bounded by max-catch-up x nominal */
  fail_unless_equals_uint64 (gst_ctcp_schedule_required_rate (&s, seg,
          0, 100 * MS, 0.05, 4.0, 8 * S), 40000);
  /* past the deadline: the bound */
  fail_unless_equals_uint64 (gst_ctcp_schedule_required_rate (&s, seg,
          90000, 100 * MS, 0.05, 4.0, 11 * S), 40000);
  /* catch-up off */
  fail_unless_equals_uint64 (gst_ctcp_schedule_required_rate (&s, seg,
          0, 100 * MS, 0.05, 1.0, 8 * S), 10000);
  /* all acknowledged */
  fail_unless_equals_uint64 (gst_ctcp_schedule_required_rate (&s, seg,
          95000, 100 * MS, 0.05, 4.0, 9 * S), 10000);
  gst_ctcp_schedule_clear (&s);
}

GST_END_TEST;

/* Virtual clock: a segment of 95 kB due in 10 s (nominal 10 kB/s) whose
 * first 4 s are held to 5 kB/s (cwnd after losses against a competitor),
 * then 30 kB/s are available. The controller's pacer and window decide
 * what is written every 10 ms; acknowledgements come one RTT later. With
 * catch-up the segment lands before its deadline; at the paper's constant
 * rate it is late. */
static GstClockTime
simulate_segment (gdouble max_catch_up, guint64 * peak_rate)
{
  GstCtcpSchedule s;
  GstCtcpSegment *seg;
  GstCtcpController c;
  GstCtcpTcpInfo info;
  const GstClockTime rtt = 100 * MS, dt = 10 * MS;
  guint64 written = 0, acked = 0, hist[16] = { 0, };
  gdouble avail_tokens = 0;
  GstClockTime t, done = GST_CLOCK_TIME_NONE;

  gst_ctcp_schedule_init (&s, 10 * S);
  seg = gst_ctcp_schedule_add (&s, 0, 0, 0);
  gst_ctcp_schedule_complete (&s, 95000, GST_CLOCK_TIME_NONE);
  seg->nominal_rate = gst_ctcp_target_rate (95000, 10 * S, 0.05);
  seg->target_rate = gst_ctcp_schedule_segment_rate (&s, seg, 0.05,
      max_catch_up, 0);
  gst_ctcp_controller_init (&c, TRUE, S);
  gst_ctcp_controller_set_target (&c, seg->target_rate, 0);
  *peak_rate = 0;
  for (t = 0; t < 20 * S && !GST_CLOCK_TIME_IS_VALID (done); t += dt) {
    guint64 allow, inflight, rate;
    gdouble link = t < 4 * S ? 5000 : 30000;

    /* acknowledged: what was written one RTT ago */
    acked = hist[(t / dt) % 10];
    info = info_new (rtt / GST_USECOND, 1000, 0);
    info.snd_mss = 1000;
    gst_ctcp_controller_update (&c, &info, t);
    if (gst_ctcp_schedule_acked (&s, acked, t))
      done = t;
    rate = gst_ctcp_schedule_required_rate (&s, seg, acked, rtt, 0.05,
        max_catch_up, t);
    gst_ctcp_controller_set_target (&c, rate, t);
    *peak_rate = MAX (*peak_rate, rate);
    /* the network takes at most `link` B/s */
    avail_tokens = MIN (avail_tokens + link * dt / GST_SECOND, 2000.0);
    inflight = written - acked;
    allow = gst_ctcp_controller_allowance (&c, inflight, 0, t);
    allow = MIN (allow, (guint64) avail_tokens);
    allow = MIN (allow, 95000 - written);
    gst_ctcp_controller_consume (&c, allow);
    avail_tokens -= allow;
    written += allow;
    hist[(t / dt) % 10] = written;
  }
  gst_ctcp_schedule_clear (&s);
  return done;
}

GST_START_TEST (test_catch_up_virtual_clock)
{
  GstClockTime done;
  guint64 peak;

  done = simulate_segment (4.0, &peak);
  fail_unless (GST_CLOCK_TIME_IS_VALID (done) && done < 10 * S,
      "with catch-up done at %" GST_TIME_FORMAT, GST_TIME_ARGS (done));
  fail_unless (peak > 10000 && peak <= 40000, "%" G_GUINT64_FORMAT, peak);
  done = simulate_segment (1.0, &peak);
  fail_unless (GST_CLOCK_TIME_IS_VALID (done) && done > 10 * S,
      "without catch-up done at %" GST_TIME_FORMAT, GST_TIME_ARGS (done));
  fail_unless_equals_uint64 (peak, 10000);
}

GST_END_TEST;

/* ---- the sender (GstCtcpSender) on a virtual clock ---- */

/* An ideal link under the sender: what is written leaves at once and is
 * acknowledged one RTT later; TCP_INFO is read at every wakeup, as
 * ctcpsink does. */
typedef struct
{
  GstCtcpSender *s;
  GstClockTime now;
  GstClockTime rtt;
  guint64 written;
  GArray *sent_at;              /* GstClockTime per write */
  GArray *sent_upto;            /* guint64: cumulative bytes after it */
  guint64 writes;
  guint64 small_writes;         /* writes under 1448 bytes */
  guint64 max_pacing;
  guint n_wakeups;
  guint ovh;                    /* record overhead (TLS), 0: none */
  guint64 wire;                 /* wire bytes written */
} Sim;

static guint64
sim_acked (Sim * m)
{
  guint64 acked = 0;

  for (guint i = 0; i < m->sent_at->len; i++)
    if (g_array_index (m->sent_at, GstClockTime, i) + m->rtt <= m->now)
      acked = g_array_index (m->sent_upto, guint64, i);
  return acked;
}

static void
sim_init (Sim * m, const GstCtcpSenderConfig * cfg, GstClockTime rtt)
{
  memset (m, 0, sizeof (*m));
  m->s = gst_ctcp_sender_new (cfg);
  m->rtt = rtt;
  m->now = 1000 * S;            /* the clock does not start at 0 either */
  m->sent_at = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  m->sent_upto = g_array_new (FALSE, FALSE, sizeof (guint64));
}

static void
sim_clear (Sim * m)
{
  gst_ctcp_sender_free (m->s);
  g_array_free (m->sent_at, TRUE);
  g_array_free (m->sent_upto, TRUE);
}

/* One wakeup: the reading, then poll and write until told to stop.
 * Returns the output of the last poll. */
static GstCtcpSenderOutput
sim_step (Sim * m)
{
  GstCtcpTcpInfo info = { 0, };
  GstCtcpSenderOutput out;
  guint64 acked = sim_acked (m);

  info.snd_mss = 1448;
  info.rtt_us = m->rtt / GST_USECOND;
  info.snd_cwnd = 1000;
  info.bytes_acked = acked;
  /* the kernel counts wire bytes (records and their overhead) */
  gst_ctcp_sender_handle_tcp_info (m->s, &info, m->wire - acked,
      m->wire - acked, m->now);
  for (;;) {
    gst_ctcp_sender_poll (m->s, m->now, &out);
    m->max_pacing = MAX (m->max_pacing, out.pacing_rate);
    if (out.write == 0)
      break;
    m->written += out.write;
    m->wire += out.write + (out.write + 16383) / 16384 * m->ovh;
    m->writes++;
    if (out.write < 1448)
      m->small_writes++;
    g_array_append_val (m->sent_at, m->now);
    g_array_append_val (m->sent_upto, m->wire);
    gst_ctcp_sender_handle_written (m->s, out.write, m->now);
  }
  m->n_wakeups++;
  return out;
}

/* Runs until EOS is finished (or @limit): wakes at next_wakeup() or
 * when the next acknowledgement arrives, whichever is first. */
static void
sim_run (Sim * m, GstClockTime limit)
{
  while (m->now < limit) {
    GstCtcpSenderOutput out = sim_step (m);
    GstClockTime wake = gst_ctcp_sender_next_wakeup (m->s, m->now);

    if (out.finished)
      return;
    fail_unless (GST_CLOCK_TIME_IS_VALID (wake), "idle with data left");
    fail_unless (wake > m->now || out.n_events > 0);
    m->now = MAX (wake, m->now + 1);
  }
  fail ("not finished by %" GST_TIME_FORMAT, GST_TIME_ARGS (limit));
}

static GstStructure *
sim_stats (Sim * m)
{
  GstStructure *st = gst_ctcp_sender_get_stats (m->s);

  fail_unless (gst_structure_has_name (st, "application/x-ctcpsink-stats"));
  return st;
}

static guint64
st_u64 (const GstStructure * st, const gchar * f)
{
  guint64 v = 0;

  fail_unless (gst_structure_get_uint64 (st, f, &v), "no %s", f);
  return v;
}

static gint64
st_i64 (const GstStructure * st, const gchar * f)
{
  gint64 v = 0;

  fail_unless (gst_structure_get_int64 (st, f, &v), "no %s", f);
  return v;
}

static const GstCtcpSenderConfig segments_config = {
  TRUE, 1 * S, 0.05, 8 * S, 0, 4.0
};

/* @nseg segments of @seg_bytes in 25 buffers each (40 ms of timestamps),
 * timestamps from @origin; EOS after the last. */
static void
sim_feed (Sim * m, GstClockTime origin, guint nseg, guint seg_bytes)
{
  for (guint k = 0; k < nseg; k++)
    for (guint i = 0; i < 25; i++) {
      GstClockTime ts = origin + k * S + i * 40 * MS;
      guint64 len = seg_bytes / 25 + (i == 24 ? seg_bytes % 25 : 0);
      gboolean ready = gst_ctcp_sender_handle_buffer (m->s, ts, 40 * MS, len,
          m->now);

      /* held: a segment becomes sendable when the next one starts */
      fail_unless_equals_int (ready, k > 0 && i == 0);
    }
  gst_ctcp_sender_handle_eos (m->s, m->now);
}

GST_START_TEST (test_sender_segments_on_time)
{
  /* the regression of issue 12: 3000-byte segments are 2 packets and a
   * 104-byte tail; the tail waited for a whole packet's tokens (and the
   * catch-up made that more), so the first segment, which starts at once
   * and has exactly T, landed late. With timestamps from 0 and from
   * 36000 s (a broadcast capture) alike. */
  GstClockTime origins[] = { 0, 36000 * S };

  for (guint o = 0; o < G_N_ELEMENTS (origins); o++) {
    Sim m;
    GstStructure *st;
    const GValue *arr;
    guint64 nominal = gst_ctcp_target_rate (3000, S, 0.05);

    sim_init (&m, &segments_config, 2 * MS);
    sim_feed (&m, origins[o], 3, 3000);
    sim_run (&m, m.now + 10 * S);
    st = sim_stats (&m);
    GST_INFO ("%" GST_PTR_FORMAT, st);
    fail_unless_equals_uint64 (st_u64 (st, "segments"), 3);
    fail_unless_equals_uint64 (st_u64 (st, "segments-late"), 0);
    fail_unless_equals_uint64 (st_u64 (st, "bytes-acked"), 9000);
    fail_unless_equals_uint64 (st_u64 (st, "bytes-queued"), 0);
    fail_unless_equals_uint64 (st_u64 (st, "nominal-rate"), nominal);
    /* the first segment's margin is p̂·T = 50 ms, less the ACK's RTT and
     * the last write's rounding (a few ms) */
    arr = gst_structure_get_value (st, "deadline-slack");
    fail_unless_equals_int (gst_value_array_get_size (arr), 3);
    fail_unless (g_value_get_int64 (gst_value_array_get_value (arr, 0)) >
        40 * MS, "segment 0 slack %" G_GINT64_FORMAT,
        g_value_get_int64 (gst_value_array_get_value (arr, 0)));
    fail_unless (st_i64 (st, "min-deadline-slack") > 40 * MS);
    fail_unless (st_i64 (st, "min-deadline-slack") < (gint64) S);
    /* paced: never faster than 1.25 × a 4× catch-up */
    fail_unless (m.max_pacing <= 5 * nominal * 1.25 + 1);
    /* packets, not crumbs: one tail write per segment at most */
    fail_unless (m.small_writes <= 3, "%" G_GUINT64_FORMAT, m.small_writes);
    gst_structure_free (st);
    sim_clear (&m);
  }
}

GST_END_TEST;

/* Through a record layer (TLS 1.3: 22 bytes per record of at most 16384)
 * the kernel reports wire bytes: the deadlines still see stream bytes
 * (exactly at segment ends), the pacing carries the overhead. Without
 * the framing the same readings would count overhead as stream bytes. */
GST_START_TEST (test_sender_record_framing)
{
  Sim m;
  GstStructure *st;
  guint64 nominal = gst_ctcp_target_rate (300000, S, 0.05), records;

  sim_init (&m, &segments_config, 2 * MS);
  m.ovh = 22;
  gst_ctcp_sender_set_record_framing (m.s, 22, 16384);
  sim_feed (&m, 0, 3, 300000);
  sim_run (&m, m.now + 10 * S);
  st = sim_stats (&m);
  GST_INFO ("%" GST_PTR_FORMAT, st);
  fail_unless_equals_uint64 (st_u64 (st, "segments"), 3);
  fail_unless_equals_uint64 (st_u64 (st, "segments-late"), 0);
  fail_unless_equals_uint64 (st_u64 (st, "bytes-sent"), 900000);
  fail_unless_equals_uint64 (st_u64 (st, "bytes-acked"), 900000);
  fail_unless_equals_uint64 (st_u64 (st, "wire-bytes-sent"), m.wire);
  fail_unless_equals_uint64 (st_u64 (st, "wire-bytes-acked"), m.wire);
  records = (m.wire - 900000) / 22;
  fail_unless_equals_uint64 (m.wire, 900000 + records * 22);
  /* at least one record per 16384 bytes, one per write */
  fail_unless (records >= 900000 / 16384 && records == m.writes,
      "%" G_GUINT64_FORMAT " records, %" G_GUINT64_FORMAT " writes", records,
      m.writes);
  {
    guint ovh = 0;

    fail_unless (gst_structure_get_uint (st, "record-overhead", &ovh));
    fail_unless_equals_int (ovh, 22);
  }
  /* the kernel paces the wire rate: above the stream's nominal rate */
  fail_unless (m.max_pacing >= nominal * 1.25, "%" G_GUINT64_FORMAT,
      m.max_pacing);
  gst_structure_free (st);
  sim_clear (&m);

  /* the same wire readings without the framing: the core counts the
   * overhead as stream bytes (acked beyond what was written: clamped) */
  sim_init (&m, &segments_config, 2 * MS);
  m.ovh = 22;
  sim_feed (&m, 0, 3, 300000);
  sim_run (&m, m.now + 10 * S);
  st = sim_stats (&m);
  fail_unless_equals_uint64 (st_u64 (st, "wire-bytes-sent"), 900000);
  fail_unless (m.wire > 900000);
  gst_structure_free (st);
  sim_clear (&m);
}

GST_END_TEST;

GST_START_TEST (test_sender_hold_and_room)
{
  Sim m;
  GstCtcpSenderOutput out;
  GstStructure *st;
  GstClockTime start;

  sim_init (&m, &segments_config, 2 * MS);
  /* segment 0 is held: nothing to write, no timer */
  fail_if (gst_ctcp_sender_handle_buffer (m.s, 5 * S, 40 * MS, 1000, m.now));
  out = sim_step (&m);
  fail_unless_equals_uint64 (out.write, 0);
  fail_unless_equals_uint64 (m.written, 0);
  fail_unless (!GST_CLOCK_TIME_IS_VALID (gst_ctcp_sender_next_wakeup (m.s,
              m.now)));
  fail_if (gst_ctcp_sender_is_full (m.s));
  /* a buffer without timestamp joins the current segment */
  fail_if (gst_ctcp_sender_handle_buffer (m.s, GST_CLOCK_TIME_NONE,
          GST_CLOCK_TIME_NONE, 500, m.now));
  /* segment 1 starts: 0 is complete (1500 bytes) and may go */
  fail_unless (gst_ctcp_sender_handle_buffer (m.s, 6 * S, 40 * MS, 2000,
          m.now));
  fail_if (gst_ctcp_sender_is_full (m.s));
  /* segment 2 starts: two complete segments wait, upstream must wait */
  fail_unless (gst_ctcp_sender_handle_buffer (m.s, 7 * S, 40 * MS, 100,
          m.now));
  fail_unless (gst_ctcp_sender_is_full (m.s));
  /* segment 0 goes at S/(T(1−p̂)), from an empty bucket (no burst):
   * all of it by S/rate, never a byte of segment 1 before its rate is set */
  start = m.now;
  while (m.written < 1500) {
    out = sim_step (&m);
    fail_unless (m.written <= 1500);
    if (m.written < 1500)
      m.now = gst_ctcp_sender_next_wakeup (m.s, m.now);
  }
  fail_unless (m.now - start <= 950 * MS + MS && m.now - start > 900 * MS,
      "%" GST_TIME_FORMAT, GST_TIME_ARGS (m.now - start));
  st = sim_stats (&m);
  /* segment 1 (2000 bytes) starts as soon as 0 is written */
  fail_unless_equals_uint64 (st_u64 (st, "nominal-rate"),
      gst_ctcp_target_rate (2000, S, 0.05));
  fail_unless_equals_uint64 (st_u64 (st, "target-rate"),
      gst_ctcp_target_rate (2000, S, 0.05));
  fail_unless_equals_uint64 (st_u64 (st, "bytes-queued"), 2100);
  gst_structure_free (st);
  /* segment 0 written: one segment waits, room again */
  fail_if (gst_ctcp_sender_is_full (m.s));
  sim_clear (&m);
}

GST_END_TEST;

GST_START_TEST (test_sender_last_segment_duration)
{
  Sim m;
  GstStructure *st;

  /* 1 s segments; the stream ends 400 ms into segment 1: that segment's
   * rate is S/(0.4 s·(1−p̂)) */
  sim_init (&m, &segments_config, 2 * MS);
  for (guint i = 0; i < 35; i++)
    gst_ctcp_sender_handle_buffer (m.s, 100 * S + i * 40 * MS, 40 * MS, 100,
        m.now);
  gst_ctcp_sender_handle_eos (m.s, m.now);
  sim_run (&m, m.now + 5 * S);
  st = sim_stats (&m);
  fail_unless_equals_uint64 (st_u64 (st, "segments"), 2);
  fail_unless_equals_uint64 (st_u64 (st, "segments-late"), 0);
  fail_unless_equals_uint64 (st_u64 (st, "nominal-rate"),
      gst_ctcp_target_rate (1000, 400 * MS, 0.05));
  gst_structure_free (st);
  sim_clear (&m);
}

GST_END_TEST;

GST_START_TEST (test_sender_fixed_rate)
{
  /* 160 kbit/s = 20 kB/s, sent as it comes */
  GstCtcpSenderConfig cfg = { TRUE, 1 * S, 0.05, 8 * S, 160000, 4.0 };
  Sim m;
  GstClockTime start;
  GstStructure *st;

  sim_init (&m, &cfg, 2 * MS);
  start = m.now;
  /* no timestamps at all: bytes are sendable at once */
  fail_unless (gst_ctcp_sender_handle_buffer (m.s, GST_CLOCK_TIME_NONE,
          GST_CLOCK_TIME_NONE, 40000, m.now));
  /* 64 kB or 2 s of the rate may wait: not full */
  fail_if (gst_ctcp_sender_is_full (m.s));
  gst_ctcp_sender_handle_buffer (m.s, GST_CLOCK_TIME_NONE,
      GST_CLOCK_TIME_NONE, 30000, m.now);
  sim_step (&m);
  fail_unless (gst_ctcp_sender_is_full (m.s));
  fail_unless_equals_uint64 (m.max_pacing, 25000);
  gst_ctcp_sender_handle_eos (m.s, m.now);
  sim_run (&m, m.now + 10 * S);
  /* 70 kB at 20 kB/s, the first packet free: 3.4 to 3.6 s */
  fail_unless (m.now - start > 3400 * MS && m.now - start < 3600 * MS,
      "%" GST_TIME_FORMAT, GST_TIME_ARGS (m.now - start));
  st = sim_stats (&m);
  fail_unless_equals_uint64 (st_u64 (st, "target-rate"), 20000);
  fail_unless_equals_uint64 (st_u64 (st, "bytes-sent"), 70000);
  gst_structure_free (st);
  sim_clear (&m);
}

GST_END_TEST;

GST_START_TEST (test_sender_plain_tcp)
{
  GstCtcpSenderConfig cfg = { FALSE, 1 * S, 0.05, 8 * S, 0, 4.0 };
  Sim m;
  GstCtcpSenderOutput out;

  sim_init (&m, &cfg, 2 * MS);
  gst_ctcp_sender_handle_buffer (m.s, 0, 40 * MS, 200000, m.now);
  /* no pacing, no holding: 64 kB writes at once */
  out = sim_step (&m);
  fail_unless_equals_uint64 (out.pacing_rate, 0);
  fail_unless_equals_uint64 (m.written, 200000);
  fail_unless_equals_uint64 (m.writes, 4);
  /* data in flight: the next reading a quarter RTT on (1 ms floor) */
  fail_unless_equals_uint64 (gst_ctcp_sender_next_wakeup (m.s, m.now),
      m.now + MS);
  gst_ctcp_sender_handle_eos (m.s, m.now);
  sim_run (&m, m.now + S);
  sim_clear (&m);
}

GST_END_TEST;

GST_START_TEST (test_sender_events_and_stats)
{
  Sim m;
  GstCtcpTcpInfo info = { 0, };
  GstCtcpSenderOutput out;
  GstStructure *a, *b;

  sim_init (&m, &segments_config, 20 * MS);
  info.snd_mss = 1448;
  info.rtt_us = 20000;
  info.snd_cwnd = 10;
  gst_ctcp_sender_handle_tcp_info (m.s, &info, 0, 0, m.now);
  /* fast retransmit, then open again */
  info.ca_state = GST_CTCP_CA_RECOVERY;
  info.total_retrans = 1;
  info.snd_cwnd = 5;
  gst_ctcp_sender_handle_tcp_info (m.s, &info, 0, 0, m.now + 5 * MS);
  fail_unless_equals_uint64 (gst_ctcp_sender_next_wakeup (m.s,
          m.now + 5 * MS), m.now + 5 * MS);
  gst_ctcp_sender_poll (m.s, m.now + 5 * MS, &out);
  fail_unless_equals_int (out.n_events, 1);
  fail_unless_equals_int (out.events[0].type, GST_NETWORK_CONGESTION_DUPACK);
  /* 8 · cwnd·MSS/srtt */
  fail_unless_equals_uint64 (out.events[0].bitrate, 8 * 5 * 1448 * 50);
  fail_unless_equals_uint64 (out.events[0].srtt, 20 * MS);
  /* drained */
  gst_ctcp_sender_poll (m.s, m.now + 6 * MS, &out);
  fail_unless_equals_int (out.n_events, 0);
  info.ca_state = GST_CTCP_CA_OPEN;
  gst_ctcp_sender_handle_tcp_info (m.s, &info, 0, 0, m.now + 30 * MS);
  gst_ctcp_sender_poll (m.s, m.now + 30 * MS, &out);
  fail_unless_equals_int (out.n_events, 1);
  fail_unless_equals_int (out.events[0].type,
      GST_NETWORK_CONGESTION_RECOVERED);

  /* reading the stats twice changes nothing */
  a = sim_stats (&m);
  b = sim_stats (&m);
  fail_unless (gst_structure_is_equal (a, b));
  fail_unless_equals_uint64 (st_u64 (a, "polls"), 3);
  fail_unless_equals_uint64 (st_u64 (a, "dupack-events"), 1);
  fail_unless_equals_uint64 (st_u64 (a, "recovered-events"), 1);
  fail_unless_equals_uint64 (st_u64 (a, "retransmissions"), 1);
  gst_structure_free (a);
  gst_structure_free (b);
  sim_clear (&m);
}

GST_END_TEST;

/* The start-up ramp on a virtual clock, against the planner's model
 * (gst-libs/gst/twoflow/twoflowstartup): an essential flow of a 120 kB
 * I frame every 5 s and a 2 kB audio record every 0.4 s, 10 s segments.
 * The planner picks the ramp rate R and lead L (target 1 s, margin
 * 0.2 s); the sender, given L and R, writes every record's last byte
 * before it plays (L after the stream's time, less the margin; a few ms
 * of pacing granularity), sends the ramp's segments at R and then every
 * segment at its nominal rate, none late. The same lead without the ramp
 * is late by seconds. */
typedef struct
{
  GstClockTime ts;
  guint64 end;                  /* stream offset of its last byte + 1 */
} RampRecord;

static void
ramp_records (GArray * recs, GstTwoflowStartupRecord * plan_recs, guint * n)
{
  guint64 off = 0;
  guint i;

  *n = 0;
  for (i = 0; i < 100; i++) {   /* 40 s */
    GstClockTime ts = i * 400 * MS;
    guint64 bytes = (i % 12 == 0 ? 120000 : 0) + 2000;
    RampRecord r = { ts, off + bytes };

    off += bytes;
    g_array_append_val (recs, r);
    plan_recs[*n].ts = ts;
    plan_recs[(*n)++].bytes = bytes;
  }
}

static GstClockTimeDiff
run_ramp (GstClockTime lead, guint64 rate, gdouble catch_up, GArray * recs,
    guint64 * ramps, guint64 * late)
{
  GstCtcpSenderConfig cfg = { TRUE, 10 * S, 0.05, 8 * S, 0, catch_up, lead,
    rate, 2.0
  };
  GstClockTimeDiff worst = G_MAXINT64;
  GstClockTime t0;
  GstStructure *st;
  guint i, j = 0;
  Sim m;

  sim_init (&m, &cfg, 20 * MS);
  t0 = m.now;
  for (i = 0; i < recs->len; i++) {
    RampRecord *r = &g_array_index (recs, RampRecord, i);
    guint64 prev = i ? g_array_index (recs, RampRecord, i - 1).end : 0;

    gst_ctcp_sender_handle_buffer (m.s, r->ts, 400 * MS, r->end - prev,
        m.now);
  }
  gst_ctcp_sender_handle_eos (m.s, m.now);
  sim_run (&m, m.now + 120 * S);
  /* each record: when the write that completed it went, against its play
   * time less the margin */
  for (i = 0; i < recs->len; i++) {
    RampRecord *r = &g_array_index (recs, RampRecord, i);
    GstClockTime due = t0 + (lead ? lead : 10 * S) + r->ts - 200 * MS;

    while (g_array_index (m.sent_upto, guint64, j) < r->end)
      j++;
    worst = MIN (worst, GST_CLOCK_DIFF (g_array_index (m.sent_at,
                GstClockTime, j), due));
  }
  st = sim_stats (&m);
  GST_INFO ("%" GST_PTR_FORMAT, st);
  *ramps = st_u64 (st, "ramp-segments");
  *late = st_u64 (st, "segments-late");
  fail_unless_equals_uint64 (st_u64 (st, "segments"), 4);
  gst_structure_free (st);
  sim_clear (&m);
  return worst;
}

GST_START_TEST (test_sender_startup_ramp)
{
  GArray *recs = g_array_new (FALSE, FALSE, sizeof (RampRecord));
  GstTwoflowStartupRecord pr[100];
  GstTwoflowStartupConfig c = { 10 * S, 0.05, 2.0, 8000000, 1 * S, 200 * MS,
    0
  };
  GstTwoflowStartupPlan plan;
  GstClockTimeDiff worst;
  guint64 ramps, late;
  guint n;

  ramp_records (recs, pr, &n);
  fail_unless (gst_twoflow_startup_plan (pr, n, &c, &plan));
  GST_INFO ("plan: R %" G_GUINT64_FORMAT " bit/s, L %" GST_TIME_FORMAT
      ", %u ramp segments", plan.rate, GST_TIME_ARGS (plan.lead),
      plan.ramp_segments);
  /* 122 kB out within 0.8 s: about 1.22 Mbit/s, well above the floor */
  fail_unless (plan.rate > 1200000 && plan.rate < 1300000);
  fail_unless_equals_uint64 (plan.lead, 1 * S);
  fail_unless (plan.ramp_segments >= 1);

  worst = run_ramp (plan.lead, plan.rate, 4.0, recs, &ramps, &late);
  fail_unless (worst > -20 * MS, "a record %" GST_STIME_FORMAT " late",
      GST_STIME_ARGS (-worst));
  fail_unless_equals_uint64 (ramps, plan.ramp_segments);
  fail_unless_equals_uint64 (late, 0);

  /* the same lead without the ramp, the paper's constant rate: the first
   * segment at its nominal rate (its first I frame alone takes 2.8 s) */
  worst = run_ramp (plan.lead, 0, 1.0, recs, &ramps, &late);
  fail_unless (worst < -1 * S, "%" GST_STIME_FORMAT, GST_STIME_ARGS (worst));
  fail_unless_equals_uint64 (ramps, 0);
  fail_unless (late > 0);

  /* the paper's stagger (lead 0: one segment) is on time without it */
  worst = run_ramp (0, 0, 4.0, recs, &ramps, &late);
  fail_unless (worst > 0, "%" GST_STIME_FORMAT, GST_STIME_ARGS (worst));
  fail_unless_equals_uint64 (late, 0);
  g_array_free (recs, TRUE);
}

GST_END_TEST;

static Suite *
ctcp_suite (void)
{
  Suite *s = suite_create ("ctcp");
  TCase *tc = tcase_create ("core");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_target_rate);
  tcase_add_test (tc, test_sender_record_framing);
  tcase_add_test (tc, test_window_target);
  tcase_add_test (tc, test_controller_intervals);
  tcase_add_test (tc, test_rtt_histogram);
  tcase_add_test (tc, test_window_rtt_swings);
  tcase_add_test (tc, test_window_small);
  tcase_add_test (tc, test_controller_pacing);
  tcase_add_test (tc, test_poll_interval);
  tcase_add_test (tc, test_events_fast_recovery);
  tcase_add_test (tc, test_events_timeouts);
  tcase_add_test (tc, test_events_old_kernel);
  tcase_add_test (tc, test_events_loopback);
  tcase_add_test (tc, test_events_counts);
  tcase_add_test (tc, test_schedule);
  tcase_add_test (tc, test_required_rate);
  tcase_add_test (tc, test_catch_up_virtual_clock);
  tcase_add_test (tc, test_sender_segments_on_time);
  tcase_add_test (tc, test_sender_hold_and_room);
  tcase_add_test (tc, test_sender_last_segment_duration);
  tcase_add_test (tc, test_sender_fixed_rate);
  tcase_add_test (tc, test_sender_plain_tcp);
  tcase_add_test (tc, test_sender_events_and_stats);
  tcase_add_test (tc, test_sender_startup_ramp);
  return s;
}

GST_CHECK_MAIN (ctcp);
