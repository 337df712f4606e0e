/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: helpers shared by the ratetranscoder tests (MPEG-2, H.264,
 * H.265, AV1). */
#ifndef __TRANSCODER_TEST_UTIL_H__
#define __TRANSCODER_TEST_UTIL_H__

#include <gst/gst.h>
#include <gst/check/gstharness.h>

G_BEGIN_DECLS

/* Runs @desc (a launch line ending in an appsink named "sink") to EOS and
 * returns its buffers; *@caps (if given and NULL) gets the first caps. */
GPtrArray *transcoder_test_generate (const gchar * desc, GstCaps ** caps);
/* Same size and bytes. */
gboolean transcoder_test_buffers_equal (GstBuffer * a, GstBuffer * b);
/* bit/s of @bufs as 25 frames a second. */
gdouble transcoder_test_bitrate (GPtrArray * bufs);


/* An array that owns its buffers. */
GPtrArray *transcoder_test_new_array (void);
/* The buffer of @bufs with that PTS, or NULL. */
GstBuffer *transcoder_test_find_by_pts (GPtrArray * bufs, GstClockTime pts);
/* bit/s of @bufs[from, to) at 25 frames a second (a dropped picture
 * counts as zero bytes). */
gdouble transcoder_test_rate (GPtrArray * bufs, guint from, guint to);
/* A ratetranscoder harness with src caps @caps and no additive recovery
 * (rates measured against the target). */
GstHarness *transcoder_test_harness (GstCaps * caps);
/* Pushes @in[from, to), collecting what leaves in @out. */
void transcoder_test_push_range (GstHarness * h, GPtrArray * in, guint from,
    guint to, GPtrArray * out);
/* EOS, collecting what leaves in @out. */
void transcoder_test_finish (GstHarness * h, GPtrArray * out);
/* A guint64 field of the element's stats (failing when absent). */
guint64 transcoder_test_stat_u64 (GstHarness * h, const gchar * field);
/* Decodes @bufs (caps @caps) with @decoder (a launch line fragment, e.g.
 * "h265parse ! avdec_h265"), failing on any error or warning; returns the
 * number of pictures decoded, and in @format (if given) the raw video
 * format. */
guint transcoder_test_decode (GPtrArray * bufs, GstCaps * caps,
    const gchar * decoder, gchar ** format);

G_END_DECLS

#endif
