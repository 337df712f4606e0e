/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP
 * Pluggable congestion control, in the style of Linux tcp_congestion_ops.
 *
 * A law works on the sender's inter-packet gap (rate-based) and may keep a
 * window of its own (window-based laws apply it to W = rate * T and convert
 * back with gst_erap_cc_set_window()). The sender calls:
 *   init     once, with the configured initial gap;
 *   tick     once per SRTT while the session has data to send, with
 *            @rate_used telling whether the last SRTT used the rate (RAP's
 *            dpthresh test) — rate-based increase goes here;
 *   on_ack   for every ACK that carries an RTT sample — window-based
 *            increase goes here;
 *   on_loss  once per loss reaction (one per loss cluster);
 *   undo     optionally: the reactions since the last one not caused by a
 *            timeout were all timeouts, and the first one's packet has
 *            been acknowledged after all (late ACKs, e.g. a stalled
 *            receiver): take them back;
 *   next_gap optionally, after each packet sent, the gap before the next
 *            one (random or paired pacing; 0 sends the next one at once);
 *            NULL means the plain gap;
 *   release  at the end.
 * Laws keep private state in cc->priv (priv_size bytes, zeroed).
 */
#ifndef __GST_ERAP_CC_H__
#define __GST_ERAP_CC_H__

#include <glib.h>
#include <gst/erap/erap-prelude.h>

G_BEGIN_DECLS

typedef struct _GstErapCC GstErapCC;
typedef struct _GstErapCongestionOps GstErapCongestionOps;

/* What the sender tells a law; times in seconds. */
typedef struct {
  gdouble now;
  gdouble srtt;
  gdouble rtt_sample;           /* on_ack only, else 0 */
  gdouble min_rtt;              /* smallest sample seen, 0 if none */
  gdouble max_rtt;              /* largest sample seen, 0 if none */
  guint packet_size;            /* bytes per full packet, for rate <-> gap */
  guint packets_in_tick;        /* packets sent during the last SRTT (tick) */
  gboolean rate_used;           /* tick only: last SRTT used the rate */
  guint64 seqno;                /* on_ack: the seqno acknowledged;
                                 * next_gap: the seqno just sent */
  guint packet_bytes;           /* next_gap: size of the datagram just sent */
  guint64 packets_lost;         /* transmissions declared lost so far */
  guint64 loss_runs;            /* of those, runs of consecutive seqnos */
  gboolean timeout;             /* on_loss: the loss was found by timeout */
} GstErapCCInfo;

struct _GstErapCongestionOps {
  const gchar *name;
  gsize priv_size;
  void (*init) (GstErapCC * cc);
  void (*release) (GstErapCC * cc);
  void (*tick) (GstErapCC * cc, const GstErapCCInfo * info);
  void (*on_ack) (GstErapCC * cc, const GstErapCCInfo * info);
  void (*on_loss) (GstErapCC * cc, const GstErapCCInfo * info);
  gdouble (*next_gap) (GstErapCC * cc, const GstErapCCInfo * info);
  void (*undo) (GstErapCC * cc, const GstErapCCInfo * info);
};

struct _GstErapCC {
  const GstErapCongestionOps *ops;
  gdouble ipg;                  /* seconds between packets */
  gdouble min_ipg;              /* from max-rate; 0 = unbounded */
  gdouble max_ipg;              /* from min-rate */
  gpointer priv;
};

/* RAP: IPG = IPG*C/(IPG+C) per SRTT when the rate was used, IPG/beta on loss */
#define GST_ERAP_RAP_BETA 0.5
TWOFLOW_ERAP_API const GstErapCongestionOps gst_erap_cc_rap;

/* The law named @name ("rap", the default for NULL, or "libra"); NULL if
 * there is none. */
TWOFLOW_ERAP_API
const GstErapCongestionOps *gst_erap_cc_find (const gchar * name);

TWOFLOW_ERAP_API
GstErapCC *gst_erap_cc_new (const GstErapCongestionOps * ops, gdouble ipg,
    gdouble min_ipg, gdouble max_ipg);
TWOFLOW_ERAP_API
void gst_erap_cc_free (GstErapCC * cc);
/* Sets the gap, clamped to [min_ipg, max_ipg]. */
void gst_erap_cc_set_ipg (GstErapCC * cc, gdouble ipg);
/* For window laws: W packets per T seconds. */
void gst_erap_cc_set_window (GstErapCC * cc, gdouble w, gdouble t);

G_END_DECLS

#endif
