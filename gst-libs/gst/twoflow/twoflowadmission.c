/* SPDX-License-Identifier: LGPL-2.0-or-later */
/* twoflow
 * Admission control of the proxy, sans-IO (see twoflowadmission.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "twoflowadmission.h"

/* Health thresholds of an admitted session (measured mode). */
#define MAX_LOSS        0.05
#define MIN_RATE_RATIO  0.9

typedef struct {
  guint id;
  gchar *video;
  guint64 peak_rate;
  /* measurement */
  guint samples;
  GstClockTime last_time;
  GstTwoflowAdmissionSample last;
  guint64 win_total[GST_TWOFLOW_ADMISSION_LOSS_WINDOW];
  guint64 win_lost[GST_TWOFLOW_ADMISSION_LOSS_WINDOW];
  gdouble rate, loss, rate_ratio;
  gboolean healthy;
} Session;

struct _GstTwoflowAdmission {
  GstTwoflowAdmissionMode mode;
  guint64 capacity;
  GQueue sessions;              /* Session, in admission order */
  guint64 admitted, rejected;
};

static void
session_free (Session * s)
{
  g_free (s->video);
  g_free (s);
}

/**
 * gst_twoflow_admission_new: (skip)
 *
 * The admission core; C only (an opaque struct, not a registered type).
 */
GstTwoflowAdmission *
gst_twoflow_admission_new (GstTwoflowAdmissionMode mode, guint64 capacity)
{
  GstTwoflowAdmission *a = g_new0 (GstTwoflowAdmission, 1);

  a->mode = mode;
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

static Session *
find (GstTwoflowAdmission * a, guint id)
{
  GList *l;

  for (l = a->sessions.head; l; l = l->next)
    if (((Session *) l->data)->id == id)
      return l->data;
  return NULL;
}

/**
 * gst_twoflow_admission_add:
 * @peak_rate: bit/s the session reserves (configured mode)
 *
 * Records an admitted session; it stays until removed.
 */
void
gst_twoflow_admission_add (GstTwoflowAdmission * a, guint id,
    const gchar * video, guint64 peak_rate)
{
  Session *s;

  g_return_if_fail (find (a, id) == NULL);
  s = g_new0 (Session, 1);
  s->id = id;
  s->video = g_strdup (video);
  s->peak_rate = peak_rate;
  s->healthy = TRUE;
  s->rate_ratio = 1.0;
  g_queue_push_tail (&a->sessions, s);
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
    sum += ((Session *) l->data)->peak_rate;
  return sum;
}

/**
 * gst_twoflow_admission_handle_sample:
 * @now: the time of the sample (any monotonic time base)
 *
 * Takes one progress sample of an admitted session (about once a second):
 * its received rate since the last sample, its enhanced-flow loss over the
 * last %GST_TWOFLOW_ADMISSION_LOSS_WINDOW samples, its transcoder's target
 * against its input, and whether an essential segment was newly late. A
 * session is healthy with loss < 5 %, the transcoder at >= 90 % of its input
 * and no new late segment.
 */
void
gst_twoflow_admission_handle_sample (GstTwoflowAdmission * a, guint id,
    const GstTwoflowAdmissionSample * sample, GstClockTime now)
{
  Session *s = find (a, id);

  if (!s)
    return;
  if (s->samples > 0) {
    guint i, k = s->samples % GST_TWOFLOW_ADMISSION_LOSS_WINDOW;
    guint64 tot = 0, lost = 0;

    if (now > s->last_time)
      s->rate = (gdouble) ((sample->essential_bytes - s->last.essential_bytes)
          + (sample->enhanced_bytes - s->last.enhanced_bytes)) * 8.0
          * GST_SECOND / (now - s->last_time);
    s->win_total[k] = (sample->received + sample->lost)
        - (s->last.received + s->last.lost);
    s->win_lost[k] = sample->lost - s->last.lost;
    for (i = 0; i < GST_TWOFLOW_ADMISSION_LOSS_WINDOW; i++) {
      tot += s->win_total[i];
      lost += s->win_lost[i];
    }
    if (tot > 0)
      s->loss = (gdouble) lost / tot;
  }
  if (sample->input_bitrate > 0)
    s->rate_ratio = (gdouble) sample->target_bitrate / sample->input_bitrate;
  s->healthy = s->loss < MAX_LOSS && s->rate_ratio >= MIN_RATE_RATIO
      && sample->segments_late <= s->last.segments_late;
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
    *rate = s->rate;
  if (loss)
    *loss = s->loss;
  if (rate_ratio)
    *rate_ratio = s->rate_ratio;
  return s->healthy;
}

/**
 * gst_twoflow_admission_decide:
 * @peak_rate: bit/s of the candidate (its video's peak)
 * @out: (out caller-allocates): the decision; free @out->reason
 *
 * Decides whether a new session fits. It does not add it: the caller adds
 * it once the session is set up.
 */
void
gst_twoflow_admission_decide (GstTwoflowAdmission * a, guint64 peak_rate,
    GstTwoflowAdmissionDecision * out)
{
  GList *l;

  out->admit = TRUE;
  out->mode = a->mode;
  out->sessions = a->sessions.length;
  out->capacity = a->capacity;
  out->residual = 0;
  out->reason = NULL;

  switch (a->mode) {
    case GST_TWOFLOW_ADMISSION_CONFIGURED:
      out->residual = (gdouble) a->capacity
          - (gdouble) gst_twoflow_admission_reserved (a);
      if (peak_rate > out->residual) {
        out->admit = FALSE;
        out->reason = g_strdup_printf ("WAN capacity exhausted: peak rate "
            "%.2f Mbit/s > residual %.2f of %.2f Mbit/s", peak_rate / 1e6,
            MAX (out->residual, 0) / 1e6, a->capacity / 1e6);
      }
      break;
    case GST_TWOFLOW_ADMISSION_MEASURED:
      /* two samples give one measured interval */
      for (l = a->sessions.head; l && out->admit; l = l->next) {
        Session *s = l->data;

        if (s->samples >= 2 && !s->healthy) {
          out->admit = FALSE;
          out->reason = g_strdup_printf ("session %u (%s) is off its "
              "targets: loss %.1f%%, transcoder at %.0f%% of its input rate",
              s->id, s->video, s->loss * 100, s->rate_ratio * 100);
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
 * (guint64, bit/s), `sessions` (guint, admitted now), `reserved` (guint64,
 * bit/s, sum of their peak rates), `admitted`, `rejected` (guint64,
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
        && !((Session *) l->data)->healthy;
  return gst_structure_new ("application/x-twoflow-admission-stats",
      "mode", G_TYPE_STRING, gst_twoflow_admission_mode_to_string (a->mode),
      "capacity", G_TYPE_UINT64, a->capacity,
      "sessions", G_TYPE_UINT, a->sessions.length,
      "reserved", G_TYPE_UINT64, gst_twoflow_admission_reserved (a),
      "admitted", G_TYPE_UINT64, a->admitted,
      "rejected", G_TYPE_UINT64, a->rejected,
      "unhealthy", G_TYPE_UINT, unhealthy, NULL);
}
