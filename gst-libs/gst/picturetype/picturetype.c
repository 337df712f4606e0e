/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Picture types of coded MPEG-1/2, H.264, H.265 and AV1 pictures
 * (sans-IO), on GStreamer's codecparsers: gst_mpeg_video_packet_parse_
 * picture_header(), the H.264 and H.265 slice header parsers, the AV1
 * frame header parser.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/codecparsers/gstmpegvideoparser.h>
#include <gst/codecparsers/gsth264parser.h>
#include <gst/codecparsers/gsth265parser.h>
#include <gst/codecparsers/gstav1parser.h>
#include "picturetype.h"

struct _GstTwoflowPictureParser
{
  GstTwoflowCodec codec;
  GstH264NalParser *h264;
  GstH265Parser *h265;
  GstAV1Parser *av1;
  gboolean avc;                 /* length-prefixed NAL units */
  guint nal_length_size;
  /* AV1: temporal units parsed, and the unit whose frame each reference
   * slot holds (-1: none yet) */
  gint64 av1_unit;
  gint64 av1_slot_unit[GST_AV1_NUM_REF_FRAMES];
};

GstTwoflowPictureParser *
gst_twoflow_picture_parser_new (GstTwoflowCodec codec)
{
  GstTwoflowPictureParser *p = g_new0 (GstTwoflowPictureParser, 1);

  p->codec = codec;
  if (codec == GST_TWOFLOW_CODEC_H264)
    p->h264 = gst_h264_nal_parser_new ();
  if (codec == GST_TWOFLOW_CODEC_H265)
    p->h265 = gst_h265_parser_new ();
  if (codec == GST_TWOFLOW_CODEC_AV1) {
    guint i;

    p->av1 = gst_av1_parser_new ();
    for (i = 0; i < GST_AV1_NUM_REF_FRAMES; i++)
      p->av1_slot_unit[i] = -1;
  }
  return p;
}

void
gst_twoflow_picture_parser_free (GstTwoflowPictureParser * p)
{
  if (!p)
    return;
  if (p->h264)
    gst_h264_nal_parser_free (p->h264);
  if (p->h265)
    gst_h265_parser_free (p->h265);
  if (p->av1)
    gst_av1_parser_free (p->av1);
  g_free (p);
}

/* hvcC (ISO/IEC 14496-15 8.3.3.1): 22 bytes of profile and format, the
 * NAL length size in the low bits of byte 21, then arrays of parameter
 * sets, each NAL unit behind a 16-bit length. 1.22's codecparsers have no
 * reader of the record itself, h265parse reads it the same way. */
static gboolean
set_codec_data_h265 (GstTwoflowPictureParser * p, const guint8 * data,
    gsize size)
{
  guint num_arrays, i, j, offset;

  if (!data) {
    p->avc = FALSE;
    return TRUE;
  }
  if (size < 23 || data[0] != 1)
    return FALSE;
  p->nal_length_size = (data[21] & 0x03) + 1;
  num_arrays = data[22];
  offset = 23;
  for (i = 0; i < num_arrays; i++) {
    guint num_nals;

    if (offset + 3 > size)
      return FALSE;
    num_nals = GST_READ_UINT16_BE (data + offset + 1);
    offset += 3;
    for (j = 0; j < num_nals; j++) {
      GstH265NalUnit nalu;

      if (gst_h265_parser_identify_nalu_hevc (p->h265, data, offset, size, 2,
              &nalu) != GST_H265_PARSER_OK)
        return FALSE;
      if (nalu.type >= GST_H265_NAL_VPS && nalu.type <= GST_H265_NAL_PPS)
        gst_h265_parser_parse_nal (p->h265, &nalu);
      offset = nalu.offset + nalu.size;
    }
  }
  p->avc = TRUE;
  return TRUE;
}

static void parse_av1_obus (GstTwoflowPictureParser * p, const guint8 * data,
    gsize size, GstTwoflowPictureInfo * info);

/* av1C (AV1 in ISOBMFF 2.3): 4 bytes of marker, version and format, then
 * configOBUs (the sequence header). Some demuxers give bare OBUs instead;
 * and key frames carry the sequence header in band anyway, so what does
 * not parse is left aside. */
static gboolean
set_codec_data_av1 (GstTwoflowPictureParser * p, const guint8 * data,
    gsize size)
{
  GstTwoflowPictureInfo info;

  if (!data)
    return TRUE;
  memset (&info, 0, sizeof (info));
  if (size >= 4 && data[0] == 0x81)
    parse_av1_obus (p, data + 4, size - 4, &info);
  else
    parse_av1_obus (p, data, size, &info);
  return TRUE;
}

gboolean
gst_twoflow_picture_parser_set_codec_data (GstTwoflowPictureParser * p,
    const guint8 * data, gsize size)
{
  GstH264DecoderConfigRecord *config = NULL;
  guint i;

  g_return_val_if_fail (p != NULL, FALSE);
  if (p->h265)
    return set_codec_data_h265 (p, data, size);
  if (p->av1)
    return set_codec_data_av1 (p, data, size);
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

/* H.265: the class of an access unit from its NAL unit types (IRAP, RASL,
 * sub-layer non-reference) and its slice headers. */
static gboolean
parse_h265 (GstTwoflowPictureParser * p, const guint8 * data, gsize size,
    GstTwoflowPictureInfo * info)
{
  GstH265NalUnit nalu;
  GstH265ParserResult res;
  gboolean vcl = FALSE, irap = FALSE, non_ref = TRUE;
  guint offset = 0;

  while (offset < size) {
    if (p->avc)
      res = gst_h265_parser_identify_nalu_hevc (p->h265, data, offset, size,
          p->nal_length_size, &nalu);
    else
      res = gst_h265_parser_identify_nalu (p->h265, data, offset, size, &nalu);
    if (res != GST_H265_PARSER_OK && res != GST_H265_PARSER_NO_NAL_END)
      break;

    if (nalu.type >= GST_H265_NAL_VPS && nalu.type <= GST_H265_NAL_PPS) {
      if (nalu.type != GST_H265_NAL_PPS)
        info->sequence_header = TRUE;
      gst_h265_parser_parse_nal (p->h265, &nalu);
    } else if (nalu.type <= GST_H265_NAL_SLICE_RASL_R
        || (nalu.type >= GST_H265_NAL_SLICE_BLA_W_LP
            && nalu.type <= GST_H265_NAL_SLICE_CRA_NUT)) {
      GstH265SliceHdr slice;
      /* _N types (even, below 16) are not referenced within their
       * sub-layer; only in the highest is nothing above to use them */
      gboolean sublayer_non_ref = nalu.type < 16 && (nalu.type & 1) == 0;

      memset (&slice, 0, sizeof (slice));
      vcl = TRUE;
      if (gst_h265_parser_parse_slice_hdr (p->h265, &nalu, &slice) ==
          GST_H265_PARSER_OK) {
        if (!slice.dependent_slice_segment_flag && slice.pps
            && slice.pps->sps) {
          guint8 highest = slice.pps->sps->max_sub_layers_minus1;

          if (!sublayer_non_ref || nalu.temporal_id_plus1 - 1 < highest)
            non_ref = FALSE;
        }
        gst_h265_slice_hdr_free (&slice);
      } else if (!sublayer_non_ref) {
        non_ref = FALSE;
      }
      irap |= GST_H265_IS_NAL_TYPE_IRAP (nalu.type);
      info->idr |= GST_H265_IS_NAL_TYPE_IDR (nalu.type)
          || GST_H265_IS_NAL_TYPE_BLA (nalu.type);
      info->leading |= GST_H265_IS_NAL_TYPE_RASL (nalu.type)
          || GST_H265_IS_NAL_TYPE_RADL (nalu.type);
      info->open_gop |= GST_H265_IS_NAL_TYPE_RASL (nalu.type);
    }
    offset = nalu.offset + nalu.size;
    if (res == GST_H265_PARSER_NO_NAL_END)
      break;
  }
  if (!vcl)
    return FALSE;
  if (irap) {
    info->type = GST_TWOFLOW_PICTURE_I;
    info->reference = TRUE;
  } else {
    info->reference = !non_ref;
    info->type = non_ref ? GST_TWOFLOW_PICTURE_B : GST_TWOFLOW_PICTURE_P;
  }
  return TRUE;
}

/* AV1: every OBU of a temporal unit (or the configOBUs of av1C). Frames
 * update the parser's reference state as a decoder's would; @info gets
 * the unit's class and the earliest unit its frames read a slot of. */
static void
parse_av1_obus (GstTwoflowPictureParser * p, const guint8 * data, gsize size,
    GstTwoflowPictureInfo * info)
{
  gsize offset = 0;
  gboolean frames = FALSE, intra = TRUE, reference = FALSE, all = FALSE;
  gint64 earliest = G_MAXINT64, unit = p->av1_unit;
  gboolean unknown_ref = FALSE;

  while (offset < size) {
    GstAV1OBU obu;
    GstAV1FrameOBU frame;
    GstAV1FrameHeaderOBU *fh = NULL;
    GstAV1ParserResult res;
    guint32 consumed = 0;
    guint i;

    res = gst_av1_parser_identify_one_obu (p->av1, data + offset,
        size - offset, &obu, &consumed);
    if (res == GST_AV1_PARSER_DROP) {
      offset += consumed;
      continue;
    }
    if (res != GST_AV1_PARSER_OK || consumed == 0)
      break;
    offset += consumed;

    switch (obu.obu_type) {
      case GST_AV1_OBU_SEQUENCE_HEADER:{
        GstAV1SequenceHeaderOBU seq;

        if (gst_av1_parser_parse_sequence_header_obu (p->av1, &obu, &seq) ==
            GST_AV1_PARSER_OK)
          info->sequence_header = TRUE;
        break;
      }
      case GST_AV1_OBU_TEMPORAL_DELIMITER:
        gst_av1_parser_parse_temporal_delimiter_obu (p->av1, &obu);
        break;
      case GST_AV1_OBU_FRAME_HEADER:
        if (gst_av1_parser_parse_frame_header_obu (p->av1, &obu,
                &frame.frame_header) == GST_AV1_PARSER_OK)
          fh = &frame.frame_header;
        break;
      case GST_AV1_OBU_FRAME:
        if (gst_av1_parser_parse_frame_obu (p->av1, &obu, &frame) ==
            GST_AV1_PARSER_OK)
          fh = &frame.frame_header;
        break;
      case GST_AV1_OBU_TILE_GROUP:{
        GstAV1TileGroupOBU tg;

        gst_av1_parser_parse_tile_group_obu (p->av1, &obu, &tg);
        break;
      }
      default:
        break;
    }
    if (!fh)
      continue;

    frames = TRUE;
    if (fh->show_existing_frame) {
      gint64 shown = p->av1_slot_unit[fh->frame_to_show_map_idx];

      intra = FALSE;
      if (shown < 0)
        unknown_ref = TRUE;
      else
        earliest = MIN (earliest, shown);
      /* showing a key frame loads it into every slot */
      if (fh->frame_type == GST_AV1_KEY_FRAME) {
        gst_av1_parser_reference_frame_update (p->av1, fh);
        reference = TRUE;
        for (i = 0; i < GST_AV1_NUM_REF_FRAMES; i++)
          p->av1_slot_unit[i] = shown;
      }
      continue;
    }
    if (fh->frame_type == GST_AV1_KEY_FRAME
        || fh->frame_type == GST_AV1_INTRA_ONLY_FRAME) {
      if (fh->frame_type == GST_AV1_KEY_FRAME && fh->show_frame
          && fh->refresh_frame_flags == 0xff)
        all = TRUE;
    } else {
      intra = FALSE;
      for (i = 0; i < GST_AV1_REFS_PER_FRAME; i++) {
        gint64 u = p->av1_slot_unit[fh->ref_frame_idx[i] & 7];

        if (u < 0)
          unknown_ref = TRUE;
        else
          earliest = MIN (earliest, u);
      }
    }
    if (fh->refresh_frame_flags)
      reference = TRUE;
    for (i = 0; i < GST_AV1_NUM_REF_FRAMES; i++)
      if (fh->refresh_frame_flags & (1 << i))
        p->av1_slot_unit[i] = unit;
    gst_av1_parser_reference_frame_update (p->av1, fh);
  }

  if (!frames)
    return;
  if (intra) {
    info->type = GST_TWOFLOW_PICTURE_I;
    info->idr = all;
    info->depends_back = 0;
  } else {
    info->type = reference ? GST_TWOFLOW_PICTURE_P : GST_TWOFLOW_PICTURE_B;
    info->depends_back = unknown_ref || earliest == G_MAXINT64 ? -1 :
        (gint) MIN (unit - earliest, G_MAXINT);
  }
  info->reference = reference;
}

static gboolean
parse_av1 (GstTwoflowPictureParser * p, const guint8 * data, gsize size,
    GstTwoflowPictureInfo * info)
{
  parse_av1_obus (p, data, size, info);
  if (info->type == GST_TWOFLOW_PICTURE_NONE)
    return FALSE;
  p->av1_unit++;
  return TRUE;
}

void
gst_twoflow_picture_parser_skip (GstTwoflowPictureParser * p)
{
  g_return_if_fail (p != NULL);
  p->av1_unit++;
}

gboolean
gst_twoflow_picture_parser_parse (GstTwoflowPictureParser * p,
    const guint8 * data, gsize size, GstTwoflowPictureInfo * info)
{
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (info != NULL, FALSE);

  memset (info, 0, sizeof (*info));
  info->temporal_reference = -1;
  info->depends_back = -1;
  if (!data || size == 0)
    return FALSE;
  switch (p->codec) {
    case GST_TWOFLOW_CODEC_MPEG1:
    case GST_TWOFLOW_CODEC_MPEG2:
      return parse_mpeg (data, size, info);
    case GST_TWOFLOW_CODEC_H264:
      return parse_h264 (p, data, size, info);
    case GST_TWOFLOW_CODEC_H265:
      return parse_h265 (p, data, size, info);
    case GST_TWOFLOW_CODEC_AV1:
      return parse_av1 (p, data, size, info);
    default:
      return FALSE;
  }
}
