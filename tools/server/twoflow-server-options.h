/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — its options (command line and config file), checked
 * once at start, read by every module afterwards
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_OPTIONS_H__
#define __TWOFLOW_SERVER_OPTIONS_H__

#include <gio/gio.h>
#include "twoflow-auth.h"

G_BEGIN_DECLS

extern gchar *opt_dir;
extern gchar *opt_address;
extern gint opt_port;
/* control-channel security and limits (docs/security.md) */
extern gboolean opt_version;
extern gboolean opt_insecure;
extern gchar *opt_tls_cert, *opt_tls_key;
extern gchar *opt_tls_client_ca;
extern gchar *opt_tokens;
extern gint opt_max_connections;
extern gint opt_max_line;
extern gint opt_max_sessions;
extern gint opt_max_client_sessions;
extern gint opt_auth_timeout;
extern gint opt_max_pending_per_address;
extern gint opt_max_output;
/* the enhanced flow's pacing: "smooth", "total" or "peak" */
extern gchar *opt_enhanced_rate;
extern gdouble opt_smoothing_window;
extern gdouble opt_smoothing_lead;
/* start-up: "ramp" or "segment" */
extern gchar *opt_startup;
extern gdouble opt_startup_lead;
extern gdouble opt_startup_factor;
extern gint64 opt_startup_max_rate;
extern gdouble opt_connect_timeout;
/* rate adaptation: "session" or "events" */
extern gchar *opt_rate_controller;
extern gint opt_rc_interval;
extern gdouble opt_rc_qdelay;
extern gdouble opt_rc_decrease;
extern gdouble opt_rc_increase;
extern gdouble opt_rc_loss_threshold;
extern gint opt_rc_tcp_floor;
extern gdouble opt_rc_headroom;
extern gint64 opt_rc_min_bitrate;
extern gint opt_rc_pace_cap;
extern gdouble opt_rc_lateness;
extern gdouble opt_rc_queue_rise;
extern gdouble opt_rc_loss_burst;
/* the HTTP side (twoflow-server-web.c) */
extern gint opt_http_port;
extern gchar *opt_http_address;
extern gchar *opt_http_user, *opt_http_password;
extern gchar *opt_http_password_file;
extern gchar *opt_config;

/* what the security options load: the control channel's certificate
 * (NULL: plaintext), the CA of client certificates, the tokens */
extern GTlsCertificate *tls_cert;
extern GTlsDatabase *tls_client_ca;
extern TwoflowTokens *tokens;

/* Each: -1 to go on, else the exit code (0: --version). */
gint twoflow_server_options_parse (gint argc, gchar ** argv);
gint twoflow_server_options_check (void);

G_END_DECLS
#endif
