/* twoflow — the process-wide pacer of all rudpsinks: one thread, one timer */
#ifndef __GST_RUDP_PACER_H__
#define __GST_RUDP_PACER_H__

#include "gstrudpsink.h"

G_BEGIN_DECLS

/* Adds @sink's flow to the shared pacer (created on first use). */
GstRudpPacer *gst_rudp_pacer_add (GstRudpSink * sink);
/* Removes @sink's flow, dropping what it still queues; the last removal
 * stops the thread. */
void gst_rudp_pacer_remove (GstRudpPacer * p, GstRudpSink * sink);

/* Queues @buf (takes it), waiting while the sink's buffer is full. Returns
 * FALSE if the sink started flushing. */
gboolean gst_rudp_pacer_queue (GstRudpPacer * p, GstRudpSink * sink,
    GstBuffer * buf);
/* Waits until all of @sink's packets are sent (FALSE when flushing). */
gboolean gst_rudp_pacer_drain (GstRudpPacer * p, GstRudpSink * sink);
void gst_rudp_pacer_set_flushing (GstRudpPacer * p, GstRudpSink * sink,
    gboolean flushing);
void gst_rudp_pacer_flush (GstRudpPacer * p, GstRudpSink * sink);
/* Applies the sink's rate, depth, interval and level properties. */
void gst_rudp_pacer_reconfigure (GstRudpPacer * p, GstRudpSink * sink);
void gst_rudp_pacer_set_level (GstRudpPacer * p, GstRudpSink * sink,
    guint level);
GstStructure *gst_rudp_pacer_get_stats (GstRudpPacer * p,
    GstRudpSink * sink);
/* Number of pacing threads in the process (0 or 1), for tests. */
guint gst_rudp_pacer_n_threads (void);

G_END_DECLS

#endif
