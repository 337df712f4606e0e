/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder: the codec ops table, and the element's services to a
 * codec.
 *
 * Cut like the kernel's tcp_congestion_ops: the element
 * (gstratetranscoder.c) owns the pads, the properties, the congestion
 * events, the rate control core and the stream time; a codec
 * (gstratetranscoder-mpeg2.c, gstratetranscoder-h264.c, ...) owns its
 * parser, libavcodec contexts and queues in a private state of its own.
 * The element calls a codec only through its GstRateTranscoderCodec; a
 * codec calls the element only through the gst_rate_transcoder_*()
 * services below. Adding a codec is one more table,
 * listed in codecs[] of gstratetranscoder.c.
 */
#ifndef __GST_RATE_TRANSCODER_CODEC_H__
#define __GST_RATE_TRANSCODER_CODEC_H__

#include <gst/gst.h>
#include <gst/ratecontrol/ratecontrol.h>
#include "gstratetranscoder.h"
#include <libavcodec/avcodec.h>

G_BEGIN_DECLS

/* A codec's private state; each codec defines its own struct. */
typedef struct _GstRateTranscoderCodecState GstRateTranscoderCodecState;

/* Called serialized with the data flow (the streaming thread, or init,
 * finalize and state changes while nothing flows), never with the object
 * lock held. */
typedef struct _GstRateTranscoderCodec
{
  /* the stats' "codec" field; what a codec does reaches the rest of the
   * stats through gst_rate_transcoder_account() (the rate control core's
   * counters and rates) and gst_rate_transcoder_count_decode_error() */
  const gchar *name;
  /* the caps it takes, as in the pad templates (the output keeps them);
   * the first structure's name selects the codec on a CAPS event */
  const gchar *caps;
  /* frames a re-encoded picture spends in the codecs: the element reports
   * this many frame durations of latency */
  guint latency_frames;

  /* a new state (the codec's first CAPS event, or the element's default
   * codec at init) */
  GstRateTranscoderCodecState *(*start) (GstRateTranscoder * element);
  /* frees the state (codec switch, finalize); drain it first to keep
   * what it holds */
  void (*stop) (GstRateTranscoderCodecState * state);
  /* every CAPS event while the codec is selected */
  void (*set_caps) (GstRateTranscoderCodecState * state,
      const GstStructure * s);
  /* one parsed input frame (the buffer is the codec's): @duration is
   * valid (the caps' frame duration when the buffer has none), @now the
   * running time of its decode timestamp (or of the previous frame plus
   * @duration when it has none) */
  GstFlowReturn (*handle_frame) (GstRateTranscoderCodecState * state,
      GstBuffer * buf, GstClockTime duration, guint64 now);
  /* EOS or a codec switch: everything held leaves */
  GstFlowReturn (*drain) (GstRateTranscoderCodecState * state);
  /* flush, or a new run (READY<->PAUSED): forget the stream, output
   * nothing */
  void (*reset) (GstRateTranscoderCodecState * state);
} GstRateTranscoderCodec;

extern const GstRateTranscoderCodec gst_rate_transcoder_codec_mpeg2;
extern const GstRateTranscoderCodec gst_rate_transcoder_codec_h264;
extern const GstRateTranscoderCodec gst_rate_transcoder_codec_h265;
extern const GstRateTranscoderCodec gst_rate_transcoder_codec_av1;

/* --- the element's services to a codec (gstratetranscoder.c) ---------- */

/* The rate control core, with the element's object lock taken
 * (congestion events and properties reach it from other threads); every
 * gst_twoflow_rate_control_*() call is made between this and
 * gst_rate_transcoder_unlock(). */
GstTwoflowRateControl *gst_rate_transcoder_lock (GstRateTranscoder * self);
/* Same, for an input frame: @now becomes the running time of the last
 * input frame (where congestion events are placed). */
GstTwoflowRateControl *gst_rate_transcoder_lock_input (GstRateTranscoder *
    self, guint64 now);
void gst_rate_transcoder_unlock (GstRateTranscoder * self);
/* Under the lock: the core's generation moved in the streaming thread
 * (backoffs kept for the input's rate applied by handle_input): the
 * reaction latency is measured from now. */
void gst_rate_transcoder_start_reaction_locked (GstRateTranscoder * self);

/* A frame's outcome: gst_twoflow_rate_control_handle_output() (@duration
 * may be invalid: the caps' frame duration); when @picture is TRUE and
 * @d's generation is that of a pending rate change, its reaction latency
 * is known and the stats are posted; @counted: the frame's buffer is
 * counted in frames-out now (it is pushed with
 * gst_rate_transcoder_push (…, FALSE)). */
void gst_rate_transcoder_account (GstRateTranscoder * self,
    GstTwoflowPictureType type, const GstTwoflowRateControlDecision * d,
    gsize in_bytes, gdouble qsrc, gsize out_bytes, GstClockTime duration,
    gboolean picture, gboolean counted);
/* Pushes an output buffer (DISCONT set on the first after a flush, unset
 * on the others); @count: add it to frames-out. */
GstFlowReturn gst_rate_transcoder_push (GstRateTranscoder * self,
    GstBuffer * buf, gboolean count);
/* A dropped picture's gst_twoflow_event_new_dropped() in its place. */
void gst_rate_transcoder_push_event (GstRateTranscoder * self,
    GstEvent * event);
/* A frame that did not decode (stats: decode-errors). */
void gst_rate_transcoder_count_decode_error (GstRateTranscoder * self);

/* Settings: the caps' frame rate (25/1 without), the keep property, the
 * preset property (g_free() it). */
void gst_rate_transcoder_get_framerate (GstRateTranscoder * self, gint * n,
    gint * d);
GstClockTime gst_rate_transcoder_frame_duration (GstRateTranscoder * self);
GstTwoflowRateControlKeep gst_rate_transcoder_get_keep (GstRateTranscoder *
    self);
gchar *gst_rate_transcoder_dup_preset (GstRateTranscoder * self);
/* An encoder context for pictures like @f: their size, pixel format and
 * aspect ratio, the caps' frame rate as rate and time base (each codec
 * adds colour, threads and rate control); NULL when out of memory. */
AVCodecContext *gst_rate_transcoder_new_encoder_context (GstRateTranscoder *
    self, const AVCodec * codec, const AVFrame * f);
/* avcodec_open2() of *@c with *@opts (freed either way); on failure *@c
 * is freed and NULL, and FALSE returned. */
gboolean gst_rate_transcoder_open_encoder (AVCodecContext ** c,
    const AVCodec * codec, AVDictionary ** opts);

GST_DEBUG_CATEGORY_EXTERN (rate_transcoder_debug);

G_END_DECLS

#endif
