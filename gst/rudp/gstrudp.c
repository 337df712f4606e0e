/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: the rudp plugin (rudpsink, rudpsrc), as gst/udp/gstudp.c */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstrudpsink.h"
#include "gstrudpsrc.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ret = FALSE;

  ret |= GST_ELEMENT_REGISTER (rudpsink, plugin);
  ret |= GST_ELEMENT_REGISTER (rudpsrc, plugin);
  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, rudp,
    "rUDP: paced RTP/UDP with one shared timer for all flows and "
    "receiver-driven rate levels",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
