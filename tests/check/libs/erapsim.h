/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — a virtual-clock link between an ERAP sender and receiver, for
 * the core tests: fixed one-way delays, optional jitter (reordering), loss
 * decided by a callback, optionally a bottleneck on the data path (a
 * serializer at rate_bps with a drop-tail byte limit). Everything runs on a
 * virtual clock. */
#ifndef __ERAP_SIM_H__
#define __ERAP_SIM_H__

#include <gst/erap/erap.h>

typedef struct _ErapSim ErapSim;
/* Return TRUE to drop. @to_receiver: data (else ACK); @seqno: data seqno or
 * the seqno an ACK answers; @appseq: data only. */
typedef gboolean (*ErapSimLossFunc) (ErapSim * sim, gboolean to_receiver,
    guint64 seqno, guint64 appseq, gpointer user_data);
/* Called for each data packet the sender emits. */
typedef void (*ErapSimSentFunc) (ErapSim * sim, const GstErapOutPacket * p,
    gpointer user_data);
/* Called after every event (packet arrival or sender wake-up). */
typedef void (*ErapSimStepFunc) (ErapSim * sim, gpointer user_data);

struct _ErapSim {
  GstClockTime now;
  GstErapSender *sender;
  GstErapReceiver *receiver;
  GstClockTime delay;           /* one way */
  GstClockTime jitter;          /* extra uniform delay, reorders packets */
  GRand *rand;
  ErapSimLossFunc loss;
  ErapSimSentFunc sent;
  ErapSimStepFunc step;
  gpointer user_data;
  GQueue flight;                /* sorted by arrival, FIFO among equals */
  GByteArray *delivered;        /* concatenation of delivered messages */
  GArray *msg_sizes;            /* size of each delivered message */
  gboolean eos;
  guint64 data_dropped, acks_dropped;
  /* bottleneck on the data path; rate_bps 0: none */
  guint64 rate_bps;
  guint overhead;               /* bytes added to each datagram on it */
  guint64 queue_limit_bytes;    /* waiting bytes; 0: unbounded */
  GstClockTime link_free;       /* when it finishes what it holds */
  guint64 queue_drops;
  GstErapProtocol protocol;     /* the sender's: which codec the link reads */
  guint64 ack_bytes;            /* ACK bytes sent by the receiver */
  /* a hiccup of the receiving host: the ACKs it makes in
   * [stall_start, stall_end) leave at stall_end */
  GstClockTime stall_start, stall_end;
};

typedef struct {
  GstClockTime at;
  gboolean to_receiver;
  GBytes *pkt;
} ErapSimEv;


static inline ErapSim *
erap_sim_new (const GstErapSenderConfig * sc, const GstErapReceiverConfig * rc,
    GstClockTime delay)
{
  ErapSim *sim = g_new0 (ErapSim, 1);

  sim->now = 1 * GST_SECOND;
  sim->sender = gst_erap_sender_new (sc);
  sim->receiver = gst_erap_receiver_new (rc);
  sim->delay = delay;
  sim->protocol = sc->protocol;
  sim->rand = g_rand_new_with_seed (42);
  g_queue_init (&sim->flight);
  sim->delivered = g_byte_array_new ();
  sim->msg_sizes = g_array_new (FALSE, FALSE, sizeof (gsize));
  return sim;
}

static inline void
erap_sim_free (ErapSim * sim)
{
  ErapSimEv *ev;

  while ((ev = g_queue_pop_head (&sim->flight))) {
    g_bytes_unref (ev->pkt);
    g_free (ev);
  }
  gst_erap_sender_free (sim->sender);
  gst_erap_receiver_free (sim->receiver);
  g_rand_free (sim->rand);
  g_byte_array_unref (sim->delivered);
  g_array_unref (sim->msg_sizes);
  g_free (sim);
}

static inline void
erap_sim_enqueue (ErapSim * sim, gboolean to_receiver, GBytes * pkt)
{
  ErapSimEv *ev = g_new0 (ErapSimEv, 1);

  ev->at = sim->now + sim->delay;
  if (!to_receiver && sim->now >= sim->stall_start && sim->now < sim->stall_end)
    ev->at = sim->stall_end + sim->delay;
  if (to_receiver && sim->rate_bps) {
    GstClockTime start = MAX (sim->now, sim->link_free);

    sim->link_free = start + gst_util_uint64_scale_ceil ((g_bytes_get_size
            (pkt) + sim->overhead) * 8, GST_SECOND, sim->rate_bps);
    ev->at = sim->link_free + sim->delay;
  }
  if (sim->jitter)
    ev->at += g_rand_int_range (sim->rand, 0, (gint32) (sim->jitter / 1000))
        * 1000;
  ev->to_receiver = to_receiver;
  ev->pkt = pkt;
  {
    GList *l = sim->flight.tail;
    while (l && ((ErapSimEv *) l->data)->at > ev->at)
      l = l->prev;
    if (l)
      g_queue_insert_after (&sim->flight, l, ev);
    else
      g_queue_push_head (&sim->flight, ev);
  }
}

static inline void
erap_sim_run_sender (ErapSim * sim)
{
  GstErapOutPacket p;

  while (gst_erap_sender_poll (sim->sender, sim->now, &p)) {
    GByteArray *b;

    if (sim->sent)
      sim->sent (sim, &p, sim->user_data);
    if (sim->loss && sim->loss (sim, TRUE, p.seqno, p.appseq, sim->user_data)) {
      sim->data_dropped++;
      continue;
    }
    if (sim->rate_bps && sim->queue_limit_bytes && sim->link_free > sim->now
        && gst_util_uint64_scale (sim->link_free - sim->now, sim->rate_bps,
            8 * GST_SECOND) > sim->queue_limit_bytes) {
      sim->queue_drops++;
      continue;
    }
    b = g_byte_array_sized_new (p.header_len + p.payload_len);
    g_byte_array_append (b, p.header, p.header_len);
    if (p.payload_len)
      g_byte_array_append (b, p.payload, p.payload_len);
    erap_sim_enqueue (sim, TRUE, g_byte_array_free_to_bytes (b));
  }
}

static inline void
erap_sim_deliver (ErapSim * sim, ErapSimEv * ev)
{
  if (ev->to_receiver) {
    guint8 ack[GST_ERAP_ACK_MAX_SIZE];
    gsize ack_len;
    GBytes *m;
    gboolean eos = FALSE;
    GstErapDataResult r;

    r = gst_erap_receiver_handle_data (sim->receiver, ev->pkt, ack, &ack_len);
    if (r == GST_ERAP_DATA_NEW || r == GST_ERAP_DATA_DUPLICATE) {
      GstErapDataHeader h;
      gst_erap_protocol_data_header_parse (sim->protocol,
          g_bytes_get_data (ev->pkt, NULL), g_bytes_get_size (ev->pkt), &h);
      sim->ack_bytes += ack_len;
      if (sim->loss && sim->loss (sim, FALSE, h.seqno, 0, sim->user_data))
        sim->acks_dropped++;
      else
        erap_sim_enqueue (sim, FALSE, g_bytes_new (ack, ack_len));
    }
    while ((m = gst_erap_receiver_poll (sim->receiver, &eos))) {
      gsize n;
      gconstpointer d = g_bytes_get_data (m, &n);
      g_byte_array_append (sim->delivered, d, n);
      g_array_append_val (sim->msg_sizes, n);
      g_bytes_unref (m);
    }
    if (eos)
      sim->eos = TRUE;
  } else {
    GstErapAck a;
    gsize n;
    const guint8 *d = g_bytes_get_data (ev->pkt, &n);

    g_assert_true (gst_erap_protocol_ack_parse (sim->protocol, d, n, &a));
    gst_erap_sender_handle_ack (sim->sender, &a, sim->now);
  }
}

/* Runs events until @until (virtual time) or until nothing is left. */
static inline void
erap_sim_run_until (ErapSim * sim, GstClockTime until)
{
  for (;;) {
    GstClockTime next = gst_erap_sender_next_wakeup (sim->sender);
    ErapSimEv *ev = g_queue_peek_head (&sim->flight);

    if (ev && (!GST_CLOCK_TIME_IS_VALID (next) || ev->at <= next))
      next = ev->at;
    else
      ev = NULL;
    if (!GST_CLOCK_TIME_IS_VALID (next) || next > until) {
      sim->now = MAX (sim->now, until);
      return;
    }
    sim->now = MAX (sim->now, next);
    if (ev) {
      g_queue_pop_head (&sim->flight);
      erap_sim_deliver (sim, ev);
      g_bytes_unref (ev->pkt);
      g_free (ev);
    }
    erap_sim_run_sender (sim);
    if (sim->step)
      sim->step (sim, sim->user_data);
  }
}

#endif
