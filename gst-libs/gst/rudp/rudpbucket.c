/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP leaky-bucket regulator (sans-IO). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rudpbucket.h"

#define NANO G_GINT64_CONSTANT (1000000000)

guint64
gst_rudp_bucket_auto_depth (guint64 rate)
{
  guint64 d = gst_util_uint64_scale (rate, GST_RUDP_BUCKET_AUTO_SPAN,
      GST_SECOND);

  return MAX (d, GST_RUDP_BUCKET_MIN_AUTO_DEPTH);
}

static gint64
cap_of (const GstRudpBucket * b)
{
  return (gint64) b->depth * NANO;
}

void
gst_rudp_bucket_init (GstRudpBucket * b, guint64 rate, guint64 depth,
    GstClockTime now)
{
  b->rate = rate;
  b->depth = depth ? depth : gst_rudp_bucket_auto_depth (rate);
  b->tokens = cap_of (b);
  b->last = now;
}

void
gst_rudp_bucket_fill (GstRudpBucket * b, GstClockTime now)
{
  gint64 cap = cap_of (b);
  guint64 dt;

  if (!GST_CLOCK_TIME_IS_VALID (now) || now <= b->last) {
    return;
  }
  dt = now - b->last;
  b->last = now;
  if (b->tokens >= cap || b->rate == 0)
    return;
  /* compare before multiplying: rate * dt may overflow after long idling */
  if (dt >= (guint64) (cap - b->tokens) / b->rate + 1)
    b->tokens = cap;
  else
    b->tokens = MIN (cap, b->tokens + (gint64) (b->rate * dt));
}

void
gst_rudp_bucket_set_rate (GstRudpBucket * b, guint64 rate, GstClockTime now)
{
  gst_rudp_bucket_fill (b, now);
  b->rate = rate;
}

void
gst_rudp_bucket_set_depth (GstRudpBucket * b, guint64 depth)
{
  b->depth = depth ? depth : gst_rudp_bucket_auto_depth (b->rate);
  b->tokens = MIN (b->tokens, cap_of (b));
}

static gint64
need_of (const GstRudpBucket * b, gsize size)
{
  return (gint64) MIN ((guint64) size, b->depth) * NANO;
}

gboolean
gst_rudp_bucket_may_send (const GstRudpBucket * b, gsize size)
{
  return b->tokens >= need_of (b, size);
}

gboolean
gst_rudp_bucket_take (GstRudpBucket * b, gsize size)
{
  if (!gst_rudp_bucket_may_send (b, size))
    return FALSE;
  b->tokens -= (gint64) size *NANO;
  return TRUE;
}

void
gst_rudp_bucket_charge (GstRudpBucket * b, gsize size)
{
  b->tokens -= (gint64) size *NANO;
}

GstClockTime
gst_rudp_bucket_ready_time (const GstRudpBucket * b, gsize size)
{
  gint64 missing = need_of (b, size) - b->tokens;

  if (missing <= 0)
    return b->last;
  if (b->rate == 0)
    return GST_CLOCK_TIME_NONE;
  /* round up: at the returned time the tokens are there */
  return b->last + ((guint64) missing + b->rate - 1) / b->rate;
}

gint64
gst_rudp_bucket_level (const GstRudpBucket * b)
{
  return b->tokens / NANO;
}
