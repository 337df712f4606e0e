/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder, MPEG-1/2 (issue #7): each picture decoded with
 * libavcodec and re-encoded at the quantizer the rate control core picks
 * for it, with the source's picture type, so GOPs, frame count and
 * timestamps are kept. Frames whose source bits are passed leave as soon
 * as the frames before them have, before the codecs work on them; the
 * codecs still get every frame, so re-encoding can start at any frame.
 * A codec behind the ops table of gstratetranscoder-codec.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <libavcodec/avcodec.h>
#include <libavutil/video_enc_params.h>
#include <libavutil/opt.h>
#include <gst/codecparsers/gstmpegvideoparser.h>
#include <gst/picturetype/picturetype.h>
#include <gst/twoflow/twoflowframe.h>
#include "gstratetranscoder-codec.h"

#define GST_CAT_DEFAULT rate_transcoder_debug

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

/* encoder-order number -> decode index map size; > any codec delay */
#define RT_MAP_SIZE 64

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

typedef struct
{
  guint64 index;                /* decode index of the frame */
  GstTwoflowPictureType type;   /* the type forced on the encoder */
} RtEncEntry;

/* the codec's state, under the element's stream lock */
typedef struct
{
  GstRateTranscoder *element;
  gint mpegversion;
  GstTwoflowPictureParser *picture_parser;
  AVCodecContext *dec;
  AVCodecContext *enc;
  AVPacket *pkt;
  GQueue frames;                /* RtFrame, decode order, until both pushed
                                 * and returned by the decoder */
  guint64 next_index;           /* decode index of the next input frame */
  guint64 next_out;             /* decode index of the next frame to push */
  guint64 enc_count;            /* frames given to the encoder */
  RtEncEntry enc_map[RT_MAP_SIZE];
  GstClockTime gop_dts;         /* DTS of the current GOP's first picture */
  gboolean seen_gop_header;
  gboolean have_last_ref;
  guint64 last_ref;
  guint b_run;
  gboolean broken;              /* passing through up to the next I frame */
  gboolean unsupported;         /* passing through to the end of the stream */
  guint8 intra_matrix[64];      /* raster order */
  guint8 inter_matrix[64];
  gboolean custom_intra, custom_inter;
  gboolean matrices_warned;
} RtMpeg2;

static void
rt_frame_free (RtFrame * f)
{
  gst_clear_buffer (&f->in);
  gst_clear_buffer (&f->out);
  g_free (f);
}

/* --- codecs ----------------------------------------------------------- */

static void
close_codecs (RtMpeg2 * self)
{
  avcodec_free_context (&self->dec);
  avcodec_free_context (&self->enc);
  av_packet_free (&self->pkt);
}

static gboolean
open_decoder (RtMpeg2 * self)
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
open_encoder (RtMpeg2 * self, const AVFrame * f)
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
  c = gst_rate_transcoder_new_encoder_context (self->element, codec, f);
  if (!c)
    return FALSE;
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
find_frame (RtMpeg2 * self, guint64 index)
{
  RtFrame *head = g_queue_peek_head (&self->frames);

  if (!head || index < head->index || index >= self->next_index)
    return NULL;
  return g_queue_peek_nth (&self->frames, index - head->index);
}

static void
frame_decided (RtMpeg2 * self, RtFrame * f,
    GstTwoflowRateControlAction action)
{
  f->decision.action = action;
  f->state = FRAME_READY;
}

/* Give up re-encoding: everything not yet decided passes through. */
static void
go_broken (RtMpeg2 * self)
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
release_done (RtMpeg2 * self)
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
push_ready (RtMpeg2 * self)
{
  GstFlowReturn ret = GST_FLOW_OK;
  RtFrame *f;

  while (ret == GST_FLOW_OK && (f = find_frame (self, self->next_out)) &&
      f->state == FRAME_READY) {
    GstBuffer *out = NULL;
    GstEvent *dropped = NULL;
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

    gst_rate_transcoder_account (self->element, f->type, &f->decision,
        in_size, f->qsrc, out_size, dur, f->has_picture, out != NULL);

    GST_LOG_OBJECT (self->element,
        "frame %" G_GUINT64_FORMAT " type %d action %d q %d "
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

    if (out)
      ret = gst_rate_transcoder_push (self->element, out, FALSE);
    else if (dropped)
      gst_rate_transcoder_push_event (self->element, dropped);
  }
  release_done (self);
  return ret;
}

/* No reduction is needed any more: the frames still waiting for the codecs
 * leave as they came, now, instead of holding back the passthrough frames
 * behind them (they were to be re-encoded; the encoder still gets them). */
static void
release_pending (RtMpeg2 * self)
{
  guint64 i;

  for (i = self->next_out; i < self->next_index; i++) {
    RtFrame *f = find_frame (self, i);

    if (f && f->state != FRAME_READY) {
      GstTwoflowRateControl *rc;

      GST_DEBUG_OBJECT (self->element, "frame %" G_GUINT64_FORMAT
          " passed instead", f->index);
      rc = gst_rate_transcoder_lock (self->element);
      f->decision = gst_twoflow_rate_control_get_pass_decision (rc, f->type,
          gst_buffer_get_size (f->in));
      gst_rate_transcoder_unlock (self->element);
      f->state = FRAME_READY;
    }
  }
}

static void
receive_packets (RtMpeg2 * self)
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
      GST_ELEMENT_WARNING (self->element, STREAM, ENCODE, (NULL),
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
pass_undecided (RtMpeg2 * self, RtFrame * f)
{
  if (f->state == FRAME_DECODING)
    frame_decided (self, f, GST_TWOFLOW_RATE_CONTROL_PASS);
}

/* A picture left the decoder (display order): decide, unless decided at
 * input, and feed the encoder, which keeps its references in step with
 * the source whatever is done with its output. */
static void
handle_decoded (RtMpeg2 * self, AVFrame * frame)
{
  /* indexed by GstTwoflowPictureType */
  static const gint av_types[] = { AV_PICTURE_TYPE_NONE, AV_PICTURE_TYPE_I,
    AV_PICTURE_TYPE_P, AV_PICTURE_TYPE_B
  };
  RtFrame *f = find_frame (self, (guint64) frame->pts);
  GstTwoflowRateControl *rc;
  gboolean corrupt, decide;

  if (!f || !f->in_decoder)
    return;
  f->in_decoder = FALSE;
  decide = f->state == FRAME_DECODING;

  corrupt = frame->decode_error_flags || (frame->flags & AV_FRAME_FLAG_CORRUPT);
  f->qsrc = frame_qsrc (frame);
  if (corrupt)
    gst_rate_transcoder_count_decode_error (self->element);
  if (!decide) {
    rc = gst_rate_transcoder_lock (self->element);
    gst_twoflow_rate_control_handle_source_quantizer (rc, f->type, f->qsrc);
    gst_rate_transcoder_unlock (self->element);
  }

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
      GST_ELEMENT_WARNING (self->element, LIBRARY, INIT, (NULL),
          ("cannot open the MPEG encoder for %dx%d format %d, passing through",
              frame->width, frame->height, frame->format));
      go_broken (self);
      return;
    }
  }

  if (decide) {
    rc = gst_rate_transcoder_lock (self->element);
    f->decision = gst_twoflow_rate_control_handle_decoded (rc, f->type,
        gst_buffer_get_size (f->in), f->qsrc);
    gst_rate_transcoder_unlock (self->element);
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
    GST_ELEMENT_WARNING (self->element, STREAM, ENCODE, (NULL),
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
receive_frames (RtMpeg2 * self)
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
mark_undecoded (RtMpeg2 * self, RtFrame * f)
{
  if (f && f->in_decoder) {
    GST_DEBUG_OBJECT (self->element, "frame %" G_GUINT64_FORMAT " not decoded",
        f->index);
    f->in_decoder = FALSE;
    pass_undecided (self, f);
  }
}

/* Empty both codecs (EOS): every queued frame becomes ready. */
static GstFlowReturn
drain (RtMpeg2 * self)
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
mpeg2_reset (GstRateTranscoderCodecState * state)
{
  RtMpeg2 *self = (RtMpeg2 *) state;

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
}

/* --- input parsing ---------------------------------------------------- */

static void
load_matrices (RtMpeg2 * self, gboolean load_intra,
    const guint8 * intra, gboolean load_inter, const guint8 * inter)
{
  guint8 raster[64];

  if (load_intra) {
    gst_mpeg_video_quant_matrix_get_raster_from_zigzag (raster, intra);
    if (self->enc && (!self->custom_intra ||
            memcmp (raster, self->intra_matrix, 64))
        && !self->matrices_warned) {
      GST_WARNING_OBJECT (self->element,
          "quantiser matrices changed mid-stream");
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
parse_picture (RtMpeg2 * self, const guint8 * data, gsize size,
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

/* The rate control core hears of the frame; a frame that is passed
 * whatever the decoder says leaves at once. */
static void
input_frame (RtMpeg2 * self, RtFrame * f, gsize size, GstClockTime dur,
    guint64 now)
{
  GstTwoflowRateControl *rc;
  GstTwoflowRateControlEarly early;
  guint gen;

  rc = gst_rate_transcoder_lock_input (self->element, now);
  gen = gst_twoflow_rate_control_get_generation (rc);
  gst_twoflow_rate_control_handle_input (rc, f->type, size, dur, now);
  if (gst_twoflow_rate_control_get_generation (rc) != gen) {
    /* backoffs that came before the first frame took effect just now */
    gst_rate_transcoder_start_reaction_locked (self->element);
    GST_INFO_OBJECT (self->element, "early backoffs applied: target now %"
        G_GUINT64_FORMAT, gst_twoflow_rate_control_get_target (rc));
  }
  early = gst_twoflow_rate_control_handle_parsed (rc, f->type, size,
      &f->decision);
  gst_rate_transcoder_unlock (self->element);
  if (early != GST_TWOFLOW_RATE_CONTROL_EARLY_NONE)
    f->state = FRAME_READY;
  if (early == GST_TWOFLOW_RATE_CONTROL_EARLY_PASSTHROUGH)
    release_pending (self);
}

/* Whether the frame goes to the codecs: not while passing through after
 * damage or to the end of the stream. */
static gboolean
check_structure (RtMpeg2 * self, RtFrame * f)
{
  if (f->type == GST_TWOFLOW_PICTURE_B) {
    if (++self->b_run > RT_MAX_B_FRAMES && !self->unsupported) {
      GST_ELEMENT_WARNING (self->element, STREAM, NOT_IMPLEMENTED, (NULL),
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
    GST_INFO_OBJECT (self->element, "resuming re-encoding at frame %"
        G_GUINT64_FORMAT, f->index);
    self->broken = FALSE;
    self->have_last_ref = FALSE;
    if (self->dec)
      avcodec_flush_buffers (self->dec);
  }
  return !self->broken;
}

/* The frame to the decoder, and what the decoder gives back on. */
static GstFlowReturn
decode_frame (RtMpeg2 * self, RtFrame * f, GstBuffer * buf, GstMapInfo * map)
{
  if (av_new_packet (self->pkt, map->size) < 0) {
    gst_buffer_unmap (buf, map);
    return GST_FLOW_ERROR;
  }
  memcpy (self->pkt->data, map->data, map->size);
  gst_buffer_unmap (buf, map);
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
    gst_rate_transcoder_count_decode_error (self->element);
    GST_ELEMENT_WARNING (self->element, STREAM, DECODE, (NULL),
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
    GST_WARNING_OBJECT (self->element, "frame %" G_GUINT64_FORMAT
        " stuck, passing", head->index);
    frame_decided (self, head, GST_TWOFLOW_RATE_CONTROL_PASS);
    push_ready (self);
  }

  return push_ready (self);
}

static GstFlowReturn
mpeg2_handle_frame (GstRateTranscoderCodecState * state, GstBuffer * buf,
    GstClockTime dur, guint64 now)
{
  RtMpeg2 *self = (RtMpeg2 *) state;
  RtFrame *f;
  GstMapInfo map;
  gint tref = 0;
  gboolean gop = FALSE;

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

  if (!f->has_picture) {
    GST_ELEMENT_WARNING (self->element, STREAM, DECODE, (NULL),
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

  input_frame (self, f, map.size, dur, now);

  if (!check_structure (self, f)) {
    gst_buffer_unmap (buf, &map);
    frame_decided (self, f, GST_TWOFLOW_RATE_CONTROL_PASS);
    return push_ready (self);
  }

  if (!self->dec && !open_decoder (self)) {
    gst_buffer_unmap (buf, &map);
    GST_ELEMENT_ERROR (self->element, LIBRARY, INIT, (NULL),
        ("cannot open the MPEG-%d decoder", self->mpegversion));
    return GST_FLOW_ERROR;
  }

  return decode_frame (self, f, buf, &map);
}

/* --- the ops table ---------------------------------------------------- */

static GstRateTranscoderCodecState *
mpeg2_start (GstRateTranscoder * element)
{
  RtMpeg2 *self = g_new0 (RtMpeg2, 1);

  self->element = element;
  /* MPEG-1 and MPEG-2 pictures parse alike */
  self->picture_parser =
      gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_MPEG2);
  self->mpegversion = 2;
  g_queue_init (&self->frames);
  mpeg2_reset ((GstRateTranscoderCodecState *) self);
  return (GstRateTranscoderCodecState *) self;
}

static void
mpeg2_stop (GstRateTranscoderCodecState * state)
{
  RtMpeg2 *self = (RtMpeg2 *) state;

  mpeg2_reset (state);
  gst_twoflow_picture_parser_free (self->picture_parser);
  g_free (self);
}

static GstFlowReturn
mpeg2_drain (GstRateTranscoderCodecState * state)
{
  return drain ((RtMpeg2 *) state);
}

static void
mpeg2_set_caps (GstRateTranscoderCodecState * state, const GstStructure * s)
{
  RtMpeg2 *self = (RtMpeg2 *) state;
  gint v;

  if (gst_structure_get_int (s, "mpegversion", &v) && v != self->mpegversion) {
    drain (self);
    close_codecs (self);
    self->mpegversion = v;
  }
}

const GstRateTranscoderCodec gst_rate_transcoder_codec_mpeg2 = {
  .name = "mpeg",
  .caps = "video/mpeg, mpegversion = (int) { 1, 2 }, "
      "systemstream = (boolean) false, parsed = (boolean) true",
  .latency_frames = RT_REENCODE_DELAY,
  .start = mpeg2_start,
  .stop = mpeg2_stop,
  .set_caps = mpeg2_set_caps,
  .handle_frame = mpeg2_handle_frame,
  .drain = mpeg2_drain,
  .reset = mpeg2_reset,
};
