/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "twoflow-hls.h"

#include <math.h>
#include <gst/video/video.h>

struct _TwoflowHls
{
  GMutex lock;
  gchar *dir;
  GstClockTime target;
  GstPad *video, *files;        /* the mux's video input's peer, the sink's */
  gulong video_probe, files_probe;
  GArray *cuts;                 /* GstClockTime: each segment's first key frame */
  GstClockTime end;             /* the video's end so far (pts + duration) */
  guint cuts_sent;
  gboolean opened, switching, finished;
  guint open_index;             /* the file being written */
};

/* with the lock */
static void
write_playlist (TwoflowHls * h)
{
  GString *s = g_string_new (NULL);
  gdouble *dur, max = 0;
  guint n = h->open_index + 1, i;
  gchar *file;
  GError *err = NULL;

  dur = g_new0 (gdouble, n);
  for (i = 0; i < n; i++) {
    GstClockTime a = i < h->cuts->len ?
        g_array_index (h->cuts, GstClockTime, i) : GST_CLOCK_TIME_NONE;
    GstClockTime b = i + 1 < h->cuts->len ?
        g_array_index (h->cuts, GstClockTime, i + 1) : h->finished ? h->end :
        GST_CLOCK_TIME_NONE;
    if (GST_CLOCK_TIME_IS_VALID (a) && GST_CLOCK_TIME_IS_VALID (b) && b > a)
      dur[i] = (gdouble) (b - a) / GST_SECOND;
    else                        /* the open segment: as long as the last one */
      dur[i] = i > 0 ? dur[i - 1] : (gdouble) h->target / GST_SECOND;
    max = MAX (max, dur[i]);
  }
  g_string_append_printf (s, "#EXTM3U\n#EXT-X-VERSION:3\n"
      "#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-TARGETDURATION:%u\n",
      (guint) MAX (ceil (max), h->target / GST_SECOND));
  /* players that know LL-HLS ask for the next segment's playlist at once
   * (_HLS_msn) and the HTTP side holds it until the segment opens */
  if (!h->finished)
    g_string_append (s, "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES\n");
  for (i = 0; i < n; i++)
    g_string_append_printf (s, "#EXTINF:%.3f,\nsegment%05u.ts\n", dur[i], i);
  if (h->finished)
    g_string_append (s, "#EXT-X-ENDLIST\n");
  file = g_build_filename (h->dir, "index.m3u8", NULL);
  /* atomic: a reader sees the old playlist or the new one */
  if (!g_file_set_contents (file, s->str, s->len, &err)) {
    g_printerr ("HLS: %s\n", err->message);
    g_clear_error (&err);
  }
  g_free (file);
  g_free (dur);
  g_string_free (s, TRUE);
}

/* the mux's video input: a key frame a target duration or more after the
 * open segment's first one starts the next segment (a force-key-unit event
 * ahead of it: mpegtsmux passes it on, with PAT/PMT, and multifilesink opens
 * the next file there) */
static GstPadProbeReturn
video_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  TwoflowHls *h = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime ts = GST_BUFFER_PTS_IS_VALID (buf) ? GST_BUFFER_PTS (buf) :
      GST_BUFFER_DTS (buf);
  gboolean cut = FALSE;
  guint count = 0;

  if (!GST_CLOCK_TIME_IS_VALID (ts))
    return GST_PAD_PROBE_OK;
  g_mutex_lock (&h->lock);
  if (!GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT)) {
    if (h->cuts->len == 0) {
      g_array_append_val (h->cuts, ts);
    } else if (ts >= g_array_index (h->cuts, GstClockTime,
            h->cuts->len - 1) + h->target) {
      g_array_append_val (h->cuts, ts);
      cut = TRUE;
      count = ++h->cuts_sent;
    }
  }
  ts += GST_BUFFER_DURATION_IS_VALID (buf) ? GST_BUFFER_DURATION (buf) : 0;
  if (!GST_CLOCK_TIME_IS_VALID (h->end) || ts > h->end)
    h->end = ts;
  g_mutex_unlock (&h->lock);
  if (cut)
    gst_pad_push_event (pad,
        gst_video_event_new_downstream_force_key_unit (GST_BUFFER_PTS (buf),
            GST_CLOCK_TIME_NONE, GST_CLOCK_TIME_NONE, TRUE, count));
  return GST_PAD_PROBE_OK;
}

/* multifilesink's input: its first buffer opens segment 0; the first
 * buffer after a force-key-unit event opens the next one (the previous file
 * is closed by then) */
static GstPadProbeReturn
files_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  TwoflowHls *h = data;

  g_mutex_lock (&h->lock);
  if (info->type & (GST_PAD_PROBE_TYPE_BUFFER |
          GST_PAD_PROBE_TYPE_BUFFER_LIST)) {
    if (!h->opened) {
      h->opened = TRUE;
      write_playlist (h);
    } else if (h->switching) {
      h->switching = FALSE;
      h->open_index++;
      write_playlist (h);
    }
  } else if (gst_video_event_is_force_key_unit (GST_PAD_PROBE_INFO_EVENT
          (info)) && h->opened) {
    h->switching = TRUE;
  }
  g_mutex_unlock (&h->lock);
  return GST_PAD_PROBE_OK;
}

TwoflowHls *
twoflow_hls_new (const gchar * dir, GstClockTime target, GstElement * mux,
    GstElement * files, GError ** error)
{
  TwoflowHls *h;
  GstPad *video = NULL;
  GstIterator *it = gst_element_iterate_sink_pads (mux);
  GValue v = G_VALUE_INIT;
  gchar *loc;

  while (!video && gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
    GstPad *peer = gst_pad_get_peer (g_value_get_object (&v));
    if (peer) {
      GstCaps *caps = gst_pad_query_caps (peer, NULL);
      const GstStructure *st = gst_caps_is_empty (caps) ? NULL :
          gst_caps_get_structure (caps, 0);
      if (st && g_str_has_prefix (gst_structure_get_name (st), "video/"))
        video = gst_object_ref (peer);
      gst_caps_unref (caps);
      gst_object_unref (peer);
    }
    g_value_reset (&v);
  }
  g_value_unset (&v);
  gst_iterator_free (it);
  if (!video) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "HLS: the muxer has no video input");
    return NULL;
  }
  h = g_new0 (TwoflowHls, 1);
  g_mutex_init (&h->lock);
  h->dir = g_strdup (dir);
  h->target = target;
  h->cuts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  h->end = GST_CLOCK_TIME_NONE;
  h->video = video;
  loc = g_build_filename (dir, "segment%05d.ts", NULL);
  g_object_set (files, "location", loc, NULL);
  g_free (loc);
  gst_util_set_object_arg (G_OBJECT (files), "next-file", "key-unit-event");
  h->files = gst_element_get_static_pad (files, "sink");
  h->video_probe = gst_pad_add_probe (video, GST_PAD_PROBE_TYPE_BUFFER,
      video_probe, h, NULL);
  /* mpegtsmux pushes buffer lists */
  h->files_probe = gst_pad_add_probe (h->files, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_BUFFER_LIST | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      files_probe, h, NULL);
  return h;
}

gboolean
twoflow_hls_growing (TwoflowHls * h, const gchar * name)
{
  gchar *open;
  gboolean r;

  g_mutex_lock (&h->lock);
  open = g_strdup_printf ("segment%05u.ts", h->open_index);
  r = !h->finished && g_str_equal (name, open);
  g_mutex_unlock (&h->lock);
  g_free (open);
  return r;
}

void
twoflow_hls_finish (TwoflowHls * h)
{
  g_mutex_lock (&h->lock);
  if (h->opened && !h->finished) {
    h->finished = TRUE;
    write_playlist (h);
  }
  g_mutex_unlock (&h->lock);
}

void
twoflow_hls_free (TwoflowHls * h)
{
  if (!h)
    return;
  gst_pad_remove_probe (h->video, h->video_probe);
  gst_pad_remove_probe (h->files, h->files_probe);
  gst_object_unref (h->video);
  gst_object_unref (h->files);
  g_array_free (h->cuts, TRUE);
  g_free (h->dir);
  g_mutex_clear (&h->lock);
  g_free (h);
}
