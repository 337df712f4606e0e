/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ctcp:// URIs: the GstURIHandler of ctcpsink (GST_URI_SINK)
 * and ctcpsrc (GST_URI_SRC), their uri property, the query round trip
 * (what set_uri() got reads back, with the properties' current values),
 * the errors of bad URIs, and uridecodebin playing a ctcp:// URI. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include "uriprops.h"
#include <string.h>

GST_START_TEST (test_protocols)
{
  fail_unless (gst_uri_protocol_is_supported (GST_URI_SINK, "ctcp"));
  fail_unless (gst_uri_protocol_is_supported (GST_URI_SRC, "ctcp"));
}

GST_END_TEST;

GST_START_TEST (test_sink_round_trip)
{
  GstElement *e = check_round_trip (GST_URI_SINK,
      "ctcp://[::1]:5600?target-rate=216000&congestion-control=reno"
      "&events=rexmt+dupack", "ctcpsink");
  GError *err = NULL;
  gchar *s;

  /* a secret (a write-only property) is set but never read back */
  fail_unless (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "ctcp://[::1]:5600?target-rate=216000&congestion-control=reno"
          "&tls-token=0123456789abcdef0123&events=rexmt+dupack", &err));
  s = get_str (e, "uri");
  fail_unless_equals_string (s, "ctcp://[::1]:5600?target-rate=216000"
      "&congestion-control=reno&events=rexmt+dupack");
  g_free (s);

  s = get_str (e, "host");
  fail_unless_equals_string (s, "::1");
  g_free (s);
  fail_unless_equals_int (get_uint (e, "port"), 5600);
  fail_unless_equals_uint64 (get_u64 (e, "target-rate"), 216000);
  fail_unless_equals_string (enum_nick (e, "congestion-control"), "reno");

  /* the query reads back with the current values */
  g_object_set (e, "target-rate", (guint64) 8000000, NULL);
  s = get_str (e, "uri");
  fail_unless_equals_string (s,
      "ctcp://[::1]:5600?target-rate=8000000&congestion-control=reno"
      "&events=rexmt+dupack");
  g_free (s);

  /* a new URI: its query replaces the last one's; no port: 4953; a
   * property named with underscores reads back by its name */
  fail_unless (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "ctcp://receiver.example?segment_duration=500000000", &err));
  s = get_str (e, "uri");
  fail_unless_equals_string (s,
      "ctcp://receiver.example:4953?segment-duration=500000000");
  g_free (s);
  /* no query: none read back */
  fail_unless (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "ctcp://10.0.0.2:5601", &err));
  s = get_str (e, "uri");
  fail_unless_equals_string (s, "ctcp://10.0.0.2:5601");
  g_free (s);
  /* target-rate kept its value: a URI sets, it does not reset */
  fail_unless_equals_uint64 (get_u64 (e, "target-rate"), 8000000);
  gst_object_unref (e);
}

GST_END_TEST;

GST_START_TEST (test_src_round_trip)
{
  GstElement *e = check_round_trip (GST_URI_SRC,
      "ctcp://0.0.0.0:5602?timeout=2000000000&accept-host=127.0.0.1",
      "ctcpsrc");
  GError *err = NULL;
  gchar *s;

  fail_unless_equals_int (get_uint (e, "port"), 5602);
  fail_unless_equals_uint64 (get_u64 (e, "timeout"), 2000000000);
  s = get_str (e, "accept-host");
  fail_unless_equals_string (s, "127.0.0.1");
  g_free (s);
  /* no host: every IPv4 address, listening */
  fail_unless (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "ctcp://:5603", &err));
  s = get_str (e, "uri");
  fail_unless_equals_string (s, "ctcp://0.0.0.0:5603");
  g_free (s);
  gst_object_unref (e);

  /* connecting to a listening sender, TLS with a CA file: a path with a
   * space is escaped and reads back the same */
  e = check_round_trip (GST_URI_SRC,
      "ctcp://sender.example:5604?listen=false"
      "&tls-ca-file=/etc/two%20flow/ca.pem&tls-server-name=sender.example",
      "ctcpsrc");
  fail_if (get_bool (e, "listen"));
  s = get_str (e, "tls-ca-file");
  fail_unless_equals_string (s, "/etc/two flow/ca.pem");
  g_free (s);
  s = get_str (e, "host");
  fail_unless_equals_string (s, "sender.example");
  g_free (s);
  gst_object_unref (e);
}

GST_END_TEST;

GST_START_TEST (test_bad_uris)
{
  GstElement *e = gst_element_factory_make ("ctcpsink", NULL);
  GstURIHandler *h = GST_URI_HANDLER (e);
  GError *err = NULL;
  const gchar *bad[] = {
    /* an unknown parameter, next to a valid one */
    "ctcp://10.0.0.2:7001?target-rate=2000&no-such-property=1",
    /* a bad enum value, a value of the wrong type, out of range */
    "ctcp://10.0.0.2:7001?congestion-control=vegas",
    "ctcp://10.0.0.2:7001?target-rate=fast",
    "ctcp://10.0.0.2:7001?loss-threshold=2",
    /* read-only properties, host/port/uri in the query */
    "ctcp://10.0.0.2:7001?stats=x",
    "ctcp://10.0.0.2:7001?bound-port=1",
    "ctcp://10.0.0.2:7001?port=9",
    "ctcp://10.0.0.2:7001?uri=ctcp://a",
    /* other schemes, no host, port 0 (the sink connects) */
    "tcp://10.0.0.2:7001",
    "ctcp://:7001",
    "ctcp://10.0.0.2:0",
    "not a uri",
    NULL
  };
  gchar *s;
  guint i;

  g_object_set (e, "host", "10.0.0.1", "port", 7000, "target-rate",
      (guint64) 1000, NULL);
  for (i = 0; bad[i]; i++) {
    fail_if (gst_uri_handler_set_uri (h, bad[i], &err), "%s accepted",
        bad[i]);
    /* another scheme is refused by GstURIHandler itself */
    fail_unless (g_error_matches (err, GST_URI_ERROR, GST_URI_ERROR_BAD_URI)
        || g_error_matches (err, GST_URI_ERROR,
            GST_URI_ERROR_UNSUPPORTED_PROTOCOL), "%s: %s", bad[i],
        err ? err->message : "no error");
    g_clear_error (&err);
  }
  /* nothing changed, not even the valid parameter beside the bad one */
  fail_unless_equals_uint64 (get_u64 (e, "target-rate"), 1000);
  fail_unless_equals_int (get_uint (e, "port"), 7000);
  s = get_str (e, "host");
  fail_unless_equals_string (s, "10.0.0.1");
  g_free (s);
  /* a uri property on a launch line that is bad is refused (the uri
   * setter cannot fail: a warning, and the element as it was) */
  fail_unless (gst_element_make_from_uri (GST_URI_SINK,
          "ctcp://10.0.0.2:7001?no-such-property=1", NULL, &err) == NULL);
  fail_unless (err != NULL);
  g_clear_error (&err);
  gst_object_unref (e);

  e = gst_element_factory_make ("ctcpsrc", NULL);
  fail_if (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "ctcp://:7002?timeout=soon", &err));
  fail_unless (g_error_matches (err, GST_URI_ERROR, GST_URI_ERROR_BAD_URI));
  g_clear_error (&err);
  fail_if (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "ctcp://:7002?current-port=5", &err));
  g_clear_error (&err);
  fail_unless_equals_int (get_uint (e, "port"), 4953);
  gst_object_unref (e);
}

GST_END_TEST;

/* the URI is the address: it cannot change once the source runs */
GST_START_TEST (test_bad_state)
{
  check_bad_state ("ctcp://127.0.0.1:0", "ctcp://127.0.0.1:7004");
}

GST_END_TEST;

/* the uri property on a gst-launch line */
GST_START_TEST (test_launch_line)
{
  GstElement *p = gst_parse_launch ("fakesrc ! ctcpsink name=s "
      "uri=ctcp://127.0.0.1:6100?target-rate=3000000", NULL);
  GstElement *s = gst_bin_get_by_name (GST_BIN (p), "s");
  gchar *host = get_str (s, "host");

  fail_unless_equals_string (host, "127.0.0.1");
  fail_unless_equals_int (get_uint (s, "port"), 6100);
  fail_unless_equals_uint64 (get_u64 (s, "target-rate"), 3000000);
  g_free (host);
  gst_object_unref (s);
  gst_object_unref (p);
}

GST_END_TEST;

/* playback by URI: uridecodebin makes a listening ctcpsrc for
 * ctcp://127.0.0.1:0 (gst_element_make_from_uri), a ctcpsink made from a
 * ctcp:// URI sends it an MPEG-2 file, and uridecodebin typefinds and
 * decodes it to EOS */
GST_START_TEST (test_uridecodebin)
{
  const gchar *media = g_getenv ("TWOFLOW_MEDIA");
  gchar *file, *uri;
  GstElement *rx, *tx, *fsrc, *src = NULL, *out, *sink;
  GstMessage *m;
  GstBus *bus;
  guint64 rendered = 0;
  GstStructure *st;
  GError *err = NULL;
  guint port = 0, i;

  fail_unless (media != NULL, "TWOFLOW_MEDIA is not set");
  file = g_build_filename (media, "greyramp.m2v", NULL);
  rx = gst_parse_launch ("uridecodebin name=d "
      "uri=ctcp://127.0.0.1:0?timeout=30000000000 ! "
      "fakesink name=out sync=false", NULL);
  {
    GstElement *d = gst_bin_get_by_name (GST_BIN (rx), "d");

    g_signal_connect (d, "source-setup", G_CALLBACK (source_setup), &src);
    gst_object_unref (d);
  }
  fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (src != NULL);
  fail_unless_equals_string (GST_OBJECT_NAME (gst_element_get_factory (src)),
      "ctcpsrc");
  /* listening from start on; polled, as the state change may be async */
  for (i = 0; i < 3000 && port == 0; i++) {
    port = get_uint (src, "current-port");
    if (port == 0)
      g_usleep (10000);
  }
  fail_unless (port > 0);

  tx = gst_pipeline_new ("tx");
  fsrc = gst_element_factory_make ("filesrc", NULL);
  g_object_set (fsrc, "location", file, NULL);
  uri = g_strdup_printf ("ctcp://127.0.0.1:%u?target-rate=20000000", port);
  sink = gst_element_make_from_uri (GST_URI_SINK, uri, NULL, &err);
  fail_unless (sink != NULL, "%s", err ? err->message : "");
  gst_bin_add_many (GST_BIN (tx), fsrc, sink, NULL);
  fail_unless (gst_element_link (fsrc, sink));
  fail_unless (gst_element_set_state (tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);

  bus = gst_element_get_bus (rx);
  m = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS,
      "no EOS: %" GST_PTR_FORMAT, m);
  gst_message_unref (m);
  gst_object_unref (bus);
  out = gst_bin_get_by_name (GST_BIN (rx), "out");
  g_object_get (out, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "rendered", &rendered);
  gst_structure_free (st);
  GST_INFO ("%" G_GUINT64_FORMAT " decoded frames", rendered);
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
  gst_object_unref (src);
  gst_object_unref (tx);
  gst_object_unref (rx);
  g_free (uri);
  g_free (file);
}

GST_END_TEST;

/* playbin plays a ctcp:// URI: it makes the listening ctcpsrc itself
 * (source-setup), typefinds the MPEG-2 a ctcpsink sends and decodes it to
 * EOS into fakesinks */
GST_START_TEST (test_playbin)
{
  const gchar *media = g_getenv ("TWOFLOW_MEDIA");
  gchar *file, *desc;
  GstElement *pb, *vsink, *tx, *src = NULL;
  GstMessage *m;
  GstBus *bus;
  GstStructure *st;
  guint64 rendered = 0;
  guint port = 0, i;

  fail_unless (media != NULL, "TWOFLOW_MEDIA is not set");
  file = g_build_filename (media, "greyramp.m2v", NULL);
  pb = gst_element_factory_make ("playbin", NULL);
  vsink = gst_element_factory_make ("fakesink", NULL);
  g_object_set (vsink, "sync", FALSE, NULL);
  g_object_set (pb, "uri", "ctcp://127.0.0.1:0?timeout=30000000000",
      "video-sink", vsink, "audio-sink",
      gst_element_factory_make ("fakesink", NULL), NULL);
  g_signal_connect (pb, "source-setup", G_CALLBACK (source_setup), &src);
  fail_unless (gst_element_set_state (pb, GST_STATE_PAUSED) !=
      GST_STATE_CHANGE_FAILURE);
  for (i = 0; i < 3000 && port == 0; i++) {
    if (src)
      port = get_uint (src, "current-port");
    if (port == 0)
      g_usleep (10000);
  }
  fail_unless (port > 0);
  fail_unless_equals_string (GST_OBJECT_NAME (gst_element_get_factory (src)),
      "ctcpsrc");
  desc = g_strdup_printf ("filesrc location=%s ! ctcpsink "
      "uri=ctcp://127.0.0.1:%u?target-rate=20000000", file, port);
  tx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (gst_element_set_state (tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_set_state (pb, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  bus = gst_element_get_bus (pb);
  m = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS,
      "no EOS: %" GST_PTR_FORMAT, m);
  gst_message_unref (m);
  gst_object_unref (bus);
  g_object_get (vsink, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "rendered", &rendered);
  gst_structure_free (st);
  GST_INFO ("playbin: %" G_GUINT64_FORMAT " frames", rendered);
  fail_unless (rendered > 0);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (pb, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (tx);
  gst_object_unref (pb);
  g_free (file);
}

GST_END_TEST;

static Suite *
ctcpuri_suite (void)
{
  Suite *s = suite_create ("ctcpuri");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_protocols);
  tcase_add_test (tc, test_sink_round_trip);
  tcase_add_test (tc, test_src_round_trip);
  tcase_add_test (tc, test_bad_uris);
  tcase_add_test (tc, test_bad_state);
  tcase_add_test (tc, test_launch_line);
  tcase_add_test (tc, test_uridecodebin);
  tcase_add_test (tc, test_playbin);
  return s;
}

GST_CHECK_MAIN (ctcpuri);
