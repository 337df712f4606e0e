/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — a session's two pipelines (docs/system.md):
 *
 *   essential: source ! twoflowsplit ! queue ! ctcpsink|erapsink
 *   enhanced:  source ! ratetranscoder ! twoflowsplit ! queue
 *              ! rtpgstpay ! rudpsink sync=true
 *
 * their bus, the enhanced flow's pacing and, under --rate-controller
 * events, the essential transport's congestion forwarded to the
 * transcoder
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
#include <gst/twoflow/twoflowframe.h>
#include <gst/twoflow/networkcongestion.h>
#include "twoflow-control.h"
#include "twoflow-server-media.h"
#include "twoflow-server-ratectl.h"
#include "twoflow-server-options.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_media_debug);
#define GST_CAT_DEFAULT twoflow_server_media_debug

/* the pool's (set once at start) */
static MediaCallbacks callbacks;

JsonObject *
session_stats (Session * s)
{
  JsonObject *o = json_object_new ();
  GstStructure *st;

  json_object_set_int_member (o, "session", s->id);
  json_object_set_string_member (o, "video", s->info->name);
  json_object_set_string_member (o, "essential", s->essential);
  json_object_set_double_member (o, "elapsed",
      (g_get_monotonic_time () - s->started_us) / 1e6);
  json_object_set_int_member (o, "forwarded_events", s->forwarded_events);
  json_object_set_int_member (o, "unforwarded_events", s->unforwarded_events);
  if (g_str_equal (s->essential, "tcp"))
    json_object_set_int_member (o, "release_waits", s->released_segments);
  json_object_set_boolean_member (o, "essential_done", s->ess_done);
  json_object_set_boolean_member (o, "enhanced_done", s->enh_done);
  if ((st = get_stats (s->ess_sink))) {
    twoflow_json_add_structure (o, "essential_stats", st);
    gst_structure_free (st);
  }
  if ((st = get_stats (s->transcoder))) {
    twoflow_json_add_structure (o, "transcoder_stats", st);
    gst_structure_free (st);
  }
  /* the rUDP sender: its rate in force (the window's under smoothing) and
   * what it sent, for the proxy's measured admission */
  if ((st = get_stats (s->enh_sink))) {
    twoflow_json_add_structure (o, "enhanced_stats", st);
    gst_structure_free (st);
  }
  if (s->rc) {
    GstTwoflowSessionRateStats rs;
    JsonObject *r = json_object_new ();

    gst_twoflow_session_rate_get_stats (s->rc, &rs);
    json_object_set_int_member (r, "target", rs.target);
    json_object_set_int_member (r, "min-target", rs.min_target);
    json_object_set_int_member (r, "max-target", rs.max_target);
    json_object_set_int_member (r, "max-bitrate", s->rc_max);
    json_object_set_int_member (r, "delay-rate", rs.delay_rate);
    json_object_set_int_member (r, "tcp-rate", rs.tcp_rate);
    json_object_set_int_member (r, "delivered-rate", rs.delivered_rate);
    json_object_set_double_member (r, "loss-event-rate", rs.loss_event_rate);
    json_object_set_double_member (r, "loss-fraction", rs.loss_fraction);
    json_object_set_int_member (r, "srtt", rs.srtt);
    json_object_set_int_member (r, "min-rtt", rs.min_rtt);
    json_object_set_int_member (r, "qdelay", rs.qdelay);
    json_object_set_string_member (r, "state",
        gst_twoflow_session_rate_state_name (rs.state));
    json_object_set_int_member (r, "packets", rs.packets);
    json_object_set_int_member (r, "lost", rs.lost);
    json_object_set_int_member (r, "loss-events", rs.loss_events);
    json_object_set_int_member (r, "decreases", rs.decreases);
    json_object_set_int_member (r, "decreases-qdelay", rs.decreases_qdelay);
    json_object_set_int_member (r, "decreases-ecn", rs.decreases_ecn);
    json_object_set_int_member (r, "decreases-loss", rs.decreases_loss);
    json_object_set_int_member (r, "updates", rs.updates);
    json_object_set_int_member (r, "code-target", rs.code_target);
    json_object_set_int_member (r, "lateness", rs.lateness);
    json_object_set_int_member (r, "lateness-cuts", rs.lateness_cuts);
    json_object_set_int_member (r, "jitter-rtts", rs.jitter_rtts);
    json_object_set_int_member (r, "loss-bursts", rs.loss_bursts);
    json_object_set_int_member (r, "competing-updates", rs.competing_updates);
    json_object_set_int_member (r, "quiet-updates", rs.quiet_updates);
    json_object_set_int_member (r, "target-changes", s->rc_changes);
    json_object_set_int_member (r, "transport-events", s->rc_events);
    json_object_set_object_member (o, "rate_controller", r);
  }
  json_object_set_string_member (o, "rate_adaptation", s->rc ? "session" :
      "events");
  json_object_set_boolean_member (o, "smoothing", s->smooth);
  json_object_set_int_member (o, "enhanced_rate_changes",
      s->enh_rate_changes);
  return o;
}

static void
forward_event (Session * s, GstStructure * st)
{
  GstPad *pad = gst_element_get_static_pad (s->transcoder, "src");

  if (gst_pad_send_event (pad, gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
              st)))
    s->forwarded_events++;
  else
    s->unforwarded_events++;
  gst_object_unref (pad);
}

gboolean
ess_bus_cb (GstBus * bus, GstMessage * msg, gpointer user_data)
{
  Session *s = user_data;

  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_ELEMENT:{
      GstNetworkCongestionType type;
      guint64 rate;
      GstClockTime srtt;
      const gchar *source;

      if (!gst_network_congestion_message_parse (msg, &type, &rate, &srtt,
              &source))
        break;
      /* session rate control: the event is an input of the controller
       * (cTCP's losses and RTT come from its counters; ERAP reports
       * losses only as events) */
      if (s->rc && type != GST_NETWORK_CONGESTION_RATE) {
        rc_handle_congestion (s, type, srtt);
      } else if (s->transcoder && type != GST_NETWORK_CONGESTION_RATE) {
        /* --rate-controller events: cross-path forwarding, the essential
         * transport's congestion lowers the rate of the real-time flow's
         * transcoder */
        const GstStructure *ms = gst_message_get_structure (msg);
        /* during the lead, and until the enhanced pipeline plays (a
         * smoothed flow starts with the essential one), the transcoder's
         * pads are not active yet: keep the events and hand them over when
         * the enhanced pipeline plays */
        if (s->lead_timer || !s->enh_playing)
          s->pending_events = g_list_append (s->pending_events,
              gst_structure_copy (ms));
        else
          forward_event (s, gst_structure_copy (ms));
      }
      GST_INFO ("session %u: %s from %s (%" G_GUINT64_FORMAT " bit/s)",
          s->id, gst_network_congestion_type_to_string (type),
          source ? source : "?", rate);
      break;
    }
    case GST_MESSAGE_EOS:
      s->ess_done = TRUE;
      g_print ("session %u: essential flow sent (%.1f s)\n", s->id,
          (g_get_monotonic_time () - s->started_us) / 1e6);
      callbacks.flow_done (s);
      return G_SOURCE_CONTINUE;
    case GST_MESSAGE_ERROR:{
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error (msg, &err, &dbg);
      g_print ("session %u: essential flow error from %s: %s (%s)\n", s->id,
          GST_OBJECT_NAME (msg->src), err->message, dbg ? dbg : "");
      callbacks.flow_error (s, "essential", err->message);
      g_clear_error (&err);
      g_free (dbg);
      return G_SOURCE_CONTINUE;
    }
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

gboolean
enh_bus_cb (GstBus * bus, GstMessage * msg, gpointer user_data)
{
  Session *s = user_data;

  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_STATE_CHANGED:{
      GstState state;
      GList *l;

      if (GST_MESSAGE_SRC (msg) != GST_OBJECT (s->enh_pipe))
        break;
      gst_message_parse_state_changed (msg, NULL, &state, NULL);
      if (state != GST_STATE_PLAYING || s->enh_playing)
        break;
      s->enh_playing = TRUE;
      for (l = s->pending_events; l; l = l->next)
        forward_event (s, l->data);
      g_list_free (s->pending_events);
      s->pending_events = NULL;
      break;
    }
    case GST_MESSAGE_EOS:
      s->enh_done = TRUE;
      g_print ("session %u: enhanced flow sent (%.1f s)\n", s->id,
          (g_get_monotonic_time () - s->started_us) / 1e6);
      callbacks.flow_done (s);
      break;
    case GST_MESSAGE_ERROR:{
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error (msg, &err, &dbg);
      g_print ("session %u: enhanced flow error from %s: %s (%s)\n", s->id,
          GST_OBJECT_NAME (msg->src), err->message, dbg ? dbg : "");
      callbacks.flow_error (s, "enhanced", err->message);
      g_clear_error (&err);
      g_free (dbg);
      break;
    }
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

/* Essential records of skipped segments (pre-staged at the proxy) or past
 * the end segment (pre-staging) are dropped; caps records always pass and
 * the end record only passes when the whole stream is sent. */
static GstPadProbeReturn
ess_filter_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Session *s = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstTwoflowFrameHeader hdr;
  GstMapInfo map;
  GstPadProbeReturn ret = GST_PAD_PROBE_OK;
  gboolean caps = FALSE, end = FALSE;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return ret;
  if (gst_twoflow_frame_header_parse (map.data, map.size, &hdr) ==
      GST_TWOFLOW_PARSE_OK) {
    caps = hdr.kind == GST_TWOFLOW_RECORD_CAPS;
    end = hdr.kind == GST_TWOFLOW_RECORD_END;
    if (hdr.kind == GST_TWOFLOW_RECORD_FRAME) {
      if ((gint) hdr.segment_no < s->skip_segments)
        ret = GST_PAD_PROBE_DROP;
      if (s->end_segment > 0 && (gint) hdr.segment_no >= s->end_segment)
        ret = GST_PAD_PROBE_DROP;
    } else if (hdr.kind == GST_TWOFLOW_RECORD_END && s->end_segment > 0) {
      ret = GST_PAD_PROBE_DROP;
    }
  }
  gst_buffer_unmap (buf, &map);
  /* The caps record comes first, stamped with the stream's first time.
   * With segments skipped, ctcpsink would count from that time and make
   * the caps record a segment of its own, sent at that tiny segment's
   * target rate ahead of the real first segment (which came 35 s late in
   * a 20 s replay): let it count from the first frame sent instead. */
  /* The end record, stamped with the stream's end, made a segment of its
   * own (68 bytes: cTCP's target a few bytes/s), and the retransmissions
   * of the last real segment's tail, still outstanding when the sender
   * moved on to it, went out at that rate: a loss there held the session
   * for minutes. Without a timestamp it joins the last segment. */
  if (ret == GST_PAD_PROBE_OK && ((s->skip_segments > 0 && caps) || end)) {
    buf = gst_buffer_make_writable (buf);
    GST_BUFFER_DTS (buf) = GST_BUFFER_PTS (buf) = GST_CLOCK_TIME_NONE;
    GST_PAD_PROBE_INFO_DATA (info) = buf;
  }
  return ret;
}

/* Plain TCP (essential "tcp") has no pacing of its own: the server hands
 * it each segment one segment duration before the segment plays (segment
 * k of those sent at k·T after the start), and TCP sends it as fast as its
 * congestion control allows — the baseline of the two-flow paper. */
static GstPadProbeReturn
release_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Session *s = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstTwoflowFrameHeader hdr;
  GstMapInfo map;
  GstClockTime at = GST_CLOCK_TIME_NONE;
  GstClockID id;
  gboolean stop;
  gint rel;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  if (gst_twoflow_frame_header_parse (map.data, map.size, &hdr) ==
      GST_TWOFLOW_PARSE_OK && hdr.kind == GST_TWOFLOW_RECORD_FRAME) {
    rel = MAX ((gint) hdr.segment_no - s->skip_segments, 0);
    at = s->release_base + rel * (GstClockTime) (s->segment_duration *
        GST_SECOND);
  }
  gst_buffer_unmap (buf, &map);
  if (!GST_CLOCK_TIME_IS_VALID (at) || gst_clock_get_time (s->clock) >= at)
    return GST_PAD_PROBE_OK;

  g_mutex_lock (&s->release_lock);
  stop = s->release_stop;
  id = stop ? NULL : gst_clock_new_single_shot_id (s->clock, at);
  s->release_id = id;
  g_mutex_unlock (&s->release_lock);
  if (id) {
    gst_clock_id_wait (id, NULL);
    g_mutex_lock (&s->release_lock);
    s->release_id = NULL;
    stop = s->release_stop;
    s->released_segments++;
    g_mutex_unlock (&s->release_lock);
    gst_clock_id_unref (id);
  }
  return stop ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

static GstElement *
make_source (Session * s, GstElement * pipe, GstElement * next,
    GstElement * split, const gchar * flow)
{
  GstElement *src;

  if (s->info->is_trace) {
    src = gst_element_factory_make ("twoflowtracesrc", NULL);
    gst_util_set_object_arg (G_OBJECT (src), "flow", flow);
    gst_util_set_object_arg (G_OBJECT (src), "policy",
        s->info->policy ? "ip" : "i");
    g_object_set (src, "location", s->info->path, "segment-duration",
        (guint64) (s->segment_duration * GST_SECOND), NULL);
    gst_bin_add (GST_BIN (pipe), src);
    return src;
  }
  /* the audio enters the split in both pipelines, so both count segments
   * from the same first timestamp; only the essential flow carries it */
  return make_media_source (pipe, s->info->path, s->info->video_track,
      s->info->audio_track, s->start_pts, s->start_rt, NULL, next, split);
}

static GstElement *
make (GstElement * pipe, const gchar * factory, const gchar * name)
{
  GstElement *e = gst_element_factory_make (factory, name);
  if (e == NULL) {
    g_printerr ("missing element %s\n", factory);
    return NULL;
  }
  gst_bin_add (GST_BIN (pipe), e);
  return e;
}

gboolean
build_essential (Session * s, GError ** error)
{
  GstElement *pipe = gst_pipeline_new ("essential");
  GstElement *split = NULL, *q, *sink, *fq, *fsink;
  GstPad *pad;
  guint64 segdur = s->segment_duration * GST_SECOND;

  q = make (pipe, "queue", NULL);
  g_object_set (q, "max-size-buffers", 0, "max-size-time", (guint64) 0,
      "max-size-bytes", 64 * 1024 * 1024, NULL);
  if (g_str_equal (s->essential, "erap")) {
    sink = make (pipe, "erapsink", "tx");
    /* NAT: send to where the proxy's hellos come from (the control peer's
     * address only), from the shared socket they reach (PLAY's reply) */
    if (sink && s->nat)
      g_object_set (sink, "host", s->host, "learn-peer", TRUE, "hello-id",
          s->hello_id, NULL);
    else if (sink)
      g_object_set (sink, "host", s->host, "port", s->ess_port, NULL);
    if (sink && s->erap_key)
      g_object_set (sink, "key", s->erap_key, NULL);
    /* a proxy that never acknowledges ends this session (an error), as
     * for the cTCP connect below */
    if (sink)
      g_object_set (sink, "connect-timeout",
          (guint64) (opt_connect_timeout * GST_SECOND), NULL);
    /* the file is read far ahead of the flow: at EOS the sink's queue may
     * hold seconds of a congested path's data, which is still on time
     * until its playout; the sink keeps sending until the video has
     * played out (its duration after the lead, and 10 s), not for its
     * default 10 s, after which unacknowledged data is an error */
    if (sink && s->info->duration > 0)
      g_object_set (sink, "linger", (guint64) (s->info->duration
              + (s->lead + 10) * GST_SECOND), NULL);
    /* the start-up ramp: from its rate on (the congestion control's
     * start, the default 1 Mbit/s, is too slow for a short lead) */
    if (sink && s->startup_rate > 0) {
      guint64 r0 = 0;
      g_object_get (sink, "initial-rate", &r0, NULL);
      g_object_set (sink, "initial-rate", MAX (r0, s->startup_rate), NULL);
    }
  } else {
    sink = make (pipe, "ctcpsink", "tx");
    if (sink) {
      g_object_set (sink, "host", s->host, "segment-duration", segdur, NULL);
      /* NAT: listen on a free port (in the PLAY reply) and accept the
       * proxy's connection, only from the control peer's address */
      if (s->nat)
        g_object_set (sink, "listen", TRUE, "bind-port", 0, NULL);
      else
        g_object_set (sink, "port", s->ess_port, NULL);
      if (g_str_equal (s->essential, "tcp"))
        gst_util_set_object_arg (G_OBJECT (sink), "mode", "tcp");
      /* the start-up ramp: segment 0 plays after the lead, and the flow
       * catches up to a segment ahead at the ramp's rate */
      if (s->startup_rate > 0)
        g_object_set (sink, "lead", (guint64) (s->lead * GST_SECOND),
            "startup-rate", s->startup_rate, "startup-factor",
            opt_startup_factor, NULL);
      /* the sink connects in its own thread, bounded: a proxy address
       * that drops the SYN ends this session, nothing else waits */
      g_object_set (sink, "connect-timeout",
          (guint64) (opt_connect_timeout * GST_SECOND), NULL);
      /* over a TLS control channel the essential connection is TLS too:
       * the sink is the TLS server with the control channel's
       * certificate (the proxy checks it as it checked the control
       * connection), and the proxy proves itself with the token it sent
       * in PLAY (docs/security.md, "cTCP over TLS") */
      if (s->ess_token) {
        gst_util_set_object_arg (G_OBJECT (sink), "tls-role", "server");
        g_object_set (sink, "tls-certificate", opt_tls_cert, "tls-key",
            opt_tls_key, "tls-token", s->ess_token, NULL);
      }
    }
  }
  if (!sink || !q)
    goto missing;

  if (s->info->is_trace) {
    make_source (s, pipe, NULL, NULL, "essential");
    gst_element_link (GST_ELEMENT (GST_BIN_CHILDREN (pipe)->data), q);
    pad = gst_element_get_static_pad (q, "sink");
  } else {
    split = make (pipe, "twoflowsplit", "split");
    fq = make (pipe, "queue", NULL);
    fsink = make (pipe, "fakesink", NULL);
    if (!split || !fq || !fsink)
      goto missing;
    gst_util_set_object_arg (G_OBJECT (split), "policy",
        s->info->policy ? "ip" : "i");
    g_object_set (split, "segment-duration", segdur, NULL);
    g_object_set (fsink, "sync", FALSE, "async", FALSE, NULL);
    make_source (s, pipe, split, split, "essential");
    gst_element_link_pads (split, "essential", q, "sink");
    gst_element_link_pads (split, "enhanced", fq, "sink");
    gst_element_link (fq, fsink);
    pad = gst_element_get_static_pad (split, "essential");
  }
  gst_element_link (q, sink);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, ess_filter_probe, s,
      NULL);
  gst_object_unref (pad);
  if (g_str_equal (s->essential, "tcp")) {
    pad = gst_element_get_static_pad (sink, "sink");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, release_probe, s,
        NULL);
    gst_object_unref (pad);
  }
  s->ess_pipe = pipe;
  s->ess_sink = sink;
  return TRUE;

missing:
  gst_object_unref (pipe);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
      "missing elements for the essential flow");
  return FALSE;
}

/* Smoothing: each record entering the payloader (released by the live
 * source or, for files, by rudpsink's sync one record earlier) sets the
 * sender's rate to the rate of the window its decode time falls in. */
static GstPadProbeReturn
smooth_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Session *s = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstTwoflowFrameHeader hdr;
  GstMapInfo map;
  guint64 rate = 0;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  if (gst_twoflow_frame_header_parse (map.data, map.size, &hdr) ==
      GST_TWOFLOW_PARSE_OK && hdr.kind == GST_TWOFLOW_RECORD_FRAME)
    rate = gst_twoflow_smoothing_rate_at (s->sched->sm,
        GST_CLOCK_TIME_IS_VALID (hdr.dts) ? hdr.dts : hdr.pts);
  gst_buffer_unmap (buf, &map);
  if (rate > 0 && rate != s->sched_rate)
    enh_set_rate (s, rate);
  return GST_PAD_PROBE_OK;
}

/* A lost enhanced packet can be asked for as long as the proxy's playout
 * buffer holds its frame: rudpsink keeps the flow that long, + 1 s (at
 * most its 60 s) */
static guint64
enh_rtx_time (Session * s)
{
  return (guint64) (MIN (schedule_playout (s->sched) + 1, 60) * GST_SECOND);
}

/* Whether ratetranscoder codes @codec (its sink template takes the
 * codec's caps): MPEG-1/2 and H.264 in this tree. A codec it does not
 * code (H.265, AV1) goes without one (docs/transcoder.md, "Codecs without
 * a coder"): identity in its place, the enhanced flow's pictures as the
 * file has them, no rate adaptation of the server's own; the split still
 * sends the essential pictures ahead, reliably (a congested path costs
 * enhanced pictures only). The check is by the element's caps, so a coder
 * added to ratetranscoder is used at once. */
static gboolean
transcoder_codes (const gchar * codec)
{
  GstElementFactory *f;
  GstCaps *caps;
  gboolean codes;

  if (codec == NULL)
    return FALSE;
  caps = gst_caps_new_empty_simple (g_str_has_prefix (codec, "mpeg") ?
      "video/mpeg" : g_str_equal (codec, "h264") ? "video/x-h264" :
      g_str_equal (codec, "h265") ? "video/x-h265" :
      g_str_equal (codec, "av1") ? "video/x-av1" : "video/x-unknown");
  f = gst_element_factory_find ("ratetranscoder");
  codes = f && gst_element_factory_can_sink_any_caps (f, caps);
  if (f)
    gst_object_unref (f);
  gst_caps_unref (caps);
  return codes;
}

gboolean
build_enhanced (Session * s, GError ** error)
{
  GstElement *pipe = gst_pipeline_new ("enhanced");
  GstElement *pay, *sink, *q;
  guint64 segdur = s->segment_duration * GST_SECOND;
  gchar *levels = levels_string (s->info);
  guint64 top;

  pay = make (pipe, "rtpgstpay", NULL);
  sink = make (pipe, "rudpsink", "rtx");
  q = make (pipe, "queue", NULL);
  if (!pay || !sink || !q)
    goto missing;
  /* caps again every second: if the first packets are lost (a TCP burst
   * at the start of the flow), rtpgstdepay can still start */
  g_object_set (pay, "mtu", 1400, "config-interval", 1, NULL);
  /* NAT: from a port of its own (PLAY's reply) to where the proxy's
   * hellos come from, the control peer's address only */
  if (s->nat)
    g_object_set (sink, "host", s->host, "learn-peer", TRUE, "hello-id",
        s->hello_id, NULL);
  else
    g_object_set (sink, "host", s->host, "port", s->enh_port, NULL);
  if (s->srtp_key)
    g_object_set (sink, "key", s->srtp_key, NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "levels", levels);
  /* fixed: paced at the level above the flow's peak; receiver: the
   * proxy's rudpsrc picks the level (and the sink's rate events reach the
   * transcoder) */
  /* under the session rate controller the server sets the rate (the
   * level rc_enhanced_rate() picks) instead of the receiver */
  s->rc_pace = g_str_equal (s->rate_control, "receiver")
      && g_str_equal (opt_rate_controller, "session") && !s->info->is_trace
      && transcoder_codes (s->info->codec);
  gst_util_set_object_arg (G_OBJECT (sink), "rate-control",
      s->rc_pace ? "fixed" : s->rate_control);
  top = s->info->enh_peak / 8 * 5 / 4 * 8;     /* bit/s */
  if (s->total) {
    /* the window's rate (total_rate_cb switches it by the clock); the
     * source reads ahead as fast as the sender takes it (backpressure) */
    s->enh_rate_now = gst_twoflow_smoothing_rate_at_time (s->sched->sm, 0,
        NULL);
    s->sched_rate = s->enh_rate_now;
    g_object_set (sink, "rate", s->enh_rate_now, "buffer-size",
        (guint64) 256 * 1024, "rtx-time", enh_rtx_time (s), NULL);
  } else if (s->smooth) {
    /* the window's rate: the sender queues what a burst brings (its
     * buffer holds the schedule's largest backlog, twice over) */
    GstPad *pp = gst_element_get_static_pad (pay, "sink");

    s->enh_rate_now = gst_twoflow_smoothing_rate_at (s->sched->sm, 0);
    s->sched_rate = s->enh_rate_now;
    g_object_set (sink, "rate", s->enh_rate_now, "buffer-size",
        MAX ((guint64) 256 * 1024, 2 * s->sched->info.max_backlog_bytes),
        NULL);
    /* (a congested path's overflow losses only a later resend repairs) */
    g_object_set (sink, "rtx-time", enh_rtx_time (s), NULL);
    gst_pad_add_probe (pp, GST_PAD_PROBE_TYPE_BUFFER, smooth_probe, s, NULL);
    gst_object_unref (pp);
  } else {
    g_object_set (sink, "rate", top, NULL);
    s->enh_rate_now = s->sched_rate = top;
  }

  if (s->info->is_trace) {
    GstElement *src = make_source (s, pipe, NULL, NULL, "enhanced");
    /* the enhanced flow plays in real time: each frame at its decode
     * time; total: read ahead, paced by the sender alone */
    g_object_set (src, "is-live", !s->total, NULL);
    g_object_set (sink, "sync", FALSE, NULL);
    gst_element_link_many (src, q, pay, sink, NULL);
  } else {
    GstElement *tc, *split, *fq, *fsink;
    /* MPEG-1/2 and H.264: ratetranscoder keep=i|ip keeps the essential
     * frames byte-identical to those sent ahead; other codecs: none
     * (transcoder_codes) */
    gboolean transcode = transcoder_codes (s->info->codec);

    if (!transcode)
      g_print ("session %u: %s video: no coder in ratetranscoder, the "
          "enhanced flow goes as the file has it (no rate adaptation)\n",
          s->id, s->info->codec ? s->info->codec : "unknown");

    if (transcode) {
      tc = make (pipe, "ratetranscoder", "transcoder");
      if (tc) {
        gst_util_set_object_arg (G_OBJECT (tc), "keep",
            s->info->policy ? "ip" : "i");
        if (g_str_equal (opt_rate_controller, "session")) {
          /* the session rate controller sets its target (rc_apply): no
           * per-event law, no additive recovery of its own */
          g_object_set (tc, "events", 0, "recovery", (guint64) 0, NULL);
        } else if (g_str_equal (s->rate_control, "fixed")) {
          gst_util_set_object_arg (G_OBJECT (tc), "events",
              "rexmt+dupack+recovered+loss");
        }
      }
    } else {
      tc = make (pipe, "identity", NULL);
    }
    split = make (pipe, "twoflowsplit", "split");
    fq = make (pipe, "queue", NULL);
    fsink = make (pipe, "fakesink", NULL);
    if (!tc || !split || !fq || !fsink)
      goto missing;
    if (transcode) {
      s->transcoder = tc;
      /* under the session rate controller the frames between the
       * transcoder and the (syncing) sender are coded under an old target
       * when the path changes: hold 100 ms of them, not the queue's
       * default second (capacity drop: the enhanced flow went on at its
       * old rate for ~2 s; with 250 ms the H.264 step's frames still
       * arrived up to 0.5 s late); a late frame is caught up by the
       * lateness rule's catch-up */
      if (g_str_equal (opt_rate_controller, "session") && !s->total)
        g_object_set (q, "max-size-time", (guint64) 100 * GST_MSECOND,
            "max-size-buffers", 0, "max-size-bytes", 0, NULL);
    }
    gst_util_set_object_arg (G_OBJECT (split), "policy",
        s->info->policy ? "ip" : "i");
    g_object_set (split, "segment-duration", segdur, NULL);
    g_object_set (fsink, "sync", FALSE, "async", FALSE, NULL);
    g_object_set (sink, "sync", !s->total, NULL);
    /* audio before the first picture (an edit list): the clock runs from
     * the audio's start, and the first picture left that lead later than
     * a video's first picture does (HLS's first frame 0.7 s later); it
     * leaves as early, the audio before it comes with the essential flow
     * ahead of it anyway (up to TWOFLOW_AUDIO_LEAD_EARLY_MAX: the
     * proxy's RTSP sinks then send that audio at once). A seek's session
     * starts at a key frame; one after a prefix plays from the prefix. */
    if (!s->total && !s->start_pts && s->skip_segments == 0
        && video_audio_lead_early (s->info) > 0)
      g_object_set (sink, "ts-offset",
          -(gint64) video_audio_lead_early (s->info), NULL);
    make_source (s, pipe, tc, split, "enhanced");
    gst_element_link (tc, split);
    gst_element_link_pads (split, "enhanced", q, "sink");
    gst_element_link_many (q, pay, sink, NULL);
    gst_element_link_pads (split, "essential", fq, "sink");
    gst_element_link (fq, fsink);
  }
  g_free (levels);
  s->enh_pipe = pipe;
  s->enh_sink = sink;
  return TRUE;

missing:
  g_free (levels);
  gst_object_unref (pipe);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
      "missing elements for the enhanced flow");
  return FALSE;
}

/* NAT: whether the enhanced sink has its destination (a hello came) */
static gboolean
enhanced_peer_known (Session * s)
{
  GstStructure *st = NULL;
  const gchar *peer;
  gboolean known;

  g_object_get (s->enh_sink, "stats", &st, NULL);
  peer = st ? gst_structure_get_string (st, "peer") : NULL;
  known = peer && *peer;
  if (st)
    gst_structure_free (st);
  return known;
}

gboolean
start_enhanced_cb (gpointer user_data)
{
  Session *s = user_data;

  /* NAT: the real-time flow waits (up to 5 s) for the proxy's hello, so
   * its first frames are not sent to nowhere */
  if (s->nat && g_get_monotonic_time () < s->hello_wait_until &&
      !enhanced_peer_known (s)) {
    s->lead_timer = g_timeout_add (20, start_enhanced_cb, s);
    return G_SOURCE_REMOVE;
  }
  s->lead_timer = 0;
  /* the events kept meanwhile go when it plays (enh_bus_cb) */
  gst_element_set_state (s->enh_pipe, GST_STATE_PLAYING);
  return G_SOURCE_REMOVE;
}

/* total: the enhanced sender reads ahead, so its rate follows the
 * schedule's windows by the clock, from the session's start (when the
 * essential flow starts: window k is the interval in which the essential
 * flow sends its segment skip + k) */
gboolean
total_rate_cb (gpointer user_data)
{
  Session *s = user_data;
  GstClockTime t = (g_get_monotonic_time () - s->started_us) * GST_USECOND;
  GstClockTime next;
  guint64 rate = gst_twoflow_smoothing_rate_at_time (s->sched->sm, t, &next);

  s->rate_timer = 0;
  if (rate > 0 && rate != s->sched_rate)
    enh_set_rate (s, rate);
  if (GST_CLOCK_TIME_IS_VALID (next))
    s->rate_timer = g_timeout_add (MAX ((next - t) / GST_MSECOND, 1),
        total_rate_cb, s);
  return G_SOURCE_REMOVE;
}

void
media_set_callbacks (const MediaCallbacks * cb)
{
  callbacks = *cb;
}

void
twoflow_server_media_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_server_media_debug,
      "twoflow-server-media", 0,
      "twoflow-server: a session's pipelines and congestion forwarding");
}
