/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — RTSP viewers: gst-rtsp-server's media factory, mounts
 * and client hooks
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * One media per viewer (not shared): its pipeline is a TwoflowPipeline
 * (twoflow-proxy-rtsp-media.c) holding a session's receiving bin and its
 * MPEG-TS output; DESCRIBE gets a stand-in, the server session starts at
 * PLAY once admitted; the session is released with its media.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/gst.h>
#include <gst/base/gstbasesink.h>
#include <gst/rtsp-server/rtsp-server.h>
#include "twoflow-admission.h"
#include "twoflow-control.h"
#include "twoflow-protocol.h"
#include "twoflowtls.h"
#include "twoflow-control.h"
#include "twoflow-proxy-options.h"
#include "twoflow-proxy-session.h"
#include "twoflow-proxy-admission.h"
#include "twoflow-proxy-receiver.h"
#include "twoflow-proxy-output.h"
#include "twoflow-proxy-rtsp.h"
#include "twoflow-proxy-rtsp-media.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_rtsp_debug);
#define GST_CAT_DEFAULT twoflow_proxy_rtsp_debug

static GstRTSPMountPoints *mounts;
static GstRTSPMediaFactory *factory;

typedef GstRTSPMediaFactory TwoflowFactory;
typedef GstRTSPMediaFactoryClass TwoflowFactoryClass;
GType twoflow_factory_get_type (void);
G_DEFINE_TYPE (TwoflowFactory, twoflow_factory, GST_TYPE_RTSP_MEDIA_FACTORY);

static gchar *
video_from_path (const gchar * path)
{
  if (path && g_str_has_prefix (path, "/video/") && path[7]
      && !strchr (path + 7, '/'))
    return g_strdup (path + 7);
  return NULL;
}

/* RTSP viewers are served by a pool of client threads (one thread
 * serialised them: the second of two simultaneous viewers waited for the
 * first one's media to prepare); their admission decisions and session
 * set-ups (short: the INFO is cached) still take turns, as before
 * (rtsp_lock). */
#define RTSP_CLIENT_THREADS 64

/* DESCRIBE's path (gst-rtsp-server asks the mount points for it; SETUP and
 * PLAY ask the client): /video/NAME/ for /video/NAME, so the stand-in a
 * DESCRIBE makes is not the media the client keeps for SETUP's
 * /video/NAME/stream=0 (a different path: a new media); the Content-Base,
 * the path with a '/', is the same. */
typedef GstRTSPMountPoints TwoflowMounts;
typedef GstRTSPMountPointsClass TwoflowMountsClass;
GType twoflow_mounts_get_type (void);
G_DEFINE_TYPE (TwoflowMounts, twoflow_mounts, GST_TYPE_RTSP_MOUNT_POINTS);

static gchar *
twoflow_mounts_make_path (GstRTSPMountPoints * m, const GstRTSPUrl * url)
{
  gchar *video = video_from_path (url->abspath);
  gchar *path;

  if (!video)
    return GST_RTSP_MOUNT_POINTS_CLASS (twoflow_mounts_parent_class)->make_path
        (m, url);
  path = g_strconcat ("/video/", video, "/", NULL);
  g_free (video);
  return path;
}

static void
twoflow_mounts_class_init (TwoflowMountsClass * klass)
{
  klass->make_path = twoflow_mounts_make_path;
}

static void
twoflow_mounts_init (TwoflowMounts * m)
{
}




/* Over UDP the end of the stream is an RTCP BYE on a socket of its own;
 * ffmpeg stops at the BYE and dropped the last two frames still waiting in
 * its RTP socket: the BYE leaves a moment after the last packet. */
#define EOS_DELAY_US 300000
static GstPadProbeReturn
eos_delay_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) == GST_EVENT_EOS)
    g_usleep (EOS_DELAY_US);
  return GST_PAD_PROBE_OK;
}

static GstElement *twoflow_factory_create_element_locked
    (GstRTSPMediaFactory * factory, const GstRTSPUrl * url);

static GstElement *
twoflow_factory_create_element (GstRTSPMediaFactory * factory,
    const GstRTSPUrl * url)
{
  GstElement *e;

  g_rec_mutex_lock (&rtsp_lock);
  e = twoflow_factory_create_element_locked (factory, url);
  g_rec_mutex_unlock (&rtsp_lock);
  return e;
}

static GstElement *
twoflow_factory_create_element_locked (GstRTSPMediaFactory * factory,
    const GstRTSPUrl * url)
{
  /* DESCRIBE's /video/NAME, SETUP's /video/NAME/stream=0 */
  gchar **parts = g_strsplit (url->abspath, "/", 4);
  gchar *video = g_strv_length (parts) >= 3 && !parts[0][0]
      && g_str_equal (parts[1], "video") && parts[2][0] ?
      g_strdup (parts[2]) : NULL;
  GstRTSPContext *ctx = gst_rtsp_context_get_current ();
  ProxySession *ps;
  GError *err = NULL;
  GstElement *top, *recv, *mux, *pay;

  g_strfreev (parts);
  if (!video)
    return NULL;
  if (ctx && ctx->method == GST_RTSP_DESCRIBE) {
    top = describe_stand_in (video);
    g_free (video);
    return top;
  }
  ps = proxy_session_new (video, FALSE, &err);
  g_free (video);
  if (!ps) {
    g_print ("RTSP %s: %s\n", url->abspath, err->message);
    g_clear_error (&err);
    return NULL;
  }
  /* SETUP prepares the media on null packets beside the video's stream
   * (a funnel); the server session starts at PLAY, once admitted
   * (pre_play) */
  top = gst_bin_new (NULL);
  recv = build_receive_bin (ps);
  gst_bin_add (GST_BIN (top), recv);
  /* video and audio in one MPEG-TS */
  mux = build_mux (GST_BIN (top), ps, recv, "ts", &err);
  if (!mux) {
    g_print ("RTSP %s: %s\n", url->abspath, err->message);
    g_clear_error (&err);
    proxy_session_free (ps);
    gst_object_unref (top);
    return NULL;
  }
  pay = gst_element_factory_make ("rtpmp2tpay", "pay0");
  /* rtpmp2tpay (1.22) packs TS packets up to its MTU and drops what it
   * holds at EOS, which lost the last frame or two; 7-packet buffers
   * (padded with null packets at EOS) fill each RTP packet exactly. */
  g_object_set (mux, "alignment", 7, NULL);
  gst_bin_add (GST_BIN (top), pay);
  {
    GstElement *gate = gst_element_factory_make ("funnel", NULL);
    GstElement *stand_in = stand_in_source (TRUE);

    gst_bin_add_many (GST_BIN (top), stand_in, gate, NULL);
    gst_element_link (stand_in, gate);
    gst_element_link (mux, gate);
    gst_element_link (gate, pay);
  }
  {
    GstPad *pp = gst_element_get_static_pad (pay, "src");
    gst_pad_add_probe (pp, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, eos_delay_probe,
        NULL, NULL);
    gst_object_unref (pp);
  }
  g_object_set_data (G_OBJECT (top), "twoflow-session", ps);
  return top;
}

static GstElement *
twoflow_factory_create_pipeline (GstRTSPMediaFactory * factory,
    GstRTSPMedia * media)
{
  GstElement *pipeline = g_object_new (twoflow_pipeline_get_type (), NULL);

  g_object_set_data (G_OBJECT (pipeline), "twoflow-media", media);
  g_object_set_data (G_OBJECT (media), "twoflow-pipeline", pipeline);
  gst_rtsp_media_take_pipeline (media, GST_PIPELINE_CAST (pipeline));
  return pipeline;
}

/* A viewer that never PLAYs must not hold a pipeline for long: the media
 * a SETUP prepared (and a DESCRIBE's stand-in) is unprepared unless it
 * plays within DESCRIBE_HOLD_S of being prepared. */
#define DESCRIBE_HOLD_S 10

static void
media_new_state (GstRTSPMedia * media, gint state, gpointer data)
{
  guint timer = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (media),
          "twoflow-hold"));

  if (state == GST_STATE_PLAYING)
    g_object_set_data (G_OBJECT (media), "twoflow-played", GINT_TO_POINTER (1));
  if (state == GST_STATE_PLAYING && timer) {
    g_source_remove (timer);
    g_object_set_data (G_OBJECT (media), "twoflow-hold", NULL);
  }
}

static gboolean
describe_hold_cb (gpointer data)
{
  GstRTSPMedia *media = data;
  GstRTSPMediaStatus status;

  g_object_set_data (G_OBJECT (media), "twoflow-hold", NULL);
  status = gst_rtsp_media_get_status (media);
  /* prepared: prerolled and (suspend mode none) reported suspended */
  if (status == GST_RTSP_MEDIA_STATUS_PREPARED
      || status == GST_RTSP_MEDIA_STATUS_SUSPENDED) {
    g_print ("RTSP: a media described %d s ago was never played: "
        "released\n", DESCRIBE_HOLD_S);
    gst_rtsp_media_unprepare (media);
  }
  return G_SOURCE_REMOVE;
}

static void
media_prepared (GstRTSPMedia * media, gpointer data)
{
  guint timer;

  if (g_object_get_data (G_OBJECT (media), "twoflow-played"))
    return;
  /* the timer holds the media: unpreparing one already released (the
   * viewer went away) is a no-op */
  timer = g_timeout_add_seconds_full (G_PRIORITY_DEFAULT, DESCRIBE_HOLD_S,
      describe_hold_cb, g_object_ref (media), g_object_unref);
  g_object_set_data (G_OBJECT (media), "twoflow-hold",
      GUINT_TO_POINTER (timer));
}

static void
twoflow_factory_configure (GstRTSPMediaFactory * factory, GstRTSPMedia * media)
{
  GstElement *e = gst_rtsp_media_get_element (media);
  ProxySession *ps = g_object_get_data (G_OBJECT (e), "twoflow-session");

  GST_RTSP_MEDIA_FACTORY_CLASS (twoflow_factory_parent_class)->configure
      (factory, media);
  if (ps) {
    g_object_set_data (G_OBJECT (media), "twoflow-session", ps);
    g_object_weak_ref (G_OBJECT (media), release_session, ps);
    g_signal_connect (media, "unprepared", G_CALLBACK (media_unprepared),
        NULL);
  }
  g_signal_connect (media, "prepared", G_CALLBACK (media_prepared), NULL);
  g_signal_connect (media, "new-state", G_CALLBACK (media_new_state), NULL);
  gst_object_unref (e);
}

static void
twoflow_factory_class_init (TwoflowFactoryClass * klass)
{
  klass->create_element = twoflow_factory_create_element;
  klass->configure = twoflow_factory_configure;
  klass->create_pipeline = twoflow_factory_create_pipeline;
}

static void
twoflow_factory_init (TwoflowFactory * f)
{
  gst_rtsp_media_factory_set_shared (f, FALSE);
  gst_rtsp_media_factory_set_eos_shutdown (f, FALSE);
  gst_rtsp_media_factory_set_media_gtype (f, twoflow_media_get_type ());
}

static GstRTSPStatusCode pre_describe_locked (GstRTSPClient * client,
    GstRTSPContext * ctx);

static GstRTSPStatusCode
pre_describe (GstRTSPClient * client, GstRTSPContext * ctx, gpointer data)
{
  GstRTSPStatusCode code;

  g_rec_mutex_lock (&rtsp_lock);
  code = pre_describe_locked (client, ctx);
  g_rec_mutex_unlock (&rtsp_lock);
  return code;
}

static GstRTSPStatusCode
pre_describe_locked (GstRTSPClient * client, GstRTSPContext * ctx)
{
  gchar *video = video_from_path (ctx->uri ? ctx->uri->abspath : NULL);
  JsonObject *info;
  gchar *reason = NULL;

  if (!video)
    return GST_RTSP_STS_NOT_FOUND;
  info = g_hash_table_lookup (info_cache, video);
  if (!info) {
    GError *err = NULL;
    ProxySession *probe = proxy_session_new (video, FALSE, &err);
    if (!probe) {
      g_print ("RTSP DESCRIBE %s: %s\n", video, err->message);
      gboolean missing = strstr (err->message, "no such video") != NULL
          || !g_error_matches (err, G_IO_ERROR, G_IO_ERROR_FAILED);
      g_object_set_data_full (G_OBJECT (client), "twoflow-reason",
          g_strdup (err->message), g_free);
      g_clear_error (&err);
      g_free (video);
      /* a file that is there but not a video we serve: 415 with why */
      return missing ? GST_RTSP_STS_NOT_FOUND :
          GST_RTSP_STS_UNSUPPORTED_MEDIA_TYPE;
    }
    proxy_session_free (probe);
    info = g_hash_table_lookup (info_cache, video);
  }
  if (g_strcmp0 (twoflow_json_get_string (info, "codec", NULL), "av1") == 0) {
    /* the RTSP output is MPEG-TS over RTP (rtpmp2tpay) */
    g_print ("RTSP DESCRIBE %s: %s\n", video, RTSP_NO_AV1);
    g_object_set_data_full (G_OBJECT (client), "twoflow-reason",
        g_strdup (RTSP_NO_AV1), g_free);
    g_free (video);
    return GST_RTSP_STS_UNSUPPORTED_MEDIA_TYPE;
  }
  {
    /* one mount per video, so SETUP's .../video/NAME/stream=0 matches,
     * and its DESCRIBE path (twoflow_mounts_make_path) */
    gchar *mount = g_strconcat ("/video/", video, NULL);
    gchar *describe = g_strconcat (mount, "/", NULL);

    gst_rtsp_mount_points_add_factory (mounts, mount, g_object_ref (factory));
    gst_rtsp_mount_points_add_factory (mounts, describe,
        g_object_ref (factory));
    g_free (mount);
    g_free (describe);
  }
  /* a viewer who would be refused now learns it at once; nothing is
   * reserved until PLAY */
  if (!admission_check (video, info, "describe", &reason)) {
    g_object_set_data_full (G_OBJECT (client), "twoflow-reason", reason,
        g_free);
    g_free (video);
    return GST_RTSP_STS_SERVICE_UNAVAILABLE;
  }
  g_free (reason);
  g_free (video);
  return GST_RTSP_STS_OK;
}

/* Admission is taken and the server session started at PLAY: a viewer
 * who only DESCRIBEs or SETUPs holds a pipeline for DESCRIBE_HOLD_S at
 * most, no reservation and no server session. */
static GstRTSPStatusCode
pre_play (GstRTSPClient * client, GstRTSPContext * ctx, gpointer data)
{
  ProxySession *ps = ctx->media ? g_object_get_data (G_OBJECT (ctx->media),
      "twoflow-session") : NULL;
  gchar *reason = NULL;
  GstRTSPStatusCode code = GST_RTSP_STS_OK;

  g_rec_mutex_lock (&rtsp_lock);
  /* a stand-in, or admitted already (PLAY after PAUSE) */
  if (!ps || gst_twoflow_admission_contains (admission, ps->id)) {
  } else if (!admission_check (ps->video, ps->info, "play", &reason)) {
    g_object_set_data_full (G_OBJECT (client), "twoflow-reason", reason,
        g_free);
    code = GST_RTSP_STS_SERVICE_UNAVAILABLE;
  } else {
    gint64 duration;
    gdouble t;

    g_free (reason);
    /* the first PLAY's Range is where the server session starts (no
     * session at 0 replaced at once by a seek) */
    if (!ps->rtsp_played && session_seekable (ps, &duration)
        && range_start (&t)) {
      seek_target (ps, &t, duration);
      ps->start = t;
    }
    admission_add (ps);
    proxy_session_start (ps);
  }
  g_rec_mutex_unlock (&rtsp_lock);
  return code;
}

/* PLAY's answer says where the session starts in the video (the live
 * media's Range would be npt=now-), without an end: rtspsrc's jitter
 * buffer ends the stream by the clock at the Range's end after the first
 * packet, and this live media's packets come later than that (a prefix's
 * first segment at once, the rest with the enhanced flow; after a seek
 * the RTP time runs on from the old session): it cut the last frames. The
 * SDP says the duration. */
static void
play_range (GstRTSPMedia * media, GstRTSPMessage * msg)
{
  ProxySession *ps = g_object_get_data (G_OBJECT (media), "twoflow-session");
  gint64 duration;
  gchar *range;

  if (!session_seekable (ps, &duration))
    return;
  /* the server's answer may come after this one: then what was asked */
  range = g_strdup_printf ("npt=%.3f-", ps->start_npt > 0 ? ps->start_npt :
      ps->start);
  gst_rtsp_message_remove_header (msg, GST_RTSP_HDR_RANGE, -1);
  gst_rtsp_message_take_header (msg, GST_RTSP_HDR_RANGE, range);
}

/* The media's sinks wait for each buffer's running time only, not for
 * the pipeline's latency on top (ts-offset = -latency): the latency is the
 * enhanced flow's playout buffer (0.7 s at the defaults), which already
 * held back what needed it, and waiting it out again held every frame
 * back that long. A viewer gets each frame as the merge gives it, or at
 * its running time when the merge is ahead: ffmpeg, which reads ~20 frames
 * before it decodes, had its first frame ~0.5 s sooner (docs/results.md,
 * "Start-up in 2 s"). Never ahead of the running time, but for the audio
 * before the first picture (INFO's audio_lead; the PCR on the audio): the
 * first picture leaves as soon as the merge gives it, the audio before it
 * at once ahead of it. Waiting for its running time held the picture that
 * lead back (ffmpeg's first frame 2.6-2.9 s after the request with a
 * 0.7 s lead, 1.3-1.5 s now; rtspsrc's A/V offset 0.692-0.694 s of 0.7).
 * A lead longer than TWOFLOW_AUDIO_LEAD_EARLY_MAX keeps the old wait
 * (running time plus latency): sent as the merge gives it, rtspsrc's
 * live MPEG-TS timing put the picture 70-180 ms off its audio. */
static void
sinks_without_latency (GstRTSPMedia * media, ProxySession * ps)
{
  GstElement *pipe = GST_ELEMENT (g_object_get_data (G_OBJECT (media),
          "twoflow-pipeline"));
  /* what the receiving bin adds: the jitterbuffer's and the merge's
   * waits (the pipeline's latency query has no answer yet at PLAY) */
  GstClockTimeDiff latency = (GstClockTimeDiff) (ps->playout_ms +
      MAX (opt_latency_ms, 0)) * GST_MSECOND;
  gdouble lead = twoflow_json_get_double (ps->info, "audio_lead", 0);
  GstIterator *it;
  GValue v = G_VALUE_INIT;

  if (!pipe || lead > TWOFLOW_AUDIO_LEAD_EARLY_MAX)
    return;
  latency += (GstClockTimeDiff) (lead * GST_SECOND);
  it = gst_bin_iterate_recurse (GST_BIN (pipe));
  while (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
    GstElement *e = g_value_get_object (&v);

    if (GST_IS_BASE_SINK (e))
      gst_base_sink_set_ts_offset (GST_BASE_SINK (e), -latency);
    g_value_reset (&v);
  }
  g_value_unset (&v);
  gst_iterator_free (it);
  GST_DEBUG ("media %p: its sinks wait for running time - %" G_GINT64_FORMAT
      " ms", media, latency / GST_MSECOND);
}

/* After a PLAY: a later PLAY with a Range is a seek; after a seek the TCP
 * sink does not wait for the clock (twoflow_seek). */
static void
play_request (GstRTSPClient * client, GstRTSPContext * ctx, gpointer data)
{
  ProxySession *ps = ctx->media ? g_object_get_data (G_OBJECT (ctx->media),
      "twoflow-session") : NULL;

  if (ps) {
    ps->rtsp_played = TRUE;
    sinks_without_latency (ctx->media, ps);
  }
  /* every PLAY turns it on again */
  if (ps && ps->start > 0)
    gst_rtsp_media_set_rate_control (ctx->media, FALSE);
}

/* A rejected viewer sees why: in the reason phrase and in a header. */
static void
send_message (GstRTSPClient * client, GstRTSPContext * ctx,
    GstRTSPMessage * msg, gpointer data)
{
  const gchar *reason = g_object_get_data (G_OBJECT (client),
      "twoflow-reason");
  GstRTSPStatusCode code;
  const gchar *phrase;
  GstRTSPVersion version;
  GstRTSPMethod method;

  if (gst_rtsp_message_get_type (msg) != GST_RTSP_MESSAGE_RESPONSE)
    return;
  if (ctx && ctx->media && ctx->request
      && gst_rtsp_message_parse_request (ctx->request, &method, NULL,
          NULL) == GST_RTSP_OK && method == GST_RTSP_PLAY)
    play_range (ctx->media, msg);
  if (!reason)
    return;
  gst_rtsp_message_parse_response (msg, &code, &phrase, &version);
  if (code == GST_RTSP_STS_SERVICE_UNAVAILABLE
      || code == GST_RTSP_STS_NOT_FOUND
      || code == GST_RTSP_STS_UNSUPPORTED_MEDIA_TYPE) {
    gchar *p = g_strdup_printf ("%s (%s)", gst_rtsp_status_as_text (code),
        reason);
    g_free (msg->type_data.response.reason);
    msg->type_data.response.reason = p;
    gst_rtsp_message_add_header_by_name (msg, "X-Twoflow-Reason", reason);
    g_object_set_data (G_OBJECT (client), "twoflow-reason", NULL);
  }
}

static void
client_connected (GstRTSPServer * server, GstRTSPClient * client,
    gpointer data)
{
  g_signal_connect (client, "pre-describe-request", G_CALLBACK (pre_describe),
      NULL);
  g_signal_connect (client, "pre-play-request", G_CALLBACK (pre_play), NULL);
  g_signal_connect (client, "send-message", G_CALLBACK (send_message), NULL);
  g_signal_connect (client, "play-request", G_CALLBACK (play_request), NULL);
}

/* Viewers: RTSP basic authentication (--rtsp-user/--rtsp-password) and
 * RTSPS (--rtsp-tls-cert): a GstRTSPAuth on the server; the one factory of
 * every mount gives the role "viewer" access. */
static gboolean
setup_rtsp_auth (GstRTSPServer * server, GError ** error)
{
  GstRTSPAuth *auth;
  GstRTSPToken *tok;

  if (!opt_rtsp_user && !opt_rtsp_tls_cert)
    return TRUE;
  auth = gst_rtsp_auth_new ();
  tok = gst_rtsp_token_new (GST_RTSP_TOKEN_MEDIA_FACTORY_ROLE, G_TYPE_STRING,
      "viewer", NULL);
  if (opt_rtsp_user) {
    gchar *basic = gst_rtsp_auth_make_basic (opt_rtsp_user,
        opt_rtsp_password ? opt_rtsp_password : "");
    gst_rtsp_auth_add_basic (auth, basic, tok);
    g_free (basic);
  } else {
    gst_rtsp_auth_set_default_token (auth, tok);
  }
  gst_rtsp_token_unref (tok);
  if (opt_rtsp_tls_cert) {
    GTlsCertificate *cert = twoflow_tls_load_certificate (opt_rtsp_tls_cert,
        opt_rtsp_tls_key, error);
    if (cert == NULL) {
      g_object_unref (auth);
      return FALSE;
    }
    gst_rtsp_auth_set_tls_certificate (auth, cert);
    g_object_unref (cert);
  }
  gst_rtsp_media_factory_add_role (factory, "viewer",
      GST_RTSP_PERM_MEDIA_FACTORY_ACCESS, G_TYPE_BOOLEAN, TRUE,
      GST_RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, G_TYPE_BOOLEAN, TRUE, NULL);
  gst_rtsp_server_set_auth (server, auth);
  g_object_unref (auth);
  return TRUE;
}

/* The RTSP server: the mounts and the factory of every video, the client
 * threads, viewers' authentication; attached to the main loop. */
GstRTSPServer *
rtsp_start (GError ** error)
{
  GstRTSPServer *server = gst_rtsp_server_new ();
  gchar *svc = g_strdup_printf ("%d", opt_rtsp_port);

  gst_rtsp_server_set_service (server, svc);
  g_free (svc);
  if (opt_rtsp_address)
    gst_rtsp_server_set_address (server, opt_rtsp_address);
  /* gst-rtsp-server's default backlog is 5 waiting connections */
  gst_rtsp_server_set_backlog (server, 128);
  {
    GstRTSPThreadPool *pool = gst_rtsp_server_get_thread_pool (server);

    gst_rtsp_thread_pool_set_max_threads (pool, RTSP_CLIENT_THREADS);
    g_object_unref (pool);
  }
  mounts = g_object_new (twoflow_mounts_get_type (), NULL);
  gst_rtsp_server_set_mount_points (server, mounts);
  factory = g_object_new (twoflow_factory_get_type (), NULL);
  gst_rtsp_mount_points_add_factory (mounts, "/video", g_object_ref (factory));
  if (!setup_rtsp_auth (server, error)) {
    g_object_unref (server);
    return NULL;
  }
  g_signal_connect (server, "client-connected", G_CALLBACK (client_connected),
      NULL);
  if (gst_rtsp_server_attach (server, NULL) == 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE,
        "cannot listen for RTSP on port %d", opt_rtsp_port);
    g_object_unref (server);
    return NULL;
  }
  return server;
}

void
twoflow_proxy_rtsp_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_rtsp_debug,
      "twoflow-proxy-rtsp", 0, "twoflow-proxy: RTSP viewers");
}
