/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the process-wide pacer of all rudpsinks: one thread, one timer */
#ifndef __GST_RUDP_PACER_H__
#define __GST_RUDP_PACER_H__

#include "gstrudpsink.h"

G_BEGIN_DECLS

/* Adds @sink's flow to the shared pacer (started on first use). */
TwoflowService *gst_rudp_pacer_add (GstRudpSink * sink);
/* Removes @sink's flow, dropping what it still queues; the last removal
 * stops the thread. */
void gst_rudp_pacer_remove (TwoflowService * p, GstRudpSink * sink);

/* Queues @buf (takes it), waiting while the sink's buffer is full. Returns
 * FALSE if the sink started flushing. */
gboolean gst_rudp_pacer_queue (TwoflowService * p, GstRudpSink * sink,
    GstBuffer * buf);
/* Waits until all of @sink's packets are sent (FALSE when flushing). */
gboolean gst_rudp_pacer_drain (TwoflowService * p, GstRudpSink * sink);
void gst_rudp_pacer_set_flushing (TwoflowService * p, GstRudpSink * sink,
    gboolean flushing);
void gst_rudp_pacer_flush (TwoflowService * p, GstRudpSink * sink);
/* Applies the sink's rate, depth, interval and buffer-size properties. */
void gst_rudp_pacer_reconfigure (TwoflowService * p, GstRudpSink * sink);
/* The rate property under receiver rate control: that level. */
void gst_rudp_pacer_set_level (TwoflowService * p, GstRudpSink * sink,
    guint level);
GstStructure *gst_rudp_pacer_get_stats (TwoflowService * p,
    GstRudpSink * sink);

G_END_DECLS

#endif
