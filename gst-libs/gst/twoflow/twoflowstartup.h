/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The start-up ramp (sans-IO): without a pre-stored prefix the essential
 * flow cannot be a whole segment ahead when playback starts. Instead of
 * starting playback one segment after the essential flow (lead T), the
 * essential sender sends at a catch-up rate R until it is a segment ahead,
 * and playback starts after the shortest lead L for which every essential
 * record sent under that ramp is there, a margin before it plays. From the
 * video scan (each essential record's decode time and size) this core
 * picks R and L as the cTCP sender will run them (gst_ctcp_sender with
 * `lead` and `startup-rate`); docs/system.md, "Start-up".
 */
#ifndef __GST_TWOFLOW_STARTUP_H__
#define __GST_TWOFLOW_STARTUP_H__

#include <gst/gst.h>
#include <gst/twoflow/twoflow-prelude.h>

G_BEGIN_DECLS

/**
 * GstTwoflowStartupRecord: (skip)
 * @ts: the record's decode time (audio: its PTS), any origin
 * @bytes: the bytes the essential sender sends for it
 */
typedef struct {
  GstClockTime ts;
  guint64 bytes;
} GstTwoflowStartupRecord;

/**
 * GstTwoflowStartupConfig: (skip)
 * @segment_duration: T
 * @p_hat: cTCP's p̂: a segment's nominal rate is S/(T(1−p̂))
 * @factor: during the ramp a segment goes at least @factor × its nominal
 *   rate (>= 1)
 * @max_rate: bit/s, the ramp rate's ceiling (0: none)
 * @target_lead: the lead to aim at: R is raised (up to @max_rate) until
 *   the lead it needs is no longer than this
 * @margin: each record must have left the sender this long before it
 *   plays (the path's RTT and jitter)
 * @start: the stream's first timestamp (segment 0 starts there and plays
 *   at L)
 */
typedef struct {
  GstClockTime segment_duration;
  gdouble p_hat;
  gdouble factor;
  guint64 max_rate;
  GstClockTime target_lead;
  GstClockTime margin;
  GstClockTime start;
} GstTwoflowStartupConfig;

/**
 * GstTwoflowStartupPlan: (skip)
 * @rate: R, bit/s
 * @lead: L, ns: when the stream's time 0 plays after the essential flow
 *   starts (at least the target lead)
 * @ramp_segments: segments sent at the ramp rate
 * @ahead_at: ns after the start: when the first segment sent at its
 *   nominal rate starts (the flow is a segment ahead from then on)
 * @min_slack: ns, the least (play time − margin − last byte sent) over
 *   the ramp's records (>= 0)
 */
typedef struct {
  guint64 rate;
  GstClockTime lead;
  guint ramp_segments;
  GstClockTime ahead_at;
  GstClockTimeDiff min_slack;
} GstTwoflowStartupPlan;

TWOFLOW_PRIVATE_API
gboolean gst_twoflow_startup_plan (const GstTwoflowStartupRecord * records,
    guint n_records, const GstTwoflowStartupConfig * config,
    GstTwoflowStartupPlan * plan);

TWOFLOW_PRIVATE_API
gboolean gst_twoflow_startup_check (const GstTwoflowStartupRecord * records,
    guint n_records, const GstTwoflowStartupConfig * config, guint64 rate,
    GstClockTime lead, GstTwoflowStartupPlan * plan);

G_END_DECLS

#endif
