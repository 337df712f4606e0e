/* SPDX-License-Identifier: LGPL-2.0-or-later */
/* twoflow
 * ratetranscoder: MPEG-1/2 rate transcoder following congestion events.
 */
#ifndef __GST_RATE_TRANSCODER_H__
#define __GST_RATE_TRANSCODER_H__

#include <gst/gst.h>
#include <libavcodec/avcodec.h>
#include <gst/ratecontrol/ratecontrol.h>
#include <gst/picturetype/picturetype.h>

G_BEGIN_DECLS

#define GST_TYPE_RATE_TRANSCODER (gst_rate_transcoder_get_type ())
G_DECLARE_FINAL_TYPE (GstRateTranscoder, gst_rate_transcoder, GST,
    RATE_TRANSCODER, GstElement)

#define GST_TYPE_RATE_TRANSCODER_KEEP (gst_rate_transcoder_keep_get_type ())
GType gst_rate_transcoder_keep_get_type (void);

/* encoder-order number -> decode index map size; > any codec delay */
#define RT_MAP_SIZE 64

typedef struct
{
  guint64 index;                /* decode index of the frame */
  GstTwoflowPictureType type;   /* the type forced on the encoder */
} RtEncEntry;

struct _GstRateTranscoder
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* properties and rate control, under the object lock (events come from
   * downstream's thread) */
  guint64 min_bitrate;
  guint64 max_bitrate;
  gdouble backoff;
  guint64 recovery;
  guint events;
  GstTwoflowRateControlKeep keep;
  GstTwoflowRateControl *rc;
  GstClockTime now;             /* running time of the last input frame */
  guint pending_generation;     /* generation of the last reaction */
  gint64 pending_since;         /* monotonic us of that reaction, 0 none */
  guint64 last_latency, max_latency;
  guint64 decode_errors;
  guint64 frames_out;
  gint fps_n, fps_d;            /* also read by latency queries */
  GstClockTime latency;         /* what the element adds, reported */

  /* streaming state, under the stream lock */
  gint mpegversion;
  GstTwoflowPictureParser *picture_parser;
  GstSegment segment;
  AVCodecContext *dec;
  AVCodecContext *enc;
  AVPacket *pkt;
  GQueue frames;                /* RtFrame, decode order, until both pushed
                                 * and returned by the decoder */
  guint64 next_index;           /* decode index of the next input frame */
  guint64 next_out;             /* decode index of the next frame to push */
  guint64 enc_count;            /* frames given to the encoder */
  RtEncEntry enc_map[RT_MAP_SIZE];
  GstClockTime gop_dts;         /* DTS of the current GOP's first picture */
  gboolean seen_gop_header;
  gboolean have_last_ref;
  guint64 last_ref;
  guint b_run;
  gboolean broken;              /* passing through up to the next I frame */
  gboolean unsupported;         /* passing through to the end of the stream */
  gboolean discont;
  guint8 intra_matrix[64];      /* raster order */
  guint8 inter_matrix[64];
  gboolean custom_intra, custom_inter;
  gboolean matrices_warned;
};

GST_ELEMENT_REGISTER_DECLARE (ratetranscoder);

G_END_DECLS

#endif
