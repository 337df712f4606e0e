/* twoflow: tests of the twoflowtracesrc element */
#include <string.h>
#include <stdio.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
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

static Suite *
twoflowtracesrc_suite (void)
{
  Suite *s = suite_create ("twoflowtracesrc");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_trace_all_frames);
  tcase_add_test (tc, test_trace_two_flows_merge);
  tcase_add_test (tc, test_trace_bad_file);
  return s;
}

GST_CHECK_MAIN (twoflowtracesrc);
