/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the session rate controller of a session
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_RATECTL_H__
#define __TWOFLOW_SERVER_RATECTL_H__

#include <gst/gst.h>
#include <gst/twoflow/networkcongestion.h>
#include "twoflow-server-session.h"

G_BEGIN_DECLS

GstStructure *get_stats (GstElement * e);
void rc_start (Session * s);
void enh_set_rate (Session * s, guint64 sched_rate);
void rc_handle_congestion (Session * s, GstNetworkCongestionType type,
    GstClockTime srtt);
void twoflow_server_ratectl_init (void);

G_END_DECLS
#endif
