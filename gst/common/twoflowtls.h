/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — TLS over a TCP connection (GLib's GTlsConnection, i.e.
 * glib-networking/GnuTLS), the one TLS helper of the elements and the
 * programs: blocking handshakes with a cancellable for the cTCP elements
 * (the caller owns the socket), certificate pinning and the record
 * overhead; and the programs' control channel (a GSocketClient or a
 * server connection for the main loop, certificates, session keys). */
#ifndef __TWOFLOW_TLS_H__
#define __TWOFLOW_TLS_H__

#include <gio/gio.h>

G_BEGIN_DECLS

/* The largest plaintext a TLS record carries. */
#define TWOFLOW_TLS_RECORD_SIZE 16384

typedef struct {
  const gchar *server_name;     /* SNI and the name the certificate must
                                 * match; NULL: no identity check (pin) */
  const gchar *ca_file;         /* PEM anchors; NULL: the system's */
  const gchar *pin;             /* SHA-256 of the server certificate (DER),
                                 * hex, ':' allowed, "sha256:" prefix ok */
  const gchar *cert_file;       /* client certificate (PEM) or NULL */
  const gchar *key_file;        /* its key; NULL: in cert_file */
} TwoflowTlsClientConfig;

/* The CA anchors of @file (PEM), a path absolute or relative to the
 * current directory; NULL with @error naming the file when it cannot be
 * read or holds no certificate. */
GTlsDatabase *twoflow_tls_database_new (const gchar * file, GError ** error);

/* Wraps @conn in TLS and runs the handshake. Validation: with @pin only,
 * the certificate must have that fingerprint (no CA needed); with
 * @ca_file, it must chain to one of its anchors (and match @pin, if set);
 * with neither, to the system's anchors. Errors say which check failed. */
GIOStream *twoflow_tls_client_handshake (GIOStream * conn,
    const TwoflowTlsClientConfig * config, GCancellable * cancellable,
    GError ** error);

/* Server side: @cert with its private key; @client_ca_file: require a
 * client certificate chained to it (NULL: none asked for). */
GIOStream *twoflow_tls_server_handshake (GIOStream * conn,
    GTlsCertificate * cert, const gchar * client_ca_file,
    GCancellable * cancellable, GError ** error);

/* "sha256:<64 hex digits>" of the certificate's DER. */
gchar *twoflow_tls_certificate_pin (GTlsCertificate * cert);
gboolean twoflow_tls_pin_matches (GTlsCertificate * cert, const gchar * pin);

/* Bytes each record adds on the wire, from the negotiated protocol and
 * cipher suite: TLS 1.3 AEAD 22 (5 header + 1 inner content type + 16
 * tag), TLS 1.2 AES-GCM / CCM 29 (5 + 8 explicit nonce + 16), TLS 1.2
 * ChaCha20-Poly1305 21 (5 + 16). Other (CBC) suites: 0 (unknown). */
guint twoflow_tls_record_overhead (GTlsConnection * tls);

/* "TLS 1.3", "TLS 1.2" or "other": the negotiated protocol, for stats. */
const gchar *twoflow_tls_protocol_name (GTlsConnection * tls);

/* Stores a copy of @token in *@slot (freeing the old one); an empty
 * token is none (NULL). For the tls-token properties. */
void twoflow_tls_token_set (gchar ** slot, const gchar * token);

/* The programs' control channel. */
gboolean twoflow_tls_available (GError ** error);
GTlsCertificate *twoflow_tls_load_certificate (const gchar * cert_file,
    const gchar * key_file, GError ** error);
gchar *twoflow_tls_subject_cn (GTlsCertificate * cert);

/* n random bytes from the kernel (getrandom) in hex: per-session media
 * keys, sent over the TLS control channel */
gchar *twoflow_random_hex (gsize n);

/* Sets TLS up on a GSocketClient for the main loop: @cfg's pin (checked
 * in accept-certificate), else its ca_file, else the system's anchors;
 * its client certificate (server_name is unused: the connectable's name
 * is checked). */
gboolean twoflow_tls_socket_client_configure (GSocketClient * client,
    const TwoflowTlsClientConfig * cfg, GError ** error);

/* Wraps an accepted connection in a server-side TLS connection; client_ca:
 * client certificates are requested and verified against it (NULL: none). */
GIOStream *twoflow_tls_server_wrap (GIOStream * base, GTlsCertificate * cert,
    GTlsDatabase * client_ca, GError ** error);

G_END_DECLS

#endif
