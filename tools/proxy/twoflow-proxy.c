/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — the proxy of the staggered two-flow VoD system
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * Asks twoflow-server for a video on its control channel, receives the
 * essential flow (ctcpsrc for cTCP/TCP, erapsrc for ERAP) and the
 * enhanced flow (rudpsrc ! rtpjitterbuffer ! rtpgstdepay), merges them with
 * twoflowmerge (reading a pre-staged prefix from the prefix store) and
 * serves the result to RTSP viewers (rtsp://HOST:8554/video/NAME, MPEG-TS
 * over RTP, video and audio) or to a file (--fetch: a container chosen by
 * the file's extension, .ts/.mkv/.mp4, with both tracks; .h264/.h265: the
 * video alone as a byte stream; .m2v/.es: the merged video elementary
 * stream only). Each viewer gets its own server session;
 * admission control admits it only if its peak rate fits the residual WAN
 * capacity (--wan-capacity) or, in measured mode, if the admitted sessions
 * are near their rates with under 5% loss. See docs/system.md.
 *
 * The parts, each with its debug category (GST_DEBUG=twoflow-proxy*:5):
 * options (twoflow-proxy-options.c), the control client (-control.c), a
 * session with its PLAY and events (-session.c) and its report
 * (-report.c), admission control (-admission.c), the receiving bin, one
 * builder per transport (-receiver.c), the output's muxing (-output.c),
 * RTSP viewers (-rtsp.c, the media factory; -rtsp-media.c, the media and
 * its seeking), --fetch and --prestage (-fetch.c), the HTTP side with HLS
 * (-web.c, twoflow-hls.c); this file starts them. A module talks to the
 * ones above it through hooks (ProxySessionHooks: admission measures the
 * sessions, the HTTP side lists them).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <glib-unix.h>
#include <gst/gst.h>
#include <gst/rtsp-server/rtsp-server.h>
#include "twoflow-admission.h"
#include "twoflow-config.h"
#include "twoflow-daemon.h"
#include "twoflow-proxy-options.h"
#include "twoflow-proxy-control.h"
#include "twoflow-proxy-session.h"
#include "twoflow-proxy-report.h"
#include "twoflow-proxy-admission.h"
#include "twoflow-proxy-receiver.h"
#include "twoflow-proxy-output.h"
#include "twoflow-proxy-rtsp.h"
#include "twoflow-proxy-rtsp-media.h"
#include "twoflow-proxy-fetch.h"
#include "twoflow-proxy-web.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_debug);
#define GST_CAT_DEFAULT twoflow_proxy_debug


int
main (int argc, char **argv)
{
  static const gchar *const needed[] = { "twoflowmerge", "erapsrc",
    "ctcpsrc", "rudpsrc", "rtpjitterbuffer", "rtpgstdepay", "queue",
    "mpegvideoparse", "h264parse", "h265parse", "av1parse", "mpegtsmux", "mp4mux", "matroskamux",
    "multifilesink", "rtpmp2tpay", "filesink", NULL
  };
  gint status;
  GError *err = NULL;
  GMainLoop *loop;
  GstRTSPServer *server;

  /* logs are read line by line by scripts */
  setvbuf (stdout, NULL, _IOLBF, 0);
  if ((status = twoflow_proxy_options_parse (argc, argv)) >= 0)
    return status;
  if (!twoflow_config_check_elements ("twoflow-proxy", needed))
    return 1;
  if ((status = twoflow_proxy_options_check ()) >= 0)
    return status;
  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_debug, "twoflow-proxy", 0,
      "twoflow proxy");
  twoflow_proxy_control_init ();
  twoflow_proxy_session_init ();
  twoflow_proxy_report_init ();
  twoflow_proxy_admission_init ();
  twoflow_proxy_receiver_init ();
  twoflow_proxy_output_init ();
  twoflow_proxy_rtsp_media_init ();
  twoflow_proxy_rtsp_init ();
  twoflow_proxy_fetch_init ();
  twoflow_proxy_web_init ();
  if (opt_prestage)
    return run_fetch (opt_prestage, NULL, TRUE);
  if (opt_fetch)
    return run_fetch (opt_fetch, opt_output, FALSE);

  server = rtsp_start (&err);
  if (server == NULL) {
    g_printerr ("%s\n", err->message);
    return g_error_matches (err, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE) ?
        1 : 2;
  }
  g_print ("twoflow-proxy: server %s:%d, RTSP rtsp://%s:%d/video/NAME, "
      "admission %s", server_host, server_port,
      opt_rtsp_address ? opt_rtsp_address : "0.0.0.0",
      gst_rtsp_server_get_bound_port (server), opt_measured ? "measured" :
      opt_wan_capacity > 0 ? "configured" : "off");
  if (opt_wan_capacity > 0)
    g_print (" (%.2f Mbit/s)", opt_wan_capacity / 1e6);
  g_print ("\n");

  web_start ();
  /* the transcoders' plugins before the first session needs them */
  twoflow_proxy_output_preload ();
  loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGINT, web_shutdown, loop);
  g_unix_signal_add (SIGTERM, web_shutdown, loop);
  g_unix_signal_add (SIGHUP, web_reload, NULL);
  /* RTSP and HTTP listening: systemd's Type=notify start is done */
  twoflow_daemon_notify ("READY=1");
  g_main_loop_run (loop);
  twoflow_daemon_notify ("STOPPING=1");
  g_print ("twoflow-proxy: stopping, %u session(s) admitted\n",
      gst_twoflow_admission_n_sessions (admission));
  g_object_unref (server);
  return 0;
}
