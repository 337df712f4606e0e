/* SPDX-License-Identifier: LGPL-2.1-or-later */
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
  GstPad *audio_pad;            /* request pad, NULL until requested */
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

  /* interleaving of the audio records with the frames (docs/frame-format.md):
   * each sink pad's chain holds its buffer's timestamp as its head and
   * waits until the other pad's head is later (ties: video first) or that
   * pad is at EOS; under lock, signalled by cond */
  GMutex lock;
  GCond cond;
  GstClockTime video_head, audio_head;
  gboolean video_eos, audio_eos, flushing;
  gboolean busy;                /* a chain is pushing (its turn) */
  GstClockTime last_video_ts, last_audio_ts;
  GstClockTime first_ts;        /* of the first buffer of either pad */
  /* audio timestamps are carried in the video's time base: the same
   * running time at the video segment's position */
  GstSegment video_segment, audio_segment;
  gboolean video_segment_set;
  GstCaps *audio_caps;
  gboolean audio_caps_pending;
  gboolean audio_started;       /* the first audio buffer arrived */
  guint32 audio_no;

  /* statistics, under the object lock */
  guint64 frames[4];            /* indexed by GstTwoflowPictureType */
  guint64 frames_dropped;       /* left out upstream (dropped-frame events) */
  guint64 essential_frames, enhanced_frames;
  guint64 essential_bytes, enhanced_bytes;
  guint64 audio_records, audio_bytes;
};

GST_ELEMENT_REGISTER_DECLARE (twoflowsplit);

G_END_DECLS

#endif
