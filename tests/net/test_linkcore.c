/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit test of the link emulator core (tools/linkemu/link.c) on a virtual
 * clock: exact serialization times, queue limits, outage schedule, delay
 * classes, jitter, ingress jitter, RED's early-drop law, RED's ECN marking
 * (RFC 3168) and loss rates.  No root needed.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "link.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ULL
static int failures;

#define CHECK(cond, ...) do { \
    if (!(cond)) { \
      failures++; \
      fprintf (stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf (stderr, __VA_ARGS__); \
      fprintf (stderr, "\n"); \
    } \
  } while (0)

static LePacket *
mkpkt (uint32_t len, int dclass)
{
  LePacket *p = calloc (1, sizeof (LePacket));

  p->len = len;
  p->dclass = dclass;
  p->flow = 0;
  return p;
}

static void
free_pkt (LePacket * p, void *u)
{
  (void) u;
  free (p);
}

static void
base_cfg (LeLinkConfig * c)
{
  memset (c, 0, sizeof (*c));
  c->rate_bps = LE_RATE_UNLIMITED;
  c->limit_pkts = 1000;
  c->red_mean_pkt = 1000;
  c->n_classes = 1;
}

/* Drains everything, returning release times in order of departure. */
static int
drain (LeLink * l, uint64_t * rel, int max)
{
  int n = 0;

  for (;;) {
    uint64_t t = le_link_next_wakeup (l);
    LePacket *p;

    if (t == LE_TIME_NEVER)
      break;
    le_link_advance (l, t);
    while ((p = le_link_pop_due (l, t))) {
      if (n < max)
        rel[n] = p->release;
      n++;
      free (p);
    }
  }
  return n;
}

static void
test_rate_and_delay (void)
{
  LeLinkConfig c;
  LeLink l;
  uint64_t rel[64];
  int i, n;

  base_cfg (&c);
  c.rate_bps = 8000000;         /* 1000-byte frame = 1 ms */
  c.delay_ns[0] = 20 * MS;
  le_link_init (&l, &c, 1, 1, 0);
  for (i = 0; i < 50; i++)
    CHECK (le_link_enqueue (&l, mkpkt (1000, 0), 0) == LE_VERDICT_QUEUED,
        "enqueue %d", i);
  n = drain (&l, rel, 64);
  CHECK (n == 50, "delivered %d of 50", n);
  for (i = 0; i < 50; i++)
    CHECK (rel[i] == (uint64_t) (i + 1) * MS + 20 * MS,
        "packet %d released at %llu ns", i, (unsigned long long) rel[i]);
  le_link_clear (&l, free_pkt, NULL);
}

static void
test_queue_limit (void)
{
  LeLinkConfig c;
  LeLink l;
  uint64_t rel[64];
  int i, q = 0, d = 0;

  base_cfg (&c);
  c.rate_bps = 8000000;
  c.limit_pkts = 10;
  le_link_init (&l, &c, 1, 1, 0);
  for (i = 0; i < 30; i++) {
    LePacket *p = mkpkt (1000, 0);

    if (le_link_enqueue (&l, p, 0) == LE_VERDICT_QUEUED)
      q++;
    else {
      d++;
      free (p);
    }
  }
  /* 10 waiting + 1 on the wire */
  CHECK (q == 11 && d == 19, "queued %d dropped %d", q, d);
  CHECK (l.total.drops_queue == 19, "counted %llu",
      (unsigned long long) l.total.drops_queue);
  /* 0.5 ms later the first is still on the wire: one more is refused */
  {
    LePacket *p = mkpkt (1000, 0);
    CHECK (le_link_enqueue (&l, p, MS / 2) == LE_VERDICT_DROP_QUEUE,
        "still full at 0.5 ms");
    free (p);
    /* at 1 ms the second starts: room for exactly one */
    p = mkpkt (1000, 0);
    CHECK (le_link_enqueue (&l, p, MS) == LE_VERDICT_QUEUED, "room at 1 ms");
    p = mkpkt (1000, 0);
    CHECK (le_link_enqueue (&l, p, MS) == LE_VERDICT_DROP_QUEUE,
        "full again at 1 ms");
    free (p);
  }
  CHECK (drain (&l, rel, 64) == 12, "drained");
  le_link_clear (&l, free_pkt, NULL);

  /* byte limit */
  base_cfg (&c);
  c.rate_bps = 8000000;
  c.limit_pkts = 0;
  c.limit_bytes = 2500;
  le_link_init (&l, &c, 1, 1, 0);
  q = 0;
  for (i = 0; i < 10; i++) {
    LePacket *p = mkpkt (1000, 0);
    if (le_link_enqueue (&l, p, 0) == LE_VERDICT_QUEUED)
      q++;
    else
      free (p);
  }
  CHECK (q == 3, "byte limit 2500: %d queued (1 on the wire + 2)", q);
  drain (&l, rel, 64);
  le_link_clear (&l, free_pkt, NULL);
}

static void
test_schedule (void)
{
  LeLinkConfig c;
  LeLink l;
  uint64_t rel[64];
  int i, n;

  base_cfg (&c);
  c.rate_bps = 8000000;
  c.n_sched = 2;
  c.sched[0].at = 0;
  c.sched[0].rate_bps = 0;      /* outage from the start ... */
  c.sched[1].at = 1000 * MS;    /* ... until 1 s, then 16 Mbit/s */
  c.sched[1].rate_bps = 16000000;
  le_link_init (&l, &c, 1, 1, 0);
  for (i = 0; i < 5; i++)
    le_link_enqueue (&l, mkpkt (1000, 0), 10 * MS);
  le_link_advance (&l, 999 * MS);
  CHECK (l.queue.n == 5, "nothing leaves in the outage (%u queued)",
      l.queue.n);
  n = drain (&l, rel, 64);
  CHECK (n == 5, "all delivered after the outage");
  for (i = 0; i < 5; i++)
    CHECK (rel[i] == 1000 * MS + (uint64_t) (i + 1) * MS / 2,
        "packet %d at %llu", i, (unsigned long long) rel[i]);
  le_link_clear (&l, free_pkt, NULL);
}

static void
test_delay_classes (void)
{
  LeLinkConfig c;
  LeLink l;
  LePacket *p;
  uint64_t t;
  int order[3], n = 0;

  base_cfg (&c);
  c.n_classes = 3;
  c.delay_ns[0] = 50 * MS;
  c.delay_ns[1] = 10 * MS;
  c.delay_ns[2] = 30 * MS;
  le_link_init (&l, &c, 1, 1, 0);
  le_link_enqueue (&l, mkpkt (100, 0), 0);
  le_link_enqueue (&l, mkpkt (100, 1), 0);
  le_link_enqueue (&l, mkpkt (100, 2), 0);
  while ((t = le_link_next_wakeup (&l)) != LE_TIME_NEVER) {
    le_link_advance (&l, t);
    while ((p = le_link_pop_due (&l, t))) {
      CHECK (p->release == c.delay_ns[p->dclass], "class %d at %llu",
          p->dclass, (unsigned long long) p->release);
      if (n < 3)
        order[n] = p->dclass;
      n++;
      free (p);
    }
  }
  CHECK (n == 3 && order[0] == 1 && order[1] == 2 && order[2] == 0,
      "classes leave by their own delay");
  le_link_clear (&l, free_pkt, NULL);
}

/* Jitter: each packet's extra delay is uniform in [0, jitter] (mean
 * jitter/2), and a class never reorders even when the jitter exceeds the
 * spacing of its packets. */
static void
test_jitter (void)
{
  LeLinkConfig c;
  LeLink l;
  LePacket *p;
  uint64_t t, prev = 0, extra, lo = UINT64_MAX, hi = 0;
  double sum = 0;
  int i, n = 0, ordered = 1;

  base_cfg (&c);
  c.rate_bps = 10000000;        /* 1000 B: 0.8 ms */
  c.delay_ns[0] = 10 * MS;
  c.jitter_ns = 1 * MS;
  le_link_init (&l, &c, 1, 7, 0);
  /* spaced 2 ms apart: the clamp never applies, the jitter is pure */
  for (i = 0; i < 4000; i++) {
    t = (uint64_t) i *2 * MS;

    le_link_advance (&l, t);
    while ((p = le_link_pop_due (&l, t)))
      free (p);
    le_link_enqueue (&l, mkpkt (1000, 0), t);
    p = l.delay_line[0].tail;
    extra = p->release - (t + 800000 + 10 * MS);
    sum += extra;
    if (extra < lo)
      lo = extra;
    if (extra > hi)
      hi = extra;
  }
  CHECK (hi <= MS && lo < MS / 100 && hi > MS - MS / 100,
      "jitter range %llu..%llu ns", (unsigned long long) lo,
      (unsigned long long) hi);
  CHECK (fabs (sum / 4000 - MS / 2.0) < 4 * 0.2887 * MS / sqrt (4000),
      "mean jitter %.0f ns", sum / 4000);
  le_link_clear (&l, free_pkt, NULL);

  /* back to back (0.8 ms apart) with 5 ms of jitter: still in order */
  c.jitter_ns = 5 * MS;
  le_link_init (&l, &c, 1, 7, 0);
  for (i = 0; i < 200; i++)
    le_link_enqueue (&l, mkpkt (1000, 0), 0);
  while ((t = le_link_next_wakeup (&l)) != LE_TIME_NEVER) {
    le_link_advance (&l, t);
    while ((p = le_link_pop_due (&l, t))) {
      uint64_t base = (uint64_t) (n + 1) * 800000 + 10 * MS;

      if (p->release < prev || p->release < base
          || p->release > base + 5 * MS)
        ordered = 0;
      prev = p->release;
      n++;
      free (p);
    }
  }
  CHECK (n == 200 && ordered, "%d packets in order within the bounds", n);
  le_link_clear (&l, free_pkt, NULL);
}

typedef struct
{
  uint64_t ingress;
  int dclass, id;
} IngressRec;

static int
cmp_ingress (const void *a, const void *b)
{
  const IngressRec *x = a, *y = b;

  if (x->ingress != y->ingress)
    return x->ingress < y->ingress ? -1 : 1;
  if (x->dclass != y->dclass)
    return x->dclass - y->dclass;
  return x->id - y->id;
}

static int
pkt_id (const LePacket * p)
{
  int id;

  memcpy (&id, p->data, sizeof (id));
  return id;
}

/* Ingress jitter: a packet enters the queue at arrival + uniform [0, J],
 * in order within its delay class, and the loss/AQM/limit decision is
 * made then.  Checked against a link without ingress jitter that is fed
 * the same packets at the ingress times: drops and release times must be
 * identical. */
#define ING_N 3000
static void
test_ingress_jitter (void)
{
  static IngressRec rec[ING_N];
  static uint64_t rel_a[ING_N], rel_b[ING_N];
  static int drop_a[ING_N], drop_b[ING_N];
  LeLinkConfig c;
  LeLink a, b;
  LePacket *p, *q;
  uint64_t t = 0, prev[2] = { 0, 0 }, lo = UINT64_MAX, hi = 0, w;
  double sum = 0;
  int i, k, n_drop_a = 0, n_drop_b = 0, in_range = 1, ordered = 1, early = 0;
  int same = 1, delivered = 0, pending = 0;

  base_cfg (&c);
  c.rate_bps = 10000000;        /* 1000 B: 0.8 ms */
  c.limit_pkts = 4;
  c.n_classes = 2;
  c.delay_ns[0] = 5 * MS;
  c.delay_ns[1] = 20 * MS;
  c.ingress_jitter_ns = 2 * MS;
  le_link_init (&a, &c, 1, 11, 0);

  /* bursts of 1-4 packets per class every 3.2 ms (about 1.2x the rate) */
  for (i = 0; i < ING_N; i++) {
    int cl = (i / 3) % 2;
    LeVerdict v;

    if (i % 6 == 0)
      t += 3200000;
    p = mkpkt (1000, cl);
    memcpy (p->data, &i, sizeof (i));
    le_link_advance (&a, t);
    /* advanced to t: what is due has entered, nothing later has */
    for (k = 0; k < 2; k++)
      if (a.ingress_line[k].head && a.ingress_line[k].head->ingress <= t)
        early = 1;
    for (q = a.queue.head; q; q = q->next)
      if (q->arrival > t)
        early = 1;
    v = le_link_enqueue (&a, p, t);
    CHECK (v == LE_VERDICT_INGRESS, "verdict %d", v);
    rec[i].ingress = p->ingress;
    rec[i].dclass = cl;
    rec[i].id = i;
    rel_a[i] = 0;
    drop_a[i] = 0;
    if (p->ingress < t || p->ingress > t + 2 * MS)
      in_range = 0;
    if (p->ingress < prev[cl])
      ordered = 0;
    prev[cl] = p->ingress;
    /* the first of each burst is not clamped: pure jitter */
    if (i % 3 == 0) {
      sum += p->ingress - t;
      if (p->ingress - t < lo)
        lo = p->ingress - t;
      if (p->ingress - t > hi)
        hi = p->ingress - t;
    }
    if (p->ingress > t)
      pending = 1;
    w = le_link_next_wakeup (&a);
    if (a.ingress_n && w > a.ingress_line[cl].head->ingress)
      early = 1;                /* the wakeup must include the ingress line */
    while ((p = le_link_pop_dropped (&a))) {
      drop_a[pkt_id (p)] = 1;
      n_drop_a++;
      free (p);
    }
  }
  while ((w = le_link_next_wakeup (&a)) != LE_TIME_NEVER) {
    le_link_advance (&a, w);
    while ((p = le_link_pop_dropped (&a))) {
      drop_a[pkt_id (p)] = 1;
      n_drop_a++;
      free (p);
    }
    while ((p = le_link_pop_due (&a, w))) {
      rel_a[pkt_id (p)] = p->release;
      delivered++;
      free (p);
    }
  }
  CHECK (in_range && ordered, "ingress within [t, t+J] and FIFO per class");
  CHECK (!early && pending, "no decision before the ingress time");
  CHECK (hi <= 2 * MS && lo < MS / 50 && hi > 2 * MS - MS / 50,
      "ingress jitter range %llu..%llu ns", (unsigned long long) lo,
      (unsigned long long) hi);
  CHECK (fabs (sum / (ING_N / 3) - MS) < 4 * 0.5774 * MS / sqrt (ING_N / 3),
      "mean ingress jitter %.0f ns", sum / (ING_N / 3));
  CHECK (n_drop_a > ING_N / 50 && n_drop_a < ING_N / 3
      && n_drop_a + delivered == ING_N
      && a.total.drops_queue == (uint64_t) n_drop_a,
      "%d drops, %d delivered", n_drop_a, delivered);
  le_link_clear (&a, free_pkt, NULL);

  /* the twin: no ingress jitter, fed at the ingress times */
  c.ingress_jitter_ns = 0;
  le_link_init (&b, &c, 1, 11, 0);
  qsort (rec, ING_N, sizeof (rec[0]), cmp_ingress);
  for (i = 0; i < ING_N; i++) {
    p = mkpkt (1000, rec[i].dclass);
    memcpy (p->data, &rec[i].id, sizeof (int));
    drop_b[rec[i].id] = 0;
    rel_b[rec[i].id] = 0;
    if (le_link_enqueue (&b, p, rec[i].ingress) != LE_VERDICT_QUEUED) {
      drop_b[rec[i].id] = 1;
      n_drop_b++;
      free (p);
    }
  }
  while ((w = le_link_next_wakeup (&b)) != LE_TIME_NEVER) {
    le_link_advance (&b, w);
    while ((p = le_link_pop_due (&b, w))) {
      rel_b[pkt_id (p)] = p->release;
      free (p);
    }
  }
  for (i = 0; i < ING_N; i++)
    if (drop_a[i] != drop_b[i] || rel_a[i] != rel_b[i])
      same = 0;
  CHECK (same && n_drop_a == n_drop_b,
      "same drops (%d, %d) and release times as a link fed at the ingress "
      "times", n_drop_a, n_drop_b);
  le_link_clear (&b, free_pkt, NULL);
}

/* With weight 1 the average is the instantaneous queue, so the early drop
 * probability at a constant queue q follows pb = maxp (q-min)/(max-min),
 * uniformized by the count since the last drop (ns-2, Floyd 1993). */
static void
test_red_law (void)
{
  LeLinkConfig c;
  LeLink l;
  static const int qs[] = { 4, 8, 12, 15 };
  int k, q, i;

  for (k = 0; k < 4; k++) {
    int drops = 0, arrivals = 0, forced = 0;
    double pb, want;

    q = qs[k];
    base_cfg (&c);
    c.rate_bps = 0;             /* hold the queue still */
    c.aqm = LE_AQM_RED;
    c.red_min = 5;
    c.red_max = 15;
    c.red_w = 1.0;
    c.red_maxp = 0.2;
    le_link_init (&l, &c, 1, 7, 0);
    /* build the queue to q (RED may drop on the way; retry) */
    while (l.queue.n < (uint32_t) q) {
      LePacket *p = mkpkt (1000, 0);
      if (le_link_enqueue (&l, p, 0) != LE_VERDICT_QUEUED)
        free (p);
    }
    /* now offer packets; one admitted is removed again to keep q */
    for (i = 0; i < 200000; i++) {
      LePacket *p = mkpkt (1000, 0);
      LeVerdict v = le_link_enqueue (&l, p, 0);

      arrivals++;
      if (v == LE_VERDICT_QUEUED) {
        /* remove the tail again: the queue stays at q */
        LePacket *x = l.queue.head, *prev = NULL;
        while (x->next) {
          prev = x;
          x = x->next;
        }
        prev->next = NULL;
        l.queue.tail = prev;
        l.queue.n--;
        l.queue_bytes -= x->len;
        free (x);
      } else {
        if (v == LE_VERDICT_DROP_RED_FORCED)
          forced++;
        drops++;
        free (p);
      }
    }
    if (q < 5) {
      CHECK (drops == 0, "q=%d below min_th: %d drops", q, drops);
    } else if (q >= 15) {
      CHECK (forced == arrivals, "q=%d at max_th: all forced (%d/%d)", q,
          forced, arrivals);
    } else {
      /* hazard pb / (1 - n pb) after n-1 kept packets: the gap between
       * drops is uniform, mean about 1/(2 pb); computed exactly here */
      double surv = 1.0, mean = 0.0;
      int gap;

      pb = 0.2 * (q - 5) / 10.0;
      for (gap = 1; surv > 1e-12; gap++) {
        double h = gap * pb < 1.0 ? pb / (1.0 - gap * pb) : 1.0;
        if (h > 1.0)
          h = 1.0;
        mean += gap * surv * h;
        surv *= 1.0 - h;
      }
      want = 1.0 / mean;
      CHECK (fabs ((double) drops / arrivals - want) < 0.01 * want + 0.002,
          "q=%d: drop rate %.4f, RED law %.4f", q,
          (double) drops / arrivals, want);
      CHECK (forced == 0, "q=%d: no forced drops", q);
    }
    le_link_clear (&l, free_pkt, NULL);
  }
}

/* An Ethernet frame with an IPv4 (or IPv6) UDP header: TOS / traffic class
 * @tos, the IPv4 header checksum valid. */
static LePacket *
mkip (uint32_t len, int v6, uint8_t tos, uint16_t flow)
{
  LePacket *p = mkpkt (len, 0);
  uint8_t *d = p->data;
  uint32_t i;

  for (i = 0; i < len; i++)
    d[i] = (uint8_t) (i * 7 + 1);       /* payload pattern */
  memset (d, 0xaa, 12);
  if (v6) {
    d[12] = 0x86;
    d[13] = 0xdd;
    d[14] = 0x60 | (tos >> 4);
    d[15] = (uint8_t) ((tos & 0x0f) << 4);
    d[20] = 17;
  } else {
    uint32_t sum = 0;

    d[12] = 0x08;
    d[13] = 0x00;
    d[14] = 0x45;
    d[15] = tos;
    d[16] = (len - 14) >> 8;
    d[17] = (len - 14) & 0xff;
    d[22] = 64;
    d[23] = 17;
    d[24] = d[25] = 0;
    for (i = 0; i < 20; i += 2)
      sum += (d[14 + i] << 8) | d[15 + i];
    while (sum >> 16)
      sum = (sum & 0xffff) + (sum >> 16);
    d[24] = (~sum >> 8) & 0xff;
    d[25] = ~sum & 0xff;
  }
  p->flow = flow;
  return p;
}

static int
ipv4_checksum_ok (const LePacket * p)
{
  uint32_t sum = 0, i;

  for (i = 0; i < 20; i += 2)
    sum += (p->data[14 + i] << 8) | p->data[15 + i];
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return sum == 0xffff;
}

/* Removes the queue's tail (RED then sees a constant queue). */
static LePacket *
unqueue_tail (LeLink * l)
{
  LePacket *x = l->queue.head, *prev = NULL;

  while (x->next) {
    prev = x;
    x = x->next;
  }
  if (prev)
    prev->next = NULL;
  else
    l->queue.head = NULL;
  l->queue.tail = prev;
  l->queue.n--;
  l->queue_bytes -= x->len;
  return x;
}

/* RED with ECN (RFC 3168, ns-2's setbit): at a constant queue between the
 * thresholds an ECT packet is marked CE (IPv4 checksum still valid, nothing
 * else changed) where a Not-ECT one is dropped, at RED's law either way;
 * above max_th ECT packets are dropped too; a marked packet still needs
 * room in the queue; without the option ECT packets are dropped. */
static void
test_red_ecn (void)
{
  LeLinkConfig c;
  LeLink l;
  int round;

  for (round = 0; round < 4; round++) {
    /* 0: ecn at q=10 (early region); 1: the same without ecn;
     * 2: ecn at q=15 (forced region); 3: ecn, queue limit = q = 10 */
    int q = round == 2 ? 15 : 10, i, n = 100000;
    int ect_drops = 0, ect_marks = 0, plain_drops = 0, ect_seen = 0;
    int plain_seen = 0, intact = 1, v6_marked = 0, v6_seen = 0, limit = 0;
    double pb = 0.2 * (q - 5) / 10.0, surv = 1.0, mean = 0.0, want;
    int gap;

    base_cfg (&c);
    c.rate_bps = 0;
    c.aqm = LE_AQM_RED;
    c.red_min = 5;
    c.red_max = 15;
    c.red_w = 1.0;
    c.red_maxp = 0.2;
    c.red_ecn = round != 1;
    if (round == 3)
      c.limit_pkts = 10;
    le_link_init (&l, &c, 3, 11, 0);
    while (l.queue.n < (uint32_t) q) {
      LePacket *p = mkip (1000, 0, 0x02, 2);
      if (le_link_enqueue (&l, p, 0) != LE_VERDICT_QUEUED)
        free (p);
    }
    le_link_reset_interval (&l);
    memset (&l.total, 0, sizeof (l.total));
    l.flow_marks_total[0] = l.flow_marks_total[1] = 0;
    for (i = 0; i < n; i++) {
      /* flow 0: IPv4 ECT(0), every 8th IPv6 ECT(1); flow 1: Not-ECT */
      int ect = i % 2 == 0, v6 = ect && i % 16 == 0;
      LePacket *p = mkip (1000, v6, ect ? (v6 ? 0x01 : 0x02) : 0x00,
          ect ? 0 : 1);
      LePacket ref = *p;
      LeVerdict v = le_link_enqueue (&l, p, 0);

      if (ect)
        ect_seen++;
      else
        plain_seen++;
      if (v != LE_VERDICT_QUEUED) {
        if (v == LE_VERDICT_DROP_QUEUE)
          limit++;
        if (ect)
          ect_drops++;
        else
          plain_drops++;
        free (p);
        continue;
      }
      p = unqueue_tail (&l);
      if (v6) {
        int tc = ((p->data[14] & 0x0f) << 4) | (p->data[15] >> 4);

        v6_seen++;
        if ((tc & 3) == 3) {
          v6_marked++;
          ect_marks++;
          /* the traffic class's other bits and the flow label kept */
          ref.data[15] |= 0x30;
        }
      } else if (ect && (p->data[15] & 3) == 3) {
        ect_marks++;
        if (!ipv4_checksum_ok (p))
          intact = 0;
        ref.data[15] |= 0x03;
        ref.data[24] = p->data[24];
        ref.data[25] = p->data[25];
      }
      if (memcmp (ref.data, p->data, p->len) != 0)
        intact = 0;
      free (p);
    }
    for (gap = 1; surv > 1e-12; gap++) {
      double h = gap * pb < 1.0 ? pb / (1.0 - gap * pb) : 1.0;
      if (h > 1.0)
        h = 1.0;
      mean += gap * surv * h;
      surv *= 1.0 - h;
    }
    want = 1.0 / mean;
    if (round == 0) {
      double rate = (double) (ect_marks + ect_drops + plain_drops) / n;

      CHECK (ect_drops == 0 && ect_marks > 0 && v6_marked > 0,
          "ecn: %d of %d ECT packets dropped, %d marked (%d of %d IPv6)",
          ect_drops, ect_seen, ect_marks, v6_marked, v6_seen);
      CHECK (fabs (rate - want) < 0.01 * want + 0.002,
          "ecn: marks + drops %.4f of the packets, RED law %.4f", rate, want);
      CHECK (fabs ((double) ect_marks / ect_seen - want) < 0.05 * want &&
          fabs ((double) plain_drops / plain_seen - want) < 0.05 * want,
          "ecn: ECT marked %.4f, Not-ECT dropped %.4f, law %.4f",
          (double) ect_marks / ect_seen, (double) plain_drops / plain_seen,
          want);
      CHECK (l.total.marks_red == (uint64_t) ect_marks
          && l.total.drops_red_early == (uint64_t) plain_drops
          && l.flow_marks_total[0] == (uint64_t) ect_marks
          && l.flow_marks_total[1] == 0
          && l.flow_drops_total[0] == 0, "ecn: counters (%llu marks, "
          "%llu early drops; flow 0 %llu marks)",
          (unsigned long long) l.total.marks_red,
          (unsigned long long) l.total.drops_red_early,
          (unsigned long long) l.flow_marks_total[0]);
      CHECK (intact, "ecn: a mark changes the ECN bits and the IPv4 "
          "checksum only, and the checksum stays valid");
    } else if (round == 1) {
      CHECK (ect_marks == 0 && l.total.marks_red == 0
          && fabs ((double) ect_drops / ect_seen - want) < 0.05 * want,
          "no ecn: ECT packets dropped %.4f (law %.4f), %d marked",
          (double) ect_drops / ect_seen, want, ect_marks);
      CHECK (intact, "no ecn: packets unchanged");
    } else if (round == 2) {
      CHECK (ect_marks == 0 && ect_drops == ect_seen
          && plain_drops == plain_seen && l.total.marks_red == 0,
          "ecn above max_th: all dropped (%d/%d ECT, %d/%d Not-ECT), %d "
          "marked", ect_drops, ect_seen, plain_drops, plain_seen, ect_marks);
    } else {
      /* (Not-ECT packets may be dropped early, before the limit) */
      CHECK (ect_marks == 0 && l.total.marks_red == 0 && limit >= ect_seen
          && ect_drops == ect_seen && plain_drops == plain_seen,
          "ecn at the queue limit: every packet dropped (%d limit drops, "
          "%d ECT packets), none counted marked", limit, ect_seen);
    }
    le_link_clear (&l, free_pkt, NULL);
  }
}

static void
test_loss (void)
{
  LeLinkConfig c;
  LeLink l;
  int i, lost = 0, n = 200000;

  base_cfg (&c);
  c.loss = 0.03;
  le_link_init (&l, &c, 1, 3, 0);
  for (i = 0; i < n; i++) {
    LePacket *p = mkpkt (100, 0);
    if (le_link_enqueue (&l, p, (uint64_t) i * MS) != LE_VERDICT_QUEUED)
      lost++;
    else {
      le_link_advance (&l, (uint64_t) i * MS);
      while ((p = le_link_pop_due (&l, (uint64_t) i * MS)))
        free (p);
    }
  }
  /* 4 sigma of the binomial */
  CHECK (fabs (lost - 0.03 * n) < 4 * sqrt (n * 0.03 * 0.97),
      "loss %d of %d", lost, n);
  le_link_clear (&l, free_pkt, NULL);
}

int
main (void)
{
  test_rate_and_delay ();
  test_queue_limit ();
  test_schedule ();
  test_delay_classes ();
  test_jitter ();
  test_ingress_jitter ();
  test_red_law ();
  test_red_ecn ();
  test_loss ();
  if (failures) {
    fprintf (stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf ("all link core checks passed\n");
  return 0;
}
