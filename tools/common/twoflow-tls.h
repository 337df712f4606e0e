/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — TLS on the control channel (GIO's GTlsConnection, provided by
 * glib-networking/GnuTLS), shared by twoflow-server and twoflow-proxy
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_TLS_H__
#define __TWOFLOW_TLS_H__

#include <gio/gio.h>

G_BEGIN_DECLS

/* How a client (the proxy) checks the server and proves who it is. */
typedef struct
{
  gboolean insecure;            /* plaintext control channel (lab use) */
  const gchar *ca_file;         /* verify the server's chain and name */
  const gchar *pin;             /* or: the SHA-256 of its certificate (hex) */
  const gchar *cert_file;       /* optional client certificate ... */
  const gchar *key_file;        /* ... and its key (may be in cert_file) */
} TwoflowTlsClientConfig;

gboolean twoflow_tls_available (GError ** error);
GTlsCertificate *twoflow_tls_load_certificate (const gchar * cert_file,
    const gchar * key_file, GError ** error);
gchar *twoflow_tls_fingerprint (GTlsCertificate * cert);
gchar *twoflow_tls_normalize_pin (const gchar * pin);
gchar *twoflow_tls_subject_cn (GTlsCertificate * cert);

/* n random bytes from the kernel (getrandom) in hex: per-session media
 * keys, sent over the TLS control channel */
gchar *twoflow_random_hex (gsize n);

/* Sets TLS up on a GSocketClient (nothing when cfg->insecure). */
gboolean twoflow_tls_client_configure (GSocketClient * client,
    const TwoflowTlsClientConfig * cfg, GError ** error);

/* Wraps an accepted connection in a server-side TLS connection; client_ca:
 * client certificates are requested and verified against it (NULL: none). */
GIOStream *twoflow_tls_server_wrap (GIOStream * base, GTlsCertificate * cert,
    GTlsDatabase * client_ca, GError ** error);

G_END_DECLS
#endif
