/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: helpers shared by the ratetranscoder tests (MPEG-2 and H.264). */
#include <string.h>
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
