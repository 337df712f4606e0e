/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Unit tests of the picture-type parser (gst-libs/gst/picturetype):
 * MPEG-2 pictures written bit by bit here, H.264 access units from x264enc
 * and H.265 ones from x265enc in both stream formats, AV1 temporal units
 * from av1enc (libaom), against the GOP structure the encoder was told to
 * make.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/picturetype/picturetype.h>
#include <gst/picturetype/h264splice.h>
#include <gst/codecparsers/gsth264parser.h>
#include <gst/twoflow/twoflowsequencer.h>

/* ---------------------------------------------------------------- */
/* a bit writer for MPEG-2 headers */

typedef struct
{
  guint8 data[1024];
  gsize bits;
} Bits;

static void
put (Bits * b, guint32 v, guint n)
{
  while (n--) {
    if ((v >> n) & 1)
      b->data[b->bits / 8] |= 0x80 >> (b->bits % 8);
    b->bits++;
  }
}

static void
start_code (Bits * b, guint8 code)
{
  b->bits = (b->bits + 7) / 8 * 8;
  put (b, 0x000001, 24);
  put (b, code, 8);
}

static gsize
bytes_of (Bits * b)
{
  return (b->bits + 7) / 8;
}

/* a sequence header; with @intra_base, a loaded intra matrix whose
 * (zigzag) entry i is intra_base + i */
static void
put_sequence (Bits * b, gint intra_base)
{
  guint i;

  start_code (b, 0xb3);
  put (b, 352, 12);
  put (b, 288, 12);
  put (b, 2, 4);                /* 4:3 */
  put (b, 3, 4);                /* 25 fps */
  put (b, 10000, 18);           /* 4 Mbit/s in 400 bit/s units */
  put (b, 1, 1);                /* marker */
  put (b, 112, 10);             /* vbv buffer size */
  put (b, 0, 1);                /* constrained parameters */
  put (b, intra_base > 0, 1);
  if (intra_base > 0)
    for (i = 0; i < 64; i++)
      put (b, intra_base + i, 8);
  put (b, 0, 1);                /* no non-intra matrix */
}

static void
put_gop (Bits * b)
{
  start_code (b, 0xb8);
  put (b, 0, 1);                /* drop frame */
  put (b, 0, 5);
  put (b, 0, 6);
  put (b, 1, 1);                /* marker */
  put (b, 0, 6);
  put (b, 0, 6);
  put (b, 1, 1);                /* closed */
  put (b, 0, 1);
}

/* type: 1 I, 2 P, 3 B, 4 D */
static void
put_picture (Bits * b, guint tref, guint type)
{
  start_code (b, 0x00);
  put (b, tref, 10);
  put (b, type, 3);
  put (b, 0xffff, 16);          /* vbv delay */
  if (type == 2 || type == 3) {
    put (b, 0, 1);
    put (b, 7, 3);
  }
  if (type == 3) {
    put (b, 0, 1);
    put (b, 7, 3);
  }
  put (b, 0, 1);                /* extra_bit_picture */
}

/* a quant matrix extension loading a non-intra matrix of @base + i */
static void
put_quant_matrix_extension (Bits * b, gint intra_base, gint non_intra_base)
{
  guint i;

  start_code (b, 0xb5);
  put (b, 3, 4);                /* quant matrix extension */
  put (b, intra_base > 0, 1);
  if (intra_base > 0)
    for (i = 0; i < 64; i++)
      put (b, intra_base + i, 8);
  put (b, non_intra_base > 0, 1);
  if (non_intra_base > 0)
    for (i = 0; i < 64; i++)
      put (b, non_intra_base + i, 8);
  put (b, 0, 1);                /* no chroma matrices */
  put (b, 0, 1);
}

static void
put_slice (Bits * b)
{
  start_code (b, 0x01);
  put (b, 0x12345678, 32);
  put (b, 0x9abcdef0, 32);
}

static gboolean
parse (GstTwoflowCodec codec, Bits * b, GstTwoflowPictureInfo * info)
{
  GstTwoflowPictureParser *p = gst_twoflow_picture_parser_new (codec);
  gboolean ok = gst_twoflow_picture_parser_parse (p, b->data, bytes_of (b),
      info);

  gst_twoflow_picture_parser_free (p);
  return ok;
}

GST_START_TEST (test_mpeg2_types)
{
  GstTwoflowPictureInfo info;
  Bits b;
  guint i;

  /* sequence + GOP + I */
  memset (&b, 0, sizeof (b));
  put_sequence (&b, 0);
  put_gop (&b);
  put_picture (&b, 2, 1);
  put_slice (&b);
  fail_unless (parse (GST_TWOFLOW_CODEC_MPEG2, &b, &info));
  fail_unless_equals_int (info.type, GST_TWOFLOW_PICTURE_I);
  fail_unless (info.reference);
  fail_unless (info.sequence_header);
  fail_unless (info.gop_header);
  fail_unless (!info.idr);
  fail_unless_equals_int (info.temporal_reference, 2);
  fail_unless (!info.load_intra_matrix && !info.load_non_intra_matrix);

  /* P and B alone; MPEG-1 reads the same */
  for (i = 2; i <= 3; i++) {
    memset (&b, 0, sizeof (b));
    put_picture (&b, 5 + i, i);
    put_slice (&b);
    fail_unless (parse (i == 2 ? GST_TWOFLOW_CODEC_MPEG1 :
            GST_TWOFLOW_CODEC_MPEG2, &b, &info));
    fail_unless_equals_int (info.type, i == 2 ? GST_TWOFLOW_PICTURE_P :
        GST_TWOFLOW_PICTURE_B);
    fail_unless_equals_int (info.reference, i == 2);
    fail_unless (!info.sequence_header && !info.gop_header);
    fail_unless_equals_int (info.temporal_reference, 5 + i);
  }
}

GST_END_TEST;

GST_START_TEST (test_mpeg2_first_picture_counts)
{
  GstTwoflowPictureInfo info;
  Bits b;

  memset (&b, 0, sizeof (b));
  put_picture (&b, 0, 3);
  put_slice (&b);
  put_picture (&b, 1, 1);
  put_slice (&b);
  fail_unless (parse (GST_TWOFLOW_CODEC_MPEG2, &b, &info));
  fail_unless_equals_int (info.type, GST_TWOFLOW_PICTURE_B);
  fail_unless (!info.reference);
  fail_unless_equals_int (info.temporal_reference, 0);
}

GST_END_TEST;

GST_START_TEST (test_mpeg2_no_picture)
{
  GstTwoflowPictureInfo info;
  GstTwoflowPictureParser *p =
      gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_MPEG2);
  static const guint8 garbage[] = { 1, 2, 3, 0, 0, 2, 0xff, 0xfe, 0, 0 };
  static const guint8 end[] = { 0, 0, 1, 0xb7 };
  Bits b;

  fail_if (gst_twoflow_picture_parser_parse (p, garbage, sizeof (garbage),
          &info));
  fail_unless_equals_int (info.type, GST_TWOFLOW_PICTURE_NONE);
  fail_if (gst_twoflow_picture_parser_parse (p, end, sizeof (end), &info));
  fail_if (gst_twoflow_picture_parser_parse (p, NULL, 0, &info));
  gst_twoflow_picture_parser_free (p);

  /* a sequence header alone: reported, but no picture */
  memset (&b, 0, sizeof (b));
  put_sequence (&b, 0);
  fail_if (parse (GST_TWOFLOW_CODEC_MPEG2, &b, &info));
  fail_unless (info.sequence_header);

  /* a D picture (MPEG-1 only, DC coefficients): not a type we handle */
  memset (&b, 0, sizeof (b));
  put_picture (&b, 0, 4);
  fail_if (parse (GST_TWOFLOW_CODEC_MPEG1, &b, &info));
  fail_unless_equals_int (info.type, GST_TWOFLOW_PICTURE_NONE);

  /* truncated inside the picture header */
  memset (&b, 0, sizeof (b));
  put_picture (&b, 0, 1);
  b.bits = 5 * 8;
  fail_if (parse (GST_TWOFLOW_CODEC_MPEG2, &b, &info));
}

GST_END_TEST;

/* The sequence header's matrix, then a quant matrix extension after the
 * picture (before its slices) that loads the other one: both reported,
 * the extension read although it follows the picture header. */
GST_START_TEST (test_mpeg2_quant_matrices)
{
  GstTwoflowPictureInfo info;
  Bits b;
  guint i;

  memset (&b, 0, sizeof (b));
  put_sequence (&b, 10);
  put_gop (&b);
  put_picture (&b, 0, 1);
  put_quant_matrix_extension (&b, 0, 100);
  put_slice (&b);
  fail_unless (parse (GST_TWOFLOW_CODEC_MPEG2, &b, &info));
  fail_unless (info.load_intra_matrix);
  fail_unless (info.load_non_intra_matrix);
  for (i = 0; i < 64; i++) {
    fail_unless_equals_int (info.intra_matrix[i], 10 + i);
    fail_unless_equals_int (info.non_intra_matrix[i], 100 + i);
  }

  /* the later of two intra matrices wins; one after a slice is another
   * picture's business */
  memset (&b, 0, sizeof (b));
  put_sequence (&b, 10);
  put_picture (&b, 0, 1);
  put_quant_matrix_extension (&b, 20, 0);
  put_slice (&b);
  put_quant_matrix_extension (&b, 30, 0);
  fail_unless (parse (GST_TWOFLOW_CODEC_MPEG2, &b, &info));
  fail_unless (info.load_intra_matrix);
  fail_unless (!info.load_non_intra_matrix);
  for (i = 0; i < 64; i++)
    fail_unless_equals_int (info.intra_matrix[i], 20 + i);
}

GST_END_TEST;

/* ---------------------------------------------------------------- */
/* H.264 from x264enc: IDR, then P B B in decode order (b-adapt off, no
 * B pyramid), a new IDR every 9 frames. */

#define H264_FRAMES 20
#define H264_GOP 9

static GPtrArray *
encode_h264 (const gchar * format, GstBuffer ** codec_data)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%d ! "
      "video/x-raw,width=64,height=48,framerate=25/1 ! x264enc "
      "key-int-max=%d bframes=2 b-adapt=false b-pyramid=false "
      "speed-preset=ultrafast ! h264parse ! "
      "video/x-h264,stream-format=%s,alignment=au ! appsink name=out "
      "sync=false", H264_FRAMES, H264_GOP, format);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *sink;
  GPtrArray *aus = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstSample *sample;

  g_free (desc);
  fail_unless (pipeline != NULL);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  *codec_data = NULL;
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    GstStructure *s = gst_caps_get_structure (gst_sample_get_caps (sample),
        0);
    const GValue *v = gst_structure_get_value (s, "codec_data");

    if (v && !*codec_data)
      *codec_data = gst_buffer_ref (gst_value_get_buffer (v));
    g_ptr_array_add (aus, gst_buffer_ref (gst_sample_get_buffer (sample)));
    gst_sample_unref (sample);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  fail_unless_equals_int (aus->len, H264_FRAMES);
  return aus;
}

static void
check_h264 (const gchar * format)
{
  GstBuffer *codec_data;
  GPtrArray *aus = encode_h264 (format, &codec_data);
  GstTwoflowPictureParser *p =
      gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_H264);
  guint i, counts[4] = { 0 };

  if (g_str_equal (format, "avc")) {
    GstMapInfo map;

    fail_unless (codec_data != NULL);
    gst_buffer_map (codec_data, &map, GST_MAP_READ);
    fail_unless (gst_twoflow_picture_parser_set_codec_data (p, map.data,
            map.size));
    /* a broken record is refused */
    fail_if (gst_twoflow_picture_parser_set_codec_data (p, map.data, 3));
    gst_buffer_unmap (codec_data, &map);
  }

  for (i = 0; i < aus->len; i++) {
    GstBuffer *au = g_ptr_array_index (aus, i);
    GstTwoflowPictureInfo info;
    GstMapInfo map;
    gboolean idr = !GST_BUFFER_FLAG_IS_SET (au, GST_BUFFER_FLAG_DELTA_UNIT);

    gst_buffer_map (au, &map, GST_MAP_READ);
    fail_unless (gst_twoflow_picture_parser_parse (p, map.data, map.size,
            &info), "no picture in access unit %u", i);
    gst_buffer_unmap (au, &map);
    counts[info.type]++;
    fail_unless_equals_int (info.idr, idr);
    fail_unless_equals_int (info.temporal_reference, -1);
    if (idr) {
      fail_unless_equals_int (info.type, GST_TWOFLOW_PICTURE_I);
      fail_unless (info.reference);
    } else {
      fail_unless (info.type == GST_TWOFLOW_PICTURE_P ||
          info.type == GST_TWOFLOW_PICTURE_B, "access unit %u: type %d", i,
          info.type);
      /* without a B pyramid no B frame is a reference */
      fail_unless_equals_int (info.reference,
          info.type == GST_TWOFLOW_PICTURE_P);
    }
    /* x264enc puts an SPS before every IDR (h264parse keeps it in avc
     * too), and only there */
    fail_unless_equals_int (info.sequence_header, idr);
  }
  /* 20 frames with a key frame every 9: 3 IDR; the rest are P and B,
   * at most two B in a row */
  fail_unless_equals_int (counts[GST_TWOFLOW_PICTURE_I], 3);
  fail_unless (counts[GST_TWOFLOW_PICTURE_B] >= 8);
  fail_unless (counts[GST_TWOFLOW_PICTURE_P] >= 4);
  fail_unless_equals_int (counts[GST_TWOFLOW_PICTURE_NONE], 0);

  gst_twoflow_picture_parser_free (p);
  gst_clear_buffer (&codec_data);
  g_ptr_array_unref (aus);
}

GST_START_TEST (test_h264_byte_stream)
{
  check_h264 ("byte-stream");
}

GST_END_TEST;

GST_START_TEST (test_h264_avc)
{
  check_h264 ("avc");
}

GST_END_TEST;

/* Without the SPS/PPS a slice header cannot be read: no type. */
GST_START_TEST (test_h264_needs_parameter_sets)
{
  GstBuffer *codec_data;
  GPtrArray *aus = encode_h264 ("avc", &codec_data);
  GstTwoflowPictureParser *p =
      gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_H264);
  GstTwoflowPictureParser *mpeg =
      gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_MPEG2);
  GstTwoflowPictureInfo info;
  GstMapInfo map;
  GstMapInfo cd;

  /* codec_data means nothing to an MPEG parser */
  gst_buffer_map (codec_data, &cd, GST_MAP_READ);
  fail_if (gst_twoflow_picture_parser_set_codec_data (mpeg, cd.data, cd.size));
  gst_buffer_unmap (codec_data, &cd);

  /* avc access units read as byte-stream, without the parameter sets */
  gst_buffer_map (g_ptr_array_index (aus, 1), &map, GST_MAP_READ);
  fail_if (gst_twoflow_picture_parser_parse (p, map.data, map.size, &info));
  fail_unless_equals_int (info.type, GST_TWOFLOW_PICTURE_NONE);

  /* with codec_data they read; back to byte-stream, they do not */
  gst_buffer_map (codec_data, &cd, GST_MAP_READ);
  fail_unless (gst_twoflow_picture_parser_set_codec_data (p, cd.data,
          cd.size));
  gst_buffer_unmap (codec_data, &cd);
  fail_unless (gst_twoflow_picture_parser_parse (p, map.data, map.size,
          &info));
  fail_unless (gst_twoflow_picture_parser_set_codec_data (p, NULL, 0));
  fail_if (gst_twoflow_picture_parser_parse (p, map.data, map.size, &info));
  gst_buffer_unmap (g_ptr_array_index (aus, 1), &map);

  gst_twoflow_picture_parser_free (p);
  gst_twoflow_picture_parser_free (mpeg);
  gst_buffer_unref (codec_data);
  g_ptr_array_unref (aus);
}

GST_END_TEST;

/* ---------------------------------------------------------------- */
/* H.265 and AV1 */

/* The buffers (and the first codec_data) an encoding pipeline's appsink
 * "out" gets. */
static GPtrArray *
encode (const gchar * desc, GstBuffer ** codec_data)
{
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *sink;
  GPtrArray *aus = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstSample *sample;

  fail_unless (pipeline != NULL, "%s", desc);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  if (codec_data)
    *codec_data = NULL;
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    GstStructure *s = gst_caps_get_structure (gst_sample_get_caps (sample),
        0);
    const GValue *v = gst_structure_get_value (s, "codec_data");

    if (v && codec_data && !*codec_data)
      *codec_data = gst_buffer_ref (gst_value_get_buffer (v));
    g_ptr_array_add (aus, gst_buffer_ref (gst_sample_get_buffer (sample)));
    gst_sample_unref (sample);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return aus;
}

#define H265_FRAMES 40
#define H265_GOP 12

/* 40 frames, open GOPs of 12 (CRA with RASL pictures), B pyramids (and
 * @extra x265 options) */
static GPtrArray *
encode_h265_with (const gchar * format, const gchar * extra,
    GstBuffer ** codec_data)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%d "
      "pattern=ball ! video/x-raw,width=128,height=96,framerate=25/1 ! "
      "x265enc key-int-max=%d speed-preset=ultrafast option-string="
      "\"bframes=3:b-pyramid=1:open-gop=1:scenecut=0:min-keyint=%d%s\" ! "
      "h265parse ! video/x-h265,stream-format=%s,alignment=au ! "
      "appsink name=out sync=false", H265_FRAMES, H265_GOP, H265_GOP, extra,
      format);
  GPtrArray *aus = encode (desc, codec_data);

  g_free (desc);
  fail_unless_equals_int (aus->len, H265_FRAMES);
  return aus;
}

static GPtrArray *
encode_h265 (const gchar * format, GstBuffer ** codec_data)
{
  return encode_h265_with (format, "", codec_data);
}

/* nal_unit_type (and TemporalId) of the first slice of a byte-stream
 * access unit, read here without the parser */
static guint
h265_first_slice_type_tid (GstBuffer * au, guint * tid)
{
  GstMapInfo map;
  guint i, type = 64;

  gst_buffer_map (au, &map, GST_MAP_READ);
  for (i = 0; i + 5 < map.size; i++) {
    if (map.data[i] == 0 && map.data[i + 1] == 0 && map.data[i + 2] == 1) {
      guint t = (map.data[i + 3] >> 1) & 0x3f;

      if (t < 32) {
        type = t;
        if (tid)
          *tid = (map.data[i + 4] & 7) - 1;
        break;
      }
    }
  }
  gst_buffer_unmap (au, &map);
  return type;
}

static guint
h265_first_slice_type (GstBuffer * au)
{
  return h265_first_slice_type_tid (au, NULL);
}

static void
parse_all (GstTwoflowPictureParser * p, GPtrArray * aus,
    GstTwoflowPictureInfo * infos)
{
  guint i;

  for (i = 0; i < aus->len; i++) {
    GstMapInfo map;

    gst_buffer_map (g_ptr_array_index (aus, i), &map, GST_MAP_READ);
    fail_unless (gst_twoflow_picture_parser_parse (p, map.data, map.size,
            &infos[i]), "no picture in unit %u", i);
    gst_buffer_unmap (g_ptr_array_index (aus, i), &map);
  }
}

static void
sequence (GstTwoflowCodec codec, const GstTwoflowPictureInfo * infos,
    guint n, GstTwoflowFrameHeader * hdrs)
{
  GstTwoflowSequencer seq;
  guint i;

  gst_twoflow_sequencer_init (&seq, codec, GST_TWOFLOW_POLICY_I, GST_SECOND);
  for (i = 0; i < n; i++) {
    GstTwoflowSequencerPicture pic = { infos[i].type, infos[i].reference,
      infos[i].idr, infos[i].leading, infos[i].open_gop,
      infos[i].depends_back
    };

    fail_unless (gst_twoflow_sequencer_next_picture (&seq, &pic, i, i, 1,
            &hdrs[i]));
  }
}

GST_START_TEST (test_h265)
{
  GstBuffer *codec_data;
  GPtrArray *bs = encode_h265 ("byte-stream", NULL);
  GPtrArray *hvc1 = encode_h265 ("hvc1", &codec_data);
  GstTwoflowPictureParser *p =
      gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_H265);
  GstTwoflowPictureInfo infos[H265_FRAMES], hinfos[H265_FRAMES];
  GstTwoflowFrameHeader hdrs[H265_FRAMES];
  guint i, counts[4] = { 0 }, rasl = 0, last_i = 0;
  GstMapInfo map;

  parse_all (p, bs, infos);
  for (i = 0; i < H265_FRAMES; i++) {
    guint t = h265_first_slice_type (g_ptr_array_index (bs, i));

    counts[infos[i].type]++;
    fail_unless (t < 32, "no slice in access unit %u", i);
    /* I = IRAP, B = sub-layer non-reference (one temporal sub-layer:
     * every _N type), P = the rest */
    fail_unless_equals_int (infos[i].type == GST_TWOFLOW_PICTURE_I,
        t >= 16 && t <= 23);
    fail_unless_equals_int (infos[i].type == GST_TWOFLOW_PICTURE_B,
        t < 16 && (t & 1) == 0);
    fail_unless_equals_int (infos[i].reference,
        infos[i].type != GST_TWOFLOW_PICTURE_B);
    fail_unless_equals_int (infos[i].open_gop, t == 8 || t == 9);
    fail_unless_equals_int (infos[i].idr, t >= 16 && t <= 20);
    /* VPS/SPS/PPS come before an IRAP (x265enc: the first only; ffmpeg's
     * libx265 repeats them before every one) */
    if (infos[i].sequence_header)
      fail_unless_equals_int (infos[i].type, GST_TWOFLOW_PICTURE_I);
    rasl += infos[i].open_gop;
  }
  /* an IDR and CRAs every 12 frames; RASL pictures after each CRA */
  fail_unless_equals_int (counts[GST_TWOFLOW_PICTURE_I], 4);
  fail_unless (counts[GST_TWOFLOW_PICTURE_B] >= 10);
  fail_unless (counts[GST_TWOFLOW_PICTURE_P] >= 10);
  fail_unless (rasl >= 3, "%u RASL pictures", rasl);
  fail_unless (infos[0].sequence_header);

  /* RASL pictures reach back into the GOP before, no further than its
   * first trailing picture; trailing ones not before the IRAP */
  sequence (GST_TWOFLOW_CODEC_H265, infos, H265_FRAMES, hdrs);
  for (i = 0; i < H265_FRAMES; i++) {
    if (infos[i].type == GST_TWOFLOW_PICTURE_I) {
      fail_unless_equals_int (hdrs[i].depends_from, i);
      last_i = i;
    } else if (infos[i].open_gop) {
      fail_unless (hdrs[i].depends_from < last_i);
      fail_unless (hdrs[i].depends_from > 0);
    } else {
      fail_unless (hdrs[i].depends_from > last_i);
      fail_unless (hdrs[i].depends_from <= i);
    }
  }

  /* hvc1: the same classes with the parameter sets from hvcC; without
   * them nothing reads */
  gst_twoflow_picture_parser_free (p);
  p = gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_H265);
  gst_buffer_map (g_ptr_array_index (hvc1, 1), &map, GST_MAP_READ);
  fail_if (gst_twoflow_picture_parser_parse (p, map.data, map.size,
          &hinfos[0]));
  gst_buffer_unmap (g_ptr_array_index (hvc1, 1), &map);
  fail_unless (codec_data != NULL);
  gst_buffer_map (codec_data, &map, GST_MAP_READ);
  fail_if (gst_twoflow_picture_parser_set_codec_data (p, map.data, 10));
  fail_unless (gst_twoflow_picture_parser_set_codec_data (p, map.data,
          map.size));
  gst_buffer_unmap (codec_data, &map);
  parse_all (p, hvc1, hinfos);
  for (i = 0; i < H265_FRAMES; i++) {
    fail_unless_equals_int (hinfos[i].type, infos[i].type);
    fail_unless_equals_int (hinfos[i].reference, infos[i].reference);
    fail_unless_equals_int (hinfos[i].open_gop, infos[i].open_gop);
  }

  gst_twoflow_picture_parser_free (p);
  gst_buffer_unref (codec_data);
  g_ptr_array_unref (bs);
  g_ptr_array_unref (hvc1);
}

GST_END_TEST;

/* Two temporal sub-layers: the non-reference pictures of the highest
 * (TSA_N in TemporalId 1) are B, what the lower one has is P. */
GST_START_TEST (test_h265_temporal_layers)
{
  GPtrArray *bs = encode_h265_with ("byte-stream", ":temporal-layers=1",
      NULL);
  GstTwoflowPictureParser *p =
      gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_H265);
  GstTwoflowPictureInfo infos[H265_FRAMES];
  guint i, top = 0;

  parse_all (p, bs, infos);
  for (i = 0; i < H265_FRAMES; i++) {
    guint tid = 0;
    guint t = h265_first_slice_type_tid (g_ptr_array_index (bs, i), &tid);

    fail_unless (t < 32);
    fail_unless_equals_int (infos[i].type == GST_TWOFLOW_PICTURE_B,
        tid == 1 && t < 16 && (t & 1) == 0);
    top += tid == 1;
  }
  fail_unless (top >= 10, "%u pictures in sub-layer 1", top);
  gst_twoflow_picture_parser_free (p);
  g_ptr_array_unref (bs);
}

GST_END_TEST;

#define AV1_FRAMES 30
#define AV1_GOP 10

/* libaom with look-ahead: hidden alt-ref frames, shown later with
 * show_existing_frame; key frames every 10 */
GST_START_TEST (test_av1)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%d "
      "pattern=ball ! video/x-raw,width=64,height=64,framerate=25/1 ! "
      "av1enc cpu-used=8 lag-in-frames=16 keyframe-max-dist=%d "
      "keyframe-mode=disabled threads=1 ! av1parse ! "
      "video/x-av1,stream-format=obu-stream,alignment=tu ! "
      "appsink name=out sync=false", AV1_FRAMES, AV1_GOP);
  GPtrArray *tus = encode (desc, NULL);
  GstTwoflowPictureParser *p =
      gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_AV1);
  GstTwoflowPictureInfo infos[AV1_FRAMES];
  GstTwoflowFrameHeader hdrs[AV1_FRAMES];
  guint i, counts[4] = { 0 }, last_key = 0;

  g_free (desc);
  fail_unless_equals_int (tus->len, AV1_FRAMES);
  parse_all (p, tus, infos);
  sequence (GST_TWOFLOW_CODEC_AV1, infos, AV1_FRAMES, hdrs);
  for (i = 0; i < AV1_FRAMES; i++) {
    gboolean key = !GST_BUFFER_FLAG_IS_SET (g_ptr_array_index (tus, i),
        GST_BUFFER_FLAG_DELTA_UNIT);

    counts[infos[i].type]++;
    fail_unless_equals_int (infos[i].type == GST_TWOFLOW_PICTURE_I, key);
    fail_unless_equals_int (infos[i].reference,
        infos[i].type != GST_TWOFLOW_PICTURE_B);
    if (key) {
      /* a shown key frame: every slot refreshed, a sequence header */
      fail_unless (infos[i].idr);
      fail_unless (infos[i].sequence_header);
      last_key = i;
    } else {
      /* exact: from the slots, never before the last key frame */
      fail_unless (infos[i].depends_back >= 1);
      fail_unless_equals_int (hdrs[i].depends_from,
          i - infos[i].depends_back);
      fail_unless (hdrs[i].depends_from >= last_key, "unit %u depends from "
          "%u, key frame %u", i, hdrs[i].depends_from, last_key);
    }
  }
  fail_unless_equals_int (counts[GST_TWOFLOW_PICTURE_I], 3);
  /* the alt-refs' show_existing_frame units refresh nothing */
  fail_unless (counts[GST_TWOFLOW_PICTURE_B] >= 1);
  fail_unless (counts[GST_TWOFLOW_PICTURE_P] >= 10);

  /* the B units left out upstream (skipped): the others read the same */
  gst_twoflow_picture_parser_free (p);
  p = gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_AV1);
  for (i = 0; i < AV1_FRAMES; i++) {
    GstTwoflowPictureInfo info;
    GstMapInfo map;

    if (infos[i].type == GST_TWOFLOW_PICTURE_B) {
      gst_twoflow_picture_parser_skip (p);
      continue;
    }
    gst_buffer_map (g_ptr_array_index (tus, i), &map, GST_MAP_READ);
    fail_unless (gst_twoflow_picture_parser_parse (p, map.data, map.size,
            &info));
    gst_buffer_unmap (g_ptr_array_index (tus, i), &map);
    fail_unless_equals_int (info.type, infos[i].type);
    fail_unless_equals_int (info.depends_back, infos[i].depends_back);
  }

  gst_twoflow_picture_parser_free (p);
  g_ptr_array_unref (tus);
}

GST_END_TEST;

/* --- the H.264 splice (ratetranscoder keep=i) ------------------------- */

static GPtrArray *
encode_h264_with (const gchar * opts, guint frames)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%u "
      "pattern=ball ! video/x-raw,format=I420,width=64,height=48,"
      "framerate=25/1 ! x264enc %s speed-preset=ultrafast ! h264parse ! "
      "video/x-h264,stream-format=byte-stream,alignment=au ! appsink "
      "name=out sync=false", frames, opts);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *sink;
  GPtrArray *aus = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstSample *sample;

  g_free (desc);
  fail_unless (pipeline != NULL);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    g_ptr_array_add (aus, gst_buffer_ref (gst_sample_get_buffer (sample)));
    gst_sample_unref (sample);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  fail_unless_equals_int (aus->len, frames);
  return aus;
}

static gboolean
splice_rewrite (GstTwoflowH264Splice * sp, GstBuffer * au, guint fn,
    guint poc, GByteArray * out)
{
  GstMapInfo m;
  gboolean ok;

  gst_buffer_map (au, &m, GST_MAP_READ);
  ok = gst_twoflow_h264_splice_rewrite (sp, m.data, m.size, fn, poc, 0, out);
  gst_buffer_unmap (au, &m);
  return ok;
}

/* An encoder's pictures (one reference, no B frames) rewritten into the
 * source's sequence: a PPS of their own pointing at the source's SPS,
 * non-IDR slices with the frame_num and POC asked for and one reference
 * in their list; an access unit predicting from more than one reference
 * is refused and leaves nothing. */
GST_START_TEST (test_h264_splice)
{
  GPtrArray *src = encode_h264_with ("key-int-max=9 bframes=2 "
      "b-adapt=false b-pyramid=false", 3);
  GPtrArray *enc = encode_h264_with ("key-int-max=100 bframes=0 "
      "option-string=ref=1:weightp=0", 3);
  GPtrArray *multi = encode_h264_with ("key-int-max=100 bframes=0 "
      "option-string=ref=3:weightp=0", 6);
  GstTwoflowH264Splice *sp = gst_twoflow_h264_splice_new ();
  GstTwoflowH264SourcePicture pic;
  GstH264NalParser *check = gst_h264_nal_parser_new ();
  GstH264NalUnit nalu;
  GByteArray *out = g_byte_array_new ();
  const gchar *why = NULL;
  GstMapInfo m;
  guint i, offset = 0, slices = 0, src_pps = G_MAXUINT, pps = G_MAXUINT;

  /* the source's IDR (with its SPS/PPS): the splice and the checking
   * parser both know them */
  gst_buffer_map (g_ptr_array_index (src, 0), &m, GST_MAP_READ);
  fail_unless (gst_twoflow_h264_splice_parse_source (sp, m.data, m.size, 0,
          &pic, &why));
  fail_unless (why == NULL, "%s", why);
  fail_unless (pic.idr);
  fail_unless_equals_int (pic.frame_num, 0);
  while (gst_h264_parser_identify_nalu (check, m.data, offset, m.size,
          &nalu) == GST_H264_PARSER_OK || nalu.size > 0) {
    if (nalu.type == GST_H264_NAL_SPS || nalu.type == GST_H264_NAL_PPS)
      gst_h264_parser_parse_nal (check, &nalu);
    if (nalu.type == GST_H264_NAL_PPS)
      src_pps = check->last_pps ? check->last_pps->id : 0;
    offset = nalu.offset + nalu.size;
    if (offset >= m.size)
      break;
  }
  gst_buffer_unmap (g_ptr_array_index (src, 0), &m);
  fail_unless (gst_twoflow_h264_splice_log2_max_frame_num (sp) >= 4);

  /* the encoder's IDR and its P picture, as frame_num 1 and 2 */
  fail_unless (splice_rewrite (sp, g_ptr_array_index (enc, 0), 1, 4, out));
  fail_unless (splice_rewrite (sp, g_ptr_array_index (enc, 1), 2, 6, out));
  offset = 0;
  while (offset < out->len && gst_h264_parser_identify_nalu (check,
          out->data, offset, out->len, &nalu) != GST_H264_PARSER_ERROR) {
    fail_unless (nalu.type != GST_H264_NAL_SPS && nalu.type !=
        GST_H264_NAL_SLICE_IDR && nalu.type != GST_H264_NAL_SEI);
    if (nalu.type == GST_H264_NAL_PPS) {
      GstH264PPS p;

      fail_unless_equals_int (gst_h264_parser_parse_pps (check, &nalu, &p),
          GST_H264_PARSER_OK);
      pps = p.id;
      fail_if (pps == src_pps);
      gst_h264_pps_clear (&p);
    } else if (nalu.type == GST_H264_NAL_SLICE) {
      GstH264SliceHdr sh;

      fail_unless_equals_int (gst_h264_parser_parse_slice_hdr (check, &nalu,
              &sh, FALSE, FALSE), GST_H264_PARSER_OK);
      fail_unless_equals_int (sh.pps->id, pps);
      fail_unless (nalu.ref_idc != 0);
      fail_unless_equals_int (sh.frame_num, slices + 1);
      if (sh.pps->sequence->pic_order_cnt_type == 0)
        fail_unless_equals_int (sh.pic_order_cnt_lsb, 4 + 2 * slices);
      if (GST_H264_IS_P_SLICE (&sh))
        fail_unless_equals_int (sh.num_ref_idx_l0_active_minus1, 0);
      slices++;
    }
    offset = nalu.offset + nalu.size;
  }
  fail_unless_equals_int (slices, 2);

  /* three references: refused, nothing written */
  for (i = 0; i < multi->len; i++) {
    guint len = out->len;
    gboolean ok = splice_rewrite (sp, g_ptr_array_index (multi, i), 3 + i,
        8 + 2 * i, out);

    if (!ok)
      fail_unless_equals_int (out->len, len);
    if (i == multi->len - 1)
      fail_if (ok, "a picture with 3 references was spliced");
  }

  g_byte_array_unref (out);
  gst_h264_nal_parser_free (check);
  gst_twoflow_h264_splice_free (sp);
  g_ptr_array_unref (src);
  g_ptr_array_unref (enc);
  g_ptr_array_unref (multi);
}

GST_END_TEST;

/* An encoder's P picture (coded after an intra picture standing for the
 * source's reference) spliced as a picture nothing references, for
 * ratetranscoder keep=ip: nal_ref_idc 0, the source's own non-reference
 * frame_num and POC, its one reference forced by a list modification to
 * the source reference asked for; the intra picture only gives the
 * parameter sets. A reference the splice may name is one that stays
 * short-term. */
GST_START_TEST (test_h264_splice_nonref)
{
  GPtrArray *src = encode_h264_with ("key-int-max=9 bframes=2 "
      "b-adapt=false b-pyramid=false", 4);
  GPtrArray *enc = encode_h264_with ("key-int-max=100 bframes=0 "
      "option-string=ref=1:weightp=0", 2);
  GstTwoflowH264Splice *sp = gst_twoflow_h264_splice_new ();
  GstTwoflowH264SourcePicture pics[4];
  GstH264NalParser *check = gst_h264_nal_parser_new ();
  GstH264NalUnit nalu;
  GByteArray *out = g_byte_array_new ();
  const gchar *why = NULL;
  GstMapInfo m;
  guint i, ref, offset, slices = 0;

  /* decode order I0 P3 b1 b2: the checking parser takes the SPS/PPS */
  for (i = 0; i < 4; i++) {
    gst_buffer_map (g_ptr_array_index (src, i), &m, GST_MAP_READ);
    fail_unless (gst_twoflow_h264_splice_parse_source (sp, m.data, m.size,
            0, &pics[i], &why));
    offset = 0;
    while (i == 0 && gst_h264_parser_identify_nalu (check, m.data, offset,
            m.size, &nalu) != GST_H264_PARSER_ERROR && nalu.size > 0) {
      if (nalu.type == GST_H264_NAL_SPS || nalu.type == GST_H264_NAL_PPS)
        gst_h264_parser_parse_nal (check, &nalu);
      offset = nalu.offset + nalu.size;
      if (offset >= m.size)
        break;
    }
    gst_buffer_unmap (g_ptr_array_index (src, i), &m);
  }
  fail_unless (why == NULL, "%s", why);
  fail_unless (pics[0].short_term && pics[1].short_term);
  fail_unless_equals_int (pics[2].nal_ref_idc, 0);
  fail_if (pics[2].short_term);
  fail_unless_equals_int (pics[2].frame_num, pics[1].frame_num + 1);

  /* the intra picture: its parameter sets taken, nothing written */
  gst_buffer_map (g_ptr_array_index (enc, 0), &m, GST_MAP_READ);
  fail_unless (gst_twoflow_h264_splice_take_params (sp, m.data, m.size));
  gst_buffer_unmap (g_ptr_array_index (enc, 0), &m);

  /* the P picture as b1, predicting from P3, then from I0 */
  for (ref = 0; ref < 2; ref++) {
    guint want = ref == 0 ? 1 : 0;

    g_byte_array_set_size (out, 0);
    gst_buffer_map (g_ptr_array_index (enc, 1), &m, GST_MAP_READ);
    fail_unless (gst_twoflow_h264_splice_rewrite_nonref (sp, m.data, m.size,
            pics[2].frame_num, pics[2].poc_lsb, pics[want].frame_num, 0,
            out));
    gst_buffer_unmap (g_ptr_array_index (enc, 1), &m);
    offset = 0;
    while (offset < out->len && gst_h264_parser_identify_nalu (check,
            out->data, offset, out->len, &nalu) != GST_H264_PARSER_ERROR) {
      if (nalu.type == GST_H264_NAL_PPS) {
        gst_h264_parser_parse_nal (check, &nalu);
      } else {
        GstH264SliceHdr sh;

        fail_unless_equals_int (nalu.type, GST_H264_NAL_SLICE);
        fail_unless_equals_int (gst_h264_parser_parse_slice_hdr (check,
                &nalu, &sh, FALSE, TRUE), GST_H264_PARSER_OK);
        fail_unless_equals_int (nalu.ref_idc, 0);
        fail_unless_equals_int (sh.frame_num, pics[2].frame_num);
        fail_unless_equals_int (sh.pic_order_cnt_lsb, pics[2].poc_lsb);
        fail_unless (GST_H264_IS_P_SLICE (&sh));
        fail_unless_equals_int (sh.num_ref_idx_l0_active_minus1, 0);
        fail_unless (sh.ref_pic_list_modification_flag_l0);
        fail_unless_equals_int (sh.ref_pic_list_modification_l0[0].
            modification_of_pic_nums_idc, 0);
        /* CurrPicNum - (abs_diff_pic_num_minus1 + 1): the reference's */
        fail_unless_equals_int (sh.frame_num -
            (sh.ref_pic_list_modification_l0[0].value.
                abs_diff_pic_num_minus1 + 1), pics[want].frame_num);
        slices++;
      }
      offset = nalu.offset + nalu.size;
    }
  }
  fail_unless_equals_int (slices, 2);

  g_byte_array_unref (out);
  gst_h264_nal_parser_free (check);
  gst_twoflow_h264_splice_free (sp);
  g_ptr_array_unref (src);
  g_ptr_array_unref (enc);
}

GST_END_TEST;

static Suite *
picturetype_suite (void)
{
  Suite *s = suite_create ("picturetype");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_mpeg2_types);
  tcase_add_test (tc, test_mpeg2_first_picture_counts);
  tcase_add_test (tc, test_mpeg2_no_picture);
  tcase_add_test (tc, test_mpeg2_quant_matrices);
  tcase_add_test (tc, test_h264_byte_stream);
  tcase_add_test (tc, test_h264_avc);
  tcase_add_test (tc, test_h264_needs_parameter_sets);
  tcase_add_test (tc, test_h265);
  tcase_add_test (tc, test_h265_temporal_layers);
  tcase_add_test (tc, test_av1);
  tcase_add_test (tc, test_h264_splice);
  tcase_add_test (tc, test_h264_splice_nonref);
  return s;
}

GST_CHECK_MAIN (picturetype);
