/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — TLS over a TCP connection, see twoflowtls.h */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include "twoflowtls.h"

gchar *
twoflow_tls_certificate_pin (GTlsCertificate * cert)
{
  GByteArray *der = NULL;
  gchar *hex, *pin;

  g_object_get (cert, "certificate", &der, NULL);
  if (!der)
    return NULL;
  hex = g_compute_checksum_for_data (G_CHECKSUM_SHA256, der->data, der->len);
  g_byte_array_unref (der);
  pin = g_strconcat ("sha256:", hex, NULL);
  g_free (hex);
  return pin;
}

gboolean
twoflow_tls_pin_matches (GTlsCertificate * cert, const gchar * pin)
{
  gchar *mine = twoflow_tls_certificate_pin (cert);
  GString *norm = g_string_new ("sha256:");
  gboolean ok;
  const gchar *p = pin;

  if (g_ascii_strncasecmp (p, "sha256:", 7) == 0)
    p += 7;
  for (; *p; p++)
    if (g_ascii_isxdigit (*p))
      g_string_append_c (norm, g_ascii_tolower (*p));
    else if (*p != ':' && *p != ' ')
      break;
  ok = mine && *p == '\0' && strcmp (mine, norm->str) == 0;
  g_free (mine);
  g_string_free (norm, TRUE);
  return ok;
}

typedef struct {
  const TwoflowTlsClientConfig *c;
  gboolean pin_checked;
  GTlsCertificateFlags errors;
} Verify;

/* Only called when the normal validation failed: with a pin and no CA
 * file, the pin is the trust anchor (the other errors: a self-signed
 * certificate, its name). */
static gboolean
accept_certificate (GTlsConnection * conn, GTlsCertificate * peer,
    GTlsCertificateFlags errors, gpointer user_data)
{
  Verify *v = user_data;

  v->errors = errors;
  if (!v->c->pin || v->c->ca_file)
    return FALSE;
  /* expiry and revocation still count */
  if (errors & (G_TLS_CERTIFICATE_EXPIRED | G_TLS_CERTIFICATE_NOT_ACTIVATED
          | G_TLS_CERTIFICATE_REVOKED | G_TLS_CERTIFICATE_INSECURE))
    return FALSE;
  v->pin_checked = TRUE;
  return twoflow_tls_pin_matches (peer, v->c->pin);
}

static gchar *
describe_errors (GTlsCertificateFlags f)
{
  GString *s = g_string_new (NULL);

  if (f & G_TLS_CERTIFICATE_UNKNOWN_CA)
    g_string_append (s, " unknown-ca");
  if (f & G_TLS_CERTIFICATE_BAD_IDENTITY)
    g_string_append (s, " bad-identity");
  if (f & G_TLS_CERTIFICATE_NOT_ACTIVATED)
    g_string_append (s, " not-activated");
  if (f & G_TLS_CERTIFICATE_EXPIRED)
    g_string_append (s, " expired");
  if (f & G_TLS_CERTIFICATE_REVOKED)
    g_string_append (s, " revoked");
  if (f & G_TLS_CERTIFICATE_INSECURE)
    g_string_append (s, " insecure");
  if (f & G_TLS_CERTIFICATE_GENERIC_ERROR)
    g_string_append (s, " generic-error");
  return g_string_free (s, FALSE);
}

GTlsDatabase *
twoflow_tls_database_new (const gchar * file, GError ** error)
{
  /* GTlsFileDatabase takes absolute paths only: with a relative one it
   * warns and trusts nothing, and a missing file is no error to it */
  gchar *abs = g_canonicalize_filename (file, NULL);
  GError *e = NULL;
  GList *certs = g_tls_certificate_list_new_from_file (abs, &e);
  GTlsDatabase *db = NULL;

  if (e) {
    g_set_error (error, e->domain, e->code, "%s: %s", abs, e->message);
    g_error_free (e);
  } else if (!certs) {
    g_set_error (error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE,
        "%s: no certificate in it", abs);
  } else {
    db = g_tls_file_database_new (abs, error);
  }
  g_list_free_full (certs, g_object_unref);
  g_free (abs);
  return db;
}

GIOStream *
twoflow_tls_client_handshake (GIOStream * conn,
    const TwoflowTlsClientConfig * c, GCancellable * cancellable,
    GError ** error)
{
  GSocketConnectable *identity = NULL;
  GIOStream *tls;
  Verify v = { c, FALSE, 0 };
  GError *err = NULL;

  if (c->server_name && *c->server_name)
    identity = g_network_address_new (c->server_name, 0);
  tls = g_tls_client_connection_new (conn, identity, error);
  g_clear_object (&identity);
  if (!tls)
    return NULL;
  if (c->ca_file) {
    GTlsDatabase *db = twoflow_tls_database_new (c->ca_file, error);

    if (!db) {
      g_object_unref (tls);
      return NULL;
    }
    g_tls_connection_set_database (G_TLS_CONNECTION (tls), db);
    g_object_unref (db);
  }
  if (c->cert_file) {
    GTlsCertificate *cert = c->key_file ?
        g_tls_certificate_new_from_files (c->cert_file, c->key_file, error) :
        g_tls_certificate_new_from_file (c->cert_file, error);

    if (!cert) {
      g_object_unref (tls);
      return NULL;
    }
    g_tls_connection_set_certificate (G_TLS_CONNECTION (tls), cert);
    g_object_unref (cert);
  }
  g_signal_connect (tls, "accept-certificate", G_CALLBACK
      (accept_certificate), &v);
  if (!g_tls_connection_handshake (G_TLS_CONNECTION (tls), cancellable,
          &err)) {
    if (g_error_matches (err, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE)) {
      gchar *why = describe_errors (v.errors);

      g_set_error (error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE,
          "server certificate rejected:%s%s", v.pin_checked ?
          " fingerprint does not match tls-pin" : why, v.pin_checked ? "" :
          (c->ca_file ? " (checked against tls-ca-file)" :
              " (checked against the system CAs)"));
      g_free (why);
      g_clear_error (&err);
    } else {
      g_propagate_error (error, err);
    }
    g_signal_handlers_disconnect_by_data (tls, &v);
    g_object_unref (tls);
    return NULL;
  }
  g_signal_handlers_disconnect_by_data (tls, &v);
  /* a CA-valid certificate never reached accept-certificate: the pin
   * must hold too */
  if (c->pin && !v.pin_checked) {
    GTlsCertificate *peer =
        g_tls_connection_get_peer_certificate (G_TLS_CONNECTION (tls));

    if (!peer || !twoflow_tls_pin_matches (peer, c->pin)) {
      g_set_error (error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE,
          "server certificate rejected: fingerprint does not match tls-pin");
      g_object_unref (tls);
      return NULL;
    }
  }
  return tls;
}

/* glib-networking asks a server about every client certificate, also a
 * valid one: accept exactly those that chain to the client CA file. */
static gboolean
accept_client (GTlsConnection * conn, GTlsCertificate * peer,
    GTlsCertificateFlags errors, gpointer user_data)
{
  return errors == 0;
}

GIOStream *
twoflow_tls_server_handshake (GIOStream * conn, GTlsCertificate * cert,
    const gchar * client_ca_file, GCancellable * cancellable, GError ** error)
{
  GIOStream *tls = g_tls_server_connection_new (conn, cert, error);

  if (!tls)
    return NULL;
  if (client_ca_file) {
    GTlsDatabase *db = twoflow_tls_database_new (client_ca_file, error);

    if (!db) {
      g_object_unref (tls);
      return NULL;
    }
    g_tls_connection_set_database (G_TLS_CONNECTION (tls), db);
    g_object_unref (db);
    g_object_set (tls, "authentication-mode",
        G_TLS_AUTHENTICATION_REQUIRED, NULL);
    g_signal_connect (tls, "accept-certificate", G_CALLBACK (accept_client),
        NULL);
  }
  if (!g_tls_connection_handshake (G_TLS_CONNECTION (tls), cancellable,
          error)) {
    g_object_unref (tls);
    return NULL;
  }
  return tls;
}

guint
twoflow_tls_record_overhead (GTlsConnection * tls)
{
  GTlsProtocolVersion v = g_tls_connection_get_protocol_version (tls);
  gchar *suite = g_tls_connection_get_ciphersuite_name (tls);
  guint ovh = 0;

  if (v == G_TLS_PROTOCOL_VERSION_TLS_1_3)
    ovh = 22;
  else if (suite && v == G_TLS_PROTOCOL_VERSION_TLS_1_2) {
    gchar *up = g_ascii_strup (suite, -1);

    if (strstr (up, "CHACHA20"))
      ovh = 21;
    else if (strstr (up, "GCM") || strstr (up, "CCM"))
      ovh = 29;
    g_free (up);
  }
  g_free (suite);
  return ovh;
}

const gchar *
twoflow_tls_protocol_name (GTlsConnection * tls)
{
  GTlsProtocolVersion v = g_tls_connection_get_protocol_version (tls);

  return v == G_TLS_PROTOCOL_VERSION_TLS_1_3 ? "TLS 1.3" :
      v == G_TLS_PROTOCOL_VERSION_TLS_1_2 ? "TLS 1.2" : "other";
}

void
twoflow_tls_token_set (gchar ** slot, const gchar * token)
{
  g_free (*slot);
  *slot = token && *token ? g_strdup (token) : NULL;
}
