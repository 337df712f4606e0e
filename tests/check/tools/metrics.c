/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tools/common/twoflow-metrics.c: series picked from session statistics,
 * units converted, label values escaped, at most the cap of sessions. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <string.h>

#include "twoflow-metrics.h"

static JsonObject *
server_session (gint64 id, const gchar * video, gdouble elapsed)
{
  JsonObject *o = json_object_new (), *ess = json_object_new (),
      *enh = json_object_new (), *tc = json_object_new ();

  json_object_set_int_member (o, "session", id);
  json_object_set_string_member (o, "video", video);
  json_object_set_double_member (o, "elapsed", elapsed);
  /* cTCP: bytes/s and ns */
  json_object_set_int_member (ess, "target-rate", 1000);
  json_object_set_int_member (ess, "srtt", 40000000);
  json_object_set_int_member (ess, "bytes-sent", 123);
  json_object_set_int_member (ess, "retransmissions", 4);
  json_object_set_object_member (o, "essential_stats", ess);
  /* rUDP: bit/s, RTCP's fraction in 1/256 */
  json_object_set_int_member (enh, "rate", 500000);
  json_object_set_int_member (enh, "receiver-fraction-lost", 64);
  json_object_set_object_member (o, "enhanced_stats", enh);
  json_object_set_int_member (tc, "target-bitrate", 2000000);
  json_object_set_object_member (o, "transcoder_stats", tc);
  return o;
}

GST_START_TEST (test_server_series)
{
  TwoflowMetrics *m = twoflow_metrics_new ();
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify)
      json_object_unref);
  gchar *text;

  g_setenv ("TWOFLOW_METRICS_MAX_SESSIONS", "2", TRUE);
  g_ptr_array_add (all, server_session (7, "new.mkv", 1.0));
  g_ptr_array_add (all, server_session (8, "a \"quoted\\\" name\nx", 30.0));
  g_ptr_array_add (all, server_session (9, "old.mkv", 20.0));
  twoflow_metrics_server_sessions (m, all);
  text = twoflow_metrics_render (m);

  /* the two longest running shown, the newest counted */
  fail_unless (strstr (text, "twoflow_server_sessions_unexposed 1\n"), "%s",
      text);
  fail_if (strstr (text, "session=\"7\""), "%s", text);
  fail_unless (strstr (text, "session=\"9\""), "%s", text);
  /* escaped label value */
  fail_unless (strstr (text, "video=\"a \\\"quoted\\\\\\\" name\\nx\""),
      "%s", text);
  /* units: bytes/s -> bit/s, ns -> s, fraction/256 */
  fail_unless (strstr (text,
          "twoflow_server_session_send_rate_bits_per_second{session=\"9\","
          "video=\"old.mkv\",flow=\"essential\"} 8000\n"), "%s", text);
  fail_unless (strstr (text,
          "twoflow_server_session_rtt_seconds{session=\"9\","
          "video=\"old.mkv\",flow=\"essential\"} 0.04"), "%s", text);
  fail_unless (strstr (text,
          "twoflow_server_session_loss_ratio{session=\"9\","
          "video=\"old.mkv\",flow=\"enhanced\"} 0.25\n"), "%s", text);
  fail_unless (strstr (text,
          "# TYPE twoflow_server_session_retransmissions_total counter\n"),
      "%s", text);
  fail_unless (strstr (text,
          "twoflow_server_session_transcoder_target_bits_per_second{"
          "session=\"9\",video=\"old.mkv\"} 2000000\n"), "%s", text);
  /* a key no sender here has (ERAP's packets-lost): no sample, and one
   * HELP/TYPE per family */
  fail_unless (strstr (text, "flow=\"essential\"} 123\n") != NULL);
  fail_if (strstr (text, "lost_packets_total{session=\"9\",video=\"old.mkv\","
          "flow=\"essential\"}"), "%s", text);
  fail_unless (strstr (text, "# TYPE twoflow_server_session_rtt_seconds")
      == g_strrstr (text, "# TYPE twoflow_server_session_rtt_seconds"));
  g_free (text);
  g_unsetenv ("TWOFLOW_METRICS_MAX_SESSIONS");
}

GST_END_TEST;

GST_START_TEST (test_build_info)
{
  TwoflowMetrics *m = twoflow_metrics_new ();
  gchar *text, *want;

  g_set_prgname ("twoflow-test");
  twoflow_metrics_build_info (m);
  text = twoflow_metrics_render (m);
  want = g_strdup_printf ("twoflow_build_info{program=\"twoflow-test\","
      "version=\"%s\",gstreamer=\"1.", PACKAGE_VERSION);
  fail_unless (strstr (text, want), "%s", text);
  g_free (want);
  g_free (text);
}

GST_END_TEST;

static Suite *
metrics_suite (void)
{
  Suite *s = suite_create ("twoflow-metrics");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_server_series);
  tcase_add_test (tc, test_build_info);
  return s;
}

GST_CHECK_MAIN (metrics);
