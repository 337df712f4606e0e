/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — GstTwoflowMerger, the sans-IO merge, on a virtual clock. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <gst/twoflow/twoflowmerger.h>

#define MS GST_MSECOND
#define ESS GST_TWOFLOW_MERGER_ESSENTIAL
#define ENH GST_TWOFLOW_MERGER_ENHANCED
#define PRE GST_TWOFLOW_MERGER_PREFIX

#define I GST_TWOFLOW_PICTURE_I
#define P GST_TWOFLOW_PICTURE_P
#define B GST_TWOFLOW_PICTURE_B

/* The GOP the tests use, in decode order: I P B B P B B ... (types of frame
 * n mod 12), 40 ms apart, frames 0, 12, ... essential. */
static const GstTwoflowPictureType gop[12] = { I, P, B, B, P, B, B, P, B, B,
  P, B
};

static GstTwoflowPictureType
type_of_frame (guint32 n)
{
  return gop[n % 12];
}

static guint64
history_before (guint32 n)
{
  guint64 h = 0;
  guint32 k;

  for (k = n >= 16 ? n - 16 : 0; k < n; k++)
    h = gst_twoflow_history_push (h, type_of_frame (k), type_of_frame (k) != B);
  return h;
}

static guint32
last_ref_before (guint32 n)
{
  while (n > 0 && type_of_frame (n - 1) == B)
    n--;
  return n > 0 ? n - 1 : 0;
}

/* Frame @n's header; its payload is 100 + n bytes of n. */
static void
frame (GstTwoflowMerger * m, GstTwoflowMergerFlow flow, guint32 n,
    GstClockTime now, GstTwoflowMergerResult want)
{
  GstTwoflowFrameHeader h;
  GstBuffer *payload = gst_buffer_new_allocate (NULL, 100 + n, NULL);
  GstTwoflowPictureType t = type_of_frame (n);

  gst_buffer_memset (payload, 0, n & 0xff, 100 + n);
  gst_twoflow_frame_header_init (&h);
  h.codec = GST_TWOFLOW_CODEC_MPEG2;
  h.picture_type = t;
  h.frame_no = n;
  h.gop_no = n / 12;
  h.flags = t != B ? GST_TWOFLOW_FLAG_REFERENCE : 0;
  if (t == I)
    h.flags |= GST_TWOFLOW_FLAG_ESSENTIAL;
  /* P: the previous reference; B: the one before that too */
  h.depends_from = t == I ? n : t == P ? last_ref_before (n) :
      last_ref_before (last_ref_before (n));
  h.history = history_before (n);
  h.dts = 10 * GST_SECOND + n * 40 * MS;
  h.duration = 40 * MS;
  fail_unless_equals_int (gst_twoflow_merger_handle_record (m, flow, &h,
          payload, now), want);
}

static void
caps (GstTwoflowMerger * m, GstTwoflowMergerFlow flow)
{
  GstTwoflowFrameHeader h;
  const gchar *s = "video/mpeg, mpegversion=(int)2, "
      "systemstream=(boolean)false, parsed=(boolean)true";

  gst_twoflow_frame_header_init (&h);
  h.kind = GST_TWOFLOW_RECORD_CAPS;
  h.codec = GST_TWOFLOW_CODEC_MPEG2;
  fail_unless_equals_int (gst_twoflow_merger_handle_record (m, flow, &h,
          gst_buffer_new_memdup (s, strlen (s)), 0), GST_TWOFLOW_MERGER_OK);
}

static void
end (GstTwoflowMerger * m, GstTwoflowMergerFlow flow, guint32 count,
    GstClockTime now)
{
  GstTwoflowFrameHeader h;

  gst_twoflow_frame_header_init (&h);
  h.kind = GST_TWOFLOW_RECORD_END;
  h.codec = GST_TWOFLOW_CODEC_MPEG2;
  h.frame_no = count;
  h.history = history_before (count);
  fail_unless_equals_int (gst_twoflow_merger_handle_record (m, flow, &h,
          gst_buffer_new (), now), GST_TWOFLOW_MERGER_OK);
}

static GstTwoflowMergerResult
audio_caps (GstTwoflowMerger * m, GstTwoflowMergerFlow flow)
{
  GstTwoflowFrameHeader h;
  const gchar *s = "audio/mpeg, mpegversion=(int)1, layer=(int)2, "
      "rate=(int)48000, channels=(int)2";

  gst_twoflow_frame_header_init (&h);
  h.kind = GST_TWOFLOW_RECORD_AUDIO_CAPS;
  return gst_twoflow_merger_handle_record (m, flow, &h,
      gst_buffer_new_memdup (s, strlen (s)), 0);
}

/* Audio buffer @k at @pts; 10 + k bytes. */
static GstTwoflowMergerResult
audio (GstTwoflowMerger * m, GstTwoflowMergerFlow flow, guint32 k,
    GstClockTime pts)
{
  GstTwoflowFrameHeader h;

  gst_twoflow_frame_header_init (&h);
  h.kind = GST_TWOFLOW_RECORD_AUDIO;
  h.flags = GST_TWOFLOW_FLAG_ESSENTIAL;
  h.frame_no = h.depends_from = k;
  h.pts = h.dts = pts;
  h.duration = 24 * MS;
  return gst_twoflow_merger_handle_record (m, flow, &h,
      gst_buffer_new_allocate (NULL, 10 + k, NULL), 0);
}

static GstTwoflowMerger *
merger_new (GstClockTime latency, gboolean drop_dependent)
{
  GstTwoflowMergerConfig c;

  gst_twoflow_merger_config_init (&c);
  c.latency = latency;
  c.drop_dependent = drop_dependent;
  return gst_twoflow_merger_new (&c);
}

/* Polls once at @now, expecting @want (and for frames/missing/dropped,
 * frame @n; for audio, audio buffer @n). */
static void
expect_at (gint line, GstTwoflowMerger * m, GstClockTime now,
    GstTwoflowMergerAction want, guint32 n)
{
  GstTwoflowMergerOutput out;
  GstTwoflowMergerAction got = gst_twoflow_merger_poll (m, now, &out);

  fail_unless (got == want, "line %d: poll gave %d, not %d (frame %u)", line,
      got, want, n);
  fail_unless_equals_int (out.action, got);
  switch (got) {
    case GST_TWOFLOW_MERGER_FRAME:
      fail_unless_equals_int (out.hdr.frame_no, n);
      fail_unless_equals_int (gst_buffer_get_size (out.buffer), 100 + n);
      fail_unless_equals_uint64 (GST_BUFFER_DTS (out.buffer),
          10 * GST_SECOND + n * 40 * MS);
      fail_unless_equals_uint64 (GST_BUFFER_DURATION (out.buffer), 40 * MS);
      fail_unless_equals_int (GST_BUFFER_FLAG_IS_SET (out.buffer,
              GST_BUFFER_FLAG_DELTA_UNIT), type_of_frame (n) != I);
      gst_buffer_unref (out.buffer);
      break;
    case GST_TWOFLOW_MERGER_AUDIO:
      fail_unless_equals_int (out.hdr.frame_no, n);
      fail_unless_equals_uint64 (GST_BUFFER_OFFSET (out.buffer), n);
      fail_unless_equals_int (gst_buffer_get_size (out.buffer), 10 + n);
      fail_unless_equals_uint64 (GST_BUFFER_DURATION (out.buffer), 24 * MS);
      fail_unless (GST_CLOCK_TIME_IS_VALID (GST_BUFFER_PTS (out.buffer)));
      gst_buffer_unref (out.buffer);
      break;
    case GST_TWOFLOW_MERGER_MISSING:
    case GST_TWOFLOW_MERGER_DROPPED:
      fail_unless_equals_int (out.hdr.frame_no, n);
      fail_unless (out.buffer == NULL);
      break;
    default:
      fail_unless (out.buffer == NULL);
      break;
  }
}

#define expect(...) expect_at (__LINE__, __VA_ARGS__)

/* A MISSING run from @first; returns its length. */
static guint32
expect_missing_run (GstTwoflowMerger * m, guint32 first)
{
  GstTwoflowMergerOutput out;

  fail_unless_equals_int (gst_twoflow_merger_poll (m, 0, &out),
      GST_TWOFLOW_MERGER_MISSING);
  fail_unless_equals_int (out.hdr.frame_no, first);
  fail_unless (out.count >= 1);
  return out.count;
}

/* A record of @size bytes (frame @n of type @t, independent of others). */
static GstTwoflowMergerResult
record (GstTwoflowMerger * m, GstTwoflowMergerFlow flow, guint32 n,
    GstTwoflowPictureType t, gsize size)
{
  GstTwoflowFrameHeader h;

  gst_twoflow_frame_header_init (&h);
  h.codec = GST_TWOFLOW_CODEC_MPEG2;
  h.picture_type = t;
  h.frame_no = h.depends_from = n;
  h.flags = t == I ? GST_TWOFLOW_FLAG_ESSENTIAL | GST_TWOFLOW_FLAG_REFERENCE
      : 0;
  h.dts = n * 40 * MS;
  h.duration = 40 * MS;
  return gst_twoflow_merger_handle_record (m, flow, &h,
      gst_buffer_new_allocate (NULL, size, NULL), 0);
}

static void
check_stat (GstTwoflowMerger * m, const gchar * field, guint64 want)
{
  GstStructure *s = gst_twoflow_merger_get_stats (m);
  guint64 v = G_MAXUINT64;

  fail_unless (gst_structure_get_uint64 (s, field, &v), "no %s", field);
  fail_unless_equals_uint64 (v, want);
  gst_structure_free (s);
}

/* Both flows complete: frames in decode order, EOS at the end record,
 * nothing counted missing, and EOS from then on. */
GST_START_TEST (test_in_order)
{
  GstTwoflowMerger *m = merger_new (0, TRUE);
  GstTwoflowMergerOutput out;
  guint32 n;

  caps (m, ESS);
  caps (m, ENH);
  expect (m, 0, GST_TWOFLOW_MERGER_WAIT, 0);
  for (n = 0; n < 24; n++)
    frame (m, type_of_frame (n) == I ? ESS : ENH, n, 0, GST_TWOFLOW_MERGER_OK);
  end (m, ESS, 24, 0);
  end (m, ENH, 24, 0);

  fail_unless_equals_int (gst_twoflow_merger_poll (m, 0, &out),
      GST_TWOFLOW_MERGER_FRAME);
  fail_unless (GST_BUFFER_FLAG_IS_SET (out.buffer, GST_BUFFER_FLAG_DISCONT));
  gst_buffer_unref (out.buffer);
  fail_unless_equals_uint64 (gst_twoflow_merger_get_segment_start (m),
      10 * GST_SECOND);
  fail_unless_equals_int (gst_twoflow_merger_poll (m, 0, &out),
      GST_TWOFLOW_MERGER_FRAME);
  fail_if (GST_BUFFER_FLAG_IS_SET (out.buffer, GST_BUFFER_FLAG_DISCONT));
  gst_buffer_unref (out.buffer);
  for (n = 2; n < 24; n++)
    expect (m, 0, GST_TWOFLOW_MERGER_FRAME, n);
  expect (m, 0, GST_TWOFLOW_MERGER_EOS, 0);
  expect (m, 0, GST_TWOFLOW_MERGER_EOS, 0);
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      GST_CLOCK_TIME_NONE);
  check_stat (m, "output-frames", 24);
  check_stat (m, "received-i", 2);
  check_stat (m, "received-p", 8);
  check_stat (m, "received-b", 14);
  check_stat (m, "E_f", 0);
  check_stat (m, "essential-queued-bytes", 0);
  check_stat (m, "enhanced-queued-bytes", 0);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* first-hold: the first frame waits for the one after it (at most
 * first-hold on the caller's clock), so a viewer does not see it alone
 * until the enhanced flow's playout buffer lets the second one go. */
GST_START_TEST (test_first_hold)
{
  GstTwoflowMergerConfig c;
  GstTwoflowMerger *m;
  const GstClockTime t0 = 5 * GST_SECOND;

  gst_twoflow_merger_config_init (&c);
  c.first_hold = 500 * MS;
  m = gst_twoflow_merger_new (&c);
  caps (m, ESS);
  caps (m, ENH);
  frame (m, ESS, 0, t0, GST_TWOFLOW_MERGER_OK);
  /* the essential flow moves on (the next I): frame 1 can still come */
  frame (m, ESS, 12, t0, GST_TWOFLOW_MERGER_OK);
  expect (m, t0, GST_TWOFLOW_MERGER_WAIT, 0);
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      t0 + 500 * MS);
  expect (m, t0 + 300 * MS, GST_TWOFLOW_MERGER_WAIT, 0);
  /* the second frame: both go */
  frame (m, ENH, 1, t0 + 400 * MS, GST_TWOFLOW_MERGER_OK);
  expect (m, t0 + 400 * MS, GST_TWOFLOW_MERGER_FRAME, 0);
  expect (m, t0 + 400 * MS, GST_TWOFLOW_MERGER_FRAME, 1);
  expect (m, t0 + 400 * MS, GST_TWOFLOW_MERGER_WAIT, 0);
  gst_twoflow_merger_free (m);

  /* no second frame: the first goes after first-hold */
  m = gst_twoflow_merger_new (&c);
  caps (m, ESS);
  frame (m, ESS, 0, t0, GST_TWOFLOW_MERGER_OK);
  expect (m, t0, GST_TWOFLOW_MERGER_WAIT, 0);
  expect (m, t0 + 500 * MS - 1, GST_TWOFLOW_MERGER_WAIT, 0);
  expect (m, t0 + 500 * MS, GST_TWOFLOW_MERGER_FRAME, 0);
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      GST_CLOCK_TIME_NONE);
  gst_twoflow_merger_free (m);

  /* the second frame will never come (the enhanced flow is past it): no
   * wait */
  m = gst_twoflow_merger_new (&c);
  caps (m, ESS);
  caps (m, ENH);
  frame (m, ESS, 0, t0, GST_TWOFLOW_MERGER_OK);
  frame (m, ESS, 12, t0, GST_TWOFLOW_MERGER_OK);
  frame (m, ENH, 2, t0, GST_TWOFLOW_MERGER_OK);
  expect (m, t0, GST_TWOFLOW_MERGER_FRAME, 0);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* A late enhanced frame is waited for exactly `latency` from the moment
 * its turn came with the essential flow past it, on the caller's clock. */
GST_START_TEST (test_latency_exact)
{
  GstTwoflowMerger *m = merger_new (100 * MS, TRUE);
  const GstClockTime t0 = 5 * GST_SECOND;

  caps (m, ESS);
  frame (m, ESS, 0, t0, GST_TWOFLOW_MERGER_OK);
  expect (m, t0, GST_TWOFLOW_MERGER_FRAME, 0);
  /* frame 1 (P) is next but the essential flow has not moved past it */
  expect (m, t0, GST_TWOFLOW_MERGER_WAIT, 0);
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      GST_CLOCK_TIME_NONE);
  /* frame 12 arrives at t0 + 1 s: the wait starts then, though the next
   * poll comes 30 ms later */
  frame (m, ESS, 12, t0 + GST_SECOND, GST_TWOFLOW_MERGER_OK);
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      t0 + GST_SECOND + 100 * MS);
  expect (m, t0 + GST_SECOND + 30 * MS, GST_TWOFLOW_MERGER_WAIT, 0);
  expect (m, t0 + GST_SECOND + 100 * MS - 1, GST_TWOFLOW_MERGER_WAIT, 0);
  check_stat (m, "missing-p", 0);
  expect (m, t0 + GST_SECOND + 100 * MS, GST_TWOFLOW_MERGER_MISSING, 1);
  check_stat (m, "missing-p", 1);       /* typed from frame 12's history */

  /* frame 2 (B, predicts from the missing P): a wait of its own from now */
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      GST_CLOCK_TIME_NONE);
  expect (m, t0 + 2 * GST_SECOND, GST_TWOFLOW_MERGER_WAIT, 0);
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      t0 + 2 * GST_SECOND + 100 * MS);
  /* it arrives in time, but cannot be decoded: dropped */
  frame (m, ENH, 2, t0 + 2 * GST_SECOND + 99 * MS, GST_TWOFLOW_MERGER_OK);
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      GST_CLOCK_TIME_NONE);
  expect (m, t0 + 2 * GST_SECOND + 99 * MS, GST_TWOFLOW_MERGER_DROPPED, 2);
  check_stat (m, "dropped", 1);

  /* a longer latency set while waiting moves the deadline */
  expect (m, t0 + 3 * GST_SECOND, GST_TWOFLOW_MERGER_WAIT, 0);
  {
    GstTwoflowMergerConfig c;

    gst_twoflow_merger_config_init (&c);
    c.latency = 500 * MS;
    gst_twoflow_merger_set_config (m, &c);
  }
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      t0 + 3 * GST_SECOND + 500 * MS);
  expect (m, t0 + 3 * GST_SECOND + 400 * MS, GST_TWOFLOW_MERGER_WAIT, 0);
  expect (m, t0 + 3 * GST_SECOND + 500 * MS, GST_TWOFLOW_MERGER_MISSING, 3);
  check_stat (m, "missing-b", 1);
  check_stat (m, "E_f", 3);

  /* a new clock (another time base): the wait for frame 4 starts again */
  expect (m, t0 + 4 * GST_SECOND, GST_TWOFLOW_MERGER_WAIT, 0);
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      t0 + 4 * GST_SECOND + 500 * MS);
  gst_twoflow_merger_restart_wait (m, 7 * MS);
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m), 507 * MS);
  expect (m, 506 * MS, GST_TWOFLOW_MERGER_WAIT, 0);
  expect (m, 507 * MS, GST_TWOFLOW_MERGER_MISSING, 4);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* latency 0: a frame is missing only once the enhanced flow has moved past
 * it or ended; there is never a deadline. */
GST_START_TEST (test_latency_zero)
{
  GstTwoflowMerger *m = merger_new (0, FALSE);

  caps (m, ESS);
  frame (m, ESS, 0, 0, GST_TWOFLOW_MERGER_OK);
  frame (m, ESS, 12, 0, GST_TWOFLOW_MERGER_OK);
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 0);
  expect (m, 10 * GST_SECOND, GST_TWOFLOW_MERGER_WAIT, 0);
  fail_unless_equals_uint64 (gst_twoflow_merger_next_wakeup (m),
      GST_CLOCK_TIME_NONE);
  frame (m, ENH, 3, 0, GST_TWOFLOW_MERGER_OK);
  expect (m, 0, GST_TWOFLOW_MERGER_MISSING, 1);
  expect (m, 0, GST_TWOFLOW_MERGER_MISSING, 2);
  /* kept though undecodable: drop-dependent is off */
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 3);
  expect (m, 0, GST_TWOFLOW_MERGER_WAIT, 0);
  gst_twoflow_merger_handle_eos (m, ENH, 0);
  for (guint32 n = 4; n < 12; n++)
    expect (m, 0, GST_TWOFLOW_MERGER_MISSING, n);
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 12);
  expect (m, 0, GST_TWOFLOW_MERGER_WAIT, 0);
  /* no end record: both flows ended with nothing left is the end */
  gst_twoflow_merger_handle_eos (m, ESS, 0);
  expect (m, 0, GST_TWOFLOW_MERGER_EOS, 0);
  check_stat (m, "missing-p", 4);       /* 1 4 7 10 */
  check_stat (m, "missing-b", 6);       /* 2 5 6 8 9 11 */
  /* counted as undecodable, though output */
  check_stat (m, "dropped", 1);
  check_stat (m, "output-frames", 3);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* A missing frame's type comes from the history of the next record within
 * 16 frames, or of the end record; beyond that it is unknown. */
GST_START_TEST (test_missing_typed)
{
  GstTwoflowMerger *m = merger_new (0, TRUE);
  guint32 n;

  caps (m, ESS);
  frame (m, ESS, 0, 0, GST_TWOFLOW_MERGER_OK);
  /* frames 1..19 lost; frame 20 (B) arrives: 4..19 are within its
   * history, 1..3 are not */
  frame (m, ENH, 20, 0, GST_TWOFLOW_MERGER_OK);
  frame (m, ESS, 24, 0, GST_TWOFLOW_MERGER_OK);
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 0);
  /* 1..3, before the history: one run */
  fail_unless_equals_int (expect_missing_run (m, 1), 3);
  for (n = 4; n < 20; n++)
    expect (m, 0, GST_TWOFLOW_MERGER_MISSING, n);
  check_stat (m, "missing-unknown", 3);
  check_stat (m, "missing-i", 1);       /* frame 12 */
  check_stat (m, "missing-p", 6);       /* 4 7 10 13 16 19 */
  expect (m, 0, GST_TWOFLOW_MERGER_DROPPED, 20);
  /* trailing losses typed by the end record; the essential flow's end
   * record says it has nothing more, no EOS needed */
  end (m, ESS, 30, 0);
  end (m, ENH, 30, 0);
  gst_twoflow_merger_handle_eos (m, ENH, 0);
  for (n = 21; n < 24; n++)
    expect (m, 0, GST_TWOFLOW_MERGER_MISSING, n);
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 24);
  for (n = 25; n < 30; n++)
    expect (m, 0, GST_TWOFLOW_MERGER_MISSING, n);
  expect (m, 0, GST_TWOFLOW_MERGER_EOS, 0);
  check_stat (m, "missing-unknown", 3);
  check_stat (m, "missing-i", 1);
  /* P: 4 7 10 13 16 19 22 25 28 */
  check_stat (m, "missing-p", 9);
  /* B: 5 6 8 9 11 14 15 17 18 21 23 26 27 29 */
  check_stat (m, "missing-b", 14);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* The prefix and the essential flow overlap; the enhanced flow repeats,
 * reorders, comes late, or starts before the first essential frame. */
GST_START_TEST (test_duplicates)
{
  GstTwoflowMerger *m = merger_new (0, TRUE);
  guint32 n;

  caps (m, PRE);
  frame (m, PRE, 12, 0, GST_TWOFLOW_MERGER_OK);
  frame (m, PRE, 24, 0, GST_TWOFLOW_MERGER_OK);
  caps (m, ESS);
  frame (m, ESS, 24, 0, GST_TWOFLOW_MERGER_OK); /* dup */
  frame (m, ESS, 36, 0, GST_TWOFLOW_MERGER_OK);
  /* enhanced frames before the first essential one are dropped */
  frame (m, ENH, 10, 0, GST_TWOFLOW_MERGER_OK);
  frame (m, ENH, 11, 0, GST_TWOFLOW_MERGER_OK);
  frame (m, ENH, 14, 0, GST_TWOFLOW_MERGER_OK);
  frame (m, ENH, 13, 0, GST_TWOFLOW_MERGER_OK); /* reordered */
  frame (m, ENH, 14, 0, GST_TWOFLOW_MERGER_OK); /* dup */
  check_stat (m, "prefix-frames", 2);
  check_stat (m, "duplicates", 2);
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 12);
  check_stat (m, "duplicates", 4);      /* + 10, 11 */
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 13);
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 14);
  /* (24 also in the enhanced flow: once 24 is out, a stale head) */
  for (n = 15; n < 36; n++)
    frame (m, ENH, n, 0, GST_TWOFLOW_MERGER_OK);
  for (n = 15; n < 24; n++)
    expect (m, 0, GST_TWOFLOW_MERGER_FRAME, n);
  frame (m, ENH, 20, 0, GST_TWOFLOW_MERGER_OK); /* its turn has passed */
  check_stat (m, "duplicates", 5);
  for (n = 24; n < 37; n++)
    expect (m, 0, GST_TWOFLOW_MERGER_FRAME, n);
  check_stat (m, "duplicates", 6);
  check_stat (m, "output-frames", 25);
  check_stat (m, "E_f", 0);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

static GstClockTime
audio_pts (guint32 k)
{
  return 10 * GST_SECOND - 30 * MS + k * 24 * MS;
}

/* Audio comes out in its order, each once its PTS is not after the next
 * frame's DTS, the rest after the last frame; the end waits for the
 * essential flow's end; both flows' first timestamps start the segment. */
GST_START_TEST (test_audio_interleave)
{
  GstTwoflowMerger *m = merger_new (0, TRUE);
  GstTwoflowMergerOutput out;
  guint32 k = 0, n, a;

  caps (m, PRE);
  fail_unless_equals_int (audio_caps (m, PRE), GST_TWOFLOW_MERGER_OK);
  /* the prefix: audio before frame 0, frame 0, audio up to frame 12 */
  for (; audio_pts (k) < 10 * GST_SECOND; k++)
    fail_unless_equals_int (audio (m, PRE, k, audio_pts (k)),
        GST_TWOFLOW_MERGER_OK);
  frame (m, PRE, 0, 0, GST_TWOFLOW_MERGER_OK);
  for (; audio_pts (k) < 10 * GST_SECOND + 12 * 40 * MS; k++)
    fail_unless_equals_int (audio (m, PRE, k, audio_pts (k)),
        GST_TWOFLOW_MERGER_OK);

  fail_unless_equals_int (gst_twoflow_merger_poll (m, 0, &out),
      GST_TWOFLOW_MERGER_AUDIO_CAPS);
  fail_unless (g_str_has_prefix (out.caps, "audio/mpeg"));
  fail_unless_equals_string (gst_twoflow_merger_get_audio_caps (m), out.caps);
  /* the audio starts 30 ms before the video */
  expect (m, 0, GST_TWOFLOW_MERGER_AUDIO, 0);
  fail_unless_equals_uint64 (gst_twoflow_merger_get_segment_start (m),
      audio_pts (0));
  expect (m, 0, GST_TWOFLOW_MERGER_AUDIO, 1);
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 0);
  /* frame 1 is not there: audio waits for it too */
  expect (m, 0, GST_TWOFLOW_MERGER_WAIT, 0);

  /* the essential pad repeats the prefix's last 5 audio buffers */
  a = k;
  for (k = a - 5; audio_pts (k) < 10 * GST_SECOND + 24 * 40 * MS; k++) {
    if (k == a)
      frame (m, ESS, 12, 0, GST_TWOFLOW_MERGER_OK);
    fail_unless_equals_int (audio (m, ESS, k, audio_pts (k)),
        GST_TWOFLOW_MERGER_OK);
  }
  check_stat (m, "audio-duplicates", 5);
  for (n = 1; n < 12; n++)
    frame (m, ENH, n, 0, GST_TWOFLOW_MERGER_OK);
  end (m, ENH, 13, 0);
  gst_twoflow_merger_handle_eos (m, ENH, 0);

  /* merged order: by time, audio first on a tie */
  a = 2;
  for (n = 1; n <= 12; n++) {
    GstClockTime t = 10 * GST_SECOND + n * 40 * MS;

    for (; audio_pts (a) <= t; a++)
      expect (m, 0, GST_TWOFLOW_MERGER_AUDIO, a);
    expect (m, 0, GST_TWOFLOW_MERGER_FRAME, n);
  }
  /* the video is over (13 frames) but the essential flow is not: its
   * audio may still come */
  for (; a < k; a++)
    expect (m, 0, GST_TWOFLOW_MERGER_AUDIO, a);
  expect (m, 0, GST_TWOFLOW_MERGER_WAIT, 0);
  fail_unless_equals_int (audio (m, ESS, k, audio_pts (k)),
      GST_TWOFLOW_MERGER_OK);
  expect (m, 0, GST_TWOFLOW_MERGER_AUDIO, k);
  expect (m, 0, GST_TWOFLOW_MERGER_WAIT, 0);
  end (m, ESS, 13, 0);
  expect (m, 0, GST_TWOFLOW_MERGER_EOS, 0);
  check_stat (m, "audio-buffers", k + 1);
  check_stat (m, "output-frames", 13);
  check_stat (m, "essential-queued-bytes", 0);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* Audio records out of place fail the merge with a reason. */
GST_START_TEST (test_audio_errors)
{
  GstTwoflowMerger *m;
  GstTwoflowMergerOutput out;

  m = merger_new (0, TRUE);
  fail_unless_equals_int (audio (m, ESS, 0, 0), GST_TWOFLOW_MERGER_INVALID);
  fail_unless_equals_string (gst_twoflow_merger_get_error (m),
      "audio record 0 before the audio caps record");
  fail_unless_equals_int (gst_twoflow_merger_poll (m, 0, &out),
      GST_TWOFLOW_MERGER_ERROR);
  fail_unless_equals_string (out.reason,
      "audio record 0 before the audio caps record");
  /* failed for good */
  frame (m, ESS, 0, 0, GST_TWOFLOW_MERGER_INVALID);
  gst_twoflow_merger_free (m);

  m = merger_new (0, TRUE);
  fail_unless_equals_int (audio_caps (m, ESS), GST_TWOFLOW_MERGER_OK);
  fail_unless_equals_int (audio (m, ESS, 7, 0), GST_TWOFLOW_MERGER_OK);
  fail_unless_equals_int (audio (m, ESS, 9, 0), GST_TWOFLOW_MERGER_INVALID);
  fail_unless_equals_string (gst_twoflow_merger_get_error (m),
      "audio record 9 out of order (expected 8)");
  gst_twoflow_merger_free (m);

  m = merger_new (0, TRUE);
  fail_unless_equals_int (audio_caps (m, ENH), GST_TWOFLOW_MERGER_INVALID);
  fail_unless (strstr (gst_twoflow_merger_get_error (m),
          "on the enhanced flow"));
  gst_twoflow_merger_free (m);

  m = merger_new (0, TRUE);
  caps (m, ESS);
  frame (m, ESS, 0, 0, GST_TWOFLOW_MERGER_OK);
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 0);
  fail_unless_equals_int (audio_caps (m, ESS), GST_TWOFLOW_MERGER_INVALID);
  fail_unless_equals_string (gst_twoflow_merger_get_error (m),
      "audio caps record after the video started");
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* More essential bytes held than allowed fails; the prefix is exempt. */
GST_START_TEST (test_full)
{
  GstTwoflowMergerConfig c;
  GstTwoflowMerger *m;
  GstTwoflowMergerOutput out;

  gst_twoflow_merger_config_init (&c);
  /* the prefix is not checked; its three records are at the limit */
  c.max_essential_bytes = 336 + 3 * GST_TWOFLOW_MERGER_RECORD_OVERHEAD;
  m = gst_twoflow_merger_new (&c);
  caps (m, PRE);
  frame (m, PRE, 0, 0, GST_TWOFLOW_MERGER_OK);
  frame (m, PRE, 12, 0, GST_TWOFLOW_MERGER_OK);
  frame (m, PRE, 24, 0, GST_TWOFLOW_MERGER_OK);
  fail_unless_equals_uint64 (gst_twoflow_merger_queued_bytes (m, ESS),
      336 + 3 * GST_TWOFLOW_MERGER_RECORD_OVERHEAD);
  expect (m, 0, GST_TWOFLOW_MERGER_FRAME, 0);
  frame (m, ESS, 36, 0, GST_TWOFLOW_MERGER_FULL);
  fail_unless (strstr (gst_twoflow_merger_get_error (m), "too far ahead"));
  fail_unless_equals_int (gst_twoflow_merger_poll (m, 0, &out),
      GST_TWOFLOW_MERGER_ERROR);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* A jump in frame numbers (a forged or broken stream) costs a few polls,
 * not one per skipped frame; the skipped frames are counted missing. */
GST_START_TEST (test_jump)
{
  GstTwoflowMerger *m = merger_new (0, TRUE);
  GstTwoflowMergerOutput out;
  guint32 far = 4294967290u;
  guint polls = 0, missing = 0;

  caps (m, ESS);
  fail_unless_equals_int (record (m, ESS, 0, I, 10), GST_TWOFLOW_MERGER_OK);
  fail_unless_equals_int (record (m, ESS, far, I, 10), GST_TWOFLOW_MERGER_OK);
  gst_twoflow_merger_handle_eos (m, ENH, 0);
  gst_twoflow_merger_handle_eos (m, ESS, 0);
  while (gst_twoflow_merger_poll (m, 0, &out) != GST_TWOFLOW_MERGER_EOS) {
    fail_unless (++polls < 100);
    if (out.action == GST_TWOFLOW_MERGER_MISSING)
      missing += out.count;
    if (out.buffer)
      gst_buffer_unref (out.buffer);
  }
  fail_unless_equals_int (missing, far - 1);
  check_stat (m, "output-frames", 2);
  check_stat (m, "E_f", far - 1);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* Enhanced records in reverse order are put in place in O(log n) each
 * (a list walk made 80,000 of them take minutes: this test's timeout). */
GST_START_TEST (test_reverse_order)
{
  GstTwoflowMerger *m = merger_new (0, TRUE);
  GstTwoflowMergerOutput out;
  const guint32 n = 100000;
  guint32 k, next = 0;

  caps (m, ESS);
  fail_unless_equals_int (record (m, ESS, 0, I, 1), GST_TWOFLOW_MERGER_OK);
  for (k = n; k >= 1; k--)
    fail_unless_equals_int (record (m, ENH, k, B, 1), GST_TWOFLOW_MERGER_OK);
  check_stat (m, "enhanced-queued-bytes",
      (guint64) n * (1 + GST_TWOFLOW_MERGER_RECORD_OVERHEAD));
  gst_twoflow_merger_handle_eos (m, ENH, 0);
  gst_twoflow_merger_handle_eos (m, ESS, 0);
  while (gst_twoflow_merger_poll (m, 0, &out) == GST_TWOFLOW_MERGER_FRAME) {
    fail_unless_equals_int (out.hdr.frame_no, next++);
    gst_buffer_unref (out.buffer);
  }
  fail_unless_equals_int (out.action, GST_TWOFLOW_MERGER_EOS);
  fail_unless_equals_int (next, n + 1);
  check_stat (m, "enhanced-queued-bytes", 0);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* Every record counts toward the limits, empty ones too: records past
 * max_records, or empty records past max_essential_bytes, fail the merge. */
GST_START_TEST (test_record_limits)
{
  GstTwoflowMergerConfig c;
  GstTwoflowMerger *m;
  guint32 k;

  gst_twoflow_merger_config_init (&c);
  fail_unless (c.max_records > 0);
  c.max_records = 1000;
  m = gst_twoflow_merger_new (&c);
  caps (m, ESS);
  for (k = 0; k < 1000; k++)
    fail_unless_equals_int (record (m, ESS, k * 12, I, 0),
        GST_TWOFLOW_MERGER_OK);
  check_stat (m, "essential-queued-bytes",
      1000 * GST_TWOFLOW_MERGER_RECORD_OVERHEAD);
  fail_unless_equals_int (record (m, ENH, 1, B, 0), GST_TWOFLOW_MERGER_FULL);
  fail_unless (strstr (gst_twoflow_merger_get_error (m), "max-records"));
  gst_twoflow_merger_free (m);

  gst_twoflow_merger_config_init (&c);
  c.max_essential_bytes = 100 * GST_TWOFLOW_MERGER_RECORD_OVERHEAD;
  m = gst_twoflow_merger_new (&c);
  caps (m, ESS);
  for (k = 0; k < 100; k++)
    fail_unless_equals_int (record (m, ESS, k * 12, I, 0),
        GST_TWOFLOW_MERGER_OK);
  fail_unless_equals_int (record (m, ESS, 1200, I, 0),
      GST_TWOFLOW_MERGER_FULL);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

/* An empty essential flow ends the merge; a flush forgets what waits. */
GST_START_TEST (test_eos_flush)
{
  GstTwoflowMerger *m = merger_new (0, TRUE);

  caps (m, ESS);
  frame (m, ESS, 0, 0, GST_TWOFLOW_MERGER_OK);
  frame (m, ENH, 1, 0, GST_TWOFLOW_MERGER_OK);
  gst_twoflow_merger_flush (m, ESS);
  gst_twoflow_merger_flush (m, ENH);
  check_stat (m, "essential-queued-bytes", 0);
  check_stat (m, "enhanced-queued-bytes", 0);
  expect (m, 0, GST_TWOFLOW_MERGER_WAIT, 0);
  gst_twoflow_merger_handle_eos (m, ESS, 0);
  expect (m, 0, GST_TWOFLOW_MERGER_EOS, 0);
  check_stat (m, "output-frames", 0);
  gst_twoflow_merger_free (m);
}

GST_END_TEST;

static Suite *
twoflowmerger_suite (void)
{
  Suite *s = suite_create ("twoflowmerger");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_in_order);
  tcase_add_test (tc, test_latency_exact);
  tcase_add_test (tc, test_first_hold);
  tcase_add_test (tc, test_latency_zero);
  tcase_add_test (tc, test_missing_typed);
  tcase_add_test (tc, test_duplicates);
  tcase_add_test (tc, test_audio_interleave);
  tcase_add_test (tc, test_audio_errors);
  tcase_add_test (tc, test_full);
  tcase_add_test (tc, test_eos_flush);
  tcase_add_test (tc, test_jump);
  tcase_add_test (tc, test_reverse_order);
  tcase_add_test (tc, test_record_limits);
  return s;
}

GST_CHECK_MAIN (twoflowmerger);
