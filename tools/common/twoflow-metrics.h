/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The series an operator graphs (issue 26): per-session families with
 * Prometheus names (base units: bytes, seconds, bit/s; `_total` for
 * counters) picked from the session statistics both programs already
 * report in /status, a bounded number of sessions per scrape, and
 * twoflow_build_info. */
#ifndef TWOFLOW_METRICS_H
#define TWOFLOW_METRICS_H

#include <json-glib/json-glib.h>
#include "twoflow-http.h"

G_BEGIN_DECLS

/* At most this many sessions get per-session series in one scrape (the
 * longest running ones); the others are counted in
 * <program>_sessions_unexposed, so the label sets stay bounded. The
 * environment variable TWOFLOW_METRICS_MAX_SESSIONS overrides it. */
#define TWOFLOW_METRICS_MAX_SESSIONS 32

/* @value with \, " and newlines escaped for a label value (free it) */
gchar *twoflow_metrics_label_escape (const gchar * value);

/* twoflow_build_info{program=…,version=…,gstreamer=…} 1 */
void twoflow_metrics_build_info (TwoflowMetrics * m);

/* Per-session series of twoflow-server from session_stats() objects
 * (essential_stats, enhanced_stats, transcoder_stats, rate_controller):
 * labelled session and video. Takes @sessions (JsonObject, unreffed). */
void twoflow_metrics_server_sessions (TwoflowMetrics * m, GPtrArray * sessions);

/* Per-session series of twoflow-proxy from its /status session objects
 * (merge, rudpsrc, jitterbuffer, health): labelled session, video and
 * kind. @sessions in start order; takes it. */
void twoflow_metrics_proxy_sessions (TwoflowMetrics * m, GPtrArray * sessions);

G_END_DECLS
#endif
