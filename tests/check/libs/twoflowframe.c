/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: unit tests of the frame format, the damage accounting and the
 * GstNetworkCongestion helpers (gst-libs/gst/twoflow). */
#include <string.h>
#include <zlib.h>
#include <gst/check/gstcheck.h>
#include <gst/base/gstadapter.h>
#include <gst/twoflow/twoflowframe.h>
#include <gst/twoflow/twoflowdamage.h>
#include <gst/twoflow/networkcongestion.h>

static GstTwoflowFrameHeader
sample_header (void)
{
  GstTwoflowFrameHeader h;

  gst_twoflow_frame_header_init (&h);
  h.kind = GST_TWOFLOW_RECORD_FRAME;
  h.codec = GST_TWOFLOW_CODEC_MPEG2;
  h.picture_type = GST_TWOFLOW_PICTURE_B;
  h.flags = 0;
  h.frame_no = 123456;
  h.gop_no = 789;
  h.segment_no = 3;
  h.depends_from = 123450;
  h.history = G_GUINT64_CONSTANT (0xfedcba9876543210);
  h.pts = 5 * GST_SECOND;
  h.dts = 4 * GST_SECOND;
  h.duration = 40 * GST_MSECOND;
  h.payload_size = 42;
  return h;
}

GST_START_TEST (test_header_roundtrip)
{
  GstTwoflowFrameHeader in = sample_header (), out;
  guint8 raw[GST_TWOFLOW_HEADER_SIZE];

  gst_twoflow_frame_header_write (&in, raw);
  fail_unless_equals_int (GST_READ_UINT32_BE (raw), GST_TWOFLOW_MAGIC);
  fail_unless_equals_int (gst_twoflow_frame_header_parse (raw, sizeof (raw),
          &out), GST_TWOFLOW_PARSE_OK);
  fail_unless_equals_int (out.kind, in.kind);
  fail_unless_equals_int (out.codec, in.codec);
  fail_unless_equals_int (out.picture_type, in.picture_type);
  fail_unless_equals_int (out.frame_no, in.frame_no);
  fail_unless_equals_int (out.gop_no, in.gop_no);
  fail_unless_equals_int (out.segment_no, in.segment_no);
  fail_unless_equals_int (out.depends_from, in.depends_from);
  fail_unless_equals_uint64 (out.history, in.history);
  fail_unless_equals_uint64 (out.pts, in.pts);
  fail_unless_equals_uint64 (out.dts, in.dts);
  fail_unless_equals_uint64 (out.duration, in.duration);
  fail_unless_equals_int (out.payload_size, in.payload_size);
}

GST_END_TEST;

GST_START_TEST (test_header_errors)
{
  GstTwoflowFrameHeader in = sample_header (), out;
  guint8 raw[GST_TWOFLOW_HEADER_SIZE], bad[GST_TWOFLOW_HEADER_SIZE];
  guint i;

  gst_twoflow_frame_header_write (&in, raw);
  for (i = 4; i < sizeof (raw); i++)
    fail_unless_equals_int (gst_twoflow_frame_header_parse (raw, i, &out),
        GST_TWOFLOW_PARSE_NEED_MORE);

  memcpy (bad, raw, sizeof (raw));
  bad[0] = 'X';
  fail_unless_equals_int (gst_twoflow_frame_header_parse (bad, 4, &out),
      GST_TWOFLOW_PARSE_BAD_MAGIC);

  /* any flipped bit after the magic is caught */
  for (i = 4 * 8; i < sizeof (raw) * 8; i++) {
    memcpy (bad, raw, sizeof (raw));
    bad[i / 8] ^= 1 << (i % 8);
    fail_if (gst_twoflow_frame_header_parse (bad, sizeof (bad), &out) ==
        GST_TWOFLOW_PARSE_OK, "bit %u flip accepted", i);
  }

  memcpy (bad, raw, sizeof (raw));
  bad[4] = GST_TWOFLOW_VERSION + 1;
  fail_unless_equals_int (gst_twoflow_frame_header_parse (bad, sizeof (bad),
          &out), GST_TWOFLOW_PARSE_BAD_VERSION);

  /* valid checksum, impossible field: depends on a later frame */
  in.depends_from = in.frame_no + 1;
  gst_twoflow_frame_header_write (&in, bad);
  fail_unless_equals_int (gst_twoflow_frame_header_parse (bad, sizeof (bad),
          &out), GST_TWOFLOW_PARSE_BAD_FIELD);
  in = sample_header ();
  in.payload_size = GST_TWOFLOW_MAX_PAYLOAD + 1;
  gst_twoflow_frame_header_write (&in, bad);
  fail_unless_equals_int (gst_twoflow_frame_header_parse (bad, sizeof (bad),
          &out), GST_TWOFLOW_PARSE_BAD_FIELD);
}

GST_END_TEST;

/* Rewrites a header as version 1 (valid checksum). */
static void
as_version_1 (guint8 raw[GST_TWOFLOW_HEADER_SIZE])
{
  raw[4] = 1;
  GST_WRITE_UINT32_BE (raw + GST_TWOFLOW_HEADER_SIZE - 4,
      (guint32) crc32 (0, raw, GST_TWOFLOW_HEADER_SIZE - 4));
}

GST_START_TEST (test_audio_records)
{
  GstCaps *caps = gst_caps_from_string ("audio/mpeg, mpegversion=(int)4, "
      "stream-format=(string)raw, rate=(int)48000, channels=(int)2");
  GstBuffer *payload = gst_buffer_new_wrapped (g_strdup ("aacframe"), 8);
  GstBuffer *rec;
  GstTwoflowParser *p = gst_twoflow_parser_new ();
  GstTwoflowFrameHeader h;
  GstBuffer *got;
  GstMapInfo map;
  guint8 raw[GST_TWOFLOW_HEADER_SIZE];

  GST_BUFFER_PTS (payload) = 36000 * GST_SECOND + 21 * GST_MSECOND;
  GST_BUFFER_DURATION (payload) = 21333333;

  gst_twoflow_parser_push (p, gst_twoflow_record_new_audio_caps (caps));
  gst_twoflow_parser_push (p, gst_twoflow_record_new_audio (7, 3, payload));

  fail_unless_equals_int (gst_twoflow_parser_pop (p, &h, &got),
      GST_TWOFLOW_PARSE_OK);
  fail_unless_equals_int (h.kind, GST_TWOFLOW_RECORD_AUDIO_CAPS);
  gst_buffer_map (got, &map, GST_MAP_READ);
  {
    gchar *str = g_strndup ((gchar *) map.data, map.size);
    GstCaps *back = gst_caps_from_string (str);

    fail_unless (gst_caps_is_equal (back, caps));
    gst_caps_unref (back);
    g_free (str);
  }
  gst_buffer_unmap (got, &map);
  gst_buffer_unref (got);

  fail_unless_equals_int (gst_twoflow_parser_pop (p, &h, &got),
      GST_TWOFLOW_PARSE_OK);
  fail_unless_equals_int (h.kind, GST_TWOFLOW_RECORD_AUDIO);
  fail_unless_equals_int (h.frame_no, 7);
  fail_unless_equals_int (h.segment_no, 3);
  fail_unless_equals_int (h.picture_type, GST_TWOFLOW_PICTURE_NONE);
  fail_unless (h.flags & GST_TWOFLOW_FLAG_ESSENTIAL);
  fail_unless_equals_uint64 (h.pts, GST_BUFFER_PTS (payload));
  fail_unless_equals_uint64 (h.duration, 21333333);
  fail_unless (gst_buffer_memcmp (got, 0, "aacframe", 8) == 0);
  gst_buffer_unref (got);

  /* an audio record must not claim a picture type or a video codec */
  h.picture_type = GST_TWOFLOW_PICTURE_I;
  gst_twoflow_frame_header_write (&h, raw);
  fail_unless_equals_int (gst_twoflow_frame_header_parse (raw, sizeof (raw),
          &h), GST_TWOFLOW_PARSE_BAD_FIELD);

  /* version 1 headers are still read, but version 1 has no audio kinds */
  rec = gst_twoflow_record_new_end (GST_TWOFLOW_CODEC_MPEG2, 5, 0);
  gst_buffer_extract (rec, 0, raw, sizeof (raw));
  as_version_1 (raw);
  fail_unless_equals_int (gst_twoflow_frame_header_parse (raw, sizeof (raw),
          &h), GST_TWOFLOW_PARSE_OK);
  fail_unless_equals_int (h.kind, GST_TWOFLOW_RECORD_END);
  gst_buffer_unref (rec);
  rec = gst_twoflow_record_new_audio (0, 0, payload);
  gst_buffer_extract (rec, 0, raw, sizeof (raw));
  as_version_1 (raw);
  fail_unless_equals_int (gst_twoflow_frame_header_parse (raw, sizeof (raw),
          &h), GST_TWOFLOW_PARSE_BAD_FIELD);
  gst_buffer_unref (rec);

  gst_buffer_unref (payload);
  gst_caps_unref (caps);
  gst_twoflow_parser_free (p);
}

GST_END_TEST;

static GstBuffer *
payload_of (guint i, gsize size)
{
  guint8 *data = g_malloc (size);
  gsize k;

  for (k = 0; k < size; k++)
    data[k] = (guint8) (i * 31 + k);
  return gst_buffer_new_wrapped (data, size);
}

/* Records survive a byte stream cut at every possible place. */
GST_START_TEST (test_parser_byte_stream)
{
  GstTwoflowParser *p = gst_twoflow_parser_new ();
  GstAdapter *stream = gst_adapter_new ();
  GstCaps *caps = gst_caps_from_string ("video/mpeg, mpegversion=(int)2");
  GstTwoflowFrameHeader h = sample_header (), got;
  GstBuffer *all, *payload;
  GstMapInfo map;
  guint i, n = 0, chunk;
  gsize off;

  gst_adapter_push (stream, gst_twoflow_record_new_caps (h.codec, caps));
  for (i = 0; i < 20; i++) {
    GstBuffer *pl = payload_of (i, i * 37 + 1);

    h.frame_no = i;
    h.depends_from = i;
    gst_adapter_push (stream, gst_twoflow_record_new (&h, pl));
    gst_buffer_unref (pl);
  }
  gst_adapter_push (stream, gst_twoflow_record_new_end (h.codec, 20, 0x9));
  all = gst_adapter_take_buffer (stream, gst_adapter_available (stream));
  gst_buffer_map (all, &map, GST_MAP_READ);

  for (chunk = 1; chunk < 300; chunk += 41) {
    gst_twoflow_parser_reset (p);
    n = 0;
    for (off = 0; off < map.size; off += chunk) {
      gsize len = MIN (chunk, map.size - off);

      gst_twoflow_parser_push (p, gst_buffer_new_memdup (map.data + off, len));
      while (gst_twoflow_parser_pop (p, &got, &payload) == GST_TWOFLOW_PARSE_OK) {
        if (n == 0) {
          GstMapInfo pm;
          GstCaps *back;

          fail_unless_equals_int (got.kind, GST_TWOFLOW_RECORD_CAPS);
          gst_buffer_map (payload, &pm, GST_MAP_READ);
          back = gst_caps_from_string (g_strndup ((gchar *) pm.data, pm.size));
          fail_unless (gst_caps_is_equal (back, caps));
          gst_caps_unref (back);
          gst_buffer_unmap (payload, &pm);
        } else if (n <= 20) {
          GstBuffer *want = payload_of (n - 1, (n - 1) * 37 + 1);

          fail_unless_equals_int (got.kind, GST_TWOFLOW_RECORD_FRAME);
          fail_unless_equals_int (got.frame_no, n - 1);
          fail_unless_equals_int (gst_buffer_get_size (payload),
              gst_buffer_get_size (want));
          {
            GstMapInfo wm;

            gst_buffer_map (want, &wm, GST_MAP_READ);
            fail_unless (gst_buffer_memcmp (payload, 0, wm.data, wm.size) == 0);
            gst_buffer_unmap (want, &wm);
          }
          gst_buffer_unref (want);
        } else {
          fail_unless_equals_int (got.kind, GST_TWOFLOW_RECORD_END);
          fail_unless_equals_int (got.frame_no, 20);
          fail_unless_equals_uint64 (got.history, 0x9);
        }
        gst_buffer_unref (payload);
        n++;
      }
    }
    fail_unless_equals_int (n, 22);
    fail_unless_equals_int (gst_twoflow_parser_available (p), 0);
  }

  gst_buffer_unmap (all, &map);
  gst_buffer_unref (all);
  gst_caps_unref (caps);
  g_object_unref (stream);
  gst_twoflow_parser_free (p);
}

GST_END_TEST;

GST_START_TEST (test_history)
{
  guint64 h = 0;
  GstTwoflowPictureType t;
  gboolean ref;
  guint i;
  /* 20 frames IBBP... pushed; the newest 16 are remembered */
  const gchar *pattern = "IPBBPBBPBBPBBIBBPB";

  fail_if (gst_twoflow_history_get (h, 1, &t, &ref));
  for (i = 0; pattern[i]; i++) {
    t = pattern[i] == 'I' ? GST_TWOFLOW_PICTURE_I : pattern[i] == 'P' ?
        GST_TWOFLOW_PICTURE_P : GST_TWOFLOW_PICTURE_B;
    h = gst_twoflow_history_push (h, t, t != GST_TWOFLOW_PICTURE_B);
  }
  for (i = 1; i <= GST_TWOFLOW_HISTORY_LEN; i++) {
    gchar want = pattern[strlen (pattern) - i];

    fail_unless (gst_twoflow_history_get (h, i, &t, &ref));
    fail_unless_equals_int (gst_twoflow_picture_type_to_char (t), want);
    fail_unless_equals_int (ref, want != 'B');
  }
  fail_if (gst_twoflow_history_get (h, 0, &t, &ref));
  fail_if (gst_twoflow_history_get (h, GST_TWOFLOW_HISTORY_LEN + 1, &t, &ref));
}

GST_END_TEST;

/* Feeds an MPEG-2 decode-order pattern with some frames lost. */
static void
feed_pattern (GstTwoflowDamage * d, const gchar * pattern, const gchar * lost,
    gboolean * decodable)
{
  guint32 last_ref = GST_TWOFLOW_NO_FRAME, prev_ref = GST_TWOFLOW_NO_FRAME;
  guint i;

  for (i = 0; pattern[i]; i++) {
    GstTwoflowFrameHeader h;

    gst_twoflow_frame_header_init (&h);
    h.frame_no = i;
    h.picture_type = pattern[i] == 'I' ? GST_TWOFLOW_PICTURE_I :
        pattern[i] == 'P' ? GST_TWOFLOW_PICTURE_P : GST_TWOFLOW_PICTURE_B;
    h.flags = pattern[i] != 'B' ? GST_TWOFLOW_FLAG_REFERENCE : 0;
    h.depends_from = pattern[i] == 'I' ? i : pattern[i] == 'P' ? last_ref :
        (prev_ref != GST_TWOFLOW_NO_FRAME ? prev_ref : last_ref);
    if (lost[i] == 'x') {
      gst_twoflow_damage_missing (d, i, h.picture_type, TRUE,
          pattern[i] != 'B');
      decodable[i] = FALSE;
    } else {
      decodable[i] = gst_twoflow_damage_frame (d, &h);
    }
    if (pattern[i] != 'B') {
      prev_ref = last_ref;
      last_ref = i;
    }
  }
  gst_twoflow_damage_finish (d);
}

GST_START_TEST (test_damage)
{
  GstTwoflowDamage d;
  gboolean ok[64];
  /* decode order, open GOPs: the two Bs after each I also use the last P */
  const gchar *pattern = "IPBBPBBPBBIBBPBBPBBPBBIBBPBB";
  const gchar *lost    = "....x...........x.........x.";
  /* P4 lost: B5 B6 (ref P4), P7 (ref P4), B8 B9 and, across the I, B11 B12
   * (ref P7). P16 lost: B17 B18, P19, B20 B21, and B23 B24 (ref P19).
   * B26 lost alone. */
  const gchar *want    = "....xxxxxx.xx...xxxxxx.xx.x.";
  GstStructure *s;
  guint i;

  gst_twoflow_damage_init (&d);
  feed_pattern (&d, pattern, lost, ok);
  for (i = 0; pattern[i]; i++)
    fail_unless (ok[i] == (want[i] == '.'), "frame %u", i);

  s = gst_structure_new_empty ("x");
  gst_twoflow_damage_to_structure (&d, s);
  {
    guint64 v;
    gdouble f;

#define U(name, val) fail_unless (gst_structure_get_uint64 (s, name, &v)); \
    fail_unless_equals_uint64 (v, val)
    U ("missing-p", 2);
    U ("missing-b", 1);
    U ("received-i", 3);
    U ("E_f", 6 + 8 + 3);
    U ("dropped", 17 - 3);
    U ("E_g", 3);
    U ("G_max", 8);
    U ("G_con_total", 6 + 6 + 2);
    U ("G_con_max", 6);
#undef U
    fail_unless (gst_structure_get_double (s, "G_avg", &f));
    fail_unless (G_APPROX_VALUE (f, 17.0 / 3, 1e-9));
    fail_unless (gst_structure_get_double (s, "G_con_avg", &f));
    fail_unless (G_APPROX_VALUE (f, 14.0 / 3, 1e-9));
  }
  gst_structure_free (s);
}

GST_END_TEST;

GST_START_TEST (test_congestion_event)
{
  GstNetworkCongestionType type;
  guint64 bitrate;
  GstClockTime srtt;
  const gchar *source;
  GstEvent *ev;
  GstMessage *msg;
  GstElement *el = gst_element_factory_make ("identity", "tp");

  ev = gst_network_congestion_event_new (GST_NETWORK_CONGESTION_DUPACK,
      1500000, 42 * GST_MSECOND, "ctcpsink0");
  fail_unless_equals_int (GST_EVENT_TYPE (ev), GST_EVENT_CUSTOM_UPSTREAM);
  fail_unless (gst_network_congestion_event_parse (ev, &type, &bitrate, &srtt,
          &source));
  fail_unless_equals_int (type, GST_NETWORK_CONGESTION_DUPACK);
  fail_unless_equals_uint64 (bitrate, 1500000);
  fail_unless_equals_uint64 (srtt, 42 * GST_MSECOND);
  fail_unless_equals_string (source, "ctcpsink0");
  gst_event_unref (ev);

  /* any other custom upstream event is not ours */
  ev = gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
      gst_structure_new_empty ("other"));
  fail_if (gst_network_congestion_event_parse (ev, &type, NULL, NULL, NULL));
  gst_event_unref (ev);

  msg = gst_network_congestion_message_new (GST_OBJECT (el),
      GST_NETWORK_CONGESTION_RATE, 800000, GST_CLOCK_TIME_NONE);
  fail_unless (gst_network_congestion_message_parse (msg, &type, &bitrate,
          &srtt, &source));
  fail_unless_equals_int (type, GST_NETWORK_CONGESTION_RATE);
  fail_unless_equals_uint64 (srtt, GST_CLOCK_TIME_NONE);
  fail_unless_equals_string (source, "tp");
  gst_message_unref (msg);

  fail_unless (gst_network_congestion_type_from_string ("recovered", &type));
  fail_unless_equals_int (type, GST_NETWORK_CONGESTION_RECOVERED);
  fail_if (gst_network_congestion_type_from_string ("bogus", &type));
  fail_unless (G_TYPE_IS_FLAGS (GST_TYPE_NETWORK_CONGESTION_TYPE));
  gst_object_unref (el);
}

GST_END_TEST;

static Suite *
twoflowframe_suite (void)
{
  Suite *s = suite_create ("twoflowframe");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_header_roundtrip);
  tcase_add_test (tc, test_header_errors);
  tcase_add_test (tc, test_audio_records);
  tcase_add_test (tc, test_parser_byte_stream);
  tcase_add_test (tc, test_history);
  tcase_add_test (tc, test_damage);
  tcase_add_test (tc, test_congestion_event);
  return s;
}

GST_CHECK_MAIN (twoflowframe);
