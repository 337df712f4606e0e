/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP security (see erapcrypto.h). All cryptography is GnuTLS's:
 * PBKDF2, HKDF and AES-256-GCM; this file only frames packets, builds
 * nonces and keeps the replay windows. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/gst.h>
#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include "erapcrypto.h"

#define PBKDF2_SALT "twoflow-erap-v1 passphrase"
#define NONCE_SIZE 12
#define CRYPTO_ERROR g_quark_from_static_string ("gst-erap-crypto-error")
#define DIR_DATA 0x01
#define DIR_ACK 0x02

struct _GstErapCrypto {
  GstErapCryptoRole role;
  guint8 master[GST_ERAP_KEY_SIZE];
  guint8 salt[GST_ERAP_SALT_SIZE];
  gboolean pinned;              /* sender: always */
  gnutls_aead_cipher_hd_t data; /* data key (sender seals, receiver opens) */
  gnutls_aead_cipher_hd_t ack;  /* ACK key (receiver seals, sender opens) */
  /* receiver before pinning: the last candidate salt tried */
  gboolean have_cand;
  guint8 cand_salt[GST_ERAP_SALT_SIZE];
  gnutls_aead_cipher_hd_t cand_data, cand_ack;
  guint64 ack_counter;          /* receiver: last ACK datagram sealed */
  GstErapReplayWindow win;      /* receiver: data seqnos; sender: ACK counters */
  guint64 sealed, opened, auth_failures, replays;
  guint8 hello_key[32];         /* HMAC-SHA256 key of hellos */
};

static inline void
inc (guint64 * v)
{
  __atomic_fetch_add (v, 1, __ATOMIC_RELAXED);
}

gboolean
gst_erap_crypto_master_from_passphrase (const gchar * passphrase,
    guint8 master[GST_ERAP_KEY_SIZE])
{
  gnutls_datum_t key = { (unsigned char *) passphrase, strlen (passphrase) };
  gnutls_datum_t salt = { (unsigned char *) PBKDF2_SALT,
    sizeof (PBKDF2_SALT) - 1
  };

  return gnutls_pbkdf2 (GNUTLS_MAC_SHA256, &key, &salt,
      GST_ERAP_PBKDF2_ITERATIONS, master, GST_ERAP_KEY_SIZE) == 0;
}

gboolean
gst_erap_crypto_master_from_hex (const gchar * hex,
    guint8 master[GST_ERAP_KEY_SIZE])
{
  guint i;

  if (!hex || strlen (hex) != 2 * GST_ERAP_KEY_SIZE)
    return FALSE;
  for (i = 0; i < GST_ERAP_KEY_SIZE; i++) {
    gint hi = g_ascii_xdigit_value (hex[2 * i]);
    gint lo = g_ascii_xdigit_value (hex[2 * i + 1]);

    if (hi < 0 || lo < 0)
      return FALSE;
    master[i] = (hi << 4) | lo;
  }
  return TRUE;
}

gint
gst_erap_crypto_master_from_settings (const gchar * passphrase,
    const gchar * key_hex, guint8 master[GST_ERAP_KEY_SIZE], GError ** error)
{
  gboolean have_pass = passphrase && *passphrase;
  gboolean have_key = key_hex && *key_hex;

  if (!have_pass && !have_key)
    return 0;
  if (have_pass && have_key) {
    g_set_error (error, CRYPTO_ERROR, 1,
        "set either passphrase or key, not both");
    return -1;
  }
  if (have_key) {
    if (!gst_erap_crypto_master_from_hex (key_hex, master)) {
      g_set_error (error, CRYPTO_ERROR, 1,
          "key must be %d hexadecimal digits", 2 * GST_ERAP_KEY_SIZE);
      return -1;
    }
    return 1;
  }
  if (strlen (passphrase) < GST_ERAP_PASSPHRASE_MIN ||
      strlen (passphrase) > GST_ERAP_PASSPHRASE_MAX) {
    g_set_error (error, CRYPTO_ERROR, 1,
        "passphrase must have %d to %d characters", GST_ERAP_PASSPHRASE_MIN,
        GST_ERAP_PASSPHRASE_MAX);
    return -1;
  }
  if (!gst_erap_crypto_master_from_passphrase (passphrase, master)) {
    g_set_error (error, CRYPTO_ERROR, 2,
        "PBKDF2 failed (GnuTLS)");
    return -1;
  }
  return 1;
}

/* HKDF-SHA256(master, salt, info) -> AES-256-GCM handle */
static gboolean
session_cipher (const guint8 master[GST_ERAP_KEY_SIZE],
    const guint8 salt[GST_ERAP_SALT_SIZE], const gchar * info,
    gnutls_aead_cipher_hd_t * out)
{
  guint8 prk[32], key[GST_ERAP_KEY_SIZE];
  gnutls_datum_t ikm = { (unsigned char *) master, GST_ERAP_KEY_SIZE };
  gnutls_datum_t s = { (unsigned char *) salt, GST_ERAP_SALT_SIZE };
  gnutls_datum_t p = { prk, sizeof (prk) };
  gnutls_datum_t i = { (unsigned char *) info, strlen (info) };
  gnutls_datum_t k = { key, sizeof (key) };
  gboolean ok;

  ok = gnutls_hkdf_extract (GNUTLS_MAC_SHA256, &ikm, &s, prk) == 0 &&
      gnutls_hkdf_expand (GNUTLS_MAC_SHA256, &p, &i, key, sizeof (key)) == 0
      && gnutls_aead_cipher_init (out, GNUTLS_CIPHER_AES_256_GCM, &k) == 0;
  gnutls_memset (prk, 0, sizeof (prk));
  gnutls_memset (key, 0, sizeof (key));
  return ok;
}

static gboolean
session_ciphers (const guint8 master[GST_ERAP_KEY_SIZE],
    const guint8 salt[GST_ERAP_SALT_SIZE], gnutls_aead_cipher_hd_t * data,
    gnutls_aead_cipher_hd_t * ack)
{
  if (!session_cipher (master, salt, "twoflow erap v1 data", data))
    return FALSE;
  if (!session_cipher (master, salt, "twoflow erap v1 ack", ack)) {
    gnutls_aead_cipher_deinit (*data);
    *data = NULL;
    return FALSE;
  }
  return TRUE;
}

/* HKDF-SHA256(master, no salt, "twoflow erap v1 hello") */
static gboolean
hello_key (const guint8 master[GST_ERAP_KEY_SIZE], guint8 out[32])
{
  guint8 prk[32];
  gnutls_datum_t ikm = { (unsigned char *) master, GST_ERAP_KEY_SIZE };
  gnutls_datum_t s = { NULL, 0 };
  gnutls_datum_t p = { prk, sizeof (prk) };
  gnutls_datum_t i = { (unsigned char *) "twoflow erap v1 hello", 21 };
  gboolean ok;

  ok = gnutls_hkdf_extract (GNUTLS_MAC_SHA256, &ikm, &s, prk) == 0 &&
      gnutls_hkdf_expand (GNUTLS_MAC_SHA256, &p, &i, out, 32) == 0;
  gnutls_memset (prk, 0, sizeof (prk));
  return ok;
}

gboolean
gst_erap_crypto_seal_hello (GstErapCrypto * c, const GstErapHello * h,
    guint8 out[GST_ERAP_SEALED_HELLO_SIZE])
{
  GstErapHello sh = *h;
  guint8 mac[32];

  sh.sealed = TRUE;
  gst_erap_hello_write (&sh, out);
  if (gnutls_hmac_fast (GNUTLS_MAC_SHA256, c->hello_key, 32, out,
          GST_ERAP_HELLO_SIZE, mac) != 0)
    return FALSE;
  memcpy (out + GST_ERAP_HELLO_SIZE, mac, GST_ERAP_TAG_SIZE);
  return TRUE;
}

gboolean
gst_erap_crypto_open_hello (GstErapCrypto * c, const guint8 * dgram,
    gsize len)
{
  GstErapHello h;
  guint8 mac[32];

  if (!gst_erap_hello_parse (dgram, len, &h) || !h.sealed)
    return FALSE;
  if (gnutls_hmac_fast (GNUTLS_MAC_SHA256, c->hello_key, 32, dgram,
          GST_ERAP_HELLO_SIZE, mac) != 0)
    return FALSE;
  /* constant time */
  return gnutls_memcmp (mac, dgram + GST_ERAP_HELLO_SIZE,
      GST_ERAP_TAG_SIZE) == 0;
}

GstErapCrypto *
gst_erap_crypto_new (GstErapCryptoRole role,
    const guint8 master[GST_ERAP_KEY_SIZE], const guint8 * salt)
{
  GstErapCrypto *c = g_new0 (GstErapCrypto, 1);

  c->role = role;
  memcpy (c->master, master, GST_ERAP_KEY_SIZE);
  if (!hello_key (master, c->hello_key))
    goto fail;
  if (role == GST_ERAP_CRYPTO_SENDER) {
    if (salt)
      memcpy (c->salt, salt, GST_ERAP_SALT_SIZE);
    else if (gnutls_rnd (GNUTLS_RND_NONCE, c->salt, GST_ERAP_SALT_SIZE) != 0)
      goto fail;
    if (!session_ciphers (master, c->salt, &c->data, &c->ack))
      goto fail;
    c->pinned = TRUE;
  }
  return c;

fail:
  gnutls_memset (c->master, 0, sizeof (c->master));
  g_free (c);
  return NULL;
}

static void
clear_cand (GstErapCrypto * c)
{
  if (c->cand_data)
    gnutls_aead_cipher_deinit (c->cand_data);
  if (c->cand_ack)
    gnutls_aead_cipher_deinit (c->cand_ack);
  c->cand_data = c->cand_ack = NULL;
  c->have_cand = FALSE;
}

void
gst_erap_crypto_free (GstErapCrypto * c)
{
  if (!c)
    return;
  if (c->data)
    gnutls_aead_cipher_deinit (c->data);
  if (c->ack)
    gnutls_aead_cipher_deinit (c->ack);
  clear_cand (c);
  gnutls_memset (c->master, 0, sizeof (c->master));
  gnutls_memset (c->hello_key, 0, sizeof (c->hello_key));
  g_free (c);
}

guint64
gst_erap_crypto_get_salt (GstErapCrypto * c)
{
  return c->pinned ? GST_READ_UINT64_BE (c->salt) : 0;
}

static void
nonce_for (guint8 dir, guint64 n, guint8 nonce[NONCE_SIZE])
{
  memset (nonce, 0, NONCE_SIZE);
  nonce[0] = dir;
  GST_WRITE_UINT64_BE (nonce + 4, n);
}

gboolean
gst_erap_crypto_seal_data (GstErapCrypto * c, guint64 seqno,
    const guint8 header[GST_ERAP_DATA_HEADER_SIZE], const guint8 * payload,
    gsize payload_len, guint8 * out)
{
  guint8 nonce[NONCE_SIZE];
  size_t ctext_len = payload_len + GST_ERAP_TAG_SIZE;

  g_return_val_if_fail (c->role == GST_ERAP_CRYPTO_SENDER, FALSE);
  if (seqno == 0 || seqno > G_MAXUINT32)
    return FALSE;
  memcpy (out, header, GST_ERAP_DATA_HEADER_SIZE);
  memcpy (out + GST_ERAP_DATA_HEADER_SIZE, c->salt, GST_ERAP_SALT_SIZE);
  nonce_for (DIR_DATA, seqno, nonce);
  if (gnutls_aead_cipher_encrypt (c->data, nonce, NONCE_SIZE, out,
          GST_ERAP_SEALED_DATA_HEADER, GST_ERAP_TAG_SIZE, payload,
          payload_len, out + GST_ERAP_SEALED_DATA_HEADER, &ctext_len) != 0)
    return FALSE;
  c->sealed++;
  return TRUE;
}

static gboolean
open_with (gnutls_aead_cipher_hd_t h, guint8 dir, guint64 n, guint8 * pkt,
    gsize aad_len, gsize len)
{
  guint8 nonce[NONCE_SIZE];
  giovec_t aad = { pkt, aad_len };
  giovec_t data = { pkt + aad_len, len - aad_len - GST_ERAP_TAG_SIZE };

  nonce_for (dir, n, nonce);
  return gnutls_aead_cipher_decryptv2 (h, nonce, NONCE_SIZE, &aad, 1, &data,
      1, pkt + len - GST_ERAP_TAG_SIZE, GST_ERAP_TAG_SIZE) == 0;
}

GstErapOpenResult
gst_erap_crypto_open_data (GstErapCrypto * c, guint8 * pkt, gsize len,
    gsize * plain_len)
{
  guint64 seqno;
  const guint8 *salt;

  g_return_val_if_fail (c->role == GST_ERAP_CRYPTO_RECEIVER,
      GST_ERAP_OPEN_AUTH_FAILED);
  if (len < GST_ERAP_SEALED_DATA_HEADER + GST_ERAP_TAG_SIZE)
    goto fail;
  seqno = GST_READ_UINT32_BE (pkt);
  if (seqno == 0)
    goto fail;
  salt = pkt + GST_ERAP_DATA_HEADER_SIZE;

  if (c->pinned) {
    if (memcmp (salt, c->salt, GST_ERAP_SALT_SIZE) != 0 ||
        !open_with (c->data, DIR_DATA, seqno, pkt,
            GST_ERAP_SEALED_DATA_HEADER, len))
      goto fail;
  } else {
    /* the first authentic packet names the session: derivation costs two
     * HKDFs, so forged salts cost the receiver little */
    if (!c->have_cand || memcmp (salt, c->cand_salt, GST_ERAP_SALT_SIZE)) {
      clear_cand (c);
      if (!session_ciphers (c->master, salt, &c->cand_data, &c->cand_ack))
        goto fail;
      memcpy (c->cand_salt, salt, GST_ERAP_SALT_SIZE);
      c->have_cand = TRUE;
    }
    if (!open_with (c->cand_data, DIR_DATA, seqno, pkt,
            GST_ERAP_SEALED_DATA_HEADER, len))
      goto fail;
    memcpy (c->salt, c->cand_salt, GST_ERAP_SALT_SIZE);
    c->data = c->cand_data;
    c->ack = c->cand_ack;
    c->cand_data = c->cand_ack = NULL;
    c->have_cand = FALSE;
    c->pinned = TRUE;
  }
  if (!gst_erap_replay_check_and_mark (&c->win, seqno)) {
    inc (&c->replays);
    return GST_ERAP_OPEN_REPLAY;
  }
  *plain_len = len - GST_ERAP_SALT_SIZE - GST_ERAP_TAG_SIZE;
  memmove (pkt + GST_ERAP_DATA_HEADER_SIZE, pkt + GST_ERAP_SEALED_DATA_HEADER,
      *plain_len - GST_ERAP_DATA_HEADER_SIZE);
  inc (&c->opened);
  return GST_ERAP_OPEN_OK;

fail:
  inc (&c->auth_failures);
  return GST_ERAP_OPEN_AUTH_FAILED;
}

gboolean
gst_erap_crypto_peek_ack (const guint8 * dgram, gsize len, guint64 * salt)
{
  if (len < GST_ERAP_ACK_SEAL_OVERHEAD || dgram[0] || dgram[1] ||
      dgram[2] != GST_ERAP_SEALED_ACK_TYPE || dgram[3] != 1)
    return FALSE;
  if (salt)
    *salt = GST_READ_UINT64_BE (dgram + 4);
  return TRUE;
}

gsize
gst_erap_crypto_seal_ack (GstErapCrypto * c, const guint8 * records,
    gsize records_len, guint8 * out)
{
  guint8 nonce[NONCE_SIZE];
  size_t ctext_len = records_len + GST_ERAP_TAG_SIZE;

  g_return_val_if_fail (c->role == GST_ERAP_CRYPTO_RECEIVER, 0);
  /* no session yet: nothing authentic arrived, nothing to acknowledge */
  if (!c->pinned || c->ack_counter == G_MAXUINT64)
    return 0;
  c->ack_counter++;
  out[0] = out[1] = 0;
  out[2] = GST_ERAP_SEALED_ACK_TYPE;
  out[3] = 1;
  memcpy (out + 4, c->salt, GST_ERAP_SALT_SIZE);
  GST_WRITE_UINT64_BE (out + 12, c->ack_counter);
  nonce_for (DIR_ACK, c->ack_counter, nonce);
  if (gnutls_aead_cipher_encrypt (c->ack, nonce, NONCE_SIZE, out,
          GST_ERAP_SEALED_ACK_HEADER, GST_ERAP_TAG_SIZE, records, records_len,
          out + GST_ERAP_SEALED_ACK_HEADER, &ctext_len) != 0)
    return 0;
  c->sealed++;
  return GST_ERAP_SEALED_ACK_HEADER + ctext_len;
}

GstErapOpenResult
gst_erap_crypto_open_ack (GstErapCrypto * c, guint8 * dgram, gsize len,
    gsize * records_len)
{
  guint64 counter;

  g_return_val_if_fail (c->role == GST_ERAP_CRYPTO_SENDER,
      GST_ERAP_OPEN_AUTH_FAILED);
  if (!gst_erap_crypto_peek_ack (dgram, len, NULL) ||
      memcmp (dgram + 4, c->salt, GST_ERAP_SALT_SIZE) != 0)
    goto fail;
  counter = GST_READ_UINT64_BE (dgram + 12);
  if (counter == 0 || !open_with (c->ack, DIR_ACK, counter, dgram,
          GST_ERAP_SEALED_ACK_HEADER, len))
    goto fail;
  if (!gst_erap_replay_check_and_mark (&c->win, counter)) {
    inc (&c->replays);
    return GST_ERAP_OPEN_REPLAY;
  }
  *records_len = len - GST_ERAP_ACK_SEAL_OVERHEAD;
  inc (&c->opened);
  return GST_ERAP_OPEN_OK;

fail:
  inc (&c->auth_failures);
  return GST_ERAP_OPEN_AUTH_FAILED;
}

void
gst_erap_crypto_count_failure (GstErapCrypto * c)
{
  inc (&c->auth_failures);
}

void
gst_erap_crypto_get_stats (GstErapCrypto * c, GstErapCryptoStats * st)
{
  st->sealed = __atomic_load_n (&c->sealed, __ATOMIC_RELAXED);
  st->opened = __atomic_load_n (&c->opened, __ATOMIC_RELAXED);
  st->auth_failures = __atomic_load_n (&c->auth_failures, __ATOMIC_RELAXED);
  st->replays = __atomic_load_n (&c->replays, __ATOMIC_RELAXED);
  st->salt_pinned = c->pinned;
}

gboolean
gst_erap_replay_check_and_mark (GstErapReplayWindow * w, guint64 n)
{
  guint64 bit;

  if (n == 0)
    return FALSE;
  if (n > w->top) {
    guint64 shift = n - w->top, i;

    if (shift >= GST_ERAP_REPLAY_WINDOW) {
      memset (w->bits, 0, sizeof (w->bits));
    } else {
      /* clear the bits of the numbers the window slides over */
      for (i = w->top + 1; i <= n; i++)
        w->bits[(i / 64) % G_N_ELEMENTS (w->bits)] &= ~(G_GUINT64_CONSTANT (1)
            << (i % 64));
    }
    w->top = n;
  } else if (w->top - n >= GST_ERAP_REPLAY_WINDOW) {
    return FALSE;
  }
  bit = G_GUINT64_CONSTANT (1) << (n % 64);
  if (w->bits[(n / 64) % G_N_ELEMENTS (w->bits)] & bit)
    return FALSE;
  w->bits[(n / 64) % G_N_ELEMENTS (w->bits)] |= bit;
  return TRUE;
}
