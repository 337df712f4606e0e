/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: tests of the twoflowsplit element */
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/codecparsers/gstmpegvideoparser.h>
#include <gst/twoflow/twoflowframe.h>

#include "twoflowtestutil.h"

typedef struct {
  GstTwoflowFrameHeader hdr;
  gsize payload_size;
  gchar type_from_payload;
} Rec;

/* The picture type straight from the MPEG picture header, for comparison. */
static gchar
mpeg_type (GstBuffer * payload)
{
  GstMpegVideoPacket pkt;
  GstMapInfo map;
  gchar t = '?';
  guint off = 0;

  gst_buffer_map (payload, &map, GST_MAP_READ);
  while (gst_mpeg_video_parse (&pkt, map.data, map.size, off)) {
    if (pkt.type == GST_MPEG_VIDEO_PACKET_PICTURE) {
      GstMpegVideoPictureHdr ph;

      if (gst_mpeg_video_packet_parse_picture_header (&pkt, &ph))
        t = " IPB"[ph.pic_type & 3];
      break;
    }
    off = pkt.offset;
  }
  gst_buffer_unmap (payload, &map);
  return t;
}

/* Splits @media (through @pre, elements before the split, when not NULL)
 * and returns the records of each flow. */
static void
split_records_with (const gchar * media, const gchar * pre,
    const gchar * props, GArray * ess, GArray * enh)
{
  gchar *desc = g_strdup_printf ("filesrc location=%s ! %s ! %s%s"
      "twoflowsplit %s name=s s.essential ! queue ! appsink name=e sync=false "
      "s.enhanced ! queue ! appsink name=n sync=false", media,
      twoflow_test_parser_for (media), pre ? pre : "", pre ? " ! " : "",
      props);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *sinks[2] = { gst_bin_get_by_name (GST_BIN (pipeline), "e"),
    gst_bin_get_by_name (GST_BIN (pipeline), "n")
  };
  GArray *out[2] = { ess, enh };
  gchar *err = NULL;
  guint i;

  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  for (i = 0; i < 2; i++) {
    GstSample *sample;
    GstTwoflowParser *p = gst_twoflow_parser_new ();

    while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sinks[i])))) {
      GstBuffer *payload;
      Rec r;

      /* packetized: every buffer is exactly one record */
      gst_twoflow_parser_push (p, gst_buffer_ref (gst_sample_get_buffer
              (sample)));
      fail_unless_equals_int (gst_twoflow_parser_pop (p, &r.hdr, &payload),
          GST_TWOFLOW_PARSE_OK);
      fail_unless_equals_int (gst_twoflow_parser_available (p), 0);
      r.payload_size = gst_buffer_get_size (payload);
      r.type_from_payload = r.hdr.kind == GST_TWOFLOW_RECORD_FRAME &&
          r.hdr.codec != GST_TWOFLOW_CODEC_H264 ? mpeg_type (payload) : 0;
      if (r.hdr.kind == GST_TWOFLOW_RECORD_CAPS) {
        GstCaps *caps;
        GstMapInfo map;
        gchar *str;

        gst_buffer_map (payload, &map, GST_MAP_READ);
        str = g_strndup ((gchar *) map.data, map.size);
        caps = gst_caps_from_string (str);
        fail_unless (caps != NULL, "bad caps record %s", str);
        fail_unless (gst_caps_is_fixed (caps));
        gst_caps_unref (caps);
        g_free (str);
        gst_buffer_unmap (payload, &map);
      }
      gst_buffer_unref (payload);
      g_array_append_val (out[i], r);
      gst_sample_unref (sample);
    }
    gst_twoflow_parser_free (p);
  }
  fail_unless (gst_app_sink_is_eos (GST_APP_SINK (sinks[0])));
  gst_element_set_state (pipeline, GST_STATE_NULL);
  fail_if (err);
  gst_object_unref (sinks[0]);
  gst_object_unref (sinks[1]);
  gst_object_unref (pipeline);
  g_free (desc);
}

static void
split_records (const gchar * media, const gchar * props, GArray * ess,
    GArray * enh)
{
  split_records_with (media, NULL, props, ess, enh);
}

/* Checks both flows against each other and returns the pattern of picture
 * types in decode order. */
static gchar *
check_flows (GArray * ess, GArray * enh, gboolean policy_ip)
{
  GArray *flows[2] = { ess, enh };
  guint total, i, f, n;
  gchar *pattern;
  GstTwoflowFrameHeader *all;

  for (f = 0; f < 2; f++) {
    GArray *a = flows[f];

    fail_unless (a->len >= 2);
    fail_unless_equals_int (g_array_index (a, Rec, 0).hdr.kind,
        GST_TWOFLOW_RECORD_CAPS);
    fail_unless_equals_int (g_array_index (a, Rec, a->len - 1).hdr.kind,
        GST_TWOFLOW_RECORD_END);
  }
  total = g_array_index (ess, Rec, ess->len - 1).hdr.frame_no;
  fail_unless_equals_int (g_array_index (enh, Rec, enh->len - 1).hdr.frame_no,
      total);
  fail_unless_equals_int (total, ess->len - 2 + enh->len - 2);

  all = g_new0 (GstTwoflowFrameHeader, total);
  pattern = g_malloc0 (total + 1);
  for (f = 0; f < 2; f++) {
    guint32 prev = GST_TWOFLOW_NO_FRAME;

    for (i = 1; i + 1 < flows[f]->len; i++) {
      Rec *r = &g_array_index (flows[f], Rec, i);
      gboolean essential = r->hdr.picture_type == GST_TWOFLOW_PICTURE_I ||
          (policy_ip && r->hdr.picture_type == GST_TWOFLOW_PICTURE_P);

      fail_unless_equals_int (r->hdr.kind, GST_TWOFLOW_RECORD_FRAME);
      fail_unless (r->hdr.frame_no < total);
      fail_unless (prev == GST_TWOFLOW_NO_FRAME || r->hdr.frame_no > prev);
      prev = r->hdr.frame_no;
      fail_unless_equals_int (essential, f == 0);
      fail_unless_equals_int (! !(r->hdr.flags & GST_TWOFLOW_FLAG_ESSENTIAL),
          f == 0);
      if (r->type_from_payload)
        fail_unless_equals_int (r->type_from_payload,
            gst_twoflow_picture_type_to_char (r->hdr.picture_type));
      fail_unless (pattern[r->hdr.frame_no] == 0, "frame twice");
      pattern[r->hdr.frame_no] =
          gst_twoflow_picture_type_to_char (r->hdr.picture_type);
      all[r->hdr.frame_no] = r->hdr;
    }
  }
  fail_unless_equals_int (strlen (pattern), total);

  /* GOP numbers, the history and (MPEG) references agree with the pattern */
  for (n = 0; n < total; n++) {
    guint gops = 0, age;

    for (i = 1; i <= n; i++)
      gops += pattern[i] == 'I';
    fail_unless_equals_int (all[n].gop_no, gops);
    for (age = 1; age <= MIN (n, GST_TWOFLOW_HISTORY_LEN); age++) {
      GstTwoflowPictureType t;
      gboolean ref;

      fail_unless (gst_twoflow_history_get (all[n].history, age, &t, &ref));
      fail_unless_equals_int (gst_twoflow_picture_type_to_char (t),
          pattern[n - age]);
      fail_unless_equals_int (ref, ! !(all[n - age].flags &
              GST_TWOFLOW_FLAG_REFERENCE));
    }
    if (all[n].codec != GST_TWOFLOW_CODEC_H264) {
      gint last = -1, prev = -1;

      for (i = 0; i < n; i++)
        if (pattern[i] != 'B') {
          prev = last;
          last = i;
        }
      fail_unless_equals_int (! !(all[n].flags & GST_TWOFLOW_FLAG_REFERENCE),
          pattern[n] != 'B');
      gint want = pattern[n] == 'I' ? (gint) n : pattern[n] == 'P' ? last :
          (prev >= 0 ? prev : last);

      fail_unless_equals_int (all[n].depends_from, want);
    } else if (pattern[n] != 'I') {
      fail_unless (all[n].depends_from < n);
    }
  }
  g_free (all);
  return pattern;
}

GST_START_TEST (test_split_greyramp)
{
  gchar *media = twoflow_test_greyramp ();
  GArray *ess = g_array_new (FALSE, TRUE, sizeof (Rec));
  GArray *enh = g_array_new (FALSE, TRUE, sizeof (Rec));
  gchar *pattern;

  split_records (media, "", ess, enh);
  pattern = check_flows (ess, enh, FALSE);
  fail_unless_equals_int (strlen (pattern), 25);
  fail_unless (g_str_has_prefix (pattern, "IPBB"), "pattern %s", pattern);
  g_free (pattern);
  g_array_free (ess, TRUE);
  g_array_free (enh, TRUE);
  g_free (media);
}

GST_END_TEST;

GST_START_TEST (test_split_policy_ip_and_segments)
{
  gchar *media = twoflow_test_generated_mpeg2 ();
  GArray *ess = g_array_new (FALSE, TRUE, sizeof (Rec));
  GArray *enh = g_array_new (FALSE, TRUE, sizeof (Rec));
  gchar *pattern;
  guint i, pcount = 0, bcount = 0;

  /* segments of 1 s at 25 fps: 25 frames each (timestamps from DTS) */
  split_records (media, "policy=ip segment-duration=1000000000", ess, enh);
  pattern = check_flows (ess, enh, TRUE);
  fail_unless_equals_int (strlen (pattern), 336);
  for (i = 0; pattern[i]; i++) {
    pcount += pattern[i] == 'P';
    bcount += pattern[i] == 'B';
  }
  /* 28 GOPs of 12; mpeg2enc may end a GOP early with a P */
  fail_unless_equals_int (336 - pcount - bcount, 28);
  fail_unless (pcount >= 28 * 3 && bcount >= 28 * 7, "%s", pattern);
  for (i = 1; i + 1 < ess->len; i++) {
    GstTwoflowFrameHeader *h = &g_array_index (ess, Rec, i).hdr;

    fail_unless_equals_int (h->segment_no,
        (h->dts - g_array_index (ess, Rec, 1).hdr.dts) / GST_SECOND);
  }
  fail_unless_equals_int (g_array_index (ess, Rec, ess->len - 2).hdr.segment_no,
      13);
  g_free (pattern);
  g_array_free (ess, TRUE);
  g_array_free (enh, TRUE);
  g_free (media);
}

GST_END_TEST;

GST_START_TEST (test_split_h264)
{
  gchar *media = twoflow_test_generated_h264 ();
  GArray *ess = g_array_new (FALSE, TRUE, sizeof (Rec));
  GArray *enh = g_array_new (FALSE, TRUE, sizeof (Rec));
  gchar *pattern;
  guint i, counts[128] = { 0 };

  split_records (media, "", ess, enh);
  pattern = check_flows (ess, enh, FALSE);
  fail_unless_equals_int (strlen (pattern), 300);
  for (i = 0; pattern[i]; i++)
    counts[(guint) pattern[i]]++;
  /* key-int-max=30: an I frame at least every 30 frames; B frames present */
  fail_unless (counts['I'] >= 10, "%u I frames", counts['I']);
  fail_unless (counts['B'] > 50, "%u B frames", counts['B']);
  fail_unless (counts['P'] > 20, "%u P frames", counts['P']);
  g_free (pattern);
  g_array_free (ess, TRUE);
  g_array_free (enh, TRUE);
  g_free (media);
}

GST_END_TEST;

/* Pictures ratetranscoder drops (keep=i, low target) leave dropped-frame
 * events: the split numbers them, so every frame that leaves has the
 * number the split of the unaltered source gives it (the essential flow of
 * the server is split from the source) and the end record counts all. */
GST_START_TEST (test_split_dropped_upstream)
{
  gchar *media = twoflow_test_generated_h264 ();
  GArray *ess = g_array_new (FALSE, TRUE, sizeof (Rec));
  GArray *enh = g_array_new (FALSE, TRUE, sizeof (Rec));
  GArray *tess = g_array_new (FALSE, TRUE, sizeof (Rec));
  GArray *tenh = g_array_new (FALSE, TRUE, sizeof (Rec));
  GstClockTime pts[300];
  gchar type[300];
  GArray *flows[2] = { tess, tenh };
  guint i, f, frames = 0, ends = 0, essential = 0, dropped_i = 0, count_i = 0;
  gboolean seen[300] = { FALSE };

  split_records (media, "", ess, enh);
  for (i = 0; i < 300; i++)
    pts[i] = GST_CLOCK_TIME_NONE;
  for (f = 0; f < 2; f++) {
    GArray *a = f ? enh : ess;
    for (i = 0; i < a->len; i++) {
      Rec *r = &g_array_index (a, Rec, i);
      if (r->hdr.kind == GST_TWOFLOW_RECORD_FRAME) {
        fail_unless (r->hdr.frame_no < 300);
        pts[r->hdr.frame_no] = r->hdr.pts;
        type[r->hdr.frame_no] =
            gst_twoflow_picture_type_to_char (r->hdr.picture_type);
      }
    }
  }
  split_records_with (media, "ratetranscoder keep=i target-bitrate=100000",
      "", tess, tenh);
  for (f = 0; f < 2; f++) {
    for (i = 0; i < flows[f]->len; i++) {
      Rec *r = &g_array_index (flows[f], Rec, i);
      if (r->hdr.kind == GST_TWOFLOW_RECORD_END) {
        fail_unless_equals_int (r->hdr.frame_no, 300);
        ends++;
      }
      if (r->hdr.kind != GST_TWOFLOW_RECORD_FRAME)
        continue;
      fail_unless (r->hdr.frame_no < 300);
      fail_if (seen[r->hdr.frame_no]);
      seen[r->hdr.frame_no] = TRUE;
      fail_unless_equals_uint64 (r->hdr.pts, pts[r->hdr.frame_no]);
      fail_unless_equals_int (gst_twoflow_picture_type_to_char
          (r->hdr.picture_type), type[r->hdr.frame_no]);
      frames++;
      if (f == 0)
        essential++;
    }
  }
  fail_unless_equals_int (ends, 2);
  for (i = 0; i < 300; i++) {
    if (type[i] == 'I')
      count_i++;
    if (type[i] == 'I' && !seen[i])
      dropped_i++;
  }
  /* pictures were dropped, no I frame, and the essential flow is whole */
  fail_unless (frames < 300, "nothing dropped (%u frames)", frames);
  fail_unless_equals_int (dropped_i, 0);
  fail_unless_equals_int (essential, count_i);
  g_array_free (ess, TRUE);
  g_array_free (enh, TRUE);
  g_array_free (tess, TRUE);
  g_array_free (tenh, TRUE);
  g_free (media);
}

GST_END_TEST;

GST_START_TEST (test_split_stats)
{
  gchar *media = twoflow_test_greyramp ();
  gchar *desc = g_strdup_printf ("filesrc location=%s ! mpegvideoparse ! "
      "twoflowsplit name=s s.essential ! queue ! fakesink "
      "s.enhanced ! queue ! fakesink", media);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *split = gst_bin_get_by_name (GST_BIN (pipeline), "s");
  GstStructure *st;
  guint64 i, p, b, ef, nf, eb, nb;
  GBytes *src = twoflow_test_read (media);

  fail_unless (twoflow_test_run_pipeline (pipeline, NULL));
  g_object_get (split, "stats", &st, NULL);
  fail_unless (gst_structure_has_name (st, "application/x-twoflowsplit-stats"));
  fail_unless (gst_structure_get (st, "frames-i", G_TYPE_UINT64, &i,
          "frames-p", G_TYPE_UINT64, &p, "frames-b", G_TYPE_UINT64, &b,
          "essential-frames", G_TYPE_UINT64, &ef,
          "enhanced-frames", G_TYPE_UINT64, &nf,
          "essential-bytes", G_TYPE_UINT64, &eb,
          "enhanced-bytes", G_TYPE_UINT64, &nb, NULL));
  fail_unless_equals_uint64 (i + p + b, 25);
  fail_unless_equals_uint64 (ef, i);
  fail_unless_equals_uint64 (nf, p + b);
  /* the payloads are the whole parsed stream, which is the file itself */
  fail_unless_equals_uint64 (eb + nb, g_bytes_get_size (src));
  gst_structure_free (st);
  g_bytes_unref (src);
  gst_object_unref (split);
  gst_object_unref (pipeline);
  g_free (desc);
  g_free (media);
}

GST_END_TEST;

GST_START_TEST (test_split_bad_input)
{
  gchar *garbage = twoflow_test_tmpfile ("garbage.bin");
  gchar *desc, *err = NULL;
  GError *perr = NULL;
  GstElement *p;
  guint8 junk[4096];
  guint i;

  for (i = 0; i < sizeof (junk); i++)
    junk[i] = (guint8) (i * 7 + 3) | 0x80;   /* no start code in here */
  fail_unless (g_file_set_contents (garbage, (gchar *) junk, sizeof (junk),
          NULL));

  /* a non-video stream cannot even be linked */
  p = gst_parse_launch ("audiotestsrc num-buffers=1 ! twoflowsplit name=s "
      "s.essential ! fakesink s.enhanced ! fakesink", &perr);
  fail_unless (perr != NULL);
  g_clear_error (&perr);
  gst_clear_object (&p);

  /* bytes that claim to be MPEG video but are not */
  desc = g_strdup_printf ("filesrc location=%s ! video/mpeg,mpegversion=2,"
      "systemstream=false,parsed=true ! twoflowsplit name=s s.essential ! "
      "queue ! fakesink s.enhanced ! queue ! fakesink", garbage);
  fail_if (twoflow_test_run (desc, &err));
  fail_unless (strstr (err, "No mpeg2 picture found") != NULL, "%s", err);
  g_free (err);
  g_free (desc);

  /* the same through the parser: it finds no frame, the split none either,
   * and the run ends cleanly or with an error, never a hang */
  err = NULL;
  desc = g_strdup_printf ("filesrc location=%s ! mpegvideoparse ! "
      "twoflowsplit name=s s.essential ! queue ! fakesink s.enhanced ! queue ! "
      "fakesink", garbage);
  twoflow_test_run (desc, &err);
  g_free (err);
  g_free (desc);

  g_unlink (garbage);
  g_free (garbage);
}

GST_END_TEST;


static GstPadProbeReturn
count_parsed_audio (GstPad * pad, GstPadProbeInfo * info, gpointer counter)
{
  g_atomic_int_inc ((gint *) counter);
  return GST_PAD_PROBE_OK;
}

static void
link_parsed_pad (GstElement * pb, GstPad * pad, GstElement * split)
{
  GstElement *bin = GST_ELEMENT (gst_element_get_parent (split));
  GstCaps *caps = gst_pad_query_caps (pad, NULL);
  const gchar *name = gst_structure_get_name (gst_caps_get_structure (caps,
          0));
  gboolean video = g_str_has_prefix (name, "video/");
  GstElement *q = gst_element_factory_make ("queue", NULL);
  GstPad *qsink, *qsrc, *target;

  g_object_set (q, "max-size-buffers", 0, "max-size-time", (guint64) 0,
      "max-size-bytes", 0, NULL);
  gst_bin_add (GST_BIN (bin), q);
  gst_element_sync_state_with_parent (q);
  qsink = gst_element_get_static_pad (q, "sink");
  qsrc = gst_element_get_static_pad (q, "src");
  target = video ? gst_element_get_static_pad (split, "sink") :
      gst_element_request_pad_simple (split, "audio");
  fail_unless (target != NULL);
  fail_unless_equals_int (gst_pad_link (pad, qsink), GST_PAD_LINK_OK);
  fail_unless_equals_int (gst_pad_link (qsrc, target), GST_PAD_LINK_OK);
  if (!video)
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_parsed_audio,
        g_object_get_data (G_OBJECT (split), "parsed-audio"), NULL);
  gst_object_unref (target);
  gst_object_unref (qsink);
  gst_object_unref (qsrc);
  gst_caps_unref (caps);
  gst_object_unref (bin);
}

/* A file with video and audio: VIDEO_ENC and AUDIO_ENC muxed by MUX, 3 s. */
static gchar *
make_av (const gchar * name, const gchar * venc, const gchar * aenc,
    const gchar * mux)
{
  gchar *path = twoflow_test_tmpfile (name), *err = NULL;
  gchar *desc = g_strdup_printf ("%s name=m ! filesink location=%s "
      "videotestsrc num-buffers=75 pattern=ball ! "
      "video/x-raw,width=320,height=240,framerate=25/1 ! %s ! queue ! m. "
      "audiotestsrc num-buffers=141 samplesperbuffer=1024 ! "
      "audio/x-raw,rate=48000,channels=2 ! audioconvert ! %s ! queue ! m.",
      mux, path, venc, aenc);

  fail_unless (twoflow_test_run (desc, &err), "generating %s: %s", name, err);
  g_free (desc);
  return path;
}

/* Demuxes @media with parsebin (queues before both split pads, as the
 * element documents), splits it with its audio, and checks the essential
 * flow: video caps, audio caps, then frames and audio records in timestamp
 * order, every audio buffer once, numbered, segment numbers from the
 * stream's first timestamp; no audio in the enhanced flow. */
static void
check_split_audio (const gchar * media, guint want_frames)
{
  gchar *desc = g_strdup_printf ("filesrc location=%s ! parsebin name=p "
      "twoflowsplit name=s segment-duration=1000000000 "
      "s.essential ! queue ! appsink name=e sync=false "
      "s.enhanced ! queue ! appsink name=n sync=false", media);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *split = gst_bin_get_by_name (GST_BIN (pipeline), "s");
  GstElement *pb = gst_bin_get_by_name (GST_BIN (pipeline), "p");
  GstElement *sinks[2] = { gst_bin_get_by_name (GST_BIN (pipeline), "e"),
    gst_bin_get_by_name (GST_BIN (pipeline), "n")
  };
  GArray *recs = g_array_new (FALSE, TRUE, sizeof (GstTwoflowFrameHeader));
  GstTwoflowParser *parser = gst_twoflow_parser_new ();
  GstSample *sample;
  GstTwoflowFrameHeader h, *r;
  GstBuffer *payload;
  GstStructure *st;
  guint i, frames = 0, audio = 0, enh_audio = 0, enh_frames = 0;
  guint64 audio_bytes = 0, stat;
  GstClockTime last = 0, t0 = GST_CLOCK_TIME_NONE;
  gint parsed_audio = 0;

  /* parsebin's first video and audio pads, each through a queue */
  g_signal_connect (pb, "pad-added", G_CALLBACK (link_parsed_pad), split);
  g_object_set_data (G_OBJECT (split), "parsed-audio", &parsed_audio);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sinks[0])))) {
    gst_twoflow_parser_push (parser, gst_buffer_ref (gst_sample_get_buffer
            (sample)));
    fail_unless_equals_int (gst_twoflow_parser_pop (parser, &h, &payload),
        GST_TWOFLOW_PARSE_OK);
    if (h.kind == GST_TWOFLOW_RECORD_AUDIO_CAPS) {
      GstMapInfo map;
      gchar *str;
      GstCaps *caps;

      gst_buffer_map (payload, &map, GST_MAP_READ);
      str = g_strndup ((gchar *) map.data, map.size);
      caps = gst_caps_from_string (str);
      fail_unless (caps != NULL && g_str_has_prefix (str, "audio/"), "%s",
          str);
      gst_caps_unref (caps);
      g_free (str);
      gst_buffer_unmap (payload, &map);
    }
    if (h.kind == GST_TWOFLOW_RECORD_AUDIO)
      audio_bytes += gst_buffer_get_size (payload);
    gst_buffer_unref (payload);
    g_array_append_val (recs, h);
    gst_sample_unref (sample);
  }
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sinks[1])))) {
    gst_twoflow_parser_push (parser, gst_buffer_ref (gst_sample_get_buffer
            (sample)));
    fail_unless_equals_int (gst_twoflow_parser_pop (parser, &h, &payload),
        GST_TWOFLOW_PARSE_OK);
    enh_audio += h.kind == GST_TWOFLOW_RECORD_AUDIO
        || h.kind == GST_TWOFLOW_RECORD_AUDIO_CAPS;
    enh_frames += h.kind == GST_TWOFLOW_RECORD_FRAME;
    gst_buffer_unref (payload);
    gst_sample_unref (sample);
  }
  fail_unless (gst_app_sink_is_eos (GST_APP_SINK (sinks[0])));
  gst_element_set_state (pipeline, GST_STATE_NULL);

  fail_unless (recs->len > 3);
  fail_unless_equals_int (g_array_index (recs, GstTwoflowFrameHeader,
          0).kind, GST_TWOFLOW_RECORD_CAPS);
  fail_unless_equals_int (g_array_index (recs, GstTwoflowFrameHeader,
          1).kind, GST_TWOFLOW_RECORD_AUDIO_CAPS);
  fail_unless_equals_int (g_array_index (recs, GstTwoflowFrameHeader,
          recs->len - 1).kind, GST_TWOFLOW_RECORD_END);
  /* the stream's first timestamp: the earlier of the first frame's DTS and
   * the first audio PTS */
  for (i = 2; i + 1 < recs->len; i++) {
    r = &g_array_index (recs, GstTwoflowFrameHeader, i);
    if (r->kind == GST_TWOFLOW_RECORD_FRAME && frames++ == 0)
      t0 = MIN (t0, GST_CLOCK_TIME_IS_VALID (r->dts) ? r->dts : r->pts);
    if (r->kind == GST_TWOFLOW_RECORD_AUDIO && audio++ == 0)
      t0 = MIN (t0, r->pts);
  }
  fail_unless (frames > 0 && audio > 0);
  frames = audio = 0;
  for (i = 2; i + 1 < recs->len; i++) {
    GstClockTime ts;

    r = &g_array_index (recs, GstTwoflowFrameHeader, i);
    if (r->kind == GST_TWOFLOW_RECORD_AUDIO) {
      ts = r->pts;
      fail_unless_equals_int (r->frame_no, audio);
      fail_unless (r->flags & GST_TWOFLOW_FLAG_ESSENTIAL);
      fail_unless_equals_int (r->segment_no, (ts - t0) / GST_SECOND);
      audio++;
    } else {
      fail_unless_equals_int (r->kind, GST_TWOFLOW_RECORD_FRAME);
      ts = GST_CLOCK_TIME_IS_VALID (r->dts) ? r->dts : r->pts;
      fail_unless_equals_int (r->segment_no, (ts - t0) / GST_SECOND);
      frames++;
    }
    fail_unless (ts >= last, "record %u at %" GST_TIME_FORMAT " after %"
        GST_TIME_FORMAT, i, GST_TIME_ARGS (ts), GST_TIME_ARGS (last));
    last = ts;
  }
  fail_unless_equals_int (enh_audio, 0);
  fail_unless_equals_int (frames + enh_frames, want_frames);
  fail_unless_equals_int (audio, g_atomic_int_get (&parsed_audio));
  fail_unless (audio >= 100, "%u audio records", audio);

  g_object_get (split, "stats", &st, NULL);
  twoflow_test_check_stat (st, "audio-records", audio);
  fail_unless (gst_structure_get_uint64 (st, "audio-bytes", &stat));
  fail_unless_equals_uint64 (stat, audio_bytes);
  gst_structure_free (st);

  gst_twoflow_parser_free (parser);
  g_array_free (recs, TRUE);
  gst_object_unref (sinks[0]);
  gst_object_unref (sinks[1]);
  gst_object_unref (pb);
  gst_object_unref (split);
  gst_object_unref (pipeline);
  g_free (desc);
}

GST_START_TEST (test_split_audio_ts)
{
  gchar *media = make_av ("av.ts", "mpeg2enc format=3 b-per-refframe=2 "
      "min-gop-size=12 max-gop-size=12 ! mpegvideoparse", "twolamemp2enc ! "
      "mpegaudioparse", "mpegtsmux");

  check_split_audio (media, 75);
  g_unlink (media);
  g_free (media);
}

GST_END_TEST;

GST_START_TEST (test_split_audio_mp4)
{
  /* qtdemux pushes in the file's chunk order: whole chunks of one track */
  gchar *media = make_av ("av.mp4", "x264enc bframes=2 key-int-max=25 "
      "speed-preset=ultrafast ! h264parse", "avenc_aac ! aacparse", "mp4mux");

  check_split_audio (media, 75);
  g_unlink (media);
  g_free (media);
}

GST_END_TEST;

/* A requested audio pad that nothing feeds holds nothing up. */
GST_START_TEST (test_split_audio_pad_unlinked)
{
  gchar *media = twoflow_test_greyramp ();
  gchar *desc = g_strdup_printf ("filesrc location=%s ! mpegvideoparse ! "
      "twoflowsplit name=s s.essential ! queue ! fakesink "
      "s.enhanced ! queue ! fakesink", media);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *split = gst_bin_get_by_name (GST_BIN (pipeline), "s");
  GstPad *audio = gst_element_request_pad_simple (split, "audio");
  GstStructure *st;

  fail_unless (audio != NULL);
  fail_unless (twoflow_test_run_pipeline (pipeline, NULL));
  g_object_get (split, "stats", &st, NULL);
  {
    guint64 ef, nf;

    fail_unless (gst_structure_get (st, "essential-frames", G_TYPE_UINT64,
            &ef, "enhanced-frames", G_TYPE_UINT64, &nf, NULL));
    fail_unless_equals_uint64 (ef + nf, 25);
  }
  twoflow_test_check_stat (st, "audio-records", 0);
  gst_structure_free (st);
  gst_element_release_request_pad (split, audio);
  gst_object_unref (audio);
  gst_object_unref (split);
  gst_object_unref (pipeline);
  g_free (desc);
  g_free (media);
}

GST_END_TEST;

static Suite *
twoflowsplit_suite (void)
{
  Suite *s = suite_create ("twoflowsplit");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 180);
  tcase_add_test (tc, test_split_greyramp);
  tcase_add_test (tc, test_split_policy_ip_and_segments);
  tcase_add_test (tc, test_split_h264);
  tcase_add_test (tc, test_split_stats);
  tcase_add_test (tc, test_split_dropped_upstream);
  tcase_add_test (tc, test_split_bad_input);
  tcase_add_test (tc, test_split_audio_ts);
  tcase_add_test (tc, test_split_audio_mp4);
  tcase_add_test (tc, test_split_audio_pad_unlinked);
  return s;
}

GST_CHECK_MAIN (twoflowsplit);
