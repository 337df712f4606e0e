/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Rate control of ratetranscoder (sans-IO).
 *
 * Model: re-encoding a frame of S source bits that was coded at quantizer
 * qs, at quantizer q, gives about k[type] * S * qs / q bits. k is learnt
 * per picture type from every re-encoded frame. Each frame is budgeted the
 * same fraction `ratio` of its source size, so the I/P/B proportions of the
 * source are kept:
 *
 *   ratio = (target - floor - D / REPAY) / (input - floor)
 *   q     = k[type] * qs / ratio
 *
 * input and floor (the rate of frames kept byte-identical) are measured
 * over a window of whole GOPs, so an I frame entering or leaving the
 * window does not swing them; D is the model error so far (bits emitted
 * minus bits budgeted), repaid over REPAY seconds.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>
#include "ratecontrol.h"

#define HISTORY 512             /* frames of history, > any window */
#define WINDOW_NS 500000000.0   /* measure rates over ~0.5 s of whole GOPs */
#define REPAY_S 0.5             /* model error repaid over this long */
#define K_INIT 1.0
#define GOP_PRIOR 12            /* GOP length assumed before one is seen */
#define QSRC_DEFAULT 4          /* source qscale assumed when unknown */
#define DEFAULT_DURATION 40000000       /* 25 fps when the caller knows none */
/* B frames are dropped when even GST_TWOFLOW_RATE_CONTROL_Q_MAX misses the
 * target by this much, and come back when a quantizer this far below it
 * would do. That is judged on a k measured at Q_MAX or within Q_PROBE of
 * it: a B frame's size does not follow 1/q (MPEG-2 at 640x360: 7.5 kB at
 * q 5, 1-2 kB anywhere from 7 to 31), so a k learnt at a fine quantizer,
 * or the prior, misjudges what the coarsest one gives. */
#define DROP_ON 1.25
#define DROP_OFF 0.85
#define Q_PROBE 2
#define DROP_SLACK_S 0.25     /* overshoot allowed before B frames go */
/* the stats' lowest-bitrate is the highest of the last 1-2 s of input */
#define LOWEST_HOLD_NS 1000000000

/* per-type arrays are indexed I = 0, P = 1, B = 2 */
enum
{ IDX_I, IDX_P, IDX_B, N_TYPES };

/* the index of a picture type; N_TYPES (refused) for NONE and others */
static inline guint
type_index (GstTwoflowPictureType type)
{
  switch (type) {
    case GST_TWOFLOW_PICTURE_I:
      return IDX_I;
    case GST_TWOFLOW_PICTURE_P:
      return IDX_P;
    case GST_TWOFLOW_PICTURE_B:
      return IDX_B;
    default:
      return N_TYPES;
  }
}

typedef struct
{
  guint32 bytes;
  guint32 duration_us;
  guint8 type;
  guint8 layer;                 /* GstTwoflowRateControlLayer (drop mode) */
  gint8 q;                      /* output ring: quantizer, 0 if not
                                 * re-encoded */
} Entry;

typedef struct
{
  Entry e[HISTORY];
  guint64 count;
} Ring;

struct _GstTwoflowRateControl
{
  /* configuration */
  gdouble target;               /* bit/s; <= 0 means unlimited */
  gdouble min_bitrate, max_bitrate;
  gdouble backoff;
  gdouble recovery;
  guint events;
  GstTwoflowRateControlKeep keep;

  /* state */
  Ring in, out;
  guint64 last_i, prev_i;       /* input frame numbers + 1 of the last two I */
  guint64 last_now;
  gboolean have_now;
  guint64 last_backoff;
  gboolean have_backoff;
  guint pending_backoffs;       /* reacted to before the input rate was known */
  gdouble k[N_TYPES];
  gboolean k_seen[N_TYPES];
  gint k_q[N_TYPES];            /* quantizer k was last learnt at, 0 never */
  gdouble qsrc_avg[N_TYPES];
  gdouble deficit;              /* bits emitted - bits budgeted */
  gboolean dropping;
  gboolean passthrough;
  guint generation;
  gint last_q;
  /* H.264 drop mode */
  gboolean layers;              /* frames come with a layer */
  gboolean tail;                /* dropping the GOP's tail up to the next I */
  /* lowest_rate()'s maximum in this bucket of input and the one before */
  gdouble lowest_cur, lowest_prev;
  guint64 lowest_age;           /* ns of input in this bucket */

  GstTwoflowRateControlStats stats;
};

static gdouble lowest_rate (GstTwoflowRateControl * rc, gdouble in_rate,
    const gdouble by_type[N_TYPES]);

static void
ring_push (Ring * r, guint type, gsize bytes, guint64 duration, gint q)
{
  Entry *e = &r->e[r->count % HISTORY];

  e->bytes = MIN (bytes, G_MAXUINT32);
  e->duration_us = (duration ? duration : DEFAULT_DURATION) / 1000;
  e->type = type;
  e->layer = 0;
  e->q = q;
  r->count++;
}

static gboolean
is_kept (GstTwoflowRateControl * rc, guint type)
{
  return (rc->keep == GST_TWOFLOW_RATE_CONTROL_KEEP_I && type == IDX_I) ||
      (rc->keep == GST_TWOFLOW_RATE_CONTROL_KEEP_IP && type != IDX_B);
}

/* Number of recent frames to measure over: whole GOPs covering ~1 s. */
static guint
window_frames (GstTwoflowRateControl * rc, const Ring * r)
{
  guint64 n = MIN (r->count, HISTORY);
  guint64 i, dur = 0, frames = 0, gop;

  for (i = 0; i < n && i < 8; i++)
    dur += r->e[(r->count - 1 - i) % HISTORY].duration_us;
  if (n == 0)
    return 0;
  dur = MAX (dur / MIN (n, 8), 1);      /* mean frame duration, us */
  frames = MAX ((guint64) (WINDOW_NS / 1000 / dur + 0.5), 1);
  gop = rc->prev_i ? rc->last_i - rc->prev_i : 0;
  if (gop > 0 && gop < HISTORY / 2)
    frames = gop * MAX ((frames + gop / 2) / gop, 1);
  return MIN (frames, n);
}

/* bit/s of the last @frames entries of @r; per-type sums in @by_type */
static gdouble
ring_rate (const Ring * r, guint frames, gdouble by_type[N_TYPES],
    gdouble * mean_q)
{
  guint i, nq = 0;
  gdouble bits = 0, us = 0, qsum = 0;

  if (by_type)
    by_type[0] = by_type[1] = by_type[2] = 0;
  for (i = 0; i < frames; i++) {
    const Entry *e = &r->e[(r->count - 1 - i) % HISTORY];

    bits += e->bytes * 8.0;
    us += e->duration_us;
    if (by_type)
      by_type[e->type] += e->bytes * 8.0;
    if (e->q > 0) {
      qsum += e->q;
      nq++;
    }
  }
  if (mean_q)
    *mean_q = nq ? qsum / nq : 0;
  if (us <= 0)
    return 0;
  if (by_type) {
    by_type[0] *= 1e6 / us;
    by_type[1] *= 1e6 / us;
    by_type[2] *= 1e6 / us;
  }
  return bits * 1e6 / us;
}

GstTwoflowRateControl *
gst_twoflow_rate_control_new (void)
{
  GstTwoflowRateControl *rc = g_new0 (GstTwoflowRateControl, 1);

  rc->backoff = 0.5;
  rc->events = GST_TWOFLOW_CONGESTION_ALL;
  gst_twoflow_rate_control_reset (rc);
  return rc;
}

void
gst_twoflow_rate_control_free (GstTwoflowRateControl * rc)
{
  g_free (rc);
}

/* Forget the stream (flush, new stream); keeps configuration and target. */
void
gst_twoflow_rate_control_reset (GstTwoflowRateControl * rc)
{
  gint t;

  memset (&rc->in, 0, sizeof (rc->in));
  memset (&rc->out, 0, sizeof (rc->out));
  rc->last_i = rc->prev_i = 0;
  rc->have_now = rc->have_backoff = FALSE;
  rc->pending_backoffs = 0;
  for (t = 0; t < N_TYPES; t++) {
    rc->k[t] = K_INIT;
    rc->k_seen[t] = FALSE;
    rc->k_q[t] = 0;
    rc->qsrc_avg[t] = 0;
  }
  rc->deficit = 0;
  rc->dropping = FALSE;
  rc->passthrough = FALSE;
  rc->last_q = 0;
  rc->layers = FALSE;
  rc->tail = FALSE;
  rc->lowest_cur = rc->lowest_prev = 0;
  rc->lowest_age = 0;
  memset (&rc->stats, 0, sizeof (rc->stats));
}

void
gst_twoflow_rate_control_set_target (GstTwoflowRateControl * rc, guint64 target)
{
  rc->target = target;
  rc->generation++;
}

/* The target as configured or moved by events, within min/max-bitrate
 * (the source bound is applied per frame); 0 = unlimited. */
guint64
gst_twoflow_rate_control_get_target (GstTwoflowRateControl * rc)
{
  gdouble t = rc->target;

  if (t <= 0)
    return 0;
  if (rc->max_bitrate > 0)
    t = MIN (t, rc->max_bitrate);
  t = MAX (t, rc->min_bitrate);
  return (guint64) (t + 0.5);
}

void
gst_twoflow_rate_control_set_limits (GstTwoflowRateControl * rc,
    guint64 min_bitrate, guint64 max_bitrate)
{
  rc->min_bitrate = min_bitrate;
  rc->max_bitrate = max_bitrate;
}

void
gst_twoflow_rate_control_set_backoff (GstTwoflowRateControl * rc,
    gdouble backoff)
{
  rc->backoff = CLAMP (backoff, 0.0, 1.0);
}

void
gst_twoflow_rate_control_set_recovery (GstTwoflowRateControl * rc,
    guint64 bits_per_second)
{
  rc->recovery = bits_per_second;
}

void
gst_twoflow_rate_control_set_events (GstTwoflowRateControl * rc, guint events)
{
  rc->events = events;
}

void
gst_twoflow_rate_control_set_keep (GstTwoflowRateControl * rc,
    GstTwoflowRateControlKeep keep)
{
  rc->keep = keep;
}

/* Before a whole GOP has been seen, a window would be all I frame: assume
 * a GOP of GOP_PRIOR frames whose other frames look like those seen so far
 * (or a quarter of the I frame when there are none yet). */
static gdouble
input_rate_prior (GstTwoflowRateControl * rc, gdouble by_type[N_TYPES])
{
  guint64 i, n = MIN (rc->in.count, HISTORY), cnt[N_TYPES] = { 0 };
  gdouble bits[N_TYPES] = { 0 }, us = 0, g, mi, mp, mb;

  for (i = 0; i < n; i++) {
    const Entry *e = &rc->in.e[i];

    bits[e->type] += e->bytes * 8.0;
    cnt[e->type]++;
    us += e->duration_us;
  }
  us /= n;
  g = MAX (GOP_PRIOR, n);
  mi = bits[0] / cnt[0];
  mp = cnt[1] ? bits[1] / cnt[1] : (cnt[2] ? 2 * bits[2] / cnt[2] : mi / 3);
  mb = cnt[2] ? bits[2] / cnt[2] : mp / 2;
  /* one P for every two B, the usual pattern */
  by_type[0] = mi * 1e6 / (g * us);
  by_type[1] = mp * (g - 1) / 3 * 1e6 / (g * us);
  by_type[2] = mb * (g - 1) * 2 / 3 * 1e6 / (g * us);
  return by_type[0] + by_type[1] + by_type[2];
}

/* The input rate is still input_rate_prior()'s guess. */
static gboolean
rate_is_prior (GstTwoflowRateControl * rc)
{
  return rc->prev_i == 0 && rc->last_i == 1 && rc->in.count < GOP_PRIOR;
}

static gdouble
input_rate (GstTwoflowRateControl * rc, gdouble by_type[N_TYPES])
{
  gdouble tmp[N_TYPES];

  if (rate_is_prior (rc))
    return input_rate_prior (rc, by_type ? by_type : tmp);
  return ring_rate (&rc->in, window_frames (rc, &rc->in), by_type, NULL);
}

/* Highest rate allowed now: max-bitrate, and never above the source. */
static gdouble
ceiling (GstTwoflowRateControl * rc, gdouble in_rate)
{
  gdouble c = in_rate > 0 ? in_rate : G_MAXDOUBLE;

  if (rc->max_bitrate > 0)
    c = MIN (c, rc->max_bitrate);
  return c;
}

static gdouble
effective_target (GstTwoflowRateControl * rc, gdouble in_rate)
{
  gdouble c = ceiling (rc, in_rate);
  gdouble t = rc->target > 0 ? MIN (rc->target, c) : c;

  t = MAX (t, rc->min_bitrate);
  /* min-bitrate does not lift us above the source either */
  return in_rate > 0 ? MIN (t, in_rate) : t;
}

gboolean
gst_twoflow_rate_control_handle_congestion (GstTwoflowRateControl * rc,
    GstTwoflowCongestionType type, guint64 estimated_bitrate, guint64 srtt,
    guint64 now)
{
  gdouble in_rate = input_rate (rc, NULL);
  gdouble old = effective_target (rc, in_rate);
  gint bit = g_bit_nth_lsf (type, -1);

  if (bit < 0 || bit >= 5)
    return FALSE;
  if (!(rc->events & type)) {
    rc->stats.events_ignored++;
    return FALSE;
  }
  rc->stats.events[bit]++;

  switch (type) {
    case GST_TWOFLOW_CONGESTION_REXMT:
    case GST_TWOFLOW_CONGESTION_DUPACK:
    case GST_TWOFLOW_CONGESTION_LOSS:
      /* one reaction per round trip, like TCP's one per loss window */
      if (rc->have_backoff && srtt != G_MAXUINT64 && srtt > 0 &&
          now >= rc->last_backoff && now - rc->last_backoff < srtt) {
        rc->stats.events_ignored++;
        return FALSE;
      }
      rc->last_backoff = now;
      rc->have_backoff = TRUE;
      if (old >= G_MAXDOUBLE || (rc->target <= 0 && rc->max_bitrate <= 0
              && rate_is_prior (rc))) {
        /* nothing to scale yet but a guess (no target, no max-bitrate, the
         * input rate not measured): congestion on the path before then
         * still counts, and is applied once the input's rate is known */
        rc->pending_backoffs++;
        return FALSE;
      }
      rc->target = MAX (old * rc->backoff, rc->min_bitrate);
      rc->target = MAX (rc->target, 1);
      break;
    case GST_TWOFLOW_CONGESTION_RATE:
      if (estimated_bitrate == 0)
        return FALSE;
      rc->target = MAX ((gdouble) estimated_bitrate, rc->min_bitrate);
      if (rc->max_bitrate > 0)
        rc->target = MIN (rc->target, rc->max_bitrate);
      break;
    default:
      /* recovered: additive recovery is already running */
      return FALSE;
  }
  /* model error at the old rate says little about the new one */
  rc->deficit = CLAMP (rc->deficit, -rc->target * REPAY_S / 4,
      rc->target * REPAY_S / 4);
  rc->generation++;
  return effective_target (rc, in_rate) != old;
}

/* The backoffs that came before there was a rate to scale, applied as one
 * step (and one new generation) once the input rate is measured rather
 * than input_rate_prior()'s guess from the first frame or two (which can
 * be off by a factor of 2-3 and would set the target that far off for
 * good): target = in_rate * backoff^k, within min-bitrate. Until then the
 * frames pass as they came. */
static void
apply_pending_backoffs (GstTwoflowRateControl * rc)
{
  gdouble in_rate, old;

  if (rate_is_prior (rc))
    return;
  in_rate = input_rate (rc, NULL);
  old = effective_target (rc, in_rate);
  if (old >= G_MAXDOUBLE)
    return;
  rc->target = MAX (old * pow (rc->backoff, rc->pending_backoffs),
      rc->min_bitrate);
  rc->target = MAX (rc->target, 1);
  rc->pending_backoffs = 0;
  rc->deficit = CLAMP (rc->deficit, -rc->target * REPAY_S / 4,
      rc->target * REPAY_S / 4);
  rc->generation++;
}

void
gst_twoflow_rate_control_handle_input (GstTwoflowRateControl * rc,
    GstTwoflowPictureType ptype, gsize bytes, guint64 duration, guint64 now)
{
  guint type = type_index (ptype);
  gdouble by_type[N_TYPES], in_rate;
  g_return_if_fail (type < N_TYPES);

  ring_push (&rc->in, type, bytes, duration, 0);
  rc->stats.frames_in++;
  if (type == IDX_I) {
    rc->prev_i = rc->last_i;
    rc->last_i = rc->in.count;
  }

  if (rc->pending_backoffs > 0)
    apply_pending_backoffs (rc);

  /* lowest-bitrate held at its maximum over the last 1-2 s: over one
   * window (whole GOPs, ~0.5 s) the I frames' rate swings with their
   * sizes (0.31-0.61 Mbit/s in the showdown's MPEG-2 clip, its I frames
   * 15 and 30 kB in turn), and a target set at the low one met the next
   * big I frame with nothing left for the re-encoded frames: B frames
   * dropped (the session controller's coding floor is 1.1 x this) */
  rc->lowest_age += duration ? duration : DEFAULT_DURATION;
  if (rc->lowest_age >= LOWEST_HOLD_NS) {
    rc->lowest_prev = rc->lowest_cur;
    rc->lowest_cur = 0;
    rc->lowest_age = 0;
  }
  in_rate = input_rate (rc, by_type);
  if (!rate_is_prior (rc))
    rc->lowest_cur = MAX (rc->lowest_cur, lowest_rate (rc, in_rate, by_type));

  if (rc->have_now && now > rc->last_now && rc->target > 0 &&
      rc->recovery > 0) {
    gdouble c = ceiling (rc, in_rate);

    if (rc->target < c) {
      rc->target = MIN (rc->target + rc->recovery * (now - rc->last_now) / 1e9,
          c);
      /* not a step: no new generation, the change is gradual */
    }
  }
  if (!rc->have_now || now > rc->last_now)
    rc->last_now = now;
  rc->have_now = TRUE;
}

/* The source's quantiser_scale (1..112) in the encoder's qscale units
 * (quantiser_scale / 2 with a linear scale, 1..31); a running mean per
 * type stands in when the decoder could not tell. */
static gdouble
source_q (GstTwoflowRateControl * rc, guint type, gdouble qsrc, gboolean learn)
{
  if (qsrc > 0) {
    qsrc = MAX (qsrc / 2, 1);
    if (learn)
      rc->qsrc_avg[type] = rc->qsrc_avg[type] > 0 ?
          0.8 * rc->qsrc_avg[type] + 0.2 * qsrc : qsrc;
    return qsrc;
  }
  return rc->qsrc_avg[type] > 0 ? rc->qsrc_avg[type] : QSRC_DEFAULT;
}

/* bit/s the re-encoded frames would take all coded at Q_MAX: the codec's
 * floor above floor_rate. Judged on all re-encoded types, not on B frames
 * alone: at coarse quantizers MPEG-2 P frames shrink to a few % of their
 * source while B frames stay at ~15 % (headers, vectors), and B frames
 * can use the share the P frames leave. */
static gdouble
codec_floor_rate (GstTwoflowRateControl * rc, const gdouble by_type[N_TYPES])
{
  gdouble r = 0;
  guint x;

  for (x = 0; x < N_TYPES; x++)
    if (!is_kept (rc, x))
      r += by_type[x] * rc->k[x] * source_q (rc, x, 0, FALSE) /
          GST_TWOFLOW_RATE_CONTROL_Q_MAX;
  return r;
}

/* The target below which B frames go (handle_decoded()'s condition, the
 * model error left out); 0: not known, or drop mode */
static gdouble
lowest_rate (GstTwoflowRateControl * rc, gdouble in_rate,
    const gdouble by_type[N_TYPES])
{
  gdouble floor_rate =
      rc->keep == GST_TWOFLOW_RATE_CONTROL_KEEP_I ? by_type[IDX_I] : rc->keep ==
      GST_TWOFLOW_RATE_CONTROL_KEEP_IP ? by_type[IDX_I] + by_type[IDX_P] : 0;

  if (rc->layers || in_rate <= 0 || in_rate - floor_rate <= 0 ||
      by_type[IDX_B] <= 0)
    return 0;
  return floor_rate + codec_floor_rate (rc, by_type) / DROP_ON;
}

GstTwoflowRateControlDecision
gst_twoflow_rate_control_handle_decoded (GstTwoflowRateControl * rc,
    GstTwoflowPictureType ptype, gsize bytes, gdouble qsrc)
{
  guint type = type_index (ptype);
  GstTwoflowRateControlDecision d =
      { GST_TWOFLOW_RATE_CONTROL_PASS, GST_TWOFLOW_RATE_CONTROL_Q_KEEP,
        bytes * 8.0, rc->generation };
  gdouble by_type[N_TYPES];
  gdouble in_rate, floor_rate, t, budget, base, reenc, ratio, need, q;
  gint qmin;

  g_return_val_if_fail (type < N_TYPES, d);

  qsrc = source_q (rc, type, qsrc, TRUE);

  in_rate = input_rate (rc, by_type);
  floor_rate = 0;
  if (rc->keep == GST_TWOFLOW_RATE_CONTROL_KEEP_I)
    floor_rate = by_type[IDX_I];
  else if (rc->keep == GST_TWOFLOW_RATE_CONTROL_KEEP_IP)
    floor_rate = by_type[IDX_I] + by_type[IDX_P];
  t = effective_target (rc, in_rate);
  reenc = in_rate - floor_rate;

  rc->passthrough = in_rate <= 0 || t >= in_rate;
  if (rc->passthrough || reenc <= 0) {
    rc->dropping = FALSE;
    goto pass;
  }

  /* what this frame is owed (its share of the target), and what it gets
   * once the model error so far is repaid */
  base = (t - floor_rate) / reenc;
  budget = t - floor_rate - rc->deficit / REPAY_S;
  ratio = budget / reenc;

  /* Instant relief: when even the coarsest quantizer would miss the target
   * by a margin, B frames (never references) go first. need is the
   * quantizer that would meet the budget, in the 1/q model. */
  need = budget > 0 ? GST_TWOFLOW_RATE_CONTROL_Q_MAX *
      codec_floor_rate (rc, by_type) / budget : G_MAXDOUBLE;
  if (!rc->dropping && need > GST_TWOFLOW_RATE_CONTROL_Q_MAX * DROP_ON) {
    /* degrade quality before frame rate: until a B frame has been coded
     * at the coarsest quantizer the need is a guess; code them there
     * (no guess when the target leaves nothing for them), and go on doing
     * so while the overshoot stays within DROP_SLACK_S of the target: a
     * dip of the target for a few hundred ms costs some bits, not frames.
     * "Nothing" is the target's own share (base), not the budget less the
     * deficit's repayment: one P frame over its share by 110-190 kbit
     * took the budget below 0 with the target 0.1-0.3 Mbit/s above the I
     * frames and dropped 10-17 B frames in the showdown's MPEG-2 step,
     * its overshoot within the slack */
    if (base <= 0 ||
        (rc->k_q[IDX_B] >= GST_TWOFLOW_RATE_CONTROL_Q_MAX - Q_PROBE &&
            rc->deficit > t * DROP_SLACK_S))
      rc->dropping = TRUE;
    else if (type == IDX_B && !is_kept (rc, type)) {
      d.action = GST_TWOFLOW_RATE_CONTROL_ENCODE;
      d.q = GST_TWOFLOW_RATE_CONTROL_Q_MAX;
      d.budget_bits = bytes * 8.0 * CLAMP (base, 0.0, 1.0);
      return d;
    }
  }
  else if (rc->dropping && need < GST_TWOFLOW_RATE_CONTROL_Q_MAX * DROP_OFF)
    rc->dropping = FALSE;

  if (is_kept (rc, type))
    goto pass;

  if (rc->dropping) {
    gdouble rest = reenc - by_type[IDX_B];

    if (type == IDX_B) {
      d.action = GST_TWOFLOW_RATE_CONTROL_DROP;
      d.q = GST_TWOFLOW_RATE_CONTROL_Q_MAX;
      d.budget_bits = 0;
      return d;
    }
    ratio = rest > 0 ? budget / rest : 0;
    base = rest > 0 ? (t - floor_rate) / rest : 0;
  }

  ratio = CLAMP (ratio, 1e-3, 1.0);
  q = rc->k[type] * qsrc / ratio;
  /* much finer than the source only adds bits: at the finest useful
   * quantizer the frame comes out under its share, so when behind
   * budget send its source bits instead */
  qmin = MAX (GST_TWOFLOW_RATE_CONTROL_Q_MIN + 1, (gint) (qsrc * 0.75 + 0.5));
  if (q < qmin - 0.5 && rc->deficit < 0) {
    d.budget_bits = bytes * 8.0 * CLAMP (base, 0.0, 1.0);
    goto pass;
  }
  d.action = GST_TWOFLOW_RATE_CONTROL_ENCODE;
  d.q = CLAMP ((gint) (q + 0.5), qmin, GST_TWOFLOW_RATE_CONTROL_Q_MAX);
  d.budget_bits = bytes * 8.0 * CLAMP (base, 0.0, 1.0);
  return d;

pass:
  /* B frames are never references: their discarded re-encoding can be cheap */
  d.q =
      type ==
      IDX_B ? GST_TWOFLOW_RATE_CONTROL_Q_MAX : GST_TWOFLOW_RATE_CONTROL_Q_KEEP;
  return d;
}

GstTwoflowRateControlDecision
gst_twoflow_rate_control_get_pass_decision (GstTwoflowRateControl * rc,
    GstTwoflowPictureType ptype, gsize bytes)
{
  guint type = type_index (ptype);
  GstTwoflowRateControlDecision d =
      { GST_TWOFLOW_RATE_CONTROL_PASS, GST_TWOFLOW_RATE_CONTROL_Q_KEEP,
        bytes * 8.0, rc->generation };

  /* B frames are never references: their discarded re-encoding can be cheap */
  if (type == IDX_B)
    d.q = GST_TWOFLOW_RATE_CONTROL_Q_MAX;
  return d;
}

GstTwoflowRateControlEarly
gst_twoflow_rate_control_handle_parsed (GstTwoflowRateControl * rc,
    GstTwoflowPictureType ptype, gsize bytes, GstTwoflowRateControlDecision * d)
{
  guint type = type_index (ptype);
  gdouble by_type[N_TYPES];
  gdouble in_rate, floor_rate = 0;
  gboolean pass;

  g_return_val_if_fail (type < N_TYPES, GST_TWOFLOW_RATE_CONTROL_EARLY_NONE);

  /* the same test gst_twoflow_rate_control_handle_decoded() starts with */
  in_rate = input_rate (rc, by_type);
  if (rc->keep == GST_TWOFLOW_RATE_CONTROL_KEEP_I)
    floor_rate = by_type[IDX_I];
  else if (rc->keep == GST_TWOFLOW_RATE_CONTROL_KEEP_IP)
    floor_rate = by_type[IDX_I] + by_type[IDX_P];
  pass = in_rate <= 0 || effective_target (rc, in_rate) >= in_rate;
  /* Early in the first GOP the input rate is a guess from a frame or two
   * (the decoder, a few frames later, knows more): with a bound to compare
   * it with, leave that test to gst_twoflow_rate_control_handle_decoded(). */
  if (rate_is_prior (rc) && (rc->target > 0 || rc->max_bitrate > 0))
    pass = FALSE;
  else if (pass || in_rate - floor_rate <= 0) {
    rc->passthrough = pass;
    rc->dropping = FALSE;
    *d = gst_twoflow_rate_control_get_pass_decision (rc, ptype, bytes);
    return GST_TWOFLOW_RATE_CONTROL_EARLY_PASSTHROUGH;
  }
  if (is_kept (rc, type)) {
    *d = gst_twoflow_rate_control_get_pass_decision (rc, ptype, bytes);
    return GST_TWOFLOW_RATE_CONTROL_EARLY_KEPT;
  }
  return GST_TWOFLOW_RATE_CONTROL_EARLY_NONE;
}

void
gst_twoflow_rate_control_handle_source_quantizer (GstTwoflowRateControl * rc,
    GstTwoflowPictureType ptype, gdouble qsrc)
{
  guint type = type_index (ptype);
  g_return_if_fail (type < N_TYPES);
  source_q (rc, type, qsrc, TRUE);
}

void
gst_twoflow_rate_control_handle_output (GstTwoflowRateControl * rc,
    GstTwoflowPictureType ptype, const GstTwoflowRateControlDecision * d,
    gsize in_bytes, gdouble qsrc, gsize out_bytes, guint64 duration)
{
  /* bytes without a picture (passed as they came) count in the output
   * rate; they are filed with the I frames */
  guint type = ptype == GST_TWOFLOW_PICTURE_NONE ? IDX_I : type_index (ptype);
  gdouble lim;

  g_return_if_fail (type < N_TYPES);
  g_return_if_fail (ptype != GST_TWOFLOW_PICTURE_NONE ||
      d->action == GST_TWOFLOW_RATE_CONTROL_PASS);

  switch (d->action) {
    case GST_TWOFLOW_RATE_CONTROL_PASS:
      rc->stats.frames_passed++;
      ring_push (&rc->out, type, in_bytes, duration, 0);
      /* a frame passed in place of a re-encoding is over its share */
      rc->deficit += in_bytes * 8.0 - d->budget_bits;
      if (rc->layers) {
        lim = effective_target (rc, input_rate (rc, NULL)) * REPAY_S;
        rc->deficit = CLAMP (rc->deficit, -lim, lim);
      }
      break;
    case GST_TWOFLOW_RATE_CONTROL_DROP:
      rc->stats.frames_dropped++;
      rc->stats.frames_dropped_by_type[type]++;
      ring_push (&rc->out, type, 0, duration, 0);
      /* a dropped frame's share of the target is not used (0 for MPEG-2
       * B frames, which have no share) */
      rc->deficit -= d->budget_bits;
      if (rc->layers) {
        lim = effective_target (rc, input_rate (rc, NULL)) * REPAY_S;
        rc->deficit = CLAMP (rc->deficit, -lim, lim);
      }
      break;
    case GST_TWOFLOW_RATE_CONTROL_ENCODE:
      rc->stats.frames_encoded++;
      ring_push (&rc->out, type, out_bytes, duration, d->q);
      rc->last_q = d->q;
      qsrc = source_q (rc, type, qsrc, FALSE);
      /* the first frame of a type was coded from the prior, not the
       * model: its error is not the model's to repay */
      if (rc->k_seen[type])
        rc->deficit += out_bytes * 8.0 - d->budget_bits;
      if (in_bytes > 0 && out_bytes > 0) {
        gdouble k = (gdouble) out_bytes * d->q / (in_bytes * qsrc);
        gint t;

        k = CLAMP (k, 0.02, 50.0);
        if (!rc->k_seen[type]) {
          /* first of its type: its own estimate, and the best guess for
           * the types not seen yet */
          for (t = 0; t < N_TYPES; t++)
            if (!rc->k_seen[t])
              rc->k[t] = k;
          rc->k_seen[type] = TRUE;
        } else if (d->q >= GST_TWOFLOW_RATE_CONTROL_Q_MAX - Q_PROBE &&
            rc->k_q[type] < GST_TWOFLOW_RATE_CONTROL_Q_MAX - Q_PROBE) {
          /* the first measurement at the coarse end replaces those made
           * at fine quantizers: k is not the same there */
          rc->k[type] = k;
        } else {
          rc->k[type] = 0.5 * rc->k[type] + 0.5 * k;
        }
        rc->k_q[type] = d->q;
      }
      lim = effective_target (rc, input_rate (rc, NULL)) * REPAY_S;
      rc->deficit = CLAMP (rc->deficit, -lim, lim);
      break;
  }
}

/* bit/s per layer over the input window */
static gdouble
layer_rates (GstTwoflowRateControl * rc, gdouble by_layer[3])
{
  guint i, frames = window_frames (rc, &rc->in);
  gdouble us = 0;

  by_layer[0] = by_layer[1] = by_layer[2] = 0;
  for (i = 0; i < frames; i++) {
    const Entry *e = &rc->in.e[(rc->in.count - 1 - i) % HISTORY];

    by_layer[MIN (e->layer, 2)] += e->bytes * 8.0;
    us += e->duration_us;
  }
  if (us <= 0)
    return 0;
  for (i = 0; i < 3; i++)
    by_layer[i] *= 1e6 / us;
  return by_layer[0] + by_layer[1] + by_layer[2];
}

void
gst_twoflow_rate_control_handle_input_layer (GstTwoflowRateControl * rc,
    GstTwoflowPictureType ptype, GstTwoflowRateControlLayer layer, gsize bytes,
    guint64 duration, guint64 now)
{
  gst_twoflow_rate_control_handle_input (rc, ptype, bytes, duration, now);
  if (rc->in.count == 0 || type_index (ptype) >= N_TYPES)
    return;
  rc->layers = TRUE;
  rc->in.e[(rc->in.count - 1) % HISTORY].layer = MIN (layer, 2);
  /* an I frame ends the GOP's tail */
  if (ptype == GST_TWOFLOW_PICTURE_I)
    rc->tail = FALSE;
}

GstTwoflowRateControlDecision
gst_twoflow_rate_control_handle_drop_candidate (GstTwoflowRateControl * rc,
    GstTwoflowPictureType ptype, GstTwoflowRateControlLayer layer, gsize bytes)
{
  guint type = type_index (ptype);
  GstTwoflowRateControlDecision d =
      { GST_TWOFLOW_RATE_CONTROL_PASS, 0, bytes * 8.0, rc->generation };
  gdouble by_layer[3];
  gdouble in_rate, t, need, share, bits = bytes * 8.0;
  guint gop, pos;

  g_return_val_if_fail (type < N_TYPES, d);
  in_rate = input_rate (rc, NULL);
  layer_rates (rc, by_layer);
  t = effective_target (rc, in_rate);
  rc->passthrough = in_rate <= 0 || t >= in_rate;
  if (rc->passthrough) {
    rc->dropping = FALSE;
    rc->tail = FALSE;
    rc->deficit = 0;
    return d;
  }
  /* every frame's fair share of the target */
  share = bits * t / in_rate;
  d.budget_bits = share;
  if (layer == GST_TWOFLOW_RATE_CONTROL_LAYER_KEPT)
    return d;
  /* rate to remove, with the error so far repaid over REPAY_S */
  need = in_rate - t + rc->deficit / REPAY_S;
  if (layer == GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL && !rc->tail &&
      in_rate - t > by_layer[GST_TWOFLOW_RATE_CONTROL_LAYER_DISPOSABLE] &&
      by_layer[GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL] > 0) {
    /* disposable pictures alone are not enough: drop the tail of the GOP
     * holding the missing share of the tail layer's rate (judged on the
     * rates alone: within a GOP the deficit swings with its I frame) */
    gdouble f = (in_rate - t -
        by_layer[GST_TWOFLOW_RATE_CONTROL_LAYER_DISPOSABLE]) /
        by_layer[GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL];

    gop = rc->prev_i ? rc->last_i - rc->prev_i : GOP_PRIOR;
    pos = rc->in.count - rc->last_i;
    if (gop > 1 && (gdouble) pos / gop >= 1.0 - CLAMP (f, 0.0, 1.0))
      rc->tail = TRUE;
  }
  if (rc->tail) {
    rc->dropping = TRUE;
    d.action = GST_TWOFLOW_RATE_CONTROL_DROP;
    return d;
  }
  if (layer == GST_TWOFLOW_RATE_CONTROL_LAYER_DISPOSABLE) {
    /* whichever of passing and dropping leaves the output nearer its
     * budget: pass gives deficit + bits - share, drop deficit - share */
    rc->dropping = need > 0;
    if (need > 0 && rc->deficit - share + bits / 2 > 0)
      d.action = GST_TWOFLOW_RATE_CONTROL_DROP;
  }
  return d;
}

void
gst_twoflow_rate_control_get_stats (GstTwoflowRateControl * rc,
    GstTwoflowRateControlStats * s)
{
  gdouble by_type[N_TYPES];
  gdouble in_rate = input_rate (rc, by_type);
  gdouble t = effective_target (rc, in_rate);

  *s = rc->stats;
  s->input_bitrate = in_rate;
  s->output_bitrate = ring_rate (&rc->out, window_frames (rc, &rc->out), NULL,
      &s->mean_quantizer);
  s->target_bitrate = t >= G_MAXDOUBLE ? 0 : t;
  s->floor_bitrate =
      rc->keep == GST_TWOFLOW_RATE_CONTROL_KEEP_I ? by_type[IDX_I] : rc->keep ==
      GST_TWOFLOW_RATE_CONTROL_KEEP_IP ? by_type[IDX_I] + by_type[IDX_P] : 0;
  if (rc->layers) {
    gdouble by_layer[3];

    layer_rates (rc, by_layer);
    s->floor_bitrate = by_layer[GST_TWOFLOW_RATE_CONTROL_LAYER_KEPT];
    s->disposable_bitrate = by_layer[GST_TWOFLOW_RATE_CONTROL_LAYER_DISPOSABLE];
    s->dropping_tail = rc->tail;
  }
  /* the target below which B frames go, held over the last 1-2 s of input
   * (gst_twoflow_rate_control_handle_input()) */
  s->lowest_bitrate = MAX (lowest_rate (rc, in_rate, by_type),
      MAX (rc->lowest_cur, rc->lowest_prev));
  s->quantizer = rc->last_q;
  s->passthrough = rc->passthrough;
  s->dropping_b = rc->dropping;
  s->gop_length = rc->prev_i ? rc->last_i - rc->prev_i : 0;
  s->pending_backoffs = rc->pending_backoffs;
}

guint
gst_twoflow_rate_control_get_generation (GstTwoflowRateControl * rc)
{
  return rc->generation;
}
