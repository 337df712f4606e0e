/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the control channel's framing, shared by twoflow-server and
 * twoflow-proxy: bounded lines, their nesting depth, JSON objects (the
 * typed requests and replies: twoflow-protocol.h)
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_CONTROL_H__
#define __TWOFLOW_CONTROL_H__

#include <gio/gio.h>
#include <gst/gst.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* The control protocol is JSON lines over TCP (docs/system.md). */
#define TWOFLOW_CONTROL_DEFAULT_PORT 5500
/* Deepest nesting of arrays and objects a control line may have (stats
 * replies nest a few levels): checked before parsing, whatever the
 * line-length limit. */
#define TWOFLOW_CONTROL_MAX_DEPTH 32

gchar *twoflow_json_to_line (JsonObject * obj);
gboolean twoflow_json_depth_ok (const gchar * line, guint max_depth);
JsonObject *twoflow_json_from_line (const gchar * line, GError ** error);
gboolean twoflow_control_send (GOutputStream * out, JsonObject * obj,
    GError ** error);
JsonObject *twoflow_control_recv (GDataInputStream * in,
    GCancellable * cancellable, GError ** error);

const gchar *twoflow_json_get_string (JsonObject * obj, const gchar * name,
    const gchar * dflt);
gint64 twoflow_json_get_int (JsonObject * obj, const gchar * name,
    gint64 dflt);
gdouble twoflow_json_get_double (JsonObject * obj, const gchar * name,
    gdouble dflt);
void twoflow_json_add_structure (JsonObject * obj, const gchar * name,
    const GstStructure * s);

/* A bounded line reader: bytes are appended, complete lines taken out;
 * a line longer than max (without its newline) is an error. */
typedef struct
{
  GString *buf;
  gsize max;
} TwoflowLineBuffer;

void twoflow_line_buffer_init (TwoflowLineBuffer * lb, gsize max);
void twoflow_line_buffer_clear (TwoflowLineBuffer * lb);
/* FALSE: the pending line is over the limit (the buffer is emptied) */
gboolean twoflow_line_buffer_append (TwoflowLineBuffer * lb,
    const gchar * data, gsize len);
/* the next complete line (newline and \r removed; g_free it), or NULL */
gchar *twoflow_line_buffer_pop (TwoflowLineBuffer * lb);

G_END_DECLS
#endif
