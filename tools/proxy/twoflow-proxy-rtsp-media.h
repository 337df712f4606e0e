/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — the RTSP media: seeking, the SDP's range, DESCRIBE's
 * stand-in
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROXY_RTSP_MEDIA_H__
#define __TWOFLOW_PROXY_RTSP_MEDIA_H__

#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include <gst/rtsp-server/rtsp-server.h>
#include "twoflow-proxy-session.h"

G_BEGIN_DECLS

/* the RTSP client threads' admission decisions and session set-ups take
 * turns */
extern GRecMutex rtsp_lock;

GType twoflow_pipeline_get_type (void);
GType twoflow_media_get_type (void);

gboolean session_seekable (ProxySession * ps, gint64 * duration);
gboolean seek_target (ProxySession * ps, gdouble * t, gint64 duration);
gboolean range_start (gdouble * t);
GstElement *stand_in_source (gboolean eos);
GstElement *describe_stand_in (const gchar * video);
/* a media's session is let go (a weak reference's notify: a media's end,
 * a seek's replaced session) and freed in the main loop */
void release_session (gpointer data, GObject * where_the_media_was);
void media_unprepared (GstRTSPMedia * media, gpointer data);
void twoflow_proxy_rtsp_media_init (void);

G_END_DECLS
#endif
