/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the central server of the staggered two-flow VoD system
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * Serves a directory of videos (any container parsebin demuxes: MP4/MOV,
 * MKV/WebM, MPEG-TS/PS, elementary streams) with MPEG-1/2, H.264, H.265 or
 * AV1 video and any audio (the audio travels in the essential flow), and frame traces (*.txt, replayed
 * by twoflowtracesrc). Proxies ask for a video on a TCP control channel
 * (JSON lines, docs/system.md); per session two pipelines read the video:
 *
 *   essential: filesrc ! parsebin ! twoflowsplit ! queue ! ctcpsink|erapsink
 *              (not live: the transport's segment pacing makes it lead)
 *   enhanced:  filesrc ! parsebin ! ratetranscoder ! twoflowsplit ! queue
 *              ! rtpgstpay ! rudpsink sync=true          (real time)
 *
 * One session rate controller per session (gst-libs/gst/ratecontrol/
 * sessionrate.h, --rate-controller session, the default) reads both
 * transports (the cTCP socket's RTT, retransmissions and acked bytes; the
 * rUDP receiver's reports) every --rc-interval ms and sets the
 * transcoder's target-bitrate. With --rate-controller events (the
 * papers' law) the essential transport's congestion element messages are
 * forwarded to the enhanced path's ratetranscoder as upstream
 * GstNetworkCongestion events instead, and it backs off on each. One
 * GMainLoop runs every session; a client whose control connection closes
 * has its sessions torn down.
 *
 * The parts, each with its debug category (GST_DEBUG=twoflow-server*:5):
 * options (twoflow-server-options.c), the control port (-listener.c),
 * a control connection and its requests (-client.c; the requests are
 * tools/common/twoflow-protocol.h), the session pool (-pool.c), a
 * session's pipelines (-media.c) and rate control (-ratectl.c), the
 * media input (-source.c) with the decode timestamps a container gives
 * no video (-dts.c), the catalog of videos (-catalog.c) and their
 * schedules (-schedule.c), address validation (-validation.c), the HTTP
 * side (-web.c); this file starts them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <glib-unix.h>
#include <gst/gst.h>
#include "twoflow-config.h"
#include "twoflow-daemon.h"
#include "twoflow-server-options.h"
#include "twoflow-server-source.h"
#include "twoflow-server-catalog.h"
#include "twoflow-server-schedule.h"
#include "twoflow-server-ratectl.h"
#include "twoflow-server-media.h"
#include "twoflow-server-pool.h"
#include "twoflow-server-validation.h"
#include "twoflow-server-client.h"
#include "twoflow-server-listener.h"
#include "twoflow-server-web.h"

GST_DEBUG_CATEGORY_STATIC (server_debug);
#define GST_CAT_DEFAULT server_debug

/* The elements the sessions need, there; the plugins that load libraries
 * on first use, loaded */
static gboolean
check_elements (void)
{
  static const gchar *const needed[] = { "twoflowsplit", "ratetranscoder",
    "twoflowtracesrc", "ctcpsink", "erapsink", "rudpsink", "rtpgstpay",
    "parsebin", "filesrc", "queue", "fakesink", NULL
  };
  /* loaded now, while descriptors are free: libav's libraries
   * (libavformat -> libssh -> libgcrypt) initialise on load and abort
   * the process when that fails, as it did under EMFILE when the
   * catalog's first scan loaded them during a connection flood */
  static const gchar *const preload[] = { "libav", "typefindfunctions",
    "playback", "videoparsersbad", NULL
  };
  guint i;

  if (!twoflow_config_check_elements ("twoflow-server", needed))
    return FALSE;
  for (i = 0; preload[i]; i++) {
    GstPlugin *plugin = gst_plugin_load_by_name (preload[i]);

    if (plugin)
      gst_object_unref (plugin);
  }
  return TRUE;
}

static gboolean
quit_cb (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

int
main (int argc, char **argv)
{
  GError *err = NULL;
  gint ret;
  GMainLoop *loop;

  /* logs are read line by line by scripts */
  setvbuf (stdout, NULL, _IOLBF, 0);
  /* the address-validation tokens' key, new at every start */
  if (!validation_init ()) {
    g_printerr ("getrandom failed\n");
    return 1;
  }
  if ((ret = twoflow_server_options_parse (argc, argv)) >= 0)
    return ret;
  if (!check_elements ())
    return 1;
  GST_DEBUG_CATEGORY_INIT (server_debug, "twoflow-server", 0,
      "twoflow central server");
  if ((ret = twoflow_server_options_check ()) >= 0)
    return ret;
  twoflow_server_source_init ();
  twoflow_server_catalog_init ();
  twoflow_server_schedule_init ();
  twoflow_server_ratectl_init ();
  twoflow_server_media_init ();
  twoflow_server_pool_init ();
  twoflow_server_client_init ();

  if (!listener_start (&err)) {
    g_printerr ("%s\n", err->message);
    return 1;
  }

  twoflow_server_web_start ();
  /* the catalog: which videos cannot play, looked at in its own thread */
  catalog_queue_all ();
  loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGINT, quit_cb, loop);
  g_unix_signal_add (SIGTERM, quit_cb, loop);
  g_unix_signal_add (SIGHUP, twoflow_server_web_reload, NULL);
  /* listening (control and HTTP): systemd's Type=notify start is done */
  twoflow_daemon_notify ("READY=1");
  g_main_loop_run (loop);
  twoflow_daemon_notify ("STOPPING=1");

  g_print ("twoflow-server: stopping, %u session(s) active\n",
      session_pool_size ());
  {
    GList *l, *all = session_pool_list ();
    for (l = all; l; l = l->next)
      session_destroy (l->data, "server stopping");
    g_list_free (all);
  }
  listener_stop ();
  g_main_loop_unref (loop);
  return 0;
}
