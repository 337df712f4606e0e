/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP security: per-session keys, AEAD sealing of data packets
 * and ACK datagrams, replay windows (sans-IO: no sockets, no clock).
 *
 * Keys. A 32-byte master key is either given (`key`, e.g. handed over by
 * the control channel) or derived from a passphrase with PBKDF2-HMAC-SHA256
 * (GST_ERAP_PBKDF2_ITERATIONS, once when the element starts). Each session
 * has a random 64-bit salt chosen by the sender; the session keys are
 * HKDF-SHA256 (RFC 5869) of the master key with that salt, one key per
 * direction ("erap data", "erap ack"). The receiver learns the salt from
 * the first data packet that authenticates under it and then pins it.
 *
 * AEAD: AES-256-GCM from GnuTLS (gnutls_aead_cipher_*), 16-byte tag.
 *
 * Sealed data packet (overhead 24 bytes over the 8-byte plain header):
 *
 *   | seqno (32) | B|E|appSeq (32) | salt (64) | payload (encrypted) | tag (128) |
 *
 *   AAD = the first 16 bytes; nonce = 0x01 ‖ 0^7 ‖ seqno (32). seqnos are
 *   never reused under one session key: the sender refuses to send past
 *   2^32 - 1 (gst_erap_crypto_seal_data() returns FALSE).
 *
 * Sealed ACK datagram (36 bytes over the plain ACK records it carries):
 *
 *   | 0 (16) | 0xA2 (8) | version 1 (8) | salt (64) | counter (64) |
 *   | ACK records (encrypted) ... | tag (128) |
 *
 *   AAD = the first 20 bytes; nonce = 0x02 ‖ 0^3 ‖ counter (64), the
 *   counter counts the receiver's ACK datagrams from 1. Byte 2 (0xA2)
 *   differs from a plain ACK record's type byte (0xA1).
 *
 * Sealed hello (NAT traversal, erappacket.h; 16 bytes over the plain 24):
 *
 *   | hello with flags bit 0 set (24 bytes) | tag (128) |
 *
 *   tag = HMAC-SHA256 of the 24 bytes, truncated to 16, under the hello
 *   key HKDF-SHA256(master, no salt, "twoflow erap v1 hello"): the hello
 *   precedes the session salt, and a MAC has no nonce to reuse. Replays
 *   are the learner's (counter above the last accepted one).
 *
 * Replay windows: a sliding bitmap of GST_ERAP_REPLAY_WINDOW numbers above
 * the highest authenticated one, on the receiver for data seqnos and on
 * the sender for ACK counters. Only authenticated packets move a window.
 */
#ifndef __GST_ERAP_CRYPTO_H__
#define __GST_ERAP_CRYPTO_H__

#include <glib.h>
#include <gst/erap/erap-prelude.h>
#include <gst/erap/erappacket.h>

G_BEGIN_DECLS

#define GST_ERAP_KEY_SIZE            32
#define GST_ERAP_SALT_SIZE           8
#define GST_ERAP_TAG_SIZE            16
/* bytes a sealed data packet adds to the plain one (salt + tag) */
#define GST_ERAP_DATA_SEAL_OVERHEAD  (GST_ERAP_SALT_SIZE + GST_ERAP_TAG_SIZE)
#define GST_ERAP_SEALED_DATA_HEADER  (GST_ERAP_DATA_HEADER_SIZE + GST_ERAP_SALT_SIZE)
#define GST_ERAP_SEALED_ACK_HEADER   20
#define GST_ERAP_ACK_SEAL_OVERHEAD   (GST_ERAP_SEALED_ACK_HEADER + GST_ERAP_TAG_SIZE)
#define GST_ERAP_SEALED_ACK_TYPE     0xA2
#define GST_ERAP_REPLAY_WINDOW       8192
#define GST_ERAP_PBKDF2_ITERATIONS   100000
#define GST_ERAP_PASSPHRASE_MIN      10
#define GST_ERAP_PASSPHRASE_MAX      79

typedef struct _GstErapCrypto GstErapCrypto;

typedef enum {
  GST_ERAP_CRYPTO_SENDER,       /* seals data, opens ACKs */
  GST_ERAP_CRYPTO_RECEIVER,     /* opens data, seals ACKs */
} GstErapCryptoRole;

typedef enum {
  GST_ERAP_OPEN_OK = 0,
  GST_ERAP_OPEN_AUTH_FAILED,    /* tag, salt or format wrong */
  GST_ERAP_OPEN_REPLAY,         /* authentic, but seen or too old */
} GstErapOpenResult;

typedef struct {
  guint64 sealed;
  guint64 opened;
  guint64 auth_failures;
  guint64 replays;
  gboolean salt_pinned;         /* receiver: a session salt is known */
} GstErapCryptoStats;

/* Master key from a passphrase (PBKDF2-HMAC-SHA256). FALSE if GnuTLS
 * fails. Length limits are the caller's (elements use 10..79, as SRT). */
gboolean gst_erap_crypto_master_from_passphrase (const gchar * passphrase,
    guint8 master[GST_ERAP_KEY_SIZE]);
/* Master key from 64 hex digits; FALSE if malformed. */
gboolean gst_erap_crypto_master_from_hex (const gchar * hex,
    guint8 master[GST_ERAP_KEY_SIZE]);

/* The elements' settings: 0 when neither is set (plaintext), 1 when
 * @master was derived, -1 (with @error) when a setting is invalid: a
 * passphrase outside 10..79 characters, a key that is not 64 hex digits,
 * or both set. */
TWOFLOW_ERAP_API
gint gst_erap_crypto_master_from_settings (const gchar * passphrase,
    const gchar * key_hex, guint8 master[GST_ERAP_KEY_SIZE], GError ** error);

/* @salt: NULL draws a random one (sender); ignored for a receiver. */
TWOFLOW_ERAP_API
GstErapCrypto *gst_erap_crypto_new (GstErapCryptoRole role,
    const guint8 master[GST_ERAP_KEY_SIZE], const guint8 * salt);
TWOFLOW_ERAP_API
void gst_erap_crypto_free (GstErapCrypto * c);
/* The session salt (sender: always; receiver: once pinned), as a number */
TWOFLOW_ERAP_API
guint64 gst_erap_crypto_get_salt (GstErapCrypto * c);

/* Sender: writes the sealed packet (header, salt, ciphertext, tag) to
 * @out, which holds payload_len + GST_ERAP_SEALED_DATA_HEADER +
 * GST_ERAP_TAG_SIZE bytes. FALSE if @seqno >= 2^32 (never reuse a nonce)
 * or the cipher fails. */
TWOFLOW_ERAP_API
gboolean gst_erap_crypto_seal_data (GstErapCrypto * c, guint64 seqno,
    const guint8 header[GST_ERAP_DATA_HEADER_SIZE], const guint8 * payload,
    gsize payload_len, guint8 * out);
/* Receiver: authenticates and decrypts @pkt in place. On OK @pkt holds the
 * plain packet (8-byte header and payload), *plain_len bytes. The first
 * packet that authenticates pins the session salt; packets under any other
 * salt then fail. */
TWOFLOW_ERAP_API
GstErapOpenResult gst_erap_crypto_open_data (GstErapCrypto * c, guint8 * pkt,
    gsize len, gsize * plain_len);

/* TRUE if @dgram looks like a sealed ACK datagram; gives its salt. */
TWOFLOW_ERAP_API
gboolean gst_erap_crypto_peek_ack (const guint8 * dgram, gsize len,
    guint64 * salt);
/* Receiver: seals @records (plain ACK records) into @out, which holds
 * records_len + GST_ERAP_ACK_SEAL_OVERHEAD bytes; returns the length or 0. */
TWOFLOW_ERAP_API
gsize gst_erap_crypto_seal_ack (GstErapCrypto * c, const guint8 * records,
    gsize records_len, guint8 * out);
/* Sender: authenticates and decrypts in place; the plain records are then
 * at @dgram + GST_ERAP_SEALED_ACK_HEADER, *records_len long. */
TWOFLOW_ERAP_API
GstErapOpenResult gst_erap_crypto_open_ack (GstErapCrypto * c, guint8 * dgram,
    gsize len, gsize * records_len);

#define GST_ERAP_SEALED_HELLO_SIZE   (GST_ERAP_HELLO_SIZE + GST_ERAP_TAG_SIZE)
/* Either role: seals @h (its sealed flag is set here) into @out. FALSE
 * if the MAC fails. */
TWOFLOW_ERAP_API
gboolean gst_erap_crypto_seal_hello (GstErapCrypto * c, const GstErapHello * h,
    guint8 out[GST_ERAP_SEALED_HELLO_SIZE]);
/* TRUE if @dgram is a sealed hello whose tag is right under this key. */
TWOFLOW_ERAP_API
gboolean gst_erap_crypto_open_hello (GstErapCrypto * c, const guint8 * dgram,
    gsize len);

/* Counts a packet rejected elsewhere (e.g. a plain ACK for a keyed
 * session) as an auth failure. */
TWOFLOW_ERAP_API
void gst_erap_crypto_count_failure (GstErapCrypto * c);
/* Counters are updated atomically: any thread may read them. */
TWOFLOW_ERAP_API
void gst_erap_crypto_get_stats (GstErapCrypto * c, GstErapCryptoStats * st);

/* The replay window on its own (exposed for tests). */
typedef struct {
  guint64 top;                  /* highest number accepted, 0: none */
  guint64 bits[GST_ERAP_REPLAY_WINDOW / 64];
} GstErapReplayWindow;

/* TRUE (and marks @n) if @n is new and not older than the window. */
TWOFLOW_ERAP_API
gboolean gst_erap_replay_check_and_mark (GstErapReplayWindow * w, guint64 n);

G_END_DECLS

#endif
