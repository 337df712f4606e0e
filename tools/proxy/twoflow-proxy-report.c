/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — a session's report: what it received, what its output lacks
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include "twoflow-delivery.h"
#include "twoflow-protocol.h"
#include "twoflow-proxy-options.h"
#include "twoflow-proxy-session.h"
#include "twoflow-proxy-report.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_report_debug);
#define GST_CAT_DEFAULT twoflow_proxy_report_debug

/* an integer member of member @obj of @o (@def when either is absent) */
static gint64
nested_int (JsonObject * o, const gchar * obj, const gchar * member,
    gint64 def)
{
  JsonObject *n = o && json_object_has_member (o, obj) ?
      json_object_get_object_member (o, obj) : NULL;

  return n ? twoflow_json_get_int (n, member, def) : def;
}

/* What reached the output of what the source has, and why the rest did
 * not (docs/system.md, "Delivery"; the judgement is the sans-IO
 * gst_twoflow_delivery_judge()): the source's frames (INFO) against the
 * merge's output; the enhanced packets the server sent (its done event's
 * rudpsink stats) against what rudpsrc received; the kernel's drops at
 * the receiver; the transcoder's deliberate drops (the server's final
 * stats). Sets ps->lost_frames, ps->unexplained_frames,
 * ps->audio_missing. */
static JsonObject *
delivery_report (ProxySession * ps, JsonObject * rep)
{
  JsonObject *o = json_object_new ();
  JsonObject *fin = ps->server_final;
  GstTwoflowDeliveryCounts c = { 0, };
  GstTwoflowDelivery d;

  /* a later start (seeking) sends the video from there */
  c.frames = ps->start_frames >= 0 ? ps->start_frames :
      twoflow_json_get_int (ps->info, "frames", 0);
  c.output_frames = nested_int (rep, "merge", "output-frames", 0);
  c.missing_frames = nested_int (rep, "merge", "missing-i", 0) +
      nested_int (rep, "merge", "missing-p", 0) +
      nested_int (rep, "merge", "missing-b", 0) +
      nested_int (rep, "merge", "missing-unknown", 0);
  c.dependent_dropped = nested_int (rep, "merge", "dropped", 0);
  c.transcoder_dropped = nested_int (fin, "transcoder_stats",
      "frames-dropped", 0);
  c.packets_sent = nested_int (fin, "enhanced_stats", "packets-sent", -1);
  c.duplicate_packets = nested_int (rep, "rudpsrc", "duplicates", 0);
  c.packets_received = nested_int (rep, "rudpsrc", "received", 0) -
      c.duplicate_packets;
  c.packets_lost = nested_int (rep, "rudpsrc", "lost", 0);
  c.kernel_drops = nested_int (rep, "rudpsrc", "kernel-drops", 0);
  c.other_kernel_drops = nested_int (rep, "erapsrc", "kernel-drops", 0);
  c.late_packets = nested_int (rep, "jitterbuffer", "num-late", 0);
  c.playout_lost = nested_int (rep, "jitterbuffer", "num-lost", 0);
  c.audio_records = ps->start_audio >= 0 ? ps->start_audio :
      twoflow_json_get_int (ps->info, "audio_records", 0);
  c.audio_output = nested_int (rep, "merge", "audio-buffers", 0);
  c.audio_expected = ps->audio_out;
  c.finished = ps->server_done;
  gst_twoflow_delivery_judge (&c, &d);

  json_object_set_int_member (o, "frames", c.frames);
  json_object_set_int_member (o, "output_frames", c.output_frames);
  json_object_set_int_member (o, "lost_frames", d.lost_frames);
  json_object_set_int_member (o, "unexplained_frames", d.unexplained_frames);
  json_object_set_int_member (o, "transcoder_dropped", c.transcoder_dropped);
  json_object_set_int_member (o, "dependent_dropped", c.dependent_dropped);
  json_object_set_int_member (o, "packets_sent", c.packets_sent);
  json_object_set_int_member (o, "packets_received", c.packets_received);
  json_object_set_int_member (o, "packets_lost", d.packets_lost);
  json_object_set_int_member (o, "network_lost_packets",
      d.network_lost_packets);
  json_object_set_int_member (o, "kernel_drops", c.kernel_drops +
      c.other_kernel_drops);
  json_object_set_int_member (o, "late_packets", c.late_packets);
  json_object_set_int_member (o, "duplicate_packets", c.duplicate_packets);
  json_object_set_int_member (o, "playout_lost", c.playout_lost);
  json_object_set_int_member (o, "audio_records", c.audio_records);
  json_object_set_int_member (o, "audio_output", c.audio_output);
  json_object_set_int_member (o, "audio_missing", d.audio_missing);
  json_object_set_boolean_member (o, "complete", d.complete);
  json_object_set_string_member (o, "cause",
      gst_twoflow_delivery_cause_name (d.cause));
  json_object_set_boolean_member (o, "finished", c.finished);
  ps->lost_frames = d.lost_frames;
  ps->unexplained_frames = d.unexplained_frames;
  ps->audio_missing = d.audio_missing;
  return o;
}

JsonObject *
proxy_session_report (ProxySession * ps)
{
  JsonObject *o = json_object_new ();
  GstStructure *st = NULL;

  json_object_set_int_member (o, "session", ps->id);
  json_object_set_string_member (o, "video", ps->video);
  json_object_set_string_member (o, "kind", ps->kind ? ps->kind : "rtsp");
  json_object_set_int_member (o, "server_session", ps->server_session);
  json_object_set_double_member (o, "elapsed", ps->started_us ?
      (g_get_monotonic_time () - ps->started_us) / 1e6 : 0);
  /* when PLAY was answered (monotonic clock, us), and the enhanced flow's
   * lead: the playback clock --arrivals are judged against */
  json_object_set_int_member (o, "started_us", ps->started_us);
  json_object_set_double_member (o, "lead", ps->lead);
  /* start-up: s from the request to the merge's first and second video
   * frames (-1: none) */
  G_LOCK (counters);
  json_object_set_double_member (o, "first_frame_s", ps->first_frame_us ?
      (ps->first_frame_us - ps->created_us) / 1e6 : -1);
  json_object_set_double_member (o, "second_frame_s", ps->second_frame_us ?
      (ps->second_frame_us - ps->created_us) / 1e6 : -1);
  G_UNLOCK (counters);
  /* the enhanced flow's playout buffer (rtpjitterbuffer latency), ms */
  json_object_set_int_member (o, "playout_depth_ms", ps->playout_ms);
  /* the enhanced flow smoothed, and its rate changes (server, last
   * progress event) */
  json_object_set_boolean_member (o, "smoothing", ps->smoothing);
  json_object_set_int_member (o, "enhanced_rate_changes",
      ps->enh_rate_changes);
  json_object_set_int_member (o, "essential_bytes",
      counter_get (&ps->ess_bytes));
  json_object_set_int_member (o, "enhanced_bytes",
      counter_get (&ps->enh_bytes));
  json_object_set_int_member (o, "peak_rate", ps->peak_rate);
  json_object_set_int_member (o, "frames",
      twoflow_json_get_int (ps->info, "frames", 0));
  json_object_set_boolean_member (o, "server_done", ps->server_done);
  if (ps->merge) {
    g_object_get (ps->merge, "stats", &st, NULL);
    twoflow_json_add_structure (o, "merge", st);
    gst_structure_free (st);
  }
  if (ps->enh_src) {
    g_object_get (ps->enh_src, "stats", &st, NULL);
    twoflow_json_add_structure (o, "rudpsrc", st);
    gst_structure_free (st);
  }
  if (ps->ess_src && g_str_equal (opt_essential, "erap")) {
    g_object_get (ps->ess_src, "stats", &st, NULL);
    twoflow_json_add_structure (o, "erapsrc", st);
    gst_structure_free (st);
  }
  /* packets the jitterbuffer gave up on (num-lost) or dropped as too late
   * for its latency (num-late): frames missing without a network loss */
  if (ps->jitterbuffer) {
    g_object_get (ps->jitterbuffer, "stats", &st, NULL);
    twoflow_json_add_structure (o, "jitterbuffer", st);
    gst_structure_free (st);
  }
  /* what the output lacks, and why */
  if (ps->merge)
    json_object_set_object_member (o, "delivery", delivery_report (ps, o));
  /* what the other modules add (admission: the measured health) */
  proxy_session_notify_report (ps, o);
  return o;
}

void
twoflow_proxy_report_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_report_debug, "twoflow-proxy-report",
      0, "twoflow-proxy: a session's report");
}
