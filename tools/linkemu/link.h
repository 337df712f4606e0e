/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow link emulator: one direction of an emulated bottleneck link.
 *
 * Sans-IO: no sockets, no clocks. The caller feeds packets with the current
 * time (nanoseconds on any monotonic scale), advances the link to "now",
 * takes the packets whose propagation delay has elapsed and asks when it
 * must be woken next.
 *
 * Model: (optional per delay class ingress line with random jitter) ->
 * loss (random, Gilbert-Elliott) -> AQM (drop-tail or ns-2 RED) -> FIFO
 * queue -> bottleneck serializer at the scheduled rate -> per delay class
 * propagation delay line (plus optional random jitter).  Either jitter
 * breaks the phase effects of a perfectly deterministic drop-tail link;
 * ingress jitter (reception latency of a real userspace bottleneck) does
 * it without disturbing the spacing the serializer gives the packets.  A
 * packet that is being serialized is not in the queue (ns-2 semantics): a
 * queue limit of N holds N waiting packets plus the one on the wire.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __LINKEMU_LINK_H__
#define __LINKEMU_LINK_H__

#include <stdint.h>
#include <stddef.h>

#define LE_RATE_UNLIMITED UINT64_MAX
#define LE_TIME_NEVER UINT64_MAX
#define LE_MAX_CLASSES 32
#define LE_MAX_SCHED 256
/* frame buffer capacity: 1500-byte MTU + Ethernet + VLAN, with margin */
#define LE_PKT_CAP 2048

typedef struct _LePacket LePacket;
struct _LePacket
{
  LePacket *next;
  uint64_t arrival;             /* ns: enters the queue (AQM decision) */
  uint64_t ingress;             /* ns: due time in the ingress line */
  uint64_t release;             /* ns: leaves the delay line */
  uint32_t len;                 /* frame length in bytes */
  uint16_t flow;                /* index of the flow counter */
  uint8_t dclass;               /* delay class index */
  uint8_t data[LE_PKT_CAP];
};

typedef struct
{
  LePacket *head, *tail;
  uint32_t n;
} LeFifo;

typedef enum
{
  LE_AQM_DROPTAIL = 0,
  LE_AQM_RED = 1
} LeAqm;

typedef enum
{
  LE_VERDICT_QUEUED = 0,
  LE_VERDICT_DROP_LOSS,         /* random or burst loss */
  LE_VERDICT_DROP_RED_EARLY,    /* RED, avg between the thresholds */
  LE_VERDICT_DROP_RED_FORCED,   /* RED, avg above max threshold */
  LE_VERDICT_DROP_QUEUE,        /* queue limit */
  LE_VERDICT_INGRESS            /* held in the ingress line: the link owns
                                 * it, the decision comes at its ingress
                                 * time (a drop then goes to
                                 * le_link_pop_dropped) */
} LeVerdict;

typedef struct
{
  uint64_t at;                  /* ns after start */
  uint64_t rate_bps;
} LeSchedEntry;

typedef struct
{
  uint64_t rate_bps;            /* initial rate; LE_RATE_UNLIMITED or 0 (outage) */
  uint32_t overhead;            /* bytes added to each frame for the rate */
  uint32_t limit_pkts;          /* 0: no packet limit */
  uint64_t limit_bytes;         /* 0: no byte limit */
  int aqm;                      /* LeAqm */
  double red_min, red_max;      /* thresholds, in packets (or bytes when
                                 * the queue is limited in bytes only) */
  double red_w, red_maxp;
  int red_gentle;
  int red_ecn;                  /* RFC 3168: an early drop of an ECN-capable
                                 * (ECT) IP packet marks it CE instead; forced
                                 * drops and the queue limit still drop */
  uint32_t red_mean_pkt;        /* bytes, for the idle-time decay */
  double loss;                  /* Bernoulli loss probability */
  uint64_t drop_nth;            /* drop the Nth data packet (1-based; 0 none),
                                 * for tests that need exactly one loss */
  int ge;                       /* Gilbert-Elliott enabled */
  double ge_p, ge_r;            /* P(good->bad), P(bad->good) per packet */
  double ge_loss_bad, ge_loss_good;
  int n_classes;                /* class 0 is the default delay */
  uint64_t delay_ns[LE_MAX_CLASSES];
  uint64_t jitter_ns;           /* extra delay, uniform in [0, jitter_ns];
                                 * never reorders a delay class */
  uint64_t ingress_jitter_ns;   /* a packet enters the queue (loss, AQM,
                                 * limit) at arrival + uniform [0, this];
                                 * never reorders a delay class */
  int n_sched;
  LeSchedEntry sched[LE_MAX_SCHED];
} LeLinkConfig;

typedef struct
{
  uint64_t arrived_pkts, arrived_bytes;
  uint64_t dequeued_pkts, dequeued_bytes;
  uint64_t delivered_pkts, delivered_bytes;
  uint64_t drops_loss, drops_red_early, drops_red_forced, drops_queue;
  uint64_t marks_red;           /* CE marks in place of RED early drops */
  uint32_t max_queue_pkts;
  uint64_t max_queue_bytes;
} LeCounters;

/* What counts as a data packet for drop_nth: not a pure ACK or a probe. */
#define LE_DATA_PKT_MIN 500

typedef struct
{
  LeLinkConfig cfg;
  uint64_t start;
  uint64_t rng[4];

  uint64_t rate_bps;
  int sched_idx;

  LeFifo queue;
  uint64_t queue_bytes;
  uint64_t busy_until;          /* serializer free from this time */

  double red_avg;
  int red_count;
  int idle;                     /* queue and serializer empty since idle_since */
  uint64_t idle_since;

  int ge_bad;
  uint64_t data_pkts;           /* packets of LE_DATA_PKT_MIN bytes or more */

  LeFifo delay_line[LE_MAX_CLASSES];
  LeFifo ingress_line[LE_MAX_CLASSES];
  uint32_t ingress_n;           /* packets in all ingress lines */
  LeFifo dropped;               /* dropped at a deferred ingress */

  int n_flows;                  /* flow counters, the last one is "other" */
  LeCounters total, interval;
  uint64_t *flow_bytes_total, *flow_bytes_interval;
  uint64_t *flow_drops_total, *flow_drops_interval;
  uint64_t *flow_marks_total, *flow_marks_interval;
} LeLink;

void le_fifo_push (LeFifo * f, LePacket * p);
LePacket *le_fifo_pop (LeFifo * f);

/* n_flows counters are kept (index n_flows - 1 is conventionally "other") */
int le_link_init (LeLink * link, const LeLinkConfig * cfg, int n_flows,
    uint64_t seed, uint64_t start);
void le_link_clear (LeLink * link, void (*free_pkt) (LePacket *, void *),
    void *user_data);

/* Runs the ingress lines, the serializer and the rate schedule up to @now,
 * in time order. */
void le_link_advance (LeLink * link, uint64_t now);

/* Offers a packet (dclass and flow set) arriving at @now; advances the link
 * before and after.  On a drop verdict the packet is still the caller's;
 * on LE_VERDICT_QUEUED and LE_VERDICT_INGRESS the link's. */
LeVerdict le_link_enqueue (LeLink * link, LePacket * p, uint64_t now);

/* A packet dropped when it left the ingress line (counted like any drop;
 * the caller frees it), or NULL. */
LePacket *le_link_pop_dropped (LeLink * link);

/* Next packet whose delay has elapsed at @now, or NULL. Counts it delivered. */
LePacket *le_link_pop_due (LeLink * link, uint64_t now);

/* Earliest time at which the link has something to do (LE_TIME_NEVER). */
uint64_t le_link_next_wakeup (const LeLink * link);

/* Starts a new sampling interval (keeps totals). */
void le_link_reset_interval (LeLink * link);

double le_random (LeLink * link);

/* The ECN field (RFC 3168: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE) of an
 * Ethernet frame's IPv4 or IPv6 header (one VLAN tag allowed); -1 when the
 * frame is not IP. */
int le_packet_ecn (const LePacket * p);
/* Sets CE in an ECT packet (the IPv4 header checksum updated); returns 0
 * when the packet is not ECN-capable (nothing changed). */
int le_packet_mark_ce (LePacket * p);

#endif
