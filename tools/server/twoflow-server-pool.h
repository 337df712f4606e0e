/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the session pool
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_POOL_H__
#define __TWOFLOW_SERVER_POOL_H__

#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include "twoflow-protocol.h"
#include "twoflow-server-session.h"

G_BEGIN_DECLS

/* How the pool tells a session's owner */
typedef struct
{
  /* an event line (progress, done, error) for @owner */
  void (*send) (gpointer owner, JsonObject * obj);
} SessionPoolCallbacks;

void session_pool_set_callbacks (const SessionPoolCallbacks * cb);
Session *session_new (gpointer owner, const gchar * identity,
    const gchar * peer, const TwoflowPlayRequest * req, GError ** error);
void session_destroy (Session * s, const gchar * why);
void session_maybe_finish (Session * s);
void session_fail (Session * s, const gchar * what, const gchar * message);
Session *session_lookup_owned (const gchar * identity, guint id,
    GError ** error);
guint session_pool_n_owned (gpointer owner);
void session_pool_destroy_owned (gpointer owner, const gchar * why);
guint session_pool_size (void);
guint64 session_pool_total (void);
GList *session_pool_list (void);
void twoflow_server_pool_init (void);

G_END_DECLS
#endif
