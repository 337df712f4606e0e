/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: H.265 and AV1 through twoflowsplit and twoflowmerge, on clips
 * made with ffmpeg (libx265: closed and open GOPs, B pyramids, Main 10,
 * hvc1 in MP4, interlaced field pictures; libsvtav1 and libaom:
 * hierarchical references, hidden frames shown by show_existing_frame). */
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/twoflow/twoflowframe.h>

#include "twoflowtestutil.h"

#define SPLIT_MERGE \
  "twoflowsplit %s name=s twoflowmerge name=m drop-dependent=true ! " \
  "filesink name=out location=%s " \
  "s.essential ! queue max-size-buffers=0 max-size-bytes=0 max-size-time=0 ! m.essential " \
  "s.enhanced ! queue max-size-buffers=0 max-size-bytes=0 max-size-time=0 ! m.enhanced"

/* Which enhanced frames a test loses on the way to the merge. */
typedef enum {
  LOSE_NONE,
  LOSE_ALL,                     /* the essential flow alone */
  LOSE_SECOND_GOP,              /* every other frame of GOP 1 */
} Loss;

typedef struct {
  GMutex lock;
  Loss loss;
  GArray *frames;               /* every frame header the split made */
  guint essential, lost, references_lost;
} Flows;

static gboolean
frame_header (GstBuffer * buf, GstTwoflowFrameHeader * hdr)
{
  guint8 raw[GST_TWOFLOW_HEADER_SIZE];

  fail_unless_equals_int (gst_buffer_extract (buf, 0, raw, sizeof (raw)),
      sizeof (raw));
  fail_unless_equals_int (gst_twoflow_frame_header_parse (raw, sizeof (raw),
          hdr), GST_TWOFLOW_PARSE_OK);
  return hdr->kind == GST_TWOFLOW_RECORD_FRAME;
}

static GstPadProbeReturn
split_probe (GstPad * pad, GstPadProbeInfo * info, Flows * f)
{
  GstTwoflowFrameHeader hdr;

  if (frame_header (GST_PAD_PROBE_INFO_BUFFER (info), &hdr)) {
    g_mutex_lock (&f->lock);
    g_array_append_val (f->frames, hdr);
    if (hdr.flags & GST_TWOFLOW_FLAG_ESSENTIAL)
      f->essential++;
    g_mutex_unlock (&f->lock);
  }
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
loss_probe (GstPad * pad, GstPadProbeInfo * info, Flows * f)
{
  GstTwoflowFrameHeader hdr;
  gboolean drop = FALSE;

  if (frame_header (GST_PAD_PROBE_INFO_BUFFER (info), &hdr)) {
    drop = f->loss == LOSE_ALL || (f->loss == LOSE_SECOND_GOP
        && hdr.gop_no == 1 && hdr.frame_no % 2 == 0);
    if (drop) {
      g_mutex_lock (&f->lock);
      f->lost++;
      if (hdr.flags & GST_TWOFLOW_FLAG_REFERENCE)
        f->references_lost++;
      g_mutex_unlock (&f->lock);
    }
  }
  return drop ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

/* The parsed elementary stream of @media, the round trip's reference. */
static gchar *
parsed_reference (const gchar * media)
{
  gchar *name = g_strconcat ("parsed", twoflow_test_es_suffix (media), NULL);
  gchar *out = twoflow_test_tmpfile (name);
  gchar *desc = g_strdup_printf ("filesrc location=%s ! %s ! filesink "
      "location=%s", media, twoflow_test_parser_for (media), out);
  gchar *err = NULL;

  fail_unless (twoflow_test_run (desc, &err), "%s", err);
  g_free (desc);
  g_free (name);
  return out;
}

/* split → merge in one pipeline, the enhanced flow losing what @loss
 * says; returns the merged file and fills @f and the merge's output
 * frame count */
static gchar *
split_merge (const gchar * media, const gchar * policy, Loss loss, Flows * f,
    guint64 * output_frames)
{
  gchar *name = g_strconcat ("merged", twoflow_test_es_suffix (media), NULL);
  gchar *out = twoflow_test_tmpfile (name);
  gchar *desc = g_strdup_printf ("filesrc location=%s ! %s ! " SPLIT_MERGE,
      media, twoflow_test_parser_for (media), policy, out);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *split = gst_bin_get_by_name (GST_BIN (pipeline), "s");
  GstElement *merge = gst_bin_get_by_name (GST_BIN (pipeline), "m");
  GstPad *ess = gst_element_get_static_pad (split, "essential");
  GstPad *enh = gst_element_get_static_pad (split, "enhanced");
  GstPad *menh = gst_element_get_static_pad (merge, "enhanced");
  GstStructure *s;
  gchar *err = NULL;

  memset (f, 0, sizeof (*f));
  g_mutex_init (&f->lock);
  f->loss = loss;
  f->frames = g_array_new (FALSE, FALSE, sizeof (GstTwoflowFrameHeader));
  gst_pad_add_probe (ess, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) split_probe, f, NULL);
  gst_pad_add_probe (enh, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) split_probe, f, NULL);
  gst_pad_add_probe (menh, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) loss_probe, f, NULL);
  fail_unless (twoflow_test_run_pipeline (pipeline, &err), "%s: %s", media,
      err);
  g_object_get (merge, "stats", &s, NULL);
  fail_unless (gst_structure_get_uint64 (s, "output-frames", output_frames));
  GST_INFO ("%s %s: %" GST_PTR_FORMAT, media, policy, s);
  gst_structure_free (s);

  gst_object_unref (ess);
  gst_object_unref (enh);
  gst_object_unref (menh);
  gst_object_unref (split);
  gst_object_unref (merge);
  gst_object_unref (pipeline);
  g_free (desc);
  g_free (name);
  return out;
}

static void
flows_clear (Flows * f)
{
  g_array_free (f->frames, TRUE);
  g_mutex_clear (&f->lock);
}

static guint
count_type (Flows * f, GstTwoflowPictureType type)
{
  guint i, n = 0;

  for (i = 0; i < f->frames->len; i++)
    n += g_array_index (f->frames, GstTwoflowFrameHeader, i).picture_type ==
        type;
  return n;
}

/* Byte-identical round trip, every frame decoded; returns the decoded
 * count. Checks the split's classes against @policy. */
static guint
roundtrip (const gchar * media, const gchar * policy, Flows * f)
{
  gchar *ref = parsed_reference (media);
  guint64 output_frames;
  gchar *out = split_merge (media, policy, LOSE_NONE, f, &output_frames);
  GBytes *a = twoflow_test_read (ref), *b = twoflow_test_read (out);
  gboolean ip = strstr (policy, "ip") != NULL;
  gchar *err = NULL;
  guint decoded, i;

  fail_unless (g_bytes_get_size (a) > 0);
  fail_unless (g_bytes_equal (a, b), "%s %s: merged %" G_GSIZE_FORMAT
      " bytes differ from the parsed %" G_GSIZE_FORMAT, media, policy,
      g_bytes_get_size (b), g_bytes_get_size (a));
  fail_unless_equals_uint64 (output_frames, f->frames->len);
  for (i = 0; i < f->frames->len; i++) {
    GstTwoflowFrameHeader *h = &g_array_index (f->frames,
        GstTwoflowFrameHeader, i);
    gboolean want = h->picture_type == GST_TWOFLOW_PICTURE_I
        || (ip && h->picture_type == GST_TWOFLOW_PICTURE_P);

    fail_unless_equals_int (!!(h->flags & GST_TWOFLOW_FLAG_ESSENTIAL), want);
    /* the classes: I and P are what later frames reference, B not */
    fail_unless_equals_int (!!(h->flags & GST_TWOFLOW_FLAG_REFERENCE),
        h->picture_type != GST_TWOFLOW_PICTURE_B);
  }
  if (g_str_has_suffix (out, ".mp4")) {
    decoded = f->frames->len;   /* hvc1 without its container: see below */
  } else {
    decoded = twoflow_test_count_decoded (out, &err);
    fail_unless (decoded != G_MAXUINT, "decoding %s: %s", out, err);
    fail_unless_equals_int (decoded, twoflow_test_count_decoded (media,
            NULL));
  }
  g_bytes_unref (a);
  g_bytes_unref (b);
  g_unlink (ref);
  g_unlink (out);
  g_free (ref);
  g_free (out);
  return decoded;
}

/* A lossy merge: what comes out decodes without a decoder warning, frame
 * for frame; returns the merge's output frame count. */
static guint64
lossy (const gchar * media, const gchar * policy, Loss loss, Flows * f)
{
  guint64 output_frames;
  gchar *out = split_merge (media, policy, loss, f, &output_frames);
  gchar *err = NULL;
  guint decoded = twoflow_test_count_decoded (out, &err);

  fail_unless (decoded != G_MAXUINT, "decoding the lossy %s: %s", out, err);
  fail_unless_equals_uint64 (decoded, output_frames);
  g_unlink (out);
  g_free (out);
  return output_frames;
}

/* The essential flow alone decodes, both policies: every essential frame
 * comes out of the decoder. */
static void
essential_alone (const gchar * media)
{
  Flows f;
  guint64 out;

  out = lossy (media, "", LOSE_ALL, &f);
  fail_unless_equals_uint64 (out, f.essential);
  fail_unless_equals_int (f.essential, count_type (&f, GST_TWOFLOW_PICTURE_I));
  flows_clear (&f);
  out = lossy (media, "policy=ip", LOSE_ALL, &f);
  fail_unless_equals_uint64 (out, f.essential);
  fail_unless (f.essential > count_type (&f, GST_TWOFLOW_PICTURE_I));
  flows_clear (&f);
}

/* The essential flow joined at its second I frame (a prefix cut there, a
 * seek): the frames' payloads from there on decode by themselves, the
 * parameter sets (sequence headers) travelling with the I frames. */
static void
essential_from_second_gop (const gchar * media)
{
  gchar *name = g_strconcat ("joined", twoflow_test_es_suffix (media), NULL);
  gchar *out = twoflow_test_tmpfile (name);
  gchar *desc = g_strdup_printf ("filesrc location=%s ! %s ! twoflowsplit "
      "name=s s.essential ! queue ! appsink name=e sync=false "
      "s.enhanced ! queue ! fakesink sync=false", media,
      twoflow_test_parser_for (media));
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "e");
  GstTwoflowParser *parser = gst_twoflow_parser_new ();
  FILE *f = fopen (out, "wb");
  GstSample *sample;
  gchar *err = NULL;
  guint frames = 0, decoded;

  fail_unless (f != NULL);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    GstTwoflowFrameHeader hdr;
    GstBuffer *payload;

    gst_twoflow_parser_push (parser,
        gst_buffer_ref (gst_sample_get_buffer (sample)));
    fail_unless_equals_int (gst_twoflow_parser_pop (parser, &hdr, &payload),
        GST_TWOFLOW_PARSE_OK);
    if (hdr.kind == GST_TWOFLOW_RECORD_FRAME && hdr.gop_no >= 1) {
      GstMapInfo map;

      gst_buffer_map (payload, &map, GST_MAP_READ);
      fail_unless_equals_int (fwrite (map.data, 1, map.size, f), map.size);
      gst_buffer_unmap (payload, &map);
      frames++;
    }
    gst_buffer_unref (payload);
    gst_sample_unref (sample);
  }
  fclose (f);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  fail_unless (frames >= 1);
  decoded = twoflow_test_count_decoded (out, &err);
  fail_unless (decoded != G_MAXUINT, "decoding the essential flow from its "
      "second I frame: %s", err);
  fail_unless_equals_int (decoded, frames);
  g_unlink (out);
  gst_twoflow_parser_free (parser);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (desc);
  g_free (out);
  g_free (name);
}

/* Half the second GOP's enhanced frames lost: the merge drops what
 * predicts from them, the rest decodes; the first GOP and, from the third
 * GOP's I on, every frame but the leading pictures of an open GOP (RASL,
 * they reach back into the damaged GOP) come out. */
static void
second_gop_lost (const gchar * media)
{
  Flows f;
  guint64 out;
  guint i, first_i3 = G_MAXUINT, intact = 0;

  out = lossy (media, "", LOSE_SECOND_GOP, &f);
  fail_unless (f.lost > 0 && f.references_lost > 0);
  fail_unless (out < f.frames->len - f.lost, "no dependent frame dropped");
  for (i = 0; i < f.frames->len; i++) {
    GstTwoflowFrameHeader *h = &g_array_index (f.frames,
        GstTwoflowFrameHeader, i);

    if (h->gop_no == 2 && h->picture_type == GST_TWOFLOW_PICTURE_I)
      first_i3 = h->frame_no;
  }
  fail_unless (first_i3 != G_MAXUINT);
  for (i = 0; i < f.frames->len; i++) {
    GstTwoflowFrameHeader *h = &g_array_index (f.frames,
        GstTwoflowFrameHeader, i);

    if (h->gop_no == 0 || h->gop_no > 2 || (h->gop_no == 2
            && h->depends_from >= first_i3))
      intact++;
  }
  GST_INFO ("%s: %u frames, %u lost (%u references), %" G_GUINT64_FORMAT
      " out, %u intact", media, f.frames->len, f.lost, f.references_lost,
      out, intact);
  fail_unless (out >= intact, "%" G_GUINT64_FORMAT " frames out, %u intact",
      out, intact);
  flows_clear (&f);
}

/* What every codec's clip goes through after its own round trip: the
 * round trip with policy=ip, the essential flow alone, joined at its
 * second I frame, and a merge with half a GOP's enhanced frames lost. */
static void
common_checks (const gchar * m)
{
  Flows f;

  roundtrip (m, "policy=ip", &f);
  flows_clear (&f);
  essential_alone (m);
  essential_from_second_gop (m);
  second_gop_lost (m);
}

GST_START_TEST (test_h265_closed)
{
  gchar *m = twoflow_test_generated_h265_closed ();
  Flows f;

  fail_unless_equals_int (roundtrip (m, "", &f), 100);
  /* IDRs every 25 frames: 4 GOPs; non-reference B pictures */
  fail_unless_equals_int (count_type (&f, GST_TWOFLOW_PICTURE_I), 4);
  fail_unless (count_type (&f, GST_TWOFLOW_PICTURE_B) > 30);
  fail_unless (count_type (&f, GST_TWOFLOW_PICTURE_P) > 20);
  flows_clear (&f);
  common_checks (m);
  g_free (m);
}

GST_END_TEST;

GST_START_TEST (test_h265_open_main10)
{
  gchar *m = twoflow_test_generated_h265_open10 ();
  Flows f;
  guint i, leading = 0;

  fail_unless_equals_int (roundtrip (m, "", &f), 100);
  fail_unless_equals_int (count_type (&f, GST_TWOFLOW_PICTURE_I), 4);
  /* the RASL pictures after each CRA reach back into the GOP before */
  for (i = 0; i < f.frames->len; i++) {
    GstTwoflowFrameHeader *h = &g_array_index (f.frames,
        GstTwoflowFrameHeader, i);

    if (h->picture_type != GST_TWOFLOW_PICTURE_I && h->gop_no > 0
        && h->depends_from < h->frame_no) {
      GstTwoflowFrameHeader *d = &g_array_index (f.frames,
          GstTwoflowFrameHeader, h->depends_from);

      if (d->gop_no < h->gop_no)
        leading++;
    }
  }
  fail_unless (leading >= 3 * 4, "%u leading pictures", leading);
  flows_clear (&f);
  common_checks (m);
  g_free (m);
}

GST_END_TEST;

/* interlaced: field pictures (pic_struct SEI, field_seq_flag), each an
 * access unit of its own, through the same checks */
GST_START_TEST (test_h265_interlaced)
{
  gchar *m = twoflow_test_generated_h265_interlaced ();
  Flows f;

  fail_unless_equals_int (roundtrip (m, "", &f), 100);
  fail_unless_equals_int (count_type (&f, GST_TWOFLOW_PICTURE_I), 4);
  fail_unless (count_type (&f, GST_TWOFLOW_PICTURE_B) > 30);
  flows_clear (&f);
  common_checks (m);
  g_free (m);
}

GST_END_TEST;

/* hvc1: the parameter sets only in the caps' codec_data (hvcC), which
 * the caps record carries; the merged stream decodes in the pipeline */
GST_START_TEST (test_h265_hvc1)
{
  gchar *m = twoflow_test_generated_h265_hvc1 ();
  gchar *err = NULL;
  gchar *desc;
  GstElement *pipeline, *sink;
  GstPad *pad;
  gint frames = 0;
  Flows f;

  roundtrip (m, "", &f);
  fail_unless_equals_int (f.frames->len, 75);
  fail_unless_equals_int (count_type (&f, GST_TWOFLOW_PICTURE_I), 3);
  flows_clear (&f);

  desc = g_strdup_printf ("filesrc location=%s ! %s ! twoflowsplit name=s "
      "twoflowmerge name=m ! h265parse ! avdec_h265 ! fakesink name=out "
      "s.essential ! queue max-size-buffers=0 max-size-bytes=0 "
      "max-size-time=0 ! m.essential s.enhanced ! queue ! m.enhanced", m,
      twoflow_test_parser_for (m));
  pipeline = gst_parse_launch (desc, NULL);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) twoflow_test_count_probe, &frames, NULL);
  fail_unless (twoflow_test_run_pipeline (pipeline, &err), "%s", err);
  fail_unless_equals_int (frames, 75);
  gst_object_unref (pad);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (desc);
  g_free (m);
}

GST_END_TEST;

/* hev1 (h265parse's conversion of a byte stream): length-prefixed NAL
 * units with the parameter sets in hvcC and in band; byte-identical, and
 * the merged stream decodes frame for frame in the pipeline */
GST_START_TEST (test_h265_hev1)
{
  gchar *m = twoflow_test_generated_h265_open10 ();
  const gchar *parse = "h265parse ! video/x-h265,stream-format=hev1,"
      "alignment=au";
  gchar *ref = twoflow_test_tmpfile ("parsed-hev1.h265");
  gchar *out = twoflow_test_tmpfile ("merged-hev1.h265");
  gchar *desc, *err = NULL;
  GstElement *pipeline, *sink;
  GstPad *pad;
  gint frames = 0;
  GBytes *a, *b;

  desc = g_strdup_printf ("filesrc location=%s ! %s ! filesink location=%s",
      m, parse, ref);
  fail_unless (twoflow_test_run (desc, &err), "%s", err);
  g_free (desc);
  desc = g_strdup_printf ("filesrc location=%s ! %s ! twoflowsplit name=s "
      "twoflowmerge name=m ! tee name=t ! queue ! filesink location=%s "
      "t. ! queue ! h265parse ! avdec_h265 ! fakesink name=dec "
      "s.essential ! queue max-size-buffers=0 max-size-bytes=0 "
      "max-size-time=0 ! m.essential s.enhanced ! queue ! m.enhanced", m,
      parse, out);
  pipeline = gst_parse_launch (desc, NULL);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "dec");
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) twoflow_test_count_probe, &frames, NULL);
  fail_unless (twoflow_test_run_pipeline (pipeline, &err), "%s", err);
  fail_unless_equals_int (frames, 100);
  a = twoflow_test_read (ref);
  b = twoflow_test_read (out);
  fail_unless (g_bytes_get_size (a) > 0);
  fail_unless (g_bytes_equal (a, b), "hev1: merged %" G_GSIZE_FORMAT
      " bytes differ from the parsed %" G_GSIZE_FORMAT, g_bytes_get_size (b),
      g_bytes_get_size (a));
  g_bytes_unref (a);
  g_bytes_unref (b);
  g_unlink (ref);
  g_unlink (out);
  gst_object_unref (pad);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (desc);
  g_free (ref);
  g_free (out);
  g_free (m);
}

GST_END_TEST;

GST_START_TEST (test_av1_svt)
{
  gchar *m = twoflow_test_generated_av1_svt ();
  Flows f;

  fail_unless_equals_int (roundtrip (m, "", &f), 100);
  /* key frames every 40: 3; mini-GOPs of 8 with unreferenced frames */
  fail_unless_equals_int (count_type (&f, GST_TWOFLOW_PICTURE_I), 3);
  fail_unless (count_type (&f, GST_TWOFLOW_PICTURE_B) > 30);
  flows_clear (&f);
  common_checks (m);
  g_free (m);
}

GST_END_TEST;

GST_START_TEST (test_av1_aom)
{
  gchar *m = twoflow_test_generated_av1_aom ();
  Flows f;

  /* 24 frames; hidden alt-ref frames travel in the unit of the frame
   * after them, and come out in a unit of their own (show_existing) */
  fail_unless_equals_int (roundtrip (m, "", &f), 24);
  fail_unless_equals_int (count_type (&f, GST_TWOFLOW_PICTURE_I), 2);
  flows_clear (&f);
  essential_alone (m);
  essential_from_second_gop (m);
  g_free (m);
}

GST_END_TEST;

/* AV1 in MP4: the caps' codec_data as qtdemux gives it */
GST_START_TEST (test_av1_mp4)
{
  gchar *m = twoflow_test_generated_av1_mp4 ();
  Flows f;

  fail_unless_equals_int (roundtrip (m, "policy=ip", &f), 50);
  fail_unless_equals_int (count_type (&f, GST_TWOFLOW_PICTURE_I), 2);
  flows_clear (&f);
  g_free (m);
}

GST_END_TEST;

static Suite *
twoflowcodecs_suite (void)
{
  Suite *s = suite_create ("twoflowcodecs");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 240);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_h265_closed);
  tcase_add_test (tc, test_h265_open_main10);
  tcase_add_test (tc, test_h265_hvc1);
  tcase_add_test (tc, test_h265_hev1);
  tcase_add_test (tc, test_h265_interlaced);
  tcase_add_test (tc, test_av1_svt);
  tcase_add_test (tc, test_av1_aom);
  tcase_add_test (tc, test_av1_mp4);
  return s;
}

GST_CHECK_MAIN (twoflowcodecs);
