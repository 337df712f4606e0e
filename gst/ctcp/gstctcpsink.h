/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ctcpsink: controlled TCP sender with TCP congestion events
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __GST_CTCP_SINK_H__
#define __GST_CTCP_SINK_H__

#include <gst/gst.h>
#include "twoflowprops.h"
#include <gst/base/gstbasesink.h>
#include <gio/gio.h>
#include <gst/ctcp/ctcp.h>

G_BEGIN_DECLS

#define GST_TYPE_CTCP_SINK (gst_ctcp_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstCtcpSink, gst_ctcp_sink, GST, CTCP_SINK, GstBaseSink)

/**
 * GstCtcpSinkMode:
 * @GST_CTCP_SINK_MODE_CTCP: controlled TCP: segment target rates, W_target, pacing
 * @GST_CTCP_SINK_MODE_TCP: plain TCP (as fast as the connection goes), the baseline
 */
typedef enum {
  GST_CTCP_SINK_MODE_CTCP = 0,
  GST_CTCP_SINK_MODE_TCP = 1,
} GstCtcpSinkMode;

#define GST_TYPE_CTCP_SINK_MODE (gst_ctcp_sink_mode_get_type ())
GType gst_ctcp_sink_mode_get_type (void);

/**
 * GstCtcpSinkCongestionControl:
 * @GST_CTCP_SINK_CC_DEFAULT: the system's default
 * @GST_CTCP_SINK_CC_CUBIC: CUBIC
 * @GST_CTCP_SINK_CC_RENO: Reno
 * @GST_CTCP_SINK_CC_BBR: BBR
 */
typedef enum {
  GST_CTCP_SINK_CC_DEFAULT = 0,
  GST_CTCP_SINK_CC_CUBIC = 1,
  GST_CTCP_SINK_CC_RENO = 2,
  GST_CTCP_SINK_CC_BBR = 3,
} GstCtcpSinkCongestionControl;

#define GST_TYPE_CTCP_SINK_CONGESTION_CONTROL (gst_ctcp_sink_congestion_control_get_type ())
GType gst_ctcp_sink_congestion_control_get_type (void);

/**
 * GstCtcpSinkTlsRole:
 * @GST_CTCP_SINK_TLS_ROLE_CLIENT: the sink is the TLS client and checks
 *   the receiver's certificate
 * @GST_CTCP_SINK_TLS_ROLE_SERVER: the sink is the TLS server (its own
 *   certificate); the receiver, the TLS client, checks it and proves
 *   itself with #GstCtcpSink:tls-token
 *
 * Which end of the TLS handshake the sink plays, whichever end opened
 * the TCP connection.
 */
typedef enum {
  GST_CTCP_SINK_TLS_ROLE_CLIENT = 0,
  GST_CTCP_SINK_TLS_ROLE_SERVER = 1,
} GstCtcpSinkTlsRole;

#define GST_TYPE_CTCP_SINK_TLS_ROLE (gst_ctcp_sink_tls_role_get_type ())
GType gst_ctcp_sink_tls_role_get_type (void);

struct _GstCtcpSink {
  GstBaseSink parent;

  /* properties (object lock) */
  gchar *host;
  guint port;
  GstCtcpSinkMode mode;
  GstClockTime segment_duration;
  gdouble loss_threshold;
  GstClockTime adjustment_interval;
  guint64 target_rate;
  gdouble max_catch_up;
  guint64 lead;                 /* ns, 0: one segment */
  guint64 startup_rate;         /* bit/s, 0: no ramp */
  gdouble startup_factor;
  GstCtcpSinkCongestionControl cc;
  guint events;
  TwoflowTlsProps tls_props;    /* tls, tls-ca-file, tls-pin, tls-token */
  gchar *tls_certificate;
  gchar *tls_key;
  gboolean listen;
  guint bind_port;
  guint bound_port;             /* listen=true: from start on */
  GstClockTime connect_timeout;
  GstCtcpSinkTlsRole tls_role;

  /* connection */
  GSocket *socket;
  gint fd;
  GCancellable *cancellable;
  gchar *peer;
  GIOStream *conn;              /* the socket's stream (TLS only) */
  GIOStream *tls_conn;          /* NULL: plain TCP */
  GPollableOutputStream *tls_out;
  guint8 *stage;                /* the record being written (TLS): a
                                 * blocked write is retried as it was */
  gsize stage_len;
  guint tls_overhead;           /* bytes per record */
  gchar *tls_protocol;
  gchar *tls_suite;

  /* everything below: self->lock */
  GMutex lock;
  GCond cond;
  GThread *thread;
  GSocket *listener;            /* listen=true, until accepted */
  gchar *accept_host;           /* the address accepted from */
  /* the connection the sender thread makes (copied at start) */
  gchar *conn_host;
  guint conn_port;
  gchar *conn_cc;
  gboolean conn_tls;
  GstCtcpSinkTlsRole conn_tls_role;
  gchar *conn_ca_file, *conn_pin, *conn_certificate, *conn_key, *conn_token;
  GstClockTime conn_timeout;
  guint refused;                /* connections refused (listen, TLS, token) */
  gboolean capped;
  GstClock *clock;
  GstClockID clock_id;
  gboolean running;             /* the sender thread should go on */
  gboolean flushing;            /* unlock(): render must return */
  gboolean kick;                /* new work for the sender thread */
  gboolean eos;
  gboolean shut;                /* write side shut down after EOS */
  GstFlowReturn flow;           /* error seen by the sender thread */
  gchar *cc_used;               /* TCP_CONGESTION of the socket */

  /* stream bytes accepted and not yet written, in order */
  GQueue queue;
  gsize head_offset;

  /* the algorithm: segments, rates, window, pacing, events, stats */
  GstCtcpSender *core;

  guint8 tcp_state;             /* of the last TCP_INFO reading */
  guint64 pacing_set;           /* SO_MAX_PACING_RATE last set */
};

GST_ELEMENT_REGISTER_DECLARE (ctcpsink);

G_END_DECLS

#endif
