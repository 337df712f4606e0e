/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — what the ctcpsink element tests (elements/ctcpsink.c,
 * elements/ctcptls.c) share: a ctcpsink in a GstHarness, a seeded byte
 * pattern pushed in timed buffers, its stats and their fields. Header only (static inline). */
#ifndef __TWOFLOW_CTCP_HARNESS_H__
#define __TWOFLOW_CTCP_HARNESS_H__

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

/* A ctcpsink to 127.0.0.1:@port with @props, fed application/octet-stream;
 * @systemclock: on the system clock (else the harness' test clock). */
static inline GstHarness *
sender_new (guint port, const gchar * props, gboolean systemclock)
{
  gchar *desc = g_strdup_printf ("ctcpsink host=127.0.0.1 port=%u %s", port,
      props);
  GstHarness *h = gst_harness_new_parse (desc);

  g_free (desc);
  if (systemclock)
    gst_harness_use_systemclock (h);
  gst_harness_set_src_caps_str (h, "application/octet-stream");
  return h;
}

/* @size pseudo-random bytes from @seed (g_free them). */
static inline guint8 *
pattern (gsize size, guint seed)
{
  guint8 *p = g_malloc (size);
  GRand *rand = g_rand_new_with_seed (seed);

  for (gsize i = 0; i < size; i++)
    p[i] = g_rand_int (rand) & 0xff;
  g_rand_free (rand);
  return p;
}

/* Pushes @data in @n buffers, @dur of timestamps each. */
static inline void
push_data (GstHarness * h, const guint8 * data, gsize size, guint n,
    GstClockTime dur)
{
  gsize off = 0;

  for (guint i = 0; i < n; i++) {
    gsize len = (size - off) / (n - i);
    GstBuffer *b = gst_buffer_new_memdup (data + off, len);

    GST_BUFFER_PTS (b) = GST_BUFFER_DTS (b) = i * dur;
    GST_BUFFER_DURATION (b) = dur;
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    off += len;
  }
  fail_unless_equals_int (off, size);
}

/* The ctcpsink's stats (checked to be there). */
static inline GstStructure *
get_stats (GstHarness * h)
{
  GstStructure *s = NULL;
  GstElement *sink = gst_harness_find_element (h, "ctcpsink");

  g_object_get (sink, "stats", &s, NULL);
  gst_object_unref (sink);
  fail_unless (s != NULL);
  fail_unless (gst_structure_has_name (s, "application/x-ctcpsink-stats"));
  return s;
}

static inline guint64
stat_u64 (const GstStructure * s, const gchar * f)
{
  guint64 v = 0;

  fail_unless (gst_structure_get_uint64 (s, f, &v), "no field %s", f);
  return v;
}

static inline guint
stat_uint (const GstStructure * s, const gchar * f)
{
  guint v = 0;

  fail_unless (gst_structure_get_uint (s, f, &v), "no field %s", f);
  return v;
}

#endif
