/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — benchmark: split+merge frames per second.
 *
 * Loads the parsed frames of an MPEG-2 stream, then pushes them cyclically
 * (timestamps continued) as one long stream through, side by side in one
 * run:
 *   baseline:    appsrc ! fakesink
 *   split+merge: appsrc ! twoflowsplit ! 2 queues ! twoflowmerge ! fakesink
 * and reports frames per second of wall time and per CPU second (run it
 * pinned to one core: bench/twoflow/run.sh does).
 *
 *   bench-splitmerge STREAM.m2v [FRAMES]
 */
#include <sys/resource.h>
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>

static gdouble
cpu_seconds (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static GPtrArray *
load_frames (const gchar * path, GstCaps ** caps)
{
  gchar *desc = g_strdup_printf ("filesrc location=%s ! mpegvideoparse ! "
      "appsink name=sink sync=false", path);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  GPtrArray *frames = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstSample *s;

  gst_element_set_state (p, GST_STATE_PLAYING);
  while ((s = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    if (!*caps)
      *caps = gst_caps_ref (gst_sample_get_caps (s));
    g_ptr_array_add (frames, gst_buffer_ref (gst_sample_get_buffer (s)));
    gst_sample_unref (s);
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (desc);
  return frames;
}

/* Pushes @n frames cycling over @frames; returns wall and CPU seconds. */
static void
run (const gchar * middle, GPtrArray * frames, GstCaps * caps, guint n,
    gdouble * wall, gdouble * cpu, guint64 * out_frames)
{
  gchar *desc = g_strdup_printf ("appsrc name=src format=time block=true "
      "max-bytes=4000000 ! %s ! fakesink name=sink", middle);
  GstElement *p = gst_parse_launch (desc, NULL);
  GstElement *src = gst_bin_get_by_name (GST_BIN (p), "src");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  GstBus *bus = gst_element_get_bus (p);
  GstClockTime period, offset = 0, dur;
  GstBuffer *last = g_ptr_array_index (frames, frames->len - 1);
  GstMessage *msg;
  GstStructure *st;
  gint64 t0;
  gdouble c0;
  guint i;

  dur = GST_BUFFER_DURATION (last);
  period = GST_BUFFER_DTS (last) + (GST_CLOCK_TIME_IS_VALID (dur) ? dur : 0)
      - GST_BUFFER_DTS (g_ptr_array_index (frames, 0));
  g_object_set (src, "caps", caps, NULL);
  gst_element_set_state (p, GST_STATE_PLAYING);
  t0 = g_get_monotonic_time ();
  c0 = cpu_seconds ();
  for (i = 0; i < n; i++) {
    GstBuffer *b = gst_buffer_copy (g_ptr_array_index (frames,
            i % frames->len));

    if (i > 0 && i % frames->len == 0)
      offset += period;
    if (GST_BUFFER_PTS_IS_VALID (b))
      GST_BUFFER_PTS (b) += offset;
    if (GST_BUFFER_DTS_IS_VALID (b))
      GST_BUFFER_DTS (b) += offset;
    if (gst_app_src_push_buffer (GST_APP_SRC (src), b) != GST_FLOW_OK)
      g_error ("push failed at frame %u", i);
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  msg = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR)
    g_error ("pipeline error in %s", middle);
  *wall = (g_get_monotonic_time () - t0) / 1e6;
  *cpu = cpu_seconds () - c0;
  gst_message_unref (msg);
  g_object_get (sink, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "rendered", out_frames);
  gst_structure_free (st);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (desc);
}

int
main (int argc, char **argv)
{
  const gchar *cases[][2] = {
    {"baseline", "identity"},
    {"split+merge", "twoflowsplit name=s twoflowmerge name=m s.essential ! "
          "queue max-size-buffers=0 max-size-bytes=0 max-size-time=0 ! "
          "m.essential s.enhanced ! queue ! m.enhanced m."},
  };
  GstCaps *caps = NULL;
  GPtrArray *frames;
  guint n, c;
  gdouble base_cpu = 0;

  gst_init (&argc, &argv);
  if (argc < 2) {
    g_printerr ("usage: %s STREAM.m2v [FRAMES]\n", argv[0]);
    return 2;
  }
  n = argc > 2 ? atoi (argv[2]) : 200000;
  frames = load_frames (argv[1], &caps);
  if (frames->len == 0)
    g_error ("no frames in %s", argv[1]);
  g_print ("%u frames (%u distinct, cycled)\n", n, frames->len);
  g_print ("%-12s %12s %12s %14s %10s\n", "case", "wall s", "cpu s",
      "frames/cpu-s", "frames");
  for (c = 0; c < G_N_ELEMENTS (cases); c++) {
    gdouble wall, cpu;
    guint64 out = 0;

    run (cases[c][1], frames, caps, n, &wall, &cpu, &out);
    g_print ("%-12s %12.2f %12.2f %14.0f %10" G_GUINT64_FORMAT "\n",
        cases[c][0], wall, cpu, n / cpu, out);
    if (out != n)
      g_error ("%s delivered %" G_GUINT64_FORMAT " of %u frames",
          cases[c][0], out, n);
    if (c == 0)
      base_cpu = cpu;
    else
      g_print ("split+merge CPU per frame: %.2f x the baseline's "
          "(%.1f us vs %.1f us)\n", cpu / base_cpu, cpu / n * 1e6,
          base_cpu / n * 1e6);
  }
  g_ptr_array_unref (frames);
  gst_caps_unref (caps);
  return 0;
}
