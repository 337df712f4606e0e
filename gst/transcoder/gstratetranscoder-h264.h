/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder, H.264: the codec's state, shared by its two files
 * (gstratetranscoder-h264.c: keep=none re-encoding and keep=i|ip
 * dropping; gstratetranscoder-h264-keep.c: keep=i's re-encoding of the
 * non-essential pictures; gstratetranscoder-h264-disp.c: keep=ip's of the
 * disposable ones). Private to the H.264 codec, and to H.265
 * (gstratetranscoder-h265.c), which shares its byte-stream machinery:
 * the same passing, switching and dropping, another decoder and
 * encoder (libx265), no keep=i splice.
 */
#ifndef __GST_RATE_TRANSCODER_H264_H__
#define __GST_RATE_TRANSCODER_H264_H__

#include <libavcodec/avcodec.h>
#include <gst/picturetype/picturetype.h>
#include <gst/picturetype/h264splice.h>
#include "gstratetranscoder-codec.h"

G_BEGIN_DECLS

/* encoder picture number -> timestamps ring size; > any codec delay */
#define RT_MAP_SIZE 64

/* keep=i|ip: below this many bits per pixel and frame a re-encoding's
 * budget is under what x264 needs for skipped pictures at that size (the
 * codec's floor): pictures are dropped instead */
#define RT_H264_MIN_BPP 0.005

/* keep=ip: references a disposable picture may be coded against */
#define RT_H264_DISP_MAX_REFS 16

/* under the element's stream lock */
typedef struct
{
  GstRateTranscoder *element;
  gboolean hevc;                /* H.265 (gstratetranscoder-h265.c) */
  GstTwoflowPictureParser *picture_parser;
  AVCodecContext *dec;
  AVCodecContext *enc;
  AVPacket *pkt;

  gboolean h264_avc;            /* stream-format=avc (H.265: hvc1, hev1):
                                 * length prefixes */
  guint nal_length_size;        /* avc: bytes of a NAL length prefix */
  GBytes *dec_extradata;        /* avc: the avcC (hvcC) record for the
                                 * decoder */
  GBytes *param_sets;           /* the source's SPS/PPS as the output's
                                 * stream-format carries them */
  gboolean h264_encoding;       /* output comes from the encoder */
  gboolean h264_force_idr;      /* the next encoded picture is an IDR */
  gboolean h264_unsupported;    /* re-encoding impossible: pass through */
  gboolean h264_reconfig;       /* the encoder takes bitrate changes */
  GstClockTime max_passed_pts;  /* decoded pictures up to it were passed */
  GstClockTime max_in_pts;      /* H.265: the latest PTS of the input */
  GstClockTime last_dts_out;
  guint64 enc_n;                /* pictures given to this encoder */
  guint64 enc_bitrate;          /* bit rate configured on the encoder */
  guint enc_generation;         /* rate-control generation it codes under */
  gboolean tail_dropped;        /* a reference was dropped in this GOP */
  GstClockTime leading_before;  /* drop open-GOP leading pictures before */
  struct
  {
    GstClockTime pts, dur;
  } h264_ring[RT_MAP_SIZE];     /* by encoder picture number */

  /* keep=i: non-essential pictures re-encoded
   * (gstratetranscoder-h264-keep.c) */
  GstTwoflowH264Splice *splice;
  gboolean kr_unsupported;      /* cannot splice: dropping as before */
  gboolean kr_active;           /* re-encoding (else passing) */
  gboolean kr_intra;            /* the next re-encoded picture starts a run */
  gboolean kr_tail;             /* below the codec floor: dropping to the
                                 * next I */
  gboolean kr_prepend_ps;       /* the next essential picture takes the
                                 * source's SPS/PPS in front */
  guint kr_last_fn;             /* frame_num of the last reference out */
  GstClockTime kr_last_i_pts;   /* PTS of the last I in decode order */
  GQueue kr_pending;            /* RtKeepPic, decode order */
  GQueue kr_dts;                /* their DTS, given out in output order */
  GQueue kr_after_i;            /* leading pictures dropped after their I */
  AVCodecContext *kenc;
  guint64 kenc_n;
  guint64 kenc_bitrate;
  AVCodecContext *kdec;         /* decodes kenc's pictures: the receiver's */
  AVFrame *kr_recv;             /* the receiver's picture of the last
                                 * reference out (NULL: not known) */

  /* keep=ip: disposable pictures re-encoded
   * (gstratetranscoder-h264-disp.c) */
  gboolean ds_active;           /* decoding every picture since an IDR */
  gboolean ds_unsupported;      /* cannot splice: dropping as before */
  gboolean ds_no_encode;        /* re-encoding failed: dropping as before */
  GQueue ds_pending;            /* RtDispPic, decode order */
  GQueue ds_frames;             /* decoded pictures still needed */
  struct
  {
    GstClockTime pts;
    guint frame_num;
  } ds_refs[RT_H264_DISP_MAX_REFS];     /* short-term references the
                                         * receiver holds, decode order */
  guint ds_n_refs;
  gboolean ds_only_last;        /* long-term references in use: only the
                                 * last reference is known to be held */
  gboolean ds_prepend_ps;       /* the next IDR takes the source's SPS/PPS */
  gdouble ds_disp_share;        /* share of the pictures that are
                                 * disposable (moving average) */
  gdouble ds_model;             /* log2 (bits / source bits) + crf / 6 */
  gdouble ds_debt;              /* re-encoded bits - their budget */
  GstTwoflowH264Splice *ds_splice;
  AVCodecContext *denc;
  guint64 denc_n;
} RtH264;

/* gstratetranscoder-h264.c */
RtH264 *rt_h264_new (GstRateTranscoder * element, gboolean hevc);
void rt_h264_free (RtH264 * self);
void rt_h264_reset (RtH264 * self);
GstFlowReturn rt_h264_handle_frame (RtH264 * self, GstBuffer * buf,
    GstClockTime dur, guint64 now);
void rt_h264_set_encoder_rate (AVCodecContext * c, guint64 bitrate);
/* one NAL unit after a start code (@nls 0) or a @nls-byte length */
void rt_h264_append_nal (GByteArray * out, guint nls, const guint8 * nal,
    gsize len);
gboolean rt_h264_open_decoder (RtH264 * self);
guint rt_h264_generation (RtH264 * self);
guint64 rt_h264_current_target (RtH264 * self, gboolean * reduce);
void rt_h264_account (RtH264 * self, GstTwoflowPictureType type,
    const GstTwoflowRateControlDecision * d, gsize in_bytes, gsize out_bytes,
    GstClockTime dur);
GstFlowReturn rt_h264_push_out (RtH264 * self, GstBuffer * out);
GstFlowReturn rt_h264_pass (RtH264 * self, GstBuffer * buf,
    gboolean prepend_ps);
void rt_h264_send_packet (RtH264 * self, GstBuffer * buf, GstMapInfo * map,
    GstClockTime dur);
gboolean rt_h264_has_param_sets (RtH264 * self, const guint8 * d, gsize size);
GstFlowReturn rt_h264_drain (RtH264 * self);

/* gstratetranscoder-h265.c: opens libx265 at the current target for
 * pictures like @f (sets enc, enc_n, enc_bitrate, h264_force_idr) */
gboolean rt_h265_open_encoder (RtH264 * self, const AVFrame * f);
/* libx265 codes pictures of this format (4:2:0 to 4:4:4, 8 to 12 bits) */
gboolean rt_h265_takes_format (enum AVPixelFormat format);

/* gstratetranscoder-h264-keep.c */
/* keep=i: takes the frame when it re-encodes or passes it (returns TRUE,
 * the buffer then consumed and unmapped, @ret set) */
gboolean rt_h264_keep_handle_frame (RtH264 * self, GstBuffer * buf,
    GstMapInfo * map, const GstTwoflowPictureInfo * info, gsize size,
    GstClockTime dur, guint64 now, GstFlowReturn * ret);
GstFlowReturn rt_h264_keep_drain (RtH264 * self);
void rt_h264_keep_reset (RtH264 * self);

/* gstratetranscoder-h264-disp.c */
/* keep=ip: takes the frame when it decodes every picture to re-encode the
 * disposable ones (returns TRUE, the buffer then consumed and unmapped,
 * @ret set) */
gboolean rt_h264_disp_handle_frame (RtH264 * self, GstBuffer * buf,
    GstMapInfo * map, const GstTwoflowPictureInfo * info, gsize size,
    GstClockTime dur, guint64 now, GstFlowReturn * ret);
GstFlowReturn rt_h264_disp_drain (RtH264 * self);
/* A disposable picture @fd coded against @fr, the picture the receiver
 * holds for the reference @ref_fn, spliced with @splice as a picture
 * nothing references (@frame_num, @poc_lsb) to about @budget_bits; NULL
 * when it cannot be. Its quantizer in @q. */
/* *@splice, made (and given codec_data's SPS/PPS, for avc) if it is
 * not yet */
void rt_h264_splice_ensure (RtH264 * self, GstTwoflowH264Splice ** splice);
/* libx264 set up for pictures spliced into the source's sequence
 * (keep=i|ip): 8-bit 4:2:0 only, one picture in and one out, each
 * predicting from the one before only (the receiver's reference list
 * then holds the same picture first), IDR on request, the element's
 * preset (veryfast by default), @params more x264-params ("" none) in
 * *@opts. Rate control is the caller's; it opens it with
 * gst_rate_transcoder_open_encoder(). NULL when it cannot. */
AVCodecContext *rt_h264_splice_encoder (RtH264 * self, const AVFrame * f,
    GstTwoflowH264Splice * splice, const gchar * params, AVDictionary ** opts);
GByteArray *rt_h264_disp_code (RtH264 * self, GstTwoflowH264Splice * splice,
    const AVFrame * fd, const AVFrame * fr, gsize src_size,
    gdouble budget_bits, guint frame_num, guint poc_lsb, guint ref_fn,
    GstClockTime pts, gint * q);
void rt_h264_disp_reset (RtH264 * self);

G_END_DECLS

#endif
