/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The GstNetworkCongestion event: how transports tell the application and
 * the rate transcoder about congestion. See docs/congestion-event.md.
 */
#ifndef __GST_NETWORK_CONGESTION_H__
#define __GST_NETWORK_CONGESTION_H__

#include <gst/gst.h>
#include <gst/twoflow/twoflow-prelude.h>

G_BEGIN_DECLS

/* Name of the event's (and the bus message's) structure. */
#define GST_NETWORK_CONGESTION_NAME "GstNetworkCongestion"

/**
 * GstNetworkCongestionType:
 * @GST_NETWORK_CONGESTION_REXMT: TCP retransmission timeout (CA_Loss)
 * @GST_NETWORK_CONGESTION_DUPACK: fast retransmit / recovery (CA_Recovery)
 * @GST_NETWORK_CONGESTION_RECOVERED: back to normal operation (CA_Open)
 * @GST_NETWORK_CONGESTION_LOSS: a loss reaction of a rate-based transport
 * @GST_NETWORK_CONGESTION_RATE: a rate requested by the receiver
 */
typedef enum {
  GST_NETWORK_CONGESTION_REXMT     = (1 << 0),
  GST_NETWORK_CONGESTION_DUPACK    = (1 << 1),
  GST_NETWORK_CONGESTION_RECOVERED = (1 << 2),
  GST_NETWORK_CONGESTION_LOSS      = (1 << 3),
  GST_NETWORK_CONGESTION_RATE      = (1 << 4),
} GstNetworkCongestionType;

#define GST_NETWORK_CONGESTION_ALL \
  (GST_NETWORK_CONGESTION_REXMT | GST_NETWORK_CONGESTION_DUPACK | \
   GST_NETWORK_CONGESTION_RECOVERED | GST_NETWORK_CONGESTION_LOSS | \
   GST_NETWORK_CONGESTION_RATE)

/* A GFlags type so elements can expose "which events" properties. */
#define GST_TYPE_NETWORK_CONGESTION_TYPE (gst_network_congestion_type_get_type ())
TWOFLOW_API
GType gst_network_congestion_type_get_type (void);

TWOFLOW_API
const gchar * gst_network_congestion_type_to_string (GstNetworkCongestionType type);
TWOFLOW_API
gboolean gst_network_congestion_type_from_string (const gchar * str,
    GstNetworkCongestionType * type);

TWOFLOW_API
GstStructure * gst_network_congestion_structure_new (GstNetworkCongestionType type,
    guint64 estimated_bitrate, GstClockTime srtt, const gchar * source);
TWOFLOW_API
gboolean gst_network_congestion_structure_parse (const GstStructure * s,
    GstNetworkCongestionType * type, guint64 * estimated_bitrate,
    GstClockTime * srtt, const gchar ** source);

TWOFLOW_API
GstEvent * gst_network_congestion_event_new (GstNetworkCongestionType type,
    guint64 estimated_bitrate, GstClockTime srtt, const gchar * source);
TWOFLOW_API
gboolean gst_network_congestion_event_parse (GstEvent * event,
    GstNetworkCongestionType * type, guint64 * estimated_bitrate,
    GstClockTime * srtt, const gchar ** source);

TWOFLOW_API
GstMessage * gst_network_congestion_message_new (GstObject * src,
    GstNetworkCongestionType type, guint64 estimated_bitrate, GstClockTime srtt);
TWOFLOW_API
gboolean gst_network_congestion_message_parse (GstMessage * message,
    GstNetworkCongestionType * type, guint64 * estimated_bitrate,
    GstClockTime * srtt, const gchar ** source);

TWOFLOW_API
gboolean gst_network_congestion_notify (GstElement * element, GstPad * sinkpad,
    GstNetworkCongestionType type, guint64 estimated_bitrate, GstClockTime srtt);

G_END_DECLS

#endif
