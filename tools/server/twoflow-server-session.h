/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — a session: what PLAY asked for, its two pipelines, its
 * rate control (the pool: twoflow-server-pool.c; the pipelines:
 * twoflow-server-media.c)
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_SESSION_H__
#define __TWOFLOW_SERVER_SESSION_H__

#include <gst/gst.h>
#include <gst/ratecontrol/sessionrate.h>
#include "twoflow-server-schedule.h"

G_BEGIN_DECLS

typedef struct
{
  guint id;
  gpointer owner;               /* its client (twoflow-server-client.c) */
  gchar *identity;              /* the owner's identity: limits, lookups */
  VideoInfo *info;
  gchar *host;
  gchar *essential;             /* "ctcp" | "erap" | "tcp" */
  gchar *rate_control;          /* rudpsink: "fixed" | "receiver" */
  gboolean smooth;              /* enhanced flow paced by window rates */
  gboolean total;               /* ...which keep the session's total constant
                                 * (--enhanced-rate total): read ahead, the
                                 * rate switched by the clock */
  guint rate_timer;             /* total: the next window's rate */
  Schedule *sched;
  gdouble enh_start;            /* s after the essential flow's start */
  gdouble smoothing_lead;       /* s the enhanced flow is sent ahead */
  guint64 enh_rate_now;         /* bit/s in force (streaming thread) */
  guint64 enh_rate_changes;
  gchar *erap_key, *srtp_key;   /* from PLAY (hex), NULL: plaintext */
  gchar *ess_token;             /* from PLAY: the proxy's proof on the
                                 * TLS essential connection (cTCP/TCP) */
  gint ess_port, enh_port;
  gdouble segment_duration, start, lead;
  GstClockTime start_pts;       /* the key frame a start begins at (0: none) */
  GstClockTime start_rt;        /* its running time in the file */
  guint64 start_frames, start_audio;    /* frames, audio records from it */
  gint skip_segments, end_segment;
  gboolean flows_essential, flows_enhanced;
  gboolean nat;                 /* behind NAT: the proxy connects (cTCP/TCP)
                                 * or says hello first (ERAP, rUDP) */
  guint64 hello_id;             /* NAT: names the session in the hellos */
  gint64 hello_wait_until;      /* NAT: start the enhanced flow by then */
  GstElement *ess_pipe, *enh_pipe;
  GstElement *ess_sink, *enh_sink, *transcoder;
  guint ess_watch, enh_watch;
  gboolean ess_done, enh_done;
  guint lead_timer, progress_timer;
  guint64 forwarded_events, unforwarded_events;
  GList *pending_events;        /* GstStructure: congestion during the lead */
  /* the session rate controller (NULL: --rate-controller events) */
  GstTwoflowSessionRate *rc;
  guint rc_timer;
  guint64 rc_max;               /* its max-bitrate */
  guint64 rc_target;            /* the target last applied, bit/s */
  guint64 rc_changes, rc_events;
  gboolean rc_pace;             /* it sets the rUDP sender's rate too */
  gboolean rc_have_rr;
  guint32 rc_rr_base_seq;
  gint32 rc_rr_base_lost;
  guint64 rc_rtx_base;
  guint64 rc_enh_expected, rc_enh_lost, rc_enh_delivered;
  guint64 rc_enh_rr_lost;
  guint64 rc_ess_acked;         /* cTCP's bytes acked at the last tick */
  guint64 rc_ess_acks;          /* ERAP's ACKs at the last tick */
  guint64 rc_enh_rtt_samples;   /* rUDP receiver's RTT samples, last tick */
  guint64 sched_rate;           /* the pacing its schedule asks for */
  guint64 startup_rate;         /* bit/s: the essential ramp (0: none) */
  guint64 rc_cap;               /* the controller's cap on it (0: none) */
  guint64 rc_catchup;           /* its catch-up rate (0: none) */
  guint64 rc_code;              /* the coding target last applied, bit/s */
  gboolean enh_playing;         /* the enhanced pipeline reached PLAYING */
  gint64 started_us;
  /* essential "tcp": segment s is released at release_base + s·T */
  GstClock *clock;
  GstClockTime release_base;
  GstClockID release_id;
  gboolean release_stop;
  GMutex release_lock;
  guint64 released_segments;
} Session;

G_END_DECLS
#endif
