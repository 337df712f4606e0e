/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rudpsrc */
/**
 * SECTION:element-rudpsrc
 * @title: rudpsrc
 * @see_also: rudpsink, udpsrc, rtpjitterbuffer
 *
 * Receives the RTP flow of a rudpsink and pushes it on for a stock chain
 * (`rtpjitterbuffer ! rtpgstdepay`, or any depayloader); set
 * #GstRudpSrc:caps as for udpsrc. It is live and timestamps each packet
 * with its arrival (running) time.
 *
 * It measures loss per round-trip time from the RTP sequence numbers and
 * runs the receiver algorithm of the rate levels: at the end of each RTT
 * (floored to #GstRudpSrc:min-interval) it halves the level if a packet
 * was lost (one reaction per loss episode: losses of packets sent before
 * the sender switched do not count); it raises the level by one once the
 * packets sent at the current level have arrived without loss for long
 * enough: #GstRudpSrc:increase-rtts RTTs and, with
 * #GstRudpSrc:tcp-friendly, step × RTT² (the level step in packets/s: no
 * faster than TCP's additive increase of one packet per RTT per RTT), and
 * either #GstRudpSrc:increase-packets packets or, by the time rule
 * (#GstRudpSrc:increase-time), three packets arriving at the level's rate
 * and the wait counted from the level's request (packet-or-time). A round-trip time may hold less than one packet at
 * the low levels, so "no loss in an RTT" alone says nothing; at the high
 * levels the packet count sets the loss rate the flow settles at (about
 * 1/increase-packets), at the low ones, where that many packets take
 * seconds, the time lets it climb. It sends the level to the sender's address and
 * port (where the RTP came from) as an RTCP compound packet: RR with a
 * report block, TMMBR (RFC 5104) with the level's bitrate, and an APP
 * packet "RUDP" with the exact level and a timestamp. The sender's answer
 * (TMMBN + APP) echoes the timestamp, which gives the RTT; before the first
 * answer #GstRudpSrc:initial-rtt is used. The feedback goes out when the
 * level changes and at least every #GstRudpSrc:feedback-interval. RTCP
 * arriving on the port (RFC 5761 multiplexing) is consumed, not pushed.
 *
 * An EOS event sent to the element ends the flow after the datagrams
 * already in the socket's buffer: they arrived, so they are pushed before
 * the EOS (an application ending a flow when its sender says it is done
 * loses nothing the network delivered).
 *
 * The streaming thread does nothing but read datagrams and push them: it
 * answers ALLOCATION queries itself (it copies each datagram into memory
 * of its own and needs no pool), because a serialized query waits in
 * rtpjitterbuffer until its playout buffer has drained — seconds during
 * which nothing was read and the kernel dropped what did not fit.
 *
 * ECN (RFC 3168): the ECN field of each packet's IP header is read
 * (IP_RECVTOS / IPV6_RECVTCLASS); a packet marked CE (Congestion
 * Experienced, by an ECN-enabled AQM such as RED in place of an early
 * drop) halves the level at once, as a loss does, under the same
 * one-reaction-per-episode rule (RFC 6679's receiver-driven congestion
 * control); so does a CE mark on the sender's RTCP notice, which crossed
 * the same queues. The sender makes its packets ECN-capable with
 * #GstRudpSink:ecn; without it nothing is marked and nothing changes. The
 * feedback rudpsrc sends stays Not-ECT (as TCP's pure ACKs: nobody would
 * react to a mark on it).
 *
 * The receiver algorithm is a sans-IO core (gst-libs/gst/rudp) driven the
 * way every twoflow shell drives its core: the streaming thread feeds it
 * each packet at its arrival time, and a timer thread (as rtpsession's
 * RTCP thread) runs `now = clock; advance(now); wait(next_wakeup())` on a
 * single-shot #GstClockID of the system clock (a #GstTestClock installed
 * with gst_system_clock_set_default() drives it), so rounds end and
 * feedback goes out on time also while no packet arrives (an outage).
 *
 * The #GstRudpSrc:stats structure `application/x-rudpsrc-stats` has:
 *
 * * `received` (guint64): RTP packets received, duplicates included
 * * `duplicates` (guint64): of those, second copies of a packet (a
 *   retransmission answered twice)
 * * `lost` (guint64): packets expected (from sequence numbers) but not
 *   received (a duplicate does not make up for one)
 * * `level` (guint): the rate level the receiver asks for
 * * `feedback-sent` (guint64): feedback packets sent
 * * `nacks-sent` (guint64): Generic NACKs sent (#GstRudpSrc:retransmission)
 * * `nacks-held` (guint64): retransmission requests not sent: a NACK for
 *   the same packet went out less than the SRTT before
 * * `loss-events` (guint64), `loss-event-rate` (gdouble), `tfrc-rate`
 *   (guint64, bit/s; 0 before a loss event): #GstRudpSrc:law `tfrc`'s
 *   loss event rate and the equation's rate
 * * `rtx-recovered` (guint64): NACKed packets that arrived after all (so
 *   `lost` + `rtx-recovered` is the loss the path did)
 * * `notices-received` (guint64): sender answers received
 * * `decreases`, `increases` (guint64): level changes by the algorithm
 * * `rounds` (guint64): round-trip intervals judged
 * * `clean-packets` (guint64): packets of the current level received
 *   since the level took effect or the last loss
 * * `increase-wait` (guint64): ns of loss-free time at the current level
 *   needed before an increase (RTTs or the TCP-friendly term)
 * * `srtt` (guint64): smoothed RTT, ns (0 until measured)
 * * `ect-received` (guint64): packets that arrived ECN-capable (ECT(0),
 *   ECT(1) or CE in the IP header: the sender's #GstRudpSink:ecn)
 * * `ce-marked` (guint64): of those, marked CE (Congestion Experienced) by
 *   an ECN-enabled AQM on the path
 * * `ce-decreases` (guint64): decreases caused by a CE mark (counted in
 *   `decreases` too)
 * * `ce-marked-rtcp` (guint64): the sender's RTCP notices that arrived
 *   marked CE (they react as a marked RTP packet does)
 * * `port` (gint): the UDP port bound
 * * `buffer-size-granted` (gint): the receive buffer the kernel gave, in
 *   bytes as #GstRudpSrc:buffer-size asks (0 before start); less than
 *   asked for (net.core.rmem_max without CAP_NET_ADMIN) also posts a
 *   warning message
 * * `kernel-drops` (guint64): datagrams the kernel dropped because the
 *   socket's receive buffer was full (SO_RXQ_OVFL / SO_MEMINFO): loss at
 *   the receiver, not on the network (they count in `lost` too)
 * * `srtp` (gboolean): whether the flow is SRTP/SRTCP (#GstRudpSrc:key set)
 * * `auth-failures` (guint64): datagrams dropped because they failed SRTP or
 *   SRTCP authentication (plaintext, another key, garbage)
 * * `replayed` (guint64): authentic datagrams dropped as replays
 * * `foreign-rtcp` (guint64): plaintext mode: sender notices dropped because
 *   they did not come from where the RTP comes from
 * * `foreign-packets` (guint64): datagrams other than RTCP dropped because
 *   they did not come from the sender (plaintext: the address and port of
 *   the first RTP packet; #GstRudpSrc:accept-host's address in both modes)
 *
 * * `hellos-sent` (guint64): hellos sent (#GstRudpSrc:hello-host)
 * * `hello-errors` (guint64): hellos not sent (socket or SRTCP error)
 *
 * ## Behind NAT: the hello
 *
 * A receiver behind NAT cannot be sent to first. With
 * #GstRudpSrc:hello-host and #GstRudpSrc:hello-port set (the sender's
 * address and #GstRudpSink:current-port), the timer thread sends a *hello*
 * from the socket the RTP arrives on: an RTCP compound (RR + APP "HELO"
 * with #GstRudpSrc:hello-id and a counter; SRTCP with #GstRudpSrc:key),
 * at once and every #GstRudpSrc:hello-interval until RTP arrives (a hello
 * may be lost), then every #GstRudpSrc:keepalive-interval so the NAT keeps
 * the mapping. A rudpsink with #GstRudpSink:learn-peer sends to where the
 * hello came from, and the feedback (sent to where the RTP comes from)
 * takes the same mapping back (docs/security.md, NAT).
 *
 * ## Security
 *
 * Without a key (plaintext, for a lab only) the sender is the source
 * address and port of the first RTP packet from #GstRudpSrc:accept-host's
 * address (else #GstRudpSrc:hello-host's, else from anywhere: whoever
 * speaks first); RTP and anything else from another address or port is
 * dropped and counted (`foreign-packets`) and never touches the loss
 * counting, the level or the feedback address, and notices count only
 * from the sender (`foreign-rtcp`). An application that knows its sender
 * (the peer of its control connection) sets #GstRudpSrc:accept-host.
 *
 * With #GstRudpSrc:key (the same SRTP master key and salt as the
 * rudpsink's, in hex) every packet must be authentic SRTP (RTP) or SRTCP
 * (the sender's notices), and is decrypted; anything else (plaintext,
 * another key, garbage, a replayed index: libsrtp's replay window of 1024
 * packets) is dropped, counted and never pushed, and does not touch the
 * loss counting, the RTT or the feedback address. The feedback leaves as
 * SRTCP.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 rudpsrc port=5004 caps="application/x-rtp,media=application,clock-rate=90000,encoding-name=X-GST" ! rtpjitterbuffer ! rtpgstdepay ! videoconvert ! autovideosink
 * ]| Receives what
 * `gst-launch-1.0 videotestsrc ! video/x-raw,format=I420,width=160,height=120,framerate=5/1 ! rtpgstpay mtu=1000 config-interval=1 ! rudpsink host=127.0.0.1 port=5004 rate-control=receiver`
 * sends, choosing its rate.
 * |[
 * gst-launch-1.0 rudpsrc port=0 hello-host=SERVER hello-port=5008 hello-id=42 caps="application/x-rtp,media=application,clock-rate=90000,encoding-name=X-GST" ! rtpjitterbuffer ! rtpgstdepay ! videoconvert ! autovideosink
 * ]| Behind NAT: says hello from its socket to SERVER's port 5008 until RTP
 * comes, then every 15 s; the sender there runs
 * `rudpsink learn-peer=true hello-id=42 bind-port=5008 host=<the NAT's
 * public address>`.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <gst/rtp/gstrtpbuffer.h>
#include <netinet/in.h>
#include "twoflownet.h"
#include "twoflowprops.h"
#include "gstrudpsrc.h"

GST_DEBUG_CATEGORY_STATIC (rudp_src_debug);
#define GST_CAT_DEFAULT rudp_src_debug

#define DEFAULT_ADDRESS            "0.0.0.0"
#define DEFAULT_PORT               5004
#define DEFAULT_BUFFER_SIZE        (1024 * 1024)
#define DEFAULT_FEEDBACK           TRUE
#define DEFAULT_MIN_INTERVAL       GST_RUDP_DEFAULT_MIN_INTERVAL
#define DEFAULT_INCREASE_RTTS      GST_RUDP_DEFAULT_INCREASE_RTTS
#define DEFAULT_INCREASE_PACKETS   GST_RUDP_DEFAULT_INCREASE_PACKETS
#define DEFAULT_INCREASE_TIME      GST_RUDP_DEFAULT_INCREASE_TIME
#define DEFAULT_TCP_FRIENDLY       TRUE
#define DEFAULT_FEEDBACK_INTERVAL  (200 * GST_MSECOND)
#define DEFAULT_INITIAL_RTT        (100 * GST_MSECOND)
#define MAX_PACKET                 65536
#define DEFAULT_KEY                NULL
#define DEFAULT_SRTP_CIPHER        GST_RUDP_SRTP_CIPHER_AUTO
#define DEFAULT_SRTP_AUTH          GST_RUDP_SRTP_AUTH_HMAC_SHA1_80

enum {
  PROP_0,
  PROP_HELLO_FIRST,
  PROP_HELLO_LAST = PROP_HELLO_FIRST + TWOFLOW_HELLO_RECEIVER_N_PROPS - 1,
  PROP_URI,
  PROP_ADDRESS,
  PROP_PORT,
  PROP_CAPS,
  PROP_BUFFER_SIZE,
  PROP_FEEDBACK,
  PROP_LEVELS,
  PROP_MIN_INTERVAL,
  PROP_FEEDBACK_INTERVAL,
  PROP_INITIAL_RTT,
  PROP_INCREASE_RTTS,
  PROP_INCREASE_PACKETS,
  PROP_INCREASE_TIME,
  PROP_TCP_FRIENDLY,
  PROP_KEY,
  PROP_SRTP_CIPHER,
  PROP_SRTP_AUTH,
  PROP_STATS,
  PROP_RETRANSMISSION,
  PROP_LAW,
};
#define DEFAULT_RETRANSMISSION     TRUE
#define DEFAULT_LAW                GST_RUDP_LAW_TFRC

#define GST_TYPE_RUDP_LAW (gst_rudp_law_get_type ())
static GType
gst_rudp_law_get_type (void)
{
  static GType t = 0;
  static const GEnumValue values[] = {
    {GST_RUDP_LAW_HALVING, "Halve the level on a loss in a round (the "
          "paper's law)", "halving"},
    {GST_RUDP_LAW_TFRC, "Down to the level the TFRC equation allows for the "
          "loss event rate and RTT (random loss on a fast path costs "
          "nothing)", "tfrc"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&t)) {
    GType tmp = g_enum_register_static ("GstRudpLaw", values);
    g_once_init_leave (&t, tmp);
  }
  return t;
}


static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS ("application/x-rtp"));

#define gst_rudp_src_parent_class parent_class
static void gst_rudp_src_uri_handler_init (gpointer g_iface,
    gpointer iface_data);
G_DEFINE_TYPE_WITH_CODE (GstRudpSrc, gst_rudp_src, GST_TYPE_PUSH_SRC,
    G_IMPLEMENT_INTERFACE (GST_TYPE_URI_HANDLER,
        gst_rudp_src_uri_handler_init));
GST_ELEMENT_REGISTER_DEFINE (rudpsrc, "rudpsrc", GST_RANK_NONE,
    GST_TYPE_RUDP_SRC);

static void gst_rudp_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_rudp_src_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_rudp_src_finalize (GObject * object);
static GstCaps *gst_rudp_src_get_caps (GstBaseSrc * src, GstCaps * filter);
static gboolean gst_rudp_src_start (GstBaseSrc * bsrc);
static gboolean gst_rudp_src_stop (GstBaseSrc * bsrc);
static gboolean gst_rudp_src_unlock (GstBaseSrc * bsrc);
static gboolean gst_rudp_src_unlock_stop (GstBaseSrc * bsrc);
static GstFlowReturn gst_rudp_src_create (GstPushSrc * psrc,
    GstBuffer ** buf);
static gboolean gst_rudp_src_send_event (GstElement * element,
    GstEvent * event);
static gboolean gst_rudp_src_event (GstBaseSrc * bsrc, GstEvent * event);

static void
gst_rudp_src_class_init (GstRudpSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *bs_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *ps_class = GST_PUSH_SRC_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (rudp_src_debug, "rudpsrc", 0,
      "RTP/UDP receiver with rate levels");

  gobject_class->set_property = gst_rudp_src_set_property;
  gobject_class->get_property = gst_rudp_src_get_property;
  /**
   * GstRudpSrc:uri:
   *
   * The local address and port to receive on as a `rudp://address:port`
   * URI: `rudp://:5004` (every IPv4 address), `rudp://[::]:5004` (IPv6);
   * no port means 5004. Query parameters set other properties by name,
   * with values as on a gst-launch-1.0 line, the RTP caps among them:
   * `rudp://:5004?caps=application/x-rtp,media=video,clock-rate=90000,encoding-name=MP2T`.
   * Reading it back gives `rudp://address:port`, with the query of the URI
   * last set: the same keys with the properties' current values. The same
   * URI makes a rudpsrc with gst_element_make_from_uri(), so
   * uridecodebin, urisourcebin and playbin play `rudp://` URIs (the caps
   * choose the depayloader).
   */
  g_object_class_install_property (gobject_class, PROP_URI,
      g_param_spec_string ("uri", "URI",
          "rudp://address:port[?property=value&...] to receive on",
          "rudp://" DEFAULT_ADDRESS ":5004", G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  gobject_class->finalize = gst_rudp_src_finalize;

  /**
   * GstRudpSrc:address:
   *
   * Local address to bind.
   */
  g_object_class_install_property (gobject_class, PROP_ADDRESS,
      g_param_spec_string ("address", "Address", "Local address to bind",
          DEFAULT_ADDRESS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:port:
   *
   * UDP port to bind (0: any; read the bound one in stats). A guint, as
   * every port property of the twoflow elements (it was a gint).
   */
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port", "UDP port to bind (0 = any)", 0,
          65535, DEFAULT_PORT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:caps:
   *
   * Caps of the RTP stream, as for udpsrc.
   */
  g_object_class_install_property (gobject_class, PROP_CAPS,
      g_param_spec_boxed ("caps", "Caps", "Caps of the RTP stream",
          GST_TYPE_CAPS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:buffer-size:
   *
   * Kernel receive buffer size in bytes (SO_RCVBUF; 0: the default).
   */
  g_object_class_install_property (gobject_class, PROP_BUFFER_SIZE,
      g_param_spec_int ("buffer-size", "Buffer size",
          "Kernel receive buffer in bytes (0 = default)", 0, G_MAXINT,
          DEFAULT_BUFFER_SIZE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:feedback:
   *
   * Whether to run the rate levels and send feedback to the sender.
   */
  g_object_class_install_property (gobject_class, PROP_FEEDBACK,
      g_param_spec_boolean ("feedback", "Feedback",
          "Send rate level feedback to the sender", DEFAULT_FEEDBACK,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:levels:
   *
   * The rate level table in bit/s, as the sender's (#GstRudpSink:levels);
   * the number of levels, the TMMBR bitrate and the TCP-friendly wait
   * depend on it.
   */
  g_object_class_install_property (gobject_class, PROP_LEVELS,
      gst_param_spec_array ("levels", "Levels",
          "Rate levels in bit/s, increasing (as the sender's)",
          g_param_spec_uint64 ("level", "Level", "Rate in bit/s", 1,
              G_GUINT64_CONSTANT (80000000000), GST_RUDP_DEFAULT_LEVEL_STEP,
              G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS),
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:min-interval:
   *
   * Shortest judging interval in ns: the RTT is floored to it (on a LAN
   * the RTT is far shorter than a packet gap).
   */
  g_object_class_install_property (gobject_class, PROP_MIN_INTERVAL,
      g_param_spec_uint64 ("min-interval", "Minimum interval",
          "Floor of the loss judging interval (the RTT) in ns", GST_MSECOND,
          10 * GST_SECOND, DEFAULT_MIN_INTERVAL, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:feedback-interval:
   *
   * Longest time between two feedback packets in ns.
   */
  g_object_class_install_property (gobject_class, PROP_FEEDBACK_INTERVAL,
      g_param_spec_uint64 ("feedback-interval", "Feedback interval",
          "Longest time between feedback packets in ns", 10 * GST_MSECOND,
          60 * GST_SECOND, DEFAULT_FEEDBACK_INTERVAL, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:initial-rtt:
   *
   * RTT assumed until the first measurement, in ns.
   */
  g_object_class_install_property (gobject_class, PROP_INITIAL_RTT,
      g_param_spec_uint64 ("initial-rtt", "Initial RTT",
          "RTT assumed until measured, in ns", GST_MSECOND, 10 * GST_SECOND,
          DEFAULT_INITIAL_RTT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:increase-rtts:
   *
   * A level increase needs at least this many loss-free round-trip times
   * (each floored to #GstRudpSrc:min-interval) at the current level; 1 is
   * the paper's "raise it by one per RTT".
   */
  g_object_class_install_property (gobject_class, PROP_INCREASE_RTTS,
      g_param_spec_uint ("increase-rtts", "Increase RTTs",
          "Loss-free RTTs at the current level before going one level up",
          1, 1000, DEFAULT_INCREASE_RTTS, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:increase-packets:
   *
   * A level increase needs at least this many packets sent at the current
   * level to have arrived with no loss since the level took effect. The
   * flow goes up while its loss rate is well below 1/increase-packets and
   * settles at about that loss rate; it also sets the pace of the climb
   * (at level k of the default table with 1000-byte packets, 20 (k + 1)
   * packets/s).
   */
  g_object_class_install_property (gobject_class, PROP_INCREASE_PACKETS,
      g_param_spec_uint ("increase-packets", "Increase packets",
          "Loss-free packets at the current level before going one level up",
          1, 1000000, DEFAULT_INCREASE_PACKETS, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:increase-time:
   *
   * The time rule, the alternative to #GstRudpSrc:increase-packets
   * packets (whichever allows it first; 0: the packets only): go one
   * level up once three packets sent at the current level have arrived
   * without loss and at (7/8 of) the level's rate, and this long (ns), but
   * at least #GstRudpSrc:increase-rtts RTTs and, with
   * #GstRudpSrc:tcp-friendly, step × RTT², has passed since the level was
   * asked for — TCP's pace whatever the packet rate. At low packet rates
   * the packet count alone stalls the climb (50 packets at 20 packets/s:
   * 2.5 s per level). The arrival rate stands in for TCP's ACK clock: a
   * paced flow above the capacity arrives at the capacity.
   */
  g_object_class_install_property (gobject_class, PROP_INCREASE_TIME,
      g_param_spec_uint64 ("increase-time", "Increase time",
          "Or go up once this long (ns, and the RTT waits) has passed since "
          "the level was asked for with no loss (0: increase-packets only)",
          0, G_MAXUINT64, DEFAULT_INCREASE_TIME, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:tcp-friendly:
   *
   * Also wait step × RTT² before a level increase (the step between the
   * current and the next level in packets/s, from the mean packet size):
   * TCP adds 1/RTT packets/s to its rate per RTT, so a flow that adds
   * `step` packets/s per interval I is no more aggressive when
   * I ≥ step × RTT². Matters on long paths (the default table with
   * 1000-byte packets: 12.5 ms at 25 ms RTT, 800 ms at 200 ms).
   */
  g_object_class_install_property (gobject_class, PROP_TCP_FRIENDLY,
      g_param_spec_boolean ("tcp-friendly", "TCP-friendly",
          "Increase no faster than TCP's additive increase (step x RTT^2)",
          DEFAULT_TCP_FRIENDLY, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:key:
   *
   * SRTP master key and salt as a hex string, as rudpsink's #GstRudpSink:key
   * (30 bytes for AES-128-ICM, 46 for AES-256-ICM, 28 / 44 for GCM). NULL or
   * empty (default): plaintext. Write-only.
   */
  g_object_class_install_property (gobject_class, PROP_KEY,
      g_param_spec_string ("key", "Key",
          "SRTP master key and salt in hex (empty: plaintext)", DEFAULT_KEY,
          G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:srtp-cipher:
   *
   * The SRTP cipher; `auto` picks AES-128-ICM or AES-256-ICM from the key
   * length.
   */
  g_object_class_install_property (gobject_class, PROP_SRTP_CIPHER,
      g_param_spec_enum ("srtp-cipher", "SRTP cipher", "SRTP cipher",
          GST_TYPE_RUDP_SRTP_CIPHER, DEFAULT_SRTP_CIPHER, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:srtp-auth:
   *
   * The SRTP authentication of the ICM ciphers; must match the sender's.
   */
  g_object_class_install_property (gobject_class, PROP_SRTP_AUTH,
      g_param_spec_enum ("srtp-auth", "SRTP authentication",
          "SRTP authentication tag", GST_TYPE_RUDP_SRTP_AUTH,
          DEFAULT_SRTP_AUTH, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSrc:stats:
   *
   * Statistics, see the element description.
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics", "Receiver statistics",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstRudpSrc:retransmission:
   *
   * Answer the retransmission requests of a downstream rtpjitterbuffer
   * (do-retransmission=true: upstream `GstRTPRetransmissionRequest`
   * events) with an RTCP Generic NACK (RFC 4585) to the sender, which
   * rudpsink answers by sending the packet again (#GstRudpSink:rtx-time).
   */
  g_object_class_install_property (gobject_class, PROP_RETRANSMISSION,
      g_param_spec_boolean ("retransmission", "Retransmission",
          "Send a Generic NACK to the sender for each retransmission request "
          "from downstream (rtpjitterbuffer do-retransmission=true)",
          DEFAULT_RETRANSMISSION, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstRudpSrc:law:
   *
   * How a loss moves the level down: `halving` (the paper's law: half the
   * level on a loss in a round; at 1 % random loss it sits at level 0) or
   * `tfrc` (the level the TFRC equation, RFC 5348, allows for the loss
   * event rate and RTT: isolated random loss on a fast path leaves the
   * level where the path carries it, congestion brings it to the
   * TCP-fair rate). Increases follow the same rules under both, up to the
   * equation's level under `tfrc`.
   */
  g_object_class_install_property (gobject_class, PROP_LAW,
      g_param_spec_enum ("law", "Law",
          "How a loss lowers the level: halving (the paper's) or tfrc "
          "(the TFRC equation's level for the loss event rate)",
          GST_TYPE_RUDP_LAW, DEFAULT_LAW, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));

  /* NAT traversal (hello-*, accept-host), the group erap and rudp share:
   * gst/common/twoflowprops.c */
  twoflow_hello_receiver_props_install (gobject_class, PROP_HELLO_FIRST);

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "rUDP source",
      "Source/Network",
      "Receives RTP over UDP and asks the sender for a rate level by RTCP "
      "feedback", "twoflow developers <dev@twoflow.invalid>");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, TWOFLOW_DOC_URI_BASE "rudp.md");

  element_class->send_event = GST_DEBUG_FUNCPTR (gst_rudp_src_send_event);
  bs_class->get_caps = GST_DEBUG_FUNCPTR (gst_rudp_src_get_caps);
  bs_class->event = GST_DEBUG_FUNCPTR (gst_rudp_src_event);
  bs_class->start = GST_DEBUG_FUNCPTR (gst_rudp_src_start);
  bs_class->stop = GST_DEBUG_FUNCPTR (gst_rudp_src_stop);
  bs_class->unlock = GST_DEBUG_FUNCPTR (gst_rudp_src_unlock);
  bs_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_rudp_src_unlock_stop);
  ps_class->create = GST_DEBUG_FUNCPTR (gst_rudp_src_create);
}

static void
gst_rudp_src_init (GstRudpSrc * src)
{
  twoflow_hello_receiver_props_init (&src->hello_props);
  src->address = g_strdup (DEFAULT_ADDRESS);
  src->port = DEFAULT_PORT;
  src->buffer_size = DEFAULT_BUFFER_SIZE;
  src->feedback = DEFAULT_FEEDBACK;
  src->retransmission = DEFAULT_RETRANSMISSION;
  src->min_interval = DEFAULT_MIN_INTERVAL;
  src->feedback_interval = DEFAULT_FEEDBACK_INTERVAL;
  src->initial_rtt = DEFAULT_INITIAL_RTT;
  src->increase_rtts = DEFAULT_INCREASE_RTTS;
  src->increase_packets = DEFAULT_INCREASE_PACKETS;
  src->increase_time = DEFAULT_INCREASE_TIME;
  src->tcp_friendly = DEFAULT_TCP_FRIENDLY;
  src->law = DEFAULT_LAW;
  gst_rudp_levels_init_default (&src->levels);
  src->srtp_cipher = DEFAULT_SRTP_CIPHER;
  src->srtp_auth = DEFAULT_SRTP_AUTH;
  g_mutex_init (&src->lock);
  g_cond_init (&src->timer_cond);
  gst_base_src_set_live (GST_BASE_SRC (src), TRUE);
  gst_base_src_set_format (GST_BASE_SRC (src), GST_FORMAT_TIME);
  gst_base_src_set_do_timestamp (GST_BASE_SRC (src), TRUE);
  twoflow_net_answer_allocation (GST_BASE_SRC_PAD (src));
}

static void
gst_rudp_src_finalize (GObject * object)
{
  GstRudpSrc *src = GST_RUDP_SRC (object);
  twoflow_hello_receiver_props_clear (&src->hello_props);

  g_free (src->address);
  if (src->key)
    memset (src->key, 0, strlen (src->key));
  g_free (src->key);
  gst_caps_replace (&src->caps, NULL);
  g_clear_pointer (&src->receiver, gst_rudp_receiver_free);
  g_free (src->scratch);
  g_mutex_clear (&src->lock);
  g_cond_clear (&src->timer_cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_rudp_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstRudpSrc *src = GST_RUDP_SRC (object);

  /* the URI sets other properties, which take the lock themselves */
  if (prop_id == PROP_URI) {
    twoflow_uri_property_set (GST_ELEMENT (object), value);
    return;
  }
  GST_OBJECT_LOCK (src);
  switch (prop_id) {
    case PROP_ADDRESS:
      g_free (src->address);
      src->address = g_value_dup_string (value);
      break;
    case PROP_PORT:
      src->port = g_value_get_uint (value);
      break;
    case PROP_CAPS:
      gst_caps_replace (&src->caps, (GstCaps *) gst_value_get_caps (value));
      break;
    case PROP_BUFFER_SIZE:
      src->buffer_size = g_value_get_int (value);
      break;
    case PROP_FEEDBACK:
      src->feedback = g_value_get_boolean (value);
      break;
    case PROP_RETRANSMISSION:
      g_mutex_lock (&src->lock);
      src->retransmission = g_value_get_boolean (value);
      g_mutex_unlock (&src->lock);
      break;
    case PROP_LEVELS:{
      guint64 rates[GST_RUDP_MAX_LEVELS];
      guint i, n = gst_value_array_get_size (value);
      gboolean ok = n > 0 && n <= GST_RUDP_MAX_LEVELS;

      for (i = 0; ok && i < n; i++) {
        GValue u = G_VALUE_INIT;

        g_value_init (&u, G_TYPE_UINT64);
        ok = g_value_transform (gst_value_array_get_value (value, i), &u);
        rates[i] = g_value_get_uint64 (&u);
      }
      if (!ok || !gst_rudp_levels_set (&src->levels, rates, n))
        g_warning ("rudpsrc: levels must be 1 to %d increasing positive "
            "rates", GST_RUDP_MAX_LEVELS);
      break;
    }
    case PROP_MIN_INTERVAL:
      src->min_interval = g_value_get_uint64 (value);
      break;
    case PROP_FEEDBACK_INTERVAL:
      src->feedback_interval = g_value_get_uint64 (value);
      break;
    case PROP_INITIAL_RTT:
      src->initial_rtt = g_value_get_uint64 (value);
      break;
    case PROP_INCREASE_RTTS:
      src->increase_rtts = g_value_get_uint (value);
      break;
    case PROP_INCREASE_PACKETS:
      src->increase_packets = g_value_get_uint (value);
      break;
    case PROP_INCREASE_TIME:
      src->increase_time = g_value_get_uint64 (value);
      break;
    case PROP_TCP_FRIENDLY:
      src->tcp_friendly = g_value_get_boolean (value);
      break;
    case PROP_LAW:
      src->law = g_value_get_enum (value);
      break;
    case PROP_KEY:
      if (src->key)
        memset (src->key, 0, strlen (src->key));
      g_free (src->key);
      src->key = g_value_dup_string (value);
      break;
    case PROP_SRTP_CIPHER:
      src->srtp_cipher = g_value_get_enum (value);
      break;
    case PROP_SRTP_AUTH:
      src->srtp_auth = g_value_get_enum (value);
      break;
    default:
      if (!twoflow_hello_receiver_props_set (&src->hello_props,
              prop_id - PROP_HELLO_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (src);
}

static GstStructure *
make_stats (GstRudpSrc * src)
{
  GstRudpReceiverStats st = { 0 };
  GstStructure *s;
  guint32 drops;

  g_mutex_lock (&src->lock);
  /* also the drops after the last datagram read */
  if (src->socket && twoflow_net_socket_drops (src->socket, &drops)
      && drops > src->kernel_drops)
    src->kernel_drops = drops;
  if (src->receiver)
    gst_rudp_receiver_get_stats (src->receiver, &st);
  if (src->hello)
    gst_twoflow_hello_get_stats (src->hello, &src->last_hello);
  s = gst_structure_new ("application/x-rudpsrc-stats",
      "received", G_TYPE_UINT64, st.received,
      "duplicates", G_TYPE_UINT64, st.duplicates,
      "lost", G_TYPE_UINT64, st.lost,
      "level", G_TYPE_UINT, st.level,
      "feedback-sent", G_TYPE_UINT64, src->feedback_sent,
      "nacks-sent", G_TYPE_UINT64, src->nacks_sent,
      "nacks-held", G_TYPE_UINT64, st.nacks_held,
      "rtx-recovered", G_TYPE_UINT64, src->rtx_recovered,
      "notices-received", G_TYPE_UINT64, src->notices_received,
      "decreases", G_TYPE_UINT64, st.decreases,
      "increases", G_TYPE_UINT64, st.increases,
      "rounds", G_TYPE_UINT64, st.rounds,
      "clean-packets", G_TYPE_UINT64, st.clean_packets,
      "increase-wait", G_TYPE_UINT64, st.increase_wait,
      "srtt", G_TYPE_UINT64, st.rtt_samples ? st.srtt : 0,
      "ect-received", G_TYPE_UINT64, st.ect_received,
      "ce-marked", G_TYPE_UINT64, st.ce_marked,
      "ce-decreases", G_TYPE_UINT64, st.ce_decreases,
      "ce-marked-rtcp", G_TYPE_UINT64, st.ce_marked_rtcp,
      "loss-events", G_TYPE_UINT64, st.loss_events,
      "loss-event-rate", G_TYPE_DOUBLE, st.loss_event_rate,
      "tfrc-rate", G_TYPE_UINT64, st.tfrc_rate,
      "port", G_TYPE_INT, src->bound_port,
      "buffer-size-granted", G_TYPE_INT, src->rcvbuf_granted,
      "kernel-drops", G_TYPE_UINT64, (guint64) src->kernel_drops,
      "srtp", G_TYPE_BOOLEAN, src->srtp != NULL,
      "auth-failures", G_TYPE_UINT64, src->auth_failures,
      "replayed", G_TYPE_UINT64, src->replayed,
      "foreign-rtcp", G_TYPE_UINT64, src->foreign_rtcp,
      "foreign-packets", G_TYPE_UINT64, src->foreign_packets,
      "hellos-sent", G_TYPE_UINT64, src->last_hello.hellos,
      "hello-errors", G_TYPE_UINT64, src->hello_errors, NULL);
  g_mutex_unlock (&src->lock);
  return s;
}

static void
gst_rudp_src_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstRudpSrc *src = GST_RUDP_SRC (object);
  guint i;

  if (prop_id == PROP_URI) {
    g_value_take_string (value,
        gst_uri_handler_get_uri (GST_URI_HANDLER (object)));
    return;
  }
  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (src));
    return;
  }
  GST_OBJECT_LOCK (src);
  switch (prop_id) {
    case PROP_ADDRESS:
      g_value_set_string (value, src->address);
      break;
    case PROP_PORT:
      g_value_set_uint (value, src->port);
      break;
    case PROP_CAPS:
      gst_value_set_caps (value, src->caps);
      break;
    case PROP_BUFFER_SIZE:
      g_value_set_int (value, src->buffer_size);
      break;
    case PROP_FEEDBACK:
      g_value_set_boolean (value, src->feedback);
      break;
    case PROP_RETRANSMISSION:
      g_value_set_boolean (value, src->retransmission);
      break;
    case PROP_LEVELS:
      for (i = 0; i < src->levels.n; i++) {
        GValue v = G_VALUE_INIT;

        g_value_init (&v, G_TYPE_UINT64);
        g_value_set_uint64 (&v, src->levels.rate[i]);
        gst_value_array_append_and_take_value (value, &v);
      }
      break;
    case PROP_MIN_INTERVAL:
      g_value_set_uint64 (value, src->min_interval);
      break;
    case PROP_FEEDBACK_INTERVAL:
      g_value_set_uint64 (value, src->feedback_interval);
      break;
    case PROP_INITIAL_RTT:
      g_value_set_uint64 (value, src->initial_rtt);
      break;
    case PROP_INCREASE_RTTS:
      g_value_set_uint (value, src->increase_rtts);
      break;
    case PROP_INCREASE_PACKETS:
      g_value_set_uint (value, src->increase_packets);
      break;
    case PROP_INCREASE_TIME:
      g_value_set_uint64 (value, src->increase_time);
      break;
    case PROP_TCP_FRIENDLY:
      g_value_set_boolean (value, src->tcp_friendly);
      break;
    case PROP_LAW:
      g_value_set_enum (value, src->law);
      break;
    case PROP_SRTP_CIPHER:
      g_value_set_enum (value, src->srtp_cipher);
      break;
    case PROP_SRTP_AUTH:
      g_value_set_enum (value, src->srtp_auth);
      break;
    default:
      if (!twoflow_hello_receiver_props_get (&src->hello_props,
              prop_id - PROP_HELLO_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (src);
}

static GstCaps *
gst_rudp_src_get_caps (GstBaseSrc * bsrc, GstCaps * filter)
{
  GstRudpSrc *src = GST_RUDP_SRC (bsrc);
  GstCaps *caps, *res;

  GST_OBJECT_LOCK (src);
  caps = src->caps ? gst_caps_ref (src->caps) :
      gst_pad_get_pad_template_caps (GST_BASE_SRC_PAD (bsrc));
  GST_OBJECT_UNLOCK (src);
  if (filter) {
    res = gst_caps_intersect_full (filter, caps, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (caps);
    return res;
  }
  return caps;
}

/* The feedback to the sender, with the lock held. */
static void
send_feedback (GstRudpSrc * src, GstClockTime now)
{
  GstRudpReceiverStats st;
  GstRudpRequest req = { 0 };
  GstBuffer *buf;
  GstMapInfo map;
  GError *err = NULL;

  gst_rudp_receiver_get_stats (src->receiver, &st);
  gst_rudp_receiver_handle_feedback_sent (src->receiver, now);
  if (!src->feedback || !src->sender)
    return;
  req.ssrc = src->ssrc;
  req.media_ssrc = src->media_ssrc;
  req.fraction_lost = st.fraction_lost;
  req.packets_lost = MIN (st.lost, 0x7fffff);
  req.ext_max_seq = st.ext_max_seq;
  req.has_bitrate = TRUE;
  req.bitrate = src->levels.rate[MIN (st.level, src->levels.n - 1)];
  req.overhead = GST_RUDP_PACKET_OVERHEAD;
  req.has_level = TRUE;
  req.level = st.level;
  req.n_levels = src->levels.n;
  /* 0 means "no timestamp" to the sender's echo */
  req.timestamp = MAX (gst_rudp_ntp_short (now), 1);
  req.srtt_us = st.rtt_samples ? st.srtt / GST_USECOND : 0;
  {
    GstClockTime rtt = gst_rudp_receiver_take_rtt_sample (src->receiver);

    req.rtt_us = GST_CLOCK_TIME_IS_VALID (rtt) ?
        (guint32) MAX (MIN (rtt / GST_USECOND, G_MAXUINT32), 1) : 0;
  }
  src->feedback_sent++;
  buf = gst_rudp_request_write (&req);
  if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
    guint8 prot[1024 + GST_RUDP_SRTP_TRAILER];
    const guint8 *data = map.data;
    gint len = map.size;

    if (src->srtp) {
      g_assert (map.size <= 1024);
      memcpy (prot, map.data, map.size);
      len = gst_rudp_srtp_protect (src->srtp, prot, len, TRUE);
      data = prot;
    }
    if (len < 0) {
      GST_WARNING_OBJECT (src, "SRTCP protection failed");
    } else if (g_socket_send_to (src->socket, src->sender,
            (const gchar *) data, len, NULL, &err) < 0) {
      GST_DEBUG_OBJECT (src, "feedback not sent: %s", err->message);
      g_clear_error (&err);
    }
    gst_buffer_unmap (buf, &map);
  }
  gst_buffer_unref (buf);
}

/* A retransmission request from downstream (rtpjitterbuffer): a Generic
 * NACK to the sender. */
static gboolean
gst_rudp_src_event (GstBaseSrc * bsrc, GstEvent * event)
{
  GstRudpSrc *src = GST_RUDP_SRC (bsrc);
  const GstStructure *st;
  guint seq, ssrc;

  if (GST_EVENT_TYPE (event) != GST_EVENT_CUSTOM_UPSTREAM
      || !gst_event_has_name (event, "GstRTPRetransmissionRequest"))
    return GST_BASE_SRC_CLASS (parent_class)->event (bsrc, event);
  st = gst_event_get_structure (event);
  /* (the event stays basesrc's) */
  if (!gst_structure_get_uint (st, "seqnum", &seq))
    return FALSE;
  g_mutex_lock (&src->lock);
  /* rtpjitterbuffer's requests carry no ssrc (an rtpsession adds it) */
  if (!gst_structure_get_uint (st, "ssrc", &ssrc))
    ssrc = src->media_ssrc;
  /* at most one NACK per seq and SRTT: rtpjitterbuffer asks every 40 ms
   * until it has measured the retransmissions' round trip */
  if (src->retransmission && src->sender && src->socket && src->receiver
      && gst_rudp_receiver_nack_due (src->receiver, seq,
          gst_clock_get_time (src->clock))) {
    guint16 s16 = seq;
    GstBuffer *buf = gst_rudp_nack_write (src->ssrc, ssrc, &s16, 1);
    GstMapInfo map;

    if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
      guint8 prot[256 + GST_RUDP_SRTP_TRAILER];
      const guint8 *data = map.data;
      gint len = map.size;

      if (src->srtp && map.size <= 256) {
        memcpy (prot, map.data, map.size);
        len = gst_rudp_srtp_protect (src->srtp, prot, len, TRUE);
        data = prot;
      }
      if (len > 0 && g_socket_send_to (src->socket, src->sender,
              (const gchar *) data, len, NULL, NULL) >= 0) {
        src->nacks_sent++;
      }
      gst_buffer_unmap (buf, &map);
    }
    gst_buffer_unref (buf);
  }
  g_mutex_unlock (&src->lock);
  return TRUE;
}

/* core(now), with the lock held; wakes the timer when its wakeup moved
 * earlier than the time it waits for. */
static void
run_core (GstRudpSrc * src, GstClockTime now)
{
  GstClockTime next;

  if (gst_rudp_receiver_poll (src->receiver, now, NULL))
    send_feedback (src, now);
  next = gst_rudp_receiver_next_wakeup (src->receiver);
  if (GST_CLOCK_TIME_IS_VALID (next) && (!GST_CLOCK_TIME_IS_VALID
          (src->timer_at) || next < src->timer_at)) {
    if (src->timer_id)
      gst_clock_id_unschedule (src->timer_id);
    g_cond_signal (&src->timer_cond);
  }
}

/* NAT: the hellos due at @now, from our socket; with the lock held. */
static void
say_hello (GstRudpSrc * src, GstClockTime now)
{
  guint64 counter;

  if (!src->hello)
    return;
  while (gst_twoflow_hello_poll (src->hello, now, &counter)) {
    guint8 pkt[GST_RUDP_HELLO_SIZE + GST_RUDP_SRTP_TRAILER];
    gint len = GST_RUDP_HELLO_SIZE;
    GError *err = NULL;

    gst_rudp_hello_write (pkt, src->ssrc, src->hello_props.id, counter);
    if (src->srtp)
      len = gst_rudp_srtp_protect (src->srtp, pkt, len, TRUE);
    if (len < 0 || g_socket_send_to (src->socket, src->hello_dest,
            (const gchar *) pkt, len, NULL, &err) < 0) {
      src->hello_errors++;
      GST_DEBUG_OBJECT (src, "hello not sent: %s", err ? err->message :
          "SRTCP protection failed");
      g_clear_error (&err);
    }
  }
}

/* now = clock; core(now); wait(next_wakeup()) */
static gpointer
timer_thread (gpointer data)
{
  GstRudpSrc *src = data;

  g_mutex_lock (&src->lock);
  while (src->timer_running) {
    GstClockTime now = gst_clock_get_time (src->clock), next;
    GstClockID id;

    src->timer_at = GST_CLOCK_TIME_NONE;
    run_core (src, now);
    say_hello (src, now);
    next = gst_rudp_receiver_next_wakeup (src->receiver);
    if (src->hello) {
      GstClockTime h = gst_twoflow_hello_next_wakeup (src->hello);

      if (GST_CLOCK_TIME_IS_VALID (h) && (!GST_CLOCK_TIME_IS_VALID (next)
              || h < next))
        next = h;
    }
    if (!GST_CLOCK_TIME_IS_VALID (next)) {
      /* nothing received yet: the first packet wakes us */
      g_cond_wait (&src->timer_cond, &src->lock);
      continue;
    }
    if (next <= now)
      continue;
    id = gst_clock_new_single_shot_id (src->clock, next);
    src->timer_id = id;
    src->timer_at = next;
    g_mutex_unlock (&src->lock);
    gst_clock_id_wait (id, NULL);
    g_mutex_lock (&src->lock);
    src->timer_id = NULL;
    gst_clock_id_unref (id);
  }
  g_mutex_unlock (&src->lock);
  return NULL;
}

static gboolean
gst_rudp_src_start (GstBaseSrc * bsrc)
{
  GstRudpSrc *src = GST_RUDP_SRC (bsrc);
  GstRudpReceiverConfig rc;
  GError *err = NULL;
  GSocket *socket;
  gchar *address;
  gint port, rcvbuf;
  GstRudpSrtp *srtp = NULL;
  gchar *hello_host;
  guint hello_port;
  GInetSocketAddress *hello_dest = NULL;
  GstClockTime hello_interval, keepalive_interval;
  TwoflowNetIp accept_ip;
  gboolean accept_set = FALSE;

  /* whose RTP counts (else: hello-host's, else the first sender's) */
  if (!twoflow_net_accept_host (GST_ELEMENT (src), &accept_ip, &accept_set))
    return FALSE;

  GST_OBJECT_LOCK (src);
  if (src->key && *src->key)
    srtp = gst_rudp_srtp_new (src->key, src->srtp_cipher, src->srtp_auth,
        &err);
  GST_OBJECT_UNLOCK (src);
  if (err) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS, (NULL),
        ("invalid SRTP settings: %s", err->message));
    g_clear_error (&err);
    return FALSE;
  }

  gst_rudp_receiver_config_init (&rc);
  GST_OBJECT_LOCK (src);
  address = g_strdup (src->address);
  port = src->port;
  rcvbuf = src->buffer_size;
  rc.levels = src->levels;
  rc.increase_rtts = src->increase_rtts;
  rc.increase_packets = src->increase_packets;
  rc.increase_time = src->increase_time;
  rc.tcp_friendly = src->tcp_friendly;
  rc.law = src->law;
  rc.min_interval = src->min_interval;
  rc.feedback_interval = src->feedback_interval;
  rc.initial_rtt = src->initial_rtt;
  hello_host = g_strdup (src->hello_props.host);
  hello_port = src->hello_props.port;
  hello_interval = src->hello_props.interval;
  keepalive_interval = src->hello_props.keepalive_interval;
  GST_OBJECT_UNLOCK (src);

  if (!twoflow_net_hello_resolve (GST_ELEMENT (src), hello_host, hello_port,
          &hello_dest)) {
    g_free (hello_host);
    g_free (address);
    gst_rudp_srtp_free (srtp);
    return FALSE;
  }
  g_free (hello_host);

  socket = twoflow_net_udp_open (address, port, TWOFLOW_NET_REUSE |
      TWOFLOW_NET_BLOCKING | TWOFLOW_NET_FORCE_BUFFERS, rcvbuf, 0, &err);
  if (!socket) {
    if (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT))
      GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS, (NULL),
          ("address '%s' is not an IP address", address));
    else
      GST_ELEMENT_ERROR (src, RESOURCE, OPEN_READ, (NULL),
          ("cannot bind UDP port %d: %s", port, err->message));
    g_clear_error (&err);
    g_free (address);
    gst_rudp_srtp_free (srtp);
    g_clear_object (&hello_dest);
    return FALSE;
  }
  g_free (address);
  src->rcvbuf_granted = twoflow_net_rcvbuf_setup (GST_ELEMENT (src), socket,
      rcvbuf);
  /* the ECN field of what arrives (IPv4, and IPv4-mapped on a dual-stack
   * IPv6 socket; the traffic class on IPv6): best effort, without it no
   * packet is seen marked */
  {
    gboolean v4 = g_socket_set_option (socket, IPPROTO_IP, IP_RECVTOS, 1,
        NULL);
    gboolean v6 = g_socket_get_family (socket) == G_SOCKET_FAMILY_IPV6 &&
        g_socket_set_option (socket, IPPROTO_IPV6, IPV6_RECVTCLASS, 1, NULL);

    if (!v4 && !v6)
      GST_WARNING_OBJECT (src, "cannot read the ECN field of packets");
  }
  twoflow_cancel_init (&src->cancel);

  g_mutex_lock (&src->lock);
  src->socket = socket;
  src->kernel_drops = 0;
  g_atomic_int_set (&src->draining, 0);
  src->bound_port = twoflow_net_local_port (socket);
  g_clear_pointer (&src->receiver, gst_rudp_receiver_free);
  src->receiver = gst_rudp_receiver_new (&rc);
  src->feedback_sent = src->notices_received = 0;
  src->nacks_sent = src->rtx_recovered = 0;
  src->rtcp_invalid = src->non_rtp = 0;
  src->auth_failures = src->replayed = src->foreign_rtcp = 0;
  g_clear_pointer (&src->srtp, gst_rudp_srtp_free);
  src->srtp = srtp;
  src->ssrc = g_random_int ();
  src->clock = gst_system_clock_obtain ();
  src->hello_errors = 0;
  memset (&src->last_hello, 0, sizeof (src->last_hello));
  g_clear_object (&src->hello_dest);
  g_clear_pointer (&src->hello, gst_twoflow_hello_free);
  if (!accept_set && hello_dest)
    accept_set = twoflow_net_ip_from_address (G_SOCKET_ADDRESS (hello_dest),
        &accept_ip);
  src->accept_set = accept_set;
  if (accept_set)
    src->accept_ip = accept_ip;
  src->sender_locked = FALSE;
  src->foreign_packets = 0;
  if (hello_dest) {
    src->hello_dest = G_SOCKET_ADDRESS (hello_dest);
    /* wall-clock microseconds: a later session's hellos count higher */
    src->hello = gst_twoflow_hello_new (hello_interval, keepalive_interval,
        g_get_real_time (), gst_clock_get_time (src->clock));
  }
  src->timer_running = TRUE;
  src->timer_at = GST_CLOCK_TIME_NONE;
  g_mutex_unlock (&src->lock);
  src->timer = g_thread_new ("rudpsrc-timer", timer_thread, src);
  return TRUE;
}

static gboolean
gst_rudp_src_stop (GstBaseSrc * bsrc)
{
  GstRudpSrc *src = GST_RUDP_SRC (bsrc);
  GSocket *socket;
  guint32 drops;

  g_mutex_lock (&src->lock);
  src->timer_running = FALSE;
  if (src->timer_id)
    gst_clock_id_unschedule (src->timer_id);
  g_cond_signal (&src->timer_cond);
  g_mutex_unlock (&src->lock);
  if (src->timer)
    g_thread_join (src->timer);
  src->timer = NULL;
  gst_clear_object (&src->clock);
  g_mutex_lock (&src->lock);
  socket = src->socket;
  src->socket = NULL;
  if (socket && twoflow_net_socket_drops (socket, &drops)
      && drops > src->kernel_drops)
    src->kernel_drops = drops;
  g_mutex_unlock (&src->lock);
  if (socket)
    g_socket_close (socket, NULL);
  g_clear_object (&socket);
  twoflow_cancel_clear (&src->cancel);
  g_clear_object (&src->sender);
  g_mutex_lock (&src->lock);
  g_clear_pointer (&src->srtp, gst_rudp_srtp_free);
  if (src->hello) {
    gst_twoflow_hello_get_stats (src->hello, &src->last_hello);
    g_clear_pointer (&src->hello, gst_twoflow_hello_free);
  }
  g_clear_object (&src->hello_dest);
  g_mutex_unlock (&src->lock);
  /* the receiver stays, so stats stay readable after stop */
  return TRUE;
}

static gboolean
gst_rudp_src_unlock (GstBaseSrc * bsrc)
{
  twoflow_cancel_cancel (&GST_RUDP_SRC (bsrc)->cancel);
  return TRUE;
}

static gboolean
gst_rudp_src_unlock_stop (GstBaseSrc * bsrc)
{
  twoflow_cancel_replace (&GST_RUDP_SRC (bsrc)->cancel);
  return TRUE;
}

/* EOS: read what the socket holds, then end (create returns EOS when it
 * finds the socket empty); before start, or twice, as any source. */
static gboolean
gst_rudp_src_send_event (GstElement * element, GstEvent * event)
{
  GstRudpSrc *src = GST_RUDP_SRC (element);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && src->socket
      && g_atomic_int_compare_and_exchange (&src->draining, 0, 1)) {
    GST_DEBUG_OBJECT (src, "EOS: draining the socket first");
    gst_event_unref (event);
    twoflow_cancel_cancel (&src->cancel);
    return TRUE;
  }
  return GST_ELEMENT_CLASS (parent_class)->send_event (element, event);
}

/* With the lock: whether a datagram from @from may be the flow's: from
 * accept-host's (or hello-host's) address, and in plaintext, once RTP
 * came, from the sender's very address and port. */
static gboolean
sender_allowed (GstRudpSrc * src, GSocketAddress * from)
{
  TwoflowNetIp ip;

  if (src->sender_locked)
    return src->sender && gst_rudp_same_address (from, src->sender);
  if (!src->accept_set)
    return TRUE;
  return twoflow_net_ip_from_address (from, &ip) &&
      twoflow_net_ip_equal (&ip, &src->accept_ip);
}

/* The sender's answer: an RTT sample, and from where its level holds. */
static void
handle_notice (GstRudpSrc * src, const guint8 * data, gsize len,
    GSocketAddress * from, guint ecn, GstClockTime now)
{
  GstBuffer *buf;
  GstRudpNotice n;
  gboolean ok;

  g_mutex_lock (&src->lock);
  if (src->srtp) {
    gint plen = len;
    GstRudpSrtpResult r = gst_rudp_srtp_unprotect (src->srtp,
        (guint8 *) data, &plen, TRUE);

    if (r != GST_RUDP_SRTP_OK) {
      if (r == GST_RUDP_SRTP_REPLAYED)
        src->replayed++;
      else
        src->auth_failures++;
      g_mutex_unlock (&src->lock);
      return;
    }
    len = plen;
  } else if (!src->sender || !gst_rudp_same_address (from, src->sender)) {
    /* plaintext: only the RTP's sender may speak for the flow */
    src->foreign_rtcp++;
    g_mutex_unlock (&src->lock);
    return;
  }
  g_mutex_unlock (&src->lock);
  buf = gst_buffer_new_memdup (data, len);
  ok = gst_rudp_notice_parse (buf, &n) && n.has_level;
  gst_buffer_unref (buf);
  g_mutex_lock (&src->lock);
  if (!ok) {
    src->rtcp_invalid++;
    g_mutex_unlock (&src->lock);
    return;
  }
  src->notices_received++;
  gst_rudp_receiver_handle_echo (src->receiver, n.echo_timestamp, n.delay,
      now);
  gst_rudp_receiver_handle_level_applied (src->receiver, n.level, n.since_seq);
  /* the sender's notice crossed the same queues as its RTP (authentic, or
   * from the RTP's sender in plaintext): a CE mark on it is congestion */
  if (ecn == GST_RUDP_ECN_CE)
    gst_rudp_receiver_handle_rtcp_ce (src->receiver, now);
  run_core (src, now);
  g_mutex_unlock (&src->lock);
}

/* One datagram, with the ECN field of its IP header in *@ecn (0 when not
 * known), as g_socket_receive_from() (blocking until one arrives or the
 * cancellable fires). recvmsg() on the socket's fd: GSocket has no control
 * message type for IP_TOS / IPV6_TCLASS. */
static gssize
receive_ecn (GstRudpSrc * src, guint8 * data, gsize size,
    GSocketAddress ** from, guint * ecn, guint32 * drops, GError ** err)
{
  gint fd = g_socket_get_fd (src->socket);

  *ecn = 0;
  *from = NULL;
  for (;;) {
    struct sockaddr_storage ss;
    struct iovec iov = { data, size };
    union {
      struct cmsghdr align;
      gchar buf[2 * CMSG_SPACE (sizeof (gint)) +
          TWOFLOW_NET_CMSG_DROPS_SPACE];
    } ctl;
    struct msghdr msg;
    struct cmsghdr *cm;
    gssize n;

    memset (&msg, 0, sizeof (msg));
    msg.msg_name = &ss;
    msg.msg_namelen = sizeof (ss);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.buf;
    msg.msg_controllen = sizeof (ctl.buf);
    n = recvmsg (fd, &msg, MSG_DONTWAIT);
    if (n >= 0) {
      for (cm = CMSG_FIRSTHDR (&msg); cm; cm = CMSG_NXTHDR (&msg, cm)) {
        if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TOS
            && cm->cmsg_len >= CMSG_LEN (1))
          *ecn = *(guint8 *) CMSG_DATA (cm) & 0x3;
        else if (cm->cmsg_level == IPPROTO_IPV6
            && cm->cmsg_type == IPV6_TCLASS
            && cm->cmsg_len >= CMSG_LEN (sizeof (gint))) {
          gint tc;

          memcpy (&tc, CMSG_DATA (cm), sizeof (tc));
          *ecn = tc & 0x3;
        } else {
          twoflow_net_cmsg_drops (cm, drops);
        }
      }
      *from = g_socket_address_new_from_native (&ss, msg.msg_namelen);
      return n;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      gint e = errno;

      g_set_error (err, G_IO_ERROR, g_io_error_from_errno (e), "%s",
          g_strerror (e));
      return -1;
    }
    /* EOS asked for and the socket is empty: the end */
    if (g_atomic_int_get (&src->draining))
      return 0;
    if (!g_socket_condition_wait (src->socket, G_IO_IN,
            src->cancel.cancellable, err)) {
      /* woken for the EOS: read what is left first */
      if (g_atomic_int_get (&src->draining)) {
        g_clear_error (err);
        continue;
      }
      return -1;
    }
  }
}

static GstFlowReturn
gst_rudp_src_create (GstPushSrc * psrc, GstBuffer ** outbuf)
{
  GstRudpSrc *src = GST_RUDP_SRC (psrc);
  guint8 *data;
  gssize len;
  gboolean rtx = FALSE;

  if (!src->scratch)
    src->scratch = g_malloc (MAX_PACKET);
  data = src->scratch;
  while (TRUE) {
    GSocketAddress *from = NULL;
    GError *err = NULL;
    GstClockTime now;
    guint ecn;
    guint32 drops = 0;

    len = receive_ecn (src, data, MAX_PACKET, &from, &ecn, &drops, &err);
    if (len == 0 && from == NULL) {
      GST_DEBUG_OBJECT (src, "socket drained: end of stream");
      return GST_FLOW_EOS;
    }
    if (len < 0) {
      gboolean cancelled = g_error_matches (err, G_IO_ERROR,
          G_IO_ERROR_CANCELLED);

      /* ICMP port unreachable from an earlier feedback: not fatal */
      GST_DEBUG_OBJECT (src, "receive error: %s", err->message);
      g_clear_error (&err);
      if (cancelled)
        return GST_FLOW_FLUSHING;
      continue;
    }
    now = gst_clock_get_time (src->clock);
    if (drops) {
      g_mutex_lock (&src->lock);
      if (drops > src->kernel_drops) {
        GST_DEBUG_OBJECT (src, "the kernel dropped %u datagrams (%u in all)",
            drops - src->kernel_drops, drops);
        src->kernel_drops = drops;
      }
      g_mutex_unlock (&src->lock);
    }
    if (gst_rudp_is_rtcp (data, len)) {
      handle_notice (src, data, len, from, ecn, now);
      g_clear_object (&from);
      continue;
    }
    g_mutex_lock (&src->lock);
    if (!sender_allowed (src, from)) {
      /* from a third address (or, plaintext, another port than the
       * sender's): not ours, whatever it holds */
      src->foreign_packets++;
      g_mutex_unlock (&src->lock);
      g_clear_object (&from);
      continue;
    }
    g_mutex_unlock (&src->lock);
    if (len < 12 || (data[0] >> 6) != 2) {
      g_mutex_lock (&src->lock);
      if (src->srtp)
        src->auth_failures++;   /* not authentic SRTP either */
      else
        src->non_rtp++;
      g_mutex_unlock (&src->lock);
      g_clear_object (&from);
      continue;
    }
    g_mutex_lock (&src->lock);
    if (src->srtp) {
      gint plen = len;
      GstRudpSrtpResult r = gst_rudp_srtp_unprotect (src->srtp, data, &plen,
          FALSE);

      if (r != GST_RUDP_SRTP_OK) {
        if (r == GST_RUDP_SRTP_REPLAYED)
          src->replayed++;
        else
          src->auth_failures++;
        g_mutex_unlock (&src->lock);
        g_clear_object (&from);
        continue;
      }
      len = plen;
    }
    if (src->hello)
      gst_twoflow_hello_handle_data (src->hello, now);
    g_clear_object (&src->sender);
    src->sender = from;
    /* plaintext: the first RTP packet fixes the sender's port too */
    if (!src->srtp)
      src->sender_locked = TRUE;
    src->media_ssrc = GST_READ_UINT32_BE (data + 8);
    /* a packet asked for again is marked a retransmission: rtpjitterbuffer
     * then measures the retransmissions' round trip and spaces its
     * requests by it (unmarked, it never learns it and asks every 40 ms) */
    rtx = gst_rudp_receiver_take_nacked (src->receiver,
        GST_READ_UINT16_BE (data + 2), now);
    if (rtx)
      src->rtx_recovered++;
    gst_rudp_receiver_handle_packet_ecn (src->receiver,
        GST_READ_UINT16_BE (data + 2), len, ecn, now);
    run_core (src, now);
    g_mutex_unlock (&src->lock);
    break;
  }
  *outbuf = gst_buffer_new_memdup (data, len);
  if (rtx)
    GST_BUFFER_FLAG_SET (*outbuf, GST_RTP_BUFFER_FLAG_RETRANSMISSION);
  return GST_FLOW_OK;
}

/* rudp://address:port URIs (GstURIHandler), as erapsrc has erap:// */

static GstURIType
gst_rudp_src_uri_get_type (GType type)
{
  return GST_URI_SRC;
}

static const gchar *const *
gst_rudp_src_uri_get_protocols (GType type)
{
  static const gchar *protocols[] = { "rudp", NULL };

  return protocols;
}

static gchar *
gst_rudp_src_uri_get_uri (GstURIHandler * handler)
{
  return twoflow_uri_make (GST_ELEMENT (handler), "rudp", "address", "port");
}

static gboolean
gst_rudp_src_uri_set_uri (GstURIHandler * handler, const gchar * str,
    GError ** error)
{
  return twoflow_uri_apply (GST_ELEMENT (handler), str, "rudp", "address",
      "port", DEFAULT_ADDRESS, DEFAULT_PORT, 0, error);
}

static void
gst_rudp_src_uri_handler_init (gpointer g_iface, gpointer iface_data)
{
  GstURIHandlerInterface *iface = (GstURIHandlerInterface *) g_iface;

  iface->get_type = gst_rudp_src_uri_get_type;
  iface->get_protocols = gst_rudp_src_uri_get_protocols;
  iface->get_uri = gst_rudp_src_uri_get_uri;
  iface->set_uri = gst_rudp_src_uri_set_uri;
}
