/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — a session's output: parsers, audio, the muxer
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROXY_OUTPUT_H__
#define __TWOFLOW_PROXY_OUTPUT_H__

#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include "twoflow-proxy-session.h"

G_BEGIN_DECLS

/* the audio branch: the receiving bin's "audio" pad when it comes (a
 * seek's new bin is linked to the same one) */
typedef struct
{
  GstElement *aqueue;
  gboolean linked;
} AudioLink;

/* Why AV1 has no MPEG-TS output (RTSP, HLS, .ts fetches) */
#define AV1_NO_TS "GStreamer 1.22 has no AV1-in-MPEG-TS muxer and no AV1 " \
  "RTP payloader; fetch it to .mkv or .mp4"
#define RTSP_NO_AV1 "AV1 video cannot be served over RTSP: " AV1_NO_TS
#define HLS_NO_AV1 "AV1 video has no HLS for this page (its segments are " \
  "MPEG-TS): " AV1_NO_TS

const gchar *container_for (const gchar * path, const gchar * codec);
void connect_audio_link (GstElement * recv, AudioLink * al);
GstElement *build_mux (GstBin * bin, ProxySession * ps, GstElement * recv,
    const gchar * container, GError ** error);
GstElement *build_annexb (GstBin * bin, ProxySession * ps, GstElement * recv,
    GError ** error);
void startup_mark_pad (ProxySession * ps, const gchar * stage,
    GstElement * e, const gchar * pad_name);
void startup_mark_now (ProxySession * ps, const gchar * stage);
void twoflow_proxy_output_init (void);
void twoflow_proxy_output_preload (void);

G_END_DECLS
#endif
