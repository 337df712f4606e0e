/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — fuzz target: ERAP data packet parser and receiver.
 * The input is a sequence of datagrams, each prefixed by a 16-bit length;
 * they are fed to one receiver, which must never crash, never deliver more
 * than it was given, and keep its reorder memory within bounds. */
#include <stdint.h>
#include <stddef.h>
#include <gst/erap/erap.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  GstErapReceiverConfig rc;
  GstErapReceiver *r;
  GstErapReceiverStats st;
  GstErapDataHeader h;
  guint64 given = 0, got = 0;
  gsize off = 0;

  gst_erap_receiver_config_init (&rc);
  rc.max_reorder_bytes = 4096;
  rc.port = 5000;
  r = gst_erap_receiver_new (&rc);

  /* the bare parser on the whole input */
  (void) gst_erap_data_header_parse (data, size, &h);

  while (off + 2 <= size) {
    gsize n = ((gsize) data[off] << 8) | data[off + 1];
    guint8 ack[GST_ERAP_ACK_MAX_SIZE];
    gsize ack_len;
    GBytes *pkt, *m;
    gboolean eos;
    GstErapAck a;

    off += 2;
    n = MIN (n, size - off);
    pkt = g_bytes_new (data + off, n);
    off += n;
    if (n > GST_ERAP_DATA_HEADER_SIZE)
      given += n - GST_ERAP_DATA_HEADER_SIZE;
    switch (gst_erap_receiver_handle_data (r, pkt, ack, &ack_len)) {
      case GST_ERAP_DATA_NEW:
      case GST_ERAP_DATA_DUPLICATE:
        /* every ACK we write must be one we accept */
        g_assert (gst_erap_ack_parse (ack, ack_len, &a));
        break;
      default:
        g_assert (ack_len == 0);
        break;
    }
    g_bytes_unref (pkt);
    while ((m = gst_erap_receiver_poll (r, &eos))) {
      got += g_bytes_get_size (m);
      g_bytes_unref (m);
    }
    gst_erap_receiver_get_stats (r, &st);
    g_assert (st.reorder_bytes <= rc.max_reorder_bytes);
  }
  g_assert (got <= given);
  gst_erap_receiver_free (r);
  return 0;
}
