/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — its options (command line and config file), checked
 * once at start, read by every module afterwards
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_PROXY_OPTIONS_H__
#define __TWOFLOW_PROXY_OPTIONS_H__

#include <glib.h>

G_BEGIN_DECLS

extern gchar *opt_server;
extern gchar *opt_fetch;
extern gchar *opt_output;
extern gchar *opt_prestage;
extern gchar *opt_arrivals;
extern gchar *opt_prefix_dir;
extern gchar *opt_essential;
extern gchar *opt_policy;
extern gdouble opt_segment;
extern gdouble opt_wan_capacity;
extern gboolean opt_measured;
extern gchar *opt_admission_rate;
extern gint opt_rtsp_port;
extern gchar *opt_rtsp_address;
extern gint opt_latency_ms;
extern gint opt_jitter_ms;
extern gint opt_essential_ports;
extern gint opt_enhanced_ports;
extern gchar *opt_video_track;
extern gchar *opt_audio_track;
extern gint opt_http_port;
extern gchar *opt_hls_dir;
extern gchar *opt_www_dir;
extern gint64 opt_prefix_max_bytes;
extern gchar *opt_config;
/* control-channel security (docs/security.md) */
extern gboolean opt_version;
extern gboolean opt_insecure;
extern gboolean opt_nat;
extern gchar *opt_tls_ca, *opt_tls_pin;
extern gchar *opt_tls_cert, *opt_tls_key;
extern gchar *opt_token, *opt_token_file;
/* viewers: RTSP basic authentication, RTSPS */
extern gchar *opt_rtsp_user, *opt_rtsp_password;
extern gchar *opt_http_user, *opt_http_password;
/* the secrets from files (LoadCredential=), not seen in ps */
extern gchar *opt_rtsp_password_file, *opt_http_password_file;
extern gchar *opt_http_address;
extern gchar *opt_rtsp_tls_cert, *opt_rtsp_tls_key;

/* the server's control address, from --server */
extern gchar *server_host;
extern gint server_port;

/* Each: -1 to go on, else the exit code (0: --version). */
gint twoflow_proxy_options_parse (gint argc, gchar ** argv);
gint twoflow_proxy_options_check (void);

G_END_DECLS
#endif
