/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — the control client
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * The main loop serves every session, the HTTP side and the signals: a
 * request made there (PLAY once the receivers listen) is asynchronous
 * (GTask on GIO's write_all_async/read_line_async), the session's events
 * are read the same way. gst-rtsp-server's client threads (a session set
 * up at DESCRIBE or SETUP, a seek) block on their request as the media
 * factory's create_element must return the element.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/gst.h>
#include "twoflow-proxy-control.h"
#include "twoflow-proxy-options.h"
#include "twoflow-protocol.h"
#include "twoflowtls.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_control_debug);
#define GST_CAT_DEFAULT twoflow_proxy_control_debug

/* a reply with "ok": the reply; else the server's error */
static JsonObject *
reply_checked (JsonObject * r, GError ** error)
{
  if (r && !twoflow_json_get_int (r, "ok", 0)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "server: %s",
        twoflow_json_get_string (r, "error", "request failed"));
    json_object_unref (r);
    r = NULL;
  }
  return r;
}

JsonObject *
control_request (GDataInputStream * in, GOutputStream * out,
    JsonObject * req, GError ** error)
{
  JsonObject *r;

  if (!twoflow_control_send (out, req, error))
    return NULL;
  /* progress/done events may precede the reply: skip them */
  while ((r = twoflow_control_recv (in, NULL, error))) {
    if (!json_object_has_member (r, "event"))
      break;
    json_object_unref (r);
  }
  return reply_checked (r, error);
}

typedef struct
{
  GDataInputStream *in;
  gchar *line;
} RequestData;

static void
request_data_free (RequestData * d)
{
  g_object_unref (d->in);
  g_free (d->line);
  g_free (d);
}

static void request_read_cb (GObject * source, GAsyncResult * res,
    gpointer user_data);

static void
request_read_next (GTask * task)
{
  RequestData *d = g_task_get_task_data (task);

  g_data_input_stream_read_line_async (d->in, G_PRIORITY_DEFAULT,
      g_task_get_cancellable (task), request_read_cb, task);
}

static void
request_read_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  GTask *task = user_data;
  GError *err = NULL;
  gchar *line = g_data_input_stream_read_line_finish_utf8 (G_DATA_INPUT_STREAM
      (source), res, NULL, &err);
  JsonObject *r;

  if (line == NULL) {
    if (err == NULL)
      err = g_error_new (G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED,
          "control connection closed");
    g_task_return_error (task, err);
    g_object_unref (task);
    return;
  }
  r = twoflow_json_from_line (line, &err);
  g_free (line);
  if (r && json_object_has_member (r, "event")) {
    /* progress/done events may precede the reply: skip them */
    json_object_unref (r);
    request_read_next (task);
    return;
  }
  r = reply_checked (r, &err);
  if (r) {
    GST_DEBUG ("reply received");
    g_task_return_pointer (task, r, (GDestroyNotify) json_object_unref);
  } else {
    g_task_return_error (task, err);
  }
  g_object_unref (task);
}

static void
request_written_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  GTask *task = user_data;
  GError *err = NULL;

  if (!g_output_stream_write_all_finish (G_OUTPUT_STREAM (source), res, NULL,
          &err)) {
    g_task_return_error (task, err);
    g_object_unref (task);
    return;
  }
  request_read_next (task);
}

void
control_request_async (GDataInputStream * in, GOutputStream * out,
    JsonObject * req, GCancellable * cancellable,
    GAsyncReadyCallback callback, gpointer user_data)
{
  GTask *task = g_task_new (NULL, cancellable, callback, user_data);
  RequestData *d = g_new0 (RequestData, 1);
  gchar *text = twoflow_json_to_line (req);

  d->in = g_object_ref (in);
  d->line = g_strconcat (text, "\n", NULL);
  g_free (text);
  g_task_set_task_data (task, d, (GDestroyNotify) request_data_free);
  g_task_set_source_tag (task, control_request_async);
  GST_DEBUG ("request %s: sent", twoflow_json_get_string (req, "request",
          "?"));
  g_output_stream_write_all_async (out, d->line, strlen (d->line),
      G_PRIORITY_DEFAULT, cancellable, request_written_cb, task);
}

JsonObject *
control_request_finish (GAsyncResult * res, GError ** error)
{
  g_return_val_if_fail (g_task_is_valid (res, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (res), error);
}

void
control_read_async (GDataInputStream * in, GCancellable * cancellable,
    GAsyncReadyCallback callback, gpointer user_data)
{
  g_data_input_stream_read_line_async (in, G_PRIORITY_DEFAULT, cancellable,
      callback, user_data);
}

gboolean
control_read_finish (GDataInputStream * in, GAsyncResult * res,
    JsonObject ** ev, GError ** error)
{
  gchar *line = g_data_input_stream_read_line_finish_utf8 (in, res, NULL,
      error);

  *ev = NULL;
  if (line == NULL)
    return FALSE;
  *ev = twoflow_json_from_line (line, NULL);
  g_free (line);
  return TRUE;
}

/* the asynchronous connection: the socket client's connect (TLS included),
 * then AUTH with --token; the client's timeout bounds each step as in
 * control_connect */
static GSocketClient *
control_client_new (guint timeout, GError ** error)
{
  GSocketClient *client = g_socket_client_new ();
  TwoflowTlsClientConfig tls = { NULL, opt_tls_ca, opt_tls_pin,
    opt_tls_cert, opt_tls_key
  };

  g_socket_client_set_timeout (client, timeout);
  if (!opt_insecure && !twoflow_tls_socket_client_configure (client, &tls,
          error))
    g_clear_object (&client);
  return client;
}

static void
connect_auth_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  GTask *task = user_data;
  GError *err = NULL;
  JsonObject *r = control_request_finish (res, &err);

  if (r) {
    json_object_unref (r);
    g_task_return_pointer (task, g_object_ref (g_task_get_task_data (task)),
        g_object_unref);
  } else {
    /* the server's refusal: as control_connect's */
    if (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_FAILED))
      err->code = G_IO_ERROR_PERMISSION_DENIED;
    g_io_stream_close (g_task_get_task_data (task), NULL, NULL);
    g_task_return_error (task, err);
  }
  g_object_unref (task);
}

static void
connect_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  GTask *task = user_data;
  GError *err = NULL;
  GSocketConnection *conn =
      g_socket_client_connect_to_host_finish (G_SOCKET_CLIENT (source), res,
      &err);
  GDataInputStream *in;
  JsonObject *req;

  GST_DEBUG ("control connection to %s:%d: %s", server_host, server_port,
      conn ? "open" : "failed");
  if (!conn) {
    g_task_return_error (task, err);
    g_object_unref (task);
    return;
  }
  if (!opt_token) {
    g_task_return_pointer (task, conn, g_object_unref);
    g_object_unref (task);
    return;
  }
  g_task_set_task_data (task, conn, g_object_unref);
  in = g_data_input_stream_new (g_io_stream_get_input_stream (G_IO_STREAM
          (conn)));
  g_filter_input_stream_set_close_base_stream (G_FILTER_INPUT_STREAM (in),
      FALSE);
  req = twoflow_auth_request_to_json (opt_token);
  control_request_async (in, g_io_stream_get_output_stream (G_IO_STREAM
          (conn)), req, g_task_get_cancellable (task), connect_auth_cb, task);
  json_object_unref (req);
  g_object_unref (in);
}

void
control_connect_async (guint timeout, GCancellable * cancellable,
    GAsyncReadyCallback callback, gpointer user_data)
{
  GTask *task = g_task_new (NULL, cancellable, callback, user_data);
  GError *err = NULL;
  GSocketClient *client = control_client_new (timeout, &err);

  g_task_set_source_tag (task, control_connect_async);
  if (!client) {
    g_task_return_error (task, err);
    g_object_unref (task);
    return;
  }
  g_socket_client_connect_to_host_async (client, server_host, server_port,
      cancellable, connect_cb, task);
  g_object_unref (client);
}

GSocketConnection *
control_connect_finish (GAsyncResult * res, GError ** error)
{
  g_return_val_if_fail (g_task_is_valid (res, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (res), error);
}

GSocketConnection *
control_connect (guint timeout, GError ** error)
{
  GSocketClient *client = control_client_new (timeout, error);
  GSocketConnection *conn = NULL;

  if (client)
    conn = g_socket_client_connect_to_host (client, server_host, server_port,
        NULL, error);
  g_clear_object (&client);
  if (conn && opt_token) {
    GDataInputStream *in =
        g_data_input_stream_new (g_io_stream_get_input_stream (G_IO_STREAM
            (conn)));
    JsonObject *req = twoflow_auth_request_to_json (opt_token), *r = NULL;

    g_filter_input_stream_set_close_base_stream (G_FILTER_INPUT_STREAM (in),
        FALSE);
    if (twoflow_control_send (g_io_stream_get_output_stream (G_IO_STREAM
                (conn)), req, error))
      r = twoflow_control_recv (in, NULL, error);
    json_object_unref (req);
    g_object_unref (in);
    if (r && !twoflow_json_get_int (r, "ok", 0))
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
          "server: %s", twoflow_json_get_string (r, "error", "AUTH failed"));
    if (!r || !twoflow_json_get_int (r, "ok", 0)) {
      g_io_stream_close (G_IO_STREAM (conn), NULL, NULL);
      g_clear_object (&conn);
    }
    if (r)
      json_object_unref (r);
  }
  GST_DEBUG ("control connection to %s:%d: %s", server_host, server_port,
      conn ? "open" : "failed");
  return conn;
}

static gchar *
address_ip (GSocketAddress * a)
{
  gchar *ip = a && G_IS_INET_SOCKET_ADDRESS (a) ?
      g_inet_address_to_string (g_inet_socket_address_get_address
      (G_INET_SOCKET_ADDRESS (a))) : NULL;

  g_clear_object (&a);
  return ip;
}

/* The control connection's peer, the server: the only address the
 * receivers take media from (accept-host), also without TLS
 * (docs/security.md). */
gchar *
control_peer_ip (GSocketConnection * conn)
{
  return address_ip (g_socket_connection_get_remote_address (conn, NULL));
}

gchar *
control_local_ip (GSocketConnection * conn)
{
  return address_ip (g_socket_connection_get_local_address (conn, NULL));
}

void
twoflow_proxy_control_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_control_debug,
      "twoflow-proxy-control", 0, "twoflow-proxy: the control client");
}
