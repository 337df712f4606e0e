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
 * SECTION:element-twoflowmerge
 * @title: twoflowmerge
 *
 * Re-interleaves the essential and the enhanced flow made by twoflowsplit
 * into the original elementary stream, frames in decode order with their
 * PTS, DTS and duration restored and the original caps (from the flows' caps
 * records). Both sink pads take twoflow records packetized (one per buffer,
 * as from twoflowsplit or rtpgstdepay) or as a byte stream (tcpserversrc,
 * filesrc).
 *
 * The essential flow may run minutes ahead: its frames are held (up to
 * #GstTwoflowMerge:max-essential-bytes) until their turn. A pre-stored
 * prefix of the essential flow can be read from
 * #GstTwoflowMerge:prefix-location. An enhanced frame that never arrives is
 * counted as missing and, with #GstTwoflowMerge:drop-dependent, the frames
 * that predict from it are dropped until the next intact reference. The
 * damage metrics of the two-flow paper are in #GstTwoflowMerge:stats.
 *
 * The audio track, which travels only in the essential flow (and so in the
 * prefix), comes out of a sometimes pad `audio`, added when the audio caps
 * record is seen; `no-more-pads` follows once the first video frame is
 * output (or at EOS), so an application knows whether there is audio. Audio
 * buffers come out in their order with PTS, DTS and duration restored,
 * interleaved with the video: an audio buffer is pushed once its PTS is not
 * after the DTS (else PTS) of the next video frame, or once the video has
 * ended. Both pads are pushed from one streaming thread, so each needs a
 * queue downstream.
 *
 * Buffers keep their original timestamps; the time segment on both pads
 * starts at the stream's first output timestamp (running time from 0, as a
 * demuxer does), so a synchronised sink does not wait for a capture that
 * began hours into its clock.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 twoflowmerge name=m ! mpegvideoparse ! avdec_mpeg2video ! fakesink \
 *     filesrc location=essential.twf ! m.essential \
 *     filesrc location=enhanced.twf ! m.enhanced
 * ]| decodes a video from the two flow files written by the twoflowsplit example.
 * |[
 * gst-launch-1.0 twoflowmerge name=m prefix-location=prefix.twf \
 *     m.src ! queue ! mpegvideoparse ! avdec_mpeg2video ! autovideosink \
 *     m.audio ! queue ! decodebin ! audioconvert ! autoaudiosink \
 *     filesrc location=essential.twf ! m.essential \
 *     filesrc location=enhanced.twf ! m.enhanced
 * ]| plays a video with its audio track.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gsttwoflowmerge.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_merge_debug);
#define GST_CAT_DEFAULT twoflow_merge_debug

#define DEFAULT_MAX_ESSENTIAL_BYTES  (256 * 1024 * 1024)
#define DEFAULT_MAX_ENHANCED_BYTES   (32 * 1024 * 1024)
#define DEFAULT_PREFIX_LOCATION      NULL
#define DEFAULT_LATENCY              0
#define DEFAULT_DROP_DEPENDENT       TRUE

enum
{
  PROP_0,
  PROP_MAX_ESSENTIAL_BYTES,
  PROP_MAX_ENHANCED_BYTES,
  PROP_PREFIX_LOCATION,
  PROP_LATENCY,
  PROP_DROP_DEPENDENT,
  PROP_STATS,
};

static GstStaticPadTemplate essential_template =
GST_STATIC_PAD_TEMPLATE ("essential",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_TWOFLOW_CAPS));

static GstStaticPadTemplate enhanced_template =
GST_STATIC_PAD_TEMPLATE ("enhanced",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_TWOFLOW_CAPS));

/* MPEG-4 part 2 is what the frame traces (twoflowtracesrc) stand for. */
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/mpeg, mpegversion = (int) { 1, 2, 4 }, "
        "systemstream = (boolean) false, parsed = (boolean) true; "
        "video/x-h264, alignment = (string) au"));

static GstStaticPadTemplate audio_template = GST_STATIC_PAD_TEMPLATE ("audio",
    GST_PAD_SRC,
    GST_PAD_SOMETIMES,
    GST_STATIC_CAPS_ANY);

#define gst_twoflow_merge_parent_class parent_class
G_DEFINE_TYPE (GstTwoflowMerge, gst_twoflow_merge, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (twoflowmerge, "twoflowmerge", GST_RANK_NONE,
    GST_TYPE_TWOFLOW_MERGE);

static void gst_twoflow_merge_finalize (GObject * object);
static void gst_twoflow_merge_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_twoflow_merge_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstStateChangeReturn gst_twoflow_merge_change_state (GstElement *
    element, GstStateChange transition);
static GstFlowReturn gst_twoflow_merge_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buf);
static gboolean gst_twoflow_merge_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
static gboolean gst_twoflow_merge_src_activate_mode (GstPad * pad,
    GstObject * parent, GstPadMode mode, gboolean active);
static gboolean gst_twoflow_merge_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query);
static void gst_twoflow_merge_loop (GstTwoflowMerge * self);

static void
gst_twoflow_merge_class_init (GstTwoflowMergeClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->finalize = gst_twoflow_merge_finalize;
  gobject_class->set_property = gst_twoflow_merge_set_property;
  gobject_class->get_property = gst_twoflow_merge_get_property;

  /**
   * GstTwoflowMerge:max-essential-bytes:
   *
   * How many bytes of essential frames may wait for their turn. Exceeding
   * it is an element error (the essential flow ran further ahead than the
   * proxy was provisioned for).
   */
  g_object_class_install_property (gobject_class, PROP_MAX_ESSENTIAL_BYTES,
      g_param_spec_uint64 ("max-essential-bytes", "Max essential bytes",
          "Most bytes of essential frames held ahead of playback (error when exceeded)",
          1024, G_MAXUINT64, DEFAULT_MAX_ESSENTIAL_BYTES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));

  /**
   * GstTwoflowMerge:max-enhanced-bytes:
   *
   * How many bytes of enhanced frames may wait; beyond it the enhanced pad
   * blocks (backpressure, nothing is dropped).
   */
  g_object_class_install_property (gobject_class, PROP_MAX_ENHANCED_BYTES,
      g_param_spec_uint64 ("max-enhanced-bytes", "Max enhanced bytes",
          "Most bytes of enhanced frames queued before the enhanced pad blocks",
          1024, G_MAXUINT64, DEFAULT_MAX_ENHANCED_BYTES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));

  /**
   * GstTwoflowMerge:prefix-location:
   *
   * A file of essential records in byte-stream form (the pre-stored
   * prefix, e.g. written by `twoflowsplit ! filesink`), used before the
   * essential pad delivers. Read when going from READY to PAUSED.
   */
  g_object_class_install_property (gobject_class, PROP_PREFIX_LOCATION,
      g_param_spec_string ("prefix-location", "Prefix location",
          "File with the pre-stored prefix of the essential flow (byte-stream form)",
          DEFAULT_PREFIX_LOCATION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstTwoflowMerge:latency:
   *
   * In live use, how long to wait for an enhanced frame once its turn has
   * come before counting it missing. 0 waits until the enhanced flow has
   * moved past the frame or ended, as suits reliable or file input.
   */
  g_object_class_install_property (gobject_class, PROP_LATENCY,
      g_param_spec_uint64 ("latency", "Latency",
          "Nanoseconds to wait for a late enhanced frame before counting it missing (0 = until the flow moves past it)",
          0, G_MAXUINT64, DEFAULT_LATENCY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));

  /**
   * GstTwoflowMerge:drop-dependent:
   *
   * Drop the frames that predict from a missing or dropped reference, so a
   * decoder never sees a broken reference chain.
   */
  g_object_class_install_property (gobject_class, PROP_DROP_DEPENDENT,
      g_param_spec_boolean ("drop-dependent", "Drop dependent",
          "Drop frames that depend on a missing reference until the next intact one",
          DEFAULT_DROP_DEPENDENT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));

  /**
   * GstTwoflowMerge:stats:
   *
   * `application/x-twoflowmerge-stats`:
   * * `received-i`, `received-p`, `received-b` (guint64): frames that arrived
   *   (prefix and both pads) and had their turn, per picture type
   * * `missing-i`, `missing-p`, `missing-b` (guint64): frames that never
   *   arrived, per picture type (typed from the history in later records)
   * * `missing-unknown` (guint64): missing frames whose type is not known
   * * `dropped` (guint64): frames that arrived but predict from a missing or
   *   dropped reference (dropped only with drop-dependent=true)
   * * `E_f` (guint64): P/B frames affected by loss (missing or dropped)
   * * `E_g` (guint64): GOPs with at least one affected P/B frame
   * * `G_max` (guint64), `G_avg` (gdouble): most and mean affected P/B
   *   frames per affected GOP
   * * `G_con_total`, `G_con_max` (guint64), `G_con_avg` (gdouble): sum, max
   *   and mean over affected GOPs of the longest run of consecutive affected
   *   P/B frames (decode order) in the GOP
   * * `output-frames` (guint64): frames pushed downstream
   * * `prefix-frames` (guint64): essential frames read from the prefix file
   * * `duplicates` (guint64): records ignored because their frame had
   *   already arrived or had its turn (e.g. essential frames also in the prefix)
   * * `audio-buffers` (guint64): audio buffers pushed on the audio pad
   * * `audio-duplicates` (guint64): audio records ignored because that audio
   *   buffer had already arrived (e.g. from the prefix and again on the
   *   essential pad)
   * * `essential-queued-bytes`, `enhanced-queued-bytes` (guint64): bytes
   *   waiting now (the essential count includes audio)
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Frames received/missing per type and the two-flow damage metrics",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class,
      &essential_template);
  gst_element_class_add_static_pad_template (element_class, &enhanced_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_add_static_pad_template (element_class, &audio_template);
  gst_element_class_set_static_metadata (element_class,
      "Two-flow video merger", "Codec/Muxer/Video",
      "Merges the essential and enhanced flows back into one decodable stream",
      "twoflow developers");

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_change_state);

  GST_DEBUG_CATEGORY_INIT (twoflow_merge_debug, "twoflowmerge", 0,
      "two-flow merger");
}

static void
input_init (GstTwoflowMerge * self, GstTwoflowMergeInput * in,
    GstStaticPadTemplate * templ)
{
  in->name = templ->name_template;
  in->pad = gst_pad_new_from_static_template (templ, templ->name_template);
  gst_pad_set_chain_function (in->pad,
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_chain));
  gst_pad_set_event_function (in->pad,
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_sink_event));
  gst_pad_set_element_private (in->pad, in);
  gst_element_add_pad (GST_ELEMENT (self), in->pad);
  in->parser = gst_twoflow_parser_new ();
  g_queue_init (&in->frames);
  in->last_frame_no = GST_TWOFLOW_NO_FRAME;
}

static void
gst_twoflow_merge_init (GstTwoflowMerge * self)
{
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);

  input_init (self, &self->essential, &essential_template);
  input_init (self, &self->enhanced, &enhanced_template);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_activatemode_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_src_activate_mode));
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_src_query));
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
  self->flowcombiner = gst_flow_combiner_new ();
  gst_flow_combiner_add_pad (self->flowcombiner, self->srcpad);
  g_queue_init (&self->audio);

  self->max_essential_bytes = DEFAULT_MAX_ESSENTIAL_BYTES;
  self->max_enhanced_bytes = DEFAULT_MAX_ENHANCED_BYTES;
  self->prefix_location = g_strdup (DEFAULT_PREFIX_LOCATION);
  self->latency = DEFAULT_LATENCY;
  self->drop_dependent = DEFAULT_DROP_DEPENDENT;
  self->srcresult = GST_FLOW_FLUSHING;
  gst_twoflow_damage_init (&self->damage);
}

static void
frame_free (GstTwoflowMergeFrame * f)
{
  gst_buffer_unref (f->payload);
  g_free (f);
}

static void
input_clear (GstTwoflowMergeInput * in)
{
  g_queue_clear_full (&in->frames, (GDestroyNotify) frame_free);
  in->queued_bytes = 0;
  gst_twoflow_parser_reset (in->parser);
  in->last_frame_no = GST_TWOFLOW_NO_FRAME;
  in->eos = FALSE;
}

/* With the lock held. */
static void
gst_twoflow_merge_reset (GstTwoflowMerge * self)
{
  input_clear (&self->essential);
  input_clear (&self->enhanced);
  g_clear_pointer (&self->caps_string, g_free);
  g_queue_clear_full (&self->audio, (GDestroyNotify) frame_free);
  self->audio_queued_bytes = 0;
  g_clear_pointer (&self->audio_caps_string, g_free);
  self->audio_next_in = self->audio_next_out = GST_TWOFLOW_NO_FRAME;
  self->audio_need_headers = TRUE;
  self->essential_end_seen = FALSE;
  self->segment_start = GST_CLOCK_TIME_NONE;
  self->no_more_pads = FALSE;
  self->need_headers = TRUE;
  self->started = FALSE;
  self->next_frame_no = 0;
  self->frame_count = GST_TWOFLOW_NO_FRAME;
  self->end_history = 0;
  self->wait_start = 0;
  self->discont = TRUE;
}

/* Statistics stay readable after the run; a new run starts them afresh.
 * With the lock held. */
static void
gst_twoflow_merge_reset_stats (GstTwoflowMerge * self)
{
  self->duplicates = self->prefix_frames = self->output_frames = 0;
  self->audio_buffers = self->audio_duplicates = 0;
  gst_twoflow_damage_init (&self->damage);
}

static void
gst_twoflow_merge_finalize (GObject * object)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (object);

  gst_twoflow_merge_reset (self);
  gst_twoflow_parser_free (self->essential.parser);
  gst_twoflow_parser_free (self->enhanced.parser);
  g_free (self->prefix_location);
  gst_flow_combiner_free (self->flowcombiner);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static GstStructure *
gst_twoflow_merge_get_stats (GstTwoflowMerge * self)
{
  GstStructure *s = gst_structure_new_empty ("application/x-twoflowmerge-stats");

  g_mutex_lock (&self->lock);
  gst_twoflow_damage_to_structure (&self->damage, s);
  gst_structure_set (s,
      "output-frames", G_TYPE_UINT64, self->output_frames,
      "prefix-frames", G_TYPE_UINT64, self->prefix_frames,
      "duplicates", G_TYPE_UINT64, self->duplicates,
      "audio-buffers", G_TYPE_UINT64, self->audio_buffers,
      "audio-duplicates", G_TYPE_UINT64, self->audio_duplicates,
      "essential-queued-bytes", G_TYPE_UINT64,
      (guint64) (self->essential.queued_bytes + self->audio_queued_bytes),
      "enhanced-queued-bytes", G_TYPE_UINT64,
      (guint64) self->enhanced.queued_bytes, NULL);
  g_mutex_unlock (&self->lock);
  return s;
}

static void
gst_twoflow_merge_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (object);

  g_mutex_lock (&self->lock);
  switch (prop_id) {
    case PROP_MAX_ESSENTIAL_BYTES:
      self->max_essential_bytes = g_value_get_uint64 (value);
      break;
    case PROP_MAX_ENHANCED_BYTES:
      self->max_enhanced_bytes = g_value_get_uint64 (value);
      g_cond_broadcast (&self->cond);
      break;
    case PROP_PREFIX_LOCATION:
      g_free (self->prefix_location);
      self->prefix_location = g_value_dup_string (value);
      break;
    case PROP_LATENCY:
      self->latency = g_value_get_uint64 (value);
      g_cond_broadcast (&self->cond);
      break;
    case PROP_DROP_DEPENDENT:
      self->drop_dependent = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  g_mutex_unlock (&self->lock);
}

static void
gst_twoflow_merge_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, gst_twoflow_merge_get_stats (self));
    return;
  }
  g_mutex_lock (&self->lock);
  switch (prop_id) {
    case PROP_MAX_ESSENTIAL_BYTES:
      g_value_set_uint64 (value, self->max_essential_bytes);
      break;
    case PROP_MAX_ENHANCED_BYTES:
      g_value_set_uint64 (value, self->max_enhanced_bytes);
      break;
    case PROP_PREFIX_LOCATION:
      g_value_set_string (value, self->prefix_location);
      break;
    case PROP_LATENCY:
      g_value_set_uint64 (value, self->latency);
      break;
    case PROP_DROP_DEPENDENT:
      g_value_set_boolean (value, self->drop_dependent);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  g_mutex_unlock (&self->lock);
}

/* Puts a frame that came out of order into its place in the queue.
 * Returns FALSE for a frame already queued. */
static gboolean
input_insert (GstTwoflowMergeInput * in, GstTwoflowMergeFrame * f)
{
  GList *l;

  for (l = in->frames.tail; l; l = l->prev) {
    GstTwoflowMergeFrame *q = l->data;

    if (q->hdr.frame_no == f->hdr.frame_no)
      return FALSE;
    if (q->hdr.frame_no < f->hdr.frame_no) {
      g_queue_insert_after (&in->frames, l, f);
      return TRUE;
    }
  }
  g_queue_push_head (&in->frames, f);
  return TRUE;
}

static gchar *
payload_string (GstBuffer * payload)
{
  GstMapInfo map;
  gchar *str;

  gst_buffer_map (payload, &map, GST_MAP_READ);
  str = g_strndup ((const gchar *) map.data, map.size);
  gst_buffer_unmap (payload, &map);
  return str;
}

/* Takes one audio record (or audio caps record) of the essential flow.
 * Returns FALSE with *why set for one out of place. With the lock held. */
static gboolean
gst_twoflow_merge_take_audio (GstTwoflowMerge * self,
    const GstTwoflowFrameHeader * hdr, GstBuffer * payload, gchar ** why)
{
  GstTwoflowMergeFrame *f;

  if (hdr->kind == GST_TWOFLOW_RECORD_AUDIO_CAPS) {
    gchar *str;
    GstCaps *caps;

    if (self->audio_caps_string)
      return TRUE;              /* again, e.g. in the prefix and on the pad */
    str = payload_string (payload);
    caps = gst_caps_from_string (str);
    if (!caps || !gst_caps_is_fixed (caps)) {
      *why = g_strdup_printf ("unusable audio caps record '%s'", str);
      gst_clear_caps (&caps);
      g_free (str);
      return FALSE;
    }
    gst_caps_unref (caps);
    if (self->no_more_pads) {
      *why = g_strdup ("audio caps record after the video started");
      g_free (str);
      return FALSE;
    }
    self->audio_caps_string = str;
    g_cond_broadcast (&self->cond);
    return TRUE;
  }

  if (!self->audio_caps_string) {
    *why = g_strdup_printf ("audio record %u before the audio caps record",
        hdr->frame_no);
    return FALSE;
  }
  if (!GST_CLOCK_TIME_IS_VALID (hdr->pts)) {
    *why = g_strdup_printf ("audio record %u without PTS", hdr->frame_no);
    return FALSE;
  }
  if (self->audio_next_in != GST_TWOFLOW_NO_FRAME) {
    if (hdr->frame_no < self->audio_next_in) {
      self->audio_duplicates++;
      return TRUE;
    }
    if (hdr->frame_no > self->audio_next_in) {
      *why = g_strdup_printf ("audio record %u out of order (expected %u)",
          hdr->frame_no, self->audio_next_in);
      return FALSE;
    }
  }
  self->audio_next_in = hdr->frame_no + 1;
  f = g_new (GstTwoflowMergeFrame, 1);
  f->hdr = *hdr;
  f->payload = gst_buffer_ref (payload);
  g_queue_push_tail (&self->audio, f);
  self->audio_queued_bytes += gst_buffer_get_size (payload);
  g_cond_broadcast (&self->cond);
  return TRUE;
}

/* Takes one parsed record into @in's state. Returns FALSE with *why set for
 * a record that has no place in the flow. With the lock held. */
static gboolean
gst_twoflow_merge_take_record (GstTwoflowMerge * self,
    GstTwoflowMergeInput * in, const GstTwoflowFrameHeader * hdr,
    GstBuffer * payload, gchar ** why)
{
  GstTwoflowMergeFrame *f;
  gboolean ok;

  switch (hdr->kind) {
    case GST_TWOFLOW_RECORD_CAPS:
      if (!self->caps_string)
        self->caps_string = payload_string (payload);
      gst_buffer_unref (payload);
      return TRUE;
    case GST_TWOFLOW_RECORD_END:
      self->frame_count = hdr->frame_no;
      self->end_history = hdr->history;
      if (in == &self->essential)
        self->essential_end_seen = TRUE;
      gst_buffer_unref (payload);
      g_cond_broadcast (&self->cond);
      return TRUE;
    case GST_TWOFLOW_RECORD_AUDIO_CAPS:
    case GST_TWOFLOW_RECORD_AUDIO:
      if (in != &self->essential) {
        *why = g_strdup_printf ("audio record %u on the %s flow (audio "
            "travels only in the essential flow)", hdr->frame_no, in->name);
        ok = FALSE;
      } else {
        ok = gst_twoflow_merge_take_audio (self, hdr, payload, why);
      }
      gst_buffer_unref (payload);
      return ok;
    case GST_TWOFLOW_RECORD_FRAME:
      break;
  }

  if (self->started && hdr->frame_no < self->next_frame_no) {
    /* its turn has passed (late, or before the first essential frame) */
    self->duplicates++;
    gst_buffer_unref (payload);
    return TRUE;
  }

  f = g_new (GstTwoflowMergeFrame, 1);
  f->hdr = *hdr;
  f->payload = payload;
  if (in->last_frame_no == GST_TWOFLOW_NO_FRAME
      || hdr->frame_no > in->last_frame_no) {
    in->last_frame_no = hdr->frame_no;
    g_queue_push_tail (&in->frames, f);
  } else if (in == &self->essential || !input_insert (in, f)) {
    /* The essential pad may repeat what the prefix already gave; the
     * enhanced flow may repeat or reorder what the network delivered. */
    self->duplicates++;
    frame_free (f);
    return TRUE;
  }
  in->queued_bytes += gst_buffer_get_size (payload);
  g_cond_broadcast (&self->cond);
  return TRUE;
}

/* Parses everything complete in @in's parser. With the lock held. */
static gboolean
gst_twoflow_merge_parse (GstTwoflowMerge * self, GstTwoflowMergeInput * in,
    gboolean at_end, gchar ** why)
{
  GstTwoflowFrameHeader hdr;
  GstTwoflowParseResult res;
  GstBuffer *payload;

  while ((res = gst_twoflow_parser_pop (in->parser, &hdr,
              &payload)) == GST_TWOFLOW_PARSE_OK) {
    if (!gst_twoflow_merge_take_record (self, in, &hdr, payload, why))
      return FALSE;
  }
  if (res != GST_TWOFLOW_PARSE_NEED_MORE) {
    *why = g_strdup (gst_twoflow_parse_result_to_string (res));
    return FALSE;
  }
  if ((at_end || in->packetized) && gst_twoflow_parser_available (in->parser)) {
    *why = g_strdup_printf ("%" G_GSIZE_FORMAT " bytes of a truncated record",
        gst_twoflow_parser_available (in->parser));
    return FALSE;
  }
  return TRUE;
}

static gboolean
gst_twoflow_merge_load_prefix (GstTwoflowMerge * self)
{
  GError *err = NULL;
  gchar *contents, *why = NULL;
  gsize len;
  GstTwoflowMergeInput *in = &self->essential;
  guint before;
  gboolean ok;

  if (!self->prefix_location)
    return TRUE;
  if (!g_file_get_contents (self->prefix_location, &contents, &len, &err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, (NULL),
        ("Could not read prefix %s: %s", self->prefix_location, err->message));
    g_error_free (err);
    return FALSE;
  }
  gst_twoflow_parser_push (in->parser, gst_buffer_new_wrapped (contents, len));
  before = g_queue_get_length (&in->frames);
  ok = gst_twoflow_merge_parse (self, in, TRUE, &why);
  self->prefix_frames = g_queue_get_length (&in->frames) - before;
  if (!ok) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE, (NULL),
        ("Bad prefix file %s: %s", self->prefix_location, why));
    g_free (why);
    return FALSE;
  }
  GST_INFO_OBJECT (self, "prefix: %" G_GUINT64_FORMAT " essential frames",
      self->prefix_frames);
  return TRUE;
}

static GstStateChangeReturn
gst_twoflow_merge_change_state (GstElement * element,
    GstStateChange transition)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    gboolean ok;

    g_mutex_lock (&self->lock);
    self->error_posted = FALSE;
    gst_twoflow_merge_reset (self);
    gst_twoflow_merge_reset_stats (self);
    gst_flow_combiner_reset (self->flowcombiner);
    self->group_id = gst_util_group_id_next ();
    self->essential.flushing = self->enhanced.flushing = FALSE;
    ok = gst_twoflow_merge_load_prefix (self);
    g_mutex_unlock (&self->lock);
    if (!ok)
      return GST_STATE_CHANGE_FAILURE;
  }

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    g_mutex_lock (&self->lock);
    self->essential.flushing = self->enhanced.flushing = TRUE;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    GstPad *audio;

    g_mutex_lock (&self->lock);
    gst_twoflow_merge_reset (self);
    audio = self->audio_srcpad;
    self->audio_srcpad = NULL;
    g_mutex_unlock (&self->lock);
    /* the next run adds it again if its flows have audio */
    if (audio) {
      gst_flow_combiner_remove_pad (self->flowcombiner, audio);
      gst_element_remove_pad (element, audio);
    }
  }
  return ret;
}

/* Stops the output after the caller posted an error: the task then pauses
 * quietly, so that error is the first and only one of this element, and no
 * EOS follows it. Called without the lock, after posting, so no other
 * thread can fail the flow (and its upstream post a vaguer error) first. */
static void
gst_twoflow_merge_fail (GstTwoflowMerge * self)
{
  g_mutex_lock (&self->lock);
  self->srcresult = GST_FLOW_ERROR;
  self->error_posted = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

static GstFlowReturn
gst_twoflow_merge_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (parent);
  GstTwoflowMergeInput *in = gst_pad_get_element_private (pad);
  GstFlowReturn ret;
  gchar *why = NULL;

  g_mutex_lock (&self->lock);
  if (in->flushing) {
    g_mutex_unlock (&self->lock);
    gst_buffer_unref (buf);
    return GST_FLOW_FLUSHING;
  }
  if (in->eos) {
    g_mutex_unlock (&self->lock);
    gst_buffer_unref (buf);
    return GST_FLOW_EOS;
  }

  gst_twoflow_parser_push (in->parser, buf);
  if (!gst_twoflow_merge_parse (self, in, FALSE, &why)) {
    g_mutex_unlock (&self->lock);
    GST_ELEMENT_ERROR (self, STREAM, DECODE, (NULL),
        ("Invalid data on the %s pad: %s", in->name, why));
    gst_twoflow_merge_fail (self);
    g_free (why);
    return GST_FLOW_ERROR;
  }

  if (in == &self->essential
      && self->essential.queued_bytes + self->audio_queued_bytes >
      self->max_essential_bytes) {
    guint64 queued = self->essential.queued_bytes + self->audio_queued_bytes;
    guint64 max = self->max_essential_bytes;

    g_mutex_unlock (&self->lock);
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, (NULL),
        ("The essential flow is too far ahead: %" G_GUINT64_FORMAT
            " bytes held, max-essential-bytes is %" G_GUINT64_FORMAT, queued,
            max));
    gst_twoflow_merge_fail (self);
    return GST_FLOW_ERROR;
  }

  /* Backpressure on the enhanced flow. */
  while (in == &self->enhanced && !in->flushing
      && in->queued_bytes > self->max_enhanced_bytes
      && self->srcresult == GST_FLOW_OK)
    g_cond_wait (&self->cond, &self->lock);

  ret = in->flushing ? GST_FLOW_FLUSHING : self->srcresult;
  /* The output has finished: take what still comes without complaint. */
  if (ret == GST_FLOW_EOS)
    ret = GST_FLOW_OK;
  g_mutex_unlock (&self->lock);
  return ret;
}

static gboolean
gst_twoflow_merge_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (parent);
  GstTwoflowMergeInput *in = gst_pad_get_element_private (pad);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      const GstStructure *s;
      gboolean packetized = FALSE;

      gst_event_parse_caps (event, &caps);
      s = gst_caps_get_structure (caps, 0);
      gst_structure_get_boolean (s, "packetized", &packetized);
      g_mutex_lock (&self->lock);
      in->packetized = packetized;
      g_mutex_unlock (&self->lock);
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_EOS:{
      gchar *why = NULL;
      gboolean ok;

      g_mutex_lock (&self->lock);
      ok = gst_twoflow_merge_parse (self, in, TRUE, &why);
      if (ok)
        in->eos = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      if (!ok) {
        GST_ELEMENT_ERROR (self, STREAM, DECODE, (NULL),
            ("Invalid data at the end of the %s flow: %s", in->name, why));
        gst_twoflow_merge_fail (self);
        g_free (why);
      }
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      in->flushing = TRUE;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      g_mutex_lock (&self->lock);
      in->flushing = FALSE;
      input_clear (in);
      if (in == &self->essential) {
        g_queue_clear_full (&self->audio, (GDestroyNotify) frame_free);
        self->audio_queued_bytes = 0;
        self->audio_next_in = self->audio_next_out;
        self->essential_end_seen = FALSE;
      }
      g_mutex_unlock (&self->lock);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_STREAM_START:
    case GST_EVENT_SEGMENT:
      /* The output has a stream and a time segment of its own. */
      gst_event_unref (event);
      return TRUE;
    default:
      return gst_pad_event_default (pad, parent, event);
  }
}

static gboolean
gst_twoflow_merge_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (parent);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_LATENCY:{
      gboolean live = FALSE;
      GstClockTime min = 0, max = GST_CLOCK_TIME_NONE;
      GstQuery *q = gst_query_new_latency ();

      /* Live when the enhanced flow is live; add our wait to its latency. */
      if (gst_pad_peer_query (self->enhanced.pad, q))
        gst_query_parse_latency (q, &live, &min, &max);
      gst_query_unref (q);
      g_mutex_lock (&self->lock);
      min += self->latency;
      if (GST_CLOCK_TIME_IS_VALID (max))
        max += self->latency;
      g_mutex_unlock (&self->lock);
      gst_query_set_latency (query, live, min, max);
      return TRUE;
    }
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

static gboolean
gst_twoflow_merge_src_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (parent);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (active) {
    g_mutex_lock (&self->lock);
    self->srcresult = GST_FLOW_OK;
    g_mutex_unlock (&self->lock);
    return gst_pad_start_task (pad, (GstTaskFunction) gst_twoflow_merge_loop,
        self, NULL);
  }
  g_mutex_lock (&self->lock);
  self->srcresult = GST_FLOW_FLUSHING;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return gst_pad_stop_task (pad);
}

static GstTwoflowMergeFrame *
input_pop (GstTwoflowMergeInput * in)
{
  GstTwoflowMergeFrame *f = g_queue_pop_head (&in->frames);

  in->queued_bytes -= gst_buffer_get_size (f->payload);
  return f;
}

static guint32
input_head (GstTwoflowMergeInput * in)
{
  GstTwoflowMergeFrame *f = g_queue_peek_head (&in->frames);

  return f ? f->hdr.frame_no : GST_TWOFLOW_NO_FRAME;
}

/* Whether the flow can no longer deliver frame @n. */
static gboolean
input_passed (GstTwoflowMergeInput * in, guint32 n)
{
  guint32 head = input_head (in);

  return (head != GST_TWOFLOW_NO_FRAME && head > n) || (in->eos
      && head == GST_TWOFLOW_NO_FRAME);
}

/* The type of missing frame @n from the history of a later record. */
static gboolean
gst_twoflow_merge_type_of (GstTwoflowMerge * self, guint32 n,
    GstTwoflowPictureType * type, gboolean * reference)
{
  GstTwoflowMergeInput *inputs[] = { &self->enhanced, &self->essential };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (inputs); i++) {
    GstTwoflowMergeFrame *f = g_queue_peek_head (&inputs[i]->frames);

    if (f && f->hdr.frame_no > n
        && gst_twoflow_history_get (f->hdr.history, f->hdr.frame_no - n, type,
            reference))
      return TRUE;
  }
  if (self->frame_count != GST_TWOFLOW_NO_FRAME && self->frame_count > n)
    return gst_twoflow_history_get (self->end_history, self->frame_count - n,
        type, reference);
  return FALSE;
}

typedef enum {
  NEXT_WAIT,
  NEXT_FRAME,
  NEXT_AUDIO,
  NEXT_MISSING,
  NEXT_EOS,
} NextAction;

/* The time a video frame is ordered by against audio PTS: DTS, else PTS. */
static GstClockTime
frame_time (const GstTwoflowFrameHeader * hdr)
{
  return GST_CLOCK_TIME_IS_VALID (hdr->dts) ? hdr->dts : hdr->pts;
}

/* Decides what happens to video frame next_frame_no; for NEXT_FRAME *out
 * is the frame, still queued at the head of *from. With the lock held. */
static NextAction
gst_twoflow_merge_next_video (GstTwoflowMerge * self,
    GstTwoflowMergeFrame ** out, GstTwoflowMergeInput ** from)
{
  guint32 n;
  gint64 now;

  if (!self->started) {
    GstTwoflowMergeFrame *first = g_queue_peek_head (&self->essential.frames);

    /* Decoding starts at the first essential frame. */
    if (!first)
      return self->essential.eos || (self->essential_end_seen
          && self->frame_count == 0) ? NEXT_EOS : NEXT_WAIT;
    self->started = TRUE;
    self->next_frame_no = first->hdr.frame_no;
    while (input_head (&self->enhanced) < self->next_frame_no) {
      frame_free (input_pop (&self->enhanced));
      self->duplicates++;
    }
  }

  n = self->next_frame_no;
  if (self->frame_count != GST_TWOFLOW_NO_FRAME && n >= self->frame_count)
    return NEXT_EOS;
  if (input_head (&self->essential) == n) {
    *from = &self->essential;
    *out = g_queue_peek_head (&self->essential.frames);
    return NEXT_FRAME;
  }
  if (input_head (&self->enhanced) == n) {
    *from = &self->enhanced;
    *out = g_queue_peek_head (&self->enhanced.frames);
    return NEXT_FRAME;
  }
  if (!input_passed (&self->essential, n))
    return NEXT_WAIT;           /* reliable: it will come */
  if (input_passed (&self->enhanced, n)) {
    /* Both flows ended with nothing left and no end record: done. */
    if (self->essential.eos && self->enhanced.eos
        && g_queue_is_empty (&self->essential.frames)
        && g_queue_is_empty (&self->enhanced.frames)
        && self->frame_count == GST_TWOFLOW_NO_FRAME)
      return NEXT_EOS;
    return NEXT_MISSING;
  }
  if (self->latency == 0)
    return NEXT_WAIT;
  now = g_get_monotonic_time ();
  if (self->wait_start == 0)
    self->wait_start = now;
  if (now - self->wait_start >= (gint64) (self->latency / 1000))
    return NEXT_MISSING;
  return NEXT_WAIT;
}

/* Decides what is output next: a video frame (popped into *out), an audio
 * buffer (popped into *out), a missing frame, the end, or nothing yet.
 * With the lock held. */
static NextAction
gst_twoflow_merge_next (GstTwoflowMerge * self, GstTwoflowMergeFrame ** out)
{
  GstTwoflowMergeFrame *video = NULL, *audio;
  GstTwoflowMergeInput *from = NULL;
  NextAction action = gst_twoflow_merge_next_video (self, &video, &from);

  if (action == NEXT_WAIT || action == NEXT_MISSING)
    return action;

  audio = g_queue_peek_head (&self->audio);
  if (!GST_CLOCK_TIME_IS_VALID (self->segment_start)) {
    /* the first output: both pads' segments start at the earliest time */
    GstClockTime t = video ? frame_time (&video->hdr) : GST_CLOCK_TIME_NONE;

    if (audio && (!GST_CLOCK_TIME_IS_VALID (t) || audio->hdr.pts < t))
      t = audio->hdr.pts;
    if (GST_CLOCK_TIME_IS_VALID (t))
      self->segment_start = t;
  }
  if (audio && (action == NEXT_EOS
          || !GST_CLOCK_TIME_IS_VALID (frame_time (&video->hdr))
          || audio->hdr.pts <= frame_time (&video->hdr))) {
    *out = g_queue_pop_head (&self->audio);
    self->audio_queued_bytes -= gst_buffer_get_size ((*out)->payload);
    return NEXT_AUDIO;
  }
  if (action == NEXT_EOS) {
    /* the rest of the audio is still on its way in the essential flow */
    if (self->audio_caps_string && !self->essential.eos
        && !self->essential_end_seen)
      return NEXT_WAIT;
    return NEXT_EOS;
  }
  *out = input_pop (from);
  return NEXT_FRAME;
}

static gchar *
new_stream_id (const gchar * what)
{
  /* Two upstream streams: gst_pad_create_stream_id() would refuse. */
  return g_strdup_printf ("%08x%08x%08x%08x/twoflowmerge/%s",
      g_random_int (), g_random_int (), g_random_int (), g_random_int (),
      what);
}

/* Pushes stream-start, caps and segment before the first buffer of @pad. */
static gboolean
gst_twoflow_merge_push_headers (GstTwoflowMerge * self, GstPad * pad,
    const gchar * caps_str, GstClockTime start)
{
  GstCaps *caps = caps_str ? gst_caps_from_string (caps_str) : NULL;
  GstSegment segment;
  GstEvent *event;
  gchar *stream_id;
  GstCaps *templ = gst_pad_get_pad_template_caps (pad);
  gboolean ok;

  ok = caps && gst_caps_is_fixed (caps) && gst_caps_can_intersect (caps, templ);
  gst_caps_unref (templ);
  if (!ok) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
        ("The flows carry no usable %s caps record (got '%s')",
            pad == self->srcpad ? "video" : "audio", GST_STR_NULL (caps_str)));
    gst_clear_caps (&caps);
    return FALSE;
  }
  stream_id = new_stream_id (pad == self->srcpad ? "video" : "audio");
  event = gst_event_new_stream_start (stream_id);
  gst_event_set_group_id (event, self->group_id);
  gst_pad_push_event (pad, event);
  g_free (stream_id);
  ok = gst_pad_set_caps (pad, caps);
  gst_caps_unref (caps);
  if (!ok) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("Downstream refused the caps %s", caps_str));
    return FALSE;
  }
  /* running time from the first output timestamp, like a demuxer */
  gst_segment_init (&segment, GST_FORMAT_TIME);
  if (GST_CLOCK_TIME_IS_VALID (start))
    segment.start = segment.position = start;
  gst_pad_push_event (pad, gst_event_new_segment (&segment));
  return TRUE;
}

/* Adds the audio pad once its caps are known. Called without the lock. */
static void
gst_twoflow_merge_add_audio_pad (GstTwoflowMerge * self)
{
  GstPad *pad = gst_pad_new_from_static_template (&audio_template, "audio");

  gst_pad_use_fixed_caps (pad);
  g_mutex_lock (&self->lock);
  self->audio_srcpad = gst_object_ref (pad);
  g_mutex_unlock (&self->lock);
  gst_flow_combiner_add_pad (self->flowcombiner, pad);
  GST_INFO_OBJECT (self, "the flows have audio");
  gst_element_add_pad (GST_ELEMENT (self), pad);
  gst_object_unref (pad);
}

/* Pushes the end on both pads, with the headers first where nothing was
 * pushed yet. */
static void
gst_twoflow_merge_push_eos (GstTwoflowMerge * self)
{
  gboolean need_headers, need_audio_headers;
  gchar *caps_str, *audio_caps_str;
  GstPad *audio;
  GstClockTime start;

  g_mutex_lock (&self->lock);
  gst_twoflow_damage_finish (&self->damage);
  need_headers = self->need_headers && self->caps_string;
  self->need_headers = FALSE;
  audio = self->audio_srcpad ? gst_object_ref (self->audio_srcpad) : NULL;
  need_audio_headers = audio && self->audio_need_headers;
  self->audio_need_headers = FALSE;
  caps_str = g_strdup (self->caps_string);
  audio_caps_str = g_strdup (self->audio_caps_string);
  start = self->segment_start;
  g_mutex_unlock (&self->lock);

  if (need_headers)
    gst_twoflow_merge_push_headers (self, self->srcpad, caps_str, start);
  if (need_audio_headers)
    gst_twoflow_merge_push_headers (self, audio, audio_caps_str, start);
  GST_INFO_OBJECT (self, "all frames done");
  gst_pad_push_event (self->srcpad, gst_event_new_eos ());
  if (audio) {
    gst_pad_push_event (audio, gst_event_new_eos ());
    gst_object_unref (audio);
  }
  g_free (caps_str);
  g_free (audio_caps_str);
}

/* Pushes one audio buffer (taking @f). */
static GstFlowReturn
gst_twoflow_merge_push_audio (GstTwoflowMerge * self, GstTwoflowMergeFrame * f)
{
  GstPad *pad;
  gboolean need_headers;
  gchar *caps_str;
  GstClockTime start;
  GstBuffer *buf = f->payload;
  GstFlowReturn ret;

  pad = gst_object_ref (self->audio_srcpad);
  need_headers = self->audio_need_headers;
  self->audio_need_headers = FALSE;
  caps_str = g_strdup (self->audio_caps_string);
  start = self->segment_start;
  self->audio_next_out = f->hdr.frame_no + 1;
  self->audio_buffers++;
  g_mutex_unlock (&self->lock);

  buf = gst_buffer_make_writable (buf);
  GST_BUFFER_PTS (buf) = f->hdr.pts;
  GST_BUFFER_DTS (buf) = f->hdr.dts;
  GST_BUFFER_DURATION (buf) = f->hdr.duration;
  GST_BUFFER_OFFSET (buf) = f->hdr.frame_no;
  g_free (f);
  if (need_headers
      && !gst_twoflow_merge_push_headers (self, pad, caps_str, start)) {
    gst_buffer_unref (buf);
    ret = GST_FLOW_ERROR;
  } else {
    ret = gst_pad_push (pad, buf);
    ret = gst_flow_combiner_update_pad_flow (self->flowcombiner, pad, ret);
  }
  g_free (caps_str);
  gst_object_unref (pad);
  return ret;
}

static void
gst_twoflow_merge_loop (GstTwoflowMerge * self)
{
  GstTwoflowMergeFrame *f = NULL;
  GstFlowReturn ret = GST_FLOW_OK;
  NextAction action;
  gboolean need_headers, already_posted, no_more_pads;
  gchar *caps_str = NULL;
  GstClockTime start;
  GstBuffer *buf;

  g_mutex_lock (&self->lock);
  while (self->srcresult == GST_FLOW_OK) {
    /* the pad comes when the audio caps do, before anything is output */
    if (self->audio_caps_string && !self->audio_srcpad) {
      g_mutex_unlock (&self->lock);
      gst_twoflow_merge_add_audio_pad (self);
      return;
    }
    if ((action = gst_twoflow_merge_next (self, &f)) != NEXT_WAIT)
      break;
    if (self->latency > 0 && self->started)
      g_cond_wait_until (&self->cond, &self->lock,
          g_get_monotonic_time () + MAX (self->latency / 4000, 1000));
    else
      g_cond_wait (&self->cond, &self->lock);
  }
  if (self->srcresult != GST_FLOW_OK) {
    ret = self->srcresult;
    g_mutex_unlock (&self->lock);
    goto pause;
  }
  if (action != NEXT_AUDIO)
    self->wait_start = 0;

  if (action == NEXT_EOS) {
    no_more_pads = !self->no_more_pads;
    self->no_more_pads = TRUE;
    g_mutex_unlock (&self->lock);
    if (no_more_pads)
      gst_element_no_more_pads (GST_ELEMENT (self));
    gst_twoflow_merge_push_eos (self);
    ret = GST_FLOW_EOS;
    goto pause_set;
  }

  if (action == NEXT_AUDIO) {
    ret = gst_twoflow_merge_push_audio (self, f);
    if (ret == GST_FLOW_OK)
      return;
    goto pause_set;
  }

  if (action == NEXT_MISSING) {
    GstTwoflowPictureType type = GST_TWOFLOW_PICTURE_NONE;
    gboolean reference = TRUE;
    gboolean known = gst_twoflow_merge_type_of (self, self->next_frame_no,
        &type, &reference);

    GST_DEBUG_OBJECT (self, "frame %u missing (%c)", self->next_frame_no,
        known ? gst_twoflow_picture_type_to_char (type) : '?');
    gst_twoflow_damage_missing (&self->damage, self->next_frame_no, type,
        known, reference);
    self->next_frame_no++;
    self->discont = TRUE;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
    return;
  }

  /* NEXT_FRAME */
  self->next_frame_no++;
  g_cond_broadcast (&self->cond);       /* room on the enhanced pad */
  if (!gst_twoflow_damage_frame (&self->damage, &f->hdr)
      && self->drop_dependent) {
    GST_DEBUG_OBJECT (self, "frame %u dropped: broken reference",
        f->hdr.frame_no);
    self->discont = TRUE;
    g_mutex_unlock (&self->lock);
    frame_free (f);
    return;
  }
  need_headers = self->need_headers;
  self->need_headers = FALSE;
  no_more_pads = !self->no_more_pads;
  self->no_more_pads = TRUE;
  caps_str = g_strdup (self->caps_string);
  start = self->segment_start;
  self->output_frames++;
  buf = f->payload;
  f->payload = NULL;
  if (self->discont) {
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    self->discont = FALSE;
  }
  g_mutex_unlock (&self->lock);

  /* whether there is audio is known once the video starts */
  if (no_more_pads)
    gst_element_no_more_pads (GST_ELEMENT (self));

  buf = gst_buffer_make_writable (buf);
  GST_BUFFER_PTS (buf) = f->hdr.pts;
  GST_BUFFER_DTS (buf) = f->hdr.dts;
  GST_BUFFER_DURATION (buf) = f->hdr.duration;
  if (f->hdr.picture_type != GST_TWOFLOW_PICTURE_I)
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
  g_free (f);

  if (need_headers && !gst_twoflow_merge_push_headers (self, self->srcpad,
          caps_str, start)) {
    g_free (caps_str);
    gst_buffer_unref (buf);
    ret = GST_FLOW_ERROR;
    goto pause_set;
  }
  g_free (caps_str);

  ret = gst_pad_push (self->srcpad, buf);
  ret = gst_flow_combiner_update_pad_flow (self->flowcombiner, self->srcpad,
      ret);
  if (ret == GST_FLOW_OK)
    return;

pause_set:
  g_mutex_lock (&self->lock);
  if (self->srcresult == GST_FLOW_OK)
    self->srcresult = ret;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
pause:
  GST_DEBUG_OBJECT (self, "pausing task: %s", gst_flow_get_name (ret));
  gst_pad_pause_task (self->srcpad);
  g_mutex_lock (&self->lock);
  already_posted = self->error_posted;
  g_mutex_unlock (&self->lock);
  if (!already_posted && (ret == GST_FLOW_NOT_LINKED || ret < GST_FLOW_EOS)) {
    GstPad *audio;

    GST_ELEMENT_FLOW_ERROR (self, ret);
    gst_pad_push_event (self->srcpad, gst_event_new_eos ());
    g_mutex_lock (&self->lock);
    audio = self->audio_srcpad ? gst_object_ref (self->audio_srcpad) : NULL;
    g_mutex_unlock (&self->lock);
    if (audio) {
      gst_pad_push_event (audio, gst_event_new_eos ());
      gst_object_unref (audio);
    }
  }
}
