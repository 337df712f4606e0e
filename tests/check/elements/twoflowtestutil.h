/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: helpers shared by the twoflowsplit/twoflowmerge tests */
#ifndef __TWOFLOW_TEST_UTIL_H__
#define __TWOFLOW_TEST_UTIL_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* The test media: the shared sample, and streams generated once per build
 * tree (cached under tests/media in the build directory). */
gchar * twoflow_test_greyramp (void);
gchar * twoflow_test_generated_mpeg2 (void);
gchar * twoflow_test_generated_h264 (void);
/* H.265 and AV1 clips made with ffmpeg (libx265, libsvtav1): scripts/
 * make-corpus.sh makes the same kinds at full size. */
gchar * twoflow_test_generated_h265_closed (void);
gchar * twoflow_test_generated_h265_open10 (void);
gchar * twoflow_test_generated_h265_hvc1 (void);
gchar * twoflow_test_generated_h265_interlaced (void);
gchar * twoflow_test_generated_av1_svt (void);
gchar * twoflow_test_generated_av1_aom (void);
gchar * twoflow_test_generated_av1_mp4 (void);

/* Runs a gst-launch description to EOS or error. Returns TRUE on EOS;
 * on error *error_text (if given) gets the error and debug text. */
gboolean twoflow_test_run (const gchar * description, gchar ** error_text);
/* Same for an already built pipeline (not unreffed). */
gboolean twoflow_test_run_pipeline (GstElement * pipeline,
    gchar ** error_text);

/* The parser for a media file: mpegvideoparse, h264parse / h265parse to
 * byte-stream AUs (.h264, .h265), qtdemux ! h265parse to hvc1 (.mp4),
 * [ivfparse ! | qtdemux !] av1parse to obu-stream TUs (.ivf, -av1.mp4,
 * .obu). */
const gchar * twoflow_test_parser_for (const gchar * path);
/* The file name suffix of the parsed elementary stream of @path (.obu for
 * AV1 in IVF or MP4 (-av1.mp4), the file's own otherwise). */
const gchar * twoflow_test_es_suffix (const gchar * path);

GBytes * twoflow_test_read (const gchar * path);
gchar * twoflow_test_tmpfile (const gchar * name);

/* Frames a decoder outputs for an elementary stream file. */
guint twoflow_test_count_decoded (const gchar * path, gchar ** error_text);

/* A buffer probe counting into the gint at user_data. */
GstPadProbeReturn twoflow_test_count_probe (GstPad * pad,
    GstPadProbeInfo * info, gint * count);

/* Asserts a guint64 field of a stats structure. */
void twoflow_test_check_stat (const GstStructure * s, const gchar * field,
    guint64 want);

G_END_DECLS

#endif
