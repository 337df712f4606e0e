/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the session rate controller (sans-IO). See sessionrate.h and
 * docs/transcoder.md ("The session rate controller"). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>
#include "sessionrate.h"

#define N_INTERVALS 8
#define N_DELIVERED 32
#define N_LOSS_BINS 10          /* of update-interval: the raw loss window */
#define N_LONG_BINS 30          /* of update-interval: persistence, few packets;
                                 * the bins kept (the raw window: the newest) */
/* the additive region: up to this much above the rate of the last
 * congestion */
#define NEAR_FACTOR 1.1
/* a response time beyond the RTT (GCC's 100 ms) */
#define RESPONSE_EXTRA (100 * GST_MSECOND)
/* samples older than this are not the path's state any more */
#define FRESH (1 * GST_SECOND)
/* nor a transport's last sample this much older than another's: the
 * essential flow's last one, after its final segment, held a queue long
 * gone for FRESH while the rUDP receiver's samples said the path was
 * empty (measured in the showdown's H.264 step: 0.9 s congested, the
 * sender capped, 89 frames late) */
#define SUPERSEDED (500 * GST_MSECOND)
/* handle_clean_rtt(): a queue beyond the lateness budget (or this, without
 * one) is ours — a competing TCP's drop-tail queue at a few Mbit/s is
 * shorter (80 packets: 190 ms at 5 Mbit/s) — and its episode counts until
 * the queue is gone, for at most EPISODE_MAX (then clean samples only
 * until the queue is gone once) */
#define OWN_QUEUE (250 * GST_MSECOND)
#define EPISODE_MAX (3 * GST_SECOND)
/* handle_smoothed_rtt(): another transport's latest sample vouches for
 * the path up to this long (the rUDP receiver's come every 200 ms) */
#define VOUCH (500 * GST_MSECOND)
/* the deepest cut of one reaction */
#define MAX_CUT 0.5
/* the queueing delay's trend: compared with the value this long ago */
#define TREND_SPAN (300 * GST_MSECOND)
/* it falls (the queue drains) when lower by more than this */
#define TREND_EPSILON (3 * GST_MSECOND)
#define N_QD 16
/* without min-bitrate: one packet per this many seconds */
#define LOWEST_INTERVAL 1.0
/* the increase's acceleration on a clean path: `increase` x (1 + ACCEL x
 * the seconds since the last congestion), at most ACCEL_MAX per second */
#define ACCEL 4.0
#define ACCEL_MAX 2.0
/* the additive region near the last congestion holds this long */
#define NEAR_TIME 1.0
/* raw loss fractions over fewer packets say nothing */
#define MIN_LOSS_PACKETS 20
/* the delivered rate's recent minimum: over this many updates */
#define N_XR 10
/* the lateness rule's deepest cut of the coding target */
#define LATENESS_MIN_FACTOR 0.25
/* heavy loss in the latest loss-burst this long after heavy loss was
 * last congestion continues it (a policer's next overshoot) */
#define LOSS_CONTINUE (2 * GST_SECOND)
/* a queue that stood through this many of the delay model's decreases
 * and this long since the first (without emptying once, and within the
 * budget of our own queues) is a competing flow's: a queue the session
 * causes drains once its decrease reaches the link (the coding delay:
 * ~0.8 s in the system) */
#define STANDING_DECREASES 3
#define STANDING_TIME (2 * GST_SECOND)
/* competing, the rate grows while the session uses this much of it */
#define COMPETE_USED 1.25
/* competing, the increase is CUBIC's (RFC 9438) in rate units: C = 0.4
 * packets per s^3 at the session's SRTT, but at most this RTT (a queue
 * beyond the lateness budget is a competitor's, and its RTT no pace:
 * at ~1 s of RTT a packet per RTT per RTT grew 7-15 kbit/s per second) */
#define CUBIC_C 0.4
#define CUBIC_RTT (250 * GST_MSECOND)
/* a standing queue is a competitor's when the loss events give a TCP at
 * most this many times the session's delivered rate */
#define COMPETE_LOSS 1.5
/* a loss-free queue this soon after the session last competed with one
 * is the same competitor's */
#define COMPETE_MEMORY (3 * GST_SECOND)

static const gdouble weights[N_INTERVALS] =
    { 1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2 };

typedef struct {
  GstClockTime t;
  guint64 bytes;
} DeliveredSample;

typedef struct {
  gboolean have_counters;
  guint64 packets, lost, delivered, ect, ce;
  /* RTT */
  GstClockTime rtt, rtt_time;   /* latest sample, NONE: none */
  GstClockTime min_cur, min_prev, min_bucket_start;
  /* handle_clean_rtt(): an episode of our queue since (NONE: none) */
  GstClockTime episode_start;
  gboolean episode_spent;       /* ended by EPISODE_MAX: wait for clean */
  /* handle_clean_rtt(): the latest sample's time (NONE: none), clean? */
  GstClockTime sample_time;
  gboolean sample_clean;
  GstClockTime clean_time;      /* the latest clean sample's (NONE: none) */
  /* the latest sample beyond qdelay-threshold, taken or not (NONE: none):
   * heavy loss with it is congestion */
  GstClockTime queue_time;
  /* its queueing delay at the last updates (the trend), oldest first */
  GstClockTime qd_t[N_QD], qd_v[N_QD];
  guint n_qd, qd_head;
  /* the sender's backlog (bytes) and rate (bit/s), at backlog_time */
  guint64 backlog, backlog_rate;
  GstClockTime backlog_time;    /* NONE: none */
  /* delivered bytes, cumulative, oldest first */
  DeliveredSample del[N_DELIVERED];
  guint n_del, del_head;
  /* handle_smoothed_rtt(): the last two SRTT reads, latest first, and
   * when (NONE: none) */
  GstClockTime srtt_last[2], srtt_last_time[2];
} Source;

struct _GstTwoflowSessionRate {
  GstTwoflowSessionRateConfig c;
  Source src[GST_TWOFLOW_SESSION_RATE_MAX_SOURCES];
  gboolean started;
  GstClockTime next_update, last_update;

  GstClockTime srtt;            /* EWMA over all sources' samples */

  /* loss events (session-wide packet counts) */
  gdouble intervals[N_INTERVALS];       /* closed, [0] most recent */
  guint n_intervals;
  gdouble open_packets;         /* since the current event's start */
  GstClockTime event_start;     /* NONE: no loss yet */

  /* raw loss over the last N_LOSS_BINS updates */
  guint64 bin_sent[N_LONG_BINS], bin_lost[N_LONG_BINS];
  guint bin_head;               /* the next bin written (the oldest) */
  guint64 tick_sent, tick_lost, tick_ce;

  /* the delay model */
  gdouble x_delay;
  gdouble x_cong;               /* delivered rate at the last congestion, 0 none */
  guint queue_decreases;        /* delay-model decreases since no queue */
  GstClockTime queue_since;     /* the first of them (NONE: none) */
  guint64 compete_events;       /* loss events at the last update */
  gdouble queue_rate;           /* delivered at the first of the decreases */
  guint64 queue_events;         /* the loss events then */
  /* the last update competing with a loss-free queue (NONE: none), and
   * the loss events then */
  GstClockTime quiet_time;
  guint64 quiet_events;
  /* compete(): CUBIC's epoch (NONE: none), W_max, K (s), the last rate */
  GstClockTime cubic_epoch;
  gdouble cubic_max, cubic_k, cubic_last;
  GstClockTime hold_until;
  GstClockTime last_congestion; /* NONE: never */
  GstClockTime loss_cong_time;  /* heavy loss last congestion (NONE: never) */
  guint64 loss_window_sent;     /* packets in the raw loss window */
  guint64 loss_window_lost;     /* of which lost */
  gboolean loss_clean_seen;     /* a window of them below loss-threshold */

  guint64 target, reported, code_target, code_floor;
  /* the delivered rate at the last N_XR updates (0: none) */
  gdouble xr_hist[N_XR];
  guint xr_head;
  GstTwoflowSessionRateStats st;
};

void
gst_twoflow_session_rate_config_init (GstTwoflowSessionRateConfig * c)
{
  memset (c, 0, sizeof (*c));
  c->packet_size = GST_TWOFLOW_SESSION_RATE_DEFAULT_PACKET_SIZE;
  c->qdelay_threshold = GST_TWOFLOW_SESSION_RATE_DEFAULT_QDELAY_THRESHOLD;
  c->decrease = GST_TWOFLOW_SESSION_RATE_DEFAULT_DECREASE;
  c->increase = GST_TWOFLOW_SESSION_RATE_DEFAULT_INCREASE;
  c->loss_threshold = GST_TWOFLOW_SESSION_RATE_DEFAULT_LOSS_THRESHOLD;
  c->tcp_floor = TRUE;
  c->update_interval = GST_TWOFLOW_SESSION_RATE_DEFAULT_UPDATE_INTERVAL;
  c->delivery_window = GST_TWOFLOW_SESSION_RATE_DEFAULT_DELIVERY_WINDOW;
  c->min_rtt_window = GST_TWOFLOW_SESSION_RATE_DEFAULT_MIN_RTT_WINDOW;
  c->queue_rise = GST_TWOFLOW_SESSION_RATE_DEFAULT_QUEUE_RISE;
  c->loss_burst = GST_TWOFLOW_SESSION_RATE_DEFAULT_LOSS_BURST;
}

GstTwoflowSessionRate *
gst_twoflow_session_rate_new (const GstTwoflowSessionRateConfig * c)
{
  GstTwoflowSessionRate *sr = g_new0 (GstTwoflowSessionRate, 1);
  guint i;

  sr->c = *c;
  if (sr->c.packet_size == 0)
    sr->c.packet_size = GST_TWOFLOW_SESSION_RATE_DEFAULT_PACKET_SIZE;
  if (sr->c.update_interval == 0)
    sr->c.update_interval = GST_TWOFLOW_SESSION_RATE_DEFAULT_UPDATE_INTERVAL;
  if (sr->c.delivery_window == 0)
    sr->c.delivery_window = GST_TWOFLOW_SESSION_RATE_DEFAULT_DELIVERY_WINDOW;
  if (sr->c.min_rtt_window == 0)
    sr->c.min_rtt_window = GST_TWOFLOW_SESSION_RATE_DEFAULT_MIN_RTT_WINDOW;
  if (sr->c.drain_time == 0)
    sr->c.drain_time = GST_TWOFLOW_SESSION_RATE_DEFAULT_DRAIN_TIME;
  if (sr->c.decrease <= 0 || sr->c.decrease >= 1)
    sr->c.decrease = GST_TWOFLOW_SESSION_RATE_DEFAULT_DECREASE;
  if (sr->c.increase < 0)
    sr->c.increase = GST_TWOFLOW_SESSION_RATE_DEFAULT_INCREASE;
  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++) {
    sr->src[i].rtt = GST_CLOCK_TIME_NONE;
    sr->src[i].rtt_time = GST_CLOCK_TIME_NONE;
    sr->src[i].min_cur = GST_CLOCK_TIME_NONE;
    sr->src[i].min_prev = GST_CLOCK_TIME_NONE;
    sr->src[i].min_bucket_start = GST_CLOCK_TIME_NONE;
    sr->src[i].episode_start = GST_CLOCK_TIME_NONE;
    sr->src[i].sample_time = GST_CLOCK_TIME_NONE;
    sr->src[i].clean_time = GST_CLOCK_TIME_NONE;
    sr->src[i].queue_time = GST_CLOCK_TIME_NONE;
    sr->src[i].backlog_time = GST_CLOCK_TIME_NONE;
    sr->src[i].srtt_last_time[0] = GST_CLOCK_TIME_NONE;
    sr->src[i].srtt_last_time[1] = GST_CLOCK_TIME_NONE;
  }
  sr->srtt = GST_CLOCK_TIME_NONE;
  sr->quiet_time = GST_CLOCK_TIME_NONE;
  sr->event_start = GST_CLOCK_TIME_NONE;
  sr->next_update = GST_CLOCK_TIME_NONE;
  sr->last_update = GST_CLOCK_TIME_NONE;
  sr->hold_until = 0;
  sr->last_congestion = GST_CLOCK_TIME_NONE;
  sr->loss_cong_time = GST_CLOCK_TIME_NONE;
  sr->queue_since = GST_CLOCK_TIME_NONE;
  sr->cubic_epoch = GST_CLOCK_TIME_NONE;
  sr->x_delay = sr->c.initial_bitrate ? sr->c.initial_bitrate :
      sr->c.max_bitrate;
  sr->target = (guint64) sr->x_delay;
  sr->code_target = sr->target;
  sr->reported = 0;
  sr->st.min_target = G_MAXUINT64;
  sr->st.state = GST_TWOFLOW_SESSION_RATE_STATE_START;
  return sr;
}

void
gst_twoflow_session_rate_free (GstTwoflowSessionRate * sr)
{
  g_free (sr);
}

void
gst_twoflow_session_rate_set_limits (GstTwoflowSessionRate * sr,
    guint64 min_bitrate, guint64 max_bitrate)
{
  sr->c.min_bitrate = min_bitrate;
  sr->c.max_bitrate = max_bitrate;
  if (sr->x_delay <= 0 && max_bitrate)
    sr->x_delay = sr->c.initial_bitrate ? sr->c.initial_bitrate : max_bitrate;
}

const gchar *
gst_twoflow_session_rate_state_name (GstTwoflowSessionRateState state)
{
  switch (state) {
    case GST_TWOFLOW_SESSION_RATE_STATE_START:
      return "start";
    case GST_TWOFLOW_SESSION_RATE_STATE_INCREASE:
      return "increase";
    case GST_TWOFLOW_SESSION_RATE_STATE_NEAR:
      return "near";
    case GST_TWOFLOW_SESSION_RATE_STATE_HOLD:
      return "hold";
    case GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED:
      return "congested";
  }
  return "?";
}

/* ------------------------------------------------------------------ */
/* the equation */

gdouble
gst_twoflow_tfrc_rate (gdouble s, gdouble r, gdouble p)
{
  gdouble t_rto = 4 * r, d;

  if (p <= 0 || r <= 0)
    return G_MAXDOUBLE;
  d = r * sqrt (2 * p / 3) + t_rto * (3 * sqrt (3 * p / 8)) * p * (1 +
      32 * p * p);
  return s * 8 / d;
}

gdouble
gst_twoflow_tfrc_loss_for_rate (gdouble s, gdouble r, gdouble rate)
{
  gdouble lo = 1e-8, hi = 1.0;
  guint i;

  if (rate <= 0 || r <= 0)
    return 1.0;
  if (gst_twoflow_tfrc_rate (s, r, lo) <= rate)
    return lo;
  if (gst_twoflow_tfrc_rate (s, r, hi) >= rate)
    return hi;
  /* the rate falls with p: bisect in log space */
  for (i = 0; i < 60; i++) {
    gdouble mid = sqrt (lo * hi);
    if (gst_twoflow_tfrc_rate (s, r, mid) > rate)
      lo = mid;
    else
      hi = mid;
  }
  return sqrt (lo * hi);
}

/* ------------------------------------------------------------------ */

static gdouble
rtt_seconds (GstTwoflowSessionRate * sr)
{
  return GST_CLOCK_TIME_IS_VALID (sr->srtt) ? sr->srtt / 1e9 : 0.1;
}

/* RFC 5348 5.4: the mean loss interval, the open one counted when it
 * raises it */
static gdouble
loss_event_rate (GstTwoflowSessionRate * sr)
{
  gdouble tot0 = 0, tot1 = 0, wtot = 0, mean;
  guint i, n = sr->n_intervals;

  if (n == 0)
    return 0;
  /* I_0 = open, I_1.. = closed */
  for (i = 0; i < n && i < N_INTERVALS; i++) {
    gdouble ii = i == 0 ? sr->open_packets : sr->intervals[i - 1];
    tot0 += ii * weights[i];
    wtot += weights[i];
  }
  for (i = 1; i <= n && i <= N_INTERVALS; i++)
    tot1 += sr->intervals[i - 1] * weights[i - 1];
  mean = MAX (tot0, tot1) / wtot;
  if (mean < 1)
    mean = 1;
  return 1.0 / mean;
}

static gdouble
delivered_rate_of (GstTwoflowSessionRate * sr, Source * s, GstClockTime now)
{
  guint newest, k;
  DeliveredSample *a, *b;

  if (s->n_del < 2)
    return -1;
  newest = (s->del_head + s->n_del - 1) % N_DELIVERED;
  b = &s->del[newest];
  if (now > b->t + FRESH)
    return -1;
  /* the oldest sample at least delivery_window before the newest, else
   * the oldest one kept */
  a = &s->del[s->del_head];
  for (k = s->n_del - 1; k > 0; k--) {
    DeliveredSample *c = &s->del[(s->del_head + k - 1) % N_DELIVERED];
    if (c->t + sr->c.delivery_window <= b->t) {
      a = c;
      break;
    }
  }
  if (b->t <= a->t)
    return -1;
  return (b->bytes - a->bytes) * 8.0 / ((b->t - a->t) / 1e9);
}

static gdouble
delivered_rate (GstTwoflowSessionRate * sr, GstClockTime now)
{
  gdouble sum = 0;
  gboolean any = FALSE;
  guint i;

  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++) {
    gdouble r = delivered_rate_of (sr, &sr->src[i], now);
    if (r >= 0) {
      sum += r;
      any = TRUE;
    }
  }
  return any ? sum : -1;
}

static void
start (GstTwoflowSessionRate * sr, GstClockTime now)
{
  if (sr->started)
    return;
  sr->started = TRUE;
  sr->next_update = now + sr->c.update_interval;
  sr->last_update = now;
}

/* a loss at @now: a new loss event unless within one RTT of the current
 * one's first loss */
static void
note_loss (GstTwoflowSessionRate * sr, GstClockTime now)
{
  GstClockTime r = GST_CLOCK_TIME_IS_VALID (sr->srtt) ? sr->srtt :
      100 * GST_MSECOND;

  if (GST_CLOCK_TIME_IS_VALID (sr->event_start) && now < sr->event_start + r)
    return;
  if (!GST_CLOCK_TIME_IS_VALID (sr->event_start)) {
    /* RFC 5348 6.3.1: the first interval is the one the equation gives
     * for the rate received so far (here the larger of that and the
     * packets counted so far) */
    gdouble xr = delivered_rate (sr, now), first = sr->open_packets;
    if (xr > 0) {
      gdouble p = gst_twoflow_tfrc_loss_for_rate (sr->c.packet_size,
          rtt_seconds (sr), xr);
      first = MAX (first, 1.0 / p);
    }
    sr->intervals[0] = MAX (first, 1);
    sr->n_intervals = 1;
  } else {
    memmove (&sr->intervals[1], &sr->intervals[0],
        (N_INTERVALS - 1) * sizeof (gdouble));
    sr->intervals[0] = MAX (sr->open_packets, 1);
    sr->n_intervals = MIN (sr->n_intervals + 1, N_INTERVALS);
  }
  sr->open_packets = 0;
  sr->event_start = now;
  sr->st.loss_events++;
}

/* The source's windowed minimum RTT with @rtt; returns it. */
static GstClockTime
update_min_rtt (GstTwoflowSessionRate * sr, Source * s, GstClockTime rtt,
    GstClockTime now)
{
  /* the windowed minimum: two buckets of half the window */
  if (!GST_CLOCK_TIME_IS_VALID (s->min_bucket_start)) {
    s->min_bucket_start = now;
  } else if (now >= s->min_bucket_start + sr->c.min_rtt_window / 2) {
    s->min_prev = s->min_cur;
    s->min_cur = GST_CLOCK_TIME_NONE;
    s->min_bucket_start = now;
  }
  if (!GST_CLOCK_TIME_IS_VALID (s->min_cur) || rtt < s->min_cur)
    s->min_cur = rtt;
  return GST_CLOCK_TIME_IS_VALID (s->min_prev) && s->min_prev < s->min_cur ?
      s->min_prev : s->min_cur;
}

/* @rtt (the source's minimum @m) shows a queue: heavy loss within the
 * loss window is congestion */
static void
note_queue (GstTwoflowSessionRate * sr, Source * s, GstClockTime rtt,
    GstClockTime m, GstClockTime now)
{
  if (rtt > m + sr->c.qdelay_threshold)
    s->queue_time = now;
}

/* @rtt is the source's latest sample */
static void
take_rtt (GstTwoflowSessionRate * sr, Source * s, GstClockTime rtt,
    GstClockTime now)
{
  s->rtt = rtt;
  s->rtt_time = now;
  if (!GST_CLOCK_TIME_IS_VALID (sr->srtt))
    sr->srtt = rtt;
  else
    sr->srtt = (7 * sr->srtt + rtt) / 8;
}

void
gst_twoflow_session_rate_handle_rtt (GstTwoflowSessionRate * sr,
    guint source, GstClockTime rtt, GstClockTime now)
{
  if (source >= GST_TWOFLOW_SESSION_RATE_MAX_SOURCES || rtt == 0
      || !GST_CLOCK_TIME_IS_VALID (rtt))
    return;
  start (sr, now);
  note_queue (sr, &sr->src[source], rtt, update_min_rtt (sr,
          &sr->src[source], rtt, now), now);
  take_rtt (sr, &sr->src[source], rtt, now);
}

/* handle_clean_rtt(): queue @q rose from the source's last clean sample
 * at queue-rise or faster — our rate overshooting a capacity drop, not a
 * competing TCP, which adds a packet per RTT (on the showdown's 5 Mbit/s:
 * tens of ms per second). Beyond twice the threshold
 * only: the rUDP samples on a loaded host stayed within 7 ms of the
 * path's. (Seen only beyond the lateness budget, the showdown's ERAP
 * MPEG-2 dip overflowed its 80-packet queue again and again: the queue
 * went 30 -> 80 packets, 230 -> 600 ms at 1.5 Mbit/s, in 0.5 s, and the
 * first sample beyond 250 ms came with 70 packets queued.) */
static gboolean
queue_rises (GstTwoflowSessionRate * sr, Source * s, GstClockTime q,
    GstClockTime now)
{
  guint i;

  if (sr->c.queue_rise <= 0 || !GST_CLOCK_TIME_IS_VALID (s->clean_time)
      || now <= s->clean_time || q <= 2 * sr->c.qdelay_threshold)
    return FALSE;
  /* (only while no other transport's RTT is fresh: one that takes every
   * sample sees the queue itself — beside cTCP's SRTT the first reaction
   * to the showdown's MPEG-2 step came later with the rule, by 0.2 s in
   * the median of 5 runs; late reactions were cTCP's rising SRTT taken
   * for jitter, srtt_rising()) */
  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++) {
    Source *o = &sr->src[i];

    if (o != s && GST_CLOCK_TIME_IS_VALID (o->rtt_time)
        && !GST_CLOCK_TIME_IS_VALID (o->sample_time)
        && now <= o->rtt_time + FRESH)
      return FALSE;
  }
  return q / 1e9 >= sr->c.queue_rise * ((now - s->clean_time) / 1e9);
}

void
gst_twoflow_session_rate_handle_clean_rtt (GstTwoflowSessionRate * sr,
    guint source, GstClockTime rtt, GstClockTime now)
{
  Source *s;
  GstClockTime m, own = sr->c.lateness_budget ? sr->c.lateness_budget :
      OWN_QUEUE;

  if (source >= GST_TWOFLOW_SESSION_RATE_MAX_SOURCES || rtt == 0
      || !GST_CLOCK_TIME_IS_VALID (rtt))
    return;
  start (sr, now);
  s = &sr->src[source];
  m = update_min_rtt (sr, s, rtt, now);
  /* (a queue it does not take is a sign of congestion all the same) */
  note_queue (sr, s, rtt, m, now);
  s->sample_time = now;
  s->sample_clean = rtt <= m + sr->c.qdelay_threshold;
  if (s->sample_clean) {
    s->episode_start = GST_CLOCK_TIME_NONE;
    s->episode_spent = FALSE;
    s->clean_time = now;
  } else if (GST_CLOCK_TIME_IS_VALID (s->episode_start)) {
    if (now >= s->episode_start + EPISODE_MAX) {
      s->episode_start = GST_CLOCK_TIME_NONE;
      s->episode_spent = TRUE;
      return;
    }
  } else if (!s->episode_spent && (rtt > m + own
          || queue_rises (sr, s, rtt - m, now))) {
    s->episode_start = now;
  } else {
    return;
  }
  take_rtt (sr, s, rtt, now);
}

/* A smoothed RTT that rose at every one of the last two reads, by
 * queue-rise or faster over both, is a queue building, not host jitter
 * (a scheduling spike is one jump, then the SRTT decays or stays): no
 * other transport's older sample vouches for the path then. (Over two
 * reads: a read's own rise, the SRTT's gain of 1/8 per ACK, swung
 * 0.14-0.32 s per second while the queue rose 1.4 s per second.) In the
 * showdown's MPEG-2 step cTCP's SRTT
 * went 70 -> 92 -> 107 -> 141 -> 165 -> 192 ms in 0.5 s after the drop,
 * its rttvar rising with it (36 -> 147 ms), while the rUDP receiver's last
 * sample, 0.3-0.4 s old when it comes, still said 40 ms: four reads were
 * taken for jitter, the first reaction came 0.4-0.5 s after the queue
 * began, the 80-packet queue overflowed and the frames after the drop
 * were late (7 of 20 runs of main's code). */
static gboolean
srtt_rising (GstTwoflowSessionRate * sr, Source * s, GstClockTime srtt,
    GstClockTime now)
{
  gboolean rising = sr->c.queue_rise > 0
      && GST_CLOCK_TIME_IS_VALID (s->srtt_last_time[1])
      && now > s->srtt_last_time[1] && srtt > s->srtt_last[0]
      && s->srtt_last[0] > s->srtt_last[1]
      && (srtt - s->srtt_last[1]) / 1e9 >=
      sr->c.queue_rise * ((now - s->srtt_last_time[1]) / 1e9);

  s->srtt_last[1] = s->srtt_last[0];
  s->srtt_last_time[1] = s->srtt_last_time[0];
  s->srtt_last[0] = srtt;
  s->srtt_last_time[0] = now;
  return rising;
}

void
gst_twoflow_session_rate_handle_smoothed_rtt (GstTwoflowSessionRate * sr,
    guint source, GstClockTime srtt, GstClockTime rttvar, GstClockTime now)
{
  Source *s;
  GstClockTime m;
  guint i;
  gboolean rising;

  if (source >= GST_TWOFLOW_SESSION_RATE_MAX_SOURCES || srtt == 0
      || !GST_CLOCK_TIME_IS_VALID (srtt))
    return;
  start (sr, now);
  s = &sr->src[source];
  m = update_min_rtt (sr, s, srtt, now);
  rising = srtt_rising (sr, s, srtt, now);
  if (GST_CLOCK_TIME_IS_VALID (rttvar) && srtt > m + sr->c.qdelay_threshold
      && srtt - m <= 2 * rttvar && !rising) {
    for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++) {
      Source *o = &sr->src[i];

      if (i != source && o->sample_clean
          && GST_CLOCK_TIME_IS_VALID (o->sample_time)
          && now <= o->sample_time + VOUCH) {
        sr->st.jitter_rtts++;
        return;
      }
    }
  }
  note_queue (sr, s, srtt, m, now);
  take_rtt (sr, s, srtt, now);
}

void
gst_twoflow_session_rate_handle_counters (GstTwoflowSessionRate * sr,
    guint source, guint64 packets, guint64 lost, guint64 delivered_bytes,
    GstClockTime now)
{
  Source *s;
  guint64 dp, dl;

  if (source >= GST_TWOFLOW_SESSION_RATE_MAX_SOURCES)
    return;
  start (sr, now);
  s = &sr->src[source];
  if (!s->have_counters || packets < s->packets || lost < s->lost
      || delivered_bytes < s->delivered) {
    /* first report (or a restart): a base, nothing counted */
    s->have_counters = TRUE;
    s->packets = packets;
    s->lost = lost;
    s->delivered = delivered_bytes;
    s->n_del = 0;
    s->del_head = 0;
  }
  dp = packets - s->packets;
  dl = lost - s->lost;
  s->packets = packets;
  s->lost = lost;
  s->delivered = delivered_bytes;
  sr->st.packets += dp;
  sr->st.lost += dl;
  sr->tick_sent += dp;
  sr->tick_lost += dl;
  /* the packets before the loss close the interval it ends */
  if (dl > 0) {
    sr->open_packets += dp > dl ? dp - dl : 0;
    note_loss (sr, now);
    sr->open_packets += MIN (dp, dl);
  } else {
    sr->open_packets += dp;
  }
  /* the delivered history */
  if (s->n_del == N_DELIVERED) {
    s->del_head = (s->del_head + 1) % N_DELIVERED;
    s->n_del--;
  }
  s->del[(s->del_head + s->n_del) % N_DELIVERED].t = now;
  s->del[(s->del_head + s->n_del) % N_DELIVERED].bytes = delivered_bytes;
  s->n_del++;
}

void
gst_twoflow_session_rate_handle_ecn (GstTwoflowSessionRate * sr,
    guint source, guint64 ect, guint64 ce, GstClockTime now)
{
  Source *s;

  if (source >= GST_TWOFLOW_SESSION_RATE_MAX_SOURCES)
    return;
  start (sr, now);
  s = &sr->src[source];
  if (ce > s->ce && s->ect + s->ce > 0) {
    sr->tick_ce += ce - s->ce;
    sr->st.ce_marked += ce - s->ce;
    note_loss (sr, now);
  }
  s->ect = ect;
  s->ce = ce;
}

void
gst_twoflow_session_rate_handle_loss_event (GstTwoflowSessionRate * sr,
    guint source, GstClockTime srtt, GstClockTime now)
{
  if (source >= GST_TWOFLOW_SESSION_RATE_MAX_SOURCES)
    return;
  start (sr, now);
  if (GST_CLOCK_TIME_IS_VALID (srtt) && srtt > 0)
    gst_twoflow_session_rate_handle_rtt (sr, source, srtt, now);
  note_loss (sr, now);
}

void
gst_twoflow_session_rate_handle_backlog (GstTwoflowSessionRate * sr,
    guint source, guint64 bytes, guint64 rate, GstClockTime now)
{
  Source *s;

  if (source >= GST_TWOFLOW_SESSION_RATE_MAX_SOURCES)
    return;
  s = &sr->src[source];
  s->backlog = bytes;
  s->backlog_rate = rate;
  s->backlog_time = now;
}

void
gst_twoflow_session_rate_set_code_floor (GstTwoflowSessionRate * sr,
    guint64 bitrate)
{
  sr->code_floor = bitrate;
}

/* The lateness rule (sessionrate.h): the coding target and the sender's
 * catch-up rate from the backlogs and the queueing delay, after the
 * target's update. */
static void
lateness_rule (GstTwoflowSessionRate * sr, GstClockTime now,
    GstClockTime qdelay)
{
  GstTwoflowSessionRateConfig *c = &sr->c;
  GstClockTime backlog_t = 0, lateness;
  gdouble excess, drain = c->drain_time / 1e9, catchup = 0;
  guint i;

  sr->code_target = sr->target;
  sr->st.catchup_rate = 0;
  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++) {
    Source *s = &sr->src[i];
    GstClockTime bt;

    if (!GST_CLOCK_TIME_IS_VALID (s->backlog_time)
        || now > s->backlog_time + FRESH || s->backlog_rate == 0)
      continue;
    bt = gst_util_uint64_scale (s->backlog * 8, GST_SECOND, s->backlog_rate);
    if (bt > backlog_t)
      backlog_t = bt;
    /* a clean path: what waits beyond a quarter of the budget goes
     * within drain-time (a CBR sender near the flow's mean rate kept
     * 100-200 ms of it in the showdown, a quarter of its lead) */
    if (bt > c->lateness_budget / 4)
      catchup = MAX (catchup, s->backlog_rate + (bt - c->lateness_budget / 4)
          / 1e9 * s->backlog_rate / drain);
  }
  lateness = backlog_t + qdelay;
  sr->st.lateness = lateness;
  if (c->lateness_budget == 0)
    return;
  if (catchup > 0 && sr->st.state != GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED
      && sr->st.state != GST_TWOFLOW_SESSION_RATE_STATE_HOLD)
    /* (up to twice the target: a server stalled for 0.9 s under load
     * took 4 s to catch up at the target, and the frames of those
     * seconds came up to 0.8 s late) */
    sr->st.catchup_rate = (guint64) MIN (catchup, 2.0 * sr->target);
  if (lateness <= c->lateness_budget)
    return;
  excess = (lateness - c->lateness_budget) / 1e9;
  if (sr->st.state == GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED
      || sr->st.state == GST_TWOFLOW_SESSION_RATE_STATE_HOLD) {
    /* the path carries no more: code less, so the backlog drains (sent at
     * the old rate it arrived up to 1.2 s late in the showdown's step) */
    gdouble f = MAX (1.0 - excess / drain, LATENESS_MIN_FACTOR);
    gdouble lowest = MAX (c->min_bitrate ? c->min_bitrate :
        c->packet_size * 8.0 / LOWEST_INTERVAL, sr->code_floor);

    /* (below the code floor the transcoder drops B frames: each pair a
     * frozen picture, 36-42 per run in the MPEG-2 step) */
    sr->code_target = (guint64) MAX (sr->target * f, MIN (lowest,
            sr->target));
    if (sr->code_target < sr->target)
      sr->st.lateness_cuts++;
  }
}

/* ------------------------------------------------------------------ */

/* The queueing delay: the largest over the transports with a fresh
 * sample (not superseded by another transport's later samples), each
 * sample also kept for its trend; @draining when one drains. FALSE when
 * no transport has a fresh sample. */
static gboolean
queue_delay (GstTwoflowSessionRate * sr, GstClockTime now,
    GstClockTime * newest_out, GstClockTime * qdelay_out, gboolean * draining)
{
  GstTwoflowSessionRateConfig *c = &sr->c;
  GstClockTime qdelay = 0, newest = GST_CLOCK_TIME_NONE;
  gboolean any_rtt = FALSE;
  guint i;

  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++)
    if (GST_CLOCK_TIME_IS_VALID (sr->src[i].rtt_time)
        && (!GST_CLOCK_TIME_IS_VALID (newest)
            || sr->src[i].rtt_time > newest))
      newest = sr->src[i].rtt_time;
  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++) {
    Source *s = &sr->src[i];
    GstClockTime m;

    if (!GST_CLOCK_TIME_IS_VALID (s->rtt_time) || now > s->rtt_time + FRESH
        || s->rtt_time + SUPERSEDED < newest)
      continue;
    m = s->min_cur;
    if (GST_CLOCK_TIME_IS_VALID (s->min_prev) && s->min_prev < m)
      m = s->min_prev;
    any_rtt = TRUE;
    {
      GstClockTime q = s->rtt > m ? s->rtt - m : 0;
      guint k;

      /* the trend: the value at least TREND_SPAN ago */
      for (k = s->n_qd; k > 0; k--) {
        guint idx = (s->qd_head + k - 1) % N_QD;
        if (s->qd_t[idx] + TREND_SPAN <= now) {
          if (q + TREND_EPSILON < s->qd_v[idx] && q > c->qdelay_threshold)
            *draining = TRUE;
          break;
        }
      }
      if (s->n_qd == N_QD) {
        s->qd_head = (s->qd_head + 1) % N_QD;
        s->n_qd--;
      }
      s->qd_t[(s->qd_head + s->n_qd) % N_QD] = now;
      s->qd_v[(s->qd_head + s->n_qd) % N_QD] = q;
      s->n_qd++;
      if (q > qdelay)
        qdelay = q;
    }
    sr->st.min_rtt = m;
  }
  *newest_out = newest;
  *qdelay_out = qdelay;
  return any_rtt;
}

/* The packets sent and lost in the @n update bins from @age updates ago
 * (0: the newest) back. */
static void
loss_bins (GstTwoflowSessionRate * sr, guint age, guint n, guint64 * sent,
    guint64 * lost)
{
  guint j;

  *sent = *lost = 0;
  for (j = age; j < age + n; j++) {
    guint idx = (sr->bin_head + 2 * N_LONG_BINS - 1 - j) % N_LONG_BINS;

    *sent += sr->bin_sent[idx];
    *lost += sr->bin_lost[idx];
  }
}

/* The fraction of @sent that @lost is, less @m standard deviations of
 * the count (sqrt(lost)): random loss near a threshold reads above it
 * now and then (raw_loss()) */
static gdouble
loss_less_margin (gdouble lost, guint64 sent, gdouble m)
{
  return (lost - m * sqrt (lost)) / sent;
}

/* The raw loss fraction over the last N_LOSS_BINS updates (this one's
 * counts in), 0 below MIN_LOSS_PACKETS; *@persist: the same without the
 * window's worst loss-burst (the consecutive updates with the most
 * losses, at most half the window), the losses less the square root of
 * their count; *@recent: over its latest
 * loss-burst; both 0 below MIN_LOSS_PACKETS or with loss-burst 0. */
static gdouble
raw_loss (GstTwoflowSessionRate * sr, gdouble * persist, gdouble * recent)
{
  guint64 sent, lost, worst_sent = 0, worst_lost = 0, ls, ll;
  gdouble loss_frac = 0;
  guint a, k;

  sr->bin_sent[sr->bin_head] = sr->tick_sent;
  sr->bin_lost[sr->bin_head] = sr->tick_lost;
  sr->bin_head = (sr->bin_head + 1) % N_LONG_BINS;
  loss_bins (sr, 0, N_LOSS_BINS, &sent, &lost);
  if (sent >= MIN_LOSS_PACKETS)
    loss_frac = (gdouble) lost / sent;
  sr->loss_window_sent = sent;
  sr->loss_window_lost = lost;
  *persist = 0;
  *recent = 0;
  if (sr->c.loss_burst == 0)
    return loss_frac;
  k = (sr->c.loss_burst + sr->c.update_interval - 1) / sr->c.update_interval;
  k = CLAMP (k, 1, N_LOSS_BINS / 2);
  {
    guint64 rs, rl;

    loss_bins (sr, 0, k, &rs, &rl);
    if (rs >= MIN_LOSS_PACKETS)
      *recent = (gdouble) rl / rs;
  }
  /* (in time order, the oldest first: of equal bursts, the oldest) */
  for (a = N_LOSS_BINS - k + 1; a-- > 0;) {
    guint64 ws, wl;

    loss_bins (sr, a, k, &ws, &wl);
    if (wl > worst_lost) {
      worst_lost = wl;
      worst_sent = ws;
    }
  }
  /* (less a standard deviation of the count, sqrt(n): a second of 5 %
   * random loss reads above 10 % now and then — in a Bernoulli model of
   * the rUDP reports, 38-54 packets per 200 ms for 30 s, in 8-37 % of the
   * runs with the one-second fraction alone, 6-20 % without the worst
   * burst, in none of 200 with the margin; at 7 % in 1-1.5 % of them) */
  if (sent - worst_sent >= MIN_LOSS_PACKETS)
    *persist = loss_less_margin (lost - worst_lost, sent - worst_sent, 1);
  /* a session of a few packets per update loses a few: its count's
   * margin alone kept 15 % random loss at ~30 packets/s (a 150 kbit/s
   * clip) below the threshold for good. Over N_LONG_BINS, without the
   * worst loss-burst, half the margin (5 % random loss at 50 packets/s
   * reads above 10 % there 3.5 standard deviations out) */
  loss_bins (sr, 0, N_LONG_BINS, &ls, &ll);
  if (ls - worst_sent >= 2 * MIN_LOSS_PACKETS && ll >= worst_lost)
    *persist = MAX (*persist, loss_less_margin (ll - worst_lost,
            ls - worst_sent, 0.5));
  return loss_frac;
}

/* Heavy loss (above loss-threshold) is congestion only with a sign of it:
 * a queue in some transport's RTT samples within the loss window, or
 * loss that persists (@persist, raw_loss()). A burst on a clean path is
 * not: in the showdown's Gilbert-Elliott runs (10 Mbit/s, the session at
 * 2-3 Mbit/s) one burst of 27 packets in 0.1-0.2 s put 12-27 % in the
 * one-second window with the queue at 0-4 ms, and 4-5 decreases took the
 * target to 0.6-2.1 Mbit/s. A drop-tail capacity drop fills its queue
 * before it loses; a policer (or a queue too short to see) loses without
 * one, but on and on — and once its loss was congestion, its next
 * overshoot's is too (@recent: the latest loss-burst's). */
static gboolean
loss_is_congestion (GstTwoflowSessionRate * sr, GstClockTime now,
    gdouble persist, gdouble recent)
{
  GstClockTime window = N_LOSS_BINS * sr->c.update_interval;
  guint i;

  if (sr->c.loss_burst == 0 || persist > sr->c.loss_threshold)
    return TRUE;
  /* heavy loss since the session's start: no window has shown the path
   * clean, and the minimum RTT the queue is measured from may hold a
   * queue that stood before the session came (beside a bulk TCP started
   * 3 s earlier its first heavy losses read as bursts with 0-16 ms of
   * queue: the H.264 clip's first GOP, 42-47 frames, never arrived in 2
   * of 2 runs, none with every heavy loss congestion); the losses less
   * a standard deviation of their count, as for persistence (5 % random
   * loss in a first window of 38-76 packets reads above 10 % now and
   * then) */
  if (!sr->loss_clean_seen && sr->loss_window_sent > 0
      && loss_less_margin (sr->loss_window_lost, sr->loss_window_sent,
          1) > sr->c.loss_threshold)
    return TRUE;
  /* (the overshoots of a drop without a queue to see: with a 3-packet
   * queue, test_capacity_step's dip had 327 tail drops without this, 236
   * with it, 181 with every heavy loss congestion) */
  if (GST_CLOCK_TIME_IS_VALID (sr->loss_cong_time)
      && now < sr->loss_cong_time + LOSS_CONTINUE
      && recent > sr->c.loss_threshold)
    return TRUE;
  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++)
    if (GST_CLOCK_TIME_IS_VALID (sr->src[i].queue_time)
        && now <= sr->src[i].queue_time + window)
      return TRUE;
  return FALSE;
}

/* RFC 5348's equation with the session's loss event rate and R with the
 * queue the transports see now; G_MAXDOUBLE without loss intervals. */
static gdouble
equation_rate (GstTwoflowSessionRate * sr, GstClockTime now,
    GstClockTime newest, gdouble r)
{
  gdouble r_eq = r, p;
  guint i;

  if (sr->n_intervals == 0)
    return G_MAXDOUBLE;
  p = loss_event_rate (sr);
  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++) {
    Source *s = &sr->src[i];
    if (GST_CLOCK_TIME_IS_VALID (s->rtt_time) && now <= s->rtt_time + FRESH
        && s->rtt_time + SUPERSEDED >= newest)
      r_eq = MAX (r_eq, s->rtt / 1e9);
  }
  sr->st.loss_event_rate = p;
  return gst_twoflow_tfrc_rate (sr->c.packet_size, r_eq, p);
}

/* The TCP-fair floor (the equation), bounded by what gets through
 * (@xr); 0 without loss intervals or with tcp-floor off. */
static gdouble
tcp_floor (GstTwoflowSessionRate * sr, GstClockTime now, GstClockTime newest,
    gdouble r, gdouble xr, GstClockTime qdelay, gboolean congested)
{
  GstTwoflowSessionRateConfig *c = &sr->c;
  gdouble floor_rate;
  guint i;

  if (!c->tcp_floor || sr->n_intervals == 0)
    return 0;
  floor_rate = equation_rate (sr, now, newest, r);
  /* RFC 5348: at most twice what gets through. While a queue grows, no
   * more than what gets through — and when the loss event rate allows
   * more than twice that (few loss events: a capacity drop, not a
   * competition), decrease x what gets through: held at the delivered
   * rate, the floor kept a drop's queue full (measured: a 10 -> 1.5
   * Mbit/s step overflowed the queue for 1.8 s while the delay model's
   * rate was at 0.6-0.9 Mbit/s). Beside TCP the equation's rate stays
   * near the delivered one, and the floor holds it (cut to decrease x
   * delivered on every queue, the session got 0.57 of its fair share
   * beside a cubic flow instead of 0.70). */
  if (xr > 0) {
    if (!congested && now >= sr->hold_until)
      floor_rate = MIN (floor_rate, 2 * xr);
    else if (!congested)
      /* holding while the queue of a decrease drains: no more than
       * gets through (at twice that, the target went 1.0 -> 2.6
       * Mbit/s every few updates inside the showdown's H.264 step,
       * and the sender's backlog never drained) */
      floor_rate = MIN (floor_rate, xr);
    else if (floor_rate > 2 * xr)
      floor_rate = c->decrease * xr;
    else
      floor_rate = MIN (floor_rate, xr);
  }
  /* a queue longer than the lateness budget: below what gets through
   * (its minimum over the last updates: the rate measured from the
   * receiver's reports swung 1.0-2.0 Mbit/s on a 1.5 Mbit/s link), so
   * that it drains within drain-time. Held at the delivered rate, the
   * showdown's MPEG-2 step kept the 80-packet queue full (640 ms at
   * 1.5 Mbit/s) for 1.6-10 s. Beside TCP on a link of a few Mbit/s the
   * queue of a drop-tail bottleneck is shorter than the budget (190 ms
   * at 5 Mbit/s), and the share the equation gives is kept. */
  if (xr > 0 && c->lateness_budget > 0 && qdelay > c->lateness_budget
      && (congested || now < sr->hold_until)) {
    gdouble f = MAX (1.0 - (qdelay - c->lateness_budget) / 1e9 /
        (c->drain_time / 1e9), MAX_CUT);
    gdouble low = xr;

    for (i = 0; i < N_XR; i++)
      if (sr->xr_hist[i] > 0 && sr->xr_hist[i] < low)
        low = sr->xr_hist[i];
    floor_rate = MIN (floor_rate, f * low);
  }
  return floor_rate;
}

/* The newest RTT information of the session is a queued sample that
 * handle_clean_rtt() left out (a queue neither clean nor seen as ours,
 * such as a competing TCP's) and under FRESH old. */
static gboolean
rtt_ambiguous (GstTwoflowSessionRate * sr, GstClockTime now)
{
  GstClockTime taken = 0;
  guint i;

  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++)
    if (GST_CLOCK_TIME_IS_VALID (sr->src[i].rtt_time))
      taken = MAX (taken, sr->src[i].rtt_time);
  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++) {
    Source *s = &sr->src[i];

    if (GST_CLOCK_TIME_IS_VALID (s->sample_time) && !s->sample_clean
        && s->rtt_time != s->sample_time && now <= s->sample_time + FRESH
        && s->sample_time >= taken)
      return TRUE;
  }
  return FALSE;
}

/* Competing with a queue the session does not cause (update()): on a
 * new loss event the decrease (decrease x delivered, at most halved, not
 * below the TCP floor @floor_rate), once per SRTT + 100 ms; else CUBIC's
 * increase (RFC 9438) in rate units, back towards W_max, the rate at the
 * last decrease (at the start, what got through when the queue began),
 * then beyond it, or as a TCP in congestion avoidance (a packet per RTT +
 * 100 ms per RTT + 100 ms), whichever is higher. The queue is no reason
 * to back off: the delivered rate of an application-limited session
 * follows its target, and each decrease to decrease x that rate took it
 * further down (beside a bulk TCP, with ERAP's bytes not counted, 2.9
 * Mbit/s -> 63 kbit/s in 6 s). */
static void
compete (GstTwoflowSessionRate * sr, GstClockTime now, gdouble dt, gdouble r,
    gdouble xr, gdouble floor_rate)
{
  GstTwoflowSessionRateConfig *c = &sr->c;

  sr->st.competing_updates++;
  if (sr->st.loss_events > sr->compete_events && now >= sr->hold_until) {
    gdouble base = xr > 0 ? xr : sr->x_delay;
    gdouble nx = MAX (c->decrease * base, MAX_CUT * sr->x_delay);
    gdouble w = MAX (sr->x_delay, (gdouble) sr->target);

    /* W_max, with RFC 9438's fast convergence (a lower maximum than the
     * last one: another flow's share grows) */
    sr->cubic_max = w < sr->cubic_max ? w * (1 + c->decrease) / 2 : w;
    sr->cubic_epoch = GST_CLOCK_TIME_NONE;
    nx = MAX (nx, floor_rate);
    if (nx < sr->x_delay)
      sr->x_delay = nx;
    sr->x_cong = base;
    sr->hold_until = now + (GST_CLOCK_TIME_IS_VALID (sr->srtt) ? sr->srtt :
        100 * GST_MSECOND) + RESPONSE_EXTRA;
    sr->st.decreases++;
    sr->st.decreases_loss++;
    sr->st.state = GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED;
  } else if (now < sr->hold_until) {
    sr->st.state = GST_TWOFLOW_SESSION_RATE_STATE_HOLD;
  } else {
    gdouble resp = r + RESPONSE_EXTRA / 1e9;
    gdouble rc = MIN (r, CUBIC_RTT / 1e9);
    gdouble cr = CUBIC_C * c->packet_size * 8.0 / MAX (rc, 0.001);
    gdouble nx, t;

    if (sr->target > sr->x_delay)
      sr->x_delay = sr->target;
    /* a new epoch: after a decrease, at the start, or after a decrease
     * of the delay model outside competing (heavy loss, CE) */
    if (!GST_CLOCK_TIME_IS_VALID (sr->cubic_epoch)
        || sr->x_delay < 0.99 * sr->cubic_last) {
      if (GST_CLOCK_TIME_IS_VALID (sr->cubic_epoch))
        sr->cubic_max = sr->cubic_last;
      else if (sr->cubic_max <= 0)
        sr->cubic_max = MAX (sr->queue_rate, sr->x_delay);
      sr->cubic_epoch = now;
      sr->cubic_k = cbrt (MAX (sr->cubic_max - sr->x_delay, 0) / cr);
    }
    /* (a rate the session does not use is not probed further, as TCP's
     * window of an application-limited flow, RFC 7661: beside a bulk
     * TCP, with the rUDP receiver's samples left out, the target went to
     * the ceiling, 4.3 Mbit/s, while 2 got through; the epoch waits) */
    if (xr <= 0 || sr->x_delay < COMPETE_USED * xr) {
      t = (now - sr->cubic_epoch) / 1e9 - sr->cubic_k;
      nx = MAX (sr->x_delay + c->packet_size * 8.0 * dt / (resp * resp),
          sr->cubic_max + cr * t * t * t);
      if (xr > 0)
        nx = MIN (nx, MAX (sr->x_delay, COMPETE_USED * xr));
      if (c->max_bitrate && nx > c->max_bitrate)
        nx = c->max_bitrate;
      sr->x_delay = MAX (sr->x_delay, nx);
    } else {
      sr->cubic_epoch += (GstClockTime) (dt * 1e9);
    }
    sr->cubic_last = sr->x_delay;
    sr->st.state = GST_TWOFLOW_SESSION_RATE_STATE_NEAR;
  }
}

/* The delay-based rate (x_delay): a decrease on congestion (at most
 * halved per reaction), held while a decrease's queue drains, else
 * additive near the last congestion's rate or multiplicative; within
 * max-bitrate and the lowest rate; or, competing, compete(). */
static void
adapt (GstTwoflowSessionRate * sr, GstClockTime now, gdouble dt, gdouble r,
    gdouble xr, gboolean any_rtt, gboolean congested, gdouble loss_frac,
    gboolean competing, gdouble floor_rate)
{
  GstTwoflowSessionRateConfig *c = &sr->c;

  if (competing) {
    compete (sr, now, dt, r, xr, floor_rate);
  } else if (congested) {
    sr->st.state = GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED;
    if (now >= sr->hold_until) {
      gdouble base = xr > 0 ? xr : sr->x_delay;
      /* at most halved per reaction: the delivered rate of a transport
       * whose reports have not come yet, or of a flow that had little to
       * send, is no measure of the path */
      gdouble nx = MAX (c->decrease * base, MAX_CUT * sr->x_delay);

      if (loss_frac > c->loss_threshold && c->loss_threshold > 0)
        nx = MIN (nx, sr->x_delay * (1 - 0.5 * loss_frac));
      if (nx < sr->x_delay || sr->x_delay <= 0)
        sr->x_delay = nx;
      sr->x_cong = base;
      sr->hold_until = now + (GST_CLOCK_TIME_IS_VALID (sr->srtt) ? sr->srtt :
          100 * GST_MSECOND) + RESPONSE_EXTRA;
      sr->st.decreases++;
    }
  } else if (now < sr->hold_until) {
    sr->st.state = GST_TWOFLOW_SESSION_RATE_STATE_HOLD;
  } else {
    /* the queue is empty: start from what is sent now */
    if (sr->target > sr->x_delay)
      sr->x_delay = sr->target;
    /* (a clean path is one whose RTT says so: without a fresh sample —
     * a transport that reports losses only, ERAP — the controller sees a
     * queue only when it overflows, and probes at the plain pace) */
    gdouble since = GST_CLOCK_TIME_IS_VALID (sr->last_congestion)
        && now > sr->last_congestion ? (now - sr->last_congestion) / 1e9 : 0;
    gdouble clean = any_rtt ? since : 0;

    /* near the rate of the last congestion: additively, but for a second
     * without congestion only (after that the capacity has grown: in the
     * showdown's step the additive phase cost 0.7 s of the 3; counted
     * with or without an RTT: once the essential flow had sent the
     * clip's last segment, the additive phase lasted to the clip's end) */
    if (sr->x_cong > 0 && sr->x_delay < NEAR_FACTOR * sr->x_cong
        && since < NEAR_TIME) {
      gdouble resp = r + RESPONSE_EXTRA / 1e9;
      sr->x_delay += c->packet_size * 8.0 * dt / (resp * resp);
      sr->st.state = GST_TWOFLOW_SESSION_RATE_STATE_NEAR;
    } else {
      /* the longer the path stays clean, the faster (as slow start after
       * an idle path): `increase` per second right after the last
       * congestion, ACCEL more per clean second, at most ACCEL_MAX (x3
       * per second); freed capacity is taken back in about two seconds
       * (at 25 %/s alone 1.5 -> 3 Mbit/s took 3 s) */
      gdouble gain = MIN (c->increase * (1 + ACCEL * clean), ACCEL_MAX);

      sr->x_delay *= pow (1 + gain, dt);
      sr->st.state = GST_TWOFLOW_SESSION_RATE_STATE_INCREASE;
    }
    /* application-limited: no further than twice what gets through,
     * unless bounded by max-bitrate */
    if (c->max_bitrate == 0 && xr > 0)
      sr->x_delay = MIN (sr->x_delay, MAX (2 * xr, sr->target));
  }
  if (c->max_bitrate && sr->x_delay > c->max_bitrate)
    sr->x_delay = c->max_bitrate;
  {
    gdouble lowest = c->min_bitrate ? c->min_bitrate :
        c->packet_size * 8.0 / LOWEST_INTERVAL;
    if (sr->x_delay < lowest)
      sr->x_delay = lowest;
  }
}

static void
update (GstTwoflowSessionRate * sr, GstClockTime now)
{
  GstTwoflowSessionRateConfig *c = &sr->c;
  gdouble dt = (now - sr->last_update) / 1e9;
  gdouble xr = delivered_rate (sr, now);
  gdouble r = rtt_seconds (sr);
  GstClockTime qdelay, newest;
  gdouble loss_frac, persist, recent, floor_rate, target;
  gboolean congested = FALSE, any_rtt, draining = FALSE, competing;
  gboolean queue_decrease = FALSE, queue_only = FALSE;
  gboolean standing, stood_long, quiet;
  GstClockTime own = c->lateness_budget ? c->lateness_budget : OWN_QUEUE;
  guint i;

  sr->last_update = now;
  sr->st.updates++;
  any_rtt = queue_delay (sr, now, &newest, &qdelay, &draining);
  loss_frac = raw_loss (sr, &persist, &recent);
  if (sr->loss_window_sent >= MIN_LOSS_PACKETS
      && loss_frac <= c->loss_threshold)
    sr->loss_clean_seen = TRUE;

  if (any_rtt && qdelay > c->qdelay_threshold && draining) {
    /* a queue, but it drains: the last decrease works (GCC's hold) */
    queue_only = TRUE;
    if (sr->hold_until < now + sr->c.update_interval)
      sr->hold_until = now + sr->c.update_interval;
  } else if (any_rtt && qdelay > c->qdelay_threshold) {
    congested = TRUE;
    queue_only = sr->tick_ce == 0 && !(c->loss_threshold > 0
        && loss_frac > c->loss_threshold
        && loss_is_congestion (sr, now, persist, recent));
    if (now >= sr->hold_until)
      queue_decrease = TRUE;
  } else if (sr->tick_ce > 0) {
    congested = TRUE;
    if (now >= sr->hold_until)
      sr->st.decreases_ecn++;
  } else if (c->loss_threshold > 0 && loss_frac > c->loss_threshold) {
    if (loss_is_congestion (sr, now, persist, recent)) {
      congested = TRUE;
      sr->loss_cong_time = now;
      if (now >= sr->hold_until)
        sr->st.decreases_loss++;
    } else {
      sr->st.loss_bursts++;
    }
  }
  sr->tick_sent = sr->tick_lost = sr->tick_ce = 0;

  /* competing with a queue the session does not cause: one that stood
   * through STANDING_DECREASES of its decreases without emptying, within
   * the budget of its own queues (no CE, no heavy loss), or, with no
   * other RTT, the samples handle_clean_rtt() leaves out (such a queue
   * seen by the rUDP receiver: without an input the rate grew at 25 %/s
   * to the ceiling, 4.3 Mbit/s, while 2 got through beside a bulk TCP on
   * 5 Mbit/s, and the clip passed through into a 2.5 Mbit/s share) */
  /* (gone when a fresh sample shows it gone, or after EPISODE_MAX
   * without any: beside a 1.2 s queue cTCP's SRTT reads paused for a
   * second in its loss recovery, and the count started anew, another
   * 5 s of decreases) */
  if (any_rtt ? qdelay <= c->qdelay_threshold
      : !GST_CLOCK_TIME_IS_VALID (newest) || now > newest + EPISODE_MAX) {
    sr->queue_decreases = 0;
    sr->queue_since = GST_CLOCK_TIME_NONE;
    sr->queue_rate = 0;
  }
  /* (and the loss events say a competition: the equation gives a TCP
   * at most COMPETE_LOSS x what gets through. After the showdown's
   * capacity drop one loss event in 10 s allowed 3 Mbit/s on the 1.5
   * Mbit/s link, and its queue, 60-190 ms behind the coding delay,
   * stood through 3 decreases: competing there overflowed the queue
   * for 9 s) */
  /* (a queue beyond the budget too, whatever the loss events, once it
   * stood EPISODE_MAX longer and does not drain now: an episode of our
   * own queue ends within that, handle_clean_rtt(); the showdown's step
   * queues were gone in 2.5 s. Beside a bulk TCP with a 1.2 s queue the
   * delay model went 4.2 -> 0.11 Mbit/s in 15 s, 0.22 of the fair share,
   * before the session lost a packet; and once competing had lowered
   * what got through, its few loss events failed the bound) */
  standing = queue_only && sr->queue_decreases >= STANDING_DECREASES
      && now >= sr->queue_since + STANDING_TIME && xr > 0;
  stood_long = standing && now >= sr->queue_since + STANDING_TIME +
      EPISODE_MAX && !draining;
  competing = standing && (qdelay > own ? stood_long : sr->n_intervals > 0
      && equation_rate (sr, now, newest, r) <= COMPETE_LOSS * xr);
  /* a queue within the budget without a loss event since it began too,
   * as one beyond the budget (the session's own overflows or drains by
   * then), and a loss-free queue back within COMPETE_MEMORY of that the
   * same competitor's: beside a bulk BBR flow, which keeps its 30-100 ms
   * queue without overflowing it, there was no loss event and the delay
   * model backed off on the queue for 10 s at a time, until BBR's
   * ProbeRTT emptied it for 200 ms, and again after it (H.264 over cTCP
   * 0.41-0.69 of the fair share, the clip re-encoded at 44-46 dB) */
  quiet = stood_long && qdelay <= own
      && sr->st.loss_events == sr->queue_events;
  if (quiet)
    sr->quiet_events = sr->st.loss_events;
  if (quiet || (queue_only && GST_CLOCK_TIME_IS_VALID (sr->quiet_time)
          && now <= sr->quiet_time + COMPETE_MEMORY
          && sr->st.loss_events == sr->quiet_events)) {
    sr->quiet_time = now;
    sr->st.quiet_updates++;
    competing = TRUE;
  }
  competing = competing || (!congested && rtt_ambiguous (sr, now));
  /* (CUBIC's state lasts while the queue stands or the session competes) */
  if (!competing && sr->queue_decreases == 0) {
    sr->cubic_epoch = GST_CLOCK_TIME_NONE;
    sr->cubic_max = 0;
  }
  floor_rate = tcp_floor (sr, now, newest, r, xr, qdelay, congested);
  sr->xr_hist[sr->xr_head] = xr > 0 ? xr : 0;
  sr->xr_head = (sr->xr_head + 1) % N_XR;

  if (congested || now < sr->hold_until)
    sr->last_congestion = now;
  adapt (sr, now, dt, r, xr, any_rtt, congested, loss_frac, competing,
      floor_rate);
  if (queue_decrease && !competing) {
    sr->st.decreases_qdelay++;
    if (sr->queue_decreases++ == 0) {
      sr->queue_since = now;
      sr->queue_rate = xr > 0 ? xr : sr->x_delay;
      sr->queue_events = sr->st.loss_events;
    }
  }
  /* (the loss events before competing are no reason to decrease then) */
  sr->compete_events = sr->st.loss_events;

  target = MAX (sr->x_delay, floor_rate);
  if (c->max_bitrate && target > c->max_bitrate)
    target = c->max_bitrate;
  if (target < c->min_bitrate)
    target = c->min_bitrate;
  sr->target = (guint64) target;

  sr->st.qdelay = qdelay;
  sr->st.loss_fraction = loss_frac;
  sr->st.delivered_rate = xr > 0 ? (guint64) xr : 0;
  for (i = 0; i < GST_TWOFLOW_SESSION_RATE_MAX_SOURCES; i++) {
    gdouble d = delivered_rate_of (sr, &sr->src[i], now);
    sr->st.source_delivered[i] = d > 0 ? (guint64) d : 0;
  }
  sr->st.delay_rate = (guint64) sr->x_delay;
  sr->st.tcp_rate = floor_rate >= G_MAXUINT64 ? G_MAXUINT64 :
      (guint64) floor_rate;
  sr->st.min_target = MIN (sr->st.min_target, sr->target);
  sr->st.max_target = MAX (sr->st.max_target, sr->target);
  lateness_rule (sr, now, any_rtt ? qdelay : 0);
  sr->st.code_target = sr->code_target;
}

gboolean
gst_twoflow_session_rate_poll (GstTwoflowSessionRate * sr, GstClockTime now,
    guint64 * target)
{
  gboolean ran = FALSE;

  if (!sr->started || now < sr->next_update)
    return FALSE;
  update (sr, now);
  ran = TRUE;
  /* the grid: skip what was missed */
  while (sr->next_update <= now)
    sr->next_update += sr->c.update_interval;
  if (ran && sr->target != sr->reported) {
    sr->reported = sr->target;
    if (target)
      *target = sr->target;
    return TRUE;
  }
  return FALSE;
}

GstClockTime
gst_twoflow_session_rate_next_wakeup (GstTwoflowSessionRate * sr)
{
  return sr->started ? sr->next_update : GST_CLOCK_TIME_NONE;
}

guint64
gst_twoflow_session_rate_get_target (GstTwoflowSessionRate * sr)
{
  return sr->target;
}

guint64
gst_twoflow_session_rate_get_code_target (GstTwoflowSessionRate * sr)
{
  return sr->code_target;
}

void
gst_twoflow_session_rate_get_stats (GstTwoflowSessionRate * sr,
    GstTwoflowSessionRateStats * st)
{
  *st = sr->st;
  st->target = sr->target;
  st->code_target = sr->code_target;
  st->srtt = GST_CLOCK_TIME_IS_VALID (sr->srtt) ? sr->srtt : 0;
  if (st->min_target == G_MAXUINT64)
    st->min_target = 0;
}
