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
 * Pictures nothing references (nal_ref_idc = 0) are re-encoded too, each
 * as a P picture against the receiver's picture of the reference before
 * it, spliced as a non-reference picture. Open-GOP leading pictures are
 * dropped; the pictures nothing references only when re-encoding at the
 * codec's floor (0.005 bit per pixel) misses the target, the GOP's tail
 * below it. With keep=ip every reference picture leaves byte-identical
 * and the pictures nothing references are re-encoded the same way
 * (against the source's reference nearest in time), dropped only below
 * the codec's floor; floor-bitrate is the references' rate (the input's
 * when nothing is disposable). See docs/transcoder.md.
 *
 * H.265 (`video/x-h265`, byte-stream, hvc1 or hev1, alignment=au; the
 * output keeps the input's format): H.264's machinery with libavcodec's
 * HEVC decoder and libx265 through libavcodec. With keep=none each picture
 * is decoded and re-encoded (average bitrate under a VBV,
 * #GstRateTranscoder:preset the x265 preset; 10 frames of latency).
 * libavcodec's libx265 wrapper cannot reconfigure an open encoder, so a
 * new target (a congestion event, the property) drains it and opens a new
 * one at the target from the next picture, with an IDR of its own; a
 * target the input's measured rate moves waits for the source's next IRAP
 * (or a move beyond 25%). Passing through resumes at the source's next IDR
 * or BLA. Pictures keep their format (libx265 codes 4:2:0 to 4:4:4, 8 to
 * 12 bits; others pass through, with a warning). With keep=i|ip there are
 * no codecs: IRAP pictures (IDR, CRA, BLA; keep=ip: every picture others
 * predict from) leave byte-identical, the sub-layer non-reference pictures
 * (`_N` NAL unit types of the highest temporal sub-layer) are dropped
 * first and, with keep=i, below that the GOP's tail up to the next IRAP
 * (H.264's keep=i re-encoding has no H.265 counterpart yet).
 *
 * AV1 (`video/x-av1`, obu-stream, alignment=tu, as av1parse gives it):
 * with keep=none each temporal unit is decoded (libdav1d) and re-encoded
 * with SVT-AV1 through libavcodec (libaom where SVT-AV1 cannot open):
 * low-delay prediction, CBR at the target, a key frame with its sequence
 * header every source key-frame spacing (~1 s without one); 2 frames of
 * latency. Re-encoding starts at any unit once half a second of input
 * has measured its rate; libavcodec's libsvtav1 cannot change an open
 * encoder's rate, so a new target reopens it at the next picture, a key
 * frame of its own. Passing through resumes at the source's next key
 * frame. 8 and 10 bits 4:2:0 are re-encoded with SVT-AV1, the other
 * formats libaom codes (4:2:2, 4:4:4, 12 bits) with libaom; others pass
 * through, with a warning. With keep=i|ip there are no codecs: the
 * temporal units of key and intra-only frames (keep=ip: every unit that
 * refreshes a reference slot) and those with a sequence header leave
 * byte-identical; units refreshing no slot are dropped first and, with
 * keep=i, below that the tail up to the next key frame.
 *
 * Every dropped picture (MPEG-1/2, H.264, H.265 or AV1) leaves a
 * serialized custom downstream event in its place
 * (gst_twoflow_event_new_dropped(): `GstTwoflowDroppedFrame`, its type,
 * reference flag and timestamps), so a twoflowsplit after the element
 * numbers the frames as the split of the unaltered source does.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=250 ! video/x-raw,width=720,height=576,framerate=25/1 ! mpeg2enc format=3 bitrate=6000 ! mpegvideoparse ! ratetranscoder target-bitrate=2000000 max-bitrate=2000000 ! mpegvideoparse ! filesink location=out.m2v
 * ]| Re-encodes a 6 Mbit/s MPEG-2 stream at 2 Mbit/s.
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=100 ! video/x-raw,format=I420,width=1280,height=720,framerate=25/1 ! x264enc bitrate=4000 bframes=3 b-adapt=false ! h264parse ! ratetranscoder target-bitrate=2000000 ! h264parse ! matroskamux ! filesink location=out.mkv
 * ]| Re-encodes a 4 Mbit/s H.264 stream at 2 Mbit/s.
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=100 ! video/x-raw,format=I420,width=640,height=360,framerate=25/1 ! x265enc bitrate=1500 key-int-max=25 ! h265parse ! ratetranscoder target-bitrate=750000 ! h265parse ! matroskamux ! filesink location=out-h265.mkv
 * ]| Re-encodes a 1.5 Mbit/s H.265 stream at 750 kbit/s.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/twoflow/networkcongestion.h>
#include "gstratetranscoder.h"
#include "gstratetranscoder-codec.h"

GST_DEBUG_CATEGORY (rate_transcoder_debug);
#define GST_CAT_DEFAULT rate_transcoder_debug

#define DEFAULT_TARGET_BITRATE 0
#define DEFAULT_MIN_BITRATE 0
#define DEFAULT_MAX_BITRATE 0
#define DEFAULT_BACKOFF 0.5
#define DEFAULT_RECOVERY 50000
#define DEFAULT_EVENTS GST_NETWORK_CONGESTION_ALL
#define DEFAULT_KEEP GST_TWOFLOW_RATE_CONTROL_KEEP_NONE

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
/* Private to this file: the codecs see the element through the services
 * of gstratetranscoder-codec.h only. */
struct _GstRateTranscoder
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* properties and rate control, under the object lock (events come from
   * downstream's thread) */
  guint64 min_bitrate;
  guint64 max_bitrate;
  gdouble backoff;
  guint64 recovery;
  guint events;
  GstTwoflowRateControlKeep keep;
  gchar *preset;                /* x264/x265 preset */
  GstTwoflowRateControl *rc;
  GstClockTime now;             /* running time of the last input frame */
  guint pending_generation;     /* generation of the last reaction */
  gint64 pending_since;         /* monotonic us of that reaction, 0 none */
  guint64 last_latency, max_latency;
  guint64 decode_errors;
  guint64 frames_out;
  gint fps_n, fps_d;            /* also read by latency queries */
  GstClockTime latency;         /* what the element adds, reported */

  /* streaming state, under the stream lock */
  const GstRateTranscoderCodec *codec;       /* the selected codec */
  GstRateTranscoderCodecState *codec_state;
  GstSegment segment;
  gboolean discont;             /* the next buffer out is DISCONT */
};

/* The codecs, in the order their caps appear in the pad templates; the
 * first one is selected until a CAPS event says otherwise. */
static const GstRateTranscoderCodec *const codecs[] = {
  &gst_rate_transcoder_codec_mpeg2,
  &gst_rate_transcoder_codec_h264,
  &gst_rate_transcoder_codec_h265,
  &gst_rate_transcoder_codec_av1,
};

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
  GstCaps *caps;
  guint i;

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
   * H.264 and H.265: the x264 / x265 preset the re-encoding uses
   * (keep=none), e.g. ultrafast, veryfast, medium. AV1: an SVT-AV1
   * preset number, 0 (slowest) to 13; anything else (the default) is 12.
   * Applies from the next encoder opened.
   */
  g_object_class_install_property (gobject_class, PROP_PRESET,
      g_param_spec_string ("preset", "x264/x265 preset",
          "H.264, H.265: x264/x265 preset of the re-encoding (keep=none); "
          "AV1: an SVT-AV1 preset number 0-13 (else 12)",
          DEFAULT_PRESET,
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
   *   dropping B frames, from the rate model (0: not known, or H.264/H.265)
   * * quantizer (gdouble): quantizer of the last re-encoded frame (0 none
   *   yet; H.264, H.265: the encoder's QP)
   * * mean-quantizer (gdouble): mean over the re-encoded frames of the window
   * * passthrough (gboolean): no reduction needed, frames pass untouched
   * * dropping-b (gboolean): B frames are being dropped
   * * gop-length (guint): frames between the last two I frames
   * * frames-in, frames-out, frames-passed, frames-reencoded, frames-dropped (guint64)
   * * frames-dropped-i, frames-dropped-p, frames-dropped-b (guint64): dropped
   *   frames by picture type (H.264/H.265 keep=i|ip drops P and B pictures)
   * * dropping-tail (gboolean): H.264/H.265 keep=i: the GOP's tail is being
   *   dropped
   * * disposable-bitrate (guint64): H.264/H.265 keep=i|ip: bit/s of the
   *   pictures nothing references (H.264 nal_ref_idc = 0; H.265 `_N`
   *   pictures of the highest sub-layer); floor-bitrate is then the
   *   rate of what is never dropped (the input's when nothing is disposable)
   * * codec (gchararray): "mpeg", "h264", "h265" or "av1"
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

  caps = gst_caps_new_empty ();
  for (i = 0; i < G_N_ELEMENTS (codecs); i++)
    gst_caps_append (caps, gst_caps_from_string (codecs[i]->caps));
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref (caps);
  gst_element_class_set_static_metadata (element_class,
      "MPEG, H.264, H.265 and AV1 rate transcoder", "Codec/Converter/Video",
      "Re-encodes MPEG-1/2, H.264 and H.265 video (or drops disposable "
      "H.264/H.265/AV1 pictures) at a bitrate that follows congestion events",
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
  GstElementClass *klass = GST_ELEMENT_GET_CLASS (self);

  self->sinkpad = gst_pad_new_from_template
      (gst_element_class_get_pad_template (klass, "sink"), "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_rate_transcoder_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_rate_transcoder_sink_event));
  GST_PAD_SET_PROXY_CAPS (self->sinkpad);
  GST_PAD_SET_PROXY_ALLOCATION (self->sinkpad);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_template
      (gst_element_class_get_pad_template (klass, "src"), "src");
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
  self->rc = gst_twoflow_rate_control_new ();
  gst_twoflow_rate_control_set_target (self->rc, DEFAULT_TARGET_BITRATE);
  gst_twoflow_rate_control_set_limits (self->rc, self->min_bitrate,
      self->max_bitrate);
  gst_twoflow_rate_control_set_backoff (self->rc, self->backoff);
  gst_twoflow_rate_control_set_recovery (self->rc, self->recovery);
  gst_twoflow_rate_control_set_events (self->rc, self->events);
  gst_twoflow_rate_control_set_keep (self->rc, self->keep);

  self->fps_n = 25;
  self->fps_d = 1;
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
  self->codec = codecs[0];
  self->codec_state = self->codec->start (self);
  self->latency = gst_util_uint64_scale (self->codec->latency_frames *
      GST_SECOND, self->fps_d, self->fps_n);
}

static void
gst_rate_transcoder_finalize (GObject * object)
{
  GstRateTranscoder *self = GST_RATE_TRANSCODER (object);

  self->codec->stop (self->codec_state);
  gst_twoflow_rate_control_free (self->rc);
  g_free (self->preset);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* --- properties ------------------------------------------------------- */

static GstStructure *
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
      "codec", G_TYPE_STRING, self->codec->name,
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

/* --- services to the codecs (gstratetranscoder-codec.h) ------------- */

GstTwoflowRateControl *
gst_rate_transcoder_lock (GstRateTranscoder * self)
{
  GST_OBJECT_LOCK (self);
  return self->rc;
}

GstTwoflowRateControl *
gst_rate_transcoder_lock_input (GstRateTranscoder * self, guint64 now)
{
  GST_OBJECT_LOCK (self);
  self->now = now;
  return self->rc;
}

void
gst_rate_transcoder_unlock (GstRateTranscoder * self)
{
  GST_OBJECT_UNLOCK (self);
}

void
gst_rate_transcoder_start_reaction_locked (GstRateTranscoder * self)
{
  self->pending_generation = gst_twoflow_rate_control_get_generation (self->rc);
  self->pending_since = g_get_monotonic_time ();
}

void
gst_rate_transcoder_account (GstRateTranscoder * self,
    GstTwoflowPictureType type, const GstTwoflowRateControlDecision * d,
    gsize in_bytes, gdouble qsrc, gsize out_bytes, GstClockTime duration,
    gboolean picture, gboolean counted)
{
  gboolean post = FALSE;

  GST_OBJECT_LOCK (self);
  gst_twoflow_rate_control_handle_output (self->rc, type, d, in_bytes, qsrc,
      out_bytes, GST_CLOCK_TIME_IS_VALID (duration) ? duration :
      gst_util_uint64_scale (GST_SECOND, self->fps_d, self->fps_n));
  /* the first frame coded under a pending rate change: its reaction
   * latency is known */
  if (picture && self->pending_since &&
      d->generation >= self->pending_generation) {
    self->last_latency = (g_get_monotonic_time () - self->pending_since) * 1000;
    self->max_latency = MAX (self->max_latency, self->last_latency);
    self->pending_since = 0;
    post = TRUE;
  }
  if (counted)
    self->frames_out++;
  GST_OBJECT_UNLOCK (self);
  if (post)
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self),
            gst_rate_transcoder_stats (self)));
}

GstFlowReturn
gst_rate_transcoder_push (GstRateTranscoder * self, GstBuffer * buf,
    gboolean count)
{
  if (self->discont) {
    buf = gst_buffer_make_writable (buf);
    GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    self->discont = FALSE;
  } else if (GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DISCONT)) {
    buf = gst_buffer_make_writable (buf);
    GST_BUFFER_FLAG_UNSET (buf, GST_BUFFER_FLAG_DISCONT);
  }
  if (count) {
    GST_OBJECT_LOCK (self);
    self->frames_out++;
    GST_OBJECT_UNLOCK (self);
  }
  return gst_pad_push (self->srcpad, buf);
}

void
gst_rate_transcoder_push_event (GstRateTranscoder * self, GstEvent * event)
{
  gst_pad_push_event (self->srcpad, event);
}

void
gst_rate_transcoder_count_decode_error (GstRateTranscoder * self)
{
  GST_OBJECT_LOCK (self);
  self->decode_errors++;
  GST_OBJECT_UNLOCK (self);
}

void
gst_rate_transcoder_get_framerate (GstRateTranscoder * self, gint * n,
    gint * d)
{
  GST_OBJECT_LOCK (self);
  *n = self->fps_n;
  *d = self->fps_d;
  GST_OBJECT_UNLOCK (self);
}

GstClockTime
gst_rate_transcoder_frame_duration (GstRateTranscoder * self)
{
  gint n, d;

  gst_rate_transcoder_get_framerate (self, &n, &d);
  return gst_util_uint64_scale (GST_SECOND, d, n);
}

GstTwoflowRateControlKeep
gst_rate_transcoder_get_keep (GstRateTranscoder * self)
{
  GstTwoflowRateControlKeep keep;

  GST_OBJECT_LOCK (self);
  keep = self->keep;
  GST_OBJECT_UNLOCK (self);
  return keep;
}

gchar *
gst_rate_transcoder_dup_preset (GstRateTranscoder * self)
{
  gchar *preset;

  GST_OBJECT_LOCK (self);
  preset = g_strdup (self->preset);
  GST_OBJECT_UNLOCK (self);
  return preset;
}

gboolean
gst_rate_transcoder_open_encoder (AVCodecContext ** c, const AVCodec * codec,
    AVDictionary ** opts)
{
  gboolean ok = avcodec_open2 (*c, codec, opts) >= 0;

  av_dict_free (opts);
  if (!ok)
    avcodec_free_context (c);
  return ok;
}

AVCodecContext *
gst_rate_transcoder_new_encoder_context (GstRateTranscoder * self,
    const AVCodec * codec, const AVFrame * f)
{
  AVCodecContext *c = avcodec_alloc_context3 (codec);
  gint fps_n, fps_d;

  if (!c)
    return NULL;
  c->width = f->width;
  c->height = f->height;
  c->pix_fmt = f->format;
  c->sample_aspect_ratio = f->sample_aspect_ratio;
  gst_rate_transcoder_get_framerate (self, &fps_n, &fps_d);
  c->framerate = (AVRational) {
  fps_n, fps_d};
  c->time_base = (AVRational) {
  fps_d, fps_n};
  return c;
}

/* --- streaming -------------------------------------------------------- */

/* The stream's time for the codec: a frame's duration (the caps' frame
 * rate's without one) and the running time of its decode timestamp (the
 * previous frame's plus its duration without one). */
static GstFlowReturn
gst_rate_transcoder_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstRateTranscoder *self = GST_RATE_TRANSCODER (parent);
  GstClockTime ts, dur;
  guint64 now;

  dur = GST_BUFFER_DURATION (buf);
  if (!GST_CLOCK_TIME_IS_VALID (dur))
    dur = gst_util_uint64_scale (GST_SECOND, self->fps_d, self->fps_n);
  ts = GST_BUFFER_DTS_IS_VALID (buf) ? GST_BUFFER_DTS (buf) :
      GST_BUFFER_PTS (buf);
  now = GST_CLOCK_TIME_IS_VALID (ts) ?
      gst_segment_to_running_time (&self->segment, GST_FORMAT_TIME, ts) :
      GST_CLOCK_TIME_NONE;
  GST_OBJECT_LOCK (self);
  if (!GST_CLOCK_TIME_IS_VALID (now))
    now = GST_CLOCK_TIME_IS_VALID (self->now) ? self->now + dur : 0;
  GST_OBJECT_UNLOCK (self);

  return self->codec->handle_frame (self->codec_state, buf, dur, now);
}

static void
reset_stream (GstRateTranscoder * self)
{
  self->codec->reset (self->codec_state);
  self->discont = TRUE;
  GST_OBJECT_LOCK (self);
  gst_twoflow_rate_control_reset (self->rc);
  self->pending_since = 0;
  GST_OBJECT_UNLOCK (self);
}

/* A CAPS event: the codec that takes them (the one before drained and
 * stopped), and the latency its delay makes at their frame rate. */
static void
set_caps (GstRateTranscoder * self, GstCaps * caps)
{
  GstStructure *s = gst_caps_get_structure (caps, 0);
  const GstRateTranscoderCodec *codec = self->codec;
  GstClockTime latency;
  gboolean changed;
  gint n, d;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (codecs); i++) {
    GstCaps *c = gst_caps_from_string (codecs[i]->caps);
    gboolean match = gst_structure_has_name (s,
        gst_structure_get_name (gst_caps_get_structure (c, 0)));

    gst_caps_unref (c);
    if (match) {
      codec = codecs[i];
      break;
    }
  }
  if (codec != self->codec) {
    GST_INFO_OBJECT (self, "codec %s", codec->name);
    self->codec->drain (self->codec_state);
    self->codec->stop (self->codec_state);
    self->codec_state = codec->start (self);
    GST_OBJECT_LOCK (self);
    self->codec = codec;
    GST_OBJECT_UNLOCK (self);
  }
  self->codec->set_caps (self->codec_state, s);

  if (gst_structure_get_fraction (s, "framerate", &n, &d) && n > 0 && d > 0) {
    latency = gst_util_uint64_scale (self->codec->latency_frames *
        GST_SECOND, d, n);
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

      gst_event_parse_caps (event, &caps);
      set_caps (self, caps);
      break;
    }
    case GST_EVENT_SEGMENT:
      gst_event_copy_segment (event, &self->segment);
      if (self->segment.format != GST_FORMAT_TIME)
        gst_segment_init (&self->segment, GST_FORMAT_TIME);
      break;
    case GST_EVENT_EOS:
      self->codec->drain (self->codec_state);
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
