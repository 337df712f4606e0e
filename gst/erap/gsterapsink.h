/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — erapsink: sends buffers reliably over ERAP (UDP). */
#ifndef __GST_ERAP_SINK_H__
#define __GST_ERAP_SINK_H__

#include <gst/gst.h>
#include "twoflowprops.h"
#include <gst/base/gstbasesink.h>
#include <gio/gio.h>
#include <sys/socket.h>
#include <gst/erap/erap.h>
#include "gsterapmanager.h"

G_BEGIN_DECLS

#define GST_TYPE_ERAP_SINK (gst_erap_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstErapSink, gst_erap_sink, GST, ERAP_SINK, GstBaseSink)

/**
 * GstErapCongestionControl:
 * @GST_ERAP_CC_RAP: RAP's rate-based AIMD
 * @GST_ERAP_CC_LIBRA: Libra, RTT-fair (equal shares whatever the RTT)
 */
typedef enum {
  GST_ERAP_CC_RAP = 0,
  GST_ERAP_CC_LIBRA = 1,
} GstErapCongestionControl;

#define GST_TYPE_ERAP_CONGESTION_CONTROL (gst_erap_congestion_control_get_type ())
GType gst_erap_congestion_control_get_type (void);
#define GST_TYPE_ERAP_PROTOCOL (gst_erap_protocol_get_type ())
GType gst_erap_protocol_get_type (void);
#define GST_TYPE_ERAP_LIBRA_STATE (gst_erap_libra_state_get_type ())
GType gst_erap_libra_state_get_type (void);

struct _GstErapSink {
  GstBaseSink parent;

  /* properties */
  gchar *host;
  guint port;
  gchar *bind_address;
  guint bind_port;
  guint mtu;
  GstErapCongestionControl cc;
  GstErapLibraParams libra;
  guint64 initial_rate, min_rate, max_rate;
  guint64 max_queue_bytes;
  GstClockTime linger;
  GstClockTime min_rto;
  GstClockTime pacing_quantum;
  GstClockTime scheduler_interval;
  gchar *passphrase, *key;
  GstErapProtocol protocol;
  TwoflowHelloSenderProps hello_props; /* learn-peer, hello-id */
  GstClockTime connect_timeout;

  /* session; lock order: sink lock, then manager lock */
  GMutex lock;
  GCond queue_cond;             /* queue has room / flushing */
  GstErapSender *sender;
  GstErapManager *manager;
  GstErapManagerSession *msession;
  GSocket *socket;
  GSocketAddress *peer;         /* NULL until learnt (learn-peer) */
  struct sockaddr_storage peer_native;  /* for sendmmsg */
  socklen_t peer_native_len;
  gboolean gso;                 /* UDP_SEGMENT works on this path */
  GstClock *clock;
  GstClockID timer;
  GstClockTime timer_time;
  GstClockTime cork_until;      /* no sending before (render's batching) */
  GstClockID linger_id;
  GstClockID connect_id;        /* connect-timeout, until the first ACK */
  gboolean answered;            /* an ACK came */
  guint64 acks_seen;            /* acks-received at the last look */
  GstClockTime last_ack_time;   /* when that count last grew */
  gboolean failed;              /* none came in time: sending stops */
  gboolean failure_posted;      /* ... and its error is on the bus */
  guint64 acks_foreign;         /* plaintext ACKs not from the peer */
  gboolean flushing;
  gboolean render_waiting;      /* render() waits on queue_cond */
  guint64 reactions_seen;
  guint64 send_errors;
  guint64 pending_notify;
  GstErapSenderStats last;      /* stats copy after stop */
  GstErapLibraState last_libra;
  GstErapCrypto *crypto;        /* NULL: plaintext */
  guint8 *seal_buf;             /* SEND_BATCH sealed packets */
  gsize seal_stride;
  gboolean encrypted, crypto_exhausted, auth_warned;
  GstErapCryptoStats last_crypto;
  /* protocol=rap: the session's own socket and ACK thread */
  GSocket *own_socket;
  GThread *ack_thread;
  GCancellable *ack_cancel;
  GstTwoflowHelloLearnerStats last_hello;
  guint64 last_hellos_unknown;
  guint bound_port;
};

GST_ELEMENT_REGISTER_DECLARE (erapsink);

G_END_DECLS

#endif
