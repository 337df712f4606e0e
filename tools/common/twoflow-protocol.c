/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the control protocol's requests as C structures
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#include <math.h>
#include <string.h>
#include "twoflow-protocol.h"

static const struct
{
  const gchar *name;
  TwoflowRequestKind kind;
} commands[] = {
  {"AUTH", TWOFLOW_REQUEST_AUTH},
  {"PLAY", TWOFLOW_REQUEST_PLAY},
  {"INFO", TWOFLOW_REQUEST_INFO},
  {"LIST", TWOFLOW_REQUEST_LIST},
  {"TEARDOWN", TWOFLOW_REQUEST_TEARDOWN},
  {"STATS", TWOFLOW_REQUEST_STATS},
  {"STATUS", TWOFLOW_REQUEST_STATUS},
};

static const gchar *const essential_names[] = { "ctcp", "erap", "tcp" };
static const gchar *const flows_names[] = { "both", "essential", "enhanced" };

const gchar *
twoflow_essential_to_string (TwoflowEssential e)
{
  return (guint) e < G_N_ELEMENTS (essential_names) ? essential_names[e] :
      NULL;
}

gboolean
twoflow_essential_from_string (const gchar * name, TwoflowEssential * e)
{
  guint i;

  for (i = 0; name && i < G_N_ELEMENTS (essential_names); i++)
    if (g_str_equal (name, essential_names[i])) {
      *e = i;
      return TRUE;
    }
  return FALSE;
}

const gchar *
twoflow_flows_to_string (TwoflowFlows f)
{
  return (guint) f < G_N_ELEMENTS (flows_names) ? flows_names[f] : NULL;
}

static gchar *
dup_string (JsonObject * obj, const gchar * name)
{
  return g_strdup (twoflow_json_get_string (obj, name, NULL));
}

/* A track selection: a JSON number becomes its digits, a string stays;
 * anything else is no selection (the first). */
static gchar *
track_arg (JsonObject * obj, const gchar * name)
{
  JsonNode *n = json_object_get_member (obj, name);

  if (n == NULL || JSON_NODE_TYPE (n) != JSON_NODE_VALUE)
    return NULL;
  if (json_node_get_value_type (n) == G_TYPE_INT64)
    return g_strdup_printf ("%" G_GINT64_FORMAT, json_node_get_int (n));
  if (json_node_get_value_type (n) == G_TYPE_STRING)
    return g_strdup (json_node_get_string (n));
  return NULL;
}

static void
parse_video (JsonObject * obj, TwoflowVideoRequest * v, gdouble segment_dflt)
{
  v->video = dup_string (obj, "video");
  v->policy_ip = g_str_equal (twoflow_json_get_string (obj, "policy", "i"),
      "ip");
  v->video_track = track_arg (obj, "video_track");
  v->audio_track = track_arg (obj, "audio_track");
  v->segment_duration = twoflow_json_get_double (obj, "segment_duration",
      segment_dflt);
}

static void
parse_play (JsonObject * obj, TwoflowRequest * req)
{
  TwoflowPlayRequest *p = &req->play;
  const gchar *ess = twoflow_json_get_string (obj, "essential", "ctcp");
  const gchar *flows = twoflow_json_get_string (obj, "flows", "both");

  parse_video (obj, &p->v, TWOFLOW_DEFAULT_SEGMENT_DURATION);
  if (!twoflow_essential_from_string (ess, &p->essential))
    g_set_error (&req->invalid, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "essential must be ctcp, tcp or erap");
  /* any other value: both flows */
  p->flows = g_str_equal (flows, "essential") ? TWOFLOW_FLOWS_ESSENTIAL :
      g_str_equal (flows, "enhanced") ? TWOFLOW_FLOWS_ENHANCED :
      TWOFLOW_FLOWS_BOTH;
  p->rate_control_receiver = g_str_equal (twoflow_json_get_string (obj,
          "rate_control", "fixed"), "receiver");
  p->host = dup_string (obj, "host");
  p->host_token = dup_string (obj, "host_token");
  p->essential_port = twoflow_json_get_int (obj, "essential_port", 0);
  p->enhanced_port = twoflow_json_get_int (obj, "enhanced_port", 0);
  p->nat = twoflow_json_get_int (obj, "nat", 0) != 0;
  p->start = twoflow_json_get_double (obj, "start", 0);
  p->skip_segments = twoflow_json_get_int (obj, "skip_segments", 0);
  p->end_segment = twoflow_json_get_int (obj, "end_segment", 0);
  p->has_lead = json_object_has_member (obj, "lead");
  p->lead = twoflow_json_get_double (obj, "lead", NAN);
  p->erap_key = dup_string (obj, "erap_key");
  p->srtp_key = dup_string (obj, "srtp_key");
  p->essential_token = dup_string (obj, "essential_token");
}

TwoflowRequest *
twoflow_request_from_json (JsonObject * obj)
{
  TwoflowRequest *req = g_new0 (TwoflowRequest, 1);
  JsonNode *id = json_object_get_member (obj, "id");
  guint i;

  req->cmd = g_strdup (twoflow_json_get_string (obj, "cmd", ""));
  if (id)
    req->id = json_node_copy (id);
  twoflow_play_request_init (&req->play);
  for (i = 0; i < G_N_ELEMENTS (commands); i++)
    if (g_ascii_strcasecmp (req->cmd, commands[i].name) == 0)
      req->kind = commands[i].kind;
  switch (req->kind) {
    case TWOFLOW_REQUEST_AUTH:
      req->token = dup_string (obj, "token");
      break;
    case TWOFLOW_REQUEST_PLAY:
      parse_play (obj, req);
      break;
    case TWOFLOW_REQUEST_INFO:
      parse_video (obj, &req->info, 0);
      break;
    case TWOFLOW_REQUEST_TEARDOWN:
    case TWOFLOW_REQUEST_STATS:
      req->session = twoflow_json_get_int (obj, "session", 0);
      break;
    default:
      break;
  }
  return req;
}

TwoflowRequest *
twoflow_request_parse (const gchar * line, GError ** error)
{
  JsonObject *obj = twoflow_json_from_line (line, error);
  TwoflowRequest *req;

  if (obj == NULL)
    return NULL;
  req = twoflow_request_from_json (obj);
  json_object_unref (obj);
  return req;
}

void
twoflow_video_request_clear (TwoflowVideoRequest * v)
{
  g_clear_pointer (&v->video, g_free);
  g_clear_pointer (&v->video_track, g_free);
  g_clear_pointer (&v->audio_track, g_free);
}

void
twoflow_play_request_init (TwoflowPlayRequest * p)
{
  memset (p, 0, sizeof (*p));
  p->v.segment_duration = TWOFLOW_DEFAULT_SEGMENT_DURATION;
  p->lead = NAN;
}

void
twoflow_play_request_clear (TwoflowPlayRequest * p)
{
  twoflow_video_request_clear (&p->v);
  g_clear_pointer (&p->host, g_free);
  g_clear_pointer (&p->host_token, g_free);
  g_clear_pointer (&p->erap_key, g_free);
  g_clear_pointer (&p->srtp_key, g_free);
  g_clear_pointer (&p->essential_token, g_free);
}

void
twoflow_request_free (TwoflowRequest * req)
{
  if (req == NULL)
    return;
  g_free (req->cmd);
  if (req->id)
    json_node_unref (req->id);
  g_clear_error (&req->invalid);
  g_free (req->token);
  twoflow_video_request_clear (&req->info);
  twoflow_play_request_clear (&req->play);
  g_free (req);
}

JsonObject *
twoflow_reply_new (const TwoflowRequest * req, gboolean ok)
{
  JsonObject *r = json_object_new ();

  json_object_set_boolean_member (r, "ok", ok);
  if (req && req->id)
    json_object_set_member (r, "id", json_node_copy (req->id));
  return r;
}

JsonObject *
twoflow_reply_new_error (const TwoflowRequest * req, const gchar * message)
{
  JsonObject *r = twoflow_reply_new (req, FALSE);

  json_object_set_string_member (r, "error", message);
  return r;
}

void
twoflow_play_reply_init (TwoflowPlayReply * r)
{
  memset (r, 0, sizeof (*r));
  r->start_frames = r->start_audio_records = -1;
  r->hello_id = -1;
}

void
twoflow_play_reply_to_json (const TwoflowPlayReply * r, JsonObject * o)
{
  json_object_set_int_member (o, "session", r->session);
  json_object_set_double_member (o, "lead", r->lead);
  /* where it starts: the key frame at or before the asked start, and what
   * the session sends of the video from there */
  json_object_set_double_member (o, "start", r->start);
  if (r->start_frames >= 0)
    json_object_set_int_member (o, "start_frames", r->start_frames);
  if (r->start_audio_records >= 0)
    json_object_set_int_member (o, "start_audio_records",
        r->start_audio_records);
  json_object_set_double_member (o, "enhanced_start", r->enhanced_start);
  json_object_set_int_member (o, "startup_rate", r->startup_rate);
  json_object_set_boolean_member (o, "smoothing", r->smoothing);
  json_object_set_double_member (o, "playout_depth", r->playout_depth);
  if (r->essential_port > 0)
    json_object_set_int_member (o, "essential_port", r->essential_port);
  if (r->enhanced_port > 0)
    json_object_set_int_member (o, "enhanced_port", r->enhanced_port);
  if (r->hello_id >= 0)
    json_object_set_int_member (o, "hello_id", r->hello_id);
}

void
twoflow_play_reply_from_json (JsonObject * o, TwoflowPlayReply * r)
{
  twoflow_play_reply_init (r);
  r->session = twoflow_json_get_int (o, "session", 0);
  r->lead = twoflow_json_get_double (o, "lead", 0);
  r->start = twoflow_json_get_double (o, "start", 0);
  r->start_frames = twoflow_json_get_int (o, "start_frames", -1);
  r->start_audio_records = twoflow_json_get_int (o, "start_audio_records",
      -1);
  r->enhanced_start = twoflow_json_get_double (o, "enhanced_start", 0);
  r->startup_rate = twoflow_json_get_int (o, "startup_rate", 0);
  r->smoothing = twoflow_json_get_int (o, "smoothing", 0) != 0;
  r->playout_depth = twoflow_json_get_double (o, "playout_depth", 0);
  r->essential_port = twoflow_json_get_int (o, "essential_port", 0);
  r->enhanced_port = twoflow_json_get_int (o, "enhanced_port", 0);
  if (json_object_has_member (o, "hello_id"))
    r->hello_id = json_object_get_int_member (o, "hello_id");
}

/* ---------------------------------------------------------- the proxy's */

static JsonObject *
request_new (const gchar * cmd)
{
  JsonObject *o = json_object_new ();

  json_object_set_string_member (o, "cmd", cmd);
  return o;
}

static void
set_string (JsonObject * o, const gchar * name, const gchar * value)
{
  if (value)
    json_object_set_string_member (o, name, value);
}

static void
video_to_json (JsonObject * o, const TwoflowVideoRequest * v)
{
  set_string (o, "video", v->video);
  json_object_set_string_member (o, "policy", v->policy_ip ? "ip" : "i");
  set_string (o, "video_track", v->video_track);
  set_string (o, "audio_track", v->audio_track);
  if (v->segment_duration > 0)
    json_object_set_double_member (o, "segment_duration",
        v->segment_duration);
}

JsonObject *
twoflow_auth_request_to_json (const gchar * token)
{
  JsonObject *o = request_new ("AUTH");

  set_string (o, "token", token);
  return o;
}

JsonObject *
twoflow_info_request_to_json (const TwoflowVideoRequest * v)
{
  JsonObject *o = request_new ("INFO");

  video_to_json (o, v);
  return o;
}

JsonObject *
twoflow_play_request_to_json (const TwoflowPlayRequest * p)
{
  JsonObject *o = request_new ("PLAY");

  video_to_json (o, &p->v);
  json_object_set_string_member (o, "essential",
      twoflow_essential_to_string (p->essential));
  if (p->flows != TWOFLOW_FLOWS_BOTH)
    json_object_set_string_member (o, "flows",
        twoflow_flows_to_string (p->flows));
  if (p->rate_control_receiver)
    json_object_set_string_member (o, "rate_control", "receiver");
  set_string (o, "host", p->host);
  set_string (o, "host_token", p->host_token);
  if (p->nat)
    json_object_set_boolean_member (o, "nat", TRUE);
  if (p->essential_port > 0)
    json_object_set_int_member (o, "essential_port", p->essential_port);
  if (p->enhanced_port > 0)
    json_object_set_int_member (o, "enhanced_port", p->enhanced_port);
  if (p->start > 0)
    json_object_set_double_member (o, "start", p->start);
  if (p->skip_segments > 0)
    json_object_set_int_member (o, "skip_segments", p->skip_segments);
  if (p->end_segment > 0)
    json_object_set_int_member (o, "end_segment", p->end_segment);
  if (p->has_lead && !isnan (p->lead))
    json_object_set_double_member (o, "lead", p->lead);
  set_string (o, "erap_key", p->erap_key);
  set_string (o, "srtp_key", p->srtp_key);
  set_string (o, "essential_token", p->essential_token);
  return o;
}

/* LIST, STATUS; TEARDOWN and STATS of @session */
JsonObject *
twoflow_simple_request_to_json (TwoflowRequestKind kind, guint session)
{
  JsonObject *o = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (commands); i++)
    if (commands[i].kind == kind)
      o = request_new (commands[i].name);
  g_return_val_if_fail (o != NULL, NULL);
  if (kind == TWOFLOW_REQUEST_TEARDOWN || kind == TWOFLOW_REQUEST_STATS)
    json_object_set_int_member (o, "session", session);
  return o;
}
