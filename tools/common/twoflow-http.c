/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "twoflow-http.h"
#include "twoflow-metrics.h"

#include <libsoup/soup.h>
#include <glib/gstdio.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static SoupServer *server;
static TwoflowHttpHooks hooks;
static gchar *www_dir, *hls_dir;
static gchar *auth_user, *auth_password;

void
twoflow_http_set_basic_auth (const gchar * user, const gchar * password)
{
  g_free (auth_user);
  g_free (auth_password);
  auth_user = g_strdup (user);
  auth_password = g_strdup (password ? password : "");
}

/* Equal strings, in time independent of where they differ (and of the
 * length of the secret: both are hashed first). */
static gboolean
secret_equal (const gchar * a, const gchar * b)
{
  gchar *ha = g_compute_checksum_for_string (G_CHECKSUM_SHA256, a ? a : "",
      -1);
  gchar *hb = g_compute_checksum_for_string (G_CHECKSUM_SHA256, b ? b : "",
      -1);
  guint8 d = 0;
  gsize i;

  for (i = 0; ha[i] && hb[i]; i++)
    d |= (guint8) ha[i] ^ (guint8) hb[i];
  g_free (ha);
  g_free (hb);
  return d == 0 && a && b;
}

static gboolean
basic_auth_cb (SoupAuthDomain * domain, SoupServerMessage * msg,
    const char *username, const char *password, gpointer data)
{
  /* both compared, always */
  gboolean user_ok = secret_equal (username, auth_user);
  gboolean pass_ok = secret_equal (password, auth_password);

  return user_ok && pass_ok;
}

struct _TwoflowMetrics
{
  GPtrArray *names;             /* order of first appearance */
  GHashTable *families;         /* name -> GString (head + samples) */
};

TwoflowMetrics *
twoflow_metrics_new (void)
{
  TwoflowMetrics *m = g_new0 (TwoflowMetrics, 1);
  m->names = g_ptr_array_new ();
  m->families = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  return m;
}

void
twoflow_metric (TwoflowMetrics * m, const gchar * name, const gchar * type,
    const gchar * help, const gchar * labels, gdouble value)
{
  GString *s = g_hash_table_lookup (m->families, name);
  gchar num[G_ASCII_DTOSTR_BUF_SIZE];

  if (!s) {
    s = g_string_new (NULL);
    g_string_append_printf (s, "# HELP %s %s\n# TYPE %s %s\n", name, help,
        name, type);
    g_hash_table_insert (m->families, g_strdup (name), s);
    g_ptr_array_add (m->names, s);
  }
  g_ascii_dtostr (num, sizeof num, value);
  if (labels && *labels)
    g_string_append_printf (s, "%s{%s} %s\n", name, labels, num);
  else
    g_string_append_printf (s, "%s %s\n", name, num);
}

gchar *
twoflow_metrics_render (TwoflowMetrics * m)
{
  GString *out = g_string_new (NULL);
  guint i;

  for (i = 0; i < m->names->len; i++) {
    GString *s = g_ptr_array_index (m->names, i);
    g_string_append_len (out, s->str, s->len);
    g_string_free (s, TRUE);
  }
  g_ptr_array_free (m->names, TRUE);
  g_hash_table_destroy (m->families);
  g_free (m);
  return g_string_free (out, FALSE);
}

static void
reply_text (SoupServerMessage * msg, guint status, const gchar * type,
    gchar * body, gsize len)
{
  SoupMessageHeaders *h = soup_server_message_get_response_headers (msg);

  soup_message_headers_replace (h, "Cache-Control", "no-cache");
  soup_message_headers_replace (h, "Access-Control-Allow-Origin", "*");
  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg, type, SOUP_MEMORY_TAKE, body, len);
}

static const gchar *
mime_for (const gchar * path)
{
  if (g_str_has_suffix (path, ".m3u8"))
    return "application/vnd.apple.mpegurl";
  if (g_str_has_suffix (path, ".ts"))
    return "video/mp2t";
  if (g_str_has_suffix (path, ".js"))
    return "text/javascript";
  if (g_str_has_suffix (path, ".css"))
    return "text/css";
  if (g_str_has_suffix (path, ".html"))
    return "text/html; charset=utf-8";
  return "application/octet-stream";
}

/* the proxy's playlists (twoflow-hls.c) have no EXT-X-PLAYLIST-TYPE: one
 * only grows, an EVENT playlist, and is VOD once it ends (EXT-X-ENDLIST):
 * a player may seek in all of it. */
static gchar *
playlist_with_type (gchar * body, gsize * len)
{
  const gchar *type;
  gchar *nl, *out;

  if (!g_str_has_prefix (body, "#EXTM3U") || strstr (body,
          "#EXT-X-PLAYLIST-TYPE") || !(nl = strchr (body, '\n')))
    return body;
  type = strstr (body, "#EXT-X-ENDLIST") ? "VOD" : "EVENT";
  out = g_strdup_printf ("%.*s#EXT-X-PLAYLIST-TYPE:%s\n%s",
      (int) (nl - body + 1), body, type, nl + 1);
  g_free (body);
  *len = strlen (out);
  return out;
}

static gboolean
serve_file (SoupServerMessage * msg, const gchar * file)
{
  gchar *body = NULL;
  gsize len = 0;

  if (!g_file_get_contents (file, &body, &len, NULL))
    return FALSE;
  if (g_str_has_suffix (file, ".m3u8"))
    body = playlist_with_type (body, &len);
  reply_text (msg, SOUP_STATUS_OK, mime_for (file), body, len);
  return TRUE;
}

static gboolean
safe_name (const gchar * s)
{
  return s && *s && s[0] != '.' && !strchr (s, '/') && !strchr (s, '\\');
}

/* TRUE when the playlist @file is there and, for a blocking reload
 * (@msn >= 0: the player's _HLS_msn), lists segment @msn or has ended */
static gboolean
playlist_ready (const gchar * file, gint64 msn)
{
  gchar *body = NULL, *p;
  gint64 n = 0;
  gboolean r;

  if (msn < 0)
    return g_file_test (file, G_FILE_TEST_IS_REGULAR);
  if (!g_file_get_contents (file, &body, NULL, NULL))
    return FALSE;
  /* the playlists here start at media sequence 0 */
  for (p = body; (p = strstr (p, "#EXTINF:")); p++)
    n++;
  r = n > msn || strstr (body, "#EXT-X-ENDLIST") != NULL;
  g_free (body);
  return r;
}

/* a playlist that is not there yet, or not yet what a blocking reload
 * asks for: wait for it (a live session starts, or runs) */
typedef struct
{
  SoupServerMessage *msg;
  gchar *file, *video;
  gint64 msn;
  gint tries;
} Wait;

static gboolean
wait_cb (gpointer user_data)
{
  Wait *w = user_data;
  gchar *failure = hooks.hls_failure ? hooks.hls_failure (w->video,
      hooks.data) : NULL;

  if (failure || playlist_ready (w->file, w->msn) || --w->tries <= 0) {
    if (failure) {
      gchar *t = g_strdup_printf ("%s\n", failure);
      reply_text (w->msg, SOUP_STATUS_SERVICE_UNAVAILABLE, "text/plain", t,
          strlen (t));
    } else if (!serve_file (w->msg, w->file))
      reply_text (w->msg, SOUP_STATUS_SERVICE_UNAVAILABLE, "text/plain",
          g_strdup ("playlist not ready\n"), strlen ("playlist not ready\n"));
    soup_server_message_unpause (w->msg);
    g_object_unref (w->msg);
    g_free (failure);
    g_free (w->file);
    g_free (w->video);
    g_free (w);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

/* an HLS segment still being written: sent as it grows (chunked), so a
 * player that asks for the open segment gets its first frames at once */
typedef struct
{
  SoupServerMessage *msg;
  gchar *video, *name, *file;
  gint fd;
  gint waits;
  gboolean gone;
  gulong finished_id;
} Grow;

static void
grow_finished (SoupServerMessage * msg, gpointer data)
{
  ((Grow *) data)->gone = TRUE;
}

static gboolean
grow_cb (gpointer data)
{
  Grow *g = data;
  SoupMessageBody *body;
  gboolean growing, more = FALSE;
  gchar buf[65536];
  gssize n;

  if (g->gone)
    goto done;
  body = soup_server_message_get_response_body (g->msg);
  /* asked before reading: once it is not growing, what is read next is
   * all the rest */
  growing = hooks.hls_growing (g->video, g->name, hooks.data);
  if (g->fd < 0)
    g->fd = g_open (g->file, O_RDONLY, 0);
  if (g->fd < 0) {
    /* not there yet (or it appeared just now: read it next time) */
    if ((growing || g_file_test (g->file, G_FILE_TEST_IS_REGULAR))
        && --g->waits > 0)
      return G_SOURCE_CONTINUE;
    growing = FALSE;
  }
  while (g->fd >= 0 && (n = read (g->fd, buf, sizeof buf)) > 0) {
    soup_message_body_append (body, SOUP_MEMORY_COPY, buf, n);
    more = TRUE;
  }
  if (!growing)
    soup_message_body_complete (body);
  if (more || !growing)
    soup_server_message_unpause (g->msg);
  if (growing)
    return G_SOURCE_CONTINUE;
done:
  if (!g->gone)
    g_signal_handler_disconnect (g->msg, g->finished_id);
  if (g->fd >= 0)
    close (g->fd);
  g_object_unref (g->msg);
  g_free (g->video);
  g_free (g->name);
  g_free (g->file);
  g_free (g);
  return G_SOURCE_REMOVE;
}

static void
serve_growing (SoupServerMessage * msg, const gchar * video,
    const gchar * name, const gchar * file, gboolean paused)
{
  Grow *g = g_new0 (Grow, 1);
  SoupMessageHeaders *h = soup_server_message_get_response_headers (msg);

  g->msg = g_object_ref (msg);
  g->video = g_strdup (video);
  g->name = g_strdup (name);
  g->file = g_strdup (file);
  g->fd = -1;
  g->waits = 250;               /* 10 s for the file to appear */
  soup_message_headers_replace (h, "Cache-Control", "no-cache");
  soup_message_headers_replace (h, "Access-Control-Allow-Origin", "*");
  soup_message_headers_set_content_type (h, mime_for (file), NULL);
  soup_message_headers_set_encoding (h, SOUP_ENCODING_CHUNKED);
  soup_message_body_set_accumulate (soup_server_message_get_response_body
      (msg), FALSE);
  soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
  g->finished_id = g_signal_connect (msg, "finished",
      G_CALLBACK (grow_finished), g);
  if (!paused)
    soup_server_message_pause (msg);
  g_timeout_add (40, grow_cb, g);
}

static void
reply_not_found (SoupServerMessage * msg)
{
  reply_text (msg, SOUP_STATUS_NOT_FOUND, "text/plain",
      g_strdup ("not found\n"), 10);
}

/* @name of @video, its run started (@paused: @msg waited for that) */
static void
hls_serve (SoupServerMessage * msg, const gchar * video, const gchar * name,
    const gchar * file, gint64 msn, gboolean paused)
{
  /* a blocking playlist reload (LL-HLS _HLS_msn, the playlist says
   * CAN-BLOCK-RELOAD while it grows): answered once the playlist lists
   * that segment, so hls.js hears of the next segment when it opens
   * instead of a reload interval later */
  if (g_str_equal (name, "index.m3u8") && !playlist_ready (file, msn)) {
    Wait *w = g_new0 (Wait, 1);
    w->msg = g_object_ref (msg);
    w->file = g_strdup (file);
    w->video = g_strdup (video);
    w->msn = msn;
    /* 20 s / 30 s, looked at every 40 ms: a new video's playlist is
     * written once the merge's first frames are (a viewer's first wait) */
    w->tries = msn >= 0 ? 500 : 750;
    if (!paused)
      soup_server_message_pause (msg);
    g_timeout_add (40, wait_cb, w);
    return;
  }
  if (hooks.hls_growing && hooks.hls_growing (video, name, hooks.data)) {
    serve_growing (msg, video, name, file, paused);
    return;
  }
  if (!serve_file (msg, file))
    reply_not_found (msg);
  if (paused)
    soup_server_message_unpause (msg);
}

/* a playlist request waiting for its video's run to start (hls_ensure):
 * the main loop serves the others meanwhile */
typedef struct
{
  SoupServerMessage *msg;
  gchar *video, *name, *file;
  gint64 msn;
} Ensure;

static void
hls_ensured (GObject * source, GAsyncResult * res, gpointer user_data)
{
  Ensure *e = user_data;
  GError *err = NULL;

  if (hooks.hls_ensure_finish (res, &err)) {
    hls_serve (e->msg, e->video, e->name, e->file, e->msn, TRUE);
  } else {
    gchar *t = g_strdup_printf ("%s\n", err->message);
    reply_text (e->msg, strstr (err->message, "no such") ?
        SOUP_STATUS_NOT_FOUND : SOUP_STATUS_SERVICE_UNAVAILABLE,
        "text/plain", t, strlen (t));
    g_clear_error (&err);
    soup_server_message_unpause (e->msg);
  }
  g_object_unref (e->msg);
  g_free (e->video);
  g_free (e->name);
  g_free (e->file);
  g_free (e);
}

static void
handle_hls (SoupServerMessage * msg, const gchar * path, GHashTable * query)
{
  gchar **parts = g_strsplit (path + strlen ("/hls/"), "/", -1);
  gchar *video = NULL, *file = NULL;
  const gchar *m = query ? g_hash_table_lookup (query, "_HLS_msn") : NULL;
  gint64 msn = m ? g_ascii_strtoll (m, NULL, 10) : -1;

  if (g_strv_length (parts) != 2 || !safe_name (parts[1])) {
    reply_not_found (msg);
    goto done;
  }
  video = g_uri_unescape_string (parts[0], NULL);
  if (!safe_name (video)) {
    reply_not_found (msg);
    goto done;
  }
  file = g_build_filename (hls_dir, video, parts[1], NULL);
  if (g_str_equal (parts[1], "index.m3u8") && hooks.hls_ensure) {
    Ensure *e = g_new0 (Ensure, 1);

    e->msg = g_object_ref (msg);
    e->video = g_strdup (video);
    e->name = g_strdup (parts[1]);
    e->file = g_strdup (file);
    e->msn = msn;
    soup_server_message_pause (msg);
    hooks.hls_ensure (video, hooks.data, hls_ensured, e);
    goto done;
  }
  hls_serve (msg, video, parts[1], file, msn, FALSE);
done:
  g_free (video);
  g_free (file);
  g_strfreev (parts);
}

/* /videos, answered once the program has the list */
static void
videos_done (GObject * source, GAsyncResult * res, gpointer user_data)
{
  SoupServerMessage *msg = user_data;
  GError *err = NULL;
  gchar *t = hooks.videos_finish (res, &err);

  if (t) {
    reply_text (msg, SOUP_STATUS_OK, "application/json", t, strlen (t));
  } else {
    t = g_strdup_printf ("%s\n", err->message);
    reply_text (msg, SOUP_STATUS_BAD_GATEWAY, "text/plain", t, strlen (t));
    g_clear_error (&err);
  }
  soup_server_message_unpause (msg);
  g_object_unref (msg);
}

static void
handler (SoupServer * srv, SoupServerMessage * msg, const char *path,
    GHashTable * query, gpointer user_data)
{
  const gchar *method = soup_server_message_get_method (msg);

  if (strcmp (method, "GET") != 0 && strcmp (method, "HEAD") != 0) {
    soup_server_message_set_status (msg, SOUP_STATUS_NOT_IMPLEMENTED, NULL);
    return;
  }
  if (g_str_equal (path, "/healthz")) {
    reply_text (msg, SOUP_STATUS_OK, "text/plain", g_strdup ("ok\n"), 3);
  } else if (g_str_equal (path, "/metrics")) {
    TwoflowMetrics *m = twoflow_metrics_new ();
    gchar *t;
    twoflow_metric (m, "twoflow_up", "gauge", "The program answers", NULL, 1);
    twoflow_metrics_build_info (m);
    if (hooks.metrics)
      hooks.metrics (m, hooks.data);
    t = twoflow_metrics_render (m);
    reply_text (msg, SOUP_STATUS_OK, "text/plain; version=0.0.4", t,
        strlen (t));
  } else if (g_str_equal (path, "/status") && hooks.status) {
    gchar *t = hooks.status (hooks.data);
    reply_text (msg, SOUP_STATUS_OK, "application/json", t, strlen (t));
  } else if (g_str_equal (path, "/videos") && hooks.videos) {
    soup_server_message_pause (msg);
    hooks.videos (hooks.data, videos_done, g_object_ref (msg));
  } else if (g_str_has_prefix (path, "/hls/") && hls_dir) {
    handle_hls (msg, path, query);
  } else if (www_dir && (g_str_equal (path, "/")
          || (safe_name (path + 1)))) {
    gchar *f = g_build_filename (www_dir, g_str_equal (path, "/") ?
        "index.html" : path + 1, NULL);
    if (!serve_file (msg, f))
      reply_text (msg, SOUP_STATUS_NOT_FOUND, "text/plain",
          g_strdup ("not found\n"), 10);
    g_free (f);
  } else {
    reply_text (msg, SOUP_STATUS_NOT_FOUND, "text/plain",
        g_strdup ("not found\n"), 10);
  }
}

/* One listening socket on @address (NULL: every address, IPv6 and IPv4,
 * or IPv4 alone where IPv6 is off), with a backlog of 128 (libsoup's
 * own sockets keep the kernel's default of 10 waiting connections). */
static gboolean
listen_on (SoupServer * srv, const gchar * address, guint port,
    GError ** error)
{
  const gchar *tries[] = { address, NULL };
  guint i;

  if (address == NULL) {
    tries[0] = "::";
    tries[1] = "0.0.0.0";
  }
  for (i = 0; i < G_N_ELEMENTS (tries) && tries[i]; i++) {
    GSocketAddress *sa = g_inet_socket_address_new_from_string (tries[i],
        port);
    GSocket *sock;
    gboolean ok;

    g_clear_error (error);
    if (sa == NULL) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
          "not an IP address: %s", tries[i]);
      return FALSE;
    }
    sock = g_socket_new (g_socket_address_get_family (sa),
        G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, error);
    ok = sock != NULL;
    if (ok) {
      g_socket_set_listen_backlog (sock, 128);
      ok = g_socket_bind (sock, sa, TRUE, error) && g_socket_listen (sock,
          error) && soup_server_listen_socket (srv, sock, 0, error);
    }
    g_clear_object (&sock);
    g_object_unref (sa);
    if (ok)
      return TRUE;
  }
  return FALSE;
}

gboolean
twoflow_http_start (const gchar * address, guint port, const gchar * www,
    const gchar * hls, const TwoflowHttpHooks * h, GError ** error)
{
  hooks = *h;
  www_dir = g_strdup (www);
  hls_dir = g_strdup (hls);
  server = soup_server_new ("server-header", "twoflow ", NULL);
  soup_server_add_handler (server, NULL, handler, NULL, NULL);
  if (auth_user) {
    /* everything but /healthz (a liveness probe carries no data) */
    SoupAuthDomain *domain = soup_auth_domain_basic_new ("realm", "twoflow",
        NULL);

    soup_auth_domain_basic_set_auth_callback (domain, basic_auth_cb, NULL,
        NULL);
    soup_auth_domain_add_path (domain, "/");
    soup_auth_domain_remove_path (domain, "/healthz");
    soup_server_add_auth_domain (server, domain);
    g_object_unref (domain);
  }
  if (!listen_on (server, address, port, error)) {
    g_clear_object (&server);
    return FALSE;
  }
  return TRUE;
}
