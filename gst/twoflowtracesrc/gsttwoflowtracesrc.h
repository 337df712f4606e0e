/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * twoflowtracesrc: twoflow records whose picture types and sizes come from a
 * frame trace, so experiments can replay the papers' videos.
 */
#ifndef __GST_TWOFLOW_TRACE_SRC_H__
#define __GST_TWOFLOW_TRACE_SRC_H__

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>
#include <gst/twoflow/twoflowframe.h>
#include <gst/twoflow/twoflowsequencer.h>

G_BEGIN_DECLS

#define GST_TYPE_TWOFLOW_TRACE_SRC (gst_twoflow_trace_src_get_type ())
G_DECLARE_FINAL_TYPE (GstTwoflowTraceSrc, gst_twoflow_trace_src, GST,
    TWOFLOW_TRACE_SRC, GstPushSrc)

/**
 * GstTwoflowTraceFlow:
 * @GST_TWOFLOW_TRACE_FLOW_ALL: every frame
 * @GST_TWOFLOW_TRACE_FLOW_ESSENTIAL: the essential flow only
 * @GST_TWOFLOW_TRACE_FLOW_ENHANCED: the enhanced flow only
 */
typedef enum {
  GST_TWOFLOW_TRACE_FLOW_ALL,
  GST_TWOFLOW_TRACE_FLOW_ESSENTIAL,
  GST_TWOFLOW_TRACE_FLOW_ENHANCED,
} GstTwoflowTraceFlow;

#define GST_TYPE_TWOFLOW_TRACE_FLOW (gst_twoflow_trace_flow_get_type ())
GType gst_twoflow_trace_flow_get_type (void);

typedef struct {
  GstTwoflowPictureType type;
  GstClockTime pts;
  guint32 size;
} GstTwoflowTraceFrame;

struct _GstTwoflowTraceSrc {
  GstPushSrc parent;

  /* properties (object lock) */
  gchar *location;
  GstTwoflowTraceFlow flow;
  GstTwoflowPolicy policy;
  GstClockTime segment_duration;
  gint fps_n, fps_d;
  gdouble size_scale;
  gint64 num_frames;
  GstClockTime ahead;

  /* streaming state */
  GArray *frames;               /* GstTwoflowTraceFrame, decode order */
  guint next;
  gboolean caps_sent, end_sent;
  GstTwoflowSequencer seq;
};

GST_ELEMENT_REGISTER_DECLARE (twoflowtracesrc);

G_END_DECLS

#endif
