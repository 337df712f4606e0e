/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: unit tests of the proxy's admission control and the server's
 * video profile (gst-libs/gst/twoflow), on a virtual clock. */
#include <gst/check/gstcheck.h>
#include <string.h>
#include "twoflow-admission.h"
#include "twoflow-profile.h"

GST_START_TEST (test_configured)
{
  GstTwoflowAdmission *a =
      gst_twoflow_admission_new (GST_TWOFLOW_ADMISSION_CONFIGURED, 10000000);
  GstTwoflowAdmissionDecision d;
  GstStructure *st;
  guint64 v;

  gst_twoflow_admission_handle_candidate (a, 4990000, &d);
  fail_unless (d.admit);
  fail_unless (d.reason == NULL);
  fail_unless_equals_float (d.residual, 10000000);
  gst_twoflow_admission_add (a, 1, "a.mp4", 4990000);
  gst_twoflow_admission_handle_candidate (a, 4990000, &d);
  fail_unless (d.admit);
  gst_twoflow_admission_add (a, 2, "b.ts", 130000);
  fail_unless_equals_uint64 (gst_twoflow_admission_reserved (a), 5120000);

  /* 4.99 > 4.88 residual: refused with the figures in the reason */
  gst_twoflow_admission_handle_candidate (a, 4990000, &d);
  fail_if (d.admit);
  fail_unless_equals_int (d.sessions, 2);
  fail_unless_equals_float (d.residual, 4880000);
  fail_unless_equals_string (d.reason, "WAN capacity exhausted: peak rate "
      "4.99 Mbit/s > residual 4.88 of 10.00 Mbit/s");
  g_free (d.reason);

  /* a departure frees its reservation */
  fail_unless (gst_twoflow_admission_remove (a, 1));
  fail_if (gst_twoflow_admission_remove (a, 1));
  gst_twoflow_admission_handle_candidate (a, 4990000, &d);
  fail_unless (d.admit);

  st = gst_twoflow_admission_get_stats (a);
  fail_unless_equals_string (gst_structure_get_string (st, "mode"),
      "configured");
  fail_unless (gst_structure_get_uint64 (st, "admitted", &v));
  fail_unless_equals_uint64 (v, 3);
  fail_unless (gst_structure_get_uint64 (st, "rejected", &v));
  fail_unless_equals_uint64 (v, 1);
  fail_unless (gst_structure_get_uint64 (st, "reserved", &v));
  fail_unless_equals_uint64 (v, 130000);
  gst_structure_free (st);
  gst_twoflow_admission_free (a);
}

GST_END_TEST;

/* One sample a second of a session receiving 100 packets a second with
 * @lost of them lost, at 1 Mbit/s. */
static void
feed (GstTwoflowAdmission * a, guint id, GstTwoflowAdmissionSample * s,
    guint seconds, guint lost, GstClockTime * now)
{
  guint i;

  for (i = 0; i < seconds; i++) {
    s->received += 100 - lost;
    s->lost += lost;
    s->enhanced_bytes += 100000;
    s->essential_bytes += 25000;
    gst_twoflow_admission_handle_sample (a, id, s, *now);
    *now += GST_SECOND;
  }
}

GST_START_TEST (test_measured)
{
  GstTwoflowAdmission *a =
      gst_twoflow_admission_new (GST_TWOFLOW_ADMISSION_MEASURED, 0);
  GstTwoflowAdmissionSample s = { 0, };
  GstTwoflowAdmissionDecision d;
  GstClockTime now = 100 * GST_SECOND;
  gdouble rate, loss, ratio;

  gst_twoflow_admission_add (a, 7, "movie.mp4", 5000000);

  /* 30 % loss from the start: one sample is no interval yet */
  feed (a, 7, &s, 1, 30, &now);
  gst_twoflow_admission_handle_candidate (a, 1000000, &d);
  fail_unless (d.admit);
  feed (a, 7, &s, 1, 30, &now);
  fail_if (gst_twoflow_admission_session_health (a, 7, &rate, &loss, &ratio));
  fail_unless_equals_float (rate, 1000000);
  fail_unless_equals_float (loss, 0.30);
  gst_twoflow_admission_handle_candidate (a, 1000000, &d);
  fail_if (d.admit);
  fail_unless_equals_string (d.reason, "session 7 (movie.mp4) is off its "
      "targets: loss 30.0% (enhanced), 0.0% (essential), received 100% "
      "(essential) and 100% (enhanced) of their targets, transcoder at 100% "
      "of its input rate");
  g_free (d.reason);

  /* loss is judged over the last 5 samples: 4 clean ones are not enough */
  feed (a, 7, &s, 4, 0, &now);
  fail_if (gst_twoflow_admission_session_health (a, 7, NULL, &loss, NULL));
  fail_unless_equals_float (loss, 30.0 / 500);
  feed (a, 7, &s, 1, 0, &now);
  fail_unless (gst_twoflow_admission_session_health (a, 7, NULL, &loss,
          NULL));
  fail_unless_equals_float (loss, 0);
  gst_twoflow_admission_handle_candidate (a, 1000000, &d);
  fail_unless (d.admit);

  /* the transcoder backing off below 90 % of its input */
  s.input_bitrate = 1000000;
  s.target_bitrate = 850000;
  feed (a, 7, &s, 1, 0, &now);
  fail_if (gst_twoflow_admission_session_health (a, 7, NULL, NULL, &ratio));
  fail_unless_equals_float (ratio, 0.85);
  s.target_bitrate = 950000;
  feed (a, 7, &s, 1, 0, &now);
  fail_unless (gst_twoflow_admission_session_health (a, 7, NULL, NULL, NULL));

  /* a newly late essential segment, once */
  s.segments_late = 1;
  feed (a, 7, &s, 1, 0, &now);
  fail_if (gst_twoflow_admission_session_health (a, 7, NULL, NULL, NULL));
  feed (a, 7, &s, 1, 0, &now);
  fail_unless (gst_twoflow_admission_session_health (a, 7, NULL, NULL, NULL));

  gst_twoflow_admission_free (a);
}

GST_END_TEST;

/* Smoothed rates: a session of a 60 s-segment video (essential 100 kbit/s
 * per segment, cTCP's target) whose enhanced flow starts 50 s in (sent
 * 10 s ahead of playback at 60 s) with 10 s windows of 250 kbit/s, one of
 * 300: mean about 350 kbit/s, 1 s peak 1 Mbit/s. */
static const guint64 ESS[] = { 100000, 100000, 100000 };
static const guint64 ENH[] = { 250000, 250000, 300000, 250000, 250000,
  250000, 250000, 250000, 250000, 250000, 250000, 250000
};

static void
rates_init (GstTwoflowAdmissionRates * r)
{
  memset (r, 0, sizeof (*r));
  r->peak_rate = 1000000;
  r->essential_rates = ESS;
  r->n_essential = G_N_ELEMENTS (ESS);
  r->segment_duration = 60 * GST_SECOND;
  r->enhanced_rates = ENH;
  r->n_enhanced = G_N_ELEMENTS (ENH);
  r->window = 10 * GST_SECOND;
  r->enhanced_start = 50 * GST_SECOND;
}

GST_START_TEST (test_smoothed)
{
  /* the paper's pipe: 1.07 x the sum of 5 sessions' mean (350 kbit/s) */
  guint64 cap = 1.07 * 5 * 350000;
  GstTwoflowAdmission *a =
      gst_twoflow_admission_new (GST_TWOFLOW_ADMISSION_CONFIGURED, cap);
  GstTwoflowAdmissionRates r;
  GstTwoflowAdmissionDecision d;
  GstClockTime now = 1000 * GST_SECOND;
  guint i;
  GstStructure *st;

  rates_init (&r);
  /* on peak rates only one of them fits (1 Mbit/s each) */
  for (i = 0; i < 5; i++) {
    gst_twoflow_admission_handle_candidate_rates (a, &r, now, &d);
    if (!d.admit)
      break;
    gst_twoflow_admission_add_rates (a, i, "sw.txt", &r, now);
  }
  fail_unless_equals_int (i, 1);
  fail_unless_equals_string (d.reason, "WAN capacity exhausted: peak rate "
      "1.00 Mbit/s > residual 0.87 of 1.87 Mbit/s");
  g_free (d.reason);
  gst_twoflow_admission_remove (a, 0);

  /* on smoothed rates, 5 sessions arriving 20 s apart all fit */
  gst_twoflow_admission_set_basis (a, GST_TWOFLOW_ADMISSION_BASIS_SMOOTHED);
  for (i = 0; i < 5; i++) {
    gst_twoflow_admission_handle_candidate_rates (a, &r, now, &d);
    fail_unless (d.admit, "session %u: %s", i, d.reason);
    /* what it needs until both flows run: segment 0 (100 kbit/s) and,
     * from 50 s on, its first window (250) */
    fail_unless_equals_float (d.rate, 350000);
    gst_twoflow_admission_add_rates (a, i, "sw.txt", &r, now);
    now += 20 * GST_SECOND;
  }
  /* at 1100 s: sessions 0..4 are 100, 80, 60, 40, 20 s in: the first
   * three send both flows (windows 5, 3, 1: 250 kbit/s each), the others
   * their essential flow only */
  fail_unless_equals_uint64 (gst_twoflow_admission_reserved_at (a,
          1100 * GST_SECOND), 3 * (100000 + 250000) + 2 * 100000);
  /* a sixth does not fit: 1.87 - 1.25 = 0.62 now, but 50 s later, when
   * its enhanced flow starts, all five send both flows (session 4 in its
   * 300 kbit/s window): 1.87 - 1.80 = 0.07 < 0.35 */
  gst_twoflow_admission_handle_candidate_rates (a, &r, now, &d);
  fail_if (d.admit);
  fail_unless (g_str_has_prefix (d.reason, "WAN capacity exhausted: smoothed "
          "rate 0.35 Mbit/s > residual "), "%s", d.reason);
  fail_unless_equals_float (d.residual, cap - 1800000.0);
  g_free (d.reason);
  /* with one session gone it fits: 1.45 + 0.35 <= 1.87 at every instant */
  fail_unless (gst_twoflow_admission_remove (a, 0));
  gst_twoflow_admission_handle_candidate_rates (a, &r, now, &d);
  fail_unless (d.admit, "%s", d.reason);
  fail_unless_equals_float (d.residual, cap - 1450000.0);
  /* past their schedules (a session running late) the admitted keep
   * their last rates until removed */
  fail_unless_equals_uint64 (gst_twoflow_admission_reserved_at (a,
          now + 10000 * GST_SECOND), 4 * (100000 + 250000));
  /* set_start() moves a session's time base: session 1 (80 s in, both
   * flows: 350 kbit/s) restarted now is back to its essential flow only */
  fail_unless_equals_uint64 (gst_twoflow_admission_reserved_at (a, now),
      900000);
  gst_twoflow_admission_set_start (a, 1, now);
  fail_unless_equals_uint64 (gst_twoflow_admission_reserved_at (a, now),
      900000 - 250000);
  st = gst_twoflow_admission_get_stats (a);
  fail_unless_equals_string (gst_structure_get_string (st, "basis"),
      "smoothed");
  gst_structure_free (st);
  gst_twoflow_admission_free (a);
}

GST_END_TEST;

/* The paper's measured admission: both flows near their targets and loss
 * < 5 % on both, from the proxy's received bytes and the server's sent
 * bytes, targets and retransmissions. */
static void
feed2 (GstTwoflowAdmission * a, GstTwoflowAdmissionSample * s,
    guint seconds, guint64 ess_recv, guint64 ess_target, guint64 rexmit,
    guint64 enh_sent, guint64 enh_recv, GstClockTime * now)
{
  guint i;

  for (i = 0; i < seconds; i++) {
    s->essential_target = ess_target;
    s->essential_queued = 50000;
    s->essential_sent += ess_target / 8;
    s->essential_mss = 1000;
    s->essential_retransmissions += rexmit;
    s->essential_bytes += ess_recv / 8;
    s->enhanced_sent += enh_sent / 8;
    s->enhanced_bytes += enh_recv / 8;
    s->received += 100;
    gst_twoflow_admission_handle_sample (a, 1, s, *now);
    *now += GST_SECOND;
  }
}

GST_START_TEST (test_measured_targets)
{
  GstTwoflowAdmission *a =
      gst_twoflow_admission_new (GST_TWOFLOW_ADMISSION_MEASURED, 0);
  GstTwoflowAdmissionSample s = { 0, };
  GstTwoflowAdmissionHealth h;
  GstTwoflowAdmissionDecision d;
  GstClockTime now = 0;

  gst_twoflow_admission_add (a, 1, "sw.txt", 1000000);
  /* on target: 400 kbit/s of cTCP target received, 1 % retransmitted
   * (400 kbit/s = 50 segments of 1000 B a second, 0.5 of them resent) */
  feed2 (a, &s, 6, 400000, 400000, 0, 300000, 300000, &now);
  fail_unless (gst_twoflow_admission_get_health (a, 1, &h));
  fail_unless (h.healthy);
  fail_unless_equals_float (h.essential_ratio, 1.0);
  fail_unless_equals_float (h.enhanced_ratio, 1.0);
  fail_unless_equals_float (h.essential_rate, 400000);
  fail_unless_equals_float (h.enhanced_rate, 300000);
  gst_twoflow_admission_handle_candidate (a, 1, &d);
  fail_unless (d.admit);

  /* the essential flow falls to 80 % of its target: off target once the
   * window's mean is below 90 % */
  feed2 (a, &s, 2, 320000, 400000, 0, 300000, 300000, &now);
  fail_unless (gst_twoflow_admission_get_health (a, 1, &h));
  fail_unless (h.healthy, "%f", h.essential_ratio);      /* 92 % */
  feed2 (a, &s, 1, 320000, 400000, 0, 300000, 300000, &now);
  fail_unless (gst_twoflow_admission_get_health (a, 1, &h));
  fail_if (h.healthy);
  fail_unless_equals_float (h.essential_ratio, 0.88);
  gst_twoflow_admission_handle_candidate (a, 1, &d);
  fail_if (d.admit);
  fail_unless (strstr (d.reason, "received 88% (essential) and 100% "
          "(enhanced)") != NULL, "%s", d.reason);
  g_free (d.reason);
  /* an idle essential sender (nothing queued) is not off target */
  s.essential_queued = 0;
  feed2 (a, &s, 5, 400000, 400000, 0, 300000, 300000, &now);
  s.essential_queued = 0;
  gst_twoflow_admission_handle_sample (a, 1, &s, now);
  now += GST_SECOND;
  fail_unless (gst_twoflow_admission_get_health (a, 1, &h));
  fail_unless (h.healthy, "%f", h.essential_ratio);

  /* cTCP retransmitting 3 of 50 segments a second: 6 % loss */
  feed2 (a, &s, 5, 400000, 400000, 3, 300000, 300000, &now);
  fail_unless (gst_twoflow_admission_get_health (a, 1, &h));
  fail_if (h.healthy);
  fail_unless_equals_float (h.essential_loss, 0.06);
  feed2 (a, &s, 5, 400000, 400000, 2, 300000, 300000, &now);
  fail_unless (gst_twoflow_admission_get_health (a, 1, &h));
  fail_unless (h.healthy);
  fail_unless_equals_float (h.essential_loss, 0.04);

  /* the enhanced flow received at 85 % of what was sent */
  feed2 (a, &s, 5, 400000, 400000, 0, 300000, 255000, &now);
  fail_unless (gst_twoflow_admission_get_health (a, 1, &h));
  fail_if (h.healthy);
  fail_unless_equals_float (h.enhanced_ratio, 0.85);
  /* few segments say nothing: at 16 kbit/s (2 a second, 10 in the
   * window) one retransmission a second is not 50 % loss */
  feed2 (a, &s, 5, 16000, 16000, 1, 300000, 300000, &now);
  fail_unless (gst_twoflow_admission_get_health (a, 1, &h));
  fail_unless (h.healthy);
  fail_unless_equals_float (h.essential_loss, 0);
  /* ...at 160 kbit/s (20 a second) it is 5 % */
  feed2 (a, &s, 5, 160000, 160000, 1, 300000, 300000, &now);
  fail_unless (gst_twoflow_admission_get_health (a, 1, &h));
  fail_if (h.healthy);
  fail_unless_equals_float (h.essential_loss, 0.05);
  /* the enhanced flow received at 85 % of what was sent */
  feed2 (a, &s, 5, 400000, 400000, 0, 300000, 255000, &now);
  fail_unless (gst_twoflow_admission_get_health (a, 1, &h));
  fail_if (h.healthy);
  fail_unless_equals_float (h.enhanced_ratio, 0.85);
  gst_twoflow_admission_free (a);
}

GST_END_TEST;

GST_START_TEST (test_none)
{
  GstTwoflowAdmission *a =
      gst_twoflow_admission_new (GST_TWOFLOW_ADMISSION_NONE, 1000);
  GstTwoflowAdmissionDecision d;

  gst_twoflow_admission_add (a, 1, "x", G_MAXUINT32);
  gst_twoflow_admission_handle_candidate (a, G_MAXUINT32, &d);
  fail_unless (d.admit);
  fail_unless_equals_string (gst_twoflow_admission_mode_to_string (d.mode),
      "none");
  gst_twoflow_admission_free (a);
}

GST_END_TEST;

static void
record (GstTwoflowProfile * p, GstTwoflowRecordKind kind, gboolean essential,
    GstClockTime t, gsize size)
{
  GstTwoflowFrameHeader h;

  gst_twoflow_frame_header_init (&h);
  h.kind = kind;
  h.codec = kind == GST_TWOFLOW_RECORD_AUDIO ? GST_TWOFLOW_CODEC_UNKNOWN :
      GST_TWOFLOW_CODEC_H264;
  h.picture_type = essential ? GST_TWOFLOW_PICTURE_I : GST_TWOFLOW_PICTURE_B;
  h.flags = essential ? GST_TWOFLOW_FLAG_ESSENTIAL : 0;
  h.pts = t;
  h.dts = kind == GST_TWOFLOW_RECORD_AUDIO ? GST_CLOCK_TIME_NONE : t;
  h.duration = 40 * GST_MSECOND;
  gst_twoflow_profile_handle_record (p, &h, size);
}

/* A 3 s video 10 h in: 25 fps, an I frame of 10 kB a second and B frames
 * of 1 kB, the second second's B frames twice as big; audio of 200 bytes
 * every 20 ms starting 20 ms before the video; the two flows handed over
 * out of order as the scan's two threads do. */
GST_START_TEST (test_profile)
{
  GstTwoflowProfile *p = gst_twoflow_profile_new (GST_SECOND);
  GstTwoflowProfileInfo in;
  GstClockTime base = 36000 * GST_SECOND;
  guint64 levels[GST_TWOFLOW_PROFILE_N_LEVELS];
  guint i;

  for (i = 0; i < 75; i++)
    if (i % 25 == 0)
      record (p, GST_TWOFLOW_RECORD_FRAME, TRUE, base + i * 40 * GST_MSECOND,
          10000);
  for (i = 0; i < 75; i++)
    if (i % 25 != 0)
      record (p, GST_TWOFLOW_RECORD_FRAME, FALSE,
          base + i * 40 * GST_MSECOND, i / 25 == 1 ? 2000 : 1000);
  for (i = 0; i < 151; i++)
    record (p, GST_TWOFLOW_RECORD_AUDIO, TRUE,
        base - 20 * GST_MSECOND + i * 20 * GST_MSECOND, 200);
  record (p, GST_TWOFLOW_RECORD_END, TRUE, GST_CLOCK_TIME_NONE, 68);

  gst_twoflow_profile_get_info (p, &in);
  fail_unless_equals_int (in.codec, GST_TWOFLOW_CODEC_H264);
  fail_unless_equals_uint64 (in.frames, 75);
  fail_unless_equals_uint64 (in.essential_frames, 3);
  fail_unless_equals_uint64 (in.enhanced_frames, 72);
  fail_unless_equals_uint64 (in.audio_records, 151);
  fail_unless_equals_uint64 (in.start, base - 20 * GST_MSECOND);
  fail_unless_equals_uint64 (in.duration, 3020 * GST_MSECOND);
  fail_unless_equals_uint64 (in.enhanced_bytes, 24 * 1000 * 2 + 24 * 2000);
  /* peaks over 1 s windows: the second second's B frames; audio starts in
   * the window before the video's first */
  fail_unless_equals_uint64 (in.enhanced_peak_rate, 24 * 2000 * 8);
  fail_unless_equals_uint64 (in.essential_peak_rate, (10000 + 50 * 200) * 8);
  fail_unless_equals_uint64 (in.peak_rate,
      (10000 + 24 * 2000 + 50 * 200) * 8);
  fail_unless_equals_uint64 (in.enhanced_mean_rate,
      gst_util_uint64_scale (in.enhanced_bytes * 8, GST_SECOND, in.duration));
  fail_unless_equals_uint64 (in.audio_mean_rate,
      gst_util_uint64_scale (151 * 200 * 8, GST_SECOND, in.duration));

  gst_twoflow_profile_levels (in.enhanced_mean_rate, in.enhanced_peak_rate,
      levels);
  fail_unless_equals_uint64 (levels[0], MAX (in.enhanced_mean_rate / 4,
          16000));
  fail_unless (levels[GST_TWOFLOW_PROFILE_N_LEVELS - 1] + 1 >=
      in.enhanced_peak_rate * 2 * 1.05);
  for (i = 1; i < GST_TWOFLOW_PROFILE_N_LEVELS; i++)
    fail_unless (levels[i] > levels[i - 1]);
  gst_twoflow_profile_free (p);
}

GST_END_TEST;

static Suite *
twoflowadmission_suite (void)
{
  Suite *s = suite_create ("twoflowadmission");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_configured);
  tcase_add_test (tc, test_measured);
  tcase_add_test (tc, test_none);
  tcase_add_test (tc, test_smoothed);
  tcase_add_test (tc, test_measured_targets);
  tcase_add_test (tc, test_profile);
  return s;
}

GST_CHECK_MAIN (twoflowadmission);
