/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/**
 * SECTION:element-twoflowsplit
 * @title: twoflowsplit
 *
 * Splits a parsed MPEG-1/MPEG-2 (after mpegvideoparse), H.264 (after
 * h264parse, alignment=au), H.265 (after h265parse, alignment=au) or AV1
 * (after av1parse, alignment=tu) video stream into two flows of twoflow
 * records (docs/frame-format.md): the `essential` flow (I frames, or I
 * and P frames with policy=ip) and the `enhanced` flow (everything else).
 * Picture classes are read from the bitstream with the codecparsers
 * library: for H.265 I is an IRAP picture (IDR, CRA, BLA) and P any other
 * picture a later one may reference, for AV1 I is a temporal unit of intra
 * frames (KEY_FRAME, INTRA_ONLY) and P one that refreshes a reference slot;
 * B is what nothing references. Each buffer travels unchanged, with the
 * parameter sets or sequence headers the parser gave it. Each flow starts
 * with a caps record so twoflowmerge can restore the original caps (and
 * the codec_data of avc, hvc1 and av1C streams).
 *
 * An audio track enters on the request pad `audio` (any parsed audio, as a
 * demuxer or parser gives it) and travels in the essential flow: an audio
 * caps record after the video caps record, then one audio record per
 * buffer, interleaved with the essential frames in timestamp order (audio
 * PTS against video DTS; ties: the frame first), its timestamps moved into
 * the video's time base (the video segment's position at the audio
 * buffer's running time). To interleave, each sink
 * pad's streaming thread waits until the other pad has a later buffer or
 * is at EOS, so **each sink pad must have a queue before it** when both
 * come from one demuxer (which pushes both from one thread); make the
 * queues large enough for the container's interleaving (a demuxer that
 * pushes a second of video before the audio of that second needs a video
 * queue holding more than a second). Segment numbers count from the
 * stream's first timestamp, the earlier of the first frame's and the first
 * audio buffer's. Without an audio pad (or with it unlinked) nothing waits.
 * A `GstTwoflowDroppedFrame` event (gst_twoflow_event_new_dropped(), sent
 * by ratetranscoder for each picture it drops) takes a frame number and
 * sends nothing, so the numbers stay those of the unaltered source.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=greyramp.m2v ! mpegvideoparse ! twoflowsplit name=s \
 *     s.essential ! queue ! filesink location=essential.twf \
 *     s.enhanced ! queue ! filesink location=enhanced.twf
 * ]| writes the two flows of an MPEG-2 file to two files in byte-stream form.
 * |[
 * gst-launch-1.0 filesrc location=movie.mp4 ! qtdemux name=d \
 *     d.video_0 ! queue max-size-time=0 max-size-buffers=0 ! h264parse ! s.sink \
 *     d.audio_0 ! queue max-size-time=0 max-size-buffers=0 ! aacparse ! s.audio \
 *     twoflowsplit name=s s.essential ! queue ! filesink location=essential.twf \
 *     s.enhanced ! queue ! filesink location=enhanced.twf
 * ]| the same with the movie's audio in the essential flow.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gsttwoflowsplit.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_split_debug);
#define GST_CAT_DEFAULT twoflow_split_debug

#define DEFAULT_POLICY            GST_TWOFLOW_POLICY_I
#define DEFAULT_SEGMENT_DURATION  (256 * GST_SECOND)

enum
{
  PROP_0,
  PROP_POLICY,
  PROP_SEGMENT_DURATION,
  PROP_STATS,
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/mpeg, mpegversion = (int) { 1, 2 }, "
        "systemstream = (boolean) false, parsed = (boolean) true; "
        "video/x-h264, alignment = (string) au, "
        "stream-format = (string) { byte-stream, avc }; "
        "video/x-h265, alignment = (string) au, "
        "stream-format = (string) { byte-stream, hvc1, hev1 }; "
        "video/x-av1, alignment = (string) tu, "
        "stream-format = (string) obu-stream"));

/* coded audio as a parser gives it (raw audio has no place in the flow) */
static GstStaticPadTemplate audio_template = GST_STATIC_PAD_TEMPLATE ("audio",
    GST_PAD_SINK,
    GST_PAD_REQUEST,
    GST_STATIC_CAPS ("audio/mpeg; audio/x-ac3; audio/x-eac3; audio/ac3; "
        "audio/x-opus; audio/x-vorbis; audio/x-flac; audio/x-dts; "
        "audio/x-alac; audio/x-true-hd; audio/x-private1-lpcm; "
        "audio/x-lpcm; audio/x-alaw; audio/x-mulaw"));

static GstStaticPadTemplate essential_template =
GST_STATIC_PAD_TEMPLATE ("essential",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_TWOFLOW_CAPS));

static GstStaticPadTemplate enhanced_template =
GST_STATIC_PAD_TEMPLATE ("enhanced",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_TWOFLOW_CAPS));

#define gst_twoflow_split_parent_class parent_class
G_DEFINE_TYPE (GstTwoflowSplit, gst_twoflow_split, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (twoflowsplit, "twoflowsplit", GST_RANK_NONE,
    GST_TYPE_TWOFLOW_SPLIT);

static void gst_twoflow_split_finalize (GObject * object);
static void gst_twoflow_split_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_twoflow_split_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstStateChangeReturn gst_twoflow_split_change_state (GstElement *
    element, GstStateChange transition);
static GstFlowReturn gst_twoflow_split_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buf);
static gboolean gst_twoflow_split_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
static GstPad *gst_twoflow_split_request_new_pad (GstElement * element,
    GstPadTemplate * templ, const gchar * name, const GstCaps * caps);
static void gst_twoflow_split_release_pad (GstElement * element, GstPad * pad);
static GstFlowReturn gst_twoflow_split_audio_chain (GstPad * pad,
    GstObject * parent, GstBuffer * buf);
static gboolean gst_twoflow_split_audio_event (GstPad * pad,
    GstObject * parent, GstEvent * event);

static void
gst_twoflow_split_class_init (GstTwoflowSplitClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->finalize = gst_twoflow_split_finalize;
  gobject_class->set_property = gst_twoflow_split_set_property;
  gobject_class->get_property = gst_twoflow_split_get_property;

  /**
   * GstTwoflowSplit:policy:
   *
   * Which picture types travel in the essential flow.
   */
  g_object_class_install_property (gobject_class, PROP_POLICY,
      g_param_spec_enum ("policy", "Policy",
          "Picture types of the essential flow (i: I frames; ip: I and P frames)",
          GST_TYPE_TWOFLOW_POLICY, DEFAULT_POLICY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstTwoflowSplit:segment-duration:
   *
   * Duration of one segment of the video: a frame's segment number is its
   * timestamp (from the stream's first) divided by this.
   */
  g_object_class_install_property (gobject_class, PROP_SEGMENT_DURATION,
      g_param_spec_uint64 ("segment-duration", "Segment duration",
          "Duration of a video segment in nanoseconds (sets each frame's segment number)",
          GST_MSECOND, G_MAXUINT64, DEFAULT_SEGMENT_DURATION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstTwoflowSplit:stats:
   *
   * `application/x-twoflowsplit-stats`:
   * * `frames-i`, `frames-p`, `frames-b` (guint64): frames seen per picture type
   * * `essential-frames`, `enhanced-frames` (guint64): frames sent per flow
   * * `frames-dropped` (guint64): pictures an element upstream left out
   *   (ratetranscoder's dropped-frame events): numbered, not sent
   * * `essential-bytes`, `enhanced-bytes` (guint64): payload bytes sent per flow
   * * `audio-records`, `audio-bytes` (guint64): audio buffers and their
   *   payload bytes sent in the essential flow
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Frames per picture type and frames/bytes per flow",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &audio_template);
  gst_element_class_add_static_pad_template (element_class,
      &essential_template);
  gst_element_class_add_static_pad_template (element_class, &enhanced_template);
  gst_element_class_set_static_metadata (element_class,
      "Two-flow video splitter", "Codec/Demuxer/Video",
      "Splits parsed MPEG video into an essential (I) and an enhanced (P/B) flow",
      "twoflow developers <dev@twoflow.invalid>");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, TWOFLOW_DOC_URI_BASE "frame-format.md");

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_twoflow_split_change_state);
  element_class->request_new_pad =
      GST_DEBUG_FUNCPTR (gst_twoflow_split_request_new_pad);
  element_class->release_pad = GST_DEBUG_FUNCPTR (gst_twoflow_split_release_pad);

  gst_type_mark_as_plugin_api (GST_TYPE_TWOFLOW_POLICY, 0);
  GST_DEBUG_CATEGORY_INIT (twoflow_split_debug, "twoflowsplit", 0,
      "two-flow splitter");
}

static GstPad *
make_src_pad (GstTwoflowSplit * self, GstStaticPadTemplate * templ)
{
  GstPad *pad = gst_pad_new_from_static_template (templ, templ->name_template);

  gst_pad_use_fixed_caps (pad);
  gst_element_add_pad (GST_ELEMENT (self), pad);
  gst_flow_combiner_add_pad (self->flow_combiner, pad);
  return pad;
}

static void
gst_twoflow_split_init (GstTwoflowSplit * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_twoflow_split_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_twoflow_split_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->flow_combiner = gst_flow_combiner_new ();
  self->essential_pad = make_src_pad (self, &essential_template);
  self->enhanced_pad = make_src_pad (self, &enhanced_template);

  self->policy = DEFAULT_POLICY;
  self->segment_duration = DEFAULT_SEGMENT_DURATION;
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  self->video_head = self->audio_head = GST_CLOCK_TIME_NONE;
}

static GstPad *
gst_twoflow_split_request_new_pad (GstElement * element,
    GstPadTemplate * templ, const gchar * name, const GstCaps * caps)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (element);
  GstPad *pad;

  GST_OBJECT_LOCK (self);
  if (self->audio_pad) {
    GST_OBJECT_UNLOCK (self);
    GST_WARNING_OBJECT (self, "only one audio pad");
    return NULL;
  }
  GST_OBJECT_UNLOCK (self);
  pad = gst_pad_new_from_template (templ, "audio");
  gst_pad_set_chain_function (pad,
      GST_DEBUG_FUNCPTR (gst_twoflow_split_audio_chain));
  gst_pad_set_event_function (pad,
      GST_DEBUG_FUNCPTR (gst_twoflow_split_audio_event));
  GST_OBJECT_LOCK (self);
  self->audio_pad = pad;
  GST_OBJECT_UNLOCK (self);
  gst_element_add_pad (element, pad);
  return pad;
}

static void
gst_twoflow_split_release_pad (GstElement * element, GstPad * pad)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (element);

  g_mutex_lock (&self->lock);
  GST_OBJECT_LOCK (self);
  if (pad == self->audio_pad)
    self->audio_pad = NULL;
  GST_OBJECT_UNLOCK (self);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  gst_element_remove_pad (element, pad);
}

static void
gst_twoflow_split_reset (GstTwoflowSplit * self)
{
  self->codec = GST_TWOFLOW_CODEC_UNKNOWN;
  g_clear_pointer (&self->picture_parser, gst_twoflow_picture_parser_free);
  self->caps_records_pending = FALSE;
  gst_clear_caps (&self->input_caps);
  gst_flow_combiner_reset (self->flow_combiner);
  g_mutex_lock (&self->lock);
  self->video_head = self->audio_head = GST_CLOCK_TIME_NONE;
  self->video_eos = self->audio_eos = FALSE;
  gst_clear_caps (&self->audio_caps);
  self->audio_caps_pending = FALSE;
  self->audio_started = FALSE;
  self->audio_no = 0;
  self->busy = FALSE;
  self->last_video_ts = self->last_audio_ts = 0;
  self->first_ts = GST_CLOCK_TIME_NONE;
  gst_segment_init (&self->video_segment, GST_FORMAT_TIME);
  gst_segment_init (&self->audio_segment, GST_FORMAT_TIME);
  self->video_segment_set = FALSE;
  g_mutex_unlock (&self->lock);
}

/* Statistics stay readable after the run; a new run starts them afresh. */
static void
gst_twoflow_split_reset_stats (GstTwoflowSplit * self)
{
  GST_OBJECT_LOCK (self);
  memset (self->frames, 0, sizeof (self->frames));
  self->essential_frames = self->enhanced_frames = 0;
  self->frames_dropped = 0;
  self->essential_bytes = self->enhanced_bytes = 0;
  self->audio_records = self->audio_bytes = 0;
  GST_OBJECT_UNLOCK (self);
}

static void
gst_twoflow_split_finalize (GObject * object)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (object);

  gst_twoflow_split_reset (self);
  gst_flow_combiner_free (self->flow_combiner);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static GstStructure *
gst_twoflow_split_get_stats (GstTwoflowSplit * self)
{
  GstStructure *s;

  GST_OBJECT_LOCK (self);
  s = gst_structure_new ("application/x-twoflowsplit-stats",
      "frames-i", G_TYPE_UINT64, self->frames[GST_TWOFLOW_PICTURE_I],
      "frames-p", G_TYPE_UINT64, self->frames[GST_TWOFLOW_PICTURE_P],
      "frames-b", G_TYPE_UINT64, self->frames[GST_TWOFLOW_PICTURE_B],
      "essential-frames", G_TYPE_UINT64, self->essential_frames,
      "enhanced-frames", G_TYPE_UINT64, self->enhanced_frames,
      "frames-dropped", G_TYPE_UINT64, self->frames_dropped,
      "essential-bytes", G_TYPE_UINT64, self->essential_bytes,
      "enhanced-bytes", G_TYPE_UINT64, self->enhanced_bytes,
      "audio-records", G_TYPE_UINT64, self->audio_records,
      "audio-bytes", G_TYPE_UINT64, self->audio_bytes, NULL);
  GST_OBJECT_UNLOCK (self);
  return s;
}

static void
gst_twoflow_split_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_POLICY:
      self->policy = g_value_get_enum (value);
      break;
    case PROP_SEGMENT_DURATION:
      self->segment_duration = g_value_get_uint64 (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_twoflow_split_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (object);

  switch (prop_id) {
    case PROP_POLICY:
      GST_OBJECT_LOCK (self);
      g_value_set_enum (value, self->policy);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_SEGMENT_DURATION:
      GST_OBJECT_LOCK (self);
      g_value_set_uint64 (value, self->segment_duration);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_twoflow_split_get_stats (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static GstStateChangeReturn
gst_twoflow_split_change_state (GstElement * element,
    GstStateChange transition)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    gst_twoflow_split_reset (self);
    gst_twoflow_split_reset_stats (self);
    g_mutex_lock (&self->lock);
    self->flushing = FALSE;
    g_mutex_unlock (&self->lock);
  }
  /* a chain waiting for the other pad must let the pads deactivate */
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    g_mutex_lock (&self->lock);
    self->flushing = TRUE;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_twoflow_split_reset (self);
  return ret;
}

/* H.264 avc, H.265 hvc1/hev1: the parameter sets and the NAL length size
 * come from codec_data; AV1: the sequence header may. */
static gboolean
gst_twoflow_split_parse_codec_data (GstTwoflowSplit * self,
    const GstStructure * s)
{
  const GValue *v = gst_structure_get_value (s, "codec_data");
  GstMapInfo map;
  gboolean ok;

  if (!v || !GST_VALUE_HOLDS_BUFFER (v))
    return FALSE;
  if (!gst_buffer_map (gst_value_get_buffer (v), &map, GST_MAP_READ))
    return FALSE;
  ok = gst_twoflow_picture_parser_set_codec_data (self->picture_parser,
      map.data, map.size);
  gst_buffer_unmap (gst_value_get_buffer (v), &map);
  return ok;
}

static gboolean
gst_twoflow_split_set_caps (GstTwoflowSplit * self, GstCaps * caps)
{
  const GstStructure *s = gst_caps_get_structure (caps, 0);
  GstTwoflowCodec codec = GST_TWOFLOW_CODEC_UNKNOWN;
  GstCaps *out;
  gint version = 0;
  gboolean ok;

  if (gst_structure_has_name (s, "video/mpeg")
      && gst_structure_get_int (s, "mpegversion", &version)) {
    codec = version == 1 ? GST_TWOFLOW_CODEC_MPEG1 : GST_TWOFLOW_CODEC_MPEG2;
  } else if (gst_structure_has_name (s, "video/x-h264")) {
    codec = GST_TWOFLOW_CODEC_H264;
  } else if (gst_structure_has_name (s, "video/x-h265")) {
    codec = GST_TWOFLOW_CODEC_H265;
  } else if (gst_structure_has_name (s, "video/x-av1")) {
    codec = GST_TWOFLOW_CODEC_AV1;
  }
  if (codec == GST_TWOFLOW_CODEC_UNKNOWN) {
    GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE, (NULL),
        ("Unsupported input caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  if (self->codec != GST_TWOFLOW_CODEC_UNKNOWN && self->codec != codec) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
        ("Codec changed mid-stream from %s to %s",
            gst_twoflow_codec_to_string (self->codec),
            gst_twoflow_codec_to_string (codec)));
    return FALSE;
  }

  /* the stream's state only once the caps are found good */
  if (!self->picture_parser)
    self->picture_parser = gst_twoflow_picture_parser_new (codec);
  if (codec == GST_TWOFLOW_CODEC_H264 || codec == GST_TWOFLOW_CODEC_H265) {
    const gchar *format = gst_structure_get_string (s, "stream-format");

    /* avc, hvc1, hev1: length-prefixed NAL units (hev1 may also carry
     * parameter sets in-band, read like any others) */
    if (format == NULL || g_str_equal (format, "byte-stream"))
      gst_twoflow_picture_parser_set_codec_data (self->picture_parser, NULL,
          0);
    else if (!gst_twoflow_split_parse_codec_data (self, s)) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
          ("%s %s caps without a valid codec_data",
              gst_twoflow_codec_to_string (codec), format));
      if (self->codec == GST_TWOFLOW_CODEC_UNKNOWN)
        g_clear_pointer (&self->picture_parser,
            gst_twoflow_picture_parser_free);
      return FALSE;
    }
  } else if (codec == GST_TWOFLOW_CODEC_AV1
      && gst_structure_has_field (s, "codec_data")) {
    gst_twoflow_split_parse_codec_data (self, s);
  }

  if (self->codec == GST_TWOFLOW_CODEC_UNKNOWN) {
    GST_OBJECT_LOCK (self);
    gst_twoflow_sequencer_init (&self->seq, codec, self->policy,
        self->segment_duration);
    GST_OBJECT_UNLOCK (self);
  }
  self->codec = codec;

  gst_caps_replace (&self->input_caps, caps);
  self->caps_records_pending = TRUE;

  out = gst_caps_new_simple (GST_TWOFLOW_CAPS,
      "codec", G_TYPE_STRING, gst_twoflow_codec_to_string (codec),
      "packetized", G_TYPE_BOOLEAN, TRUE, NULL);
  ok = gst_pad_set_caps (self->essential_pad, out);
  ok &= gst_pad_set_caps (self->enhanced_pad, out);
  gst_caps_unref (out);
  return ok;
}

static GstFlowReturn
gst_twoflow_split_push (GstTwoflowSplit * self, GstPad * pad, GstBuffer * rec)
{
  GstFlowReturn ret = gst_pad_push (pad, rec);

  return gst_flow_combiner_update_pad_flow (self->flow_combiner, pad, ret);
}

static GstFlowReturn
gst_twoflow_split_push_caps_records (GstTwoflowSplit * self)
{
  GstFlowReturn ret;

  self->caps_records_pending = FALSE;
  ret = gst_twoflow_split_push (self, self->essential_pad,
      gst_twoflow_record_new_caps (self->codec, self->input_caps));
  if (ret != GST_FLOW_OK)
    return ret;
  return gst_twoflow_split_push (self, self->enhanced_pad,
      gst_twoflow_record_new_caps (self->codec, self->input_caps));
}

/* In a chain's turn (see wait_turn): the video caps records first, then
 * the audio caps record, before any frame or audio record. Either thread
 * may push them: while one has its turn the other is parked. */
static GstFlowReturn
gst_twoflow_split_push_pending_caps (GstTwoflowSplit * self)
{
  GstFlowReturn ret = GST_FLOW_OK;
  GstCaps *acaps = NULL;

  if (self->codec == GST_TWOFLOW_CODEC_UNKNOWN)
    return GST_FLOW_OK;
  if (self->caps_records_pending) {
    ret = gst_twoflow_split_push_caps_records (self);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  g_mutex_lock (&self->lock);
  if (self->audio_caps_pending && self->audio_caps) {
    acaps = gst_caps_ref (self->audio_caps);
    self->audio_caps_pending = FALSE;
  }
  g_mutex_unlock (&self->lock);
  if (acaps) {
    ret = gst_twoflow_split_push (self, self->essential_pad,
        gst_twoflow_record_new_audio_caps (acaps));
    gst_caps_unref (acaps);
  }
  return ret;
}

static gboolean
audio_active_locked (GstTwoflowSplit * self)
{
  return self->audio_pad && !self->audio_eos
      && gst_pad_is_linked (self->audio_pad);
}

/* Waits (self->lock held) until the buffer at @ts of the video (@video) or
 * audio pad may go: the other pad has a later buffer waiting (the video's
 * frame goes first on a tie) or is at its end, and no push is under way.
 * Returns FALSE when flushing. On TRUE the caller has the turn (busy) and
 * gives it back with end_turn. */
static gboolean
gst_twoflow_split_wait_turn (GstTwoflowSplit * self, gboolean video,
    GstClockTime ts)
{
  g_mutex_lock (&self->lock);
  if (video) {
    if (!GST_CLOCK_TIME_IS_VALID (ts))
      ts = self->last_video_ts;
    self->video_head = self->last_video_ts = ts;
  } else {
    if (!GST_CLOCK_TIME_IS_VALID (ts))
      ts = self->last_audio_ts;
    self->audio_head = self->last_audio_ts = ts;
  }
  g_cond_broadcast (&self->cond);
  while (!self->flushing) {
    gboolean go;

    if (self->busy)
      go = FALSE;
    else if (video)
      go = !audio_active_locked (self) || (GST_CLOCK_TIME_IS_VALID
          (self->audio_head) && self->audio_head >= ts);
    else
      go = self->video_eos || (GST_CLOCK_TIME_IS_VALID (self->video_head)
          && self->video_head > ts);
    if (go)
      break;
    g_cond_wait (&self->cond, &self->lock);
  }
  if (self->flushing) {
    if (video)
      self->video_head = GST_CLOCK_TIME_NONE;
    else
      self->audio_head = GST_CLOCK_TIME_NONE;
    g_mutex_unlock (&self->lock);
    return FALSE;
  }
  self->busy = TRUE;
  if (!GST_CLOCK_TIME_IS_VALID (self->first_ts))
    self->first_ts = ts;
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static void
gst_twoflow_split_end_turn (GstTwoflowSplit * self, gboolean video)
{
  g_mutex_lock (&self->lock);
  self->busy = FALSE;
  if (video)
    self->video_head = GST_CLOCK_TIME_NONE;
  else
    self->audio_head = GST_CLOCK_TIME_NONE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

static GstFlowReturn
gst_twoflow_split_frame (GstTwoflowSplit * self, GstBuffer * buf)
{
  GstTwoflowFrameHeader hdr;
  GstTwoflowPictureInfo picture;
  GstTwoflowSequencerPicture pic;
  GstTwoflowPictureType type;
  gboolean essential;
  GstMapInfo map;
  GstFlowReturn ret;
  gsize size;

  if (self->codec == GST_TWOFLOW_CODEC_UNKNOWN) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("Received a buffer before caps"));
    gst_buffer_unref (buf);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  ret = gst_twoflow_split_push_pending_caps (self);
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref (buf);
    return ret;
  }

  gst_buffer_map (buf, &map, GST_MAP_READ);
  gst_twoflow_picture_parser_parse (self->picture_parser, map.data, map.size,
      &picture);
  type = picture.type;
  pic.type = picture.type;
  pic.reference = picture.reference;
  pic.idr = picture.idr;
  pic.leading = picture.leading;
  pic.open_gop = picture.open_gop;
  pic.depends_back = picture.depends_back;
  size = map.size;
  gst_buffer_unmap (buf, &map);
  {
    /* re-coded upstream as another type: filed as the source's picture */
    GstTwoflowPictureMeta *pm = gst_buffer_get_twoflow_picture_meta (buf);

    if (pm && pm->type != GST_TWOFLOW_PICTURE_NONE) {
      type = pic.type = pm->type;
      pic.reference = pm->reference;
      pic.idr = pic.leading = pic.open_gop = FALSE;
      pic.depends_back = -1;    /* the codec's rule (H.264) */
    }
  }

  if (type == GST_TWOFLOW_PICTURE_NONE) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE, (NULL),
        ("No %s picture found in buffer %u (%" G_GSIZE_FORMAT " bytes): "
            "the input is not a parsed video stream of that codec",
            gst_twoflow_codec_to_string (self->codec), self->seq.frame_no,
            size));
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }
  /* segments count from the stream's first timestamp, audio's or video's */
  if (!GST_CLOCK_TIME_IS_VALID (self->seq.first_ts))
    self->seq.first_ts = self->first_ts;
  if (!gst_twoflow_sequencer_next_picture (&self->seq, &pic,
          GST_BUFFER_PTS (buf), GST_BUFFER_DTS (buf),
          GST_BUFFER_DURATION (buf), &hdr)) {
    GST_ELEMENT_ERROR (self, STREAM, TOO_LAZY, (NULL),
        ("More than %u frames in one stream", GST_TWOFLOW_NO_FRAME - 1));
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }
  essential = (hdr.flags & GST_TWOFLOW_FLAG_ESSENTIAL) != 0;

  GST_OBJECT_LOCK (self);
  self->frames[type]++;
  if (essential) {
    self->essential_frames++;
    self->essential_bytes += size;
  } else {
    self->enhanced_frames++;
    self->enhanced_bytes += size;
  }
  GST_OBJECT_UNLOCK (self);

  GST_LOG_OBJECT (self, "frame %u %c gop %u seg %u deps %u -> %s",
      hdr.frame_no, gst_twoflow_picture_type_to_char (type), hdr.gop_no,
      hdr.segment_no, hdr.depends_from, essential ? "essential" : "enhanced");

  ret = gst_twoflow_split_push (self,
      essential ? self->essential_pad : self->enhanced_pad,
      gst_twoflow_record_new (&hdr, buf));
  gst_buffer_unref (buf);
  return ret;
}

/* A picture dropped upstream (gst_twoflow_event_new_dropped()): it takes
 * its frame number, so the frames after it keep the numbers the other
 * flow's split (of the unaltered source) gives them; nothing is sent and
 * the merge counts it missing. */
static void
gst_twoflow_split_dropped (GstTwoflowSplit * self, GstEvent * event)
{
  GstTwoflowPictureType type;
  gboolean reference;
  GstClockTime pts, dts, duration;
  GstTwoflowFrameHeader hdr;

  if (!gst_twoflow_event_parse_dropped (event, &type, &reference, &pts, &dts,
          &duration) || self->codec == GST_TWOFLOW_CODEC_UNKNOWN)
    return;
  if (!gst_twoflow_split_wait_turn (self, TRUE,
          GST_CLOCK_TIME_IS_VALID (dts) ? dts : pts))
    return;
  if (!GST_CLOCK_TIME_IS_VALID (self->seq.first_ts))
    self->seq.first_ts = self->first_ts;
  if (self->picture_parser)
    gst_twoflow_picture_parser_skip (self->picture_parser);
  if (gst_twoflow_sequencer_next (&self->seq, type, reference, FALSE, pts, dts,
          duration, &hdr)) {
    GST_LOG_OBJECT (self, "frame %u %c dropped upstream", hdr.frame_no,
        gst_twoflow_picture_type_to_char (type));
    GST_OBJECT_LOCK (self);
    self->frames[type]++;
    self->frames_dropped++;
    GST_OBJECT_UNLOCK (self);
  }
  gst_twoflow_split_end_turn (self, TRUE);
}

static GstFlowReturn
gst_twoflow_split_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (parent);
  GstClockTime ts = GST_BUFFER_DTS_IS_VALID (buf) ? GST_BUFFER_DTS (buf) :
      GST_BUFFER_PTS (buf);
  GstFlowReturn ret;

  if (!gst_twoflow_split_wait_turn (self, TRUE, ts)) {
    gst_buffer_unref (buf);
    return GST_FLOW_FLUSHING;
  }
  ret = gst_twoflow_split_frame (self, buf);
  gst_twoflow_split_end_turn (self, TRUE);
  return ret;
}

static GstFlowReturn
gst_twoflow_split_audio_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buf)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (parent);
  GstClockTime pts, first;
  GstFlowReturn ret;
  guint32 segment_no = 0;
  gsize size = gst_buffer_get_size (buf);

  /* into the video's time base (a demuxer may give the tracks segments
   * of their own, e.g. an MP4 edit list shifting the video) */
  buf = gst_buffer_make_writable (buf);
  g_mutex_lock (&self->lock);
  while (!self->flushing && !self->video_segment_set && !self->video_eos)
    g_cond_wait (&self->cond, &self->lock);
  if (self->audio_segment.format == GST_FORMAT_TIME
      && self->video_segment.format == GST_FORMAT_TIME) {
    GstClockTime *ts[2] = { &GST_BUFFER_PTS (buf), &GST_BUFFER_DTS (buf) };
    guint i;

    for (i = 0; i < 2; i++) {
      guint64 rt, pos;

      /* not clipped to either segment's stop: the last audio buffers may
       * end after the video's */
      if (!GST_CLOCK_TIME_IS_VALID (*ts[i]))
        continue;
      if (gst_segment_to_running_time_full (&self->audio_segment,
              GST_FORMAT_TIME, *ts[i], &rt) != 1)
        rt = 0;
      if (gst_segment_position_from_running_time_full (&self->video_segment,
              GST_FORMAT_TIME, rt, &pos) != 1)
        pos = 0;
      *ts[i] = pos;
    }
  }
  g_mutex_unlock (&self->lock);
  pts = GST_BUFFER_PTS (buf);

  if (!gst_twoflow_split_wait_turn (self, FALSE, pts)) {
    gst_buffer_unref (buf);
    return GST_FLOW_FLUSHING;
  }
  /* no video (yet) to go with: nothing to carry the audio */
  if (self->codec == GST_TWOFLOW_CODEC_UNKNOWN) {
    gst_twoflow_split_end_turn (self, FALSE);
    GST_DEBUG_OBJECT (self, "audio without video: dropped");
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  ret = gst_twoflow_split_push_pending_caps (self);
  if (ret == GST_FLOW_OK) {
    first = self->first_ts;
    if (GST_CLOCK_TIME_IS_VALID (pts) && GST_CLOCK_TIME_IS_VALID (first)
        && pts > first)
      segment_no = (pts - first) / self->seq.segment_duration;
    GST_LOG_OBJECT (self, "audio %u pts %" GST_TIME_FORMAT " seg %u",
        self->audio_no, GST_TIME_ARGS (pts), segment_no);
    ret = gst_twoflow_split_push (self, self->essential_pad,
        gst_twoflow_record_new_audio (self->audio_no++, segment_no, buf));
    GST_OBJECT_LOCK (self);
    self->audio_records++;
    self->audio_bytes += size;
    GST_OBJECT_UNLOCK (self);
  }
  gst_twoflow_split_end_turn (self, FALSE);
  gst_buffer_unref (buf);
  /* the essential flow's state is the video's business */
  return ret == GST_FLOW_NOT_LINKED ? GST_FLOW_OK : ret;
}

static gboolean
gst_twoflow_split_audio_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (parent);
  gboolean ret = TRUE;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      const gchar *name;

      gst_event_parse_caps (event, &caps);
      name = gst_structure_get_name (gst_caps_get_structure (caps, 0));
      if (!g_str_has_prefix (name, "audio/")) {
        GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE, (NULL),
            ("Not audio on the audio pad: %" GST_PTR_FORMAT, caps));
        ret = FALSE;
        break;
      }
      g_mutex_lock (&self->lock);
      if (!self->audio_caps || !gst_caps_is_equal (self->audio_caps, caps)) {
        gst_caps_replace (&self->audio_caps, caps);
        self->audio_caps_pending = TRUE;
      }
      g_mutex_unlock (&self->lock);
      break;
    }
    case GST_EVENT_EOS:
      g_mutex_lock (&self->lock);
      self->audio_eos = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      self->flushing = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_FLUSH_STOP:
      g_mutex_lock (&self->lock);
      self->flushing = FALSE;
      self->audio_eos = FALSE;
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_SEGMENT:{
      const GstSegment *seg;

      gst_event_parse_segment (event, &seg);
      g_mutex_lock (&self->lock);
      gst_segment_copy_into (seg, &self->audio_segment);
      g_mutex_unlock (&self->lock);
      break;
    }
    default:
      /* stream-start, tags: the essential flow has the video's */
      break;
  }
  gst_event_unref (event);
  return ret;
}

static gboolean
gst_twoflow_split_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_STREAM_START:{
      const gchar *id;
      gchar *eid, *nid;

      /* Two different streams leave this element. */
      gst_event_parse_stream_start (event, &id);
      eid = g_strconcat (id, "/essential", NULL);
      nid = g_strconcat (id, "/enhanced", NULL);
      gst_pad_push_event (self->essential_pad, gst_event_new_stream_start (eid));
      gst_pad_push_event (self->enhanced_pad, gst_event_new_stream_start (nid));
      g_free (eid);
      g_free (nid);
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gboolean ok;

      gst_event_parse_caps (event, &caps);
      ok = gst_twoflow_split_set_caps (self, caps);
      gst_event_unref (event);
      return ok;
    }
    case GST_EVENT_EOS:
      /* the audio up to its end goes before the end records */
      g_mutex_lock (&self->lock);
      self->video_eos = TRUE;
      self->video_head = GST_CLOCK_TIME_NONE;
      g_cond_broadcast (&self->cond);
      while (!self->flushing && (self->busy || audio_active_locked (self)))
        g_cond_wait (&self->cond, &self->lock);
      g_mutex_unlock (&self->lock);
      if (self->codec != GST_TWOFLOW_CODEC_UNKNOWN) {
        gst_twoflow_split_push_pending_caps (self);
        gst_pad_push (self->essential_pad,
            gst_twoflow_record_new_end (self->codec, self->seq.frame_no,
                self->seq.history));
        gst_pad_push (self->enhanced_pad,
            gst_twoflow_record_new_end (self->codec, self->seq.frame_no,
                self->seq.history));
      }
      break;
    case GST_EVENT_CUSTOM_DOWNSTREAM:
      if (gst_twoflow_event_parse_dropped (event, NULL, NULL, NULL, NULL,
              NULL)) {
        gst_twoflow_split_dropped (self, event);
        gst_event_unref (event);
        return TRUE;
      }
      break;
    case GST_EVENT_SEGMENT:{
      const GstSegment *seg;

      gst_event_parse_segment (event, &seg);
      g_mutex_lock (&self->lock);
      gst_segment_copy_into (seg, &self->video_segment);
      self->video_segment_set = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      /* the flows carry the audio too, which may end after the video's
       * stop: an open end, or a sink would drop the last audio records */
      if (seg->format == GST_FORMAT_TIME && seg->stop != GST_CLOCK_TIME_NONE) {
        GstSegment open = *seg;
        GstEvent *ev;

        open.stop = GST_CLOCK_TIME_NONE;
        ev = gst_event_new_segment (&open);
        gst_event_set_seqnum (ev, gst_event_get_seqnum (event));
        gst_event_unref (event);
        event = ev;
      }
      break;
    }
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      self->flushing = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_FLUSH_STOP:
      gst_flow_combiner_reset (self->flow_combiner);
      g_mutex_lock (&self->lock);
      self->flushing = FALSE;
      self->video_eos = FALSE;
      g_mutex_unlock (&self->lock);
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}
