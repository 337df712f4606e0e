/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * H.264: splicing an encoder's pictures into a source's coded video
 * sequence, for ratetranscoder keep=i (sans I/O: bytes in, bytes out).
 */
#ifndef __GST_TWOFLOW_H264_SPLICE_H__
#define __GST_TWOFLOW_H264_SPLICE_H__

#include <glib.h>
#include <gst/picturetype/picturetype-prelude.h>

G_BEGIN_DECLS

/* What the splice needs of a source picture (its first slice). */
typedef struct
{
  gboolean idr;
  guint nal_ref_idc;
  guint frame_num;
  guint poc_lsb;                /* pic_order_cnt_type 0 */
  gboolean short_term;          /* a reference that stays short-term under
                                 * its frame_num (not long-term, no MMCO 5):
                                 * a spliced picture may name it */
  gboolean marks_unused;        /* MMCO 1: an earlier short-term reference
                                 * leaves the DPB */
  gboolean marks_long_term;     /* long-term references made or dropped
                                 * (MMCO 2, 3, 4, 6, an IDR's flag) */
  guint num_ref_frames;         /* the active SPS's max_num_ref_frames (1
                                 * when frame_num gaps are allowed: then
                                 * the sliding window is not followed) */
} GstTwoflowH264SourcePicture;

typedef struct _GstTwoflowH264Splice GstTwoflowH264Splice;

TWOFLOW_PICTURETYPE_API
GstTwoflowH264Splice *gst_twoflow_h264_splice_new (void);
TWOFLOW_PICTURETYPE_API
void gst_twoflow_h264_splice_free (GstTwoflowH264Splice * sp);

/* A source access unit (@nls: NAL length prefix bytes, 0 = Annex B): its
 * SPS/PPS are remembered, its first slice goes into @pic. FALSE when it
 * holds no slice; *@why is set (and stays) when the source's sequence
 * cannot take spliced pictures (interlaced, not 8-bit 4:2:0, scaling
 * matrices, pic_order_cnt_type 1). */
TWOFLOW_PICTURETYPE_API
gboolean gst_twoflow_h264_splice_parse_source (GstTwoflowH264Splice * sp, const guint8 * d,
    gsize size, guint nls, GstTwoflowH264SourcePicture * pic, const gchar ** why);

/* log2 of MaxFrameNum of the source's active SPS (0 unknown). */
TWOFLOW_PICTURETYPE_API
guint gst_twoflow_h264_splice_log2_max_frame_num (GstTwoflowH264Splice * sp);

/* Options for the encoder so its slices fit the source's parameter sets
 * (entropy coder and 8x8 transform by the source's profile). */
TWOFLOW_PICTURETYPE_API
const gchar *gst_twoflow_h264_splice_x264_params (GstTwoflowH264Splice * sp);

/* One access unit of the encoder (Annex B; single reference P or I
 * pictures, no weighted prediction) rewritten as a reference picture of
 * the source's sequence: non-IDR, @frame_num, POC lsb @poc_lsb, a PPS of
 * its own (an id the source does not use, pointing at the source's SPS)
 * in front, SEI left out. Appended to @out with @nls-byte length prefixes
 * (0: start codes). FALSE (and @out unchanged) when it cannot be. */
TWOFLOW_PICTURETYPE_API
gboolean gst_twoflow_h264_splice_rewrite (GstTwoflowH264Splice * sp, const guint8 * d,
    gsize size, guint frame_num, guint poc_lsb, guint nls, GByteArray * out);

/* The same as a picture nothing references (nal_ref_idc 0; @frame_num
 * the previous reference's + 1, as the source's own non-reference picture
 * there has it), its one reference forced by a reference list
 * modification to the short-term picture @ref_frame_num: the source's
 * reference the encoder's reference stood for. */
TWOFLOW_PICTURETYPE_API
gboolean gst_twoflow_h264_splice_rewrite_nonref (GstTwoflowH264Splice * sp,
    const guint8 * d, gsize size, guint frame_num, guint poc_lsb,
    guint ref_frame_num, guint nls, GByteArray * out);

/* An encoder access unit whose slices are not used (the reference a
 * non-reference picture is coded against): its SPS/PPS are taken for the
 * pictures that follow. FALSE when it holds no slice or a bad PPS. */
TWOFLOW_PICTURETYPE_API
gboolean gst_twoflow_h264_splice_take_params (GstTwoflowH264Splice * sp,
    const guint8 * d, gsize size);

G_END_DECLS

#endif
