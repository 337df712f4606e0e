/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rudpsink */
/**
 * SECTION:element-rudpsink
 * @title: rudpsink
 * @see_also: rudpsrc, udpsink, rtpgstpay
 *
 * Sends RTP packets (from any payloader, e.g. rtpgstpay) over UDP as a
 * near-CBR flow: a leaky bucket whose tokens arrive at #GstRudpSink:rate
 * (bit/s) and hold at most #GstRudpSink:bucket-depth bytes
 * decides when each packet may leave. The rate may change while PLAYING.
 *
 * All rudpsinks of a process share one pacing thread and one timer (a
 * #GstClockID on the system clock, so a #GstTestClock can drive it): at
 * each tick, on a grid of the smallest #GstRudpSink:timer-interval of the
 * sinks, every flow sends what its bucket allows; while nothing is queued
 * the thread sleeps.
 *
 * Rendering queues the packet and blocks while the sink holds more than
 * #GstRudpSink:max-queue-bytes bytes: an upstream faster than the rate is
 * slowed down (backpressure), nothing is ever dropped. At end of stream
 * the sink posts EOS once every queued packet has left and, with
 * #GstRudpSink:rtx-time, once no NACK came for 0.3 s (at most 1 s): the
 * receiver asks for the last packets' losses after they left.
 *
 * With #GstRudpSink:rate-control `receiver` the rate follows a table of
 * rate levels (#GstRudpSink:levels, bit/s) as the receiver (rudpsrc) asks: it
 * halves the level when it saw loss in a round-trip time and raises it by
 * one after enough loss-free packets at the current level (see rudpsrc's
 * increase-packets), and sends the level as RTCP feedback (RR + TMMBR, RFC
 * 5104, + an APP packet "RUDP" with the exact level) to this sink's own
 * socket; the sink answers with a TMMBN notice. The flow starts at level 0.
 * On every level change the sink sends a `GstNetworkCongestion` event
 * upstream (`type=rate`, `estimated-bitrate` = the level's rate in bit/s,
 * `srtt` as the receiver measures it) and posts it as an element message,
 * so a rate transcoder upstream follows.
 *
 * The #GstRudpSink:stats structure `application/x-rudpsink-stats` has:
 *
 * * `rate` (guint64): the rate in force, bit/s
 * * `level` (guint): the rate level in force (receiver rate control)
 * * `bytes-sent`, `packets-sent` (guint64): RTP packets handed to the socket
 * * `bucket-fill` (gint64): tokens in the bucket, bytes (negative while a
 *   packet larger than the bucket is paid off)
 * * `bucket-depth` (guint64): the bucket depth in force, bytes
 * * `queued-bytes` (guint64), `queued-packets` (guint): waiting to leave
 * * `send-errors` (guint64): datagrams the socket refused
 * * `feedback-received` (guint64): receiver requests handled
 * * `notices-sent` (guint64): answers to them
 * * `level-changes` (guint64): level switches made
 * * `srtt` (guint64): the receiver's smoothed RTT, ns (0 until known)
 * * `rtt` (guint64): the receiver's latest RTT sample, ns (0 until known):
 *   one per notice it got, sent with its next request; the notice's delay
 *   counts from the request's arrival (the kernel's receive time), so the
 *   time the request waited to be read is no part of it
 * * `rtt-samples` (guint64): requests that carried a new sample (older
 *   receivers send none)
 * * `rtx-requested` (guint64): RTP packets the receiver NACKed (each
 *   sequence number counted once: the losses it saw); `rtx-repeated`
 *   (guint64): NACKs of a number already asked for; `rtx-sent` (guint64):
 *   packets sent again; `rtx-missing` (guint64): NACKed packets no longer
 *   kept (older than #GstRudpSink:rtx-time) or never sent; `rtx-skipped`
 *   (guint64): NACKed packets not resent (each goes at most 4 times; an
 *   unpaced flow also resends at most an eighth of what it sends);
 *   `rtx-charged` (guint64): resends beyond that eighth, paid by the
 *   flow's pacing bucket (its next packets wait: they count toward the
 *   rate)
 * * `receiver-reports` (guint64): receiver requests that carried an RTCP
 *   report block for this flow; from the last one (RFC 3550):
 *   `receiver-highest-seq` (guint, the extended highest sequence number
 *   received), `receiver-lost` (gint, cumulative packets lost) and
 *   `receiver-fraction-lost` (guint, 8-bit fixed point). The server's
 *   session rate controller reads them (loss and delivered packets).
 * * `srtp` (gboolean): whether the flow is SRTP/SRTCP (#GstRudpSink:key set)
 * * `ecn` (gboolean): whether the packets leave ECN-capable (#GstRudpSink:ecn)
 * * `auth-failures` (guint64): feedback datagrams dropped because they
 *   failed SRTCP authentication (plaintext, another key, garbage)
 * * `replayed` (guint64): authentic feedback dropped as a replay
 * * `foreign-feedback` (guint64): feedback dropped in plaintext mode because
 *   it did not come from the address the flow is sent to
 * * `peer` (string): the destination `address:port` (empty while
 *   #GstRudpSink:learn-peer has not learnt one)
 * * `hellos` (guint64): hellos accepted (#GstRudpSink:learn-peer)
 * * `hellos-moved` (guint64): of those, from a new port (the NAT moved)
 * * `hellos-foreign` (guint64): hellos from another address than
 *   #GstRudpSink:host's, ignored
 * * `hellos-forged` (guint64): plain hellos to a keyed sink (not SRTCP),
 *   dropped (also counted in `auth-failures`)
 * * `hellos-replayed` (guint64): hellos whose counter was not above the
 *   last accepted one, dropped
 * * `hellos-unknown` (guint64): hellos naming another session, ignored
 * * `dropped-no-peer` (guint64): RTP packets due while no destination was
 *   known, dropped (render waits for the first hello, so 0 in practice)
 *
 * ## Security
 *
 * With #GstRudpSink:key (the SRTP master key and salt in hex; rudpsrc must
 * have the same) every RTP packet is encrypted and authenticated as SRTP
 * (RFC 3711) and the RTCP notices as SRTCP; feedback that fails SRTCP
 * authentication or replays an index already seen is dropped and counted,
 * so nobody without the key can change the rate. Without a key (the
 * default, for lab use) feedback is accepted only from the address and
 * port the flow is sent to: a third party cannot set the rate, but an
 * on-path attacker or one spoofing that address can.
 *
 * ## Behind NAT: learning the destination
 *
 * A receiver behind NAT cannot be sent to first. With
 * #GstRudpSink:learn-peer the sink sends to where the receiver's *hello*
 * comes from (rudpsrc with #GstRudpSrc:hello-host and #GstRudpSrc:hello-port
 * aimed at this sink's #GstRudpSink:current-port; set #GstRudpSink:bind-port
 * to choose it): an RTCP packet (RR + APP "HELO" with the session id
 * #GstRudpSink:hello-id and a counter) from the receiver's RTP socket.
 * The RTP then leaves from the port the hello reached, to the address and
 * port it came from (the NAT's public ones), so the NAT takes it for
 * replies, and the receiver's feedback comes back the same way. Only a
 * hello from #GstRudpSink:host's address counts (any port: the NAT
 * chooses it), so media never go to an address the application did not
 * name (no reflection); with #GstRudpSink:key only an authentic SRTCP
 * hello (plain ones are dropped and counted), and each hello's counter
 * must be above the last one's. The receiver repeats its hello as a
 * keepalive; one from a new port moves the destination. Until the first
 * hello, render waits (nothing is queued or sent).
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc ! video/x-raw,width=320,height=240 ! rtpvrawpay ! rudpsink host=127.0.0.1 port=5004 rate=4000000
 * ]| Sends raw video paced at 4 Mbit/s (the source is slowed to that rate).
 * |[
 * gst-launch-1.0 videotestsrc ! video/x-raw,format=I420,width=160,height=120,framerate=5/1 ! rtpgstpay mtu=1000 config-interval=1 ! rudpsink host=127.0.0.1 port=5004 rate-control=receiver
 * ]| Lets the receiver choose the rate among the 10 default levels
 * (160 kbit/s to 1.6 Mbit/s); receive it with
 * `gst-launch-1.0 rudpsrc port=5004 caps="application/x-rtp,media=application,clock-rate=90000,encoding-name=X-GST" ! rtpjitterbuffer ! rtpgstdepay ! videoconvert ! autovideosink`
 * |[
 * gst-launch-1.0 videotestsrc is-live=true num-buffers=50 ! video/x-raw,width=160,height=120 ! rtpgstpay mtu=1000 config-interval=1 ! rudpsink host=192.0.2.7 learn-peer=true hello-id=42 bind-port=5008 rate=20000000
 * ]| Sends to a receiver behind a NAT whose public address is 192.0.2.7,
 * once its hello arrived; the receiver:
 * `gst-launch-1.0 rudpsrc port=0 hello-host=SERVER hello-port=5008 hello-id=42 caps="application/x-rtp,media=application,clock-rate=90000,encoding-name=X-GST" ! rtpjitterbuffer ! rtpgstdepay ! videoconvert ! autovideosink`
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <netinet/in.h>
#include "twoflownet.h"
#include "twoflowprops.h"
#include <gst/twoflow/networkcongestion.h>
#include "gstrudpsink.h"
#include "gstrudppacer.h"

GST_DEBUG_CATEGORY_STATIC (rudp_sink_debug);
#define GST_CAT_DEFAULT rudp_sink_debug

struct _GstRudpSink {
  GstBaseSink parent;

  /* properties (object lock) */
  gchar *host;
  guint port;
  guint64 rate;                 /* bit/s */
  GstClockTime timer_interval;
  guint64 bucket_depth;
  guint64 buffer_size;
  GstRudpRateControl rate_control;
  GstRudpLevels levels;         /* bit/s */
  guint initial_level;          /* from rate under receiver control */
  gchar *key;                   /* SRTP master key and salt, hex; NULL: plain */
  GstRudpSrtpCipher srtp_cipher;
  GstRudpSrtpAuth srtp_auth;
  guint bind_port;              /* 0: an ephemeral port */
  TwoflowHelloSenderProps hello_props; /* learn-peer, hello-id */
  gboolean ecn;                 /* send RTP as ECT(0) (RFC 3168) */
  GstClockTime rtx_time;        /* keep sent packets this long for NACKs */

  /* between start and stop: the socket is ours, the flow's I/O the
   * pacer's (gstrudppacer.h) */
  GSocket *socket;
  guint bound_port;
  gboolean ecn_on;              /* the socket sends ECT(0) */
  GstRudpPacerSession *pacer;
  /* the counters of the last run, readable after stop */
  GstRudpPacerSessionStats last;
  gboolean has_last;
};

/* The stats structure; @ps NULL while stopped. */
static GstStructure *gst_rudp_sink_make_stats (GstRudpSink * sink,
    const GstRudpPacerSessionStats * ps);

#define DEFAULT_HOST            "127.0.0.1"
#define DEFAULT_PORT            5004
#define DEFAULT_RATE            1000000
#define DEFAULT_TIMER_INTERVAL  GST_MSECOND
#define DEFAULT_BUCKET_DEPTH    0
#define DEFAULT_BUFFER_SIZE     (256 * 1024)
#define DEFAULT_RATE_CONTROL    GST_RUDP_RATE_CONTROL_FIXED
#define MIN_RATE                8
#define MAX_RATE                G_GUINT64_CONSTANT (80000000000)
#define DEFAULT_KEY             NULL
#define DEFAULT_SRTP_CIPHER     GST_RUDP_SRTP_CIPHER_AUTO
#define DEFAULT_SRTP_AUTH       GST_RUDP_SRTP_AUTH_HMAC_SHA1_80

enum {
  PROP_0,
  PROP_HELLO_FIRST,
  PROP_HELLO_LAST = PROP_HELLO_FIRST + TWOFLOW_HELLO_SENDER_N_PROPS - 1,
  PROP_URI,
  PROP_HOST,
  PROP_PORT,
  PROP_RATE,
  PROP_TIMER_INTERVAL,
  PROP_BUCKET_DEPTH,
  PROP_BUFFER_SIZE,
  PROP_RATE_CONTROL,
  PROP_LEVELS,
  PROP_KEY,
  PROP_SRTP_CIPHER,
  PROP_SRTP_AUTH,
  PROP_STATS,
  PROP_BIND_PORT,
  PROP_BOUND_PORT,
  PROP_ECN,
  PROP_RTX_TIME,
};

#define DEFAULT_BIND_PORT       0
#define DEFAULT_ECN             FALSE
#define DEFAULT_RTX_TIME        (1 * GST_SECOND)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS ("application/x-rtp"));

GType
gst_rudp_rate_control_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_RUDP_RATE_CONTROL_FIXED, "The rate property sets the rate", "fixed"},
    {GST_RUDP_RATE_CONTROL_RECEIVER, "The receiver picks a rate level",
        "receiver"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstRudpRateControl", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

#define gst_rudp_sink_parent_class parent_class
static void gst_rudp_sink_uri_handler_init (gpointer g_iface,
    gpointer iface_data);
G_DEFINE_TYPE_WITH_CODE (GstRudpSink, gst_rudp_sink, GST_TYPE_BASE_SINK,
    G_IMPLEMENT_INTERFACE (GST_TYPE_URI_HANDLER,
        gst_rudp_sink_uri_handler_init));
GST_ELEMENT_REGISTER_DEFINE (rudpsink, "rudpsink", GST_RANK_NONE,
    GST_TYPE_RUDP_SINK);

static void gst_rudp_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_rudp_sink_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_rudp_sink_finalize (GObject * object);
static gboolean gst_rudp_sink_start (GstBaseSink * bsink);
static gboolean gst_rudp_sink_stop (GstBaseSink * bsink);
static gboolean gst_rudp_sink_unlock (GstBaseSink * bsink);
static gboolean gst_rudp_sink_unlock_stop (GstBaseSink * bsink);
static gboolean gst_rudp_sink_event (GstBaseSink * bsink, GstEvent * event);
static GstFlowReturn gst_rudp_sink_render (GstBaseSink * bsink,
    GstBuffer * buf);
static GstFlowReturn gst_rudp_sink_render_list (GstBaseSink * bsink,
    GstBufferList * list);

static void
gst_rudp_sink_class_init (GstRudpSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *bs_class = GST_BASE_SINK_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (rudp_sink_debug, "rudpsink", 0,
      "paced RTP/UDP sender");

  gobject_class->set_property = gst_rudp_sink_set_property;
  gobject_class->get_property = gst_rudp_sink_get_property;
  /**
   * GstRudpSink:uri:
   *
   * The receiver as a `rudp://host:port` URI (IPv6 literals in brackets,
   * `rudp://[::1]:5004`; no port means 5004). Query parameters set other
   * properties by name, with values as on a gst-launch-1.0 line:
   * `rudp://10.0.0.2:5004?rate-control=receiver&rtx-time=500000000`.
   * Reading it back gives `rudp://host:port` from #GstRudpSink:host and
   * #GstRudpSink:port, with the query of the URI last set: the same keys
   * with the properties' current values. The same URI makes a rudpsink
   * with gst_element_make_from_uri().
   */
  g_object_class_install_property (gobject_class, PROP_URI,
      g_param_spec_string ("uri", "URI",
          "rudp://host:port[?property=value&...] of the receiver",
          "rudp://" DEFAULT_HOST ":5004", G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  gobject_class->finalize = gst_rudp_sink_finalize;

  /**
   * GstRudpSink:host:
   *
   * Address (or name) of the receiver.
   */
  g_object_class_install_property (gobject_class, PROP_HOST,
      g_param_spec_string ("host", "Host", "Address of the receiver",
          DEFAULT_HOST, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSink:port:
   *
   * UDP port of the receiver (a guint, as every port property of the
   * twoflow elements; it was a gint).
   */
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port", "UDP port of the receiver", 1, 65535,
          DEFAULT_PORT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSink:rate:
   *
   * Token rate of the leaky bucket in bit/s (of RTP packets; the bucket
   * counts whole bytes, rate / 8 per second). Under receiver rate
   * control, setting it selects the highest level not above it (until the
   * receiver asks for another).
   */
  g_object_class_install_property (gobject_class, PROP_RATE,
      g_param_spec_uint64 ("rate", "Rate", "Sending rate in bit/s",
          MIN_RATE, MAX_RATE, DEFAULT_RATE, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRudpSink:timer-interval:
   *
   * Pacing granularity: the period of the shared timer's tick grid, in ns.
   * The shared timer uses the smallest interval of all rudpsinks.
   */
  g_object_class_install_property (gobject_class, PROP_TIMER_INTERVAL,
      g_param_spec_uint64 ("timer-interval", "Timer interval",
          "Period of the shared pacing timer in ns", 100 * GST_USECOND,
          GST_SECOND, DEFAULT_TIMER_INTERVAL, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRudpSink:bucket-depth:
   *
   * Most bytes the bucket holds, i.e. the largest burst after an idle
   * period or when the shared pacing thread catches up after being held
   * up: no window of length W carries more than rate x W + depth, and a
   * stall longer than (depth - one packet) / rate loses the excess
   * instead of bursting it. 0 chooses 20 ms of the rate, at least 3000
   * bytes.
   */
  g_object_class_install_property (gobject_class, PROP_BUCKET_DEPTH,
      g_param_spec_uint64 ("bucket-depth", "Bucket depth",
          "Leaky bucket depth in bytes (0 = automatic)", 0, G_MAXUINT32,
          DEFAULT_BUCKET_DEPTH, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRudpSink:max-queue-bytes:
   *
   * Bytes the sink queues before rendering blocks (backpressure).
   */
  g_object_class_install_property (gobject_class, PROP_BUFFER_SIZE,
      g_param_spec_uint64 ("max-queue-bytes", "Maximum queue bytes",
          "Bytes queued before render blocks", 1, G_MAXUINT32,
          DEFAULT_BUFFER_SIZE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstRudpSink:buffer-size:
   *
   * Deprecated alias of #GstRudpSink:max-queue-bytes (docs/conventions.md).
   */
  twoflow_property_install_alias (gobject_class, PROP_BUFFER_SIZE,
      "buffer-size", "max-queue-bytes");
  /**
   * GstRudpSink:rate-control:
   *
   * `fixed`: the rate property sets the rate; `receiver`: the receiver
   * picks a level of #GstRudpSink:levels through RTCP feedback.
   */
  g_object_class_install_property (gobject_class, PROP_RATE_CONTROL,
      g_param_spec_enum ("rate-control", "Rate control",
          "Who sets the rate", GST_TYPE_RUDP_RATE_CONTROL,
          DEFAULT_RATE_CONTROL, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSink:levels:
   *
   * The rate level table in bit/s, strictly increasing, 1 to 64 levels
   * (default 10: 160000, 320000, ..., 1600000). Both ends must agree.
   */
  g_object_class_install_property (gobject_class, PROP_LEVELS,
      gst_param_spec_array ("levels", "Levels",
          "Rate levels in bit/s, increasing",
          g_param_spec_uint64 ("level", "Level", "Rate in bit/s", MIN_RATE,
              MAX_RATE, GST_RUDP_DEFAULT_LEVEL_STEP,
              G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS),
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSink:key:
   *
   * SRTP master key and salt as a hex string (30 bytes = 60 hex digits for
   * AES-128-ICM, 46 for AES-256-ICM, 28 / 44 for AES-128/256-GCM; `:`,
   * `-` and spaces are ignored). Set: RTP leaves as SRTP, feedback must be
   * authentic SRTCP. NULL or empty (default): plaintext RTP, feedback only
   * from the destination address. Write-only.
   */
  g_object_class_install_property (gobject_class, PROP_KEY,
      g_param_spec_string ("key", "Key",
          "SRTP master key and salt in hex (empty: plaintext)", DEFAULT_KEY,
          G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSink:srtp-cipher:
   *
   * The SRTP cipher; `auto` picks AES-128-ICM or AES-256-ICM from the key
   * length.
   */
  g_object_class_install_property (gobject_class, PROP_SRTP_CIPHER,
      g_param_spec_enum ("srtp-cipher", "SRTP cipher", "SRTP cipher",
          GST_TYPE_RUDP_SRTP_CIPHER, DEFAULT_SRTP_CIPHER, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSink:srtp-auth:
   *
   * The SRTP authentication of the ICM ciphers (GCM has its own 16-byte
   * tag); RTCP always carries the 80-bit tag.
   */
  g_object_class_install_property (gobject_class, PROP_SRTP_AUTH,
      g_param_spec_enum ("srtp-auth", "SRTP authentication",
          "SRTP authentication tag", GST_TYPE_RUDP_SRTP_AUTH,
          DEFAULT_SRTP_AUTH, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSink:stats:
   *
   * Statistics, see the element description.
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics", "Sender statistics",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstRudpSink:bind-port:
   *
   * Local UDP port the RTP leaves from and feedback and hellos arrive on;
   * 0 (the default) picks a free one (#GstRudpSink:current-port).
   */
  g_object_class_install_property (gobject_class, PROP_BIND_PORT,
      g_param_spec_uint ("bind-port", "Bind port",
          "Local UDP port to send from (0 = a free one)", 0, 65535,
          DEFAULT_BIND_PORT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstRudpSink:current-port:
   *
   * The local UDP port in use once started (from READY on), 0 before.
   */
  g_object_class_install_property (gobject_class, PROP_BOUND_PORT,
      g_param_spec_uint ("current-port", "Current port",
          "Local UDP port in use (read-only, once started)", 0, 65535, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  /**
   * GstRudpSink:bound-port:
   *
   * Deprecated alias of #GstRudpSink:current-port (docs/conventions.md).
   */
  twoflow_property_install_alias (gobject_class, PROP_BOUND_PORT, "bound-port",
      "current-port");
  /**
   * GstRudpSink:ecn:
   *
   * Send the flow ECN-capable: the socket's IP_TOS (IPV6_TCLASS) carries
   * ECT(0) (RFC 3168), so an ECN-enabled AQM on the path marks its packets
   * CE where it would drop them early, and rudpsrc halves the level on a
   * mark as on a loss (its `ce-marked` and `ce-decreases` stats). Use it
   * only with a receiver that reacts to CE (rudpsrc does). Everything the
   * sink sends is ECN-capable, its RTCP notices too (rudpsrc reacts to a
   * mark on them as on a marked RTP packet).
   */
  g_object_class_install_property (gobject_class, PROP_ECN,
      g_param_spec_boolean ("ecn", "ECN",
          "Send the packets ECN-capable (ECT(0), RFC 3168): an ECN AQM marks "
          "them CE instead of dropping them, rudpsrc halves its level on a "
          "mark", DEFAULT_ECN, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstRudpSink:rtx-time:
   *
   * How long sent packets are kept to answer the receiver's retransmission
   * requests (RTCP Generic NACK, RFC 4585, which rudpsrc sends for
   * rtpjitterbuffer's do-retransmission): a NACKed packet still kept is
   * sent again at once, outside the pacing, as it was sent (same sequence
   * number; the same SRTP packet). 0: no retransmission.
   */
  g_object_class_install_property (gobject_class, PROP_RTX_TIME,
      g_param_spec_uint64 ("rtx-time", "Retransmission time",
          "Keep sent packets this long (ns) to resend those the receiver "
          "NACKs (0: no retransmission)", 0, 60 * GST_SECOND,
          DEFAULT_RTX_TIME, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /* NAT traversal (learn-peer, hello-id), the group erap and rudp share:
   * gst/common/twoflowprops.c */
  twoflow_hello_sender_props_install (gobject_class, PROP_HELLO_FIRST);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class, "rUDP sink",
      "Sink/Network",
      "Sends RTP over UDP as a paced near-CBR flow whose rate the receiver "
      "may choose", "twoflow developers <dev@twoflow.invalid>");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, TWOFLOW_DOC_URI_BASE "rudp.md");
  gst_type_mark_as_plugin_api (GST_TYPE_RUDP_RATE_CONTROL, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_RUDP_SRTP_CIPHER, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_RUDP_SRTP_AUTH, 0);

  bs_class->start = GST_DEBUG_FUNCPTR (gst_rudp_sink_start);
  bs_class->stop = GST_DEBUG_FUNCPTR (gst_rudp_sink_stop);
  bs_class->unlock = GST_DEBUG_FUNCPTR (gst_rudp_sink_unlock);
  bs_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_rudp_sink_unlock_stop);
  bs_class->event = GST_DEBUG_FUNCPTR (gst_rudp_sink_event);
  bs_class->render = GST_DEBUG_FUNCPTR (gst_rudp_sink_render);
  bs_class->render_list = GST_DEBUG_FUNCPTR (gst_rudp_sink_render_list);
}

static void
gst_rudp_sink_init (GstRudpSink * sink)
{
  twoflow_hello_sender_props_init (&sink->hello_props);
  sink->host = g_strdup (DEFAULT_HOST);
  sink->port = DEFAULT_PORT;
  sink->bind_port = DEFAULT_BIND_PORT;
  sink->ecn = DEFAULT_ECN;
  sink->rtx_time = DEFAULT_RTX_TIME;
  sink->rate = DEFAULT_RATE;
  sink->timer_interval = DEFAULT_TIMER_INTERVAL;
  sink->bucket_depth = DEFAULT_BUCKET_DEPTH;
  sink->buffer_size = DEFAULT_BUFFER_SIZE;
  sink->rate_control = DEFAULT_RATE_CONTROL;
  gst_rudp_levels_init_default (&sink->levels);
  sink->srtp_cipher = DEFAULT_SRTP_CIPHER;
  sink->srtp_auth = DEFAULT_SRTP_AUTH;
  /* the bucket is the clock of this sink */
  gst_base_sink_set_sync (GST_BASE_SINK (sink), FALSE);
}

static void
gst_rudp_sink_finalize (GObject * object)
{
  GstRudpSink *sink = GST_RUDP_SINK (object);

  g_free (sink->host);
  if (sink->key)
    memset (sink->key, 0, strlen (sink->key));
  g_free (sink->key);
  g_free (sink->last.peer);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* Object lock held */
static void
pacer_params (GstRudpSink * sink, GstRudpPacerParams * params)
{
  params->rate = sink->rate;
  params->bucket_depth = sink->bucket_depth;
  params->buffer_size = sink->buffer_size;
  params->timer_interval = sink->timer_interval;
}

static gboolean
levels_from_value (GstRudpLevels * l, const GValue * value)
{
  guint64 rates[GST_RUDP_MAX_LEVELS];
  guint i, n = gst_value_array_get_size (value);

  if (n == 0 || n > GST_RUDP_MAX_LEVELS)
    return FALSE;
  for (i = 0; i < n; i++) {
    const GValue *v = gst_value_array_get_value (value, i);
    GValue u = G_VALUE_INIT;

    g_value_init (&u, G_TYPE_UINT64);
    if (!g_value_type_transformable (G_VALUE_TYPE (v), G_TYPE_UINT64)
        || !g_value_transform (v, &u) || g_value_get_uint64 (&u) < MIN_RATE)
      return FALSE;
    rates[i] = g_value_get_uint64 (&u);
  }
  return gst_rudp_levels_set (l, rates, n);
}

static void
levels_to_value (const GstRudpLevels * l, GValue * value)
{
  guint i;

  for (i = 0; i < l->n; i++) {
    GValue v = G_VALUE_INIT;

    g_value_init (&v, G_TYPE_UINT64);
    g_value_set_uint64 (&v, l->rate[i]);
    gst_value_array_append_and_take_value (value, &v);
  }
}

static void
gst_rudp_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstRudpSink *sink = GST_RUDP_SINK (object);
  gboolean reconf = FALSE;
  gint set_level = -1;

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
    case PROP_RATE:
      sink->rate = g_value_get_uint64 (value);
      if (sink->rate_control == GST_RUDP_RATE_CONTROL_RECEIVER)
        set_level = gst_rudp_levels_for_bitrate (&sink->levels, sink->rate);
      reconf = TRUE;
      break;
    case PROP_TIMER_INTERVAL:
      sink->timer_interval = g_value_get_uint64 (value);
      reconf = TRUE;
      break;
    case PROP_BUCKET_DEPTH:
      sink->bucket_depth = g_value_get_uint64 (value);
      reconf = TRUE;
      break;
    case PROP_BUFFER_SIZE:
      sink->buffer_size = g_value_get_uint64 (value);
      reconf = TRUE;
      break;
    case PROP_RATE_CONTROL:
      sink->rate_control = g_value_get_enum (value);
      break;
    case PROP_KEY:
      if (sink->key)
        memset (sink->key, 0, strlen (sink->key));
      g_free (sink->key);
      sink->key = g_value_dup_string (value);
      break;
    case PROP_SRTP_CIPHER:
      sink->srtp_cipher = g_value_get_enum (value);
      break;
    case PROP_SRTP_AUTH:
      sink->srtp_auth = g_value_get_enum (value);
      break;
    case PROP_BIND_PORT:
      sink->bind_port = g_value_get_uint (value);
      break;
    case PROP_ECN:
      sink->ecn = g_value_get_boolean (value);
      break;
    case PROP_RTX_TIME:
      sink->rtx_time = g_value_get_uint64 (value);
      break;
    case PROP_LEVELS:{
      GstRudpLevels l;

      if (levels_from_value (&l, value))
        sink->levels = l;
      else
        g_warning ("rudpsink: levels must be 1 to %d increasing rates of "
            "at least %d bit/s", GST_RUDP_MAX_LEVELS, MIN_RATE);
      break;
    }
    default:
      if (!twoflow_hello_sender_props_set (&sink->hello_props,
              prop_id - PROP_HELLO_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (sink);

  /* the pacer is there between start and stop (streaming lock not held:
   * its own lock orders the updates) */
  if (sink->pacer && set_level >= 0)
    gst_rudp_pacer_session_set_level (sink->pacer, set_level);
  else if (!sink->pacer && set_level >= 0)
    sink->initial_level = set_level;
  if (sink->pacer && reconf) {
    GstRudpPacerParams params;

    GST_OBJECT_LOCK (sink);
    pacer_params (sink, &params);
    GST_OBJECT_UNLOCK (sink);
    gst_rudp_pacer_session_reconfigure (sink->pacer, &params);
  }
}

static void
gst_rudp_sink_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstRudpSink *sink = GST_RUDP_SINK (object);

  if (prop_id == PROP_URI) {
    g_value_take_string (value,
        gst_uri_handler_get_uri (GST_URI_HANDLER (object)));
    return;
  }
  switch (prop_id) {
    case PROP_HOST:
      GST_OBJECT_LOCK (sink);
      g_value_set_string (value, sink->host);
      GST_OBJECT_UNLOCK (sink);
      break;
    case PROP_PORT:
      g_value_set_uint (value, sink->port);
      break;
    case PROP_RATE:
      g_value_set_uint64 (value, sink->rate);
      break;
    case PROP_TIMER_INTERVAL:
      g_value_set_uint64 (value, sink->timer_interval);
      break;
    case PROP_BUCKET_DEPTH:
      g_value_set_uint64 (value, sink->bucket_depth);
      break;
    case PROP_BUFFER_SIZE:
      g_value_set_uint64 (value, sink->buffer_size);
      break;
    case PROP_RATE_CONTROL:
      g_value_set_enum (value, sink->rate_control);
      break;
    case PROP_SRTP_CIPHER:
      g_value_set_enum (value, sink->srtp_cipher);
      break;
    case PROP_SRTP_AUTH:
      g_value_set_enum (value, sink->srtp_auth);
      break;
    case PROP_BIND_PORT:
      g_value_set_uint (value, sink->bind_port);
      break;
    case PROP_BOUND_PORT:
      g_value_set_uint (value, sink->bound_port);
      break;
    case PROP_ECN:
      g_value_set_boolean (value, sink->ecn);
      break;
    case PROP_RTX_TIME:
      g_value_set_uint64 (value, sink->rtx_time);
      break;
    case PROP_LEVELS:
      GST_OBJECT_LOCK (sink);
      levels_to_value (&sink->levels, value);
      GST_OBJECT_UNLOCK (sink);
      break;
    case PROP_STATS:
      if (sink->pacer) {
        GstRudpPacerSessionStats ps;

        gst_rudp_pacer_session_get_stats (sink->pacer, &ps);
        g_value_take_boxed (value, gst_rudp_sink_make_stats (sink, &ps));
        g_free (ps.peer);
      } else {
        g_value_take_boxed (value, gst_rudp_sink_make_stats (sink, NULL));
      }
      break;
    default:
      if (!twoflow_hello_sender_props_get (&sink->hello_props,
              prop_id - PROP_HELLO_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static GstStructure *
gst_rudp_sink_make_stats (GstRudpSink * sink,
    const GstRudpPacerSessionStats * ps)
{
  GstRudpPacerSessionStats stopped = { 0 };
  const GstRudpSenderStats *ss;
  const GstRudpFlowStats *fs;
  const gchar *peer;
  GstStructure *st;

  if (!ps) {
    /* stopped: the counters of the last run, an idle bucket */
    if (sink->has_last)
      stopped = sink->last;
    stopped.flow = (GstRudpFlowStats) {
    0};
    stopped.flow.rate = sink->rate / 8;
    stopped.flow.depth = sink->bucket_depth;
    stopped.srtp = FALSE;
    stopped.peer = NULL;
    ps = &stopped;
  }
  ss = &ps->sender;
  fs = &ps->flow;
  peer = ps->peer;
  st = gst_structure_new ("application/x-rudpsink-stats",
      "rate", G_TYPE_UINT64, fs->rate * 8,
      "level", G_TYPE_UINT, ps == &stopped && !sink->has_last ?
      sink->initial_level : ss->level,
      "bytes-sent", G_TYPE_UINT64, fs->bytes_sent,
      "packets-sent", G_TYPE_UINT64, fs->packets_sent,
      "bucket-fill", G_TYPE_INT64, fs->bucket_fill,
      "bucket-depth", G_TYPE_UINT64, fs->depth,
      "queued-bytes", G_TYPE_UINT64, fs->queued_bytes,
      "queued-packets", G_TYPE_UINT, fs->queued_packets,
      "send-errors", G_TYPE_UINT64, ps->send_errors,
      "feedback-received", G_TYPE_UINT64, ss->requests,
      "notices-sent", G_TYPE_UINT64, ss->notices,
      "level-changes", G_TYPE_UINT64, ss->level_changes,
      "srtt", G_TYPE_UINT64, ss->srtt,
      "rtt", G_TYPE_UINT64, ss->rtt,
      "rtt-samples", G_TYPE_UINT64, ss->rtt_samples,
      "rtx-requested", G_TYPE_UINT64, ps->rtx_requested,
      "rtx-repeated", G_TYPE_UINT64, ps->rtx_repeated,
      "rtx-sent", G_TYPE_UINT64, ps->rtx_sent,
      "rtx-missing", G_TYPE_UINT64, ps->rtx_missing,
      "rtx-skipped", G_TYPE_UINT64, ps->rtx_skipped,
      "rtx-charged", G_TYPE_UINT64, ps->rtx_charged,
      "receiver-reports", G_TYPE_UINT64, ss->rr_reports,
      "receiver-highest-seq", G_TYPE_UINT, ss->rr_ext_max_seq,
      "receiver-lost", G_TYPE_INT, ss->rr_lost,
      "receiver-fraction-lost", G_TYPE_UINT, (guint) ss->rr_fraction_lost,
      "srtp", G_TYPE_BOOLEAN, ps->srtp,
      "ecn", G_TYPE_BOOLEAN, sink->ecn_on,
      "auth-failures", G_TYPE_UINT64, ps->auth_failures,
      "replayed", G_TYPE_UINT64, ps->replayed,
      "foreign-feedback", G_TYPE_UINT64, ps->foreign_feedback,
      "peer", G_TYPE_STRING, peer ? peer : "",
      "hellos", G_TYPE_UINT64, ps->hello.accepted,
      "hellos-moved", G_TYPE_UINT64, ps->hello.moved,
      "hellos-foreign", G_TYPE_UINT64, ps->hello.foreign,
      "hellos-forged", G_TYPE_UINT64, ps->hello.forged,
      "hellos-replayed", G_TYPE_UINT64, ps->hello.replayed,
      "hellos-unknown", G_TYPE_UINT64, ps->hellos_unknown,
      "dropped-no-peer", G_TYPE_UINT64, ps->dropped_no_peer, NULL);
  return st;
}

/* The pacer's callbacks: a new level is announced upstream and posted as
 * a GstNetworkCongestion rate event; the first send error is a warning. */
static void
pacer_level_changed (GstObject * owner, guint64 bitrate, GstClockTime srtt)
{
  gst_twoflow_congestion_notify (GST_ELEMENT (owner),
      GST_BASE_SINK_PAD (owner), GST_TWOFLOW_CONGESTION_RATE, bitrate, srtt);
}

static void
pacer_send_error (GstObject * owner, const GError * err)
{
  /* a warning, never fatal: the flow goes on */
  GST_ELEMENT_WARNING (owner, RESOURCE, WRITE, (NULL),
      ("send error: %s (counted in stats, not repeated)", err->message));
}

static const GstRudpPacerCallbacks pacer_callbacks = {
  pacer_level_changed, pacer_send_error
};

static gboolean
gst_rudp_sink_start (GstBaseSink * bsink)
{
  GstRudpSink *sink = GST_RUDP_SINK (bsink);
  GstRudpSenderConfig sc;
  GstRudpPacerSessionConfig pc;
  GInetSocketAddress *dest;
  GError *err = NULL;
  gchar *host;
  GstRudpSrtp *srtp = NULL;
  guint bind_port;
  gboolean learn, ecn;
  GSocketFamily family;

  GST_OBJECT_LOCK (sink);
  if (sink->key && *sink->key)
    srtp = gst_rudp_srtp_new (sink->key, sink->srtp_cipher, sink->srtp_auth,
        &err);
  GST_OBJECT_UNLOCK (sink);
  if (err) {
    GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS, (NULL),
        ("invalid SRTP settings: %s", err->message));
    g_clear_error (&err);
    return FALSE;
  }

  GST_OBJECT_LOCK (sink);
  host = g_strdup (sink->host);
  bind_port = sink->bind_port;
  learn = sink->hello_props.learn_peer;
  ecn = sink->ecn;
  gst_rudp_sender_config_init (&sc);
  sc.levels = sink->levels;
  sc.initial_level = sink->initial_level;
  /* fixed: the receiver's requests are read (stats: its reports) and
   * answered (its RTT), not followed */
  sc.follow = sink->rate_control == GST_RUDP_RATE_CONTROL_RECEIVER;
  GST_OBJECT_UNLOCK (sink);

  dest = twoflow_net_resolve (host, sink->port, G_SOCKET_FAMILY_INVALID,
      &err);
  if (!dest) {
    GST_ELEMENT_ERROR (sink, RESOURCE, NOT_FOUND, (NULL),
        ("cannot resolve %s: %s", host, err->message));
    g_clear_error (&err);
    g_free (host);
    gst_rudp_srtp_free (srtp);
    return FALSE;
  }
  g_free (host);
  /* a port of our own (ephemeral unless bind-port): the receiver's
   * feedback and hellos come back here; non-blocking: the pacing thread
   * must never block on one flow */
  family = g_socket_address_get_family (G_SOCKET_ADDRESS (dest));
  if (bind_port)
    sink->socket = twoflow_net_udp_open (family == G_SOCKET_FAMILY_IPV6 ?
        "::" : "0.0.0.0", bind_port, 0, 0, 1024 * 1024, &err);
  else
    sink->socket = twoflow_net_udp_open_any (family, 0, 0, 1024 * 1024, &err);
  if (!sink->socket) {
    GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_WRITE, (NULL),
        ("cannot open a UDP socket on port %u: %s", bind_port, err->message));
    g_clear_error (&err);
    g_object_unref (dest);
    gst_rudp_srtp_free (srtp);
    return FALSE;
  }
  sink->ecn_on = FALSE;
  if (ecn) {
    /* ECT(0) in the TOS byte / traffic class of every datagram; on an
     * IPv6 socket IP_TOS too, for IPv4-mapped destinations (learn-peer) */
    gboolean ok = g_socket_set_option (sink->socket, IPPROTO_IP, IP_TOS,
        GST_RUDP_ECN_ECT0, family == G_SOCKET_FAMILY_IPV4 ? &err : NULL);

    if (family == G_SOCKET_FAMILY_IPV6)
      ok = g_socket_set_option (sink->socket, IPPROTO_IPV6, IPV6_TCLASS,
          GST_RUDP_ECN_ECT0, &err);
    if (!ok) {
      GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS, (NULL),
          ("cannot send ECN-capable (IP_TOS/IPV6_TCLASS): %s",
              err->message));
      g_clear_error (&err);
      g_clear_object (&sink->socket);
      g_object_unref (dest);
      gst_rudp_srtp_free (srtp);
      return FALSE;
    }
    sink->ecn_on = TRUE;
  }
  sink->bound_port = twoflow_net_local_port (sink->socket);
  GST_OBJECT_LOCK (sink);
  pacer_params (sink, &pc.params);
  pc.hello_id = sink->hello_props.id;
  pc.rtx_time = sink->rtx_time;
  GST_OBJECT_UNLOCK (sink);
  pc.socket = sink->socket;
  pc.srtp = srtp;
  pc.sender = sc;
  if (learn) {
    pc.dest = NULL;
    pc.allowed = g_inet_socket_address_get_address (dest);
    GST_INFO_OBJECT (sink, "on port %u, waiting for a hello",
        sink->bound_port);
  } else {
    pc.dest = G_SOCKET_ADDRESS (dest);
    pc.allowed = NULL;
  }
  sink->pacer = gst_rudp_pacer_add_session (&pc, GST_OBJECT (sink),
      &pacer_callbacks);
  g_object_unref (dest);
  return TRUE;
}

static gboolean
gst_rudp_sink_stop (GstBaseSink * bsink)
{
  GstRudpSink *sink = GST_RUDP_SINK (bsink);

  if (sink->pacer) {
    /* the counters stay readable; the context goes */
    g_free (sink->last.peer);
    gst_rudp_pacer_session_get_stats (sink->pacer, &sink->last);
    sink->has_last = TRUE;
    gst_rudp_pacer_remove_session (sink->pacer);
    sink->pacer = NULL;
  }
  if (sink->socket)
    g_socket_close (sink->socket, NULL);
  g_clear_object (&sink->socket);
  return TRUE;
}

static gboolean
gst_rudp_sink_unlock (GstBaseSink * bsink)
{
  GstRudpSink *sink = GST_RUDP_SINK (bsink);

  if (sink->pacer)
    gst_rudp_pacer_session_set_flushing (sink->pacer, TRUE);
  return TRUE;
}

static gboolean
gst_rudp_sink_unlock_stop (GstBaseSink * bsink)
{
  GstRudpSink *sink = GST_RUDP_SINK (bsink);

  if (sink->pacer)
    gst_rudp_pacer_session_set_flushing (sink->pacer, FALSE);
  return TRUE;
}

static gboolean
gst_rudp_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstRudpSink *sink = GST_RUDP_SINK (bsink);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      /* EOS once the last packet has left (or we are flushed) */
      if (sink->pacer)
        gst_rudp_pacer_session_drain (sink->pacer);
      break;
    case GST_EVENT_FLUSH_STOP:
      if (sink->pacer)
        gst_rudp_pacer_session_flush (sink->pacer);
      break;
    default:
      break;
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (bsink, event);
}

static GstFlowReturn
gst_rudp_sink_render (GstBaseSink * bsink, GstBuffer * buf)
{
  GstRudpSink *sink = GST_RUDP_SINK (bsink);

  if (!gst_rudp_pacer_session_queue (sink->pacer, gst_buffer_ref (buf)))
    return GST_FLOW_FLUSHING;
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_rudp_sink_render_list (GstBaseSink * bsink, GstBufferList * list)
{
  GstRudpSink *sink = GST_RUDP_SINK (bsink);
  guint i, n = gst_buffer_list_length (list);

  for (i = 0; i < n; i++)
    if (!gst_rudp_pacer_session_queue (sink->pacer,
            gst_buffer_ref (gst_buffer_list_get (list, i))))
      return GST_FLOW_FLUSHING;
  return GST_FLOW_OK;
}

/* rudp://host:port URIs (GstURIHandler), as erapsink has erap:// */

static GstURIType
gst_rudp_sink_uri_get_type (GType type)
{
  return GST_URI_SINK;
}

static const gchar *const *
gst_rudp_sink_uri_get_protocols (GType type)
{
  static const gchar *protocols[] = { "rudp", NULL };

  return protocols;
}

static gchar *
gst_rudp_sink_uri_get_uri (GstURIHandler * handler)
{
  return twoflow_uri_make (GST_ELEMENT (handler), "rudp", "host", "port");
}

static gboolean
gst_rudp_sink_uri_set_uri (GstURIHandler * handler, const gchar * str,
    GError ** error)
{
  return twoflow_uri_apply (GST_ELEMENT (handler), str, "rudp", "host",
      "port", NULL, DEFAULT_PORT, 1, error);
}

static void
gst_rudp_sink_uri_handler_init (gpointer g_iface, gpointer iface_data)
{
  GstURIHandlerInterface *iface = (GstURIHandlerInterface *) g_iface;

  iface->get_type = gst_rudp_sink_uri_get_type;
  iface->get_protocols = gst_rudp_sink_uri_get_protocols;
  iface->get_uri = gst_rudp_sink_uri_get_uri;
  iface->set_uri = gst_rudp_sink_uri_set_uri;
}
