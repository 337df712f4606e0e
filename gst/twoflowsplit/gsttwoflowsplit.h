/* SPDX-License-Identifier: LGPL-2.0-or-later */
/* twoflow
 * twoflowsplit: parsed MPEG video in, essential and enhanced twoflow out.
 */
#ifndef __GST_TWOFLOW_SPLIT_H__
#define __GST_TWOFLOW_SPLIT_H__

#include <gst/gst.h>
#include <gst/base/gstflowcombiner.h>
#include <gst/picturetype/picturetype.h>
#include <gst/twoflow/twoflowframe.h>
#include <gst/twoflow/twoflowsequencer.h>

G_BEGIN_DECLS

#define GST_TYPE_TWOFLOW_SPLIT (gst_twoflow_split_get_type ())
G_DECLARE_FINAL_TYPE (GstTwoflowSplit, gst_twoflow_split, GST, TWOFLOW_SPLIT,
    GstElement)

struct _GstTwoflowSplit {
  GstElement parent;

  GstPad *sinkpad;
  GstPad *essential_pad;
  GstPad *enhanced_pad;
  GstFlowCombiner *flow_combiner;

  /* properties */
  GstTwoflowPolicy policy;
  GstClockTime segment_duration;

  /* stream state (streaming thread) */
  GstTwoflowCodec codec;
  GstTwoflowPictureParser *picture_parser;
  gboolean caps_records_pending;
  GstCaps *input_caps;
  GstTwoflowSequencer seq;

  /* statistics, under the object lock */
  guint64 frames[4];            /* indexed by GstTwoflowPictureType */
  guint64 essential_frames, enhanced_frames;
  guint64 essential_bytes, enhanced_bytes;
};

GST_ELEMENT_REGISTER_DECLARE (twoflowsplit);

G_END_DECLS

#endif
