/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ctcpsrc: the receiving end of a cTCP flow, with TLS
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/**
 * SECTION:element-ctcpsrc
 * @title: ctcpsrc
 * @see_also: ctcpsink, tcpserversrc, tcpclientsrc
 *
 * Receives one TCP byte stream — a `ctcpsink`'s — and pushes it as it
 * comes, like `tcpserversrc` (#GstCtcpSrc:listen, the default: it waits
 * for the sender's connection) or `tcpclientsrc` (listen=false: it
 * connects to a `ctcpsink listen=true`, e.g. from behind NAT), with
 * TLS: the receiver is always the TLS **client**, whichever end opened
 * the connection, and the sender (`ctcpsink tls-role=server`) the TLS
 * server. So the receiver checks the sender's certificate exactly as a
 * TLS client checks a server's (#GstCtcpSrc:tls-ca-file and the name
 * #GstCtcpSrc:tls-server-name, or the fingerprint #GstCtcpSrc:tls-pin,
 * or the system's CAs), and then proves itself by sending
 * #GstCtcpSrc:tls-token, a secret it shares with the sender (a
 * per-session token handed over a control channel), before the sender
 * sends anything. GLib's TLS (glib-networking/GnuTLS) has no pre-shared
 * keys, hence a certificate one way and a token the other.
 *
 * Listening, a connection from another address than
 * #GstCtcpSrc:accept-host (if set), or whose handshake fails for want of
 * a TLS server (a plaintext peer, silence for #GstCtcpSrc:connect-timeout), is
 * closed and counted (`connections-refused`), and the source waits for
 * the next one: nothing of it reaches the stream. A sender (from
 * #GstCtcpSrc:accept-host's address, when set) whose certificate is
 * rejected — not trusted by #GstCtcpSrc:tls-ca-file, another name, not
 * #GstCtcpSrc:tls-pin — is closed, counted and an element error with
 * the reason: the pipeline fails instead of waiting for ever on a
 * misconfiguration. Connecting, any such failure is an element error.
 * A #GstCtcpSrc:tls-ca-file that cannot be read or holds no certificate
 * fails the start with an error naming the file (a relative path is
 * taken from the current directory). A TLS stream that ends without
 * close_notify (a truncation) is an error, not EOS. Without TLS it is a
 * plain TCP receiver (lab use): set #GstCtcpSrc:accept-host to the
 * sender's address so that a stranger connecting first cannot take its
 * place.
 *
 * Connecting, accepting and the handshake happen in the streaming
 * thread: the state changes never block.
 *
 * The #GstCtcpSrc:stats structure `application/x-ctcpsrc-stats`:
 *
 * * `bytes-received` (guint64): stream bytes pushed
 * * `connections-refused` (guint): connections closed unserved (not from
 *   #GstCtcpSrc:accept-host, failed handshake or timeout)
 * * `peer` (gchararray): address:port of the connection ("" before)
 * * `tls` (gboolean): whether the stream is TLS
 * * `tls-protocol`, `tls-ciphersuite` (gchararray): negotiated ("" without)
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 ctcpsrc port=5600 tls-ca-file=ca.pem tls-server-name=127.0.0.1 tls-token=0123456789abcdef0123 ! filesink location=essential.twoflow
 * gst-launch-1.0 filesrc location=in.bin ! ctcpsink host=127.0.0.1 port=5600 target-bitrate=8000000 \
 *     tls-role=server tls-certificate=server.pem tls-key=server.key tls-token=0123456789abcdef0123
 * ]| A cTCP flow at 8 Mbit/s over TLS: the receiver checks the sender's
 * certificate against ca.pem and the address 127.0.0.1 (in the certificate:
 * scripts/make-test-certs.sh makes such), and proves
 * itself with the token.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstctcpsrc.h"
#include "twoflownet.h"
#include "twoflowprops.h"
#include "twoflowtls.h"

GST_DEBUG_CATEGORY_STATIC (ctcp_src_debug);
#define GST_CAT_DEFAULT ctcp_src_debug

#define DEFAULT_HOST       "0.0.0.0"
#define DEFAULT_PORT       4953
#define DEFAULT_LISTEN     TRUE
#define DEFAULT_TIMEOUT    (10 * GST_SECOND)
#define DEFAULT_BLOCKSIZE  TWOFLOW_TLS_RECORD_SIZE

enum
{
  PROP_0,
  PROP_TLS_FIRST,
  PROP_TLS_LAST = PROP_TLS_FIRST + TWOFLOW_TLS_N_PROPS - 1,
  PROP_URI,
  PROP_HOST,
  PROP_PORT,
  PROP_LISTEN,
  PROP_ACCEPT_HOST,
  PROP_CURRENT_PORT,
  PROP_TIMEOUT,
  PROP_TLS_SERVER_NAME,
  PROP_STATS,
};

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

#define gst_ctcp_src_parent_class parent_class
static void gst_ctcp_src_uri_handler_init (gpointer g_iface,
    gpointer iface_data);
G_DEFINE_TYPE_WITH_CODE (GstCtcpSrc, gst_ctcp_src, GST_TYPE_PUSH_SRC,
    G_IMPLEMENT_INTERFACE (GST_TYPE_URI_HANDLER,
        gst_ctcp_src_uri_handler_init));
GST_ELEMENT_REGISTER_DEFINE (ctcpsrc, "ctcpsrc", GST_RANK_NONE,
    GST_TYPE_CTCP_SRC);

static void gst_ctcp_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_ctcp_src_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_ctcp_src_finalize (GObject * object);
static gboolean gst_ctcp_src_start (GstBaseSrc * bsrc);
static gboolean gst_ctcp_src_stop (GstBaseSrc * bsrc);
static gboolean gst_ctcp_src_unlock (GstBaseSrc * bsrc);
static gboolean gst_ctcp_src_unlock_stop (GstBaseSrc * bsrc);
static GstFlowReturn gst_ctcp_src_create (GstPushSrc * psrc,
    GstBuffer ** outbuf);

static void
gst_ctcp_src_class_init (GstCtcpSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *pushsrc_class = GST_PUSH_SRC_CLASS (klass);

  gobject_class->set_property = gst_ctcp_src_set_property;
  gobject_class->get_property = gst_ctcp_src_get_property;
  /**
   * GstCtcpSrc:uri:
   *
   * #GstCtcpSrc:host and #GstCtcpSrc:port as a `ctcp://host:port` URI:
   * listening (the default) the local address and port, `ctcp://:4953`
   * (every IPv4 address), `ctcp://[::]:4953`; with `listen=false` in the
   * query the sender to connect to. No port means 4953. Query parameters
   * set other properties by name, with values as on a gst-launch-1.0
   * line: `ctcp://:4953?tls-ca-file=/etc/twoflow/ca.pem&tls-token=...`.
   * Reading it back gives `ctcp://host:port`, with the query of the URI
   * last set: the same keys with the properties' current values. The same
   * URI makes a ctcpsrc with gst_element_make_from_uri(), so uridecodebin,
   * urisourcebin and playbin play `ctcp://` URIs.
   */
  g_object_class_install_property (gobject_class, PROP_URI,
      g_param_spec_string ("uri", "URI",
          "ctcp://host:port[?property=value&...] to listen on or connect to",
          "ctcp://" DEFAULT_HOST ":4953", G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  gobject_class->finalize = gst_ctcp_src_finalize;

  /**
   * GstCtcpSrc:host:
   *
   * Listening: the local address to listen on; connecting: the sender
   * (a `ctcpsink listen=true`) to connect to.
   */
  g_object_class_install_property (gobject_class, PROP_HOST,
      g_param_spec_string ("host", "Host",
          "Address to listen on (listen) or sender to connect to",
          DEFAULT_HOST, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstCtcpSrc:port:
   *
   * Listening: the port (0: any free one, see #GstCtcpSrc:current-port);
   * connecting: the sender's port.
   */
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port",
          "Port to listen on (0 = any) or to connect to", 0, 65535,
          DEFAULT_PORT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstCtcpSrc:listen:
   *
   * TRUE: wait for the sender's connection (as tcpserversrc); FALSE:
   * connect to #GstCtcpSrc:host (as tcpclientsrc).
   */
  g_object_class_install_property (gobject_class, PROP_LISTEN,
      g_param_spec_boolean ("listen", "Listen",
          "Wait for the sender's connection (FALSE: connect to host)",
          DEFAULT_LISTEN, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstCtcpSrc:accept-host:
   *
   * Listening: accept connections from this address only (others are
   * closed before any handshake and counted); NULL (default): from
   * anywhere. A receiver that knows its sender (the server of its control
   * connection) sets it, so that a stranger connecting first cannot hold
   * the source for #GstCtcpSrc:connect-timeout.
   */
  g_object_class_install_property (gobject_class, PROP_ACCEPT_HOST,
      g_param_spec_string ("accept-host", "Accept host",
          "Accept connections from this address only (NULL = any)", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstCtcpSrc:current-port:
   *
   * The port listened on, from start (READY to PAUSED) on; 0 otherwise.
   */
  g_object_class_install_property (gobject_class, PROP_CURRENT_PORT,
      g_param_spec_uint ("current-port", "Current port",
          "Port listened on (listen)", 0, 65535, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  /**
   * GstCtcpSrc:connect-timeout:
   *
   * Longest connect and TLS handshake (with the token), in nanoseconds;
   * 0: no bound of our own. Listening, a connection that takes longer is
   * closed and the source waits for the next one. The same name as
   * ctcpsink's and erapsink's.
   */
  g_object_class_install_property (gobject_class, PROP_TIMEOUT,
      g_param_spec_uint64 ("connect-timeout", "Connect timeout",
          "Longest connect and TLS handshake in nanoseconds (0 = none)",
          0, G_MAXUINT64, DEFAULT_TIMEOUT, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  /**
   * GstCtcpSrc:timeout:
   *
   * Deprecated alias of #GstCtcpSrc:connect-timeout.
   */
  twoflow_property_install_alias (gobject_class, PROP_TIMEOUT, "timeout",
      "connect-timeout");
  /* tls, tls-ca-file, tls-pin, tls-token: the group both cTCP ends
   * share (gst/common/twoflowprops.c) */
  twoflow_tls_props_install (gobject_class, PROP_TLS_FIRST);
  /**
   * GstCtcpSrc:tls-server-name:
   *
   * The name (or address) the sender's certificate must be valid for.
   * NULL: #GstCtcpSrc:host when connecting; listening, no name is checked
   * (then set it, or #GstCtcpSrc:tls-pin).
   */
  g_object_class_install_property (gobject_class, PROP_TLS_SERVER_NAME,
      g_param_spec_string ("tls-server-name", "TLS server name",
          "Name the sender's certificate must match (NULL: host when "
          "connecting)", NULL, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstCtcpSrc:stats:
   *
   * An `application/x-ctcpsrc-stats` structure; fields in the element
   * description.
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics", "Connection statistics",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Controlled TCP source", "Source/Network",
      "Receives a cTCP stream (listening or connecting), as a TLS client "
      "that checks the sender's certificate and proves a token",
      "twoflow developers <dev@twoflow.invalid>");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, TWOFLOW_DOC_URI_BASE "ctcp.md");

  basesrc_class->start = GST_DEBUG_FUNCPTR (gst_ctcp_src_start);
  basesrc_class->stop = GST_DEBUG_FUNCPTR (gst_ctcp_src_stop);
  basesrc_class->unlock = GST_DEBUG_FUNCPTR (gst_ctcp_src_unlock);
  basesrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_ctcp_src_unlock_stop);
  pushsrc_class->create = GST_DEBUG_FUNCPTR (gst_ctcp_src_create);

  GST_DEBUG_CATEGORY_INIT (ctcp_src_debug, "ctcpsrc", 0,
      "controlled TCP source");
}

static void
gst_ctcp_src_init (GstCtcpSrc * self)
{
  self->host = g_strdup (DEFAULT_HOST);
  self->port = DEFAULT_PORT;
  self->listen = DEFAULT_LISTEN;
  self->timeout = DEFAULT_TIMEOUT;
  self->cancellable = g_cancellable_new ();
  gst_base_src_set_blocksize (GST_BASE_SRC (self), DEFAULT_BLOCKSIZE);
}

static void
gst_ctcp_src_finalize (GObject * object)
{
  GstCtcpSrc *self = GST_CTCP_SRC (object);

  g_free (self->host);
  g_free (self->accept_host);
  twoflow_tls_props_clear (&self->tls_props);
  g_free (self->tls_ca_path);
  g_free (self->tls_server_name);
  g_free (self->peer);
  g_free (self->tls_protocol);
  g_free (self->tls_suite);
  g_object_unref (self->cancellable);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static gboolean
tls_on (GstCtcpSrc * self)
{
  return twoflow_tls_props_enabled (&self->tls_props);
}

static gboolean
gst_ctcp_src_start (GstBaseSrc * bsrc)
{
  GstCtcpSrc *self = GST_CTCP_SRC (bsrc);
  GSocket *ls = NULL;
  GSocketAddress *sa = NULL, *bound = NULL;
  GError *err = NULL;
  gchar *host;
  guint port;
  gboolean listen, ok = FALSE;

  GST_OBJECT_LOCK (self);
  host = g_strdup (self->host);
  port = self->port;
  listen = self->listen;
  self->current_port = 0;
  self->bytes = 0;
  self->refused = 0;
  g_clear_pointer (&self->peer, g_free);
  g_clear_pointer (&self->tls_protocol, g_free);
  g_clear_pointer (&self->tls_suite, g_free);
  GST_OBJECT_UNLOCK (self);
  g_cancellable_reset (self->cancellable);
  /* the anchors now, not at the first handshake: a file that cannot be
   * read is a setting to fix, not a peer to refuse */
  {
    gchar *ca;
    GTlsDatabase *db = NULL;

    GST_OBJECT_LOCK (self);
    ca = g_strdup (self->tls_props.ca_file);
    GST_OBJECT_UNLOCK (self);
    if (ca && !(db = twoflow_tls_database_new (ca, &err))) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("Could not read tls-ca-file %s", ca), ("%s", err->message));
      g_clear_error (&err);
      g_free (ca);
      g_free (host);
      return FALSE;
    }
    g_clear_object (&db);
    /* relative to the directory we started in, whatever comes later */
    GST_OBJECT_LOCK (self);
    g_free (self->tls_ca_path);
    self->tls_ca_path = ca ? g_canonicalize_filename (ca, NULL) : NULL;
    GST_OBJECT_UNLOCK (self);
    g_free (ca);
  }
  if (!listen) {
    g_free (host);
    return TRUE;                /* connects in create() */
  }
  sa = g_inet_socket_address_new_from_string (host, port);
  if (!sa) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("host must be an address to listen on: %s", host), (NULL));
    g_free (host);
    return FALSE;
  }
  ls = g_socket_new (g_socket_address_get_family (sa), G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, &err);
  if (!ls || !g_socket_bind (ls, sa, TRUE, &err)
      || !g_socket_listen (ls, &err)
      || !(bound = g_socket_get_local_address (ls, &err))) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Could not listen on %s:%u", host, port), ("%s",
            err ? err->message : "socket"));
    goto out;
  }
  self->listener = g_object_ref (ls);
  GST_OBJECT_LOCK (self);
  self->current_port =
      g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  GST_OBJECT_UNLOCK (self);
  GST_INFO_OBJECT (self, "listening on %s:%u", host, self->current_port);
  ok = TRUE;
out:
  g_clear_error (&err);
  g_clear_object (&ls);
  g_clear_object (&sa);
  g_clear_object (&bound);
  g_free (host);
  return ok;
}

/* Ends a connection without closing its descriptor: a TLS connection that
 * failed can outlive our reference (glib-networking's operations thread)
 * and still poll the socket; a descriptor closed under it is reused (the
 * next connection, a GstPoll's control socket) and the stale poller hits
 * that (elements/ctcptls under load). The last reference closes it. */
static void
drop_socket (GSocket ** sock)
{
  if (*sock)
    g_socket_shutdown (*sock, TRUE, TRUE, NULL);
  g_clear_object (sock);
}

static void
close_connection (GstCtcpSrc * self)
{
  self->in = NULL;
  g_clear_object (&self->tls_conn);
  g_clear_object (&self->conn);
  drop_socket (&self->socket);
}

static gboolean
gst_ctcp_src_stop (GstBaseSrc * bsrc)
{
  GstCtcpSrc *self = GST_CTCP_SRC (bsrc);

  close_connection (self);
  if (self->listener) {
    g_socket_close (self->listener, NULL);
    g_clear_object (&self->listener);
  }
  return TRUE;
}

static gboolean
gst_ctcp_src_unlock (GstBaseSrc * bsrc)
{
  g_cancellable_cancel (GST_CTCP_SRC (bsrc)->cancellable);
  return TRUE;
}

static gboolean
gst_ctcp_src_unlock_stop (GstBaseSrc * bsrc)
{
  g_cancellable_reset (GST_CTCP_SRC (bsrc)->cancellable);
  return TRUE;
}

/* TLS client over @sock: check the sender, send the token. Bounded by
 * the timeout. FALSE: *why says why. */
static gboolean
secure (GstCtcpSrc * self, GSocket * sock, const gchar * dialled,
    gchar ** why, gboolean * rejected)
{
  GIOStream *conn, *tls;
  GError *e = NULL;
  guint secs = 0;
  gchar *ca, *pin, *name, *token;
  TwoflowTlsClientConfig tc = { NULL, };

  GST_OBJECT_LOCK (self);
  ca = g_strdup (self->tls_ca_path);
  pin = g_strdup (self->tls_props.pin);
  name = g_strdup (self->tls_server_name ? self->tls_server_name : dialled);
  token = g_strdup (self->tls_props.token);
  secs = twoflow_net_timeout_seconds (self->timeout);
  GST_OBJECT_UNLOCK (self);

  tc.server_name = name;
  tc.ca_file = ca;
  tc.pin = pin;
  g_socket_set_timeout (sock, secs);
  conn = G_IO_STREAM (g_socket_connection_factory_create_connection (sock));
  tls = twoflow_tls_client_handshake (conn, &tc, self->cancellable, &e);
  if (tls && token && !g_output_stream_write_all
      (g_io_stream_get_output_stream (tls), token, strlen (token), NULL,
          self->cancellable, &e))
    g_clear_object (&tls);
  g_socket_set_timeout (sock, 0);
  g_free (ca);
  g_free (pin);
  g_free (name);
  if (token)
    memset (token, 0, strlen (token));
  g_free (token);
  if (!tls) {
    *why = g_strdup (e ? e->message : "TLS failed");
    /* a TLS server whose certificate we refuse (not a plaintext peer, a
     * silent one or a lost connection) */
    if (rejected)
      *rejected = g_error_matches (e, G_TLS_ERROR,
          G_TLS_ERROR_BAD_CERTIFICATE);
    g_clear_error (&e);
    g_object_unref (conn);
    return FALSE;
  }
  self->conn = conn;
  self->tls_conn = tls;
  self->in = g_io_stream_get_input_stream (tls);
  GST_OBJECT_LOCK (self);
  self->tls_protocol =
      g_strdup (twoflow_tls_protocol_name (G_TLS_CONNECTION (tls)));
  self->tls_suite =
      g_tls_connection_get_ciphersuite_name (G_TLS_CONNECTION (tls));
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

/* Records the peer; FALSE if accept-host is set and it is not that. */
static gboolean
set_peer (GstCtcpSrc * self, GSocket * sock)
{
  gchar *ip, *peer = twoflow_net_peer_address (sock, &ip);
  gboolean ok;

  GST_OBJECT_LOCK (self);
  g_free (self->peer);
  self->peer = peer ? peer : g_strdup ("?");
  ok = !self->accept_host || twoflow_net_same_ip (self->accept_host, ip);
  GST_OBJECT_UNLOCK (self);
  g_free (ip);
  return ok;
}

/* Listening: the first connection that passes TLS (if on). */
static GstFlowReturn
accept_one (GstCtcpSrc * self, gboolean tls)
{
  while (!self->socket) {
    GError *e = NULL;
    GSocket *sock = g_socket_accept (self->listener, self->cancellable, &e);
    gchar *why = NULL;
    gboolean rejected = FALSE;

    if (!sock) {
      if (g_error_matches (e, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_error_free (e);
        return GST_FLOW_FLUSHING;
      }
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("Could not accept"),
          ("%s", e->message));
      g_error_free (e);
      return GST_FLOW_ERROR;
    }
    g_socket_set_blocking (sock, TRUE);
    if (!set_peer (self, sock))
      why = g_strdup ("not from accept-host");
    if (why || (tls && !secure (self, sock, NULL, &why, &rejected))) {
      gboolean cancelled = g_cancellable_is_cancelled (self->cancellable);

      GST_WARNING_OBJECT (self, "connection from %s refused: %s", self->peer,
          why);
      drop_socket (&sock);
      GST_OBJECT_LOCK (self);
      self->refused++;
      GST_OBJECT_UNLOCK (self);
      if (cancelled) {
        g_free (why);
        return GST_FLOW_FLUSHING;
      }
      if (rejected) {
        /* the sender itself (from accept-host's address) with a
         * certificate we do not trust: a misconfiguration, not worth
         * waiting for ever */
        GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
            ("TLS handshake with %s failed", self->peer), ("%s", why));
        g_free (why);
        return GST_FLOW_ERROR;
      }
      g_free (why);
      continue;
    }
    self->socket = sock;
  }
  /* one stream: no more connections */
  g_socket_close (self->listener, NULL);
  g_clear_object (&self->listener);
  return GST_FLOW_OK;
}

/* Connecting, bounded by the timeout. */
static GstFlowReturn
connect_one (GstCtcpSrc * self, gboolean tls)
{
  GSocketClient *client = g_socket_client_new ();
  GSocketConnection *sc;
  GError *e = NULL;
  gchar *host, *why = NULL;
  guint port, secs;

  GST_OBJECT_LOCK (self);
  host = g_strdup (self->host);
  port = self->port;
  secs = twoflow_net_timeout_seconds (self->timeout);
  GST_OBJECT_UNLOCK (self);
  g_socket_client_set_timeout (client, secs);
  sc = g_socket_client_connect_to_host (client, host, port, self->cancellable,
      &e);
  g_object_unref (client);
  if (!sc) {
    gboolean cancelled = g_error_matches (e, G_IO_ERROR,
        G_IO_ERROR_CANCELLED);

    if (!cancelled)
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not connect to %s:%u", host, port), ("%s", e->message));
    g_error_free (e);
    g_free (host);
    return cancelled ? GST_FLOW_FLUSHING : GST_FLOW_ERROR;
  }
  self->socket = g_object_ref (g_socket_connection_get_socket (sc));
  g_object_unref (sc);
  g_socket_set_timeout (self->socket, 0);
  g_socket_set_blocking (self->socket, TRUE);
  set_peer (self, self->socket);
  if (tls && !secure (self, self->socket, host, &why, NULL)) {
    if (!g_cancellable_is_cancelled (self->cancellable))
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("TLS handshake with %s:%u failed", host, port), ("%s", why));
    g_free (why);
    g_free (host);
    close_connection (self);
    return g_cancellable_is_cancelled (self->cancellable) ?
        GST_FLOW_FLUSHING : GST_FLOW_ERROR;
  }
  g_free (host);
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_ctcp_src_create (GstPushSrc * psrc, GstBuffer ** outbuf)
{
  GstCtcpSrc *self = GST_CTCP_SRC (psrc);
  GstBuffer *buf;
  GstMapInfo map;
  GError *e = NULL;
  gssize n;
  guint size;

  if (!self->in && !self->socket) {
    gboolean tls, listen;
    GstFlowReturn ret;

    GST_OBJECT_LOCK (self);
    tls = tls_on (self);
    listen = self->listen;
    GST_OBJECT_UNLOCK (self);
    ret = listen ? accept_one (self, tls) : connect_one (self, tls);
    if (ret != GST_FLOW_OK)
      return ret;
    if (!self->tls_conn) {
      self->conn = G_IO_STREAM (g_socket_connection_factory_create_connection
          (self->socket));
      self->in = g_io_stream_get_input_stream (self->conn);
    }
    GST_INFO_OBJECT (self, "receiving from %s%s", self->peer,
        self->tls_conn ? " (TLS)" : "");
  }

  size = gst_base_src_get_blocksize (GST_BASE_SRC (self));
  buf = gst_buffer_new_allocate (NULL, size, NULL);
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  n = g_input_stream_read (self->in, map.data, size, self->cancellable, &e);
  gst_buffer_unmap (buf, &map);
  if (n < 0) {
    gst_buffer_unref (buf);
    if (g_error_matches (e, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
      g_error_free (e);
      return GST_FLOW_FLUSHING;
    }
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Connection from %s lost",
            self->peer), ("%s", e->message));
    g_error_free (e);
    return GST_FLOW_ERROR;
  }
  if (n == 0) {
    gst_buffer_unref (buf);
    GST_INFO_OBJECT (self, "end of stream from %s", self->peer);
    return GST_FLOW_EOS;
  }
  gst_buffer_resize (buf, 0, n);
  GST_OBJECT_LOCK (self);
  self->bytes += n;
  GST_OBJECT_UNLOCK (self);
  *outbuf = buf;
  return GST_FLOW_OK;
}

static void
gst_ctcp_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstCtcpSrc *self = GST_CTCP_SRC (object);

  /* the URI sets other properties, which take the lock themselves */
  if (prop_id == PROP_URI) {
    twoflow_uri_property_set (GST_ELEMENT (object), value);
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_HOST:
      g_free (self->host);
      self->host = g_value_dup_string (value);
      if (!self->host)
        self->host = g_strdup (DEFAULT_HOST);
      break;
    case PROP_PORT:
      self->port = g_value_get_uint (value);
      break;
    case PROP_LISTEN:
      self->listen = g_value_get_boolean (value);
      break;
    case PROP_ACCEPT_HOST:
      g_free (self->accept_host);
      self->accept_host = g_value_dup_string (value);
      break;
    case PROP_TIMEOUT:
      self->timeout = g_value_get_uint64 (value);
      break;
    case PROP_TLS_SERVER_NAME:
      g_free (self->tls_server_name);
      self->tls_server_name = g_value_dup_string (value);
      break;
    default:
      if (!twoflow_tls_props_set (&self->tls_props,
              prop_id - PROP_TLS_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_ctcp_src_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstCtcpSrc *self = GST_CTCP_SRC (object);

  if (prop_id == PROP_URI) {
    g_value_take_string (value,
        gst_uri_handler_get_uri (GST_URI_HANDLER (object)));
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_HOST:
      g_value_set_string (value, self->host);
      break;
    case PROP_PORT:
      g_value_set_uint (value, self->port);
      break;
    case PROP_LISTEN:
      g_value_set_boolean (value, self->listen);
      break;
    case PROP_ACCEPT_HOST:
      g_value_set_string (value, self->accept_host);
      break;
    case PROP_CURRENT_PORT:
      g_value_set_uint (value, self->current_port);
      break;
    case PROP_TIMEOUT:
      g_value_set_uint64 (value, self->timeout);
      break;
    case PROP_TLS_SERVER_NAME:
      g_value_set_string (value, self->tls_server_name);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_structure_new ("application/x-ctcpsrc-stats",
              "bytes-received", G_TYPE_UINT64, self->bytes,
              "connections-refused", G_TYPE_UINT, self->refused,
              "peer", G_TYPE_STRING, self->peer ? self->peer : "",
              "tls", G_TYPE_BOOLEAN, self->tls_protocol != NULL,
              "tls-protocol", G_TYPE_STRING,
              self->tls_protocol ? self->tls_protocol : "",
              "tls-ciphersuite", G_TYPE_STRING,
              self->tls_suite ? self->tls_suite : "", NULL));
      break;
    default:
      if (!twoflow_tls_props_get (&self->tls_props,
              prop_id - PROP_TLS_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ctcp://host:port URIs (GstURIHandler), as erapsrc has erap:// */

static GstURIType
gst_ctcp_src_uri_get_type (GType type)
{
  return GST_URI_SRC;
}

static const gchar *const *
gst_ctcp_src_uri_get_protocols (GType type)
{
  static const gchar *protocols[] = { "ctcp", NULL };

  return protocols;
}

static gchar *
gst_ctcp_src_uri_get_uri (GstURIHandler * handler)
{
  return twoflow_uri_make (GST_ELEMENT (handler), "ctcp", "host", "port");
}

static gboolean
gst_ctcp_src_uri_set_uri (GstURIHandler * handler, const gchar * str,
    GError ** error)
{
  return twoflow_uri_apply (GST_ELEMENT (handler), str, "ctcp", "host",
      "port", DEFAULT_HOST, DEFAULT_PORT, 0, error);
}

static void
gst_ctcp_src_uri_handler_init (gpointer g_iface, gpointer iface_data)
{
  GstURIHandlerInterface *iface = (GstURIHandlerInterface *) g_iface;

  iface->get_type = gst_ctcp_src_uri_get_type;
  iface->get_protocols = gst_ctcp_src_uri_get_protocols;
  iface->get_uri = gst_ctcp_src_uri_get_uri;
  iface->set_uri = gst_ctcp_src_uri_set_uri;
}
