/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * twoflowmerge: essential and enhanced twoflow records in, one elementary
 * stream in decode order (and its audio track) out. The I/O shell of
 * GstTwoflowMerger (gst-libs/gst/twoflow/twoflowmerger.h).
 */
#ifndef __GST_TWOFLOW_MERGE_H__
#define __GST_TWOFLOW_MERGE_H__

#include <gst/gst.h>
#include <gst/base/gstflowcombiner.h>
#include <gst/twoflow/twoflowframe.h>
#include <gst/twoflow/twoflowmerger.h>

G_BEGIN_DECLS

#define GST_TYPE_TWOFLOW_MERGE (gst_twoflow_merge_get_type ())
G_DECLARE_FINAL_TYPE (GstTwoflowMerge, gst_twoflow_merge, GST, TWOFLOW_MERGE,
    GstElement)

/* State of one sink pad. */
typedef struct {
  GstPad *pad;
  const gchar *name;
  GstTwoflowMergerFlow flow;
  GstTwoflowParser *parser;
  gboolean packetized;
  gboolean eos;
  gboolean flushing;
} GstTwoflowMergeInput;

struct _GstTwoflowMerge {
  GstElement parent;

  GstPad *srcpad;
  GstPad *audio_srcpad;         /* once the flows turned out to have audio */
  GstFlowCombiner *flowcombiner;        /* streaming thread only */
  GstTwoflowMergeInput essential;
  GstTwoflowMergeInput enhanced;

  GMutex lock;
  GCond cond;

  /* properties (under lock) */
  guint64 max_essential_bytes;
  guint64 max_enhanced_bytes;
  guint max_records;
  gchar *prefix_location;
  GstClockTime latency;
  GstClockTime first_hold;
  gboolean drop_dependent;

  /* under lock */
  GstTwoflowMerger *merger;     /* the merge itself; a new one each run */
  GstClockID wait_id;           /* the task's wait for next_wakeup */
  GstFlowReturn srcresult;
  gboolean error_posted;        /* srcresult is an error already reported */
  gboolean need_headers, audio_need_headers;
  gboolean no_more_pads;
  guint group_id;
};

GST_ELEMENT_REGISTER_DECLARE (twoflowmerge);

G_END_DECLS

#endif
