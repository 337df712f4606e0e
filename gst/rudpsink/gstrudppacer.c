/* twoflow — the process-wide pacer of all rudpsinks.
 *
 * One thread and one timer serve every rudpsink of the process: the timer
 * is a GstClockID on the system clock (so a GstTestClock installed as the
 * default system clock drives it), armed for the next time some flow's
 * leaky bucket lets a packet go (on the shared tick grid of the core
 * scheduler). At each tick every flow sends what its bucket allows. While
 * no packet is queued anywhere the thread sleeps on a condition variable.
 *
 * The same thread reads the RTCP feedback of the sinks in `receiver` rate
 * control from their own sockets (one non-blocking poll over all of them
 * per wakeup) and answers each request with a notice.
 *
 * Everything below runs under the pacer's lock, which is also the lock of
 * the sinks' queues; packets are sent with it held so a sink that stops
 * (and closes its socket) never races a send. Upstream events are sent
 * without it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <sys/socket.h>
#include <gst/twoflow/networkcongestion.h>
#include "gstrudppacer.h"

GST_DEBUG_CATEGORY_STATIC (rudp_pacer_debug);
#define GST_CAT_DEFAULT rudp_pacer_debug

/* how often the thread looks for feedback while nothing is to be sent */
#define FEEDBACK_POLL (20 * GST_MSECOND)

struct _GstRudpPacer {
  gint refcount;                /* under the global lock */
  GMutex lock;
  GCond wake;                   /* the thread: new work */
  GstRudpScheduler *sched;
  GList *sinks;                 /* GstRudpSink*, not reffed: they remove
                                 * themselves before closing their socket */
  GstClock *clock;
  GstClockID id;                /* the timer, while the thread waits on it */
  gboolean running;
  gboolean kicked;
  GThread *thread;
};

static GMutex global_lock;
static GstRudpPacer *global;
static gint n_threads;

static void
kick (GstRudpPacer * p)
{
  p->kicked = TRUE;
  if (p->id)
    gst_clock_id_unschedule (p->id);
  g_cond_signal (&p->wake);
}

static GstClockTime
now_of (GstRudpPacer * p)
{
  return gst_clock_get_time (p->clock);
}

static void
send_packet (GstRudpFlow * flow, gpointer packet, gsize size,
    gpointer user_data)
{
  GstRudpSink *sink = gst_rudp_flow_get_user_data (flow);
  GstBuffer *buf = packet;
  GstMapInfo map;
  GError *err = NULL;

  sink->sent = TRUE;
  if (!gst_buffer_map (buf, &map, GST_MAP_READ)) {
    sink->send_errors++;
    gst_buffer_unref (buf);
    return;
  }
  if (map.size >= 12 && (map.data[0] >> 6) == 2) {
    sink->next_seq = GST_READ_UINT16_BE (map.data + 2) + 1;
    sink->ssrc = GST_READ_UINT32_BE (map.data + 8);
  }
  if (g_socket_send_to (sink->socket, sink->dest, (const gchar *) map.data,
          map.size, NULL, &err) < 0) {
    /* a warning, never fatal: the flow goes on */
    if (sink->send_errors++ == 0)
      GST_ELEMENT_WARNING (sink, RESOURCE, WRITE, (NULL),
          ("send error: %s (counted in stats, not repeated)", err->message));
    GST_LOG_OBJECT (sink, "send error: %s", err->message);
    g_clear_error (&err);
  }
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
}

static void
apply_level (GstRudpSink * sink, guint level, GstClockTime now)
{
  level = MIN (level, sink->levels.n - 1);
  if (level == sink->level)
    return;
  GST_DEBUG_OBJECT (sink, "level %u -> %u (%" G_GUINT64_FORMAT " bytes/s)",
      sink->level, level, sink->levels.rate[level]);
  sink->level = level;
  sink->level_changes++;
  sink->notify_pending = TRUE;
  gst_rudp_flow_set_rate (sink->flow, sink->levels.rate[level], now);
}

static void
handle_request (GstRudpPacer * p, GstRudpSink * sink, const guint8 * data,
    gsize len, GSocketAddress * from, GstClockTime now)
{
  GstBuffer *buf = gst_buffer_new_memdup (data, len);
  GstRudpRequest req;
  GstRudpNotice n = { 0 };
  GstMapInfo map;
  guint level;

  if (!gst_rudp_request_parse (buf, &req)) {
    gst_buffer_unref (buf);
    return;
  }
  gst_buffer_unref (buf);
  sink->feedback_received++;
  /* the exact level when the peer shares our table, else by bitrate */
  if (req.has_level && req.n_levels == sink->levels.n)
    level = req.level;
  else if (req.has_bitrate)
    level = gst_rudp_levels_for_bitrate (&sink->levels, req.bitrate);
  else
    level = sink->level;
  if (req.has_level)
    sink->srtt = (GstClockTime) req.srtt_us * GST_USECOND;
  if (level != sink->level)
    sink->level_seq = sink->next_seq;
  apply_level (sink, level, now);

  n.ssrc = sink->ssrc;
  n.requester_ssrc = req.ssrc;
  n.has_bitrate = TRUE;
  n.bitrate = sink->levels.rate[sink->level] * 8;
  n.overhead = GST_RUDP_PACKET_OVERHEAD;
  n.has_level = req.has_level;
  n.level = sink->level;
  n.n_levels = sink->levels.n;
  n.since_seq = sink->level_seq;
  n.echo_timestamp = req.timestamp;
  n.delay = gst_rudp_ntp_short (now_of (p) - now);
  buf = gst_rudp_notice_write (&n);
  if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
    if (g_socket_send_to (sink->socket, from, (const gchar *) map.data,
            map.size, NULL, NULL) < 0)
      sink->send_errors++;
    gst_buffer_unmap (buf, &map);
  }
  gst_buffer_unref (buf);
}

/* One poll over the sockets of the sinks under receiver control. */
static gboolean
read_feedback (GstRudpPacer * p, GstClockTime now)
{
  guint n = 0, i, max = g_list_length (p->sinks);
  GPollFD *fds = g_newa (GPollFD, MAX (max, 1));
  GstRudpSink **owners = g_newa (GstRudpSink *, MAX (max, 1));
  GList *l;

  for (l = p->sinks; l; l = l->next) {
    GstRudpSink *sink = l->data;

    if (sink->rate_control != GST_RUDP_RATE_CONTROL_RECEIVER)
      continue;
    fds[n].fd = g_socket_get_fd (sink->socket);
    fds[n].events = G_IO_IN;
    fds[n].revents = 0;
    owners[n++] = sink;
  }
  if (n == 0)
    return FALSE;
  if (g_poll (fds, n, 0) <= 0)
    return TRUE;
  for (i = 0; i < n; i++) {
    GstRudpSink *sink = owners[i];
    guint8 data[1500];
    GSocketAddress *from = NULL;
    gssize len;

    if (!(fds[i].revents & G_IO_IN))
      continue;
    while ((len = g_socket_receive_from (sink->socket, &from, (gchar *) data,
                sizeof (data), NULL, NULL)) >= 0) {
      if (gst_rudp_is_rtcp (data, len))
        handle_request (p, sink, data, len, from, now);
      g_clear_object (&from);
    }
  }
  return TRUE;
}

/* Wakes the render/drain of the sinks that sent (not all: a broadcast to
 * every producer at each tick would wake 50 threads per millisecond). */
static void
wake_senders (GstRudpPacer * p)
{
  GList *l;

  for (l = p->sinks; l; l = l->next) {
    GstRudpSink *sink = l->data;

    if (sink->sent) {
      sink->sent = FALSE;
      g_cond_broadcast (&sink->space);
    }
  }
}

/* Sends the GstNetworkCongestion rate events, without the lock. */
static void
announce_levels (GstRudpPacer * p)
{
  GList *l, *todo = NULL;

  for (l = p->sinks; l; l = l->next) {
    GstRudpSink *sink = l->data;

    if (sink->notify_pending) {
      sink->notify_pending = FALSE;
      todo = g_list_prepend (todo, gst_object_ref (sink));
    }
  }
  if (!todo)
    return;
  g_mutex_unlock (&p->lock);
  for (l = todo; l; l = l->next) {
    GstRudpSink *sink = l->data;
    guint64 bitrate;
    GstClockTime srtt;

    g_mutex_lock (&p->lock);
    bitrate = sink->levels.rate[sink->level] * 8;
    srtt = sink->srtt;
    g_mutex_unlock (&p->lock);
    gst_network_congestion_notify (GST_ELEMENT (sink),
        GST_BASE_SINK_PAD (sink), GST_NETWORK_CONGESTION_RATE, bitrate,
        srtt ? srtt : GST_CLOCK_TIME_NONE);
    gst_object_unref (sink);
  }
  g_list_free (todo);
  g_mutex_lock (&p->lock);
}

static gpointer
pacer_thread (gpointer data)
{
  GstRudpPacer *p = data;

  g_mutex_lock (&p->lock);
  while (p->running) {
    GstClockTime now = now_of (p), next;
    gboolean feedback;
    GstClockID id;

    p->kicked = FALSE;
    feedback = read_feedback (p, now);
    if (gst_rudp_scheduler_tick (p->sched, now, send_packet, p) > 0)
      wake_senders (p);
    announce_levels (p);
    if (!p->running)
      break;
    if (p->kicked)
      continue;
    next = gst_rudp_scheduler_next_wakeup (p->sched, now);
    if (feedback && (!GST_CLOCK_TIME_IS_VALID (next)
            || next > now + FEEDBACK_POLL))
      next = now + FEEDBACK_POLL;
    if (!GST_CLOCK_TIME_IS_VALID (next)) {
      /* idle: sleep until a sink queues something */
      g_cond_wait (&p->wake, &p->lock);
      continue;
    }
    if (next <= now)
      continue;
    id = gst_clock_new_single_shot_id (p->clock, next);
    p->id = id;
    g_mutex_unlock (&p->lock);
    gst_clock_id_wait (id, NULL);
    g_mutex_lock (&p->lock);
    p->id = NULL;
    gst_clock_id_unref (id);
  }
  g_mutex_unlock (&p->lock);
  return NULL;
}

static void
update_interval (GstRudpPacer * p)
{
  GstClockTime iv = GST_CLOCK_TIME_NONE;
  GList *l;

  for (l = p->sinks; l; l = l->next) {
    GstRudpSink *sink = l->data;

    iv = MIN (iv, sink->timer_interval);
  }
  if (GST_CLOCK_TIME_IS_VALID (iv))
    gst_rudp_scheduler_set_interval (p->sched, iv);
}

static guint64
flow_rate (GstRudpSink * sink)
{
  if (sink->rate_control == GST_RUDP_RATE_CONTROL_RECEIVER)
    return sink->levels.rate[MIN (sink->level, sink->levels.n - 1)];
  return sink->rate;
}

GstRudpPacer *
gst_rudp_pacer_add (GstRudpSink * sink)
{
  GstRudpPacer *p;

  g_mutex_lock (&global_lock);
  if (!rudp_pacer_debug)
    GST_DEBUG_CATEGORY_INIT (rudp_pacer_debug, "rudppacer", 0,
        "rudpsink shared pacer");
  if (!global) {
    p = g_new0 (GstRudpPacer, 1);
    g_mutex_init (&p->lock);
    g_cond_init (&p->wake);
    p->clock = gst_system_clock_obtain ();
    p->sched = gst_rudp_scheduler_new (sink->timer_interval, now_of (p));
    p->running = TRUE;
    p->thread = g_thread_new ("rudp-pacer", pacer_thread, p);
    g_atomic_int_inc (&n_threads);
    global = p;
    GST_INFO ("pacer started");
  }
  p = global;
  p->refcount++;
  g_mutex_unlock (&global_lock);

  g_mutex_lock (&p->lock);
  sink->flushing = FALSE;
  sink->level_changes = 0;
  sink->send_errors = 0;
  sink->feedback_received = 0;
  sink->flow = gst_rudp_scheduler_add_flow (p->sched, flow_rate (sink),
      sink->bucket_depth, sink, now_of (p));
  p->sinks = g_list_append (p->sinks, sink);
  update_interval (p);
  kick (p);
  g_mutex_unlock (&p->lock);
  return p;
}

void
gst_rudp_pacer_remove (GstRudpPacer * p, GstRudpSink * sink)
{
  gboolean last;

  g_mutex_lock (&p->lock);
  gst_rudp_scheduler_remove_flow (p->sched, sink->flow,
      (GDestroyNotify) gst_buffer_unref);
  sink->flow = NULL;
  p->sinks = g_list_remove (p->sinks, sink);
  update_interval (p);
  g_cond_broadcast (&sink->space);
  g_mutex_unlock (&p->lock);

  g_mutex_lock (&global_lock);
  last = --p->refcount == 0;
  if (last)
    global = NULL;
  g_mutex_unlock (&global_lock);
  if (!last)
    return;

  g_mutex_lock (&p->lock);
  p->running = FALSE;
  kick (p);
  g_mutex_unlock (&p->lock);
  g_thread_join (p->thread);
  g_atomic_int_dec_and_test (&n_threads);
  gst_rudp_scheduler_free (p->sched);
  gst_object_unref (p->clock);
  g_mutex_clear (&p->lock);
  g_cond_clear (&p->wake);
  g_free (p);
  GST_INFO ("pacer stopped");
}

gboolean
gst_rudp_pacer_queue (GstRudpPacer * p, GstRudpSink * sink, GstBuffer * buf)
{
  gsize size = gst_buffer_get_size (buf);

  g_mutex_lock (&p->lock);
  /* backpressure: wait for room; an empty queue takes any buffer */
  while (!sink->flushing && gst_rudp_flow_queued_packets (sink->flow) > 0
      && gst_rudp_flow_queued_bytes (sink->flow) + size > sink->buffer_size)
    g_cond_wait (&sink->space, &p->lock);
  if (sink->flushing) {
    g_mutex_unlock (&p->lock);
    gst_buffer_unref (buf);
    return FALSE;
  }
  gst_rudp_flow_push (sink->flow, buf, size);
  /* a packet into an empty queue may be due at once */
  if (gst_rudp_flow_queued_packets (sink->flow) == 1)
    kick (p);
  g_mutex_unlock (&p->lock);
  return TRUE;
}

gboolean
gst_rudp_pacer_drain (GstRudpPacer * p, GstRudpSink * sink)
{
  gboolean ok;

  g_mutex_lock (&p->lock);
  while (!sink->flushing && gst_rudp_flow_queued_packets (sink->flow) > 0)
    g_cond_wait (&sink->space, &p->lock);
  ok = !sink->flushing;
  g_mutex_unlock (&p->lock);
  return ok;
}

void
gst_rudp_pacer_set_flushing (GstRudpPacer * p, GstRudpSink * sink,
    gboolean flushing)
{
  g_mutex_lock (&p->lock);
  sink->flushing = flushing;
  g_cond_broadcast (&sink->space);
  g_mutex_unlock (&p->lock);
}

void
gst_rudp_pacer_flush (GstRudpPacer * p, GstRudpSink * sink)
{
  g_mutex_lock (&p->lock);
  gst_rudp_flow_flush (sink->flow, (GDestroyNotify) gst_buffer_unref);
  g_cond_broadcast (&sink->space);
  g_mutex_unlock (&p->lock);
}

void
gst_rudp_pacer_reconfigure (GstRudpPacer * p, GstRudpSink * sink)
{
  GstClockTime now;

  g_mutex_lock (&p->lock);
  now = now_of (p);
  sink->level = MIN (sink->level, sink->levels.n - 1);
  gst_rudp_flow_set_rate (sink->flow, flow_rate (sink), now);
  gst_rudp_flow_set_depth (sink->flow, sink->bucket_depth);
  update_interval (p);
  g_cond_broadcast (&sink->space); /* buffer-size may have grown */
  kick (p);
  g_mutex_unlock (&p->lock);
}

void
gst_rudp_pacer_set_level (GstRudpPacer * p, GstRudpSink * sink, guint level)
{
  g_mutex_lock (&p->lock);
  if (MIN (level, sink->levels.n - 1) != sink->level)
    sink->level_seq = sink->next_seq;
  apply_level (sink, level, now_of (p));
  kick (p);
  g_mutex_unlock (&p->lock);
}

GstStructure *
gst_rudp_pacer_get_stats (GstRudpPacer * p, GstRudpSink * sink)
{
  GstRudpFlowStats fs;
  GstStructure *s;

  g_mutex_lock (&p->lock);
  gst_rudp_flow_get_stats (sink->flow, now_of (p), &fs);
  s = gst_structure_new ("application/x-rudpsink-stats",
      "rate", G_TYPE_UINT64, fs.rate,
      "level", G_TYPE_UINT, sink->level,
      "bytes-sent", G_TYPE_UINT64, fs.bytes_sent,
      "packets-sent", G_TYPE_UINT64, fs.packets_sent,
      "bucket-fill", G_TYPE_INT64, fs.bucket_fill,
      "bucket-depth", G_TYPE_UINT64, fs.depth,
      "queued-bytes", G_TYPE_UINT64, fs.queued_bytes,
      "queued-packets", G_TYPE_UINT, fs.queued_packets,
      "send-errors", G_TYPE_UINT64, sink->send_errors,
      "feedback-received", G_TYPE_UINT64, sink->feedback_received,
      "level-changes", G_TYPE_UINT64, sink->level_changes,
      "srtt", G_TYPE_UINT64, sink->srtt, NULL);
  g_mutex_unlock (&p->lock);
  return s;
}

guint
gst_rudp_pacer_n_threads (void)
{
  return g_atomic_int_get (&n_threads);
}
