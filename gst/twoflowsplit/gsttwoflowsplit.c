/* SPDX-License-Identifier: LGPL-2.0-or-later */
/* twoflow
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2 of the License, or (at your option) any later version.
 */
/**
 * SECTION:element-twoflowsplit
 * @title: twoflowsplit
 *
 * Splits a parsed MPEG-1/MPEG-2 (after mpegvideoparse) or H.264 (after
 * h264parse, alignment=au) video stream into two flows of twoflow records
 * (docs/frame-format.md): the `essential` flow (I frames, or I and P frames
 * with policy=ip) and the `enhanced` flow (everything else). Picture types
 * are read from the bitstream with the codecparsers library. Each flow
 * starts with a caps record so twoflowmerge can restore the original caps.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 filesrc location=greyramp.m2v ! mpegvideoparse ! twoflowsplit name=s \
 *     s.essential ! queue ! filesink location=essential.twf \
 *     s.enhanced ! queue ! filesink location=enhanced.twf
 * ]| writes the two flows of an MPEG-2 file to two files in byte-stream form.
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
        "stream-format = (string) { byte-stream, avc }"));

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
   * * `essential-bytes`, `enhanced-bytes` (guint64): payload bytes sent per flow
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Frames per picture type and frames/bytes per flow",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class,
      &essential_template);
  gst_element_class_add_static_pad_template (element_class, &enhanced_template);
  gst_element_class_set_static_metadata (element_class,
      "Two-flow video splitter", "Codec/Demuxer/Video",
      "Splits parsed MPEG video into an essential (I) and an enhanced (P/B) flow",
      "twoflow developers");

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_twoflow_split_change_state);

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
}

static void
gst_twoflow_split_reset (GstTwoflowSplit * self)
{
  self->codec = GST_TWOFLOW_CODEC_UNKNOWN;
  g_clear_pointer (&self->picture_parser, gst_twoflow_picture_parser_free);
  self->caps_records_pending = FALSE;
  gst_clear_caps (&self->input_caps);
  gst_flow_combiner_reset (self->flow_combiner);
}

/* Statistics stay readable after the run; a new run starts them afresh. */
static void
gst_twoflow_split_reset_stats (GstTwoflowSplit * self)
{
  GST_OBJECT_LOCK (self);
  memset (self->frames, 0, sizeof (self->frames));
  self->essential_frames = self->enhanced_frames = 0;
  self->essential_bytes = self->enhanced_bytes = 0;
  GST_OBJECT_UNLOCK (self);
}

static void
gst_twoflow_split_finalize (GObject * object)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (object);

  gst_twoflow_split_reset (self);
  gst_flow_combiner_free (self->flow_combiner);
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
      "essential-bytes", G_TYPE_UINT64, self->essential_bytes,
      "enhanced-bytes", G_TYPE_UINT64, self->enhanced_bytes, NULL);
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
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_twoflow_split_reset (self);
  return ret;
}

/* H.264 avc: SPS/PPS and the NAL length size come from codec_data. */
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

  if (self->codec == GST_TWOFLOW_CODEC_UNKNOWN) {
    GST_OBJECT_LOCK (self);
    gst_twoflow_sequencer_init (&self->seq, codec, self->policy,
        self->segment_duration);
    GST_OBJECT_UNLOCK (self);
  }
  self->codec = codec;
  if (!self->picture_parser)
    self->picture_parser = gst_twoflow_picture_parser_new (codec);
  if (codec == GST_TWOFLOW_CODEC_H264) {
    const gchar *format = gst_structure_get_string (s, "stream-format");

    if (g_strcmp0 (format, "avc") != 0)
      gst_twoflow_picture_parser_set_codec_data (self->picture_parser, NULL,
          0);
    else if (!gst_twoflow_split_parse_codec_data (self, s)) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
          ("H.264 avc caps without a valid codec_data"));
      return FALSE;
    }
  }

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

static GstFlowReturn
gst_twoflow_split_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstTwoflowSplit *self = GST_TWOFLOW_SPLIT (parent);
  GstTwoflowFrameHeader hdr;
  GstTwoflowPictureInfo picture;
  GstTwoflowPictureType type;
  gboolean reference, idr, essential;
  GstMapInfo map;
  GstFlowReturn ret;
  gsize size;

  if (self->codec == GST_TWOFLOW_CODEC_UNKNOWN) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("Received a buffer before caps"));
    gst_buffer_unref (buf);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (self->caps_records_pending) {
    ret = gst_twoflow_split_push_caps_records (self);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (buf);
      return ret;
    }
  }

  gst_buffer_map (buf, &map, GST_MAP_READ);
  gst_twoflow_picture_parser_parse (self->picture_parser, map.data, map.size,
      &picture);
  type = picture.type;
  reference = picture.reference;
  idr = picture.idr;
  size = map.size;
  gst_buffer_unmap (buf, &map);

  if (type == GST_TWOFLOW_PICTURE_NONE) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE, (NULL),
        ("No %s picture found in buffer %u (%" G_GSIZE_FORMAT " bytes): "
            "the input is not a parsed video stream of that codec",
            gst_twoflow_codec_to_string (self->codec), self->seq.frame_no,
            size));
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }
  if (!gst_twoflow_sequencer_next (&self->seq, type, reference, idr,
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
      if (self->codec != GST_TWOFLOW_CODEC_UNKNOWN) {
        if (self->caps_records_pending)
          gst_twoflow_split_push_caps_records (self);
        gst_pad_push (self->essential_pad,
            gst_twoflow_record_new_end (self->codec, self->seq.frame_no,
                self->seq.history));
        gst_pad_push (self->enhanced_pad,
            gst_twoflow_record_new_end (self->codec, self->seq.frame_no,
                self->seq.history));
      }
      break;
    case GST_EVENT_FLUSH_STOP:
      gst_flow_combiner_reset (self->flow_combiner);
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}
