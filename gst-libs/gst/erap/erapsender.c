/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP sender state machine.
 *
 * RAP's sender (ns-2 rap/rap.cc facts, own code): a transmission history
 * of every packet in flight; loss found when a packet's timeout expires or
 * when an ACK's (lastRecv, lastMiss, prevRecv) show it missing with at
 * least three later packets received; one rate decrease per loss cluster
 * (packets sent before the reaction cannot cause another one); additive
 * increase once per SRTT only when that SRTT used the rate (dpthresh).
 * Reliability on top: a lost packet's fragment is sent again under a new
 * seqno with its old appSeq, ahead of new data.
 *
 * After the first loss reaction the rate is in bytes: the IPG belongs to a
 * full datagram, and a shorter one (a small message, a message's tail) is
 * followed by the part of the IPG its bytes take, IP/UDP header included;
 * the dpthresh test counts bytes too. A stream of small messages (an H.264
 * essential flow's audio frames and I-frame tails average ~600 bytes) thus
 * gets the bit rate of full datagrams, as TCP, which coalesces them into
 * full segments, does; paced per packet it got well under half of it at
 * 1 % loss and 200 ms. Before any loss the rate is the initial one grown
 * with no congestion signal at all, and stays one IPG per packet: paced
 * by bytes, a backlogged start of small packets reached a short path's
 * bottleneck 2.3 times sooner and lost tens of packets in its queue.
 *
 * ERAP does not probe into a queue of its own (max_queue_delay, with the
 * rap law): RAP grows until a loss, so a backlogged flow fills any
 * drop-tail queue again and again, though the queue shows in its RTT long
 * before it overflows. On the showdown's 2 Mbit/s link (80 packets, 450 ms)
 * its probes overflowed the queue every 3-4 s while the session's
 * real-time flow shared it (290-570 tail drops per run, the frames late).
 * While the SRTT is more than max_queue_delay above the smallest RTT and
 * a sample near that minimum came since the path last showed a queue
 * (the queue rose from an empty path: ours), the rate does not grow and
 * falls, per SRTT + 100 ms when it was used, by 15 % and to 0.85 x what
 * the ACKs of the last SRTT delivered (so that the queue drains), but not
 * below the initial rate (the server's start-up ramp: yielding further to
 * the session's own real-time flow at the start made the essential flow
 * late, a 4.6 s freeze of the MPEG-2 clip on cap2); after
 * a decrease it grows again once a sample shows the queue gone. A queue
 * that stood through 3 such decreases (no more come) and 2 s without
 * emptying is another flow's (a bulk TCP's drop-tail queue, which ERAP's
 * decreases do not drain): plain RAP until the path is seen empty again,
 * so beside a TCP ERAP keeps its share.
 *
 * The RAP baseline (protocol RAP) is the same machine with RAP's 24-byte
 * header and RAP's timers: ns-2's IPG timer fires every IPG whether the
 * application has data or not, and the RTT timer every SRTT, from the
 * start to the end of the session. ERAP turns both off while there is
 * nothing to send.
 *
 * The scheduler's view: payload bytes sent per report interval (the
 * bandwidth actually used). The report timer starts with the first data
 * after a pause and stops at the end of the first whole interval in which
 * the session sent nothing: an idle session then has no timer at all and
 * is left out of the scheduler's totals, while an application-limited one
 * (idle for a few ms between messages) keeps reporting what it uses.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include "erapsender.h"
#include "erapring.h"

#define RAP_LOSS_DISTANCE 3     /* later packets received before a hole is a loss */
#define IP_UDP_OVERHEAD 28      /* IPv4 + UDP header bytes per datagram */
#define TIMED_OUT_SLOTS 64      /* recent timeouts remembered for late ACKs */
/* the queue rule (see the top) */
#define QUEUE_CLEAN (10 * GST_MSECOND)  /* a sample this near the minimum: empty */
#define QUEUE_BETA 0.85                 /* rate x this per decrease */
#define QUEUE_SPACING (100 * GST_MSECOND)       /* + SRTT between decreases */
#define QUEUE_DECREASES 3               /* a queue that outlives this many */
#define QUEUE_STANDS (2 * GST_SECOND)   /* and this long is another flow's */

enum {
  H_SENT = 1,
  H_ACKED,
  H_LOST,
};

typedef struct {
  guint64 appseq;
  GstClockTime sent;
  guint8 status;
} HistEntry;

enum {
  F_UNSENT = 0,
  F_SENT,
  F_ACKED,
};

typedef struct {
  GBytes *msg;                  /* NULL for end of stream */
  gsize off;
  guint len;
  guint8 flags;
  guint8 state;
  guint8 in_rtx;
} Frag;

struct _GstErapSender {
  GstErapSenderConfig cfg;
  GstErapCC *cc;

  ErapRing hist;                /* by seqno */
  guint64 next_seq;
  guint64 first_out;            /* lowest seqno that may still be H_SENT */

  ErapRing frags;               /* by appSeq */
  guint64 next_new;             /* first fragment never sent */
  ErapRing rtx;                 /* appSeqs waiting for retransmission */

  gboolean eos;
  gboolean active;              /* something to send: rate timers run */
  GstClockTime next_send;
  GstClockTime next_tick;
  GstClockTime last_poll;       /* time of the last poll */
  guint dctr;                   /* packets sent in the current SRTT */
  guint64 dbytes;               /* their bytes, IP/UDP headers included */
  guint64 cluster_end;          /* losses at or below: same cluster */
  guint64 last_lost_seq;        /* for runs of consecutive losses */
  guint64 loss_runs;
  /* the last timed-out seqnos: their history entries leave the front at
   * once, and a late ACK must still count as a spurious loss */
  guint64 timed_out[TIMED_OUT_SLOTS];
  guint64 undo_seq;             /* the timeout behind the first of the
                                 * last reactions, all timeouts; 0: none */
  guint hlen;                   /* data header bytes */
  gboolean started;             /* RAP baseline: timers run from the first
                                 * push to the end */
  gboolean sched_active;         /* in the scheduler's view (report timer on) */
  GstClockTime window_start;    /* used-rate window */
  GstClockTime next_report;
  guint64 window_bytes;
  gboolean report_pending;

  gboolean have_rtt;
  gdouble srtt, rttvar, rto;    /* seconds */
  gdouble min_rtt, max_rtt;
  /* the queue rule: the last sample near the minimum (NONE: none), the
   * decreases since, when the next may come */
  GstClockTime clean_at;
  guint queue_decs;
  GstClockTime next_queue_dec;
  guint64 tick_acked;           /* bytes_acked at the last SRTT tick */
  GstClockTime tick_at;

  GstErapSenderStats st;
};

#define NS(x) ((gdouble) (x) / GST_SECOND)
#define TO_NS(x) ((GstClockTime) ((x) * GST_SECOND + 0.5))

void
gst_erap_sender_config_init (GstErapSenderConfig * c)
{
  memset (c, 0, sizeof (*c));
  c->mtu = 1400;
  c->initial_rate = 1000000;
  c->initial_rtt = 100 * GST_MSECOND;
  c->initial_rto = GST_SECOND;
  c->min_rto = 30 * GST_MSECOND;
  c->max_rto = 10 * GST_SECOND;
  c->dpthresh = 50;
  c->max_burst = 16;
  c->max_queue_delay = 100 * GST_MSECOND;
}

static gdouble
rate_to_ipg (const GstErapSenderConfig * c, guint64 rate)
{
  return rate ? (gdouble) c->mtu * 8 / (gdouble) rate : 0;
}

GstErapSender *
gst_erap_sender_new (const GstErapSenderConfig * config)
{
  GstErapSender *s = g_new0 (GstErapSender, 1);
  gdouble min_ipg, max_ipg;

  s->cfg = *config;
  s->hlen = gst_erap_protocol_data_header_size (s->cfg.protocol);
  if (s->cfg.mtu < s->hlen + 1)
    s->cfg.mtu = s->hlen + 1;
  if (s->cfg.max_burst == 0)
    s->cfg.max_burst = 1;
  min_ipg = rate_to_ipg (&s->cfg, s->cfg.max_rate);
  /* Without a floor, halvings during an outage would push the next packet
   * out of sight; one packet per second keeps probing. */
  max_ipg = s->cfg.min_rate ? rate_to_ipg (&s->cfg, s->cfg.min_rate) : 1.0;
  s->cc = gst_erap_cc_new (s->cfg.cc, rate_to_ipg (&s->cfg,
          s->cfg.initial_rate ? s->cfg.initial_rate : 1000000), min_ipg,
      max_ipg);

  erap_ring_init (&s->hist, sizeof (HistEntry), 1);
  erap_ring_init (&s->frags, sizeof (Frag), 0);
  erap_ring_init (&s->rtx, sizeof (guint64), 0);
  s->next_seq = 1;
  s->first_out = 1;
  s->srtt = NS (s->cfg.initial_rtt);
  s->rto = NS (s->cfg.initial_rto);
  s->clean_at = GST_CLOCK_TIME_NONE;
  return s;
}

void
gst_erap_sender_free (GstErapSender * s)
{
  guint i;

  if (!s)
    return;
  for (i = 0; i < s->frags.len; i++) {
    Frag *f = erap_ring_nth (&s->frags, i);
    if (f->msg)
      g_bytes_unref (f->msg);
  }
  erap_ring_clear (&s->frags);
  erap_ring_clear (&s->hist);
  erap_ring_clear (&s->rtx);
  gst_erap_cc_free (s->cc);
  g_free (s);
}

static void
fill_info (GstErapSender * s, GstClockTime now, GstErapCCInfo * info)
{
  memset (info, 0, sizeof (*info));
  info->now = NS (now);
  info->srtt = s->srtt;
  info->min_rtt = s->min_rtt;
  info->max_rtt = s->max_rtt;
  info->packet_size = s->cfg.mtu;
  info->packets_in_tick = s->dctr;
  info->packets_lost = s->st.packets_lost;
  info->loss_runs = s->loss_runs;
}

static gboolean
has_data (GstErapSender * s)
{
  return s->rtx.len > 0 || s->next_new < erap_ring_end (&s->frags);
}

static GstClockTime
window_length (GstErapSender * s)
{
  return s->cfg.report_interval ? s->cfg.report_interval : GST_SECOND;
}

/* Idle -> active: the rate state is kept, the timers restart from now. */
static void
wake (GstErapSender * s, GstClockTime now)
{
  if (s->active || !has_data (s))
    return;
  /* the RAP baseline's timers, once started, never stop before the end */
  if (s->cfg.protocol == GST_ERAP_PROTOCOL_RAP && s->started)
    return;
  s->active = TRUE;
  s->started = TRUE;
  if (s->next_send < now)
    s->next_send = now;
  s->next_tick = now + TO_NS (s->srtt);
  s->dctr = 0;
  s->dbytes = 0;
  if (!s->sched_active) {
    /* a new window; a session that paused less than that continues its
     * window */
    s->sched_active = TRUE;
    s->window_start = now;
    s->window_bytes = 0;
    s->next_report = now + window_length (s);
  }
}

/* Active -> idle: rate timers off, the rate kept. The report timer runs
 * to the end of the current window (see run_report). */
static void
go_idle (GstErapSender * s)
{
  s->active = FALSE;
}

/* The used-rate window closes every report interval; one in which an
 * idle session sent nothing takes it out of the scheduler's view (used
 * bandwidth 0, no report, the timer off). */
static void
run_report (GstErapSender * s, GstClockTime now)
{
  if (!s->sched_active || now < s->next_report)
    return;
  if (s->window_bytes == 0 && !s->active) {
    s->sched_active = FALSE;
    s->st.used_rate = 0;
    return;
  }
  s->st.used_rate = gst_util_uint64_scale (s->window_bytes, 8 * GST_SECOND,
      MAX (now - s->window_start, 1));
  s->window_bytes = 0;
  s->window_start = now;
  s->next_report = now + window_length (s);
  if (s->cfg.report_interval) {
    s->report_pending = TRUE;
    s->st.reports++;
  }
}

static void
frag_acked (GstErapSender * s, guint64 appseq)
{
  Frag *f = erap_ring_get (&s->frags, appseq);

  if (!f || f->state == F_ACKED)
    return;
  f->state = F_ACKED;
  s->st.bytes_acked += f->len;
  s->st.queued_bytes -= f->len;
  while (s->frags.len > 0) {
    f = erap_ring_nth (&s->frags, 0);
    if (f->state != F_ACKED)
      break;
    if (f->msg)
      g_bytes_unref (f->msg);
    erap_ring_pop (&s->frags);
  }
}

static void
declare_lost (GstErapSender * s, guint64 seq, HistEntry * e, GstClockTime now,
    gboolean by_timeout)
{
  Frag *f = erap_ring_get (&s->frags, e->appseq);

  e->status = H_LOST;
  s->st.packets_lost++;
  /* a run of consecutive seqnos (a back-to-back burst into a full queue)
   * is one loss event */
  if (s->loss_runs == 0 || seq != s->last_lost_seq + 1)
    s->loss_runs++;
  s->last_lost_seq = seq;
  if (f && f->state != F_ACKED && !f->in_rtx) {
    *(guint64 *) erap_ring_push (&s->rtx) = e->appseq;
    f->in_rtx = TRUE;
    wake (s, now);
  }
  if (seq > s->cluster_end) {
    GstErapCCInfo info;

    fill_info (s, now, &info);
    info.timeout = by_timeout;
    if (s->cc->ops->on_loss)
      s->cc->ops->on_loss (s->cc, &info);
    /* everything in flight now belongs to this cluster */
    s->cluster_end = s->next_seq - 1;
    s->st.loss_reactions++;
    /* a timeout may be a late ACK (a stalled receiver or sender): if this
     * very packet is acknowledged later, the law may take it back, and the
     * timeouts after it while the stall lasted */
    if (!by_timeout)
      s->undo_seq = 0;
    else if (!s->undo_seq)
      s->undo_seq = seq;
    s->next_tick = now + TO_NS (s->srtt);
  }
}

static void
advance_front (GstErapSender * s)
{
  while (s->first_out < s->next_seq) {
    HistEntry *e = erap_ring_get (&s->hist, s->first_out);
    if (e && e->status == H_SENT)
      break;
    s->first_out++;
  }
  while (s->hist.base < s->first_out && s->hist.len > 0)
    erap_ring_pop (&s->hist);
}

static void
detect_timeouts (GstErapSender * s, GstClockTime now)
{
  guint64 q;
  GstClockTime rto = TO_NS (s->rto);

  for (q = s->first_out; q < s->next_seq; q++) {
    HistEntry *e = erap_ring_get (&s->hist, q);
    if (!e || e->status != H_SENT)
      continue;
    if (e->sent + rto > now)
      break;
    s->st.timeout_losses++;
    s->timed_out[q % TIMED_OUT_SLOTS] = q;
    declare_lost (s, q, e, now, TRUE);
  }
  advance_front (s);
}

static void
update_rtt (GstErapSender * s, gdouble sample)
{
  if (!s->have_rtt) {
    s->srtt = sample;
    s->rttvar = sample / 2;
    s->min_rtt = s->max_rtt = sample;
    s->have_rtt = TRUE;
  } else {
    /* Jacobson/Karels, RFC 6298 gains */
    s->rttvar = 0.75 * s->rttvar + 0.25 * fabs (s->srtt - sample);
    s->srtt = 0.875 * s->srtt + 0.125 * sample;
    s->min_rtt = MIN (s->min_rtt, sample);
    s->max_rtt = MAX (s->max_rtt, sample);
  }
  /* a clock that does not move (a test clock) must not make SRTT 0: the
   * SRTT timer would spin */
  s->srtt = MAX (s->srtt, 1e-6);
  /* RAP's timeout is 1.2 SRTT + 4 var: keep its 0.2 SRTT floor on the
   * variance term so a steady RTT does not time out its own ACKs; and half
   * of min-rto: the floor is there for a loaded host's scheduling hiccups,
   * which do not shrink as the path's RTT grows (at 200 ms, 1.2 SRTT timed
   * out ACKs 41 ms late: a halving each) */
  s->rto = s->srtt + MAX (MAX (4 * s->rttvar, 0.2 * s->srtt),
      NS (s->cfg.min_rto) / 2);
  s->rto = CLAMP (s->rto, NS (s->cfg.min_rto), NS (s->cfg.max_rto));
}

GstErapAckResult
gst_erap_sender_handle_ack (GstErapSender * s, const GstErapAck * ack,
    GstClockTime now)
{
  gint64 highest = (gint64) s->next_seq - 1;
  gint64 seq, last_recv, last_miss = 0, prev_recv = 0, q;
  HistEntry *e;

  if (highest < 1)
    goto invalid;
  seq = gst_erap_unwrap32 (ack->seq, highest);
  last_recv = gst_erap_unwrap32 (ack->last_recv, highest);
  if (seq < 1 || seq > highest || last_recv > highest || last_recv < seq)
    goto invalid;
  if (ack->last_miss) {
    last_miss = gst_erap_unwrap32 (ack->last_miss, last_recv);
    if (last_miss > last_recv || last_miss < 0)
      goto invalid;
  }
  if (ack->prev_recv) {
    prev_recv = gst_erap_unwrap32 (ack->prev_recv, last_recv);
    if (prev_recv >= last_miss || prev_recv < 1)
      goto invalid;
  }
  s->st.acks_received++;

  e = erap_ring_get (&s->hist, seq);
  if (e && e->status == H_SENT) {
    gboolean first = !s->have_rtt;
    GstErapCCInfo info;

    update_rtt (s, NS (now - MIN (now, e->sent)));
    /* the path empty (as far as the RTT tells): a queue rising from here
     * is of this flow's making (the queue rule) */
    if (now - MIN (now, e->sent) <= TO_NS (s->min_rtt) + QUEUE_CLEAN) {
      s->clean_at = now;
      s->queue_decs = 0;
    }
    e->status = H_ACKED;
    frag_acked (s, e->appseq);
    if (first && s->active)
      s->next_tick = now + TO_NS (s->srtt);
    if (s->cc->ops->on_ack) {
      fill_info (s, now, &info);
      info.rtt_sample = NS (now - MIN (now, e->sent));
      info.seqno = seq;
      s->cc->ops->on_ack (s->cc, &info);
    }
  } else if (e && e->status == H_LOST) {
    /* declared lost too early, yet delivered: no need to resend it */
    e->status = H_ACKED;
    s->st.spurious_losses++;
    frag_acked (s, e->appseq);
  } else if (!e && s->timed_out[seq % TIMED_OUT_SLOTS] == (guint64) seq) {
    /* timed out at the front, its entry gone: a late ACK after all */
    s->timed_out[seq % TIMED_OUT_SLOTS] = 0;
    s->st.spurious_losses++;
  }
  /* the timeout that made the last reaction was a late ACK: the packet
   * arrived (its history entry may be gone: lost entries leave the front) */
  if (s->undo_seq && seq == (gint64) s->undo_seq) {
    s->undo_seq = 0;
    if (s->cc->ops->undo) {
      GstErapCCInfo info;

      fill_info (s, now, &info);
      info.seqno = seq;
      s->cc->ops->undo (s->cc, &info);
      s->st.reactions_undone++;
    }
  }

  /* ACK redundancy: resolve everything the ACK speaks about */
  for (q = s->first_out; q <= last_recv; q++) {
    e = erap_ring_get (&s->hist, q);
    if (!e || e->status != H_SENT)
      continue;
    if (q > last_miss || q == prev_recv) {
      e->status = H_ACKED;
      frag_acked (s, e->appseq);
    } else if (last_recv - q >= RAP_LOSS_DISTANCE) {
      declare_lost (s, q, e, now, FALSE);
    }
  }
  advance_front (s);
  return GST_ERAP_ACK_OK;

invalid:
  s->st.acks_invalid++;
  return GST_ERAP_ACK_INVALID;
}

gboolean
gst_erap_sender_handle_message (GstErapSender * s, GBytes * msg,
    GstClockTime now)
{
  gsize size, off = 0, maxp;

  g_return_val_if_fail (msg != NULL, FALSE);
  if (s->eos)
    return FALSE;
  size = g_bytes_get_size (msg);
  maxp = s->cfg.mtu - s->hlen;
  do {
    Frag *f = erap_ring_push (&s->frags);
    gsize n = MIN (maxp, size - off);

    f->msg = g_bytes_ref (msg);
    f->off = off;
    f->len = n;
    f->flags = (off == 0 ? GST_ERAP_FRAG_BEGIN : 0) |
        (off + n == size ? GST_ERAP_FRAG_END : 0);
    off += n;
    s->st.queued_bytes += n;
  } while (off < size);
  wake (s, now);
  return TRUE;
}

void
gst_erap_sender_handle_eos (GstErapSender * s, GstClockTime now)
{
  if (s->eos)
    return;
  s->eos = TRUE;
  erap_ring_push (&s->frags);   /* zeroed: no flags, no payload */
  wake (s, now);
}

/* ERAP's rate is in bytes once a loss has measured it (see the top) */
static gboolean
by_bytes (GstErapSender * s)
{
  return s->cfg.protocol != GST_ERAP_PROTOCOL_RAP && s->st.loss_reactions > 0;
}

/* The queue rule (see the top) at an SRTT tick, @delivered the rate the
 * ACKs of the last SRTT tell (datagram bit/s, 0: none): TRUE when it holds
 * the rate, or decreases it, instead of the law's increase. */
static gboolean
queue_rule (GstErapSender * s, GstClockTime now, gboolean rate_used,
    gdouble delivered)
{
  gboolean queue;

  if (s->cfg.max_queue_delay == 0 || s->cfg.protocol !=
      GST_ERAP_PROTOCOL_ERAP || s->cc->ops != &gst_erap_cc_rap
      || !GST_CLOCK_TIME_IS_VALID (s->clean_at))
    return FALSE;
  /* a queue that stands through our decreases is another flow's */
  if (s->queue_decs >= QUEUE_DECREASES && now >= s->clean_at + QUEUE_STANDS)
    return FALSE;
  queue = s->srtt - s->min_rtt > NS (s->cfg.max_queue_delay);
  if (!queue && s->queue_decs == 0)
    return FALSE;
  /* (a decrease, when the last SRTT used the rate — an application-limited
   * flow's queue is not its own —: below what the path delivers, so that
   * the queue drains; then no increase until a sample shows it gone) */
  if (queue && rate_used && now >= s->next_queue_dec
      && s->queue_decs < QUEUE_DECREASES) {
    gdouble ipg = s->cc->ipg / QUEUE_BETA;

    if (delivered > 0)
      ipg = MAX (ipg, s->cfg.mtu * 8 / (QUEUE_BETA * delivered));
    /* (not below the initial rate: the server's start-up ramp, what keeps
     * the essential flow on schedule; a loss still halves below it) */
    ipg = MIN (ipg, MAX (s->cc->ipg, rate_to_ipg (&s->cfg,
                s->cfg.initial_rate ? s->cfg.initial_rate : 1000000)));
    gst_erap_cc_set_ipg (s->cc, ipg);
    s->queue_decs++;
    s->st.queue_decreases++;
    s->next_queue_dec = now + TO_NS (s->srtt) + QUEUE_SPACING;
  } else {
    s->st.queue_holds++;
  }
  return TRUE;
}

static void
run_ticks (GstErapSender * s, GstClockTime now)
{
  GstErapCCInfo info;
  gdouble delivered;

  if (!s->active || now < s->next_tick)
    return;
  fill_info (s, now, &info);
  /* the last SRTT should have carried srtt/ipg packets (RAP), or as many
   * full datagrams' bytes (ERAP) */
  if (!by_bytes (s))
    info.rate_used = 100.0 * s->dctr * (s->cc->ipg / s->srtt) >=
        s->cfg.dpthresh;
  else
    info.rate_used = 100.0 * s->dbytes * (s->cc->ipg / s->srtt) >=
        (gdouble) s->cfg.dpthresh * (s->cfg.mtu + IP_UDP_OVERHEAD);
  /* (payload acked since the last tick, as full datagrams' bits; not
   * over an idle pause) */
  delivered = now > s->tick_at && s->tick_at > 0
      && now - s->tick_at <= TO_NS (2 * s->srtt) ?
      (gdouble) (s->st.bytes_acked - s->tick_acked) * 8 * s->cfg.mtu /
      (s->cfg.mtu - s->hlen) / NS (now - s->tick_at) : 0;
  s->tick_acked = s->st.bytes_acked;
  s->tick_at = now;
  if (!queue_rule (s, now, info.rate_used, delivered) && s->cc->ops->tick)
    s->cc->ops->tick (s->cc, &info);
  s->st.ticks++;
  s->dctr = 0;
  s->dbytes = 0;
  s->next_tick = now + TO_NS (s->srtt);
}

static gboolean
next_fragment (GstErapSender * s, guint64 * appseq, gboolean * rtx)
{
  while (s->rtx.len > 0) {
    guint64 a = *(guint64 *) erap_ring_nth (&s->rtx, 0);
    Frag *f = erap_ring_get (&s->frags, a);

    erap_ring_pop (&s->rtx);
    if (f && f->state != F_ACKED) {
      f->in_rtx = FALSE;
      *appseq = a;
      *rtx = TRUE;
      return TRUE;
    }
  }
  if (s->next_new < erap_ring_end (&s->frags)) {
    *appseq = s->next_new++;
    *rtx = FALSE;
    return TRUE;
  }
  return FALSE;
}

gboolean
gst_erap_sender_poll (GstErapSender * s, GstClockTime now,
    GstErapOutPacket * out)
{
  GstErapDataHeader h;
  HistEntry *e;
  Frag *f;
  guint64 appseq;
  gboolean rtx;
  GstClockTime ipg, lag;
  guint wire;

  s->last_poll = now;
  detect_timeouts (s, now);
  run_report (s, now);
  if (s->active && s->cfg.protocol == GST_ERAP_PROTOCOL_RAP &&
      gst_erap_sender_is_done (s)) {
    /* the RAP baseline's timers stop at the end of the session */
    go_idle (s);
    s->sched_active = FALSE;
    s->st.used_rate = 0;
    return FALSE;
  }
  run_ticks (s, now);
  if (!s->active || now + s->cfg.quantum < s->next_send)
    return FALSE;
  if (!next_fragment (s, &appseq, &rtx)) {
    if (s->cfg.protocol == GST_ERAP_PROTOCOL_RAP) {
      /* RAP: the IPG timer fires anyway and is rescheduled an IPG later */
      s->st.idle_wakeups++;
      s->next_send = MAX (s->next_send, now) + MAX (TO_NS (s->cc->ipg), 1);
      return FALSE;
    }
    /* nothing to send: rate timers off, rate kept */
    go_idle (s);
    return FALSE;
  }

  /* a seqno that is 0 mod 2^32 is never sent: 0 means "none" in ACKs */
  if ((guint32) s->next_seq == 0) {
    e = erap_ring_push (&s->hist);
    e->status = H_ACKED;
    s->next_seq++;
  }
  f = erap_ring_get (&s->frags, appseq);
  f->state = F_SENT;
  e = erap_ring_push (&s->hist);
  e->appseq = appseq;
  e->sent = now;
  e->status = H_SENT;

  h.seqno = (guint32) s->next_seq;
  h.appseq = (guint32) appseq & GST_ERAP_APPSEQ_MASK;
  h.flags = f->flags;
  if (s->cfg.protocol == GST_ERAP_PROTOCOL_RAP)
    gst_erap_rap_data_header_write (&h, f->len, out->header);
  else
    gst_erap_data_header_write (&h, out->header);
  out->header_len = s->hlen;
  out->payload = f->msg ? (const guint8 *) g_bytes_get_data (f->msg,
      NULL) + f->off : NULL;
  out->payload_len = f->len;
  out->seqno = s->next_seq;
  out->appseq = appseq;
  out->retransmission = rtx;
  s->next_seq++;

  s->st.packets_sent++;
  s->st.bytes_sent += f->len;
  s->window_bytes += f->len;
  if (rtx)
    s->st.packets_retransmitted++;
  s->dctr++;
  wire = s->hlen + f->len + IP_UDP_OVERHEAD;
  s->dbytes += wire;

  /* pace; when woken late, catch up by at most max_burst packets (full
   * ones' gaps when paced by bytes) */
  if (s->cc->ops->next_gap) {
    GstErapCCInfo info;

    fill_info (s, now, &info);
    info.seqno = out->seqno;
    info.packet_bytes = s->hlen + f->len;
    /* 0 is allowed here: the next packet leaves back to back */
    ipg = TO_NS (s->cc->ops->next_gap (s->cc, &info));
    lag = (GstClockTime) s->cfg.max_burst * ipg;
  } else if (!by_bytes (s)) {
    /* RAP, or no loss yet: one IPG per packet, whatever its size */
    ipg = MAX (TO_NS (s->cc->ipg), 1);
    lag = (GstClockTime) s->cfg.max_burst * ipg;
  } else {
    /* the IPG is a full datagram's: a shorter one takes its share */
    ipg = MAX (TO_NS (s->cc->ipg * wire / (s->cfg.mtu + IP_UDP_OVERHEAD)),
        1);
    lag = (GstClockTime) s->cfg.max_burst * MAX (TO_NS (s->cc->ipg), 1);
  }
  if (s->next_send + lag < now)
    s->next_send = now - lag;
  s->next_send += ipg;
  return TRUE;
}

GstClockTime
gst_erap_sender_next_wakeup (GstErapSender * s)
{
  GstClockTime t = GST_CLOCK_TIME_NONE;

  if (s->active || has_data (s)) {
    t = MIN (s->next_send, s->next_tick);
    /* one burst per quantum: poll sends what falls due within a quantum,
     * so waking again sooner would only send a packet or two at a time
     * (and run the per-SRTT tick on a short-RTT path every few µs) */
    if (s->cfg.quantum && t < s->last_poll + s->cfg.quantum)
      t = s->last_poll + s->cfg.quantum;
  }
  if (s->sched_active && s->cfg.report_interval)
    t = MIN (t, s->next_report);
  if (s->first_out < s->next_seq) {
    HistEntry *e = erap_ring_get (&s->hist, s->first_out);
    if (e && e->status == H_SENT)
      t = MIN (t, e->sent + TO_NS (s->rto));
  }
  return t;
}

gboolean
gst_erap_sender_is_done (GstErapSender * s)
{
  return s->eos && s->frags.len == 0;
}

gboolean
gst_erap_sender_is_idle (GstErapSender * s)
{
  return !s->active && !has_data (s);
}

gboolean
gst_erap_sender_take_report (GstErapSender * s)
{
  gboolean r = s->report_pending;

  s->report_pending = FALSE;
  return r;
}

guint64
gst_erap_sender_queued_bytes (GstErapSender * s)
{
  return s->st.queued_bytes;
}

void
gst_erap_sender_get_stats (GstErapSender * s, GstErapSenderStats * st)
{
  *st = s->st;
  st->ipg = TO_NS (s->cc->ipg);
  st->rate = (guint64) (s->cfg.mtu * 8 / s->cc->ipg);
  st->srtt = TO_NS (s->srtt);
  st->rto = TO_NS (s->rto);
  st->active = s->sched_active;
}

GstErapCC *
gst_erap_sender_get_cc (GstErapSender * s)
{
  return s->cc;
}
