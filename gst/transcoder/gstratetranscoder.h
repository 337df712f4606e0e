/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder: MPEG-1/2 and H.264 rate transcoder following congestion
 * events. The element; its codecs are behind gstratetranscoder-codec.h.
 */
#ifndef __GST_RATE_TRANSCODER_H__
#define __GST_RATE_TRANSCODER_H__

#include <gst/gst.h>
#include <gst/ratecontrol/ratecontrol.h>

G_BEGIN_DECLS

#define GST_TYPE_RATE_TRANSCODER (gst_rate_transcoder_get_type ())
G_DECLARE_FINAL_TYPE (GstRateTranscoder, gst_rate_transcoder, GST,
    RATE_TRANSCODER, GstElement)

#define GST_TYPE_RATE_TRANSCODER_KEEP (gst_rate_transcoder_keep_get_type ())
GType gst_rate_transcoder_keep_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (ratetranscoder);

G_END_DECLS

#endif
