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
 * SECTION:element-twoflowmerge
 * @title: twoflowmerge
 *
 * Re-interleaves the essential and the enhanced flow made by twoflowsplit
 * into the original elementary stream (MPEG-1/2, H.264, H.265 access units
 * or AV1 temporal units, byte for byte as the split's parser gave them),
 * frames in decode order with their PTS, DTS and duration restored and the
 * original caps (from the flows' caps records). Both sink pads take twoflow records packetized (one per buffer,
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
 * The merge itself is GstTwoflowMerger (gst-libs/gst/twoflow/twoflowmerger.h),
 * a sans-IO core; this element feeds it the records of its pads at the
 * element clock's time and pushes what it decides from one streaming task,
 * which sleeps on a clock entry at the core's next wakeup.
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
 * gst-launch-1.0 twoflowmerge name=m \
 *     m.src ! queue ! h264parse ! avdec_h264 ! videoconvert ! autovideosink \
 *     m.audio ! queue ! decodebin ! audioconvert ! autoaudiosink \
 *     filesrc location=essential.twf ! m.essential \
 *     filesrc location=enhanced.twf ! m.enhanced
 * ]| plays the movie and its audio track from the two flow files written
 * by twoflowsplit's second example (H.264 and AAC).
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
#define DEFAULT_MAX_RECORDS          (1 << 18)
#define DEFAULT_PREFIX_LOCATION      NULL
#define DEFAULT_LATENCY              0
#define DEFAULT_DROP_DEPENDENT       TRUE

enum
{
  PROP_0,
  PROP_MAX_ESSENTIAL_BYTES,
  PROP_MAX_ENHANCED_BYTES,
  PROP_MAX_RECORDS,
  PROP_PREFIX_LOCATION,
  PROP_LATENCY,
  PROP_FIRST_HOLD,
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
        "video/x-h264, alignment = (string) au; "
        "video/x-h265, alignment = (string) au; "
        "video/x-av1, alignment = (string) tu"));

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
static gboolean gst_twoflow_merge_set_clock (GstElement * element,
    GstClock * clock);

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
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

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
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstTwoflowMerge:max-records:
   *
   * How many records (frames of both flows and audio buffers) may wait at
   * once. Exceeding it is an element error: the merge's memory is bounded
   * by its properties whatever its input (each record also counts
   * 512 bytes of bookkeeping toward the byte limits, so empty records
   * count too).
   */
  g_object_class_install_property (gobject_class, PROP_MAX_RECORDS,
      g_param_spec_uint ("max-records", "Max records",
          "Most records waiting at once over both flows and audio (error "
          "when exceeded)", 16, G_MAXUINT, DEFAULT_MAX_RECORDS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

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
   * come (and the essential flow has moved past it) before counting it
   * missing, measured on the element's clock (the system clock when it has
   * none). 0 waits until the enhanced flow has moved past the frame or
   * ended, as suits reliable or file input.
   */
  g_object_class_install_property (gobject_class, PROP_LATENCY,
      g_param_spec_uint64 ("latency", "Latency",
          "Nanoseconds to wait for a late enhanced frame before counting it missing (0 = until the flow moves past it)",
          0, G_MAXUINT64, DEFAULT_LATENCY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstTwoflowMerge:first-hold:
   *
   * How long the first frame waits at most for the frame after it, on the
   * element's clock (0: it goes at once). Shown alone it freezes the
   * picture until the next one comes: an H.264 fetch's first I frame came
   * through the essential flow ~0.4 s before the enhanced flow's playout
   * buffer let the second frame go.
   */
  g_object_class_install_property (gobject_class, PROP_FIRST_HOLD,
      g_param_spec_uint64 ("first-hold", "First hold",
          "Nanoseconds the first frame waits at most for the frame after it (0 = not at all)",
          0, G_MAXUINT64, 0,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstTwoflowMerge:drop-dependent:
   *
   * Drop the frames that predict from a missing or dropped reference, so a
   * decoder never sees a broken reference chain.
   */
  g_object_class_install_property (gobject_class, PROP_DROP_DEPENDENT,
      g_param_spec_boolean ("drop-dependent", "Drop dependent",
          "Drop frames that depend on a missing reference until the next intact one",
          DEFAULT_DROP_DEPENDENT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

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
   *   waiting now, payloads plus 512 bytes of bookkeeping per record (the
   *   essential count includes audio)
   * * `queued-records` (guint): records waiting now, of both flows and audio
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
      "twoflow developers <dev@twoflow.invalid>");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, TWOFLOW_DOC_URI_BASE "frame-format.md");

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_change_state);
  element_class->set_clock = GST_DEBUG_FUNCPTR (gst_twoflow_merge_set_clock);

  GST_DEBUG_CATEGORY_INIT (twoflow_merge_debug, "twoflowmerge", 0,
      "two-flow merger");
}

static void
input_init (GstTwoflowMerge * self, GstTwoflowMergeInput * in,
    GstStaticPadTemplate * templ, GstTwoflowMergerFlow flow)
{
  in->name = templ->name_template;
  in->flow = flow;
  in->pad = gst_pad_new_from_static_template (templ, templ->name_template);
  gst_pad_set_chain_function (in->pad,
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_chain));
  gst_pad_set_event_function (in->pad,
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_sink_event));
  gst_pad_set_element_private (in->pad, in);
  gst_element_add_pad (GST_ELEMENT (self), in->pad);
  in->parser = gst_twoflow_parser_new ();
}

/* The merger's configuration from the properties. With the lock held. */
static void
merger_config (GstTwoflowMerge * self, GstTwoflowMergerConfig * config)
{
  gst_twoflow_merger_config_init (config);
  config->max_essential_bytes = self->max_essential_bytes;
  config->max_records = self->max_records;
  config->latency = self->latency;
  config->first_hold = self->first_hold;
  config->drop_dependent = self->drop_dependent;
}

/* A fresh merge; the old one's statistics stay readable until then. With
 * the lock held. */
static void
gst_twoflow_merge_new_merger (GstTwoflowMerge * self)
{
  GstTwoflowMergerConfig config;

  merger_config (self, &config);
  gst_twoflow_merger_free (self->merger);
  self->merger = gst_twoflow_merger_new (&config);
}

static void
gst_twoflow_merge_init (GstTwoflowMerge * self)
{
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);

  input_init (self, &self->essential, &essential_template,
      GST_TWOFLOW_MERGER_ESSENTIAL);
  input_init (self, &self->enhanced, &enhanced_template,
      GST_TWOFLOW_MERGER_ENHANCED);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_activatemode_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_src_activate_mode));
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_src_query));
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
  self->flowcombiner = gst_flow_combiner_new ();
  gst_flow_combiner_add_pad (self->flowcombiner, self->srcpad);

  self->max_essential_bytes = DEFAULT_MAX_ESSENTIAL_BYTES;
  self->max_enhanced_bytes = DEFAULT_MAX_ENHANCED_BYTES;
  self->max_records = DEFAULT_MAX_RECORDS;
  self->prefix_location = g_strdup (DEFAULT_PREFIX_LOCATION);
  self->latency = DEFAULT_LATENCY;
  self->drop_dependent = DEFAULT_DROP_DEPENDENT;
  self->srcresult = GST_FLOW_FLUSHING;
  gst_twoflow_merge_new_merger (self);
}

static void
input_reset (GstTwoflowMergeInput * in)
{
  gst_twoflow_parser_reset (in->parser);
  in->eos = FALSE;
}

static void
gst_twoflow_merge_finalize (GObject * object)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (object);

  gst_twoflow_merger_free (self->merger);
  gst_twoflow_parser_free (self->essential.parser);
  gst_twoflow_parser_free (self->enhanced.parser);
  g_free (self->prefix_location);
  gst_flow_combiner_free (self->flowcombiner);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* The clock the merge runs on: the element's, else the system clock
 * (monotonic), which is what the pipeline uses by default. */
static GstClock *
gst_twoflow_merge_get_clock (GstTwoflowMerge * self)
{
  GstClock *clock = gst_element_get_clock (GST_ELEMENT (self));

  return clock ? clock : gst_system_clock_obtain ();
}

static GstClockTime
gst_twoflow_merge_now (GstTwoflowMerge * self)
{
  GstClock *clock = gst_twoflow_merge_get_clock (self);
  GstClockTime now = gst_clock_get_time (clock);

  gst_object_unref (clock);
  return now;
}

/* Wakes the streaming task (new input, a new deadline, stopping) and the
 * enhanced pad's backpressure. With the lock held. */
static void
gst_twoflow_merge_wake (GstTwoflowMerge * self)
{
  g_cond_broadcast (&self->cond);
  if (self->wait_id)
    gst_clock_id_unschedule (self->wait_id);
}

static gboolean
gst_twoflow_merge_set_clock (GstElement * element, GstClock * clock)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (element);
  gboolean ret = GST_ELEMENT_CLASS (parent_class)->set_clock (element, clock);

  /* a wait on the old clock ends; the task waits again on the new one,
   * and a latency wait in progress starts again on its time */
  g_mutex_lock (&self->lock);
  gst_twoflow_merger_restart_wait (self->merger, gst_twoflow_merge_now (self));
  gst_twoflow_merge_wake (self);
  g_mutex_unlock (&self->lock);
  return ret;
}

static void
gst_twoflow_merge_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (object);
  GstTwoflowMergerConfig config;

  g_mutex_lock (&self->lock);
  switch (prop_id) {
    case PROP_MAX_ESSENTIAL_BYTES:
      self->max_essential_bytes = g_value_get_uint64 (value);
      break;
    case PROP_MAX_ENHANCED_BYTES:
      self->max_enhanced_bytes = g_value_get_uint64 (value);
      break;
    case PROP_MAX_RECORDS:
      self->max_records = g_value_get_uint (value);
      break;
    case PROP_PREFIX_LOCATION:
      g_free (self->prefix_location);
      self->prefix_location = g_value_dup_string (value);
      break;
    case PROP_LATENCY:
      self->latency = g_value_get_uint64 (value);
      break;
    case PROP_FIRST_HOLD:
      self->first_hold = g_value_get_uint64 (value);
      break;
    case PROP_DROP_DEPENDENT:
      self->drop_dependent = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  merger_config (self, &config);
  gst_twoflow_merger_set_config (self->merger, &config);
  gst_twoflow_merge_wake (self);
  g_mutex_unlock (&self->lock);
}

static void
gst_twoflow_merge_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (object);

  g_mutex_lock (&self->lock);
  switch (prop_id) {
    case PROP_MAX_ESSENTIAL_BYTES:
      g_value_set_uint64 (value, self->max_essential_bytes);
      break;
    case PROP_MAX_ENHANCED_BYTES:
      g_value_set_uint64 (value, self->max_enhanced_bytes);
      break;
    case PROP_MAX_RECORDS:
      g_value_set_uint (value, self->max_records);
      break;
    case PROP_PREFIX_LOCATION:
      g_value_set_string (value, self->prefix_location);
      break;
    case PROP_LATENCY:
      g_value_set_uint64 (value, self->latency);
      break;
    case PROP_FIRST_HOLD:
      g_value_set_uint64 (value, self->first_hold);
      break;
    case PROP_DROP_DEPENDENT:
      g_value_set_boolean (value, self->drop_dependent);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_twoflow_merger_get_stats (self->merger));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  g_mutex_unlock (&self->lock);
}

/* Feeds everything complete in @in's parser to the merger. On failure
 * returns FALSE with *why set and *full telling a flow too far ahead from
 * invalid data. With the lock held. */
static gboolean
gst_twoflow_merge_parse (GstTwoflowMerge * self, GstTwoflowMergeInput * in,
    GstTwoflowMergerFlow flow, gboolean at_end, gchar ** why, gboolean * full)
{
  GstTwoflowFrameHeader hdr;
  GstTwoflowParseResult res;
  GstTwoflowMergerResult mres;
  GstBuffer *payload;
  GstClockTime now = gst_twoflow_merge_now (self);

  *full = FALSE;
  while ((res = gst_twoflow_parser_pop (in->parser, &hdr,
              &payload)) == GST_TWOFLOW_PARSE_OK) {
    mres = gst_twoflow_merger_handle_record (self->merger, flow, &hdr,
        payload, now);
    if (mres != GST_TWOFLOW_MERGER_OK) {
      *full = mres == GST_TWOFLOW_MERGER_FULL;
      *why = g_strdup (gst_twoflow_merger_get_error (self->merger));
      return FALSE;
    }
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
  gboolean ok, full;

  if (!self->prefix_location)
    return TRUE;
  if (!g_file_get_contents (self->prefix_location, &contents, &len, &err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, (NULL),
        ("Could not read prefix %s: %s", self->prefix_location, err->message));
    g_error_free (err);
    return FALSE;
  }
  gst_twoflow_parser_push (self->essential.parser,
      gst_buffer_new_wrapped (contents, len));
  ok = gst_twoflow_merge_parse (self, &self->essential,
      GST_TWOFLOW_MERGER_PREFIX, TRUE, &why, &full);
  gst_twoflow_parser_reset (self->essential.parser);
  if (!ok) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE, (NULL),
        ("Bad prefix file %s: %s", self->prefix_location, why));
    g_free (why);
    return FALSE;
  }
  return TRUE;
}

static GstStateChangeReturn
gst_twoflow_merge_change_state (GstElement * element, GstStateChange transition)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    gboolean ok;

    g_mutex_lock (&self->lock);
    self->error_posted = FALSE;
    gst_twoflow_merge_new_merger (self);
    input_reset (&self->essential);
    input_reset (&self->enhanced);
    self->need_headers = self->audio_need_headers = TRUE;
    self->no_more_pads = FALSE;
    self->group_id = gst_util_group_id_next ();
    gst_flow_combiner_reset (self->flowcombiner);
    self->essential.flushing = self->enhanced.flushing = FALSE;
    ok = gst_twoflow_merge_load_prefix (self);
    g_mutex_unlock (&self->lock);
    if (!ok)
      return GST_STATE_CHANGE_FAILURE;
  }

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    g_mutex_lock (&self->lock);
    self->essential.flushing = self->enhanced.flushing = TRUE;
    gst_twoflow_merge_wake (self);
    g_mutex_unlock (&self->lock);
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    GstPad *audio;

    g_mutex_lock (&self->lock);
    /* what waits is dropped; the statistics stay */
    gst_twoflow_merger_flush (self->merger, GST_TWOFLOW_MERGER_ESSENTIAL);
    gst_twoflow_merger_flush (self->merger, GST_TWOFLOW_MERGER_ENHANCED);
    input_reset (&self->essential);
    input_reset (&self->enhanced);
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
  gst_twoflow_merge_wake (self);
  g_mutex_unlock (&self->lock);
}

/* Posts the error of a failed gst_twoflow_merge_parse(). */
static void
gst_twoflow_merge_parse_error (GstTwoflowMerge * self,
    GstTwoflowMergeInput * in, gboolean at_end, gchar * why, gboolean full)
{
  if (full)
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, (NULL), ("%s", why));
  else if (at_end)
    GST_ELEMENT_ERROR (self, STREAM, DECODE, (NULL),
        ("Invalid data at the end of the %s flow: %s", in->name, why));
  else
    GST_ELEMENT_ERROR (self, STREAM, DECODE, (NULL),
        ("Invalid data on the %s pad: %s", in->name, why));
  g_free (why);
  gst_twoflow_merge_fail (self);
}

static GstFlowReturn
gst_twoflow_merge_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstTwoflowMerge *self = GST_TWOFLOW_MERGE (parent);
  GstTwoflowMergeInput *in = gst_pad_get_element_private (pad);
  GstFlowReturn ret;
  gchar *why = NULL;
  gboolean full;

  g_mutex_lock (&self->lock);
  if (in->flushing || in->eos) {
    g_mutex_unlock (&self->lock);
    gst_buffer_unref (buf);
    return in->flushing ? GST_FLOW_FLUSHING : GST_FLOW_EOS;
  }

  if (gst_twoflow_merger_get_error (self->merger)) {
    /* another pad's failure, being posted: that error is the one */
    ret = self->srcresult;
    g_mutex_unlock (&self->lock);
    gst_buffer_unref (buf);
    return ret;
  }
  gst_twoflow_parser_push (in->parser, buf);
  if (!gst_twoflow_merge_parse (self, in, in->flow, FALSE, &why, &full)) {
    g_mutex_unlock (&self->lock);
    gst_twoflow_merge_parse_error (self, in, FALSE, why, full);
    return GST_FLOW_ERROR;
  }
  gst_twoflow_merge_wake (self);

  /* Backpressure on the enhanced flow. */
  while (in == &self->enhanced && !in->flushing
      && gst_twoflow_merger_queued_bytes (self->merger,
          GST_TWOFLOW_MERGER_ENHANCED) > self->max_enhanced_bytes
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
      gboolean packetized = FALSE;

      gst_event_parse_caps (event, &caps);
      gst_structure_get_boolean (gst_caps_get_structure (caps, 0),
          "packetized", &packetized);
      g_mutex_lock (&self->lock);
      in->packetized = packetized;
      g_mutex_unlock (&self->lock);
      break;
    }
    case GST_EVENT_EOS:{
      gchar *why = NULL;
      gboolean ok, full;

      g_mutex_lock (&self->lock);
      ok = gst_twoflow_merger_get_error (self->merger) != NULL
          || gst_twoflow_merge_parse (self, in, in->flow, TRUE, &why, &full);
      if (ok) {
        in->eos = TRUE;
        gst_twoflow_merger_handle_eos (self->merger, in->flow,
            gst_twoflow_merge_now (self));
      }
      gst_twoflow_merge_wake (self);
      g_mutex_unlock (&self->lock);
      if (!ok)
        gst_twoflow_merge_parse_error (self, in, TRUE, why, full);
      break;
    }
    case GST_EVENT_FLUSH_START:
      g_mutex_lock (&self->lock);
      in->flushing = TRUE;
      gst_twoflow_merge_wake (self);
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_FLUSH_STOP:
      g_mutex_lock (&self->lock);
      in->flushing = FALSE;
      input_reset (in);
      gst_twoflow_merger_flush (self->merger, in->flow);
      g_mutex_unlock (&self->lock);
      break;
    case GST_EVENT_STREAM_START:
    case GST_EVENT_SEGMENT:
      /* The output has a stream and a time segment of its own. */
      break;
    default:
      return gst_pad_event_default (pad, parent, event);
  }
  gst_event_unref (event);
  return TRUE;
}

static gboolean
gst_twoflow_merge_src_query (GstPad * pad, GstObject * parent, GstQuery * query)
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
  gst_twoflow_merge_wake (self);
  g_mutex_unlock (&self->lock);
  return gst_pad_stop_task (pad);
}

/* Pushes stream-start, caps and a segment from @start (the first output
 * timestamp: running time from 0, like a demuxer) before the first buffer
 * of @pad. */
static gboolean
gst_twoflow_merge_push_headers (GstTwoflowMerge * self, GstPad * pad,
    const gchar * caps_str, GstClockTime start)
{
  GstCaps *caps = caps_str ? gst_caps_from_string (caps_str) : NULL;
  GstCaps *templ = gst_pad_get_pad_template_caps (pad);
  const gchar *what = pad == self->srcpad ? "video" : "audio";
  GstSegment segment;
  GstEvent *event;
  gchar *stream_id;
  gboolean ok;

  ok = caps && gst_caps_is_fixed (caps) && gst_caps_can_intersect (caps, templ);
  gst_caps_unref (templ);
  if (!ok) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
        ("The flows carry no usable %s caps record (got '%s')", what,
            GST_STR_NULL (caps_str)));
    gst_clear_caps (&caps);
    return FALSE;
  }
  /* Two upstream streams: gst_pad_create_stream_id() would refuse. */
  stream_id = g_strdup_printf ("%08x%08x%08x%08x/twoflowmerge/%s",
      g_random_int (), g_random_int (), g_random_int (), g_random_int (), what);
  event = gst_event_new_stream_start (stream_id);
  g_free (stream_id);
  gst_event_set_group_id (event, self->group_id);
  gst_pad_push_event (pad, event);
  ok = gst_pad_set_caps (pad, caps);
  gst_caps_unref (caps);
  if (!ok) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("Downstream refused the caps %s", caps_str));
    return FALSE;
  }
  gst_segment_init (&segment, GST_FORMAT_TIME);
  if (GST_CLOCK_TIME_IS_VALID (start))
    segment.start = segment.position = start;
  gst_pad_push_event (pad, gst_event_new_segment (&segment));
  return TRUE;
}

/* Pushes @buf (or, with @buf NULL, EOS) on @pad, its headers first if
 * they are still due. Takes @buf. With the lock held; returns without. */
static GstFlowReturn
gst_twoflow_merge_push_unlock (GstTwoflowMerge * self, GstPad * pad,
    GstBuffer * buf)
{
  gboolean audio = pad != self->srcpad;
  gboolean *need = audio ? &self->audio_need_headers : &self->need_headers;
  gboolean headers = *need;
  gchar *caps = NULL;
  GstClockTime start = gst_twoflow_merger_get_segment_start (self->merger);
  GstFlowReturn ret = GST_FLOW_OK;

  if (headers)
    caps = g_strdup (audio ? gst_twoflow_merger_get_audio_caps (self->merger)
        : gst_twoflow_merger_get_caps (self->merger));

  *need = FALSE;
  gst_object_ref (pad);
  g_mutex_unlock (&self->lock);

  /* at EOS without any output, headers only if the flows told the caps */
  if (headers && (buf || caps)
      && !gst_twoflow_merge_push_headers (self, pad, caps, start)) {
    gst_clear_buffer (&buf);
    ret = GST_FLOW_ERROR;
  }
  if (buf) {
    ret = gst_pad_push (pad, buf);
    ret = gst_flow_combiner_update_pad_flow (self->flowcombiner, pad, ret);
  } else if (ret == GST_FLOW_OK) {
    gst_pad_push_event (pad, gst_event_new_eos ());
  }
  gst_object_unref (pad);
  g_free (caps);
  return ret;
}

/* Adds the audio pad. Called without the lock. */
static void
gst_twoflow_merge_add_audio_pad (GstTwoflowMerge * self)
{
  GstPad *pad = gst_pad_new_from_static_template (&audio_template, "audio");

  /* the same latency as the video: both come out of the one wait */
  gst_pad_set_query_function (pad,
      GST_DEBUG_FUNCPTR (gst_twoflow_merge_src_query));
  gst_pad_use_fixed_caps (pad);
  g_mutex_lock (&self->lock);
  self->audio_srcpad = pad;
  g_mutex_unlock (&self->lock);
  gst_flow_combiner_add_pad (self->flowcombiner, pad);
  GST_INFO_OBJECT (self, "the flows have audio");
  gst_element_add_pad (GST_ELEMENT (self), pad);
}

/* Posts no-more-pads once (whether there is audio is known now). With the
 * lock held; returns with it. */
static void
gst_twoflow_merge_no_more_pads (GstTwoflowMerge * self)
{
  if (self->no_more_pads)
    return;
  self->no_more_pads = TRUE;
  g_mutex_unlock (&self->lock);
  gst_element_no_more_pads (GST_ELEMENT (self));
  g_mutex_lock (&self->lock);
}

/* Waits for new input or until @wakeup on the clock. With the lock held. */
static void
gst_twoflow_merge_wait (GstTwoflowMerge * self, GstClock * clock,
    GstClockTime wakeup)
{
  GstClockID id;

  if (!GST_CLOCK_TIME_IS_VALID (wakeup)) {
    g_cond_wait (&self->cond, &self->lock);
    return;
  }
  id = self->wait_id = gst_clock_new_single_shot_id (clock, wakeup);
  g_mutex_unlock (&self->lock);
  gst_clock_id_wait (id, NULL);
  g_mutex_lock (&self->lock);
  self->wait_id = NULL;
  gst_clock_id_unref (id);
}

/* The streaming task: now = clock; poll; push; wait(next_wakeup). */
static void
gst_twoflow_merge_loop (GstTwoflowMerge * self)
{
  GstTwoflowMergerOutput out;
  GstFlowReturn ret = GST_FLOW_OK;
  GstClock *clock;
  GstPad *audio;
  gboolean already_posted;

  memset (&out, 0, sizeof (out));
  g_mutex_lock (&self->lock);
  while (self->srcresult == GST_FLOW_OK) {
    clock = gst_twoflow_merge_get_clock (self);
    gst_twoflow_merger_poll (self->merger, gst_clock_get_time (clock), &out);
    if (out.action == GST_TWOFLOW_MERGER_WAIT)
      gst_twoflow_merge_wait (self, clock,
          gst_twoflow_merger_next_wakeup (self->merger));
    else if (out.action == GST_TWOFLOW_MERGER_ERROR)
      /* the pad that fed the bad record posts the error, then stops us */
      g_cond_wait (&self->cond, &self->lock);
    gst_object_unref (clock);
    if (out.action != GST_TWOFLOW_MERGER_WAIT
        && out.action != GST_TWOFLOW_MERGER_ERROR)
      break;
  }
  if (self->srcresult != GST_FLOW_OK) {
    ret = self->srcresult;
    g_mutex_unlock (&self->lock);
    if (out.buffer)
      gst_buffer_unref (out.buffer);
    goto pause;
  }
  g_cond_broadcast (&self->cond);       /* room on the enhanced pad */

  switch (out.action) {
    case GST_TWOFLOW_MERGER_AUDIO_CAPS:
      g_mutex_unlock (&self->lock);
      gst_twoflow_merge_add_audio_pad (self);
      return;
    case GST_TWOFLOW_MERGER_MISSING:
      GST_DEBUG_OBJECT (self, "frame %u missing (%c, run of %u)",
          out.hdr.frame_no,
          gst_twoflow_picture_type_to_char (out.hdr.picture_type), out.count);
      g_mutex_unlock (&self->lock);
      return;
    case GST_TWOFLOW_MERGER_DROPPED:
      GST_DEBUG_OBJECT (self, "frame %u dropped: broken reference",
          out.hdr.frame_no);
      g_mutex_unlock (&self->lock);
      return;
    case GST_TWOFLOW_MERGER_FRAME:
      gst_twoflow_merge_no_more_pads (self);
      ret = gst_twoflow_merge_push_unlock (self, self->srcpad, out.buffer);
      break;
    case GST_TWOFLOW_MERGER_AUDIO:
      ret = gst_twoflow_merge_push_unlock (self, self->audio_srcpad,
          out.buffer);
      break;
    case GST_TWOFLOW_MERGER_EOS:
      GST_INFO_OBJECT (self, "all frames done");
      gst_twoflow_merge_no_more_pads (self);
      audio = self->audio_srcpad;
      ret = gst_twoflow_merge_push_unlock (self, self->srcpad, NULL);
      if (audio) {
        g_mutex_lock (&self->lock);
        gst_twoflow_merge_push_unlock (self, audio, NULL);
      }
      if (ret == GST_FLOW_OK)
        ret = GST_FLOW_EOS;
      break;
    default:
      g_assert_not_reached ();
      break;
  }
  if (ret == GST_FLOW_OK)
    return;

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
  audio = self->audio_srcpad ? gst_object_ref (self->audio_srcpad) : NULL;
  g_mutex_unlock (&self->lock);
  if (!already_posted && (ret == GST_FLOW_NOT_LINKED || ret < GST_FLOW_EOS)) {
    GST_ELEMENT_FLOW_ERROR (self, ret);
    gst_pad_push_event (self->srcpad, gst_event_new_eos ());
    if (audio)
      gst_pad_push_event (audio, gst_event_new_eos ());
  }
  gst_clear_object (&audio);
}
