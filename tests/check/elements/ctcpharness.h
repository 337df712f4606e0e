/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — what the ctcp element tests (elements/ctcpsink.c,
 * elements/ctcptls.c, ctcp/ctcpattack.c) share: a ctcpsink in a
 * GstHarness, a seeded byte pattern pushed in timed buffers, its stats and
 * their fields, a ctcpsrc receiver. Header only (static inline). */
#ifndef __TWOFLOW_CTCP_HARNESS_H__
#define __TWOFLOW_CTCP_HARNESS_H__

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>

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

/* ctcpsrc ! fakesink, collecting what arrives (elements/ctcptls,
 * ctcp/attack) */
typedef struct {
  GstElement *pipe, *src;
  GMutex lock;
  GByteArray *data;
} CtcpReceiver;

static inline void
ctcp_receiver_handoff (GstElement * fs, GstBuffer * b, GstPad * pad,
    CtcpReceiver * r)
{
  GstMapInfo map;

  gst_buffer_map (b, &map, GST_MAP_READ);
  g_mutex_lock (&r->lock);
  g_byte_array_append (r->data, map.data, map.size);
  g_mutex_unlock (&r->lock);
  gst_buffer_unmap (b, &map);
}

static inline void
ctcp_receiver_free (CtcpReceiver * r)
{
  gst_element_set_state (r->pipe, GST_STATE_NULL);
  gst_object_unref (r->src);
  gst_object_unref (r->pipe);
  g_byte_array_unref (r->data);
  g_mutex_clear (&r->lock);
  g_free (r);
}

/* "ctcpsrc @props" playing; when it does not start: NULL and *@err the
 * error's text if @err is given, else the test fails. */
static inline CtcpReceiver *
ctcp_receiver_new (const gchar * props, gchar ** err)
{
  CtcpReceiver *r = g_new0 (CtcpReceiver, 1);
  gchar *desc = g_strdup_printf ("ctcpsrc name=src %s ! fakesink name=out "
      "signal-handoffs=true sync=false", props);
  GstElement *out;

  g_mutex_init (&r->lock);
  r->data = g_byte_array_new ();
  r->pipe = gst_parse_launch (desc, NULL);
  fail_unless (r->pipe != NULL, "%s", desc);
  g_free (desc);
  r->src = gst_bin_get_by_name (GST_BIN (r->pipe), "src");
  out = gst_bin_get_by_name (GST_BIN (r->pipe), "out");
  g_signal_connect (out, "handoff", G_CALLBACK (ctcp_receiver_handoff), r);
  gst_object_unref (out);
  if (gst_element_set_state (r->pipe, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    GstBus *bus = gst_element_get_bus (r->pipe);
    GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);

    fail_unless (err != NULL, "ctcpsrc %s did not start", props);
    if (m) {
      GError *e = NULL;
      gchar *dbg = NULL;

      gst_message_parse_error (m, &e, &dbg);
      *err = g_strdup_printf ("%s | %s", e->message, dbg ? dbg : "");
      g_error_free (e);
      g_free (dbg);
      gst_message_unref (m);
    }
    gst_object_unref (bus);
    ctcp_receiver_free (r);
    return NULL;
  }
  return r;
}

/* EOS (TRUE) or an error (FALSE, *@msg set) within @ms */
static inline gboolean
ctcp_receiver_wait (CtcpReceiver * r, guint ms, gchar ** msg)
{
  GstBus *bus = gst_element_get_bus (r->pipe);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, ms * GST_MSECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gboolean eos = m && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS;

  if (m && !eos && msg) {
    GError *e = NULL;

    gst_message_parse_error (m, &e, NULL);
    *msg = g_strdup (e->message);
    g_error_free (e);
  }
  if (m)
    gst_message_unref (m);
  gst_object_unref (bus);
  return eos;
}

/* Connections refused so far by @element (ctcpsrc or ctcpsink). */
static inline guint
refused_count (gpointer element)
{
  GstStructure *st = NULL;
  guint n = 0;

  g_object_get (element, "stats", &st, NULL);
  gst_structure_get_uint (st, "connections-refused", &n);
  gst_structure_free (st);
  return n;
}

/* A self-signed ECDSA certificate (a CA too) for 127.0.0.1 and localhost,
 * server and client, made by certtool in @dir: @dir/NAME.pem (returned)
 * and @dir/NAME.key (in *@key when @key is not NULL). */
static inline gchar *
ctcp_make_cert (const gchar * dir, const gchar * name, gchar ** key_out)
{
  gchar *key = g_strdup_printf ("%s/%s.key", dir, name);
  gchar *cert = g_strdup_printf ("%s/%s.pem", dir, name);
  gchar *tmpl = g_build_filename (dir, "template", NULL);
  gchar *argv1[] = { (gchar *) "certtool", (gchar *) "--generate-privkey",
    (gchar *) "--key-type=ecdsa", (gchar *) "--outfile", key, NULL
  };
  gchar *argv2[] = { (gchar *) "certtool", (gchar *) "--generate-self-signed",
    (gchar *) "--load-privkey", key, (gchar *) "--template", tmpl,
    (gchar *) "--outfile", cert, NULL
  };
  gint status = -1;

  fail_unless (g_file_set_contents (tmpl, "cn = \"twoflow test\"\n"
          "dns_name = \"localhost\"\nip_address = \"127.0.0.1\"\n"
          "expiration_days = 2\nca\ncert_signing_key\nsigning_key\n"
          "encryption_key\ntls_www_server\ntls_www_client\n", -1, NULL));
  fail_unless (g_spawn_sync (NULL, argv1, NULL, G_SPAWN_SEARCH_PATH |
          G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
          NULL, NULL, &status, NULL) && status == 0,
      "certtool (gnutls-bin) failed");
  fail_unless (g_spawn_sync (NULL, argv2, NULL, G_SPAWN_SEARCH_PATH |
          G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
          NULL, NULL, &status, NULL) && status == 0);
  g_unlink (tmpl);
  g_free (tmpl);
  if (key_out)
    *key_out = key;
  else
    g_free (key);
  return cert;
}

#endif
