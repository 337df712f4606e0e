/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Picture types of coded MPEG-1/2, H.264 and H.265 pictures and AV1
 * temporal units, read with GStreamer's codecparsers library: the one
 * parser twoflowsplit and ratetranscoder share. Sans-IO: the bytes of one
 * parsed picture (as mpegvideoparse / h264parse / h265parse with
 * alignment=au / av1parse with alignment=tu output them) in, what it is
 * out. The parser keeps the parameter sets (H.264 SPS/PPS, H.265
 * VPS/SPS/PPS, the AV1 sequence header and reference slots) it has seen:
 * a slice or frame header needs them.
 *
 * Picture classes of the newer codecs (docs/frame-format.md): H.265: I =
 * an IRAP picture (IDR, CRA, BLA), P = any other picture later pictures
 * may predict from (whatever its slice types), B = a sub-layer
 * non-reference picture (_N) of the highest temporal sub-layer. AV1 (per
 * temporal unit): I = only intra frames (KEY_FRAME, INTRA_ONLY), P = a
 * frame in it refreshes a reference slot (refresh_frame_flags != 0), B =
 * no frame in it does (a show_existing_frame of a non-key frame, an
 * unreferenced frame).
 */
#ifndef __GST_TWOFLOW_PICTURE_TYPE_H__
#define __GST_TWOFLOW_PICTURE_TYPE_H__

#include <glib.h>
#include <gst/picturetype/picturetype-prelude.h>
#include <gst/twoflow/twoflowframe.h>

G_BEGIN_DECLS

typedef struct {
  /* the picture's type (H.264: of its most dependent slice); NONE when the
   * buffer holds no picture (or an MPEG-1 D picture) */
  GstTwoflowPictureType type;
  /* other pictures may predict from it (MPEG-1/2: I and P; H.264:
   * nal_ref_idc != 0) */
  gboolean reference;
  /* H.264, H.265: an IDR picture (H.265 also BLA); AV1: a key frame
   * refreshing every slot. No later picture predicts from before it. */
  gboolean idr;
  /* H.265: a leading picture (RASL, RADL: no trailing picture predicts
   * from it); open_gop: a RASL one, it may predict from before the last
   * IRAP */
  gboolean leading;
  gboolean open_gop;
  /* AV1: frames (temporal units parsed) back to the earliest one it
   * predicts from, from its reference slots; -1 when not known */
  gint depends_back;
  /* a sequence header (MPEG-1/2, AV1) or an SPS (H.264, H.265) precedes it */
  gboolean sequence_header;
  /* MPEG-1/2: a GOP header precedes it */
  gboolean gop_header;
  /* MPEG-1/2: its temporal_reference; -1 for H.264 */
  gint temporal_reference;
  /* MPEG-1/2: quantiser matrices (zigzag order) the buffer loads, by its
   * sequence header or a quant matrix extension (the later one wins) */
  gboolean load_intra_matrix;
  gboolean load_non_intra_matrix;
  guint8 intra_matrix[64];
  guint8 non_intra_matrix[64];
} GstTwoflowPictureInfo;

typedef struct _GstTwoflowPictureParser GstTwoflowPictureParser;

TWOFLOW_PICTURETYPE_API
GstTwoflowPictureParser *gst_twoflow_picture_parser_new (GstTwoflowCodec codec);
TWOFLOW_PICTURETYPE_API
void gst_twoflow_picture_parser_free (GstTwoflowPictureParser * parser);

/* H.264 stream-format=avc, H.265 hvc1/hev1: the avcC / hvcC decoder
 * configuration record (the caps' codec_data). Sets the NAL length size
 * and reads its parameter sets; from then on buffers are read as
 * length-prefixed NAL units. AV1: the av1C record, whose configOBUs (the
 * sequence header) are read. FALSE if the record is invalid (or the codec
 * has none). With @data NULL: byte-stream (start codes) again, the
 * default. */
TWOFLOW_PICTURETYPE_API
gboolean gst_twoflow_picture_parser_set_codec_data (GstTwoflowPictureParser *
    parser, const guint8 * data, gsize size);

/* Reads the picture in @data. Returns TRUE if it found one (@info->type is
 * not NONE). */
TWOFLOW_PICTURETYPE_API
gboolean gst_twoflow_picture_parser_parse (GstTwoflowPictureParser * parser,
    const guint8 * data, gsize size, GstTwoflowPictureInfo * info);

/* A picture left out before the parser (ratetranscoder drops disposable,
 * unreferenced ones): counts it, so AV1's depends_back stays in frame
 * numbers. */
TWOFLOW_PICTURETYPE_API
void gst_twoflow_picture_parser_skip (GstTwoflowPictureParser * parser);

G_END_DECLS

#endif /* __GST_TWOFLOW_PICTURE_TYPE_H__ */
