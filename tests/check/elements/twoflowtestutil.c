/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: helpers shared by the twoflowsplit/twoflowmerge tests */
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "twoflowtestutil.h"

static gchar *
build_path (const gchar * name)
{
  const gchar *root = g_getenv ("TWOFLOW_BUILD_ROOT");
  gchar *dir = g_build_filename (root ? root : ".", "tests", "media", NULL);
  gchar *path;

  g_mkdir_with_parents (dir, 0755);
  path = g_build_filename (dir, name, NULL);
  g_free (dir);
  return path;
}

/* The 720x576 sample the build generates (scripts/make-media.sh). */
gchar *
twoflow_test_greyramp (void)
{
  const gchar *media = g_getenv ("TWOFLOW_MEDIA");
  gchar *path = g_build_filename (media ? media : "tests/media",
      "greyramp.m2v", NULL);

  fail_unless (g_file_test (path, G_FILE_TEST_EXISTS),
      "no %s (the build generates it: scripts/make-media.sh)", path);
  return path;
}

/* Encodes once; concurrent tests write to a private name then rename. */
static gchar *
generate (const gchar * name, const gchar * encode)
{
  gchar *path = build_path (name);
  gchar *tmp, *desc, *err = NULL;

  if (g_file_test (path, G_FILE_TEST_EXISTS))
    return path;
  tmp = g_strdup_printf ("%s.%d.tmp", path, getpid ());
  desc = g_strdup_printf ("%s ! filesink location=%s", encode, tmp);
  fail_unless (twoflow_test_run (desc, &err), "generating %s: %s", name, err);
  fail_unless (g_rename (tmp, path) == 0);
  g_free (desc);
  g_free (tmp);
  return path;
}

gchar *
twoflow_test_generated_mpeg2 (void)
{
  /* 336 frames = 28 GOPs of IBBPBBPBBPBB, 352x288 */
  return generate ("ball-336.m2v",
      "videotestsrc num-buffers=336 pattern=ball ! "
      "video/x-raw,width=352,height=288,framerate=25/1 ! "
      "mpeg2enc format=3 b-per-refframe=2 min-gop-size=12 max-gop-size=12");
}

gchar *
twoflow_test_generated_h264 (void)
{
  return generate ("smpte-300-bs.h264",
      "videotestsrc num-buffers=300 pattern=smpte ! "
      "video/x-raw,width=320,height=240,framerate=25/1 ! "
      "x264enc bframes=2 key-int-max=30 speed-preset=ultrafast ! "
      "h264parse ! video/x-h264,stream-format=byte-stream,alignment=au");
}

/* Encodes once with ffmpeg (a testsrc2 clip): the encoders twoflow's
 * corpus uses, libx265 and libsvtav1, have no GStreamer element in Debian
 * 12 (x265enc lacks Main 10 and open GOPs there, SVT-AV1 has none). */
static gchar *
generate_ffmpeg (const gchar * name, const gchar * args)
{
  gchar *path = build_path (name);
  gchar *tmp, *cmd, *err = NULL;
  gint status = 0;
  const gchar *ext;

  if (g_file_test (path, G_FILE_TEST_EXISTS))
    return path;
  ext = strrchr (name, '.');
  tmp = g_strdup_printf ("%s.%d.tmp%s", path, getpid (), ext);
  /* SVT-AV1 logs to stderr unless told otherwise */
  g_setenv ("SVT_LOG", "1", TRUE);
  cmd = g_strdup_printf ("ffmpeg -nostdin -hide_banner -loglevel error -y "
      "-f lavfi -i testsrc2=size=320x240:rate=25 %s %s", args, tmp);
  fail_unless (g_spawn_command_line_sync (cmd, NULL, &err, &status, NULL),
      "cannot run ffmpeg");
  fail_unless (g_spawn_check_wait_status (status, NULL), "%s: %s", cmd, err);
  fail_unless (g_rename (tmp, path) == 0);
  g_free (err);
  g_free (cmd);
  g_free (tmp);
  return path;
}

/* 100 frames, closed GOPs of 25 (IDR), B pyramids of 3 */
gchar *
twoflow_test_generated_h265_closed (void)
{
  return generate_ffmpeg ("testsrc2-100-closed.h265",
      "-frames:v 100 -c:v libx265 -preset ultrafast -x265-params "
      "keyint=25:min-keyint=25:scenecut=0:bframes=3:b-pyramid=1:"
      "open-gop=0:log-level=error");
}

/* 100 frames, Main 10, open GOPs of 25 (CRA with RASL pictures), B
 * pyramids of 4 */
gchar *
twoflow_test_generated_h265_open10 (void)
{
  return generate_ffmpeg ("testsrc2-100-open10.h265",
      "-frames:v 100 -pix_fmt yuv420p10le -c:v libx265 -preset ultrafast "
      "-x265-params keyint=25:min-keyint=25:scenecut=0:bframes=4:"
      "b-pyramid=1:open-gop=1:log-level=error");
}

/* 100 field pictures (50 frames separated into fields, x265
 * interlace=tff: pic_struct SEI, field_seq_flag), closed GOPs of 25
 * fields, B pyramids of 3 */
gchar *
twoflow_test_generated_h265_interlaced (void)
{
  return generate_ffmpeg ("testsrc2-100-interlaced.h265",
      "-vf separatefields -frames:v 100 -c:v libx265 -preset ultrafast "
      "-x265-params keyint=25:min-keyint=25:scenecut=0:bframes=3:"
      "b-pyramid=1:open-gop=0:interlace=tff:log-level=error");
}

/* the open-GOP stream in MP4 (hvc1: parameter sets only in hvcC) */
gchar *
twoflow_test_generated_h265_hvc1 (void)
{
  return generate_ffmpeg ("testsrc2-75-open.mp4",
      "-frames:v 75 -c:v libx265 -preset ultrafast -tag:v hvc1 "
      "-x265-params keyint=25:min-keyint=25:scenecut=0:bframes=4:"
      "b-pyramid=1:open-gop=1:log-level=error");
}

/* 100 frames, SVT-AV1 random access: mini-GOPs of 8 (hierarchical, with
 * hidden frames shown by show_existing_frame), key frames every 40 */
gchar *
twoflow_test_generated_av1_svt (void)
{
  return generate_ffmpeg ("testsrc2-100-svt.ivf",
      "-frames:v 100 -c:v libsvtav1 -preset 12 -g 40 "
      "-svtav1-params hierarchical-levels=3:lp=1");
}

/* 24 small frames of libaom's good-quality mode (alt-ref frames, shown
 * later), key frames every 12 */
gchar *
twoflow_test_generated_av1_aom (void)
{
  return generate_ffmpeg ("testsrc2-24-aom.ivf",
      "-frames:v 24 -s 128x96 -c:v libaom-av1 -cpu-used 8 -lag-in-frames 8 "
      "-g 12 -b:v 200k -threads 1");
}

/* the SVT-AV1 clip in MP4: the sequence header in the caps' codec_data
 * too (as qtdemux gives it) */
gchar *
twoflow_test_generated_av1_mp4 (void)
{
  return generate_ffmpeg ("testsrc2-50-svt-av1.mp4",
      "-frames:v 50 -c:v libsvtav1 -preset 12 -g 25 "
      "-svtav1-params hierarchical-levels=3:lp=1");
}

const gchar *
twoflow_test_parser_for (const gchar * path)
{
  if (g_str_has_suffix (path, ".h264"))
    return "h264parse ! video/x-h264,stream-format=byte-stream,alignment=au";
  if (g_str_has_suffix (path, ".h265"))
    return "h265parse ! video/x-h265,stream-format=byte-stream,alignment=au";
  if (g_str_has_suffix (path, "-av1.mp4"))
    return "qtdemux ! av1parse ! video/x-av1,stream-format=obu-stream,"
        "alignment=tu";
  if (g_str_has_suffix (path, ".mp4"))
    return "qtdemux ! h265parse ! video/x-h265,stream-format=hvc1,"
        "alignment=au";
  if (g_str_has_suffix (path, ".ivf"))
    return "ivfparse ! av1parse ! video/x-av1,stream-format=obu-stream,"
        "alignment=tu";
  if (g_str_has_suffix (path, ".obu"))
    return "av1parse ! video/x-av1,stream-format=obu-stream,alignment=tu";
  return "mpegvideoparse";
}

const gchar *
twoflow_test_es_suffix (const gchar * path)
{
  if (g_str_has_suffix (path, ".ivf") || g_str_has_suffix (path, "-av1.mp4"))
    return ".obu";
  return strrchr (path, '.');
}

/* Runs to EOS; an error (or, with @warnings_fail, a warning) ends it. */
static gboolean
run_pipeline (GstElement * pipeline, gboolean warnings_fail,
    gchar ** error_text)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessageType stop = GST_MESSAGE_EOS | GST_MESSAGE_ERROR |
      (warnings_fail ? GST_MESSAGE_WARNING : 0);
  GstMessage *msg;
  gboolean ok;

  fail_if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE && error_text == NULL);
  msg = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND, stop);
  fail_unless (msg != NULL, "pipeline timed out");
  ok = GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS;
  if (!ok && error_text) {
    GError *err;
    gchar *dbg;

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING)
      gst_message_parse_warning (msg, &err, &dbg);
    else
      gst_message_parse_error (msg, &err, &dbg);
    *error_text = g_strdup_printf ("%s: %s (%s)", GST_OBJECT_NAME (msg->src),
        err->message, GST_STR_NULL (dbg));
    g_error_free (err);
    g_free (dbg);
  }
  gst_message_unref (msg);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  return ok;
}

gboolean
twoflow_test_run_pipeline (GstElement * pipeline, gchar ** error_text)
{
  return run_pipeline (pipeline, FALSE, error_text);
}

gboolean
twoflow_test_run (const gchar * description, gchar ** error_text)
{
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch (description, &err);
  gboolean ok;

  fail_unless (pipeline != NULL, "cannot build '%s': %s", description,
      err ? err->message : "?");
  g_clear_error (&err);
  ok = twoflow_test_run_pipeline (pipeline, error_text);
  gst_object_unref (pipeline);
  return ok;
}

GBytes *
twoflow_test_read (const gchar * path)
{
  gchar *data;
  gsize len;

  fail_unless (g_file_get_contents (path, &data, &len, NULL), "read %s", path);
  return g_bytes_new_take (data, len);
}

gchar *
twoflow_test_tmpfile (const gchar * name)
{
  gchar *file = g_strdup_printf ("%d-%s", getpid (), name);
  gchar *path = build_path (file);

  g_free (file);
  return path;
}

GstPadProbeReturn
twoflow_test_count_probe (GstPad * pad, GstPadProbeInfo * info, gint * count)
{
  g_atomic_int_inc (count);
  return GST_PAD_PROBE_OK;
}

void
twoflow_test_check_stat (const GstStructure * s, const gchar * field,
    guint64 want)
{
  guint64 v;

  fail_unless (gst_structure_get_uint64 (s, field, &v), "no %s", field);
  fail_unless (v == want, "%s is %" G_GUINT64_FORMAT ", expected %"
      G_GUINT64_FORMAT, field, v, want);
}

/* Any decoder warning or error fails the count (G_MAXUINT). */
guint
twoflow_test_count_decoded (const gchar * path, gchar ** error_text)
{
  gchar *desc = g_strdup_printf ("filesrc location=%s ! %s ! decodebin ! "
      "fakesink name=sink", path, twoflow_test_parser_for (path));
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  gint frames = 0;
  gboolean ok;

  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER,
      (GstPadProbeCallback) twoflow_test_count_probe, &frames, NULL);
  ok = run_pipeline (pipeline, TRUE, error_text);
  gst_object_unref (pad);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (desc);
  return ok ? (guint) frames : G_MAXUINT;
}
