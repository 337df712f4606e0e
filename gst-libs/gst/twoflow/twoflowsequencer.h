/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The bookkeeping that numbers a sequence of coded pictures in decode order
 * and fills the twoflow header fields that depend on the frames before:
 * frame and GOP number, segment, depends_from, history, essential flag.
 * Shared by twoflowsplit (real streams) and twoflowtracesrc (traces).
 */
#ifndef __GST_TWOFLOW_SEQUENCER_H__
#define __GST_TWOFLOW_SEQUENCER_H__

#include <gst/gst.h>
#include <gst/twoflow/twoflow-prelude.h>
#include "twoflowframe.h"

G_BEGIN_DECLS

/**
 * GstTwoflowPolicy:
 * @GST_TWOFLOW_POLICY_I: I frames are essential
 * @GST_TWOFLOW_POLICY_IP: I and P frames are essential
 */
typedef enum {
  GST_TWOFLOW_POLICY_I,
  GST_TWOFLOW_POLICY_IP,
} GstTwoflowPolicy;

#define GST_TYPE_TWOFLOW_POLICY (gst_twoflow_policy_get_type ())
TWOFLOW_PRIVATE_API
GType gst_twoflow_policy_get_type (void);

typedef struct {
  GstTwoflowCodec codec;
  GstTwoflowPolicy policy;
  GstClockTime segment_duration;

  guint32 frame_no;
  guint32 gop_no;
  guint64 history;
  guint32 last_i;
  gboolean last_i_idr;
  guint32 last_ref, prev_ref;
  /* H.265: the first trailing (not leading) picture since the last I and
   * the one of the GOP before (RASL pictures reach back to it, no
   * further: the RPS of a trailing picture holds no leading picture) */
  guint32 first_trailing, prev_first_trailing;
  GstClockTime first_ts;
} GstTwoflowSequencer;

/* What the sequencer needs to know of a picture beyond its type: filled by
 * the codec's picture parser (picturetype.h). */
typedef struct {
  GstTwoflowPictureType type;
  gboolean reference;     /* later pictures may predict from it */
  gboolean idr;           /* no later picture predicts from before it */
  /* H.265: a leading picture (RASL, RADL), which no trailing picture
   * predicts from; open_gop: a RASL picture, it may predict from the GOP
   * before the last I */
  gboolean leading;
  gboolean open_gop;
  /* exact distance in frames back to the earliest picture it predicts
   * from (AV1, from its reference slots); -1: unknown, the codec's rule */
  gint depends_back;
} GstTwoflowSequencerPicture;

TWOFLOW_PRIVATE_API
gboolean gst_twoflow_segment_number (GstClockTime * first_ts,
    GstClockTime ts, GstClockTime segment_duration, guint32 * number);

TWOFLOW_PRIVATE_API
void gst_twoflow_sequencer_init (GstTwoflowSequencer * seq,
    GstTwoflowCodec codec, GstTwoflowPolicy policy,
    GstClockTime segment_duration);
TWOFLOW_PRIVATE_API
gboolean gst_twoflow_sequencer_next (GstTwoflowSequencer * seq,
    GstTwoflowPictureType type, gboolean reference, gboolean idr,
    GstClockTime pts, GstClockTime dts, GstClockTime duration,
    GstTwoflowFrameHeader * hdr);
TWOFLOW_PRIVATE_API
gboolean gst_twoflow_sequencer_next_picture (GstTwoflowSequencer * seq,
    const GstTwoflowSequencerPicture * pic, GstClockTime pts,
    GstClockTime dts, GstClockTime duration, GstTwoflowFrameHeader * hdr);

G_END_DECLS

#endif
