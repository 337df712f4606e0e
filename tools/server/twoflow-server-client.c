/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — a control connection: TLS, AUTH, bounded lines in,
 * replies out (queued, written asynchronously), each request dispatched
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
#include <gst/gst.h>
#include "twoflow-protocol.h"
#include "twoflowtls.h"
#include "twoflow-server-client.h"
#include "twoflow-server-validation.h"
#include "twoflow-server-catalog.h"
#include "twoflow-server-schedule.h"
#include "twoflow-server-media.h"
#include "twoflow-server-pool.h"
#include "twoflow-server-options.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_client_debug);
#define GST_CAT_DEFAULT twoflow_server_client_debug

guint n_clients;
GQueue all_clients;                     /* Client, oldest first */
guint64 shed_total, accept_failures;
guint64 refused_total;
static guint next_client_id = 1;

static void client_close (Client * c, const gchar * why);
static void client_flush (Client * c);
static gboolean client_send_and_close_cb (gpointer data);
static void read_next (Client * c);

/* Queues one line for @c (written in order, asynchronously). Over
 * --max-output bytes waiting, the client is not reading: it is closed. */
void
client_send (Client * c, JsonObject * obj)
{
  gchar *text, *line;
  gsize len;

  if (c == NULL || c->out == NULL)
    return;
  text = twoflow_json_to_line (obj);
  line = g_strconcat (text, "\n", NULL);
  g_free (text);
  len = strlen (line);
  if (c->out_queued + len > (gsize) opt_max_output) {
    g_free (line);
    if (!c->closing) {
      gchar *why = g_strdup_printf ("not reading its replies (%"
          G_GSIZE_FORMAT " bytes waiting, --max-output)", c->out_queued);
      client_close (c, why);
      g_free (why);
    }
    return;
  }
  g_queue_push_tail (&c->outq, g_bytes_new_take (line, len));
  c->out_queued += len;
  client_flush (c);
}

/* The one datagram a third address gets without proof. */
static void
validation_probe (Client * c, const gchar * host, gint port,
    const gchar * token)
{
  gchar *payload = g_strdup_printf (VALIDATION_PROBE_PREFIX "%s\n", token);
  GInetAddress *ia = g_inet_address_new_from_string (host);
  GSocketAddress *sa;
  GSocket *sock;

  sa = g_inet_socket_address_new (ia, port);
  sock = g_socket_new (g_inet_address_get_family (ia), G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  if (sock && g_socket_send_to (sock, sa, payload, strlen (payload), NULL,
          NULL) > 0) {
    c->probes++;
    g_print ("client %u: address-validation probe (%" G_GSIZE_FORMAT
        " bytes, request %" G_GSIZE_FORMAT ") to %s:%d\n", c->id,
        strlen (payload), c->line_len, host, port);
  }
  g_clear_object (&sock);
  g_object_unref (sa);
  g_object_unref (ia);
  g_free (payload);
}

/* PLAY host differs from the control peer: allowed with a valid
 * host_token, else (at most) one probe and a refusal. */
static gboolean
host_allowed (Client * c, const TwoflowPlayRequest * req, const gchar * host,
    GError ** error)
{
  gint port = req->enhanced_port;
  GInetAddress *ia = g_inet_address_new_from_string (host);
  gchar *tok;
  gsize probe_len;
  const gchar *why;

  if (req->flows == TWOFLOW_FLOWS_ESSENTIAL || port <= 0)
    port = req->essential_port;
  if (!ia || port <= 0 || port > 65535) {
    g_clear_object (&ia);
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
        "PLAY host %s refused: media go only to the control peer %s "
        "(no reflection), or to an address (literal IP) that proves it "
        "asked, on the media port it names", host, c->peer);
    return FALSE;
  }
  g_object_unref (ia);
  if (validation_check (c->identity, host, port, req->host_token)) {
    g_print ("client %u (%s): PLAY to %s:%d, validated by its token\n",
        c->id, c->identity, host, port);
    return TRUE;
  }
  tok = validation_token (c->identity, host, port,
      g_get_real_time () / G_USEC_PER_SEC + VALIDATION_LIFETIME);
  probe_len = strlen (VALIDATION_PROBE_PREFIX) + strlen (tok) + 1;
  /* no amplification: the probe is no larger than the request */
  if (c->probes >= VALIDATION_MAX_PROBES)
    why = "no validation token sent (too many probes on this connection)";
  else if (probe_len > c->line_len)
    why = "no validation token sent (the request is shorter than the probe)";
  else {
    validation_probe (c, host, port, tok);
    why = "a validation token was sent there over UDP: PLAY again with it "
        "as host_token";
  }
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
      "PLAY host %s refused: media go only to the control peer %s (no "
      "reflection) unless %s:%d proves it asked; %s%s", host, c->peer, host,
      port, req->host_token ? "host_token invalid or expired; " : "", why);
  g_free (tok);
  return FALSE;
}

static void
client_authenticated (Client * c, const gchar * name)
{
  c->authenticated = TRUE;
  g_free (c->identity);
  c->identity = g_strdup (name);
  if (c->auth_timer) {
    g_source_remove (c->auth_timer);
    c->auth_timer = 0;
  }
  g_print ("client %u (%s): authenticated as %s\n", c->id, c->peer, name);
}

/* One line to a client, then the connection closes (its sessions end). */
void
client_refuse (Client * c, const gchar * reason)
{
  JsonObject *r = json_object_new ();

  json_object_set_boolean_member (r, "ok", FALSE);
  json_object_set_string_member (r, "error", reason);
  /* a client that sent nothing may not have completed its TLS handshake:
   * a (blocking) write would wait for it; it is closed without the line */
  if (c->handshaken)
    client_send (c, r);
  json_object_unref (r);
  refused_total++;
  g_print ("client %u (%s): refused: %s\n", c->id, c->peer, reason);
  client_close (c, NULL);
}

void
client_free (Client * c, const gchar * why)
{
  /* strangers' connections (floods) are counted, not logged one by one */
  if (c->authenticated)
    g_print ("client %u (%s): %s; tearing down %u session(s)\n", c->id,
        c->peer, why, session_pool_n_owned (c));
  else
    GST_INFO ("client %u (%s): %s", c->id, c->peer, why);
  session_pool_destroy_owned (c, "client gone");
  if (c->auth_timer)
    g_source_remove (c->auth_timer);
  if (c->close_idle)
    g_source_remove (c->close_idle);
  if (c->close_timer)
    g_source_remove (c->close_timer);
  if (c->first_bytes) {
    g_source_destroy (c->first_bytes);
    g_source_unref (c->first_bytes);
  }
  /* every pending read and write sees the cancellation and leaves c alone */
  g_cancellable_cancel (c->cancel);
  g_object_unref (c->cancel);
  c->in = NULL;
  c->out = NULL;
  /* the socket only: a synchronous close of a TLS connection whose
   * handshake is still pending in the (cancelled) read would wait for it
   * in this very loop; the peer sees the end without close_notify */
  g_io_stream_close (G_IO_STREAM (c->conn), NULL, NULL);
  if (c->stream != G_IO_STREAM (c->conn))
    g_object_unref (c->stream);
  g_object_unref (c->conn);
  twoflow_line_buffer_clear (&c->lines);
  g_queue_clear_full (&c->outq, (GDestroyNotify) g_bytes_unref);
  g_queue_delete_link (&all_clients, c->link);
  n_clients--;
  g_free (c->identity);
  g_free (c->peer);
  g_free (c);
}

static void
handle_auth (Client * c, const TwoflowRequest * req)
{
  const gchar *name = c->authenticated ? c->identity :
      twoflow_tokens_check (tokens, req->token);
  JsonObject *r;

  if (name == NULL) {
    client_refuse (c, tokens ? "unauthenticated: unknown token" :
        "unauthenticated: this server takes client certificates only");
    return;
  }
  if (!c->authenticated)
    client_authenticated (c, name);
  r = twoflow_reply_new (req, TRUE);
  json_object_set_string_member (r, "identity", c->identity);
  client_send (c, r);
  json_object_unref (r);
}

static JsonObject *
handle_play (Client * c, const TwoflowRequest * req, GError ** err)
{
  const gchar *host = req->play.host;
  TwoflowPlayReply pr;
  Session *s;
  JsonObject *r;

  /* No reflection: media go only to the authenticated control peer (or
   * an address that proved it asked: host_allowed) */
  if (host && !twoflow_same_address (host, c->peer)
      && !host_allowed (c, &req->play, host, err))
    return NULL;
  s = session_new (c, c->identity, c->peer, &req->play, err);
  if (!s)
    return NULL;
  twoflow_play_reply_init (&pr);
  pr.session = s->id;
  pr.lead = s->lead;
  /* where it starts: the key frame at or before the asked start, and
   * what the session sends of the video from there */
  pr.start = s->start;
  if (s->start_pts) {
    pr.start_frames = s->start_frames;
    pr.start_audio_records = s->start_audio;
  }
  pr.enhanced_start = s->enh_start;
  /* the essential flow's start-up ramp, bit/s (0: none) */
  pr.startup_rate = s->startup_rate;
  pr.smoothing = s->smooth;
  /* the proxy's playout buffer for the enhanced flow, s */
  pr.playout_depth = s->smooth ? schedule_playout (s->sched) : 0;
  /* NAT: the proxy connects to this port (cTCP/TCP) or says hello
   * to it (ERAP), and says hello to enhanced_port (rUDP) */
  if (s->nat && s->ess_pipe)
    pr.essential_port = s->ess_port;
  if (s->nat && s->enh_pipe)
    pr.enhanced_port = s->enh_port;
  if (s->nat)
    pr.hello_id = s->hello_id;
  r = twoflow_reply_new (req, TRUE);
  video_info_to_json (s->info, r);
  video_info_rates_to_json (s->info, r, s->segment_duration, s->sched);
  /* (after the video's schedule: its playout_depth and startup_rate are
   * a session's without a prefix) */
  twoflow_play_reply_to_json (&pr, r);
  return r;
}

static JsonObject *
handle_info (const TwoflowRequest * req, GError ** err)
{
  const TwoflowVideoRequest *q = &req->info;
  VideoInfo *v = video_scan (q->video, q->policy_ip, q->video_track,
      q->audio_track, err);
  JsonObject *r;

  if (!v)
    return NULL;
  r = twoflow_reply_new (req, TRUE);
  video_info_to_json (v, r);
  video_info_rates_to_json (v, r, q->segment_duration, NULL);
  return r;
}

static JsonObject *
handle_list (const TwoflowRequest * req, GError ** err)
{
  GDir *d = g_dir_open (opt_dir, 0, err);
  JsonArray *a, *checking;
  JsonObject *bad, *r, *codecs;
  const gchar *n;
  gchar *why, *codec;
  gboolean unknown;

  if (!d)
    return NULL;
  a = json_array_new ();
  bad = json_object_new ();
  checking = json_array_new ();
  codecs = json_object_new ();
  while ((n = g_dir_read_name (d)))
    if (n[0] != '.') {
      json_array_add_string_element (a, n);
      /* the catalog: which of them cannot play, and why (or not known
       * yet) */
      if ((why = catalog_reason (n, &unknown, &codec)))
        json_object_set_string_member (bad, n, why);
      else if (unknown)
        json_array_add_string_element (checking, n);
      /* the video codec (the proxy's page tells which it cannot show) */
      if (codec)
        json_object_set_string_member (codecs, n, codec);
      g_free (why);
      g_free (codec);
    }
  g_dir_close (d);
  r = twoflow_reply_new (req, TRUE);
  json_object_set_array_member (r, "videos", a);
  json_object_set_object_member (r, "unsupported", bad);
  json_object_set_array_member (r, "checking", checking);
  json_object_set_object_member (r, "codecs", codecs);
  return r;
}

static JsonObject *
handle_session_request (Client * c, const TwoflowRequest * req,
    GError ** err)
{
  Session *s = session_lookup_owned (c->identity, req->session, err);
  JsonObject *r;

  if (!s)
    return NULL;
  r = twoflow_reply_new (req, TRUE);
  if (req->kind == TWOFLOW_REQUEST_TEARDOWN)
    session_destroy (s, "teardown");
  else
    json_object_set_object_member (r, "stats", session_stats (s));
  return r;
}

static JsonObject *
handle_status (const TwoflowRequest * req)
{
  JsonObject *r = twoflow_reply_new (req, TRUE);

  json_object_set_int_member (r, "sessions", session_pool_size ());
  json_object_set_int_member (r, "sessions_total", session_pool_total ());
  json_object_set_int_member (r, "clients", n_clients);
  json_object_set_int_member (r, "refused", refused_total);
  json_object_set_int_member (r, "shed", shed_total);
  json_object_set_int_member (r, "accept_failures", accept_failures);
  return r;
}

/* One request: AUTH first (or a client certificate), then any command;
 * every request but AUTH has one reply, ok or its error. */
static void
handle_request (Client * c, const TwoflowRequest * req)
{
  GError *err = NULL;
  JsonObject *r = NULL;

  if (req->kind == TWOFLOW_REQUEST_AUTH) {
    handle_auth (c, req);
    return;
  }
  if (!c->authenticated) {
    client_refuse (c, "unauthenticated: the first request must be AUTH "
        "with a token (or connect with a client certificate)");
    return;
  }
  if (req->invalid)
    err = g_error_copy (req->invalid);
  else if (req->kind == TWOFLOW_REQUEST_PLAY)
    r = handle_play (c, req, &err);
  else if (req->kind == TWOFLOW_REQUEST_INFO)
    r = handle_info (req, &err);
  else if (req->kind == TWOFLOW_REQUEST_LIST)
    r = handle_list (req, &err);
  else if (req->kind == TWOFLOW_REQUEST_TEARDOWN
      || req->kind == TWOFLOW_REQUEST_STATS)
    r = handle_session_request (c, req, &err);
  else if (req->kind == TWOFLOW_REQUEST_STATUS)
    r = handle_status (req);
  else
    g_set_error (&err, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "unknown command '%s'", req->cmd);
  if (r == NULL) {
    r = twoflow_reply_new_error (req, err ? err->message : "failed");
    g_print ("client %u: %s failed: %s\n", c->id, req->cmd,
        err ? err->message : "?");
  }
  g_clear_error (&err);
  client_send (c, r);
  json_object_unref (r);
}

static void
client_line (Client * c, gchar * line)
{
  GError *err = NULL;
  TwoflowRequest *req;

  c->line_len = strlen (line) + 1;
  g_strstrip (line);
  if (*line == '\0')
    return;
  /* a client certificate signed by --tls-client-ca authenticates */
  if (!c->authenticated && tls_client_ca && G_IS_TLS_CONNECTION (c->stream)) {
    GTlsCertificate *pc =
        g_tls_connection_get_peer_certificate (G_TLS_CONNECTION (c->stream));
    if (pc) {
      gchar *cn = twoflow_tls_subject_cn (pc);
      gchar *id = g_strdup_printf ("cert:%s", cn ? cn : "?");
      client_authenticated (c, id);
      g_free (id);
      g_free (cn);
    }
  }
  req = twoflow_request_parse (line, &err);
  if (req) {
    handle_request (c, req);
    twoflow_request_free (req);
  } else if (!c->authenticated) {
    client_refuse (c, "unauthenticated: not a request");
    g_clear_error (&err);
  } else {
    JsonObject *r = twoflow_reply_new_error (NULL, err->message);
    client_send (c, r);
    json_object_unref (r);
    g_clear_error (&err);
  }
}

static void
read_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  Client *c = user_data;
  GError *err = NULL;
  gssize n = g_input_stream_read_finish (G_INPUT_STREAM (source), res, &err);
  gchar *line;

  if (n < 0 && g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
    g_clear_error (&err);       /* c is gone */
    return;
  }
  if (c->closing) {
    g_clear_error (&err);
    return;
  }
  if (n <= 0) {
    client_free (c, err ? err->message : "control connection closed");
    g_clear_error (&err);
    return;
  }
  if (!twoflow_line_buffer_append (&c->lines, c->rbuf, n)) {
    gchar *why = g_strdup_printf ("line too long (over %d bytes, "
        "--max-line)", opt_max_line);
    client_refuse (c, why);
    g_free (why);
    return;
  }
  while (!c->closing && (line = twoflow_line_buffer_pop (&c->lines))) {
    client_line (c, line);
    g_free (line);
  }
  if (!c->closing)
    read_next (c);
}

static void
read_next (Client * c)
{
  g_input_stream_read_async (c->in, c->rbuf, sizeof (c->rbuf),
      G_PRIORITY_DEFAULT, c->cancel, read_cb, c);
}

static void
handshake_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  Client *c = user_data;
  GError *err = NULL;

  if (!g_tls_connection_handshake_finish (G_TLS_CONNECTION (source), res,
          &err)) {
    if (!g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)
        && !c->closing)
      client_free (c, err->message);    /* else c is gone or going */
    g_clear_error (&err);
    return;
  }
  if (c->closing)
    return;
  c->handshaken = TRUE;
  g_socket_set_timeout (g_socket_connection_get_socket (c->conn), 0);
  read_next (c);
}

static gboolean
client_send_and_close_cb (gpointer data)
{
  Client *c = data;

  c->close_idle = 0;
  c->close_timer = 0;
  client_free (c, "closed");
  return G_SOURCE_REMOVE;
}

typedef struct
{
  Client *c;                    /* valid while cancel is not cancelled */
  GCancellable *cancel;
} ClientWrite;

static void
write_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  ClientWrite *w = user_data;
  GError *err = NULL;
  gssize n = g_output_stream_write_finish (G_OUTPUT_STREAM (source), res,
      &err);
  gboolean gone = g_cancellable_is_cancelled (w->cancel);
  Client *c = w->c;

  g_object_unref (w->cancel);
  g_free (w);
  if (gone) {                   /* c is freed */
    g_clear_error (&err);
    return;
  }
  c->writing = FALSE;
  if (n < 0) {
    GST_INFO ("client %u: send failed: %s", c->id, err->message);
    g_clear_error (&err);
    g_queue_clear_full (&c->outq, (GDestroyNotify) g_bytes_unref);
    c->out_queued = c->out_offset = 0;
    client_close (c, "send failed");
    return;
  }
  c->out_offset += n;
  c->out_queued -= n;
  if (c->out_offset == g_bytes_get_size (g_queue_peek_head (&c->outq))) {
    g_bytes_unref (g_queue_pop_head (&c->outq));
    c->out_offset = 0;
  }
  client_flush (c);
}

static void
client_flush (Client * c)
{
  ClientWrite *w;
  GBytes *head;
  gsize len;
  const guint8 *data;

  if (c->writing)
    return;
  head = g_queue_peek_head (&c->outq);
  if (head == NULL) {
    /* all written: a closing client goes now */
    if (c->closing && c->close_timer) {
      g_source_remove (c->close_timer);
      c->close_timer = 0;
      c->close_idle = g_idle_add (client_send_and_close_cb, c);
    }
    return;
  }
  data = g_bytes_get_data (head, &len);
  w = g_new (ClientWrite, 1);
  w->c = c;
  w->cancel = g_object_ref (c->cancel);
  c->writing = TRUE;
  g_output_stream_write_async (c->out, data + c->out_offset,
      len - c->out_offset, G_PRIORITY_DEFAULT, c->cancel, write_cb, w);
}

/* Closes @c once its queued lines are written (at most 2 s from now),
 * from the main loop: callers may still hold @c. @why: logged, or NULL. */
static void
client_close (Client * c, const gchar * why)
{
  if (c->closing)
    return;
  c->closing = TRUE;
  if (why)
    g_print ("client %u (%s): closing: %s\n", c->id, c->peer, why);
  if (c->writing || !g_queue_is_empty (&c->outq))
    c->close_timer = g_timeout_add_seconds (2, client_send_and_close_cb, c);
  else
    c->close_idle = g_idle_add (client_send_and_close_cb, c);
}

static gboolean
auth_timeout_cb (gpointer data)
{
  Client *c = data;

  c->auth_timer = 0;
  client_refuse (c, "unauthenticated: no AUTH in time");
  return G_SOURCE_REMOVE;
}

/* The socket of a TLS client became readable (or the client is gone: the
 * source is cancelled with it). */
static gboolean
first_bytes_cb (GSocket * socket, GIOCondition cond, gpointer data)
{
  Client *c = data;

  GError *err = NULL;

  g_source_unref (c->first_bytes);
  c->first_bytes = NULL;
  if (c->closing)
    return G_SOURCE_REMOVE;
  if (g_socket_get_available_bytes (socket) <= 0) {
    client_free (c, "closed before TLS");
    return G_SOURCE_REMOVE;
  }
  /* the handshake (blocking on the socket in its thread) ends within
   * --auth-timeout; reset at the first request */
  g_socket_set_timeout (socket, opt_auth_timeout);
  c->stream = twoflow_tls_server_wrap (G_IO_STREAM (c->conn), tls_cert,
      tls_client_ca, &err);
  if (c->stream == NULL) {
    c->stream = G_IO_STREAM (c->conn);
    client_free (c, err->message);
    g_clear_error (&err);
    return G_SOURCE_REMOVE;
  }
  c->in = g_io_stream_get_input_stream (c->stream);
  c->out = g_io_stream_get_output_stream (c->stream);
  g_tls_connection_handshake_async (G_TLS_CONNECTION (c->stream),
      G_PRIORITY_DEFAULT, c->cancel, handshake_cb, c);
  return G_SOURCE_REMOVE;
}

/* A client of an admitted connection from @peer (taken) */
void
client_accept (GSocketConnection * conn, gchar * peer)
{
  Client *c;

  c = g_new0 (Client, 1);
  c->id = next_client_id++;
  c->conn = g_object_ref (conn);
  c->stream = G_IO_STREAM (conn);
  n_clients++;
  g_queue_push_tail (&all_clients, c);
  c->link = all_clients.tail;
  c->cancel = g_cancellable_new ();
  c->in = g_io_stream_get_input_stream (c->stream);
  c->out = g_io_stream_get_output_stream (c->stream);
  c->peer = peer;
  twoflow_line_buffer_init (&c->lines, opt_max_line);
  if (tokens == NULL && tls_client_ca == NULL) {
    /* --insecure without --tokens: anyone (lab use) */
    c->authenticated = TRUE;
    c->identity = g_strdup (c->peer);
  } else {
    c->identity = g_strdup (c->peer);
    c->auth_timer = g_timeout_add_seconds (opt_auth_timeout, auth_timeout_cb,
        c);
  }
  GST_INFO ("client %u (%s): connected%s", c->id, c->peer,
      tls_cert ? " (TLS)" : "");
  if (tls_cert) {
    /* glib-networking runs a handshake in a pool thread that blocks on the
     * socket: it starts once the peer has sent something, so silent
     * connections cost neither a thread nor a TLS session (a flood of
     * them starved the pool and slowed accepting) */
    c->first_bytes = g_socket_create_source (g_socket_connection_get_socket
        (conn), G_IO_IN | G_IO_ERR | G_IO_HUP, NULL);
    g_source_set_callback (c->first_bytes, (GSourceFunc) (GCallback)
        first_bytes_cb, c, NULL);
    g_source_attach (c->first_bytes, NULL);
  } else {
    c->handshaken = TRUE;
    read_next (c);
  }
  return;
}

/* The pool's events for a client */
static void
client_send_event (gpointer owner, JsonObject * obj)
{
  client_send (owner, obj);
}

void
twoflow_server_client_init (void)
{
  SessionPoolCallbacks cb = { client_send_event };

  GST_DEBUG_CATEGORY_INIT (twoflow_server_client_debug,
      "twoflow-server-client", 0,
      "twoflow-server: control connections, AUTH, requests");
  session_pool_set_callbacks (&cb);
}
