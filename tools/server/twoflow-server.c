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
 * MKV/WebM, MPEG-TS/PS, elementary streams) with MPEG-1/2 or H.264 video
 * and any audio (the audio travels in the essential flow), and frame traces (*.txt, replayed
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
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <gst/gst.h>
#include <gst/tag/tag.h>
#include <gst/twoflow/twoflowframe.h>
#include <gst/twoflow/twoflowprofile.h>
#include <gst/twoflow/twoflowsmoothing.h>
#include <gst/twoflow/twoflowstartup.h>
#include <gst/twoflow/networkcongestion.h>
#include <gst/ratecontrol/sessionrate.h>
#include "twoflow-protocol.h"
#include "twoflow-auth.h"
#include "twoflow-tls.h"
#include <sys/random.h>
#include "twoflow-config.h"
#include "twoflow-daemon.h"
#include "twoflow-log.h"
#include "twoflow-server-options.h"
#include "twoflow-server-source.h"
#include "twoflow-server-catalog.h"
#include "twoflow-server-schedule.h"

GST_DEBUG_CATEGORY_STATIC (server_debug);
#define GST_CAT_DEFAULT server_debug

/* the session rate controller's transports */
#define RC_SRC_ESSENTIAL 0
#define RC_SRC_ENHANCED 1


typedef struct _Client Client;

typedef struct
{
  guint id;
  Client *client;
  VideoInfo *info;
  gchar *host;
  gchar *essential;             /* "ctcp" | "erap" | "tcp" */
  gchar *rate_control;          /* rudpsink: "fixed" | "receiver" */
  gboolean smooth;              /* enhanced flow paced by window rates */
  gboolean total;               /* ...which keep the session's total constant
                                 * (--enhanced-rate total): read ahead, the
                                 * rate switched by the clock */
  guint rate_timer;             /* total: the next window's rate */
  Schedule *sched;
  gdouble enh_start;            /* s after the essential flow's start */
  gdouble smoothing_lead;       /* s the enhanced flow is sent ahead */
  guint64 enh_rate_now;         /* bit/s in force (streaming thread) */
  guint64 enh_rate_changes;
  gchar *erap_key, *srtp_key;   /* from PLAY (hex), NULL: plaintext */
  gchar *ess_token;             /* from PLAY: the proxy's proof on the
                                 * TLS essential connection (cTCP/TCP) */
  gint ess_port, enh_port;
  gdouble segment_duration, start, lead;
  GstClockTime start_pts;       /* the key frame a start begins at (0: none) */
  GstClockTime start_rt;        /* its running time in the file */
  guint64 start_frames, start_audio;    /* frames, audio records from it */
  gint skip_segments, end_segment;
  gboolean flows_essential, flows_enhanced;
  gboolean nat;                 /* behind NAT: the proxy connects (cTCP/TCP)
                                 * or says hello first (ERAP, rUDP) */
  guint64 hello_id;             /* NAT: names the session in the hellos */
  gint64 hello_wait_until;      /* NAT: start the enhanced flow by then */
  GstElement *ess_pipe, *enh_pipe;
  GstElement *ess_sink, *enh_sink, *transcoder;
  guint ess_watch, enh_watch;
  gboolean ess_done, enh_done;
  guint lead_timer, progress_timer;
  guint64 forwarded_events, unforwarded_events;
  GList *pending_events;        /* GstStructure: congestion during the lead */
  /* the session rate controller (NULL: --rate-controller events) */
  GstTwoflowSessionRate *rc;
  guint rc_timer;
  guint64 rc_max;               /* its max-bitrate */
  guint64 rc_target;            /* the target last applied, bit/s */
  guint64 rc_changes, rc_events;
  gboolean rc_pace;             /* it sets the rUDP sender's rate too */
  gboolean rc_have_rr;
  guint32 rc_rr_base_seq;
  gint32 rc_rr_base_lost;
  guint64 rc_rtx_base;
  guint64 rc_enh_expected, rc_enh_lost, rc_enh_delivered;
  guint64 rc_enh_rr_lost;
  guint64 sched_rate;           /* the pacing its schedule asks for */
  guint64 startup_rate;         /* bit/s: the essential ramp (0: none) */
  guint64 rc_cap;               /* the controller's cap on it (0: none) */
  gboolean enh_playing;         /* the enhanced pipeline reached PLAYING */
  gint64 started_us;
  /* essential "tcp": segment s is released at release_base + s·T */
  GstClock *clock;
  GstClockTime release_base;
  GstClockID release_id;
  gboolean release_stop;
  GMutex release_lock;
  guint64 released_segments;
} Session;

struct _Client
{
  guint id;
  GSocketConnection *conn;
  GIOStream *stream;            /* conn, or the TLS connection over it */
  GInputStream *in;
  GOutputStream *out;
  GCancellable *cancel;
  GList *sessions;
  gchar *peer;
  /* security (docs/security.md): who it is, bounded input */
  gboolean authenticated;
  gchar *identity;              /* token or certificate name; else the peer */
  guint auth_timer;
  TwoflowLineBuffer lines;
  gchar rbuf[4096];
  gboolean closing;
  guint close_idle;
  gboolean handshaken;          /* TLS handshake done (or plaintext) */
  gsize line_len;               /* bytes of the request being handled */
  guint probes;                 /* address-validation probes sent */
  /* replies wait here and are written asynchronously: a client that stops
   * reading fills only its own queue (then it is dropped), never blocks
   * the loop that serves everyone */
  GQueue outq;                  /* GBytes, lines */
  gsize out_offset;             /* bytes of the head already written */
  gsize out_queued;             /* bytes in outq not yet written */
  gboolean writing;
  guint close_timer;            /* closing: the queue's last chance */
  GList *link;                  /* in all_clients, oldest first */
  GSource *first_bytes;         /* TLS: waits for the peer's first bytes */
};

static guint n_clients, n_rejecting;
static GQueue all_clients;              /* Client, oldest first */
static guint64 shed_total, accept_failures;
static guint64 refused_total;

static GHashTable *sessions;            /* id -> Session */
static guint next_client_id = 1;
static guint64 sessions_total = 0;

/* Session ids are random, so one client cannot guess another's. */
static guint
session_id_new (void)
{
  guint id;

  do
    id = g_random_int_range (1, G_MAXINT32);
  while (g_hash_table_contains (sessions, GUINT_TO_POINTER (id)));
  return id;
}

static void session_destroy (Session * s, const gchar * why);

static void
log_json (const gchar * tag, JsonObject * obj)
{
  gchar *text = twoflow_json_to_line (obj);
  g_print ("%s %s\n", tag, text);
  g_free (text);
}

/* ---------------------------------------------------------- media input */


/* ---------------------------------------------------------------- videos */

/* -------------------------------------------------------------- sessions */

static void client_close (Client * c, const gchar * why);
static void client_flush (Client * c);

/* Queues one line for @c (written in order, asynchronously). Over
 * --max-output bytes waiting, the client is not reading: it is closed. */
static void
client_send (Client * c, JsonObject * obj)
{
  gchar *text, *line;
  gsize len;

  if (c == NULL || c->out == NULL)
    return;
  text = twoflow_json_to_line (obj);
  line = g_strconcat (text, "\n", NULL);
  g_free (text);
  len = strlen (line);
  if (c->out_queued + len > (gsize) opt_max_output) {
    g_free (line);
    if (!c->closing) {
      gchar *why = g_strdup_printf ("not reading its replies (%"
          G_GSIZE_FORMAT " bytes waiting, --max-output)", c->out_queued);
      client_close (c, why);
      g_free (why);
    }
    return;
  }
  g_queue_push_tail (&c->outq, g_bytes_new_take (line, len));
  c->out_queued += len;
  client_flush (c);
}

static GstStructure *
get_stats (GstElement * e)
{
  GstStructure *s = NULL;
  if (e && g_object_class_find_property (G_OBJECT_GET_CLASS (e), "stats"))
    g_object_get (e, "stats", &s, NULL);
  return s;
}

static JsonObject *
session_stats (Session * s)
{
  JsonObject *o = json_object_new ();
  GstStructure *st;

  json_object_set_int_member (o, "session", s->id);
  json_object_set_string_member (o, "video", s->info->name);
  json_object_set_string_member (o, "essential", s->essential);
  json_object_set_double_member (o, "elapsed",
      (g_get_monotonic_time () - s->started_us) / 1e6);
  json_object_set_int_member (o, "forwarded_events", s->forwarded_events);
  json_object_set_int_member (o, "unforwarded_events", s->unforwarded_events);
  if (g_str_equal (s->essential, "tcp"))
    json_object_set_int_member (o, "release_waits", s->released_segments);
  json_object_set_boolean_member (o, "essential_done", s->ess_done);
  json_object_set_boolean_member (o, "enhanced_done", s->enh_done);
  if ((st = get_stats (s->ess_sink))) {
    twoflow_json_add_structure (o, "essential_stats", st);
    gst_structure_free (st);
  }
  if ((st = get_stats (s->transcoder))) {
    twoflow_json_add_structure (o, "transcoder_stats", st);
    gst_structure_free (st);
  }
  /* the rUDP sender: its rate in force (the window's under smoothing) and
   * what it sent, for the proxy's measured admission */
  if ((st = get_stats (s->enh_sink))) {
    twoflow_json_add_structure (o, "enhanced_stats", st);
    gst_structure_free (st);
  }
  if (s->rc) {
    GstTwoflowSessionRateStats rs;
    JsonObject *r = json_object_new ();

    gst_twoflow_session_rate_get_stats (s->rc, &rs);
    json_object_set_int_member (r, "target", rs.target);
    json_object_set_int_member (r, "min-target", rs.min_target);
    json_object_set_int_member (r, "max-target", rs.max_target);
    json_object_set_int_member (r, "max-bitrate", s->rc_max);
    json_object_set_int_member (r, "delay-rate", rs.delay_rate);
    json_object_set_int_member (r, "tcp-rate", rs.tcp_rate);
    json_object_set_int_member (r, "delivered-rate", rs.delivered_rate);
    json_object_set_double_member (r, "loss-event-rate", rs.loss_event_rate);
    json_object_set_double_member (r, "loss-fraction", rs.loss_fraction);
    json_object_set_int_member (r, "srtt", rs.srtt);
    json_object_set_int_member (r, "min-rtt", rs.min_rtt);
    json_object_set_int_member (r, "qdelay", rs.qdelay);
    json_object_set_string_member (r, "state",
        gst_twoflow_session_rate_state_name (rs.state));
    json_object_set_int_member (r, "packets", rs.packets);
    json_object_set_int_member (r, "lost", rs.lost);
    json_object_set_int_member (r, "loss-events", rs.loss_events);
    json_object_set_int_member (r, "decreases", rs.decreases);
    json_object_set_int_member (r, "decreases-qdelay", rs.decreases_qdelay);
    json_object_set_int_member (r, "decreases-ecn", rs.decreases_ecn);
    json_object_set_int_member (r, "decreases-loss", rs.decreases_loss);
    json_object_set_int_member (r, "updates", rs.updates);
    json_object_set_int_member (r, "target-changes", s->rc_changes);
    json_object_set_int_member (r, "transport-events", s->rc_events);
    json_object_set_object_member (o, "rate_controller", r);
  }
  json_object_set_string_member (o, "rate_adaptation", s->rc ? "session" :
      "events");
  json_object_set_boolean_member (o, "smoothing", s->smooth);
  json_object_set_int_member (o, "enhanced_rate_changes",
      s->enh_rate_changes);
  return o;
}

static gboolean ess_bus_cb (GstBus * bus, GstMessage * msg, gpointer user_data);

/* What a session owns besides its pipelines and sources */
static void
session_free (Session * s)
{
  g_free (s->host);
  g_free (s->erap_key);
  g_free (s->srtp_key);
  g_free (s->ess_token);
  g_free (s->essential);
  g_free (s->rate_control);
  gst_object_unref (s->clock);
  g_mutex_clear (&s->release_lock);
  g_list_free_full (s->pending_events, (GDestroyNotify) gst_structure_free);
  g_clear_pointer (&s->rc, gst_twoflow_session_rate_free);
  g_free (s);
}

static void
session_maybe_finish (Session * s)
{
  if (s->ess_done && s->enh_done) {
    JsonObject *ev;

    /* ctcpsink may see the kernel's last recovery after its EOS (the
     * final ACK ends it): stop the sink (READY keeps the bus), then hand
     * over what it posted, so the report counts what was forwarded */
    if (s->ess_pipe) {
      GstBus *bus = gst_element_get_bus (s->ess_pipe);
      GstMessage *msg;

      gst_element_set_state (s->ess_pipe, GST_STATE_READY);
      while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
        ess_bus_cb (bus, msg, s);
        gst_message_unref (msg);
      }
      gst_object_unref (bus);
    }
    ev = session_stats (s);
    json_object_set_string_member (ev, "event", "done");
    client_send (s->client, ev);
    json_object_unref (ev);
    session_destroy (s, "done");
  }
}

static void
session_fail (Session * s, const gchar * what, const gchar * message)
{
  JsonObject *ev = json_object_new ();
  json_object_set_string_member (ev, "event", "error");
  json_object_set_int_member (ev, "session", s->id);
  json_object_set_string_member (ev, "flow", what);
  json_object_set_string_member (ev, "message", message);
  client_send (s->client, ev);
  json_object_unref (ev);
  session_destroy (s, "error");
}

static void
forward_event (Session * s, GstStructure * st)
{
  GstPad *pad = gst_element_get_static_pad (s->transcoder, "src");

  if (gst_pad_send_event (pad, gst_event_new_custom (GST_EVENT_CUSTOM_UPSTREAM,
              st)))
    s->forwarded_events++;
  else
    s->unforwarded_events++;
  gst_object_unref (pad);
}

/* ------------------------------------------------- session rate control */

static void enh_set_rate (Session * s, guint64 sched_rate);

/* The smoothed rUDP sender's cap while the path is congested: what the
 * path delivers to the session less what the essential flow gets — times
 * decrease while the queue grows (so that it drains), as it is while the
 * queue drains (hold) —, never below the target's enhanced share (what
 * the transcoder now makes for the flow). Uncapped, the sender drains the
 * backlog of frames coded before the reaction at its schedule's rate into
 * a bottleneck that carries less (measured in the showdown's capacity
 * step: the enhanced flow offered 2.6 Mbit/s into 1.5 for 2.6 s and half
 * of its packets were dropped at the queue; with a cap at 1.1 x the
 * delivered rate the queue still overflowed for 1.8 s); capped, the
 * backlog waits in the sender, within the proxy's playout buffer, and the
 * target (below the delivered rate) lets it drain. 0: no cap. */
static guint64
rc_enhanced_cap (Session * s, const GstTwoflowSessionRateStats * rs)
{
  gdouble path, ess, cap, share;

  if (rs->delivered_rate == 0)
    return 0;
  if (rs->state == GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED)
    path = opt_rc_decrease * rs->delivered_rate;
  else if (rs->state == GST_TWOFLOW_SESSION_RATE_STATE_HOLD)
    path = rs->delivered_rate;
  else
    return 0;
  ess = rs->source_delivered[RC_SRC_ESSENTIAL];
  share = s->info->mean_rate ?
      (gdouble) s->info->enh_mean / s->info->mean_rate : 1.0;
  cap = MAX (path - ess, share * rs->target);
  return (guint64) MAX (cap, ENHANCED_MTU * 8 * 10.0);
}

/* The rUDP sender's rate when the controller paces it (the proxy asked
 * for receiver rate control): the enhanced share of the target, the
 * lowest level above it with a quarter of headroom. */
static guint64
rc_enhanced_rate (Session * s, guint64 target)
{
  gdouble share = s->info->mean_rate ?
      (gdouble) s->info->enh_mean / s->info->mean_rate : 1.0;
  guint64 want = target * share * 1.25;
  guint i;

  for (i = 0; i < GST_TWOFLOW_PROFILE_N_LEVELS; i++)
    if (s->info->levels[i] >= want)
      return s->info->levels[i];
  return s->info->levels[GST_TWOFLOW_PROFILE_N_LEVELS - 1];
}

static void
rc_apply (Session * s, guint64 target)
{
  GstTwoflowSessionRateStats rs;

  s->rc_target = target;
  s->rc_changes++;
  /* at or above the controller's ceiling: the input's rate (passthrough
   * without the first GOP's decoding delay) */
  if (s->transcoder)
    g_object_set (s->transcoder, "target-bitrate",
        target >= s->rc_max ? (guint64) 0 : target, NULL);
  gst_twoflow_session_rate_get_stats (s->rc, &rs);
  if (s->rc_pace && s->enh_sink) {
    guint64 r = rc_enhanced_rate (s, target);
    if (r != s->enh_rate_now) {
      g_object_set (s->enh_sink, "rate", r, NULL);
      s->enh_rate_now = r;
      s->enh_rate_changes++;
    }
  }
  /* (the smoothed sender's rate stays its schedule's: it sends what the
   * transcoder gives it, which follows the target; a cap at the target
   * less the essential flow's rate starved the flow below the kept
   * frames' floor, measured: 267 of 750 frames in the capacity step) */
  g_print ("session %u: rate-control t=%.2f target=%" G_GUINT64_FORMAT
      " delay-rate=%" G_GUINT64_FORMAT " tcp-rate=%" G_GUINT64_FORMAT
      " delivered=%" G_GUINT64_FORMAT " qdelay=%.1fms p=%.4f loss=%.4f %s"
      " enh-rate=%" G_GUINT64_FORMAT "\n",
      s->id, (g_get_monotonic_time () - s->started_us) / 1e6, target,
      rs.delay_rate, rs.tcp_rate, rs.delivered_rate, rs.qdelay / 1e6,
      rs.loss_event_rate, rs.loss_fraction,
      gst_twoflow_session_rate_state_name (rs.state), s->enh_rate_now);
}

/* Every --rc-interval: the transports' counters in, the target out. */
static gboolean
rc_tick (gpointer user_data)
{
  Session *s = user_data;
  GstClockTime now = g_get_monotonic_time () * GST_USECOND;
  GstStructure *st;
  guint64 target;

  /* cTCP: the socket's segments, retransmissions, acked bytes, SRTT */
  if (s->ess_sink && !s->ess_done && g_str_equal (s->essential, "ctcp")
      && (st = get_stats (s->ess_sink))) {
    guint64 sent = 0, acked = 0, retr = 0, srtt = 0;
    guint mss = 0;

    gst_structure_get_uint64 (st, "bytes-sent", &sent);
    gst_structure_get_uint64 (st, "bytes-acked", &acked);
    gst_structure_get_uint64 (st, "retransmissions", &retr);
    gst_structure_get_uint64 (st, "srtt", &srtt);
    gst_structure_get_uint (st, "mss", &mss);
    if (mss == 0)
      mss = 1448;
    if (sent > 0) {
      gst_twoflow_session_rate_handle_counters (s->rc, RC_SRC_ESSENTIAL,
          sent / mss + retr, retr, acked, now);
      if (srtt > 0)
        gst_twoflow_session_rate_handle_rtt (s->rc, RC_SRC_ESSENTIAL, srtt,
            now);
    }
    gst_structure_free (st);
  }
  /* rUDP: the receiver's last report (expected, lost) and its SRTT */
  if (s->enh_sink && s->enh_playing && !s->enh_done
      && (st = get_stats (s->enh_sink))) {
    guint64 reports = 0, bytes = 0, pkts = 0, srtt = 0, nacked = 0;
    guint seq = 0;
    gint lost = 0;

    gst_structure_get_uint64 (st, "receiver-reports", &reports);
    gst_structure_get_uint64 (st, "bytes-sent", &bytes);
    gst_structure_get_uint64 (st, "packets-sent", &pkts);
    gst_structure_get_uint64 (st, "srtt", &srtt);
    gst_structure_get_uint (st, "receiver-highest-seq", &seq);
    gst_structure_get_int (st, "receiver-lost", &lost);
    /* with retransmission the report's losses are those left after it:
     * the packets the receiver NACKed are the losses it saw */
    gst_structure_get_uint64 (st, "rtx-requested", &nacked);
    if (reports > 0) {
      if (!s->rc_have_rr) {
        s->rc_have_rr = TRUE;
        s->rc_rr_base_seq = seq;
        s->rc_rr_base_lost = lost;
        s->rc_rtx_base = nacked;
      } else if (seq >= s->rc_rr_base_seq) {
        guint64 expected = seq - s->rc_rr_base_seq;
        /* lost may fall (late packets); what was fed stays */
        guint64 rr = lost > s->rc_rr_base_lost ? lost - s->rc_rr_base_lost : 0;
        gdouble mean = pkts ? (gdouble) bytes / pkts : ENHANCED_MTU;
        /* lost: what the receiver saw missing (NACKed), even if resent;
         * delivered: expected less what stayed lost */
        guint64 l = MAX (rr, nacked - s->rc_rtx_base);

        l = MAX (l, s->rc_enh_lost);
        rr = MAX (rr, s->rc_enh_rr_lost);
        if (expected >= s->rc_enh_expected) {
          guint64 dexp = expected - s->rc_enh_expected;
          guint64 dl = rr - s->rc_enh_rr_lost;
          s->rc_enh_delivered += (guint64) ((dexp > dl ? dexp - dl : 0) * mean);
          s->rc_enh_expected = expected;
          s->rc_enh_lost = l;
          s->rc_enh_rr_lost = rr;
          gst_twoflow_session_rate_handle_counters (s->rc, RC_SRC_ENHANCED,
              s->rc_enh_expected, s->rc_enh_lost, s->rc_enh_delivered, now);
        }
      }
      /* (its SRTT is not an input: the request waits in the socket until
       * the pacer reads it, up to a packet interval, and the answer's
       * delay does not count that wait: measured 40-90 ms too high at
       * low rates, read as a queue) */
    }
    gst_structure_free (st);
  }
  if (gst_twoflow_session_rate_poll (s->rc, now, &target))
    rc_apply (s, target);
  if (s->smooth && s->enh_sink && opt_rc_pace_cap) {
    GstTwoflowSessionRateStats rs;
    guint64 cap;

    gst_twoflow_session_rate_get_stats (s->rc, &rs);
    cap = rc_enhanced_cap (s, &rs);
    if (cap != s->rc_cap) {
      s->rc_cap = cap;
      enh_set_rate (s, s->sched_rate);
    }
  }
  return G_SOURCE_CONTINUE;
}

/* --rate-controller session: the controller of a session with a
 * transcoder, started with the session (it learns the path during the
 * lead) */
static void
rc_start (Session * s)
{
  GstTwoflowSessionRateConfig c;

  if (!s->transcoder || !g_str_equal (opt_rate_controller, "session"))
    return;
  gst_twoflow_session_rate_config_init (&c);
  s->rc_max = (guint64) (opt_rc_headroom * MAX (s->info->peak_rate,
          s->info->mean_rate));
  c.max_bitrate = s->rc_max;
  c.min_bitrate = opt_rc_min_bitrate;
  c.update_interval = opt_rc_interval * GST_MSECOND;
  c.qdelay_threshold = opt_rc_qdelay * GST_MSECOND;
  c.decrease = opt_rc_decrease;
  c.increase = opt_rc_increase;
  c.loss_threshold = opt_rc_loss_threshold;
  c.tcp_floor = opt_rc_tcp_floor != 0;
  s->rc = gst_twoflow_session_rate_new (&c);
  s->rc_target = s->rc_max;
  s->rc_timer = g_timeout_add (opt_rc_interval, rc_tick, s);
}

static gboolean
ess_bus_cb (GstBus * bus, GstMessage * msg, gpointer user_data)
{
  Session *s = user_data;

  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_ELEMENT:{
      GstNetworkCongestionType type;
      guint64 rate;
      GstClockTime srtt;
      const gchar *source;

      if (!gst_network_congestion_message_parse (msg, &type, &rate, &srtt,
              &source))
        break;
      /* session rate control: the event is an input of the controller
       * (cTCP's losses and RTT come from its counters; ERAP reports
       * losses only as events) */
      if (s->rc && type != GST_NETWORK_CONGESTION_RATE) {
        GstClockTime now = g_get_monotonic_time () * GST_USECOND;

        s->rc_events++;
        if (type == GST_NETWORK_CONGESTION_LOSS)
          gst_twoflow_session_rate_handle_loss_event (s->rc, RC_SRC_ESSENTIAL,
              srtt, now);
        else if (GST_CLOCK_TIME_IS_VALID (srtt) && srtt > 0)
          gst_twoflow_session_rate_handle_rtt (s->rc, RC_SRC_ESSENTIAL, srtt,
              now);
      } else if (s->transcoder && type != GST_NETWORK_CONGESTION_RATE) {
        /* --rate-controller events: cross-path forwarding, the essential
         * transport's congestion lowers the rate of the real-time flow's
         * transcoder */
        const GstStructure *ms = gst_message_get_structure (msg);
        /* during the lead, and until the enhanced pipeline plays (a
         * smoothed flow starts with the essential one), the transcoder's
         * pads are not active yet: keep the events and hand them over when
         * the enhanced pipeline plays */
        if (s->lead_timer || !s->enh_playing)
          s->pending_events = g_list_append (s->pending_events,
              gst_structure_copy (ms));
        else
          forward_event (s, gst_structure_copy (ms));
      }
      GST_INFO ("session %u: %s from %s (%" G_GUINT64_FORMAT " bit/s)",
          s->id, gst_network_congestion_type_to_string (type),
          source ? source : "?", rate);
      break;
    }
    case GST_MESSAGE_EOS:
      s->ess_done = TRUE;
      g_print ("session %u: essential flow sent (%.1f s)\n", s->id,
          (g_get_monotonic_time () - s->started_us) / 1e6);
      session_maybe_finish (s);
      return G_SOURCE_CONTINUE;
    case GST_MESSAGE_ERROR:{
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error (msg, &err, &dbg);
      g_print ("session %u: essential flow error from %s: %s (%s)\n", s->id,
          GST_OBJECT_NAME (msg->src), err->message, dbg ? dbg : "");
      session_fail (s, "essential", err->message);
      g_clear_error (&err);
      g_free (dbg);
      return G_SOURCE_CONTINUE;
    }
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
enh_bus_cb (GstBus * bus, GstMessage * msg, gpointer user_data)
{
  Session *s = user_data;

  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_STATE_CHANGED:{
      GstState state;
      GList *l;

      if (GST_MESSAGE_SRC (msg) != GST_OBJECT (s->enh_pipe))
        break;
      gst_message_parse_state_changed (msg, NULL, &state, NULL);
      if (state != GST_STATE_PLAYING || s->enh_playing)
        break;
      s->enh_playing = TRUE;
      for (l = s->pending_events; l; l = l->next)
        forward_event (s, l->data);
      g_list_free (s->pending_events);
      s->pending_events = NULL;
      break;
    }
    case GST_MESSAGE_EOS:
      s->enh_done = TRUE;
      g_print ("session %u: enhanced flow sent (%.1f s)\n", s->id,
          (g_get_monotonic_time () - s->started_us) / 1e6);
      session_maybe_finish (s);
      break;
    case GST_MESSAGE_ERROR:{
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error (msg, &err, &dbg);
      g_print ("session %u: enhanced flow error from %s: %s (%s)\n", s->id,
          GST_OBJECT_NAME (msg->src), err->message, dbg ? dbg : "");
      session_fail (s, "enhanced", err->message);
      g_clear_error (&err);
      g_free (dbg);
      break;
    }
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

/* Essential records of skipped segments (pre-staged at the proxy) or past
 * the end segment (pre-staging) are dropped; caps records always pass and
 * the end record only passes when the whole stream is sent. */
static GstPadProbeReturn
ess_filter_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Session *s = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstTwoflowFrameHeader hdr;
  GstMapInfo map;
  GstPadProbeReturn ret = GST_PAD_PROBE_OK;
  gboolean caps = FALSE, end = FALSE;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return ret;
  if (gst_twoflow_frame_header_parse (map.data, map.size, &hdr) ==
      GST_TWOFLOW_PARSE_OK) {
    caps = hdr.kind == GST_TWOFLOW_RECORD_CAPS;
    end = hdr.kind == GST_TWOFLOW_RECORD_END;
    if (hdr.kind == GST_TWOFLOW_RECORD_FRAME) {
      if ((gint) hdr.segment_no < s->skip_segments)
        ret = GST_PAD_PROBE_DROP;
      if (s->end_segment > 0 && (gint) hdr.segment_no >= s->end_segment)
        ret = GST_PAD_PROBE_DROP;
    } else if (hdr.kind == GST_TWOFLOW_RECORD_END && s->end_segment > 0) {
      ret = GST_PAD_PROBE_DROP;
    }
  }
  gst_buffer_unmap (buf, &map);
  /* The caps record comes first, stamped with the stream's first time.
   * With segments skipped, ctcpsink would count from that time and make
   * the caps record a segment of its own, sent at that tiny segment's
   * target rate ahead of the real first segment (which came 35 s late in
   * a 20 s replay): let it count from the first frame sent instead. */
  /* The end record, stamped with the stream's end, made a segment of its
   * own (68 bytes: cTCP's target a few bytes/s), and the retransmissions
   * of the last real segment's tail, still outstanding when the sender
   * moved on to it, went out at that rate: a loss there held the session
   * for minutes. Without a timestamp it joins the last segment. */
  if (ret == GST_PAD_PROBE_OK && ((s->skip_segments > 0 && caps) || end)) {
    buf = gst_buffer_make_writable (buf);
    GST_BUFFER_DTS (buf) = GST_BUFFER_PTS (buf) = GST_CLOCK_TIME_NONE;
    GST_PAD_PROBE_INFO_DATA (info) = buf;
  }
  return ret;
}

/* Plain TCP (essential "tcp") has no pacing of its own: the server hands
 * it each segment one segment duration before the segment plays (segment
 * k of those sent at k·T after the start), and TCP sends it as fast as its
 * congestion control allows — the baseline of the two-flow paper. */
static GstPadProbeReturn
release_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Session *s = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstTwoflowFrameHeader hdr;
  GstMapInfo map;
  GstClockTime at = GST_CLOCK_TIME_NONE;
  GstClockID id;
  gboolean stop;
  gint rel;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  if (gst_twoflow_frame_header_parse (map.data, map.size, &hdr) ==
      GST_TWOFLOW_PARSE_OK && hdr.kind == GST_TWOFLOW_RECORD_FRAME) {
    rel = MAX ((gint) hdr.segment_no - s->skip_segments, 0);
    at = s->release_base + rel * (GstClockTime) (s->segment_duration *
        GST_SECOND);
  }
  gst_buffer_unmap (buf, &map);
  if (!GST_CLOCK_TIME_IS_VALID (at) || gst_clock_get_time (s->clock) >= at)
    return GST_PAD_PROBE_OK;

  g_mutex_lock (&s->release_lock);
  stop = s->release_stop;
  id = stop ? NULL : gst_clock_new_single_shot_id (s->clock, at);
  s->release_id = id;
  g_mutex_unlock (&s->release_lock);
  if (id) {
    gst_clock_id_wait (id, NULL);
    g_mutex_lock (&s->release_lock);
    s->release_id = NULL;
    stop = s->release_stop;
    s->released_segments++;
    g_mutex_unlock (&s->release_lock);
    gst_clock_id_unref (id);
  }
  return stop ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

static GstElement *
make_source (Session * s, GstElement * pipe, GstElement * next,
    GstElement * split, const gchar * flow)
{
  GstElement *src;

  if (s->info->is_trace) {
    src = gst_element_factory_make ("twoflowtracesrc", NULL);
    gst_util_set_object_arg (G_OBJECT (src), "flow", flow);
    gst_util_set_object_arg (G_OBJECT (src), "policy",
        s->info->policy ? "ip" : "i");
    g_object_set (src, "location", s->info->path, "segment-duration",
        (guint64) (s->segment_duration * GST_SECOND), NULL);
    gst_bin_add (GST_BIN (pipe), src);
    return src;
  }
  /* the audio enters the split in both pipelines, so both count segments
   * from the same first timestamp; only the essential flow carries it */
  return make_media_source (pipe, s->info->path, s->info->video_track,
      s->info->audio_track, s->start_pts, s->start_rt, NULL, next, split);
}

static GstElement *
make (GstElement * pipe, const gchar * factory, const gchar * name)
{
  GstElement *e = gst_element_factory_make (factory, name);
  if (e == NULL) {
    g_printerr ("missing element %s\n", factory);
    return NULL;
  }
  gst_bin_add (GST_BIN (pipe), e);
  return e;
}

static gboolean
build_essential (Session * s, GError ** error)
{
  GstElement *pipe = gst_pipeline_new ("essential");
  GstElement *split = NULL, *q, *sink, *fq, *fsink;
  GstPad *pad;
  guint64 segdur = s->segment_duration * GST_SECOND;

  q = make (pipe, "queue", NULL);
  g_object_set (q, "max-size-buffers", 0, "max-size-time", (guint64) 0,
      "max-size-bytes", 64 * 1024 * 1024, NULL);
  if (g_str_equal (s->essential, "erap")) {
    sink = make (pipe, "erapsink", "tx");
    /* NAT: send to where the proxy's hellos come from (the control peer's
     * address only), from the shared socket they reach (PLAY's reply) */
    if (sink && s->nat)
      g_object_set (sink, "host", s->host, "learn-peer", TRUE, "hello-id",
          s->hello_id, NULL);
    else if (sink)
      g_object_set (sink, "host", s->host, "port", s->ess_port, NULL);
    if (sink && s->erap_key)
      g_object_set (sink, "key", s->erap_key, NULL);
    /* a proxy that never acknowledges ends this session (an error), as
     * for the cTCP connect below */
    if (sink)
      g_object_set (sink, "connect-timeout",
          (guint64) (opt_connect_timeout * GST_SECOND), NULL);
    /* the file is read far ahead of the flow: at EOS the sink's queue may
     * hold seconds of a congested path's data, which is still on time
     * until its playout; the sink keeps sending until the video has
     * played out (its duration after the lead, and 10 s), not for its
     * default 10 s, after which unacknowledged data is an error */
    if (sink && s->info->duration > 0)
      g_object_set (sink, "linger", (guint64) (s->info->duration
              + (s->lead + 10) * GST_SECOND), NULL);
  } else {
    sink = make (pipe, "ctcpsink", "tx");
    if (sink) {
      g_object_set (sink, "host", s->host, "segment-duration", segdur, NULL);
      /* NAT: listen on a free port (in the PLAY reply) and accept the
       * proxy's connection, only from the control peer's address */
      if (s->nat)
        g_object_set (sink, "listen", TRUE, "bind-port", 0, NULL);
      else
        g_object_set (sink, "port", s->ess_port, NULL);
      if (g_str_equal (s->essential, "tcp"))
        gst_util_set_object_arg (G_OBJECT (sink), "mode", "tcp");
      /* the start-up ramp: segment 0 plays after the lead, and the flow
       * catches up to a segment ahead at the ramp's rate */
      if (s->startup_rate > 0)
        g_object_set (sink, "lead", (guint64) (s->lead * GST_SECOND),
            "startup-rate", s->startup_rate, "startup-factor",
            opt_startup_factor, NULL);
      /* the sink connects in its own thread, bounded: a proxy address
       * that drops the SYN ends this session, nothing else waits */
      g_object_set (sink, "connect-timeout",
          (guint64) (opt_connect_timeout * GST_SECOND), NULL);
      /* over a TLS control channel the essential connection is TLS too:
       * the sink is the TLS server with the control channel's
       * certificate (the proxy checks it as it checked the control
       * connection), and the proxy proves itself with the token it sent
       * in PLAY (docs/security.md, "cTCP over TLS") */
      if (s->ess_token) {
        gst_util_set_object_arg (G_OBJECT (sink), "tls-role", "server");
        g_object_set (sink, "tls-certificate", opt_tls_cert, "tls-key",
            opt_tls_key, "tls-token", s->ess_token, NULL);
      }
    }
  }
  if (!sink || !q)
    goto missing;

  if (s->info->is_trace) {
    make_source (s, pipe, NULL, NULL, "essential");
    gst_element_link (GST_ELEMENT (GST_BIN_CHILDREN (pipe)->data), q);
    pad = gst_element_get_static_pad (q, "sink");
  } else {
    split = make (pipe, "twoflowsplit", "split");
    fq = make (pipe, "queue", NULL);
    fsink = make (pipe, "fakesink", NULL);
    if (!split || !fq || !fsink)
      goto missing;
    gst_util_set_object_arg (G_OBJECT (split), "policy",
        s->info->policy ? "ip" : "i");
    g_object_set (split, "segment-duration", segdur, NULL);
    g_object_set (fsink, "sync", FALSE, "async", FALSE, NULL);
    make_source (s, pipe, split, split, "essential");
    gst_element_link_pads (split, "essential", q, "sink");
    gst_element_link_pads (split, "enhanced", fq, "sink");
    gst_element_link (fq, fsink);
    pad = gst_element_get_static_pad (split, "essential");
  }
  gst_element_link (q, sink);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, ess_filter_probe, s,
      NULL);
  gst_object_unref (pad);
  if (g_str_equal (s->essential, "tcp")) {
    pad = gst_element_get_static_pad (sink, "sink");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, release_probe, s,
        NULL);
    gst_object_unref (pad);
  }
  s->ess_pipe = pipe;
  s->ess_sink = sink;
  return TRUE;

missing:
  gst_object_unref (pipe);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
      "missing elements for the essential flow");
  return FALSE;
}

/* The rUDP sender's rate: its schedule's (window, total, peak). */
static void
enh_set_rate (Session * s, guint64 sched_rate)
{
  /* (rc_cap is written by the main loop: a stale read is one window's
   * rate change late, the next tick sets it again) */
  guint64 cap = s->rc_cap;
  guint64 rate = cap ? MIN (sched_rate, cap) : sched_rate;

  s->sched_rate = sched_rate;
  if (rate > 0 && rate != s->enh_rate_now && s->enh_sink) {
    g_object_set (s->enh_sink, "rate", rate, NULL);
    s->enh_rate_now = rate;
    s->enh_rate_changes++;
  }
}

/* Smoothing: each record entering the payloader (released by the live
 * source or, for files, by rudpsink's sync one record earlier) sets the
 * sender's rate to the rate of the window its decode time falls in. */
static GstPadProbeReturn
smooth_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Session *s = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstTwoflowFrameHeader hdr;
  GstMapInfo map;
  guint64 rate = 0;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  if (gst_twoflow_frame_header_parse (map.data, map.size, &hdr) ==
      GST_TWOFLOW_PARSE_OK && hdr.kind == GST_TWOFLOW_RECORD_FRAME)
    rate = gst_twoflow_smoothing_rate_at (s->sched->sm,
        GST_CLOCK_TIME_IS_VALID (hdr.dts) ? hdr.dts : hdr.pts);
  gst_buffer_unmap (buf, &map);
  if (rate > 0 && rate != s->sched_rate)
    enh_set_rate (s, rate);
  return GST_PAD_PROBE_OK;
}

/* A lost enhanced packet can be asked for as long as the proxy's playout
 * buffer holds its frame: rudpsink keeps the flow that long, + 1 s (at
 * most its 60 s) */
static guint64
enh_rtx_time (Session * s)
{
  return (guint64) (MIN (schedule_playout (s->sched) + 1, 60) * GST_SECOND);
}

static gboolean
build_enhanced (Session * s, GError ** error)
{
  GstElement *pipe = gst_pipeline_new ("enhanced");
  GstElement *pay, *sink, *q;
  guint64 segdur = s->segment_duration * GST_SECOND;
  gchar *levels = levels_string (s->info);
  guint64 top;

  pay = make (pipe, "rtpgstpay", NULL);
  sink = make (pipe, "rudpsink", "rtx");
  q = make (pipe, "queue", NULL);
  if (!pay || !sink || !q)
    goto missing;
  /* caps again every second: if the first packets are lost (a TCP burst
   * at the start of the flow), rtpgstdepay can still start */
  g_object_set (pay, "mtu", 1400, "config-interval", 1, NULL);
  /* NAT: from a port of its own (PLAY's reply) to where the proxy's
   * hellos come from, the control peer's address only */
  if (s->nat)
    g_object_set (sink, "host", s->host, "learn-peer", TRUE, "hello-id",
        s->hello_id, NULL);
  else
    g_object_set (sink, "host", s->host, "port", s->enh_port, NULL);
  if (s->srtp_key)
    g_object_set (sink, "key", s->srtp_key, NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "levels", levels);
  /* fixed: paced at the level above the flow's peak; receiver: the
   * proxy's rudpsrc picks the level (and the sink's rate events reach the
   * transcoder) */
  /* under the session rate controller the server sets the rate (the
   * level rc_enhanced_rate() picks) instead of the receiver */
  s->rc_pace = g_str_equal (s->rate_control, "receiver")
      && g_str_equal (opt_rate_controller, "session") && !s->info->is_trace
      && s->info->codec && (g_str_has_prefix (s->info->codec, "mpeg")
      || g_str_equal (s->info->codec, "h264"));
  gst_util_set_object_arg (G_OBJECT (sink), "rate-control",
      s->rc_pace ? "fixed" : s->rate_control);
  top = s->info->enh_peak / 8 * 5 / 4 * 8;     /* bit/s */
  if (s->total) {
    /* the window's rate (total_rate_cb switches it by the clock); the
     * source reads ahead as fast as the sender takes it (backpressure) */
    s->enh_rate_now = gst_twoflow_smoothing_rate_at_time (s->sched->sm, 0,
        NULL);
    s->sched_rate = s->enh_rate_now;
    g_object_set (sink, "rate", s->enh_rate_now, "buffer-size",
        (guint64) 256 * 1024, "rtx-time", enh_rtx_time (s), NULL);
  } else if (s->smooth) {
    /* the window's rate: the sender queues what a burst brings (its
     * buffer holds the schedule's largest backlog, twice over) */
    GstPad *pp = gst_element_get_static_pad (pay, "sink");

    s->enh_rate_now = gst_twoflow_smoothing_rate_at (s->sched->sm, 0);
    s->sched_rate = s->enh_rate_now;
    g_object_set (sink, "rate", s->enh_rate_now, "buffer-size",
        MAX ((guint64) 256 * 1024, 2 * s->sched->info.max_backlog_bytes),
        NULL);
    /* (a congested path's overflow losses only a later resend repairs) */
    g_object_set (sink, "rtx-time", enh_rtx_time (s), NULL);
    gst_pad_add_probe (pp, GST_PAD_PROBE_TYPE_BUFFER, smooth_probe, s, NULL);
    gst_object_unref (pp);
  } else {
    g_object_set (sink, "rate", top, NULL);
    s->enh_rate_now = s->sched_rate = top;
  }

  if (s->info->is_trace) {
    GstElement *src = make_source (s, pipe, NULL, NULL, "enhanced");
    /* the enhanced flow plays in real time: each frame at its decode
     * time; total: read ahead, paced by the sender alone */
    g_object_set (src, "is-live", !s->total, NULL);
    g_object_set (sink, "sync", FALSE, NULL);
    gst_element_link_many (src, q, pay, sink, NULL);
  } else {
    GstElement *tc, *split, *fq, *fsink;
    /* MPEG-1/2 and H.264: ratetranscoder keep=i|ip keeps the essential
     * frames byte-identical to those sent ahead */
    gboolean transcode = s->info->codec
        && (g_str_has_prefix (s->info->codec, "mpeg")
        || g_str_equal (s->info->codec, "h264"));

    if (transcode) {
      tc = make (pipe, "ratetranscoder", "transcoder");
      if (tc) {
        gst_util_set_object_arg (G_OBJECT (tc), "keep",
            s->info->policy ? "ip" : "i");
        if (g_str_equal (opt_rate_controller, "session")) {
          /* the session rate controller sets its target (rc_apply): no
           * per-event law, no additive recovery of its own */
          g_object_set (tc, "events", 0, "recovery", (guint64) 0, NULL);
        } else if (g_str_equal (s->rate_control, "fixed")) {
          gst_util_set_object_arg (G_OBJECT (tc), "events",
              "rexmt+dupack+recovered+loss");
        }
      }
    } else {
      tc = make (pipe, "identity", NULL);
    }
    split = make (pipe, "twoflowsplit", "split");
    fq = make (pipe, "queue", NULL);
    fsink = make (pipe, "fakesink", NULL);
    if (!tc || !split || !fq || !fsink)
      goto missing;
    if (transcode) {
      s->transcoder = tc;
      /* under the session rate controller the frames between the
       * transcoder and the (syncing) sender are coded under an old target
       * when the path changes: hold a quarter second of them, not the
       * queue's default second (capacity drop: the enhanced flow went on
       * at its old rate for ~2 s) */
      if (g_str_equal (opt_rate_controller, "session") && !s->total)
        g_object_set (q, "max-size-time", (guint64) 250 * GST_MSECOND,
            "max-size-buffers", 0, "max-size-bytes", 0, NULL);
    }
    gst_util_set_object_arg (G_OBJECT (split), "policy",
        s->info->policy ? "ip" : "i");
    g_object_set (split, "segment-duration", segdur, NULL);
    g_object_set (fsink, "sync", FALSE, "async", FALSE, NULL);
    g_object_set (sink, "sync", !s->total, NULL);
    make_source (s, pipe, tc, split, "enhanced");
    gst_element_link (tc, split);
    gst_element_link_pads (split, "enhanced", q, "sink");
    gst_element_link_many (q, pay, sink, NULL);
    gst_element_link_pads (split, "essential", fq, "sink");
    gst_element_link (fq, fsink);
  }
  g_free (levels);
  s->enh_pipe = pipe;
  s->enh_sink = sink;
  return TRUE;

missing:
  g_free (levels);
  gst_object_unref (pipe);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
      "missing elements for the enhanced flow");
  return FALSE;
}

/* NAT: whether the enhanced sink has its destination (a hello came) */
static gboolean
enhanced_peer_known (Session * s)
{
  GstStructure *st = NULL;
  const gchar *peer;
  gboolean known;

  g_object_get (s->enh_sink, "stats", &st, NULL);
  peer = st ? gst_structure_get_string (st, "peer") : NULL;
  known = peer && *peer;
  if (st)
    gst_structure_free (st);
  return known;
}

static gboolean
start_enhanced_cb (gpointer user_data)
{
  Session *s = user_data;

  /* NAT: the real-time flow waits (up to 5 s) for the proxy's hello, so
   * its first frames are not sent to nowhere */
  if (s->nat && g_get_monotonic_time () < s->hello_wait_until &&
      !enhanced_peer_known (s)) {
    s->lead_timer = g_timeout_add (20, start_enhanced_cb, s);
    return G_SOURCE_REMOVE;
  }
  s->lead_timer = 0;
  /* the events kept meanwhile go when it plays (enh_bus_cb) */
  gst_element_set_state (s->enh_pipe, GST_STATE_PLAYING);
  return G_SOURCE_REMOVE;
}

/* total: the enhanced sender reads ahead, so its rate follows the
 * schedule's windows by the clock, from the session's start (when the
 * essential flow starts: window k is the interval in which the essential
 * flow sends its segment skip + k) */
static gboolean
total_rate_cb (gpointer user_data)
{
  Session *s = user_data;
  GstClockTime t = (g_get_monotonic_time () - s->started_us) * GST_USECOND;
  GstClockTime next;
  guint64 rate = gst_twoflow_smoothing_rate_at_time (s->sched->sm, t, &next);

  s->rate_timer = 0;
  if (rate > 0 && rate != s->sched_rate)
    enh_set_rate (s, rate);
  if (GST_CLOCK_TIME_IS_VALID (next))
    s->rate_timer = g_timeout_add (MAX ((next - t) / GST_MSECOND, 1),
        total_rate_cb, s);
  return G_SOURCE_REMOVE;
}

/* Once a second: what has been sent, so a proxy can compare it with what
 * it receives (measured-mode admission). */
static gboolean
progress_cb (gpointer user_data)
{
  Session *s = user_data;
  JsonObject *ev = session_stats (s);
  json_object_set_string_member (ev, "event", "progress");
  client_send (s->client, ev);
  json_object_unref (ev);
  return G_SOURCE_CONTINUE;
}

static void
session_destroy (Session * s, const gchar * why)
{
  JsonObject *st;

  if (!g_hash_table_contains (sessions, GUINT_TO_POINTER (s->id)))
    return;
  st = session_stats (s);
  json_object_set_string_member (st, "end", why);
  log_json ("SESSION-END", st);
  json_object_unref (st);

  g_hash_table_remove (sessions, GUINT_TO_POINTER (s->id));
  if (s->client)
    s->client->sessions = g_list_remove (s->client->sessions, s);
  if (s->lead_timer)
    g_source_remove (s->lead_timer);
  if (s->rate_timer)
    g_source_remove (s->rate_timer);
  if (s->rc_timer)
    g_source_remove (s->rc_timer);
  s->rc_timer = 0;
  if (s->progress_timer)
    g_source_remove (s->progress_timer);
  if (s->ess_watch)
    g_source_remove (s->ess_watch);
  if (s->enh_watch)
    g_source_remove (s->enh_watch);
  g_mutex_lock (&s->release_lock);
  s->release_stop = TRUE;
  if (s->release_id)
    gst_clock_id_unschedule (s->release_id);
  g_mutex_unlock (&s->release_lock);
  if (s->ess_pipe) {
    gst_element_set_state (s->ess_pipe, GST_STATE_NULL);
    gst_object_unref (s->ess_pipe);
  }
  if (s->enh_pipe) {
    gst_element_set_state (s->enh_pipe, GST_STATE_NULL);
    gst_object_unref (s->enh_pipe);
  }
  g_print ("session %u: closed (%s); %u session(s) active\n", s->id, why,
      g_hash_table_size (sessions));
  session_free (s);
}

/* Address validation (docs/security.md, "No reflection"): media may go to
 * another address than the control peer's only if that address proves it
 * asked. The server sends a token to it over the media path (one UDP
 * datagram to the PLAY's enhanced port, or essential port without an
 * enhanced flow), no larger than the PLAY that asked for it; the target
 * hands the token to the requester, whose PLAY then carries it as
 * host_token. Tokens are stateless (as QUIC's Retry tokens): an HMAC under
 * a per-process secret over identity, address, port and expiry. */
#define VALIDATION_LIFETIME 60  /* s */
#define VALIDATION_MAX_PROBES 16        /* per control connection */
#define VALIDATION_PROBE_PREFIX "TWOFLOW-VALIDATE "
static guint8 validation_secret[32];

static gchar *
validation_token (const gchar * identity, const gchar * host, gint port,
    gint64 expiry)
{
  gchar *msg = g_strdup_printf ("%s\n%s\n%d\n%" G_GINT64_FORMAT, identity,
      host, port, expiry);
  gchar *mac = g_compute_hmac_for_string (G_CHECKSUM_SHA256,
      validation_secret, sizeof (validation_secret), msg, -1);
  gchar *tok = g_strdup_printf ("%" G_GINT64_FORMAT ".%.40s", expiry, mac);

  g_free (msg);
  g_free (mac);
  return tok;
}

static gboolean
validation_check (const gchar * identity, const gchar * host, gint port,
    const gchar * token)
{
  gint64 now = g_get_real_time () / G_USEC_PER_SEC, expiry;
  gchar *end = NULL, *want;
  guint8 d = 0;
  gsize i, n;

  if (!token)
    return FALSE;
  expiry = g_ascii_strtoll (token, &end, 10);
  if (end == token || *end != '.' || expiry < now
      || expiry > now + VALIDATION_LIFETIME)
    return FALSE;
  want = validation_token (identity, host, port, expiry);
  n = strlen (want);
  if (strlen (token) != n) {
    g_free (want);
    return FALSE;
  }
  for (i = 0; i < n; i++)
    d |= (guint8) token[i] ^ (guint8) want[i];
  g_free (want);
  return d == 0;
}

/* The one datagram a third address gets without proof. */
static void
validation_probe (Client * c, const gchar * host, gint port,
    const gchar * token)
{
  gchar *payload = g_strdup_printf (VALIDATION_PROBE_PREFIX "%s\n", token);
  GInetAddress *ia = g_inet_address_new_from_string (host);
  GSocketAddress *sa;
  GSocket *sock;

  sa = g_inet_socket_address_new (ia, port);
  sock = g_socket_new (g_inet_address_get_family (ia), G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  if (sock && g_socket_send_to (sock, sa, payload, strlen (payload), NULL,
          NULL) > 0) {
    c->probes++;
    g_print ("client %u: address-validation probe (%" G_GSIZE_FORMAT
        " bytes, request %" G_GSIZE_FORMAT ") to %s:%d\n", c->id,
        strlen (payload), c->line_len, host, port);
  }
  g_clear_object (&sock);
  g_object_unref (sa);
  g_object_unref (ia);
  g_free (payload);
}

/* PLAY host differs from the control peer: allowed with a valid
 * host_token, else (at most) one probe and a refusal. */
static gboolean
host_allowed (Client * c, const TwoflowPlayRequest * req, const gchar * host,
    GError ** error)
{
  gint port = req->enhanced_port;
  GInetAddress *ia = g_inet_address_new_from_string (host);
  gchar *tok;
  gsize probe_len;
  const gchar *why;

  if (req->flows == TWOFLOW_FLOWS_ESSENTIAL || port <= 0)
    port = req->essential_port;
  if (!ia || port <= 0 || port > 65535) {
    g_clear_object (&ia);
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
        "PLAY host %s refused: media go only to the control peer %s "
        "(no reflection), or to an address (literal IP) that proves it "
        "asked, on the media port it names", host, c->peer);
    return FALSE;
  }
  g_object_unref (ia);
  if (validation_check (c->identity, host, port, req->host_token)) {
    g_print ("client %u (%s): PLAY to %s:%d, validated by its token\n",
        c->id, c->identity, host, port);
    return TRUE;
  }
  tok = validation_token (c->identity, host, port,
      g_get_real_time () / G_USEC_PER_SEC + VALIDATION_LIFETIME);
  probe_len = strlen (VALIDATION_PROBE_PREFIX) + strlen (tok) + 1;
  /* no amplification: the probe is no larger than the request */
  if (c->probes >= VALIDATION_MAX_PROBES)
    why = "no validation token sent (too many probes on this connection)";
  else if (probe_len > c->line_len)
    why = "no validation token sent (the request is shorter than the probe)";
  else {
    validation_probe (c, host, port, tok);
    why = "a validation token was sent there over UDP: PLAY again with it "
        "as host_token";
  }
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
      "PLAY host %s refused: media go only to the control peer %s (no "
      "reflection) unless %s:%d proves it asked; %s%s", host, c->peer, host,
      port, req->host_token ? "host_token invalid or expired; " : "", why);
  g_free (tok);
  return FALSE;
}

/* No reflection: media go only to the authenticated control peer (or an
 * address that proved it asked: host_allowed); and the session limits
 * (total, per client identity). */
static gboolean
session_allowed (Client * c, const TwoflowPlayRequest * req, GError ** error)
{
  const gchar *host = req->host;
  GHashTableIter it;
  gpointer v;
  guint mine = 0;

  if (host && !twoflow_same_address (host, c->peer)
      && !host_allowed (c, req, host, error))
    return FALSE;
  if (g_hash_table_size (sessions) >= (guint) opt_max_sessions) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_BUSY,
        "server full: %u sessions (--max-sessions)",
        g_hash_table_size (sessions));
    return FALSE;
  }
  g_hash_table_iter_init (&it, sessions);
  while (g_hash_table_iter_next (&it, NULL, &v))
    if (g_str_equal (((Session *) v)->client->identity, c->identity))
      mine++;
  if (mine >= (guint) opt_max_client_sessions) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_BUSY,
        "too many sessions for %s: %u (--max-client-sessions)", c->identity,
        mine);
    return FALSE;
  }
  return TRUE;
}

static Session *
session_new (Client * c, const TwoflowPlayRequest * req, GError ** error)
{
  const gchar *ess = twoflow_essential_to_string (req->essential);
  VideoInfo *info;
  Session *s;
  gdouble default_lead;
  const GstTwoflowStartupPlan *plan = NULL;

  if (!session_allowed (c, req, error))
    return NULL;
  info = video_scan (req->v.video, req->v.policy_ip, req->v.video_track,
      req->v.audio_track, error);
  if (!info)
    return NULL;

  s = g_new0 (Session, 1);
  s->id = session_id_new ();
  g_mutex_init (&s->release_lock);
  s->clock = gst_system_clock_obtain ();
  s->client = c;
  s->info = info;
  s->essential = g_strdup (ess);
  s->rate_control = g_strdup (req->rate_control_receiver ? "receiver" :
      "fixed");
  s->erap_key = g_strdup (req->erap_key);
  s->srtp_key = g_strdup (req->srtp_key);
  if (tls_cert && !g_str_equal (ess, "erap"))
    s->ess_token = g_strdup (req->essential_token);
  s->host = g_strdup (req->host);
  if (s->host == NULL)          /* default: where the control connection comes from */
    s->host = g_strdup (c->peer);
  s->ess_port = req->essential_port;
  s->enh_port = req->enhanced_port;
  s->segment_duration = req->v.segment_duration;
  s->start = req->start;
  s->skip_segments = req->skip_segments;
  s->end_segment = req->end_segment;
  s->flows_essential = req->flows != TWOFLOW_FLOWS_ENHANCED;
  s->flows_enhanced = req->flows != TWOFLOW_FLOWS_ESSENTIAL;
  s->nat = req->nat;
  /* JSON-safe (below 2^53), unguessable enough for a lab's plaintext, and
   * authenticated when keyed */
  s->hello_id = ((guint64) g_random_int () << 20) | (s->id & 0xfffff);
  /* without a pre-stored prefix the enhanced flow starts one segment
   * later, so every essential segment lands before its frames play; or,
   * the start-up ramp (the default, cTCP), after the ramp's lead: the
   * essential flow catches up to a segment ahead meanwhile */
  default_lead = s->skip_segments > 0 ? 0 : s->segment_duration;
  if (s->skip_segments <= 0 && !req->has_lead
      && g_str_equal (ess, "ctcp") && s->flows_essential
      && s->flows_enhanced && s->start <= 0)
    plan = video_startup (info, s->segment_duration);
  if (plan) {
    default_lead = plan->lead / 1e9;
    s->startup_rate = plan->rate;
  }
  s->lead = isnan (req->lead) ? default_lead : req->lead;
  if (tls_cert && s->flows_essential && !g_str_equal (ess, "erap")
      && (!s->ess_token || strlen (s->ess_token) < 16)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
        "essential_token (16 characters or more) required: over TLS the "
        "essential %s flow is TLS too, and the token proves the proxy", ess);
    session_free (s);
    return NULL;
  }
  /* smoothing: the enhanced flow is paced per window and sent
   * smoothing_lead ahead of its playback: it starts that much before the
   * lead when it can, and playback moves to the smoothing lead when the
   * lead is shorter (a prefix) */
  if (pacing_total ()) {
    /* total: the enhanced flow starts with the essential one, its
     * frames due at the playback lead (at least the smoothing lead) */
    s->lead = MAX (s->lead, smoothing_lead_for (s->segment_duration));
    s->sched = video_schedule_for (info, s->segment_duration, s->lead,
        s->skip_segments, s->essential, -1);
  } else if (plan) {
    /* the enhanced flow sent the ramp's lead ahead of its playback */
    s->sched = video_schedule (info, s->segment_duration);
  } else {
    s->sched = video_schedule_for (info, s->segment_duration, 0, 0,
        "ctcp", -1);
  }
  s->smooth = !g_str_equal (opt_enhanced_rate, "peak")
      && g_str_equal (s->rate_control, "fixed")
      && s->sched->info.n_windows > 0;
  s->total = s->smooth && pacing_total ();
  s->smoothing_lead = s->smooth ? s->sched->info.lead / 1e9 : 0;
  s->enh_start = MAX (s->lead - s->smoothing_lead, 0);
  s->lead = MAX (s->lead, s->smoothing_lead);
  if (s->segment_duration <= 0 || (s->flows_essential && s->ess_port <= 0 && !s->nat)
      || (s->flows_enhanced && s->enh_port <= 0 && !s->nat) || s->start < 0
      || (s->start > 0 && info->is_trace)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "bad PLAY parameters (ports, segment_duration, start)");
    session_free (s);
    return NULL;
  }
  if (s->start > 0)
    s->start_pts = video_start_pts (info, &s->start, &s->start_frames,
        &s->start_audio, &s->start_rt);
  g_hash_table_insert (sessions, GUINT_TO_POINTER (s->id), s);
  s->started_us = g_get_monotonic_time ();
  s->release_base = gst_clock_get_time (s->clock);
  if (!s->flows_essential)
    s->ess_done = TRUE;
  if (!s->flows_enhanced)
    s->enh_done = TRUE;

  if ((s->flows_essential && !build_essential (s, error))
      || (s->flows_enhanced && !build_enhanced (s, error))) {
    session_destroy (s, "setup failed");
    return NULL;
  }
  rc_start (s);
  if (s->ess_pipe)
    s->ess_watch = gst_bus_add_watch (GST_ELEMENT_BUS (s->ess_pipe),
        ess_bus_cb, s);
  if (s->enh_pipe)
    s->enh_watch = gst_bus_add_watch (GST_ELEMENT_BUS (s->enh_pipe),
        enh_bus_cb, s);
  c->sessions = g_list_prepend (c->sessions, s);
  sessions_total++;

  if (s->ess_pipe
      && gst_element_set_state (s->ess_pipe, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED,
        "cannot start the essential flow to %s:%d", s->host, s->ess_port);
    session_destroy (s, "start failed");
    return NULL;
  }
  if (s->ess_pipe && s->nat) {
    guint bound = 0;

    /* the sink listens (cTCP/TCP) or waits for hellos (ERAP) from
     * READY->PAUSED on */
    g_object_get (s->ess_sink, "bound-port", &bound, NULL);
    s->ess_port = bound;
  }
  if (s->enh_pipe && s->nat) {
    guint bound = 0;

    /* NAT: the sink's socket is bound, and reads hellos, from READY on */
    if (gst_element_set_state (s->enh_pipe, GST_STATE_READY) ==
        GST_STATE_CHANGE_FAILURE) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
          "cannot start the enhanced flow");
      session_destroy (s, "start failed");
      return NULL;
    }
    g_object_get (s->enh_sink, "bound-port", &bound, NULL);
    s->enh_port = bound;
    s->hello_wait_until = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
  }
  if (s->enh_pipe) {
    if (s->enh_start > 0 && s->ess_pipe)
      s->lead_timer = g_timeout_add ((guint) (s->enh_start * 1000),
          start_enhanced_cb, s);
    else if (s->nat)
      start_enhanced_cb (s);
    else
      gst_element_set_state (s->enh_pipe, GST_STATE_PLAYING);
  }
  if (s->total && s->enh_pipe)
    total_rate_cb (s);
  s->progress_timer = g_timeout_add (1000, progress_cb, s);
  g_print ("session %u: PLAY %s to %s (essential %s:%d %s, enhanced :%d) "
      "segment %.1f s, lead %.2f s (enhanced from %.1f s, %s), skip %d, "
      "start-up ramp %" G_GUINT64_FORMAT " bit/s, peak %" G_GUINT64_FORMAT
      " bit/s; %u session(s) active\n", s->id, info->name,
      c->peer, s->host, s->ess_port, s->essential, s->enh_port,
      s->segment_duration, s->lead, s->enh_start, s->total ?
      "constant session total" : s->smooth ? "smoothed" : "peak rate",
      s->skip_segments, s->startup_rate, info->peak_rate,
      g_hash_table_size (sessions));
  return s;
}

/* --------------------------------------------------------------- clients */

static gboolean client_send_and_close_cb (gpointer data);

static void
client_authenticated (Client * c, const gchar * name)
{
  c->authenticated = TRUE;
  g_free (c->identity);
  c->identity = g_strdup (name);
  if (c->auth_timer) {
    g_source_remove (c->auth_timer);
    c->auth_timer = 0;
  }
  g_print ("client %u (%s): authenticated as %s\n", c->id, c->peer, name);
}

/* One line to a client, then the connection closes (its sessions end). */
static void
client_refuse (Client * c, const gchar * reason)
{
  JsonObject *r = json_object_new ();

  json_object_set_boolean_member (r, "ok", FALSE);
  json_object_set_string_member (r, "error", reason);
  /* a client that sent nothing may not have completed its TLS handshake:
   * a (blocking) write would wait for it; it is closed without the line */
  if (c->handshaken)
    client_send (c, r);
  json_object_unref (r);
  refused_total++;
  g_print ("client %u (%s): refused: %s\n", c->id, c->peer, reason);
  client_close (c, NULL);
}

static void
client_free (Client * c, const gchar * why)
{
  /* strangers' connections (floods) are counted, not logged one by one */
  if (c->authenticated)
    g_print ("client %u (%s): %s; tearing down %u session(s)\n", c->id,
        c->peer, why, g_list_length (c->sessions));
  else
    GST_INFO ("client %u (%s): %s", c->id, c->peer, why);
  while (c->sessions)
    session_destroy (c->sessions->data, "client gone");
  if (c->auth_timer)
    g_source_remove (c->auth_timer);
  if (c->close_idle)
    g_source_remove (c->close_idle);
  if (c->close_timer)
    g_source_remove (c->close_timer);
  if (c->first_bytes) {
    g_source_destroy (c->first_bytes);
    g_source_unref (c->first_bytes);
  }
  /* every pending read and write sees the cancellation and leaves c alone */
  g_cancellable_cancel (c->cancel);
  g_object_unref (c->cancel);
  c->in = NULL;
  c->out = NULL;
  /* the socket only: a synchronous close of a TLS connection whose
   * handshake is still pending in the (cancelled) read would wait for it
   * in this very loop; the peer sees the end without close_notify */
  g_io_stream_close (G_IO_STREAM (c->conn), NULL, NULL);
  if (c->stream != G_IO_STREAM (c->conn))
    g_object_unref (c->stream);
  g_object_unref (c->conn);
  twoflow_line_buffer_clear (&c->lines);
  g_queue_clear_full (&c->outq, (GDestroyNotify) g_bytes_unref);
  g_queue_delete_link (&all_clients, c->link);
  n_clients--;
  g_free (c->identity);
  g_free (c->peer);
  g_free (c);
}

/* The session named in @req if @c's identity owns it: every command on a
 * session (STATS, TEARDOWN) asks the same question. */
static Session *
session_lookup_owned (Client * c, guint id, GError ** error)
{
  Session *s = g_hash_table_lookup (sessions, GUINT_TO_POINTER (id));

  if (s == NULL || !g_str_equal (s->client->identity, c->identity)) {
    /* the same answer for "none" and "not yours": no probing */
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no session %u",
        id);
    return NULL;
  }
  return s;
}

static void
handle_auth (Client * c, const TwoflowRequest * req)
{
  const gchar *name = c->authenticated ? c->identity :
      twoflow_tokens_check (tokens, req->token);
  JsonObject *r;

  if (name == NULL) {
    client_refuse (c, tokens ? "unauthenticated: unknown token" :
        "unauthenticated: this server takes client certificates only");
    return;
  }
  if (!c->authenticated)
    client_authenticated (c, name);
  r = twoflow_reply_new (req, TRUE);
  json_object_set_string_member (r, "identity", c->identity);
  client_send (c, r);
  json_object_unref (r);
}

static JsonObject *
handle_play (Client * c, const TwoflowRequest * req, GError ** err)
{
  Session *s = session_new (c, &req->play, err);
  JsonObject *r;

  if (!s)
    return NULL;
  r = twoflow_reply_new (req, TRUE);
  json_object_set_int_member (r, "session", s->id);
  video_info_to_json (s->info, r);
  video_info_rates_to_json (s->info, r, s->segment_duration, s->sched);
  json_object_set_double_member (r, "lead", s->lead);
  /* where it starts: the key frame at or before the asked start */
  json_object_set_double_member (r, "start", s->start);
  if (s->start_pts) {
    /* what the session sends of the video from there */
    json_object_set_int_member (r, "start_frames", s->start_frames);
    json_object_set_int_member (r, "start_audio_records", s->start_audio);
  }
  json_object_set_double_member (r, "enhanced_start", s->enh_start);
  /* the essential flow's start-up ramp, bit/s (0: none) */
  json_object_set_int_member (r, "startup_rate", s->startup_rate);
  json_object_set_boolean_member (r, "smoothing", s->smooth);
  /* the proxy's playout buffer for the enhanced flow, s */
  json_object_set_double_member (r, "playout_depth", s->smooth ?
      schedule_playout (s->sched) : 0);
  /* NAT: the proxy connects to this port (cTCP/TCP) or says hello
   * to it (ERAP), and says hello to enhanced_port (rUDP) */
  if (s->nat && s->ess_pipe)
    json_object_set_int_member (r, "essential_port", s->ess_port);
  if (s->nat && s->enh_pipe)
    json_object_set_int_member (r, "enhanced_port", s->enh_port);
  if (s->nat)
    json_object_set_int_member (r, "hello_id", (gint64) s->hello_id);
  return r;
}

static JsonObject *
handle_info (const TwoflowRequest * req, GError ** err)
{
  const TwoflowVideoRequest *q = &req->info;
  VideoInfo *v = video_scan (q->video, q->policy_ip, q->video_track,
      q->audio_track, err);
  JsonObject *r;

  if (!v)
    return NULL;
  r = twoflow_reply_new (req, TRUE);
  video_info_to_json (v, r);
  video_info_rates_to_json (v, r, q->segment_duration, NULL);
  return r;
}

static JsonObject *
handle_list (const TwoflowRequest * req, GError ** err)
{
  GDir *d = g_dir_open (opt_dir, 0, err);
  JsonArray *a, *checking;
  JsonObject *bad, *r;
  const gchar *n;
  gchar *why;
  gboolean unknown;

  if (!d)
    return NULL;
  a = json_array_new ();
  bad = json_object_new ();
  checking = json_array_new ();
  while ((n = g_dir_read_name (d)))
    if (n[0] != '.') {
      json_array_add_string_element (a, n);
      /* the catalog: which of them cannot play, and why (or not known
       * yet) */
      if ((why = catalog_reason (n, &unknown)))
        json_object_set_string_member (bad, n, why);
      else if (unknown)
        json_array_add_string_element (checking, n);
      g_free (why);
    }
  g_dir_close (d);
  r = twoflow_reply_new (req, TRUE);
  json_object_set_array_member (r, "videos", a);
  json_object_set_object_member (r, "unsupported", bad);
  json_object_set_array_member (r, "checking", checking);
  return r;
}

static JsonObject *
handle_session_request (Client * c, const TwoflowRequest * req,
    GError ** err)
{
  Session *s = session_lookup_owned (c, req->session, err);
  JsonObject *r;

  if (!s)
    return NULL;
  r = twoflow_reply_new (req, TRUE);
  if (req->kind == TWOFLOW_REQUEST_TEARDOWN)
    session_destroy (s, "teardown");
  else
    json_object_set_object_member (r, "stats", session_stats (s));
  return r;
}

static JsonObject *
handle_status (const TwoflowRequest * req)
{
  JsonObject *r = twoflow_reply_new (req, TRUE);

  json_object_set_int_member (r, "sessions", g_hash_table_size (sessions));
  json_object_set_int_member (r, "sessions_total", sessions_total);
  json_object_set_int_member (r, "clients", n_clients);
  json_object_set_int_member (r, "refused", refused_total);
  json_object_set_int_member (r, "shed", shed_total);
  json_object_set_int_member (r, "accept_failures", accept_failures);
  return r;
}

/* One request: AUTH first (or a client certificate), then any command;
 * every request but AUTH has one reply, ok or its error. */
static void
handle_request (Client * c, const TwoflowRequest * req)
{
  GError *err = NULL;
  JsonObject *r = NULL;

  if (req->kind == TWOFLOW_REQUEST_AUTH) {
    handle_auth (c, req);
    return;
  }
  if (!c->authenticated) {
    client_refuse (c, "unauthenticated: the first request must be AUTH "
        "with a token (or connect with a client certificate)");
    return;
  }
  if (req->invalid)
    err = g_error_copy (req->invalid);
  else if (req->kind == TWOFLOW_REQUEST_PLAY)
    r = handle_play (c, req, &err);
  else if (req->kind == TWOFLOW_REQUEST_INFO)
    r = handle_info (req, &err);
  else if (req->kind == TWOFLOW_REQUEST_LIST)
    r = handle_list (req, &err);
  else if (req->kind == TWOFLOW_REQUEST_TEARDOWN
      || req->kind == TWOFLOW_REQUEST_STATS)
    r = handle_session_request (c, req, &err);
  else if (req->kind == TWOFLOW_REQUEST_STATUS)
    r = handle_status (req);
  else
    g_set_error (&err, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "unknown command '%s'", req->cmd);
  if (r == NULL) {
    r = twoflow_reply_new_error (req, err ? err->message : "failed");
    g_print ("client %u: %s failed: %s\n", c->id, req->cmd,
        err ? err->message : "?");
  }
  g_clear_error (&err);
  client_send (c, r);
  json_object_unref (r);
}

static void read_next (Client * c);

static void
client_line (Client * c, gchar * line)
{
  GError *err = NULL;
  TwoflowRequest *req;

  c->line_len = strlen (line) + 1;
  g_strstrip (line);
  if (*line == '\0')
    return;
  /* a client certificate signed by --tls-client-ca authenticates */
  if (!c->authenticated && tls_client_ca && G_IS_TLS_CONNECTION (c->stream)) {
    GTlsCertificate *pc =
        g_tls_connection_get_peer_certificate (G_TLS_CONNECTION (c->stream));
    if (pc) {
      gchar *cn = twoflow_tls_subject_cn (pc);
      gchar *id = g_strdup_printf ("cert:%s", cn ? cn : "?");
      client_authenticated (c, id);
      g_free (id);
      g_free (cn);
    }
  }
  req = twoflow_request_parse (line, &err);
  if (req) {
    handle_request (c, req);
    twoflow_request_free (req);
  } else if (!c->authenticated) {
    client_refuse (c, "unauthenticated: not a request");
    g_clear_error (&err);
  } else {
    JsonObject *r = twoflow_reply_new_error (NULL, err->message);
    client_send (c, r);
    json_object_unref (r);
    g_clear_error (&err);
  }
}

static void
read_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  Client *c = user_data;
  GError *err = NULL;
  gssize n = g_input_stream_read_finish (G_INPUT_STREAM (source), res, &err);
  gchar *line;

  if (n < 0 && g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
    g_clear_error (&err);       /* c is gone */
    return;
  }
  if (c->closing) {
    g_clear_error (&err);
    return;
  }
  if (n <= 0) {
    client_free (c, err ? err->message : "control connection closed");
    g_clear_error (&err);
    return;
  }
  if (!twoflow_line_buffer_append (&c->lines, c->rbuf, n)) {
    gchar *why = g_strdup_printf ("line too long (over %d bytes, "
        "--max-line)", opt_max_line);
    client_refuse (c, why);
    g_free (why);
    return;
  }
  while (!c->closing && (line = twoflow_line_buffer_pop (&c->lines))) {
    client_line (c, line);
    g_free (line);
  }
  if (!c->closing)
    read_next (c);
}

static void
read_next (Client * c)
{
  g_input_stream_read_async (c->in, c->rbuf, sizeof (c->rbuf),
      G_PRIORITY_DEFAULT, c->cancel, read_cb, c);
}

static void
handshake_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  Client *c = user_data;
  GError *err = NULL;

  if (!g_tls_connection_handshake_finish (G_TLS_CONNECTION (source), res,
          &err)) {
    if (!g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)
        && !c->closing)
      client_free (c, err->message);    /* else c is gone or going */
    g_clear_error (&err);
    return;
  }
  if (c->closing)
    return;
  c->handshaken = TRUE;
  g_socket_set_timeout (g_socket_connection_get_socket (c->conn), 0);
  read_next (c);
}

static gboolean
client_send_and_close_cb (gpointer data)
{
  Client *c = data;

  c->close_idle = 0;
  c->close_timer = 0;
  client_free (c, "closed");
  return G_SOURCE_REMOVE;
}

typedef struct
{
  Client *c;                    /* valid while cancel is not cancelled */
  GCancellable *cancel;
} ClientWrite;

static void
write_cb (GObject * source, GAsyncResult * res, gpointer user_data)
{
  ClientWrite *w = user_data;
  GError *err = NULL;
  gssize n = g_output_stream_write_finish (G_OUTPUT_STREAM (source), res,
      &err);
  gboolean gone = g_cancellable_is_cancelled (w->cancel);
  Client *c = w->c;

  g_object_unref (w->cancel);
  g_free (w);
  if (gone) {                   /* c is freed */
    g_clear_error (&err);
    return;
  }
  c->writing = FALSE;
  if (n < 0) {
    GST_INFO ("client %u: send failed: %s", c->id, err->message);
    g_clear_error (&err);
    g_queue_clear_full (&c->outq, (GDestroyNotify) g_bytes_unref);
    c->out_queued = c->out_offset = 0;
    client_close (c, "send failed");
    return;
  }
  c->out_offset += n;
  c->out_queued -= n;
  if (c->out_offset == g_bytes_get_size (g_queue_peek_head (&c->outq))) {
    g_bytes_unref (g_queue_pop_head (&c->outq));
    c->out_offset = 0;
  }
  client_flush (c);
}

static void
client_flush (Client * c)
{
  ClientWrite *w;
  GBytes *head;
  gsize len;
  const guint8 *data;

  if (c->writing)
    return;
  head = g_queue_peek_head (&c->outq);
  if (head == NULL) {
    /* all written: a closing client goes now */
    if (c->closing && c->close_timer) {
      g_source_remove (c->close_timer);
      c->close_timer = 0;
      c->close_idle = g_idle_add (client_send_and_close_cb, c);
    }
    return;
  }
  data = g_bytes_get_data (head, &len);
  w = g_new (ClientWrite, 1);
  w->c = c;
  w->cancel = g_object_ref (c->cancel);
  c->writing = TRUE;
  g_output_stream_write_async (c->out, data + c->out_offset,
      len - c->out_offset, G_PRIORITY_DEFAULT, c->cancel, write_cb, w);
}

/* Closes @c once its queued lines are written (at most 2 s from now),
 * from the main loop: callers may still hold @c. @why: logged, or NULL. */
static void
client_close (Client * c, const gchar * why)
{
  if (c->closing)
    return;
  c->closing = TRUE;
  if (why)
    g_print ("client %u (%s): closing: %s\n", c->id, c->peer, why);
  if (c->writing || !g_queue_is_empty (&c->outq))
    c->close_timer = g_timeout_add_seconds (2, client_send_and_close_cb, c);
  else
    c->close_idle = g_idle_add (client_send_and_close_cb, c);
}

static gboolean
auth_timeout_cb (gpointer data)
{
  Client *c = data;

  c->auth_timer = 0;
  client_refuse (c, "unauthenticated: no AUTH in time");
  return G_SOURCE_REMOVE;
}

/* Over --max-connections: one line (over TLS when it is on, written
 * asynchronously so a client that never completes its handshake cannot
 * stall the server), then closed; at most 32 such at a time, the rest
 * closed at once. */
typedef struct
{
  GSocketConnection *conn;
  GIOStream *stream;
  GCancellable *cancel;
  guint timer;
  gchar *line;
} Refusal;

static void
refusal_done (GObject * src, GAsyncResult * res, gpointer data)
{
  Refusal *r = data;

  g_output_stream_write_all_finish (G_OUTPUT_STREAM (src), res, NULL, NULL);
  if (r->timer)
    g_source_remove (r->timer);
  g_io_stream_close (G_IO_STREAM (r->conn), NULL, NULL);
  if (r->stream != G_IO_STREAM (r->conn))
    g_object_unref (r->stream);
  g_object_unref (r->conn);
  g_object_unref (r->cancel);
  g_free (r->line);
  g_free (r);
  n_rejecting--;
}

static gboolean
refusal_timeout (gpointer data)
{
  Refusal *r = data;

  r->timer = 0;
  g_cancellable_cancel (r->cancel);
  return G_SOURCE_REMOVE;
}

static void
refuse_connection (GSocketConnection * conn, const gchar * peer,
    const gchar * reason)
{
  Refusal *r;
  JsonObject *o;
  gchar *text;

  refused_total++;
  if (n_rejecting >= 32) {
    g_io_stream_close (G_IO_STREAM (conn), NULL, NULL);
    return;
  }
  r = g_new0 (Refusal, 1);
  r->conn = g_object_ref (conn);
  r->stream = tls_cert ? twoflow_tls_server_wrap (G_IO_STREAM (conn),
      tls_cert, NULL, NULL) : G_IO_STREAM (conn);
  if (r->stream == NULL)
    r->stream = G_IO_STREAM (conn);
  r->cancel = g_cancellable_new ();
  /* glib-networking runs handshakes in a thread pool, blocking on the
   * socket: its timeout frees the thread of a peer that never sends */
  if (tls_cert)
    g_socket_set_timeout (g_socket_connection_get_socket (conn), 5);
  o = json_object_new ();
  json_object_set_boolean_member (o, "ok", FALSE);
  json_object_set_string_member (o, "error", reason);
  text = twoflow_json_to_line (o);
  json_object_unref (o);
  r->line = g_strconcat (text, "\n", NULL);
  g_free (text);
  r->timer = g_timeout_add_seconds (5, refusal_timeout, r);
  n_rejecting++;
  g_output_stream_write_all_async (g_io_stream_get_output_stream (r->stream),
      r->line, strlen (r->line), G_PRIORITY_DEFAULT, r->cancel, refusal_done,
      r);
  if (refused_total <= 10 || refused_total % 100 == 0)
    g_print ("connection from %s refused: %s (%" G_GUINT64_FORMAT
        " refused)\n", peer, reason, refused_total);
}

static gboolean
auth_required (void)
{
  return tokens != NULL || tls_client_ca != NULL;
}

/* Whether a new connection from @peer may take a slot (else it was
 * refused). Strangers cannot crowd out proxies: one address holds at most
 * --max-pending-per-address connections that have not authenticated, and
 * when the table is full the oldest of those is shed for the newcomer;
 * only authenticated clients fill it for good. */
static gboolean
connection_admit (GSocketConnection * conn, const gchar * peer)
{
  GList *l;
  Client *oldest = NULL;
  guint pending_here = 0;

  if (!auth_required ())
    goto table;
  for (l = all_clients.head; l; l = l->next) {
    Client *c = l->data;
    if (c->authenticated || c->closing)
      continue;
    if (oldest == NULL)
      oldest = c;
    if (g_str_equal (c->peer, peer))
      pending_here++;
  }
  if (pending_here >= (guint) opt_max_pending_per_address) {
    gchar *why = g_strdup_printf ("%u connections from %s have not "
        "authenticated (--max-pending-per-address)", pending_here, peer);
    refuse_connection (conn, peer, why);
    g_free (why);
    return FALSE;
  }
table:
  if (n_clients < (guint) opt_max_connections)
    return TRUE;
  if (oldest) {
    shed_total++;
    if (shed_total <= 10 || shed_total % 100 == 0)
      g_print ("client %u (%s): shed, the connection table is full and it "
          "has not authenticated (%" G_GUINT64_FORMAT " shed)\n", oldest->id,
          oldest->peer, shed_total);
    client_free (oldest, "shed");
    return TRUE;
  }
  {
    gchar *why = g_strdup_printf ("server busy: %u control connections "
        "(--max-connections)", n_clients);
    refuse_connection (conn, peer, why);
    g_free (why);
  }
  return FALSE;
}

/* The socket of a TLS client became readable (or the client is gone: the
 * source is cancelled with it). */
static gboolean
first_bytes_cb (GSocket * socket, GIOCondition cond, gpointer data)
{
  Client *c = data;

  GError *err = NULL;

  g_source_unref (c->first_bytes);
  c->first_bytes = NULL;
  if (c->closing)
    return G_SOURCE_REMOVE;
  if (g_socket_get_available_bytes (socket) <= 0) {
    client_free (c, "closed before TLS");
    return G_SOURCE_REMOVE;
  }
  /* the handshake (blocking on the socket in its thread) ends within
   * --auth-timeout; reset at the first request */
  g_socket_set_timeout (socket, opt_auth_timeout);
  c->stream = twoflow_tls_server_wrap (G_IO_STREAM (c->conn), tls_cert,
      tls_client_ca, &err);
  if (c->stream == NULL) {
    c->stream = G_IO_STREAM (c->conn);
    client_free (c, err->message);
    g_clear_error (&err);
    return G_SOURCE_REMOVE;
  }
  c->in = g_io_stream_get_input_stream (c->stream);
  c->out = g_io_stream_get_output_stream (c->stream);
  g_tls_connection_handshake_async (G_TLS_CONNECTION (c->stream),
      G_PRIORITY_DEFAULT, c->cancel, handshake_cb, c);
  return G_SOURCE_REMOVE;
}

static void
client_accept (GSocketConnection * conn)
{
  Client *c;
  GSocketAddress *addr = g_socket_connection_get_remote_address (conn, NULL);
  gchar *peer;

  if (addr && G_IS_INET_SOCKET_ADDRESS (addr))
    peer = g_inet_address_to_string (g_inet_socket_address_get_address
        (G_INET_SOCKET_ADDRESS (addr)));
  else
    peer = g_strdup ("127.0.0.1");
  g_clear_object (&addr);
  if (!connection_admit (conn, peer)) {
    g_free (peer);
    return;
  }

  c = g_new0 (Client, 1);
  c->id = next_client_id++;
  c->conn = g_object_ref (conn);
  c->stream = G_IO_STREAM (conn);
  n_clients++;
  g_queue_push_tail (&all_clients, c);
  c->link = all_clients.tail;
  c->cancel = g_cancellable_new ();
  c->in = g_io_stream_get_input_stream (c->stream);
  c->out = g_io_stream_get_output_stream (c->stream);
  c->peer = peer;
  twoflow_line_buffer_init (&c->lines, opt_max_line);
  if (tokens == NULL && tls_client_ca == NULL) {
    /* --insecure without --tokens: anyone (lab use) */
    c->authenticated = TRUE;
    c->identity = g_strdup (c->peer);
  } else {
    c->identity = g_strdup (c->peer);
    c->auth_timer = g_timeout_add_seconds (opt_auth_timeout, auth_timeout_cb,
        c);
  }
  GST_INFO ("client %u (%s): connected%s", c->id, c->peer,
      tls_cert ? " (TLS)" : "");
  if (tls_cert) {
    /* glib-networking runs a handshake in a pool thread that blocks on the
     * socket: it starts once the peer has sent something, so silent
     * connections cost neither a thread nor a TLS session (a flood of
     * them starved the pool and slowed accepting) */
    c->first_bytes = g_socket_create_source (g_socket_connection_get_socket
        (conn), G_IO_IN | G_IO_ERR | G_IO_HUP, NULL);
    g_source_set_callback (c->first_bytes, (GSourceFunc) (GCallback)
        first_bytes_cb, c, NULL);
    g_source_attach (c->first_bytes, NULL);
  } else {
    c->handshaken = TRUE;
    read_next (c);
  }
  return;
}

/* The accept loop (GSocketService would retry a failing accept at once:
 * out of file descriptors, it spins). */
static GSocketListener *listener;
static GCancellable *accept_cancel;

static void accept_next (void);

static gboolean
accept_resume_cb (gpointer data)
{
  accept_next ();
  return G_SOURCE_REMOVE;
}

static void
accept_cb (GObject * src, GAsyncResult * res, gpointer data)
{
  GError *err = NULL;
  GSocketConnection *conn =
      g_socket_listener_accept_finish (G_SOCKET_LISTENER (src), res, NULL,
      &err);

  if (conn) {
    client_accept (conn);
    g_object_unref (conn);
    accept_next ();
    return;
  }
  if (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
    g_error_free (err);
    return;
  }
  /* EMFILE, ENFILE, ENOBUFS: the connection waits in the backlog while
   * clients close and free descriptors */
  accept_failures++;
  if (accept_failures <= 10 || accept_failures % 100 == 0)
    g_print ("accept failed: %s; accepting again in 250 ms (%"
        G_GUINT64_FORMAT " failures)\n", err->message, accept_failures);
  g_error_free (err);
  g_timeout_add (250, accept_resume_cb, NULL);
}

static void
accept_next (void)
{
  g_socket_listener_accept_async (listener, accept_cancel, accept_cb, NULL);
}

#include "twoflow-server-web.c"

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
  GSocketAddress *addr;
  GSocketAddress *effective = NULL;
  GMainLoop *loop;

  /* logs are read line by line by scripts */
  setvbuf (stdout, NULL, _IOLBF, 0);
  /* the address-validation tokens' key, new at every start */
  if (getrandom (validation_secret, sizeof (validation_secret), 0) !=
      sizeof (validation_secret)) {
    g_printerr ("getrandom failed\n");
    return 1;
  }
  if ((ret = twoflow_server_options_parse (argc, argv)) >= 0)
    return ret;
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
      return 1;
    for (i = 0; preload[i]; i++) {
      GstPlugin *plugin = gst_plugin_load_by_name (preload[i]);

      if (plugin)
        gst_object_unref (plugin);
    }
  }
  GST_DEBUG_CATEGORY_INIT (server_debug, "twoflow-server", 0,
      "twoflow central server");
  if ((ret = twoflow_server_options_check ()) >= 0)
    return ret;
  twoflow_server_source_init ();
  twoflow_server_catalog_init ();
  twoflow_server_schedule_init ();
  sessions = g_hash_table_new (NULL, NULL);

  listener = g_socket_listener_new ();
  /* a burst of connections waits in the kernel's queue instead of being
   * dropped (GLib's default backlog is 10) */
  g_socket_listener_set_backlog (listener, 128);
  addr = g_inet_socket_address_new_from_string (opt_address ? opt_address :
      "0.0.0.0", opt_port);
  if (addr == NULL || !g_socket_listener_add_address (listener, addr, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL,
          &effective, &err)) {
    g_printerr ("cannot listen on %s:%d: %s\n", opt_address ? opt_address :
        "0.0.0.0", opt_port, err ? err->message : "bad address");
    return 1;
  }
  accept_cancel = g_cancellable_new ();
  accept_next ();
  g_print ("twoflow-server: serving %s on control port %u (%s%s%s)\n",
      opt_dir,
      g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (effective)),
      tls_cert ? "TLS" : "plaintext, --insecure",
      tokens ? ", tokens" : "", tls_client_ca ? ", client certificates" : "");
  g_object_unref (addr);
  g_object_unref (effective);

  web_start ();
  /* the catalog: which videos cannot play, looked at in its own thread */
  catalog_queue_all ();
  loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGINT, quit_cb, loop);
  g_unix_signal_add (SIGTERM, quit_cb, loop);
  g_unix_signal_add (SIGHUP, web_reload, NULL);
  /* listening (control and HTTP): systemd's Type=notify start is done */
  twoflow_daemon_notify ("READY=1");
  g_main_loop_run (loop);
  twoflow_daemon_notify ("STOPPING=1");

  g_print ("twoflow-server: stopping, %u session(s) active\n",
      g_hash_table_size (sessions));
  {
    GList *l, *all = g_hash_table_get_values (sessions);
    for (l = all; l; l = l->next)
      session_destroy (l->data, "server stopping");
    g_list_free (all);
  }
  g_cancellable_cancel (accept_cancel);
  g_socket_listener_close (listener);
  g_object_unref (listener);
  g_object_unref (accept_cancel);
  g_main_loop_unref (loop);
  return 0;
}
