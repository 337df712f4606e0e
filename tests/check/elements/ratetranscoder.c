/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Tests of ratetranscoder on a generated 720x576 25 fps MPEG-2 stream.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>
#include <gst/codecparsers/gstmpegvideoparser.h>
#include <gst/twoflow/networkcongestion.h>
#include <gst/twoflow/twoflowframe.h>

#include "../transcoder/transcodertestutil.h"

#define N_FRAMES 75

/* the stream, generated once before the tests fork */
static gchar *source_path;
static GPtrArray *source;
static GstCaps *source_caps;
static gdouble source_bitrate;

typedef struct
{
  gint type;                    /* GST_MPEG_VIDEO_PICTURE_TYPE_*, -1 none */
  gint q;                       /* quantiser_scale_code of the first slice */
} PicInfo;

static PicInfo
pic_info (GstBuffer * buf)
{
  PicInfo info = { -1, -1 };
  GstMpegVideoPacket packet;
  GstMapInfo map;
  guint offset = 0;

  gst_buffer_map (buf, &map, GST_MAP_READ);
  while (offset + 4 <= map.size &&
      gst_mpeg_video_parse (&packet, map.data, map.size, offset)) {
    offset = packet.offset;
    if (packet.size < 0)
      packet.size = map.size - packet.offset;
    if (packet.type == GST_MPEG_VIDEO_PACKET_PICTURE && info.type < 0) {
      GstMpegVideoPictureHdr hdr;

      if (gst_mpeg_video_packet_parse_picture_header (&packet, &hdr))
        info.type = hdr.pic_type;
    } else if (packet.type >= GST_MPEG_VIDEO_PACKET_SLICE_MIN &&
        packet.type <= GST_MPEG_VIDEO_PACKET_SLICE_MAX && info.q < 0 &&
        packet.size >= 1) {
      info.q = packet.data[packet.offset] >> 3;
    }
  }
  gst_buffer_unmap (buf, &map);
  return info;
}




/* Push the whole source through a fresh ratetranscoder configured by
 * @props (a gst_util_set_object_arg string list), return its output. */
static GPtrArray *
transcode (GstHarness ** hp, GPtrArray * in, const gchar * first_prop, ...)
{
  GstHarness *h = gst_harness_new ("ratetranscoder");
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstBuffer *b;
  va_list args;
  guint i;

  va_start (args, first_prop);
  if (first_prop)
    g_object_set_valist (G_OBJECT (h->element), first_prop, args);
  va_end (args);
  gst_harness_set_src_caps (h, gst_caps_ref (source_caps));
  for (i = 0; i < in->len; i++) {
    fail_unless_equals_int (gst_harness_push (h,
            gst_buffer_ref (g_ptr_array_index (in, i))), GST_FLOW_OK);
    while ((b = gst_harness_try_pull (h)))
      g_ptr_array_add (out, b);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  while ((b = gst_harness_try_pull (h)))
    g_ptr_array_add (out, b);
  if (hp)
    *hp = h;
  else
    gst_harness_teardown (h);
  return out;
}

/* Decode @bufs with avdec_mpeg2video; return the number of pictures,
 * failing on any error or warning. */
static guint
decode_count (GPtrArray * bufs)
{
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch ("appsrc name=src format=time ! "
      "mpegvideoparse ! avdec_mpeg2video ! appsink name=sink sync=false",
      &err);
  GstElement *src, *sink;
  GstBus *bus;
  GstMessage *msg;
  GstSample *sample;
  guint i, n = 0;

  fail_unless (pipe != NULL);
  src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  g_object_set (src, "caps", source_caps, NULL);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  for (i = 0; i < bufs->len; i++)
    gst_app_src_push_buffer (GST_APP_SRC (src),
        gst_buffer_ref (g_ptr_array_index (bufs, i)));
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    n++;
    gst_sample_unref (sample);
  }
  bus = gst_element_get_bus (pipe);
  while ((msg = gst_bus_pop_filtered (bus,
              GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))) {
    GError *e;

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR)
      gst_message_parse_error (msg, &e, NULL);
    else
      gst_message_parse_warning (msg, &e, NULL);
    fail ("decoder said: %s", e->message);
  }
  gst_object_unref (bus);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  return n;
}

static GstBuffer *
find_by_dts (GPtrArray * bufs, GstClockTime dts)
{
  guint i;

  for (i = 0; i < bufs->len; i++) {
    GstBuffer *b = g_ptr_array_index (bufs, i);

    if (GST_BUFFER_DTS (b) == dts)
      return b;
  }
  return NULL;
}

GST_START_TEST (test_passthrough_byte_exact)
{
  GPtrArray *out = transcode (NULL, source, NULL);
  guint i;

  fail_unless_equals_int (out->len, source->len);
  for (i = 0; i < out->len; i++) {
    GstBuffer *a = g_ptr_array_index (source, i);
    GstBuffer *b = g_ptr_array_index (out, i);

    fail_unless (transcoder_test_buffers_equal (a, b), "frame %u differs", i);
    fail_unless_equals_uint64 (GST_BUFFER_DTS (a), GST_BUFFER_DTS (b));
  }
  g_ptr_array_unref (out);
}

GST_END_TEST;

/* A steady target: same picture types and count, decodable, each GOP's
 * bitrate within 10% of the target. */
static void
check_steady_target (gdouble fraction)
{
  guint64 target = (guint64) (source_bitrate * fraction);
  GstHarness *h;
  GPtrArray *out = transcode (&h, source, "target-bitrate", target,
      "max-bitrate", target, "recovery", (guint64) 0, NULL);
  GstStructure *stats;
  guint i, gop_frames = 0, gops = 0;
  gdouble gop_bytes = 0;
  guint64 reencoded;

  fail_unless_equals_int (out->len, source->len);
  for (i = 0; i < out->len; i++) {
    GstBuffer *a = g_ptr_array_index (source, i);
    GstBuffer *b = g_ptr_array_index (out, i);
    PicInfo pa = pic_info (a), pb = pic_info (b);

    fail_unless_equals_int (pa.type, pb.type);
    fail_unless_equals_uint64 (GST_BUFFER_DTS (a), GST_BUFFER_DTS (b));
    fail_unless (GST_BUFFER_PTS_IS_VALID (b));
    fail_unless (GST_BUFFER_PTS (b) >= GST_BUFFER_DTS (b));

    if (pb.type == GST_MPEG_VIDEO_PICTURE_TYPE_I && gop_frames) {
      gdouble rate = gop_bytes * 8 / (gop_frames / 25.0);

      GST_INFO ("GOP %u: %u frames, %.0f bit/s (target %" G_GUINT64_FORMAT
          ")", gops, gop_frames, rate, target);
      /* the first GOP is coded before the model has seen the stream */
      if (gops > 0)
        fail_unless (rate > target * 0.9 && rate < target * 1.1,
            "GOP %u at %.0f bit/s, target %" G_GUINT64_FORMAT, gops, rate,
            target);
      gops++;
      gop_frames = 0;
      gop_bytes = 0;
    }
    gop_frames++;
    gop_bytes += gst_buffer_get_size (b);
  }
  fail_unless (gops >= 3);

  g_object_get (h->element, "stats", &stats, NULL);
  fail_unless (gst_structure_get_uint64 (stats, "frames-reencoded",
          &reencoded));
  fail_unless (reencoded > source->len / 2);
  gst_structure_free (stats);
  gst_harness_teardown (h);

  fail_unless_equals_int (decode_count (out), source->len);
  g_ptr_array_unref (out);
}

GST_START_TEST (test_steady_target_half)
{
  check_steady_target (0.5);
}

GST_END_TEST;

GST_START_TEST (test_steady_target_third)
{
  check_steady_target (0.3);
}

GST_END_TEST;

static gint
mean_q_before (GPtrArray * out, guint upto, gint type)
{
  guint i, n = 0, sum = 0;

  for (i = 0; i < upto; i++) {
    PicInfo p = pic_info (g_ptr_array_index (out, i));

    if (p.type == type) {
      sum += p.q;
      n++;
    }
  }
  return n ? (sum + n / 2) / n : 0;
}

/* After a loss event the very next input frame leaves re-encoded at the
 * reduced rate: coarser quantizer than the frames of its type before. */
GST_START_TEST (test_event_next_frame)
{
  guint64 target = (guint64) (source_bitrate * 0.6), now;
  GstHarness *h = gst_harness_new ("ratetranscoder");
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstBuffer *b, *next, *next_out;
  GstStructure *stats;
  guint i, split = 40;
  PicInfo pi, po;
  gint before;

  g_object_set (h->element, "target-bitrate", target, "max-bitrate", target,
      "recovery", (guint64) 0, NULL);
  gst_harness_set_src_caps (h, gst_caps_ref (source_caps));
  for (i = 0; i < split; i++) {
    gst_harness_push (h, gst_buffer_ref (g_ptr_array_index (source, i)));
    while ((b = gst_harness_try_pull (h)))
      g_ptr_array_add (out, b);
  }

  fail_unless (gst_harness_push_upstream_event (h,
          gst_network_congestion_event_new (GST_NETWORK_CONGESTION_LOSS, 0,
              GST_CLOCK_TIME_NONE, "test")));
  g_object_get (h->element, "target-bitrate", &now, NULL);
  fail_unless (now < target * 0.55 && now > target * 0.45,
      "target %" G_GUINT64_FORMAT " after backoff from %" G_GUINT64_FORMAT,
      now, target);

  next = g_ptr_array_index (source, split);
  for (i = split; i < source->len; i++) {
    gst_harness_push (h, gst_buffer_ref (g_ptr_array_index (source, i)));
    while ((b = gst_harness_try_pull (h)))
      g_ptr_array_add (out, b);
  }
  gst_harness_push_event (h, gst_event_new_eos ());
  while ((b = gst_harness_try_pull (h)))
    g_ptr_array_add (out, b);
  fail_unless_equals_int (out->len, source->len);

  pi = pic_info (next);
  next_out = find_by_dts (out, GST_BUFFER_DTS (next));
  fail_unless (next_out != NULL);
  po = pic_info (next_out);
  fail_unless_equals_int (pi.type, po.type);
  before = mean_q_before (out, split - 6, po.type);
  GST_INFO ("frame %u type %d: q %d, before the event %d", split, po.type,
      po.q, before);
  fail_unless (before > 0);
  /* half the rate needs a clearly coarser quantizer */
  fail_unless (po.q >= before * 1.3, "q %d after, %d before", po.q, before);
  fail_unless (gst_buffer_get_size (next_out) < gst_buffer_get_size (next));

  g_object_get (h->element, "stats", &stats, NULL);
  fail_unless (gst_structure_get_uint64 (stats, "events-loss", &now));
  fail_unless_equals_uint64 (now, 1);
  fail_unless (gst_structure_get_uint64 (stats, "reaction-latency", &now));
  fail_unless (now > 0);
  gst_structure_free (stats);

  /* a rate event sets the target */
  fail_unless (gst_harness_push_upstream_event (h,
          gst_network_congestion_event_new (GST_NETWORK_CONGESTION_RATE,
              1234567, GST_CLOCK_TIME_NONE, "test")));
  g_object_get (h->element, "target-bitrate", &now, NULL);
  fail_unless_equals_uint64 (now, 1234567);

  gst_harness_teardown (h);
  fail_unless_equals_int (decode_count (out), source->len);
  g_ptr_array_unref (out);
}

GST_END_TEST;

/* Losses reported before the first frame (as when the application hands
 * over those of the essential flow's lead) are kept and applied once the
 * input rate is measured: they are not lost on a transcoder with no rate
 * yet. */
GST_START_TEST (test_event_before_input)
{
  GstHarness *h;
  GstStructure *stats;
  GPtrArray *out;
  GstBuffer *b;
  guint64 v, in_rate, target;
  guint pending, i;

  h = gst_harness_new ("ratetranscoder");
  g_object_set (h->element, "recovery", (guint64) 0, NULL);
  gst_harness_set_src_caps (h, gst_caps_ref (source_caps));
  fail_unless (gst_harness_push_upstream_event (h,
          gst_network_congestion_event_new (GST_NETWORK_CONGESTION_LOSS, 0,
              GST_CLOCK_TIME_NONE, "test")));
  g_object_get (h->element, "stats", &stats, NULL);
  fail_unless (gst_structure_get_uint (stats, "backoffs-pending", &pending));
  fail_unless_equals_int (pending, 1);
  fail_unless (gst_structure_get_uint64 (stats, "events-loss", &v));
  fail_unless_equals_uint64 (v, 1);
  fail_unless (gst_structure_get_uint64 (stats, "events-ignored", &v));
  fail_unless_equals_uint64 (v, 0);
  gst_structure_free (stats);

  /* then the frames */
  out = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  for (i = 0; i < source->len; i++) {
    fail_unless_equals_int (gst_harness_push (h,
            gst_buffer_ref (g_ptr_array_index (source, i))), GST_FLOW_OK);
    while ((b = gst_harness_try_pull (h)))
      g_ptr_array_add (out, b);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  while ((b = gst_harness_try_pull (h)))
    g_ptr_array_add (out, b);
  g_object_get (h->element, "stats", &stats, NULL);
  GST_INFO ("%" GST_PTR_FORMAT, stats);
  fail_unless_equals_int (out->len, source->len);
  fail_unless (gst_structure_get_uint (stats, "backoffs-pending", &pending));
  fail_unless_equals_int (pending, 0);
  fail_unless (gst_structure_get_uint64 (stats, "events-ignored", &v));
  fail_unless_equals_uint64 (v, 0);
  fail_unless (gst_structure_get_uint64 (stats, "frames-reencoded", &v));
  fail_unless (v > 0);
  fail_unless (gst_structure_get_uint64 (stats, "reaction-latency", &v));
  fail_unless (v > 0);
  fail_unless (gst_structure_get_uint64 (stats, "input-bitrate", &in_rate));
  fail_unless (gst_structure_get_uint64 (stats, "target-bitrate", &target));
  /* half the input's measured rate */
  fail_unless (target > in_rate * 0.4 && target < in_rate * 0.6,
      "target %" G_GUINT64_FORMAT ", input %" G_GUINT64_FORMAT, target,
      in_rate);
  gst_structure_free (stats);
  fail_unless (transcoder_test_bitrate (out) < source_bitrate * 0.75,
      "%f of %f", transcoder_test_bitrate (out), source_bitrate);
  gst_harness_teardown (h);
  fail_unless_equals_int (decode_count (out), source->len);
  g_ptr_array_unref (out);
}

GST_END_TEST;

/* events the element is not subscribed to change nothing */
GST_START_TEST (test_event_filter)
{
  GstHarness *h = gst_harness_new ("ratetranscoder");
  guint64 now;
  guint i;

  g_object_set (h->element, "target-bitrate", (guint64) 3000000,
      "events", GST_NETWORK_CONGESTION_RATE, "recovery", (guint64) 0, NULL);
  gst_harness_set_src_caps (h, gst_caps_ref (source_caps));
  for (i = 0; i < 20; i++)
    gst_harness_push (h, gst_buffer_ref (g_ptr_array_index (source, i)));
  gst_harness_push_upstream_event (h,
      gst_network_congestion_event_new (GST_NETWORK_CONGESTION_DUPACK, 0,
          GST_CLOCK_TIME_NONE, "test"));
  g_object_get (h->element, "target-bitrate", &now, NULL);
  fail_unless_equals_uint64 (now, 3000000);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* keep: 1 = i, 2 = ip (GstRateTranscoderKeep) */
static void
check_keep (gint keep, gboolean keep_p, gdouble fraction)
{
  guint64 target = (guint64) (source_bitrate * fraction), floor_rate;
  GstHarness *h;
  GPtrArray *out = transcode (&h, source, "keep", keep, "target-bitrate",
      target, "max-bitrate", target, NULL);
  GstStructure *stats;
  guint i, kept = 0, changed = 0;

  for (i = 0; i < source->len; i++) {
    GstBuffer *a = g_ptr_array_index (source, i);
    GstBuffer *b = find_by_dts (out, GST_BUFFER_DTS (a));
    PicInfo p = pic_info (a);

    if (p.type == GST_MPEG_VIDEO_PICTURE_TYPE_I ||
        (keep_p && p.type == GST_MPEG_VIDEO_PICTURE_TYPE_P)) {
      fail_unless (b != NULL);
      fail_unless (transcoder_test_buffers_equal (a, b), "essential frame %u changed", i);
      kept++;
    } else if (b && !transcoder_test_buffers_equal (a, b)) {
      changed++;
    }
  }
  GST_INFO ("keep=%d: %u kept, %u re-encoded", keep, kept, changed);
  fail_unless (kept > 0);
  fail_unless (changed > source->len / 3);

  g_object_get (h->element, "stats", &stats, NULL);
  fail_unless (gst_structure_get_uint64 (stats, "floor-bitrate", &floor_rate));
  fail_unless (floor_rate > 0);
  fail_unless (floor_rate < source_bitrate);
  gst_structure_free (stats);
  gst_harness_teardown (h);

  fail_unless_equals_int (decode_count (out), out->len);
  g_ptr_array_unref (out);
}

GST_START_TEST (test_keep_i)
{
  check_keep (1, FALSE, 0.5);
}

GST_END_TEST;

GST_START_TEST (test_keep_ip)
{
  check_keep (2, TRUE, 0.8);
}

GST_END_TEST;

/* Far below what quantizer 31 reaches, B frames go. */
GST_START_TEST (test_drop_b)
{
  GstHarness *h;
  GPtrArray *out = transcode (&h, source, "target-bitrate", (guint64) 300000,
      "max-bitrate", (guint64) 300000, NULL);
  GstStructure *stats;
  gboolean dropping;
  guint64 dropped;
  guint i, src_ref = 0, out_ref = 0, events = 0;
  GstEvent *ev;

  for (i = 0; i < source->len; i++)
    if (pic_info (g_ptr_array_index (source, i)).type !=
        GST_MPEG_VIDEO_PICTURE_TYPE_B)
      src_ref++;
  for (i = 0; i < out->len; i++)
    if (pic_info (g_ptr_array_index (out, i)).type !=
        GST_MPEG_VIDEO_PICTURE_TYPE_B)
      out_ref++;
  fail_unless_equals_int (out_ref, src_ref);
  fail_unless (out->len < source->len);

  g_object_get (h->element, "stats", &stats, NULL);
  fail_unless (gst_structure_get_boolean (stats, "dropping-b", &dropping));
  fail_unless (dropping);
  fail_unless (gst_structure_get_uint64 (stats, "frames-dropped", &dropped));
  fail_unless_equals_int (dropped, source->len - out->len);
  gst_structure_free (stats);
  /* each dropped B frame left a dropped-frame event (twoflowsplit numbers
   * it) */
  while ((ev = gst_harness_try_pull_event (h))) {
    GstTwoflowPictureType t;
    gboolean ref;

    if (gst_twoflow_event_parse_dropped (ev, &t, &ref, NULL, NULL, NULL)) {
      fail_unless_equals_int (t, GST_TWOFLOW_PICTURE_B);
      fail_if (ref);
      events++;
    }
    gst_event_unref (ev);
  }
  fail_unless_equals_int (events, dropped);
  gst_harness_teardown (h);

  fail_unless_equals_int (decode_count (out), out->len);
  g_ptr_array_unref (out);
}

GST_END_TEST;

/* Garbage, truncated and header-less buffers: passed through, no crash. */
GST_START_TEST (test_bad_input)
{
  GPtrArray *bad = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GRand *rand = g_rand_new_with_seed (7);
  GPtrArray *out;
  guint i, j;

  for (i = 0; i < 40; i++) {
    GstBuffer *src = g_ptr_array_index (source, i);
    GstBuffer *b;
    GstMapInfo map;

    if (i % 5 == 3) {
      /* random bytes, sometimes with a picture start code in front */
      b = gst_buffer_new_allocate (NULL, 4000, NULL);
      gst_buffer_map (b, &map, GST_MAP_WRITE);
      for (j = 0; j < map.size; j++)
        map.data[j] = g_rand_int (rand);
      if (i % 2) {
        static const guint8 pic[] = { 0, 0, 1, 0, 0, 0x10, 0xff, 0xf8 };
        memcpy (map.data, pic, sizeof (pic));
      }
      gst_buffer_unmap (b, &map);
    } else if (i % 5 == 4) {
      /* truncated picture */
      b = gst_buffer_copy_region (src, GST_BUFFER_COPY_ALL, 0,
          gst_buffer_get_size (src) / 3);
    } else {
      b = gst_buffer_copy (src);
      if (i % 7 == 2) {
        /* corrupt the middle of a picture */
        gst_buffer_map (b, &map, GST_MAP_WRITE);
        for (j = map.size / 2; j < map.size / 2 + 200 && j < map.size; j++)
          map.data[j] = g_rand_int (rand);
        gst_buffer_unmap (b, &map);
      }
    }
    GST_BUFFER_DTS (b) = GST_BUFFER_DTS (src);
    GST_BUFFER_PTS (b) = GST_BUFFER_PTS (src);
    GST_BUFFER_DURATION (b) = GST_BUFFER_DURATION (src);
    g_ptr_array_add (bad, b);
  }

  for (i = 0; i < 2; i++) {
    GstHarness *h;
    GstStructure *st;
    guint64 dropped, errors;

    out = transcode (&h, bad, "target-bitrate", (guint64) 2000000, "keep", i,
        NULL);
    g_object_get (h->element, "stats", &st, NULL);
    gst_structure_get_uint64 (st, "frames-dropped", &dropped);
    gst_structure_get_uint64 (st, "decode-errors", &errors);
    GST_INFO ("keep %u: %u out, %" G_GUINT64_FORMAT " dropped, %"
        G_GUINT64_FORMAT " decode errors", i, out->len, dropped, errors);
    /* every frame comes out, unless dropped as a B frame */
    fail_unless_equals_int (out->len + dropped, bad->len);
    /* the damaged frames and the ones that failed to parse pass as they
     * came */
    for (j = 0; j < bad->len; j += 5) {
      GstBuffer *b = find_by_dts (out, GST_BUFFER_DTS (g_ptr_array_index (bad,
                  j + 3)));
      if (b)
        fail_unless (transcoder_test_buffers_equal (b, g_ptr_array_index (bad, j + 3)));
    }
    gst_structure_free (st);
    gst_harness_teardown (h);
    g_ptr_array_unref (out);
  }
  g_ptr_array_unref (bad);
  g_rand_free (rand);
}

GST_END_TEST;

GST_START_TEST (test_stats_fields)
{
  GstHarness *h;
  GPtrArray *out = transcode (&h, source, "target-bitrate", (guint64)
      (source_bitrate / 2), NULL);
  GstStructure *s;
  static const gchar *u64[] = { "input-bitrate", "output-bitrate",
    "target-bitrate", "floor-bitrate", "frames-in", "frames-out",
    "frames-passed", "frames-reencoded", "frames-dropped", "decode-errors",
    "events", "events-rexmt", "events-dupack", "events-recovered",
    "events-loss", "events-rate", "events-ignored", "reaction-latency",
    "max-reaction-latency", NULL
  };
  guint64 v, in, outn;
  gdouble q;
  guint i;

  g_object_get (h->element, "stats", &s, NULL);
  fail_unless (gst_structure_has_name (s, "application/x-ratetranscoder-stats"));
  for (i = 0; u64[i]; i++)
    fail_unless (gst_structure_get_uint64 (s, u64[i], &v), "%s", u64[i]);
  fail_unless (gst_structure_get_double (s, "quantizer", &q));
  fail_unless (q >= 2 && q <= 31);
  fail_unless (gst_structure_get_double (s, "mean-quantizer", &q));
  fail_unless (gst_structure_get_uint (s, "backoffs-pending", &i));
  fail_unless_equals_int (i, 0);
  gst_structure_get_uint64 (s, "frames-in", &in);
  gst_structure_get_uint64 (s, "frames-out", &outn);
  fail_unless_equals_uint64 (in, source->len);
  fail_unless_equals_uint64 (outn, source->len);
  gst_structure_get_uint64 (s, "input-bitrate", &v);
  fail_unless (v > source_bitrate * 0.8 && v < source_bitrate * 1.2);
  gst_structure_free (s);
  gst_harness_teardown (h);
  g_ptr_array_unref (out);
}

GST_END_TEST;

/* The 720x576 sample the build generates (scripts/make-media.sh: mpeg2enc,
 * IPBB..., about 5 Mbit/s): re-encoded and decodable. */
GST_START_TEST (test_greyramp)
{
  const gchar *media = g_getenv ("TWOFLOW_MEDIA");
  gchar *path, *desc;
  GPtrArray *in, *out;
  GstCaps *caps = NULL;

  path = g_build_filename (media ? media : "tests/media", "greyramp.m2v",
      NULL);
  fail_unless (g_file_test (path, G_FILE_TEST_EXISTS),
      "no %s (the build generates it: scripts/make-media.sh)", path);
  desc = g_strdup_printf ("filesrc location=\"%s\" ! mpegvideoparse ! "
      "appsink name=sink sync=false", path);
  in = transcoder_test_generate (desc, &caps);
  g_free (desc);
  g_free (path);
  fail_unless (in->len > 0);
  gst_caps_replace (&source_caps, caps);
  out = transcode (NULL, in, "target-bitrate", (guint64) (transcoder_test_bitrate (in) /
          3), NULL);
  fail_unless_equals_int (out->len, in->len);
  fail_unless (transcoder_test_bitrate (out) < transcoder_test_bitrate (in) * 0.7);
  fail_unless_equals_int (decode_count (out), in->len);
  gst_caps_unref (caps);
  g_ptr_array_unref (in);
  g_ptr_array_unref (out);
}

GST_END_TEST;

/* Frames a re-encoded picture waits in the element (RT_REENCODE_DELAY in
 * gstratetranscoder.c): the latency it must report, in frames. */
#define REENCODE_DELAY 4

/* Push @in one buffer at a time, as a live source does: the next buffer is
 * only offered once the element has accepted the previous one (the push
 * returned). Before frame @loss_at a loss event, before frame @rate_at a
 * rate event at twice the source's bitrate (G_MAXUINT: none). released[k]:
 * how many input frames had been pushed when output k came out
 * (in->len + 1: at EOS). */
static GPtrArray *
transcode_paced (GstHarness * h, GPtrArray * in, guint * released,
    guint loss_at, guint rate_at)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstBuffer *b;
  guint i;

  gst_harness_set_src_caps (h, gst_caps_ref (source_caps));
  for (i = 0; i < in->len; i++) {
    if (i == loss_at)
      fail_unless (gst_harness_push_upstream_event (h,
              gst_network_congestion_event_new (GST_NETWORK_CONGESTION_LOSS,
                  0, GST_CLOCK_TIME_NONE, "test")));
    if (i == rate_at)
      fail_unless (gst_harness_push_upstream_event (h,
              gst_network_congestion_event_new (GST_NETWORK_CONGESTION_RATE,
                  (guint64) (source_bitrate * 2), GST_CLOCK_TIME_NONE,
                  "test")));
    fail_unless_equals_int (gst_harness_push (h,
            gst_buffer_ref (g_ptr_array_index (in, i))), GST_FLOW_OK);
    while ((b = gst_harness_try_pull (h))) {
      fail_unless (out->len < in->len);
      released[out->len] = i + 1;
      g_ptr_array_add (out, b);
    }
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  while ((b = gst_harness_try_pull (h))) {
    fail_unless (out->len < in->len);
    released[out->len] = in->len + 1;
    g_ptr_array_add (out, b);
  }
  return out;
}

/* Passing through, every frame leaves while it is being pushed: before
 * the next one is accepted (no frame of delay), byte-exact. */
GST_START_TEST (test_passthrough_zero_delay)
{
  guint released[N_FRAMES];
  GstHarness *h = gst_harness_new ("ratetranscoder");
  GPtrArray *out = transcode_paced (h, source, released, G_MAXUINT,
      G_MAXUINT);
  guint i;

  fail_unless_equals_int (out->len, source->len);
  for (i = 0; i < out->len; i++) {
    fail_unless_equals_int (released[i], i + 1);
    fail_unless (transcoder_test_buffers_equal (g_ptr_array_index (source, i),
            g_ptr_array_index (out, i)), "frame %u differs", i);
  }
  gst_harness_teardown (h);
  g_ptr_array_unref (out);
}

GST_END_TEST;

/* The LATENCY query adds the re-encoding latency to upstream's, even while
 * passing through, and that is what re-encoding really takes. */
GST_START_TEST (test_latency_query)
{
  guint released[N_FRAMES];
  GstHarness *h = gst_harness_new ("ratetranscoder");
  GstQuery *q = gst_query_new_latency ();
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GPtrArray *out;
  GstClockTime min, max, upstream = 10 * GST_MSECOND;
  GstCaps *caps;
  gboolean live;
  guint i, delay, max_delay = 0, at_max = 0;

  gst_element_set_bus (h->element, bus);
  gst_harness_set_upstream_latency (h, upstream);
  gst_harness_set_src_caps (h, gst_caps_ref (source_caps));
  fail_unless (gst_pad_peer_query (h->sinkpad, q));
  gst_query_parse_latency (q, &live, &min, &max);
  fail_unless (live);
  fail_unless_equals_uint64 (min, upstream + REENCODE_DELAY * 40 * GST_MSECOND);
  fail_unless (max >= min);

  /* it follows the frame rate, and says so */
  caps = gst_caps_copy (source_caps);
  gst_caps_set_simple (caps, "framerate", GST_TYPE_FRACTION, 50, 1, NULL);
  gst_harness_set_src_caps (h, caps);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_LATENCY);
  fail_unless (msg != NULL);
  gst_message_unref (msg);
  fail_unless_equals_uint64 (gst_harness_query_latency (h),
      upstream + REENCODE_DELAY * 20 * GST_MSECOND);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_query_unref (q);
  gst_harness_teardown (h);

  /* re-encoding, each frame waits exactly that long at most */
  h = gst_harness_new ("ratetranscoder");
  g_object_set (h->element, "target-bitrate", (guint64) (source_bitrate / 2),
      "max-bitrate", (guint64) (source_bitrate / 2), NULL);
  out = transcode_paced (h, source, released, G_MAXUINT, G_MAXUINT);
  fail_unless_equals_int (out->len, source->len);
  for (i = 0; i < out->len; i++) {
    fail_unless_equals_uint64 (GST_BUFFER_DTS (g_ptr_array_index (out, i)),
        GST_BUFFER_DTS (g_ptr_array_index (source, i)));
    if (released[i] > source->len)
      continue;                 /* drained at EOS */
    delay = released[i] - (i + 1);
    max_delay = MAX (max_delay, delay);
    at_max += delay == REENCODE_DELAY;
  }
  GST_INFO ("re-encoding: at most %u frames of delay, %u frames at %d",
      max_delay, at_max, REENCODE_DELAY);
  fail_unless_equals_int (max_delay, REENCODE_DELAY);
  fail_unless (at_max > source->len / 2);
  fail_unless_equals_uint64 (gst_harness_query_latency (h),
      max_delay * 40 * GST_MSECOND);
  gst_harness_teardown (h);
  g_ptr_array_unref (out);
}

GST_END_TEST;

/* Passthrough -> re-encoding (a loss event mid-GOP) -> passthrough (a rate
 * event above the source's bitrate, mid-GOP): every frame once, in decode
 * order, with its DTS and PTS; byte-exact and without delay while passing
 * through, and the whole output decodes. */
static void
check_switch (gint keep)
{
  const guint loss_at = 20, rate_at = 49;       /* GOPs of 15 frames */
  guint released[N_FRAMES];
  GstHarness *h;
  GPtrArray *ref, *out;
  GstStructure *stats;
  guint i, changed = 0;
  guint64 v;

  /* the PTS the element gives each frame (the source has DTS only) */
  ref = transcode (NULL, source, "keep", keep, NULL);
  fail_unless_equals_int (ref->len, source->len);

  h = gst_harness_new ("ratetranscoder");
  g_object_set (h->element, "recovery", (guint64) 0, "keep", keep, NULL);
  out = transcode_paced (h, source, released, loss_at, rate_at);
  fail_unless_equals_int (out->len, source->len);
  for (i = 0; i < out->len; i++) {
    GstBuffer *a = g_ptr_array_index (source, i);
    GstBuffer *b = g_ptr_array_index (out, i);
    PicInfo pa = pic_info (a), pb = pic_info (b);

    /* decode order, nothing lost or duplicated */
    fail_unless_equals_uint64 (GST_BUFFER_DTS (b), GST_BUFFER_DTS (a));
    if (i > 0)
      fail_unless (GST_BUFFER_DTS (b) >
          GST_BUFFER_DTS (g_ptr_array_index (out, i - 1)));
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b),
        GST_BUFFER_PTS (g_ptr_array_index (ref, i)));
    fail_unless (GST_BUFFER_PTS (b) >= GST_BUFFER_DTS (b));
    fail_unless_equals_int (pa.type, pb.type);

    if (i < loss_at || i >= rate_at) {
      fail_unless (transcoder_test_buffers_equal (a, b), "frame %u differs", i);
      fail_unless_equals_int (released[i], i + 1);
    } else {
      /* the frames waiting for the codecs at the rate event leave then */
      fail_unless (released[i] <= MIN (i + 1 + REENCODE_DELAY, rate_at + 1),
          "frame %u out after input %u", i, released[i]);
      if (!transcoder_test_buffers_equal (a, b)) {
        fail_unless (gst_buffer_get_size (b) < gst_buffer_get_size (a));
        changed++;
      }
      if (keep == 1 && pa.type == GST_MPEG_VIDEO_PICTURE_TYPE_I)
        fail_unless (transcoder_test_buffers_equal (a, b));
    }
  }
  GST_INFO ("keep %d: %u of %u frames re-encoded between the events", keep,
      changed, rate_at - loss_at);
  fail_unless (changed >= (rate_at - loss_at) / 2);

  g_object_get (h->element, "stats", &stats, NULL);
  fail_unless (gst_structure_get_uint64 (stats, "frames-out", &v));
  fail_unless_equals_uint64 (v, source->len);
  fail_unless (gst_structure_get_uint64 (stats, "events-loss", &v));
  fail_unless_equals_uint64 (v, 1);
  fail_unless (gst_structure_get_uint64 (stats, "events-rate", &v));
  fail_unless_equals_uint64 (v, 1);
  gst_structure_free (stats);
  gst_harness_teardown (h);

  fail_unless_equals_int (decode_count (out), source->len);
  g_ptr_array_unref (out);
  g_ptr_array_unref (ref);
}

GST_START_TEST (test_switch_mid_gop)
{
  check_switch (0);
}

GST_END_TEST;

GST_START_TEST (test_switch_mid_gop_keep_i)
{
  check_switch (1);
}

GST_END_TEST;

/* Each test loads the stream generated once by the suite. */
static void
load_source (void)
{
  gchar *desc;

  desc = g_strdup_printf ("filesrc location=\"%s\" ! mpegvideoparse ! "
      "appsink name=sink sync=false", source_path);
  source = transcoder_test_generate (desc, &source_caps);
  g_free (desc);
  fail_unless_equals_int (source->len, N_FRAMES);
  source_bitrate = transcoder_test_bitrate (source);
}

static void
unload_source (void)
{
  g_clear_pointer (&source, g_ptr_array_unref);
  gst_clear_caps (&source_caps);
}

static Suite *
ratetranscoder_suite (void)
{
  Suite *s = suite_create ("ratetranscoder");
  TCase *tc = tcase_create ("general");
  const gchar *dir = g_getenv ("TWOFLOW_BUILD_ROOT");
  pid_t pid;
  int status = 0;

  /* One stream for every test, encoded once. In a child process: a parent
   * that ran a pipeline (and so has GStreamer threads) must not fork. */
  source_path = g_build_filename (dir ? dir : ".", "ratetranscoder-test.m2v",
      NULL);
  pid = fork ();
  if (pid == 0) {
    GPtrArray *bufs = transcoder_test_generate ("videotestsrc pattern=smpte "
        "horizontal-speed=5 num-buffers=" G_STRINGIFY (N_FRAMES)
        " ! video/x-raw,width=720,height=576,framerate=25/1 ! mpeg2enc "
        "format=3 bitrate=6000 b-per-refframe=2 ! mpegvideoparse ! "
        "appsink name=sink sync=false", NULL);
    FILE *f = fopen (source_path, "wb");
    guint i;

    for (i = 0; f && i < bufs->len; i++) {
      GstMapInfo map;

      gst_buffer_map (g_ptr_array_index (bufs, i), &map, GST_MAP_READ);
      fwrite (map.data, 1, map.size, f);
      gst_buffer_unmap (g_ptr_array_index (bufs, i), &map);
    }
    _exit (f && fclose (f) == 0 && bufs->len == N_FRAMES ? 0 : 1);
  }
  if (pid < 0 || waitpid (pid, &status, 0) != pid || !WIFEXITED (status) ||
      WEXITSTATUS (status) != 0)
    g_error ("could not generate %s", source_path);

  tcase_add_checked_fixture (tc, load_source, unload_source);
  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_passthrough_byte_exact);
  tcase_add_test (tc, test_passthrough_zero_delay);
  tcase_add_test (tc, test_latency_query);
  tcase_add_test (tc, test_switch_mid_gop);
  tcase_add_test (tc, test_switch_mid_gop_keep_i);
  tcase_add_test (tc, test_steady_target_half);
  tcase_add_test (tc, test_steady_target_third);
  tcase_add_test (tc, test_event_next_frame);
  tcase_add_test (tc, test_event_before_input);
  tcase_add_test (tc, test_event_filter);
  tcase_add_test (tc, test_keep_i);
  tcase_add_test (tc, test_keep_ip);
  tcase_add_test (tc, test_drop_b);
  tcase_add_test (tc, test_bad_input);
  tcase_add_test (tc, test_stats_fields);
  tcase_add_test (tc, test_greyramp);
  return s;
}

GST_CHECK_MAIN (ratetranscoder);
