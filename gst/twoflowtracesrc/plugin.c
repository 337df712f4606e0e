/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: the twoflowtracesrc plugin */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gsttwoflowtracesrc.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (twoflowtracesrc, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, twoflowtracesrc,
    "Replays video frame traces as twoflow records", plugin_init,
    VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
