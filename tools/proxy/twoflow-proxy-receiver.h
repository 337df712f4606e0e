/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — the receiving bin: the two flows' receivers and the merge
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROXY_RECEIVER_H__
#define __TWOFLOW_PROXY_RECEIVER_H__

#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include "twoflow-proxy-session.h"

G_BEGIN_DECLS

GstElement *build_receive_bin (ProxySession * ps);
void twoflow_proxy_receiver_init (void);

G_END_DECLS
#endif
