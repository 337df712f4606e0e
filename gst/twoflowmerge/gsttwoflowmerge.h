/* SPDX-License-Identifier: LGPL-2.0-or-later */
/* twoflow
 * twoflowmerge: essential and enhanced twoflow records in, one elementary
 * stream in decode order out.
 */
#ifndef __GST_TWOFLOW_MERGE_H__
#define __GST_TWOFLOW_MERGE_H__

#include <gst/gst.h>
#include <gst/twoflow/twoflowframe.h>

#include <gst/twoflow/twoflowdamage.h>
#include <gst/base/gstflowcombiner.h>

G_BEGIN_DECLS

#define GST_TYPE_TWOFLOW_MERGE (gst_twoflow_merge_get_type ())
G_DECLARE_FINAL_TYPE (GstTwoflowMerge, gst_twoflow_merge, GST, TWOFLOW_MERGE,
    GstElement)

/* One queued frame. */
typedef struct {
  GstTwoflowFrameHeader hdr;
  GstBuffer *payload;
} GstTwoflowMergeFrame;

/* State of one sink pad. */
typedef struct {
  GstPad *pad;
  const gchar *name;
  GstTwoflowParser *parser;
  gboolean packetized;
  GQueue frames;                /* GstTwoflowMergeFrame, increasing frame_no */
  gsize queued_bytes;
  guint32 last_frame_no;        /* GST_TWOFLOW_NO_FRAME before the first */
  gboolean eos;
  gboolean flushing;
} GstTwoflowMergeInput;

struct _GstTwoflowMerge {
  GstElement parent;

  GstPad *srcpad;
  GstPad *audio_srcpad;         /* once the audio caps record was seen */
  GstFlowCombiner *flowcombiner;
  GstTwoflowMergeInput essential;
  GstTwoflowMergeInput enhanced;

  GMutex lock;
  GCond cond;

  /* properties (under lock) */
  guint64 max_essential_bytes;
  guint64 max_enhanced_bytes;
  gchar *prefix_location;
  GstClockTime latency;
  gboolean drop_dependent;

  /* output state (under lock) */
  GstFlowReturn srcresult;
  gboolean error_posted;        /* srcresult is an error already reported */
  gchar *caps_string;
  gboolean need_headers;
  gboolean started;
  guint32 next_frame_no;
  guint32 frame_count;          /* from an end record, else NO_FRAME */
  guint64 end_history;
  gint64 wait_start;            /* monotonic µs when waiting for next began */
  gboolean discont;
  GstTwoflowDamage damage;
  gboolean essential_end_seen;  /* end record on the essential flow */
  GstClockTime segment_start;   /* first output timestamp, NONE before */
  guint group_id;
  gboolean no_more_pads;

  /* the audio track (essential flow only; under lock) */
  gchar *audio_caps_string;
  GQueue audio;                 /* GstTwoflowMergeFrame, increasing number */
  gsize audio_queued_bytes;
  guint32 audio_next_in;        /* next audio number taken, NO_FRAME before */
  guint32 audio_next_out;       /* next audio number output, NO_FRAME before */
  gboolean audio_need_headers;

  /* statistics beyond the damage counters (under lock) */
  guint64 duplicates;
  guint64 prefix_frames;
  guint64 output_frames;
  guint64 audio_buffers;
  guint64 audio_duplicates;
};

GST_ELEMENT_REGISTER_DECLARE (twoflowmerge);

G_END_DECLS

#endif
