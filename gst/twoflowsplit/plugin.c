/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: the twoflowsplit plugin */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gsttwoflowsplit.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (twoflowsplit, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, twoflowsplit,
    "Splits video into an essential and an enhanced flow", plugin_init,
    VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
