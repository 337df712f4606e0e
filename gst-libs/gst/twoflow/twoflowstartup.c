/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The start-up ramp, sans-IO (see twoflowstartup.h).
 *
 * The model is the cTCP sender's (gst-libs/gst/ctcp, `lead` and
 * `startup-rate`): segment k of the essential flow (its records' bytes,
 * in timestamp order) starts when segment k−1 is written, and is due when
 * it starts playing, at L + kT. A segment that cannot be sent at its
 * nominal rate S/(T(1−p̂)) within the time left (its duration T) is a ramp
 * segment: it goes at max(R, factor × S/(T(1−p̂))). Each record's last
 * byte leaves at the segment's start plus the bytes up to it over the
 * segment's rate, and must leave a margin before it plays, at L + its time
 * from the stream's start. Once a segment goes at its nominal rate the
 * flow is a segment ahead and stays so.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <stdlib.h>
#include "twoflowstartup.h"

/* the highest rate tried when there is no ceiling, bit/s */
#define NO_CEILING 1e12
#define LEAD_STEPS 64
#define RATE_STEPS 48

/* Runs the sender's model at ramp rate @rate (bit/s) and lead @lead;
 * fills @plan and returns its least slack (ns; negative: a record late). */
static gdouble
simulate (const GstTwoflowStartupRecord * rec, guint n,
    const GstTwoflowStartupConfig * cfg, gdouble rate, gdouble lead,
    GstTwoflowStartupPlan * plan)
{
  gdouble T = cfg->segment_duration, t = 0, min_slack = G_MAXDOUBLE;
  gdouble keep = 1.0 - CLAMP (cfg->p_hat, 0.0, 0.9);
  guint i = 0, j;
  gboolean ahead = FALSE;

  plan->ramp_segments = 0;
  plan->ahead_at = GST_CLOCK_TIME_NONE;
  while (i < n) {
    guint64 k = (rec[i].ts - MIN (rec[i].ts, cfg->start)) / cfg->segment_duration;
    gdouble bytes = 0, deadline = lead + k * T, r, nominal, cum = 0;

    for (j = i; j < n && (rec[j].ts - MIN (rec[j].ts, cfg->start))
        / cfg->segment_duration == k; j++)
      bytes += rec[j].bytes;
    nominal = bytes / (T / GST_SECOND * keep);  /* bytes/s */
    /* the sender's test: less than the segment's duration left */
    if (!ahead && deadline - t < T) {
      r = MAX (rate / 8, cfg->factor * nominal);
      plan->ramp_segments++;
    } else {
      r = nominal;
      if (!ahead)
        plan->ahead_at = (GstClockTime) t;
      ahead = TRUE;
      /* a segment ahead finishes p̂T before it plays, and so does every
       * later one: with that margin nothing after it can be late */
      if (cfg->p_hat * T >= cfg->margin)
        break;
    }
    r = MAX (r, 1.0);           /* a segment of empty records */
    for (; i < j; i++) {
      gdouble play = lead + (rec[i].ts - MIN (rec[i].ts, cfg->start));
      gdouble slack;

      cum += rec[i].bytes;
      slack = play - cfg->margin - (t + cum / r * GST_SECOND);
      min_slack = MIN (min_slack, slack);
    }
    t += bytes / r * GST_SECOND;
  }
  if (min_slack == G_MAXDOUBLE)
    min_slack = 0;
  plan->min_slack = (GstClockTimeDiff) floor (min_slack);
  return min_slack;
}

/* The shortest lead (at least the target) at ramp rate @rate. */
static gdouble
lead_for (const GstTwoflowStartupRecord * rec, guint n,
    const GstTwoflowStartupConfig * cfg, gdouble rate,
    GstTwoflowStartupPlan * plan)
{
  gdouble lead = cfg->target_lead, slack;
  guint step;

  for (step = 0; step < LEAD_STEPS; step++) {
    slack = simulate (rec, n, cfg, rate, lead, plan);
    if (slack >= 0)
      break;
    /* the worst record's shortfall (and 1 µs of rounding) */
    lead += -slack + GST_USECOND;
  }
  plan->lead = (GstClockTime) ceil (lead);
  return lead;
}

static gint
record_cmp (gconstpointer a, gconstpointer b)
{
  const GstTwoflowStartupRecord *x = a, *y = b;

  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static gboolean
config_ok (const GstTwoflowStartupRecord * records,
    const GstTwoflowStartupConfig * config, GstTwoflowStartupPlan * plan)
{
  g_return_val_if_fail (config != NULL && plan != NULL, FALSE);
  g_return_val_if_fail (config->segment_duration > 0, FALSE);
  g_return_val_if_fail (config->p_hat >= 0 && config->p_hat < 1, FALSE);
  return TRUE;
}

static GstTwoflowStartupRecord *
sorted (const GstTwoflowStartupRecord * records, guint n)
{
  GstTwoflowStartupRecord *r = g_memdup2 (records, (gsize) n * sizeof (*r));

  if (n > 1)
    qsort (r, n, sizeof (*r), record_cmp);
  return r;
}

/**
 * gst_twoflow_startup_plan: (skip)
 * @records: the essential flow's records (audio included), any order
 * @n_records: how many
 * @config: the segment duration, the ramp's bounds and the target lead
 * @plan: (out): R and L
 *
 * Picks the ramp rate R: the least rate, at least `factor` × segment 0's
 * nominal rate and at most `max_rate`, whose lead is no longer than the
 * target (when even `max_rate` needs more, R is `max_rate`), and the
 * shortest lead L for it, at least the target.
 *
 * Returns: FALSE on a bad configuration.
 */
gboolean
gst_twoflow_startup_plan (const GstTwoflowStartupRecord * records,
    guint n_records, const GstTwoflowStartupConfig * config,
    GstTwoflowStartupPlan * plan)
{
  GstTwoflowStartupRecord *rec;
  gdouble lo, hi, T, first = 0;
  guint i, step;

  if (!config_ok (records, config, plan))
    return FALSE;
  rec = sorted (records, n_records);
  T = config->segment_duration;
  /* segment 0's nominal rate, bit/s: the ramp's floor */
  for (i = 0; i < n_records && (rec[i].ts - MIN (rec[i].ts, config->start))
      < config->segment_duration; i++)
    first += rec[i].bytes;
  lo = MAX (config->factor, 1.0) * first * 8 /
      (T / GST_SECOND * (1.0 - config->p_hat));
  hi = config->max_rate > 0 ? MAX ((gdouble) config->max_rate, lo) :
      MAX (NO_CEILING, lo);
  if (lead_for (rec, n_records, config, lo, plan) <= config->target_lead) {
    /* the floor is enough */
    plan->rate = (guint64) ceil (lo);
    g_free (rec);
    return TRUE;
  }
  if (lead_for (rec, n_records, config, hi, plan) > config->target_lead) {
    /* even the ceiling needs a longer lead: the ceiling, and that lead */
    plan->rate = (guint64) ceil (hi);
    g_free (rec);
    return TRUE;
  }
  /* the least rate that meets the target: bisection (on a log scale) */
  for (step = 0; step < RATE_STEPS && hi > lo * 1.001; step++) {
    gdouble mid = sqrt (lo * hi);

    if (lead_for (rec, n_records, config, mid, plan) <= config->target_lead)
      hi = mid;
    else
      lo = mid;
  }
  plan->rate = (guint64) ceil (hi);
  lead_for (rec, n_records, config, plan->rate, plan);
  g_free (rec);
  return TRUE;
}

/**
 * gst_twoflow_startup_check: (skip)
 * @rate: the ramp rate R, bit/s
 * @lead: L, ns
 * @plan: (out): what the model found at that rate and lead
 *
 * Returns: TRUE when every record leaves at least the margin before it
 * plays (@plan's min_slack >= 0).
 */
gboolean
gst_twoflow_startup_check (const GstTwoflowStartupRecord * records,
    guint n_records, const GstTwoflowStartupConfig * config, guint64 rate,
    GstClockTime lead, GstTwoflowStartupPlan * plan)
{
  GstTwoflowStartupRecord *rec;
  gdouble slack;

  if (!config_ok (records, config, plan))
    return FALSE;
  rec = sorted (records, n_records);
  slack = simulate (rec, n_records, config, rate, lead, plan);
  plan->rate = rate;
  plan->lead = lead;
  g_free (rec);
  return slack >= 0;
}
