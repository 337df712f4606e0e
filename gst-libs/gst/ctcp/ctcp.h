/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — cTCP sans-IO core
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * Controlled TCP ("Providing Controlled Quality Assurance for Streaming
 * Stored-Videos across the Internet Using VPNs") done from user space:
 * per-segment target rates, the adjustment-interval window W_target, the
 * pacing allowance, per-segment deadlines, and the TCP-interactive event
 * detector over successive TCP_INFO snapshots. No sockets, threads or
 * clocks: the caller feeds snapshots and the current time (ns) and asks
 * how much it may write and when to wake up next. See docs/ctcp.md.
 */
#ifndef __GST_CTCP_H__
#define __GST_CTCP_H__

#include <gst/gst.h>
#include <gst/ctcp/ctcp-prelude.h>
#include <gst/twoflow/networkcongestion.h>

G_BEGIN_DECLS

/* Linux tcpi_ca_state values */
typedef enum {
  GST_CTCP_CA_OPEN = 0,
  GST_CTCP_CA_DISORDER = 1,
  GST_CTCP_CA_CWR = 2,
  GST_CTCP_CA_RECOVERY = 3,
  GST_CTCP_CA_LOSS = 4,
} GstCtcpCaState;

/* The part of struct tcp_info the core uses (the element copies it from
 * getsockopt(TCP_INFO); tests make it up). */
typedef struct {
  guint8 ca_state;
  guint8 retransmits;           /* consecutive unrecovered RTOs */
  guint32 snd_mss;
  guint32 rtt_us;               /* smoothed RTT */
  guint32 rttvar_us;
  guint32 snd_cwnd;             /* packets */
  guint32 snd_ssthresh;
  guint32 unacked;              /* packets */
  guint32 lost;
  guint32 total_retrans;        /* cumulative retransmitted segments */
  guint64 bytes_acked;
  guint64 bytes_retrans;
  guint64 delivery_rate;        /* bytes/s */
  gboolean has_total_rto;       /* kernel >= 6.7 */
  guint16 total_rto;            /* cumulative RTOs */
  guint16 total_rto_recoveries;
} GstCtcpTcpInfo;

/* ------------------------------------------------------------------ */
/* Event detector: rexmt / dupack / recovered from snapshot pairs. */

#define GST_CTCP_MAX_EVENTS 8

typedef struct {
  gboolean have_prev;
  GstCtcpTcpInfo prev;
  GstClockTime prev_time;
  gboolean in_episode;          /* rexmt or dupack reported, not recovered */
  guint64 rexmt;                /* events reported so far */
  guint64 dupack;
  guint64 recovered;
  guint64 inferred;             /* dupack episodes found by counters only */
} GstCtcpEventDetector;

TWOFLOW_CTCP_API
guint gst_ctcp_tlp_allowance (GstClockTime gap, GstClockTime srtt);

TWOFLOW_CTCP_API
void gst_ctcp_event_detector_init (GstCtcpEventDetector * det);
TWOFLOW_CTCP_API
guint gst_ctcp_event_detector_push (GstCtcpEventDetector * det,
    const GstCtcpTcpInfo * info, GstClockTime now,
    GstTwoflowCongestionType events[GST_CTCP_MAX_EVENTS]);

/* ------------------------------------------------------------------ */
/* Formulas */

TWOFLOW_CTCP_API
guint64 gst_ctcp_target_rate (guint64 size, GstClockTime duration,
    gdouble loss_threshold);
TWOFLOW_CTCP_API
guint32 gst_ctcp_window_target (guint64 target_rate, GstClockTime rtt,
    guint32 mss, gboolean losses);

/* Packets added to the model's W_target: the receiver's delayed ACK may
 * hold back the acknowledgement of one packet (see docs/ctcp.md). */
#define GST_CTCP_WINDOW_ALLOWANCE 1
/* W_target is sized from this percentile of the interval's srtt readings */
#define GST_CTCP_RTT_PERCENTILE 0.95
/* default bound of the deadline catch-up: rate <= this × S/(T(1−p̂)) */
#define GST_CTCP_DEFAULT_MAX_CATCH_UP 4.0

/* RTT histogram: 1/16-octave buckets from 1 µs to 2^24 µs (16.8 s) */
#define GST_CTCP_RTT_BUCKETS_PER_OCTAVE 16
#define GST_CTCP_RTT_BUCKETS (24 * GST_CTCP_RTT_BUCKETS_PER_OCTAVE)

typedef struct {
  guint32 n;
  guint32 max_us;
  guint64 sum_us;
  guint32 count[GST_CTCP_RTT_BUCKETS];
} GstCtcpRttHistogram;

TWOFLOW_CTCP_API
void gst_ctcp_rtt_histogram_reset (GstCtcpRttHistogram * h);
TWOFLOW_CTCP_API
void gst_ctcp_rtt_histogram_add (GstCtcpRttHistogram * h, guint32 rtt_us);
TWOFLOW_CTCP_API
GstClockTime gst_ctcp_rtt_histogram_percentile (const GstCtcpRttHistogram * h,
    gdouble q);

/* ------------------------------------------------------------------ */
/* Controller: W_target per adjustment interval and the pacing allowance */

typedef struct {
  /* configuration */
  gboolean capped;              /* FALSE: plain TCP, no window nor pacing */
  GstClockTime adjustment_interval;

  /* current target */
  guint64 target_rate;          /* bytes/s; 0 = none */
  guint32 w_target;             /* packets; 0 = not yet computed */
  GstClockTime w_rtt;           /* the robust RTT W_target was sized from */
  gboolean w_losses;            /* ... and whether that interval had losses */
  guint32 mss;
  guint32 cwnd;
  GstClockTime srtt;

  /* the running adjustment interval */
  GstClockTime interval_start;
  GstCtcpRttHistogram interval_rtt;
  gboolean interval_losses;
  guint32 last_total_retrans;
  guint16 last_total_rto;
  gboolean have_info;
  guint64 adjustments;

  /* pacing: a token bucket at the target rate */
  GstClockTime pace_time;
  gdouble tokens;
} GstCtcpController;

TWOFLOW_CTCP_API
void gst_ctcp_controller_init (GstCtcpController * c, gboolean capped,
    GstClockTime adjustment_interval);
TWOFLOW_CTCP_API
void gst_ctcp_controller_set_target (GstCtcpController * c, guint64 rate,
    GstClockTime now);
void gst_ctcp_controller_restart_pacing (GstCtcpController * c,
    GstClockTime now);
TWOFLOW_CTCP_API
void gst_ctcp_controller_update (GstCtcpController * c,
    const GstCtcpTcpInfo * info, GstClockTime now);
TWOFLOW_CTCP_API
guint64 gst_ctcp_controller_window_bytes (const GstCtcpController * c);
TWOFLOW_CTCP_API
guint64 gst_ctcp_controller_allowance (GstCtcpController * c,
    guint64 inflight, guint64 unsent, GstClockTime now);
TWOFLOW_CTCP_API
void gst_ctcp_controller_consume (GstCtcpController * c, guint64 bytes);
guint64 gst_ctcp_controller_min_write (const GstCtcpController * c);
TWOFLOW_CTCP_API
GstClockTime gst_ctcp_controller_pace_wakeup (const GstCtcpController * c,
    guint64 want, GstClockTime now);
GstClockTime gst_ctcp_controller_next_write (const GstCtcpController * c,
    guint64 inflight, guint64 unsent, guint64 want, GstClockTime now);
TWOFLOW_CTCP_API
GstClockTime gst_ctcp_poll_interval (GstClockTime srtt);

/* ------------------------------------------------------------------ */
/* Segments and deadlines */

typedef struct {
  guint32 number;
  guint64 start;                /* byte offsets in the stream */
  guint64 end;                  /* valid once complete */
  gboolean complete;
  GstClockTime duration;
  GstClockTime ready;           /* when it could start to be sent */
  GstClockTime deadline;
  GstClockTime done;            /* when its last byte was acknowledged */
  guint64 nominal_rate;         /* S/(T(1−p̂)) with T its duration */
  guint64 target_rate;          /* the rate it started with */
  gint64 slack;                 /* deadline - done, ns */
  gboolean ramp;                /* sent at the start-up ramp's rate */
} GstCtcpSegment;

typedef struct {
  GstClockTime segment_duration;
  GstClockTime t0;              /* when the first segment became ready */
  guint32 first_number;
  GArray *segments;             /* GstCtcpSegment, oldest first */
  guint first_pending;          /* index of the oldest unacknowledged one */
  guint64 segments_done;
  guint64 segments_late;
  gint64 min_slack;
  /* the start-up ramp (gst_ctcp_schedule_set_startup) */
  GstClockTime lead;            /* t0 to the first segment's playback */
  guint64 startup_rate;         /* bytes/s, 0: no ramp */
  gdouble startup_factor;
  guint64 ramp_segments;
} GstCtcpSchedule;

TWOFLOW_CTCP_API
void gst_ctcp_schedule_init (GstCtcpSchedule * s, GstClockTime segment_duration);
TWOFLOW_CTCP_API
void gst_ctcp_schedule_clear (GstCtcpSchedule * s);
TWOFLOW_CTCP_API
GstCtcpSegment *gst_ctcp_schedule_add (GstCtcpSchedule * s, guint32 number,
    guint64 start, GstClockTime now);
TWOFLOW_CTCP_API
GstCtcpSegment *gst_ctcp_schedule_last (GstCtcpSchedule * s);
TWOFLOW_CTCP_API
void gst_ctcp_schedule_complete (GstCtcpSchedule * s, guint64 end,
    GstClockTime duration);
void gst_ctcp_schedule_set_startup (GstCtcpSchedule * s, GstClockTime lead,
    guint64 startup_rate, gdouble startup_factor);
guint64 gst_ctcp_schedule_start_segment (GstCtcpSchedule * s,
    GstCtcpSegment * seg, gdouble loss_threshold, gdouble max_catch_up,
    GstClockTime now);
TWOFLOW_CTCP_API
guint64 gst_ctcp_schedule_segment_rate (const GstCtcpSchedule * s,
    const GstCtcpSegment * seg, gdouble loss_threshold, gdouble max_catch_up,
    GstClockTime now);
TWOFLOW_CTCP_API
guint64 gst_ctcp_schedule_required_rate (const GstCtcpSchedule * s,
    const GstCtcpSegment * seg, guint64 bytes_acked, GstClockTime rtt,
    gdouble loss_threshold, gdouble max_catch_up, GstClockTime now);
TWOFLOW_CTCP_API
guint gst_ctcp_schedule_acked (GstCtcpSchedule * s, guint64 bytes_acked,
    GstClockTime now);

/* ------------------------------------------------------------------ */
/* The sender: all of the above behind one sans-IO contract. The caller
 * (ctcpsink) owns the socket and the data; it tells the sender what it
 * accepted (handle_buffer / handle_eos), what the kernel reports
 * (handle_tcp_info), what it wrote (handle_written), and asks what to do
 * now (poll) and when to come back (next_wakeup). */

typedef struct _GstCtcpSender GstCtcpSender;

/**
 * GstCtcpSenderConfig:
 * @capped: FALSE: plain TCP (no window, no pacing, no held segments)
 * @segment_duration: T
 * @loss_threshold: p̂ of S/(T(1−p̂))
 * @adjustment_interval: how often W_target is recomputed
 * @fixed_rate: bit/s; 0 derives each segment's rate from its size
 * @max_catch_up: bound of a late segment's rate, × S/(T(1−p̂))
 * @lead: when the first segment starts playing after it became ready
 *   (0: one segment duration, the paper's stagger)
 * @startup_rate: bit/s, the start-up ramp (0: none): a segment with less
 *   than its duration left before it plays goes at the larger of this and
 *   @startup_factor × S/(T(1−p̂)), until the flow is a segment ahead
 * @startup_factor: see @startup_rate
 */
typedef struct {
  gboolean capped;
  GstClockTime segment_duration;
  gdouble loss_threshold;
  GstClockTime adjustment_interval;
  guint64 fixed_rate;
  gdouble max_catch_up;
  GstClockTime lead;
  guint64 startup_rate;
  gdouble startup_factor;
} GstCtcpSenderConfig;

/* Largest single write the sender allows. */
#define GST_CTCP_SENDER_MAX_WRITE (64 * 1024)
/* Streaming (non-holding) modes accept this much ahead of the socket. */
#define GST_CTCP_SENDER_MAX_QUEUED_TCP (1024 * 1024)
/* The kernel paces at this multiple of the target (SO_MAX_PACING_RATE). */
#define GST_CTCP_PACING_HEADROOM 1.25
/* deadline-slack entries kept in the stats */
#define GST_CTCP_SENDER_MAX_SLACKS 1024

typedef struct {
  GstTwoflowCongestionType type;
  guint64 bitrate;              /* estimated, bit/s */
  GstClockTime srtt;
} GstCtcpEvent;

/**
 * GstCtcpSenderOutput:
 * @write: bytes that may be written now, from the next unwritten stream
 *   byte (0: none); never across a segment boundary
 * @pacing_rate: the rate the kernel should pace at (SO_MAX_PACING_RATE),
 *   bytes/s; 0: no limit
 * @events: congestion events detected since the last poll, in order
 * @finished: EOS was seen and every byte is acknowledged
 */
typedef struct {
  guint64 write;
  guint64 pacing_rate;
  guint n_events;
  GstCtcpEvent events[2 * GST_CTCP_MAX_EVENTS];
  gboolean finished;
} GstCtcpSenderOutput;

TWOFLOW_CTCP_API
GstCtcpSender *gst_ctcp_sender_new (const GstCtcpSenderConfig * config);
TWOFLOW_CTCP_API
void gst_ctcp_sender_free (GstCtcpSender * s);
TWOFLOW_CTCP_API
gboolean gst_ctcp_sender_handle_buffer (GstCtcpSender * s, GstClockTime ts,
    GstClockTime duration, guint64 size, GstClockTime now);
TWOFLOW_CTCP_API
void gst_ctcp_sender_handle_eos (GstCtcpSender * s, GstClockTime now);
TWOFLOW_CTCP_API
void gst_ctcp_sender_handle_tcp_info (GstCtcpSender * s,
    const GstCtcpTcpInfo * info, guint64 outq, guint64 inflight,
    GstClockTime now);
TWOFLOW_CTCP_API
void gst_ctcp_sender_handle_written (GstCtcpSender * s, guint64 bytes,
    GstClockTime now);
TWOFLOW_CTCP_API
void gst_ctcp_sender_set_record_framing (GstCtcpSender * s, guint overhead,
    guint record_size);
TWOFLOW_CTCP_API
void gst_ctcp_sender_poll (GstCtcpSender * s, GstClockTime now,
    GstCtcpSenderOutput * out);
TWOFLOW_CTCP_API
GstClockTime gst_ctcp_sender_next_wakeup (GstCtcpSender * s,
    GstClockTime now);
TWOFLOW_CTCP_API
gboolean gst_ctcp_sender_is_full (const GstCtcpSender * s);
guint64 gst_ctcp_sender_estimated_bitrate (const GstCtcpSender * s);
TWOFLOW_CTCP_API
GstStructure *gst_ctcp_sender_get_stats (const GstCtcpSender * s);

G_END_DECLS

#endif
