/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — a control connection
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_CLIENT_H__
#define __TWOFLOW_SERVER_CLIENT_H__

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include "twoflow-control.h"

G_BEGIN_DECLS

typedef struct _Client Client;

struct _Client
{
  guint id;
  GSocketConnection *conn;
  GIOStream *stream;            /* conn, or the TLS connection over it */
  GInputStream *in;
  GOutputStream *out;
  GCancellable *cancel;
  gchar *peer;
  /* security (docs/security.md): who it is, bounded input */
  gboolean authenticated;
  gchar *identity;              /* token or certificate name; else the peer */
  guint auth_timer;
  TwoflowLineBuffer lines;
  gchar rbuf[4096];
  gboolean closing;
  guint close_idle;
  gboolean handshaken;          /* TLS handshake done (or plaintext) */
  gsize line_len;               /* bytes of the request being handled */
  guint probes;                 /* address-validation probes sent */
  /* replies wait here and are written asynchronously: a client that stops
   * reading fills only its own queue (then it is dropped), never blocks
   * the loop that serves everyone */
  GQueue outq;                  /* GBytes, lines */
  gsize out_offset;             /* bytes of the head already written */
  gsize out_queued;             /* bytes in outq not yet written */
  gboolean writing;
  guint close_timer;            /* closing: the queue's last chance */
  GList *link;                  /* in all_clients, oldest first */
  GSource *first_bytes;         /* TLS: waits for the peer's first bytes */
};

/* the clients, and what the control port counts (STATUS) */
extern guint n_clients;
extern GQueue all_clients;
extern guint64 shed_total, accept_failures;
extern guint64 refused_total;

void client_accept (GSocketConnection * conn, gchar * peer);
void client_send (Client * c, JsonObject * obj);
void client_refuse (Client * c, const gchar * reason);
void client_free (Client * c, const gchar * why);
void twoflow_server_client_init (void);

G_END_DECLS
#endif
