/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — media input: filesrc ! parsebin, the streams selected,
 * the start
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

#include <stdlib.h>
#include <gst/gst.h>
#include <gst/tag/tag.h>
#include "twoflow-server-source.h"
#include "twoflow-server-dts.h"
#include "twoflow-server-parse.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_source_debug);
#define GST_CAT_DEFAULT twoflow_server_source_debug

/* start position (a key frame's PTS, found in the scan's key frame
 * index): parsed pictures are dropped until the first key frame at or
 * after it, identically in both pipelines, so the split numbers the same
 * frames in both; audio before the start is dropped. @keyframes: the
 * scan's index (the video pad's key frames' PTS), filled when set. */
typedef struct
{
  gboolean started;
  GstClockTime start;
  GstClockTime offset;          /* the start's running time: taken off the
                                 * streams' running times (pad offset), so
                                 * the enhanced flow's clock sync does not
                                 * wait out the part dropped */
  GArray *keyframes;            /* KeyFrame */
  GArray *audio_pts;            /* GstClockTime: the audio buffers' PTS */
  guint64 video_buffers;
  DtsState *dts;                /* the video's: its timestamps' shift */
} StartState;

static GstPadProbeReturn
start_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  StartState *ss = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime t;

  if (ss->started)
    return GST_PAD_PROBE_OK;
  t = GST_BUFFER_PTS_IS_VALID (buf) ? GST_BUFFER_PTS (buf) :
      GST_BUFFER_DTS (buf);
  if (!GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT)
      && GST_CLOCK_TIME_IS_VALID (t) && t >= ss->start) {
    ss->started = TRUE;
    return GST_PAD_PROBE_OK;
  }
  return GST_PAD_PROBE_DROP;
}

static GstPadProbeReturn
audio_start_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  StartState *ss = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);

  /* the start is a video PTS, moved with the video's DTS (dts_probe) */
  if (GST_BUFFER_PTS_IS_VALID (buf) && GST_BUFFER_PTS (buf) +
      (ss->dts ? dts_state_shift (ss->dts) : 0) < ss->start)
    return GST_PAD_PROBE_DROP;
  return GST_PAD_PROBE_OK;
}

/* the scan: the key frames' PTS, where a session can start (the same
 * test as start_probe's) */
static GstPadProbeReturn
keyframe_index_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  StartState *ss = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime t = GST_BUFFER_PTS_IS_VALID (buf) ? GST_BUFFER_PTS (buf) :
      GST_BUFFER_DTS (buf);

  if (!GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT)
      && GST_CLOCK_TIME_IS_VALID (t)) {
    KeyFrame k = { t, ss->video_buffers, 0 };
    GstEvent *ev = gst_pad_get_sticky_event (pad, GST_EVENT_SEGMENT, 0);
    GstClockTime d = GST_BUFFER_DTS_IS_VALID (buf) ? GST_BUFFER_DTS (buf) : t;

    if (ev) {
      const GstSegment *seg;
      gst_event_parse_segment (ev, &seg);
      /* the pad's sticky segment is the demuxer's, before dts_probe
       * moved it and the timestamps */
      k.rt = gst_segment_to_running_time (seg, GST_FORMAT_TIME, d);
      if (!GST_CLOCK_TIME_IS_VALID (k.rt))
        k.rt = 0;
      k.rt -= MIN (k.rt, dts_state_shift (ss->dts));
      gst_event_unref (ev);
    }
    g_array_append_val (ss->keyframes, k);
  }
  ss->video_buffers++;
  return GST_PAD_PROBE_OK;
}

/* the scan: the audio's PTS (what a start drops of it) */
static GstPadProbeReturn
audio_index_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  StartState *ss = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime t = GST_BUFFER_PTS (buf);

  g_array_append_val (ss->audio_pts, t);
  return GST_PAD_PROBE_OK;
}

/* Audio wholly before its segment's start is dropped: an MP4 edit list
 * skips the encoder's priming (an AAC frame of 1024 samples) that way, and
 * the split, which moves the audio into the video's positions, gave that
 * frame the next one's time (a zero-length sample in an MP4, 21 ms more
 * audio than the source plays). */
static GstPadProbeReturn
audio_clip_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstEvent *ev;
  gboolean before = FALSE;

  if (!GST_BUFFER_PTS_IS_VALID (buf) || !GST_BUFFER_DURATION_IS_VALID (buf))
    return GST_PAD_PROBE_OK;
  if ((ev = gst_pad_get_sticky_event (pad, GST_EVENT_SEGMENT, 0))) {
    const GstSegment *seg;
    gst_event_parse_segment (ev, &seg);
    before = seg->format == GST_FORMAT_TIME && seg->rate > 0
        && GST_BUFFER_PTS (buf) + GST_BUFFER_DURATION (buf) <= seg->start;
    gst_event_unref (ev);
  }
  return before ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

/* the scan: the running time of a stream's first buffer, in the
 * demuxer's segment (before the probes below move timestamps) */
static GstPadProbeReturn
first_rt_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstClockTime *rt = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstEvent *ev = gst_pad_get_sticky_event (pad, GST_EVENT_SEGMENT, 0);
  GstClockTime t = GST_BUFFER_PTS_IS_VALID (buf) ? GST_BUFFER_PTS (buf) :
      GST_BUFFER_DTS (buf);

  if (ev && GST_CLOCK_TIME_IS_VALID (t)) {
    const GstSegment *seg;
    gst_event_parse_segment (ev, &seg);
    *rt = gst_segment_to_running_time (seg, GST_FORMAT_TIME, t);
  }
  if (ev)
    gst_event_unref (ev);
  return GST_CLOCK_TIME_IS_VALID (*rt) ? GST_PAD_PROBE_REMOVE :
      GST_PAD_PROBE_OK;
}

/* A demuxer's edit list can start the video later than the audio: qtdemux
 * sends an empty segment for the gap, then one whose base (running time)
 * is past its start (position). twoflowsplit moves the audio into the
 * video's positions, where running times before that base have no place:
 * the audio before the first picture was lost. Such a segment becomes a
 * plain one (base 0, start 0) with the video's timestamps moved by
 * base - start, so running times, and the A/V offset, stay the source's.
 * @data: the shift in ns, per pad. */
static GstPadProbeReturn
video_timebase_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstClockTime *shift = data;

  if (info->type & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
    const GstSegment *seg;
    GstSegment plain;
    GstEvent *nev;

    if (GST_EVENT_TYPE (ev) != GST_EVENT_SEGMENT)
      return GST_PAD_PROBE_OK;
    gst_event_parse_segment (ev, &seg);
    *shift = 0;
    if (seg->format != GST_FORMAT_TIME || seg->rate != 1.0
        || seg->base <= seg->start)
      return GST_PAD_PROBE_OK;
    *shift = seg->base - seg->start;
    gst_segment_init (&plain, GST_FORMAT_TIME);
    if (GST_CLOCK_TIME_IS_VALID (seg->stop))
      plain.stop = seg->stop + *shift;
    plain.duration = seg->duration;
    nev = gst_event_new_segment (&plain);
    gst_event_set_seqnum (nev, gst_event_get_seqnum (ev));
    gst_event_unref (ev);
    GST_PAD_PROBE_INFO_DATA (info) = nev;
    GST_INFO ("video starts %" GST_TIME_FORMAT " into the file: timestamps "
        "moved by it", GST_TIME_ARGS (*shift));
    return GST_PAD_PROBE_OK;
  }
  if (*shift) {
    GstBuffer *buf = gst_buffer_make_writable (GST_PAD_PROBE_INFO_BUFFER
        (info));

    if (GST_BUFFER_PTS_IS_VALID (buf))
      GST_BUFFER_PTS (buf) += *shift;
    if (GST_BUFFER_DTS_IS_VALID (buf))
      GST_BUFFER_DTS (buf) += *shift;
    GST_PAD_PROBE_INFO_DATA (info) = buf;
  }
  return GST_PAD_PROBE_OK;
}

/* Which of parsebin's streams go where. A track selection is NULL (the
 * first of its kind), "none" (audio: no audio), an index among the streams
 * of its kind, or a language code (the stream's language tag). */
typedef struct
{
  GMutex lock;
  gchar *video_track, *audio_track;
  GstElement *video_next;       /* the video goes to its "sink" pad */
  GstElement *split;            /* the audio to its "audio" pad; NULL: none */
  StartState ss;
  guint n_video, n_audio;
  gboolean video_linked, audio_linked;
  gboolean checked;
  GString *seen;                /* the streams' media types */
  /* audio chosen by language: the streams' tags come after parsebin adds
   * their pads, so each audio pad waits (blocked) for its tags or first
   * buffer; the queue to split.audio is linked from the first audio pad
   * on, so the split waits for the audio */
  GstElement *audio_queue;
  guint audio_pending;
  VideoIndex *index;            /* the scan's; NULL in sessions */
} MediaLink;

static void parsebin_no_more_pads (GstElement * parsebin, gpointer user_data);

/* parsebin exposes all pads of the input before data flows: at the first
 * buffer of any, the selection is complete (parsebin 1.22 emits no
 * no-more-pads of its own). */
static GstPadProbeReturn
first_buffer_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  MediaLink *ml = user_data;
  GstElement *pb = GST_ELEMENT (gst_pad_get_parent (pad));
  gboolean check;

  g_mutex_lock (&ml->lock);
  check = !ml->checked;
  ml->checked = TRUE;
  g_mutex_unlock (&ml->lock);
  if (check && pb)
    parsebin_no_more_pads (pb, ml);
  if (pb)
    gst_object_unref (pb);
  return GST_PAD_PROBE_REMOVE;
}

static void
media_link_free (MediaLink * ml)
{
  g_mutex_clear (&ml->lock);
  dts_state_free (ml->ss.dts);
  g_free (ml->video_track);
  g_free (ml->audio_track);
  g_string_free (ml->seen, TRUE);
  g_free (ml);
}

static gboolean
is_language (const gchar * sel)
{
  return sel && *sel && !g_ascii_isdigit (sel[0]) && g_strcmp0 (sel, "none");
}

/* ISO 639-1 or -2 codes ("fr", "fre", "fra") or names compare alike */
static gboolean
language_matches (const gchar * sel, const gchar * lang)
{
  const gchar *a, *b;

  if (!sel || !lang)
    return FALSE;
  a = gst_tag_get_language_code_iso_639_1 (sel);
  b = gst_tag_get_language_code_iso_639_1 (lang);
  return g_ascii_strcasecmp (a ? a : sel, b ? b : lang) == 0;
}

static gboolean
track_matches (const gchar * sel, guint index, const gchar * lang)
{
  if (sel == NULL || *sel == '\0')
    return index == 0;
  if (g_ascii_isdigit (sel[0]))
    return index == (guint) atoi (sel);
  return language_matches (sel, lang);
}

static gchar *
pad_language (GstPad * pad)
{
  GstStream *stream = gst_pad_get_stream (pad);
  GstTagList *tags = stream ? gst_stream_get_tags (stream) : NULL;
  gchar *lang = NULL;
  GstEvent *ev;

  if (tags)
    gst_tag_list_get_string (tags, GST_TAG_LANGUAGE_CODE, &lang);
  if (!lang && (ev = gst_pad_get_sticky_event (pad, GST_EVENT_TAG, 0))) {
    GstTagList *t;
    gst_event_parse_tag (ev, &t);
    gst_tag_list_get_string (t, GST_TAG_LANGUAGE_CODE, &lang);
    gst_event_unref (ev);
  }
  if (tags)
    gst_tag_list_unref (tags);
  if (stream)
    gst_object_unref (stream);
  return lang;
}

static gboolean
video_supported (const GstStructure * st)
{
  return gst_structure_has_name (st, "video/mpeg")
      || gst_structure_has_name (st, "video/x-h264")
      || gst_structure_has_name (st, "video/x-h265")
      || gst_structure_has_name (st, "video/x-av1");
}

/* A queue before each split pad (the split interleaves audio and video by
 * waiting for the other pad; a demuxer pushes both from one thread). */
static GstElement *
add_to_bin (GstElement * parsebin, const gchar * factory)
{
  GstElement *bin = GST_ELEMENT (gst_element_get_parent (parsebin));
  GstElement *e = gst_element_factory_make (factory, NULL);

  if (g_str_equal (factory, "queue"))
    g_object_set (e, "max-size-buffers", 0, "max-size-time", (guint64) 0,
        "max-size-bytes", 64 * 1024 * 1024, NULL);
  else if (g_str_equal (factory, "fakesink"))
    g_object_set (e, "sync", FALSE, "async", FALSE, NULL);
  gst_bin_add (GST_BIN (bin), e);
  gst_element_sync_state_with_parent (e);
  gst_object_unref (bin);
  return e;
}

static void
link_to (GstElement * e, GstPad * pad)
{
  GstPad *sink = gst_element_get_static_pad (e, "sink");

  if (gst_pad_link (pad, sink) != GST_PAD_LINK_OK)
    GST_WARNING ("cannot link %s:%s", GST_DEBUG_PAD_NAME (pad));
  gst_object_unref (sink);
}

/* An audio pad waiting for its language: a matching tag links it to the
 * audio queue; its first buffer without one sends it to a fakesink. When
 * the last audio pad is decided without a match the queue gets EOS (the
 * split stops waiting for audio) and the session an error. */
static GstPadProbeReturn
audio_language_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  MediaLink *ml = user_data;
  GstElement *pb;
  gboolean take = FALSE, decided = FALSE, none_left = FALSE;
  gchar *lang = NULL;

  if (GST_PAD_PROBE_INFO_TYPE (info) & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
    GstTagList *tags;

    if (GST_EVENT_TYPE (ev) != GST_EVENT_TAG)
      return GST_PAD_PROBE_PASS;
    gst_event_parse_tag (ev, &tags);
    if (!gst_tag_list_get_string (tags, GST_TAG_LANGUAGE_CODE, &lang))
      return GST_PAD_PROBE_PASS;
  }
  g_mutex_lock (&ml->lock);
  if (lang) {
    if (!ml->audio_linked && language_matches (ml->audio_track, lang))
      take = decided = TRUE;
  } else {
    decided = TRUE;             /* data, and no tag matched */
  }
  if (decided) {
    ml->audio_linked |= take;
    ml->audio_pending--;
    none_left = ml->audio_pending == 0 && !ml->audio_linked;
  }
  g_mutex_unlock (&ml->lock);
  g_free (lang);
  if (!decided)
    return GST_PAD_PROBE_PASS;

  pb = GST_ELEMENT (gst_pad_get_parent (pad));
  if (take) {
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, audio_clip_probe,
        NULL, NULL);
    if (ml->index)
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, first_rt_probe,
          &ml->index->first_audio_rt, NULL);
    link_to (ml->audio_queue, pad);
    if (ml->ss.start > 0) {
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, audio_start_probe,
          &ml->ss, NULL);
      gst_pad_set_offset (pad, -(gint64) ml->ss.offset);
    }
    if (ml->ss.audio_pts)
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, audio_index_probe,
          &ml->ss, NULL);
  } else {
    link_to (add_to_bin (pb, "fakesink"), pad);
  }
  GST_INFO ("audio stream %s:%s: %s", GST_DEBUG_PAD_NAME (pad),
      take ? "the audio (language)" : "unused");
  if (none_left) {
    GstPad *qsink = gst_element_get_static_pad (ml->audio_queue, "sink");
    GstSegment seg;
    GError *err = g_error_new (GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE,
        "no audio track '%s'; the file has: %s", ml->audio_track,
        ml->seen->str);

    gst_pad_send_event (qsink, gst_event_new_stream_start ("no-audio"));
    gst_segment_init (&seg, GST_FORMAT_TIME);
    gst_pad_send_event (qsink, gst_event_new_segment (&seg));
    gst_pad_send_event (qsink, gst_event_new_eos ());
    gst_object_unref (qsink);
    gst_element_post_message (pb, gst_message_new_error (GST_OBJECT (pb),
            err, NULL));
    g_error_free (err);
  }
  gst_object_unref (pb);
  return GST_PAD_PROBE_REMOVE;
}

static void
parsebin_pad_added (GstElement * parsebin, GstPad * pad, gpointer user_data)
{
  MediaLink *ml = user_data;
  GstCaps *caps = gst_pad_get_current_caps (pad);
  const GstStructure *st;
  const gchar *name;
  gchar *lang = pad_language (pad);
  gboolean video = FALSE, audio = FALSE, want = FALSE;
  GstPad *target = NULL, *qsink, *qsrc;
  GstElement *e;

  if (!caps)
    caps = gst_pad_query_caps (pad, NULL);
  st = gst_caps_get_structure (caps, 0);
  name = gst_structure_get_name (st);
  video = g_str_has_prefix (name, "video/");
  audio = g_str_has_prefix (name, "audio/");
  g_mutex_lock (&ml->lock);
  g_string_append_printf (ml->seen, "%s%s%s%s", ml->seen->len ? ", " : "",
      name, lang ? " " : "", lang ? lang : "");
  if (video && video_supported (st)) {
    want = !ml->video_linked && track_matches (ml->video_track, ml->n_video++,
        lang);
    ml->video_linked |= want;
  } else if (audio && ml->split && is_language (ml->audio_track)) {
    gboolean first = ml->audio_queue == NULL;

    ml->n_audio++;
    ml->audio_pending++;
    if (first)
      ml->audio_queue = add_to_bin (parsebin, "queue");
    g_mutex_unlock (&ml->lock);
    if (first) {
      GstPad *qsrc = gst_element_get_static_pad (ml->audio_queue, "src");
      GstPad *target = gst_element_request_pad_simple (ml->split, "audio");
      if (!target || gst_pad_link (qsrc, target) != GST_PAD_LINK_OK)
        GST_WARNING ("cannot link the audio queue");
      gst_object_unref (qsrc);
      if (target)
        gst_object_unref (target);
    }
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BLOCK |
        GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
        audio_language_probe, ml, NULL);
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, first_buffer_probe, ml,
        NULL);
    GST_INFO ("parsebin stream %s: waiting for its language", name);
    g_free (lang);
    gst_caps_unref (caps);
    return;
  } else if (audio) {
    want = ml->split && !ml->audio_linked
        && g_strcmp0 (ml->audio_track, "none") != 0
        && track_matches (ml->audio_track, ml->n_audio++, lang);
    ml->audio_linked |= want;
  }
  g_mutex_unlock (&ml->lock);

  if (want) {
    e = add_to_bin (parsebin, "queue");
    target = video ? gst_element_get_static_pad (ml->video_next, "sink") :
        gst_element_request_pad_simple (ml->split, "audio");
    qsrc = gst_element_get_static_pad (video ? video_parse_chain (e, st) : e,
        "src");
    if (!target || gst_pad_link (qsrc, target) != GST_PAD_LINK_OK)
      GST_WARNING ("cannot link %s", name);
    gst_object_unref (qsrc);
    if (target)
      gst_object_unref (target);
    if (!video)
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, audio_clip_probe,
          NULL, NULL);
    if (ml->index)
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, first_rt_probe,
          video ? &ml->index->first_video_rt : &ml->index->first_audio_rt,
          NULL);
    if (video) {
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
          GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, video_timebase_probe,
          g_new0 (GstClockTime, 1), g_free);
      /* before the start and the index: both see the DTS and shift the
       * sessions give the frames */
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
          GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, dts_probe, ml->ss.dts, NULL);
    }
    if (ml->ss.start > 0) {
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER,
          video ? start_probe : audio_start_probe, &ml->ss, NULL);
      gst_pad_set_offset (pad, -(gint64) ml->ss.offset);
    }
    if (ml->ss.keyframes)
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER,
          video ? keyframe_index_probe : audio_index_probe, &ml->ss, NULL);
  } else {
    /* streams not carried: consumed, so the demuxer runs on */
    e = add_to_bin (parsebin, "fakesink");
  }
  qsink = gst_element_get_static_pad (e, "sink");
  if (gst_pad_link (pad, qsink) != GST_PAD_LINK_OK)
    GST_WARNING ("cannot link %s", name);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, first_buffer_probe, ml,
      NULL);
  gst_object_unref (qsink);
  GST_INFO ("parsebin stream %s%s%s: %s", name, lang ? " " : "",
      lang ? lang : "", want ? (video ? "the video" : "the audio") : "unused");
  g_free (lang);
  gst_caps_unref (caps);
}

/* All streams are known: a file without a video the split takes is an
 * error with its reason (not an empty stream). */
static void
parsebin_no_more_pads (GstElement * parsebin, gpointer user_data)
{
  MediaLink *ml = user_data;
  GError *err = NULL;

  GST_INFO ("parsebin: all pads (%s)", ml->seen->str);
  g_mutex_lock (&ml->lock);
  ml->checked = TRUE;
  if (!ml->video_linked)
    err = g_error_new (GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE,
        ml->video_track ? "no video track '%s' (MPEG-1/2, H.264, H.265 or AV1);"
        " the file has: %s" : "no video stream (MPEG-1/2, H.264, H.265 or AV1)"
        "%s; the file has: %s",
        ml->video_track ? ml->video_track : "",
        ml->seen->len ? ml->seen->str : "no streams");
  else if (ml->split && ml->audio_track && !ml->audio_linked
      && g_strcmp0 (ml->audio_track, "none") != 0
      && !is_language (ml->audio_track))
    err = g_error_new (GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE,
        "no audio track '%s'; the file has: %s", ml->audio_track,
        ml->seen->str);
  g_mutex_unlock (&ml->lock);
  if (err) {
    gst_element_post_message (parsebin, gst_message_new_error (GST_OBJECT
            (parsebin), err, NULL));
    g_error_free (err);
  }
}

/* filesrc ! parsebin, the selected video to @video_next, the selected audio
 * (if @split) to split.audio; from the key frame at @start (PTS, 0: the
 * beginning); @index (the scan): filled with the key frames and the
 * audio's PTS. */
GstElement *
make_media_source (GstElement * pipe, const gchar * path,
    const gchar * video_track, const gchar * audio_track, GstClockTime start,
    GstClockTime start_rt, VideoIndex * index, GstElement * video_next,
    GstElement * split)
{
  GstElement *fsrc = gst_element_factory_make ("filesrc", NULL);
  GstElement *pb = gst_element_factory_make ("parsebin", NULL);
  MediaLink *ml = g_new0 (MediaLink, 1);

  g_mutex_init (&ml->lock);
  ml->video_track = g_strdup (video_track);
  ml->audio_track = g_strdup (audio_track);
  ml->video_next = video_next;
  ml->split = split;
  ml->ss.start = start;
  ml->ss.offset = start_rt;
  ml->ss.dts = dts_state_new ();
  if (index) {
    ml->index = index;
    index->first_video_rt = index->first_audio_rt = GST_CLOCK_TIME_NONE;
    ml->ss.keyframes = index->keyframes;
    ml->ss.audio_pts = index->audio_pts;
  }
  ml->seen = g_string_new (NULL);
  g_object_set_data_full (G_OBJECT (pb), "media-link", ml,
      (GDestroyNotify) media_link_free);
  g_object_set (fsrc, "location", path, NULL);
  gst_bin_add_many (GST_BIN (pipe), fsrc, pb, NULL);
  gst_element_link (fsrc, pb);
  g_signal_connect (pb, "pad-added", G_CALLBACK (parsebin_pad_added), ml);
  g_signal_connect (pb, "no-more-pads", G_CALLBACK (parsebin_no_more_pads),
      ml);
  return fsrc;
}

/* A short name of an audio codec from its caps. */
gchar *
audio_codec_name (const GstCaps * caps)
{
  const GstStructure *st = gst_caps_get_structure (caps, 0);
  const gchar *name = gst_structure_get_name (st);
  gint v = 0, layer = 0;

  if (gst_structure_has_name (st, "audio/mpeg")) {
    gst_structure_get_int (st, "mpegversion", &v);
    gst_structure_get_int (st, "layer", &layer);
    if (v == 1)
      return g_strdup_printf ("mp%d", layer ? layer : 2);
    return g_strdup ("aac");
  }
  if (g_str_has_prefix (name, "audio/x-"))
    return g_strdup (name + 8);
  return g_strdup (name + 6);
}

/* The scan's stall check: the parsebin of @pipe's media source (NULL:
 * none) and whether it has seen a stream yet. */
GstElement *
media_source_find (GstElement * pipe)
{
  GstIterator *it = gst_bin_iterate_elements (GST_BIN (pipe));
  GValue item = G_VALUE_INIT;
  GstElement *pb = NULL;

  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *e = g_value_get_object (&item);
    if (g_object_get_data (G_OBJECT (e), "media-link"))
      pb = e;
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return pb;
}

gboolean
media_source_seen_streams (GstElement * parsebin)
{
  MediaLink *ml = g_object_get_data (G_OBJECT (parsebin), "media-link");
  gboolean streams;

  g_mutex_lock (&ml->lock);
  streams = ml->seen->len > 0;
  g_mutex_unlock (&ml->lock);
  return streams;
}

void
twoflow_server_source_init (void)
{
  twoflow_server_dts_init ();
  twoflow_server_parse_init ();
  GST_DEBUG_CATEGORY_INIT (twoflow_server_source_debug,
      "twoflow-server-source", 0, "twoflow-server: media input (parsebin)");
}
