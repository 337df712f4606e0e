/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ctcpsink: controlled TCP sender with TCP congestion events
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/**
 * SECTION:element-ctcpsink
 * @title: ctcpsink
 * @see_also: tcpserversrc, tcpclientsink, twoflowsplit
 *
 * Sends its input over one TCP connection to a stock `tcpserversrc`
 * (no special receiver), as controlled TCP ("cTCP"): every segment of
 * the video (#GstCtcpSink:segment-duration of timestamps, numbered like
 * twoflowsplit numbers them) is held until complete, so its size S is
 * known, and is sent at the target rate `S/(T(1−p̂))` (p̂ =
 * #GstCtcpSink:loss-threshold) so that it arrives within one segment
 * duration. Every #GstCtcpSink:adjustment-interval the window
 * `W_target = target·RTT/MSS` (`target·RTT/(0.75·MSS)` after an interval
 * with losses) is recomputed, RTT being the 95th percentile of the
 * interval's srtt readings, plus one packet for the receiver's delayed
 * ACK, and the bytes in flight are kept under `min(cwnd, W_target)·MSS`.
 * A segment that falls behind its schedule is sent faster: its residual
 * bytes over its residual time, up to #GstCtcpSink:max-catch-up times its
 * nominal rate (docs/ctcp.md lists these deviations and why). All of it from
 * user space: `TCP_INFO` for RTT, cwnd, losses and state, `SIOCOUTQ` /
 * `SIOCOUTQNSD` for the bytes in flight, `TCP_NOTSENT_LOWAT` to bound the
 * unsent bytes, and `SO_MAX_PACING_RATE` (1.25 × target) so the kernel
 * paces packets on its own and the flow stays near-CBR.
 *
 * With #GstCtcpSink:target-bitrate (bit/s) set, that rate is used instead and
 * buffers are sent as they come (no holding). With #GstCtcpSink:mode=tcp the sink
 * is plain TCP (the baseline): as fast as the connection allows.
 *
 * Segment numbers count from the stream's first timestamp (whatever it
 * is: a capture may start at hours). Segment k is due
 * `t0 + (k − k0 + 1)·T`, where t0 is when the first segment k0 became
 * ready to send; a segment is done when the kernel
 * reports its last byte acknowledged (`tcpi_bytes_acked`). Its deadline
 * slack is in the stats. A segment that starts late gets a higher rate,
 * from the time left before its deadline (never less than
 * T/max-catch-up). Input
 * without timestamps is one segment until EOS; use target-bitrate then.
 *
 * While data is in flight `TCP_INFO` is read every quarter RTT (1 to
 * 50 ms) and the TCP-interactive congestion events are derived from
 * `tcpi_ca_state` transitions and the cumulative counters
 * (`tcpi_total_rto`, `tcpi_retransmits`, `tcpi_total_retrans`): `rexmt`
 * (a retransmission timeout, one per RTO), `dupack` (fast retransmit:
 * entering recovery), `recovered` (back to open after either). Each
 * subscribed one (#GstCtcpSink:events) is sent upstream as a
 * `GstNetworkCongestion` event and posted as an element message of the
 * same structure (`estimated-bitrate` = 8 · min(cwnd·MSS/srtt,
 * delivery rate)). Timers are #GstClockID waits on the pipeline clock.
 *
 * The algorithm is the sans-IO core #GstCtcpSender (gst-libs/gst/ctcp):
 * the element reads the clock, feeds it buffers, `TCP_INFO` readings and
 * what it wrote, writes what its poll allows and sleeps until its next
 * wakeup.
 *
 * At EOS the sink waits until every byte is acknowledged, shuts down its
 * write side (so the receiver sees EOS) and then lets EOS through. A
 * refused or lost connection is an element error (RESOURCE).
 *
 * With #GstCtcpSink:listen the direction of the connection is reversed
 * (a receiver behind NAT connects out, e.g. with `tcpclientsrc`): the sink
 * listens from start on (#GstCtcpSink:current-port), and its sender thread
 * accepts one connection from #GstCtcpSink:host; everything else is the
 * same. Connecting, accepting and the TLS handshake happen in the sender
 * thread, never in the state change: a peer that does not answer costs
 * at most #GstCtcpSink:connect-timeout, then an element error.
 *
 * The #GstCtcpSink:stats structure `application/x-ctcpsink-stats` is the
 * core's state at its last `TCP_INFO` reading (reading it does no I/O and
 * changes nothing). Rates in it are bytes/s, like tcpi_delivery_rate:
 *
 * * `mode` (gchararray): ctcp or tcp
 * * `congestion-control` (gchararray): the socket's algorithm (TCP_CONGESTION)
 * * `target-rate` (guint64): current target rate, bytes/s (0: none); above
 *   `nominal-rate` while a late segment catches up
 * * `nominal-rate` (guint64): S/(T(1−p̂)) of the segment being sent (or
 *   the fixed target-bitrate), bytes/s
 * * `w-target` (guint): W_target, packets (0: not computed yet / tcp mode)
 * * `w-target-rtt` (guint64): the RTT W_target was sized from (95th
 *   percentile of the last interval's srtt readings), ns (0: none yet)
 * * `window` (guint64): effective window min(cwnd, W_target)·MSS, bytes (0: unlimited)
 * * `adjustments` (guint64): W_target computations so far
 * * `cwnd`, `ssthresh` (guint): packets, from TCP_INFO
 * * `mss` (guint): bytes
 * * `srtt`, `rttvar` (guint64): ns
 * * `estimated-bitrate` (guint64): 8 · min(cwnd·MSS/srtt, delivery rate), bit/s
 * * `retransmissions` (guint64): segments retransmitted on this connection
 * * `timeouts` (guint64): retransmission timeouts on this connection
 * * `recoveries` (guint64): fast recoveries (dupack events)
 * * `inferred-recoveries` (guint64): of those, found by the counters only
 *   (begun and ended between two readings)
 * * `rexmt-events`, `dupack-events`, `recovered-events` (guint64): events
 *   detected (posted or not)
 * * `bytes-sent` (guint64): stream bytes written to the socket
 * * `bytes-acked` (guint64): stream bytes acknowledged by the receiver
 * * `bytes-in-flight` (guint64): sent, unacknowledged (SIOCOUTQ − SIOCOUTQNSD)
 * * `bytes-queued` (guint64): accepted from upstream, not yet written
 * * `segments` (guint64): segments done (fully acknowledged)
 * * `segments-late` (guint64): of those, done after their deadline
 * * `ramp-segments` (guint64): segments sent at the start-up ramp's rate
 *   (`startup-bitrate`; their deadline is the end of their playback)
 * * `min-deadline-slack` (gint64): smallest slack so far, ns (0 if none)
 * * `deadline-slack` (GstValueArray of gint64): slack of each done segment
 *   (deadline − time acknowledged), ns, oldest first (the last 1024)
 * * `polls` (guint64): TCP_INFO readings
 * * `tls` (gboolean): whether the connection is TLS
 * * `tls-protocol`, `tls-ciphersuite` (gchararray): negotiated ("" without)
 * * `record-overhead` (guint): bytes each TLS record adds on the wire (0:
 *   plain TCP)
 * * `wire-bytes-sent`, `wire-bytes-acked` (guint64): bytes on the wire
 *   (records and their overhead) as the kernel counts them
 * * `connections-refused` (guint): listen=true: connections closed
 *   unserved (another address, a failed TLS handshake or token)
 *
 * ## Security
 *
 * With #GstCtcpSink:tls (or any of #GstCtcpSink:tls-ca-file,
 * #GstCtcpSink:tls-pin, #GstCtcpSink:tls-certificate set) the connection is
 * TLS (GLib's GTlsClientConnection, glib-networking/GnuTLS). The server's
 * certificate must match #GstCtcpSink:host and chain to the system's CAs
 * or to #GstCtcpSink:tls-ca-file; with #GstCtcpSink:tls-pin alone its
 * SHA-256 fingerprint is the trust anchor (a self-signed certificate
 * works, name not checked); with both, both must hold. A rejected
 * certificate is an element error (RESOURCE, OPEN_WRITE) saying which
 * check failed. #GstCtcpSink:tls-certificate (and #GstCtcpSink:tls-key)
 * authenticate the sink to the receiver.
 *
 * With #GstCtcpSink:tls-role=server the roles are the other way round
 * (in both directions of the TCP connection): the sink presents
 * #GstCtcpSink:tls-certificate, the receiver (`ctcpsrc`) verifies it as
 * a TLS client does, and must then send #GstCtcpSink:tls-token, a
 * per-session secret, before any stream byte is sent. This is how
 * twoflow-server keys the essential flow from its control channel: the
 * proxy checks the server's certificate as it did for the control
 * connection, and the token it sent in PLAY proves the proxy.
 *
 * The kernel's numbers (TCP_INFO bytes_acked, SIOCOUTQ, SIOCOUTQNSD) then
 * count TLS records: every write is one record of at most 16384 bytes and
 * adds `record-overhead` bytes (22 with TLS 1.3). The core keeps window,
 * in-flight bytes and pacing in wire bytes, raises each segment's rate by
 * the overhead and maps acknowledged wire bytes back to stream bytes for
 * the deadlines (gst_ctcp_sender_set_record_framing()).
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 tcpserversrc host=127.0.0.1 port=5600 ! filesink location=essential.twoflow
 * ]| The receiver, a stock element (start it first).
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=250 pattern=ball ! \
 *     video/x-raw,width=352,height=288,framerate=25/1 ! mpeg2enc format=3 ! \
 *     mpegvideoparse ! twoflowsplit name=s segment-duration=1000000000 \
 *     s.essential ! ctcpsink host=127.0.0.1 port=5600 segment-duration=1000000000 \
 *     s.enhanced ! fakesink sync=false async=false
 * ]| Encodes 10 s of video and sends its essential flow (the I frames, in
 * the twoflow byte-stream format) in 1 s segments, each at `S/(T(1−p̂))`:
 * about 10 s. essential.twoflow is identical to what `s.essential !
 * filesink` writes.
 * |[
 * gst-launch-1.0 -m filesrc location=/dev/zero num-buffers=100 ! \
 *     ctcpsink host=127.0.0.1 port=5600 target-bitrate=216000 congestion-control=reno
 * ]| 400 kB as a fixed 216 kbit/s (27 kB/s) cTCP flow over Reno (about
 * 15 s), printing any congestion events (restart the receiver first).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>

#include <gst/twoflow/networkcongestion.h>
#include "gstctcpsink.h"
#include "twoflownet.h"
#include "twoflowprops.h"
#include "twoflowtls.h"

GST_DEBUG_CATEGORY_STATIC (ctcp_sink_debug);
#define GST_CAT_DEFAULT ctcp_sink_debug

#define DEFAULT_HOST                "localhost"
#define DEFAULT_PORT                4953
#define DEFAULT_MODE                GST_CTCP_SINK_MODE_CTCP
#define DEFAULT_SEGMENT_DURATION    (256 * GST_SECOND)
#define DEFAULT_LOSS_THRESHOLD      0.05
#define DEFAULT_ADJUSTMENT_INTERVAL (8 * GST_SECOND)
#define DEFAULT_TARGET_RATE         0
#define DEFAULT_MAX_CATCH_UP        GST_CTCP_DEFAULT_MAX_CATCH_UP
#define DEFAULT_LEAD                0
#define DEFAULT_STARTUP_RATE        0
#define DEFAULT_STARTUP_FACTOR      2.0
#define DEFAULT_CONGESTION_CONTROL  GST_CTCP_SINK_CC_DEFAULT
#define DEFAULT_LISTEN              FALSE
#define DEFAULT_BIND_PORT           0
#define DEFAULT_CONNECT_TIMEOUT     (10 * GST_SECOND)
#define DEFAULT_TLS_ROLE            GST_CTCP_SINK_TLS_ROLE_CLIENT
#define DEFAULT_EVENTS \
  (GST_TWOFLOW_CONGESTION_REXMT | GST_TWOFLOW_CONGESTION_DUPACK | \
   GST_TWOFLOW_CONGESTION_RECOVERED)

/* Unsent bytes the kernel may hold in cTCP mode. */
#define NOTSENT_LOWAT (16 * 1024)
/* The most buffers one write gathers. */
#define MAX_IOV 64

#ifndef TCP_NOTSENT_LOWAT
#define TCP_NOTSENT_LOWAT 25
#endif
#ifndef SO_MAX_PACING_RATE
#define SO_MAX_PACING_RATE 47
#endif

/* struct tcp_info as of Linux 6.7 (Debian 12's headers stop earlier);
 * the length getsockopt returns tells which fields this kernel filled. */
struct ctcp_tcp_info
{
  guint8 state, ca_state, retransmits, probes, backoff, options;
  guint8 wscale, app_limited;
  guint32 rto, ato, snd_mss, rcv_mss, unacked, sacked, lost, retrans, fackets;
  guint32 last_data_sent, last_ack_sent, last_data_recv, last_ack_recv;
  guint32 pmtu, rcv_ssthresh, rtt, rttvar, snd_ssthresh, snd_cwnd, advmss;
  guint32 reordering, rcv_rtt, rcv_space, total_retrans;
  guint64 pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
  guint32 segs_out, segs_in, notsent_bytes, min_rtt, data_segs_in;
  guint32 data_segs_out;
  guint64 delivery_rate, busy_time, rwnd_limited, sndbuf_limited;
  guint32 delivered, delivered_ce;
  guint64 bytes_sent, bytes_retrans;
  guint32 dsack_dups, reord_seen, rcv_ooopack, snd_wnd, rcv_wnd, rehash;
  guint16 total_rto, total_rto_recoveries;
  guint32 total_rto_time;
};
G_STATIC_ASSERT (offsetof (struct ctcp_tcp_info, rto) == 8);
G_STATIC_ASSERT (offsetof (struct ctcp_tcp_info, total_retrans) == 100);
G_STATIC_ASSERT (sizeof (struct ctcp_tcp_info) == 248);

enum
{
  PROP_0,
  PROP_TLS_FIRST,
  PROP_TLS_LAST = PROP_TLS_FIRST + TWOFLOW_TLS_N_PROPS - 1,
  PROP_URI,
  PROP_HOST,
  PROP_PORT,
  PROP_MODE,
  PROP_SEGMENT_DURATION,
  PROP_LOSS_THRESHOLD,
  PROP_ADJUSTMENT_INTERVAL,
  PROP_TARGET_RATE,
  PROP_MAX_CATCH_UP,
  PROP_LEAD,
  PROP_STARTUP_RATE,
  PROP_STARTUP_FACTOR,
  PROP_CONGESTION_CONTROL,
  PROP_EVENTS,
  PROP_TLS_CERTIFICATE,
  PROP_TLS_KEY,
  PROP_LISTEN,
  PROP_BIND_PORT,
  PROP_BOUND_PORT,
  PROP_CONNECT_TIMEOUT,
  PROP_TLS_ROLE,
  PROP_STATS,
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

GType
gst_ctcp_sink_mode_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {GST_CTCP_SINK_MODE_CTCP, "Controlled TCP (segment target rates)", "ctcp"},
    {GST_CTCP_SINK_MODE_TCP, "Plain TCP (baseline)", "tcp"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstCtcpSinkMode",
            values));
  return type;
}

GType
gst_ctcp_sink_congestion_control_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {GST_CTCP_SINK_CC_DEFAULT, "System default", "default"},
    {GST_CTCP_SINK_CC_CUBIC, "CUBIC", "cubic"},
    {GST_CTCP_SINK_CC_RENO, "Reno", "reno"},
    {GST_CTCP_SINK_CC_BBR, "BBR", "bbr"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstCtcpSinkCongestionControl", values));
  return type;
}

GType
gst_ctcp_sink_tls_role_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {GST_CTCP_SINK_TLS_ROLE_CLIENT, "TLS client: checks the receiver's "
          "certificate", "client"},
    {GST_CTCP_SINK_TLS_ROLE_SERVER, "TLS server: presents tls-certificate, "
          "the receiver proves tls-token", "server"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstCtcpSinkTlsRole",
            values));
  return type;
}

#define gst_ctcp_sink_parent_class parent_class
static void gst_ctcp_sink_uri_handler_init (gpointer g_iface,
    gpointer iface_data);
G_DEFINE_TYPE_WITH_CODE (GstCtcpSink, gst_ctcp_sink, GST_TYPE_BASE_SINK,
    G_IMPLEMENT_INTERFACE (GST_TYPE_URI_HANDLER,
        gst_ctcp_sink_uri_handler_init));
GST_ELEMENT_REGISTER_DEFINE (ctcpsink, "ctcpsink", GST_RANK_NONE,
    GST_TYPE_CTCP_SINK);

static void gst_ctcp_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_ctcp_sink_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void gst_ctcp_sink_finalize (GObject * object);
static gboolean gst_ctcp_sink_start (GstBaseSink * bsink);
static gboolean gst_ctcp_sink_stop (GstBaseSink * bsink);
static gboolean gst_ctcp_sink_unlock (GstBaseSink * bsink);
static gboolean gst_ctcp_sink_unlock_stop (GstBaseSink * bsink);
static gboolean gst_ctcp_sink_event (GstBaseSink * bsink, GstEvent * event);
static GstFlowReturn gst_ctcp_sink_render (GstBaseSink * bsink,
    GstBuffer * buf);
static GstFlowReturn gst_ctcp_sink_render_list (GstBaseSink * bsink,
    GstBufferList * list);
static gpointer gst_ctcp_sink_thread (gpointer data);
static void clear_conn_config (GstCtcpSink * self);

static void
gst_ctcp_sink_class_init (GstCtcpSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *basesink_class = GST_BASE_SINK_CLASS (klass);

  gobject_class->set_property = gst_ctcp_sink_set_property;
  gobject_class->get_property = gst_ctcp_sink_get_property;
  /**
   * GstCtcpSink:uri:
   *
   * The receiver as a `ctcp://host:port` URI (IPv6 literals in brackets,
   * `ctcp://[::1]:4953`; no port means 4953). Query parameters set other
   * properties by name, with values as on a gst-launch-1.0 line:
   * `ctcp://10.0.0.2:4953?target-bitrate=8000000&congestion-control=bbr`.
   * Reading it back gives `ctcp://host:port` from #GstCtcpSink:host and
   * #GstCtcpSink:port, with the query of the URI last set: the same keys
   * with the properties' current values. The same URI makes a ctcpsink
   * with gst_element_make_from_uri().
   */
  g_object_class_install_property (gobject_class, PROP_URI,
      g_param_spec_string ("uri", "URI",
          "ctcp://host:port[?property=value&...] of the receiver",
          "ctcp://" DEFAULT_HOST ":4953", G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  gobject_class->finalize = gst_ctcp_sink_finalize;

  /**
   * GstCtcpSink:host:
   *
   * The host (name or address) of the receiver, e.g. a tcpserversrc.
   */
  g_object_class_install_property (gobject_class, PROP_HOST,
      g_param_spec_string ("host", "Host",
          "Host to connect to", DEFAULT_HOST,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:port:
   *
   * The TCP port of the receiver.
   */
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port", "TCP port to connect to",
          1, 65535, DEFAULT_PORT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:mode:
   *
   * ctcp: controlled TCP (target rate, W_target, pacing); tcp: plain TCP,
   * for comparison. Events and stats work in both.
   */
  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode",
          "Controlled TCP or plain TCP (baseline)",
          GST_TYPE_CTCP_SINK_MODE, DEFAULT_MODE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:segment-duration:
   *
   * Duration T of a video segment: a buffer's segment number is its
   * timestamp (DTS, else PTS; from the stream's first) divided by this,
   * as in twoflowsplit.
   */
  g_object_class_install_property (gobject_class, PROP_SEGMENT_DURATION,
      g_param_spec_uint64 ("segment-duration", "Segment duration",
          "Duration of a video segment in nanoseconds",
          GST_MSECOND, G_MAXUINT64, DEFAULT_SEGMENT_DURATION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:loss-threshold:
   *
   * p̂ of the target rate S/(T(1−p̂)): the share of a segment's time kept
   * free for losses.
   */
  g_object_class_install_property (gobject_class, PROP_LOSS_THRESHOLD,
      g_param_spec_double ("loss-threshold", "Loss threshold",
          "Loss rate p of the target rate S/(T(1-p))",
          0.0, 0.9, DEFAULT_LOSS_THRESHOLD,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:adjustment-interval:
   *
   * How often W_target is recomputed from the interval's RTT and losses.
   */
  g_object_class_install_property (gobject_class, PROP_ADJUSTMENT_INTERVAL,
      g_param_spec_uint64 ("adjustment-interval", "Adjustment interval",
          "Interval between W_target computations in nanoseconds",
          10 * GST_MSECOND, G_MAXUINT64, DEFAULT_ADJUSTMENT_INTERVAL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:target-bitrate:
   *
   * A fixed target rate in bit/s; 0 derives it from each segment's size
   * (S/(T(1−p̂))). Set, buffers are sent as they come (no holding).
   */
  g_object_class_install_property (gobject_class, PROP_TARGET_RATE,
      g_param_spec_uint64 ("target-bitrate", "Target bitrate",
          "Fixed target rate in bit/s (0 = S/(T(1-p)) of each segment)",
          0, 8 * (guint64) G_MAXUINT32, DEFAULT_TARGET_RATE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstCtcpSink:target-rate:
   *
   * Deprecated alias of #GstCtcpSink:target-bitrate (docs/conventions.md).
   */
  twoflow_property_install_alias (gobject_class, PROP_TARGET_RATE,
      "target-rate", "target-bitrate");

  /**
   * GstCtcpSink:max-catch-up:
   *
   * Deadline awareness: a segment behind its schedule is sent at its
   * residual bytes over its residual time, at most this many times its
   * nominal rate S/(T(1−p̂)) (and never above what cwnd allows). 1 turns
   * catch-up off: every segment keeps the paper's constant rate.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_CATCH_UP,
      g_param_spec_double ("max-catch-up", "Maximum catch-up",
          "Largest rate of a late segment, as a multiple of S/(T(1-p)) "
          "(1 = no catch-up)", 1.0, 16.0, DEFAULT_MAX_CATCH_UP,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:lead:
   *
   * How long after the first segment is ready (complete) it starts
   * playing at the receiver, ns; each later segment k is due `lead + k·T`
   * after that. 0: one segment duration (the paper's stagger: the flow a
   * whole segment ahead from the start).
   */
  g_object_class_install_property (gobject_class, PROP_LEAD,
      g_param_spec_uint64 ("lead", "Lead",
          "Time from the first segment being ready to its playback in "
          "nanoseconds (0 = one segment duration)", 0, G_MAXUINT64,
          DEFAULT_LEAD, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:startup-bitrate:
   *
   * The start-up ramp, bit/s (0: none). With a `lead` shorter than a
   * segment the flow cannot be a segment ahead at first: a segment that
   * has less than its duration left before it plays is sent at the larger
   * of this and `startup-factor` × S/(T(1−p̂)) (and judged against the end
   * of its playback) until the flow is a segment ahead; then every
   * segment goes at S/(T(1−p̂)) again. twoflow-server computes it with
   * the lead from the video (docs/system.md, "Start-up").
   */
  g_object_class_install_property (gobject_class, PROP_STARTUP_RATE,
      g_param_spec_uint64 ("startup-bitrate", "Start-up bitrate",
          "Rate of the start-up ramp in bit/s until the flow is a segment "
          "ahead (0 = no ramp)", 0, G_MAXUINT64, DEFAULT_STARTUP_RATE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstCtcpSink:startup-rate:
   *
   * Deprecated alias of #GstCtcpSink:startup-bitrate (docs/conventions.md).
   */
  twoflow_property_install_alias (gobject_class, PROP_STARTUP_RATE,
      "startup-rate", "startup-bitrate");

  /**
   * GstCtcpSink:startup-factor:
   *
   * During the start-up ramp a segment goes at least this many times its
   * nominal rate S/(T(1−p̂)).
   */
  g_object_class_install_property (gobject_class, PROP_STARTUP_FACTOR,
      g_param_spec_double ("startup-factor", "Start-up factor",
          "Least rate of a ramp segment as a multiple of S/(T(1-p))",
          1.0, 64.0, DEFAULT_STARTUP_FACTOR,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:congestion-control:
   *
   * The kernel's congestion control for this socket (TCP_CONGESTION).
   * An algorithm not in net.ipv4.tcp_allowed_congestion_control needs
   * CAP_NET_ADMIN; failing to set it is an error.
   */
  g_object_class_install_property (gobject_class, PROP_CONGESTION_CONTROL,
      g_param_spec_enum ("congestion-control", "Congestion control",
          "TCP congestion control algorithm of the connection",
          GST_TYPE_CTCP_SINK_CONGESTION_CONTROL, DEFAULT_CONGESTION_CONTROL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:events:
   *
   * Which congestion events are sent upstream and posted (rexmt, dupack,
   * recovered). Detection and counting do not depend on it.
   */
  g_object_class_install_property (gobject_class, PROP_EVENTS,
      g_param_spec_flags ("events", "Events",
          "Congestion events to report",
          GST_TYPE_TWOFLOW_CONGESTION_TYPE, DEFAULT_EVENTS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /* tls, tls-ca-file, tls-pin, tls-token: the group both cTCP ends
   * share (gst/common/twoflowprops.c) */
  twoflow_tls_props_install (gobject_class, PROP_TLS_FIRST);
  /**
   * GstCtcpSink:tls-certificate:
   *
   * PEM file of a client certificate (and its key, unless
   * #GstCtcpSink:tls-key is set). Setting it turns TLS on.
   */
  g_object_class_install_property (gobject_class, PROP_TLS_CERTIFICATE,
      g_param_spec_string ("tls-certificate", "TLS client certificate",
          "PEM file of the client certificate", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstCtcpSink:tls-key:
   *
   * PEM file of the client certificate's private key (NULL: in
   * #GstCtcpSink:tls-certificate).
   */
  g_object_class_install_property (gobject_class, PROP_TLS_KEY,
      g_param_spec_string ("tls-key", "TLS client key",
          "PEM file of the client certificate's key", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:listen:
   *
   * Accept the receiver's connection instead of connecting to it (for a
   * receiver behind NAT, which connects out with e.g. `tcpclientsrc`).
   * The sink listens on #GstCtcpSink:bind-port from start on and accepts,
   * one connection whose address is #GstCtcpSink:host (connections from
   * other addresses are closed; with TLS, so are those whose handshake or
   * #GstCtcpSink:tls-token fails, and the sink keeps waiting).
   */
  g_object_class_install_property (gobject_class, PROP_LISTEN,
      g_param_spec_boolean ("listen", "Listen",
          "Accept one connection from host instead of connecting to it",
          DEFAULT_LISTEN, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:bind-port:
   *
   * The TCP port to listen on with #GstCtcpSink:listen (0: any free port,
   * see #GstCtcpSink:current-port).
   */
  g_object_class_install_property (gobject_class, PROP_BIND_PORT,
      g_param_spec_uint ("bind-port", "Bind port",
          "TCP port to listen on (listen=true; 0 = any)", 0, 65535,
          DEFAULT_BIND_PORT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:current-port:
   *
   * The port listened on (listen=true), known from start (READY to
   * PAUSED) on; 0 otherwise.
   */
  g_object_class_install_property (gobject_class, PROP_BOUND_PORT,
      g_param_spec_uint ("current-port", "Current port",
          "TCP port listened on (listen=true)", 0, 65535, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstCtcpSink:bound-port:
   *
   * Deprecated alias of #GstCtcpSink:current-port (docs/conventions.md).
   */
  twoflow_property_install_alias (gobject_class, PROP_BOUND_PORT, "bound-port",
      "current-port");

  /**
   * GstCtcpSink:connect-timeout:
   *
   * How long connecting (per address of #GstCtcpSink:host) and the TLS
   * handshake (with the token) may take, in nanoseconds; 0: no bound of
   * our own (the kernel gives up on an unanswered SYN after about two
   * minutes). Connecting happens in the sender thread, so the state change
   * never blocks; a connection not made in time is an element error
   * (RESOURCE, OPEN_WRITE) "Could not connect to host:port" saying
   * "no answer within connect-timeout". With #GstCtcpSink:listen it bounds
   * each accepted connection's TLS handshake and token (a connection that
   * fails them is closed, and the sink keeps waiting).
   */
  g_object_class_install_property (gobject_class, PROP_CONNECT_TIMEOUT,
      g_param_spec_uint64 ("connect-timeout", "Connect timeout",
          "Longest connect and TLS handshake in nanoseconds (0 = the "
          "kernel's)", 0, G_MAXUINT64, DEFAULT_CONNECT_TIMEOUT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:tls-role:
   *
   * Which end of the TLS handshake the sink is, whoever opened the TCP
   * connection. `client` (default): it checks the receiver's certificate
   * (#GstCtcpSink:tls-ca-file, #GstCtcpSink:tls-pin). `server`: it
   * presents #GstCtcpSink:tls-certificate (with #GstCtcpSink:tls-key), the
   * receiver (e.g. `ctcpsrc`) checks it as a TLS client does, and then
   * must send #GstCtcpSink:tls-token before a byte of the stream leaves —
   * the server of a control channel uses its own certificate for the
   * media too, and the token from that channel authenticates the receiver.
   */
  g_object_class_install_property (gobject_class, PROP_TLS_ROLE,
      g_param_spec_enum ("tls-role", "TLS role",
          "TLS client (check the receiver) or server (present "
          "tls-certificate, check tls-token)", GST_TYPE_CTCP_SINK_TLS_ROLE,
          DEFAULT_TLS_ROLE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstCtcpSink:stats:
   *
   * An `application/x-ctcpsink-stats` structure; fields in the element
   * description.
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Controller, TCP and deadline statistics",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class,
      "Controlled TCP sink", "Sink/Network",
      "Sends over TCP capped to each segment's target rate, emitting TCP "
      "congestion events", "twoflow developers <dev@twoflow.invalid>");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, TWOFLOW_DOC_URI_BASE "ctcp.md");

  basesink_class->start = GST_DEBUG_FUNCPTR (gst_ctcp_sink_start);
  basesink_class->stop = GST_DEBUG_FUNCPTR (gst_ctcp_sink_stop);
  basesink_class->unlock = GST_DEBUG_FUNCPTR (gst_ctcp_sink_unlock);
  basesink_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_ctcp_sink_unlock_stop);
  basesink_class->event = GST_DEBUG_FUNCPTR (gst_ctcp_sink_event);
  basesink_class->render = GST_DEBUG_FUNCPTR (gst_ctcp_sink_render);
  basesink_class->render_list = GST_DEBUG_FUNCPTR (gst_ctcp_sink_render_list);

  gst_type_mark_as_plugin_api (GST_TYPE_CTCP_SINK_MODE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_CTCP_SINK_CONGESTION_CONTROL, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_CTCP_SINK_TLS_ROLE, 0);

  GST_DEBUG_CATEGORY_INIT (ctcp_sink_debug, "ctcpsink", 0,
      "controlled TCP sink");
}

static void
gst_ctcp_sink_init (GstCtcpSink * self)
{
  self->host = g_strdup (DEFAULT_HOST);
  self->port = DEFAULT_PORT;
  self->mode = DEFAULT_MODE;
  self->segment_duration = DEFAULT_SEGMENT_DURATION;
  self->loss_threshold = DEFAULT_LOSS_THRESHOLD;
  self->adjustment_interval = DEFAULT_ADJUSTMENT_INTERVAL;
  self->target_rate = DEFAULT_TARGET_RATE;
  self->max_catch_up = DEFAULT_MAX_CATCH_UP;
  self->lead = DEFAULT_LEAD;
  self->startup_rate = DEFAULT_STARTUP_RATE;
  self->startup_factor = DEFAULT_STARTUP_FACTOR;
  self->cc = DEFAULT_CONGESTION_CONTROL;
  self->events = DEFAULT_EVENTS;
  self->connect_timeout = DEFAULT_CONNECT_TIMEOUT;
  self->tls_role = DEFAULT_TLS_ROLE;
  self->fd = -1;
  self->cancellable = g_cancellable_new ();
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  g_queue_init (&self->queue);
  {
    /* stats exist before the first connection */
    GstCtcpSenderConfig cfg = { TRUE, DEFAULT_SEGMENT_DURATION,
      DEFAULT_LOSS_THRESHOLD, DEFAULT_ADJUSTMENT_INTERVAL,
      DEFAULT_TARGET_RATE, DEFAULT_MAX_CATCH_UP, DEFAULT_LEAD,
      DEFAULT_STARTUP_RATE, DEFAULT_STARTUP_FACTOR
    };
    self->core = gst_ctcp_sender_new (&cfg);
  }
  /* cTCP paces itself and sends a segment ahead of playback */
  gst_base_sink_set_sync (GST_BASE_SINK (self), FALSE);
}

static void
gst_ctcp_sink_finalize (GObject * object)
{
  GstCtcpSink *self = GST_CTCP_SINK (object);

  g_free (self->host);
  g_free (self->peer);
  g_free (self->accept_host);
  g_free (self->cc_used);
  twoflow_tls_props_clear (&self->tls_props);
  g_free (self->tls_certificate);
  g_free (self->tls_key);
  clear_conn_config (self);
  g_free (self->tls_protocol);
  g_free (self->tls_suite);
  g_free (self->stage);
  g_object_unref (self->cancellable);
  gst_ctcp_sender_free (self->core);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* ------------------------------------------------------------------ */
/* socket helpers */

static const gchar *
cc_name (GstCtcpSinkCongestionControl cc)
{
  switch (cc) {
    case GST_CTCP_SINK_CC_CUBIC:
      return "cubic";
    case GST_CTCP_SINK_CC_RENO:
      return "reno";
    case GST_CTCP_SINK_CC_BBR:
      return "bbr";
    default:
      return NULL;
  }
}

/* Reads TCP_INFO and the socket's queues and hands them to the core;
 * self->lock held. */
static gboolean
read_tcp_info (GstCtcpSink * self, GstClockTime now)
{
  struct ctcp_tcp_info k;
  socklen_t len = sizeof (k);
  GstCtcpTcpInfo i = { 0, };
  int outq = 0, nsd = 0;
  guint attempt;

  if (self->fd < 0)
    return FALSE;
  memset (&k, 0, sizeof (k));
  if (getsockopt (self->fd, IPPROTO_TCP, TCP_INFO, &k, &len) < 0)
    return FALSE;
  /* bytes_acked and SIOCOUTQ must be one snapshot: the core's first
   * reading takes what the socket holds before our first write (a TLS
   * handshake's last flight) as not ours, and an ACK landing between
   * the two calls would count that flight as our progress. They are
   * consistent when bytes_acked did not move across the ioctl. */
  for (attempt = 0; attempt < 4; attempt++) {
    guint64 before = k.bytes_acked;

    if (ioctl (self->fd, SIOCOUTQ, &outq) < 0
        || ioctl (self->fd, SIOCOUTQNSD, &nsd) < 0) {
      outq = nsd = 0;
      break;
    }
    if (len < offsetof (struct ctcp_tcp_info, bytes_received))
      break;
    if (getsockopt (self->fd, IPPROTO_TCP, TCP_INFO, &k, &len) < 0)
      return FALSE;
    if (k.bytes_acked == before)
      break;
  }
  self->tcp_state = k.state;
  i.ca_state = k.ca_state;
  i.retransmits = k.retransmits;
  i.snd_mss = k.snd_mss;
  i.rtt_us = k.rtt;
  i.rttvar_us = k.rttvar;
  i.snd_cwnd = k.snd_cwnd;
  i.snd_ssthresh = k.snd_ssthresh;
  i.unacked = k.unacked;
  i.lost = k.lost;
  i.total_retrans = k.total_retrans;
  if (len >= offsetof (struct ctcp_tcp_info, bytes_received))
    i.bytes_acked = k.bytes_acked;
  if (len >= offsetof (struct ctcp_tcp_info, busy_time))
    i.delivery_rate = k.delivery_rate;
  if (len >= offsetof (struct ctcp_tcp_info, dsack_dups))
    i.bytes_retrans = k.bytes_retrans;
  if (len >= offsetof (struct ctcp_tcp_info, total_rto_time)) {
    i.has_total_rto = TRUE;
    i.total_rto = k.total_rto;
    i.total_rto_recoveries = k.total_rto_recoveries;
  }
  gst_ctcp_sender_handle_tcp_info (self->core, &i, MAX (outq, 0),
      outq > nsd ? outq - nsd : 0, now);
  return TRUE;
}

/* SO_MAX_PACING_RATE, when the core's rate changed */
static void
set_pacing (GstCtcpSink * self, guint64 pace)
{
  guint32 pace32 = MIN (pace, G_MAXUINT32);

  if (self->fd < 0 || pace == 0 || pace == self->pacing_set)
    return;
  if (setsockopt (self->fd, SOL_SOCKET, SO_MAX_PACING_RATE, &pace,
          sizeof (pace)) < 0
      && setsockopt (self->fd, SOL_SOCKET, SO_MAX_PACING_RATE, &pace32,
          sizeof (pace32)) < 0)
    GST_WARNING_OBJECT (self, "SO_MAX_PACING_RATE: %s", g_strerror (errno));
  self->pacing_set = pace;
  GST_DEBUG_OBJECT (self, "pacing at most %" G_GUINT64_FORMAT " B/s", pace);
}

/* ------------------------------------------------------------------ */
/* start / stop */

/* Ends a connection without closing its descriptor: a TLS connection that
 * failed can outlive our reference (glib-networking's operations thread
 * holds it) and still poll the socket; closing the descriptor under it
 * let the number be reused (a later connection, a GstPoll's control
 * socket) and the stale poller read or close what it no longer owned
 * (elements/ctcptls under load: "Socket operation on non-socket", "failed
 * to release event"). The last reference closes it. */
static void
drop_socket (GSocket ** sock)
{
  if (*sock)
    g_socket_shutdown (*sock, TRUE, TRUE, NULL);
  g_clear_object (sock);
}

/* The connection is there (connected, or accepted by the sender thread):
 * the socket and TLS state the sender thread writes with. */
static void
attach_socket (GstCtcpSink * self, GSocket * sock, GIOStream * conn,
    GIOStream * tls, const gchar * peer, gboolean capped)
{
  gchar ccbuf[16] = "";
  socklen_t cclen = sizeof (ccbuf) - 1;
  GstCtcpSenderConfig cfg;

  cfg.capped = capped;
  g_socket_set_blocking (sock, FALSE);
  if (cfg.capped) {
    int one = 1, lowat = NOTSENT_LOWAT;

    /* pacing decides packet sizes: no Nagle delays */
    setsockopt (g_socket_get_fd (sock), IPPROTO_TCP, TCP_NODELAY, &one,
        sizeof (one));
    if (setsockopt (g_socket_get_fd (sock), IPPROTO_TCP, TCP_NOTSENT_LOWAT,
            &lowat, sizeof (lowat)) < 0)
      GST_WARNING_OBJECT (self, "TCP_NOTSENT_LOWAT: %s", g_strerror (errno));
  }
  getsockopt (g_socket_get_fd (sock), IPPROTO_TCP, TCP_CONGESTION, ccbuf,
      &cclen);

  g_mutex_lock (&self->lock);
  self->socket = sock;
  self->fd = g_socket_get_fd (sock);
  g_free (self->peer);
  self->peer = g_strdup (peer);
  g_free (self->cc_used);
  self->cc_used = g_strdup (ccbuf);
  g_clear_pointer (&self->tls_protocol, g_free);
  g_clear_pointer (&self->tls_suite, g_free);
  self->stage_len = 0;
  self->conn = conn;
  self->tls_conn = tls;
  self->tls_out = tls ? G_POLLABLE_OUTPUT_STREAM (g_io_stream_get_output_stream
      (tls)) : NULL;
  if (tls) {
    self->tls_protocol =
        g_strdup (twoflow_tls_protocol_name (G_TLS_CONNECTION (tls)));
    self->tls_suite =
        g_tls_connection_get_ciphersuite_name (G_TLS_CONNECTION (tls));
    self->tls_overhead = twoflow_tls_record_overhead (G_TLS_CONNECTION (tls));
    if (self->tls_overhead == 0)
      GST_WARNING_OBJECT (self, "record overhead of %s unknown: the "
          "controller counts it as stream bytes", self->tls_suite);
    gst_ctcp_sender_set_record_framing (self->core, self->tls_overhead,
        TWOFLOW_TLS_RECORD_SIZE);
    if (!self->stage)
      self->stage = g_malloc (TWOFLOW_TLS_RECORD_SIZE);
  }
  g_mutex_unlock (&self->lock);

  GST_INFO_OBJECT (self, "connected to %s (%s, %s%s%s)", peer,
      cfg.capped ? "ctcp" : "tcp", ccbuf, tls ? ", " : "",
      tls ? self->tls_suite : "");
}

/* listen=true: the socket the receiver connects to; the sender thread
 * accepts (it may wait long: the receiver learns the port from its
 * control channel). Called from start(), without the lock. */
static gboolean
start_listening (GstCtcpSink * self, const gchar * host, guint bind_port,
    const gchar * cc)
{
  GSocket *ls = NULL;
  GSocketAddress *sa = NULL, *bound = NULL;
  GInetAddress *any;
  GError *err = NULL;
  gboolean ok = FALSE;

  ls = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
      G_SOCKET_PROTOCOL_TCP, &err);
  /* the accepted socket inherits the congestion control */
  if (ls && cc && setsockopt (g_socket_get_fd (ls), IPPROTO_TCP,
          TCP_CONGESTION, cc, strlen (cc)) < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot use TCP congestion control \"%s\"", cc),
        ("setsockopt(TCP_CONGESTION): %s", g_strerror (errno)));
    goto out;
  }
  any = g_inet_address_new_any (G_SOCKET_FAMILY_IPV4);
  sa = g_inet_socket_address_new (any, bind_port);
  g_object_unref (any);
  if (!ls || !g_socket_bind (ls, sa, TRUE, &err)
      || !g_socket_listen (ls, &err)
      || !(bound = g_socket_get_local_address (ls, &err))) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
        ("Could not listen on port %u", bind_port),
        ("%s", err ? err->message : "socket"));
    goto out;
  }
  GST_OBJECT_LOCK (self);
  self->bound_port =
      g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  GST_OBJECT_UNLOCK (self);
  g_mutex_lock (&self->lock);
  self->listener = g_object_ref (ls);
  g_free (self->accept_host);
  self->accept_host = g_strdup (host);
  g_mutex_unlock (&self->lock);
  GST_INFO_OBJECT (self, "listening on port %u",
      g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound)));
  ok = TRUE;

out:
  g_clear_error (&err);
  g_clear_object (&sa);
  g_clear_object (&bound);
  g_clear_object (&ls);
  return ok;
}

/* Constant-time comparison of the token received with ours. */
static gboolean
token_equal (const guint8 * got, const gchar * want, gsize n)
{
  guint8 d = 0;
  gsize i;

  for (i = 0; i < n; i++)
    d |= got[i] ^ (guint8) want[i];
  return d == 0;
}

/* TLS on a connected socket, the sink's end as tls-role says; as the
 * server it then reads and checks tls-token before anything is sent.
 * Bounded by connect-timeout (a socket timeout: a silent peer cannot hold
 * the sink). Without the lock (the config fields are only written by
 * start(), before the sender thread runs). FALSE: *why says why. */
static gboolean
secure_socket (GstCtcpSink * self, GSocket * sock, GIOStream ** conn_out,
    GIOStream ** tls_out, gchar ** why)
{
  GIOStream *conn, *tls = NULL;
  GError *e = NULL;
  guint secs = twoflow_net_timeout_seconds (self->conn_timeout);

  g_socket_set_blocking (sock, TRUE);
  g_socket_set_timeout (sock, secs);
  conn = G_IO_STREAM (g_socket_connection_factory_create_connection (sock));
  if (self->conn_tls_role == GST_CTCP_SINK_TLS_ROLE_CLIENT) {
    TwoflowTlsClientConfig tc = { self->conn_host, self->conn_ca_file,
      self->conn_pin, self->conn_certificate, self->conn_key
    };

    tls = twoflow_tls_client_handshake (conn, &tc, self->cancellable, &e);
  } else {
    GTlsCertificate *cert = !self->conn_certificate ? NULL :
        self->conn_key ? g_tls_certificate_new_from_files
        (self->conn_certificate, self->conn_key, &e) :
        g_tls_certificate_new_from_file (self->conn_certificate, &e);

    if (cert) {
      tls = twoflow_tls_server_handshake (conn, cert, NULL, self->cancellable,
          &e);
      g_object_unref (cert);
    } else if (!e) {
      e = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
          "tls-role=server needs tls-certificate");
    }
    if (tls && self->conn_token) {
      gsize n = strlen (self->conn_token), got = 0;
      guint8 *buf = g_malloc0 (n + 1);

      /* the receiver proves it is the one the token was given to (over
       * the control channel) before a byte of the stream leaves */
      if (!g_input_stream_read_all (g_io_stream_get_input_stream (tls), buf,
              n, &got, self->cancellable, &e) || got != n
          || !token_equal (buf, self->conn_token, n)) {
        if (!e)
          e = g_error_new (G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
              "the receiver did not send the session token (tls-token): "
              "%s", got == n ? "wrong token" : "too short");
        /* no close_notify (disposing the stream would send one): the
         * receiver must not take the refusal for a clean, empty stream */
        g_socket_shutdown (sock, TRUE, TRUE, NULL);
        g_clear_object (&tls);
      }
      g_free (buf);
    }
  }
  g_socket_set_timeout (sock, 0);
  if (!tls) {
    if (g_error_matches (e, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
      *why = g_strdup_printf ("%s (connect-timeout %u s)", e->message, secs);
    else
      *why = g_strdup (e ? e->message : "TLS failed");
    g_clear_error (&e);
    g_object_unref (conn);
    return FALSE;
  }
  *conn_out = conn;
  *tls_out = tls;
  return TRUE;
}

/* The sender thread, listen=true: accepts the connection from
 * accept_host (others are closed; with TLS, also those whose handshake
 * or token fails). Called and returns with the lock. */
static gboolean
accept_connection (GstCtcpSink * self, gchar ** err)
{
  GSocket *ls = g_object_ref (self->listener);
  gchar *want = g_strdup (self->accept_host);
  GSocket *sock = NULL;
  GIOStream *conn = NULL, *tls = NULL;
  gchar *peer = NULL;
  gboolean capped = self->capped;

  g_mutex_unlock (&self->lock);
  while (!sock) {
    GError *e = NULL;
    gchar *ip, *addr, *why = NULL;

    sock = g_socket_accept (ls, self->cancellable, &e);
    if (!sock) {
      if (!g_error_matches (e, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        *err = g_strdup_printf ("accept: %s", e->message);
      g_error_free (e);
      break;
    }
    addr = twoflow_net_peer_address (sock, &ip);
    if (ip && twoflow_net_same_ip (want, ip)
        && (!self->conn_tls || secure_socket (self, sock, &conn, &tls,
                &why))) {
      peer = g_steal_pointer (&addr);
    } else {
      if (why)
        GST_WARNING_OBJECT (self, "connection from %s refused: %s", ip, why);
      else
        GST_WARNING_OBJECT (self, "connection from %s refused (expecting "
            "%s)", ip ? ip : "?", want);
      /* shut down, closed by its last reference (see drop_socket) */
      drop_socket (&sock);
      g_mutex_lock (&self->lock);
      self->refused++;
      g_mutex_unlock (&self->lock);
      if (g_cancellable_is_cancelled (self->cancellable)) {
        g_free (why);
        g_free (ip);
        g_free (addr);
        break;
      }
    }
    g_free (why);
    g_free (ip);
    g_free (addr);
  }
  if (sock) {
    /* one connection: no more are accepted */
    g_socket_close (ls, NULL);
    attach_socket (self, sock, conn, tls, peer, capped);
  }
  g_object_unref (ls);
  g_free (want);
  g_free (peer);
  g_mutex_lock (&self->lock);
  return sock != NULL;
}

/* The sender thread, connecting: resolve, connect (at most
 * connect-timeout per address: an address that silently drops the SYN
 * does not hold the sink for TCP's two minutes), TLS. Without the lock.
 * FALSE: *err and *tls_failed say what failed. */
static gboolean
connect_connection (GstCtcpSink * self, gchar ** err, gboolean * tls_failed)
{
  GSocketConnectable *addr;
  GSocketAddressEnumerator *en;
  GSocketAddress *sa;
  GError *e = NULL;
  GSocket *sock = NULL;
  GIOStream *conn = NULL, *tls = NULL;
  gchar *peer, *last = NULL;
  const gchar *cc = self->conn_cc;

  addr = g_network_address_new (self->conn_host, self->conn_port);
  en = g_socket_connectable_enumerate (addr);
  g_object_unref (addr);
  while (!sock && (sa = g_socket_address_enumerator_next (en,
              self->cancellable, &e))) {
    sock = g_socket_new (g_socket_address_get_family (sa),
        G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &e);
    if (sock && cc && setsockopt (g_socket_get_fd (sock), IPPROTO_TCP,
            TCP_CONGESTION, cc, strlen (cc)) < 0) {
      g_free (last);
      last = g_strdup_printf ("setsockopt(TCP_CONGESTION) \"%s\": %s (not "
          "in net.ipv4.tcp_allowed_congestion_control and no CAP_NET_ADMIN, "
          "or not available)", cc, g_strerror (errno));
      g_clear_object (&sock);
      g_object_unref (sa);
      break;
    }
    if (sock) {
      g_socket_set_blocking (sock, FALSE);
      if (!g_socket_connect (sock, sa, self->cancellable, &e)
          && g_error_matches (e, G_IO_ERROR, G_IO_ERROR_PENDING)) {
        g_clear_error (&e);
        if (g_socket_condition_timed_wait (sock, G_IO_OUT,
                self->conn_timeout ? (gint64) (self->conn_timeout /
                    GST_USECOND) : -1, self->cancellable, &e))
          g_socket_check_connect_result (sock, &e);
        if (g_error_matches (e, G_IO_ERROR, G_IO_ERROR_TIMED_OUT)) {
          g_clear_error (&e);
          e = g_error_new (G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
              "no answer within connect-timeout (%.1f s): the address "
              "drops the connection attempt, or is unreachable",
              (gdouble) self->conn_timeout / GST_SECOND);
        }
      }
      if (e)
        g_clear_object (&sock);
    }
    if (!sock) {
      g_free (last);
      last = g_strdup (e ? e->message : "socket");
      g_clear_error (&e);
    }
    g_object_unref (sa);
  }
  g_object_unref (en);
  if (!sock) {
    *err = last ? last : g_strdup (e ? e->message : "no address");
    g_clear_error (&e);
    return FALSE;
  }
  g_free (last);
  g_clear_error (&e);
  if (self->conn_tls && !secure_socket (self, sock, &conn, &tls, err)) {
    *tls_failed = TRUE;
    drop_socket (&sock);
    return FALSE;
  }
  peer = g_strdup_printf ("%s:%u", self->conn_host, self->conn_port);
  attach_socket (self, sock, conn, tls, peer, self->capped);
  g_free (peer);
  return TRUE;
}

static void
clear_conn_config (GstCtcpSink * self)
{
  g_clear_pointer (&self->conn_host, g_free);
  g_clear_pointer (&self->conn_cc, g_free);
  g_clear_pointer (&self->conn_ca_file, g_free);
  g_clear_pointer (&self->conn_pin, g_free);
  g_clear_pointer (&self->conn_certificate, g_free);
  g_clear_pointer (&self->conn_key, g_free);
  g_clear_pointer (&self->conn_token, g_free);
}

static gboolean
gst_ctcp_sink_start (GstBaseSink * bsink)
{
  GstCtcpSink *self = GST_CTCP_SINK (bsink);
  GstCtcpSenderConfig cfg;
  gboolean listen;
  guint bind_port;

  /* the sender thread of an earlier run is gone (stop joined it) */
  clear_conn_config (self);
  GST_OBJECT_LOCK (self);
  self->conn_ca_file = g_strdup (self->tls_props.ca_file);
  self->conn_pin = g_strdup (self->tls_props.pin);
  self->conn_certificate = g_strdup (self->tls_certificate);
  self->conn_key = g_strdup (self->tls_key);
  self->conn_token = g_strdup (self->tls_props.token);
  self->conn_tls_role = self->tls_role;
  self->conn_tls = twoflow_tls_props_enabled (&self->tls_props)
      || self->tls_certificate;
  self->conn_host = g_strdup (self->host);
  self->conn_port = self->port;
  self->conn_cc = g_strdup (cc_name (self->cc));
  self->conn_timeout = self->connect_timeout;
  cfg.capped = self->mode == GST_CTCP_SINK_MODE_CTCP;
  cfg.segment_duration = self->segment_duration;
  cfg.loss_threshold = self->loss_threshold;
  cfg.adjustment_interval = self->adjustment_interval;
  cfg.fixed_rate = self->target_rate;
  cfg.max_catch_up = self->max_catch_up;
  cfg.lead = self->lead;
  cfg.startup_rate = self->startup_rate;
  cfg.startup_factor = self->startup_factor;
  listen = self->listen;
  bind_port = self->bind_port;
  self->bound_port = 0;
  GST_OBJECT_UNLOCK (self);

  if (self->conn_tls && self->conn_tls_role == GST_CTCP_SINK_TLS_ROLE_SERVER
      && !self->conn_certificate) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("tls-role=server needs tls-certificate (the sink's certificate)"),
        (NULL));
    return FALSE;
  }

  g_mutex_lock (&self->lock);
  gst_ctcp_sender_free (self->core);
  /* its first reading (the sender thread's, before any write) is the
   * baseline of the connection's counters */
  self->core = gst_ctcp_sender_new (&cfg);
  self->capped = cfg.capped;
  self->flow = GST_FLOW_OK;
  self->running = TRUE;
  self->flushing = FALSE;
  self->eos = self->shut = self->kick = FALSE;
  self->head_offset = 0;
  self->pacing_set = 0;
  self->refused = 0;
  g_clear_pointer (&self->peer, g_free);
  g_mutex_unlock (&self->lock);

  g_cancellable_reset (self->cancellable);
  if (listen && !start_listening (self, self->conn_host, bind_port,
          self->conn_cc))
    return FALSE;

  /* connecting (or accepting) and the TLS handshake happen in the sender
   * thread: start() never blocks (a server's main loop calls it) */
  g_mutex_lock (&self->lock);
  self->thread = g_thread_new ("ctcpsink", gst_ctcp_sink_thread, self);
  g_mutex_unlock (&self->lock);
  return TRUE;
}
static gboolean
gst_ctcp_sink_stop (GstBaseSink * bsink)
{
  GstCtcpSink *self = GST_CTCP_SINK (bsink);
  GThread *thread;

  g_cancellable_cancel (self->cancellable);
  g_mutex_lock (&self->lock);
  self->running = FALSE;
  if (self->clock_id)
    gst_clock_id_unschedule (self->clock_id);
  g_cond_broadcast (&self->cond);
  thread = self->thread;
  self->thread = NULL;
  g_mutex_unlock (&self->lock);
  if (thread)
    g_thread_join (thread);

  g_mutex_lock (&self->lock);
  if (self->listener) {
    g_socket_close (self->listener, NULL);
    g_clear_object (&self->listener);
  }
  self->tls_out = NULL;
  g_clear_object (&self->tls_conn);
  g_clear_object (&self->conn);
  drop_socket (&self->socket);
  self->stage_len = 0;
  self->fd = -1;
  g_queue_clear_full (&self->queue, (GDestroyNotify) gst_buffer_unref);
  gst_clear_object (&self->clock);
  /* the core stays: its stats describe the connection that ended */
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_ctcp_sink_unlock (GstBaseSink * bsink)
{
  GstCtcpSink *self = GST_CTCP_SINK (bsink);

  g_mutex_lock (&self->lock);
  self->flushing = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gst_ctcp_sink_unlock_stop (GstBaseSink * bsink)
{
  GstCtcpSink *self = GST_CTCP_SINK (bsink);

  g_mutex_lock (&self->lock);
  self->flushing = FALSE;
  g_mutex_unlock (&self->lock);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* receiving side (self->lock held) */

static GstClockTime
now_locked (GstCtcpSink * self)
{
  return self->clock ? gst_clock_get_time (self->clock) : 0;
}

/* The sender thread runs on the pipeline clock, known from PLAYING on:
 * it waits for it after connecting. */
static void
ensure_clock (GstCtcpSink * self)
{
  GstClock *clock;

  if (self->clock || !self->running)
    return;
  clock = gst_element_get_clock (GST_ELEMENT (self));
  self->clock = clock ? clock : gst_system_clock_obtain ();
  g_cond_broadcast (&self->cond);
}

static void
wake_sender (GstCtcpSink * self)
{
  self->kick = TRUE;
  if (self->clock_id)
    gst_clock_id_unschedule (self->clock_id);
  g_cond_broadcast (&self->cond);
}

static GstFlowReturn
gst_ctcp_sink_render (GstBaseSink * bsink, GstBuffer * buf)
{
  GstCtcpSink *self = GST_CTCP_SINK (bsink);
  gsize size = gst_buffer_get_size (buf);
  GstFlowReturn ret;

  g_mutex_lock (&self->lock);
  if (self->flow != GST_FLOW_OK) {
    ret = self->flow;
    goto done;
  }
  ensure_clock (self);
  /* connecting, the sender thread connects first (at most
   * connect-timeout): a segment's time starts once there is a connection
   * to send it on, the handshake does not eat into the first deadline.
   * Listening, the receiver may come much later: the data waits in the
   * queue (up to two segments) as before. */
  while (!self->socket && !self->listener && !self->flushing
      && self->flow == GST_FLOW_OK && self->running)
    g_cond_wait (&self->cond, &self->lock);
  if (!self->socket && !self->listener) {
    ret = self->flushing ? GST_FLOW_FLUSHING : self->flow != GST_FLOW_OK ?
        self->flow : GST_FLOW_FLUSHING;
    goto done;
  }
  /* the core numbers the segment and holds it until complete; the bytes
   * wait here until it says they may go */
  if (size > 0)
    g_queue_push_tail (&self->queue, gst_buffer_ref (buf));
  if (gst_ctcp_sender_handle_buffer (self->core, GST_BUFFER_DTS_OR_PTS (buf),
          GST_BUFFER_DURATION (buf), size, now_locked (self)))
    wake_sender (self);
  while (!self->flushing && self->flow == GST_FLOW_OK
      && gst_ctcp_sender_is_full (self->core))
    g_cond_wait (&self->cond, &self->lock);
  ret = self->flushing ? GST_FLOW_FLUSHING : self->flow;

done:
  g_mutex_unlock (&self->lock);
  return ret;
}

static GstFlowReturn
gst_ctcp_sink_render_list (GstBaseSink * bsink, GstBufferList * list)
{
  guint i, n = gst_buffer_list_length (list);
  GstFlowReturn ret = GST_FLOW_OK;

  for (i = 0; i < n && ret == GST_FLOW_OK; i++)
    ret = gst_ctcp_sink_render (bsink, gst_buffer_list_get (list, i));
  return ret;
}

static gboolean
gst_ctcp_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstCtcpSink *self = GST_CTCP_SINK (bsink);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    g_mutex_lock (&self->lock);
    ensure_clock (self);
    gst_ctcp_sender_handle_eos (self->core, now_locked (self));
    self->eos = TRUE;
    wake_sender (self);
    /* linger until the receiver has everything (or flushing / error) */
    while (!self->flushing && self->flow == GST_FLOW_OK && self->running
        && !self->shut)
      g_cond_wait (&self->cond, &self->lock);
    g_mutex_unlock (&self->lock);
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (bsink, event);
}

/* ------------------------------------------------------------------ */
/* the sender thread: now = clock; core(now); wait(next_wakeup()) */

/* Writes up to @max queued bytes in one sendmsg(), gathering buffers:
 * small buffers (a trace's frames, a parser's pictures) must not each
 * become a packet. Returns the bytes written (0: the socket is full), -1
 * on a fatal error (then *err says why). */
/* Drops @n written bytes from the head of the queue. */
static void
consume (GstCtcpSink * self, gsize n)
{
  gsize left;

  for (left = n; left > 0;) {
    GstBuffer *head = g_queue_peek_head (&self->queue);
    gsize avail = gst_buffer_get_size (head) - self->head_offset;

    if (left < avail) {
      self->head_offset += left;
      break;
    }
    left -= avail;
    gst_buffer_unref (g_queue_pop_head (&self->queue));
    self->head_offset = 0;
  }
}

/* TLS: one record (at most 16384 bytes gathered from the queue) per
 * write. A write that would block is retried with the very same bytes
 * (GnuTLS keeps the record it began and sends it on the next call). */
static gssize
write_tls (GstCtcpSink * self, guint64 max, gchar ** err)
{
  GError *e = NULL;
  gssize n;

  if (self->stage_len == 0) {
    GList *l;
    gsize off = self->head_offset;

    max = MIN (max, TWOFLOW_TLS_RECORD_SIZE);
    for (l = self->queue.head; l && self->stage_len < max; l = l->next) {
      gsize len = gst_buffer_get_size (l->data) - off;

      len = MIN (len, max - self->stage_len);
      gst_buffer_extract (l->data, off, self->stage + self->stage_len, len);
      self->stage_len += len;
      off = 0;
    }
  }
  n = g_pollable_output_stream_write_nonblocking (self->tls_out, self->stage,
      self->stage_len, NULL, &e);
  if (n < 0) {
    if (g_error_matches (e, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
      GST_LOG_OBJECT (self, "TLS write blocked, %" G_GSIZE_FORMAT
          " bytes kept for the retry", self->stage_len);
      g_error_free (e);
      return 0;
    }
    *err = g_strdup_printf ("TLS send: %s", e->message);
    g_error_free (e);
    return -1;
  }
  if ((gsize) n < self->stage_len)
    memmove (self->stage, self->stage + n, self->stage_len - n);
  self->stage_len -= n;
  consume (self, n);
  return n;
}

static gssize
write_some (GstCtcpSink * self, guint64 max, gchar ** err)
{
  struct iovec iov[MAX_IOV];
  GstMapInfo maps[MAX_IOV];
  GstBuffer *bufs[MAX_IOV];
  struct msghdr msg = { 0, };
  guint64 total = 0;
  gssize n;
  GList *l;
  guint k = 0, j;

  if (self->tls_out)
    return write_tls (self, max, err);
  for (l = self->queue.head; l && k < MAX_IOV && total < max; l = l->next) {
    gsize off = k == 0 ? self->head_offset : 0;

    bufs[k] = l->data;
    if (!gst_buffer_map (bufs[k], &maps[k], GST_MAP_READ)) {
      for (j = 0; j < k; j++)
        gst_buffer_unmap (bufs[j], &maps[j]);
      *err = g_strdup ("cannot map a buffer");
      return -1;
    }
    iov[k].iov_base = maps[k].data + off;
    iov[k].iov_len = MIN (maps[k].size - off, max - total);
    total += iov[k].iov_len;
    k++;
  }
  msg.msg_iov = iov;
  msg.msg_iovlen = k;
  do
    n = sendmsg (self->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  for (j = 0; j < k; j++)
    gst_buffer_unmap (bufs[j], &maps[j]);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return 0;
    *err = g_strdup_printf ("send: %s", g_strerror (errno));
    return -1;
  }
  GST_LOG_OBJECT (self, "wrote %" G_GSSIZE_FORMAT " of %" G_GUINT64_FORMAT
      " in %u buffers", n, total, k);
  consume (self, n);
  return n;
}

/* Until the core's next wakeup (sink->lock held, released while
 * waiting): the socket's room when a write blocked, the clock otherwise,
 * new data or EOS when the core has no timer. */
static void
wait_for_work (GstCtcpSink * self, GstClockTime now, gboolean blocked)
{
  GstClockTime wake = gst_ctcp_sender_next_wakeup (self->core, now);

  if (!GST_CLOCK_TIME_IS_VALID (wake)) {
    /* idle: no timer, new data or EOS wakes us */
    if (self->running)
      g_cond_wait (&self->cond, &self->lock);
  } else if (blocked) {
    GSocket *sock = g_object_ref (self->socket);

    g_mutex_unlock (&self->lock);
    g_socket_condition_timed_wait (sock, G_IO_OUT,
        MAX (wake - now, GST_MSECOND) / GST_USECOND, self->cancellable,
        NULL);
    g_object_unref (sock);
    g_mutex_lock (&self->lock);
  } else if (wake > now) {
    GstClockID id = gst_clock_new_single_shot_id (self->clock, wake);

    self->clock_id = id;
    g_mutex_unlock (&self->lock);
    gst_clock_id_wait (id, NULL);
    g_mutex_lock (&self->lock);
    self->clock_id = NULL;
    gst_clock_id_unref (id);
  }
}

/* The sending thread's error: connecting, the TLS handshake, or the
 * connection lost. */
static void
post_error (GstCtcpSink * self, const gchar * err, const gchar * peer,
    gboolean open_failed, gboolean tls_failed)
{
  if (open_failed && tls_failed)
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
        ("TLS handshake with %s:%u failed", self->conn_host, self->conn_port),
        ("%s", err));
  else if (open_failed)
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
        ("Could not connect to %s:%u", self->conn_host, self->conn_port),
        ("%s", err));
  else
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Connection to %s lost", peer), ("%s", err));
}

static gpointer
gst_ctcp_sink_thread (gpointer data)
{
  GstCtcpSink *self = data;
  GArray *pending = g_array_new (FALSE, FALSE, sizeof (GstCtcpEvent));
  gchar *err = NULL, *peer;
  gboolean open_failed = FALSE, tls_failed = FALSE;
  /* an error is posted before render learns of it (self->flow): the
   * element's message must come before upstream's flow error */
  gboolean failed = FALSE;

  g_mutex_lock (&self->lock);
  if (!self->socket && self->listener && self->running) {
    if (!accept_connection (self, &err) && err)
      failed = TRUE;
  } else if (!self->socket && self->running) {
    gboolean ok;

    g_mutex_unlock (&self->lock);
    ok = connect_connection (self, &err, &tls_failed);
    g_mutex_lock (&self->lock);
    if (!ok && self->running && !g_cancellable_is_cancelled
        (self->cancellable)) {
      failed = TRUE;
      open_failed = TRUE;
    } else if (!ok) {
      g_clear_pointer (&err, g_free);
    }
  }
  /* render waits for the connection */
  g_cond_broadcast (&self->cond);
  /* the clock comes with PLAYING (the first render) */
  while (self->running && !failed && self->flow == GST_FLOW_OK
      && self->socket && !self->clock)
    g_cond_wait (&self->cond, &self->lock);
  while (self->running && !failed && self->flow == GST_FLOW_OK
      && self->socket) {
    GstClockTime now = gst_clock_get_time (self->clock);
    GstCtcpSenderOutput out;
    gboolean blocked = FALSE;
    guint events, i;

    self->kick = FALSE;
    if (!read_tcp_info (self, now)) {
      err = g_strdup_printf ("TCP_INFO: %s", g_strerror (errno));
      failed = TRUE;
      break;
    }
    /* before our own shutdown, a state other than ESTABLISHED means the
     * receiver closed or reset the connection */
    if (self->tcp_state != TCP_ESTABLISHED && !self->shut) {
      err = g_strdup_printf ("closed by the receiver (TCP state %u)",
          self->tcp_state);
      failed = TRUE;
      break;
    }

    GST_OBJECT_LOCK (self);
    events = self->events;
    GST_OBJECT_UNLOCK (self);
    for (;;) {
      gssize n;

      gst_ctcp_sender_poll (self->core, now, &out);
      for (i = 0; i < out.n_events; i++)
        if (out.events[i].type & events)
          g_array_append_val (pending, out.events[i]);
      set_pacing (self, out.pacing_rate);
      if (out.write == 0)
        break;
      n = write_some (self, out.write, &err);
      if (n < 0)
        break;
      if (n == 0) {
        blocked = TRUE;
        break;
      }
      gst_ctcp_sender_handle_written (self->core, n, now);
    }
    if (err) {
      failed = TRUE;
      break;
    }
    /* EOS finishes once everything is acknowledged */
    if (out.finished && !self->shut) {
      /* TLS: close_notify first, so the receiver sees a clean end */
      if (self->tls_conn && !g_output_stream_close (G_OUTPUT_STREAM
              (self->tls_out), NULL, NULL))
        GST_DEBUG_OBJECT (self, "close_notify not sent");
      g_socket_shutdown (self->socket, FALSE, TRUE, NULL);
      self->shut = TRUE;
      GST_INFO_OBJECT (self, "all bytes acknowledged");
    }
    /* render may go on */
    g_cond_broadcast (&self->cond);

    if (pending->len > 0) {
      g_mutex_unlock (&self->lock);
      for (i = 0; i < pending->len; i++) {
        GstCtcpEvent *e = &g_array_index (pending, GstCtcpEvent, i);
        gst_twoflow_congestion_notify (GST_ELEMENT (self),
            GST_BASE_SINK_PAD (self), e->type, e->bitrate, e->srtt);
      }
      g_mutex_lock (&self->lock);
      g_array_set_size (pending, 0);
      continue;
    }

    if (!self->kick)
      wait_for_work (self, now, blocked);
  }
  if (!failed)
    g_cond_broadcast (&self->cond);
  peer = g_strdup (self->peer);
  g_mutex_unlock (&self->lock);
  /* posted without our lock: bus handlers may read the stats */
  if (err)
    post_error (self, err, peer, open_failed, tls_failed);
  if (failed) {
    g_mutex_lock (&self->lock);
    self->flow = GST_FLOW_ERROR;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
  }
  g_free (err);
  g_free (peer);
  g_array_free (pending, TRUE);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* properties */

/* The core's last state: reading the stats changes nothing. */
static GstStructure *
gst_ctcp_sink_get_stats (GstCtcpSink * self)
{
  GstStructure *s;

  g_mutex_lock (&self->lock);
  s = gst_ctcp_sender_get_stats (self->core);
  gst_structure_set (s, "congestion-control", G_TYPE_STRING,
      self->cc_used ? self->cc_used : "",
      "tls", G_TYPE_BOOLEAN, self->tls_protocol != NULL,
      "tls-protocol", G_TYPE_STRING, self->tls_protocol ? self->tls_protocol :
      "", "tls-ciphersuite", G_TYPE_STRING, self->tls_suite ? self->tls_suite :
      "", "connections-refused", G_TYPE_UINT, self->refused, NULL);
  g_mutex_unlock (&self->lock);
  return s;
}

static void
gst_ctcp_sink_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstCtcpSink *self = GST_CTCP_SINK (object);

  /* the URI sets other properties, which take the lock themselves */
  if (prop_id == PROP_URI) {
    twoflow_uri_property_set (GST_ELEMENT (object), value);
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_HOST:
      g_free (self->host);
      self->host = g_value_dup_string (value);
      if (!self->host)
        self->host = g_strdup (DEFAULT_HOST);
      break;
    case PROP_PORT:
      self->port = g_value_get_uint (value);
      break;
    case PROP_MODE:
      self->mode = g_value_get_enum (value);
      break;
    case PROP_SEGMENT_DURATION:
      self->segment_duration = g_value_get_uint64 (value);
      break;
    case PROP_LOSS_THRESHOLD:
      self->loss_threshold = g_value_get_double (value);
      break;
    case PROP_ADJUSTMENT_INTERVAL:
      self->adjustment_interval = g_value_get_uint64 (value);
      break;
    case PROP_TARGET_RATE:
      self->target_rate = g_value_get_uint64 (value);
      break;
    case PROP_MAX_CATCH_UP:
      self->max_catch_up = g_value_get_double (value);
      break;
    case PROP_LEAD:
      self->lead = g_value_get_uint64 (value);
      break;
    case PROP_STARTUP_RATE:
      self->startup_rate = g_value_get_uint64 (value);
      break;
    case PROP_STARTUP_FACTOR:
      self->startup_factor = g_value_get_double (value);
      break;
    case PROP_CONGESTION_CONTROL:
      self->cc = g_value_get_enum (value);
      break;
    case PROP_EVENTS:
      self->events = g_value_get_flags (value);
      break;
    case PROP_TLS_CERTIFICATE:
      g_free (self->tls_certificate);
      self->tls_certificate = g_value_dup_string (value);
      break;
    case PROP_LISTEN:
      self->listen = g_value_get_boolean (value);
      break;
    case PROP_BIND_PORT:
      self->bind_port = g_value_get_uint (value);
      break;
    case PROP_TLS_KEY:
      g_free (self->tls_key);
      self->tls_key = g_value_dup_string (value);
      break;
    case PROP_CONNECT_TIMEOUT:
      self->connect_timeout = g_value_get_uint64 (value);
      break;
    case PROP_TLS_ROLE:
      self->tls_role = g_value_get_enum (value);
      break;
    default:
      if (!twoflow_tls_props_set (&self->tls_props,
              prop_id - PROP_TLS_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_ctcp_sink_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstCtcpSink *self = GST_CTCP_SINK (object);

  if (prop_id == PROP_URI) {
    g_value_take_string (value,
        gst_uri_handler_get_uri (GST_URI_HANDLER (object)));
    return;
  }
  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, gst_ctcp_sink_get_stats (self));
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_HOST:
      g_value_set_string (value, self->host);
      break;
    case PROP_PORT:
      g_value_set_uint (value, self->port);
      break;
    case PROP_MODE:
      g_value_set_enum (value, self->mode);
      break;
    case PROP_SEGMENT_DURATION:
      g_value_set_uint64 (value, self->segment_duration);
      break;
    case PROP_LOSS_THRESHOLD:
      g_value_set_double (value, self->loss_threshold);
      break;
    case PROP_ADJUSTMENT_INTERVAL:
      g_value_set_uint64 (value, self->adjustment_interval);
      break;
    case PROP_TARGET_RATE:
      g_value_set_uint64 (value, self->target_rate);
      break;
    case PROP_MAX_CATCH_UP:
      g_value_set_double (value, self->max_catch_up);
      break;
    case PROP_LEAD:
      g_value_set_uint64 (value, self->lead);
      break;
    case PROP_STARTUP_RATE:
      g_value_set_uint64 (value, self->startup_rate);
      break;
    case PROP_STARTUP_FACTOR:
      g_value_set_double (value, self->startup_factor);
      break;
    case PROP_CONGESTION_CONTROL:
      g_value_set_enum (value, self->cc);
      break;
    case PROP_EVENTS:
      g_value_set_flags (value, self->events);
      break;
    case PROP_TLS_CERTIFICATE:
      g_value_set_string (value, self->tls_certificate);
      break;
    case PROP_TLS_KEY:
      g_value_set_string (value, self->tls_key);
      break;
    case PROP_LISTEN:
      g_value_set_boolean (value, self->listen);
      break;
    case PROP_BIND_PORT:
      g_value_set_uint (value, self->bind_port);
      break;
    case PROP_BOUND_PORT:
      g_value_set_uint (value, self->bound_port);
      break;
    case PROP_CONNECT_TIMEOUT:
      g_value_set_uint64 (value, self->connect_timeout);
      break;
    case PROP_TLS_ROLE:
      g_value_set_enum (value, self->tls_role);
      break;
    default:
      if (!twoflow_tls_props_get (&self->tls_props,
              prop_id - PROP_TLS_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ctcp://host:port URIs (GstURIHandler), as erapsink has erap:// */

static GstURIType
gst_ctcp_sink_uri_get_type (GType type)
{
  return GST_URI_SINK;
}

static const gchar *const *
gst_ctcp_sink_uri_get_protocols (GType type)
{
  static const gchar *protocols[] = { "ctcp", NULL };

  return protocols;
}

static gchar *
gst_ctcp_sink_uri_get_uri (GstURIHandler * handler)
{
  return twoflow_uri_make (GST_ELEMENT (handler), "ctcp", "host", "port");
}

static gboolean
gst_ctcp_sink_uri_set_uri (GstURIHandler * handler, const gchar * str,
    GError ** error)
{
  return twoflow_uri_apply (GST_ELEMENT (handler), str, "ctcp", "host",
      "port", NULL, DEFAULT_PORT, 1, error);
}

static void
gst_ctcp_sink_uri_handler_init (gpointer g_iface, gpointer iface_data)
{
  GstURIHandlerInterface *iface = (GstURIHandlerInterface *) g_iface;

  iface->get_type = gst_ctcp_sink_uri_get_type;
  iface->get_protocols = gst_ctcp_sink_uri_get_protocols;
  iface->get_uri = gst_ctcp_sink_uri_get_uri;
  iface->set_uri = gst_ctcp_sink_uri_set_uri;
}
