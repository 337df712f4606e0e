/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — admission control of its sessions
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * The session's rates for admission from the server's INFO
 * (docs/system.md, "Admission control"), the decision for a new viewer
 * (every decision logged as ADMISSION), the admitted sessions' samples
 * from the server's progress events (measured mode); the sans-IO core is
 * gst-libs/gst/twoflow/twoflowadmission.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/gst.h>
#include "twoflow-admission.h"
#include "twoflow-protocol.h"
#include "twoflow-proxy-options.h"
#include "twoflow-proxy-session.h"
#include "twoflow-proxy-admission.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_admission_debug);
#define GST_CAT_DEFAULT twoflow_proxy_admission_debug

GstTwoflowAdmission *admission;  /* the admitted RTSP sessions */
static void (*decision_hook) (JsonObject * log);

void
admission_set_decision_hook (void (*hook) (JsonObject * log))
{
  decision_hook = hook;
}

static GstClockTime
admission_now (void)
{
  return g_get_monotonic_time () * GST_USECOND;
}

/* One progress event of the server: a sample for measured admission. */
static void
update_measurement (ProxySession * ps, JsonObject * ev)
{
  GstTwoflowAdmissionSample sample = { 0, };
  GstStructure *st = NULL;
  JsonObject *tc, *es;

  sample.essential_bytes = counter_get (&ps->ess_bytes);
  sample.enhanced_bytes = counter_get (&ps->enh_bytes);
  if (ps->enh_src)
    g_object_get (ps->enh_src, "stats", &st, NULL);
  if (st) {
    guint64 recovered = 0;

    gst_structure_get_uint64 (st, "received", &sample.received);
    gst_structure_get_uint64 (st, "lost", &sample.lost);
    /* the path's loss: what retransmission recovered was lost too */
    gst_structure_get_uint64 (st, "rtx-recovered", &recovered);
    sample.lost += recovered;
    sample.received -= MIN (recovered, sample.received);
    gst_structure_free (st);
  }
  tc = json_object_has_member (ev, "transcoder_stats") ?
      json_object_get_object_member (ev, "transcoder_stats") : NULL;
  if (tc) {
    sample.input_bitrate = twoflow_json_get_int (tc, "input-bitrate", 0);
    sample.target_bitrate = twoflow_json_get_int (tc, "target-bitrate", 0);
  }
  es = json_object_has_member (ev, "essential_stats") ?
      json_object_get_object_member (ev, "essential_stats") : NULL;
  sample.segments_late = es ? twoflow_json_get_int (es, "segments-late", 0) :
      0;
  /* the paper's health: the essential sender's target, sent and queued
   * bytes and retransmissions; the enhanced sender's bytes sent */
  if (es) {
    /* S/(T(1-p̂)) of the segment being sent; the stats' rates are B/s */
    sample.essential_target = twoflow_json_get_int (es, "nominal-rate", 0)
        * 8;
    sample.essential_sent = twoflow_json_get_int (es, "bytes-sent", 0);
    sample.essential_queued = twoflow_json_get_int (es, "bytes-queued", 0);
    sample.essential_retransmissions = twoflow_json_get_int (es,
        "retransmissions", 0);
    sample.essential_mss = twoflow_json_get_int (es, "mss", 0);
  }
  ps->enh_rate_changes = twoflow_json_get_int (ev, "enhanced_rate_changes",
      ps->enh_rate_changes);
  if (json_object_has_member (ev, "enhanced_stats"))
    sample.enhanced_sent = twoflow_json_get_int (json_object_get_object_member
        (ev, "enhanced_stats"), "bytes-sent", 0);
  gst_twoflow_admission_handle_sample (admission, ps->id, &sample,
      admission_now ());
  {
    GstTwoflowAdmissionHealth h;

    if (gst_twoflow_admission_get_health (admission, ps->id, &h)) {
      ps->samples++;
      if (ps->samples > GST_TWOFLOW_ADMISSION_LOSS_WINDOW && !h.healthy)
        ps->unhealthy_samples++;
    }
  }
}

static guint64 *
json_rates (JsonObject * info, const gchar * name, guint * n)
{
  JsonArray *a = json_object_has_member (info, name) ?
      json_object_get_array_member (info, name) : NULL;
  guint64 *r;
  guint i;

  *n = a ? json_array_get_length (a) : 0;
  r = g_new0 (guint64, MAX (*n, 1));
  for (i = 0; i < *n; i++)
    r[i] = json_array_get_int_element (a, i);
  return r;
}

/* A session's rates for admission from the server's INFO reply
 * (docs/system.md, "Admission control"): its peak and its smoothed rates,
 * the essential flow's cTCP target per segment and the enhanced flow's
 * window rates, with where its enhanced flow starts: one segment minus the
 * smoothing lead in, or at once with a prefix (then the essential flow
 * starts at segment 1). Free the arrays with rates_clear(). */
static void
rates_from_info (JsonObject * info, const gchar * video,
    GstTwoflowAdmissionRates * r)
{
  gchar *prefix = prefix_path (video);
  gboolean has_prefix = g_file_test (prefix, G_FILE_TEST_IS_REGULAR);
  gdouble T = twoflow_json_get_double (info, "segment_duration", opt_segment);
  /* without a prefix: one segment, or the server's start-up ramp's lead */
  gdouble lead = has_prefix ? 0 : twoflow_json_get_double (info,
      "startup_lead", T), slead;

  memset (r, 0, sizeof (*r));
  r->peak_rate = twoflow_json_get_int (info, "peak_rate", 0);
  r->essential_rates = json_rates (info, "essential_segment_rates",
      &r->n_essential);
  r->segment_duration = (GstClockTime) (T * GST_SECOND);
  r->essential_skip = has_prefix ? 1 : 0;
  if (g_strcmp0 (twoflow_json_get_string (info, "enhanced_rate", ""),
          "total") == 0 && twoflow_json_get_int (info, "total_rate", 0) > 0) {
    /* the session's total is constant: R for the whole session (the
     * essential flow's share is in it) */
    guint64 *one = g_new (guint64, 1);

    one[0] = twoflow_json_get_int (info, "total_rate", 0);
    r->enhanced_rates = one;
    r->n_enhanced = 1;
    g_free ((gpointer) r->essential_rates);
    r->essential_rates = g_new0 (guint64, 1);
    r->n_essential = 1;
    r->window = (GstClockTime) ((twoflow_json_get_double (info, "duration",
                0) + T + 1) * GST_SECOND);
    r->segment_duration = r->window;
    r->essential_skip = 0;
    r->enhanced_start = 0;
  } else if (g_strcmp0 (twoflow_json_get_string (info, "enhanced_rate", ""),
          "smooth") == 0) {
    r->enhanced_rates = json_rates (info, "enhanced_window_rates",
        &r->n_enhanced);
    r->window = (GstClockTime) (twoflow_json_get_double (info,
            "smoothing_window", 1) * GST_SECOND);
    slead = twoflow_json_get_double (info, "smoothing_lead", 0);
    r->enhanced_start = (GstClockTime) (MAX (lead - slead, 0) * GST_SECOND);
  } else {
    /* the old pacing: 1.25 x its 1 s peak for the whole video */
    guint64 *one = g_new (guint64, 1);

    one[0] = twoflow_json_get_int (info, "enhanced_peak_rate", 0) * 5 / 4;
    r->enhanced_rates = one;
    r->n_enhanced = 1;
    r->window = (GstClockTime) ((twoflow_json_get_double (info, "duration",
                0) + 1) * GST_SECOND);
    r->enhanced_start = (GstClockTime) (lead * GST_SECOND);
  }
  g_free (prefix);
}

static void
rates_clear (GstTwoflowAdmissionRates * r)
{
  g_free ((gpointer) r->essential_rates);
  g_free ((gpointer) r->enhanced_rates);
  r->essential_rates = r->enhanced_rates = NULL;
}

/* Adds an admitted (or fetching) session with its rates: reserved in
 * configured mode, measured in every mode (its health is in the logs). */
void
admission_add (ProxySession * ps)
{
  GstTwoflowAdmissionRates r;

  rates_from_info (ps->info, ps->video, &r);
  gst_twoflow_admission_add_rates (admission, ps->id, ps->video, &r,
      admission_now ());
  rates_clear (&r);
}

/* Called once per viewer: at DESCRIBE (stage "describe": a rejection
 * answers 503 with the reason; the media that DESCRIBE makes is then
 * admitted without a second decision), or when a session is set up
 * without one (stage "session": RTSP without DESCRIBE, HLS, fetches); the
 * caller then adds it, reserving its rates. Every decision is logged. */
gboolean
admission_check (const gchar * video, JsonObject * info, const gchar * stage,
    gchar ** reason)
{
  GstTwoflowAdmissionDecision d;
  JsonObject *log = json_object_new ();
  GstTwoflowAdmissionRates r;
  guint64 peak;

  rates_from_info (info, video, &r);
  peak = r.peak_rate;
  gst_twoflow_admission_handle_candidate_rates (admission, &r,
      admission_now (), &d);
  rates_clear (&r);
  json_object_set_string_member (log, "video", video);
  json_object_set_int_member (log, "peak_rate", peak);
  json_object_set_int_member (log, "sessions", d.sessions);
  json_object_set_string_member (log, "mode",
      gst_twoflow_admission_mode_to_string (d.mode));
  if (d.mode == GST_TWOFLOW_ADMISSION_CONFIGURED) {
    json_object_set_string_member (log, "basis",
        gst_twoflow_admission_get_basis (admission) ==
        GST_TWOFLOW_ADMISSION_BASIS_PEAK ? "peak" : "smoothed");
    /* what it needs (peak, or its highest smoothed rate until both its
     * flows run) against the residual at the tightest instant */
    json_object_set_double_member (log, "rate", d.rate);
    json_object_set_double_member (log, "capacity", d.capacity);
    json_object_set_double_member (log, "residual", d.residual);
  }
  json_object_set_string_member (log, "decision", d.admit ? "admit" :
      "reject");
  json_object_set_string_member (log, "stage", stage);
  if (!d.admit)
    json_object_set_string_member (log, "reason", d.reason);
  GST_DEBUG ("%s at %s: %s", video, stage, d.admit ? "admitted" : d.reason);
  log_json ("ADMISSION", log);
  if (decision_hook)
    decision_hook (log);
  json_object_unref (log);
  *reason = d.reason;
  return d.admit;
}

/* the smoothed reservation runs from here, when the flows start */
static void
admission_started (ProxySession * ps)
{
  gst_twoflow_admission_set_start (admission, ps->id, admission_now ());
}

/* the measured health (measured admission's view) at the end */
static void
admission_report (ProxySession * ps, JsonObject * o)
{
  GstTwoflowAdmissionHealth h;
  JsonObject *ho;

  if (!gst_twoflow_admission_get_health (admission, ps->id, &h))
    return;
  ho = json_object_new ();
  json_object_set_boolean_member (ho, "healthy", h.healthy);
  json_object_set_double_member (ho, "essential_rate", h.essential_rate);
  json_object_set_double_member (ho, "enhanced_rate", h.enhanced_rate);
  json_object_set_double_member (ho, "essential_ratio", h.essential_ratio);
  json_object_set_double_member (ho, "enhanced_ratio", h.enhanced_ratio);
  json_object_set_double_member (ho, "loss", h.loss);
  json_object_set_double_member (ho, "essential_loss", h.essential_loss);
  json_object_set_double_member (ho, "transcoder_ratio", h.rate_ratio);
  json_object_set_int_member (ho, "unhealthy_samples", ps->unhealthy_samples);
  json_object_set_int_member (ho, "samples", ps->samples);
  json_object_set_object_member (o, "health", ho);
}

void
twoflow_proxy_admission_init (void)
{
  static const ProxySessionHooks hooks = { NULL, NULL, admission_started,
    update_measurement, admission_report
  };

  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_admission_debug,
      "twoflow-proxy-admission", 0, "twoflow-proxy: admission control");
  admission = gst_twoflow_admission_new (opt_measured ?
      GST_TWOFLOW_ADMISSION_MEASURED : opt_wan_capacity > 0 ?
      GST_TWOFLOW_ADMISSION_CONFIGURED : GST_TWOFLOW_ADMISSION_NONE,
      (guint64) MAX (opt_wan_capacity, 0));
  gst_twoflow_admission_set_basis (admission,
      g_strcmp0 (opt_admission_rate, "peak") == 0 ?
      GST_TWOFLOW_ADMISSION_BASIS_PEAK : GST_TWOFLOW_ADMISSION_BASIS_SMOOTHED);
  proxy_session_add_hooks (&hooks);
}
