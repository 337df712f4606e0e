/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ctcpsrc: the receiving end of a cTCP flow, with TLS
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __GST_CTCP_SRC_H__
#define __GST_CTCP_SRC_H__

#include <gst/gst.h>
#include "twoflowprops.h"
#include <gst/base/gstpushsrc.h>
#include <gio/gio.h>

G_BEGIN_DECLS

#define GST_TYPE_CTCP_SRC (gst_ctcp_src_get_type ())
G_DECLARE_FINAL_TYPE (GstCtcpSrc, gst_ctcp_src, GST, CTCP_SRC, GstPushSrc)

struct _GstCtcpSrc {
  GstPushSrc parent;

  /* properties (object lock) */
  gchar *host;
  guint port;
  gboolean listen;
  gchar *accept_host;
  guint current_port;
  GstClockTime timeout;
  TwoflowTlsProps tls_props;    /* tls, tls-ca-file, tls-pin, tls-token */
  gchar *tls_ca_path;           /* tls-ca-file made absolute at start */
  gchar *tls_server_name;

  /* the connection (streaming thread; start/stop) */
  GCancellable *cancellable;
  GSocket *listener;
  GSocket *socket;
  GIOStream *conn;
  GIOStream *tls_conn;
  GInputStream *in;

  /* stats (object lock) */
  guint64 bytes;
  guint refused;
  gchar *peer;
  gchar *tls_protocol;
  gchar *tls_suite;
};

GST_ELEMENT_REGISTER_DECLARE (ctcpsrc);

G_END_DECLS

#endif
