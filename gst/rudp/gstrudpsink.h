/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rudpsink: paced RTP/UDP sender */
#ifndef __GST_RUDP_SINK_H__
#define __GST_RUDP_SINK_H__

#include <gst/gst.h>
#include "twoflowprops.h"
#include <gst/base/gstbasesink.h>
#include <gio/gio.h>
#include <gst/rudp/rudp.h>
#include <gst/twoflow/twoflowhello.h>
#include "twoflowservice.h"
#include "gstrudpsrtp.h"

G_BEGIN_DECLS

#define GST_TYPE_RUDP_SINK (gst_rudp_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstRudpSink, gst_rudp_sink, GST, RUDP_SINK, GstBaseSink)

typedef enum {
  GST_RUDP_RATE_CONTROL_FIXED = 0,
  GST_RUDP_RATE_CONTROL_RECEIVER = 1,
} GstRudpRateControl;

#define GST_TYPE_RUDP_RATE_CONTROL (gst_rudp_rate_control_get_type ())
GType gst_rudp_rate_control_get_type (void);

struct _GstRudpSink {
  GstBaseSink parent;

  /* properties (object lock) */
  gchar *host;
  guint port;
  guint64 rate;                 /* bit/s */
  GstClockTime timer_interval;
  guint64 bucket_depth;
  guint64 buffer_size;
  GstRudpRateControl rate_control;
  GstRudpLevels levels;         /* bit/s */
  guint initial_level;          /* from rate under receiver control */
  gchar *key;                   /* SRTP master key and salt, hex; NULL: plain */
  GstRudpSrtpCipher srtp_cipher;
  GstRudpSrtpAuth srtp_auth;
  guint bind_port;              /* 0: an ephemeral port */
  TwoflowHelloSenderProps hello_props; /* learn-peer, hello-id */
  gboolean ecn;                 /* send RTP as ECT(0) (RFC 3168) */
  GstClockTime rtx_time;        /* keep sent packets this long for NACKs */

  /* I/O, between start and stop */
  GSocket *socket;
  GSocketAddress *dest;         /* NULL until learnt (learn-peer) */
  guint bound_port;
  gboolean ecn_on;              /* the socket sends ECT(0) */
  GstRudpSrtp *srtp;            /* NULL in plaintext mode */
  guint8 *scratch;              /* the packet being protected (pacer) */
  gsize scratch_size;
  gsize scratch_len;            /* of the last protected datagram */

  /* under the pacer's (the shared service's) lock */
  TwoflowService *pacer;
  GstRudpFlow *flow;
  GstRudpSender *sender;        /* sans-IO levels core (kept after stop) */
  gboolean flushing;
  GCond space;                  /* render and drain: packets of ours left */
  gboolean sent;                /* this tick sent packets of ours */
  guint64 send_errors;
  guint64 auth_failures;        /* feedback failing SRTCP authentication */
  guint64 replayed;             /* feedback replayed (SRTCP index seen) */
  guint64 foreign_feedback;     /* plaintext feedback from another address */
  GstTwoflowHelloLearner *learner;      /* learn-peer */
  GstTwoflowHelloLearnerStats last_hello;
  guint64 dropped_no_peer;      /* RTP due before a hello named the peer */
  guint64 hellos_unknown;       /* hellos naming another session */
  /* retransmission: the datagrams sent in the last rtx_time, as sent
   * (protected under SRTP), oldest first (GstRudpRtxEntry) */
  GQueue rtx_history;
  guint64 rtx_requested;        /* sequence numbers NACKed, first time */
  guint64 rtx_repeated;         /* NACKed again */
  guint64 rtx_sent;             /* datagrams resent */
  guint64 rtx_missing;          /* NACKed but no longer (or never) kept */
  guint64 rtx_skipped;          /* NACKed, not resent: over the budget */
  gdouble rtx_tokens;           /* the retransmission budget, bytes */
  GstClockTime rtx_tokens_at;
  gdouble sent_rate;            /* bytes/s sent over the last full second */
  GstClockTime sent_window_start;
  guint64 sent_window_bytes;
  gboolean notify_pending;      /* a level change to announce upstream */
  guint64 notify_bitrate;
  GstClockTime notify_srtt;
};

GST_ELEMENT_REGISTER_DECLARE (rudpsink);

/* The stats structure; @fs NULL while stopped. */
GstStructure *gst_rudp_sink_make_stats (GstRudpSink * sink,
    const GstRudpFlowStats * fs);

G_END_DECLS

#endif
