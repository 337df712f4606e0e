/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Enhanced-flow smoothing, sans-IO (see twoflow-smoothing.h).
 *
 * The model (docs/system.md, "Enhanced-flow smoothing"): the server's
 * live source releases enhanced frame i at its decode time r_i (relative
 * to the first frame of the video); the rUDP sender sends the frames in
 * decode order as a fluid at the rate of the window in progress, window k
 * covering sender time [kW, (k+1)W); the receiver plays frame i at
 * d_i = r_i + L. A frame is late when its last byte leaves after d_i.
 * Window by window, the rate is the window's mean rate (times a headroom),
 * raised (bisection) to the least rate at which no frame that finishes or
 * falls due in the window is late, given what the earlier windows left.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>
#include "twoflow-smoothing.h"

/* a window's rate never goes below this (rate 0 pauses the rUDP sender) */
#define MIN_RATE 16000
#define MAX_RATE G_GUINT64_CONSTANT (100000000000)
/* rtpgstpay: RTP header 12 + its own payload header 8 */
#define PACKET_HEADER 20

typedef struct {
  GstClockTime dts;
  guint64 bytes;
  gboolean essential;
} Frame;

struct _GstTwoflowSmoothing {
  GstClockTime window, lead;
  gdouble headroom;
  GArray *frames;               /* Frame, as added */
  /* computed */
  gboolean computed;
  GstClockTime start;
  GArray *enh;                  /* Frame, enhanced only, by decode time */
  GArray *rates;                /* guint64 bit/s per window */
  /* compute_total(): every frame is available from the start (the
   * sender reads ahead), not released at its decode time */
  gboolean presend;
  GstTwoflowSmoothingInfo info;
};

/* The sender's state at a window boundary: the first frame not yet sent
 * completely and how many of its bytes are left. */
typedef struct {
  guint i;
  gdouble rem;
} SendState;

/**
 * gst_twoflow_smoothing_new: (skip)
 * @window: the smoothing window W (> 0)
 * @lead: L, how long after its release the receiver plays a frame
 * @headroom: factor (>= 1) on each window's mean rate before raising it
 *
 * Returns: the smoothing core; C only (an opaque struct).
 */
GstTwoflowSmoothing *
gst_twoflow_smoothing_new (GstClockTime window, GstClockTime lead,
    gdouble headroom)
{
  GstTwoflowSmoothing *sm;

  g_return_val_if_fail (window > 0, NULL);
  sm = g_new0 (GstTwoflowSmoothing, 1);
  sm->window = window;
  sm->lead = lead;
  sm->headroom = MAX (headroom, 1.0);
  sm->frames = g_array_new (FALSE, FALSE, sizeof (Frame));
  sm->enh = g_array_new (FALSE, FALSE, sizeof (Frame));
  sm->rates = g_array_new (FALSE, TRUE, sizeof (guint64));
  return sm;
}

/**
 * gst_twoflow_smoothing_new_from: (skip)
 * @other: a core whose frames to take
 *
 * Returns: a new core with @other's frames and these parameters
 */
GstTwoflowSmoothing *
gst_twoflow_smoothing_new_from (GstTwoflowSmoothing * other,
    GstClockTime window, GstClockTime lead, gdouble headroom)
{
  GstTwoflowSmoothing *sm = gst_twoflow_smoothing_new (window, lead,
      headroom);

  if (sm)
    g_array_append_vals (sm->frames, other->frames->data, other->frames->len);
  return sm;
}

void
gst_twoflow_smoothing_free (GstTwoflowSmoothing * sm)
{
  if (!sm)
    return;
  g_array_free (sm->frames, TRUE);
  g_array_free (sm->enh, TRUE);
  g_array_free (sm->rates, TRUE);
  g_free (sm);
}

/**
 * gst_twoflow_smoothing_handle_frame:
 * @dts: decode time (any origin: the first frame of either flow is 0)
 * @bytes: what the flow's sender counts for it (enhanced: see
 *   gst_twoflow_smoothing_wire_bytes(); essential: the record's bytes)
 *
 * Adds one frame of either flow, in any order, before compute().
 */
void
gst_twoflow_smoothing_handle_frame (GstTwoflowSmoothing * sm, GstClockTime dts,
    guint64 bytes, gboolean essential)
{
  Frame f = { dts, bytes, essential };

  g_return_if_fail (GST_CLOCK_TIME_IS_VALID (dts));
  g_array_append_val (sm->frames, f);
  sm->computed = FALSE;
}

/**
 * gst_twoflow_smoothing_n_frames: (skip)
 *
 * Returns: the frames (of both flows) added so far
 */
guint
gst_twoflow_smoothing_n_frames (GstTwoflowSmoothing * sm)
{
  return sm->frames->len;
}

/**
 * gst_twoflow_smoothing_get_frame: (skip)
 * @i: below gst_twoflow_smoothing_n_frames(), in the order added
 *
 * Returns: FALSE past the end; else the frame's decode time, bytes and flow
 */
gboolean
gst_twoflow_smoothing_get_frame (GstTwoflowSmoothing * sm, guint i,
    GstClockTime * dts, guint64 * bytes, gboolean * essential)
{
  Frame *f;

  if (i >= sm->frames->len)
    return FALSE;
  f = &g_array_index (sm->frames, Frame, i);
  *dts = f->dts;
  *bytes = f->bytes;
  *essential = f->essential;
  return TRUE;
}

guint64
gst_twoflow_smoothing_wire_bytes (guint64 record_bytes, guint mtu)
{
  guint64 payload = mtu > PACKET_HEADER + 1 ? mtu - PACKET_HEADER : 1;
  guint64 packets = MAX ((record_bytes + payload - 1) / payload, 1);

  return record_bytes + packets * PACKET_HEADER;
}

static gint
frame_cmp (gconstpointer a, gconstpointer b)
{
  const Frame *x = a, *y = b;

  return x->dts < y->dts ? -1 : x->dts > y->dts;
}

#define ENH(sm, i) g_array_index ((sm)->enh, Frame, (i))
#define REL(sm, i) ((gdouble) (ENH (sm, i).dts - (sm)->start))

/* Sends window @k at @rate (bit/s) from @st; returns FALSE if a frame is
 * late: finished after its deadline, or due within the window and not
 * finished by its end. With @finish, stores each finish time (ns). */
static gboolean
run_window (GstTwoflowSmoothing * sm, guint k, guint64 rate, SendState * st,
    gdouble * finish)
{
  gdouble t = (gdouble) k * sm->window, end = t + sm->window;
  gdouble bpns = rate / 8e9;    /* bytes per ns */
  gdouble lead = sm->lead;
  gboolean ok = TRUE;
  guint n = sm->enh->len;

  while (st->i < n) {
    gdouble rel = REL (sm, st->i), need;

    if (rel > t && !sm->presend) {
      if (rel >= end)
        break;
      t = rel;
    }
    need = st->rem / bpns;
    if (t + need > end) {
      st->rem -= bpns * (end - t);
      break;
    }
    t += need;
    if (finish)
      finish[st->i] = t;
    if (t > rel + lead + 1.0)   /* 1 ns of rounding */
      ok = FALSE;
    st->i++;
    if (st->i < n)
      st->rem = (gdouble) ENH (sm, st->i).bytes;
  }
  if (st->i < n && REL (sm, st->i) + lead <= end)
    ok = FALSE;
  return ok;
}

/* Resets the figures and collects the enhanced frames by decode time;
 * returns the video's duration in ns (0 without enhanced frames) and the
 * enhanced bytes in @total. */
static gdouble
prepare (GstTwoflowSmoothing * sm, guint64 * total)
{
  GstTwoflowSmoothingInfo *in = &sm->info;
  GstClockTime last = 0;
  gdouble dur;
  guint64 n_all;
  guint i;

  memset (in, 0, sizeof (*in));
  in->window = sm->window;
  in->lead = sm->lead;
  g_array_set_size (sm->enh, 0);
  g_array_set_size (sm->rates, 0);
  sm->start = GST_CLOCK_TIME_NONE;
  *total = 0;
  n_all = sm->frames->len;
  for (i = 0; i < n_all; i++) {
    Frame *f = &g_array_index (sm->frames, Frame, i);

    sm->start = MIN (sm->start, f->dts);
    last = MAX (last, f->dts);
    if (!f->essential) {
      g_array_append_val (sm->enh, *f);
      *total += f->bytes;
    }
  }
  sm->computed = TRUE;
  in->start = GST_CLOCK_TIME_IS_VALID (sm->start) ? sm->start : 0;
  if (sm->enh->len == 0)
    return 0;
  g_array_sort (sm->enh, frame_cmp);
  /* the video lasts until one mean frame interval after its last frame */
  dur = (gdouble) (last - sm->start);
  if (n_all > 1)
    dur += dur / (n_all - 1);
  in->frames = sm->enh->len;
  in->mean_rate = dur > 0 ? (guint64) (*total * 8e9 / dur) : 0;
  return dur;
}

/* Runs the schedule in sm->rates once more, frame by frame, for its
 * figures: rates, lateness, the receiver's and the sender's buffers. */
static void
schedule_figures (GstTwoflowSmoothing * sm)
{
  GstTwoflowSmoothingInfo *in = &sm->info;
  guint nw = sm->rates->len;
  gdouble *finish;
  SendState st;
  guint i, j, k;

  finish = g_new0 (gdouble, sm->enh->len);
  st.i = 0;
  st.rem = (gdouble) ENH (sm, 0).bytes;
  for (k = 0; k < nw || st.i < sm->enh->len; k++) {
    guint64 rate = g_array_index (sm->rates, guint64, MIN (k, nw - 1));
    run_window (sm, k, rate, &st, finish);
  }
  in->n_windows = nw;
  in->max_rate = 0;
  in->min_rate = G_MAXUINT64;
  for (k = 0; k < nw; k++) {
    in->max_rate = MAX (in->max_rate, g_array_index (sm->rates, guint64, k));
    in->min_rate = MIN (in->min_rate, g_array_index (sm->rates, guint64, k));
  }
  in->max_lateness = G_MININT64;
  {
    /* cumulative bytes by frame; j: first frame not played (deadline
     * after the instant looked at), for the receiver's buffer; and the
     * first frame not finished by a release, for the sender's queue */
    guint64 *cum = g_new0 (guint64, sm->enh->len + 1);
    guint u = 0;

    for (i = 0; i < sm->enh->len; i++)
      cum[i + 1] = cum[i] + ENH (sm, i).bytes;
    j = 0;
    for (i = 0; i < sm->enh->len; i++) {
      gdouble rel = REL (sm, i), dl = rel + sm->lead;
      GstClockTimeDiff late = (GstClockTimeDiff) (finish[i] - dl);

      in->max_lateness = MAX (in->max_lateness, late);
      if (late > 1)
        in->late_frames++;
      else
        in->max_playout = MAX (in->max_playout, (GstClockTime) (dl -
                finish[i]));
      /* held at the receiver right after frame i arrives */
      while (j < sm->enh->len && REL (sm, j) + sm->lead <= finish[i])
        j++;
      if (cum[i + 1] > cum[MIN (j, i + 1)])
        in->max_playout_bytes = MAX (in->max_playout_bytes,
            cum[i + 1] - cum[MIN (j, i + 1)]);
      /* queued at the sender right after frame i is released (read
       * ahead, nothing waits at the sender beyond its own buffer) */
      if (sm->presend)
        continue;
      while (u < sm->enh->len && finish[u] <= rel)
        u++;
      in->max_backlog_bytes = MAX (in->max_backlog_bytes, cum[i + 1] -
          cum[u]);
    }
    g_free (cum);
  }
  g_free (finish);
}

/**
 * gst_twoflow_smoothing_compute:
 *
 * Computes the schedule and its figures (get_info(), get_rates()): CBR
 * per window, each frame released at its decode time.
 */
void
gst_twoflow_smoothing_compute (GstTwoflowSmoothing * sm)
{
  GstTwoflowSmoothingInfo *in = &sm->info;
  guint64 *bytes_in;
  guint64 total;
  SendState st;
  guint i, k, nw;

  sm->presend = FALSE;
  prepare (sm, &total);
  if (sm->enh->len == 0)
    return;

  nw = (guint) ((ENH (sm, sm->enh->len - 1).dts - sm->start) / sm->window) + 1;
  bytes_in = g_new0 (guint64, nw);
  for (i = 0; i < sm->enh->len; i++)
    bytes_in[(ENH (sm, i).dts - sm->start) / sm->window] += ENH (sm, i).bytes;
  g_array_set_size (sm->rates, nw);
  in->n_windows = nw;

  st.i = 0;
  st.rem = (gdouble) ENH (sm, 0).bytes;
  for (k = 0; k < nw; k++) {
    guint64 r0 = (guint64) ceil (bytes_in[k] * 8e9 * sm->headroom /
        sm->window), lo, hi, rate;
    SendState s = st;

    r0 = MAX (r0, MIN_RATE);
    if (run_window (sm, k, r0, &s, NULL)) {
      rate = r0;
    } else {
      /* the least rate that keeps every frame of this window in time */
      lo = r0;
      hi = r0;
      do {
        hi = MIN (hi * 2, MAX_RATE);
        s = st;
      } while (!run_window (sm, k, hi, &s, NULL) && hi < MAX_RATE);
      while (hi - lo > MAX (hi / 10000, 1)) {
        guint64 mid = lo + (hi - lo) / 2;
        s = st;
        if (run_window (sm, k, mid, &s, NULL))
          hi = mid;
        else
          lo = mid;
      }
      rate = hi;
      in->raised_windows++;
    }
    g_array_index (sm->rates, guint64, k) = rate;
    run_window (sm, k, rate, &st, NULL);
  }
  g_free (bytes_in);
  schedule_figures (sm);
}

/* ess[k], 0 past the array */
static inline gdouble
ess_at (const guint64 * ess, guint n_ess, guint k)
{
  return k < n_ess ? (gdouble) ess[k] : 0;
}

/* The schedule of compute_total() for the total @R: window k's
 * enhanced rate R − ess_k, until the fluid sender (reading ahead) has
 * sent every enhanced frame. Returns FALSE if a frame is late. */
static gboolean
total_schedule (GstTwoflowSmoothing * sm, guint64 R, const guint64 * ess,
    guint n_ess)
{
  SendState st;
  gboolean ok = TRUE;
  guint k;

  g_array_set_size (sm->rates, 0);
  st.i = 0;
  st.rem = (gdouble) ENH (sm, 0).bytes;
  for (k = 0; st.i < sm->enh->len; k++) {
    guint64 rate = R - (guint64) ess_at (ess, n_ess, k);

    g_array_append_val (sm->rates, rate);
    if (!run_window (sm, k, rate, &st, NULL))
      ok = FALSE;
  }
  return ok;
}

/**
 * gst_twoflow_smoothing_compute_total:
 * @essential_rates: (array length=n_essential): bit/s the session's
 *   essential flow sends in each window of the enhanced sender's time
 *   (window k: [kW, (k+1)W) after the release of the video's first
 *   frame); 0 after the last
 * @n_essential: their number
 *
 * Computes the schedule that keeps the session's total rate constant
 * (docs/system.md, "Enhanced-flow smoothing"): the enhanced flow is sent
 * ahead of its release (its sender reads the stored video as fast as it
 * may send) at R − ess_k in window k, with R the least constant that is at
 * least the session's mean total (essential rates over the video's
 * duration plus the enhanced flow's mean) times the headroom, at least
 * every ess_k plus 16 kbit/s, and at which every enhanced frame has left
 * by its deadline (release + lead). The windows end when the enhanced
 * flow is sent. Figures as compute()'s, and total_rate = R.
 */
void
gst_twoflow_smoothing_compute_total (GstTwoflowSmoothing * sm,
    const guint64 * essential_rates, guint n_essential)
{
  GstTwoflowSmoothingInfo *in = &sm->info;
  gdouble dur, need = 0, ess_bits = 0, w = (gdouble) sm->window, cum = 0;
  gdouble *ess_cum;             /* essential bits sent by the window's start */
  guint64 total, R, R_mean;
  guint i, k;

  sm->presend = TRUE;
  dur = prepare (sm, &total);
  if (sm->enh->len == 0)
    return;
  ess_cum = g_new0 (gdouble, n_essential + 1);
  for (k = 0; k < n_essential; k++) {
    ess_bits += essential_rates[k] * w / 1e9;
    ess_cum[k + 1] = ess_bits;
    need = MAX (need, (gdouble) essential_rates[k] + MIN_RATE);
  }
  /* the session's mean total: what both flows offer over the video */
  R_mean = dur > 0 ? (guint64) ceil ((ess_bits + total * 8.0) * 1e9 / dur *
      sm->headroom) : MIN_RATE;
  in->total_mean_rate = dur > 0 ? (guint64) ((ess_bits + total * 8.0) *
      1e9 / dur) : 0;
  /* deadlines: by frame i's deadline d_i the sender has sent
   * R d_i − E(d_i) enhanced bits (E: the essential bits sent by then),
   * which must cover frames 0..i: R ≥ (8 cum_i + E(d_i)) / d_i */
  for (i = 0; i < sm->enh->len; i++) {
    gdouble d = REL (sm, i) + sm->lead, e;
    guint kd = (guint) (d / w);

    cum += ENH (sm, i).bytes * 8.0;
    e = ess_cum[MIN (kd, n_essential)] + ess_at (essential_rates,
        n_essential, kd) * (d - kd * w) / 1e9;
    in->total_deadline_rate = MAX (in->total_deadline_rate, d > 0 ?
        (guint64) ceil ((cum + e) * 1e9 / d) : MAX_RATE);
  }
  g_free (ess_cum);
  R = MAX (MAX (R_mean, (guint64) ceil (need)), in->total_deadline_rate);
  R = MIN (R, MAX_RATE);
  /* the bound in doubles may miss by a rounding: never a late frame */
  for (i = 0; !total_schedule (sm, R, essential_rates, n_essential)
      && i < 64 && R < MAX_RATE; i++)
    R += R / 1000000 + 1;
  in->total_rate = R;
  schedule_figures (sm);
  in->total_rate = R;
}

/**
 * gst_twoflow_smoothing_get_info:
 * @info: (out caller-allocates): the figures of the last compute()
 */
void
gst_twoflow_smoothing_get_info (GstTwoflowSmoothing * sm,
    GstTwoflowSmoothingInfo * info)
{
  if (!sm->computed)
    gst_twoflow_smoothing_compute (sm);
  *info = sm->info;
}

/**
 * gst_twoflow_smoothing_get_rates:
 * @n_windows: (out): number of windows
 *
 * Returns: (transfer none) (array length=n_windows): bit/s per window,
 *   window k covering decode times [start + kW, start + (k+1)W)
 */
const guint64 *
gst_twoflow_smoothing_get_rates (GstTwoflowSmoothing * sm, guint * n_windows)
{
  if (!sm->computed)
    gst_twoflow_smoothing_compute (sm);
  *n_windows = sm->rates->len;
  return (const guint64 *) sm->rates->data;
}

/**
 * gst_twoflow_smoothing_window_at:
 * @dts: a record's decode time, in the time base of handle_frame()
 *
 * Returns: the window a record with this decode time is released in
 *   (clamped to the schedule)
 */
guint
gst_twoflow_smoothing_window_at (GstTwoflowSmoothing * sm, GstClockTime dts)
{
  guint64 k;

  if (!sm->computed)
    gst_twoflow_smoothing_compute (sm);
  if (sm->rates->len == 0 || !GST_CLOCK_TIME_IS_VALID (dts)
      || dts <= sm->start)
    return 0;
  k = (dts - sm->start) / sm->window;
  return (guint) MIN (k, sm->rates->len - 1);
}

/**
 * gst_twoflow_smoothing_rate_at:
 *
 * Returns: bit/s of the window a record with decode time @dts is released
 *   in: what the sender paces at from then on; 0 without a schedule
 */
guint64
gst_twoflow_smoothing_rate_at (GstTwoflowSmoothing * sm, GstClockTime dts)
{
  guint k = gst_twoflow_smoothing_window_at (sm, dts);

  return sm->rates->len ? g_array_index (sm->rates, guint64, k) : 0;
}

/**
 * gst_twoflow_smoothing_rate_at_time:
 * @t: the sender's time since it released the video's first frame
 * @next_change: (out) (optional): when the rate changes next, or
 *   GST_CLOCK_TIME_NONE after the last window
 *
 * Returns: bit/s of the window in progress at @t (the last window's after
 *   the schedule): what the sender paces at when it reads ahead
 *   (compute_total()); 0 without a schedule
 */
guint64
gst_twoflow_smoothing_rate_at_time (GstTwoflowSmoothing * sm,
    GstClockTime t, GstClockTime * next_change)
{
  guint64 k;

  if (!sm->computed)
    gst_twoflow_smoothing_compute (sm);
  if (next_change)
    *next_change = GST_CLOCK_TIME_NONE;
  if (sm->rates->len == 0)
    return 0;
  k = GST_CLOCK_TIME_IS_VALID (t) ? t / sm->window : 0;
  k = MIN (k, sm->rates->len - 1);
  if (next_change && k + 1 < sm->rates->len)
    *next_change = (k + 1) * sm->window;
  return g_array_index (sm->rates, guint64, k);
}

/**
 * gst_twoflow_smoothing_segment_rates:
 * @segment_duration: T
 * @p_hat: the loss allowance p̂ of cTCP's target (0.05)
 * @n_segments: (out): number of segments
 *
 * The essential flow's cTCP target per segment, S/(T(1−p̂)) with S the
 * essential bytes of segment k (decode times [start + kT, start + (k+1)T)).
 *
 * Returns: (transfer full) (array length=n_segments): bit/s per segment
 */
guint64 *
gst_twoflow_smoothing_segment_rates (GstTwoflowSmoothing * sm,
    GstClockTime segment_duration, gdouble p_hat, guint * n_segments)
{
  GstClockTime start = GST_CLOCK_TIME_NONE, last = 0;
  guint64 *rates;
  guint i, n;

  g_return_val_if_fail (segment_duration > 0 && p_hat < 1, NULL);
  for (i = 0; i < sm->frames->len; i++) {
    start = MIN (start, g_array_index (sm->frames, Frame, i).dts);
    last = MAX (last, g_array_index (sm->frames, Frame, i).dts);
  }
  n = GST_CLOCK_TIME_IS_VALID (start) ?
      (guint) ((last - start) / segment_duration) + 1 : 0;
  rates = g_new0 (guint64, MAX (n, 1));
  for (i = 0; i < sm->frames->len; i++) {
    Frame *f = &g_array_index (sm->frames, Frame, i);
    if (f->essential)
      rates[(f->dts - start) / segment_duration] += f->bytes;
  }
  for (i = 0; i < n; i++)
    rates[i] = (guint64) (rates[i] * 8e9 / (segment_duration * (1 - p_hat)));
  *n_segments = n;
  return rates;
}
