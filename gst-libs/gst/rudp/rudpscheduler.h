/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP shared-timer scheduler (sans-IO).
 *
 * Many flows, one timer: every flow owns a leaky bucket and a queue of
 * opaque packets; at each tick every flow releases what its bucket allows
 * (poll: one packet at a time, the flows in turn).
 * Ticks lie on one grid (start + k * interval) shared by all flows; the
 * scheduler only asks to be woken when some queued packet can leave, so an
 * idle or slow set of flows costs no wakeups. Not thread-safe: callers
 * serialize access.
 */
#ifndef __GST_RUDP_SCHEDULER_H__
#define __GST_RUDP_SCHEDULER_H__

#include <gst/gst.h>
#include <gst/rudp/rudp-prelude.h>
#include <gst/rudp/rudpbucket.h>

G_BEGIN_DECLS

typedef struct _GstRudpScheduler GstRudpScheduler;
typedef struct _GstRudpFlow GstRudpFlow;

typedef struct {
  guint64 rate;                 /* bytes/s */
  guint64 depth;                /* bytes (the effective one) */
  gint64 bucket_fill;           /* bytes of tokens, negative in debt */
  guint64 bytes_sent;
  guint64 packets_sent;
  guint64 queued_bytes;
  guint queued_packets;
} GstRudpFlowStats;

/* Called for each packet a tick releases, in order per flow. The packet
 * belongs to the callee from then on. */
typedef void (*GstRudpSendFunc) (GstRudpFlow * flow, gpointer packet,
    gsize size, gpointer user_data);

TWOFLOW_RUDP_API
GstRudpScheduler *gst_rudp_scheduler_new (GstClockTime interval,
    GstClockTime now);
/* Flows must have been removed. */
TWOFLOW_RUDP_API
void gst_rudp_scheduler_free (GstRudpScheduler * s);
TWOFLOW_RUDP_API
void gst_rudp_scheduler_set_interval (GstRudpScheduler * s,
    GstClockTime interval);
TWOFLOW_RUDP_API
guint gst_rudp_scheduler_n_flows (GstRudpScheduler * s);

/* @depth 0: automatic (see GstRudpBucket). */
TWOFLOW_RUDP_API
GstRudpFlow *gst_rudp_scheduler_add_flow (GstRudpScheduler * s,
    guint64 rate, guint64 depth, gpointer user_data, GstClockTime now);
/* Frees the queued packets with @free_packet (may be NULL). */
TWOFLOW_RUDP_API
void gst_rudp_scheduler_remove_flow (GstRudpScheduler * s, GstRudpFlow * f,
    GDestroyNotify free_packet);

/* Takes the next packet that may leave at @now: one packet per call,
 * the flows in turn (round-robin, so a flow catching up does not hold
 * back the others). The packet, its size and flow go to the out
 * arguments and belong to the caller; FALSE when none may leave.
 *
 * Each packet is paid from its bucket at @now, so a shell should read
 * its clock before every call and hand the packet to the socket right
 * after it: then no packet leaves later than the time it was paid at
 * (apart from the instant between the clock read and the send), and the
 * bucket's bound holds on the wire: in any window of length W at most
 * rate x W + depth + one packet, however long the thread was held up
 * between two packets (a wait is credited once, capped at the depth).
 * Paying a whole tick's packets at one @now and sending them after a
 * stall would put the stall on top: they leave late, and the wait is
 * credited again from the earlier time. */
TWOFLOW_RUDP_API
gboolean gst_rudp_scheduler_poll (GstRudpScheduler * s, GstClockTime now,
    GstRudpFlow ** flow, gpointer * packet, gsize * size);
/* Releases, at @now, every packet the buckets allow (gst_rudp_scheduler_poll
 * until FALSE, all at the same @now: for a virtual clock). Returns the
 * number of packets released. */
TWOFLOW_RUDP_API
guint gst_rudp_scheduler_tick (GstRudpScheduler * s, GstClockTime now,
    GstRudpSendFunc func, gpointer user_data);
/* When the next tick is worth running: a grid point (or @now, when a
 * packet can leave at once); GST_CLOCK_TIME_NONE while nothing can
 * leave (no packets, or rate 0). */
TWOFLOW_RUDP_API
GstClockTime gst_rudp_scheduler_next_wakeup (GstRudpScheduler * s,
    GstClockTime now);

TWOFLOW_RUDP_API
void gst_rudp_flow_handle_packet (GstRudpFlow * f, gpointer packet,
    gsize size);
TWOFLOW_RUDP_API
void gst_rudp_flow_flush (GstRudpFlow * f, GDestroyNotify free_packet);
TWOFLOW_RUDP_API
void gst_rudp_flow_set_rate (GstRudpFlow * f, guint64 rate, GstClockTime now);
TWOFLOW_RUDP_API
void gst_rudp_flow_set_depth (GstRudpFlow * f, guint64 depth);
/* @size bytes left for the flow outside its queue at @now (a
 * retransmission): taken from its bucket, into debt if need be, so its
 * next packets wait for them and the flow keeps its rate. */
TWOFLOW_RUDP_API
void gst_rudp_flow_charge (GstRudpFlow * f, gsize size, GstClockTime now);
TWOFLOW_RUDP_API
guint64 gst_rudp_flow_queued_bytes (GstRudpFlow * f);
TWOFLOW_RUDP_API
guint gst_rudp_flow_queued_packets (GstRudpFlow * f);
TWOFLOW_RUDP_API
gpointer gst_rudp_flow_get_user_data (GstRudpFlow * f);
/* Credits the bucket to @now first, so bucket_fill is current. */
TWOFLOW_RUDP_API
void gst_rudp_flow_get_stats (GstRudpFlow * f, GstClockTime now,
    GstRudpFlowStats * stats);

G_END_DECLS

#endif
