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
 *   (gst_twoflow_rate_control_decide_drop()).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <gst/twoflow/twoflowframe.h>
#include "gstratetranscoder.h"

GST_DEBUG_CATEGORY_EXTERN (rate_transcoder_debug);
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

static GstFlowReturn keep_drain (GstRateTranscoder * self);
static void keep_reset (GstRateTranscoder * self);

guint
rt_h264_delay_frames (void)
{
  return RT_H264_LOOKAHEAD + RT_H264_BFRAMES + RT_H264_DECODER_DELAY;
}

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
  gboolean found;
} NalCollect;

static void
append_nal (GByteArray * out, guint nls, const guint8 * nal, gsize len)
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
  guint t = nal[0] & 0x1f;

  if (c->only_param_sets && t != 7 && t != 8)
    return;
  c->found = TRUE;
  append_nal (c->out, c->nls, nal, len);
}

/* The SPS and PPS a source buffer carries, as the stream writes them. */
static void
remember_param_sets (GstRateTranscoder * self, const guint8 * d, gsize size)
{
  NalCollect c = { g_byte_array_new (), self->nal_length_size, TRUE, FALSE };

  foreach_nal (d, size, self->nal_length_size, collect_nal, &c);
  if (c.found) {
    g_clear_pointer (&self->param_sets, g_bytes_unref);
    self->param_sets = g_byte_array_free_to_bytes (c.out);
  } else {
    g_byte_array_unref (c.out);
  }
}

static gboolean
has_param_sets (GstRateTranscoder * self, const guint8 * d, gsize size)
{
  NalCollect c = { g_byte_array_new (), 0, TRUE, FALSE };

  foreach_nal (d, size, self->nal_length_size, collect_nal, &c);
  g_byte_array_unref (c.out);
  return c.found;
}

void
rt_h264_set_caps (GstRateTranscoder * self, const GstStructure * s)
{
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
          append_nal (out, self->nal_length_size, map.data + i, len);
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
    GST_ELEMENT_WARNING (self, STREAM, FORMAT, (NULL),
        ("stream-format=avc without a valid codec_data, passing through"));
    self->h264_unsupported = TRUE;
  }
}

/* --- codecs ----------------------------------------------------------- */

static gboolean
h264_open_decoder (GstRateTranscoder * self)
{
  const AVCodec *codec = avcodec_find_decoder (AV_CODEC_ID_H264);

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

static guint64
current_target (GstRateTranscoder * self, gboolean * reduce)
{
  GstTwoflowRateControlStats s;

  GST_OBJECT_LOCK (self);
  gst_twoflow_rate_control_get_stats (self->rc, &s);
  GST_OBJECT_UNLOCK (self);
  if (reduce)
    *reduce = s.input_bitrate > 0 && s.target_bitrate > 0 &&
        s.target_bitrate < s.input_bitrate;
  return (guint64) s.target_bitrate;
}

static void
set_encoder_rate (AVCodecContext * c, guint64 bitrate)
{
  c->bit_rate = bitrate;
  c->rc_max_rate = bitrate;
  c->rc_buffer_size = (gint) MIN (bitrate * RT_H264_VBV_S, G_MAXINT);
}

static gboolean
h264_open_encoder (GstRateTranscoder * self, const AVFrame * f)
{
  const AVCodec *codec = avcodec_find_encoder_by_name ("libx264");
  AVCodecContext *c;
  AVDictionary *opts = NULL;
  guint64 target = current_target (self, NULL);
  gchar *params;

  self->h264_reconfig = codec != NULL;
  if (!codec)
    codec = avcodec_find_encoder_by_name ("libopenh264");
  if (!codec || (f->format != AV_PIX_FMT_YUV420P &&
          f->format != AV_PIX_FMT_YUVJ420P) || target == 0)
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
  c->color_range = f->color_range;
  c->thread_count = 1;
  /* I frames where the source has them (forced per picture), never one of
   * the encoder's own */
  c->gop_size = 100000;
  c->keyint_min = 1;
  set_encoder_rate (c, target);
  if (self->h264_reconfig) {
    av_dict_set (&opts, "preset", self->preset ? self->preset : "veryfast", 0);
    av_dict_set (&opts, "forced-idr", "1", 0);
    c->max_b_frames = RT_H264_BFRAMES;
    params = g_strdup_printf ("rc-lookahead=%d:sync-lookahead=0:"
        "repeat-headers=1:annexb=1:scenecut=0:log=0", RT_H264_LOOKAHEAD);
    av_dict_set (&opts, "x264-params", params, 0);
    g_free (params);
  }
  if (avcodec_open2 (c, codec, &opts) < 0) {
    av_dict_free (&opts);
    avcodec_free_context (&c);
    return FALSE;
  }
  av_dict_free (&opts);
  self->enc = c;
  self->enc_n = 0;
  self->enc_bitrate = target;
  self->h264_force_idr = TRUE;
  GST_INFO_OBJECT (self, "%s encoder open at %" G_GUINT64_FORMAT " bit/s",
      codec->name, target);
  return TRUE;
}

/* --- output ----------------------------------------------------------- */

static GstFlowReturn
push_out (GstRateTranscoder * self, GstBuffer * out)
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
  if (self->discont) {
    GST_BUFFER_FLAG_SET (out, GST_BUFFER_FLAG_DISCONT);
    self->discont = FALSE;
  } else {
    GST_BUFFER_FLAG_UNSET (out, GST_BUFFER_FLAG_DISCONT);
  }
  GST_OBJECT_LOCK (self);
  self->frames_out++;
  GST_OBJECT_UNLOCK (self);
  return gst_pad_push (self->srcpad, out);
}

static void
account (GstRateTranscoder * self, GstTwoflowPictureType type,
    const GstTwoflowRateControlDecision * d, gsize in_bytes, gsize out_bytes,
    GstClockTime dur)
{
  GST_OBJECT_LOCK (self);
  gst_twoflow_rate_control_handle_output (self->rc, type, d, in_bytes, 0,
      out_bytes, GST_CLOCK_TIME_IS_VALID (dur) ? dur :
      gst_util_uint64_scale (GST_SECOND, self->fps_d, self->fps_n));
  GST_OBJECT_UNLOCK (self);
  if (type != GST_TWOFLOW_PICTURE_NONE)
    gst_rate_transcoder_note_reaction (self, d->generation);
}

/* the encoder's packets, with the source's timestamps */
static GstFlowReturn
h264_receive_packets (GstRateTranscoder * self)
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
        FALSE
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
    GST_LOG_OBJECT (self, "encoded picture %" G_GINT64_FORMAT " type %d qp %d"
        " %d bytes", pkt->pts, type, d.q, pkt->size);
    d.budget_bits = gst_buffer_get_size (out) * 8.0;
    account (self, type, &d, 0, gst_buffer_get_size (out), dur);
    av_packet_unref (pkt);
    if (ret == GST_FLOW_OK)
      ret = push_out (self, out);
    else
      gst_buffer_unref (out);
  }
  return ret;
}

/* Drain the encoder and close it (the next re-encoding opens a new one). */
static GstFlowReturn
h264_close_encoder (GstRateTranscoder * self)
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
h264_encode (GstRateTranscoder * self, AVFrame * frame)
{
  guint64 target;
  guint64 idx;
  GstFlowReturn ret;
  guint gen;

  GST_OBJECT_LOCK (self);
  gen = gst_twoflow_rate_control_get_generation (self->rc);
  GST_OBJECT_UNLOCK (self);
  target = current_target (self, NULL);

  if (self->enc && target > 0 && target != self->enc_bitrate) {
    if (self->h264_reconfig) {
      /* libx264 via libavcodec: x264_encoder_reconfig() before this
       * picture, no new IDR */
      set_encoder_rate (self->enc, target);
      self->enc_bitrate = target;
      GST_DEBUG_OBJECT (self, "encoder reconfigured to %" G_GUINT64_FORMAT
          " bit/s", target);
    } else {
      /* no reconfiguration: start a new encoder from an IDR */
      ret = h264_close_encoder (self);
      if (ret != GST_FLOW_OK)
        return ret;
    }
  }
  if (!self->enc && !h264_open_encoder (self, frame)) {
    GST_ELEMENT_WARNING (self, LIBRARY, INIT, (NULL),
        ("cannot open an H.264 encoder (libx264 or libopenh264) for this "
            "stream, passing it through"));
    self->h264_unsupported = TRUE;
    return GST_FLOW_OK;
  }
  self->enc_generation = gen;
  idx = self->enc_n++;
  self->h264_ring[idx % RT_MAP_SIZE].pts = frame->pts;
  self->h264_ring[idx % RT_MAP_SIZE].dur = frame->pkt_duration > 0 ?
      (GstClockTime) frame->pkt_duration :
      gst_util_uint64_scale (GST_SECOND, self->fps_d, self->fps_n);
  frame->pts = idx;
  frame->pict_type = (self->h264_force_idr || frame->key_frame) ?
      AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
  self->h264_force_idr = FALSE;
  if (avcodec_send_frame (self->enc, frame) < 0)
    GST_WARNING_OBJECT (self, "encoder refused picture %" G_GUINT64_FORMAT,
        idx);
  return h264_receive_packets (self);
}

/* Pictures out of the decoder, in presentation order: those after what was
 * passed go to the encoder while re-encoding. */
static GstFlowReturn
h264_receive_frames (GstRateTranscoder * self)
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
h264_drain_decoder (GstRateTranscoder * self)
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
rt_h264_drain (GstRateTranscoder * self)
{
  GstFlowReturn ret = GST_FLOW_OK;

  if (self->kr_active || !g_queue_is_empty (&self->kr_pending))
    ret = keep_drain (self);
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
rt_h264_reset (GstRateTranscoder * self)
{
  keep_reset (self);
  avcodec_free_context (&self->enc);
  avcodec_free_context (&self->dec);
  self->h264_encoding = FALSE;
  self->h264_force_idr = FALSE;
  self->h264_unsupported = FALSE;
  self->max_passed_pts = GST_CLOCK_TIME_NONE;
  self->last_dts_out = GST_CLOCK_TIME_NONE;
  self->tail_dropped = FALSE;
  self->leading_before = GST_CLOCK_TIME_NONE;
  self->enc_n = 0;
}

/* --- input ------------------------------------------------------------ */

/* Pass a source buffer; @prepend_ps: put the source's parameter sets in
 * front of it (an IDR that follows the encoder's own). */
static GstFlowReturn
h264_pass (GstRateTranscoder * self, GstBuffer * buf, gboolean prepend_ps)
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
  return push_out (self, buf);
}

/* keep=i|ip: essential pictures byte-identical, the rest dropped in order
 * of least damage */
static GstFlowReturn
h264_chain_drop (GstRateTranscoder * self, GstBuffer * buf,
    const GstTwoflowPictureInfo * info, gsize size, GstClockTime dur,
    guint64 now, gboolean prepend_ps)
{
  GstTwoflowRateControlLayer layer;
  GstTwoflowRateControlDecision d;
  gboolean kept = info->type == GST_TWOFLOW_PICTURE_I ||
      (self->keep == GST_TWOFLOW_RATE_CONTROL_KEEP_IP && info->reference) ||
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

  GST_OBJECT_LOCK (self);
  self->now = now;
  gst_twoflow_rate_control_handle_input_layer (self->rc, info->type, layer,
      size, dur, now);
  d = gst_twoflow_rate_control_decide_drop (self->rc, info->type, layer, size);
  if (!kept && GST_CLOCK_TIME_IS_VALID (self->leading_before) &&
      GST_BUFFER_PTS_IS_VALID (buf) &&
      GST_BUFFER_PTS (buf) < self->leading_before)
    d.action = GST_TWOFLOW_RATE_CONTROL_DROP;
  GST_OBJECT_UNLOCK (self);

  if (d.action == GST_TWOFLOW_RATE_CONTROL_DROP) {
    if (layer == GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL)
      self->tail_dropped = TRUE;
    GST_LOG_OBJECT (self, "dropping %s picture of %" G_GSIZE_FORMAT " bytes "
        "(layer %d)", info->type == GST_TWOFLOW_PICTURE_B ? "B" : "P", size,
        layer);
    account (self, info->type, &d, size, 0, dur);
    /* in its place an event: twoflowsplit still numbers the frames after
     * it as the essential flow's split (of the unaltered source) does */
    gst_pad_push_event (self->srcpad, gst_twoflow_event_new_dropped
        (info->type, info->reference, GST_BUFFER_PTS (buf),
            GST_BUFFER_DTS (buf), dur));
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  account (self, info->type, &d, size, size, dur);
  return h264_pass (self, buf, prepend_ps);
}

static void
send_packet (GstRateTranscoder * self, GstBuffer * buf, GstMapInfo * map,
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
    GST_OBJECT_LOCK (self);
    self->decode_errors++;
    GST_OBJECT_UNLOCK (self);
    GST_WARNING_OBJECT (self, "picture does not decode");
  }
  av_packet_unref (self->pkt);
}

/* --- keep=i: re-encoding the non-essential pictures ------------------- */

/* Below this many bits per pixel and frame the encoder's budget for the
 * non-essential pictures is under what x264 needs for skipped pictures at
 * that size: the GOP's tail is dropped instead. */
#define RT_H264_KEEP_MIN_BPP 0.005
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
keep_next_dts (GstRateTranscoder * self, GstClockTime fallback)
{
  GstClockTime *p = g_queue_pop_head (&self->kr_dts);
  GstClockTime dts = p ? *p : fallback;

  g_free (p);
  return dts;
}

static void
keep_push_dropped (GstRateTranscoder * self, RtKeepPic * k, GstClockTime dts)
{
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_DROP };

  GST_OBJECT_LOCK (self);
  d.generation = gst_twoflow_rate_control_get_generation (self->rc);
  GST_OBJECT_UNLOCK (self);
  account (self, k->info.type, &d, gst_buffer_get_size (k->buf), 0, k->dur);
  gst_pad_push_event (self->srcpad, gst_twoflow_event_new_dropped
      (k->info.type, k->info.reference, k->pts, dts, k->dur));
}

/* the source's picture, byte-identical */
static GstFlowReturn
keep_push_source (GstRateTranscoder * self, RtKeepPic * k, GstClockTime dts)
{
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_PASS };
  GstBuffer *out = gst_buffer_ref (k->buf);
  gsize size = gst_buffer_get_size (out);
  gboolean ps = self->kr_prepend_ps && k->info.idr;

  GST_OBJECT_LOCK (self);
  d.generation = gst_twoflow_rate_control_get_generation (self->rc);
  GST_OBJECT_UNLOCK (self);
  d.budget_bits = size * 8.0;
  account (self, k->info.type, &d, size, size, k->dur);
  if (k->info.reference)
    self->kr_last_fn = k->sp.frame_num;
  if (ps)
    self->kr_prepend_ps = FALSE;
  if (GST_CLOCK_TIME_IS_VALID (dts)) {
    out = gst_buffer_make_writable (out);
    GST_BUFFER_DTS (out) = dts;
  }
  return h264_pass (self, out, ps);
}

static gboolean
keep_open_encoder (GstRateTranscoder * self, const AVFrame * f,
    guint64 bitrate)
{
  const AVCodec *codec = avcodec_find_encoder_by_name ("libx264");
  AVCodecContext *c;
  AVDictionary *opts = NULL;
  gchar *params;

  if (!codec || (f->format != AV_PIX_FMT_YUV420P &&
          f->format != AV_PIX_FMT_YUVJ420P))
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
  c->thread_count = 1;
  c->gop_size = 100000;
  c->keyint_min = 1;
  c->max_b_frames = 0;
  keep_set_rate (c, bitrate);
  av_dict_set (&opts, "preset", self->preset ? self->preset : "veryfast", 0);
  av_dict_set (&opts, "forced-idr", "1", 0);
  av_dict_set (&opts, "tune", "zerolatency", 0);
  /* one picture in, one out, each predicting from the one before only:
   * the receiver's reference list then holds the same picture first */
  params = g_strdup_printf ("rc-lookahead=0:sync-lookahead=0:mbtree=0:"
      "bframes=0:ref=1:weightp=0:repeat-headers=1:annexb=1:scenecut=0:"
      "sliced-threads=0:log=0%s%s",
      *gst_twoflow_h264_splice_x264_params (self->splice) ? ":" : "",
      gst_twoflow_h264_splice_x264_params (self->splice));
  av_dict_set (&opts, "x264-params", params, 0);
  g_free (params);
  if (avcodec_open2 (c, codec, &opts) < 0) {
    av_dict_free (&opts);
    avcodec_free_context (&c);
    return FALSE;
  }
  av_dict_free (&opts);
  self->kenc = c;
  self->kenc_n = 0;
  self->kenc_bitrate = bitrate;
  GST_INFO_OBJECT (self, "keep=i: encoder for the non-essential pictures "
      "open at %" G_GUINT64_FORMAT " bit/s", bitrate);
  return TRUE;
}

/* The budget of the non-essential pictures, in the encoder's own time
 * (it sees only them, at the source's frame rate); 0 below the floor. */
static guint64
keep_encoder_rate (GstRateTranscoder * self, const AVFrame * f)
{
  GstTwoflowRateControlStats s;
  gdouble share, rate, floor;

  GST_OBJECT_LOCK (self);
  gst_twoflow_rate_control_get_stats (self->rc, &s);
  GST_OBJECT_UNLOCK (self);
  share = s.gop_length > 1 ? (s.gop_length - 1.0) / s.gop_length : 1.0;
  rate = (s.target_bitrate - s.floor_bitrate) / share;
  /* before a whole GOP was seen the floor is one I frame over a short
   * window: a guess instead of the floor */
  if (s.gop_length == 0)
    rate = MAX (rate, s.target_bitrate / 2);
  floor = RT_H264_KEEP_MIN_BPP * f->width * f->height * self->fps_n /
      MAX (self->fps_d, 1);
  return rate >= floor ? (guint64) rate : 0;
}

static GstFlowReturn
keep_encode (GstRateTranscoder * self, RtKeepPic * k, AVFrame * frame,
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
    GST_DEBUG_OBJECT (self, "keep=i: budget below the codec's floor, "
        "dropping to the next I");
    self->kr_tail = TRUE;
  }
  if (self->kr_tail) {
    keep_push_dropped (self, k, dts);
    return GST_FLOW_OK;
  }
  if (!self->kenc && !keep_open_encoder (self, frame, rate)) {
    GST_ELEMENT_WARNING (self, LIBRARY, INIT, (NULL),
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
  GST_OBJECT_LOCK (self);
  d.generation = gst_twoflow_rate_control_get_generation (self->rc);
  GST_OBJECT_UNLOCK (self);
  frame->pts = self->kenc_n++;
  /* x264 cannot predict from the source's pictures (its references are
   * its own reconstructions): each run after an essential picture starts
   * with an intra picture */
  frame->pict_type = self->kr_intra ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
  if ((err = avcodec_send_frame (self->kenc, frame)) < 0 ||
      (err = avcodec_receive_packet (self->kenc, self->pkt)) < 0) {
    GST_WARNING_OBJECT (self, "keep=i: encoder gave no picture (%s)",
        av_err2str (err));
    self->kr_tail = TRUE;
    keep_push_dropped (self, k, dts);
    return GST_FLOW_OK;
  }
  fn = (self->kr_last_fn + 1) &
      ((1u << gst_twoflow_h264_splice_log2_max_frame_num (self->splice)) - 1);
  out = g_byte_array_new ();
  if (!gst_twoflow_h264_splice_rewrite (self->splice, self->pkt->data, self->pkt->size,
          fn, k->sp.poc_lsb, self->nal_length_size, out)) {
    GST_WARNING_OBJECT (self, "keep=i: encoded picture cannot be spliced, "
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
  GST_LOG_OBJECT (self, "keep=i: picture %" GST_TIME_FORMAT " re-encoded, "
      "%" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT " bytes, frame_num %u",
      GST_TIME_ARGS (k->pts), n, gst_buffer_get_size (k->buf), fn);
  account (self, k->info.type, &d, 0, n, k->dur);
  return push_out (self, buf);
}

/* One pending picture out, in presentation order. */
static GstFlowReturn
keep_output (GstRateTranscoder * self, RtKeepPic * k, AVFrame * frame)
{
  GstFlowReturn ret = GST_FLOW_OK;

  if (k->leading) {
    /* numbered after its I, as in the source's decode order */
    g_queue_push_tail (&self->kr_after_i, k);
    return GST_FLOW_OK;
  }
  if (k->info.type == GST_TWOFLOW_PICTURE_I) {
    ret = keep_push_source (self, k, keep_next_dts (self, GST_CLOCK_TIME_NONE));
    self->kr_intra = TRUE;
    self->kr_tail = FALSE;
    while (!g_queue_is_empty (&self->kr_after_i)) {
      RtKeepPic *l = g_queue_pop_head (&self->kr_after_i);

      keep_push_dropped (self, l, keep_next_dts (self, l->pts));
      keep_pic_free (l);
    }
  } else if (!frame || !k->info.reference) {
    /* undecoded, or nothing may predict from it (the encoder's next
     * picture would) */
    keep_push_dropped (self, k, keep_next_dts (self, k->pts));
  } else {
    ret = keep_encode (self, k, frame, keep_next_dts (self, k->pts));
  }
  keep_pic_free (k);
  return ret;
}

static GstFlowReturn
keep_receive_frames (GstRateTranscoder * self)
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
static GstFlowReturn
keep_drain (GstRateTranscoder * self)
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
  return ret;
}

static void
keep_reset (GstRateTranscoder * self)
{
  g_queue_clear_full (&self->kr_pending, (GDestroyNotify) keep_pic_free);
  g_queue_clear_full (&self->kr_after_i, (GDestroyNotify) keep_pic_free);
  g_queue_clear_full (&self->kr_dts, g_free);
  avcodec_free_context (&self->kenc);
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
h264_chain_keep (GstRateTranscoder * self, GstBuffer * buf, GstMapInfo * map,
    const GstTwoflowPictureInfo * info, const GstTwoflowH264SourcePicture * spic,
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
  GST_OBJECT_LOCK (self);
  self->now = now;
  gst_twoflow_rate_control_handle_input_layer (self->rc, info->type, layer,
      size, dur, now);
  GST_OBJECT_UNLOCK (self);
  current_target (self, &reduce);

  if (!self->dec && !h264_open_decoder (self)) {
    gst_buffer_unmap (buf, map);
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, LIBRARY, INIT, (NULL),
        ("cannot open the H.264 decoder"));
    return GST_FLOW_ERROR;
  }

  if (info->idr && self->kr_active) {
    /* nothing after an IDR predicts from before it: the run ends here */
    ret = keep_drain (self);
    if (!reduce) {
      GST_INFO_OBJECT (self, "keep=i: no reduction needed, passing from "
          "this IDR");
      self->kr_active = FALSE;
      self->max_passed_pts = GST_CLOCK_TIME_NONE;
    }
  }
  if (!self->kr_active && reduce && info->type != GST_TWOFLOW_PICTURE_B) {
    /* what was passed is a presentation-order prefix: the decoder's
     * pictures after it are this one and those after */
    GST_INFO_OBJECT (self, "keep=i: re-encoding the non-essential pictures "
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

    GST_OBJECT_LOCK (self);
    d.generation = gst_twoflow_rate_control_get_generation (self->rc);
    GST_OBJECT_UNLOCK (self);
    d.budget_bits = size * 8.0;
    account (self, info->type, &d, size, size, dur);
    if (info->reference)
      self->kr_last_fn = spic->frame_num;
    if (ret == GST_FLOW_OK)
      ret = h264_pass (self, gst_buffer_ref (buf), self->kr_prepend_ps &&
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

  send_packet (self, buf, map, dur);
  gst_buffer_unmap (buf, map);
  gst_buffer_unref (buf);
  if (ret == GST_FLOW_OK)
    ret = keep_receive_frames (self);
  else
    keep_receive_frames (self);
  return ret;
}

GstFlowReturn
rt_h264_chain (GstRateTranscoder * self, GstBuffer * buf)
{
  gboolean sent = FALSE;
  GstTwoflowPictureInfo info;
  GstMapInfo map;
  GstClockTime dur, ts;
  guint64 now;
  gsize size;
  gboolean reduce, pass;
  GstFlowReturn ret = GST_FLOW_OK;
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_PASS };
  guint gen;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return push_out (self, buf);
  size = map.size;
  if (!gst_twoflow_picture_parser_parse (self->picture_parser, map.data,
          map.size, &info)) {
    if (!self->h264_avc)
      remember_param_sets (self, map.data, map.size);
    gst_buffer_unmap (buf, &map);
    GST_DEBUG_OBJECT (self, "buffer without a picture, passed");
    return push_out (self, buf);
  }
  if (!self->h264_avc && info.sequence_header)
    remember_param_sets (self, map.data, map.size);

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

  /* keep=i: the non-essential pictures re-encoded when the target asks
   * for less (set while keep=none re-encodes: from the next source IDR) */
  if (self->keep == GST_TWOFLOW_RATE_CONTROL_KEEP_I && !self->kr_unsupported
      && (!self->h264_encoding || info.idr) && GST_BUFFER_PTS_IS_VALID (buf)) {
    GstTwoflowH264SourcePicture spic;
    const gchar *why = NULL;

    if (!self->splice) {
      self->splice = gst_twoflow_h264_splice_new ();
      /* avc: the SPS/PPS of codec_data */
      if (self->param_sets)
        gst_twoflow_h264_splice_parse_source (self->splice,
            g_bytes_get_data (self->param_sets, NULL),
            g_bytes_get_size (self->param_sets), self->nal_length_size,
            &spic, NULL);
    }
    /* the pictures re-encoded before an IDR leave first, spliced under
     * the SPS they belong to (the IDR may bring another) */
    if (info.idr && self->kr_active) {
      ret = keep_drain (self);
      if (ret != GST_FLOW_OK) {
        gst_buffer_unmap (buf, &map);
        gst_buffer_unref (buf);
        return ret;
      }
    }
    if (gst_twoflow_h264_splice_parse_source (self->splice, map.data, map.size,
            self->nal_length_size, &spic, &why) && !why) {
      if (self->h264_encoding) {
        ret = rt_h264_drain (self);
        self->kr_prepend_ps = self->enc_n > 0 &&
            !has_param_sets (self, map.data, map.size);
        self->enc_n = 0;
        if (ret != GST_FLOW_OK) {
          gst_buffer_unmap (buf, &map);
          gst_buffer_unref (buf);
          return ret;
        }
      }
      return h264_chain_keep (self, buf, &map, &info, &spic, size, dur, now);
    }
    if (why) {
      GST_ELEMENT_WARNING (self, STREAM, NOT_IMPLEMENTED, (NULL),
          ("keep=i re-encodes the non-essential pictures only in sequences "
              "it can splice into (this one has %s): dropping them instead",
              why));
      self->kr_unsupported = TRUE;
    }
  }

  /* keep=i|ip: no codecs. Set while re-encoding, it applies from the next
   * source IDR (the receiver's references are the encoder's until then) */
  if (self->keep != GST_TWOFLOW_RATE_CONTROL_KEEP_NONE &&
      (!self->h264_encoding || info.idr)) {
    gboolean ps = FALSE;

    if (self->h264_encoding || self->dec) {
      ret = rt_h264_drain (self);
      ps = self->enc_n > 0 && !has_param_sets (self, map.data, map.size);
      self->enc_n = 0;
    }
    gst_buffer_unmap (buf, &map);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (buf);
      return ret;
    }
    return h264_chain_drop (self, buf, &info, size, dur, now, ps);
  }

  GST_OBJECT_LOCK (self);
  self->now = now;
  gen = gst_twoflow_rate_control_get_generation (self->rc);
  gst_twoflow_rate_control_handle_input (self->rc, info.type, size, dur, now);
  if (gst_twoflow_rate_control_get_generation (self->rc) != gen) {
    self->pending_generation =
        gst_twoflow_rate_control_get_generation (self->rc);
    self->pending_since = g_get_monotonic_time ();
  }
  GST_OBJECT_UNLOCK (self);
  current_target (self, &reduce);

  if (!GST_BUFFER_PTS_IS_VALID (buf) && !self->h264_unsupported) {
    GST_ELEMENT_WARNING (self, STREAM, FORMAT, (NULL),
        ("H.264 input without PTS cannot be re-encoded, passing through"));
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

  if (!self->dec && !h264_open_decoder (self)) {
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, LIBRARY, INIT, (NULL),
        ("cannot open the H.264 decoder"));
    return GST_FLOW_ERROR;
  }
  /* until the decoder has seen a picture, its format is not known: the
   * first picture is decoded before it is decided on */
  if (self->dec->pix_fmt == AV_PIX_FMT_NONE) {
    send_packet (self, buf, &map, dur);
    sent = TRUE;
  }
  if (reduce && !self->h264_encoding && self->dec->pix_fmt !=
      AV_PIX_FMT_YUV420P && self->dec->pix_fmt != AV_PIX_FMT_YUVJ420P) {
    GST_ELEMENT_WARNING (self, STREAM, NOT_IMPLEMENTED, (NULL),
        ("re-encoding takes 8-bit 4:2:0 H.264 only (this is %s), passing "
            "through", av_get_pix_fmt_name (self->dec->pix_fmt) ?
            av_get_pix_fmt_name (self->dec->pix_fmt) : "unknown"));
    self->h264_unsupported = TRUE;
    reduce = FALSE;
  }

  if (self->h264_encoding && !reduce && info.idr) {
    /* back to the source's bits from its IDR: the encoder's pictures
     * before it leave first */
    ret = h264_drain_decoder (self);
    if (ret == GST_FLOW_OK)
      ret = h264_close_encoder (self);
    self->h264_encoding = FALSE;
    self->max_passed_pts = GST_CLOCK_TIME_NONE;
    GST_INFO_OBJECT (self, "no reduction needed: passing through from IDR");
    pass = TRUE;
  } else if (!self->h264_encoding && reduce &&
      info.type != GST_TWOFLOW_PICTURE_B) {
    /* everything passed so far is a presentation-order prefix: the
     * encoder takes over from here, with an IDR */
    self->h264_encoding = TRUE;
    self->h264_force_idr = TRUE;
    GST_INFO_OBJECT (self, "re-encoding from this %s picture",
        info.type == GST_TWOFLOW_PICTURE_I ? "I" : "P");
    pass = FALSE;
  } else {
    pass = !self->h264_encoding;
  }

  if (pass) {
    gboolean ps = self->enc_n > 0 && info.idr &&
        !has_param_sets (self, map.data, map.size);

    self->enc_n = 0;
    d.generation = gst_twoflow_rate_control_get_generation (self->rc);
    d.budget_bits = size * 8.0;
    account (self, info.type, &d, size, size, dur);
    gst_buffer_ref (buf);
    if (ret == GST_FLOW_OK)
      ret = h264_pass (self, buf, ps);
    else
      gst_buffer_unref (buf);
  }

  if (!sent)
    send_packet (self, buf, &map, dur);
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
  if (ret == GST_FLOW_OK)
    ret = h264_receive_frames (self);
  else
    h264_receive_frames (self);
  return ret;
}
