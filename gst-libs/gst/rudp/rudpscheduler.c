/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP shared-timer scheduler (sans-IO). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rudpscheduler.h"

typedef struct {
  gpointer packet;
  gsize size;
} Item;

struct _GstRudpFlow {
  GstRudpScheduler *sched;
  GstRudpBucket bucket;
  guint64 req_depth;            /* as asked: 0 is automatic */
  GQueue queue;                 /* of Item */
  guint64 queued_bytes;
  guint64 bytes_sent, packets_sent;
  gpointer user_data;
};

struct _GstRudpScheduler {
  GstClockTime interval;
  GstClockTime base;            /* origin of the tick grid */
  GList *flows;
  GList *turn;                  /* the flow poll looks at first */
};

GstRudpScheduler *
gst_rudp_scheduler_new (GstClockTime interval, GstClockTime now)
{
  GstRudpScheduler *s = g_new0 (GstRudpScheduler, 1);

  s->interval = MAX (interval, 1);
  s->base = now;
  return s;
}

void
gst_rudp_scheduler_free (GstRudpScheduler * s)
{
  g_return_if_fail (s->flows == NULL);
  g_free (s);
}

void
gst_rudp_scheduler_set_interval (GstRudpScheduler * s, GstClockTime interval)
{
  s->interval = MAX (interval, 1);
}

guint
gst_rudp_scheduler_n_flows (GstRudpScheduler * s)
{
  return g_list_length (s->flows);
}

GstRudpFlow *
gst_rudp_scheduler_add_flow (GstRudpScheduler * s, guint64 rate,
    guint64 depth, gpointer user_data, GstClockTime now)
{
  GstRudpFlow *f = g_new0 (GstRudpFlow, 1);

  f->sched = s;
  f->req_depth = depth;
  gst_rudp_bucket_init (&f->bucket, rate, depth, now);
  g_queue_init (&f->queue);
  f->user_data = user_data;
  s->flows = g_list_append (s->flows, f);
  return f;
}

void
gst_rudp_flow_flush (GstRudpFlow * f, GDestroyNotify free_packet)
{
  Item *it;

  while ((it = g_queue_pop_head (&f->queue))) {
    if (free_packet)
      free_packet (it->packet);
    g_free (it);
  }
  f->queued_bytes = 0;
}

void
gst_rudp_scheduler_remove_flow (GstRudpScheduler * s, GstRudpFlow * f,
    GDestroyNotify free_packet)
{
  gst_rudp_flow_flush (f, free_packet);
  if (s->turn && s->turn->data == f)
    s->turn = s->turn->next;
  s->flows = g_list_remove (s->flows, f);
  g_free (f);
}

/* One packet of @f if its bucket pays for it at @now. */
static gboolean
flow_take (GstRudpFlow * f, GstClockTime now, gpointer * packet, gsize * size)
{
  Item *it = g_queue_peek_head (&f->queue);

  if (!it)
    return FALSE;
  gst_rudp_bucket_fill (&f->bucket, now);
  if (!gst_rudp_bucket_take (&f->bucket, it->size))
    return FALSE;
  g_queue_pop_head (&f->queue);
  *packet = it->packet;
  *size = it->size;
  g_free (it);
  f->queued_bytes -= *size;
  f->bytes_sent += *size;
  f->packets_sent++;
  return TRUE;
}

gboolean
gst_rudp_scheduler_poll (GstRudpScheduler * s, GstClockTime now,
    GstRudpFlow ** flow, gpointer * packet, gsize * size)
{
  GList *start, *l;

  if (!s->flows)
    return FALSE;
  start = s->turn ? s->turn : s->flows;
  l = start;
  do {
    GstRudpFlow *f = l->data;

    l = l->next ? l->next : s->flows;
    if (flow_take (f, now, packet, size)) {
      /* the next call starts with the next flow */
      s->turn = l;
      *flow = f;
      return TRUE;
    }
  } while (l != start);
  return FALSE;
}

guint
gst_rudp_scheduler_tick (GstRudpScheduler * s, GstClockTime now,
    GstRudpSendFunc func, gpointer user_data)
{
  GstRudpFlow *f;
  gpointer packet;
  gsize size;
  guint n = 0;

  while (gst_rudp_scheduler_poll (s, now, &f, &packet, &size)) {
    n++;
    func (f, packet, size, user_data);
  }
  return n;
}

GstClockTime
gst_rudp_scheduler_next_wakeup (GstRudpScheduler * s, GstClockTime now)
{
  GstClockTime ready = GST_CLOCK_TIME_NONE;
  GList *l;

  for (l = s->flows; l; l = l->next) {
    GstRudpFlow *f = l->data;
    Item *it = g_queue_peek_head (&f->queue);
    GstRudpBucket b;
    GstClockTime t;

    if (!it)
      continue;
    /* a copy credited to now, so a flow idle since long is ready at once */
    b = f->bucket;
    gst_rudp_bucket_fill (&b, now);
    t = gst_rudp_bucket_ready_time (&b, it->size);
    if (GST_CLOCK_TIME_IS_VALID (t) && (!GST_CLOCK_TIME_IS_VALID (ready)
            || t < ready))
      ready = t;
  }
  if (!GST_CLOCK_TIME_IS_VALID (ready))
    return GST_CLOCK_TIME_NONE;
  if (ready <= now)
    return now;
  if (ready <= s->base)
    return s->base;
  /* up to the next grid point */
  return s->base + ((ready - s->base + s->interval - 1) / s->interval) *
      s->interval;
}

void
gst_rudp_flow_handle_packet (GstRudpFlow * f, gpointer packet, gsize size)
{
  Item *it = g_new (Item, 1);

  it->packet = packet;
  it->size = size;
  g_queue_push_tail (&f->queue, it);
  f->queued_bytes += size;
}

void
gst_rudp_flow_set_rate (GstRudpFlow * f, guint64 rate, GstClockTime now)
{
  gst_rudp_bucket_set_rate (&f->bucket, rate, now);
  if (f->req_depth == 0)
    gst_rudp_bucket_set_depth (&f->bucket, 0);
}

void
gst_rudp_flow_set_depth (GstRudpFlow * f, guint64 depth)
{
  f->req_depth = depth;
  gst_rudp_bucket_set_depth (&f->bucket, depth);
}

void
gst_rudp_flow_charge (GstRudpFlow * f, gsize size, GstClockTime now)
{
  gst_rudp_bucket_fill (&f->bucket, now);
  gst_rudp_bucket_charge (&f->bucket, size);
}

guint64
gst_rudp_flow_queued_bytes (GstRudpFlow * f)
{
  return f->queued_bytes;
}

guint
gst_rudp_flow_queued_packets (GstRudpFlow * f)
{
  return g_queue_get_length (&f->queue);
}

gpointer
gst_rudp_flow_get_user_data (GstRudpFlow * f)
{
  return f->user_data;
}

void
gst_rudp_flow_get_stats (GstRudpFlow * f, GstClockTime now,
    GstRudpFlowStats * st)
{
  gst_rudp_bucket_fill (&f->bucket, now);
  st->rate = f->bucket.rate;
  st->depth = f->bucket.depth;
  st->bucket_fill = gst_rudp_bucket_level (&f->bucket);
  st->bytes_sent = f->bytes_sent;
  st->packets_sent = f->packets_sent;
  st->queued_bytes = f->queued_bytes;
  st->queued_packets = g_queue_get_length (&f->queue);
}
