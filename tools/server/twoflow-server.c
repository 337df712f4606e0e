/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the central server of the staggered two-flow VoD system
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * Serves a directory of videos (any container parsebin demuxes: MP4/MOV,
 * MKV/WebM, MPEG-TS/PS, elementary streams) with MPEG-1/2 or H.264 video
 * and any audio (the audio travels in the essential flow), and frame traces (*.txt, replayed
 * by twoflowtracesrc). Proxies ask for a video on a TCP control channel
 * (JSON lines, docs/system.md); per session two pipelines read the video:
 *
 *   essential: filesrc ! parsebin ! twoflowsplit ! queue ! ctcpsink|erapsink
 *              (not live: the transport's segment pacing makes it lead)
 *   enhanced:  filesrc ! parsebin ! ratetranscoder ! twoflowsplit ! queue
 *              ! rtpgstpay ! rudpsink sync=true          (real time)
 *
 * One session rate controller per session (gst-libs/gst/ratecontrol/
 * sessionrate.h, --rate-controller session, the default) reads both
 * transports (the cTCP socket's RTT, retransmissions and acked bytes; the
 * rUDP receiver's reports) every --rc-interval ms and sets the
 * transcoder's target-bitrate. With --rate-controller events (the
 * papers' law) the essential transport's congestion element messages are
 * forwarded to the enhanced path's ratetranscoder as upstream
 * GstNetworkCongestion events instead, and it backs off on each. One
 * GMainLoop runs every session; a client whose control connection closes
 * has its sessions torn down.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <gst/gst.h>
#include <gst/tag/tag.h>
#include <gst/twoflow/twoflowframe.h>
#include <gst/twoflow/twoflowprofile.h>
#include <gst/twoflow/twoflowsmoothing.h>
#include <gst/twoflow/twoflowstartup.h>
#include <gst/twoflow/networkcongestion.h>
#include <gst/ratecontrol/sessionrate.h>
#include "twoflow-protocol.h"
#include "twoflow-auth.h"
#include "twoflow-tls.h"
#include <sys/random.h>
#include "twoflow-config.h"
#include "twoflow-daemon.h"
#include "twoflow-log.h"
#include "twoflow-server-options.h"
#include "twoflow-server-source.h"
#include "twoflow-server-catalog.h"
#include "twoflow-server-schedule.h"
#include "twoflow-server-session.h"
#include "twoflow-server-ratectl.h"
#include "twoflow-server-media.h"
#include "twoflow-server-pool.h"
#include "twoflow-server-web.h"

GST_DEBUG_CATEGORY_STATIC (server_debug);
#define GST_CAT_DEFAULT server_debug


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

static guint n_clients, n_rejecting;
static GQueue all_clients;              /* Client, oldest first */
static guint64 shed_total, accept_failures;
static guint64 refused_total;

static guint next_client_id = 1;


/* ---------------------------------------------------------- media input */


/* ---------------------------------------------------------------- videos */

/* -------------------------------------------------------------- sessions */

static void client_close (Client * c, const gchar * why);
static void client_flush (Client * c);

/* Queues one line for @c (written in order, asynchronously). Over
 * --max-output bytes waiting, the client is not reading: it is closed. */
static void
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


/* ------------------------------------------------- session rate control */


/* Address validation (docs/security.md, "No reflection"): media may go to
 * another address than the control peer's only if that address proves it
 * asked. The server sends a token to it over the media path (one UDP
 * datagram to the PLAY's enhanced port, or essential port without an
 * enhanced flow), no larger than the PLAY that asked for it; the target
 * hands the token to the requester, whose PLAY then carries it as
 * host_token. Tokens are stateless (as QUIC's Retry tokens): an HMAC under
 * a per-process secret over identity, address, port and expiry. */
#define VALIDATION_LIFETIME 60  /* s */
#define VALIDATION_MAX_PROBES 16        /* per control connection */
#define VALIDATION_PROBE_PREFIX "TWOFLOW-VALIDATE "
static guint8 validation_secret[32];

static gchar *
validation_token (const gchar * identity, const gchar * host, gint port,
    gint64 expiry)
{
  gchar *msg = g_strdup_printf ("%s\n%s\n%d\n%" G_GINT64_FORMAT, identity,
      host, port, expiry);
  gchar *mac = g_compute_hmac_for_string (G_CHECKSUM_SHA256,
      validation_secret, sizeof (validation_secret), msg, -1);
  gchar *tok = g_strdup_printf ("%" G_GINT64_FORMAT ".%.40s", expiry, mac);

  g_free (msg);
  g_free (mac);
  return tok;
}

static gboolean
validation_check (const gchar * identity, const gchar * host, gint port,
    const gchar * token)
{
  gint64 now = g_get_real_time () / G_USEC_PER_SEC, expiry;
  gchar *end = NULL, *want;
  guint8 d = 0;
  gsize i, n;

  if (!token)
    return FALSE;
  expiry = g_ascii_strtoll (token, &end, 10);
  if (end == token || *end != '.' || expiry < now
      || expiry > now + VALIDATION_LIFETIME)
    return FALSE;
  want = validation_token (identity, host, port, expiry);
  n = strlen (want);
  if (strlen (token) != n) {
    g_free (want);
    return FALSE;
  }
  for (i = 0; i < n; i++)
    d |= (guint8) token[i] ^ (guint8) want[i];
  g_free (want);
  return d == 0;
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

/* --------------------------------------------------------------- clients */

static gboolean client_send_and_close_cb (gpointer data);

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
static void
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

static void
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
  r = twoflow_reply_new (req, TRUE);
  json_object_set_int_member (r, "session", s->id);
  video_info_to_json (s->info, r);
  video_info_rates_to_json (s->info, r, s->segment_duration, s->sched);
  json_object_set_double_member (r, "lead", s->lead);
  /* where it starts: the key frame at or before the asked start */
  json_object_set_double_member (r, "start", s->start);
  if (s->start_pts) {
    /* what the session sends of the video from there */
    json_object_set_int_member (r, "start_frames", s->start_frames);
    json_object_set_int_member (r, "start_audio_records", s->start_audio);
  }
  json_object_set_double_member (r, "enhanced_start", s->enh_start);
  /* the essential flow's start-up ramp, bit/s (0: none) */
  json_object_set_int_member (r, "startup_rate", s->startup_rate);
  json_object_set_boolean_member (r, "smoothing", s->smooth);
  /* the proxy's playout buffer for the enhanced flow, s */
  json_object_set_double_member (r, "playout_depth", s->smooth ?
      schedule_playout (s->sched) : 0);
  /* NAT: the proxy connects to this port (cTCP/TCP) or says hello
   * to it (ERAP), and says hello to enhanced_port (rUDP) */
  if (s->nat && s->ess_pipe)
    json_object_set_int_member (r, "essential_port", s->ess_port);
  if (s->nat && s->enh_pipe)
    json_object_set_int_member (r, "enhanced_port", s->enh_port);
  if (s->nat)
    json_object_set_int_member (r, "hello_id", (gint64) s->hello_id);
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
  JsonObject *bad, *r;
  const gchar *n;
  gchar *why;
  gboolean unknown;

  if (!d)
    return NULL;
  a = json_array_new ();
  bad = json_object_new ();
  checking = json_array_new ();
  while ((n = g_dir_read_name (d)))
    if (n[0] != '.') {
      json_array_add_string_element (a, n);
      /* the catalog: which of them cannot play, and why (or not known
       * yet) */
      if ((why = catalog_reason (n, &unknown)))
        json_object_set_string_member (bad, n, why);
      else if (unknown)
        json_array_add_string_element (checking, n);
      g_free (why);
    }
  g_dir_close (d);
  r = twoflow_reply_new (req, TRUE);
  json_object_set_array_member (r, "videos", a);
  json_object_set_object_member (r, "unsupported", bad);
  json_object_set_array_member (r, "checking", checking);
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

static void read_next (Client * c);

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

static void
client_accept (GSocketConnection * conn)
{
  Client *c;
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

/* The accept loop (GSocketService would retry a failing accept at once:
 * out of file descriptors, it spins). */
static GSocketListener *listener;
static GCancellable *accept_cancel;

static void accept_next (void);

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
    client_accept (conn);
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

static gboolean
quit_cb (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

int
main (int argc, char **argv)
{
  GError *err = NULL;
  gint ret;
  GSocketAddress *addr;
  GSocketAddress *effective = NULL;
  GMainLoop *loop;

  /* logs are read line by line by scripts */
  setvbuf (stdout, NULL, _IOLBF, 0);
  /* the address-validation tokens' key, new at every start */
  if (getrandom (validation_secret, sizeof (validation_secret), 0) !=
      sizeof (validation_secret)) {
    g_printerr ("getrandom failed\n");
    return 1;
  }
  if ((ret = twoflow_server_options_parse (argc, argv)) >= 0)
    return ret;
  {
    static const gchar *const needed[] = { "twoflowsplit", "ratetranscoder",
      "twoflowtracesrc", "ctcpsink", "erapsink", "rudpsink", "rtpgstpay",
      "parsebin", "filesrc", "queue", "fakesink", NULL
    };
    /* loaded now, while descriptors are free: libav's libraries
     * (libavformat -> libssh -> libgcrypt) initialise on load and abort
     * the process when that fails, as it did under EMFILE when the
     * catalog's first scan loaded them during a connection flood */
    static const gchar *const preload[] = { "libav", "typefindfunctions",
      "playback", "videoparsersbad", NULL
    };
    guint i;

    if (!twoflow_config_check_elements ("twoflow-server", needed))
      return 1;
    for (i = 0; preload[i]; i++) {
      GstPlugin *plugin = gst_plugin_load_by_name (preload[i]);

      if (plugin)
        gst_object_unref (plugin);
    }
  }
  GST_DEBUG_CATEGORY_INIT (server_debug, "twoflow-server", 0,
      "twoflow central server");
  if ((ret = twoflow_server_options_check ()) >= 0)
    return ret;
  twoflow_server_source_init ();
  twoflow_server_catalog_init ();
  twoflow_server_schedule_init ();
  twoflow_server_ratectl_init ();
  twoflow_server_media_init ();
  twoflow_server_pool_init ();
  {
    SessionPoolCallbacks cb = { (void (*)(gpointer, JsonObject *))
          client_send };

    session_pool_set_callbacks (&cb);
  }

  listener = g_socket_listener_new ();
  /* a burst of connections waits in the kernel's queue instead of being
   * dropped (GLib's default backlog is 10) */
  g_socket_listener_set_backlog (listener, 128);
  addr = g_inet_socket_address_new_from_string (opt_address ? opt_address :
      "0.0.0.0", opt_port);
  if (addr == NULL || !g_socket_listener_add_address (listener, addr, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL,
          &effective, &err)) {
    g_printerr ("cannot listen on %s:%d: %s\n", opt_address ? opt_address :
        "0.0.0.0", opt_port, err ? err->message : "bad address");
    return 1;
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

  web_start ();
  /* the catalog: which videos cannot play, looked at in its own thread */
  catalog_queue_all ();
  loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGINT, quit_cb, loop);
  g_unix_signal_add (SIGTERM, quit_cb, loop);
  g_unix_signal_add (SIGHUP, web_reload, NULL);
  /* listening (control and HTTP): systemd's Type=notify start is done */
  twoflow_daemon_notify ("READY=1");
  g_main_loop_run (loop);
  twoflow_daemon_notify ("STOPPING=1");

  g_print ("twoflow-server: stopping, %u session(s) active\n",
      session_pool_size ());
  {
    GList *l, *all = session_pool_list ();
    for (l = all; l; l = l->next)
      session_destroy (l->data, "server stopping");
    g_list_free (all);
  }
  g_cancellable_cancel (accept_cancel);
  g_socket_listener_close (listener);
  g_object_unref (listener);
  g_object_unref (accept_cancel);
  g_main_loop_unref (loop);
  return 0;
}
