/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rudp:// URIs: the GstURIHandler of rudpsink (GST_URI_SINK)
 * and rudpsrc (GST_URI_SRC), their uri property, the query round trip
 * (what set_uri() got reads back, with the properties' current values),
 * the errors of bad URIs, and uridecodebin playing an RTP stream from a
 * rudp:// URI whose caps choose the depayloader. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include "uriprops.h"
#include <string.h>

GST_START_TEST (test_protocols)
{
  fail_unless (gst_uri_protocol_is_supported (GST_URI_SINK, "rudp"));
  fail_unless (gst_uri_protocol_is_supported (GST_URI_SRC, "rudp"));
}

GST_END_TEST;

GST_START_TEST (test_sink_round_trip)
{
  GstElement *e = check_round_trip (GST_URI_SINK,
      "rudp://[::1]:5004?rate-control=receiver&rtx-time=500000000"
      "&levels=%3C200000,%20400000,%20800000%3E&ecn=true", "rudpsink");
  GError *err = NULL;
  GValue levels = G_VALUE_INIT;
  gchar *s;

  s = get_str (e, "host");
  fail_unless_equals_string (s, "::1");
  g_free (s);
  fail_unless_equals_int (get_int (e, "port"), 5004);
  fail_unless_equals_string (enum_nick (e, "rate-control"), "receiver");
  fail_unless_equals_uint64 (get_u64 (e, "rtx-time"), 500000000);
  fail_unless (get_bool (e, "ecn"));
  g_value_init (&levels, GST_TYPE_ARRAY);
  g_object_get_property (G_OBJECT (e), "levels", &levels);
  fail_unless_equals_int (gst_value_array_get_size (&levels), 3);
  fail_unless_equals_uint64 (g_value_get_uint64 (gst_value_array_get_value
          (&levels, 2)), 800000);
  g_value_unset (&levels);

  /* current values; the SRTP key (write-only) is set, never read back */
  fail_unless (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "rudp://10.0.0.2?rate=4000000&key="
          "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d",
          &err), "%s", err ? err->message : "");
  g_object_set (e, "rate", (guint64) 6000000, NULL);
  s = get_str (e, "uri");
  fail_unless_equals_string (s, "rudp://10.0.0.2:5004?rate=6000000");
  g_free (s);
  gst_object_unref (e);
}

GST_END_TEST;

GST_START_TEST (test_src_round_trip)
{
  GstElement *e = check_round_trip (GST_URI_SRC,
      "rudp://0.0.0.0:0?caps=application/x-rtp,%20media=(string)video,"
      "%20clock-rate=(int)90000,%20encoding-name=(string)MP2T"
      "&feedback=false&law=tfrc", "rudpsrc");
  GError *err = NULL;
  GstCaps *caps = NULL;
  gchar *s;

  /* port 0 (any free port) stays 0, not "no port" */
  fail_unless_equals_int (get_int (e, "port"), 0);
  fail_if (get_bool (e, "feedback"));
  fail_unless_equals_string (enum_nick (e, "law"), "tfrc");
  g_object_get (e, "caps", &caps, NULL);
  fail_unless (caps != NULL);
  s = gst_caps_to_string (caps);
  fail_unless_equals_string (s, "application/x-rtp, media=(string)video, "
      "clock-rate=(int)90000, encoding-name=(string)MP2T");
  g_free (s);
  gst_caps_unref (caps);

  /* caps written as on a launch line read back in their long form */
  fail_unless (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "rudp://[::]:5006?caps=application/x-rtp,media=video,"
          "clock-rate=90000,encoding-name=H264", &err));
  s = get_str (e, "uri");
  fail_unless_equals_string (s, "rudp://[::]:5006?caps=application/x-rtp,"
      "%20media=(string)video,%20clock-rate=(int)90000,"
      "%20encoding-name=(string)H264");
  g_free (s);
  /* no host: every IPv4 address; no port: 5004 */
  fail_unless (gst_uri_handler_set_uri (GST_URI_HANDLER (e), "rudp://",
          &err));
  s = get_str (e, "uri");
  fail_unless_equals_string (s, "rudp://0.0.0.0:5004");
  g_free (s);
  gst_object_unref (e);
}

GST_END_TEST;

GST_START_TEST (test_bad_uris)
{
  GstElement *e = gst_element_factory_make ("rudpsink", NULL);
  GstURIHandler *h = GST_URI_HANDLER (e);
  GError *err = NULL;
  const gchar *bad[] = {
    "rudp://10.0.0.2:7001?rate=2000000&no-such-property=1",
    "rudp://10.0.0.2:7001?rate-control=sender",
    "rudp://10.0.0.2:7001?rate=fast",
    "rudp://10.0.0.2:7001?rate=1",
    "rudp://10.0.0.2:7001?stats=x",
    "rudp://10.0.0.2:7001?bound-port=1",
    "rudp://10.0.0.2:7001?host=10.0.0.3",
    "udp://10.0.0.2:7001",
    "rudp://:7001",
    "rudp://10.0.0.2:0",
    "rudp://10.0.0.2:70000",
    NULL
  };
  gchar *s;
  guint i;

  g_object_set (e, "host", "10.0.0.1", "port", 7000, "rate",
      (guint64) 1000000, NULL);
  for (i = 0; bad[i]; i++) {
    fail_if (gst_uri_handler_set_uri (h, bad[i], &err), "%s accepted",
        bad[i]);
    fail_unless (g_error_matches (err, GST_URI_ERROR, GST_URI_ERROR_BAD_URI)
        || g_error_matches (err, GST_URI_ERROR,
            GST_URI_ERROR_UNSUPPORTED_PROTOCOL), "%s: %s", bad[i],
        err ? err->message : "no error");
    g_clear_error (&err);
  }
  fail_unless_equals_uint64 (get_u64 (e, "rate"), 1000000);
  fail_unless_equals_int (get_int (e, "port"), 7000);
  s = get_str (e, "host");
  fail_unless_equals_string (s, "10.0.0.1");
  g_free (s);
  gst_object_unref (e);

  e = gst_element_factory_make ("rudpsrc", NULL);
  fail_if (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "rudp://:7002?caps=not%20caps%20at%20all,,", &err));
  fail_unless (g_error_matches (err, GST_URI_ERROR, GST_URI_ERROR_BAD_URI));
  g_clear_error (&err);
  fail_if (gst_uri_handler_set_uri (GST_URI_HANDLER (e),
          "rudp://:7002?address=::", &err));
  g_clear_error (&err);
  fail_unless_equals_int (get_int (e, "port"), 5004);
  gst_object_unref (e);
}

GST_END_TEST;

GST_START_TEST (test_bad_state)
{
  check_bad_state ("rudp://127.0.0.1:0?caps=application/x-rtp", "rudp://127.0.0.1:7004");
}

GST_END_TEST;

/* playback by URI: uridecodebin makes a rudpsrc for a rudp:// URI whose
 * caps say MP2T over RTP, picks rtpmp2tdepay and the demuxer and decoder
 * by itself, and decodes what a rudpsink made from a rudp:// URI sends,
 * with the receiver's feedback flowing back */
GST_START_TEST (test_uridecodebin)
{
  const gchar *media = g_getenv ("TWOFLOW_MEDIA");
  gchar *desc, *file;
  GstElement *rx, *tx, *src = NULL, *out, *sink;
  GstStructure *st;
  guint64 rendered = 0;
  gint port = 0;
  guint i;

  fail_unless (media != NULL, "TWOFLOW_MEDIA is not set");
  file = g_build_filename (media, "greyramp.m2v", NULL);
  rx = gst_parse_launch ("uridecodebin name=d uri=\"rudp://127.0.0.1:0?"
      "caps=application/x-rtp,media=video,clock-rate=90000,"
      "encoding-name=MP2T&feedback-interval=20000000\" ! "
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
      "rudpsrc");
  for (i = 0; i < 3000 && port == 0; i++) {
    g_object_get (src, "stats", &st, NULL);
    gst_structure_get_int (st, "port", &port);
    gst_structure_free (st);
    if (port == 0)
      g_usleep (10000);
  }
  fail_unless (port > 0);

  desc = g_strdup_printf ("filesrc location=%s ! mpegvideoparse ! "
      "mpegtsmux ! rtpmp2tpay ! rudpsink name=sink "
      "uri=rudp://127.0.0.1:%d?rate=20000000", file, port);
  tx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (gst_element_set_state (tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  {
    GstBus *bus = gst_element_get_bus (tx);
    GstMessage *m = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR);

    fail_unless (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS,
        "sender: %" GST_PTR_FORMAT, m);
    gst_message_unref (m);
    gst_object_unref (bus);
  }
  /* rudpsrc is live and has no EOS of its own: polled until decoded
   * frames came out (up to 30 s on a loaded machine) */
  out = gst_bin_get_by_name (GST_BIN (rx), "out");
  for (i = 0; i < 3000 && rendered == 0; i++) {
    g_object_get (out, "stats", &st, NULL);
    gst_structure_get_uint64 (st, "rendered", &rendered);
    gst_structure_free (st);
    if (rendered == 0)
      g_usleep (10000);
  }
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
  sink = gst_bin_get_by_name (GST_BIN (tx), "sink");
  g_object_get (sink, "stats", &st, NULL);
  {
    guint64 errors = 1;

    fail_unless (gst_structure_get_uint64 (st, "send-errors", &errors));
    fail_unless_equals_uint64 (errors, 0);
  }
  gst_structure_free (st);
  gst_object_unref (sink);
  gst_object_unref (out);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (tx);
  gst_object_unref (rx);
  g_free (file);
}

GST_END_TEST;

static void
pad_added (GstElement * bin, GstPad * pad, GstElement * sink)
{
  GstPad *peer = gst_element_get_static_pad (sink, "sink");

  if (!gst_pad_is_linked (peer))
    gst_pad_link (pad, peer);
  gst_object_unref (peer);
}

/* urisourcebin makes a rudpsrc for a rudp:// URI and exposes its RTP
 * (the URI's caps) on a pad: the packets a rudpsink sends come out */
GST_START_TEST (test_urisourcebin)
{
  GstElement *rx, *usb, *out, *tx, *src = NULL;
  GstStructure *st;
  GstCaps *caps;
  GstPad *pad;
  guint64 rendered = 0;
  gint port = 0;
  gchar *desc;
  guint i;

  rx = gst_pipeline_new ("rx");
  usb = gst_element_factory_make ("urisourcebin", NULL);
  out = gst_element_factory_make ("fakesink", NULL);
  g_object_set (out, "sync", FALSE, NULL);
  g_object_set (usb, "uri", "rudp://127.0.0.1:0?caps=application/x-rtp,"
      "media=application,clock-rate=90000,encoding-name=X-GST", NULL);
  g_signal_connect (usb, "source-setup", G_CALLBACK (source_setup), &src);
  g_signal_connect (usb, "pad-added", G_CALLBACK (pad_added), out);
  gst_bin_add_many (GST_BIN (rx), usb, out, NULL);
  fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (src != NULL);
  fail_unless_equals_string (GST_OBJECT_NAME (gst_element_get_factory (src)),
      "rudpsrc");
  for (i = 0; i < 3000 && port == 0; i++) {
    g_object_get (src, "stats", &st, NULL);
    gst_structure_get_int (st, "port", &port);
    gst_structure_free (st);
    if (port == 0)
      g_usleep (10000);
  }
  fail_unless (port > 0);
  desc = g_strdup_printf ("videotestsrc num-buffers=20 ! "
      "video/x-raw,format=I420,width=64,height=48,framerate=25/1 ! "
      "rtpgstpay mtu=1000 ! rudpsink uri=rudp://127.0.0.1:%d?rate=20000000",
      port);
  tx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (gst_element_set_state (tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  /* 20 frames of 4.6 kB: 100 packets; polled for up to 30 s */
  for (i = 0; i < 3000 && rendered < 100; i++) {
    g_object_get (out, "stats", &st, NULL);
    gst_structure_get_uint64 (st, "rendered", &rendered);
    gst_structure_free (st);
    if (rendered < 100)
      g_usleep (10000);
  }
  fail_unless (rendered >= 100, "%" G_GUINT64_FORMAT " packets", rendered);
  pad = gst_element_get_static_pad (out, "sink");
  caps = gst_pad_get_current_caps (pad);
  fail_unless (caps != NULL);
  fail_unless_equals_string (gst_structure_get_string
      (gst_caps_get_structure (caps, 0), "encoding-name"), "X-GST");
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (tx);
  gst_object_unref (rx);
}

GST_END_TEST;

static Suite *
rudpuri_suite (void)
{
  Suite *s = suite_create ("rudpuri");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_protocols);
  tcase_add_test (tc, test_sink_round_trip);
  tcase_add_test (tc, test_src_round_trip);
  tcase_add_test (tc, test_bad_uris);
  tcase_add_test (tc, test_bad_state);
  tcase_add_test (tc, test_uridecodebin);
  tcase_add_test (tc, test_urisourcebin);
  return s;
}

GST_CHECK_MAIN (rudpuri);
