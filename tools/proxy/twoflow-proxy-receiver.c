/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy — the receiving bin: the two flows' receivers and the merge
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * The receiving bin of a session: the essential flow's receiver (erapsrc
 * for ERAP; ctcpsrc for cTCP/TCP, over TLS unless --insecure;
 * tcpclientsrc behind NAT without TLS), the enhanced flow's (rudpsrc !
 * rtpjitterbuffer ! rtpgstdepay) and twoflowmerge with the prefix store;
 * their kernel buffers from the flows' rates, their byte counters.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <gst/gst.h>
#include <gst/twoflow/twoflowframe.h>
#include "twoflow-protocol.h"
#include "twoflowtls.h"
#include "twoflow-store.h"
#include "twoflow-proxy-options.h"
#include "twoflow-proxy-control.h"
#include "twoflow-proxy-session.h"
#include "twoflow-proxy-receiver.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_proxy_receiver_debug);
#define GST_CAT_DEFAULT twoflow_proxy_receiver_debug

static guint port_index = 0;

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

/* --- the essential flow's receiver: one builder per transport ---------- */

/* ERAP: erapsrc, its buffer from the flow's rates: cTCP's largest segment
 * rate, or its 1 s peak (a resent burst) when higher; data only from the
 * server: a third address cannot take the session over, keyed or not */
static void
essential_erap (GstBin * bin, ProxySession * ps, const gchar * peer_ip)
{
  ps->ess_src = make (bin, "erapsrc", "ess_src");
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
}

/* cTCP/TCP over TLS (docs/security.md): we are the TLS client and check
 * the server's certificate as for the control connection (CA and the
 * name we dialled, or the pin), then prove ourselves with a per-session
 * token sent in PLAY */
static void
essential_ctcp_tls (GstBin * bin, ProxySession * ps, const gchar * peer_ip)
{
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
}

/* plaintext (--insecure) behind NAT: the proxy connects to the port
 * PLAY's reply names; the source starts then (ready_cb) */
static void
essential_tcp_nat (GstBin * bin, ProxySession * ps, const gchar * peer_ip)
{
  ps->ess_src = make (bin, "tcpclientsrc", "ess_src");
  g_object_set (ps->ess_src, "host", server_host, NULL);
  gst_element_set_locked_state (ps->ess_src, TRUE);
}

/* plaintext (--insecure) listening: ctcpsrc without TLS, a plain TCP
 * receiver as tcpserversrc, which takes the server's connection only (a
 * stranger connecting first is closed, not served) */
static void
essential_ctcp (GstBin * bin, ProxySession * ps, const gchar * peer_ip)
{
  ps->ess_src = make (bin, "ctcpsrc", "ess_src");
  g_object_set (ps->ess_src, "host", "0.0.0.0", "port", 0,
      "accept-host", peer_ip, NULL);
}

typedef void (*EssentialBuilder) (GstBin * bin, ProxySession * ps,
    const gchar * peer_ip);

/* The builder of this proxy's essential receiver: by --essential,
 * --insecure and --nat */
static EssentialBuilder
essential_builder (void)
{
  if (g_str_equal (opt_essential, "erap"))
    return essential_erap;
  if (!opt_insecure)
    return essential_ctcp_tls;
  if (opt_nat)
    return essential_tcp_nat;
  return essential_ctcp;
}

/* --arrivals: every essential record's arrival to the file */
static void
arrivals_start (ProxySession * ps)
{
  GstPad *sp;

  ps->arrivals = fopen (opt_arrivals, "w");
  if (!ps->arrivals) {
    g_printerr ("cannot write %s\n", opt_arrivals);
    return;
  }
  sp = gst_element_get_static_pad (ps->ess_src, "src");
  fprintf (ps->arrivals, "# arrival_us frame segment type dts_ns bytes\n");
  ps->arrivals_parser = gst_twoflow_parser_new ();
  gst_pad_add_probe (sp, GST_PAD_PROBE_TYPE_BUFFER, arrivals_probe, ps,
      NULL);
  gst_object_unref (sp);
}

/* --- the enhanced flow's receiver: rUDP ---------------------------------- */

/* rudpsrc ! rtpjitterbuffer ! rtpgstdepay; returns the depayloader */
static GstElement *
enhanced_rudp (GstBin * bin, ProxySession * ps, const gchar * peer_ip)
{
  GstElement *jb, *depay;
  GstCaps *caps;
  JsonArray *lv = json_object_get_array_member (ps->info, "levels");
  GString *levels = g_string_new ("<");
  guint i;

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
        i ? "," : "", json_array_get_int_element (lv, i) * 8);     /* bit/s */
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
   * the smoothed flow's timestamps run ahead of its arrivals). 16 tries
   * (rudpsrc sends one NACK per packet and SRTT at most): 8 requests
   * 40 ms apart ended before a resend lost beside a bulk TCP's queue
   * (RTT ~230 ms) could be asked for again; without a limit the
   * jitterbuffer once flooded the server with NACKs (docs/rudp.md,
   * "Retransmission") */
  g_object_set (jb, "do-retransmission", TRUE, "rtx-next-seqnum", FALSE,
      "rtx-max-retries", 16, NULL);
  /* RTSP and HLS: the first packets go on once a few came in order, not
   * a latency later (the merge's first frame came 0.7 s after the flow's
   * first packet at the defaults; docs/system.md, "Start-up"): their
   * players buffer on their own. A fetch keeps the whole playout buffer
   * from the start: whatever plays its output as it comes (a pipe) has
   * no other, and without it the frames after a capacity drop arrived
   * up to 0.6 s behind a player started at the first frame (the
   * showdown's MPEG-2 step: 592-695 of 750 frames, 2-6 s of stall).
   * Also RTSP when the audio starts up to TWOFLOW_AUDIO_LEAD_EARLY_MAX
   * before the picture: the server sends the picture that lead early
   * then, and the RTSP sinks let it go at once (sinks_without_latency);
   * a longer lead keeps the old wait there */
  if (g_strcmp0 (ps->kind, "hls") == 0 || (g_strcmp0 (ps->kind, "rtsp") == 0
          && twoflow_json_get_double (ps->info, "audio_lead",
              0) <= TWOFLOW_AUDIO_LEAD_EARLY_MAX))
    g_object_set (jb, "faststart-min-packets", 4, NULL);
  ps->jitterbuffer = jb;
  depay = make (bin, "rtpgstdepay", NULL);
  gst_element_link_many (ps->enh_src, jb, depay, NULL);
  return depay;
}

/* --- the merge ----------------------------------------------------------- */

/* essential ! queue and the enhanced flow into twoflowmerge, with the
 * video's prefix when the session starts at its beginning; returns the
 * merge */
static GstElement *
merge_flows (GstBin * bin, ProxySession * ps, const gchar * peer_ip)
{
  GstElement *q, *depay;
  gchar *prefix = prefix_path (ps->video);

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
    twoflow_store_touch (prefix);       /* its last use, for the LRU */
  }
  g_free (prefix);
  depay = enhanced_rudp (bin, ps, peer_ip);
  gst_element_link_many (ps->ess_src, q, NULL);
  gst_element_link_pads (q, "src", ps->merge, "essential");
  gst_element_link_pads (depay, "src", ps->merge, "enhanced");
  return ps->merge;
}

/* The receiving bin: its "src" ghost pad gives the merged elementary
 * stream (or, pre-staging, the essential flow's bytes), its sometimes pad
 * "audio" the audio track. */
GstElement *
build_receive_bin (ProxySession * ps)
{
  GstBin *bin = GST_BIN (gst_bin_new (NULL));
  GstElement *out;
  GstPad *pad;
  gboolean erap = g_str_equal (opt_essential, "erap");
  gchar *peer_ip = control_peer_ip (ps->conn);

  if (!opt_insecure) {
    /* ERAP: a 32-byte master key; rUDP: SRTP AES-256-ICM key and salt */
    ps->erap_key = twoflow_random_hex (32);
    ps->srtp_key = twoflow_random_hex (46);
  }
  essential_builder () (bin, ps, peer_ip);
  /* fixed port ranges let a network emulator tell the flows apart */
  if (opt_essential_ports > 0 && !(opt_nat && !erap))
    g_object_set (ps->ess_src, "port", opt_essential_ports + port_index % 100,
        NULL);
  add_count_probe (ps->ess_src, &ps->ess_bytes);
  if (opt_arrivals && !ps->prestage)
    arrivals_start (ps);
  out = ps->prestage ? ps->ess_src : merge_flows (bin, ps, peer_ip);
  GST_DEBUG ("session %u: %s receiver%s", ps->id, opt_essential,
      ps->prestage ? " (essential flow only)" : "s and the merge");
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
void
twoflow_proxy_receiver_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_proxy_receiver_debug,
      "twoflow-proxy-receiver", 0, "twoflow-proxy: the receiving bin");
}
