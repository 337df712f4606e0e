/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: the erap plugin (erapsink, erapsrc) */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gsterapsink.h"
#include "gsterapsrc.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ret = FALSE;

  ret |= GST_ELEMENT_REGISTER (erapsink, plugin);
  ret |= GST_ELEMENT_REGISTER (erapsrc, plugin);
  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, erap,
    "ERAP: reliable, rate-based, TCP-friendly transport over UDP",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
