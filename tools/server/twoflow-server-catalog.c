/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the catalog: the videos of --dir, each scanned once for
 * its profile (rates, frames, key frames), and which of them cannot play
 * (looked at in the catalog's thread)
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

#include <string.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <gst/gst.h>
#include <gst/twoflow/twoflowframe.h>
#include "twoflow-protocol.h"
#include "twoflow-server-catalog.h"
#include "twoflow-server-options.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_catalog_debug);
#define GST_CAT_DEFAULT twoflow_server_catalog_debug

#define RATE_WINDOW GST_SECOND
#define SCAN_STALL 5            /* s without a demuxed stream: refused */

static GHashTable *video_cache;         /* "path|policy" -> VideoInfo */
static GHashTable *catalog;     /* "name|size|mtime" -> why it cannot play
                                 * ("": it can); under catalog_lock */
static GHashTable *catalog_pending;     /* keys being looked at */
static GHashTable *catalog_codec;       /* "name|size|mtime" -> the video's
                                         * codec (twoflowframe's names) */
static GMutex catalog_lock;
static GThreadPool *catalog_pool;       /* one thread: the catalog's scans */

void
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
      gst_twoflow_smoothing_handle_frame (st->smoothing, t, ess ? map.size :
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
VideoInfo *
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
    GstElement *pb = media_source_find (pipe);

    while (!(msg = gst_bus_timed_pop_filtered (GST_ELEMENT_BUS (pipe),
                GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR))
        && ++waited < 120) {
      if (!pb || waited < SCAN_STALL)
        continue;
      if (!media_source_seen_streams (pb)) {
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
GstClockTime
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

/* twoflowframe's name of the video codec of @caps (NULL: none of them) */
static gchar *
codec_of_caps (GstCaps * caps)
{
  const GstStructure *st = caps ? gst_caps_get_structure (caps, 0) : NULL;
  gint v = 2;

  if (!st)
    return NULL;
  if (gst_structure_has_name (st, "video/mpeg")) {
    gst_structure_get_int (st, "mpegversion", &v);
    return g_strdup (v == 1 ? "mpeg1" : "mpeg2");
  }
  if (gst_structure_has_name (st, "video/x-h264"))
    return g_strdup ("h264");
  if (gst_structure_has_name (st, "video/x-h265"))
    return g_strdup ("h265");
  if (gst_structure_has_name (st, "video/x-av1"))
    return g_strdup ("av1");
  return NULL;
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
  gchar *reason = NULL, *codec = NULL;
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
    if (!reason) {
      GstCaps *caps = gst_pad_get_current_caps (pad);

      codec = codec_of_caps (caps);
      if (caps)
        gst_caps_unref (caps);
    }
    gst_object_unref (pad);
    gst_element_set_state (pipe, GST_STATE_NULL);
    gst_object_unref (pipe);
  }
  if (reason)
    g_print ("catalog: %s cannot play: %s\n", name, reason);
  g_mutex_lock (&catalog_lock);
  g_hash_table_remove (catalog_pending, key);
  if (codec)
    g_hash_table_insert (catalog_codec, g_strdup (key), codec);
  g_hash_table_insert (catalog, key, reason ? reason : g_strdup (""));
  g_mutex_unlock (&catalog_lock);
  g_free (path);
  g_free (name);
}

/* The catalog (LIST): why @name cannot play (a copy, NULL: it plays);
 * *@checking: not known yet (its scan is queued: the catalog's thread
 * looks at each file once, so a LIST never waits for a scan). */
gchar *
catalog_reason (const gchar * name, gboolean * checking, gchar ** codec)
{
  gchar *key = catalog_key (name);
  const gchar *known;
  gchar *reason = NULL;

  *checking = FALSE;
  if (codec)
    *codec = NULL;
  if (!key)
    return g_strdup ("not a regular file");
  g_mutex_lock (&catalog_lock);
  if ((known = g_hash_table_lookup (catalog, key))) {
    reason = *known ? g_strdup (known) : NULL;
    if (codec)
      *codec = g_strdup (g_hash_table_lookup (catalog_codec, key));
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
void
catalog_queue_all (void)
{
  GDir *d = g_dir_open (opt_dir, 0, NULL);
  const gchar *n;
  gboolean checking;

  while (d && (n = g_dir_read_name (d)))
    if (n[0] != '.')
      g_free (catalog_reason (n, &checking, NULL));
  if (d)
    g_dir_close (d);
}

/* How long the audio starts before the first picture (0: it does not) */
GstClockTime
video_audio_lead (const VideoInfo * v)
{
  if (GST_CLOCK_TIME_IS_VALID (v->index.first_video_rt)
      && GST_CLOCK_TIME_IS_VALID (v->index.first_audio_rt)
      && v->index.first_audio_rt < v->index.first_video_rt)
    return v->index.first_video_rt - v->index.first_audio_rt;
  return 0;
}

/* The audio lead a session from the start sends ahead of the first
 * picture: up to TWOFLOW_AUDIO_LEAD_EARLY_MAX (0: none) */
GstClockTime
video_audio_lead_early (const VideoInfo * v)
{
  GstClockTime a = video_audio_lead (v);

  return a <= TWOFLOW_AUDIO_LEAD_EARLY_MAX * GST_SECOND ? a : 0;
}

void
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
  /* how long the audio starts before the first picture (the proxy's
   * MPEG-TS carries the clock on the audio then) */
  json_object_set_double_member (o, "audio_lead", video_audio_lead (v) / 1e9);
  if (v->video_track)
    json_object_set_string_member (o, "video_track", v->video_track);
  if (v->audio_track)
    json_object_set_string_member (o, "audio_track", v->audio_track);
  /* the control protocol's levels are bytes/s */
  for (i = 0; i < GST_TWOFLOW_PROFILE_N_LEVELS; i++)
    json_array_add_int_element (lv, v->levels[i] / 8);
  json_object_set_array_member (o, "levels", lv);
}

gchar *
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

/* How many scans the cache holds (/metrics) */
guint
catalog_n_scanned (void)
{
  return g_hash_table_size (video_cache);
}

/* SIGHUP: the scans not in @used (VideoInfo set) are forgotten; how
 * many */
guint
catalog_forget_unused (GHashTable * used)
{
  GHashTableIter it;
  gpointer k, v;
  guint n = 0;

  g_hash_table_iter_init (&it, video_cache);
  while (g_hash_table_iter_next (&it, &k, &v))
    if (!g_hash_table_contains (used, v)) {
      g_hash_table_iter_remove (&it);
      n++;
    }
  return n;
}

/* The catalog's tables and its one scanning thread */
void
twoflow_server_catalog_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_server_catalog_debug,
      "twoflow-server-catalog", 0, "twoflow-server: videos and their scans");
  catalog = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  catalog_codec = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      g_free);
  catalog_pending = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  catalog_pool = g_thread_pool_new (catalog_scan, NULL, 1, FALSE, NULL);
  video_cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      (GDestroyNotify) video_info_free);
}
