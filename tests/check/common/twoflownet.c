/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — gst/common/twoflownet: name resolution (literals, names, the
 * family rule), UDP sockets, the cancellable kept as udpsrc keeps it. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <unistd.h>
#include <sys/socket.h>
#include "twoflownet.h"

static void
check_address (GInetSocketAddress * sa, const gchar * ip, guint port)
{
  gchar *s;

  fail_unless (sa != NULL);
  s = g_inet_address_to_string (g_inet_socket_address_get_address (sa));
  fail_unless_equals_string (s, ip);
  fail_unless_equals_int (g_inet_socket_address_get_port (sa), port);
  g_free (s);
  g_object_unref (sa);
}

GST_START_TEST (test_literals)
{
  GError *err = NULL;

  check_address (twoflow_net_resolve ("127.0.0.1", 5004,
          G_SOCKET_FAMILY_INVALID, &err), "127.0.0.1", 5004);
  check_address (twoflow_net_resolve ("::1", 7, G_SOCKET_FAMILY_IPV6, &err),
      "::1", 7);
  fail_unless (err == NULL);
}

GST_END_TEST;

GST_START_TEST (test_family_mismatch)
{
  GError *err = NULL;

  /* an IPv4 socket cannot send to an IPv6 literal: a clear error */
  fail_unless (twoflow_net_resolve ("::1", 5004, G_SOCKET_FAMILY_IPV4,
          &err) == NULL);
  fail_unless (err != NULL);
  fail_unless (strstr (err->message, "::1") != NULL);
  g_clear_error (&err);
}

GST_END_TEST;

GST_START_TEST (test_name)
{
  GError *err = NULL;
  GInetSocketAddress *sa;

  /* "localhost" comes from /etc/hosts, never from the network */
  sa = twoflow_net_resolve ("localhost", 80, G_SOCKET_FAMILY_IPV4, &err);
  fail_unless (sa != NULL, "%s", err ? err->message : "");
  fail_unless (g_inet_address_get_is_loopback
      (g_inet_socket_address_get_address (sa)));
  fail_unless_equals_int (g_inet_socket_address_get_port (sa), 80);
  g_object_unref (sa);
}

GST_END_TEST;

GST_START_TEST (test_udp_open)
{
  GError *err = NULL;
  GSocket *a, *b;
  guint16 port;

  fail_if (twoflow_net_udp_open ("not-an-ip", 0, 0, 0, 0, &err));
  fail_unless (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT));
  g_clear_error (&err);
  a = twoflow_net_udp_open ("127.0.0.1", 0, TWOFLOW_NET_FORCE_BUFFERS,
      256 * 1024, 128 * 1024, &err);
  fail_unless (a != NULL, "%s", err ? err->message : "");
  port = twoflow_net_local_port (a);
  fail_unless (port > 0);
  fail_if (g_socket_get_blocking (a));
  /* as root, FORCE passes the sysctl maxima (the kernel doubles it) */
  if (geteuid () == 0) {
    gint rcv = 0;

    fail_unless (g_socket_get_option (a, SOL_SOCKET, SO_RCVBUF, &rcv, NULL));
    fail_unless (rcv >= 256 * 1024, "%d", rcv);
  }
  /* the port is taken: a second bind without reuse fails */
  fail_if (twoflow_net_udp_open ("127.0.0.1", port, 0, 0, 0, &err));
  g_clear_error (&err);
  b = twoflow_net_udp_open_any (G_SOCKET_FAMILY_IPV4, TWOFLOW_NET_BLOCKING, 0,
      0, &err);
  fail_unless (b != NULL);
  fail_unless (g_socket_get_blocking (b));
  fail_unless (twoflow_net_local_port (b) > 0);
  g_object_unref (a);
  g_object_unref (b);
}

GST_END_TEST;

typedef struct {
  GSocket *socket;
  GCancellable *cancellable;
  gint done;
  gboolean cancelled;
} Waiter;

static gpointer
waiter (gpointer data)
{
  Waiter *w = data;
  GError *err = NULL;

  if (!g_socket_condition_wait (w->socket, G_IO_IN, w->cancellable, &err))
    w->cancelled = g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&err);
  g_atomic_int_set (&w->done, 1);
  return NULL;
}

/* unlock() wakes a blocked wait; unlock_stop() hands out a new,
 * uncancelled cancellable (with its own poll fd) instead of resetting the
 * one the woken thread may still hold. */
GST_START_TEST (test_cancel)
{
  TwoflowCancel c = { 0 };
  Waiter w = { 0 };
  GCancellable *old;
  GThread *t;

  twoflow_cancel_cancel (&c);   /* before start: nothing to do */
  twoflow_cancel_replace (&c);
  fail_unless (c.cancellable == NULL);
  twoflow_cancel_init (&c);
  fail_unless (c.made_fd && c.pollfd.fd >= 0);
  w.socket = twoflow_net_udp_open ("127.0.0.1", 0, TWOFLOW_NET_BLOCKING, 0,
      0, NULL);
  w.cancellable = g_object_ref (c.cancellable);
  t = g_thread_new ("waiter", waiter, &w);
  g_usleep (50000);
  fail_if (g_atomic_int_get (&w.done));
  twoflow_cancel_cancel (&c);
  g_thread_join (t);
  fail_unless (w.cancelled);
  old = w.cancellable;
  twoflow_cancel_replace (&c);
  fail_unless (c.cancellable != old);
  fail_unless (g_cancellable_is_cancelled (old));
  fail_if (g_cancellable_is_cancelled (c.cancellable));
  fail_unless (c.made_fd);
  g_object_unref (old);
  twoflow_cancel_clear (&c);
  fail_unless (c.cancellable == NULL && !c.made_fd);
  g_object_unref (w.socket);
}

GST_END_TEST;

GST_START_TEST (test_same_ip)
{
  fail_unless (twoflow_net_same_ip ("127.0.0.1", "127.0.0.1"));
  /* an IPv4-mapped IPv6 address is its IPv4 one, on either side */
  fail_unless (twoflow_net_same_ip ("::ffff:10.0.0.2", "10.0.0.2"));
  fail_unless (twoflow_net_same_ip ("10.0.0.2", "::ffff:10.0.0.2"));
  fail_unless (twoflow_net_same_ip ("::1", "0:0::1"));
  fail_if (twoflow_net_same_ip ("10.0.0.2", "10.0.0.3"));
  fail_if (twoflow_net_same_ip ("::1", "127.0.0.1"));
  fail_if (twoflow_net_same_ip ("localhost", "127.0.0.1"));
  fail_if (twoflow_net_same_ip (NULL, "127.0.0.1"));
  fail_if (twoflow_net_same_ip ("127.0.0.1", NULL));
}

GST_END_TEST;

GST_START_TEST (test_timeout_seconds)
{
  fail_unless_equals_int (twoflow_net_timeout_seconds (0), 0);
  fail_unless_equals_int (twoflow_net_timeout_seconds (1), 1);
  fail_unless_equals_int (twoflow_net_timeout_seconds (GST_SECOND), 1);
  fail_unless_equals_int (twoflow_net_timeout_seconds (GST_SECOND + 1), 2);
  fail_unless_equals_int (twoflow_net_timeout_seconds (5 * GST_SECOND), 5);
}

GST_END_TEST;

GST_START_TEST (test_peer_address)
{
  GError *err = NULL;
  GSocket *ls, *c, *a;
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *sa = g_inet_socket_address_new (lo, 0), *bound;
  gchar *ip = (gchar *) "x", *peer, *want;

  ls = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, &err);
  fail_unless (ls && g_socket_bind (ls, sa, TRUE, &err)
      && g_socket_listen (ls, &err), "%s", err ? err->message : "");
  /* not connected: no peer */
  fail_unless (twoflow_net_peer_address (ls, &ip) == NULL);
  fail_unless (ip == NULL);
  bound = g_socket_get_local_address (ls, &err);
  c = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, &err);
  fail_unless (g_socket_connect (c, bound, NULL, &err), "%s",
      err ? err->message : "");
  a = g_socket_accept (ls, NULL, &err);
  fail_unless (a != NULL);
  /* the accepted socket's peer is the client's local address */
  want = g_strdup_printf ("127.0.0.1:%u", twoflow_net_local_port (c));
  peer = twoflow_net_peer_address (a, &ip);
  fail_unless_equals_string (peer, want);
  fail_unless_equals_string (ip, "127.0.0.1");
  g_free (peer);
  g_free (ip);
  g_free (want);
  /* the client's is the listening port */
  want = g_strdup_printf ("127.0.0.1:%u", twoflow_net_local_port (ls));
  peer = twoflow_net_peer_address (c, NULL);
  fail_unless_equals_string (peer, want);
  g_free (peer);
  g_free (want);
  g_object_unref (a);
  g_object_unref (c);
  g_object_unref (ls);
  g_object_unref (bound);
  g_object_unref (sa);
  g_object_unref (lo);
}

GST_END_TEST;

GST_START_TEST (test_hello_resolve)
{
  GstElement *e = gst_element_factory_make ("fakesink", NULL);
  GstBus *bus = gst_bus_new ();
  GInetSocketAddress *dest = (GInetSocketAddress *) 0x1;
  GstMessage *msg;
  GError *err = NULL;

  gst_element_set_bus (e, bus);
  /* no hello-host: no hellos, no error */
  fail_unless (twoflow_net_hello_resolve (e, NULL, 5004, &dest));
  fail_unless (dest == NULL);
  fail_unless (twoflow_net_hello_resolve (e, "", 5004, &dest));
  fail_unless (dest == NULL);
  fail_unless (gst_bus_pop (bus) == NULL);
  fail_unless (twoflow_net_hello_resolve (e, "127.0.0.1", 5004, &dest));
  check_address (dest, "127.0.0.1", 5004);
  fail_unless (gst_bus_pop (bus) == NULL);
  /* port 0: a settings error that names the address */
  fail_if (twoflow_net_hello_resolve (e, "127.0.0.1", 0, &dest));
  fail_unless (dest == NULL);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_SETTINGS));
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}

GST_END_TEST;

static Suite *
twoflownet_suite (void)
{
  Suite *s = suite_create ("twoflownet");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_literals);
  tcase_add_test (tc, test_family_mismatch);
  tcase_add_test (tc, test_name);
  tcase_add_test (tc, test_udp_open);
  tcase_add_test (tc, test_cancel);
  tcase_add_test (tc, test_same_ip);
  tcase_add_test (tc, test_timeout_seconds);
  tcase_add_test (tc, test_peer_address);
  tcase_add_test (tc, test_hello_resolve);
  return s;
}

GST_CHECK_MAIN (twoflownet);
