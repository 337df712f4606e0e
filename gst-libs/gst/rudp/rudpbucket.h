/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP leaky-bucket regulator (sans-IO).
 *
 * A token bucket whose tokens arrive at @rate bytes per second and
 * accumulate up to @depth bytes. A packet may leave when the bucket holds
 * its size in tokens; a packet larger than the bucket leaves when the
 * bucket is full and the bucket goes into debt for the rest, so any depth
 * passes any packet at exactly the token rate.
 * Tokens are kept in byte-nanoseconds so no rounding drifts the rate.
 */
#ifndef __GST_RUDP_BUCKET_H__
#define __GST_RUDP_BUCKET_H__

#include <gst/gst.h>
#include <gst/rudp/rudp-prelude.h>

G_BEGIN_DECLS

typedef struct {
  guint64 rate;                 /* bytes per second */
  guint64 depth;                /* bytes */
  gint64 tokens;                /* bytes * 1e9; negative while in debt */
  GstClockTime last;            /* time up to which tokens were credited */
} GstRudpBucket;

/* Smallest automatic depth, and the span of rate an automatic depth holds. */
#define GST_RUDP_BUCKET_MIN_AUTO_DEPTH 3000
#define GST_RUDP_BUCKET_AUTO_SPAN (20 * GST_MSECOND)

TWOFLOW_RUDP_API
guint64 gst_rudp_bucket_auto_depth (guint64 rate);

/* @depth 0 selects gst_rudp_bucket_auto_depth(). Starts full. */
TWOFLOW_RUDP_API
void gst_rudp_bucket_init (GstRudpBucket * b, guint64 rate, guint64 depth,
    GstClockTime now);
/* Credits tokens up to @now at the old rate, then switches. */
TWOFLOW_RUDP_API
void gst_rudp_bucket_set_rate (GstRudpBucket * b, guint64 rate,
    GstClockTime now);
void gst_rudp_bucket_set_depth (GstRudpBucket * b, guint64 depth);
TWOFLOW_RUDP_API
void gst_rudp_bucket_fill (GstRudpBucket * b, GstClockTime now);
/* Whether a packet of @size bytes may leave now (after a fill). */
TWOFLOW_RUDP_API
gboolean gst_rudp_bucket_may_send (const GstRudpBucket * b, gsize size);
/* Takes @size bytes of tokens if gst_rudp_bucket_may_send(). */
TWOFLOW_RUDP_API
gboolean gst_rudp_bucket_take (GstRudpBucket * b, gsize size);
/* Takes @size bytes of tokens whatever the bucket holds, into debt if
 * need be (bytes that left outside it, a retransmission, still count
 * toward the rate); call gst_rudp_bucket_fill() first. */
TWOFLOW_RUDP_API
void gst_rudp_bucket_charge (GstRudpBucket * b, gsize size);
/* Earliest time a packet of @size may leave (>= b->last);
 * GST_CLOCK_TIME_NONE at rate 0. */
TWOFLOW_RUDP_API
GstClockTime gst_rudp_bucket_ready_time (const GstRudpBucket * b, gsize size);
/* Tokens in bytes (negative while in debt). */
TWOFLOW_RUDP_API
gint64 gst_rudp_bucket_level (const GstRudpBucket * b);

G_END_DECLS

#endif
