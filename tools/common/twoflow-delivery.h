/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * What a session delivered of what the source has, and why the rest is
 * missing (sans-IO: fed the counts the session's elements and the
 * server report, no clock): the proxy's "delivery" accounting
 * (docs/system.md, "Delivery"). A session that lost data never passes
 * for complete; frames missing that neither the network's losses nor the
 * transcoder's deliberate drops account for are "unexplained".
 */
#ifndef __GST_TWOFLOW_DELIVERY_H__
#define __GST_TWOFLOW_DELIVERY_H__

#include <glib.h>

G_BEGIN_DECLS

/* What is known at the end of a session; counts, 0 when unknown except
 * packets_sent (-1: unknown). */
typedef struct {
  gint64 frames;                /* the source's (the server's scan) */
  gint64 output_frames;         /* the merge pushed */
  gint64 missing_frames;        /* the merge saw missing (never arrived) */
  gint64 dependent_dropped;     /* the merge dropped: a reference missing */
  gint64 transcoder_dropped;    /* the sender's transcoder dropped */
  gint64 packets_sent;          /* enhanced packets sent (-1: unknown) */
  gint64 packets_received;      /* of those, received */
  gint64 packets_lost;          /* the receiver's sequence gaps */
  gint64 kernel_drops;          /* dropped by the receiver's kernel
                                 * (buffer full), of the enhanced flow */
  gint64 other_kernel_drops;    /* the same, of the essential flow */
  gint64 late_packets;          /* arrived after their playout time
                                 * (second copies of a packet played
                                 * included) */
  gint64 duplicate_packets;     /* second copies the receiver saw */
  gint64 playout_lost;          /* the playout gave up waiting for (the
                                 * jitterbuffer's lost: never came, came
                                 * late, or a resend answered twice hid
                                 * them from the receiver's count) */
  gint64 audio_records;         /* the source's */
  gint64 audio_output;          /* the merge pushed */
  gboolean audio_expected;      /* the output carries the audio */
  gboolean finished;            /* the sender said it was done */
} GstTwoflowDeliveryCounts;

typedef enum {
  GST_TWOFLOW_DELIVERY_NONE,    /* nothing missing */
  GST_TWOFLOW_DELIVERY_NETWORK, /* the network's losses explain it */
  GST_TWOFLOW_DELIVERY_TRANSCODER,      /* the transcoder's drops do */
  GST_TWOFLOW_DELIVERY_RECEIVER,        /* the receiver's kernel dropped */
  GST_TWOFLOW_DELIVERY_LATE,    /* packets came too late */
  GST_TWOFLOW_DELIVERY_UNEXPLAINED,     /* nothing known explains it */
  GST_TWOFLOW_DELIVERY_UNFINISHED,      /* ended before the sender was done */
} GstTwoflowDeliveryCause;

typedef struct {
  gint64 lost_frames;           /* max(frames - output, missing) */
  gint64 packets_lost;          /* gaps, or sent - received if more */
  gint64 network_lost_packets;  /* packets_lost less the kernel's drops */
  gint64 audio_missing;
  gint64 unexplained_frames;    /* lost frames no cause accounts for,
                                 * plus missing audio records */
  gboolean complete;            /* nothing missing */
  GstTwoflowDeliveryCause cause;
} GstTwoflowDelivery;

void gst_twoflow_delivery_judge (const GstTwoflowDeliveryCounts * c,
    GstTwoflowDelivery * d);
const gchar *gst_twoflow_delivery_cause_name (GstTwoflowDeliveryCause cause);

G_END_DECLS

#endif
