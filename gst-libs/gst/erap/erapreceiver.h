/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP receiver state machine (sans-IO).
 *
 * Fed data datagrams, returns the ACK to send for each (one per data
 * packet) and, in order and exactly once, the application's messages with
 * their boundaries restored, then the end of stream. Not thread-safe.
 *
 * The verbs of every core (docs/architecture.md): handle_data() for each
 * datagram, poll() for what is ready. It has no timer, hence no now and no
 * next_wakeup(): it never acts but on a datagram (the sender's timeouts
 * make an ACK's loss good), so what poll() returns changes only after
 * handle_data().
 */
#ifndef __GST_ERAP_RECEIVER_H__
#define __GST_ERAP_RECEIVER_H__

#include <glib.h>
#include <gst/erap/erap-prelude.h>
#include <gst/erap/erappacket.h>

G_BEGIN_DECLS

typedef struct _GstErapReceiver GstErapReceiver;

typedef struct {
  guint64 max_reorder_bytes;    /* payload held out of order, at most */
  guint16 port;                 /* our data port, written into every ACK */
  guint8 addr_len;              /* 0, 4 or 16: our address in every ACK */
  guint8 addr[16];
  GstErapProtocol protocol;     /* ERAP (default) or the RAP baseline's
                                 * 24-byte header on data and ACKs */
} GstErapReceiverConfig;

typedef enum {
  GST_ERAP_DATA_NEW = 0,        /* accepted; send the ACK */
  GST_ERAP_DATA_DUPLICATE,      /* already had it; send the ACK */
  GST_ERAP_DATA_NO_MEMORY,      /* reorder memory full: dropped unacknowledged,
                                 * the sender will resend it */
  GST_ERAP_DATA_MALFORMED,      /* not ERAP data: dropped */
} GstErapDataResult;

typedef struct {
  guint64 packets_received;
  guint64 duplicates;
  guint64 malformed;
  guint64 dropped_no_memory;
  guint64 acks;
  guint64 messages_delivered;
  guint64 bytes_delivered;
  guint64 reorder_bytes;        /* payload held out of order now */
  guint64 reorder_packets;
  guint64 max_reorder_bytes_seen;
} GstErapReceiverStats;

#define GST_ERAP_DEFAULT_MAX_REORDER_BYTES (8 * 1024 * 1024)

TWOFLOW_ERAP_API
void gst_erap_receiver_config_init (GstErapReceiverConfig * config);
TWOFLOW_ERAP_API
GstErapReceiver *gst_erap_receiver_new (const GstErapReceiverConfig * config);
TWOFLOW_ERAP_API
void gst_erap_receiver_free (GstErapReceiver * r);

/* @datagram: one whole datagram (referenced, not copied, when kept).
 * @ack/@ack_len: the ACK to send back when the result is NEW or DUPLICATE. */
TWOFLOW_ERAP_API
GstErapDataResult gst_erap_receiver_handle_data (GstErapReceiver * r,
    GBytes * datagram, guint8 ack[GST_ERAP_ACK_MAX_SIZE], gsize * ack_len);

/* Next complete message in order, or NULL (formerly _pop). Once the
 * in-band end of stream is reached (everything before it delivered),
 * returns NULL and sets *eos. */
TWOFLOW_ERAP_API
GBytes *gst_erap_receiver_poll (GstErapReceiver * r, gboolean * eos);
TWOFLOW_ERAP_API
gboolean gst_erap_receiver_is_eos (GstErapReceiver * r);

TWOFLOW_ERAP_API
void gst_erap_receiver_get_stats (GstErapReceiver * r,
    GstErapReceiverStats * st);

G_END_DECLS

#endif
