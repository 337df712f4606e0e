/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — its options (command line and config file)
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
#include <string.h>
#include <gst/gst.h>
#include "twoflow-proxy-options.h"
#include "twoflow-protocol.h"
#include "twoflowtls.h"
#include "twoflow-config.h"
#include "twoflow-daemon.h"
#include "twoflow-log.h"

gchar *opt_server = NULL;
gchar *opt_fetch = NULL;
gchar *opt_output = NULL;
gchar *opt_prestage = NULL;
gchar *opt_arrivals = NULL;
gchar *opt_prefix_dir = NULL;
gchar *opt_essential = NULL;
gchar *opt_policy = NULL;
gdouble opt_segment = 10.0;
gdouble opt_wan_capacity = 0;
gboolean opt_measured = FALSE;
gchar *opt_admission_rate = NULL;        /* "smoothed" | "peak" */
gint opt_rtsp_port = 8554;
gchar *opt_rtsp_address = NULL;
gint opt_latency_ms = 0;
gint opt_jitter_ms = 400;
gint opt_essential_ports = 0;
gint opt_enhanced_ports = 0;
gchar *opt_video_track = NULL;
gchar *opt_audio_track = NULL;
gint opt_http_port = 0;
gchar *opt_hls_dir = NULL;
gchar *opt_www_dir = NULL;
gint64 opt_prefix_max_bytes = 0;
gchar *opt_config = NULL;
/* control-channel security (docs/security.md) */
gboolean opt_version = FALSE;
gboolean opt_insecure = FALSE;
gboolean opt_nat = FALSE;
gchar *opt_tls_ca = NULL, *opt_tls_pin = NULL;
gchar *opt_tls_cert = NULL, *opt_tls_key = NULL;
gchar *opt_token = NULL, *opt_token_file = NULL;
/* viewers: RTSP basic authentication, RTSPS */
gchar *opt_rtsp_user = NULL, *opt_rtsp_password = NULL;
gchar *opt_http_user = NULL, *opt_http_password = NULL;
/* the secrets from files (LoadCredential=), not seen in ps */
gchar *opt_rtsp_password_file = NULL, *opt_http_password_file = NULL;
gchar *opt_http_address = NULL;
gchar *opt_rtsp_tls_cert = NULL, *opt_rtsp_tls_key = NULL;

gchar *server_host;
gint server_port;

static GOptionEntry entries[] = {
  {"server", 's', 0, G_OPTION_ARG_STRING, &opt_server,
      "twoflow-server control address (default 127.0.0.1:5500)", "HOST:PORT"},
  {"fetch", 'f', 0, G_OPTION_ARG_STRING, &opt_fetch,
      "Fetch one video to --output and exit (0: every frame, or what "
        "is missing the network lost; 3: frames missing without a "
        "network cause; 1: an error)", "NAME"},
  {"output", 'o', 0, G_OPTION_ARG_FILENAME, &opt_output,
      "Output file of --fetch: .ts, .mkv or .mp4 (video and audio; AV1: "
        ".mkv or .mp4), .h264/.h265 (the video alone, a byte stream), "
        ".m2v/.es (the merged video elementary stream); other: by codec",
        "FILE"},
  {"prestage", 0, 0, G_OPTION_ARG_STRING, &opt_prestage,
      "Store the first segment of a video's essential flow in the prefix "
        "store and exit", "NAME"},
  {"prefix-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_prefix_dir,
      "Prefix store (default ./prefix)", "DIR"},
  {"arrivals", 0, 0, G_OPTION_ARG_FILENAME, &opt_arrivals,
      "With --fetch: log every essential frame's arrival (monotonic us, "
        "frame, segment, type, DTS, bytes) to FILE", "FILE"},
  {"essential", 'e', 0, G_OPTION_ARG_STRING, &opt_essential,
      "Essential transport: ctcp (default), tcp or erap", "T"},
  {"policy", 0, 0, G_OPTION_ARG_STRING, &opt_policy,
      "Essential frames: i (default) or ip", "P"},
  {"segment-duration", 0, 0, G_OPTION_ARG_DOUBLE, &opt_segment,
      "Segment duration in seconds (default 10)", "S"},
  {"latency", 0, 0, G_OPTION_ARG_INT, &opt_latency_ms,
      "twoflowmerge latency in ms (0: until the flow moves past)", "MS"},
  {"jitter", 0, 0, G_OPTION_ARG_INT, &opt_jitter_ms,
      "rtpjitterbuffer latency in ms (default 400)", "MS"},
  {"wan-capacity", 'c', 0, G_OPTION_ARG_DOUBLE, &opt_wan_capacity,
      "Guaranteed WAN capacity in bit/s for admission (0: none)", "BPS"},
  {"measured", 'm', 0, G_OPTION_ARG_NONE, &opt_measured,
      "Admission by measured rates and losses (capacity not guaranteed)",
      NULL},
  {"admission-rate", 0, 0, G_OPTION_ARG_STRING, &opt_admission_rate,
      "What --wan-capacity admission reserves per session: smoothed "
        "(default: essential segment + enhanced window rates over time) "
        "or peak (the 1 s peak rate)", "R"},
  {"essential-ports", 0, 0, G_OPTION_ARG_INT, &opt_essential_ports,
      "Receive the essential flows on ports N..N+99 (default: any)", "N"},
  {"enhanced-ports", 0, 0, G_OPTION_ARG_INT, &opt_enhanced_ports,
      "Receive the enhanced flows on ports N..N+99 (default: any)", "N"},
  {"video-track", 0, 0, G_OPTION_ARG_STRING, &opt_video_track,
      "Video stream of the input: index among its video streams or a "
        "language code (default: the first)", "T"},
  {"audio-track", 0, 0, G_OPTION_ARG_STRING, &opt_audio_track,
      "Audio stream: index, language code or none (default: the first)",
        "T"},
  {"nat", 0, 0, G_OPTION_ARG_NONE, &opt_nat,
      "Behind NAT: open every flow outward (connect for ctcp/tcp, say "
        "hello from the receiving sockets for erap and the enhanced flow)",
      NULL},
  {"version", 'V', 0, G_OPTION_ARG_NONE, &opt_version,
      "Print the version and exit", NULL},
  {"insecure", 0, 0, G_OPTION_ARG_NONE, &opt_insecure,
      "Plaintext control channel (lab use only)", NULL},
  {"tls-ca", 0, 0, G_OPTION_ARG_FILENAME, &opt_tls_ca,
      "Verify the server's certificate with this CA (PEM)", "FILE"},
  {"tls-pin", 0, 0, G_OPTION_ARG_STRING, &opt_tls_pin,
      "Or accept only the server certificate with this SHA-256 "
      "fingerprint (hex, colons allowed)", "SHA256"},
  {"tls-cert", 0, 0, G_OPTION_ARG_FILENAME, &opt_tls_cert,
      "Client certificate for the control channel (PEM)", "FILE"},
  {"tls-key", 0, 0, G_OPTION_ARG_FILENAME, &opt_tls_key,
      "Its key (default: in --tls-cert)", "FILE"},
  {"token", 0, 0, G_OPTION_ARG_STRING, &opt_token,
      "This proxy's token (server --tokens; seen in ps: prefer "
        "--token-file)", "TOKEN"},
  {"token-file", 0, 0, G_OPTION_ARG_FILENAME, &opt_token_file,
      "This proxy's token is this file's first line (e.g. a systemd "
        "credential)", "FILE"},
  {"rtsp-user", 0, 0, G_OPTION_ARG_STRING, &opt_rtsp_user,
      "Viewers authenticate (RTSP basic) with this user ...", "USER"},
  {"rtsp-password", 0, 0, G_OPTION_ARG_STRING, &opt_rtsp_password,
      "... and password (seen in ps: prefer --rtsp-password-file)",
      "PASSWORD"},
  {"rtsp-password-file", 0, 0, G_OPTION_ARG_FILENAME,
        &opt_rtsp_password_file,
      "... or the password as this file's first line", "FILE"},
  {"rtsp-tls-cert", 0, 0, G_OPTION_ARG_FILENAME, &opt_rtsp_tls_cert,
      "RTSPS: the RTSP server's certificate (PEM)", "FILE"},
  {"rtsp-tls-key", 0, 0, G_OPTION_ARG_FILENAME, &opt_rtsp_tls_key,
      "Its key (default: in --rtsp-tls-cert)", "FILE"},
  {"rtsp-port", 'p', 0, G_OPTION_ARG_INT, &opt_rtsp_port,
      "RTSP port (default 8554)", "PORT"},
  {"rtsp-address", 0, 0, G_OPTION_ARG_STRING, &opt_rtsp_address,
      "RTSP address (default 0.0.0.0)", "ADDR"},
  {"http-port", 0, 0, G_OPTION_ARG_INT, &opt_http_port,
      "HTTP port: web page /, HLS /hls/NAME/index.m3u8, /status, /metrics, "
        "/healthz (default 0: none)", "PORT"},
  {"http-address", 0, 0, G_OPTION_ARG_STRING, &opt_http_address,
      "HTTP address (default: all)", "ADDR"},
  {"http-user", 0, 0, G_OPTION_ARG_STRING, &opt_http_user,
      "HTTP basic authentication on the HTTP side (page, HLS, /status, "
        "/metrics; not /healthz): this user (default: none)", "USER"},
  {"http-password", 0, 0, G_OPTION_ARG_STRING, &opt_http_password,
      "... and this password (seen in ps: prefer --http-password-file)",
      "PASSWORD"},
  {"http-password-file", 0, 0, G_OPTION_ARG_FILENAME,
        &opt_http_password_file,
      "... or the password as this file's first line", "FILE"},
  {"hls-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_hls_dir,
      "HLS cache: playlists and segments, kept as VoD (default ./hls)",
        "DIR"},
  {"www-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_www_dir,
      "The web page's files (default: the build's or installed copy)",
        "DIR"},
  {"prefix-max-bytes", 0, 0, G_OPTION_ARG_INT64, &opt_prefix_max_bytes,
      "Size limit of the prefix store; least recently used prefixes are "
        "evicted (default 0: none)", "BYTES"},
  {"config", 0, 0, G_OPTION_ARG_FILENAME, &opt_config,
      "Config file (GKeyFile, group [twoflow-proxy], keys named like the "
        "long options; options given here override it)", "FILE"},
  {NULL}
};

/* The page beside the program that runs: the build tree's copy for the
 * build's program, else the installed copy found relative to the
 * executable (a relocated install), else (as before) the build tree's if
 * it exists, else the configured prefix's. */
static gchar *
default_www_dir (void)
{
  gchar *exe = g_file_read_link ("/proc/self/exe", NULL);
  gchar *dir = exe ? g_path_get_dirname (exe) : NULL;
  char *build = realpath (TWOFLOW_WWW_BUILD_DIR, NULL);
  gchar *www = NULL;

  if (dir && build && strcmp (dir, build) == 0)
    www = g_strdup (TWOFLOW_WWW_BUILD_DIR);
  else if (dir && !g_path_is_absolute (TWOFLOW_WWW_RELATIVE_DIR)) {
    www = g_canonicalize_filename (TWOFLOW_WWW_RELATIVE_DIR, dir);
    if (!g_file_test (www, G_FILE_TEST_IS_DIR))
      g_clear_pointer (&www, g_free);
  }
  if (www == NULL)
    www = g_strdup (build ? TWOFLOW_WWW_BUILD_DIR : TWOFLOW_WWW_INSTALL_DIR);
  free (build);
  g_free (dir);
  g_free (exe);
  return www;
}

/* The command line over the config file (--config): the options, the
 * log, the secrets read from their files. */
gint
twoflow_proxy_options_parse (gint argc, gchar ** argv)
{
  GError *err = NULL;
  gint status = twoflow_config_parse_command_line (entries, "twoflow-proxy",
      "- twoflow proxy", &opt_version, &argc, &argv);

  if (status >= 0)
    return status;
  twoflow_log_init ();          /* levels and timestamps, or journald */
  if (!twoflow_daemon_read_secret ("token", opt_token_file, &opt_token, &err)
      || !twoflow_daemon_read_secret ("rtsp-password", opt_rtsp_password_file,
          &opt_rtsp_password, &err)
      || !twoflow_daemon_read_secret ("http-password", opt_http_password_file,
          &opt_http_password, &err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  return -1;
}

/* After twoflow_proxy_options_parse() and the elements' check: the
 * defaults set, the modes in range, the server's address split, TLS
 * there unless --insecure. */
gint
twoflow_proxy_options_check (void)
{
  GError *err = NULL;
  gchar **hp;
  TwoflowEssential e;

  if (!opt_server)
    opt_server = g_strdup ("127.0.0.1:5500");
  if (!opt_prefix_dir)
    opt_prefix_dir = g_strdup ("prefix");
  if (!opt_essential)
    opt_essential = g_strdup ("ctcp");
  if (!twoflow_essential_from_string (opt_essential, &e)) {
    g_printerr ("--essential ctcp|tcp|erap\n");
    return 2;
  }
  if (!opt_policy)
    opt_policy = g_strdup ("i");
  if (!opt_hls_dir)
    opt_hls_dir = g_strdup ("hls");
  if (!opt_www_dir)
    opt_www_dir = default_www_dir ();
  hp = g_strsplit (opt_server, ":", 2);
  server_host = g_strdup (hp[0]);
  server_port = hp[1] ? atoi (hp[1]) : TWOFLOW_CONTROL_DEFAULT_PORT;
  g_strfreev (hp);
  if (g_strcmp0 (opt_admission_rate, "peak") != 0
      && g_strcmp0 (opt_admission_rate, "smoothed") != 0
      && opt_admission_rate != NULL) {
    g_printerr ("--admission-rate smoothed|peak\n");
    return 2;
  }
  if (!opt_insecure && !twoflow_tls_available (&err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  if (opt_fetch && !opt_prestage && !opt_output) {
    g_printerr ("--fetch needs --output FILE\n");
    return 2;
  }
  return -1;
}
