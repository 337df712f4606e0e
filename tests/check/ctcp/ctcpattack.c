/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the listening essential receiver (ctcpsrc, as the proxy runs
 * it) against a stranger, and its TLS failures (docs/security.md, issue
 * 24):
 *
 * * plaintext (the proxy's --insecure, before: tcpserversrc): a stranger
 *   from another address connecting first and sending data took the
 *   source (0 frames of the fetch); now, with accept-host = the server's
 *   address, it is closed unserved and counted, and the sender's stream
 *   arrives byte-exact;
 * * a relative tls-ca-file (before: every handshake failed, the source
 *   waited in PREROLLING for ever, no error) is taken from the current
 *   directory; a missing one fails the start with an error naming it;
 * * a handshake that fails on the sender's certificate is an element
 *   error, not an endless wait.
 *
 * Certificates are made at test time with certtool (gnutls-bin); the
 * stranger is a socket bound to 127.0.0.2. Nothing asserts wall-clock
 * times. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include "ctcpharness.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

static gchar *tmpdir;

static void
setup (void)
{
  tmpdir = g_dir_make_tmp ("ctcpattack-XXXXXX", NULL);
  fail_unless (tmpdir != NULL);
  g_free (ctcp_make_cert (tmpdir, "server", NULL));
  g_free (ctcp_make_cert (tmpdir, "other", NULL));
}

static void
teardown (void)
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
  g_clear_pointer (&tmpdir, g_free);
}

static guint
receiver_port (CtcpReceiver * r)
{
  guint port = 0;

  g_object_get (r->src, "current-port", &port, NULL);
  fail_unless (port > 0);
  return port;
}

/* The sender's side: a ctcpsink to @port with @props sends @size bytes in
 * 2 segments of 250 ms, then EOS; the receiver must end with EOS and
 * have them byte-exact. */
static void
send_and_check (CtcpReceiver * r, const gchar * props, gsize size, guint seed)
{
  guint8 *data = pattern (size, seed);
  GstHarness *h = sender_new (receiver_port (r), props, TRUE);
  gchar *msg = NULL;

  push_data (h, data, size, 10, 50 * GST_MSECOND);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless (ctcp_receiver_wait (r, 30000, &msg), "receiver: %s", msg);
  g_mutex_lock (&r->lock);
  fail_unless_equals_int (r->data->len, size);
  fail_unless (memcmp (r->data->data, data, size) == 0);
  g_mutex_unlock (&r->lock);
  gst_harness_teardown (h);
  g_free (data);
}

/* Before: a stranger connecting first to the proxy's plaintext essential
 * port (tcpserversrc) was taken as the server: 0 frames. Now ctcpsrc
 * with accept-host (the proxy sets the server's address) closes it
 * unserved, counts it, and takes the server's stream. */
GST_START_TEST (test_plain_stranger_first)
{
  CtcpReceiver *r = ctcp_receiver_new ("host=0.0.0.0 port=0 accept-host=127.0.0.1",
      NULL);
  GSocket *stranger;
  GSocketAddress *from, *to;
  const gchar *junk = "forged essential data";
  guint i;

  fail_unless (r != NULL);
  stranger = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, NULL);
  from = g_inet_socket_address_new_from_string ("127.0.0.2", 0);
  to = g_inet_socket_address_new_from_string ("127.0.0.1", receiver_port (r));
  fail_unless (g_socket_bind (stranger, from, TRUE, NULL));
  fail_unless (g_socket_connect (stranger, to, NULL, NULL));
  g_socket_send (stranger, junk, strlen (junk), NULL, NULL);
  for (i = 0; i < 500 && refused_count (r->src) < 1; i++)
    g_usleep (10000);
  fail_unless_equals_int (refused_count (r->src), 1);
  g_socket_close (stranger, NULL);
  g_object_unref (stranger);
  g_object_unref (from);
  g_object_unref (to);

  send_and_check (r, "segment-duration=250000000", 200000, 31);
  fail_unless_equals_int (refused_count (r->src), 1);
  ctcp_receiver_free (r);
}

GST_END_TEST;

/* Before: tls-ca-file=ca.pem (relative) made GLib trust nothing, every
 * handshake failed and the listening source waited in PREROLLING with no
 * error. Now a relative path is taken from the current directory. */
GST_START_TEST (test_relative_ca_file)
{
  gchar *cwd = g_get_current_dir (), *props, *cert, *key;
  CtcpReceiver *r;

  fail_unless (g_chdir (tmpdir) == 0);
  r = ctcp_receiver_new ("host=127.0.0.1 port=0 tls-ca-file=server.pem "
      "tls-server-name=127.0.0.1 tls-token=" TOKEN, NULL);
  fail_unless (g_chdir (cwd) == 0);
  fail_unless (r != NULL);
  cert = g_build_filename (tmpdir, "server.pem", NULL);
  key = g_build_filename (tmpdir, "server.key", NULL);
  props = g_strdup_printf ("segment-duration=250000000 tls-role=server "
      "tls-certificate=%s tls-key=%s tls-token=" TOKEN, cert, key);
  send_and_check (r, props, 100000, 32);
  fail_unless_equals_int (refused_count (r->src), 0);
  ctcp_receiver_free (r);
  g_free (props);
  g_free (cert);
  g_free (key);
  g_free (cwd);
}

GST_END_TEST;

/* A CA file that is not there fails the start, naming it. */
GST_START_TEST (test_missing_ca_file)
{
  gchar *err = NULL;
  CtcpReceiver *r = ctcp_receiver_new ("host=127.0.0.1 port=0 "
      "tls-ca-file=no-such-ca.pem tls-token=" TOKEN, &err);

  fail_unless (r == NULL);
  fail_unless (err && strstr (err, "no-such-ca.pem") != NULL, "%s", err);
  g_free (err);
}

GST_END_TEST;

/* Before: a failed handshake (the sender's certificate not trusted) left
 * the listening source waiting for ever. Now it is an element error with
 * the reason, after counting the connection; nothing got through. */
GST_START_TEST (test_handshake_failure_errors)
{
  gchar *other = g_build_filename (tmpdir, "other.pem", NULL);
  gchar *cert = g_build_filename (tmpdir, "server.pem", NULL);
  gchar *key = g_build_filename (tmpdir, "server.key", NULL);
  gchar *props = g_strdup_printf ("host=127.0.0.1 port=0 accept-host=127.0.0.1 "
      "tls-ca-file=%s tls-server-name=127.0.0.1 tls-token=" TOKEN, other);
  CtcpReceiver *r = ctcp_receiver_new (props, NULL);
  GstHarness *h;
  gchar *msg = NULL;
  guint8 *data = pattern (20000, 33);

  fail_unless (r != NULL);
  g_free (props);
  props = g_strdup_printf ("segment-duration=250000000 tls-role=server "
      "tls-certificate=%s tls-key=%s tls-token=" TOKEN, cert, key);
  h = sender_new (receiver_port (r), props, TRUE);
  /* the sender's fate is its own (it reports the broken handshake); only
   * the receiver is checked here */
  gst_harness_push (h, gst_buffer_new_memdup (data, 20000));
  fail_if (ctcp_receiver_wait (r, 30000, &msg));
  fail_unless (msg && strstr (msg, "TLS handshake with 127.0.0.1:") != NULL,
      "%s", msg ? msg : "no error");
  fail_unless_equals_int (refused_count (r->src), 1);
  fail_unless_equals_int (r->data->len, 0);
  gst_harness_teardown (h);
  ctcp_receiver_free (r);
  g_free (msg);
  g_free (data);
  g_free (props);
  g_free (other);
  g_free (cert);
  g_free (key);
}

GST_END_TEST;

static Suite *
ctcpattack_suite (void)
{
  Suite *s = suite_create ("ctcpattack");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_unchecked_fixture (tc, setup, teardown);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_plain_stranger_first);
  tcase_add_test (tc, test_relative_ca_file);
  tcase_add_test (tc, test_missing_ca_file);
  tcase_add_test (tc, test_handshake_failure_errors);
  return s;
}

GST_CHECK_MAIN (ctcpattack);
