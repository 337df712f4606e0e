/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder, H.264 (issue #17). Two ways of lowering the rate:
 *
 * keep=none (standalone): decode with libavcodec's h264 decoder and
 *   re-encode with libx264 (openh264 where libavcodec has no x264) in
 *   average-bitrate mode under a VBV of one second. A target change is
 *   written into AVCodecContext bit_rate / rc_max_rate / rc_buffer_size
 *   before the next picture is sent; libavcodec's libx264 wrapper hands
 *   it to x264_encoder_reconfig(), so it applies from the next picture
 *   the encoder codes, without a new IDR. An encoder without that
 *   (openh264) is drained and reopened at the new rate, from an IDR.
 *   Passing through (no reduction needed) emits the source buffers; the
 *   decoder keeps running so that re-encoding can start at the next
 *   I or P picture (everything passed before is then a presentation-order
 *   prefix), with an IDR of the encoder's own. Passing through resumes at
 *   the next source IDR (its SPS/PPS put back in front of it).
 *
 * keep=i|ip (staggered system): no codec; the source's essential pictures
 *   leave byte-identical and the rate is lowered by dropping pictures
 *   nothing references (nal_ref_idc = 0), and under keep=i, when that is
 *   not enough, the tail of the GOP (from a reference picture to the next
 *   I frame). The decisions are the rate control core's
 *   (gst_twoflow_rate_control_handle_drop_candidate()). keep=ip
 *   re-encodes the disposable pictures before dropping them
 *   (gstratetranscoder-h264-disp.c).
 *
 * keep=i's re-encoding of the non-essential pictures is in
 * gstratetranscoder-h264-keep.c. A codec behind the ops table of
 * gstratetranscoder-codec.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <gst/twoflow/twoflowframe.h>
#include "gstratetranscoder-h264.h"

#define GST_CAT_DEFAULT rate_transcoder_debug

/* x264 look-ahead, in frames; with its B frames and the decoder's reorder
 * delay it makes the latency the element reports for H.264 */
#define RT_H264_LOOKAHEAD 5
#define RT_H264_BFRAMES 3
#define RT_H264_DECODER_DELAY 2
/* VBV buffer, in seconds of the target (maximum rate = the target): 0.5 s
 * leaves GOPs up to 10% under the target, 1 s up to 10% over (x264's
 * average bitrate mode repays its first GOP's miss) */
#define RT_H264_VBV_S 0.75
/* H.265: a target this many times the encoder's (or its inverse) reopens
 * the encoder before the source's next IRAP */
#define RT_H265_REOPEN 1.25

/* --- parameter sets --------------------------------------------------- */

/* Next Annex B start code at or after @i; returns its offset (size if
 * none) and its length in @sc. */
static gsize
next_start_code (const guint8 * d, gsize size, gsize i, guint * sc)
{
  for (; i + 3 <= size; i++) {
    if (d[i] == 0 && d[i + 1] == 0 && d[i + 2] == 1) {
      *sc = 3;
      if (i > 0 && d[i - 1] == 0) {
        *sc = 4;
        return i - 1;
      }
      return i;
    }
  }
  *sc = 0;
  return size;
}

/* Calls @func for every NAL unit of a byte-stream (@nls 0) or
 * length-prefixed buffer. */
typedef void (*NalFunc) (const guint8 * nal, gsize len, gpointer user);

static void
foreach_nal (const guint8 * d, gsize size, guint nls, NalFunc func,
    gpointer user)
{
  gsize i = 0;

  if (nls > 0) {
    while (i + nls <= size) {
      gsize len = 0;
      guint k;

      for (k = 0; k < nls; k++)
        len = (len << 8) | d[i + k];
      i += nls;
      if (len > size - i)
        len = size - i;
      if (len > 0)
        func (d + i, len, user);
      i += len;
    }
    return;
  }
  {
    guint sc;
    gsize start = next_start_code (d, size, 0, &sc);

    while (start < size) {
      gsize nal = start + sc, end;
      guint sc2;

      end = next_start_code (d, size, nal, &sc2);
      /* trailing zero bytes belong to no NAL */
      while (end > nal && d[end - 1] == 0 && end < size)
        end--;
      if (end > nal)
        func (d + nal, end - nal, user);
      start = next_start_code (d, size, nal, &sc);
    }
  }
}

typedef struct
{
  GByteArray *out;
  guint nls;                    /* prefix to write: 0 = start codes */
  gboolean only_param_sets;
  gboolean hevc;                /* H.265 NAL unit headers */
  gboolean found;
} NalCollect;

void
rt_h264_append_nal (GByteArray * out, guint nls, const guint8 * nal,
    gsize len)
{
  static const guint8 sc[4] = { 0, 0, 0, 1 };
  guint8 pre[4];
  guint k;

  if (nls == 0) {
    g_byte_array_append (out, sc, 4);
  } else {
    for (k = 0; k < nls; k++)
      pre[k] = (len >> (8 * (nls - 1 - k))) & 0xff;
    g_byte_array_append (out, pre, nls);
  }
  g_byte_array_append (out, nal, len);
}

static void
collect_nal (const guint8 * nal, gsize len, gpointer user)
{
  NalCollect *c = user;

  if (c->only_param_sets) {
    /* H.264 SPS 7, PPS 8; H.265 VPS 32, SPS 33, PPS 34 */
    guint t = c->hevc ? (nal[0] >> 1) & 0x3f : nal[0] & 0x1f;

    if (c->hevc ? (t < 32 || t > 34) : (t != 7 && t != 8))
      return;
  }
  c->found = TRUE;
  rt_h264_append_nal (c->out, c->nls, nal, len);
}

/* The SPS and PPS a source buffer carries, as the stream writes them. */
static void
remember_param_sets (RtH264 * self, const guint8 * d, gsize size)
{
  NalCollect c = { g_byte_array_new (), self->nal_length_size, TRUE,
    self->hevc, FALSE
  };

  foreach_nal (d, size, self->nal_length_size, collect_nal, &c);
  if (c.found) {
    g_clear_pointer (&self->param_sets, g_bytes_unref);
    self->param_sets = g_byte_array_free_to_bytes (c.out);
  } else {
    g_byte_array_unref (c.out);
  }
}

gboolean
rt_h264_has_param_sets (RtH264 * self, const guint8 * d, gsize size)
{
  NalCollect c = { g_byte_array_new (), 0, TRUE, self->hevc, FALSE };

  foreach_nal (d, size, self->nal_length_size, collect_nal, &c);
  g_byte_array_unref (c.out);
  return c.found;
}

static void
h264_set_caps (GstRateTranscoderCodecState * state, const GstStructure * s)
{
  RtH264 *self = (RtH264 *) state;
  const gchar *fmt = gst_structure_get_string (s, "stream-format");
  const GValue *v = gst_structure_get_value (s, "codec_data");
  GstBuffer *cd = v && G_VALUE_HOLDS (v, GST_TYPE_BUFFER) ?
      gst_value_get_buffer (v) : NULL;
  GstMapInfo map;

  self->h264_avc = fmt && g_str_has_prefix (fmt, "avc");
  self->nal_length_size = 0;
  gst_twoflow_picture_parser_set_codec_data (self->picture_parser, NULL, 0);
  if (self->h264_avc && cd && gst_buffer_map (cd, &map, GST_MAP_READ)) {
    if (map.size >= 7 && gst_twoflow_picture_parser_set_codec_data
        (self->picture_parser, map.data, map.size)) {
      GByteArray *out = g_byte_array_new ();
      gsize i = 6;
      guint n, k, lists;

      self->nal_length_size = (map.data[4] & 3) + 1;
      /* avcC: SPS list, then PPS list, each NAL with a 16-bit length */
      n = map.data[5] & 0x1f;
      for (lists = 0; lists < 2; lists++) {
        for (k = 0; k < n && i + 2 <= map.size; k++) {
          gsize len = (map.data[i] << 8) | map.data[i + 1];

          i += 2;
          if (len > map.size - i)
            break;
          rt_h264_append_nal (out, self->nal_length_size, map.data + i,
              len);
          i += len;
        }
        n = i < map.size ? map.data[i++] : 0;
      }
      g_clear_pointer (&self->param_sets, g_bytes_unref);
      self->param_sets = g_byte_array_free_to_bytes (out);
      g_clear_pointer (&self->dec_extradata, g_bytes_unref);
      self->dec_extradata = g_bytes_new (map.data, map.size);
    }
    gst_buffer_unmap (cd, &map);
  }
  if (self->h264_avc && self->nal_length_size == 0) {
    GST_ELEMENT_WARNING (self->element, STREAM, FORMAT, (NULL),
        ("stream-format=avc without a valid codec_data, passing through"));
    self->h264_unsupported = TRUE;
  }
}

/* --- codecs ----------------------------------------------------------- */

gboolean
rt_h264_open_decoder (RtH264 * self)
{
  const AVCodec *codec = avcodec_find_decoder (self->hevc ?
      AV_CODEC_ID_HEVC : AV_CODEC_ID_H264);

  if (!codec)
    return FALSE;
  self->dec = avcodec_alloc_context3 (codec);
  if (!self->dec)
    return FALSE;
  self->dec->thread_count = 1;
  self->dec->pkt_timebase = (AVRational) {
  1, GST_SECOND};
  if (self->dec_extradata) {
    gsize n;
    const guint8 *d = g_bytes_get_data (self->dec_extradata, &n);

    self->dec->extradata = av_mallocz (n + AV_INPUT_BUFFER_PADDING_SIZE);
    memcpy (self->dec->extradata, d, n);
    self->dec->extradata_size = n;
  }
  if (avcodec_open2 (self->dec, codec, NULL) < 0) {
    avcodec_free_context (&self->dec);
    return FALSE;
  }
  if (!self->pkt)
    self->pkt = av_packet_alloc ();
  return self->pkt != NULL;
}

/* the rate control core's generation: the rate change a decision is
 * taken under */
guint
rt_h264_generation (RtH264 * self)
{
  GstTwoflowRateControl *rc = gst_rate_transcoder_lock (self->element);
  guint gen = gst_twoflow_rate_control_get_generation (rc);

  gst_rate_transcoder_unlock (self->element);
  return gen;
}

guint64
rt_h264_current_target (RtH264 * self, gboolean * reduce)
{
  GstTwoflowRateControlStats s;

  gst_twoflow_rate_control_get_stats (gst_rate_transcoder_lock
      (self->element), &s);
  gst_rate_transcoder_unlock (self->element);
  if (reduce)
    *reduce = s.input_bitrate > 0 && s.target_bitrate > 0 &&
        s.target_bitrate < s.input_bitrate;
  return (guint64) s.target_bitrate;
}

void
rt_h264_set_encoder_rate (AVCodecContext * c, guint64 bitrate)
{
  c->bit_rate = bitrate;
  c->rc_max_rate = bitrate;
  c->rc_buffer_size = (gint) MIN (bitrate * RT_H264_VBV_S, G_MAXINT);
}

static gboolean
h264_open_encoder (RtH264 * self, const AVFrame * f)
{
  const AVCodec *codec = avcodec_find_encoder_by_name ("libx264");
  AVCodecContext *c;
  AVDictionary *opts = NULL;
  guint64 target = rt_h264_current_target (self, NULL);
  gchar *params, *preset;

  self->h264_reconfig = codec != NULL;
  if (!codec)
    codec = avcodec_find_encoder_by_name ("libopenh264");
  if (!codec || (f->format != AV_PIX_FMT_YUV420P &&
          f->format != AV_PIX_FMT_YUVJ420P) || target == 0)
    return FALSE;
  c = gst_rate_transcoder_new_encoder_context (self->element, codec, f);
  if (!c)
    return FALSE;
  c->color_primaries = f->color_primaries;
  c->color_trc = f->color_trc;
  c->colorspace = f->colorspace;
  c->color_range = f->color_range;
  c->thread_count = 1;
  /* I frames where the source has them (forced per picture), never one of
   * the encoder's own */
  c->gop_size = 100000;
  c->keyint_min = 1;
  rt_h264_set_encoder_rate (c, target);
  if (self->h264_reconfig) {
    preset = gst_rate_transcoder_dup_preset (self->element);
    av_dict_set (&opts, "preset", preset ? preset : "veryfast", 0);
    g_free (preset);
    av_dict_set (&opts, "forced-idr", "1", 0);
    c->max_b_frames = RT_H264_BFRAMES;
    params = g_strdup_printf ("rc-lookahead=%d:sync-lookahead=0:"
        "repeat-headers=1:annexb=1:scenecut=0:log=0", RT_H264_LOOKAHEAD);
    av_dict_set (&opts, "x264-params", params, 0);
    g_free (params);
  }
  if (!gst_rate_transcoder_open_encoder (&c, codec, &opts))
    return FALSE;
  self->enc = c;
  self->enc_n = 0;
  self->enc_bitrate = target;
  self->h264_force_idr = TRUE;
  GST_INFO_OBJECT (self->element,
      "%s encoder open at %" G_GUINT64_FORMAT " bit/s",
      codec->name, target);
  return TRUE;
}

/* --- output ----------------------------------------------------------- */

GstFlowReturn
rt_h264_push_out (RtH264 * self, GstBuffer * out)
{
  out = gst_buffer_make_writable (out);
  /* decode timestamps stay increasing across switches between source and
   * encoder, whose reorder delays differ */
  if (GST_BUFFER_DTS_IS_VALID (out) &&
      GST_CLOCK_TIME_IS_VALID (self->last_dts_out) &&
      GST_BUFFER_DTS (out) <= self->last_dts_out)
    GST_BUFFER_DTS (out) = self->last_dts_out + 1;
  if (GST_BUFFER_DTS_IS_VALID (out))
    self->last_dts_out = GST_BUFFER_DTS (out);
  return gst_rate_transcoder_push (self->element, out, TRUE);
}

void
rt_h264_account (RtH264 * self, GstTwoflowPictureType type,
    const GstTwoflowRateControlDecision * d, gsize in_bytes, gsize out_bytes,
    GstClockTime dur)
{
  gst_rate_transcoder_account (self->element, type, d, in_bytes, 0,
      out_bytes, dur, type != GST_TWOFLOW_PICTURE_NONE, FALSE);
}

/* the encoder's packets, with the source's timestamps */
static GstFlowReturn
h264_receive_packets (RtH264 * self)
{
  GstFlowReturn ret = GST_FLOW_OK;
  AVPacket *pkt = self->pkt;

  while (self->enc && avcodec_receive_packet (self->enc, pkt) == 0) {
    GstBuffer *out;
    GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_ENCODE };
    GstTwoflowPictureType type = GST_TWOFLOW_PICTURE_P;
    gsize n;
    guint8 *sd = av_packet_get_side_data (pkt, AV_PKT_DATA_QUALITY_STATS, &n);
    guint64 idx = pkt->pts >= 0 ? (guint64) pkt->pts : 0;
    GstClockTime pts = self->h264_ring[idx % RT_MAP_SIZE].pts;
    GstClockTime dur = self->h264_ring[idx % RT_MAP_SIZE].dur;
    GstClockTime dts;

    if (sd && n >= 5)
      type = sd[4] == AV_PICTURE_TYPE_I ? GST_TWOFLOW_PICTURE_I :
          sd[4] == AV_PICTURE_TYPE_B ? GST_TWOFLOW_PICTURE_B :
          GST_TWOFLOW_PICTURE_P;
    else if (pkt->flags & AV_PKT_FLAG_KEY)
      type = GST_TWOFLOW_PICTURE_I;
    if (sd && n >= 4)
      d.q = GST_READ_UINT32_LE (sd) / FF_QP2LAMBDA;
    /* coded in this call, under the rate the encoder has now */
    d.generation = self->enc_generation;

    if (pkt->dts >= 0) {
      dts = self->h264_ring[(guint64) pkt->dts % RT_MAP_SIZE].pts;
    } else {
      GstClockTime first = self->h264_ring[0].pts;
      GstClockTime back = (GstClockTime) (-pkt->dts) * dur;

      dts = GST_CLOCK_TIME_IS_VALID (first) && first >= back ?
          first - back : 0;
    }

    if (self->h264_avc) {
      NalCollect c = { g_byte_array_new (), self->nal_length_size, FALSE,
        FALSE, FALSE
      };

      foreach_nal (pkt->data, pkt->size, 0, collect_nal, &c);
      out = gst_buffer_new_wrapped (c.out->data, c.out->len);
      g_byte_array_free (c.out, FALSE);
    } else {
      out = gst_buffer_new_memdup (pkt->data, pkt->size);
    }
    GST_BUFFER_PTS (out) = pts;
    GST_BUFFER_DTS (out) = dts;
    GST_BUFFER_DURATION (out) = dur;
    if (type != GST_TWOFLOW_PICTURE_I)
      GST_BUFFER_FLAG_SET (out, GST_BUFFER_FLAG_DELTA_UNIT);
    GST_LOG_OBJECT (self->element,
        "encoded picture %" G_GINT64_FORMAT " type %d qp %d"
        " %d bytes", pkt->pts, type, d.q, pkt->size);
    d.budget_bits = gst_buffer_get_size (out) * 8.0;
    rt_h264_account (self, type, &d, 0, gst_buffer_get_size (out), dur);
    av_packet_unref (pkt);
    if (ret == GST_FLOW_OK)
      ret = rt_h264_push_out (self, out);
    else
      gst_buffer_unref (out);
  }
  return ret;
}

/* Drain the encoder and close it (the next re-encoding opens a new one). */
static GstFlowReturn
h264_close_encoder (RtH264 * self)
{
  GstFlowReturn ret;

  if (!self->enc)
    return GST_FLOW_OK;
  avcodec_send_frame (self->enc, NULL);
  ret = h264_receive_packets (self);
  avcodec_free_context (&self->enc);
  return ret;
}

static GstFlowReturn
h264_encode (RtH264 * self, AVFrame * frame)
{
  guint64 target;
  guint64 idx;
  GstFlowReturn ret;
  guint gen;

  gen = rt_h264_generation (self);
  target = rt_h264_current_target (self, NULL);

  if (self->enc && target > 0 && target != self->enc_bitrate) {
    if (self->h264_reconfig) {
      /* libx264 via libavcodec: x264_encoder_reconfig() before this
       * picture, no new IDR */
      rt_h264_set_encoder_rate (self->enc, target);
      self->enc_bitrate = target;
      GST_DEBUG_OBJECT (self->element,
          "encoder reconfigured to %" G_GUINT64_FORMAT
          " bit/s", target);
    } else if (!self->hevc || gen != self->enc_generation ||
        (frame->key_frame && (target > self->enc_bitrate * 1.05 ||
                target * 1.05 < self->enc_bitrate)) ||
        target > self->enc_bitrate * RT_H265_REOPEN ||
        target * RT_H265_REOPEN < self->enc_bitrate) {
      /* no reconfiguration (libopenh264; libx265, whose libavcodec 5.1
       * wrapper never calls x265_encoder_reconfig()): a new encoder from
       * an IDR. H.265: at once for a new rate-control generation (a
       * congestion reaction, a new target) or a large move, else (the
       * input's measured rate moving the target) at the source's next
       * IRAP, where the encoder codes an IDR anyway, if it moved more than
       * 5% (a new x265 starts its average-bitrate control afresh) */
      ret = h264_close_encoder (self);
      if (ret != GST_FLOW_OK)
        return ret;
    }
  }
  if (!self->enc && !(self->hevc ? rt_h265_open_encoder (self, frame) :
          h264_open_encoder (self, frame))) {
    GST_ELEMENT_WARNING (self->element, LIBRARY, INIT, (NULL),
        ("cannot open %s for this stream, passing it through",
            self->hevc ? "an H.265 encoder (libx265)" :
            "an H.264 encoder (libx264 or libopenh264)"));
    self->h264_unsupported = TRUE;
    return GST_FLOW_OK;
  }
  self->enc_generation = gen;
  idx = self->enc_n++;
  self->h264_ring[idx % RT_MAP_SIZE].pts = frame->pts;
  self->h264_ring[idx % RT_MAP_SIZE].dur = frame->pkt_duration > 0 ?
      (GstClockTime) frame->pkt_duration :
      gst_rate_transcoder_frame_duration (self->element);
  frame->pts = idx;
  frame->pict_type = (self->h264_force_idr || frame->key_frame) ?
      AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
  self->h264_force_idr = FALSE;
  if (avcodec_send_frame (self->enc, frame) < 0)
    GST_WARNING_OBJECT (self->element,
        "encoder refused picture %" G_GUINT64_FORMAT,
        idx);
  return h264_receive_packets (self);
}

/* Pictures out of the decoder, in presentation order: those after what was
 * passed go to the encoder while re-encoding. */
static GstFlowReturn
h264_receive_frames (RtH264 * self)
{
  GstFlowReturn ret = GST_FLOW_OK;
  AVFrame *frame = av_frame_alloc ();

  while (avcodec_receive_frame (self->dec, frame) == 0) {
    if (ret == GST_FLOW_OK && self->h264_encoding && !self->h264_unsupported
        && frame->pts != AV_NOPTS_VALUE &&
        (!GST_CLOCK_TIME_IS_VALID (self->max_passed_pts) ||
            (GstClockTime) frame->pts > self->max_passed_pts))
      ret = h264_encode (self, frame);
    av_frame_unref (frame);
  }
  av_frame_free (&frame);
  return ret;
}

/* Empty the decoder (to be reused after) and send all to the encoder. */
static GstFlowReturn
h264_drain_decoder (RtH264 * self)
{
  GstFlowReturn ret;

  if (!self->dec)
    return GST_FLOW_OK;
  avcodec_send_packet (self->dec, NULL);
  ret = h264_receive_frames (self);
  avcodec_flush_buffers (self->dec);
  return ret;
}

GstFlowReturn
rt_h264_drain (RtH264 * self)
{
  GstFlowReturn ret = rt_h264_disp_drain (self);

  if (self->kr_active || !g_queue_is_empty (&self->kr_pending)) {
    if (ret == GST_FLOW_OK)
      ret = rt_h264_keep_drain (self);
    else
      rt_h264_keep_drain (self);
  }
  self->kr_active = FALSE;
  avcodec_free_context (&self->kenc);
  if (ret == GST_FLOW_OK)
    ret = h264_drain_decoder (self);
  else
    h264_drain_decoder (self);

  if (ret == GST_FLOW_OK)
    ret = h264_close_encoder (self);
  else
    avcodec_free_context (&self->enc);
  avcodec_free_context (&self->dec);
  self->h264_encoding = FALSE;
  return ret;
}

void
rt_h264_reset (RtH264 * self)
{
  rt_h264_keep_reset (self);
  rt_h264_disp_reset (self);
  avcodec_free_context (&self->enc);
  avcodec_free_context (&self->dec);
  av_packet_free (&self->pkt);
  self->h264_encoding = FALSE;
  self->h264_force_idr = FALSE;
  self->h264_unsupported = FALSE;
  self->max_passed_pts = GST_CLOCK_TIME_NONE;
  self->max_in_pts = GST_CLOCK_TIME_NONE;
  self->last_dts_out = GST_CLOCK_TIME_NONE;
  self->tail_dropped = FALSE;
  self->leading_before = GST_CLOCK_TIME_NONE;
  self->enc_n = 0;
}

/* --- input ------------------------------------------------------------ */

/* Pass a source buffer; @prepend_ps: put the source's parameter sets in
 * front of it (an IDR that follows the encoder's own). */
GstFlowReturn
rt_h264_pass (RtH264 * self, GstBuffer * buf, gboolean prepend_ps)
{
  if (prepend_ps && self->param_sets) {
    gsize n = g_bytes_get_size (self->param_sets);
    gpointer ps = g_memdup2 (g_bytes_get_data (self->param_sets, NULL), n);

    buf = gst_buffer_make_writable (buf);
    gst_buffer_prepend_memory (buf, gst_memory_new_wrapped (0, ps, n, 0, n,
            ps, g_free));
  }
  if (GST_BUFFER_PTS_IS_VALID (buf) &&
      (!GST_CLOCK_TIME_IS_VALID (self->max_passed_pts) ||
          GST_BUFFER_PTS (buf) > self->max_passed_pts))
    self->max_passed_pts = GST_BUFFER_PTS (buf);
  return rt_h264_push_out (self, buf);
}

/* keep=i|ip: essential pictures byte-identical, the rest dropped in order
 * of least damage */
static GstFlowReturn
h264_chain_drop (RtH264 * self, GstBuffer * buf,
    const GstTwoflowPictureInfo * info, gsize size, GstClockTime dur,
    guint64 now, gboolean prepend_ps)
{
  GstTwoflowRateControl *rc;
  GstTwoflowRateControlLayer layer;
  GstTwoflowRateControlDecision d;
  gboolean kept = info->type == GST_TWOFLOW_PICTURE_I ||
      (gst_rate_transcoder_get_keep (self->element) ==
          GST_TWOFLOW_RATE_CONTROL_KEEP_IP && info->reference) ||
      info->sequence_header;

  if (kept)
    layer = GST_TWOFLOW_RATE_CONTROL_LAYER_KEPT;
  else if (!info->reference)
    layer = GST_TWOFLOW_RATE_CONTROL_LAYER_DISPOSABLE;
  else
    layer = GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL;

  if (info->type == GST_TWOFLOW_PICTURE_I) {
    /* after a dropped tail, the leading pictures of an open GOP's I frame
     * (shown before it) predict from what was dropped */
    self->leading_before = self->tail_dropped && !info->idr ?
        GST_BUFFER_PTS (buf) : GST_CLOCK_TIME_NONE;
    self->tail_dropped = FALSE;
  }

  rc = gst_rate_transcoder_lock_input (self->element, now);
  gst_twoflow_rate_control_handle_input_layer (rc, info->type, layer,
      size, dur, now);
  d = gst_twoflow_rate_control_handle_drop_candidate (rc, info->type, layer,
      size);
  gst_rate_transcoder_unlock (self->element);
  if (!kept && GST_CLOCK_TIME_IS_VALID (self->leading_before) &&
      GST_BUFFER_PTS_IS_VALID (buf) &&
      GST_BUFFER_PTS (buf) < self->leading_before)
    d.action = GST_TWOFLOW_RATE_CONTROL_DROP;

  if (d.action == GST_TWOFLOW_RATE_CONTROL_DROP) {
    if (layer == GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL)
      self->tail_dropped = TRUE;
    GST_LOG_OBJECT (self->element,
        "dropping %s picture of %" G_GSIZE_FORMAT " bytes "
        "(layer %d)", info->type == GST_TWOFLOW_PICTURE_B ? "B" : "P", size,
        layer);
    rt_h264_account (self, info->type, &d, size, 0, dur);
    /* in its place an event: twoflowsplit still numbers the frames after
     * it as the essential flow's split (of the unaltered source) does */
    gst_rate_transcoder_push_event (self->element, gst_twoflow_event_new_dropped
        (info->type, info->reference, GST_BUFFER_PTS (buf),
            GST_BUFFER_DTS (buf), dur));
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  rt_h264_account (self, info->type, &d, size, size, dur);
  return rt_h264_pass (self, buf, prepend_ps);
}

void
rt_h264_send_packet (RtH264 * self, GstBuffer * buf, GstMapInfo * map,
    GstClockTime dur)
{
  if (av_new_packet (self->pkt, map->size) < 0)
    return;
  memcpy (self->pkt->data, map->data, map->size);
  self->pkt->pts = GST_BUFFER_PTS_IS_VALID (buf) ?
      (gint64) GST_BUFFER_PTS (buf) : AV_NOPTS_VALUE;
  self->pkt->dts = AV_NOPTS_VALUE;
  self->pkt->duration = dur;
  if (avcodec_send_packet (self->dec, self->pkt) < 0) {
    gst_rate_transcoder_count_decode_error (self->element);
    GST_WARNING_OBJECT (self->element, "picture does not decode");
  }
  av_packet_unref (self->pkt);
}

/* keep=none: passing the source's pictures or re-encoding them, switching
 * at I/P pictures (to re-encoding) and source IDRs (back to passing) */
static GstFlowReturn
h264_chain_reencode (RtH264 * self, GstBuffer * buf, GstMapInfo * map,
    const GstTwoflowPictureInfo * info, gsize size, GstClockTime dur,
    guint64 now)
{
  GstTwoflowRateControl *rc;
  gboolean sent = FALSE;
  gboolean reduce, pass;
  GstFlowReturn ret = GST_FLOW_OK;
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_PASS };
  guint gen;

  rc = gst_rate_transcoder_lock_input (self->element, now);
  gen = gst_twoflow_rate_control_get_generation (rc);
  gst_twoflow_rate_control_handle_input (rc, info->type, size, dur, now);
  if (gst_twoflow_rate_control_get_generation (rc) != gen)
    gst_rate_transcoder_start_reaction_locked (self->element);
  gst_rate_transcoder_unlock (self->element);
  rt_h264_current_target (self, &reduce);

  if (!GST_BUFFER_PTS_IS_VALID (buf) && !self->h264_unsupported) {
    GST_ELEMENT_WARNING (self->element, STREAM, FORMAT, (NULL),
        ("%s input without PTS cannot be re-encoded, passing through",
            self->hevc ? "H.265" : "H.264"));
    self->h264_unsupported = TRUE;
  }

  if (self->h264_unsupported) {
    reduce = FALSE;
    if (self->h264_encoding) {
      /* what the encoder holds first, then the source from an IDR */
      self->h264_encoding = FALSE;
      avcodec_free_context (&self->enc);
    }
  }

  if (!self->dec && !rt_h264_open_decoder (self)) {
    gst_buffer_unmap (buf, map);
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self->element, LIBRARY, INIT, (NULL),
        ("cannot open the %s decoder", self->hevc ? "H.265" : "H.264"));
    return GST_FLOW_ERROR;
  }
  /* until the decoder has seen a picture, its format is not known: the
   * first picture is decoded before it is decided on */
  if (self->dec->pix_fmt == AV_PIX_FMT_NONE) {
    rt_h264_send_packet (self, buf, map, dur);
    sent = TRUE;
  }
  if (reduce && !self->h264_encoding && (self->hevc ?
          !rt_h265_takes_format (self->dec->pix_fmt) :
          (self->dec->pix_fmt != AV_PIX_FMT_YUV420P &&
              self->dec->pix_fmt != AV_PIX_FMT_YUVJ420P))) {
    GST_ELEMENT_WARNING (self->element, STREAM, NOT_IMPLEMENTED, (NULL),
        ("re-encoding takes %s only (this is %s), passing through",
            self->hevc ? "the formats libx265 codes" : "8-bit 4:2:0 H.264",
            av_get_pix_fmt_name (self->dec->pix_fmt) ?
            av_get_pix_fmt_name (self->dec->pix_fmt) : "unknown"));
    self->h264_unsupported = TRUE;
    reduce = FALSE;
  }

  if (self->h264_encoding && !reduce && info->idr) {
    /* back to the source's bits from its IDR: the encoder's pictures
     * before it leave first */
    ret = h264_drain_decoder (self);
    if (ret == GST_FLOW_OK)
      ret = h264_close_encoder (self);
    self->h264_encoding = FALSE;
    self->max_passed_pts = GST_CLOCK_TIME_NONE;
    GST_INFO_OBJECT (self->element,
        "no reduction needed: passing through from IDR");
    pass = TRUE;
  } else if (!self->h264_encoding && reduce &&
      /* H.265's P class holds a pyramid's referenced B pictures too: there
       * a picture later than any before it */
      info->type != GST_TWOFLOW_PICTURE_B && (!self->hevc ||
          !GST_CLOCK_TIME_IS_VALID (self->max_in_pts) ||
          GST_BUFFER_PTS (buf) > self->max_in_pts)) {
    /* everything passed so far is a presentation-order prefix: the
     * encoder takes over from here, with an IDR */
    self->h264_encoding = TRUE;
    self->h264_force_idr = TRUE;
    GST_INFO_OBJECT (self->element, "re-encoding from this %s picture",
        info->type == GST_TWOFLOW_PICTURE_I ? "I" : "P");
    pass = FALSE;
  } else {
    pass = !self->h264_encoding;
  }

  if (pass) {
    gboolean ps = self->enc_n > 0 && info->idr &&
        !rt_h264_has_param_sets (self, map->data, map->size);

    self->enc_n = 0;
    d.generation = rt_h264_generation (self);
    d.budget_bits = size * 8.0;
    rt_h264_account (self, info->type, &d, size, size, dur);
    gst_buffer_ref (buf);
    if (ret == GST_FLOW_OK)
      ret = rt_h264_pass (self, buf, ps);
    else
      gst_buffer_unref (buf);
  }

  if (!GST_CLOCK_TIME_IS_VALID (self->max_in_pts) ||
      (GST_BUFFER_PTS_IS_VALID (buf) &&
          GST_BUFFER_PTS (buf) > self->max_in_pts))
    self->max_in_pts = GST_BUFFER_PTS (buf);
  if (!sent)
    rt_h264_send_packet (self, buf, map, dur);
  gst_buffer_unmap (buf, map);
  gst_buffer_unref (buf);
  if (ret == GST_FLOW_OK)
    ret = h264_receive_frames (self);
  else
    h264_receive_frames (self);
  return ret;
}

/* keep=i|ip, no codecs: true when the frame was taken */
static gboolean
h264_chain_keep_drop (RtH264 * self, GstBuffer * buf, GstMapInfo * map,
    const GstTwoflowPictureInfo * info, gsize size, GstClockTime dur,
    guint64 now, GstFlowReturn * result)
{
  GstFlowReturn ret = GST_FLOW_OK;

  /* keep=i|ip: no codecs. Set while re-encoding, it applies from the next
   * source IDR (the receiver's references are the encoder's until then) */
  if (gst_rate_transcoder_get_keep (self->element) !=
      GST_TWOFLOW_RATE_CONTROL_KEEP_NONE &&
      (!self->h264_encoding || info->idr)) {
    gboolean ps = FALSE;

    if (self->h264_encoding || self->dec) {
      ret = rt_h264_drain (self);
      ps = self->enc_n > 0 &&
          !rt_h264_has_param_sets (self, map->data, map->size);
      self->enc_n = 0;
    }
    gst_buffer_unmap (buf, map);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (buf);
      *result = ret;
      return TRUE;
    }
    *result = h264_chain_drop (self, buf, info, size, dur, now, ps);
    return TRUE;
  }

  return FALSE;
}

GstFlowReturn
rt_h264_handle_frame (RtH264 * self, GstBuffer * buf, GstClockTime dur,
    guint64 now)
{
  GstTwoflowPictureInfo info;
  GstMapInfo map;
  GstFlowReturn ret;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return rt_h264_push_out (self, buf);
  if (!gst_twoflow_picture_parser_parse (self->picture_parser, map.data,
          map.size, &info)) {
    if (!self->h264_avc)
      remember_param_sets (self, map.data, map.size);
    gst_buffer_unmap (buf, &map);
    GST_DEBUG_OBJECT (self->element, "buffer without a picture, passed");
    return rt_h264_push_out (self, buf);
  }
  if (!self->h264_avc && info.sequence_header)
    remember_param_sets (self, map.data, map.size);

  if (rt_h264_keep_handle_frame (self, buf, &map, &info, map.size, dur, now,
          &ret))
    return ret;
  if (rt_h264_disp_handle_frame (self, buf, &map, &info, map.size, dur, now,
          &ret))
    return ret;
  if (h264_chain_keep_drop (self, buf, &map, &info, map.size, dur, now, &ret))
    return ret;
  return h264_chain_reencode (self, buf, &map, &info, map.size, dur, now);
}

/* --- the ops table ---------------------------------------------------- */

RtH264 *
rt_h264_new (GstRateTranscoder * element, gboolean hevc)
{
  RtH264 *self = g_new0 (RtH264, 1);

  self->element = element;
  self->hevc = hevc;
  self->picture_parser = gst_twoflow_picture_parser_new (hevc ?
      GST_TWOFLOW_CODEC_H265 : GST_TWOFLOW_CODEC_H264);
  g_queue_init (&self->kr_pending);
  g_queue_init (&self->kr_dts);
  g_queue_init (&self->kr_after_i);
  g_queue_init (&self->ds_pending);
  g_queue_init (&self->ds_frames);
  rt_h264_reset (self);
  return self;
}

void
rt_h264_free (RtH264 * self)
{
  rt_h264_reset (self);
  gst_twoflow_picture_parser_free (self->picture_parser);
  g_clear_pointer (&self->param_sets, g_bytes_unref);
  g_clear_pointer (&self->dec_extradata, g_bytes_unref);
  g_free (self);
}

static GstRateTranscoderCodecState *
h264_start (GstRateTranscoder * element)
{
  return (GstRateTranscoderCodecState *) rt_h264_new (element, FALSE);
}

static void
h264_stop (GstRateTranscoderCodecState * state)
{
  rt_h264_free ((RtH264 *) state);
}

static void
h264_reset (GstRateTranscoderCodecState * state)
{
  rt_h264_reset ((RtH264 *) state);
}

static GstFlowReturn
h264_handle_frame (GstRateTranscoderCodecState * state, GstBuffer * buf,
    GstClockTime dur, guint64 now)
{
  return rt_h264_handle_frame ((RtH264 *) state, buf, dur, now);
}

static GstFlowReturn
h264_drain (GstRateTranscoderCodecState * state)
{
  return rt_h264_drain ((RtH264 *) state);
}

const GstRateTranscoderCodec gst_rate_transcoder_codec_h264 = {
  .name = "h264",
  .caps = "video/x-h264, stream-format = (string) { byte-stream, avc }, "
      "alignment = (string) au",
  /* x264's look-ahead and B frames, the decoder's reordering */
  .latency_frames = RT_H264_LOOKAHEAD + RT_H264_BFRAMES +
      RT_H264_DECODER_DELAY,
  .start = h264_start,
  .stop = h264_stop,
  .set_caps = h264_set_caps,
  .handle_frame = h264_handle_frame,
  .drain = h264_drain,
  .reset = h264_reset,
};
