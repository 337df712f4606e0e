/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — what the URI tests (elements/erapuri, ctcpuri, rudpuri)
 * share: an element's property values by type, an enum's nick, and the
 * URI round trip. Header only (static inline). */
#ifndef __TWOFLOW_URI_PROPS_H__
#define __TWOFLOW_URI_PROPS_H__

#include <gst/check/gstcheck.h>

static inline gchar *
get_str (GstElement * e, const gchar * name)
{
  gchar *v = NULL;

  g_object_get (e, name, &v, NULL);
  return v;
}

static inline gint
get_int (GstElement * e, const gchar * name)
{
  gint v = 0;

  g_object_get (e, name, &v, NULL);
  return v;
}

static inline guint
get_uint (GstElement * e, const gchar * name)
{
  guint v = 0;

  g_object_get (e, name, &v, NULL);
  return v;
}

static inline guint64
get_u64 (GstElement * e, const gchar * name)
{
  guint64 v = 0;

  g_object_get (e, name, &v, NULL);
  return v;
}

static inline gboolean
get_bool (GstElement * e, const gchar * name)
{
  gboolean v = FALSE;

  g_object_get (e, name, &v, NULL);
  return v;
}

static inline const gchar *
enum_nick (GstElement * e, const gchar * name)
{
  GParamSpec *p = g_object_class_find_property (G_OBJECT_GET_CLASS (e), name);
  GEnumClass *k = g_type_class_peek (G_PARAM_SPEC_VALUE_TYPE (p));
  gint v = -1;

  g_object_get (e, name, &v, NULL);
  return g_enum_get_value (k, v)->value_nick;
}

/* @uri makes a @factory element whose URI reads back as @uri itself, and
 * so does a second element made from what the first one reads back */
static inline GstElement *
check_round_trip (GstURIType type, const gchar * uri, const gchar * factory)
{
  GError *err = NULL;
  GstElement *e = gst_element_make_from_uri (type, uri, NULL, &err), *e2;
  gchar *back, *back2;

  fail_unless (e != NULL, "%s: %s", uri, err ? err->message : "");
  fail_unless_equals_string (GST_OBJECT_NAME (gst_element_get_factory (e)),
      factory);
  back = gst_uri_handler_get_uri (GST_URI_HANDLER (e));
  fail_unless_equals_string (back, uri);
  e2 = gst_element_make_from_uri (type, back, NULL, &err);
  fail_unless (e2 != NULL, "%s: %s", back, err ? err->message : "");
  back2 = get_str (e2, "uri");
  fail_unless_equals_string (back2, back);
  g_free (back2);
  g_free (back);
  gst_object_unref (e2);
  return e;
}

/* A source made from @uri, PAUSED: its URI is its address and cannot
 * change while it runs (GST_URI_ERROR_BAD_STATE for @other) */
static inline void
check_bad_state (const gchar * uri, const gchar * other)
{
  GstElement *e = gst_element_make_from_uri (GST_URI_SRC, uri, NULL, NULL);
  GError *err = NULL;

  fail_unless (e != NULL, "%s", uri);
  fail_unless (gst_element_set_state (e, GST_STATE_PAUSED) !=
      GST_STATE_CHANGE_FAILURE);
  fail_if (gst_uri_handler_set_uri (GST_URI_HANDLER (e), other, &err));
  fail_unless (g_error_matches (err, GST_URI_ERROR,
          GST_URI_ERROR_BAD_STATE));
  g_clear_error (&err);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
}

/* uridecodebin's source-setup: the source it made from the URI */
static inline void
source_setup (GstElement * bin, GstElement * source, GstElement ** out)
{
  *out = gst_object_ref (source);
}

#endif
