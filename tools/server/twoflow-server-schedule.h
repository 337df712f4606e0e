/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — a video's schedules: smoothing windows, the start-up ramp
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_SCHEDULE_H__
#define __TWOFLOW_SERVER_SCHEDULE_H__

#include "twoflow-smoothing.h"
#include <gst/twoflow/twoflowstartup.h>
#include "twoflow-server-catalog.h"

G_BEGIN_DECLS

/* The enhanced flow's schedule for one smoothing window (read by the
 * sessions' streaming threads: never changed once made). */
typedef struct
{
  GstTwoflowSmoothing *sm;
  GstTwoflowSmoothingInfo info;
} Schedule;

const gchar *pacing_mode (const VideoInfo * v);
gboolean pacing_total (const VideoInfo * v);
gdouble smoothing_lead_for (gdouble w);
Schedule *video_schedule_for (VideoInfo * v, gdouble segment_duration,
    gdouble lead, gint skip, const gchar * essential, gdouble slead);
const GstTwoflowStartupPlan *video_startup (VideoInfo * v,
    gdouble segment_duration);
const GstTwoflowStartupPlan *video_startup_from (VideoInfo * v,
    gdouble segment_duration, GstClockTime from);
Schedule *video_schedule (VideoInfo * v, gdouble segment_duration);
gdouble schedule_playout (Schedule * sc);
void video_info_rates_to_json (VideoInfo * v, JsonObject * o,
    gdouble segment_duration, Schedule * sc);
void twoflow_server_schedule_init (void);

G_END_DECLS
#endif
