/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The GstNetworkCongestion event: how transports tell the application and
 * the rate transcoder about congestion. See docs/congestion-event.md.
 */
#ifndef __GST_TWOFLOW_CONGESTION_H__
#define __GST_TWOFLOW_CONGESTION_H__

#include <gst/gst.h>
#include <gst/twoflow/twoflow-prelude.h>

G_BEGIN_DECLS

/* Name of the event's (and the bus message's) structure. */
#define GST_TWOFLOW_CONGESTION_NAME "GstNetworkCongestion"

/**
 * GstTwoflowCongestionType:
 * @GST_TWOFLOW_CONGESTION_REXMT: TCP retransmission timeout (CA_Loss)
 * @GST_TWOFLOW_CONGESTION_DUPACK: fast retransmit / recovery (CA_Recovery)
 * @GST_TWOFLOW_CONGESTION_RECOVERED: back to normal operation (CA_Open)
 * @GST_TWOFLOW_CONGESTION_LOSS: a loss reaction of a rate-based transport
 * @GST_TWOFLOW_CONGESTION_RATE: a rate requested by the receiver
 */
typedef enum {
  GST_TWOFLOW_CONGESTION_REXMT     = (1 << 0),
  GST_TWOFLOW_CONGESTION_DUPACK    = (1 << 1),
  GST_TWOFLOW_CONGESTION_RECOVERED = (1 << 2),
  GST_TWOFLOW_CONGESTION_LOSS      = (1 << 3),
  GST_TWOFLOW_CONGESTION_RATE      = (1 << 4),
} GstTwoflowCongestionType;

#define GST_TWOFLOW_CONGESTION_ALL \
  (GST_TWOFLOW_CONGESTION_REXMT | GST_TWOFLOW_CONGESTION_DUPACK | \
   GST_TWOFLOW_CONGESTION_RECOVERED | GST_TWOFLOW_CONGESTION_LOSS | \
   GST_TWOFLOW_CONGESTION_RATE)

/* A GFlags type so elements can expose "which events" properties. */
#define GST_TYPE_TWOFLOW_CONGESTION_TYPE (gst_twoflow_congestion_type_get_type ())
TWOFLOW_API
GType gst_twoflow_congestion_type_get_type (void);

TWOFLOW_API
const gchar * gst_twoflow_congestion_type_to_string (GstTwoflowCongestionType type);
TWOFLOW_API
gboolean gst_twoflow_congestion_type_from_string (const gchar * str,
    GstTwoflowCongestionType * type);

TWOFLOW_API
GstStructure * gst_twoflow_congestion_structure_new (GstTwoflowCongestionType type,
    guint64 estimated_bitrate, GstClockTime srtt, const gchar * source);
TWOFLOW_API
gboolean gst_twoflow_congestion_structure_parse (const GstStructure * s,
    GstTwoflowCongestionType * type, guint64 * estimated_bitrate,
    GstClockTime * srtt, const gchar ** source);

TWOFLOW_API
GstEvent * gst_twoflow_congestion_event_new (GstTwoflowCongestionType type,
    guint64 estimated_bitrate, GstClockTime srtt, const gchar * source);
TWOFLOW_API
gboolean gst_twoflow_congestion_event_parse (GstEvent * event,
    GstTwoflowCongestionType * type, guint64 * estimated_bitrate,
    GstClockTime * srtt, const gchar ** source);

TWOFLOW_API
GstMessage * gst_twoflow_congestion_message_new (GstObject * src,
    GstTwoflowCongestionType type, guint64 estimated_bitrate, GstClockTime srtt);
TWOFLOW_API
gboolean gst_twoflow_congestion_message_parse (GstMessage * message,
    GstTwoflowCongestionType * type, guint64 * estimated_bitrate,
    GstClockTime * srtt, const gchar ** source);

TWOFLOW_API
gboolean gst_twoflow_congestion_notify (GstElement * element, GstPad * sinkpad,
    GstTwoflowCongestionType type, guint64 estimated_bitrate, GstClockTime srtt);

/* The names before 0.1.0 (GstNetworkCongestion*, gst_network_congestion_*),
 * deprecated: kept for one release so that code written against them
 * builds unchanged (the Python names through the GstTwoflow override,
 * python/gi/overrides/GstTwoflow.py). Define TWOFLOW_DISABLE_DEPRECATED to
 * check that a program no longer uses them. The event's structure name
 * stays "GstNetworkCongestion". */
#if !defined (TWOFLOW_DISABLE_DEPRECATED) && !defined (__GI_SCANNER__)
typedef GstTwoflowCongestionType GstNetworkCongestionType;
#define GST_TYPE_NETWORK_CONGESTION_TYPE GST_TYPE_TWOFLOW_CONGESTION_TYPE
#define GST_NETWORK_CONGESTION_ALL GST_TWOFLOW_CONGESTION_ALL
#define GST_NETWORK_CONGESTION_DUPACK GST_TWOFLOW_CONGESTION_DUPACK
#define GST_NETWORK_CONGESTION_LOSS GST_TWOFLOW_CONGESTION_LOSS
#define GST_NETWORK_CONGESTION_NAME GST_TWOFLOW_CONGESTION_NAME
#define GST_NETWORK_CONGESTION_RATE GST_TWOFLOW_CONGESTION_RATE
#define GST_NETWORK_CONGESTION_RECOVERED GST_TWOFLOW_CONGESTION_RECOVERED
#define GST_NETWORK_CONGESTION_REXMT GST_TWOFLOW_CONGESTION_REXMT
#define gst_network_congestion_event_new gst_twoflow_congestion_event_new
#define gst_network_congestion_event_parse gst_twoflow_congestion_event_parse
#define gst_network_congestion_message_new gst_twoflow_congestion_message_new
#define gst_network_congestion_message_parse gst_twoflow_congestion_message_parse
#define gst_network_congestion_notify gst_twoflow_congestion_notify
#define gst_network_congestion_structure_new gst_twoflow_congestion_structure_new
#define gst_network_congestion_structure_parse gst_twoflow_congestion_structure_parse
#define gst_network_congestion_type_from_string gst_twoflow_congestion_type_from_string
#define gst_network_congestion_type_get_type gst_twoflow_congestion_type_get_type
#define gst_network_congestion_type_to_string gst_twoflow_congestion_type_to_string
#endif

G_END_DECLS

#endif
