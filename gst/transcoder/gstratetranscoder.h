/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder: MPEG-1/2 rate transcoder following congestion events.
 */
#ifndef __GST_RATE_TRANSCODER_H__
#define __GST_RATE_TRANSCODER_H__

#include <gst/gst.h>
#include <libavcodec/avcodec.h>
#include <gst/ratecontrol/ratecontrol.h>
#include <gst/picturetype/picturetype.h>
#include <gst/picturetype/h264splice.h>

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

  /* H.264 (gstratetranscoder-h264.c), under the stream lock */
  gboolean h264;
  gboolean h264_avc;            /* stream-format=avc (length prefixes) */
  guint nal_length_size;        /* avc: bytes of a NAL length prefix */
  GBytes *dec_extradata;        /* avc: the avcC record for the decoder */
  GBytes *param_sets;           /* the source's SPS/PPS as the output's
                                 * stream-format carries them */
  gboolean h264_encoding;       /* output comes from the encoder */
  gboolean h264_force_idr;      /* the next encoded picture is an IDR */
  gboolean h264_unsupported;    /* re-encoding impossible: pass through */
  gboolean h264_reconfig;       /* the encoder takes bitrate changes */
  GstClockTime max_passed_pts;  /* decoded pictures up to it were passed */
  GstClockTime last_dts_out;
  guint64 enc_n;                /* pictures given to this encoder */
  guint64 enc_bitrate;          /* bit rate configured on the encoder */
  guint enc_generation;         /* rate-control generation it codes under */
  gboolean tail_dropped;        /* a reference was dropped in this GOP */
  GstClockTime leading_before;  /* drop open-GOP leading pictures before */
  struct
  {
    GstClockTime pts, dur;
  } h264_ring[RT_MAP_SIZE];     /* by encoder picture number */
  gchar *preset;                /* x264 preset */

  /* H.264 keep=i: non-essential pictures re-encoded (the
   * gstratetranscoder-h264.c "keep re-encoding" part), under the stream
   * lock */
  GstTwoflowH264Splice *splice;
  gboolean kr_unsupported;      /* cannot splice: dropping as before */
  gboolean kr_active;           /* re-encoding (else passing) */
  gboolean kr_intra;            /* the next re-encoded picture starts a run */
  gboolean kr_tail;             /* below the codec floor: dropping to the
                                 * next I */
  gboolean kr_prepend_ps;       /* the next essential picture takes the
                                 * source's SPS/PPS in front */
  guint kr_last_fn;             /* frame_num of the last reference out */
  GstClockTime kr_last_i_pts;   /* PTS of the last I in decode order */
  GQueue kr_pending;            /* RtKeepPic, decode order */
  GQueue kr_dts;                /* their DTS, given out in output order */
  GQueue kr_after_i;            /* leading pictures dropped after their I */
  AVCodecContext *kenc;
  guint64 kenc_n;
  guint64 kenc_bitrate;
};

/* gstratetranscoder.c */
GstStructure *gst_rate_transcoder_stats (GstRateTranscoder * self);
void gst_rate_transcoder_note_reaction (GstRateTranscoder * self,
    guint generation);

/* gstratetranscoder-h264.c */
void rt_h264_set_caps (GstRateTranscoder * self, const GstStructure * s);
GstFlowReturn rt_h264_chain (GstRateTranscoder * self, GstBuffer * buf);
GstFlowReturn rt_h264_drain (GstRateTranscoder * self);
void rt_h264_reset (GstRateTranscoder * self);
/* frames of delay the element reports for H.264 */
guint rt_h264_delay_frames (void);

GST_ELEMENT_REGISTER_DECLARE (ratetranscoder);

G_END_DECLS

#endif
