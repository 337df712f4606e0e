/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the control port: accepting (paused, not spinning, when
 * out of descriptors), admitting or refusing connections
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gio/gio.h>
#include <gst/gst.h>
#include "twoflow-control.h"
#include "twoflowtls.h"
#include "twoflow-server-listener.h"
#include "twoflow-server-client.h"
#include "twoflow-server-options.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_listener_debug);
#define GST_CAT_DEFAULT twoflow_server_listener_debug

/* The accept loop (GSocketService would retry a failing accept at once:
 * out of file descriptors, it spins). */
static GSocketListener *listener;
static GCancellable *accept_cancel;
static guint n_rejecting;

static void accept_next (void);
static void accept_one (GSocketConnection * conn);

/* Over --max-connections: one line (over TLS when it is on, written
 * asynchronously so a client that never completes its handshake cannot
 * stall the server), then closed; at most 32 such at a time, the rest
 * closed at once. */
typedef struct
{
  GSocketConnection *conn;
  GIOStream *stream;
  GCancellable *cancel;
  guint timer;
  gchar *line;
} Refusal;

static void
refusal_done (GObject * src, GAsyncResult * res, gpointer data)
{
  Refusal *r = data;

  g_output_stream_write_all_finish (G_OUTPUT_STREAM (src), res, NULL, NULL);
  if (r->timer)
    g_source_remove (r->timer);
  g_io_stream_close (G_IO_STREAM (r->conn), NULL, NULL);
  if (r->stream != G_IO_STREAM (r->conn))
    g_object_unref (r->stream);
  g_object_unref (r->conn);
  g_object_unref (r->cancel);
  g_free (r->line);
  g_free (r);
  n_rejecting--;
}

static gboolean
refusal_timeout (gpointer data)
{
  Refusal *r = data;

  r->timer = 0;
  g_cancellable_cancel (r->cancel);
  return G_SOURCE_REMOVE;
}

static void
refuse_connection (GSocketConnection * conn, const gchar * peer,
    const gchar * reason)
{
  Refusal *r;
  JsonObject *o;
  gchar *text;

  refused_total++;
  if (n_rejecting >= 32) {
    g_io_stream_close (G_IO_STREAM (conn), NULL, NULL);
    return;
  }
  r = g_new0 (Refusal, 1);
  r->conn = g_object_ref (conn);
  r->stream = tls_cert ? twoflow_tls_server_wrap (G_IO_STREAM (conn),
      tls_cert, NULL, NULL) : G_IO_STREAM (conn);
  if (r->stream == NULL)
    r->stream = G_IO_STREAM (conn);
  r->cancel = g_cancellable_new ();
  /* glib-networking runs handshakes in a thread pool, blocking on the
   * socket: its timeout frees the thread of a peer that never sends */
  if (tls_cert)
    g_socket_set_timeout (g_socket_connection_get_socket (conn), 5);
  o = json_object_new ();
  json_object_set_boolean_member (o, "ok", FALSE);
  json_object_set_string_member (o, "error", reason);
  text = twoflow_json_to_line (o);
  json_object_unref (o);
  r->line = g_strconcat (text, "\n", NULL);
  g_free (text);
  r->timer = g_timeout_add_seconds (5, refusal_timeout, r);
  n_rejecting++;
  g_output_stream_write_all_async (g_io_stream_get_output_stream (r->stream),
      r->line, strlen (r->line), G_PRIORITY_DEFAULT, r->cancel, refusal_done,
      r);
  if (refused_total <= 10 || refused_total % 100 == 0)
    g_print ("connection from %s refused: %s (%" G_GUINT64_FORMAT
        " refused)\n", peer, reason, refused_total);
}

static gboolean
auth_required (void)
{
  return tokens != NULL || tls_client_ca != NULL;
}

/* Whether a new connection from @peer may take a slot (else it was
 * refused). Strangers cannot crowd out proxies: one address holds at most
 * --max-pending-per-address connections that have not authenticated, and
 * when the table is full the oldest of those is shed for the newcomer;
 * only authenticated clients fill it for good. */
static gboolean
connection_admit (GSocketConnection * conn, const gchar * peer)
{
  GList *l;
  Client *oldest = NULL;
  guint pending_here = 0;

  if (!auth_required ())
    goto table;
  for (l = all_clients.head; l; l = l->next) {
    Client *c = l->data;
    if (c->authenticated || c->closing)
      continue;
    if (oldest == NULL)
      oldest = c;
    if (g_str_equal (c->peer, peer))
      pending_here++;
  }
  if (pending_here >= (guint) opt_max_pending_per_address) {
    gchar *why = g_strdup_printf ("%u connections from %s have not "
        "authenticated (--max-pending-per-address)", pending_here, peer);
    refuse_connection (conn, peer, why);
    g_free (why);
    return FALSE;
  }
table:
  if (n_clients < (guint) opt_max_connections)
    return TRUE;
  if (oldest) {
    shed_total++;
    if (shed_total <= 10 || shed_total % 100 == 0)
      g_print ("client %u (%s): shed, the connection table is full and it "
          "has not authenticated (%" G_GUINT64_FORMAT " shed)\n", oldest->id,
          oldest->peer, shed_total);
    client_free (oldest, "shed");
    return TRUE;
  }
  {
    gchar *why = g_strdup_printf ("server busy: %u control connections "
        "(--max-connections)", n_clients);
    refuse_connection (conn, peer, why);
    g_free (why);
  }
  return FALSE;
}

static gboolean
accept_resume_cb (gpointer data)
{
  accept_next ();
  return G_SOURCE_REMOVE;
}

static void
accept_cb (GObject * src, GAsyncResult * res, gpointer data)
{
  GError *err = NULL;
  GSocketConnection *conn =
      g_socket_listener_accept_finish (G_SOCKET_LISTENER (src), res, NULL,
      &err);

  if (conn) {
    accept_one (conn);
    g_object_unref (conn);
    accept_next ();
    return;
  }
  if (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
    g_error_free (err);
    return;
  }
  /* EMFILE, ENFILE, ENOBUFS: the connection waits in the backlog while
   * clients close and free descriptors */
  accept_failures++;
  if (accept_failures <= 10 || accept_failures % 100 == 0)
    g_print ("accept failed: %s; accepting again in 250 ms (%"
        G_GUINT64_FORMAT " failures)\n", err->message, accept_failures);
  g_error_free (err);
  g_timeout_add (250, accept_resume_cb, NULL);
}

static void
accept_next (void)
{
  g_socket_listener_accept_async (listener, accept_cancel, accept_cb, NULL);
}

/* A new connection: admitted (a client) or refused */
static void
accept_one (GSocketConnection * conn)
{
  GSocketAddress *addr = g_socket_connection_get_remote_address (conn, NULL);
  gchar *peer;

  if (addr && G_IS_INET_SOCKET_ADDRESS (addr))
    peer = g_inet_address_to_string (g_inet_socket_address_get_address
        (G_INET_SOCKET_ADDRESS (addr)));
  else
    peer = g_strdup ("127.0.0.1");
  g_clear_object (&addr);
  if (!connection_admit (conn, peer)) {
    g_free (peer);
    return;
  }
  client_accept (conn, peer);
}

/* Listens on --address:--port and accepts from the main loop */
gboolean
listener_start (GError ** error)
{
  GError *err = NULL;
  GSocketAddress *addr;
  GSocketAddress *effective = NULL;

  GST_DEBUG_CATEGORY_INIT (twoflow_server_listener_debug,
      "twoflow-server-listener", 0,
      "twoflow-server: the control port, admission of connections");
  listener = g_socket_listener_new ();
  /* a burst of connections waits in the kernel's queue instead of being
   * dropped (GLib's default backlog is 10) */
  g_socket_listener_set_backlog (listener, 128);
  addr = g_inet_socket_address_new_from_string (opt_address ? opt_address :
      "0.0.0.0", opt_port);
  if (addr == NULL || !g_socket_listener_add_address (listener, addr,
          G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL, &effective,
          &err)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
        "cannot listen on %s:%d: %s", opt_address ? opt_address : "0.0.0.0",
        opt_port, err ? err->message : "bad address");
    g_clear_error (&err);
    g_clear_object (&addr);
    return FALSE;
  }
  accept_cancel = g_cancellable_new ();
  accept_next ();
  g_print ("twoflow-server: serving %s on control port %u (%s%s%s)\n",
      opt_dir,
      g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (effective)),
      tls_cert ? "TLS" : "plaintext, --insecure",
      tokens ? ", tokens" : "", tls_client_ca ? ", client certificates" : "");
  g_object_unref (addr);
  g_object_unref (effective);
  return TRUE;
}

void
listener_stop (void)
{
  g_cancellable_cancel (accept_cancel);
  g_socket_listener_close (listener);
  g_object_unref (listener);
  g_object_unref (accept_cancel);
}
