/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the control channel's framing, shared by twoflow-server and
 * twoflow-proxy: bounded lines, their nesting depth, JSON objects
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#include <gst/gst.h>
#include <string.h>
#include "twoflow-control.h"

gchar *
twoflow_json_to_line (JsonObject * obj)
{
  JsonNode *node = json_node_new (JSON_NODE_OBJECT);
  JsonGenerator *gen = json_generator_new ();
  gchar *text;

  json_node_set_object (node, obj);
  json_generator_set_root (gen, node);
  json_generator_set_pretty (gen, FALSE);
  text = json_generator_to_data (gen, NULL);
  g_object_unref (gen);
  json_node_unref (node);
  return text;
}

/* json-glib parses arrays and objects by recursion: a stranger's line of
 * [[[[... would exhaust the stack long before any size limit. The nesting
 * is counted here, outside strings, before json-glib sees the line. */
gboolean
twoflow_json_depth_ok (const gchar * line, guint max_depth)
{
  guint depth = 0;
  gboolean in_string = FALSE, escaped = FALSE;
  const gchar *p;

  for (p = line; *p; p++) {
    if (in_string) {
      if (escaped)
        escaped = FALSE;
      else if (*p == '\\')
        escaped = TRUE;
      else if (*p == '"')
        in_string = FALSE;
    } else if (*p == '"') {
      in_string = TRUE;
    } else if (*p == '[' || *p == '{') {
      if (++depth > max_depth)
        return FALSE;
    } else if ((*p == ']' || *p == '}') && depth > 0) {
      depth--;
    }
  }
  return TRUE;
}

JsonObject *
twoflow_json_from_line (const gchar * line, GError ** error)
{
  JsonParser *parser;
  JsonObject *obj = NULL;

  if (!twoflow_json_depth_ok (line, TWOFLOW_CONTROL_MAX_DEPTH)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
        "control line nested deeper than %d", TWOFLOW_CONTROL_MAX_DEPTH);
    return NULL;
  }
  parser = json_parser_new ();
  if (json_parser_load_from_data (parser, line, -1, error)) {
    JsonNode *root = json_parser_get_root (parser);
    if (root && JSON_NODE_HOLDS_OBJECT (root))
      obj = json_object_ref (json_node_get_object (root));
    else
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
          "control line is not a JSON object");
  }
  g_object_unref (parser);
  return obj;
}

gboolean
twoflow_control_send (GOutputStream * out, JsonObject * obj, GError ** error)
{
  gchar *text = twoflow_json_to_line (obj);
  gchar *line = g_strconcat (text, "\n", NULL);
  gboolean ok;

  ok = g_output_stream_write_all (out, line, strlen (line), NULL, NULL, error);
  g_free (line);
  g_free (text);
  return ok;
}

JsonObject *
twoflow_control_recv (GDataInputStream * in, GCancellable * cancellable,
    GError ** error)
{
  gchar *line = g_data_input_stream_read_line_utf8 (in, NULL, cancellable,
      error);
  JsonObject *obj;

  if (line == NULL) {
    if (error && *error == NULL)
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED,
          "control connection closed");
    return NULL;
  }
  obj = twoflow_json_from_line (line, error);
  g_free (line);
  return obj;
}

const gchar *
twoflow_json_get_string (JsonObject * obj, const gchar * name,
    const gchar * dflt)
{
  JsonNode *n = obj ? json_object_get_member (obj, name) : NULL;
  if (n && JSON_NODE_HOLDS_VALUE (n)
      && json_node_get_value_type (n) == G_TYPE_STRING)
    return json_node_get_string (n);
  return dflt;
}

gint64
twoflow_json_get_int (JsonObject * obj, const gchar * name, gint64 dflt)
{
  JsonNode *n = obj ? json_object_get_member (obj, name) : NULL;
  if (n && JSON_NODE_HOLDS_VALUE (n)) {
    GType t = json_node_get_value_type (n);
    if (t == G_TYPE_INT64)
      return json_node_get_int (n);
    if (t == G_TYPE_DOUBLE)
      return (gint64) json_node_get_double (n);
    if (t == G_TYPE_BOOLEAN)
      return json_node_get_boolean (n);
  }
  return dflt;
}

gdouble
twoflow_json_get_double (JsonObject * obj, const gchar * name, gdouble dflt)
{
  JsonNode *n = obj ? json_object_get_member (obj, name) : NULL;
  if (n && JSON_NODE_HOLDS_VALUE (n)) {
    GType t = json_node_get_value_type (n);
    if (t == G_TYPE_INT64)
      return (gdouble) json_node_get_int (n);
    if (t == G_TYPE_DOUBLE)
      return json_node_get_double (n);
  }
  return dflt;
}

/* Numeric, boolean and string fields of a stats structure as a JSON object
 * (arrays and other types are left out). */
void
twoflow_json_add_structure (JsonObject * obj, const gchar * name,
    const GstStructure * s)
{
  JsonObject *o = json_object_new ();
  gint i;

  for (i = 0; s && i < gst_structure_n_fields (s); i++) {
    const gchar *f = gst_structure_nth_field_name (s, i);
    const GValue *v = gst_structure_get_value (s, f);
    GType t = G_VALUE_TYPE (v);

    if (t == G_TYPE_UINT64)
      json_object_set_int_member (o, f, (gint64) g_value_get_uint64 (v));
    else if (t == G_TYPE_INT64)
      json_object_set_int_member (o, f, g_value_get_int64 (v));
    else if (t == G_TYPE_UINT)
      json_object_set_int_member (o, f, g_value_get_uint (v));
    else if (t == G_TYPE_INT)
      json_object_set_int_member (o, f, g_value_get_int (v));
    else if (t == G_TYPE_DOUBLE)
      json_object_set_double_member (o, f, g_value_get_double (v));
    else if (t == G_TYPE_BOOLEAN)
      json_object_set_boolean_member (o, f, g_value_get_boolean (v));
    else if (t == G_TYPE_STRING)
      json_object_set_string_member (o, f, g_value_get_string (v));
  }
  json_object_set_object_member (obj, name, o);
}

void
twoflow_line_buffer_init (TwoflowLineBuffer * lb, gsize max)
{
  lb->buf = g_string_new (NULL);
  lb->max = max;
}

void
twoflow_line_buffer_clear (TwoflowLineBuffer * lb)
{
  if (lb->buf)
    g_string_free (lb->buf, TRUE);
  lb->buf = NULL;
}

gboolean
twoflow_line_buffer_append (TwoflowLineBuffer * lb, const gchar * data,
    gsize len)
{
  gsize i, start;

  g_string_append_len (lb->buf, data, len);
  /* the complete lines are popped after every append, so the buffer held
   * no newline before: the pending (last) line starts after the last
   * newline of data */
  for (i = lb->buf->len - len, start = 0; i < lb->buf->len; i++)
    if (lb->buf->str[i] == '\n')
      start = i + 1;
  if (lb->buf->len - start > lb->max) {
    g_string_truncate (lb->buf, 0);
    return FALSE;
  }
  return TRUE;
}

gchar *
twoflow_line_buffer_pop (TwoflowLineBuffer * lb)
{
  gchar *nl = memchr (lb->buf->str, '\n', lb->buf->len);
  gchar *line;
  gsize n;

  if (nl == NULL)
    return NULL;
  n = nl - lb->buf->str;
  line = g_strndup (lb->buf->str, n);
  g_string_erase (lb->buf, 0, n + 1);
  if (n > 0 && line[n - 1] == '\r')
    line[n - 1] = '\0';
  return line;
}
