/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rudpsrc: RTP/UDP receiver with receiver-driven rate levels */
#ifndef __GST_RUDP_SRC_H__
#define __GST_RUDP_SRC_H__

#include <gst/gst.h>
#include "twoflowprops.h"
#include <gst/base/gstpushsrc.h>
#include <gio/gio.h>
#include <gst/rudp/rudp.h>
#include <gst/twoflow/twoflowhello.h>
#include "twoflownet.h"
#include "gstrudpsrtp.h"

G_BEGIN_DECLS

#define GST_TYPE_RUDP_SRC (gst_rudp_src_get_type ())
G_DECLARE_FINAL_TYPE (GstRudpSrc, gst_rudp_src, GST, RUDP_SRC, GstPushSrc)

struct _GstRudpSrc {
  GstPushSrc parent;

  /* properties (object lock) */
  gchar *address;
  guint port;
  GstCaps *caps;
  gint buffer_size;
  gboolean feedback;
  gboolean retransmission;      /* NACK what rtpjitterbuffer asks for */
  GstRudpLevels levels;
  GstClockTime min_interval;
  GstClockTime feedback_interval;
  GstClockTime initial_rtt;
  guint increase_rtts;
  guint increase_packets;
  GstClockTime increase_time;
  gboolean tcp_friendly;
  gint law;                     /* GstRudpLaw */
  gchar *key;                   /* SRTP master key and salt, hex */
  GstRudpSrtpCipher srtp_cipher;
  GstRudpSrtpAuth srtp_auth;
  TwoflowHelloReceiverProps hello_props;        /* hello-*, accept-host */

  /* streaming */
  GSocket *socket;
  TwoflowCancel cancel;

  GMutex lock;                  /* the core and what follows */
  GstRudpReceiver *receiver;    /* kept after stop (stats) */
  GSocketAddress *sender;       /* where the RTP comes from */
  guint32 ssrc;                 /* our RTCP SSRC */
  guint32 media_ssrc;
  guint64 feedback_sent;
  guint64 nacks_sent;           /* Generic NACKs (one per request) */
  guint64 rtx_recovered;        /* NACKed packets that arrived */
  guint64 notices_received;
  guint64 rtcp_invalid;
  guint64 non_rtp;
  GstRudpSrtp *srtp;            /* NULL in plaintext mode */
  guint64 auth_failures;        /* SRTP/SRTCP failing authentication */
  guint64 replayed;             /* authentic but replayed */
  guint64 foreign_rtcp;         /* plaintext notices not from the sender */
  guint64 foreign_packets;      /* RTP etc. not from the sender */
  TwoflowNetIp accept_ip;       /* accept-host's (or hello-host's) address */
  gboolean accept_set;
  gboolean sender_locked;       /* plaintext: RTP came; its source only */
  gint bound_port;
  gint rcvbuf_granted;           /* the receive buffer the kernel gave */
  guint32 kernel_drops;         /* datagrams it dropped (buffer full) */
  gint draining;                /* EOS asked: read what is there, then end */
  guint8 *scratch;              /* receive buffer (streaming thread) */

  /* the timer thread: now = clock; core(now); wait(next_wakeup()) */
  GstClock *clock;
  GThread *timer;
  GCond timer_cond;             /* nothing to wait for until a packet */
  GstClockID timer_id;
  GstClockTime timer_at;
  gboolean timer_running;
  /* NAT: hellos from our socket, on the timer thread (sans-IO core) */
  GstTwoflowHello *hello;
  GSocketAddress *hello_dest;
  guint64 hello_errors;
  GstTwoflowHelloStats last_hello;
};

GST_ELEMENT_REGISTER_DECLARE (rudpsrc);

G_END_DECLS

#endif
