/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — the HTTP side: HLS, /status, /metrics, /videos, the page
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * HLS of the merged video and audio (MPEG-TS segments, twoflow-hls.c)
 * kept under --hls-dir, live while the merge runs and as VoD once
 * EXT-X-ENDLIST is written; the status of the sessions (/status),
 * Prometheus metrics (/metrics), the video list (/videos) and the web
 * page; a clean shutdown (SIGTERM) and SIGHUP's reload.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include "twoflow-admission.h"
#include "twoflow-protocol.h"
#include "twoflow-store.h"
#include "twoflow-http.h"
#include "twoflow-metrics.h"
#include "twoflow-hls.h"
#include "twoflow-proxy-options.h"
#include "twoflow-proxy-control.h"
#include "twoflow-proxy-session.h"
#include "twoflow-proxy-report.h"
#include "twoflow-proxy-admission.h"
#include "twoflow-proxy-receiver.h"
#include "twoflow-proxy-output.h"
#include "twoflow-proxy-web.h"

/* H.265's HLS segments are served (ffmpeg plays the playlist), but the
 * page's player cannot show them: hls.js 1.5's MPEG-TS demuxer stops at
 * stream type 0x24 ("Unsupported HEVC in M2TS found", a fragParsingError
 * per segment, nothing shown in Chromium) */
#define PAGE_NO_H265 "H.265 video: the page's player (hls.js 1.5) reads no " \
  "H.265 from MPEG-TS segments; its HLS playlist plays in ffmpeg, or " \
  "fetch it or play it over RTSP"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_web_debug);
#define GST_CAT_DEFAULT twoflow_proxy_web_debug

static GList *live_sessions;    /* ProxySession, all kinds */
static GQueue decisions = G_QUEUE_INIT; /* the last admission decisions */
static GHashTable *hls_jobs;    /* video -> HlsJob */
static GHashTable *hls_failures;        /* video -> why its last run failed */
static guint64 total_ess_bytes, total_enh_bytes, total_sessions;
static gboolean shutting_down;  /* SIGTERM: HLS runs end, not cached */

static void
web_session_added (ProxySession * ps)
{
  live_sessions = g_list_append (live_sessions, ps);
  total_sessions++;
  ps->rate_us = g_get_monotonic_time ();    /* the first rate: from 0 */
}

static void
web_session_removed (ProxySession * ps)
{
  if (!g_list_find (live_sessions, ps))
    return;
  live_sessions = g_list_remove (live_sessions, ps);
  total_ess_bytes += counter_get (&ps->ess_bytes);
  total_enh_bytes += counter_get (&ps->enh_bytes);
}

static void
web_note_decision (JsonObject * log)
{
  JsonObject *o = json_object_new ();
  GList *l, *m = json_object_get_members (log);

  for (l = m; l; l = l->next)
    json_object_set_member (o, l->data, json_node_copy
        (json_object_get_member (log, l->data)));
  g_list_free (m);
  json_object_set_int_member (o, "time", g_get_real_time () / 1000);
  g_queue_push_tail (&decisions, o);
  while (g_queue_get_length (&decisions) > 20)
    json_object_unref (g_queue_pop_head (&decisions));
}

/* rates per flow, once a second */
static gboolean
rates_cb (gpointer data)
{
  gint64 now = g_get_monotonic_time ();
  GList *l;

  for (l = live_sessions; l; l = l->next) {
    ProxySession *ps = l->data;
    gint64 e = counter_get (&ps->ess_bytes), h = counter_get (&ps->enh_bytes);
    if (ps->rate_us) {
      gdouble dt = (now - ps->rate_us) / 1e6;
      ps->ess_rate = (e - ps->rate_ess) * 8 / dt;
      ps->enh_rate = (h - ps->rate_enh) * 8 / dt;
    }
    ps->rate_us = now;
    ps->rate_ess = e;
    ps->rate_enh = h;
  }
  return G_SOURCE_CONTINUE;
}

static JsonObject *
web_session_json (ProxySession * ps)
{
  JsonObject *o = proxy_session_report (ps);
  json_object_set_string_member (o, "kind", ps->kind ? ps->kind : "rtsp");
  json_object_set_double_member (o, "essential_rate", ps->ess_rate);
  json_object_set_double_member (o, "enhanced_rate", ps->enh_rate);
  return o;
}

static gchar *
web_status (gpointer data)
{
  JsonObject *root = json_object_new ();
  JsonArray *a = json_array_new (), *d = json_array_new ();
  GstStructure *st = gst_twoflow_admission_get_stats (admission);
  GList *l;
  gchar *t;

  for (l = live_sessions; l; l = l->next)
    json_array_add_object_element (a, web_session_json (l->data));
  for (l = decisions.head; l; l = l->next)
    json_array_add_object_element (d, json_object_ref (l->data));
  json_object_set_array_member (root, "sessions", a);
  json_object_set_array_member (root, "decisions", d);
  twoflow_json_add_structure (root, "admission", st);
  gst_structure_free (st);
  json_object_set_int_member (root, "time", g_get_real_time () / 1000);
  t = twoflow_json_to_line (root);
  json_object_unref (root);
  return t;
}

static void
web_metrics (TwoflowMetrics * m, gpointer data)
{
  GstStructure *st = gst_twoflow_admission_get_stats (admission);
  guint64 admitted = 0, rejected = 0, reserved = 0, ess = total_ess_bytes,
      enh = total_enh_bytes;
  GPtrArray *all;
  GList *l;

  gst_structure_get_uint64 (st, "admitted", &admitted);
  gst_structure_get_uint64 (st, "rejected", &rejected);
  gst_structure_get_uint64 (st, "reserved", &reserved);
  gst_structure_free (st);
  twoflow_metric (m, "twoflow_proxy_sessions", "gauge",
      "Sessions running (RTSP, HLS, fetch)", NULL,
      g_list_length (live_sessions));
  twoflow_metric (m, "twoflow_proxy_sessions_started_total", "counter",
      "Sessions started", NULL, total_sessions);
  twoflow_metric (m, "twoflow_proxy_admissions_total", "counter",
      "Admission decisions", "decision=\"admit\"", admitted);
  twoflow_metric (m, "twoflow_proxy_admissions_total", "counter",
      "Admission decisions", "decision=\"reject\"", rejected);
  twoflow_metric (m, "twoflow_proxy_reserved_bits_per_second", "gauge",
      "Peak rates reserved by the admitted sessions", NULL, reserved);
  for (l = live_sessions; l; l = l->next) {
    ProxySession *ps = l->data;
    ess += counter_get (&ps->ess_bytes);
    enh += counter_get (&ps->enh_bytes);
  }
  twoflow_metric (m, "twoflow_proxy_received_bytes_total", "counter",
      "Bytes received per flow", "flow=\"essential\"", ess);
  twoflow_metric (m, "twoflow_proxy_received_bytes_total", "counter",
      "Bytes received per flow", "flow=\"enhanced\"", enh);
  /* per session: rates, bytes, missing frames, loss, RTT, ... (bounded:
   * twoflow-metrics.c) */
  all = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
  for (l = live_sessions; l; l = l->next)
    g_ptr_array_add (all, web_session_json (l->data));
  twoflow_metrics_proxy_sessions (m, all);
}

/* /videos: the server's LIST on a connection of its own, asynchronous
 * (5 s for each step, TLS and AUTH as configured); the task's data is the
 * connection once open */
static void
videos_listed (GObject * source, GAsyncResult * res, gpointer user_data)
{
  GTask *task = user_data;
  GError *err = NULL;
  JsonObject *r = control_request_finish (res, &err), *o, *u;
  JsonArray *v;

  g_io_stream_close (g_task_get_task_data (task), NULL, NULL);
  if (!r) {
    g_task_return_error (task, err);
    g_object_unref (task);
    return;
  }
  o = json_object_new ();
  v = json_object_has_member (r, "videos") ?
      json_array_ref (json_object_get_array_member (r, "videos")) :
      json_array_new ();
  json_object_set_array_member (o, "videos", v);
  /* the server's catalog: which cannot play, and why; and those the page
   * cannot show (HLS_NO_AV1, PAGE_NO_H265) */
  u = json_object_has_member (r, "unsupported") ?
      json_object_ref (json_object_get_object_member (r, "unsupported")) :
      json_object_new ();
  if (json_object_has_member (r, "codecs")) {
    JsonObject *codecs = json_object_get_object_member (r, "codecs");
    GList *names = json_object_get_members (codecs), *l;

    for (l = names; l; l = l->next) {
      const gchar *c = json_object_get_string_member (codecs, l->data);
      const gchar *why = g_strcmp0 (c, "av1") == 0 ? HLS_NO_AV1 :
          g_strcmp0 (c, "h265") == 0 ? PAGE_NO_H265 : NULL;

      if (why && !json_object_has_member (u, l->data))
        json_object_set_string_member (u, l->data, why);
    }
    g_list_free (names);
  }
  json_object_set_object_member (o, "unsupported", u);
  json_object_set_array_member (o, "checking",
      json_object_has_member (r, "checking") ?
      json_array_ref (json_object_get_array_member (r, "checking")) :
      json_array_new ());
  g_task_return_pointer (task, twoflow_json_to_line (o), g_free);
  json_object_unref (o);
  json_object_unref (r);
  g_object_unref (task);
}

static void
videos_connected (GObject * source, GAsyncResult * res, gpointer user_data)
{
  GTask *task = user_data;
  GError *err = NULL;
  GSocketConnection *conn = control_connect_finish (res, &err);
  GDataInputStream *in;
  JsonObject *req;

  if (!conn) {
    g_task_return_error (task, err);
    g_object_unref (task);
    return;
  }
  g_task_set_task_data (task, conn, g_object_unref);
  in = g_data_input_stream_new (g_io_stream_get_input_stream (G_IO_STREAM
          (conn)));
  req = twoflow_simple_request_to_json (TWOFLOW_REQUEST_LIST, 0);
  control_request_async (in, g_io_stream_get_output_stream (G_IO_STREAM
          (conn)), req, NULL, videos_listed, task);
  json_object_unref (req);
  g_object_unref (in);
}

static void
web_videos (gpointer data, GAsyncReadyCallback callback, gpointer user_data)
{
  GTask *task = g_task_new (NULL, NULL, callback, user_data);

  g_task_set_source_tag (task, web_videos);
  control_connect_async (5, NULL, videos_connected, task);
}

static gchar *
web_videos_finish (GAsyncResult * res, GError ** error)
{
  return g_task_propagate_pointer (G_TASK (res), error);
}

/* ------------------------------------------------------------------ HLS */

typedef struct
{
  gchar *video, *dir;
  ProxySession *ps;
  GstElement *pipe;
  TwoflowHls *hls;
  guint watch;
  /* its session being set up (connect, INFO): the playlist requests that
   * wait for it (GTask) */
  gboolean starting;
  GList *waiting;
} HlsJob;

static void
hls_job_free (HlsJob * j)
{
  if (j->watch)
    g_source_remove (j->watch);
  if (j->ps && j->pipe) {
    JsonObject *rep = proxy_session_report (j->ps);
    json_object_set_string_member (rep, "kind", "hls");
    log_json ("SESSION-END", rep);
    json_object_unref (rep);
  }
  if (j->pipe) {
    gst_element_set_state (j->pipe, GST_STATE_NULL);
    twoflow_hls_free (j->hls);
    gst_object_unref (j->pipe);
  }
  if (j->ps) {
    gst_twoflow_admission_remove (admission, j->ps->id);
    web_session_removed (j->ps);
    proxy_session_free (j->ps);
  }
  g_free (j->video);
  g_free (j->dir);
  g_free (j);
}

static gboolean
hls_finish_idle (gpointer data)
{
  g_hash_table_remove (hls_jobs, data);
  g_free (data);
  return G_SOURCE_REMOVE;
}

static gboolean
hls_bus_cb (GstBus * bus, GstMessage * msg, gpointer data)
{
  HlsJob *j = data;

  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS) {
    /* a run cut by SIGTERM ends its playlist (EXT-X-ENDLIST) for its
     * viewers but is not kept as the video's VoD */
    twoflow_hls_finish (j->hls);
    if (!shutting_down) {
      gchar *done = g_build_filename (j->dir, "complete", NULL);
      g_file_set_contents (done, "", 0, NULL);
      g_free (done);
    }
    g_print ("HLS %s: %s in %s\n", j->video, shutting_down ? "cut" :
        "complete", j->dir);
    j->watch = 0;
    g_idle_add (hls_finish_idle, g_strdup (j->video));
    return G_SOURCE_REMOVE;
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;
    gst_message_parse_error (msg, &err, NULL);
    gchar *why = g_strdup_printf ("HLS of %s failed: %s: %s", j->video,
        GST_OBJECT_NAME (msg->src), err->message);
    /* at error level, and for the requests waiting for the playlist */
    g_printerr ("%s\n", why);
    g_hash_table_insert (hls_failures, g_strdup (j->video), why);
    g_clear_error (&err);
    twoflow_store_remove_tree (j->dir);
    j->watch = 0;
    g_idle_add (hls_finish_idle, g_strdup (j->video));
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

static gchar *
web_hls_failure (const gchar * video, gpointer data)
{
  return g_strdup (g_hash_table_lookup (hls_failures, video));
}

/* the requests waiting for @j's start: told it started, or why not
 * (@err taken; then the job is gone) */
static void
hls_job_started (HlsJob * j, GError * err)
{
  GList *waiting = j->waiting, *l;

  j->waiting = NULL;
  j->starting = FALSE;
  if (err) {
    twoflow_store_remove_tree (j->dir);
    g_hash_table_remove (hls_jobs, j->video);
  }
  for (l = waiting; l; l = l->next) {
    if (err)
      g_task_return_error (l->data, g_error_copy (err));
    else
      g_task_return_boolean (l->data, TRUE);
    g_object_unref (l->data);
  }
  g_list_free (waiting);
  g_clear_error (&err);
}

/* the session's INFO came: admission, then the pipeline runs */
static void
hls_session_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  HlsJob *j = user_data;
  GError *err = NULL;
  gchar *reason = NULL;
  GstElement *recv, *mux, *files;

  j->ps = proxy_session_new_finish (res, &err);
  if (!j->ps)
    goto fail;
  j->ps->kind = "hls";
  if (g_strcmp0 (j->ps->video_codec, "av1") == 0) {
    /* before admission: it would never play */
    g_set_error_literal (&err, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        HLS_NO_AV1);
    goto fail;
  }
  if (!admission_check (j->video, j->ps->info, "session", &reason)) {
    g_set_error (&err, G_IO_ERROR, G_IO_ERROR_BUSY, "rejected: %s", reason);
    g_free (reason);
    goto fail;
  }
  admission_add (j->ps);
  j->pipe = gst_pipeline_new ("hls");
  recv = build_receive_bin (j->ps);
  gst_bin_add (GST_BIN (j->pipe), recv);
  mux = build_mux (GST_BIN (j->pipe), j->ps, recv, "hls", &err);
  if (!mux)
    goto fail;
  files = gst_element_factory_make ("multifilesink", NULL);
  gst_bin_add (GST_BIN (j->pipe), files);
  if (!gst_element_link (mux, files)) {
    g_set_error (&err, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "HLS: mpegtsmux cannot feed multifilesink");
    goto fail;
  }
  /* 2 s segments (cut at the first key frame from there) */
  j->hls = twoflow_hls_new (j->dir, 2 * GST_SECOND, mux, files, &err);
  if (!j->hls)
    goto fail;
  startup_mark_pad (j->ps, "output", files, "sink");
  j->watch = gst_bus_add_watch (GST_ELEMENT_BUS (j->pipe), hls_bus_cb, j);
  gst_element_set_state (j->pipe, GST_STATE_PLAYING);
  proxy_session_start (j->ps);
  g_print ("HLS %s: live into %s\n", j->video, j->dir);
  hls_job_started (j, NULL);
  return;

fail:
  hls_job_started (j, err);
}

static void
web_hls_ensure (const gchar * video, gpointer data,
    GAsyncReadyCallback callback, gpointer user_data)
{
  GTask *task = g_task_new (NULL, NULL, callback, user_data);
  gchar *dir = g_build_filename (opt_hls_dir, video, NULL);
  gchar *done = g_build_filename (dir, "complete", NULL);
  gboolean cached = g_file_test (done, G_FILE_TEST_EXISTS);
  HlsJob *j = g_hash_table_lookup (hls_jobs, video);

  g_free (done);
  g_task_set_source_tag (task, web_hls_ensure);
  if (j && j->starting) {
    /* asked again while it starts: answered with the first */
    j->waiting = g_list_append (j->waiting, task);
    g_free (dir);
    return;
  }
  if (cached || j) {
    g_task_return_boolean (task, TRUE);
    g_object_unref (task);
    g_free (dir);
    return;
  }
  /* a run that did not finish: start again */
  g_hash_table_remove (hls_failures, video);
  twoflow_store_remove_tree (dir);
  g_mkdir_with_parents (dir, 0755);
  j = g_new0 (HlsJob, 1);
  j->video = g_strdup (video);
  j->dir = dir;
  j->starting = TRUE;
  j->waiting = g_list_append (NULL, task);
  g_hash_table_insert (hls_jobs, g_strdup (video), j);
  /* the job stays in hls_jobs while it starts: freed only from there */
  proxy_session_new_async (video, FALSE, NULL, hls_session_cb, j);
}

static gboolean
web_hls_ensure_finish (GAsyncResult * res, GError ** error)
{
  return g_task_propagate_boolean (G_TASK (res), error);
}

static gboolean
web_hls_growing (const gchar * video, const gchar * file, gpointer data)
{
  HlsJob *j = g_hash_table_lookup (hls_jobs, video);

  return j && j->hls && twoflow_hls_growing (j->hls, file);
}

/* The list of sessions and the last admission decisions (kept also when
 * nothing serves them: a fetch) */
void
twoflow_proxy_web_init (void)
{
  ProxySessionHooks hooks = { web_session_added, web_session_removed };

  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_web_debug,
      "twoflow-proxy-web", 0, "twoflow-proxy: the HTTP side");

  proxy_session_add_hooks (&hooks);
  admission_set_decision_hook (web_note_decision);
}

void
web_start (void)
{
  TwoflowHttpHooks hooks = {
    .metrics = web_metrics,.status = web_status,
    .videos = web_videos,.videos_finish = web_videos_finish,
    .hls_ensure = web_hls_ensure,.hls_ensure_finish = web_hls_ensure_finish,
    .hls_growing = web_hls_growing,.hls_failure = web_hls_failure
  };
  GError *err = NULL;

  hls_jobs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      (GDestroyNotify) hls_job_free);
  hls_failures = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      g_free);
  g_timeout_add_seconds (1, rates_cb, NULL);
  if (opt_http_port <= 0)
    return;
  g_mkdir_with_parents (opt_hls_dir, 0755);
  if (opt_http_user)
    twoflow_http_set_basic_auth (opt_http_user, opt_http_password);
  if (!twoflow_http_start (opt_http_address, opt_http_port, opt_www_dir, opt_hls_dir, &hooks,
          &err)) {
    g_printerr ("cannot listen for HTTP on port %d: %s\n", opt_http_port,
        err->message);
    exit (1);
  }
  g_print ("twoflow-proxy: HTTP on port %d (page /, /hls/NAME/index.m3u8, "
      "/status, /metrics, /healthz)\n", opt_http_port);
}

/* SIGTERM/SIGINT: every session's sources end their streams, so RTSP
 * viewers get EOS (an RTCP BYE) and HLS playlists get EXT-X-ENDLIST; the
 * loop stops once the HLS jobs are done or after 3 s. */
static gint shutdown_ticks;

static gboolean
shutdown_tick (gpointer loop)
{
  if (g_hash_table_size (hls_jobs) == 0 || ++shutdown_ticks > 30) {
    g_main_loop_quit (loop);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

static void
end_session_streams (gpointer data, gpointer unused)
{
  end_session_output (data);
}

gboolean
web_shutdown (gpointer loop)
{
  if (shutting_down)
    return G_SOURCE_REMOVE;
  shutting_down = TRUE;
  g_print ("twoflow-proxy: stopping, ending %u session(s)\n",
      g_list_length (live_sessions));
  g_list_foreach (live_sessions, end_session_streams, NULL);
  g_timeout_add (100, shutdown_tick, loop);
  return G_SOURCE_REMOVE;
}

/* SIGHUP: forget the videos' INFO (the server's list is read anew) */
gboolean
web_reload (gpointer data)
{
  g_hash_table_remove_all (info_cache);
  g_print ("twoflow-proxy: SIGHUP: video list reloaded\n");
  return G_SOURCE_CONTINUE;
}
