/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — TLS over a TCP connection, see twoflowtls.h */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <errno.h>
#include <sys/random.h>
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

/* ------------------------------------------------------------------
 * The programs' control channel (twoflow-server, twoflow-proxy):
 * certificates from files, GSocketClient/GTlsServerConnection set up for
 * the GLib main loop, per-session random keys. */

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
  gboolean ok = twoflow_tls_pin_matches (peer, t->pin);

  if (!ok) {
    gchar *fp = twoflow_tls_certificate_pin (peer);

    g_printerr ("control TLS: server certificate %s does not match the "
        "pinned %s\n", fp ? fp : "?", t->pin);
    g_free (fp);
  }
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
twoflow_tls_socket_client_configure (GSocketClient * client,
    const TwoflowTlsClientConfig * cfg, GError ** error)
{
  ClientTls *t;

  if (!twoflow_tls_available (error))
    return FALSE;
  t = g_new0 (ClientTls, 1);
  if (cfg->pin && *cfg->pin) {
    const gchar *p = cfg->pin;
    guint digits = 0;

    if (g_ascii_strncasecmp (p, "sha256:", 7) == 0)
      p += 7;
    for (; *p; p++)
      digits += g_ascii_isxdigit (*p) != 0;
    t->pin = g_strdup (cfg->pin);
    if (digits != 64) {
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
