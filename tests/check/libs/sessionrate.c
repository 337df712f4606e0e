/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Unit tests of the session rate controller (sans-IO), on a virtual clock:
 * the equation, the loss event rate, and a packet-level simulation of a
 * drop-tail bottleneck (rate, propagation RTT, queue in packets, random
 * loss, capacity steps) carrying the session (paced at the controller's
 * target, application-limited at the video's rate) and optionally a Reno
 * flow.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <gst/check/gstcheck.h>
#include <gst/ratecontrol/sessionrate.h>

#define MS GST_MSECOND
#define PKT 1400

GST_START_TEST (test_equation)
{
  gdouble x = gst_twoflow_tfrc_rate (PKT, 0.040, 0.01);
  gdouble p;

  /* 11200 / (0.04 sqrt(2/300) + 0.16 * 3 sqrt(3/800) * 0.01 * 1.0032) */
  fail_unless (fabs (x - 3.145e6) < 0.01 * 3.145e6, "X = %f", x);
  fail_unless (gst_twoflow_tfrc_rate (PKT, 0.040, 0.03) < 1.7e6);
  fail_unless (gst_twoflow_tfrc_rate (PKT, 0.080, 0.01) < x / 1.9);
  p = gst_twoflow_tfrc_loss_for_rate (PKT, 0.040, x);
  fail_unless (fabs (p - 0.01) < 1e-4, "p = %f", p);
}

GST_END_TEST;

/* one loss every 100 packets, each loss more than an RTT apart: p = 1% */
GST_START_TEST (test_loss_event_rate)
{
  GstTwoflowSessionRateConfig c;
  GstTwoflowSessionRate *sr;
  GstTwoflowSessionRateStats st;
  guint64 packets = 0, lost = 0;
  GstClockTime now = 0;
  guint i;

  gst_twoflow_session_rate_config_init (&c);
  c.max_bitrate = 5000000;
  sr = gst_twoflow_session_rate_new (&c);
  gst_twoflow_session_rate_handle_rtt (sr, 0, 40 * MS, now);
  for (i = 0; i < 400; i++) {
    now += 100 * MS;
    packets += 50;
    if (i % 2 == 1)
      lost++;
    gst_twoflow_session_rate_handle_counters (sr, 0, packets, lost,
        packets * PKT, now);
    gst_twoflow_session_rate_handle_rtt (sr, 0, 40 * MS, now);
    gst_twoflow_session_rate_poll (sr, now, NULL);
  }
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless (st.loss_events >= 199 && st.loss_events <= 200, "%"
      G_GUINT64_FORMAT, st.loss_events);
  fail_unless (fabs (st.loss_event_rate - 0.01) < 0.001, "p %f",
      st.loss_event_rate);
  /* two losses in one RTT are one event */
  now += 100 * MS;
  packets += 50;
  lost++;
  gst_twoflow_session_rate_handle_counters (sr, 0, packets, lost,
      packets * PKT, now);
  gst_twoflow_session_rate_handle_counters (sr, 0, packets + 1, lost + 1,
      packets * PKT, now + 10 * MS);
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless_equals_uint64 (st.loss_events, 201);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* the simulated path */

typedef struct
{
  gint flow;                    /* 0 session, 1 Reno */
  GstClockTime sent;
  gboolean lost;
  GstClockTime ack;             /* when the sender learns its fate */
  GstClockTime qdelay;
} Pkt;

typedef struct
{
  /* link */
  gdouble (*capacity) (GstClockTime t);
  GstClockTime prop;            /* RTT without queue */
  guint qlimit;                 /* packets */
  gdouble loss;
  gdouble sess_loss;            /* more, of the session's packets only */
  gboolean reno;
  gdouble reno_cwnd0;           /* Reno's window at the start, 0: 10 */
  gdouble video;                /* the session's application limit, bit/s */
  GstClockTime duration;
  /* the server's RTT inputs: source 0's until rtt0_until (0: always; the
   * essential flow's last segment), and source 1's with rtt1: 1 every
   * sample, 2 the clean ones only (the server's rUDP input) */
  GstClockTime rtt0_until;
  gint rtt1;
  /* the system's delays, in updates of 100 ms: the target reaches the
   * link this much later (the transcoder and the sender), source 1's
   * sample reaches the controller this much after its packet (the rUDP
   * request after the notice) */
  guint code_lag, rtt1_lag;
  /* results */
  GstTwoflowSessionRate *sr;
  gdouble tgt[1000];            /* target per 100 ms */
  gdouble got[2][1000];         /* delivered bit/s per 100 ms per flow */
  GstClockTime rtt_hist[1000];  /* the RTT per 100 ms */
  guint64 drops_tail;
  guint64 drops_from[1000];     /* tail drops per 100 ms */
} Sim;

static void
simulate (Sim * sim)
{
  GQueue queue = G_QUEUE_INIT;  /* waiting at the bottleneck */
  GQueue flight = G_QUEUE_INIT; /* left the queue, ack pending */
  GRand *rand = g_rand_new_with_seed (7);
  GstClockTime now, step = 100 * GST_USECOND, last_rtt = sim->prop;
  gdouble credit_s = 0, service = 0;
  guint64 s_sent = 0, s_lost = 0, s_deliv = 0;
  /* Reno */
  gdouble cwnd = sim->reno_cwnd0 > 0 ? sim->reno_cwnd0 : 10;
  guint inflight = 0;
  GstClockTime last_halving = 0;
  guint64 target = gst_twoflow_session_rate_get_target (sim->sr);

  for (now = 0; now < sim->duration; now += step) {
    guint slot = now / (100 * MS);
    gdouble cap = sim->capacity (now);
    gdouble rate = MIN (sim->code_lag && slot >= sim->code_lag + 1 ?
        sim->tgt[MIN (slot - sim->code_lag, 999)] : (gdouble) target,
        sim->video);
    gint f;

    /* senders */
    credit_s += rate * (step / 1e9) / 8;
    for (f = 0; f < 2; f++) {
      while (f == 0 ? credit_s >= PKT : (sim->reno && inflight < cwnd)) {
        Pkt *p = g_new0 (Pkt, 1);

        p->flow = f;
        p->sent = now;
        if (f == 0) {
          credit_s -= PKT;
          s_sent++;
        } else {
          inflight++;
        }
        if (g_rand_double (rand) < sim->loss + (f == 0 ? sim->sess_loss : 0)) {
          p->lost = TRUE;
          p->ack = now + sim->prop + 10 * MS;
          g_queue_push_tail (&flight, p);
        } else if (queue.length >= sim->qlimit) {
          p->lost = TRUE;
          p->ack = now + sim->prop + queue.length * PKT * 8 / cap * GST_SECOND
              + 10 * MS;
          sim->drops_tail++;
          if (slot < 1000)
            sim->drops_from[slot]++;
          g_queue_push_tail (&flight, p);
        } else {
          g_queue_push_tail (&queue, p);
        }
      }
    }
    /* the bottleneck */
    service += cap * (step / 1e9) / 8;
    while (service >= PKT && !g_queue_is_empty (&queue)) {
      Pkt *p = g_queue_pop_head (&queue);
      service -= PKT;
      p->qdelay = now - p->sent;
      p->ack = now + sim->prop;
      if (slot < 1000)
        sim->got[p->flow][slot] += PKT * 8 * 10;
      g_queue_push_tail (&flight, p);
    }
    if (g_queue_is_empty (&queue))
      service = MIN (service, PKT);
    /* acks (the flight queue is near enough to ack order) */
    {
      GList *l = flight.head;
      while (l) {
        GList *next = l->next;
        Pkt *p = l->data;
        if (p->ack <= now) {
          if (p->flow == 0) {
            if (p->lost)
              s_lost++;
            else {
              s_deliv += PKT;
              last_rtt = sim->prop + p->qdelay;
            }
          } else {
            inflight--;
            if (p->lost) {
              if (now > last_halving + sim->prop + (GstClockTime) (queue.length
                      * PKT * 8 / cap * GST_SECOND)) {
                cwnd = MAX (cwnd / 2, 2);
                last_halving = now;
              }
            } else {
              cwnd += 1 / cwnd;
            }
          }
          g_queue_delete_link (&flight, l);
          g_free (p);
        }
        l = next;
      }
    }
    /* the server's poll of the transports every 100 ms */
    if (now % (100 * MS) == 0 && now > 0) {
      guint64 t;
      if (sim->rtt0_until == 0 || now < sim->rtt0_until)
        gst_twoflow_session_rate_handle_rtt (sim->sr, 0, last_rtt, now);
      if (slot < 1000)
        sim->rtt_hist[slot] = last_rtt;
      if (sim->rtt1 == 1)
        gst_twoflow_session_rate_handle_rtt (sim->sr, 1, last_rtt, now);
      else if (sim->rtt1 == 2 && slot >= sim->rtt1_lag && slot < 1000)
        gst_twoflow_session_rate_handle_clean_rtt (sim->sr, 1,
            sim->rtt_hist[slot - sim->rtt1_lag], now);
      gst_twoflow_session_rate_handle_counters (sim->sr, 0, s_sent, s_lost,
          s_deliv, now);
      if (gst_twoflow_session_rate_poll (sim->sr, now, &t))
        target = t;
      if (slot < 1000)
        sim->tgt[slot] = target;
    }
  }
  g_queue_clear_full (&queue, g_free);
  g_queue_clear_full (&flight, g_free);
  g_rand_free (rand);
}

static gdouble
cap_10m (GstClockTime t)
{
  return 10e6;
}

static gdouble
cap_5m (GstClockTime t)
{
  return 5e6;
}

/* 10 -> 1.5 Mbit/s at 10 s, back to 10 at 20 s */
static gdouble
cap_step (GstClockTime t)
{
  return t >= 10 * GST_SECOND && t < 20 * GST_SECOND ? 1.5e6 : 10e6;
}

static GstTwoflowSessionRate *
new_session (gdouble video)
{
  GstTwoflowSessionRateConfig c;

  gst_twoflow_session_rate_config_init (&c);
  c.max_bitrate = video * 1.25;
  return gst_twoflow_session_rate_new (&c);
}

static void
sim_init (Sim * sim, gdouble (*cap) (GstClockTime), gdouble loss,
    gdouble video, guint seconds)
{
  memset (sim, 0, sizeof (*sim));
  sim->capacity = cap;
  sim->prop = 40 * MS;
  sim->qlimit = 80;
  sim->loss = loss;
  sim->video = video;
  sim->duration = seconds * GST_SECOND;
  sim->sr = new_session (video);
}

static gdouble
mean (const gdouble * v, guint from, guint to)
{
  gdouble s = 0;
  guint i;
  for (i = from; i < to; i++)
    s += v[i];
  return s / (to - from);
}

/* isolated random loss on a path with headroom: never below the video */
static void
random_loss (gdouble loss)
{
  Sim sim;
  GstTwoflowSessionRateStats st;

  sim_init (&sim, cap_10m, loss, 3e6, 30);
  simulate (&sim);
  gst_twoflow_session_rate_get_stats (sim.sr, &st);
  GST_INFO ("loss %.3f: min target %" G_GUINT64_FORMAT ", events %"
      G_GUINT64_FORMAT ", p %.4f, decreases %" G_GUINT64_FORMAT, loss,
      st.min_target, st.loss_events, st.loss_event_rate, st.decreases);
  fail_unless (st.loss_events > 0);
  fail_unless (st.min_target >= 3e6, "min target %" G_GUINT64_FORMAT,
      st.min_target);
  fail_unless (mean (sim.got[0], 20, 300) > 0.95 * 3e6 * (1 - loss));
  gst_twoflow_session_rate_free (sim.sr);
}

GST_START_TEST (test_random_loss)
{
  random_loss (0.005);
  random_loss (0.01);
  random_loss (0.03);
}

GST_END_TEST;

/* the target back at 3 Mbit/s after the capacity returns (20 s), in
 * updates (0: never) */
static guint
back_after_step (const Sim * sim)
{
  guint i;

  for (i = 200; i < 300; i++)
    if (sim->tgt[i] >= 3e6)
      return i - 200;
  return 0;
}

static void
capacity_step (gdouble loss, guint qlimit)
{
  Sim sim;
  guint i, first_below = 0, first_back = 0;

  sim_init (&sim, cap_step, loss, 3e6, 30);
  sim.qlimit = qlimit;
  simulate (&sim);
  for (i = 100; i < 200 && !first_below; i++)
    if (sim.tgt[i] <= 1.5e6)
      first_below = i;
  for (i = 200; i < 300 && !first_back; i++)
    if (sim.tgt[i] >= 3e6)
      first_back = i;
  GST_INFO ("loss %.3f, queue %u: below 1.5 Mbit/s %.1f s after the drop, "
      "mean target 11-20 s %.0f, delivered %.0f; back at 3 Mbit/s %.1f s "
      "after, tail drops %" G_GUINT64_FORMAT, loss, qlimit,
      (first_below - 100) / 10.0,
      mean (sim.tgt, 110, 200), mean (sim.got[0], 110, 200),
      (first_back - 200) / 10.0, sim.drops_tail);
  for (i = 0; i < 300; i += 5)
    GST_LOG ("%4.1f s target %8.0f got %8.0f", i / 10.0, sim.tgt[i],
        sim.got[0][i]);
  /* followed within a second */
  fail_unless (first_below > 0 && first_below <= 110, "%u", first_below);
  /* and kept near it, not far below (without a queue to see, only loss
   * that persists says the target is above it: 1.55 Mbit/s on the mean,
   * 1.53 when every heavy loss was congestion) */
  fail_unless (mean (sim.tgt, 110, 200) < (qlimit < 10 ? 1.2 : 1.0) * 1.5e6);
  fail_unless (mean (sim.got[0], 110, 200) > 0.6 * 1.5e6);
  /* (a policer's overshoots after the first reaction are congestion at
   * once: 236 tail drops in the dip, 327 when each had to persist) */
  if (qlimit < 10)
    fail_unless (sim.drops_tail < 280, "%" G_GUINT64_FORMAT, sim.drops_tail);
  /* the freed capacity taken back within 3 s (issue 28's goal; 2.5 s
   * here leaves the server's poll and the transcoder their share): the
   * increase accelerates while the path stays clean (at a constant 25 %/s
   * it took 2.9 s) */
  fail_unless (first_back > 0 && first_back <= 225, "%u", first_back);
  gst_twoflow_session_rate_free (sim.sr);
}

GST_START_TEST (test_capacity_step)
{
  capacity_step (0, 80);
  capacity_step (0.01, 80);
  /* a queue too short to see (3 packets, 22 ms at 1.5 Mbit/s; as a
   * policer): the drop shows as loss only, which persists — below
   * 1.5 Mbit/s 0.9 s after it (0.5 s when every heavy loss was
   * congestion) */
  capacity_step (0, 3);
}

GST_END_TEST;

/* A transport's last sample, after it stopped sending, shows a queue;
 * the other transport's later samples show none: the path is clean once
 * those are SUPERSEDED (500 ms) newer, not only after FRESH (1 s). */
GST_START_TEST (test_superseded_rtt)
{
  GstTwoflowSessionRate *sr = new_session (3e6);
  GstTwoflowSessionRateStats st;
  GstClockTime t;
  guint64 target;

  for (t = 100 * MS; t <= 5 * GST_SECOND; t += 100 * MS) {
    gst_twoflow_session_rate_handle_rtt (sr, 0, 40 * MS, t);
    gst_twoflow_session_rate_handle_rtt (sr, 1, 40 * MS, t);
    gst_twoflow_session_rate_poll (sr, t, &target);
  }
  /* source 0's last sample holds 60 ms of queue; from then on source 1
   * alone, clean */
  gst_twoflow_session_rate_handle_rtt (sr, 0, 100 * MS, t);
  for (; t <= 5 * GST_SECOND + 400 * MS; t += 100 * MS) {
    gst_twoflow_session_rate_handle_rtt (sr, 1, 40 * MS, t);
    gst_twoflow_session_rate_poll (sr, t, &target);
  }
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless_equals_uint64 (st.qdelay, 60 * MS);
  for (; t <= 5 * GST_SECOND + 700 * MS; t += 100 * MS) {
    gst_twoflow_session_rate_handle_rtt (sr, 1, 40 * MS, t);
    gst_twoflow_session_rate_poll (sr, t, &target);
  }
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless_equals_uint64 (st.qdelay, 0);
  fail_unless (st.state != GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

/* A TCP SRTT spike with a large variation (host scheduling on a loaded
 * machine: 109 ms, rttvar 51 ms, on a 45 ms path) while the rUDP
 * receiver's samples show a clean path is jitter: no decrease. The same
 * spike with no clean sample to vouch for the path, or a queue beyond
 * twice the variation, is a queue. */
GST_START_TEST (test_smoothed_rtt_jitter)
{
  GstTwoflowSessionRateStats st;
  gint mode;

  for (mode = 0; mode < 3; mode++) {
    GstTwoflowSessionRate *sr = new_session (3e6);
    GstClockTime t;
    guint64 target;

    for (t = 100 * MS; t <= 3 * GST_SECOND; t += 100 * MS) {
      gst_twoflow_session_rate_handle_smoothed_rtt (sr, 0, 45 * MS, 5 * MS,
          t);
      if (t % (200 * MS) == 0)
        gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 41 * MS, t);
      gst_twoflow_session_rate_poll (sr, t, &target);
    }
    for (; t <= 5 * GST_SECOND; t += 100 * MS) {
      /* mode 2: a real queue, 120 ms above the minimum, rttvar 20 ms */
      gst_twoflow_session_rate_handle_smoothed_rtt (sr, 0,
          mode == 2 ? 165 * MS : 109 * MS, mode == 2 ? 20 * MS : 51 * MS, t);
      /* mode 1: the rUDP samples show the queue too */
      if (t % (200 * MS) == 0)
        gst_twoflow_session_rate_handle_clean_rtt (sr, 1,
            mode == 1 ? 110 * MS : 41 * MS, t);
      gst_twoflow_session_rate_poll (sr, t, &target);
    }
    gst_twoflow_session_rate_get_stats (sr, &st);
    if (mode == 0) {
      fail_unless_equals_uint64 (st.decreases, 0);
      fail_unless (st.jitter_rtts >= 15, "%" G_GUINT64_FORMAT, st.jitter_rtts);
      fail_unless_equals_uint64 (st.target, 3750000);       /* the max */
    } else {
      fail_unless (st.decreases_qdelay > 0, "mode %d", mode);
      /* mode 1: until the rUDP's next sample (200 ms) shows the queue */
      fail_unless (st.jitter_rtts <= (mode == 1 ? 2 : 0), "mode %d: %"
          G_GUINT64_FORMAT, mode, st.jitter_rtts);
      fail_unless (st.target < 3750000);
    }
    gst_twoflow_session_rate_free (sr);
  }
}

GST_END_TEST;

/* A queue building at a capacity drop: the TCP SRTT rises 25 ms per read
 * and its rttvar with it (the showdown's MPEG-2 step: 70, 92, 107, 141,
 * 165, 192 ms, rttvar 36..147), while the rUDP receiver's samples, late,
 * still say the path is clean. Not jitter: the decrease comes at the
 * second rising read (it came once the clean samples stopped, 0.4-0.5 s
 * later, and the 80-packet queue overflowed). A single jump that stays
 * (test_smoothed_rtt_jitter) is still jitter. */
GST_START_TEST (test_smoothed_rtt_rising)
{
  GstTwoflowSessionRate *sr = new_session (3e6);
  GstTwoflowSessionRateStats st;
  GstClockTime t, srtt = 45 * MS;
  guint64 target;

  for (t = 100 * MS; t <= 3 * GST_SECOND; t += 100 * MS) {
    gst_twoflow_session_rate_handle_smoothed_rtt (sr, 0, 45 * MS, 5 * MS, t);
    if (t % (200 * MS) == 0)
      gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 41 * MS, t);
    gst_twoflow_session_rate_poll (sr, t, &target);
  }
  for (; t <= 3 * GST_SECOND + 300 * MS; t += 100 * MS) {
    srtt += 25 * MS;
    gst_twoflow_session_rate_handle_smoothed_rtt (sr, 0, srtt,
        (srtt - 41 * MS) * 3 / 4 + 5 * MS, t);
    if (t % (200 * MS) == 0)
      gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 41 * MS, t);
    gst_twoflow_session_rate_poll (sr, t, &target);
  }
  gst_twoflow_session_rate_get_stats (sr, &st);
  /* 70 ms (under the threshold's 30 ms of queue), 95 taken: 50 ms in
   * 0.2 s over two rising reads */
  fail_unless (st.decreases_qdelay > 0, "jitter-rtts %" G_GUINT64_FORMAT,
      st.jitter_rtts);
  fail_unless_equals_uint64 (st.jitter_rtts, 0);
  fail_unless (st.target < 3750000);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

/* A clean-only RTT source: a queue it shows is no input, its minimum
 * follows every sample, a clean sample is the path's state */
GST_START_TEST (test_clean_rtt)
{
  GstTwoflowSessionRate *sr = new_session (3e6);
  GstTwoflowSessionRateStats st;
  GstClockTime t = 100 * MS;
  guint64 target;

  gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 40 * MS, t);
  gst_twoflow_session_rate_poll (sr, t, &target);
  /* (0.7 s later: 110 ms in 0.7 s is a slower rise than queue-rise, 0.2 s
   * per second; test_queue_rise has the fast one) */
  for (t = 800 * MS; t <= 2 * GST_SECOND; t += 100 * MS) {
    gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 150 * MS, t);
    gst_twoflow_session_rate_poll (sr, t, &target);
  }
  /* no queue seen: the 40 ms sample went stale, no congestion */
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless_equals_uint64 (st.qdelay, 0);
  fail_unless_equals_uint64 (st.decreases, 0);
  /* a lower minimum, then samples within the threshold of it count */
  gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 30 * MS, t);
  gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 55 * MS, t + 50 * MS);
  t += 100 * MS;
  gst_twoflow_session_rate_poll (sr, t, &target);
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless_equals_uint64 (st.qdelay, 25 * MS);
  fail_unless_equals_uint64 (st.min_rtt, 30 * MS);

  /* a queue beyond 250 ms (no lateness budget) is ours: it counts, and so
   * does every sample after it until the queue is gone */
  t += 100 * MS;
  gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 330 * MS, t);
  gst_twoflow_session_rate_poll (sr, t, &target);
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless_equals_uint64 (st.qdelay, 300 * MS);
  t += 100 * MS;
  gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 130 * MS, t);
  gst_twoflow_session_rate_poll (sr, t, &target);
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless_equals_uint64 (st.qdelay, 100 * MS);
  t += 100 * MS;
  gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 35 * MS, t);
  /* an episode of 3 s: after it, queued samples do not count until a
   * clean one came (their queue stands: a competing flow's) */
  {
    GstClockTime t0 = t + 100 * MS;

    for (t = t0; t < t0 + 4500 * MS; t += 100 * MS) {
      gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 330 * MS, t);
      gst_twoflow_session_rate_poll (sr, t, &target);
    }
  }
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless_equals_uint64 (st.qdelay, 0);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

/* A clean-only RTT source: a queue that rises from a clean sample at
 * queue-rise (0.2 s per second) or faster is ours, as one beyond the
 * lateness budget: it counts, and so do the samples after it until the
 * queue is gone; a slower rise (a competing TCP's: a packet per RTT) does
 * not; with queue-rise 0 neither does the fast one. */
GST_START_TEST (test_queue_rise)
{
  GstTwoflowSessionRateStats st;
  gint mode;

  for (mode = 0; mode < 3; mode++) {
    GstTwoflowSessionRateConfig c;
    GstTwoflowSessionRate *sr;
    GstClockTime t, q, seen_at = GST_CLOCK_TIME_NONE;
    guint64 target;

    gst_twoflow_session_rate_config_init (&c);
    c.max_bitrate = 3750000;
    if (mode == 2)
      c.queue_rise = 0;
    sr = gst_twoflow_session_rate_new (&c);
    for (t = 200 * MS; t <= 3 * GST_SECOND; t += 200 * MS) {
      gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 40 * MS, t);
      gst_twoflow_session_rate_poll (sr, t, &target);
      gst_twoflow_session_rate_poll (sr, t + 100 * MS, &target);
    }
    /* from 3.2 s, a sample every 200 ms (as the rUDP receiver's): mode 0
     * and 2, 0.5 s of queue per second; mode 1, 0.05 s */
    for (q = 0; t <= 6 * GST_SECOND; t += 200 * MS) {
      q += (mode == 1 ? 10 : 100) * MS;
      gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 40 * MS + q, t);
      gst_twoflow_session_rate_poll (sr, t, &target);
      gst_twoflow_session_rate_get_stats (sr, &st);
      if (st.decreases_qdelay > 0 && !GST_CLOCK_TIME_IS_VALID (seen_at))
        seen_at = t;
      gst_twoflow_session_rate_poll (sr, t + 100 * MS, &target);
    }
    gst_twoflow_session_rate_get_stats (sr, &st);
    GST_INFO ("mode %d: queue %.0f ms, seen %.0f ms, first decrease at "
        "%.1f s, target %" G_GUINT64_FORMAT, mode, q / 1e6, st.qdelay / 1e6,
        GST_CLOCK_TIME_IS_VALID (seen_at) ? seen_at / 1e9 : -1.0, st.target);
    if (mode == 1) {
      /* a slow rise: the clean samples went stale, the queue is left to
       * the other inputs */
      fail_unless_equals_uint64 (st.qdelay, 0);
      fail_unless_equals_uint64 (st.decreases_qdelay, 0);
    } else {
      /* every sample counts from the first that counted */
      fail_unless_equals_uint64 (st.qdelay, q);
      fail_unless (st.target < 3750000);
      /* the fast rise from its first sample beyond twice the threshold
       * (100 ms, 0.2 s after the last clean one); without the rule from
       * the first beyond 250 ms (300 ms, 0.4 s later) */
      fail_unless_equals_uint64 (seen_at, mode == 0 ? 3200 * MS : 3600 * MS);
    }
    gst_twoflow_session_rate_free (sr);
  }
}

GST_END_TEST;

/* The server's essential flow sends its last segment at 17 s, inside the
 * dip: its RTT stops. Without another RTT source the controller is blind
 * to the queue from then on (it sees it only through tail drops); with a
 * second transport's every sample it takes the capacity back as with one;
 * with its clean samples only (the server's rUDP input) it is back within
 * the 3 s too. */
GST_START_TEST (test_step_essential_ends)
{
  Sim sim;
  guint back[3];
  gint mode;

  for (mode = 0; mode < 3; mode++) {
    sim_init (&sim, cap_step, 0, 3e6, 30);
    sim.rtt0_until = 17 * GST_SECOND;
    sim.rtt1 = mode;
    simulate (&sim);
    back[mode] = back_after_step (&sim);
    gst_twoflow_session_rate_free (sim.sr);
  }
  GST_INFO ("back at 3 Mbit/s after the capacity returned: %.1f s without "
      "a second RTT source, %.1f s with its every sample, %.1f s with its "
      "clean ones (0: never)", back[0] / 10.0, back[1] / 10.0,
      back[2] / 10.0);
  fail_unless (back[1] > 0 && back[1] <= 25, "%u", back[1]);
  fail_unless (back[0] == 0 || back[0] > back[1], "%u vs %u", back[0],
      back[1]);
  fail_unless (back[2] > 0 && back[2] <= 30, "%u", back[2]);
}

GST_END_TEST;

/* The showdown's ERAP step: the essential flow's RTT ends at 3 s (it sends
 * the clip's essential frames first), the rUDP receiver's clean samples
 * come 300 ms after their packet, and what the target asks for reaches
 * the link 800 ms later (the transcoder and the smoothed sender). A
 * queue seen only beyond 250 ms (queue-rise 0) overflowed the 80-packet
 * queue again and again through the dip: 157 tail drops after the first
 * reaction (12-20 s); with queue-rise the rise is seen from ~60 ms of
 * queue: 70. (What is left comes from the increase, which accelerates
 * into a rate that reaches the link 0.8 s later: not accelerating beyond
 * 1.5 x what got through in the last second took it to 34, bounding the
 * TCP floor by that too to 0 — but in the system, where the transcoder
 * dropping frames below its floor delivers far less than the target,
 * the first kept the target at 25 %/s for seconds after a collapse
 * beside a bulk TCP. The simulation has no sender cap either: in the
 * system the rUDP sender is capped at what gets through as soon as the
 * queue is seen.) */
GST_START_TEST (test_step_lagged)
{
  guint64 drops[2];
  guint back[2];
  gint mode;

  for (mode = 0; mode < 2; mode++) {
    GstTwoflowSessionRateConfig c;
    Sim sim;
    guint i;

    sim_init (&sim, cap_step, 0, 3e6, 30);
    gst_twoflow_session_rate_free (sim.sr);
    gst_twoflow_session_rate_config_init (&c);
    c.max_bitrate = 3.75e6;
    if (mode == 1)
      c.queue_rise = 0;
    sim.sr = gst_twoflow_session_rate_new (&c);
    sim.rtt0_until = 3 * GST_SECOND;
    sim.rtt1 = 2;
    sim.code_lag = 8;
    sim.rtt1_lag = 3;
    simulate (&sim);
    for (drops[mode] = 0, i = 120; i < 200; i++)
      drops[mode] += sim.drops_from[i];
    back[mode] = back_after_step (&sim);
    for (i = 80; i < 260; i += 2)
      GST_LOG ("mode %d %4.1f s target %8.0f got %8.0f drops %"
          G_GUINT64_FORMAT, mode, i / 10.0, sim.tgt[i], sim.got[0][i],
          sim.drops_from[i] + sim.drops_from[i + 1]);
    gst_twoflow_session_rate_free (sim.sr);
  }
  GST_INFO ("tail drops 12-20 s: %" G_GUINT64_FORMAT " (queue-rise 0: %"
      G_GUINT64_FORMAT "); target back %.1f s after the capacity (%.1f s)",
      drops[0], drops[1], back[0] / 10.0, back[1] / 10.0);
  fail_unless (drops[0] * 2 < drops[1], "%" G_GUINT64_FORMAT " vs %"
      G_GUINT64_FORMAT, drops[0], drops[1]);
  fail_unless (back[0] > 0 && back[0] <= 30, "%u", back[0]);
}

GST_END_TEST;

/* The showdown's Gilbert-Elliott path as the server feeds it: the rUDP
 * receiver's reports every 200 ms (54 packets each: 3 Mbit/s on a
 * 10 Mbit/s link), per packet P(good -> bad) 0.0025, P(bad -> good)
 * 0.25, every packet lost in the bad state, and bursts as long as the
 * one seed 1 had in every showdown run (27 packets in 0.1-0.2 s, 11-27 %
 * of the one-second window): 35 packets at 6 s, 36 in 0.4 s at 24 s. Mode 0: a clean path (ERAP's RTT
 * until 3 s, the rUDP receiver's 40-43 ms): no decrease. Mode 1: the
 * same with loss-burst 0 (every heavy loss congestion, the rule before):
 * loss decreases. Mode 2: the same loss while the rUDP samples show a
 * queue growing from 5 s at 40 ms per second (too slow and too short to
 * be taken as the session's own, test_queue_rise): the loss with it is
 * congestion. */
GST_START_TEST (test_loss_bursts)
{
  gint mode;

  for (mode = 0; mode < 3; mode++) {
    GstTwoflowSessionRateConfig c;
    GstTwoflowSessionRate *sr;
    GstTwoflowSessionRateStats st;
    GRand *rand = g_rand_new_with_seed (1);
    guint64 packets = 0, lost = 0, target;
    gboolean bad = FALSE;
    GstClockTime t;

    gst_twoflow_session_rate_config_init (&c);
    c.max_bitrate = 3750000;
    if (mode == 1)
      c.loss_burst = 0;
    sr = gst_twoflow_session_rate_new (&c);
    for (t = 100 * MS; t <= 30 * GST_SECOND; t += 100 * MS) {
      if (t <= 3 * GST_SECOND)
        gst_twoflow_session_rate_handle_rtt (sr, 0, 41 * MS, t);
      if (t % (200 * MS) == 0) {
        GstClockTime q = 0;
        guint i;

        for (i = 0; i < 54; i++) {
          gboolean l = bad || (t == 6 * GST_SECOND && i >= 10 && i < 45)
              || (t >= 24 * GST_SECOND && t < 24300 * MS && i % 3 == 0);

          packets++;
          lost += l;
          if (bad ? g_rand_double (rand) < 0.25 : g_rand_double (rand) <
              0.0025)
            bad = !bad;
        }
        if (mode == 2 && t > 5 * GST_SECOND)
          q = MIN (t - 5 * GST_SECOND, 5 * GST_SECOND) / 25;
        gst_twoflow_session_rate_handle_counters (sr, 1, packets, lost,
            (packets - lost) * PKT, t);
        gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 40 * MS +
            g_rand_int_range (rand, 0, 4) * MS + q, t);
      }
      gst_twoflow_session_rate_poll (sr, t, &target);
    }
    gst_twoflow_session_rate_get_stats (sr, &st);
    GST_INFO ("mode %d: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
        " lost, loss decreases %" G_GUINT64_FORMAT ", taken as bursts %"
        G_GUINT64_FORMAT ", min target %" G_GUINT64_FORMAT, mode, lost,
        packets, st.decreases_loss, st.loss_bursts, st.min_target);
    fail_unless_equals_uint64 (st.decreases_qdelay, 0);
    if (mode == 0) {
      fail_unless_equals_uint64 (st.decreases, 0);
      fail_unless (st.loss_bursts > 0);
      fail_unless_equals_uint64 (st.min_target, 3750000);
    } else {
      fail_unless (st.decreases_loss > 0, "mode %d", mode);
      fail_unless (st.min_target < 3750000);
    }
    gst_twoflow_session_rate_free (sr);
    g_rand_free (rand);
  }
}

GST_END_TEST;

/* A session at @video bit/s whose rUDP reports (every 200 ms, @n packets
 * each) lose each packet with probability @p, the RTT clean throughout,
 * for @duration; its stats at the end. */
static void
random_loss_run (gdouble video, guint seed, guint n, gdouble p,
    GstClockTime duration, GstTwoflowSessionRateStats * st)
{
  GstTwoflowSessionRate *sr = new_session (video);
  GRand *rand = g_rand_new_with_seed (seed);
  guint64 packets = 0, lost = 0, target;
  GstClockTime t;

  for (t = 100 * MS; t <= duration; t += 100 * MS) {
    if (t % (200 * MS) == 0) {
      guint i;

      for (i = 0; i < n; i++) {
        packets++;
        lost += g_rand_double (rand) < p;
      }
      gst_twoflow_session_rate_handle_counters (sr, 1, packets, lost,
          (packets - lost) * PKT, t);
      gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 41 * MS, t);
    }
    gst_twoflow_session_rate_poll (sr, t, &target);
  }
  gst_twoflow_session_rate_get_stats (sr, st);
  gst_twoflow_session_rate_free (sr);
  g_rand_free (rand);
}

/* 5 % random loss as the rUDP receiver reports it (38 packets per 200 ms:
 * H.264's 2.1 Mbit/s) on a clean path, 20 seeds of 30 s: a second now
 * and then reads above 10 %, spread over the second as a policer's would
 * be; the loss less a standard deviation of its count does not (without
 * that margin 1 of the 20 runs made loss decreases, with every heavy
 * loss congestion 5). */
GST_START_TEST (test_loss_fluctuates)
{
  guint seed, decreased = 0;

  for (seed = 1; seed <= 20; seed++) {
    GstTwoflowSessionRateStats st;

    random_loss_run (3e6, seed, 38, 0.05, 30 * GST_SECOND, &st);
    if (st.decreases > 0)
      decreased++;
  }
  GST_INFO ("runs with a decrease: %u of 20", decreased);
  fail_unless_equals_int (decreased, 0);
}

GST_END_TEST;

/* Heavy random loss that goes on at a few packets per second (15 % at
 * 30 packets a second, a clip of ~150 kbit/s, the path clean): congestion,
 * though no one-second window holds enough losses to clear the margin of
 * their count (no decrease with the one-second window alone). */
GST_START_TEST (test_loss_persists_few_packets)
{
  GstTwoflowSessionRateStats st;

  random_loss_run (180000, 3, 6, 0.15, 15 * GST_SECOND, &st);
  GST_INFO ("%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " lost, "
      "%" G_GUINT64_FORMAT " loss decreases, %" G_GUINT64_FORMAT " bursts",
      st.lost, st.packets, st.decreases_loss, st.loss_bursts);
  fail_unless (st.decreases_loss > 0);
}

GST_END_TEST;

/* Heavy loss from the session's first report (a bulk TCP's queue stood
 * before it came: the RTT's minimum holds that queue, the RTT looks
 * clean), 40 % of the packets for 0.6 s, then none: congestion, not a
 * burst (taken as a burst, the H.264 clip's first GOP was lost). */
GST_START_TEST (test_loss_at_start)
{
  GstTwoflowSessionRate *sr = new_session (2.1e6);
  GstTwoflowSessionRateStats st;
  guint64 packets = 0, lost = 0, target;
  GstClockTime t;

  for (t = 100 * MS; t <= 5 * GST_SECOND; t += 100 * MS) {
    if (t % (200 * MS) == 0) {
      packets += 38;
      if (t <= 600 * MS)
        lost += 15;
      gst_twoflow_session_rate_handle_counters (sr, 1, packets, lost,
          (packets - lost) * PKT, t);
      gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 41 * MS, t);
    }
    gst_twoflow_session_rate_poll (sr, t, &target);
  }
  gst_twoflow_session_rate_get_stats (sr, &st);
  GST_INFO ("%" G_GUINT64_FORMAT " loss decreases, %" G_GUINT64_FORMAT
      " bursts", st.decreases_loss, st.loss_bursts);
  fail_unless (st.decreases_loss > 0);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

/* Loss without a queue that goes on (a policer at 0.7 x the session's
 * rate): congestion within a second, though the RTT stays clean. */
GST_START_TEST (test_loss_persists)
{
  GstTwoflowSessionRate *sr = new_session (3e6);
  GstTwoflowSessionRateStats st;
  guint64 packets = 0, lost = 0, target;
  GstClockTime t, first = GST_CLOCK_TIME_NONE;

  for (t = 100 * MS; t <= 15 * GST_SECOND; t += 100 * MS) {
    if (t % (200 * MS) == 0) {
      packets += 54;
      if (t >= 10 * GST_SECOND)
        lost += 16;
      gst_twoflow_session_rate_handle_counters (sr, 1, packets, lost,
          (packets - lost) * PKT, t);
      gst_twoflow_session_rate_handle_clean_rtt (sr, 1, 41 * MS, t);
    }
    gst_twoflow_session_rate_poll (sr, t, &target);
    gst_twoflow_session_rate_get_stats (sr, &st);
    if (st.decreases_loss > 0 && !GST_CLOCK_TIME_IS_VALID (first))
      first = t;
  }
  GST_INFO ("first loss decrease %.1f s after the policer's start",
      GST_CLOCK_TIME_IS_VALID (first) ? (first - 10 * GST_SECOND) / 1e9 :
      -1.0);
  fail_unless (GST_CLOCK_TIME_IS_VALID (first));
  fail_unless (first >= 10 * GST_SECOND && first <= 11 * GST_SECOND,
      "%" GST_TIME_FORMAT, GST_TIME_ARGS (first));
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

/* A queue that grows after a capacity drop, with one loss event so far
 * (the equation allows far more than gets through): the target goes
 * below the delivered rate, so the queue drains; held at the delivered
 * rate (the floor before) it stayed full. Then the queue empties and the
 * target climbs back past the old rate within 3 s. */
GST_START_TEST (test_congested_floor)
{
  GstTwoflowSessionRateConfig c;
  GstTwoflowSessionRate *sr;
  GstTwoflowSessionRateStats st;
  guint64 packets = 0, lost = 0, t;
  GstClockTime now = 0, back = GST_CLOCK_TIME_NONE;
  guint i;

  gst_twoflow_session_rate_config_init (&c);
  c.max_bitrate = 3750000;
  sr = gst_twoflow_session_rate_new (&c);
  for (i = 1; i <= 160; i++) {
    /* 0-10 s: 3 Mbit/s, empty queue, one loss at 1 s (p ~ 1/1500 by
     * 10 s: at 140 ms the equation allows 3.5 Mbit/s); 10-13 s: 1.5
     * Mbit/s gets through, a queue of 100 ms; from 13 s: 10 Mbit/s,
     * empty */
    gboolean dip = i > 100 && i <= 130;

    now = i * 100 * MS;
    packets += dip ? 13 : 27;
    if (i == 10)
      lost++;
    gst_twoflow_session_rate_handle_rtt (sr, 0, (dip ? 140 : 40) * MS, now);
    gst_twoflow_session_rate_handle_counters (sr, 0, packets, lost,
        packets * PKT, now);
    gst_twoflow_session_rate_poll (sr, now, &t);
    gst_twoflow_session_rate_get_stats (sr, &st);
    GST_LOG ("%.1f s %s target %" G_GUINT64_FORMAT " delay %" G_GUINT64_FORMAT
        " tcp %" G_GUINT64_FORMAT " delivered %" G_GUINT64_FORMAT " p %f",
        now / 1e9, gst_twoflow_session_rate_state_name (st.state), st.target,
        st.delay_rate, st.tcp_rate, st.delivered_rate, st.loss_event_rate);
    if (i >= 115 && i <= 130) {
      fail_unless (st.state == GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED);
      fail_unless (st.target < 0.9 * st.delivered_rate, "%.1f s: target %"
          G_GUINT64_FORMAT " delivered %" G_GUINT64_FORMAT, now / 1e9,
          st.target, st.delivered_rate);
    }
    if (i > 130 && !GST_CLOCK_TIME_IS_VALID (back) && st.target >= 3000000)
      back = now;
  }
  fail_unless (GST_CLOCK_TIME_IS_VALID (back));
  GST_INFO ("target back at 3 Mbit/s %.1f s after the queue emptied",
      (back - 13 * GST_SECOND) / 1e9);
  fail_unless (back <= 16 * GST_SECOND, "%.1f s", back / 1e9);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

/* After a decrease the queue drains (the controller holds): with a loss
 * event counted (the equation allows far more than gets through), the
 * TCP floor stays at what gets through. At twice that (the floor's
 * bound on a path without a queue), the showdown's H.264 step saw the
 * target jump 1.0 -> 2.6 Mbit/s between its decreases. */
GST_START_TEST (test_hold_floor)
{
  GstTwoflowSessionRateConfig c;
  GstTwoflowSessionRate *sr;
  GstTwoflowSessionRateStats st;
  guint64 packets = 0, lost = 0, t;
  GstClockTime now;
  guint i, holds = 0;

  gst_twoflow_session_rate_config_init (&c);
  c.max_bitrate = 3750000;
  sr = gst_twoflow_session_rate_new (&c);
  for (i = 1; i <= 130; i++) {
    /* 0-10 s: 3 Mbit/s, one loss at 1 s; from 10 s 1.5 Mbit/s gets
     * through, the queue at 150 ms for 0.3 s, then draining by 10 ms per
     * update */
    gboolean dip = i > 100;
    guint q = i <= 100 ? 0 : i <= 103 ? 150 : MAX (150 - 10 * (gint) (i - 103),
        40);

    now = i * 100 * MS;
    packets += dip ? 13 : 27;
    if (i == 10)
      lost++;
    gst_twoflow_session_rate_handle_rtt (sr, 0, (40 + q) * MS, now);
    gst_twoflow_session_rate_handle_counters (sr, 0, packets, lost,
        packets * PKT, now);
    gst_twoflow_session_rate_poll (sr, now, &t);
    gst_twoflow_session_rate_get_stats (sr, &st);
    GST_LOG ("%.1f s %s target %" G_GUINT64_FORMAT " tcp %" G_GUINT64_FORMAT
        " delivered %" G_GUINT64_FORMAT, now / 1e9,
        gst_twoflow_session_rate_state_name (st.state), st.target,
        st.tcp_rate, st.delivered_rate);
    if (i > 100 && st.state == GST_TWOFLOW_SESSION_RATE_STATE_HOLD) {
      holds++;
      /* the floor no higher than what gets through: the target is the
       * delay model's */
      fail_unless (st.tcp_rate <= 1.05 * st.delivered_rate, "%.1f s: floor %"
          G_GUINT64_FORMAT " delivered %" G_GUINT64_FORMAT, now / 1e9,
          st.tcp_rate, st.delivered_rate);
      fail_unless_equals_uint64 (st.target, MAX (st.delay_rate, st.tcp_rate));
      fail_unless (st.target < 1.5 * st.delivered_rate);
    }
  }
  fail_unless (holds > 0);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

/* The lateness rule: what waits at the sender plus the queueing delay,
 * beyond the budget. On a clean path the sender may catch up (a backlog
 * beyond a quarter of the budget goes within drain-time); while the path
 * is congested the coding target is cut (never below a quarter of the
 * target, nor the code floor) and, with a queue beyond the budget, the
 * TCP floor is below what gets through, so that the queue drains. */
GST_START_TEST (test_lateness)
{
  GstTwoflowSessionRateConfig c;
  GstTwoflowSessionRate *sr;
  GstTwoflowSessionRateStats st;
  guint64 packets = 0, lost = 0, t;
  GstClockTime now;
  guint i;

  gst_twoflow_session_rate_config_init (&c);
  c.max_bitrate = 3750000;
  c.lateness_budget = 250 * MS;
  sr = gst_twoflow_session_rate_new (&c);
  for (i = 1; i <= 150; i++) {
    /* 0-5 s: 3 Mbit/s gets through, no queue; 5-10 s: a backlog of
     * 0.8 s at the sender (150 kB at 1.5 Mbit/s); 10-12 s: 1.5 Mbit/s
     * gets through, a queue of 100 ms, and the backlog; 12-15 s: a queue
     * of 500 ms and one loss (the equation's floor) */
    gboolean dip = i > 100;
    guint q = i <= 100 ? 0 : i <= 120 ? 100 : 500;
    guint64 backlog = i > 50 ? 150000 : 0;

    now = i * 100 * MS;
    packets += dip ? 13 : 27;
    if (i == 121)
      lost++;
    gst_twoflow_session_rate_handle_rtt (sr, 0, (40 + q) * MS, now);
    gst_twoflow_session_rate_handle_counters (sr, 0, packets, lost,
        packets * PKT, now);
    gst_twoflow_session_rate_handle_backlog (sr, 1, backlog, 1500000, now);
    if (i == 131)
      gst_twoflow_session_rate_set_code_floor (sr, 600000);
    gst_twoflow_session_rate_poll (sr, now, &t);
    gst_twoflow_session_rate_get_stats (sr, &st);
    GST_LOG ("%.1f s %s target %" G_GUINT64_FORMAT " code %" G_GUINT64_FORMAT
        " catch-up %" G_GUINT64_FORMAT " lateness %" GST_TIME_FORMAT
        " tcp %" G_GUINT64_FORMAT " delivered %" G_GUINT64_FORMAT, now / 1e9,
        gst_twoflow_session_rate_state_name (st.state), st.target,
        st.code_target, st.catchup_rate, GST_TIME_ARGS (st.lateness),
        st.tcp_rate, st.delivered_rate);
    fail_unless (st.code_target <= st.target);
    fail_unless_equals_uint64 (st.code_target,
        gst_twoflow_session_rate_get_code_target (sr));
    if (i > 10 && i <= 50) {
      /* nothing waits: nothing to do */
      fail_unless_equals_uint64 (st.code_target, st.target);
      fail_unless_equals_uint64 (st.catchup_rate, 0);
    } else if (i > 60 && i <= 100) {
      /* clean: catch up (1.5 + (0.8 - 0.0625) x 1.5 Mbit/s per s), no cut */
      fail_unless_equals_uint64 (st.code_target, st.target);
      fail_unless (st.catchup_rate > 2500000
          && st.catchup_rate <= 2 * st.target,
          "%.1f s: catch-up %" G_GUINT64_FORMAT, now / 1e9, st.catchup_rate);
    } else if (i > 102 && i <= 130 && (st.state ==
            GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED
            || st.state == GST_TWOFLOW_SESSION_RATE_STATE_HOLD)) {
      /* 0.9 s late, 0.65 s beyond the budget: coded at 0.35 x target
       * (0.4 x from 12 s: a quarter at least) */
      fail_unless_equals_uint64 (st.catchup_rate, 0);
      fail_unless (st.code_target <= 0.41 * st.target
          && st.code_target >= 0.25 * st.target - 1, "%.1f s: code %"
          G_GUINT64_FORMAT " target %" G_GUINT64_FORMAT, now / 1e9,
          st.code_target, st.target);
    }
    if (i > 131 && (st.state == GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED
            || st.state == GST_TWOFLOW_SESSION_RATE_STATE_HOLD)) {
      /* the code floor */
      fail_unless (st.code_target >= MIN (600000, st.target));
      /* a queue beyond the budget: the floor below what gets through */
      fail_unless (st.tcp_rate < 0.8 * st.delivered_rate, "%.1f s: floor %"
          G_GUINT64_FORMAT " delivered %" G_GUINT64_FORMAT, now / 1e9,
          st.tcp_rate, st.delivered_rate);
      fail_unless (st.target < st.delivered_rate);
    }
  }
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless (st.lateness_cuts > 0);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

/* beside a Reno flow (greedy session: the video's rate above the link):
 * about the fair share, neither starved nor starving */
/* The showdown's bulk rows: 5 Mbit/s, 40 ms, 80 packets, a greedy Reno
 * flow from the start (its drop-tail queue never empties: 70-180 ms),
 * the session application-limited at 3 Mbit/s with the system's delays
 * (the target on the link 800 ms later). @rtt0_until: source 0's every
 * RTT sample (ERAP's SRTT) until then, 0 always; from then on, with
 * @rudp, source 1's samples through handle_clean_rtt() 300 ms late. */
static void
bulk_run (Sim * sim, gdouble video, GstClockTime rtt0_until, gboolean rudp,
    guint seconds)
{
  GstTwoflowSessionRateConfig c;

  sim_init (sim, cap_5m, 0, video, seconds);
  /* (the simulated session's paced packets seldom meet the full queue
   * that Reno's bursts overflow; in the showdown its loss event rate
   * beside a bulk TCP was 0.2-0.8 %) */
  sim->sess_loss = 0.003;
  gst_twoflow_session_rate_free (sim->sr);
  gst_twoflow_session_rate_config_init (&c);
  c.max_bitrate = 1.42 * video; /* 1.25 x the clip's 1 s peak */
  sim->sr = gst_twoflow_session_rate_new (&c);
  sim->reno = TRUE;
  sim->code_lag = 8;
  sim->rtt0_until = rtt0_until;
  sim->rtt1 = rudp ? 2 : 0;
  sim->rtt1_lag = 3;
  simulate (sim);
}

/* after a bulk run: the controller's stats and the mean rates of the
 * session (@s) and of the Reno flow (@t) at 10-40 s, the run logged */
static void
bulk_shares (Sim * sim, GstTwoflowSessionRateStats * st, gdouble * s,
    gdouble * t)
{
  guint i;

  gst_twoflow_session_rate_get_stats (sim->sr, st);
  *s = mean (sim->got[0], 100, 400);
  *t = mean (sim->got[1], 100, 400);
  for (i = 0; i < 400; i += 10)
    GST_LOG ("%4.1f s target %8.0f got %8.0f reno %8.0f rtt %.0f ms",
        i / 10.0, sim->tgt[i], sim->got[0][i], sim->got[1][i],
        sim->rtt_hist[i] / 1e6);
}

/* Beside a bulk TCP its standing queue shows in every RTT sample and
 * never drains after the session's decreases: the delay model backs off
 * and off, and the delivered rate of an application-limited session
 * follows its target down. After 3 decreases and 2 s with the queue
 * standing, and loss events that say a competition, the session competes
 * on TCP's terms: a packet per RTT per RTT, a decrease on a loss event,
 * the queue no input. */
GST_START_TEST (test_bulk_standing_queue)
{
  GstTwoflowSessionRateStats st;
  Sim sim;
  gdouble lo = G_MAXDOUBLE, s, t;
  guint i;

  bulk_run (&sim, 3e6, 0, FALSE, 40);
  bulk_shares (&sim, &st, &s, &t);
  for (i = 100; i < 400; i++)
    lo = MIN (lo, sim.tgt[i]);
  GST_INFO ("10-40 s: lowest target %.0f, mean target %.0f, session %.0f, "
      "Reno %.0f bit/s; p %.4f, competing updates %" G_GUINT64_FORMAT, lo,
      mean (sim.tgt, 100, 400), s, t, st.loss_event_rate,
      st.competing_updates);
  fail_unless (st.competing_updates > 0);
  /* about what the equation gives a TCP at the session's loss event
   * rate (0.5 %: 1.2-1.4 Mbit/s at 150-200 ms); backing off on the queue
   * (before), lowest 0.76, session 0.99 Mbit/s at p 0.3 %, and with the
   * server's delivered rate the enhanced share of it, 63 kbit/s */
  fail_unless (lo > 0.35 * 2.5e6, "lowest target %.0f", lo);
  fail_unless (s > 0.45 * 2.5e6, "session %.0f", s);
  gst_twoflow_session_rate_free (sim.sr);
}

GST_END_TEST;

/* The same once the essential transport's RTT stops (3 s: ERAP has sent
 * the clip's essential frames), the video 4 Mbit/s: the rUDP receiver's
 * samples show the bulk TCP's queue, neither clean nor a queue of ours,
 * and handle_clean_rtt() leaves them out. With no RTT input the delay
 * model grew at 25 %/s to the ceiling (5.68 Mbit/s) and the session took
 * 4 of the 5 Mbit/s; competing while the newest sample is such a queue,
 * the target stays near what the session uses and the share is near
 * fair. */
GST_START_TEST (test_bulk_ambiguous_rtt)
{
  GstTwoflowSessionRateStats st;
  Sim sim;
  gdouble hi = 0, s, t;
  guint i;

  bulk_run (&sim, 4e6, 3 * GST_SECOND, TRUE, 40);
  bulk_shares (&sim, &st, &s, &t);
  for (i = 100; i < 400; i++)
    hi = MAX (hi, sim.tgt[i]);
  GST_INFO ("10-40 s: highest target %.0f, mean target %.0f, session %.0f, "
      "Reno %.0f bit/s; competing updates %" G_GUINT64_FORMAT, hi,
      mean (sim.tgt, 100, 400), s, t, st.competing_updates);
  fail_unless (st.competing_updates > 0);
  fail_unless (mean (sim.tgt, 100, 400) < 1.3 * s, "target %.0f got %.0f",
      mean (sim.tgt, 100, 400), s);
  /* near the fair share (above it: the session's paced packets seldom
   * meet the full queue that Reno's bursts overflow, p 0.001; with the
   * target at the ceiling it took 4.0 Mbit/s, Reno 1.0) */
  fail_unless (s > 0.7 * 2.5e6 && s < 1.5 * 2.5e6, "session %.0f", s);
  fail_unless (t > 0.5 * 2.5e6, "Reno %.0f", t);
  gst_twoflow_session_rate_free (sim.sr);
}

GST_END_TEST;

/* A bloated drop-tail queue (500 packets, 1.2 s at 5 Mbit/s) that a bulk
 * Reno flow keeps filled: longer than the lateness budget, so every
 * sample was read as a queue of the session's and the delay model backed
 * off for good (0.18 Mbit/s in the showdown, 0.22 of the fair share). It
 * stands STANDING_TIME + EPISODE_MAX through the decreases: a
 * competitor's, and the session competes, growing as CUBIC in rate units
 * (a packet per RTT per RTT at 1.2 s is 8 kbit/s per second). */
GST_START_TEST (test_bloat_standing_queue)
{
  GstTwoflowSessionRateConfig c;
  GstTwoflowSessionRateStats st;
  Sim sim;
  gdouble s, t;

  sim_init (&sim, cap_5m, 0, 3e6, 40);
  sim.qlimit = 500;
  sim.sess_loss = 0.003;
  gst_twoflow_session_rate_free (sim.sr);
  gst_twoflow_session_rate_config_init (&c);
  c.max_bitrate = 1.42 * 3e6;
  c.lateness_budget = 250 * MS;
  sim.sr = gst_twoflow_session_rate_new (&c);
  sim.reno = TRUE;
  /* (the bulk flow came 3 s earlier: its window fills the queue) */
  sim.reno_cwnd0 = 400;
  sim.code_lag = 8;
  simulate (&sim);
  bulk_shares (&sim, &st, &s, &t);
  GST_INFO ("10-40 s: mean target %.0f, session %.0f, Reno %.0f bit/s; "
      "p %.4f, competing updates %" G_GUINT64_FORMAT, mean (sim.tgt, 100,
          400), s, t, st.loss_event_rate, st.competing_updates);
  fail_unless (st.competing_updates > 0);
  /* (the session's random loss, 0.4 % of its packets, five times the
   * showdown's loss event rate, holds it below the fair share here:
   * 0.58 of it; before, backing off on every sample, 0.12) */
  fail_unless (s > 0.45 * 2.5e6 && s < 1.3 * 2.5e6, "session %.0f", s);
  fail_unless (t > 0.5 * 2.5e6, "Reno %.0f", t);
  gst_twoflow_session_rate_free (sim.sr);
}

GST_END_TEST;

/* The same on the controller's inputs alone: 1.2 s of a competitor's
 * queue from 1 s on (the RTT 50 ms -> 1.25 s), what gets through at most
 * the fair share, 2.5 Mbit/s, no loss for 15 s (the showdown's first
 * loss came at 15 s), then a loss event every 5 s (a drop-tail
 * overflow), and no RTT sample at 4-5.5 s. The session competes once
 * the queue stood STANDING_TIME + EPISODE_MAX (the gap not counted as
 * the queue gone: counted so, 0.07 of the fair share), and after each
 * loss event CUBIC's increase takes it back to the rate before within
 * 4 s (a packet per RTT + 100 ms per RTT + 100 ms: 7 kbit/s per
 * second). */
GST_START_TEST (test_bloat_cubic)
{
  GstTwoflowSessionRateConfig c;
  GstTwoflowSessionRateStats st;
  GstTwoflowSessionRate *sr;
  GstClockTime now;
  guint64 sent = 0, lost = 0, deliv = 0;
  gdouble tgt[300], got = 0;
  guint i, n = 0;

  gst_twoflow_session_rate_config_init (&c);
  c.max_bitrate = 1.42 * 3e6;
  c.lateness_budget = 250 * MS;
  sr = gst_twoflow_session_rate_new (&c);
  for (i = 1; i < 300; i++) {
    gdouble rate = MIN (gst_twoflow_session_rate_get_target (sr), 2.5e6);
    guint64 pk = rate * 0.1 / 8 / c.packet_size;

    now = i * 100 * MS;
    /* (no sample at 4-5.5 s: cTCP's SRTT paused in its loss recovery) */
    if (i < 40 || i >= 55)
      gst_twoflow_session_rate_handle_rtt (sr, 0, i < 10 ? 50 * MS :
          1250 * MS, now);
    sent += pk;
    deliv += pk * c.packet_size;
    if (i % 50 == 0 && i >= 150) {
      sent += 2;
      lost += 2;
    }
    gst_twoflow_session_rate_handle_counters (sr, 0, sent, lost, deliv, now);
    gst_twoflow_session_rate_poll (sr, now, NULL);
    tgt[i] = gst_twoflow_session_rate_get_target (sr);
    if (i % 10 == 0)
      GST_LOG ("%4.1f s target %8.0f", i / 10.0, tgt[i]);
  }
  gst_twoflow_session_rate_get_stats (sr, &st);
  for (i = 100; i < 300; i++, n++)
    got += MIN (tgt[i], 2.5e6);
  got /= n;
  GST_INFO ("10-30 s: mean %.0f bit/s, competing updates %" G_GUINT64_FORMAT
      ", p %.4f", got, st.competing_updates, st.loss_event_rate);
  fail_unless (st.competing_updates > 0);
  fail_unless (got > 0.8 * 2.5e6, "mean %.0f", got);
  /* back within 4 s of the loss events at 15, 20 and 25 s */
  for (i = 150; i <= 250; i += 50)
    fail_unless (tgt[i + 40] >= 0.95 * MIN (tgt[i - 1], 2.5e6),
        "%u: %.0f -> %.0f", i, tgt[i - 1], tgt[i + 40]);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

/* Beside a bulk BBR flow: its standing queue (BBR keeps about a BDP in
 * flight beyond the pipe: 20-60 ms on the showdown's 5 Mbit/s, more in
 * its 1.25 x probing phase, less when it drains at 0.75 x) within the
 * lateness budget, and no loss at all (BBR keeps the drop-tail queue
 * from overflowing); the queue drains for 200 ms every 10 s (its
 * ProbeRTT). The session's rate is what gets through (the clip's 2.04
 * Mbit/s, under the fair share of 2.5), 800 ms after its target.
 * Before, with no loss event the queue was never a competitor's and the
 * delay model backed off on it again and again (the showdown's H.264
 * over cTCP: 50 decreases, the target 0.68 Mbit/s at 17 s, 0.685 of the
 * fair share, the clip re-encoded at 45.7 dB); a queue that stands 5 s through the decreases
 * without a loss event since it began is another flow's, a loss-free
 * queue back within 3 s of that the same flow's, and the clip passes at
 * its rate. */
GST_START_TEST (test_bbr_standing_queue)
{
  GstTwoflowSessionRateConfig c;
  GstTwoflowSessionRateStats st;
  GstTwoflowSessionRate *sr;
  GstClockTime now;
  guint64 sent = 0, deliv = 0;
  gdouble tgt[300], got = 0, lo = G_MAXDOUBLE, first_lo = G_MAXDOUBLE;
  gdouble video = 2.04e6;
  guint i, n = 0;

  gst_twoflow_session_rate_config_init (&c);
  c.max_bitrate = 1.42 * video;
  c.lateness_budget = 250 * MS;
  sr = gst_twoflow_session_rate_new (&c);
  for (i = 1; i < 300; i++) {
    /* (what the target asks for reaches the link 800 ms later: the
     * transcoder and the sender) */
    gdouble rate = MIN (i > 8 ? tgt[i - 8] : c.max_bitrate, video);
    guint64 pk = rate * 0.1 / 8 / c.packet_size;
    /* BBR's gain cycle: 8 phases of 100 ms (an RTT of 40 ms + its
     * queue, rounded), 1.25 x, 0.75 x, then cruising */
    guint phase = i % 8;
    GstClockTime q = phase == 0 ? 90 * MS : phase == 1 ? 45 * MS : 60 * MS;

    now = i * 100 * MS;
    if (i < 10 || i % 100 < 2)
      q = 2 * MS;
    gst_twoflow_session_rate_handle_smoothed_rtt (sr, 0, 40 * MS + q,
        10 * MS, now);
    sent += pk;
    deliv += pk * c.packet_size;
    gst_twoflow_session_rate_handle_counters (sr, 0, sent, 0, deliv, now);
    gst_twoflow_session_rate_poll (sr, now, NULL);
    tgt[i] = gst_twoflow_session_rate_get_target (sr);
    if (i % 10 == 0)
      GST_LOG ("%4.1f s target %8.0f", i / 10.0, tgt[i]);
  }
  gst_twoflow_session_rate_get_stats (sr, &st);
  for (i = 10; i < 300; i++)
    first_lo = MIN (first_lo, tgt[i]);
  for (i = 120; i < 300; i++, n++) {
    got += MIN (tgt[i], video);
    lo = MIN (lo, tgt[i]);
  }
  got /= n;
  GST_INFO ("lowest from 1 s %.0f; 12-30 s: mean %.0f bit/s, lowest %.0f; "
      "competing updates %" G_GUINT64_FORMAT ", queue decreases %"
      G_GUINT64_FORMAT, first_lo, got, lo, st.competing_updates,
      st.decreases_qdelay);
  fail_unless (st.loss_events == 0);
  fail_unless (st.competing_updates > 0);
  /* the first queue costs what the decreases did in its first 5 s (a
   * queue of the session's own is gone by then, or a loss shows it) */
  fail_unless (first_lo > 0.25 * 2.5e6, "lowest %.0f", first_lo);
  /* then CUBIC's increase takes it back (by 12 s), and the clip passes,
   * through BBR's ProbeRTT at 20 s too: never below 0.7 of the fair
   * share, and its rate on the mean */
  fail_unless (lo > 0.7 * 2.5e6, "lowest %.0f", lo);
  fail_unless (got > 0.95 * video, "mean %.0f", got);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

GST_START_TEST (test_tcp_share)
{
  Sim sim;
  gdouble s, t;

  sim_init (&sim, cap_10m, 0, 20e6, 60);
  sim.reno = TRUE;
  simulate (&sim);
  s = mean (sim.got[0], 200, 600);
  t = mean (sim.got[1], 200, 600);
  GST_INFO ("session %.0f, Reno %.0f bit/s (20-60 s)", s, t);
  fail_unless (s > 0.5 * t && s < 2 * t, "session %f Reno %f", s, t);
  fail_unless (s + t > 0.85 * 10e6);
  gst_twoflow_session_rate_free (sim.sr);
}

GST_END_TEST;

/* CE marks are congestion without loss: the delay model goes down to
 * decrease x delivered, at most once per SRTT + 100 ms, and the marks
 * count as loss events; without marks it climbs back. (The floor is off:
 * one mark per 30 packets at 40 ms is 1.6 Mbit/s by the equation.) */
GST_START_TEST (test_ecn)
{
  GstTwoflowSessionRateConfig c;
  GstTwoflowSessionRate *sr;
  GstTwoflowSessionRateStats st;
  guint64 packets = 0, ce = 0, t = 0;
  GstClockTime now = 0;
  guint i;

  gst_twoflow_session_rate_config_init (&c);
  c.max_bitrate = 4000000;
  c.tcp_floor = FALSE;
  sr = gst_twoflow_session_rate_new (&c);
  for (i = 1; i <= 30; i++) {
    now = i * 100 * MS;
    packets += 30;              /* 3.36 Mbit/s delivered */
    if (i >= 10 && i < 20)
      ce += 1;
    gst_twoflow_session_rate_handle_rtt (sr, 0, 40 * MS, now);
    gst_twoflow_session_rate_handle_counters (sr, 0, packets, 0,
        packets * PKT, now);
    gst_twoflow_session_rate_handle_ecn (sr, 0, packets, ce, now);
    gst_twoflow_session_rate_poll (sr, now, &t);
    if (i == 9)
      fail_unless_equals_uint64 (gst_twoflow_session_rate_get_target (sr),
          4000000);
    if (i == 19) {
      gst_twoflow_session_rate_get_stats (sr, &st);
      /* 10 marks 100 ms apart, one decrease per 140 ms */
      fail_unless (st.decreases >= 4 && st.decreases <= 6, "%"
          G_GUINT64_FORMAT, st.decreases);
      fail_unless (st.decreases_ecn == st.decreases);
      fail_unless (st.target < 0.86 * 3.36e6, "%" G_GUINT64_FORMAT,
          st.target);
      fail_unless (st.loss_events >= 5);
    }
  }
  gst_twoflow_session_rate_get_stats (sr, &st);
  fail_unless (st.target > 0.86 * 3.36e6);
  gst_twoflow_session_rate_free (sr);
}

GST_END_TEST;

static Suite *
sessionrate_suite (void)
{
  Suite *s = suite_create ("sessionrate");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_equation);
  tcase_add_test (tc, test_loss_event_rate);
  tcase_add_test (tc, test_random_loss);
  tcase_add_test (tc, test_capacity_step);
  tcase_add_test (tc, test_step_essential_ends);
  tcase_add_test (tc, test_superseded_rtt);
  tcase_add_test (tc, test_clean_rtt);
  tcase_add_test (tc, test_smoothed_rtt_rising);
  tcase_add_test (tc, test_queue_rise);
  tcase_add_test (tc, test_step_lagged);
  tcase_add_test (tc, test_smoothed_rtt_jitter);
  tcase_add_test (tc, test_congested_floor);
  tcase_add_test (tc, test_hold_floor);
  tcase_add_test (tc, test_lateness);
  tcase_add_test (tc, test_tcp_share);
  tcase_add_test (tc, test_bulk_standing_queue);
  tcase_add_test (tc, test_bulk_ambiguous_rtt);
  tcase_add_test (tc, test_bloat_standing_queue);
  tcase_add_test (tc, test_bloat_cubic);
  tcase_add_test (tc, test_bbr_standing_queue);
  tcase_add_test (tc, test_ecn);
  tcase_add_test (tc, test_loss_bursts);
  tcase_add_test (tc, test_loss_persists);
  tcase_add_test (tc, test_loss_fluctuates);
  tcase_add_test (tc, test_loss_persists_few_packets);
  tcase_add_test (tc, test_loss_at_start);
  return s;
}

GST_CHECK_MAIN (sessionrate);
