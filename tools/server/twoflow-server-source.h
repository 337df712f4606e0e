/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — media input: filesrc ! parsebin, the streams selected,
 * the start
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_SOURCE_H__
#define __TWOFLOW_SERVER_SOURCE_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* the scan's index of a video: its key frames (KeyFrame: PTS, frames
 * before it) and its audio buffers' PTS */
typedef struct
{
  GArray *keyframes;
  GArray *audio_pts;
  /* the running times of the first picture (in decode order) and the
   * first audio buffer (NONE: none), the source's A/V offset */
  GstClockTime first_video_rt, first_audio_rt;
} VideoIndex;

/* a key frame of the scan's index: its PTS and the video buffers (frames,
 * decode order) before it */
typedef struct
{
  GstClockTime pts;
  guint64 index;
  GstClockTime rt;              /* running time of its DTS (or PTS) */
} KeyFrame;

GstElement *make_media_source (GstElement * pipe, const gchar * path,
    const gchar * video_track, const gchar * audio_track, GstClockTime start,
    GstClockTime start_rt, VideoIndex * index, GstElement * video_next,
    GstElement * split);
gchar *audio_codec_name (const GstCaps * caps);
GstElement *media_source_find (GstElement * pipe);
gboolean media_source_seen_streams (GstElement * parsebin);
void twoflow_server_source_init (void);

G_END_DECLS
#endif
