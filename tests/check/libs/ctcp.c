/* twoflow — unit tests of the cTCP sans-IO core (virtual clock, synthetic
 * TCP_INFO snapshots)
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2 of the License, or (at your option) any later version.
 */
#include <gst/check/gstcheck.h>
#include <gst/ctcp/ctcp.h>

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
  /* mean RTT over the interval: 200 samples at 80 ms, 201 at 120 ms */
  fail_unless (c.w_target >= 100 && c.w_target <= 101, "W_target %u",
      c.w_target);
  fail_unless_equals_uint64 (c.adjustments, 1);
  fail_unless_equals_uint64 (gst_ctcp_controller_window_bytes (&c),
      c.w_target * 1000);

  /* second interval: RTT 100 ms, one retransmission -> /0.75 */
  for (t = 8 * S + 20 * MS; t <= 16 * S; t += 20 * MS) {
    i = info_new (100000, 1000, t > 12 * S ? 1 : 0);
    gst_ctcp_controller_update (&c, &i, t);
  }
  fail_unless_equals_int (c.w_target, 134);

  /* third interval: no new loss -> back to 100 */
  for (t = 16 * S + 20 * MS; t <= 24 * S; t += 20 * MS) {
    i = info_new (100000, 1000, 1);
    gst_ctcp_controller_update (&c, &i, t);
  }
  fail_unless_equals_int (c.w_target, 100);

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
} Step;

static void
run_steps (const Step * steps, guint n, gboolean has_total_rto)
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
    info.rtt_us = 40000;
    k = gst_ctcp_event_detector_push (&d, &info, steps[i].t, ev);
    for (guint j = 0; j < k; j++)
      g_string_append_printf (got, "%s%s", j ? " " : "",
          gst_network_congestion_type_to_string (ev[j]));
    fail_unless_equals_string (got->str, steps[i].expect);
    g_string_free (got, TRUE);
  }
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
    /* ... unless the poll came later than one RTT: then counters tell of
     * a recovery that happened between the snapshots */
    {T (200), GST_CTCP_CA_OPEN, 0, 0, 5, "dupack recovered"},
  };
  run_steps (s, G_N_ELEMENTS (s), TRUE);
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
          gst_ctcp_schedule_last (&s), 0.05, 100 * S), 10000);
  /* started 5 s late: the rest of the time counts */
  fail_unless_equals_uint64 (gst_ctcp_schedule_segment_rate (&s,
          gst_ctcp_schedule_last (&s), 0.05, 105 * S), 20000);
  /* ... but never less than a quarter of T */
  fail_unless_equals_uint64 (gst_ctcp_schedule_segment_rate (&s,
          gst_ctcp_schedule_last (&s), 0.05, 200 * S), 40000);

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

static Suite *
ctcp_suite (void)
{
  Suite *s = suite_create ("ctcp");
  TCase *tc = tcase_create ("core");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_target_rate);
  tcase_add_test (tc, test_window_target);
  tcase_add_test (tc, test_controller_intervals);
  tcase_add_test (tc, test_controller_pacing);
  tcase_add_test (tc, test_poll_interval);
  tcase_add_test (tc, test_events_fast_recovery);
  tcase_add_test (tc, test_events_timeouts);
  tcase_add_test (tc, test_events_old_kernel);
  tcase_add_test (tc, test_events_counts);
  tcase_add_test (tc, test_schedule);
  return s;
}

GST_CHECK_MAIN (ctcp);
