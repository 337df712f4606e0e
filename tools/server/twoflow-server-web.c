/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server's HTTP side (included by twoflow-server.c): /metrics
 * (Prometheus text: sessions, and per session the flows' bytes, rates,
 * RTT, loss, retransmissions, late segments, the transcoder's target:
 * twoflow-metrics.c), /status (JSON),
 * /healthz; SIGHUP forgets the scanned videos so changed files are scanned
 * again. */

#include "twoflow-http.h"
#include "twoflow-metrics.h"

static void
web_metrics (TwoflowMetrics * m, gpointer data)
{
  GHashTableIter it;
  GPtrArray *all;
  gpointer v;

  twoflow_metric (m, "twoflow_server_sessions", "gauge", "Sessions running",
      NULL, g_hash_table_size (sessions));
  twoflow_metric (m, "twoflow_server_sessions_started_total", "counter",
      "Sessions started", NULL, sessions_total);
  twoflow_metric (m, "twoflow_server_videos_scanned", "gauge",
      "Videos scanned (cached)", NULL, catalog_n_scanned ());
  /* per session: rates, bytes, RTT, loss, retransmissions, the
   * transcoder's target (bounded: twoflow-metrics.c) */
  all = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
  g_hash_table_iter_init (&it, sessions);
  while (g_hash_table_iter_next (&it, NULL, &v))
    g_ptr_array_add (all, session_stats (v));
  twoflow_metrics_server_sessions (m, all);
}

static gchar *
web_status (gpointer data)
{
  JsonObject *root = json_object_new ();
  JsonArray *a = json_array_new ();
  GHashTableIter it;
  gpointer v;
  gchar *t;

  g_hash_table_iter_init (&it, sessions);
  while (g_hash_table_iter_next (&it, NULL, &v))
    json_array_add_object_element (a, session_stats (v));
  json_object_set_array_member (root, "sessions", a);
  json_object_set_string_member (root, "dir", opt_dir);
  t = twoflow_json_to_line (root);
  json_object_unref (root);
  return t;
}

static void
web_start (void)
{
  TwoflowHttpHooks hooks = { web_metrics, web_status, NULL, NULL, NULL };
  GError *err = NULL;

  const gchar *address = opt_http_address ? opt_http_address : opt_address;

  if (opt_http_port <= 0)
    return;
  if (opt_http_user)
    twoflow_http_set_basic_auth (opt_http_user, opt_http_password);
  if (!twoflow_http_start (address, opt_http_port, NULL, NULL, &hooks, &err)) {
    g_printerr ("cannot listen for HTTP on %s port %d: %s\n",
        address ? address : "every address", opt_http_port, err->message);
    exit (1);
  }
  g_print ("twoflow-server: HTTP on port %d of %s (/metrics, /status, "
      "/healthz%s)\n", opt_http_port, address ? address : "every address",
      opt_http_user ? "; basic authentication but /healthz" : "");
}

/* SIGHUP: scanned videos no session uses are forgotten (scanned again at
 * their next INFO/PLAY); LIST reads the directory anew anyway. */
static gboolean
web_reload (gpointer data)
{
  GHashTable *used = g_hash_table_new (NULL, NULL);
  GHashTableIter it;
  gpointer v;
  guint n;

  g_hash_table_iter_init (&it, sessions);
  while (g_hash_table_iter_next (&it, NULL, &v))
    g_hash_table_add (used, ((Session *) v)->info);
  n = catalog_forget_unused (used);
  g_hash_table_destroy (used);
  g_print ("twoflow-server: SIGHUP: video list reloaded (%u scan(s) "
      "forgotten)\n", n);
  return G_SOURCE_CONTINUE;
}
