/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the control port
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_LISTENER_H__
#define __TWOFLOW_SERVER_LISTENER_H__

#include <gio/gio.h>

G_BEGIN_DECLS

gboolean listener_start (GError ** error);
void listener_stop (void);

G_END_DECLS
#endif
