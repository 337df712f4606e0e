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
      gst_rudp_flow_push (f[i], NULL, sizes[i]);
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
  gst_rudp_flow_push (f, NULL, 600);
  gst_rudp_flow_push (f, NULL, 600);
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
  gst_rudp_flow_push (f, NULL, 600);
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

/* ------------------------------------------------------------------ */
/* levels and the receiver algorithm */

GST_START_TEST (test_levels_table)
{
  GstRudpLevels l;
  guint64 bad[3] = { 10, 10, 20 };
  gchar *str;

  gst_rudp_levels_init_default (&l);
  fail_unless_equals_int (l.n, 10);
  fail_unless_equals_uint64 (l.rate[0], 20000);
  fail_unless_equals_uint64 (l.rate[9], 200000);
  str = gst_rudp_levels_to_string (&l);
  fail_unless_equals_string (str,
      "20000,40000,60000,80000,100000,120000,140000,160000,180000,200000");
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

static GstRudpReceiver *
receiver_new (void)
{
  GstRudpReceiverConfig c;

  gst_rudp_receiver_config_init (&c);
  c.initial_rtt = 50 * MS;
  c.feedback_interval = GST_SECOND;
  return gst_rudp_receiver_new (&c);
}

/* Feeds one packet per ms from @seq for @ms ms, skipping those @drop says;
 * returns the number of level changes reported. */
static guint
feed (GstRudpReceiver * r, guint16 * seq, GstClockTime * now, guint ms,
    gboolean (*drop) (guint16 seq))
{
  guint changes = 0, i;

  for (i = 0; i < ms; i++) {
    guint before = gst_rudp_receiver_get_level (r);

    if (!drop || !drop (*seq))
      gst_rudp_receiver_packet (r, *seq, *now);
    (*seq)++;
    *now += MS;
    if (gst_rudp_receiver_advance (r, *now)) {
      if (gst_rudp_receiver_get_level (r) != before)
        changes++;
      gst_rudp_receiver_feedback_sent (r, *now);
    }
  }
  return changes;
}

static gboolean
drop_one (guint16 seq)
{
  return seq == 65530;
}

GST_START_TEST (test_receiver_levels)
{
  GstRudpReceiver *r = receiver_new ();
  GstRudpReceiverStats st;
  GstClockTime now = 10 * GST_SECOND;
  guint16 seq = 64900;

  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 0);
  /* nothing received: nothing to judge or tell */
  fail_if (gst_rudp_receiver_advance (r, now));
  fail_unless_equals_uint64 (gst_rudp_receiver_next_wakeup (r),
      GST_CLOCK_TIME_NONE);

  /* no loss: one level up per RTT (50 ms) */
  feed (r, &seq, &now, 200, NULL);
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 4);
  feed (r, &seq, &now, 400, NULL);
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 9);  /* the top */

  /* a loss across the sequence number wrap: halve once (9 -> 4) ... */
  gst_rudp_receiver_get_stats (r, &st);
  fail_unless_equals_uint64 (st.lost, 0);
  feed (r, &seq, &now, 50, drop_one);
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 4);
  gst_rudp_receiver_get_stats (r, &st);
  fail_unless_equals_uint64 (st.lost, 1);
  fail_unless_equals_uint64 (st.decreases, 1);
  fail_unless_equals_uint64 (st.expected, 650);
  fail_unless_equals_uint64 (st.ext_max_seq, 0x10000 + (guint16) (seq - 1));
  /* ... then the next RTT is not judged, then one up per RTT again */
  feed (r, &seq, &now, 50, NULL);
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 4);
  feed (r, &seq, &now, 50, NULL);
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 5);

  /* RTT samples set the judging interval: 100 ms */
  gst_rudp_receiver_rtt_sample (r, 100 * MS);
  feed (r, &seq, &now, 300, NULL);
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 8);
  gst_rudp_receiver_get_stats (r, &st);
  fail_unless_equals_uint64 (st.srtt, 100 * MS);
  gst_rudp_receiver_free (r);
}

GST_END_TEST;

GST_START_TEST (test_receiver_reorder_and_idle)
{
  GstRudpReceiver *r = receiver_new ();
  GstRudpReceiverStats st;
  GstClockTime now = 0;
  guint i;

  /* swapped pairs are reordering, not loss */
  for (i = 0; i < 100; i += 2) {
    gst_rudp_receiver_packet (r, i + 1, now);
    gst_rudp_receiver_packet (r, i, now);
    now += 2 * MS;
    if (gst_rudp_receiver_advance (r, now))
      gst_rudp_receiver_feedback_sent (r, now);
  }
  gst_rudp_receiver_get_stats (r, &st);
  fail_unless_equals_uint64 (st.lost, 0);
  fail_unless_equals_uint64 (st.decreases, 0);
  fail_unless_equals_int (st.level, 2);      /* two 50 ms rounds */
  /* a silent sender is not a reason to go up (no verdict without packets),
   * but the level is still repeated every feedback interval */
  fail_unless (gst_rudp_receiver_advance (r, now + 10 * GST_SECOND));
  gst_rudp_receiver_feedback_sent (r, now + 10 * GST_SECOND);
  fail_unless_equals_int (gst_rudp_receiver_get_level (r), 2);
  fail_if (gst_rudp_receiver_advance (r, now + 10 * GST_SECOND + MS));
  gst_rudp_receiver_free (r);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* feedback codec */

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

    gst_rudp_tmmbr_decode (gst_rudp_tmmbr_encode (l.rate[i] * 8, 28), &br,
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
  /* a request is not a notice */
  fail_if (gst_rudp_notice_parse (buf, &n2));
  gst_buffer_unref (buf);

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

GST_START_TEST (test_closed_loop)
{
  /* 100 KB/s bottleneck with a 20-packet drop-tail queue, 20 ms one-way
   * delay each way, 1000-byte packets, the default levels (20..200 KB/s),
   * a backlogged sender starting at level 0. The level must climb, then
   * keep the link busy with little loss: a rate-based AIMD over levels. */
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
  guint sender_level = 0, top_seen = 0;
  guint64 delivered = 0, delivered_late = 0;

  sim->cap = 100000;
  sim->limit = 20;
  gst_rudp_levels_init_default (&l);
  gst_rudp_receiver_config_init (&rc);
  rc.initial_rtt = 2 * delay;
  r = gst_rudp_receiver_new (&rc);
  f = gst_rudp_scheduler_add_flow (s, l.rate[0], 0, NULL, 0);

  for (sim->now = 0; sim->now < 30 * GST_SECOND; sim->now += MS) {
    SimPkt *p;

    while ((p = g_queue_peek_head (&fb)) && p->t <= sim->now) {
      g_queue_pop_head (&fb);
      if (p->seq != sender_level) {
        SimPkt *n = g_new (SimPkt, 1);

        sender_level = p->seq;
        gst_rudp_flow_set_rate (f, l.rate[sender_level], sim->now);
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
      gst_rudp_receiver_level_applied (r, notice_level[p->seq], p->seq);
      g_free (p);
    }
    while (gst_rudp_flow_queued_packets (f) < 4)
      gst_rudp_flow_push (f, NULL, 1000);
    gst_rudp_scheduler_tick (s, sim->now, sim_send, sim);

    /* out of the bottleneck, then across the propagation delay */
    while ((p = g_queue_peek_head (&sim->q)) && p->t + delay <= sim->now) {
      g_queue_pop_head (&sim->q);
      gst_rudp_receiver_packet (r, p->seq, sim->now);
      delivered++;
      if (sim->now >= 10 * GST_SECOND)
        delivered_late++;
      g_free (p);
    }
    if (gst_rudp_receiver_advance (r, sim->now)) {
      SimPkt *x = g_new (SimPkt, 1);

      x->t = sim->now + delay;
      x->seq = gst_rudp_receiver_get_level (r);
      g_queue_push_tail (&fb, x);
      gst_rudp_receiver_feedback_sent (r, sim->now);
      /* the echo of the feedback gives an RTT: both delays and the queue */
      gst_rudp_receiver_rtt_sample (r, 2 * delay +
          (sim->link_free > sim->now ? sim->link_free - sim->now : 0));
    }
    top_seen = MAX (top_seen, gst_rudp_receiver_get_level (r));
    if (g_getenv ("RUDP_SIM_TRACE") && sim->now % (50 * MS) == 0)
      g_printerr ("%.2f level %u sender %u queue %.0f ms dropped %"
          G_GUINT64_FORMAT "\n", sim->now / 1e9, gst_rudp_receiver_get_level (r),
          sender_level, sim->link_free > sim->now ?
          (sim->link_free - sim->now) / 1e6 : 0.0, sim->dropped);
  }
  gst_rudp_receiver_get_stats (r, &st);
  GST_INFO ("offered %" G_GUINT64_FORMAT " dropped %" G_GUINT64_FORMAT
      " delivered %" G_GUINT64_FORMAT " (last 20 s: %" G_GUINT64_FORMAT
      ") decreases %" G_GUINT64_FORMAT, sim->offered, sim->dropped,
      delivered, delivered_late, st.decreases);
  /* the receiver saw the bottleneck's drops (but those after the last
   * delivered packet) */
  fail_unless (st.lost <= sim->dropped && st.lost + 25 >= sim->dropped,
      "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, st.lost, sim->dropped);
  fail_unless (st.decreases >= 3);
  fail_unless (top_seen >= 5);
  /* link use over the last 20 s: at least 60 % of 100 packets/s */
  fail_unless (delivered_late >= 1200, "%" G_GUINT64_FORMAT, delivered_late);
  /* a CBR flow at the top level would lose half its packets here; the
   * levels lose a third of that at most (the deep drop-tail queue delays
   * every loss signal by 200 ms) */
  fail_unless (sim->dropped * 6 <= sim->offered, "%" G_GUINT64_FORMAT
      " of %" G_GUINT64_FORMAT, sim->dropped, sim->offered);

  g_queue_clear_full (&sim->q, g_free);
  g_queue_clear_full (&fb, g_free);
  g_queue_clear_full (&notices, g_free);
  gst_rudp_scheduler_remove_flow (s, f, NULL);
  gst_rudp_scheduler_free (s);
  gst_rudp_receiver_free (r);
  g_free (sim);
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
  tcase_add_test (tc, test_scheduler_many_flows);
  tcase_add_test (tc, test_scheduler_wakeups);
  tcase_add_test (tc, test_levels_table);
  tcase_add_test (tc, test_receiver_levels);
  tcase_add_test (tc, test_receiver_reorder_and_idle);
  tcase_add_test (tc, test_feedback_codec);
  tcase_add_test (tc, test_closed_loop);
  return s;
}

GST_CHECK_MAIN (rudp);
