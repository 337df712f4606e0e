/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * transcoder-bus: an application driving ratetranscoder from bus messages.
 *
 * Transport sinks post every congestion event they send upstream as a
 * GstNetworkCongestion element message too. A transcoder only sees the
 * events of the transports downstream of it; the application forwards the
 * others (another path's transport, or another pipeline's) to it, and
 * watches the transcoder's own stats messages.
 *
 *   transcoder-bus [-t TARGET] [-k none|i|ip] [-s SECONDS] IN.m2v [OUT.m2v]
 *
 * With -s, a congestion message (loss, then every third one a receiver
 * rate) is posted every SECONDS to stand in for a second path's transport.
 * Without OUT the stream plays at real time into a fakesink.
 */
#include <stdlib.h>
#include <string.h>
#include <gst/gst.h>
#include <gst/twoflow/networkcongestion.h>

typedef struct
{
  GMainLoop *loop;
  GstElement *pipeline;
  GstElement *transcoder;
  guint simulated;
} App;

/* Did the transcoder already get this event from its own downstream? */
static gboolean
is_downstream_of (GstElement * from, GstObject * obj)
{
  GstElement *cur = gst_object_ref (from);

  while (cur) {
    GstPad *src = gst_element_get_static_pad (cur, "src");
    GstPad *peer = src ? gst_pad_get_peer (src) : NULL;
    GstElement *next = peer ? gst_pad_get_parent_element (peer) : NULL;

    if (src)
      gst_object_unref (src);
    if (peer)
      gst_object_unref (peer);
    gst_object_unref (cur);
    cur = next;
    if (cur && GST_OBJECT (cur) == obj) {
      gst_object_unref (cur);
      return TRUE;
    }
  }
  return FALSE;
}

static gboolean
on_bus (GstBus * bus, GstMessage * msg, gpointer user_data)
{
  App *app = user_data;
  GstTwoflowCongestionType type;
  guint64 bitrate;
  GstClockTime srtt;
  const gchar *source;

  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_ELEMENT:
      if (gst_twoflow_congestion_message_parse (msg, &type, &bitrate, &srtt,
              &source)) {
        g_print ("congestion: %s from %s (estimate %" G_GUINT64_FORMAT
            " bit/s)\n", gst_twoflow_congestion_type_to_string (type),
            source ? source : "?", bitrate);
        if (!is_downstream_of (app->transcoder, GST_MESSAGE_SRC (msg)))
          gst_element_send_event (app->transcoder,
              gst_twoflow_congestion_event_new (type, bitrate, srtt, source));
      } else if (GST_MESSAGE_SRC (msg) == GST_OBJECT (app->transcoder)) {
        const GstStructure *s = gst_message_get_structure (msg);
        guint64 target = 0, out = 0, latency = 0;
        gdouble q = 0;

        gst_structure_get_uint64 (s, "target-bitrate", &target);
        gst_structure_get_uint64 (s, "output-bitrate", &out);
        gst_structure_get_uint64 (s, "reaction-latency", &latency);
        gst_structure_get_double (s, "quantizer", &q);
        g_print ("transcoder reacted: target %" G_GUINT64_FORMAT
            " bit/s, output %" G_GUINT64_FORMAT " bit/s, quantizer %.0f, "
            "latency %.2f ms\n", target, out, q, latency / 1e6);
      }
      break;
    case GST_MESSAGE_WARNING:{
      GError *err;

      gst_message_parse_warning (msg, &err, NULL);
      g_printerr ("warning: %s\n", err->message);
      g_error_free (err);
      break;
    }
    case GST_MESSAGE_ERROR:{
      GError *err;

      gst_message_parse_error (msg, &err, NULL);
      g_printerr ("error: %s\n", err->message);
      g_error_free (err);
      g_main_loop_quit (app->loop);
      break;
    }
    case GST_MESSAGE_EOS:
      g_main_loop_quit (app->loop);
      break;
    default:
      break;
  }
  return TRUE;
}

/* Stands in for the transport of another path. */
static gboolean
simulate_congestion (gpointer user_data)
{
  App *app = user_data;
  GstTwoflowCongestionType type = (++app->simulated % 3) ?
      GST_TWOFLOW_CONGESTION_LOSS : GST_TWOFLOW_CONGESTION_RATE;
  GstStructure *s = gst_twoflow_congestion_structure_new (type, 1500000,
      50 * GST_MSECOND, "enhanced-path");

  gst_element_post_message (app->pipeline,
      gst_message_new_element (GST_OBJECT (app->pipeline), s));
  return G_SOURCE_CONTINUE;
}

static gboolean
print_stats (gpointer user_data)
{
  App *app = user_data;
  GstStructure *s;
  gchar *str;

  g_object_get (app->transcoder, "stats", &s, NULL);
  str = gst_structure_to_string (s);
  g_print ("stats: %s\n", str);
  g_free (str);
  gst_structure_free (s);
  return G_SOURCE_CONTINUE;
}

int
main (int argc, char **argv)
{
  App app = { 0 };
  gchar *desc, *keep = NULL;
  gint64 target = 0;
  gdouble every = 0;
  GError *err = NULL;
  GOptionContext *ctx;
  GOptionEntry entries[] = {
    {"target", 't', 0, G_OPTION_ARG_INT64, &target,
        "Initial target bitrate in bit/s (0 = the input's)", "BPS"},
    {"keep", 'k', 0, G_OPTION_ARG_STRING, &keep,
        "Frames kept byte-identical: none, i, ip", "KEEP"},
    {"simulate", 's', 0, G_OPTION_ARG_DOUBLE, &every,
        "Post a congestion message every SECONDS", "SECONDS"},
    {NULL}
  };
  GstBus *bus;
  int ret = 0;

  ctx = g_option_context_new ("IN.m2v [OUT.m2v]");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc < 2) {
    g_printerr ("%s\n", err ? err->message : "no input file");
    g_clear_error (&err);
    g_option_context_free (ctx);
    return 1;
  }
  g_option_context_free (ctx);

  desc = g_strdup_printf ("filesrc location=\"%s\" ! mpegvideoparse ! "
      "ratetranscoder name=rt target-bitrate=%" G_GINT64_FORMAT " keep=%s ! "
      "mpegvideoparse ! %s%s%s", argv[1], target, keep ? keep : "none",
      argc > 2 ? "filesink location=\"" : "fakesink sync=true",
      argc > 2 ? argv[2] : "", argc > 2 ? "\"" : "");
  app.pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  g_free (keep);
  if (!app.pipeline) {
    g_printerr ("pipeline: %s\n", err->message);
    g_error_free (err);
    return 1;
  }
  app.transcoder = gst_bin_get_by_name (GST_BIN (app.pipeline), "rt");
  app.loop = g_main_loop_new (NULL, FALSE);

  bus = gst_element_get_bus (app.pipeline);
  gst_bus_add_watch (bus, on_bus, &app);
  if (every > 0)
    g_timeout_add ((guint) (every * 1000), simulate_congestion, &app);
  g_timeout_add_seconds (1, print_stats, &app);

  if (gst_element_set_state (app.pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    g_printerr ("cannot start the pipeline\n");
    ret = 1;
  } else {
    g_main_loop_run (app.loop);
    print_stats (&app);
  }

  gst_element_set_state (app.pipeline, GST_STATE_NULL);
  gst_bus_remove_watch (bus);
  gst_object_unref (bus);
  gst_object_unref (app.transcoder);
  gst_object_unref (app.pipeline);
  g_main_loop_unref (app.loop);
  return ret;
}
