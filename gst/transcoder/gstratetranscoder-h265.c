/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder, H.265 (issue 27). The H.264 codec's byte-stream
 * machinery (gstratetranscoder-h264.c) with libavcodec's hevc decoder and
 * libx265 through libavcodec:
 *
 * keep=none: every picture decoded and re-encoded with libx265 in
 *   average-bitrate mode under a VBV, as H.264 does. libavcodec 5.1's
 *   libx265 wrapper never calls x265_encoder_reconfig() (a bit_rate
 *   change on an open context is ignored), so a target change drains the
 *   encoder and opens a new one at the new rate, from an IDR of its own:
 *   the change applies from the next picture, at the cost of one intra
 *   picture. Passing through starts again at the source's next IDR or BLA
 *   (a CRA's RASL pictures would predict from the encoder's pictures).
 *
 * keep=i|ip: no codecs. The IRAP pictures (IDR, CRA, BLA; keep=ip: every
 *   picture others predict from) leave byte-identical; the rate is lowered
 *   by dropping the sub-layer non-reference pictures of the highest
 *   temporal sub-layer (picturetype's B class), and under keep=i, below
 *   that, the GOP's tail up to the next IRAP (a CRA's RASL pictures with
 *   it). H.264's keep=i re-encoding of the non-essential pictures spliced
 *   between the source's (gst-libs h264splice) has no H.265 splice yet:
 *   this dropping is its documented fallback (docs/transcoder.md).
 *
 * A codec behind the ops table of gstratetranscoder-codec.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstratetranscoder-h264.h"

#define GST_CAT_DEFAULT rate_transcoder_debug

/* x265's look-ahead and B frames, the decoder's reordering: the latency
 * the element reports for H.265 (one frame thread: no more) */
#define RT_H265_LOOKAHEAD 5
#define RT_H265_BFRAMES 3
#define RT_H265_DECODER_DELAY 2

gboolean
rt_h265_takes_format (enum AVPixelFormat format)
{
  const AVCodec *codec = avcodec_find_encoder_by_name ("libx265");
  const enum AVPixelFormat *p;

  for (p = codec ? codec->pix_fmts : NULL; p && *p != AV_PIX_FMT_NONE; p++)
    if (*p == format)
      return TRUE;
  return FALSE;
}

gboolean
rt_h265_open_encoder (RtH264 * self, const AVFrame * f)
{
  const AVCodec *codec = avcodec_find_encoder_by_name ("libx265");
  AVCodecContext *c;
  AVDictionary *opts = NULL;
  guint64 target = rt_h264_current_target (self, NULL);
  gchar *params, *preset;

  self->h264_reconfig = FALSE;
  if (!codec || !rt_h265_takes_format (f->format) || target == 0)
    return FALSE;
  c = gst_rate_transcoder_new_encoder_context (self->element, codec, f);
  if (!c)
    return FALSE;
  c->color_primaries = f->color_primaries;
  c->color_trc = f->color_trc;
  c->colorspace = f->colorspace;
  c->color_range = f->color_range;
  /* IRAPs where the source has them (forced per picture, as IDRs), never
   * one of the encoder's own */
  c->gop_size = 100000;
  c->keyint_min = 1;
  rt_h264_set_encoder_rate (c, target);
  preset = gst_rate_transcoder_dup_preset (self->element);
  av_dict_set (&opts, "preset", preset ? preset : "veryfast", 0);
  g_free (preset);
  av_dict_set (&opts, "forced-idr", "1", 0);
  /* VPS/SPS/PPS before every IDR: a receiver joins at any of them; no
   * version SEI */
  params = g_strdup_printf ("bframes=%d:rc-lookahead=%d:frame-threads=1:"
      "repeat-headers=1:scenecut=0:info=0:log-level=none", RT_H265_BFRAMES,
      RT_H265_LOOKAHEAD);
  av_dict_set (&opts, "x265-params", params, 0);
  g_free (params);
  if (!gst_rate_transcoder_open_encoder (&c, codec, &opts))
    return FALSE;
  self->enc = c;
  self->enc_n = 0;
  self->enc_bitrate = target;
  self->h264_force_idr = TRUE;
  GST_INFO_OBJECT (self->element, "libx265 encoder open at %" G_GUINT64_FORMAT
      " bit/s (generation %u)", target, rt_h264_generation (self));
  return TRUE;
}

/* --- the ops table ---------------------------------------------------- */

static GstRateTranscoderCodecState *
h265_start (GstRateTranscoder * element)
{
  return (GstRateTranscoderCodecState *) rt_h264_new (element, TRUE);
}

static void
h265_stop (GstRateTranscoderCodecState * state)
{
  rt_h264_free ((RtH264 *) state);
}

/* hvc1/hev1: the hvcC record (ISO/IEC 14496-15 8.3.3) gives the NAL
 * length size and the VPS/SPS/PPS (arrays from byte 22) */
static void
h265_set_caps (GstRateTranscoderCodecState * state, const GstStructure * s)
{
  RtH264 *self = (RtH264 *) state;
  const gchar *fmt = gst_structure_get_string (s, "stream-format");
  const GValue *v = gst_structure_get_value (s, "codec_data");
  GstBuffer *cd = v && G_VALUE_HOLDS (v, GST_TYPE_BUFFER) ?
      gst_value_get_buffer (v) : NULL;
  GstMapInfo map;

  self->h264_avc = fmt && (g_str_equal (fmt, "hvc1") ||
      g_str_equal (fmt, "hev1"));
  self->nal_length_size = 0;
  gst_twoflow_picture_parser_set_codec_data (self->picture_parser, NULL, 0);
  if (self->h264_avc && cd && gst_buffer_map (cd, &map, GST_MAP_READ)) {
    if (map.size >= 23 && gst_twoflow_picture_parser_set_codec_data
        (self->picture_parser, map.data, map.size)) {
      GByteArray *out = g_byte_array_new ();
      guint arrays = map.data[22], a, k;
      gsize i = 23;

      self->nal_length_size = (map.data[21] & 3) + 1;
      for (a = 0; a < arrays && i + 3 <= map.size; a++) {
        guint n = GST_READ_UINT16_BE (map.data + i + 1);

        i += 3;
        for (k = 0; k < n && i + 2 <= map.size; k++) {
          gsize len = GST_READ_UINT16_BE (map.data + i);

          i += 2;
          if (len > map.size - i)
            break;
          rt_h264_append_nal (out, self->nal_length_size, map.data + i, len);
          i += len;
        }
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
        ("stream-format=%s without a valid codec_data, passing through",
            fmt));
    self->h264_unsupported = TRUE;
  }
}

static GstFlowReturn
h265_handle_frame (GstRateTranscoderCodecState * state, GstBuffer * buf,
    GstClockTime dur, guint64 now)
{
  return rt_h264_handle_frame ((RtH264 *) state, buf, dur, now);
}

static GstFlowReturn
h265_drain (GstRateTranscoderCodecState * state)
{
  return rt_h264_drain ((RtH264 *) state);
}

static void
h265_reset (GstRateTranscoderCodecState * state)
{
  rt_h264_reset ((RtH264 *) state);
}

const GstRateTranscoderCodec gst_rate_transcoder_codec_h265 = {
  .name = "h265",
  .caps = "video/x-h265, stream-format = (string) { byte-stream, hvc1, "
      "hev1 }, alignment = (string) au",
  .latency_frames = RT_H265_LOOKAHEAD + RT_H265_BFRAMES +
      RT_H265_DECODER_DELAY,
  .start = h265_start,
  .stop = h265_stop,
  .set_caps = h265_set_caps,
  .handle_frame = h265_handle_frame,
  .drain = h265_drain,
  .reset = h265_reset,
};
