/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The transcoder plugin: ratetranscoder.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstratetranscoder.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (ratetranscoder, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, ratetranscoder,
    "MPEG rate transcoder following congestion events (libavcodec)",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
