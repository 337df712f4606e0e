/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ctcpsink over TLS: a TLS receiver (GTlsServerConnection through
 * gst/common/twoflowtls, a self-signed certificate made with certtool at
 * test time) gets the stream byte-exact with every segment on time; the
 * stats show TLS and its record overhead, and the wire bytes the kernel
 * acknowledged match the overhead accounting; a pinned fingerprint works
 * without a CA; a wrong pin or a wrong CA is a clear element error and
 * nothing is sent. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>
#include <gio/gio.h>
#include <sys/socket.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include "twoflowtls.h"
#include "ctcpharness.h"

static gchar *tmpdir, *cert_file, *key_file, *other_cert_file;
static gchar *client_cert_file, *client_key_file;
static GTlsCertificate *server_cert;

static void
setup_certs (void)
{
  GError *err = NULL;

  tmpdir = g_dir_make_tmp ("ctcptls-XXXXXX", NULL);
  fail_unless (tmpdir != NULL);
  cert_file = ctcp_make_cert (tmpdir, "server", &key_file);
  other_cert_file = ctcp_make_cert (tmpdir, "other", NULL);
  client_cert_file = ctcp_make_cert (tmpdir, "client", &client_key_file);
  server_cert = g_tls_certificate_new_from_files (cert_file, key_file, &err);
  fail_unless (server_cert != NULL, "%s", err ? err->message : "");
}

static void
remove_certs (void)
{
  GDir *d = g_dir_open (tmpdir, 0, NULL);
  const gchar *n;

  while (d && (n = g_dir_read_name (d))) {
    gchar *p = g_build_filename (tmpdir, n, NULL);

    g_unlink (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  g_rmdir (tmpdir);
  g_clear_object (&server_cert);
  g_free (cert_file);
  g_free (key_file);
  g_free (other_cert_file);
  g_free (client_cert_file);
  g_free (client_key_file);
  g_free (tmpdir);
}

/* ---- the TLS receiver: accept one connection, read to close_notify ---- */

typedef struct {
  GSocketListener *listener;
  guint16 port;
  GThread *thread;
  GMutex lock;
  GByteArray *data;
  const gchar *client_ca;       /* require a client certificate */
  gboolean slow;                /* small window, 4 kB per read 1 ms apart */
  gboolean done;                /* clean end (close_notify, then EOF) */
  gchar *error;                 /* handshake or read error */
} TlsReceiver;

static gpointer
tls_receiver_thread (gpointer user_data)
{
  TlsReceiver *r = user_data;
  GError *err = NULL;
  GSocketConnection *conn = g_socket_listener_accept (r->listener, NULL,
      NULL, &err);
  GIOStream *tls = NULL;
  guint8 buf[65536];

  if (conn)
    tls = twoflow_tls_server_handshake (G_IO_STREAM (conn), server_cert,
        r->client_ca, NULL, &err);
  if (tls) {
    GInputStream *in = g_io_stream_get_input_stream (tls);
    gssize n;

    while ((n = g_input_stream_read (in, buf, r->slow ? 4096 : sizeof (buf),
                NULL, &err)) > 0) {
      if (r->slow)
        g_usleep (1000);
      g_mutex_lock (&r->lock);
      g_byte_array_append (r->data, buf, n);
      g_mutex_unlock (&r->lock);
    }
    g_mutex_lock (&r->lock);
    r->done = n == 0;
    g_mutex_unlock (&r->lock);
  }
  g_mutex_lock (&r->lock);
  if (err)
    r->error = g_strdup (err->message);
  g_mutex_unlock (&r->lock);
  g_clear_error (&err);
  g_clear_object (&tls);
  g_clear_object (&conn);
  return NULL;
}

static TlsReceiver *
tls_receiver_new_slow (const gchar * client_ca, gboolean slow)
{
  TlsReceiver *r = g_new0 (TlsReceiver, 1);
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *a = g_inet_socket_address_new (lo, 0), *eff;
  GSocket *ls = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, NULL);

  /* slow: a small receive window (the accepted socket inherits it), so the
   * sender's socket fills */
  if (slow)
    fail_unless (g_socket_set_option (ls, SOL_SOCKET, SO_RCVBUF, 32768,
            NULL));
  fail_unless (g_socket_bind (ls, a, TRUE, NULL));
  fail_unless (g_socket_listen (ls, NULL));
  r->listener = g_socket_listener_new ();
  fail_unless (g_socket_listener_add_socket (r->listener, ls, NULL, NULL));
  eff = g_socket_get_local_address (ls, NULL);
  r->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (eff));
  r->slow = slow;
  g_object_unref (ls);
  g_object_unref (eff);
  g_object_unref (a);
  g_object_unref (lo);
  g_mutex_init (&r->lock);
  r->data = g_byte_array_new ();
  r->client_ca = client_ca;
  r->thread = g_thread_new ("tls-receiver", tls_receiver_thread, r);
  return r;
}

static TlsReceiver *
tls_receiver_new_full (const gchar * client_ca)
{
  return tls_receiver_new_slow (client_ca, FALSE);
}

static TlsReceiver *
tls_receiver_new (void)
{
  return tls_receiver_new_full (NULL);
}

static gboolean
tls_receiver_wait (TlsReceiver * r, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + timeout_ms * 1000;
  gboolean over;

  do {
    g_mutex_lock (&r->lock);
    over = r->done || r->error;
    g_mutex_unlock (&r->lock);
    if (over)
      return TRUE;
    g_usleep (5000);
  } while (g_get_monotonic_time () < end);
  return FALSE;
}

static void
tls_receiver_free (TlsReceiver * r)
{
  g_socket_listener_close (r->listener);
  g_thread_join (r->thread);
  g_object_unref (r->listener);
  g_byte_array_unref (r->data);
  g_free (r->error);
  g_mutex_clear (&r->lock);
  g_free (r);
}

/* ---- sender helpers ---- */

/* @nseg segments of @segdur in 25 buffers each, then EOS; byte-exact,
 * on time, TLS in the stats. */
static void
check_transfer_full (const gchar * props, gsize size, guint nseg,
    const gchar * client_ca, gboolean slow)
{
  TlsReceiver *r = tls_receiver_new_slow (client_ca, slow);
  GstHarness *h;
  const GstClockTime segdur = 500 * GST_MSECOND, dur = segdur / 25;
  guint8 *data = pattern (size, 7);
  guint n = nseg * 25, ovh = 0;
  GstStructure *st;
  gboolean tls = FALSE;
  guint64 sent, wire, wire_acked, records;

  h = sender_new (r->port, props, TRUE);
  push_data (h, data, size, n, dur);
  /* returns once every byte is acknowledged */
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless (tls_receiver_wait (r, 20000));
  fail_unless (r->error == NULL, "receiver: %s", r->error);
  fail_unless (r->done, "no clean end (close_notify)");
  fail_unless_equals_int (r->data->len, size);
  fail_unless (memcmp (r->data->data, data, size) == 0);

  st = get_stats (h);
  GST_INFO ("%" GST_PTR_FORMAT, st);
  fail_unless (gst_structure_get_boolean (st, "tls", &tls) && tls);
  fail_unless_equals_string (gst_structure_get_string (st, "tls-protocol"),
      "TLS 1.3");
  fail_unless (strlen (gst_structure_get_string (st, "tls-ciphersuite")) > 0);
  fail_unless (gst_structure_get_uint (st, "record-overhead", &ovh));
  fail_unless_equals_int (ovh, 22);
  sent = stat_u64 (st, "bytes-sent");
  fail_unless_equals_uint64 (sent, size);
  fail_unless_equals_uint64 (stat_u64 (st, "bytes-acked"), size);
  fail_unless_equals_uint64 (stat_u64 (st, "segments"), nseg);
  fail_unless_equals_uint64 (stat_u64 (st, "segments-late"), 0);
  /* the overhead: 22 bytes per record of at most 16384 */
  wire = stat_u64 (st, "wire-bytes-sent");
  records = (wire - sent) / 22;
  fail_unless_equals_uint64 (wire, sent + records * 22);
  fail_unless (records >= (size + 16383) / 16384);
  /* what the kernel acknowledged is what we counted (the handshake's
   * last flight, unacknowledged at the first reading, excluded), + at most
   * the 24-byte close_notify if a last reading saw it */
  wire_acked = stat_u64 (st, "wire-bytes-acked");
  fail_unless (wire_acked >= wire && wire_acked <= wire + 24,
      "acked %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " wire bytes",
      wire_acked, wire);
  {
    gint64 slack = 0;

    gst_structure_get_int64 (st, "min-deadline-slack", &slack);
    GST_INFO ("%" G_GSIZE_FORMAT " bytes, %" G_GUINT64_FORMAT " records, %"
        G_GUINT64_FORMAT " wire bytes (+%.2f %%), %" G_GUINT64_FORMAT
        " acknowledged, min slack %" GST_STIME_FORMAT, size, records, wire,
        100.0 * (wire - sent) / sent, wire_acked, GST_STIME_ARGS (slack));
  }
  gst_structure_free (st);
  gst_harness_teardown (h);
  tls_receiver_free (r);
  g_free (data);
}

static void
check_transfer (const gchar * props, gsize size, guint nseg)
{
  check_transfer_full (props, size, nseg, NULL, FALSE);
}

GST_START_TEST (test_tls_ca_file)
{
  gchar *props = g_strdup_printf ("segment-duration=500000000 "
      "tls-ca-file=%s", cert_file);

  /* 4 segments of 500 ms, 1 MB */
  check_transfer (props, 1 << 20, 4);
  g_free (props);
}

GST_END_TEST;

GST_START_TEST (test_tls_pin)
{
  gchar *pin = twoflow_tls_certificate_pin (server_cert);
  gchar *props = g_strdup_printf ("segment-duration=500000000 tls-pin=%s",
      pin);

  /* small segments: records below the largest size */
  check_transfer (props, 40000, 4);
  /* with both: the CA and the pin hold */
  g_free (props);
  props = g_strdup_printf ("segment-duration=500000000 tls-pin=%s "
      "tls-ca-file=%s", pin, cert_file);
  check_transfer (props, 200000, 2);
  g_free (props);
  g_free (pin);
}

GST_END_TEST;

/* Uncapped (mode=tcp): 8 MB as fast as loopback goes, so the socket
 * fills and blocked TLS writes are retried (the same record). */
GST_START_TEST (test_tls_mode_tcp)
{
  gchar *pin = twoflow_tls_certificate_pin (server_cert);
  gchar *props = g_strdup_printf ("mode=tcp segment-duration=500000000 "
      "tls-pin=%s", pin);

  check_transfer (props, 8 << 20, 4);
  g_free (props);
  /* a slow reader: the socket fills and TLS writes block */
  props = g_strdup_printf ("mode=tcp segment-duration=500000000 "
      "tls-pin=%s", pin);
  check_transfer_full (props, 1 << 20, 4, NULL, TRUE);
  g_free (props);
  g_free (pin);
}

GST_END_TEST;

/* A failed handshake: an element error that says why (the sink connects
 * in its own thread: the state change itself does not fail); the receiver
 * gets nothing. */
static void
check_refused (const gchar * props, const gchar * why)
{
  TlsReceiver *r = tls_receiver_new ();
  gchar *desc = g_strdup_printf ("ctcpsink name=s host=127.0.0.1 port=%u %s",
      r->port, props);
  GstElement *sink = gst_parse_launch (desc, NULL);
  GstBus *bus = gst_bus_new ();
  GstMessage *m;
  GError *err = NULL;
  gchar *dbg = NULL;

  gst_element_set_bus (sink, bus);
  fail_if (gst_element_set_state (sink, GST_STATE_PAUSED) ==
      GST_STATE_CHANGE_FAILURE);
  m = gst_bus_timed_pop_filtered (bus, 5 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (m != NULL);
  gst_message_parse_error (m, &err, &dbg);
  GST_INFO ("%s / %s", err->message, dbg);
  fail_unless (strstr (err->message, "TLS handshake") != NULL, "%s",
      err->message);
  fail_unless (dbg && strstr (dbg, why) != NULL, "%s", dbg);
  g_error_free (err);
  g_free (dbg);
  gst_message_unref (m);
  gst_element_set_state (sink, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (bus);
  fail_unless (tls_receiver_wait (r, 5000));
  fail_unless_equals_int (r->data->len, 0);
  fail_unless (r->error != NULL);
  tls_receiver_free (r);
  g_free (desc);
}

GST_START_TEST (test_tls_wrong_pin)
{
  check_refused ("tls-pin=sha256:" "00112233445566778899aabbccddeeff"
      "00112233445566778899aabbccddeeff", "tls-pin");
}

GST_END_TEST;

GST_START_TEST (test_tls_wrong_ca)
{
  gchar *props = g_strdup_printf ("tls-ca-file=%s", other_cert_file);

  /* same subject as the real one, another key: the signature fails */
  check_refused (props, "checked against tls-ca-file");
  g_free (props);
}

GST_END_TEST;

GST_START_TEST (test_tls_system_ca_refuses_self_signed)
{
  check_refused ("tls=true", "unknown-ca (checked against the system CAs)");
}

GST_END_TEST;

/* A receiver requiring a client certificate from @client_ca refuses the
 * sink (@props): it gets nothing, and the sink reports the connection
 * (TLS 1.3: the client's handshake ends before the server checks it, so
 * the refusal shows on the connection). */
static void
check_client_refused (const gchar * props)
{
  TlsReceiver *r = tls_receiver_new_full (client_cert_file);
  GstHarness *h = sender_new (r->port, props, TRUE);
  GstBus *bus = gst_bus_new ();
  GstMessage *m = NULL;
  guint i;

  gst_element_set_bus (h->element, bus);
  fail_unless (tls_receiver_wait (r, 5000));
  fail_unless (r->error != NULL);
  fail_unless_equals_int (r->data->len, 0);
  for (i = 0; i < 100 && !m; i++) {
    GstBuffer *b = gst_buffer_new_allocate (NULL, 20000, NULL);

    gst_buffer_memset (b, 0, 0x11, 20000);
    GST_BUFFER_PTS (b) = GST_BUFFER_DTS (b) = i * 20 * GST_MSECOND;
    GST_BUFFER_DURATION (b) = 20 * GST_MSECOND;
    if (gst_harness_push (h, b) != GST_FLOW_OK)
      break;
    m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  }
  if (!m)
    m = gst_bus_timed_pop_filtered (bus, 5 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (m != NULL, "no error from the sink");
  gst_message_unref (m);
  gst_harness_teardown (h);
  fail_unless_equals_int (r->data->len, 0);
  tls_receiver_free (r);
  gst_object_unref (bus);
}

/* The receiver requires a client certificate: with tls-certificate and
 * tls-key the transfer goes through; without one, or with one the
 * receiver does not trust, it is refused. */
GST_START_TEST (test_tls_client_certificate)
{
  gchar *pin = twoflow_tls_certificate_pin (server_cert);
  gchar *props = g_strdup_printf ("segment-duration=500000000 tls-pin=%s "
      "tls-certificate=%s tls-key=%s", pin, client_cert_file,
      client_key_file);

  check_transfer_full (props, 100000, 2, client_cert_file, FALSE);
  g_free (props);
  props = g_strdup_printf ("segment-duration=500000000 tls-pin=%s", pin);
  check_client_refused (props);
  g_free (props);
  props = g_strdup_printf ("segment-duration=500000000 tls-pin=%s "
      "tls-certificate=%s tls-key=%s", pin, cert_file, key_file);
  check_client_refused (props);
  g_free (props);
  g_free (pin);
}

GST_END_TEST;

GST_START_TEST (test_tls_properties)
{
  GstElement *sink = gst_element_factory_make ("ctcpsink", NULL);
  gboolean tls = TRUE;
  GstStructure *st;

  g_object_get (sink, "tls", &tls, NULL);
  fail_if (tls);                /* off by default (lab use) */
  g_object_get (sink, "stats", &st, NULL);
  fail_unless (gst_structure_get_boolean (st, "tls", &tls));
  fail_if (tls);
  gst_structure_free (st);
  gst_object_unref (sink);
}

GST_END_TEST;

/* ---- ctcpsrc: the sink as TLS server, the receiver as TLS client ---- */

#define TOKEN "0123456789abcdef0123456789abcdef"

/* A plaintext TCP client: connects, sends @junk, returns what it got
 * back until the peer closes or 1 s passes. */
static GByteArray *
plaintext_probe (guint port, const gchar * junk)
{
  GSocketClient *c = g_socket_client_new ();
  GSocketConnection *conn = g_socket_client_connect_to_host (c, "127.0.0.1",
      port, NULL, NULL);
  GByteArray *got = g_byte_array_new ();
  GSocket *sock;
  guint8 buf[4096];
  gssize n;

  fail_unless (conn != NULL);
  sock = g_socket_connection_get_socket (conn);
  g_socket_set_timeout (sock, 1);
  g_socket_send (sock, junk, strlen (junk), NULL, NULL);
  while ((n = g_socket_receive (sock, (gchar *) buf, sizeof (buf), NULL,
              NULL)) > 0)
    g_byte_array_append (got, buf, n);
  g_object_unref (conn);
  g_object_unref (c);
  return got;
}

/* @size bytes in @nseg segments of 500 ms through @h; checks the sink's
 * side: TLS 1.3, 22-byte records, every segment on time, the controller's
 * stream rate S/(T(1-p)), and not more than 10 % above it end to end
 * (returns that, bytes/s). */
static gdouble
push_segments (GstHarness * h, const guint8 * data, gsize size, guint nseg,
    CtcpReceiver * r)
{
  const GstClockTime segdur = 500 * GST_MSECOND, dur = segdur / 25;
  guint n = nseg * 25, ovh = 0;
  gint64 t0 = g_get_monotonic_time (), t1;
  gchar *msg = NULL;
  GstStructure *st;
  gboolean tls = FALSE;
  gdouble rate, nominal = (gdouble) size / nseg / (0.5 * 0.95);

  push_data (h, data, size, n, dur);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless (ctcp_receiver_wait (r, 20000, &msg), "receiver: %s", msg);
  t1 = g_get_monotonic_time ();
  fail_unless_equals_int (r->data->len, size);
  fail_unless (memcmp (r->data->data, data, size) == 0);
  st = get_stats (h);
  GST_INFO ("%" GST_PTR_FORMAT, st);
  fail_unless (gst_structure_get_boolean (st, "tls", &tls) && tls);
  fail_unless_equals_string (gst_structure_get_string (st, "tls-protocol"),
      "TLS 1.3");
  fail_unless (gst_structure_get_uint (st, "record-overhead", &ovh));
  fail_unless_equals_int (ovh, 22);
  fail_unless_equals_uint64 (stat_u64 (st, "bytes-acked"), size);
  fail_unless_equals_uint64 (stat_u64 (st, "segments"), nseg);
  /* every segment done, none a whole segment late (on time to the
   * millisecond is the core's test on a virtual clock, libs/ctcp
   * test_sender_segments_on_time; here a loaded machine's late wakeups
   * would decide it) */
  {
    const GValue *slack = gst_structure_get_value (st, "deadline-slack");

    fail_unless_equals_int (gst_value_array_get_size (slack), nseg);
    for (guint i = 0; i < nseg; i++) {
      gint64 v = g_value_get_int64 (gst_value_array_get_value (slack, i));

      fail_unless (v > -(gint64) segdur, "segment %u slack %"
          G_GINT64_FORMAT, i, v);
    }
  }
  /* the stream rate the controller aimed at is S/(T(1-p)) (the wire rate,
   * target-rate, adds the records' overhead) */
  fail_unless (fabs (stat_u64 (st, "nominal-rate") / nominal - 1) < 0.01,
      "nominal-rate %" G_GUINT64_FORMAT " B/s, expected %.0f",
      stat_u64 (st, "nominal-rate"), nominal);
  fail_unless (stat_u64 (st, "target-rate") >= stat_u64 (st, "nominal-rate"));
  gst_structure_free (st);
  /* not faster than that: all segments are ready at once, each takes
   * S/rate, one after the other (an upper bound on the rate: load only
   * makes the transfer slower) */
  rate = size / ((t1 - t0) / 1e6);
  GST_INFO ("%" G_GSIZE_FORMAT " bytes in %.3f s: %.0f B/s, nominal %.0f "
      "B/s (%.3f)", size, (t1 - t0) / 1e6, rate, nominal, rate / nominal);
  fail_unless (rate < 1.1 * nominal, "%.0f B/s against a nominal %.0f B/s",
      rate, nominal);
  return rate;
}

static void
check_src_stats (CtcpReceiver * r, gsize size, guint refused)
{
  GstStructure *st = NULL;
  gboolean tls = FALSE;
  guint n = 99;
  guint64 bytes = 0;

  g_object_get (r->src, "stats", &st, NULL);
  GST_INFO ("%" GST_PTR_FORMAT, st);
  fail_unless (gst_structure_get_boolean (st, "tls", &tls) && tls);
  fail_unless (gst_structure_get_uint64 (st, "bytes-received", &bytes));
  fail_unless_equals_uint64 (bytes, size);
  fail_unless (gst_structure_get_uint (st, "connections-refused", &n));
  fail_unless_equals_int (n, refused);
  gst_structure_free (st);
}

/* The server connects (direct mode): the receiver listens, checks the
 * sender's certificate against the CA and the name, sends the token; a
 * silent stranger from another address (not accept-host) is closed at
 * once, without holding the source for its timeout; a plaintext intruder
 * from the right address is refused and feeds nothing into the stream. 1 MB in 4 segments of 500 ms: byte-exact, on time, at the
 * target rate. */
GST_START_TEST (test_tls_ctcpsrc_listen)
{
  gchar *props = g_strdup_printf ("host=0.0.0.0 port=0 accept-host=127.0.0.1 "
      "tls-ca-file=%s tls-server-name=127.0.0.1 tls-token=" TOKEN
      " timeout=2000000000", cert_file);
  CtcpReceiver *r = ctcp_receiver_new (props, NULL);
  gsize size = 1 << 20;
  guint8 *data = pattern (size, 21);
  guint port = 0, i;
  GByteArray *junk;
  GstHarness *h;
  GSocket *stranger;
  GSocketAddress *from, *to;

  g_free (props);
  g_object_get (r->src, "current-port", &port, NULL);
  fail_unless (port > 0);
  /* a silent stranger from 127.0.0.2: closed at once */
  stranger = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, NULL);
  from = g_inet_socket_address_new_from_string ("127.0.0.2", 0);
  to = g_inet_socket_address_new_from_string ("127.0.0.1", port);
  fail_unless (g_socket_bind (stranger, from, TRUE, NULL));
  fail_unless (g_socket_connect (stranger, to, NULL, NULL));
  for (i = 0; i < 50 && refused_count (r->src) < 1; i++)
    g_usleep (10000);
  fail_unless (i < 50, "a stranger held the source");
  g_socket_close (stranger, NULL);
  g_object_unref (stranger);
  g_object_unref (from);
  g_object_unref (to);
  /* the intruder: gets a ClientHello at most, nothing gets in */
  junk = plaintext_probe (port, "forged essential data\n");
  g_byte_array_unref (junk);
  props = g_strdup_printf ("segment-duration=500000000 tls-role=server "
      "tls-certificate=%s tls-key=%s tls-token=" TOKEN, cert_file, key_file);
  h = sender_new (port, props, TRUE);
  push_segments (h, data, size, 4, r);
  check_src_stats (r, size, 2);
  gst_harness_teardown (h);
  ctcp_receiver_free (r);
  g_free (props);
  g_free (data);
}

GST_END_TEST;

/* The receiver connects (NAT: ctcpsink listen=true): a plaintext client
 * gets nothing of the stream, a TLS client with a wrong token gets an
 * error and nothing; the right one (checking the pin) gets it all,
 * byte-exact, on time, at the target rate. */
GST_START_TEST (test_tls_ctcpsrc_connect)
{
  gchar *pin = twoflow_tls_certificate_pin (server_cert);
  gchar *props = g_strdup_printf ("ctcpsink listen=true bind-port=0 "
      "host=127.0.0.1 segment-duration=500000000 connect-timeout=2000000000 "
      "tls-role=server tls-certificate=%s tls-key=%s tls-token=" TOKEN,
      cert_file, key_file);
  GstHarness *h = gst_harness_new_parse (props);
  GstElement *sink = gst_harness_find_element (h, "ctcpsink");
  gsize size = 600000;
  guint8 *data = pattern (size, 22);
  guint port = 0, i;
  GByteArray *got;
  CtcpReceiver *bad, *r;
  gchar *msg = NULL;

  g_free (props);
  gst_harness_use_systemclock (h);
  gst_harness_set_src_caps_str (h, "application/octet-stream");
  g_object_get (sink, "bound-port", &port, NULL);
  fail_unless (port > 0);

  got = plaintext_probe (port, "GET / HTTP/1.0\r\n\r\n");
  /* at most a TLS alert (7 bytes), none of the stream */
  GST_INFO ("plaintext client got %u bytes", got->len);
  fail_unless (got->len <= 7, "plaintext client got %u bytes", got->len);
  g_byte_array_unref (got);

  props = g_strdup_printf ("listen=false host=127.0.0.1 port=%u tls-pin=%s "
      "tls-token=wrong-token-wrong-token-wrong-tok", port, pin);
  bad = ctcp_receiver_new (props, NULL);
  g_free (props);
  fail_if (ctcp_receiver_wait (bad, 5000, &msg));
  GST_INFO ("wrong token: %s", msg);
  fail_unless (msg != NULL);
  g_free (msg);
  msg = NULL;
  fail_unless_equals_int (bad->data->len, 0);
  ctcp_receiver_free (bad);

  props = g_strdup_printf ("listen=false host=127.0.0.1 port=%u tls-pin=%s "
      "tls-token=" TOKEN, port, pin);
  r = ctcp_receiver_new (props, NULL);
  g_free (props);
  push_segments (h, data, size, 3, r);
  check_src_stats (r, size, 0);
  /* the refused ones are counted (the sink may still be closing the
   * second when the third arrives) */
  for (i = 0; i < 100 && refused_count (sink) != 2; i++)
    g_usleep (10000);
  fail_unless (i < 100, "connections-refused != 2");
  gst_object_unref (sink);
  gst_harness_teardown (h);
  ctcp_receiver_free (r);
  g_free (pin);
  g_free (data);
}

GST_END_TEST;

/* A sender the receiver does not trust (another certificate): the
 * receiver refuses it and never sends the token; listening, it counts it
 * and fails with the reason (it does not wait for ever on a
 * misconfiguration). */
GST_START_TEST (test_tls_ctcpsrc_wrong_sender)
{
  gchar *props = g_strdup_printf ("host=127.0.0.1 port=0 tls-ca-file=%s "
      "tls-server-name=127.0.0.1 tls-token=" TOKEN, cert_file);
  CtcpReceiver *r = ctcp_receiver_new (props, NULL);
  gchar *other_key = g_strdup_printf ("%s/other.key", tmpdir);
  guint port = 0, i, n = 0;
  GstHarness *h;
  GstBus *bus = gst_bus_new ();
  GstMessage *m = NULL;

  g_free (props);
  g_object_get (r->src, "current-port", &port, NULL);
  props = g_strdup_printf ("segment-duration=500000000 tls-role=server "
      "tls-certificate=%s tls-key=%s tls-token=" TOKEN, other_cert_file,
      other_key);
  h = sender_new (port, props, TRUE);
  gst_element_set_bus (h->element, bus);
  for (i = 0; i < 50 && !m; i++) {
    GstBuffer *b = gst_buffer_new_allocate (NULL, 20000, NULL);

    gst_buffer_memset (b, 0, 0x22, 20000);
    GST_BUFFER_PTS (b) = GST_BUFFER_DTS (b) = i * 20 * GST_MSECOND;
    GST_BUFFER_DURATION (b) = 20 * GST_MSECOND;
    if (gst_harness_push (h, b) != GST_FLOW_OK)
      break;
    m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  }
  if (!m)
    m = gst_bus_timed_pop_filtered (bus, 5 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (m != NULL, "the sink reported nothing");
  gst_message_unref (m);
  for (i = 0; i < 100 && (n = refused_count (r->src)) == 0; i++)
    g_usleep (10000);
  fail_unless_equals_int (n, 1);
  fail_unless_equals_int (r->data->len, 0);
  {
    gchar *msg = NULL;

    fail_if (ctcp_receiver_wait (r, 5000, &msg));
    fail_unless (msg && strstr (msg, "TLS handshake with 127.0.0.1:"),
        "%s", msg ? msg : "no error");
    g_free (msg);
  }
  gst_harness_teardown (h);
  ctcp_receiver_free (r);
  gst_object_unref (bus);
  g_free (other_key);
  g_free (props);
}

GST_END_TEST;

/* A peer that silently drops the SYN (a listener whose accept queue is
 * full: Linux drops further SYNs): the state change returns at once (the
 * sink connects in its thread) and connect-timeout ends the attempt with
 * a clear error, not TCP's two minutes. */
GST_START_TEST (test_connect_timeout)
{
  GSocket *ls = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, NULL);
  GSocketAddress *sa = g_inet_socket_address_new_from_string ("127.0.0.1", 0);
  GSocketAddress *bound;
  GSocketClient *c = g_socket_client_new ();
  GSocketConnection *filler;
  GstElement *pipe;
  GstBus *bus;
  GstMessage *m;
  GError *err = NULL;
  gchar *desc, *dbg = NULL;
  guint port;
  gint64 t0, t1, t2;

  fail_unless (g_socket_bind (ls, sa, TRUE, NULL));
  g_socket_set_listen_backlog (ls, 0);
  fail_unless (g_socket_listen (ls, NULL));
  bound = g_socket_get_local_address (ls, NULL);
  port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  /* fills the accept queue (never accepted) */
  filler = g_socket_client_connect_to_host (c, "127.0.0.1", port, NULL, NULL);
  fail_unless (filler != NULL);

  desc = g_strdup_printf ("fakesrc num-buffers=10 ! ctcpsink host=127.0.0.1 "
      "port=%u connect-timeout=1000000000", port);
  pipe = gst_parse_launch (desc, NULL);
  g_free (desc);
  bus = gst_element_get_bus (pipe);
  t0 = g_get_monotonic_time ();
  fail_if (gst_element_set_state (pipe, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  t1 = g_get_monotonic_time ();
  /* not blocked for the connect timeout (1 s) */
  fail_unless (t1 - t0 < 900000, "set_state blocked %" G_GINT64_FORMAT " us",
      t1 - t0);
  m = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND, GST_MESSAGE_ERROR);
  t2 = g_get_monotonic_time ();
  fail_unless (m != NULL, "no error within 30 s");
  gst_message_parse_error (m, &err, &dbg);
  GST_INFO ("after %.2f s: %s (%s)", (t2 - t0) / 1e6, err->message, dbg);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_OPEN_WRITE));
  fail_unless (strstr (err->message, "Could not connect") != NULL);
  fail_unless (dbg && strstr (dbg, "connect-timeout") != NULL, "%s", dbg);
  /* after the timeout (a lower bound: load only delays the error; that
   * it is not the kernel's minutes-long SYN retries is the 30 s above) */
  fail_unless (t2 - t0 >= 900000, "%" G_GINT64_FORMAT " us", t2 - t0);
  g_error_free (err);
  g_free (dbg);
  gst_message_unref (m);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  g_object_unref (filler);
  g_object_unref (c);
  g_object_unref (bound);
  g_object_unref (sa);
  g_socket_close (ls, NULL);
  g_object_unref (ls);
}

GST_END_TEST;

static Suite *
ctcptls_suite (void)
{
  Suite *s = suite_create ("ctcptls");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_unchecked_fixture (tc, setup_certs, remove_certs);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_tls_properties);
  tcase_add_test (tc, test_tls_ca_file);
  tcase_add_test (tc, test_tls_pin);
  tcase_add_test (tc, test_tls_mode_tcp);
  tcase_add_test (tc, test_tls_wrong_pin);
  tcase_add_test (tc, test_tls_wrong_ca);
  tcase_add_test (tc, test_tls_system_ca_refuses_self_signed);
  tcase_add_test (tc, test_tls_client_certificate);
  tcase_add_test (tc, test_tls_ctcpsrc_listen);
  tcase_add_test (tc, test_tls_ctcpsrc_connect);
  tcase_add_test (tc, test_tls_ctcpsrc_wrong_sender);
  tcase_add_test (tc, test_connect_timeout);
  return s;
}

GST_CHECK_MAIN (ctcptls);
