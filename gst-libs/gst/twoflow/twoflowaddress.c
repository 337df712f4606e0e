/* twoflow
 * Resolving a network element's host property into a socket address.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "twoflowaddress.h"

GInetSocketAddress *
gst_twoflow_resolve (const gchar * host, guint port, GSocketFamily family,
    GError ** error)
{
  GInetAddress *ia;
  GInetSocketAddress *sa;

  g_return_val_if_fail (host != NULL, NULL);

  ia = g_inet_address_new_from_string (host);
  if (ia && family != G_SOCKET_FAMILY_INVALID &&
      g_inet_address_get_family (ia) != family) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
        "%s is not of the local socket's address family", host);
    g_object_unref (ia);
    return NULL;
  }
  if (!ia) {
    GResolver *r = g_resolver_get_default ();
    GList *l, *addrs = g_resolver_lookup_by_name (r, host, NULL, error);

    g_object_unref (r);
    for (l = addrs; l; l = l->next) {
      if (family == G_SOCKET_FAMILY_INVALID ||
          g_inet_address_get_family (l->data) == family) {
        ia = g_object_ref (l->data);
        break;
      }
    }
    if (addrs)
      g_resolver_free_addresses (addrs);
    if (!ia) {
      if (error && !*error)
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
            "no address of the local socket's family for %s", host);
      return NULL;
    }
  }
  sa = G_INET_SOCKET_ADDRESS (g_inet_socket_address_new (ia, port));
  g_object_unref (ia);
  return sa;
}
