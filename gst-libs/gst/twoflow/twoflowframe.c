/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Writer and parser of the twoflow frame format (docs/frame-format.md).
 * All multi-byte fields are big-endian.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <zlib.h>
#include <gst/base/gstadapter.h>
#include <gst/base/gstbytereader.h>
#include <gst/base/gstbytewriter.h>

#include "twoflowframe.h"

/* The header checksum covers everything before it. */
#define CHECKSUM_OFFSET (GST_TWOFLOW_HEADER_SIZE - 4)

void
gst_twoflow_frame_header_init (GstTwoflowFrameHeader * hdr)
{
  memset (hdr, 0, sizeof (*hdr));
  hdr->depends_from = GST_TWOFLOW_NO_FRAME;
  hdr->pts = hdr->dts = hdr->duration = GST_CLOCK_TIME_NONE;
}

void
gst_twoflow_frame_header_write (const GstTwoflowFrameHeader * hdr,
    guint8 out[GST_TWOFLOW_HEADER_SIZE])
{
  GstByteWriter bw;

  gst_byte_writer_init_with_data (&bw, out, GST_TWOFLOW_HEADER_SIZE, FALSE);
  gst_byte_writer_put_uint32_be_unchecked (&bw, GST_TWOFLOW_MAGIC);
  gst_byte_writer_put_uint8_unchecked (&bw, GST_TWOFLOW_VERSION);
  gst_byte_writer_put_uint8_unchecked (&bw, GST_TWOFLOW_HEADER_SIZE);
  gst_byte_writer_put_uint8_unchecked (&bw, hdr->kind);
  gst_byte_writer_put_uint8_unchecked (&bw, hdr->codec);
  gst_byte_writer_put_uint8_unchecked (&bw, hdr->picture_type);
  gst_byte_writer_put_uint8_unchecked (&bw, hdr->flags);
  gst_byte_writer_put_uint16_be_unchecked (&bw, 0);
  gst_byte_writer_put_uint32_be_unchecked (&bw, hdr->frame_no);
  gst_byte_writer_put_uint32_be_unchecked (&bw, hdr->gop_no);
  gst_byte_writer_put_uint32_be_unchecked (&bw, hdr->segment_no);
  gst_byte_writer_put_uint32_be_unchecked (&bw, hdr->depends_from);
  gst_byte_writer_put_uint64_be_unchecked (&bw, hdr->history);
  gst_byte_writer_put_uint64_be_unchecked (&bw, hdr->pts);
  gst_byte_writer_put_uint64_be_unchecked (&bw, hdr->dts);
  gst_byte_writer_put_uint64_be_unchecked (&bw, hdr->duration);
  gst_byte_writer_put_uint32_be_unchecked (&bw, hdr->payload_size);
  g_assert (gst_byte_writer_get_pos (&bw) == CHECKSUM_OFFSET);
  gst_byte_writer_put_uint32_be_unchecked (&bw,
      (guint32) crc32 (0, out, CHECKSUM_OFFSET));
}

/**
 * gst_twoflow_frame_header_parse:
 * @data: (array length=size): bytes starting with a record header
 * @size: the number of bytes in @data
 * @hdr: (out caller-allocates): the header read, valid when
 *   %GST_TWOFLOW_PARSE_OK is returned
 *
 * Returns: whether @data starts with a valid header, or why not
 */
GstTwoflowParseResult
gst_twoflow_frame_header_parse (const guint8 * data, gsize size,
    GstTwoflowFrameHeader * hdr)
{
  GstByteReader br;
  guint32 magic, checksum;
  guint8 version, hdr_size, kind, codec, ptype, flags;
  guint16 reserved;

  if (size < 4)
    return GST_TWOFLOW_PARSE_NEED_MORE;
  gst_byte_reader_init (&br, data, size);
  magic = gst_byte_reader_get_uint32_be_unchecked (&br);
  if (magic != GST_TWOFLOW_MAGIC)
    return GST_TWOFLOW_PARSE_BAD_MAGIC;
  if (size < GST_TWOFLOW_HEADER_SIZE)
    return GST_TWOFLOW_PARSE_NEED_MORE;

  version = gst_byte_reader_get_uint8_unchecked (&br);
  hdr_size = gst_byte_reader_get_uint8_unchecked (&br);
  if (version < GST_TWOFLOW_VERSION_MIN || version > GST_TWOFLOW_VERSION
      || hdr_size != GST_TWOFLOW_HEADER_SIZE)
    return GST_TWOFLOW_PARSE_BAD_VERSION;
  checksum = GST_READ_UINT32_BE (data + CHECKSUM_OFFSET);
  if (checksum != (guint32) crc32 (0, data, CHECKSUM_OFFSET))
    return GST_TWOFLOW_PARSE_BAD_CHECKSUM;

  kind = gst_byte_reader_get_uint8_unchecked (&br);
  codec = gst_byte_reader_get_uint8_unchecked (&br);
  ptype = gst_byte_reader_get_uint8_unchecked (&br);
  flags = gst_byte_reader_get_uint8_unchecked (&br);
  reserved = gst_byte_reader_get_uint16_be_unchecked (&br);
  if (kind > (version == 1 ? GST_TWOFLOW_RECORD_END : GST_TWOFLOW_RECORD_AUDIO)
      || codec > GST_TWOFLOW_CODEC_LAST ||
      ptype > GST_TWOFLOW_PICTURE_B || reserved != 0 ||
      (flags & ~(GST_TWOFLOW_FLAG_REFERENCE | GST_TWOFLOW_FLAG_ESSENTIAL)))
    return GST_TWOFLOW_PARSE_BAD_FIELD;

  hdr->kind = kind;
  hdr->codec = codec;
  hdr->picture_type = ptype;
  hdr->flags = flags;
  hdr->frame_no = gst_byte_reader_get_uint32_be_unchecked (&br);
  hdr->gop_no = gst_byte_reader_get_uint32_be_unchecked (&br);
  hdr->segment_no = gst_byte_reader_get_uint32_be_unchecked (&br);
  hdr->depends_from = gst_byte_reader_get_uint32_be_unchecked (&br);
  hdr->history = gst_byte_reader_get_uint64_be_unchecked (&br);
  hdr->pts = gst_byte_reader_get_uint64_be_unchecked (&br);
  hdr->dts = gst_byte_reader_get_uint64_be_unchecked (&br);
  hdr->duration = gst_byte_reader_get_uint64_be_unchecked (&br);
  hdr->payload_size = gst_byte_reader_get_uint32_be_unchecked (&br);

  if (hdr->payload_size > GST_TWOFLOW_MAX_PAYLOAD)
    return GST_TWOFLOW_PARSE_BAD_FIELD;
  if (kind == GST_TWOFLOW_RECORD_FRAME &&
      (ptype == GST_TWOFLOW_PICTURE_NONE || hdr->frame_no == GST_TWOFLOW_NO_FRAME
          || (hdr->depends_from != GST_TWOFLOW_NO_FRAME
              && hdr->depends_from > hdr->frame_no)))
    return GST_TWOFLOW_PARSE_BAD_FIELD;
  /* Audio has no pictures and no codec of the video's. */
  if (kind == GST_TWOFLOW_RECORD_AUDIO && (ptype != GST_TWOFLOW_PICTURE_NONE
          || codec != GST_TWOFLOW_CODEC_UNKNOWN
          || hdr->frame_no == GST_TWOFLOW_NO_FRAME))
    return GST_TWOFLOW_PARSE_BAD_FIELD;
  return GST_TWOFLOW_PARSE_OK;
}

const gchar *
gst_twoflow_parse_result_to_string (GstTwoflowParseResult res)
{
  switch (res) {
    case GST_TWOFLOW_PARSE_OK:
      return "ok";
    case GST_TWOFLOW_PARSE_NEED_MORE:
      return "record incomplete";
    case GST_TWOFLOW_PARSE_BAD_MAGIC:
      return "not a twoflow record (bad magic)";
    case GST_TWOFLOW_PARSE_BAD_VERSION:
      return "unsupported twoflow format version";
    case GST_TWOFLOW_PARSE_BAD_CHECKSUM:
      return "corrupt twoflow record header (checksum mismatch)";
    case GST_TWOFLOW_PARSE_BAD_FIELD:
      return "invalid field in twoflow record header";
  }
  return "unknown";
}

/**
 * gst_twoflow_record_new:
 * @hdr: the header (its payload_size is taken from @payload)
 * @payload: (nullable) (transfer none): the coded picture; its memory is
 *   shared, not copied
 *
 * Returns: (transfer full): the record, header then payload
 */
GstBuffer *
gst_twoflow_record_new (const GstTwoflowFrameHeader * hdr, GstBuffer * payload)
{
  GstTwoflowFrameHeader h = *hdr;
  GstBuffer *out;
  GstMemory *mem;
  GstMapInfo map;

  h.payload_size = payload ? gst_buffer_get_size (payload) : 0;
  mem = gst_allocator_alloc (NULL, GST_TWOFLOW_HEADER_SIZE, NULL);
  gst_memory_map (mem, &map, GST_MAP_WRITE);
  gst_twoflow_frame_header_write (&h, map.data);
  gst_memory_unmap (mem, &map);

  /* The payload's memory is shared, not copied. */
  out = payload ? gst_buffer_copy_region (payload, GST_BUFFER_COPY_MEMORY, 0,
      -1) : gst_buffer_new ();
  gst_buffer_prepend_memory (out, mem);
  GST_BUFFER_PTS (out) = h.pts;
  GST_BUFFER_DTS (out) = h.dts;
  GST_BUFFER_DURATION (out) = h.duration;
  return out;
}

static GstBuffer *
record_new_caps_string (GstTwoflowRecordKind kind, GstTwoflowCodec codec,
    const GstCaps * caps)
{
  GstTwoflowFrameHeader h;
  gchar *str = gst_caps_to_string (caps);
  GstBuffer *payload = gst_buffer_new_wrapped (str, strlen (str));
  GstBuffer *out;

  gst_twoflow_frame_header_init (&h);
  h.kind = kind;
  h.codec = codec;
  out = gst_twoflow_record_new (&h, payload);
  gst_buffer_unref (payload);
  return out;
}

GstBuffer *
gst_twoflow_record_new_caps (GstTwoflowCodec codec, const GstCaps * caps)
{
  return record_new_caps_string (GST_TWOFLOW_RECORD_CAPS, codec, caps);
}

GstBuffer *
gst_twoflow_record_new_end (GstTwoflowCodec codec, guint32 frame_count,
    guint64 history)
{
  GstTwoflowFrameHeader h;

  gst_twoflow_frame_header_init (&h);
  h.kind = GST_TWOFLOW_RECORD_END;
  h.codec = codec;
  h.frame_no = frame_count;
  h.history = history;
  return gst_twoflow_record_new (&h, NULL);
}

GstBuffer *
gst_twoflow_record_new_audio_caps (const GstCaps * caps)
{
  return record_new_caps_string (GST_TWOFLOW_RECORD_AUDIO_CAPS,
      GST_TWOFLOW_CODEC_UNKNOWN, caps);
}

/**
 * gst_twoflow_record_new_audio:
 * @audio_no: the buffer's number in the audio track, from 0
 * @payload: (transfer none): one audio buffer; its PTS, DTS and duration go
 *     into the header
 *
 * An audio record: it travels in the essential flow, interleaved with the
 * essential frames by timestamp.
 */
GstBuffer *
gst_twoflow_record_new_audio (guint32 audio_no, guint32 segment_no,
    GstBuffer * payload)
{
  GstTwoflowFrameHeader h;

  gst_twoflow_frame_header_init (&h);
  h.kind = GST_TWOFLOW_RECORD_AUDIO;
  h.flags = GST_TWOFLOW_FLAG_ESSENTIAL;
  h.frame_no = audio_no;
  h.depends_from = audio_no;
  h.segment_no = segment_no;
  h.pts = GST_BUFFER_PTS (payload);
  h.dts = GST_BUFFER_DTS (payload);
  h.duration = GST_BUFFER_DURATION (payload);
  return gst_twoflow_record_new (&h, payload);
}

/* Each history entry is 4 bits: bit 3 = known, bit 2 = reference,
 * bits 0-1 = picture type. Entry 0 (lowest bits) is the previous frame. */
guint64
gst_twoflow_history_push (guint64 history, GstTwoflowPictureType type,
    gboolean reference)
{
  guint64 entry = 0x8 | (reference ? 0x4 : 0) | (type & 0x3);

  return (history << 4) | entry;
}

gboolean
gst_twoflow_history_get (guint64 history, guint age,
    GstTwoflowPictureType * type, gboolean * reference)
{
  guint entry;

  if (age < 1 || age > GST_TWOFLOW_HISTORY_LEN)
    return FALSE;
  entry = (history >> (4 * (age - 1))) & 0xf;
  if (!(entry & 0x8) || (entry & 0x3) == GST_TWOFLOW_PICTURE_NONE)
    return FALSE;
  if (type)
    *type = entry & 0x3;
  if (reference)
    *reference = (entry & 0x4) != 0;
  return TRUE;
}

static const gchar *codec_names[] = { "unknown", "mpeg1", "mpeg2", "h264",
  "h265", "av1"
};

const gchar *
gst_twoflow_codec_to_string (GstTwoflowCodec codec)
{
  return codec <= GST_TWOFLOW_CODEC_LAST ? codec_names[codec] : "unknown";
}

GstTwoflowCodec
gst_twoflow_codec_from_string (const gchar * str)
{
  guint i;

  for (i = 0; str && i < G_N_ELEMENTS (codec_names); i++)
    if (g_str_equal (str, codec_names[i]))
      return i;
  return GST_TWOFLOW_CODEC_UNKNOWN;
}

gchar
gst_twoflow_picture_type_to_char (GstTwoflowPictureType type)
{
  return "-IPB"[type & 0x3];
}

struct _GstTwoflowParser {
  GstAdapter *adapter;
  gboolean have_header;
  GstTwoflowFrameHeader header;
};

/**
 * gst_twoflow_parser_new: (skip)
 *
 * A parser for one flow; C only: Python reads records with gst_twoflow_frame_header_parse().
 */
GstTwoflowParser *
gst_twoflow_parser_new (void)
{
  GstTwoflowParser *p = g_new0 (GstTwoflowParser, 1);

  p->adapter = gst_adapter_new ();
  return p;
}

void
gst_twoflow_parser_free (GstTwoflowParser * parser)
{
  if (!parser)
    return;
  g_object_unref (parser->adapter);
  g_free (parser);
}

void
gst_twoflow_parser_reset (GstTwoflowParser * parser)
{
  gst_adapter_clear (parser->adapter);
  parser->have_header = FALSE;
}

void
gst_twoflow_parser_push (GstTwoflowParser * parser, GstBuffer * buf)
{
  gst_adapter_push (parser->adapter, buf);
}

gsize
gst_twoflow_parser_available (GstTwoflowParser * parser)
{
  return gst_adapter_available (parser->adapter);
}

/**
 * gst_twoflow_parser_pop:
 * @payload: (out) (transfer full): the record's payload (empty buffer when
 *     the record has none)
 *
 * Takes the next complete record. A parse error is final for the stream:
 * the format has no resynchronisation, a reliable flow never needs it.
 */
GstTwoflowParseResult
gst_twoflow_parser_pop (GstTwoflowParser * parser, GstTwoflowFrameHeader * hdr,
    GstBuffer ** payload)
{
  gsize avail = gst_adapter_available (parser->adapter);

  if (!parser->have_header) {
    guint8 raw[GST_TWOFLOW_HEADER_SIZE];
    GstTwoflowParseResult res;
    gsize n = MIN (avail, GST_TWOFLOW_HEADER_SIZE);

    if (n < 4)
      return GST_TWOFLOW_PARSE_NEED_MORE;
    gst_adapter_copy (parser->adapter, raw, 0, n);
    res = gst_twoflow_frame_header_parse (raw, n, &parser->header);
    if (res != GST_TWOFLOW_PARSE_OK)
      return res;
    gst_adapter_flush (parser->adapter, GST_TWOFLOW_HEADER_SIZE);
    avail -= GST_TWOFLOW_HEADER_SIZE;
    parser->have_header = TRUE;
  }
  if (avail < parser->header.payload_size)
    return GST_TWOFLOW_PARSE_NEED_MORE;

  *hdr = parser->header;
  *payload = parser->header.payload_size ?
      gst_adapter_take_buffer (parser->adapter, parser->header.payload_size) :
      gst_buffer_new ();
  parser->have_header = FALSE;
  return GST_TWOFLOW_PARSE_OK;
}

/**
 * gst_twoflow_event_new_dropped:
 * @type: the dropped picture's type
 * @reference: whether other pictures predict from it
 * @pts, @dts, @duration: its timestamps
 *
 * Returns: a serialized downstream custom event standing for a picture an
 * element dropped, so twoflowsplit numbers the frames after it as in the
 * source (the other flow is split from the unaltered source).
 */
GstEvent *
gst_twoflow_event_new_dropped (GstTwoflowPictureType type, gboolean reference,
    GstClockTime pts, GstClockTime dts, GstClockTime duration)
{
  return gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM,
      gst_structure_new (GST_TWOFLOW_DROPPED_EVENT_NAME,
          "type", G_TYPE_INT, (gint) type,
          "reference", G_TYPE_BOOLEAN, reference,
          "pts", G_TYPE_UINT64, pts, "dts", G_TYPE_UINT64, dts,
          "duration", G_TYPE_UINT64, duration, NULL));
}

/**
 * gst_twoflow_event_parse_dropped:
 *
 * Returns: TRUE when @event is one of gst_twoflow_event_new_dropped(), its
 * fields in the out arguments (each may be %NULL).
 */
gboolean
gst_twoflow_event_parse_dropped (GstEvent * event,
    GstTwoflowPictureType * type, gboolean * reference, GstClockTime * pts,
    GstClockTime * dts, GstClockTime * duration)
{
  const GstStructure *st;
  gint t = 0;
  gboolean r = FALSE;
  guint64 p = GST_CLOCK_TIME_NONE, d = GST_CLOCK_TIME_NONE,
      du = GST_CLOCK_TIME_NONE;

  if (GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_DOWNSTREAM)
    return FALSE;
  st = gst_event_get_structure (event);
  if (!st || !gst_structure_has_name (st, GST_TWOFLOW_DROPPED_EVENT_NAME)
      || !gst_structure_get_int (st, "type", &t)
      || t < GST_TWOFLOW_PICTURE_I || t > GST_TWOFLOW_PICTURE_B)
    return FALSE;
  gst_structure_get_boolean (st, "reference", &r);
  gst_structure_get_uint64 (st, "pts", &p);
  gst_structure_get_uint64 (st, "dts", &d);
  gst_structure_get_uint64 (st, "duration", &du);
  if (type)
    *type = t;
  if (reference)
    *reference = r;
  if (pts)
    *pts = p;
  if (dts)
    *dts = d;
  if (duration)
    *duration = du;
  return TRUE;
}

/* --- GstTwoflowPictureMeta -------------------------------------------- */

GType
gst_twoflow_picture_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { "video", NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("GstTwoflowPictureMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
picture_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstTwoflowPictureMeta *m = (GstTwoflowPictureMeta *) meta;

  m->type = GST_TWOFLOW_PICTURE_NONE;
  m->reference = FALSE;
  return TRUE;
}

static gboolean
picture_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer,
    GQuark type, gpointer data)
{
  GstTwoflowPictureMeta *m = (GstTwoflowPictureMeta *) meta;

  /* the buffer still holds the same picture when copied whole */
  if (GST_META_TRANSFORM_IS_COPY (type))
    gst_buffer_add_twoflow_picture_meta (dest, m->type, m->reference);
  return TRUE;
}

const GstMetaInfo *
gst_twoflow_picture_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *i =
        gst_meta_register (GST_TWOFLOW_PICTURE_META_API_TYPE,
        "GstTwoflowPictureMeta", sizeof (GstTwoflowPictureMeta),
        picture_meta_init, NULL, picture_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) i);
  }
  return info;
}

/**
 * gst_buffer_add_twoflow_picture_meta:
 * @type: the type of the source picture @buf stands for
 * @reference: whether that picture is a reference
 *
 * Returns: (transfer none): the meta added to @buf
 */
GstTwoflowPictureMeta *
gst_buffer_add_twoflow_picture_meta (GstBuffer * buf,
    GstTwoflowPictureType type, gboolean reference)
{
  GstTwoflowPictureMeta *m = (GstTwoflowPictureMeta *)
      gst_buffer_add_meta (buf, gst_twoflow_picture_meta_get_info (), NULL);

  m->type = type;
  m->reference = reference;
  return m;
}
