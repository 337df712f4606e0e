/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP: Libra, RTT-fair congestion control.
 *
 * Why the laws below give every flow the same rate whatever its RTT
 * (docs/erap.md has the derivation): per RTT a flow gets W ACKs, so W
 * grows by alpha*T^2/(T+A) per RTT, i.e. its rate W/T by alpha/(T+A) per
 * second; a loss takes the fraction B/(2(T+A)) of the rate. The factor
 * 1/(T+A) is common to both and cancels: with loss events at pR per second
 * (loss probability p per packet) the balance alpha/(T+A) =
 * pR * R*B/(2(T+A)) gives R = sqrt(2 alpha/(p B)), with no T in it.
 * One reaction per loss cluster breaks this (see eraplibra.h); alpha
 * scaled by reactions per loss restores it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "eraplibra.h"

#define PAIR_SLOTS 256          /* pairs remembered until their ACKs come */
#define PP_SAMPLES 15           /* capacity = median of the last samples */
/* pairs sent further apart than this were not back to back (seconds) */
#define PP_MAX_SEND_SPREAD 100e-6
/* dispersions below this are timer noise, not a bottleneck (seconds) */
#define PP_MIN_DISPERSION 1e-6
/* Tmax - Tmin below this is jitter, not a queue: without the floor a
 * millisecond of jitter before any queue built up would read as beta ~ 1
 * and stall the increase (seconds; the same for every flow, so flows that
 * share a queue still see the same beta) */
#define BETA_MIN_SPAN 0.010
/* weight of the newest reaction in the losses-per-reaction average */
#define RHO_GAIN (1.0 / 8)
/* At most this many loss events per reaction are counted (rho >= 1/3).
 * Under independent losses a reaction's cluster hides about pW of them,
 * well below one per window where the correction matters (1.1-1.25 in the
 * unit tests). Behind a drop-tail queue overflowed by loss-based TCP a
 * flow loses several separate packets per overflow episode (4-5 per
 * reaction at 1500 packets, 100 Mbit/s, beside cubic): the count then
 * measures the episode, not an RTT bias, and divided alpha 4-5-fold
 * against TCP, which reacts once per episode (docs/erap.md). */
#define RHO_MAX_LOSSES 3.0
/* time constant of the queueing delay averaged for alpha's floor behind
 * the queue (seconds): the queue a loss-based competitor keeps, not the
 * dip after a reaction. With the instantaneous q, Libra flows among
 * themselves behind 1500 packets saw q ~ 0 after each reaction, the floor
 * (up to 833) refilled the queue within seconds, and they stayed in the
 * loss-driven mode: Jain 0.90-0.945 (docs/erap.md). Time-based, so the
 * same for every flow behind one queue. */
#define QAVG_TAU 10.0
/* the start opens this much of the loss memory (seconds; eraplibra.h,
 * deviation 5): enough for a flow behind a queue of loss-based traffic to
 * meet its first loss, short of the queue overflow 8 Libra flows reach
 * among themselves from 1 Mbit/s (~7 s at 100 Mbit/s, 1500 packets), after
 * which the whole loss memory had kept them overflowing it (Jain 0.90) */
#define START_MEMORY 5.0

typedef struct {
  GstErapLibraParams p;
  guint64 rng;

  gdouble w;                    /* packets; 0 until the first ACK or loss */
  gdouble r;                    /* rate state: packets/s, 0 until then */
  gdouble alpha, beta, cap_used;
  gdouble q_avg, q_time;        /* averaged queueing delay; q_time < 0:
                                 * no sample yet */
  gdouble losses_per_reaction;  /* moving average of loss runs, 1/rho */
  guint64 lost_at_reaction;     /* loss runs counted at the last reaction */
  gdouble last_reaction;        /* now of the last loss reaction, <0: none */
  gdouble start;                /* now of the first ACK or loss, <0: none */
  gboolean loss_driven;
  /* before the last reactions that were all timeouts, for undo */
  gdouble undo_w, undo_r, undo_losses_per_reaction, undo_last_reaction;
  gboolean undo_chain;          /* the last reaction was a timeout */

  /* pacing in pairs */
  gboolean second;              /* the next packet completes a pair */
  guint64 first_seq;
  gdouble first_sent;
  gdouble slice_rest;           /* of the slice the last pair went in */

  /* packet-pair capacity estimate */
  guint64 pair_first[PAIR_SLOTS];       /* by seqno % PAIR_SLOTS, 0: none */
  guint64 last_ack_seq;
  gdouble last_ack_time;
  gdouble samples[PP_SAMPLES];
  guint n_samples;
  guint total_samples;
  gdouble cap_est;
} Libra;

void
gst_erap_libra_params_init (GstErapLibraParams * p)
{
  memset (p, 0, sizeof (*p));
  p->a = GST_ERAP_LIBRA_DEFAULT_A;
  p->b = GST_ERAP_LIBRA_DEFAULT_B;
  p->x = GST_ERAP_LIBRA_DEFAULT_X;
  p->y = GST_ERAP_LIBRA_DEFAULT_Y;
  p->seed = 1;
  p->cluster_compensation = TRUE;
  p->state = GST_ERAP_LIBRA_RATE;
  p->queue_ref = 0.1;
  p->loss_divisor = GST_ERAP_LIBRA_DEFAULT_LOSS_DIVISOR;
  p->loss_memory = GST_ERAP_LIBRA_DEFAULT_LOSS_MEMORY;
  p->tcp_rtt = GST_ERAP_LIBRA_DEFAULT_TCP_RTT;
  p->tcp_base_rtt = GST_ERAP_LIBRA_DEFAULT_TCP_BASE_RTT;
}

/* splitmix64: small, seedable, the same on every platform */
static gdouble
uniform (Libra * l)
{
  guint64 z = (l->rng += G_GUINT64_CONSTANT (0x9e3779b97f4a7c15));

  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
  z ^= z >> 31;
  return (z >> 11) * (1.0 / 9007199254740992.0);
}

static void
libra_init (GstErapCC * cc)
{
  Libra *l = cc->priv;

  gst_erap_libra_params_init (&l->p);
  l->rng = l->p.seed;
  l->losses_per_reaction = 1;
  l->slice_rest = -1;
  l->last_reaction = -1;
  l->start = -1;
  l->q_time = -1;
}

static gdouble
current_rtt (const GstErapCCInfo * info)
{
  return MAX (info->srtt, 1e-6);
}

/* The sending rate's share of the rate state: K/(K+q) with q the queueing
 * delay this flow sees, the same for every flow behind one queue, so all
 * back off alike as the queue grows (W/T would back short flows off more). */
static gdouble
braked_scale (Libra * l, const GstErapCCInfo * info)
{
  gdouble q = MAX (0.0, info->srtt - info->min_rtt);

  if (l->p.queue_ref <= 0 || info->min_rtt <= 0)
    return 1;
  return l->p.queue_ref / (l->p.queue_ref + q);
}

/* ... and no scaling while loss-driven (eraplibra.h, deviation 2) */
static gdouble
queue_scale (Libra * l, const GstErapCCInfo * info)
{
  return l->loss_driven ? 1 : braked_scale (l, info);
}

/* Loss-driven within loss_memory of a loss reaction. The rate state is
 * converted at each switch so that the sending rate stays where it was:
 * entering, the state becomes the rate sent; leaving, the state is the
 * rate sent over the queue scale. */
static void
update_mode (GstErapCC * cc, Libra * l, const GstErapCCInfo * info)
{
  gboolean driven;

  /* the start opens START_MEMORY of the loss memory: the flow cannot yet
   * tell its own queue from others' (deviation 5) */
  if (l->start < 0)
    l->start = info->now;
  if (l->last_reaction >= 0)
    driven = l->p.loss_memory > 0 &&
        info->now - l->last_reaction < l->p.loss_memory;
  else
    driven = info->now - l->start < MIN (l->p.loss_memory, START_MEMORY);

  if (driven == l->loss_driven)
    return;
  if (l->p.state == GST_ERAP_LIBRA_RATE && l->r > 0) {
    if (driven)
      l->r *= braked_scale (l, info);
    else
      l->r /= braked_scale (l, info);
  }
  l->loss_driven = driven;
}

/* The state is only set once there is an RTT: until then the law keeps
 * the configured rate, so the first sample does not make the rate jump. */
static void
ensure_state (GstErapCC * cc, Libra * l, const GstErapCCInfo * info,
    gdouble t)
{
  if (l->p.state == GST_ERAP_LIBRA_WINDOW) {
    if (l->w <= 0)
      l->w = t / cc->ipg;
  } else if (l->r <= 0) {
    l->r = 1 / (cc->ipg * queue_scale (l, info));
  }
}

static void
apply_state (GstErapCC * cc, Libra * l, const GstErapCCInfo * info,
    gdouble t)
{
  gdouble sc;

  if (l->p.state == GST_ERAP_LIBRA_WINDOW) {
    /* W is the state, as in TCP Libra: the rate W/T follows the RTT, so a
     * growing queue slows every flow down by itself and absorbs a
     * decrease */
    gst_erap_cc_set_window (cc, l->w, t);
    /* min-rate / max-rate clamps: W follows, so it cannot run away */
    l->w = t / cc->ipg;
    return;
  }
  sc = queue_scale (l, info);
  gst_erap_cc_set_ipg (cc, 1 / (l->r * sc));
  l->r = 1 / (cc->ipg * sc);
  l->w = l->r * t;
}

static gdouble
capacity_mbps (GstErapCC * cc, Libra * l, const GstErapCCInfo * info)
{
  if (l->p.capacity > 0)
    return l->p.capacity / 1e6;
  if (l->cap_est > 0)
    return l->cap_est;
  /* no pair measured yet: the rate we send at is a lower bound */
  return info->packet_size * 8.0 / cc->ipg / 1e6;
}

static void
update_alpha (GstErapCC * cc, Libra * l, const GstErapCCInfo * info,
    gdouble t)
{
  gdouble span = info->max_rtt - info->min_rtt;
  gdouble d = MAX (l->p.loss_divisor, 1e-3);
  gdouble scale;

  l->beta = CLAMP ((t - info->min_rtt) / MAX (span, BETA_MIN_SPAN), 0.0,
      1.0);
  l->cap_used = capacity_mbps (cc, l, info);
  scale = l->p.x * l->cap_used;
  /* never below a Reno flow of tcp_rtt (eraplibra.h, deviation 3) */
  if (l->p.tcp_rtt > 0)
    scale = MAX (scale, 1.5 * l->p.b / (d * l->p.tcp_rtt * l->p.tcp_rtt));
  /* ... nor below a Reno flow of base RTT T_0 behind the same queue
   * (deviation 4): q is the queueing delay every flow behind it sees;
   * from the first loss on (before it, there is no competitor to match) */
  if (l->p.tcp_base_rtt > 0 && l->last_reaction >= 0) {
    gdouble q = info->min_rtt > 0 ? MAX (0.0, t - info->min_rtt) : 0.0;
    gdouble tq;

    if (l->q_time < 0)
      l->q_avg = q;
    else
      l->q_avg += (1 - exp (-MAX (0.0, info->now - l->q_time) / QAVG_TAU)) *
          (q - l->q_avg);
    l->q_time = info->now;
    tq = l->p.tcp_base_rtt + l->q_avg;

    scale = MAX (scale, 1.5 * l->p.b / (d * tq * tq));
  }
  /* losses keep coming: the brake would only hand loss-based cross
   * traffic the bandwidth (eraplibra.h, deviation 2) */
  l->alpha = scale * (l->loss_driven ? 1.0 : exp (-l->p.y * l->beta));
  if (l->p.cluster_compensation)
    l->alpha /= l->losses_per_reaction;
}

static int
cmp_double (const void *a, const void *b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return x < y ? -1 : x > y;
}

static void
pair_sample (Libra * l, gdouble mbps)
{
  gdouble sorted[PP_SAMPLES];

  l->samples[l->total_samples % PP_SAMPLES] = mbps;
  l->total_samples++;
  l->n_samples = MIN (l->n_samples + 1, PP_SAMPLES);
  /* the median: queueing of cross traffic between the two packets spreads
   * a pair, later compression squeezes it; both are outliers */
  memcpy (sorted, l->samples, l->n_samples * sizeof (gdouble));
  qsort (sorted, l->n_samples, sizeof (gdouble), cmp_double);
  l->cap_est = sorted[l->n_samples / 2];
}

static void
libra_on_ack (GstErapCC * cc, const GstErapCCInfo * info)
{
  Libra *l = cc->priv;
  gdouble t = current_rtt (info);
  guint64 prev = info->seqno - 1;

  /* the ACKs of a back-to-back pair arrive as far apart as the bottleneck
   * spread the pair: one full packet's serialization time */
  if (info->seqno > 1 && l->last_ack_seq == prev &&
      l->pair_first[prev % PAIR_SLOTS] == prev) {
    gdouble d = info->now - l->last_ack_time;

    l->pair_first[prev % PAIR_SLOTS] = 0;
    if (d >= PP_MIN_DISPERSION)
      pair_sample (l, (info->packet_size + GST_ERAP_LIBRA_WIRE_OVERHEAD) *
          8.0 / d / 1e6);
  }
  l->last_ack_seq = info->seqno;
  l->last_ack_time = info->now;

  update_mode (cc, l, info);
  ensure_state (cc, l, info, t);
  update_alpha (cc, l, info, t);
  if (l->p.state == GST_ERAP_LIBRA_WINDOW) {
    l->w += l->alpha * t * t / ((t + l->p.a) * l->w);
  } else {
    /* the law's "per ACK" assumes W ACKs per RTT; packets go at
     * rate*K/(K+q), so only that share of W is acknowledged per RTT:
     * divide by it, so W still grows by alpha T^2/(T+A) per RTT (without
     * this the queue scale also slowed the increase, by K/(K+q)) */
    gdouble w = l->r * t;
    gdouble acked = w * queue_scale (l, info);

    w += l->alpha * t * t / ((t + l->p.a) * acked);
    l->r = w / t;
  }
  apply_state (cc, l, info, t);
}

static void
libra_on_loss (GstErapCC * cc, const GstErapCCInfo * info)
{
  Libra *l = cc->priv;
  gdouble t = current_rtt (info);
  gdouble f = l->p.b / (MAX (l->p.loss_divisor, 1e-3) * (t + l->p.a));

  /* the state before a run of timeout reactions: a stall of the host
   * times out one RTT's packets after another until it ends */
  if (!(info->timeout && l->undo_chain)) {
    l->undo_w = l->w;
    l->undo_r = l->r;
    l->undo_losses_per_reaction = l->losses_per_reaction;
    l->undo_last_reaction = l->last_reaction;
  }
  l->undo_chain = info->timeout;
  /* the losses this reaction stands for: it and those its cluster hid */
  /* counted in loss events, runs of consecutive seqnos: a back-to-back
   * pair that meets a full queue loses both packets, one signal, and
   * counting it twice halved alpha beside TCP (docs/erap.md) */
  if (info->loss_runs > l->lost_at_reaction) {
    gdouble n = MIN ((gdouble) (info->loss_runs - l->lost_at_reaction),
        RHO_MAX_LOSSES);

    l->losses_per_reaction += RHO_GAIN * (n - l->losses_per_reaction);
    l->lost_at_reaction = info->loss_runs;
  }
  l->last_reaction = info->now;
  update_mode (cc, l, info);
  ensure_state (cc, l, info, t);
  /* B > 2(T+A) would take more than the whole window */
  if (l->p.state == GST_ERAP_LIBRA_WINDOW)
    l->w -= l->w * MIN (f, 0.9);
  else
    l->r -= l->r * MIN (f, 0.9);
  apply_state (cc, l, info, t);
}

/* The timeout behind the last reaction was a late ACK (a receiver or
 * sender stalled by a loaded host, not the network): back to the state
 * before it, or where the law has taken it since if that is higher (as
 * Linux's undo_cwnd), and the loss memory and the losses-per-reaction
 * average as they were; the timeouts' loss runs are not counted. The
 * sender undoes a run of timeout reactions at once. */
static void
libra_undo (GstErapCC * cc, const GstErapCCInfo * info)
{
  Libra *l = cc->priv;
  gdouble t = current_rtt (info);

  l->undo_chain = FALSE;
  l->last_reaction = l->undo_last_reaction;
  l->losses_per_reaction = l->undo_losses_per_reaction;
  l->lost_at_reaction = info->loss_runs;
  update_mode (cc, l, info);
  if (l->p.state == GST_ERAP_LIBRA_WINDOW)
    l->w = MAX (l->w, l->undo_w);
  else
    l->r = MAX (l->r, l->undo_r);
  if (l->w > 0 || l->r > 0)
    apply_state (cc, l, info, t);
}

/* Called after each packet: two back to back, then the pair of the next
 * slice (2 gaps long) at a random point within it. */
static gdouble
libra_next_gap (GstErapCC * cc, const GstErapCCInfo * info)
{
  Libra *l = cc->priv;
  gdouble slice, u, gap;

  if (!l->second) {
    l->second = TRUE;
    l->first_seq = info->seqno;
    l->first_sent = info->now;
    return 0;
  }
  l->second = FALSE;
  if (info->seqno == l->first_seq + 1 &&
      info->now - l->first_sent <= PP_MAX_SEND_SPREAD &&
      info->packet_bytes == info->packet_size)
    l->pair_first[l->first_seq % PAIR_SLOTS] = l->first_seq;

  slice = 2 * cc->ipg;
  /* the first pair opens its slice */
  if (l->slice_rest < 0)
    l->slice_rest = slice;
  u = uniform (l);
  gap = l->slice_rest + u * slice;
  l->slice_rest = (1 - u) * slice;
  return gap;
}

const GstErapCongestionOps gst_erap_cc_libra = {
  .name = "libra",
  .priv_size = sizeof (Libra),
  .init = libra_init,
  .on_ack = libra_on_ack,
  .on_loss = libra_on_loss,
  .next_gap = libra_next_gap,
  .undo = libra_undo,
};

gboolean
gst_erap_libra_configure (GstErapCC * cc, const GstErapLibraParams * p)
{
  Libra *l;

  g_return_val_if_fail (cc != NULL && p != NULL, FALSE);
  if (cc->ops != &gst_erap_cc_libra)
    return FALSE;
  l = cc->priv;
  l->p = *p;
  l->rng = p->seed;
  return TRUE;
}

gboolean
gst_erap_libra_get_state (GstErapCC * cc, GstErapLibraState * st)
{
  Libra *l;

  g_return_val_if_fail (cc != NULL && st != NULL, FALSE);
  if (cc->ops != &gst_erap_cc_libra)
    return FALSE;
  l = cc->priv;
  st->window = l->w;
  st->alpha = l->alpha;
  st->beta = l->beta;
  st->capacity = l->p.capacity > 0 ? l->p.capacity : l->cap_used * 1e6;
  st->capacity_estimate = l->cap_est * 1e6;
  st->pair_samples = l->total_samples;
  st->reactions_per_loss = 1 / l->losses_per_reaction;
  st->loss_driven = l->loss_driven;
  return TRUE;
}
