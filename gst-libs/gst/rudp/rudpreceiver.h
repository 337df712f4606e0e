/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the rUDP receiver algorithm (sans-IO).
 *
 * Sender and receiver agree on a table of rate levels (0 = lowest). The
 * receiver counts, from RTP sequence numbers, the packets lost in each
 * round-trip time ("Congestion-aware TCP-friendly system for multimedia
 * transmission based on UDP"): on a loss in a round (the SRTT, floored to
 * min_interval) it halves the level, as soon as three later packets
 * confirm the gap (as TCP's fast retransmit) or else at the round's end;
 * it raises the level
 * by one only after a loss-free stretch *at the current level* whose
 * packets arrive at (7/8 of) the level's rate, by either rule
 * (packet-or-time):
 * - packets: increase_packets packets, over at least increase_rtts rounds
 *   and, when tcp_friendly, step * RTT^2 (the step in packets/s: TCP's
 *   additive increase) from the first of them;
 * - time (increase_time > 0): GST_RUDP_TIME_RULE_PACKETS packets, and
 *   those waits (at least increase_time) counted from the request of the
 *   level: TCP's pace, whatever the packet rate.
 * At a 25 ms RTT a round holds 0.5 (level 0) to 5 (level 9) packets of
 * 1000 bytes: "no loss in one RTT" is no evidence, so the packet rule
 * alone sets the loss rate the flow tolerates (about 1/increase_packets)
 * and stalls it at low rates (50 packets at 20 packets/s: 2.5 s per
 * level); the time rule climbs like TCP, and the arrival rate (TCP's ACK
 * clock, for a paced flow) keeps it from climbing past the capacity of a
 * queue it has to itself.
 * One reaction per loss episode (as in RAP and TFRC): after a decrease,
 * losses of packets the sender sent before it switched do not count. The
 * sender's notice says from which sequence number a new level is in
 * force; until it arrives (or for two rounds, if none comes) no loss
 * counts after a decrease, and no packet counts towards an increase.
 * ECN (RFC 3168; RFC 6679 section 7.3.3, receiver-driven): a packet that
 * arrives marked CE (Congestion Experienced) is a congestion signal as a
 * loss is, without the loss: the level is halved at once (a mark needs no
 * reordering wait), under the same one-reaction-per-episode rule.
 */
#ifndef __GST_RUDP_RECEIVER_H__
#define __GST_RUDP_RECEIVER_H__

#include <gst/gst.h>
#include <gst/rudp/rudp-prelude.h>
#include <gst/rudp/rudplevels.h>

G_BEGIN_DECLS

/* Receiver defaults (see GstRudpReceiverConfig) */
#define GST_RUDP_DEFAULT_MIN_INTERVAL (10 * GST_MSECOND)
#define GST_RUDP_DEFAULT_INCREASE_RTTS 1
#define GST_RUDP_DEFAULT_INCREASE_PACKETS 50
#define GST_RUDP_DEFAULT_INCREASE_TIME (10 * GST_MSECOND)
/* The time rule needs this many packets of the level, arriving at (7/8
 * of) its rate */
#define GST_RUDP_TIME_RULE_PACKETS 3
/* A gap is a loss once this many later packets arrived (less is taken
 * for reordering until the end of the round) */
#define GST_RUDP_REORDER_PACKETS 3

typedef struct _GstRudpReceiver GstRudpReceiver;

/* How a loss moves the level down:
 * - HALVING: the paper's law, half the level on a loss in a round (one
 *   reaction per episode); at 1 % random loss and ~5 packets per round
 *   it sits at level 0.
 * - TFRC: the loss event rate p (RFC 5348's average loss interval method
 *   over the packets received: losses within one RTT of an event's first
 *   are one event, 8 intervals weighted 1,1,1,1,0.8,0.6,0.4,0.2) and the
 *   throughput equation X = s / (R*sqrt(2p/3) + 4R*3*sqrt(3p/8)*p*(1+32p^2))
 *   give the highest level at most X; a loss (or CE mark) takes the level
 *   down to it when it is below, never further, and the increases (the
 *   same rules as HALVING's) stop at it. Isolated random loss on a fast
 *   path leaves the level where the path carries it; congestion loss
 *   (many events per RTT) brings it to the TCP-fair rate. */
typedef enum {
  GST_RUDP_LAW_HALVING = 0,
  GST_RUDP_LAW_TFRC = 1,
} GstRudpLaw;

typedef struct {
  GstRudpLevels levels;         /* the table (its steps set the TCP term) */
  guint initial_level;
  GstClockTime initial_rtt;     /* RTT before an RTT sample */
  GstClockTime min_interval;    /* floor of the loss round (the RTT) */
  GstClockTime feedback_interval;       /* resend the level at least this often */
  /* going up needs a loss-free stretch at the current level of at least: */
  guint increase_rtts;          /* rounds */
  guint increase_packets;       /* packets received ... */
  GstClockTime increase_time;   /* ... or this long (0: packets only) */
  gboolean tcp_friendly;        /* step * RTT^2, step in packets/s */
  GstRudpLaw law;               /* HALVING (the paper's, the core's
                                 * default) or TFRC (rudpsrc's default) */
} GstRudpReceiverConfig;

typedef struct {
  guint64 received;             /* RTP packets (duplicates included) */
  guint64 duplicates;           /* of those, copies of a packet received
                                 * (within the last 4096 numbers) */
  guint64 lost;                 /* expected - (received - duplicates):
                                 * cumulative, >= 0 */
  guint64 expected;
  guint32 ext_max_seq;          /* extended highest sequence number */
  guint level;
  guint64 increases, decreases;
  guint64 rounds;               /* judged intervals */
  GstClockTime srtt;
  guint64 rtt_samples;
  guint8 fraction_lost;         /* of the last judged interval, 8-bit fixed */
  gboolean holding;             /* waiting for a decrease to take effect */
  guint64 clean_packets;        /* of the loss-free stretch at this level */
  GstClockTime increase_wait;   /* the stretch needed before going up
                                 * (RTTs or step * RTT^2; besides the
                                 * packets-or-increase_time condition) */
  guint64 ect_received;         /* packets with ECT(0), ECT(1) or CE */
  guint64 ce_marked;            /* packets marked CE */
  guint64 ce_decreases;         /* decreases caused by a CE mark */
  guint64 ce_marked_rtcp;       /* the sender's RTCP datagrams marked CE */
  /* law TFRC: */
  gdouble loss_event_rate;      /* p (0: no loss event yet) */
  guint64 loss_events;
  guint64 tfrc_rate;            /* X, bit/s (0: no loss event yet) */
  /* retransmission requests: */
  guint64 nacks_due;            /* requests that were to go out */
  guint64 nacks_held;           /* requests within an SRTT of the last */
  guint64 nacked_arrived;       /* requested packets that arrived */
} GstRudpReceiverStats;

/* The ECN field of the IP header (RFC 3168) */
#define GST_RUDP_ECN_NOT_ECT 0
#define GST_RUDP_ECN_ECT1 1
#define GST_RUDP_ECN_ECT0 2
#define GST_RUDP_ECN_CE 3

TWOFLOW_RUDP_API
void gst_rudp_receiver_config_init (GstRudpReceiverConfig * c);
TWOFLOW_RUDP_API
GstRudpReceiver *gst_rudp_receiver_new (const GstRudpReceiverConfig * c);
TWOFLOW_RUDP_API
void gst_rudp_receiver_free (GstRudpReceiver * r);

/* An RTP packet with sequence number @seq and @size bytes (0: unknown)
 * arrived at @now. */
TWOFLOW_RUDP_API
void gst_rudp_receiver_handle_packet (GstRudpReceiver * r, guint16 seq,
    gsize size, GstClockTime now);
/* The same with the ECN field of its IP header (GST_RUDP_ECN_*; the
 * plain call is GST_RUDP_ECN_NOT_ECT): CE halves the level as a loss
 * does, unless the packet was sent before the sender took the last
 * decrease (the same congestion episode). */
TWOFLOW_RUDP_API
void gst_rudp_receiver_handle_packet_ecn (GstRudpReceiver * r, guint16 seq,
    gsize size, guint ecn, GstClockTime now);
/* A datagram of the flow without an RTP sequence number (the sender's
 * RTCP notice, which crossed the same queues) arrived marked CE: halves
 * the level as a marked RTP packet does, unless a decrease is still
 * taking effect (the same episode). */
TWOFLOW_RUDP_API
void gst_rudp_receiver_handle_rtcp_ce (GstRudpReceiver * r, GstClockTime now);
TWOFLOW_RUDP_API
void gst_rudp_receiver_handle_rtt_sample (GstRudpReceiver * r,
    GstClockTime rtt);
/* The sender's notice, arrived at @now, echoes the timestamp of one of
 * our requests (NTP short, gst_rudp_ntp_short() of our clock) and the
 * @delay (NTP short units) the sender held it between the request's
 * arrival and the answer: an RTT sample, @now - echo - delay (RFC 3550's
 * A - LSR - DLSR, modulo 2^32), handled as
 * gst_rudp_receiver_handle_rtt_sample(). Returns it, or
 * GST_CLOCK_TIME_NONE (nothing handled) without an echo (0) or when it
 * is no RTT (above a minute: an old or forged echo). */
TWOFLOW_RUDP_API
GstClockTime gst_rudp_receiver_handle_echo (GstRudpReceiver * r,
    guint32 echo_timestamp, guint32 delay, GstClockTime now);
/* The latest RTT sample if it is new since the last call (for the next
 * request: the sender's controller reads the path's queue from it, the
 * SRTT lags by seconds at a request every feedback-interval), else
 * GST_CLOCK_TIME_NONE. */
TWOFLOW_RUDP_API
GstClockTime gst_rudp_receiver_take_rtt_sample (GstRudpReceiver * r);
/* The sender's notice: @level is in force from RTP sequence number @seq. */
TWOFLOW_RUDP_API
void gst_rudp_receiver_handle_level_applied (GstRudpReceiver * r,
    guint level, guint16 seq);
/* Judges the intervals that ended by @now. Returns TRUE when feedback is
 * due (the level changed, or feedback_interval passed since the last),
 * with the level to send in @level (may be NULL); once it is sent, call
 * gst_rudp_receiver_handle_feedback_sent(). */
TWOFLOW_RUDP_API
gboolean gst_rudp_receiver_poll (GstRudpReceiver * r, GstClockTime now,
    guint * level);
TWOFLOW_RUDP_API
void gst_rudp_receiver_handle_feedback_sent (GstRudpReceiver * r,
    GstClockTime now);
/* When gst_rudp_receiver_poll() has something to do next
 * (GST_CLOCK_TIME_NONE: nothing until the next packet). */
TWOFLOW_RUDP_API
GstClockTime gst_rudp_receiver_next_wakeup (GstRudpReceiver * r);
/* Retransmission requests (Generic NACKs). Downstream asks for @seq at
 * @now: TRUE when a NACK is to go out; FALSE when the last one for @seq
 * went out less than the SRTT ago (its answer cannot be back yet; before
 * an RTT sample: initial_rtt). */
TWOFLOW_RUDP_API
gboolean gst_rudp_receiver_nack_due (GstRudpReceiver * r, guint16 seq,
    GstClockTime now);
/* RTP packet @seq arrived at @now: TRUE when a NACK asked for it (a
 * retransmission, or the original late), forgetting the request. */
TWOFLOW_RUDP_API
gboolean gst_rudp_receiver_take_nacked (GstRudpReceiver * r, guint16 seq,
    GstClockTime now);
TWOFLOW_RUDP_API
guint gst_rudp_receiver_get_level (GstRudpReceiver * r);
TWOFLOW_RUDP_API
void gst_rudp_receiver_get_stats (GstRudpReceiver * r,
    GstRudpReceiverStats * st);

G_END_DECLS

#endif
