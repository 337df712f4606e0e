/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — the HTTP side
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROXY_WEB_H__
#define __TWOFLOW_PROXY_WEB_H__

#include <glib.h>

G_BEGIN_DECLS

/* the session list and the decisions kept (every mode) */
void twoflow_proxy_web_init (void);
/* HTTP listening (--http-port), the rates' timer */
void web_start (void);
/* SIGTERM/SIGINT (@loop: the main loop) and SIGHUP */
gboolean web_shutdown (gpointer loop);
gboolean web_reload (gpointer data);

G_END_DECLS
#endif
