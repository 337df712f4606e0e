/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "twoflow-metrics.h"

#include <gst/gst.h>

gchar *
twoflow_metrics_label_escape (const gchar * value)
{
  GString *s = g_string_new (NULL);
  const gchar *p;

  for (p = value ? value : ""; *p; p++) {
    if (*p == '\\' || *p == '"')
      g_string_append_c (s, '\\');
    if (*p == '\n')
      g_string_append (s, "\\n");
    else
      g_string_append_c (s, *p);
  }
  return g_string_free (s, FALSE);
}

void
twoflow_metrics_build_info (TwoflowMetrics * m)
{
  gchar *prg = twoflow_metrics_label_escape (g_get_prgname ());
  gchar *lab;
  guint maj, min, mic, nano;

  /* the GStreamer the program runs on, not the one it was built with */
  gst_version (&maj, &min, &mic, &nano);
  lab = g_strdup_printf ("program=\"%s\",version=\"%s\",gstreamer=\"%u.%u.%u\"",
      prg, PACKAGE_VERSION, maj, min, mic);
  twoflow_metric (m, "twoflow_build_info", "gauge",
      "The program's version (and the GStreamer it runs on), always 1",
      lab, 1);
  g_free (lab);
  g_free (prg);
}

/* One series: a number of the session's JSON (@object "" for the session
 * itself) times @scale, with @labels added to the session's. */
typedef struct
{
  const gchar *name, *type, *help, *object, *key, *labels;
  gdouble scale;
} Series;

#define FLOW_E "flow=\"essential\""
#define FLOW_H "flow=\"enhanced\""

static const Series server_series[] = {
  {"twoflow_server_session_elapsed_seconds", "gauge",
      "Time since the session started", "", "elapsed", NULL, 1},
  {"twoflow_server_session_sent_bytes_total", "counter",
      "Bytes the flow's sender wrote (payload, retransmissions included)",
      "essential_stats", "bytes-sent", FLOW_E, 1},
  {"twoflow_server_session_sent_bytes_total", "counter", NULL,
      "enhanced_stats", "bytes-sent", FLOW_H, 1},
  /* cTCP's target-rate is in bytes/s, ERAP's and rUDP's rate in bit/s */
  {"twoflow_server_session_send_rate_bits_per_second", "gauge",
      "The flow's current sending rate (its sender's target)",
      "essential_stats", "target-rate", FLOW_E, 8},
  {"twoflow_server_session_send_rate_bits_per_second", "gauge", NULL,
      "essential_stats", "rate", FLOW_E, 1},
  {"twoflow_server_session_send_rate_bits_per_second", "gauge", NULL,
      "enhanced_stats", "rate", FLOW_H, 1},
  {"twoflow_server_session_rtt_seconds", "gauge",
      "Smoothed round-trip time the flow's sender measures",
      "essential_stats", "srtt", FLOW_E, 1e-9},
  {"twoflow_server_session_rtt_seconds", "gauge", NULL,
      "enhanced_stats", "srtt", FLOW_H, 1e-9},
  {"twoflow_server_session_retransmissions_total", "counter",
      "Packets (TCP segments) the flow's sender retransmitted",
      "essential_stats", "retransmissions", FLOW_E, 1},
  {"twoflow_server_session_retransmissions_total", "counter", NULL,
      "essential_stats", "packets-retransmitted", FLOW_E, 1},
  {"twoflow_server_session_retransmissions_total", "counter", NULL,
      "enhanced_stats", "rtx-sent", FLOW_H, 1},
  {"twoflow_server_session_lost_packets_total", "counter",
      "Packets of the flow found lost (ERAP: by its sender; rUDP: as the "
        "receiver reports)", "essential_stats", "packets-lost", FLOW_E, 1},
  {"twoflow_server_session_lost_packets_total", "counter", NULL,
      "enhanced_stats", "receiver-lost", FLOW_H, 1},
  /* RTCP's 8-bit fixed point */
  {"twoflow_server_session_loss_ratio", "gauge",
      "Fraction of the flow's packets lost in the last receiver report",
      "enhanced_stats", "receiver-fraction-lost", FLOW_H, 1.0 / 256},
  {"twoflow_server_session_late_segments_total", "counter",
      "Essential segments acknowledged after their deadline (cTCP)",
      "essential_stats", "segments-late", FLOW_E, 1},
  {"twoflow_server_session_rate_target_bits_per_second", "gauge",
      "The session rate controller's target for the video",
      "rate_controller", "target", NULL, 1},
  {"twoflow_server_session_loss_event_rate", "gauge",
      "The session rate controller's loss event rate (TFRC)",
      "rate_controller", "loss-event-rate", NULL, 1},
  {"twoflow_server_session_transcoder_target_bits_per_second", "gauge",
      "The rate transcoder's target", "transcoder_stats", "target-bitrate",
      NULL, 1},
  {"twoflow_server_session_transcoder_input_bits_per_second", "gauge",
      "The video's rate into the transcoder", "transcoder_stats",
      "input-bitrate", NULL, 1},
  {"twoflow_server_session_transcoder_output_bits_per_second", "gauge",
      "The transcoder's output rate", "transcoder_stats", "output-bitrate",
      NULL, 1},
  {"twoflow_server_session_transcoder_dropped_frames_total", "counter",
      "Pictures the transcoder dropped", "transcoder_stats",
      "frames-dropped", NULL, 1},
  {"twoflow_server_session_congestion_events_total", "counter",
      "Congestion events the transcoder received", "transcoder_stats",
      "events", NULL, 1},
};

static const Series proxy_series[] = {
  {"twoflow_proxy_session_elapsed_seconds", "gauge",
      "Time since the session started", "", "elapsed", NULL, 1},
  {"twoflow_proxy_session_received_bytes_total", "counter",
      "Bytes received per session and flow", "", "essential_bytes", FLOW_E,
      1},
  {"twoflow_proxy_session_received_bytes_total", "counter", NULL,
      "", "enhanced_bytes", FLOW_H, 1},
  {"twoflow_proxy_session_rate_bits_per_second", "gauge",
      "Received rate per session and flow (over the last second)", "",
      "essential_rate", FLOW_E, 1},
  {"twoflow_proxy_session_rate_bits_per_second", "gauge", NULL,
      "", "enhanced_rate", FLOW_H, 1},
  {"twoflow_proxy_session_missing_frames_total", "counter",
      "Frames that never arrived (counted by the merge), per picture type",
      "merge", "missing-i", "type=\"i\"", 1},
  {"twoflow_proxy_session_missing_frames_total", "counter", NULL,
      "merge", "missing-p", "type=\"p\"", 1},
  {"twoflow_proxy_session_missing_frames_total", "counter", NULL,
      "merge", "missing-b", "type=\"b\"", 1},
  {"twoflow_proxy_session_missing_frames_total", "counter", NULL,
      "merge", "missing-unknown", "type=\"unknown\"", 1},
  {"twoflow_proxy_session_damaged_frames_total", "counter",
      "Frames output damaged or not output (E_f of the two-flow paper)",
      "merge", "E_f", NULL, 1},
  {"twoflow_proxy_session_damaged_gops_total", "counter",
      "GOPs with a damaged frame (E_g)", "merge", "E_g", NULL, 1},
  {"twoflow_proxy_session_output_frames_total", "counter",
      "Frames the merge output", "merge", "output-frames", NULL, 1},
  {"twoflow_proxy_session_dropped_frames_total", "counter",
      "Frames the merge dropped (predicted from a missing one)", "merge",
      "dropped", NULL, 1},
  {"twoflow_proxy_session_lost_packets_total", "counter",
      "RTP packets of the flow lost", "rudpsrc", "lost", FLOW_H, 1},
  {"twoflow_proxy_session_loss_event_rate", "gauge",
      "The flow's loss event rate (TFRC), as its receiver measures it",
      "rudpsrc", "loss-event-rate", FLOW_H, 1},
  {"twoflow_proxy_session_rtt_seconds", "gauge",
      "Round-trip time the flow's receiver measures", "rudpsrc", "srtt",
      FLOW_H, 1e-9},
  {"twoflow_proxy_session_nacks_sent_total", "counter",
      "Retransmission requests sent", "rudpsrc", "nacks-sent", FLOW_H, 1},
  {"twoflow_proxy_session_retransmissions_recovered_total", "counter",
      "Lost packets recovered by a retransmission", "rudpsrc",
      "rtx-recovered", FLOW_H, 1},
  {"twoflow_proxy_session_rate_level", "gauge",
      "The rate level the flow's receiver chose (rUDP)", "rudpsrc", "level",
      FLOW_H, 1},
  {"twoflow_proxy_session_late_packets_total", "counter",
      "Packets that came after their playout time", "jitterbuffer",
      "num-late", FLOW_H, 1},
  {"twoflow_proxy_session_healthy", "gauge",
      "1 while the session delivers at its video's rates", "health",
      "healthy", NULL, 1},
};

static void
emit (TwoflowMetrics * m, const Series * table, guint n, JsonObject * o,
    const gchar * labels)
{
  guint i;
  const gchar *help = NULL;

  for (i = 0; i < n; i++) {
    const Series *s = &table[i];
    JsonObject *from = o;
    JsonNode *node;
    GType t;
    gdouble v;
    gchar *lab;

    /* a family's HELP is given by its first row */
    if (s->help)
      help = s->help;
    if (*s->object) {
      if (!json_object_has_member (o, s->object) ||
          !JSON_NODE_HOLDS_OBJECT (json_object_get_member (o, s->object)))
        continue;
      from = json_object_get_object_member (o, s->object);
    }
    /* a key another kind of sender lacks: no sample */
    node = json_object_get_member (from, s->key);
    if (!node || !JSON_NODE_HOLDS_VALUE (node))
      continue;
    t = json_node_get_value_type (node);
    if (t == G_TYPE_BOOLEAN)
      v = json_node_get_boolean (node);
    else if (t == G_TYPE_INT64 || t == G_TYPE_DOUBLE)
      v = json_node_get_double (node);
    else
      continue;
    lab = s->labels ? g_strdup_printf ("%s,%s", labels, s->labels) :
        g_strdup (labels);
    twoflow_metric (m, s->name, s->type, help, lab, v * s->scale);
    g_free (lab);
  }
}

static gdouble
elapsed (JsonObject * o)
{
  return json_object_has_member (o, "elapsed") ?
      json_object_get_double_member (o, "elapsed") : 0;
}

static gint
longest_first (gconstpointer a, gconstpointer b)
{
  gdouble ea = elapsed (*(JsonObject **) a), eb = elapsed (*(JsonObject **) b);
  return ea > eb ? -1 : ea < eb ? 1 : 0;
}

static void
sessions (TwoflowMetrics * m, GPtrArray * all, const gchar * program,
    const Series * table, guint n, gboolean with_kind)
{
  gchar *name = g_strdup_printf ("%s_sessions_unexposed", program);
  const gchar *cap = g_getenv ("TWOFLOW_METRICS_MAX_SESSIONS");
  guint max = cap ? (guint) g_ascii_strtoull (cap, NULL, 10) :
      TWOFLOW_METRICS_MAX_SESSIONS;
  guint i, shown = MIN (all->len, max);

  g_ptr_array_sort (all, longest_first);
  twoflow_metric (m, name, "gauge", "Sessions running whose per-session "
      "series are left out (only the longest running are shown)",
      NULL, all->len - shown);
  g_free (name);
  for (i = 0; i < shown; i++) {
    JsonObject *o = g_ptr_array_index (all, i);
    gchar *video = twoflow_metrics_label_escape (json_object_has_member (o,
            "video") ? json_object_get_string_member (o, "video") : "");
    gchar *lab;

    if (with_kind) {
      gchar *kind = twoflow_metrics_label_escape (json_object_has_member (o,
              "kind") ? json_object_get_string_member (o, "kind") : "");
      lab = g_strdup_printf ("session=\"%" G_GINT64_FORMAT "\",video=\"%s\","
          "kind=\"%s\"", json_object_get_int_member (o, "session"), video,
          kind);
      g_free (kind);
    } else {
      lab = g_strdup_printf ("session=\"%" G_GINT64_FORMAT "\",video=\"%s\"",
          json_object_get_int_member (o, "session"), video);
    }
    emit (m, table, n, o, lab);
    g_free (lab);
    g_free (video);
  }
  g_ptr_array_unref (all);
}

void
twoflow_metrics_server_sessions (TwoflowMetrics * m, GPtrArray * all)
{
  sessions (m, all, "twoflow_server", server_series,
      G_N_ELEMENTS (server_series), FALSE);
}

void
twoflow_metrics_proxy_sessions (TwoflowMetrics * m, GPtrArray * all)
{
  sessions (m, all, "twoflow_proxy", proxy_series,
      G_N_ELEMENTS (proxy_series), TRUE);
}
