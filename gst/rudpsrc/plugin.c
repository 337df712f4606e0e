/* twoflow: the rudpsrc plugin */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstrudpsrc.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (rudpsrc, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, rudpsrc,
    "rUDP receiver: RTP/UDP with receiver-driven rate levels",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
