/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rudpsrc in plaintext (lab mode) against forged RTP from a
 * third address (docs/security.md, issue 24). Before, every RTP packet
 * counted, whoever sent it: forged sequence numbers far ahead read as
 * losses and drove the receiver's rate level from 9 to 0. Now the sender
 * is the first RTP packet's address and port (from accept-host's address
 * when set), and the rest is dropped and counted (foreign-packets): the
 * loss count, the level and the feedback address see the genuine flow
 * only. Sockets on 127.0.0.2 (loopback): no root needed. Nothing asserts
 * wall-clock times. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/rudp/rudp.h>
#include "rudptestutil.h"
#include "elementstats.h"

#define CAPS "caps=\"application/x-rtp,media=application,clock-rate=90000," \
  "encoding-name=X-GST\""

static GSocket *
udp_on (const gchar * ip)
{
  GSocket *s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  GSocketAddress *a = g_inet_socket_address_new_from_string (ip, 0);

  fail_unless (g_socket_bind (s, a, FALSE, NULL));
  g_object_unref (a);
  return s;
}

static void
send_rtp (GSocket * s, gint port, guint32 ssrc, guint16 seq)
{
  GSocketAddress *to = g_inet_socket_address_new_from_string ("127.0.0.1",
      port);
  GstBuffer *b = rudp_make_packet (ssrc, seq, 200);
  GstMapInfo map;

  gst_buffer_map (b, &map, GST_MAP_READ);
  fail_unless_equals_int (g_socket_send_to (s, to, (gchar *) map.data,
          map.size, NULL, NULL), map.size);
  gst_buffer_unmap (b, &map);
  gst_buffer_unref (b);
  g_object_unref (to);
}

static void
wait_stat (GstElement * e, const gchar * f, guint64 n)
{
  guint i;

  for (i = 0; i < 500 && stat_u64 (e, f) < n; i++)
    g_usleep (10000);
  fail_unless_equals_uint64 (stat_u64 (e, f), n);
}

/* Pulls @n buffers: every one the genuine sender's (seq from @seq0 on,
 * in order); nothing else is queued. */
static void
pull_genuine (GstHarness * h, guint n, guint16 seq0)
{
  guint i;

  for (i = 0; i < n; i++) {
    GstBuffer *b = gst_harness_pull (h);
    GstMapInfo map;

    gst_buffer_map (b, &map, GST_MAP_READ);
    fail_unless_equals_int (GST_READ_UINT16_BE (map.data + 2),
        (guint16) (seq0 + i));
    fail_unless_equals_int (GST_READ_UINT32_BE (map.data + 8), 0xabc);
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
  }
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
}

/* The attack: 200 packets of the flow's SSRC, sequence numbers 500 apart
 * (each a "gap" of 499 losses), from 127.0.0.2 and from the sender's
 * address but another port. */
static guint
forge (gint port)
{
  GSocket *third = udp_on ("127.0.0.2"), *other = udp_on ("127.0.0.1");
  guint i;

  for (i = 0; i < 100; i++) {
    send_rtp (third, port, 0xabc, 2000 + i * 500);
    send_rtp (other, port, 0xabc, 2250 + i * 500);
  }
  g_object_unref (third);
  g_object_unref (other);
  return 200;
}

/* A gst-launch-1.0 receiver (no accept-host): the first sender's address
 * and port are the flow's; forged RTP in the middle of the flow is
 * dropped and counted, no loss is seen, the level does not move. */
GST_START_TEST (test_forged_rtp_midflow)
{
  GstHarness *h = gst_harness_new_parse ("rudpsrc port=0 " CAPS
      " min-interval=20000000 feedback-interval=50000000");
  GSocket *s;
  gint port;
  guint i, forged;

  gst_harness_play (h);
  port = src_port (el (h, "rudpsrc"));
  s = udp_on ("127.0.0.1");
  for (i = 0; i < 50; i++)
    send_rtp (s, port, 0xabc, 1000 + i);
  wait_stat (el (h, "rudpsrc"), "received", 50);
  forged = forge (port);
  wait_stat (el (h, "rudpsrc"), "foreign-packets", forged);
  for (i = 50; i < 100; i++)
    send_rtp (s, port, 0xabc, 1000 + i);
  wait_stat (el (h, "rudpsrc"), "received", 100);
  pull_genuine (h, 100, 1000);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "lost"), 0);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "decreases"), 0);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "foreign-packets"), forged);
  g_object_unref (s);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* With accept-host (as the proxy sets it: the server's address) forged
 * RTP from a third address *before* the flow does not become the sender;
 * the genuine flow then counts from its first packet. */
GST_START_TEST (test_forged_rtp_first_accept_host)
{
  GstHarness *h = gst_harness_new_parse ("rudpsrc port=0 " CAPS
      " accept-host=127.0.0.1 min-interval=20000000");
  GSocket *s, *third;
  gint port;
  guint i;
  gchar *ah = NULL;

  g_object_get (el (h, "rudpsrc"), "accept-host", &ah, NULL);
  fail_unless_equals_string (ah, "127.0.0.1");
  g_free (ah);
  gst_harness_play (h);
  port = src_port (el (h, "rudpsrc"));
  third = udp_on ("127.0.0.2");
  for (i = 0; i < 100; i++)
    send_rtp (third, port, 0xabc, 5000 + i * 500);
  wait_stat (el (h, "rudpsrc"), "foreign-packets", 100);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "received"), 0);
  s = udp_on ("127.0.0.1");
  for (i = 0; i < 60; i++)
    send_rtp (s, port, 0xabc, 1000 + i);
  wait_stat (el (h, "rudpsrc"), "received", 60);
  pull_genuine (h, 60, 1000);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "lost"), 0);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "foreign-packets"), 100);
  g_object_unref (s);
  g_object_unref (third);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
rudpattack_suite (void)
{
  Suite *s = suite_create ("rudpattack");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_forged_rtp_midflow);
  tcase_add_test (tc, test_forged_rtp_first_accept_host);
  return s;
}

GST_CHECK_MAIN (rudpattack);
