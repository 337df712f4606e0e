/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rudpsink: paced RTP/UDP sender */
#ifndef __GST_RUDP_SINK_H__
#define __GST_RUDP_SINK_H__

#include <gst/gst.h>
#include "twoflowprops.h"
#include <gst/base/gstbasesink.h>
#include <gio/gio.h>
#include <gst/rudp/rudp.h>
#include <gst/twoflow/twoflowhello.h>
#include "gstrudpsrtp.h"

G_BEGIN_DECLS

#define GST_TYPE_RUDP_SINK (gst_rudp_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstRudpSink, gst_rudp_sink, GST, RUDP_SINK, GstBaseSink)

typedef enum {
  GST_RUDP_RATE_CONTROL_FIXED = 0,
  GST_RUDP_RATE_CONTROL_RECEIVER = 1,
} GstRudpRateControl;

#define GST_TYPE_RUDP_RATE_CONTROL (gst_rudp_rate_control_get_type ())
GType gst_rudp_rate_control_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (rudpsink);

G_END_DECLS

#endif
