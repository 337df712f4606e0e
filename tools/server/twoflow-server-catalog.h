/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the catalog: the videos of --dir and their scans
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_CATALOG_H__
#define __TWOFLOW_SERVER_CATALOG_H__

#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include "twoflow-profile.h"
#include "twoflow-smoothing.h"
#include "twoflow-server-source.h"

G_BEGIN_DECLS

/* enhanced-flow smoothing (docs/system.md, "Enhanced-flow smoothing") */
#define ENHANCED_MTU 1400       /* rtpgstpay mtu */

typedef struct
{
  gchar *name;
  gchar *path;
  gboolean is_trace;
  gint policy;                  /* 0 = i, 1 = ip */
  gchar *codec;
  gchar *video_track, *audio_track;     /* the selection scanned */
  gchar *audio_codec;           /* NULL: no audio */
  guint64 audio_records, audio_bytes, audio_mean;
  guint64 frames, ess_frames, enh_frames;
  guint64 bytes, ess_bytes, enh_bytes;
  GstClockTime duration;
  /* bit/s; peaks over 1 s windows of decode time */
  guint64 peak_rate, mean_rate, ess_peak, ess_mean, enh_peak, enh_mean;
  guint64 levels[GST_TWOFLOW_PROFILE_N_LEVELS];  /* rUDP rate levels, bit/s */
  /* the frames' decode times and sizes, for the smoothing schedules */
  GstTwoflowSmoothing *smoothing;
  GHashTable *schedules;        /* "pacing/W/L/skip" -> Schedule */
  GHashTable *startups;         /* "T" -> GstTwoflowStartupPlan */
  VideoIndex index;             /* where a session can start (seeking) */
} VideoInfo;

void video_info_free (VideoInfo * v);
VideoInfo *video_scan (const gchar * name, gint policy,
    const gchar * video_track, const gchar * audio_track, GError ** error);
GstClockTime video_start_pts (VideoInfo * v, gdouble * start,
    guint64 * frames, guint64 * audio, GstClockTime * rt);
gchar *catalog_reason (const gchar * name, gboolean * checking,
    gchar ** codec);
void catalog_queue_all (void);
void video_info_to_json (VideoInfo * v, JsonObject * o);
GstClockTime video_audio_lead (const VideoInfo * v);
GstClockTime video_audio_lead_early (const VideoInfo * v);
gchar *levels_string (VideoInfo * v);
guint catalog_n_scanned (void);
guint catalog_forget_unused (GHashTable * used);
void twoflow_server_catalog_init (void);

G_END_DECLS
#endif
