/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — a session's output: parsers, audio, the muxer
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * What the merged video and audio go into: a container by the fetch's
 * file name, MPEG-TS for RTSP and HLS; audio a muxer cannot carry
 * transcoded to AAC, MPEG-1/2 video to H.264 for browsers and MP4. H.265
 * goes into all three containers; AV1 into Matroska and MP4 only
 * (AV1_NO_TS).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/gst.h>
#include "twoflow-control.h"
#include "twoflow-proxy-session.h"
#include "twoflow-proxy-output.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_output_debug);
#define GST_CAT_DEFAULT twoflow_proxy_output_debug


/* What a fetch writes, by the output file's extension: "ts", "mp4", "mkv",
 * "annexb" (H.264/H.265 video alone as an Annex B byte stream) or "es"
 * (the merged video elementary stream as parsed, no audio); otherwise by
 * the codec (MPEG-1/2: TS, H.264, H.265, AV1: Matroska). */
const gchar *
container_for (const gchar * path, const gchar * codec)
{
  gchar *lower = g_ascii_strdown (path, -1);
  const gchar *c = NULL;
  const gchar *ext = strrchr (lower, '.');

  if (ext) {
    if (g_str_equal (ext, ".ts") || g_str_equal (ext, ".m2ts")
        || g_str_equal (ext, ".mts"))
      c = "ts";
    else if (g_str_equal (ext, ".mp4") || g_str_equal (ext, ".m4v")
        || g_str_equal (ext, ".mov"))
      c = "mp4";
    else if (g_str_equal (ext, ".mkv") || g_str_equal (ext, ".mka"))
      c = "mkv";
    else if ((g_str_equal (ext, ".h264") || g_str_equal (ext, ".264")
            || g_str_equal (ext, ".h265") || g_str_equal (ext, ".265")
            || g_str_equal (ext, ".hevc")) && (g_strcmp0 (codec, "h264") == 0
            || g_strcmp0 (codec, "h265") == 0))
      c = "annexb";
    else if (g_str_equal (ext, ".m2v") || g_str_equal (ext, ".m1v")
        || g_str_equal (ext, ".mpv") || g_str_equal (ext, ".h264")
        || g_str_equal (ext, ".264") || g_str_equal (ext, ".es")
        || g_str_equal (ext, ".twf"))
      c = "es";
  }
  g_free (lower);
  if (c)
    return c;
  return g_strcmp0 (codec, "h264") == 0 || g_strcmp0 (codec, "h265") == 0
      || g_strcmp0 (codec, "av1") == 0 ? "mkv" : "ts";
}

/* The merged video's parser and, for MPEG-TS, the caps it must give (a
 * byte stream, parameter sets before each key frame so a viewer starts at
 * any of them; NULL: what the muxer negotiates). */
static const gchar *
video_parser_for (const gchar * codec, gboolean ts, const gchar ** ts_caps)
{
  *ts_caps = NULL;
  if (g_strcmp0 (codec, "h264") == 0) {
    if (ts)
      *ts_caps = "video/x-h264, stream-format=byte-stream, alignment=au";
    return "h264parse";
  }
  if (g_strcmp0 (codec, "h265") == 0) {
    if (ts)
      *ts_caps = "video/x-h265, stream-format=byte-stream, alignment=au";
    return "h265parse";
  }
  if (g_strcmp0 (codec, "av1") == 0)
    return "av1parse";
  return "mpegvideoparse";
}

static const gchar *
audio_parser_for (const gchar * codec)
{
  if (g_str_equal (codec, "aac"))
    return "aacparse";
  if (g_str_has_prefix (codec, "mp") && strlen (codec) == 3)
    return "mpegaudioparse";
  if (g_str_equal (codec, "ac3") || g_str_equal (codec, "eac3"))
    return "ac3parse";
  if (g_str_equal (codec, "opus"))
    return "opusparse";
  if (g_str_equal (codec, "flac"))
    return "flacparse";
  return "identity";
}

static void recv_pad_added (GstElement * recv, GstPad * pad, AudioLink * al);
static void recv_no_more_pads (GstElement * recv, AudioLink * al);

/* the receiving bin's audio pad, when it comes, to the audio branch */
void
connect_audio_link (GstElement * recv, AudioLink * al)
{
  al->linked = FALSE;
  g_signal_connect (recv, "pad-added", G_CALLBACK (recv_pad_added), al);
  g_signal_connect (recv, "no-more-pads", G_CALLBACK (recv_no_more_pads), al);
}

static void
recv_pad_added (GstElement * recv, GstPad * pad, AudioLink * al)
{
  GstPad *sink;

  if (!g_str_equal (GST_PAD_NAME (pad), "audio"))
    return;
  /* a session started later (seeking): its running times continue from
   * its start, as the video's (twoflow_seek) */
  gst_pad_set_offset (pad, GPOINTER_TO_SIZE (g_object_get_data (G_OBJECT
              (recv), "twoflow-offset-ms")) * GST_MSECOND);
  sink = gst_element_get_static_pad (al->aqueue, "sink");
  if (gst_pad_link (pad, sink) == GST_PAD_LINK_OK)
    al->linked = TRUE;
  else
    GST_ERROR_OBJECT (recv, "cannot link the merged audio");
  gst_object_unref (sink);
}

/* The merge has all its pads and no audio came: end the audio branch so
 * the muxer goes on with the video alone. */
static void
recv_no_more_pads (GstElement * recv, AudioLink * al)
{
  GstPad *sink;
  GstSegment seg;

  if (al->linked)
    return;
  g_print ("no audio from the merge: video only\n");
  sink = gst_element_get_static_pad (al->aqueue, "sink");
  gst_pad_send_event (sink, gst_event_new_stream_start ("twoflow-no-audio"));
  gst_segment_init (&seg, GST_FORMAT_TIME);
  gst_pad_send_event (sink, gst_event_new_segment (&seg));
  gst_pad_send_event (sink, gst_event_new_eos ());
  gst_object_unref (sink);
}

static GstElement *
add_el (GstBin * bin, const gchar * factory, const gchar * name)
{
  GstElement *e = gst_element_factory_make (factory, name);

  if (e == NULL) {
    g_printerr ("missing element %s\n", factory);
    return NULL;
  }
  gst_bin_add (bin, e);
  return e;
}

/* The caps of an audio codec as the server names it (audio_codec_name). */
static GstCaps *
audio_codec_caps (const gchar * codec)
{
  if (g_str_equal (codec, "aac"))
    return gst_caps_from_string ("audio/mpeg, mpegversion=(int)4");
  if (g_str_has_prefix (codec, "mp") && strlen (codec) == 3)
    return gst_caps_from_string ("audio/mpeg, mpegversion=(int)1");
  {
    gchar *name = g_strconcat ("audio/x-", codec, NULL);
    GstCaps *caps = gst_caps_new_empty_simple (name);

    g_free (name);
    return caps;
  }
}

/* Whether a sink pad template of @factory takes @caps. */
static gboolean
factory_takes (const gchar * factory, const GstCaps * caps)
{
  GstElementFactory *f = gst_element_factory_find (factory);
  gboolean takes = f && gst_element_factory_can_sink_any_caps (f, caps);

  if (f)
    gst_object_unref (f);
  return takes;
}

/* The best-ranked audio decoder for @caps (NULL: none). */
static GstElementFactory *
audio_decoder_for (const GstCaps * caps)
{
  GList *all = gst_element_factory_list_get_elements
      (GST_ELEMENT_FACTORY_TYPE_DECODER | GST_ELEMENT_FACTORY_TYPE_MEDIA_AUDIO,
      GST_RANK_MARGINAL);
  GList *fit = gst_element_factory_list_filter (all, caps, GST_PAD_SINK,
      FALSE);
  GstElementFactory *best = NULL;

  fit = g_list_sort (fit, gst_plugin_feature_rank_compare_func);
  if (fit)
    best = gst_object_ref (fit->data);
  gst_plugin_feature_list_free (fit);
  gst_plugin_feature_list_free (all);
  return best;
}

/* Whether @container (its muxer @mux_factory) carries @codec so that it
 * plays back whole. Not where GStreamer 1.22's muxer takes the caps but
 * writes it wrong, nor where the viewers cannot decode it:
 * - mp4mux writes Opus's dOps box with OpusHead's little-endian fields as
 *   they are (pre-skip 312 reads as 14337 samples: decoders drop 0.3 s);
 * - HLS is for browsers: hls.js 1.5's MPEG-TS demuxer takes ADTS AAC and
 *   MPEG audio, AC-3 only where the browser's MSE does (not Chromium), and
 *   no Opus (stream type 6 without an AC-3 descriptor is skipped), so the
 *   page played such videos silent. mpegtsmux itself carries Opus (the
 *   segments of twoflow-hls.c decode whole with ffmpeg). */
static gboolean
mux_carries (const gchar * mux_factory, const gchar * container,
    const gchar * codec, const GstCaps * caps)
{
  if (g_str_equal (container, "hls"))
    return g_str_equal (codec, "aac") || (g_str_has_prefix (codec, "mp")
        && strlen (codec) == 3);
  if (g_str_equal (mux_factory, "mp4mux") && g_str_equal (codec, "opus"))
    return FALSE;
  return factory_takes (mux_factory, caps);
}

/* When @container's muxer cannot carry @codec (GStreamer 1.22: E-AC-3,
 * FLAC, Vorbis in MPEG-TS or MP4 ...; mux_carries), the audio is
 * transcoded to AAC:
 * parser ! decoder ! audioconvert ! audioresample ! avenc_aac ! aacparse.
 * Returns the last element of that chain (NULL: not needed, or @error). */
static GstElement *
audio_transcode (GstBin * bin, GstElement * aparse, const gchar * codec,
    const gchar * mux_factory, const gchar * container, GError ** error)
{
  GstCaps *caps = audio_codec_caps (codec);
  GstElementFactory *dec;
  GstElement *d, *conv, *res, *enc, *parse;

  if (mux_carries (mux_factory, container, codec, caps)) {
    gst_caps_unref (caps);
    return NULL;
  }
  dec = audio_decoder_for (caps);
  gst_caps_unref (caps);
  if (dec == NULL) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
        "%s audio cannot go into %s and no decoder for it is installed",
        codec, container);
    return NULL;
  }
  d = gst_element_factory_create (dec, NULL);
  conv = add_el (bin, "audioconvert", NULL);
  res = add_el (bin, "audioresample", NULL);
  enc = add_el (bin, "avenc_aac", NULL);
  parse = add_el (bin, "aacparse", NULL);
  if (d)
    gst_bin_add (bin, d);
  if (!d || !conv || !res || !enc || !parse
      || !gst_element_link_many (aparse, d, conv, res, enc, parse, NULL)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
        "%s audio cannot go into %s and cannot be transcoded to AAC",
        codec, container);
    gst_object_unref (dec);
    return NULL;
  }
  g_print ("audio: %s cannot go into %s (%s): transcoded to AAC (%s ! "
      "avenc_aac)\n", codec, container, mux_factory,
      GST_OBJECT_NAME (dec));
  gst_object_unref (dec);
  return parse;
}

/* MPEG-1/2 video for the browsers' HLS (and for MP4: no muxer of
 * GStreamer 1.22 writes MPEG-2 video into MP4): @vparse ! decoder !
 * videoconvert ! x264enc (a key frame every 2 s, HLS's target duration) !
 * h264parse ! @stream_format caps; returns the last element, linked (NULL:
 * missing). */
/* avdec_mpeg2video (libav 5.1) gives two frames of an open GOP's start the
 * same PTS (0.245 s twice, none at 0.165 s, from a file as from the
 * merge); x264enc then returns a frame without PTS and mp4mux fails ("Buffer
 * has no PTS"). A frame whose PTS is missing or not after the previous one
 * gets the previous one's end. */
static GstPadProbeReturn
increasing_pts_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstClockTime *last = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime pts = GST_BUFFER_PTS (buf), dur = GST_BUFFER_DURATION (buf);

  if (GST_CLOCK_TIME_IS_VALID (*last) && (!GST_CLOCK_TIME_IS_VALID (pts)
          || pts <= *last)) {
    buf = gst_buffer_make_writable (buf);
    GST_BUFFER_PTS (buf) = pts = *last + (GST_CLOCK_TIME_IS_VALID (dur) ?
        dur : 1);
    GST_PAD_PROBE_INFO_DATA (info) = buf;
  }
  if (GST_CLOCK_TIME_IS_VALID (pts))
    *last = pts;
  return GST_PAD_PROBE_OK;
}

static GstElement *
hls_h264_encoder (GstBin * bin, GstElement * vparse,
    const gchar * stream_format)
{
  GstElement *dec = add_el (bin, "avdec_mpeg2video", NULL);
  GstElement *conv = add_el (bin, "videoconvert", NULL);
  GstElement *enc = add_el (bin, "x264enc", NULL);
  GstElement *parse = add_el (bin, "h264parse", NULL);
  GstElement *caps = add_el (bin, "capsfilter", NULL);
  GstCaps *c;

  if (!dec || !conv || !enc || !parse || !caps)
    return NULL;
  gst_util_set_object_arg (G_OBJECT (enc), "speed-preset", "veryfast");
  gst_util_set_object_arg (G_OBJECT (enc), "pass", "qual");
  /* a short lookahead and sliced threads: with veryfast's (10 frames, and
   * frame threads) x264 held ~12 frames back and HLS's first frame of an
   * MPEG-2 video came ~0.4 s later; tune=zerolatency was as quick but made
   * the copy 35 % larger, this not (docs/results.md, "Start-up in 2 s") */
  g_object_set (enc, "rc-lookahead", 2, "sync-lookahead", 0,
      "sliced-threads", TRUE, NULL);
  g_object_set (enc, "quantizer", 21, "key-int-max", 50, "bframes", 0,
      NULL);
  g_object_set (parse, "config-interval", -1, NULL);
  c = gst_caps_new_simple ("video/x-h264", "stream-format", G_TYPE_STRING,
      stream_format, "alignment", G_TYPE_STRING, "au", NULL);
  g_object_set (caps, "caps", c, NULL);
  gst_caps_unref (c);
  if (!gst_element_link_many (vparse, dec, conv, enc, parse, caps, NULL))
    return NULL;
  {
    GstPad *src = gst_element_get_static_pad (dec, "src");
    GstClockTime *last = g_new (GstClockTime, 1);

    *last = GST_CLOCK_TIME_NONE;
    gst_pad_add_probe (src, GST_PAD_PROBE_TYPE_BUFFER, increasing_pts_probe,
        last, g_free);
    gst_object_unref (src);
  }
  return caps;
}

/* mp4mux (1.22) gives the last sample its buffer's duration and the edit
 * list the samples' total: when the reordering delay (PTS - DTS) grows
 * along the file, as with frame rates that change, the edit ended before
 * the last picture and players dropped it. Each buffer's duration is what
 * the last one needs: the presentation's end so far less its DTS, less
 * the first picture's delay (the edit's start). */
typedef struct
{
  GstClockTime first_pts, first_dts, end;
} Mp4Durations;

static GstPadProbeReturn
mp4_duration_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Mp4Durations *m = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime pts = GST_BUFFER_PTS (buf), dts = GST_BUFFER_DTS (buf), d;

  if (!GST_CLOCK_TIME_IS_VALID (pts) || !GST_CLOCK_TIME_IS_VALID (dts))
    return GST_PAD_PROBE_OK;
  if (!GST_CLOCK_TIME_IS_VALID (m->first_pts)) {
    m->first_pts = pts;
    m->first_dts = dts;
  }
  m->first_pts = MIN (m->first_pts, pts);
  m->end = MAX (m->end, pts + (GST_BUFFER_DURATION_IS_VALID (buf) ?
          GST_BUFFER_DURATION (buf) : 0));
  d = m->end - m->first_pts + m->first_dts;
  if (d > dts && (!GST_BUFFER_DURATION_IS_VALID (buf)
          || d - dts > GST_BUFFER_DURATION (buf))) {
    buf = gst_buffer_make_writable (buf);
    GST_BUFFER_DURATION (buf) = d - dts;
    GST_PAD_PROBE_INFO_DATA (info) = buf;
  }
  return GST_PAD_PROBE_OK;
}

/* H.264/H.265 from MP4 or Matroska merge as they were parsed, length-
 * prefixed (avc, hvc1): a .h264/.h265 file of them played nowhere. recv's
 * video through its parser to a byte stream (parameter sets before every
 * key frame); returns the element to link to the file (NULL: @error). */
GstElement *
build_annexb (GstBin * bin, ProxySession * ps, GstElement * recv,
    GError ** error)
{
  const gchar *ts_caps, *parser = video_parser_for (ps->video_codec, TRUE,
      &ts_caps);
  GstElement *parse = add_el (bin, parser, NULL);
  GstElement *filter = add_el (bin, "capsfilter", NULL);
  GstCaps *c;

  if (!parse || !filter || !ts_caps) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
        "no byte stream of %s video", ps->video_codec);
    return NULL;
  }
  g_object_set (parse, "config-interval", -1, NULL);
  c = gst_caps_from_string (ts_caps);
  g_object_set (filter, "caps", c, NULL);
  gst_caps_unref (c);
  if (!gst_element_link_pads (recv, "src", parse, "sink")
      || !gst_element_link (parse, filter)) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "%s video cannot be made a byte stream", ps->video_codec);
    return NULL;
  }
  return filter;
}

/* ------------------------------------------------------------ start-up
 *
 * Where a session's start-up time goes (docs/system.md, "Start-up"): when
 * each stage passed its first buffer, in ms after the session was asked
 * for (created_us), in its report's "startup" member. */

typedef struct
{
  const gchar *name;
  gint64 us;                    /* monotonic; 0: not yet */
} StartupMark;

static const gchar *startup_stages[] = {
  "essential", "enhanced", "jitterbuffer", "mux", "mux_1s", "output", NULL
};

/* reference-counted (g_rc_box): the session's bin holds one, and each
 * pad probe one, as the muxer's pads outlive a receive bin a seek
 * replaces */
typedef struct
{
  StartupMark marks[G_N_ELEMENTS (startup_stages)];
  GstClockTime first_pts;       /* the mux's first output */
} StartupTimes;

typedef struct
{
  StartupTimes *times;
  guint stage;
} StartupProbe;

static void
startup_probe_free (gpointer data)
{
  StartupProbe *p = data;

  g_rc_box_release (p->times);
  g_free (p);
}

/* mux_1s: when the muxer has given out the video's first second (what
 * ffmpeg's probe wants before it decodes: ~20 frames) */
static GstPadProbeReturn
startup_second_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  StartupTimes *t = ((StartupProbe *) data)->times;
  GstBuffer *b = (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) ?
      gst_buffer_list_get (GST_PAD_PROBE_INFO_BUFFER_LIST (info), 0) :
      GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime ts = b ? GST_BUFFER_PTS (b) : GST_CLOCK_TIME_NONE;
  gboolean done = FALSE;

  if (!GST_CLOCK_TIME_IS_VALID (ts))
    return GST_PAD_PROBE_OK;
  G_LOCK (counters);
  if (!GST_CLOCK_TIME_IS_VALID (t->first_pts))
    t->first_pts = ts;
  else if (ts >= t->first_pts + GST_SECOND) {
    t->marks[4].us = g_get_monotonic_time ();
    done = TRUE;
  }
  G_UNLOCK (counters);
  return done ? GST_PAD_PROBE_REMOVE : GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
startup_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  StartupProbe *p = data;
  StartupMark *m = &p->times->marks[p->stage];

  G_LOCK (counters);
  if (!m->us)
    m->us = g_get_monotonic_time ();
  G_UNLOCK (counters);
  return GST_PAD_PROBE_REMOVE;
}

/* Marks stage @stage of @ps when @e's pad @pad_name (NULL: "src") passes
 * its first buffer. */
void
startup_mark_pad (ProxySession * ps, const gchar * stage, GstElement * e,
    const gchar * pad_name)
{
  StartupTimes *t;
  StartupProbe *p;
  GstPad *pad;
  guint i;

  if (!ps->bin || !e)
    return;
  t = g_object_get_data (G_OBJECT (ps->bin), "twoflow-startup");
  if (!t) {
    t = g_rc_box_new0 (StartupTimes);
    for (i = 0; startup_stages[i]; i++)
      t->marks[i].name = startup_stages[i];
    t->first_pts = GST_CLOCK_TIME_NONE;
    g_object_set_data_full (G_OBJECT (ps->bin), "twoflow-startup", t,
        g_rc_box_release);
  }
  for (i = 0; startup_stages[i] && !g_str_equal (startup_stages[i], stage);
      i++);
  pad = gst_element_get_static_pad (e, pad_name ? pad_name : "src");
  if (!startup_stages[i] || !pad) {
    g_clear_object (&pad);
    return;
  }
  p = g_new0 (StartupProbe, 1);
  p->times = g_rc_box_acquire (t);
  p->stage = i;
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_BUFFER_LIST, g_str_equal (stage, "mux_1s") ?
      startup_second_probe : startup_probe, p, startup_probe_free);
  gst_object_unref (pad);
}

/* Marks the output stage of @ps now (the first byte a viewer was sent, as
 * the HTTP side sees it). */
void
startup_mark_now (ProxySession * ps, const gchar * stage)
{
  StartupTimes *t = ps->bin ? g_object_get_data (G_OBJECT (ps->bin),
      "twoflow-startup") : NULL;
  guint i;

  for (i = 0; t && startup_stages[i]; i++)
    if (g_str_equal (startup_stages[i], stage)) {
      G_LOCK (counters);
      if (!t->marks[i].us)
        t->marks[i].us = g_get_monotonic_time ();
      G_UNLOCK (counters);
    }
}

static void
startup_report (ProxySession * ps, JsonObject * report)
{
  StartupTimes *t = ps->bin ? g_object_get_data (G_OBJECT (ps->bin),
      "twoflow-startup") : NULL;
  JsonObject *o;
  guint i;

#define MS(us) ((us) ? ((us) - ps->created_us) / 1000 : -1)
  if (!t)
    return;
  o = json_object_new ();
  G_LOCK (counters);
  json_object_set_int_member (o, "play_answered", MS (ps->started_us));
  for (i = 0; startup_stages[i]; i++) {
    if (i == 3) {
      json_object_set_int_member (o, "first_frame", MS (ps->first_frame_us));
      json_object_set_int_member (o, "second_frame",
          MS (ps->second_frame_us));
    }
    json_object_set_int_member (o, t->marks[i].name, MS (t->marks[i].us));
  }
  G_UNLOCK (counters);
#undef MS
  json_object_set_object_member (report, "startup", o);
}

/* recv's video (and audio) through parsers into a @container muxer, which
 * is returned (its src pad unlinked). For MPEG-TS the H.264 video is a byte
 * stream with SPS/PPS before every IDR frame, so a viewer can start at any
 * key frame. */
GstElement *
build_mux (GstBin * bin, ProxySession * ps, GstElement * recv,
    const gchar * container, GError ** error)
{
  gboolean mpeg;
  gboolean hls_transcoded;
  GstElement *mux, *vq, *vparse, *vcaps = NULL;
  GstPad *pad;

  gboolean hls = g_str_equal (container, "hls");
  /* HLS: MPEG-TS segments (twoflow-hls.c cuts mpegtsmux's output) */
  const gchar *mux_factory = g_str_equal (container, "mp4") ? "mp4mux" :
      g_str_equal (container, "mkv") ? "matroskamux" : "mpegtsmux";
  const gchar *ts_caps, *parser = video_parser_for (ps->video_codec,
      g_str_equal (mux_factory, "mpegtsmux"), &ts_caps);

  /* MPEG-1/2, and what the server names no codec of (as before) */
  mpeg = g_str_equal (parser, "mpegvideoparse");

  if (g_str_equal (ps->video_codec, "av1")
      && g_str_equal (mux_factory, "mpegtsmux")) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "AV1 video cannot go into %s: %s", hls ? "HLS (MPEG-TS segments)" :
        "MPEG-TS", AV1_NO_TS);
    return NULL;
  }
  mux = add_el (bin, mux_factory, "mux");
  vq = add_el (bin, "queue", NULL);
  vparse = add_el (bin, parser, NULL);
  if (!mux || !vq || !vparse)
    goto missing;
  hls_transcoded = (hls || g_str_equal (container, "mp4")) && mpeg;
  if (hls_transcoded) {
    /* browsers decode no MPEG-1/2 video: the HLS copy (made once per
     * video and cached with its segments) is H.264; mp4mux takes no
     * MPEG-1/2 video */
    vcaps = hls_h264_encoder (bin, vparse, hls ? "byte-stream" : "avc");
    if (!vcaps)
      goto missing;
    g_print ("%s: %s video transcoded to H.264 (x264enc)\n",
        hls ? "HLS (for browsers)" : "MP4 (mp4mux takes no MPEG-1/2 video)",
        ps->video_codec);
  } else if (!mpeg) {
    if (!g_str_equal (parser, "av1parse"))
      g_object_set (vparse, "config-interval", -1, NULL);
    if (ts_caps) {
      GstCaps *c = gst_caps_from_string (ts_caps);
      vcaps = add_el (bin, "capsfilter", NULL);
      g_object_set (vcaps, "caps", c, NULL);
      gst_caps_unref (c);
    }
  }
  g_object_set (vq, "max-size-buffers", 0, "max-size-time", (guint64) 0,
      "max-size-bytes", 0, NULL);
  if (!gst_element_link_pads (recv, "src", vq, "sink")
      || !gst_element_link (vq, vparse)
      || (vcaps && !hls_transcoded && !gst_element_link (vparse, vcaps))
      || !gst_element_link_pads (vcaps ? vcaps : vparse, "src", mux, NULL)) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "%s video cannot go into %s", ps->video_codec, container);
    return NULL;
  }
  if (g_str_equal (mux_factory, "mp4mux")) {
    Mp4Durations *m = g_new0 (Mp4Durations, 1);
    GstPad *vsrc = gst_element_get_static_pad (vcaps ? vcaps : vparse, "src");

    m->first_pts = GST_CLOCK_TIME_NONE;
    gst_pad_add_probe (vsrc, GST_PAD_PROBE_TYPE_BUFFER, mp4_duration_probe,
        m, g_free);
    gst_object_unref (vsrc);
  }
  if (ps->audio_out) {
    AudioLink *al = g_new0 (AudioLink, 1);
    GstElement *aparse, *alast;
    GError *terr = NULL;

    al->aqueue = add_el (bin, "queue", NULL);
    aparse = add_el (bin, audio_parser_for (ps->audio_codec), NULL);
    if (!al->aqueue || !aparse) {
      g_free (al);
      goto missing;
    }
    g_object_set (al->aqueue, "max-size-buffers", 0, "max-size-time",
        (guint64) 0, "max-size-bytes", 0, NULL);
    gst_element_link (al->aqueue, aparse);
    alast = audio_transcode (bin, aparse, ps->audio_codec, mux_factory,
        container, &terr);
    if (terr) {
      g_free (al);
      g_propagate_error (error, terr);
      return NULL;
    }
    if (alast == NULL) {
      alast = aparse;
      g_print ("audio: %s carried as is into %s\n", ps->audio_codec,
          container);
    }
    pad = gst_element_get_static_pad (alast, "src");
    if (!gst_element_link_pads (alast, "src", mux, NULL)) {
      gst_object_unref (pad);
      g_free (al);
      g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
          "%s audio cannot go into %s", ps->audio_codec, container);
      return NULL;
    }
    /* audio before the first picture: the PCR on the audio's PID, or
     * GStreamer's tsdemux (rtspsrc) has no clock for it and drops it */
    if (g_str_equal (mux_factory, "mpegtsmux")
        && twoflow_json_get_double (ps->info, "audio_lead", 0) > 0) {
      GstPad *mp = gst_pad_get_peer (pad);
      GstStructure *map = gst_structure_new ("prog-map", "PCR_1",
          G_TYPE_STRING, GST_PAD_NAME (mp), NULL);
      g_object_set (mux, "prog-map", map, NULL);
      gst_structure_free (map);
      gst_object_unref (mp);
    }
    gst_object_unref (pad);
    g_object_set_data_full (G_OBJECT (bin), "twoflow-audio-link", al,
        g_free);
    connect_audio_link (recv, al);
  }
  ps->out_mux = mux;
  startup_mark_pad (ps, "essential", ps->ess_src, NULL);
  startup_mark_pad (ps, "enhanced", ps->enh_src, NULL);
  startup_mark_pad (ps, "jitterbuffer", ps->jitterbuffer, NULL);
  startup_mark_pad (ps, "mux", mux, NULL);
  startup_mark_pad (ps, "mux_1s", mux, NULL);
  return mux;

missing:
  g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
      "missing elements for the %s output", container);
  return NULL;
}

/* The plugins a session's pipeline loads on first use, loaded once at the
 * proxy's start in a thread of its own: gst-libav (avenc_aac for audio the
 * HLS/MP4 muxers cannot carry, avdec_mpeg2video for MPEG-2 to H.264) took
 * 0.32 s to load at load 2.4 in the first session that needed it, between
 * its admission and its PLAY, so the page's first frame of an AC-3 or
 * MPEG-2 file came that much later (docs/system.md, "Start-up"). A
 * session that comes first waits on GStreamer's plugin lock as before. */
static gpointer
preload_thread (gpointer data)
{
  static const gchar *const features[] = {
    "twoflowmerge", "ctcpsrc", "erapsrc", "rudpsrc", "rtpjitterbuffer",
    "rtpgstdepay", "mpegtsmux", "mp4mux", "matroskamux", "multifilesink",
    "h264parse", "mpegvideoparse", "aacparse", "mpegaudioparse",
    "audioconvert", "audioresample", "avenc_aac", "avdec_mpeg2video",
    "x264enc", NULL
  };
  GstRegistry *reg = gst_registry_get ();
  gint64 t0 = g_get_monotonic_time ();
  guint i;

  for (i = 0; features[i]; i++) {
    GstPluginFeature *f = gst_registry_lookup_feature (reg, features[i]);
    GstPluginFeature *loaded = f ? gst_plugin_feature_load (f) : NULL;

    if (loaded)
      gst_object_unref (loaded);
    if (f)
      gst_object_unref (f);
  }
  GST_INFO ("plugins preloaded in %.3f s",
      (g_get_monotonic_time () - t0) / 1e6);
  return NULL;
}

void
twoflow_proxy_output_preload (void)
{
  g_thread_unref (g_thread_new ("twoflow-preload", preload_thread, NULL));
}

void
twoflow_proxy_output_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_output_debug,
      "twoflow-proxy-output", 0, "twoflow-proxy: a session's output");
  {
    static const ProxySessionHooks hooks = {.report = startup_report };

    proxy_session_add_hooks (&hooks);
  }
}
