/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rudpsrc tests: loss counting from sequence numbers, the RTCP
 * feedback it sends and the RTT from the sender's answers, RTCP not
 * pushed downstream, and the stock chain rudpsrc ! rtpjitterbuffer !
 * rtpgstdepay behind a rudpsink, the ECN field read (and sent by
 * rudpsink ecn=true). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <netinet/in.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/check/gsttestclock.h>
#include <gst/rudp/rudp.h>
#include <gst/rtp/gstrtpbuffer.h>
#include "rudptestutil.h"
#include "elementstats.h"

static GSocket *
test_socket (GSocketAddress ** dest, gint port)
{
  GSocket *s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *any = g_inet_socket_address_new (lo, 0);

  fail_unless (g_socket_bind (s, any, FALSE, NULL));
  g_object_unref (any);
  *dest = g_inet_socket_address_new (lo, port);
  g_object_unref (lo);
  return s;
}

static void
send_buf (GSocket * s, GSocketAddress * dest, GstBuffer * buf)
{
  GstMapInfo map;

  gst_buffer_map (buf, &map, GST_MAP_READ);
  fail_unless_equals_int (g_socket_send_to (s, dest, (gchar *) map.data,
          map.size, NULL, NULL), map.size);
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
}

/* The frames @sink (a fakesink or appsink) rendered, once @want of them
 * are there or after 20 s: the jitterbuffer releases the last ones after
 * its latency, later on a loaded machine (polled, not a fixed sleep). */
static guint64
wait_rendered (GstElement * sink, guint64 want)
{
  guint64 frames = 0;
  guint i;

  for (i = 0; i < 2000; i++) {
    GstStructure *st;

    g_object_get (sink, "stats", &st, NULL);
    gst_structure_get_uint64 (st, "rendered", &frames);
    gst_structure_free (st);
    if (frames >= want)
      break;
    g_usleep (10000);
  }
  return frames;
}

/* A retransmission request goes out as a Generic NACK; the packet asked
 * for arrives marked as a retransmission (rtpjitterbuffer measures the
 * round trip of those only), the others do not. */
GST_START_TEST (test_nack_marks_retransmission)
{
  GstHarness *h = gst_harness_new_parse ("rudpsrc port=0 "
      "caps=\"application/x-rtp,media=application,clock-rate=90000,"
      "encoding-name=X-GST\"");
  GSocketAddress *dest;
  GSocket *s;
  guint8 data[1500];
  gssize n;
  guint nacks = 0, i;
  GstBuffer *b;

  gst_harness_play (h);
  s = test_socket (&dest, src_port (el (h, "rudpsrc")));
  send_buf (s, dest, rudp_make_packet (0xabc, 1000, 200));
  send_buf (s, dest, rudp_make_packet (0xabc, 1002, 200));
  for (i = 0; i < 2; i++) {
    b = gst_harness_pull (h);
    fail_if (GST_BUFFER_FLAG_IS_SET (b, GST_RTP_BUFFER_FLAG_RETRANSMISSION));
    gst_buffer_unref (b);
  }
  fail_unless (gst_harness_push_upstream_event (h,
          gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
              gst_structure_new ("GstRTPRetransmissionRequest", "seqnum",
                  G_TYPE_UINT, 1001, NULL))));
  /* the NACK at the sender's address (the feedback timer's reports
   * come there too) */
  g_socket_set_timeout (s, 20);
  while (nacks == 0 && (n = g_socket_receive (s, (gchar *) data,
              sizeof (data), NULL, NULL)) > 0) {
    GstBuffer *rb = gst_buffer_new_memdup (data, n);
    GArray *seqs = g_array_new (FALSE, FALSE, sizeof (guint16));
    guint32 media = 0;

    if (gst_rudp_nack_parse (rb, &media, seqs)) {
      fail_unless_equals_int (seqs->len, 1);
      fail_unless_equals_int (g_array_index (seqs, guint16, 0), 1001);
      fail_unless_equals_int (media, 0xabc);
      nacks++;
    }
    g_array_unref (seqs);
    gst_buffer_unref (rb);
  }
  fail_unless_equals_int (nacks, 1);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "nacks-sent"), 1);
  send_buf (s, dest, rudp_make_packet (0xabc, 1001, 200));
  send_buf (s, dest, rudp_make_packet (0xabc, 1003, 200));
  b = gst_harness_pull (h);
  fail_unless (GST_BUFFER_FLAG_IS_SET (b, GST_RTP_BUFFER_FLAG_RETRANSMISSION));
  gst_buffer_unref (b);
  b = gst_harness_pull (h);
  fail_if (GST_BUFFER_FLAG_IS_SET (b, GST_RTP_BUFFER_FLAG_RETRANSMISSION));
  gst_buffer_unref (b);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "rtx-recovered"),
      1);
  g_object_unref (s);
  g_object_unref (dest);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_loss_and_feedback)
{
  GstHarness *h = gst_harness_new_parse ("rudpsrc port=0 "
      "caps=\"application/x-rtp,media=application,clock-rate=90000,"
      "encoding-name=X-GST\" min-interval=20000000 feedback-interval=50000000");
  GSocketAddress *dest;
  GSocket *s;
  GstCaps *caps;
  guint i, pulled = 0, requests = 0;
  guint8 data[1500];
  gssize n;
  GstRudpRequest req, last = { 0 };

  /* the increase policy's properties and their defaults */
  {
    guint rtts, packets;
    guint64 itime;
    gboolean tcp;

    g_object_get (el (h, "rudpsrc"), "increase-rtts", &rtts,
        "increase-packets", &packets, "increase-time", &itime,
        "tcp-friendly", &tcp, NULL);
    fail_unless_equals_int (rtts, 1);
    fail_unless_equals_int (packets, 50);
    fail_unless_equals_uint64 (itime, GST_RUDP_DEFAULT_INCREASE_TIME);
    fail_unless (tcp);
    g_object_set (el (h, "rudpsrc"), "increase-time", (guint64) 0, NULL);
    g_object_get (el (h, "rudpsrc"), "increase-time", &itime, NULL);
    fail_unless_equals_uint64 (itime, 0);
    g_object_set (el (h, "rudpsrc"), "increase-packets", 30, NULL);
    g_object_get (el (h, "rudpsrc"), "increase-packets", &packets, NULL);
    fail_unless_equals_int (packets, 30);
  }
  gst_harness_play (h);
  s = test_socket (&dest, src_port (el (h, "rudpsrc")));
  /* 100 packets, every 10th lost, 2 ms apart */
  for (i = 0; i < 100; i++) {
    if (i % 10 != 5)
      send_buf (s, dest, rudp_make_packet (0xabc, 1000 + i, 200));
    g_usleep (2000);
  }
  /* an RTCP packet on the port (a notice) is consumed, not pushed */
  {
    GstRudpNotice nt = { 0 };

    nt.ssrc = 0xabc;
    nt.has_level = TRUE;
    nt.level = 0;
    nt.n_levels = 10;
    send_buf (s, dest, gst_rudp_notice_write (&nt));
  }
  for (i = 0; i < 90; i++) {
    GstBuffer *b = gst_harness_pull (h);

    fail_unless_equals_int (gst_buffer_get_size (b), 200);
    fail_unless (GST_BUFFER_DTS_IS_VALID (b) || GST_BUFFER_PTS_IS_VALID (b));
    gst_buffer_unref (b);
    pulled++;
  }
  /* a feedback sent after every packet arrived (the last one below):
   * waited for, not 50 ms of sleep, which a loaded machine may not give
   * the feedback timer */
  {
    guint64 fb0 = stat_u64 (el (h, "rudpsrc"), "feedback-sent");

    for (i = 0; i < 1000 && stat_u64 (el (h, "rudpsrc"), "feedback-sent") <=
        fb0; i++)
      g_usleep (10000);
    fail_unless (stat_u64 (el (h, "rudpsrc"), "feedback-sent") > fb0);
  }
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (caps != NULL);
  fail_unless_equals_string (gst_structure_get_string (gst_caps_get_structure
          (caps, 0), "encoding-name"), "X-GST");
  gst_caps_unref (caps);

  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "received"), 90);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "lost"), 10);
  fail_unless (stat_u64 (el (h, "rudpsrc"), "decreases") == 0);  /* level 0 already */
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "notices-received"), 1);
  /* the level never went up: every 10th lost keeps the loss-free stretch
   * under 30 packets; the wait (no RTT measured: the 100 ms initial RTT)
   * is step x RTT^2 = 100 packets/s of 200 bytes x (0.1 s)^2 = 1 s */
  fail_unless (stat_u64 (el (h, "rudpsrc"), "clean-packets") < 30);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "increases"), 0);
  fail_unless (stat_u64 (el (h, "rudpsrc"), "increase-wait") >=
      GST_SECOND - GST_MSECOND && stat_u64 (el (h, "rudpsrc"),
          "increase-wait") <= GST_SECOND);

  /* the feedback came back to the RTP sender's address: valid RTCP with
   * RR, TMMBR and the level (stopped first: the timer keeps sending) */
  gst_element_set_state (h->element, GST_STATE_NULL);
  g_socket_set_blocking (s, FALSE);
  while ((n = g_socket_receive (s, (gchar *) data, sizeof (data), NULL,
              NULL)) > 0) {
    GstBuffer *b = gst_buffer_new_memdup (data, n);

    fail_unless (gst_rudp_is_rtcp (data, n));
    fail_unless (gst_rudp_request_parse (b, &req));
    fail_unless (req.has_level && req.has_bitrate);
    fail_unless_equals_int (req.media_ssrc, 0xabc);
    fail_unless_equals_int (req.n_levels, 10);
    fail_unless_equals_uint64 (req.bitrate, (req.level + 1) * 20000 * 8);
    last = req;
    requests++;
    gst_buffer_unref (b);
  }
  fail_unless (requests >= 2, "%u", requests);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "feedback-sent"),
      requests);
  /* as of the last feedback: seqs 1005, 1015, ... were lost */
  fail_unless (last.ext_max_seq >= 1090 && last.ext_max_seq <= 1099);
  fail_unless_equals_int (last.packets_lost,
      (last.ext_max_seq - 1000 + 5) / 10);

  g_object_unref (s);
  g_object_unref (dest);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_rtt_from_notices)
{
  GstHarness *h = gst_harness_new_parse ("rudpsrc port=0 caps=application/x-rtp "
      "feedback-interval=10000000");
  GSocketAddress *dest;
  GSocket *s;
  guint i, answered = 0;
  GstRudpRequest req;
  guint8 data[1500];
  gssize n;
  GstStructure *st;
  guint64 srtt;

  gst_harness_play (h);
  s = test_socket (&dest, src_port (el (h, "rudpsrc")));
  g_socket_set_blocking (s, FALSE);
  /* a sender that answers each request 100 ms late, saying so in the
   * delay field: the RTT must not include the 100 ms (RFC 3550's DLSR).
   * The delay claimed is the one measured from the request's arrival, so
   * a test thread that oversleeps on a loaded machine still tells the
   * truth. */
  for (i = 0; i < 30; i++) {
    gboolean got = FALSE;
    gint64 t_req = 0;

    send_buf (s, dest, rudp_make_packet (0x55, i, 100));
    g_usleep (5000);
    /* the requests come every 10 ms, also while we sleep: answer the
     * newest of those waiting */
    while ((n = g_socket_receive (s, (gchar *) data, sizeof (data), NULL,
                NULL)) > 0) {
      GstBuffer *b = gst_buffer_new_memdup (data, n);

      fail_unless (gst_rudp_request_parse (b, &req));
      gst_buffer_unref (b);
      t_req = g_get_monotonic_time ();
      got = TRUE;
    }
    if (got) {
      GstRudpNotice nt = { 0 };

      g_usleep (100000);
      nt.ssrc = 0x55;
      nt.requester_ssrc = req.ssrc;
      nt.has_level = TRUE;
      nt.level = req.level;
      nt.n_levels = 10;
      nt.echo_timestamp = req.timestamp;
      nt.delay = gst_rudp_ntp_short ((g_get_monotonic_time () - t_req) *
          GST_USECOND);
      send_buf (s, dest, gst_rudp_notice_write (&nt));
      answered++;
    }
  }
  g_usleep (20000);
  g_object_get (el (h, "rudpsrc"), "stats", &st, NULL);
  fail_unless (gst_structure_get_uint64 (st, "srtt", &srtt));
  gst_structure_free (st);
  fail_unless (answered >= 3);
  /* loopback plus scheduling: well under the 100 ms the sender held it
   * (half of it: what a loaded machine's wakeups add stays far below) */
  fail_unless (srtt > 0 && srtt < 50 * GST_MSECOND, "srtt %" GST_TIME_FORMAT,
      GST_TIME_ARGS (srtt));
  g_object_unref (s);
  g_object_unref (dest);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The receiver core keeps running while no packet arrives: rounds end and
 * the RR + TMMBR feedback goes on every feedback-interval through a 2 s
 * outage, on the timer's GstClockIDs (driven here by a GstTestClock as
 * the system clock: all packets arrive at 1 s, then nothing until 3 s). */
GST_START_TEST (test_feedback_through_outage)
{
  GstClock *clock = gst_test_clock_new_with_start_time (GST_SECOND);
  GstTestClock *tc = GST_TEST_CLOCK (clock);
  GstHarness *h;
  GSocketAddress *dest;
  GSocket *s;
  guint i, requests = 0, wakeups = 0;
  guint64 fb0, rounds0;
  guint8 data[1500];
  gssize n;
  GstRudpRequest req;
  GstClockTime last_wakeup = 0;

  gst_system_clock_set_default (clock);
  h = gst_harness_new_parse ("rudpsrc port=0 caps=application/x-rtp "
      "min-interval=20000000 feedback-interval=200000000");
  gst_harness_play (h);
  s = test_socket (&dest, src_port (el (h, "rudpsrc")));
  for (i = 0; i < 20; i++)
    send_buf (s, dest, rudp_make_packet (0x77, 500 + i, 200));
  for (i = 0; i < 20; i++)
    gst_buffer_unref (gst_harness_pull (h));
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "received"), 20);
  /* the outage: the clock moves on, no packet arrives */
  fb0 = stat_u64 (el (h, "rudpsrc"), "feedback-sent");
  rounds0 = stat_u64 (el (h, "rudpsrc"), "rounds");
  while (TRUE) {
    GList *ids = NULL;
    GstClockTime t;

    fail_unless (gst_test_clock_timed_wait_for_multiple_pending_ids (tc, 1,
            2000, &ids), "no timer pending during the outage");
    t = gst_clock_id_get_time (ids->data);
    g_list_free_full (ids, (GDestroyNotify) gst_clock_id_unref);
    if (t > 3 * GST_SECOND)
      break;
    fail_unless (t > last_wakeup);
    last_wakeup = t;
    fail_unless (gst_test_clock_crank (tc));
    wakeups++;
  }
  /* the timer's next wakeup is pending: everything up to 3 s ran */
  fail_unless (wakeups >= 10 && wakeups <= 40, "%u wakeups", wakeups);
  /* one feedback per 200 ms: 1.2 s .. 3.0 s */
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "feedback-sent")
      - fb0, 10);
  /* the round that holds the packets ends in the outage (at 1.1 s: the
   * initial RTT); the empty rounds after it give no verdict */
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "rounds"),
      rounds0 + 1);
  gst_element_set_state (h->element, GST_STATE_NULL);
  g_socket_set_blocking (s, FALSE);
  while ((n = g_socket_receive (s, (gchar *) data, sizeof (data), NULL,
              NULL)) > 0) {
    GstBuffer *b = gst_buffer_new_memdup (data, n);

    fail_unless (gst_rudp_request_parse (b, &req));
    gst_buffer_unref (b);
    fail_unless (req.has_bitrate && req.has_level);
    fail_unless_equals_int (req.media_ssrc, 0x77);
    /* those of the outage report everything up to the last packet */
    if (requests >= fb0)
      fail_unless_equals_int (req.ext_max_seq, 519);
    fail_unless_equals_int (req.packets_lost, 0);
    requests++;
  }
  fail_unless_equals_uint64 (requests, stat_u64 (el (h, "rudpsrc"),
          "feedback-sent"));
  fail_unless (requests >= fb0 + 10);
  g_object_unref (s);
  g_object_unref (dest);
  gst_harness_teardown (h);
  gst_system_clock_set_default (NULL);
  gst_object_unref (clock);
}

GST_END_TEST;

static gboolean
bus_wait (GstElement * pipe, GstMessageType types, GstClockTime timeout,
    GstMessage ** out)
{
  GstBus *bus = gst_element_get_bus (pipe);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, timeout, types);

  gst_object_unref (bus);
  if (out)
    *out = m;
  else if (m)
    gst_message_unref (m);
  return m != NULL;
}

GST_START_TEST (test_stock_chain)
{
  GstElement *rx, *tx, *sink;
  GstMessage *m = NULL;
  gchar *desc;
  gint port;
  guint64 frames = 0;
  GstSample *sample = NULL;

  rx = gst_parse_launch ("rudpsrc name=src port=0 "
      "caps=\"application/x-rtp,media=application,clock-rate=90000,"
      "encoding-name=X-GST\" ! rtpjitterbuffer latency=100 ! rtpgstdepay ! "
      "fakesink name=out enable-last-sample=true", NULL);
  fail_unless (rx != NULL);
  fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  {
    GstElement *src = gst_bin_get_by_name (GST_BIN (rx), "src");

    port = src_port (src);
    gst_object_unref (src);
  }
  desc = g_strdup_printf ("videotestsrc num-buffers=20 ! "
      "video/x-raw,format=I420,width=64,height=48,framerate=25/1 ! "
      "rtpgstpay mtu=1000 config-interval=1 ! "
      "rudpsink host=127.0.0.1 port=%d rate=1600000", port);
  tx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (tx != NULL);
  gst_element_set_state (tx, GST_STATE_PLAYING);
  fail_unless (bus_wait (tx, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
          10 * GST_SECOND, &m));
  fail_unless_equals_int (GST_MESSAGE_TYPE (m), GST_MESSAGE_EOS);
  gst_message_unref (m);

  sink = gst_bin_get_by_name (GST_BIN (rx), "out");
  frames = wait_rendered (sink, 20);
  g_object_get (sink, "last-sample", &sample, NULL);
  fail_unless (sample != NULL);
  fail_unless_equals_string (gst_structure_get_name (gst_caps_get_structure
          (gst_sample_get_caps (sample), 0)), "video/x-raw");
  fail_unless_equals_int (gst_buffer_get_size (gst_sample_get_buffer
          (sample)), 64 * 48 * 3 / 2);
  gst_sample_unref (sample);
  gst_object_unref (sink);
  /* all 20 frames crossed (loopback, no loss) */
  fail_unless_equals_uint64 (frames, 20);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (tx);
  gst_object_unref (rx);
}

GST_END_TEST;

/* ECN: rudpsrc reads the ECN field of each packet (IP_RECVTOS): Not-ECT,
 * ECT(0), ECT(1) and CE datagrams sent with IP_TOS from a plain socket are
 * counted as such, all delivered, none lost; rudpsink ecn=true sends ECT(0)
 * (every packet it sends arrives ECN-capable), and without it none. */
GST_START_TEST (test_ecn)
{
  GstHarness *h = gst_harness_new_parse ("rudpsrc port=0 "
      "caps=\"application/x-rtp,media=application,clock-rate=90000,"
      "encoding-name=X-GST\"");
  static const gint tos[] = { 0x00, 0x02, 0x01, 0x03, 0xb8 | 0x02 };
  static const guint count[] = { 10, 10, 5, 3, 2 };
  GSocketAddress *dest;
  GSocket *s;
  guint i, k, seq = 2000, total = 0;
  GstElement *rx, *tx, *src;
  gchar *desc;
  gint port;
  gboolean on;

  gst_harness_play (h);
  s = test_socket (&dest, src_port (el (h, "rudpsrc")));
  for (k = 0; k < G_N_ELEMENTS (tos); k++) {
    fail_unless (g_socket_set_option (s, IPPROTO_IP, IP_TOS, tos[k], NULL));
    for (i = 0; i < count[k]; i++) {
      send_buf (s, dest, rudp_make_packet (0xabc, seq++, 200));
      total++;
      g_usleep (1000);
    }
  }
  for (i = 0; i < total; i++)
    gst_buffer_unref (gst_harness_pull (h));
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "received"), total);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "lost"), 0);
  /* ECT(0), ECT(1), CE, and ECT(0) under DSCP EF */
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "ect-received"),
      10 + 5 + 3 + 2);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "ce-marked"), 3);
  /* (level 0: nothing to halve) */
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "ce-decreases"), 0);
  /* the sender's notice marked CE is counted apart (and consumed) */
  {
    GstRudpNotice nt = { 0 };

    nt.ssrc = 0xabc;
    nt.has_level = TRUE;
    nt.level = 0;
    nt.n_levels = 10;
    fail_unless (g_socket_set_option (s, IPPROTO_IP, IP_TOS, 0x03, NULL));
    send_buf (s, dest, gst_rudp_notice_write (&nt));
    fail_unless (g_socket_set_option (s, IPPROTO_IP, IP_TOS, 0x02, NULL));
    send_buf (s, dest, gst_rudp_notice_write (&nt));
  }
  for (i = 0; i < 100 && stat_u64 (el (h, "rudpsrc"), "notices-received")
      < 2; i++)
    g_usleep (10000);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "notices-received"),
      2);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "ce-marked-rtcp"),
      1);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "ce-marked"), 3);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  g_object_unref (s);
  g_object_unref (dest);
  gst_harness_teardown (h);

  /* rudpsink ecn=true / false -> rudpsrc, then ecn=true over IPv6
   * (IPV6_TCLASS / IPV6_RECVTCLASS) */
  for (k = 0; k < 3; k++) {
    GstStructure *st;
    GstMessage *m = NULL;

    desc = g_strdup_printf ("rudpsrc name=src port=0 address=%s "
        "caps=\"application/x-rtp,media=application,clock-rate=90000,"
        "encoding-name=X-GST\" ! fakesink", k == 2 ? "::1" : "127.0.0.1");
    rx = gst_parse_launch (desc, NULL);
    g_free (desc);
    fail_unless (rx != NULL);
    fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE);
    src = gst_bin_get_by_name (GST_BIN (rx), "src");
    port = src_port (src);
    desc = g_strdup_printf ("videotestsrc num-buffers=5 ! "
        "video/x-raw,format=I420,width=64,height=48,framerate=25/1 ! "
        "rtpgstpay mtu=1000 ! rudpsink name=sink host=%s port=%d "
        "rate=1600000 ecn=%s", k == 2 ? "::1" : "127.0.0.1", port,
        k != 1 ? "true" : "false");
    tx = gst_parse_launch (desc, NULL);
    g_free (desc);
    fail_unless (tx != NULL);
    gst_element_set_state (tx, GST_STATE_PLAYING);
    fail_unless (bus_wait (tx, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
            10 * GST_SECOND, &m));
    fail_unless_equals_int (GST_MESSAGE_TYPE (m), GST_MESSAGE_EOS);
    gst_message_unref (m);
    {
      GstElement *sink = gst_bin_get_by_name (GST_BIN (tx), "sink");

      g_object_get (sink, "stats", &st, NULL);
      fail_unless (gst_structure_get_boolean (st, "ecn", &on));
      fail_unless_equals_int (on, k != 1);
      gst_structure_free (st);
      g_object_get (sink, "ecn", &on, NULL);
      fail_unless_equals_int (on, k != 1);
      gst_object_unref (sink);
    }
    for (i = 0; i < 1000 && stat_u64 (src, "received") < 5; i++)
      g_usleep (10000);
    fail_unless (stat_u64 (src, "received") >= 5);
    fail_unless_equals_uint64 (stat_u64 (src, "ect-received"),
        k != 1 ? stat_u64 (src, "received") : 0);
    fail_unless_equals_uint64 (stat_u64 (src, "ce-marked"), 0);
    gst_element_set_state (tx, GST_STATE_NULL);
    gst_element_set_state (rx, GST_STATE_NULL);
    gst_object_unref (src);
    gst_object_unref (tx);
    gst_object_unref (rx);
  }
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* NAT traversal: rudpsrc's hello, rudpsink's learn-peer */

#define NAT_KEY "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d"

typedef struct {
  GstElement *rx, *tx, *src, *sink, *out;
} NatPair;

static guint nat_buffers = 25;  /* frames the sender sends */

/* The sender to READY (its socket bound: bound-port), the receiver saying
 * hello to it, then, after @wait_us, the sender playing (@wait_us 0: the
 * sender plays 200 ms before the receiver starts). */
static void
nat_start (NatPair * p, const gchar * rx_opts, const gchar * tx_opts,
    gulong wait_us)
{
  gchar *desc;
  guint port;

  desc = g_strdup_printf ("videotestsrc num-buffers=%u is-live=true ! "
      "video/x-raw,format=I420,width=64,height=48,framerate=25/1 ! "
      "rtpgstpay mtu=1000 config-interval=1 ! "
      "rudpsink name=sink learn-peer=true rate=1600000 %s", nat_buffers,
      tx_opts);
  p->tx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (p->tx != NULL);
  p->sink = gst_bin_get_by_name (GST_BIN (p->tx), "sink");
  fail_unless (gst_element_set_state (p->tx, GST_STATE_READY) ==
      GST_STATE_CHANGE_SUCCESS);
  g_object_get (p->sink, "bound-port", &port, NULL);
  fail_unless (port > 0);
  /* 0: the sender plays first, its render waits for the hello */
  if (wait_us == 0) {
    fail_unless (gst_element_set_state (p->tx, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE);
    g_usleep (200000);
  }
  desc = g_strdup_printf ("rudpsrc name=src address=127.0.0.1 port=0 "
      "hello-host=127.0.0.1 hello-port=%u hello-interval=50000000 %s "
      "caps=\"application/x-rtp,media=application,clock-rate=90000,"
      "encoding-name=X-GST\" ! rtpjitterbuffer latency=100 ! rtpgstdepay ! "
      "fakesink name=out", port, rx_opts);
  p->rx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (p->rx != NULL);
  p->src = gst_bin_get_by_name (GST_BIN (p->rx), "src");
  p->out = gst_bin_get_by_name (GST_BIN (p->rx), "out");
  fail_unless (gst_element_set_state (p->rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  if (wait_us) {
    g_usleep (wait_us);
    fail_unless (gst_element_set_state (p->tx, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE);
  }
}

static void
nat_stop (NatPair * p)
{
  gst_element_set_state (p->tx, GST_STATE_NULL);
  gst_element_set_state (p->rx, GST_STATE_NULL);
  gst_object_unref (p->src);
  gst_object_unref (p->sink);
  gst_object_unref (p->out);
  gst_object_unref (p->tx);
  gst_object_unref (p->rx);
}

static void
nat_delivered (const gchar * rx_opts, const gchar * tx_opts, gulong wait_us)
{
  NatPair p;
  GstMessage *m = NULL;
  GstStructure *st;
  guint64 frames = 0;
  gchar *want;
  const gchar *peer;

  nat_start (&p, rx_opts, tx_opts, wait_us);
  fail_unless (bus_wait (p.tx, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
          10 * GST_SECOND, &m));
  fail_unless_equals_int (GST_MESSAGE_TYPE (m), GST_MESSAGE_EOS);
  gst_message_unref (m);
  frames = wait_rendered (p.out, 25);
  /* every frame crossed, none was due before the hello */
  fail_unless_equals_uint64 (frames, 25);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "dropped-no-peer"), 0);
  fail_unless (stat_u64 (p.sink, "hellos") >= 1);
  fail_unless (stat_u64 (p.src, "hellos-sent") >= stat_u64 (p.sink,
          "hellos"));
  fail_unless_equals_uint64 (stat_u64 (p.src, "hello-errors"), 0);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "hellos-foreign"), 0);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "hellos-forged"), 0);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "auth-failures"), 0);
  /* the destination: the receiver's own socket, where the hello left */
  g_object_get (p.sink, "stats", &st, NULL);
  peer = gst_structure_get_string (st, "peer");
  want = g_strdup_printf ("127.0.0.1:%d", src_port (p.src));
  fail_unless_equals_string (peer, want);
  g_free (want);
  gst_structure_free (st);
  /* the receiver's feedback came back through the same mapping: the
   * sender's answers reached it */
  if (strstr (tx_opts, "rate-control=receiver")) {
    fail_unless (stat_u64 (p.sink, "feedback-received") > 0);
    fail_unless (stat_u64 (p.src, "notices-received") > 0);
  }
  nat_stop (&p);
}

GST_START_TEST (test_learn_peer)
{
  nat_delivered ("hello-id=7", "host=127.0.0.1 hello-id=7 "
      "rate-control=receiver", 300000);
  /* SRTP: the hello is SRTCP */
  nat_delivered ("hello-id=8 key=" NAT_KEY, "host=127.0.0.1 hello-id=8 "
      "rate-control=receiver key=" NAT_KEY, 300000);
  /* the sender playing at once, fixed rate: the first frames (rtpgstpay's
   * caps among them) wait for the hello, none is lost */
  nat_delivered ("hello-id=12", "host=127.0.0.1 hello-id=12", 0);
}

GST_END_TEST;

/* A hello counts only from the address the sender was given (no
 * reflection) and, keyed, only as authentic SRTCP; until one counts
 * nothing reaches the receiver. */
static void
nat_refused (const gchar * rx_opts, const gchar * tx_opts,
    const gchar * counter)
{
  NatPair p;
  GstMessage *m = NULL;
  GstStructure *st;

  nat_start (&p, rx_opts, tx_opts, 300000);
  /* render waits for a hello that never counts: no EOS, nothing queued */
  fail_if (bus_wait (p.tx, GST_MESSAGE_EOS | GST_MESSAGE_ERROR,
          GST_SECOND, &m));
  fail_unless (stat_u64 (p.src, "hellos-sent") >= 10);
  fail_unless (stat_u64 (p.sink, counter) >= 10, "%s %" G_GUINT64_FORMAT,
      counter, stat_u64 (p.sink, counter));
  fail_unless_equals_uint64 (stat_u64 (p.sink, "hellos"), 0);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "packets-sent"), 0);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "queued-bytes"), 0);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "dropped-no-peer"), 0);
  fail_unless_equals_uint64 (stat_u64 (p.src, "received"), 0);
  g_object_get (p.sink, "stats", &st, NULL);
  fail_unless_equals_string (gst_structure_get_string (st, "peer"), "");
  gst_structure_free (st);
  nat_stop (&p);
}

GST_START_TEST (test_learn_peer_refused)
{
  /* the control peer is 127.0.0.2; the hellos come from 127.0.0.1 */
  nat_refused ("hello-id=9", "host=127.0.0.2 hello-id=9", "hellos-foreign");
  /* a plain hello to a keyed sink */
  nat_refused ("hello-id=10", "host=127.0.0.1 hello-id=10 key=" NAT_KEY,
      "hellos-forged");
  /* a hello naming another session */
  nat_refused ("hello-id=14", "host=127.0.0.1 hello-id=13", "hellos-unknown");
  /* SRTCP under another key: not authentic either (it cannot be told
   * from other forged SRTCP: counted as an authentication failure) */
  nat_refused ("hello-id=11 key=" NAT_KEY,
      "host=127.0.0.1 hello-id=11 "
      "key=ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d",
      "auth-failures");
}

GST_END_TEST;

/* The NAT re-maps the receiver (a hello from a new port, counter higher):
 * the destination moves there; the same hello again is a replay. */
GST_START_TEST (test_learn_peer_moved)
{
  NatPair p;
  GSocketAddress *dest, *local;
  GSocket *s;
  guint8 hello[GST_RUDP_HELLO_SIZE], data[1500];
  GstStructure *st;
  gchar *want;
  guint port;
  gssize n;

  nat_buffers = 100;            /* 4 s: the flow runs while it moves */
  nat_start (&p, "hello-id=16", "host=127.0.0.1 hello-id=16", 0);
  nat_buffers = 25;
  g_usleep (300000);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "hellos"), 1);
  g_object_get (p.sink, "bound-port", &port, NULL);
  s = test_socket (&dest, port);
  gst_rudp_hello_write (hello, 0x1234, 16, g_get_real_time () + 1000000000);
  fail_unless_equals_int (g_socket_send_to (s, dest, (gchar *) hello,
          sizeof (hello), NULL, NULL), sizeof (hello));
  /* the RTP comes here now */
  g_socket_set_timeout (s, 2);
  n = g_socket_receive (s, (gchar *) data, sizeof (data), NULL, NULL);
  fail_unless (n >= 12 && (data[0] >> 6) == 2 && !gst_rudp_is_rtcp (data, n));
  fail_unless_equals_uint64 (stat_u64 (p.sink, "hellos-moved"), 1);
  local = g_socket_get_local_address (s, NULL);
  want = g_strdup_printf ("127.0.0.1:%u", g_inet_socket_address_get_port
      (G_INET_SOCKET_ADDRESS (local)));
  g_object_get (p.sink, "stats", &st, NULL);
  fail_unless_equals_string (gst_structure_get_string (st, "peer"), want);
  gst_structure_free (st);
  g_free (want);
  g_object_unref (local);
  /* replayed: counted, nothing moves */
  fail_unless_equals_int (g_socket_send_to (s, dest, (gchar *) hello,
          sizeof (hello), NULL, NULL), sizeof (hello));
  for (guint i = 0; i < 1000 && stat_u64 (p.sink, "hellos-replayed") == 0; i++)
    g_usleep (10000);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "hellos-replayed"), 1);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "hellos-moved"), 1);
  nat_stop (&p);
  g_object_unref (s);
  g_object_unref (dest);
}

GST_END_TEST;

/* Runs the timers pending up to @until on the test clock. */
static void
crank_to (GstTestClock * tc, GstClockTime until)
{
  for (;;) {
    GList *ids = NULL;
    GstClockTime t;

    if (!gst_test_clock_timed_wait_for_multiple_pending_ids (tc, 1, 2000,
            &ids))
      return;
    t = gst_clock_id_get_time (ids->data);
    g_list_free_full (ids, (GDestroyNotify) gst_clock_id_unref);
    if (t > until)
      return;
    fail_unless (gst_test_clock_crank (tc));
  }
}

/* The next hello on @s (within a second of real time), or FALSE. */
static gboolean
next_hello (GSocket * s, gint from_port, guint64 * counter)
{
  guint8 data[1500];
  GSocketAddress *from = NULL;
  gssize n;
  guint32 ssrc;
  guint64 id;
  gboolean ok;

  g_socket_set_timeout (s, 1);
  n = g_socket_receive_from (s, &from, (gchar *) data, sizeof (data), NULL,
      NULL);
  if (n < 0)
    return FALSE;
  ok = gst_rudp_hello_parse (data, n, &ssrc, &id, counter);
  fail_unless (ok, "not a hello (%d bytes)", (gint) n);
  fail_unless_equals_uint64 (id, 99);
  /* from the socket the RTP arrives on */
  fail_unless_equals_int (g_inet_socket_address_get_port
      (G_INET_SOCKET_ADDRESS (from)), from_port);
  g_object_unref (from);
  return TRUE;
}

/* On a test clock: a hello at once and every hello-interval until RTP
 * arrives, then one keepalive-interval after the last one. */
GST_START_TEST (test_hello_keepalive)
{
  GstClock *clock = gst_test_clock_new_with_start_time (GST_SECOND);
  GstTestClock *tc = GST_TEST_CLOCK (clock);
  GstHarness *h;
  GSocketAddress *dest, *rtp_dest;
  GSocket *s;
  guint64 c0, c;
  gchar *desc;
  gint sport;

  gst_system_clock_set_default (clock);
  s = test_socket (&dest, 0);
  g_object_unref (dest);
  {
    GSocketAddress *a = g_socket_get_local_address (s, NULL);

    sport = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (a));
    g_object_unref (a);
  }
  desc = g_strdup_printf ("rudpsrc address=127.0.0.1 port=0 "
      "caps=application/x-rtp feedback=false hello-host=127.0.0.1 "
      "hello-port=%d hello-id=99 hello-interval=1000000000 "
      "keepalive-interval=15000000000", sport);
  h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_play (h);

  /* at 1 s (start), 2 s, 3 s */
  fail_unless (next_hello (s, src_port (el (h, "rudpsrc")), &c0));
  crank_to (tc, 3 * GST_SECOND);
  fail_unless (next_hello (s, src_port (el (h, "rudpsrc")), &c));
  fail_unless_equals_uint64 (c, c0 + 1);
  fail_unless (next_hello (s, src_port (el (h, "rudpsrc")), &c));
  fail_unless_equals_uint64 (c, c0 + 2);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "hellos-sent"), 3);

  /* RTP arrives at 3 s: the next hello is the keepalive at 3 + 15 s */
  {
    GSocket *rs = test_socket (&rtp_dest, src_port (el (h, "rudpsrc")));

    send_buf (rs, rtp_dest, rudp_make_packet (0x55, 1, 200));
    gst_buffer_unref (gst_harness_pull (h));
    g_object_unref (rs);
    g_object_unref (rtp_dest);
  }
  crank_to (tc, 18 * GST_SECOND - 1);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "hellos-sent"), 3);
  crank_to (tc, 18 * GST_SECOND);
  fail_unless (next_hello (s, src_port (el (h, "rudpsrc")), &c));
  fail_unless_equals_uint64 (c, c0 + 3);
  fail_unless_equals_uint64 (gst_clock_get_time (clock), 18 * GST_SECOND);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "hellos-sent"), 4);
  fail_unless_equals_uint64 (stat_u64 (el (h, "rudpsrc"), "hello-errors"), 0);
  gst_harness_teardown (h);
  g_object_unref (s);
  gst_system_clock_set_default (NULL);
  gst_object_unref (clock);
}

GST_END_TEST;

/* A RECONFIGURE mid-flow (a muxer linking a pad downstream) makes a
 * source renegotiate; its ALLOCATION query is serialized, and
 * rtpjitterbuffer holds serialized queries until its playout buffer has
 * drained. rudpsrc answers it itself: no ALLOCATION query reaches the
 * jitterbuffer, and every datagram is read while the jitterbuffer still
 * holds the first ones (a 10 s playout buffer; before, the streaming
 * thread waited those 10 s and the kernel dropped what did not fit). */
static GstPadProbeReturn
count_allocation (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  if (GST_QUERY_TYPE (GST_PAD_PROBE_INFO_QUERY (info)) ==
      GST_QUERY_ALLOCATION)
    g_atomic_int_inc ((gint *) data);
  return GST_PAD_PROBE_OK;
}

GST_START_TEST (test_no_wait_behind_playout_buffer)
{
  GstElement *rx, *src, *jb;
  GstPad *jsink, *out;
  GSocketAddress *dest;
  GSocket *s;
  gint allocation = 0;
  guint i, waited;

  rx = gst_parse_launch ("rudpsrc name=src port=0 "
      "caps=\"application/x-rtp,media=application,clock-rate=90000,"
      "encoding-name=X-GST\" ! rtpjitterbuffer name=jb latency=10000 ! "
      "fakesink name=out sync=false async=false", NULL);
  fail_unless (rx != NULL);
  src = gst_bin_get_by_name (GST_BIN (rx), "src");
  jb = gst_bin_get_by_name (GST_BIN (rx), "jb");
  jsink = gst_element_get_static_pad (jb, "sink");
  gst_pad_add_probe (jsink, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
      count_allocation, &allocation, NULL);
  fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  s = test_socket (&dest, src_port (src));
  for (i = 0; i < 10; i++)
    send_buf (s, dest, rudp_make_packet (0xabc, 100 + i, 500));
  for (waited = 0; stat_u64 (src, "received") < 10 && waited < 500; waited++)
    g_usleep (10000);
  fail_unless_equals_uint64 (stat_u64 (src, "received"), 10);
  /* downstream asks for renegotiation */
  {
    GstElement *sink = gst_bin_get_by_name (GST_BIN (rx), "out");

    out = gst_element_get_static_pad (sink, "sink");
    gst_pad_push_event (out, gst_event_new_reconfigure ());
    gst_object_unref (sink);
  }
  for (i = 10; i < 60; i++) {
    send_buf (s, dest, rudp_make_packet (0xabc, 100 + i, 500));
    g_usleep (2000);
  }
  /* read while the jitterbuffer holds everything (its latency: 10 s) */
  for (waited = 0; stat_u64 (src, "received") < 60 && waited < 500; waited++)
    g_usleep (10000);
  fail_unless_equals_uint64 (stat_u64 (src, "received"), 60);
  fail_unless_equals_int (g_atomic_int_get (&allocation), 0);
  fail_unless_equals_uint64 (stat_u64 (src, "kernel-drops"), 0);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (out);
  gst_object_unref (jsink);
  gst_object_unref (jb);
  gst_object_unref (src);
  gst_object_unref (rx);
  g_object_unref (s);
  g_object_unref (dest);
}

GST_END_TEST;

/* Kernel receive-buffer drops are counted: with a tiny buffer and the
 * streaming thread held (a blocking probe), a burst overflows the socket;
 * kernel-drops says how many datagrams the kernel dropped, and they are
 * the ones the sequence numbers find lost. A buffer the kernel cannot
 * give (G_MAXINT: the kernel caps at INT_MAX / 2 even for root) posts a
 * warning and reports what it gave. */
static GstPadProbeReturn
hold (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  return GST_PAD_PROBE_OK;
}

GST_START_TEST (test_kernel_drops)
{
  GstHarness *h = gst_harness_new_parse ("rudpsrc port=0 buffer-size=4096 "
      "caps=\"application/x-rtp,media=application,clock-rate=90000,"
      "encoding-name=X-GST\"");
  GstElement *src = el (h, "rudpsrc");
  GSocketAddress *dest;
  GSocket *s;
  GstPad *pad;
  gulong id;
  guint i, waited;
  guint64 drops, received, lost;
  gint granted = 0;
  GstStructure *st;

  gst_harness_play (h);
  g_object_get (src, "stats", &st, NULL);
  fail_unless (gst_structure_get_int (st, "buffer-size-granted", &granted));
  gst_structure_free (st);
  fail_unless (granted >= 4096);
  s = test_socket (&dest, src_port (src));
  send_buf (s, dest, rudp_make_packet (0xabc, 10, 1000));
  gst_buffer_unref (gst_harness_pull (h));
  pad = gst_element_get_static_pad (src, "src");
  id = gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BLOCK_DOWNSTREAM, hold,
      NULL, NULL);
  /* the first of these is taken and held in the probe; the rest wait in
   * the socket, which holds a few */
  for (i = 11; i < 111; i++)
    send_buf (s, dest, rudp_make_packet (0xabc, i, 1000));
  drops = stat_u64 (src, "kernel-drops");
  fail_unless (drops > 50, "only %" G_GUINT64_FORMAT " dropped", drops);
  gst_pad_remove_probe (pad, id);
  gst_object_unref (pad);
  /* what the socket held is read; then one more, after the gap */
  for (waited = 0; waited < 500; waited++) {
    received = stat_u64 (src, "received");
    if (received + drops == 101)
      break;
    g_usleep (10000);
  }
  fail_unless_equals_uint64 (received + drops, 101);
  send_buf (s, dest, rudp_make_packet (0xabc, 111, 1000));
  for (waited = 0; waited < 500; waited++) {
    received = stat_u64 (src, "received");
    lost = stat_u64 (src, "lost");
    if (received + lost == 102)
      break;
    g_usleep (10000);
  }
  fail_unless_equals_uint64 (received + lost, 102);
  fail_unless_equals_uint64 (stat_u64 (src, "kernel-drops"), drops);
  fail_unless_equals_uint64 (lost, drops);
  gst_harness_teardown (h);
  g_object_unref (s);
  g_object_unref (dest);

  /* more than the kernel gives: a warning, and what it gave */
  {
    GstElement *p = gst_parse_launch ("rudpsrc name=src port=0 "
        "buffer-size=2147483647 ! fakesink async=false", NULL);
    GstMessage *m;

    fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE);
    m = gst_bus_timed_pop_filtered (GST_ELEMENT_BUS (p), 5 * GST_SECOND,
        GST_MESSAGE_WARNING | GST_MESSAGE_ERROR);
    fail_unless (m != NULL);
    fail_unless_equals_int (GST_MESSAGE_TYPE (m), GST_MESSAGE_WARNING);
    gst_message_unref (m);
    src = gst_bin_get_by_name (GST_BIN (p), "src");
    g_object_get (src, "stats", &st, NULL);
    fail_unless (gst_structure_get_int (st, "buffer-size-granted", &granted));
    gst_structure_free (st);
    fail_unless (granted > 0 && granted < G_MAXINT);
    gst_object_unref (src);
    gst_element_set_state (p, GST_STATE_NULL);
    gst_object_unref (p);
  }
}

GST_END_TEST;

/* EOS sent to the element ends the flow after what the socket holds:
 * datagrams that arrived while the streaming thread was busy are pushed
 * before the EOS. */
GST_START_TEST (test_eos_drains)
{
  GstHarness *h = gst_harness_new_parse ("rudpsrc port=0 "
      "caps=\"application/x-rtp,media=application,clock-rate=90000,"
      "encoding-name=X-GST\"");
  GstElement *src = el (h, "rudpsrc");
  GSocketAddress *dest;
  GSocket *s;
  GstPad *pad;
  gulong id;
  guint i, pulled = 0;
  GstEvent *ev;
  gboolean eos = FALSE;

  gst_harness_play (h);
  s = test_socket (&dest, src_port (src));
  pad = gst_element_get_static_pad (src, "src");
  id = gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BLOCK_DOWNSTREAM, hold,
      NULL, NULL);
  for (i = 0; i < 20; i++)
    send_buf (s, dest, rudp_make_packet (0xabc, 500 + i, 300));
  fail_unless (gst_element_send_event (src, gst_event_new_eos ()));
  gst_pad_remove_probe (pad, id);
  gst_object_unref (pad);
  while (!eos) {
    GstBuffer *b = gst_harness_try_pull (h);

    if (b) {
      gst_buffer_unref (b);
      pulled++;
      continue;
    }
    while ((ev = gst_harness_try_pull_event (h))) {
      if (GST_EVENT_TYPE (ev) == GST_EVENT_EOS)
        eos = TRUE;
      gst_event_unref (ev);
    }
    if (!eos)
      g_usleep (10000);
  }
  /* the buffers before the EOS (the harness keeps them in order) */
  while (gst_harness_buffers_in_queue (h) > 0) {
    gst_buffer_unref (gst_harness_pull (h));
    pulled++;
  }
  fail_unless_equals_int (pulled, 20);
  fail_unless_equals_uint64 (stat_u64 (src, "received"), 20);
  gst_harness_teardown (h);
  g_object_unref (s);
  g_object_unref (dest);
}

GST_END_TEST;

static Suite *
rudpsrc_suite (void)
{
  Suite *s = suite_create ("rudpsrc");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_loss_and_feedback);
  tcase_add_test (tc, test_rtt_from_notices);
  tcase_add_test (tc, test_feedback_through_outage);
  tcase_add_test (tc, test_stock_chain);
  tcase_add_test (tc, test_ecn);
  tcase_add_test (tc, test_learn_peer);
  tcase_add_test (tc, test_learn_peer_refused);
  tcase_add_test (tc, test_hello_keepalive);
  tcase_add_test (tc, test_learn_peer_moved);
  tcase_add_test (tc, test_no_wait_behind_playout_buffer);
  tcase_add_test (tc, test_kernel_drops);
  tcase_add_test (tc, test_eos_drains);
  tcase_add_test (tc, test_nack_marks_retransmission);
  return s;
}

GST_CHECK_MAIN (rudpsrc);
