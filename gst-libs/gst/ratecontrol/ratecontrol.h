/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Rate control of ratetranscoder: a sans-IO core (no clocks, threads or
 * codec of its own). It is told about every input frame, every congestion
 * event and every output frame, with the stream time they belong to, and
 * decides per frame whether to pass the original bits, re-encode at a
 * quantizer, or drop it.
 * Verbs (docs/architecture.md): handle_congestion(…, now) and
 * handle_input(…, now) / handle_input_layer(…, now) take what happened;
 * a frame that asks for its decision is an input answered at once
 * (handle_parsed() before decoding, handle_decoded() after it,
 * handle_drop_candidate() in H.264 drop mode); handle_source_quantizer()
 * and handle_output() report the outcome. No timer: it never acts between
 * calls (additive recovery advances with the input frames' times), so it
 * has no poll() and no next_wakeup(). See docs/transcoder.md.
 */
#ifndef __GST_TWOFLOW_RATE_CONTROL_H__
#define __GST_TWOFLOW_RATE_CONTROL_H__

#include <glib.h>
#include <gst/ratecontrol/ratecontrol-prelude.h>
#include <gst/twoflow/networkcongestion.h>
#include <gst/twoflow/twoflowframe.h>

G_BEGIN_DECLS

/* Which frames are essential and kept byte-identical to the source. */
typedef enum {
  GST_TWOFLOW_RATE_CONTROL_KEEP_NONE = 0,
  GST_TWOFLOW_RATE_CONTROL_KEEP_I = 1,
  GST_TWOFLOW_RATE_CONTROL_KEEP_IP = 2,
} GstTwoflowRateControlKeep;

typedef enum {
  GST_TWOFLOW_RATE_CONTROL_PASS,        /* emit the source bits */
  GST_TWOFLOW_RATE_CONTROL_ENCODE,      /* emit the re-encoded bits */
  GST_TWOFLOW_RATE_CONTROL_DROP,        /* emit nothing (B frames only) */
} GstTwoflowRateControlAction;

/* What gst_twoflow_rate_control_handle_parsed() could tell before
 * decoding. */
typedef enum {
  /* decide with gst_twoflow_rate_control_handle_decoded() */
  GST_TWOFLOW_RATE_CONTROL_EARLY_NONE,
  /* no reduction needed: pass */
  GST_TWOFLOW_RATE_CONTROL_EARLY_PASSTHROUGH,
  /* a type kept by keep: pass */
  GST_TWOFLOW_RATE_CONTROL_EARLY_KEPT,
} GstTwoflowRateControlEarly;

typedef struct {
  GstTwoflowRateControlAction action;
  /* quantizer (MPEG qscale 1..31) to encode the frame with; for PASS frames
   * the one that keeps the encoder's reference close to the source */
  gint q;
  /* the frame's share of the target in bits (ENCODE), or its source size */
  gdouble budget_bits;
  /* bumped on each rate change, so the caller can tell which output frame
   * is the first one coded under a change */
  guint generation;
} GstTwoflowRateControlDecision;

/* Quantizer for frames whose own output is discarded in favour of the
 * source bits: high enough fidelity that predictions from it do not drift. */
#define GST_TWOFLOW_RATE_CONTROL_Q_KEEP 2
#define GST_TWOFLOW_RATE_CONTROL_Q_MIN 1
#define GST_TWOFLOW_RATE_CONTROL_Q_MAX 31

typedef struct {
  gdouble input_bitrate;        /* bit/s, GOP-aligned window */
  gdouble output_bitrate;       /* bit/s, same window on the output */
  gdouble target_bitrate;       /* effective target now, bit/s */
  gdouble floor_bitrate;        /* bit/s of the frames that are always kept */
  gdouble quantizer;            /* last quantizer of a re-encoded frame */
  gdouble mean_quantizer;       /* mean over the window's re-encoded frames */
  gboolean passthrough;         /* last frame passed: no reduction needed */
  gboolean dropping_b;
  guint gop_length;             /* frames between the last two I, 0 unknown */
  guint64 frames_in, frames_passed, frames_encoded, frames_dropped;
  guint64 events[5];            /* per GstTwoflowCongestionType bit position */
  guint64 events_ignored;       /* not subscribed, or within one SRTT of a
                                 * backoff */
  guint pending_backoffs;       /* backoffs waiting for the input rate */
  guint64 frames_dropped_by_type[3];    /* I, P, B */
  gboolean dropping_tail;       /* H.264 keep=i: dropping to the GOP's end */
  gdouble disposable_bitrate;   /* H.264 drop mode: bit/s of pictures
                                 * nothing references (nal_ref_idc = 0) */
  gdouble lowest_bitrate;       /* re-encoding: the lowest target met
                                 * without dropping B frames, bit/s (0:
                                 * not known); the highest over the last
                                 * 1-2 s of input */
} GstTwoflowRateControlStats;

/* H.264 under keep=i|ip (essential frames byte-identical): instead of
 * re-encoding, the enhanced flow is reduced by dropping pictures, in order
 * of least damage. Each input frame is filed in the layer that says how it
 * may be dropped. */
typedef enum {
  /* never dropped (essential, or a reference an essential frame may use) */
  GST_TWOFLOW_RATE_CONTROL_LAYER_KEPT = 0,
  /* nal_ref_idc = 0: nothing predicts from it, dropping it costs that
   * picture only */
  GST_TWOFLOW_RATE_CONTROL_LAYER_DISPOSABLE = 1,
  /* a reference that only non-essential frames of its own GOP use (keep=i:
   * P and reference B pictures): dropped together with every later frame up
   * to the next I, the GOP's tail, which nothing after it references */
  GST_TWOFLOW_RATE_CONTROL_LAYER_TAIL = 2,
} GstTwoflowRateControlLayer;

typedef struct _GstTwoflowRateControl GstTwoflowRateControl;

TWOFLOW_RATECONTROL_API
GstTwoflowRateControl *gst_twoflow_rate_control_new (void);
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_free (GstTwoflowRateControl * rc);
/* Forgets the stream (flush, new stream); keeps configuration and target. */
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_reset (GstTwoflowRateControl * rc);

/* target: bit/s, 0 = unlimited (the input's); min/max: 0 = no bound / the
 * input's */
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_set_target (GstTwoflowRateControl * rc,
    guint64 target);
TWOFLOW_RATECONTROL_API
guint64 gst_twoflow_rate_control_get_target (GstTwoflowRateControl * rc);
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_set_limits (GstTwoflowRateControl * rc,
    guint64 min_bitrate, guint64 max_bitrate);
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_set_backoff (GstTwoflowRateControl * rc,
    gdouble backoff);
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_set_recovery (GstTwoflowRateControl * rc,
    guint64 bits_per_second);
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_set_events (GstTwoflowRateControl * rc,
    guint events);
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_set_keep (GstTwoflowRateControl * rc,
    GstTwoflowRateControlKeep keep);

/* A congestion event arrived; @now is the stream (running) time of the last
 * input frame. Returns TRUE if the target changed (applies from the next
 * decision). A backoff (rexmt, dupack, loss) that comes while there is no
 * rate to scale (no target, no max-bitrate, and the input rate not yet
 * measured: before a whole GOP or 12 frames are in) is counted and kept;
 * gst_twoflow_rate_control_handle_input() applies the kept ones once the
 * input rate is measured: target = rate * backoff^k, within min-bitrate. */
TWOFLOW_RATECONTROL_API
gboolean gst_twoflow_rate_control_handle_congestion (GstTwoflowRateControl *
    rc, GstTwoflowCongestionType type, guint64 estimated_bitrate,
    guint64 srtt, guint64 now);

/* Every input frame, in decode order, as it arrives. @now: its running time
 * in ns (drives additive recovery); @duration in ns. */
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_handle_input (GstTwoflowRateControl * rc,
    GstTwoflowPictureType type, gsize bytes, guint64 duration, guint64 now);

/* A frame left the decoder: its decision (what to do with a frame of
 * @bytes source bytes whose source quantiser_scale, 1..112, mean over its
 * macroblocks as the decoder reports it, was @qsrc; 0 if unknown). */
TWOFLOW_RATECONTROL_API
GstTwoflowRateControlDecision
gst_twoflow_rate_control_handle_decoded (GstTwoflowRateControl * rc,
    GstTwoflowPictureType type, gsize bytes, gdouble qsrc);

/* At input, in decode order, before the frame is decoded (after
 * gst_twoflow_rate_control_handle_input()): can its source bits leave at
 * once? They can while no reduction is needed (the effective target is at
 * or above the input's rate) or when @type is kept; @d is then the PASS
 * decision. Otherwise its decision comes from
 * gst_twoflow_rate_control_handle_decoded() once the frame is decoded. */
TWOFLOW_RATECONTROL_API
GstTwoflowRateControlEarly
gst_twoflow_rate_control_handle_parsed (GstTwoflowRateControl * rc,
    GstTwoflowPictureType type, gsize bytes,
    GstTwoflowRateControlDecision * d);

/* The decision that passes a frame's source bits (and gives the encoder
 * the quantizer that keeps its reference close to the source), for a frame
 * whose earlier decision is overridden. A pure accessor: it changes
 * nothing in the core. */
TWOFLOW_RATECONTROL_API
GstTwoflowRateControlDecision
gst_twoflow_rate_control_get_pass_decision (GstTwoflowRateControl * rc,
    GstTwoflowPictureType type, gsize bytes);

/* The source quantiser_scale of a frame decided without
 * gst_twoflow_rate_control_handle_decoded(), once decoded: it keeps the
 * per-type means the model falls back on up to date. */
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_handle_source_quantizer (GstTwoflowRateControl *
    rc, GstTwoflowPictureType type, gdouble qsrc);

/* The outcome of a decision: @out_bytes emitted (0 for DROP). @type may
 * be GST_TWOFLOW_PICTURE_NONE for passed bytes that hold no picture. */
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_handle_output (GstTwoflowRateControl * rc,
    GstTwoflowPictureType type, const GstTwoflowRateControlDecision * d,
    gsize in_bytes, gdouble qsrc, gsize out_bytes, guint64 duration);

/* H.264 drop mode: gst_twoflow_rate_control_handle_input() for a frame
 * of @layer. The floor is then the rate of LAYER_KEPT frames (the input's
 * rate when nothing is disposable). */
TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_handle_input_layer (GstTwoflowRateControl * rc,
    GstTwoflowPictureType type, GstTwoflowRateControlLayer layer, gsize bytes,
    guint64 duration, guint64 now);

/* H.264 drop mode: PASS or DROP for the frame just given to
 * gst_twoflow_rate_control_handle_input_layer(). Disposable pictures go
 * first (each dropped when that leaves the output nearer its budget than
 * passing it); when dropping all of them cannot reach the target, the
 * GOP's tail is dropped from the TAIL frame at the position that removes
 * the missing rate, to the next I frame. Report the outcome with
 * gst_twoflow_rate_control_handle_output(). */
TWOFLOW_RATECONTROL_API
GstTwoflowRateControlDecision
gst_twoflow_rate_control_handle_drop_candidate (GstTwoflowRateControl * rc,
    GstTwoflowPictureType type, GstTwoflowRateControlLayer layer, gsize bytes);

TWOFLOW_RATECONTROL_API
void gst_twoflow_rate_control_get_stats (GstTwoflowRateControl * rc,
    GstTwoflowRateControlStats * stats);
TWOFLOW_RATECONTROL_API
guint gst_twoflow_rate_control_get_generation (GstTwoflowRateControl * rc);

G_END_DECLS

#endif /* __GST_TWOFLOW_RATE_CONTROL_H__ */
