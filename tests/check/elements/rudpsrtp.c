/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP over SRTP/SRTCP: an encrypted flow delivers its packets and
 * the rate still follows the receiver's feedback; what leaves the sink is
 * SRTP (payload encrypted, 10-byte tag); forged feedback (plaintext TMMBR and
 * APP, garbage, SRTCP under another key, from the receiver's address and from
 * a third one) leaves the rate unchanged and is counted, and authentic
 * feedback then does change it; a receiver with another key decodes nothing;
 * replayed SRTP packets are dropped; in plaintext mode feedback from any
 * address but the destination's is dropped. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/rtp/gstrtpbuffer.h>
#include <gst/rudp/rudp.h>
#include "../../../gst/rudp/gstrudpsrtp.h"
#include "rudptestutil.h"
#include "elementstats.h"

#define KEY  "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d"
#define KEY2 "ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d"

/* a UDP socket on 127.0.0.1, with a receive timeout */
static GSocket *
lo_socket (guint16 * port)
{
  GSocket *s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *any = g_inet_socket_address_new (lo, 0), *local;

  fail_unless (g_socket_bind (s, any, FALSE, NULL));
  local = g_socket_get_local_address (s, NULL);
  *port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (local));
  g_object_unref (local);
  g_object_unref (any);
  g_object_unref (lo);
  g_socket_set_timeout (s, 2);
  return s;
}

static GSocketAddress *
lo_addr (guint16 port)
{
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *a = g_inet_socket_address_new (lo, port);

  g_object_unref (lo);
  return a;
}

static void
send_raw (GSocket * s, GSocketAddress * to, const guint8 * d, gsize n)
{
  fail_unless_equals_int (g_socket_send_to (s, to, (const gchar *) d, n, NULL,
          NULL), n);
  /* the feedback is read every 20 ms at most: leave the receive buffer
   * room, so every datagram is counted (a flood is dropped by the kernel) */
  g_usleep (300);
}

static void
send_buf (GSocket * s, GSocketAddress * to, GstBuffer * buf, GstRudpSrtp * k)
{
  GstMapInfo map;
  guint8 d[2048];
  gint n;

  gst_buffer_map (buf, &map, GST_MAP_READ);
  memcpy (d, map.data, map.size);
  n = map.size;
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
  if (k)
    n = gst_rudp_srtp_protect (k, d, n, gst_rudp_is_rtcp (d, n));
  fail_unless (n > 0);
  send_raw (s, to, d, n);
}

static GstHarness *
sink_new (guint16 port, const gchar * extra)
{
  gchar *desc = g_strdup_printf ("rudpsink host=127.0.0.1 port=%u %s", port,
      extra);
  GstHarness *h = gst_harness_new_parse (desc);

  g_free (desc);
  gst_harness_set_src_caps_str (h, "application/x-rtp");
  return h;
}

/* a receiver's request for level @level of 10 */
static GstBuffer *
request (guint32 media_ssrc, guint level)
{
  GstRudpRequest req = { 0 };

  req.ssrc = 0x7777;
  req.media_ssrc = media_ssrc;
  req.has_bitrate = TRUE;
  req.bitrate = 160000 * (level + 1);
  req.overhead = GST_RUDP_PACKET_OVERHEAD;
  req.has_level = TRUE;
  req.level = level;
  req.n_levels = 10;
  req.timestamp = 1;
  return gst_rudp_request_write (&req);
}

static GstRudpSrtp *
ctx (const gchar * key)
{
  GError *err = NULL;
  GstRudpSrtp *k = gst_rudp_srtp_new (key, GST_RUDP_SRTP_CIPHER_AUTO,
      GST_RUDP_SRTP_AUTH_HMAC_SHA1_80, &err);

  fail_unless (k != NULL, "%s", err ? err->message : "");
  return k;
}

/* The whole loop encrypted: packets arrive decrypted and intact, the level
 * climbs to the top on the receiver's (SRTCP) feedback and the sink answers
 * with (SRTCP) notices the receiver authenticates. */
GST_START_TEST (test_encrypted_loop)
{
  GstHarness *hsrc, *hsink;
  guint i, pulled = 0;
  guint16 seq = 0;

  hsrc = gst_harness_new_parse ("rudpsrc port=0 caps=application/x-rtp "
      "min-interval=20000000 increase-packets=10 increase-time=0 key=" KEY);
  gst_harness_play (hsrc);
  hsink = sink_new (src_port (el (hsrc, "rudpsrc")),
      "rate-control=receiver buffer-size=20000 key=" KEY);
  gst_harness_play (hsink);
  fail_unless (stat_bool (el (hsink, "rudpsink"), "srtp"));
  fail_unless (stat_bool (el (hsrc, "rudpsrc"), "srtp"));

  for (i = 0; i < 3000 && stat_uint (el (hsink, "rudpsink"), "level") < 9;
      i++) {
    GstBuffer *b;

    fail_unless_equals_int (gst_harness_push (hsink,
            rudp_make_packet (0x4242, seq++, 500)), GST_FLOW_OK);
    while ((b = gst_harness_try_pull (hsrc))) {
      GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
      guint8 *pl;

      fail_unless_equals_int (gst_buffer_get_size (b), 500);
      fail_unless (gst_rtp_buffer_map (b, GST_MAP_READ, &rtp));
      fail_unless_equals_int (gst_rtp_buffer_get_ssrc (&rtp), 0x4242);
      fail_unless_equals_int (gst_rtp_buffer_get_seq (&rtp), pulled);
      pl = gst_rtp_buffer_get_payload (&rtp);
      fail_unless (pl[0] == 0x5a && pl[487] == 0x5a);
      gst_rtp_buffer_unmap (&rtp);
      gst_buffer_unref (b);
      pulled++;
    }
  }
  fail_unless_equals_int (stat_uint (el (hsink, "rudpsink"), "level"), 9);
  /* 9 increases of 10 loss-free packets each (the packet rule alone:
   * increase-time=0), all delivered */
  fail_unless (pulled >= 90, "%u", pulled);
  fail_unless (stat_u64 (el (hsrc, "rudpsrc"), "notices-received") >= 5);
  fail_unless (stat_u64 (el (hsink, "rudpsink"), "feedback-received") >= 5);
  fail_unless_equals_uint64 (stat_u64 (el (hsrc, "rudpsrc"), "lost"), 0);
  fail_unless_equals_uint64 (stat_u64 (el (hsrc, "rudpsrc"),
          "auth-failures"), 0);
  fail_unless_equals_uint64 (stat_u64 (el (hsink, "rudpsink"),
          "auth-failures"), 0);
  fail_unless_equals_uint64 (stat_u64 (el (hsink, "rudpsink"), "replayed"),
      0);
  gst_harness_teardown (hsink);
  gst_harness_teardown (hsrc);
}

GST_END_TEST;

/* On the wire: SRTP. Replayed to a keyed rudpsrc each packet is delivered
 * once; to a rudpsrc with another key nothing is. */
GST_START_TEST (test_wire_replay_wrong_key)
{
  GstHarness *hsink, *hgood, *hbad;
  GSocket *cap, *inj;
  GSocketAddress *good, *bad;
  guint16 cport, iport;
  guint8 pkts[20][600];
  gssize lens[20];
  guint i, r;

  cap = lo_socket (&cport);
  hsink = sink_new (cport, "rate=8000000 key=" KEY);
  gst_harness_play (hsink);
  for (i = 0; i < 20; i++)
    fail_unless_equals_int (gst_harness_push (hsink,
            rudp_make_packet (0x55, 100 + i, 500)), GST_FLOW_OK);
  for (i = 0; i < 20; i++) {
    lens[i] = g_socket_receive (cap, (gchar *) pkts[i], sizeof (pkts[i]),
        NULL, NULL);
    /* 12-byte header in clear, payload encrypted, 10-byte tag */
    fail_unless_equals_int (lens[i], 510);
    fail_unless_equals_int (GST_READ_UINT16_BE (pkts[i] + 2), 100 + i);
    fail_unless_equals_int (GST_READ_UINT32_BE (pkts[i] + 8), 0x55);
    fail_if (pkts[i][20] == 0x5a && pkts[i][21] == 0x5a && pkts[i][22] ==
        0x5a && pkts[i][23] == 0x5a);
  }

  hgood = gst_harness_new_parse ("rudpsrc port=0 caps=application/x-rtp "
      "feedback=false key=" KEY);
  hbad = gst_harness_new_parse ("rudpsrc port=0 caps=application/x-rtp "
      "feedback=false key=" KEY2);
  gst_harness_play (hgood);
  gst_harness_play (hbad);
  good = lo_addr (src_port (el (hgood, "rudpsrc")));
  bad = lo_addr (src_port (el (hbad, "rudpsrc")));
  inj = lo_socket (&iport);
  /* each packet twice to the right key, once to the wrong one */
  for (r = 0; r < 2; r++)
    for (i = 0; i < 20; i++) {
      guint8 d[600];

      memcpy (d, pkts[i], lens[i]);     /* unprotect works in place */
      send_raw (inj, good, d, lens[i]);
      if (r == 0)
        send_raw (inj, bad, d, lens[i]);
    }
  for (i = 0; i < 20; i++) {
    GstBuffer *b = gst_harness_pull (hgood);
    GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;

    fail_unless_equals_int (gst_buffer_get_size (b), 500);
    fail_unless (gst_rtp_buffer_map (b, GST_MAP_READ, &rtp));
    fail_unless_equals_int (gst_rtp_buffer_get_seq (&rtp), 100 + i);
    fail_unless (((guint8 *) gst_rtp_buffer_get_payload (&rtp))[100] == 0x5a);
    gst_rtp_buffer_unmap (&rtp);
    gst_buffer_unref (b);
  }
  for (i = 0; i < 2000 && stat_u64 (el (hgood, "rudpsrc"), "replayed") < 20;
      i++)
    g_usleep (5000);
  for (i = 0; i < 2000 && stat_u64 (el (hbad, "rudpsrc"), "auth-failures")
      < 20; i++)
    g_usleep (5000);
  fail_unless_equals_int (gst_harness_buffers_in_queue (hgood), 0);
  fail_unless_equals_uint64 (stat_u64 (el (hgood, "rudpsrc"), "replayed"),
      20);
  fail_unless_equals_uint64 (stat_u64 (el (hgood, "rudpsrc"), "received"),
      20);
  fail_unless_equals_uint64 (stat_u64 (el (hgood, "rudpsrc"),
          "auth-failures"), 0);
  fail_unless_equals_int (gst_harness_buffers_in_queue (hbad), 0);
  fail_unless_equals_uint64 (stat_u64 (el (hbad, "rudpsrc"), "received"), 0);
  fail_unless_equals_uint64 (stat_u64 (el (hbad, "rudpsrc"),
          "auth-failures"), 20);
  /* plaintext RTP to a keyed receiver: dropped too */
  send_buf (inj, good, rudp_make_packet (0x55, 200, 300), NULL);
  for (i = 0; i < 2000 && stat_u64 (el (hgood, "rudpsrc"), "auth-failures")
      < 1; i++)
    g_usleep (5000);
  fail_unless_equals_uint64 (stat_u64 (el (hgood, "rudpsrc"),
          "auth-failures"), 1);
  fail_unless_equals_int (gst_harness_buffers_in_queue (hgood), 0);

  g_object_unref (good);
  g_object_unref (bad);
  g_object_unref (inj);
  g_object_unref (cap);
  gst_harness_teardown (hgood);
  gst_harness_teardown (hbad);
  gst_harness_teardown (hsink);
}

GST_END_TEST;

static void
wait_feedback_counted (GstElement * sink, const gchar * f, guint64 want)
{
  guint i;

  for (i = 0; i < 2000 && stat_u64 (sink, f) < want; i++)
    g_usleep (5000);
  fail_unless_equals_uint64 (stat_u64 (sink, f), want);
}

/* Forged feedback against a keyed sink: plaintext TMMBR + APP, random
 * bytes, SRTCP under another key, and a replayed authentic request, from
 * the receiver's address and from a third one: the rate stays, all are
 * counted. Then an authentic request moves it (the check can fail). */
GST_START_TEST (test_forged_feedback_srtp)
{
  GstHarness *hsink;
  GstElement *sink;
  GSocket *rx, *third;
  GSocketAddress *to;
  GstRudpSrtp *wrong = ctx (KEY2), *right = ctx (KEY);
  guint16 rport, tport;
  guint8 d[2048], replay[256];
  gint rlen;
  gssize n;
  guint i, j;
  GSocket *who[2];

  rx = lo_socket (&rport);
  third = lo_socket (&tport);
  hsink = sink_new (rport, "rate-control=receiver key=" KEY);
  gst_harness_play (hsink);
  sink = el (hsink, "rudpsink");
  fail_unless_equals_int (gst_harness_push (hsink,
          rudp_make_packet (0x99, 1, 200)), GST_FLOW_OK);
  n = g_socket_receive_from (rx, NULL, (gchar *) d, sizeof (d), NULL, NULL);
  fail_unless_equals_int (n, 210);
  /* the sink's socket: where the feedback goes */
  {
    GSocketAddress *from = NULL;

    fail_unless_equals_int (gst_harness_push (hsink,
            rudp_make_packet (0x99, 2, 200)), GST_FLOW_OK);
    fail_unless (g_socket_receive_from (rx, &from, (gchar *) d, sizeof (d),
            NULL, NULL) > 0);
    to = from;
  }
  fail_unless_equals_int (stat_uint (sink, "level"), 0);

  who[0] = rx;
  who[1] = third;
  for (j = 0; j < 2; j++) {
    /* plaintext TMMBR + APP asking for the top level */
    for (i = 0; i < 10; i++)
      send_buf (who[j], to, request (0x99, 9), NULL);
    /* random bytes, some shaped as RTCP */
    for (i = 0; i < 100; i++) {
      guint k, len = 8 + g_random_int_range (0, 400);

      for (k = 0; k < len; k++)
        d[k] = g_random_int ();
      if (i % 2) {
        d[0] = 0x80;
        d[1] = 200 + i % 5;
      }
      send_raw (who[j], to, d, len);
    }
    /* SRTCP under another key */
    for (i = 0; i < 10; i++)
      send_buf (who[j], to, request (0x99, 9), wrong);
  }
  wait_feedback_counted (sink, "auth-failures", 240);
  g_usleep (50000);
  fail_unless_equals_uint64 (stat_u64 (sink, "auth-failures"), 240);
  fail_unless_equals_int (stat_uint (sink, "level"), 0);
  fail_unless_equals_uint64 (stat_u64 (sink, "feedback-received"), 0);
  fail_unless_equals_uint64 (stat_u64 (sink, "level-changes"), 0);
  fail_unless_equals_uint64 (stat_u64 (sink, "rate"), 160000);

  /* an authentic request, kept for replaying: the level moves */
  {
    GstBuffer *b = request (0x99, 5);
    GstMapInfo map;

    gst_buffer_map (b, &map, GST_MAP_READ);
    memcpy (replay, map.data, map.size);
    rlen = map.size;
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
    rlen = gst_rudp_srtp_protect (right, replay, rlen, TRUE);
    fail_unless (rlen > 0);
  }
  memcpy (d, replay, rlen);
  send_raw (rx, to, d, rlen);
  for (i = 0; i < 2000 && stat_uint (sink, "level") != 5; i++)
    g_usleep (5000);
  fail_unless_equals_int (stat_uint (sink, "level"), 5);
  fail_unless_equals_uint64 (stat_u64 (sink, "rate"), 960000);
  /* the sink's notice comes back as SRTCP we can authenticate */
  n = g_socket_receive (rx, (gchar *) d, sizeof (d), NULL, NULL);
  fail_unless (n > 0 && gst_rudp_is_rtcp (d, n));
  {
    gint len = n;

    fail_unless_equals_int (gst_rudp_srtp_unprotect (right, d, &len, TRUE),
        GST_RUDP_SRTP_OK);
  }
  /* back down by authentic feedback, then the level-5 request replayed
   * (from a third address too): dropped */
  send_buf (rx, to, request (0x99, 1), right);
  for (i = 0; i < 2000 && stat_uint (sink, "level") != 1; i++)
    g_usleep (5000);
  fail_unless_equals_int (stat_uint (sink, "level"), 1);
  memcpy (d, replay, rlen);
  send_raw (rx, to, d, rlen);
  memcpy (d, replay, rlen);
  send_raw (third, to, d, rlen);
  wait_feedback_counted (sink, "replayed", 2);
  g_usleep (50000);
  fail_unless_equals_int (stat_uint (sink, "level"), 1);
  fail_unless_equals_uint64 (stat_u64 (sink, "feedback-received"), 2);

  gst_harness_teardown (hsink);
  gst_rudp_srtp_free (wrong);
  gst_rudp_srtp_free (right);
  g_object_unref (to);
  g_object_unref (rx);
  g_object_unref (third);
}

GST_END_TEST;

/* Plaintext: feedback from a third address is dropped and counted; the
 * same from the destination works. */
GST_START_TEST (test_plaintext_foreign_feedback)
{
  GstHarness *hsink;
  GstElement *sink;
  GSocket *rx, *third;
  GSocketAddress *to = NULL;
  guint16 rport, tport;
  guint8 d[2048];
  guint i;

  rx = lo_socket (&rport);
  third = lo_socket (&tport);
  hsink = sink_new (rport, "rate-control=receiver");
  gst_harness_play (hsink);
  sink = el (hsink, "rudpsink");
  fail_unless_equals_int (gst_harness_push (hsink,
          rudp_make_packet (0x99, 1, 200)), GST_FLOW_OK);
  fail_unless_equals_int (g_socket_receive_from (rx, &to, (gchar *) d,
          sizeof (d), NULL, NULL), 200);
  fail_if (stat_bool (sink, "srtp"));

  for (i = 0; i < 20; i++)
    send_buf (third, to, request (0x99, 9), NULL);
  wait_feedback_counted (sink, "foreign-feedback", 20);
  g_usleep (50000);
  fail_unless_equals_int (stat_uint (sink, "level"), 0);
  fail_unless_equals_uint64 (stat_u64 (sink, "feedback-received"), 0);

  send_buf (rx, to, request (0x99, 9), NULL);
  for (i = 0; i < 2000 && stat_uint (sink, "level") != 9; i++)
    g_usleep (5000);
  fail_unless_equals_int (stat_uint (sink, "level"), 9);
  fail_unless_equals_uint64 (stat_u64 (sink, "foreign-feedback"), 20);
  fail_unless_equals_uint64 (stat_u64 (sink, "auth-failures"), 0);

  gst_harness_teardown (hsink);
  g_object_unref (to);
  g_object_unref (rx);
  g_object_unref (third);
}

GST_END_TEST;

/* AES-128-GCM: 16-byte tag, decrypted intact at the other end. */
GST_START_TEST (test_gcm)
{
  const gchar *key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b";
  GstHarness *hsink, *hsrc;
  GSocket *cap, *inj;
  GSocketAddress *to;
  guint16 cport, iport;
  guint8 d[600];
  gchar *desc;
  guint i;

  cap = lo_socket (&cport);
  desc = g_strdup_printf ("rate=8000000 srtp-cipher=aes-128-gcm key=%s", key);
  hsink = sink_new (cport, desc);
  g_free (desc);
  gst_harness_play (hsink);
  desc = g_strdup_printf ("rudpsrc port=0 caps=application/x-rtp "
      "feedback=false srtp-cipher=aes-128-gcm key=%s", key);
  hsrc = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_play (hsrc);
  to = lo_addr (src_port (el (hsrc, "rudpsrc")));
  inj = lo_socket (&iport);
  for (i = 0; i < 5; i++) {
    gssize n;
    GstBuffer *b;
    GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;

    fail_unless_equals_int (gst_harness_push (hsink,
            rudp_make_packet (0x77, 10 + i, 400)), GST_FLOW_OK);
    n = g_socket_receive (cap, (gchar *) d, sizeof (d), NULL, NULL);
    fail_unless_equals_int (n, 416);
    send_raw (inj, to, d, n);
    b = gst_harness_pull (hsrc);
    fail_unless_equals_int (gst_buffer_get_size (b), 400);
    fail_unless (gst_rtp_buffer_map (b, GST_MAP_READ, &rtp));
    fail_unless_equals_int (gst_rtp_buffer_get_seq (&rtp), 10 + i);
    fail_unless (((guint8 *) gst_rtp_buffer_get_payload (&rtp))[0] == 0x5a);
    gst_rtp_buffer_unmap (&rtp);
    gst_buffer_unref (b);
  }
  fail_unless_equals_uint64 (stat_u64 (el (hsrc, "rudpsrc"),
          "auth-failures"), 0);
  g_object_unref (to);
  g_object_unref (inj);
  g_object_unref (cap);
  gst_harness_teardown (hsrc);
  gst_harness_teardown (hsink);
}

GST_END_TEST;

/* Plaintext rudpsrc: a "notice" from an address other than the RTP's
 * sender is dropped and counted; from the sender it is taken. */
GST_START_TEST (test_plaintext_foreign_notice)
{
  GstHarness *hsrc = gst_harness_new_parse ("rudpsrc port=0 "
      "caps=application/x-rtp feedback=false");
  GSocket *snd, *third;
  GSocketAddress *to;
  guint16 sport, tport;
  GstRudpNotice nt = { 0 };
  guint i;

  gst_harness_play (hsrc);
  to = lo_addr (src_port (el (hsrc, "rudpsrc")));
  snd = lo_socket (&sport);
  third = lo_socket (&tport);
  send_buf (snd, to, rudp_make_packet (0x31, 1, 100), NULL);
  gst_buffer_unref (gst_harness_pull (hsrc));
  nt.ssrc = 0x31;
  nt.has_level = TRUE;
  nt.n_levels = 10;
  for (i = 0; i < 5; i++)
    send_buf (third, to, gst_rudp_notice_write (&nt), NULL);
  for (i = 0; i < 2000 && stat_u64 (el (hsrc, "rudpsrc"), "foreign-rtcp") < 5;
      i++)
    g_usleep (5000);
  fail_unless_equals_uint64 (stat_u64 (el (hsrc, "rudpsrc"), "foreign-rtcp"),
      5);
  fail_unless_equals_uint64 (stat_u64 (el (hsrc, "rudpsrc"),
          "notices-received"), 0);
  send_buf (snd, to, gst_rudp_notice_write (&nt), NULL);
  for (i = 0; i < 2000 && stat_u64 (el (hsrc, "rudpsrc"),
          "notices-received") < 1; i++)
    g_usleep (5000);
  fail_unless_equals_uint64 (stat_u64 (el (hsrc, "rudpsrc"),
          "notices-received"), 1);
  g_object_unref (to);
  g_object_unref (snd);
  g_object_unref (third);
  gst_harness_teardown (hsrc);
}

GST_END_TEST;

/* A key of the wrong length is a clear element error at start. */
GST_START_TEST (test_bad_key)
{
  GstElement *sink = gst_element_factory_make ("rudpsink", NULL);

  g_object_set (sink, "key", "0011", NULL);
  fail_unless_equals_int (gst_element_set_state (sink, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (sink, GST_STATE_NULL);
  gst_object_unref (sink);
}

GST_END_TEST;

static Suite *
rudpsrtp_suite (void)
{
  Suite *s = suite_create ("rudpsrtp");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_encrypted_loop);
  tcase_add_test (tc, test_wire_replay_wrong_key);
  tcase_add_test (tc, test_forged_feedback_srtp);
  tcase_add_test (tc, test_plaintext_foreign_feedback);
  tcase_add_test (tc, test_bad_key);
  tcase_add_test (tc, test_gcm);
  tcase_add_test (tc, test_plaintext_foreign_notice);
  return s;
}

GST_CHECK_MAIN (rudpsrtp);
