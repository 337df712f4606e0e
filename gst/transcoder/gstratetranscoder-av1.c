/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * ratetranscoder, AV1 (issue 27): keep=i|ip only, no codecs.
 *
 * A temporal unit (av1parse's alignment=tu) is classed by
 * gst-libs/gst/picturetype: I = only intra frames (KEY_FRAME,
 * INTRA_ONLY), P = a frame in it refreshes a reference slot, B = none
 * does. Under keep=i|ip the essential units (keep=ip: every unit that
 * refreshes a slot) and those carrying a sequence header leave
 * byte-identical; the rate is lowered by dropping the B units (nothing
 * reads what they code) and, under keep=i below that floor, the GOP's
 * tail: from a refreshing unit up to the next key frame that refreshes
 * every slot (an intra-only frame refreshes only some: the units after it
 * may still read a slot the dropped tail wrote). The decisions are the
 * rate control core's, as for H.264/H.265 dropping.
 *
 * keep=none (re-encoding: libdav1d and SVT-AV1 through libavcodec) is not
 * done: the element warns once and passes the units through.
 *
 * A codec behind the ops table of gstratetranscoder-codec.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/picturetype/picturetype.h>
#include <gst/twoflow/twoflowframe.h>
#include "gstratetranscoder-codec.h"

#define GST_CAT_DEFAULT rate_transcoder_debug

/* under the element's stream lock */
typedef struct
{
  GstRateTranscoder *element;
  GstTwoflowPictureParser *picture_parser;
  gboolean tail_dropped;        /* dropping up to the next full key frame */
  gboolean warned;              /* keep=none warning posted */
} RtAv1;

static void
av1_account (RtAv1 * self, GstTwoflowPictureType type,
    const GstTwoflowRateControlDecision * d, gsize in_bytes, gsize out_bytes,
    GstClockTime dur)
{
  gst_rate_transcoder_account (self->element, type, d, in_bytes, 0,
      out_bytes, dur, TRUE, FALSE);
}

/* keep=none: no re-encoding yet, the unit passes as it came */
static GstFlowReturn
av1_pass (RtAv1 * self, GstBuffer * buf, const GstTwoflowPictureInfo * info,
    gsize size, GstClockTime dur, guint64 now)
{
  GstTwoflowRateControl *rc;
  GstTwoflowRateControlDecision d = { GST_TWOFLOW_RATE_CONTROL_PASS };

  rc = gst_rate_transcoder_lock_input (self->element, now);
  gst_twoflow_rate_control_handle_input (rc, info->type, size, dur, now);
  d.generation = gst_twoflow_rate_control_get_generation (rc);
  gst_rate_transcoder_unlock (self->element);
  if (!self->warned) {
    GST_ELEMENT_WARNING (self->element, STREAM, NOT_IMPLEMENTED, (NULL),
        ("AV1 is not re-encoded (keep=none): passing it through; keep=i|ip "
            "lower its rate by dropping"));
    self->warned = TRUE;
  }
  d.budget_bits = size * 8.0;
  av1_account (self, info->type, &d, size, size, dur);
  return gst_rate_transcoder_push (self->element, buf, TRUE);
}

static GstFlowReturn
av1_drop_or_pass (RtAv1 * self, GstBuffer * buf,
    const GstTwoflowPictureInfo * info, gsize size, GstClockTime dur,
    guint64 now)
{
  GstTwoflowRateControl *rc;
  GstTwoflowRateControlLayer layer;
  GstTwoflowRateControlDecision d;
  gboolean kept = info->type == GST_TWOFLOW_PICTURE_I ||
      (gst_rate_transcoder_get_keep (self->element) ==
          GST_TWOFLOW_RATE_CONTROL_KEEP_IP && info->reference) ||
      info->sequence_header;

  if (kept)
    layer = GST_TWOFLOW_RATE_CONTROL_LAYER_KEPT;
  else if (!info->reference)
    layer = GST_TWOFLOW_RATE_CONTROL_LAYER_DISPOSABLE;
  else
    layer = GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL;
  if (info->idr)
    self->tail_dropped = FALSE;

  rc = gst_rate_transcoder_lock_input (self->element, now);
  gst_twoflow_rate_control_handle_input_layer (rc, info->type, layer, size,
      dur, now);
  d = gst_twoflow_rate_control_handle_drop_candidate (rc, info->type, layer,
      size);
  gst_rate_transcoder_unlock (self->element);
  /* after a dropped tail, what may read a slot it wrote goes too */
  if (!kept && self->tail_dropped)
    d.action = GST_TWOFLOW_RATE_CONTROL_DROP;

  if (d.action == GST_TWOFLOW_RATE_CONTROL_DROP) {
    if (layer == GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL)
      self->tail_dropped = TRUE;
    GST_LOG_OBJECT (self->element, "dropping %s temporal unit of %"
        G_GSIZE_FORMAT " bytes (layer %d)", info->reference ? "a referenced"
        : "an unreferenced", size, layer);
    av1_account (self, info->type, &d, size, 0, dur);
    /* in its place an event: twoflowsplit numbers the units after it as
     * the essential flow's split does */
    gst_rate_transcoder_push_event (self->element,
        gst_twoflow_event_new_dropped (info->type, info->reference,
            GST_BUFFER_PTS (buf), GST_BUFFER_DTS (buf), dur));
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  av1_account (self, info->type, &d, size, size, dur);
  return gst_rate_transcoder_push (self->element, buf, TRUE);
}

static GstFlowReturn
av1_handle_frame (GstRateTranscoderCodecState * state, GstBuffer * buf,
    GstClockTime dur, guint64 now)
{
  RtAv1 *self = (RtAv1 *) state;
  GstTwoflowPictureInfo info;
  GstMapInfo map;
  gboolean picture;
  gsize size;

  if (!gst_buffer_map (buf, &map, GST_MAP_READ))
    return gst_rate_transcoder_push (self->element, buf, TRUE);
  picture = gst_twoflow_picture_parser_parse (self->picture_parser, map.data,
      map.size, &info);
  size = map.size;
  gst_buffer_unmap (buf, &map);
  if (!picture) {
    GST_DEBUG_OBJECT (self->element, "unit without a frame, passed");
    return gst_rate_transcoder_push (self->element, buf, TRUE);
  }
  if (gst_rate_transcoder_get_keep (self->element) ==
      GST_TWOFLOW_RATE_CONTROL_KEEP_NONE)
    return av1_pass (self, buf, &info, size, dur, now);
  return av1_drop_or_pass (self, buf, &info, size, dur, now);
}

/* --- the ops table ---------------------------------------------------- */

static void
av1_reset (GstRateTranscoderCodecState * state)
{
  RtAv1 *self = (RtAv1 *) state;

  self->tail_dropped = FALSE;
}

static GstRateTranscoderCodecState *
av1_start (GstRateTranscoder * element)
{
  RtAv1 *self = g_new0 (RtAv1, 1);

  self->element = element;
  self->picture_parser = gst_twoflow_picture_parser_new (GST_TWOFLOW_CODEC_AV1);
  return (GstRateTranscoderCodecState *) self;
}

static void
av1_stop (GstRateTranscoderCodecState * state)
{
  RtAv1 *self = (RtAv1 *) state;

  gst_twoflow_picture_parser_free (self->picture_parser);
  g_free (self);
}

/* the av1C record of codec_data (matroska, MP4) holds the sequence
 * header the first units may not repeat */
static void
av1_set_caps (GstRateTranscoderCodecState * state, const GstStructure * s)
{
  RtAv1 *self = (RtAv1 *) state;
  const GValue *v = gst_structure_get_value (s, "codec_data");
  GstBuffer *cd = v && G_VALUE_HOLDS (v, GST_TYPE_BUFFER) ?
      gst_value_get_buffer (v) : NULL;
  GstMapInfo map;

  if (cd && gst_buffer_map (cd, &map, GST_MAP_READ)) {
    gst_twoflow_picture_parser_set_codec_data (self->picture_parser,
        map.data, map.size);
    gst_buffer_unmap (cd, &map);
  }
}

static GstFlowReturn
av1_drain (GstRateTranscoderCodecState * state)
{
  /* nothing held */
  return GST_FLOW_OK;
}

const GstRateTranscoderCodec gst_rate_transcoder_codec_av1 = {
  .name = "av1",
  .caps = "video/x-av1, stream-format = (string) obu-stream, "
      "alignment = (string) tu",
  /* no codecs: nothing held */
  .latency_frames = 0,
  .start = av1_start,
  .stop = av1_stop,
  .set_caps = av1_set_caps,
  .handle_frame = av1_handle_frame,
  .drain = av1_drain,
  .reset = av1_reset,
};
