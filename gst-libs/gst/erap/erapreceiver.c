/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP receiver state machine.
 *
 * The ACK carries RAP's "last hole" (ns-2 rap/rap.cc facts, own code):
 * lastRecv is the highest seqno received, (prevRecv, lastMiss] the last
 * hole below it, computed from a bitmap of the last 1024 seqnos so that an
 * ACK never claims a packet that did not arrive (a reliable sender trusts
 * it). Reordering is by appSeq, which retransmissions keep.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include "erapreceiver.h"

/* appSeqs further ahead than this are garbage, not reordering */
#define MAX_APPSEQ_AHEAD (1 << 28)
#define MAX_SEQ_JUMP (1 << 30)
/* seqnos whose arrival the receiver remembers for its ACKs */
#define ERAP_WIN 1024

typedef struct {
  GBytes *payload;
  guint8 flags;
} Held;

struct _GstErapReceiver {
  GstErapReceiverConfig cfg;

  gint64 last_recv;             /* highest seqno received */
  guint64 win[ERAP_WIN / 64];   /* seqnos (last_recv - ERAP_WIN, last_recv] */
  gboolean complete_below;      /* all seqnos below the window arrived */

  gint64 next_appseq;           /* next fragment to deliver */
  GHashTable *held;             /* low 32 bits of appSeq -> Held */
  GPtrArray *partial;           /* fragments of the message being rebuilt */
  gsize partial_len;
  GQueue ready;                 /* complete messages */
  gboolean eos;                 /* end of stream reached in order */

  GstErapReceiverStats st;
};

void
gst_erap_receiver_config_init (GstErapReceiverConfig * c)
{
  memset (c, 0, sizeof (*c));
  c->max_reorder_bytes = GST_ERAP_DEFAULT_MAX_REORDER_BYTES;
}

static void
held_free (gpointer p)
{
  Held *h = p;

  if (h->payload)
    g_bytes_unref (h->payload);
  g_free (h);
}

GstErapReceiver *
gst_erap_receiver_new (const GstErapReceiverConfig * config)
{
  GstErapReceiver *r = g_new0 (GstErapReceiver, 1);

  r->cfg = *config;
  r->complete_below = TRUE;
  r->held = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
      held_free);
  r->partial = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  g_queue_init (&r->ready);
  return r;
}

void
gst_erap_receiver_free (GstErapReceiver * r)
{
  if (!r)
    return;
  g_hash_table_unref (r->held);
  g_ptr_array_unref (r->partial);
  g_queue_clear_full (&r->ready, (GDestroyNotify) g_bytes_unref);
  g_free (r);
}

/* Whether seqno s (in the window) was received. */
static inline gboolean
win_get (GstErapReceiver * r, gint64 s)
{
  guint i = (guint) (s & (ERAP_WIN - 1));
  return (r->win[i >> 6] >> (i & 63)) & 1;
}

static inline void
win_put (GstErapReceiver * r, gint64 s, gboolean v)
{
  guint i = (guint) (s & (ERAP_WIN - 1));
  if (v)
    r->win[i >> 6] |= G_GUINT64_CONSTANT (1) << (i & 63);
  else
    r->win[i >> 6] &= ~(G_GUINT64_CONSTANT (1) << (i & 63));
}

/* Highest seqno in [lo, from] whose bit is @want, or -1. */
static gint64
win_find_down (GstErapReceiver * r, gint64 from, gint64 lo, gboolean want)
{
  gint64 s = from;

  while (s >= lo) {
    guint i = (guint) (s & (ERAP_WIN - 1)), b = i & 63;
    guint64 w = r->win[i >> 6];

    if (!want)
      w = ~w;
    if (b < 63)
      w &= (G_GUINT64_CONSTANT (1) << (b + 1)) - 1;
    if (w) {
      gint64 c = s - (gint64) (b - (63 - __builtin_clzll (w)));
      return c >= lo ? c : -1;
    }
    s -= b + 1;
  }
  return -1;
}

/* Records the arrival of @seq in the window of the last ERAP_WIN seqnos.
 * Seqnos that leave the window unreceived make "everything below the
 * window arrived" false for good. */
static void
record_seq (GstErapReceiver * r, gint64 seq)
{
  if (seq > r->last_recv) {
    gint64 s, from = r->last_recv + 1;

    if (seq - r->last_recv > ERAP_WIN) {
      if (win_find_down (r, r->last_recv, MAX (1, r->last_recv - ERAP_WIN + 1),
              FALSE) >= 0 || seq - ERAP_WIN >= r->last_recv + 1)
        r->complete_below = FALSE;
      memset (r->win, 0, sizeof (r->win));
      from = seq - ERAP_WIN + 1;
    }
    for (s = from; s <= seq; s++) {
      if (s - ERAP_WIN >= 1 && !win_get (r, s - ERAP_WIN))
        r->complete_below = FALSE;
      /* seqnos 0 mod 2^32 are never sent: count them as received */
      win_put (r, s, (guint32) s == 0);
    }
    r->last_recv = seq;
  } else if (seq <= r->last_recv - ERAP_WIN) {
    return;                     /* too old to describe; its own ACK covers it */
  }
  win_put (r, seq, TRUE);
}

/* The ACK's view: the last hole (prevRecv, lastMiss] below lastRecv.
 * Unlike RAP's receiver, which claims everything received once its last
 * hole fills, this never claims a seqno it did not see. */
static void
ack_fields (GstErapReceiver * r, gint64 * last_miss, gint64 * prev_recv)
{
  gint64 lo = MAX (1, r->last_recv - ERAP_WIN + 1);
  gint64 m = win_find_down (r, r->last_recv - 1, lo, FALSE);

  *prev_recv = 0;
  if (m >= 1) {
    gint64 p = win_find_down (r, m - 1, lo, TRUE);
    *last_miss = m;
    if (p >= 1 && (guint32) p != 0)
      *prev_recv = p;
  } else if (r->complete_below) {
    *last_miss = 0;
  } else {
    /* an old hole left the window: claim the window only */
    *last_miss = lo - 1;
    if ((guint32) * last_miss == 0)
      *last_miss = lo;
  }
}

static void
write_ack (GstErapReceiver * r, guint32 seq, guint8 * out, gsize * len)
{
  GstErapAck a;
  gint64 last_miss, prev_recv;

  ack_fields (r, &last_miss, &prev_recv);
  memset (&a, 0, sizeof (a));
  a.port = r->cfg.port;
  a.seq = seq;
  a.last_recv = (guint32) r->last_recv;
  a.last_miss = (guint32) last_miss;
  a.prev_recv = (guint32) prev_recv;
  a.addr_len = r->cfg.addr_len;
  memcpy (a.addr, r->cfg.addr, sizeof (a.addr));
  if (r->cfg.protocol == GST_ERAP_PROTOCOL_RAP)
    *len = gst_erap_rap_ack_write (&a, out);
  else
    *len = gst_erap_ack_write (&a, out);
  r->st.acks++;
}

static void
deliver (GstErapReceiver * r, GBytes * payload, guint8 flags)
{
  gsize n = payload ? g_bytes_get_size (payload) : 0;

  if (flags == 0 && n == 0) {
    r->eos = TRUE;
    return;
  }
  if (r->eos)
    return;
  if (flags & GST_ERAP_FRAG_BEGIN) {
    g_ptr_array_set_size (r->partial, 0);
    r->partial_len = 0;
  } else if (r->partial->len == 0) {
    return;                     /* tail of a message we never saw begin */
  }
  g_ptr_array_add (r->partial, g_bytes_ref (payload));
  r->partial_len += n;
  if (flags & GST_ERAP_FRAG_END) {
    GBytes *msg;

    if (r->partial->len == 1) {
      msg = g_bytes_ref (g_ptr_array_index (r->partial, 0));
    } else {
      guint8 *buf = g_malloc (r->partial_len);
      gsize off = 0;
      guint i;

      for (i = 0; i < r->partial->len; i++) {
        gsize l;
        gconstpointer d = g_bytes_get_data (g_ptr_array_index (r->partial, i),
            &l);
        if (l)
          memcpy (buf + off, d, l);
        off += l;
      }
      msg = g_bytes_new_take (buf, r->partial_len);
    }
    g_ptr_array_set_size (r->partial, 0);
    r->partial_len = 0;
    g_queue_push_tail (&r->ready, msg);
    r->st.messages_delivered++;
    r->st.bytes_delivered += g_bytes_get_size (msg);
  }
}

GstErapDataResult
gst_erap_receiver_handle_data (GstErapReceiver * r, GBytes * datagram,
    guint8 ack[GST_ERAP_ACK_MAX_SIZE], gsize * ack_len)
{
  GstErapDataHeader h;
  const guint8 *data;
  gsize len, plen;
  gint64 seq, appseq;
  gpointer key;
  GstErapDataResult res;
  const gsize hlen = gst_erap_protocol_data_header_size (r->cfg.protocol);

  *ack_len = 0;
  data = g_bytes_get_data (datagram, &len);
  if (!gst_erap_protocol_data_header_parse (r->cfg.protocol, data, len, &h))
    goto malformed;
  seq = gst_erap_unwrap32 (h.seqno, r->last_recv);
  appseq = gst_erap_unwrap30 (h.appseq, r->next_appseq);
  plen = len - hlen;
  /* a jump of 2^30 seqnos is no loss burst but garbage; it would also
   * leave the ACK's fields out of serial-arithmetic range */
  if (seq < 1 || ABS (seq - r->last_recv) >= MAX_SEQ_JUMP ||
      appseq - r->next_appseq >= MAX_APPSEQ_AHEAD)
    goto malformed;
  if (h.flags == 0 && plen == 0 && r->eos && appseq >= r->next_appseq)
    goto malformed;             /* a second, different end of stream */

  r->st.packets_received++;
  key = GUINT_TO_POINTER ((guint32) appseq);
  if (appseq < r->next_appseq || g_hash_table_contains (r->held, key)) {
    r->st.duplicates++;
    res = GST_ERAP_DATA_DUPLICATE;
  } else if (appseq == r->next_appseq) {
    GBytes *p = g_bytes_new_from_bytes (datagram, hlen, plen);
    Held *hd;

    deliver (r, p, h.flags);
    g_bytes_unref (p);
    r->next_appseq++;
    while ((hd = g_hash_table_lookup (r->held,
                GUINT_TO_POINTER ((guint32) r->next_appseq)))) {
      gsize n = hd->payload ? g_bytes_get_size (hd->payload) : 0;
      deliver (r, hd->payload, hd->flags);
      r->st.reorder_bytes -= n;
      r->st.reorder_packets--;
      g_hash_table_remove (r->held, GUINT_TO_POINTER ((guint32)
              r->next_appseq));
      r->next_appseq++;
    }
    res = GST_ERAP_DATA_NEW;
  } else {
    Held *hd;

    if (r->st.reorder_bytes + plen > r->cfg.max_reorder_bytes) {
      /* pretend the network lost it: no ACK, so it will come again */
      r->st.dropped_no_memory++;
      return GST_ERAP_DATA_NO_MEMORY;
    }
    hd = g_new0 (Held, 1);
    hd->payload = g_bytes_new_from_bytes (datagram, hlen, plen);
    hd->flags = h.flags;
    g_hash_table_insert (r->held, key, hd);
    r->st.reorder_bytes += plen;
    r->st.reorder_packets++;
    r->st.max_reorder_bytes_seen = MAX (r->st.max_reorder_bytes_seen,
        r->st.reorder_bytes);
    res = GST_ERAP_DATA_NEW;
  }
  record_seq (r, seq);
  write_ack (r, h.seqno, ack, ack_len);
  return res;

malformed:
  r->st.malformed++;
  return GST_ERAP_DATA_MALFORMED;
}

GBytes *
gst_erap_receiver_poll (GstErapReceiver * r, gboolean * eos)
{
  GBytes *b = g_queue_pop_head (&r->ready);

  if (eos)
    *eos = (b == NULL && r->eos);
  return b;
}

gboolean
gst_erap_receiver_is_eos (GstErapReceiver * r)
{
  return r->eos && g_queue_is_empty (&r->ready);
}

void
gst_erap_receiver_get_stats (GstErapReceiver * r, GstErapReceiverStats * st)
{
  *st = r->st;
}
