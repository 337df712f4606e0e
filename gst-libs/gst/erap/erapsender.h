/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP sender state machine (sans-IO).
 *
 * Fed application messages, ACKs and the current time; returns the packets
 * to send and the time it wants to be called again. No sockets, threads or
 * clocks of its own. Not thread-safe: callers serialize access.
 */
#ifndef __GST_ERAP_SENDER_H__
#define __GST_ERAP_SENDER_H__

#include <gst/gst.h>
#include <gst/erap/erap-prelude.h>
#include <gst/erap/erappacket.h>
#include <gst/erap/erapcc.h>

G_BEGIN_DECLS

typedef struct _GstErapSender GstErapSender;

typedef struct {
  guint mtu;                    /* datagram size, header included */
  guint64 initial_rate;         /* bit/s of datagrams */
  guint64 min_rate;             /* bit/s; 0: at least one packet per second */
  guint64 max_rate;             /* bit/s; 0: unbounded */
  const GstErapCongestionOps *cc;       /* NULL: rap */
  GstClockTime initial_rtt;     /* SRTT before the first sample */
  GstClockTime initial_rto;
  GstClockTime min_rto;
  GstClockTime max_rto;
  guint dpthresh;               /* percent of the rate an SRTT must use to grow */
  guint max_burst;              /* packets sent back to back to catch up */
  GstClockTime quantum;         /* packets due within this much of now go
                                 * now, in one burst, and timers wake at
                                 * most once per quantum (default 0) */
  GstErapProtocol protocol;     /* ERAP (default) or the RAP baseline: 24-byte
                                 * header, and RAP's IPG and RTT timers keep
                                 * running while there is nothing to send */
  GstClockTime report_interval; /* scheduler report period; the window of
                                 * used_rate. Its timer runs while the
                                 * session sends and stops after a whole
                                 * interval without data (0: no reports and
                                 * no timer, 1 s windows closed by polls) */
  /* ERAP with the rap law: a queue of its own making (the SRTT this far
   * above the smallest RTT, the path seen empty since) is not probed
   * further: the rate holds, and falls by 15 % per SRTT + 100 ms while it
   * stands, not below initial_rate; one that outlives 3 decreases and 2 s
   * is another flow's (default 100 ms, LEDBAT's target; 0: off, plain
   * RAP) */
  GstClockTime max_queue_delay;
} GstErapSenderConfig;

typedef struct {
  guint64 packets_sent;         /* all data packets, retransmissions included */
  guint64 packets_retransmitted;
  guint64 packets_lost;         /* transmissions declared lost */
  guint64 loss_reactions;       /* rate decreases (one per loss cluster) */
  guint64 timeout_losses;       /* of packets_lost, found by timeout */
  guint64 spurious_losses;      /* of packets_lost, acknowledged later */
  guint64 reactions_undone;     /* of loss_reactions, taken back: caused by
                                 * a timeout whose packet was acknowledged
                                 * after all (the law's undo) */
  guint64 bytes_sent;           /* payload bytes, retransmissions included */
  guint64 bytes_acked;          /* payload bytes known delivered */
  guint64 acks_received;
  guint64 acks_invalid;         /* for never-sent seqnos or inconsistent */
  guint64 queued_bytes;         /* payload not yet acknowledged */
  guint64 rate;                 /* current allowed rate, bit/s */
  GstClockTime ipg;
  GstClockTime srtt;
  GstClockTime rto;
  /* the scheduler's view of this session */
  guint64 used_rate;            /* payload bit/s sent over the last report
                                 * interval (retransmissions included, headers
                                 * not); 0 once idle */
  gboolean active;              /* in the scheduler's view: sent something
                                 * in the current or the last report
                                 * interval (an idle session is left out) */
  guint64 reports;              /* scheduler reports fallen due */
  guint64 ticks;                /* per-SRTT rate timer runs */
  guint64 idle_wakeups;         /* IPG timer runs with nothing to send (RAP
                                 * baseline only: ERAP's timers are off) */
  guint64 queue_decreases;      /* rate decreases on a queue of its own */
  guint64 queue_holds;          /* SRTT ticks without the increase */
} GstErapSenderStats;

typedef struct {
  guint8 header[GST_ERAP_MAX_DATA_HEADER_SIZE];
  guint header_len;             /* 8 (ERAP) or 24 (RAP baseline) */
  const guint8 *payload;        /* valid until the sender handles an ACK,
                                 * is freed, or is polled after being done */
  gsize payload_len;
  guint64 seqno;
  guint64 appseq;
  gboolean retransmission;
} GstErapOutPacket;

typedef enum {
  GST_ERAP_ACK_OK = 0,
  GST_ERAP_ACK_INVALID = 1,     /* never-sent seqno or inconsistent fields */
} GstErapAckResult;

TWOFLOW_ERAP_API
void gst_erap_sender_config_init (GstErapSenderConfig * config);

TWOFLOW_ERAP_API
GstErapSender *gst_erap_sender_new (const GstErapSenderConfig * config);
TWOFLOW_ERAP_API
void gst_erap_sender_free (GstErapSender * s);

/* Queues one message (fragmented to the MTU). Takes a reference to @msg.
 * Returns FALSE after end of stream. */
TWOFLOW_ERAP_API
gboolean gst_erap_sender_handle_message (GstErapSender * s, GBytes * msg,
    GstClockTime now);
/* Queues the in-band end of stream after every message so far. */
TWOFLOW_ERAP_API
void gst_erap_sender_handle_eos (GstErapSender * s, GstClockTime now);

TWOFLOW_ERAP_API
GstErapAckResult gst_erap_sender_handle_ack (GstErapSender * s,
    const GstErapAck * ack, GstClockTime now);

/* Runs the timers due at @now and fills @out with a packet to send now.
 * Call until it returns FALSE, then sleep until next_wakeup. */
TWOFLOW_ERAP_API
gboolean gst_erap_sender_poll (GstErapSender * s, GstClockTime now,
    GstErapOutPacket * out);
/* Absolute time of the next timer, GST_CLOCK_TIME_NONE when idle. */
TWOFLOW_ERAP_API
GstClockTime gst_erap_sender_next_wakeup (GstErapSender * s);

/* TRUE when end of stream was pushed and everything is acknowledged. */
TWOFLOW_ERAP_API
gboolean gst_erap_sender_is_done (GstErapSender * s);
/* TRUE when there is nothing to send (timers of the rate law are off). */
TWOFLOW_ERAP_API
gboolean gst_erap_sender_is_idle (GstErapSender * s);
TWOFLOW_ERAP_API
guint64 gst_erap_sender_queued_bytes (GstErapSender * s);
/* TRUE once for each scheduler report that fell due in a poll (every
 * report_interval while the session sends; none once a whole interval
 * passed without data, when the report timer is off like the others).
 * Clears it. */
TWOFLOW_ERAP_API
gboolean gst_erap_sender_take_report (GstErapSender * s);
TWOFLOW_ERAP_API
void gst_erap_sender_get_stats (GstErapSender * s, GstErapSenderStats * st);
TWOFLOW_ERAP_API
GstErapCC *gst_erap_sender_get_cc (GstErapSender * s);

G_END_DECLS

#endif
