/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow link emulator: one direction of an emulated bottleneck link.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "link.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void
le_fifo_push (LeFifo * f, LePacket * p)
{
  p->next = NULL;
  if (f->tail)
    f->tail->next = p;
  else
    f->head = p;
  f->tail = p;
  f->n++;
}

LePacket *
le_fifo_pop (LeFifo * f)
{
  LePacket *p = f->head;

  if (!p)
    return NULL;
  f->head = p->next;
  if (!f->head)
    f->tail = NULL;
  f->n--;
  p->next = NULL;
  return p;
}

/* xoshiro256**, seeded with splitmix64: fast, and reproducible per seed */
static uint64_t
splitmix64 (uint64_t * x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t
rotl (uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

double
le_random (LeLink * link)
{
  uint64_t *s = link->rng;
  uint64_t r = rotl (s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;

  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl (s[3], 45);
  return (r >> 11) * 0x1.0p-53;
}

int
le_link_init (LeLink * link, const LeLinkConfig * cfg, int n_flows,
    uint64_t seed, uint64_t start)
{
  uint64_t sm = seed;
  int i;

  memset (link, 0, sizeof (*link));
  link->cfg = *cfg;
  if (link->cfg.n_classes < 1)
    link->cfg.n_classes = 1;
  link->start = start;
  for (i = 0; i < 4; i++)
    link->rng[i] = splitmix64 (&sm);
  link->rate_bps = cfg->rate_bps;
  link->busy_until = start;
  link->red_count = -1;
  link->n_flows = n_flows;
  link->flow_bytes_total = calloc (n_flows, sizeof (uint64_t));
  link->flow_bytes_interval = calloc (n_flows, sizeof (uint64_t));
  link->flow_drops_total = calloc (n_flows, sizeof (uint64_t));
  link->flow_drops_interval = calloc (n_flows, sizeof (uint64_t));
  link->flow_marks_total = calloc (n_flows, sizeof (uint64_t));
  link->flow_marks_interval = calloc (n_flows, sizeof (uint64_t));
  if (!link->flow_bytes_total || !link->flow_bytes_interval
      || !link->flow_drops_total || !link->flow_drops_interval
      || !link->flow_marks_total || !link->flow_marks_interval)
    return -1;
  return 0;
}

void
le_link_clear (LeLink * link, void (*free_pkt) (LePacket *, void *),
    void *user_data)
{
  LePacket *p;
  int i;

  while ((p = le_fifo_pop (&link->queue)))
    free_pkt (p, user_data);
  for (i = 0; i < LE_MAX_CLASSES; i++) {
    while ((p = le_fifo_pop (&link->delay_line[i])))
      free_pkt (p, user_data);
    while ((p = le_fifo_pop (&link->ingress_line[i])))
      free_pkt (p, user_data);
  }
  while ((p = le_fifo_pop (&link->dropped)))
    free_pkt (p, user_data);
  link->ingress_n = 0;
  free (link->flow_bytes_total);
  free (link->flow_bytes_interval);
  free (link->flow_drops_total);
  free (link->flow_drops_interval);
  free (link->flow_marks_total);
  free (link->flow_marks_interval);
  link->flow_bytes_total = link->flow_bytes_interval = NULL;
  link->flow_drops_total = link->flow_drops_interval = NULL;
  link->flow_marks_total = link->flow_marks_interval = NULL;
}

static inline uint64_t
tx_time (const LeLink * link, uint32_t len)
{
  uint64_t bits = (uint64_t) (len + link->cfg.overhead) * 8;

  if (link->rate_bps == LE_RATE_UNLIMITED)
    return 0;
  /* bits * 1e9 stays below 2^64 for any frame up to ~2 MB */
  return (bits * 1000000000ULL + link->rate_bps - 1) / link->rate_bps;
}

/* Starts serializing every queued packet whose start time is <= limit. */
static void
serve (LeLink * link, uint64_t limit)
{
  LePacket *p;

  if (link->rate_bps == 0)
    return;
  while ((p = link->queue.head)) {
    uint64_t start = link->busy_until > p->arrival ?
        link->busy_until : p->arrival;

    if (start > limit)
      break;
    le_fifo_pop (&link->queue);
    link->queue_bytes -= p->len;
    link->busy_until = start + tx_time (link, p->len);
    p->release = link->busy_until + link->cfg.delay_ns[p->dclass];
    if (link->cfg.jitter_ns) {
      LePacket *prev = link->delay_line[p->dclass].tail;

      p->release += (uint64_t) (le_random (link) *
          (double) (link->cfg.jitter_ns + 1));
      /* FIFO per class: a delay line does not reorder */
      if (prev && prev->release > p->release)
        p->release = prev->release;
    }
    le_fifo_push (&link->delay_line[p->dclass], p);
    link->total.dequeued_pkts++;
    link->total.dequeued_bytes += p->len;
    link->interval.dequeued_pkts++;
    link->interval.dequeued_bytes += p->len;
  }
}

/* The ingress line whose head is due first (lowest class on a tie), or -1. */
static int
ingress_next (const LeLink * link, uint64_t * t)
{
  uint64_t best_t = LE_TIME_NEVER;
  int i, best = -1;

  if (link->ingress_n == 0)
    return -1;
  for (i = 0; i < link->cfg.n_classes; i++) {
    LePacket *h = link->ingress_line[i].head;

    if (h && h->ingress < best_t) {
      best_t = h->ingress;
      best = i;
    }
  }
  *t = best_t;
  return best;
}

static LeVerdict admit (LeLink * link, LePacket * p, uint64_t now);

void
le_link_advance (LeLink * link, uint64_t now)
{
  for (;;) {
    uint64_t limit = now, it = LE_TIME_NEVER;
    int change = 0, ic = ingress_next (link, &it);

    if (link->sched_idx < link->cfg.n_sched) {
      uint64_t at = link->start + link->cfg.sched[link->sched_idx].at;

      if (at <= now) {
        limit = at;
        change = 1;
      }
    }
    /* events in time order; a rate change at the same instant goes first */
    if (ic >= 0 && it <= now && (!change || it < limit)) {
      limit = it;
      change = 2;
    }
    serve (link, limit);
    if (!change)
      break;
    if (change == 2) {
      LePacket *p = le_fifo_pop (&link->ingress_line[ic]);

      link->ingress_n--;
      if (admit (link, p, it) != LE_VERDICT_QUEUED)
        le_fifo_push (&link->dropped, p);
      continue;
    }
    /* after an outage, queued packets start no earlier than its end */
    if (link->rate_bps == 0 && link->busy_until < limit)
      link->busy_until = limit;
    link->rate_bps = link->cfg.sched[link->sched_idx].rate_bps;
    link->sched_idx++;
  }
}

static void
count_drop (LeLink * link, LePacket * p, LeVerdict v)
{
  uint64_t *tot = NULL, *itv = NULL;

  switch (v) {
    case LE_VERDICT_DROP_LOSS:
      tot = &link->total.drops_loss;
      itv = &link->interval.drops_loss;
      break;
    case LE_VERDICT_DROP_RED_EARLY:
      tot = &link->total.drops_red_early;
      itv = &link->interval.drops_red_early;
      break;
    case LE_VERDICT_DROP_RED_FORCED:
      tot = &link->total.drops_red_forced;
      itv = &link->interval.drops_red_forced;
      break;
    case LE_VERDICT_DROP_QUEUE:
      tot = &link->total.drops_queue;
      itv = &link->interval.drops_queue;
      break;
    default:
      return;
  }
  (*tot)++;
  (*itv)++;
  link->flow_drops_total[p->flow]++;
  link->flow_drops_interval[p->flow]++;
}

/* RED as in ns-2 (Floyd & Jacobson 1993, with the idle-time decay, the
 * uniformizing count and the optional "gentle" region up to 2 * max_th). */
static LeVerdict
red_decide (LeLink * link, uint64_t now)
{
  const LeLinkConfig *c = &link->cfg;
  int byte_mode = c->limit_bytes && !c->limit_pkts;
  double q = byte_mode ? (double) link->queue_bytes : (double) link->queue.n;
  double w = c->red_w, avg = link->red_avg, pb, pa;
  uint64_t m = 0;

  if (link->queue.n == 0 && now > link->busy_until && link->rate_bps > 0
      && link->rate_bps != LE_RATE_UNLIMITED) {
    /* idle: as if m small packets had arrived to an empty queue */
    uint64_t ptc = (uint64_t) c->red_mean_pkt * 8 * 1000000000ULL /
        link->rate_bps;

    if (ptc > 0)
      m = (now - link->busy_until) / ptc;
  }
  if (m > 0)
    avg *= pow (1.0 - w, (double) m);
  avg = avg * (1.0 - w) + w * q;
  link->red_avg = avg;

  if (avg >= c->red_max) {
    if (!c->red_gentle || avg >= 2 * c->red_max) {
      link->red_count = 0;
      return LE_VERDICT_DROP_RED_FORCED;
    }
    pb = c->red_maxp + (1.0 - c->red_maxp) * (avg - c->red_max) / c->red_max;
  } else if (avg >= c->red_min && link->queue.n > 1) {
    pb = c->red_maxp * (avg - c->red_min) / (c->red_max - c->red_min);
  } else {
    link->red_count = -1;
    return LE_VERDICT_QUEUED;
  }
  link->red_count++;
  if (link->red_count * pb < 1.0)
    pa = pb / (1.0 - link->red_count * pb);
  else
    pa = 1.0;
  if (le_random (link) < pa) {
    link->red_count = 0;
    return LE_VERDICT_DROP_RED_EARLY;
  }
  return LE_VERDICT_QUEUED;
}

/* The packet enters the queue at @now (the link has been advanced to it):
 * loss, AQM and queue limit decide. */
static LeVerdict
admit (LeLink * link, LePacket * p, uint64_t now)
{
  const LeLinkConfig *c = &link->cfg;
  LeVerdict v = LE_VERDICT_QUEUED;
  int marked = 0;

  p->arrival = now;
  link->total.arrived_pkts++;
  link->total.arrived_bytes += p->len;
  link->interval.arrived_pkts++;
  link->interval.arrived_bytes += p->len;

  if (c->loss > 0 && le_random (link) < c->loss)
    v = LE_VERDICT_DROP_LOSS;
  if (p->len >= LE_DATA_PKT_MIN && ++link->data_pkts == c->drop_nth)
    v = LE_VERDICT_DROP_LOSS;
  if (c->ge) {
    double pl = link->ge_bad ? c->ge_loss_bad : c->ge_loss_good;

    if (v == LE_VERDICT_QUEUED && pl > 0 && le_random (link) < pl)
      v = LE_VERDICT_DROP_LOSS;
    if (link->ge_bad) {
      if (le_random (link) < c->ge_r)
        link->ge_bad = 0;
    } else if (le_random (link) < c->ge_p) {
      link->ge_bad = 1;
    }
  }
  if (v == LE_VERDICT_QUEUED && c->aqm == LE_AQM_RED) {
    v = red_decide (link, now);
    /* RFC 3168 (ns-2's setbit): an ECN-capable packet is marked, not
     * dropped, in RED's early region; it still needs room in the queue */
    if (v == LE_VERDICT_DROP_RED_EARLY && c->red_ecn
        && le_packet_ecn (p) == 3) {
      v = LE_VERDICT_QUEUED;    /* already CE: nothing to mark */
      marked = 1;
    } else if (v == LE_VERDICT_DROP_RED_EARLY && c->red_ecn
        && le_packet_mark_ce (p)) {
      v = LE_VERDICT_QUEUED;
      marked = 1;
    }
  }
  if (v == LE_VERDICT_QUEUED) {
    if ((c->limit_pkts && link->queue.n + 1 > c->limit_pkts) ||
        (c->limit_bytes && link->queue_bytes + p->len > c->limit_bytes))
      v = LE_VERDICT_DROP_QUEUE;
  }
  if (v != LE_VERDICT_QUEUED) {
    count_drop (link, p, v);
    return v;
  }

  if (marked) {
    link->total.marks_red++;
    link->interval.marks_red++;
    link->flow_marks_total[p->flow]++;
    link->flow_marks_interval[p->flow]++;
  }
  le_fifo_push (&link->queue, p);
  link->queue_bytes += p->len;
  serve (link, now);
  if (link->queue.n > link->interval.max_queue_pkts)
    link->interval.max_queue_pkts = link->queue.n;
  if (link->queue.n > link->total.max_queue_pkts)
    link->total.max_queue_pkts = link->queue.n;
  if (link->queue_bytes > link->interval.max_queue_bytes)
    link->interval.max_queue_bytes = link->queue_bytes;
  if (link->queue_bytes > link->total.max_queue_bytes)
    link->total.max_queue_bytes = link->queue_bytes;
  return LE_VERDICT_QUEUED;
}

LeVerdict
le_link_enqueue (LeLink * link, LePacket * p, uint64_t now)
{
  uint64_t jit = link->cfg.ingress_jitter_ns;

  le_link_advance (link, now);
  if (jit) {
    /* reception latency: the packet reaches the queue later, at a random
     * instant, but never before an earlier packet of its class */
    LeFifo *f = &link->ingress_line[p->dclass];
    uint64_t t = now + (uint64_t) (le_random (link) * (double) (jit + 1));

    if (f->tail && f->tail->ingress > t)
      t = f->tail->ingress;
    p->ingress = t;
    le_fifo_push (f, p);
    link->ingress_n++;
    le_link_advance (link, now);
    return LE_VERDICT_INGRESS;
  }
  p->ingress = now;
  return admit (link, p, now);
}

LePacket *
le_link_pop_dropped (LeLink * link)
{
  return le_fifo_pop (&link->dropped);
}

LePacket *
le_link_pop_due (LeLink * link, uint64_t now)
{
  int i, best = -1;
  uint64_t t = LE_TIME_NEVER;
  LePacket *p;

  for (i = 0; i < link->cfg.n_classes; i++) {
    LePacket *h = link->delay_line[i].head;

    if (h && h->release <= now && h->release < t) {
      t = h->release;
      best = i;
    }
  }
  if (best < 0)
    return NULL;
  p = le_fifo_pop (&link->delay_line[best]);
  link->total.delivered_pkts++;
  link->total.delivered_bytes += p->len;
  link->interval.delivered_pkts++;
  link->interval.delivered_bytes += p->len;
  link->flow_bytes_total[p->flow] += p->len;
  link->flow_bytes_interval[p->flow] += p->len;
  return p;
}

uint64_t
le_link_next_wakeup (const LeLink * link)
{
  uint64_t t = LE_TIME_NEVER;
  int i;

  if (link->queue.head && link->rate_bps > 0) {
    t = link->busy_until > link->queue.head->arrival ?
        link->busy_until : link->queue.head->arrival;
  }
  for (i = 0; i < link->cfg.n_classes; i++) {
    LePacket *h = link->delay_line[i].head;

    if (h && h->release < t)
      t = h->release;
    h = link->ingress_line[i].head;
    if (h && h->ingress < t)
      t = h->ingress;
  }
  if (link->sched_idx < link->cfg.n_sched) {
    uint64_t at = link->start + link->cfg.sched[link->sched_idx].at;

    if (at < t)
      t = at;
  }
  return t;
}

void
le_link_reset_interval (LeLink * link)
{
  memset (&link->interval, 0, sizeof (link->interval));
  link->interval.max_queue_pkts = link->queue.n;
  link->interval.max_queue_bytes = link->queue_bytes;
  memset (link->flow_bytes_interval, 0, link->n_flows * sizeof (uint64_t));
  memset (link->flow_drops_interval, 0, link->n_flows * sizeof (uint64_t));
  memset (link->flow_marks_interval, 0, link->n_flows * sizeof (uint64_t));
}

/* Offset of the IP header in an Ethernet frame and its version (4 or 6),
 * or 0 when the frame is not IP. */
static uint32_t
ip_offset (const LePacket * p, int *version)
{
  const uint8_t *d = p->data;
  uint32_t off = 12;
  uint16_t type;

  if (p->len < 14)
    return 0;
  type = (d[12] << 8) | d[13];
  if (type == 0x8100 && p->len >= 18) {
    off = 16;
    type = (d[16] << 8) | d[17];
  }
  off += 2;
  if (type == 0x0800 && p->len >= off + 20 && (d[off] >> 4) == 4
      && (d[off] & 0x0f) >= 5 && p->len >= off + (d[off] & 0x0f) * 4u) {
    *version = 4;
    return off;
  }
  if (type == 0x86dd && p->len >= off + 40 && (d[off] >> 4) == 6) {
    *version = 6;
    return off;
  }
  return 0;
}

int
le_packet_ecn (const LePacket * p)
{
  int version = 0;
  uint32_t off = ip_offset (p, &version);

  if (!off)
    return -1;
  if (version == 4)
    return p->data[off + 1] & 0x03;
  /* IPv6: the traffic class is the low nibble of byte 0 and the high
   * nibble of byte 1; ECN its two low bits */
  return (p->data[off + 1] >> 4) & 0x03;
}

int
le_packet_mark_ce (LePacket * p)
{
  int version = 0, ecn = le_packet_ecn (p);
  uint32_t off = ip_offset (p, &version), sum = 0, i, ihl;
  uint8_t *d = p->data;

  if (ecn <= 0)
    return 0;                   /* not IP, or Not-ECT: drop it */
  if (version == 6) {
    d[off + 1] |= 0x30;
    return 1;
  }
  d[off + 1] |= 0x03;
  /* the header checksum, recomputed */
  ihl = (d[off] & 0x0f) * 4;
  d[off + 10] = d[off + 11] = 0;
  for (i = 0; i < ihl; i += 2)
    sum += (d[off + i] << 8) | d[off + i + 1];
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  sum = ~sum & 0xffff;
  d[off + 10] = sum >> 8;
  d[off + 11] = sum & 0xff;
  return 1;
}
