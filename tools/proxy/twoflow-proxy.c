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
 * the file's extension, .ts/.mkv/.mp4, with both tracks; .m2v/.h264/.es:
 * the merged video elementary stream only). Each viewer gets its own server session;
 * admission control admits it only if its peak rate fits the residual WAN
 * capacity (--wan-capacity) or, in measured mode, if the admitted sessions
 * are near their rates with under 5% loss. See docs/system.md.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/rtsp-server/rtsp-server.h>
#include <gst/twoflow/twoflowframe.h>
#include <gst/twoflow/twoflowadmission.h>
#include <gst/twoflow/twoflowdelivery.h>
#include "twoflow-protocol.h"
#include "twoflowtls.h"
#include "twoflow-config.h"
#include "twoflow-daemon.h"
#include "twoflow-log.h"
#include "twoflow-store.h"

static gchar *opt_server = NULL;
static gchar *opt_fetch = NULL;
static gchar *opt_output = NULL;
static gchar *opt_prestage = NULL;
static gchar *opt_arrivals = NULL;
static gchar *opt_prefix_dir = NULL;
static gchar *opt_essential = NULL;
static gchar *opt_policy = NULL;
static gdouble opt_segment = 10.0;
static gdouble opt_wan_capacity = 0;
static gboolean opt_measured = FALSE;
static gchar *opt_admission_rate = NULL;        /* "smoothed" | "peak" */
static gint opt_rtsp_port = 8554;
static gchar *opt_rtsp_address = NULL;
static gint opt_latency_ms = 0;
static gint opt_jitter_ms = 200;
static gint opt_essential_ports = 0;
static gint opt_enhanced_ports = 0;
static gchar *opt_video_track = NULL;
static gchar *opt_audio_track = NULL;
static gint opt_http_port = 0;
static gchar *opt_hls_dir = NULL;
static gchar *opt_www_dir = NULL;
static gint64 opt_prefix_max_bytes = 0;
static gchar *opt_config = NULL;
static guint port_index = 0;
/* control-channel security (docs/security.md) */
static gboolean opt_version = FALSE;
static gboolean opt_insecure = FALSE;
static gboolean opt_nat = FALSE;
static gchar *opt_tls_ca = NULL, *opt_tls_pin = NULL;
static gchar *opt_tls_cert = NULL, *opt_tls_key = NULL;
static gchar *opt_token = NULL, *opt_token_file = NULL;
/* viewers: RTSP basic authentication, RTSPS */
static gchar *opt_rtsp_user = NULL, *opt_rtsp_password = NULL;
static gchar *opt_http_user = NULL, *opt_http_password = NULL;
/* the secrets from files (LoadCredential=), not seen in ps */
static gchar *opt_rtsp_password_file = NULL, *opt_http_password_file = NULL;
static gchar *opt_http_address = NULL;
static gchar *opt_rtsp_tls_cert = NULL, *opt_rtsp_tls_key = NULL;

static gchar *server_host;
static gint server_port;
static guint next_session_id = 1;
static GstTwoflowAdmission *admission;  /* the admitted RTSP sessions */
G_LOCK_DEFINE_STATIC (counters);
static GHashTable *info_cache;  /* video name -> JsonObject (INFO reply) */
static GstRTSPMountPoints *mounts;
static GstRTSPMediaFactory *factory;

typedef struct
{
  guint id;
  gchar *video;
  gboolean prestage;
  GSocketConnection *conn;
  GDataInputStream *in;
  GOutputStream *out;
  GCancellable *cancel;
  gchar *local_addr;
  JsonObject *info;
  guint64 peak_rate;
  gint server_session;
  GstElement *bin, *ess_src, *enh_src, *merge, *jitterbuffer;
  gint enh_port;
  gchar *video_codec, *audio_codec;     /* from INFO; audio_codec NULL: none */
  gboolean audio_out;           /* the merge gives an "audio" pad */
  guint ready_timer;
  gboolean play_sent, server_done;
  gchar *error;
  gint64 started_us;
  /* start-up: when the session was asked for, and when the merge gave its
   * first and second video frames (monotonic, us; 0: not yet) */
  gint64 created_us, first_frame_us, second_frame_us;
  /* measurement (progress events, once a second) */
  gint64 ess_bytes, enh_bytes;    /* under counters_lock */
  GMainLoop *loop;              /* fetch mode */
  /* --arrivals: one line per essential record as it arrives */
  FILE *arrivals;
  GstTwoflowParser *arrivals_parser;
  gdouble lead;                 /* s, from the PLAY reply */
  guint playout_ms;             /* the enhanced flow's jitterbuffer latency */
  guint samples, unhealthy_samples;     /* measured health, once a second */
  gboolean smoothing;           /* the server smooths the enhanced flow */
  gint64 enh_rate_changes;      /* its rate changes, as last reported */
  /* per-session media keys (hex), made here and sent in PLAY over the TLS
   * control channel; NULL with --insecure (plaintext flows) */
  gchar *erap_key, *srtp_key;
  /* cTCP/TCP over TLS: the secret ctcpsrc sends the server's ctcpsink
   * inside TLS (sent in PLAY as essential_token) */
  gchar *ess_token;
  /* the HTTP status: kind ("rtsp", "hls", "fetch", "prestage"), rates */
  const gchar *kind;
  gint64 rate_us, rate_ess, rate_enh;
  gdouble ess_rate, enh_rate;   /* bit/s */
  gboolean interrupted;         /* fetch: SIGTERM/SIGINT */
  GstElement *out_mux;          /* the muxer of build_mux */
  JsonObject *server_final;     /* the server's "done" event: final stats */
  guint final_timer;            /* fetch: output done, waiting for it */
  guint closed_timer;           /* fetch: the server went away */
  /* what the output lacks (proxy_session_report's "delivery") */
  gint64 lost_frames, unexplained_frames, audio_missing;
  /* seeking: the start asked of the server (s from the video's first key
   * frame) and where it starts (PLAY's reply: the key frame before it) */
  gdouble start, start_npt;
  gint64 start_frames, start_audio;     /* -1: the whole video */
  gboolean rtsp_played;         /* a PLAY of its RTSP viewer was answered */
  gint released;                /* (atomic) its media is gone: no PLAY,
                                 * no events; freed in the main loop */
  JsonObject *end_report;       /* taken as its media went */
  gint replaced;                /* (atomic) a seek replaced it: its events
                                 * (the flows' end as errors) are not the
                                 * media's */
} ProxySession;

static void web_session_added (ProxySession * ps);
static void web_session_removed (ProxySession * ps);
static void web_note_decision (JsonObject * log);
static gboolean fetch_signal_cb (gpointer data);

static void
log_json (const gchar * tag, JsonObject * obj)
{
  gchar *text = twoflow_json_to_line (obj);
  g_print ("%s %s\n", tag, text);
  g_free (text);
}

/* ------------------------------------------------------- control channel */

static JsonObject *
request (ProxySession * ps, JsonObject * req, GError ** error)
{
  JsonObject *r;

  if (!twoflow_control_send (ps->out, req, error))
    return NULL;
  /* progress/done events may precede the reply: skip them */
  while ((r = twoflow_control_recv (ps->in, NULL, error))) {
    if (!json_object_has_member (r, "event"))
      break;
    json_object_unref (r);
  }
  if (r && !twoflow_json_get_int (r, "ok", 0)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "server: %s",
        twoflow_json_get_string (r, "error", "request failed"));
    json_object_unref (r);
    r = NULL;
  }
  return r;
}

static void
proxy_session_free (ProxySession * ps)
{
  web_session_removed (ps);
  if (ps->ready_timer)
    g_source_remove (ps->ready_timer);
  if (ps->final_timer)
    g_source_remove (ps->final_timer);
  if (ps->closed_timer)
    g_source_remove (ps->closed_timer);
  if (ps->cancel)
    g_cancellable_cancel (ps->cancel);
  g_clear_object (&ps->cancel);
  g_clear_object (&ps->in);
  if (ps->conn)
    g_io_stream_close (G_IO_STREAM (ps->conn), NULL, NULL);
  g_clear_object (&ps->conn);
  if (ps->info)
    json_object_unref (ps->info);
  if (ps->server_final)
    json_object_unref (ps->server_final);
  if (ps->arrivals)
    fclose (ps->arrivals);
  if (ps->arrivals_parser)
    gst_twoflow_parser_free (ps->arrivals_parser);
  g_free (ps->local_addr);
  g_free (ps->erap_key);
  g_free (ps->srtp_key);
  g_free (ps->ess_token);
  g_free (ps->video_codec);
  g_free (ps->audio_codec);
  g_free (ps->video);
  g_free (ps->error);
  g_free (ps);
}

/* The video a session asks for: --policy, --segment, the tracks
 * (borrowed strings: not cleared) */
static void
video_request (TwoflowVideoRequest * v, const gchar * video)
{
  v->video = (gchar *) video;
  v->policy_ip = g_strcmp0 (opt_policy, "ip") == 0;
  v->video_track = opt_video_track;
  v->audio_track = opt_audio_track;
  /* the smoothing schedule and segment rates for our segments */
  v->segment_duration = opt_segment;
}

/* A control connection to the server: TLS as configured (--tls-ca,
 * --tls-pin, --tls-cert; none with --insecure) and AUTH with --token. */
static GSocketConnection *
control_connect (guint timeout, GError ** error)
{
  GSocketClient *client = g_socket_client_new ();
  GSocketConnection *conn = NULL;
  TwoflowTlsClientConfig tls = { NULL, opt_tls_ca, opt_tls_pin,
    opt_tls_cert, opt_tls_key
  };

  g_socket_client_set_timeout (client, timeout);
  if (opt_insecure || twoflow_tls_socket_client_configure (client, &tls, error))
    conn = g_socket_client_connect_to_host (client, server_host, server_port,
        NULL, error);
  g_object_unref (client);
  if (conn && opt_token) {
    GDataInputStream *in =
        g_data_input_stream_new (g_io_stream_get_input_stream (G_IO_STREAM
            (conn)));
    JsonObject *req = twoflow_auth_request_to_json (opt_token), *r = NULL;

    g_filter_input_stream_set_close_base_stream (G_FILTER_INPUT_STREAM (in),
        FALSE);
    if (twoflow_control_send (g_io_stream_get_output_stream (G_IO_STREAM
                (conn)), req, error))
      r = twoflow_control_recv (in, NULL, error);
    json_object_unref (req);
    g_object_unref (in);
    if (r && !twoflow_json_get_int (r, "ok", 0))
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
          "server: %s", twoflow_json_get_string (r, "error", "AUTH failed"));
    if (!r || !twoflow_json_get_int (r, "ok", 0)) {
      g_io_stream_close (G_IO_STREAM (conn), NULL, NULL);
      g_clear_object (&conn);
    }
    if (r)
      json_object_unref (r);
  }
  return conn;
}

static ProxySession *
proxy_session_new (const gchar * video, gboolean prestage, GError ** error)
{
  ProxySession *ps = g_new0 (ProxySession, 1);
  GSocketAddress *la;
  TwoflowVideoRequest vr = { 0, };
  JsonObject *req;

  ps->created_us = g_get_monotonic_time ();
  ps->id = next_session_id++;
  ps->video = g_strdup (video);
  ps->prestage = prestage;
  ps->kind = prestage ? "prestage" : "rtsp";
  ps->start_frames = ps->start_audio = -1;
  ps->conn = control_connect (10, error);
  if (!ps->conn)
    goto fail;
  ps->in = g_data_input_stream_new (g_io_stream_get_input_stream (G_IO_STREAM
          (ps->conn)));
  ps->out = g_io_stream_get_output_stream (G_IO_STREAM (ps->conn));
  ps->cancel = g_cancellable_new ();
  la = g_socket_connection_get_local_address (ps->conn, NULL);
  ps->local_addr = g_inet_address_to_string (g_inet_socket_address_get_address
      (G_INET_SOCKET_ADDRESS (la)));
  g_object_unref (la);

  video_request (&vr, video);
  req = twoflow_info_request_to_json (&vr);
  ps->info = request (ps, req, error);
  json_object_unref (req);
  if (!ps->info)
    goto fail;
  ps->peak_rate = twoflow_json_get_int (ps->info, "peak_rate", 0);
  ps->video_codec = g_strdup (twoflow_json_get_string (ps->info, "codec",
          "mpeg2"));
  if (g_strcmp0 (twoflow_json_get_string (ps->info, "audio_codec", "none"),
          "none") != 0)
    ps->audio_codec = g_strdup (twoflow_json_get_string (ps->info,
            "audio_codec", NULL));
  g_hash_table_replace (info_cache, g_strdup (video),
      json_object_ref (ps->info));
  web_session_added (ps);
  return ps;

fail:
  proxy_session_free (ps);
  return NULL;
}

static gchar *
prefix_path (const gchar * video)
{
  gchar *base = g_strconcat (video, ".prefix.twf", NULL);
  gchar *p = g_build_filename (opt_prefix_dir, base, NULL);
  g_free (base);
  return p;
}

static gint
free_udp_port (void)
{
  GSocket *s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  GInetAddress *any = g_inet_address_new_any (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *a = g_inet_socket_address_new (any, 0), *bound;
  gint port = 0;

  if (s && g_socket_bind (s, a, FALSE, NULL)) {
    bound = g_socket_get_local_address (s, NULL);
    port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
    g_object_unref (bound);
  }
  g_object_unref (a);
  g_object_unref (any);
  if (s) {
    g_socket_close (s, NULL);
    g_object_unref (s);
  }
  return port;
}

static GstPadProbeReturn
count_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  gint64 *counter = user_data;
  G_LOCK (counters);
  *counter += gst_buffer_get_size (GST_PAD_PROBE_INFO_BUFFER (info));
  G_UNLOCK (counters);
  return GST_PAD_PROBE_OK;
}

/* The merge's first two video frames: the start-up time a viewer sees
 * (the second one waits for the enhanced flow's playout) */
static GstPadProbeReturn
first_frames_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  ProxySession *ps = user_data;
  gint64 now = g_get_monotonic_time ();

  G_LOCK (counters);
  if (!ps->first_frame_us)
    ps->first_frame_us = now;
  else if (!ps->second_frame_us)
    ps->second_frame_us = now;
  G_UNLOCK (counters);
  return ps->second_frame_us ? GST_PAD_PROBE_REMOVE : GST_PAD_PROBE_OK;
}

/* Arrival time (monotonic clock, us: comparable across the processes of
 * one machine) of every essential record, with what the experiments need
 * to judge it against its deadline: decode time, segment and size. */
static GstPadProbeReturn
arrivals_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  ProxySession *ps = user_data;
  gint64 now = g_get_monotonic_time ();
  GstTwoflowFrameHeader h;
  GstBuffer *payload;

  gst_twoflow_parser_push (ps->arrivals_parser,
      gst_buffer_ref (GST_PAD_PROBE_INFO_BUFFER (info)));
  while (gst_twoflow_parser_pop (ps->arrivals_parser, &h, &payload) ==
      GST_TWOFLOW_PARSE_OK) {
    if (h.kind == GST_TWOFLOW_RECORD_FRAME)
      fprintf (ps->arrivals, "%" G_GINT64_FORMAT " %u %u %c %" G_GUINT64_FORMAT
          " %u\n", now, h.frame_no, h.segment_no,
          gst_twoflow_picture_type_to_char (h.picture_type), h.dts,
          GST_TWOFLOW_HEADER_SIZE + h.payload_size);
    /* complete up to here even if the process is killed */
    fflush (ps->arrivals);
    if (payload)
      gst_buffer_unref (payload);
  }
  return GST_PAD_PROBE_OK;
}

static void
add_count_probe (GstElement * e, gint64 * counter)
{
  GstPad *pad = gst_element_get_static_pad (e, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_probe, counter,
      NULL);
  gst_object_unref (pad);
}

static GstElement *
make (GstBin * bin, const gchar * factory, const gchar * name)
{
  GstElement *e = gst_element_factory_make (factory, name);
  if (e)
    gst_bin_add (bin, e);
  else
    g_printerr ("missing element %s\n", factory);
  return e;
}

static void
merge_pad_added (GstElement * merge, GstPad * pad, GstElement * bin)
{
  if (g_str_equal (GST_PAD_NAME (pad), "audio")) {
    GstPad *ghost = gst_ghost_pad_new ("audio", pad);

    gst_pad_set_active (ghost, TRUE);
    gst_element_add_pad (bin, ghost);
  }
}

static void
merge_no_more_pads (GstElement * merge, GstElement * bin)
{
  gst_element_no_more_pads (bin);
}

/* A receiver's kernel buffer for a flow (bytes, as SO_RCVBUF is asked):
 * RCVBUF_SECONDS of its peak rate (bit/s), so the burst of a stalled
 * second or two (a busy machine, a segment's first packets) fits, at
 * least 4 MiB (what it was before), at most 256 MiB. */
#define RCVBUF_MIN (4 * 1024 * 1024)
#define RCVBUF_MAX (256 * 1024 * 1024)
#define RCVBUF_SECONDS 2
static gint
rcvbuf_for_rate (gint64 peak_bps)
{
  gint64 b = peak_bps / 8 * RCVBUF_SECONDS;

  return (gint) CLAMP (b, RCVBUF_MIN, RCVBUF_MAX);
}

/* the largest element of an integer array member of @o (0: none) */
static gint64
array_max (JsonObject * o, const gchar * member)
{
  JsonArray *a = o && json_object_has_member (o, member) ?
      json_object_get_array_member (o, member) : NULL;
  gint64 m = 0;
  guint i;

  for (i = 0; a && i < json_array_get_length (a); i++)
    m = MAX (m, json_array_get_int_element (a, i));
  return m;
}

/* The control connection's peer, the server, as an IP string: the only
 * address the receivers take media from (accept-host), also without TLS
 * (docs/security.md). */
static gchar *
server_ip (ProxySession * ps)
{
  GSocketAddress *ra = g_socket_connection_get_remote_address (ps->conn,
      NULL);
  gchar *ip = ra && G_IS_INET_SOCKET_ADDRESS (ra) ?
      g_inet_address_to_string (g_inet_socket_address_get_address
      (G_INET_SOCKET_ADDRESS (ra))) : NULL;

  g_clear_object (&ra);
  return ip;
}

/* The receiving bin: its "src" ghost pad gives the merged elementary
 * stream (or, pre-staging, the essential flow's bytes), its sometimes pad
 * "audio" the audio track. */
static GstElement *
build_receive_bin (ProxySession * ps)
{
  GstBin *bin = GST_BIN (gst_bin_new (NULL));
  GstElement *q, *out;
  GstPad *pad;
  gboolean erap = g_str_equal (opt_essential, "erap");
  gchar *peer_ip = server_ip (ps);

  if (!opt_insecure) {
    /* ERAP: a 32-byte master key; rUDP: SRTP AES-256-ICM key and salt */
    ps->erap_key = twoflow_random_hex (32);
    ps->srtp_key = twoflow_random_hex (46);
  }
  if (erap) {
    ps->ess_src = make (bin, "erapsrc", "ess_src");
    /* from the flow's rates: cTCP's largest segment rate, or its 1 s
     * peak (a resent burst) when higher; data only from the server: a
     * third address cannot take the session over, keyed or not */
    g_object_set (ps->ess_src, "address", "0.0.0.0", "port", 0,
        "caps", NULL, "buffer-size", rcvbuf_for_rate (MAX (array_max
                (ps->info, "essential_segment_rates"),
                twoflow_json_get_int (ps->info, "essential_peak_rate", 0))),
        "accept-host", peer_ip, NULL);
    if (ps->erap_key)
      g_object_set (ps->ess_src, "key", ps->erap_key, NULL);
    /* behind NAT: it says hello to the port PLAY's reply names, from its
     * own socket; it starts then (ready_cb) */
    if (opt_nat)
      gst_element_set_locked_state (ps->ess_src, TRUE);
  } else if (!opt_insecure) {
    /* cTCP/TCP over TLS (docs/security.md): we are the TLS client and
     * check the server's certificate as for the control connection (CA
     * and the name we dialled, or the pin), then prove ourselves with a
     * per-session token sent in PLAY */
    ps->ess_token = twoflow_random_hex (32);
    ps->ess_src = make (bin, "ctcpsrc", "ess_src");
    g_object_set (ps->ess_src, "tls", TRUE, "tls-ca-file", opt_tls_ca,
        "tls-pin", opt_tls_pin, "tls-server-name", server_host, "tls-token",
        ps->ess_token, NULL);
    if (opt_nat) {
      /* connects to the port PLAY's reply names (ready_cb) */
      g_object_set (ps->ess_src, "listen", FALSE, "host", server_host, NULL);
      gst_element_set_locked_state (ps->ess_src, TRUE);
    } else {
      /* only the server (the control connection's peer) may connect: a
       * stranger connecting first cannot hold the source */
      g_object_set (ps->ess_src, "host", "0.0.0.0", "port", 0,
          "accept-host", peer_ip, NULL);
    }
  } else if (opt_nat) {
    /* behind NAT: the proxy connects to the port PLAY's reply names; the
     * source starts then (ready_cb) */
    ps->ess_src = make (bin, "tcpclientsrc", "ess_src");
    g_object_set (ps->ess_src, "host", server_host, NULL);
    gst_element_set_locked_state (ps->ess_src, TRUE);
  } else {
    /* plaintext (--insecure) listening: ctcpsrc without TLS, a plain TCP
     * receiver as tcpserversrc, which takes the server's connection only
     * (a stranger connecting first is closed, not served) */
    ps->ess_src = make (bin, "ctcpsrc", "ess_src");
    g_object_set (ps->ess_src, "host", "0.0.0.0", "port", 0,
        "accept-host", peer_ip, NULL);
  }
  /* fixed port ranges let a network emulator tell the flows apart */
  if (opt_essential_ports > 0 && !(opt_nat && !erap))
    g_object_set (ps->ess_src, "port", opt_essential_ports + port_index % 100,
        NULL);
  add_count_probe (ps->ess_src, &ps->ess_bytes);
  if (opt_arrivals && !ps->prestage) {
    ps->arrivals = fopen (opt_arrivals, "w");
    if (ps->arrivals) {
      GstPad *sp = gst_element_get_static_pad (ps->ess_src, "src");

      fprintf (ps->arrivals, "# arrival_us frame segment type dts_ns bytes\n");
      ps->arrivals_parser = gst_twoflow_parser_new ();
      gst_pad_add_probe (sp, GST_PAD_PROBE_TYPE_BUFFER, arrivals_probe, ps,
          NULL);
      gst_object_unref (sp);
    } else {
      g_printerr ("cannot write %s\n", opt_arrivals);
    }
  }

  if (ps->prestage) {
    out = ps->ess_src;
  } else {
    GstElement *jb, *depay;
    GstCaps *caps;
    gchar *prefix = prefix_path (ps->video);
    JsonArray *lv = json_object_get_array_member (ps->info, "levels");
    GString *levels = g_string_new ("<");
    guint i;

    q = make (bin, "queue", NULL);
    g_object_set (q, "max-size-buffers", 0, "max-size-time", (guint64) 0,
        "max-size-bytes", 0, NULL);
    ps->merge = make (bin, "twoflowmerge", "merge");
    /* the first frame waits (up to 1 s) for the second: an H.264 video's
     * first I frame came through the essential flow ~0.4 s before the
     * enhanced flow's playout buffer let the second one go, and a player
     * starting at it froze for 2-3 frames (the showdown) */
    g_object_set (ps->merge, "latency",
        (guint64) opt_latency_ms * GST_MSECOND, "first-hold",
        (guint64) GST_SECOND, NULL);
    /* the prefix is the video's first segment: not for a later start */
    if (ps->start <= 0 && g_file_test (prefix, G_FILE_TEST_IS_REGULAR)) {
      g_object_set (ps->merge, "prefix-location", prefix, NULL);
      twoflow_store_touch (prefix);     /* its last use, for the LRU */
    }
    g_free (prefix);

    ps->enh_src = make (bin, "rudpsrc", "enh_src");
    ps->enh_port = opt_enhanced_ports > 0 ?
        opt_enhanced_ports + (gint) (port_index % 100) : free_udp_port ();
    caps = gst_caps_from_string ("application/x-rtp,media=application,"
        "clock-rate=90000,encoding-name=X-GST");
    /* from the flow's rates: its 1 s peak, or the smoothed window rate
     * when that is higher */
    g_object_set (ps->enh_src, "port", ps->enh_port, "caps", caps,
        "buffer-size", rcvbuf_for_rate (MAX (twoflow_json_get_int (ps->info,
                    "enhanced_peak_rate", 0), twoflow_json_get_int (ps->info,
                    "enhanced_smoothed_peak_rate", 0))), "accept-host", peer_ip,
        NULL);
    if (ps->srtp_key)
      g_object_set (ps->enh_src, "key", ps->srtp_key, NULL);
    /* behind NAT: as the ERAP source, hello first, started by ready_cb */
    if (opt_nat)
      gst_element_set_locked_state (ps->enh_src, TRUE);
    gst_caps_unref (caps);
    for (i = 0; lv && i < json_array_get_length (lv); i++)
      g_string_append_printf (levels, "%s(guint64)%" G_GINT64_FORMAT,
          i ? "," : "", json_array_get_int_element (lv, i) * 8);   /* bit/s */
    g_string_append (levels, ">");
    gst_util_set_object_arg (G_OBJECT (ps->enh_src), "levels", levels->str);
    g_string_free (levels, TRUE);
    add_count_probe (ps->enh_src, &ps->enh_bytes);
    jb = make (bin, "rtpjitterbuffer", NULL);
    /* a smoothed enhanced flow comes up to the smoothing lead ahead of
     * its playback: the jitterbuffer is its playout buffer (docs/system.md,
     * "Enhanced-flow smoothing") */
    ps->playout_ms = opt_jitter_ms;
    if (g_strcmp0 (twoflow_json_get_string (ps->info, "enhanced_rate", ""),
            "smooth") == 0)
      ps->playout_ms += (guint) (twoflow_json_get_double (ps->info,
              "smoothing_lead", 0) * 1000);
    /* a constant session total sends the flow further ahead in quiet
     * stretches: the buffer covers the longest wait */
    else if (g_strcmp0 (twoflow_json_get_string (ps->info, "enhanced_rate",
                ""), "total") == 0)
      ps->playout_ms += (guint) (twoflow_json_get_double (ps->info,
              "playout_depth", 0) * 1000);
    g_object_set (jb, "latency", ps->playout_ms, NULL);
    /* lost packets are asked for again (rudpsrc sends the jitterbuffer's
     * requests to rudpsink as RTCP NACKs), while the playout buffer
     * leaves time for it; only the gaps (not the next packet it expects:
     * the smoothed flow's timestamps run ahead of its arrivals), a few
     * times at most */
    g_object_set (jb, "do-retransmission", TRUE, "rtx-next-seqnum", FALSE,
        "rtx-max-retries", 8, NULL);
    ps->jitterbuffer = jb;
    depay = make (bin, "rtpgstdepay", NULL);
    gst_element_link_many (ps->ess_src, q, NULL);
    gst_element_link_pads (q, "src", ps->merge, "essential");
    gst_element_link_many (ps->enh_src, jb, depay, NULL);
    gst_element_link_pads (depay, "src", ps->merge, "enhanced");
    out = ps->merge;
  }
  pad = gst_element_get_static_pad (out, "src");
  if (ps->merge)
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, first_frames_probe, ps,
        NULL);
  gst_element_add_pad (GST_ELEMENT (bin), gst_ghost_pad_new ("src", pad));
  gst_object_unref (pad);
  ps->bin = GST_ELEMENT (bin);
  /* the audio: the merge adds its "audio" pad when the audio caps record
   * arrives and has all its pads after the first frame */
  if (ps->merge && ps->audio_codec
      && gst_element_class_get_pad_template (GST_ELEMENT_GET_CLASS
          (ps->merge), "audio")) {
    ps->audio_out = TRUE;
    g_signal_connect (ps->merge, "pad-added", G_CALLBACK (merge_pad_added),
        bin);
    g_signal_connect (ps->merge, "no-more-pads",
        G_CALLBACK (merge_no_more_pads), bin);
  }
  port_index++;
  g_free (peer_ip);
  return ps->bin;
}

static gint64
counter_get (gint64 * counter)
{
  gint64 v;
  G_LOCK (counters);
  v = *counter;
  G_UNLOCK (counters);
  return v;
}

static GstClockTime
admission_now (void)
{
  return g_get_monotonic_time () * GST_USECOND;
}

/* One progress event of the server: a sample for measured admission. */
static void
update_measurement (ProxySession * ps, JsonObject * ev)
{
  GstTwoflowAdmissionSample sample = { 0, };
  GstStructure *st = NULL;
  JsonObject *tc, *es;

  sample.essential_bytes = counter_get (&ps->ess_bytes);
  sample.enhanced_bytes = counter_get (&ps->enh_bytes);
  if (ps->enh_src)
    g_object_get (ps->enh_src, "stats", &st, NULL);
  if (st) {
    guint64 recovered = 0;

    gst_structure_get_uint64 (st, "received", &sample.received);
    gst_structure_get_uint64 (st, "lost", &sample.lost);
    /* the path's loss: what retransmission recovered was lost too */
    gst_structure_get_uint64 (st, "rtx-recovered", &recovered);
    sample.lost += recovered;
    sample.received -= MIN (recovered, sample.received);
    gst_structure_free (st);
  }
  tc = json_object_has_member (ev, "transcoder_stats") ?
      json_object_get_object_member (ev, "transcoder_stats") : NULL;
  if (tc) {
    sample.input_bitrate = twoflow_json_get_int (tc, "input-bitrate", 0);
    sample.target_bitrate = twoflow_json_get_int (tc, "target-bitrate", 0);
  }
  es = json_object_has_member (ev, "essential_stats") ?
      json_object_get_object_member (ev, "essential_stats") : NULL;
  sample.segments_late = es ? twoflow_json_get_int (es, "segments-late", 0) :
      0;
  /* the paper's health: the essential sender's target, sent and queued
   * bytes and retransmissions; the enhanced sender's bytes sent */
  if (es) {
    /* S/(T(1-p̂)) of the segment being sent; the stats' rates are B/s */
    sample.essential_target = twoflow_json_get_int (es, "nominal-rate", 0)
        * 8;
    sample.essential_sent = twoflow_json_get_int (es, "bytes-sent", 0);
    sample.essential_queued = twoflow_json_get_int (es, "bytes-queued", 0);
    sample.essential_retransmissions = twoflow_json_get_int (es,
        "retransmissions", 0);
    sample.essential_mss = twoflow_json_get_int (es, "mss", 0);
  }
  ps->enh_rate_changes = twoflow_json_get_int (ev, "enhanced_rate_changes",
      ps->enh_rate_changes);
  if (json_object_has_member (ev, "enhanced_stats"))
    sample.enhanced_sent = twoflow_json_get_int (json_object_get_object_member
        (ev, "enhanced_stats"), "bytes-sent", 0);
  gst_twoflow_admission_handle_sample (admission, ps->id, &sample,
      admission_now ());
  {
    GstTwoflowAdmissionHealth h;

    if (gst_twoflow_admission_get_health (admission, ps->id, &h)) {
      ps->samples++;
      if (ps->samples > GST_TWOFLOW_ADMISSION_LOSS_WINDOW && !h.healthy)
        ps->unhealthy_samples++;
    }
  }
}

static void read_event (ProxySession * ps);
static void end_session_output (ProxySession * ps);

/* A fetch whose control connection closed before the server's "done":
 * the server ended the session (it tears a session down with its
 * client), nothing more comes; what arrived is written and judged. */
static gboolean
control_closed_cb (gpointer data)
{
  ProxySession *ps = data;

  ps->closed_timer = 0;
  g_print ("proxy session %u: the server is gone: ending the output\n",
      ps->id);
  end_session_output (ps);
  return G_SOURCE_REMOVE;
}

static void
event_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  ProxySession *ps = user_data;
  GError *err = NULL;
  gchar *line = g_data_input_stream_read_line_finish_utf8 (G_DATA_INPUT_STREAM
      (source), res, NULL, &err);
  JsonObject *ev;

  if (line == NULL) {
    if (!g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
      g_print ("proxy session %u: control connection closed\n", ps->id);
      /* the datagrams and bytes already on their way get 2 s */
      if (g_strcmp0 (ps->kind, "fetch") == 0 && !ps->server_done
          && !ps->closed_timer)
        ps->closed_timer = g_timeout_add_seconds (2, control_closed_cb, ps);
    }
    g_clear_error (&err);
    return;
  }
  ev = twoflow_json_from_line (line, NULL);
  g_free (line);
  if (g_atomic_int_get (&ps->replaced) || g_atomic_int_get (&ps->released)) {
    if (ev)
      json_object_unref (ev);
    return;
  }
  if (ev) {
    const gchar *e = twoflow_json_get_string (ev, "event", "");
    if (g_str_equal (e, "progress"))
      update_measurement (ps, ev);
    else if (g_str_equal (e, "done")) {
      ps->server_done = TRUE;
      if (!ps->server_final)
        ps->server_final = json_object_ref (ev);
      log_json ("SERVER-DONE", ev);
      /* a fetch whose output was complete first waited for these stats */
      if (ps->final_timer) {
        g_source_remove (ps->final_timer);
        ps->final_timer = 0;
        g_main_loop_quit (ps->loop);
      }
      /* The server has sent everything: end the enhanced flow (UDP has no
       * end of its own), so twoflowmerge counts enhanced frames lost at
       * the very end as missing instead of waiting for them forever. */
      if (ps->enh_src)
        gst_element_send_event (ps->enh_src, gst_event_new_eos ());
    } else if (g_str_equal (e, "error")) {
      g_print ("proxy session %u: server error: %s\n", ps->id,
          twoflow_json_get_string (ev, "message", "?"));
      if (ps->bin)
        GST_ELEMENT_ERROR (ps->bin, RESOURCE, READ, ("server: %s",
                twoflow_json_get_string (ev, "message", "?")), (NULL));
    }
    json_object_unref (ev);
  }
  read_event (ps);
}

static void
read_event (ProxySession * ps)
{
  g_data_input_stream_read_line_async (ps->in, G_PRIORITY_DEFAULT,
      ps->cancel, event_cb, ps);
}

/* Behind NAT (--nat), once PLAY's reply names the server's ports: the
 * essential source connects out (cTCP/TCP: tcpclientsrc) or says hello
 * (ERAP: erapsrc), the enhanced one says hello (rudpsrc), each from its
 * own socket, to the control server's address; then they start. */
static gboolean
nat_start (ProxySession * ps, const TwoflowPlayReply * r)
{
  gint ess = r->essential_port;
  gint enh = r->enhanced_port;
  gint64 hello_id = r->hello_id;
  gboolean erap = g_str_equal (opt_essential, "erap");

  if (ess <= 0 || ess > 65535 || (ps->enh_src && (enh <= 0 || enh > 65535))
      || ((erap || ps->enh_src) && hello_id < 0)) {
    g_print ("proxy session %u: PLAY reply without essential_port, "
        "enhanced_port or hello_id\n", ps->id);
    return FALSE;
  }
  if (erap)
    g_object_set (ps->ess_src, "hello-host", server_host, "hello-port", ess,
        "hello-id", (guint64) hello_id, NULL);
  else
    g_object_set (ps->ess_src, "port", ess, NULL);
  gst_element_set_locked_state (ps->ess_src, FALSE);
  gst_element_sync_state_with_parent (ps->ess_src);
  if (ps->enh_src) {
    g_object_set (ps->enh_src, "hello-host", server_host, "hello-port", enh,
        "hello-id", (guint64) hello_id, NULL);
    gst_element_set_locked_state (ps->enh_src, FALSE);
    gst_element_sync_state_with_parent (ps->enh_src);
  }
  return TRUE;
}

/* The receivers listen once the bin has started; then the server may
 * connect: send PLAY. */
static gboolean
ready_cb (gpointer user_data)
{
  ProxySession *ps = user_data;
  gint ess_port = 0;
  TwoflowPlayRequest play;
  TwoflowPlayReply pr;
  JsonObject *req, *r;
  GError *err = NULL;
  gboolean nat = opt_nat;

  if (g_atomic_int_get (&ps->released)) {
    ps->ready_timer = 0;        /* set up and let go before its receivers
                                 * were ready: release_idle frees it */
    return G_SOURCE_REMOVE;
  }
  if (nat)
    ess_port = 1;               /* the server names the ports */
  else if (g_object_class_find_property (G_OBJECT_GET_CLASS (ps->ess_src),
          "current-port"))
    g_object_get (ps->ess_src, "current-port", &ess_port, NULL);
  else
    g_object_get (ps->ess_src, "port", &ess_port, NULL);
  if (ess_port <= 0 || (ps->enh_src && !nat
          && !GST_OBJECT_FLAG_IS_SET (ps->enh_src, GST_BASE_SRC_FLAG_STARTED)))
    return G_SOURCE_CONTINUE;
  ps->ready_timer = 0;

  twoflow_play_request_init (&play);
  video_request (&play.v, ps->video);
  /* (checked in main) */
  twoflow_essential_from_string (opt_essential, &play.essential);
  /* no host: the server sends only to the control connection's peer
   * (no reflection; docs/security.md) */
  if (ps->erap_key && g_str_equal (opt_essential, "erap"))
    play.erap_key = ps->erap_key;
  if (ps->srtp_key && ps->enh_src)
    play.srtp_key = ps->srtp_key;
  if (ps->ess_token && !g_str_equal (opt_essential, "erap"))
    play.essential_token = ps->ess_token;
  play.nat = nat;
  if (!nat)
    play.essential_port = ess_port;
  if (ps->prestage) {
    play.flows = TWOFLOW_FLOWS_ESSENTIAL;
    play.end_segment = 1;
  } else {
    if (!nat)
      play.enhanced_port = ps->enh_port;
    play.start = ps->start;
    if (ps->merge) {
      gchar *prefix = NULL;
      g_object_get (ps->merge, "prefix-location", &prefix, NULL);
      if (prefix)
        play.skip_segments = 1;
      g_free (prefix);
    }
  }
  /* (the strings are borrowed: play is not cleared) */
  req = twoflow_play_request_to_json (&play);
  r = request (ps, req, &err);
  json_object_unref (req);
  ps->play_sent = TRUE;
  if (!r) {
    g_print ("proxy session %u: PLAY failed: %s\n", ps->id, err->message);
    GST_ELEMENT_ERROR (ps->bin, RESOURCE, OPEN_READ, ("%s", err->message),
        (NULL));
    g_clear_error (&err);
    return G_SOURCE_REMOVE;
  }
  twoflow_play_reply_from_json (r, &pr);
  json_object_unref (r);
  ps->server_session = pr.session;
  if (nat && !nat_start (ps, &pr)) {
    GST_ELEMENT_ERROR (ps->bin, RESOURCE, OPEN_READ,
        ("server does not support --nat"), (NULL));
    return G_SOURCE_REMOVE;
  }
  ps->started_us = g_get_monotonic_time ();
  /* the smoothed reservation runs from here, when the flows start */
  gst_twoflow_admission_set_start (admission, ps->id, admission_now ());
  ps->lead = pr.lead;
  ps->start_npt = pr.start;
  ps->start_frames = pr.start_frames;
  ps->start_audio = pr.start_audio_records;
  if (ps->start > 0 && g_strcmp0 (ps->kind, "rtsp") == 0) {
    /* a seek: running times (and so the MPEG-TS timestamps) from where
     * the session starts in the video (twoflow_seek) */
    GstPad *src = gst_element_get_static_pad (ps->bin, "src");
    gsize ms = (gsize) (ps->start_npt * 1000 + 0.5);

    g_object_set_data (G_OBJECT (ps->bin), "twoflow-offset-ms",
        GSIZE_TO_POINTER (ms));
    gst_pad_set_offset (src, (gint64) ms * GST_MSECOND);
    gst_object_unref (src);
  }
  ps->smoothing = pr.smoothing;
  if (ps->jitterbuffer) {
    guint depth = opt_jitter_ms + (guint) (pr.playout_depth * 1000);

    if (depth != ps->playout_ms) {
      ps->playout_ms = depth;
      g_object_set (ps->jitterbuffer, "latency", depth, NULL);
    }
  }
  if (ps->arrivals) {
    /* the playback clock, also for a fetch that never reports */
    fprintf (ps->arrivals, "# started_us %" G_GINT64_FORMAT " lead %g\n",
        ps->started_us, ps->lead);
    fflush (ps->arrivals);
  }
  g_print ("proxy session %u: playing %s from %.3f s (server session %d, "
      "lead %.1f s, enhanced %s, playout buffer %u ms, peak %"
      G_GUINT64_FORMAT " bit/s)\n", ps->id, ps->video, ps->start_npt,
      ps->server_session,
      pr.lead, pr.smoothing ? "smoothed" : "at its peak rate",
      ps->playout_ms, ps->peak_rate);
  read_event (ps);
  return G_SOURCE_REMOVE;
}

static void
proxy_session_start (ProxySession * ps)
{
  ps->ready_timer = g_timeout_add (10, ready_cb, ps);
}

/* an integer member of member @obj of @o (@def when either is absent) */
static gint64
nested_int (JsonObject * o, const gchar * obj, const gchar * member,
    gint64 def)
{
  JsonObject *n = o && json_object_has_member (o, obj) ?
      json_object_get_object_member (o, obj) : NULL;

  return n ? twoflow_json_get_int (n, member, def) : def;
}

/* What reached the output of what the source has, and why the rest did
 * not (docs/system.md, "Delivery"; the judgement is the sans-IO
 * gst_twoflow_delivery_judge()): the source's frames (INFO) against the
 * merge's output; the enhanced packets the server sent (its done event's
 * rudpsink stats) against what rudpsrc received; the kernel's drops at
 * the receiver; the transcoder's deliberate drops (the server's final
 * stats). Sets ps->lost_frames, ps->unexplained_frames,
 * ps->audio_missing. */
static JsonObject *
delivery_report (ProxySession * ps, JsonObject * rep)
{
  JsonObject *o = json_object_new ();
  JsonObject *fin = ps->server_final;
  GstTwoflowDeliveryCounts c = { 0, };
  GstTwoflowDelivery d;

  /* a later start (seeking) sends the video from there */
  c.frames = ps->start_frames >= 0 ? ps->start_frames :
      twoflow_json_get_int (ps->info, "frames", 0);
  c.output_frames = nested_int (rep, "merge", "output-frames", 0);
  c.missing_frames = nested_int (rep, "merge", "missing-i", 0) +
      nested_int (rep, "merge", "missing-p", 0) +
      nested_int (rep, "merge", "missing-b", 0) +
      nested_int (rep, "merge", "missing-unknown", 0);
  c.dependent_dropped = nested_int (rep, "merge", "dropped", 0);
  c.transcoder_dropped = nested_int (fin, "transcoder_stats",
      "frames-dropped", 0);
  c.packets_sent = nested_int (fin, "enhanced_stats", "packets-sent", -1);
  c.packets_received = nested_int (rep, "rudpsrc", "received", 0);
  c.packets_lost = nested_int (rep, "rudpsrc", "lost", 0);
  c.kernel_drops = nested_int (rep, "rudpsrc", "kernel-drops", 0);
  c.other_kernel_drops = nested_int (rep, "erapsrc", "kernel-drops", 0);
  c.late_packets = nested_int (rep, "jitterbuffer", "num-late", 0);
  c.audio_records = ps->start_audio >= 0 ? ps->start_audio :
      twoflow_json_get_int (ps->info, "audio_records", 0);
  c.audio_output = nested_int (rep, "merge", "audio-buffers", 0);
  c.audio_expected = ps->audio_out;
  c.finished = ps->server_done;
  gst_twoflow_delivery_judge (&c, &d);

  json_object_set_int_member (o, "frames", c.frames);
  json_object_set_int_member (o, "output_frames", c.output_frames);
  json_object_set_int_member (o, "lost_frames", d.lost_frames);
  json_object_set_int_member (o, "unexplained_frames", d.unexplained_frames);
  json_object_set_int_member (o, "transcoder_dropped", c.transcoder_dropped);
  json_object_set_int_member (o, "dependent_dropped", c.dependent_dropped);
  json_object_set_int_member (o, "packets_sent", c.packets_sent);
  json_object_set_int_member (o, "packets_received", c.packets_received);
  json_object_set_int_member (o, "packets_lost", d.packets_lost);
  json_object_set_int_member (o, "network_lost_packets",
      d.network_lost_packets);
  json_object_set_int_member (o, "kernel_drops", c.kernel_drops +
      c.other_kernel_drops);
  json_object_set_int_member (o, "late_packets", c.late_packets);
  json_object_set_int_member (o, "audio_records", c.audio_records);
  json_object_set_int_member (o, "audio_output", c.audio_output);
  json_object_set_int_member (o, "audio_missing", d.audio_missing);
  json_object_set_boolean_member (o, "complete", d.complete);
  json_object_set_string_member (o, "cause",
      gst_twoflow_delivery_cause_name (d.cause));
  json_object_set_boolean_member (o, "finished", c.finished);
  ps->lost_frames = d.lost_frames;
  ps->unexplained_frames = d.unexplained_frames;
  ps->audio_missing = d.audio_missing;
  return o;
}

static JsonObject *
proxy_session_report (ProxySession * ps)
{
  JsonObject *o = json_object_new ();
  GstStructure *st = NULL;

  json_object_set_int_member (o, "session", ps->id);
  json_object_set_string_member (o, "video", ps->video);
  json_object_set_string_member (o, "kind", ps->kind ? ps->kind : "rtsp");
  json_object_set_int_member (o, "server_session", ps->server_session);
  json_object_set_double_member (o, "elapsed", ps->started_us ?
      (g_get_monotonic_time () - ps->started_us) / 1e6 : 0);
  /* when PLAY was answered (monotonic clock, us), and the enhanced flow's
   * lead: the playback clock --arrivals are judged against */
  json_object_set_int_member (o, "started_us", ps->started_us);
  json_object_set_double_member (o, "lead", ps->lead);
  /* start-up: s from the request to the merge's first and second video
   * frames (-1: none) */
  G_LOCK (counters);
  json_object_set_double_member (o, "first_frame_s", ps->first_frame_us ?
      (ps->first_frame_us - ps->created_us) / 1e6 : -1);
  json_object_set_double_member (o, "second_frame_s", ps->second_frame_us ?
      (ps->second_frame_us - ps->created_us) / 1e6 : -1);
  G_UNLOCK (counters);
  /* the enhanced flow's playout buffer (rtpjitterbuffer latency), ms */
  json_object_set_int_member (o, "playout_depth_ms", ps->playout_ms);
  /* the enhanced flow smoothed, and its rate changes (server, last
   * progress event) */
  json_object_set_boolean_member (o, "smoothing", ps->smoothing);
  json_object_set_int_member (o, "enhanced_rate_changes",
      ps->enh_rate_changes);
  json_object_set_int_member (o, "essential_bytes",
      counter_get (&ps->ess_bytes));
  json_object_set_int_member (o, "enhanced_bytes",
      counter_get (&ps->enh_bytes));
  json_object_set_int_member (o, "peak_rate", ps->peak_rate);
  json_object_set_int_member (o, "frames",
      twoflow_json_get_int (ps->info, "frames", 0));
  json_object_set_boolean_member (o, "server_done", ps->server_done);
  if (ps->merge) {
    g_object_get (ps->merge, "stats", &st, NULL);
    twoflow_json_add_structure (o, "merge", st);
    gst_structure_free (st);
  }
  if (ps->enh_src) {
    g_object_get (ps->enh_src, "stats", &st, NULL);
    twoflow_json_add_structure (o, "rudpsrc", st);
    gst_structure_free (st);
  }
  if (ps->ess_src && g_str_equal (opt_essential, "erap")) {
    g_object_get (ps->ess_src, "stats", &st, NULL);
    twoflow_json_add_structure (o, "erapsrc", st);
    gst_structure_free (st);
  }
  /* packets the jitterbuffer gave up on (num-lost) or dropped as too late
   * for its latency (num-late): frames missing without a network loss */
  if (ps->jitterbuffer) {
    g_object_get (ps->jitterbuffer, "stats", &st, NULL);
    twoflow_json_add_structure (o, "jitterbuffer", st);
    gst_structure_free (st);
  }
  /* what the output lacks, and why */
  if (ps->merge)
    json_object_set_object_member (o, "delivery", delivery_report (ps, o));
  /* the measured health (measured admission's view) at the end */
  {
    GstTwoflowAdmissionHealth h;

    if (gst_twoflow_admission_get_health (admission, ps->id, &h)) {
      JsonObject *ho = json_object_new ();

      json_object_set_boolean_member (ho, "healthy", h.healthy);
      json_object_set_double_member (ho, "essential_rate", h.essential_rate);
      json_object_set_double_member (ho, "enhanced_rate", h.enhanced_rate);
      json_object_set_double_member (ho, "essential_ratio",
          h.essential_ratio);
      json_object_set_double_member (ho, "enhanced_ratio", h.enhanced_ratio);
      json_object_set_double_member (ho, "loss", h.loss);
      json_object_set_double_member (ho, "essential_loss", h.essential_loss);
      json_object_set_double_member (ho, "transcoder_ratio", h.rate_ratio);
      json_object_set_int_member (ho, "unhealthy_samples",
          ps->unhealthy_samples);
      json_object_set_int_member (ho, "samples", ps->samples);
      json_object_set_object_member (o, "health", ho);
    }
  }
  return o;
}

/* ---------------------------------------------------------------- output */

/* What a fetch writes, by the output file's extension: "ts", "mp4", "mkv"
 * or "es" (the merged video elementary stream, no audio); otherwise by the
 * codec (MPEG-1/2: TS, H.264: Matroska). */
static const gchar *
container_for (const gchar * path, const gchar * codec)
{
  gchar *lower = g_ascii_strdown (path, -1);
  const gchar *c = NULL;
  const gchar *ext = strrchr (lower, '.');

  if (ext) {
    if (g_str_equal (ext, ".ts") || g_str_equal (ext, ".m2ts")
        || g_str_equal (ext, ".mts"))
      c = "ts";
    else if (g_str_equal (ext, ".mp4") || g_str_equal (ext, ".m4v")
        || g_str_equal (ext, ".mov"))
      c = "mp4";
    else if (g_str_equal (ext, ".mkv") || g_str_equal (ext, ".mka"))
      c = "mkv";
    else if (g_str_equal (ext, ".m2v") || g_str_equal (ext, ".m1v")
        || g_str_equal (ext, ".mpv") || g_str_equal (ext, ".h264")
        || g_str_equal (ext, ".264") || g_str_equal (ext, ".es")
        || g_str_equal (ext, ".twf"))
      c = "es";
  }
  g_free (lower);
  if (c)
    return c;
  return g_strcmp0 (codec, "h264") == 0 ? "mkv" : "ts";
}

static const gchar *
audio_parser_for (const gchar * codec)
{
  if (g_str_equal (codec, "aac"))
    return "aacparse";
  if (g_str_has_prefix (codec, "mp") && strlen (codec) == 3)
    return "mpegaudioparse";
  if (g_str_equal (codec, "ac3") || g_str_equal (codec, "eac3"))
    return "ac3parse";
  if (g_str_equal (codec, "opus"))
    return "opusparse";
  if (g_str_equal (codec, "flac"))
    return "flacparse";
  return "identity";
}

typedef struct
{
  GstElement *aqueue;
  gboolean linked;
} AudioLink;

static void recv_pad_added (GstElement * recv, GstPad * pad, AudioLink * al);
static void recv_no_more_pads (GstElement * recv, AudioLink * al);

/* the receiving bin's audio pad, when it comes, to the audio branch */
static void
connect_audio_link (GstElement * recv, AudioLink * al)
{
  al->linked = FALSE;
  g_signal_connect (recv, "pad-added", G_CALLBACK (recv_pad_added), al);
  g_signal_connect (recv, "no-more-pads", G_CALLBACK (recv_no_more_pads), al);
}

static void
recv_pad_added (GstElement * recv, GstPad * pad, AudioLink * al)
{
  GstPad *sink;

  if (!g_str_equal (GST_PAD_NAME (pad), "audio"))
    return;
  /* a session started later (seeking): its running times continue from
   * its start, as the video's (twoflow_seek) */
  gst_pad_set_offset (pad, GPOINTER_TO_SIZE (g_object_get_data (G_OBJECT
              (recv), "twoflow-offset-ms")) * GST_MSECOND);
  sink = gst_element_get_static_pad (al->aqueue, "sink");
  if (gst_pad_link (pad, sink) == GST_PAD_LINK_OK)
    al->linked = TRUE;
  else
    g_printerr ("cannot link the merged audio\n");
  gst_object_unref (sink);
}

/* The merge has all its pads and no audio came: end the audio branch so
 * the muxer goes on with the video alone. */
static void
recv_no_more_pads (GstElement * recv, AudioLink * al)
{
  GstPad *sink;
  GstSegment seg;

  if (al->linked)
    return;
  g_print ("no audio from the merge: video only\n");
  sink = gst_element_get_static_pad (al->aqueue, "sink");
  gst_pad_send_event (sink, gst_event_new_stream_start ("twoflow-no-audio"));
  gst_segment_init (&seg, GST_FORMAT_TIME);
  gst_pad_send_event (sink, gst_event_new_segment (&seg));
  gst_pad_send_event (sink, gst_event_new_eos ());
  gst_object_unref (sink);
}

static GstElement *
add_el (GstBin * bin, const gchar * factory, const gchar * name)
{
  GstElement *e = gst_element_factory_make (factory, name);

  if (e == NULL) {
    g_printerr ("missing element %s\n", factory);
    return NULL;
  }
  gst_bin_add (bin, e);
  return e;
}

/* The caps of an audio codec as the server names it (audio_codec_name). */
static GstCaps *
audio_codec_caps (const gchar * codec)
{
  if (g_str_equal (codec, "aac"))
    return gst_caps_from_string ("audio/mpeg, mpegversion=(int)4");
  if (g_str_has_prefix (codec, "mp") && strlen (codec) == 3)
    return gst_caps_from_string ("audio/mpeg, mpegversion=(int)1");
  {
    gchar *name = g_strconcat ("audio/x-", codec, NULL);
    GstCaps *caps = gst_caps_new_empty_simple (name);

    g_free (name);
    return caps;
  }
}

/* Whether a sink pad template of @factory takes @caps. */
static gboolean
factory_takes (const gchar * factory, const GstCaps * caps)
{
  GstElementFactory *f = gst_element_factory_find (factory);
  gboolean takes = f && gst_element_factory_can_sink_any_caps (f, caps);

  if (f)
    gst_object_unref (f);
  return takes;
}

/* The best-ranked audio decoder for @caps (NULL: none). */
static GstElementFactory *
audio_decoder_for (const GstCaps * caps)
{
  GList *all = gst_element_factory_list_get_elements
      (GST_ELEMENT_FACTORY_TYPE_DECODER | GST_ELEMENT_FACTORY_TYPE_MEDIA_AUDIO,
      GST_RANK_MARGINAL);
  GList *fit = gst_element_factory_list_filter (all, caps, GST_PAD_SINK,
      FALSE);
  GstElementFactory *best = NULL;

  fit = g_list_sort (fit, gst_plugin_feature_rank_compare_func);
  if (fit)
    best = gst_object_ref (fit->data);
  gst_plugin_feature_list_free (fit);
  gst_plugin_feature_list_free (all);
  return best;
}

/* Whether @container (its muxer @mux_factory) carries @codec so that it
 * plays back whole. Not where GStreamer 1.22's muxer takes the caps but
 * writes it wrong, nor where the viewers cannot decode it:
 * - mp4mux writes Opus's dOps box with OpusHead's little-endian fields as
 *   they are (pre-skip 312 reads as 14337 samples: decoders drop 0.3 s);
 * - HLS is for browsers: hls.js 1.5's MPEG-TS demuxer takes ADTS AAC and
 *   MPEG audio, AC-3 only where the browser's MSE does (not Chromium), and
 *   no Opus (stream type 6 without an AC-3 descriptor is skipped), so the
 *   page played such videos silent. mpegtsmux itself carries Opus (the
 *   segments of twoflow-hls.c decode whole with ffmpeg). */
static gboolean
mux_carries (const gchar * mux_factory, const gchar * container,
    const gchar * codec, const GstCaps * caps)
{
  if (g_str_equal (container, "hls"))
    return g_str_equal (codec, "aac") || (g_str_has_prefix (codec, "mp")
        && strlen (codec) == 3);
  if (g_str_equal (mux_factory, "mp4mux") && g_str_equal (codec, "opus"))
    return FALSE;
  return factory_takes (mux_factory, caps);
}

/* When @container's muxer cannot carry @codec (GStreamer 1.22: E-AC-3,
 * FLAC, Vorbis in MPEG-TS or MP4 ...; mux_carries), the audio is
 * transcoded to AAC:
 * parser ! decoder ! audioconvert ! audioresample ! avenc_aac ! aacparse.
 * Returns the last element of that chain (NULL: not needed, or @error). */
static GstElement *
audio_transcode (GstBin * bin, GstElement * aparse, const gchar * codec,
    const gchar * mux_factory, const gchar * container, GError ** error)
{
  GstCaps *caps = audio_codec_caps (codec);
  GstElementFactory *dec;
  GstElement *d, *conv, *res, *enc, *parse;

  if (mux_carries (mux_factory, container, codec, caps)) {
    gst_caps_unref (caps);
    return NULL;
  }
  dec = audio_decoder_for (caps);
  gst_caps_unref (caps);
  if (dec == NULL) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
        "%s audio cannot go into %s and no decoder for it is installed",
        codec, container);
    return NULL;
  }
  d = gst_element_factory_create (dec, NULL);
  conv = add_el (bin, "audioconvert", NULL);
  res = add_el (bin, "audioresample", NULL);
  enc = add_el (bin, "avenc_aac", NULL);
  parse = add_el (bin, "aacparse", NULL);
  if (d)
    gst_bin_add (bin, d);
  if (!d || !conv || !res || !enc || !parse
      || !gst_element_link_many (aparse, d, conv, res, enc, parse, NULL)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
        "%s audio cannot go into %s and cannot be transcoded to AAC",
        codec, container);
    gst_object_unref (dec);
    return NULL;
  }
  g_print ("audio: %s cannot go into %s (%s): transcoded to AAC (%s ! "
      "avenc_aac)\n", codec, container, mux_factory,
      GST_OBJECT_NAME (dec));
  gst_object_unref (dec);
  return parse;
}

/* MPEG-1/2 video for the browsers' HLS (and for MP4: no muxer of
 * GStreamer 1.22 writes MPEG-2 video into MP4): @vparse ! decoder !
 * videoconvert ! x264enc (a key frame every 2 s, HLS's target duration) !
 * h264parse ! @stream_format caps; returns the last element, linked (NULL:
 * missing). */
/* avdec_mpeg2video (libav 5.1) gives two frames of an open GOP's start the
 * same PTS (0.245 s twice, none at 0.165 s, from a file as from the
 * merge); x264enc then returns a frame without PTS and mp4mux fails ("Buffer
 * has no PTS"). A frame whose PTS is missing or not after the previous one
 * gets the previous one's end. */
static GstPadProbeReturn
increasing_pts_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstClockTime *last = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime pts = GST_BUFFER_PTS (buf), dur = GST_BUFFER_DURATION (buf);

  if (GST_CLOCK_TIME_IS_VALID (*last) && (!GST_CLOCK_TIME_IS_VALID (pts)
          || pts <= *last)) {
    buf = gst_buffer_make_writable (buf);
    GST_BUFFER_PTS (buf) = pts = *last + (GST_CLOCK_TIME_IS_VALID (dur) ?
        dur : 1);
    GST_PAD_PROBE_INFO_DATA (info) = buf;
  }
  if (GST_CLOCK_TIME_IS_VALID (pts))
    *last = pts;
  return GST_PAD_PROBE_OK;
}

static GstElement *
hls_h264_encoder (GstBin * bin, GstElement * vparse,
    const gchar * stream_format)
{
  GstElement *dec = add_el (bin, "avdec_mpeg2video", NULL);
  GstElement *conv = add_el (bin, "videoconvert", NULL);
  GstElement *enc = add_el (bin, "x264enc", NULL);
  GstElement *parse = add_el (bin, "h264parse", NULL);
  GstElement *caps = add_el (bin, "capsfilter", NULL);
  GstCaps *c;

  if (!dec || !conv || !enc || !parse || !caps)
    return NULL;
  gst_util_set_object_arg (G_OBJECT (enc), "speed-preset", "veryfast");
  gst_util_set_object_arg (G_OBJECT (enc), "pass", "qual");
  g_object_set (enc, "quantizer", 21, "key-int-max", 50, "bframes", 0,
      NULL);
  g_object_set (parse, "config-interval", -1, NULL);
  c = gst_caps_new_simple ("video/x-h264", "stream-format", G_TYPE_STRING,
      stream_format, "alignment", G_TYPE_STRING, "au", NULL);
  g_object_set (caps, "caps", c, NULL);
  gst_caps_unref (c);
  if (!gst_element_link_many (vparse, dec, conv, enc, parse, caps, NULL))
    return NULL;
  {
    GstPad *src = gst_element_get_static_pad (dec, "src");
    GstClockTime *last = g_new (GstClockTime, 1);

    *last = GST_CLOCK_TIME_NONE;
    gst_pad_add_probe (src, GST_PAD_PROBE_TYPE_BUFFER, increasing_pts_probe,
        last, g_free);
    gst_object_unref (src);
  }
  return caps;
}

/* recv's video (and audio) through parsers into a @container muxer, which
 * is returned (its src pad unlinked). For MPEG-TS the H.264 video is a byte
 * stream with SPS/PPS before every IDR frame, so a viewer can start at any
 * key frame. */
static GstElement *
build_mux (GstBin * bin, ProxySession * ps, GstElement * recv,
    const gchar * container, GError ** error)
{
  gboolean h264 = g_strcmp0 (ps->video_codec, "h264") == 0;
  gboolean hls_transcoded;
  GstElement *mux, *vq, *vparse, *vcaps = NULL;
  GstPad *pad;

  gboolean hls = g_str_equal (container, "hls");
  /* HLS: MPEG-TS segments (twoflow-hls.c cuts mpegtsmux's output) */
  const gchar *mux_factory = g_str_equal (container, "mp4") ? "mp4mux" :
      g_str_equal (container, "mkv") ? "matroskamux" : "mpegtsmux";

  mux = add_el (bin, mux_factory, "mux");
  vq = add_el (bin, "queue", NULL);
  vparse = add_el (bin, h264 ? "h264parse" : "mpegvideoparse", NULL);
  if (!mux || !vq || !vparse)
    goto missing;
  hls_transcoded = (hls || g_str_equal (container, "mp4")) && !h264;
  if (hls_transcoded) {
    /* browsers decode no MPEG-1/2 video: the HLS copy (made once per
     * video and cached with its segments) is H.264; mp4mux takes no
     * MPEG-1/2 video */
    vcaps = hls_h264_encoder (bin, vparse, hls ? "byte-stream" : "avc");
    if (!vcaps)
      goto missing;
    g_print ("%s: %s video transcoded to H.264 (x264enc)\n",
        hls ? "HLS (for browsers)" : "MP4 (mp4mux takes no MPEG-1/2 video)",
        ps->video_codec);
  } else if (h264) {
    g_object_set (vparse, "config-interval", -1, NULL);
    if (g_str_equal (container, "ts") || hls) {
      GstCaps *c = gst_caps_from_string ("video/x-h264,"
          "stream-format=byte-stream,alignment=au");
      vcaps = add_el (bin, "capsfilter", NULL);
      g_object_set (vcaps, "caps", c, NULL);
      gst_caps_unref (c);
    }
  }
  g_object_set (vq, "max-size-buffers", 0, "max-size-time", (guint64) 0,
      "max-size-bytes", 0, NULL);
  if (!gst_element_link_pads (recv, "src", vq, "sink")
      || !gst_element_link (vq, vparse)
      || (vcaps && !hls_transcoded && !gst_element_link (vparse, vcaps))
      || !gst_element_link_pads (vcaps ? vcaps : vparse, "src", mux, NULL)) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "%s video cannot go into %s", ps->video_codec, container);
    return NULL;
  }
  if (ps->audio_out) {
    AudioLink *al = g_new0 (AudioLink, 1);
    GstElement *aparse, *alast;
    GError *terr = NULL;

    al->aqueue = add_el (bin, "queue", NULL);
    aparse = add_el (bin, audio_parser_for (ps->audio_codec), NULL);
    if (!al->aqueue || !aparse) {
      g_free (al);
      goto missing;
    }
    g_object_set (al->aqueue, "max-size-buffers", 0, "max-size-time",
        (guint64) 0, "max-size-bytes", 0, NULL);
    gst_element_link (al->aqueue, aparse);
    alast = audio_transcode (bin, aparse, ps->audio_codec, mux_factory,
        container, &terr);
    if (terr) {
      g_free (al);
      g_propagate_error (error, terr);
      return NULL;
    }
    if (alast == NULL) {
      alast = aparse;
      g_print ("audio: %s carried as is into %s\n", ps->audio_codec,
          container);
    }
    pad = gst_element_get_static_pad (alast, "src");
    if (!gst_element_link_pads (alast, "src", mux, NULL)) {
      gst_object_unref (pad);
      g_free (al);
      g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
          "%s audio cannot go into %s", ps->audio_codec, container);
      return NULL;
    }
    gst_object_unref (pad);
    g_object_set_data_full (G_OBJECT (bin), "twoflow-audio-link", al,
        g_free);
    connect_audio_link (recv, al);
  }
  ps->out_mux = mux;
  return mux;

missing:
  g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
      "missing elements for the %s output", container);
  return NULL;
}

/* ----------------------------------------------------- admission control */

static guint64 *
json_rates (JsonObject * info, const gchar * name, guint * n)
{
  JsonArray *a = json_object_has_member (info, name) ?
      json_object_get_array_member (info, name) : NULL;
  guint64 *r;
  guint i;

  *n = a ? json_array_get_length (a) : 0;
  r = g_new0 (guint64, MAX (*n, 1));
  for (i = 0; i < *n; i++)
    r[i] = json_array_get_int_element (a, i);
  return r;
}

/* A session's rates for admission from the server's INFO reply
 * (docs/system.md, "Admission control"): its peak and its smoothed rates,
 * the essential flow's cTCP target per segment and the enhanced flow's
 * window rates, with where its enhanced flow starts: one segment minus the
 * smoothing lead in, or at once with a prefix (then the essential flow
 * starts at segment 1). Free the arrays with rates_clear(). */
static void
rates_from_info (JsonObject * info, const gchar * video,
    GstTwoflowAdmissionRates * r)
{
  gchar *prefix = prefix_path (video);
  gboolean has_prefix = g_file_test (prefix, G_FILE_TEST_IS_REGULAR);
  gdouble T = twoflow_json_get_double (info, "segment_duration", opt_segment);
  /* without a prefix: one segment, or the server's start-up ramp's lead */
  gdouble lead = has_prefix ? 0 : twoflow_json_get_double (info,
      "startup_lead", T), slead;

  memset (r, 0, sizeof (*r));
  r->peak_rate = twoflow_json_get_int (info, "peak_rate", 0);
  r->essential_rates = json_rates (info, "essential_segment_rates",
      &r->n_essential);
  r->segment_duration = (GstClockTime) (T * GST_SECOND);
  r->essential_skip = has_prefix ? 1 : 0;
  if (g_strcmp0 (twoflow_json_get_string (info, "enhanced_rate", ""),
          "total") == 0 && twoflow_json_get_int (info, "total_rate", 0) > 0) {
    /* the session's total is constant: R for the whole session (the
     * essential flow's share is in it) */
    guint64 *one = g_new (guint64, 1);

    one[0] = twoflow_json_get_int (info, "total_rate", 0);
    r->enhanced_rates = one;
    r->n_enhanced = 1;
    g_free ((gpointer) r->essential_rates);
    r->essential_rates = g_new0 (guint64, 1);
    r->n_essential = 1;
    r->window = (GstClockTime) ((twoflow_json_get_double (info, "duration",
                0) + T + 1) * GST_SECOND);
    r->segment_duration = r->window;
    r->essential_skip = 0;
    r->enhanced_start = 0;
  } else if (g_strcmp0 (twoflow_json_get_string (info, "enhanced_rate", ""),
          "smooth") == 0) {
    r->enhanced_rates = json_rates (info, "enhanced_window_rates",
        &r->n_enhanced);
    r->window = (GstClockTime) (twoflow_json_get_double (info,
            "smoothing_window", 1) * GST_SECOND);
    slead = twoflow_json_get_double (info, "smoothing_lead", 0);
    r->enhanced_start = (GstClockTime) (MAX (lead - slead, 0) * GST_SECOND);
  } else {
    /* the old pacing: 1.25 x its 1 s peak for the whole video */
    guint64 *one = g_new (guint64, 1);

    one[0] = twoflow_json_get_int (info, "enhanced_peak_rate", 0) * 5 / 4;
    r->enhanced_rates = one;
    r->n_enhanced = 1;
    r->window = (GstClockTime) ((twoflow_json_get_double (info, "duration",
                0) + 1) * GST_SECOND);
    r->enhanced_start = (GstClockTime) (lead * GST_SECOND);
  }
  g_free (prefix);
}

static void
rates_clear (GstTwoflowAdmissionRates * r)
{
  g_free ((gpointer) r->essential_rates);
  g_free ((gpointer) r->enhanced_rates);
  r->essential_rates = r->enhanced_rates = NULL;
}

/* Adds an admitted (or fetching) session with its rates: reserved in
 * configured mode, measured in every mode (its health is in the logs). */
static void
admission_add (ProxySession * ps)
{
  GstTwoflowAdmissionRates r;

  rates_from_info (ps->info, ps->video, &r);
  gst_twoflow_admission_add_rates (admission, ps->id, ps->video, &r,
      admission_now ());
  rates_clear (&r);
}

/* Called once per viewer: at DESCRIBE (stage "describe": a rejection
 * answers 503 with the reason; the media that DESCRIBE makes is then
 * admitted without a second decision), or when a session is set up
 * without one (stage "session": RTSP without DESCRIBE, HLS, fetches); the
 * caller then adds it, reserving its rates. Every decision is logged. */
static gboolean
admission_check (const gchar * video, JsonObject * info, const gchar * stage,
    gchar ** reason)
{
  GstTwoflowAdmissionDecision d;
  JsonObject *log = json_object_new ();
  GstTwoflowAdmissionRates r;
  guint64 peak;

  rates_from_info (info, video, &r);
  peak = r.peak_rate;
  gst_twoflow_admission_decide_rates (admission, &r, admission_now (), &d);
  rates_clear (&r);
  json_object_set_string_member (log, "video", video);
  json_object_set_int_member (log, "peak_rate", peak);
  json_object_set_int_member (log, "sessions", d.sessions);
  json_object_set_string_member (log, "mode",
      gst_twoflow_admission_mode_to_string (d.mode));
  if (d.mode == GST_TWOFLOW_ADMISSION_CONFIGURED) {
    json_object_set_string_member (log, "basis",
        gst_twoflow_admission_get_basis (admission) ==
        GST_TWOFLOW_ADMISSION_BASIS_PEAK ? "peak" : "smoothed");
    /* what it needs (peak, or its highest smoothed rate until both its
     * flows run) against the residual at the tightest instant */
    json_object_set_double_member (log, "rate", d.rate);
    json_object_set_double_member (log, "capacity", d.capacity);
    json_object_set_double_member (log, "residual", d.residual);
  }
  json_object_set_string_member (log, "decision", d.admit ? "admit" :
      "reject");
  json_object_set_string_member (log, "stage", stage);
  if (!d.admit)
    json_object_set_string_member (log, "reason", d.reason);
  log_json ("ADMISSION", log);
  web_note_decision (log);
  json_object_unref (log);
  *reason = d.reason;
  return d.admit;
}

/* ------------------------------------------------------------------ RTSP */

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
 * set-ups (short: the INFO is cached) still take turns, as before. */
#define RTSP_CLIENT_THREADS 64
static GRecMutex rtsp_lock;

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

/* The session's report and its memory, in the main loop: its callbacks
 * (ready_cb, event_cb, the timers) run there, so it is freed there. */
static gboolean
release_idle (gpointer data)
{
  ProxySession *ps = data;

  g_rec_mutex_lock (&rtsp_lock);
  if (!ps->end_report) {
    /* set up, never played: no server session to report */
    g_print ("proxy session %u: released (never played)\n", ps->id);
  } else {
    log_json ("SESSION-END", ps->end_report);
    json_object_unref (ps->end_report);
    g_print ("proxy session %u: released; %.2f Mbit/s reserved\n",
        ps->id, gst_twoflow_admission_reserved (admission) / 1e6);
  }
  proxy_session_free (ps);
  g_rec_mutex_unlock (&rtsp_lock);
  return G_SOURCE_REMOVE;
}

/* The media of @ps is going, in whatever thread lets it go (a client's,
 * on TEARDOWN or a closed connection): its reservation ends and its
 * report is taken now, while its elements still exist; the session is
 * freed in the main loop (freeing it here raced with a server event
 * still to be dispatched there), which ignores it from now on. */
static void
release_session (gpointer data, GObject * where_the_media_was)
{
  ProxySession *ps = data;

  g_rec_mutex_lock (&rtsp_lock);
  gst_twoflow_admission_remove (admission, ps->id);
  if (ps->ready_timer || ps->play_sent)
    ps->end_report = proxy_session_report (ps);
  g_atomic_int_set (&ps->released, 1);
  g_rec_mutex_unlock (&rtsp_lock);
  g_idle_add (release_idle, ps);
}

static void
media_unprepared (GstRTSPMedia * media, gpointer data)
{
  ProxySession *ps = g_object_get_data (G_OBJECT (media), "twoflow-session");
  if (ps) {
    g_object_weak_unref (G_OBJECT (media), release_session, ps);
    g_object_set_data (G_OBJECT (media), "twoflow-session", NULL);
    release_session (ps, NULL);
  }
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

/* ---------------------------------------------------------- RTSP seeking
 *
 * gst-rtsp-server seeks a media by asking its pipeline (SEEKING query:
 * check_seekable) and sending it a flushing SEEK event, then waits for
 * ASYNC_DONE (a re-preroll). The media's pipeline is a TwoflowPipeline:
 * it answers SEEKING (seekable, 0 to the duration) and DURATION from the
 * server's INFO, and handles SEEK by starting a new server session at the
 * asked time (the server starts it at the key frame before it, on both
 * flows, the audio from there too): the old receiving bin is flushed out
 * and replaced, the new one's running times continue from its start (so
 * the MPEG-TS timestamps are the video's), and ASYNC_DONE tells the media
 * the seek is done (its sinks do not preroll: the pipeline is live). The
 * SDP carries the duration (TwoflowMedia), the PLAY answer's Range where
 * the session starts (send_message). */

/* mpegtsmux 1.22 writes running time + this (its TS_MUX_CLOCK_BASE) */
#define TS_CLOCK_BASE_S 3600.0

typedef GstPipeline TwoflowPipeline;
typedef GstPipelineClass TwoflowPipelineClass;
GType twoflow_pipeline_get_type (void);
G_DEFINE_TYPE (TwoflowPipeline, twoflow_pipeline, GST_TYPE_PIPELINE);

typedef GstRTSPMedia TwoflowMedia;
typedef GstRTSPMediaClass TwoflowMediaClass;
GType twoflow_media_get_type (void);
G_DEFINE_TYPE (TwoflowMedia, twoflow_media, GST_TYPE_RTSP_MEDIA);

/* the media's element (the bin of twoflow_factory_create_element) */
static GstElement *
pipeline_top (GstElement * pipeline)
{
  GstRTSPMedia *media = g_object_get_data (G_OBJECT (pipeline),
      "twoflow-media");

  return media ? gst_rtsp_media_get_element (media) : NULL;
}

static ProxySession *
pipeline_session (GstElement * pipeline)
{
  GstElement *top = pipeline_top (pipeline);
  ProxySession *ps = top ? g_object_get_data (G_OBJECT (top),
      "twoflow-session") : NULL;

  if (top)
    gst_object_unref (top);
  return ps;
}

/* a video the server can start anywhere (not a frame trace) and its
 * duration in ns */
static gboolean
info_seekable (JsonObject * info, gint64 * duration)
{
  gdouble d;

  if (!info || g_strcmp0 (twoflow_json_get_string (info, "kind", ""),
          "mpeg") != 0)
    return FALSE;
  d = twoflow_json_get_double (info, "duration", 0);
  if (d <= 0)
    return FALSE;
  *duration = (gint64) (d * GST_SECOND);
  return TRUE;
}

static gboolean
session_seekable (ProxySession * ps, gint64 * duration)
{
  return ps != NULL && info_seekable (ps->info, duration);
}

/* Where a seek to @t (s) of the RTSP request in this thread goes: ffmpeg
 * (libavformat) seeks an MPEG-TS stream in the TS's own timestamps, which
 * mpegtsmux starts at TS_CLOCK_BASE_S. FALSE: nowhere new (the first PLAY
 * of a session that starts there already). */
static gboolean
seek_target (ProxySession * ps, gdouble * t, gint64 duration)
{
  GstRTSPContext *ctx = gst_rtsp_context_get_current ();
  gchar *ua = NULL;

  if (ctx && ctx->request && gst_rtsp_message_get_header (ctx->request,
          GST_RTSP_HDR_USER_AGENT, &ua, 0) == GST_RTSP_OK
      && g_str_has_prefix (ua, "Lavf") && *t >= TS_CLOCK_BASE_S)
    *t -= TS_CLOCK_BASE_S;
  *t = CLAMP (*t, 0, (gdouble) duration / GST_SECOND);
  return ps->rtsp_played || ABS (*t - ps->start) >= 0.001;
}

/* Whether the PLAY in this thread seeks: its Range's start is somewhere
 * new. gst-rtsp-server unblocks the media's streams for a seek, before
 * the viewer's transport is ready: what the session had sent by then
 * (a prefix's first frames) was lost when no seek was needed. */
static gboolean
range_start (gdouble * t)
{
  GstRTSPContext *ctx = gst_rtsp_context_get_current ();
  GstRTSPTimeRange *range = NULL;
  GstClockTime start = GST_CLOCK_TIME_NONE, stop;
  gchar *str = NULL;

  if (!ctx || !ctx->request || gst_rtsp_message_get_header (ctx->request,
          GST_RTSP_HDR_RANGE, &str, 0) != GST_RTSP_OK
      || gst_rtsp_range_parse (str, &range) != GST_RTSP_OK)
    return FALSE;
  if (range->unit == GST_RTSP_RANGE_NPT)
    gst_rtsp_range_get_times (range, &start, &stop);
  gst_rtsp_range_free (range);
  if (!GST_CLOCK_TIME_IS_VALID (start))
    return FALSE;
  *t = (gdouble) start / GST_SECOND;
  return TRUE;
}

static gboolean
play_seeks (ProxySession * ps, gint64 duration)
{
  gdouble t;

  return range_start (&t) && seek_target (ps, &t, duration);
}

static gboolean
twoflow_pipeline_query (GstElement * element, GstQuery * query)
{
  gint64 duration;
  GstFormat fmt;
  ProxySession *ps;

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_SEEKING:
      gst_query_parse_seeking (query, &fmt, NULL, NULL, NULL);
      ps = pipeline_session (element);
      if (fmt != GST_FORMAT_TIME || !session_seekable (ps, &duration))
        break;
      gst_query_set_seeking (query, fmt, play_seeks (ps, duration), 0,
          duration);
      return TRUE;
    case GST_QUERY_DURATION:
      gst_query_parse_duration (query, &fmt, NULL);
      if (fmt != GST_FORMAT_TIME
          || !session_seekable (pipeline_session (element), &duration))
        break;
      gst_query_set_duration (query, fmt, duration);
      return TRUE;
    default:
      break;
  }
  return GST_ELEMENT_CLASS (twoflow_pipeline_parent_class)->query (element,
      query);
}

static gboolean twoflow_seek (GstElement * pipeline, gdouble t);

static gboolean
twoflow_pipeline_send_event (GstElement * element, GstEvent * event)
{
  gdouble rate;
  GstFormat fmt;
  GstSeekFlags flags;
  GstSeekType start_type, stop_type;
  gint64 start, stop;
  gboolean ok;

  if (GST_EVENT_TYPE (event) != GST_EVENT_SEEK)
    return GST_ELEMENT_CLASS (twoflow_pipeline_parent_class)->send_event
        (element, event);
  gst_event_parse_seek (event, &rate, &fmt, &flags, &start_type, &start,
      &stop_type, &stop);
  gst_event_unref (event);
  /* forward, at normal speed, to a time: a new start; a seek that changes
   * nothing else (no start, same rate) needs nothing */
  if (fmt != GST_FORMAT_TIME || rate != 1.0)
    return FALSE;
  if (start_type != GST_SEEK_TYPE_SET || start < 0)
    return TRUE;
  ok = twoflow_seek (element, (gdouble) start / GST_SECOND);
  return ok;
}

static void
twoflow_pipeline_class_init (TwoflowPipelineClass * klass)
{
  GstElementClass *ec = GST_ELEMENT_CLASS (klass);

  ec->query = twoflow_pipeline_query;
  ec->send_event = twoflow_pipeline_send_event;
}

static void
twoflow_pipeline_init (TwoflowPipeline * p)
{
}

/* The SDP's range: the video's duration (the media is live, which
 * gst-rtsp-server describes as npt=now-). */
static gboolean
twoflow_media_setup_sdp (GstRTSPMedia * media, GstSDPMessage * sdp,
    GstSDPInfo * info)
{
  GstElement *top;
  ProxySession *ps;
  gint64 duration;
  gboolean seekable;
  guint i;

  if (!GST_RTSP_MEDIA_CLASS (twoflow_media_parent_class)->setup_sdp (media,
          sdp, info))
    return FALSE;
  top = gst_rtsp_media_get_element (media);
  ps = g_object_get_data (G_OBJECT (top), "twoflow-session");
  if (ps) {
    seekable = session_seekable (ps, &duration);
  } else {
    /* DESCRIBE's stand-in: the video's INFO (pre_describe has it) */
    const gchar *video = g_object_get_data (G_OBJECT (top), "twoflow-video");

    g_rec_mutex_lock (&rtsp_lock);
    seekable = video && info_seekable (g_hash_table_lookup (info_cache,
            video), &duration);
    g_rec_mutex_unlock (&rtsp_lock);
  }
  gst_object_unref (top);
  if (!seekable)
    return TRUE;
  for (i = 0; i < gst_sdp_message_attributes_len (sdp); i++) {
    const GstSDPAttribute *a = gst_sdp_message_get_attribute (sdp, i);

    if (g_strcmp0 (a->key, "range") == 0) {
      GstSDPAttribute na;
      gchar *v = g_strdup_printf ("npt=0-%.3f", (gdouble) duration /
          GST_SECOND);

      gst_sdp_attribute_set (&na, "range", v);
      gst_sdp_message_replace_attribute (sdp, i, &na);
      g_free (v);
      break;
    }
  }
  return TRUE;
}

static void
twoflow_media_class_init (TwoflowMediaClass * klass)
{
  klass->setup_sdp = twoflow_media_setup_sdp;
}

static void
twoflow_media_init (TwoflowMedia * m)
{
}


/* Null TS packets (PID 0x1FFF, which every demuxer skips) from a live
 * appsrc: what prepares a media (gst-rtsp-server makes the SDP from the
 * payloader's caps once a packet reaches it) without a server session
 * (issue 24: a stranger's DESCRIBE or SETUP must not hold one, nor
 * admission capacity). */
static void
stand_in_need_data (GstElement * src, guint length, gpointer data)
{
  static const guint8 null_packet[4] = { 0x47, 0x1f, 0xff, 0x10 };
  GstBuffer *buf;
  GstFlowReturn ret;
  guint i;

  if (g_object_get_data (G_OBJECT (src), "twoflow-pushed"))
    return;
  g_object_set_data (G_OBJECT (src), "twoflow-pushed", GINT_TO_POINTER (1));
  /* rtpmp2tpay sends when its MTU is full: 7 packets */
  buf = gst_buffer_new_allocate (NULL, 7 * 188, NULL);
  gst_buffer_memset (buf, 0, 0xff, 7 * 188);
  for (i = 0; i < 7; i++)
    gst_buffer_fill (buf, i * 188, null_packet, sizeof (null_packet));
  GST_BUFFER_PTS (buf) = 0;
  g_signal_emit_by_name (src, "push-buffer", buf, &ret);
  gst_buffer_unref (buf);
  /* beside the video's stream (a funnel), this input ends here */
  if (data)
    g_signal_emit_by_name (src, "end-of-stream", &ret);
}

static GstElement *
stand_in_source (gboolean eos)
{
  GstElement *src = gst_element_factory_make ("appsrc", NULL);
  GstCaps *caps = gst_caps_from_string ("video/mpegts, "
      "systemstream=(boolean)true, packetsize=(int)188");

  /* a live source answers latency min = max = 0 by default: beside the
   * video's stream (0.7 s of jitterbuffer) in a funnel that made max <
   * min ("minimum latency bigger than maximum latency" and a "Pipeline
   * construction is invalid" warning on every latency query); with
   * min-latency set, max-latency -1 is unbounded */
  g_object_set (src, "is-live", TRUE, "format", GST_FORMAT_TIME, "caps", caps,
      "min-latency", (gint64) 0, NULL);
  gst_caps_unref (caps);
  g_signal_connect (src, "need-data", G_CALLBACK (stand_in_need_data),
      GINT_TO_POINTER (eos));
  return src;
}

/* What a DESCRIBE gets instead of the video's media: the same SDP (one
 * live MPEG-TS stream over RTP, payload type 33, range now-). It must
 * follow what twoflow_factory_create_element builds for SETUP. */
static GstElement *
describe_stand_in (const gchar * video)
{
  GstElement *bin = gst_bin_new (NULL);
  GstElement *src = stand_in_source (FALSE);
  GstElement *pay = gst_element_factory_make ("rtpmp2tpay", "pay0");

  gst_bin_add_many (GST_BIN (bin), src, pay, NULL);
  gst_element_link (src, pay);
  /* the SDP's range (twoflow_media_setup_sdp) */
  g_object_set_data_full (G_OBJECT (bin), "twoflow-video", g_strdup (video),
      g_free);
  return bin;
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

/* A new server session at @t (s of the video; ffmpeg's MPEG-TS time)
 * replaces the media's, in the RTSP client's thread (PLAY with a Range)
 * with the media locked. */
static gboolean
twoflow_seek (GstElement * pipeline, gdouble t)
{
  GstRTSPMedia *media = g_object_get_data (G_OBJECT (pipeline),
      "twoflow-media");
  GstElement *top = pipeline_top (pipeline);
  ProxySession *old = top ? g_object_get_data (G_OBJECT (top),
      "twoflow-session") : NULL;
  ProxySession *ps;
  AudioLink *al;
  GstElement *recv, *old_recv;
  GstPad *gpad, *vsink, *asink = NULL;
  gint64 duration;
  GError *err = NULL;
  GstBus *bus;

  if (!media || !old || !old->bin || !session_seekable (old, &duration)) {
    if (top)
      gst_object_unref (top);
    return FALSE;
  }
  if (!seek_target (old, &t, duration))
    goto done;

  ps = proxy_session_new (old->video, FALSE, &err);
  if (!ps) {
    g_print ("RTSP seek in %s to %.3f s: %s\n", old->video, t, err->message);
    g_clear_error (&err);
    gst_object_unref (top);
    return FALSE;
  }
  ps->start = t;
  g_print ("RTSP seek in %s to %.3f s: proxy session %u replaces %u\n",
      old->video, t, ps->id, old->id);
  /* the old server session ends first (its control connection closes):
   * its flows' end, seen as errors, must not reach the media */
  g_atomic_int_set (&old->replaced, 1);
  g_cancellable_cancel (old->cancel);
  if (old->conn)
    g_io_stream_close (G_IO_STREAM (old->conn), NULL, NULL);
  /* what the old session left on its way to the viewer is flushed out
   * (the muxer's pads: the muxer itself and the RTP side go on) */
  old_recv = old->bin;
  al = g_object_get_data (G_OBJECT (top), "twoflow-audio-link");
  gpad = gst_element_get_static_pad (old_recv, "src");
  vsink = gst_pad_get_peer (gpad);
  gst_object_unref (gpad);
  if (al)
    asink = gst_element_get_static_pad (al->aqueue, "sink");
  gst_pad_send_event (vsink, gst_event_new_flush_start ());
  if (asink)
    gst_pad_send_event (asink, gst_event_new_flush_start ());
  gst_element_set_locked_state (old_recv, TRUE);
  gst_element_set_state (old_recv, GST_STATE_NULL);
  gst_bin_remove (GST_BIN (top), old_recv);
  old->bin = old->ess_src = old->enh_src = old->merge = NULL;
  old->jitterbuffer = NULL;
  gst_pad_send_event (vsink, gst_event_new_flush_stop (TRUE));
  if (asink)
    gst_pad_send_event (asink, gst_event_new_flush_stop (TRUE));

  recv = build_receive_bin (ps);
  gst_bin_add (GST_BIN (top), recv);
  gpad = gst_element_get_static_pad (recv, "src");
  if (gst_pad_link (gpad, vsink) != GST_PAD_LINK_OK)
    g_printerr ("RTSP seek: cannot link the new session's video\n");
  gst_object_unref (gpad);
  gst_object_unref (vsink);
  if (asink)
    gst_object_unref (asink);
  if (al)
    connect_audio_link (recv, al);
  ps->out_mux = old->out_mux;
  ps->rtsp_played = TRUE;

  /* the media's session is the new one */
  g_object_set_data (G_OBJECT (top), "twoflow-session", ps);
  g_object_set_data (G_OBJECT (media), "twoflow-session", ps);
  g_object_weak_unref (G_OBJECT (media), release_session, old);
  g_object_weak_ref (G_OBJECT (media), release_session, ps);
  /* freed in the main loop, after any event of it already read */
  release_session (old, NULL);
  admission_add (ps);
  gst_element_sync_state_with_parent (recv);
  /* PLAY now when the receivers listen, so the answer says where the
   * session starts; else as usual, once they do */
  if (ready_cb (ps) == G_SOURCE_CONTINUE)
    proxy_session_start (ps);

done:
  /* its running times run ahead of the pipeline's clock: the TCP sink
   * must not wait for them (the network paces this live media) */
  gst_rtsp_media_set_rate_control (media, FALSE);
  /* the seek is complete: what a prerolling pipeline would say */
  bus = gst_pipeline_get_bus (GST_PIPELINE (pipeline));
  gst_bus_post (bus, gst_message_new_async_done (GST_OBJECT (pipeline),
          GST_CLOCK_TIME_NONE));
  gst_object_unref (bus);
  gst_object_unref (top);
  return TRUE;
}

static GstElement *
twoflow_factory_create_pipeline (GstRTSPMediaFactory * factory,
    GstRTSPMedia * media)
{
  GstElement *pipeline = g_object_new (twoflow_pipeline_get_type (), NULL);

  g_object_set_data (G_OBJECT (pipeline), "twoflow-media", media);
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

/* After a PLAY: a later PLAY with a Range is a seek; after a seek the TCP
 * sink does not wait for the clock (twoflow_seek). */
static void
play_request (GstRTSPClient * client, GstRTSPContext * ctx, gpointer data)
{
  ProxySession *ps = ctx->media ? g_object_get_data (G_OBJECT (ctx->media),
      "twoflow-session") : NULL;

  if (ps)
    ps->rtsp_played = TRUE;
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

/* ------------------------------------------------------ fetch / prestage */

static gboolean
final_timeout_cb (gpointer data)
{
  ProxySession *ps = data;

  ps->final_timer = 0;
  g_main_loop_quit (ps->loop);
  return G_SOURCE_REMOVE;
}

static gboolean
fetch_bus_cb (GstBus * bus, GstMessage * msg, gpointer data)
{
  ProxySession *ps = data;

  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS) {
    /* the output can be complete a moment before the server says done:
     * its final stats (what it sent) are wanted for the delivery
     * accounting, for up to 3 s */
    if (!ps->server_done && ps->merge && !ps->interrupted && !ps->error) {
      if (!ps->final_timer)
        ps->final_timer = g_timeout_add (3000, final_timeout_cb, ps);
      return G_SOURCE_CONTINUE;
    }
    g_main_loop_quit (ps->loop);
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING) {
    /* e.g. a receive buffer the kernel capped */
    GError *err = NULL;
    gchar *dbg = NULL;

    gst_message_parse_warning (msg, &err, &dbg);
    g_printerr ("warning: %s: %s (%s)\n", GST_OBJECT_NAME (msg->src),
        err->message, dbg ? dbg : "");
    g_clear_error (&err);
    g_free (dbg);
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;
    gst_message_parse_error (msg, &err, NULL);
    g_free (ps->error);
    ps->error = g_strdup_printf ("%s: %s", GST_OBJECT_NAME (msg->src),
        err->message);
    g_clear_error (&err);
    g_main_loop_quit (ps->loop);
  }
  return G_SOURCE_CONTINUE;
}

static int
run_fetch (const gchar * video, const gchar * output, gboolean prestage)
{
  GError *err = NULL;
  ProxySession *ps = proxy_session_new (video, prestage, &err);
  GstElement *pipe, *recv, *sink, *mux = NULL;
  const gchar *container;
  gchar *tmp, *final;
  JsonObject *rep;
  guint watch, sig_term, sig_int;
  int rc;

  if (!ps) {
    g_printerr ("%s: %s\n", video, err->message);
    return 1;
  }
  final = prestage ? prefix_path (video) : g_strdup (output);
  if (prestage)
    g_mkdir_with_parents (opt_prefix_dir, 0755);
  tmp = g_strconcat (final, ".part", NULL);
  pipe = gst_pipeline_new ("fetch");
  recv = build_receive_bin (ps);
  sink = gst_element_factory_make ("filesink", NULL);
  g_object_set (sink, "location", tmp, NULL);
  gst_bin_add_many (GST_BIN (pipe), recv, sink, NULL);
  /* a trace's frames are sizes only: nothing a muxer could read */
  container = prestage || g_str_equal (twoflow_json_get_string (ps->info,
          "kind", "mpeg"), "trace") ? "es" : container_for (final,
      ps->video_codec);
  if (!g_str_equal (container, "es")) {
    mux = build_mux (GST_BIN (pipe), ps, recv, container, &err);
    if (!mux) {
      g_printerr ("%s: %s\n", video, err->message);
      g_clear_error (&err);
      gst_object_unref (pipe);
      proxy_session_free (ps);
      g_free (tmp);
      g_free (final);
      return 1;
    }
    gst_element_link (mux, sink);
    g_print ("fetch %s: %s video%s%s into %s\n", video, ps->video_codec,
        ps->audio_out ? " and " : "", ps->audio_out ? ps->audio_codec : "",
        container);
  } else {
    gst_element_link (recv, sink);
  }
  ps->loop = g_main_loop_new (NULL, FALSE);
  if (!prestage) {
    ps->kind = "fetch";
    /* its health is measured (not admitted: a fetch is asked for) */
    admission_add (ps);
  }
  sig_term = g_unix_signal_add (SIGTERM, fetch_signal_cb, ps);
  sig_int = g_unix_signal_add (SIGINT, fetch_signal_cb, ps);
  watch = gst_bus_add_watch (GST_ELEMENT_BUS (pipe), fetch_bus_cb, ps);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  proxy_session_start (ps);
  g_main_loop_run (ps->loop);
  rep = proxy_session_report (ps);
  gst_element_set_state (pipe, GST_STATE_NULL);
  json_object_set_string_member (rep, "output", final);
  json_object_set_string_member (rep, "container", container);
  /* a fetch that lost data never says "ok": "degraded" when the network
   * (or the transcoder, under congestion) explains every missing frame,
   * "incomplete" (exit 3) when frames the source has are missing without
   * a network cause */
  if (ps->error || ps->interrupted || !ps->merge
      || (ps->lost_frames == 0 && ps->audio_missing == 0)) {
    json_object_set_string_member (rep, "result", ps->error ? ps->error :
        ps->interrupted ? "interrupted" : "ok");
    rc = ps->error || ps->interrupted ? 1 : 0;
  } else {
    JsonObject *d = json_object_get_object_member (rep, "delivery");
    gchar *why = g_strdup_printf ("%s: %" G_GINT64_FORMAT " of %"
        G_GINT64_FORMAT " frames and %" G_GINT64_FORMAT " audio records "
        "missing, %" G_GINT64_FORMAT " without a network cause (network lost %"
        G_GINT64_FORMAT " packets, the receiver's kernel dropped %"
        G_GINT64_FORMAT ", %" G_GINT64_FORMAT " came too late, the "
        "transcoder dropped %" G_GINT64_FORMAT " frames)",
        ps->unexplained_frames > 0 ? "incomplete" : "degraded",
        ps->lost_frames, twoflow_json_get_int (d, "frames", 0),
        ps->audio_missing, ps->unexplained_frames,
        twoflow_json_get_int (d, "network_lost_packets", 0),
        twoflow_json_get_int (d, "kernel_drops", 0),
        twoflow_json_get_int (d, "late_packets", 0),
        twoflow_json_get_int (d, "transcoder_dropped", 0));

    json_object_set_string_member (rep, "result", why);
    g_printerr ("%s: %s\n", video, why);
    g_free (why);
    rc = ps->unexplained_frames > 0 ? 3 : 0;
  }
  json_object_set_boolean_member (rep, "interrupted", ps->interrupted);
  log_json (prestage ? "PRESTAGE-RESULT" : "FETCH-RESULT", rep);
  json_object_unref (rep);
  if (!ps->error || ps->interrupted) {
    /* an interrupted fetch keeps what it has (finished by its muxer) */
    if (!prestage || !ps->interrupted)
      g_rename (tmp, final);
  } else {
    g_printerr ("%s: %s\n", video, ps->error);
  }
  if (prestage && !ps->error && opt_prefix_max_bytes > 0) {
    guint64 left = 0;
    guint n = twoflow_store_evict (opt_prefix_dir, ".prefix.twf",
        opt_prefix_max_bytes, final, &left);
    g_print ("prefix store: %u evicted, %" G_GUINT64_FORMAT " of %"
        G_GINT64_FORMAT " bytes used\n", n, left, opt_prefix_max_bytes);
  }
  g_source_remove (sig_term);
  g_source_remove (sig_int);
  g_source_remove (watch);
  gst_object_unref (pipe);
  g_main_loop_unref (ps->loop);
  proxy_session_free (ps);
  g_free (tmp);
  g_free (final);
  return rc;
}

/* The end of a session's output before the end of the video (SIGTERM):
 * the muxer's inputs get EOS, so it finishes its file, playlist or stream
 * (the merge, cut in the middle of a frame, would fail); without a muxer
 * the sources end their streams. */
static gboolean
mux_pad_eos (GstElement * e, GstPad * pad, gpointer data)
{
  gst_pad_send_event (pad, gst_event_new_eos ());
  return TRUE;
}

static void
end_session_output (ProxySession * ps)
{
  if (ps->out_mux) {
    gst_element_foreach_sink_pad (ps->out_mux, mux_pad_eos, NULL);
    return;
  }
  if (ps->ess_src)
    gst_element_send_event (ps->ess_src, gst_event_new_eos ());
  if (ps->enh_src)
    gst_element_send_event (ps->enh_src, gst_event_new_eos ());
}

/* SIGTERM/SIGINT during a fetch: the muxer finishes the file (playable)
 * and the fetch ends as after the last frame; a second signal, or 5 s
 * without the end, stops at once. */
static gboolean
fetch_stop_now (gpointer data)
{
  ProxySession *ps = data;

  if (!ps->error)
    ps->error = g_strdup ("interrupted");
  g_main_loop_quit (ps->loop);
  return G_SOURCE_REMOVE;
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

static gboolean
fetch_signal_cb (gpointer data)
{
  ProxySession *ps = data;

  if (ps->interrupted)
    return fetch_stop_now (ps);
  ps->interrupted = TRUE;
  g_print ("fetch %s: signal: ending the stream\n", ps->video);
  end_session_output (ps);
  g_timeout_add_seconds (5, fetch_stop_now, ps);
  return G_SOURCE_CONTINUE;
}

#include "twoflow-proxy-web.c"

/* ------------------------------------------------------------------ main */

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

int
main (int argc, char **argv)
{
  GOptionEntry entries[] = {
    {"server", 's', 0, G_OPTION_ARG_STRING, &opt_server,
        "twoflow-server control address (default 127.0.0.1:5500)", "HOST:PORT"},
    {"fetch", 'f', 0, G_OPTION_ARG_STRING, &opt_fetch,
        "Fetch one video to --output and exit (0: every frame, or what "
          "is missing the network lost; 3: frames missing without a "
          "network cause; 1: an error)", "NAME"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &opt_output,
        "Output file of --fetch: .ts, .mkv or .mp4 (video and audio), "
          ".m2v/.h264/.es (the video elementary stream); other: by codec",
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
        "rtpjitterbuffer latency in ms (default 200)", "MS"},
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
  gint status;
  GError *err = NULL;
  gchar **hp;
  GMainLoop *loop;
  GstRTSPServer *server;
  gchar *svc;

  /* logs are read line by line by scripts */
  setvbuf (stdout, NULL, _IOLBF, 0);
  status = twoflow_config_parse_command_line (entries, "twoflow-proxy",
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
  {
    static const gchar *const needed[] = { "twoflowmerge", "erapsrc",
      "ctcpsrc", "rudpsrc", "rtpjitterbuffer", "rtpgstdepay", "queue",
      "mpegvideoparse", "h264parse", "mpegtsmux", "mp4mux", "matroskamux",
      "multifilesink", "rtpmp2tpay", "filesink", NULL
    };
    if (!twoflow_config_check_elements ("twoflow-proxy", needed))
      return 1;
  }
  if (!opt_server)
    opt_server = g_strdup ("127.0.0.1:5500");
  if (!opt_prefix_dir)
    opt_prefix_dir = g_strdup ("prefix");
  if (!opt_essential)
    opt_essential = g_strdup ("ctcp");
  {
    TwoflowEssential e;

    if (!twoflow_essential_from_string (opt_essential, &e)) {
      g_printerr ("--essential ctcp|tcp|erap\n");
      return 2;
    }
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
  info_cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      (GDestroyNotify) json_object_unref);
  admission = gst_twoflow_admission_new (opt_measured ?
      GST_TWOFLOW_ADMISSION_MEASURED : opt_wan_capacity > 0 ?
      GST_TWOFLOW_ADMISSION_CONFIGURED : GST_TWOFLOW_ADMISSION_NONE,
      (guint64) MAX (opt_wan_capacity, 0));
  if (g_strcmp0 (opt_admission_rate, "peak") != 0
      && g_strcmp0 (opt_admission_rate, "smoothed") != 0
      && opt_admission_rate != NULL) {
    g_printerr ("--admission-rate smoothed|peak\n");
    return 2;
  }
  gst_twoflow_admission_set_basis (admission,
      g_strcmp0 (opt_admission_rate, "peak") == 0 ?
      GST_TWOFLOW_ADMISSION_BASIS_PEAK : GST_TWOFLOW_ADMISSION_BASIS_SMOOTHED);

  if (!opt_insecure && !twoflow_tls_available (&err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  if (opt_prestage)
    return run_fetch (opt_prestage, NULL, TRUE);
  if (opt_fetch) {
    if (!opt_output) {
      g_printerr ("--fetch needs --output FILE\n");
      return 2;
    }
    return run_fetch (opt_fetch, opt_output, FALSE);
  }

  server = gst_rtsp_server_new ();
  svc = g_strdup_printf ("%d", opt_rtsp_port);
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
  if (!setup_rtsp_auth (server, &err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  g_signal_connect (server, "client-connected", G_CALLBACK (client_connected),
      NULL);
  if (gst_rtsp_server_attach (server, NULL) == 0) {
    g_printerr ("cannot listen for RTSP on port %d\n", opt_rtsp_port);
    return 1;
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
