/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — a session: its control connection, its PLAY and events
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROXY_SESSION_H__
#define __TWOFLOW_PROXY_SESSION_H__

#include <stdio.h>
#include <gio/gio.h>
#include <gst/gst.h>
#include <gst/twoflow/twoflowframe.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef struct
{
  guint id;
  gchar *video;
  gboolean prestage;
  GSocketConnection *conn;
  GDataInputStream *in;
  GOutputStream *out;
  GCancellable *cancel;
  gchar *local_addr;
  JsonObject *info;
  guint64 peak_rate;
  gint server_session;
  GstElement *bin, *ess_src, *enh_src, *merge, *jitterbuffer;
  gint enh_port;
  gchar *video_codec, *audio_codec;     /* from INFO; audio_codec NULL: none */
  gboolean audio_out;           /* the merge gives an "audio" pad */
  guint ready_timer;
  gboolean play_sent, server_done;
  gchar *error;
  gint64 started_us;
  /* start-up: when the session was asked for, and when the merge gave its
   * first and second video frames (monotonic, us; 0: not yet) */
  gint64 created_us, first_frame_us, second_frame_us;
  /* measurement (progress events, once a second) */
  gint64 ess_bytes, enh_bytes;    /* under counters_lock */
  GMainLoop *loop;              /* fetch mode */
  /* --arrivals: one line per essential record as it arrives */
  FILE *arrivals;
  GstTwoflowParser *arrivals_parser;
  gdouble lead;                 /* s, from the PLAY reply */
  guint playout_ms;             /* the enhanced flow's jitterbuffer latency */
  guint samples, unhealthy_samples;     /* measured health, once a second */
  gboolean smoothing;           /* the server smooths the enhanced flow */
  gint64 enh_rate_changes;      /* its rate changes, as last reported */
  /* per-session media keys (hex), made here and sent in PLAY over the TLS
   * control channel; NULL with --insecure (plaintext flows) */
  gchar *erap_key, *srtp_key;
  /* cTCP/TCP over TLS: the secret ctcpsrc sends the server's ctcpsink
   * inside TLS (sent in PLAY as essential_token) */
  gchar *ess_token;
  /* the HTTP status: kind ("rtsp", "hls", "fetch", "prestage"), rates */
  const gchar *kind;
  gint64 rate_us, rate_ess, rate_enh;
  gdouble ess_rate, enh_rate;   /* bit/s */
  gboolean interrupted;         /* fetch: SIGTERM/SIGINT */
  GstElement *out_mux;          /* the muxer of build_mux */
  JsonObject *server_final;     /* the server's "done" event: final stats */
  guint final_timer;            /* fetch: output done, waiting for it */
  guint closed_timer;           /* fetch: the server went away */
  /* what the output lacks (proxy_session_report's "delivery") */
  gint64 lost_frames, unexplained_frames, audio_missing;
  /* seeking: the start asked of the server (s from the video's first key
   * frame) and where it starts (PLAY's reply: the key frame before it) */
  gdouble start, start_npt;
  gint64 start_frames, start_audio;     /* -1: the whole video */
  gboolean rtsp_played;         /* a PLAY of its RTSP viewer was answered */
  gint released;                /* (atomic) its media is gone: no PLAY,
                                 * no events; freed in the main loop */
  JsonObject *end_report;       /* taken as its media went */
  gint replaced;                /* (atomic) a seek replaced it: its events
                                 * (the flows' end as errors) are not the
                                 * media's */
} ProxySession;

/* the byte counters of every session (ess_bytes, enh_bytes) and its
 * first frames' times */
G_LOCK_EXTERN (counters);
/* video name -> JsonObject (INFO reply), for DESCRIBE and admission */
extern GHashTable *info_cache;

/* What the modules above want to know of every session (the HTTP side
 * keeps the list, admission measures them); any member NULL */
typedef struct
{
  void (*added) (ProxySession * ps);
  void (*removed) (ProxySession * ps);
  /* PLAY answered: the flows start */
  void (*started) (ProxySession * ps);
  /* a progress event of the server, once a second */
  void (*progress) (ProxySession * ps, JsonObject * ev);
  /* its report being made (twoflow-proxy-report.c): what it adds */
  void (*report) (ProxySession * ps, JsonObject * report);
} ProxySessionHooks;

void proxy_session_add_hooks (const ProxySessionHooks * hooks);
void proxy_session_notify_report (ProxySession * ps, JsonObject * report);

void log_json (const gchar * tag, JsonObject * obj);
void proxy_session_free (ProxySession * ps);
ProxySession *proxy_session_new (const gchar * video, gboolean prestage,
    GError ** error);
/* the same on the main loop: connect and INFO asynchronously (an HLS run) */
void proxy_session_new_async (const gchar * video, gboolean prestage,
    GCancellable * cancellable, GAsyncReadyCallback callback,
    gpointer user_data);
ProxySession *proxy_session_new_finish (GAsyncResult * res, GError ** error);
gchar *prefix_path (const gchar * video);
gint64 counter_get (gint64 * counter);
gboolean proxy_session_play_now (ProxySession * ps);
void proxy_session_start (ProxySession * ps);
void end_session_output (ProxySession * ps);
void twoflow_proxy_session_init (void);

G_END_DECLS
#endif
