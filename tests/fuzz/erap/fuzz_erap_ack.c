/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — fuzz target: ERAP ACK parser and sender.
 * A sender sends a few packets; the input is then a sequence of datagrams
 * (16-bit length prefix, then a 16-bit time step in microseconds) fed to it
 * as ACK datagrams (one or more records each). It must never crash, never count more acknowledged than queued,
 * and always be able to go on sending. */
#include <stdint.h>
#include <stddef.h>
#include <gst/erap/erap.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static void
drain (GstErapSender * s, GstClockTime now)
{
  GstErapOutPacket p;
  guint n = 0;

  while (n++ < 64 && gst_erap_sender_poll (s, now, &p))
    g_assert (p.payload_len <= 1400);
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  GstErapSenderConfig c;
  GstErapSender *s;
  GstErapSenderStats st;
  GstClockTime now = GST_SECOND;
  static guint8 payload[3000];
  GBytes *m = g_bytes_new_static (payload, sizeof (payload));
  gsize off = 0;
  guint i;

  gst_erap_sender_config_init (&c);
  c.initial_rate = 100000000;
  s = gst_erap_sender_new (&c);
  for (i = 0; i < 8; i++)
    gst_erap_sender_handle_message (s, m, now);
  gst_erap_sender_handle_eos (s, now);
  drain (s, now);

  while (off + 4 <= size) {
    gsize n = ((gsize) data[off] << 8) | data[off + 1];
    guint step = ((guint) data[off + 2] << 8) | data[off + 3];
    GstErapAck a;
    gsize roff = 0;

    off += 4;
    n = MIN (n, size - off);
    now += step * GST_USECOND;
    /* a datagram of one or more ACK records */
    while (gst_erap_ack_parse_next (data + off, n, &roff, &a)) {
      g_assert (roff <= n);
      gst_erap_sender_handle_ack (s, &a, now);
    }
    off += n;
    drain (s, now);
    g_assert (gst_erap_sender_next_wakeup (s) == GST_CLOCK_TIME_NONE ||
        gst_erap_sender_next_wakeup (s) >= GST_SECOND);
  }
  gst_erap_sender_get_stats (s, &st);
  g_assert (st.bytes_acked <= 8 * sizeof (payload));
  g_assert (st.queued_bytes + st.bytes_acked == 8 * sizeof (payload));
  gst_erap_sender_free (s);
  g_bytes_unref (m);
  return 0;
}
