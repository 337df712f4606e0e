/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the cTCP sender, sans-IO
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * Everything ctcpsink decides, behind one opaque struct: segment
 * numbering (the project's one, gst_twoflow_segment_number()), holding a
 * segment until its size is known, the deadline schedule, each segment's
 * target and catch-up rate, the controller (W_target, pacer), the event
 * detector, how much may be written now and when to look again, and the
 * statistics. The caller does the I/O and reads the clock.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/twoflow/twoflowsequencer.h>
#include "ctcp.h"

GST_DEBUG_CATEGORY_STATIC (ctcp_sender_debug);
#define GST_CAT_DEFAULT ctcp_sender_debug

struct _GstCtcpSender
{
  GstCtcpSenderConfig cfg;
  gboolean hold;                /* hold segments until complete (rate from S) */
  guint64 fixed_rate;           /* bytes/s, 0: none */

  GstCtcpController ctl;
  GstCtcpEventDetector det;
  GstCtcpSchedule sched;

  /* the segment being received */
  gboolean have_segment;
  guint32 segment_no;
  GstClockTime first_ts;
  GstClockTime segment_end_ts;
  gboolean eos;

  /* stream offsets */
  guint64 accepted;             /* bytes handed to handle_buffer */
  guint64 sendable;             /* end of what may be sent (held: complete segments) */
  guint64 written;

  /* the segment whose bytes are being written */
  guint send_index;
  gboolean send_started;

  /* the last TCP_INFO reading */
  GstCtcpTcpInfo info;
  gboolean have_info;
  guint64 acked_base;
  guint64 acked;
  guint64 outq;
  guint64 inflight;
  guint32 initial_total_retrans;
  guint16 initial_total_rto;
  guint64 polls;

  GArray *pending;              /* GstCtcpEvent not yet polled */

  /* record framing (TLS): the kernel counts wire bytes */
  guint record_overhead;        /* bytes added per record, 0: none */
  guint record_size;            /* most plaintext bytes per record */
  guint64 wire_written;         /* wire bytes of what was written */
  guint64 wire_acked;           /* of the last reading */
  GArray *wlog;                 /* WireMark of writes not wholly acked */
  guint64 wlog_stream;          /* stream and wire offsets where the log */
  guint64 wlog_wire;            /* starts (all before are acknowledged) */
};

typedef struct {
  guint64 stream_end;
  guint64 wire_end;
} WireMark;

/**
 * gst_ctcp_sender_new:
 *
 * Returns: (transfer full): a sender with nothing accepted or sent.
 */
GstCtcpSender *
gst_ctcp_sender_new (const GstCtcpSenderConfig * config)
{
  GstCtcpSender *s = g_new0 (GstCtcpSender, 1);

  GST_DEBUG_CATEGORY_INIT (ctcp_sender_debug, "ctcp", 0, "cTCP sender core");
  s->cfg = *config;
  s->fixed_rate = config->fixed_rate / 8;
  s->hold = config->capped && s->fixed_rate == 0;
  gst_ctcp_controller_init (&s->ctl, config->capped,
      config->adjustment_interval);
  gst_ctcp_event_detector_init (&s->det);
  gst_ctcp_schedule_init (&s->sched, config->segment_duration);
  gst_ctcp_schedule_set_startup (&s->sched, config->lead,
      config->startup_rate / 8, config->startup_factor);
  s->first_ts = s->segment_end_ts = GST_CLOCK_TIME_NONE;
  s->pending = g_array_new (FALSE, FALSE, sizeof (GstCtcpEvent));
  s->wlog = g_array_new (FALSE, FALSE, sizeof (WireMark));
  return s;
}

void
gst_ctcp_sender_free (GstCtcpSender * s)
{
  if (!s)
    return;
  gst_ctcp_schedule_clear (&s->sched);
  g_array_free (s->pending, TRUE);
  g_array_free (s->wlog, TRUE);
  g_free (s);
}

/* ------------------------------------------------------------------ */
/* accepting data */

/* Ends the segment being received: held, it becomes sendable now that S
 * is known. The last one of a stream lasts from its start to the end of
 * its last frame. */
static void
finish_segment (GstCtcpSender * s, gboolean at_eos, GstClockTime now)
{
  GstClockTime dur = GST_CLOCK_TIME_NONE;
  GstCtcpSegment *seg;

  if (!s->have_segment)
    return;
  if (at_eos && GST_CLOCK_TIME_IS_VALID (s->first_ts)
      && GST_CLOCK_TIME_IS_VALID (s->segment_end_ts)) {
    GstClockTime start = s->first_ts +
        (GstClockTime) s->segment_no * s->sched.segment_duration;

    if (s->segment_end_ts > start)
      dur = s->segment_end_ts - start;
  }
  if (s->hold)
    gst_ctcp_schedule_add (&s->sched, s->segment_no, s->sendable, now);
  gst_ctcp_schedule_complete (&s->sched, s->accepted, dur);
  s->sendable = s->accepted;
  seg = gst_ctcp_schedule_last (&s->sched);
  GST_DEBUG ("segment %u complete: %" G_GUINT64_FORMAT " bytes, %"
      GST_TIME_FORMAT ", due %" GST_TIME_FORMAT, seg->number,
      seg->end - seg->start, GST_TIME_ARGS (seg->duration),
      GST_TIME_ARGS (seg->deadline));
  s->have_segment = FALSE;
}

/**
 * gst_ctcp_sender_handle_buffer:
 * @ts: the buffer's DTS, else PTS (may be NONE: it joins the current
 *   segment, or segment 0)
 * @duration: its duration (may be NONE)
 * @size: its bytes, appended to the stream
 *
 * Returns: TRUE when bytes became sendable (poll now).
 */
gboolean
gst_ctcp_sender_handle_buffer (GstCtcpSender * s, GstClockTime ts,
    GstClockTime duration, guint64 size, GstClockTime now)
{
  guint32 number = s->have_segment ? s->segment_no : 0;
  gboolean ready = FALSE;

  gst_twoflow_segment_number (&s->first_ts, ts, s->sched.segment_duration,
      &number);
  if (s->have_segment && number > s->segment_no) {
    finish_segment (s, FALSE, now);
    ready = s->hold;
  }
  if (!s->have_segment) {
    s->have_segment = TRUE;
    s->segment_no = number;
    s->segment_end_ts = GST_CLOCK_TIME_NONE;
    if (!s->hold)
      gst_ctcp_schedule_add (&s->sched, number, s->accepted, now);
  }
  if (GST_CLOCK_TIME_IS_VALID (ts)) {
    GstClockTime end = ts + (GST_CLOCK_TIME_IS_VALID (duration) ?
        duration : 0);

    if (!GST_CLOCK_TIME_IS_VALID (s->segment_end_ts)
        || end > s->segment_end_ts)
      s->segment_end_ts = end;
  }
  s->accepted += size;
  if (!s->hold && size > 0) {
    s->sendable = s->accepted;
    ready = TRUE;
  }
  return ready;
}

/* Ends the stream: the segment being received is complete. */
void
gst_ctcp_sender_handle_eos (GstCtcpSender * s, GstClockTime now)
{
  finish_segment (s, TRUE, now);
  s->eos = TRUE;
}

/* Complete segments not yet fully written. */
static guint
segments_waiting (const GstCtcpSender * s)
{
  guint i, n = 0;

  for (i = s->send_index; i < s->sched.segments->len; i++) {
    GstCtcpSegment *seg = &g_array_index (s->sched.segments, GstCtcpSegment,
        i);
    if (seg->complete && seg->end > s->written)
      n++;
  }
  return n;
}

/**
 * gst_ctcp_sender_is_full:
 *
 * Returns: TRUE while upstream should wait: held, more than one complete
 * segment waits to be written (the essential flow runs one segment ahead,
 * not the whole file); else, the bytes accepted and not written exceed
 * two seconds of the fixed rate (at least 64 kB), or 1 MB in plain TCP.
 */
gboolean
gst_ctcp_sender_is_full (const GstCtcpSender * s)
{
  guint64 queued = s->accepted - s->written;

  if (s->hold)
    return segments_waiting (s) > 1;
  return queued >= (s->ctl.capped ? MAX (64 * 1024, 2 * s->ctl.target_rate) :
      GST_CTCP_SENDER_MAX_QUEUED_TCP);
}

/* ------------------------------------------------------------------ */
/* the socket */

/* Wire bytes acknowledged -> stream bytes acknowledged: exact at the end
 * of each write (so at segment ends: writes never cross them), in
 * proportion inside one, never past its end. Trims the log. */
static guint64
stream_acked (GstCtcpSender * s, guint64 wire)
{
  guint i;

  s->wire_acked = wire;
  for (i = 0; i < s->wlog->len; i++) {
    WireMark *m = &g_array_index (s->wlog, WireMark, i);

    if (m->wire_end > wire)
      break;
    s->wlog_stream = m->stream_end;
    s->wlog_wire = m->wire_end;
  }
  if (i > 0)
    g_array_remove_range (s->wlog, 0, i);
  if (s->wlog->len > 0 && wire > s->wlog_wire) {
    WireMark *m = &g_array_index (s->wlog, WireMark, 0);
    guint64 plain = m->stream_end - s->wlog_stream;
    guint64 w = m->wire_end - s->wlog_wire;

    return s->wlog_stream + (wire - s->wlog_wire) * plain / w;
  }
  return s->wlog_stream;
}

/* A stream rate -> the wire rate that carries it: the mean overhead of
 * the writes so far (before any, one record per largest write). */
static guint64
wire_rate (GstCtcpSender * s, guint64 rate)
{
  if (s->record_overhead == 0 || rate == 0)
    return rate;
  if (s->written > 0)
    return (guint64) ((gdouble) rate * s->wire_written / s->written + 0.5);
  return rate + rate * s->record_overhead / MIN (s->record_size,
      GST_CTCP_SENDER_MAX_WRITE);
}

/**
 * gst_ctcp_sender_set_record_framing:
 * @overhead: bytes each record adds on the wire (TLS 1.3 AEAD: 22 = 5
 *   header + 1 content type + 16 tag; TLS 1.2 AES-GCM: 29 = 5 + 8 explicit
 *   nonce + 16); 0: none (plain TCP)
 * @record_size: most stream bytes per record (TLS: 16384)
 *
 * The caller writes through a record layer (TLS): every write of n stream
 * bytes becomes ceil(n / @record_size) records, and the kernel's numbers
 * (TCP_INFO bytes_acked, SIOCOUTQ, SIOCOUTQNSD) count those wire bytes.
 * The sender then keeps the window, the in-flight and unsent bytes and the
 * pacer in wire bytes (what cwnd and the kernel's pacing see), converts the
 * segments' stream rates to wire rates, and maps the acknowledged wire
 * bytes back to stream bytes for the deadlines. Call before the first
 * write.
 */
void
gst_ctcp_sender_set_record_framing (GstCtcpSender * s, guint overhead,
    guint record_size)
{
  g_return_if_fail (s->written == 0);
  g_return_if_fail (overhead == 0 || record_size > 0);
  s->record_overhead = overhead;
  s->record_size = record_size;
}

/**
 * gst_ctcp_sender_handle_tcp_info:
 * @info: a TCP_INFO reading
 * @outq: bytes in the socket's send queue (SIOCOUTQ)
 * @inflight: of those, sent and not acknowledged (SIOCOUTQ − SIOCOUTQNSD)
 *
 * Updates the controller (RTT, losses, W_target), marks the segments whose
 * last byte is acknowledged as done, and detects congestion events (for
 * the next poll).
 */
void
gst_ctcp_sender_handle_tcp_info (GstCtcpSender * s,
    const GstCtcpTcpInfo * info, guint64 outq, guint64 inflight,
    GstClockTime now)
{
  GstTwoflowCongestionType ev[GST_CTCP_MAX_EVENTS];
  guint i, n, k0;

  s->info = *info;
  s->outq = outq;
  s->inflight = inflight;
  if (!s->have_info) {
    /* before our first write, what the socket still holds is not ours
     * (a TLS handshake's last flight): acknowledging it is no progress */
    s->acked_base = info->bytes_acked + (s->written == 0 ? outq : 0);
    s->initial_total_retrans = info->total_retrans;
    s->initial_total_rto = info->total_rto;
    s->have_info = TRUE;
  }
  s->acked = info->bytes_acked - s->acked_base;
  if (s->record_overhead > 0)
    s->acked = stream_acked (s, s->acked);
  s->polls++;

  gst_ctcp_controller_update (&s->ctl, info, now);
  k0 = s->sched.first_pending;
  gst_ctcp_schedule_acked (&s->sched, s->acked, now);
  for (i = k0; i < s->sched.first_pending; i++) {
    GstCtcpSegment *seg = &g_array_index (s->sched.segments, GstCtcpSegment,
        i);
    GST_DEBUG ("segment %u done: ready %" GST_TIME_FORMAT ", due %"
        GST_TIME_FORMAT ", acknowledged %" GST_TIME_FORMAT ", slack %"
        GST_STIME_FORMAT, seg->number, GST_TIME_ARGS (seg->ready),
        GST_TIME_ARGS (seg->deadline), GST_TIME_ARGS (seg->done),
        GST_STIME_ARGS (seg->slack));
  }

  n = gst_ctcp_event_detector_push (&s->det, info, now, ev);
  for (i = 0; i < n; i++) {
    GstCtcpEvent e = { ev[i], gst_ctcp_sender_estimated_bitrate (s),
      (GstClockTime) info->rtt_us * GST_USECOND
    };
    GST_INFO ("event %s (ca_state %u, cwnd %u, srtt %u us)",
        gst_twoflow_congestion_type_to_string (ev[i]), info->ca_state,
        info->snd_cwnd, info->rtt_us);
    g_array_append_val (s->pending, e);
  }
}

/**
 * gst_ctcp_sender_estimated_bitrate:
 *
 * Returns: 8 · min(cwnd·MSS/srtt, delivery rate) of the last reading,
 * bit/s (0: unknown).
 */
guint64
gst_ctcp_sender_estimated_bitrate (const GstCtcpSender * s)
{
  const GstCtcpTcpInfo *i = &s->info;
  guint64 rate = G_MAXUINT64;

  if (i->rtt_us > 0)
    rate = (guint64) i->snd_cwnd * i->snd_mss * G_USEC_PER_SEC / i->rtt_us;
  if (i->delivery_rate > 0)
    rate = MIN (rate, i->delivery_rate);
  return rate == G_MAXUINT64 ? 0 : rate * 8;
}

/* ------------------------------------------------------------------ */
/* rates */

/* The target of the segment now being written. A new segment starts at
 * S/(T(1−p̂)) (or its late-start rate); while it is sent, a segment behind
 * its schedule is raised to its residual bytes over its residual time
 * (bounded by max-catch-up). */
static void
update_target (GstCtcpSender * s, GstClockTime now)
{
  GArray *segs = s->sched.segments;
  gdouble p = s->cfg.loss_threshold, boost = s->cfg.max_catch_up;
  GstClockTime rtt;
  guint64 rate;

  if (!s->ctl.capped)
    return;
  if (s->fixed_rate > 0) {
    gst_ctcp_controller_set_target (&s->ctl, wire_rate (s, s->fixed_rate),
        now);
    return;
  }
  /* move past written segments; a new one gets its rate when it starts */
  while (s->send_index < segs->len) {
    GstCtcpSegment *seg = &g_array_index (segs, GstCtcpSegment,
        s->send_index);

    if (!seg->complete)
      return;
    if (seg->end == seg->start || s->written >= seg->end) {
      s->send_index++;
      s->send_started = FALSE;
      continue;
    }
    if (!s->send_started) {
      seg->nominal_rate = gst_ctcp_target_rate (seg->end - seg->start,
          seg->duration, p);
      seg->target_rate = gst_ctcp_schedule_start_segment (&s->sched, seg, p,
          boost, now);
      gst_ctcp_controller_set_target (&s->ctl, wire_rate (s,
              seg->target_rate), now);
      gst_ctcp_controller_restart_pacing (&s->ctl, now);
      s->send_started = TRUE;
      GST_DEBUG ("segment %u: %" G_GUINT64_FORMAT " bytes at %"
          G_GUINT64_FORMAT " B/s, due in %" GST_STIME_FORMAT, seg->number,
          seg->end - seg->start, seg->target_rate,
          GST_STIME_ARGS (GST_CLOCK_DIFF (now, seg->deadline)));
      return;
    }
    rtt = s->ctl.srtt;
    if (GST_CLOCK_TIME_IS_VALID (s->ctl.w_rtt)
        && (!GST_CLOCK_TIME_IS_VALID (rtt) || s->ctl.w_rtt > rtt))
      rtt = s->ctl.w_rtt;
    rate = gst_ctcp_schedule_required_rate (&s->sched, seg, s->acked, rtt, p,
        boost, now);
    if (rate != s->ctl.target_rate) {
      GST_LOG ("segment %u: %" G_GUINT64_FORMAT " B/s (%.2f x nominal), %"
          G_GUINT64_FORMAT " bytes unacknowledged, due in %" GST_STIME_FORMAT,
          seg->number, rate, (gdouble) rate / seg->nominal_rate,
          seg->end - CLAMP (s->acked, seg->start, seg->end),
          GST_STIME_ARGS (GST_CLOCK_DIFF (now, seg->deadline)));
      gst_ctcp_controller_set_target (&s->ctl, wire_rate (s, rate), now);
    }
    return;
  }
}

/* Bytes left in the segment being written (held), so that one write never
 * starts the next segment before its rate is set. */
static guint64
segment_room (const GstCtcpSender * s)
{
  const GstCtcpSegment *seg;

  if (!s->hold || s->send_index >= s->sched.segments->len)
    return G_MAXUINT64;
  seg = &g_array_index (s->sched.segments, GstCtcpSegment, s->send_index);
  if (!seg->complete || seg->end <= s->written)
    return G_MAXUINT64;
  return seg->end - s->written;
}

/* The smallest write worth making now: a packet's worth (min_write), but
 * never more than there is — in particular a segment's last bytes: waiting
 * for a whole write's tokens there delayed every segment's end (and made
 * the first, which has only p̂·T of margin, late on every loopback fetch). */
static guint64
smallest_write (const GstCtcpSender * s)
{
  guint64 left = s->sendable - s->written;

  return MIN (gst_ctcp_controller_min_write (&s->ctl),
      MIN (left, segment_room (s)));
}

/**
 * gst_ctcp_sender_handle_written:
 * @bytes: stream bytes the caller just wrote to the socket
 */
void
gst_ctcp_sender_handle_written (GstCtcpSender * s, guint64 bytes,
    GstClockTime now)
{
  guint64 wire = bytes;

  g_return_if_fail (s->written + bytes <= s->sendable);
  if (s->record_overhead > 0 && bytes > 0) {
    WireMark m;

    wire += (bytes + s->record_size - 1) / s->record_size * s->record_overhead;
    s->wire_written += wire;
    m.stream_end = s->written + bytes;
    m.wire_end = s->wire_written;
    g_array_append_val (s->wlog, m);
  }
  gst_ctcp_controller_consume (&s->ctl, wire);
  /* unsent until the next reading says otherwise */
  s->outq += wire;
  s->written += bytes;
  update_target (s, now);
}

/**
 * gst_ctcp_sender_poll:
 * @out: (out): what to do now
 *
 * Sets the rate of the segment being written (catch-up included) and says
 * how much may be written: what the pacer has earned, within the window
 * and one write unsent in the kernel, at most
 * %GST_CTCP_SENDER_MAX_WRITE, never into the next segment; 0 unless at
 * least a packet's worth (or all there is) may go. Drains the pending
 * congestion events.
 */
void
gst_ctcp_sender_poll (GstCtcpSender * s, GstClockTime now,
    GstCtcpSenderOutput * out)
{
  guint64 left, allow, want;
  guint n;

  memset (out, 0, sizeof (*out));
  update_target (s, now);
  if (s->ctl.capped && s->ctl.target_rate > 0)
    out->pacing_rate = (guint64) (s->ctl.target_rate *
        GST_CTCP_PACING_HEADROOM);

  left = s->sendable - s->written;
  if (left > 0) {
    allow = gst_ctcp_controller_allowance (&s->ctl, s->inflight,
        s->outq - MIN (s->inflight, s->outq), now);
    if (!s->ctl.capped || allow >= smallest_write (s)) {
      want = MIN (MIN (allow, GST_CTCP_SENDER_MAX_WRITE), segment_room (s));
      out->write = MIN (want, left);
    }
  }

  n = MIN (s->pending->len, G_N_ELEMENTS (out->events));
  if (n > 0) {
    memcpy (out->events, s->pending->data, n * sizeof (GstCtcpEvent));
    g_array_remove_range (s->pending, 0, n);
    out->n_events = n;
  }
  out->finished = s->eos && s->written == s->accepted
      && s->acked >= s->accepted && s->outq == 0;
}

/**
 * gst_ctcp_sender_next_wakeup:
 *
 * Returns: when to read TCP_INFO and poll again: at once while events are
 * pending; a quarter RTT (gst_ctcp_poll_interval()) while bytes are in the
 * socket; when the pacer will allow the next write, if sooner;
 * GST_CLOCK_TIME_NONE when there is nothing to send and nothing in flight
 * (no timer: new data wakes the caller).
 */
GstClockTime
gst_ctcp_sender_next_wakeup (GstCtcpSender * s, GstClockTime now)
{
  guint64 left = s->sendable - s->written;
  GstClockTime poll, wake;

  if (s->pending->len > 0)
    return now;
  if (s->outq == 0 && left == 0)
    return GST_CLOCK_TIME_NONE;
  poll = gst_ctcp_poll_interval (s->ctl.srtt);
  wake = s->outq > 0 ? now + poll : GST_CLOCK_TIME_NONE;
  if (left > 0 && s->ctl.capped) {
    GstClockTime p = gst_ctcp_controller_next_write (&s->ctl, s->inflight,
        s->outq - MIN (s->inflight, s->outq), smallest_write (s), now);

    /* none: the window holds us back and data is in flight, so the poll
     * sees when there is room */
    if (GST_CLOCK_TIME_IS_VALID (p) && p > now
        && (!GST_CLOCK_TIME_IS_VALID (wake) || p < wake))
      wake = p;
  }
  if (!GST_CLOCK_TIME_IS_VALID (wake))
    wake = now + poll;
  return wake;
}

/* ------------------------------------------------------------------ */
/* statistics */

/**
 * gst_ctcp_sender_get_stats:
 *
 * Returns: (transfer full): `application/x-ctcpsink-stats` from the last
 * reading and decision (no I/O): the fields documented in ctcpsink, but
 * `congestion-control`, which the caller knows.
 */
GstStructure *
gst_ctcp_sender_get_stats (const GstCtcpSender * s)
{
  GstStructure *st;
  GValue arr = G_VALUE_INIT, v = G_VALUE_INIT;
  const GstCtcpTcpInfo *info = &s->info;
  GArray *segs = s->sched.segments;
  guint64 window, nominal, acked = MIN (s->acked, s->written);
  guint i, first;

  /* the segment being sent, or the last one that was */
  nominal = s->hold ? 0 : s->ctl.target_rate;
  for (i = MIN (s->send_index + 1, segs->len); s->hold && i > 0 &&
      nominal == 0; i--)
    nominal = g_array_index (segs, GstCtcpSegment, i - 1).nominal_rate;
  window = gst_ctcp_controller_window_bytes (&s->ctl);
  st = gst_structure_new ("application/x-ctcpsink-stats",
      "mode", G_TYPE_STRING, s->ctl.capped ? "ctcp" : "tcp",
      "target-rate", G_TYPE_UINT64, s->ctl.target_rate,
      "nominal-rate", G_TYPE_UINT64, nominal,
      "w-target", G_TYPE_UINT, s->ctl.w_target,
      "w-target-rtt", G_TYPE_UINT64,
      GST_CLOCK_TIME_IS_VALID (s->ctl.w_rtt) ? s->ctl.w_rtt : 0,
      "window", G_TYPE_UINT64, window == G_MAXUINT64 ? 0 : window,
      "adjustments", G_TYPE_UINT64, s->ctl.adjustments,
      "cwnd", G_TYPE_UINT, info->snd_cwnd,
      "ssthresh", G_TYPE_UINT, info->snd_ssthresh,
      "mss", G_TYPE_UINT, info->snd_mss,
      "srtt", G_TYPE_UINT64, (guint64) info->rtt_us * GST_USECOND,
      "rttvar", G_TYPE_UINT64, (guint64) info->rttvar_us * GST_USECOND,
      "estimated-bitrate", G_TYPE_UINT64,
      gst_ctcp_sender_estimated_bitrate (s),
      "retransmissions", G_TYPE_UINT64,
      (guint64) (info->total_retrans - s->initial_total_retrans),
      "timeouts", G_TYPE_UINT64, info->has_total_rto ?
      (guint64) (guint16) (info->total_rto - s->initial_total_rto) :
      s->det.rexmt,
      "recoveries", G_TYPE_UINT64, s->det.dupack,
      "inferred-recoveries", G_TYPE_UINT64, s->det.inferred,
      "rexmt-events", G_TYPE_UINT64, s->det.rexmt,
      "dupack-events", G_TYPE_UINT64, s->det.dupack,
      "recovered-events", G_TYPE_UINT64, s->det.recovered,
      "bytes-sent", G_TYPE_UINT64, s->written,
      "bytes-acked", G_TYPE_UINT64, acked,
      "bytes-in-flight", G_TYPE_UINT64, MIN (s->inflight, s->written - acked),
      "bytes-queued", G_TYPE_UINT64, s->accepted - s->written,
      "segments", G_TYPE_UINT64, s->sched.segments_done,
      "segments-late", G_TYPE_UINT64, s->sched.segments_late,
      "ramp-segments", G_TYPE_UINT64, s->sched.ramp_segments,
      "min-deadline-slack", G_TYPE_INT64, s->sched.segments_done ?
      s->sched.min_slack : 0, "polls", G_TYPE_UINT64, s->polls,
      "record-overhead", G_TYPE_UINT, s->record_overhead,
      "wire-bytes-sent", G_TYPE_UINT64, s->record_overhead ? s->wire_written :
      s->written,
      "wire-bytes-acked", G_TYPE_UINT64, s->record_overhead ? s->wire_acked :
      acked, NULL);

  g_value_init (&arr, GST_TYPE_ARRAY);
  g_value_init (&v, G_TYPE_INT64);
  first = s->sched.first_pending > GST_CTCP_SENDER_MAX_SLACKS ?
      s->sched.first_pending - GST_CTCP_SENDER_MAX_SLACKS : 0;
  for (i = first; i < s->sched.first_pending; i++) {
    g_value_set_int64 (&v, g_array_index (segs, GstCtcpSegment, i).slack);
    gst_value_array_append_value (&arr, &v);
  }
  gst_structure_take_value (st, "deadline-slack", &arr);
  g_value_unset (&v);
  return st;
}
