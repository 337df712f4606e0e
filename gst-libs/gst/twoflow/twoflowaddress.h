/* twoflow
 * Resolving a network element's host property into a socket address.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_TWOFLOW_ADDRESS_H__
#define __GST_TWOFLOW_ADDRESS_H__

#include <gio/gio.h>

G_BEGIN_DECLS

/* @host is an IP address or a name (looked up with the default GResolver,
 * blocking). With @family G_SOCKET_FAMILY_INVALID the first address of
 * any family is taken, otherwise the first of @family (a socket already
 * bound can only reach its own family). NULL with @error set when there
 * is none. */
GInetSocketAddress *gst_twoflow_resolve (const gchar * host, guint port,
    GSocketFamily family, GError ** error);

G_END_DECLS

#endif
