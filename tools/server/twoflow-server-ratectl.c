/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the session rate controller of a session: the transports'
 * counters in, the transcoder's target and the rUDP sender's rate out
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

#include <gst/gst.h>
#include "twoflow-server-ratectl.h"
#include "twoflow-server-options.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_ratectl_debug);
#define GST_CAT_DEFAULT twoflow_server_ratectl_debug

/* the session rate controller's transports */
#define RC_SRC_ESSENTIAL 0
#define RC_SRC_ENHANCED 1

GstStructure *
get_stats (GstElement * e)
{
  GstStructure *s = NULL;
  if (e && g_object_class_find_property (G_OBJECT_GET_CLASS (e), "stats"))
    g_object_get (e, "stats", &s, NULL);
  return s;
}

/* The enhanced flow's share of what the transcoder makes (its frames
 * less the essential ones, which the essential flow sends) */
static gdouble
rc_enhanced_share (Session * s)
{
  return s->info->mean_rate ?
      (gdouble) s->info->enh_mean / s->info->mean_rate : 1.0;
}

/* The transcoder's rate for a path rate @rate of the controller: the
 * same while both flows send; once the essential flow has sent its last
 * segment the path carries the enhanced share of what is coded only, so
 * rate / share. (Coded at the path's rate, the enhanced flow delivered
 * share x target, the controller's floor — what gets through while a
 * queue stands — took the target down to it at every update: beside a
 * bulk TCP, whose queue never empties, from 1.2 Mbit/s to 64 kbit/s in
 * 5 s once the rUDP RTT was an input.) */
static guint64
rc_to_code (Session * s, guint64 rate)
{
  gdouble share = rc_enhanced_share (s);

  if (!s->ess_done || share <= 0.05 || share >= 1.0)
    return rate;
  return (guint64) MIN (rate / share, (gdouble) G_MAXUINT64 / 2);
}

/* The smoothed rUDP sender's cap while the path is congested: what the
 * path delivers to the session less what the essential flow gets — times
 * decrease while the queue grows (so that it drains), as it is while the
 * queue drains (hold) —, never below the target's enhanced share (what
 * the transcoder now makes for the flow). Uncapped, the sender drains the
 * backlog of frames coded before the reaction at its schedule's rate into
 * a bottleneck that carries less (measured in the showdown's capacity
 * step: the enhanced flow offered 2.6 Mbit/s into 1.5 for 2.6 s and half
 * of its packets were dropped at the queue; with a cap at 1.1 x the
 * delivered rate the queue still overflowed for 1.8 s); capped, the
 * backlog waits in the sender, within the proxy's playout buffer, and the
 * target (below the delivered rate) lets it drain. 0: no cap. */
static guint64
rc_enhanced_cap (Session * s, const GstTwoflowSessionRateStats * rs)
{
  gdouble path, ess, cap, share;

  if (rs->delivered_rate == 0)
    return 0;
  if (rs->state == GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED)
    path = opt_rc_decrease * rs->delivered_rate;
  else if (rs->state == GST_TWOFLOW_SESSION_RATE_STATE_HOLD)
    path = rs->delivered_rate;
  else
    return 0;
  ess = rs->source_delivered[RC_SRC_ESSENTIAL];
  /* (once the essential flow is done the enhanced one carries it all) */
  share = s->ess_done ? 1.0 : rc_enhanced_share (s);
  /* (the target, not the lateness rule's coding target: a cap that
   * followed the cut made the backlog that deepens the cut, down to the
   * transcoder's floor) */
  cap = MAX (path - ess, share * rs->target);
  return (guint64) MAX (cap, ENHANCED_MTU * 8 * 10.0);
}

/* The rUDP sender's rate when the controller paces it (the proxy asked
 * for receiver rate control): the enhanced share of the target, the
 * lowest level above it with a quarter of headroom. */
static guint64
rc_enhanced_rate (Session * s, guint64 target)
{
  gdouble share = s->ess_done ? 1.0 : rc_enhanced_share (s);
  guint64 want = target * share * 1.25;
  guint i;

  for (i = 0; i < GST_TWOFLOW_PROFILE_N_LEVELS; i++)
    if (s->info->levels[i] >= want)
      return s->info->levels[i];
  return s->info->levels[GST_TWOFLOW_PROFILE_N_LEVELS - 1];
}

/* The transcoder's target: the controller's coding target (the target
 * less the lateness rule's cut) */
static void
rc_set_code (Session * s, guint64 code)
{
  code = rc_to_code (s, code);
  if (code == s->rc_code)
    return;
  s->rc_code = code;
  /* at or above the controller's ceiling: the input's rate (passthrough
   * without the first GOP's decoding delay) */
  if (s->transcoder)
    g_object_set (s->transcoder, "target-bitrate",
        code >= s->rc_max ? (guint64) 0 : code, NULL);
}

static void
rc_apply (Session * s, guint64 target)
{
  GstTwoflowSessionRateStats rs;

  s->rc_target = target;
  s->rc_changes++;
  rc_set_code (s, gst_twoflow_session_rate_get_code_target (s->rc));
  gst_twoflow_session_rate_get_stats (s->rc, &rs);
  if (s->rc_pace && s->enh_sink) {
    guint64 r = rc_enhanced_rate (s, target);
    if (r != s->enh_rate_now) {
      g_object_set (s->enh_sink, "rate", r, NULL);
      s->enh_rate_now = r;
      s->enh_rate_changes++;
    }
  }
  /* (the smoothed sender's rate stays its schedule's: it sends what the
   * transcoder gives it, which follows the target; a cap at the target
   * less the essential flow's rate starved the flow below the kept
   * frames' floor, measured: 267 of 750 frames in the capacity step) */
  g_print ("session %u: rate-control t=%.2f target=%" G_GUINT64_FORMAT
      " delay-rate=%" G_GUINT64_FORMAT " tcp-rate=%" G_GUINT64_FORMAT
      " delivered=%" G_GUINT64_FORMAT " qdelay=%.1fms p=%.4f loss=%.4f %s"
      " enh-rate=%" G_GUINT64_FORMAT " code=%" G_GUINT64_FORMAT
      " lateness=%.0fms\n",
      s->id, (g_get_monotonic_time () - s->started_us) / 1e6, target,
      rs.delay_rate, rs.tcp_rate, rs.delivered_rate, rs.qdelay / 1e6,
      rs.loss_event_rate, rs.loss_fraction,
      gst_twoflow_session_rate_state_name (rs.state), s->enh_rate_now,
      rs.code_target, rs.lateness / 1e6);
}

/* The controller's state and the sender's queue at every tick (debug) */
static void
rc_log_state (Session * s)
{
  GstStructure *st;

  if (s->enh_sink && GST_LEVEL_DEBUG <= _gst_debug_min
      && (st = get_stats (s->enh_sink))) {
    guint64 qb = 0, rtt = 0;
    GstTwoflowSessionRateStats rs;

    gst_structure_get_uint64 (st, "queued-bytes", &qb);
    gst_structure_get_uint64 (st, "rtt", &rtt);
    gst_twoflow_session_rate_get_stats (s->rc, &rs);
    GST_DEBUG ("session %u: t=%.2f state=%s target=%" G_GUINT64_FORMAT
        " delivered=%" G_GUINT64_FORMAT " ess=%" G_GUINT64_FORMAT
        " qdelay=%.1fms enh-rtt=%.1fms enh-rate=%" G_GUINT64_FORMAT " sched=%"
        G_GUINT64_FORMAT " queued=%" G_GUINT64_FORMAT " (%.0f ms) code=%"
        G_GUINT64_FORMAT " catchup=%" G_GUINT64_FORMAT, s->id,
        (g_get_monotonic_time () - s->started_us) / 1e6,
        gst_twoflow_session_rate_state_name (rs.state), rs.target,
        rs.delivered_rate, rs.source_delivered[RC_SRC_ESSENTIAL],
        rs.qdelay / 1e6, rtt / 1e6, s->enh_rate_now, s->sched_rate, qb,
        s->enh_rate_now ? qb * 8e3 / s->enh_rate_now : 0.0, rs.code_target,
        rs.catchup_rate);
    gst_structure_free (st);
  }
}

/* The lateness rule's inputs: the transcoder's floor and what waits at
 * the smoothed sender */
static void
rc_feed_lateness (Session * s, GstClockTime now)
{
  GstStructure *st;

  /* the lateness rule's floor: the transcoder's lowest rate without
   * dropping frames, 10 % above */
  if (s->transcoder && (st = get_stats (s->transcoder))) {
    guint64 lowest = 0, floor;

    gst_structure_get_uint64 (st, "lowest-bitrate", &lowest);
    floor = lowest * 11 / 10;
    /* (in the controller's units: rc_to_code()'s inverse) */
    if (rc_to_code (s, floor) > floor)
      floor = (guint64) (floor * rc_enhanced_share (s));
    gst_twoflow_session_rate_set_code_floor (s->rc, floor);
    gst_structure_free (st);
  }
  /* the lateness rule's input: what waits at the smoothed sender */
  if (s->smooth && !s->total && s->enh_sink && s->enh_playing
      && !s->enh_done && (st = get_stats (s->enh_sink))) {
    guint64 qb = 0;

    gst_structure_get_uint64 (st, "queued-bytes", &qb);
    gst_twoflow_session_rate_handle_backlog (s->rc, RC_SRC_ENHANCED, qb,
        s->enh_rate_now, now);
    gst_structure_free (st);
  }
}

/* Every --rc-interval: the transports' counters in, the target out. */
static gboolean
rc_tick (gpointer user_data)
{
  Session *s = user_data;
  GstClockTime now = g_get_monotonic_time () * GST_USECOND;
  GstStructure *st;
  guint64 target;

  /* cTCP: the socket's segments, retransmissions, acked bytes, SRTT */
  if (s->ess_sink && !s->ess_done && g_str_equal (s->essential, "ctcp")
      && (st = get_stats (s->ess_sink))) {
    guint64 sent = 0, acked = 0, retr = 0, srtt = 0, rttvar = 0;
    guint mss = 0;

    gst_structure_get_uint64 (st, "bytes-sent", &sent);
    gst_structure_get_uint64 (st, "bytes-acked", &acked);
    gst_structure_get_uint64 (st, "retransmissions", &retr);
    gst_structure_get_uint64 (st, "srtt", &srtt);
    gst_structure_get_uint64 (st, "rttvar", &rttvar);
    gst_structure_get_uint (st, "mss", &mss);
    if (mss == 0)
      mss = 1448;
    if (sent > 0) {
      gst_twoflow_session_rate_handle_counters (s->rc, RC_SRC_ESSENTIAL,
          sent / mss + retr, retr, acked, now);
      /* (an idle socket's SRTT is its last one: a sample only when
       * something was acked since, else a queue long gone stayed fresh
       * and held the target down after the capacity returned) */
      if (srtt > 0 && acked != s->rc_ess_acked)
        gst_twoflow_session_rate_handle_smoothed_rtt (s->rc, RC_SRC_ESSENTIAL,
            srtt, rttvar, now);
      s->rc_ess_acked = acked;
    }
    gst_structure_free (st);
  }
  /* ERAP: its packets, losses, acked bytes and SRTT. (Its delivered
   * bytes count: without them the session's delivered rate was the rUDP
   * flow's alone, the enhanced share of what is coded, and beside a bulk
   * TCP every decrease to decrease x that rate took the target down by
   * the share: 2.9 Mbit/s -> 63 kbit/s in 6 s, 90 B frames dropped. cTCP's
   * acked bytes always counted.) */
  if (s->ess_sink && !s->ess_done && g_str_equal (s->essential, "erap")
      && (st = get_stats (s->ess_sink))) {
    guint64 acks = 0, srtt = 0, sent = 0, lost = 0, acked = 0;

    gst_structure_get_uint64 (st, "acks-received", &acks);
    gst_structure_get_uint64 (st, "srtt", &srtt);
    gst_structure_get_uint64 (st, "packets-sent", &sent);
    gst_structure_get_uint64 (st, "packets-lost", &lost);
    gst_structure_get_uint64 (st, "bytes-acked", &acked);
    if (sent > 0)
      gst_twoflow_session_rate_handle_counters (s->rc, RC_SRC_ESSENTIAL,
          sent, lost, acked, now);
    /* (fresh only: an ACK came since the last tick; before the first
     * one the SRTT is the sink's initial-rtt) */
    if (srtt > 0 && acks > 0 && acks != s->rc_ess_acks)
      gst_twoflow_session_rate_handle_rtt (s->rc, RC_SRC_ESSENTIAL, srtt,
          now);
    s->rc_ess_acks = acks;
    gst_structure_free (st);
  }
  /* rUDP: the receiver's last report (expected, lost) and its SRTT */
  if (s->enh_sink && s->enh_playing && !s->enh_done
      && (st = get_stats (s->enh_sink))) {
    guint64 reports = 0, bytes = 0, pkts = 0, nacked = 0;
    guint64 rtt = 0, rtt_samples = 0;
    guint seq = 0;
    gint lost = 0;

    gst_structure_get_uint64 (st, "receiver-reports", &reports);
    gst_structure_get_uint64 (st, "bytes-sent", &bytes);
    gst_structure_get_uint64 (st, "packets-sent", &pkts);
    gst_structure_get_uint64 (st, "rtt", &rtt);
    gst_structure_get_uint64 (st, "rtt-samples", &rtt_samples);
    gst_structure_get_uint (st, "receiver-highest-seq", &seq);
    gst_structure_get_int (st, "receiver-lost", &lost);
    /* with retransmission the report's losses are those left after it:
     * the packets the receiver NACKed are the losses it saw */
    gst_structure_get_uint64 (st, "rtx-requested", &nacked);
    if (reports > 0) {
      if (!s->rc_have_rr) {
        s->rc_have_rr = TRUE;
        s->rc_rr_base_seq = seq;
        s->rc_rr_base_lost = lost;
        s->rc_rtx_base = nacked;
      } else if (seq >= s->rc_rr_base_seq) {
        guint64 expected = seq - s->rc_rr_base_seq;
        /* lost may fall (late packets); what was fed stays */
        guint64 rr = lost > s->rc_rr_base_lost ? lost - s->rc_rr_base_lost : 0;
        gdouble mean = pkts ? (gdouble) bytes / pkts : ENHANCED_MTU;
        /* lost: what the receiver saw missing (NACKed), even if resent;
         * delivered: expected less what stayed lost */
        guint64 l = MAX (rr, nacked - s->rc_rtx_base);

        l = MAX (l, s->rc_enh_lost);
        rr = MAX (rr, s->rc_enh_rr_lost);
        if (expected >= s->rc_enh_expected) {
          guint64 dexp = expected - s->rc_enh_expected;
          guint64 dl = rr - s->rc_enh_rr_lost;
          s->rc_enh_delivered += (guint64) ((dexp > dl ? dexp - dl : 0) * mean);
          s->rc_enh_expected = expected;
          s->rc_enh_lost = l;
          s->rc_enh_rr_lost = rr;
          gst_twoflow_session_rate_handle_counters (s->rc, RC_SRC_ENHANCED,
              s->rc_enh_expected, s->rc_enh_lost, s->rc_enh_delivered, now);
        }
      }
    }
    /* the receiver's latest RTT sample (one per request, every
     * feedback-interval: its SRTT, smoothed over 8 of them, lags by
     * seconds), the path's RTT since the pacer takes the request's
     * arrival from the kernel (the wait until it reads it, up to a packet
     * interval, was measured as 40-90 ms of queue at low rates); the only
     * RTT left once the essential flow has sent its last segment. A new
     * sample only, and as a clean path only: a queue it shows may be a
     * competing flow's (beside a bulk TCP the target fell to 0.04-0.38 of
     * the fair share with its every sample an input) */
    if (rtt > 0 && rtt_samples != s->rc_enh_rtt_samples)
      gst_twoflow_session_rate_handle_clean_rtt (s->rc, RC_SRC_ENHANCED, rtt,
          now);
    s->rc_enh_rtt_samples = rtt_samples;
    gst_structure_free (st);
  }
  rc_feed_lateness (s, now);
  if (gst_twoflow_session_rate_poll (s->rc, now, &target))
    rc_apply (s, target);
  else
    rc_set_code (s, gst_twoflow_session_rate_get_code_target (s->rc));
  rc_log_state (s);
  if (s->smooth && s->enh_sink) {
    GstTwoflowSessionRateStats rs;
    guint64 cap;

    gst_twoflow_session_rate_get_stats (s->rc, &rs);
    cap = opt_rc_pace_cap ? rc_enhanced_cap (s, &rs) : 0;
    /* (the catch-up rate changes with the backlog: in steps of 5 %) */
    if (cap != s->rc_cap || (rs.catchup_rate == 0) != (s->rc_catchup == 0)
        || rs.catchup_rate > s->rc_catchup * 1.05
        || rs.catchup_rate < s->rc_catchup * 0.95) {
      s->rc_cap = cap;
      s->rc_catchup = rs.catchup_rate;
      enh_set_rate (s, s->sched_rate);
    }
  }
  return G_SOURCE_CONTINUE;
}

/* --rate-controller session: the controller of a session with a
 * transcoder, started with the session (it learns the path during the
 * lead) */
void
rc_start (Session * s)
{
  GstTwoflowSessionRateConfig c;

  if (!s->transcoder || !g_str_equal (opt_rate_controller, "session"))
    return;
  gst_twoflow_session_rate_config_init (&c);
  s->rc_max = (guint64) (opt_rc_headroom * MAX (s->info->peak_rate,
          s->info->mean_rate));
  c.max_bitrate = s->rc_max;
  c.min_bitrate = opt_rc_min_bitrate;
  c.update_interval = opt_rc_interval * GST_MSECOND;
  c.qdelay_threshold = opt_rc_qdelay * GST_MSECOND;
  c.decrease = opt_rc_decrease;
  c.increase = opt_rc_increase;
  c.loss_threshold = opt_rc_loss_threshold;
  c.tcp_floor = opt_rc_tcp_floor != 0;
  c.queue_rise = opt_rc_queue_rise;
  c.loss_burst = opt_rc_loss_burst * GST_MSECOND;
  /* the lateness budget: half what the proxy's playout buffer holds ahead
   * (the smoothing lead; the rest is the path's base delay and jitter) */
  if (opt_rc_lateness >= 0)
    c.lateness_budget = opt_rc_lateness * GST_MSECOND;
  else if (s->smooth && !s->total)
    c.lateness_budget = s->smoothing_lead / 2 * GST_SECOND;
  s->rc = gst_twoflow_session_rate_new (&c);
  s->rc_target = s->rc_max;
  s->rc_code = s->rc_max;
  s->rc_timer = g_timeout_add (opt_rc_interval, rc_tick, s);
}

/* The rUDP sender's rate: its schedule's (window, total, peak). */
void
enh_set_rate (Session * s, guint64 sched_rate)
{
  /* (rc_cap is written by the main loop: a stale read is one window's
   * rate change late, the next tick sets it again) */
  guint64 cap = s->rc_cap;
  guint64 rate = cap ? MIN (sched_rate, cap) : sched_rate;

  /* a clean path and a backlog beyond the lateness budget (a late start,
   * a drop's leftovers): faster than the schedule until it is gone */
  if (!cap && s->rc_catchup > rate)
    rate = s->rc_catchup;

  s->sched_rate = sched_rate;
  if (rate > 0 && rate != s->enh_rate_now && s->enh_sink) {
    g_object_set (s->enh_sink, "rate", rate, NULL);
    s->enh_rate_now = rate;
    s->enh_rate_changes++;
  }
}

/* A congestion event of the essential transport: an input of the
 * controller (cTCP's losses and RTT come from its counters; ERAP reports
 * losses only as events) */
void
rc_handle_congestion (Session * s, GstNetworkCongestionType type,
    GstClockTime srtt)
{
  GstClockTime now = g_get_monotonic_time () * GST_USECOND;

  s->rc_events++;
  /* (ERAP's losses come with its counters, rc_tick: counted here too,
   * one loss could open two loss events) */
  if (type == GST_NETWORK_CONGESTION_LOSS
      && !g_str_equal (s->essential, "erap"))
    gst_twoflow_session_rate_handle_loss_event (s->rc, RC_SRC_ESSENTIAL,
        srtt, now);
  else if (GST_CLOCK_TIME_IS_VALID (srtt) && srtt > 0)
    gst_twoflow_session_rate_handle_rtt (s->rc, RC_SRC_ESSENTIAL, srtt, now);
}

void
twoflow_server_ratectl_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_server_ratectl_debug,
      "twoflow-server-ratectl", 0, "twoflow-server: session rate control");
}
