/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder, H.264 keep=ip (issue #28, item 3): the I and P (every
 * reference) pictures leave byte-identical, in the source's decode order;
 * while the target is below the input, the pictures nothing references
 * (nal_ref_idc = 0) are re-encoded instead of dropped. The receiver's
 * references are then exactly the source's, so each disposable picture D
 * is coded by libx264 as a P picture against one of them, R: the nearest
 * in presentation time of those the receiver holds (the DPB's sliding
 * window followed): R first as an intra picture
 * at a fine quantizer (thrown away: it only gives x264 a reconstruction
 * close to R), then D, spliced as a non-reference picture with the
 * source's frame_num and POC and R forced as its one reference. The
 * mismatch between x264's R and the source's ends with D (nothing
 * predicts from it). Dropped only when re-encoding them at the codec's
 * floor would still miss the target. Part of the H.264 codec
 * (gstratetranscoder-h264.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>
#include <libavutil/opt.h>
#include <gst/twoflow/twoflowframe.h>
#include "gstratetranscoder-h264.h"

#define GST_CAT_DEFAULT rate_transcoder_debug

/* R's quantizer below D's (x264 ipratio: 6·log2 of it, about 20 QP):
 * what D's prediction gets wrong against the receiver's R stays far below
 * D's own coding error, for an intra picture that costs only CPU */
#define RT_H264_DISP_IPRATIO 10
/* decoded pictures waited for before a disposable picture leaves as it
 * came (the decoder's reorder delay is at most 16 pictures) */
#define RT_H264_DISP_MAX_WAIT 20
#define RT_H264_DISP_CRF_MIN 8.0
#define RT_H264_DISP_CRF_MAX 51.0

typedef struct
{
  GstBuffer *buf;               /* the source's picture */
  GstTwoflowPictureInfo info;
  GstTwoflowH264SourcePicture sp;
  GstClockTime pts, dur;
  GstTwoflowRateControlDecision d;
  gboolean prepend_ps;
  GstClockTime r_pts;           /* ENCODE: the reference it is coded against */
  guint r_fn;
} RtDispPic;

static void
disp_pic_free (RtDispPic * p)
{
  gst_buffer_unref (p->buf);
  g_free (p);
}

static gboolean
disp_frame_needed (RtH264 * self, GstClockTime pts)
{
  GList *l;
  guint i;

  for (i = 0; i < self->ds_n_refs; i++)
    if (pts == self->ds_refs[i].pts)
      return TRUE;
  for (l = self->ds_pending.head; l; l = l->next) {
    RtDispPic *p = l->data;

    if (p->d.action == GST_TWOFLOW_RATE_CONTROL_ENCODE &&
        (p->pts == pts || p->r_pts == pts))
      return TRUE;
  }
  return FALSE;
}

static AVFrame *
disp_find_frame (RtH264 * self, GstClockTime pts)
{
  GList *l;

  for (l = self->ds_frames.head; l; l = l->next)
    if ((GstClockTime) ((AVFrame *) l->data)->pts == pts)
      return l->data;
  return NULL;
}

static void
disp_prune_frames (RtH264 * self)
{
  GList *l = self->ds_frames.head;

  while (l) {
    GList *next = l->next;
    AVFrame *f = l->data;

    if (!disp_frame_needed (self, f->pts)) {
      g_queue_delete_link (&self->ds_frames, l);
      av_frame_free (&f);
    }
    l = next;
  }
}

static void
disp_receive_frames (RtH264 * self)
{
  AVFrame *frame = av_frame_alloc ();

  while (avcodec_receive_frame (self->dec, frame) == 0) {
    if (frame->pts != AV_NOPTS_VALUE && frame->pts >= 0 &&
        disp_frame_needed (self, frame->pts) &&
        !disp_find_frame (self, frame->pts))
      g_queue_push_tail (&self->ds_frames, av_frame_clone (frame));
    av_frame_unref (frame);
  }
  av_frame_free (&frame);
}

/* The bits a disposable picture of @size bytes may take when re-encoded,
 * its share of (target − floor); FALSE when it passes as it came (the
 * target at the input) or when even the codec's floor for the disposable
 * pictures misses the target (then the rate control core drops). */
static gboolean
disp_budget (RtH264 * self, gsize size, gdouble * budget)
{
  GstTwoflowRateControlStats s;
  gdouble avail, floor, fps;
  gint fps_n, fps_d;

  gst_twoflow_rate_control_get_stats (gst_rate_transcoder_lock
      (self->element), &s);
  gst_rate_transcoder_unlock (self->element);
  if (s.input_bitrate <= 0 || s.target_bitrate >= s.input_bitrate ||
      s.disposable_bitrate <= 0 || !self->dec || self->dec->width <= 0)
    return FALSE;
  gst_rate_transcoder_get_framerate (self->element, &fps_n, &fps_d);
  fps = (gdouble) fps_n / MAX (fps_d, 1);
  avail = s.target_bitrate - s.floor_bitrate;
  floor = RT_H264_MIN_BPP * self->dec->width * self->dec->height * fps *
      self->ds_disp_share;
  GST_LOG_OBJECT (self->element, "keep=ip: target %.0f, floor %.0f, "
      "disposable %.0f, input %.0f bit/s; codec floor %.0f",
      s.target_bitrate, s.floor_bitrate, s.disposable_bitrate,
      s.input_bitrate, floor);
  if (avail < floor)
    return FALSE;
  *budget = size * 8.0 * MIN (1.0, avail / s.disposable_bitrate);
  return TRUE;
}

static gboolean
disp_open_encoder (RtH264 * self, GstTwoflowH264Splice * splice,
    const AVFrame * f)
{
  AVDictionary *opts;
  AVCodecContext *c;
  gchar *params = g_strdup_printf ("ipratio=%d", RT_H264_DISP_IPRATIO);

  /* (D predicts from R only) */
  c = rt_h264_splice_encoder (self, f, splice, params, &opts);
  g_free (params);
  if (!c)
    return FALSE;
  /* constant rate factor, set per picture from the budget (x264 takes a
   * new one at the next picture) */
  av_dict_set (&opts, "crf", "30", 0);
  if (!gst_rate_transcoder_open_encoder (&c, c->codec, &opts))
    return FALSE;
  self->denc = c;
  self->denc_n = 0;
  GST_INFO_OBJECT (self->element, "encoder for the disposable pictures "
      "open");
  return TRUE;
}

/* one picture through the encoder, its packet in self->pkt */
static gboolean
disp_code (RtH264 * self, const AVFrame * src, enum AVPictureType type)
{
  AVFrame *f = av_frame_clone (src);
  gint err;

  if (!f)
    return FALSE;
  f->pict_type = type;
  f->pts = self->denc_n++;
  err = avcodec_send_frame (self->denc, f);
  av_frame_free (&f);
  if (err < 0 || (err = avcodec_receive_packet (self->denc, self->pkt)) < 0) {
    GST_WARNING_OBJECT (self->element, "encoder for the disposable "
        "pictures gave none (%s)", av_err2str (err));
    return FALSE;
  }
  return TRUE;
}

GByteArray *
rt_h264_disp_code (RtH264 * self, GstTwoflowH264Splice * splice,
    const AVFrame * fd, const AVFrame * fr, gsize src_size,
    gdouble budget_bits, guint frame_num, guint poc_lsb, guint ref_fn,
    GstClockTime pts, gint * q)
{
  gdouble src_bits = src_size * 8.0, want, crf, bits;
  GByteArray *out;
  gboolean ok;
  guint8 *sd;
  gsize n;

  if (!self->denc && !disp_open_encoder (self, splice, fd))
    return NULL;
  if (fd->width != self->denc->width || fd->height != self->denc->height ||
      fr->width != fd->width || fr->height != fd->height ||
      fd->format != self->denc->pix_fmt || fr->format != fd->format)
    return NULL;
  if (!disp_code (self, fr, AV_PICTURE_TYPE_I))
    return NULL;
  ok = gst_twoflow_h264_splice_take_params (splice, self->pkt->data,
      self->pkt->size);
  av_packet_unref (self->pkt);
  if (!ok)
    return NULL;

  /* bits ~ source bits · 2^(model − crf/6), the model learnt from the
   * pictures before; what they took over their budget repaid here */
  want = CLAMP (budget_bits - 0.5 * self->ds_debt, 0.5 * budget_bits,
      2.0 * budget_bits);
  crf = 6.0 * (self->ds_model - log2 (MAX (want, 8.0) / src_bits));
  crf = CLAMP (crf, RT_H264_DISP_CRF_MIN, RT_H264_DISP_CRF_MAX);
  av_opt_set_double (self->denc->priv_data, "crf", crf, 0);
  if (!disp_code (self, fd, AV_PICTURE_TYPE_P))
    return NULL;
  out = g_byte_array_new ();
  if (!gst_twoflow_h264_splice_rewrite_nonref (splice, self->pkt->data,
          self->pkt->size, frame_num, poc_lsb, ref_fn, self->nal_length_size,
          out)) {
    av_packet_unref (self->pkt);
    g_byte_array_unref (out);
    return NULL;
  }
  sd = av_packet_get_side_data (self->pkt, AV_PKT_DATA_QUALITY_STATS, &n);
  *q = sd && n >= 4 ? GST_READ_UINT32_LE (sd) / FF_QP2LAMBDA : 0;
  bits = self->pkt->size * 8.0;
  av_packet_unref (self->pkt);
  self->ds_model = 0.5 * self->ds_model +
      0.5 * (log2 (bits / src_bits) + crf / 6.0);
  self->ds_debt += out->len * 8.0 - budget_bits;
  GST_LOG_OBJECT (self->element, "disposable picture %" GST_TIME_FORMAT
      " re-encoded at crf %.1f: %u of %.0f bytes (budget %.0f)",
      GST_TIME_ARGS (pts), crf, out->len, src_bits / 8, budget_bits / 8);
  return out;
}

/* the source's picture as it came, or nothing in its place */
static GstFlowReturn
disp_output_source (RtH264 * self, RtDispPic * p)
{
  gsize size = gst_buffer_get_size (p->buf);

  if (p->d.action == GST_TWOFLOW_RATE_CONTROL_DROP) {
    rt_h264_account (self, p->info.type, &p->d, size, 0, p->dur);
    gst_rate_transcoder_push_event (self->element,
        gst_twoflow_event_new_dropped (p->info.type, p->info.reference,
            p->pts, GST_BUFFER_DTS (p->buf), p->dur));
    return GST_FLOW_OK;
  }
  p->d.action = GST_TWOFLOW_RATE_CONTROL_PASS;
  rt_h264_account (self, p->info.type, &p->d, size, size, p->dur);
  return rt_h264_pass (self, gst_buffer_ref (p->buf), p->prepend_ps);
}

static GstFlowReturn
disp_output_encoded (RtH264 * self, RtDispPic * p, const AVFrame * fd,
    const AVFrame * fr)
{
  GByteArray *out = NULL;
  GstBuffer *buf;
  gsize n;
  gint q = 0;

  if (fd && fr)
    out = rt_h264_disp_code (self, self->ds_splice, fd, fr,
        gst_buffer_get_size (p->buf), p->d.budget_bits, p->sp.frame_num,
        p->sp.poc_lsb, p->r_fn, p->pts, &q);
  else
    GST_DEBUG_OBJECT (self->element, "keep=ip: picture %" GST_TIME_FORMAT
        " or its reference not decoded, passed", GST_TIME_ARGS (p->pts));
  if (fd && fr && !out) {
    GST_ELEMENT_WARNING (self->element, LIBRARY, ENCODE, (NULL),
        ("keep=ip cannot re-encode the disposable pictures (no libx264, "
            "not 8-bit 4:2:0, or its picture cannot be spliced): dropping "
            "them instead"));
    self->ds_no_encode = TRUE;
  }
  if (out && out->len >= gst_buffer_get_size (p->buf)) {
    GST_LOG_OBJECT (self->element, "keep=ip: re-encoded picture %"
        GST_TIME_FORMAT " not smaller than the source's, passed",
        GST_TIME_ARGS (p->pts));
    g_byte_array_unref (out);
    out = NULL;
  }
  if (!out) {
    p->d.budget_bits = gst_buffer_get_size (p->buf) * 8.0;
    return disp_output_source (self, p);
  }
  n = out->len;
  buf = gst_buffer_new_wrapped (g_byte_array_free (out, FALSE), n);
  GST_BUFFER_PTS (buf) = p->pts;
  GST_BUFFER_DTS (buf) = GST_BUFFER_DTS (p->buf);
  GST_BUFFER_DURATION (buf) = p->dur;
  GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT);
  /* a P slice standing for the source's (B) picture: the split types it
   * as that */
  gst_buffer_add_twoflow_picture_meta (buf, p->info.type, FALSE);
  p->d.q = q;
  rt_h264_account (self, p->info.type, &p->d, 0, n, p->dur);
  if (!GST_CLOCK_TIME_IS_VALID (self->max_passed_pts) ||
      p->pts > self->max_passed_pts)
    self->max_passed_pts = p->pts;
  return rt_h264_push_out (self, buf);
}

/* Pictures out in decode order; a disposable one to re-encode waits for
 * its own and its reference's decoded pictures (@force: not any more). */
static GstFlowReturn
disp_process (RtH264 * self, gboolean force)
{
  GstFlowReturn ret = GST_FLOW_OK;
  RtDispPic *p;

  while (ret == GST_FLOW_OK && (p = g_queue_peek_head (&self->ds_pending))) {
    if (p->d.action == GST_TWOFLOW_RATE_CONTROL_ENCODE) {
      AVFrame *fd = disp_find_frame (self, p->pts);
      AVFrame *fr = disp_find_frame (self, p->r_pts);

      if ((!fd || !fr) && !force &&
          g_queue_get_length (&self->ds_pending) < RT_H264_DISP_MAX_WAIT)
        break;
      g_queue_pop_head (&self->ds_pending);
      if (self->ds_no_encode)
        fd = fr = NULL;
      ret = disp_output_encoded (self, p, fd, fr);
    } else {
      g_queue_pop_head (&self->ds_pending);
      ret = disp_output_source (self, p);
    }
    disp_pic_free (p);
    disp_prune_frames (self);
  }
  return ret;
}

/* What is queued leaves (the decoder left as it is: another way of
 * reducing may take it over). */
static GstFlowReturn
disp_flush (RtH264 * self)
{
  GstFlowReturn ret = disp_process (self, TRUE);

  g_queue_clear_full (&self->ds_pending, (GDestroyNotify) disp_pic_free);
  while (!g_queue_is_empty (&self->ds_frames)) {
    AVFrame *f = g_queue_pop_head (&self->ds_frames);

    av_frame_free (&f);
  }
  self->ds_active = FALSE;
  self->ds_n_refs = 0;
  return ret;
}

GstFlowReturn
rt_h264_disp_drain (RtH264 * self)
{
  if (!self->ds_active)
    return GST_FLOW_OK;
  if (self->dec) {
    avcodec_send_packet (self->dec, NULL);
    disp_receive_frames (self);
    avcodec_flush_buffers (self->dec);
  }
  return disp_flush (self);
}

void
rt_h264_disp_reset (RtH264 * self)
{
  g_queue_clear_full (&self->ds_pending, (GDestroyNotify) disp_pic_free);
  while (!g_queue_is_empty (&self->ds_frames)) {
    AVFrame *f = g_queue_pop_head (&self->ds_frames);

    av_frame_free (&f);
  }
  avcodec_free_context (&self->denc);
  g_clear_pointer (&self->ds_splice, gst_twoflow_h264_splice_free);
  self->ds_active = FALSE;
  self->ds_unsupported = FALSE;
  self->ds_no_encode = FALSE;
  self->ds_n_refs = 0;
  self->ds_only_last = FALSE;
  self->ds_prepend_ps = FALSE;
  self->ds_disp_share = 0.5;
  self->ds_model = 4.0;
  self->ds_debt = 0;
  self->denc_n = 0;
}

/* A reference picture: the references the receiver holds after it. The
 * DPB's sliding window keeps the last max_num_ref_frames short-term
 * references; memory management commands are followed conservatively. */
static void
disp_add_reference (RtH264 * self, const GstTwoflowPictureInfo * info,
    const GstTwoflowH264SourcePicture * spic, GstClockTime pts)
{
  guint keep;

  if (info->idr) {
    self->ds_n_refs = 0;
    self->ds_only_last = FALSE;
  }
  if (spic->marks_long_term)
    self->ds_only_last = TRUE;
  if (spic->marks_unused || !spic->short_term)
    self->ds_n_refs = 0;
  if (!spic->short_term)
    return;
  keep = self->ds_only_last ? 1 : MIN (spic->num_ref_frames,
      RT_H264_DISP_MAX_REFS);
  if (self->ds_n_refs >= keep) {
    guint drop = self->ds_n_refs - keep + 1;

    memmove (self->ds_refs, self->ds_refs + drop,
        (self->ds_n_refs - drop) * sizeof (self->ds_refs[0]));
    self->ds_n_refs -= drop;
  }
  self->ds_refs[self->ds_n_refs].pts = pts;
  self->ds_refs[self->ds_n_refs].frame_num = spic->frame_num;
  self->ds_n_refs++;
}

/* The reference nearest in presentation time (the later decoded of two
 * as near): the best a single reference predicts; -1 none. */
static gint
disp_nearest_reference (RtH264 * self, GstClockTime pts)
{
  gint best = -1;
  guint i;

  for (i = 0; i < self->ds_n_refs; i++) {
    GstClockTime r = self->ds_refs[i].pts;
    GstClockTime d = r > pts ? r - pts : pts - r;

    if (best < 0 || d <= (self->ds_refs[best].pts > pts ?
            self->ds_refs[best].pts - pts : pts - self->ds_refs[best].pts))
      best = i;
  }
  return best;
}

/* Files the picture with the rate control core and decides: passed,
 * dropped (the core's decision) or re-encoded. */
static RtDispPic *
disp_decide (RtH264 * self, GstBuffer * buf,
    const GstTwoflowPictureInfo * info,
    const GstTwoflowH264SourcePicture * spic, gsize size, GstClockTime dur,
    guint64 now)
{
  gboolean kept = info->type == GST_TWOFLOW_PICTURE_I || info->reference ||
      info->sequence_header;
  GstTwoflowRateControlLayer layer = kept ?
      GST_TWOFLOW_RATE_CONTROL_LAYER_KEPT :
      GST_TWOFLOW_RATE_CONTROL_LAYER_DISPOSABLE;
  GstTwoflowRateControl *rc;
  RtDispPic *p = g_new0 (RtDispPic, 1);
  gboolean encode = FALSE;
  gdouble budget = 0;
  gint r = kept ? -1 : disp_nearest_reference (self, GST_BUFFER_PTS (buf));

  rc = gst_rate_transcoder_lock_input (self->element, now);
  gst_twoflow_rate_control_handle_input_layer (rc, info->type, layer, size,
      dur, now);
  gst_rate_transcoder_unlock (self->element);
  self->ds_disp_share = 0.95 * self->ds_disp_share + (kept ? 0 : 0.05);
  if (!kept && !self->ds_no_encode && r >= 0)
    encode = disp_budget (self, size, &budget);
  rc = gst_rate_transcoder_lock (self->element);
  /* a picture re-encoded is, to the core, one that is not dropped */
  p->d = gst_twoflow_rate_control_handle_drop_candidate (rc, info->type,
      encode ? GST_TWOFLOW_RATE_CONTROL_LAYER_KEPT : layer, size);
  gst_rate_transcoder_unlock (self->element);
  if (encode) {
    p->d.action = GST_TWOFLOW_RATE_CONTROL_ENCODE;
    p->d.budget_bits = budget;
    p->r_pts = self->ds_refs[r].pts;
    p->r_fn = self->ds_refs[r].frame_num;
  }
  p->buf = gst_buffer_ref (buf);
  p->info = *info;
  p->sp = *spic;
  p->pts = GST_BUFFER_PTS (buf);
  p->dur = dur;
  if (info->reference)
    disp_add_reference (self, info, spic, p->pts);
  return p;
}

gboolean
rt_h264_disp_handle_frame (RtH264 * self, GstBuffer * buf, GstMapInfo * map,
    const GstTwoflowPictureInfo * info, gsize size, GstClockTime dur,
    guint64 now, GstFlowReturn * result)
{
  GstTwoflowH264SourcePicture spic = { 0 };
  const gchar *why = NULL;
  GstFlowReturn ret = GST_FLOW_OK;
  RtDispPic *p;

  if (gst_rate_transcoder_get_keep (self->element) !=
      GST_TWOFLOW_RATE_CONTROL_KEEP_IP || self->hevc || self->ds_unsupported
      || !GST_BUFFER_PTS_IS_VALID (buf)) {
    /* keep changed: what is queued leaves first */
    if (self->ds_active && (ret = disp_flush (self)) != GST_FLOW_OK) {
      gst_buffer_unmap (buf, map);
      gst_buffer_unref (buf);
      *result = ret;
      return TRUE;
    }
    return FALSE;
  }
  /* the decoder starts at an IDR (until then: dropping, as before) */
  if (!self->ds_active && !info->idr)
    return FALSE;
  if (!self->ds_active && (self->h264_encoding || self->kr_active ||
          self->dec)) {
    /* from another way of reducing: its pictures leave first; the source's
     * SPS/PPS go back in front of this IDR after the encoder's */
    ret = rt_h264_drain (self);
    self->ds_prepend_ps = self->enc_n > 0 &&
        !rt_h264_has_param_sets (self, map->data, map->size);
    self->enc_n = 0;
    if (ret != GST_FLOW_OK) {
      gst_buffer_unmap (buf, map);
      gst_buffer_unref (buf);
      *result = ret;
      return TRUE;
    }
  }
  rt_h264_splice_ensure (self, &self->ds_splice);
  gst_twoflow_h264_splice_parse_source (self->ds_splice, map->data,
      map->size, self->nal_length_size, &spic, &why);
  if (why) {
    GST_ELEMENT_WARNING (self->element, STREAM, NOT_IMPLEMENTED, (NULL),
        ("keep=ip re-encodes the disposable pictures only in sequences it "
            "can splice into (this one has %s): dropping them instead",
            why));
    self->ds_unsupported = TRUE;
    if (self->ds_active && (ret = rt_h264_disp_drain (self)) != GST_FLOW_OK) {
      gst_buffer_unmap (buf, map);
      gst_buffer_unref (buf);
      *result = ret;
      return TRUE;
    }
    return FALSE;
  }
  if (!self->dec && !rt_h264_open_decoder (self)) {
    gst_buffer_unmap (buf, map);
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self->element, LIBRARY, INIT, (NULL),
        ("cannot open the H.264 decoder"));
    *result = GST_FLOW_ERROR;
    return TRUE;
  }
  self->ds_active = TRUE;

  p = disp_decide (self, buf, info, &spic, size, dur, now);
  if (info->idr && self->ds_prepend_ps) {
    p->prepend_ps = TRUE;
    self->ds_prepend_ps = FALSE;
  }
  g_queue_push_tail (&self->ds_pending, p);
  rt_h264_send_packet (self, buf, map, dur);
  gst_buffer_unmap (buf, map);
  gst_buffer_unref (buf);
  disp_receive_frames (self);
  *result = disp_process (self, FALSE);
  return TRUE;
}
