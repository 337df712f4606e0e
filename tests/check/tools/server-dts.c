/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server's decode timestamps for PTS-only video
 * (tools/server/twoflow-server-dts.c) on a harnessed identity: the DTS
 * of B-frame video in decode order, the segment and timestamps moved
 * where the first DTS would come before 0, streams with DTS kept; H.265's
 * depth from the hvcC, AV1's none
 * Copyright (C) 2026 twoflow developers
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include "twoflow-server-dts.h"

#define FRAME (40 * GST_MSECOND)

typedef struct
{
  GstHarness *h;
  DtsState *d;
} Fixture;

static void
fixture_start (Fixture * f, const gchar * caps, GstClockTime seg_start)
{
  GstPad *src;
  GstSegment seg;

  f->h = gst_harness_new ("identity");
  f->d = dts_state_new ();
  src = gst_element_get_static_pad (f->h->element, "src");
  gst_pad_add_probe (src, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, dts_probe, f->d, NULL);
  gst_object_unref (src);
  /* by hand: gst_harness_set_src_caps() sends a segment of its own */
  fail_unless (gst_harness_push_event (f->h,
          gst_event_new_stream_start ("dts")));
  fail_unless (gst_harness_push_event (f->h,
          gst_event_new_caps (gst_caps_from_string (caps))));
  gst_segment_init (&seg, GST_FORMAT_TIME);
  seg.start = seg.position = seg_start;
  fail_unless (gst_harness_push_event (f->h, gst_event_new_segment (&seg)));
}

static void
fixture_stop (Fixture * f)
{
  gst_harness_teardown (f->h);
  dts_state_free (f->d);
}

/* the segment that came out: its start */
static GstClockTime
segment_start (Fixture * f)
{
  GstEvent *ev;
  GstClockTime start = GST_CLOCK_TIME_NONE;

  while ((ev = gst_harness_try_pull_event (f->h))) {
    if (GST_EVENT_TYPE (ev) == GST_EVENT_SEGMENT) {
      const GstSegment *seg;
      gst_event_parse_segment (ev, &seg);
      start = seg->start;
    }
    gst_event_unref (ev);
  }
  return start;
}

static GstBuffer *
push_pull (Fixture * f, GstClockTime pts, GstClockTime dts)
{
  GstBuffer *b = gst_buffer_new ();

  GST_BUFFER_PTS (b) = pts;
  GST_BUFFER_DTS (b) = dts;
  GST_BUFFER_DURATION (b) = FRAME;
  fail_unless_equals_int (gst_harness_push (f->h, b), GST_FLOW_OK);
  return gst_harness_pull (f->h);
}

/* MPEG-2 (reorder depth 1), I0 P3 B1 B2 P6 B4 B5 in decode order from 0:
 * the timestamps move by a frame, each DTS the previous picture's PTS in
 * display order, never after its own PTS, increasing */
GST_START_TEST (test_dts_mpeg2_from_zero)
{
  const guint order[] = { 0, 3, 1, 2, 6, 4, 5 };
  /* the (n-1)-th smallest PTS, the first extrapolated a frame back */
  const gint want_dts[] = { -1, 0, 1, 2, 3, 4, 5 };
  Fixture f;
  guint i;

  fixture_start (&f, "video/mpeg,mpegversion=2,systemstream=false,"
      "framerate=25/1", 0);
  for (i = 0; i < G_N_ELEMENTS (order); i++) {
    GstBuffer *b = push_pull (&f, order[i] * FRAME, GST_CLOCK_TIME_NONE);

    if (i == 0)
      fail_unless_equals_uint64 (segment_start (&f), FRAME);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), order[i] * FRAME + FRAME);
    fail_unless_equals_uint64 (GST_BUFFER_DTS (b),
        (guint64) ((want_dts[i] + 1) * (gint64) FRAME));
    fail_unless (GST_BUFFER_DTS (b) <= GST_BUFFER_PTS (b));
    gst_buffer_unref (b);
  }
  fail_unless_equals_uint64 (dts_state_shift (f.d), FRAME);
  fixture_stop (&f);
}

GST_END_TEST;

/* a segment that starts a frame or more in needs no move */
GST_START_TEST (test_dts_no_shift_late_start)
{
  const guint order[] = { 10, 13, 11, 12 };
  const guint want_dts[] = { 9, 10, 11, 12 };
  Fixture f;
  guint i;

  fixture_start (&f, "video/mpeg,mpegversion=2,systemstream=false,"
      "framerate=25/1", 10 * FRAME);
  for (i = 0; i < G_N_ELEMENTS (order); i++) {
    GstBuffer *b = push_pull (&f, order[i] * FRAME, GST_CLOCK_TIME_NONE);

    if (i == 0)
      fail_unless_equals_uint64 (segment_start (&f), 10 * FRAME);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), order[i] * FRAME);
    fail_unless_equals_uint64 (GST_BUFFER_DTS (b), want_dts[i] * FRAME);
    gst_buffer_unref (b);
  }
  fail_unless_equals_uint64 (dts_state_shift (f.d), 0);
  fixture_stop (&f);
}

GST_END_TEST;

/* a stream with DTS keeps them (moved with the segment alike) */
GST_START_TEST (test_dts_kept)
{
  Fixture f;
  GstBuffer *b;

  fixture_start (&f, "video/mpeg,mpegversion=2,systemstream=false,"
      "framerate=25/1", 0);
  b = push_pull (&f, 3 * FRAME, 2 * FRAME);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (b), 4 * FRAME);
  fail_unless_equals_uint64 (GST_BUFFER_DTS (b), 3 * FRAME);
  gst_buffer_unref (b);
  fixture_stop (&f);
}

GST_END_TEST;

/* H.264 without an SPS to read (byte-stream, no codec_data): two frames
 * of reordering assumed once the first picture came (no move of the
 * segment: it went out before); a DTS never after its PTS when the stream
 * keeps to that, never decreasing even when it reorders deeper (then a
 * DTS can pass its PTS: no DTS fits both) */
static void
check_h264 (const guint * order, guint n, gboolean within)
{
  Fixture f;
  GstClockTime last = 0;
  guint i;

  fixture_start (&f, "video/x-h264,stream-format=byte-stream,alignment=au,"
      "framerate=25/1", 0);
  for (i = 0; i < n; i++) {
    GstBuffer *b = push_pull (&f, order[i] * FRAME, GST_CLOCK_TIME_NONE);

    fail_unless (GST_BUFFER_DTS_IS_VALID (b));
    if (within)
      fail_unless (GST_BUFFER_DTS (b) <= GST_BUFFER_PTS (b));
    fail_unless (GST_BUFFER_DTS (b) >= last);
    last = GST_BUFFER_DTS (b);
    gst_buffer_unref (b);
  }
  fail_unless_equals_uint64 (dts_state_shift (f.d), 0);
  fixture_stop (&f);
}

GST_START_TEST (test_dts_h264_assumed_depth)
{
  /* I0 P4 B2 b1 b3 (a B pyramid: depth 2), twice */
  const guint within[] = { 0, 4, 2, 1, 3, 8, 6, 5, 7 };
  /* I0 P8 B4 b2 b1 ...: depth 3 */
  const guint deeper[] = { 0, 8, 4, 2, 1, 3, 6, 5, 7 };

  check_h264 (within, G_N_ELEMENTS (within), TRUE);
  check_h264 (deeper, G_N_ELEMENTS (deeper), FALSE);
}

GST_END_TEST;

/* H.265 in Matroska (hvc1, no DTS): the reorder depth from the hvcC's SPS
 * (libx265, 4 B frames in a pyramid: sps_max_num_reorder_pics 2, as
 * ffprobe's has_b_frames says), I0 P4 B2 b1 b3 moved by two frames, each
 * DTS the (n-2)-th smallest PTS */
#define HVCC "0101600000009000000000003cf000fcfdf8f800000f03200001001840010c" \
  "01ffff01600000030090000003000003003c959809210001002a4201010160000003" \
  "0090000003000003003ca00a080f16595992930bc05a0200000300020000030032" \
  "1022000100064401c073c189"

GST_START_TEST (test_dts_h265_hvcc_depth)
{
  const guint order[] = { 0, 4, 2, 1, 3 };
  const guint want_dts[] = { 0, 1, 2, 3, 4 };
  Fixture f;
  guint i;

  fixture_start (&f, "video/x-h265,stream-format=hvc1,alignment=au,"
      "framerate=25/1,codec_data=(buffer)" HVCC, 0);
  for (i = 0; i < G_N_ELEMENTS (order); i++) {
    GstBuffer *b = push_pull (&f, order[i] * FRAME, GST_CLOCK_TIME_NONE);

    if (i == 0)
      fail_unless_equals_uint64 (segment_start (&f), 2 * FRAME);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), (order[i] + 2) * FRAME);
    fail_unless_equals_uint64 (GST_BUFFER_DTS (b), want_dts[i] * FRAME);
    gst_buffer_unref (b);
  }
  fail_unless_equals_uint64 (dts_state_shift (f.d), 2 * FRAME);
  fixture_stop (&f);
}

GST_END_TEST;

/* AV1 in Matroska: temporal units come in display order (hidden frames
 * inside them), so each DTS is its PTS and nothing moves */
GST_START_TEST (test_dts_av1_in_order)
{
  Fixture f;
  guint i;

  fixture_start (&f, "video/x-av1,stream-format=obu-stream,alignment=tu,"
      "framerate=25/1", 0);
  for (i = 0; i < 5; i++) {
    GstBuffer *b = push_pull (&f, i * FRAME, GST_CLOCK_TIME_NONE);

    if (i == 0)
      fail_unless_equals_uint64 (segment_start (&f), 0);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), i * FRAME);
    fail_unless_equals_uint64 (GST_BUFFER_DTS (b), i * FRAME);
    gst_buffer_unref (b);
  }
  fail_unless_equals_uint64 (dts_state_shift (f.d), 0);
  fixture_stop (&f);
}

GST_END_TEST;

static Suite *
server_dts_suite (void)
{
  Suite *s = suite_create ("server-dts");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_dts_mpeg2_from_zero);
  tcase_add_test (tc, test_dts_no_shift_late_start);
  tcase_add_test (tc, test_dts_kept);
  tcase_add_test (tc, test_dts_h264_assumed_depth);
  tcase_add_test (tc, test_dts_h265_hvcc_depth);
  tcase_add_test (tc, test_dts_av1_in_order);
  return s;
}

GST_CHECK_MAIN (server_dts);
