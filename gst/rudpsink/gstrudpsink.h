/* twoflow — rudpsink: paced RTP/UDP sender */
#ifndef __GST_RUDP_SINK_H__
#define __GST_RUDP_SINK_H__

#include <gst/gst.h>
#include <gst/base/gstbasesink.h>
#include <gio/gio.h>
#include <gst/rudp/rudp.h>

G_BEGIN_DECLS

#define GST_TYPE_RUDP_SINK (gst_rudp_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstRudpSink, gst_rudp_sink, GST, RUDP_SINK, GstBaseSink)

typedef enum {
  GST_RUDP_RATE_CONTROL_FIXED = 0,
  GST_RUDP_RATE_CONTROL_RECEIVER = 1,
} GstRudpRateControl;

#define GST_TYPE_RUDP_RATE_CONTROL (gst_rudp_rate_control_get_type ())
GType gst_rudp_rate_control_get_type (void);

typedef struct _GstRudpPacer GstRudpPacer;

struct _GstRudpSink {
  GstBaseSink parent;

  /* properties (object lock) */
  gchar *host;
  gint port;
  guint64 rate;
  GstClockTime timer_interval;
  guint64 bucket_depth;
  guint64 buffer_size;
  GstRudpRateControl rate_control;
  GstRudpLevels levels;

  /* I/O, between start and stop */
  GSocket *socket;
  GSocketAddress *dest;
  GCancellable *cancellable;

  /* under the pacer's lock */
  GstRudpPacer *pacer;
  GstRudpFlow *flow;
  gboolean flushing;
  GCond space;                  /* render and drain: packets of ours left */
  gboolean sent;                /* this tick sent packets of ours */
  guint level;
  guint16 next_seq;             /* RTP seqnum of the next packet to leave */
  guint16 level_seq;            /* first seqnum sent at the current level */
  guint32 ssrc;                 /* of the RTP flow, our RTCP SSRC */
  GstClockTime srtt;            /* as the receiver reports it */
  guint64 send_errors;
  guint64 feedback_received;
  guint64 level_changes;
  gboolean notify_pending;      /* a level change to announce upstream */
};

GST_ELEMENT_REGISTER_DECLARE (rudpsink);

G_END_DECLS

#endif
