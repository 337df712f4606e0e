/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The session rate controller: one per server session (both flows), a
 * sans-IO core (no clock, socket or thread of its own). It estimates what
 * the path can carry for this session and answers with the rate the
 * transcoder (and the rUDP sender) should use.
 *
 * Two estimates, the higher wins:
 * - the delay/delivery-rate model (as GCC, draft-ietf-rmcat-gcc, and BBR):
 *   queueing delay = the latest RTT minus the smallest of the last
 *   min-rtt-window, per transport (the largest over the transports whose
 *   latest sample is of the last second and not 500 ms older than
 *   another's). While it is below qdelay-threshold (no
 *   queue of our making or anyone's), no ECN mark came and the raw loss
 *   fraction stays below loss-threshold, the rate grows (additively near
 *   the rate where congestion was last seen, for a second of clean path;
 *   multiplicatively, by increase per second, further away or later,
 *   accelerating while the RTT stays clean up to x3 per second); random
 *   loss alone never lowers it. Heavy loss is congestion only with a
 *   sign of it: a queue (beyond qdelay-threshold) in any transport's RTT
 *   samples of the loss window — those handle_clean_rtt() does not take
 *   too — or loss that persists: above loss-threshold still without the
 *   window's worst loss-burst (a loss burst on a clean path, as
 *   Gilbert-Elliott's, is no congestion; a policer's loss persists), or
 *   that continues, in the latest loss-burst, heavy loss that was
 *   congestion within the last 2 s; for a session of few packets, loss
 *   that persists over 3 s; and heavy loss before any window showed the
 *   path clean (the RTT's minimum may hold a queue that stood before the
 *   session came).
 *   When a queue builds (or CE marks, or heavy loss) it is set to
 *   decrease x the rate the receiver got over the last delivery-window,
 *   at most once per (SRTT + 100 ms): a capacity drop is followed within
 *   a few RTTs of the queue's growth.
 * - the TCP-fair floor (TFRC, RFC 5348): the throughput equation
 *   X = s / (R*sqrt(2bp/3) + t_RTO*(3*sqrt(3bp/8))*p*(1+32p^2)), b = 1,
 *   t_RTO = 4R, with the loss event rate p from the average loss interval
 *   method (8 intervals, weights 1,1,1,1,0.8,0.6,0.4,0.2; losses within
 *   one RTT of an event's first loss are one event; the open interval
 *   counts when it raises the mean; the first interval synthesized from
 *   the delivered rate, section 6.3.1), bounded by 2 x the delivered rate
 *   and, while a queue grows, by the delivered rate — by decrease x the
 *   delivered rate when the equation allows more than twice it (a
 *   capacity drop: few loss events).
 * - the delay model, competing with a queue the session does not cause:
 *   one that stood
 *   through 3 of the delay model's decreases and 2 s without emptying,
 *   without CE or heavy loss, within the lateness budget (250 ms without
 *   one) and with loss events for which the equation gives a TCP at
 *   most 1.5 x the delivered rate — a competing TCP's drop-tail queue,
 *   which the session's decreases do not drain (after a capacity drop
 *   one loss event in 10 s allows far more) —, or beyond the budget,
 *   whatever the loss events, once it stood 3 s (EPISODE_MAX) longer and
 *   does not drain now (a bloated queue: an episode of our own ends
 *   within 3 s; the count of decreases survives a gap of the RTT samples
 *   up to 3 s); or within the budget without a loss event since it
 *   began, once it stood as long and does not drain now (a bulk BBR
 *   flow's, which does not overflow the queue), and a loss-free queue
 *   back within 3 s of that (BBR's ProbeRTT empties its queue every
 *   10 s); or, when the newest RTT information is a sample
 *   handle_clean_rtt() left out (such a queue seen by the rUDP
 *   receiver). Then the queue is no input: the rate grows as CUBIC's
 *   window (RFC 9438) in rate units, C = 0.4 packets/s^3 at the SRTT but
 *   at most 250 ms, back towards the rate at the last decrease (at the
 *   start, what got through when the queue began; fast convergence), or
 *   by a packet per (RTT + 100 ms) per (RTT + 100 ms) if that is more,
 *   while the session uses 0.8 of it (RFC 7661's application-limited
 *   flow), and on a new loss event it is set to decrease x the delivered
 *   rate (at most halved), not below the TCP floor, at most once per
 *   (SRTT + 100 ms). Beside a bulk TCP the delay
 *   model backed off on every sample (the delivered rate of an
 *   application-limited session follows its target down), or, with the
 *   samples left out, grew to the ceiling.
 *
 * The lateness rule (lateness-budget > 0): what is sent now was coded
 * earlier, so a drop of the path leaves a backlog coded at the old rate at
 * the sender, and the frames behind it arrive late. The lateness of what
 * leaves now is estimated as the sender's backlog over its rate plus the
 * path's queueing delay; beyond the budget, while the path is congested
 * (or the decrease's queue drains), the coding target (code_target) is the
 * target x (1 - excess / drain-time), at least a quarter of it and the
 * code floor (set_code_floor(): below it the transcoder drops frames),
 * so that the backlog drains within drain-time; on a clean path the sender may instead
 * send faster (catchup_rate: its rate + the backlog beyond a quarter of
 * the budget / drain-time, at most twice the target).
 *
 * Inputs: per transport (a "source", 0..GST_TWOFLOW_SESSION_RATE_MAX_SOURCES-1)
 * its RTT samples and its cumulative counters (packets sent or expected,
 * packets lost, bytes delivered, ECN-capable and CE-marked packets), and
 * loss events of transports that only report events. Output: poll() on
 * the update grid (update-interval) gives the new target when it changed;
 * next_wakeup() says when the next update is due.
 */
#ifndef __GST_TWOFLOW_SESSION_RATE_H__
#define __GST_TWOFLOW_SESSION_RATE_H__

#include <gst/gst.h>
#include <gst/ratecontrol/ratecontrol-prelude.h>

G_BEGIN_DECLS

#define GST_TWOFLOW_SESSION_RATE_MAX_SOURCES 4

/* defaults (see GstTwoflowSessionRateConfig) */
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_PACKET_SIZE 1400
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_QDELAY_THRESHOLD (30 * GST_MSECOND)
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_DECREASE 0.85
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_INCREASE 0.25
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_LOSS_THRESHOLD 0.10
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_UPDATE_INTERVAL (100 * GST_MSECOND)
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_DELIVERY_WINDOW (500 * GST_MSECOND)
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_MIN_RTT_WINDOW (30 * GST_SECOND)
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_DRAIN_TIME (1 * GST_SECOND)
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_QUEUE_RISE 0.2
#define GST_TWOFLOW_SESSION_RATE_DEFAULT_LOSS_BURST (400 * GST_MSECOND)

typedef struct {
  guint64 min_bitrate;          /* never below (bit/s; 0: a packet per second) */
  guint64 max_bitrate;          /* never above (bit/s; 0: no bound) */
  guint64 initial_bitrate;      /* start (bit/s; 0: max_bitrate) */
  guint packet_size;            /* s of the equation, bytes */
  GstClockTime qdelay_threshold;        /* queueing delay that is congestion */
  gdouble decrease;             /* on congestion: rate = decrease x delivered */
  gdouble increase;             /* multiplicative increase per second */
  gdouble loss_threshold;       /* raw loss fraction that is congestion */
  gboolean tcp_floor;           /* the TFRC equation as the floor */
  GstClockTime update_interval;
  GstClockTime delivery_window; /* delivered rate measured over */
  GstClockTime min_rtt_window;  /* base RTT kept this long */
  /* the lateness rule (0: none): data waiting at the sender (its backlog,
   * handle_backlog()) plus the path's queueing delay beyond this budget
   * lowers the coding target (congested, hold) or lets the sender catch
   * up (clean path), within drain_time */
  GstClockTime lateness_budget;
  GstClockTime drain_time;
  /* handle_clean_rtt(): a queue that rose from an empty path at this many
   * seconds of queue per second or faster is ours, as one beyond the
   * lateness budget (0: off) */
  gdouble queue_rise;
  /* heavy loss (above loss_threshold) is congestion only with a queue in
   * some transport's RTT within the loss window, or when it is still
   * above the threshold without its worst loss_burst, or above it in the
   * latest loss_burst within 2 s of heavy loss taken as congestion (a
   * loss burst on a clean path is no congestion; 0: every heavy loss
   * is) */
  GstClockTime loss_burst;
} GstTwoflowSessionRateConfig;

typedef enum {
  GST_TWOFLOW_SESSION_RATE_STATE_START = 0,     /* nothing measured yet */
  GST_TWOFLOW_SESSION_RATE_STATE_INCREASE,      /* multiplicative */
  GST_TWOFLOW_SESSION_RATE_STATE_NEAR,  /* additive, near the last congestion */
  GST_TWOFLOW_SESSION_RATE_STATE_HOLD,  /* a decrease taking effect */
  GST_TWOFLOW_SESSION_RATE_STATE_CONGESTED,     /* queue / CE / heavy loss */
} GstTwoflowSessionRateState;

typedef struct {
  guint64 target;               /* bit/s, the output */
  guint64 delay_rate;           /* the delay/delivery model's, bit/s */
  guint64 tcp_rate;             /* the TFRC floor (0: no loss yet), bit/s */
  guint64 delivered_rate;       /* over delivery-window, bit/s */
  guint64 source_delivered[GST_TWOFLOW_SESSION_RATE_MAX_SOURCES];       /* of each */
  gdouble loss_event_rate;      /* p of the equation */
  gdouble loss_fraction;        /* raw, packets lost / sent, last second */
  GstClockTime srtt;            /* smoothed over the transports */
  GstClockTime min_rtt;         /* of the transport with the latest sample */
  GstClockTime qdelay;          /* latest queueing delay (max over sources) */
  GstTwoflowSessionRateState state;
  guint64 packets, lost;        /* totals over the sources */
  guint64 ce_marked;
  guint64 loss_events;
  guint64 decreases;            /* delay-model decreases */
  guint64 decreases_qdelay, decreases_ecn, decreases_loss;
  guint64 updates;              /* poll() updates */
  guint64 min_target, max_target;       /* since the start, bit/s */
  /* the lateness rule */
  GstClockTime lateness;        /* sender backlog + queueing delay */
  guint64 code_target;          /* what to code, bit/s (<= target) */
  guint64 catchup_rate;         /* the sender may send this (0: its own) */
  guint64 lateness_cuts;        /* updates with code_target < target */
  guint64 jitter_rtts;          /* handle_smoothed_rtt(): taken as jitter */
  guint64 loss_bursts;          /* updates with heavy loss taken as a burst */
  guint64 competing_updates;    /* beside a queue not of the session's */
  guint64 quiet_updates;        /* of those, beside a loss-free queue */
} GstTwoflowSessionRateStats;

typedef struct _GstTwoflowSessionRate GstTwoflowSessionRate;

TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_config_init (GstTwoflowSessionRateConfig * c);
TWOFLOW_RATECONTROL_API
GstTwoflowSessionRate *gst_twoflow_session_rate_new (const
    GstTwoflowSessionRateConfig * c);
TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_free (GstTwoflowSessionRate * sr);
/* min/max may change while running (the video's rate becomes known) */
void gst_twoflow_session_rate_set_limits (GstTwoflowSessionRate * sr,
    guint64 min_bitrate, guint64 max_bitrate);

/* An RTT sample of transport @source (its SRTT is fine). */
TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_handle_rtt (GstTwoflowSessionRate * sr,
    guint source, GstClockTime rtt, GstClockTime now);
/* An RTT sample of transport @source that counts when it shows no queue
 * (within qdelay-threshold of the source's minimum; the minimum follows
 * every sample) — a clean path ends a congestion, lets the increase
 * accelerate and supersedes another transport's older sample — or a
 * queue longer than the lateness budget (250 ms without one), which no
 * competing TCP's drop-tail queue of a few Mbit/s reaches: then every
 * sample counts until one shows no queue (the decrease's queue seen
 * draining), for at most 3 s, after which only clean ones count until one
 * comes. So is a queue that rose from a clean sample at queue-rise or
 * faster (our own rate overshooting a drop: a competing TCP grows a
 * queue by a packet per RTT, a few tens of ms per second) while no other
 * transport's RTT is fresh (one fed with every sample sees the queue
 * itself). Any other
 * queue is left to the other inputs. For a flow that
 * cannot tell its own queue from a competing flow's: the rUDP receiver's
 * samples beside a bulk TCP, whose queue never empties, read as
 * congestion took the target to a twentieth of the fair share (the
 * delivered-rate floor). */
TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_handle_clean_rtt (GstTwoflowSessionRate * sr,
    guint source, GstClockTime rtt, GstClockTime now);
/* A transport's smoothed RTT with its variation (TCP's srtt and rttvar):
 * as handle_rtt(), but a queue within twice the variation while another
 * transport's latest sample (under 500 ms old) showed no queue is
 * jitter, not a queue, and is no input. A host that schedules the
 * sender, the receiver or the link late inflates a TCP SRTT in spikes
 * (measured on a loaded 2-core machine: 109 ms with rttvar 51 ms against
 * 65/7 ms, while the rUDP RTT stayed at the path's): read as a queue it
 * took six decreases; a real queue shows on every flow that crosses it.
 * Not jitter: an SRTT that rose at each of its last two reads, by
 * queue-rise or faster over both (a queue building, while the other
 * transport's sample is still the path's before it). */
TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_handle_smoothed_rtt (GstTwoflowSessionRate * sr,
    guint source, GstClockTime srtt, GstClockTime rttvar, GstClockTime now);
/* Cumulative counters of transport @source at @now: packets it sent (or
 * the receiver expected), of which lost, and bytes delivered (acked or
 * received). Counters that go back (a restart) are taken as new. */
TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_handle_counters (GstTwoflowSessionRate * sr,
    guint source, guint64 packets, guint64 lost, guint64 delivered_bytes,
    GstClockTime now);
/* Cumulative ECN counters: packets received ECN-capable, of which CE. */
TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_handle_ecn (GstTwoflowSessionRate * sr,
    guint source, guint64 ect, guint64 ce, GstClockTime now);
/* A loss reported only as an event (e.g. ERAP's loss, a cTCP dupack or
 * rexmt without counters): one loss, joined with others of the same RTT
 * into one loss event. @srtt: the transport's (0/NONE: unknown). */
TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_handle_loss_event (GstTwoflowSessionRate * sr,
    guint source, GstClockTime srtt, GstClockTime now);

/* What waits at transport @source's sender at @now: @bytes queued, sent
 * at @rate bit/s (the lateness rule's input). */
TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_handle_backlog (GstTwoflowSessionRate * sr,
    guint source, guint64 bytes, guint64 rate, GstClockTime now);

/* The lateness rule never codes below this (bit/s; 0: a quarter of the
 * target): what the transcoder needs not to drop frames. */
TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_set_code_floor (GstTwoflowSessionRate * sr,
    guint64 bitrate);

/* Runs the updates due by @now; TRUE (and *@target) when the target
 * changed since the last TRUE. */
TWOFLOW_RATECONTROL_API
gboolean gst_twoflow_session_rate_poll (GstTwoflowSessionRate * sr,
    GstClockTime now, guint64 * target);
/* When poll() has an update to run (NONE before any input). */
GstClockTime gst_twoflow_session_rate_next_wakeup (GstTwoflowSessionRate * sr);
TWOFLOW_RATECONTROL_API
guint64 gst_twoflow_session_rate_get_target (GstTwoflowSessionRate * sr);
/* The target less the lateness rule's cut (= target without the rule) */
TWOFLOW_RATECONTROL_API
guint64 gst_twoflow_session_rate_get_code_target (GstTwoflowSessionRate * sr);
TWOFLOW_RATECONTROL_API
void gst_twoflow_session_rate_get_stats (GstTwoflowSessionRate * sr,
    GstTwoflowSessionRateStats * st);
TWOFLOW_RATECONTROL_API
const gchar *gst_twoflow_session_rate_state_name (GstTwoflowSessionRateState
    state);

/* The TCP throughput equation of RFC 5348 (b = 1, t_RTO = 4R), bit/s, for
 * @s bytes per packet, RTT @r seconds and loss event rate @p (> 0). */
TWOFLOW_RATECONTROL_API
gdouble gst_twoflow_tfrc_rate (gdouble s, gdouble r, gdouble p);
/* The p for which gst_twoflow_tfrc_rate() gives @rate (bisection). */
TWOFLOW_RATECONTROL_API
gdouble gst_twoflow_tfrc_loss_for_rate (gdouble s, gdouble r, gdouble rate);

G_END_DECLS

#endif /* __GST_TWOFLOW_SESSION_RATE_H__ */
