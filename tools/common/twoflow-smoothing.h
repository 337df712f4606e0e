/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Enhanced-flow smoothing (sans-IO): from the video scan (every frame's
 * decode time and size), the rate schedule that paces the enhanced flow
 * as CBR per smoothing window — near the window's mean rate instead of the
 * flow's peak — such that every frame is sent before its deadline when the
 * receiver plays the flow `lead` after the sender released it; and the
 * essential flow's per-segment cTCP target rates S/(T(1−p̂)). Both are the
 * "smoothed rates" the proxy's admission adds up (docs/system.md,
 * "Enhanced-flow smoothing"). compute_total() instead keeps the session's
 * total (essential + enhanced) constant: the enhanced flow gets what the
 * essential flow leaves of one constant rate R, and is sent ahead of its
 * release (its sender reads the stored video as fast as it may send).
 * A pure function of the video (docs/architecture.md): handle_frame() the
 * scan, compute() once, then read the schedule; no clock, no timer.
 */
#ifndef __GST_TWOFLOW_SMOOTHING_H__
#define __GST_TWOFLOW_SMOOTHING_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* What gst_twoflow_smoothing_compute() found. Times are relative to the
 * sender's release of the first frame unless said otherwise. */
typedef struct {
  GstClockTime window;          /* W */
  GstClockTime lead;            /* L: playout delay after release */
  GstClockTime start;           /* decode time where window 0 begins */
  guint n_windows;
  guint64 max_rate, min_rate;   /* bit/s over the windows */
  guint64 mean_rate;            /* bit/s: enhanced bytes / duration */
  guint64 frames;               /* enhanced frames scheduled */
  guint64 late_frames;          /* sent completely after their deadline */
  GstClockTimeDiff max_lateness;        /* finish - deadline, worst frame */
  GstClockTime max_playout;     /* longest a frame waits at the receiver */
  guint64 max_playout_bytes;    /* most bytes held at the receiver */
  guint64 max_backlog_bytes;    /* most bytes queued at the sender */
  guint raised_windows;         /* windows paced above their mean */
  /* compute_total() only (0 after compute()): the session's constant
   * total R = essential + enhanced, what the schedule's mean alone would
   * give (the session's mean total x headroom), and what the deadlines
   * alone need */
  guint64 total_rate;
  guint64 total_mean_rate;
  guint64 total_deadline_rate;
} GstTwoflowSmoothingInfo;

typedef struct _GstTwoflowSmoothing GstTwoflowSmoothing;

GstTwoflowSmoothing * gst_twoflow_smoothing_new (GstClockTime window,
    GstClockTime lead, gdouble headroom);
GstTwoflowSmoothing * gst_twoflow_smoothing_new_from (
    GstTwoflowSmoothing * other, GstClockTime window, GstClockTime lead,
    gdouble headroom);
void gst_twoflow_smoothing_free (GstTwoflowSmoothing * sm);

void gst_twoflow_smoothing_handle_frame (GstTwoflowSmoothing * sm,
    GstClockTime dts, guint64 bytes, gboolean essential);
void gst_twoflow_smoothing_compute (GstTwoflowSmoothing * sm);
void gst_twoflow_smoothing_compute_total (GstTwoflowSmoothing * sm,
    const guint64 * essential_rates, guint n_essential);
void gst_twoflow_smoothing_get_info (GstTwoflowSmoothing * sm,
    GstTwoflowSmoothingInfo * info);

const guint64 * gst_twoflow_smoothing_get_rates (GstTwoflowSmoothing * sm,
    guint * n_windows);
guint gst_twoflow_smoothing_window_at (GstTwoflowSmoothing * sm,
    GstClockTime dts);
guint64 gst_twoflow_smoothing_rate_at (GstTwoflowSmoothing * sm,
    GstClockTime dts);
guint64 gst_twoflow_smoothing_rate_at_time (GstTwoflowSmoothing * sm,
    GstClockTime t, GstClockTime * next_change);

guint gst_twoflow_smoothing_n_frames (GstTwoflowSmoothing * sm);
gboolean gst_twoflow_smoothing_get_frame (GstTwoflowSmoothing * sm, guint i,
    GstClockTime * dts, guint64 * bytes, gboolean * essential);

guint64 * gst_twoflow_smoothing_segment_rates (GstTwoflowSmoothing * sm,
    GstClockTime segment_duration, gdouble p_hat, guint * n_segments);

/* The bytes the rUDP sender's bucket counts for one enhanced record of
 * @record_bytes cut into RTP packets of at most @mtu bytes (RTP and
 * rtpgstpay headers, 20 bytes, per packet). */
guint64 gst_twoflow_smoothing_wire_bytes (guint64 record_bytes, guint mtu);

G_END_DECLS

#endif
