/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: the twoflowmerge plugin */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gsttwoflowmerge.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (twoflowmerge, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, twoflowmerge,
    "Merges the essential and enhanced flows of a video", plugin_init,
    VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
