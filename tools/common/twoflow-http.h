/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The HTTP side of the twoflow programs (libsoup 3): /healthz, /metrics
 * (Prometheus text), /status (JSON), /videos (JSON), the web page at / and
 * HLS playlists and segments at /hls/<video>/... Every answer is built by
 * the program through the hooks; the server leaves the HLS ones NULL. */
#ifndef TWOFLOW_HTTP_H
#define TWOFLOW_HTTP_H

#include <gio/gio.h>

G_BEGIN_DECLS

struct _TwoflowMetrics;
typedef struct
{
  /* the samples of /metrics */
  void (*metrics) (struct _TwoflowMetrics * m, gpointer data);
  /* JSON text of /status */
  gchar *(*status) (gpointer data);
  /* JSON text of /videos, asynchronous: the request waits, the others
   * are served (NULL + @error: 502) */
  void (*videos) (gpointer data, GAsyncReadyCallback callback,
      gpointer user_data);
  /* HLS: make sure @video's playlist is (or will soon be) in @hls_dir/@video
   * (a live session starts, or the cached one is served), asynchronous
   * (FALSE + @error: 404 if its message says "no such", else 503) */
  void (*hls_ensure) (const gchar * video, gpointer data,
      GAsyncReadyCallback callback, gpointer user_data);
  gpointer data;
  /* HLS: TRUE while @file of @video is still being written: it is sent as
   * it grows (chunked) until it is complete */
  gboolean (*hls_growing) (const gchar * video, const gchar * file,
      gpointer data);
  /* HLS: why @video's run failed (NULL: it did not; freed by the caller):
   * a request waiting for its playlist gets it at once, not a bare 503 */
  gchar *(*hls_failure) (const gchar * video, gpointer data);
  /* the results of videos and hls_ensure */
  gchar *(*videos_finish) (GAsyncResult * res, GError ** error);
  gboolean (*hls_ensure_finish) (GAsyncResult * res, GError ** error);
} TwoflowHttpHooks;

/* HTTP basic authentication on every path but /healthz (call before
 * twoflow_http_start; NULL @user: none, the default). Credentials are
 * only as secret as the transport: plain HTTP, so for a trusted LAN or
 * behind a TLS-terminating reverse proxy. */
void twoflow_http_set_basic_auth (const gchar * user, const gchar * password);

/* Listens on @address:@port (@address NULL: all addresses, IPv4 and
 * IPv6). @www_dir: the page's files (NULL: no page); @hls_dir: HLS cache
 * (NULL: no HLS). */
gboolean twoflow_http_start (const gchar * address, guint port,
    const gchar * www_dir,
    const gchar * hls_dir, const TwoflowHttpHooks * hooks, GError ** error);

/* Prometheus text: samples grouped by metric, # HELP/# TYPE once each */
typedef struct _TwoflowMetrics TwoflowMetrics;
TwoflowMetrics *twoflow_metrics_new (void);
void twoflow_metric (TwoflowMetrics * m, const gchar * name,
    const gchar * type, const gchar * help, const gchar * labels,
    gdouble value);
/* frees @m */
gchar *twoflow_metrics_render (TwoflowMetrics * m);

G_END_DECLS
#endif

