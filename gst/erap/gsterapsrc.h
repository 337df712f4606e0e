/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — erapsrc: receives an ERAP stream sent by erapsink. */
#ifndef __GST_ERAP_SRC_H__
#define __GST_ERAP_SRC_H__

#include <gst/gst.h>
#include "twoflowprops.h"
#include <gst/base/gstpushsrc.h>
#include <gio/gio.h>
#include <sys/socket.h>
#include <gst/erap/erap.h>
#include <gst/twoflow/twoflowhello.h>
#include "twoflownet.h"

G_BEGIN_DECLS

#define GST_TYPE_ERAP_SRC (gst_erap_src_get_type ())
G_DECLARE_FINAL_TYPE (GstErapSrc, gst_erap_src, GST, ERAP_SRC, GstPushSrc)

struct _GstErapSrc {
  GstPushSrc parent;

  /* properties */
  gchar *address;
  guint port;
  guint64 max_reorder_bytes;
  GstClockTime linger;
  GstCaps *caps;
  gchar *passphrase, *key;
  GstErapProtocol protocol;
  TwoflowHelloReceiverProps hello_props;        /* hello-*, accept-host */

  GMutex lock;                  /* receiver and counters, for stats */
  GSocket *socket;
  TwoflowCancel cancel;
  GstErapReceiver *receiver;
  GstErapReceiverStats last;
  GSocketAddress *peer;         /* sender, fixed by the first data packet */
  struct sockaddr_storage peer_native;
  TwoflowNetIp accept_ip;       /* before the first packet: from whom */
  gboolean accept_set;
  GQueue ready;                 /* GstBuffers to push */
  guint8 *scratch;
  gboolean eos;
  guint64 foreign, ack_errors;
  gint buffer_size;             /* SO_RCVBUF asked for */
  gint rcvbuf_granted;          /* what the kernel gave */
  guint32 kernel_drops;         /* datagrams it dropped (buffer full) */
  guint64 ack_datagrams;        /* datagrams the ACK records went in */
  GstErapCrypto *crypto;        /* NULL: plaintext */
  GstErapCryptoStats last_crypto;
  gboolean encrypted, auth_warned;
  guint64 auth_warn_pending;
  /* NAT: hellos from our socket (sans-IO core: when) */
  GstTwoflowHello *hello;
  GSocketAddress *hello_dest;
  GstClock *clock;
  guint64 hello_errors;
  GstTwoflowHelloStats last_hello;
};

GST_ELEMENT_REGISTER_DECLARE (erapsrc);

G_END_DECLS

#endif
