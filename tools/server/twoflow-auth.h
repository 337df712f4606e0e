/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — who may use the control channel, and how much
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_AUTH_H__
#define __TWOFLOW_AUTH_H__

#include <gio/gio.h>

G_BEGIN_DECLS

/* The per-proxy tokens of --tokens FILE: lines "name token" ('#' starts a
 * comment). */
typedef struct _TwoflowTokens TwoflowTokens;

TwoflowTokens *twoflow_tokens_load (const gchar * path, GError ** error);
guint twoflow_tokens_count (TwoflowTokens * t);
/* The name the token belongs to, or NULL. Every token is compared in
 * constant time (no early exit on the first differing byte). */
const gchar *twoflow_tokens_check (TwoflowTokens * t, const gchar * token);
void twoflow_tokens_free (TwoflowTokens * t);

/* PLAY's host against the control peer: TRUE when they are the same
 * address (IPv4-mapped IPv6 counts as its IPv4 address). */
gboolean twoflow_same_address (const gchar * a, const gchar * b);

G_END_DECLS
#endif
