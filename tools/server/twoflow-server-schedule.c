/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — a video's schedules: the enhanced flow's smoothing per
 * window, the essential flow's start-up ramp (made once per video and
 * parameters)
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include "twoflow-protocol.h"
#include "twoflow-server-schedule.h"
#include "twoflow-server-options.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_schedule_debug);
#define GST_CAT_DEFAULT twoflow_server_schedule_debug

#define DEFAULT_SEGMENT_DURATION TWOFLOW_DEFAULT_SEGMENT_DURATION
#define SMOOTHING_HEADROOM 1.01 /* rtpgstpay's caps every second, rounding */
#define CTCP_P_HAT 0.05         /* cTCP's p̂ (its target S/(T(1-p̂))) */
/* start-up ramp: each essential record leaves this long before it plays
 * (the path's RTT and jitter; docs/system.md, "Start-up") */
#define STARTUP_MARGIN 0.2

static void
schedule_free (Schedule * sc)
{
  gst_twoflow_smoothing_free (sc->sm);
  g_free (sc);
}

/* The enhanced flow's pacing for @v: --enhanced-rate, and under "auto"
 * (the default) total for a frame trace, smooth for a media file. A
 * trace has no transcoder to follow the path and is the papers'
 * provisioned-pipe workload, where only a constant session total keeps
 * the sum of sessions under the pipe (Table II at wire load 0.935: E_f 0
 * against 239 per session smoothed); a media file is watched over a path
 * nobody provisioned, where the smoothed flow paced at play time lets the
 * transcoder code each frame for the path of its moment, and it starts
 * with the start-up ramp (docs/system.md, "Which pacing is the
 * default"). */
const gchar *
pacing_mode (const VideoInfo * v)
{
  if (g_str_equal (opt_enhanced_rate, "auto"))
    return v->is_trace ? "total" : "smooth";
  return opt_enhanced_rate;
}

gboolean
pacing_total (const VideoInfo * v)
{
  return g_str_equal (pacing_mode (v), "total");
}

/* The smoothing lead: --smoothing-lead, default the window */
gdouble
smoothing_lead_for (gdouble w)
{
  return opt_smoothing_lead >= 0 ? opt_smoothing_lead : w;
}

/* The enhanced flow's smoothing schedule for sessions with segments of
 * @segment_duration s: window --smoothing-window (default the segment
 * duration, at most 60 s), lead --smoothing-lead (default the window);
 * made once per video, window and lead. --enhanced-rate total: lead
 * @lead (the session's playback lead), and the essential flow's cTCP
 * targets from segment @skip on, one per window (compute_total(): the
 * enhanced flow starts with the essential one); @slead >= 0: that
 * smoothing lead (the start-up ramp's); the window is the time the
 * essential flow takes for a segment: cTCP (@essential "ctcp") has every
 * segment of a stored video ready and sends them back to back, each at
 * S/(T(1−p̂)) for T(1−p̂); TCP is handed segment k at kT (window T). */
Schedule *
video_schedule_for (VideoInfo * v, gdouble segment_duration, gdouble lead,
    gint skip, const gchar * essential, gdouble slead)
{
  gboolean total = pacing_total (v);
  gdouble w = total ? segment_duration * (g_strcmp0 (essential, "ctcp") == 0
      ? 1 - CTCP_P_HAT : 1) :
      opt_smoothing_window > 0 ? opt_smoothing_window :
      MIN (segment_duration > 0 ? segment_duration :
      DEFAULT_SEGMENT_DURATION, 60.0);
  gdouble l = total ? lead : slead >= 0 ? slead : smoothing_lead_for (w);
  gchar *key = g_strdup_printf ("%s/%.6f/%.6f/%.6f/%d", total ? "total" :
      "window", w, l, segment_duration, total ? skip : 0);
  Schedule *sc;

  if (!v->schedules)
    v->schedules = g_hash_table_new_full (g_str_hash, g_str_equal,
        g_free, (GDestroyNotify) schedule_free);
  sc = g_hash_table_lookup (v->schedules, key);
  if (sc) {
    g_free (key);
    return sc;
  }
  sc = g_new0 (Schedule, 1);
  sc->sm = gst_twoflow_smoothing_new_from (v->smoothing,
      (GstClockTime) (w * GST_SECOND), (GstClockTime) (l * GST_SECOND),
      SMOOTHING_HEADROOM);
  if (total) {
    guint n, k;
    /* the essential bytes of segment k over its window: cTCP's target
     * S/(T(1−p̂)); TCP's mean over its slot, S/T */
    guint64 *seg = gst_twoflow_smoothing_segment_rates (v->smoothing,
        (GstClockTime) (segment_duration * GST_SECOND),
        g_strcmp0 (essential, "ctcp") == 0 ? CTCP_P_HAT : 0, &n);

    k = MIN ((guint) MAX (skip, 0), n);
    gst_twoflow_smoothing_compute_total (sc->sm, seg + k, n - k);
    g_free (seg);
  } else {
    gst_twoflow_smoothing_compute (sc->sm);
  }
  gst_twoflow_smoothing_get_info (sc->sm, &sc->info);
  g_hash_table_insert (v->schedules, key, sc);
  GST_INFO ("%s: smoothing W %.1f s, L %.1f s: %u windows, %" G_GUINT64_FORMAT
      "..%" G_GUINT64_FORMAT " bit/s (mean %" G_GUINT64_FORMAT "), %"
      G_GUINT64_FORMAT " late, total %" G_GUINT64_FORMAT
      " bit/s, playout %.1f s", v->name, w, l, sc->info.n_windows,
      sc->info.min_rate, sc->info.max_rate, sc->info.mean_rate,
      sc->info.late_frames, sc->info.total_rate, sc->info.max_playout / 1e9);
  return sc;
}

/* The start-up ramp of a session without a prefix (docs/system.md,
 * "Start-up"): the essential cTCP flow sent at a catch-up rate until it is
 * a segment ahead, and playback after the shortest lead for which every
 * essential record of the ramp is there STARTUP_MARGIN before it plays;
 * made once per video and segment duration. NULL: no ramp (--startup
 * segment, --enhanced-rate total, or a lead no shorter than a segment:
 * the segment's stagger is as quick). */
const GstTwoflowStartupPlan *
video_startup_from (VideoInfo * v, gdouble segment_duration,
    GstClockTime from)
{
  GstTwoflowStartupPlan *plan;
  GstTwoflowStartupConfig cfg = { 0, };
  GArray *rec;
  gchar *key;
  guint i, n;

  if (!g_str_equal (opt_startup, "ramp") || pacing_total (v)
      || segment_duration <= 0)
    return NULL;
  if (!v->startups)
    v->startups = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
        g_free);
  /* a seek (@from: its key frame's decode time) ramps from there */
  key = GST_CLOCK_TIME_IS_VALID (from) ? g_strdup_printf ("%.6f@%"
      G_GUINT64_FORMAT, segment_duration, from) :
      g_strdup_printf ("%.6f", segment_duration);
  if (g_hash_table_lookup_extended (v->startups, key, NULL,
          (gpointer *) & plan)) {
    g_free (key);
    return plan;
  }
  rec = g_array_new (FALSE, FALSE, sizeof (GstTwoflowStartupRecord));
  cfg.start = GST_CLOCK_TIME_NONE;
  n = gst_twoflow_smoothing_n_frames (v->smoothing);
  for (i = 0; i < n; i++) {
    GstTwoflowStartupRecord r;
    gboolean ess;

    gst_twoflow_smoothing_get_frame (v->smoothing, i, &r.ts, &r.bytes, &ess);
    if (GST_CLOCK_TIME_IS_VALID (from) && r.ts < from)
      continue;
    cfg.start = MIN (cfg.start, r.ts);
    if (ess)
      g_array_append_val (rec, r);
  }
  /* audio before the first picture: the session's enhanced flow leaves
   * that lead early (build_enhanced), so the pictures play that much
   * sooner and the audio before them with the first one */
  if (!GST_CLOCK_TIME_IS_VALID (from) && video_audio_lead_early (v) > 0) {
    GstClockTime a = video_audio_lead_early (v);

    for (i = 0; i < rec->len; i++) {
      GstTwoflowStartupRecord *r = &g_array_index (rec,
          GstTwoflowStartupRecord, i);
      r->ts = MAX (r->ts, cfg.start + a) - a;
    }
  }
  cfg.segment_duration = segment_duration * GST_SECOND;
  cfg.p_hat = CTCP_P_HAT;
  cfg.factor = opt_startup_factor;
  /* default ceiling: the video's own 1 s peak, what a session of it may
   * send anyway */
  cfg.max_rate = opt_startup_max_rate > 0 ? (guint64) opt_startup_max_rate :
      v->peak_rate;
  cfg.target_lead = opt_startup_lead * GST_SECOND;
  cfg.margin = STARTUP_MARGIN * GST_SECOND;
  plan = g_new0 (GstTwoflowStartupPlan, 1);
  if (rec->len == 0 || !gst_twoflow_startup_plan ((GstTwoflowStartupRecord *)
          rec->data, rec->len, &cfg, plan)
      || plan->lead >= cfg.segment_duration) {
    g_free (plan);
    plan = NULL;
  }
  g_array_free (rec, TRUE);
  if (plan)
    GST_INFO ("%s: start-up ramp for %.1f s segments: %" G_GUINT64_FORMAT
        " bit/s, lead %.3f s, %u segment(s), a segment ahead at %.1f s",
        v->name, segment_duration, plan->rate, plan->lead / 1e9,
        plan->ramp_segments, GST_CLOCK_TIME_IS_VALID (plan->ahead_at) ?
        plan->ahead_at / 1e9 : -1.0);
  g_hash_table_insert (v->startups, key, plan);
  return plan;
}

const GstTwoflowStartupPlan *
video_startup (VideoInfo * v, gdouble segment_duration)
{
  return video_startup_from (v, segment_duration, GST_CLOCK_TIME_NONE);
}

/* The schedule INFO reports (no session yet): no prefix; playback one
 * segment after the essential flow starts, or after the start-up ramp's
 * lead, the enhanced flow sent that lead ahead */
Schedule *
video_schedule (VideoInfo * v, gdouble segment_duration)
{
  const GstTwoflowStartupPlan *plan = video_startup (v, segment_duration);

  return video_schedule_for (v, segment_duration, pacing_total (v) ?
      MAX (segment_duration, smoothing_lead_for (segment_duration)) : 0, 0,
      "ctcp", plan ? plan->lead / 1e9 : -1);
}

/* The proxy's playout buffer for a schedule, s: the lead or, when the
 * flow is sent further ahead (total), the longest a frame waits */
gdouble
schedule_playout (Schedule * sc)
{
  return MAX (sc->info.lead, sc->info.max_playout) / 1e9;
}

/* The smoothed rates (docs/system.md, "Enhanced-flow smoothing"): the
 * enhanced flow's rate per window and, for segments of @segment_duration
 * s (> 0; else the default), the essential flow's cTCP target per
 * segment. */
void
video_info_rates_to_json (VideoInfo * v, JsonObject * o,
    gdouble segment_duration, Schedule * sc)
{
  JsonArray *a = json_array_new ();
  const guint64 *r;
  guint n, i;

  if (segment_duration <= 0)
    segment_duration = DEFAULT_SEGMENT_DURATION;
  if (!sc)
    sc = video_schedule (v, segment_duration);

  json_object_set_string_member (o, "enhanced_rate", pacing_mode (v));
  {
    /* a session without a prefix: playback after this lead, the
     * essential flow's start-up ramp at this rate (0: none, lead T) */
    const GstTwoflowStartupPlan *plan = video_startup (v, segment_duration);

    json_object_set_double_member (o, "startup_lead", plan ?
        plan->lead / 1e9 : segment_duration);
    json_object_set_int_member (o, "startup_rate", plan ? plan->rate : 0);
  }
  json_object_set_double_member (o, "smoothing_window",
      sc->info.window / 1e9);
  json_object_set_double_member (o, "smoothing_lead", sc->info.lead / 1e9);
  json_object_set_int_member (o, "enhanced_smoothed_peak_rate",
      sc->info.max_rate);
  json_object_set_int_member (o, "smoothing_late_frames",
      sc->info.late_frames);
  json_object_set_int_member (o, "smoothing_playout_bytes",
      sc->info.max_playout_bytes);
  json_object_set_int_member (o, "smoothing_backlog_bytes",
      sc->info.max_backlog_bytes);
  json_object_set_double_member (o, "smoothing_max_playout",
      sc->info.max_playout / 1e9);
  /* total: the session's constant rate (essential + enhanced) */
  if (sc->info.total_rate)
    json_object_set_int_member (o, "total_rate", sc->info.total_rate);
  json_object_set_double_member (o, "playout_depth", schedule_playout (sc));
  r = gst_twoflow_smoothing_get_rates (sc->sm, &n);
  for (i = 0; i < n; i++)
    json_array_add_int_element (a, r[i]);
  json_object_set_array_member (o, "enhanced_window_rates", a);
  {
    guint64 *seg = gst_twoflow_smoothing_segment_rates (v->smoothing,
        segment_duration * GST_SECOND, CTCP_P_HAT, &n);

    a = json_array_new ();
    for (i = 0; i < n; i++)
      json_array_add_int_element (a, seg[i]);
    json_object_set_array_member (o, "essential_segment_rates", a);
    json_object_set_double_member (o, "segment_duration", segment_duration);
    g_free (seg);
  }
}

void
twoflow_server_schedule_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_server_schedule_debug,
      "twoflow-server-schedule", 0,
      "twoflow-server: smoothing schedules and start-up ramps");
}
