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

static gchar *
trace_path (void)
{
  const gchar *shared = g_getenv ("TWOFLOW_SHARED");

  return g_build_filename (shared ? shared : "../shared", "traces",
      "star-wars-iv.txt", NULL);
}

/* Types and sizes of the first @n frames, read independently. */
static void
read_trace (gchar * types, guint * sizes, guint n)
{
  gchar *path = trace_path ();
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
  g_free (path);
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

GST_START_TEST (test_trace_bad_file)
{
  gchar *bad = twoflow_test_tmpfile ("bad-trace.txt");
  gchar *desc = g_strdup_printf ("twoflowtracesrc location=%s ! fakesink", bad);
  gchar *err = NULL;

  fail_unless (g_file_set_contents (bad, "1 I 0 100\n2 X 40 20\n", -1, NULL));
  fail_if (twoflow_test_run (desc, &err));
  fail_unless (strstr (err, "line 2") != NULL, "%s", err);
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
  tcase_add_test (tc, test_trace_bad_file);
  tcase_add_test (tc, test_trace_live);
  tcase_add_test (tc, test_trace_not_live);
  return s;
}

GST_CHECK_MAIN (twoflowtracesrc);
