/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ctcpsink element tests: loopback to a stock tcpserversrc
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * The congestion-event test needs real losses: as root, the test process
 * moves into a network namespace of its own (unshare) whose loopback gets
 * a small tbf queue (`tc`), so nothing outside the test is touched.
 * Without root it is skipped. (Timeouts need a loss the sender does not
 * see as a local send error, hence a real link: tests/net/test_ctcp_events.py.)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <unistd.h>
#include <string.h>
#include <math.h>
#include <gio/gio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/check/gsttestclock.h>
#include <gst/app/gstappsink.h>
#include <gst/twoflow/networkcongestion.h>
#include "ctcpharness.h"

static gboolean own_netns = FALSE;

/* ---- a stock receiver: tcpserversrc ! appsink, collecting bytes ---- */

typedef struct
{
  GstElement *pipeline;
  GMutex lock;
  GByteArray *data;
  gboolean eos;
  guint port;
} Receiver;

static GstFlowReturn
on_sample (GstAppSink * sink, gpointer user_data)
{
  Receiver *r = user_data;
  GstSample *s = gst_app_sink_pull_sample (sink);
  GstBuffer *b = gst_sample_get_buffer (s);
  GstMapInfo map;

  gst_buffer_map (b, &map, GST_MAP_READ);
  g_mutex_lock (&r->lock);
  g_byte_array_append (r->data, map.data, map.size);
  g_mutex_unlock (&r->lock);
  gst_buffer_unmap (b, &map);
  gst_sample_unref (s);
  return GST_FLOW_OK;
}

static void
on_eos (GstAppSink * sink, gpointer user_data)
{
  Receiver *r = user_data;

  g_mutex_lock (&r->lock);
  r->eos = TRUE;
  g_mutex_unlock (&r->lock);
}

static Receiver *
receiver_launch (const gchar * desc)
{
  Receiver *r = g_new0 (Receiver, 1);
  GstAppSinkCallbacks cb = { on_eos, NULL, on_sample, };
  GstElement *sink;

  g_mutex_init (&r->lock);
  r->data = g_byte_array_new ();
  r->pipeline = gst_parse_launch (desc, NULL);
  fail_unless (r->pipeline != NULL);
  sink = gst_bin_get_by_name (GST_BIN (r->pipeline), "sink");
  gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, r, NULL);
  gst_object_unref (sink);
  fail_unless (gst_element_set_state (r->pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  return r;
}

static Receiver *
receiver_new (void)
{
  Receiver *r = g_new0 (Receiver, 1);
  GstAppSinkCallbacks cb = { on_eos, NULL, on_sample, };
  GstElement *src, *sink;
  gint port = 0;

  g_mutex_init (&r->lock);
  r->data = g_byte_array_new ();
  r->pipeline = gst_parse_launch ("tcpserversrc name=src host=127.0.0.1 "
      "port=0 ! appsink name=sink sync=false", NULL);
  fail_unless (r->pipeline != NULL);
  sink = gst_bin_get_by_name (GST_BIN (r->pipeline), "sink");
  gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, r, NULL);
  gst_object_unref (sink);
  fail_unless (gst_element_set_state (r->pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  src = gst_bin_get_by_name (GST_BIN (r->pipeline), "src");
  /* bound in READY->PAUSED */
  g_object_get (src, "current-port", &port, NULL);
  gst_object_unref (src);
  fail_unless (port > 0);
  r->port = port;
  return r;
}

static gsize
receiver_size (Receiver * r)
{
  gsize n;

  g_mutex_lock (&r->lock);
  n = r->data->len;
  g_mutex_unlock (&r->lock);
  return n;
}

static gboolean
receiver_wait (Receiver * r, gsize size, gboolean eos, gint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + timeout_ms * 1000;
  gboolean ok;

  do {
    g_mutex_lock (&r->lock);
    ok = r->data->len >= size && (!eos || r->eos);
    g_mutex_unlock (&r->lock);
    if (ok)
      return TRUE;
    g_usleep (5000);
  } while (g_get_monotonic_time () < end);
  return FALSE;
}

static void
receiver_free (Receiver * r)
{
  gst_element_set_state (r->pipeline, GST_STATE_NULL);
  gst_object_unref (r->pipeline);
  g_byte_array_unref (r->data);
  g_mutex_clear (&r->lock);
  g_free (r);
}

/* ---- sender helpers ---- */

/* ---- tests ---- */

/* A listening sink parsed from @desc and a tcpclientsrc receiver that
 * connects to its bound port from 127.0.0.1. */
static GstHarness *
listening_sink_new (const gchar * desc, GstElement ** sink, Receiver ** r)
{
  GstHarness *h = gst_harness_new_parse (desc);
  guint port = 0;
  gchar *rdesc;

  gst_harness_use_systemclock (h);
  gst_harness_set_src_caps_str (h, "application/octet-stream");
  *sink = gst_harness_find_element (h, "ctcpsink");
  g_object_get (*sink, "bound-port", &port, NULL);
  fail_unless (port > 0);
  rdesc = g_strdup_printf ("tcpclientsrc host=127.0.0.1 port=%u ! "
      "appsink name=sink sync=false", port);
  *r = receiver_launch (rdesc);
  g_free (rdesc);
  return h;
}

/* listen=true (a receiver behind NAT connects out): the sink listens
 * from start on, a stock tcpclientsrc connects, every byte arrives in
 * order, paced per segment as when the sink connects. */
GST_START_TEST (test_listen_bitexact)
{
  GstHarness *h;
  GstElement *sink;
  Receiver *r;
  gsize size = 300000;
  guint8 *data = pattern (size, 11);
  GstStructure *s;

  h = listening_sink_new ("ctcpsink listen=true bind-port=0 "
      "host=127.0.0.1 segment-duration=250000000", &sink, &r);
  push_data (h, data, size, 100, 10 * GST_MSECOND);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless (receiver_wait (r, size, TRUE, 10000), "received %"
      G_GSIZE_FORMAT, receiver_size (r));
  fail_unless_equals_int (r->data->len, size);
  fail_unless (memcmp (r->data->data, data, size) == 0);
  s = get_stats (h);
  fail_unless_equals_uint64 (stat_u64 (s, "bytes-acked"), size);
  fail_unless_equals_uint64 (stat_u64 (s, "segments"), 4);
  fail_unless_equals_uint64 (stat_u64 (s, "target-rate"),
      (guint64) ceil (75000 / (0.25 * 0.95)));
  gst_structure_free (s);
  gst_object_unref (sink);
  gst_harness_teardown (h);
  receiver_free (r);
  g_free (data);
}

GST_END_TEST;

/* listen=true accepts only from host: a connection from another address
 * is closed unserved (EOS, no byte); stopping while still waiting for
 * the right peer does not hang. */
GST_START_TEST (test_listen_other_peer_refused)
{
  GstHarness *h;
  GstElement *sink;
  Receiver *r;
  gsize size = 20000;
  guint8 *data = pattern (size, 12);

  h = listening_sink_new ("ctcpsink listen=true host=192.0.2.7 mode=tcp",
      &sink, &r);
  push_data (h, data, size, 4, 10 * GST_MSECOND);
  fail_unless (receiver_wait (r, 0, TRUE, 5000), "not closed");
  fail_unless_equals_int (receiver_size (r), 0);
  gst_object_unref (sink);
  gst_harness_teardown (h);
  receiver_free (r);
  g_free (data);
}

GST_END_TEST;


static void
check_bitexact (const gchar * props, gsize size, guint nbufs,
    GstClockTime dur, guint expect_segments)
{
  Receiver *r = receiver_new ();
  GstHarness *h = sender_new (r->port, props, TRUE);
  guint8 *data = pattern (size, size);
  GstStructure *s;
  const GValue *slack;

  push_data (h, data, size, nbufs, dur);
  /* returns once every byte is acknowledged */
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless (receiver_wait (r, size, TRUE, 20000), "received %"
      G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT, receiver_size (r), size);
  fail_unless_equals_int (r->data->len, size);
  fail_unless (memcmp (r->data->data, data, size) == 0);

  s = get_stats (h);
  GST_INFO ("%" GST_PTR_FORMAT, s);
  fail_unless_equals_uint64 (stat_u64 (s, "bytes-sent"), size);
  fail_unless_equals_uint64 (stat_u64 (s, "bytes-acked"), size);
  fail_unless_equals_uint64 (stat_u64 (s, "bytes-queued"), 0);
  fail_unless_equals_uint64 (stat_u64 (s, "bytes-in-flight"), 0);
  fail_unless_equals_uint64 (stat_u64 (s, "segments"), expect_segments);
  fail_unless (stat_uint (s, "mss") > 0);
  fail_unless (stat_u64 (s, "srtt") > 0);
  fail_unless (stat_uint (s, "cwnd") > 0);
  fail_unless (stat_u64 (s, "polls") > 0);
  stat_uint (s, "ssthresh");
  stat_uint (s, "w-target");
  stat_u64 (s, "window");
  stat_u64 (s, "retransmissions");
  stat_u64 (s, "timeouts");
  stat_u64 (s, "recoveries");
  stat_u64 (s, "inferred-recoveries");
  stat_u64 (s, "w-target-rtt");
  stat_u64 (s, "nominal-rate");
  stat_u64 (s, "rexmt-events");
  stat_u64 (s, "dupack-events");
  stat_u64 (s, "recovered-events");
  stat_u64 (s, "adjustments");
  stat_u64 (s, "segments-late");
  fail_unless (gst_structure_has_field_typed (s, "min-deadline-slack",
          G_TYPE_INT64));
  fail_unless (gst_structure_get_string (s, "congestion-control") != NULL);
  slack = gst_structure_get_value (s, "deadline-slack");
  fail_unless (slack && GST_VALUE_HOLDS_ARRAY (slack));
  fail_unless_equals_int (gst_value_array_get_size (slack), expect_segments);
  for (guint i = 0; i < gst_value_array_get_size (slack); i++)
    fail_unless (G_VALUE_HOLDS_INT64 (gst_value_array_get_value (slack, i)));
  {
    /* reading the stats has no side effects: the idle sink's second
     * reading is the same structure (it used to poll TCP_INFO) */
    GstStructure *again = get_stats (h);

    fail_unless (gst_structure_is_equal (s, again), "%" GST_PTR_FORMAT
        " vs %" GST_PTR_FORMAT, s, again);
    gst_structure_free (again);
  }
  gst_structure_free (s);

  gst_harness_teardown (h);
  receiver_free (r);
  g_free (data);
}

GST_START_TEST (test_bitexact_tcp)
{
  /* 8 MB as fast as loopback goes, 4 segments of 1 s */
  check_bitexact ("mode=tcp segment-duration=1000000000", 8 << 20, 400,
      10 * GST_MSECOND, 4);
}

GST_END_TEST;

/* Every one of @nseg segments of @segdur done, none later than a whole
 * segment past its deadline, none earlier than its own start (slack
 * below (i + 1) T: deadlines count from the first timestamp). */
static void
check_slack (const GstStructure * s, guint nseg, GstClockTime segdur)
{
  const GValue *slack = gst_structure_get_value (s, "deadline-slack");
  gint64 min_slack;

  fail_unless (slack && GST_VALUE_HOLDS_ARRAY (slack));
  fail_unless_equals_int (gst_value_array_get_size (slack), nseg);
  for (guint i = 0; i < nseg; i++) {
    gint64 v = g_value_get_int64 (gst_value_array_get_value (slack, i));

    fail_unless (v > -(gint64) segdur && v < (gint64) ((i + 1) * segdur),
        "segment %u slack %" G_GINT64_FORMAT, i, v);
  }
  fail_unless (gst_structure_get_int64 (s, "min-deadline-slack", &min_slack));
  fail_unless (min_slack > -(gint64) segdur && min_slack < (gint64) segdur,
      "min-deadline-slack %" G_GINT64_FORMAT, min_slack);
}

GST_START_TEST (test_bitexact_ctcp_segments)
{
  GstHarness *h;
  Receiver *r = receiver_new ();
  gsize size = 300000;
  guint8 *data = pattern (size, 7);
  GstStructure *s;
  guint64 rate;
  gint64 t0, elapsed;

  /* 1 s of timestamps in 4 segments of 250 ms (75 kB each): each is held
   * until complete, then sent at S/(T(1-p)) = 75000/0.2375 B/s */
  h = sender_new (r->port, "segment-duration=250000000", TRUE);
  t0 = g_get_monotonic_time ();
  push_data (h, data, size, 100, 10 * GST_MSECOND);
  /* segments 0-2 are complete (3 waiting is the limit), 3 is held */
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  elapsed = g_get_monotonic_time () - t0;
  fail_unless (receiver_wait (r, size, TRUE, 10000));
  fail_unless (memcmp (r->data->data, data, size) == 0);
  s = get_stats (h);
  GST_INFO ("%" GST_PTR_FORMAT, s);
  /* the controller's decision: S/(T(1-p)); a segment that fell behind
   * (a loaded machine's late wakeups) may be raised up to max-catch-up
   * (4) times that. That an unhindered sender is on time without any
   * catch-up is the core's test on a virtual clock (libs/ctcp,
   * test_sender_segments_on_time): here a late segment only fails when
   * it is later than a whole segment, which no load short of a stall
   * explains. */
  rate = (guint64) ceil (75000 / (0.25 * 0.95));
  fail_unless_equals_uint64 (stat_u64 (s, "nominal-rate"), rate);
  fail_unless (stat_u64 (s, "target-rate") >= rate &&
      stat_u64 (s, "target-rate") <= 4 * rate + 64, "%" G_GUINT64_FORMAT,
      stat_u64 (s, "target-rate"));
  fail_unless_equals_uint64 (stat_u64 (s, "segments"), 4);
  check_slack (s, 4, 250 * GST_MSECOND);
  fail_unless_equals_string (gst_structure_get_string (s, "mode"), "ctcp");
  gst_structure_free (s);
  /* paced: four segments at 0.95 T each cannot take less than ~0.9 s (a
   * lower bound: load only makes it take longer) */
  fail_unless (elapsed > 800000, "took only %" G_GINT64_FORMAT " us",
      elapsed);
  gst_harness_teardown (h);
  receiver_free (r);
  g_free (data);
}

GST_END_TEST;

/* A stream like the essential flow of a short clip: @nseg segments of
 * @segdur, each of @per_seg buffers of uneven sizes (a few kB a segment,
 * not a multiple of the MSS), timestamps from @origin (a broadcast capture
 * starts at hours). Every segment must land before its deadline: before,
 * each segment's last bytes waited for a whole write's worth of pacing
 * tokens (and the catch-up raised that amount), so the first segment,
 * which has only p̂·T of margin, was reported ~20 ms late on every
 * loopback fetch. */
static void
check_deadlines (GstClockTime origin)
{
  Receiver *r = receiver_new ();
  GstHarness *h = sender_new (r->port, "segment-duration=500000000", TRUE);
  const guint nseg = 4, per_seg = 25;
  const GstClockTime segdur = 500 * GST_MSECOND, dur = segdur / per_seg;
  gsize size = 0, off = 0;
  guint8 *data;
  GstStructure *st;

  /* 80..199 bytes each, ~3.5 kB a segment: 2 packets and a tail */
  for (guint i = 0; i < nseg * per_seg; i++)
    size += 80 + (i * 37) % 120;
  data = pattern (size, 11);
  for (guint i = 0; i < nseg * per_seg; i++) {
    gsize len = 80 + (i * 37) % 120;
    GstBuffer *b = gst_buffer_new_memdup (data + off, len);

    GST_BUFFER_PTS (b) = GST_BUFFER_DTS (b) = origin + i * dur;
    GST_BUFFER_DURATION (b) = dur;
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    off += len;
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless (receiver_wait (r, size, TRUE, 10000));
  fail_unless (memcmp (r->data->data, data, size) == 0);

  st = get_stats (h);
  GST_INFO ("%" GST_PTR_FORMAT, st);
  fail_unless_equals_uint64 (stat_u64 (st, "segments"), nseg);
  /* deadlines from the stream's timestamps (origin), each segment done:
   * no more than one segment early (the first one starts at once and has
   * exactly T), and never a whole segment late. Being on time to the
   * millisecond (the ~20 ms regression above) is checked on the core's
   * virtual clock (libs/ctcp, test_sender_segments_on_time), where a
   * loaded machine's late wakeups cannot make it fail. */
  check_slack (st, nseg, segdur);
  gst_structure_free (st);
  gst_harness_teardown (h);
  receiver_free (r);
  g_free (data);
}

GST_START_TEST (test_deadlines_on_time)
{
  check_deadlines (0);
}

GST_END_TEST;

GST_START_TEST (test_deadlines_on_time_late_origin)
{
  /* segment numbers and deadlines count from the stream's first timestamp */
  check_deadlines (36000 * GST_SECOND);
}

GST_END_TEST;

/* The pacer runs on GstClockIDs: a test clock decides how much is sent.
 * Buffers of @bufsize bytes: small ones (a trace's frames) must be
 * gathered into packet-sized writes, not sent one per wakeup. */
/* Until @r received every byte the sink wrote (its stats: bytes-sent). */
static void
wait_delivered (GstHarness * h, Receiver * r)
{
  GstStructure *s = get_stats (h);
  guint64 sent = stat_u64 (s, "bytes-sent");

  gst_structure_free (s);
  fail_unless (receiver_wait (r, sent, FALSE, 10000), "%" G_GSIZE_FORMAT
      " of %" G_GUINT64_FORMAT " bytes", receiver_size (r), sent);
}

static void
check_pacing_testclock (gsize bufsize)
{
  Receiver *r = receiver_new ();
  GstHarness *h = sender_new (r->port, "target-rate=160000", FALSE);
  GstTestClock *clock = gst_harness_get_testclock (h);
  gsize size = 60000;
  guint8 *data = pattern (size, 3);
  gsize got;

  /* no timestamps: one segment; a fixed rate sends as data comes (up to
   * 64 kB are accepted ahead) */
  for (gsize off = 0; off < size; off += bufsize) {
    GstBuffer *b = gst_buffer_new_memdup (data + off, MIN (bufsize,
            size - off));
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
  }
  /* the first write goes at once, then nothing while the clock stands.
   * With small buffers the sender may wake before the rest is queued and
   * write just the first one: at least one buffer, at most a packet. */
  fail_unless (receiver_wait (r, MIN (bufsize, 1448), FALSE, 5000));
  g_usleep (300000);
  got = receiver_size (r);
  fail_unless (got >= MIN (bufsize, 1448) && got <= 2000, "%" G_GSIZE_FORMAT,
      got);

  /* one virtual second at 160 kbit/s: 20 kB more */
  while (gst_clock_get_time (GST_CLOCK (clock)) < GST_SECOND) {
    gst_test_clock_crank (clock);
    /* the real loopback delivers (and so acknowledges) what was written
     * before time runs on: waited for, however slow the machine */
    wait_delivered (h, r);
  }
  wait_delivered (h, r);
  got = receiver_size (r);
  fail_unless (got >= 19000 && got <= 23000, "%" G_GSIZE_FORMAT, got);
  fail_unless (memcmp (r->data->data, data, got) == 0);

  gst_object_unref (clock);
  gst_harness_teardown (h);
  receiver_free (r);
  g_free (data);
}

GST_START_TEST (test_pacing_testclock)
{
  check_pacing_testclock (20000);
}

GST_END_TEST;

GST_START_TEST (test_pacing_small_buffers)
{
  check_pacing_testclock (100);
}

GST_END_TEST;

GST_START_TEST (test_connection_refused)
{
  GSocket *sock;
  GSocketAddress *addr, *bound;
  guint port;
  GstElement *pipe;
  GstBus *bus;
  GstMessage *msg;
  GError *err = NULL;
  gchar *desc;
  GstStateChangeReturn ret;

  /* a port nobody listens on: bind one, read it, close it */
  sock = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, NULL);
  addr = g_inet_socket_address_new_from_string ("127.0.0.1", 0);
  fail_unless (g_socket_bind (sock, addr, TRUE, NULL));
  bound = g_socket_get_local_address (sock, NULL);
  port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  g_object_unref (bound);
  g_object_unref (addr);
  g_object_unref (sock);

  desc = g_strdup_printf ("fakesrc num-buffers=10 ! ctcpsink name=s "
      "host=127.0.0.1 port=%u", port);
  pipe = gst_parse_launch (desc, NULL);
  g_free (desc);
  bus = gst_element_get_bus (pipe);
  /* the sink connects in its thread: the state change does not block,
   * the refusal comes as an error */
  ret = gst_element_set_state (pipe, GST_STATE_PLAYING);
  fail_if (ret == GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_timed_pop_filtered (bus, 5 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_OPEN_WRITE));
  fail_unless (strstr (err->message, "Could not connect") != NULL);
  g_error_free (err);
  gst_message_unref (msg);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
}

GST_END_TEST;

GST_START_TEST (test_connection_lost)
{
  Receiver *r = receiver_new ();
  GstHarness *h = sender_new (r->port, "mode=tcp", TRUE);
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;
  GstFlowReturn ret = GST_FLOW_OK;
  guint8 *data = pattern (65536, 1);
  GstStructure *s;
  guint64 polls0;

  gst_element_set_bus (h->element, bus);
  fail_unless_equals_int (gst_harness_push (h,
          gst_buffer_new_memdup (data, 65536)), GST_FLOW_OK);
  fail_unless (receiver_wait (r, 65536, FALSE, 5000));
  /* the receiver goes away */
  gst_element_set_state (r->pipeline, GST_STATE_NULL);
  for (guint i = 0; i < 200 && ret == GST_FLOW_OK; i++) {
    ret = gst_harness_push (h, gst_buffer_new_memdup (data, 65536));
    g_usleep (10000);
  }
  fail_unless_equals_int (ret, GST_FLOW_ERROR);
  msg = gst_bus_timed_pop_filtered (bus, 5 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_WRITE));
  g_error_free (err);
  gst_message_unref (msg);
  /* no busy loop: the sender stopped polling */
  s = get_stats (h);
  polls0 = stat_u64 (s, "polls");
  gst_structure_free (s);
  g_usleep (300000);
  s = get_stats (h);
  /* (each stats read polls once itself) */
  fail_unless (stat_u64 (s, "polls") <= polls0 + 1);
  gst_structure_free (s);

  gst_harness_teardown (h);
  gst_object_unref (bus);
  receiver_free (r);
  g_free (data);
}

GST_END_TEST;

/* ---- congestion events, with losses made on our own loopback ---- */

static gboolean
run_tc (const gchar * args)
{
  gchar *cmd = g_strdup_printf ("tc qdisc %s", args);
  gint status = -1;
  gboolean ok = g_spawn_command_line_sync (cmd, NULL, NULL, &status, NULL)
      && g_spawn_check_wait_status (status, NULL);

  g_free (cmd);
  return ok;
}

typedef struct
{
  GstNetworkCongestionType type;
  gint64 time;
} SeenEvent;

static GArray *
collect_messages (GstBus * bus)
{
  GArray *seen = g_array_new (FALSE, FALSE, sizeof (SeenEvent));
  GstMessage *msg;

  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    SeenEvent e = { 0, };
    guint64 rate;
    GstClockTime srtt;
    const gchar *src;

    if (gst_network_congestion_message_parse (msg, &e.type, &rate, &srtt,
            &src)) {
      fail_unless_equals_string (src, GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)));
      g_array_append_val (seen, e);
    }
    gst_message_unref (msg);
  }
  return seen;
}

static guint
count_type (GArray * seen, GstNetworkCongestionType t)
{
  guint n = 0;

  for (guint i = 0; i < seen->len; i++)
    n += g_array_index (seen, SeenEvent, i).type == t;
  return n;
}

/* A TcpExt counter of this network namespace (/proc/net/netstat). */
static guint64
tcpext (const gchar * name)
{
  gchar *txt = NULL, **lines;
  guint64 v = 0;

  fail_unless (g_file_get_contents ("/proc/net/netstat", &txt, NULL, NULL));
  lines = g_strsplit (txt, "\n", -1);
  for (guint i = 0; lines[i] && lines[i + 1]; i += 2) {
    gchar **n = g_strsplit (lines[i], " ", -1), **x;

    if (g_str_equal (n[0], "TcpExt:")) {
      x = g_strsplit (lines[i + 1], " ", -1);
      for (guint k = 1; n[k] && x[k]; k++)
        if (g_str_equal (n[k], name))
          v = g_ascii_strtoull (x[k], NULL, 10);
      g_strfreev (x);
    }
    g_strfreev (n);
  }
  g_strfreev (lines);
  g_free (txt);
  return v;
}

static guint64
kernel_recoveries (void)
{
  return tcpext ("TCPSackRecovery") + tcpext ("TCPRenoRecovery");
}

/* Drops from a small tbf queue: fast recoveries -> dupack, recovered;
 * only the subscribed events are reported, all are counted; no more
 * recoveries than the kernel's own count (on loopback every poll is later
 * than the RTT: retransmissions alone must not be taken for unseen
 * recoveries). */
GST_START_TEST (test_events_dupack)
{
  Receiver *r;
  GstHarness *h;
  GstBus *bus = gst_bus_new ();
  gsize size = 4 << 20;
  guint8 *data = pattern (size, 9);
  GArray *seen;
  GstStructure *s;
  GstEvent *ev;
  guint upstream = 0;
  guint64 rec0, rec;

  if (!own_netns)
    return;
  rec0 = kernel_recoveries ();
  fail_unless (run_tc ("add dev lo root tbf rate 40mbit burst 20kb "
          "limit 30kb"));
  r = receiver_new ();
  h = sender_new (r->port, "mode=tcp congestion-control=reno events=dupack",
      TRUE);
  gst_element_set_bus (h->element, bus);
  push_data (h, data, size, 64, GST_MSECOND);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless (receiver_wait (r, size, TRUE, 20000));
  fail_unless (memcmp (r->data->data, data, size) == 0);
  run_tc ("del dev lo root");

  seen = collect_messages (bus);
  s = get_stats (h);
  GST_INFO ("%" GST_PTR_FORMAT, s);
  fail_unless_equals_string (gst_structure_get_string (s,
          "congestion-control"), "reno");
  fail_unless (stat_u64 (s, "retransmissions") > 0);
  fail_unless (stat_u64 (s, "dupack-events") >= 1);
  rec = kernel_recoveries () - rec0;
  GST_INFO ("kernel recoveries %" G_GUINT64_FORMAT ", dupack events %"
      G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " inferred)", rec,
      stat_u64 (s, "dupack-events"), stat_u64 (s, "inferred-recoveries"));
  fail_unless (stat_u64 (s, "dupack-events") <= rec, "%" G_GUINT64_FORMAT
      " dupack events, %" G_GUINT64_FORMAT " recoveries in the kernel",
      stat_u64 (s, "dupack-events"), rec);
  /* every episode closed */
  fail_unless (stat_u64 (s, "recovered-events") >= 1);
  fail_unless (stat_u64 (s, "recovered-events") <=
      stat_u64 (s, "dupack-events") + stat_u64 (s, "rexmt-events"));
  fail_unless_equals_int (seen->len, stat_u64 (s, "dupack-events"));
  fail_unless_equals_int (count_type (seen, GST_NETWORK_CONGESTION_DUPACK),
      seen->len);
  gst_structure_free (s);

  /* the same events went upstream, as GstNetworkCongestion events */
  while ((ev = gst_harness_try_pull_upstream_event (h))) {
    GstNetworkCongestionType t;
    guint64 rate = 0;

    if (gst_network_congestion_event_parse (ev, &t, &rate, NULL, NULL)) {
      fail_unless_equals_int (t, GST_NETWORK_CONGESTION_DUPACK);
      fail_unless (rate > 0);
      upstream++;
    }
    gst_event_unref (ev);
  }
  fail_unless_equals_int (upstream, seen->len);

  g_array_free (seen, TRUE);
  gst_harness_teardown (h);
  gst_object_unref (bus);
  receiver_free (r);
  g_free (data);
}

GST_END_TEST;

/* Moves this process into a fresh network namespace (root only) so the
 * event tests can drop packets on a loopback of their own. */
static void
enter_own_netns (void)
{
  gint status = -1;

  if (geteuid () != 0 || unshare (CLONE_NEWNET) != 0)
    return;
  /* a real Ethernet MTU, so tbf sees MSS-sized packets */
  own_netns = g_spawn_command_line_sync ("ip link set lo up mtu 1500", NULL,
      NULL, &status, NULL) && g_spawn_check_wait_status (status, NULL);
}

static Suite *
ctcpsink_suite (void)
{
  Suite *s = suite_create ("ctcpsink");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_bitexact_tcp);
  tcase_add_test (tc, test_listen_bitexact);
  tcase_add_test (tc, test_listen_other_peer_refused);
  tcase_add_test (tc, test_bitexact_ctcp_segments);
  tcase_add_test (tc, test_deadlines_on_time);
  tcase_add_test (tc, test_deadlines_on_time_late_origin);
  tcase_add_test (tc, test_pacing_testclock);
  tcase_add_test (tc, test_pacing_small_buffers);
  tcase_add_test (tc, test_connection_refused);
  tcase_add_test (tc, test_connection_lost);
  tcase_add_test (tc, test_events_dupack);
  return s;
}

int
main (int argc, char **argv)
{
  Suite *s;

  enter_own_netns ();
  gst_check_init (&argc, &argv);
  s = ctcpsink_suite ();
  if (!own_netns)
    g_print ("not root: the congestion event tests do nothing\n");
  return gst_check_run_suite (s, "ctcpsink", __FILE__);
}
