/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Admission control of the proxy, sans-IO (see twoflow-admission.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include "twoflow-admission.h"

/* Health thresholds of an admitted session (measured mode). */
#define MAX_LOSS        0.05
#define MIN_RATE_RATIO  0.9
/* essential loss is judged over at least this many TCP segments */
#define MIN_PACKETS     20

/* A session's rates as a function of the time since its start. */
typedef struct {
  guint64 peak;
  gboolean smoothed;            /* the arrays below are there */
  guint64 *ess;
  guint n_ess;
  GstClockTime T;
  guint skip;
  guint64 *enh;
  guint n_enh;
  GstClockTime W, enh_start;
} RateFn;

/* One measured interval (between two samples). */
typedef struct {
  guint64 ess_recv_bl, ess_due; /* while the essential sender had data */
  guint64 enh_recv, enh_sent;   /* enh_sent 0: unknown */
  guint64 ess_pkts, ess_rexmit;
  guint64 enh_total, enh_lost;
  GstClockTime dt, bl_dt;       /* its length; of it, backlogged */
} Interval;

typedef struct {
  guint id;
  gchar *video;
  RateFn r;
  GstClockTime start;
  /* measurement */
  guint samples;
  GstClockTime last_time;
  GstTwoflowAdmissionSample last;
  Interval win[GST_TWOFLOW_ADMISSION_LOSS_WINDOW];
  GstTwoflowAdmissionHealth h;
} Session;

struct _GstTwoflowAdmission {
  GstTwoflowAdmissionMode mode;
  GstTwoflowAdmissionBasis basis;
  guint64 capacity;
  GQueue sessions;              /* Session, in admission order */
  guint64 admitted, rejected;
};

static void
session_free (Session * s)
{
  g_free (s->video);
  g_free (s->r.ess);
  g_free (s->r.enh);
  g_free (s);
}

/**
 * gst_twoflow_admission_new: (skip)
 *
 * The admission core; C only (an opaque struct, not a registered type).
 * Configured mode reserves peak rates until set_basis() says otherwise.
 */
GstTwoflowAdmission *
gst_twoflow_admission_new (GstTwoflowAdmissionMode mode, guint64 capacity)
{
  GstTwoflowAdmission *a = g_new0 (GstTwoflowAdmission, 1);

  a->mode = mode;
  a->basis = GST_TWOFLOW_ADMISSION_BASIS_PEAK;
  a->capacity = capacity;
  g_queue_init (&a->sessions);
  return a;
}

void
gst_twoflow_admission_free (GstTwoflowAdmission * a)
{
  if (!a)
    return;
  g_queue_clear_full (&a->sessions, (GDestroyNotify) session_free);
  g_free (a);
}

/**
 * gst_twoflow_admission_set_basis:
 *
 * What configured mode reserves per session: its peak rate (default), or
 * its smoothed rates over time (the rates a session was added with by
 * add_rates(); one added by add() or without them counts its peak).
 */
void
gst_twoflow_admission_set_basis (GstTwoflowAdmission * a,
    GstTwoflowAdmissionBasis basis)
{
  a->basis = basis;
}

GstTwoflowAdmissionBasis
gst_twoflow_admission_get_basis (GstTwoflowAdmission * a)
{
  return a->basis;
}

static Session *
find (GstTwoflowAdmission * a, guint id)
{
  GList *l;

  for (l = a->sessions.head; l; l = l->next)
    if (((Session *) l->data)->id == id)
      return l->data;
  return NULL;
}

/* A view of @in as a RateFn (no copies). */
static void
rate_fn_view (RateFn * f, const GstTwoflowAdmissionRates * in)
{
  memset (f, 0, sizeof (*f));
  f->peak = in->peak_rate;
  f->smoothed = in->n_essential + in->n_enhanced > 0
      && (in->n_essential == 0 || in->segment_duration > 0)
      && (in->n_enhanced == 0 || in->window > 0);
  f->ess = (guint64 *) in->essential_rates;
  f->n_ess = in->essential_rates ? in->n_essential : 0;
  f->T = in->segment_duration;
  f->skip = in->essential_skip;
  f->enh = (guint64 *) in->enhanced_rates;
  f->n_enh = in->enhanced_rates ? in->n_enhanced : 0;
  f->W = in->window;
  f->enh_start = in->enhanced_start;
}

/* bit/s of a session @t after its start, on the admission's basis. Past
 * the end of its schedule an admitted session keeps its last rates until
 * it is removed: a session runs late (start-up, stalls), never early. */
static guint64
rate_at (GstTwoflowAdmission * a, const RateFn * f, GstClockTime t)
{
  guint64 v = 0, k;

  if (a->basis == GST_TWOFLOW_ADMISSION_BASIS_PEAK || !f->smoothed)
    return f->peak;
  if (f->n_ess > 0) {
    k = t / f->T + f->skip;
    v += f->ess[MIN (k, f->n_ess - 1)];
  }
  if (f->n_enh > 0 && t >= f->enh_start) {
    k = (t - f->enh_start) / f->W;
    v += f->enh[MIN (k, f->n_enh - 1)];
  }
  return v;
}

/* How long after its start a candidate's rates are judged: until both of
 * its flows run (its first segment and its first enhanced window). */
static GstClockTime
horizon (GstTwoflowAdmission * a, const RateFn * f)
{
  if (a->basis == GST_TWOFLOW_ADMISSION_BASIS_PEAK || !f->smoothed)
    return 1;
  return MAX (f->n_ess ? f->T : 1, f->n_enh ? f->enh_start + f->W : 1);
}

/* The times in [from, to) where @f (started at @start) changes rate. */
static void
add_breakpoints (GArray * at, const RateFn * f, GstClockTime start,
    GstClockTime from, GstClockTime to)
{
  GstClockTime t;

  if (!f->smoothed)
    return;
  if (f->n_ess > 0)
    for (t = start + (from > start ? (from - start) / f->T * f->T : 0);
        t < to; t += f->T)
      if (t >= from)
        g_array_append_val (at, t);
  if (f->n_enh > 0)
    for (t = start + f->enh_start + (from > start + f->enh_start ?
            (from - start - f->enh_start) / f->W * f->W : 0); t < to;
        t += f->W)
      if (t >= from)
        g_array_append_val (at, t);
}

/**
 * gst_twoflow_admission_add:
 * @peak_rate: bit/s the session reserves (configured mode)
 *
 * Records an admitted session known by its peak rate only; it stays
 * until removed.
 */
void
gst_twoflow_admission_add (GstTwoflowAdmission * a, guint id,
    const gchar * video, guint64 peak_rate)
{
  GstTwoflowAdmissionRates r = { 0, };

  r.peak_rate = peak_rate;
  gst_twoflow_admission_add_rates (a, id, video, &r, 0);
}

/**
 * gst_twoflow_admission_add_rates:
 * @rates: its peak and smoothed rates (copied)
 * @now: when it starts (the time base of handle_candidate_rates())
 *
 * Records an admitted session; it stays until removed.
 */
void
gst_twoflow_admission_add_rates (GstTwoflowAdmission * a, guint id,
    const gchar * video, const GstTwoflowAdmissionRates * rates,
    GstClockTime now)
{
  Session *s;

  g_return_if_fail (find (a, id) == NULL);
  s = g_new0 (Session, 1);
  s->id = id;
  s->video = g_strdup (video);
  rate_fn_view (&s->r, rates);
  s->r.ess = s->r.n_ess ? g_memdup2 (rates->essential_rates,
      s->r.n_ess * sizeof (guint64)) : NULL;
  s->r.enh = s->r.n_enh ? g_memdup2 (rates->enhanced_rates,
      s->r.n_enh * sizeof (guint64)) : NULL;
  s->start = now;
  s->h.healthy = TRUE;
  s->h.rate_ratio = s->h.essential_ratio = s->h.enhanced_ratio = 1.0;
  g_queue_push_tail (&a->sessions, s);
}

/**
 * gst_twoflow_admission_set_start:
 * @now: when the session's flows start (e.g. when PLAY is answered)
 *
 * Moves an admitted session's start (its smoothed rates' time base).
 */
void
gst_twoflow_admission_set_start (GstTwoflowAdmission * a, guint id,
    GstClockTime now)
{
  Session *s = find (a, id);

  if (s)
    s->start = now;
}

gboolean
gst_twoflow_admission_remove (GstTwoflowAdmission * a, guint id)
{
  Session *s = find (a, id);

  if (!s)
    return FALSE;
  g_queue_remove (&a->sessions, s);
  session_free (s);
  return TRUE;
}

gboolean
gst_twoflow_admission_contains (GstTwoflowAdmission * a, guint id)
{
  return find (a, id) != NULL;
}

guint
gst_twoflow_admission_n_sessions (GstTwoflowAdmission * a)
{
  return a->sessions.length;
}

/* Sum of the admitted sessions' peak rates, bit/s. */
guint64
gst_twoflow_admission_reserved (GstTwoflowAdmission * a)
{
  guint64 sum = 0;
  GList *l;

  for (l = a->sessions.head; l; l = l->next)
    sum += ((Session *) l->data)->r.peak;
  return sum;
}

/**
 * gst_twoflow_admission_reserved_at:
 * @now: in the time base of add_rates()
 *
 * Returns: bit/s the admitted sessions reserve at @now on the admission's
 *   basis (peak: their peak rates; smoothed: their rates in force)
 */
guint64
gst_twoflow_admission_reserved_at (GstTwoflowAdmission * a, GstClockTime now)
{
  guint64 sum = 0;
  GList *l;

  for (l = a->sessions.head; l; l = l->next) {
    Session *s = l->data;
    sum += rate_at (a, &s->r, now > s->start ? now - s->start : 0);
  }
  return sum;
}

static void
window_sums (Session * s, Interval * sum)
{
  guint i;

  memset (sum, 0, sizeof (*sum));
  for (i = 0; i < GST_TWOFLOW_ADMISSION_LOSS_WINDOW; i++) {
    sum->ess_recv_bl += s->win[i].ess_recv_bl;
    sum->ess_due += s->win[i].ess_due;
    sum->enh_recv += s->win[i].enh_recv;
    sum->enh_sent += s->win[i].enh_sent;
    sum->ess_pkts += s->win[i].ess_pkts;
    sum->ess_rexmit += s->win[i].ess_rexmit;
    sum->enh_total += s->win[i].enh_total;
    sum->enh_lost += s->win[i].enh_lost;
    sum->dt += s->win[i].dt;
    sum->bl_dt += s->win[i].bl_dt;
  }
}

/**
 * gst_twoflow_admission_handle_sample:
 * @now: the time of the sample (any monotonic time base)
 *
 * Takes one progress sample of an admitted session (about once a second).
 * Over the last %GST_TWOFLOW_ADMISSION_LOSS_WINDOW samples it judges, as
 * the two-flow paper defines a session on its targets: both flows' rates
 * near their targets — the essential flow received at >= 90 % of its cTCP
 * target while its sender had data queued, the enhanced flow received at
 * >= 90 % of what its sender sent — and loss < 5 % on both (enhanced:
 * packets lost at rudpsrc; essential: TCP segments retransmitted per
 * segment sent, over at least 20 of them); besides, the transcoder at
 * >= 90 % of its input and no essential segment newly late.
 */
void
gst_twoflow_admission_handle_sample (GstTwoflowAdmission * a, guint id,
    const GstTwoflowAdmissionSample * sample, GstClockTime now)
{
  Session *s = find (a, id);
  GstTwoflowAdmissionHealth *h;

  if (!s)
    return;
  h = &s->h;
  if (s->samples > 0 && now > s->last_time) {
    const GstTwoflowAdmissionSample *o = &s->last;
    Interval *iv = &s->win[s->samples % GST_TWOFLOW_ADMISSION_LOSS_WINDOW];
    GstClockTime dt = now - s->last_time;
    guint64 ess = sample->essential_bytes - o->essential_bytes;
    gboolean backlogged = sample->essential_target > 0
        && o->essential_queued > 0 && sample->essential_queued > 0;
    Interval sum;

    h->rate = (gdouble) (ess + (sample->enhanced_bytes - o->enhanced_bytes))
        * 8.0 * GST_SECOND / dt;
    memset (iv, 0, sizeof (*iv));
    iv->dt = dt;
    iv->bl_dt = backlogged ? dt : 0;
    iv->ess_recv_bl = backlogged ? ess : 0;
    iv->ess_due = backlogged ? gst_util_uint64_scale (sample->essential_target,
        dt, 8 * GST_SECOND) : 0;
    iv->enh_recv = sample->enhanced_bytes - o->enhanced_bytes;
    iv->enh_sent = sample->enhanced_sent >= o->enhanced_sent ?
        sample->enhanced_sent - o->enhanced_sent : 0;
    if (sample->essential_mss > 0 && sample->essential_sent >= o->essential_sent)
      iv->ess_pkts = (sample->essential_sent - o->essential_sent +
          sample->essential_mss - 1) / sample->essential_mss;
    iv->ess_rexmit = sample->essential_retransmissions >=
        o->essential_retransmissions ? sample->essential_retransmissions -
        o->essential_retransmissions : 0;
    iv->enh_total = (sample->received + sample->lost) - (o->received +
        o->lost);
    iv->enh_lost = sample->lost - o->lost;
    window_sums (s, &sum);
    h->enhanced_rate = sum.enh_recv * 8.0 * GST_SECOND / sum.dt;
    h->essential_rate = sum.bl_dt ? sum.ess_recv_bl * 8.0 * GST_SECOND /
        sum.bl_dt : 0;
    if (sum.enh_total > 0)
      h->loss = (gdouble) sum.enh_lost / sum.enh_total;
    /* a handful of segments says nothing: one resent of 4 is not 25 % */
    h->essential_loss = sum.ess_pkts >= MIN_PACKETS ?
        MIN ((gdouble) sum.ess_rexmit / sum.ess_pkts, 1.0) : 0;
    h->essential_ratio = sum.ess_due > 0 ?
        (gdouble) sum.ess_recv_bl / sum.ess_due : 1.0;
    h->enhanced_ratio = sum.enh_sent > 0 ?
        (gdouble) sum.enh_recv / sum.enh_sent : 1.0;
  }
  if (sample->input_bitrate > 0)
    h->rate_ratio = (gdouble) sample->target_bitrate / sample->input_bitrate;
  h->late = s->samples > 0 && sample->segments_late > s->last.segments_late;
  h->healthy = h->loss < MAX_LOSS && h->essential_loss < MAX_LOSS
      && h->essential_ratio >= MIN_RATE_RATIO
      && h->enhanced_ratio >= MIN_RATE_RATIO
      && h->rate_ratio >= MIN_RATE_RATIO && !h->late;
  s->last = *sample;
  s->last_time = now;
  s->samples++;
}

gboolean
gst_twoflow_admission_session_health (GstTwoflowAdmission * a, guint id,
    gdouble * rate, gdouble * loss, gdouble * rate_ratio)
{
  Session *s = find (a, id);

  if (!s)
    return FALSE;
  if (rate)
    *rate = s->h.rate;
  if (loss)
    *loss = s->h.loss;
  if (rate_ratio)
    *rate_ratio = s->h.rate_ratio;
  return s->h.healthy;
}

/**
 * gst_twoflow_admission_get_health:
 * @health: (out caller-allocates): the session's measured health
 *
 * Returns: whether the session is known
 */
gboolean
gst_twoflow_admission_get_health (GstTwoflowAdmission * a, guint id,
    GstTwoflowAdmissionHealth * health)
{
  Session *s = find (a, id);

  if (!s)
    return FALSE;
  *health = s->h;
  return TRUE;
}

/**
 * gst_twoflow_admission_handle_candidate:
 * @peak_rate: bit/s of the candidate (its video's peak)
 * @out: (out caller-allocates): the decision; free @out->reason
 *
 * handle_candidate_rates() for a candidate known by its peak rate only,
 * at time 0.
 */
void
gst_twoflow_admission_handle_candidate (GstTwoflowAdmission * a,
    guint64 peak_rate, GstTwoflowAdmissionDecision * out)
{
  GstTwoflowAdmissionRates r = { 0, };

  r.peak_rate = peak_rate;
  gst_twoflow_admission_handle_candidate_rates (a, &r, 0, out);
}

/**
 * gst_twoflow_admission_handle_candidate_rates:
 * @rates: the candidate's rates
 * @now: in the time base of add_rates()
 * @out: (out caller-allocates): the decision; free @out->reason
 *
 * A new session asks to be admitted: decides at once whether it fits.
 * Configured mode, peak basis: iff its peak rate <= capacity - the
 * admitted sessions' peak rates.
 * Smoothed basis: iff at every instant from @now until both of its flows
 * run (its first segment, its first enhanced window), its smoothed rate
 * plus the admitted sessions' smoothed rates in force fit the capacity.
 * Measured mode: iff every admitted session with two samples or more is
 * healthy. It does not add it: the caller adds it once it is set up.
 */
void
gst_twoflow_admission_handle_candidate_rates (GstTwoflowAdmission * a,
    const GstTwoflowAdmissionRates * rates, GstClockTime now,
    GstTwoflowAdmissionDecision * out)
{
  RateFn c;
  GList *l;

  rate_fn_view (&c, rates);
  out->admit = TRUE;
  out->mode = a->mode;
  out->sessions = a->sessions.length;
  out->capacity = a->capacity;
  out->residual = 0;
  out->rate = rate_at (a, &c, 0);
  out->reason = NULL;

  switch (a->mode) {
    case GST_TWOFLOW_ADMISSION_CONFIGURED:{
      GstClockTime h = horizon (a, &c), worst_t = now;
      GArray *at = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
      gdouble worst_over = -G_MAXDOUBLE, worst_res = a->capacity;
      guint64 worst_rate = out->rate, need = 0;
      guint i;

      g_array_append_val (at, now);
      add_breakpoints (at, &c, now, now, now + h);
      for (l = a->sessions.head; l; l = l->next)
        add_breakpoints (at, &((Session *) l->data)->r,
            ((Session *) l->data)->start, now, now + h);
      for (i = 0; i < at->len; i++) {
        GstClockTime t = g_array_index (at, GstClockTime, i);
        guint64 cr = rate_at (a, &c, t - now);
        gdouble res = (gdouble) a->capacity;

        for (l = a->sessions.head; l; l = l->next) {
          Session *s = l->data;
          res -= rate_at (a, &s->r, t > s->start ? t - s->start : 0);
        }
        need = MAX (need, cr);
        if (cr - res > worst_over) {
          worst_over = cr - res;
          worst_res = res;
          worst_rate = cr;
          worst_t = t;
        }
      }
      g_array_free (at, TRUE);
      out->residual = worst_res;
      out->rate = need;
      if (worst_over > 0) {
        out->admit = FALSE;
        if (a->basis == GST_TWOFLOW_ADMISSION_BASIS_PEAK || !c.smoothed)
          out->reason = g_strdup_printf ("WAN capacity exhausted: peak rate "
              "%.2f Mbit/s > residual %.2f of %.2f Mbit/s", worst_rate / 1e6,
              MAX (worst_res, 0) / 1e6, a->capacity / 1e6);
        else
          out->reason = g_strdup_printf ("WAN capacity exhausted: smoothed "
              "rate %.2f Mbit/s > residual %.2f of %.2f Mbit/s (%.0f s "
              "after the start)", worst_rate / 1e6, MAX (worst_res, 0) / 1e6,
              a->capacity / 1e6, (worst_t - now) / 1e9);
      }
      break;
    }
    case GST_TWOFLOW_ADMISSION_MEASURED:
      /* two samples give one measured interval */
      for (l = a->sessions.head; l && out->admit; l = l->next) {
        Session *s = l->data;
        GstTwoflowAdmissionHealth *hh = &s->h;

        if (s->samples >= 2 && !hh->healthy) {
          out->admit = FALSE;
          out->reason = g_strdup_printf ("session %u (%s) is off its "
              "targets: loss %.1f%% (enhanced), %.1f%% (essential), "
              "received %.0f%% (essential) and %.0f%% (enhanced) of their "
              "targets, transcoder at %.0f%% of its input rate%s", s->id,
              s->video, hh->loss * 100, hh->essential_loss * 100,
              hh->essential_ratio * 100, hh->enhanced_ratio * 100,
              hh->rate_ratio * 100, hh->late ? ", an essential segment late"
              : "");
        }
      }
      break;
    case GST_TWOFLOW_ADMISSION_NONE:
      break;
  }
  if (out->admit)
    a->admitted++;
  else
    a->rejected++;
}

const gchar *
gst_twoflow_admission_mode_to_string (GstTwoflowAdmissionMode mode)
{
  switch (mode) {
    case GST_TWOFLOW_ADMISSION_CONFIGURED:
      return "configured";
    case GST_TWOFLOW_ADMISSION_MEASURED:
      return "measured";
    case GST_TWOFLOW_ADMISSION_NONE:
      break;
  }
  return "none";
}

/**
 * gst_twoflow_admission_get_stats:
 *
 * `application/x-twoflow-admission-stats`: `mode` (string), `capacity`
 * (guint64, bit/s), `basis` (string: peak, smoothed), `sessions` (guint,
 * admitted now), `reserved` (guint64, bit/s, sum of their peak rates),
 * `admitted`, `rejected` (guint64,
 * decisions so far), `unhealthy` (guint, admitted sessions off their
 * targets now).
 *
 * Returns: (transfer full): the stats
 */
GstStructure *
gst_twoflow_admission_get_stats (GstTwoflowAdmission * a)
{
  guint unhealthy = 0;
  GList *l;

  for (l = a->sessions.head; l; l = l->next)
    unhealthy += ((Session *) l->data)->samples >= 2
        && !((Session *) l->data)->h.healthy;
  return gst_structure_new ("application/x-twoflow-admission-stats",
      "mode", G_TYPE_STRING, gst_twoflow_admission_mode_to_string (a->mode),
      "capacity", G_TYPE_UINT64, a->capacity,
      "basis", G_TYPE_STRING, a->basis == GST_TWOFLOW_ADMISSION_BASIS_PEAK ?
      "peak" : "smoothed",
      "sessions", G_TYPE_UINT, a->sessions.length,
      "reserved", G_TYPE_UINT64, gst_twoflow_admission_reserved (a),
      "admitted", G_TYPE_UINT64, a->admitted,
      "rejected", G_TYPE_UINT64, a->rejected,
      "unhealthy", G_TYPE_UINT, unhealthy, NULL);
}
