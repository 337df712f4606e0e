/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP: Libra, RTT-fair congestion control (see docs/erap.md).
 *
 * Window laws of "Balancing Video on Demand Flows over Links with
 * Heterogeneous Delays" applied to W = rate * T (T = SRTT, seconds; by
 * default the rate is the state and packets go at rate * K/(K+q), q the
 * queueing delay: a back-off with the queue that is the same for every
 * flow):
 *   per ACK   W += alpha * T^2 / ((T + A) * W)
 *   per loss  W -= W * B / (2 (T + A))
 *   alpha = X * C * exp (-Y * beta),  beta = (T - Tmin) / (Tmax - Tmin)
 * C is the bottleneck capacity (in Mbit/s in alpha, as in the paper;
 * bit/s in the parameters and the state), configured or estimated from the
 * dispersion of back-to-back packet pairs as seen in ACK arrival times.
 * Packets leave in pairs, one pair at a random time within each of the W/2
 * slices of an RTT (a seeded generator: runs are reproducible).
 *
 * Deviation (docs/erap.md): ERAP reacts once per loss cluster (one window,
 * one RTT of packets), so with a loss probability p per packet a flow
 * reacts to only about 1/(1 + pW) of its losses, and W = R*T grows with
 * T: long flows would get more. alpha is therefore multiplied by rho, the
 * measured reactions per lost packet, which restores R = sqrt(2 alpha /
 * (p B)) whatever the RTT.
 *
 * Deviation 2 (docs/erap.md, "Libra beside TCP"): e^(-Y beta) is a delay
 * brake that keeps Libra flows among themselves from overflowing the
 * queue. Beside loss-based TCP, which keeps the queue filled and
 * overflows it every few seconds whatever Libra does, the brake only hands
 * TCP the bandwidth (three Libra flows got 0.79 of 10 Mbit/s beside three
 * cubic flows). The rate state's K/(K+q) is a second delay brake of the
 * same kind. So for loss_memory seconds after each loss reaction Libra is
 * loss-driven: alpha = X C (beta taken as 0) and packets go at the rate
 * itself; a flow that keeps meeting losses runs the loss-driven law whose
 * RTT-independence is derived above. After a quiet loss_memory both
 * brakes are back. At each switch the rate state is converted so that the
 * rate sent does not jump. Flows behind one queue see the same overflows,
 * so they switch alike and alpha stays common.
 *
 * Deviation 3 (a floor on alpha's scale): the balance R = sqrt(D alpha /
 * (p B)) (D = 2, the loss law's divisor) equals Reno's sqrt(1.5/p)/T at
 * T = sqrt(1.5 B / (D alpha)). With alpha = X C and C in Mbit/s that is
 * 61 ms at the paper's 100 Mbit/s but 194 ms at 10 Mbit/s, where Libra
 * beside TCP flows of 30-180 ms is starved by its own law. X C is
 * therefore raised to at least 1.5 B / (D T_ref^2) (75 for T_ref =
 * 100 ms): never less aggressive than a Reno flow of T_ref. Above
 * 37.5 Mbit/s (X = 2) the paper's alpha is untouched; the floor is a
 * constant, so flows sharing a link keep a common alpha.
 *
 * Deviation 4 (the floor behind the queue; docs/erap.md): beside TCP at
 * 100 Mbit/s with the paper's 83-packet buffer Libra got 0.48 of a cubic
 * flow's mean rate. Drop-tail losses come synchronized, and then a TCP
 * flow's rate goes with 1/RTT^2: the 20 ms cubic flow takes 37 of 100
 * Mbit/s and decides the mean. A TCP flow's RTT is its base RTT plus the
 * queue, which Libra measures (q = SRTT - Tmin averaged over ~10 s, the
 * same for every flow behind one queue). So X C is also raised to 1.5 B / (D (T_0 + q)^2):
 * never less aggressive than a Reno flow of base RTT T_0 (30 ms) behind
 * the same queue. With a short queue (83 packets at 100 Mbit/s: q of a
 * few ms) that is alpha ~ 650; with the queue a loss-based competitor
 * keeps at 10 Mbit/s (80 packets, q ~ 75 ms) or at 1500 packets (q ~
 * 140 ms) it is below the other terms and changes nothing. q is common
 * to the flows behind a queue, so alpha stays common and the law
 * RTT-independent.
 *
 * Deviation 5 (the start is loss-driven): before its first loss a flow
 * does not know whether the queue it sees is its own; behind a standing
 * queue of loss-based TCP the brakes held the long-RTT flows near their
 * initial 1 Mbit/s for 10-20 s (1500 packets, 100 Mbit/s). The start
 * therefore opens 5 s of the loss memory (the whole 10 s made 8 Libra
 * flows overflow 1500 packets among themselves and stay loss-driven), and
 * the floor of deviation 4 applies from the first loss reaction on.
 *
 * Deviation 6 (the compensation counts at most 3 loss events per
 * reaction): behind a drop-tail queue overflowed by loss-based TCP a flow
 * loses several separate packets per overflow episode, and rho divided
 * alpha by the episode's length, not by an RTT bias (eraplibra.c).
 *
 * Deviation 7 (undo): a run of timeout reactions whose first packet is
 * acknowledged after all was a stalled host, not congestion; the sender
 * calls the law's undo and Libra restores the state from before it.
 */
#ifndef __GST_ERAP_LIBRA_H__
#define __GST_ERAP_LIBRA_H__

#include <gst/erap/erapcc.h>
#include <gst/erap/erap-prelude.h>

G_BEGIN_DECLS

TWOFLOW_ERAP_API const GstErapCongestionOps gst_erap_cc_libra;

#define GST_ERAP_LIBRA_DEFAULT_A 1.0
#define GST_ERAP_LIBRA_DEFAULT_B 1.0
#define GST_ERAP_LIBRA_DEFAULT_X 2.0
#define GST_ERAP_LIBRA_DEFAULT_Y 2.0
/* the 2 of the loss law W -= W B / (2 (T + A)); DESIGN.md's reconstruction */
#define GST_ERAP_LIBRA_DEFAULT_LOSS_DIVISOR 2.0
/* seconds after a loss reaction without the delay brake (see above) */
#define GST_ERAP_LIBRA_DEFAULT_LOSS_MEMORY 10.0
/* the RTT of the Reno flow whose rate alpha's floor matches (see above) */
#define GST_ERAP_LIBRA_DEFAULT_TCP_RTT 0.1
/* the base RTT of the Reno flow behind the same queue whose rate alpha's
 * second floor matches (deviation 4) */
#define GST_ERAP_LIBRA_DEFAULT_TCP_BASE_RTT 0.03
/* IPv4 + UDP bytes added to each datagram on the wire, for packet pairs */
#define GST_ERAP_LIBRA_WIRE_OVERHEAD 28

/**
 * GstErapLibraStateVar:
 * @GST_ERAP_LIBRA_WINDOW: W is the state; packets go at W/SRTT (TCP Libra)
 * @GST_ERAP_LIBRA_RATE: the rate is the state (the laws applied to W =
 *   rate*T and converted back with the same T); packets go at the rate
 *   times K/(K+q), q = SRTT - Tmin, K = queue_ref
 */
typedef enum {
  GST_ERAP_LIBRA_WINDOW = 0,
  GST_ERAP_LIBRA_RATE = 1,
} GstErapLibraStateVar;

typedef struct {
  gdouble a;                    /* seconds */
  gdouble b;                    /* seconds */
  gdouble x;
  gdouble y;
  gdouble capacity;             /* bit/s; 0: estimate with packet pairs */
  guint64 seed;                 /* of the pacing generator */
  gboolean cluster_compensation;        /* scale alpha by reactions per loss
                                         * (docs/erap.md); default TRUE */
  GstErapLibraStateVar state;   /* what the laws update; default rate */
  gdouble queue_ref;            /* K, seconds (rate state), default 0.1;
                                 * 0: no scaling */
  gdouble loss_divisor;         /* D in W -= W B / (D (T + A)); default 2
                                 * (the reconstruction's 1/2), 1: without */
  gdouble loss_memory;          /* seconds after a loss reaction without
                                 * the delay brakes (beta taken as 0, no
                                 * K/(K+q)), default 10; 0: never */
  gdouble tcp_rtt;              /* T_ref, seconds: X C is raised to at
                                 * least 1.5 B / (D T_ref^2), default 0.1;
                                 * 0: alpha as published */
  gdouble tcp_base_rtt;         /* T_0, seconds: X C is raised to at
                                 * least 1.5 B / (D (T_0 + q)^2), q =
                                 * SRTT - Tmin, default 0.03; 0: no such
                                 * floor (deviation 4) */
} GstErapLibraParams;

typedef struct {
  gdouble window;               /* W, packets */
  gdouble alpha;
  gdouble beta;
  gdouble capacity;             /* C in use, bit/s */
  gdouble capacity_estimate;    /* from packet pairs, bit/s; 0: none yet */
  guint pair_samples;           /* packet-pair samples taken */
  gdouble reactions_per_loss;   /* rho, the compensation factor of alpha */
  gboolean loss_driven;         /* within loss_memory of a loss reaction:
                                 * alpha without e^(-Y beta), no K/(K+q) */
} GstErapLibraState;

TWOFLOW_ERAP_API
void gst_erap_libra_params_init (GstErapLibraParams * p);
/* Sets the parameters of a Libra law; FALSE if @cc is not Libra. */
TWOFLOW_ERAP_API
gboolean gst_erap_libra_configure (GstErapCC * cc,
    const GstErapLibraParams * p);
TWOFLOW_ERAP_API
gboolean gst_erap_libra_get_state (GstErapCC * cc, GstErapLibraState * st);

G_END_DECLS

#endif
