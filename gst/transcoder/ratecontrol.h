/* twoflow
 * Rate control of ratetranscoder: a sans-IO core (no clocks, threads or
 * codec of its own). It is told about every input frame, every congestion
 * event and every output frame, with the stream time they belong to, and
 * decides per frame whether to pass the original bits, re-encode at a
 * quantizer, or drop it. See docs/transcoder.md.
 */
#ifndef __RATE_CONTROL_H__
#define __RATE_CONTROL_H__

#include <glib.h>
#include <gst/twoflow/networkcongestion.h>

G_BEGIN_DECLS

typedef enum {
  RC_PICTURE_I = 0,
  RC_PICTURE_P = 1,
  RC_PICTURE_B = 2,
  RC_PICTURE_N_TYPES
} RcPictureType;

/* Which frames are essential and kept byte-identical to the source. */
typedef enum {
  RC_KEEP_NONE = 0,
  RC_KEEP_I = 1,
  RC_KEEP_IP = 2,
} RcKeep;

typedef enum {
  RC_ACTION_PASS,               /* emit the source bits */
  RC_ACTION_ENCODE,             /* emit the re-encoded bits */
  RC_ACTION_DROP,               /* emit nothing (B frames only) */
} RcAction;

/* What rate_control_decide_early() could tell before decoding. */
typedef enum {
  RC_EARLY_NONE,                /* decide with rate_control_decide() */
  RC_EARLY_PASSTHROUGH,         /* no reduction needed: pass */
  RC_EARLY_KEPT,                /* a type kept by keep: pass */
} RcEarly;

typedef struct {
  RcAction action;
  /* quantizer (MPEG qscale 1..31) to encode the frame with; for PASS frames
   * the one that keeps the encoder's reference close to the source */
  gint q;
  /* the frame's share of the target in bits (ENCODE), or its source size */
  gdouble budget_bits;
  /* bumped on each rate change, so the caller can tell which output frame
   * is the first one coded under a change */
  guint generation;
} RcDecision;

/* Quantizer for frames whose own output is discarded in favour of the
 * source bits: high enough fidelity that predictions from it do not drift. */
#define RC_Q_KEEP 2
#define RC_Q_MIN 1
#define RC_Q_MAX 31

typedef struct {
  gdouble input_bitrate;        /* bit/s, GOP-aligned window */
  gdouble output_bitrate;       /* bit/s, same window on the output */
  gdouble target_bitrate;       /* effective target now, bit/s */
  gdouble floor_bitrate;        /* bit/s of the frames that are always kept */
  gdouble quantizer;            /* last quantizer used for a re-encoded frame */
  gdouble mean_quantizer;       /* mean over the window's re-encoded frames */
  gboolean passthrough;         /* last frame passed because no reduction was needed */
  gboolean dropping_b;
  guint gop_length;             /* frames between the last two I frames, 0 unknown */
  guint64 frames_in, frames_passed, frames_encoded, frames_dropped;
  guint64 events[5];            /* per GstNetworkCongestionType bit position */
  guint64 events_ignored;       /* not subscribed, or within one SRTT of a backoff */
  guint pending_backoffs;       /* backoffs waiting for the input rate */
} RcStats;

typedef struct _RateControl RateControl;

RateControl *rate_control_new (void);
void rate_control_free (RateControl * rc);
void rate_control_reset (RateControl * rc);

/* target: bit/s, 0 = unlimited (the input's); min/max: 0 = no bound / the input's */
void rate_control_set_target (RateControl * rc, guint64 target);
guint64 rate_control_get_target (RateControl * rc);
void rate_control_set_limits (RateControl * rc, guint64 min_bitrate,
    guint64 max_bitrate);
void rate_control_set_backoff (RateControl * rc, gdouble backoff);
void rate_control_set_recovery (RateControl * rc, guint64 bits_per_second);
void rate_control_set_events (RateControl * rc, guint events);
void rate_control_set_keep (RateControl * rc, RcKeep keep);

/* A congestion event arrived; @now is the stream (running) time of the last
 * input frame. Returns TRUE if the target changed (applies from the next
 * decision). A backoff (rexmt, dupack, loss) that comes while there is no
 * rate to scale (no target, no max-bitrate, and the input rate not yet
 * measured: before a whole GOP or 12 frames are in) is counted and kept;
 * rate_control_input() applies the kept ones once the input rate is
 * measured: target = rate * backoff^k, within min-bitrate. */
gboolean rate_control_congestion (RateControl * rc,
    GstNetworkCongestionType type, guint64 estimated_bitrate, guint64 srtt,
    guint64 now);

/* Every input frame, in decode order, as it arrives. @now: its running time
 * in ns (drives additive recovery); @duration in ns. */
void rate_control_input (RateControl * rc, RcPictureType type, gsize bytes,
    guint64 duration, guint64 now);

/* Decide what to do with a frame of @bytes source bytes whose source
 * quantiser_scale (1..112, mean over its macroblocks, as the decoder
 * reports it) was @qsrc; 0 if unknown. */
RcDecision rate_control_decide (RateControl * rc, RcPictureType type,
    gsize bytes, gdouble qsrc);

/* At input, in decode order, before the frame is decoded (after
 * rate_control_input()): can its source bits leave at once? They can while
 * no reduction is needed (the effective target is at or above the input's
 * rate) or when @type is kept; @d is then the PASS decision. Otherwise
 * decide with rate_control_decide() once the frame is decoded. */
RcEarly rate_control_decide_early (RateControl * rc, RcPictureType type,
    gsize bytes, RcDecision * d);

/* The decision that passes a frame's source bits (and gives the encoder
 * the quantizer that keeps its reference close to the source), for a frame
 * whose earlier decision is overridden. */
RcDecision rate_control_pass_decision (RateControl * rc, RcPictureType type,
    gsize bytes);

/* The source quantiser_scale of a frame decided without
 * rate_control_decide(), once decoded: it keeps the per-type means the
 * model falls back on up to date. */
void rate_control_source_quantizer (RateControl * rc, RcPictureType type,
    gdouble qsrc);

/* The outcome of a decision: @out_bytes emitted (0 for DROP). */
void rate_control_output (RateControl * rc, RcPictureType type,
    const RcDecision * d, gsize in_bytes, gdouble qsrc, gsize out_bytes,
    guint64 duration);

void rate_control_get_stats (RateControl * rc, RcStats * stats);
guint rate_control_get_generation (RateControl * rc);

G_END_DECLS

#endif
