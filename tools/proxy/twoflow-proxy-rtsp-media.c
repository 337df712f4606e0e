/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — the RTSP media: seeking, the SDP's range, DESCRIBE's
 * stand-in
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
#include <gst/rtsp-server/rtsp-server.h>
#include "twoflow-admission.h"
#include "twoflow-protocol.h"
#include "twoflow-proxy-session.h"
#include "twoflow-proxy-report.h"
#include "twoflow-proxy-admission.h"
#include "twoflow-proxy-receiver.h"
#include "twoflow-proxy-output.h"
#include "twoflow-proxy-rtsp-media.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_rtsp_media_debug);
#define GST_CAT_DEFAULT twoflow_proxy_rtsp_media_debug


/* the RTSP client threads' admission decisions and session set-ups take
 * turns */
GRecMutex rtsp_lock;

/* The session's report and its memory, in the main loop: its callbacks
 * (ready_cb, event_cb, the timers) run there, so it is freed there. */
static gboolean
release_idle (gpointer data)
{
  ProxySession *ps = data;

  g_rec_mutex_lock (&rtsp_lock);
  if (!ps->end_report) {
    /* set up, never played: no server session to report */
    g_print ("proxy session %u: released (never played)\n", ps->id);
  } else {
    log_json ("SESSION-END", ps->end_report);
    json_object_unref (ps->end_report);
    g_print ("proxy session %u: released; %.2f Mbit/s reserved\n",
        ps->id, gst_twoflow_admission_reserved (admission) / 1e6);
  }
  proxy_session_free (ps);
  g_rec_mutex_unlock (&rtsp_lock);
  return G_SOURCE_REMOVE;
}

/* The media of @ps is going, in whatever thread lets it go (a client's,
 * on TEARDOWN or a closed connection): its reservation ends and its
 * report is taken now, while its elements still exist; the session is
 * freed in the main loop (freeing it here raced with a server event
 * still to be dispatched there), which ignores it from now on. */
void
release_session (gpointer data, GObject * where_the_media_was)
{
  ProxySession *ps = data;

  g_rec_mutex_lock (&rtsp_lock);
  GST_DEBUG ("session %u: its media is gone", ps->id);
  gst_twoflow_admission_remove (admission, ps->id);
  if (ps->ready_timer || ps->play_sent)
    ps->end_report = proxy_session_report (ps);
  g_atomic_int_set (&ps->released, 1);
  g_rec_mutex_unlock (&rtsp_lock);
  g_idle_add (release_idle, ps);
}

void
media_unprepared (GstRTSPMedia * media, gpointer data)
{
  ProxySession *ps = g_object_get_data (G_OBJECT (media), "twoflow-session");
  if (ps) {
    g_object_weak_unref (G_OBJECT (media), release_session, ps);
    g_object_set_data (G_OBJECT (media), "twoflow-session", NULL);
    release_session (ps, NULL);
  }
}

/* ---------------------------------------------------------- RTSP seeking
 *
 * gst-rtsp-server seeks a media by asking its pipeline (SEEKING query:
 * check_seekable) and sending it a flushing SEEK event, then waits for
 * ASYNC_DONE (a re-preroll). The media's pipeline is a TwoflowPipeline:
 * it answers SEEKING (seekable, 0 to the duration) and DURATION from the
 * server's INFO, and handles SEEK by starting a new server session at the
 * asked time (the server starts it at the key frame before it, on both
 * flows, the audio from there too): the old receiving bin is flushed out
 * and replaced, the new one's running times continue from its start (so
 * the MPEG-TS timestamps are the video's), and ASYNC_DONE tells the media
 * the seek is done (its sinks do not preroll: the pipeline is live). The
 * SDP carries the duration (TwoflowMedia), the PLAY answer's Range where
 * the session starts (send_message). */

/* mpegtsmux 1.22 writes running time + this (its TS_MUX_CLOCK_BASE) */
#define TS_CLOCK_BASE_S 3600.0

typedef GstPipeline TwoflowPipeline;
typedef GstPipelineClass TwoflowPipelineClass;
GType twoflow_pipeline_get_type (void);
G_DEFINE_TYPE (TwoflowPipeline, twoflow_pipeline, GST_TYPE_PIPELINE);

typedef GstRTSPMedia TwoflowMedia;
typedef GstRTSPMediaClass TwoflowMediaClass;
GType twoflow_media_get_type (void);
G_DEFINE_TYPE (TwoflowMedia, twoflow_media, GST_TYPE_RTSP_MEDIA);

/* the media's element (the bin of twoflow_factory_create_element) */
static GstElement *
pipeline_top (GstElement * pipeline)
{
  GstRTSPMedia *media = g_object_get_data (G_OBJECT (pipeline),
      "twoflow-media");

  return media ? gst_rtsp_media_get_element (media) : NULL;
}

static ProxySession *
pipeline_session (GstElement * pipeline)
{
  GstElement *top = pipeline_top (pipeline);
  ProxySession *ps = top ? g_object_get_data (G_OBJECT (top),
      "twoflow-session") : NULL;

  if (top)
    gst_object_unref (top);
  return ps;
}

/* a video the server can start anywhere (not a frame trace) and its
 * duration in ns */
static gboolean
info_seekable (JsonObject * info, gint64 * duration)
{
  gdouble d;

  if (!info || g_strcmp0 (twoflow_json_get_string (info, "kind", ""),
          "mpeg") != 0)
    return FALSE;
  d = twoflow_json_get_double (info, "duration", 0);
  if (d <= 0)
    return FALSE;
  *duration = (gint64) (d * GST_SECOND);
  return TRUE;
}

gboolean
session_seekable (ProxySession * ps, gint64 * duration)
{
  return ps != NULL && info_seekable (ps->info, duration);
}

/* Where a seek to @t (s) of the RTSP request in this thread goes: ffmpeg
 * (libavformat) seeks an MPEG-TS stream in the TS's own timestamps, which
 * mpegtsmux starts at TS_CLOCK_BASE_S. FALSE: nowhere new (the first PLAY
 * of a session that starts there already). */
gboolean
seek_target (ProxySession * ps, gdouble * t, gint64 duration)
{
  GstRTSPContext *ctx = gst_rtsp_context_get_current ();
  gchar *ua = NULL;

  if (ctx && ctx->request && gst_rtsp_message_get_header (ctx->request,
          GST_RTSP_HDR_USER_AGENT, &ua, 0) == GST_RTSP_OK
      && g_str_has_prefix (ua, "Lavf") && *t >= TS_CLOCK_BASE_S)
    *t -= TS_CLOCK_BASE_S;
  *t = CLAMP (*t, 0, (gdouble) duration / GST_SECOND);
  return ps->rtsp_played || ABS (*t - ps->start) >= 0.001;
}

/* Whether the PLAY in this thread seeks: its Range's start is somewhere
 * new. gst-rtsp-server unblocks the media's streams for a seek, before
 * the viewer's transport is ready: what the session had sent by then
 * (a prefix's first frames) was lost when no seek was needed. */
gboolean
range_start (gdouble * t)
{
  GstRTSPContext *ctx = gst_rtsp_context_get_current ();
  GstRTSPTimeRange *range = NULL;
  GstClockTime start = GST_CLOCK_TIME_NONE, stop;
  gchar *str = NULL;

  if (!ctx || !ctx->request || gst_rtsp_message_get_header (ctx->request,
          GST_RTSP_HDR_RANGE, &str, 0) != GST_RTSP_OK
      || gst_rtsp_range_parse (str, &range) != GST_RTSP_OK)
    return FALSE;
  if (range->unit == GST_RTSP_RANGE_NPT)
    gst_rtsp_range_get_times (range, &start, &stop);
  gst_rtsp_range_free (range);
  if (!GST_CLOCK_TIME_IS_VALID (start))
    return FALSE;
  *t = (gdouble) start / GST_SECOND;
  return TRUE;
}

static gboolean
play_seeks (ProxySession * ps, gint64 duration)
{
  gdouble t;

  return range_start (&t) && seek_target (ps, &t, duration);
}

static gboolean
twoflow_pipeline_query (GstElement * element, GstQuery * query)
{
  gint64 duration;
  GstFormat fmt;
  ProxySession *ps;

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_SEEKING:
      gst_query_parse_seeking (query, &fmt, NULL, NULL, NULL);
      ps = pipeline_session (element);
      if (fmt != GST_FORMAT_TIME || !session_seekable (ps, &duration))
        break;
      gst_query_set_seeking (query, fmt, play_seeks (ps, duration), 0,
          duration);
      return TRUE;
    case GST_QUERY_DURATION:
      gst_query_parse_duration (query, &fmt, NULL);
      if (fmt != GST_FORMAT_TIME
          || !session_seekable (pipeline_session (element), &duration))
        break;
      gst_query_set_duration (query, fmt, duration);
      return TRUE;
    default:
      break;
  }
  return GST_ELEMENT_CLASS (twoflow_pipeline_parent_class)->query (element,
      query);
}

static gboolean twoflow_seek (GstElement * pipeline, gdouble t);

static gboolean
twoflow_pipeline_send_event (GstElement * element, GstEvent * event)
{
  gdouble rate;
  GstFormat fmt;
  GstSeekFlags flags;
  GstSeekType start_type, stop_type;
  gint64 start, stop;
  gboolean ok;

  if (GST_EVENT_TYPE (event) != GST_EVENT_SEEK)
    return GST_ELEMENT_CLASS (twoflow_pipeline_parent_class)->send_event
        (element, event);
  gst_event_parse_seek (event, &rate, &fmt, &flags, &start_type, &start,
      &stop_type, &stop);
  gst_event_unref (event);
  /* forward, at normal speed, to a time: a new start; a seek that changes
   * nothing else (no start, same rate) needs nothing */
  if (fmt != GST_FORMAT_TIME || rate != 1.0)
    return FALSE;
  if (start_type != GST_SEEK_TYPE_SET || start < 0)
    return TRUE;
  ok = twoflow_seek (element, (gdouble) start / GST_SECOND);
  return ok;
}

/* TRUE when @obj is in a receive bin a seek replaced (twoflow_seek) */
static gboolean
in_replaced_bin (GstObject * obj)
{
  GstObject *o = obj ? gst_object_ref (obj) : NULL;
  gboolean replaced = FALSE;

  while (o && !replaced) {
    GstObject *parent = gst_object_get_parent (o);

    replaced = g_object_get_data (G_OBJECT (o), "twoflow-replaced") != NULL;
    gst_object_unref (o);
    o = parent;
  }
  if (o)
    gst_object_unref (o);
  return replaced;
}

/* A seek's old receive bin ends while its flows are cut: the merge's error
 * at the cut ("a truncated record") must not reach the media, where any
 * error puts the media in error and answers the seek's PLAY 503. */
static void
twoflow_pipeline_handle_message (GstBin * bin, GstMessage * msg)
{
  if ((GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR
          || GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING)
      && in_replaced_bin (GST_MESSAGE_SRC (msg))) {
    GST_DEBUG_OBJECT (bin, "dropping %s from a replaced session's bin",
        GST_MESSAGE_TYPE_NAME (msg));
    gst_message_unref (msg);
    return;
  }
  GST_BIN_CLASS (twoflow_pipeline_parent_class)->handle_message (bin, msg);
}

static void
twoflow_pipeline_class_init (TwoflowPipelineClass * klass)
{
  GstElementClass *ec = GST_ELEMENT_CLASS (klass);

  ec->query = twoflow_pipeline_query;
  ec->send_event = twoflow_pipeline_send_event;
  GST_BIN_CLASS (klass)->handle_message = twoflow_pipeline_handle_message;
}

static void
twoflow_pipeline_init (TwoflowPipeline * p)
{
}

/* The SDP's range: the video's duration (the media is live, which
 * gst-rtsp-server describes as npt=now-). */
static gboolean
twoflow_media_setup_sdp (GstRTSPMedia * media, GstSDPMessage * sdp,
    GstSDPInfo * info)
{
  GstElement *top;
  ProxySession *ps;
  gint64 duration;
  gboolean seekable;
  guint i;

  if (!GST_RTSP_MEDIA_CLASS (twoflow_media_parent_class)->setup_sdp (media,
          sdp, info))
    return FALSE;
  top = gst_rtsp_media_get_element (media);
  ps = g_object_get_data (G_OBJECT (top), "twoflow-session");
  if (ps) {
    seekable = session_seekable (ps, &duration);
  } else {
    /* DESCRIBE's stand-in: the video's INFO (pre_describe has it) */
    const gchar *video = g_object_get_data (G_OBJECT (top), "twoflow-video");

    g_rec_mutex_lock (&rtsp_lock);
    seekable = video && info_seekable (g_hash_table_lookup (info_cache,
            video), &duration);
    g_rec_mutex_unlock (&rtsp_lock);
  }
  gst_object_unref (top);
  if (!seekable)
    return TRUE;
  for (i = 0; i < gst_sdp_message_attributes_len (sdp); i++) {
    const GstSDPAttribute *a = gst_sdp_message_get_attribute (sdp, i);

    if (g_strcmp0 (a->key, "range") == 0) {
      GstSDPAttribute na;
      gchar *v = g_strdup_printf ("npt=0-%.3f", (gdouble) duration /
          GST_SECOND);

      gst_sdp_attribute_set (&na, "range", v);
      gst_sdp_message_replace_attribute (sdp, i, &na);
      g_free (v);
      break;
    }
  }
  return TRUE;
}

static void
twoflow_media_class_init (TwoflowMediaClass * klass)
{
  klass->setup_sdp = twoflow_media_setup_sdp;
}

static void
twoflow_media_init (TwoflowMedia * m)
{
}


/* Null TS packets (PID 0x1FFF, which every demuxer skips) from a live
 * appsrc: what prepares a media (gst-rtsp-server makes the SDP from the
 * payloader's caps once a packet reaches it) without a server session
 * (issue 24: a stranger's DESCRIBE or SETUP must not hold one, nor
 * admission capacity). */
static void
stand_in_need_data (GstElement * src, guint length, gpointer data)
{
  static const guint8 null_packet[4] = { 0x47, 0x1f, 0xff, 0x10 };
  GstBuffer *buf;
  GstFlowReturn ret;
  guint i;

  if (g_object_get_data (G_OBJECT (src), "twoflow-pushed"))
    return;
  g_object_set_data (G_OBJECT (src), "twoflow-pushed", GINT_TO_POINTER (1));
  /* rtpmp2tpay sends when its MTU is full: 7 packets */
  buf = gst_buffer_new_allocate (NULL, 7 * 188, NULL);
  gst_buffer_memset (buf, 0, 0xff, 7 * 188);
  for (i = 0; i < 7; i++)
    gst_buffer_fill (buf, i * 188, null_packet, sizeof (null_packet));
  GST_BUFFER_PTS (buf) = 0;
  g_signal_emit_by_name (src, "push-buffer", buf, &ret);
  gst_buffer_unref (buf);
  /* beside the video's stream (a funnel), this input ends here */
  if (data)
    g_signal_emit_by_name (src, "end-of-stream", &ret);
}

GstElement *
stand_in_source (gboolean eos)
{
  GstElement *src = gst_element_factory_make ("appsrc", NULL);
  GstCaps *caps = gst_caps_from_string ("video/mpegts, "
      "systemstream=(boolean)true, packetsize=(int)188");

  /* a live source answers latency min = max = 0 by default: beside the
   * video's stream (0.7 s of jitterbuffer) in a funnel that made max <
   * min ("minimum latency bigger than maximum latency" and a "Pipeline
   * construction is invalid" warning on every latency query); with
   * min-latency set, max-latency -1 is unbounded */
  g_object_set (src, "is-live", TRUE, "format", GST_FORMAT_TIME, "caps", caps,
      "min-latency", (gint64) 0, NULL);
  gst_caps_unref (caps);
  g_signal_connect (src, "need-data", G_CALLBACK (stand_in_need_data),
      GINT_TO_POINTER (eos));
  return src;
}

/* What a DESCRIBE gets instead of the video's media: the same SDP (one
 * live MPEG-TS stream over RTP, payload type 33, range now-). It must
 * follow what twoflow_factory_create_element builds for SETUP. */
GstElement *
describe_stand_in (const gchar * video)
{
  GstElement *bin = gst_bin_new (NULL);
  GstElement *src = stand_in_source (FALSE);
  GstElement *pay = gst_element_factory_make ("rtpmp2tpay", "pay0");

  gst_bin_add_many (GST_BIN (bin), src, pay, NULL);
  gst_element_link (src, pay);
  /* the SDP's range (twoflow_media_setup_sdp) */
  g_object_set_data_full (G_OBJECT (bin), "twoflow-video", g_strdup (video),
      g_free);
  return bin;
}

/* A new server session at @t (s of the video; ffmpeg's MPEG-TS time)
 * replaces the media's, in the RTSP client's thread (PLAY with a Range)
 * with the media locked. */
static gboolean
twoflow_seek (GstElement * pipeline, gdouble t)
{
  GstRTSPMedia *media = g_object_get_data (G_OBJECT (pipeline),
      "twoflow-media");
  GstElement *top = pipeline_top (pipeline);
  ProxySession *old = top ? g_object_get_data (G_OBJECT (top),
      "twoflow-session") : NULL;
  ProxySession *ps;
  AudioLink *al;
  GstElement *recv, *old_recv;
  GstPad *gpad, *vsink, *asink = NULL;
  gint64 duration;
  GError *err = NULL;
  GstBus *bus;

  if (!media || !old || !old->bin || !session_seekable (old, &duration)) {
    if (top)
      gst_object_unref (top);
    return FALSE;
  }
  if (!seek_target (old, &t, duration))
    goto done;

  ps = proxy_session_new (old->video, FALSE, &err);
  if (!ps) {
    g_print ("RTSP seek in %s to %.3f s: %s\n", old->video, t, err->message);
    g_clear_error (&err);
    gst_object_unref (top);
    return FALSE;
  }
  ps->start = t;
  g_print ("RTSP seek in %s to %.3f s: proxy session %u replaces %u\n",
      old->video, t, ps->id, old->id);
  /* the old server session ends first (its control connection closes):
   * its flows' end, seen as errors, must not reach the media (events:
   * old->replaced; its bin's messages: twoflow_pipeline_handle_message) */
  g_atomic_int_set (&old->replaced, 1);
  g_object_set_data (G_OBJECT (old->bin), "twoflow-replaced",
      GINT_TO_POINTER (1));
  g_cancellable_cancel (old->cancel);
  if (old->conn)
    g_io_stream_close (G_IO_STREAM (old->conn), NULL, NULL);
  /* what the old session left on its way to the viewer is flushed out
   * (the muxer's pads: the muxer itself and the RTP side go on) */
  old_recv = old->bin;
  al = g_object_get_data (G_OBJECT (top), "twoflow-audio-link");
  gpad = gst_element_get_static_pad (old_recv, "src");
  vsink = gst_pad_get_peer (gpad);
  gst_object_unref (gpad);
  if (al)
    asink = gst_element_get_static_pad (al->aqueue, "sink");
  gst_pad_send_event (vsink, gst_event_new_flush_start ());
  if (asink)
    gst_pad_send_event (asink, gst_event_new_flush_start ());
  gst_element_set_locked_state (old_recv, TRUE);
  gst_element_set_state (old_recv, GST_STATE_NULL);
  gst_bin_remove (GST_BIN (top), old_recv);
  old->bin = old->ess_src = old->enh_src = old->merge = NULL;
  old->jitterbuffer = NULL;
  gst_pad_send_event (vsink, gst_event_new_flush_stop (TRUE));
  if (asink)
    gst_pad_send_event (asink, gst_event_new_flush_stop (TRUE));

  recv = build_receive_bin (ps);
  gst_bin_add (GST_BIN (top), recv);
  gpad = gst_element_get_static_pad (recv, "src");
  if (gst_pad_link (gpad, vsink) != GST_PAD_LINK_OK)
    GST_ERROR ("seek: cannot link the new session's video");
  gst_object_unref (gpad);
  gst_object_unref (vsink);
  if (asink)
    gst_object_unref (asink);
  if (al)
    connect_audio_link (recv, al);
  ps->out_mux = old->out_mux;
  ps->rtsp_played = TRUE;

  /* the media's session is the new one */
  g_object_set_data (G_OBJECT (top), "twoflow-session", ps);
  g_object_set_data (G_OBJECT (media), "twoflow-session", ps);
  g_object_weak_unref (G_OBJECT (media), release_session, old);
  g_object_weak_ref (G_OBJECT (media), release_session, ps);
  /* freed in the main loop, after any event of it already read */
  release_session (old, NULL);
  admission_add (ps);
  gst_element_sync_state_with_parent (recv);
  /* PLAY now when the receivers listen, so the answer says where the
   * session starts; else as usual, once they do */
  if (!proxy_session_play_now (ps))
    proxy_session_start (ps);

done:
  /* its running times run ahead of the pipeline's clock: the TCP sink
   * must not wait for them (the network paces this live media) */
  gst_rtsp_media_set_rate_control (media, FALSE);
  /* the seek is complete: what a prerolling pipeline would say */
  bus = gst_pipeline_get_bus (GST_PIPELINE (pipeline));
  gst_bus_post (bus, gst_message_new_async_done (GST_OBJECT (pipeline),
          GST_CLOCK_TIME_NONE));
  gst_object_unref (bus);
  gst_object_unref (top);
  return TRUE;
}

void
twoflow_proxy_rtsp_media_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_rtsp_media_debug,
      "twoflow-proxy-rtsp-media", 0, "twoflow-proxy: the RTSP media");
}
