/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * bench-ratetranscoder: speed of ratetranscoder on one core against
 * decoding alone, and PSNR of its output against the source per target.
 *
 *   bench-ratetranscoder [-n FRAMES] [-r RUNS] [--psnr] [--live] [FILE.m2v]
 *
 * Without FILE, a 720x576 25 fps MPEG-2 stream of FRAMES frames is encoded
 * first (mpeg2enc, slow) and cached as ratetranscoder-bench-N.m2v in the
 * current directory. The process is pinned to one CPU and every codec runs
 * single-threaded; all configurations run side by side in one process, so
 * compare the ratios, not the absolute figures.
 *
 * --live plays the source in real time (clocksync before the transcoder)
 * and measures, per picture, the time from its arrival at the transcoder
 * to its departure: in passthrough, re-encoding, and switching between the
 * two on congestion events. It takes the stream's duration per scenario.
 */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>
#include <gst/twoflow/networkcongestion.h>

static gdouble
cpu_seconds (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Play @p to EOS or error, then set it to NULL. */
static gboolean
run_pipeline_element (GstElement * p)
{
  GstMessage *msg;
  gboolean ok;

  gst_element_set_state (p, GST_STATE_PLAYING);
  msg = gst_bus_timed_pop_filtered (GST_ELEMENT_BUS (p), GST_CLOCK_TIME_NONE,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  ok = GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS;
  if (!ok) {
    GError *e;

    gst_message_parse_error (msg, &e, NULL);
    g_printerr ("%s: %s\n", GST_OBJECT_NAME (p), e->message);
    g_error_free (e);
  }
  gst_message_unref (msg);
  gst_element_set_state (p, GST_STATE_NULL);
  return ok;
}

static gboolean
run_pipeline (const gchar * desc)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);
  gboolean ok;

  if (!p) {
    g_printerr ("%s: %s\n", desc, err->message);
    return FALSE;
  }
  ok = run_pipeline_element (p);
  if (!ok)
    g_printerr ("failed: %s\n", desc);
  gst_object_unref (p);
  return ok;
}

/* --- real-time release delay ------------------------------------------ */

typedef struct
{
  GstElement *pipe;
  GstElement *tc;
  GHashTable *arrival;          /* DTS -> clock time of arrival */
  GArray *delay;                /* ms per picture */
  GArray *departure;            /* clock time per picture, ns */
  guint in_frames;
  guint loss_at, recover_at;    /* input frame numbers, 0 = never */
  guint64 recover_rate;
} Live;

static GstClockTime
clock_now (GstElement * e)
{
  GstClock *clock = gst_element_get_clock (e);
  GstClockTime t = clock ? gst_clock_get_time (clock) : 0;

  if (clock)
    gst_object_unref (clock);
  return t;
}

static GstPadProbeReturn
live_in_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Live *l = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstEvent *ev = NULL;

  l->in_frames++;
  if (l->in_frames == l->loss_at)
    ev = gst_network_congestion_event_new (GST_NETWORK_CONGESTION_LOSS, 0,
        GST_CLOCK_TIME_NONE, "bench");
  else if (l->in_frames == l->recover_at)
    ev = gst_network_congestion_event_new (GST_NETWORK_CONGESTION_RATE,
        l->recover_rate, GST_CLOCK_TIME_NONE, "bench");
  if (ev) {
    GstPad *src = gst_element_get_static_pad (l->tc, "src");

    gst_pad_send_event (src, ev);
    gst_object_unref (src);
  }
  g_hash_table_insert (l->arrival, GUINT_TO_POINTER (GST_BUFFER_DTS (buf)),
      GUINT_TO_POINTER (clock_now (l->pipe)));
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
live_out_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Live *l = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime now = clock_now (l->pipe);
  gpointer t;

  if (g_hash_table_lookup_extended (l->arrival,
          GUINT_TO_POINTER (GST_BUFFER_DTS (buf)), NULL, &t)) {
    gdouble ms = (now - GPOINTER_TO_SIZE (t)) / 1e6;

    g_array_append_val (l->delay, ms);
    g_array_append_val (l->departure, now);
  }
  return GST_PAD_PROBE_OK;
}

/* One real-time run; prints delay and departure statistics. With
 * @clocksync_after, departures are counted after a clocksync that follows
 * the transcoder, in a thread of its own so that its waits do not hold
 * back the input (the first clocksync answers latency queries as live; the
 * sink is not async, so it answers them before the first buffer). */
static gboolean
live_run (const gchar * path, const gchar * name, const gchar * props,
    guint loss_at, guint recover_at, gdouble src_rate,
    gboolean clocksync_after)
{
  gchar *desc = g_strdup_printf ("filesrc location=\"%s\" ! mpegvideoparse ! "
      "clocksync ! ratetranscoder name=tc %s ! %s fakesink sync=false "
      "async=false", path,
      props, clocksync_after ? "queue max-size-buffers=0 max-size-bytes=0 "
      "max-size-time=0 ! clocksync name=after ! " : "");
  Live l = { 0 };
  GstPad *pad;
  GstQuery *q;
  GstClockTime lat_min = 0;
  gdouble sum = 0, min = G_MAXDOUBLE, max = 0, gap_sum = 0, gap_sq = 0;
  guint i, bursty = 0;
  gboolean ok;

  l.pipe = gst_parse_launch (desc, NULL);
  g_free (desc);
  if (!l.pipe)
    return FALSE;
  l.tc = gst_bin_get_by_name (GST_BIN (l.pipe), "tc");
  l.arrival = g_hash_table_new (NULL, NULL);
  l.delay = g_array_new (FALSE, FALSE, sizeof (gdouble));
  l.departure = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  l.loss_at = loss_at;
  l.recover_at = recover_at;
  l.recover_rate = (guint64) (src_rate * 2);
  pad = gst_element_get_static_pad (l.tc, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, live_in_probe, &l, NULL);
  gst_object_unref (pad);
  if (clocksync_after) {
    GstElement *after = gst_bin_get_by_name (GST_BIN (l.pipe), "after");

    pad = gst_element_get_static_pad (after, "src");
    gst_object_unref (after);
  } else {
    pad = gst_element_get_static_pad (l.tc, "src");
  }
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, live_out_probe, &l, NULL);
  gst_object_unref (pad);

  gst_element_set_state (l.pipe, GST_STATE_PAUSED);
  gst_element_get_state (l.pipe, NULL, NULL, GST_CLOCK_TIME_NONE);
  q = gst_query_new_latency ();
  pad = gst_element_get_static_pad (l.tc, "src");
  if (gst_pad_query (pad, q))
    gst_query_parse_latency (q, NULL, &lat_min, NULL);
  gst_object_unref (pad);
  gst_query_unref (q);
  ok = run_pipeline_element (l.pipe);

  for (i = 0; i < l.delay->len; i++) {
    gdouble d = g_array_index (l.delay, gdouble, i);

    sum += d;
    min = MIN (min, d);
    max = MAX (max, d);
    if (i > 0) {
      gdouble gap = (g_array_index (l.departure, GstClockTime, i) -
          g_array_index (l.departure, GstClockTime, i - 1)) / 1e6;

      gap_sum += gap;
      gap_sq += gap * gap;
      /* left together with the previous picture */
      if (gap < 5)
        bursty++;
    }
  }
  if (l.delay->len > 1) {
    gdouble n = l.delay->len - 1, mean = gap_sum / n;

    g_print ("%-34s %7.1f %7.1f %7.1f %9.1f %9.1f %7u %8.0f\n", name,
        sum / l.delay->len, min, max, mean,
        sqrt (MAX (gap_sq / n - mean * mean, 0)), bursty, lat_min / 1e6);
    fflush (stdout);
  }
  gst_object_unref (l.tc);
  gst_object_unref (l.pipe);
  g_hash_table_unref (l.arrival);
  g_array_unref (l.delay);
  g_array_unref (l.departure);
  return ok;
}

typedef struct
{
  const gchar *name;
  const gchar *element;         /* printf format, %s = target */
  gdouble fraction;             /* of the source bitrate, 0 = none */
} Config;

static guint64
file_size (const gchar * path)
{
  GStatBuf st;

  return g_stat (path, &st) == 0 ? (guint64) st.st_size : 0;
}

/* Y and overall PSNR of @b against @a, frame by frame (decode both). */
static gboolean
psnr (const gchar * src, const gchar * transcoder, gdouble * y_psnr,
    gdouble * min_psnr, guint * frames, guint64 * bytes)
{
  gchar *desc = g_strdup_printf ("filesrc location=\"%s\" ! mpegvideoparse ! "
      "tee name=t ! queue max-size-buffers=0 max-size-time=0 "
      "max-size-bytes=0 ! avdec_mpeg2video max-threads=1 ! "
      "video/x-raw,format=I420 ! appsink name=a sync=false "
      "t. ! queue max-size-buffers=0 max-size-time=0 max-size-bytes=0 ! %s ! "
      "identity name=count ! avdec_mpeg2video max-threads=1 ! "
      "video/x-raw,format=I420 ! appsink name=b sync=false", src, transcoder);
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);
  GstElement *a, *b;
  GstSample *sa, *sb;
  gdouble mse_sum = 0;
  guint n = 0;
  GstClockTime first_a = GST_CLOCK_TIME_NONE, first_b = GST_CLOCK_TIME_NONE;
  gboolean ok = TRUE;

  g_free (desc);
  if (!p) {
    g_printerr ("%s\n", err->message);
    return FALSE;
  }
  a = gst_bin_get_by_name (GST_BIN (p), "a");
  b = gst_bin_get_by_name (GST_BIN (p), "b");
  gst_element_set_state (p, GST_STATE_PLAYING);
  *min_psnr = 100;
  *bytes = 0;
  /* the output may lack dropped B frames: match pictures by PTS */
  while ((sb = gst_app_sink_pull_sample (GST_APP_SINK (b)))) {
    GstMapInfo ma, mb;
    GstVideoInfo info;
    guint x, y;
    gdouble se = 0, mse, ps;
    GstClockTime pts = GST_BUFFER_PTS (gst_sample_get_buffer (sb));

    /* the source has DTS only: both decoders' PTS start where they like,
     * the first picture shown (an I frame) is never dropped */
    if (first_b == GST_CLOCK_TIME_NONE)
      first_b = pts;
    while ((sa = gst_app_sink_pull_sample (GST_APP_SINK (a)))) {
      GstClockTime pa = GST_BUFFER_PTS (gst_sample_get_buffer (sa));

      if (first_a == GST_CLOCK_TIME_NONE)
        first_a = pa;
      if (pa - first_a >= pts - first_b)
        break;
      gst_sample_unref (sa);
    }
    if (!sa) {
      gst_sample_unref (sb);
      break;
    }
    gst_video_info_from_caps (&info, gst_sample_get_caps (sa));
    gst_buffer_map (gst_sample_get_buffer (sa), &ma, GST_MAP_READ);
    gst_buffer_map (gst_sample_get_buffer (sb), &mb, GST_MAP_READ);
    /* luma plane */
    for (y = 0; y < (guint) info.height; y++) {
      const guint8 *ra = ma.data + y * info.stride[0];
      const guint8 *rb = mb.data + y * info.stride[0];

      for (x = 0; x < (guint) info.width; x++) {
        gint d = ra[x] - rb[x];

        se += d * d;
      }
    }
    gst_buffer_unmap (gst_sample_get_buffer (sa), &ma);
    gst_buffer_unmap (gst_sample_get_buffer (sb), &mb);
    mse = se / (info.width * info.height);
    ps = mse > 0 ? 10 * log10 (255.0 * 255.0 / mse) : 100;
    *min_psnr = MIN (*min_psnr, ps);
    mse_sum += mse;
    n++;
    gst_sample_unref (sa);
    gst_sample_unref (sb);
  }
  *frames = n;
  *y_psnr = n && mse_sum > 0 ? 10 * log10 (255.0 * 255.0 / (mse_sum / n)) :
      100;
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (a);
  gst_object_unref (b);
  gst_object_unref (p);
  return ok && n > 0;
}

int
main (int argc, char **argv)
{
  gint frames = 250, runs = 3;
  gboolean do_psnr = FALSE, do_live = FALSE;
  GOptionEntry entries[] = {
    {"frames", 'n', 0, G_OPTION_ARG_INT, &frames,
        "Frames to generate when no file is given", "N"},
    {"runs", 'r', 0, G_OPTION_ARG_INT, &runs, "Runs per configuration",
        "N"},
    {"psnr", 'p', 0, G_OPTION_ARG_NONE, &do_psnr,
        "Also print PSNR against the source per target", NULL},
    {"live", 'l', 0, G_OPTION_ARG_NONE, &do_live,
        "Also measure release delays on a real-time input", NULL},
    {NULL}
  };
  static const Config configs[] = {
    {"decode only (avdec_mpeg2video)", "avdec_mpeg2video max-threads=1", 0},
    {"ratetranscoder passthrough", "ratetranscoder", 0},
    {"ratetranscoder 70%", "ratetranscoder target-bitrate=%s "
          "max-bitrate=%s", 0.7},
    {"ratetranscoder 50%", "ratetranscoder target-bitrate=%s "
          "max-bitrate=%s", 0.5},
    {"ratetranscoder 25%", "ratetranscoder target-bitrate=%s "
          "max-bitrate=%s", 0.25},
    {"ratetranscoder 50% keep=i", "ratetranscoder keep=i "
          "target-bitrate=%s max-bitrate=%s", 0.5},
    {"ratetranscoder 80% keep=ip", "ratetranscoder keep=ip "
          "target-bitrate=%s max-bitrate=%s", 0.8},
  };
  GOptionContext *ctx;
  GError *err = NULL;
  gchar *path;
  gdouble base_fps = 0, src_rate;
  guint c;
  gint n_src, r;
  cpu_set_t set;

  ctx = g_option_context_new ("[FILE.m2v]");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("%s\n", err->message);
    return 1;
  }
  g_option_context_free (ctx);

  if (argc > 1) {
    path = g_strdup (argv[1]);
  } else {
    path = g_strdup_printf ("ratetranscoder-bench-%d.m2v", frames);
    if (!file_size (path)) {
      gchar *desc = g_strdup_printf ("videotestsrc pattern=smpte "
          "horizontal-speed=5 num-buffers=%d ! video/x-raw,width=720,"
          "height=576,framerate=25/1 ! mpeg2enc format=3 bitrate=6000 "
          "b-per-refframe=2 ! mpegvideoparse ! filesink location=%s",
          frames, path);

      g_print ("encoding %s (%d frames)...\n", path, frames);
      if (!run_pipeline (desc))
        return 1;
      g_free (desc);
    }
  }

  /* count the source's frames and bitrate */
  {
    gchar *desc = g_strdup_printf ("filesrc location=\"%s\" ! mpegvideoparse "
        "! appsink name=s sync=false", path);
    GstElement *p = gst_parse_launch (desc, NULL);
    GstElement *s = gst_bin_get_by_name (GST_BIN (p), "s");
    GstSample *sample;

    n_src = 0;
    gst_element_set_state (p, GST_STATE_PLAYING);
    while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (s)))) {
      n_src++;
      gst_sample_unref (sample);
    }
    gst_element_set_state (p, GST_STATE_NULL);
    gst_object_unref (s);
    gst_object_unref (p);
    g_free (desc);
  }
  if (n_src == 0) {
    g_printerr ("no frames in %s\n", path);
    return 1;
  }
  src_rate = file_size (path) * 8.0 / (n_src / 25.0);

  /* one core */
  CPU_ZERO (&set);
  CPU_SET (sched_getcpu (), &set);
  sched_setaffinity (0, sizeof (set), &set);

  g_print ("source %s: %d frames, %.0f bit/s; %d runs each, one CPU\n\n",
      path, n_src, src_rate, runs);
  g_print ("%-34s %10s %10s %8s\n", "configuration", "fps", "x realtime",
      "ratio");
  for (c = 0; c < G_N_ELEMENTS (configs); c++) {
    gchar target[32], *element, *desc;
    gdouble best = G_MAXDOUBLE;

    g_snprintf (target, sizeof (target), "%" G_GUINT64_FORMAT,
        (guint64) (src_rate * configs[c].fraction));
    element = g_strdup_printf (configs[c].element, target, target);
    desc = g_strdup_printf ("filesrc location=\"%s\" ! mpegvideoparse ! %s ! "
        "fakesink sync=false", path, element);
    for (r = 0; r < runs; r++) {
      gdouble t0 = cpu_seconds ();

      if (!run_pipeline (desc))
        return 1;
      best = MIN (best, cpu_seconds () - t0);
    }
    if (c == 0)
      base_fps = n_src / best;
    g_print ("%-34s %10.1f %10.2f %8.2f\n", configs[c].name, n_src / best,
        n_src / best / 25.0, (n_src / best) / base_fps);
    g_free (desc);
    g_free (element);
  }

  if (do_psnr) {
    g_print ("\n%-34s %12s %12s %9s %9s %7s\n", "configuration", "target",
        "output", "Y-PSNR", "min", "frames");
    g_print ("(Y-PSNR: luma PSNR of the mean squared error over the frames "
        "the output has, against the decoded source)\n");
    for (c = 1; c < G_N_ELEMENTS (configs); c++) {
      gchar target[32], *element, *file, *desc;
      gdouble y, ymin;
      guint n;
      guint64 bytes;

      g_snprintf (target, sizeof (target), "%" G_GUINT64_FORMAT,
          (guint64) (src_rate * configs[c].fraction));
      element = g_strdup_printf (configs[c].element, target, target);
      if (!psnr (path, element, &y, &ymin, &n, &bytes))
        return 1;
      /* output size */
      file = g_strdup_printf ("ratetranscoder-bench-out.m2v");
      desc = g_strdup_printf ("filesrc location=\"%s\" ! mpegvideoparse ! %s "
          "! filesink location=%s", path, element, file);
      run_pipeline (desc);
      g_print ("%-34s %12s %12.0f %9.2f %9.2f %7u\n", configs[c].name,
          configs[c].fraction > 0 ? target : "-",
          file_size (file) * 8.0 / (n_src / 25.0), y, ymin, n);
      g_unlink (file);
      g_free (file);
      g_free (desc);
      g_free (element);
    }
  }

  if (do_live) {
    gchar props[96];

    g_print ("\nreal time, %d frames: delay from arrival at the transcoder to "
        "departure (ms), gaps between departures (ms), departures < 5 ms "
        "after the previous one, latency the transcoder reports (ms)\n",
        n_src);
    g_print ("%-34s %7s %7s %7s %9s %9s %7s %8s\n", "scenario", "mean",
        "min", "max", "gap mean", "gap std", "bursty", "latency");
    if (!live_run (path, "passthrough", "", 0, 0, src_rate, FALSE))
      return 1;
    g_snprintf (props, sizeof (props), "target-bitrate=%" G_GUINT64_FORMAT
        " max-bitrate=%" G_GUINT64_FORMAT, (guint64) (src_rate / 2),
        (guint64) (src_rate / 2));
    if (!live_run (path, "re-encoding 50%", props, 0, 0, src_rate, FALSE))
      return 1;
    /* mid-GOP: frame 3 of a 15-frame GOP */
    if (!live_run (path, "loss at 1/3, rate 2x source at 2/3", "recovery=0",
            n_src / 3 / 15 * 15 + 4, 2 * n_src / 3 / 15 * 15 + 4, src_rate,
            FALSE))
      return 1;
    /* the same, paced by the latency the transcoder reports */
    if (!live_run (path, "the same, then clocksync", "recovery=0",
            n_src / 3 / 15 * 15 + 4, 2 * n_src / 3 / 15 * 15 + 4, src_rate,
            TRUE))
      return 1;
  }
  g_free (path);
  return 0;
}
