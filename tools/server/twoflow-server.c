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

GST_DEBUG_CATEGORY_STATIC (server_debug);
#define GST_CAT_DEFAULT server_debug

#define DEFAULT_SEGMENT_DURATION TWOFLOW_DEFAULT_SEGMENT_DURATION
#define RATE_WINDOW GST_SECOND
#define SCAN_STALL 5            /* s without a demuxed stream: refused */
/* enhanced-flow smoothing (docs/system.md, "Enhanced-flow smoothing") */
#define ENHANCED_MTU 1400       /* rtpgstpay mtu */
#define SMOOTHING_HEADROOM 1.01 /* rtpgstpay's caps every second, rounding */
#define CTCP_P_HAT 0.05         /* cTCP's p̂ (its target S/(T(1-p̂))) */
/* start-up ramp: each essential record leaves this long before it plays
 * (the path's RTT and jitter; docs/system.md, "Start-up") */
#define STARTUP_MARGIN 0.2
/* the session rate controller's transports */
#define RC_SRC_ESSENTIAL 0
#define RC_SRC_ENHANCED 1


/* the scan's index of a video: its key frames (KeyFrame: PTS, frames
 * before it) and its audio buffers' PTS */
typedef struct
{
  GArray *keyframes;
  GArray *audio_pts;
} VideoIndex;

typedef struct
{
  gchar *name;
  gchar *path;
  gboolean is_trace;
  gint policy;                  /* 0 = i, 1 = ip */
  gchar *codec;
  gchar *video_track, *audio_track;     /* the selection scanned */
  gchar *audio_codec;           /* NULL: no audio */
  guint64 audio_records, audio_bytes, audio_mean;
  guint64 frames, ess_frames, enh_frames;
  guint64 bytes, ess_bytes, enh_bytes;
  GstClockTime duration;
  /* bit/s; peaks over 1 s windows of decode time */
  guint64 peak_rate, mean_rate, ess_peak, ess_mean, enh_peak, enh_mean;
  guint64 levels[GST_TWOFLOW_PROFILE_N_LEVELS];  /* rUDP rate levels, bit/s */
  /* the frames' decode times and sizes, for the smoothing schedules */
  GstTwoflowSmoothing *smoothing;
  GHashTable *schedules;        /* "pacing/W/L/skip" -> Schedule */
  GHashTable *startups;         /* "T" -> GstTwoflowStartupPlan */
  VideoIndex index;             /* where a session can start (seeking) */
} VideoInfo;

/* The enhanced flow's schedule for one smoothing window (read by the
 * sessions' streaming threads: never changed once made). */
typedef struct
{
  GstTwoflowSmoothing *sm;
  GstTwoflowSmoothingInfo info;
} Schedule;

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

static GHashTable *video_cache;         /* "path|policy" -> VideoInfo */
static GHashTable *catalog;     /* "name|size|mtime" -> why it cannot play
                                 * ("": it can); under catalog_lock */
static GHashTable *catalog_pending;     /* keys being looked at */
static GMutex catalog_lock;
static GThreadPool *catalog_pool;       /* one thread: the catalog's scans */
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

/* start position (a key frame's PTS, found in the scan's key frame
 * index): parsed pictures are dropped until the first key frame at or
 * after it, identically in both pipelines, so the split numbers the same
 * frames in both; audio before the start is dropped. @keyframes: the
 * scan's index (the video pad's key frames' PTS), filled when set. */
typedef struct
{
  gboolean started;
  GstClockTime start;
  GstClockTime offset;          /* the start's running time: taken off the
                                 * streams' running times (pad offset), so
                                 * the enhanced flow's clock sync does not
                                 * wait out the part dropped */
  GArray *keyframes;            /* KeyFrame */
  GArray *audio_pts;            /* GstClockTime: the audio buffers' PTS */
  guint64 video_buffers;
} StartState;

/* a key frame of the scan's index: its PTS and the video buffers (frames,
 * decode order) before it */
typedef struct
{
  GstClockTime pts;
  guint64 index;
  GstClockTime rt;              /* running time of its DTS (or PTS) */
} KeyFrame;

static GstPadProbeReturn
start_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  StartState *ss = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime t;

  if (ss->started)
    return GST_PAD_PROBE_OK;
  t = GST_BUFFER_PTS_IS_VALID (buf) ? GST_BUFFER_PTS (buf) :
      GST_BUFFER_DTS (buf);
  if (!GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT)
      && GST_CLOCK_TIME_IS_VALID (t) && t >= ss->start) {
    ss->started = TRUE;
    return GST_PAD_PROBE_OK;
  }
  return GST_PAD_PROBE_DROP;
}

static GstPadProbeReturn
audio_start_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  StartState *ss = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);

  if (GST_BUFFER_PTS_IS_VALID (buf)
      && GST_BUFFER_PTS (buf) < ss->start)
    return GST_PAD_PROBE_DROP;
  return GST_PAD_PROBE_OK;
}

/* the scan: the key frames' PTS, where a session can start (the same
 * test as start_probe's) */
static GstPadProbeReturn
keyframe_index_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  StartState *ss = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime t = GST_BUFFER_PTS_IS_VALID (buf) ? GST_BUFFER_PTS (buf) :
      GST_BUFFER_DTS (buf);

  if (!GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DELTA_UNIT)
      && GST_CLOCK_TIME_IS_VALID (t)) {
    KeyFrame k = { t, ss->video_buffers, 0 };
    GstEvent *ev = gst_pad_get_sticky_event (pad, GST_EVENT_SEGMENT, 0);
    GstClockTime d = GST_BUFFER_DTS_IS_VALID (buf) ? GST_BUFFER_DTS (buf) : t;

    if (ev) {
      const GstSegment *seg;
      gst_event_parse_segment (ev, &seg);
      k.rt = gst_segment_to_running_time (seg, GST_FORMAT_TIME, d);
      if (!GST_CLOCK_TIME_IS_VALID (k.rt))
        k.rt = 0;
      gst_event_unref (ev);
    }
    g_array_append_val (ss->keyframes, k);
  }
  ss->video_buffers++;
  return GST_PAD_PROBE_OK;
}

/* the scan: the audio's PTS (what a start drops of it) */
static GstPadProbeReturn
audio_index_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  StartState *ss = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstClockTime t = GST_BUFFER_PTS (buf);

  g_array_append_val (ss->audio_pts, t);
  return GST_PAD_PROBE_OK;
}

/* A demuxer's edit list can start the video later than the audio: qtdemux
 * sends an empty segment for the gap, then one whose base (running time)
 * is past its start (position). twoflowsplit moves the audio into the
 * video's positions, where running times before that base have no place:
 * the audio before the first picture was lost. Such a segment becomes a
 * plain one (base 0, start 0) with the video's timestamps moved by
 * base - start, so running times, and the A/V offset, stay the source's.
 * @data: the shift in ns, per pad. */
static GstPadProbeReturn
video_timebase_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstClockTime *shift = data;

  if (info->type & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
    const GstSegment *seg;
    GstSegment plain;
    GstEvent *nev;

    if (GST_EVENT_TYPE (ev) != GST_EVENT_SEGMENT)
      return GST_PAD_PROBE_OK;
    gst_event_parse_segment (ev, &seg);
    *shift = 0;
    if (seg->format != GST_FORMAT_TIME || seg->rate != 1.0
        || seg->base <= seg->start)
      return GST_PAD_PROBE_OK;
    *shift = seg->base - seg->start;
    gst_segment_init (&plain, GST_FORMAT_TIME);
    if (GST_CLOCK_TIME_IS_VALID (seg->stop))
      plain.stop = seg->stop + *shift;
    plain.duration = seg->duration;
    nev = gst_event_new_segment (&plain);
    gst_event_set_seqnum (nev, gst_event_get_seqnum (ev));
    gst_event_unref (ev);
    GST_PAD_PROBE_INFO_DATA (info) = nev;
    GST_INFO ("video starts %" GST_TIME_FORMAT " into the file: timestamps "
        "moved by it", GST_TIME_ARGS (*shift));
    return GST_PAD_PROBE_OK;
  }
  if (*shift) {
    GstBuffer *buf = gst_buffer_make_writable (GST_PAD_PROBE_INFO_BUFFER
        (info));

    if (GST_BUFFER_PTS_IS_VALID (buf))
      GST_BUFFER_PTS (buf) += *shift;
    if (GST_BUFFER_DTS_IS_VALID (buf))
      GST_BUFFER_DTS (buf) += *shift;
    GST_PAD_PROBE_INFO_DATA (info) = buf;
  }
  return GST_PAD_PROBE_OK;
}

/* Which of parsebin's streams go where. A track selection is NULL (the
 * first of its kind), "none" (audio: no audio), an index among the streams
 * of its kind, or a language code (the stream's language tag). */
typedef struct
{
  GMutex lock;
  gchar *video_track, *audio_track;
  GstElement *video_next;       /* the video goes to its "sink" pad */
  GstElement *split;            /* the audio to its "audio" pad; NULL: none */
  StartState ss;
  guint n_video, n_audio;
  gboolean video_linked, audio_linked;
  gboolean checked;
  GString *seen;                /* the streams' media types */
  /* audio chosen by language: the streams' tags come after parsebin adds
   * their pads, so each audio pad waits (blocked) for its tags or first
   * buffer; the queue to split.audio is linked from the first audio pad
   * on, so the split waits for the audio */
  GstElement *audio_queue;
  guint audio_pending;
} MediaLink;

static void parsebin_no_more_pads (GstElement * parsebin, gpointer user_data);

/* parsebin exposes all pads of the input before data flows: at the first
 * buffer of any, the selection is complete (parsebin 1.22 emits no
 * no-more-pads of its own). */
static GstPadProbeReturn
first_buffer_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  MediaLink *ml = user_data;
  GstElement *pb = GST_ELEMENT (gst_pad_get_parent (pad));
  gboolean check;

  g_mutex_lock (&ml->lock);
  check = !ml->checked;
  ml->checked = TRUE;
  g_mutex_unlock (&ml->lock);
  if (check && pb)
    parsebin_no_more_pads (pb, ml);
  if (pb)
    gst_object_unref (pb);
  return GST_PAD_PROBE_REMOVE;
}

static void
media_link_free (MediaLink * ml)
{
  g_mutex_clear (&ml->lock);
  g_free (ml->video_track);
  g_free (ml->audio_track);
  g_string_free (ml->seen, TRUE);
  g_free (ml);
}

static gboolean
is_language (const gchar * sel)
{
  return sel && *sel && !g_ascii_isdigit (sel[0]) && g_strcmp0 (sel, "none");
}

/* ISO 639-1 or -2 codes ("fr", "fre", "fra") or names compare alike */
static gboolean
language_matches (const gchar * sel, const gchar * lang)
{
  const gchar *a, *b;

  if (!sel || !lang)
    return FALSE;
  a = gst_tag_get_language_code_iso_639_1 (sel);
  b = gst_tag_get_language_code_iso_639_1 (lang);
  return g_ascii_strcasecmp (a ? a : sel, b ? b : lang) == 0;
}

static gboolean
track_matches (const gchar * sel, guint index, const gchar * lang)
{
  if (sel == NULL || *sel == '\0')
    return index == 0;
  if (g_ascii_isdigit (sel[0]))
    return index == (guint) atoi (sel);
  return language_matches (sel, lang);
}

static gchar *
pad_language (GstPad * pad)
{
  GstStream *stream = gst_pad_get_stream (pad);
  GstTagList *tags = stream ? gst_stream_get_tags (stream) : NULL;
  gchar *lang = NULL;
  GstEvent *ev;

  if (tags)
    gst_tag_list_get_string (tags, GST_TAG_LANGUAGE_CODE, &lang);
  if (!lang && (ev = gst_pad_get_sticky_event (pad, GST_EVENT_TAG, 0))) {
    GstTagList *t;
    gst_event_parse_tag (ev, &t);
    gst_tag_list_get_string (t, GST_TAG_LANGUAGE_CODE, &lang);
    gst_event_unref (ev);
  }
  if (tags)
    gst_tag_list_unref (tags);
  if (stream)
    gst_object_unref (stream);
  return lang;
}

static gboolean
video_supported (const GstStructure * st)
{
  return gst_structure_has_name (st, "video/mpeg")
      || gst_structure_has_name (st, "video/x-h264");
}

/* A queue before each split pad (the split interleaves audio and video by
 * waiting for the other pad; a demuxer pushes both from one thread). */
static GstElement *
add_to_bin (GstElement * parsebin, const gchar * factory)
{
  GstElement *bin = GST_ELEMENT (gst_element_get_parent (parsebin));
  GstElement *e = gst_element_factory_make (factory, NULL);

  if (g_str_equal (factory, "queue"))
    g_object_set (e, "max-size-buffers", 0, "max-size-time", (guint64) 0,
        "max-size-bytes", 64 * 1024 * 1024, NULL);
  else
    g_object_set (e, "sync", FALSE, "async", FALSE, NULL);
  gst_bin_add (GST_BIN (bin), e);
  gst_element_sync_state_with_parent (e);
  gst_object_unref (bin);
  return e;
}

static void
link_to (GstElement * e, GstPad * pad)
{
  GstPad *sink = gst_element_get_static_pad (e, "sink");

  if (gst_pad_link (pad, sink) != GST_PAD_LINK_OK)
    GST_WARNING ("cannot link %s:%s", GST_DEBUG_PAD_NAME (pad));
  gst_object_unref (sink);
}

/* An audio pad waiting for its language: a matching tag links it to the
 * audio queue; its first buffer without one sends it to a fakesink. When
 * the last audio pad is decided without a match the queue gets EOS (the
 * split stops waiting for audio) and the session an error. */
static GstPadProbeReturn
audio_language_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  MediaLink *ml = user_data;
  GstElement *pb;
  gboolean take = FALSE, decided = FALSE, none_left = FALSE;
  gchar *lang = NULL;

  if (GST_PAD_PROBE_INFO_TYPE (info) & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
    GstTagList *tags;

    if (GST_EVENT_TYPE (ev) != GST_EVENT_TAG)
      return GST_PAD_PROBE_PASS;
    gst_event_parse_tag (ev, &tags);
    if (!gst_tag_list_get_string (tags, GST_TAG_LANGUAGE_CODE, &lang))
      return GST_PAD_PROBE_PASS;
  }
  g_mutex_lock (&ml->lock);
  if (lang) {
    if (!ml->audio_linked && language_matches (ml->audio_track, lang))
      take = decided = TRUE;
  } else {
    decided = TRUE;             /* data, and no tag matched */
  }
  if (decided) {
    ml->audio_linked |= take;
    ml->audio_pending--;
    none_left = ml->audio_pending == 0 && !ml->audio_linked;
  }
  g_mutex_unlock (&ml->lock);
  g_free (lang);
  if (!decided)
    return GST_PAD_PROBE_PASS;

  pb = GST_ELEMENT (gst_pad_get_parent (pad));
  if (take) {
    link_to (ml->audio_queue, pad);
    if (ml->ss.start > 0) {
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, audio_start_probe,
          &ml->ss, NULL);
      gst_pad_set_offset (pad, -(gint64) ml->ss.offset);
    }
    if (ml->ss.audio_pts)
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, audio_index_probe,
          &ml->ss, NULL);
  } else {
    link_to (add_to_bin (pb, "fakesink"), pad);
  }
  GST_INFO ("audio stream %s:%s: %s", GST_DEBUG_PAD_NAME (pad),
      take ? "the audio (language)" : "unused");
  if (none_left) {
    GstPad *qsink = gst_element_get_static_pad (ml->audio_queue, "sink");
    GstSegment seg;
    GError *err = g_error_new (GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE,
        "no audio track '%s'; the file has: %s", ml->audio_track,
        ml->seen->str);

    gst_pad_send_event (qsink, gst_event_new_stream_start ("no-audio"));
    gst_segment_init (&seg, GST_FORMAT_TIME);
    gst_pad_send_event (qsink, gst_event_new_segment (&seg));
    gst_pad_send_event (qsink, gst_event_new_eos ());
    gst_object_unref (qsink);
    gst_element_post_message (pb, gst_message_new_error (GST_OBJECT (pb),
            err, NULL));
    g_error_free (err);
  }
  gst_object_unref (pb);
  return GST_PAD_PROBE_REMOVE;
}

static void
parsebin_pad_added (GstElement * parsebin, GstPad * pad, gpointer user_data)
{
  MediaLink *ml = user_data;
  GstCaps *caps = gst_pad_get_current_caps (pad);
  const GstStructure *st;
  const gchar *name;
  gchar *lang = pad_language (pad);
  gboolean video = FALSE, audio = FALSE, want = FALSE;
  GstPad *target = NULL, *qsink, *qsrc;
  GstElement *e;

  if (!caps)
    caps = gst_pad_query_caps (pad, NULL);
  st = gst_caps_get_structure (caps, 0);
  name = gst_structure_get_name (st);
  video = g_str_has_prefix (name, "video/");
  audio = g_str_has_prefix (name, "audio/");
  g_mutex_lock (&ml->lock);
  g_string_append_printf (ml->seen, "%s%s%s%s", ml->seen->len ? ", " : "",
      name, lang ? " " : "", lang ? lang : "");
  if (video && video_supported (st)) {
    want = !ml->video_linked && track_matches (ml->video_track, ml->n_video++,
        lang);
    ml->video_linked |= want;
  } else if (audio && ml->split && is_language (ml->audio_track)) {
    gboolean first = ml->audio_queue == NULL;

    ml->n_audio++;
    ml->audio_pending++;
    if (first)
      ml->audio_queue = add_to_bin (parsebin, "queue");
    g_mutex_unlock (&ml->lock);
    if (first) {
      GstPad *qsrc = gst_element_get_static_pad (ml->audio_queue, "src");
      GstPad *target = gst_element_request_pad_simple (ml->split, "audio");
      if (!target || gst_pad_link (qsrc, target) != GST_PAD_LINK_OK)
        GST_WARNING ("cannot link the audio queue");
      gst_object_unref (qsrc);
      if (target)
        gst_object_unref (target);
    }
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BLOCK |
        GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
        audio_language_probe, ml, NULL);
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, first_buffer_probe, ml,
        NULL);
    GST_INFO ("parsebin stream %s: waiting for its language", name);
    g_free (lang);
    gst_caps_unref (caps);
    return;
  } else if (audio) {
    want = ml->split && !ml->audio_linked
        && g_strcmp0 (ml->audio_track, "none") != 0
        && track_matches (ml->audio_track, ml->n_audio++, lang);
    ml->audio_linked |= want;
  }
  g_mutex_unlock (&ml->lock);

  if (want) {
    e = add_to_bin (parsebin, "queue");
    target = video ? gst_element_get_static_pad (ml->video_next, "sink") :
        gst_element_request_pad_simple (ml->split, "audio");
    qsrc = gst_element_get_static_pad (e, "src");
    if (!target || gst_pad_link (qsrc, target) != GST_PAD_LINK_OK)
      GST_WARNING ("cannot link %s", name);
    gst_object_unref (qsrc);
    if (target)
      gst_object_unref (target);
    if (video)
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
          GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, video_timebase_probe,
          g_new0 (GstClockTime, 1), g_free);
    if (ml->ss.start > 0) {
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER,
          video ? start_probe : audio_start_probe, &ml->ss, NULL);
      gst_pad_set_offset (pad, -(gint64) ml->ss.offset);
    }
    if (ml->ss.keyframes)
      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER,
          video ? keyframe_index_probe : audio_index_probe, &ml->ss, NULL);
  } else {
    /* streams not carried: consumed, so the demuxer runs on */
    e = add_to_bin (parsebin, "fakesink");
  }
  qsink = gst_element_get_static_pad (e, "sink");
  if (gst_pad_link (pad, qsink) != GST_PAD_LINK_OK)
    GST_WARNING ("cannot link %s", name);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, first_buffer_probe, ml,
      NULL);
  gst_object_unref (qsink);
  GST_INFO ("parsebin stream %s%s%s: %s", name, lang ? " " : "",
      lang ? lang : "", want ? (video ? "the video" : "the audio") : "unused");
  g_free (lang);
  gst_caps_unref (caps);
}

/* All streams are known: a file without a video the split takes is an
 * error with its reason (not an empty stream). */
static void
parsebin_no_more_pads (GstElement * parsebin, gpointer user_data)
{
  MediaLink *ml = user_data;
  GError *err = NULL;

  GST_INFO ("parsebin: all pads (%s)", ml->seen->str);
  g_mutex_lock (&ml->lock);
  ml->checked = TRUE;
  if (!ml->video_linked)
    err = g_error_new (GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE,
        ml->video_track ? "no video track '%s' (MPEG-1/2 or H.264); the file "
        "has: %s" : "no video stream (MPEG-1/2 or H.264)%s; the file has: %s",
        ml->video_track ? ml->video_track : "",
        ml->seen->len ? ml->seen->str : "no streams");
  else if (ml->split && ml->audio_track && !ml->audio_linked
      && g_strcmp0 (ml->audio_track, "none") != 0
      && !is_language (ml->audio_track))
    err = g_error_new (GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE,
        "no audio track '%s'; the file has: %s", ml->audio_track,
        ml->seen->str);
  g_mutex_unlock (&ml->lock);
  if (err) {
    gst_element_post_message (parsebin, gst_message_new_error (GST_OBJECT
            (parsebin), err, NULL));
    g_error_free (err);
  }
}

/* filesrc ! parsebin, the selected video to @video_next, the selected audio
 * (if @split) to split.audio; from the key frame at @start (PTS, 0: the
 * beginning); @index (the scan): filled with the key frames and the
 * audio's PTS. */
static GstElement *
make_media_source (GstElement * pipe, const gchar * path,
    const gchar * video_track, const gchar * audio_track, GstClockTime start,
    GstClockTime start_rt, VideoIndex * index, GstElement * video_next,
    GstElement * split)
{
  GstElement *fsrc = gst_element_factory_make ("filesrc", NULL);
  GstElement *pb = gst_element_factory_make ("parsebin", NULL);
  MediaLink *ml = g_new0 (MediaLink, 1);

  g_mutex_init (&ml->lock);
  ml->video_track = g_strdup (video_track);
  ml->audio_track = g_strdup (audio_track);
  ml->video_next = video_next;
  ml->split = split;
  ml->ss.start = start;
  ml->ss.offset = start_rt;
  if (index) {
    ml->ss.keyframes = index->keyframes;
    ml->ss.audio_pts = index->audio_pts;
  }
  ml->seen = g_string_new (NULL);
  g_object_set_data_full (G_OBJECT (pb), "media-link", ml,
      (GDestroyNotify) media_link_free);
  g_object_set (fsrc, "location", path, NULL);
  gst_bin_add_many (GST_BIN (pipe), fsrc, pb, NULL);
  gst_element_link (fsrc, pb);
  g_signal_connect (pb, "pad-added", G_CALLBACK (parsebin_pad_added), ml);
  g_signal_connect (pb, "no-more-pads", G_CALLBACK (parsebin_no_more_pads),
      ml);
  return fsrc;
}

/* A short name of an audio codec from its caps. */
static gchar *
audio_codec_name (const GstCaps * caps)
{
  const GstStructure *st = gst_caps_get_structure (caps, 0);
  const gchar *name = gst_structure_get_name (st);
  gint v = 0, layer = 0;

  if (gst_structure_has_name (st, "audio/mpeg")) {
    gst_structure_get_int (st, "mpegversion", &v);
    gst_structure_get_int (st, "layer", &layer);
    if (v == 1)
      return g_strdup_printf ("mp%d", layer ? layer : 2);
    return g_strdup ("aac");
  }
  if (g_str_has_prefix (name, "audio/x-"))
    return g_strdup (name + 8);
  return g_strdup (name + 6);
}

/* ---------------------------------------------------------------- videos */

static void
video_info_free (VideoInfo * v)
{
  g_free (v->name);
  g_free (v->path);
  g_free (v->codec);
  g_free (v->video_track);
  g_free (v->audio_track);
  g_free (v->audio_codec);
  gst_twoflow_smoothing_free (v->smoothing);
  if (v->schedules)
    g_hash_table_destroy (v->schedules);
  if (v->startups)
    g_hash_table_destroy (v->startups);
  if (v->index.keyframes)
    g_array_unref (v->index.keyframes);
  if (v->index.audio_pts)
    g_array_unref (v->index.audio_pts);
  g_free (v);
}

typedef struct
{
  /* the essential and enhanced sinks run in two streaming threads */
  GMutex lock;
  GstTwoflowProfile *profile;
  GstTwoflowSmoothing *smoothing;
  VideoInfo *v;
} ScanState;

static GstPadProbeReturn
scan_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  ScanState *st = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstTwoflowFrameHeader hdr;
  GstMapInfo map;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return GST_PAD_PROBE_OK;
  if (gst_twoflow_frame_header_parse (map.data, map.size, &hdr) !=
      GST_TWOFLOW_PARSE_OK) {
    gst_buffer_unmap (buf, &map);
    return GST_PAD_PROBE_OK;
  }
  /* audio: in the essential flow, counted in its rates */
  if (hdr.kind == GST_TWOFLOW_RECORD_AUDIO_CAPS && st->v->audio_codec == NULL) {
    gchar *str = g_strndup ((gchar *) map.data + GST_TWOFLOW_HEADER_SIZE,
        map.size - GST_TWOFLOW_HEADER_SIZE);
    GstCaps *caps = gst_caps_from_string (str);
    g_mutex_lock (&st->lock);
    st->v->audio_codec = caps ? audio_codec_name (caps) : g_strdup ("unknown");
    g_mutex_unlock (&st->lock);
    if (caps)
      gst_caps_unref (caps);
    g_free (str);
  }
  g_mutex_lock (&st->lock);
  gst_twoflow_profile_handle_record (st->profile, &hdr, map.size);
  /* the smoothing schedule: frames by decode time, audio (essential) by
   * its PTS; enhanced frames as the rUDP sender's bucket counts them */
  if (hdr.kind == GST_TWOFLOW_RECORD_FRAME
      || hdr.kind == GST_TWOFLOW_RECORD_AUDIO) {
    gboolean ess = hdr.kind == GST_TWOFLOW_RECORD_AUDIO
        || (hdr.flags & GST_TWOFLOW_FLAG_ESSENTIAL);
    GstClockTime t = hdr.kind == GST_TWOFLOW_RECORD_FRAME
        && GST_CLOCK_TIME_IS_VALID (hdr.dts) ? hdr.dts : hdr.pts;

    if (GST_CLOCK_TIME_IS_VALID (t))
      gst_twoflow_smoothing_add_frame (st->smoothing, t, ess ? map.size :
          gst_twoflow_smoothing_wire_bytes (map.size, ENHANCED_MTU), ess);
  }
  g_mutex_unlock (&st->lock);
  gst_buffer_unmap (buf, &map);
  return GST_PAD_PROBE_OK;
}

/* The scan's result into @v (rates bit/s, duration from the first
 * timestamp: a capture that starts hours in is not hours long). */
static void
video_info_set_profile (VideoInfo * v, GstTwoflowProfile * profile)
{
  GstTwoflowProfileInfo in;

  gst_twoflow_profile_get_info (profile, &in);
  v->frames = in.frames;
  v->ess_frames = in.essential_frames;
  v->enh_frames = in.enhanced_frames;
  v->audio_records = in.audio_records;
  v->bytes = in.bytes;
  v->ess_bytes = in.essential_bytes;
  v->enh_bytes = in.enhanced_bytes;
  v->audio_bytes = in.audio_bytes;
  v->duration = in.duration;
  v->peak_rate = in.peak_rate;
  v->mean_rate = in.mean_rate;
  v->ess_peak = in.essential_peak_rate;
  v->ess_mean = in.essential_mean_rate;
  v->enh_peak = in.enhanced_peak_rate;
  v->enh_mean = in.enhanced_mean_rate;
  v->audio_mean = in.audio_mean_rate;
  if (v->codec == NULL && in.frames > 0)
    v->codec = g_strdup (gst_twoflow_codec_to_string (in.codec));
  gst_twoflow_profile_levels (in.enhanced_mean_rate, in.enhanced_peak_rate,
      v->levels);
}

/* Reads the whole video once (parse only, no decoding) for its frame
 * count, duration and rates; cached per file and policy. */
static VideoInfo *
video_scan (const gchar * name, gint policy, const gchar * video_track,
    const gchar * audio_track, GError ** error)
{
  gchar *path, *key, *desc;
  VideoInfo *v;
  GstElement *pipe;
  GstMessage *msg;
  ScanState st = { 0, };
  GstElement *sink;
  GstPad *pad;
  gint i;

  if (name == NULL || strchr (name, '/') || name[0] == '.' || !*name) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "bad video name");
    return NULL;
  }
  path = g_build_filename (opt_dir, name, NULL);
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
        "no such video: %s", name);
    g_free (path);
    return NULL;
  }
  key = g_strdup_printf ("%s|%d|%s|%s", path, policy,
      video_track ? video_track : "", audio_track ? audio_track : "");
  v = g_hash_table_lookup (video_cache, key);
  if (v) {
    g_free (key);
    g_free (path);
    return v;
  }

  v = g_new0 (VideoInfo, 1);
  v->name = g_strdup (name);
  v->path = path;
  v->policy = policy;
  v->is_trace = g_str_has_suffix (name, ".txt");
  v->index.keyframes = g_array_new (FALSE, FALSE, sizeof (KeyFrame));
  v->index.audio_pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  v->video_track = g_strdup (video_track);
  v->audio_track = g_strdup (audio_track);
  if (v->is_trace)
    desc = g_strdup_printf ("twoflowtracesrc location=\"%s\" flow=all "
        "policy=%s ! fakesink name=all", path, policy ? "ip" : "i");
  else
    desc = g_strdup_printf ("twoflowsplit name=s policy=%s "
        "s.essential ! queue ! fakesink name=ess "
        "s.enhanced ! queue ! fakesink name=enh", policy ? "ip" : "i");
  pipe = gst_parse_launch (desc, error);
  g_free (desc);
  if (pipe && !v->is_trace) {
    GstElement *split = gst_bin_get_by_name (GST_BIN (pipe), "s");
    make_media_source (pipe, path, video_track, audio_track, 0, 0, &v->index,
        split, split);
    gst_object_unref (split);
  }
  if (pipe == NULL) {
    video_info_free (v);
    g_free (key);
    return NULL;
  }
  g_mutex_init (&st.lock);
  st.profile = gst_twoflow_profile_new (RATE_WINDOW);
  /* collects the frames; the schedules are made per window from it */
  v->smoothing = gst_twoflow_smoothing_new (GST_SECOND, 0, 1.0);
  st.smoothing = v->smoothing;
  st.v = v;
  for (i = 0; i < 3; i++) {
    const gchar *sn[] = { "all", "ess", "enh" };
    sink = gst_bin_get_by_name (GST_BIN (pipe), sn[i]);
    if (!sink)
      continue;
    pad = gst_element_get_static_pad (sink, "sink");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, scan_probe, &st, NULL);
    gst_object_unref (pad);
    gst_object_unref (sink);
  }
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  /* parsebin swallows a demuxer's error when it comes while parsebin is
   * still bringing the demuxer up (seen with a truncated MP4 now and then:
   * qtdemux paused, no message, the scan waited 120 s with the server's
   * main loop): a file that gives no stream within SCAN_STALL is refused */
  {
    gint waited = 0;
    MediaLink *ml = NULL;
    GstElement *pb = NULL;
    GstIterator *it = gst_bin_iterate_elements (GST_BIN (pipe));
    GValue item = G_VALUE_INIT;

    while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
      GstElement *e = g_value_get_object (&item);
      if (g_object_get_data (G_OBJECT (e), "media-link")) {
        pb = e;
        ml = g_object_get_data (G_OBJECT (e), "media-link");
      }
      g_value_reset (&item);
    }
    g_value_unset (&item);
    gst_iterator_free (it);
    while (!(msg = gst_bus_timed_pop_filtered (GST_ELEMENT_BUS (pipe),
                GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR))
        && ++waited < 120) {
      gboolean streams;

      if (!ml || waited < SCAN_STALL)
        continue;
      g_mutex_lock (&ml->lock);
      streams = ml->seen->len > 0;
      g_mutex_unlock (&ml->lock);
      if (!streams) {
        GError *e = g_error_new (GST_STREAM_ERROR, GST_STREAM_ERROR_DEMUX,
            "no playable streams: nothing demuxed in %d s", SCAN_STALL);
        msg = gst_message_new_error (GST_OBJECT (pb), e, NULL);
        g_error_free (e);
        break;
      }
    }
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  video_info_set_profile (v, st.profile);
  if (msg == NULL || GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR
      || v->frames == 0) {
    GError *err = NULL;
    if (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR)
      gst_message_parse_error (msg, &err, NULL);
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
        "cannot read %s: %s", name, err ? err->message :
        (msg ? "no video frames" : "timeout"));
    g_clear_error (&err);
    video_info_free (v);
    v = NULL;
  } else {
    g_hash_table_insert (video_cache, key, v);
    key = NULL;
  }
  if (msg)
    gst_message_unref (msg);
  gst_object_unref (pipe);
  gst_twoflow_profile_free (st.profile);
  g_mutex_clear (&st.lock);
  g_free (key);
  return v;
}

/* Seeking: the PTS of the key frame at or before @start (s from the
 * first key frame), which becomes that key frame's time in s; 0 (the
 * beginning) when there is none before it. @frames, @audio: the video
 * frames and audio buffers from there. */
static GstClockTime
video_start_pts (VideoInfo * v, gdouble * start, guint64 * frames,
    guint64 * audio, GstClockTime * rt)
{
  GArray *kf = v->index.keyframes;
  GstClockTime first, want, pts = 0;
  guint64 before = 0;
  guint i;

  *frames = v->frames;
  *audio = v->audio_records;
  if (!kf || kf->len == 0) {
    *start = 0;
    return 0;
  }
  first = g_array_index (kf, KeyFrame, 0).pts;
  want = first + (GstClockTime) (*start * GST_SECOND);
  *start = 0;
  for (i = 1; i < kf->len; i++) {
    KeyFrame *k = &g_array_index (kf, KeyFrame, i);
    if (k->pts <= want && k->pts > first && k->pts >= pts) {
      pts = k->pts;
      before = k->index;
      *rt = k->rt;
      *start = (gdouble) (k->pts - first) / GST_SECOND;
    }
  }
  if (pts == 0)
    return 0;
  *frames = v->frames > before ? v->frames - before : 0;
  *audio = 0;
  for (i = 0; i < v->index.audio_pts->len; i++)
    if (g_array_index (v->index.audio_pts, GstClockTime, i) >= pts)
      (*audio)++;
  return pts;
}

static GstPadProbeReturn
catalog_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  g_atomic_int_set ((gint *) data, 1);
  return GST_PAD_PROBE_OK;
}

/* The catalog's key of a file: name, size, modification time (a changed
 * file is looked at again); NULL: not a regular file. */
static gchar *
catalog_key (const gchar * name)
{
  gchar *path = g_build_filename (opt_dir, name, NULL);
  GStatBuf st;
  gchar *key = NULL;

  if (g_stat (path, &st) == 0 && S_ISREG (st.st_mode))
    key = g_strdup_printf ("%s|%" G_GINT64_FORMAT "|%" G_GINT64_FORMAT, name,
        (gint64) st.st_size, (gint64) st.st_mtime);
  g_free (path);
  return key;
}

/* The catalog's scan of one file (@key: catalog_key), in the catalog's
 * thread: whether it demuxes to a video the split takes (its first buffer
 * reaches the split's place), or why not, in the words a session would
 * fail with. */
static void
catalog_scan (gpointer data, gpointer unused)
{
  gchar *key = data;
  gchar *name = g_strndup (key, strchr (key, '|') - key);
  gchar *path = g_build_filename (opt_dir, name, NULL);
  gchar *reason = NULL;
  GstElement *pipe, *sink;
  GstPad *pad;
  gint got = 0, waited;

  if (g_str_has_suffix (name, ".txt")) {
    /* a frame trace: twoflowtracesrc replays it */
  } else {
    pipe = gst_pipeline_new ("catalog");
    sink = gst_element_factory_make ("fakesink", NULL);
    g_object_set (sink, "sync", FALSE, NULL);
    gst_bin_add (GST_BIN (pipe), sink);
    make_media_source (pipe, path, NULL, NULL, 0, 0, NULL, sink, NULL);
    pad = gst_element_get_static_pad (sink, "sink");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, catalog_probe, &got,
        NULL);
    gst_object_unref (pad);
    gst_element_set_state (pipe, GST_STATE_PLAYING);
    for (waited = 0; !g_atomic_int_get (&got) && !reason; waited++) {
      GstMessage *msg = gst_bus_timed_pop_filtered (GST_ELEMENT_BUS (pipe),
          100 * GST_MSECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);

      if (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
        GError *err = NULL;
        gst_message_parse_error (msg, &err, NULL);
        reason = g_strdup (err->message);
        g_error_free (err);
      } else if (msg && !g_atomic_int_get (&got)) {
        reason = g_strdup ("no video frames");
      } else if (!msg && waited >= SCAN_STALL * 10) {
        reason = g_strdup_printf ("no playable streams: nothing demuxed in "
            "%d s", SCAN_STALL);
      }
      if (msg)
        gst_message_unref (msg);
    }
    gst_element_set_state (pipe, GST_STATE_NULL);
    gst_object_unref (pipe);
  }
  if (reason)
    g_print ("catalog: %s cannot play: %s\n", name, reason);
  g_mutex_lock (&catalog_lock);
  g_hash_table_remove (catalog_pending, key);
  g_hash_table_insert (catalog, key, reason ? reason : g_strdup (""));
  g_mutex_unlock (&catalog_lock);
  g_free (path);
  g_free (name);
}

/* The catalog (LIST): why @name cannot play (a copy, NULL: it plays);
 * *@checking: not known yet (its scan is queued: the catalog's thread
 * looks at each file once, so a LIST never waits for a scan). */
static gchar *
catalog_reason (const gchar * name, gboolean * checking)
{
  gchar *key = catalog_key (name);
  const gchar *known;
  gchar *reason = NULL;

  *checking = FALSE;
  if (!key)
    return g_strdup ("not a regular file");
  g_mutex_lock (&catalog_lock);
  if ((known = g_hash_table_lookup (catalog, key))) {
    reason = *known ? g_strdup (known) : NULL;
    g_free (key);
  } else {
    *checking = TRUE;
    if (!g_hash_table_contains (catalog_pending, key)) {
      g_hash_table_add (catalog_pending, g_strdup (key));
      g_thread_pool_push (catalog_pool, key, NULL);
    } else {
      g_free (key);
    }
  }
  g_mutex_unlock (&catalog_lock);
  return reason;
}

/* every file of --dir into the catalog's queue (at start: the page's
 * first list is complete) */
static void
catalog_queue_all (void)
{
  GDir *d = g_dir_open (opt_dir, 0, NULL);
  const gchar *n;
  gboolean checking;

  while (d && (n = g_dir_read_name (d)))
    if (n[0] != '.')
      g_free (catalog_reason (n, &checking));
  if (d)
    g_dir_close (d);
}

static void
video_info_to_json (VideoInfo * v, JsonObject * o)
{
  JsonArray *lv = json_array_new ();
  gint i;

  json_object_set_string_member (o, "video", v->name);
  json_object_set_string_member (o, "kind", v->is_trace ? "trace" : "mpeg");
  json_object_set_string_member (o, "codec", v->codec ? v->codec : "unknown");
  json_object_set_string_member (o, "policy", v->policy ? "ip" : "i");
  json_object_set_int_member (o, "frames", v->frames);
  json_object_set_int_member (o, "essential_frames", v->ess_frames);
  json_object_set_int_member (o, "enhanced_frames", v->enh_frames);
  json_object_set_int_member (o, "bytes", v->bytes);
  json_object_set_double_member (o, "duration", v->duration / 1e9);
  json_object_set_int_member (o, "peak_rate", v->peak_rate);
  json_object_set_int_member (o, "mean_rate", v->mean_rate);
  json_object_set_int_member (o, "essential_peak_rate", v->ess_peak);
  json_object_set_int_member (o, "essential_mean_rate", v->ess_mean);
  json_object_set_int_member (o, "enhanced_peak_rate", v->enh_peak);
  json_object_set_int_member (o, "enhanced_mean_rate", v->enh_mean);
  /* the audio travels in the essential flow: its bytes are in the
   * essential (and total) rates above */
  json_object_set_string_member (o, "audio_codec",
      v->audio_codec ? v->audio_codec : "none");
  json_object_set_int_member (o, "audio_records", v->audio_records);
  json_object_set_int_member (o, "audio_bytes", v->audio_bytes);
  json_object_set_int_member (o, "audio_mean_rate", v->audio_mean);
  if (v->video_track)
    json_object_set_string_member (o, "video_track", v->video_track);
  if (v->audio_track)
    json_object_set_string_member (o, "audio_track", v->audio_track);
  /* the control protocol's levels are bytes/s */
  for (i = 0; i < GST_TWOFLOW_PROFILE_N_LEVELS; i++)
    json_array_add_int_element (lv, v->levels[i] / 8);
  json_object_set_array_member (o, "levels", lv);
}

static void
schedule_free (Schedule * sc)
{
  gst_twoflow_smoothing_free (sc->sm);
  g_free (sc);
}

static gboolean
pacing_total (void)
{
  return g_str_equal (opt_enhanced_rate, "total");
}

/* The smoothing lead: --smoothing-lead, default the window */
static gdouble
smoothing_lead_for (gdouble w)
{
  return opt_smoothing_lead >= 0 ? opt_smoothing_lead : w;
}

/* The enhanced flow's smoothing schedule for sessions with segments of
 * @segment_duration s: window --smoothing-window (default the segment
 * duration, at most 60 s), lead --smoothing-lead (default the window);
 * made once per video, window and lead. --enhanced-rate total: lead
 * @lead (the session's playback lead), and the essential flow's cTCP
 * targets from segment @skip on, one per window (compute_total(): the
 * enhanced flow starts with the essential one); @slead >= 0: that
 * smoothing lead (the start-up ramp's); the window is the time the
 * essential flow takes for a segment: cTCP (@essential "ctcp") has every
 * segment of a stored video ready and sends them back to back, each at
 * S/(T(1−p̂)) for T(1−p̂); TCP is handed segment k at kT (window T). */
static Schedule *
video_schedule_for (VideoInfo * v, gdouble segment_duration, gdouble lead,
    gint skip, const gchar * essential, gdouble slead)
{
  gboolean total = pacing_total ();
  gdouble w = total ? segment_duration * (g_strcmp0 (essential, "ctcp") == 0
      ? 1 - CTCP_P_HAT : 1) :
      opt_smoothing_window > 0 ? opt_smoothing_window :
      MIN (segment_duration > 0 ? segment_duration :
      DEFAULT_SEGMENT_DURATION, 60.0);
  gdouble l = total ? lead : slead >= 0 ? slead : smoothing_lead_for (w);
  gchar *key = g_strdup_printf ("%s/%.6f/%.6f/%.6f/%d", total ? "total" :
      "window", w, l, segment_duration, total ? skip : 0);
  Schedule *sc;

  if (!v->schedules)
    v->schedules = g_hash_table_new_full (g_str_hash, g_str_equal,
        g_free, (GDestroyNotify) schedule_free);
  sc = g_hash_table_lookup (v->schedules, key);
  if (sc) {
    g_free (key);
    return sc;
  }
  sc = g_new0 (Schedule, 1);
  sc->sm = gst_twoflow_smoothing_new_from (v->smoothing,
      (GstClockTime) (w * GST_SECOND), (GstClockTime) (l * GST_SECOND),
      SMOOTHING_HEADROOM);
  if (total) {
    guint n, k;
    /* the essential bytes of segment k over its window: cTCP's target
     * S/(T(1−p̂)); TCP's mean over its slot, S/T */
    guint64 *seg = gst_twoflow_smoothing_segment_rates (v->smoothing,
        (GstClockTime) (segment_duration * GST_SECOND),
        g_strcmp0 (essential, "ctcp") == 0 ? CTCP_P_HAT : 0, &n);

    k = MIN ((guint) MAX (skip, 0), n);
    gst_twoflow_smoothing_compute_total (sc->sm, seg + k, n - k);
    g_free (seg);
  } else {
    gst_twoflow_smoothing_compute (sc->sm);
  }
  gst_twoflow_smoothing_get_info (sc->sm, &sc->info);
  g_hash_table_insert (v->schedules, key, sc);
  GST_INFO ("%s: smoothing W %.1f s, L %.1f s: %u windows, %" G_GUINT64_FORMAT
      "..%" G_GUINT64_FORMAT " bit/s (mean %" G_GUINT64_FORMAT "), %"
      G_GUINT64_FORMAT " late, total %" G_GUINT64_FORMAT
      " bit/s, playout %.1f s", v->name, w, l, sc->info.n_windows,
      sc->info.min_rate, sc->info.max_rate, sc->info.mean_rate,
      sc->info.late_frames, sc->info.total_rate, sc->info.max_playout / 1e9);
  return sc;
}

/* The start-up ramp of a session without a prefix (docs/system.md,
 * "Start-up"): the essential cTCP flow sent at a catch-up rate until it is
 * a segment ahead, and playback after the shortest lead for which every
 * essential record of the ramp is there STARTUP_MARGIN before it plays;
 * made once per video and segment duration. NULL: no ramp (--startup
 * segment, --enhanced-rate total, or a lead no shorter than a segment:
 * the segment's stagger is as quick). */
static const GstTwoflowStartupPlan *
video_startup (VideoInfo * v, gdouble segment_duration)
{
  GstTwoflowStartupPlan *plan;
  GstTwoflowStartupConfig cfg = { 0, };
  GArray *rec;
  gchar *key;
  guint i, n;

  if (!g_str_equal (opt_startup, "ramp") || pacing_total ()
      || segment_duration <= 0)
    return NULL;
  if (!v->startups)
    v->startups = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
        g_free);
  key = g_strdup_printf ("%.6f", segment_duration);
  if (g_hash_table_lookup_extended (v->startups, key, NULL,
          (gpointer *) & plan)) {
    g_free (key);
    return plan;
  }
  rec = g_array_new (FALSE, FALSE, sizeof (GstTwoflowStartupRecord));
  cfg.start = GST_CLOCK_TIME_NONE;
  n = gst_twoflow_smoothing_n_frames (v->smoothing);
  for (i = 0; i < n; i++) {
    GstTwoflowStartupRecord r;
    gboolean ess;

    gst_twoflow_smoothing_get_frame (v->smoothing, i, &r.ts, &r.bytes, &ess);
    cfg.start = MIN (cfg.start, r.ts);
    if (ess)
      g_array_append_val (rec, r);
  }
  cfg.segment_duration = segment_duration * GST_SECOND;
  cfg.p_hat = CTCP_P_HAT;
  cfg.factor = opt_startup_factor;
  /* default ceiling: the video's own 1 s peak, what a session of it may
   * send anyway */
  cfg.max_rate = opt_startup_max_rate > 0 ? (guint64) opt_startup_max_rate :
      v->peak_rate;
  cfg.target_lead = opt_startup_lead * GST_SECOND;
  cfg.margin = STARTUP_MARGIN * GST_SECOND;
  plan = g_new0 (GstTwoflowStartupPlan, 1);
  if (rec->len == 0 || !gst_twoflow_startup_plan ((GstTwoflowStartupRecord *)
          rec->data, rec->len, &cfg, plan)
      || plan->lead >= cfg.segment_duration) {
    g_free (plan);
    plan = NULL;
  }
  g_array_free (rec, TRUE);
  if (plan)
    GST_INFO ("%s: start-up ramp for %.1f s segments: %" G_GUINT64_FORMAT
        " bit/s, lead %.3f s, %u segment(s), a segment ahead at %.1f s",
        v->name, segment_duration, plan->rate, plan->lead / 1e9,
        plan->ramp_segments, GST_CLOCK_TIME_IS_VALID (plan->ahead_at) ?
        plan->ahead_at / 1e9 : -1.0);
  g_hash_table_insert (v->startups, key, plan);
  return plan;
}

/* The schedule INFO reports (no session yet): no prefix; playback one
 * segment after the essential flow starts, or after the start-up ramp's
 * lead, the enhanced flow sent that lead ahead */
static Schedule *
video_schedule (VideoInfo * v, gdouble segment_duration)
{
  const GstTwoflowStartupPlan *plan = video_startup (v, segment_duration);

  return video_schedule_for (v, segment_duration, pacing_total ()?
      MAX (segment_duration, smoothing_lead_for (segment_duration)) : 0, 0,
      "ctcp", plan ? plan->lead / 1e9 : -1);
}

/* The proxy's playout buffer for a schedule, s: the lead or, when the
 * flow is sent further ahead (total), the longest a frame waits */
static gdouble
schedule_playout (Schedule * sc)
{
  return MAX (sc->info.lead, sc->info.max_playout) / 1e9;
}

/* The smoothed rates (docs/system.md, "Enhanced-flow smoothing"): the
 * enhanced flow's rate per window and, for segments of @segment_duration
 * s (> 0; else the default), the essential flow's cTCP target per
 * segment. */
static void
video_info_rates_to_json (VideoInfo * v, JsonObject * o,
    gdouble segment_duration, Schedule * sc)
{
  JsonArray *a = json_array_new ();
  const guint64 *r;
  guint n, i;

  if (segment_duration <= 0)
    segment_duration = DEFAULT_SEGMENT_DURATION;
  if (!sc)
    sc = video_schedule (v, segment_duration);

  json_object_set_string_member (o, "enhanced_rate", opt_enhanced_rate);
  {
    /* a session without a prefix: playback after this lead, the
     * essential flow's start-up ramp at this rate (0: none, lead T) */
    const GstTwoflowStartupPlan *plan = video_startup (v, segment_duration);

    json_object_set_double_member (o, "startup_lead", plan ?
        plan->lead / 1e9 : segment_duration);
    json_object_set_int_member (o, "startup_rate", plan ? plan->rate : 0);
  }
  json_object_set_double_member (o, "smoothing_window",
      sc->info.window / 1e9);
  json_object_set_double_member (o, "smoothing_lead", sc->info.lead / 1e9);
  json_object_set_int_member (o, "enhanced_smoothed_peak_rate",
      sc->info.max_rate);
  json_object_set_int_member (o, "smoothing_late_frames",
      sc->info.late_frames);
  json_object_set_int_member (o, "smoothing_playout_bytes",
      sc->info.max_playout_bytes);
  json_object_set_int_member (o, "smoothing_backlog_bytes",
      sc->info.max_backlog_bytes);
  json_object_set_double_member (o, "smoothing_max_playout",
      sc->info.max_playout / 1e9);
  /* total: the session's constant rate (essential + enhanced) */
  if (sc->info.total_rate)
    json_object_set_int_member (o, "total_rate", sc->info.total_rate);
  json_object_set_double_member (o, "playout_depth", schedule_playout (sc));
  r = gst_twoflow_smoothing_get_rates (sc->sm, &n);
  for (i = 0; i < n; i++)
    json_array_add_int_element (a, r[i]);
  json_object_set_array_member (o, "enhanced_window_rates", a);
  {
    guint64 *seg = gst_twoflow_smoothing_segment_rates (v->smoothing,
        segment_duration * GST_SECOND, CTCP_P_HAT, &n);

    a = json_array_new ();
    for (i = 0; i < n; i++)
      json_array_add_int_element (a, seg[i]);
    json_object_set_array_member (o, "essential_segment_rates", a);
    json_object_set_double_member (o, "segment_duration", segment_duration);
    g_free (seg);
  }
}

static gchar *
levels_string (VideoInfo * v)
{
  GString *s = g_string_new ("<");
  gint i;
  for (i = 0; i < GST_TWOFLOW_PROFILE_N_LEVELS; i++)
    g_string_append_printf (s, "%s(guint64)%" G_GUINT64_FORMAT,
        i ? "," : "", v->levels[i]);
  g_string_append (s, ">");
  return g_string_free (s, FALSE);
}

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
  catalog = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  catalog_pending = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  catalog_pool = g_thread_pool_new (catalog_scan, NULL, 1, FALSE, NULL);
  video_cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      (GDestroyNotify) video_info_free);
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
