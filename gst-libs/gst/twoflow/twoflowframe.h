/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The twoflow frame format: a versioned, self-delimiting record carrying one
 * coded picture (or the stream's caps, or its end) with what twoflowmerge
 * needs to rebuild the decode order. Specified in docs/frame-format.md.
 */
#ifndef __GST_TWOFLOW_FRAME_H__
#define __GST_TWOFLOW_FRAME_H__

#include <gst/gst.h>
#include <gst/twoflow/twoflow-prelude.h>

G_BEGIN_DECLS

#define GST_TWOFLOW_MAGIC        0x54574f46u   /* "TWOF" */
/* Version written; version 1 (no audio records) is still read. */
#define GST_TWOFLOW_VERSION      2
#define GST_TWOFLOW_VERSION_MIN  1
#define GST_TWOFLOW_HEADER_SIZE  68
/* Upper bound of one record's payload: far above any coded picture, low
 * enough that garbage cannot make a parser wait for gigabytes. */
#define GST_TWOFLOW_MAX_PAYLOAD  (64 * 1024 * 1024)
/* Number of preceding frames whose type each frame header remembers. */
#define GST_TWOFLOW_HISTORY_LEN  16
#define GST_TWOFLOW_NO_FRAME     G_MAXUINT32

#define GST_TWOFLOW_CAPS "application/x-twoflow"

typedef enum {
  GST_TWOFLOW_RECORD_FRAME = 0,
  GST_TWOFLOW_RECORD_CAPS  = 1,   /* payload: the original caps as a string */
  GST_TWOFLOW_RECORD_END   = 2,   /* end of stream; frame_no = frame count */
  /* version 2: the audio track travels in the essential flow */
  GST_TWOFLOW_RECORD_AUDIO_CAPS = 3,  /* payload: the audio caps as a string */
  GST_TWOFLOW_RECORD_AUDIO = 4,   /* payload: one audio buffer; frame_no = its number */
} GstTwoflowRecordKind;

typedef enum {
  GST_TWOFLOW_CODEC_UNKNOWN = 0,
  GST_TWOFLOW_CODEC_MPEG1   = 1,
  GST_TWOFLOW_CODEC_MPEG2   = 2,
  GST_TWOFLOW_CODEC_H264    = 3,
  GST_TWOFLOW_CODEC_H265    = 4,
  GST_TWOFLOW_CODEC_AV1     = 5,
} GstTwoflowCodec;

/* The highest codec id a header may carry. */
#define GST_TWOFLOW_CODEC_LAST GST_TWOFLOW_CODEC_AV1

typedef enum {
  GST_TWOFLOW_PICTURE_NONE = 0,
  GST_TWOFLOW_PICTURE_I    = 1,
  GST_TWOFLOW_PICTURE_P    = 2,
  GST_TWOFLOW_PICTURE_B    = 3,
} GstTwoflowPictureType;

typedef enum {
  GST_TWOFLOW_FLAG_REFERENCE = (1 << 0),  /* later frames may predict from it */
  GST_TWOFLOW_FLAG_ESSENTIAL = (1 << 1),  /* travels in the essential flow */
} GstTwoflowFrameFlags;

typedef struct {
  GstTwoflowRecordKind kind;
  GstTwoflowCodec codec;
  GstTwoflowPictureType picture_type;
  guint8 flags;
  guint32 frame_no;       /* decode order, from 0 */
  guint32 gop_no;         /* number of I frames before this one, in decode order */
  guint32 segment_no;
  guint32 depends_from;   /* earliest frame it may predict from; = frame_no for I */
  guint64 history;        /* 4 bits per preceding frame, see gst_twoflow_history_get */
  GstClockTime pts;
  GstClockTime dts;
  GstClockTime duration;
  guint32 payload_size;
} GstTwoflowFrameHeader;

/* What gst_twoflow_frame_header_parse found. */
typedef enum {
  GST_TWOFLOW_PARSE_OK = 0,
  GST_TWOFLOW_PARSE_NEED_MORE,     /* fewer than GST_TWOFLOW_HEADER_SIZE bytes */
  GST_TWOFLOW_PARSE_BAD_MAGIC,
  GST_TWOFLOW_PARSE_BAD_VERSION,
  GST_TWOFLOW_PARSE_BAD_CHECKSUM,
  GST_TWOFLOW_PARSE_BAD_FIELD,     /* a field out of its range */
} GstTwoflowParseResult;

TWOFLOW_API
void gst_twoflow_frame_header_init (GstTwoflowFrameHeader * hdr);
TWOFLOW_API
void gst_twoflow_frame_header_write (const GstTwoflowFrameHeader * hdr,
    guint8 out[GST_TWOFLOW_HEADER_SIZE]);
TWOFLOW_API
GstTwoflowParseResult gst_twoflow_frame_header_parse (const guint8 * data,
    gsize size, GstTwoflowFrameHeader * hdr);
TWOFLOW_API
const gchar * gst_twoflow_parse_result_to_string (GstTwoflowParseResult res);

TWOFLOW_API
GstBuffer * gst_twoflow_record_new (const GstTwoflowFrameHeader * hdr,
    GstBuffer * payload);
TWOFLOW_API
GstBuffer * gst_twoflow_record_new_caps (GstTwoflowCodec codec,
    const GstCaps * caps);
TWOFLOW_API
GstBuffer * gst_twoflow_record_new_end (GstTwoflowCodec codec,
    guint32 frame_count, guint64 history);
TWOFLOW_API
GstBuffer * gst_twoflow_record_new_audio_caps (const GstCaps * caps);
TWOFLOW_API
GstBuffer * gst_twoflow_record_new_audio (guint32 audio_no, guint32 segment_no,
    GstBuffer * payload);

/* History of the frames before a frame: entry 0 is frame_no-1. */
TWOFLOW_API
guint64 gst_twoflow_history_push (guint64 history,
    GstTwoflowPictureType type, gboolean reference);
TWOFLOW_API
gboolean gst_twoflow_history_get (guint64 history, guint age,
    GstTwoflowPictureType * type, gboolean * reference);

TWOFLOW_API
const gchar * gst_twoflow_codec_to_string (GstTwoflowCodec codec);
TWOFLOW_API
GstTwoflowCodec gst_twoflow_codec_from_string (const gchar * str);
TWOFLOW_API
gchar gst_twoflow_picture_type_to_char (GstTwoflowPictureType type);

/* Incremental parser for the byte-stream form (and for packetized input:
 * every buffer must then hold exactly one record). */
typedef struct _GstTwoflowParser GstTwoflowParser;

TWOFLOW_API
GstTwoflowParser * gst_twoflow_parser_new (void);
TWOFLOW_API
void gst_twoflow_parser_free (GstTwoflowParser * parser);
TWOFLOW_API
void gst_twoflow_parser_reset (GstTwoflowParser * parser);
TWOFLOW_API
void gst_twoflow_parser_push (GstTwoflowParser * parser, GstBuffer * buf);
TWOFLOW_API
GstTwoflowParseResult gst_twoflow_parser_pop (GstTwoflowParser * parser,
    GstTwoflowFrameHeader * hdr, GstBuffer ** payload);
TWOFLOW_API
gsize gst_twoflow_parser_available (GstTwoflowParser * parser);

/* A picture an element upstream of twoflowsplit left out (ratetranscoder
 * dropping disposable pictures): a serialized downstream event in its
 * place, so the split still gives it its frame number. */
#define GST_TWOFLOW_DROPPED_EVENT_NAME "GstTwoflowDroppedFrame"

TWOFLOW_API
GstEvent * gst_twoflow_event_new_dropped (GstTwoflowPictureType type,
    gboolean reference, GstClockTime pts, GstClockTime dts,
    GstClockTime duration);
TWOFLOW_API
gboolean gst_twoflow_event_parse_dropped (GstEvent * event,
    GstTwoflowPictureType * type, gboolean * reference, GstClockTime * pts,
    GstClockTime * dts, GstClockTime * duration);

/* A picture an element upstream of twoflowsplit re-coded with another
 * picture type (ratetranscoder re-encoding an H.264 P picture as an intra
 * picture): the split files the buffer as the source's picture it stands
 * for, so both flows number and type it alike. */
typedef struct {
  GstMeta meta;
  GstTwoflowPictureType type;   /* the source picture's type */
  gboolean reference;
} GstTwoflowPictureMeta;

TWOFLOW_API
GType gst_twoflow_picture_meta_api_get_type (void);
#define GST_TWOFLOW_PICTURE_META_API_TYPE \
  (gst_twoflow_picture_meta_api_get_type ())
TWOFLOW_API
const GstMetaInfo * gst_twoflow_picture_meta_get_info (void);
#define gst_buffer_get_twoflow_picture_meta(b) ((GstTwoflowPictureMeta *) \
    gst_buffer_get_meta ((b), GST_TWOFLOW_PICTURE_META_API_TYPE))
TWOFLOW_API
GstTwoflowPictureMeta * gst_buffer_add_twoflow_picture_meta (GstBuffer * buf,
    GstTwoflowPictureType type, gboolean reference);

G_END_DECLS

#endif
