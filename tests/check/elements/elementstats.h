/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — what the network element tests (elements/erap*, rudp*, ipv6,
 * erap/, rudp/ attack and security tests) share: an element of a harness
 * and the fields of its "stats" structure, the test failing when a field
 * is missing. Header only (static inline). */
#ifndef __TWOFLOW_ELEMENT_STATS_H__
#define __TWOFLOW_ELEMENT_STATS_H__

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

/* The @factory element of @h (the harness keeps it alive). */
static inline GstElement *
el (GstHarness * h, const gchar * factory)
{
  GstElement *e = gst_harness_find_element (h, factory);

  fail_unless (e != NULL, "no %s", factory);
  gst_object_unref (e);
  return e;
}

static inline guint64
stat_u64 (GstElement * e, const gchar * field)
{
  GstStructure *st;
  guint64 v = 0;

  g_object_get (e, "stats", &st, NULL);
  fail_unless (gst_structure_get_uint64 (st, field, &v), "no %s in %"
      GST_PTR_FORMAT, field, st);
  gst_structure_free (st);
  return v;
}

static inline guint
stat_uint (GstElement * e, const gchar * field)
{
  GstStructure *st;
  guint v = 0;

  g_object_get (e, "stats", &st, NULL);
  fail_unless (gst_structure_get_uint (st, field, &v), "no %s in %"
      GST_PTR_FORMAT, field, st);
  gst_structure_free (st);
  return v;
}

static inline gboolean
stat_bool (GstElement * e, const gchar * field)
{
  GstStructure *st;
  gboolean v = FALSE;

  g_object_get (e, "stats", &st, NULL);
  fail_unless (gst_structure_get_boolean (st, field, &v), "no %s in %"
      GST_PTR_FORMAT, field, st);
  gst_structure_free (st);
  return v;
}

/* rudpsrc's bound port (its stats' "port"; 0 before it has one) */
static inline gint
src_port (GstElement * e)
{
  GstStructure *st;
  gint port = 0;

  g_object_get (e, "stats", &st, NULL);
  gst_structure_get_int (st, "port", &port);
  gst_structure_free (st);
  return port;
}

#endif
