/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the process-wide pacer of all rudpsinks: one thread, one timer.
 *
 * Each sink is a session of the pacer, an opaque type as the ERAP
 * manager's (gst/erap/gsterapmanager.h): the pacer owns the session's I/O
 * state (the socket's sending side, the destination, the SRTP context, the
 * sans-IO sender core, the NAT learner, retransmission history, counters)
 * and talks back to the sink only through GstRudpPacerCallbacks. */
#ifndef __GST_RUDP_PACER_H__
#define __GST_RUDP_PACER_H__

#include <gst/gst.h>
#include <gio/gio.h>
#include <gst/rudp/rudp.h>
#include <gst/twoflow/twoflowhello.h>
#include "gstrudpsrtp.h"

G_BEGIN_DECLS

typedef struct _GstRudpPacerSession GstRudpPacerSession;

typedef struct {
  /* The receiver's level moved the flow to @bitrate (the receiver's
   * @srtt): called in the pacer's thread without its lock, @owner
   * referenced for the call. */
  void (*level_changed) (GstObject * owner, guint64 bitrate,
      GstClockTime srtt);
  /* The first datagram the socket refused (later ones are only counted):
   * called in the pacer's thread with its lock held; must not call the
   * pacer. */
  void (*send_error) (GstObject * owner, const GError * error);
} GstRudpPacerCallbacks;

/* What the sink's properties set and may change while running */
typedef struct {
  guint64 rate;                 /* bit/s, under fixed rate control */
  guint64 bucket_depth;         /* bytes */
  guint64 buffer_size;          /* bytes queued before render blocks */
  GstClockTime timer_interval;
} GstRudpPacerParams;

typedef struct {
  GstRudpPacerParams params;
  GSocket *socket;              /* non-blocking, referenced by the session;
                                 * the owner closes it after removing it */
  GSocketAddress *dest;         /* NULL: learnt from hellos (learn) */
  GstRudpSrtp *srtp;            /* taken; NULL in plaintext mode */
  GstRudpSenderConfig sender;   /* follow: receiver rate control */
  /* learn-peer: the hellos naming @hello_id from @allowed only */
  GInetAddress *allowed;
  guint64 hello_id;
  GstClockTime rtx_time;        /* keep sent packets this long (0: never) */
} GstRudpPacerSessionConfig;

typedef struct {
  GstRudpFlowStats flow;
  GstRudpSenderStats sender;
  GstTwoflowHelloLearnerStats hello;
  guint64 send_errors;
  guint64 auth_failures;        /* feedback failing SRTCP authentication */
  guint64 replayed;             /* feedback replayed (SRTCP index seen) */
  guint64 foreign_feedback;     /* plaintext feedback from another address */
  guint64 dropped_no_peer;      /* RTP due before a hello named the peer */
  guint64 hellos_unknown;       /* hellos naming another session */
  guint64 rtx_requested;        /* sequence numbers NACKed, first time */
  guint64 rtx_repeated;         /* NACKed again */
  guint64 rtx_sent;             /* datagrams resent */
  guint64 rtx_missing;          /* NACKed but no longer (or never) kept */
  guint64 rtx_skipped;          /* NACKed, not resent: resent 4 times */
  guint64 rtx_charged;          /* resent over the budget, paid by the
                                 * flow's bucket (new packets wait) */
  gboolean srtp;
  gchar *peer;                  /* "address:port", NULL while unknown;
                                 * the caller frees it */
} GstRudpPacerSessionStats;

/* Adds a flow for @owner to the shared pacer (started on first use). */
GstRudpPacerSession *gst_rudp_pacer_add_session (
    const GstRudpPacerSessionConfig * config, GstObject * owner,
    const GstRudpPacerCallbacks * callbacks);
/* Removes the flow, dropping what it still queues; after this returns no
 * callback runs and the socket is no longer used; the last removal stops
 * the thread. */
void gst_rudp_pacer_remove_session (GstRudpPacerSession * s);

/* Queues @buf (takes it), waiting while the session's buffer is full.
 * Returns FALSE if the session started flushing. */
gboolean gst_rudp_pacer_session_queue (GstRudpPacerSession * s,
    GstBuffer * buf);
/* Waits until all of the session's packets are sent (FALSE when
 * flushing). */
gboolean gst_rudp_pacer_session_drain (GstRudpPacerSession * s);
void gst_rudp_pacer_session_set_flushing (GstRudpPacerSession * s,
    gboolean flushing);
void gst_rudp_pacer_session_flush (GstRudpPacerSession * s);
/* Applies new rate, depth, interval and buffer size. */
void gst_rudp_pacer_session_reconfigure (GstRudpPacerSession * s,
    const GstRudpPacerParams * params);
/* The rate under receiver rate control: that level. */
void gst_rudp_pacer_session_set_level (GstRudpPacerSession * s, guint level);
void gst_rudp_pacer_session_get_stats (GstRudpPacerSession * s,
    GstRudpPacerSessionStats * st);

G_END_DECLS

#endif
