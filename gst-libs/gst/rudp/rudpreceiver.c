/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the rUDP receiver algorithm over the rate levels (sans-IO). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "rudpreceiver.h"
#include "rudpfeedback.h"

/* ------------------------------------------------------------------ */

/* packets a duplicate is recognised within (longer than a playout
 * buffer's worth at the levels' rates) */
#define SEEN_WINDOW 4096

struct _GstRudpReceiver {
  GstRudpReceiverConfig c;
  guint level;

  gboolean have_seq;
  guint32 cycles;               /* seq wraps << 16 */
  guint16 max_seq;
  guint32 base_seq;
  guint64 received;
  guint64 duplicates;
  /* which of the last SEEN_WINDOW sequence numbers (extended, bit
   * ext % SEEN_WINDOW) arrived: a resent packet can arrive twice (a
   * NACK answered twice), and counted twice it would hide a packet that
   * never came (lost = expected - received) and take back a loss */
  guint64 seen[SEEN_WINDOW / 64];
  gdouble mean_size;            /* bytes, EWMA; 0 until a size is known */

  /* the round being judged for loss */
  GstClockTime round_start;     /* NONE until the first packet */
  guint64 round_expected0;
  guint64 round_lost;           /* gaps that count, minus late arrivals */
  guint64 after_gap;            /* packets received since a gap opened */

  /* where the current level holds: packets from level_seq on were sent at
   * it (G_MAXUINT64 until the sender's notice or level_deadline) */
  guint64 level_seq;
  GstClockTime level_deadline;
  GstClockTime level_since;     /* when it was asked for; NONE: initial */
  /* after a decrease: losses below level_seq do not count */
  gboolean holding;

  /* the loss-free stretch at the current level, towards an increase */
  GstClockTime clean_start;     /* arrival of its first packet; NONE */
  GstClockTime clean_last;      /* and of its last */
  guint64 clean_bytes;          /* sizes of its packets but the first */
  guint64 clean_packets;

  GstClockTime srtt;
  GstClockTime last_rtt;
  gboolean rtt_fresh;           /* last_rtt not yet taken for a request */
  guint64 rtt_samples;
  gboolean level_changed;
  GstClockTime last_feedback;

  guint64 increases, decreases, rounds;
  guint8 fraction_lost;
  guint64 ect_received, ce_marked, ce_decreases, ce_marked_rtcp;

  /* law TFRC: loss intervals in packets, [0] the latest closed */
  gdouble intervals[8];
  guint n_intervals;
  guint64 event_expected;       /* expected count at the open event's start */
  GstClockTime event_start;     /* NONE: no loss event yet */
  guint64 loss_events;

  /* retransmission requests (NACKs) out: seq -> NackEntry, until the
   * packet arrives or NACK_FORGET passes */
  GHashTable *nacks;
  guint64 nacks_due, nacks_held, nacked_arrived;
};

typedef struct {
  GstClockTime last;            /* the last NACK for it went out */
} NackEntry;

/* a request older than this is forgotten (a sequence number comes back
 * after 65536 packets; a playout buffer is shorter) */
#define NACK_FORGET (5 * GST_SECOND)
#define NACK_PRUNE_SIZE 512

static const gdouble tfrc_weights[8] =
    { 1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2 };

void
gst_rudp_receiver_config_init (GstRudpReceiverConfig * c)
{
  memset (c, 0, sizeof (*c));
  gst_rudp_levels_init_default (&c->levels);
  c->initial_level = 0;
  c->initial_rtt = 100 * GST_MSECOND;
  c->min_interval = GST_RUDP_DEFAULT_MIN_INTERVAL;
  c->feedback_interval = 200 * GST_MSECOND;
  c->increase_rtts = GST_RUDP_DEFAULT_INCREASE_RTTS;
  c->increase_packets = GST_RUDP_DEFAULT_INCREASE_PACKETS;
  c->increase_time = GST_RUDP_DEFAULT_INCREASE_TIME;
  c->tcp_friendly = TRUE;
}

GstRudpReceiver *
gst_rudp_receiver_new (const GstRudpReceiverConfig * c)
{
  GstRudpReceiver *r = g_new0 (GstRudpReceiver, 1);

  r->c = *c;
  if (r->c.levels.n == 0 || r->c.levels.n > GST_RUDP_MAX_LEVELS)
    gst_rudp_levels_init_default (&r->c.levels);
  r->c.increase_rtts = MAX (r->c.increase_rtts, 1);
  r->c.increase_packets = MAX (r->c.increase_packets, 1);
  r->level = MIN (c->initial_level, r->c.levels.n - 1);
  r->round_start = GST_CLOCK_TIME_NONE;
  r->last_feedback = GST_CLOCK_TIME_NONE;
  r->clean_start = GST_CLOCK_TIME_NONE;
  r->level_since = GST_CLOCK_TIME_NONE;
  r->event_start = GST_CLOCK_TIME_NONE;
  /* the initial level holds from the first packet on */
  r->level_seq = 0;
  r->nacks = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  return r;
}

void
gst_rudp_receiver_free (GstRudpReceiver * r)
{
  g_hash_table_unref (r->nacks);
  g_free (r);
}

static guint64
expected_of (GstRudpReceiver * r)
{
  if (!r->have_seq)
    return 0;
  return (guint64) (r->cycles + r->max_seq) - r->base_seq + 1;
}

static GstClockTime
rtt_of (GstRudpReceiver * r)
{
  return r->rtt_samples ? r->srtt : r->c.initial_rtt;
}

static GstClockTime
round_length (GstRudpReceiver * r)
{
  return MAX (rtt_of (r), r->c.min_interval);
}

/* The shortest loss-free stretch at the current level before going one
 * level up: increase_rtts rounds and, when tcp_friendly, step * RTT^2
 * with the step in packets/s. TCP adds one packet per RTT to its window,
 * i.e. 1/RTT packets/s to its rate every RTT; a flow that adds `step`
 * packets/s every interval I is no more aggressive iff I >= step * RTT^2
 * (both halve on loss). One level per RTT is TCP-friendly only while a
 * level step is at most one packet per RTT. */
static GstClockTime
increase_wait (GstRudpReceiver * r)
{
  GstClockTime t = r->c.increase_rtts * round_length (r);

  if (r->c.tcp_friendly && r->mean_size > 0
      && r->level + 1 < r->c.levels.n) {
    gdouble step = (r->c.levels.rate[r->level + 1] -
        r->c.levels.rate[r->level]) / 8.0 / r->mean_size;
    /* TCP's increase is clocked by the RTT of the moment, queue included:
     * the SRTT lags a filling queue by several samples */
    gdouble rtt = (gdouble) MAX (rtt_of (r), r->last_rtt) / GST_SECOND;

    t = MAX (t, (GstClockTime) (step * rtt * rtt * GST_SECOND));
  }
  return t;
}

/* Whether the packets sent at the current level arrive at its rate (at
 * least 7/8 of it, over GST_RUDP_TIME_RULE_PACKETS or more): the path
 * carries the level. A paced flow above the capacity of a queue it has to
 * itself arrives at the capacity long before that queue overflows. */
static gboolean
level_carried (GstRudpReceiver * r)
{
  gdouble span;

  if (r->clean_packets < GST_RUDP_TIME_RULE_PACKETS)
    return FALSE;
  if (r->mean_size <= 0)
    return TRUE;                /* no sizes given: no rate to check */
  /* the bytes after the first packet, over the time since it came (in
   * bytes, not packets: a small first packet, e.g. a payloader's config,
   * would skew a mean size for tens of packets) */
  span = (gdouble) (r->clean_last - r->clean_start) / GST_SECOND;
  return r->clean_bytes >= 0.875 * (r->c.levels.rate[r->level] / 8.0) * span;
}

/* When the stretch at the current level is long enough to go up (NONE:
 * not yet). Either rule:
 * - packets: increase_packets loss-free packets sent at the level, over
 *   at least the increase wait (RTTs, step * RTT^2) from the first, and
 *   (from three on) arriving at its rate;
 * - time (increase_time > 0): a few loss-free packets sent at the level,
 *   arriving at its rate, and the increase wait (at least increase_time)
 *   since the level was asked for. The TCP-friendly bound is on how fast
 *   the *rate* grows, i.e. on the time between two requests; counting it
 *   from the first packet at the level instead adds the feedback's round
 *   trip to every step and climbs at half TCP's pace. The arrival rate is
 *   the paced flow's stand-in for TCP's ACK clock: TCP cannot send faster
 *   than its ACKs come back, a paced flow can, and on a drop-tail queue
 *   of its own it would climb several levels past the capacity before
 *   the queue overflows (with either rule). */
static GstClockTime
increase_at (GstRudpReceiver * r)
{
  GstClockTime wait, t = GST_CLOCK_TIME_NONE;

  if (!GST_CLOCK_TIME_IS_VALID (r->clean_start))
    return GST_CLOCK_TIME_NONE;
  wait = increase_wait (r);
  if (r->clean_packets >= r->c.increase_packets
      && (r->clean_packets < GST_RUDP_TIME_RULE_PACKETS || level_carried (r)))
    t = r->clean_start + wait;
  if (r->c.increase_time > 0 && level_carried (r)) {
    GstClockTime from = GST_CLOCK_TIME_IS_VALID (r->level_since) ?
        r->level_since : r->clean_start;
    GstClockTime by_time = MAX (from + MAX (wait, r->c.increase_time),
        r->clean_last);

    t = GST_CLOCK_TIME_IS_VALID (t) ? MIN (t, by_time) : by_time;
  }
  return t;
}

static guint64
ext_max (GstRudpReceiver * r)
{
  return (guint64) r->cycles + r->max_seq;
}

/* extended form of @seq, the one nearest the highest so far */
static guint64
extend (GstRudpReceiver * r, guint16 seq)
{
  gint16 d = (gint16) (seq - r->max_seq);
  gint64 e = (gint64) ext_max (r) + d;

  return e < 0 ? 0 : (guint64) e;
}

static void round_end (GstRudpReceiver * r, guint64 exp, GstClockTime now);
static void decrease (GstRudpReceiver * r, GstClockTime now);

static gboolean
counts (GstRudpReceiver * r, guint64 ext)
{
  return !r->holding || ext >= r->level_seq;
}

static void
clean_reset (GstRudpReceiver * r)
{
  r->clean_start = GST_CLOCK_TIME_NONE;
  r->clean_last = GST_CLOCK_TIME_NONE;
  r->clean_bytes = 0;
  r->clean_packets = 0;
}

/* a new level was asked for: which packets carry it is not known yet */
static void
level_set (GstRudpReceiver * r, guint level, GstClockTime now)
{
  r->level = level;
  r->level_changed = TRUE;
  r->level_seq = G_MAXUINT64;
  r->level_deadline = now + 2 * round_length (r);
  r->level_since = now;
  clean_reset (r);
}

static guint64 *
seen_word (GstRudpReceiver * r, guint64 ext, guint64 * bit)
{
  *bit = G_GUINT64_CONSTANT (1) << (ext % 64);
  return &r->seen[(ext % SEEN_WINDOW) / 64];
}

/* the highest went from @from up to @to: the numbers after @from are new */
static void
seen_advance (GstRudpReceiver * r, guint64 from, guint64 to)
{
  guint64 e, bit;

  if (to - from >= SEEN_WINDOW) {
    memset (r->seen, 0, sizeof (r->seen));
    return;
  }
  for (e = from + 1; e <= to; e++)
    *seen_word (r, e, &bit) &= ~bit;
}

/* TRUE for a packet not seen before (one older than the window counts as
 * new: nothing tells) */
static gboolean
receive (GstRudpReceiver * r, guint16 seq, gsize size, GstClockTime now)
{
  guint64 ext, bit;

  if (!r->have_seq) {
    r->have_seq = TRUE;
    r->max_seq = seq;
    r->base_seq = seq;
    r->cycles = 0;
    ext = seq;
    memset (r->seen, 0, sizeof (r->seen));
    if (r->level_seq != G_MAXUINT64)
      r->level_seq = ext;
  } else {
    guint16 delta = seq - r->max_seq;

    ext = extend (r, seq);
    /* ahead (modulo 2^16, less than half the space): the newest packet,
     * and the gap before it is lost (for now); otherwise a duplicate or a
     * late packet, which takes back one loss */
    if (delta != 0 && delta < 0x8000) {
      guint64 first = ext_max (r) + 1;

      seen_advance (r, ext_max (r), ext);
      if (r->holding)
        first = MAX (first, r->level_seq);
      if (ext > first) {
        r->round_lost += ext - first;
        r->after_gap++;         /* this packet is the first after it */
      } else if (r->round_lost > 0) {
        r->after_gap++;
      }
      if (seq < r->max_seq)
        r->cycles += 0x10000;
      r->max_seq = seq;
    } else if (delta == 0 || (ext + SEEN_WINDOW > ext_max (r)
            && (*seen_word (r, ext, &bit) & bit))) {
      r->received++;
      r->duplicates++;
      return FALSE;
    } else if (counts (r, ext) && r->round_lost > 0) {
      if (--r->round_lost == 0)
        r->after_gap = 0;       /* it was reordering */
    }
  }
  *seen_word (r, ext, &bit) |= bit;
  if (r->holding && ext >= r->level_seq)
    r->holding = FALSE;         /* packets at the new level arrive */
  if (ext >= r->level_seq) {
    /* sent at the current level: evidence for (or against) going up */
    if (!GST_CLOCK_TIME_IS_VALID (r->clean_start))
      r->clean_start = now;
    else                        /* (an unknown size: the mean's) */
      r->clean_bytes += size > 0 ? size : (guint64) r->mean_size;
    r->clean_last = now;
    r->clean_packets++;
  }
  if (size > 0)
    r->mean_size = r->mean_size > 0 ? (15 * r->mean_size + size) / 16 : size;
  r->received++;
  if (!GST_CLOCK_TIME_IS_VALID (r->round_start)) {
    r->round_start = now;
    /* this packet belongs to the first round */
    r->round_expected0 = expected_of (r) - 1;
  }
  return TRUE;
}

void
gst_rudp_receiver_handle_packet (GstRudpReceiver * r, guint16 seq,
    gsize size, GstClockTime now)
{
  receive (r, seq, size, now);
}

/* A CE mark that counts: halve now. A mark is no evidence for going up
 * either (decrease() resets the stretch also at level 0). */
static void
ce_react (GstRudpReceiver * r, GstClockTime now)
{
  if (r->level > 0) {
    /* the round restarts, as on a confirmed loss */
    round_end (r, expected_of (r), now);
    r->ce_decreases++;
  }
  decrease (r, now);
}

void
gst_rudp_receiver_handle_packet_ecn (GstRudpReceiver * r, guint16 seq,
    gsize size, guint ecn, GstClockTime now)
{
  guint64 ext;

  /* a duplicate's mark was answered with its first copy's */
  if (!receive (r, seq, size, now))
    return;
  ecn &= 0x3;
  if (ecn == GST_RUDP_ECN_NOT_ECT)
    return;
  r->ect_received++;
  if (ecn != GST_RUDP_ECN_CE)
    return;
  r->ce_marked++;
  ext = extend (r, seq);
  /* marked before the sender switched to the last decrease: the episode
   * already answered (as losses of those packets) */
  if (!counts (r, ext))
    return;
  ce_react (r, now);
}

void
gst_rudp_receiver_handle_rtcp_ce (GstRudpReceiver * r, GstClockTime now)
{
  r->ce_marked_rtcp++;
  /* no sequence number: while a decrease is taking effect it is the same
   * episode */
  if (!r->have_seq || r->holding)
    return;
  ce_react (r, now);
}

void
gst_rudp_receiver_handle_level_applied (GstRudpReceiver * r, guint level,
    guint16 seq)
{
  /* a notice for an older request says nothing about the current level */
  if (level == r->level && r->level_seq == G_MAXUINT64 && r->have_seq)
    r->level_seq = extend (r, seq);
}

void
gst_rudp_receiver_handle_rtt_sample (GstRudpReceiver * r, GstClockTime rtt)
{
  r->last_rtt = rtt;
  r->rtt_fresh = TRUE;
  if (r->rtt_samples == 0)
    r->srtt = rtt;
  else                          /* Jacobson's gain of 1/8 */
    r->srtt = (7 * r->srtt + rtt) / 8;
  r->rtt_samples++;
}

GstClockTime
gst_rudp_receiver_handle_echo (GstRudpReceiver * r, guint32 echo_timestamp,
    guint32 delay, GstClockTime now)
{
  guint32 rtt;
  GstClockTime t;

  if (echo_timestamp == 0)
    return GST_CLOCK_TIME_NONE;
  rtt = gst_rudp_ntp_short (now) - echo_timestamp - delay;
  /* modulo 2^32 (18 h): anything above a minute is garbage */
  if (rtt >= 60 * 65536)
    return GST_CLOCK_TIME_NONE;
  t = gst_rudp_ntp_short_to_time (rtt);
  gst_rudp_receiver_handle_rtt_sample (r, t);
  return t;
}

GstClockTime
gst_rudp_receiver_take_rtt_sample (GstRudpReceiver * r)
{
  if (!r->rtt_fresh)
    return GST_CLOCK_TIME_NONE;
  r->rtt_fresh = FALSE;
  return r->last_rtt;
}

/* Ends the round (its loss fraction for the reports). */
static void
round_end (GstRudpReceiver * r, guint64 exp, GstClockTime now)
{
  gint64 d_exp = exp - r->round_expected0;

  r->rounds++;
  r->fraction_lost = (guint8) MIN (255, (r->round_lost * 256) / MAX (d_exp,
          1));
  r->round_expected0 = exp;
  r->round_lost = 0;
  r->after_gap = 0;
  r->round_start = now;
}

static void tfrc_decrease (GstRudpReceiver * r, GstClockTime now);

static void
decrease (GstRudpReceiver * r, GstClockTime now)
{
  if (r->c.law == GST_RUDP_LAW_TFRC) {
    tfrc_decrease (r, now);
    return;
  }
  clean_reset (r);
  if (r->level > 0) {
    level_set (r, r->level / 2, now);
    r->decreases++;
    r->holding = TRUE;
  }
}

/* law TFRC ---------------------------------------------------------- */

static gdouble
tfrc_p (GstRudpReceiver * r)
{
  gdouble open, tot0 = 0, tot1 = 0, wtot = 0, mean;
  guint i, n = r->n_intervals;

  if (n == 0)
    return 0;
  open = (gdouble) (expected_of (r) - r->event_expected);
  for (i = 0; i < n && i < 8; i++) {
    tot0 += (i == 0 ? open : r->intervals[i - 1]) * tfrc_weights[i];
    wtot += tfrc_weights[i];
  }
  for (i = 1; i <= n && i <= 8; i++)
    tot1 += r->intervals[i - 1] * tfrc_weights[i - 1];
  mean = MAX (tot0, tot1) / wtot;
  return 1.0 / MAX (mean, 1.0);
}

/* X of the equation, bit/s (G_MAXUINT64 before any loss event) */
static guint64
tfrc_rate (GstRudpReceiver * r)
{
  gdouble p = tfrc_p (r), rtt, s, d;

  if (p <= 0)
    return G_MAXUINT64;
  rtt = (gdouble) MAX (rtt_of (r), r->c.min_interval) / GST_SECOND;
  s = r->mean_size > 0 ? r->mean_size : 1000;
  d = rtt * sqrt (2 * p / 3) + 4 * rtt * (3 * sqrt (3 * p / 8)) * p * (1 +
      32 * p * p);
  return (guint64) (s * 8 / d);
}

/* A loss (or mark) seen at @now: a new loss event unless within one RTT
 * of the current one's start. The first interval is the packets so far. */
static void
tfrc_loss (GstRudpReceiver * r, GstClockTime now)
{
  guint64 exp = expected_of (r);

  if (GST_CLOCK_TIME_IS_VALID (r->event_start)
      && now < r->event_start + rtt_of (r))
    return;
  memmove (&r->intervals[1], &r->intervals[0], 7 * sizeof (gdouble));
  r->intervals[0] = MAX ((gdouble) (exp - r->event_expected), 1.0);
  r->n_intervals = MIN (r->n_intervals + 1, 8);
  r->event_expected = exp;
  r->event_start = now;
  r->loss_events++;
}

/* The highest level the equation allows (the top before any loss). */
static guint
tfrc_level (GstRudpReceiver * r)
{
  guint64 x = tfrc_rate (r);

  if (x == G_MAXUINT64)
    return r->c.levels.n - 1;
  return gst_rudp_levels_for_bitrate (&r->c.levels, x);
}

/* law TFRC's reaction to a loss or mark: down to the equation's level
 * when below it, never further (the stretch towards an increase starts
 * again either way) */
static void
tfrc_decrease (GstRudpReceiver * r, GstClockTime now)
{
  guint l;

  tfrc_loss (r, now);
  clean_reset (r);
  l = tfrc_level (r);
  if (l < r->level) {
    level_set (r, l, now);
    r->decreases++;
    r->holding = TRUE;
  }
}

static void
judge_round (GstRudpReceiver * r, GstClockTime now)
{
  guint64 exp = expected_of (r);
  gboolean lost = r->round_lost > 0;

  if (exp <= r->round_expected0) {
    r->round_start = now;       /* nothing sent: no verdict */
    return;
  }
  round_end (r, exp, now);
  if (r->level_seq == G_MAXUINT64 && now >= r->level_deadline) {
    /* no notice came: assume the level holds from the next packet */
    r->level_seq = ext_max (r) + 1;
    r->holding = FALSE;
  }
  if (lost)
    decrease (r, now);
}

/* Up one level once the stretch at the current level is long enough and
 * the round so far has no loss. Checked on every call, not only at round
 * ends, so the wait is exact rather than rounded up to the round grid. */
static void
maybe_increase (GstRudpReceiver * r, GstClockTime now)
{
  GstClockTime at;

  if (r->holding || r->round_lost != 0 || r->level + 1 >= r->c.levels.n)
    return;
  if (r->c.law == GST_RUDP_LAW_TFRC && r->level + 1 > tfrc_level (r))
    return;
  at = increase_at (r);
  if (GST_CLOCK_TIME_IS_VALID (at) && now >= at) {
    level_set (r, r->level + 1, now);
    r->increases++;
  }
}

static gboolean receiver_judge (GstRudpReceiver * r, GstClockTime now);

gboolean
gst_rudp_receiver_poll (GstRudpReceiver * r, GstClockTime now, guint * level)
{
  gboolean due = receiver_judge (r, now);

  if (level)
    *level = r->level;
  return due;
}

static gboolean
receiver_judge (GstRudpReceiver * r, GstClockTime now)
{
  if (GST_CLOCK_TIME_IS_VALID (r->round_start)) {
    GstClockTime len = round_length (r);

    if (now >= r->round_start + len) {
      /* the next round starts now: a late wakeup stretches one round
       * rather than judging several empty ones */
      judge_round (r, now);
    } else if (r->round_lost > 0 && r->after_gap >= GST_RUDP_REORDER_PACKETS
        && r->level > 0) {
      /* a loss confirmed by later packets (as TCP's three duplicate ACKs
       * do): react now, not at the end of the round; the round restarts */
      round_end (r, expected_of (r), now);
      decrease (r, now);
    }
    maybe_increase (r, now);
  }
  if (r->level_changed)
    return TRUE;
  if (!GST_CLOCK_TIME_IS_VALID (r->round_start))
    return FALSE;               /* nothing received yet: nobody to tell */
  return !GST_CLOCK_TIME_IS_VALID (r->last_feedback)
      || now >= r->last_feedback + r->c.feedback_interval;
}

void
gst_rudp_receiver_handle_feedback_sent (GstRudpReceiver * r,
    GstClockTime now)
{
  r->level_changed = FALSE;
  r->last_feedback = now;
}

GstClockTime
gst_rudp_receiver_next_wakeup (GstRudpReceiver * r)
{
  GstClockTime t;

  if (!GST_CLOCK_TIME_IS_VALID (r->round_start))
    return GST_CLOCK_TIME_NONE;
  t = r->round_start + round_length (r);
  /* (with a loss in this round the increase waits for the round's end;
   * with too few packets and no increase_time, for the next packet) */
  /* (under law TFRC not above the equation's level: no wakeup for an
   * increase maybe_increase() would refuse, or the timer spins) */
  if (!r->holding && r->round_lost == 0 && r->level + 1 < r->c.levels.n
      && (r->c.law != GST_RUDP_LAW_TFRC || r->level + 1 <= tfrc_level (r))) {
    GstClockTime at = increase_at (r);

    if (GST_CLOCK_TIME_IS_VALID (at))
      t = MIN (t, at);
  }
  if (GST_CLOCK_TIME_IS_VALID (r->last_feedback))
    t = MIN (t, r->last_feedback + r->c.feedback_interval);
  return t;
}

guint
gst_rudp_receiver_get_level (GstRudpReceiver * r)
{
  return r->level;
}

void
gst_rudp_receiver_get_stats (GstRudpReceiver * r, GstRudpReceiverStats * st)
{
  guint64 exp = expected_of (r);

  memset (st, 0, sizeof (*st));
  st->received = r->received;
  st->duplicates = r->duplicates;
  st->expected = exp;
  st->lost = exp > r->received - r->duplicates ?
      exp - (r->received - r->duplicates) : 0;
  st->holding = r->holding;
  st->ext_max_seq = r->cycles + r->max_seq;
  st->level = r->level;
  st->increases = r->increases;
  st->decreases = r->decreases;
  st->rounds = r->rounds;
  st->srtt = r->srtt;
  st->rtt_samples = r->rtt_samples;
  st->fraction_lost = r->fraction_lost;
  st->clean_packets = r->clean_packets;
  st->increase_wait = increase_wait (r);
  st->ect_received = r->ect_received;
  st->ce_marked = r->ce_marked;
  st->ce_decreases = r->ce_decreases;
  st->ce_marked_rtcp = r->ce_marked_rtcp;
  st->loss_event_rate = tfrc_p (r);
  st->loss_events = r->loss_events;
  st->tfrc_rate = r->n_intervals ? tfrc_rate (r) : 0;
  st->nacks_due = r->nacks_due;
  st->nacks_held = r->nacks_held;
  st->nacked_arrived = r->nacked_arrived;
}

static gboolean
nack_stale (gpointer key, gpointer value, gpointer now)
{
  return ((NackEntry *) value)->last + NACK_FORGET <
      *(GstClockTime *) now;
}

gboolean
gst_rudp_receiver_nack_due (GstRudpReceiver * r, guint16 seq,
    GstClockTime now)
{
  NackEntry *e = g_hash_table_lookup (r->nacks, GUINT_TO_POINTER (seq));

  /* the answer to the last NACK cannot be back before a round trip:
   * asking again sooner only spends the sender's resends and budget on
   * duplicates (before an RTT sample, the initial RTT: beside a bulk
   * TCP the flow's first losses were resent 4 times in 150 ms on a
   * 200 ms path, each packet's limit used up before a resend arrived) */
  if (e && now < e->last + NACK_FORGET && now < e->last + rtt_of (r)) {
    r->nacks_held++;
    return FALSE;
  }
  if (!e) {
    if (g_hash_table_size (r->nacks) >= NACK_PRUNE_SIZE)
      g_hash_table_foreach_remove (r->nacks, nack_stale, &now);
    e = g_new0 (NackEntry, 1);
    g_hash_table_insert (r->nacks, GUINT_TO_POINTER (seq), e);
  }
  e->last = now;
  r->nacks_due++;
  return TRUE;
}

gboolean
gst_rudp_receiver_take_nacked (GstRudpReceiver * r, guint16 seq,
    GstClockTime now)
{
  NackEntry *e = g_hash_table_lookup (r->nacks, GUINT_TO_POINTER (seq));
  gboolean fresh;

  if (!e)
    return FALSE;
  fresh = now < e->last + NACK_FORGET;
  g_hash_table_remove (r->nacks, GUINT_TO_POINTER (seq));
  if (fresh)
    r->nacked_arrived++;
  return fresh;
}
