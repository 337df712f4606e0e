/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — erap:// URIs: the GstURIHandler of erapsink (GST_URI_SINK)
 * and erapsrc (GST_URI_SRC), their uri property, query parameters as
 * properties, and the errors of bad URIs. The transfers over URIs are in
 * ipv6.c. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include "uriprops.h"
#include <gio/gio.h>

GST_START_TEST (test_protocols)
{
  fail_unless (gst_uri_protocol_is_supported (GST_URI_SINK, "erap"));
  fail_unless (gst_uri_protocol_is_supported (GST_URI_SRC, "erap"));
}

GST_END_TEST;

GST_START_TEST (test_sink_from_uri)
{
  GError *err = NULL;
  GstElement *e = gst_element_make_from_uri (GST_URI_SINK,
      "erap://[::1]:6000?congestion-control=libra&max-rate=5000000", "s",
      &err);
  gchar *s;

  fail_unless (e != NULL, "%s", err ? err->message : "");
  fail_unless_equals_string (GST_OBJECT_NAME (gst_element_get_factory (e)),
      "erapsink");
  s = get_str (e, "host");
  fail_unless_equals_string (s, "::1");
  g_free (s);
  fail_unless_equals_int (get_uint (e, "port"), 6000);
  fail_unless_equals_string (enum_nick (e, "congestion-control"), "libra");
  fail_unless_equals_uint64 (get_u64 (e, "max-rate"), 5000000);
  /* read back: brackets for the IPv6 literal, the query as it was set */
  s = gst_uri_handler_get_uri (GST_URI_HANDLER (e));
  fail_unless_equals_string (s,
      "erap://[::1]:6000?congestion-control=libra&max-rate=5000000");
  g_free (s);
  /* with the properties' current values */
  g_object_set (e, "max-rate", (guint64) 7000000, NULL);
  s = get_str (e, "uri");
  fail_unless_equals_string (s,
      "erap://[::1]:6000?congestion-control=libra&max-rate=7000000");
  g_free (s);

  /* a host name, and no port: 5004 */
  fail_unless (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "erap://receiver.example?capacity=10000000", &err));
  s = get_str (e, "host");
  fail_unless_equals_string (s, "receiver.example");
  g_free (s);
  fail_unless_equals_int (get_uint (e, "port"), 5004);
  fail_unless_equals_uint64 (get_u64 (e, "capacity"), 10000000);
  /* a new URI's query replaces the last one's */
  s = get_str (e, "uri");
  fail_unless_equals_string (s,
      "erap://receiver.example:5004?capacity=10000000");
  g_free (s);
  gst_object_unref (e);
}

GST_END_TEST;

GST_START_TEST (test_sink_bad_uris)
{
  GstElement *e = gst_element_factory_make ("erapsink", NULL);
  GstURIHandler *h = GST_URI_HANDLER (e);
  GError *err = NULL;
  gchar *s;

  g_object_set (e, "host", "10.0.0.1", "port", 7000, "max-rate",
      (guint64) 1000, NULL);
  /* an unknown parameter: refused, and nothing changes (not even the
   * valid parameter next to it, nor host and port) */
  fail_if (gst_uri_handler_set_uri (h,
          "erap://10.0.0.2:7001?max-rate=2000&no-such-property=1", &err));
  fail_unless (g_error_matches (err, GST_URI_ERROR, GST_URI_ERROR_BAD_URI));
  fail_unless (strstr (err->message, "no-such-property") != NULL);
  g_clear_error (&err);
  fail_unless_equals_uint64 (get_u64 (e, "max-rate"), 1000);
  fail_unless_equals_int (get_uint (e, "port"), 7000);
  /* a bad value, an out-of-range value, a read-only property, host/port
   * in the query */
  fail_if (gst_uri_handler_set_uri (h,
          "erap://10.0.0.2:7001?congestion-control=cubic", &err));
  g_clear_error (&err);
  fail_if (gst_uri_handler_set_uri (h, "erap://10.0.0.2:7001?mtu=1", &err));
  g_clear_error (&err);
  fail_if (gst_uri_handler_set_uri (h, "erap://10.0.0.2:7001?stats=x", &err));
  g_clear_error (&err);
  fail_if (gst_uri_handler_set_uri (h, "erap://10.0.0.2:7001?port=9", &err));
  g_clear_error (&err);
  /* other schemes, no host */
  fail_if (gst_uri_handler_set_uri (h, "udp://10.0.0.2:7001", &err));
  g_clear_error (&err);
  fail_if (gst_uri_handler_set_uri (h, "erap://:7001", &err));
  g_clear_error (&err);
  s = get_str (e, "host");
  fail_unless_equals_string (s, "10.0.0.1");
  g_free (s);
  gst_object_unref (e);
}

GST_END_TEST;

GST_START_TEST (test_src_from_uri)
{
  GError *err = NULL;
  GstElement *e = gst_element_make_from_uri (GST_URI_SRC,
      "erap://:7000?linger=1000000&caps=video/mpeg", NULL, &err);
  GstCaps *caps = NULL;
  gchar *s;

  fail_unless (e != NULL, "%s", err ? err->message : "");
  fail_unless_equals_string (GST_OBJECT_NAME (gst_element_get_factory (e)),
      "erapsrc");
  s = get_str (e, "address");
  fail_unless_equals_string (s, "0.0.0.0");
  g_free (s);
  fail_unless_equals_int (get_uint (e, "port"), 7000);
  fail_unless_equals_uint64 (get_u64 (e, "linger"), 1000000);
  g_object_get (e, "caps", &caps, NULL);
  fail_unless (caps != NULL);
  fail_unless_equals_string (gst_structure_get_name (gst_caps_get_structure
          (caps, 0)), "video/mpeg");
  gst_caps_unref (caps);

  fail_unless (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "erap://[::]:7002", &err));
  s = get_str (e, "address");
  fail_unless_equals_string (s, "::");
  g_free (s);
  s = get_str (e, "uri");
  fail_unless_equals_string (s, "erap://[::]:7002");
  g_free (s);
  /* caps in the query read back as caps: set again, the same caps */
  fail_unless (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "erap://:7002?caps=video/mpeg,mpegversion=2&linger=5", &err));
  s = get_str (e, "uri");
  fail_unless (g_str_has_prefix (s, "erap://0.0.0.0:7002?caps="), "%s", s);
  {
    GstElement *e2 = gst_element_make_from_uri (GST_URI_SRC, s, NULL, &err);
    GstCaps *c1 = NULL, *c2 = NULL;
    gchar *s2;

    fail_unless (e2 != NULL, "%s", err ? err->message : "");
    g_object_get (e, "caps", &c1, NULL);
    g_object_get (e2, "caps", &c2, NULL);
    fail_unless (gst_caps_is_equal (c1, c2));
    fail_unless_equals_uint64 (get_u64 (e2, "linger"), 5);
    s2 = get_str (e2, "uri");
    fail_unless_equals_string (s2, s);
    g_free (s2);
    gst_caps_unref (c1);
    gst_caps_unref (c2);
    gst_object_unref (e2);
  }
  g_free (s);
  fail_if (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "erap://:7003?max-reorder-bytes=lots", &err));
  g_clear_error (&err);
  fail_unless_equals_int (get_uint (e, "port"), 7002);
  gst_object_unref (e);
}

GST_END_TEST;

/* the uri property on a gst-launch line, as `... ! erapsink uri=...` */
GST_START_TEST (test_launch_line)
{
  GstElement *p = gst_parse_launch ("fakesrc ! erapsink name=s "
      "uri=erap://127.0.0.1:6100?initial-rate=3000000", NULL);
  GstElement *s = gst_bin_get_by_name (GST_BIN (p), "s");
  gchar *host = get_str (s, "host");

  fail_unless_equals_string (host, "127.0.0.1");
  fail_unless_equals_int (get_uint (s, "port"), 6100);
  fail_unless_equals_uint64 (get_u64 (s, "initial-rate"), 3000000);
  g_free (host);
  gst_object_unref (s);
  gst_object_unref (p);
}

GST_END_TEST;

/* the URI is the address: it cannot change once the element runs */
GST_START_TEST (test_bad_state)
{
  check_bad_state ("erap://127.0.0.1:0", "erap://127.0.0.1:7004");
}

GST_END_TEST;

static guint
free_udp_port (void)
{
  GSocket *s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  GSocketAddress *a = g_inet_socket_address_new_from_string ("127.0.0.1", 0);
  GSocketAddress *local;
  guint port;

  fail_unless (g_socket_bind (s, a, FALSE, NULL));
  local = g_socket_get_local_address (s, NULL);
  port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (local));
  g_object_unref (local);
  g_object_unref (a);
  g_socket_close (s, NULL);
  g_object_unref (s);
  return port;
}

/* playback by URI: uridecodebin makes an erapsrc for erap:// (through
 * gst_element_make_from_uri), typefinds and decodes what an erapsink
 * sends, to EOS */
GST_START_TEST (test_uridecodebin)
{
  const gchar *media = g_getenv ("TWOFLOW_MEDIA");
  gchar *file, *desc;
  GstElement *rx, *tx, *out;
  GstMessage *m;
  GstBus *bus;
  guint64 rendered = 0;
  GstStructure *st;
  guint port = free_udp_port ();

  fail_unless (media != NULL, "TWOFLOW_MEDIA is not set");
  file = g_build_filename (media, "greyramp.m2v", NULL);
  desc = g_strdup_printf ("uridecodebin uri=erap://127.0.0.1:%u ! "
      "fakesink name=out sync=false", port);
  rx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  desc = g_strdup_printf ("filesrc location=%s ! erapsink "
      "uri=erap://127.0.0.1:%u", file, port);
  tx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (gst_element_set_state (tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  bus = gst_element_get_bus (rx);
  m = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS);
  gst_message_unref (m);
  gst_object_unref (bus);
  out = gst_bin_get_by_name (GST_BIN (rx), "out");
  g_object_get (out, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "rendered", &rendered);
  gst_structure_free (st);
  GST_INFO ("%" G_GUINT64_FORMAT " decoded frames", rendered);
  /* raw video frames came out of the decoder */
  fail_unless (rendered > 0);
  {
    GstPad *pad = gst_element_get_static_pad (out, "sink");
    GstCaps *caps = gst_pad_get_current_caps (pad);

    fail_unless (caps != NULL);
    fail_unless_equals_string (gst_structure_get_name
        (gst_caps_get_structure (caps, 0)), "video/x-raw");
    gst_caps_unref (caps);
    gst_object_unref (pad);
  }
  gst_object_unref (out);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (tx);
  gst_object_unref (rx);
  g_free (file);
}

GST_END_TEST;

static Suite *
erapuri_suite (void)
{
  Suite *s = suite_create ("erapuri");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_protocols);
  tcase_add_test (tc, test_sink_from_uri);
  tcase_add_test (tc, test_sink_bad_uris);
  tcase_add_test (tc, test_src_from_uri);
  tcase_add_test (tc, test_launch_line);
  tcase_add_test (tc, test_bad_state);
  tcase_add_test (tc, test_uridecodebin);
  return s;
}

GST_CHECK_MAIN (erapuri);
