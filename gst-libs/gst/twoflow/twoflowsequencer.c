/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Numbering of coded pictures for the twoflow format (docs/frame-format.md).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "twoflowsequencer.h"

GType
gst_twoflow_policy_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {GST_TWOFLOW_POLICY_I, "I frames are essential", "i"},
    {GST_TWOFLOW_POLICY_IP, "I and P frames are essential", "ip"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstTwoflowPolicy", values);
    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

void
gst_twoflow_sequencer_init (GstTwoflowSequencer * seq, GstTwoflowCodec codec,
    GstTwoflowPolicy policy, GstClockTime segment_duration)
{
  seq->codec = codec;
  seq->policy = policy;
  seq->segment_duration = MAX (segment_duration, 1);
  seq->frame_no = 0;
  seq->gop_no = 0;
  seq->history = 0;
  seq->last_i = seq->last_ref = seq->prev_ref = GST_TWOFLOW_NO_FRAME;
  seq->first_trailing = seq->prev_first_trailing = GST_TWOFLOW_NO_FRAME;
  seq->last_i_idr = FALSE;
  seq->first_ts = GST_CLOCK_TIME_NONE;
}

/* The earliest frame a new frame may predict from. */
static guint32
depends_from (GstTwoflowSequencer * seq,
    const GstTwoflowSequencerPicture * pic)
{
  GstTwoflowPictureType type = pic->type;
  guint32 older = seq->prev_ref != GST_TWOFLOW_NO_FRAME ?
      seq->prev_ref : seq->last_ref;

  if (type == GST_TWOFLOW_PICTURE_I)
    return seq->frame_no;
  if (pic->depends_back >= 0)
    return seq->frame_no - MIN ((guint32) pic->depends_back, seq->frame_no);
  switch (seq->codec) {
    case GST_TWOFLOW_CODEC_H264:
      /* H.264 may reference any picture since the last I; a B right after
       * a non-IDR I may also reach back across it (open GOP). */
      if (type == GST_TWOFLOW_PICTURE_B && !seq->last_i_idr
          && seq->last_ref == seq->last_i)
        return older;
      return seq->last_i;
    case GST_TWOFLOW_CODEC_H265:
      /* The IRAP itself is never lost or broken, so the ranges leave it
       * out: a trailing picture may predict from the trailing pictures
       * since it (not from leading ones); a RASL picture (open GOP) also
       * from the GOP before, as an MPEG-2 open GOP's first Bs, but not
       * from its leading pictures (by then out of every RPS). */
      if (!pic->leading) {
        if (seq->first_trailing == GST_TWOFLOW_NO_FRAME)
          seq->first_trailing = seq->frame_no;
        return seq->first_trailing;
      }
      if (pic->open_gop && !seq->last_i_idr
          && seq->prev_first_trailing != GST_TWOFLOW_NO_FRAME)
        return seq->prev_first_trailing;
      return seq->last_i;
    default:
      /* MPEG-1/2 (and traces of such GOPs): P uses the last reference, B
       * the last two. */
      return type == GST_TWOFLOW_PICTURE_P ? seq->last_ref : older;
  }
}

/**
 * gst_twoflow_segment_number:
 * @first_ts: (inout): the stream's first timestamp, set by the first valid @ts
 * @ts: a frame's timestamp (DTS, else PTS)
 * @number: (out): its segment number, set only when TRUE is returned
 *
 * The one segment numbering of the project (twoflowsplit, the trace
 * source, ctcpsink): segments of @segment_duration counted from the
 * stream's first timestamp, whatever that is (a capture may start at
 * hours).
 *
 * Returns: FALSE for an invalid @ts or one before the first.
 */
gboolean
gst_twoflow_segment_number (GstClockTime * first_ts, GstClockTime ts,
    GstClockTime segment_duration, guint32 * number)
{
  if (!GST_CLOCK_TIME_IS_VALID (ts))
    return FALSE;
  if (!GST_CLOCK_TIME_IS_VALID (*first_ts))
    *first_ts = ts;
  if (ts < *first_ts)
    return FALSE;
  *number = (ts - *first_ts) / MAX (segment_duration, 1);
  return TRUE;
}

/**
 * gst_twoflow_sequencer_next:
 * @hdr: (out): a frame header for the next picture, payload_size 0
 *
 * Returns: FALSE when the stream has more frames than the format numbers.
 */
gboolean
gst_twoflow_sequencer_next (GstTwoflowSequencer * seq,
    GstTwoflowPictureType type, gboolean reference, gboolean idr,
    GstClockTime pts, GstClockTime dts, GstClockTime duration,
    GstTwoflowFrameHeader * hdr)
{
  GstTwoflowSequencerPicture pic = { type, reference, idr, FALSE, FALSE, -1 };

  return gst_twoflow_sequencer_next_picture (seq, &pic, pts, dts, duration,
      hdr);
}

/**
 * gst_twoflow_sequencer_next_picture:
 * @pic: what the picture parser found
 * @hdr: (out): a frame header for the next picture, payload_size 0
 *
 * Returns: FALSE when the stream has more frames than the format numbers.
 */
gboolean
gst_twoflow_sequencer_next_picture (GstTwoflowSequencer * seq,
    const GstTwoflowSequencerPicture * pic, GstClockTime pts,
    GstClockTime dts, GstClockTime duration, GstTwoflowFrameHeader * hdr)
{
  GstClockTime ts = GST_CLOCK_TIME_IS_VALID (dts) ? dts : pts;
  GstTwoflowPictureType type = pic->type;
  gboolean reference = pic->reference;

  g_return_val_if_fail (type != GST_TWOFLOW_PICTURE_NONE, FALSE);
  if (seq->frame_no == GST_TWOFLOW_NO_FRAME - 1)
    return FALSE;

  if (type == GST_TWOFLOW_PICTURE_I && seq->last_i != GST_TWOFLOW_NO_FRAME)
    seq->gop_no++;

  gst_twoflow_frame_header_init (hdr);
  hdr->kind = GST_TWOFLOW_RECORD_FRAME;
  hdr->codec = seq->codec;
  hdr->picture_type = type;
  hdr->frame_no = seq->frame_no;
  hdr->gop_no = seq->gop_no;
  hdr->depends_from = depends_from (seq, pic);
  hdr->history = seq->history;
  hdr->pts = pts;
  hdr->dts = dts;
  hdr->duration = duration;
  gst_twoflow_segment_number (&seq->first_ts, ts, seq->segment_duration,
      &hdr->segment_no);
  if (reference)
    hdr->flags |= GST_TWOFLOW_FLAG_REFERENCE;
  if (type == GST_TWOFLOW_PICTURE_I || (type == GST_TWOFLOW_PICTURE_P
          && seq->policy == GST_TWOFLOW_POLICY_IP))
    hdr->flags |= GST_TWOFLOW_FLAG_ESSENTIAL;

  if (type == GST_TWOFLOW_PICTURE_I) {
    if (seq->last_i != GST_TWOFLOW_NO_FRAME)
      seq->prev_first_trailing = seq->first_trailing != GST_TWOFLOW_NO_FRAME ?
          seq->first_trailing : seq->last_i;
    seq->first_trailing = GST_TWOFLOW_NO_FRAME;
    seq->last_i = seq->frame_no;
    seq->last_i_idr = pic->idr;
  }
  if (reference) {
    seq->prev_ref = seq->last_ref;
    seq->last_ref = seq->frame_no;
  }
  seq->history = gst_twoflow_history_push (seq->history, type, reference);
  seq->frame_no++;
  return TRUE;
}
