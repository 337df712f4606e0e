/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — its options (command line and config file)
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

#include <gst/gst.h>
#include <gst/ratecontrol/sessionrate.h>
#include "twoflow-server-options.h"
#include "twoflow-control.h"
#include "twoflow-config.h"
#include "twoflow-daemon.h"
#include "twoflow-log.h"
#include "twoflowtls.h"

gchar *opt_dir = NULL;
gchar *opt_address = NULL;
gint opt_port = TWOFLOW_CONTROL_DEFAULT_PORT;
/* control-channel security and limits (docs/security.md) */
gboolean opt_version = FALSE;
gboolean opt_insecure = FALSE;
gchar *opt_tls_cert = NULL, *opt_tls_key = NULL;
gchar *opt_tls_client_ca = NULL;
gchar *opt_tokens = NULL;
gint opt_max_connections = 256;
gint opt_max_line = 65536;
gint opt_max_sessions = 256;
gint opt_max_client_sessions = 32;
gint opt_auth_timeout = 5;
gint opt_max_pending_per_address = 8;
gint opt_max_output = 1 << 20;
/* the enhanced flow's pacing: "smooth" (per-window rates) or "peak" */
gchar *opt_enhanced_rate = NULL;
gdouble opt_smoothing_window = 0;  /* 0: min(T, 60 s) */
gdouble opt_smoothing_lead = -1;  /* < 0: the window */
/* start-up (docs/system.md, "Start-up"): "ramp" (default) or "segment"
 * (the paper's stagger: playback one segment after the essential flow) */
gchar *opt_startup = NULL;
gdouble opt_startup_lead = 0.5;
gdouble opt_startup_factor = 2.0;
gint64 opt_startup_max_rate = 0;
gdouble opt_connect_timeout = 10;
/* rate adaptation (docs/system.md, "Rate control"): the session rate
 * controller ("session", default) or the papers' per-event law in the
 * transcoder ("events") */
gchar *opt_rate_controller = NULL;
gint opt_rc_interval = 100;              /* ms */
gdouble opt_rc_qdelay = 30;              /* ms */
gdouble opt_rc_decrease = GST_TWOFLOW_SESSION_RATE_DEFAULT_DECREASE;
gdouble opt_rc_increase = GST_TWOFLOW_SESSION_RATE_DEFAULT_INCREASE;
gdouble opt_rc_loss_threshold =
    GST_TWOFLOW_SESSION_RATE_DEFAULT_LOSS_THRESHOLD;
gint opt_rc_tcp_floor = 1;
gdouble opt_rc_headroom = 1.25;
gint64 opt_rc_min_bitrate = 0;
gint opt_rc_pace_cap = 1;
gdouble opt_rc_lateness = -1;            /* ms; < 0: half the playout lead */
gdouble opt_rc_queue_rise = GST_TWOFLOW_SESSION_RATE_DEFAULT_QUEUE_RISE;
gdouble opt_rc_loss_burst =     /* ms */
    GST_TWOFLOW_SESSION_RATE_DEFAULT_LOSS_BURST / GST_MSECOND;
GTlsCertificate *tls_cert;
GTlsDatabase *tls_client_ca;
TwoflowTokens *tokens;
gint opt_http_port = 0;
/* NULL: the control channel's --address */
gchar *opt_http_address = NULL;
gchar *opt_http_user = NULL, *opt_http_password = NULL;
gchar *opt_http_password_file = NULL;
gchar *opt_config = NULL;


static GOptionEntry entries[] = {
  {"dir", 'd', 0, G_OPTION_ARG_FILENAME, &opt_dir,
      "Directory of videos (any container GStreamer demuxes: MP4, MKV, TS, "
        "PS, elementary streams; MPEG-1/2, H.264, H.265 or AV1 video) and "
        "frame traces (*.txt)", "DIR"},
  {"port", 'p', 0, G_OPTION_ARG_INT, &opt_port,
      "Control port (default 5500; 0 = any, printed)", "PORT"},
  {"address", 'a', 0, G_OPTION_ARG_STRING, &opt_address,
      "Address to listen on (default: all)", "ADDR"},
  {"tls-cert", 0, 0, G_OPTION_ARG_FILENAME, &opt_tls_cert,
      "Control channel over TLS: the server's certificate (PEM)", "FILE"},
  {"tls-key", 0, 0, G_OPTION_ARG_FILENAME, &opt_tls_key,
      "Its private key (PEM; default: in --tls-cert)", "FILE"},
  {"tls-client-ca", 0, 0, G_OPTION_ARG_FILENAME, &opt_tls_client_ca,
      "Accept proxies with a client certificate signed by this CA", "FILE"},
  {"tokens", 0, 0, G_OPTION_ARG_FILENAME, &opt_tokens,
      "Per-proxy tokens: lines \"name token\"; a proxy sends AUTH first",
      "FILE"},
  {"version", 'V', 0, G_OPTION_ARG_NONE, &opt_version,
      "Print the version and exit", NULL},
  {"insecure", 0, 0, G_OPTION_ARG_NONE, &opt_insecure,
      "Plaintext control channel, anyone may connect unless --tokens "
      "(lab use only)", NULL},
  {"max-connections", 0, 0, G_OPTION_ARG_INT, &opt_max_connections,
      "Control connections at most (default 256); more are refused", "N"},
  {"max-line", 0, 0, G_OPTION_ARG_INT, &opt_max_line,
      "Longest control line in bytes (default 65536)", "BYTES"},
  {"max-sessions", 0, 0, G_OPTION_ARG_INT, &opt_max_sessions,
      "Sessions at most (default 256)", "N"},
  {"max-client-sessions", 0, 0, G_OPTION_ARG_INT, &opt_max_client_sessions,
      "Sessions per client identity (token/certificate name, else "
      "address; default 32)", "N"},
  {"auth-timeout", 0, 0, G_OPTION_ARG_INT, &opt_auth_timeout,
      "Seconds a connection may take to authenticate (default 5)", "S"},
  {"max-pending-per-address", 0, 0, G_OPTION_ARG_INT,
        &opt_max_pending_per_address,
        "Connections one address may hold before authenticating (default "
        "8); with the table full the oldest such connection is shed",
      "N"},
  {"max-output", 0, 0, G_OPTION_ARG_INT, &opt_max_output,
        "Bytes of replies that may wait for a client that does not read "
        "(default 1048576); over it the client is closed", "BYTES"},
  {"connect-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &opt_connect_timeout,
      "Seconds the essential connection (cTCP/TCP: connect and TLS; ERAP: "
        "the first ACK) may take before the session ends with an error "
        "(default 10)", "S"},
  {"http-port", 0, 0, G_OPTION_ARG_INT, &opt_http_port,
      "HTTP port: /metrics, /status, /healthz (default 0: none)", "PORT"},
  {"http-address", 0, 0, G_OPTION_ARG_STRING, &opt_http_address,
        "Address the HTTP side listens on (default: --address, else all)",
      "ADDR"},
  {"http-user", 0, 0, G_OPTION_ARG_STRING, &opt_http_user,
        "HTTP basic authentication on every path but /healthz: user name "
        "(default: none)", "NAME"},
  {"http-password", 0, 0, G_OPTION_ARG_STRING, &opt_http_password,
      "HTTP basic authentication: password (seen in ps: prefer "
        "--http-password-file)", "PASSWORD"},
  {"http-password-file", 0, 0, G_OPTION_ARG_FILENAME,
        &opt_http_password_file,
        "HTTP basic authentication: the password is this file's first "
        "line (e.g. a systemd credential)", "FILE"},
  {"enhanced-rate", 0, 0, G_OPTION_ARG_STRING, &opt_enhanced_rate,
      "Pacing of the enhanced flow (rate_control fixed): auto (default: "
        "total for frame traces, smooth for media files), smooth (CBR per "
        "smoothing window, sent the smoothing lead ahead), total (the "
        "session's total rate constant: the enhanced flow read ahead "
        "and paced at what the essential flow leaves of it, per segment) "
        "or peak (the level above 1.25 x its 1 s peak, as before)", "MODE"},
  {"smoothing-window", 0, 0, G_OPTION_ARG_DOUBLE, &opt_smoothing_window,
      "Smoothing window W in seconds (default 0: the segment duration, "
        "at most 60 s)", "S"},
  {"smoothing-lead", 0, 0, G_OPTION_ARG_DOUBLE, &opt_smoothing_lead,
      "How far ahead of playback the smoothed enhanced flow is sent, and "
        "the proxy's playout buffer, in seconds (default: the window)",
        "S"},
  {"startup", 0, 0, G_OPTION_ARG_STRING, &opt_startup,
      "Start of a session without a prefix (cTCP): ramp (default: the "
        "essential flow sent at a catch-up rate until it is a segment "
        "ahead, playback after the shortest lead that keeps every "
        "essential record on time) or segment (the paper's stagger: "
        "playback one segment after the essential flow starts)", "MODE"},
  {"startup-lead", 0, 0, G_OPTION_ARG_DOUBLE, &opt_startup_lead,
      "Start-up ramp: the playback lead it aims at, in seconds (default "
        "0.5); longer when the ramp's rate cannot make it", "S"},
  {"startup-factor", 0, 0, G_OPTION_ARG_DOUBLE, &opt_startup_factor,
      "Start-up ramp: a segment of the ramp goes at least this times its "
        "cTCP rate S/(T(1-p)) (default 2)", "F"},
  {"startup-max-rate", 0, 0, G_OPTION_ARG_INT64, &opt_startup_max_rate,
      "Start-up ramp: the highest ramp rate in bit/s (default 0: the "
        "video's 1 s peak rate)", "BPS"},
  {"rate-controller", 0, 0, G_OPTION_ARG_STRING, &opt_rate_controller,
      "Rate adaptation of the enhanced flow's transcoder: session (default: "
        "one rate controller per session estimates what the path carries "
        "from RTT, loss-event rate and delivered rate, and sets the "
        "transcoder's target) or events (the papers' law: the transcoder "
        "backs off by half on every rexmt/dupack/loss the server forwards, "
        "recovers 50 kbit/s per s)", "MODE"},
  {"rc-interval", 0, 0, G_OPTION_ARG_INT, &opt_rc_interval,
      "Session rate controller: update interval in ms (default 100)", "MS"},
  {"rc-qdelay-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rc_qdelay,
      "Session rate controller: queueing delay (RTT above its minimum) "
        "taken as congestion, in ms (default 30)", "MS"},
  {"rc-decrease", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rc_decrease,
      "Session rate controller: on congestion the rate becomes this times "
        "the delivered rate (default 0.85)", "F"},
  {"rc-increase", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rc_increase,
      "Session rate controller: multiplicative increase per second while "
        "no queue builds (default 0.25)", "F"},
  {"rc-loss-threshold", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rc_loss_threshold,
      "Session rate controller: raw loss fraction (over 1 s) taken as "
        "congestion without a queue (default 0.10)", "F"},
  {"rc-tcp-floor", 0, 0, G_OPTION_ARG_INT, &opt_rc_tcp_floor,
      "Session rate controller: 1 (default) keeps the TCP-fair rate of "
        "the TFRC equation as the floor, 0 does not", "0|1"},
  {"rc-headroom", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rc_headroom,
      "Session rate controller: its ceiling as a multiple of the video's "
        "1 s peak rate (default 1.25)", "F"},
  {"rc-min-bitrate", 0, 0, G_OPTION_ARG_INT64, &opt_rc_min_bitrate,
      "Session rate controller: lowest target in bit/s (default 0: one "
        "packet per second)", "BPS"},
  {"rc-pace-cap", 0, 0, G_OPTION_ARG_INT, &opt_rc_pace_cap,
      "Session rate controller: while the path is congested, cap the "
        "smoothed enhanced sender at what the path delivers less the "
        "essential flow's share (1, default; 0: the schedule's rate "
        "only)", "0|1"},
  {"rc-lateness", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rc_lateness,
      "Session rate controller: lateness budget in ms — what waits at the "
        "enhanced sender plus the path's queueing delay beyond it lowers "
        "the transcoder's target while the path is congested, or lets the "
        "sender catch up on a clean path (default -1: half the playout "
        "lead; 0: off)", "MS"},
  {"rc-queue-rise", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rc_queue_rise,
      "Session rate controller: a queue the rUDP receiver's RTT shows "
        "rising from an empty path at this many seconds per second or "
        "faster is the session's own, as one beyond the lateness budget "
        "(default 0.2; 0: only those)", "F"},
  {"rc-loss-burst", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rc_loss_burst,
      "Session rate controller: loss above --rc-loss-threshold is "
        "congestion only with a queue in the RTTs of the last second, or "
        "when it stays above the threshold without its worst burst of "
        "this many ms (a loss burst on a clean path is none; default "
        "400; 0: all such loss is congestion)", "MS"},
  {"config", 0, 0, G_OPTION_ARG_FILENAME, &opt_config,
      "Config file (GKeyFile, group [twoflow-server], keys named like the "
        "long options; options given here override it)", "FILE"},
  {NULL}
};

/* The command line over the config file (--config): the options, the
 * log, --http-password-file read, --dir there. */
gint
twoflow_server_options_parse (gint argc, gchar ** argv)
{
  GError *err = NULL;
  gint status = twoflow_config_parse_command_line (entries, "twoflow-server",
      "- twoflow central server", &opt_version, &argc, &argv);

  if (status >= 0)
    return status;
  twoflow_log_init ();          /* levels and timestamps, or journald */
  if (!twoflow_daemon_read_secret ("http-password", opt_http_password_file,
          &opt_http_password, &err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  if (opt_dir == NULL || !g_file_test (opt_dir, G_FILE_TEST_IS_DIR)) {
    g_printerr ("--dir DIR (a directory of videos) is required\n");
    return 2;
  }
  return -1;
}

/* TLS, the client CA, the tokens: loaded; who may connect, decided */
static gint
options_load_security (void)
{
  GError *err = NULL;

  if (opt_tls_cert) {
    tls_cert = twoflow_tls_load_certificate (opt_tls_cert, opt_tls_key, &err);
    if (tls_cert == NULL) {
      g_printerr ("--tls-cert: %s\n", err->message);
      return 2;
    }
  } else if (!opt_insecure) {
    g_printerr ("the control channel needs TLS (--tls-cert FILE --tls-key "
        "FILE) or, for lab use, --insecure\n");
    return 2;
  }
  if (opt_tls_client_ca) {
    gchar *ca;

    if (!tls_cert) {
      g_printerr ("--tls-client-ca needs --tls-cert\n");
      return 2;
    }
    /* (GTlsFileDatabase takes absolute paths only) */
    ca = g_canonicalize_filename (opt_tls_client_ca, NULL);
    tls_client_ca = g_tls_file_database_new (ca, &err);
    g_free (ca);
    if (tls_client_ca == NULL) {
      g_printerr ("--tls-client-ca: %s\n", err->message);
      return 2;
    }
  }
  if (opt_tokens && !(tokens = twoflow_tokens_load (opt_tokens, &err))) {
    g_printerr ("--tokens: %s\n", err->message);
    return 2;
  }
  if (tls_cert && !tokens && !tls_client_ca) {
    g_printerr ("with TLS, proxies authenticate: --tokens FILE and/or "
        "--tls-client-ca FILE\n");
    return 2;
  }
  return -1;
}

/* The limits and the modes: in range, defaults set */
static gint
options_check_modes (void)
{
  if (opt_max_connections < 1 || opt_max_line < 64 || opt_max_sessions < 1
      || opt_max_client_sessions < 1 || opt_auth_timeout < 1
      || opt_max_pending_per_address < 1 || opt_max_output < 4096) {
    g_printerr ("bad limits\n");
    return 2;
  }
  if (!opt_enhanced_rate)
    opt_enhanced_rate = g_strdup ("auto");
  if (!opt_startup)
    opt_startup = g_strdup ("ramp");
  if ((!g_str_equal (opt_startup, "ramp")
          && !g_str_equal (opt_startup, "segment")) || opt_startup_lead <= 0
      || opt_startup_factor < 1 || opt_startup_factor > 64
      || opt_startup_max_rate < 0) {
    g_printerr ("--startup ramp|segment, --startup-lead > 0, "
        "--startup-factor 1..64, --startup-max-rate >= 0\n");
    return 2;
  }
  if ((!g_str_equal (opt_enhanced_rate, "smooth")
          && !g_str_equal (opt_enhanced_rate, "auto")
          && !g_str_equal (opt_enhanced_rate, "peak")
          && !g_str_equal (opt_enhanced_rate, "total"))
      || (opt_smoothing_window != 0 && (opt_smoothing_window < 0.04
              || opt_smoothing_window > 3600))) {
    g_printerr ("--enhanced-rate auto|smooth|peak|total, --smoothing-window 0 or "
        "0.04..3600 s\n");
    return 2;
  }
  return -1;
}

static gint
options_check_rate_control (void)
{
  if (!opt_rate_controller)
    opt_rate_controller = g_strdup ("session");
  if ((!g_str_equal (opt_rate_controller, "session")
          && !g_str_equal (opt_rate_controller, "events"))
      || opt_rc_interval < 10 || opt_rc_interval > 10000 || opt_rc_qdelay <= 0
      || opt_rc_decrease <= 0 || opt_rc_decrease >= 1 || opt_rc_increase < 0
      || opt_rc_loss_threshold < 0 || opt_rc_loss_threshold > 1
      || opt_rc_headroom < 1 || opt_rc_min_bitrate < 0
      || opt_rc_queue_rise < 0 || opt_rc_loss_burst < 0) {
    g_printerr ("--rate-controller session|events, --rc-interval 10..10000 "
        "ms, --rc-qdelay-threshold > 0 ms, --rc-decrease in (0,1), "
        "--rc-increase >= 0, --rc-loss-threshold 0..1, --rc-headroom >= 1, "
        "--rc-min-bitrate >= 0, --rc-queue-rise >= 0, "
        "--rc-loss-burst >= 0 ms\n");
    return 2;
  }
  return -1;
}

/* After twoflow_server_options_parse() and gst_init (the elements): the
 * files the options name loaded, every value checked. */
gint
twoflow_server_options_check (void)
{
  gint ret;

  if ((ret = options_load_security ()) >= 0
      || (ret = options_check_modes ()) >= 0
      || (ret = options_check_rate_control ()) >= 0)
    return ret;
  return -1;
}
