/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — NAT traversal of the UDP flows: the receiver's hello (sans-IO).
 *
 * A receiver behind NAT cannot be sent to first: it sends a small *hello*
 * datagram from the very socket it receives on to the sender's port, the
 * sender learns the observed (public) address and port from it and sends
 * its flow there, from the port the hello reached (a masquerading NAT
 * forwards only the replies of that exact address and port). The wire
 * formats are the transports' own (ERAP: erappacket.h, rUDP: an RTCP APP
 * "HELO" packet, rudpfeedback.h); this file is what both share:
 *
 * * GstTwoflowHello (receiver side): when to send a hello. The first is
 *   due at once; then one every @retry_interval until data arrives (a
 *   hello may be lost); after that one every @keepalive_interval, so a
 *   NAT keeps the mapping while the flow is idle (Linux conntrack forgets
 *   a UDP mapping after 30 s, 120 s once it saw both directions). Each
 *   hello carries a counter that grows by one.
 * * GstTwoflowHelloLearner (sender side): whether a hello may set the
 *   destination. Only a hello from @allowed (the authenticated control
 *   peer's address: no reflection) counts, any port; on a keyed flow only
 *   an authentic one (the shell checks the tag and says so); its counter
 *   must be above the last accepted one (replays). A hello from a new port
 *   moves the destination (the NAT changed its mapping).
 *
 * No sockets, threads or clocks: times are given, as in every core.
 */
#ifndef __GST_TWOFLOW_HELLO_H__
#define __GST_TWOFLOW_HELLO_H__

#include <gst/gst.h>
#include <gst/twoflow/twoflow-prelude.h>

G_BEGIN_DECLS

#define GST_TWOFLOW_HELLO_DEFAULT_RETRY      (200 * GST_MSECOND)
#define GST_TWOFLOW_HELLO_DEFAULT_KEEPALIVE  (15 * GST_SECOND)

typedef struct _GstTwoflowHello GstTwoflowHello;

typedef struct {
  guint64 hellos;               /* hellos due so far (sent by the shell) */
  guint64 counter;              /* the last hello's counter */
  gboolean data_seen;           /* data arrived: keepalives only */
} GstTwoflowHelloStats;

/* @keepalive_interval 0: no hello once data arrived. @first_counter: the
 * counter of the first hello (e.g. wall-clock microseconds, so a later
 * session's hellos never look older than an earlier one's). */
TWOFLOW_PRIVATE_API
GstTwoflowHello *gst_twoflow_hello_new (GstClockTime retry_interval,
    GstClockTime keepalive_interval, guint64 first_counter, GstClockTime now);
TWOFLOW_PRIVATE_API
void gst_twoflow_hello_free (GstTwoflowHello * h);
/* The flow's data arrived (authentic, when keyed): from now on keepalives. */
TWOFLOW_PRIVATE_API
void gst_twoflow_hello_handle_data (GstTwoflowHello * h, GstClockTime now);
/* TRUE if a hello is due at @now; *counter is the one to carry. */
TWOFLOW_PRIVATE_API
gboolean gst_twoflow_hello_poll (GstTwoflowHello * h, GstClockTime now,
    guint64 * counter);
/* When the next hello is due. */
TWOFLOW_PRIVATE_API
GstClockTime gst_twoflow_hello_next_wakeup (GstTwoflowHello * h);
TWOFLOW_PRIVATE_API
void gst_twoflow_hello_get_stats (GstTwoflowHello * h,
    GstTwoflowHelloStats * st);

typedef enum {
  GST_TWOFLOW_HELLO_LEARNED = 0,  /* first accepted hello: the destination */
  GST_TWOFLOW_HELLO_MOVED,        /* accepted, from a new port: moved there */
  GST_TWOFLOW_HELLO_KEPT,         /* accepted, the same address and port */
  GST_TWOFLOW_HELLO_FOREIGN,      /* not from the allowed address: ignored */
  GST_TWOFLOW_HELLO_FORGED,       /* keyed flow, not authentic: dropped */
  GST_TWOFLOW_HELLO_REPLAYED,     /* counter not above the last accepted */
} GstTwoflowHelloVerdict;

typedef struct {
  guint64 accepted;             /* LEARNED + MOVED + KEPT */
  guint64 moved;
  guint64 foreign;
  guint64 forged;
  guint64 replayed;
  gboolean learned;             /* a destination is known */
  guint8 addr[16];              /* the destination: address (4 or 16 bytes) */
  guint8 addr_len;
  guint16 port;                 /*  and port */
  GstClockTime last_hello;      /* when the last accepted one came */
} GstTwoflowHelloLearnerStats;

typedef struct _GstTwoflowHelloLearner GstTwoflowHelloLearner;

/* @allowed: the address hellos must come from (4 or 16 bytes; an
 * IPv4-mapped IPv6 address counts as the IPv4 one). @keyed: only
 * authentic hellos count. */
TWOFLOW_PRIVATE_API
GstTwoflowHelloLearner *gst_twoflow_hello_learner_new (const guint8 * allowed,
    gsize allowed_len, gboolean keyed);
TWOFLOW_PRIVATE_API
void gst_twoflow_hello_learner_free (GstTwoflowHelloLearner * l);
/* A hello from @addr:@port carrying @counter; @authentic: its tag checked
 * out under the flow's key (ignored on an unkeyed flow). */
TWOFLOW_PRIVATE_API
GstTwoflowHelloVerdict gst_twoflow_hello_learner_handle (
    GstTwoflowHelloLearner * l, const guint8 * addr, gsize addr_len,
    guint16 port, guint64 counter, gboolean authentic, GstClockTime now);
/* Whether @addr is the allowed address (the shell may skip checking a
 * foreign hello's tag: handle() refuses it first anyway). */
TWOFLOW_PRIVATE_API
gboolean gst_twoflow_hello_learner_allows (GstTwoflowHelloLearner * l,
    const guint8 * addr, gsize addr_len);
TWOFLOW_PRIVATE_API
void gst_twoflow_hello_learner_get_stats (GstTwoflowHelloLearner * l,
    GstTwoflowHelloLearnerStats * st);
TWOFLOW_PRIVATE_API
const gchar *gst_twoflow_hello_verdict_name (GstTwoflowHelloVerdict v);

G_END_DECLS

#endif
