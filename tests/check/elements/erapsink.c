/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — erapsink tests: loopback pairs, the shared ACK thread, loss
 * reactions, backpressure, linger, robustness against stray ACKs. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gio/gio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/erap/erap.h>
#include <gst/twoflow/networkcongestion.h>


static void
set_args (GstElement * e, const gchar * args)
{
  gchar **kv = g_strsplit (args ? args : "", " ", -1);
  guint i;

  for (i = 0; kv[i]; i++) {
    gchar **p = g_strsplit (kv[i], "=", 2);
    if (p[0] && p[1])
      gst_util_set_object_arg (G_OBJECT (e), p[0], p[1]);
    g_strfreev (p);
  }
  g_strfreev (kv);
}

static guint
count_threads (void)
{
  GDir *d = g_dir_open ("/proc/self/task", 0, NULL);
  guint n = 0;

  fail_unless (d != NULL);
  while (g_dir_read_name (d))
    n++;
  g_dir_close (d);
  return n;
}

/* A free UDP port below the kernel's ephemeral range, so that sockets
 * bound to port 0 by tests running in parallel cannot take it between
 * the probe and the bind of the element. */
static guint
free_fixed_port (void)
{
  guint tries;

  for (tries = 0; tries < 100; tries++) {
    guint port = g_random_int_range (20000, 32000);
    GSocket *s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
        G_SOCKET_PROTOCOL_UDP, NULL);
    GSocketAddress *a = g_inet_socket_address_new_from_string ("0.0.0.0",
        port);
    gboolean ok = g_socket_bind (s, a, FALSE, NULL);

    g_object_unref (a);
    g_object_unref (s);
    if (ok)
      return port;
  }
  fail ("no free UDP port");
  return 0;
}

static GstHarness *
new_src_args (guint * port, const gchar * extra)
{
  GstHarness *h = gst_harness_new ("erapsrc");

  set_args (h->element, "port=0 linger=50000000");
  set_args (h->element, extra);
  gst_harness_use_systemclock (h);
  gst_harness_play (h);
  g_object_get (h->element, "port", port, NULL);
  fail_unless (*port != 0);
  return h;
}

static GstHarness *
new_src (guint * port)
{
  return new_src_args (port, NULL);
}

static GstHarness *
new_sink (guint port, guint bind_port, const gchar * extra)
{
  gchar *desc = g_strdup_printf ("host=127.0.0.1 port=%u "
      "bind-port=%u initial-rate=20000000 %s", port, bind_port,
      extra ? extra : "");
  GstElement *e = gst_element_factory_make ("erapsink", NULL);
  GstHarness *h;

  /* properties first: the harness starts a sink right away */
  set_args (e, desc);
  g_free (desc);
  h = gst_harness_new_with_element (e, "sink", NULL);
  gst_object_unref (e);
  gst_harness_use_systemclock (h);
  gst_harness_set_src_caps_str (h, "application/octet-stream");
  return h;
}

static GstBuffer *
pattern_buffer (gsize size, guint seed)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, size, NULL);
  GstMapInfo map;
  gsize i;

  gst_buffer_map (b, &map, GST_MAP_WRITE);
  for (i = 0; i < size; i++)
    map.data[i] = (guint8) (seed * 131 + i * 7 + (i >> 9));
  gst_buffer_unmap (b, &map);
  return b;
}

static void
check_pattern (GstBuffer * b, gsize size, guint seed)
{
  GstBuffer *e = pattern_buffer (size, seed);

  GstMapInfo m;

  fail_unless_equals_int (gst_buffer_get_size (b), size);
  gst_buffer_map (e, &m, GST_MAP_READ);
  if (size)
    fail_unless (gst_buffer_memcmp (b, 0, m.data, size) == 0);
  gst_buffer_unmap (e, &m);
  gst_buffer_unref (e);
}

static guint64
stats_u64 (GstElement * e, const gchar * field)
{
  GstStructure *s;
  guint64 v = 0;

  g_object_get (e, "stats", &s, NULL);
  fail_unless (gst_structure_get_uint64 (s, field, &v), "no %s", field);
  gst_structure_free (s);
  return v;
}

static void
wait_for_eos (GstHarness * h)
{
  GstEvent *ev;

  while ((ev = gst_harness_pull_event (h))) {
    GstEventType t = GST_EVENT_TYPE (ev);
    gst_event_unref (ev);
    if (t == GST_EVENT_EOS)
      return;
  }
  fail ("no EOS");
}

/* ------------------------------------------------------------------ */

GST_START_TEST (test_properties)
{
  GstElement *e = gst_element_factory_make ("erapsink", NULL);
  GstStructure *s;
  gchar *host;
  guint port, mtu;
  guint64 linger;
  const gchar *fields[] = { "rate", "ipg", "srtt", "rto", "packets-sent",
    "packets-retransmitted", "packets-lost", "loss-reactions", "timeout-losses",
    "spurious-losses", "bytes-sent",
    "bytes-acked", "queued-bytes", "acks-received", "acks-invalid",
    "send-errors", "total-exit-bandwidth", "available-bandwidth",
    "queued-bits-total", "acks-malformed", "acks-unknown", NULL
  };
  const gchar *libra_fields[] = { "libra-window", "libra-alpha",
    "libra-beta", "capacity", "capacity-estimate", NULL
  };
  guint i;

  fail_unless (e != NULL);
  g_object_get (e, "host", &host, "port", &port, "mtu", &mtu, "linger",
      &linger, NULL);
  fail_unless_equals_string (host, "localhost");
  fail_unless_equals_int (port, 5004);
  fail_unless_equals_int (mtu, 1400);
  fail_unless_equals_uint64 (linger, 10 * GST_SECOND);
  g_free (host);
  gst_util_set_object_arg (G_OBJECT (e), "congestion-control", "rap");
  g_object_set (e, "max-queue-bytes", (guint64) 1000, "min-rate",
      (guint64) 64000, NULL);
  g_object_get (e, "stats", &s, NULL);
  fail_unless (gst_structure_has_name (s, "application/x-erapsink-stats"));
  for (i = 0; fields[i]; i++)
    fail_unless (gst_structure_has_field_typed (s, fields[i], G_TYPE_UINT64),
        "%s", fields[i]);
  fail_unless (gst_structure_has_field_typed (s, "sessions", G_TYPE_UINT));
  fail_unless_equals_string (gst_structure_get_string (s,
          "congestion-control"), "rap");
  for (i = 0; libra_fields[i]; i++)
    fail_unless (gst_structure_has_field_typed (s, libra_fields[i],
            G_TYPE_DOUBLE), "%s", libra_fields[i]);
  fail_unless (gst_structure_has_field_typed (s, "pair-samples",
          G_TYPE_UINT));
  gst_structure_free (s);
  gst_object_unref (e);
}

GST_END_TEST;

GST_START_TEST (test_loopback_messages)
{
  guint port, i;
  GstHarness *src = new_src (&port);
  GstHarness *sink = new_sink (port, 0, "mtu=600");
  const gsize sizes[] = { 1, 0, 591, 592, 593, 5000, 65536, 100, 200000, 3 };
  guint64 total = 0;

  for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
    fail_unless_equals_int (gst_harness_push (sink, pattern_buffer (sizes[i],
                i)), GST_FLOW_OK);
    total += sizes[i];
  }
  /* EOS returns once the receiver acknowledged everything */
  fail_unless (gst_harness_push_event (sink, gst_event_new_eos ()));
  fail_unless_equals_uint64 (stats_u64 (sink->element, "bytes-acked"), total);
  fail_unless_equals_uint64 (stats_u64 (sink->element, "queued-bytes"), 0);
  fail_unless (stats_u64 (sink->element, "acks-received") > 0);

  for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
    GstBuffer *b = gst_harness_pull (src);
    fail_unless (b != NULL);
    check_pattern (b, sizes[i], i);
    gst_buffer_unref (b);
  }
  wait_for_eos (src);
  fail_unless_equals_uint64 (stats_u64 (src->element, "bytes"), total);
  fail_unless_equals_uint64 (stats_u64 (src->element, "messages"),
      G_N_ELEMENTS (sizes));
  gst_harness_teardown (sink);
  gst_harness_teardown (src);
}

GST_END_TEST;

/* Several sinks on one bind port: one socket, one ACK thread. */
GST_START_TEST (test_one_ack_thread_per_port)
{
  GstHarness *srcs[5], *sinks[5];
  guint ports[5], i, t1, t2, t3;
  GstBuffer *b;
  guint bind_port;

  bind_port = free_fixed_port ();

  for (i = 0; i < 5; i++)
    srcs[i] = new_src (&ports[i]);

  sinks[0] = new_sink (ports[0], bind_port, "scheduler-interval=100000000");
  gst_harness_push (sinks[0], pattern_buffer (3000, 0));
  b = gst_harness_pull (srcs[0]);
  check_pattern (b, 3000, 0);
  gst_buffer_unref (b);
  t1 = count_threads ();

  for (i = 1; i < 4; i++) {
    sinks[i] = new_sink (ports[i], bind_port,
        "scheduler-interval=100000000");
    gst_harness_push (sinks[i], pattern_buffer (3000, i));
    b = gst_harness_pull (srcs[i]);
    check_pattern (b, 3000, i);
    gst_buffer_unref (b);
  }
  t2 = count_threads ();
  fail_unless_equals_int (t2, t1);
  {
    GstStructure *s;
    guint n, active = 0, tries;
    guint64 bw = 0;

    /* all four delivered everything; after a whole scheduler interval
     * without data each is idle: the bandwidth used is that of the active
     * sessions, none */
    /* (polled for up to 10 s: a loaded machine may run the report
     * timers late, never early) */
    for (tries = 0; tries < 200; tries++) {
      g_object_get (sinks[0]->element, "stats", &s, NULL);
      gst_structure_get_uint (s, "sessions", &n);
      gst_structure_get_uint (s, "active-sessions", &active);
      gst_structure_get_uint64 (s, "total-exit-bandwidth", &bw);
      gst_structure_free (s);
      fail_unless_equals_int (n, 4);
      if (active == 0)
        break;
      g_usleep (50000);
    }
    fail_unless_equals_int (active, 0);
    fail_unless_equals_uint64 (bw, 0);
  }

  /* a different bind port: its own socket and thread */
  sinks[4] = new_sink (ports[4], 0, "bind-address=127.0.0.1");
  gst_harness_push (sinks[4], pattern_buffer (3000, 4));
  b = gst_harness_pull (srcs[4]);
  check_pattern (b, 3000, 4);
  gst_buffer_unref (b);
  t3 = count_threads ();
  fail_unless_equals_int (t3, t1 + 1);

  for (i = 0; i < 5; i++) {
    gst_harness_teardown (sinks[i]);
    gst_harness_teardown (srcs[i]);
  }
}

GST_END_TEST;

/* A receiver made of the core library that loses chosen data packets. */
typedef struct {
  GSocket *sock;
  GstErapReceiver *r;
  GHashTable *drop;             /* seqnos to drop once */
  GThread *thread;
  gint stop;
  guint port;
} LossyRx;

static gpointer
lossy_rx_run (gpointer data)
{
  LossyRx *rx = data;
  guint8 buf[70000];

  while (!g_atomic_int_get (&rx->stop)) {
    GSocketAddress *from = NULL;
    gssize n;
    GstErapDataHeader h;
    guint8 ack[GST_ERAP_ACK_MAX_SIZE];
    gsize ack_len = 0;
    GBytes *pkt, *m;

    if (!g_socket_condition_timed_wait (rx->sock, G_IO_IN, 20000, NULL, NULL))
      continue;
    n = g_socket_receive_from (rx->sock, &from, (gchar *) buf, sizeof (buf),
        NULL, NULL);
    if (n < 0)
      continue;
    if (gst_erap_data_header_parse (buf, n, &h) &&
        g_hash_table_remove (rx->drop, GUINT_TO_POINTER (h.seqno))) {
      g_object_unref (from);
      continue;
    }
    pkt = g_bytes_new (buf, n);
    gst_erap_receiver_handle_data (rx->r, pkt, ack, &ack_len);
    g_bytes_unref (pkt);
    while ((m = gst_erap_receiver_poll (rx->r, NULL)))
      g_bytes_unref (m);
    if (ack_len)
      g_socket_send_to (rx->sock, from, (gchar *) ack, ack_len, NULL, NULL);
    g_object_unref (from);
  }
  return NULL;
}

static LossyRx *
lossy_rx_new (void)
{
  LossyRx *rx = g_new0 (LossyRx, 1);
  GstErapReceiverConfig rc;
  GSocketAddress *a;

  rx->sock = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  a = g_inet_socket_address_new_from_string ("127.0.0.1", 0);
  fail_unless (g_socket_bind (rx->sock, a, FALSE, NULL));
  g_object_unref (a);
  a = g_socket_get_local_address (rx->sock, NULL);
  rx->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (a));
  g_object_unref (a);
  gst_erap_receiver_config_init (&rc);
  rc.port = rx->port;
  rx->r = gst_erap_receiver_new (&rc);
  rx->drop = g_hash_table_new (NULL, NULL);
  return rx;
}

static void
lossy_rx_start (LossyRx * rx)
{
  rx->thread = g_thread_new ("lossy-rx", lossy_rx_run, rx);
}

static void
lossy_rx_free (LossyRx * rx)
{
  g_atomic_int_set (&rx->stop, 1);
  if (rx->thread)
    g_thread_join (rx->thread);
  gst_erap_receiver_free (rx->r);
  g_hash_table_unref (rx->drop);
  g_object_unref (rx->sock);
  g_free (rx);
}

GST_START_TEST (test_loss_reaction_event)
{
  LossyRx *rx = lossy_rx_new ();
  GstHarness *sink;
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GstEvent *ev;
  GstNetworkCongestionType type;
  guint64 bitrate, rate_before;
  GstClockTime srtt;
  const gchar *source;
  gboolean found = FALSE;
  guint i;

  g_hash_table_add (rx->drop, GUINT_TO_POINTER (10));
  lossy_rx_start (rx);
  /* capped at its initial rate, so the reaction shows as a lower rate */
  sink = new_sink (rx->port, 0, "scheduler-interval=0 max-rate=20000000");
  gst_element_set_bus (sink->element, bus);
  rate_before = 20000000;
  for (i = 0; i < 30; i++)
    gst_harness_push (sink, pattern_buffer (1000, i));
  fail_unless (gst_harness_push_event (sink, gst_event_new_eos ()));

  /* the lost packet was resent under a new seqno, all arrived */
  fail_unless_equals_uint64 (stats_u64 (sink->element, "bytes-acked"), 30000);
  fail_unless (stats_u64 (sink->element, "packets-retransmitted") >= 1);
  fail_unless (stats_u64 (sink->element, "loss-reactions") >= 1);

  /* upstream event */
  while ((ev = gst_harness_try_pull_upstream_event (sink))) {
    if (gst_network_congestion_event_parse (ev, &type, &bitrate, &srtt,
            &source)) {
      fail_unless_equals_int (type, GST_NETWORK_CONGESTION_LOSS);
      fail_unless (bitrate > 0 && bitrate < rate_before);
      fail_unless (g_str_has_prefix (source, "erapsink"));
      found = TRUE;
    }
    gst_event_unref (ev);
  }
  fail_unless (found);
  /* and the same as an element message */
  found = FALSE;
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    if (gst_network_congestion_message_parse (msg, &type, &bitrate, &srtt,
            NULL))
      found = (type == GST_NETWORK_CONGESTION_LOSS);
    gst_message_unref (msg);
  }
  fail_unless (found);
  gst_element_set_bus (sink->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (sink);
  lossy_rx_free (rx);
}

GST_END_TEST;

/* Runs @sink on its GstTestClock until everything pushed is acknowledged
 * or @until: before virtual time moves on, every packet sent has come
 * back acknowledged over the real loopback (virtual RTT 0), then the
 * clock jumps to the session's next timer and fires it. Returns the
 * virtual time reached. */
static GstClockTime
drive_virtual (GstHarness * sink, GstTestClock * clock, guint64 total,
    GstClockTime until)
{
  for (;;) {
    GstClockID id;
    GstClockTime t;
    gint i;

    /* no packet in flight: ACKs cannot move the session's timer */
    for (i = 0; i < 5000 && stats_u64 (sink->element, "bytes-acked") <
        stats_u64 (sink->element, "bytes-sent"); i++)
      g_usleep (1000);
    fail_unless (stats_u64 (sink->element, "bytes-acked") ==
        stats_u64 (sink->element, "bytes-sent"), "no ACK in 5 s");
    if (stats_u64 (sink->element, "bytes-acked") >= total)
      return gst_clock_get_time (GST_CLOCK (clock));
    fail_unless (gst_test_clock_peek_next_pending_id (clock, &id),
        "data queued and no timer");
    t = gst_clock_id_get_time (id);
    gst_clock_id_unref (id);
    if (t > until)
      return gst_clock_get_time (GST_CLOCK (clock));
    if (t > gst_clock_get_time (GST_CLOCK (clock)))
      gst_test_clock_set_time (clock, t);
    id = gst_test_clock_process_next_clock_id (clock);
    if (id)
      gst_clock_id_unref (id);
  }
}

/* The erap-scheduler reports: the payload bandwidth actually used while
 * the session sends, none while it is idle (its timer is off). On the
 * sink's GstTestClock, so what is measured is the pacer's own schedule,
 * not how punctually a loaded machine ran its timers. */
GST_START_TEST (test_scheduler_message)
{
  guint n_msgs = 0, n_full = 0, i;
  LossyRx *rx = lossy_rx_new ();
  GstHarness *sink;
  GstTestClock *clock;
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  const GstStructure *s;
  guint64 used, avail, total, queued;
  guint active;
  GstClockTime end;
  GstClockID id;

  lossy_rx_start (rx);
  {
    GstElement *e = gst_element_factory_make ("erapsink", NULL);
    /* 2 Mbit/s of 200-byte datagrams: 1.92 Mbit/s of payload */
    set_args (e, "host=127.0.0.1 scheduler-interval=250000000 "
        "initial-rate=2000000 max-rate=2000000 mtu=200");
    g_object_set (e, "port", rx->port, NULL);
    sink = gst_harness_new_with_element (e, "sink", NULL);
    gst_object_unref (e);
  }
  gst_harness_set_src_caps_str (sink, "application/octet-stream");
  clock = gst_harness_get_testclock (sink);
  gst_harness_set_time (sink, GST_SECOND);
  gst_element_set_bus (sink->element, bus);
  /* 50 messages of 52 full packets (192 bytes of payload each): 2600
   * packets, 2.08 virtual seconds at the rate */
  for (i = 0; i < 50; i++)
    gst_harness_push (sink, pattern_buffer (52 * 192, i));
  end = drive_virtual (sink, clock, 50 * 52 * 192, 10 * GST_SECOND);
  fail_unless_equals_uint64 (stats_u64 (sink->element, "bytes-acked"),
      50 * 52 * 192);
  fail_unless_equals_uint64 (stats_u64 (sink->element, "packets-sent"), 2600);
  /* the pacing itself: one datagram per 800 µs */
  fail_unless (end >= GST_SECOND + 2000 * GST_MSECOND &&
      end <= GST_SECOND + 2200 * GST_MSECOND, "done at %" GST_TIME_FORMAT,
      GST_TIME_ARGS (end));

  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    s = gst_message_get_structure (msg);
    if (!gst_structure_has_name (s, "erap-scheduler")) {
      gst_message_unref (msg);
      continue;
    }
    fail_unless (gst_structure_get_uint64 (s, "used-bandwidth", &used));
    fail_unless (gst_structure_get_uint64 (s, "available-bandwidth", &avail));
    fail_unless (gst_structure_get_uint64 (s, "total-exit-bandwidth",
            &total));
    fail_unless (gst_structure_get_uint64 (s, "queued-bits", &queued));
    fail_unless (gst_structure_get_uint (s, "active-sessions", &active));
    fail_unless_equals_int (active, 1);
    fail_unless_equals_uint64 (total, used);
    fail_unless_equals_uint64 (avail, 2000000);
    /* payload only: 192 of every 200 bytes, headers not counted, so
     * 1.92 Mbit/s and never the 2 Mbit/s of datagrams; a window sends
     * 312.5 packets, a packet or a quantum's burst either way */
    GST_INFO ("used %" G_GUINT64_FORMAT " queued %" G_GUINT64_FORMAT, used,
        queued);
    if (queued > 8 * 100000) {
      fail_unless (used > 1880000 && used < 1960000, "%" G_GUINT64_FORMAT,
          used);
      n_full++;
    }
    n_msgs++;
    gst_message_unref (msg);
  }
  /* a report every 250 ms of the ~2.1 s */
  fail_unless (n_msgs >= 7, "%u reports", n_msgs);
  fail_unless (n_full >= 5, "%u reports while backlogged", n_full);

  /* everything is acknowledged: the report timer runs to the end of its
   * window, then the session is idle: no timer, no more reports */
  for (i = 0; i < 10 && gst_test_clock_peek_next_pending_id (clock, &id);
      i++) {
    GstClockTime t = gst_clock_id_get_time (id);

    gst_clock_id_unref (id);
    if (t > gst_clock_get_time (GST_CLOCK (clock)))
      gst_test_clock_set_time (clock, t);
    id = gst_test_clock_process_next_clock_id (clock);
    if (id)
      gst_clock_id_unref (id);
  }
  fail_if (gst_test_clock_peek_next_pending_id (clock, NULL),
      "a timer while idle");
  gst_test_clock_advance_time (clock, 2 * GST_SECOND);
  /* at most the report of the last (partial) window */
  for (i = 0; (msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)); i++)
    gst_message_unref (msg);
  fail_unless (i <= 1, "%u reports once idle", i);
  {
    GstStructure *st;
    guint64 bw;

    g_object_get (sink->element, "stats", &st, NULL);
    fail_unless (gst_structure_get_uint64 (st, "used-bandwidth", &bw));
    fail_unless_equals_uint64 (bw, 0);
    fail_unless (gst_structure_get_uint (st, "active-sessions", &active));
    fail_unless_equals_int (active, 0);
    gst_structure_free (st);
  }
  gst_element_set_bus (sink->element, NULL);
  gst_object_unref (bus);
  gst_object_unref (clock);
  gst_harness_teardown (sink);
  lossy_rx_free (rx);
}

GST_END_TEST;

/* No receiver: render blocks at max-queue-bytes, EOS gives up after
 * linger with an error (never EOS), and flushing unblocks. */
typedef struct {
  GstHarness *h;
  GstFlowReturn ret;
  gint done;
} PushCtx;

static gpointer
push_thread (gpointer data)
{
  PushCtx *c = data;

  c->ret = gst_harness_push (c->h, pattern_buffer (4000, 9));
  g_atomic_int_set (&c->done, 1);
  return NULL;
}

GST_START_TEST (test_backpressure_and_flush)
{
  LossyRx *rx = lossy_rx_new ();        /* never started: no ACKs */
  GstHarness *sink = new_sink (rx->port, 0, "max-queue-bytes=10000");
  PushCtx c = { sink, GST_FLOW_OK, 0 };
  GThread *t;

  fail_unless_equals_int (gst_harness_push (sink, pattern_buffer (6000, 1)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_push (sink, pattern_buffer (6000, 2)),
      GST_FLOW_OK);
  fail_unless_equals_uint64 (stats_u64 (sink->element, "queued-bytes"),
      12000);
  /* the third waits for ACKs that never come */
  t = g_thread_new ("push", push_thread, &c);
  g_usleep (300000);
  fail_if (g_atomic_int_get (&c.done));
  fail_unless_equals_uint64 (stats_u64 (sink->element, "queued-bytes"),
      12000);
  /* a flush unblocks it */
  gst_harness_push_event (sink, gst_event_new_flush_start ());
  g_thread_join (t);
  fail_unless_equals_int (c.ret, GST_FLOW_FLUSHING);
  gst_harness_push_event (sink, gst_event_new_flush_stop (TRUE));
  gst_harness_teardown (sink);
  lossy_rx_free (rx);
}

GST_END_TEST;

GST_START_TEST (test_linger_error)
{
  LossyRx *rx = lossy_rx_new ();        /* never started: no ACKs */
  GstHarness *sink = new_sink (rx->port, 0, "linger=300000000");
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;

  gst_element_set_bus (sink->element, bus);
  gst_harness_push (sink, pattern_buffer (5000, 1));
  /* EOS is refused: the data did not arrive */
  fail_if (gst_harness_push_event (sink, gst_event_new_eos ()));
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (strstr (err->message, "5000 bytes") != NULL, "%s",
      err->message);
  g_error_free (err);
  gst_message_unref (msg);
  /* and no EOS is posted for it */
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_EOS);
  fail_unless (msg == NULL);
  gst_element_set_bus (sink->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (sink);
  lossy_rx_free (rx);
}

GST_END_TEST;

/* Stray datagrams at the shared socket are dropped and counted. */
GST_START_TEST (test_stray_acks)
{
  guint port, local_port;
  GstHarness *src = new_src (&port);
  GstHarness *sink = new_sink (port, 0, "bind-address=127.0.0.1");
  GSocket *s;
  GSocketAddress *to, *a;
  GstErapAck ack = { 0 };
  guint8 buf[GST_ERAP_ACK_MAX_SIZE];
  gsize n;
  GstBuffer *b;

  gst_harness_push (sink, pattern_buffer (3000, 1));
  b = gst_harness_pull (src);
  gst_buffer_unref (b);
  {
    GstStructure *st;
    g_object_get (sink->element, "stats", &st, NULL);
    fail_unless (gst_structure_get_uint (st, "local-port", &local_port));
    gst_structure_free (st);
  }
  to = g_inet_socket_address_new_from_string ("127.0.0.1", local_port);

  /* from another address (127.0.0.2) with the session's port */
  s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  a = g_inet_socket_address_new_from_string ("127.0.0.2", 0);
  fail_unless (g_socket_bind (s, a, FALSE, NULL));
  g_object_unref (a);
  ack.port = port;
  ack.seq = ack.last_recv = 1;
  n = gst_erap_ack_write (&ack, buf);
  g_socket_send_to (s, to, (gchar *) buf, n, NULL, NULL);
  /* garbage */
  g_socket_send_to (s, to, "hello", 5, NULL, NULL);
  g_object_unref (s);
  /* from the right address but another port (plaintext: not the
   * destination), for a seqno sent */
  s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  ack.seq = ack.last_recv = 1;
  n = gst_erap_ack_write (&ack, buf);
  g_socket_send_to (s, to, (gchar *) buf, n, NULL, NULL);
  g_object_unref (s);
  /* from the destination itself (its port, shared with SO_REUSEADDR), for
   * a seqno never sent */
  s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  a = g_inet_socket_address_new_from_string ("127.0.0.1", port);
  fail_unless (g_socket_bind (s, a, TRUE, NULL));
  g_object_unref (a);
  ack.seq = ack.last_recv = 100000;
  n = gst_erap_ack_write (&ack, buf);
  g_socket_send_to (s, to, (gchar *) buf, n, NULL, NULL);
  g_object_unref (s);
  g_object_unref (to);

  /* the ACK thread handles them asynchronously */
  {
    gint i;
    for (i = 0; i < 1000; i++) {
      if (stats_u64 (sink->element, "acks-unknown") >= 1 &&
          stats_u64 (sink->element, "acks-malformed") >= 1 &&
          stats_u64 (sink->element, "acks-invalid") >= 1 &&
          stats_u64 (sink->element, "acks-foreign") >= 1)
        break;
      g_usleep (10000);
    }
  }
  fail_unless_equals_uint64 (stats_u64 (sink->element, "acks-unknown"), 1);
  fail_unless_equals_uint64 (stats_u64 (sink->element, "acks-malformed"), 1);
  fail_unless_equals_uint64 (stats_u64 (sink->element, "acks-invalid"), 1);
  fail_unless_equals_uint64 (stats_u64 (sink->element, "acks-foreign"), 1);
  /* and the session still works */
  gst_harness_push (sink, pattern_buffer (3000, 2));
  fail_unless (gst_harness_push_event (sink, gst_event_new_eos ()));
  b = gst_harness_pull (src);
  check_pattern (b, 3000, 2);
  gst_buffer_unref (b);
  gst_harness_teardown (sink);
  gst_harness_teardown (src);
}

GST_END_TEST;

/* Timers are GstClockIDs: on a GstTestClock nothing is paced out until
 * the test moves the clock. */
GST_START_TEST (test_pacing_on_test_clock)
{
  LossyRx *rx = lossy_rx_new ();
  GstHarness *sink;
  GstTestClock *clock;
  guint64 sent;

  lossy_rx_start (rx);
  /* 1400-byte packets at 1.12 Mbit/s: one per 10 ms */
  {
    GstElement *e = gst_element_factory_make ("erapsink", NULL);
    /* pacing-quantum=0: one packet per timer, as the test counts */
    set_args (e, "host=127.0.0.1 initial-rate=1120000 scheduler-interval=0 "
        "pacing-quantum=0");
    g_object_set (e, "port", rx->port, NULL);
    sink = gst_harness_new_with_element (e, "sink", NULL);
    gst_object_unref (e);
  }
  gst_harness_set_src_caps_str (sink, "application/octet-stream");
  clock = gst_harness_get_testclock (sink);
  gst_harness_set_time (sink, GST_SECOND);
  gst_harness_push (sink, pattern_buffer (1392 * 10, 1));
  sent = stats_u64 (sink->element, "packets-sent");
  fail_unless_equals_uint64 (sent, 1);
  /* wait for the pacing timer to be armed, then fire it */
  gst_test_clock_wait_for_next_pending_id (clock, NULL);
  gst_test_clock_set_time (clock, GST_SECOND + 10 * GST_MSECOND);
  gst_test_clock_crank (clock);
  {
    gint i;
    for (i = 0; i < 2000 && stats_u64 (sink->element, "packets-sent") < 2;
        i++)
      g_usleep (5000);
  }
  fail_unless_equals_uint64 (stats_u64 (sink->element, "packets-sent"), 2);
  gst_object_unref (clock);
  gst_harness_teardown (sink);
  lossy_rx_free (rx);
}

GST_END_TEST;

/* congestion-control=libra: its properties, a bit-exact transfer, and its
 * state in the stats (W, alpha, packet pairs measured on loopback). */
GST_START_TEST (test_libra_loopback)
{
  guint port, i;
  GstHarness *src = new_src (&port);
  GstHarness *sink;
  GstElement *e = gst_element_factory_make ("erapsink", NULL);
  GstStructure *s;
  gdouble a, b, x, y, cap, w, alpha, est;
  guint64 seed, capacity, total = 0;
  guint pairs;
  gboolean comp;
  const gchar *cc;

  g_object_get (e, "libra-a", &a, "libra-b", &b, "libra-x", &x, "libra-y", &y,
      "capacity", &capacity, "libra-seed", &seed, "libra-compensation", &comp,
      NULL);
  fail_unless_equals_float (a, 1.0);
  fail_unless_equals_float (b, 1.0);
  fail_unless_equals_float (x, 2.0);
  fail_unless_equals_float (y, 2.0);
  fail_unless_equals_uint64 (capacity, 0);
  fail_unless_equals_uint64 (seed, 0);
  fail_unless (comp);
  gst_object_unref (e);

  sink = new_sink (port, 0, "congestion-control=libra libra-x=3 "
      "libra-seed=5 initial-rate=50000000");
  g_object_get (sink->element, "libra-x", &x, NULL);
  fail_unless_equals_float (x, 3.0);
  for (i = 0; i < 40; i++) {
    fail_unless_equals_int (gst_harness_push (sink, pattern_buffer (50000,
                i)), GST_FLOW_OK);
    total += 50000;
  }
  fail_unless (gst_harness_push_event (sink, gst_event_new_eos ()));
  fail_unless_equals_uint64 (stats_u64 (sink->element, "bytes-acked"), total);
  g_object_get (sink->element, "stats", &s, NULL);
  cc = gst_structure_get_string (s, "congestion-control");
  fail_unless_equals_string (cc, "libra");
  fail_unless (gst_structure_get (s, "libra-window", G_TYPE_DOUBLE, &w,
          "libra-alpha", G_TYPE_DOUBLE, &alpha, "capacity-estimate",
          G_TYPE_DOUBLE, &est, "capacity", G_TYPE_DOUBLE, &cap,
          "pair-samples", G_TYPE_UINT, &pairs, NULL));
  GST_INFO ("W %f alpha %f C %f estimate %f from %u pairs", w, alpha, cap,
      est, pairs);
  fail_unless (w > 0);
  fail_unless (alpha > 0);
  /* loopback: ACKs of a pair usually come microseconds apart */
  if (pairs > 0)
    fail_unless (est > 0 && cap == est);
  gst_structure_free (s);
  for (i = 0; i < 40; i++) {
    GstBuffer *buf = gst_harness_pull (src);
    check_pattern (buf, 50000, i);
    gst_buffer_unref (buf);
  }
  wait_for_eos (src);
  gst_harness_teardown (sink);
  gst_harness_teardown (src);
}

GST_END_TEST;


/* A configured Libra capacity, in bit/s, is the C the law uses (and no
 * packet-pair estimate replaces it). */
GST_START_TEST (test_libra_configured_capacity)
{
  GstHarness *src, *sink;
  GstStructure *s;
  GstBuffer *b;
  guint port;
  gdouble cap, alpha;
  guint64 capacity;

  src = new_src (&port);
  sink = new_sink (port, 0, "congestion-control=libra capacity=8000000 "
      "libra-tcp-rtt=0 libra-tcp-base-rtt=0");
  g_object_get (sink->element, "capacity", &capacity, NULL);
  fail_unless_equals_uint64 (capacity, 8000000);
  {
    GObjectClass *k = G_OBJECT_GET_CLASS (sink->element);
    GParamSpecDouble *d;

    /* the issue-18 properties and their defaults (docs/erap.md) */
    d = G_PARAM_SPEC_DOUBLE (g_object_class_find_property (k,
            "libra-tcp-rtt"));
    fail_unless_equals_float (d->default_value, 0.1);
    d = G_PARAM_SPEC_DOUBLE (g_object_class_find_property (k,
            "libra-tcp-base-rtt"));
    fail_unless_equals_float (d->default_value, 0.03);
    d = G_PARAM_SPEC_DOUBLE (g_object_class_find_property (k,
            "libra-loss-memory"));
    fail_unless_equals_float (d->default_value, 10);
    d = G_PARAM_SPEC_DOUBLE (g_object_class_find_property (k,
            "libra-loss-divisor"));
    fail_unless_equals_float (d->default_value, 2);
  }
  fail_unless_equals_int (gst_harness_push (sink, pattern_buffer (20000, 1)),
      GST_FLOW_OK);
  b = gst_harness_pull (src);
  check_pattern (b, 20000, 1);
  gst_buffer_unref (b);
  g_object_get (sink->element, "stats", &s, NULL);
  fail_unless (gst_structure_get (s, "capacity", G_TYPE_DOUBLE, &cap,
          "libra-alpha", G_TYPE_DOUBLE, &alpha, NULL));
  gst_structure_free (s);
  fail_unless_equals_float (cap, 8e6);
  /* alpha = X * C * exp (-Y * beta) with C in Mbit/s: at most 2 * 8
   * (libra-tcp-rtt=0, libra-tcp-base-rtt=0: no floor) */
  fail_unless (alpha > 0 && alpha <= 16.0 + 1e-9, "alpha %f", alpha);
  gst_harness_teardown (sink);
  gst_harness_teardown (src);
}

GST_END_TEST;

/* One buffer rendered by more erapsinks than a GstMemory can count
 * mappings of (255): each sink keeps what it sends until it is
 * acknowledged, so it must not keep a mapping of memory others share
 * (the 10,000-session bench's GStreamer-CRITICALs). Nothing acknowledges
 * here, so every sink still holds its data at teardown. */
GST_START_TEST (test_shared_buffer_many_sinks)
{
  const guint n = 300;
  GstElement **sinks = g_new0 (GstElement *, n);
  GstPad **pads = g_new0 (GstPad *, n);
  GSocket **mute = g_new0 (GSocket *, n);
  GstBuffer *b = pattern_buffer (1000, 7);
  GstSegment seg;
  GstMapInfo map;
  guint bind_port = free_fixed_port (), i;

  gst_segment_init (&seg, GST_FORMAT_BYTES);
  for (i = 0; i < n; i++) {
    GSocketAddress *a =
        g_inet_socket_address_new_from_string ("127.0.0.1", 0);
    GstPad *sinkpad;
    guint port;

    /* a receiver that never acknowledges: one per session */
    mute[i] = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
        G_SOCKET_PROTOCOL_UDP, NULL);
    fail_unless (g_socket_bind (mute[i], a, FALSE, NULL));
    g_object_unref (a);
    a = g_socket_get_local_address (mute[i], NULL);
    port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (a));
    g_object_unref (a);

    sinks[i] = gst_element_factory_make ("erapsink", NULL);
    g_object_set (sinks[i], "host", "127.0.0.1", "port", port, "bind-port",
        bind_port, "async", FALSE, "linger", (guint64) 0, NULL);
    pads[i] = gst_pad_new ("src", GST_PAD_SRC);
    sinkpad = gst_element_get_static_pad (sinks[i], "sink");
    fail_unless_equals_int (gst_pad_link (pads[i], sinkpad), GST_PAD_LINK_OK);
    gst_object_unref (sinkpad);
    gst_pad_set_active (pads[i], TRUE);
    fail_unless (gst_element_set_state (sinks[i], GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE);
    gst_pad_push_event (pads[i], gst_event_new_stream_start ("shared"));
    gst_pad_push_event (pads[i], gst_event_new_segment (&seg));
    fail_unless_equals_int (gst_pad_push (pads[i], gst_buffer_ref (b)),
        GST_FLOW_OK);
  }
  /* every session holds its data (unacknowledged) */
  for (i = 0; i < n; i++)
    fail_unless (stats_u64 (sinks[i], "queued-bytes") >= 1000);

  for (i = 0; i < n; i++) {
    gst_element_set_state (sinks[i], GST_STATE_NULL);
    gst_object_unref (sinks[i]);
    gst_object_unref (pads[i]);
    g_object_unref (mute[i]);
  }
  /* nobody holds a mapping any more: writable once we own it alone */
  fail_unless (gst_buffer_is_writable (b));
  fail_unless (gst_buffer_map (b, &map, GST_MAP_WRITE));
  gst_buffer_unmap (b, &map);
  check_pattern (b, 1000, 7);
  gst_buffer_unref (b);
  g_free (sinks);
  g_free (pads);
  g_free (mute);
}

GST_END_TEST;

/* protocol=rap, the RAP baseline: delivers exactly, one ACK datagram per
 * data packet, a thread per session, RAP's IPG timer running while there
 * is nothing to send (ERAP's is off). */
GST_START_TEST (test_rap_baseline)
{
  GstHarness *srcs[3], *sinks[3], *esrc, *esink;
  guint ports[3], eport, i, t0, t1;
  GstBuffer *b;
  GstStructure *st;
  guint64 acks, dgrams, wake1, wake2, ticks1, ticks2;
  gchar *proto;

  t0 = count_threads ();
  for (i = 0; i < 3; i++) {
    srcs[i] = new_src_args (&ports[i], "protocol=rap");
    sinks[i] = new_sink (ports[i], 0, "protocol=rap");
    gst_harness_push (sinks[i], pattern_buffer (30000, i));
    b = gst_harness_pull (srcs[i]);
    check_pattern (b, 30000, i);
    gst_buffer_unref (b);
  }
  t1 = count_threads ();
  /* each RAP session has an ACK thread of its own (and erapsrc its
   * streaming thread) */
  fail_unless (t1 >= t0 + 3 * 2, "%u -> %u threads", t0, t1);

  g_object_get (srcs[0]->element, "stats", &st, NULL);
  fail_unless (gst_structure_get_uint64 (st, "acks-sent", &acks));
  fail_unless (gst_structure_get_uint64 (st, "ack-datagrams", &dgrams));
  /* 30000 bytes in 1376-byte payloads: 22 packets, 22 ACK datagrams */
  fail_unless_equals_uint64 (acks, 22);
  fail_unless_equals_uint64 (dgrams, acks);
  gst_structure_free (st);

  g_object_get (sinks[0]->element, "stats", &st, NULL);
  proto = g_strdup (gst_structure_get_string (st, "protocol"));
  fail_unless_equals_string (proto, "rap");
  g_free (proto);
  gst_structure_get_uint64 (st, "idle-wakeups", &wake1);
  gst_structure_get_uint64 (st, "ticks", &ticks1);
  gst_structure_free (st);
  /* nothing to send, yet RAP's timers keep running */
  g_usleep (300000);
  g_object_get (sinks[0]->element, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "idle-wakeups", &wake2);
  gst_structure_get_uint64 (st, "ticks", &ticks2);
  gst_structure_free (st);
  fail_unless (wake2 > wake1 + 10, "%" G_GUINT64_FORMAT " -> %"
      G_GUINT64_FORMAT, wake1, wake2);
  fail_unless (ticks2 > ticks1);

  /* ERAP for comparison: off while idle */
  esrc = new_src (&eport);
  esink = new_sink (eport, 0, NULL);
  gst_harness_push (esink, pattern_buffer (30000, 9));
  b = gst_harness_pull (esrc);
  check_pattern (b, 30000, 9);
  gst_buffer_unref (b);
  g_usleep (100000);
  g_object_get (esink->element, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "ticks", &ticks1);
  gst_structure_get_uint64 (st, "idle-wakeups", &wake1);
  gst_structure_free (st);
  g_usleep (300000);
  g_object_get (esink->element, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "ticks", &ticks2);
  gst_structure_get_uint64 (st, "idle-wakeups", &wake2);
  gst_structure_free (st);
  fail_unless_equals_uint64 (ticks2, ticks1);
  fail_unless_equals_uint64 (wake2, 0);
  g_object_get (esrc->element, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "acks-sent", &acks);
  gst_structure_get_uint64 (st, "ack-datagrams", &dgrams);
  gst_structure_free (st);
  /* 30000 bytes in 1392-byte payloads: 22 ACK records, bundled */
  fail_unless_equals_uint64 (acks, 22);
  fail_unless (dgrams <= acks);

  /* a mismatched pair does not talk: RAP packets are not ERAP packets */
  gst_harness_teardown (esink);
  esink = new_sink (eport, 0, "protocol=rap linger=300000000");
  gst_harness_push (esink, pattern_buffer (3000, 1));
  g_usleep (300000);
  g_object_get (esrc->element, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "acks-sent", &acks);
  gst_structure_free (st);
  fail_unless_equals_uint64 (acks, 22);

  gst_harness_teardown (esink);
  gst_harness_teardown (esrc);
  for (i = 0; i < 3; i++) {
    gst_harness_teardown (sinks[i]);
    gst_harness_teardown (srcs[i]);
  }
}

GST_END_TEST;

static Suite *
erapsink_suite (void)
{
  Suite *s = suite_create ("erapsink");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_loopback_messages);
  tcase_add_test (tc, test_one_ack_thread_per_port);
  tcase_add_test (tc, test_loss_reaction_event);
  tcase_add_test (tc, test_scheduler_message);
  tcase_add_test (tc, test_rap_baseline);
  tcase_add_test (tc, test_backpressure_and_flush);
  tcase_add_test (tc, test_linger_error);
  tcase_add_test (tc, test_stray_acks);
  tcase_add_test (tc, test_pacing_on_test_clock);
  tcase_add_test (tc, test_libra_loopback);
  tcase_add_test (tc, test_libra_configured_capacity);
  tcase_add_test (tc, test_shared_buffer_many_sinks);
  return s;
}

GST_CHECK_MAIN (erapsink);
