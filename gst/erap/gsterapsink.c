/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — erapsink */
/**
 * SECTION:element-erapsink
 * @title: erapsink
 * @see_also: erapsrc, udpsink
 *
 * Sends each buffer as one message, reliably and in order, to an erapsrc
 * over ERAP: RAP's TCP-friendly rate-based congestion control (an
 * inter-packet gap that grows by one packet per RTT per RTT and halves on
 * loss) with retransmission of lost packets under new sequence numbers.
 *
 * With #GstErapSink:congestion-control=libra the rate follows Libra's
 * RTT-fair laws instead (flows with different RTTs on one bottleneck get
 * equal shares; parameters #GstErapSink:libra-a-time, #GstErapSink:libra-b-time,
 * #GstErapSink:libra-x, #GstErapSink:libra-y and #GstErapSink:capacity-bitrate),
 * and packets leave in back-to-back pairs at random times within each of
 * the W/2 slices of an RTT (docs/erap.md).
 * Buffers larger than the MTU are fragmented; the receiver restores their
 * boundaries.
 *
 * All erapsinks of a process that bind the same #GstErapSink:bind-address
 * and #GstErapSink:bind-port share one UDP socket and one thread, which
 * receives the ACKs of all of them; sending is paced by timers on the
 * pipeline clock (#GstClockID), so there is no thread per session.
 *
 * #GstErapSink:protocol=rap makes the session the RAP baseline of the
 * comparisons (docs/erap.md): RAP's 24-byte header on data and ACKs, one
 * ACK datagram per packet (the erapsrc must have protocol=rap too), a
 * socket and an ACK thread of its own (a thread per session), no UDP_SEGMENT
 * runs, and RAP's IPG and RTT timers running while there is nothing to
 * send. The rate law is the same (#GstErapSink:congestion-control).
 *
 * On each loss reaction (one per loss cluster) the sink sends a
 * `GstNetworkCongestion` event upstream (`type=loss`, `estimated-bitrate` =
 * the new rate) and posts the same structure as an element message.
 * Every #GstErapSink:scheduler-interval while the session has data to
 * send it posts an `erap-scheduler` element message with the scheduler's
 * view (the fields `total-exit-bandwidth`, `used-bandwidth`,
 * `available-bandwidth`, `queued-bits-total`, `queued-bits`, `sessions`,
 * `active-sessions`, as in the stats below). The timer of these reports
 * is one of the session's rate timers: off while the session is idle.
 *
 * Rendering blocks while more than #GstErapSink:max-queue-bytes are not
 * yet acknowledged (backpressure, never drops). At end of stream the sink
 * sends an in-band end of stream and posts EOS only once everything is
 * acknowledged. Lost data is never reported as success: when
 * #GstErapSink:linger expires with data unacknowledged the sink posts an
 * element error telling how many bytes were not acknowledged (and no
 * EOS); when no ACK at all has come #GstErapSink:connect-timeout after
 * the first packet was sent (no receiver, an unreachable host, a firewall,
 * a wrong passphrase or key at the receiver) it posts an error "Could not
 * connect to HOST:PORT" and stops sending, as srtsink does when its peer
 * never answers; and when, later, data has been outstanding with no ACK
 * for as long (the receiver gone), an error "Lost the receiver
 * HOST:PORT" (rendering would otherwise wait for ever on a full queue).
 *
 * The #GstErapSink:stats structure `application/x-erapsink-stats` has:
 *
 * * `rate` (guint64): allowed sending rate of this session, bit/s
 * * `ipg`, `srtt`, `rto` (guint64): inter-packet gap, smoothed RTT and
 *   retransmission timeout, ns
 * * `packets-sent` (guint64): data packets sent, retransmissions included
 * * `packets-retransmitted` (guint64): of those, retransmissions
 * * `packets-lost` (guint64): transmissions found lost (timeout or ACKs)
 * * `loss-reactions` (guint64): rate decreases, one per loss cluster
 * * `timeout-losses` (guint64): of `packets-lost`, found by timeout
 * * `spurious-losses` (guint64): of `packets-lost`, acknowledged afterwards
 *   (declared lost too early)
 * * `reactions-undone` (guint64): of `loss-reactions`, taken back by the
 *   law: the timeout behind it was a late ACK (Libra)
 * * `queue-decreases`, `queue-holds` (guint64): rate decreases, and SRTT
 *   ticks without the increase, on a queue of the session's own making
 *   (its SRTT 100 ms above the smallest RTT, the path seen empty since)
 * * `bytes-sent` (guint64): payload bytes sent, retransmissions included
 * * `bytes-acked` (guint64): payload bytes known delivered
 * * `queued-bytes` (guint64): payload bytes accepted and not yet acked
 * * `acks-received` (guint64): valid ACKs of this session
 * * `acks-invalid` (guint64): ACKs for never-sent seqnos, dropped
 * * `send-errors` (guint64): datagrams the socket refused (counted as lost)
 * * `total-exit-bandwidth` (guint64): the bandwidth actually used on this
 *   socket: payload bit/s sent by its active sessions over their last
 *   report interval (headers not counted; idle sessions left out)
 * * `used-bandwidth` (guint64): this session's part of it, bit/s (0 while
 *   idle)
 * * `available-bandwidth` (guint64): the bandwidth available to this
 *   session, i.e. its congestion-controlled rate, bit/s
 * * `queued-bits-total` (guint64): bits queued over all sessions on this
 *   socket
 * * `sessions` (guint): sessions on this socket
 * * `active-sessions` (guint): of those, the ones with data to send
 * * `protocol` (string): `erap` or `rap`
 * * `ticks`, `idle-wakeups` (guint64): per-SRTT rate timer runs, and IPG
 *   timer runs with nothing to send (RAP baseline only)
 * * `acks-malformed`, `acks-unknown` (guint64): datagrams on this socket
 *   that were not ACKs, or ACKs of no session (e.g. from another address
 *   than a session's peer), dropped
 * * `acks-foreign` (guint64): plaintext ACKs naming this session that did
 *   not come from its destination (the address and port it sends to, e.g.
 *   from a third address naming the receiver), dropped
 * * `local-port` (guint): the UDP port data is sent from
 * * `peer` (string): the destination, `address:port` (empty while
 *   #GstErapSink:learn-peer has not learnt one)
 * * `hellos` (guint64): hellos accepted (#GstErapSink:learn-peer)
 * * `hellos-moved` (guint64): of those, from a new port (the NAT moved)
 * * `hellos-foreign` (guint64): hellos for this session from another
 *   address than #GstErapSink:host's, ignored
 * * `hellos-forged` (guint64): hellos for this keyed session that were
 *   not sealed under its key, dropped
 * * `hellos-replayed` (guint64): hellos whose counter was not above the
 *   last accepted one, dropped
 * * `hellos-unknown` (guint64): hellos on this socket naming no session
 * * `encrypted` (gboolean): #GstErapSink:passphrase or #GstErapSink:key set
 * * `acks-authenticated` (guint64): sealed ACK datagrams that passed the
 *   AEAD check
 * * `auth-failures` (guint64): ACK datagrams or records dropped: bad tag,
 *   or plain ACKs naming this keyed session
 * * `replays` (guint64): authentic ACK datagrams seen before or older than
 *   the replay window, dropped
 * * `congestion-control` (string): `rap` or `libra`
 * * `libra-window` (gdouble): Libra's W = rate * SRTT, packets (0 with rap)
 * * `libra-alpha`, `libra-beta` (gdouble): Libra's current alpha and beta
 * * `capacity` (gdouble): the bottleneck capacity C Libra uses, bit/s
 * * `capacity-estimate` (gdouble): C measured from packet pairs, bit/s
 *   (0 until measured, or with rap)
 * * `pair-samples` (guint): packet pairs measured
 *
 * With #GstErapSink:passphrase or #GstErapSink:key set (the receiver's
 * must match), each session draws a random salt, derives its keys from
 * it and seals every data packet with AES-256-GCM (24 bytes more per
 * packet: the salt and the tag; the payload per packet shrinks by as much,
 * the datagram stays within #GstErapSink:mtu); only sealed ACKs that
 * authenticate under the session's key and pass the replay window count.
 * When keyed packets keep timing out and no ACK has ever authenticated,
 * the sink posts a warning (at the #GstErapSink:scheduler-interval, once):
 * wrong passphrase or key at the receiver, or no receiver.
 * Without either, ERAP is plaintext: for a lab only (docs/security.md).
 * In both modes an ACK for a sequence number never sent is dropped
 * (`acks-invalid`). In plaintext an ACK counts only when it comes from
 * the destination itself, the address and port data is sent to
 * (`acks-foreign` otherwise): a third address cannot acknowledge data
 * the receiver never got.
 *
 * ## Behind NAT: learning the destination
 *
 * A receiver behind NAT cannot be sent to first. With
 * #GstErapSink:learn-peer the sink sends nothing until the receiver's
 * *hello* arrives (erapsrc with #GstErapSrc:hello-host and
 * #GstErapSrc:hello-port aimed at this sink's #GstErapSink:current-port):
 * a datagram from the receiver's own socket naming the session by
 * #GstErapSink:hello-id. The data then goes to the address and port the
 * hello came from (the NAT's public ones), from the port it reached, which
 * the NAT treats as replies. Only a hello from #GstErapSink:host's address
 * counts (any port: the NAT chooses it): media never go to an address the
 * application did not name (no reflection). A keyed session accepts only
 * hellos sealed under its key (HMAC-SHA256), and each hello's counter must
 * be above the last one's (replays); the rest is dropped and counted. The
 * receiver repeats its hello as a keepalive; one from a new port moves the
 * destination. Sinks sharing a socket are told apart by their hello ids.
 * Until a hello arrives, buffers queue (up to #GstErapSink:max-queue-bytes,
 * then render blocks) and no timer runs.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=video.ts ! erapsink host=127.0.0.1 port=5004
 * ]| Sends a file; receive it with
 * `gst-launch-1.0 erapsrc port=5004 ! filesink location=copy.ts`.
 * |[
 * gst-launch-1.0 filesrc location=video.ts ! erapsink host=127.0.0.1 port=5004 congestion-control=libra capacity-bitrate=10000000
 * ]| The same with Libra over a 10 Mbit/s bottleneck.
 * |[
 * gst-launch-1.0 filesrc location=video.ts ! erapsink host=192.0.2.7 learn-peer=true hello-id=42 bind-port=5006
 * ]| Waits for the hello of `gst-launch-1.0 erapsrc port=0 hello-host=SERVER
 * hello-port=5006 hello-id=42 ! filesink location=copy.ts` run behind a NAT
 * whose public address is 192.0.2.7, and sends there.
 */
#define _GNU_SOURCE             /* sendmmsg */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <gst/twoflow/networkcongestion.h>
#include "twoflownet.h"
#include "twoflowprops.h"
#include "gsterapsink.h"
#include "gsterapsinklibra.h"

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

GST_DEBUG_CATEGORY_STATIC (erap_sink_debug);
#define GST_CAT_DEFAULT erap_sink_debug

#define DEFAULT_HOST                "localhost"
#define DEFAULT_PORT                5004
#define DEFAULT_BIND_ADDRESS        "0.0.0.0"
#define DEFAULT_BIND_PORT           0
#define DEFAULT_MTU                 1400
#define DEFAULT_CONGESTION_CONTROL  GST_ERAP_CC_RAP
#define DEFAULT_INITIAL_RATE        1000000
#define DEFAULT_MIN_RATE            0
#define DEFAULT_MAX_RATE            0
#define DEFAULT_MAX_QUEUE_BYTES     (4 * 1024 * 1024)
#define DEFAULT_LINGER              (10 * GST_SECOND)
#define DEFAULT_MIN_RTO             (200 * GST_MSECOND)
#define DEFAULT_PACING_QUANTUM      (500 * GST_USECOND)
#define DEFAULT_SCHEDULER_INTERVAL  GST_SECOND
#define DEFAULT_CONNECT_TIMEOUT     (10 * GST_SECOND)

enum {
  PROP_0,
  PROP_HELLO_FIRST,
  PROP_HELLO_LAST = PROP_HELLO_FIRST + TWOFLOW_HELLO_SENDER_N_PROPS - 1,
  PROP_HOST,
  PROP_PORT,
  PROP_BIND_ADDRESS,
  PROP_BIND_PORT,
  PROP_MTU,
  PROP_CONGESTION_CONTROL,
  PROP_INITIAL_RATE,
  PROP_MIN_RATE,
  PROP_MAX_RATE,
  PROP_MAX_QUEUE_BYTES,
  PROP_LINGER,
  PROP_MIN_RTO,
  PROP_PACING_QUANTUM,
  PROP_SCHEDULER_INTERVAL,
  PROP_LIBRA_FIRST,
  PROP_LIBRA_LAST = PROP_LIBRA_FIRST + GST_ERAP_LIBRA_N_PROPS - 1,
  PROP_URI,
  PROP_STATS,
  PROP_PASSPHRASE,
  PROP_KEY,
  PROP_PROTOCOL,
  PROP_BOUND_PORT,
  PROP_CONNECT_TIMEOUT,
};

#define DEFAULT_PROTOCOL            GST_ERAP_PROTOCOL_ERAP
#define DEFAULT_PASSPHRASE          NULL
#define DEFAULT_KEY                 NULL

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

GType
gst_erap_congestion_control_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_ERAP_CC_RAP, "RAP rate-based AIMD", "rap"},
    {GST_ERAP_CC_LIBRA, "Libra, RTT-fair", "libra"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstErapCongestionControl", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_erap_protocol_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_ERAP_PROTOCOL_ERAP, "ERAP: 8-byte header, bundled 20-byte ACK "
          "records, shared ACK thread, timers off while idle", "erap"},
    {GST_ERAP_PROTOCOL_RAP, "RAP baseline: 24-byte header, one ACK "
          "datagram per packet, a thread per session", "rap"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstErapProtocol", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_erap_libra_state_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_ERAP_LIBRA_WINDOW, "W is the state, sent at W/SRTT (TCP Libra)",
        "window"},
    {GST_ERAP_LIBRA_RATE, "The rate is the state, sent at rate*K/(K+q)",
        "rate"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstErapLibraStateVar", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

#define gst_erap_sink_parent_class parent_class
static void gst_erap_sink_uri_handler_init (gpointer g_iface,
    gpointer iface_data);
G_DEFINE_TYPE_WITH_CODE (GstErapSink, gst_erap_sink, GST_TYPE_BASE_SINK,
    G_IMPLEMENT_INTERFACE (GST_TYPE_URI_HANDLER,
        gst_erap_sink_uri_handler_init));
GST_ELEMENT_REGISTER_DEFINE (erapsink, "erapsink", GST_RANK_NONE,
    GST_TYPE_ERAP_SINK);

static void gst_erap_sink_finalize (GObject * object);
static void gst_erap_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_erap_sink_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean gst_erap_sink_start (GstBaseSink * bsink);
static gboolean gst_erap_sink_stop (GstBaseSink * bsink);
static GstFlowReturn gst_erap_sink_render (GstBaseSink * bsink,
    GstBuffer * buffer);
static gboolean gst_erap_sink_event (GstBaseSink * bsink, GstEvent * event);
static gboolean gst_erap_sink_unlock (GstBaseSink * bsink);
static gboolean gst_erap_sink_unlock_stop (GstBaseSink * bsink);

static void
gst_erap_sink_class_init (GstErapSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *bs_class = GST_BASE_SINK_CLASS (klass);

  gobject_class->finalize = gst_erap_sink_finalize;
  gobject_class->set_property = gst_erap_sink_set_property;
  gobject_class->get_property = gst_erap_sink_get_property;
  /**
   * GstErapSink:uri:
   *
   * The receiver as an `erap://host:port` URI (IPv6 literals in brackets,
   * `erap://[::1]:5004`; no port means 5004). Query parameters set other
   * properties by name, with values as on a gst-launch-1.0 line:
   * `erap://10.0.0.2:5004?congestion-control=libra&capacity-bitrate=10000000`.
   * Reading it back gives `erap://host:port` from #GstErapSink:host and
   * #GstErapSink:port, with the query of the URI last set: the same keys
   * with the properties' current values.
   * The same URI makes an erapsink with gst_element_make_from_uri().
   */
  g_object_class_install_property (gobject_class, PROP_URI,
      g_param_spec_string ("uri", "URI",
          "erap://host:port[?property=value&...] of the receiver",
          "erap://" DEFAULT_HOST ":5004", G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));

  /**
   * GstErapSink:host:
   *
   * The receiver (erapsrc) host name or address.
   */
  g_object_class_install_property (gobject_class, PROP_HOST,
      g_param_spec_string ("host", "Host", "Receiver host or address",
          DEFAULT_HOST, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:port:
   *
   * The receiver's UDP port.
   */
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port", "Receiver UDP port", 1, 65535,
          DEFAULT_PORT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:bind-address:
   *
   * Local address to send from (and receive ACKs on).
   */
  g_object_class_install_property (gobject_class, PROP_BIND_ADDRESS,
      g_param_spec_string ("bind-address", "Bind address",
          "Local IP address to send from and receive ACKs on",
          DEFAULT_BIND_ADDRESS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:bind-port:
   *
   * Local UDP port; all erapsinks of the process with the same bind
   * address and port share one socket and one ACK thread. 0 uses the
   * process-wide socket on an ephemeral port.
   */
  g_object_class_install_property (gobject_class, PROP_BIND_PORT,
      g_param_spec_uint ("bind-port", "Bind port",
          "Local UDP port (0 = the shared ephemeral one)", 0, 65535,
          DEFAULT_BIND_PORT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:mtu:
   *
   * Largest datagram to send, ERAP header included (UDP payload size).
   */
  g_object_class_install_property (gobject_class, PROP_MTU,
      g_param_spec_uint ("mtu", "MTU",
          "Largest UDP payload to send, 8-byte ERAP header included", 64,
          65507, DEFAULT_MTU, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:congestion-control:
   *
   * The congestion control law.
   */
  g_object_class_install_property (gobject_class, PROP_CONGESTION_CONTROL,
      g_param_spec_enum ("congestion-control", "Congestion control",
          "Congestion control law", GST_TYPE_ERAP_CONGESTION_CONTROL,
          DEFAULT_CONGESTION_CONTROL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:initial-bitrate:
   *
   * Sending rate at the start, in bit/s of datagrams.
   */
  g_object_class_install_property (gobject_class, PROP_INITIAL_RATE,
      g_param_spec_uint64 ("initial-bitrate", "Initial bitrate",
          "Initial sending rate (bit/s)", 1000, G_MAXUINT64,
          DEFAULT_INITIAL_RATE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:initial-rate:
   *
   * Deprecated alias of #GstErapSink:initial-bitrate (docs/conventions.md).
   */
  twoflow_property_install_alias (gobject_class, PROP_INITIAL_RATE,
      "initial-rate", "initial-bitrate");
  /**
   * GstErapSink:min-bitrate:
   *
   * Lowest rate the congestion control may go to, bit/s; 0: one packet
   * per second.
   */
  g_object_class_install_property (gobject_class, PROP_MIN_RATE,
      g_param_spec_uint64 ("min-bitrate", "Minimum bitrate",
          "Lowest sending rate (bit/s, 0 = one packet per second)", 0,
          G_MAXUINT64, DEFAULT_MIN_RATE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:min-rate:
   *
   * Deprecated alias of #GstErapSink:min-bitrate (docs/conventions.md).
   */
  twoflow_property_install_alias (gobject_class, PROP_MIN_RATE, "min-rate",
      "min-bitrate");
  /**
   * GstErapSink:max-bitrate:
   *
   * Highest rate the congestion control may go to, bit/s; 0: unbounded.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_RATE,
      g_param_spec_uint64 ("max-bitrate", "Maximum bitrate",
          "Highest sending rate (bit/s, 0 = unbounded)", 0, G_MAXUINT64,
          DEFAULT_MAX_RATE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:max-rate:
   *
   * Deprecated alias of #GstErapSink:max-bitrate (docs/conventions.md).
   */
  twoflow_property_install_alias (gobject_class, PROP_MAX_RATE, "max-rate",
      "max-bitrate");
  /**
   * GstErapSink:max-queue-bytes:
   *
   * Rendering blocks while this many payload bytes are not acknowledged.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_QUEUE_BYTES,
      g_param_spec_uint64 ("max-queue-bytes", "Max queue bytes",
          "Block rendering while this many bytes are unacknowledged", 1,
          G_MAXUINT64, DEFAULT_MAX_QUEUE_BYTES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstErapSink:linger:
   *
   * How long end of stream waits for outstanding data to be acknowledged
   * (ns).
   */
  g_object_class_install_property (gobject_class, PROP_LINGER,
      g_param_spec_uint64 ("linger", "Linger",
          "How long EOS waits for outstanding data to be acknowledged (ns)",
          0, G_MAXUINT64, DEFAULT_LINGER,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstErapSink:min-rto:
   *
   * Floor of the retransmission timeout, ns. Losses are normally found
   * from the ACKs within an RTT; the timeout catches the rest. A floor
   * well above scheduling hiccups of a loaded host keeps late ACKs from
   * reading as losses (spurious rate decreases). Half of it is also the
   * least margin of the timeout over the SRTT, for long paths.
   */
  g_object_class_install_property (gobject_class, PROP_MIN_RTO,
      g_param_spec_uint64 ("min-rto", "Minimum RTO",
          "Floor of the retransmission timeout (ns)", GST_MSECOND,
          10 * GST_SECOND, DEFAULT_MIN_RTO,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:pacing-quantum:
   *
   * Packets due within this time of a timer go out at once, in one burst
   * and one system call (sendmmsg; equal-sized packets as one UDP_SEGMENT
   * datagram where the path allows it). At high rates a timer per packet
   * costs more CPU than the packets; at low rates the gap is longer than
   * the quantum and pacing stays exact. A buffer arriving while nothing
   * is waiting to be sent waits up to one quantum for the ones that
   * follow, so they leave together. 0 paces every packet and sends at
   * once.
   */
  g_object_class_install_property (gobject_class, PROP_PACING_QUANTUM,
      g_param_spec_uint64 ("pacing-quantum", "Pacing quantum",
          "Send packets due within this time at once, in one burst (ns)", 0,
          GST_SECOND, DEFAULT_PACING_QUANTUM,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:scheduler-interval:
   *
   * Period of the `erap-scheduler` element message (ns); 0 disables it.
   */
  g_object_class_install_property (gobject_class, PROP_SCHEDULER_INTERVAL,
      g_param_spec_uint64 ("scheduler-interval", "Scheduler interval",
          "Period of the erap-scheduler element message (ns, 0 = off)", 0,
          G_MAXUINT64, DEFAULT_SCHEDULER_INTERVAL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /* Libra's parameters (libra-*, capacity-bitrate), a group of their
   * own: gst/erap/gsterapsinklibra.c */
  gst_erap_libra_props_install (gobject_class, PROP_LIBRA_FIRST);
  /**
   * GstErapSink:stats:
   *
   * Statistics, `application/x-erapsink-stats` (fields in the element
   * documentation).
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics", "Session statistics",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstErapSink:passphrase:
   *
   * Shared secret (10 to 79 characters, as srtsink's): the session keys
   * are derived from it (PBKDF2, then HKDF with a random per-session salt
   * carried in every packet) and every data packet and ACK is
   * authenticated and encrypted (AES-256-GCM). Unset, together with
   * #GstErapSink:key, means plaintext (lab use only).
   */
  g_object_class_install_property (gobject_class, PROP_PASSPHRASE,
      g_param_spec_string ("passphrase", "Passphrase",
          "Shared secret for authentication and encryption (10..79 chars)",
          DEFAULT_PASSPHRASE, G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:key:
   *
   * A 32-byte master key as 64 hexadecimal digits (e.g. handed over by a
   * control channel), instead of #GstErapSink:passphrase.
   */
  g_object_class_install_property (gobject_class, PROP_KEY,
      g_param_spec_string ("key", "Key",
          "Master key, 64 hex digits (instead of passphrase)", DEFAULT_KEY,
          G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstErapSink:protocol:
   *
   * `erap`, or `rap`: the RAP baseline for comparisons (24-byte header,
   * one ACK datagram per packet, a socket and ACK thread per session,
   * RAP's timers running while idle). The receiver's erapsrc must use the
   * same. No keyed mode with `rap`.
   */
  g_object_class_install_property (gobject_class, PROP_PROTOCOL,
      g_param_spec_enum ("protocol", "Protocol",
          "erap, or rap: the RAP baseline (24-byte header, one ACK datagram "
          "per packet, a thread per session)", GST_TYPE_ERAP_PROTOCOL,
          DEFAULT_PROTOCOL, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSink:current-port:
   *
   * The local UDP port data leaves from and ACKs and hellos arrive on
   * (#GstErapSink:bind-port, or the ephemeral one chosen), once started;
   * 0 before.
   */
  g_object_class_install_property (gobject_class, PROP_BOUND_PORT,
      g_param_spec_uint ("current-port", "Current port",
          "Local UDP port in use (read-only, once started)", 0, 65535, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  /**
   * GstErapSink:bound-port:
   *
   * Deprecated alias of #GstErapSink:current-port (docs/conventions.md).
   */
  twoflow_property_install_alias (gobject_class, PROP_BOUND_PORT, "bound-port",
      "current-port");

  /**
   * GstErapSink:connect-timeout:
   *
   * How long the receiver has to answer, in nanoseconds: when no ACK
   * (authentic when keyed; from the destination in plaintext) has arrived
   * this long after the first data packet was sent, the sink posts an
   * error ("Could not connect to HOST:PORT") and stops sending: no
   * receiver, an unreachable host, a firewall, or a wrong passphrase or
   * key at the receiver. With #GstErapSink:learn-peer it counts from the
   * first packet sent after the hello. Once the receiver has answered,
   * data outstanding this long after the last ACK is an error too ("Lost
   * the receiver"). 0: wait for ever.
   */
  g_object_class_install_property (gobject_class, PROP_CONNECT_TIMEOUT,
      g_param_spec_uint64 ("connect-timeout", "Connect timeout",
          "Error when the receiver has not acknowledged anything this long "
          "after the first packet (ns, 0 = never)", 0, G_MAXUINT64,
          DEFAULT_CONNECT_TIMEOUT, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));

  /* NAT traversal (learn-peer, hello-id), the group erap and rudp share:
   * gst/common/twoflowprops.c */
  twoflow_hello_sender_props_install (gobject_class, PROP_HELLO_FIRST);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class, "ERAP sink",
      "Sink/Network",
      "Sends buffers reliably with TCP-friendly rate control over UDP (ERAP)",
      "twoflow developers <dev@twoflow.invalid>");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, TWOFLOW_DOC_URI_BASE "erap.md");

  bs_class->start = GST_DEBUG_FUNCPTR (gst_erap_sink_start);
  bs_class->stop = GST_DEBUG_FUNCPTR (gst_erap_sink_stop);
  bs_class->render = GST_DEBUG_FUNCPTR (gst_erap_sink_render);
  bs_class->event = GST_DEBUG_FUNCPTR (gst_erap_sink_event);
  bs_class->unlock = GST_DEBUG_FUNCPTR (gst_erap_sink_unlock);
  bs_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_erap_sink_unlock_stop);

  gst_type_mark_as_plugin_api (GST_TYPE_ERAP_CONGESTION_CONTROL, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_ERAP_PROTOCOL, 0);
  GST_DEBUG_CATEGORY_INIT (erap_sink_debug, "erapsink", 0, "ERAP sink");
}

static void
gst_erap_sink_init (GstErapSink * sink)
{
  twoflow_hello_sender_props_init (&sink->hello_props);
  sink->host = g_strdup (DEFAULT_HOST);
  sink->port = DEFAULT_PORT;
  sink->bind_address = g_strdup (DEFAULT_BIND_ADDRESS);
  sink->bind_port = DEFAULT_BIND_PORT;
  sink->mtu = DEFAULT_MTU;
  sink->cc = DEFAULT_CONGESTION_CONTROL;
  sink->initial_rate = DEFAULT_INITIAL_RATE;
  sink->min_rate = DEFAULT_MIN_RATE;
  sink->max_rate = DEFAULT_MAX_RATE;
  sink->max_queue_bytes = DEFAULT_MAX_QUEUE_BYTES;
  sink->linger = DEFAULT_LINGER;
  sink->min_rto = DEFAULT_MIN_RTO;
  sink->pacing_quantum = DEFAULT_PACING_QUANTUM;
  sink->scheduler_interval = DEFAULT_SCHEDULER_INTERVAL;
  sink->protocol = DEFAULT_PROTOCOL;
  gst_erap_libra_props_init (&sink->libra);
  sink->connect_timeout = DEFAULT_CONNECT_TIMEOUT;
  g_mutex_init (&sink->lock);
  g_cond_init (&sink->queue_cond);
  /* a file transfer, not a playback: send as fast as allowed */
  gst_base_sink_set_sync (GST_BASE_SINK (sink), FALSE);
  /* the last sample is a second reference to every buffer, which would
   * make each one shared and copied (see buffer_bytes()) */
  gst_base_sink_set_last_sample_enabled (GST_BASE_SINK (sink), FALSE);
}

static void
gst_erap_sink_finalize (GObject * object)
{
  GstErapSink *sink = GST_ERAP_SINK (object);

  g_free (sink->host);
  g_free (sink->bind_address);
  g_free (sink->passphrase);
  g_free (sink->key);
  g_mutex_clear (&sink->lock);
  g_cond_clear (&sink->queue_cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* With the lock: the scheduler's totals, from the shared socket's
 * manager, or (protocol=rap, a socket per session) from this session. */
static void
sched_view_locked (GstErapSink * sink, const GstErapSenderStats * st,
    GstErapManagerStats * ms)
{
  memset (ms, 0, sizeof (*ms));
  if (sink->manager) {
    gst_erap_manager_get_stats (sink->manager, ms);
    return;
  }
  if (!sink->own_socket)
    return;
  ms->sessions = 1;
  ms->active_sessions = st->active ? 1 : 0;
  ms->exit_bandwidth = st->active ? st->used_rate : 0;
  ms->queued_bits = st->queued_bytes * 8;
  ms->local_port = twoflow_net_local_port (sink->own_socket);
}

static GstStructure *
make_stats (GstErapSink * sink)
{
  GstErapSenderStats st;
  GstErapManagerStats ms = { 0 };
  GstErapLibraState ls;
  GstErapCryptoStats cs;
  GstStructure *s;
  GEnumValue *ev;

  g_mutex_lock (&sink->lock);
  if (sink->sender) {
    gst_erap_sender_get_stats (sink->sender, &sink->last);
    gst_erap_libra_get_state (gst_erap_sender_get_cc (sink->sender),
        &sink->last_libra);
  }
  if (sink->crypto)
    gst_erap_crypto_get_stats (sink->crypto, &sink->last_crypto);
  st = sink->last;
  ls = sink->last_libra;
  cs = sink->last_crypto;
  sched_view_locked (sink, &st, &ms);
  if (sink->manager) {
    sink->last_hellos_unknown = ms.hellos_unknown;
    if (sink->msession) {
      gst_erap_manager_session_get_hello_stats (sink->manager,
          sink->msession, &sink->last_hello);
      sink->acks_foreign = gst_erap_manager_session_get_acks_foreign
          (sink->manager, sink->msession);
    }
  }
  s = gst_structure_new ("application/x-erapsink-stats",
      "rate", G_TYPE_UINT64, st.rate,
      "ipg", G_TYPE_UINT64, (guint64) st.ipg,
      "srtt", G_TYPE_UINT64, (guint64) st.srtt,
      "rto", G_TYPE_UINT64, (guint64) st.rto,
      "packets-sent", G_TYPE_UINT64, st.packets_sent,
      "packets-retransmitted", G_TYPE_UINT64, st.packets_retransmitted,
      "packets-lost", G_TYPE_UINT64, st.packets_lost,
      "loss-reactions", G_TYPE_UINT64, st.loss_reactions,
      "timeout-losses", G_TYPE_UINT64, st.timeout_losses,
      "spurious-losses", G_TYPE_UINT64, st.spurious_losses,
      "reactions-undone", G_TYPE_UINT64, st.reactions_undone,
      "queue-decreases", G_TYPE_UINT64, st.queue_decreases,
      "queue-holds", G_TYPE_UINT64, st.queue_holds,
      "bytes-sent", G_TYPE_UINT64, st.bytes_sent,
      "bytes-acked", G_TYPE_UINT64, st.bytes_acked,
      "queued-bytes", G_TYPE_UINT64, st.queued_bytes,
      "acks-received", G_TYPE_UINT64, st.acks_received,
      "acks-invalid", G_TYPE_UINT64, st.acks_invalid,
      "send-errors", G_TYPE_UINT64, sink->send_errors,
      "total-exit-bandwidth", G_TYPE_UINT64, ms.exit_bandwidth,
      "available-bandwidth", G_TYPE_UINT64, st.rate,
      "used-bandwidth", G_TYPE_UINT64, st.active ? st.used_rate : 0,
      "queued-bits-total", G_TYPE_UINT64, ms.queued_bits,
      "sessions", G_TYPE_UINT, ms.sessions,
      "active-sessions", G_TYPE_UINT, ms.active_sessions,
      "ticks", G_TYPE_UINT64, st.ticks,
      "idle-wakeups", G_TYPE_UINT64, st.idle_wakeups,
      "acks-malformed", G_TYPE_UINT64, ms.acks_malformed,
      "acks-unknown", G_TYPE_UINT64, ms.acks_unknown,
      "acks-foreign", G_TYPE_UINT64, sink->acks_foreign,
      "local-port", G_TYPE_UINT, (guint) ms.local_port, NULL);
  ev = g_enum_get_value (g_type_class_peek (GST_TYPE_ERAP_CONGESTION_CONTROL),
      sink->cc);
  gst_structure_set (s, "protocol", G_TYPE_STRING,
      sink->protocol == GST_ERAP_PROTOCOL_RAP ? "rap" : "erap", NULL);
  gst_structure_set (s,
      "congestion-control", G_TYPE_STRING, ev ? ev->value_nick : "",
      "libra-window", G_TYPE_DOUBLE, ls.window,
      "libra-alpha", G_TYPE_DOUBLE, ls.alpha,
      "libra-beta", G_TYPE_DOUBLE, ls.beta,
      "capacity", G_TYPE_DOUBLE, ls.capacity,
      "capacity-estimate", G_TYPE_DOUBLE, ls.capacity_estimate,
      "pair-samples", G_TYPE_UINT, ls.pair_samples,
      "encrypted", G_TYPE_BOOLEAN, sink->encrypted,
      "acks-authenticated", G_TYPE_UINT64, cs.opened,
      "auth-failures", G_TYPE_UINT64, cs.auth_failures,
      "replays", G_TYPE_UINT64, cs.replays, NULL);
  {
    gchar *peer = NULL;

    if (sink->peer) {
      GInetSocketAddress *ia = G_INET_SOCKET_ADDRESS (sink->peer);
      gchar *a = g_inet_address_to_string (g_inet_socket_address_get_address
          (ia));

      peer = g_strdup_printf ("%s:%u", a, g_inet_socket_address_get_port (ia));
      g_free (a);
    }
    gst_structure_set (s,
        "peer", G_TYPE_STRING, peer ? peer : "",
        "hellos", G_TYPE_UINT64, sink->last_hello.accepted,
        "hellos-moved", G_TYPE_UINT64, sink->last_hello.moved,
        "hellos-foreign", G_TYPE_UINT64, sink->last_hello.foreign,
        "hellos-forged", G_TYPE_UINT64, sink->last_hello.forged,
        "hellos-replayed", G_TYPE_UINT64, sink->last_hello.replayed,
        "hellos-unknown", G_TYPE_UINT64, sink->last_hellos_unknown, NULL);
    g_free (peer);
  }
  g_mutex_unlock (&sink->lock);
  return s;
}

static void
gst_erap_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstErapSink *sink = GST_ERAP_SINK (object);

  /* the URI sets other properties, which take the lock themselves */
  if (prop_id == PROP_URI) {
    twoflow_uri_property_set (GST_ELEMENT (object), value);
    return;
  }
  GST_OBJECT_LOCK (sink);
  switch (prop_id) {
    case PROP_HOST:
      g_free (sink->host);
      sink->host = g_value_dup_string (value);
      break;
    case PROP_PORT:
      sink->port = g_value_get_uint (value);
      break;
    case PROP_BIND_ADDRESS:
      g_free (sink->bind_address);
      sink->bind_address = g_value_dup_string (value);
      break;
    case PROP_BIND_PORT:
      sink->bind_port = g_value_get_uint (value);
      break;
    case PROP_MTU:
      sink->mtu = g_value_get_uint (value);
      break;
    case PROP_PASSPHRASE:
      g_free (sink->passphrase);
      sink->passphrase = g_value_dup_string (value);
      break;
    case PROP_KEY:
      g_free (sink->key);
      sink->key = g_value_dup_string (value);
      break;
    case PROP_CONNECT_TIMEOUT:
      sink->connect_timeout = g_value_get_uint64 (value);
      break;
    case PROP_CONGESTION_CONTROL:
      sink->cc = g_value_get_enum (value);
      break;
    case PROP_INITIAL_RATE:
      sink->initial_rate = g_value_get_uint64 (value);
      break;
    case PROP_MIN_RATE:
      sink->min_rate = g_value_get_uint64 (value);
      break;
    case PROP_MAX_RATE:
      sink->max_rate = g_value_get_uint64 (value);
      break;
    case PROP_MAX_QUEUE_BYTES:
      sink->max_queue_bytes = g_value_get_uint64 (value);
      break;
    case PROP_LINGER:
      sink->linger = g_value_get_uint64 (value);
      break;
    case PROP_MIN_RTO:
      sink->min_rto = g_value_get_uint64 (value);
      break;
    case PROP_PACING_QUANTUM:
      sink->pacing_quantum = g_value_get_uint64 (value);
      break;
    case PROP_PROTOCOL:
      sink->protocol = g_value_get_enum (value);
      break;
    case PROP_SCHEDULER_INTERVAL:
      sink->scheduler_interval = g_value_get_uint64 (value);
      break;
    default:
      if (!gst_erap_libra_props_set (&sink->libra,
              prop_id - PROP_LIBRA_FIRST, value)
          && !twoflow_hello_sender_props_set (&sink->hello_props,
              prop_id - PROP_HELLO_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (sink);
}

static void
gst_erap_sink_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstErapSink *sink = GST_ERAP_SINK (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (sink));
    return;
  }
  if (prop_id == PROP_URI) {
    g_value_take_string (value,
        gst_uri_handler_get_uri (GST_URI_HANDLER (object)));
    return;
  }
  GST_OBJECT_LOCK (sink);
  switch (prop_id) {
    case PROP_HOST:
      g_value_set_string (value, sink->host);
      break;
    case PROP_PORT:
      g_value_set_uint (value, sink->port);
      break;
    case PROP_BIND_ADDRESS:
      g_value_set_string (value, sink->bind_address);
      break;
    case PROP_BIND_PORT:
      g_value_set_uint (value, sink->bind_port);
      break;
    case PROP_CONNECT_TIMEOUT:
      g_value_set_uint64 (value, sink->connect_timeout);
      break;
    case PROP_BOUND_PORT:
      g_value_set_uint (value, sink->bound_port);
      break;
    case PROP_MTU:
      g_value_set_uint (value, sink->mtu);
      break;
    case PROP_CONGESTION_CONTROL:
      g_value_set_enum (value, sink->cc);
      break;
    case PROP_INITIAL_RATE:
      g_value_set_uint64 (value, sink->initial_rate);
      break;
    case PROP_MIN_RATE:
      g_value_set_uint64 (value, sink->min_rate);
      break;
    case PROP_MAX_RATE:
      g_value_set_uint64 (value, sink->max_rate);
      break;
    case PROP_MAX_QUEUE_BYTES:
      g_value_set_uint64 (value, sink->max_queue_bytes);
      break;
    case PROP_LINGER:
      g_value_set_uint64 (value, sink->linger);
      break;
    case PROP_MIN_RTO:
      g_value_set_uint64 (value, sink->min_rto);
      break;
    case PROP_PACING_QUANTUM:
      g_value_set_uint64 (value, sink->pacing_quantum);
      break;
    case PROP_PROTOCOL:
      g_value_set_enum (value, sink->protocol);
      break;
    case PROP_SCHEDULER_INTERVAL:
      g_value_set_uint64 (value, sink->scheduler_interval);
      break;
    default:
      if (!gst_erap_libra_props_get (&sink->libra,
              prop_id - PROP_LIBRA_FIRST, value)
          && !twoflow_hello_sender_props_get (&sink->hello_props,
              prop_id - PROP_HELLO_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (sink);
}

/* ------------------------------------------------------------------ */
/* the session: everything below runs with sink->lock held unless noted */

static gboolean timer_cb (GstClock * clock, GstClockTime t, GstClockID id,
    gpointer user_data);
static gboolean connect_timeout_cb (GstClock * clock, GstClockTime t,
    GstClockID id, gpointer user_data);
static void drop_id (GstClockID * id);
static void post_report (GstErapSink * sink, const GstErapSenderStats * st,
    const GstErapManagerStats * ms, gboolean auth_warn,
    guint64 auth_failures);

static GstClockTime
now_locked (GstErapSink * sink)
{
  return gst_clock_get_time (sink->clock);
}

/* Packets due now go out SEND_BATCH per system call (sendmmsg); runs of
 * equal-sized packets travel as one UDP_SEGMENT (GSO) datagram, which the
 * kernel cuts into packets only where it must (loopback and an erapsrc
 * with UDP_GRO take it whole): the UDP path costs per datagram, not per
 * byte. */
#define SEND_BATCH 64
#define GSO_MAX_SEGMENTS 64     /* the kernel's UDP_MAX_SEGMENTS */
#define GSO_MAX_BYTES 65000     /* below the 64 KiB IP datagram */

typedef union {
  gchar buf[CMSG_SPACE (sizeof (guint16))];
  struct cmsghdr align;
} GsoControl;

static gsize
packet_size (GstErapSink * sink, const GstErapOutPacket * p)
{
  return p->header_len + p->payload_len +
      (sink->crypto ? GST_ERAP_DATA_SEAL_OVERHEAD : 0);
}

/* The iovecs of packet @i: header and payload, or the sealed packet in
 * the session's seal buffer (each packet of a GSO run sealed on its own;
 * sealing again after a refused run gives the same bytes) */
static void
packet_iov (GstErapSink * sink, GstErapOutPacket * p, guint i,
    struct iovec iov[2])
{
  if (sink->crypto) {
    guint8 *out = sink->seal_buf + (gsize) i * sink->seal_stride;

    if (!gst_erap_crypto_seal_data (sink->crypto, p->seqno, p->header,
            p->payload, p->payload_len, out)) {
      /* seqno space of this key used up (2^32 packets): never reuse a
       * nonce; render() fails the stream */
      sink->crypto_exhausted = TRUE;
      iov[0].iov_len = iov[1].iov_len = 0;
      iov[0].iov_base = iov[1].iov_base = NULL;
      return;
    }
    iov[0].iov_base = out;
    iov[0].iov_len = packet_size (sink, p);
    iov[1].iov_base = NULL;
    iov[1].iov_len = 0;
    return;
  }
  iov[0].iov_base = p->header;
  iov[0].iov_len = p->header_len;
  iov[1].iov_base = (gpointer) p->payload;
  iov[1].iov_len = p->payload_len;
}

/* Sends packets [from, n) of @p; returns FALSE when UDP_SEGMENT failed
 * on the first message sent, so the caller retries without it. */
static gboolean
send_run_locked (GstErapSink * sink, GstErapOutPacket * p, guint * from,
    guint n)
{
  struct mmsghdr mm[SEND_BATCH];
  struct iovec iov[SEND_BATCH][2];
  GsoControl ctl[SEND_BATCH];
  guint first[SEND_BATCH + 1];
  guint n_msgs = 0, i = *from, j;
  gint fd = g_socket_get_fd (sink->socket);

  memset (mm, 0, sizeof (mm));
  while (i < n) {
    gsize seg = packet_size (sink, &p[i]), bytes = 0;
    guint k = 0, start = i;

    /* a run: equal sizes, the last one may be shorter */
    do {
      gsize sz = packet_size (sink, &p[i]);

      packet_iov (sink, &p[i], i, iov[i]);
      bytes += sz;
      k++;
      i++;
      if (sz < seg)
        break;
    } while (sink->gso && i < n && k < GSO_MAX_SEGMENTS &&
        packet_size (sink, &p[i]) <= seg && bytes + packet_size (sink, &p[i]) <=
        GSO_MAX_BYTES);

    first[n_msgs] = start;
    mm[n_msgs].msg_hdr.msg_name = &sink->peer_native;
    mm[n_msgs].msg_hdr.msg_namelen = sink->peer_native_len;
    mm[n_msgs].msg_hdr.msg_iov = &iov[start][0];
    mm[n_msgs].msg_hdr.msg_iovlen = 2 * k;
    if (k > 1) {
      struct cmsghdr *c;

      mm[n_msgs].msg_hdr.msg_control = ctl[n_msgs].buf;
      mm[n_msgs].msg_hdr.msg_controllen = sizeof (ctl[n_msgs].buf);
      c = CMSG_FIRSTHDR (&mm[n_msgs].msg_hdr);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN (sizeof (guint16));
      *(guint16 *) CMSG_DATA (c) = seg;
    }
    n_msgs++;
  }
  first[n_msgs] = n;

  for (j = 0; j < n_msgs;) {
    gint r = sendmmsg (fd, mm + j, n_msgs - j, MSG_DONTWAIT);

    if (r > 0) {
      j += r;
      continue;
    }
    if ((errno == EIO || errno == EINVAL || errno == ENOPROTOOPT ||
            errno == EMSGSIZE) &&
        mm[j].msg_hdr.msg_controllen) {
      /* this path or kernel takes no runs (e.g. no checksum offload on an
       * older kernel): one datagram per packet from now on */
      GST_INFO_OBJECT (sink, "UDP_SEGMENT refused (%s), sending packet by "
          "packet", g_strerror (errno));
      sink->gso = FALSE;
      *from = first[j];
      return FALSE;
    }
    /* as good as lost: the core finds out and reacts; skip this one */
    if (sink->send_errors == 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      GST_WARNING_OBJECT (sink, "send error: %s", g_strerror (errno));
    sink->send_errors += first[j + 1] - first[j];
    j++;
  }
  *from = n;
  return TRUE;
}

static void
send_packets_locked (GstErapSink * sink, GstClockTime now)
{
  GstErapOutPacket p[SEND_BATCH];
  guint n, from;

  do {
    /* payloads stay valid across polls: only ACKs release them */
    for (n = 0; n < SEND_BATCH &&
        gst_erap_sender_poll (sink->sender, now, &p[n]); n++);
    from = 0;
    while (!send_run_locked (sink, p, &from, n));
  } while (n == SEND_BATCH);
}

static void
reschedule_locked (GstErapSink * sink)
{
  GstClockTime next = sink->peer ? gst_erap_sender_next_wakeup (sink->sender)
      : GST_CLOCK_TIME_NONE;

  /* corked (see render): rate and loss timers can wait that long too */
  if (GST_CLOCK_TIME_IS_VALID (next) && next < sink->cork_until)
    next = sink->cork_until;
  /* the receiver never answered (connect-timeout): nothing more to do */
  if (sink->failed)
    next = GST_CLOCK_TIME_NONE;

  if (!GST_CLOCK_TIME_IS_VALID (next)) {
    /* idle: no timer at all */
    if (sink->timer) {
      gst_clock_id_unschedule (sink->timer);
      gst_clock_id_unref (sink->timer);
      sink->timer = NULL;
    }
    return;
  }
  if (sink->timer && sink->timer_time <= next)
    return;                     /* fires early enough: it re-arms itself */
  if (sink->timer) {
    gst_clock_id_unschedule (sink->timer);
    gst_clock_id_unref (sink->timer);
  }
  sink->timer = gst_clock_new_single_shot_id (sink->clock, next);
  sink->timer_time = next;
  gst_clock_id_wait_async (sink->timer, timer_cb, gst_object_ref (sink),
      (GDestroyNotify) gst_object_unref);
}

/* Sends what is due, re-arms the timer, publishes the totals; then drops
 * the lock and tells the application about new loss reactions. */
static void
service_and_unlock (GstErapSink * sink, GstClockTime now, gboolean send)
{
  GstErapSenderStats st;
  GstErapManagerStats ms;
  guint64 notify = 0, auth_failures = 0;
  gboolean report, auth_warn = FALSE;

  /* learn-peer: nothing leaves (and no timer runs) before the hello */
  if (send && sink->peer && !sink->failed)
    send_packets_locked (sink, now);
  reschedule_locked (sink);
  gst_erap_sender_get_stats (sink->sender, &st);
  /* connect-timeout: from the first packet sent until the first ACK;
   * then, while data is outstanding, from the last ACK (the receiver
   * gone). The timer is armed lazily: when it fires early it is dropped
   * and armed again here, from the last ACK. */
  if (st.acks_received != sink->acks_seen) {
    sink->acks_seen = st.acks_received;
    sink->last_ack_time = now;
    if (!sink->answered) {
      sink->answered = TRUE;
      drop_id (&sink->connect_id);
    }
  }
  if (!sink->connect_id && !sink->failed && sink->connect_timeout > 0 &&
      (sink->answered ? st.queued_bytes > 0 : st.packets_sent > 0)) {
    sink->connect_id = gst_clock_new_single_shot_id (sink->clock,
        (sink->answered ? sink->last_ack_time : now) + sink->connect_timeout);
    gst_clock_id_wait_async (sink->connect_id, connect_timeout_cb,
        gst_object_ref (sink), (GDestroyNotify) gst_object_unref);
  }
  /* NULL once stop() began taking the session out of the manager */
  if (sink->msession)
    gst_erap_manager_session_update (sink->manager, sink->msession,
        st.used_rate, st.queued_bytes, st.active);
  /* the scheduler report: due on the session's own timer, never while it
   * is idle */
  report = gst_erap_sender_take_report (sink->sender);
  if (report) {
    sched_view_locked (sink, &st, &ms);
    if (sink->crypto && !sink->auth_warned && st.acks_received == 0 &&
        st.timeout_losses >= 3) {
      GstErapCryptoStats cs;

      gst_erap_crypto_get_stats (sink->crypto, &cs);
      if (cs.opened == 0) {
        sink->auth_warned = TRUE;
        auth_warn = TRUE;
        auth_failures = cs.auth_failures;
      }
    }
  }
  if (st.loss_reactions > sink->reactions_seen) {
    notify = st.loss_reactions - sink->reactions_seen;
    sink->reactions_seen = st.loss_reactions;
  }
  /* only once there is room for a good number of buffers: waking the
   * renderer for every ACK would cost two context switches per packet */
  if (sink->render_waiting && (st.queued_bytes + MIN (sink->max_queue_bytes
              / 4, 256 * 1024) <= sink->max_queue_bytes ||
          gst_erap_sender_is_done (sink->sender)))
    g_cond_broadcast (&sink->queue_cond);
  if (sink->linger_id && gst_erap_sender_is_done (sink->sender))
    gst_clock_id_unschedule (sink->linger_id);
  g_mutex_unlock (&sink->lock);

  if (report)
    post_report (sink, &st, &ms, auth_warn, auth_failures);
  while (notify--) {
    GST_DEBUG_OBJECT (sink, "loss reaction: rate %" G_GUINT64_FORMAT, st.rate);
    gst_twoflow_congestion_notify (GST_ELEMENT (sink),
        GST_BASE_SINK_PAD (sink), GST_TWOFLOW_CONGESTION_LOSS, st.rate,
        st.srtt);
  }
}

static gboolean
timer_cb (GstClock * clock, GstClockTime t, GstClockID id, gpointer user_data)
{
  GstErapSink *sink = user_data;

  g_mutex_lock (&sink->lock);
  if (id != sink->timer || !sink->sender) {
    g_mutex_unlock (&sink->lock);
    return TRUE;
  }
  gst_clock_id_unref (sink->timer);
  sink->timer = NULL;
  service_and_unlock (sink, now_locked (sink), TRUE);
  return TRUE;
}

/* Without the lock: @peer as "address:port", or the host and port
 * properties when there is none (before a hello). */
static gchar *
dest_string (GstErapSink * sink, GSocketAddress * peer)
{
  gchar *a, *d;

  if (!peer || !G_IS_INET_SOCKET_ADDRESS (peer)) {
    GST_OBJECT_LOCK (sink);
    d = g_strdup_printf ("%s:%u", sink->host, sink->port);
    GST_OBJECT_UNLOCK (sink);
    return d;
  }
  a = g_inet_address_to_string (g_inet_socket_address_get_address
      (G_INET_SOCKET_ADDRESS (peer)));
  d = g_strdup_printf ("%s:%u", a, g_inet_socket_address_get_port
      (G_INET_SOCKET_ADDRESS (peer)));
  g_free (a);
  return d;
}

/* connect-timeout passed: if still no ACK, the receiver is not there (or
 * cannot read us): an error, and the session stops sending. */
static gboolean
connect_timeout_cb (GstClock * clock, GstClockTime t, GstClockID id,
    gpointer user_data)
{
  GstErapSink *sink = user_data;
  GstErapSenderStats st;
  GstClockTime timeout;
  GSocketAddress *peer;
  gchar *dest;
  gboolean lost;

  g_mutex_lock (&sink->lock);
  if (id != sink->connect_id || !sink->sender || sink->failed) {
    g_mutex_unlock (&sink->lock);
    return TRUE;
  }
  gst_erap_sender_get_stats (sink->sender, &st);
  if (sink->answered ? (st.queued_bytes == 0 || now_locked (sink) <
          sink->last_ack_time + sink->connect_timeout) :
      st.acks_received > 0) {
    /* ACKs came (or nothing is outstanding): armed again from the last
     * ACK on the next round of sending */
    gst_clock_id_unref (sink->connect_id);
    sink->connect_id = NULL;
    g_mutex_unlock (&sink->lock);
    return TRUE;
  }
  lost = sink->answered;
  sink->failed = TRUE;
  reschedule_locked (sink);     /* no timer any more */
  peer = sink->peer ? g_object_ref (sink->peer) : NULL;
  timeout = sink->connect_timeout;
  g_mutex_unlock (&sink->lock);
  dest = dest_string (sink, peer);
  g_clear_object (&peer);
  if (lost)
    GST_ELEMENT_ERROR (sink, RESOURCE, WRITE,
        ("Lost the receiver %s", dest),
        ("no ACK for connect-timeout (%" GST_TIME_FORMAT ") with %"
            G_GUINT64_FORMAT " bytes not acknowledged",
            GST_TIME_ARGS (timeout), st.queued_bytes));
  else
    GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_WRITE,
        ("Could not connect to %s", dest),
        ("no ACK within connect-timeout (%" GST_TIME_FORMAT ") after %"
            G_GUINT64_FORMAT " packets: no receiver, unreachable, or %s",
            GST_TIME_ARGS (timeout), st.packets_sent, sink->encrypted ?
            "a wrong passphrase or key at the receiver" :
            "a receiver with a passphrase or key"));
  g_free (dest);
  /* only now wake rendering and the linger: their GST_FLOW_ERROR would
   * otherwise make upstream post "Internal data stream error" first */
  g_mutex_lock (&sink->lock);
  sink->failure_posted = TRUE;
  g_cond_broadcast (&sink->queue_cond);
  if (sink->linger_id)
    gst_clock_id_unschedule (sink->linger_id);
  g_mutex_unlock (&sink->lock);
  return TRUE;
}

/* In the manager's thread: the ACKs that arrived together, then one round
 * of sending. */
static void
on_ack (GstObject * owner, const GstErapAck * acks, guint n_acks)
{
  GstErapSink *sink = GST_ERAP_SINK (owner);
  GstClockTime now, next;
  guint i;

  g_mutex_lock (&sink->lock);
  if (!sink->sender || !sink->clock) {
    g_mutex_unlock (&sink->lock);
    return;
  }
  now = now_locked (sink);
  for (i = 0; i < n_acks; i++)
    if (gst_erap_sender_handle_ack (sink->sender, &acks[i], now) !=
        GST_ERAP_ACK_OK)
      GST_LOG_OBJECT (sink, "invalid ACK for seq %u", acks[i].seq);
  /* the pacing timer sends in bursts of a quantum; sending from here too
   * would split them into many small ones (more wakeups on both sides),
   * so only when the timer is late by a quantum */
  next = gst_erap_sender_next_wakeup (sink->sender);
  service_and_unlock (sink, now, now >= sink->cork_until &&
      (!GST_CLOCK_TIME_IS_VALID (next) ||
          next + sink->pacing_quantum <= now));
}

/* In the manager's thread: an accepted hello from a new address or port
 * (learn-peer): send there from now on. */
static void
on_hello (GstObject * owner, GInetSocketAddress * peer)
{
  GstErapSink *sink = GST_ERAP_SINK (owner);
  gboolean first;

  g_mutex_lock (&sink->lock);
  first = sink->peer == NULL;
  g_clear_object (&sink->peer);
  sink->peer = G_SOCKET_ADDRESS (g_object_ref (peer));
  sink->peer_native_len = g_socket_address_get_native_size (sink->peer);
  g_socket_address_to_native (sink->peer, &sink->peer_native,
      sizeof (sink->peer_native), NULL);
  if (gst_debug_category_get_threshold (GST_CAT_DEFAULT) >= GST_LEVEL_INFO) {
    gchar *a = g_inet_address_to_string (g_inet_socket_address_get_address
        (peer));

    GST_INFO_OBJECT (sink, "%s the destination from a hello: %s:%u",
        first ? "learnt" : "moved", a, g_inet_socket_address_get_port (peer));
    g_free (a);
  }
  if (!sink->sender || !sink->clock) {
    g_mutex_unlock (&sink->lock);
    return;
  }
  service_and_unlock (sink, now_locked (sink), TRUE);
}

/* protocol=rap: the session's own ACK thread, one ACK per datagram, each
 * handled as it comes (RAP: a thread per session). */
static gpointer
rap_ack_thread (gpointer data)
{
  GstErapSink *sink = data;
  GSocket *sock = sink->own_socket;
  GCancellable *cancel = sink->ack_cancel;
  guint8 buf[2048];

  for (;;) {
    GError *err = NULL;
    GstErapAck a;
    GSocketAddress *from = NULL;
    gssize n = -1;
    gboolean ours;

    /* (the socket is non-blocking: wait, then read with its source) */
    if (g_socket_condition_wait (sock, G_IO_IN, cancel, &err))
      n = g_socket_receive_from (sock, &from, (gchar *) buf, sizeof (buf),
          cancel, &err);
    if (n < 0 && g_error_matches (err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
      g_clear_error (&err);
      continue;
    }
    if (n < 0) {
      gboolean stop = g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)
          || g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CLOSED);

      /* others (an ICMP port unreachable before the receiver is up) are
       * one-shot */
      GST_LOG_OBJECT (sink, "ACK receive: %s", err->message);
      g_clear_error (&err);
      if (stop || g_cancellable_is_cancelled (cancel))
        break;
      continue;
    }
    /* plaintext: only the destination itself acknowledges */
    g_mutex_lock (&sink->lock);
    ours = sink->peer && from && G_IS_INET_SOCKET_ADDRESS (from) &&
        g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (from)) ==
        g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (sink->peer));
    if (ours) {
      TwoflowNetIp x, y;

      ours = twoflow_net_ip_from_address (from, &x) &&
          twoflow_net_ip_from_address (sink->peer, &y) &&
          twoflow_net_ip_equal (&x, &y);
    }
    if (!ours)
      sink->acks_foreign++;
    g_mutex_unlock (&sink->lock);
    g_clear_object (&from);
    if (!ours)
      GST_LOG_OBJECT (sink, "datagram from another address than the "
          "receiver's dropped");
    else if (gst_erap_rap_ack_parse (buf, n, &a))
      on_ack (GST_OBJECT (sink), &a, 1);
    else
      GST_LOG_OBJECT (sink, "not a RAP ACK (%" G_GSSIZE_FORMAT " bytes)", n);
  }
  return NULL;
}

/* Without the lock: the erap-scheduler message (and, for a keyed session
 * that never heard an authentic ACK, the warning). */
static void
post_report (GstErapSink * sink, const GstErapSenderStats * st,
    const GstErapManagerStats * ms, gboolean auth_warn, guint64 auth_failures)
{
  GstStructure *s;

  if (auth_warn)
    GST_ELEMENT_WARNING (sink, RESOURCE, WRITE,
        ("No authenticated ACK: wrong passphrase or key at the receiver, or "
            "no receiver?"), ("%" G_GUINT64_FORMAT " packets sent, %"
            G_GUINT64_FORMAT " timed out, %" G_GUINT64_FORMAT " ACKs failed "
            "authentication", st->packets_sent, st->timeout_losses,
            auth_failures));
  s = gst_structure_new ("erap-scheduler",
      "total-exit-bandwidth", G_TYPE_UINT64, ms->exit_bandwidth,
      "used-bandwidth", G_TYPE_UINT64, st->active ? st->used_rate : 0,
      "available-bandwidth", G_TYPE_UINT64, st->rate,
      "queued-bits-total", G_TYPE_UINT64, ms->queued_bits,
      "queued-bits", G_TYPE_UINT64, st->queued_bytes * 8,
      "sessions", G_TYPE_UINT, ms->sessions,
      "active-sessions", G_TYPE_UINT, ms->active_sessions, NULL);
  gst_element_post_message (GST_ELEMENT (sink),
      gst_message_new_element (GST_OBJECT (sink), s));
}

/* The first buffer or event fixes the clock the session runs on. */
static void
ensure_clock_locked (GstErapSink * sink)
{
  GstClock *clock;

  if (sink->clock)
    return;
  clock = GST_ELEMENT_CLOCK (sink);
  sink->clock = clock ? gst_object_ref (clock) : gst_system_clock_obtain ();
}

/* The sender core's configuration and Libra's parameters from the
 * properties (object lock held); @keyed: sealed packets. */
static void
sender_config (GstErapSink * sink, gint keyed, GstErapSenderConfig * cfg,
    GstErapLibraParams * libra)
{
  gst_erap_sender_config_init (cfg);
  /* the core's packets; sealing adds the salt and the tag */
  cfg->mtu = sink->mtu - (keyed > 0 ? GST_ERAP_DATA_SEAL_OVERHEAD : 0);
  cfg->initial_rate = sink->initial_rate;
  cfg->min_rate = sink->min_rate;
  cfg->max_rate = sink->max_rate;
  cfg->min_rto = sink->min_rto;
  cfg->quantum = sink->pacing_quantum;
  cfg->max_rto = MAX (cfg->max_rto, cfg->min_rto);
  cfg->protocol = sink->protocol;
  cfg->report_interval = sink->scheduler_interval;
  /* the property's nicks are the laws' names */
  cfg->cc = gst_erap_cc_find (g_enum_get_value (g_type_class_peek
          (GST_TYPE_ERAP_CONGESTION_CONTROL), sink->cc)->value_nick);
  *libra = sink->libra;
  if (libra->seed == 0)
    libra->seed = ((guint64) g_random_int () << 32) | g_random_int ();
}

/* A new session's state and counters (sink->lock held). */
static void
reset_session_counters (GstErapSink * sink)
{
  sink->crypto_exhausted = FALSE;
  sink->answered = sink->failed = sink->failure_posted = FALSE;
  sink->acks_seen = 0;
  sink->last_ack_time = 0;
  sink->acks_foreign = 0;
  sink->auth_warned = FALSE;
  memset (&sink->last_crypto, 0, sizeof (sink->last_crypto));
  memset (&sink->last_libra, 0, sizeof (sink->last_libra));
  sink->flushing = FALSE;
  sink->cork_until = 0;
  sink->reactions_seen = 0;
  sink->send_errors = 0;
  memset (&sink->last, 0, sizeof (sink->last));
}

/* The peer the packets go to (NULL: learnt from a hello), and its native
 * form for sendmmsg (sink->lock held). */
static void
set_peer (GstErapSink * sink, GInetSocketAddress * peer)
{
  if (!peer) {
    sink->peer = NULL;
    return;
  }
  sink->peer = G_SOCKET_ADDRESS (g_object_ref (peer));
  sink->peer_native_len = g_socket_address_get_native_size (sink->peer);
  g_socket_address_to_native (sink->peer, &sink->peer_native,
      sizeof (sink->peer_native), NULL);
}

static gboolean
gst_erap_sink_start (GstBaseSink * bsink)
{
  GstErapSink *sink = GST_ERAP_SINK (bsink);
  GstErapSenderConfig cfg;
  GstErapLibraParams libra;
  GError *err = NULL;
  GstErapManager *m;
  GInetSocketAddress *peer;
  GstErapManagerSession *ms;
  gchar *host, *bind_address;
  guint port, bind_port;
  guint8 master[GST_ERAP_KEY_SIZE];
  gint keyed;
  GstErapProtocol protocol;
  GSocket *own = NULL;
  gboolean learn;
  guint64 hello_id;

  GST_OBJECT_LOCK (sink);
  keyed = gst_erap_crypto_master_from_settings (sink->passphrase, sink->key,
      master, &err);
  /* (mtu >= 64 leaves sealed packets 32 bytes of payload at least) */
  if (keyed < 0) {
    GST_OBJECT_UNLOCK (sink);
    GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS, (NULL), ("%s",
            err->message));
    g_clear_error (&err);
    return FALSE;
  }
  sender_config (sink, keyed, &cfg, &libra);
  protocol = sink->protocol;
  host = g_strdup (sink->host);
  port = sink->port;
  bind_address = g_strdup (sink->bind_address);
  bind_port = sink->bind_port;
  learn = sink->hello_props.learn_peer;
  hello_id = sink->hello_props.id;
  GST_OBJECT_UNLOCK (sink);

  /* the default IPv4 wildcard becomes "::" for an IPv6 receiver */
  {
    gchar *b = twoflow_net_bind_address_for (bind_address, host);

    g_free (bind_address);
    bind_address = b;
  }
  if (protocol == GST_ERAP_PROTOCOL_RAP) {
    /* the RAP baseline: a socket and an ACK thread per session */
    if (keyed > 0) {
      GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS, (NULL),
          ("protocol=rap has no keyed mode (passphrase or key)"));
      memset (master, 0, sizeof (master));
      goto fail;
    }
    if (learn) {
      GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS, (NULL),
          ("protocol=rap has no learn-peer (hellos are ERAP's)"));
      goto fail;
    }
    own = twoflow_net_udp_open (bind_address, bind_port, 0, 4 * 1024 * 1024,
        4 * 1024 * 1024, &err);
    if (!own)
      goto bind_failed;
    peer = twoflow_net_resolve (host, port, g_socket_get_family (own), &err);
    if (!peer) {
      g_socket_close (own, NULL);
      g_object_unref (own);
      goto resolve_failed;
    }
    m = NULL;
    ms = NULL;
    goto have_socket;
  }
  m = gst_erap_manager_acquire (bind_address, bind_port, &err);
  if (!m)
    goto bind_failed;
  peer = twoflow_net_resolve (host, port,
      g_socket_get_family (gst_erap_manager_get_socket (m)), &err);
  if (!peer) {
    gst_erap_manager_release (m);
    goto resolve_failed;
  }
  ms = gst_erap_manager_add_session (m, learn ? NULL : peer,
      GST_OBJECT (sink), on_ack);
  if (!ms) {
    g_object_unref (peer);
    gst_erap_manager_release (m);
    GST_ELEMENT_ERROR (sink, RESOURCE, BUSY, (NULL),
        ("another erapsink on %s:%u already sends to %s:%u", bind_address,
            bind_port, host, port));
    goto fail;
  }

have_socket:
  g_mutex_lock (&sink->lock);
  sink->manager = m;
  sink->msession = ms;
  sink->own_socket = own;
  sink->socket = m ? gst_erap_manager_get_socket (m) : own;
  sink->bound_port = twoflow_net_local_port (sink->socket);
  memset (&sink->last_hello, 0, sizeof (sink->last_hello));
  sink->last_hellos_unknown = 0;
  set_peer (sink, learn ? NULL : peer);
  /* RAP sends packet by packet */
  sink->gso = (protocol != GST_ERAP_PROTOCOL_RAP);
  sink->sender = gst_erap_sender_new (&cfg);
  sink->encrypted = keyed > 0;
  reset_session_counters (sink);
  if (keyed > 0) {
    sink->crypto = gst_erap_crypto_new (GST_ERAP_CRYPTO_SENDER, master,
        NULL);
    sink->seal_stride = sink->mtu;
    sink->seal_buf = g_malloc ((gsize) SEND_BATCH * sink->seal_stride);
    gst_erap_manager_session_set_crypto (m, ms, sink->crypto);
  }
  memset (master, 0, sizeof (master));
  if (learn && !gst_erap_manager_session_learn (m, ms, hello_id,
          g_inet_socket_address_get_address (peer), on_hello)) {
    g_mutex_unlock (&sink->lock);
    g_object_unref (peer);
    GST_ELEMENT_ERROR (sink, RESOURCE, BUSY, (NULL),
        ("another erapsink on %s:%u already learns from hello id %"
            G_GUINT64_FORMAT, bind_address, bind_port, hello_id));
    gst_erap_sink_stop (GST_BASE_SINK (sink));
    goto fail;
  }
  g_object_unref (peer);
  gst_erap_libra_configure (gst_erap_sender_get_cc (sink->sender), &libra);
  if (own) {
    sink->ack_cancel = g_cancellable_new ();
    sink->ack_thread = g_thread_new ("erap-rap-acks", rap_ack_thread, sink);
  }
  g_mutex_unlock (&sink->lock);
  if (learn)
    GST_INFO_OBJECT (sink, "on port %u, waiting for a hello (id %"
        G_GUINT64_FORMAT ") from %s", sink->bound_port, hello_id, host);
  else
    GST_INFO_OBJECT (sink, "sending to %s:%u%s", host, port,
        own ? " (RAP baseline)" : "");
  g_free (host);
  g_free (bind_address);
  return TRUE;

bind_failed:
  GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_READ_WRITE, (NULL),
      ("cannot bind %s:%u: %s", bind_address, bind_port, err->message));
  goto fail;
resolve_failed:
  GST_ELEMENT_ERROR (sink, RESOURCE, NOT_FOUND, (NULL),
      ("cannot resolve %s: %s", host, err ? err->message : ""));
fail:
  g_clear_error (&err);
  g_free (host);
  g_free (bind_address);
  return FALSE;
}

static void
drop_id (GstClockID * id)
{
  if (*id) {
    gst_clock_id_unschedule (*id);
    gst_clock_id_unref (*id);
    *id = NULL;
  }
}

static gboolean
gst_erap_sink_stop (GstBaseSink * bsink)
{
  GstErapSink *sink = GST_ERAP_SINK (bsink);
  GstErapManagerSession *ms;
  GstErapManager *m;
  GThread *thread;

  g_mutex_lock (&sink->lock);
  ms = sink->msession;
  sink->msession = NULL;
  m = sink->manager;
  thread = sink->ack_thread;
  sink->ack_thread = NULL;
  g_mutex_unlock (&sink->lock);
  /* without the sink lock: waits for an ACK being dispatched to us */
  if (ms) {
    guint64 foreign = gst_erap_manager_session_get_acks_foreign (m, ms);

    gst_erap_manager_remove_session (m, ms);
    g_mutex_lock (&sink->lock);
    sink->acks_foreign = foreign;
    g_mutex_unlock (&sink->lock);
  }
  if (thread) {
    g_cancellable_cancel (sink->ack_cancel);
    g_thread_join (thread);
  }

  g_mutex_lock (&sink->lock);
  drop_id (&sink->timer);
  drop_id (&sink->connect_id);
  if (sink->sender) {
    gst_erap_sender_get_stats (sink->sender, &sink->last);
    gst_erap_libra_get_state (gst_erap_sender_get_cc (sink->sender),
        &sink->last_libra);
    gst_erap_sender_free (sink->sender);
    sink->sender = NULL;
  }
  if (sink->crypto) {
    /* the session is gone from the manager: no ACK thread uses it */
    gst_erap_crypto_get_stats (sink->crypto, &sink->last_crypto);
    gst_erap_crypto_free (sink->crypto);
    sink->crypto = NULL;
  }
  g_clear_pointer (&sink->seal_buf, g_free);
  g_clear_object (&sink->peer);
  sink->socket = NULL;
  if (sink->own_socket) {
    g_socket_close (sink->own_socket, NULL);
    g_clear_object (&sink->own_socket);
  }
  g_clear_object (&sink->ack_cancel);
  gst_clear_object (&sink->clock);
  sink->manager = NULL;
  g_mutex_unlock (&sink->lock);
  if (m)
    gst_erap_manager_release (m);
  return TRUE;
}

typedef struct {
  GstBuffer *buf;
  GstMapInfo map;
} Mapped;

static void
mapped_free (gpointer p)
{
  Mapped *m = p;

  gst_buffer_unmap (m->buf, &m->map);
  gst_buffer_unref (m->buf);
  g_free (m);
}

/* The bytes of @buffer for the sender, which keeps them until they are
 * acknowledged. A GstMemory counts its mappings in 8 bits, so at most 255
 * may be held at once: a buffer shared with other holders (a tee, an
 * application pushing one buffer to many sinks) is copied and unmapped at
 * once; one that only we hold stays mapped, without a copy. */
static GBytes *
buffer_bytes (GstBuffer * buffer)
{
  Mapped *m;
  GBytes *bytes;
  guint i, n = gst_buffer_n_memory (buffer);
  gboolean exclusive = gst_buffer_is_writable (buffer) && n == 1;

  for (i = 0; exclusive && i < n; i++)
    exclusive = gst_mini_object_is_writable (GST_MINI_OBJECT_CAST
        (gst_buffer_peek_memory (buffer, i)));

  m = g_new0 (Mapped, 1);
  if (!gst_buffer_map (buffer, &m->map, GST_MAP_READ)) {
    g_free (m);
    return NULL;
  }
  if (!exclusive) {
    bytes = g_bytes_new (m->map.data, m->map.size);
    gst_buffer_unmap (buffer, &m->map);
    g_free (m);
    return bytes;
  }
  m->buf = gst_buffer_ref (buffer);
  return g_bytes_new_with_free_func (m->map.data, m->map.size, mapped_free,
      m);
}

static GstFlowReturn
gst_erap_sink_render (GstBaseSink * bsink, GstBuffer * buffer)
{
  GstErapSink *sink = GST_ERAP_SINK (bsink);
  GBytes *bytes;
  gsize size;
  gboolean idle;

  if (!(bytes = buffer_bytes (buffer))) {
    GST_ELEMENT_ERROR (sink, RESOURCE, READ, (NULL), ("cannot map buffer"));
    return GST_FLOW_ERROR;
  }
  size = g_bytes_get_size (bytes);

  g_mutex_lock (&sink->lock);
  ensure_clock_locked (sink);
  /* backpressure: wait for ACKs to make room */
  while (!sink->flushing && !sink->failure_posted && (sink->failed ||
          gst_erap_sender_queued_bytes (sink->sender) >=
          sink->max_queue_bytes)) {
    sink->render_waiting = TRUE;
    g_cond_wait (&sink->queue_cond, &sink->lock);
    sink->render_waiting = FALSE;
  }
  if (sink->flushing) {
    g_mutex_unlock (&sink->lock);
    g_bytes_unref (bytes);
    return GST_FLOW_FLUSHING;
  }
  if (sink->failed) {
    /* connect-timeout: the error is posted */
    g_mutex_unlock (&sink->lock);
    g_bytes_unref (bytes);
    return GST_FLOW_ERROR;
  }
  if (sink->crypto_exhausted) {
    g_mutex_unlock (&sink->lock);
    g_bytes_unref (bytes);
    GST_ELEMENT_ERROR (sink, RESOURCE, WRITE, (NULL),
        ("2^32 packets sent under one session key: restart the session "
            "for a new key"));
    return GST_FLOW_ERROR;
  }
  idle = gst_erap_sender_is_idle (sink->sender);
  gst_erap_sender_handle_message (sink->sender, bytes, now_locked (sink));
  g_bytes_unref (bytes);
  if (!idle && sink->timer) {
    /* already sending: the timer and the ACKs take it from here; serving
     * from here too would only fight them for the lock */
    g_mutex_unlock (&sink->lock);
    return GST_FLOW_OK;
  }
  if (idle && sink->pacing_quantum > 0 && size < GSO_MAX_BYTES) {
    /* small buffers after a pause wait up to a quantum for the ones that
     * follow, so they leave as one burst (one UDP_SEGMENT datagram)
     * rather than a system call and an ACK wakeup each */
    GstClockTime now = now_locked (sink);

    sink->cork_until = now + sink->pacing_quantum;
    service_and_unlock (sink, now, FALSE);
    return GST_FLOW_OK;
  }
  service_and_unlock (sink, now_locked (sink), TRUE);
  return GST_FLOW_OK;
}

/* EOS: everything acknowledged (TRUE), or an error posted (FALSE: the
 * data did not all arrive, and EOS must not say it did). */
static gboolean
wait_acknowledged (GstErapSink * sink)
{
  guint64 queued = 0;
  gboolean expired = FALSE, failed;
  GstClockTime now;

  g_mutex_lock (&sink->lock);
  if (!sink->sender) {
    g_mutex_unlock (&sink->lock);
    return TRUE;
  }
  ensure_clock_locked (sink);
  now = now_locked (sink);
  gst_erap_sender_handle_eos (sink->sender, now);
  service_and_unlock (sink, now, TRUE);

  g_mutex_lock (&sink->lock);
  if (!sink->flushing && !sink->failed &&
      !gst_erap_sender_is_done (sink->sender)) {
    GstClockID id = gst_clock_new_single_shot_id (sink->clock,
        now + sink->linger);

    sink->linger_id = id;
    g_mutex_unlock (&sink->lock);
    gst_clock_id_wait (id, NULL);
    g_mutex_lock (&sink->lock);
    sink->linger_id = NULL;
    gst_clock_id_unref (id);
    if (!sink->flushing && !sink->failed &&
        !gst_erap_sender_is_done (sink->sender)) {
      expired = TRUE;
      queued = gst_erap_sender_queued_bytes (sink->sender);
    }
  }
  /* a connect-timeout that fired: its error first, then our FALSE (an
   * EOS that fails before it is posted would let upstream's flow error
   * reach the bus first) */
  while (sink->failed && !sink->failure_posted && !sink->flushing)
    g_cond_wait (&sink->queue_cond, &sink->lock);
  failed = sink->failed;
  g_mutex_unlock (&sink->lock);
  if (expired)
    GST_ELEMENT_ERROR (sink, RESOURCE, WRITE,
        ("%" G_GUINT64_FORMAT " bytes were not acknowledged", queued),
        ("linger of %" GST_TIME_FORMAT " expired before the receiver "
            "acknowledged everything", GST_TIME_ARGS (sink->linger)));
  return !expired && !failed;
}

static gboolean
gst_erap_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstErapSink *sink = GST_ERAP_SINK (bsink);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && !wait_acknowledged (sink)) {
    /* an error is posted: no EOS for lost data */
    gst_event_unref (event);
    return FALSE;
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (bsink, event);
}

static gboolean
gst_erap_sink_unlock (GstBaseSink * bsink)
{
  GstErapSink *sink = GST_ERAP_SINK (bsink);

  g_mutex_lock (&sink->lock);
  sink->flushing = TRUE;
  g_cond_broadcast (&sink->queue_cond);
  if (sink->linger_id)
    gst_clock_id_unschedule (sink->linger_id);
  g_mutex_unlock (&sink->lock);
  return TRUE;
}

static gboolean
gst_erap_sink_unlock_stop (GstBaseSink * bsink)
{
  GstErapSink *sink = GST_ERAP_SINK (bsink);

  g_mutex_lock (&sink->lock);
  sink->flushing = FALSE;
  g_mutex_unlock (&sink->lock);
  return TRUE;
}

/* erap://host:port URIs (GstURIHandler), as srtsink has srt:// */

static GstURIType
gst_erap_sink_uri_get_type (GType type)
{
  return GST_URI_SINK;
}

static const gchar *const *
gst_erap_sink_uri_get_protocols (GType type)
{
  static const gchar *protocols[] = { "erap", NULL };

  return protocols;
}

static gchar *
gst_erap_sink_uri_get_uri (GstURIHandler * handler)
{
  return twoflow_uri_make (GST_ELEMENT (handler), "erap", "host", "port");
}

static gboolean
gst_erap_sink_uri_set_uri (GstURIHandler * handler, const gchar * str,
    GError ** error)
{
  return twoflow_uri_apply (GST_ELEMENT (handler), str, "erap", "host",
      "port", NULL, DEFAULT_PORT, 1, error);
}

static void
gst_erap_sink_uri_handler_init (gpointer g_iface, gpointer iface_data)
{
  GstURIHandlerInterface *iface = (GstURIHandlerInterface *) g_iface;

  iface->get_type = gst_erap_sink_uri_get_type;
  iface->get_protocols = gst_erap_sink_uri_get_protocols;
  iface->get_uri = gst_erap_sink_uri_get_uri;
  iface->set_uri = gst_erap_sink_uri_set_uri;
}
