/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP rate levels (sans-IO): the table of rates sender and
 * receiver agree on (0 = lowest); the receiver algorithm that moves
 * between them is rudpreceiver.h, the sender side rudpsender.h. */
#ifndef __GST_RUDP_LEVELS_H__
#define __GST_RUDP_LEVELS_H__

#include <gst/gst.h>
#include <gst/rudp/rudp-prelude.h>

G_BEGIN_DECLS

#define GST_RUDP_DEFAULT_N_LEVELS 10
#define GST_RUDP_MAX_LEVELS 64
/* Default table: level i = (i + 1) * 160 kbit/s (160 kbit/s .. 1.6 Mbit/s,
 * i.e. 20,000 .. 200,000 bytes/s) */
#define GST_RUDP_DEFAULT_LEVEL_STEP 160000

typedef struct {
  guint n;
  guint64 rate[GST_RUDP_MAX_LEVELS];    /* bit/s, increasing */
} GstRudpLevels;

TWOFLOW_RUDP_API
void gst_rudp_levels_init_default (GstRudpLevels * l);
/* FALSE unless 1..GST_RUDP_MAX_LEVELS strictly increasing positive rates */
TWOFLOW_RUDP_API
gboolean gst_rudp_levels_set (GstRudpLevels * l, const guint64 * rates,
    guint n);
/* Highest level whose rate is at most @bitrate (+0.1% for the
 * rounding of TMMBR's mantissa); 0 when none is. */
TWOFLOW_RUDP_API
guint gst_rudp_levels_for_bitrate (const GstRudpLevels * l, guint64 bitrate);
/* "160000,320000,..." ; parse accepts commas, spaces or semicolons */
TWOFLOW_RUDP_API
gchar *gst_rudp_levels_to_string (const GstRudpLevels * l);
TWOFLOW_RUDP_API
gboolean gst_rudp_levels_from_string (GstRudpLevels * l, const gchar * str);

G_END_DECLS

#endif
