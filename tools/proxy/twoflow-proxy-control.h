/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — the control client: a connection to twoflow-server
 * (TLS and AUTH as configured) and its requests, asynchronous on the main
 * loop, blocking only in gst-rtsp-server's client threads
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROXY_CONTROL_H__
#define __TWOFLOW_PROXY_CONTROL_H__

#include <gio/gio.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* A control connection to the server: TLS as configured (--tls-ca,
 * --tls-pin, --tls-cert; none with --insecure) and AUTH with --token.
 * Blocks up to @timeout s: for the RTSP client threads and fetch. */
GSocketConnection *control_connect (guint timeout, GError ** error);
/* and asynchronous, on the caller's thread-default main context: the main
 * loop's HLS runs and /videos (@cancellable: the request going away) */
void control_connect_async (guint timeout, GCancellable * cancellable,
    GAsyncReadyCallback callback, gpointer user_data);
GSocketConnection *control_connect_finish (GAsyncResult * res,
    GError ** error);

/* One request and its reply (the server's events before it skipped; a
 * reply without "ok" is an error "server: ..."). Blocking: */
JsonObject *control_request (GDataInputStream * in, GOutputStream * out,
    JsonObject * req, GError ** error);
/* and asynchronous, completed in the thread-default main context of the
 * caller (@cancellable: the session going away) */
void control_request_async (GDataInputStream * in, GOutputStream * out,
    JsonObject * req, GCancellable * cancellable,
    GAsyncReadyCallback callback, gpointer user_data);
JsonObject *control_request_finish (GAsyncResult * res, GError ** error);

/* The next line of the connection (an event): FALSE at its end (@error
 * set when it failed or was cancelled), else TRUE and the line parsed
 * into @ev (NULL: not a JSON object; reading goes on) */
void control_read_async (GDataInputStream * in, GCancellable * cancellable,
    GAsyncReadyCallback callback, gpointer user_data);
gboolean control_read_finish (GDataInputStream * in, GAsyncResult * res,
    JsonObject ** ev, GError ** error);

/* The connection's peer (the server) and our side, as IP strings */
gchar *control_peer_ip (GSocketConnection * conn);
gchar *control_local_ip (GSocketConnection * conn);

void twoflow_proxy_control_init (void);

G_END_DECLS
#endif
