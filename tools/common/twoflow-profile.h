/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The profile of a video as the server's scan sees it (sans-IO): frames and
 * bytes per flow, duration, mean and peak rates (peaks over windows of
 * decode time), audio, and the rUDP rate levels derived from them. Fed the
 * split's records in any order of the two flows (handle_record()). A
 * pure function of the records: no clock, no timer.
 */
#ifndef __GST_TWOFLOW_PROFILE_H__
#define __GST_TWOFLOW_PROFILE_H__

#include <gst/gst.h>
#include <gst/twoflow/twoflowframe.h>

G_BEGIN_DECLS

#define GST_TWOFLOW_PROFILE_N_LEVELS 10

/* The result; rates in bit/s. */
typedef struct {
  GstTwoflowCodec codec;
  guint64 frames, essential_frames, enhanced_frames, audio_records;
  guint64 bytes, essential_bytes, enhanced_bytes, audio_bytes;
  GstClockTime start;           /* first timestamp seen, NONE if none */
  GstClockTime duration;        /* end of the last frame - start */
  guint64 peak_rate, mean_rate;
  guint64 essential_peak_rate, essential_mean_rate;   /* audio included */
  guint64 enhanced_peak_rate, enhanced_mean_rate;
  guint64 audio_mean_rate;
} GstTwoflowProfileInfo;

typedef struct _GstTwoflowProfile GstTwoflowProfile;

GstTwoflowProfile * gst_twoflow_profile_new (GstClockTime window);
void gst_twoflow_profile_free (GstTwoflowProfile * p);
void gst_twoflow_profile_handle_record (GstTwoflowProfile * p,
    const GstTwoflowFrameHeader * hdr, gsize record_size);
void gst_twoflow_profile_get_info (GstTwoflowProfile * p,
    GstTwoflowProfileInfo * info);

void gst_twoflow_profile_levels (guint64 enhanced_mean_rate,
    guint64 enhanced_peak_rate, guint64 levels[GST_TWOFLOW_PROFILE_N_LEVELS]);

G_END_DECLS

#endif
