/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — fuzz target: the openers of sealed ERAP packets.
 * The input is a sequence of datagrams (16-bit length prefix, then one
 * byte: bit 0 data or ACK, bit 1 "start from a genuine packet and flip
 * the datagram's bytes with the input" so the fuzzer gets past the salt
 * check). Each is fed to the receiver's data opener or the sender's ACK
 * opener. Nothing forged may ever open: only the genuine packets made
 * here do, each once. */
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <gst/erap/erap.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static guint8 master[GST_ERAP_KEY_SIZE] = { 42 };
  static const guint8 salt[GST_ERAP_SALT_SIZE] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  GstErapCrypto *tx = gst_erap_crypto_new (GST_ERAP_CRYPTO_SENDER, master,
      salt);
  GstErapCrypto *rx = gst_erap_crypto_new (GST_ERAP_CRYPTO_RECEIVER, master,
      NULL);
  GstErapCryptoStats st;
  GstErapDataHeader h = { 1, 0, GST_ERAP_FRAG_BEGIN | GST_ERAP_FRAG_END };
  guint8 hdr[GST_ERAP_DATA_HEADER_SIZE], payload[64] = { 0 };
  guint8 genuine[200], ack_genuine[200], buf[2048];
  gsize glen, alen, off = 0, plain;
  GstErapAck a = { 5004, 1, 1, 0, 0, 0, {0} };
  guint8 rec[GST_ERAP_ACK_MAX_SIZE];
  guint opened_ok = 0;
  GstErapHello hello = { 7, 1, 5004, FALSE }, hp;
  guint8 hello_genuine[GST_ERAP_SEALED_HELLO_SIZE];

  /* one genuine packet each way, opened once (pins the session) */
  gst_erap_data_header_write (&h, hdr);
  g_assert (gst_erap_crypto_seal_data (tx, 1, hdr, payload, sizeof (payload),
          genuine));
  glen = sizeof (payload) + GST_ERAP_SEALED_DATA_HEADER + GST_ERAP_TAG_SIZE;
  memcpy (buf, genuine, glen);
  g_assert (gst_erap_crypto_open_data (rx, buf, glen, &plain) ==
      GST_ERAP_OPEN_OK);
  alen = gst_erap_crypto_seal_ack (rx, rec, gst_erap_ack_write (&a, rec),
      ack_genuine);
  g_assert (alen > 0);
  g_assert (gst_erap_crypto_seal_hello (rx, &hello, hello_genuine));

  while (off + 3 <= size) {
    gsize n = ((gsize) data[off] << 8) | data[off + 1];
    guint8 mode = data[off + 2];
    gboolean is_ack = mode & 1;
    gsize i, take;

    off += 3;
    n = MIN (n, size - off);
    n = MIN (n, sizeof (buf));
    take = n;
    if (mode & 4) {
      /* the NAT hello: a genuine sealed one with the input XORed in opens
       * only unchanged; arbitrary bytes never open */
      gboolean changed = FALSE;

      if (mode & 2) {
        memcpy (buf, hello_genuine, sizeof (hello_genuine));
        for (i = 0; i < MIN (n, sizeof (hello_genuine)); i++) {
          buf[i] ^= data[off + i];
          changed |= data[off + i] != 0;
        }
        n = sizeof (hello_genuine);
        if (gst_erap_crypto_open_hello (tx, buf, n))
          g_assert (!changed);
      } else {
        memcpy (buf, data + off, n);
        (void) gst_erap_hello_parse (buf, n, &hp);
        g_assert (!gst_erap_crypto_open_hello (tx, buf, n));
      }
    } else if (mode & 2) {
      /* a genuine packet with the input XORed in: any change must fail */
      const guint8 *g = is_ack ? ack_genuine : genuine;
      gsize gl = is_ack ? alen : glen;
      gboolean changed = FALSE;

      memcpy (buf, g, gl);
      for (i = 0; i < MIN (n, gl); i++) {
        buf[i] ^= data[off + i];
        changed |= data[off + i] != 0;
      }
      n = gl;
      if (is_ack) {
        GstErapOpenResult r = gst_erap_crypto_open_ack (tx, buf, n, &plain);
        if (r == GST_ERAP_OPEN_OK) {
          g_assert (!changed);
          opened_ok++;
        }
      } else {
        /* the genuine data packet was opened already: a replay at best */
        g_assert (gst_erap_crypto_open_data (rx, buf, n, &plain) !=
            GST_ERAP_OPEN_OK);
      }
    } else {
      memcpy (buf, data + off, n);
      if (is_ack)
        g_assert (gst_erap_crypto_open_ack (tx, buf, n, &plain) !=
            GST_ERAP_OPEN_OK);
      else
        g_assert (gst_erap_crypto_open_data (rx, buf, n, &plain) !=
            GST_ERAP_OPEN_OK);
    }
    off += take;
  }
  /* the genuine ACK opens at most once */
  g_assert (opened_ok <= 1);
  gst_erap_crypto_get_stats (rx, &st);
  g_assert (st.opened == 1);
  gst_erap_crypto_free (tx);
  gst_erap_crypto_free (rx);
  return 0;
}
