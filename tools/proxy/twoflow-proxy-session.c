/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — a session: its control connection, its PLAY and events
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * One proxy session per viewer (RTSP), HLS run, fetch or pre-staging: a
 * control connection of its own (INFO at once, PLAY once its receivers
 * listen, then the server's events: progress samples for admission, done,
 * errors) and the receiving bin's elements; the modules above hear of it
 * through ProxySessionHooks (its report: twoflow-proxy-report.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <gst/gst.h>
#include <gst/base/gstbasesrc.h>
#include <gst/twoflow/twoflowframe.h>
#include "twoflow-protocol.h"
#include "twoflow-proxy-options.h"
#include "twoflow-proxy-control.h"
#include "twoflow-proxy-session.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_session_debug);
#define GST_CAT_DEFAULT twoflow_proxy_session_debug

G_LOCK_DEFINE (counters);
static guint next_session_id = 1;
GHashTable *info_cache;
static GList *session_hooks;    /* ProxySessionHooks, as added */

#define SESSION_HOOKS(member, ...) G_STMT_START { \
  GList *l_; \
  for (l_ = session_hooks; l_; l_ = l_->next) { \
    const ProxySessionHooks *h_ = l_->data; \
    if (h_->member) \
      h_->member (__VA_ARGS__); \
  } \
} G_STMT_END

void
proxy_session_add_hooks (const ProxySessionHooks * hooks)
{
  session_hooks = g_list_append (session_hooks, g_memdup2 (hooks,
          sizeof (*hooks)));
}

void
proxy_session_notify_report (ProxySession * ps, JsonObject * report)
{
  SESSION_HOOKS (report, ps, report);
}

void
log_json (const gchar * tag, JsonObject * obj)
{
  gchar *text = twoflow_json_to_line (obj);
  g_print ("%s %s\n", tag, text);
  g_free (text);
}

void
proxy_session_free (ProxySession * ps)
{
  SESSION_HOOKS (removed, ps);
  if (ps->ready_timer)
    g_source_remove (ps->ready_timer);
  if (ps->final_timer)
    g_source_remove (ps->final_timer);
  if (ps->closed_timer)
    g_source_remove (ps->closed_timer);
  if (ps->cancel)
    g_cancellable_cancel (ps->cancel);
  g_clear_object (&ps->cancel);
  g_clear_object (&ps->in);
  if (ps->conn)
    g_io_stream_close (G_IO_STREAM (ps->conn), NULL, NULL);
  g_clear_object (&ps->conn);
  if (ps->info)
    json_object_unref (ps->info);
  if (ps->server_final)
    json_object_unref (ps->server_final);
  if (ps->arrivals)
    fclose (ps->arrivals);
  if (ps->arrivals_parser)
    gst_twoflow_parser_free (ps->arrivals_parser);
  g_free (ps->local_addr);
  g_free (ps->erap_key);
  g_free (ps->srtp_key);
  g_free (ps->ess_token);
  g_free (ps->video_codec);
  g_free (ps->audio_codec);
  g_free (ps->video);
  g_free (ps->error);
  g_free (ps);
}

/* The video a session asks for: --policy, --segment, the tracks
 * (borrowed strings: not cleared) */
static void
video_request (TwoflowVideoRequest * v, const gchar * video)
{
  v->video = (gchar *) video;
  v->policy_ip = g_strcmp0 (opt_policy, "ip") == 0;
  v->video_track = opt_video_track;
  v->audio_track = opt_audio_track;
  /* the smoothing schedule and segment rates for our segments */
  v->segment_duration = opt_segment;
}

static ProxySession *
session_alloc (const gchar * video, gboolean prestage)
{
  ProxySession *ps = g_new0 (ProxySession, 1);

  ps->created_us = g_get_monotonic_time ();
  ps->id = next_session_id++;
  ps->video = g_strdup (video);
  ps->prestage = prestage;
  ps->kind = prestage ? "prestage" : "rtsp";
  ps->start_frames = ps->start_audio = -1;
  return ps;
}

/* the connection (@conn taken) and its streams; the INFO request */
static JsonObject *
session_take_conn (ProxySession * ps, GSocketConnection * conn)
{
  GSocketAddress *la;
  TwoflowVideoRequest vr = { 0, };

  ps->conn = conn;
  ps->in = g_data_input_stream_new (g_io_stream_get_input_stream (G_IO_STREAM
          (ps->conn)));
  ps->out = g_io_stream_get_output_stream (G_IO_STREAM (ps->conn));
  ps->cancel = g_cancellable_new ();
  la = g_socket_connection_get_local_address (ps->conn, NULL);
  ps->local_addr = g_inet_address_to_string (g_inet_socket_address_get_address
      (G_INET_SOCKET_ADDRESS (la)));
  g_object_unref (la);
  video_request (&vr, ps->video);
  return twoflow_info_request_to_json (&vr);
}

/* INFO's reply (@info taken): the session's codecs and peak rate */
static void
session_take_info (ProxySession * ps, JsonObject * info)
{
  ps->info = info;
  ps->peak_rate = twoflow_json_get_int (ps->info, "peak_rate", 0);
  ps->video_codec = g_strdup (twoflow_json_get_string (ps->info, "codec",
          "mpeg2"));
  if (g_strcmp0 (twoflow_json_get_string (ps->info, "audio_codec", "none"),
          "none") != 0)
    ps->audio_codec = g_strdup (twoflow_json_get_string (ps->info,
            "audio_codec", NULL));
  g_hash_table_replace (info_cache, g_strdup (ps->video),
      json_object_ref (ps->info));
  GST_DEBUG ("session %u: %s (%s), INFO received", ps->id, ps->video,
      ps->kind);
  SESSION_HOOKS (added, ps);
}

ProxySession *
proxy_session_new (const gchar * video, gboolean prestage, GError ** error)
{
  ProxySession *ps = session_alloc (video, prestage);
  GSocketConnection *conn = control_connect (10, error);
  JsonObject *req, *info;

  if (!conn) {
    proxy_session_free (ps);
    return NULL;
  }
  req = session_take_conn (ps, conn);
  info = control_request (ps->in, ps->out, req, error);
  json_object_unref (req);
  if (!info) {
    proxy_session_free (ps);
    return NULL;
  }
  session_take_info (ps, info);
  return ps;
}

/* the asynchronous one: the task holds the session until INFO's reply */
typedef struct
{
  ProxySession *ps;
} SessionHold;

static void
session_hold_free (SessionHold * h)
{
  if (h->ps)
    proxy_session_free (h->ps);
  g_free (h);
}

static void
session_info_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  GTask *task = user_data;
  GError *err = NULL;
  JsonObject *info = control_request_finish (res, &err);
  SessionHold *h = g_task_get_task_data (task);
  ProxySession *ps = h->ps;

  if (!info) {
    g_task_return_error (task, err);
  } else {
    /* the session is the caller's now */
    h->ps = NULL;
    session_take_info (ps, info);
    g_task_return_pointer (task, ps, (GDestroyNotify) proxy_session_free);
  }
  g_object_unref (task);
}

static void
session_connected_cb (GObject * source, GAsyncResult * res,
    gpointer user_data)
{
  GTask *task = user_data;
  GError *err = NULL;
  GSocketConnection *conn = control_connect_finish (res, &err);
  ProxySession *ps = ((SessionHold *) g_task_get_task_data (task))->ps;
  JsonObject *req;

  if (!conn) {
    g_task_return_error (task, err);
    g_object_unref (task);
    return;
  }
  req = session_take_conn (ps, conn);
  control_request_async (ps->in, ps->out, req, g_task_get_cancellable (task),
      session_info_cb, task);
  json_object_unref (req);
}

void
proxy_session_new_async (const gchar * video, gboolean prestage,
    GCancellable * cancellable, GAsyncReadyCallback callback,
    gpointer user_data)
{
  GTask *task = g_task_new (NULL, cancellable, callback, user_data);
  SessionHold *h = g_new0 (SessionHold, 1);

  h->ps = session_alloc (video, prestage);
  g_task_set_source_tag (task, proxy_session_new_async);
  g_task_set_task_data (task, h, (GDestroyNotify) session_hold_free);
  control_connect_async (10, cancellable, session_connected_cb, task);
}

ProxySession *
proxy_session_new_finish (GAsyncResult * res, GError ** error)
{
  g_return_val_if_fail (g_task_is_valid (res, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (res), error);
}

gchar *
prefix_path (const gchar * video)
{
  gchar *base = g_strconcat (video, ".prefix.twf", NULL);
  gchar *p = g_build_filename (opt_prefix_dir, base, NULL);
  g_free (base);
  return p;
}

gint64
counter_get (gint64 * counter)
{
  gint64 v;
  G_LOCK (counters);
  v = *counter;
  G_UNLOCK (counters);
  return v;
}

static void read_event (ProxySession * ps);

/* A fetch whose control connection closed before the server's "done":
 * the server ended the session (it tears a session down with its
 * client), nothing more comes; what arrived is written and judged. */
static gboolean
control_closed_cb (gpointer data)
{
  ProxySession *ps = data;

  ps->closed_timer = 0;
  g_print ("proxy session %u: the server is gone: ending the output\n",
      ps->id);
  end_session_output (ps);
  return G_SOURCE_REMOVE;
}

static void
event_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  ProxySession *ps = user_data;
  GError *err = NULL;
  JsonObject *ev;

  if (!control_read_finish (G_DATA_INPUT_STREAM (source), res, &ev, &err)) {
    if (!g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
      GST_INFO ("session %u: control connection closed", ps->id);
      /* the datagrams and bytes already on their way get 2 s */
      if (g_strcmp0 (ps->kind, "fetch") == 0 && !ps->server_done
          && !ps->closed_timer)
        ps->closed_timer = g_timeout_add_seconds (2, control_closed_cb, ps);
    }
    g_clear_error (&err);
    return;
  }
  if (g_atomic_int_get (&ps->replaced) || g_atomic_int_get (&ps->released)) {
    if (ev)
      json_object_unref (ev);
    return;
  }
  if (ev) {
    const gchar *e = twoflow_json_get_string (ev, "event", "");
    if (g_str_equal (e, "progress"))
      SESSION_HOOKS (progress, ps, ev);
    else if (g_str_equal (e, "done")) {
      ps->server_done = TRUE;
      if (!ps->server_final)
        ps->server_final = json_object_ref (ev);
      log_json ("SERVER-DONE", ev);
      /* a fetch whose output was complete first waited for these stats */
      if (ps->final_timer) {
        g_source_remove (ps->final_timer);
        ps->final_timer = 0;
        g_main_loop_quit (ps->loop);
      }
      /* The server has sent everything: end the enhanced flow (UDP has no
       * end of its own), so twoflowmerge counts enhanced frames lost at
       * the very end as missing instead of waiting for them forever. */
      if (ps->enh_src)
        gst_element_send_event (ps->enh_src, gst_event_new_eos ());
    } else if (g_str_equal (e, "error")) {
      g_print ("proxy session %u: server error: %s\n", ps->id,
          twoflow_json_get_string (ev, "message", "?"));
      if (ps->bin)
        GST_ELEMENT_ERROR (ps->bin, RESOURCE, READ, ("server: %s",
                twoflow_json_get_string (ev, "message", "?")), (NULL));
    }
    json_object_unref (ev);
  }
  read_event (ps);
}

static void
read_event (ProxySession * ps)
{
  control_read_async (ps->in, ps->cancel, event_cb, ps);
}

/* Behind NAT (--nat), once PLAY's reply names the server's ports: the
 * essential source connects out (cTCP/TCP: tcpclientsrc) or says hello
 * (ERAP: erapsrc), the enhanced one says hello (rudpsrc), each from its
 * own socket, to the control server's address; then they start. */
static gboolean
nat_start (ProxySession * ps, const TwoflowPlayReply * r)
{
  gint ess = r->essential_port;
  gint enh = r->enhanced_port;
  gint64 hello_id = r->hello_id;
  gboolean erap = g_str_equal (opt_essential, "erap");

  if (ess <= 0 || ess > 65535 || (ps->enh_src && (enh <= 0 || enh > 65535))
      || ((erap || ps->enh_src) && hello_id < 0)) {
    GST_WARNING ("session %u: PLAY reply without essential_port, "
        "enhanced_port or hello_id", ps->id);
    return FALSE;
  }
  if (erap)
    g_object_set (ps->ess_src, "hello-host", server_host, "hello-port", ess,
        "hello-id", (guint64) hello_id, NULL);
  else
    g_object_set (ps->ess_src, "port", ess, NULL);
  gst_element_set_locked_state (ps->ess_src, FALSE);
  gst_element_sync_state_with_parent (ps->ess_src);
  if (ps->enh_src) {
    g_object_set (ps->enh_src, "hello-host", server_host, "hello-port", enh,
        "hello-id", (guint64) hello_id, NULL);
    gst_element_set_locked_state (ps->enh_src, FALSE);
    gst_element_sync_state_with_parent (ps->enh_src);
  }
  return TRUE;
}

/* The receivers' essential port (0: not listening yet; 1 behind NAT, where
 * the server names the ports) */
static gint
essential_port (ProxySession * ps)
{
  gint ess_port = 0;

  if (opt_nat)
    return 1;
  if (g_object_class_find_property (G_OBJECT_GET_CLASS (ps->ess_src),
          "current-port"))
    g_object_get (ps->ess_src, "current-port", &ess_port, NULL);
  else
    g_object_get (ps->ess_src, "port", &ess_port, NULL);
  return ess_port;
}

/* PLAY: where the receivers listen, the session's keys, where it starts */
static JsonObject *
play_request_new (ProxySession * ps, gint ess_port)
{
  TwoflowPlayRequest play;
  gboolean nat = opt_nat;

  twoflow_play_request_init (&play);
  video_request (&play.v, ps->video);
  /* (checked in main) */
  twoflow_essential_from_string (opt_essential, &play.essential);
  /* no host: the server sends only to the control connection's peer
   * (no reflection; docs/security.md) */
  if (ps->erap_key && g_str_equal (opt_essential, "erap"))
    play.erap_key = ps->erap_key;
  if (ps->srtp_key && ps->enh_src)
    play.srtp_key = ps->srtp_key;
  if (ps->ess_token && !g_str_equal (opt_essential, "erap"))
    play.essential_token = ps->ess_token;
  play.nat = nat;
  if (!nat)
    play.essential_port = ess_port;
  if (ps->prestage) {
    play.flows = TWOFLOW_FLOWS_ESSENTIAL;
    play.end_segment = 1;
  } else {
    if (!nat)
      play.enhanced_port = ps->enh_port;
    play.start = ps->start;
    if (ps->merge) {
      gchar *prefix = NULL;
      g_object_get (ps->merge, "prefix-location", &prefix, NULL);
      if (prefix)
        play.skip_segments = 1;
      g_free (prefix);
    }
  }
  /* (the strings are borrowed: play is not cleared) */
  return twoflow_play_request_to_json (&play);
}

/* PLAY's answer (@r, or NULL and @err): the flows start (behind NAT they
 * are opened from here), the playback clock and the playout buffer from
 * what the server says; then its events are read. */
static void
play_answered (ProxySession * ps, JsonObject * r, GError * err)
{
  TwoflowPlayReply pr;

  if (!r) {
    g_print ("proxy session %u: PLAY failed: %s\n", ps->id, err->message);
    GST_ELEMENT_ERROR (ps->bin, RESOURCE, OPEN_READ, ("%s", err->message),
        (NULL));
    return;
  }
  twoflow_play_reply_from_json (r, &pr);
  ps->server_session = pr.session;
  if (opt_nat && !nat_start (ps, &pr)) {
    GST_ELEMENT_ERROR (ps->bin, RESOURCE, OPEN_READ,
        ("server does not support --nat"), (NULL));
    return;
  }
  ps->started_us = g_get_monotonic_time ();
  /* the smoothed reservation runs from here, when the flows start */
  SESSION_HOOKS (started, ps);
  ps->lead = pr.lead;
  ps->start_npt = pr.start;
  ps->start_frames = pr.start_frames;
  ps->start_audio = pr.start_audio_records;
  if (ps->start > 0 && g_strcmp0 (ps->kind, "rtsp") == 0) {
    /* a seek: running times (and so the MPEG-TS timestamps) from where
     * the session starts in the video (twoflow_seek) */
    GstPad *src = gst_element_get_static_pad (ps->bin, "src");
    gsize ms = (gsize) (ps->start_npt * 1000 + 0.5);

    g_object_set_data (G_OBJECT (ps->bin), "twoflow-offset-ms",
        GSIZE_TO_POINTER (ms));
    gst_pad_set_offset (src, (gint64) ms * GST_MSECOND);
    gst_object_unref (src);
  }
  ps->smoothing = pr.smoothing;
  if (ps->jitterbuffer) {
    guint depth = opt_jitter_ms + (guint) (pr.playout_depth * 1000);

    if (depth != ps->playout_ms) {
      ps->playout_ms = depth;
      g_object_set (ps->jitterbuffer, "latency", depth, NULL);
    }
  }
  if (ps->arrivals) {
    /* the playback clock, also for a fetch that never reports */
    fprintf (ps->arrivals, "# started_us %" G_GINT64_FORMAT " lead %g\n",
        ps->started_us, ps->lead);
    fflush (ps->arrivals);
  }
  g_print ("proxy session %u: playing %s from %.3f s (server session %d, "
      "lead %.1f s, enhanced %s, playout buffer %u ms, peak %"
      G_GUINT64_FORMAT " bit/s)\n", ps->id, ps->video, ps->start_npt,
      ps->server_session,
      pr.lead, pr.smoothing ? "smoothed" : "at its peak rate",
      ps->playout_ms, ps->peak_rate);
  read_event (ps);
}

static void
play_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  ProxySession *ps = user_data;
  GError *err = NULL;
  JsonObject *r = control_request_finish (res, &err);

  /* cancelled: the session was freed (do not touch it) or replaced */
  if (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
    g_error_free (err);
    return;
  }
  if (g_atomic_int_get (&ps->released)) {
    GST_DEBUG ("session %u: PLAY answered after its media went", ps->id);
  } else {
    play_answered (ps, r, err);
  }
  if (r)
    json_object_unref (r);
  g_clear_error (&err);
}

/* The receivers listen once the bin has started; then the server may
 * connect: PLAY, asynchronously on the main loop, blocking in an RTSP
 * client's thread (@wait: a seek, whose answer says where it starts).
 * FALSE: not listening yet. */
static gboolean
session_play (ProxySession * ps, gboolean wait)
{
  gint ess_port = essential_port (ps);
  JsonObject *req, *r;
  GError *err = NULL;

  if (ess_port <= 0 || (ps->enh_src && !opt_nat
          && !GST_OBJECT_FLAG_IS_SET (ps->enh_src, GST_BASE_SRC_FLAG_STARTED)))
    return FALSE;
  ps->ready_timer = 0;
  req = play_request_new (ps, ess_port);
  ps->play_sent = TRUE;
  GST_DEBUG ("session %u: PLAY %s", ps->id, wait ? "(blocking)" : "");
  if (!wait) {
    control_request_async (ps->in, ps->out, req, ps->cancel, play_cb, ps);
    json_object_unref (req);
    return TRUE;
  }
  r = control_request (ps->in, ps->out, req, &err);
  json_object_unref (req);
  play_answered (ps, r, err);
  if (r)
    json_object_unref (r);
  g_clear_error (&err);
  return TRUE;
}

static gboolean
ready_cb (gpointer user_data)
{
  ProxySession *ps = user_data;

  if (g_atomic_int_get (&ps->released)) {
    ps->ready_timer = 0;        /* set up and let go before its receivers
                                 * were ready: release_idle frees it */
    return G_SOURCE_REMOVE;
  }
  return session_play (ps, FALSE) ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

/* A seek's new session: PLAY now when its receivers listen, so the answer
 * says where it starts; FALSE: they do not listen yet */
gboolean
proxy_session_play_now (ProxySession * ps)
{
  return session_play (ps, TRUE);
}

void
proxy_session_start (ProxySession * ps)
{
  ps->ready_timer = g_timeout_add (10, ready_cb, ps);
}




/* The end of a session's output before the end of the video (SIGTERM):
 * the muxer's inputs get EOS, so it finishes its file, playlist or stream
 * (the merge, cut in the middle of a frame, would fail); without a muxer
 * the sources end their streams. */
static gboolean
mux_pad_eos (GstElement * e, GstPad * pad, gpointer data)
{
  gst_pad_send_event (pad, gst_event_new_eos ());
  return TRUE;
}

void
end_session_output (ProxySession * ps)
{
  if (ps->out_mux) {
    gst_element_foreach_sink_pad (ps->out_mux, mux_pad_eos, NULL);
    return;
  }
  if (ps->ess_src)
    gst_element_send_event (ps->ess_src, gst_event_new_eos ());
  if (ps->enh_src)
    gst_element_send_event (ps->enh_src, gst_event_new_eos ());
}

void
twoflow_proxy_session_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_session_debug,
      "twoflow-proxy-session", 0, "twoflow-proxy: a session");
  info_cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      (GDestroyNotify) json_object_unref);
}
