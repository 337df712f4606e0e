/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The two-flow merge (sans-IO): fed the records of the essential flow (and
 * its pre-stored prefix) and of the enhanced flow with the current time,
 * it decides what comes out next — a video frame in decode order, an audio
 * buffer interleaved by timestamp, a frame given up as missing, the end —
 * and when it wants to be asked again (the latency deadline of a late
 * enhanced frame). It keeps the damage metrics and builds the stats. No
 * threads, locks or clocks: twoflowmerge is its I/O shell. Not thread-safe:
 * callers serialize access.
 */
#ifndef __GST_TWOFLOW_MERGER_H__
#define __GST_TWOFLOW_MERGER_H__

#include <gst/gst.h>
#include <gst/twoflow/twoflow-prelude.h>
#include "twoflowframe.h"

G_BEGIN_DECLS

typedef struct _GstTwoflowMerger GstTwoflowMerger;

/* Where a record came from. The prefix is essential records read before
 * the essential flow's own (counted in prefix-frames). */
typedef enum {
  GST_TWOFLOW_MERGER_PREFIX,
  GST_TWOFLOW_MERGER_ESSENTIAL,
  GST_TWOFLOW_MERGER_ENHANCED,
} GstTwoflowMergerFlow;

typedef struct {
  /* bytes of essential frames and audio the essential flow may have
   * waiting; more is GST_TWOFLOW_MERGER_FULL (the prefix is not checked) */
  guint64 max_essential_bytes;
  /* how long a late enhanced frame is waited for once its turn has come
   * and the essential flow has moved past it; 0: until the enhanced flow
   * moves past it or ends */
  GstClockTime latency;
  /* frames predicting from a missing or dropped reference are dropped */
  gboolean drop_dependent;
  /* records (frames of both flows and audio) that may wait at once; more
   * is GST_TWOFLOW_MERGER_FULL; 0: no limit */
  guint max_records;
  /* the first frame waits this long at most for the frame after it (0:
   * it goes at once): alone, it freezes the picture until the next one
   * comes (an H.264 fetch's essential I frame came ~0.4 s before the
   * enhanced flow's first frame left the playout buffer) */
  GstClockTime first_hold;
} GstTwoflowMergerConfig;

/* What a waiting record is counted as besides its payload (its buffer,
 * memory and bookkeeping), so empty records count toward the byte
 * limits too. */
#define GST_TWOFLOW_MERGER_RECORD_OVERHEAD 512

/* What handle_record / handle_eos found. After an error the merger stays
 * failed: poll returns GST_TWOFLOW_MERGER_ERROR. */
typedef enum {
  GST_TWOFLOW_MERGER_OK = 0,
  GST_TWOFLOW_MERGER_INVALID,   /* a record out of place (e.g. audio out of order) */
  GST_TWOFLOW_MERGER_FULL,      /* max_essential_bytes or max_records exceeded */
} GstTwoflowMergerResult;

typedef enum {
  GST_TWOFLOW_MERGER_WAIT = 0,  /* nothing now; next_wakeup tells until when */
  GST_TWOFLOW_MERGER_AUDIO_CAPS,        /* the flows have audio: caps; before any output */
  GST_TWOFLOW_MERGER_FRAME,     /* buffer: the next video frame */
  GST_TWOFLOW_MERGER_AUDIO,     /* buffer: the next audio buffer */
  GST_TWOFLOW_MERGER_MISSING,   /* frames hdr.frame_no .. + count - 1 never arrived */
  GST_TWOFLOW_MERGER_DROPPED,   /* frame hdr arrived but predicts from a broken reference */
  GST_TWOFLOW_MERGER_EOS,       /* everything is out (returned from then on) */
  GST_TWOFLOW_MERGER_ERROR,     /* reason; returned from then on */
} GstTwoflowMergerAction;

typedef struct {
  GstTwoflowMergerAction action;
  /* FRAME, AUDIO (transfer full): the payload with PTS, DTS, duration
   * restored; frames: DISCONT after a gap, DELTA_UNIT unless I;
   * audio: OFFSET = its number in the audio track */
  GstBuffer *buffer;
  /* FRAME, AUDIO, DROPPED: the record's header; MISSING: frame_no, and
   * picture_type and the reference flag when the history told them
   * (picture_type NONE when unknown) */
  GstTwoflowFrameHeader hdr;
  const gchar *caps;            /* AUDIO_CAPS: the audio caps string */
  const gchar *reason;          /* ERROR */
  /* MISSING: frames in the run (1, or more for frames too far before the
   * next record for their types to be known: a jump in frame numbers is
   * accounted in O(1), with picture type NONE) */
  guint32 count;
} GstTwoflowMergerOutput;

TWOFLOW_PRIVATE_API
void gst_twoflow_merger_config_init (GstTwoflowMergerConfig * config);

TWOFLOW_PRIVATE_API
GstTwoflowMerger *gst_twoflow_merger_new (const GstTwoflowMergerConfig *
    config);
TWOFLOW_PRIVATE_API
void gst_twoflow_merger_free (GstTwoflowMerger * m);
/* Takes effect from the next call (e.g. a longer latency for the frame
 * waited for now). */
TWOFLOW_PRIVATE_API
void gst_twoflow_merger_set_config (GstTwoflowMerger * m,
    const GstTwoflowMergerConfig * config);

/* Takes one parsed record; @payload is taken. */
TWOFLOW_PRIVATE_API
GstTwoflowMergerResult gst_twoflow_merger_handle_record (GstTwoflowMerger * m,
    GstTwoflowMergerFlow flow, const GstTwoflowFrameHeader * hdr,
    GstBuffer * payload, GstClockTime now);
/* The flow has ended (its records were all handled). */
TWOFLOW_PRIVATE_API
void gst_twoflow_merger_handle_eos (GstTwoflowMerger * m,
    GstTwoflowMergerFlow flow, GstClockTime now);
/* Drops what the flow has waiting and forgets its end (a flush); what
 * was output stays output. */
TWOFLOW_PRIVATE_API
void gst_twoflow_merger_flush (GstTwoflowMerger * m,
    GstTwoflowMergerFlow flow);

/* The caller's clock changed (times before and after are not comparable):
 * a running latency wait starts again at @now, on the new clock. */
TWOFLOW_PRIVATE_API
void gst_twoflow_merger_restart_wait (GstTwoflowMerger * m, GstClockTime now);

/* What happens next, at @now. Call until it returns WAIT (or EOS/ERROR),
 * then wait until next_wakeup or new input. */
TWOFLOW_PRIVATE_API
GstTwoflowMergerAction gst_twoflow_merger_poll (GstTwoflowMerger * m,
    GstClockTime now, GstTwoflowMergerOutput * out);
/* When poll will have something without new input: the latency deadline
 * of the enhanced frame waited for; GST_CLOCK_TIME_NONE otherwise. */
TWOFLOW_PRIVATE_API
GstClockTime gst_twoflow_merger_next_wakeup (GstTwoflowMerger * m);

/* The video / audio caps strings from the caps records (NULL before). */
TWOFLOW_PRIVATE_API
const gchar *gst_twoflow_merger_get_caps (GstTwoflowMerger * m);
TWOFLOW_PRIVATE_API
const gchar *gst_twoflow_merger_get_audio_caps (GstTwoflowMerger * m);
/* Where the output's time segment starts: the first output timestamp
 * (first frame's DTS, else PTS, or the first audio PTS if earlier); set
 * once the first frame or audio buffer is polled, NONE before. */
TWOFLOW_PRIVATE_API
GstClockTime gst_twoflow_merger_get_segment_start (GstTwoflowMerger * m);
/* Records waiting, of both flows and audio. */
guint gst_twoflow_merger_queued_records (GstTwoflowMerger * m);
/* Bytes waiting from a flow: payloads + GST_TWOFLOW_MERGER_RECORD_OVERHEAD
 * per record (the prefix's count as essential; audio is included in the
 * essential count). */
TWOFLOW_PRIVATE_API
guint64 gst_twoflow_merger_queued_bytes (GstTwoflowMerger * m,
    GstTwoflowMergerFlow flow);
/* The reason of the error handle_record returned (NULL if none). */
TWOFLOW_PRIVATE_API
const gchar *gst_twoflow_merger_get_error (GstTwoflowMerger * m);
/* `application/x-twoflowmerge-stats`, fields as on twoflowmerge:stats. */
TWOFLOW_PRIVATE_API
GstStructure *gst_twoflow_merger_get_stats (GstTwoflowMerger * m);

G_END_DECLS

#endif
