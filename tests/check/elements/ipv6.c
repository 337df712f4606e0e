/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — every network element over IPv6 loopback (::1): erapsink →
 * erapsrc (properties and erap:// URIs), rudpsink → rudpsrc with the
 * receiver's rate-level feedback flowing back, ctcpsink → a stock
 * tcpserversrc; byte-exact where the transport is reliable. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include "twoflownet.h"
#include "elementstats.h"

/* whether this host can bind ::1 (a container may run without IPv6) */
static gboolean
have_ipv6 (void)
{
  GSocket *s = twoflow_net_udp_open ("::1", 0, 0, 0, 0, NULL);

  if (!s)
    return FALSE;
  g_object_unref (s);
  return TRUE;
}

static void
write_random_file (const gchar * path, gsize size)
{
  guint8 *data = g_malloc (size);
  GRand *r = g_rand_new_with_seed (6);
  gsize i;

  for (i = 0; i < size; i++)
    data[i] = g_rand_int (r) & 0xff;
  fail_unless (g_file_set_contents (path, (gchar *) data, size, NULL));
  g_rand_free (r);
  g_free (data);
}

static void
assert_same_file (const gchar * a, const gchar * b)
{
  gchar *da, *db;
  gsize la, lb;

  fail_unless (g_file_get_contents (a, &da, &la, NULL));
  fail_unless (g_file_get_contents (b, &db, &lb, NULL));
  fail_unless_equals_uint64 (lb, la);
  fail_unless (memcmp (da, db, la) == 0, "contents differ");
  g_free (da);
  g_free (db);
}

static GstElement *
launch (const gchar * desc)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);

  fail_unless (p != NULL && err == NULL, "%s: %s", desc,
      err ? err->message : "");
  return p;
}

/* waits for EOS, failing on an error or a warning (with its text) */
static void
wait_eos (GstElement * pipeline, GstClockTime timeout)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, timeout,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
  GError *err = NULL;

  fail_unless (m != NULL, "no EOS within %" GST_TIME_FORMAT,
      GST_TIME_ARGS (timeout));
  if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR)
    gst_message_parse_error (m, &err, NULL);
  else if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_WARNING)
    gst_message_parse_warning (m, &err, NULL);
  fail_unless (GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS, "%s: %s",
      GST_MESSAGE_TYPE_NAME (m), err ? err->message : "");
  gst_message_unref (m);
  gst_object_unref (bus);
}

/* A 1 MB file from erapsink to erapsrc over ::1; @rx_fmt and @tx_fmt are
 * the two launch lines (%s the file, %u the receiver's port). */
static void
erap_transfer (const gchar * rx_fmt, const gchar * tx_fmt)
{
  const gsize size = 1000 * 1000;
  gchar *dir = g_dir_make_tmp ("erap6-XXXXXX", NULL);
  gchar *in = g_build_filename (dir, "in.bin", NULL);
  gchar *out = g_build_filename (dir, "out.bin", NULL);
  GstElement *rx, *tx, *src, *sink;
  gchar *desc;
  guint port;

  write_random_file (in, size);
  desc = g_strdup_printf (rx_fmt, out);
  rx = launch (desc);
  g_free (desc);
  fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  src = gst_bin_get_by_name (GST_BIN (rx), "src");
  g_object_get (src, "port", &port, NULL);
  fail_unless (port > 0);
  desc = g_strdup_printf (tx_fmt, in, port);
  tx = launch (desc);
  g_free (desc);
  fail_unless (gst_element_set_state (tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  wait_eos (tx, 30 * GST_SECOND);
  wait_eos (rx, 30 * GST_SECOND);

  sink = gst_bin_get_by_name (GST_BIN (tx), "sink");
  fail_unless_equals_uint64 (stat_u64 (sink, "bytes-acked"), size);
  /* every datagram came from the one IPv6 sender */
  fail_unless_equals_uint64 (stat_u64 (src, "foreign"), 0);
  fail_unless (stat_u64 (src, "acks-sent") > 0);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (src);
  gst_object_unref (tx);
  gst_object_unref (rx);

  assert_same_file (in, out);
  g_unlink (in);
  g_unlink (out);
  g_rmdir (dir);
  g_free (in);
  g_free (out);
  g_free (dir);
}

/* erapsink's default bind-address is 0.0.0.0: to an IPv6 receiver it
 * binds :: instead (it failed with "not of the local socket's address
 * family" before) */
GST_START_TEST (test_erap_properties)
{
  fail_unless (have_ipv6 (), "cannot bind ::1");
  erap_transfer ("erapsrc name=src address=::1 port=0 ! filesink "
      "location=%s", "filesrc location=%s blocksize=16384 ! erapsink "
      "name=sink host=::1 port=%u initial-rate=20000000");
}

GST_END_TEST;

GST_START_TEST (test_erap_explicit_bind)
{
  fail_unless (have_ipv6 (), "cannot bind ::1");
  erap_transfer ("erapsrc name=src address=:: port=0 ! filesink "
      "location=%s", "filesrc location=%s blocksize=16384 ! erapsink "
      "name=sink host=::1 port=%u bind-address=::1 initial-rate=20000000");
}

GST_END_TEST;

GST_START_TEST (test_erap_uris)
{
  fail_unless (have_ipv6 (), "cannot bind ::1");
  /* the URI of the receiver takes port 0 through the port property: the
   * test needs a free port; the sender's URI carries everything */
  erap_transfer ("erapsrc name=src uri=erap://[::1]:5004?linger=200000000 "
      "port=0 ! filesink location=%s", "filesrc location=%s blocksize=16384 "
      "! erapsink name=sink uri=erap://[::1]:%u?"
      "congestion-control=libra&initial-rate=20000000");
}

GST_END_TEST;

/* a v4 bind address and a v6 receiver: a clear error, not a crash */
GST_START_TEST (test_erap_family_mismatch)
{
  GstElement *p;
  GstBus *bus;
  GstMessage *m;
  GError *err = NULL;

  fail_unless (have_ipv6 (), "cannot bind ::1");
  p = launch ("fakesrc num-buffers=1 ! erapsink host=::1 port=5004 "
      "bind-address=127.0.0.1");
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PLAYING),
      GST_STATE_CHANGE_FAILURE);
  bus = gst_element_get_bus (p);
  m = gst_bus_timed_pop_filtered (bus, GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (m != NULL);
  gst_message_parse_error (m, &err, NULL);
  gst_message_unref (m);
  g_clear_error (&err);
  gst_object_unref (bus);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
}

GST_END_TEST;

GST_START_TEST (test_bind_address_for)
{
  gchar *s;

  s = twoflow_net_bind_address_for ("0.0.0.0", "::1");
  fail_unless_equals_string (s, "::");
  g_free (s);
  s = twoflow_net_bind_address_for ("0.0.0.0", "127.0.0.1");
  fail_unless_equals_string (s, "0.0.0.0");
  g_free (s);
  /* an explicit address is never changed, even when it cannot work */
  s = twoflow_net_bind_address_for ("127.0.0.1", "::1");
  fail_unless_equals_string (s, "127.0.0.1");
  g_free (s);
  s = twoflow_net_bind_address_for ("::1", "::1");
  fail_unless_equals_string (s, "::1");
  g_free (s);
  /* localhost has an IPv4 address (/etc/hosts): stays IPv4 */
  s = twoflow_net_bind_address_for ("0.0.0.0", "localhost");
  fail_unless_equals_string (s, "0.0.0.0");
  g_free (s);
}

GST_END_TEST;

/* RTP over rUDP to ::1, the receiver choosing the rate level: all frames
 * cross, and the feedback (requests) and the sender's notices cross back,
 * so both ends measure an RTT */
GST_START_TEST (test_rudp)
{
  GstElement *rx, *tx, *src, *out, *sink;
  GstStructure *st;
  guint64 rendered = 0;
  gchar *desc;
  gint port = 0;

  fail_unless (have_ipv6 (), "cannot bind ::1");
  rx = launch ("rudpsrc name=src address=::1 port=0 "
      "feedback-interval=20000000 caps=\"application/x-rtp,"
      "media=application,clock-rate=90000,encoding-name=X-GST\" ! "
      "rtpjitterbuffer latency=100 ! rtpgstdepay ! "
      "fakesink name=out sync=false");
  fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  src = gst_bin_get_by_name (GST_BIN (rx), "src");
  g_object_get (src, "stats", &st, NULL);
  fail_unless (gst_structure_get_int (st, "port", &port));
  gst_structure_free (st);
  fail_unless (port > 0);
  desc = g_strdup_printf ("videotestsrc num-buffers=50 ! "
      "video/x-raw,format=I420,width=64,height=48,framerate=25/1 ! "
      "rtpgstpay mtu=1000 config-interval=1 ! rudpsink name=sink host=::1 "
      "port=%d rate-control=receiver", port);
  tx = launch (desc);
  g_free (desc);
  fail_unless (gst_element_set_state (tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  wait_eos (tx, 20 * GST_SECOND);

  /* the jitterbuffer releases the last frames after its latency, later
   * on a loaded machine: polled for up to 20 s, not a fixed 300 ms */
  out = gst_bin_get_by_name (GST_BIN (rx), "out");
  for (guint i = 0; i < 2000; i++) {
    g_object_get (out, "stats", &st, NULL);
    gst_structure_get_uint64 (st, "rendered", &rendered);
    gst_structure_free (st);
    if (rendered >= 50)
      break;
    g_usleep (10000);
  }
  fail_unless_equals_uint64 (rendered, 50);
  sink = gst_bin_get_by_name (GST_BIN (tx), "sink");
  fail_unless (stat_u64 (sink, "feedback-received") > 0);
  fail_unless_equals_uint64 (stat_u64 (sink, "send-errors"), 0);
  fail_unless (stat_u64 (src, "srtt") > 0);

  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (out);
  gst_object_unref (src);
  gst_object_unref (tx);
  gst_object_unref (rx);
}

GST_END_TEST;

/* ctcpsink (controlled mode, 4 segments) to tcpserversrc host=::1:
 * byte-exact, and TCP_INFO read on the IPv6 socket (an RTT) */
GST_START_TEST (test_ctcp)
{
  const gsize size = 2 * 1000 * 1000;
  gchar *dir = g_dir_make_tmp ("ctcp6-XXXXXX", NULL);
  gchar *in = g_build_filename (dir, "in.bin", NULL);
  gchar *out = g_build_filename (dir, "out.bin", NULL);
  GstElement *rx, *tx, *src, *sink;
  GstStructure *st;
  guint64 srtt = 0;
  gchar *desc;
  gint port = 0;

  fail_unless (have_ipv6 (), "cannot bind ::1");
  write_random_file (in, size);
  desc = g_strdup_printf ("tcpserversrc name=src host=::1 port=0 ! "
      "filesink location=%s", out);
  rx = launch (desc);
  g_free (desc);
  fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  src = gst_bin_get_by_name (GST_BIN (rx), "src");
  g_object_get (src, "current-port", &port, NULL);
  fail_unless (port > 0);
  /* no timestamps: a fixed target rate, 80 Mbit/s */
  desc = g_strdup_printf ("filesrc location=%s blocksize=65536 ! ctcpsink "
      "name=sink host=::1 port=%d target-rate=80000000", in, port);
  tx = launch (desc);
  g_free (desc);
  fail_unless (gst_element_set_state (tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  wait_eos (tx, 30 * GST_SECOND);
  sink = gst_bin_get_by_name (GST_BIN (tx), "sink");
  g_object_get (sink, "stats", &st, NULL);
  fail_unless (st != NULL);
  GST_INFO ("ctcpsink stats %" GST_PTR_FORMAT, st);
  fail_unless (gst_structure_get_uint64 (st, "srtt", &srtt));
  gst_structure_free (st);
  fail_unless (srtt > 0, "no RTT from TCP_INFO on the IPv6 socket");
  /* the sender closed: the receiver reaches EOS */
  wait_eos (rx, 30 * GST_SECOND);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (src);
  gst_object_unref (tx);
  gst_object_unref (rx);

  assert_same_file (in, out);
  g_unlink (in);
  g_unlink (out);
  g_rmdir (dir);
  g_free (in);
  g_free (out);
  g_free (dir);
}

GST_END_TEST;

static Suite *
ipv6_suite (void)
{
  Suite *s = suite_create ("ipv6");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 90);
  tcase_add_test (tc, test_bind_address_for);
  tcase_add_test (tc, test_erap_properties);
  tcase_add_test (tc, test_erap_explicit_bind);
  tcase_add_test (tc, test_erap_uris);
  tcase_add_test (tc, test_erap_family_mismatch);
  tcase_add_test (tc, test_rudp);
  tcase_add_test (tc, test_ctcp);
  return s;
}

GST_CHECK_MAIN (ipv6);
