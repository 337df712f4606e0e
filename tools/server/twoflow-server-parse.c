/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the parser H.265 and AV1 video goes through between the
 * demuxer and twoflowsplit, and AV1's codec_data made an av1C record
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

#include <string.h>
#include <gst/gst.h>
#include <gst/codecparsers/gstav1parser.h>
#include "twoflow-server-parse.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_server_parse_debug);
#define GST_CAT_DEFAULT twoflow_server_parse_debug

/* @factory's element in @e's bin, in its state */
static GstElement *
add_beside (GstElement * e, const gchar * factory)
{
  GstElement *bin = GST_ELEMENT (gst_element_get_parent (e));
  GstElement *n = gst_element_factory_make (factory, NULL);

  gst_bin_add (GST_BIN (bin), n);
  gst_element_sync_state_with_parent (n);
  gst_object_unref (bin);
  return n;
}

/* The av1C record (AV1-ISOBMFF 2.3.3) of the sequence header in @obus
 * (NULL: none there): 4 bytes from it, then @obus as configOBUs */
static GstBuffer *
av1c_make (const guint8 * obus, gsize size)
{
  GstAV1Parser *p = gst_av1_parser_new ();
  GstAV1OBU obu;
  GstAV1SequenceHeaderOBU seq;
  GstBuffer *out = NULL;
  guint32 off = 0, used;

  while (off < size && gst_av1_parser_identify_one_obu (p, obus + off,
          size - off, &obu, &used) == GST_AV1_PARSER_OK) {
    if (obu.obu_type == GST_AV1_OBU_SEQUENCE_HEADER
        && gst_av1_parser_parse_sequence_header_obu (p, &obu, &seq) ==
        GST_AV1_PARSER_OK) {
      const GstAV1ColorConfig *c = &seq.color_config;
      guint8 *h = g_malloc (4 + size);

      h[0] = 0x81;              /* marker, version 1 */
      h[1] = (seq.seq_profile << 5) | seq.operating_points[0].seq_level_idx;
      h[2] = (seq.operating_points[0].seq_tier << 7) | (c->high_bitdepth << 6)
          | (c->twelve_bit << 5) | (c->mono_chrome << 4)
          | (c->subsampling_x << 3) | (c->subsampling_y << 2)
          | c->chroma_sample_position;
      h[3] = 0;                 /* no initial_presentation_delay */
      memcpy (h + 4, obus, size);
      out = gst_buffer_new_wrapped (h, 4 + size);
      break;
    }
    off += used;
  }
  gst_av1_parser_free (p);
  return out;
}

/* AV1 codec_data not in av1C form: qtdemux 1.22 gives the av1C box less
 * its first 5 bytes (the 4-byte header and the sequence header OBU's
 * header byte: a size and the header's payload), others bare OBUs. Made
 * an av1C record, the form matroskademux gives and matroskamux/mp4mux
 * write (given qtdemux's form they wrote a CodecPrivate/av1C libdav1d
 * refuses); NULL: @cd is av1C already, or no sequence header is found */
GstBuffer *
av1c_from_codec_data (GstBuffer * cd)
{
  GstMapInfo map;
  GstBuffer *out = NULL;

  if (!gst_buffer_map (cd, &map, GST_MAP_READ))
    return NULL;
  if (map.size > 1 && map.data[0] < 0x80
      && (gsize) map.data[0] + 1 == map.size) {
    /* qtdemux's: one size byte and the sequence header's payload; its OBU
     * header (sequence header, has_size_field) back in front (told apart
     * without the parser: it warns of a header it cannot read) */
    guint8 *obus = g_malloc (map.size + 1);

    obus[0] = (GST_AV1_OBU_SEQUENCE_HEADER << 3) | 0x02;
    memcpy (obus + 1, map.data, map.size);
    out = av1c_make (obus, map.size + 1);
    g_free (obus);
  } else if (map.size > 0 && !(map.data[0] & 0x80)) {   /* not av1C's marker */
    out = av1c_make (map.data, map.size);
  }
  gst_buffer_unmap (cd, &map);
  return out;
}

static GstPadProbeReturn
av1c_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstEvent *ev = GST_PAD_PROBE_INFO_EVENT (info);
  GstCaps *caps;
  const GValue *cd;
  GstBuffer *av1c;

  if (GST_EVENT_TYPE (ev) != GST_EVENT_CAPS)
    return GST_PAD_PROBE_OK;
  gst_event_parse_caps (ev, &caps);
  cd = gst_structure_get_value (gst_caps_get_structure (caps, 0),
      "codec_data");
  if (!cd || !G_VALUE_HOLDS (cd, GST_TYPE_BUFFER)
      || !(av1c = av1c_from_codec_data (gst_value_get_buffer (cd))))
    return GST_PAD_PROBE_OK;
  caps = gst_caps_copy (caps);
  gst_caps_set_simple (caps, "codec_data", GST_TYPE_BUFFER, av1c, NULL);
  gst_buffer_unref (av1c);
  GST_PAD_PROBE_INFO_DATA (info) = gst_event_new_caps (caps);
  gst_caps_unref (caps);
  gst_event_unref (ev);
  GST_INFO ("AV1 codec_data made an av1C record");
  return GST_PAD_PROBE_OK;
}

/* H.265 and AV1: a parser and the caps twoflowsplit takes (whole access
 * units, AV1 as temporal units of an OBU stream) after @queue (in its
 * bin, in its state), whatever
 * the demuxer gives (parsebin plugs a parser only where it ranks; a
 * Matroska AV1 track comes without stream-format); returns the element to
 * link to the split's place (@queue itself for MPEG-1/2 and H.264). */
GstElement *
video_parse_chain (GstElement * queue, const GstStructure * st)
{
  const gchar *parser = NULL, *want = NULL;
  GstElement *parse, *filter;
  GstCaps *caps;

  if (gst_structure_has_name (st, "video/x-h265")) {
    parser = "h265parse";
    want = "video/x-h265, alignment=(string)au";
  } else if (gst_structure_has_name (st, "video/x-av1")) {
    parser = "av1parse";
    want = "video/x-av1, stream-format=(string)obu-stream, "
        "alignment=(string)tu";
  }
  if (!parser)
    return queue;
  parse = add_beside (queue, parser);
  filter = add_beside (queue, "capsfilter");
  caps = gst_caps_from_string (want);
  g_object_set (filter, "caps", caps, NULL);
  gst_caps_unref (caps);
  if (!gst_element_link_many (queue, parse, filter, NULL))
    GST_WARNING ("cannot link %s", parser);
  if (g_str_equal (parser, "av1parse")) {
    GstPad *src = gst_element_get_static_pad (filter, "src");
    gst_pad_add_probe (src, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, av1c_probe,
        NULL, NULL);
    gst_object_unref (src);
  }
  return filter;
}

void
twoflow_server_parse_init (void)
{
  GST_DEBUG_CATEGORY_INIT (twoflow_server_parse_debug, "twoflow-server-parse",
      0, "twoflow-server: H.265 and AV1 parsing before the split");
}
