/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: helpers shared by the ratetranscoder tests (MPEG-2, H.264,
 * H.265, AV1). */
#include <string.h>
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>

#include "transcodertestutil.h"

GPtrArray *
transcoder_test_generate (const gchar * desc, GstCaps ** caps)
{
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err);
  GstElement *sink;
  GPtrArray *bufs = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstSample *sample;

  /* also called outside the tests: no fail_unless here */
  if (!pipe)
    g_error ("%s: %s", desc, err ? err->message : "");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    if (caps && !*caps)
      *caps = gst_caps_copy (gst_sample_get_caps (sample));
    g_ptr_array_add (bufs, gst_buffer_ref (gst_sample_get_buffer (sample)));
    gst_sample_unref (sample);
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  return bufs;
}

gboolean
transcoder_test_buffers_equal (GstBuffer * a, GstBuffer * b)
{
  GstMapInfo ma, mb;
  gboolean eq;

  gst_buffer_map (a, &ma, GST_MAP_READ);
  gst_buffer_map (b, &mb, GST_MAP_READ);
  eq = ma.size == mb.size && memcmp (ma.data, mb.data, ma.size) == 0;
  gst_buffer_unmap (a, &ma);
  gst_buffer_unmap (b, &mb);
  return eq;
}

gdouble
transcoder_test_bitrate (GPtrArray * bufs)
{
  guint i;
  gdouble bytes = 0;

  for (i = 0; i < bufs->len; i++)
    bytes += gst_buffer_get_size (g_ptr_array_index (bufs, i));
  return bytes * 8 / (bufs->len / 25.0);
}

GPtrArray *
transcoder_test_new_array (void)
{
  return g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
}

GstBuffer *
transcoder_test_find_by_pts (GPtrArray * bufs, GstClockTime pts)
{
  guint i;

  for (i = 0; i < bufs->len; i++)
    if (GST_BUFFER_PTS (g_ptr_array_index (bufs, i)) == pts)
      return g_ptr_array_index (bufs, i);
  return NULL;
}

gdouble
transcoder_test_rate (GPtrArray * bufs, guint from, guint to)
{
  gdouble bits = 0;
  guint i;

  for (i = from; i < to && i < bufs->len; i++)
    bits += gst_buffer_get_size (g_ptr_array_index (bufs, i)) * 8.0;
  return bits / ((to - from) / 25.0);
}

GstHarness *
transcoder_test_harness (GstCaps * caps)
{
  GstHarness *h = gst_harness_new ("ratetranscoder");

  gst_harness_set_src_caps (h, gst_caps_ref (caps));
  g_object_set (h->element, "recovery", (guint64) 0, NULL);
  return h;
}

void
transcoder_test_push_range (GstHarness * h, GPtrArray * in, guint from,
    guint to, GPtrArray * out)
{
  GstBuffer *b;
  guint i;

  for (i = from; i < to; i++) {
    fail_unless_equals_int (gst_harness_push (h,
            gst_buffer_ref (g_ptr_array_index (in, i))), GST_FLOW_OK);
    while ((b = gst_harness_try_pull (h)))
      g_ptr_array_add (out, b);
  }
}

void
transcoder_test_finish (GstHarness * h, GPtrArray * out)
{
  GstBuffer *b;

  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  while ((b = gst_harness_try_pull (h)))
    g_ptr_array_add (out, b);
}

guint64
transcoder_test_stat_u64 (GstHarness * h, const gchar * field)
{
  GstStructure *s;
  guint64 v = 0;

  g_object_get (h->element, "stats", &s, NULL);
  fail_unless (gst_structure_get_uint64 (s, field, &v), "no %s", field);
  gst_structure_free (s);
  return v;
}

guint
transcoder_test_decode (GPtrArray * bufs, GstCaps * caps,
    const gchar * decoder, gchar ** format)
{
  gchar *desc = g_strdup_printf ("appsrc name=src format=time ! %s ! "
      "appsink name=sink sync=false", decoder);
  GstElement *pipe = gst_parse_launch (desc, NULL);
  GstElement *src, *sink;
  GstSample *sample;
  GstMessage *msg;
  guint i, n = 0;

  fail_unless (pipe != NULL, "%s", desc);
  g_free (desc);
  src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  g_object_set (src, "caps", caps, NULL);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  for (i = 0; i < bufs->len; i++)
    gst_app_src_push_buffer (GST_APP_SRC (src),
        gst_buffer_ref (g_ptr_array_index (bufs, i)));
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    if (n++ == 0 && format)
      *format = g_strdup (gst_structure_get_string (gst_caps_get_structure
              (gst_sample_get_caps (sample), 0), "format"));
    gst_sample_unref (sample);
  }
  while ((msg = gst_bus_pop_filtered (GST_ELEMENT_BUS (pipe),
              GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))) {
    GError *e;

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR)
      gst_message_parse_error (msg, &e, NULL);
    else
      gst_message_parse_warning (msg, &e, NULL);
    fail ("decoder said: %s", e->message);
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  return n;
}
