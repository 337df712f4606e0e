/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: helpers shared by the ratetranscoder tests (MPEG-2 and H.264). */
#ifndef __TRANSCODER_TEST_UTIL_H__
#define __TRANSCODER_TEST_UTIL_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* Runs @desc (a launch line ending in an appsink named "sink") to EOS and
 * returns its buffers; *@caps (if given and NULL) gets the first caps. */
GPtrArray *transcoder_test_generate (const gchar * desc, GstCaps ** caps);
/* Same size and bytes. */
gboolean transcoder_test_buffers_equal (GstBuffer * a, GstBuffer * b);
/* bit/s of @bufs as 25 frames a second. */
gdouble transcoder_test_bitrate (GPtrArray * bufs);

G_END_DECLS

#endif
