/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — its HTTP side: /metrics (Prometheus text: sessions,
 * and per session the flows' bytes, rates, RTT, loss, retransmissions,
 * late segments, the transcoder's target: twoflow-metrics.c), /status
 * (JSON), /healthz; SIGHUP forgets the scanned videos so changed files are
 * scanned again
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

#include <stdlib.h>
#include <gst/gst.h>
#include "twoflow-http.h"
#include "twoflow-metrics.h"
#include "twoflow-control.h"
#include "twoflow-server-web.h"
#include "twoflow-server-catalog.h"
#include "twoflow-server-media.h"
#include "twoflow-server-pool.h"
#include "twoflow-server-options.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_web_debug);
#define GST_CAT_DEFAULT twoflow_server_web_debug

static void
web_metrics (TwoflowMetrics * m, gpointer data)
{
  GPtrArray *all;
  GList *l, *list;

  twoflow_metric (m, "twoflow_server_sessions", "gauge", "Sessions running",
      NULL, session_pool_size ());
  twoflow_metric (m, "twoflow_server_sessions_started_total", "counter",
      "Sessions started", NULL, session_pool_total ());
  twoflow_metric (m, "twoflow_server_videos_scanned", "gauge",
      "Videos scanned (cached)", NULL, catalog_n_scanned ());
  /* per session: rates, bytes, RTT, loss, retransmissions, the
   * transcoder's target (bounded: twoflow-metrics.c) */
  all = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
  list = session_pool_list ();
  for (l = list; l; l = l->next)
    g_ptr_array_add (all, session_stats (l->data));
  g_list_free (list);
  twoflow_metrics_server_sessions (m, all);
}

static gchar *
web_status (gpointer data)
{
  JsonObject *root = json_object_new ();
  JsonArray *a = json_array_new ();
  GList *l, *list = session_pool_list ();
  gchar *t;

  for (l = list; l; l = l->next)
    json_array_add_object_element (a, session_stats (l->data));
  g_list_free (list);
  json_object_set_array_member (root, "sessions", a);
  json_object_set_string_member (root, "dir", opt_dir);
  t = twoflow_json_to_line (root);
  json_object_unref (root);
  return t;
}

/* --http-port: listening (an error there ends the program) */
void
twoflow_server_web_start (void)
{
  TwoflowHttpHooks hooks = { web_metrics, web_status, NULL, NULL, NULL };
  GError *err = NULL;

  const gchar *address = opt_http_address ? opt_http_address : opt_address;

  GST_DEBUG_CATEGORY_INIT (twoflow_server_web_debug, "twoflow-server-web", 0,
      "twoflow-server: the HTTP side");
  if (opt_http_port <= 0)
    return;
  if (opt_http_user)
    twoflow_http_set_basic_auth (opt_http_user, opt_http_password);
  if (!twoflow_http_start (address, opt_http_port, NULL, NULL, &hooks, &err)) {
    g_printerr ("cannot listen for HTTP on %s port %d: %s\n",
        address ? address : "every address", opt_http_port, err->message);
    exit (1);
  }
  GST_INFO ("HTTP on port %d", opt_http_port);
  g_print ("twoflow-server: HTTP on port %d of %s (/metrics, /status, "
      "/healthz%s)\n", opt_http_port, address ? address : "every address",
      opt_http_user ? "; basic authentication but /healthz" : "");
}

/* SIGHUP: scanned videos no session uses are forgotten (scanned again at
 * their next INFO/PLAY); LIST reads the directory anew anyway. */
gboolean
twoflow_server_web_reload (gpointer data)
{
  GHashTable *used = g_hash_table_new (NULL, NULL);
  GList *l, *list = session_pool_list ();
  guint n;

  for (l = list; l; l = l->next)
    g_hash_table_add (used, ((Session *) l->data)->info);
  g_list_free (list);
  n = catalog_forget_unused (used);
  g_hash_table_destroy (used);
  g_print ("twoflow-server: SIGHUP: video list reloaded (%u scan(s) "
      "forgotten)\n", n);
  return G_SOURCE_CONTINUE;
}
