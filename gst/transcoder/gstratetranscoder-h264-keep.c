/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder, H.264 keep=i (issue #17): the I pictures leave
 * byte-identical and, while the target is below the input, the other
 * reference pictures are re-encoded with libx264 (one reference, no B
 * frames) at the target less the I pictures' rate, in presentation order
 * out of the decoder, and spliced into the source's sequence (its
 * frame_num and POC, a PPS of their own); each run after an I starts with
 * an intra picture. Pictures nothing references are re-encoded against
 * the receiver's picture of the reference before them (a second decoder
 * on the encoder's pictures gives it) and spliced as non-reference
 * pictures, as keep=ip does (gstratetranscoder-h264-disp.c). Open-GOP
 * leading pictures are dropped; the pictures nothing references when
 * even the codec's floor misses the target, the GOP's tail below it.
 * Part of the H.264 codec (gstratetranscoder-h264.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <libavutil/opt.h>
#include <gst/twoflow/twoflowframe.h>
#include "gstratetranscoder-h264.h"

#define GST_CAT_DEFAULT rate_transcoder_debug


/* keep=i's VBV buffer, in seconds of its rate: its pictures share the link
 * with the essential flow right after a capacity drop, when a burst of
 * the encoder's (its first pictures, each run's intra picture) arrives
 * late; measured in the showdown's step: 0.75 s gave 48 late frames */
#define RT_H264_KEEP_VBV_S 0.25

static void
keep_set_rate (AVCodecContext * c, guint64 bitrate)
{
  c->bit_rate = bitrate;
  c->rc_max_rate = bitrate;
  c->rc_buffer_size = (gint) MIN (bitrate * RT_H264_KEEP_VBV_S, G_MAXINT);
}

typedef struct
{
  GstBuffer *buf;               /* the source's picture */
  GstTwoflowPictureInfo info;
  GstTwoflowH264SourcePicture sp;
  GstClockTime pts, dur;
  gboolean leading;             /* shown before the I decoded before it */
} RtKeepPic;

static void
keep_pic_free (RtKeepPic * k)
{
  gst_buffer_unref (k->buf);
  g_free (k);
}

static GstClockTime
keep_next_dts (RtH264 * self, GstClockTime fallback)
{
  GstClockTime *p = g_queue_pop_head (&self->kr_dts);
  GstClockTime dts = p ? *p : fallback;

  g_free (p);
  return dts;
}

static void
keep_clear_receiver (RtH264 * self)
{
  av_frame_free (&self->kr_recv);
}

/* The receiver decodes the encoder's picture as the encoder's own decoder
 * does (the splice changes header fields only) */
static void
keep_track_receiver (RtH264 * self, AVPacket * pkt)
{
  AVFrame *f;

  keep_clear_receiver (self);
  if (!self->kdec) {
    const AVCodec *codec = avcodec_find_decoder (AV_CODEC_ID_H264);

    if (!codec || !(self->kdec = avcodec_alloc_context3 (codec)))
      return;
    self->kdec->thread_count = 1;
    /* one picture in, one out (no B frames) */
    self->kdec->flags |= AV_CODEC_FLAG_LOW_DELAY;
    if (avcodec_open2 (self->kdec, codec, NULL) < 0) {
      avcodec_free_context (&self->kdec);
      return;
    }
  }
  if (avcodec_send_packet (self->kdec, pkt) < 0)
    return;
  f = av_frame_alloc ();
  if (f && avcodec_receive_frame (self->kdec, f) == 0)
    self->kr_recv = f;
  else
    av_frame_free (&f);
}

static void
keep_push_dropped (RtH264 * self, RtKeepPic * k, GstClockTime dts)
{
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_DROP };

  /* the receiver's references no longer known */
  if (k->info.reference)
    keep_clear_receiver (self);

  d.generation = rt_h264_generation (self);
  rt_h264_account (self, k->info.type, &d, gst_buffer_get_size (k->buf), 0,
      k->dur);
  gst_rate_transcoder_push_event (self->element, gst_twoflow_event_new_dropped
      (k->info.type, k->info.reference, k->pts, dts, k->dur));
}

/* the source's picture, byte-identical */
static GstFlowReturn
keep_push_source (RtH264 * self, RtKeepPic * k, GstClockTime dts)
{
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_PASS };
  GstBuffer *out = gst_buffer_ref (k->buf);
  gsize size = gst_buffer_get_size (out);
  gboolean ps = self->kr_prepend_ps && k->info.idr;

  d.generation = rt_h264_generation (self);
  d.budget_bits = size * 8.0;
  rt_h264_account (self, k->info.type, &d, size, size, k->dur);
  if (k->info.reference)
    self->kr_last_fn = k->sp.frame_num;
  if (ps)
    self->kr_prepend_ps = FALSE;
  if (GST_CLOCK_TIME_IS_VALID (dts)) {
    out = gst_buffer_make_writable (out);
    GST_BUFFER_DTS (out) = dts;
  }
  return rt_h264_pass (self, out, ps);
}

void
rt_h264_splice_ensure (RtH264 * self, GstTwoflowH264Splice ** splice)
{
  GstTwoflowH264SourcePicture spic;

  if (*splice)
    return;
  *splice = gst_twoflow_h264_splice_new ();
  /* avc: the SPS/PPS of codec_data */
  if (self->param_sets)
    gst_twoflow_h264_splice_parse_source (*splice,
        g_bytes_get_data (self->param_sets, NULL),
        g_bytes_get_size (self->param_sets), self->nal_length_size, &spic,
        NULL);
}

AVCodecContext *
rt_h264_splice_encoder (RtH264 * self, const AVFrame * f,
    GstTwoflowH264Splice * splice, const gchar * params, AVDictionary ** opts)
{
  const AVCodec *codec = avcodec_find_encoder_by_name ("libx264");
  const gchar *sp = gst_twoflow_h264_splice_x264_params (splice);
  AVCodecContext *c;
  gchar *all, *preset;

  *opts = NULL;
  if (!codec || (f->format != AV_PIX_FMT_YUV420P &&
          f->format != AV_PIX_FMT_YUVJ420P))
    return NULL;
  c = gst_rate_transcoder_new_encoder_context (self->element, codec, f);
  if (!c)
    return NULL;
  c->thread_count = 1;
  c->gop_size = 100000;
  c->keyint_min = 1;
  c->max_b_frames = 0;
  preset = gst_rate_transcoder_dup_preset (self->element);
  av_dict_set (opts, "preset", preset ? preset : "veryfast", 0);
  g_free (preset);
  av_dict_set (opts, "forced-idr", "1", 0);
  av_dict_set (opts, "tune", "zerolatency", 0);
  all = g_strdup_printf ("rc-lookahead=0:sync-lookahead=0:mbtree=0:"
      "bframes=0:ref=1:weightp=0:repeat-headers=1:annexb=1:scenecut=0:"
      "sliced-threads=0:%s%slog=0%s%s", params, *params ? ":" : "",
      *sp ? ":" : "", sp);
  av_dict_set (opts, "x264-params", all, 0);
  g_free (all);
  return c;
}

static gboolean
keep_open_encoder (RtH264 * self, const AVFrame * f,
    guint64 bitrate)
{
  AVDictionary *opts;
  AVCodecContext *c = rt_h264_splice_encoder (self, f, self->splice, "",
      &opts);

  if (!c)
    return FALSE;
  keep_set_rate (c, bitrate);
  if (!gst_rate_transcoder_open_encoder (&c, c->codec, &opts))
    return FALSE;
  self->kenc = c;
  self->kenc_n = 0;
  self->kenc_bitrate = bitrate;
  GST_INFO_OBJECT (self->element,
      "keep=i: encoder for the non-essential pictures "
      "open at %" G_GUINT64_FORMAT " bit/s", bitrate);
  return TRUE;
}

/* The pictures nothing references are re-encoded too: re-encoding every
 * non-essential picture at the codec's floor meets the target. Their
 * share of the non-essential pictures' budget in @fraction. */
static gboolean
keep_disposable_on (RtH264 * self, const GstTwoflowRateControlStats * s,
    gint width, gint height, gdouble * fraction, gdouble * ratio)
{
  gdouble share = s->gop_length > 1 ?
      (s->gop_length - 1.0) / s->gop_length : 1.0;
  gdouble in = s->input_bitrate - s->floor_bitrate;
  gdouble avail = s->target_bitrate - s->floor_bitrate;
  gint fps_n, fps_d;

  /* before a whole GOP was seen the floor is one I frame over a short
   * window: half of each instead */
  if (s->gop_length == 0) {
    in = s->input_bitrate / 2;
    avail = s->target_bitrate / 2;
  }
  if (self->ds_no_encode || s->disposable_bitrate <= 0 || in <= 0)
    return FALSE;
  gst_rate_transcoder_get_framerate (self->element, &fps_n, &fps_d);
  if (avail < RT_H264_MIN_BPP * width * height * fps_n / MAX (fps_d, 1) *
      share)
    return FALSE;
  if (fraction)
    *fraction = CLAMP (s->disposable_bitrate / in, 0.0, 0.9);
  if (ratio)
    *ratio = CLAMP (avail / in, 0.0, 1.0);
  return TRUE;
}

/* The budget of the non-essential pictures, in the encoder's own time
 * (it sees only them, at the source's frame rate); 0 below the floor. */
static guint64
keep_encoder_rate (RtH264 * self, const AVFrame * f)
{
  GstTwoflowRateControlStats s;
  gdouble share, rate, floor, fd;
  gint fps_n, fps_d;

  gst_twoflow_rate_control_get_stats (gst_rate_transcoder_lock
      (self->element), &s);
  gst_rate_transcoder_unlock (self->element);
  share = s.gop_length > 1 ? (s.gop_length - 1.0) / s.gop_length : 1.0;
  rate = (s.target_bitrate - s.floor_bitrate) / share;
  if (keep_disposable_on (self, &s, f->width, f->height, &fd, NULL))
    /* the disposable pictures take their share, and the encoder sees
     * only the reference pictures */
    rate = (s.target_bitrate - s.floor_bitrate) * (1.0 - fd) /
        MAX (share - self->ds_disp_share, 0.1);
  /* before a whole GOP was seen the floor is one I frame over a short
   * window: a guess instead of the floor */
  if (s.gop_length == 0)
    rate = MAX (rate, s.target_bitrate / 2);
  gst_rate_transcoder_get_framerate (self->element, &fps_n, &fps_d);
  floor = RT_H264_MIN_BPP * f->width * f->height * fps_n /
      MAX (fps_d, 1);
  return rate >= floor ? (guint64) rate : 0;
}

static GstFlowReturn
keep_encode (RtH264 * self, RtKeepPic * k, AVFrame * frame,
    GstClockTime dts)
{
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_ENCODE };
  guint64 rate = keep_encoder_rate (self, frame);
  GByteArray *out;
  GstBuffer *buf;
  guint fn;
  gsize n;
  guint8 *sd;
  gint err;

  if (rate == 0) {
    GST_DEBUG_OBJECT (self->element, "keep=i: budget below the codec's floor, "
        "dropping to the next I");
    self->kr_tail = TRUE;
  }
  if (self->kr_tail) {
    keep_push_dropped (self, k, dts);
    return GST_FLOW_OK;
  }
  if (!self->kenc && !keep_open_encoder (self, frame, rate)) {
    GST_ELEMENT_WARNING (self->element, LIBRARY, INIT, (NULL),
        ("cannot open libx264 for the non-essential pictures, dropping "
            "them instead"));
    self->kr_unsupported = TRUE;
    self->kr_tail = TRUE;
    keep_push_dropped (self, k, dts);
    return GST_FLOW_OK;
  }
  if (rate != self->kenc_bitrate) {
    keep_set_rate (self->kenc, rate);
    self->kenc_bitrate = rate;
  }
  d.generation = rt_h264_generation (self);
  frame->pts = self->kenc_n++;
  /* x264 cannot predict from the source's pictures (its references are
   * its own reconstructions): each run after an essential picture starts
   * with an intra picture */
  frame->pict_type = self->kr_intra ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
  if ((err = avcodec_send_frame (self->kenc, frame)) < 0 ||
      (err = avcodec_receive_packet (self->kenc, self->pkt)) < 0) {
    GST_WARNING_OBJECT (self->element, "keep=i: encoder gave no picture (%s)",
        av_err2str (err));
    self->kr_tail = TRUE;
    keep_push_dropped (self, k, dts);
    return GST_FLOW_OK;
  }
  fn = (self->kr_last_fn + 1) &
      ((1u << gst_twoflow_h264_splice_log2_max_frame_num (self->splice)) - 1);
  out = g_byte_array_new ();
  if (!gst_twoflow_h264_splice_rewrite (self->splice, self->pkt->data,
          self->pkt->size, fn, k->sp.poc_lsb, self->nal_length_size, out)) {
    GST_WARNING_OBJECT (self->element,
        "keep=i: encoded picture cannot be spliced, "
        "dropping to the next I");
    g_byte_array_unref (out);
    av_packet_unref (self->pkt);
    self->kr_tail = TRUE;
    keep_push_dropped (self, k, dts);
    return GST_FLOW_OK;
  }
  sd = av_packet_get_side_data (self->pkt, AV_PKT_DATA_QUALITY_STATS, &n);
  if (sd && n >= 4)
    d.q = GST_READ_UINT32_LE (sd) / FF_QP2LAMBDA;
  keep_track_receiver (self, self->pkt);
  av_packet_unref (self->pkt);
  self->kr_intra = FALSE;
  self->kr_last_fn = fn;

  n = out->len;
  buf = gst_buffer_new_wrapped (g_byte_array_free (out, FALSE), n);
  GST_BUFFER_PTS (buf) = k->pts;
  GST_BUFFER_DTS (buf) = dts;
  GST_BUFFER_DURATION (buf) = k->dur;
  GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
  /* an intra picture standing for the source's P: the split numbers and
   * types it as that */
  gst_buffer_add_twoflow_picture_meta (buf, k->info.type, TRUE);
  d.budget_bits = n * 8.0;
  GST_LOG_OBJECT (self->element,
      "keep=i: picture %" GST_TIME_FORMAT " re-encoded, "
      "%" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT " bytes, frame_num %u",
      GST_TIME_ARGS (k->pts), n, gst_buffer_get_size (k->buf), fn);
  rt_h264_account (self, k->info.type, &d, 0, n, k->dur);
  return rt_h264_push_out (self, buf);
}

/* A picture nothing references, re-encoded against the receiver's picture
 * of the last reference out (the one before it: the output is in
 * presentation order), spliced as a non-reference picture; dropped when
 * that is not known or the target is below the codec's floor for all. */
static GstFlowReturn
keep_encode_disposable (RtH264 * self, RtKeepPic * k, AVFrame * frame,
    GstClockTime dts)
{
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_ENCODE };
  GstTwoflowRateControlStats s;
  gsize size = gst_buffer_get_size (k->buf), n;
  guint mask, fn;
  gdouble ratio;
  GByteArray *out = NULL;
  GstBuffer *buf;
  gint q = 0;

  gst_twoflow_rate_control_get_stats (gst_rate_transcoder_lock
      (self->element), &s);
  gst_rate_transcoder_unlock (self->element);
  if (self->kr_tail || !self->kr_recv || !self->ds_splice ||
      !keep_disposable_on (self, &s, frame->width, frame->height, NULL,
          &ratio)) {
    GST_LOG_OBJECT (self->element, "keep=i: disposable picture %"
        GST_TIME_FORMAT " dropped (tail %d, receiver's reference %s)",
        GST_TIME_ARGS (k->pts), self->kr_tail, self->kr_recv ? "known" :
        "not known");
    keep_push_dropped (self, k, dts);
    return GST_FLOW_OK;
  }
  /* its share of what the non-essential pictures may take */
  d.budget_bits = size * 8.0 * ratio;
  mask = (1u << gst_twoflow_h264_splice_log2_max_frame_num (self->splice)) -
      1;
  fn = (self->kr_last_fn + 1) & mask;
  out = rt_h264_disp_code (self, self->ds_splice, frame, self->kr_recv, size,
      d.budget_bits, fn, k->sp.poc_lsb, self->kr_last_fn, k->pts, &q);
  if (!out) {
    GST_ELEMENT_WARNING (self->element, LIBRARY, ENCODE, (NULL),
        ("keep=i cannot re-encode the pictures nothing references (no "
            "libx264, or its picture cannot be spliced): dropping them "
            "instead"));
    self->ds_no_encode = TRUE;
    keep_push_dropped (self, k, dts);
    return GST_FLOW_OK;
  }
  n = out->len;
  buf = gst_buffer_new_wrapped (g_byte_array_free (out, FALSE), n);
  GST_BUFFER_PTS (buf) = k->pts;
  GST_BUFFER_DTS (buf) = dts;
  GST_BUFFER_DURATION (buf) = k->dur;
  GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
  gst_buffer_add_twoflow_picture_meta (buf, k->info.type, FALSE);
  d.generation = rt_h264_generation (self);
  d.q = q;
  rt_h264_account (self, k->info.type, &d, 0, n, k->dur);
  return rt_h264_push_out (self, buf);
}

/* One pending picture out, in presentation order. */
static GstFlowReturn
keep_output (RtH264 * self, RtKeepPic * k, AVFrame * frame)
{
  GstFlowReturn ret = GST_FLOW_OK;

  if (k->leading) {
    /* numbered after its I, as in the source's decode order */
    g_queue_push_tail (&self->kr_after_i, k);
    return GST_FLOW_OK;
  }
  if (k->info.type == GST_TWOFLOW_PICTURE_I) {
    ret = keep_push_source (self, k, keep_next_dts (self, GST_CLOCK_TIME_NONE));
    /* the receiver's picture of it: the source's, decoded */
    keep_clear_receiver (self);
    if (frame)
      self->kr_recv = av_frame_clone (frame);
    self->kr_intra = TRUE;
    self->kr_tail = FALSE;
    while (!g_queue_is_empty (&self->kr_after_i)) {
      RtKeepPic *l = g_queue_pop_head (&self->kr_after_i);

      keep_push_dropped (self, l, keep_next_dts (self, l->pts));
      keep_pic_free (l);
    }
  } else if (!frame) {
    keep_push_dropped (self, k, keep_next_dts (self, k->pts));
  } else if (!k->info.reference) {
    /* not given to the encoder (its next picture would predict from it) */
    ret = keep_encode_disposable (self, k, frame, keep_next_dts (self,
            k->pts));
  } else {
    ret = keep_encode (self, k, frame, keep_next_dts (self, k->pts));
  }
  keep_pic_free (k);
  return ret;
}

static GstFlowReturn
keep_receive_frames (RtH264 * self)
{
  GstFlowReturn ret = GST_FLOW_OK;
  AVFrame *frame = av_frame_alloc ();

  while (avcodec_receive_frame (self->dec, frame) == 0) {
    GstClockTime pts = frame->pts;
    GList *l;

    if (!self->kr_active || frame->pts == AV_NOPTS_VALUE ||
        (GST_CLOCK_TIME_IS_VALID (self->max_passed_pts) &&
            pts <= self->max_passed_pts)) {
      av_frame_unref (frame);
      continue;
    }
    /* pictures shown before this one that never came out of the decoder */
    while ((l = self->kr_pending.head)) {
      RtKeepPic *k = l->data;

      if (k->pts >= pts)
        break;
      g_queue_pop_head (&self->kr_pending);
      if (ret == GST_FLOW_OK)
        ret = keep_output (self, k, NULL);
      else
        keep_pic_free (k);
    }
    for (l = self->kr_pending.head; l; l = l->next)
      if (((RtKeepPic *) l->data)->pts == pts)
        break;
    if (l) {
      RtKeepPic *k = l->data;

      g_queue_delete_link (&self->kr_pending, l);
      if (ret == GST_FLOW_OK)
        ret = keep_output (self, k, frame);
      else
        keep_pic_free (k);
    }
    av_frame_unref (frame);
  }
  av_frame_free (&frame);
  return ret;
}

/* Everything the decoder holds out, then what it never gave back. */
GstFlowReturn
rt_h264_keep_drain (RtH264 * self)
{
  GstFlowReturn ret = GST_FLOW_OK;

  if (self->dec && self->kr_active) {
    avcodec_send_packet (self->dec, NULL);
    ret = keep_receive_frames (self);
    avcodec_flush_buffers (self->dec);
  }
  while (!g_queue_is_empty (&self->kr_pending)) {
    RtKeepPic *k = g_queue_pop_head (&self->kr_pending);

    if (ret == GST_FLOW_OK)
      ret = keep_output (self, k, NULL);
    else
      keep_pic_free (k);
  }
  g_queue_clear_full (&self->kr_after_i, (GDestroyNotify) keep_pic_free);
  g_queue_clear_full (&self->kr_dts, g_free);
  self->kr_tail = FALSE;
  self->kr_intra = TRUE;
  keep_clear_receiver (self);
  return ret;
}

void
rt_h264_keep_reset (RtH264 * self)
{
  g_queue_clear_full (&self->kr_pending, (GDestroyNotify) keep_pic_free);
  g_queue_clear_full (&self->kr_after_i, (GDestroyNotify) keep_pic_free);
  g_queue_clear_full (&self->kr_dts, g_free);
  avcodec_free_context (&self->kenc);
  avcodec_free_context (&self->kdec);
  keep_clear_receiver (self);
  g_clear_pointer (&self->splice, gst_twoflow_h264_splice_free);
  self->kr_unsupported = FALSE;
  self->kr_active = FALSE;
  self->kr_intra = TRUE;
  self->kr_tail = FALSE;
  self->kr_prepend_ps = FALSE;
  self->kr_last_fn = 0;
  self->kr_last_i_pts = GST_CLOCK_TIME_NONE;
}

/* keep=i: essential (I) pictures byte-identical; while the target is below
 * the input, the others re-encoded at the rest of the target, in
 * presentation order out of the decoder (each run after an I starting
 * with an intra picture), spliced into the source's sequence. Passing
 * through comes back at a source IDR. */
static GstFlowReturn
h264_chain_keep (RtH264 * self, GstBuffer * buf, GstMapInfo * map,
    const GstTwoflowPictureInfo * info,
    const GstTwoflowH264SourcePicture * spic,
    gsize size, GstClockTime dur, guint64 now)
{
  GstTwoflowRateControlLayer layer;
  GstFlowReturn ret = GST_FLOW_OK;
  gboolean reduce;

  if (info->type == GST_TWOFLOW_PICTURE_I)
    layer = GST_TWOFLOW_RATE_CONTROL_LAYER_KEPT;
  else if (!info->reference)
    layer = GST_TWOFLOW_RATE_CONTROL_LAYER_DISPOSABLE;
  else
    layer = GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL;
  gst_twoflow_rate_control_handle_input_layer (gst_rate_transcoder_lock_input
      (self->element, now), info->type, layer, size, dur, now);
  gst_rate_transcoder_unlock (self->element);
  rt_h264_current_target (self, &reduce);
  self->ds_disp_share = 0.95 * self->ds_disp_share +
      (layer == GST_TWOFLOW_RATE_CONTROL_LAYER_DISPOSABLE ? 0.05 : 0);

  if (!self->dec && !rt_h264_open_decoder (self)) {
    gst_buffer_unmap (buf, map);
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self->element, LIBRARY, INIT, (NULL),
        ("cannot open the H.264 decoder"));
    return GST_FLOW_ERROR;
  }

  if (info->idr && self->kr_active) {
    /* nothing after an IDR predicts from before it: the run ends here */
    ret = rt_h264_keep_drain (self);
    if (!reduce) {
      GST_INFO_OBJECT (self->element,
          "keep=i: no reduction needed, passing from "
          "this IDR");
      self->kr_active = FALSE;
      self->max_passed_pts = GST_CLOCK_TIME_NONE;
    }
  }
  if (!self->kr_active && reduce && info->type != GST_TWOFLOW_PICTURE_B) {
    /* what was passed is a presentation-order prefix: the decoder's
     * pictures after it are this one and those after */
    GST_INFO_OBJECT (self->element,
        "keep=i: re-encoding the non-essential pictures "
        "from this %s picture", info->type == GST_TWOFLOW_PICTURE_I ?
        "I" : "P");
    self->kr_active = TRUE;
    self->kr_intra = TRUE;
    self->kr_tail = FALSE;
  }
  if (info->type == GST_TWOFLOW_PICTURE_I)
    self->kr_last_i_pts = GST_BUFFER_PTS (buf);

  if (!self->kr_active) {
    GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_PASS };

    d.generation = rt_h264_generation (self);
    d.budget_bits = size * 8.0;
    rt_h264_account (self, info->type, &d, size, size, dur);
    if (info->reference)
      self->kr_last_fn = spic->frame_num;
    if (ret == GST_FLOW_OK)
      ret = rt_h264_pass (self, gst_buffer_ref (buf), self->kr_prepend_ps &&
          info->idr);
    if (info->idr)
      self->kr_prepend_ps = FALSE;
  } else {
    RtKeepPic *k = g_new0 (RtKeepPic, 1);
    GstClockTime *dts = g_new (GstClockTime, 1);

    k->buf = gst_buffer_ref (buf);
    k->info = *info;
    k->sp = *spic;
    k->pts = GST_BUFFER_PTS (buf);
    k->dur = dur;
    k->leading = info->type != GST_TWOFLOW_PICTURE_I &&
        GST_CLOCK_TIME_IS_VALID (self->kr_last_i_pts) &&
        k->pts < self->kr_last_i_pts;
    g_queue_push_tail (&self->kr_pending, k);
    *dts = GST_BUFFER_DTS (buf);
    g_queue_push_tail (&self->kr_dts, dts);
  }

  rt_h264_send_packet (self, buf, map, dur);
  gst_buffer_unmap (buf, map);
  gst_buffer_unref (buf);
  if (ret == GST_FLOW_OK)
    ret = keep_receive_frames (self);
  else
    keep_receive_frames (self);
  return ret;
}

/* keep=i: the splice into the source's sequence is possible (else
 * dropping instead, as keep=ip does) */
gboolean
rt_h264_keep_handle_frame (RtH264 * self, GstBuffer * buf, GstMapInfo * map,
    const GstTwoflowPictureInfo * info, gsize size, GstClockTime dur,
    guint64 now, GstFlowReturn * result)
{
  GstFlowReturn ret;

  /* keep=i: the non-essential pictures re-encoded when the target asks
   * for less (set while keep=none re-encodes: from the next source IDR) */
  if (gst_rate_transcoder_get_keep (self->element) ==
      GST_TWOFLOW_RATE_CONTROL_KEEP_I && !self->kr_unsupported &&
      !self->hevc &&
      (!self->h264_encoding || info->idr) && GST_BUFFER_PTS_IS_VALID (buf)) {
    GstTwoflowH264SourcePicture spic;
    const gchar *why = NULL;

    rt_h264_splice_ensure (self, &self->splice);
    /* the splice of the pictures nothing references: their encoder's PPS
     * is not the reference pictures' */
    rt_h264_splice_ensure (self, &self->ds_splice);
    gst_twoflow_h264_splice_parse_source (self->ds_splice, map->data,
        map->size, self->nal_length_size, &spic, NULL);
    /* the pictures re-encoded before an IDR leave first, spliced under
     * the SPS they belong to (the IDR may bring another) */
    if (info->idr && self->kr_active) {
      ret = rt_h264_keep_drain (self);
      if (ret != GST_FLOW_OK) {
        gst_buffer_unmap (buf, map);
        gst_buffer_unref (buf);
        *result = ret;
        return TRUE;
      }
    }
    if (gst_twoflow_h264_splice_parse_source (self->splice, map->data,
            map->size, self->nal_length_size, &spic, &why) && !why) {
      if (self->h264_encoding) {
        ret = rt_h264_drain (self);
        self->kr_prepend_ps = self->enc_n > 0 &&
            !rt_h264_has_param_sets (self, map->data, map->size);
        self->enc_n = 0;
        if (ret != GST_FLOW_OK) {
          gst_buffer_unmap (buf, map);
          gst_buffer_unref (buf);
          *result = ret;
          return TRUE;
        }
      }
      *result = h264_chain_keep (self, buf, map, info, &spic, size, dur,
          now);
      return TRUE;
    }
    if (why) {
      GST_ELEMENT_WARNING (self->element, STREAM, NOT_IMPLEMENTED, (NULL),
          ("keep=i re-encodes the non-essential pictures only in sequences "
              "it can splice into (this one has %s): dropping them instead",
              why));
      self->kr_unsupported = TRUE;
    }
  }

  return FALSE;
}
