/* SPDX-License-Identifier: LGPL-2.0-or-later */
/* twoflow
 * Application-aware admission control of the proxy (sans-IO): a new
 * session is admitted only when the WAN can carry it — by the configured
 * capacity's residual, or, on a pipe without guarantees, by the measured
 * health of the sessions already admitted. The proxy feeds it progress
 * samples with the current time and asks it for decisions.
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

/* One progress sample of an admitted session; counters are cumulative. */
typedef struct {
  guint64 essential_bytes, enhanced_bytes;      /* received at the proxy */
  guint64 received, lost;                       /* enhanced packets */
  guint64 target_bitrate, input_bitrate;        /* transcoder, 0: unknown */
  guint64 segments_late;                        /* essential transport */
} GstTwoflowAdmissionSample;

/* What decide() found; the strings are static or owned by the caller. */
typedef struct {
  gboolean admit;
  GstTwoflowAdmissionMode mode;
  guint sessions;               /* admitted before this decision */
  gdouble capacity, residual;   /* bit/s (configured mode) */
  gchar *reason;                /* (transfer full) NULL when admitted */
} GstTwoflowAdmissionDecision;

typedef struct _GstTwoflowAdmission GstTwoflowAdmission;

GstTwoflowAdmission * gst_twoflow_admission_new (GstTwoflowAdmissionMode mode,
    guint64 capacity);
void gst_twoflow_admission_free (GstTwoflowAdmission * a);

void gst_twoflow_admission_add (GstTwoflowAdmission * a, guint id,
    const gchar * video, guint64 peak_rate);
gboolean gst_twoflow_admission_remove (GstTwoflowAdmission * a, guint id);
gboolean gst_twoflow_admission_contains (GstTwoflowAdmission * a, guint id);
guint64 gst_twoflow_admission_reserved (GstTwoflowAdmission * a);
guint gst_twoflow_admission_n_sessions (GstTwoflowAdmission * a);

void gst_twoflow_admission_handle_sample (GstTwoflowAdmission * a, guint id,
    const GstTwoflowAdmissionSample * sample, GstClockTime now);
gboolean gst_twoflow_admission_session_health (GstTwoflowAdmission * a,
    guint id, gdouble * rate, gdouble * loss, gdouble * rate_ratio);

void gst_twoflow_admission_decide (GstTwoflowAdmission * a, guint64 peak_rate,
    GstTwoflowAdmissionDecision * out);
const gchar * gst_twoflow_admission_mode_to_string (
    GstTwoflowAdmissionMode mode);

GstStructure * gst_twoflow_admission_get_stats (GstTwoflowAdmission * a);

G_END_DECLS

#endif
