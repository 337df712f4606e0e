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
  GstClockTime first_ts;
} GstTwoflowSequencer;

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

G_END_DECLS

#endif
