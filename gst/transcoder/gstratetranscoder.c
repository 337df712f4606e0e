/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Copyright (C) 2024 twoflow authors
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-ratetranscoder
 * @title: ratetranscoder
 *
 * A rate transcoder for parsed MPEG-1/MPEG-2 video whose output bitrate
 * follows congestion: it decodes each picture and re-encodes it with
 * libavcodec at a quantizer its own rate control picks per frame so the
 * output meets #GstRateTranscoder:target-bitrate. Picture types, frame
 * count, GOP structure and timestamps are kept (the output is a parsed
 * elementary stream in decode order), so a `twoflowsplit` downstream sees
 * the same GOPs. While the target is at or above the input's bitrate,
 * frames pass through byte-exact.
 *
 * The target follows `GstNetworkCongestion` upstream events (see
 * <gst/twoflow/networkcongestion.h>) sent by a transport sink downstream,
 * or forwarded by the application from a bus message with
 * gst_element_send_event(): rexmt, dupack and loss multiply it by
 * #GstRateTranscoder:backoff (at most once per round trip when the event
 * carries an srtt), rate sets it to the event's estimated-bitrate, and it
 * grows back by #GstRateTranscoder:recovery bit/s per second of stream up
 * to #GstRateTranscoder:max-bitrate, never above the source's bitrate.
 * A change applies from the next frame that leaves the decoder. Backoffs
 * that arrive while there is no rate to scale yet (no target-bitrate or
 * max-bitrate set, and the input's rate not measured yet: before the first
 * 12 frames or first GOP are in) are kept — still at most one per srtt —
 * and applied as soon as the input's rate is measured: k of them set the
 * target to backoff^k times that rate (frames pass untouched until then).
 *
 * With #GstRateTranscoder:keep, essential frames (I, or I and P) are
 * emitted byte-identical to the source: the encoder codes them near
 * losslessly only to predict the other frames from, and that output is
 * thrown away. The lowest reachable rate is then the kept frames' own
 * bitrate, reported as floor-bitrate in #GstRateTranscoder:stats.
 *
 * When even the coarsest quantizer (31) would miss the target by more
 * than 25% (the target is below what re-encoding can reach — typically
 * under a sixth to a tenth of the source rate, or below the floor plus the
 * B frames at quantizer 31 with keep), B frames are dropped: they are
 * never references, so this is instant relief. They come back when a
 * quantizer under ~26 would do.
 *
 * Undecodable frames are passed through untouched with a warning.
 *
 * A frame whose source bits are passed whatever the decoder says (no
 * reduction needed, or a type kept by #GstRateTranscoder:keep) leaves
 * while it is being pushed in, before the codecs work on it, as soon as
 * the frames before it in decode order have left: passing through, the
 * element adds no delay. The codecs still get every frame, so re-encoding
 * can start at any frame; a re-encoded frame leaves 4 frames after it came
 * in (the decoder's and the encoder's reordering). Frames still waiting
 * for the codecs when passthrough resumes leave at once, as they came.
 * The LATENCY query answers those 4 frame durations (at the caps' frame
 * rate) plus upstream's, also while passing through: a live pipeline is
 * then ready for re-encoding whenever a congestion event starts it, with
 * no latency change and so no glitch at a switch; a sink that syncs holds
 * the frames that passed early.
 *
 * On each reaction to an event the element posts an element message with
 * the #GstRateTranscoder:stats structure once the first frame coded under
 * the new target has been pushed (its reaction-latency field is then
 * up to date).
 *
 * H.264 (`video/x-h264`, byte-stream or avc, alignment=au; the output
 * keeps the input's format): with keep=none each picture is decoded and
 * re-encoded with libx264 through libavcodec (libopenh264 where libx264 is
 * missing) in average-bitrate mode under a VBV; a target change is handed
 * to x264_encoder_reconfig() before the next picture, without a new IDR.
 * Passing through, the source's buffers leave as they came; re-encoding
 * starts at the next I or P picture with an IDR of the encoder's, and the
 * source's bits come back at its next IDR. #GstRateTranscoder:preset is
 * the x264 preset. The element reports 10 frames of latency for H.264
 * (x264's look-ahead and B frames, the decoder's reordering). With
 * keep=i the I pictures leave byte-identical and, while the target is
 * below the input, the other reference pictures are re-encoded (libx264,
 * one reference, no B frames) at the target less the I pictures' rate and
 * spliced into the source's sequence (its frame_num and POC, a PPS of
 * their own), each run after an I starting with an intra picture; such a
 * buffer carries a #GstTwoflowPictureMeta with the source picture's type.
 * Pictures nothing references (nal_ref_idc = 0) and open-GOP leading
 * pictures are dropped; the GOP's tail only below the codec's floor
 * (0.005 bit per pixel). With keep=ip there are no codecs: pictures
 * nothing references are dropped; essential pictures leave
 * byte-identical, and floor-bitrate is what is never dropped (the
 * input's rate when nothing is disposable). See docs/transcoder.md.
 *
 * Every dropped picture (MPEG-1/2 or H.264) leaves a serialized custom
 * downstream event in its place (gst_twoflow_event_new_dropped():
 * `GstTwoflowDroppedFrame`, its type, reference flag and timestamps), so a
 * twoflowsplit after the element numbers the frames as the split of the
 * unaltered source does.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=250 ! video/x-raw,width=720,height=576,framerate=25/1 ! mpeg2enc format=3 bitrate=6000 ! mpegvideoparse ! ratetranscoder target-bitrate=2000000 max-bitrate=2000000 ! mpegvideoparse ! filesink location=out.m2v
 * ]| Re-encodes a 6 Mbit/s MPEG-2 stream at 2 Mbit/s.
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=100 ! video/x-raw,format=I420,width=1280,height=720,framerate=25/1 ! x264enc bitrate=4000 bframes=3 b-adapt=false ! h264parse ! ratetranscoder target-bitrate=2000000 ! h264parse ! matroskamux ! filesink location=out.mkv
 * ]| Re-encodes a 4 Mbit/s H.264 stream at 2 Mbit/s.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/codecparsers/gstmpegvideoparser.h>
#include <gst/twoflow/networkcongestion.h>
#include <gst/twoflow/twoflowframe.h>
#include <libavutil/video_enc_params.h>
#include <libavutil/opt.h>
#include "gstratetranscoder.h"

GST_DEBUG_CATEGORY (rate_transcoder_debug);
#define GST_CAT_DEFAULT rate_transcoder_debug

#define DEFAULT_TARGET_BITRATE 0
#define DEFAULT_MIN_BITRATE 0
#define DEFAULT_MAX_BITRATE 0
#define DEFAULT_BACKOFF 0.5
#define DEFAULT_RECOVERY 50000
#define DEFAULT_EVENTS GST_NETWORK_CONGESTION_ALL
#define DEFAULT_KEEP GST_TWOFLOW_RATE_CONTROL_KEEP_NONE

/* Longest run of B frames the encoder is set up for; each one is a frame
 * of encoder delay. Longer runs make the element pass the stream through. */
#define RT_MAX_B_FRAMES 3

/* Frames a re-encoded picture spends in the codecs: the encoder buffers
 * RT_MAX_B_FRAMES pictures to reorder them, the decoder holds a reference
 * until the next one arrives and a B picture until the encoder has its
 * backward reference; whatever the GOP, a picture leaves when the frame
 * RT_REENCODE_DELAY after it in decode order arrives. The latency the
 * element reports. */
#define RT_REENCODE_DELAY (RT_MAX_B_FRAMES + 1)

enum
{
  PROP_0,
  PROP_TARGET_BITRATE,
  PROP_MIN_BITRATE,
  PROP_MAX_BITRATE,
  PROP_BACKOFF,
  PROP_RECOVERY,
  PROP_EVENTS,
  PROP_KEEP,
  PROP_PRESET,
  PROP_STATS,
};

#define DEFAULT_PRESET "veryfast"

/* the output side of a frame */
typedef enum
{
  FRAME_DECODING,               /* its decision waits for the decoder */
  FRAME_ENCODING,               /* its output waits for the encoder */
  FRAME_READY,                  /* decision known and output (if any) ready */
} FrameState;

/* A frame is pushed once it is READY and every frame before it has been
 * pushed, but kept until the decoder has returned it too, so that its
 * picture still reaches the encoder (decided at input, a passed frame
 * leaves before it is decoded). */
typedef struct
{
  guint64 index;
  GstBuffer *in;
  GstBuffer *out;               /* re-encoded picture */
  GstTwoflowPictureType type;
  gboolean has_picture;
  FrameState state;
  gboolean in_decoder;          /* the decoder still owes its picture */
  gboolean pushed;              /* pushed or dropped: output side done */
  GstTwoflowRateControlDecision decision;
  gdouble qsrc;
  GstClockTime pts;             /* synthesized when the input has none */
} RtFrame;

#define MPEG_CAPS "video/mpeg, mpegversion = (int) { 1, 2 }, " \
    "systemstream = (boolean) false, parsed = (boolean) true; " \
    "video/x-h264, stream-format = (string) { byte-stream, avc }, " \
    "alignment = (string) au"

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (MPEG_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (MPEG_CAPS));

#define gst_rate_transcoder_parent_class parent_class
G_DEFINE_TYPE (GstRateTranscoder, gst_rate_transcoder, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (ratetranscoder, "ratetranscoder", GST_RANK_NONE,
    GST_TYPE_RATE_TRANSCODER);

GType
gst_rate_transcoder_keep_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {GST_TWOFLOW_RATE_CONTROL_KEEP_NONE, "Re-encode every frame type", "none"},
    {GST_TWOFLOW_RATE_CONTROL_KEEP_I, "Keep I frames byte-identical", "i"},
    {GST_TWOFLOW_RATE_CONTROL_KEEP_IP, "Keep I and P frames byte-identical",
          "ip"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstRateTranscoderKeep", values);
    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

static void gst_rate_transcoder_finalize (GObject * object);
static void gst_rate_transcoder_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_rate_transcoder_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstStateChangeReturn gst_rate_transcoder_change_state (GstElement *
    element, GstStateChange transition);
static GstFlowReturn gst_rate_transcoder_chain (GstPad * pad,
    GstObject * parent, GstBuffer * buf);
static gboolean gst_rate_transcoder_sink_event (GstPad * pad,
    GstObject * parent, GstEvent * event);
static gboolean gst_rate_transcoder_src_event (GstPad * pad,
    GstObject * parent, GstEvent * event);
static gboolean gst_rate_transcoder_src_query (GstPad * pad,
    GstObject * parent, GstQuery * query);

static void
gst_rate_transcoder_class_init (GstRateTranscoderClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (rate_transcoder_debug, "ratetranscoder", 0,
      "MPEG rate transcoder");

  gobject_class->finalize = gst_rate_transcoder_finalize;
  gobject_class->set_property = gst_rate_transcoder_set_property;
  gobject_class->get_property = gst_rate_transcoder_get_property;

  /**
   * GstRateTranscoder:target-bitrate:
   *
   * Output bitrate to meet, in bit/s; 0 means the input's (pass through).
   * Congestion events change it and it reads back the current value.
   */
  g_object_class_install_property (gobject_class, PROP_TARGET_BITRATE,
      g_param_spec_uint64 ("target-bitrate", "Target bitrate",
          "Output bitrate in bit/s (0 = the input's); follows congestion events",
          0, G_MAXUINT64, DEFAULT_TARGET_BITRATE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRateTranscoder:min-bitrate:
   *
   * Backoff never takes the target below this (bit/s, 0 = no bound).
   */
  g_object_class_install_property (gobject_class, PROP_MIN_BITRATE,
      g_param_spec_uint64 ("min-bitrate", "Minimum bitrate",
          "Lowest target congestion can set, in bit/s (0 = no bound)",
          0, G_MAXUINT64, DEFAULT_MIN_BITRATE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRateTranscoder:max-bitrate:
   *
   * Recovery and rate events never take the target above this (bit/s,
   * 0 = the input's bitrate). The source's bitrate is always a bound.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_BITRATE,
      g_param_spec_uint64 ("max-bitrate", "Maximum bitrate",
          "Highest target recovery and rate events can set, in bit/s "
          "(0 = the input's)", 0, G_MAXUINT64, DEFAULT_MAX_BITRATE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRateTranscoder:backoff:
   *
   * Factor the target is multiplied by on rexmt, dupack and loss events.
   */
  g_object_class_install_property (gobject_class, PROP_BACKOFF,
      g_param_spec_double ("backoff", "Backoff",
          "Multiplicative decrease on rexmt/dupack/loss events",
          0.0, 1.0, DEFAULT_BACKOFF,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRateTranscoder:recovery:
   *
   * Additive increase of the target, in bit/s per second of stream time,
   * up to max-bitrate. 0 disables recovery.
   */
  g_object_class_install_property (gobject_class, PROP_RECOVERY,
      g_param_spec_uint64 ("recovery", "Recovery",
          "Additive increase in bit/s per second without congestion",
          0, G_MAXUINT64, DEFAULT_RECOVERY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRateTranscoder:events:
   *
   * Which GstNetworkCongestion event types to react to.
   */
  g_object_class_install_property (gobject_class, PROP_EVENTS,
      g_param_spec_flags ("events", "Events",
          "GstNetworkCongestion event types to react to",
          GST_TYPE_NETWORK_CONGESTION_TYPE, DEFAULT_EVENTS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRateTranscoder:keep:
   *
   * Frames emitted byte-identical to the source whatever the target: none,
   * I frames, or I and P frames (only B frames are re-encoded). Their
   * bitrate is the floor of the reachable rate.
   */
  g_object_class_install_property (gobject_class, PROP_KEEP,
      g_param_spec_enum ("keep", "Keep",
          "Essential frames kept byte-identical to the source",
          GST_TYPE_RATE_TRANSCODER_KEEP, DEFAULT_KEEP,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRateTranscoder:preset:
   *
   * H.264 only: the x264 preset the re-encoding uses (keep=none), e.g.
   * ultrafast, veryfast, medium. Applies from the next encoder opened.
   */
  g_object_class_install_property (gobject_class, PROP_PRESET,
      g_param_spec_string ("preset", "x264 preset",
          "H.264: x264 preset of the re-encoding (keep=none)", DEFAULT_PRESET,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRateTranscoder:stats:
   *
   * An `application/x-ratetranscoder-stats` structure:
   *
   * * input-bitrate (guint64): bit/s of the input over the last ~1 s of whole GOPs
   * * output-bitrate (guint64): bit/s of the output over the same number of frames
   * * target-bitrate (guint64): effective target now (0 before any input)
   * * floor-bitrate (guint64): bit/s of the frames kept by #GstRateTranscoder:keep
   * * lowest-bitrate (guint64): MPEG-1/2: the lowest target met without
   *   dropping B frames, from the rate model (0: not known, or H.264)
   * * quantizer (gdouble): quantizer of the last re-encoded frame (0 none
   *   yet; H.264: x264's QP)
   * * mean-quantizer (gdouble): mean over the re-encoded frames of the window
   * * passthrough (gboolean): no reduction needed, frames pass untouched
   * * dropping-b (gboolean): B frames are being dropped
   * * gop-length (guint): frames between the last two I frames
   * * frames-in, frames-out, frames-passed, frames-reencoded, frames-dropped (guint64)
   * * frames-dropped-i, frames-dropped-p, frames-dropped-b (guint64): dropped
   *   frames by picture type (H.264 keep=i|ip drops P and B pictures)
   * * dropping-tail (gboolean): H.264 keep=i: the GOP's tail is being dropped
   * * disposable-bitrate (guint64): H.264 keep=i|ip: bit/s of the pictures
   *   nothing references (nal_ref_idc = 0); floor-bitrate is then the
   *   rate of what is never dropped (the input's when nothing is disposable)
   * * codec (gchararray): "mpeg" or "h264"
   * * decode-errors (guint64): frames passed through because they did not decode
   * * events (guint64): congestion events reacted to or counted
   * * events-rexmt, events-dupack, events-recovered, events-loss, events-rate (guint64)
   * * events-ignored (guint64): not in #GstRateTranscoder:events, or a
   *   backoff within one srtt of the previous one
   * * backoffs-pending (guint): backoffs (rexmt, dupack, loss) that came
   *   while there was no rate to scale (no target, input rate not measured
   *   yet); they are counted under events, not events-ignored, and applied
   *   together once the input's rate is measured
   * * reaction-latency (guint64): ns from the last rate change to the push
   *   of the first frame coded under it
   * * max-reaction-latency (guint64): largest of those
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Rate and reaction statistics (application/x-ratetranscoder-stats)",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "MPEG and H.264 rate transcoder", "Codec/Converter/Video",
      "Re-encodes MPEG-1/2 and H.264 video (or drops disposable H.264 "
      "pictures) at a bitrate that follows congestion events",
      "twoflow developers <dev@twoflow.invalid>");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, TWOFLOW_DOC_URI_BASE "transcoder.md");
  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_rate_transcoder_change_state);

  gst_type_mark_as_plugin_api (GST_TYPE_RATE_TRANSCODER_KEEP, 0);
}

static void
gst_rate_transcoder_init (GstRateTranscoder * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_rate_transcoder_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_rate_transcoder_sink_event));
  GST_PAD_SET_PROXY_CAPS (self->sinkpad);
  GST_PAD_SET_PROXY_ALLOCATION (self->sinkpad);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_event_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_rate_transcoder_src_event));
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_rate_transcoder_src_query));
  GST_PAD_SET_PROXY_CAPS (self->srcpad);
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->min_bitrate = DEFAULT_MIN_BITRATE;
  self->max_bitrate = DEFAULT_MAX_BITRATE;
  self->backoff = DEFAULT_BACKOFF;
  self->recovery = DEFAULT_RECOVERY;
  self->events = DEFAULT_EVENTS;
  self->keep = DEFAULT_KEEP;
  self->preset = g_strdup (DEFAULT_PRESET);
  self->max_passed_pts = GST_CLOCK_TIME_NONE;
  self->last_dts_out = GST_CLOCK_TIME_NONE;
  self->leading_before = GST_CLOCK_TIME_NONE;
  self->rc = gst_twoflow_rate_control_new ();
  /* MPEG-1 and MPEG-2 pictures parse alike */
  self->picture_parser =
      gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_MPEG2);
  gst_twoflow_rate_control_set_target (self->rc, DEFAULT_TARGET_BITRATE);
  gst_twoflow_rate_control_set_limits (self->rc, self->min_bitrate,
      self->max_bitrate);
  gst_twoflow_rate_control_set_backoff (self->rc, self->backoff);
  gst_twoflow_rate_control_set_recovery (self->rc, self->recovery);
  gst_twoflow_rate_control_set_events (self->rc, self->events);
  gst_twoflow_rate_control_set_keep (self->rc, self->keep);

  self->mpegversion = 2;
  self->fps_n = 25;
  self->fps_d = 1;
  self->latency = gst_util_uint64_scale (RT_REENCODE_DELAY * GST_SECOND,
      self->fps_d, self->fps_n);
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
  g_queue_init (&self->frames);
  self->kr_last_i_pts = GST_CLOCK_TIME_NONE;
  self->kr_intra = TRUE;
}

static void
rt_frame_free (RtFrame * f)
{
  gst_clear_buffer (&f->in);
  gst_clear_buffer (&f->out);
  g_free (f);
}

static void
gst_rate_transcoder_finalize (GObject * object)
{
  GstRateTranscoder *self = GST_RATE_TRANSCODER (object);

  g_queue_clear_full (&self->frames, (GDestroyNotify) rt_frame_free);
  rt_h264_reset (self);
  gst_twoflow_rate_control_free (self->rc);
  gst_twoflow_picture_parser_free (self->picture_parser);
  g_clear_pointer (&self->param_sets, g_bytes_unref);
  g_clear_pointer (&self->dec_extradata, g_bytes_unref);
  g_free (self->preset);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* --- properties ------------------------------------------------------- */

GstStructure *
gst_rate_transcoder_stats (GstRateTranscoder * self)
{
  GstTwoflowRateControlStats s;
  guint64 events;
  GstStructure *st;

  GST_OBJECT_LOCK (self);
  gst_twoflow_rate_control_get_stats (self->rc, &s);
  events = s.events[0] + s.events[1] + s.events[2] + s.events[3] + s.events[4];
  st = gst_structure_new ("application/x-ratetranscoder-stats",
      "input-bitrate", G_TYPE_UINT64, (guint64) s.input_bitrate,
      "output-bitrate", G_TYPE_UINT64, (guint64) s.output_bitrate,
      "target-bitrate", G_TYPE_UINT64, (guint64) s.target_bitrate,
      "floor-bitrate", G_TYPE_UINT64, (guint64) s.floor_bitrate,
      "lowest-bitrate", G_TYPE_UINT64, (guint64) s.lowest_bitrate,
      "quantizer", G_TYPE_DOUBLE, s.quantizer,
      "mean-quantizer", G_TYPE_DOUBLE, s.mean_quantizer,
      "passthrough", G_TYPE_BOOLEAN, s.passthrough,
      "dropping-b", G_TYPE_BOOLEAN, s.dropping_b,
      "gop-length", G_TYPE_UINT, s.gop_length,
      "frames-in", G_TYPE_UINT64, s.frames_in,
      "frames-out", G_TYPE_UINT64, self->frames_out,
      "frames-passed", G_TYPE_UINT64, s.frames_passed,
      "frames-reencoded", G_TYPE_UINT64, s.frames_encoded,
      "frames-dropped", G_TYPE_UINT64, s.frames_dropped,
      "frames-dropped-i", G_TYPE_UINT64, s.frames_dropped_by_type[0],
      "frames-dropped-p", G_TYPE_UINT64, s.frames_dropped_by_type[1],
      "frames-dropped-b", G_TYPE_UINT64, s.frames_dropped_by_type[2],
      "dropping-tail", G_TYPE_BOOLEAN, s.dropping_tail,
      "disposable-bitrate", G_TYPE_UINT64, (guint64) s.disposable_bitrate,
      "codec", G_TYPE_STRING, self->h264 ? "h264" : "mpeg",
      "decode-errors", G_TYPE_UINT64, self->decode_errors,
      "events", G_TYPE_UINT64, events,
      "events-rexmt", G_TYPE_UINT64, s.events[0],
      "events-dupack", G_TYPE_UINT64, s.events[1],
      "events-recovered", G_TYPE_UINT64, s.events[2],
      "events-loss", G_TYPE_UINT64, s.events[3],
      "events-rate", G_TYPE_UINT64, s.events[4],
      "events-ignored", G_TYPE_UINT64, s.events_ignored,
      "backoffs-pending", G_TYPE_UINT, s.pending_backoffs,
      "reaction-latency", G_TYPE_UINT64, self->last_latency,
      "max-reaction-latency", G_TYPE_UINT64, self->max_latency, NULL);
  GST_OBJECT_UNLOCK (self);
  return st;
}

/* A frame decided under @generation was pushed: if it is the first one
 * coded under a pending rate change, that change's reaction latency is
 * known; post the stats. */
void
gst_rate_transcoder_note_reaction (GstRateTranscoder * self, guint generation)
{
  gboolean post = FALSE;

  GST_OBJECT_LOCK (self);
  if (self->pending_since && generation >= self->pending_generation) {
    self->last_latency = (g_get_monotonic_time () - self->pending_since) * 1000;
    self->max_latency = MAX (self->max_latency, self->last_latency);
    self->pending_since = 0;
    post = TRUE;
  }
  GST_OBJECT_UNLOCK (self);
  if (post)
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self),
            gst_rate_transcoder_stats (self)));
}

static void
gst_rate_transcoder_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstRateTranscoder *self = GST_RATE_TRANSCODER (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TARGET_BITRATE:
      gst_twoflow_rate_control_set_target (self->rc,
          g_value_get_uint64 (value));
      break;
    case PROP_MIN_BITRATE:
      self->min_bitrate = g_value_get_uint64 (value);
      gst_twoflow_rate_control_set_limits (self->rc, self->min_bitrate,
          self->max_bitrate);
      break;
    case PROP_MAX_BITRATE:
      self->max_bitrate = g_value_get_uint64 (value);
      gst_twoflow_rate_control_set_limits (self->rc, self->min_bitrate,
          self->max_bitrate);
      break;
    case PROP_BACKOFF:
      self->backoff = g_value_get_double (value);
      gst_twoflow_rate_control_set_backoff (self->rc, self->backoff);
      break;
    case PROP_RECOVERY:
      self->recovery = g_value_get_uint64 (value);
      gst_twoflow_rate_control_set_recovery (self->rc, self->recovery);
      break;
    case PROP_EVENTS:
      self->events = g_value_get_flags (value);
      gst_twoflow_rate_control_set_events (self->rc, self->events);
      break;
    case PROP_KEEP:
      self->keep = g_value_get_enum (value);
      gst_twoflow_rate_control_set_keep (self->rc, self->keep);
      break;
    case PROP_PRESET:
      g_free (self->preset);
      self->preset = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_rate_transcoder_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstRateTranscoder *self = GST_RATE_TRANSCODER (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, gst_rate_transcoder_stats (self));
    return;
  }

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TARGET_BITRATE:
      g_value_set_uint64 (value,
          gst_twoflow_rate_control_get_target (self->rc));
      break;
    case PROP_MIN_BITRATE:
      g_value_set_uint64 (value, self->min_bitrate);
      break;
    case PROP_MAX_BITRATE:
      g_value_set_uint64 (value, self->max_bitrate);
      break;
    case PROP_BACKOFF:
      g_value_set_double (value, self->backoff);
      break;
    case PROP_RECOVERY:
      g_value_set_uint64 (value, self->recovery);
      break;
    case PROP_EVENTS:
      g_value_set_flags (value, self->events);
      break;
    case PROP_KEEP:
      g_value_set_enum (value, self->keep);
      break;
    case PROP_PRESET:
      g_value_set_string (value, self->preset);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* --- codecs ----------------------------------------------------------- */

static void
close_codecs (GstRateTranscoder * self)
{
  avcodec_free_context (&self->dec);
  avcodec_free_context (&self->enc);
  av_packet_free (&self->pkt);
}

static gboolean
open_decoder (GstRateTranscoder * self)
{
  const AVCodec *codec;

  codec = avcodec_find_decoder (self->mpegversion == 1 ?
      AV_CODEC_ID_MPEG1VIDEO : AV_CODEC_ID_MPEG2VIDEO);
  if (!codec)
    return FALSE;
  self->dec = avcodec_alloc_context3 (codec);
  if (!self->dec)
    return FALSE;
  self->dec->thread_count = 1;
  /* the source quantizer per macroblock feeds the rate model */
  self->dec->export_side_data |= AV_CODEC_EXPORT_DATA_VIDEO_ENC_PARAMS;
  if (avcodec_open2 (self->dec, codec, NULL) < 0) {
    avcodec_free_context (&self->dec);
    return FALSE;
  }
  self->pkt = av_packet_alloc ();
  return self->pkt != NULL;
}

static gboolean
open_encoder (GstRateTranscoder * self, const AVFrame * f)
{
  const AVCodec *codec;
  AVCodecContext *c;
  gint i;

  codec = avcodec_find_encoder (self->mpegversion == 1 ?
      AV_CODEC_ID_MPEG1VIDEO : AV_CODEC_ID_MPEG2VIDEO);
  if (!codec)
    return FALSE;
  if (f->format != AV_PIX_FMT_YUV420P &&
      !(self->mpegversion == 2 && f->format == AV_PIX_FMT_YUV422P))
    return FALSE;
  c = avcodec_alloc_context3 (codec);
  if (!c)
    return FALSE;
  c->width = f->width;
  c->height = f->height;
  c->pix_fmt = f->format;
  c->sample_aspect_ratio = f->sample_aspect_ratio;
  c->framerate = (AVRational) {
  self->fps_n, self->fps_d};
  c->time_base = (AVRational) {
  self->fps_d, self->fps_n};
  c->color_primaries = f->color_primaries;
  c->color_trc = f->color_trc;
  c->colorspace = f->colorspace;
  c->thread_count = 1;
  /* our rate control: one quantizer per frame, from AVFrame.quality */
  c->flags |= AV_CODEC_FLAG_QSCALE;
  c->global_quality = GST_TWOFLOW_RATE_CONTROL_Q_KEEP * FF_QP2LAMBDA;
  c->qmin = GST_TWOFLOW_RATE_CONTROL_Q_MIN;
  c->qmax = GST_TWOFLOW_RATE_CONTROL_Q_MAX;
  /* picture types are forced per frame; the encoder must never insert an
   * I frame of its own nor pick its own B frame count */
  c->max_b_frames = RT_MAX_B_FRAMES;
  c->gop_size = 600;
  av_opt_set_int (c->priv_data, "b_strategy", 0, 0);
  if (self->mpegversion == 2 && f->interlaced_frame)
    c->flags |= AV_CODEC_FLAG_INTERLACED_DCT | AV_CODEC_FLAG_INTERLACED_ME;
  /* the source's matrices, so re-encoded pictures decode right after a
   * kept sequence header */
  if (self->custom_intra) {
    c->intra_matrix = av_malloc (64 * sizeof (uint16_t));
    for (i = 0; i < 64; i++)
      c->intra_matrix[i] = self->intra_matrix[i];
  }
  if (self->custom_inter) {
    c->inter_matrix = av_malloc (64 * sizeof (uint16_t));
    for (i = 0; i < 64; i++)
      c->inter_matrix[i] = self->inter_matrix[i];
  }
  if (avcodec_open2 (c, codec, NULL) < 0) {
    avcodec_free_context (&c);
    return FALSE;
  }
  self->enc = c;
  return TRUE;
}

/* --- frame queue ------------------------------------------------------ */

static RtFrame *
find_frame (GstRateTranscoder * self, guint64 index)
{
  RtFrame *head = g_queue_peek_head (&self->frames);

  if (!head || index < head->index || index >= self->next_index)
    return NULL;
  return g_queue_peek_nth (&self->frames, index - head->index);
}

static void
frame_decided (GstRateTranscoder * self, RtFrame * f,
    GstTwoflowRateControlAction action)
{
  f->decision.action = action;
  f->state = FRAME_READY;
}

/* Give up re-encoding: everything not yet decided passes through. */
static void
go_broken (GstRateTranscoder * self)
{
  GList *l;

  self->broken = TRUE;
  for (l = self->frames.head; l; l = l->next) {
    RtFrame *f = l->data;

    if (f->pushed)
      continue;
    if (f->state != FRAME_READY)
      frame_decided (self, f, GST_TWOFLOW_RATE_CONTROL_PASS);
    else if (f->decision.action == GST_TWOFLOW_RATE_CONTROL_ENCODE && !f->out)
      frame_decided (self, f, GST_TWOFLOW_RATE_CONTROL_PASS);
  }
  avcodec_free_context (&self->enc);
}

/* Forget frames that are both pushed and returned by the decoder (or,
 * should the decoder hold on to one for far too long, pushed at all). */
static void
release_done (GstRateTranscoder * self)
{
  RtFrame *f;

  while ((f = g_queue_peek_head (&self->frames)) && f->pushed &&
      (!f->in_decoder || self->next_index - f->index > RT_MAP_SIZE / 2)) {
    g_queue_pop_head (&self->frames);
    rt_frame_free (f);
  }
}

/* Push, in decode order, every frame whose output is ready. */
static GstFlowReturn
push_ready (GstRateTranscoder * self)
{
  GstFlowReturn ret = GST_FLOW_OK;
  RtFrame *f;

  while (ret == GST_FLOW_OK && (f = find_frame (self, self->next_out)) &&
      f->state == FRAME_READY) {
    GstBuffer *out = NULL;
    GstEvent *dropped = NULL;
    GstMessage *msg = NULL;
    gsize in_size = gst_buffer_get_size (f->in);
    gsize out_size = f->out ? gst_buffer_get_size (f->out) : 0;
    GstClockTime dur = GST_BUFFER_DURATION (f->in);

    switch (f->decision.action) {
      case GST_TWOFLOW_RATE_CONTROL_PASS:
        out = gst_buffer_ref (f->in);
        break;
      case GST_TWOFLOW_RATE_CONTROL_ENCODE:
        out = f->out;
        f->out = NULL;
        gst_buffer_copy_into (out, f->in, GST_BUFFER_COPY_FLAGS |
            GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
        break;
      case GST_TWOFLOW_RATE_CONTROL_DROP:
        break;
    }
    if (out && !GST_BUFFER_PTS_IS_VALID (out)
        && GST_CLOCK_TIME_IS_VALID (f->pts)) {
      out = gst_buffer_make_writable (out);
      GST_BUFFER_PTS (out) = f->pts;
    }

    GST_OBJECT_LOCK (self);
    gst_twoflow_rate_control_handle_output (self->rc, f->type, &f->decision,
        in_size, f->qsrc, out_size,
        GST_CLOCK_TIME_IS_VALID (dur) ? dur : gst_util_uint64_scale (GST_SECOND,
            self->fps_d, self->fps_n));
    if (self->pending_since && f->has_picture
        && f->decision.generation >= self->pending_generation) {
      self->last_latency =
          (g_get_monotonic_time () - self->pending_since) * 1000;
      self->max_latency = MAX (self->max_latency, self->last_latency);
      self->pending_since = 0;
      msg = (GstMessage *) 1;   /* post once unlocked */
    }
    if (out)
      self->frames_out++;
    GST_OBJECT_UNLOCK (self);
    if (msg)
      gst_element_post_message (GST_ELEMENT (self),
          gst_message_new_element (GST_OBJECT (self),
              gst_rate_transcoder_stats (self)));

    GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT " type %d action %d q %d "
        "%" G_GSIZE_FORMAT " -> %" G_GSIZE_FORMAT, f->index, f->type,
        f->decision.action, f->decision.q, in_size,
        out ? gst_buffer_get_size (out) : 0);
    /* the frame may stay until the decoder returns it: only its type and
     * decision are needed then */
    f->pushed = TRUE;
    /* a dropped picture leaves an event in its place: twoflowsplit still
     * numbers the frames after it as the essential flow's split does */
    if (f->decision.action == GST_TWOFLOW_RATE_CONTROL_DROP && f->has_picture)
      dropped = gst_twoflow_event_new_dropped (f->type,
          f->type != GST_TWOFLOW_PICTURE_B, f->pts,
          GST_BUFFER_DTS (f->in), dur);
    gst_clear_buffer (&f->in);
    gst_clear_buffer (&f->out);
    self->next_out++;

    if (out) {
      if (self->discont) {
        out = gst_buffer_make_writable (out);
        GST_BUFFER_FLAG_SET (out, GST_BUFFER_FLAG_DISCONT);
        self->discont = FALSE;
      } else if (GST_BUFFER_FLAG_IS_SET (out, GST_BUFFER_FLAG_DISCONT)) {
        out = gst_buffer_make_writable (out);
        GST_BUFFER_FLAG_UNSET (out, GST_BUFFER_FLAG_DISCONT);
      }
      ret = gst_pad_push (self->srcpad, out);
    } else if (dropped) {
      gst_pad_push_event (self->srcpad, dropped);
    }
  }
  release_done (self);
  return ret;
}

/* No reduction is needed any more: the frames still waiting for the codecs
 * leave as they came, now, instead of holding back the passthrough frames
 * behind them (they were to be re-encoded; the encoder still gets them). */
static void
release_pending (GstRateTranscoder * self)
{
  guint64 i;

  for (i = self->next_out; i < self->next_index; i++) {
    RtFrame *f = find_frame (self, i);

    if (f && f->state != FRAME_READY) {
      GST_DEBUG_OBJECT (self, "frame %" G_GUINT64_FORMAT " passed instead",
          f->index);
      GST_OBJECT_LOCK (self);
      f->decision = gst_twoflow_rate_control_pass_decision (self->rc, f->type,
          gst_buffer_get_size (f->in));
      GST_OBJECT_UNLOCK (self);
      f->state = FRAME_READY;
    }
  }
}

static void
receive_packets (GstRateTranscoder * self)
{
  AVPacket *pkt = self->pkt;

  while (self->enc && avcodec_receive_packet (self->enc, pkt) == 0) {
    const RtEncEntry *e = &self->enc_map[(guint64) pkt->pts % RT_MAP_SIZE];
    RtFrame *f = find_frame (self, e->index);
    gsize n;
    guint8 *sd = av_packet_get_side_data (pkt, AV_PKT_DATA_QUALITY_STATS, &n);
    /* indexed by GstTwoflowPictureType */
    static const gint av_types[] = { AV_PICTURE_TYPE_NONE, AV_PICTURE_TYPE_I,
      AV_PICTURE_TYPE_P, AV_PICTURE_TYPE_B
    };

    /* checked for every picture, also those whose packet is discarded */
    if (sd && n >= 5 && sd[4] != av_types[e->type]) {
      /* the encoder did not follow the forced type: structures differ */
      GST_ELEMENT_WARNING (self, STREAM, ENCODE, (NULL),
          ("encoder changed a picture type, passing frames through up to "
              "the next I frame"));
      av_packet_unref (pkt);
      go_broken (self);
      return;
    }
    if (f && f->state == FRAME_ENCODING) {
      f->out = gst_buffer_new_memdup (pkt->data, pkt->size);
      f->state = FRAME_READY;
    }
    av_packet_unref (pkt);
  }
}

static gdouble
frame_qsrc (const AVFrame * frame)
{
  AVFrameSideData *sd =
      av_frame_get_side_data (frame, AV_FRAME_DATA_VIDEO_ENC_PARAMS);
  AVVideoEncParams *par;
  gdouble sum = 0;
  guint i;

  if (!sd)
    return 0;
  par = (AVVideoEncParams *) sd->data;
  if (par->nb_blocks == 0)
    return par->qp;
  for (i = 0; i < par->nb_blocks; i++)
    sum += par->qp + av_video_enc_params_block (par, i)->delta_qp;
  return sum / par->nb_blocks;
}

/* A frame the encoder cannot take: pass it, if not decided already. */
static void
pass_undecided (GstRateTranscoder * self, RtFrame * f)
{
  if (f->state == FRAME_DECODING)
    frame_decided (self, f, GST_TWOFLOW_RATE_CONTROL_PASS);
}

/* A picture left the decoder (display order): decide, unless decided at
 * input, and feed the encoder, which keeps its references in step with
 * the source whatever is done with its output. */
static void
handle_decoded (GstRateTranscoder * self, AVFrame * frame)
{
  /* indexed by GstTwoflowPictureType */
  static const gint av_types[] = { AV_PICTURE_TYPE_NONE, AV_PICTURE_TYPE_I,
    AV_PICTURE_TYPE_P, AV_PICTURE_TYPE_B
  };
  RtFrame *f = find_frame (self, (guint64) frame->pts);
  gboolean corrupt, decide;

  if (!f || !f->in_decoder)
    return;
  f->in_decoder = FALSE;
  decide = f->state == FRAME_DECODING;

  corrupt = frame->decode_error_flags || (frame->flags & AV_FRAME_FLAG_CORRUPT);
  f->qsrc = frame_qsrc (frame);
  GST_OBJECT_LOCK (self);
  if (corrupt)
    self->decode_errors++;
  if (!decide)
    gst_twoflow_rate_control_handle_source_quantizer (self->rc, f->type,
        f->qsrc);
  GST_OBJECT_UNLOCK (self);

  if (self->broken) {
    pass_undecided (self, f);
    return;
  }

  if (self->enc && (self->enc->width != frame->width ||
          self->enc->height != frame->height ||
          self->enc->pix_fmt != frame->format)) {
    if (f->type != GST_TWOFLOW_PICTURE_I) {
      pass_undecided (self, f);
      return;
    }
    /* new picture size at an I frame: start a new encoder */
    avcodec_send_frame (self->enc, NULL);
    receive_packets (self);
    avcodec_free_context (&self->enc);
  }
  if (!self->enc) {
    if (f->type != GST_TWOFLOW_PICTURE_I) {
      /* an encoder must start on an I frame to keep the types */
      pass_undecided (self, f);
      return;
    }
    if (!open_encoder (self, frame)) {
      GST_ELEMENT_WARNING (self, LIBRARY, INIT, (NULL),
          ("cannot open the MPEG encoder for %dx%d format %d, passing through",
              frame->width, frame->height, frame->format));
      go_broken (self);
      return;
    }
  }

  if (decide) {
    GST_OBJECT_LOCK (self);
    f->decision = gst_twoflow_rate_control_decide (self->rc, f->type,
        gst_buffer_get_size (f->in), f->qsrc);
    GST_OBJECT_UNLOCK (self);
    if (corrupt && f->decision.action == GST_TWOFLOW_RATE_CONTROL_ENCODE)
      f->decision.action = GST_TWOFLOW_RATE_CONTROL_PASS;
  }

  frame->pict_type = av_types[f->type];
  frame->key_frame = f->type == GST_TWOFLOW_PICTURE_I;
  frame->quality = f->decision.q * FF_QP2LAMBDA;
  frame->pts = self->enc_count;
  self->enc_map[self->enc_count % RT_MAP_SIZE].index = f->index;
  self->enc_map[self->enc_count % RT_MAP_SIZE].type = f->type;
  self->enc_count++;
  /* side data of the source must not steer the encoder */
  av_frame_remove_side_data (frame, AV_FRAME_DATA_VIDEO_ENC_PARAMS);

  if (avcodec_send_frame (self->enc, frame) < 0) {
    GST_ELEMENT_WARNING (self, STREAM, ENCODE, (NULL),
        ("encoder refused a frame, passing frames through up to the next "
            "I frame"));
    go_broken (self);
    return;
  }
  if (decide)
    f->state =
        f->decision.action ==
        GST_TWOFLOW_RATE_CONTROL_ENCODE ? FRAME_ENCODING : FRAME_READY;
  receive_packets (self);
}

static void
receive_frames (GstRateTranscoder * self)
{
  AVFrame *frame = av_frame_alloc ();

  while (self->dec && avcodec_receive_frame (self->dec, frame) == 0) {
    handle_decoded (self, frame);
    av_frame_unref (frame);
  }
  av_frame_free (&frame);
}

/* Frames the decoder will never return (undecodable, or B frames of an
 * open GOP at the start of the stream) pass through. */
static void
mark_undecoded (GstRateTranscoder * self, RtFrame * f)
{
  if (f && f->in_decoder) {
    GST_DEBUG_OBJECT (self, "frame %" G_GUINT64_FORMAT " not decoded",
        f->index);
    f->in_decoder = FALSE;
    pass_undecided (self, f);
  }
}

/* Empty both codecs (EOS): every queued frame becomes ready. */
static GstFlowReturn
drain (GstRateTranscoder * self)
{
  GList *l;

  if (self->dec) {
    avcodec_send_packet (self->dec, NULL);
    receive_frames (self);
    avcodec_free_context (&self->dec);
  }
  if (self->enc) {
    avcodec_send_frame (self->enc, NULL);
    receive_packets (self);
    avcodec_free_context (&self->enc);
  }
  for (l = self->frames.head; l; l = l->next) {
    RtFrame *f = l->data;

    f->in_decoder = FALSE;
    if (f->state != FRAME_READY)
      frame_decided (self, f, GST_TWOFLOW_RATE_CONTROL_PASS);
  }
  self->have_last_ref = FALSE;
  return push_ready (self);
}

static void
reset_stream (GstRateTranscoder * self)
{
  rt_h264_reset (self);
  close_codecs (self);
  g_queue_clear_full (&self->frames, (GDestroyNotify) rt_frame_free);
  self->next_index = 0;
  self->next_out = 0;
  self->enc_count = 0;
  self->gop_dts = GST_CLOCK_TIME_NONE;
  self->seen_gop_header = FALSE;
  self->unsupported = FALSE;
  self->have_last_ref = FALSE;
  self->b_run = 0;
  self->broken = FALSE;
  self->discont = TRUE;
  GST_OBJECT_LOCK (self);
  gst_twoflow_rate_control_reset (self->rc);
  self->pending_since = 0;
  GST_OBJECT_UNLOCK (self);
}

/* --- input parsing ---------------------------------------------------- */

static void
load_matrices (GstRateTranscoder * self, gboolean load_intra,
    const guint8 * intra, gboolean load_inter, const guint8 * inter)
{
  guint8 raster[64];

  if (load_intra) {
    gst_mpeg_video_quant_matrix_get_raster_from_zigzag (raster, intra);
    if (self->enc && (!self->custom_intra ||
            memcmp (raster, self->intra_matrix, 64))
        && !self->matrices_warned) {
      GST_WARNING_OBJECT (self, "quantiser matrices changed mid-stream");
      self->matrices_warned = TRUE;
    }
    memcpy (self->intra_matrix, raster, 64);
    self->custom_intra = TRUE;
  }
  if (load_inter) {
    gst_mpeg_video_quant_matrix_get_raster_from_zigzag (raster, inter);
    memcpy (self->inter_matrix, raster, 64);
    self->custom_inter = TRUE;
  }
}

/* Picture type of a parsed picture (and the matrices it loads). */
static gboolean
parse_picture (GstRateTranscoder * self, const guint8 * data, gsize size,
    GstTwoflowPictureType * type, gint * tref, gboolean * gop)
{
  GstTwoflowPictureInfo info;
  gboolean found = gst_twoflow_picture_parser_parse (self->picture_parser,
      data, size, &info);

  /* a sequence header resets both to the defaults unless loaded */
  if (info.sequence_header)
    self->custom_intra = self->custom_inter = FALSE;
  load_matrices (self, info.load_intra_matrix, info.intra_matrix,
      info.load_non_intra_matrix, info.non_intra_matrix);
  *gop = info.gop_header;
  if (found) {
    *type = info.type;
    *tref = info.temporal_reference;
  }
  return found;
}

static GstFlowReturn
gst_rate_transcoder_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstRateTranscoder *self = GST_RATE_TRANSCODER (parent);
  RtFrame *f;
  GstMapInfo map;
  GstClockTime ts, dur;
  guint64 now;
  gint tref = 0;
  gboolean gop = FALSE;
  GstTwoflowRateControlEarly early;
  guint gen;

  if (self->h264)
    return rt_h264_chain (self, buf);

  f = g_new0 (RtFrame, 1);
  f->index = self->next_index++;
  f->in = buf;
  f->state = FRAME_DECODING;
  f->pts = GST_BUFFER_PTS (buf);
  f->decision.action = GST_TWOFLOW_RATE_CONTROL_PASS;
  g_queue_push_tail (&self->frames, f);

  if (!gst_buffer_map (buf, &map, GST_MAP_READ)) {
    frame_decided (self, f, GST_TWOFLOW_RATE_CONTROL_PASS);
    return push_ready (self);
  }
  f->has_picture = parse_picture (self, map.data, map.size, &f->type, &tref,
      &gop);

  dur = GST_BUFFER_DURATION (buf);
  if (!GST_CLOCK_TIME_IS_VALID (dur))
    dur = gst_util_uint64_scale (GST_SECOND, self->fps_d, self->fps_n);
  ts = GST_BUFFER_DTS_IS_VALID (buf) ? GST_BUFFER_DTS (buf) :
      GST_BUFFER_PTS (buf);
  now = GST_CLOCK_TIME_IS_VALID (ts) ?
      gst_segment_to_running_time (&self->segment, GST_FORMAT_TIME, ts) :
      GST_CLOCK_TIME_NONE;

  if (!f->has_picture) {
    GST_ELEMENT_WARNING (self, STREAM, DECODE, (NULL),
        ("buffer of %" G_GSIZE_FORMAT " bytes without a picture header, "
            "passed through", map.size));
    gst_buffer_unmap (buf, &map);
    frame_decided (self, f, GST_TWOFLOW_RATE_CONTROL_PASS);
    return push_ready (self);
  }

  /* An elementary stream read from a file has DTS only. Pictures of a GOP
   * are shown in temporal_reference order, the first one a frame after
   * the GOP's first picture is decoded. */
  if (gop || (f->type == GST_TWOFLOW_PICTURE_I && !self->seen_gop_header)) {
    self->seen_gop_header |= gop;
    self->gop_dts = GST_BUFFER_DTS (buf);
  }
  if (!GST_BUFFER_PTS_IS_VALID (buf) && GST_CLOCK_TIME_IS_VALID (self->gop_dts))
    f->pts = self->gop_dts + (tref + 1) * dur;

  GST_OBJECT_LOCK (self);
  if (!GST_CLOCK_TIME_IS_VALID (now))
    now = GST_CLOCK_TIME_IS_VALID (self->now) ? self->now + dur : 0;
  self->now = now;
  gen = gst_twoflow_rate_control_get_generation (self->rc);
  gst_twoflow_rate_control_handle_input (self->rc, f->type, map.size, dur, now);
  if (gst_twoflow_rate_control_get_generation (self->rc) != gen) {
    /* backoffs that came before the first frame took effect just now */
    self->pending_generation =
        gst_twoflow_rate_control_get_generation (self->rc);
    self->pending_since = g_get_monotonic_time ();
    GST_INFO_OBJECT (self, "early backoffs applied: target now %"
        G_GUINT64_FORMAT, gst_twoflow_rate_control_get_target (self->rc));
  }
  /* a frame that is passed whatever the decoder says leaves at once */
  early = gst_twoflow_rate_control_decide_early (self->rc, f->type, map.size,
      &f->decision);
  GST_OBJECT_UNLOCK (self);
  if (early != GST_TWOFLOW_RATE_CONTROL_EARLY_NONE)
    f->state = FRAME_READY;
  if (early == GST_TWOFLOW_RATE_CONTROL_EARLY_PASSTHROUGH)
    release_pending (self);

  if (f->type == GST_TWOFLOW_PICTURE_B) {
    if (++self->b_run > RT_MAX_B_FRAMES && !self->unsupported) {
      GST_ELEMENT_WARNING (self, STREAM, NOT_IMPLEMENTED, (NULL),
          ("more than %d B frames in a row, passing the stream through",
              RT_MAX_B_FRAMES));
      self->unsupported = TRUE;
      go_broken (self);
    }
  } else {
    self->b_run = 0;
  }

  /* after damage, start again clean at the next I frame */
  if (self->broken && !self->unsupported && f->type == GST_TWOFLOW_PICTURE_I) {
    GST_INFO_OBJECT (self, "resuming re-encoding at frame %" G_GUINT64_FORMAT,
        f->index);
    self->broken = FALSE;
    self->have_last_ref = FALSE;
    if (self->dec)
      avcodec_flush_buffers (self->dec);
  }

  if (self->broken) {
    gst_buffer_unmap (buf, &map);
    frame_decided (self, f, GST_TWOFLOW_RATE_CONTROL_PASS);
    return push_ready (self);
  }

  if (!self->dec && !open_decoder (self)) {
    gst_buffer_unmap (buf, &map);
    GST_ELEMENT_ERROR (self, LIBRARY, INIT, (NULL),
        ("cannot open the MPEG-%d decoder", self->mpegversion));
    return GST_FLOW_ERROR;
  }

  if (av_new_packet (self->pkt, map.size) < 0) {
    gst_buffer_unmap (buf, &map);
    return GST_FLOW_ERROR;
  }
  memcpy (self->pkt->data, map.data, map.size);
  gst_buffer_unmap (buf, &map);
  self->pkt->pts = self->pkt->dts = f->index;
  f->in_decoder = TRUE;
  /* a frame decided already leaves before the codecs' work on it */
  if (f->state == FRAME_READY) {
    GstFlowReturn ret = push_ready (self);

    if (ret != GST_FLOW_OK) {
      f->in_decoder = FALSE;
      av_packet_unref (self->pkt);
      return ret;
    }
  }
  if (avcodec_send_packet (self->dec, self->pkt) < 0) {
    GST_OBJECT_LOCK (self);
    self->decode_errors++;
    GST_OBJECT_UNLOCK (self);
    GST_ELEMENT_WARNING (self, STREAM, DECODE, (NULL),
        ("frame %" G_GUINT64_FORMAT " does not decode, passed through",
            f->index));
  }
  av_packet_unref (self->pkt);
  receive_frames (self);

  /* the decoder returns a reference picture when the next one arrives,
   * a B picture at once */
  if (f->type == GST_TWOFLOW_PICTURE_B) {
    mark_undecoded (self, f);
  } else {
    if (self->have_last_ref)
      mark_undecoded (self, find_frame (self, self->last_ref));
    self->last_ref = f->index;
    self->have_last_ref = TRUE;
  }

  /* this many frames waiting means the codecs are not returning what we
   * give */
  while (self->next_index - self->next_out > RT_MAP_SIZE / 2) {
    RtFrame *head = find_frame (self, self->next_out);

    if (!head || head->state == FRAME_READY)
      break;
    GST_WARNING_OBJECT (self, "frame %" G_GUINT64_FORMAT " stuck, passing",
        head->index);
    frame_decided (self, head, GST_TWOFLOW_RATE_CONTROL_PASS);
    push_ready (self);
  }

  return push_ready (self);
}

/* --- events ----------------------------------------------------------- */

static gboolean
gst_rate_transcoder_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstRateTranscoder *self = GST_RATE_TRANSCODER (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      GstStructure *s;
      gint v, n, d;

      gst_event_parse_caps (event, &caps);
      s = gst_caps_get_structure (caps, 0);
      if (gst_structure_has_name (s, "video/x-h264") != self->h264) {
        /* the other codec: a new parser, new codecs */
        if (self->h264)
          rt_h264_drain (self);
        else
          drain (self);
        close_codecs (self);
        self->h264 = !self->h264;
        gst_twoflow_picture_parser_free (self->picture_parser);
        self->picture_parser = gst_twoflow_picture_parser_new (self->h264 ?
            GST_TWOFLOW_CODEC_H264 : GST_TWOFLOW_CODEC_MPEG2);
      }
      if (self->h264)
        rt_h264_set_caps (self, s);
      if (gst_structure_get_int (s, "mpegversion", &v) &&
          v != self->mpegversion) {
        drain (self);
        close_codecs (self);
        self->mpegversion = v;
      }
      if (gst_structure_get_fraction (s, "framerate", &n, &d) && n > 0 && d > 0) {
        GstClockTime latency = gst_util_uint64_scale ((self->h264 ?
                rt_h264_delay_frames () : RT_REENCODE_DELAY) * GST_SECOND, d,
            n);
        gboolean changed;

        GST_OBJECT_LOCK (self);
        self->fps_n = n;
        self->fps_d = d;
        changed = latency != self->latency;
        self->latency = latency;
        GST_OBJECT_UNLOCK (self);
        if (changed)
          gst_element_post_message (GST_ELEMENT (self),
              gst_message_new_latency (GST_OBJECT (self)));
      }
      break;
    }
    case GST_EVENT_SEGMENT:
      gst_event_copy_segment (event, &self->segment);
      if (self->segment.format != GST_FORMAT_TIME)
        gst_segment_init (&self->segment, GST_FORMAT_TIME);
      break;
    case GST_EVENT_EOS:
      if (self->h264)
        rt_h264_drain (self);
      else
        drain (self);
      break;
    case GST_EVENT_FLUSH_STOP:
      reset_stream (self);
      gst_segment_init (&self->segment, GST_FORMAT_TIME);
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}

static gboolean
gst_rate_transcoder_src_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstRateTranscoder *self = GST_RATE_TRANSCODER (parent);
  GstNetworkCongestionType type;
  guint64 bitrate;
  GstClockTime srtt;
  const gchar *source;

  if (gst_network_congestion_event_parse (event, &type, &bitrate, &srtt,
          &source)) {
    gboolean changed;

    GST_OBJECT_LOCK (self);
    changed =
        gst_twoflow_rate_control_handle_congestion (self->rc, type, bitrate,
        GST_CLOCK_TIME_IS_VALID (srtt) ? srtt : G_MAXUINT64,
        GST_CLOCK_TIME_IS_VALID (self->now) ? self->now : 0);
    if (changed) {
      GstTwoflowRateControlStats s;

      gst_twoflow_rate_control_get_stats (self->rc, &s);
      /* decisions from now on carry the bumped generation */
      self->pending_generation =
          gst_twoflow_rate_control_get_generation (self->rc);
      self->pending_since = g_get_monotonic_time ();
      GST_INFO_OBJECT (self, "%s from %s: target now %" G_GUINT64_FORMAT,
          gst_network_congestion_type_to_string (type),
          source ? source : "?", (guint64) s.target_bitrate);
    }
    GST_OBJECT_UNLOCK (self);
    gst_event_unref (event);
    return TRUE;
  }
  return gst_pad_event_default (pad, parent, event);
}

/* The latency is that of re-encoding even while frames pass through (they
 * then leave early): the element may start re-encoding at any frame, and a
 * latency that changed with it would make a live pipeline reconfigure, and
 * its sinks glitch, at every congestion event. Like a video encoder, it
 * reports what its configuration needs, not what it holds at the moment. */
static gboolean
gst_rate_transcoder_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstRateTranscoder *self = GST_RATE_TRANSCODER (parent);

  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    gboolean live;
    GstClockTime min, max, ours;

    if (!gst_pad_peer_query (self->sinkpad, query))
      return FALSE;
    gst_query_parse_latency (query, &live, &min, &max);
    GST_OBJECT_LOCK (self);
    ours = self->latency;
    GST_OBJECT_UNLOCK (self);
    GST_DEBUG_OBJECT (self, "upstream latency %" GST_TIME_FORMAT " - %"
        GST_TIME_FORMAT ", adding %" GST_TIME_FORMAT, GST_TIME_ARGS (min),
        GST_TIME_ARGS (max), GST_TIME_ARGS (ours));
    min += ours;
    if (GST_CLOCK_TIME_IS_VALID (max))
      max += ours;
    gst_query_set_latency (query, live, min, max);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}

static GstStateChangeReturn
gst_rate_transcoder_change_state (GstElement * element,
    GstStateChange transition)
{
  GstRateTranscoder *self = GST_RATE_TRANSCODER (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    reset_stream (self);
    gst_segment_init (&self->segment, GST_FORMAT_TIME);
    GST_OBJECT_LOCK (self);
    self->now = GST_CLOCK_TIME_NONE;
    self->frames_out = 0;
    self->decode_errors = 0;
    self->last_latency = self->max_latency = 0;
    GST_OBJECT_UNLOCK (self);
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    reset_stream (self);
  return ret;
}
