/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — --fetch and --prestage: one session into a file
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROXY_FETCH_H__
#define __TWOFLOW_PROXY_FETCH_H__

#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include "twoflow-proxy-session.h"

G_BEGIN_DECLS

int run_fetch (const gchar * video, const gchar * output, gboolean prestage);
void twoflow_proxy_fetch_init (void);

G_END_DECLS
#endif
