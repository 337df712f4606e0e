/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: tests of the twoflowtracesrc element */
#include <string.h>
#include <stdio.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/check/gsttestclock.h>
#include <gst/base/gstbasesrc.h>
#include <gst/app/gstappsink.h>
#include <gst/twoflow/twoflowframe.h>

#include "twoflowtestutil.h"

#define NFRAMES 3000

/* frames in data/star-wars-iv.txt.xz */
#define TRACE_FRAMES 89998

/* The project's compressed trace (data/), as the element reads it. */
static gchar *
trace_path (void)
{
  const gchar *root = g_getenv ("TWOFLOW_SOURCE_ROOT");

  return g_build_filename (root ? root : ".", "data", "star-wars-iv.txt.xz",
      NULL);
}

/* The same trace decompressed by the xz program into a private plain-text
 * file (the caller unlinks it): a reference that owes nothing to the
 * element's decoder. */
static gchar *
plain_trace_path (void)
{
  gchar *xz = trace_path ();
  gchar *argv[] = { (gchar *) "xz", (gchar *) "-dc", xz, NULL };
  gchar *out = NULL, *err = NULL, *plain = twoflow_test_tmpfile ("sw.txt");
  gsize len;
  gint status;
  GError *error = NULL;

  fail_unless (g_spawn_sync (NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL,
          NULL, &out, &err, &status, &error), "xz: %s",
      error ? error->message : "?");
  fail_unless (g_spawn_check_wait_status (status, NULL), "xz -dc %s: %s", xz,
      err);
  len = strlen (out);
  fail_unless (len > 1000000, "%s decompresses to %zu bytes", xz, len);
  fail_unless (g_file_set_contents (plain, out, len, NULL));
  g_free (out);
  g_free (err);
  g_free (xz);
  return plain;
}

/* Types and sizes of the first @n frames, read independently (from the
 * plain-text copy). */
static void
read_trace (gchar * types, guint * sizes, guint n)
{
  gchar *path = plain_trace_path ();
  FILE *f = fopen (path, "r");
  guint i, idx, ms, bytes;
  gchar t;

  fail_unless (f != NULL);
  for (i = 0; i < n; i++) {
    fail_unless_equals_int (fscanf (f, "%u %c %u %u", &idx, &t, &ms, &bytes),
        4);
    types[i] = t;
    sizes[i] = bytes;
  }
  fclose (f);
  g_unlink (path);
  g_free (path);
}

/* Every record a twoflowtracesrc produces (its properties in @props),
 * concatenated. */
static GByteArray *
trace_records (const gchar * location, const gchar * props)
{
  gchar *desc = g_strdup_printf ("twoflowtracesrc location=%s %s "
      "! appsink name=sink sync=false", location, props);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  GByteArray *all = g_byte_array_new ();
  GstSample *s;

  fail_unless (p != NULL, "%s", desc);
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  while ((s = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    GstMapInfo map;
    GstBuffer *buf = gst_sample_get_buffer (s);

    gst_buffer_map (buf, &map, GST_MAP_READ);
    g_byte_array_append (all, map.data, map.size);
    gst_buffer_unmap (buf, &map);
    gst_sample_unref (s);
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (desc);
  return all;
}

GST_START_TEST (test_trace_all_frames)
{
  gchar *path = trace_path ();
  gchar *desc = g_strdup_printf ("twoflowtracesrc location=%s num-frames=%d "
      "! appsink name=sink sync=false", path, NFRAMES);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  gchar *types = g_malloc0 (NFRAMES + 1);
  guint *sizes = g_new0 (guint, NFRAMES);
  GstSample *s;
  guint n = 0, records = 0;

  read_trace (types, sizes, NFRAMES);
  gst_element_set_state (p, GST_STATE_PLAYING);
  while ((s = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    GstBuffer *buf = gst_sample_get_buffer (s);
    GstTwoflowFrameHeader h;
    guint8 raw[GST_TWOFLOW_HEADER_SIZE];

    gst_buffer_extract (buf, 0, raw, sizeof (raw));
    fail_unless_equals_int (gst_twoflow_frame_header_parse (raw, sizeof (raw),
            &h), GST_TWOFLOW_PARSE_OK);
    fail_unless_equals_int (gst_buffer_get_size (buf),
        GST_TWOFLOW_HEADER_SIZE + h.payload_size);
    if (records == 0)
      fail_unless_equals_int (h.kind, GST_TWOFLOW_RECORD_CAPS);
    if (h.kind == GST_TWOFLOW_RECORD_FRAME) {
      guint8 b;

      fail_unless_equals_int (h.frame_no, n);
      fail_unless_equals_int (gst_twoflow_picture_type_to_char
          (h.picture_type), types[n]);
      fail_unless_equals_int (h.payload_size, sizes[n]);
      fail_unless_equals_uint64 (h.dts, n * 40 * GST_MSECOND);
      gst_buffer_extract (buf, GST_TWOFLOW_HEADER_SIZE + 7, &b, 1);
      fail_unless_equals_int (b, (n + 7) % 251);
      n++;
    } else if (h.kind == GST_TWOFLOW_RECORD_END) {
      fail_unless_equals_int (h.frame_no, NFRAMES);
    }
    records++;
    gst_sample_unref (s);
  }
  fail_unless_equals_int (n, NFRAMES);
  fail_unless_equals_int (records, NFRAMES + 2);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (types);
  g_free (sizes);
  g_free (desc);
  g_free (path);
}

GST_END_TEST;

/* Two readers of the trace, one per flow, merged back. */
GST_START_TEST (test_trace_two_flows_merge)
{
  gchar *path = trace_path ();
  gchar *desc = g_strdup_printf ("twoflowmerge name=m ! fakesink "
      "twoflowtracesrc location=%s flow=essential num-frames=%d ! m.essential "
      "twoflowtracesrc location=%s flow=enhanced num-frames=%d ! m.enhanced",
      path, NFRAMES, path, NFRAMES);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *m = gst_bin_get_by_name (GST_BIN (p), "m");
  gchar *types = g_malloc0 (NFRAMES + 1);
  guint *sizes = g_new0 (guint, NFRAMES);
  guint i, count[128] = { 0 };
  GstStructure *s;
  gchar *err = NULL;

  read_trace (types, sizes, NFRAMES);
  for (i = 0; i < NFRAMES; i++)
    count[(guint) types[i]]++;
  fail_unless (twoflow_test_run_pipeline (p, &err), "%s", err);
  g_object_get (m, "stats", &s, NULL);
  twoflow_test_check_stat (s, "received-i", count['I']);
  twoflow_test_check_stat (s, "received-p", count['P']);
  twoflow_test_check_stat (s, "received-b", count['B']);
  twoflow_test_check_stat (s, "output-frames", NFRAMES);
  twoflow_test_check_stat (s, "E_f", 0);
  gst_structure_free (s);
  gst_object_unref (m);
  gst_object_unref (p);
  g_free (types);
  g_free (sizes);
  g_free (desc);
  g_free (path);
}

GST_END_TEST;

/* The .xz trace and its plain-text decompression give the same records,
 * byte for byte, for both flows. */
GST_START_TEST (test_trace_xz_same_as_plain)
{
  gchar *xz = trace_path ();
  gchar *plain = plain_trace_path ();
  const gchar *props[] = { "flow=essential", "flow=enhanced policy=ip",
    "flow=all"
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (props); i++) {
    gchar *p = g_strdup_printf ("%s num-frames=%d", props[i], NFRAMES);
    GByteArray *a = trace_records (xz, p);
    GByteArray *b = trace_records (plain, p);

    fail_unless (a->len > (guint) NFRAMES * GST_TWOFLOW_HEADER_SIZE / 3,
        "%s: %u bytes", p, a->len);
    fail_unless_equals_int (a->len, b->len);
    fail_unless (memcmp (a->data, b->data, a->len) == 0, "%s: records differ",
        p);
    g_byte_array_unref (a);
    g_byte_array_unref (b);
    g_free (p);
  }
  g_unlink (plain);
  g_free (plain);
  g_free (xz);
}

GST_END_TEST;

/* The whole hour decompresses: every frame, the last one included, has
 * the type and (scaled) size of the plain-text trace. */
GST_START_TEST (test_trace_xz_whole)
{
  gchar *xz = trace_path ();
  gchar *types = g_malloc0 (TRACE_FRAMES + 1);
  guint *sizes = g_new0 (guint, TRACE_FRAMES);
  GByteArray *all;
  gsize off = 0;
  guint n = 0;

  read_trace (types, sizes, TRACE_FRAMES);
  all = trace_records (xz, "size-scale=0.001");
  while (off < all->len) {
    GstTwoflowFrameHeader h;

    fail_unless_equals_int (gst_twoflow_frame_header_parse (all->data + off,
            all->len - off, &h), GST_TWOFLOW_PARSE_OK);
    if (h.kind == GST_TWOFLOW_RECORD_FRAME) {
      fail_unless (n < TRACE_FRAMES);
      fail_unless_equals_int (h.frame_no, n);
      fail_unless_equals_int (gst_twoflow_picture_type_to_char
          (h.picture_type), types[n]);
      fail_unless_equals_int (h.payload_size, MAX (1,
              (guint) (sizes[n] * 0.001 + 0.5)));
      n++;
    }
    off += GST_TWOFLOW_HEADER_SIZE + h.payload_size;
  }
  fail_unless_equals_int (n, TRACE_FRAMES);
  g_byte_array_unref (all);
  g_free (types);
  g_free (sizes);
  g_free (xz);
}

GST_END_TEST;

/* A truncated or corrupted .xz file is an error that says so, not a
 * shorter trace. */
GST_START_TEST (test_trace_xz_damaged)
{
  gchar *xz = trace_path ();
  gchar *bad = twoflow_test_tmpfile ("bad-trace.txt.xz");
  gchar *desc = g_strdup_printf ("twoflowtracesrc location=%s ! fakesink", bad);
  gchar *data, *err = NULL;
  gsize len;

  fail_unless (g_file_get_contents (xz, &data, &len, NULL));

  /* the first half of the file */
  fail_unless (g_file_set_contents (bad, data, len / 2, NULL));
  fail_if (twoflow_test_run (desc, &err));
  fail_unless (strstr (err, "corrupt or truncated xz data") != NULL, "%s",
      err);
  g_clear_pointer (&err, g_free);

  /* one flipped byte in the middle (the xz check catches it) */
  data[len / 2] ^= 0x10;
  fail_unless (g_file_set_contents (bad, data, len, NULL));
  fail_if (twoflow_test_run (desc, &err));
  fail_unless (strstr (err, "corrupt or truncated xz data") != NULL, "%s",
      err);
  g_clear_pointer (&err, g_free);

  /* the magic bytes alone */
  fail_unless (g_file_set_contents (bad, data, 6, NULL));
  fail_if (twoflow_test_run (desc, &err));
  fail_unless (strstr (err, "corrupt or truncated xz data") != NULL, "%s",
      err);
  g_clear_pointer (&err, g_free);

  g_unlink (bad);
  g_free (bad);
  g_free (desc);
  g_free (data);
  g_free (xz);
}

GST_END_TEST;

GST_START_TEST (test_trace_bad_file)
{
  gchar *bad = twoflow_test_tmpfile ("bad-trace.txt");
  gchar *desc = g_strdup_printf ("twoflowtracesrc location=%s ! fakesink", bad);
  gchar *err = NULL;

  fail_unless (g_file_set_contents (bad, "1 I 0 100\n2 X 40 20\n", -1, NULL));
  fail_if (twoflow_test_run (desc, &err));
  fail_unless (strstr (err, "line 2") != NULL, "%s", err);
  g_free (err);

  /* binary, not xz: an error quoting the line as valid UTF-8 (no warning) */
  fail_unless (g_file_set_contents (bad, "\xff\xfe\x80 binary\n", -1, NULL));
  fail_if (twoflow_test_run (desc, &err));
  fail_unless (strstr (err, "line 1") != NULL, "%s", err);
  fail_unless (g_utf8_validate (err, -1, NULL));
  g_free (err);
  g_free (desc);

  desc = g_strdup ("twoflowtracesrc location=/nonexistent/trace ! fakesink");
  fail_if (twoflow_test_run (desc, &err));
  fail_unless (strstr (err, "Cannot use trace") != NULL, "%s", err);
  g_free (err);
  g_free (desc);
  g_unlink (bad);
  g_free (bad);
}

GST_END_TEST;

/* DTS of a record's header (not of the GstBuffer, which basesrc may shift). */
static GstClockTime
record_dts (GstBuffer * buf, GstTwoflowRecordKind * kind)
{
  GstTwoflowFrameHeader h;
  guint8 raw[GST_TWOFLOW_HEADER_SIZE];

  gst_buffer_extract (buf, 0, raw, sizeof (raw));
  fail_unless_equals_int (gst_twoflow_frame_header_parse (raw, sizeof (raw),
          &h), GST_TWOFLOW_PARSE_OK);
  *kind = h.kind;
  return h.dts;
}

static gboolean
query_live (GstElement * e, GstClockTime * min)
{
  GstQuery *q = gst_query_new_latency ();
  gboolean live = FALSE;

  fail_unless (gst_element_query (e, q));
  gst_query_parse_latency (q, &live, min, NULL);
  gst_query_unref (q);
  return live;
}

#define LIVE_FRAMES 20
#define LIVE_AHEAD (100 * GST_MSECOND)

/* is-live=true: no frame is produced before its running time (its decode
 * time less `ahead`); the test clock only moves when the source waits. */
GST_START_TEST (test_trace_live)
{
  gchar *path = trace_path ();
  GstHarness *h = gst_harness_new ("twoflowtracesrc");
  GstTestClock *clock;
  gboolean live;
  GstClockTime min = GST_CLOCK_TIME_NONE;
  guint i;

  g_object_get (h->element, "is-live", &live, NULL);
  fail_if (live, "is-live must default to FALSE");
  g_object_set (h->element, "location", path, "num-frames",
      (gint64) LIVE_FRAMES, "ahead", (guint64) LIVE_AHEAD, "is-live", TRUE,
      NULL);
  g_object_get (h->element, "is-live", &live, NULL);
  fail_unless (live);
  fail_unless (gst_base_src_is_live (GST_BASE_SRC (h->element)));

  gst_harness_use_testclock (h);
  clock = gst_harness_get_testclock (h);
  gst_harness_play (h);

  /* the caps record, then every frame, then the end record */
  for (i = 0; i < LIVE_FRAMES + 2; i++) {
    GstClockTime due = i == 0 ? 0 : (i - 1) * 40 * GST_MSECOND;
    GstClockID id;
    GstBuffer *buf;
    GstTwoflowRecordKind kind;

    due = i == LIVE_FRAMES + 1 ? LIVE_FRAMES * 40 * GST_MSECOND : due;
    due = due > LIVE_AHEAD ? due - LIVE_AHEAD : 0;
    /* the source waits on the clock for the record's time ... */
    gst_test_clock_wait_for_next_pending_id (clock, &id);
    fail_unless_equals_uint64 (gst_clock_id_get_time (id), due);
    gst_clock_id_unref (id);
    /* ... and has not pushed it yet */
    fail_unless_equals_int (gst_harness_buffers_received (h), i);
    fail_unless (gst_harness_try_pull (h) == NULL);
    if (i == 1) {
      /* a live source reports itself live in the latency query */
      fail_unless (query_live (h->element, &min));
      fail_unless_equals_uint64 (min, 0);
    }
    fail_unless (gst_harness_crank_single_clock_wait (h));
    buf = gst_harness_pull (h);
    fail_unless (buf != NULL);
    fail_unless (gst_clock_get_time (GST_CLOCK (clock)) >= due);
    if (i > 0 && i <= LIVE_FRAMES) {
      fail_unless_equals_uint64 (record_dts (buf, &kind),
          (i - 1) * 40 * GST_MSECOND);
      fail_unless_equals_int (kind, GST_TWOFLOW_RECORD_FRAME);
    }
    gst_buffer_unref (buf);
  }
  /* then EOS, without another wait */
  for (;;) {
    GstEvent *ev = gst_harness_pull_event (h);
    gboolean eos;

    fail_unless (ev != NULL);
    eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    gst_event_unref (ev);
    if (eos)
      break;
  }
  fail_unless_equals_int (gst_test_clock_peek_id_count (clock), 0);
  gst_object_unref (clock);
  gst_harness_teardown (h);
  g_free (path);
}

GST_END_TEST;

/* Not live (the default): every record comes without any clock wait. */
GST_START_TEST (test_trace_not_live)
{
  gchar *path = trace_path ();
  GstHarness *h = gst_harness_new ("twoflowtracesrc");
  GstTestClock *clock;
  GstClockTime min;
  guint i;

  g_object_set (h->element, "location", path, "num-frames",
      (gint64) LIVE_FRAMES, "ahead", (guint64) LIVE_AHEAD, NULL);
  fail_if (gst_base_src_is_live (GST_BASE_SRC (h->element)));
  gst_harness_use_testclock (h);
  clock = gst_harness_get_testclock (h);
  gst_harness_play (h);
  for (i = 0; i < LIVE_FRAMES + 2; i++)
    gst_buffer_unref (gst_harness_pull (h));
  fail_unless_equals_int (gst_test_clock_peek_id_count (clock), 0);
  fail_unless_equals_uint64 (gst_clock_get_time (GST_CLOCK (clock)), 0);
  fail_if (query_live (h->element, &min));
  gst_object_unref (clock);
  gst_harness_teardown (h);
  g_free (path);
}

GST_END_TEST;

static Suite *
twoflowtracesrc_suite (void)
{
  Suite *s = suite_create ("twoflowtracesrc");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_trace_all_frames);
  tcase_add_test (tc, test_trace_two_flows_merge);
  tcase_add_test (tc, test_trace_xz_same_as_plain);
  tcase_add_test (tc, test_trace_xz_whole);
  tcase_add_test (tc, test_trace_xz_damaged);
  tcase_add_test (tc, test_trace_bad_file);
  tcase_add_test (tc, test_trace_live);
  tcase_add_test (tc, test_trace_not_live);
  return s;
}

GST_CHECK_MAIN (twoflowtracesrc);
