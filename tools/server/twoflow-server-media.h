/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — a session's two pipelines
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_MEDIA_H__
#define __TWOFLOW_SERVER_MEDIA_H__

#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include "twoflow-server-session.h"

G_BEGIN_DECLS

/* How the pipelines tell their session's owner (the pool) */
typedef struct
{
  /* a flow's EOS (ess_done or enh_done is set) */
  void (*flow_done) (Session * s);
  /* an error of the flow "essential" or "enhanced" */
  void (*flow_error) (Session * s, const gchar * flow, const gchar * message);
} MediaCallbacks;

void media_set_callbacks (const MediaCallbacks * cb);
gboolean build_essential (Session * s, GError ** error);
gboolean build_enhanced (Session * s, GError ** error);
gboolean ess_bus_cb (GstBus * bus, GstMessage * msg, gpointer user_data);
gboolean enh_bus_cb (GstBus * bus, GstMessage * msg, gpointer user_data);
gboolean start_enhanced_cb (gpointer user_data);
gboolean total_rate_cb (gpointer user_data);
JsonObject *session_stats (Session * s);
void twoflow_server_media_init (void);

G_END_DECLS
#endif
