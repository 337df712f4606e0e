/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — its HTTP side (/metrics, /status, /healthz) and SIGHUP
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_WEB_H__
#define __TWOFLOW_SERVER_WEB_H__

#include <glib.h>

G_BEGIN_DECLS

void twoflow_server_web_start (void);
gboolean twoflow_server_web_reload (gpointer data);

G_END_DECLS
#endif
