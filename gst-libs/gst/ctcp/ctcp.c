/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — cTCP sans-IO core
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>
#include "ctcp.h"

/* Longest burst the pacer may bank while the window or the socket holds
 * it back: one second of the target rate (at least a few packets). */
#define PACE_BANK GST_SECOND
#define PACE_MIN_PACKETS 4
#define DEFAULT_MSS 1448

/* ------------------------------------------------------------------ */
/* Event detector */

void
gst_ctcp_event_detector_init (GstCtcpEventDetector * det)
{
  memset (det, 0, sizeof (*det));
  det->prev_time = GST_CLOCK_TIME_NONE;
}

static gboolean
in_loss_state (guint8 ca)
{
  return ca == GST_CTCP_CA_RECOVERY || ca == GST_CTCP_CA_LOSS;
}

/**
 * gst_ctcp_tlp_allowance:
 * @gap: time between two TCP_INFO snapshots
 * @srtt: smoothed RTT
 *
 * Returns: how many retransmissions tail-loss probes can account for in
 * @gap with the socket open (no recovery, no RTO): one probe may be out
 * at a time and Linux arms the probe timer at 2·srtt + 2 ms at least
 * (tcp_schedule_loss_probe), so 1 + gap/(2·srtt + 2 ms).
 */
guint
gst_ctcp_tlp_allowance (GstClockTime gap, GstClockTime srtt)
{
  GstClockTime pto;

  if (!GST_CLOCK_TIME_IS_VALID (srtt))
    srtt = 0;
  pto = 2 * srtt + 2 * GST_MSECOND;
  if (!GST_CLOCK_TIME_IS_VALID (gap))
    return 1;
  return 1 + (guint) MIN (gap / pto, G_MAXUINT16);
}

/* A multiplicative decrease between two snapshots: ssthresh fell below
 * both its old value and the old window. Loss responses (Reno, CUBIC)
 * set ssthresh = beta·cwnd; leaving slow start (HyStart) sets it to the
 * window itself, not below; BBR leaves it alone. */
static gboolean
ssthresh_cut (const GstCtcpTcpInfo * prev, const GstCtcpTcpInfo * info)
{
  return info->snd_ssthresh > 0 && info->snd_ssthresh < prev->snd_ssthresh
      && info->snd_ssthresh < MAX (prev->snd_cwnd, 2);
}

/* Compares @info with the previous snapshot and returns, in order, the
 * events that happened in between. State transitions are authoritative;
 * the cumulative counters catch RTOs (and whole fast recoveries) that
 * started and ended between two snapshots. Every rexmt/dupack episode is
 * closed by exactly one recovered. */
guint
gst_ctcp_event_detector_push (GstCtcpEventDetector * det,
    const GstCtcpTcpInfo * info, GstClockTime now,
    GstTwoflowCongestionType events[GST_CTCP_MAX_EVENTS])
{
  const GstCtcpTcpInfo *prev = &det->prev;
  guint n = 0, rtos = 0;
  guint32 rexmits;

  if (!det->have_prev) {
    det->prev = *info;
    det->prev_time = now;
    det->have_prev = TRUE;
    /* joined in the middle of an episode: report it */
    if (in_loss_state (info->ca_state)) {
      events[n++] = info->ca_state == GST_CTCP_CA_LOSS ?
          GST_TWOFLOW_CONGESTION_REXMT : GST_TWOFLOW_CONGESTION_DUPACK;
      det->in_episode = TRUE;
    }
    goto count;
  }

  if (info->has_total_rto && prev->has_total_rto)
    rtos = (guint16) (info->total_rto - prev->total_rto);
  else if (info->retransmits > prev->retransmits)
    rtos = info->retransmits - prev->retransmits;
  else if (info->ca_state == GST_CTCP_CA_LOSS
      && prev->ca_state != GST_CTCP_CA_LOSS)
    rtos = 1;
  /* an outage of many minutes still reports a bounded burst */
  rtos = MIN (rtos, GST_CTCP_MAX_EVENTS - 3);
  rexmits = info->total_retrans - prev->total_retrans;

  if (info->ca_state == GST_CTCP_CA_RECOVERY
      && prev->ca_state != GST_CTCP_CA_RECOVERY) {
    events[n++] = GST_TWOFLOW_CONGESTION_DUPACK;
    det->in_episode = TRUE;
  } else if (rtos == 0 && rexmits > 0 && !in_loss_state (info->ca_state)
      && !in_loss_state (prev->ca_state)
      && (ssthresh_cut (prev, info)
          || rexmits > gst_ctcp_tlp_allowance (GST_CLOCK_TIME_IS_VALID
                  (det->prev_time) && now > det->prev_time ?
                  now - det->prev_time : 0,
                  (GstClockTime) prev->rtt_us * GST_USECOND))) {
    /* a fast recovery that began and ended while we were not looking:
     * retransmissions with the socket open at both ends and no RTO are
     * either tail-loss probes or a recovery; only a cut of ssthresh or
     * more retransmissions than probes could have sent tell a recovery
     * (a poll merely later than a sub-millisecond loopback RTT does
     * not) */
    events[n++] = GST_TWOFLOW_CONGESTION_DUPACK;
    det->in_episode = TRUE;
    det->inferred++;
  }
  while (rtos-- > 0) {
    events[n++] = GST_TWOFLOW_CONGESTION_REXMT;
    det->in_episode = TRUE;
  }
  if (det->in_episode && !in_loss_state (info->ca_state)) {
    events[n++] = GST_TWOFLOW_CONGESTION_RECOVERED;
    det->in_episode = FALSE;
  }

  det->prev = *info;
  det->prev_time = now;

count:
  for (guint i = 0; i < n; i++) {
    switch (events[i]) {
      case GST_TWOFLOW_CONGESTION_REXMT:
        det->rexmt++;
        break;
      case GST_TWOFLOW_CONGESTION_DUPACK:
        det->dupack++;
        break;
      case GST_TWOFLOW_CONGESTION_RECOVERED:
        det->recovered++;
        break;
      default:
        break;
    }
  }
  return n;
}

/* ------------------------------------------------------------------ */
/* Formulas */

/**
 * gst_ctcp_target_rate:
 * @size: segment size S, bytes
 * @duration: segment duration T
 * @loss_threshold: p̂
 *
 * Returns: `S/(T(1−p̂))` in bytes/s (at least 1 for a non-empty segment).
 */
guint64
gst_ctcp_target_rate (guint64 size, GstClockTime duration,
    gdouble loss_threshold)
{
  gdouble t, r;

  if (size == 0)
    return 0;
  if (!GST_CLOCK_TIME_IS_VALID (duration) || duration == 0)
    return G_MAXUINT32;
  loss_threshold = CLAMP (loss_threshold, 0.0, 0.9);
  t = (gdouble) duration / GST_SECOND;
  r = ceil ((gdouble) size / (t * (1.0 - loss_threshold)));
  return MAX ((guint64) r, 1);
}

/**
 * gst_ctcp_window_target:
 *
 * Returns: the paper's W_target in packets: `target·RTT/(0.75·MSS)`
 * after an interval with losses, else `target·RTT/MSS`, rounded up, at
 * least 2. (The controller adds %GST_CTCP_WINDOW_ALLOWANCE to it.)
 */
guint32
gst_ctcp_window_target (guint64 target_rate, GstClockTime rtt, guint32 mss,
    gboolean losses)
{
  gdouble w;

  if (mss == 0)
    mss = DEFAULT_MSS;
  w = (gdouble) target_rate * ((gdouble) rtt / GST_SECOND) / mss;
  if (losses)
    w /= 0.75;
  w = ceil (w - 1e-9);
  return (guint32) CLAMP (w, 2.0, (gdouble) G_MAXINT32);
}

/* ------------------------------------------------------------------ */
/* RTT histogram of an adjustment interval */

void
gst_ctcp_rtt_histogram_reset (GstCtcpRttHistogram * h)
{
  memset (h, 0, sizeof (*h));
}

void
gst_ctcp_rtt_histogram_add (GstCtcpRttHistogram * h, guint32 rtt_us)
{
  gint i;

  if (rtt_us == 0)
    return;
  i = (gint) floor (log2 ((gdouble) rtt_us) *
      GST_CTCP_RTT_BUCKETS_PER_OCTAVE);
  h->count[CLAMP (i, 0, GST_CTCP_RTT_BUCKETS - 1)]++;
  h->n++;
  h->sum_us += rtt_us;
  h->max_us = MAX (h->max_us, rtt_us);
}

/**
 * gst_ctcp_rtt_histogram_percentile:
 * @q: 0…1
 *
 * Returns: the @q quantile of the readings: the upper edge of its bucket
 * (at most 4.4 % high), never above the largest reading;
 * GST_CLOCK_TIME_NONE without readings.
 */
GstClockTime
gst_ctcp_rtt_histogram_percentile (const GstCtcpRttHistogram * h, gdouble q)
{
  guint64 rank, seen = 0;
  guint i;

  if (h->n == 0)
    return GST_CLOCK_TIME_NONE;
  rank = (guint64) ceil (CLAMP (q, 0.0, 1.0) * h->n);
  rank = MAX (rank, 1);
  for (i = 0; i < GST_CTCP_RTT_BUCKETS; i++) {
    seen += h->count[i];
    if (seen >= rank)
      break;
  }
  return (GstClockTime) MIN (exp2 ((gdouble) (i + 1) /
          GST_CTCP_RTT_BUCKETS_PER_OCTAVE), (gdouble) h->max_us) *
      GST_USECOND;
}

/* ------------------------------------------------------------------ */
/* Controller */

void
gst_ctcp_controller_init (GstCtcpController * c, gboolean capped,
    GstClockTime adjustment_interval)
{
  memset (c, 0, sizeof (*c));
  c->capped = capped;
  c->adjustment_interval = adjustment_interval;
  c->mss = DEFAULT_MSS;
  c->srtt = GST_CLOCK_TIME_NONE;
  c->w_rtt = GST_CLOCK_TIME_NONE;
  c->interval_start = GST_CLOCK_TIME_NONE;
  c->pace_time = GST_CLOCK_TIME_NONE;
}

/* W_target (packets) for @rate with the robust RTT: the paper's formula
 * plus the delayed-ACK allowance. */
static guint32
controller_window (const GstCtcpController * c, guint64 rate,
    GstClockTime rtt, gboolean losses)
{
  return gst_ctcp_window_target (rate, rtt, c->mss, losses) +
      GST_CTCP_WINDOW_ALLOWANCE;
}

static void
refill (GstCtcpController * c, GstClockTime now)
{
  gdouble bank;

  if (!GST_CLOCK_TIME_IS_VALID (c->pace_time)) {
    c->pace_time = now;
    /* the first packet goes at once */
    c->tokens = gst_ctcp_controller_min_write (c);
    return;
  }
  if (now > c->pace_time) {
    c->tokens += (gdouble) c->target_rate * (now - c->pace_time) / GST_SECOND;
    c->pace_time = now;
  }
  bank = MAX ((gdouble) c->target_rate * PACE_BANK / GST_SECOND,
      (gdouble) PACE_MIN_PACKETS * gst_ctcp_controller_min_write (c));
  if (c->tokens > bank)
    c->tokens = bank;
}

void
gst_ctcp_controller_set_target (GstCtcpController * c, guint64 rate,
    GstClockTime now)
{
  if (rate == c->target_rate)
    return;
  /* tokens earned so far at the old rate stay */
  if (c->target_rate > 0)
    refill (c, now);
  c->target_rate = rate;
  /* a new target (a new segment, a catch-up) takes effect on the window
   * at once if one exists, with the RTT the window was last sized from */
  if (c->w_target > 0 && rate > 0) {
    GstClockTime rtt = GST_CLOCK_TIME_IS_VALID (c->w_rtt) ? c->w_rtt :
        c->srtt;

    if (GST_CLOCK_TIME_IS_VALID (rtt))
      c->w_target = controller_window (c, rate, rtt, c->w_losses);
  }
}

/**
 * gst_ctcp_controller_restart_pacing:
 *
 * Forgets what the pacer banked (e.g. while waiting for the next segment
 * to be complete) so a new segment starts smoothly, not with a burst.
 */
void
gst_ctcp_controller_restart_pacing (GstCtcpController * c, GstClockTime now)
{
  c->pace_time = now;
  c->tokens = MIN (c->tokens, (gdouble) gst_ctcp_controller_min_write (c));
}

/* W_target = target·RTT/MSS (/0.75 after losses) with RTT = the 95th
 * percentile of the interval's srtt readings, not their mean: a window
 * sized for the mean RTT delivers less than the target whenever the RTT
 * is above it (a competitor's queue makes it swing by ±20 %), and the
 * deficit is never made up. */
static void
close_interval (GstCtcpController * c, GstClockTime now)
{
  if (c->capped && c->target_rate > 0 && c->interval_rtt.n > 0) {
    c->w_rtt = gst_ctcp_rtt_histogram_percentile (&c->interval_rtt,
        GST_CTCP_RTT_PERCENTILE);
    c->w_losses = c->interval_losses;
    c->w_target = controller_window (c, c->target_rate, c->w_rtt,
        c->w_losses);
    c->adjustments++;
  }
  c->interval_start = now;
  gst_ctcp_rtt_histogram_reset (&c->interval_rtt);
  c->interval_losses = FALSE;
}

void
gst_ctcp_controller_update (GstCtcpController * c,
    const GstCtcpTcpInfo * info, GstClockTime now)
{
  if (info->snd_mss > 0)
    c->mss = info->snd_mss;
  c->cwnd = info->snd_cwnd;
  if (info->rtt_us > 0)
    c->srtt = info->rtt_us * GST_USECOND;

  if (!c->have_info) {
    c->have_info = TRUE;
    c->last_total_retrans = info->total_retrans;
    c->last_total_rto = info->total_rto;
    c->interval_start = now;
  }
  gst_ctcp_rtt_histogram_add (&c->interval_rtt, info->rtt_us);
  if (info->total_retrans != c->last_total_retrans
      || info->total_rto != c->last_total_rto
      || in_loss_state (info->ca_state))
    c->interval_losses = TRUE;
  c->last_total_retrans = info->total_retrans;
  c->last_total_rto = info->total_rto;

  if (now >= c->interval_start + c->adjustment_interval)
    close_interval (c, now);
}

/**
 * gst_ctcp_controller_window_bytes:
 *
 * Returns: the effective window min(cwnd, W_target) in bytes, or
 * G_MAXUINT64 while there is no W_target (plain TCP, first interval).
 */
guint64
gst_ctcp_controller_window_bytes (const GstCtcpController * c)
{
  guint64 w;

  if (!c->capped || c->w_target == 0)
    return G_MAXUINT64;
  w = c->w_target;
  if (c->cwnd > 0 && c->cwnd < w)
    w = c->cwnd;
  return w * c->mss;
}

/**
 * gst_ctcp_controller_allowance:
 * @inflight: bytes sent and not acknowledged (SIOCOUTQ − SIOCOUTQNSD)
 * @unsent: bytes in the socket not sent yet (SIOCOUTQNSD)
 *
 * Returns: how many bytes may be written now: what the pacer has earned,
 * no more than keeps in-flight plus unsent bytes under the effective
 * window, and no more than one write's worth (min_write) waiting unsent
 * in the kernel: whatever sits there leaves as soon as cwnd and the
 * kernel's pacing allow, and the window is only ours to enforce before
 * bytes enter the socket. (Counting the unsent bytes against the window
 * as well would charge the kernel's pacing delay, which srtt does not
 * contain, to W_target.)
 */
guint64
gst_ctcp_controller_allowance (GstCtcpController * c, guint64 inflight,
    guint64 unsent, GstClockTime now)
{
  guint64 win, room, queue_room, mw;

  if (!c->capped)
    return G_MAXUINT64;
  if (c->target_rate == 0)
    return 0;
  refill (c, now);
  mw = gst_ctcp_controller_min_write (c);
  win = gst_ctcp_controller_window_bytes (c);
  room = win > inflight ? win - inflight : 0;
  queue_room = unsent < mw ? mw - unsent : 0;
  /* the window bounds what is in flight: allow a packet that fills it */
  return MIN ((guint64) c->tokens, MIN (room, queue_room));
}

/**
 * gst_ctcp_controller_min_write:
 *
 * Returns: the smallest write worth waking up for: one MSS, or 100 ms of
 * the target rate when that is smaller (loopback's 64 kB MSS), never
 * under 1448 bytes.
 */
guint64
gst_ctcp_controller_min_write (const GstCtcpController * c)
{
  guint64 w = MAX (c->target_rate / 10, 1448);

  return MIN (w, (guint64) c->mss);
}

void
gst_ctcp_controller_consume (GstCtcpController * c, guint64 bytes)
{
  if (c->capped)
    c->tokens -= bytes;
}

/**
 * gst_ctcp_controller_pace_wakeup:
 * @want: bytes the caller would like to write
 *
 * Returns: when the pacer will have earned @want bytes (now if it has),
 * GST_CLOCK_TIME_NONE if it never will (no target).
 */
GstClockTime
gst_ctcp_controller_pace_wakeup (const GstCtcpController * c, guint64 want,
    GstClockTime now)
{
  gdouble missing;

  if (!c->capped || c->tokens >= want)
    return now;
  if (c->target_rate == 0)
    return GST_CLOCK_TIME_NONE;
  missing = want - c->tokens;
  return now + (GstClockTime) ceil (missing * GST_SECOND / c->target_rate);
}

/**
 * gst_ctcp_controller_next_write:
 * @inflight: bytes sent and not acknowledged
 * @unsent: bytes in the socket not sent yet
 * @want: bytes the caller would like to write
 *
 * Returns: when a write of @want bytes may be possible again: when the
 * pacer will have earned it; GST_CLOCK_TIME_NONE while the window is full
 * (only an acknowledgement, seen by the next poll, makes room); half a
 * packet time at the target rate from @now while the kernel still holds
 * the last write (it paces at 1.25 × target, so it will have sent it by
 * then — waiting for the next poll instead would cap the rate at one
 * packet per poll, below a catch-up rate at long RTTs); @now if nothing
 * holds it back.
 */
GstClockTime
gst_ctcp_controller_next_write (const GstCtcpController * c, guint64 inflight,
    guint64 unsent, guint64 want, GstClockTime now)
{
  GstClockTime p = gst_ctcp_controller_pace_wakeup (c, want, now);
  guint64 win = gst_ctcp_controller_window_bytes (c), mw;

  if (!c->capped || p > now || !GST_CLOCK_TIME_IS_VALID (p))
    return p;
  mw = gst_ctcp_controller_min_write (c);
  if (win != G_MAXUINT64 && inflight + MIN (want, mw) > win)
    return GST_CLOCK_TIME_NONE;
  if (unsent + MIN (want, mw) > mw)
    return now + MAX (GST_MSECOND, gst_util_uint64_scale (mw, GST_SECOND,
            2 * MAX (c->target_rate, 1)));
  return now;
}

/**
 * gst_ctcp_poll_interval:
 *
 * Returns: how often to read TCP_INFO while data is in flight: a quarter
 * of the RTT, between 1 ms and 50 ms (10 ms before the first RTT sample).
 */
GstClockTime
gst_ctcp_poll_interval (GstClockTime srtt)
{
  if (!GST_CLOCK_TIME_IS_VALID (srtt) || srtt == 0)
    return 10 * GST_MSECOND;
  return CLAMP (srtt / 4, GST_MSECOND, 50 * GST_MSECOND);
}

/* ------------------------------------------------------------------ */
/* Segments and deadlines */

void
gst_ctcp_schedule_init (GstCtcpSchedule * s, GstClockTime segment_duration)
{
  memset (s, 0, sizeof (*s));
  s->segment_duration = segment_duration;
  s->t0 = GST_CLOCK_TIME_NONE;
  s->segments = g_array_new (FALSE, TRUE, sizeof (GstCtcpSegment));
  s->min_slack = G_MAXINT64;
  s->lead = segment_duration;
}

/**
 * gst_ctcp_schedule_set_startup:
 * @lead: time from when the first segment is ready until it starts
 *   playing (0: one segment duration)
 * @startup_rate: bytes/s of the start-up ramp, 0: none
 * @startup_factor: the ramp is at least this × a segment's nominal rate
 *
 * Without a prefix the flow cannot be a segment ahead at the start: with
 * a lead shorter than a segment, a segment that has less than its
 * duration left before it plays is sent at the ramp's rate (and judged
 * against the end of its playback), until the flow is a segment ahead
 * (docs/system.md, "Start-up"). Call before the first segment.
 */
void
gst_ctcp_schedule_set_startup (GstCtcpSchedule * s, GstClockTime lead,
    guint64 startup_rate, gdouble startup_factor)
{
  s->lead = lead > 0 ? lead : s->segment_duration;
  s->startup_rate = startup_rate;
  s->startup_factor = MAX (startup_factor, 1.0);
}

void
gst_ctcp_schedule_clear (GstCtcpSchedule * s)
{
  if (s->segments)
    g_array_free (s->segments, TRUE);
  s->segments = NULL;
}

/**
 * gst_ctcp_schedule_add:
 * @number: the segment's number (timestamp / segment duration)
 * @start: stream offset of its first byte
 * @now: when it became ready to be sent
 *
 * Returns: the new segment, valid until the next call.
 *
 * Segment k's deadline is `t0 + lead + (k − k0)·T`: t0 is when the first
 * segment k0 became ready; with the default lead T every segment has one
 * segment duration, in order, to arrive before it is played.
 */
GstCtcpSegment *
gst_ctcp_schedule_add (GstCtcpSchedule * s, guint32 number, guint64 start,
    GstClockTime now)
{
  GstCtcpSegment seg = { 0, };

  if (!GST_CLOCK_TIME_IS_VALID (s->t0)) {
    s->t0 = now;
    s->first_number = number;
  }
  seg.number = number;
  seg.start = start;
  seg.end = start;
  seg.duration = s->segment_duration;
  seg.ready = now;
  seg.deadline = s->t0 + s->lead + (number >= s->first_number ?
      (guint64) (number - s->first_number) * s->segment_duration : 0);
  seg.done = GST_CLOCK_TIME_NONE;
  g_array_append_val (s->segments, seg);
  return &g_array_index (s->segments, GstCtcpSegment, s->segments->len - 1);
}

/* The newest segment (valid until the next gst_ctcp_schedule_add), or NULL */
GstCtcpSegment *
gst_ctcp_schedule_last (GstCtcpSchedule * s)
{
  if (s->segments->len == 0)
    return NULL;
  return &g_array_index (s->segments, GstCtcpSegment, s->segments->len - 1);
}

/* Completes the newest segment: its end offset and its duration (shorter
 * than the segment duration for the last one of a stream). */
void
gst_ctcp_schedule_complete (GstCtcpSchedule * s, guint64 end,
    GstClockTime duration)
{
  GstCtcpSegment *seg = gst_ctcp_schedule_last (s);

  g_return_if_fail (seg != NULL);
  seg->end = end;
  seg->complete = TRUE;
  if (GST_CLOCK_TIME_IS_VALID (duration) && duration > 0)
    seg->duration = MIN (duration, s->segment_duration);
}

/**
 * gst_ctcp_schedule_segment_rate:
 * @max_catch_up: bound of a late segment's rate, as a multiple of
 *   `S/(T(1−p̂))` (1: never above it)
 *
 * Returns: the rate a complete segment starts with: `S/(T(1−p̂))`, where
 * T is its duration, or the time left before its deadline when that is
 * shorter (a late start catches up; never less than T/@max_catch_up).
 */
guint64
gst_ctcp_schedule_segment_rate (const GstCtcpSchedule * s,
    const GstCtcpSegment * seg, gdouble loss_threshold, gdouble max_catch_up,
    GstClockTime now)
{
  GstClockTime t = seg->duration;

  if (seg->deadline > now && seg->deadline - now < t)
    t = seg->deadline - now;
  else if (seg->deadline <= now)
    t = 0;
  t = MAX (t, (GstClockTime) (seg->duration / MAX (max_catch_up, 1.0)));
  return gst_ctcp_target_rate (seg->end - seg->start, t, loss_threshold);
}

/**
 * gst_ctcp_schedule_start_segment:
 *
 * Returns: the rate (bytes/s) a complete segment starts with. Under the
 * start-up ramp (gst_ctcp_schedule_set_startup()), a segment with less
 * than its duration left before its deadline is a ramp segment: the
 * larger of the ramp rate and the factor × its nominal rate, its deadline
 * the end of its playback; else gst_ctcp_schedule_segment_rate().
 */
guint64
gst_ctcp_schedule_start_segment (GstCtcpSchedule * s, GstCtcpSegment * seg,
    gdouble loss_threshold, gdouble max_catch_up, GstClockTime now)
{
  if (s->startup_rate > 0 && seg->deadline < now + seg->duration) {
    guint64 nominal = gst_ctcp_target_rate (seg->end - seg->start,
        seg->duration, loss_threshold);

    seg->ramp = TRUE;
    seg->deadline += seg->duration;
    s->ramp_segments++;
    return MAX (s->startup_rate, (guint64) ceil (nominal * s->startup_factor));
  }
  return gst_ctcp_schedule_segment_rate (s, seg, loss_threshold,
      max_catch_up, now);
}

/**
 * gst_ctcp_schedule_required_rate:
 * @bytes_acked: stream bytes acknowledged so far
 * @rtt: a robust RTT (the larger of srtt and the one W_target uses)
 * @max_catch_up: bound, as a multiple of the nominal `S/(T(1−p̂))`
 *
 * Deadline awareness: a segment behind its schedule needs its residual
 * bytes R (not yet acknowledged) over its residual time, `R/(t_r(1−p̂))`
 * with t_r = deadline − now − 2·RTT (its last byte must be acknowledged,
 * and a loss near the end costs one more round trip).
 *
 * Returns: the rate the segment should be sent at now: the required
 * rate, never below the rate it started with (a segment ahead of its
 * schedule keeps the paper's constant rate), never above @max_catch_up
 * times its nominal rate; quantised to 1/64 of the nominal rate so the
 * kernel's pacing rate is not reset at every poll.
 */
guint64
gst_ctcp_schedule_required_rate (const GstCtcpSchedule * s,
    const GstCtcpSegment * seg, guint64 bytes_acked, GstClockTime rtt,
    gdouble loss_threshold, gdouble max_catch_up, GstClockTime now)
{
  guint64 done, residual, base, cap, nominal, step;
  GstClockTime guard;
  gdouble need;

  nominal = seg->nominal_rate ? seg->nominal_rate :
      gst_ctcp_target_rate (seg->end - seg->start, seg->duration,
      loss_threshold);
  base = MAX (seg->target_rate, nominal);
  cap = (guint64) ceil (nominal * MAX (max_catch_up, 1.0));
  cap = MAX (cap, base);
  done = CLAMP (bytes_acked, seg->start, seg->end);
  residual = seg->end - done;
  if (residual == 0 || cap == base)
    return base;
  guard = GST_CLOCK_TIME_IS_VALID (rtt) ? 2 * rtt : 0;
  if (seg->deadline <= now + guard)
    return cap;
  loss_threshold = CLAMP (loss_threshold, 0.0, 0.9);
  need = residual / ((gdouble) (seg->deadline - now - guard) / GST_SECOND *
      (1.0 - loss_threshold));
  if (need <= base)
    return base;
  if (need >= cap)
    return cap;
  step = MAX (nominal / 64, 1);
  return MIN (cap, (((guint64) ceil (need) + step - 1) / step) * step);
}

/* Marks the segments whose last byte is acknowledged as done.
 * Returns: how many became done. */
guint
gst_ctcp_schedule_acked (GstCtcpSchedule * s, guint64 bytes_acked,
    GstClockTime now)
{
  guint n = 0;

  while (s->first_pending < s->segments->len) {
    GstCtcpSegment *seg = &g_array_index (s->segments, GstCtcpSegment,
        s->first_pending);

    if (!seg->complete || bytes_acked < seg->end)
      break;
    seg->done = now;
    seg->slack = GST_CLOCK_DIFF (now, seg->deadline);
    s->min_slack = MIN (s->min_slack, seg->slack);
    s->segments_done++;
    if (seg->slack < 0)
      s->segments_late++;
    s->first_pending++;
    n++;
  }
  return n;
}
