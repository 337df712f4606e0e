/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: unit tests of the start-up ramp planner
 * (gst-libs/gst/twoflow/twoflowstartup): hand-checked rates and leads,
 * the ceiling, where the ramp ends, and the check against a schedule
 * that cannot make it. Time is only an argument. */
#include <gst/check/gstcheck.h>
#include <gst/twoflow/twoflowstartup.h>
#include <stdio.h>

#define S GST_SECOND
#define MS GST_MSECOND

static GstTwoflowStartupConfig
config (guint64 max_rate)
{
  GstTwoflowStartupConfig c = { 10 * S, 0.05, 2.0, max_rate, 1 * S,
    200 * MS, 0
  };

  return c;
}

/* One 100,000-byte record at the start, T = 10 s: segment 0's nominal
 * rate is 100,000 B / 9.5 s, the floor (2×) 168,421 bit/s, which would
 * need a 4.95 s lead. The target (1 s, less the 0.2 s margin) needs the
 * record out in 0.8 s: R = 1 Mbit/s. */
GST_START_TEST (test_hand_checked)
{
  GstTwoflowStartupRecord r[] = { {0, 100000} };
  GstTwoflowStartupConfig c = config (0);
  GstTwoflowStartupPlan p;

  fail_unless (gst_twoflow_startup_plan (r, 1, &c, &p));
  fail_unless (p.rate >= 1000000 && p.rate <= 1002000, "%" G_GUINT64_FORMAT,
      p.rate);
  fail_unless (p.lead >= S && p.lead <= S + 10 * GST_USECOND,
      "%" GST_TIME_FORMAT, GST_TIME_ARGS (p.lead));
  fail_unless_equals_int (p.ramp_segments, 1);
  fail_unless (p.min_slack >= 0);

  /* the floor's own lead: 100,000 B at 21,052 B/s, 4.75 s, and the margin */
  fail_unless (!gst_twoflow_startup_check (r, 1, &c, 0, 1 * S, &p));
  fail_unless (gst_twoflow_startup_check (r, 1, &c, 0, 4950 * MS, &p));
  fail_unless (!gst_twoflow_startup_check (r, 1, &c, 0, 4940 * MS, &p));
}

GST_END_TEST;

/* A ceiling below what the target needs: R is the ceiling, and the lead
 * what it needs: 100,000 B at 500 kbit/s is 1.6 s, plus the margin. */
GST_START_TEST (test_ceiling)
{
  GstTwoflowStartupRecord r[] = { {0, 100000} };
  GstTwoflowStartupConfig c = config (500000);
  GstTwoflowStartupPlan p;

  fail_unless (gst_twoflow_startup_plan (r, 1, &c, &p));
  fail_unless_equals_uint64 (p.rate, 500000);
  fail_unless (p.lead >= 1800 * MS && p.lead <= 1800 * MS + 10 * GST_USECOND,
      "%" GST_TIME_FORMAT, GST_TIME_ARGS (p.lead));
}

GST_END_TEST;

/* A steady flow (95,000 B per 10 s segment, one 9,500-byte record a
 * second, timestamps from 3600 s): the floor (2 × 10,000 B/s) is on time
 * at the target lead. Segment 0 goes at 20,000 B/s (done 4.75 s), segment
 * 1 too (it has 6.25 s left before it plays at 11 s: done 9.5 s);
 * segment 2 has 11.5 s left, more than its duration: nominal, and the
 * flow is a segment ahead from 9.5 s on. */
GST_START_TEST (test_ramp_ends_a_segment_ahead)
{
  GstTwoflowStartupRecord r[50];
  GstTwoflowStartupConfig c = config (0);
  GstTwoflowStartupPlan p;
  guint i;

  /* in reverse: the planner sorts */
  for (i = 0; i < 50; i++) {
    r[49 - i].ts = 3600 * S + i * S;
    r[49 - i].bytes = 9500;
  }
  c.start = 3600 * S;
  fail_unless (gst_twoflow_startup_plan (r, 50, &c, &p));
  fail_unless (p.rate >= 159999 && p.rate <= 160001, "%" G_GUINT64_FORMAT,
      p.rate);
  fail_unless_equals_uint64 (p.lead, 1 * S);
  fail_unless_equals_int (p.ramp_segments, 2);
  fail_unless (p.ahead_at >= 9500 * MS - 1 && p.ahead_at <= 9500 * MS + 1,
      "%" GST_TIME_FORMAT, GST_TIME_ARGS (p.ahead_at));
  /* the last record of the ramp: 190,000 B by 9.5 s, due at 19.8 s; the
   * tightest is the first one: 9,500 B by 0.475 s, due at 0.8 s */
  fail_unless (p.min_slack >= 325 * MS - 1 && p.min_slack <= 325 * MS + 1,
      "%" G_GINT64_FORMAT, p.min_slack);

  /* without the ramp (factor 1, no rate) the first record needs 0.95 s:
   * a lead of 0.5 s is too short */
  c.factor = 1.0;
  c.target_lead = 500 * MS;
  fail_unless (!gst_twoflow_startup_check (r, 50, &c, 0, 500 * MS, &p));
  fail_unless (p.min_slack < 0);
  fail_unless (gst_twoflow_startup_plan (r, 50, &c, &p));
  /* ... so the plan raises the rate: 9,500 B in 0.3 s */
  fail_unless (p.rate >= 253333 && p.rate <= 253333 * 1.002,
      "%" G_GUINT64_FORMAT, p.rate);
  fail_unless (p.lead <= 500 * MS + 10 * GST_USECOND);
}

GST_END_TEST;

/* Every record of a plan is on time, whatever the segment duration:
 * the plan's lead passes its own check, and a lead 10 ms shorter (at the
 * same rate) does not once the target is not the binding constraint. */
GST_START_TEST (test_plan_is_tight)
{
  GstTwoflowStartupRecord r[200];
  gdouble durations[] = { 2, 4, 10, 30 };
  guint i, d;

  /* an I frame of 60 kB every 2 s, an audio record of 400 B every 40 ms
   * (8 s of it) */
  for (i = 0; i < 200; i++) {
    r[i].ts = i * 40 * MS;
    r[i].bytes = i % 50 == 0 ? 60000 : 400;
  }
  for (d = 0; d < G_N_ELEMENTS (durations); d++) {
    GstTwoflowStartupConfig c = config (400000);
    GstTwoflowStartupPlan p, q;

    /* the ceiling, not the 2× floor (670 kbit/s at T = 2 s), binds */
    c.factor = 1.0;
    c.segment_duration = durations[d] * S;
    fail_unless (gst_twoflow_startup_plan (r, 200, &c, &p));
    GST_INFO ("T %.0f s: R %" G_GUINT64_FORMAT ", L %" GST_TIME_FORMAT
        ", %u ramp segments", durations[d], p.rate, GST_TIME_ARGS (p.lead),
        p.ramp_segments);
    fail_unless (p.rate <= 400000);
    fail_unless (gst_twoflow_startup_check (r, 200, &c, p.rate, p.lead, &q));
    /* 60 kB at 400 kbit/s is 1.2 s, and the margin: the ceiling binds */
    fail_unless (p.lead > c.target_lead);
    fail_unless (!gst_twoflow_startup_check (r, 200, &c, p.rate,
            p.lead - 10 * MS, &q));
  }
}

GST_END_TEST;

/* The Star Wars IV trace of data/ (an hour, 25 fps, I frames every 12;
 * the essential flow under policy i: the I frames and a 68-byte record
 * header each), 10 s and 60 s segments, the ramp's ceiling 2 Mbit/s:
 * the target lead (0.5 s) holds, the plan passes its own check and the
 * flow is a segment ahead within two segments. The film opens on titles
 * (I frames of ~1.5 kB): the ramp's floor, twice segment 0's cTCP rate,
 * is enough, and the planner asks no more. */
GST_START_TEST (test_star_wars)
{
  const gchar *root = g_getenv ("TWOFLOW_SOURCE_ROOT");
  gchar *xz = g_build_filename (root ? root : ".", "data",
      "star-wars-iv.txt.xz", NULL);
  gchar *argv[] = { (gchar *) "xz", (gchar *) "-dc", xz, NULL };
  gchar *out = NULL, **lines, **l;
  GArray *rec = g_array_new (FALSE, FALSE, sizeof (GstTwoflowStartupRecord));
  gdouble durations[] = { 10, 60 };
  guint64 n = 0, d;
  gint status;

  fail_unless (g_spawn_sync (NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
          NULL, &out, NULL, &status, NULL));
  fail_unless (g_spawn_check_wait_status (status, NULL));
  lines = g_strsplit_set (out, "\n", -1);
  for (l = lines; *l; l++) {
    guint idx, ms, bytes;
    gchar t;

    if (sscanf (*l, "%u %c %u %u", &idx, &t, &ms, &bytes) != 4)
      continue;
    if (t == 'I') {
      GstTwoflowStartupRecord r = { n * 40 * MS, bytes + 68 };

      g_array_append_val (rec, r);
    }
    n++;
  }
  fail_unless (n > 89000 && rec->len > 7000, "%" G_GUINT64_FORMAT " frames",
      n);
  for (d = 0; d < G_N_ELEMENTS (durations); d++) {
    GstTwoflowStartupConfig c = config (2000000);
    GstTwoflowStartupPlan p, q;
    GstTwoflowStartupRecord *r = (GstTwoflowStartupRecord *) rec->data;

    c.segment_duration = durations[d] * S;
    c.target_lead = 500 * MS;
    fail_unless (gst_twoflow_startup_plan (r, rec->len, &c, &p));
    GST_INFO ("T %.0f s: R %" G_GUINT64_FORMAT " bit/s, L %" GST_TIME_FORMAT
        ", %u ramp segments, ahead at %" GST_TIME_FORMAT, durations[d],
        p.rate, GST_TIME_ARGS (p.lead), p.ramp_segments,
        GST_TIME_ARGS (p.ahead_at));
    fail_unless_equals_uint64 (p.lead, 500 * MS);
    fail_unless (p.rate <= 2000000);
    fail_unless (p.ramp_segments >= 1 && p.ramp_segments <= 2);
    fail_unless (GST_CLOCK_TIME_IS_VALID (p.ahead_at)
        && p.ahead_at < 2 * c.segment_duration);
    fail_unless (gst_twoflow_startup_check (r, rec->len, &c, p.rate, p.lead,
            &q));
    fail_unless (p.rate < 150000, "%" G_GUINT64_FORMAT, p.rate);
  }
  g_strfreev (lines);
  g_free (out);
  g_free (xz);
  g_array_free (rec, TRUE);
}

GST_END_TEST;

static Suite *
startup_suite (void)
{
  Suite *s = suite_create ("twoflowstartup");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_hand_checked);
  tcase_add_test (tc, test_ceiling);
  tcase_add_test (tc, test_ramp_ends_a_segment_ahead);
  tcase_add_test (tc, test_plan_is_tight);
  tcase_add_test (tc, test_star_wars);
  return s;
}

GST_CHECK_MAIN (startup);
