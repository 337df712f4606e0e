/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Picture types of coded MPEG-1/2 and H.264 pictures (sans-IO), on
 * GStreamer's codecparsers: gst_mpeg_video_packet_parse_picture_header()
 * and the H.264 slice header parser.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/codecparsers/gstmpegvideoparser.h>
#include <gst/codecparsers/gsth264parser.h>
#include "picturetype.h"

struct _GstTwoflowPictureParser
{
  GstTwoflowCodec codec;
  GstH264NalParser *h264;
  gboolean avc;                 /* length-prefixed NAL units */
  guint nal_length_size;
};

GstTwoflowPictureParser *
gst_twoflow_picture_parser_new (GstTwoflowCodec codec)
{
  GstTwoflowPictureParser *p = g_new0 (GstTwoflowPictureParser, 1);

  p->codec = codec;
  if (codec == GST_TWOFLOW_CODEC_H264)
    p->h264 = gst_h264_nal_parser_new ();
  return p;
}

void
gst_twoflow_picture_parser_free (GstTwoflowPictureParser * p)
{
  if (!p)
    return;
  if (p->h264)
    gst_h264_nal_parser_free (p->h264);
  g_free (p);
}

gboolean
gst_twoflow_picture_parser_set_codec_data (GstTwoflowPictureParser * p,
    const guint8 * data, gsize size)
{
  GstH264DecoderConfigRecord *config = NULL;
  guint i;

  g_return_val_if_fail (p != NULL, FALSE);
  if (!p->h264)
    return FALSE;
  if (!data) {
    p->avc = FALSE;
    return TRUE;
  }
  if (gst_h264_parser_parse_decoder_config_record (p->h264, data, size,
          &config) != GST_H264_PARSER_OK)
    return FALSE;
  p->avc = TRUE;
  p->nal_length_size = config->length_size_minus_one + 1;
  for (i = 0; i < config->sps->len; i++)
    gst_h264_parser_parse_nal (p->h264,
        &g_array_index (config->sps, GstH264NalUnit, i));
  for (i = 0; i < config->pps->len; i++)
    gst_h264_parser_parse_nal (p->h264,
        &g_array_index (config->pps, GstH264NalUnit, i));
  gst_h264_decoder_config_record_free (config);
  return TRUE;
}

static void
load_matrices (GstTwoflowPictureInfo * info, gboolean load_intra,
    const guint8 * intra, gboolean load_non_intra, const guint8 * non_intra)
{
  if (load_intra) {
    memcpy (info->intra_matrix, intra, 64);
    info->load_intra_matrix = TRUE;
  }
  if (load_non_intra) {
    memcpy (info->non_intra_matrix, non_intra, 64);
    info->load_non_intra_matrix = TRUE;
  }
}

/* MPEG-1/2: the headers up to the first slice (a quant matrix extension
 * may follow the picture coding extension); the first picture header
 * gives the type. */
static gboolean
parse_mpeg (const guint8 * data, gsize size, GstTwoflowPictureInfo * info)
{
  GstMpegVideoPacket packet;
  guint offset = 0;
  gboolean picture = FALSE;

  while (offset + 4 <= size &&
      gst_mpeg_video_parse (&packet, data, size, offset)) {
    offset = packet.offset;
    if (packet.size < 0)
      packet.size = size - packet.offset;
    if (packet.type >= GST_MPEG_VIDEO_PACKET_SLICE_MIN &&
        packet.type <= GST_MPEG_VIDEO_PACKET_SLICE_MAX && picture)
      break;
    switch (packet.type) {
      case GST_MPEG_VIDEO_PACKET_SEQUENCE:{
        GstMpegVideoSequenceHdr seq;

        if (gst_mpeg_video_packet_parse_sequence_header (&packet, &seq)) {
          info->sequence_header = TRUE;
          load_matrices (info, seq.load_intra_quantiser_matrix,
              seq.intra_quantizer_matrix, seq.load_non_intra_quantiser_matrix,
              seq.non_intra_quantizer_matrix);
        }
        break;
      }
      case GST_MPEG_VIDEO_PACKET_EXTENSION:{
        GstMpegVideoQuantMatrixExt qm;

        if (packet.size >= 1 && (packet.data[packet.offset] >> 4) ==
            GST_MPEG_VIDEO_PACKET_EXT_QUANT_MATRIX &&
            gst_mpeg_video_packet_parse_quant_matrix_extension (&packet, &qm))
          load_matrices (info, qm.load_intra_quantiser_matrix,
              qm.intra_quantiser_matrix, qm.load_non_intra_quantiser_matrix,
              qm.non_intra_quantiser_matrix);
        break;
      }
      case GST_MPEG_VIDEO_PACKET_GOP:
        if (!picture)
          info->gop_header = TRUE;
        break;
      case GST_MPEG_VIDEO_PACKET_PICTURE:{
        GstMpegVideoPictureHdr hdr;

        if (picture)
          return TRUE;          /* a second picture: not ours */
        picture = TRUE;
        if (!gst_mpeg_video_packet_parse_picture_header (&packet, &hdr))
          return FALSE;
        info->temporal_reference = hdr.tsn;
        switch (hdr.pic_type) {
          case GST_MPEG_VIDEO_PICTURE_TYPE_I:
            info->type = GST_TWOFLOW_PICTURE_I;
            info->reference = TRUE;
            break;
          case GST_MPEG_VIDEO_PICTURE_TYPE_P:
            info->type = GST_TWOFLOW_PICTURE_P;
            info->reference = TRUE;
            break;
          case GST_MPEG_VIDEO_PICTURE_TYPE_B:
            info->type = GST_TWOFLOW_PICTURE_B; /* never a reference */
            break;
          default:             /* D pictures: not handled */
            return FALSE;
        }
        break;
      }
      default:
        break;
    }
  }
  return info->type != GST_TWOFLOW_PICTURE_NONE;
}

static GstTwoflowPictureType
h264_slice_picture_type (const GstH264SliceHdr * slice)
{
  if (GST_H264_IS_B_SLICE (slice))
    return GST_TWOFLOW_PICTURE_B;
  if (GST_H264_IS_P_SLICE (slice) || GST_H264_IS_SP_SLICE (slice))
    return GST_TWOFLOW_PICTURE_P;
  return GST_TWOFLOW_PICTURE_I;
}

/* H.264: a picture's type is that of its most dependent slice (I < P < B
 * in GstTwoflowPictureType's order). */
static gboolean
parse_h264 (GstTwoflowPictureParser * p, const guint8 * data, gsize size,
    GstTwoflowPictureInfo * info)
{
  GstH264NalUnit nalu;
  GstH264ParserResult res;
  guint offset = 0;

  while (offset < size) {
    if (p->avc)
      res = gst_h264_parser_identify_nalu_avc (p->h264, data, offset, size,
          p->nal_length_size, &nalu);
    else
      res = gst_h264_parser_identify_nalu (p->h264, data, offset, size, &nalu);
    if (res != GST_H264_PARSER_OK && res != GST_H264_PARSER_NO_NAL_END)
      break;

    switch (nalu.type) {
      case GST_H264_NAL_SPS:
        info->sequence_header = TRUE;
        /* fall through */
      case GST_H264_NAL_PPS:
        gst_h264_parser_parse_nal (p->h264, &nalu);
        break;
      case GST_H264_NAL_SLICE:
      case GST_H264_NAL_SLICE_IDR:{
        GstH264SliceHdr slice;

        if (gst_h264_parser_parse_slice_hdr (p->h264, &nalu, &slice, FALSE,
                FALSE) == GST_H264_PARSER_OK)
          info->type = MAX (info->type, h264_slice_picture_type (&slice));
        info->reference |= nalu.ref_idc != 0;
        info->idr |= nalu.type == GST_H264_NAL_SLICE_IDR;
        break;
      }
      default:
        break;
    }
    offset = nalu.offset + nalu.size;
    if (res == GST_H264_PARSER_NO_NAL_END)
      break;
  }
  return info->type != GST_TWOFLOW_PICTURE_NONE;
}

gboolean
gst_twoflow_picture_parser_parse (GstTwoflowPictureParser * p,
    const guint8 * data, gsize size, GstTwoflowPictureInfo * info)
{
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (info != NULL, FALSE);

  memset (info, 0, sizeof (*info));
  info->temporal_reference = -1;
  if (!data || size == 0)
    return FALSE;
  switch (p->codec) {
    case GST_TWOFLOW_CODEC_MPEG1:
    case GST_TWOFLOW_CODEC_MPEG2:
      return parse_mpeg (data, size, info);
    case GST_TWOFLOW_CODEC_H264:
      return parse_h264 (p, data, size, info);
    default:
      return FALSE;
  }
}
