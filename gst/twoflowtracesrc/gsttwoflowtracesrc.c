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
 * SECTION:element-twoflowtracesrc
 * @title: twoflowtracesrc
 *
 * Replays a frame trace (`index type time_ms bytes` per line, decode order,
 * as in `data/`) as twoflow records: picture types and sizes come from the
 * trace, the payload is a filler pattern of that size. The file is plain
 * text or xz-compressed text (recognised by its magic bytes, whatever its
 * name), so the compressed traces of `data/` are read as they are. Like the
 * server's two readers of one file, one instance can produce the essential
 * flow and another the enhanced flow (#GstTwoflowTraceSrc:flow);
 * twoflowmerge puts them back together and counts the damage.
 *
 * Not live (the default), the source produces frames as fast as downstream
 * takes them. With #GstTwoflowTraceSrc:is-live=true it is a live source
 * that paces itself on the pipeline clock: each frame leaves at its decode
 * time (running time), the essential flow #GstTwoflowTraceSrc:ahead of it.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 twoflowmerge name=m ! fakesink \
 *     twoflowtracesrc location=data/star-wars-iv.txt.xz flow=essential num-frames=3000 ! m.essential \
 *     twoflowtracesrc location=data/star-wars-iv.txt.xz flow=enhanced num-frames=3000 ! m.enhanced
 * ]| replays two minutes of Star Wars through a merge, as fast as it can
 * (run from the source tree; the traces are in `data/`).
 * |[
 * gst-launch-1.0 twoflowmerge name=m ! fakesink sync=true \
 *     twoflowtracesrc location=data/star-wars-iv.txt.xz flow=essential num-frames=250 \
 *         is-live=true ahead=2000000000 ! queue ! m.essential \
 *     twoflowtracesrc location=data/star-wars-iv.txt.xz flow=enhanced num-frames=250 \
 *         is-live=true ! queue ! m.enhanced
 * ]| plays its first ten seconds in real time, the essential flow two
 * seconds ahead of the enhanced one.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include <lzma.h>

#include "gsttwoflowtracesrc.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_trace_src_debug);
#define GST_CAT_DEFAULT twoflow_trace_src_debug

#define DEFAULT_LOCATION          NULL
#define DEFAULT_FLOW              GST_TWOFLOW_TRACE_FLOW_ALL
#define DEFAULT_POLICY            GST_TWOFLOW_POLICY_I
#define DEFAULT_SEGMENT_DURATION  (256 * GST_SECOND)
#define DEFAULT_FPS_N             25
#define DEFAULT_FPS_D             1
#define DEFAULT_SIZE_SCALE        1.0
#define DEFAULT_NUM_FRAMES        -1
#define DEFAULT_AHEAD             0
#define DEFAULT_IS_LIVE           FALSE

/* What the records say they carry: the traces are of MPEG-4 video. */
#define TRACE_CAPS "video/mpeg, mpegversion=(int)4, systemstream=(boolean)false, " \
    "parsed=(boolean)true"

enum
{
  PROP_0,
  PROP_LOCATION,
  PROP_FLOW,
  PROP_POLICY,
  PROP_SEGMENT_DURATION,
  PROP_FRAMERATE,
  PROP_SIZE_SCALE,
  PROP_NUM_FRAMES,
  PROP_AHEAD,
  PROP_IS_LIVE,
};

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_TWOFLOW_CAPS ", packetized = (boolean) true"));

GType
gst_twoflow_trace_flow_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {GST_TWOFLOW_TRACE_FLOW_ALL, "Every frame", "all"},
    {GST_TWOFLOW_TRACE_FLOW_ESSENTIAL, "The essential flow", "essential"},
    {GST_TWOFLOW_TRACE_FLOW_ENHANCED, "The enhanced flow", "enhanced"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstTwoflowTraceFlow", values);
    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define gst_twoflow_trace_src_parent_class parent_class
G_DEFINE_TYPE (GstTwoflowTraceSrc, gst_twoflow_trace_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (twoflowtracesrc, "twoflowtracesrc",
    GST_RANK_NONE, GST_TYPE_TWOFLOW_TRACE_SRC);

static void gst_twoflow_trace_src_finalize (GObject * object);
static void gst_twoflow_trace_src_set_property (GObject * object,
    guint prop_id, const GValue * value, GParamSpec * pspec);
static void gst_twoflow_trace_src_get_property (GObject * object,
    guint prop_id, GValue * value, GParamSpec * pspec);
static gboolean gst_twoflow_trace_src_start (GstBaseSrc * src);
static gboolean gst_twoflow_trace_src_stop (GstBaseSrc * src);
static void gst_twoflow_trace_src_get_times (GstBaseSrc * src,
    GstBuffer * buf, GstClockTime * start, GstClockTime * end);
static GstFlowReturn gst_twoflow_trace_src_create (GstPushSrc * src,
    GstBuffer ** buf);

static void
gst_twoflow_trace_src_class_init (GstTwoflowTraceSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *pushsrc_class = GST_PUSH_SRC_CLASS (klass);

  gobject_class->finalize = gst_twoflow_trace_src_finalize;
  gobject_class->set_property = gst_twoflow_trace_src_set_property;
  gobject_class->get_property = gst_twoflow_trace_src_get_property;

  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "Location",
          "Trace file: lines of 'index type time_ms bytes' in decode order",
          DEFAULT_LOCATION, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_FLOW,
      g_param_spec_enum ("flow", "Flow", "Which frames to produce",
          GST_TYPE_TWOFLOW_TRACE_FLOW, DEFAULT_FLOW,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_POLICY,
      g_param_spec_enum ("policy", "Policy",
          "Picture types of the essential flow (i: I frames; ip: I and P frames)",
          GST_TYPE_TWOFLOW_POLICY, DEFAULT_POLICY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_SEGMENT_DURATION,
      g_param_spec_uint64 ("segment-duration", "Segment duration",
          "Duration of a video segment in nanoseconds (sets each frame's segment number)",
          GST_MSECOND, G_MAXUINT64, DEFAULT_SEGMENT_DURATION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_FRAMERATE,
      gst_param_spec_fraction ("framerate", "Frame rate",
          "Frames per second (sets decode timestamps and durations)",
          1, 1, 1000, 1, DEFAULT_FPS_N, DEFAULT_FPS_D,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_SIZE_SCALE,
      g_param_spec_double ("size-scale", "Size scale",
          "Factor applied to every frame size (to replay a video at another bitrate)",
          0.001, 1000.0, DEFAULT_SIZE_SCALE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_NUM_FRAMES,
      g_param_spec_int64 ("num-frames", "Number of frames",
          "Replay only the first N frames of the trace (-1 = all)",
          -1, G_MAXUINT32 - 1, DEFAULT_NUM_FRAMES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_AHEAD,
      g_param_spec_uint64 ("ahead", "Ahead",
          "With is-live, send each frame this many nanoseconds before its decode time (e.g. one segment for the essential flow)",
          0, G_MAXUINT64, DEFAULT_AHEAD,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstTwoflowTraceSrc:is-live:
   *
   * Whether to act as a live source: frames are produced at their decode
   * time on the pipeline clock (less #GstTwoflowTraceSrc:ahead) instead of
   * as fast as downstream takes them.
   */
  g_object_class_install_property (gobject_class, PROP_IS_LIVE,
      g_param_spec_boolean ("is-live", "Is Live",
          "Whether to act as a live source (frames leave at their decode time)",
          DEFAULT_IS_LIVE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Two-flow trace source", "Source/Video",
      "Replays a video frame trace as twoflow records",
      "twoflow developers <dev@twoflow.invalid>");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, TWOFLOW_DOC_URI_BASE "frame-format.md");

  basesrc_class->start = GST_DEBUG_FUNCPTR (gst_twoflow_trace_src_start);
  basesrc_class->stop = GST_DEBUG_FUNCPTR (gst_twoflow_trace_src_stop);
  basesrc_class->get_times =
      GST_DEBUG_FUNCPTR (gst_twoflow_trace_src_get_times);
  pushsrc_class->create = GST_DEBUG_FUNCPTR (gst_twoflow_trace_src_create);

  gst_type_mark_as_plugin_api (GST_TYPE_TWOFLOW_TRACE_FLOW, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_TWOFLOW_POLICY, 0);
  GST_DEBUG_CATEGORY_INIT (twoflow_trace_src_debug, "twoflowtracesrc", 0,
      "two-flow trace source");
}

static void
gst_twoflow_trace_src_init (GstTwoflowTraceSrc * self)
{
  self->location = g_strdup (DEFAULT_LOCATION);
  self->flow = DEFAULT_FLOW;
  self->policy = DEFAULT_POLICY;
  self->segment_duration = DEFAULT_SEGMENT_DURATION;
  self->fps_n = DEFAULT_FPS_N;
  self->fps_d = DEFAULT_FPS_D;
  self->size_scale = DEFAULT_SIZE_SCALE;
  self->num_frames = DEFAULT_NUM_FRAMES;
  self->ahead = DEFAULT_AHEAD;
  gst_base_src_set_live (GST_BASE_SRC (self), DEFAULT_IS_LIVE);
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
}

static void
gst_twoflow_trace_src_finalize (GObject * object)
{
  GstTwoflowTraceSrc *self = GST_TWOFLOW_TRACE_SRC (object);

  g_free (self->location);
  if (self->frames)
    g_array_unref (self->frames);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_twoflow_trace_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstTwoflowTraceSrc *self = GST_TWOFLOW_TRACE_SRC (object);

  /* GstBaseSrc keeps the live flag under the object lock itself */
  if (prop_id == PROP_IS_LIVE) {
    gst_base_src_set_live (GST_BASE_SRC (self), g_value_get_boolean (value));
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free (self->location);
      self->location = g_value_dup_string (value);
      break;
    case PROP_FLOW:
      self->flow = g_value_get_enum (value);
      break;
    case PROP_POLICY:
      self->policy = g_value_get_enum (value);
      break;
    case PROP_SEGMENT_DURATION:
      self->segment_duration = g_value_get_uint64 (value);
      break;
    case PROP_FRAMERATE:
      self->fps_n = gst_value_get_fraction_numerator (value);
      self->fps_d = gst_value_get_fraction_denominator (value);
      break;
    case PROP_SIZE_SCALE:
      self->size_scale = g_value_get_double (value);
      break;
    case PROP_NUM_FRAMES:
      self->num_frames = g_value_get_int64 (value);
      break;
    case PROP_AHEAD:
      self->ahead = g_value_get_uint64 (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_twoflow_trace_src_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstTwoflowTraceSrc *self = GST_TWOFLOW_TRACE_SRC (object);

  if (prop_id == PROP_IS_LIVE) {
    g_value_set_boolean (value, gst_base_src_is_live (GST_BASE_SRC (self)));
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_value_set_string (value, self->location);
      break;
    case PROP_FLOW:
      g_value_set_enum (value, self->flow);
      break;
    case PROP_POLICY:
      g_value_set_enum (value, self->policy);
      break;
    case PROP_SEGMENT_DURATION:
      g_value_set_uint64 (value, self->segment_duration);
      break;
    case PROP_FRAMERATE:
      gst_value_set_fraction (value, self->fps_n, self->fps_d);
      break;
    case PROP_SIZE_SCALE:
      g_value_set_double (value, self->size_scale);
      break;
    case PROP_NUM_FRAMES:
      g_value_set_int64 (value, self->num_frames);
      break;
    case PROP_AHEAD:
      g_value_set_uint64 (value, self->ahead);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* The first bytes of an .xz stream. */
static const guint8 xz_magic[6] = { 0xFD, '7', 'z', 'X', 'Z', 0x00 };

/* A decompressed trace larger than this is refused (the hour-long traces
 * of data/ are about 2 MB). */
#define MAX_TRACE_BYTES (256 * 1024 * 1024)

/* Decompresses a whole .xz file (concatenated streams allowed); NULL and
 * *why on corrupt, truncated or oversized input. The result is
 * NUL-terminated. */
static gchar *
xz_decompress (const guint8 * in, gsize in_len, gchar ** why)
{
  lzma_stream strm = LZMA_STREAM_INIT;
  GByteArray *out = g_byte_array_new ();
  guint8 chunk[64 * 1024];
  lzma_ret ret;

  ret = lzma_stream_decoder (&strm, UINT64_MAX, LZMA_CONCATENATED);
  if (ret != LZMA_OK) {
    *why = g_strdup_printf ("cannot start the xz decoder (lzma error %d)",
        ret);
    g_byte_array_unref (out);
    return NULL;
  }
  strm.next_in = in;
  strm.avail_in = in_len;
  do {
    strm.next_out = chunk;
    strm.avail_out = sizeof (chunk);
    /* all input is given at once: LZMA_FINISH lets the decoder tell a
     * truncated stream from one that wants more input */
    ret = lzma_code (&strm, LZMA_FINISH);
    g_byte_array_append (out, chunk, sizeof (chunk) - strm.avail_out);
    if (out->len > MAX_TRACE_BYTES) {
      *why = g_strdup_printf ("decompressed trace larger than %u bytes",
          MAX_TRACE_BYTES);
      break;
    }
  } while (ret == LZMA_OK);
  lzma_end (&strm);
  if (ret != LZMA_STREAM_END) {
    if (!*why)
      *why = g_strdup_printf ("corrupt or truncated xz data (lzma error %d)",
          ret);
    g_byte_array_unref (out);
    return NULL;
  }
  g_byte_array_append (out, (const guint8 *) "", 1);
  return (gchar *) g_byte_array_free (out, FALSE);
}

/* The trace's text: the file itself, or its xz decompression. */
static gchar *
read_trace_text (const gchar * location, gchar ** why)
{
  gchar *contents = NULL, *text;
  gsize len = 0;
  GError *err = NULL;

  if (!g_file_get_contents (location, &contents, &len, &err)) {
    *why = g_strdup (err->message);
    g_error_free (err);
    return NULL;
  }
  if (len < sizeof (xz_magic) || memcmp (contents, xz_magic,
          sizeof (xz_magic)) != 0)
    return contents;
  text = xz_decompress ((const guint8 *) contents, len, why);
  g_free (contents);
  return text;
}

/* Reads the whole trace; on failure *why says which line and why. */
static GArray *
load_trace (const gchar * location, gint64 max_frames, gchar ** why)
{
  GArray *frames = g_array_new (FALSE, FALSE, sizeof (GstTwoflowTraceFrame));
  gchar *contents, **lines, **l;
  guint lineno = 0;

  contents = read_trace_text (location, why);
  if (!contents) {
    g_array_unref (frames);
    return NULL;
  }
  /* g_strsplit_set: g_strsplit finds each line with strstr over the rest
   * of the text (quadratic under ASan's strstr, 300 s for a trace) */
  lines = g_strsplit_set (contents, "\n", -1);
  g_free (contents);
  for (l = lines; *l && (max_frames < 0 || frames->len < max_frames); l++) {
    GstTwoflowTraceFrame f;
    gchar type;
    guint64 index, time_ms, bytes;

    lineno++;
    g_strstrip (*l);
    if (**l == '\0' || **l == '#')
      continue;
    if (sscanf (*l, "%" G_GUINT64_FORMAT " %c %" G_GUINT64_FORMAT " %"
            G_GUINT64_FORMAT, &index, &type, &time_ms, &bytes) != 4
        || !strchr ("IPB", type) || bytes > GST_TWOFLOW_MAX_PAYLOAD
        || (frames->len == 0 && type != 'I')) {
      /* quoted as valid UTF-8, and short: the file may be binary */
      gchar *shown = g_utf8_make_valid (*l, MIN (strlen (*l), 80));

      *why = g_strdup_printf ("line %u is not 'index I|P|B time_ms bytes' "
          "(or the trace does not start with an I frame): '%s'", lineno,
          shown);
      g_free (shown);
      g_strfreev (lines);
      g_array_unref (frames);
      return NULL;
    }
    f.type = type == 'I' ? GST_TWOFLOW_PICTURE_I : type == 'P' ?
        GST_TWOFLOW_PICTURE_P : GST_TWOFLOW_PICTURE_B;
    f.pts = time_ms * GST_MSECOND;
    f.size = bytes;
    g_array_append_val (frames, f);
  }
  g_strfreev (lines);
  if (frames->len == 0) {
    *why = g_strdup ("the trace has no frames");
    g_array_unref (frames);
    return NULL;
  }
  return frames;
}

static gboolean
gst_twoflow_trace_src_start (GstBaseSrc * src)
{
  GstTwoflowTraceSrc *self = GST_TWOFLOW_TRACE_SRC (src);
  gchar *why = NULL;

  if (!self->location) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, (NULL),
        ("No trace file given (location)"));
    return FALSE;
  }
  self->frames = load_trace (self->location, self->num_frames, &why);
  if (!self->frames) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, (NULL),
        ("Cannot use trace %s: %s", self->location, why));
    g_free (why);
    return FALSE;
  }
  GST_INFO_OBJECT (self, "%u frames in %s", self->frames->len, self->location);
  gst_twoflow_sequencer_init (&self->seq, GST_TWOFLOW_CODEC_UNKNOWN,
      self->policy, self->segment_duration);
  self->next = 0;
  self->caps_sent = self->end_sent = FALSE;
  return TRUE;
}

static gboolean
gst_twoflow_trace_src_stop (GstBaseSrc * src)
{
  GstTwoflowTraceSrc *self = GST_TWOFLOW_TRACE_SRC (src);

  g_clear_pointer (&self->frames, g_array_unref);
  return TRUE;
}

/* Live pacing: a frame is due `ahead` before its decode time. */
static void
gst_twoflow_trace_src_get_times (GstBaseSrc * src, GstBuffer * buf,
    GstClockTime * start, GstClockTime * end)
{
  GstTwoflowTraceSrc *self = GST_TWOFLOW_TRACE_SRC (src);
  GstClockTime dts = GST_BUFFER_DTS (buf);

  *end = GST_CLOCK_TIME_NONE;
  if (!gst_base_src_is_live (src) || !GST_CLOCK_TIME_IS_VALID (dts)) {
    *start = GST_CLOCK_TIME_NONE;
    return;
  }
  *start = dts > self->ahead ? dts - self->ahead : 0;
}

static gboolean
wanted (GstTwoflowTraceSrc * self, const GstTwoflowFrameHeader * hdr)
{
  gboolean essential = (hdr->flags & GST_TWOFLOW_FLAG_ESSENTIAL) != 0;

  switch (self->flow) {
    case GST_TWOFLOW_TRACE_FLOW_ESSENTIAL:
      return essential;
    case GST_TWOFLOW_TRACE_FLOW_ENHANCED:
      return !essential;
    default:
      return TRUE;
  }
}

static GstBuffer *
filler_payload (guint32 frame_no, gsize size)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, size, NULL);
  GstMapInfo map;
  gsize i;

  /* a pattern a receiver can check: byte i of frame n is (n + i) mod 251 */
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (i = 0; i < size; i++)
    map.data[i] = (guint8) ((frame_no + i) % 251);
  gst_buffer_unmap (buf, &map);
  return buf;
}

static GstFlowReturn
gst_twoflow_trace_src_create (GstPushSrc * src, GstBuffer ** out)
{
  GstTwoflowTraceSrc *self = GST_TWOFLOW_TRACE_SRC (src);
  GstClockTime frame_dur = gst_util_uint64_scale_int (GST_SECOND,
      self->fps_d, self->fps_n);
  GstTwoflowFrameHeader hdr;

  if (!self->caps_sent) {
    GstCaps *caps = gst_caps_from_string (TRACE_CAPS);

    gst_caps_set_simple (caps, "framerate", GST_TYPE_FRACTION, self->fps_n,
        self->fps_d, NULL);
    *out = gst_twoflow_record_new_caps (GST_TWOFLOW_CODEC_UNKNOWN, caps);
    GST_BUFFER_DTS (*out) = 0;
    gst_caps_unref (caps);
    self->caps_sent = TRUE;
    return GST_FLOW_OK;
  }

  while (self->next < self->frames->len) {
    GstTwoflowTraceFrame *f = &g_array_index (self->frames,
        GstTwoflowTraceFrame, self->next);
    GstClockTime dts = self->next * frame_dur;

    self->next++;
    gst_twoflow_sequencer_next (&self->seq, f->type,
        f->type != GST_TWOFLOW_PICTURE_B, FALSE, f->pts, dts, frame_dur,
        &hdr);
    if (wanted (self, &hdr)) {
      GstBuffer *payload = filler_payload (hdr.frame_no,
          MAX (1, (gsize) (f->size * self->size_scale + 0.5)));

      *out = gst_twoflow_record_new (&hdr, payload);
      gst_buffer_unref (payload);
      if (f->type != GST_TWOFLOW_PICTURE_I)
        GST_BUFFER_FLAG_SET (*out, GST_BUFFER_FLAG_DELTA_UNIT);
      return GST_FLOW_OK;
    }
  }

  if (!self->end_sent) {
    *out = gst_twoflow_record_new_end (GST_TWOFLOW_CODEC_UNKNOWN,
        self->seq.frame_no, self->seq.history);
    GST_BUFFER_DTS (*out) = self->frames->len * frame_dur;
    self->end_sent = TRUE;
    return GST_FLOW_OK;
  }
  return GST_FLOW_EOS;
}
