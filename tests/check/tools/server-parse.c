/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server's AV1 codec_data as an av1C record
 * (tools/server/twoflow-server-parse.c): qtdemux 1.22's form (the av1C
 * box less its first 5 bytes) and bare OBUs give the record ffmpeg wrote
 * into the MP4 (make-corpus.sh's av1-aom-aac.mp4, libaom); an av1C is
 * left alone
 * Copyright (C) 2026 twoflow developers
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include "twoflow-server-parse.h"

/* the sequence header OBU (header 0x0a, size 11) of a 320x240 Main
 * profile stream, level 0 */
static const guint8 av1c[] = { 0x81, 0x00, 0x0c, 0x00, 0x0a, 0x0b, 0x00,
  0x00, 0x00, 0x04, 0x3c, 0xff, 0xbc, 0xda, 0xf9, 0x00, 0x40
};

static void
check_av1c (const guint8 * in, gsize size)
{
  GstBuffer *cd = gst_buffer_new_memdup (in, size);
  GstBuffer *out = av1c_from_codec_data (cd);

  fail_unless (out != NULL);
  fail_unless_equals_int (gst_buffer_get_size (out), sizeof (av1c));
  fail_unless (gst_buffer_memcmp (out, 0, av1c, sizeof (av1c)) == 0);
  gst_buffer_unref (out);
  gst_buffer_unref (cd);
}

GST_START_TEST (test_av1c_from_qtdemux)
{
  check_av1c (av1c + 5, sizeof (av1c) - 5);
}

GST_END_TEST;

GST_START_TEST (test_av1c_from_obus)
{
  check_av1c (av1c + 4, sizeof (av1c) - 4);
}

GST_END_TEST;

GST_START_TEST (test_av1c_kept)
{
  GstBuffer *cd = gst_buffer_new_memdup (av1c, sizeof (av1c));

  fail_unless (av1c_from_codec_data (cd) == NULL);
  gst_buffer_unref (cd);
}

GST_END_TEST;

static Suite *
server_parse_suite (void)
{
  Suite *s = suite_create ("server-parse");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_av1c_from_qtdemux);
  tcase_add_test (tc, test_av1c_from_obus);
  tcase_add_test (tc, test_av1c_kept);
  return s;
}

GST_CHECK_MAIN (server_parse);
