/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — admission control of its sessions
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROXY_ADMISSION_H__
#define __TWOFLOW_PROXY_ADMISSION_H__

#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include "twoflow-admission.h"
#include "twoflow-proxy-session.h"

G_BEGIN_DECLS

/* the admitted sessions (twoflow_proxy_admission_init) */
extern GstTwoflowAdmission *admission;

/* who keeps the last decisions (the HTTP side's /status) */
void admission_set_decision_hook (void (*hook) (JsonObject * log));

void admission_add (ProxySession * ps);
gboolean admission_check (const gchar * video, JsonObject * info,
    const gchar * stage, gchar ** reason);
void twoflow_proxy_admission_init (void);

G_END_DECLS
#endif
