/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — a session's report: what it received, what its output lacks
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROXY_REPORT_H__
#define __TWOFLOW_PROXY_REPORT_H__

#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include "twoflow-proxy-session.h"

G_BEGIN_DECLS

/* What @ps received and what its output lacks (docs/system.md,
 * "Delivery"), as the HTTP status, SESSION-END and a fetch's result show
 * it */
JsonObject *proxy_session_report (ProxySession * ps);
void twoflow_proxy_report_init (void);

G_END_DECLS
#endif
