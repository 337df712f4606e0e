/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — TLS on the control channel, shared by twoflow-server and
 * twoflow-proxy
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#include <string.h>
#include <errno.h>
#include <sys/random.h>
#include "twoflow-tls.h"

gchar *
twoflow_random_hex (gsize n)
{
  guint8 *b = g_malloc (n);
  GString *s = g_string_sized_new (2 * n + 1);
  gsize got = 0, i;

  while (got < n) {
    gssize r = getrandom (b + got, n - got, 0);
    if (r > 0)
      got += r;
    else
      g_assert (errno == EINTR);
  }
  for (i = 0; i < n; i++)
    g_string_append_printf (s, "%02x", b[i]);
  memset (b, 0, n);
  g_free (b);
  return g_string_free (s, FALSE);
}

gboolean
twoflow_tls_available (GError ** error)
{
  if (!g_tls_backend_supports_tls (g_tls_backend_get_default ())) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
        "no TLS backend (install glib-networking), or run with --insecure");
    return FALSE;
  }
  return TRUE;
}

GTlsCertificate *
twoflow_tls_load_certificate (const gchar * cert_file, const gchar * key_file,
    GError ** error)
{
  if (!twoflow_tls_available (error))
    return NULL;
  if (key_file && g_strcmp0 (key_file, cert_file) != 0)
    return g_tls_certificate_new_from_files (cert_file, key_file, error);
  return g_tls_certificate_new_from_file (cert_file, error);
}

/* SHA-256 of the certificate's DER, lower-case hex without separators
 * (what `certtool -i --hash sha256` / `openssl x509 -fingerprint -sha256`
 * print, once colons are removed). */
gchar *
twoflow_tls_fingerprint (GTlsCertificate * cert)
{
  GByteArray *der = NULL;
  gchar *hex;

  g_object_get (cert, "certificate", &der, NULL);
  if (der == NULL)
    return NULL;
  hex = g_compute_checksum_for_data (G_CHECKSUM_SHA256, der->data, der->len);
  g_byte_array_unref (der);
  return hex;
}

/* "AB:CD:..." or "abcd..." -> "abcd..." */
gchar *
twoflow_tls_normalize_pin (const gchar * pin)
{
  GString *s = g_string_new (NULL);
  const gchar *p;

  for (p = pin; p && *p; p++)
    if (g_ascii_isxdigit (*p))
      g_string_append_c (s, g_ascii_tolower (*p));
  return g_string_free (s, FALSE);
}

/* The CN of the certificate's subject, or its whole subject name. */
gchar *
twoflow_tls_subject_cn (GTlsCertificate * cert)
{
  gchar *subject = g_tls_certificate_get_subject_name (cert);
  gchar *cn = NULL, **parts;
  gint i;

  if (subject == NULL)
    return NULL;
  parts = g_strsplit (subject, ",", -1);
  for (i = 0; parts[i]; i++) {
    gchar *p = g_strstrip (parts[i]);
    if (g_ascii_strncasecmp (p, "CN=", 3) == 0) {
      cn = g_strdup (p + 3);
      break;
    }
  }
  g_strfreev (parts);
  if (cn == NULL)
    return subject;
  g_free (subject);
  return cn;
}

typedef struct
{
  gchar *pin;
  GTlsDatabase *db;
  GTlsCertificate *own;
} ClientTls;

static void
client_tls_free (gpointer data)
{
  ClientTls *t = data;
  g_free (t->pin);
  g_clear_object (&t->db);
  g_clear_object (&t->own);
  g_free (t);
}

/* Only with a pin: no database, so every certificate comes here, and the
 * one whose SHA-256 matches the pin is accepted (its chain and name are
 * not looked at: the pin is the trust). */
static gboolean
accept_pinned (GTlsConnection * conn, GTlsCertificate * peer,
    GTlsCertificateFlags errors, gpointer user_data)
{
  ClientTls *t = user_data;
  gchar *fp = twoflow_tls_fingerprint (peer);
  gboolean ok = fp && g_str_equal (fp, t->pin);

  if (!ok)
    g_printerr ("control TLS: server certificate %s does not match the "
        "pinned %s\n", fp ? fp : "?", t->pin);
  g_free (fp);
  return ok;
}

static void
client_event (GSocketClient * client, GSocketClientEvent event,
    GSocketConnectable * connectable, GIOStream * connection,
    gpointer user_data)
{
  ClientTls *t = user_data;

  if (event != G_SOCKET_CLIENT_TLS_HANDSHAKING
      || !G_IS_TLS_CONNECTION (connection))
    return;
  if (t->own)
    g_tls_connection_set_certificate (G_TLS_CONNECTION (connection), t->own);
  if (t->pin) {
    g_tls_connection_set_database (G_TLS_CONNECTION (connection), NULL);
    g_signal_connect (connection, "accept-certificate",
        G_CALLBACK (accept_pinned), t);
  } else if (t->db) {
    g_tls_connection_set_database (G_TLS_CONNECTION (connection), t->db);
  }
}

gboolean
twoflow_tls_client_configure (GSocketClient * client,
    const TwoflowTlsClientConfig * cfg, GError ** error)
{
  ClientTls *t;

  if (cfg->insecure)
    return TRUE;
  if (!twoflow_tls_available (error))
    return FALSE;
  t = g_new0 (ClientTls, 1);
  if (cfg->pin && *cfg->pin) {
    t->pin = twoflow_tls_normalize_pin (cfg->pin);
    if (strlen (t->pin) != 64) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
          "--tls-pin: a SHA-256 fingerprint is 64 hex digits");
      client_tls_free (t);
      return FALSE;
    }
  } else if (cfg->ca_file) {
    /* GTlsFileDatabase trusts nothing from a relative path (a warning,
     * no error): from the current directory */
    gchar *ca = g_canonicalize_filename (cfg->ca_file, NULL);

    t->db = g_tls_file_database_new (ca, error);
    g_free (ca);
    if (t->db == NULL) {
      client_tls_free (t);
      return FALSE;
    }
  }
  /* neither: the system's trust store */
  if (cfg->cert_file) {
    t->own = twoflow_tls_load_certificate (cfg->cert_file, cfg->key_file,
        error);
    if (t->own == NULL) {
      client_tls_free (t);
      return FALSE;
    }
  }
  g_socket_client_set_tls (client, TRUE);
  g_signal_connect_data (client, "event", G_CALLBACK (client_event), t,
      (GClosureNotify) (void (*)(void)) client_tls_free, 0);
  return TRUE;
}

/* A server-side connection asks here for every client certificate
 * (glib-networking has no validation flags on that side): only one that
 * verified against the client CA with no error is accepted. */
static gboolean
check_client_cert (GTlsConnection * conn, GTlsCertificate * peer,
    GTlsCertificateFlags errors, gpointer user_data)
{
  if (errors != 0)
    g_printerr ("control TLS: client certificate refused (errors 0x%x)\n",
        errors);
  return errors == 0;
}

GIOStream *
twoflow_tls_server_wrap (GIOStream * base, GTlsCertificate * cert,
    GTlsDatabase * client_ca, GError ** error)
{
  GIOStream *tls = g_tls_server_connection_new (base, cert, error);

  if (tls == NULL)
    return NULL;
  /* without client certificates the server verifies nothing: no trust
   * store (the system's default database) per connection */
  g_tls_connection_set_database (G_TLS_CONNECTION (tls), client_ca);
  if (client_ca) {
    g_object_set (tls, "authentication-mode",
        G_TLS_AUTHENTICATION_REQUESTED, NULL);
    g_signal_connect (tls, "accept-certificate",
        G_CALLBACK (check_client_cert), NULL);
  }
  return tls;
}
