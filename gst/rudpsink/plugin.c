/* twoflow: the rudpsink plugin */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstrudpsink.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (rudpsink, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, rudpsink,
    "rUDP sender: paced RTP/UDP with one shared timer for all flows",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
