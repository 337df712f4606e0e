/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — unit tests of the rUDP sans-IO core on a virtual clock. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/check/gstcheck.h>
#include <gst/rtp/gstrtcpbuffer.h>
#include <gst/rudp/rudp.h>

#define MS GST_MSECOND

/* ------------------------------------------------------------------ */
/* leaky bucket */

GST_START_TEST (test_bucket_rate_and_depth)
{
  GstRudpBucket b;
  guint64 sent = 0;
  GstClockTime t;

  gst_rudp_bucket_init (&b, 100000, 5000, 0);
  fail_unless_equals_int (gst_rudp_bucket_level (&b), 5000);
  /* a full bucket lets 5 packets of 1000 go at once, not a 6th */
  for (sent = 0; gst_rudp_bucket_take (&b, 1000); sent++);
  fail_unless_equals_int (sent, 5);
  /* the 6th is ready exactly 10 ms later at 100 KB/s */
  fail_unless_equals_uint64 (gst_rudp_bucket_ready_time (&b, 1000), 10 * MS);
  gst_rudp_bucket_fill (&b, 10 * MS - 1);
  fail_if (gst_rudp_bucket_may_send (&b, 1000));
  gst_rudp_bucket_fill (&b, 10 * MS);
  fail_unless (gst_rudp_bucket_take (&b, 1000));

  /* long idling never overflows and stops at the depth */
  gst_rudp_bucket_fill (&b, 1000 * GST_SECOND);
  fail_unless_equals_int (gst_rudp_bucket_level (&b), 5000);

  /* over 10 s of 1 ms ticks with a backlog, exactly the rate leaves */
  sent = 0;
  for (t = 1000 * GST_SECOND + MS; t <= 1010 * GST_SECOND; t += MS) {
    gst_rudp_bucket_fill (&b, t);
    while (gst_rudp_bucket_take (&b, 300))
      sent += 300;
  }
  /* 1 MB of tokens plus the 5000 the bucket held, within a packet */
  fail_unless (sent >= 1005000 - 300 && sent <= 1005000, "%" G_GUINT64_FORMAT,
      sent);
}

GST_END_TEST;

/* Bytes sent outside a flow's queue (a retransmission over its budget)
 * are charged to its bucket: its next packets wait for them, so the flow
 * keeps its rate with the resends counted. */
GST_START_TEST (test_flow_charge)
{
  GstRudpScheduler *s = gst_rudp_scheduler_new (MS, 0);
  GstRudpFlow *f = gst_rudp_scheduler_add_flow (s, 10000, 1000, NULL, 0);
  GstRudpFlowStats st;
  GstRudpFlow *got;
  gpointer pkt;
  gsize size;

  /* the bucket starts full (1000 bytes); 3000 bytes resent: 2000 owed */
  gst_rudp_flow_charge (f, 3000, 0);
  gst_rudp_flow_get_stats (f, 0, &st);
  fail_unless_equals_int64 (st.bucket_fill, -2000);
  /* a 500-byte packet then waits until the debt and its own size are
   * credited: 2500 bytes at 10 kB/s */
  gst_rudp_flow_handle_packet (f, GUINT_TO_POINTER (1), 500);
  fail_if (gst_rudp_scheduler_poll (s, 200 * MS, &got, &pkt, &size));
  fail_unless (gst_rudp_scheduler_next_wakeup (s, 200 * MS) >= 250 * MS);
  fail_unless (gst_rudp_scheduler_poll (s, 250 * MS, &got, &pkt, &size));
  fail_unless (got == f && size == 500);
  gst_rudp_scheduler_remove_flow (s, f, NULL);
  gst_rudp_scheduler_free (s);
}

GST_END_TEST;

GST_START_TEST (test_bucket_debt)
{
  GstRudpBucket b;
  GstClockTime t;
  guint n = 0;

  /* a packet larger than the bucket goes when the bucket is full and the
   * rest is borrowed: 1500-byte packets through a 500-byte bucket at
   * 15 KB/s still leave 10 per second */
  gst_rudp_bucket_init (&b, 15000, 500, 0);
  for (t = 0; t < 10 * GST_SECOND; t += MS) {
    gst_rudp_bucket_fill (&b, t);
    if (gst_rudp_bucket_take (&b, 1500))
      n++;
    fail_unless (gst_rudp_bucket_level (&b) >= -1000);
  }
  fail_unless (n >= 99 && n <= 101, "%u", n);

  /* rate 0 never lets anything go; a new rate resumes from then */
  gst_rudp_bucket_init (&b, 0, 1000, 0);
  b.tokens = 0;
  fail_unless_equals_uint64 (gst_rudp_bucket_ready_time (&b, 100),
      GST_CLOCK_TIME_NONE);
  gst_rudp_bucket_set_rate (&b, 1000, GST_SECOND);
  fail_unless_equals_uint64 (gst_rudp_bucket_ready_time (&b, 100),
      GST_SECOND + 100 * MS);
  /* automatic depth: 20 ms of rate, at least 3000 bytes */
  fail_unless_equals_uint64 (gst_rudp_bucket_auto_depth (1000), 3000);
  fail_unless_equals_uint64 (gst_rudp_bucket_auto_depth (10000000), 200000);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* shared-timer scheduler */

typedef struct {
  guint64 bytes[8];
  guint64 window[8][200];       /* bytes per 100 ms window */
  GstClockTime now;
  guint ticks;
} SchedLog;

static void
log_send (GstRudpFlow * f, gpointer packet, gsize size, gpointer user_data)
{
  SchedLog *log = user_data;
  guint i = GPOINTER_TO_UINT (gst_rudp_flow_get_user_data (f));
  guint w = log->now / (100 * MS);

  log->bytes[i] += size;
  if (w < 200)
    log->window[i][w] += size;
}

GST_START_TEST (test_scheduler_many_flows)
{
  const guint64 rates[4] = { 10000, 100000, 1000000, 10000000 };
  const gsize sizes[4] = { 20, 200, 1000, 1400 };
  GstRudpScheduler *s = gst_rudp_scheduler_new (MS, 0);
  GstRudpFlow *f[4];
  SchedLog *log = g_new0 (SchedLog, 1);
  guint i, w;

  for (i = 0; i < 4; i++) {
    guint k;

    f[i] = gst_rudp_scheduler_add_flow (s, rates[i], 0, GUINT_TO_POINTER (i),
        0);
    for (k = 0; k < rates[i] * 11 / sizes[i]; k++)
      gst_rudp_flow_handle_packet (f[i], NULL, sizes[i]);
  }
  fail_unless_equals_int (gst_rudp_scheduler_n_flows (s), 4);
  /* run the timer the way the element does: sleep until next_wakeup */
  log->now = 0;
  while (log->now < 10 * GST_SECOND) {
    GstClockTime next;

    gst_rudp_scheduler_tick (s, log->now, log_send, log);
    log->ticks++;
    next = gst_rudp_scheduler_next_wakeup (s, log->now);
    fail_unless (GST_CLOCK_TIME_IS_VALID (next));
    fail_unless (next > log->now);
    /* ticks stay on the shared 1 ms grid */
    fail_unless_equals_uint64 (next % MS, 0);
    log->now = next;
  }
  /* every flow, every 100 ms window after the initial burst: the rate
   * within one packet */
  for (i = 0; i < 4; i++) {
    guint64 want = rates[i] / 10;

    for (w = 1; w < 100; w++)
      fail_unless (log->window[i][w] + sizes[i] >= want
          && log->window[i][w] <= want + sizes[i],
          "flow %u window %u: %" G_GUINT64_FORMAT, i, w, log->window[i][w]);
  }
  /* one timer: at most one tick per grid point */
  fail_unless (log->ticks <= 10000 + 1, "%u", log->ticks);

  for (i = 0; i < 4; i++)
    gst_rudp_scheduler_remove_flow (s, f[i], NULL);
  gst_rudp_scheduler_free (s);
  g_free (log);
}

GST_END_TEST;

GST_START_TEST (test_scheduler_wakeups)
{
  GstRudpScheduler *s = gst_rudp_scheduler_new (10 * MS, 5 * MS);
  GstRudpFlow *f = gst_rudp_scheduler_add_flow (s, 1000, 1000,
      NULL, 5 * MS);
  SchedLog *log = g_new0 (SchedLog, 1);
  GstRudpFlowStats st;

  /* nothing queued: no wakeup at all */
  fail_unless_equals_uint64 (gst_rudp_scheduler_next_wakeup (s, 5 * MS),
      GST_CLOCK_TIME_NONE);
  /* a packet into a full bucket may leave at once */
  gst_rudp_flow_handle_packet (f, NULL, 600);
  gst_rudp_flow_handle_packet (f, NULL, 600);
  fail_unless_equals_uint64 (gst_rudp_scheduler_next_wakeup (s, 7 * MS),
      7 * MS);
  log->now = 7 * MS;
  fail_unless_equals_int (gst_rudp_scheduler_tick (s, 7 * MS, log_send, log),
      1);
  /* 400 tokens left; 600 needed: 200 ms at 1000 B/s from 7 ms, rounded up
   * to the 10 ms grid that starts at 5 ms */
  fail_unless_equals_uint64 (gst_rudp_scheduler_next_wakeup (s, 7 * MS),
      215 * MS);
  fail_unless_equals_int (gst_rudp_scheduler_tick (s, 205 * MS, log_send,
          log), 0);
  fail_unless_equals_int (gst_rudp_scheduler_tick (s, 215 * MS, log_send,
          log), 1);
  gst_rudp_flow_get_stats (f, 215 * MS, &st);
  fail_unless_equals_uint64 (st.packets_sent, 2);
  fail_unless_equals_uint64 (st.bytes_sent, 1200);
  fail_unless_equals_uint64 (st.queued_bytes, 0);

  /* rate 0 pauses the flow; a new rate resumes it */
  gst_rudp_flow_set_rate (f, 0, 215 * MS);
  gst_rudp_flow_handle_packet (f, NULL, 600);
  fail_unless_equals_uint64 (gst_rudp_scheduler_next_wakeup (s, 215 * MS),
      GST_CLOCK_TIME_NONE);
  gst_rudp_flow_set_rate (f, 100000, GST_SECOND);
  /* 600 tokens at 100 KB/s: 6 ms, up to the grid */
  fail_unless_equals_uint64 (gst_rudp_scheduler_next_wakeup (s, GST_SECOND),
      1015 * MS);
  gst_rudp_flow_flush (f, NULL);
  fail_unless_equals_int (gst_rudp_flow_queued_packets (f), 0);
  gst_rudp_scheduler_remove_flow (s, f, NULL);
  gst_rudp_scheduler_free (s);
  g_free (log);
}

GST_END_TEST;

/* A pacer thread that wakes up late: every packet's send instant. */
typedef struct {
  GstClockTime now;
  GArray *sent;                 /* SentPacket */
} LateLog;

typedef struct {
  GstClockTime t;
  gsize size;
} SentPacket;

static void
log_sent (GstRudpFlow * f, gpointer packet, gsize size, gpointer user_data)
{
  LateLog *log = user_data;
  SentPacket p = { log->now, size };

  g_array_append_val (log->sent, p);
}

/* bytes sent in [from, to) */
static guint64
sent_between (GArray * sent, GstClockTime from, GstClockTime to)
{
  guint64 n = 0;
  guint i;

  for (i = 0; i < sent->len; i++) {
    SentPacket *p = &g_array_index (sent, SentPacket, i);

    if (p->t >= from && p->t < to)
      n += p->size;
  }
  return n;
}

/* bytes sent at exactly @t (one tick) */
#define sent_at(sent, t) sent_between (sent, t, (t) + 1)

/* The pacer's promise when its thread is held up (a late timer, a
 * descheduled thread): the bucket caps the credit it accrued, so the
 * catch-up after the wakeup is at most one bucket depth and no window
 * of any length W holds more than rate x W + depth; a stall shorter than
 * depth / rate is caught up completely (the rate holds over time), a
 * longer one loses what exceeds the depth instead of bursting it. */
GST_START_TEST (test_scheduler_late_wakeup)
{
  const guint64 rate = 100000;  /* bytes/s */
  const gsize size = 250;
  /* when the wakeup due at or after .at happens .late too late */
  const struct {
    GstClockTime at, late;
  } stalls[] = {
    {1000 * MS, 10 * MS}, {1500 * MS, 27 * MS}, {2000 * MS, 25 * MS},
    {3000 * MS, 200 * MS}, {3500 * MS, 1000 * MS},
  };
  const GstClockTime windows[] = { 10 * MS, 100 * MS, 800 * MS, GST_SECOND };
  GstRudpScheduler *s = gst_rudp_scheduler_new (MS, 0);
  GstRudpFlow *f = gst_rudp_scheduler_add_flow (s, rate, 0, NULL, 0);
  LateLog log = { 0, g_array_new (FALSE, FALSE, sizeof (SentPacket)) };
  GstClockTime woke[G_N_ELEMENTS (stalls)];
  GstRudpFlowStats st;
  guint64 depth, most;
  guint i, j, k, next_stall = 0;

  gst_rudp_flow_get_stats (f, 0, &st);
  depth = st.depth;
  /* automatic: 20 ms of the rate, at least 3000 bytes */
  fail_unless_equals_uint64 (depth, 3000);
  for (k = 0; k < rate * 6 / size; k++)
    gst_rudp_flow_handle_packet (f, NULL, size);
  /* the element's loop: now = clock; tick(now); wait(next_wakeup) */
  while (log.now < 5 * GST_SECOND) {
    GstClockTime next;

    gst_rudp_scheduler_tick (s, log.now, log_sent, &log);
    next = gst_rudp_scheduler_next_wakeup (s, log.now);
    fail_unless (GST_CLOCK_TIME_IS_VALID (next) && next > log.now);
    if (next_stall < G_N_ELEMENTS (stalls) && next >= stalls[next_stall].at) {
      next += stalls[next_stall].late;
      woke[next_stall++] = next;
    }
    log.now = next;
  }
  fail_unless_equals_int (next_stall, G_N_ELEMENTS (stalls));

  /* the catch-up at each late wakeup: the packet that was due and what
   * accrued while late, whole packets, never more than the depth */
  for (i = 0; i < G_N_ELEMENTS (stalls); i++) {
    guint64 accrued = gst_util_uint64_scale (rate, stalls[i].late, GST_SECOND);
    guint64 burst = sent_at (log.sent, woke[i]);

    if (accrued + size <= depth)
      fail_unless (burst >= accrued && burst <= accrued + 2 * size,
          "stall %u: %" G_GUINT64_FORMAT, i, burst);
    else
      fail_unless_equals_uint64 (burst, depth);
  }

  /* stalls up to (depth - one packet) / rate (27.5 ms) cost nothing:
   * (the due packet's tokens count towards the depth) from the first
   * packet after the initial burst to 3 s, exactly the rate */
  fail_unless (sent_between (log.sent, 1, 3000 * MS) + size >= rate * 3 &&
      sent_between (log.sent, 1, 3000 * MS) <= rate * 3,
      "%" G_GUINT64_FORMAT, sent_between (log.sent, 1, 3000 * MS));
  /* a longer stall loses what exceeds the depth: 200 ms idle sends
   * 3000 bytes at its end, not 20000 */
  fail_unless (sent_between (log.sent, 3000 * MS, 3400 * MS) + size >=
      rate * 2 / 10 + depth && sent_between (log.sent, 3000 * MS,
          3400 * MS) <= rate * 2 / 10 + depth, "%" G_GUINT64_FORMAT,
      sent_between (log.sent, 3000 * MS, 3400 * MS));

  /* no window, of any length, starting at any send instant, holds more
   * than rate x W + depth; it is reached within a packet (after the
   * stalls) */
  for (j = 0; j < G_N_ELEMENTS (windows); j++) {
    GstClockTime w = windows[j];
    guint64 bound = gst_util_uint64_scale (rate, w, GST_SECOND) + depth;

    most = 0;
    for (i = 0; i < log.sent->len; i++) {
      GstClockTime t = g_array_index (log.sent, SentPacket, i).t;
      guint64 b = sent_between (log.sent, t, t + w);

      fail_unless (b <= bound, "%" G_GUINT64_FORMAT " bytes in %"
          GST_TIME_FORMAT " from %" GST_TIME_FORMAT ", bound %"
          G_GUINT64_FORMAT, b, GST_TIME_ARGS (w), GST_TIME_ARGS (t), bound);
      most = MAX (most, b);
    }
    fail_unless (most + size >= bound, "%" G_GUINT64_FORMAT, most);
  }

  gst_rudp_scheduler_remove_flow (s, f, NULL);
  gst_rudp_scheduler_free (s);
  g_array_free (log.sent, TRUE);
}

GST_END_TEST;

/* Bytes in the worst window of length @w that starts at a send instant. */
static guint64
worst_window (GArray * sent, GstClockTime w)
{
  guint64 most = 0;
  guint i;

  for (i = 0; i < sent->len; i++) {
    GstClockTime t = g_array_index (sent, SentPacket, i).t;

    most = MAX (most, sent_between (sent, t, t + w));
  }
  return most;
}

/* The shell's thread held up between taking a packet and sending it: with
 * poll (the clock read before each packet) the bound holds on the wire,
 * rate x W + depth + one packet; paying a whole tick at the wakeup time
 * and sending late breaks it by what the hold-up accrues. Two flows at
 * 100 KB/s, 250-byte packets; every 200 ms the wakeup is 50 ms late (the
 * buckets fill up) and the thread is then held up 8 ms right after the
 * first packet it took. */
static void
run_held_up (gboolean per_packet, GArray * sent[2])
{
  const guint64 rate = 100000;
  GstRudpScheduler *s = gst_rudp_scheduler_new (MS, 0);
  GstRudpFlow *f[2];
  GstClockTime clock = 0, last_stall = 0;
  guint i, k;

  for (i = 0; i < 2; i++) {
    f[i] = gst_rudp_scheduler_add_flow (s, rate, 0, GUINT_TO_POINTER (i), 0);
    for (k = 0; k < rate * 3 / 250; k++)
      gst_rudp_flow_handle_packet (f[i], NULL, 250);
  }
  while (clock < 2 * GST_SECOND) {
    GstClockTime next, paid = clock;
    gboolean held = FALSE;
    GstRudpFlow *flow;
    gpointer packet;
    gsize size;

    /* take (and pay) a packet, maybe be held up, send it */
    while (gst_rudp_scheduler_poll (s, per_packet ? clock : paid, &flow,
            &packet, &size)) {
      SentPacket p;

      if (!held && last_stall == paid && paid > 0) {
        clock += 8 * MS;
        held = TRUE;
      }
      p.t = clock;
      p.size = size;
      g_array_append_val (sent[GPOINTER_TO_UINT (gst_rudp_flow_get_user_data
                  (flow))], p);
      clock += 10 * GST_USECOND;        /* the send itself */
    }
    next = gst_rudp_scheduler_next_wakeup (s, clock);
    fail_unless (GST_CLOCK_TIME_IS_VALID (next));
    clock = MAX (next, clock);
    if (clock >= last_stall + 200 * MS) {
      clock += 50 * MS;
      last_stall = clock;
    }
  }
  for (i = 0; i < 2; i++)
    gst_rudp_scheduler_remove_flow (s, f[i], NULL);
  gst_rudp_scheduler_free (s);
}

GST_START_TEST (test_scheduler_held_up_between_packets)
{
  const guint64 bound = 100000 / 10 + 3000 + 250;       /* 100 ms */
  GArray *sent[2];
  guint i, pass;

  for (pass = 0; pass < 2; pass++) {
    gboolean per_packet = pass == 0;

    for (i = 0; i < 2; i++)
      sent[i] = g_array_new (FALSE, FALSE, sizeof (SentPacket));
    run_held_up (per_packet, sent);
    for (i = 0; i < 2; i++) {
      guint64 worst = worst_window (sent[i], 100 * MS);

      GST_INFO ("%s: flow %u worst 100 ms: %" G_GUINT64_FORMAT,
          per_packet ? "per packet" : "per wakeup", i, worst);
      fail_unless (sent[i]->len > 600, "%u", sent[i]->len);
      if (per_packet)
        fail_unless (worst <= bound, "flow %u: %" G_GUINT64_FORMAT, i, worst);
      else                      /* the old shell: late by the hold-up */
        fail_unless (worst > bound, "flow %u: %" G_GUINT64_FORMAT, i, worst);
      g_array_free (sent[i], TRUE);
    }
  }
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* levels and the receiver algorithm */

GST_START_TEST (test_levels_table)
{
  GstRudpLevels l;
  guint64 bad[3] = { 10, 10, 20 };
  gchar *str;

  gst_rudp_levels_init_default (&l);
  fail_unless_equals_int (l.n, 10);
  fail_unless_equals_uint64 (l.rate[0], 160000);
  fail_unless_equals_uint64 (l.rate[9], 1600000);
  str = gst_rudp_levels_to_string (&l);
  fail_unless_equals_string (str,
      "160000,320000,480000,640000,800000,960000,1120000,1280000,1440000,"
      "1600000");
  g_free (str);
  fail_unless_equals_int (gst_rudp_levels_for_bitrate (&l, 1600000), 9);
  fail_unless_equals_int (gst_rudp_levels_for_bitrate (&l, 1599999), 9);
  fail_unless_equals_int (gst_rudp_levels_for_bitrate (&l, 1500000), 8);
  fail_unless_equals_int (gst_rudp_levels_for_bitrate (&l, 1000), 0);
  fail_if (gst_rudp_levels_set (&l, bad, 3));
  fail_if (gst_rudp_levels_from_string (&l, "1,2,x"));
  fail_unless (gst_rudp_levels_from_string (&l, "<1000, 5000, 9000>"));
  fail_unless_equals_int (l.n, 3);
  fail_unless_equals_uint64 (l.rate[2], 9000);
}

GST_END_TEST;

/* A virtual sender and receiver: one tick per ms; the sender sends
 * 1000-byte packets at the level's rate (or every @fixed_gap ms) and, with
 * @notices, answers each new level at once (it holds from the next
 * sequence number, as rudpsink says). */
typedef struct {
  GstRudpReceiver *r;
  GstRudpLevels levels;
  GstClockTime now;
  guint16 seq;
  gboolean notices;
  guint fixed_gap;              /* ms between packets; 0: follow the level */
  guint cap_gap;                /* a bottleneck: at most one packet per
                                 * cap_gap ms (unbounded queue); 0: none */
  guint64 backlog;              /* packets queued there */
  GstClockTime cap_next;
  guint16 cap_seq;
  gsize size;
  guint64 credit;               /* bytes x 1000 the sender may send */
  guint sender_level;
  gdouble loss;                 /* Bernoulli loss of the path */
  GRand *rand;
  gboolean (*drop) (guint16 seq);
  guint ecn;                    /* the ECN field of every packet */
  gboolean (*mark) (guint16 seq);       /* these arrive CE */
  gdouble ce_rate;              /* Bernoulli CE marking of the path */
  /* record */
  guint n_changes;
  GstClockTime change_at[256];
  guint change_to[256];
  guint64 sent, dropped;
  gdouble level_ms;             /* sum of level x ms */
  guint64 ms;
} Loop;

static void
loop_init (Loop * lp, GstRudpReceiverConfig * c, GstClockTime t0, guint16 seq)
{
  memset (lp, 0, sizeof (*lp));
  lp->r = gst_rudp_receiver_new (c);
  lp->levels = c->levels;
  lp->now = t0;
  lp->seq = seq;
  lp->notices = TRUE;
  lp->size = 1000;
  lp->sender_level = c->initial_level;
  lp->rand = g_rand_new_with_seed (1);
  /* the first packet at 0 ms, then one per 1000 / rate ms exactly */
  lp->credit = lp->size * 1000 - MIN (c->levels.rate[c->initial_level] / 8,
      lp->size * 1000);
}

static void
loop_clear (Loop * lp)
{
  gst_rudp_receiver_free (lp->r);
  g_rand_free (lp->rand);
}

/* Runs @ms virtual milliseconds. */
static void
loop_run (Loop * lp, guint ms)
{
  guint i;

  for (i = 0; i < ms; i++) {
    guint before = gst_rudp_receiver_get_level (lp->r);
    gboolean send;

    if (lp->fixed_gap) {
      send = (lp->now / MS) % lp->fixed_gap == 0;
    } else {
      lp->credit += lp->levels.rate[lp->sender_level] / 8;
      send = lp->credit >= lp->size * 1000;
      if (send)
        lp->credit -= lp->size * 1000;
    }
    if (send) {
      gboolean lost = (lp->drop && lp->drop (lp->seq)) ||
          (lp->loss > 0 && g_rand_double (lp->rand) < lp->loss);

      lp->sent++;
      if (lost)
        lp->dropped++;
      else if (lp->cap_gap)
        lp->backlog++;
      else if (lp->ecn || lp->mark || lp->ce_rate > 0) {
        gboolean ce = (lp->mark && lp->mark (lp->seq)) ||
            (lp->ce_rate > 0 && g_rand_double (lp->rand) < lp->ce_rate);

        gst_rudp_receiver_handle_packet_ecn (lp->r, lp->seq, lp->size,
            ce ? GST_RUDP_ECN_CE : lp->ecn, lp->now);
      } else
        gst_rudp_receiver_handle_packet (lp->r, lp->seq, lp->size, lp->now);
      lp->seq++;
    }
    if (lp->cap_gap && lp->backlog > 0 && lp->now >= lp->cap_next) {
      /* (no loss with a bottleneck: the queued packets are in order) */
      gst_rudp_receiver_handle_packet (lp->r, lp->cap_seq++, lp->size, lp->now);
      lp->backlog--;
      lp->cap_next = lp->now + lp->cap_gap * MS;
    }
    if (gst_rudp_receiver_poll (lp->r, lp->now, NULL))
      gst_rudp_receiver_handle_feedback_sent (lp->r, lp->now);
    if (gst_rudp_receiver_get_level (lp->r) != before) {
      guint l = gst_rudp_receiver_get_level (lp->r);

      if (lp->n_changes < G_N_ELEMENTS (lp->change_at)) {
        lp->change_at[lp->n_changes] = lp->now;
        lp->change_to[lp->n_changes] = l;
      }
      lp->n_changes++;
      if (lp->notices) {
        lp->sender_level = l;
        gst_rudp_receiver_handle_level_applied (lp->r, l, lp->seq);
      }
    }
    lp->level_ms += gst_rudp_receiver_get_level (lp->r);
    lp->ms++;
    lp->now += MS;
  }
}

/* The packet rule alone (increase_time 0), as the tests of the packet
 * count and the RTT waits need; test_receiver_climb_time the default
 * packet-or-time rule. */
static void
receiver_config (GstRudpReceiverConfig * c, GstClockTime rtt, guint packets)
{
  gst_rudp_receiver_config_init (c);
  c->initial_rtt = rtt;
  c->feedback_interval = GST_SECOND;
  c->increase_packets = packets;
  c->increase_time = 0;
}

static gboolean
drop_one (guint16 seq)
{
  return seq == 65530;
}

GST_START_TEST (test_receiver_levels)
{
  GstRudpReceiverConfig c;
  GstRudpReceiverStats st;
  GstClockTime t0 = 10 * GST_SECOND;
  Loop lp;
  guint i;

  gst_rudp_receiver_config_init (&c);
  fail_unless_equals_int (c.increase_packets, 50);
  fail_unless_equals_uint64 (c.increase_time, GST_RUDP_DEFAULT_INCREASE_TIME);
  fail_unless (c.increase_time > 0);
  fail_unless_equals_int (c.increase_rtts, 1);
  fail_unless (c.tcp_friendly);
  receiver_config (&c, 50 * MS, 20);
  loop_init (&lp, &c, t0, 65000);
  lp.fixed_gap = 1;             /* 1000 packets/s whatever the level */

  fail_unless_equals_int (gst_rudp_receiver_get_level (lp.r), 0);
  /* nothing received: nothing to judge or tell */
  fail_if (gst_rudp_receiver_poll (lp.r, t0, NULL));
  fail_unless_equals_uint64 (gst_rudp_receiver_next_wakeup (lp.r),
      GST_CLOCK_TIME_NONE);

  /* no loss: 20 packets arrive in 20 ms, but going up needs one RTT
   * (50 ms; step x RTT^2 = 20 packets/s x 2.5 ms^2 = 50 ms too) of them
   * at the current level: up at 50 ms, then every 51 ms (the packet sent
   * in the ms of the change was sent at the old level; the sender answers
   * at once, so the next one is at the new level) */
  loop_run (&lp, 500);
  fail_unless_equals_int (lp.n_changes, 9);
  for (i = 0; i < 9; i++) {
    fail_unless_equals_uint64 (lp.change_at[i], t0 + (50 + i * 51) * MS);
    fail_unless_equals_int (lp.change_to[i], i + 1);
  }
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.lost, 0);
  fail_unless_equals_uint64 (st.increases, 9);

  /* a loss across the sequence number wrap (65530, sent at t0 + 530 ms):
   * halve once (9 -> 4) when three later packets confirm it (t0 + 533 ms,
   * before the round's end at 550 ms), then climb again */
  lp.drop = drop_one;
  loop_run (&lp, 110);
  fail_unless_equals_int (lp.n_changes, 11);
  fail_unless_equals_int (lp.change_to[9], 4);
  fail_unless_equals_uint64 (lp.change_at[9], t0 + 533 * MS);
  fail_unless_equals_int (lp.change_to[10], 5);
  fail_unless_equals_uint64 (lp.change_at[10], t0 + 584 * MS);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.lost, 1);
  fail_unless_equals_uint64 (st.decreases, 1);
  fail_unless_equals_uint64 (st.expected, 610);
  fail_unless_equals_uint64 (st.ext_max_seq, 0x10000 + (guint16) (lp.seq - 1));

  /* RTT samples set the rounds and the wait: 100 ms (step x RTT^2 is
   * 200 ms, the TCP-friendly bound) */
  gst_rudp_receiver_handle_rtt_sample (lp.r, 100 * MS);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.srtt, 100 * MS);
  fail_unless (st.increase_wait >= 199 * MS && st.increase_wait <= 200 * MS);
  i = lp.n_changes;
  loop_run (&lp, 500);
  fail_unless_equals_int (lp.n_changes, i + 2);
  fail_unless_equals_uint64 (lp.change_at[i + 1] - lp.change_at[i],
      201 * MS);
  loop_clear (&lp);
}

GST_END_TEST;

static guint64 hold_drop_a, hold_drop_b, hold_drop_c;

static gboolean
drop_hold (guint16 seq)
{
  return seq == hold_drop_a || seq == hold_drop_b || seq == hold_drop_c;
}

/* One reaction per loss episode; which packets count is what the sender's
 * notice says. */
GST_START_TEST (test_receiver_hold)
{
  GstRudpReceiverConfig c;
  GstRudpReceiverStats st;
  Loop lp;

  receiver_config (&c, 20 * MS, 1);
  c.initial_level = 8;
  c.tcp_friendly = FALSE;
  loop_init (&lp, &c, 0, 100);
  lp.fixed_gap = 1;
  lp.notices = FALSE;           /* notices by hand below */
  loop_run (&lp, 15);
  fail_unless_equals_int (gst_rudp_receiver_get_level (lp.r), 8);
  /* a loss at 15 ms: halved once 116, 117, 118 confirm it (18 ms) */
  hold_drop_a = 115;
  /* losses of packets sent before the switch (the notice will say from
   * 150 on) do not count, whenever they are seen */
  hold_drop_b = 130;
  hold_drop_c = 145;
  lp.drop = drop_hold;
  loop_run (&lp, 25);
  fail_unless_equals_int (lp.n_changes, 1);
  fail_unless_equals_uint64 (lp.change_at[0], 18 * MS);
  fail_unless_equals_int (gst_rudp_receiver_get_level (lp.r), 4);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless (st.holding);
  fail_unless_equals_uint64 (st.clean_packets, 0);
  gst_rudp_receiver_handle_level_applied (lp.r, 4, 150);
  /* a stale notice (an older level) changes nothing */
  gst_rudp_receiver_handle_level_applied (lp.r, 8, 120);
  /* after an increase, losses of packets sent at the old level count (it
   * was already too fast), but those packets do not count towards the
   * next increase */
  hold_drop_a = 185;
  loop_run (&lp, 30);           /* 40 .. 69 ms */
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.decreases, 1);
  fail_unless_equals_uint64 (st.lost, 3);
  fail_if (st.holding);
  /* packets 150 (50 ms) .. 169 arrived and count towards going up:
   * one RTT (20 ms) of them */
  fail_unless_equals_uint64 (st.clean_packets, 20);
  loop_run (&lp, 10);           /* 70 .. 79 ms */
  fail_unless_equals_int (lp.n_changes, 2);
  fail_unless_equals_int (lp.change_to[1], 5);
  fail_unless_equals_uint64 (lp.change_at[1], 70 * MS);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.clean_packets, 0);  /* no notice yet */
  /* 185 (85 ms) is lost: halved at 88 ms, well before the round that
   * began at 78 ms ends */
  loop_run (&lp, 10);           /* 80 .. 89 ms */
  fail_unless_equals_int (lp.n_changes, 3);
  fail_unless_equals_int (lp.change_to[2], 2);
  fail_unless_equals_uint64 (lp.change_at[2], 88 * MS);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.decreases, 2);
  fail_unless_equals_uint64 (st.lost, 4);
  loop_clear (&lp);
}

GST_END_TEST;

/* A round-trip time of 25 ms holds half a packet at level 0: "no loss in
 * an RTT" is no evidence. Going up needs increase-packets packets of the
 * current level. */
GST_START_TEST (test_receiver_evidence)
{
  GstRudpReceiverConfig c;
  GstRudpReceiverStats st;
  Loop lp, fast;
  gdouble climb = 0;
  guint i;

  receiver_config (&c, 25 * MS, 50);
  loop_init (&lp, &c, 0, 0);
  loop_run (&lp, 2450);
  fail_unless_equals_int (lp.n_changes, 0);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.received, 49);
  fail_unless_equals_uint64 (st.clean_packets, 49);
  fail_unless (st.rounds >= 49);        /* 49 rounds said "no loss" */
  /* the 50th packet (20 packets/s, from 0 ms) */
  loop_run (&lp, 1);
  fail_unless_equals_int (lp.n_changes, 1);
  fail_unless_equals_uint64 (lp.change_at[0], 2450 * MS);
  /* the whole climb, with the sender following: 50 packets at each of
   * 20, 40, ... 180 packets/s */
  loop_run (&lp, 7000);
  fail_unless_equals_int (lp.n_changes, 9);
  /* from the first packet at a level to its 50th: 49 gaps */
  for (i = 1; i <= 9; i++)
    climb += 49.0 / (20 * i);
  fail_unless (lp.change_at[8] >= climb * GST_SECOND &&
      lp.change_at[8] <= climb * GST_SECOND + 200 * MS,
      "top at %" GST_TIME_FORMAT ", want ~%.2f s",
      GST_TIME_ARGS (lp.change_at[8]), climb);
  /* one packet per increase (the paper read literally, per RTT) climbs
   * at once, one level per ~RTT whenever a round holds a packet */
  receiver_config (&c, 25 * MS, 1);
  loop_init (&fast, &c, 0, 0);
  loop_run (&fast, 1000);
  fail_unless_equals_int (gst_rudp_receiver_get_level (fast.r), 9);
  fail_unless (fast.change_at[8] < 500 * MS);
  loop_clear (&fast);
  loop_clear (&lp);
}

GST_END_TEST;

/* Packet-or-time: at 20 packets/s, 50 packets take 2.5 s per level (the
 * climb 0 -> 9 ~6.9 s). The time rule goes up once three packets sent at
 * the level have arrived without loss at its rate and the increase wait
 * (one RTT, step x RTT^2, at least increase_time) has passed since the
 * level was asked for: the pace of TCP's additive increase between two
 * requests, whatever the packet rate. A loss still halves, packets of the
 * old level are still no evidence, packets arriving slower than the level
 * (a queue of its own filling) are none either, and next_wakeup says when
 * the time is up between two packets. These fail on the packets-only
 * rule. */
GST_START_TEST (test_receiver_climb_time)
{
  GstRudpReceiverConfig c;
  GstRudpReceiverStats st;
  GstRudpReceiver *r;
  Loop lp;
  guint i;

  /* the defaults: 50 packets or time, RTT 25 ms */
  gst_rudp_receiver_config_init (&c);
  fail_unless (c.increase_time > 0 && c.increase_time <= 25 * MS);
  c.initial_rtt = 25 * MS;
  c.feedback_interval = GST_SECOND;
  loop_init (&lp, &c, 0, 0);
  loop_run (&lp, 2400);
  /* packets only: not a single increase before 2450 ms */
  fail_unless_equals_int (lp.n_changes, 9);
  /* level 0: its third packet (0, 50, 100 ms) */
  fail_unless_equals_uint64 (lp.change_at[0], 100 * MS);
  for (i = 1; i < 9; i++) {
    GstClockTime gap = lp.change_at[i] - lp.change_at[i - 1];
    /* the third packet at level i (20 (i + 1) packets/s) */
    GstClockTime third = 3 * GST_SECOND / (20 * (i + 1));

    fail_unless_equals_int (lp.change_to[i], i + 1);
    /* never faster than one RTT between requests; as soon as three
     * packets at the new level have arrived after that */
    fail_unless (gap >= 25 * MS && gap <= MAX (25 * MS, third) + MS,
        "level %u -> %u after %" GST_TIME_FORMAT, i, i + 1,
        GST_TIME_ARGS (gap));
  }
  fail_unless (lp.change_at[8] < 600 * MS, "top at %" GST_TIME_FORMAT,
      GST_TIME_ARGS (lp.change_at[8]));
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.lost, 0);
  fail_unless_equals_int (st.level, 9);
  loop_clear (&lp);

  /* packets that arrive slower than the level (a bottleneck of 100
   * packets/s that the flow has to itself, with an endless queue: level 5
   * and up are 120 .. 200 packets/s) are no evidence for going up: the
   * flow reaches level 5 at TCP's pace and stays there (the rule before
   * the arrival rate went on climbing every 50 packets until the queue
   * overflowed) */
  gst_rudp_receiver_config_init (&c);
  c.initial_rtt = 25 * MS;
  c.feedback_interval = GST_SECOND;
  loop_init (&lp, &c, 0, 0);
  lp.cap_gap = 10;
  loop_run (&lp, 3000);
  fail_unless_equals_int (lp.n_changes, 5);
  fail_unless_equals_int (lp.change_to[4], 5);
  fail_unless (lp.change_at[4] < 600 * MS);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless (st.clean_packets > 200);
  loop_clear (&lp);

  /* the TCP-friendly wait still bounds it, now between two requests: at
   * 200 ms RTT step x RTT^2 is 800 ms: up at 800 ms (from the first
   * packet: level 0 was not asked for), then at 1600 ms exactly (from the
   * request, not from the first packets at level 1) */
  gst_rudp_receiver_config_init (&c);
  c.initial_rtt = 200 * MS;
  c.feedback_interval = GST_SECOND;
  loop_init (&lp, &c, 0, 0);
  loop_run (&lp, 2000);
  fail_unless_equals_int (lp.n_changes, 2);
  fail_unless_equals_uint64 (lp.change_at[0], 800 * MS);
  fail_unless_equals_uint64 (lp.change_at[1], 1600 * MS);
  loop_clear (&lp);

  /* without the sender's notice the packets that arrive are of the old
   * level as far as anyone knows: no evidence until the notice deadline
   * (two rounds) has passed */
  gst_rudp_receiver_config_init (&c);
  c.initial_rtt = 25 * MS;
  c.feedback_interval = GST_SECOND;
  loop_init (&lp, &c, 0, 0);
  lp.notices = FALSE;
  lp.fixed_gap = 5;
  loop_run (&lp, 120);
  fail_unless_equals_uint64 (lp.change_at[0], 25 * MS);
  /* the deadline is 75 ms; the next round's end (judged at 75 ms) makes
   * the level hold from the next packet (80 ms); its third is at 90 ms */
  fail_unless_equals_int (lp.n_changes, 2);
  fail_unless_equals_uint64 (lp.change_at[1], 90 * MS);
  loop_clear (&lp);

  /* a loss halves, and the next increase is one RTT after the halving
   * (level 6, 140 packets/s; packet 2, sent at 14 ms, lost: seen when 3
   * arrives, before the first RTT is up) */
  gst_rudp_receiver_config_init (&c);
  c.initial_rtt = 25 * MS;
  c.initial_level = 6;
  c.feedback_interval = GST_SECOND;
  hold_drop_a = 2;
  hold_drop_b = hold_drop_c = 0xffffffff;
  loop_init (&lp, &c, 0, 0);
  lp.drop = drop_hold;
  loop_run (&lp, 200);
  fail_unless (lp.n_changes >= 2);
  fail_unless_equals_int (lp.change_to[0], 3);
  fail_unless (lp.change_at[0] <= 40 * MS);
  fail_unless_equals_int (lp.change_to[1], 4);
  /* one RTT after the halving, or the third packet at level 3 (80
   * packets/s) */
  fail_unless (lp.change_at[1] >= lp.change_at[0] + 25 * MS &&
      lp.change_at[1] <= lp.change_at[0] + 3 * 12500 * GST_USECOND + MS,
      "up %" GST_TIME_FORMAT " after the halving",
      GST_TIME_ARGS (lp.change_at[1] - lp.change_at[0]));
  loop_clear (&lp);

  /* driven only at packet arrivals and at next_wakeup (as the element's
   * timer does): a packet every 50 ms, increase_time 175 ms: the increase
   * falls between packets, at 175 ms exactly */
  gst_rudp_receiver_config_init (&c);
  c.initial_rtt = 25 * MS;
  c.increase_time = 175 * MS;
  c.feedback_interval = 10 * GST_SECOND;
  r = gst_rudp_receiver_new (&c);
  for (i = 0; i < 4; i++) {
    gst_rudp_receiver_handle_packet (r, i, 1000, i * 50 * MS);
    if (gst_rudp_receiver_poll (r, i * 50 * MS, NULL))
      gst_rudp_receiver_handle_feedback_sent (r, i * 50 * MS);
  }
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 0);
  /* the round ends at 175 ms too (150 + 25): the wakeup is 175 ms */
  fail_unless_equals_uint64 (gst_rudp_receiver_next_wakeup (r), 175 * MS);
  fail_unless (gst_rudp_receiver_poll (r, 175 * MS, NULL));
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 1);
  gst_rudp_receiver_free (r);

  /* the arrival rate is counted in bytes: a small first packet (a
   * payloader's config, 169 bytes) then 1012-byte packets at level 0's
   * 20,000 bytes/s go up at the third packet, as 1012-byte ones do (a
   * rate in packets of the mean size, which starts at 169, took tens of
   * packets) */
  c.increase_time = 10 * MS;
  r = gst_rudp_receiver_new (&c);
  for (i = 0; i < 3; i++) {
    gst_rudp_receiver_handle_packet (r, i, i == 0 ? 169 : 1012, i * 50 * MS);
    if (gst_rudp_receiver_poll (r, i * 50 * MS, NULL))
      gst_rudp_receiver_handle_feedback_sent (r, i * 50 * MS);
  }
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 1);
  gst_rudp_receiver_free (r);

  /* with increase_time 0 the same packets give no increase and no
   * increase wakeup (the packets-only rule) */
  c.increase_time = 0;
  r = gst_rudp_receiver_new (&c);
  for (i = 0; i < 4; i++) {
    gst_rudp_receiver_handle_packet (r, i, 1000, i * 50 * MS);
    if (gst_rudp_receiver_poll (r, i * 50 * MS, NULL))
      gst_rudp_receiver_handle_feedback_sent (r, i * 50 * MS);
  }
  fail_unless_equals_uint64 (gst_rudp_receiver_next_wakeup (r), 175 * MS);
  fail_if (gst_rudp_receiver_poll (r, 175 * MS, NULL));
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 0);
  fail_unless_equals_uint64 (gst_rudp_receiver_next_wakeup (r), 200 * MS);
  gst_rudp_receiver_free (r);
}

GST_END_TEST;

/* The TCP-friendly bound step x RTT^2 on a long path. */
GST_START_TEST (test_receiver_tcp_friendly)
{
  struct {
    gboolean on;
    gsize size;
    GstClockTime want;
  } cases[] = {
    {TRUE, 1000, 800 * MS},     /* 20 packets/s x (0.2 s)^2 */
    {TRUE, 500, 1600 * MS},     /* 40 packets/s x (0.2 s)^2 */
    {FALSE, 1000, 200 * MS},    /* one RTT */
  };
  guint k;

  for (k = 0; k < G_N_ELEMENTS (cases); k++) {
    GstRudpReceiverConfig c;
    GstRudpReceiverStats st;
    Loop lp;

    receiver_config (&c, 200 * MS, 1);
    c.tcp_friendly = cases[k].on;
    loop_init (&lp, &c, 0, 0);
    lp.fixed_gap = 1;
    lp.size = cases[k].size;
    loop_run (&lp, 100);
    gst_rudp_receiver_get_stats (lp.r, &st);
    fail_unless (st.increase_wait + MS > cases[k].want &&
        st.increase_wait <= cases[k].want, "case %u: %" GST_TIME_FORMAT, k,
        GST_TIME_ARGS (st.increase_wait));
    /* the wait is exact, and next_wakeup says when */
    fail_unless (gst_rudp_receiver_next_wakeup (lp.r) <= cases[k].want);
    loop_run (&lp, 2000);
    fail_unless (lp.n_changes >= 1);
    fail_unless (lp.change_at[0] + MS > cases[k].want &&
        lp.change_at[0] <= cases[k].want, "case %u: up at %" GST_TIME_FORMAT,
        k, GST_TIME_ARGS (lp.change_at[0]));
    loop_clear (&lp);
  }

  /* TCP's increase is clocked by the RTT of the moment: a filling queue
   * shows in the last sample before the SRTT catches up */
  {
    GstRudpReceiverConfig c;
    GstRudpReceiverStats st;
    Loop lp;

    receiver_config (&c, 200 * MS, 1);
    loop_init (&lp, &c, 0, 0);
    lp.fixed_gap = 1;
    gst_rudp_receiver_handle_rtt_sample (lp.r, 200 * MS);
    gst_rudp_receiver_handle_rtt_sample (lp.r, 400 * MS);
    loop_run (&lp, 10);
    gst_rudp_receiver_get_stats (lp.r, &st);
    fail_unless_equals_uint64 (st.srtt, 225 * MS);
    /* 20 packets/s x (0.4 s)^2 */
    fail_unless (st.increase_wait + MS > 3200 * MS &&
        st.increase_wait <= 3200 * MS, "%" GST_TIME_FORMAT,
        GST_TIME_ARGS (st.increase_wait));
    loop_clear (&lp);
  }
}

GST_END_TEST;

/* The loss rate the flow tolerates is about 1/increase-packets: on a path
 * with random loss p, the level stays up when p is well below it and down
 * when p is well above it; one packet per increase (per RTT) does not
 * tell 0.2 % from 3 %. */
GST_START_TEST (test_receiver_loss_rate)
{
  struct {
    guint packets;
    gdouble loss;
    gdouble min_level, max_level;
  } cases[] = {
    {50, 0.002, 6.0, 9.0},
    {50, 0.03, 0.0, 2.0},
    {1, 0.002, 8.0, 9.0},
    {1, 0.03, 5.0, 9.0},
  };
  guint k;

  for (k = 0; k < G_N_ELEMENTS (cases); k++) {
    GstRudpReceiverConfig c;
    Loop lp;
    gdouble mean;

    receiver_config (&c, 25 * MS, cases[k].packets);
    loop_init (&lp, &c, 0, 0);
    lp.loss = cases[k].loss;
    loop_run (&lp, 10000);      /* settle */
    lp.level_ms = 0;
    lp.ms = 0;
    loop_run (&lp, 60000);
    mean = lp.level_ms / lp.ms;
    GST_INFO ("increase-packets %u, loss %.3f: mean level %.2f",
        cases[k].packets, cases[k].loss, mean);
    fail_unless (mean >= cases[k].min_level && mean <= cases[k].max_level,
        "increase-packets %u, loss %.3f: mean level %.2f", cases[k].packets,
        cases[k].loss, mean);
    loop_clear (&lp);
  }
}

GST_END_TEST;

/* ECN: a CE mark halves the level as a loss does, at once (no reordering
 * wait: 15 ms where the loss of the same packet gives 18 ms in
 * test_receiver_hold), once per episode (marks of packets sent before the
 * sender's switch do not count), and nothing is lost; a mark on the
 * sender's RTCP notice too (ignored while a decrease takes effect). ECT(1) and ECT(0)
 * alone are no signal; a mark at level 0 resets the stretch towards an
 * increase. On a path that marks 3 % of the packets the flow sits as low
 * as with 3 % loss, without losing a packet. */
GST_START_TEST (test_receiver_ecn)
{
  GstRudpReceiverConfig c;
  GstRudpReceiverStats st;
  GstRudpReceiver *r;
  Loop lp;
  gdouble mean;

  receiver_config (&c, 20 * MS, 1);
  c.initial_level = 8;
  c.tcp_friendly = FALSE;
  loop_init (&lp, &c, 0, 100);
  lp.fixed_gap = 1;
  lp.notices = FALSE;
  lp.ecn = GST_RUDP_ECN_ECT0;
  loop_run (&lp, 15);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.ect_received, 15);
  fail_unless_equals_uint64 (st.ce_marked, 0);
  /* 115 arrives CE at 15 ms: halved at once; 130 and 145 were sent before
   * the switch (the notice says from 150 on): the same episode */
  hold_drop_a = 115;
  hold_drop_b = 130;
  hold_drop_c = 145;
  lp.mark = drop_hold;
  loop_run (&lp, 25);           /* 15 .. 39 ms */
  fail_unless_equals_int (lp.n_changes, 1);
  fail_unless_equals_uint64 (lp.change_at[0], 15 * MS);
  fail_unless_equals_int (lp.change_to[0], 4);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.ce_marked, 2);     /* 145 comes at 45 ms */
  fail_unless_equals_uint64 (st.ce_decreases, 1);
  fail_unless_equals_uint64 (st.decreases, 1);
  fail_unless_equals_uint64 (st.lost, 0);
  fail_unless_equals_uint64 (st.received, 40);
  fail_unless (st.holding);
  gst_rudp_receiver_handle_level_applied (lp.r, 4, 150);
  /* 150 (50 ms) .. 169 carry the new level: up one RTT later (70 ms);
   * 145 (45 ms) is still the first episode's; 185 (85 ms) arrives CE:
   * halved at once (sent after the increase: it counts) */
  hold_drop_a = 185;
  loop_run (&lp, 50);           /* 40 .. 89 ms */
  fail_unless_equals_int (lp.n_changes, 3);
  fail_unless_equals_int (lp.change_to[1], 5);
  fail_unless_equals_uint64 (lp.change_at[1], 70 * MS);
  fail_unless_equals_int (lp.change_to[2], 2);
  fail_unless_equals_uint64 (lp.change_at[2], 85 * MS);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.ce_marked, 4);
  fail_unless_equals_uint64 (st.ce_decreases, 2);
  fail_unless_equals_uint64 (st.decreases, 2);
  fail_unless_equals_uint64 (st.lost, 0);
  fail_unless_equals_uint64 (st.ect_received, 90);
  loop_clear (&lp);

  /* a CE mark on the sender's RTCP notice (no sequence number) halves
   * too, unless a decrease is still taking effect */
  receiver_config (&c, 20 * MS, 1);
  c.initial_level = 8;
  c.tcp_friendly = FALSE;
  loop_init (&lp, &c, 0, 100);
  lp.fixed_gap = 1;
  lp.notices = FALSE;
  lp.ecn = GST_RUDP_ECN_ECT0;
  loop_run (&lp, 15);
  gst_rudp_receiver_handle_rtcp_ce (lp.r, lp.now);
  fail_unless_equals_int (gst_rudp_receiver_get_level (lp.r), 4);
  gst_rudp_receiver_handle_rtcp_ce (lp.r, lp.now + MS);      /* holding: ignored */
  fail_unless_equals_int (gst_rudp_receiver_get_level (lp.r), 4);
  gst_rudp_receiver_handle_level_applied (lp.r, 4, lp.seq);
  loop_run (&lp, 5);            /* packets at level 4 arrive */
  gst_rudp_receiver_handle_rtcp_ce (lp.r, lp.now);
  fail_unless_equals_int (gst_rudp_receiver_get_level (lp.r), 2);
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless_equals_uint64 (st.ce_marked_rtcp, 3);
  fail_unless_equals_uint64 (st.ce_marked, 0);
  fail_unless_equals_uint64 (st.ce_decreases, 2);
  fail_unless_equals_uint64 (st.decreases, 2);
  loop_clear (&lp);

  /* ECT(1) is no signal; CE at level 0: no decrease, but no increase on
   * the packets before it either */
  receiver_config (&c, 20 * MS, 3);
  r = gst_rudp_receiver_new (&c);
  gst_rudp_receiver_handle_packet_ecn (r, 1, 1000, GST_RUDP_ECN_ECT1, 0);
  gst_rudp_receiver_handle_packet_ecn (r, 2, 1000, GST_RUDP_ECN_ECT0, 10 * MS);
  gst_rudp_receiver_get_stats (r, &st);
  fail_unless_equals_uint64 (st.clean_packets, 2);
  gst_rudp_receiver_handle_packet_ecn (r, 3, 1000, GST_RUDP_ECN_CE, 20 * MS);
  gst_rudp_receiver_handle_packet (r, 4, 1000, 30 * MS);
  gst_rudp_receiver_get_stats (r, &st);
  fail_unless_equals_uint64 (st.ect_received, 3);
  fail_unless_equals_uint64 (st.ce_marked, 1);
  fail_unless_equals_uint64 (st.ce_decreases, 0);
  fail_unless_equals_uint64 (st.decreases, 0);
  fail_unless_equals_uint64 (st.clean_packets, 1);
  gst_rudp_receiver_poll (r, 30 * MS, NULL);
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 0);
  gst_rudp_receiver_free (r);

  /* 3 % of the packets marked: as low as 3 % loss (test_receiver_loss_rate,
   * mean level <= 2), nothing lost */
  receiver_config (&c, 25 * MS, 50);
  loop_init (&lp, &c, 0, 0);
  lp.ecn = GST_RUDP_ECN_ECT0;
  lp.ce_rate = 0.03;
  loop_run (&lp, 10000);
  lp.level_ms = 0;
  lp.ms = 0;
  loop_run (&lp, 60000);
  mean = lp.level_ms / lp.ms;
  gst_rudp_receiver_get_stats (lp.r, &st);
  fail_unless (mean <= 2.0, "3 %% CE marks: mean level %.2f", mean);
  fail_unless (st.ce_decreases > 10, "%" G_GUINT64_FORMAT " CE decreases",
      st.ce_decreases);
  fail_unless_equals_uint64 (st.lost, 0);
  loop_clear (&lp);
}

GST_END_TEST;

GST_START_TEST (test_receiver_reorder_and_idle)
{
  GstRudpReceiverConfig c;
  GstRudpReceiver *r;
  GstRudpReceiverStats st;
  GstClockTime now = 0;
  guint i;

  receiver_config (&c, 50 * MS, 10);
  r = gst_rudp_receiver_new (&c);
  /* swapped pairs are reordering, not loss */
  for (i = 0; i < 100; i += 2) {
    gst_rudp_receiver_handle_packet (r, i + 1, 1000, now);
    gst_rudp_receiver_handle_packet (r, i, 1000, now);
    now += 2 * MS;
    if (gst_rudp_receiver_poll (r, now, NULL))
      gst_rudp_receiver_handle_feedback_sent (r, now);
  }
  gst_rudp_receiver_get_stats (r, &st);
  fail_unless_equals_uint64 (st.lost, 0);
  fail_unless_equals_uint64 (st.decreases, 0);
  /* 50 ms at level 0, no notice (two rounds: 100 ms) at level 1 */
  fail_unless_equals_int (st.level, 1);
  /* a silent sender is not a reason to go up (no verdict without packets),
   * but the level is still repeated every feedback interval */
  fail_unless (gst_rudp_receiver_poll (r, now + 10 * GST_SECOND, NULL));
  gst_rudp_receiver_handle_feedback_sent (r, now + 10 * GST_SECOND);
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 1);
  fail_if (gst_rudp_receiver_poll (r, now + 10 * GST_SECOND + MS, NULL));
  gst_rudp_receiver_free (r);
}

GST_END_TEST;

/* A resend answered twice arrives twice: the second copy is no packet
 * received (counted, it hid packet 50, which never came: lost 0) and
 * takes back no loss (it did, and the gap made no decrease). Across the
 * sequence number wrap. */
GST_START_TEST (test_receiver_duplicates)
{
  GstRudpReceiverConfig c;
  GstRudpReceiver *r;
  GstRudpReceiverStats st;
  GstClockTime now = 0;
  guint i;

  receiver_config (&c, 50 * MS, 10);
  c.initial_level = 3;
  r = gst_rudp_receiver_new (&c);
  for (i = 0; i < 100; i++, now += MS) {
    guint16 seq = (guint16) (65500 + i);

    if (i != 50)
      gst_rudp_receiver_handle_packet (r, seq, 1000, now);
    if (i == 52)                /* 49's resend, after the first copy */
      gst_rudp_receiver_handle_packet (r, (guint16) (65500 + 49), 1000, now);
    if (gst_rudp_receiver_poll (r, now, NULL))
      gst_rudp_receiver_handle_feedback_sent (r, now);
  }
  /* the newest again */
  gst_rudp_receiver_handle_packet (r, (guint16) (65500 + 99), 1000, now);
  gst_rudp_receiver_get_stats (r, &st);
  fail_unless_equals_uint64 (st.expected, 100);
  fail_unless_equals_uint64 (st.received, 101);
  fail_unless_equals_uint64 (st.duplicates, 2);
  fail_unless_equals_uint64 (st.lost, 1);
  /* the gap, confirmed by three later packets, is a decrease */
  fail_unless_equals_uint64 (st.decreases, 1);
  /* the late one itself, after all: not a duplicate, and no longer lost */
  gst_rudp_receiver_handle_packet (r, (guint16) (65500 + 50), 1000, now);
  gst_rudp_receiver_get_stats (r, &st);
  fail_unless_equals_uint64 (st.duplicates, 2);
  fail_unless_equals_uint64 (st.lost, 0);
  gst_rudp_receiver_free (r);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* feedback codec */

/* The NAT hello: an RTCP compound (RR + APP "HELO") that round-trips,
 * that an RTP port takes for RTCP, and that nothing else parses as. */
GST_START_TEST (test_hello_codec)
{
  guint8 h[GST_RUDP_HELLO_SIZE], bad[GST_RUDP_HELLO_SIZE + 4];
  guint32 ssrc;
  guint64 id, counter;
  GstRudpRequest req = { 0 };
  GstBuffer *buf;
  guint i;

  gst_rudp_hello_write (h, 0xdeadbeef, G_GUINT64_CONSTANT (0x0123456789abcdef),
      1700000000000000);
  fail_unless (gst_rudp_is_rtcp (h, sizeof (h)));
  fail_unless (gst_rudp_hello_parse (h, sizeof (h), &ssrc, &id, &counter));
  fail_unless_equals_int (ssrc, 0xdeadbeef);
  fail_unless_equals_uint64 (id, G_GUINT64_CONSTANT (0x0123456789abcdef));
  fail_unless_equals_uint64 (counter, 1700000000000000);
  /* not a rate request */
  buf = gst_buffer_new_memdup (h, sizeof (h));
  fail_if (gst_rudp_request_parse (buf, &req));
  gst_buffer_unref (buf);
  /* truncated, extended, or any header byte changed: not a hello */
  fail_if (gst_rudp_hello_parse (h, sizeof (h) - 1, &ssrc, &id, &counter));
  memcpy (bad, h, sizeof (h));
  fail_if (gst_rudp_hello_parse (bad, sizeof (bad), &ssrc, &id, &counter));
  for (i = 0; i < 20; i++) {
    memcpy (bad, h, sizeof (h));
    bad[i] ^= 0x01;
    fail_if (gst_rudp_hello_parse (bad, sizeof (h), &ssrc, &id, &counter),
        "byte %u", i);
  }
  /* a request is not a hello */
  req.ssrc = 1;
  req.media_ssrc = 2;
  req.has_bitrate = TRUE;
  req.bitrate = 1000000;
  buf = gst_rudp_request_write (&req);
  {
    GstMapInfo map;

    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    fail_if (gst_rudp_hello_parse (map.data, map.size, &ssrc, &id, &counter));
    gst_buffer_unmap (buf, &map);
  }
  gst_buffer_unref (buf);
}

GST_END_TEST;

GST_START_TEST (test_feedback_codec)
{
  GstRudpRequest req = { 0 }, req2;
  GstRudpNotice n = { 0 }, n2;
  GstRudpLevels l;
  GstBuffer *buf;
  GstMapInfo map;
  guint i;

  gst_rudp_levels_init_default (&l);
  /* every default level's bitrate survives TMMBR's mantissa */
  for (i = 0; i < l.n; i++) {
    guint64 br;
    guint ov;

    gst_rudp_tmmbr_decode (gst_rudp_tmmbr_encode (l.rate[i], 28), &br,
        &ov);
    fail_unless_equals_int (gst_rudp_levels_for_bitrate (&l, br), i);
    fail_unless_equals_int (ov, 28);
  }
  {
    guint64 br;
    guint ov;

    gst_rudp_tmmbr_decode (gst_rudp_tmmbr_encode (80000000000ULL, 600),
        &br, &ov);
    fail_unless (br >= 79999000000ULL && br <= 80001000000ULL);
    fail_unless_equals_int (ov, 511);
  }

  req.ssrc = 0x11111111;
  req.media_ssrc = 0x22222222;
  req.fraction_lost = 64;
  req.packets_lost = 17;
  req.ext_max_seq = 0x12345;
  req.has_bitrate = TRUE;
  req.bitrate = 960000;
  req.overhead = 28;
  req.has_level = TRUE;
  req.level = 5;
  req.n_levels = 10;
  req.timestamp = 0xabcdef01;
  req.srtt_us = 23456;
  buf = gst_rudp_request_write (&req);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
  fail_unless (gst_rudp_is_rtcp (map.data, map.size));
  /* RR first (RFC 3550 compound), then RTPFB (205) with FMT 3, then APP */
  fail_unless_equals_int (map.data[1], 201);
  fail_unless_equals_int (map.data[32 + 1], 205);
  fail_unless_equals_int (map.data[32] & 0x1f, 3);
  fail_unless_equals_int (map.size, 32 + 20 + 24);
  gst_buffer_unmap (buf, &map);
  fail_unless (gst_rtcp_buffer_validate (buf));
  fail_unless (gst_rudp_request_parse (buf, &req2));
  fail_unless_equals_int (req2.ssrc, req.ssrc);
  fail_unless_equals_int (req2.media_ssrc, req.media_ssrc);
  fail_unless_equals_int (req2.fraction_lost, 64);
  fail_unless_equals_int (req2.packets_lost, 17);
  fail_unless_equals_int (req2.ext_max_seq, 0x12345);
  fail_unless (req2.has_bitrate && req2.bitrate == 960000);
  fail_unless (req2.has_level && req2.level == 5 && req2.n_levels == 10);
  fail_unless_equals_int (req2.timestamp, 0xabcdef01);
  fail_unless_equals_int (req2.srtt_us, 23456);
  fail_unless_equals_int (req2.rtt_us, 0);
  /* a request is not a notice */
  fail_if (gst_rudp_notice_parse (buf, &n2));
  gst_buffer_unref (buf);

  /* with an RTT sample: the APP's fourth word */
  req.rtt_us = 41234;
  buf = gst_rudp_request_write (&req);
  fail_unless_equals_int (gst_buffer_get_size (buf), 32 + 20 + 28);
  fail_unless (gst_rtcp_buffer_validate (buf));
  fail_unless (gst_rudp_request_parse (buf, &req2));
  fail_unless_equals_int (req2.srtt_us, 23456);
  fail_unless_equals_int (req2.rtt_us, 41234);
  gst_buffer_unref (buf);
  req.rtt_us = 0;

  /* TMMBR alone (a plain RFC 5104 peer) */
  req.has_level = FALSE;
  buf = gst_rudp_request_write (&req);
  fail_unless (gst_rudp_request_parse (buf, &req2));
  fail_unless (req2.has_bitrate && !req2.has_level);
  gst_buffer_unref (buf);

  n.ssrc = 0x22222222;
  n.requester_ssrc = 0x11111111;
  n.has_bitrate = TRUE;
  n.bitrate = 960000;
  n.overhead = 28;
  n.has_level = TRUE;
  n.level = 5;
  n.n_levels = 10;
  n.since_seq = 0xfedc;
  n.echo_timestamp = 0xabcdef01;
  n.delay = 655;
  buf = gst_rudp_notice_write (&n);
  fail_unless (gst_rudp_notice_parse (buf, &n2));
  fail_if (gst_rudp_request_parse (buf, &req2));
  fail_unless_equals_int (n2.ssrc, n.ssrc);
  fail_unless_equals_int (n2.requester_ssrc, n.requester_ssrc);
  fail_unless (n2.has_bitrate && n2.bitrate == 960000);
  fail_unless (n2.has_level && n2.level == 5 && n2.n_levels == 10);
  fail_unless_equals_int (n2.since_seq, 0xfedc);
  fail_unless_equals_int (n2.echo_timestamp, 0xabcdef01);
  fail_unless_equals_int (n2.delay, 655);
  gst_buffer_unref (buf);

  /* garbage and RTP are not feedback */
  {
    guint8 rtp[20] = { 0x80, 96, 0, 1 };
    guint8 junk[40];

    fail_if (gst_rudp_is_rtcp (rtp, sizeof (rtp)));
    memset (junk, 0xa5, sizeof (junk));
    junk[0] = 0x80;
    junk[1] = 201;
    buf = gst_buffer_new_memdup (junk, sizeof (junk));
    fail_if (gst_rudp_request_parse (buf, &req2));
    gst_buffer_unref (buf);
  }
  fail_unless_equals_int (gst_rudp_ntp_short (GST_SECOND / 2), 32768);
  fail_unless_equals_uint64 (gst_rudp_ntp_short_to_time (65536), GST_SECOND);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* closed loop on a simulated bottleneck */

typedef struct {
  GstClockTime now, link_free;
  guint64 cap;                  /* bytes/s */
  guint limit;                  /* packets waiting, the one on the wire apart */
  GQueue q;                     /* departure times (GstClockTime *) */
  guint16 seq;
  guint64 offered, dropped;
} Sim;

typedef struct {
  GstClockTime t;
  guint16 seq;
} SimPkt;

static void
sim_send (GstRudpFlow * f, gpointer packet, gsize size, gpointer user_data)
{
  Sim *sim = user_data;
  guint waiting = 0;
  GList *l;
  SimPkt *p;

  sim->offered++;
  for (l = sim->q.head; l; l = l->next) {
    SimPkt *x = l->data;

    /* a packet is waiting when its service has not started yet */
    if (x->t - gst_util_uint64_scale (size, GST_SECOND, sim->cap) > sim->now)
      waiting++;
  }
  if (waiting >= sim->limit) {
    sim->dropped++;
    sim->seq++;                 /* the receiver sees the gap */
    return;
  }
  sim->link_free = MAX (sim->link_free, sim->now) +
      gst_util_uint64_scale (size, GST_SECOND, sim->cap);
  p = g_new (SimPkt, 1);
  p->t = sim->link_free;
  p->seq = sim->seq++;
  g_queue_push_tail (&sim->q, p);
}

typedef struct {
  guint64 offered, dropped, delivered, delivered_late, lost_seen;
  guint64 decreases;
  guint top_seen;
} LoopResult;

/* 100 KB/s bottleneck with a 20-packet drop-tail queue, 20 ms one-way
 * delay each way, 1000-byte packets, the default levels (160 kbit/s .. 1.6 Mbit/s),
 * a backlogged sender for 30 s: starting at level 0 and following the
 * receiver (@increase_packets), or a CBR flow at the top level
 * (@increase_packets 0). */
static void
closed_loop (guint increase_packets, GstClockTime increase_time,
    LoopResult * res)
{
  const GstClockTime delay = 20 * MS;
  GstRudpScheduler *s = gst_rudp_scheduler_new (MS, 0);
  GstRudpLevels l;
  GstRudpFlow *f;
  GstRudpReceiver *r;
  GstRudpReceiverConfig rc;
  GstRudpReceiverStats st;
  GQueue fb = G_QUEUE_INIT;     /* (arrival, level) on the way back */
  GQueue notices = G_QUEUE_INIT;        /* (arrival, since seq) forward */
  static guint notice_level[65536];
  Sim *sim = g_new0 (Sim, 1);
  gboolean cbr = increase_packets == 0;
  guint sender_level;

  memset (res, 0, sizeof (*res));
  sim->cap = 100000;
  sim->limit = 20;
  gst_rudp_levels_init_default (&l);
  gst_rudp_receiver_config_init (&rc);
  rc.initial_rtt = 2 * delay;
  rc.increase_packets = MAX (increase_packets, 1);
  rc.increase_time = increase_time;
  rc.initial_level = sender_level = cbr ? l.n - 1 : 0;
  r = gst_rudp_receiver_new (&rc);
  f = gst_rudp_scheduler_add_flow (s, l.rate[sender_level] / 8, 0, NULL, 0);

  for (sim->now = 0; sim->now < 30 * GST_SECOND; sim->now += MS) {
    SimPkt *p;

    while ((p = g_queue_peek_head (&fb)) && p->t <= sim->now) {
      g_queue_pop_head (&fb);
      if (p->seq != sender_level && !cbr) {
        SimPkt *n = g_new (SimPkt, 1);

        sender_level = p->seq;
        gst_rudp_flow_set_rate (f, l.rate[sender_level] / 8, sim->now);
        /* the notice: this level from the next sequence number on */
        n->t = sim->now + delay;
        n->seq = sim->seq;
        g_queue_push_tail (&notices, n);
        notice_level[n->seq] = sender_level;
      }
      g_free (p);
    }
    while ((p = g_queue_peek_head (&notices)) && p->t <= sim->now) {
      g_queue_pop_head (&notices);
      gst_rudp_receiver_handle_level_applied (r, notice_level[p->seq], p->seq);
      g_free (p);
    }
    while (gst_rudp_flow_queued_packets (f) < 4)
      gst_rudp_flow_handle_packet (f, NULL, 1000);
    gst_rudp_scheduler_tick (s, sim->now, sim_send, sim);

    /* out of the bottleneck, then across the propagation delay */
    while ((p = g_queue_peek_head (&sim->q)) && p->t + delay <= sim->now) {
      g_queue_pop_head (&sim->q);
      gst_rudp_receiver_handle_packet (r, p->seq, 1000, sim->now);
      res->delivered++;
      if (sim->now >= 10 * GST_SECOND)
        res->delivered_late++;
      g_free (p);
    }
    if (gst_rudp_receiver_poll (r, sim->now, NULL)) {
      SimPkt *x = g_new (SimPkt, 1);

      x->t = sim->now + delay;
      x->seq = gst_rudp_receiver_get_level (r);
      g_queue_push_tail (&fb, x);
      gst_rudp_receiver_handle_feedback_sent (r, sim->now);
      /* the echo of the feedback gives an RTT: both delays and the queue */
      gst_rudp_receiver_handle_rtt_sample (r, 2 * delay +
          (sim->link_free > sim->now ? sim->link_free - sim->now : 0));
    }
    res->top_seen = MAX (res->top_seen, sender_level);
    if (g_getenv ("RUDP_SIM_TRACE") && sim->now % (50 * MS) == 0)
      g_printerr ("%.2f level %u sender %u queue %.0f ms dropped %"
          G_GUINT64_FORMAT "\n", sim->now / 1e9, gst_rudp_receiver_get_level (r),
          sender_level, sim->link_free > sim->now ?
          (sim->link_free - sim->now) / 1e6 : 0.0, sim->dropped);
  }
  gst_rudp_receiver_get_stats (r, &st);
  res->offered = sim->offered;
  res->dropped = sim->dropped;
  res->lost_seen = st.lost;
  res->decreases = st.decreases;
  GST_INFO ("increase-packets %u, increase-time %" GST_TIME_FORMAT
      ": offered %" G_GUINT64_FORMAT " dropped %"
      G_GUINT64_FORMAT " delivered %" G_GUINT64_FORMAT " (last 20 s: %"
      G_GUINT64_FORMAT ") decreases %" G_GUINT64_FORMAT, increase_packets,
      GST_TIME_ARGS (increase_time), res->offered, res->dropped, res->delivered, res->delivered_late,
      res->decreases);

  g_queue_clear_full (&sim->q, g_free);
  g_queue_clear_full (&fb, g_free);
  g_queue_clear_full (&notices, g_free);
  gst_rudp_scheduler_remove_flow (s, f, NULL);
  gst_rudp_scheduler_free (s);
  gst_rudp_receiver_free (r);
  g_free (sim);
}

GST_START_TEST (test_closed_loop)
{
  LoopResult cbr, lv, lv1, lvt;

  closed_loop (0, 0, &cbr);
  /* the packet rule alone (increase-time 0) */
  closed_loop (GST_RUDP_DEFAULT_INCREASE_PACKETS, 0, &lv);
  closed_loop (1, 0, &lv1);     /* one loss-free round per increase */
  /* the defaults: packets or time */
  closed_loop (GST_RUDP_DEFAULT_INCREASE_PACKETS,
      GST_RUDP_DEFAULT_INCREASE_TIME, &lvt);
  g_printerr ("closed loop: CBR dropped %" G_GUINT64_FORMAT ", packets %"
      G_GUINT64_FORMAT " (delivered late %" G_GUINT64_FORMAT "), per-RTT %"
      G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT "), packets-or-time %"
      G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT ")\n", cbr.dropped, lv.dropped,
      lv.delivered_late, lv1.dropped, lv1.delivered_late, lvt.dropped,
      lvt.delivered_late);

  /* the CBR flow at the top level loses half its packets */
  fail_unless (cbr.dropped * 5 >= cbr.offered * 2);
  /* the receiver saw the bottleneck's drops (but those after the last
   * delivered packet) */
  fail_unless (lv.lost_seen <= lv.dropped && lv.lost_seen + 25 >= lv.dropped,
      "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, lv.lost_seen, lv.dropped);
  /* the levels climb, back off, and keep the link busy: at least 80 % of
   * 100 packets/s over the last 20 s ... */
  fail_unless (lv.top_seen >= 5);
  fail_unless (lv.decreases >= 3);
  fail_unless (lv.delivered_late >= 1600, "%" G_GUINT64_FORMAT,
      lv.delivered_late);
  /* ... losing at most 1/10 of what the CBR flow loses, and less than a
   * level per loss-free round would */
  fail_unless (lv.dropped * 10 <= cbr.dropped, "%" G_GUINT64_FORMAT
      " vs CBR %" G_GUINT64_FORMAT, lv.dropped, cbr.dropped);
  fail_unless (lv.dropped < lv1.dropped, "%" G_GUINT64_FORMAT " vs %"
      G_GUINT64_FORMAT, lv.dropped, lv1.dropped);
  /* the defaults (packets or time: TCP's pace) keep the link as busy and
   * also lose at most 1/10 of the CBR flow's drops */
  fail_unless (lvt.top_seen >= 5);
  fail_unless (lvt.decreases >= 3);
  fail_unless (lvt.delivered_late >= 1600, "%" G_GUINT64_FORMAT,
      lvt.delivered_late);
  fail_unless (lvt.dropped * 10 <= cbr.dropped, "%" G_GUINT64_FORMAT
      " vs CBR %" G_GUINT64_FORMAT, lvt.dropped, cbr.dropped);
}

GST_END_TEST;

/* the sender side of the levels */

static gint peers_freed;

static void
peer_free (gpointer p)
{
  peers_freed++;
  g_free (p);
}

static void
request_bytes (const GstRudpRequest * req, guint8 * out, gsize * len)
{
  GstBuffer *b = gst_rudp_request_write (req);

  *len = gst_buffer_extract (b, 0, out, 1500);
  gst_buffer_unref (b);
}

static void
rtp_sent (GstRudpSender * s, guint32 ssrc, guint16 seq)
{
  guint8 rtp[12] = { 0x80, 96 };

  GST_WRITE_UINT16_BE (rtp + 2, seq);
  GST_WRITE_UINT32_BE (rtp + 8, ssrc);
  gst_rudp_sender_handle_rtp (s, rtp, sizeof (rtp));
}

GST_START_TEST (test_sender_levels)
{
  GstRudpSenderConfig c;
  GstRudpSender *s;
  GstRudpSenderOutput out;
  GstRudpSenderStats st;
  GstRudpRequest req = { 0 };
  GstRudpNotice n;
  guint8 data[1500];
  gsize len;
  gint *peer;

  peers_freed = 0;
  gst_rudp_sender_config_init (&c);
  c.initial_level = 2;
  s = gst_rudp_sender_new (&c);
  fail_unless_equals_int (gst_rudp_sender_get_level (s), 2);
  fail_unless_equals_uint64 (gst_rudp_sender_get_bitrate (s), 480000);
  fail_unless_equals_uint64 (gst_rudp_sender_next_wakeup (s),
      GST_CLOCK_TIME_NONE);
  fail_if (gst_rudp_sender_poll (s, GST_SECOND, &out));
  rtp_sent (s, 0xfeed, 65534);
  rtp_sent (s, 0xfeed, 65535);   /* the next to leave: 0 (wraps) */

  /* a request for level 7 from a peer with our table, at 1 s */
  req.ssrc = 0x1234;
  req.media_ssrc = 0xfeed;
  req.has_bitrate = TRUE;
  req.bitrate = 1280000;
  req.has_level = TRUE;
  req.level = 7;
  req.n_levels = 10;
  req.timestamp = 0x10203040;
  req.srtt_us = 25000;
  request_bytes (&req, data, &len);
  peer = g_new0 (gint, 1);
  fail_unless (gst_rudp_sender_handle_request (s, data, len, peer, peer_free,
          GST_SECOND));
  fail_unless_equals_uint64 (gst_rudp_sender_next_wakeup (s), 0);
  /* first the new rate, then the answer; polled 3 ms later */
  fail_unless (gst_rudp_sender_poll (s, GST_SECOND + 3 * MS, &out));
  fail_unless_equals_int (out.type, GST_RUDP_SENDER_OUTPUT_LEVEL);
  fail_unless_equals_int (out.level, 7);
  fail_unless_equals_uint64 (out.bitrate, 1280000);
  fail_unless_equals_uint64 (out.srtt, 25 * MS);
  fail_unless (gst_rudp_sender_poll (s, GST_SECOND + 3 * MS, &out));
  fail_unless_equals_int (out.type, GST_RUDP_SENDER_OUTPUT_NOTICE);
  fail_unless (out.peer == peer);
  fail_unless (gst_rudp_notice_parse (out.buffer, &n));
  gst_buffer_unref (out.buffer);
  peer_free (out.peer);
  fail_unless_equals_int (n.ssrc, 0xfeed);
  fail_unless_equals_int (n.requester_ssrc, 0x1234);
  fail_unless (n.has_level && n.level == 7 && n.n_levels == 10);
  fail_unless_equals_uint64 (n.bitrate, 1280000);
  fail_unless_equals_int (n.since_seq, 0);
  fail_unless_equals_int (n.echo_timestamp, 0x10203040);
  /* the 3 ms the answer waited, in 1/65536 s */
  fail_unless_equals_int (n.delay, gst_rudp_ntp_short (3 * MS));
  fail_if (gst_rudp_sender_poll (s, GST_SECOND + 3 * MS, &out));
  fail_unless_equals_uint64 (gst_rudp_sender_next_wakeup (s),
      GST_CLOCK_TIME_NONE);

  /* the same level again: answered, no switch, the seqnum stays */
  rtp_sent (s, 0xfeed, 0);
  rtp_sent (s, 0xfeed, 1);
  fail_unless (gst_rudp_sender_handle_request (s, data, len, g_new0 (gint,
              1), peer_free, 2 * GST_SECOND));
  fail_unless (gst_rudp_sender_poll (s, 2 * GST_SECOND, &out));
  fail_unless_equals_int (out.type, GST_RUDP_SENDER_OUTPUT_NOTICE);
  fail_unless (gst_rudp_notice_parse (out.buffer, &n));
  gst_buffer_unref (out.buffer);
  peer_free (out.peer);
  fail_unless_equals_int (n.since_seq, 0);
  fail_unless_equals_int (n.delay, 0);

  /* a plain RFC 5104 peer (no APP, other table): by the TMMBR bitrate,
   * the highest level not above it */
  req.has_level = FALSE;
  req.bitrate = 700000;
  request_bytes (&req, data, &len);
  fail_unless (gst_rudp_sender_handle_request (s, data, len, NULL, NULL,
          3 * GST_SECOND));
  fail_unless (gst_rudp_sender_poll (s, 3 * GST_SECOND, &out));
  fail_unless_equals_int (out.type, GST_RUDP_SENDER_OUTPUT_LEVEL);
  fail_unless_equals_int (out.level, 3);
  fail_unless (gst_rudp_sender_poll (s, 3 * GST_SECOND, &out));
  fail_unless (gst_rudp_notice_parse (out.buffer, &n));
  gst_buffer_unref (out.buffer);
  /* no APP for a plain peer: TMMBN alone */
  fail_if (n.has_level);
  fail_unless_equals_uint64 (n.bitrate, 640000);
  gst_rudp_sender_get_stats (s, &st);
  fail_unless_equals_int (st.level_seq, 2);
  req.has_level = TRUE;
  req.n_levels = 4;             /* another table: by bitrate too */
  req.level = 0;
  req.bitrate = 1600000;
  request_bytes (&req, data, &len);
  fail_unless (gst_rudp_sender_handle_request (s, data, len, NULL, NULL,
          3 * GST_SECOND));
  fail_unless (gst_rudp_sender_poll (s, 3 * GST_SECOND, &out));
  fail_unless_equals_int (out.level, 9);
  fail_unless (gst_rudp_sender_poll (s, 3 * GST_SECOND, &out));
  gst_buffer_unref (out.buffer);

  /* garbage and RTP are not requests; the peer is freed */
  fail_if (gst_rudp_sender_handle_request (s, (const guint8 *) "junk", 4,
          g_new0 (gint, 1), peer_free, 4 * GST_SECOND));
  fail_unless_equals_int (peers_freed, 3);

  /* a local choice (the rate property), clamped to the table */
  gst_rudp_sender_set_level (s, 99, 5 * GST_SECOND);
  fail_if (gst_rudp_sender_poll (s, 5 * GST_SECOND, &out));   /* at 9 */
  gst_rudp_sender_set_level (s, 1, 5 * GST_SECOND);
  fail_unless (gst_rudp_sender_poll (s, 5 * GST_SECOND, &out));
  fail_unless_equals_int (out.type, GST_RUDP_SENDER_OUTPUT_LEVEL);
  fail_unless_equals_uint64 (out.bitrate, 320000);

  gst_rudp_sender_get_stats (s, &st);
  fail_unless_equals_uint64 (st.requests, 4);
  fail_unless_equals_uint64 (st.invalid, 1);
  fail_unless_equals_uint64 (st.notices, 4);
  fail_unless_equals_uint64 (st.level_changes, 4);  /* 7, 3, 9, 1 */
  fail_unless_equals_int (st.level, 1);
  fail_unless_equals_int (st.ssrc, 0xfeed);
  fail_unless_equals_uint64 (st.srtt, 25 * MS);

  /* pending answers' peers are freed with the core */
  req.has_level = TRUE;
  req.n_levels = 10;
  request_bytes (&req, data, &len);
  fail_unless (gst_rudp_sender_handle_request (s, data, len, g_new0 (gint,
              1), peer_free, 6 * GST_SECOND));
  gst_rudp_sender_free (s);
  fail_unless_equals_int (peers_freed, 4);
}

GST_END_TEST;

/* Generic NACK (retransmission requests): PID + BLP, across the 16-bit
 * wrap; the sender's report of the receiver's RR and follow=FALSE */
/* The RTT over a request and its notice (RFC 3550's LSR/DLSR), on a
 * virtual clock: 20 ms each way, the sender reads the request 55 ms after
 * it arrived (the pacer wakes for its own packets only) and answers at
 * once. Handled with its arrival time the sender's delay holds the wait
 * and the receiver measures the path's 40 ms; handled with the time it
 * was read, the wait counts as queue (95 ms). */
GST_START_TEST (test_rtt_echo)
{
  GstRudpSenderConfig sc;
  GstRudpReceiverConfig rc;
  GstRudpSender *s;
  GstRudpReceiver *r;
  GstRudpReceiverStats rst;
  GstRudpSenderStats sst;
  GstRudpSenderOutput out;
  GstRudpRequest req = { 0 };
  GstRudpNotice n;
  GstClockTime t0 = 10 * GST_SECOND, rtt;
  guint8 data[1500];
  gsize len;
  gboolean by_arrival;

  gst_rudp_sender_config_init (&sc);
  sc.follow = FALSE;
  gst_rudp_receiver_config_init (&rc);
  r = gst_rudp_receiver_new (&rc);
  for (by_arrival = TRUE;; by_arrival = FALSE) {
    s = gst_rudp_sender_new (&sc);
    rtp_sent (s, 0xfeed, 7);
    req.ssrc = 0x1234;
    req.media_ssrc = 0xfeed;
    req.has_level = TRUE;
    req.n_levels = 10;
    req.timestamp = gst_rudp_ntp_short (t0);
    request_bytes (&req, data, &len);
    fail_unless (gst_rudp_sender_handle_request (s, data, len,
            g_new0 (gint, 1), peer_free, by_arrival ? t0 + 20 * MS :
            t0 + 75 * MS));
    fail_unless (gst_rudp_sender_poll (s, t0 + 75 * MS, &out));
    fail_unless_equals_int (out.type, GST_RUDP_SENDER_OUTPUT_NOTICE);
    fail_unless (gst_rudp_notice_parse (out.buffer, &n));
    gst_buffer_unref (out.buffer);
    peer_free (out.peer);
    gst_rudp_sender_free (s);
    rtt = gst_rudp_receiver_handle_echo (r, n.echo_timestamp, n.delay,
        t0 + 95 * MS);
    /* NTP short: 1/65536 s per unit, each of the three rounded */
    if (by_arrival) {
      fail_unless (rtt >= 40 * MS - 50 * GST_USECOND
          && rtt <= 40 * MS + 50 * GST_USECOND, "%" GST_TIME_FORMAT,
          GST_TIME_ARGS (rtt));
      gst_rudp_receiver_get_stats (r, &rst);
      fail_unless_equals_uint64 (rst.rtt_samples, 1);
      fail_unless_equals_uint64 (rst.srtt, rtt);
    } else {
      fail_unless (rtt >= 95 * MS - 50 * GST_USECOND
          && rtt <= 95 * MS + 50 * GST_USECOND, "%" GST_TIME_FORMAT,
          GST_TIME_ARGS (rtt));
      break;
    }
    t0 += GST_SECOND;
  }
  /* no echo, or an echo from the future (an old or forged notice) */
  fail_unless_equals_uint64 (gst_rudp_receiver_handle_echo (r, 0, 0,
          t0), GST_CLOCK_TIME_NONE);
  fail_unless_equals_uint64 (gst_rudp_receiver_handle_echo (r,
          gst_rudp_ntp_short (t0 + GST_SECOND), 0, t0), GST_CLOCK_TIME_NONE);
  gst_rudp_receiver_get_stats (r, &rst);
  fail_unless_equals_uint64 (rst.rtt_samples, 2);
  /* the receiver's SRTT (40 ms, then 95: 7/8 + 1/8) and its latest
   * sample, once, in its next request are the sender's srtt and rtt */
  fail_unless_equals_uint64 (rst.srtt / GST_MSECOND, (7 * 40 + 95) / 8);
  s = gst_rudp_sender_new (&sc);
  req.srtt_us = rst.srtt / GST_USECOND;
  rtt = gst_rudp_receiver_take_rtt_sample (r);
  fail_unless (rtt >= 95 * MS - 50 * GST_USECOND
      && rtt <= 95 * MS + 50 * GST_USECOND);
  fail_unless_equals_uint64 (gst_rudp_receiver_take_rtt_sample (r),
      GST_CLOCK_TIME_NONE);
  req.rtt_us = rtt / GST_USECOND;
  request_bytes (&req, data, &len);
  fail_unless (gst_rudp_sender_handle_request (s, data, len, g_new0 (gint,
              1), peer_free, t0));
  /* the next request has no new sample: the sender keeps the last */
  req.rtt_us = 0;
  request_bytes (&req, data, &len);
  fail_unless (gst_rudp_sender_handle_request (s, data, len, g_new0 (gint,
              1), peer_free, t0 + 200 * MS));
  gst_rudp_sender_get_stats (s, &sst);
  fail_unless_equals_uint64 (sst.srtt, rst.srtt / GST_USECOND * GST_USECOND);
  fail_unless_equals_uint64 (sst.rtt, rtt / GST_USECOND * GST_USECOND);
  fail_unless_equals_uint64 (sst.rtt_samples, 1);
  fail_unless_equals_uint64 (sst.requests, 2);
  gst_rudp_sender_free (s);
  gst_rudp_receiver_free (r);
}

GST_END_TEST;

GST_START_TEST (test_nack_codec)
{
  guint16 seqs[] = { 100, 101, 116, 117, 65535, 0, 3 };
  GArray *out = g_array_new (FALSE, FALSE, sizeof (guint16));
  GstBuffer *buf = gst_rudp_nack_write (0x1111, 0x2222, seqs, 7);
  GstRudpRequest req = { 0 };
  guint32 media = 0;
  guint i, j;

  fail_unless (gst_rudp_nack_parse (buf, &media, out));
  fail_unless_equals_int (media, 0x2222);
  fail_unless_equals_int (out->len, 7);
  for (i = 0; i < 7; i++) {
    gboolean found = FALSE;
    for (j = 0; j < out->len; j++)
      found |= g_array_index (out, guint16, j) == seqs[i];
    fail_unless (found, "seq %u", seqs[i]);
  }
  /* not a request, and a request is no NACK */
  {
    GstMapInfo map;
    GstRudpSenderConfig c;
    GstRudpSender *s;
    GstRudpSenderStats st;
    GstBuffer *rb;

    gst_buffer_map (buf, &map, GST_MAP_READ);
    fail_unless (!gst_rudp_request_parse (buf, &req));
    gst_buffer_unmap (buf, &map);

    req.ssrc = 0x1111;
    req.media_ssrc = 0x2222;
    req.packets_lost = 7;
    req.ext_max_seq = 70000;
    req.fraction_lost = 3;
    req.has_level = TRUE;
    req.level = 5;
    req.n_levels = 10;
    req.timestamp = 1;
    rb = gst_rudp_request_write (&req);
    g_array_set_size (out, 0);
    fail_unless (!gst_rudp_nack_parse (rb, NULL, out));
    gst_rudp_sender_config_init (&c);
    c.follow = FALSE;
    s = gst_rudp_sender_new (&c);
    gst_buffer_map (rb, &map, GST_MAP_READ);
    fail_unless (gst_rudp_sender_handle_request (s, map.data, map.size, NULL,
            NULL, 0));
    gst_buffer_unmap (rb, &map);
    gst_rudp_sender_get_stats (s, &st);
    /* read, not followed */
    fail_unless_equals_int (st.level, 0);
    fail_unless_equals_int (st.rr_reports, 1);
    fail_unless_equals_int (st.rr_ext_max_seq, 70000);
    fail_unless_equals_int (st.rr_lost, 7);
    fail_unless_equals_int (st.rr_fraction_lost, 3);
    gst_rudp_sender_free (s);
    gst_buffer_unref (rb);
  }
  gst_buffer_unref (buf);
  g_array_unref (out);
}

GST_END_TEST;

/* The receiver's law under random loss, open loop: the sender follows
 * every level at once; 1400-byte packets at the level's rate, RTT 40 ms,
 * one packet in @every lost, 30 s; the mean level over the last 20 s. */
static guint law_spins;

static gdouble
law_run (GstRudpLaw law, guint every, GstRudpReceiverStats * st)
{
  GstRudpReceiverConfig c;
  GstRudpReceiver *r;
  GstClockTime now = 0;
  guint16 seq = 1000;
  guint64 n = 0;
  gdouble sum = 0;
  guint samples = 0;

  gst_rudp_receiver_config_init (&c);
  c.law = law;
  c.initial_level = 9;
  r = gst_rudp_receiver_new (&c);
  gst_rudp_receiver_handle_rtt_sample (r, 40 * GST_MSECOND);
  gst_rudp_receiver_handle_level_applied (r, 9, seq);
  while (now < 30 * GST_SECOND) {
    guint level = gst_rudp_receiver_get_level (r);
    gdouble pps = c.levels.rate[level] / 8.0 / 1400;
    GstClockTime next = now + (GstClockTime) (GST_SECOND / pps);

    if (++n % every != 0)
      gst_rudp_receiver_handle_packet (r, seq, 1400, now);
    seq++;
    /* the timer's wakeups up to the next packet */
    while (GST_CLOCK_TIME_IS_VALID (gst_rudp_receiver_next_wakeup (r))
        && gst_rudp_receiver_next_wakeup (r) <= next) {
      GstClockTime w = MAX (gst_rudp_receiver_next_wakeup (r), now);
      if (gst_rudp_receiver_poll (r, w, NULL))
        gst_rudp_receiver_handle_feedback_sent (r, w);
      /* the sender takes the level from its next packet */
      gst_rudp_receiver_handle_level_applied (r, gst_rudp_receiver_get_level (r),
          seq);
      /* a wakeup that is due again at once would spin the element's
       * timer (it did under law TFRC with the level at the equation's) */
      if (gst_rudp_receiver_next_wakeup (r) <= w) {
        law_spins++;
        break;
      }
    }
    now = next;
    if (now >= 10 * GST_SECOND) {
      sum += gst_rudp_receiver_get_level (r);
      samples++;
    }
  }
  gst_rudp_receiver_get_stats (r, st);
  gst_rudp_receiver_free (r);
  return sum / MAX (samples, 1);
}

/* Retransmission requests: one NACK per packet and SRTT. rtpjitterbuffer
 * asks every 40 ms until it has measured the retransmissions' round trip;
 * on a 230 ms path (beside a bulk TCP's queue) its 8 requests all went
 * before the first resend could be back, and the sender's per-packet
 * limit and budget went to duplicates. */
GST_START_TEST (test_receiver_nack_pacing)
{
  GstRudpReceiverConfig c;
  GstRudpReceiver *r;
  GstRudpReceiverStats st;
  GstClockTime t;
  guint sent = 0;

  gst_rudp_receiver_config_init (&c);
  r = gst_rudp_receiver_new (&c);
  /* no RTT sample yet: held for the initial RTT (100 ms) */
  fail_unless (gst_rudp_receiver_nack_due (r, 7, 0));
  fail_if (gst_rudp_receiver_nack_due (r, 7, 40 * MS));
  gst_rudp_receiver_handle_rtt_sample (r, 230 * MS);
  /* requests every 40 ms for 640 ms: a NACK at most every 230 ms */
  for (t = 80 * MS; t <= 720 * MS; t += 40 * MS)
    if (gst_rudp_receiver_nack_due (r, 7, t))
      sent++;
  /* at 240 (the one at 0 + 230), 480 and 720 */
  fail_unless_equals_int (sent, 3);
  /* other packets are not held by it */
  fail_unless (gst_rudp_receiver_nack_due (r, 8, 700 * MS));
  /* the packet arrives: asked for, so a retransmission, once */
  fail_unless (gst_rudp_receiver_take_nacked (r, 7, 750 * MS));
  fail_if (gst_rudp_receiver_take_nacked (r, 7, 760 * MS));
  fail_if (gst_rudp_receiver_take_nacked (r, 9, 760 * MS));
  /* asked for again later (a new gap at the same number): goes at once */
  fail_unless (gst_rudp_receiver_nack_due (r, 7, 800 * MS));
  /* a request forgotten after 5 s: its number arriving then is no
   * retransmission */
  fail_if (gst_rudp_receiver_take_nacked (r, 8, 6 * GST_SECOND));
  /* many requests in flight (the old ones pruned on the way): each new
   * number goes */
  for (t = 0; t < 2000; t++)
    fail_unless (gst_rudp_receiver_nack_due (r, (guint16) (1000 + t),
            10 * GST_SECOND + t * 10 * MS));
  gst_rudp_receiver_get_stats (r, &st);
  fail_unless_equals_int (st.nacked_arrived, 1);
  fail_unless_equals_int (st.nacks_due, 1 + 3 + 1 + 1 + 2000);
  fail_unless_equals_int (st.nacks_held, 1 + 17 - 3);
  gst_rudp_receiver_free (r);
}

GST_END_TEST;

GST_START_TEST (test_receiver_law_tfrc)
{
  GstRudpReceiverStats st;
  gdouble halving, tfrc, tfrc_heavy;
  guint64 halving_decreases;

  /* 1 % random loss on a path that carries the top level: the paper's
   * law halves on every lost round (and climbs back, here quickly: the
   * time rule at 40 ms), the equation's level is the top (3.1 Mbit/s) */
  halving = law_run (GST_RUDP_LAW_HALVING, 100, &st);
  halving_decreases = st.decreases;
  tfrc = law_run (GST_RUDP_LAW_TFRC, 100, &st);
  GST_INFO ("1 %%: halving mean level %.2f (%" G_GUINT64_FORMAT
      " decreases), tfrc %.2f (%" G_GUINT64_FORMAT " decreases, p %.4f, X %"
      G_GUINT64_FORMAT ")", halving, halving_decreases, tfrc, st.decreases,
      st.loss_event_rate, st.tfrc_rate);
  fail_unless (halving_decreases >= 20, "%" G_GUINT64_FORMAT,
      halving_decreases);
  fail_unless_equals_uint64 (st.decreases, 0);
  fail_unless (tfrc >= 8.99, "tfrc %f", tfrc);
  fail_unless (st.loss_events > 20);
  fail_unless (st.loss_event_rate > 0.007 && st.loss_event_rate < 0.013,
      "p %f", st.loss_event_rate);
  /* one in 8 (12.5 %): the equation's level, below the top */
  tfrc_heavy = law_run (GST_RUDP_LAW_TFRC, 8, &st);
  GST_INFO ("12.5 %%: tfrc %.2f (p %.4f, X %" G_GUINT64_FORMAT ")",
      tfrc_heavy, st.loss_event_rate, st.tfrc_rate);
  fail_unless (tfrc_heavy < 6, "tfrc heavy %f", tfrc_heavy);
  fail_unless (st.decreases > 0);
  fail_unless_equals_int (law_spins, 0);
}

GST_END_TEST;

static Suite *
rudp_suite (void)
{
  Suite *s = suite_create ("rudp-core");
  TCase *tc = tcase_create ("core");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_bucket_rate_and_depth);
  tcase_add_test (tc, test_bucket_debt);
  tcase_add_test (tc, test_flow_charge);
  tcase_add_test (tc, test_scheduler_many_flows);
  tcase_add_test (tc, test_scheduler_wakeups);
  tcase_add_test (tc, test_scheduler_late_wakeup);
  tcase_add_test (tc, test_scheduler_held_up_between_packets);
  tcase_add_test (tc, test_levels_table);
  tcase_add_test (tc, test_receiver_levels);
  tcase_add_test (tc, test_receiver_hold);
  tcase_add_test (tc, test_receiver_duplicates);
  tcase_add_test (tc, test_receiver_evidence);
  tcase_add_test (tc, test_receiver_climb_time);
  tcase_add_test (tc, test_receiver_tcp_friendly);
  tcase_add_test (tc, test_receiver_loss_rate);
  tcase_add_test (tc, test_receiver_reorder_and_idle);
  tcase_add_test (tc, test_receiver_ecn);
  tcase_add_test (tc, test_feedback_codec);
  tcase_add_test (tc, test_nack_codec);
  tcase_add_test (tc, test_receiver_law_tfrc);
  tcase_add_test (tc, test_receiver_nack_pacing);
  tcase_add_test (tc, test_hello_codec);
  tcase_add_test (tc, test_sender_levels);
  tcase_add_test (tc, test_rtt_echo);
  tcase_add_test (tc, test_closed_loop);
  return s;
}

GST_CHECK_MAIN (rudp);
