/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Picture types of coded MPEG-1/2 and H.264 pictures, read with
 * GStreamer's codecparsers library: the one parser twoflowsplit and
 * ratetranscoder share. Sans-IO: the bytes of one parsed picture (as
 * mpegvideoparse / h264parse output them) in, what it is out. The parser
 * keeps the H.264 SPS/PPS it has seen (a slice header needs them).
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
  /* H.264: an IDR picture */
  gboolean idr;
  /* a sequence header (MPEG-1/2) or an SPS (H.264) precedes it */
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

/* H.264 stream-format=avc: the avcC decoder configuration record (the
 * caps' codec_data). Sets the NAL length size and reads its SPS and PPS;
 * from then on buffers are read as length-prefixed NAL units. FALSE if
 * the record is invalid (or the codec is not H.264). With @data NULL:
 * byte-stream (start codes) again, the default. */
TWOFLOW_PICTURETYPE_API
gboolean gst_twoflow_picture_parser_set_codec_data (GstTwoflowPictureParser *
    parser, const guint8 * data, gsize size);

/* Reads the picture in @data. Returns TRUE if it found one (@info->type is
 * not NONE). */
TWOFLOW_PICTURETYPE_API
gboolean gst_twoflow_picture_parser_parse (GstTwoflowPictureParser * parser,
    const guint8 * data, gsize size, GstTwoflowPictureInfo * info);

G_END_DECLS

#endif /* __GST_TWOFLOW_PICTURE_TYPE_H__ */
