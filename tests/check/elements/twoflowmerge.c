/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: tests of the twoflowmerge element (and split → merge) */
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gsttestclock.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>
#include <gst/twoflow/twoflowframe.h>
#include <gst/twoflow/twoflowmerger.h>

#include "twoflowtestutil.h"

#define SPLIT_MERGE \
  "twoflowsplit %s name=s twoflowmerge name=m %s ! filesink name=out location=%s " \
  "s.essential ! queue max-size-buffers=0 max-size-bytes=0 max-size-time=0 ! m.essential " \
  "s.enhanced ! queue ! m.enhanced"

static void
assert_same_file (const gchar * a, const gchar * b)
{
  GBytes *ba = twoflow_test_read (a), *bb = twoflow_test_read (b);

  fail_unless (g_bytes_get_size (ba) > 0);
  fail_unless (g_bytes_equal (ba, bb), "%s (%" G_GSIZE_FORMAT " bytes) and %s "
      "(%" G_GSIZE_FORMAT " bytes) differ", a, g_bytes_get_size (ba), b,
      g_bytes_get_size (bb));
  g_bytes_unref (ba);
  g_bytes_unref (bb);
}

/* The parsed elementary stream of @media, as the reference output. */
static gchar *
parsed_reference (const gchar * media)
{
  gchar *base = g_path_get_basename (media);
  gchar *name = g_strconcat ("parsed-", base, NULL);
  gchar *out = twoflow_test_tmpfile (name);
  gchar *desc = g_strdup_printf ("filesrc location=%s ! %s ! filesink "
      "location=%s", media, twoflow_test_parser_for (media), out);

  fail_unless (twoflow_test_run (desc, NULL));
  g_free (desc);
  g_free (name);
  g_free (base);
  return out;
}

static void
check_decodes_like (const gchar * merged, const gchar * media)
{
  gchar *err = NULL;
  guint want = twoflow_test_count_decoded (media, &err);
  guint got;

  fail_unless (want != G_MAXUINT && want > 0, "source: %s", err);
  got = twoflow_test_count_decoded (merged, &err);
  fail_unless (got != G_MAXUINT, "merged output: %s", err);
  fail_unless_equals_int (got, want);
}

/* split → two queues → merge, in one pipeline */
static void
roundtrip_pipeline (const gchar * media, const gchar * policy)
{
  gchar *ref = parsed_reference (media);
  gchar *suffix = g_strconcat ("merged", strrchr (media, '.'), NULL);
  gchar *out = twoflow_test_tmpfile (suffix);
  gchar *split = g_strdup_printf ("filesrc location=%s ! %s ! " SPLIT_MERGE,
      media, twoflow_test_parser_for (media), policy, "", out);
  gchar *err = NULL;

  fail_unless (twoflow_test_run (split, &err), "%s", err);
  assert_same_file (ref, out);
  check_decodes_like (out, media);
  g_unlink (ref);
  g_unlink (out);
  g_free (split);
  g_free (out);
  g_free (suffix);
  g_free (ref);
}

/* split → two files (byte-stream form) → two filesrcs → merge */
static void
roundtrip_files (const gchar * media, const gchar * policy)
{
  gchar *ref = parsed_reference (media);
  gchar *ess = twoflow_test_tmpfile ("essential.twf");
  gchar *enh = twoflow_test_tmpfile ("enhanced.twf");
  gchar *suffix = g_strconcat ("merged-files", strrchr (media, '.'), NULL);
  gchar *out = twoflow_test_tmpfile (suffix);
  gchar *desc, *err = NULL;

  desc = g_strdup_printf ("filesrc location=%s ! %s ! twoflowsplit %s name=s "
      "s.essential ! queue ! filesink location=%s "
      "s.enhanced ! queue ! filesink location=%s", media,
      twoflow_test_parser_for (media), policy, ess, enh);
  fail_unless (twoflow_test_run (desc, &err), "%s", err);
  g_free (desc);

  desc = g_strdup_printf ("twoflowmerge name=m ! filesink location=%s "
      "filesrc location=%s ! m.essential filesrc location=%s ! m.enhanced",
      out, ess, enh);
  fail_unless (twoflow_test_run (desc, &err), "%s", err);
  g_free (desc);

  assert_same_file (ref, out);
  check_decodes_like (out, media);
  g_unlink (ref);
  g_unlink (ess);
  g_unlink (enh);
  g_unlink (out);
  g_free (ref);
  g_free (ess);
  g_free (enh);
  g_free (out);
  g_free (suffix);
}

GST_START_TEST (test_roundtrip_greyramp)
{
  gchar *m = twoflow_test_greyramp ();

  roundtrip_pipeline (m, "");
  roundtrip_pipeline (m, "policy=ip");
  roundtrip_files (m, "");
  g_free (m);
}

GST_END_TEST;

GST_START_TEST (test_roundtrip_mpeg2_generated)
{
  gchar *m = twoflow_test_generated_mpeg2 ();

  roundtrip_pipeline (m, "");
  roundtrip_pipeline (m, "policy=ip");
  roundtrip_files (m, "");
  g_free (m);
}

GST_END_TEST;

/* H.264 in avc form: SPS/PPS only in the caps' codec_data, which must come
 * back through the caps record for the decoder to work. */
static void
roundtrip_avc_decode (const gchar * media)
{
  gchar *err = NULL;
  guint want = twoflow_test_count_decoded (media, &err);
  gchar *desc = g_strdup_printf ("filesrc location=%s ! h264parse ! "
      "video/x-h264,stream-format=avc,alignment=au ! " SPLIT_MERGE, media,
      "", "! avdec_h264", "/dev/null");
  GstElement *pipeline;
  GstElement *sink;
  GstPad *pad;
  gint frames = 0;

  /* count decoded pictures at the filesink */
  pipeline = gst_parse_launch (desc, NULL);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) twoflow_test_count_probe, &frames, NULL);
  fail_unless (twoflow_test_run_pipeline (pipeline, &err), "%s", err);
  fail_unless_equals_int (frames, want);
  gst_object_unref (pad);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (desc);
}

GST_START_TEST (test_roundtrip_h264)
{
  gchar *m = twoflow_test_generated_h264 ();

  roundtrip_pipeline (m, "");
  roundtrip_files (m, "policy=ip");
  roundtrip_avc_decode (m);
  g_free (m);
}

GST_END_TEST;

/* ---- loss ---------------------------------------------------------- */

typedef struct {
  GMutex lock;
  GRand *rand;
  GHashTable *dropped;          /* frame_no → TRUE */
  GArray *frames;               /* every frame header the split made */
} LossState;

static gboolean
record_header (GstBuffer * buf, GstTwoflowFrameHeader * hdr)
{
  guint8 raw[GST_TWOFLOW_HEADER_SIZE];

  fail_unless_equals_int (gst_buffer_extract (buf, 0, raw, sizeof (raw)),
      sizeof (raw));
  fail_unless_equals_int (gst_twoflow_frame_header_parse (raw, sizeof (raw),
          hdr), GST_TWOFLOW_PARSE_OK);
  return hdr->kind == GST_TWOFLOW_RECORD_FRAME;
}

static GstPadProbeReturn
record_probe (GstPad * pad, GstPadProbeInfo * info, LossState * st)
{
  GstTwoflowFrameHeader hdr;

  if (record_header (GST_PAD_PROBE_INFO_BUFFER (info), &hdr)) {
    g_mutex_lock (&st->lock);
    g_array_append_val (st->frames, hdr);
    g_mutex_unlock (&st->lock);
  }
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
drop_probe (GstPad * pad, GstPadProbeInfo * info, LossState * st)
{
  GstTwoflowFrameHeader hdr;
  gboolean drop = FALSE;

  if (record_header (GST_PAD_PROBE_INFO_BUFFER (info), &hdr)) {
    g_mutex_lock (&st->lock);
    drop = g_rand_double (st->rand) < 0.10;
    if (drop)
      g_hash_table_add (st->dropped, GUINT_TO_POINTER (hdr.frame_no));
    g_mutex_unlock (&st->lock);
  }
  return drop ? GST_PAD_PROBE_DROP : GST_PAD_PROBE_OK;
}

static gint
by_frame_no (gconstpointer a, gconstpointer b)
{
  const GstTwoflowFrameHeader *x = a, *y = b;

  return (gint) x->frame_no - (gint) y->frame_no;
}

typedef struct {
  guint64 missing[4], received[4], dropped, e_f, e_g, g_max, con_total,
      con_max;
} Expected;

/* An independent model of MPEG-2 decodability: a P needs the previous
 * reference, a B the previous two (in decode order); lost or undecodable
 * references spoil what follows. */
static void
expected_damage (LossState * st, Expected * e)
{
  gboolean last_ok = TRUE, prev_ok = TRUE;
  guint64 gop_aff = 0, run = 0, run_max = 0;
  guint i;

  memset (e, 0, sizeof (*e));
  g_array_sort (st->frames, by_frame_no);
  for (i = 0; i <= st->frames->len; i++) {
    GstTwoflowFrameHeader *h = i < st->frames->len ?
        &g_array_index (st->frames, GstTwoflowFrameHeader, i) : NULL;
    gboolean lost, ok;

    if (!h || h->picture_type == GST_TWOFLOW_PICTURE_I) {
      if (gop_aff) {
        e->e_g++;
        e->g_max = MAX (e->g_max, gop_aff);
        e->con_total += run_max;
        e->con_max = MAX (e->con_max, run_max);
      }
      gop_aff = run = run_max = 0;
      if (!h)
        break;
    }
    fail_unless_equals_int (h->frame_no, i);
    lost = g_hash_table_contains (st->dropped, GUINT_TO_POINTER (i));
    if (lost)
      e->missing[h->picture_type]++;
    else
      e->received[h->picture_type]++;

    switch (h->picture_type) {
      case GST_TWOFLOW_PICTURE_I:
        prev_ok = last_ok;
        last_ok = TRUE;
        continue;
      case GST_TWOFLOW_PICTURE_P:
        ok = !lost && last_ok;
        prev_ok = last_ok;
        last_ok = ok;
        break;
      default:
        ok = !lost && last_ok && prev_ok;
        break;
    }
    if (!ok) {
      e->e_f++;
      e->dropped += !lost;
      gop_aff++;
      run++;
      run_max = MAX (run_max, run);
    } else {
      run = 0;
    }
  }
}

static void
loss_run (gboolean drop_dependent)
{
  gchar *media = twoflow_test_generated_mpeg2 ();
  gchar *out = twoflow_test_tmpfile ("lossy.m2v");
  gchar *desc = g_strdup_printf ("filesrc location=%s ! mpegvideoparse ! "
      SPLIT_MERGE, media, "", drop_dependent ? "" : "drop-dependent=false",
      out);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *split = gst_bin_get_by_name (GST_BIN (pipeline), "s");
  GstElement *merge = gst_bin_get_by_name (GST_BIN (pipeline), "m");
  GstPad *ess = gst_element_get_static_pad (split, "essential");
  GstPad *enh = gst_element_get_static_pad (split, "enhanced");
  GstPad *menh = gst_element_get_static_pad (merge, "enhanced");
  LossState st;
  Expected e;
  GstStructure *s;
  gchar *err = NULL;
  guint64 out_frames, decoded;
  gdouble g_avg;

  g_mutex_init (&st.lock);
  st.rand = g_rand_new_with_seed (drop_dependent ? 1234 : 4321);
  st.dropped = g_hash_table_new (NULL, NULL);
  st.frames = g_array_new (FALSE, FALSE, sizeof (GstTwoflowFrameHeader));
  gst_pad_add_probe (ess, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) record_probe, &st, NULL);
  gst_pad_add_probe (enh, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) record_probe, &st, NULL);
  gst_pad_add_probe (menh, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) drop_probe, &st, NULL);

  fail_unless (twoflow_test_run_pipeline (pipeline, &err), "%s", err);
  expected_damage (&st, &e);
  fail_unless_equals_int (st.frames->len, 336);
  /* 10% of the 308 enhanced frames, give or take */
  fail_unless (g_hash_table_size (st.dropped) > 15);
  fail_unless (e.e_f > e.missing[2] + e.missing[3], "no dependent damage");

  g_object_get (merge, "stats", &s, NULL);
  GST_INFO ("stats %" GST_PTR_FORMAT, s);
  twoflow_test_check_stat (s, "received-i", e.received[1]);
  twoflow_test_check_stat (s, "received-p", e.received[2]);
  twoflow_test_check_stat (s, "received-b", e.received[3]);
  twoflow_test_check_stat (s, "missing-i", 0);
  twoflow_test_check_stat (s, "missing-p", e.missing[2]);
  twoflow_test_check_stat (s, "missing-b", e.missing[3]);
  twoflow_test_check_stat (s, "missing-unknown", 0);
  twoflow_test_check_stat (s, "dropped", e.dropped);
  twoflow_test_check_stat (s, "E_f", e.e_f);
  twoflow_test_check_stat (s, "E_g", e.e_g);
  twoflow_test_check_stat (s, "G_max", e.g_max);
  twoflow_test_check_stat (s, "G_con_total", e.con_total);
  twoflow_test_check_stat (s, "G_con_max", e.con_max);
  fail_unless (gst_structure_get_double (s, "G_avg", &g_avg));
  fail_unless (G_APPROX_VALUE (g_avg, (gdouble) e.e_f / e.e_g, 1e-9));
  fail_unless (gst_structure_get_double (s, "G_con_avg", &g_avg));
  fail_unless (G_APPROX_VALUE (g_avg, (gdouble) e.con_total / e.e_g, 1e-9));
  fail_unless (gst_structure_get_uint64 (s, "output-frames", &out_frames));
  fail_unless_equals_uint64 (out_frames, 336 - e.missing[2] - e.missing[3] -
      (drop_dependent ? e.dropped : 0));
  gst_structure_free (s);

  if (drop_dependent) {
    /* the decoder sees no broken reference: no error, every frame out */
    decoded = twoflow_test_count_decoded (out, &err);
    fail_unless (decoded != G_MAXUINT, "decoding the lossy merge: %s", err);
    fail_unless_equals_uint64 (decoded, out_frames);
  }

  g_unlink (out);
  g_free (out);
  g_free (desc);
  g_free (media);
  gst_object_unref (ess);
  gst_object_unref (enh);
  gst_object_unref (menh);
  gst_object_unref (split);
  gst_object_unref (merge);
  gst_object_unref (pipeline);
  g_hash_table_unref (st.dropped);
  g_array_free (st.frames, TRUE);
  g_rand_free (st.rand);
  g_mutex_clear (&st.lock);
}

GST_START_TEST (test_loss_drop_dependent)
{
  loss_run (TRUE);
}

GST_END_TEST;

GST_START_TEST (test_loss_keep_dependent)
{
  loss_run (FALSE);
}

GST_END_TEST;

/* ---- prefix, live latency ------------------------------------------- */

/* Byte offset just after the first @n records of a byte-stream file. */
static gsize
records_end (GBytes * bytes, guint n)
{
  const guint8 *data = g_bytes_get_data (bytes, NULL);
  gsize off = 0;
  GstTwoflowFrameHeader h;

  while (n--) {
    fail_unless_equals_int (gst_twoflow_frame_header_parse (data + off,
            g_bytes_get_size (bytes) - off, &h), GST_TWOFLOW_PARSE_OK);
    off += GST_TWOFLOW_HEADER_SIZE + h.payload_size;
  }
  return off;
}

GST_START_TEST (test_prefix)
{
  gchar *media = twoflow_test_generated_mpeg2 ();
  gchar *ref = parsed_reference (media);
  gchar *ess = twoflow_test_tmpfile ("p-essential.twf");
  gchar *enh = twoflow_test_tmpfile ("p-enhanced.twf");
  gchar *prefix = twoflow_test_tmpfile ("p-prefix.twf");
  gchar *rest = twoflow_test_tmpfile ("p-rest.twf");
  gchar *out = twoflow_test_tmpfile ("p-merged.m2v");
  gchar *desc, *err = NULL;
  GBytes *all;
  gsize cut;
  const gchar *data;
  GstElement *pipeline, *merge;
  GstStructure *s;

  desc = g_strdup_printf ("filesrc location=%s ! mpegvideoparse ! "
      "twoflowsplit name=s s.essential ! queue ! filesink location=%s "
      "s.enhanced ! queue ! filesink location=%s", media, ess, enh);
  fail_unless (twoflow_test_run (desc, &err), "%s", err);
  g_free (desc);

  /* prefix: caps record + 10 I frames; the essential pad then repeats
   * frames 8-10 of it (overlap) and goes on */
  all = twoflow_test_read (ess);
  data = g_bytes_get_data (all, NULL);
  cut = records_end (all, 11);
  fail_unless (g_file_set_contents (prefix, data, cut, NULL));
  cut = records_end (all, 8);
  fail_unless (g_file_set_contents (rest, data + cut,
          g_bytes_get_size (all) - cut, NULL));

  desc = g_strdup_printf ("twoflowmerge name=m prefix-location=%s ! "
      "filesink location=%s filesrc location=%s ! m.essential "
      "filesrc location=%s ! m.enhanced", prefix, out, rest, enh);
  pipeline = gst_parse_launch (desc, NULL);
  merge = gst_bin_get_by_name (GST_BIN (pipeline), "m");
  fail_unless (twoflow_test_run_pipeline (pipeline, &err), "%s", err);
  g_object_get (merge, "stats", &s, NULL);
  twoflow_test_check_stat (s, "prefix-frames", 10);
  twoflow_test_check_stat (s, "duplicates", 3);
  twoflow_test_check_stat (s, "output-frames", 336);
  gst_structure_free (s);
  assert_same_file (ref, out);

  /* a prefix that cannot be read fails the state change with an error */
  g_object_set (merge, "prefix-location", "/nonexistent/prefix.twf", NULL);
  fail_if (twoflow_test_run_pipeline (pipeline, &err));
  fail_unless (strstr (err, "Could not read prefix") != NULL, "%s", err);
  g_free (err);

  gst_object_unref (merge);
  gst_object_unref (pipeline);
  g_bytes_unref (all);
  g_free (desc);
  for (gchar ** f = (gchar *[]) { ref, ess, enh, prefix, rest, out, NULL }; *f;
      f++) {
    g_unlink (*f);
    g_free (*f);
  }
  g_free (media);
}

GST_END_TEST;

static GstBuffer *
frame_record (guint32 n, GstTwoflowPictureType type, guint64 history)
{
  GstTwoflowFrameHeader h;
  GstBuffer *payload = gst_buffer_new_allocate (NULL, 100 + n, NULL);
  GstBuffer *rec;

  gst_buffer_memset (payload, 0, n, 100 + n);
  gst_twoflow_frame_header_init (&h);
  h.codec = GST_TWOFLOW_CODEC_MPEG2;
  h.picture_type = type;
  h.frame_no = n;
  h.depends_from = type == GST_TWOFLOW_PICTURE_I ? n : n - 1;
  h.flags = type != GST_TWOFLOW_PICTURE_B ? GST_TWOFLOW_FLAG_REFERENCE : 0;
  h.history = history;
  h.pts = h.dts = n * 40 * GST_MSECOND;
  h.duration = 40 * GST_MSECOND;
  rec = gst_twoflow_record_new (&h, payload);
  gst_buffer_unref (payload);
  return rec;
}

static GstBuffer *
caps_record (void)
{
  GstCaps *caps = gst_caps_from_string ("video/mpeg, mpegversion=(int)2, "
      "systemstream=(boolean)false, parsed=(boolean)true");
  GstBuffer *rec = gst_twoflow_record_new_caps (GST_TWOFLOW_CODEC_MPEG2, caps);

  gst_caps_unref (caps);
  return rec;
}

/* An essential record of @size payload bytes, frame @n, an I frame. */
static GstBuffer *
sized_record (guint32 n, gsize size)
{
  GstTwoflowFrameHeader h;
  GstBuffer *payload = gst_buffer_new_allocate (NULL, size, NULL);
  GstBuffer *rec;

  gst_twoflow_frame_header_init (&h);
  h.codec = GST_TWOFLOW_CODEC_MPEG2;
  h.picture_type = GST_TWOFLOW_PICTURE_I;
  h.frame_no = h.depends_from = n;
  h.flags = GST_TWOFLOW_FLAG_REFERENCE | GST_TWOFLOW_FLAG_ESSENTIAL;
  h.pts = h.dts = n * 40 * GST_MSECOND;
  h.duration = 40 * GST_MSECOND;
  rec = gst_twoflow_record_new (&h, payload);
  gst_buffer_unref (payload);
  return rec;
}

/* Essential records pile up while the enhanced flow is silent: @count
 * records of @size bytes, 12 frames apart; returns the error posted
 * (NULL if none). */
static gchar *
essential_flood (const gchar * props, guint count, gsize size)
{
  gchar *desc = g_strdup_printf ("twoflowmerge name=m %s ! fakesink "
      "appsrc name=e format=time caps=application/x-twoflow,packetized=true "
      "max-bytes=0 block=false ! m.essential "
      "appsrc name=n format=time caps=application/x-twoflow ! m.enhanced",
      props);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *e = gst_bin_get_by_name (GST_BIN (pipeline), "e");
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg;
  gchar *err = NULL;
  guint i;

  g_free (desc);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  gst_app_src_push_buffer (GST_APP_SRC (e), caps_record ());
  for (i = 0; i < count; i++)
    gst_app_src_push_buffer (GST_APP_SRC (e), sized_record (i * 12, size));
  /* a bound for a broken build, not a timing check */
  msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND, GST_MESSAGE_ERROR);
  if (msg) {
    GError *gerr = NULL;

    gst_message_parse_error (msg, &gerr, NULL);
    err = g_strdup (gerr->message);
    g_error_free (gerr);
    gst_message_unref (msg);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
  gst_object_unref (pipeline);
  return err;
}

/* Bounded by its properties, not by its input: 1,000 essential records of
 * 64 KB against max-essential-bytes 32 MB, and empty records past
 * max-records, are element errors. */
GST_START_TEST (test_essential_bounds)
{
  gchar *err;

  err = essential_flood ("max-essential-bytes=33554432", 1000, 65536);
  fail_unless (err != NULL, "65.5 MB held against 32 MB without an error");
  g_free (err);
  err = essential_flood ("max-records=1000", 2000, 0);
  fail_unless (err != NULL, "2,000 empty records held against 1,000");
  g_free (err);
}

GST_END_TEST;

/* A late enhanced frame is given up after `latency` without any EOS. */
GST_START_TEST (test_live_latency)
{
  GstElement *pipeline = gst_parse_launch ("twoflowmerge name=m "
      "latency=100000000 ! appsink name=out sync=false "
      "appsrc name=e format=time caps=application/x-twoflow ! m.essential "
      "appsrc name=n format=time caps=application/x-twoflow ! m.enhanced",
      NULL);
  GstElement *e = gst_bin_get_by_name (GST_BIN (pipeline), "e");
  GstElement *n = gst_bin_get_by_name (GST_BIN (pipeline), "n");
  GstElement *out = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  GstElement *merge = gst_bin_get_by_name (GST_BIN (pipeline), "m");
  guint64 hist_b = gst_twoflow_history_push (0, GST_TWOFLOW_PICTURE_I, TRUE);
  GstSample *sample;
  GstStructure *s;
  GstCaps *caps;

  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  /* I0 and I2 essential; the enhanced flow sends its caps, then nothing */
  gst_app_src_push_buffer (GST_APP_SRC (e), caps_record ());
  gst_app_src_push_buffer (GST_APP_SRC (e), frame_record (0,
          GST_TWOFLOW_PICTURE_I, 0));
  gst_app_src_push_buffer (GST_APP_SRC (e), frame_record (2,
          GST_TWOFLOW_PICTURE_I, gst_twoflow_history_push (hist_b,
              GST_TWOFLOW_PICTURE_B, FALSE)));
  gst_app_src_push_buffer (GST_APP_SRC (n), caps_record ());

  sample = gst_app_sink_pull_sample (GST_APP_SINK (out));
  fail_unless (sample != NULL);
  caps = gst_sample_get_caps (sample);
  fail_unless (gst_structure_has_name (gst_caps_get_structure (caps, 0),
          "video/mpeg"));
  fail_unless_equals_int (gst_buffer_get_size (gst_sample_get_buffer (sample)),
      100);
  gst_sample_unref (sample);
  /* frame 2 comes only once frame 1 was given up */
  sample = gst_app_sink_pull_sample (GST_APP_SINK (out));
  fail_unless (sample != NULL);
  fail_unless_equals_int (gst_buffer_get_size (gst_sample_get_buffer (sample)),
      102);
  fail_unless (GST_BUFFER_FLAG_IS_SET (gst_sample_get_buffer (sample),
          GST_BUFFER_FLAG_DISCONT));
  fail_unless_equals_uint64 (GST_BUFFER_PTS (gst_sample_get_buffer (sample)),
      80 * GST_MSECOND);
  gst_sample_unref (sample);

  g_object_get (merge, "stats", &s, NULL);
  twoflow_test_check_stat (s, "missing-b", 1);       /* typed by frame 2's history */
  twoflow_test_check_stat (s, "E_f", 1);
  gst_structure_free (s);

  gst_app_src_end_of_stream (GST_APP_SRC (e));
  gst_app_src_end_of_stream (GST_APP_SRC (n));
  fail_unless (gst_app_sink_pull_sample (GST_APP_SINK (out)) == NULL);
  fail_unless (gst_app_sink_is_eos (GST_APP_SINK (out)));
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (n);
  gst_object_unref (out);
  gst_object_unref (merge);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* The latency wait runs on the pipeline clock: with a test clock, the
 * merge waits on a clock entry at exactly the deadline, a frame counts as
 * missing only once the clock reaches it, and a frame arriving in time
 * ends the wait at once. */
GST_START_TEST (test_latency_test_clock)
{
  GstElement *pipeline = gst_parse_launch ("twoflowmerge name=m "
      "latency=100000000 ! appsink name=out sync=false "
      "appsrc name=e is-live=true format=time caps=application/x-twoflow ! "
      "m.essential "
      "appsrc name=n is-live=true format=time caps=application/x-twoflow ! "
      "m.enhanced", NULL);
  GstElement *e = gst_bin_get_by_name (GST_BIN (pipeline), "e");
  GstElement *n = gst_bin_get_by_name (GST_BIN (pipeline), "n");
  GstElement *out = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  GstElement *merge = gst_bin_get_by_name (GST_BIN (pipeline), "m");
  GstClock *clock = gst_test_clock_new_with_start_time (10 * GST_SECOND);
  GstTestClock *tc = GST_TEST_CLOCK (clock);
  guint64 h = gst_twoflow_history_push (0, GST_TWOFLOW_PICTURE_I, TRUE);
  GstClockID id;
  GstSample *sample;
  GstStructure *s;

  gst_pipeline_use_clock (GST_PIPELINE (pipeline), clock);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  gst_app_src_push_buffer (GST_APP_SRC (e), caps_record ());
  gst_app_src_push_buffer (GST_APP_SRC (n), caps_record ());
  gst_app_src_push_buffer (GST_APP_SRC (e), frame_record (0,
          GST_TWOFLOW_PICTURE_I, 0));
  sample = gst_app_sink_pull_sample (GST_APP_SINK (out));
  fail_unless_equals_int (gst_buffer_get_size (gst_sample_get_buffer (sample)),
      100);
  gst_sample_unref (sample);

  /* I2 arrives at 10.5 s: frame 1's wait starts, until 10.6 s */
  gst_test_clock_set_time (tc, 10500 * GST_MSECOND);
  h = gst_twoflow_history_push (h, GST_TWOFLOW_PICTURE_B, FALSE);
  gst_app_src_push_buffer (GST_APP_SRC (e), frame_record (2,
          GST_TWOFLOW_PICTURE_I, h));
  gst_test_clock_wait_for_next_pending_id (tc, &id);
  fail_unless_equals_uint64 (gst_clock_id_get_time (id), 10600 * GST_MSECOND);
  gst_clock_id_unref (id);
  gst_test_clock_set_time (tc, 10600 * GST_MSECOND - 1);
  fail_unless (gst_app_sink_try_pull_sample (GST_APP_SINK (out),
          50 * GST_MSECOND) == NULL);
  g_object_get (merge, "stats", &s, NULL);
  twoflow_test_check_stat (s, "missing-b", 0);
  gst_structure_free (s);

  /* at the deadline frame 1 is missing, and frame 2 follows */
  fail_unless (gst_test_clock_crank (tc));
  fail_unless_equals_uint64 (gst_clock_get_time (clock), 10600 * GST_MSECOND);
  sample = gst_app_sink_pull_sample (GST_APP_SINK (out));
  fail_unless_equals_int (gst_buffer_get_size (gst_sample_get_buffer (sample)),
      102);
  fail_unless (GST_BUFFER_FLAG_IS_SET (gst_sample_get_buffer (sample),
          GST_BUFFER_FLAG_DISCONT));
  gst_sample_unref (sample);
  g_object_get (merge, "stats", &s, NULL);
  twoflow_test_check_stat (s, "missing-b", 1);
  gst_structure_free (s);

  /* I4 at 10.6 s: frame 3 is waited for until 10.7 s, but arrives first */
  h = gst_twoflow_history_push (h, GST_TWOFLOW_PICTURE_I, TRUE);
  gst_app_src_push_buffer (GST_APP_SRC (e), frame_record (4,
          GST_TWOFLOW_PICTURE_I, gst_twoflow_history_push (h,
              GST_TWOFLOW_PICTURE_B, FALSE)));
  gst_test_clock_wait_for_next_pending_id (tc, &id);
  fail_unless_equals_uint64 (gst_clock_id_get_time (id), 10700 * GST_MSECOND);
  gst_clock_id_unref (id);
  gst_app_src_push_buffer (GST_APP_SRC (n), frame_record (3,
          GST_TWOFLOW_PICTURE_B, h));
  for (guint i = 3; i <= 4; i++) {
    sample = gst_app_sink_pull_sample (GST_APP_SINK (out));
    fail_unless_equals_int (gst_buffer_get_size (gst_sample_get_buffer
            (sample)), 100 + i);
    gst_sample_unref (sample);
  }
  fail_unless_equals_uint64 (gst_clock_get_time (clock), 10600 * GST_MSECOND);
  g_object_get (merge, "stats", &s, NULL);
  twoflow_test_check_stat (s, "missing-b", 1);
  twoflow_test_check_stat (s, "output-frames", 4);
  gst_structure_free (s);

  gst_app_src_end_of_stream (GST_APP_SRC (e));
  gst_app_src_end_of_stream (GST_APP_SRC (n));
  fail_unless (gst_app_sink_pull_sample (GST_APP_SINK (out)) == NULL);
  fail_unless (gst_app_sink_is_eos (GST_APP_SINK (out)));
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (clock);
  gst_object_unref (e);
  gst_object_unref (n);
  gst_object_unref (out);
  gst_object_unref (merge);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* The unreliable flow may deliver out of order or twice: frames are put in
 * their place and repeats ignored. */
GST_START_TEST (test_enhanced_reorder)
{
  GstElement *pipeline = gst_parse_launch ("twoflowmerge name=m ! "
      "appsink name=out sync=false "
      "appsrc name=e format=time caps=application/x-twoflow ! m.essential "
      "appsrc name=n format=time caps=application/x-twoflow ! m.enhanced",
      NULL);
  GstElement *e = gst_bin_get_by_name (GST_BIN (pipeline), "e");
  GstElement *n = gst_bin_get_by_name (GST_BIN (pipeline), "n");
  GstElement *out = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  GstElement *merge = gst_bin_get_by_name (GST_BIN (pipeline), "m");
  const guint order[] = { 2, 1, 4, 3, 1, 4 };
  GstSample *sample;
  GstStructure *s;
  guint i;

  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  /* all enhanced records are in before the first essential frame starts
   * the output, so none can be given up as missing meanwhile */
  for (i = 0; i < G_N_ELEMENTS (order); i++)
    gst_app_src_push_buffer (GST_APP_SRC (n), frame_record (order[i],
            GST_TWOFLOW_PICTURE_B, 0));
  gst_app_src_end_of_stream (GST_APP_SRC (n));
  do {
    guint64 queued;

    g_usleep (1000);
    g_object_get (merge, "stats", &s, NULL);
    gst_structure_get_uint64 (s, "enhanced-queued-bytes", &queued);
    gst_structure_free (s);
    if (queued == 101 + 102 + 103 + 104
        + 4 * GST_TWOFLOW_MERGER_RECORD_OVERHEAD)
      break;
  } while (TRUE);
  gst_app_src_push_buffer (GST_APP_SRC (e), caps_record ());
  gst_app_src_push_buffer (GST_APP_SRC (e), frame_record (0,
          GST_TWOFLOW_PICTURE_I, 0));
  gst_app_src_push_buffer (GST_APP_SRC (e), frame_record (5,
          GST_TWOFLOW_PICTURE_I, 0));
  gst_app_src_end_of_stream (GST_APP_SRC (e));

  for (i = 0; i <= 5; i++) {
    sample = gst_app_sink_pull_sample (GST_APP_SINK (out));
    fail_unless (sample != NULL);
    /* payload sizes tell the frames apart */
    fail_unless_equals_int (gst_buffer_get_size (gst_sample_get_buffer
            (sample)), 100 + i);
    gst_sample_unref (sample);
  }
  fail_unless (gst_app_sink_pull_sample (GST_APP_SINK (out)) == NULL);
  g_object_get (merge, "stats", &s, NULL);
  twoflow_test_check_stat (s, "duplicates", 2);
  twoflow_test_check_stat (s, "output-frames", 6);
  twoflow_test_check_stat (s, "E_f", 0);
  gst_structure_free (s);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (n);
  gst_object_unref (out);
  gst_object_unref (merge);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* ---- bad input ------------------------------------------------------- */

/* Feeds raw bytes to both pads of a merge; returns the error text or NULL. */
static gchar *
merge_bytes (const gchar * caps, GBytes * ess, GBytes * enh,
    const gchar * props)
{
  gchar *desc = g_strdup_printf ("twoflowmerge name=m %s ! fakesink "
      "appsrc name=e caps=\"%s\" ! m.essential "
      "appsrc name=n caps=\"%s\" ! m.enhanced", props, caps, caps);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *e = gst_bin_get_by_name (GST_BIN (pipeline), "e");
  GstElement *n = gst_bin_get_by_name (GST_BIN (pipeline), "n");
  gchar *err = NULL;

  gst_app_src_push_buffer (GST_APP_SRC (e), gst_buffer_new_wrapped_bytes (ess));
  gst_app_src_end_of_stream (GST_APP_SRC (e));
  gst_app_src_push_buffer (GST_APP_SRC (n), gst_buffer_new_wrapped_bytes (enh));
  gst_app_src_end_of_stream (GST_APP_SRC (n));
  if (twoflow_test_run_pipeline (pipeline, &err))
    err = NULL;
  gst_object_unref (e);
  gst_object_unref (n);
  gst_object_unref (pipeline);
  g_free (desc);
  return err;
}

static GBytes *
split_flow (const gchar * media, const gchar * pad)
{
  gchar *ess = twoflow_test_tmpfile ("b-essential.twf");
  gchar *enh = twoflow_test_tmpfile ("b-enhanced.twf");
  gchar *desc = g_strdup_printf ("filesrc location=%s ! mpegvideoparse ! "
      "twoflowsplit name=s s.essential ! queue ! filesink location=%s "
      "s.enhanced ! queue ! filesink location=%s", media, ess, enh);
  GBytes *b;

  fail_unless (twoflow_test_run (desc, NULL));
  b = twoflow_test_read (g_str_equal (pad, "essential") ? ess : enh);
  g_unlink (ess);
  g_unlink (enh);
  g_free (ess);
  g_free (enh);
  g_free (desc);
  return b;
}

GST_START_TEST (test_bad_input)
{
  gchar *media = twoflow_test_greyramp ();
  GBytes *ess = split_flow (media, "essential");
  GBytes *enh = split_flow (media, "enhanced");
  GBytes *garbage, *trunc, *flipped;
  guint8 junk[3000];
  guint8 *copy;
  gchar *err;
  guint i;

  for (i = 0; i < sizeof (junk); i++)
    junk[i] = g_random_int ();
  garbage = g_bytes_new (junk, sizeof (junk));

  /* sanity: the good flows merge */
  err = merge_bytes (GST_TWOFLOW_CAPS, ess, enh, "");
  fail_unless (err == NULL, "%s", err);

  err = merge_bytes (GST_TWOFLOW_CAPS, garbage, enh, "");
  fail_unless (err && strstr (err, "Invalid data on the essential pad"), "%s",
      err);
  g_free (err);
  err = merge_bytes (GST_TWOFLOW_CAPS, ess, garbage, "");
  fail_unless (err && strstr (err, "Invalid data on the enhanced pad"), "%s",
      err);
  g_free (err);

  /* truncated in the middle of a record */
  trunc = g_bytes_new_from_bytes (enh, 0, g_bytes_get_size (enh) - 1000);
  err = merge_bytes (GST_TWOFLOW_CAPS, ess, trunc, "");
  fail_unless (err && strstr (err, "truncated record"), "%s", err);
  g_free (err);

  /* one corrupted header byte */
  copy = g_memdup2 (g_bytes_get_data (ess, NULL), g_bytes_get_size (ess));
  copy[records_end (ess, 1) + 20] ^= 0x40;
  flipped = g_bytes_new_take (copy, g_bytes_get_size (ess));
  err = merge_bytes (GST_TWOFLOW_CAPS, flipped, enh, "");
  fail_unless (err && strstr (err, "checksum"), "%s", err);
  g_free (err);

  /* packetized caps promise whole records in every buffer */
  g_bytes_unref (trunc);
  trunc = g_bytes_new_from_bytes (enh, 0, records_end (enh, 2) - 10);
  err = merge_bytes (GST_TWOFLOW_CAPS ",packetized=(boolean)true", ess, trunc,
      "");
  fail_unless (err && strstr (err, "Invalid data on the enhanced pad: ")
      && strstr (err, "bytes of a truncated record"), "%s", err);
  g_free (err);

  /* caps that do not match: not negotiated, an error, no hang */
  err = merge_bytes ("video/x-raw", ess, enh, "");
  fail_unless (err && strstr (err, "not-negotiated"), "%s", err);
  g_free (err);

  /* the essential flow further ahead than allowed */
  err = merge_bytes (GST_TWOFLOW_CAPS, ess, enh, "max-essential-bytes=20000");
  fail_unless (err && strstr (err, "too far ahead"), "%s", err);
  g_free (err);

  g_bytes_unref (garbage);
  g_bytes_unref (trunc);
  g_bytes_unref (flipped);
  g_bytes_unref (ess);
  g_bytes_unref (enh);
  g_free (media);
}

GST_END_TEST;

/* ---- audio, segment ------------------------------------------------ */

#define SHIFT (36000 * GST_SECOND)      /* a broadcast capture hours in */
#define AUDIO_DUR (24 * GST_MSECOND)

/* The records of a byte-stream flow, one buffer each. */
static GPtrArray *
flow_records (GBytes * bytes)
{
  GPtrArray *recs = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  const guint8 *data = g_bytes_get_data (bytes, NULL);
  gsize off = 0, size = g_bytes_get_size (bytes);
  GstTwoflowFrameHeader h;

  while (off < size) {
    fail_unless_equals_int (gst_twoflow_frame_header_parse (data + off,
            size - off, &h), GST_TWOFLOW_PARSE_OK);
    g_ptr_array_add (recs, gst_buffer_new_memdup (data + off,
            GST_TWOFLOW_HEADER_SIZE + h.payload_size));
    off += GST_TWOFLOW_HEADER_SIZE + h.payload_size;
  }
  return recs;
}

static void
parse_record (GstBuffer * rec, GstTwoflowFrameHeader * h, GstBuffer ** payload)
{
  guint8 raw[GST_TWOFLOW_HEADER_SIZE];

  gst_buffer_extract (rec, 0, raw, sizeof (raw));
  fail_unless_equals_int (gst_twoflow_frame_header_parse (raw, sizeof (raw),
          h), GST_TWOFLOW_PARSE_OK);
  if (payload)
    *payload = gst_buffer_copy_region (rec, GST_BUFFER_COPY_MEMORY,
        GST_TWOFLOW_HEADER_SIZE, h->payload_size);
}

/* @rec with its timestamps moved by @shift. */
static GstBuffer *
shifted_record (GstBuffer * rec, GstClockTime shift)
{
  GstTwoflowFrameHeader h;
  GstBuffer *payload, *out;

  parse_record (rec, &h, &payload);
  if (GST_CLOCK_TIME_IS_VALID (h.pts))
    h.pts += shift;
  if (GST_CLOCK_TIME_IS_VALID (h.dts))
    h.dts += shift;
  out = gst_twoflow_record_new (&h, payload);
  gst_buffer_unref (payload);
  return out;
}

static GstBuffer *
audio_caps_record (void)
{
  GstCaps *caps = gst_caps_from_string ("audio/mpeg, mpegversion=(int)1, "
      "layer=(int)2, rate=(int)48000, channels=(int)2, parsed=(boolean)true");
  GstBuffer *rec = gst_twoflow_record_new_audio_caps (caps);

  gst_caps_unref (caps);
  return rec;
}

/* Audio buffer @k: its size and bytes tell it apart. */
static GstBuffer *
audio_record (guint32 k, GstClockTime pts)
{
  GstBuffer *payload = gst_buffer_new_allocate (NULL, 50 + k % 7, NULL);
  GstBuffer *rec;

  gst_buffer_memset (payload, 0, k & 0xff, 50 + k % 7);
  GST_BUFFER_PTS (payload) = GST_BUFFER_DTS (payload) = pts;
  GST_BUFFER_DURATION (payload) = AUDIO_DUR;
  rec = gst_twoflow_record_new_audio (k, 0, payload);
  gst_buffer_unref (payload);
  return rec;
}

static GstClockTime
video_time (const GstTwoflowFrameHeader * h)
{
  return GST_CLOCK_TIME_IS_VALID (h->dts) ? h->dts : h->pts;
}

/* The essential flow of a real split, timestamps moved by SHIFT, with an
 * audio track (from audio_start, every AUDIO_DUR up to the video's end)
 * interleaved by timestamp as the split does; *n_audio gets its length. */
static GPtrArray *
essential_with_audio (GBytes * ess, GstClockTime video_end,
    GstClockTime audio_start, guint * n_audio)
{
  GPtrArray *in = flow_records (ess);
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  guint i, k = 0;

  for (i = 0; i < in->len; i++) {
    GstTwoflowFrameHeader h;
    GstBuffer *rec = shifted_record (g_ptr_array_index (in, i), SHIFT);
    GstClockTime until;

    parse_record (rec, &h, NULL);
    until = h.kind == GST_TWOFLOW_RECORD_FRAME ? video_time (&h) :
        h.kind == GST_TWOFLOW_RECORD_END ? video_end : 0;
    while (audio_start + k * AUDIO_DUR < until) {
      g_ptr_array_add (out, audio_record (k, audio_start + k * AUDIO_DUR));
      k++;
    }
    g_ptr_array_add (out, rec);
    if (h.kind == GST_TWOFLOW_RECORD_CAPS)
      g_ptr_array_add (out, audio_caps_record ());
  }
  g_ptr_array_unref (in);
  *n_audio = k;
  return out;
}

static void
write_records (const gchar * path, GPtrArray * recs, guint from, guint to)
{
  GByteArray *b = g_byte_array_new ();
  guint i;

  for (i = from; i < to; i++) {
    GstMapInfo map;

    gst_buffer_map (g_ptr_array_index (recs, i), &map, GST_MAP_READ);
    g_byte_array_append (b, map.data, map.size);
    gst_buffer_unmap (g_ptr_array_index (recs, i), &map);
  }
  fail_unless (g_file_set_contents (path, (gchar *) b->data, b->len, NULL));
  g_byte_array_unref (b);
}

/* What came out of the merge's src pads, in push order (one thread). */
typedef struct {
  gboolean audio;
  GstClockTime pts, dts, duration;
  guint64 offset;
  gsize size;
  guint8 first_byte;
} OutItem;

typedef struct {
  GMutex lock;
  GArray *items;                /* OutItem */
  GstClockTime seg_start[2];    /* video, audio */
  gchar *audio_caps;
  gint eos[2];
  gint pads_added;
  gint no_more_pads;
} OutLog;

static GstPadProbeReturn
out_probe (GstPad * pad, GstPadProbeInfo * info, OutLog * log)
{
  gboolean audio = g_str_equal (GST_PAD_NAME (pad), "audio");

  g_mutex_lock (&log->lock);
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
    OutItem it = { audio, GST_BUFFER_PTS (buf), GST_BUFFER_DTS (buf),
      GST_BUFFER_DURATION (buf), GST_BUFFER_OFFSET (buf),
      gst_buffer_get_size (buf), 0
    };

    gst_buffer_extract (buf, 0, &it.first_byte, 1);
    g_array_append_val (log->items, it);
  } else {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);

    if (GST_EVENT_TYPE (ev) == GST_EVENT_SEGMENT) {
      const GstSegment *seg;

      gst_event_parse_segment (ev, &seg);
      log->seg_start[audio] = seg->start;
    } else if (GST_EVENT_TYPE (ev) == GST_EVENT_CAPS && audio) {
      GstCaps *caps;

      gst_event_parse_caps (ev, &caps);
      log->audio_caps = gst_caps_to_string (caps);
    } else if (GST_EVENT_TYPE (ev) == GST_EVENT_EOS) {
      log->eos[audio]++;
    }
  }
  g_mutex_unlock (&log->lock);
  return GST_PAD_PROBE_OK;
}

static void
watch_pad (GstPad * pad, OutLog * log)
{
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, (GstPadProbeCallback) out_probe,
      log, NULL);
}

static void
pad_added_cb (GstElement * merge, GstPad * pad, OutLog * log)
{
  fail_unless_equals_string (GST_PAD_NAME (pad), "audio");
  g_mutex_lock (&log->lock);
  log->pads_added++;
  g_mutex_unlock (&log->lock);
  watch_pad (pad, log);
}

static void
no_more_pads_cb (GstElement * merge, OutLog * log)
{
  g_mutex_lock (&log->lock);
  log->no_more_pads++;
  g_mutex_unlock (&log->lock);
}

static void
out_log_init (OutLog * log, GstElement * merge)
{
  GstPad *src = gst_element_get_static_pad (merge, "src");

  memset (log, 0, sizeof (*log));
  g_mutex_init (&log->lock);
  log->items = g_array_new (FALSE, FALSE, sizeof (OutItem));
  log->seg_start[0] = log->seg_start[1] = GST_CLOCK_TIME_NONE;
  watch_pad (src, log);
  gst_object_unref (src);
  g_signal_connect (merge, "pad-added", G_CALLBACK (pad_added_cb), log);
  g_signal_connect (merge, "no-more-pads", G_CALLBACK (no_more_pads_cb), log);
}

static void
out_log_clear (OutLog * log)
{
  g_array_free (log->items, TRUE);
  g_free (log->audio_caps);
  g_mutex_clear (&log->lock);
}

/* A real split (timestamps hours in) with an audio track, merged from a
 * prefix file and overlapping essential and enhanced files in a pipeline
 * with a queue on each output: the audio pad appears, every audio buffer
 * comes out once, in order, with its timestamps, interleaved with the
 * video, the video is the original stream, both segments start at the
 * first timestamp, and EOS reaches both branches. */
GST_START_TEST (test_audio)
{
  gchar *media = twoflow_test_generated_mpeg2 ();
  gchar *ref = parsed_reference (media);
  gchar *ess = twoflow_test_tmpfile ("a-essential.twf");
  gchar *enh = twoflow_test_tmpfile ("a-enhanced.twf");
  gchar *prefix = twoflow_test_tmpfile ("a-prefix.twf");
  gchar *rest = twoflow_test_tmpfile ("a-rest.twf");
  gchar *out = twoflow_test_tmpfile ("a-merged.m2v");
  GstClockTime audio_start = SHIFT - 12 * GST_MSECOND, video_end;
  GPtrArray *recs, *enh_recs;
  GBytes *b;
  GstElement *pipeline, *merge;
  GstStructure *s;
  OutLog log;
  gchar *desc, *err = NULL;
  guint i, n_audio, cut, overlap_from, prefix_frames = 0, dup_frames = 0,
      dup_audio = 0, audio_seen = 0, video_seen = 0;
  GstClockTime last_video = 0, next_video;

  desc = g_strdup_printf ("filesrc location=%s ! mpegvideoparse ! "
      "twoflowsplit name=s s.essential ! queue ! filesink location=%s "
      "s.enhanced ! queue ! filesink location=%s", media, ess, enh);
  fail_unless (twoflow_test_run (desc, &err), "%s", err);
  g_free (desc);

  /* 336 frames at 25/s; the enhanced flow shifted alike */
  video_end = SHIFT + 336 * 40 * GST_MSECOND;
  b = twoflow_test_read (enh);
  enh_recs = flow_records (b);
  g_bytes_unref (b);
  for (i = 0; i < enh_recs->len; i++) {
    GstBuffer *r = shifted_record (g_ptr_array_index (enh_recs, i), SHIFT);

    gst_buffer_unref (g_ptr_array_index (enh_recs, i));
    g_ptr_array_index (enh_recs, i) = r;
  }
  write_records (enh, enh_recs, 0, enh_recs->len);
  g_ptr_array_unref (enh_recs);

  b = twoflow_test_read (ess);
  recs = essential_with_audio (b, video_end, audio_start, &n_audio);
  g_bytes_unref (b);
  fail_unless_equals_int (n_audio, 561);
  /* prefix: the first 150 records; the essential pad repeats its last 40 */
  cut = 150;
  overlap_from = cut - 40;
  for (i = 0; i < cut; i++) {
    GstTwoflowFrameHeader h;

    parse_record (g_ptr_array_index (recs, i), &h, NULL);
    if (h.kind == GST_TWOFLOW_RECORD_FRAME) {
      prefix_frames++;
      dup_frames += i >= overlap_from;
    }
    dup_audio += h.kind == GST_TWOFLOW_RECORD_AUDIO && i >= overlap_from;
  }
  fail_unless (dup_frames > 0 && dup_audio > 0);
  write_records (prefix, recs, 0, cut);
  write_records (rest, recs, overlap_from, recs->len);

  desc = g_strdup_printf ("twoflowmerge name=m prefix-location=%s "
      "m.src ! queue ! filesink location=%s "
      "m.audio ! queue ! fakesink "
      "filesrc location=%s ! m.essential filesrc location=%s ! m.enhanced",
      prefix, out, rest, enh);
  pipeline = gst_parse_launch (desc, NULL);
  merge = gst_bin_get_by_name (GST_BIN (pipeline), "m");
  out_log_init (&log, merge);
  fail_unless (twoflow_test_run_pipeline (pipeline, &err), "%s", err);

  fail_unless_equals_int (log.pads_added, 1);
  fail_unless_equals_int (log.no_more_pads, 1);
  fail_unless (log.audio_caps && g_str_has_prefix (log.audio_caps,
          "audio/mpeg"), "%s", log.audio_caps);
  /* running time from 0: the audio starts first */
  fail_unless_equals_uint64 (log.seg_start[0], audio_start);
  fail_unless_equals_uint64 (log.seg_start[1], audio_start);
  fail_unless_equals_int (log.eos[0], 1);
  fail_unless_equals_int (log.eos[1], 1);

  for (i = 0; i < log.items->len; i++) {
    OutItem *it = &g_array_index (log.items, OutItem, i);

    if (it->audio) {
      guint k = audio_seen++;

      /* in order, each once, as sent */
      fail_unless_equals_uint64 (it->offset, k);
      fail_unless_equals_uint64 (it->pts, audio_start + k * AUDIO_DUR);
      fail_unless_equals_uint64 (it->dts, audio_start + k * AUDIO_DUR);
      fail_unless_equals_uint64 (it->duration, AUDIO_DUR);
      fail_unless_equals_int (it->size, 50 + k % 7);
      fail_unless_equals_int (it->first_byte, k & 0xff);
      /* interleaved: after the video before it, not after the next one */
      fail_unless (video_seen == 0 || it->pts > last_video,
          "audio %u (%" GST_TIME_FORMAT ") after video at %" GST_TIME_FORMAT,
          k, GST_TIME_ARGS (it->pts), GST_TIME_ARGS (last_video));
      next_video = GST_CLOCK_TIME_NONE;
      for (guint j = i + 1; j < log.items->len; j++) {
        OutItem *v = &g_array_index (log.items, OutItem, j);

        if (!v->audio) {
          next_video = v->dts;
          break;
        }
      }
      fail_unless (!GST_CLOCK_TIME_IS_VALID (next_video)
          || it->pts <= next_video, "audio %u (%" GST_TIME_FORMAT
          ") before video at %" GST_TIME_FORMAT, k, GST_TIME_ARGS (it->pts),
          GST_TIME_ARGS (next_video));
    } else {
      video_seen++;
      fail_unless (GST_CLOCK_TIME_IS_VALID (it->dts));
      fail_unless (it->dts >= SHIFT);
      last_video = it->dts;
    }
  }
  fail_unless_equals_int (audio_seen, n_audio);
  fail_unless_equals_int (video_seen, 336);
  /* the last audio comes after the last video frame, before EOS */
  fail_unless (g_array_index (log.items, OutItem, log.items->len - 1).audio);

  g_object_get (merge, "stats", &s, NULL);
  GST_INFO ("stats %" GST_PTR_FORMAT, s);
  twoflow_test_check_stat (s, "audio-buffers", n_audio);
  twoflow_test_check_stat (s, "audio-duplicates", dup_audio);
  twoflow_test_check_stat (s, "duplicates", dup_frames);
  twoflow_test_check_stat (s, "prefix-frames", prefix_frames);
  twoflow_test_check_stat (s, "output-frames", 336);
  twoflow_test_check_stat (s, "E_f", 0);
  gst_structure_free (s);
  assert_same_file (ref, out);

  out_log_clear (&log);
  gst_object_unref (merge);
  gst_object_unref (pipeline);
  g_ptr_array_unref (recs);
  g_free (desc);
  for (gchar ** f = (gchar *[]) { ref, ess, enh, prefix, rest, out, NULL }; *f;
      f++) {
    g_unlink (*f);
    g_free (*f);
  }
  g_free (media);
}

GST_END_TEST;

/* Without audio there is no audio pad, and no-more-pads says so; the
 * video's segment starts at its first DTS, 10 hours in. */
GST_START_TEST (test_no_audio_segment)
{
  gchar *media = twoflow_test_greyramp ();
  gchar *ess = twoflow_test_tmpfile ("na-essential.twf");
  gchar *enh = twoflow_test_tmpfile ("na-enhanced.twf");
  gchar *desc, *err = NULL;
  GstElement *pipeline, *merge;
  OutLog log;
  GPtrArray *recs;
  GBytes *b;
  guint i;

  desc = g_strdup_printf ("filesrc location=%s ! mpegvideoparse ! "
      "twoflowsplit name=s s.essential ! queue ! filesink location=%s "
      "s.enhanced ! queue ! filesink location=%s", media, ess, enh);
  fail_unless (twoflow_test_run (desc, &err), "%s", err);
  g_free (desc);
  for (gchar ** f = (gchar *[]) { ess, enh, NULL }; *f; f++) {
    b = twoflow_test_read (*f);
    recs = flow_records (b);
    g_bytes_unref (b);
    for (i = 0; i < recs->len; i++) {
      GstBuffer *r = shifted_record (g_ptr_array_index (recs, i), SHIFT);

      gst_buffer_unref (g_ptr_array_index (recs, i));
      g_ptr_array_index (recs, i) = r;
    }
    write_records (*f, recs, 0, recs->len);
    g_ptr_array_unref (recs);
  }

  desc = g_strdup_printf ("twoflowmerge name=m ! queue ! fakesink sync=true "
      "filesrc location=%s ! m.essential filesrc location=%s ! m.enhanced",
      ess, enh);
  pipeline = gst_parse_launch (desc, NULL);
  merge = gst_bin_get_by_name (GST_BIN (pipeline), "m");
  out_log_init (&log, merge);
  /* a synchronised sink: with a segment from 0 this would wait 10 hours */
  fail_unless (twoflow_test_run_pipeline (pipeline, &err), "%s", err);
  fail_unless_equals_int (log.pads_added, 0);
  fail_unless_equals_int (log.no_more_pads, 1);
  fail_unless (gst_element_get_static_pad (merge, "audio") == NULL);
  fail_unless_equals_uint64 (log.seg_start[0], SHIFT);
  fail_unless_equals_int (log.items->len, 25);
  fail_unless_equals_uint64 (g_array_index (log.items, OutItem, 0).dts, SHIFT);
  fail_unless_equals_int (log.eos[0], 1);

  out_log_clear (&log);
  gst_object_unref (merge);
  gst_object_unref (pipeline);
  g_free (desc);
  g_unlink (ess);
  g_unlink (enh);
  g_free (ess);
  g_free (enh);
  g_free (media);
}

GST_END_TEST;

static GBytes *
records_bytes (GstBuffer * first, ...)
{
  GByteArray *b = g_byte_array_new ();
  va_list ap;

  va_start (ap, first);
  for (GstBuffer * r = first; r; r = va_arg (ap, GstBuffer *)) {
    GstMapInfo map;

    gst_buffer_map (r, &map, GST_MAP_READ);
    g_byte_array_append (b, map.data, map.size);
    gst_buffer_unmap (r, &map);
    gst_buffer_unref (r);
  }
  va_end (ap);
  return g_byte_array_free_to_bytes (b);
}

/* Audio records out of place are an element error naming the fault. */
GST_START_TEST (test_audio_bad)
{
  GBytes *enh = records_bytes (caps_record (), NULL);
  GBytes *ess;
  gchar *err;

  /* sanity: a well-formed flow with audio merges */
  ess = records_bytes (caps_record (), audio_caps_record (),
      audio_record (0, 0), frame_record (0, GST_TWOFLOW_PICTURE_I, 0),
      audio_record (1, 24 * GST_MSECOND), gst_twoflow_record_new_end
      (GST_TWOFLOW_CODEC_MPEG2, 1, 0), NULL);
  err = merge_bytes (GST_TWOFLOW_CAPS, ess, enh, "");
  fail_unless (err == NULL, "%s", err);
  g_bytes_unref (ess);

  ess = records_bytes (caps_record (), frame_record (0, GST_TWOFLOW_PICTURE_I,
          0), audio_record (0, 0), NULL);
  err = merge_bytes (GST_TWOFLOW_CAPS, ess, enh, "");
  fail_unless (err && strstr (err, "Invalid data on the essential pad: "
          "audio record 0 before the audio caps record"), "%s", err);
  g_free (err);
  g_bytes_unref (ess);

  ess = records_bytes (caps_record (), audio_caps_record (),
      audio_record (0, 0), audio_record (2, 48 * GST_MSECOND), NULL);
  err = merge_bytes (GST_TWOFLOW_CAPS, ess, enh, "");
  fail_unless (err && strstr (err, "audio record 2 out of order (expected 1)"),
      "%s", err);
  g_free (err);
  g_bytes_unref (ess);

  ess = records_bytes (caps_record (), frame_record (0, GST_TWOFLOW_PICTURE_I,
          0), NULL);
  g_bytes_unref (enh);
  enh = records_bytes (caps_record (), audio_caps_record (), NULL);
  err = merge_bytes (GST_TWOFLOW_CAPS, ess, enh, "");
  fail_unless (err && strstr (err, "Invalid data on the enhanced pad: "
          "audio record 0 on the enhanced flow"), "%s", err);
  g_free (err);
  g_bytes_unref (ess);
  g_bytes_unref (enh);
}

GST_END_TEST;

static Suite *
twoflowmerge_suite (void)
{
  Suite *s = suite_create ("twoflowmerge");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 240);
  tcase_add_test (tc, test_roundtrip_greyramp);
  tcase_add_test (tc, test_roundtrip_mpeg2_generated);
  tcase_add_test (tc, test_roundtrip_h264);
  tcase_add_test (tc, test_loss_drop_dependent);
  tcase_add_test (tc, test_loss_keep_dependent);
  tcase_add_test (tc, test_prefix);
  tcase_add_test (tc, test_live_latency);
  tcase_add_test (tc, test_latency_test_clock);
  tcase_add_test (tc, test_enhanced_reorder);
  tcase_add_test (tc, test_essential_bounds);
  tcase_add_test (tc, test_bad_input);
  tcase_add_test (tc, test_audio);
  tcase_add_test (tc, test_no_audio_segment);
  tcase_add_test (tc, test_audio_bad);
  return s;
}

GST_CHECK_MAIN (twoflowmerge);
