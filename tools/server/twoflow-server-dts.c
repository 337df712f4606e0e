/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — decode timestamps for video a container gives only
 * presentation timestamps
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/codecparsers/gsth264parser.h>
#include <gst/codecparsers/gsth265parser.h>
#include "twoflow-server-dts.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_dts_debug);
#define GST_CAT_DEFAULT twoflow_server_dts_debug

/* Matroska stores one timestamp per block, the PTS: matroskademux gives
 * B-frame video no DTS, and mp4mux then writes the frames' PTS in decode
 * order as their DTS (the MP4 lasts twice as long), mpegtsmux gives the
 * browser's MSE decreasing DTS. Each buffer without one gets a DTS as
 * upstream's h264timestamper makes it: with a reorder depth of d frames
 * (the SPS's num_reorder_frames, H.265's sps_max_num_reorder_pics; MPEG-1/2:
 * 1; AV1: 0, a temporal unit holds its hidden frames), the DTS of the n-th frame
 * in decode order is the (n-d)-th smallest PTS, which is known once the
 * n-th frame is (no later frame has a smaller rank), never after its PTS
 * and increasing. The first d frames' DTS come before the first PTS: when
 * the segment starts less than d frames after 0 every timestamp and the
 * segment's start move by d frames (running times unchanged), the way
 * qtdemux gives an MP4 with B frames. Streams that have DTS keep them (and
 * move with the segment alike), so the scan and each session give one
 * file the same timestamps. */
struct _DtsState
{
  gint depth;                   /* frames; -1: not known yet */
  GstClockTime dur;             /* a frame (the caps' frame rate) */
  GstClockTime shift;           /* added to timestamps and the segment */
  gboolean shift_set, h264, logged;
  GArray *pending;              /* GstClockTime, ascending: PTS not yet a DTS */
  GstClockTime run_first, last_dts;
  guint64 n;                    /* frames given a DTS */
};

DtsState *
dts_state_new (void)
{
  DtsState *d = g_new0 (DtsState, 1);

  d->depth = -1;
  d->dur = 40 * GST_MSECOND;
  d->pending = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  d->run_first = d->last_dts = GST_CLOCK_TIME_NONE;
  return d;
}

void
dts_state_free (DtsState * d)
{
  g_array_unref (d->pending);
  g_free (d);
}

GstClockTime
dts_state_shift (DtsState * d)
{
  return d->shift;
}

/* H.264 (Table A-1): MaxDpbMbs by level_idc, for an SPS without
 * num_reorder_frames (the DPB's size bounds the reordering) */
static guint
max_dpb_frames (const GstH264SPS * sps)
{
  static const struct
  {
    guint8 level;
    guint32 mbs;
  } levels[] = { {9, 396}, {10, 396}, {11, 900}, {12, 2376}, {13, 2376},
  {20, 2376}, {21, 4752}, {22, 8100}, {30, 8100}, {31, 18000}, {32, 20480},
  {40, 32768}, {41, 32768}, {42, 34816}, {50, 110400}, {51, 184320},
  {52, 184320}
  };
  guint32 mbs = 696320, pic = (sps->pic_width_in_mbs_minus1 + 1) *
      (sps->pic_height_in_map_units_minus1 + 1) * (2 - sps->frame_mbs_only_flag);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (levels); i++)
    if (sps->level_idc <= levels[i].level) {
      mbs = levels[i].mbs;
      break;
    }
  return pic ? MIN (mbs / pic, 16) : 16;
}

static gint
sps_depth (const GstH264SPS * sps)
{
  if (sps->vui_parameters_present_flag
      && sps->vui_parameters.bitstream_restriction_flag)
    return MIN (sps->vui_parameters.num_reorder_frames, 16);
  /* baseline, and the intra profiles: no reordering */
  if (sps->profile_idc == 66 || (sps->constraint_set3_flag &&
          (sps->profile_idc == 100 || sps->profile_idc == 110 ||
              sps->profile_idc == 122 || sps->profile_idc == 244 ||
              sps->profile_idc == 44)))
    return 0;
  return max_dpb_frames (sps);
}

/* the first SPS of an avcC record, or of a byte-stream buffer */
static gint
h264_depth (const guint8 * data, gsize size, gboolean avcc)
{
  GstH264NalParser *p = gst_h264_nal_parser_new ();
  GstH264DecoderConfigRecord *rec = NULL;
  GstH264NalUnit nalu;
  GstH264SPS sps;
  gint depth = -1;
  guint i;

  if (avcc) {
    if (gst_h264_parser_parse_decoder_config_record (p, data, size, &rec) ==
        GST_H264_PARSER_OK) {
      for (i = 0; i < rec->sps->len && depth < 0; i++) {
        GstH264NalUnit *u = &g_array_index (rec->sps, GstH264NalUnit, i);
        if (gst_h264_parser_parse_sps (p, u, &sps) == GST_H264_PARSER_OK) {
          depth = sps_depth (&sps);
          gst_h264_sps_clear (&sps);
        }
      }
      gst_h264_decoder_config_record_free (rec);
    }
  } else {
    guint off = 0;
    while (depth < 0 && gst_h264_parser_identify_nalu (p, data, off, size,
            &nalu) != GST_H264_PARSER_NO_NAL) {
      if (nalu.type == GST_H264_NAL_SPS && nalu.size > 0
          && gst_h264_parser_parse_sps (p, &nalu, &sps) == GST_H264_PARSER_OK) {
        depth = sps_depth (&sps);
        gst_h264_sps_clear (&sps);
      }
      if (nalu.size == 0)
        break;
      off = nalu.offset + nalu.size;
    }
  }
  gst_h264_nal_parser_free (p);
  return depth;
}

/* H.265: sps_max_num_reorder_pics of the highest sub-layer, from the
 * hvcC's SPS (its arrays: type, count, then 16-bit lengths before each
 * NAL unit; ISO/IEC 14496-15 8.3.3.1); -1: none there */
static gint
h265_depth (const guint8 * data, gsize size)
{
  GstH265Parser *p = gst_h265_parser_new ();
  GstH265NalUnit nalu;
  GstH265SPS sps;
  gsize off = 23;
  guint arrays, i, n, k;
  gint depth = -1;

  arrays = size > 22 ? data[22] : 0;
  for (i = 0; i < arrays && depth < 0 && off + 3 <= size; i++) {
    n = GST_READ_UINT16_BE (data + off + 1);
    off += 3;
    for (k = 0; k < n && off + 2 <= size; k++) {
      if (gst_h265_parser_identify_nalu_hevc (p, data, off, size, 2, &nalu)
          != GST_H265_PARSER_OK)
        goto done;
      if (nalu.type == GST_H265_NAL_VPS) {
        GstH265VPS vps;
        gst_h265_parser_parse_vps (p, &nalu, &vps);
      }
      if (nalu.type == GST_H265_NAL_SPS && depth < 0
          && gst_h265_parser_parse_sps (p, &nalu, &sps, FALSE) ==
          GST_H265_PARSER_OK)
        depth = sps.max_num_reorder_pics[sps.max_sub_layers_minus1];
      off = nalu.offset + nalu.size;
    }
  }
done:
  gst_h265_parser_free (p);
  return depth;
}

static void
dts_caps (DtsState * d, GstCaps * caps)
{
  const GstStructure *st = gst_caps_get_structure (caps, 0);
  const GValue *cd = gst_structure_get_value (st, "codec_data");
  gint n = 0, den = 1;

  if (gst_structure_get_fraction (st, "framerate", &n, &den) && n > 0
      && den > 0)
    d->dur = gst_util_uint64_scale (GST_SECOND, den, n);
  d->h264 = gst_structure_has_name (st, "video/x-h264");
  if (d->h264 && cd && G_VALUE_HOLDS (cd, GST_TYPE_BUFFER)) {
    GstMapInfo map;
    GstBuffer *b = gst_value_get_buffer (cd);

    if (gst_buffer_map (b, &map, GST_MAP_READ)) {
      d->depth = h264_depth (map.data, map.size, TRUE);
      gst_buffer_unmap (b, &map);
    }
  } else if (gst_structure_has_name (st, "video/mpeg")) {
    d->depth = 1;               /* a B picture waits for one anchor */
  } else if (gst_structure_has_name (st, "video/x-av1")) {
    d->depth = 0;               /* temporal units come in display order */
  } else if (gst_structure_has_name (st, "video/x-h265") && cd
      && G_VALUE_HOLDS (cd, GST_TYPE_BUFFER)) {
    GstMapInfo map;
    GstBuffer *b = gst_value_get_buffer (cd);

    if (gst_buffer_map (b, &map, GST_MAP_READ)) {
      d->depth = h265_depth (map.data, map.size);
      gst_buffer_unmap (b, &map);
    }
  }
}

static GstEvent *
dts_segment (DtsState * d, GstEvent * ev)
{
  const GstSegment *seg;
  GstSegment s;
  GstEvent *nev;
  GstClockTime need;

  gst_event_parse_segment (ev, &seg);
  if (seg->format != GST_FORMAT_TIME)
    return ev;
  if (!d->shift_set) {
    need = d->depth > 0 ? d->depth * d->dur : 0;
    d->shift = need > seg->start ? need - seg->start : 0;
    d->shift_set = TRUE;
    if (d->shift)
      GST_INFO ("reorder depth %d: timestamps and segment moved by %"
          GST_TIME_FORMAT, d->depth, GST_TIME_ARGS (d->shift));
  }
  if (!d->shift)
    return ev;
  gst_segment_copy_into (seg, &s);
  s.start += d->shift;
  if (GST_CLOCK_TIME_IS_VALID (s.stop))
    s.stop += d->shift;
  s.position += d->shift;
  nev = gst_event_new_segment (&s);
  gst_event_set_seqnum (nev, gst_event_get_seqnum (ev));
  gst_event_unref (ev);
  return nev;
}

static GstClockTime
dts_next (DtsState * d, GstClockTime pts)
{
  GstClockTime dts;
  guint i;

  for (i = 0; i < d->pending->len; i++)
    if (g_array_index (d->pending, GstClockTime, i) > pts)
      break;
  g_array_insert_val (d->pending, i, pts);
  if (!GST_CLOCK_TIME_IS_VALID (d->run_first))
    d->run_first = pts;
  if (d->pending->len > (guint) d->depth) {
    dts = g_array_index (d->pending, GstClockTime, 0);
    g_array_remove_index (d->pending, 0);
  } else {
    GstClockTime back = ((guint64) d->depth - d->n) * d->dur;
    dts = d->run_first > back ? d->run_first - back : 0;
  }
  d->n++;
  dts = MIN (dts, pts);
  if (GST_CLOCK_TIME_IS_VALID (d->last_dts) && dts < d->last_dts) {
    if (!d->logged)
      GST_INFO ("frames reordered deeper than %d: a DTS after its PTS",
          d->depth);
    d->logged = TRUE;
    dts = d->last_dts;
  }
  return dts;
}

/* on the video pad of the media source: every buffer and SEGMENT event */
GstPadProbeReturn
dts_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  DtsState *d = user_data;
  GstBuffer *buf;

  if (info->type & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
    GstCaps *caps;

    switch (GST_EVENT_TYPE (ev)) {
      case GST_EVENT_CAPS:
        gst_event_parse_caps (ev, &caps);
        dts_caps (d, caps);
        break;
      case GST_EVENT_SEGMENT:
        GST_PAD_PROBE_INFO_DATA (info) = dts_segment (d, ev);
        break;
      case GST_EVENT_FLUSH_STOP:
        g_array_set_size (d->pending, 0);
        d->run_first = d->last_dts = GST_CLOCK_TIME_NONE;
        d->n = 0;
        break;
      default:
        break;
    }
    return GST_PAD_PROBE_OK;
  }
  buf = GST_PAD_PROBE_INFO_BUFFER (info);
  if (!d->shift && GST_BUFFER_DTS_IS_VALID (buf))
    return GST_PAD_PROBE_OK;
  buf = gst_buffer_make_writable (buf);
  if (GST_BUFFER_PTS_IS_VALID (buf))
    GST_BUFFER_PTS (buf) += d->shift;
  if (GST_BUFFER_DTS_IS_VALID (buf)) {
    GST_BUFFER_DTS (buf) += d->shift;
  } else if (GST_BUFFER_PTS_IS_VALID (buf)) {
    if (d->depth < 0 && d->h264) {
      GstMapInfo map;
      if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
        d->depth = h264_depth (map.data, map.size, FALSE);
        gst_buffer_unmap (buf, &map);
      }
    }
    if (d->depth < 0)
      d->depth = 2;             /* no SPS seen: x264's default B frames */
    GST_BUFFER_DTS (buf) = dts_next (d, GST_BUFFER_PTS (buf));
  }
  if (GST_BUFFER_DTS_IS_VALID (buf))
    d->last_dts = GST_BUFFER_DTS (buf);
  GST_PAD_PROBE_INFO_DATA (info) = buf;
  return GST_PAD_PROBE_OK;
}

void
twoflow_server_dts_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_server_dts_debug, "twoflow-server-dts", 0,
      "twoflow-server: decode timestamps for PTS-only video");
}
