/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — erapsink's Libra property group (gsterapsinklibra.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gsterapsinklibra.h"
#include "gsterapsink.h"
#include "twoflowprops.h"

/* a default in seconds as the ns of its property (a constant expression) */
#define SECONDS_TO_NS(s) ((guint64) ((s) * GST_SECOND + 0.5))

#define DEFAULT_LIBRA_A             GST_ERAP_LIBRA_DEFAULT_A
#define DEFAULT_LIBRA_B             GST_ERAP_LIBRA_DEFAULT_B
#define DEFAULT_LIBRA_X             GST_ERAP_LIBRA_DEFAULT_X
#define DEFAULT_LIBRA_Y             GST_ERAP_LIBRA_DEFAULT_Y
#define DEFAULT_CAPACITY            0
#define DEFAULT_LIBRA_SEED          0
#define DEFAULT_LIBRA_COMPENSATION  TRUE
#define DEFAULT_LIBRA_STATE         GST_ERAP_LIBRA_RATE
#define DEFAULT_LIBRA_QUEUE_REF     0.1
#define DEFAULT_LIBRA_LOSS_DIVISOR  GST_ERAP_LIBRA_DEFAULT_LOSS_DIVISOR
#define DEFAULT_LIBRA_LOSS_MEMORY   GST_ERAP_LIBRA_DEFAULT_LOSS_MEMORY
#define DEFAULT_LIBRA_TCP_RTT       GST_ERAP_LIBRA_DEFAULT_TCP_RTT
#define DEFAULT_LIBRA_TCP_BASE_RTT  GST_ERAP_LIBRA_DEFAULT_TCP_BASE_RTT

void
gst_erap_libra_props_install (GObjectClass * klass, guint first_id)
{
  /**
   * GstErapSink:libra-a-time:
   *
   * Libra's A, ns: with the per-ACK increase alpha*T^2/((T+A)*W) and
   * the per-loss decrease W*B/(2(T+A)) the rate grows by alpha/(T+A)
   * packets/s per second and loses the fraction B/(2(T+A)) on loss.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_A_TIME,
      g_param_spec_uint64 ("libra-a-time", "Libra A",
          "Libra's A (ns) in alpha*T^2/((T+A)*W) and W*B/(2(T+A))", 0,
          100 * GST_SECOND, SECONDS_TO_NS (DEFAULT_LIBRA_A),
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-a:
   *
   * Deprecated: #GstErapSink:libra-a-time in seconds, as a double.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_A,
      g_param_spec_double ("libra-a", "Libra A",
          "Deprecated: use libra-a-time (ns); this one in seconds", 0, 100,
          DEFAULT_LIBRA_A, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          G_PARAM_DEPRECATED | GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-b-time:
   *
   * Libra's B, ns: the per-loss decrease is W*B/(2(T+A)).
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_B_TIME,
      g_param_spec_uint64 ("libra-b-time", "Libra B",
          "Libra's B (ns) in the per-loss decrease W*B/(2(T+A))", 0,
          100 * GST_SECOND, SECONDS_TO_NS (DEFAULT_LIBRA_B),
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-b:
   *
   * Deprecated: #GstErapSink:libra-b-time in seconds, as a double.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_B,
      g_param_spec_double ("libra-b", "Libra B",
          "Deprecated: use libra-b-time (ns); this one in seconds", 0, 100,
          DEFAULT_LIBRA_B, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          G_PARAM_DEPRECATED | GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-x:
   *
   * Libra's X in alpha = X*C*exp(-Y*beta).
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_X,
      g_param_spec_double ("libra-x", "Libra X",
          "Libra's X in alpha = X*C*exp(-Y*beta)", 0, 1000, DEFAULT_LIBRA_X,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-y:
   *
   * Libra's Y in alpha = X*C*exp(-Y*beta), beta = (T-Tmin)/(Tmax-Tmin):
   * how much the increase slows down as the bottleneck queue fills.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_Y,
      g_param_spec_double ("libra-y", "Libra Y",
          "Libra's Y in alpha = X*C*exp(-Y*beta)", 0, 100, DEFAULT_LIBRA_Y,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:capacity-bitrate:
   *
   * The bottleneck capacity C in Libra's alpha, bit/s (alpha takes it in
   * Mbit/s, as in the paper); 0 measures it from the dispersion of
   * back-to-back packet pairs in ACK arrival times.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_CAPACITY,
      g_param_spec_uint64 ("capacity-bitrate", "Capacity bitrate",
          "Bottleneck capacity for Libra, bit/s (0 = estimate with packet "
          "pairs)", 0, G_GUINT64_CONSTANT (1000000000000), DEFAULT_CAPACITY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:capacity:
   *
   * Deprecated alias of #GstErapSink:capacity-bitrate (docs/conventions.md).
   */
  twoflow_property_install_alias (klass,
      first_id + GST_ERAP_LIBRA_PROP_CAPACITY, "capacity", "capacity-bitrate");
  /**
   * GstErapSink:libra-seed:
   *
   * Seed of the generator that places Libra's packet pairs within their
   * slices; 0 picks one at random. Equal seeds repeat the same pacing.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_SEED,
      g_param_spec_uint64 ("libra-seed", "Libra seed",
          "Seed of Libra's pacing generator (0 = random)", 0, G_MAXUINT64,
          DEFAULT_LIBRA_SEED, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-compensation:
   *
   * Scales Libra's alpha by the measured reactions per lost packet, so that
   * reacting once per loss cluster (one RTT of packets) does not favour
   * long-RTT flows (docs/erap.md).
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_COMPENSATION,
      g_param_spec_boolean ("libra-compensation", "Libra compensation",
          "Scale Libra's alpha by reactions per loss (RTT-independent with "
          "one reaction per loss cluster)", DEFAULT_LIBRA_COMPENSATION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-state:
   *
   * What Libra's laws update: `rate` (default) keeps the rate (the laws
   * applied to W = rate*SRTT and converted back with the same SRTT) and
   * sends at rate*K/(K+q), q the queueing delay, K
   * #GstErapSink:libra-queue-ref-time: the same back-off for every flow;
   * `window` keeps W and sends at W/SRTT, as TCP Libra does (a growing
   * queue slows short-RTT flows more).
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_STATE,
      g_param_spec_enum ("libra-state", "Libra state",
          "What Libra's laws update (window: W/SRTT; rate: rate*K/(K+q))",
          GST_TYPE_ERAP_LIBRA_STATE, DEFAULT_LIBRA_STATE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-queue-ref-time:
   *
   * K in ns, with #GstErapSink:libra-state=rate: packets go at
   * rate*K/(K+q), q = SRTT - min RTT; 0 sends at the rate itself.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_QUEUE_REF_TIME,
      g_param_spec_uint64 ("libra-queue-ref-time", "Libra queue reference",
          "K (ns) in rate*K/(K+q) with libra-state=rate (0 = no "
          "scaling)", 0,
          100 * GST_SECOND, SECONDS_TO_NS (DEFAULT_LIBRA_QUEUE_REF),
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-queue-ref:
   *
   * Deprecated: #GstErapSink:libra-queue-ref-time in seconds, as a double.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_QUEUE_REF,
      g_param_spec_double ("libra-queue-ref", "Libra queue reference",
          "Deprecated: use libra-queue-ref-time (ns); this one in seconds", 0,
          100,
          DEFAULT_LIBRA_QUEUE_REF, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          G_PARAM_DEPRECATED | GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-loss-divisor:
   *
   * D in Libra's loss law W -= W*B/(D*(T+A)): 2 is DESIGN.md's
   * reconstruction (the 1/2), 1 the law without it (a loss takes twice
   * the fraction; at most 0.9 of W either way).
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_LOSS_DIVISOR,
      g_param_spec_double ("libra-loss-divisor", "Libra loss divisor",
          "D in Libra's loss law W -= W*B/(D*(T+A)) (2: the reconstruction)",
          0.5, 16, DEFAULT_LIBRA_LOSS_DIVISOR,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-loss-memory-time:
   *
   * How long after each loss reaction (ns) Libra's alpha has no delay
   * brake (e^(-Y*beta) taken as 1): beside loss-based TCP, which fills
   * the queue whatever Libra does, the brake would starve Libra
   * (docs/erap.md, "Libra beside TCP"). 0 keeps the brake always.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_LOSS_MEMORY_TIME,
      g_param_spec_uint64 ("libra-loss-memory-time", "Libra loss memory",
          "Time after a loss reaction without Libra's delay brake "
          "(ns, 0 = brake always)", 0,
          3600 * GST_SECOND, SECONDS_TO_NS (DEFAULT_LIBRA_LOSS_MEMORY),
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-loss-memory:
   *
   * Deprecated: #GstErapSink:libra-loss-memory-time in seconds, as a double.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_LOSS_MEMORY,
      g_param_spec_double ("libra-loss-memory", "Libra loss memory",
          "Deprecated: use libra-loss-memory-time (ns); this one in seconds",
          0, 3600,
          DEFAULT_LIBRA_LOSS_MEMORY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          G_PARAM_DEPRECATED | GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-reno-rtt:
   *
   * T_ref in ns: Libra's X*C is raised to at least 1.5*B/(D*T_ref^2),
   * so that in the loss-driven balance Libra is never less aggressive than
   * a Reno flow of RTT T_ref (on slow links, where alpha = X*C with C in
   * Mbit/s would starve it beside TCP; docs/erap.md). 0 gives alpha as
   * published.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_RENO_RTT,
      g_param_spec_uint64 ("libra-reno-rtt", "Libra Reno reference RTT",
          "Libra's alpha is at least that of Reno parity at this RTT "
          "(ns; 0 = alpha as published)", 0,
          10 * GST_SECOND, SECONDS_TO_NS (DEFAULT_LIBRA_TCP_RTT),
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-tcp-rtt:
   *
   * Deprecated: #GstErapSink:libra-reno-rtt in seconds, as a double.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_TCP_RTT,
      g_param_spec_double ("libra-tcp-rtt", "Libra Reno reference RTT",
          "Deprecated: use libra-reno-rtt (ns); this one in seconds", 0, 10,
          DEFAULT_LIBRA_TCP_RTT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          G_PARAM_DEPRECATED | GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-reno-base-rtt:
   *
   * T_0 in ns: Libra's X*C is also raised to at least
   * 1.5*B/(D*(T_0+q)^2), q = SRTT - Tmin the queueing delay averaged over
   * ~10 s (the same for every flow behind one queue), from the first loss
   * reaction on: never less aggressive than a Reno flow of base RTT T_0
   * behind the same queue. It matters beside TCP at short
   * queues, where drop-tail losses come synchronized and short-RTT TCP
   * flows take most of the link (docs/erap.md, "Libra beside TCP"). 0
   * turns this floor off.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_RENO_BASE_RTT,
      g_param_spec_uint64 ("libra-reno-base-rtt", "Libra Reno base RTT",
          "Libra's alpha is at least that of Reno parity at this "
          "base RTT plus the queueing delay (ns; 0 = off)", 0,
          10 * GST_SECOND, SECONDS_TO_NS (DEFAULT_LIBRA_TCP_BASE_RTT),
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:libra-tcp-base-rtt:
   *
   * Deprecated: #GstErapSink:libra-reno-base-rtt in seconds, as a double.
   */
  g_object_class_install_property (klass,
      first_id + GST_ERAP_LIBRA_PROP_TCP_BASE_RTT,
      g_param_spec_double ("libra-tcp-base-rtt", "Libra Reno base RTT",
          "Deprecated: use libra-reno-base-rtt (ns); this one in seconds", 0,
          10,
          DEFAULT_LIBRA_TCP_BASE_RTT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          G_PARAM_DEPRECATED | GST_PARAM_MUTABLE_READY));
}

void
gst_erap_libra_props_init (GstErapLibraParams * p)
{
  gst_erap_libra_params_init (p);
  p->a = DEFAULT_LIBRA_A;
  p->b = DEFAULT_LIBRA_B;
  p->x = DEFAULT_LIBRA_X;
  p->y = DEFAULT_LIBRA_Y;
  p->capacity = DEFAULT_CAPACITY;
  p->seed = DEFAULT_LIBRA_SEED;
  p->cluster_compensation = DEFAULT_LIBRA_COMPENSATION;
  p->state = DEFAULT_LIBRA_STATE;
  p->queue_ref = DEFAULT_LIBRA_QUEUE_REF;
  p->loss_divisor = DEFAULT_LIBRA_LOSS_DIVISOR;
  p->loss_memory = DEFAULT_LIBRA_LOSS_MEMORY;
  p->tcp_rtt = DEFAULT_LIBRA_TCP_RTT;
  p->tcp_base_rtt = DEFAULT_LIBRA_TCP_BASE_RTT;
}

gboolean
gst_erap_libra_props_set (GstErapLibraParams * p, guint id,
    const GValue * value)
{
  switch (id) {
    case GST_ERAP_LIBRA_PROP_A:
      p->a = g_value_get_double (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_A_TIME:
      p->a = g_value_get_uint64 (value) / (gdouble) GST_SECOND;
      return TRUE;
    case GST_ERAP_LIBRA_PROP_B:
      p->b = g_value_get_double (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_B_TIME:
      p->b = g_value_get_uint64 (value) / (gdouble) GST_SECOND;
      return TRUE;
    case GST_ERAP_LIBRA_PROP_X:
      p->x = g_value_get_double (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_Y:
      p->y = g_value_get_double (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_CAPACITY:
      p->capacity = g_value_get_uint64 (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_SEED:
      p->seed = g_value_get_uint64 (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_COMPENSATION:
      p->cluster_compensation = g_value_get_boolean (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_STATE:
      p->state = g_value_get_enum (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_QUEUE_REF:
      p->queue_ref = g_value_get_double (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_QUEUE_REF_TIME:
      p->queue_ref = g_value_get_uint64 (value) / (gdouble) GST_SECOND;
      return TRUE;
    case GST_ERAP_LIBRA_PROP_LOSS_DIVISOR:
      p->loss_divisor = g_value_get_double (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_LOSS_MEMORY:
      p->loss_memory = g_value_get_double (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_LOSS_MEMORY_TIME:
      p->loss_memory = g_value_get_uint64 (value) / (gdouble) GST_SECOND;
      return TRUE;
    case GST_ERAP_LIBRA_PROP_TCP_RTT:
      p->tcp_rtt = g_value_get_double (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_RENO_RTT:
      p->tcp_rtt = g_value_get_uint64 (value) / (gdouble) GST_SECOND;
      return TRUE;
    case GST_ERAP_LIBRA_PROP_TCP_BASE_RTT:
      p->tcp_base_rtt = g_value_get_double (value);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_RENO_BASE_RTT:
      p->tcp_base_rtt = g_value_get_uint64 (value) / (gdouble) GST_SECOND;
      return TRUE;
    default:
      return FALSE;
  }
}

gboolean
gst_erap_libra_props_get (const GstErapLibraParams * p, guint id,
    GValue * value)
{
  switch (id) {
    case GST_ERAP_LIBRA_PROP_A:
      g_value_set_double (value, p->a);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_A_TIME:
      g_value_set_uint64 (value, twoflow_seconds_to_ns (p->a));
      return TRUE;
    case GST_ERAP_LIBRA_PROP_B:
      g_value_set_double (value, p->b);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_B_TIME:
      g_value_set_uint64 (value, twoflow_seconds_to_ns (p->b));
      return TRUE;
    case GST_ERAP_LIBRA_PROP_X:
      g_value_set_double (value, p->x);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_Y:
      g_value_set_double (value, p->y);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_CAPACITY:
      g_value_set_uint64 (value, (guint64) p->capacity);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_SEED:
      g_value_set_uint64 (value, p->seed);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_COMPENSATION:
      g_value_set_boolean (value, p->cluster_compensation);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_STATE:
      g_value_set_enum (value, p->state);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_QUEUE_REF:
      g_value_set_double (value, p->queue_ref);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_QUEUE_REF_TIME:
      g_value_set_uint64 (value, twoflow_seconds_to_ns (p->queue_ref));
      return TRUE;
    case GST_ERAP_LIBRA_PROP_LOSS_DIVISOR:
      g_value_set_double (value, p->loss_divisor);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_LOSS_MEMORY:
      g_value_set_double (value, p->loss_memory);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_LOSS_MEMORY_TIME:
      g_value_set_uint64 (value, twoflow_seconds_to_ns (p->loss_memory));
      return TRUE;
    case GST_ERAP_LIBRA_PROP_TCP_RTT:
      g_value_set_double (value, p->tcp_rtt);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_RENO_RTT:
      g_value_set_uint64 (value, twoflow_seconds_to_ns (p->tcp_rtt));
      return TRUE;
    case GST_ERAP_LIBRA_PROP_TCP_BASE_RTT:
      g_value_set_double (value, p->tcp_base_rtt);
      return TRUE;
    case GST_ERAP_LIBRA_PROP_RENO_BASE_RTT:
      g_value_set_uint64 (value, twoflow_seconds_to_ns (p->tcp_base_rtt));
      return TRUE;
    default:
      return FALSE;
  }
}
