/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — erapsink's Libra parameters as one group of properties
 * (libra-*, capacity-bitrate, and their deprecated names), installed, set
 * and read here as srt's gst_srt_object_install_properties_helper() does,
 * so that erapsink's class_init does not carry twenty of them. The group
 * takes GST_ERAP_LIBRA_N_PROPS consecutive ids from @first_id; set/get take
 * the id relative to it and return FALSE for one not theirs. */
#ifndef __GST_ERAP_SINK_LIBRA_H__
#define __GST_ERAP_SINK_LIBRA_H__

#include <gst/gst.h>
#include <gst/erap/eraplibra.h>

G_BEGIN_DECLS

enum {
  GST_ERAP_LIBRA_PROP_A,
  GST_ERAP_LIBRA_PROP_A_TIME,
  GST_ERAP_LIBRA_PROP_B,
  GST_ERAP_LIBRA_PROP_B_TIME,
  GST_ERAP_LIBRA_PROP_X,
  GST_ERAP_LIBRA_PROP_Y,
  GST_ERAP_LIBRA_PROP_CAPACITY,
  GST_ERAP_LIBRA_PROP_SEED,
  GST_ERAP_LIBRA_PROP_COMPENSATION,
  GST_ERAP_LIBRA_PROP_STATE,
  GST_ERAP_LIBRA_PROP_QUEUE_REF,
  GST_ERAP_LIBRA_PROP_QUEUE_REF_TIME,
  GST_ERAP_LIBRA_PROP_LOSS_DIVISOR,
  GST_ERAP_LIBRA_PROP_LOSS_MEMORY,
  GST_ERAP_LIBRA_PROP_LOSS_MEMORY_TIME,
  GST_ERAP_LIBRA_PROP_TCP_RTT,
  GST_ERAP_LIBRA_PROP_RENO_RTT,
  GST_ERAP_LIBRA_PROP_TCP_BASE_RTT,
  GST_ERAP_LIBRA_PROP_RENO_BASE_RTT,
  GST_ERAP_LIBRA_N_PROPS
};

void gst_erap_libra_props_install (GObjectClass * klass, guint first_id);
/* The parameters' defaults, as the properties give them. */
void gst_erap_libra_props_init (GstErapLibraParams * p);
gboolean gst_erap_libra_props_set (GstErapLibraParams * p, guint id,
    const GValue * value);
gboolean gst_erap_libra_props_get (const GstErapLibraParams * p, guint id,
    GValue * value);

G_END_DECLS

#endif /* __GST_ERAP_SINK_LIBRA_H__ */
