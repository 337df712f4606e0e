/* twoflow — cTCP sans-IO core
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2 of the License, or (at your option) any later version.
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

/* Compares @info with the previous snapshot and returns, in order, the
 * events that happened in between. State transitions are authoritative;
 * the cumulative counters catch RTOs (and, when the poll came late,
 * whole recoveries) that started and ended between two snapshots. Every
 * rexmt/dupack episode is closed by exactly one recovered. */
guint
gst_ctcp_event_detector_push (GstCtcpEventDetector * det,
    const GstCtcpTcpInfo * info, GstClockTime now,
    GstNetworkCongestionType events[GST_CTCP_MAX_EVENTS])
{
  const GstCtcpTcpInfo *prev = &det->prev;
  guint n = 0, rtos = 0;
  gboolean late;

  if (!det->have_prev) {
    det->prev = *info;
    det->prev_time = now;
    det->have_prev = TRUE;
    /* joined in the middle of an episode: report it */
    if (in_loss_state (info->ca_state)) {
      events[n++] = info->ca_state == GST_CTCP_CA_LOSS ?
          GST_NETWORK_CONGESTION_REXMT : GST_NETWORK_CONGESTION_DUPACK;
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

  late = GST_CLOCK_TIME_IS_VALID (det->prev_time) && now > det->prev_time
      && prev->rtt_us > 0 && now - det->prev_time > prev->rtt_us * GST_USECOND;

  if (info->ca_state == GST_CTCP_CA_RECOVERY
      && prev->ca_state != GST_CTCP_CA_RECOVERY) {
    events[n++] = GST_NETWORK_CONGESTION_DUPACK;
    det->in_episode = TRUE;
  } else if (rtos == 0 && late && !in_loss_state (info->ca_state)
      && !in_loss_state (prev->ca_state)
      && info->total_retrans != prev->total_retrans) {
    /* a fast recovery that began and ended while we were not looking */
    events[n++] = GST_NETWORK_CONGESTION_DUPACK;
    det->in_episode = TRUE;
    det->inferred++;
  }
  while (rtos-- > 0) {
    events[n++] = GST_NETWORK_CONGESTION_REXMT;
    det->in_episode = TRUE;
  }
  if (det->in_episode && !in_loss_state (info->ca_state)) {
    events[n++] = GST_NETWORK_CONGESTION_RECOVERED;
    det->in_episode = FALSE;
  }

  det->prev = *info;
  det->prev_time = now;

count:
  for (guint i = 0; i < n; i++) {
    switch (events[i]) {
      case GST_NETWORK_CONGESTION_REXMT:
        det->rexmt++;
        break;
      case GST_NETWORK_CONGESTION_DUPACK:
        det->dupack++;
        break;
      case GST_NETWORK_CONGESTION_RECOVERED:
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
 * Returns: W_target in packets: `target·RTT/(0.75·MSS)` after an interval
 * with losses, else `target·RTT/MSS`, rounded up, at least 2.
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
  c->interval_start = GST_CLOCK_TIME_NONE;
  c->pace_time = GST_CLOCK_TIME_NONE;
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
  /* a new target takes effect on the window at once if one exists */
  if (c->w_target > 0 && GST_CLOCK_TIME_IS_VALID (c->srtt) && rate > 0)
    c->w_target = gst_ctcp_window_target (rate, c->srtt, c->mss,
        c->interval_losses);
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

static void
close_interval (GstCtcpController * c, GstClockTime now)
{
  if (c->capped && c->target_rate > 0 && c->interval_rtt_n > 0) {
    GstClockTime rtt = c->interval_rtt_sum_us * GST_USECOND /
        c->interval_rtt_n;
    c->w_target = gst_ctcp_window_target (c->target_rate, rtt, c->mss,
        c->interval_losses);
    c->adjustments++;
  }
  c->interval_start = now;
  c->interval_rtt_sum_us = 0;
  c->interval_rtt_n = 0;
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
  if (info->rtt_us > 0) {
    c->interval_rtt_sum_us += info->rtt_us;
    c->interval_rtt_n++;
  }
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
 * Segment k's deadline is `t0 + (k − k0 + 1)·T`: t0 is when the first
 * segment k0 became ready, so every segment has one segment duration,
 * in order, to arrive before it is played.
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
  seg.deadline = s->t0 + (number >= s->first_number ?
      (guint64) (number - s->first_number + 1) * s->segment_duration :
      s->segment_duration);
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
 *
 * Returns: the target rate of a complete segment: `S/(T(1−p̂))`, where T
 * is its duration, or the time left before its deadline when that is
 * shorter (a late start catches up; never less than T/4).
 */
guint64
gst_ctcp_schedule_segment_rate (const GstCtcpSchedule * s,
    const GstCtcpSegment * seg, gdouble loss_threshold, GstClockTime now)
{
  GstClockTime t = seg->duration;

  if (seg->deadline > now && seg->deadline - now < t)
    t = seg->deadline - now;
  else if (seg->deadline <= now)
    t = 0;
  t = MAX (t, seg->duration / 4);
  return gst_ctcp_target_rate (seg->end - seg->start, t, loss_threshold);
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
