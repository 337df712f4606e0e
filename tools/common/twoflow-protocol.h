/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the control protocol's requests as C structures
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROTOCOL_H__
#define __TWOFLOW_PROTOCOL_H__

#include "twoflow-control.h"

G_BEGIN_DECLS

/* A line is parsed once, into a TwoflowRequest: its framing limits
 * (twoflow-control.h: the line's length, its nesting), its command, and
 * each field of that command with its type and default (docs/system.md,
 * "Control protocol"). The proxy builds the same structures and writes
 * them with twoflow_*_request_to_json(). */

/* PLAY's segment duration when it names none, s */
#define TWOFLOW_DEFAULT_SEGMENT_DURATION 10.0

/* Audio that starts up to this long (s) before a video's first picture
 * (INFO's audio_lead) goes ahead of the picture at once: the server sends
 * the picture that lead early, the proxy's RTSP sinks let it go as the
 * merge gives it. A longer lead keeps its real-time start: the audio's
 * burst (the MPEG-TS clock is on the audio then) moved rtspsrc's live
 * timestamps, its A/V offset 70-180 ms off with a 1.5 s lead, 1-8 ms with
 * 0.7 s (docs/system.md, "Start-up") */
#define TWOFLOW_AUDIO_LEAD_EARLY_MAX 0.8

typedef enum
{
  TWOFLOW_REQUEST_UNKNOWN = 0,
  TWOFLOW_REQUEST_AUTH,
  TWOFLOW_REQUEST_PLAY,
  TWOFLOW_REQUEST_INFO,
  TWOFLOW_REQUEST_LIST,
  TWOFLOW_REQUEST_TEARDOWN,
  TWOFLOW_REQUEST_STATS,
  TWOFLOW_REQUEST_STATUS,
} TwoflowRequestKind;

/* the essential flow's transport */
typedef enum
{
  TWOFLOW_ESSENTIAL_CTCP = 0,
  TWOFLOW_ESSENTIAL_ERAP,
  TWOFLOW_ESSENTIAL_TCP,
} TwoflowEssential;

typedef enum
{
  TWOFLOW_FLOWS_BOTH = 0,
  TWOFLOW_FLOWS_ESSENTIAL,
  TWOFLOW_FLOWS_ENHANCED,
} TwoflowFlows;

/* A video as INFO and PLAY name it. A track selection is NULL (the first
 * of its kind), an index (a JSON number is kept as its digits), a
 * language code, or "none" (audio). */
typedef struct
{
  gchar *video;                 /* NULL: absent or not a string */
  gboolean policy_ip;           /* "ip"; anything else: "i" */
  gchar *video_track, *audio_track;
  /* s; INFO: 0 = the server's default; PLAY: default
   * TWOFLOW_DEFAULT_SEGMENT_DURATION */
  gdouble segment_duration;
} TwoflowVideoRequest;

typedef struct
{
  TwoflowVideoRequest v;
  TwoflowEssential essential;
  TwoflowFlows flows;
  gboolean rate_control_receiver;       /* else "fixed" */
  gchar *host;                  /* NULL: the control peer */
  gchar *host_token;            /* address validation (docs/security.md) */
  gint essential_port, enhanced_port;   /* 0: none (NAT: the server's) */
  gboolean nat;
  gdouble start;                /* s from the first key frame */
  gint skip_segments, end_segment;
  gboolean has_lead;            /* "lead" is a member */
  gdouble lead;                 /* s; NAN: absent or not a number */
  gchar *erap_key, *srtp_key;   /* hex; NULL: plaintext */
  gchar *essential_token;       /* TLS essential connection's proof */
} TwoflowPlayRequest;

typedef struct
{
  TwoflowRequestKind kind;
  gchar *cmd;                   /* as sent ("" when absent) */
  JsonNode *id;                 /* echoed in the reply; NULL: none */
  /* a known command whose fields are wrong: its reply's error */
  GError *invalid;
  gchar *token;                 /* AUTH */
  guint session;                /* TEARDOWN, STATS */
  TwoflowVideoRequest info;     /* INFO */
  TwoflowPlayRequest play;      /* PLAY */
} TwoflowRequest;

const gchar *twoflow_essential_to_string (TwoflowEssential e);
/* FALSE: @name is none of "ctcp", "erap", "tcp" */
gboolean twoflow_essential_from_string (const gchar * name,
    TwoflowEssential * e);
const gchar *twoflow_flows_to_string (TwoflowFlows f);

/* The request of one control line; NULL (and @error) when the line is no
 * JSON object or nests deeper than TWOFLOW_CONTROL_MAX_DEPTH. A command
 * with bad fields is returned with ->invalid set. */
TwoflowRequest *twoflow_request_parse (const gchar * line, GError ** error);
TwoflowRequest *twoflow_request_from_json (JsonObject * obj);
void twoflow_request_free (TwoflowRequest * req);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TwoflowRequest, twoflow_request_free);

/* A reply to @req: {"ok": ok, "id": its id}; @req may be NULL */
JsonObject *twoflow_reply_new (const TwoflowRequest * req, gboolean ok);
/* {"ok": false, "error": message, "id": ...} */
JsonObject *twoflow_reply_new_error (const TwoflowRequest * req,
    const gchar * message);

/* PLAY's reply, the session's part (the video's profile and schedule,
 * video_info_to_json()'s, are in the same object) */
typedef struct
{
  guint session;
  gdouble lead;                 /* s: playback after the flows start */
  gdouble start;                /* s: the key frame it starts at */
  gint64 start_frames;          /* -1: from the beginning */
  gint64 start_audio_records;   /* -1: from the beginning */
  gdouble enhanced_start;       /* s: the enhanced flow after the essential */
  guint64 startup_rate;         /* bit/s: the essential ramp (0: none) */
  gboolean smoothing;
  gdouble playout_depth;        /* s: the proxy's enhanced playout buffer */
  /* NAT: where the proxy connects or says hello (0: not given) */
  gint essential_port, enhanced_port;
  gint64 hello_id;              /* -1: not given */
} TwoflowPlayReply;

void twoflow_play_reply_init (TwoflowPlayReply * r);
/* the members of @r into @obj (an ok reply) */
void twoflow_play_reply_to_json (const TwoflowPlayReply * r,
    JsonObject * obj);
void twoflow_play_reply_from_json (JsonObject * obj, TwoflowPlayReply * r);

/* The proxy's side: a request as the JSON object it sends */
void twoflow_play_request_init (TwoflowPlayRequest * p);
void twoflow_play_request_clear (TwoflowPlayRequest * p);
void twoflow_video_request_clear (TwoflowVideoRequest * v);
JsonObject *twoflow_auth_request_to_json (const gchar * token);
JsonObject *twoflow_info_request_to_json (const TwoflowVideoRequest * v);
JsonObject *twoflow_play_request_to_json (const TwoflowPlayRequest * p);
JsonObject *twoflow_simple_request_to_json (TwoflowRequestKind kind,
    guint session);

G_END_DECLS
#endif
