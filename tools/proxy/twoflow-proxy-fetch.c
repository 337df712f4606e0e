/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — --fetch and --prestage: one session into a file
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

#include <glib-unix.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include "twoflow-protocol.h"
#include "twoflow-store.h"
#include "twoflow-proxy-options.h"
#include "twoflow-proxy-session.h"
#include "twoflow-proxy-report.h"
#include "twoflow-proxy-admission.h"
#include "twoflow-proxy-receiver.h"
#include "twoflow-proxy-output.h"
#include "twoflow-proxy-fetch.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_fetch_debug);
#define GST_CAT_DEFAULT twoflow_proxy_fetch_debug

static gboolean fetch_signal_cb (gpointer data);

static gboolean
final_timeout_cb (gpointer data)
{
  ProxySession *ps = data;

  ps->final_timer = 0;
  g_main_loop_quit (ps->loop);
  return G_SOURCE_REMOVE;
}

static gboolean
fetch_bus_cb (GstBus * bus, GstMessage * msg, gpointer data)
{
  ProxySession *ps = data;

  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS) {
    GST_DEBUG ("fetch of %s: end of the output", ps->video);
    /* the output can be complete a moment before the server says done:
     * its final stats (what it sent) are wanted for the delivery
     * accounting, for up to 3 s */
    if (!ps->server_done && ps->merge && !ps->interrupted && !ps->error) {
      if (!ps->final_timer)
        ps->final_timer = g_timeout_add (3000, final_timeout_cb, ps);
      return G_SOURCE_CONTINUE;
    }
    g_main_loop_quit (ps->loop);
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING) {
    /* e.g. a receive buffer the kernel capped */
    GError *err = NULL;
    gchar *dbg = NULL;

    gst_message_parse_warning (msg, &err, &dbg);
    g_printerr ("warning: %s: %s (%s)\n", GST_OBJECT_NAME (msg->src),
        err->message, dbg ? dbg : "");
    g_clear_error (&err);
    g_free (dbg);
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;
    gst_message_parse_error (msg, &err, NULL);
    g_free (ps->error);
    ps->error = g_strdup_printf ("%s: %s", GST_OBJECT_NAME (msg->src),
        err->message);
    g_clear_error (&err);
    g_main_loop_quit (ps->loop);
  }
  return G_SOURCE_CONTINUE;
}

int
run_fetch (const gchar * video, const gchar * output, gboolean prestage)
{
  GError *err = NULL;
  ProxySession *ps = proxy_session_new (video, prestage, &err);
  GstElement *pipe, *recv, *sink, *mux = NULL;
  const gchar *container;
  gchar *tmp, *final;
  JsonObject *rep;
  guint watch, sig_term, sig_int;
  int rc;

  if (!ps) {
    g_printerr ("%s: %s\n", video, err->message);
    return 1;
  }
  final = prestage ? prefix_path (video) : g_strdup (output);
  if (prestage)
    g_mkdir_with_parents (opt_prefix_dir, 0755);
  tmp = g_strconcat (final, ".part", NULL);
  pipe = gst_pipeline_new ("fetch");
  if (!prestage)
    ps->kind = "fetch";         /* (build_receive_bin reads it) */
  recv = build_receive_bin (ps);
  sink = gst_element_factory_make ("filesink", NULL);
  g_object_set (sink, "location", tmp, NULL);
  gst_bin_add_many (GST_BIN (pipe), recv, sink, NULL);
  /* a trace's frames are sizes only: nothing a muxer could read */
  container = prestage || g_str_equal (twoflow_json_get_string (ps->info,
          "kind", "mpeg"), "trace") ? "es" : container_for (final,
      ps->video_codec);
  if (!g_str_equal (container, "es")) {
    mux = g_str_equal (container, "annexb") ? build_annexb (GST_BIN (pipe),
        ps, recv, &err) : build_mux (GST_BIN (pipe), ps, recv, container,
        &err);
    if (!mux) {
      g_printerr ("%s: %s\n", video, err->message);
      g_clear_error (&err);
      gst_object_unref (pipe);
      proxy_session_free (ps);
      g_free (tmp);
      g_free (final);
      return 1;
    }
    gst_element_link (mux, sink);
    gboolean audio = ps->audio_out && !g_str_equal (container, "annexb");

    g_print ("fetch %s: %s video%s%s into %s\n", video, ps->video_codec,
        audio ? " and " : "", audio ? ps->audio_codec : "", container);
  } else {
    gst_element_link (recv, sink);
  }
  ps->loop = g_main_loop_new (NULL, FALSE);
  if (!prestage) {
    /* its health is measured (not admitted: a fetch is asked for) */
    admission_add (ps);
  }
  sig_term = g_unix_signal_add (SIGTERM, fetch_signal_cb, ps);
  sig_int = g_unix_signal_add (SIGINT, fetch_signal_cb, ps);
  watch = gst_bus_add_watch (GST_ELEMENT_BUS (pipe), fetch_bus_cb, ps);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  proxy_session_start (ps);
  g_main_loop_run (ps->loop);
  rep = proxy_session_report (ps);
  gst_element_set_state (pipe, GST_STATE_NULL);
  json_object_set_string_member (rep, "output", final);
  json_object_set_string_member (rep, "container", container);
  /* a fetch that lost data never says "ok": "degraded" when the network
   * (or the transcoder, under congestion) explains every missing frame,
   * "incomplete" (exit 3) when frames the source has are missing without
   * a network cause */
  if (ps->error || ps->interrupted || !ps->merge
      || (ps->lost_frames == 0 && ps->audio_missing == 0)) {
    json_object_set_string_member (rep, "result", ps->error ? ps->error :
        ps->interrupted ? "interrupted" : "ok");
    rc = ps->error || ps->interrupted ? 1 : 0;
  } else {
    JsonObject *d = json_object_get_object_member (rep, "delivery");
    gchar *why = g_strdup_printf ("%s: %" G_GINT64_FORMAT " of %"
        G_GINT64_FORMAT " frames and %" G_GINT64_FORMAT " audio records "
        "missing, %" G_GINT64_FORMAT " without a network cause (network lost %"
        G_GINT64_FORMAT " packets, the receiver's kernel dropped %"
        G_GINT64_FORMAT ", %" G_GINT64_FORMAT " came too late, the "
        "transcoder dropped %" G_GINT64_FORMAT " frames)",
        ps->unexplained_frames > 0 ? "incomplete" : "degraded",
        ps->lost_frames, twoflow_json_get_int (d, "frames", 0),
        ps->audio_missing, ps->unexplained_frames,
        twoflow_json_get_int (d, "network_lost_packets", 0),
        twoflow_json_get_int (d, "kernel_drops", 0),
        twoflow_json_get_int (d, "late_packets", 0),
        twoflow_json_get_int (d, "transcoder_dropped", 0));

    json_object_set_string_member (rep, "result", why);
    g_printerr ("%s: %s\n", video, why);
    g_free (why);
    rc = ps->unexplained_frames > 0 ? 3 : 0;
  }
  json_object_set_boolean_member (rep, "interrupted", ps->interrupted);
  log_json (prestage ? "PRESTAGE-RESULT" : "FETCH-RESULT", rep);
  json_object_unref (rep);
  if (!ps->error || ps->interrupted) {
    /* an interrupted fetch keeps what it has (finished by its muxer) */
    if (!prestage || !ps->interrupted)
      g_rename (tmp, final);
  } else {
    g_printerr ("%s: %s\n", video, ps->error);
  }
  if (prestage && !ps->error && opt_prefix_max_bytes > 0) {
    guint64 left = 0;
    guint n = twoflow_store_evict (opt_prefix_dir, ".prefix.twf",
        opt_prefix_max_bytes, final, &left);
    g_print ("prefix store: %u evicted, %" G_GUINT64_FORMAT " of %"
        G_GINT64_FORMAT " bytes used\n", n, left, opt_prefix_max_bytes);
  }
  g_source_remove (sig_term);
  g_source_remove (sig_int);
  g_source_remove (watch);
  gst_object_unref (pipe);
  g_main_loop_unref (ps->loop);
  proxy_session_free (ps);
  g_free (tmp);
  g_free (final);
  return rc;
}

/* SIGTERM/SIGINT during a fetch: the muxer finishes the file (playable)
 * and the fetch ends as after the last frame; a second signal, or 5 s
 * without the end, stops at once. */
static gboolean
fetch_stop_now (gpointer data)
{
  ProxySession *ps = data;

  if (!ps->error)
    ps->error = g_strdup ("interrupted");
  g_main_loop_quit (ps->loop);
  return G_SOURCE_REMOVE;
}

static gboolean
fetch_signal_cb (gpointer data)
{
  ProxySession *ps = data;

  if (ps->interrupted)
    return fetch_stop_now (ps);
  ps->interrupted = TRUE;
  g_print ("fetch %s: signal: ending the stream\n", ps->video);
  end_session_output (ps);
  g_timeout_add_seconds (5, fetch_stop_now, ps);
  return G_SOURCE_CONTINUE;
}

void
twoflow_proxy_fetch_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_fetch_debug,
      "twoflow-proxy-fetch", 0, "twoflow-proxy: --fetch and --prestage");
}
