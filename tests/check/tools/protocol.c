/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tools/common/twoflow-protocol.c and twoflow-control.c: a control line
 * parsed once into a typed request (fields, defaults, the one validation),
 * the framing's limits (nesting depth, line length), and the proxy's
 * requests read back as the server reads them. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <math.h>
#include <string.h>

#include "twoflow-protocol.h"

static TwoflowRequest *
parse_ok (const gchar * line)
{
  GError *err = NULL;
  TwoflowRequest *req = twoflow_request_parse (line, &err);

  fail_unless (req != NULL, "%s: %s", line, err ? err->message : "?");
  return req;
}

GST_START_TEST (test_play_fields)
{
  TwoflowRequest *req = parse_ok ("{\"cmd\":\"play\",\"id\":[1,\"a\"],"
      "\"video\":\"v.mkv\",\"policy\":\"ip\",\"essential\":\"erap\","
      "\"flows\":\"essential\",\"rate_control\":\"receiver\","
      "\"essential_port\":5000,\"enhanced_port\":6000.0,\"nat\":true,"
      "\"segment_duration\":4,\"start\":12.5,\"skip_segments\":1,"
      "\"end_segment\":3,\"lead\":0.75,\"video_track\":2,"
      "\"audio_track\":\"fre\",\"erap_key\":\"ab\",\"host\":\"10.0.0.2\","
      "\"host_token\":\"1.x\",\"essential_token\":\"tok\"}");
  TwoflowPlayRequest *p = &req->play;
  JsonObject *r;
  gchar *text;

  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_PLAY);
  fail_unless_equals_string (req->cmd, "play");
  fail_unless (req->invalid == NULL);
  fail_unless_equals_string (p->v.video, "v.mkv");
  fail_unless (p->v.policy_ip);
  /* a number names a track by its index: kept as its digits */
  fail_unless_equals_string (p->v.video_track, "2");
  fail_unless_equals_string (p->v.audio_track, "fre");
  fail_unless_equals_int (p->essential, TWOFLOW_ESSENTIAL_ERAP);
  fail_unless_equals_int (p->flows, TWOFLOW_FLOWS_ESSENTIAL);
  fail_unless (p->rate_control_receiver);
  fail_unless_equals_int (p->essential_port, 5000);
  fail_unless_equals_int (p->enhanced_port, 6000);
  fail_unless (p->nat);
  fail_unless_equals_float (p->v.segment_duration, 4.0);
  fail_unless_equals_float (p->start, 12.5);
  fail_unless_equals_int (p->skip_segments, 1);
  fail_unless_equals_int (p->end_segment, 3);
  fail_unless (p->has_lead);
  fail_unless_equals_float (p->lead, 0.75);
  fail_unless_equals_string (p->erap_key, "ab");
  fail_unless (p->srtp_key == NULL);
  fail_unless_equals_string (p->host, "10.0.0.2");
  fail_unless_equals_string (p->host_token, "1.x");
  fail_unless_equals_string (p->essential_token, "tok");
  /* the reply echoes the request's id, whatever JSON it is */
  r = twoflow_reply_new_error (req, "no");
  text = twoflow_json_to_line (r);
  fail_unless_equals_string (text,
      "{\"ok\":false,\"id\":[1,\"a\"],\"error\":\"no\"}");
  g_free (text);
  json_object_unref (r);
  twoflow_request_free (req);
}

GST_END_TEST;

GST_START_TEST (test_play_defaults)
{
  /* wrong types read as absent, as the server always took them */
  TwoflowRequest *req = parse_ok ("{\"cmd\":\"PLAY\",\"video\":7,"
      "\"policy\":1,\"lead\":\"soon\",\"video_track\":1.5,\"flows\":\"x\","
      "\"rate_control\":\"fixed\",\"host\":null}");
  TwoflowPlayRequest *p = &req->play;

  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_PLAY);
  fail_unless (req->invalid == NULL);
  fail_unless (req->id == NULL);
  fail_unless (p->v.video == NULL);
  fail_if (p->v.policy_ip);
  fail_unless (p->v.video_track == NULL);
  fail_unless (p->v.audio_track == NULL);
  fail_unless_equals_int (p->essential, TWOFLOW_ESSENTIAL_CTCP);
  fail_unless_equals_int (p->flows, TWOFLOW_FLOWS_BOTH);
  fail_if (p->rate_control_receiver);
  fail_unless_equals_float (p->v.segment_duration,
      TWOFLOW_DEFAULT_SEGMENT_DURATION);
  fail_unless (p->host == NULL);
  fail_if (p->nat);
  /* "lead" is there (no start-up ramp), but not a number (the default) */
  fail_unless (p->has_lead);
  fail_unless (isnan (p->lead));
  twoflow_request_free (req);
}

GST_END_TEST;

GST_START_TEST (test_play_invalid)
{
  TwoflowRequest *req = parse_ok ("{\"cmd\":\"PLAY\",\"video\":\"v\","
      "\"essential\":\"quic\"}");

  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_PLAY);
  fail_unless (req->invalid != NULL);
  fail_unless_equals_string (req->invalid->message,
      "essential must be ctcp, tcp or erap");
  twoflow_request_free (req);
}

GST_END_TEST;

GST_START_TEST (test_other_commands)
{
  TwoflowRequest *req;

  req = parse_ok ("{\"cmd\":\"AUTH\",\"token\":\"0123456789abcdef\"}");
  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_AUTH);
  fail_unless_equals_string (req->token, "0123456789abcdef");
  twoflow_request_free (req);

  req = parse_ok ("{\"cmd\":\"info\",\"video\":\"a.ts\"}");
  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_INFO);
  fail_unless_equals_string (req->info.video, "a.ts");
  /* INFO without a segment duration: 0, the server's default */
  fail_unless_equals_float (req->info.segment_duration, 0);
  twoflow_request_free (req);

  req = parse_ok ("{\"cmd\":\"Stats\",\"session\":42}");
  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_STATS);
  fail_unless_equals_int (req->session, 42);
  twoflow_request_free (req);

  req = parse_ok ("{\"cmd\":\"TEARDOWN\",\"session\":\"42\"}");
  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_TEARDOWN);
  fail_unless_equals_int (req->session, 0);
  twoflow_request_free (req);

  req = parse_ok ("{\"cmd\":\"REBOOT\"}");
  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_UNKNOWN);
  fail_unless_equals_string (req->cmd, "REBOOT");
  twoflow_request_free (req);

  req = parse_ok ("{\"video\":\"x\"}");
  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_UNKNOWN);
  fail_unless_equals_string (req->cmd, "");
  twoflow_request_free (req);
}

GST_END_TEST;

GST_START_TEST (test_framing_limits)
{
  GError *err = NULL;
  GString *deep = g_string_new (NULL);
  TwoflowLineBuffer lb;
  gchar *line;
  guint i;

  /* not an object, not JSON */
  fail_unless (twoflow_request_parse ("[1,2]", &err) == NULL);
  fail_unless (err != NULL);
  g_clear_error (&err);
  fail_unless (twoflow_request_parse ("{\"cmd\":", &err) == NULL);
  fail_unless (err != NULL);
  g_clear_error (&err);

  /* nesting: refused before json-glib recurses into it; brackets inside
   * strings do not count */
  g_string_append (deep, "{\"cmd\":\"STATUS\",\"x\":");
  for (i = 0; i < TWOFLOW_CONTROL_MAX_DEPTH; i++)
    g_string_append_c (deep, '[');
  for (i = 0; i < TWOFLOW_CONTROL_MAX_DEPTH; i++)
    g_string_append_c (deep, ']');
  g_string_append_c (deep, '}');
  fail_unless (twoflow_request_parse (deep->str, &err) == NULL);
  fail_unless (strstr (err->message, "nested deeper than 32"), "%s",
      err->message);
  g_clear_error (&err);
  fail_unless (twoflow_json_depth_ok ("{\"a\":\"[[[[[[[[\\\"[[[[\"}", 2));
  fail_if (twoflow_json_depth_ok ("{\"a\":[[1]]}", 2));
  g_string_free (deep, TRUE);

  /* line length: a line over the limit (without its newline) is an error,
   * complete lines come out whole, \r\n ends a line too */
  twoflow_line_buffer_init (&lb, 8);
  fail_unless (twoflow_line_buffer_append (&lb, "12345678\nab", 11));
  line = twoflow_line_buffer_pop (&lb);
  fail_unless_equals_string (line, "12345678");
  g_free (line);
  fail_unless (twoflow_line_buffer_pop (&lb) == NULL);
  fail_unless (twoflow_line_buffer_append (&lb, "c\r\n", 3));
  line = twoflow_line_buffer_pop (&lb);
  fail_unless_equals_string (line, "abc");
  g_free (line);
  fail_unless (twoflow_line_buffer_append (&lb, "12345", 5));
  fail_if (twoflow_line_buffer_append (&lb, "6789", 4));
  twoflow_line_buffer_clear (&lb);
}

GST_END_TEST;

/* What the proxy sends, parsed as the server parses it */
GST_START_TEST (test_proxy_round_trip)
{
  TwoflowPlayRequest play;
  TwoflowVideoRequest info = { 0, };
  TwoflowRequest *req;
  JsonObject *o;
  gchar *text;

  twoflow_play_request_init (&play);
  play.v.video = g_strdup ("v.mp4");
  play.v.audio_track = g_strdup ("none");
  play.v.segment_duration = 5;
  play.essential = TWOFLOW_ESSENTIAL_TCP;
  play.flows = TWOFLOW_FLOWS_ESSENTIAL;
  play.end_segment = 1;
  play.essential_port = 4000;
  play.essential_token = g_strdup ("0123456789abcdef");
  o = twoflow_play_request_to_json (&play);
  text = twoflow_json_to_line (o);
  json_object_unref (o);
  req = parse_ok (text);
  g_free (text);
  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_PLAY);
  fail_unless_equals_string (req->play.v.video, "v.mp4");
  fail_if (req->play.v.policy_ip);
  fail_unless (req->play.v.video_track == NULL);
  fail_unless_equals_string (req->play.v.audio_track, "none");
  fail_unless_equals_float (req->play.v.segment_duration, 5);
  fail_unless_equals_int (req->play.essential, TWOFLOW_ESSENTIAL_TCP);
  fail_unless_equals_int (req->play.flows, TWOFLOW_FLOWS_ESSENTIAL);
  fail_unless_equals_int (req->play.end_segment, 1);
  fail_unless_equals_int (req->play.essential_port, 4000);
  fail_unless_equals_int (req->play.enhanced_port, 0);
  fail_unless_equals_string (req->play.essential_token, "0123456789abcdef");
  fail_if (req->play.has_lead);
  fail_if (req->play.nat);
  twoflow_request_free (req);
  twoflow_play_request_clear (&play);

  info.video = g_strdup ("w.ts");
  info.policy_ip = TRUE;
  info.segment_duration = 2;
  o = twoflow_info_request_to_json (&info);
  text = twoflow_json_to_line (o);
  json_object_unref (o);
  req = parse_ok (text);
  g_free (text);
  fail_unless_equals_int (req->kind, TWOFLOW_REQUEST_INFO);
  fail_unless_equals_string (req->info.video, "w.ts");
  fail_unless (req->info.policy_ip);
  fail_unless_equals_float (req->info.segment_duration, 2);
  twoflow_request_free (req);
  twoflow_video_request_clear (&info);

  o = twoflow_simple_request_to_json (TWOFLOW_REQUEST_STATS, 9);
  text = twoflow_json_to_line (o);
  json_object_unref (o);
  fail_unless_equals_string (text, "{\"cmd\":\"STATS\",\"session\":9}");
  g_free (text);
}

GST_END_TEST;

/* PLAY's reply, written by the server, read by the proxy */
GST_START_TEST (test_play_reply)
{
  TwoflowPlayReply in, out;
  JsonObject *o = json_object_new ();
  gchar *text;

  twoflow_play_reply_init (&in);
  in.session = 77;
  in.lead = 0.5;
  in.playout_depth = 1.25;
  in.smoothing = TRUE;
  in.startup_rate = 900000;
  twoflow_play_reply_to_json (&in, o);
  text = twoflow_json_to_line (o);
  /* no seek, no NAT: those members are not there */
  fail_if (strstr (text, "start_frames"), "%s", text);
  fail_if (strstr (text, "hello_id"), "%s", text);
  fail_if (strstr (text, "essential_port"), "%s", text);
  g_free (text);
  twoflow_play_reply_from_json (o, &out);
  fail_unless_equals_int (out.session, 77);
  fail_unless_equals_float (out.lead, 0.5);
  fail_unless_equals_float (out.playout_depth, 1.25);
  fail_unless (out.smoothing);
  fail_unless_equals_uint64 (out.startup_rate, 900000);
  fail_unless_equals_int64 (out.start_frames, -1);
  fail_unless_equals_int64 (out.hello_id, -1);
  json_object_unref (o);

  /* a seek behind NAT */
  o = json_object_new ();
  in.start = 12.0;
  in.start_frames = 300;
  in.start_audio_records = 0;
  in.essential_port = 40000;
  in.enhanced_port = 40001;
  in.hello_id = (G_GINT64_CONSTANT (1) << 52) + 5;
  twoflow_play_reply_to_json (&in, o);
  twoflow_play_reply_from_json (o, &out);
  fail_unless_equals_float (out.start, 12.0);
  fail_unless_equals_int64 (out.start_frames, 300);
  fail_unless_equals_int64 (out.start_audio_records, 0);
  fail_unless_equals_int (out.essential_port, 40000);
  fail_unless_equals_int (out.enhanced_port, 40001);
  fail_unless_equals_int64 (out.hello_id, (G_GINT64_CONSTANT (1) << 52) + 5);
  json_object_unref (o);
}

GST_END_TEST;

static Suite *
protocol_suite (void)
{
  Suite *s = suite_create ("twoflow-protocol");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_play_fields);
  tcase_add_test (tc, test_play_defaults);
  tcase_add_test (tc, test_play_invalid);
  tcase_add_test (tc, test_other_commands);
  tcase_add_test (tc, test_framing_limits);
  tcase_add_test (tc, test_proxy_round_trip);
  tcase_add_test (tc, test_play_reply);
  return s;
}

GST_CHECK_MAIN (protocol);
