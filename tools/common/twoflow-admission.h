/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Application-aware admission control of the proxy (sans-IO): a new
 * session is admitted only when the WAN can carry it — by the configured
 * capacity's residual, or, on a pipe without guarantees, by the measured
 * health of the sessions already admitted. The proxy feeds it progress
 * samples with the current time and asks it for decisions.
 * Verbs (docs/architecture.md): handle_sample(…, now) for the measured
 * input; handle_candidate() and handle_candidate_rates(…, now) for a new
 * session asking to be admitted, answered at once with the decision. No
 * timer: it never acts between calls, so it has no poll() and no
 * next_wakeup().
 */
#ifndef __GST_TWOFLOW_ADMISSION_H__
#define __GST_TWOFLOW_ADMISSION_H__

#include <gst/gst.h>

G_BEGIN_DECLS

typedef enum {
  GST_TWOFLOW_ADMISSION_NONE = 0,       /* admit everything */
  GST_TWOFLOW_ADMISSION_CONFIGURED,     /* peak rate <= capacity - reserved */
  GST_TWOFLOW_ADMISSION_MEASURED,       /* every admitted session healthy */
} GstTwoflowAdmissionMode;

/* How many progress samples the measured loss is judged over: one second
 * of a low-rate flow holds too few packets to tell 8 % from 0. */
#define GST_TWOFLOW_ADMISSION_LOSS_WINDOW 5

/* What a configured-mode reservation is made of. */
typedef enum {
  GST_TWOFLOW_ADMISSION_BASIS_PEAK = 0, /* the video's 1 s peak rate */
  GST_TWOFLOW_ADMISSION_BASIS_SMOOTHED, /* essential segment + enhanced window rates */
} GstTwoflowAdmissionBasis;

/* A session's rates: its peak, and its smoothed rates as functions of the
 * time since its start (docs/system.md, "Admission control"): the
 * essential flow's cTCP target of the segment being sent (segment
 * essential_skip + floor(t / segment_duration)) plus the enhanced flow's
 * window rate (window floor((t - enhanced_start) / window), none before
 * enhanced_start); past the last segment or window, the last one's rate
 * (until the session is removed). Arrays are copied by the core. */
typedef struct {
  guint64 peak_rate;
  const guint64 *essential_rates;       /* bit/s per segment */
  guint n_essential;
  GstClockTime segment_duration;
  guint essential_skip;                 /* segments pre-staged (prefix) */
  const guint64 *enhanced_rates;        /* bit/s per window */
  guint n_enhanced;
  GstClockTime window;
  GstClockTime enhanced_start;
} GstTwoflowAdmissionRates;

/* One progress sample of an admitted session; counters are cumulative.
 * Received counts are the proxy's; the sent ones, targets and
 * retransmissions are the server's (its progress events). */
typedef struct {
  guint64 essential_bytes, enhanced_bytes;      /* received at the proxy */
  guint64 received, lost;                       /* enhanced packets */
  guint64 target_bitrate, input_bitrate;        /* transcoder, 0: unknown */
  guint64 segments_late;                        /* essential transport */
  /* essential sender (ctcpsink): target S/(T(1-p̂)) (bit/s; 0: unknown), bytes
   * sent and still queued, segments retransmitted, MSS */
  guint64 essential_target, essential_sent, essential_queued;
  guint64 essential_retransmissions, essential_mss;
  /* enhanced sender (rudpsink): bytes sent (0: unknown) */
  guint64 enhanced_sent;
} GstTwoflowAdmissionSample;

/* A session's measured health over the last
 * GST_TWOFLOW_ADMISSION_LOSS_WINDOW samples. */
typedef struct {
  gdouble rate;                 /* bit/s received, both flows, last interval */
  gdouble essential_rate;       /* bit/s over the window, while backlogged */
  gdouble enhanced_rate;        /* bit/s over the window */
  gdouble loss;                 /* enhanced packets lost */
  gdouble essential_loss;       /* cTCP segments retransmitted / sent */
  gdouble essential_ratio;      /* received / target while backlogged */
  gdouble enhanced_ratio;       /* received / sent */
  gdouble rate_ratio;           /* transcoder target / input */
  gboolean late;                /* an essential segment newly late */
  gboolean healthy;
} GstTwoflowAdmissionHealth;

/* What handle_candidate() found; the strings are static or owned by the
 * caller. */
typedef struct {
  gboolean admit;
  GstTwoflowAdmissionMode mode;
  guint sessions;               /* admitted before this decision */
  gdouble capacity, residual;   /* bit/s (configured mode) */
  gdouble rate;                 /* bit/s the candidate needs (configured) */
  gchar *reason;                /* (transfer full) NULL when admitted */
} GstTwoflowAdmissionDecision;

typedef struct _GstTwoflowAdmission GstTwoflowAdmission;

GstTwoflowAdmission * gst_twoflow_admission_new (GstTwoflowAdmissionMode mode,
    guint64 capacity);
void gst_twoflow_admission_free (GstTwoflowAdmission * a);

void gst_twoflow_admission_set_basis (GstTwoflowAdmission * a,
    GstTwoflowAdmissionBasis basis);
GstTwoflowAdmissionBasis gst_twoflow_admission_get_basis (
    GstTwoflowAdmission * a);
void gst_twoflow_admission_add (GstTwoflowAdmission * a, guint id,
    const gchar * video, guint64 peak_rate);
void gst_twoflow_admission_add_rates (GstTwoflowAdmission * a, guint id,
    const gchar * video, const GstTwoflowAdmissionRates * rates,
    GstClockTime now);
guint64 gst_twoflow_admission_reserved_at (GstTwoflowAdmission * a,
    GstClockTime now);
void gst_twoflow_admission_set_start (GstTwoflowAdmission * a, guint id,
    GstClockTime now);
gboolean gst_twoflow_admission_remove (GstTwoflowAdmission * a, guint id);
gboolean gst_twoflow_admission_contains (GstTwoflowAdmission * a, guint id);
guint64 gst_twoflow_admission_reserved (GstTwoflowAdmission * a);
guint gst_twoflow_admission_n_sessions (GstTwoflowAdmission * a);

void gst_twoflow_admission_handle_sample (GstTwoflowAdmission * a, guint id,
    const GstTwoflowAdmissionSample * sample, GstClockTime now);
gboolean gst_twoflow_admission_session_health (GstTwoflowAdmission * a,
    guint id, gdouble * rate, gdouble * loss, gdouble * rate_ratio);
gboolean gst_twoflow_admission_get_health (GstTwoflowAdmission * a,
    guint id, GstTwoflowAdmissionHealth * health);

void gst_twoflow_admission_handle_candidate (GstTwoflowAdmission * a,
    guint64 peak_rate, GstTwoflowAdmissionDecision * out);
void gst_twoflow_admission_handle_candidate_rates (GstTwoflowAdmission * a,
    const GstTwoflowAdmissionRates * rates, GstClockTime now,
    GstTwoflowAdmissionDecision * out);
const gchar * gst_twoflow_admission_mode_to_string (
    GstTwoflowAdmissionMode mode);

GstStructure * gst_twoflow_admission_get_stats (GstTwoflowAdmission * a);

G_END_DECLS

#endif
