/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder, AV1 (issue 27).
 *
 * A temporal unit (av1parse's alignment=tu) is classed by
 * gst-libs/gst/picturetype: I = only intra frames (KEY_FRAME,
 * INTRA_ONLY), P = a frame in it refreshes a reference slot, B = none
 * does.
 *
 * keep=none: every unit decoded (libdav1d through libavcodec, libaom
 *   where it is missing) and re-encoded with SVT-AV1 through libavcodec
 *   (libaom-av1 in real-time mode where SVT-AV1 cannot open, or takes
 *   not the pictures' format: 4:2:2, 4:4:4, 12 bits): low-delay
 *   prediction (no reordering, no look-ahead), CBR at the target under a
 *   VBV, a key frame with its sequence header every source key-frame
 *   spacing (~1 s without one). AV1 has no reordering between units, so
 *   re-encoding starts at any unit (the encoder's key frame first), once
 *   half a second of input has measured its rate, and passing through
 *   comes back at the source's next key frame refreshing every slot (the
 *   source's sequence header put in front when it has none). libavcodec
 *   5.1's libsvtav1 cannot change an open encoder's rate (and SVT-AV1 1.4
 *   forces no key frame under CBR), so a new target is H.265's fallback:
 *   the encoder is drained and a new one opened at the target from the
 *   next picture, its key frame. The wrapper asks SVT-AV1 for a unit only
 *   when it is given a picture: a unit leaves two pictures after its own
 *   when SVT-AV1 keeps up, later when it falls behind (all of them at the
 *   end of the stream or a switch). Encoded units follow the source's
 *   form: no temporal delimiter when the source has none (matroska, MP4).
 *
 * keep=i|ip: no codecs. The essential units (keep=ip: every unit that
 *   refreshes a slot) and those carrying a sequence header leave
 *   byte-identical; the rate is lowered by dropping the B units (nothing
 *   reads what they code) and, under keep=i below that floor, the GOP's
 *   tail: from a refreshing unit up to the next key frame that refreshes
 *   every slot (an intra-only frame refreshes only some: the units after
 *   it may still read a slot the dropped tail wrote). The decisions are
 *   the rate control core's, as for H.264/H.265 dropping.
 *
 * A codec behind the ops table of gstratetranscoder-codec.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <gst/codecparsers/gstav1parser.h>
#include <gst/picturetype/picturetype.h>
#include <gst/twoflow/twoflowframe.h>
#include "gstratetranscoder-codec.h"

#define GST_CAT_DEFAULT rate_transcoder_debug

/* pictures SVT-AV1's low-delay mode holds (libaom's real-time mode none)
 * and dav1d's with one thread: the latency the element reports for AV1 */
#define RT_AV1_ENCODER_DELAY 2
#define RT_AV1_DECODER_DELAY 0
/* SVT-AV1's preset (0 slowest - 13 fastest) unless the preset property is
 * a number: 12 re-encodes 720p25 in real time on one core (26 frames/s of
 * CPU time, bench/transcoder/av1.py; 10: 18) */
#define RT_AV1_PRESET 12
/* VBV buffer, in seconds of the target */
#define RT_AV1_VBV_S 0.75
/* a target this many times the encoder's (or its inverse) reopens it
 * before the source's next key frame (H.265's rule) */
#define RT_AV1_REOPEN 1.25
/* re-encoding starts once this much input is measured: the rate control
 * core's guess from the first pictures (made for I/P/B GOPs) is far
 * above the truth on AV1's hidden frames (3.5 times on SVT-AV1's) */
#define RT_AV1_MEASURE_NS (GST_SECOND / 2)
/* encoder picture number -> timestamps ring size; > any codec delay */
#define RT_AV1_MAP_SIZE 64

/* under the element's stream lock */
typedef struct
{
  GstRateTranscoder *element;
  GstTwoflowPictureParser *picture_parser;
  GstAV1Parser *obu_parser;     /* OBU boundaries (sequence headers) */
  gboolean tail_dropped;        /* dropping up to the next full key frame */

  /* keep=none */
  AVCodecContext *dec;
  AVCodecContext *enc;
  AVPacket *pkt;
  GBytes *seq_header;           /* the source's last sequence header OBU */
  GBytes *enc_seq_header;       /* the encoder's */
  gboolean dec_needs_sh;        /* the decoder has no sequence header */
  gboolean src_td;              /* the source's units start with a
                                 * temporal delimiter (matroska's not) */
  gboolean encoding;            /* output comes from the encoder */
  gboolean unsupported;         /* re-encoding impossible: pass through */
  gboolean last_out_encoded;    /* the last unit out was the encoder's */
  GstClockTime max_passed_pts;  /* decoded pictures up to it were passed */
  GstClockTime last_dts_out;
  guint64 enc_n;                /* pictures given to this encoder */
  guint64 enc_bitrate;          /* bit rate configured on the encoder */
  guint enc_generation;         /* rate-control generation it codes under */
  GstClockTime measured;        /* duration of the units in */
  guint since_key;              /* source units since its last key frame */
  guint key_spacing;            /* source units between its key frames */
  gboolean seen_key;            /* since_key counts from a key frame */
  struct
  {
    GstClockTime pts, dur;
  } ring[RT_AV1_MAP_SIZE];      /* by encoder picture number */
} RtAv1;

/* --- sequence headers ------------------------------------------------- */

/* Offset and size of the first OBU of @type in @d (FALSE if none). */
static gboolean
av1_find_obu (RtAv1 * self, const guint8 * d, gsize size, GstAV1OBUType type,
    gsize * at, gsize * len)
{
  gsize off = 0;

  while (off < size) {
    GstAV1OBU obu;
    guint32 consumed = 0;
    GstAV1ParserResult res = gst_av1_parser_identify_one_obu
        (self->obu_parser, d + off, size - off, &obu, &consumed);

    if ((res != GST_AV1_PARSER_OK && res != GST_AV1_PARSER_DROP) ||
        consumed == 0)
      return FALSE;
    if (res == GST_AV1_PARSER_OK && obu.obu_type == type) {
      *at = off;
      *len = consumed;
      return TRUE;
    }
    off += consumed;
  }
  return FALSE;
}

static void
av1_remember_seq_header (RtAv1 * self, GBytes ** where, const guint8 * d,
    gsize size)
{
  gsize at, len;

  if (av1_find_obu (self, d, size, GST_AV1_OBU_SEQUENCE_HEADER, &at, &len)) {
    g_clear_pointer (where, g_bytes_unref);
    *where = g_bytes_new (d + at, len);
  }
}

/* @d with the sequence header @sh after its temporal delimiter (a new
 * array), or NULL when it has one already or @sh is NULL. */
static GByteArray *
av1_with_seq_header (RtAv1 * self, GBytes * sh, const guint8 * d, gsize size)
{
  GByteArray *out;
  gsize at = 0, len = 0, n;
  const guint8 *shd;

  if (!sh || av1_find_obu (self, d, size, GST_AV1_OBU_SEQUENCE_HEADER, &at,
          &len))
    return NULL;
  if (!av1_find_obu (self, d, size, GST_AV1_OBU_TEMPORAL_DELIMITER, &at,
          &len) || at != 0)
    len = 0;
  shd = g_bytes_get_data (sh, &n);
  out = g_byte_array_sized_new (size + n);
  g_byte_array_append (out, d, len);
  g_byte_array_append (out, shd, n);
  g_byte_array_append (out, d + len, size - len);
  return out;
}

/* --- codecs ----------------------------------------------------------- */

static gboolean
av1_open_decoder (RtAv1 * self)
{
  const AVCodec *codec = avcodec_find_decoder_by_name ("libdav1d");

  if (!codec)
    codec = avcodec_find_decoder_by_name ("libaom-av1");
  if (!codec)
    return FALSE;
  self->dec = avcodec_alloc_context3 (codec);
  if (!self->dec)
    return FALSE;
  /* one thread, one frame in flight: a unit's picture comes out as it
   * goes in */
  self->dec->thread_count = 1;
  self->dec->flags |= AV_CODEC_FLAG_LOW_DELAY;
  self->dec->pkt_timebase = (AVRational) {
  1, GST_SECOND};
  if (avcodec_open2 (self->dec, codec, NULL) < 0) {
    avcodec_free_context (&self->dec);
    return FALSE;
  }
  self->dec_needs_sh = TRUE;
  if (!self->pkt)
    self->pkt = av_packet_alloc ();
  return self->pkt != NULL;
}

static void
av1_send_packet (RtAv1 * self, GstBuffer * buf, const guint8 * d, gsize size,
    GstClockTime dur)
{
  /* after opening or a flush the decoder knows no sequence header: the
   * source's last one in front of a unit without */
  GByteArray *sh = self->dec_needs_sh ?
      av1_with_seq_header (self, self->seq_header, d, size) : NULL;

  if (sh) {
    d = sh->data;
    size = sh->len;
  }
  if (av_new_packet (self->pkt, size) == 0) {
    memcpy (self->pkt->data, d, size);
    self->pkt->pts = GST_BUFFER_PTS_IS_VALID (buf) ?
        (gint64) GST_BUFFER_PTS (buf) : AV_NOPTS_VALUE;
    self->pkt->duration = dur;
    if (avcodec_send_packet (self->dec, self->pkt) < 0) {
      gst_rate_transcoder_count_decode_error (self->element);
      GST_WARNING_OBJECT (self->element, "temporal unit does not decode");
    } else {
      self->dec_needs_sh = FALSE;
    }
    av_packet_unref (self->pkt);
  }
  if (sh)
    g_byte_array_unref (sh);
}

static guint64
av1_current_target (RtAv1 * self, gboolean * reduce, guint * generation)
{
  GstTwoflowRateControl *rc = gst_rate_transcoder_lock (self->element);
  GstTwoflowRateControlStats s;

  gst_twoflow_rate_control_get_stats (rc, &s);
  if (generation)
    *generation = gst_twoflow_rate_control_get_generation (rc);
  gst_rate_transcoder_unlock (self->element);
  if (reduce)
    *reduce = s.input_bitrate > 0 && s.target_bitrate > 0 &&
        s.target_bitrate < s.input_bitrate;
  GST_LOG_OBJECT (self->element, "input %" G_GUINT64_FORMAT " bit/s, target %"
      G_GUINT64_FORMAT, (guint64) s.input_bitrate, (guint64) s.target_bitrate);
  return (guint64) s.target_bitrate;
}

static gboolean
av1_takes_format (const AVCodec * codec, enum AVPixelFormat format)
{
  const enum AVPixelFormat *p;

  for (p = codec ? codec->pix_fmts : NULL; p && *p != AV_PIX_FMT_NONE; p++)
    if (*p == format)
      return TRUE;
  return FALSE;
}

/* An encoder context at @target for pictures like @f: a key frame every
 * source key-frame spacing (~1 s without one), CBR under a VBV. */
static AVCodecContext *
av1_new_encoder (RtAv1 * self, const AVCodec * codec, const AVFrame * f,
    guint64 target, AVDictionary ** opts)
{
  AVCodecContext *c = gst_rate_transcoder_new_encoder_context (self->element,
      codec, f);
  gint fps_n, fps_d, second;

  if (!c)
    return NULL;
  gst_rate_transcoder_get_framerate (self->element, &fps_n, &fps_d);
  second = MAX (1, (fps_n + fps_d / 2) / MAX (fps_d, 1));
  c->color_primaries = f->color_primaries;
  c->color_trc = f->color_trc;
  c->colorspace = f->colorspace;
  c->color_range = f->color_range;
  c->gop_size = self->key_spacing > 0 && self->key_spacing <= 10u * second ?
      (gint) self->key_spacing : second;
  c->bit_rate = target;
  c->rc_buffer_size = (gint) MIN (target * RT_AV1_VBV_S, G_MAXINT);
  c->flags |= AV_CODEC_FLAG_CLOSED_GOP;
  *opts = NULL;
  return c;
}

/* SVT-AV1: low delay (no reordering, no look-ahead), CBR, key frames that
 * refresh every slot; the preset property when it is a number */
static AVCodecContext *
av1_open_svt (RtAv1 * self, const AVFrame * f, guint64 target)
{
  const AVCodec *codec = avcodec_find_encoder_by_name ("libsvtav1");
  AVCodecContext *c;
  AVDictionary *opts;
  gchar *preset, *end = NULL;
  gint64 p = -1;

  if (!av1_takes_format (codec, f->format))
    return NULL;
  c = av1_new_encoder (self, codec, f, target, &opts);
  if (!c)
    return NULL;
  preset = gst_rate_transcoder_dup_preset (self->element);
  if (preset)
    p = g_ascii_strtoll (preset, &end, 10);
  if (!preset || end == preset || *end || p < 0 || p > 13)
    p = RT_AV1_PRESET;
  g_free (preset);
  av_dict_set_int (&opts, "preset", p, 0);
  av_dict_set (&opts, "svtav1-params",
      "pred-struct=1:rc=2:irefresh-type=2:enable-tpl-la=0", 0);
  gst_rate_transcoder_open_encoder (&c, codec, &opts);
  return c;
}

/* libaom in real-time mode, CBR (min = max = average rate) */
static AVCodecContext *
av1_open_aom (RtAv1 * self, const AVFrame * f, guint64 target)
{
  const AVCodec *codec = avcodec_find_encoder_by_name ("libaom-av1");
  AVCodecContext *c;
  AVDictionary *opts;

  if (!av1_takes_format (codec, f->format))
    return NULL;
  c = av1_new_encoder (self, codec, f, target, &opts);
  if (!c)
    return NULL;
  c->rc_min_rate = c->rc_max_rate = target;
  c->thread_count = 1;
  av_dict_set (&opts, "usage", "realtime", 0);
  av_dict_set (&opts, "cpu-used", "8", 0);
  av_dict_set (&opts, "lag-in-frames", "0", 0);
  gst_rate_transcoder_open_encoder (&c, codec, &opts);
  return c;
}

static gboolean
av1_open_encoder (RtAv1 * self, const AVFrame * f, guint64 target)
{
  if (target == 0)
    return FALSE;
  self->enc = av1_open_svt (self, f, target);
  if (!self->enc)
    self->enc = av1_open_aom (self, f, target);
  if (!self->enc)
    return FALSE;
  self->enc_n = 0;
  self->enc_bitrate = target;
  g_clear_pointer (&self->enc_seq_header, g_bytes_unref);
  GST_INFO_OBJECT (self->element, "%s open at %" G_GUINT64_FORMAT " bit/s, "
      "key frame every %d", self->enc->codec->name, target,
      self->enc->gop_size);
  return TRUE;
}

/* --- output ----------------------------------------------------------- */

static GstFlowReturn
av1_push_out (RtAv1 * self, GstBuffer * out)
{
  out = gst_buffer_make_writable (out);
  /* decode timestamps stay increasing across switches */
  if (GST_BUFFER_DTS_IS_VALID (out) &&
      GST_CLOCK_TIME_IS_VALID (self->last_dts_out) &&
      GST_BUFFER_DTS (out) <= self->last_dts_out)
    GST_BUFFER_DTS (out) = self->last_dts_out + 1;
  if (GST_BUFFER_DTS_IS_VALID (out))
    self->last_dts_out = GST_BUFFER_DTS (out);
  return gst_rate_transcoder_push (self->element, out, TRUE);
}

/* One encoder packet out, with the source's timestamps and, on a key
 * frame without one, the encoder's sequence header. */
static GstFlowReturn
av1_push_packet (RtAv1 * self, AVPacket * pkt)
{
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_ENCODE };
  GstTwoflowPictureType type;
  gsize n;
  guint8 *sd = av_packet_get_side_data (pkt, AV_PKT_DATA_QUALITY_STATS, &n);
  guint64 idx = pkt->pts >= 0 ? (guint64) pkt->pts : 0;
  gboolean key = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
  GByteArray *sh = NULL;
  GstBuffer *out;
  const guint8 *data = pkt->data;
  gsize size = pkt->size, at, len;

  /* units as the source's: without a temporal delimiter if it has none */
  if (!self->src_td && av1_find_obu (self, data, size,
          GST_AV1_OBU_TEMPORAL_DELIMITER, &at, &len) && at == 0) {
    data += len;
    size -= len;
  }
  type = key ? GST_TWOFLOW_PICTURE_I : GST_TWOFLOW_PICTURE_P;
  d.generation = self->enc_generation;
  if (sd && n >= 4)
    d.q = GST_READ_UINT32_LE (sd) / FF_QP2LAMBDA;
  if (key) {
    av1_remember_seq_header (self, &self->enc_seq_header, data, size);
    sh = av1_with_seq_header (self, self->enc_seq_header, data, size);
  }
  if (sh) {
    n = sh->len;
    out = gst_buffer_new_wrapped (g_byte_array_free (sh, FALSE), n);
  } else {
    out = gst_buffer_new_memdup (data, size);
  }
  /* no reordering: decoded as shown */
  GST_BUFFER_PTS (out) = GST_BUFFER_DTS (out) =
      self->ring[idx % RT_AV1_MAP_SIZE].pts;
  GST_BUFFER_DURATION (out) = self->ring[idx % RT_AV1_MAP_SIZE].dur;
  if (!key)
    GST_BUFFER_FLAG_SET (out, GST_BUFFER_FLAG_DELTA_UNIT);
  d.budget_bits = gst_buffer_get_size (out) * 8.0;
  GST_LOG_OBJECT (self->element, "encoded picture %" G_GUINT64_FORMAT
      "%s qp %d, %" G_GSIZE_FORMAT " bytes", idx, key ? " (key)" : "",
      d.q, gst_buffer_get_size (out));
  self->last_out_encoded = TRUE;
  gst_rate_transcoder_account (self->element, type, &d, 0, 0,
      gst_buffer_get_size (out), GST_BUFFER_DURATION (out), TRUE, FALSE);
  return av1_push_out (self, out);
}

/* The units the encoder has ready. libavcodec 5.1's libsvtav1 asks
 * SVT-AV1 for one only when it is given a picture (or drained): a unit
 * leaves 2 pictures after its own when SVT-AV1 keeps up, later when it
 * falls behind. */
static GstFlowReturn
av1_receive_packets (RtAv1 * self)
{
  GstFlowReturn ret = GST_FLOW_OK;

  while (self->enc && avcodec_receive_packet (self->enc, self->pkt) == 0) {
    if (ret == GST_FLOW_OK)
      ret = av1_push_packet (self, self->pkt);
    av_packet_unref (self->pkt);
  }
  return ret;
}

/* Drain the encoder and close it (the next re-encoding opens a new one). */
static GstFlowReturn
av1_close_encoder (RtAv1 * self)
{
  GstFlowReturn ret;

  if (!self->enc)
    return GST_FLOW_OK;
  avcodec_send_frame (self->enc, NULL);
  ret = av1_receive_packets (self);
  avcodec_free_context (&self->enc);
  return ret;
}

static GstFlowReturn
av1_encode (RtAv1 * self, AVFrame * frame)
{
  guint gen;
  guint64 target = av1_current_target (self, NULL, &gen), idx;
  GstFlowReturn ret = GST_FLOW_OK;

  /* no rate change on an open encoder: a new one from the next picture,
   * its key frame. At once for a new rate-control generation (a
   * congestion reaction, a new target) or a large move; a target the
   * input's measured rate moved by more than 5% waits for the source's
   * next key frame */
  if (self->enc && target > 0 && target != self->enc_bitrate &&
      (gen != self->enc_generation ||
          (frame->key_frame && (target > self->enc_bitrate * 1.05 ||
                  target * 1.05 < self->enc_bitrate)) ||
          target > self->enc_bitrate * RT_AV1_REOPEN ||
          target * RT_AV1_REOPEN < self->enc_bitrate)) {
    ret = av1_close_encoder (self);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  if (!self->enc && !av1_open_encoder (self, frame, target)) {
    GST_ELEMENT_WARNING (self->element, LIBRARY, INIT, (NULL),
        ("cannot open an AV1 encoder (libsvtav1 or libaom-av1) for %s "
            "pictures, passing through", av_get_pix_fmt_name (frame->format)
            ? av_get_pix_fmt_name (frame->format) : "these"));
    self->unsupported = TRUE;
    return GST_FLOW_OK;
  }
  self->enc_generation = gen;
  idx = self->enc_n++;
  self->ring[idx % RT_AV1_MAP_SIZE].pts = frame->pts;
  self->ring[idx % RT_AV1_MAP_SIZE].dur = frame->pkt_duration > 0 ?
      (GstClockTime) frame->pkt_duration :
      gst_rate_transcoder_frame_duration (self->element);
  frame->pts = idx;
  frame->pict_type = AV_PICTURE_TYPE_NONE;
  if (avcodec_send_frame (self->enc, frame) < 0)
    GST_WARNING_OBJECT (self->element, "encoder refused picture %"
        G_GUINT64_FORMAT, idx);
  return av1_receive_packets (self);
}

/* Pictures out of the decoder: those after what was passed go to the
 * encoder while re-encoding. */
static GstFlowReturn
av1_receive_frames (RtAv1 * self)
{
  GstFlowReturn ret = GST_FLOW_OK;
  AVFrame *frame = av_frame_alloc ();

  while (avcodec_receive_frame (self->dec, frame) == 0) {
    if (ret == GST_FLOW_OK && self->encoding && !self->unsupported &&
        frame->pts != AV_NOPTS_VALUE &&
        (!GST_CLOCK_TIME_IS_VALID (self->max_passed_pts) ||
            (GstClockTime) frame->pts > self->max_passed_pts))
      ret = av1_encode (self, frame);
    av_frame_unref (frame);
  }
  av_frame_free (&frame);
  return ret;
}

/* Empty the decoder (to be reused after, from a key frame) into the
 * encoder, and the encoder out. */
static GstFlowReturn
av1_drain_codecs (RtAv1 * self)
{
  GstFlowReturn ret = GST_FLOW_OK;

  if (self->dec) {
    avcodec_send_packet (self->dec, NULL);
    ret = av1_receive_frames (self);
    avcodec_flush_buffers (self->dec);
    self->dec_needs_sh = TRUE;
  }
  if (ret == GST_FLOW_OK)
    ret = av1_close_encoder (self);
  else
    avcodec_free_context (&self->enc);
  self->encoding = FALSE;
  return ret;
}

/* --- input ------------------------------------------------------------ */

static void
av1_account (RtAv1 * self, GstTwoflowPictureType type,
    const GstTwoflowRateControlDecision * d, gsize in_bytes, gsize out_bytes,
    GstClockTime dur)
{
  gst_rate_transcoder_account (self->element, type, d, in_bytes, 0,
      out_bytes, dur, TRUE, FALSE);
}

/* A source unit out; after the encoder's units the source's sequence
 * header goes in front if it has none. */
static GstFlowReturn
av1_pass (RtAv1 * self, GstBuffer * buf)
{
  if (self->last_out_encoded) {
    GstMapInfo map;
    GByteArray *sh = NULL;

    if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
      sh = av1_with_seq_header (self, self->seq_header, map.data, map.size);
      gst_buffer_unmap (buf, &map);
    }
    if (sh) {
      GstBuffer *out;
      gsize n = sh->len;

      out = gst_buffer_new_wrapped (g_byte_array_free (sh, FALSE), n);
      gst_buffer_copy_into (out, buf, GST_BUFFER_COPY_METADATA, 0, -1);
      gst_buffer_unref (buf);
      buf = out;
    }
  }
  if (GST_BUFFER_PTS_IS_VALID (buf) &&
      (!GST_CLOCK_TIME_IS_VALID (self->max_passed_pts) ||
          GST_BUFFER_PTS (buf) > self->max_passed_pts))
    self->max_passed_pts = GST_BUFFER_PTS (buf);
  self->last_out_encoded = FALSE;
  return av1_push_out (self, buf);
}

/* keep=none: passing the source's units or re-encoding them, switching at
 * any unit (to re-encoding) and at the source's key frames (back). */
static GstFlowReturn
av1_reencode (RtAv1 * self, GstBuffer * buf, GstMapInfo * map,
    const GstTwoflowPictureInfo * info, GstClockTime dur, guint64 now)
{
  GstTwoflowRateControl *rc;
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_PASS };
  GstFlowReturn ret = GST_FLOW_OK;
  gboolean reduce, pass, sent = FALSE;
  guint gen;

  rc = gst_rate_transcoder_lock_input (self->element, now);
  gen = gst_twoflow_rate_control_get_generation (rc);
  gst_twoflow_rate_control_handle_input (rc, info->type, map->size, dur, now);
  if (gst_twoflow_rate_control_get_generation (rc) != gen)
    gst_rate_transcoder_start_reaction_locked (self->element);
  gst_rate_transcoder_unlock (self->element);
  av1_current_target (self, &reduce, NULL);
  if (self->measured < RT_AV1_MEASURE_NS)
    reduce = reduce && self->encoding;
  self->measured += dur;

  if (!GST_BUFFER_PTS_IS_VALID (buf) && !self->unsupported) {
    GST_ELEMENT_WARNING (self->element, STREAM, FORMAT, (NULL),
        ("AV1 input without PTS cannot be re-encoded, passing through"));
    self->unsupported = TRUE;
  }
  if (self->unsupported) {
    reduce = FALSE;
    if (self->encoding) {
      self->encoding = FALSE;
      avcodec_free_context (&self->enc);
    }
  }
  if (!self->dec && !av1_open_decoder (self)) {
    gst_buffer_unmap (buf, map);
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self->element, LIBRARY, INIT, (NULL),
        ("cannot open an AV1 decoder (libdav1d or libaom-av1)"));
    return GST_FLOW_ERROR;
  }
  /* the decoder's format is known once it has seen a picture */
  if (self->dec->pix_fmt == AV_PIX_FMT_NONE) {
    av1_send_packet (self, buf, map->data, map->size, dur);
    sent = TRUE;
  }
  if (reduce && !self->encoding &&
      !av1_takes_format (avcodec_find_encoder_by_name ("libsvtav1"),
          self->dec->pix_fmt) &&
      !av1_takes_format (avcodec_find_encoder_by_name ("libaom-av1"),
          self->dec->pix_fmt)) {
    GST_ELEMENT_WARNING (self->element, STREAM, NOT_IMPLEMENTED, (NULL),
        ("no AV1 encoder takes %s pictures, passing through",
            av_get_pix_fmt_name (self->dec->pix_fmt) ?
            av_get_pix_fmt_name (self->dec->pix_fmt) : "these"));
    self->unsupported = TRUE;
    reduce = FALSE;
  }

  if (self->encoding && !reduce && info->idr) {
    /* back to the source's bits from its key frame: the encoder's units
     * before it leave first */
    ret = av1_drain_codecs (self);
    self->max_passed_pts = GST_CLOCK_TIME_NONE;
    GST_INFO_OBJECT (self->element,
        "no reduction needed: passing through from a key frame");
    pass = TRUE;
  } else if (!self->encoding && reduce) {
    /* no reordering between units: everything passed is a prefix, the
     * encoder takes over from this unit with a key frame */
    self->encoding = TRUE;
    GST_INFO_OBJECT (self->element, "re-encoding from this unit");
    pass = FALSE;
  } else {
    pass = !self->encoding;
  }

  if (pass) {
    d.generation = gen;
    d.budget_bits = map->size * 8.0;
    av1_account (self, info->type, &d, map->size, map->size, dur);
    gst_buffer_ref (buf);
    if (ret == GST_FLOW_OK)
      ret = av1_pass (self, buf);
    else
      gst_buffer_unref (buf);
  }
  if (!sent)
    av1_send_packet (self, buf, map->data, map->size, dur);
  gst_buffer_unmap (buf, map);
  gst_buffer_unref (buf);
  if (ret == GST_FLOW_OK)
    ret = av1_receive_frames (self);
  else
    av1_receive_frames (self);
  return ret;
}

static GstFlowReturn
av1_drop_or_pass (RtAv1 * self, GstBuffer * buf,
    const GstTwoflowPictureInfo * info, gsize size, GstClockTime dur,
    guint64 now)
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
  if (info->idr)
    self->tail_dropped = FALSE;

  rc = gst_rate_transcoder_lock_input (self->element, now);
  gst_twoflow_rate_control_handle_input_layer (rc, info->type, layer, size,
      dur, now);
  d = gst_twoflow_rate_control_handle_drop_candidate (rc, info->type, layer,
      size);
  gst_rate_transcoder_unlock (self->element);
  /* after a dropped tail, what may read a slot it wrote goes too */
  if (!kept && self->tail_dropped)
    d.action = GST_TWOFLOW_RATE_CONTROL_DROP;

  if (d.action == GST_TWOFLOW_RATE_CONTROL_DROP) {
    if (layer == GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL)
      self->tail_dropped = TRUE;
    GST_LOG_OBJECT (self->element, "dropping %s temporal unit of %"
        G_GSIZE_FORMAT " bytes (layer %d)", info->reference ? "a referenced"
        : "an unreferenced", size, layer);
    av1_account (self, info->type, &d, size, 0, dur);
    /* in its place an event: twoflowsplit numbers the units after it as
     * the essential flow's split does */
    gst_rate_transcoder_push_event (self->element,
        gst_twoflow_event_new_dropped (info->type, info->reference,
            GST_BUFFER_PTS (buf), GST_BUFFER_DTS (buf), dur));
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  av1_account (self, info->type, &d, size, size, dur);
  return av1_pass (self, buf);
}

static GstFlowReturn
av1_handle_frame (GstRateTranscoderCodecState * state, GstBuffer * buf,
    GstClockTime dur, guint64 now)
{
  RtAv1 *self = (RtAv1 *) state;
  GstTwoflowPictureInfo info;
  GstMapInfo map;
  GstFlowReturn ret = GST_FLOW_OK;
  gboolean picture;
  gsize size;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return av1_push_out (self, buf);
  picture = gst_twoflow_picture_parser_parse (self->picture_parser, map.data,
      map.size, &info);
  if (!picture || info.sequence_header)
    av1_remember_seq_header (self, &self->seq_header, map.data, map.size);
  if (picture) {
    gsize at, len;

    self->src_td = av1_find_obu (self, map.data, map.size,
        GST_AV1_OBU_TEMPORAL_DELIMITER, &at, &len) && at == 0;
  }
  if (!picture) {
    gst_buffer_unmap (buf, &map);
    GST_DEBUG_OBJECT (self->element, "unit without a frame, passed");
    return av1_push_out (self, buf);
  }
  if (info.idr) {
    if (self->seen_key)
      self->key_spacing = self->since_key;
    self->since_key = 0;
    self->seen_key = TRUE;
  }
  self->since_key++;

  if (gst_rate_transcoder_get_keep (self->element) ==
      GST_TWOFLOW_RATE_CONTROL_KEEP_NONE || (self->encoding && !info.idr))
    return av1_reencode (self, buf, &map, &info, dur, now);

  /* keep=i|ip: no codecs. Set while re-encoding, it applies from the
   * source's next key frame (the receiver's references are the encoder's
   * until then) */
  size = map.size;
  gst_buffer_unmap (buf, &map);
  if (self->encoding || self->dec) {
    ret = av1_drain_codecs (self);
    avcodec_free_context (&self->dec);
  }
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref (buf);
    return ret;
  }
  return av1_drop_or_pass (self, buf, &info, size, dur, now);
}

/* --- the ops table ---------------------------------------------------- */

static void
av1_reset (GstRateTranscoderCodecState * state)
{
  RtAv1 *self = (RtAv1 *) state;

  avcodec_free_context (&self->enc);
  avcodec_free_context (&self->dec);
  av_packet_free (&self->pkt);
  self->tail_dropped = FALSE;
  self->encoding = FALSE;
  self->unsupported = FALSE;
  self->last_out_encoded = FALSE;
  self->max_passed_pts = GST_CLOCK_TIME_NONE;
  self->last_dts_out = GST_CLOCK_TIME_NONE;
  self->enc_n = 0;
  self->since_key = 0;
  self->seen_key = FALSE;
  self->measured = 0;
}

static GstRateTranscoderCodecState *
av1_start (GstRateTranscoder * element)
{
  RtAv1 *self = g_new0 (RtAv1, 1);

  self->element = element;
  self->picture_parser = gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_AV1);
  self->obu_parser = gst_av1_parser_new ();
  av1_reset ((GstRateTranscoderCodecState *) self);
  return (GstRateTranscoderCodecState *) self;
}

static void
av1_stop (GstRateTranscoderCodecState * state)
{
  RtAv1 *self = (RtAv1 *) state;

  av1_reset (state);
  gst_twoflow_picture_parser_free (self->picture_parser);
  gst_av1_parser_free (self->obu_parser);
  g_clear_pointer (&self->seq_header, g_bytes_unref);
  g_clear_pointer (&self->enc_seq_header, g_bytes_unref);
  g_free (self);
}

/* the av1C record of codec_data (matroska, MP4) holds the sequence
 * header the first units may not repeat (ISO/IEC AV1-ISOBMFF 2.3: its
 * configOBUs from byte 4) */
static void
av1_set_caps (GstRateTranscoderCodecState * state, const GstStructure * s)
{
  RtAv1 *self = (RtAv1 *) state;
  const GValue *v = gst_structure_get_value (s, "codec_data");
  GstBuffer *cd = v && G_VALUE_HOLDS (v, GST_TYPE_BUFFER) ?
      gst_value_get_buffer (v) : NULL;
  GstMapInfo map;

  if (cd && gst_buffer_map (cd, &map, GST_MAP_READ)) {
    gst_twoflow_picture_parser_set_codec_data (self->picture_parser,
        map.data, map.size);
    if (map.size > 4 && (map.data[0] & 0x80))
      av1_remember_seq_header (self, &self->seq_header, map.data + 4,
          map.size - 4);
    gst_buffer_unmap (cd, &map);
  }
}

static GstFlowReturn
av1_drain (GstRateTranscoderCodecState * state)
{
  RtAv1 *self = (RtAv1 *) state;
  GstFlowReturn ret = av1_drain_codecs (self);

  avcodec_free_context (&self->dec);
  return ret;
}

const GstRateTranscoderCodec gst_rate_transcoder_codec_av1 = {
  .name = "av1",
  .caps = "video/x-av1, stream-format = (string) obu-stream, "
      "alignment = (string) tu",
  .latency_frames = RT_AV1_ENCODER_DELAY + RT_AV1_DECODER_DELAY,
  .start = av1_start,
  .stop = av1_stop,
  .set_caps = av1_set_caps,
  .handle_frame = av1_handle_frame,
  .drain = av1_drain,
  .reset = av1_reset,
};
