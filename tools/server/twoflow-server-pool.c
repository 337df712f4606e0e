/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the session pool: the sessions by id (random,
 * unguessable), whose they are, the limits; a session from PLAY to its end
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

#include <string.h>
#include <math.h>
#include <gst/gst.h>
#include "twoflow-control.h"
#include "twoflow-server-pool.h"
#include "twoflow-server-media.h"
#include "twoflow-server-ratectl.h"
#include "twoflow-server-options.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_pool_debug);
#define GST_CAT_DEFAULT twoflow_server_pool_debug

static GHashTable *sessions;            /* id -> Session */
static GHashTable *owned;               /* owner -> GList of Session */
static guint64 sessions_total = 0;
/* the clients' (set once at start) */
static SessionPoolCallbacks callbacks;

static void owned_add (Session * s);
static void owned_remove (Session * s);
static gboolean session_plan (Session * s, const TwoflowPlayRequest * req,
    GError ** error);
static gboolean session_start (Session * s, const gchar * peer,
    GError ** error);

/* Session ids are random, so one client cannot guess another's. */
static guint
session_id_new (void)
{
  guint id;

  do
    id = g_random_int_range (1, G_MAXINT32);
  while (g_hash_table_contains (sessions, GUINT_TO_POINTER (id)));
  return id;
}

static void
log_json (const gchar * tag, JsonObject * obj)
{
  gchar *text = twoflow_json_to_line (obj);
  g_print ("%s %s\n", tag, text);
  g_free (text);
}

/* What a session owns besides its pipelines and sources */
static void
session_free (Session * s)
{
  g_free (s->identity);
  g_free (s->host);
  g_free (s->erap_key);
  g_free (s->srtp_key);
  g_free (s->ess_token);
  g_free (s->essential);
  g_free (s->rate_control);
  gst_object_unref (s->clock);
  g_mutex_clear (&s->release_lock);
  g_list_free_full (s->pending_events, (GDestroyNotify) gst_structure_free);
  g_clear_pointer (&s->rc, gst_twoflow_session_rate_free);
  g_free (s);
}

void
session_maybe_finish (Session * s)
{
  if (s->ess_done && s->enh_done) {
    JsonObject *ev;

    /* ctcpsink may see the kernel's last recovery after its EOS (the
     * final ACK ends it): stop the sink (READY keeps the bus), then hand
     * over what it posted, so the report counts what was forwarded */
    if (s->ess_pipe) {
      GstBus *bus = gst_element_get_bus (s->ess_pipe);
      GstMessage *msg;

      gst_element_set_state (s->ess_pipe, GST_STATE_READY);
      while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
        ess_bus_cb (bus, msg, s);
        gst_message_unref (msg);
      }
      gst_object_unref (bus);
    }
    ev = session_stats (s);
    json_object_set_string_member (ev, "event", "done");
    callbacks.send (s->owner, ev);
    json_object_unref (ev);
    session_destroy (s, "done");
  }
}

void
session_fail (Session * s, const gchar * what, const gchar * message)
{
  JsonObject *ev = json_object_new ();
  json_object_set_string_member (ev, "event", "error");
  json_object_set_int_member (ev, "session", s->id);
  json_object_set_string_member (ev, "flow", what);
  json_object_set_string_member (ev, "message", message);
  callbacks.send (s->owner, ev);
  json_object_unref (ev);
  session_destroy (s, "error");
}

/* Once a second: what has been sent, so a proxy can compare it with what
 * it receives (measured-mode admission). */
static gboolean
progress_cb (gpointer user_data)
{
  Session *s = user_data;
  JsonObject *ev = session_stats (s);
  json_object_set_string_member (ev, "event", "progress");
  callbacks.send (s->owner, ev);
  json_object_unref (ev);
  return G_SOURCE_CONTINUE;
}

void
session_destroy (Session * s, const gchar * why)
{
  JsonObject *st;

  if (!g_hash_table_contains (sessions, GUINT_TO_POINTER (s->id)))
    return;
  st = session_stats (s);
  json_object_set_string_member (st, "end", why);
  log_json ("SESSION-END", st);
  json_object_unref (st);

  g_hash_table_remove (sessions, GUINT_TO_POINTER (s->id));
  owned_remove (s);
  if (s->lead_timer)
    g_source_remove (s->lead_timer);
  if (s->rate_timer)
    g_source_remove (s->rate_timer);
  if (s->rc_timer)
    g_source_remove (s->rc_timer);
  s->rc_timer = 0;
  if (s->progress_timer)
    g_source_remove (s->progress_timer);
  if (s->ess_watch)
    g_source_remove (s->ess_watch);
  if (s->enh_watch)
    g_source_remove (s->enh_watch);
  g_mutex_lock (&s->release_lock);
  s->release_stop = TRUE;
  if (s->release_id)
    gst_clock_id_unschedule (s->release_id);
  g_mutex_unlock (&s->release_lock);
  if (s->ess_pipe) {
    gst_element_set_state (s->ess_pipe, GST_STATE_NULL);
    gst_object_unref (s->ess_pipe);
  }
  if (s->enh_pipe) {
    gst_element_set_state (s->enh_pipe, GST_STATE_NULL);
    gst_object_unref (s->enh_pipe);
  }
  g_print ("session %u: closed (%s); %u session(s) active\n", s->id, why,
      g_hash_table_size (sessions));
  session_free (s);
}

/* The session limits (total, per client identity). */
static gboolean
session_allowed (const gchar * identity, GError ** error)
{
  GHashTableIter it;
  gpointer v;
  guint mine = 0;

  if (g_hash_table_size (sessions) >= (guint) opt_max_sessions) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_BUSY,
        "server full: %u sessions (--max-sessions)",
        g_hash_table_size (sessions));
    return FALSE;
  }
  g_hash_table_iter_init (&it, sessions);
  while (g_hash_table_iter_next (&it, NULL, &v))
    if (g_str_equal (((Session *) v)->identity, identity))
      mine++;
  if (mine >= (guint) opt_max_client_sessions) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_BUSY,
        "too many sessions for %s: %u (--max-client-sessions)", identity,
        mine);
    return FALSE;
  }
  return TRUE;
}

/* The session's lead, start-up ramp and enhanced-flow schedule; FALSE
 * (and @error) when PLAY's parameters do not make a session. */
static gboolean
session_plan (Session * s, const TwoflowPlayRequest * req, GError ** error)
{
  const gchar *ess = s->essential;
  VideoInfo *info = s->info;
  gdouble default_lead;
  const GstTwoflowStartupPlan *plan = NULL;

  /* without a pre-stored prefix the enhanced flow starts one segment
   * later, so every essential segment lands before its frames play; or,
   * the start-up ramp (the default, cTCP), after the ramp's lead: the
   * essential flow catches up to a segment ahead meanwhile */
  default_lead = s->skip_segments > 0 ? 0 : s->segment_duration;
  /* ERAP too: its sink starts at the ramp's rate (initial-rate) and,
   * reading the file ahead, sends every record at least that fast while
   * the path has no loss */
  if (s->skip_segments <= 0 && !req->has_lead
      && (g_str_equal (ess, "ctcp") || g_str_equal (ess, "erap"))
      && s->flows_essential && s->flows_enhanced && s->start <= 0)
    plan = video_startup (info, s->segment_duration);
  else if (s->skip_segments <= 0 && !req->has_lead
      && (g_str_equal (ess, "ctcp") || g_str_equal (ess, "erap"))
      && s->flows_essential && s->flows_enhanced && s->start > 0
      && !info->is_trace) {
    /* a seek starts like a first PLAY: the ramp, from its key frame */
    gdouble at = s->start;
    guint64 f, a;
    GstClockTime rt = 0;
    if (video_start_pts (info, &at, &f, &a, &rt) > 0)
      plan = video_startup_from (info, s->segment_duration, rt);
  }
  if (plan) {
    default_lead = plan->lead / 1e9;
    s->startup_rate = plan->rate;
  }
  s->lead = isnan (req->lead) ? default_lead : req->lead;
  if (tls_cert && s->flows_essential && !g_str_equal (ess, "erap")
      && (!s->ess_token || strlen (s->ess_token) < 16)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
        "essential_token (16 characters or more) required: over TLS the "
        "essential %s flow is TLS too, and the token proves the proxy", ess);
    return FALSE;
  }
  /* smoothing: the enhanced flow is paced per window and sent
   * smoothing_lead ahead of its playback: it starts that much before the
   * lead when it can, and playback moves to the smoothing lead when the
   * lead is shorter (a prefix) */
  if (pacing_total (info)) {
    /* total: the enhanced flow starts with the essential one, its
     * frames due at the playback lead (at least the smoothing lead) */
    s->lead = MAX (s->lead, smoothing_lead_for (s->segment_duration));
    s->sched = video_schedule_for (info, s->segment_duration, s->lead,
        s->skip_segments, s->essential, -1);
  } else if (plan) {
    /* the enhanced flow sent the ramp's lead ahead of its playback */
    s->sched = video_schedule_for (info, s->segment_duration, 0, 0, "ctcp",
        plan->lead / 1e9);
  } else {
    s->sched = video_schedule_for (info, s->segment_duration, 0, 0,
        "ctcp", -1);
  }
  s->smooth = !g_str_equal (pacing_mode (info), "peak")
      && g_str_equal (s->rate_control, "fixed")
      && s->sched->info.n_windows > 0;
  s->total = s->smooth && pacing_total (info);
  s->smoothing_lead = s->smooth ? s->sched->info.lead / 1e9 : 0;
  s->enh_start = MAX (s->lead - s->smoothing_lead, 0);
  s->lead = MAX (s->lead, s->smoothing_lead);
  if (s->segment_duration <= 0 || (s->flows_essential && s->ess_port <= 0 && !s->nat)
      || (s->flows_enhanced && s->enh_port <= 0 && !s->nat) || s->start < 0
      || (s->start > 0 && info->is_trace)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "bad PLAY parameters (ports, segment_duration, start)");
    return FALSE;
  }
  return TRUE;
}

/* Into the pool, the pipelines built and started, the timers set;
 * FALSE (the session destroyed, @error) when it cannot start. */
static gboolean
session_start (Session * s, const gchar * peer, GError ** error)
{
  VideoInfo *info = s->info;

  if (s->start > 0)
    s->start_pts = video_start_pts (info, &s->start, &s->start_frames,
        &s->start_audio, &s->start_rt);
  g_hash_table_insert (sessions, GUINT_TO_POINTER (s->id), s);
  s->started_us = g_get_monotonic_time ();
  s->release_base = gst_clock_get_time (s->clock);
  if (!s->flows_essential)
    s->ess_done = TRUE;
  if (!s->flows_enhanced)
    s->enh_done = TRUE;

  if ((s->flows_essential && !build_essential (s, error))
      || (s->flows_enhanced && !build_enhanced (s, error))) {
    session_destroy (s, "setup failed");
    return FALSE;
  }
  rc_start (s);
  if (s->ess_pipe)
    s->ess_watch = gst_bus_add_watch (GST_ELEMENT_BUS (s->ess_pipe),
        ess_bus_cb, s);
  if (s->enh_pipe)
    s->enh_watch = gst_bus_add_watch (GST_ELEMENT_BUS (s->enh_pipe),
        enh_bus_cb, s);
  owned_add (s);
  sessions_total++;

  if (s->ess_pipe
      && gst_element_set_state (s->ess_pipe, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED,
        "cannot start the essential flow to %s:%d", s->host, s->ess_port);
    session_destroy (s, "start failed");
    return FALSE;
  }
  if (s->ess_pipe && s->nat) {
    guint bound = 0;

    /* the sink listens (cTCP/TCP) or waits for hellos (ERAP) from
     * READY->PAUSED on */
    g_object_get (s->ess_sink, "bound-port", &bound, NULL);
    s->ess_port = bound;
  }
  if (s->enh_pipe && s->nat) {
    guint bound = 0;

    /* NAT: the sink's socket is bound, and reads hellos, from READY on */
    if (gst_element_set_state (s->enh_pipe, GST_STATE_READY) ==
        GST_STATE_CHANGE_FAILURE) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
          "cannot start the enhanced flow");
      session_destroy (s, "start failed");
      return FALSE;
    }
    g_object_get (s->enh_sink, "bound-port", &bound, NULL);
    s->enh_port = bound;
    s->hello_wait_until = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
  }
  if (s->enh_pipe) {
    if (s->enh_start > 0 && s->ess_pipe)
      s->lead_timer = g_timeout_add ((guint) (s->enh_start * 1000),
          start_enhanced_cb, s);
    else if (s->nat)
      start_enhanced_cb (s);
    else
      gst_element_set_state (s->enh_pipe, GST_STATE_PLAYING);
  }
  if (s->total && s->enh_pipe)
    total_rate_cb (s);
  s->progress_timer = g_timeout_add (1000, progress_cb, s);
  g_print ("session %u: PLAY %s to %s (essential %s:%d %s, enhanced :%d) "
      "segment %.1f s, lead %.2f s (enhanced from %.1f s, %s), skip %d, "
      "start-up ramp %" G_GUINT64_FORMAT " bit/s, peak %" G_GUINT64_FORMAT
      " bit/s; %u session(s) active\n", s->id, info->name,
      peer, s->host, s->ess_port, s->essential, s->enh_port,
      s->segment_duration, s->lead, s->enh_start, s->total ?
      "constant session total" : s->smooth ? "smoothed" : "peak rate",
      s->skip_segments, s->startup_rate, info->peak_rate,
      g_hash_table_size (sessions));
  return TRUE;
}

/* A session for @owner (@identity, from @peer) as @req asks, playing;
 * NULL and @error when it cannot be. (No reflection: a host other than
 * the peer is the client's to allow, before.) */
Session *
session_new (gpointer owner, const gchar * identity, const gchar * peer,
    const TwoflowPlayRequest * req, GError ** error)
{
  const gchar *ess = twoflow_essential_to_string (req->essential);
  VideoInfo *info;
  Session *s;

  if (!session_allowed (identity, error))
    return NULL;
  info = video_scan (req->v.video, req->v.policy_ip, req->v.video_track,
      req->v.audio_track, error);
  if (!info)
    return NULL;

  s = g_new0 (Session, 1);
  s->id = session_id_new ();
  g_mutex_init (&s->release_lock);
  s->clock = gst_system_clock_obtain ();
  s->owner = owner;
  s->identity = g_strdup (identity);
  s->info = info;
  s->essential = g_strdup (ess);
  s->rate_control = g_strdup (req->rate_control_receiver ? "receiver" :
      "fixed");
  s->erap_key = g_strdup (req->erap_key);
  s->srtp_key = g_strdup (req->srtp_key);
  if (tls_cert && !g_str_equal (ess, "erap"))
    s->ess_token = g_strdup (req->essential_token);
  s->host = g_strdup (req->host);
  if (s->host == NULL)          /* default: where the control connection comes from */
    s->host = g_strdup (peer);
  s->ess_port = req->essential_port;
  s->enh_port = req->enhanced_port;
  s->segment_duration = req->v.segment_duration;
  s->start = req->start;
  s->skip_segments = req->skip_segments;
  s->end_segment = req->end_segment;
  s->flows_essential = req->flows != TWOFLOW_FLOWS_ENHANCED;
  s->flows_enhanced = req->flows != TWOFLOW_FLOWS_ESSENTIAL;
  s->nat = req->nat;
  /* JSON-safe (below 2^53), unguessable enough for a lab's plaintext, and
   * authenticated when keyed */
  s->hello_id = ((guint64) g_random_int () << 20) | (s->id & 0xfffff);
  if (!session_plan (s, req, error)) {
    session_free (s);
    return NULL;
  }
  if (!session_start (s, peer, error))
    return NULL;
  return s;
}

/* The session named in @req if @c's identity owns it: every command on a
 * session (STATS, TEARDOWN) asks the same question. */
Session *
session_lookup_owned (const gchar * identity, guint id, GError ** error)
{
  Session *s = g_hash_table_lookup (sessions, GUINT_TO_POINTER (id));

  if (s == NULL || !g_str_equal (s->identity, identity)) {
    /* the same answer for "none" and "not yours": no probing */
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no session %u",
        id);
    return NULL;
  }
  return s;
}

/* The sessions of @owner, newest first */
static void
owned_add (Session * s)
{
  GList *l = g_hash_table_lookup (owned, s->owner);

  g_hash_table_insert (owned, s->owner, g_list_prepend (l, s));
}

static void
owned_remove (Session * s)
{
  GList *l = g_hash_table_lookup (owned, s->owner);

  if (!l)
    return;
  l = g_list_remove (l, s);
  if (l)
    g_hash_table_insert (owned, s->owner, l);
  else
    g_hash_table_remove (owned, s->owner);
}

guint
session_pool_n_owned (gpointer owner)
{
  return g_list_length (g_hash_table_lookup (owned, owner));
}

/* @owner is gone: its sessions end, newest first */
void
session_pool_destroy_owned (gpointer owner, const gchar * why)
{
  GList *l;

  while ((l = g_hash_table_lookup (owned, owner)))
    session_destroy (l->data, why);
}

guint
session_pool_size (void)
{
  return g_hash_table_size (sessions);
}

guint64
session_pool_total (void)
{
  return sessions_total;
}

/* every session (a list to free, the sessions not) */
GList *
session_pool_list (void)
{
  return g_hash_table_get_values (sessions);
}

void
session_pool_set_callbacks (const SessionPoolCallbacks * cb)
{
  callbacks = *cb;
}

void
twoflow_server_pool_init (void)
{
  MediaCallbacks mcb = { session_maybe_finish, session_fail };

  GST_DEBUG_CATEGORY_INIT (twoflow_server_pool_debug, "twoflow-server-pool",
      0, "twoflow-server: the session pool");
  sessions = g_hash_table_new (NULL, NULL);
  owned = g_hash_table_new (NULL, NULL);
  media_set_callbacks (&mcb);
}
