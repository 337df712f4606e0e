/* twoflow — gst_twoflow_resolve(): literals, names, the family rule. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <gst/twoflow/twoflowaddress.h>

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

  check_address (gst_twoflow_resolve ("127.0.0.1", 5004,
          G_SOCKET_FAMILY_INVALID, &err), "127.0.0.1", 5004);
  check_address (gst_twoflow_resolve ("::1", 7, G_SOCKET_FAMILY_IPV6, &err),
      "::1", 7);
  fail_unless (err == NULL);
}

GST_END_TEST;

GST_START_TEST (test_family_mismatch)
{
  GError *err = NULL;

  /* an IPv4 socket cannot send to an IPv6 literal: a clear error */
  fail_unless (gst_twoflow_resolve ("::1", 5004, G_SOCKET_FAMILY_IPV4,
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
  sa = gst_twoflow_resolve ("localhost", 80, G_SOCKET_FAMILY_IPV4, &err);
  fail_unless (sa != NULL, "%s", err ? err->message : "");
  fail_unless (g_inet_address_get_is_loopback
      (g_inet_socket_address_get_address (sa)));
  fail_unless_equals_int (g_inet_socket_address_get_port (sa), 80);
  g_object_unref (sa);
}

GST_END_TEST;

static Suite *
twoflowaddress_suite (void)
{
  Suite *s = suite_create ("twoflowaddress");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_literals);
  tcase_add_test (tc, test_family_mismatch);
  tcase_add_test (tc, test_name);
  return s;
}

GST_CHECK_MAIN (twoflowaddress);
