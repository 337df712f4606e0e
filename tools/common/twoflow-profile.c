/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The profile of a video, sans-IO (see twoflow-profile.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include "twoflow-profile.h"

/* A window index past this is a broken timestamp, not a week of video. */
#define MAX_WINDOWS 1000000

enum { FLOW_ALL, FLOW_ESSENTIAL, FLOW_ENHANCED, N_FLOWS };

struct _GstTwoflowProfile {
  GstClockTime window;
  GstTwoflowProfileInfo info;
  GstClockTime end;
  /* bytes per window of decode time, from the first window seen; records
   * may come a little out of order (two flows), so the origin can move back */
  GArray *windows[N_FLOWS];
  gint64 origin;                /* window number of index 0 */
};

/**
 * gst_twoflow_profile_new: (skip)
 *
 * The video profile core; C only (an opaque struct, not a registered type).
 */
GstTwoflowProfile *
gst_twoflow_profile_new (GstClockTime window)
{
  GstTwoflowProfile *p = g_new0 (GstTwoflowProfile, 1);
  guint i;

  g_return_val_if_fail (window > 0, NULL);
  p->window = window;
  p->info.start = GST_CLOCK_TIME_NONE;
  for (i = 0; i < N_FLOWS; i++)
    p->windows[i] = g_array_new (FALSE, TRUE, sizeof (guint64));
  return p;
}

void
gst_twoflow_profile_free (GstTwoflowProfile * p)
{
  guint i;

  if (!p)
    return;
  for (i = 0; i < N_FLOWS; i++)
    g_array_free (p->windows[i], TRUE);
  g_free (p);
}

static void
window_add (GstTwoflowProfile * p, guint flow, GstClockTime t, guint64 bytes)
{
  gint64 w = t / p->window;
  GArray *a = p->windows[flow];
  guint i;

  if (a->len == 0 && p->windows[FLOW_ALL]->len == 0)
    p->origin = w;
  if (w < p->origin) {
    guint shift = p->origin - w;

    if (p->windows[FLOW_ALL]->len + shift > MAX_WINDOWS)
      return;
    for (i = 0; i < N_FLOWS; i++) {
      GArray *b = p->windows[i];
      guint64 zero[64] = { 0, };
      guint left = shift;

      while (left > 0) {
        guint n = MIN (left, G_N_ELEMENTS (zero));
        g_array_prepend_vals (b, zero, n);
        left -= n;
      }
    }
    p->origin = w;
  }
  if (w - p->origin >= MAX_WINDOWS)
    return;
  if (a->len <= w - p->origin)
    g_array_set_size (a, w - p->origin + 1);
  g_array_index (a, guint64, w - p->origin) += bytes;
}

/**
 * gst_twoflow_profile_handle_record:
 * @record_size: the whole record's bytes (header and payload), as sent
 *
 * Counts one record of either flow: frames by DTS (else PTS), audio by PTS;
 * caps and end records carry no media and are not counted.
 */
void
gst_twoflow_profile_handle_record (GstTwoflowProfile * p,
    const GstTwoflowFrameHeader * hdr, gsize record_size)
{
  GstTwoflowProfileInfo *in = &p->info;
  GstClockTime t;
  gboolean essential;

  if (hdr->kind == GST_TWOFLOW_RECORD_AUDIO) {
    t = GST_CLOCK_TIME_IS_VALID (hdr->pts) ? hdr->pts : 0;
    if (!GST_CLOCK_TIME_IS_VALID (in->start) || t < in->start)
      in->start = t;
    window_add (p, FLOW_ALL, t, record_size);
    window_add (p, FLOW_ESSENTIAL, t, record_size);
    in->audio_records++;
    in->audio_bytes += record_size;
    in->bytes += record_size;
    in->essential_bytes += record_size;
    return;
  }
  if (hdr->kind != GST_TWOFLOW_RECORD_FRAME)
    return;

  t = GST_CLOCK_TIME_IS_VALID (hdr->dts) ? hdr->dts : hdr->pts;
  if (!GST_CLOCK_TIME_IS_VALID (t))
    t = 0;
  if (!GST_CLOCK_TIME_IS_VALID (in->start) || t < in->start)
    in->start = t;
  essential = (hdr->flags & GST_TWOFLOW_FLAG_ESSENTIAL) != 0;
  window_add (p, FLOW_ALL, t, record_size);
  window_add (p, essential ? FLOW_ESSENTIAL : FLOW_ENHANCED, t, record_size);
  in->frames++;
  in->bytes += record_size;
  if (essential) {
    in->essential_frames++;
    in->essential_bytes += record_size;
  } else {
    in->enhanced_frames++;
    in->enhanced_bytes += record_size;
  }
  if (GST_CLOCK_TIME_IS_VALID (hdr->duration))
    t += hdr->duration;
  p->end = MAX (p->end, t);
  if (in->codec == GST_TWOFLOW_CODEC_UNKNOWN)
    in->codec = hdr->codec;
}

static guint64
peak_rate (GstTwoflowProfile * p, guint flow)
{
  GArray *a = p->windows[flow];
  guint64 m = 0;
  guint i;

  for (i = 0; i < a->len; i++)
    m = MAX (m, g_array_index (a, guint64, i));
  return gst_util_uint64_scale (m * 8, GST_SECOND, p->window);
}

static guint64
mean_rate (guint64 bytes, GstClockTime duration)
{
  return gst_util_uint64_scale (bytes * 8, GST_SECOND, MAX (duration, 1));
}

/**
 * gst_twoflow_profile_get_info:
 * @info: (out caller-allocates): the profile so far
 */
void
gst_twoflow_profile_get_info (GstTwoflowProfile * p,
    GstTwoflowProfileInfo * info)
{
  *info = p->info;
  info->duration = GST_CLOCK_TIME_IS_VALID (info->start)
      && p->end > info->start ? p->end - info->start : 0;
  info->peak_rate = peak_rate (p, FLOW_ALL);
  info->essential_peak_rate = peak_rate (p, FLOW_ESSENTIAL);
  info->enhanced_peak_rate = peak_rate (p, FLOW_ENHANCED);
  info->mean_rate = mean_rate (info->bytes, info->duration);
  info->essential_mean_rate = mean_rate (info->essential_bytes,
      info->duration);
  info->enhanced_mean_rate = mean_rate (info->enhanced_bytes, info->duration);
  info->audio_mean_rate = mean_rate (info->audio_bytes, info->duration);
}

/**
 * gst_twoflow_profile_levels:
 * @levels: (out caller-allocates) (array fixed-size=10): bit/s, rising
 *
 * The rUDP rate levels of an enhanced flow: geometric from a quarter of its
 * mean to twice its peak (plus 5 % for RTP/UDP/IP), at least 16 kbit/s and
 * spanning at least a factor 2, so the top levels carry the flow
 * untranscoded and the lower ones leave the transcoder room.
 */
void
gst_twoflow_profile_levels (guint64 enhanced_mean_rate,
    guint64 enhanced_peak_rate, guint64 levels[GST_TWOFLOW_PROFILE_N_LEVELS])
{
  gdouble lo = MAX (enhanced_mean_rate / 4.0, 16000.0);
  gdouble hi = MAX (enhanced_peak_rate * 2.0 * 1.05, lo * 2.0);
  guint i;

  for (i = 0; i < GST_TWOFLOW_PROFILE_N_LEVELS; i++)
    levels[i] = (guint64) (lo * pow (hi / lo,
            i / (GST_TWOFLOW_PROFILE_N_LEVELS - 1.0)));
}
