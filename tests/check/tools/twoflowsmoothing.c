/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: unit tests of the enhanced-flow smoothing core
 * (tools/common/twoflow-smoothing): hand-checked schedules, and the
 * Star Wars IV trace of data/ (an hour, 89,998 frames) whose schedule is
 * checked by an independent packet-level sender simulation. */
#include <gst/check/gstcheck.h>
#include "twoflow-smoothing.h"
#include <string.h>
#include <glib/gstdio.h>

#define MS GST_MSECOND
#define FRAME (40 * MS)         /* 25 fps */
#define MTU 1400
#define RECORD_HEADER 68        /* twoflow frame header */

/* Hand-checked: one 10,000-byte frame at 0.9 s, W = L = 1 s. Window 0's
 * mean is 80 kbit/s (10,000 B/s): in its last 0.1 s it sends 1,000 bytes;
 * the other 9,000 bytes must leave by the deadline 1.9 s. */
GST_START_TEST (test_hand_checked)
{
  GstTwoflowSmoothing *sm = gst_twoflow_smoothing_new (GST_SECOND, GST_SECOND,
      1.0);
  GstTwoflowSmoothingInfo in;
  const guint64 *r;
  guint n;

  gst_twoflow_smoothing_handle_frame (sm, 900 * MS, 10000, FALSE);
  gst_twoflow_smoothing_handle_frame (sm, 0, 500, TRUE);   /* the origin */
  gst_twoflow_smoothing_handle_frame (sm, 1500 * MS, 300, TRUE);
  gst_twoflow_smoothing_compute (sm);
  r = gst_twoflow_smoothing_get_rates (sm, &n);
  fail_unless_equals_int (n, 1);
  /* one window only: the frame is in window 0; the remainder is sent at
   * window 0's rate after the schedule, 9,000 B at 10,000 B/s: 1.9 s */
  fail_unless_equals_uint64 (r[0], 80000);
  gst_twoflow_smoothing_get_info (sm, &in);
  fail_unless_equals_uint64 (in.late_frames, 0);
  fail_unless (ABS (in.max_lateness) < 1000, "%" G_GINT64_FORMAT,
      in.max_lateness);
  gst_twoflow_smoothing_free (sm);

  /* now a small frame in window 1 too: its mean (2,400 bit/s) is floored
   * to 16 kbit/s (the big frame would end at 5.5 s), so the window is
   * raised to the least rate that ends it at 1.9 s: 9,000 bytes in 0.9 s,
   * 80 kbit/s */
  sm = gst_twoflow_smoothing_new (GST_SECOND, GST_SECOND, 1.0);
  gst_twoflow_smoothing_handle_frame (sm, 0, 500, TRUE);
  gst_twoflow_smoothing_handle_frame (sm, 900 * MS, 10000, FALSE);
  gst_twoflow_smoothing_handle_frame (sm, 1950 * MS, 300, FALSE);
  r = gst_twoflow_smoothing_get_rates (sm, &n);
  fail_unless_equals_int (n, 2);
  fail_unless_equals_uint64 (r[0], 80000);
  fail_unless (r[1] >= 80000 && r[1] <= 80000 * 1.0002, "%" G_GUINT64_FORMAT,
      r[1]);
  gst_twoflow_smoothing_get_info (sm, &in);
  fail_unless_equals_int (in.raised_windows, 1);
  fail_unless_equals_uint64 (in.late_frames, 0);
  fail_unless_equals_uint64 (in.max_rate, r[1]);
  /* most queued at the sender: the big frame at its release (at 1.95 s
   * it is out) */
  fail_unless_equals_uint64 (in.max_backlog_bytes, 10000);
  /* record lookups by decode time */
  fail_unless_equals_int (gst_twoflow_smoothing_window_at (sm, 0), 0);
  fail_unless_equals_int (gst_twoflow_smoothing_window_at (sm, 999 * MS), 0);
  fail_unless_equals_int (gst_twoflow_smoothing_window_at (sm, GST_SECOND), 1);
  fail_unless_equals_int (gst_twoflow_smoothing_window_at (sm, 50 * GST_SECOND),
      1);
  fail_unless_equals_uint64 (gst_twoflow_smoothing_rate_at (sm, 1200 * MS),
      r[1]);
  gst_twoflow_smoothing_free (sm);
}

GST_END_TEST;

/* Constant frames: every window at exactly the mean, nothing raised. */
GST_START_TEST (test_cbr_input)
{
  GstTwoflowSmoothing *sm = gst_twoflow_smoothing_new (2 * GST_SECOND,
      2 * GST_SECOND, 1.0);
  GstTwoflowSmoothingInfo in;
  const guint64 *r;
  guint n, i;

  for (i = 0; i < 250; i++)     /* 10 s of 1,000-byte frames: 200 kbit/s */
    gst_twoflow_smoothing_handle_frame (sm, i * FRAME, 1000, FALSE);
  r = gst_twoflow_smoothing_get_rates (sm, &n);
  gst_twoflow_smoothing_get_info (sm, &in);
  fail_unless_equals_int (n, 5);
  for (i = 0; i < n; i++)
    fail_unless_equals_uint64 (r[i], 200000);
  fail_unless_equals_uint64 (in.mean_rate, 200000);
  fail_unless_equals_uint64 (in.late_frames, 0);
  fail_unless_equals_int (in.raised_windows, 0);
  /* at the mean rate each frame takes exactly its 40 ms: it waits L - 40
   * ms at the receiver, and the sender never holds more than one frame */
  fail_unless (in.max_playout <= 2 * GST_SECOND - FRAME + 1000);
  fail_unless (in.max_playout >= 2 * GST_SECOND - FRAME - 1000);
  fail_unless_equals_uint64 (in.max_backlog_bytes, 1000);
  gst_twoflow_smoothing_free (sm);
}

GST_END_TEST;

/* The essential flow's cTCP targets: S/(T(1-p)). */
GST_START_TEST (test_segment_rates)
{
  GstTwoflowSmoothing *sm = gst_twoflow_smoothing_new (GST_SECOND, GST_SECOND,
      1.0);
  guint64 *r;
  guint n;

  gst_twoflow_smoothing_handle_frame (sm, 0, 95000, TRUE);
  gst_twoflow_smoothing_handle_frame (sm, 4 * GST_SECOND, 95000, TRUE);
  gst_twoflow_smoothing_handle_frame (sm, 12 * GST_SECOND, 19000, TRUE);
  gst_twoflow_smoothing_handle_frame (sm, 13 * GST_SECOND, 7777, FALSE);
  r = gst_twoflow_smoothing_segment_rates (sm, 10 * GST_SECOND, 0.05, &n);
  fail_unless_equals_int (n, 2);
  /* 190,000 B in 10 s over 0.95: 160,000 bit/s; 19,000 B: 16,000 */
  fail_unless_equals_uint64 (r[0], 160000);
  fail_unless_equals_uint64 (r[1], 16000);
  g_free (r);
  gst_twoflow_smoothing_free (sm);
}

GST_END_TEST;

typedef struct
{
  GstClockTime dts;
  guint64 bytes;                /* wire bytes (RTP packets) */
  gboolean essential;
} TFrame;

/* The trace of data/, decompressed by the xz program: DTS = index × 40 ms
 * (decode order), record = size + header, enhanced = P and B. */
static GArray *
load_trace (void)
{
  const gchar *root = g_getenv ("TWOFLOW_SOURCE_ROOT");
  gchar *xz = g_build_filename (root ? root : ".", "data",
      "star-wars-iv.txt.xz", NULL);
  gchar *argv[] = { (gchar *) "xz", (gchar *) "-dc", xz, NULL };
  gchar *out = NULL, *err = NULL, **lines, **l;
  gint status;
  GArray *a = g_array_new (FALSE, FALSE, sizeof (TFrame));

  fail_unless (g_spawn_sync (NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
          NULL, &out, &err, &status, NULL));
  fail_unless (g_spawn_check_wait_status (status, NULL), "xz: %s", err);
  /* g_strsplit_set, not g_strsplit: g_strsplit finds each line with
   * strstr on the rest of the text, which AddressSanitizer's interceptor
   * measures with strlen every time, quadratic in the 2 MB trace (~80 s
   * of CPU under ASan, almost all of this test) */
  lines = g_strsplit_set (out, "\n", -1);
  for (l = lines; *l; l++) {
    guint idx, ms, bytes;
    gchar t;
    TFrame f;

    if (sscanf (*l, "%u %c %u %u", &idx, &t, &ms, &bytes) != 4)
      continue;
    f.dts = (GstClockTime) a->len * FRAME;
    f.essential = t == 'I';
    f.bytes = bytes + RECORD_HEADER;
    if (!f.essential)
      f.bytes = gst_twoflow_smoothing_wire_bytes (f.bytes, MTU);
    g_array_append_val (a, f);
  }
  g_strfreev (lines);
  g_free (out);
  g_free (err);
  g_free (xz);
  return a;
}

/* An independent sender: the frames cut into RTP packets of at most MTU
 * bytes, a token bucket (depth 3000 bytes, as rudpsink's least) ticking
 * every ms at the rate of the window in progress, packets leaving when the
 * bucket holds their size. Returns the worst lateness (last packet's
 * departure minus the deadline release + @lead) in ns. */
static GstClockTimeDiff
packet_sender (GArray * tr, const guint64 * rates, guint n_windows,
    GstClockTime window, GstClockTime lead, guint64 * late)
{
  GstClockTimeDiff worst = G_MININT64;
  gdouble tokens = 0;
  guint i = 0;
  guint64 left = 0;             /* bytes of frame i still to send */
  GstClockTime t;
  gboolean have = FALSE;

  *late = 0;
  for (t = 0; i < tr->len; t += MS) {
    guint k = MIN (t / window, n_windows - 1);

    tokens = MIN (tokens + rates[k] / 8.0 / 1000.0, 3000.0);
    while (i < tr->len) {
      TFrame *f = &g_array_index (tr, TFrame, i);
      guint64 pkt;

      if (f->essential) {
        i++;
        continue;
      }
      if (f->dts > t)
        break;
      if (!have) {
        left = f->bytes;
        have = TRUE;
      }
      pkt = MIN (left, (guint64) MTU);
      if (tokens < pkt)
        break;
      tokens -= pkt;
      left -= pkt;
      if (left == 0) {
        GstClockTimeDiff d = (GstClockTimeDiff) t - (GstClockTimeDiff)
            (f->dts + lead);
        worst = MAX (worst, d);
        if (d > 0)
          (*late)++;
        have = FALSE;
        i++;
      }
    }
  }
  return worst;
}

static void
check_trace (GArray * tr, GstClockTime window, GstClockTime lead,
    GstTwoflowSmoothingInfo * out)
{
  GstTwoflowSmoothing *sm = gst_twoflow_smoothing_new (window, lead, 1.0);
  GstTwoflowSmoothingInfo in;
  const guint64 *r;
  guint64 enh_total = 0, *win, max_burst = 0, late;
  GstClockTimeDiff worst;
  guint n, i, k, raised = 0;
  gdouble sum = 0;

  for (i = 0; i < tr->len; i++) {
    TFrame *f = &g_array_index (tr, TFrame, i);
    gst_twoflow_smoothing_handle_frame (sm, f->dts, f->bytes, f->essential);
    if (!f->essential)
      enh_total += f->bytes;
  }
  gst_twoflow_smoothing_compute (sm);
  r = gst_twoflow_smoothing_get_rates (sm, &n);
  gst_twoflow_smoothing_get_info (sm, &in);
  fail_unless_equals_int (n, (tr->len * FRAME + window - 1) / window);
  fail_unless_equals_uint64 (in.frames, tr->len - 7500);        /* I: 1/12 */

  /* the schedule's rate per window: the window's own mean, or above it
   * only when a frame would be late otherwise */
  win = g_new0 (guint64, n);
  for (i = 0; i < tr->len; i++) {
    TFrame *f = &g_array_index (tr, TFrame, i);
    if (!f->essential)
      win[f->dts / window] += f->bytes;
  }
  for (k = 0; k < n; k++) {
    guint64 mean = (guint64) ceil (win[k] * 8e9 / window);
    fail_unless (r[k] >= MAX (mean, 16000), "window %u: %" G_GUINT64_FORMAT
        " < mean %" G_GUINT64_FORMAT, k, r[k], mean);
    raised += r[k] > MAX (mean, 16000);
    sum += r[k];
  }
  fail_unless_equals_int (raised, in.raised_windows);
  /* the schedule's mean is the flow's mean (within 2 %: the raised windows) */
  fail_unless (ABS (sum / n - in.mean_rate) < in.mean_rate * 0.02,
      "schedule mean %.0f vs flow mean %" G_GUINT64_FORMAT, sum / n,
      in.mean_rate);
  fail_unless (ABS ((gdouble) in.mean_rate - enh_total * 8e9 / (tr->len *
              FRAME)) < in.mean_rate * 0.001);

  /* no frame late: in the core's fluid model... */
  fail_unless_equals_uint64 (in.late_frames, 0);
  fail_unless (in.max_lateness <= 1000, "%" G_GINT64_FORMAT, in.max_lateness);
  /* ...and with real packets through a token bucket on a 1 ms tick: at
   * most a tick and a packet's time at the window's rate late */
  worst = packet_sender (tr, r, n, window, lead, &late);
  fail_unless (worst <= (GstClockTimeDiff) (2 * MS + MTU * 8e9 / in.min_rate),
      "packet sender %" G_GINT64_FORMAT " ns late (%" G_GUINT64_FORMAT
      " frames)", worst, late);

  /* the receiver's buffer: no frame waits longer than the lead, and it
   * never holds more than the bytes released in any lead-long stretch */
  fail_unless (in.max_playout <= lead);
  for (i = 0, k = 0; i < tr->len; i++) {
    guint64 b = 0;
    guint j;
    for (j = i; j < tr->len && g_array_index (tr, TFrame, j).dts <
        g_array_index (tr, TFrame, i).dts + lead; j++)
      if (!g_array_index (tr, TFrame, j).essential)
        b += g_array_index (tr, TFrame, j).bytes;
    max_burst = MAX (max_burst, b);
    i += 24;                    /* every second is enough for a bound */
  }
  fail_unless (in.max_playout_bytes <= max_burst + max_burst / 10,
      "%" G_GUINT64_FORMAT " > %" G_GUINT64_FORMAT, in.max_playout_bytes,
      max_burst);
  fail_unless (in.max_backlog_bytes > 0);
  g_free (win);
  *out = in;
  gst_twoflow_smoothing_free (sm);
}

/* The whole Star Wars IV trace: W = L = 10 s and, with a lead of only a
 * quarter of the window, 2.5 s. */
GST_START_TEST (test_star_wars)
{
  GArray *tr = load_trace ();
  GstTwoflowSmoothingInfo w10, w10l2, w2;
  guint64 peak1 = 0, w = 0;
  guint i;

  fail_unless_equals_int (tr->len, 89998);
  /* the flow's 1 s peak, as the server's profile computes it */
  for (i = 0; i < tr->len; i++) {
    TFrame *f = &g_array_index (tr, TFrame, i);
    if (i % 25 == 0) {
      peak1 = MAX (peak1, w);
      w = 0;
    }
    if (!f->essential)
      w += f->bytes;
  }
  peak1 = MAX (peak1, w) * 8;

  check_trace (tr, 10 * GST_SECOND, 10 * GST_SECOND, &w10);
  GST_INFO ("W=L=10 s: mean %" G_GUINT64_FORMAT " max %" G_GUINT64_FORMAT
      " (1 s peak %" G_GUINT64_FORMAT "), raised %u, playout %.2f s / %"
      G_GUINT64_FORMAT " B, backlog %" G_GUINT64_FORMAT " B", w10.mean_rate,
      w10.max_rate, peak1, w10.raised_windows, w10.max_playout / 1e9,
      w10.max_playout_bytes, w10.max_backlog_bytes);
  /* smoothing pays: the smoothed peak is far below the 1 s peak the fixed
   * rate (1.25 x it) paced at, and with L = W hardly a window is raised */
  fail_unless (w10.max_rate < peak1 * 3 / 4, "%" G_GUINT64_FORMAT " vs %"
      G_GUINT64_FORMAT, w10.max_rate, peak1);
  fail_unless (w10.raised_windows <= w10.n_windows / 50);

  check_trace (tr, 10 * GST_SECOND, 2500 * MS, &w10l2);
  /* a shorter lead needs more rate in places, never less */
  fail_unless (w10l2.raised_windows > w10.raised_windows);
  fail_unless (w10l2.max_rate >= w10.max_rate);
  fail_unless (w10l2.max_playout <= 2500 * MS);

  check_trace (tr, 2 * GST_SECOND, 2 * GST_SECOND, &w2);
  /* a shorter window follows the scenes more closely: higher peak */
  fail_unless (w2.max_rate > w10.max_rate);
  fail_unless (w2.max_playout_bytes < w10.max_playout_bytes);
  g_array_free (tr, TRUE);
}

GST_END_TEST;

/* compute_total(): the sender reads ahead, so a packet-level sender on a
 * 1 ms virtual clock with every frame available from the start, paced at
 * the window's rate (token bucket of 3000 bytes, as rudpsink's least).
 * Returns the worst lateness (ns); counts late frames, the enhanced bytes
 * sent per window (@sent, n_windows + 1 entries, the last for whatever
 * leaves after the schedule) and the longest a frame waits for its
 * deadline at the receiver (@max_wait). */
static GstClockTimeDiff
packet_sender_ahead (GArray * tr, const guint64 * rates, guint n_windows,
    GstClockTime window, GstClockTime lead, guint64 * late, guint64 * sent,
    GstClockTime * max_wait)
{
  GstClockTimeDiff worst = G_MININT64;
  gdouble tokens = 0;
  guint i = 0;
  guint64 left = 0;
  GstClockTime t;
  gboolean have = FALSE;

  *late = 0;
  *max_wait = 0;
  memset (sent, 0, (n_windows + 1) * sizeof (guint64));
  for (t = 0; i < tr->len; t += MS) {
    guint k = MIN (t / window, n_windows);

    tokens = MIN (tokens + rates[MIN (k, n_windows - 1)] / 8.0 / 1000.0,
        3000.0);
    while (i < tr->len) {
      TFrame *f = &g_array_index (tr, TFrame, i);
      guint64 pkt;

      if (f->essential) {
        i++;
        continue;
      }
      if (!have) {
        left = f->bytes;
        have = TRUE;
      }
      pkt = MIN (left, (guint64) MTU);
      if (tokens < pkt)
        break;
      tokens -= pkt;
      left -= pkt;
      sent[k] += pkt;
      if (left == 0) {
        GstClockTimeDiff d = (GstClockTimeDiff) t - (GstClockTimeDiff)
            (f->dts + lead);
        worst = MAX (worst, d);
        if (d > 0)
          (*late)++;
        else
          *max_wait = MAX (*max_wait, (GstClockTime) - d);
        have = FALSE;
        i++;
      }
    }
  }
  return worst;
}

/* 600 s at 25 fps, GOP of 12 (I: essential), the sizes following the
 * scenes: a busy first @busy s at 3x, then a 4-minute cycle 0.4x..1.6x. */
static GArray *
synthetic_session (guint busy)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (TFrame));
  guint i;

  for (i = 0; i < 600 * 25; i++) {
    gdouble s = i / 25.0;
    gdouble f = s < busy ? 3.0 : 1.0 + 0.6 * sin (2 * G_PI * s / 240.0);
    TFrame fr;

    fr.dts = (GstClockTime) i * FRAME;
    fr.essential = i % 12 == 0;
    fr.bytes = (guint64) (f * (fr.essential ? 20000 : i % 3 == 0 ? 6000 :
            2500)) + RECORD_HEADER;
    if (!fr.essential)
      fr.bytes = gst_twoflow_smoothing_wire_bytes (fr.bytes, MTU);
    g_array_append_val (a, fr);
  }
  return a;
}

/* The schedule of compute_total() for @tr (W = T = @window, lead @lead,
 * the essential flow at its cTCP targets, segment k sent in window k),
 * checked with the packet-level sender: no frame late, the session's
 * total (essential + enhanced sent) the same in every window, R not
 * above the least constant total that keeps the frames in time (1 %
 * less makes one late) or the mean x headroom. */
static void
check_total (GArray * tr, GstClockTime window, GstClockTime lead,
    GstTwoflowSmoothingInfo * out)
{
  GstTwoflowSmoothing *sm = gst_twoflow_smoothing_new (window, lead, 1.01);
  GstTwoflowSmoothingInfo in;
  const guint64 *r;
  guint64 *ess, *sent, *lower, late, R, mean, enh_bits = 0, ess_bits = 0;
  GstClockTime wait, next;
  GstClockTimeDiff worst;
  guint n, n_ess, i, k;
  gdouble tol;

  for (i = 0; i < tr->len; i++) {
    TFrame *f = &g_array_index (tr, TFrame, i);
    gst_twoflow_smoothing_handle_frame (sm, f->dts, f->bytes, f->essential);
    if (!f->essential)
      enh_bits += f->bytes * 8;
  }
  ess = gst_twoflow_smoothing_segment_rates (sm, window, 0.05, &n_ess);
  gst_twoflow_smoothing_compute_total (sm, ess, n_ess);
  gst_twoflow_smoothing_get_info (sm, &in);
  r = gst_twoflow_smoothing_get_rates (sm, &n);
  R = in.total_rate;
  fail_unless (R > 0);

  /* the session's total is R in every window: the enhanced rate is what
   * the essential flow leaves of it */
  for (k = 0; k < n; k++)
    fail_unless_equals_uint64 (r[k] + (k < n_ess ? ess[k] : 0), R);
  /* R: the mean total x 1.01, or the deadlines' need, whichever is more */
  for (k = 0; k < n_ess; k++)
    ess_bits += ess[k] * (window / GST_SECOND);
  mean = (guint64) ceil ((ess_bits + enh_bits) / (tr->len * 0.04) * 1.01);
  fail_unless (R >= mean, "%" G_GUINT64_FORMAT " < %" G_GUINT64_FORMAT, R,
      mean);
  fail_unless (ABS ((gdouble) in.total_mean_rate * 1.01 - mean) < 2 + mean *
      1e-6);

  /* sent by real packets, every frame available from the start */
  sent = g_new0 (guint64, n + 1);
  worst = packet_sender_ahead (tr, r, n, window, lead, &late, sent, &wait);
  tol = 2 * MS + MTU * 8e9 / in.min_rate;
  fail_unless (worst <= (GstClockTimeDiff) tol, "%" G_GINT64_FORMAT
      " ns late (%" G_GUINT64_FORMAT " frames)", worst, late);
  fail_unless_equals_uint64 (in.late_frames, 0);
  /* ...and the sender never idles before the end: in every window but the
   * last, enhanced + essential = R (within the bucket and a packet) */
  for (k = 0; k + 1 < n; k++) {
    gdouble total = sent[k] * 8.0 + (k < n_ess ? ess[k] : 0) * (window / 1e9);
    fail_unless (ABS (total - R * (window / 1e9)) <= (3000 + MTU) * 8,
        "window %u: %.0f bit vs R x W %.0f", k, total, R * (window / 1e9));
  }
  fail_unless (sent[n] == 0, "sent after the schedule: %" G_GUINT64_FORMAT,
      sent[n]);
  /* the core's playout figures are the sender's (within the tolerance) */
  fail_unless (ABS ((gdouble) wait - (gdouble) in.max_playout) <= tol,
      "wait %" G_GUINT64_FORMAT " vs %" G_GUINT64_FORMAT, wait, in.max_playout);

  /* minimal: when the deadlines set R, a total 1 % lower is late */
  if (R > mean + 1) {
    guint64 rl = R - R / 100;

    lower = g_new0 (guint64, n);
    for (k = 0; k < n; k++)
      lower[k] = rl - (k < n_ess ? ess[k] : 0);
    worst = packet_sender_ahead (tr, lower, n, window, lead, &late, sent,
        &wait);
    fail_unless (late > 0 && worst > (GstClockTimeDiff) tol,
        "R %" G_GUINT64_FORMAT " is not minimal: %" G_GUINT64_FORMAT
        " in time", R, rl);
    g_free (lower);
  }
  /* the sender's rate by its own clock */
  fail_unless_equals_uint64 (gst_twoflow_smoothing_rate_at_time (sm, 0,
          &next), r[0]);
  fail_unless_equals_uint64 (next, n > 1 ? window : GST_CLOCK_TIME_NONE);
  fail_unless_equals_uint64 (gst_twoflow_smoothing_rate_at_time (sm,
          n * window + 5 * GST_SECOND, &next), r[n - 1]);
  fail_unless_equals_uint64 (next, GST_CLOCK_TIME_NONE);
  g_free (sent);
  g_free (ess);
  *out = in;
  gst_twoflow_smoothing_free (sm);
}

/* The constant session total (compute_total()) on synthetic sessions and
 * on a 10-minute Star Wars excerpt. */
GST_START_TEST (test_total)
{
  GArray *tr = synthetic_session (0), *busy = synthetic_session (40), *sw;
  GstTwoflowSmoothingInfo a, b, c;
  guint i;

  /* scenes of ±60 %, L = W = 60 s: the mean x headroom is enough; the
   * quiet minutes send ahead, so frames wait longer than the lead */
  check_total (tr, 60 * GST_SECOND, 60 * GST_SECOND, &a);
  fail_unless (ABS ((gdouble) a.total_rate - a.total_mean_rate * 1.01) <= 2,
      "%" G_GUINT64_FORMAT " vs mean %" G_GUINT64_FORMAT, a.total_rate,
      a.total_mean_rate);
  fail_unless (a.total_deadline_rate < a.total_rate);
  fail_unless (a.max_playout > 60 * GST_SECOND, "%" G_GUINT64_FORMAT,
      a.max_playout);
  fail_unless (a.max_playout_bytes > 0);

  /* 40 s at 3x first, L = W = 10 s: the deadlines set R, far above the
   * mean (check_total: and 1 % less is late) */
  check_total (busy, 10 * GST_SECOND, 10 * GST_SECOND, &b);
  fail_unless (b.total_rate == b.total_deadline_rate
      || b.total_rate <= b.total_deadline_rate * 1.00001);
  fail_unless (b.total_rate > b.total_mean_rate * 3 / 2);

  /* a Star Wars excerpt (10 minutes from 20 min on), T = W = L = 60 s */
  sw = load_trace ();
  g_array_remove_range (sw, 0, 20 * 60 * 25);
  g_array_set_size (sw, 10 * 60 * 25);
  for (i = 0; i < sw->len; i++)
    g_array_index (sw, TFrame, i).dts = (GstClockTime) i * FRAME;
  check_total (sw, 60 * GST_SECOND, 60 * GST_SECOND, &c);
  GST_INFO ("Star Wars 20-30 min: total %" G_GUINT64_FORMAT " (mean %"
      G_GUINT64_FORMAT ", deadlines %" G_GUINT64_FORMAT "), playout %.1f s / %"
      G_GUINT64_FORMAT " B", c.total_rate, c.total_mean_rate,
      c.total_deadline_rate, c.max_playout / 1e9, c.max_playout_bytes);
  fail_unless (c.total_rate <= c.total_mean_rate * 1.05);
  g_array_free (tr, TRUE);
  g_array_free (busy, TRUE);
  g_array_free (sw, TRUE);
}

GST_END_TEST;

static Suite *
twoflowsmoothing_suite (void)
{
  Suite *s = suite_create ("twoflowsmoothing");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_hand_checked);
  tcase_add_test (tc, test_cbr_input);
  tcase_add_test (tc, test_segment_rates);
  tcase_add_test (tc, test_star_wars);
  tcase_add_test (tc, test_total);
  return s;
}

GST_CHECK_MAIN (twoflowsmoothing);
