/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder, H.264 keep=i|ip: an encoder's pictures spliced into the
 * source's coded video sequence.
 *
 * The source's essential pictures leave byte-identical, so the re-encoded
 * ones must decode under the source's SPS: each encoder slice is written
 * again with the source's frame_num and POC fields (their widths are the
 * source SPS's), as a non-IDR reference picture (or one nothing
 * references, nal_ref_idc 0, its one reference named by a list
 * modification: keep=i|ip's disposable pictures), under a PPS of its own
 * (the encoder's PPS with a free id pointing at the source's SPS; a PPS may
 * change per picture, the SPS only at an IDR). The rest of the slice (the
 * macroblock layer) depends only on what both SPS share (size, 4:2:0 8-bit,
 * frame coding, flat scaling) and on the encoder's PPS, and is copied.
 * Each rewritten header is checked first: the encoder's own header written
 * by the same code must equal its bits, or the access unit is refused.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/base/gstbitreader.h>
#include <gst/base/gstbitwriter.h>
#include <gst/codecparsers/gsth264parser.h>
#include "h264splice.h"

struct _GstTwoflowH264Splice
{
  GstH264NalParser *src;        /* the source's parameter sets */
  GstH264NalParser *enc;        /* the encoder's */
  gboolean pps_used[GST_H264_MAX_PPS_COUNT];
  const gchar *why;             /* the source cannot take spliced pictures */

  /* the source's active SPS */
  gboolean have_sps;
  guint sps_id;
  guint log2_max_frame_num;
  guint poc_type;
  guint log2_max_poc_lsb;
  guint width_mbs, height_mbs;
  guint profile_idc;

  /* the PPS written in front of every spliced picture */
  gint pps_id;                  /* -1: none yet */
  GByteArray *pps_rbsp;         /* without the NAL header byte */
  gboolean enc_cabac;
  gboolean enc_bottom_present;
  gboolean enc_deblock_present;
};

GstTwoflowH264Splice *
gst_twoflow_h264_splice_new (void)
{
  GstTwoflowH264Splice *sp = g_new0 (GstTwoflowH264Splice, 1);

  sp->src = gst_h264_nal_parser_new ();
  sp->enc = gst_h264_nal_parser_new ();
  sp->pps_id = -1;
  return sp;
}

void
gst_twoflow_h264_splice_free (GstTwoflowH264Splice * sp)
{
  if (!sp)
    return;
  gst_h264_nal_parser_free (sp->src);
  gst_h264_nal_parser_free (sp->enc);
  if (sp->pps_rbsp)
    g_byte_array_unref (sp->pps_rbsp);
  g_free (sp);
}

/* --- bits ------------------------------------------------------------- */

static GByteArray *
unescape (const guint8 * d, gsize n)
{
  GByteArray *out = g_byte_array_sized_new (n);
  guint zeros = 0;
  gsize i;

  for (i = 0; i < n; i++) {
    if (zeros >= 2 && d[i] == 3) {
      zeros = 0;
      continue;
    }
    g_byte_array_append (out, d + i, 1);
    zeros = d[i] == 0 ? zeros + 1 : 0;
  }
  return out;
}

/* NAL header byte + escaped RBSP, with a length prefix or a start code */
static void
append_nal (GByteArray * out, guint nls, guint8 header, const guint8 * rbsp,
    gsize n)
{
  static const guint8 sc[4] = { 0, 0, 0, 1 };
  GByteArray *nal = g_byte_array_sized_new (n + n / 64 + 2);
  static const guint8 epb = 3;
  guint zeros = 0;
  gsize i;
  guint k;

  g_byte_array_append (nal, &header, 1);
  for (i = 0; i < n; i++) {
    if (zeros >= 2 && rbsp[i] <= 3) {
      g_byte_array_append (nal, &epb, 1);
      zeros = 0;
    }
    g_byte_array_append (nal, rbsp + i, 1);
    zeros = rbsp[i] == 0 ? zeros + 1 : 0;
  }
  if (zeros > 0)
    g_byte_array_append (nal, &epb, 1);
  if (nls == 0) {
    g_byte_array_append (out, sc, 4);
  } else {
    guint8 pre[4];

    for (k = 0; k < nls; k++)
      pre[k] = (nal->len >> (8 * (nls - 1 - k))) & 0xff;
    g_byte_array_append (out, pre, nls);
  }
  g_byte_array_append (out, nal->data, nal->len);
  g_byte_array_unref (nal);
}

static gboolean
read_ue (GstBitReader * br, guint * v)
{
  guint zeros = 0;
  guint8 bit = 0;
  guint32 rest = 0;

  while (gst_bit_reader_get_bits_uint8 (br, &bit, 1) && bit == 0)
    if (++zeros > 31)
      return FALSE;
  if (bit != 1)
    return FALSE;
  if (zeros > 0 && !gst_bit_reader_get_bits_uint32 (br, &rest, zeros))
    return FALSE;
  *v = (1u << zeros) - 1 + rest;
  return TRUE;
}

static void
put_ue (GstBitWriter * bw, guint v)
{
  guint64 code = (guint64) v + 1;
  guint len = g_bit_storage (code);

  if (len > 1)
    gst_bit_writer_put_bits_uint32 (bw, 0, len - 1);
  gst_bit_writer_put_bits_uint64 (bw, code, len);
}

static void
put_se (GstBitWriter * bw, gint v)
{
  put_ue (bw, v > 0 ? 2 * (guint) v - 1 : 2 * (guint) (-v));
}

/* Copies bits [@from, @to) of @src to @bw. */
static void
copy_bits (GstBitWriter * bw, const guint8 * src, gsize from, gsize to)
{
  GstBitReader br;
  guint32 v = 0;

  gst_bit_reader_init (&br, src, (to + 7) / 8);
  gst_bit_reader_skip (&br, from);
  while (to - from >= 32) {
    gst_bit_reader_get_bits_uint32 (&br, &v, 32);
    gst_bit_writer_put_bits_uint32 (bw, v, 32);
    from += 32;
  }
  if (to > from) {
    gst_bit_reader_get_bits_uint32 (&br, &v, to - from);
    gst_bit_writer_put_bits_uint32 (bw, v, to - from);
  }
}

/* the bit after the last payload bit: the rbsp_stop_one_bit's position */
static gsize
stop_bit (const guint8 * d, gsize n)
{
  while (n > 0 && d[n - 1] == 0)
    n--;
  if (n == 0)
    return 0;
  return n * 8 - 1 - g_bit_nth_lsf (d[n - 1], -1);
}

static void
finish_rbsp (GstBitWriter * bw)
{
  gst_bit_writer_put_bits_uint8 (bw, 1, 1);
  gst_bit_writer_align_bytes (bw, 0);
}

/* --- source ----------------------------------------------------------- */

static void
take_sps (GstTwoflowH264Splice * sp, const GstH264SPS * sps)
{
  if (!sps->frame_mbs_only_flag)
    sp->why = "interlaced (field or MBAFF) coding";
  else if (sps->chroma_format_idc != 1 || sps->separate_colour_plane_flag)
    sp->why = "not 4:2:0";
  else if (sps->bit_depth_luma_minus8 || sps->bit_depth_chroma_minus8)
    sp->why = "not 8-bit";
  else if (sps->scaling_matrix_present_flag)
    sp->why = "scaling matrices in the SPS";
  else if (sps->pic_order_cnt_type == 1)
    sp->why = "pic_order_cnt_type 1";
  sp->have_sps = TRUE;
  sp->sps_id = sps->id;
  sp->log2_max_frame_num = sps->log2_max_frame_num_minus4 + 4;
  sp->poc_type = sps->pic_order_cnt_type;
  sp->log2_max_poc_lsb = sps->log2_max_pic_order_cnt_lsb_minus4 + 4;
  sp->width_mbs = sps->pic_width_in_mbs_minus1 + 1;
  sp->height_mbs = sps->pic_height_in_map_units_minus1 + 1;
  sp->profile_idc = sps->profile_idc;
}

gboolean
gst_twoflow_h264_splice_parse_source (GstTwoflowH264Splice * sp, const guint8 * d, gsize size,
    guint nls, GstTwoflowH264SourcePicture * pic, const gchar ** why)
{
  GstH264NalUnit nalu;
  GstH264ParserResult res;
  guint offset = 0;
  gboolean found = FALSE;

  while (offset < size) {
    if (nls > 0)
      res = gst_h264_parser_identify_nalu_avc (sp->src, d, offset, size, nls,
          &nalu);
    else
      res = gst_h264_parser_identify_nalu (sp->src, d, offset, size, &nalu);
    if (res != GST_H264_PARSER_OK && res != GST_H264_PARSER_NO_NAL_END)
      break;
    if (nalu.type == GST_H264_NAL_SPS) {
      GstH264SPS sps;

      if (gst_h264_parser_parse_sps (sp->src, &nalu, &sps) ==
          GST_H264_PARSER_OK)
        gst_h264_sps_clear (&sps);
    } else if (nalu.type == GST_H264_NAL_PPS) {
      GstH264PPS pps;

      if (gst_h264_parser_parse_pps (sp->src, &nalu, &pps) ==
          GST_H264_PARSER_OK) {
        sp->pps_used[pps.id] = TRUE;
        /* the source took the id of ours: choose another */
        if ((gint) pps.id == sp->pps_id)
          sp->pps_id = -1;
        gst_h264_pps_clear (&pps);
      }
    } else if (!found && (nalu.type == GST_H264_NAL_SLICE ||
            nalu.type == GST_H264_NAL_SLICE_IDR)) {
      GstH264SliceHdr sh;

      if (gst_h264_parser_parse_slice_hdr (sp->src, &nalu, &sh, FALSE,
              TRUE) == GST_H264_PARSER_OK) {
        const GstH264DecRefPicMarking *m = &sh.dec_ref_pic_marking;
        guint k;

        found = TRUE;
        if (!sp->have_sps || sp->sps_id != (guint) sh.pps->sequence->id ||
            nalu.type == GST_H264_NAL_SLICE_IDR)
          take_sps (sp, sh.pps->sequence);
        pic->idr = nalu.type == GST_H264_NAL_SLICE_IDR;
        pic->nal_ref_idc = nalu.ref_idc;
        pic->frame_num = sh.frame_num;
        pic->poc_lsb = sh.pic_order_cnt_lsb;
        /* a reference that stays short-term under its own frame_num: not
         * long-term (IDR flag, MMCO 6), no MMCO 5 (frame_num reset) */
        pic->short_term = nalu.ref_idc != 0 &&
            !(pic->idr && m->long_term_reference_flag);
        pic->marks_unused = FALSE;
        pic->marks_long_term = pic->idr && m->long_term_reference_flag;
        if (nalu.ref_idc != 0 && !pic->idr &&
            m->adaptive_ref_pic_marking_mode_flag) {
          for (k = 0; k < m->n_ref_pic_marking; k++) {
            guint op = m->ref_pic_marking[k].memory_management_control_operation;

            if (op == 5 || op == 6)
              pic->short_term = FALSE;
            if (op == 1)
              pic->marks_unused = TRUE;
            else if (op != 5)
              pic->marks_long_term = TRUE;
          }
        }
        pic->num_ref_frames =
            sh.pps->sequence->gaps_in_frame_num_value_allowed_flag ? 1 :
            MAX (sh.pps->sequence->num_ref_frames, 1);
      }
    }
    offset = nalu.offset + nalu.size;
    if (res == GST_H264_PARSER_NO_NAL_END)
      break;
  }
  if (why)
    *why = sp->why;
  return found;
}

guint
gst_twoflow_h264_splice_log2_max_frame_num (GstTwoflowH264Splice * sp)
{
  return sp->have_sps ? sp->log2_max_frame_num : 0;
}

const gchar *
gst_twoflow_h264_splice_x264_params (GstTwoflowH264Splice * sp)
{
  /* Baseline: CAVLC; Main/Extended: no 8x8 transform */
  if (sp->profile_idc == 66)
    return "cabac=0:8x8dct=0";
  if (sp->profile_idc == 77 || sp->profile_idc == 88)
    return "8x8dct=0";
  return "";
}

/* --- encoder ---------------------------------------------------------- */

/* The encoder's PPS with our id and the source's SPS id. */
static gboolean
take_pps (GstTwoflowH264Splice * sp, const GstH264NalUnit * nalu)
{
  GstH264PPS pps;
  GByteArray *rbsp;
  GstBitReader br;
  GstBitWriter bw;
  guint id, sps_id;
  gsize end;
  gint i;

  if (gst_h264_parser_parse_pps (sp->enc, (GstH264NalUnit *) nalu, &pps) !=
      GST_H264_PARSER_OK)
    return FALSE;
  if (pps.weighted_pred_flag || pps.num_slice_groups_minus1 > 0 ||
      pps.pic_scaling_matrix_present_flag || pps.redundant_pic_cnt_present_flag) {
    gst_h264_pps_clear (&pps);
    return FALSE;
  }
  sp->enc_cabac = pps.entropy_coding_mode_flag;
  sp->enc_bottom_present = pps.pic_order_present_flag;
  sp->enc_deblock_present = pps.deblocking_filter_control_present_flag;
  gst_h264_pps_clear (&pps);

  if (sp->pps_id < 0) {
    for (i = 0; i < GST_H264_MAX_PPS_COUNT && sp->pps_used[i]; i++);
    if (i == GST_H264_MAX_PPS_COUNT)
      return FALSE;
    sp->pps_id = i;
  }
  rbsp = unescape (nalu->data + nalu->offset + 1, nalu->size - 1);
  gst_bit_reader_init (&br, rbsp->data, rbsp->len);
  end = stop_bit (rbsp->data, rbsp->len);
  if (!read_ue (&br, &id) || !read_ue (&br, &sps_id) ||
      gst_bit_reader_get_pos (&br) > end) {
    g_byte_array_unref (rbsp);
    return FALSE;
  }
  gst_bit_writer_init (&bw);
  put_ue (&bw, sp->pps_id);
  put_ue (&bw, sp->sps_id);
  copy_bits (&bw, rbsp->data, gst_bit_reader_get_pos (&br), end);
  finish_rbsp (&bw);
  g_byte_array_unref (rbsp);
  if (sp->pps_rbsp)
    g_byte_array_unref (sp->pps_rbsp);
  sp->pps_rbsp = g_byte_array_new ();
  g_byte_array_append (sp->pps_rbsp, gst_bit_writer_get_data (&bw),
      gst_bit_writer_get_size (&bw) / 8);
  gst_bit_writer_reset (&bw);
  return TRUE;
}

typedef struct
{
  gboolean idr;
  guint nal_ref_idc;
  guint pps_id;
  guint frame_num, frame_num_bits;
  guint poc_type, poc_lsb, poc_bits;
  gboolean force_one_ref;       /* num_ref_idx_l0_active_minus1 = 0,
                                 * explicitly */
  gint ref_diff_minus1;         /* >= 0: RefPicList0[0] is the short-term
                                 * picture CurrPicNum - (this + 1) */
} HeaderFields;

/* slice_header() of a P or I slice as the encoder writes them (no
 * reordering, weighting or memory management commands) */
static void
write_header (GstTwoflowH264Splice * sp, GstBitWriter * bw, const GstH264SliceHdr * sh,
    const HeaderFields * f)
{
  put_ue (bw, sh->first_mb_in_slice);
  put_ue (bw, sh->type);
  put_ue (bw, f->pps_id);
  gst_bit_writer_put_bits_uint32 (bw, f->frame_num, f->frame_num_bits);
  if (f->idr)
    put_ue (bw, sh->idr_pic_id);
  if (f->poc_type == 0) {
    gst_bit_writer_put_bits_uint32 (bw, f->poc_lsb, f->poc_bits);
    if (sp->enc_bottom_present)
      put_se (bw, sh->delta_pic_order_cnt_bottom);
  }
  if (GST_H264_IS_P_SLICE (sh)) {
    if (f->force_one_ref) {
      gst_bit_writer_put_bits_uint8 (bw, 1, 1);
      put_ue (bw, 0);
    } else {
      gst_bit_writer_put_bits_uint8 (bw, sh->num_ref_idx_active_override_flag,
          1);
      if (sh->num_ref_idx_active_override_flag)
        put_ue (bw, sh->num_ref_idx_l0_active_minus1);
    }
    if (f->ref_diff_minus1 >= 0) {
      /* ref_pic_list_modification_flag_l0, then
       * modification_of_pic_nums_idc 0 (subtract) and 3 (end) */
      gst_bit_writer_put_bits_uint8 (bw, 1, 1);
      put_ue (bw, 0);
      put_ue (bw, f->ref_diff_minus1);
      put_ue (bw, 3);
    } else {
      gst_bit_writer_put_bits_uint8 (bw, 0, 1); /* no list modification */
    }
  }
  if (f->nal_ref_idc) {
    if (f->idr) {
      gst_bit_writer_put_bits_uint8 (bw,
          sh->dec_ref_pic_marking.no_output_of_prior_pics_flag, 1);
      gst_bit_writer_put_bits_uint8 (bw,
          sh->dec_ref_pic_marking.long_term_reference_flag, 1);
    } else {
      gst_bit_writer_put_bits_uint8 (bw, 0, 1); /* sliding window */
    }
  }
  if (sp->enc_cabac && !GST_H264_IS_I_SLICE (sh))
    put_ue (bw, sh->cabac_init_idc);
  put_se (bw, sh->slice_qp_delta);
  if (sp->enc_deblock_present) {
    put_ue (bw, sh->disable_deblocking_filter_idc);
    if (sh->disable_deblocking_filter_idc != 1) {
      put_se (bw, sh->slice_alpha_c0_offset_div2);
      put_se (bw, sh->slice_beta_offset_div2);
    }
  }
}

static gboolean
bits_equal (const guint8 * a, const guint8 * b, gsize nbits)
{
  gsize bytes = nbits / 8;
  guint rest = nbits % 8;

  if (memcmp (a, b, bytes) != 0)
    return FALSE;
  return rest == 0 || ((a[bytes] ^ b[bytes]) >> (8 - rest)) == 0;
}

/* where a spliced picture goes in the source's sequence */
typedef struct
{
  guint frame_num, poc_lsb;
  gboolean nonref;              /* nal_ref_idc 0 */
  gint ref_frame_num;           /* >= 0: the one reference, by frame_num */
} Target;

static gboolean
rewrite_slice (GstTwoflowH264Splice * sp, GstH264NalUnit * nalu,
    const Target * t, guint nls, GByteArray * out)
{
  GstH264SliceHdr sh;
  GstH264SPS *esps;
  GstBitWriter orig, bw;
  HeaderFields f;
  GByteArray *rbsp;
  gsize hbits;
  gboolean ok = FALSE;

  if (gst_h264_parser_parse_slice_hdr (sp->enc, nalu, &sh, FALSE, FALSE) !=
      GST_H264_PARSER_OK)
    return FALSE;
  esps = sh.pps->sequence;
  if (!(GST_H264_IS_P_SLICE (&sh) || GST_H264_IS_I_SLICE (&sh)) ||
      !esps->frame_mbs_only_flag || esps->pic_order_cnt_type == 1 ||
      esps->pic_width_in_mbs_minus1 + 1 != sp->width_mbs ||
      esps->pic_height_in_map_units_minus1 + 1 != sp->height_mbs ||
      sh.ref_pic_list_modification_flag_l0 ||
      (GST_H264_IS_P_SLICE (&sh) && sh.num_ref_idx_l0_active_minus1 != 0) ||
      sh.dec_ref_pic_marking.adaptive_ref_pic_marking_mode_flag ||
      nalu->ref_idc == 0)
    return FALSE;

  rbsp = unescape (nalu->data + nalu->offset + 1, nalu->size - 1);

  /* the encoder's header as this code writes it must be its bits */
  f.idr = nalu->type == GST_H264_NAL_SLICE_IDR;
  f.nal_ref_idc = nalu->ref_idc;
  f.pps_id = sh.pps->id;
  f.frame_num = sh.frame_num;
  f.frame_num_bits = esps->log2_max_frame_num_minus4 + 4;
  f.poc_type = esps->pic_order_cnt_type;
  f.poc_lsb = sh.pic_order_cnt_lsb;
  f.poc_bits = esps->log2_max_pic_order_cnt_lsb_minus4 + 4;
  f.force_one_ref = FALSE;
  f.ref_diff_minus1 = -1;
  gst_bit_writer_init (&orig);
  write_header (sp, &orig, &sh, &f);
  hbits = gst_bit_writer_get_size (&orig);
  if (hbits > rbsp->len * 8 ||
      !bits_equal (gst_bit_writer_get_data (&orig), rbsp->data, hbits))
    goto done;

  f.idr = FALSE;
  f.pps_id = sp->pps_id;
  f.frame_num = t->frame_num & ((1u << sp->log2_max_frame_num) - 1);
  f.frame_num_bits = sp->log2_max_frame_num;
  f.poc_type = sp->poc_type;
  f.poc_lsb = t->poc_lsb & ((1u << sp->log2_max_poc_lsb) - 1);
  f.poc_bits = sp->log2_max_poc_lsb;
  f.force_one_ref = TRUE;
  if (t->nonref)
    f.nal_ref_idc = 0;
  if (t->ref_frame_num >= 0) {
    /* PicNum of a short-term frame: its frame_num, less MaxFrameNum when
     * above the current one (wrapped) */
    guint max = 1u << sp->log2_max_frame_num;
    guint diff = (f.frame_num + max - ((guint) t->ref_frame_num & (max - 1)))
        & (max - 1);

    if (diff == 0)
      goto done;
    f.ref_diff_minus1 = diff - 1;
  }
  gst_bit_writer_init (&bw);
  write_header (sp, &bw, &sh, &f);
  if (sp->enc_cabac) {
    /* slice_data() starts byte-aligned after cabac_alignment_one_bits */
    gsize start = (hbits + 7) / 8;

    while (gst_bit_writer_get_size (&bw) % 8)
      gst_bit_writer_put_bits_uint8 (&bw, 1, 1);
    gst_bit_writer_put_bytes (&bw, rbsp->data + start, rbsp->len - start);
  } else {
    gsize end = stop_bit (rbsp->data, rbsp->len);

    if (end < hbits) {
      gst_bit_writer_reset (&bw);
      goto done;
    }
    copy_bits (&bw, rbsp->data, hbits, end);
    finish_rbsp (&bw);
  }
  append_nal (out, nls, (f.nal_ref_idc << 5) | GST_H264_NAL_SLICE,
      gst_bit_writer_get_data (&bw), gst_bit_writer_get_size (&bw) / 8);
  gst_bit_writer_reset (&bw);
  ok = TRUE;
done:
  gst_bit_writer_reset (&orig);
  g_byte_array_unref (rbsp);
  return ok;
}

/* the encoder's access unit: parameter sets taken, slices rewritten to
 * @t into @out (@t NULL: slices left out) */
static gboolean
rewrite_au (GstTwoflowH264Splice * sp, const guint8 * d, gsize size,
    const Target * t, guint nls, GByteArray * out)
{
  GstH264NalUnit nalu;
  GstH264ParserResult res;
  guint offset = 0, len0 = out ? out->len : 0;
  gboolean slices = FALSE, pps_written = FALSE;

  if (!sp->have_sps || sp->why)
    return FALSE;
  while (offset < size) {
    res = gst_h264_parser_identify_nalu (sp->enc, d, offset, size, &nalu);
    if (res != GST_H264_PARSER_OK && res != GST_H264_PARSER_NO_NAL_END)
      break;
    if (nalu.type == GST_H264_NAL_SPS) {
      GstH264SPS sps;

      if (gst_h264_parser_parse_sps (sp->enc, &nalu, &sps) !=
          GST_H264_PARSER_OK)
        goto fail;
      gst_h264_sps_clear (&sps);
    } else if (nalu.type == GST_H264_NAL_PPS) {
      if (!take_pps (sp, &nalu))
        goto fail;
    } else if (nalu.type == GST_H264_NAL_SLICE ||
        nalu.type == GST_H264_NAL_SLICE_IDR) {
      if (!t) {
        slices = TRUE;
        goto next;
      }
      if (!pps_written) {
        if (!sp->pps_rbsp || sp->pps_id < 0)
          goto fail;
        append_nal (out, nls, (3 << 5) | GST_H264_NAL_PPS,
            sp->pps_rbsp->data, sp->pps_rbsp->len);
        pps_written = TRUE;
      }
      if (!rewrite_slice (sp, &nalu, t, nls, out))
        goto fail;
      slices = TRUE;
    }
    /* SEI (the encoder's version string), AUD: left out */
  next:
    offset = nalu.offset + nalu.size;
    if (res == GST_H264_PARSER_NO_NAL_END)
      break;
  }
  if (slices)
    return TRUE;
fail:
  if (out)
    g_byte_array_set_size (out, len0);
  return FALSE;
}

gboolean
gst_twoflow_h264_splice_rewrite (GstTwoflowH264Splice * sp, const guint8 * d,
    gsize size, guint frame_num, guint poc_lsb, guint nls, GByteArray * out)
{
  Target t = { frame_num, poc_lsb, FALSE, -1 };

  return rewrite_au (sp, d, size, &t, nls, out);
}

gboolean
gst_twoflow_h264_splice_rewrite_nonref (GstTwoflowH264Splice * sp,
    const guint8 * d, gsize size, guint frame_num, guint poc_lsb,
    guint ref_frame_num, guint nls, GByteArray * out)
{
  Target t = { frame_num, poc_lsb, TRUE, (gint) ref_frame_num };

  return rewrite_au (sp, d, size, &t, nls, out);
}

gboolean
gst_twoflow_h264_splice_take_params (GstTwoflowH264Splice * sp,
    const guint8 * d, gsize size)
{
  return rewrite_au (sp, d, size, NULL, 0, NULL);
}
