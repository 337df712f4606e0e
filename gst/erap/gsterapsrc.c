/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — erapsrc */
/**
 * SECTION:element-erapsrc
 * @title: erapsrc
 * @see_also: erapsink, udpsrc
 *
 * Receives what an erapsink sends: acknowledges every data packet (the
 * ACK carries RAP's lastRecv/lastMiss/prevRecv, robust to lost ACKs),
 * reorders and de-duplicates by application sequence number and pushes
 * each of the sender's buffers exactly once, in order, with its
 * boundaries. The sender's end of stream arrives in-band and becomes EOS
 * once everything before it was pushed; the source then keeps
 * acknowledging retransmissions until nothing has arrived for
 * #GstErapSrc:linger.
 *
 * With #GstErapSrc:protocol=rap it is the receiving end of the RAP
 * baseline (erapsink protocol=rap): RAP's 24-byte header on data and
 * ACKs, and one ACK datagram per data packet (no bundling, no UDP_GRO).
 *
 * The sender is the source address (and port) of the first data packet
 * (the first that authenticates, when keyed; garbage does not count)
 * from #GstErapSrc:accept-host's address, or, when that is unset, from
 * #GstErapSrc:hello-host's, or from anywhere when neither is set (a
 * gst-launch-1.0 pipeline: whoever speaks first). Packets from any other
 * address, and datagrams that are not ERAP data, are dropped and counted,
 * never acknowledged: in plaintext (lab) mode too, a third address cannot
 * take the session over or feed it. At most
 * #GstErapSrc:max-reorder-bytes are held out of order; packets beyond are
 * dropped unacknowledged, so the sender resends them.
 *
 * The #GstErapSrc:stats structure `application/x-erapsrc-stats` has:
 *
 * * `packets-received` (guint64): well-formed data packets
 * * `duplicates` (guint64): of those, already received (by appSeq)
 * * `malformed` (guint64): datagrams that are not ERAP data
 * * `foreign` (guint64): datagrams from another address than the sender's
 *   (or, before the first packet, than #GstErapSrc:accept-host's)
 * * `dropped-no-memory` (guint64): dropped for lack of reorder memory
 * * `acks-sent` (guint64): ACKs sent, one per accepted data packet
 * * `ack-errors` (guint64): ACKs the socket refused
 * * `ack-datagrams` (guint64): datagrams the ACKs went in (as many as
 *   ACKs with protocol=rap)
 * * `messages` (guint64): buffers pushed
 * * `bytes` (guint64): payload bytes pushed
 * * `reorder-bytes` (guint64): payload held out of order now
 * * `max-reorder-bytes-seen` (guint64): the most ever held out of order
 * * `buffer-size-granted` (gint): the receive buffer the kernel gave, in
 *   bytes as #GstErapSrc:buffer-size asks (0 before start); less than
 *   asked for also posts a warning message
 * * `kernel-drops` (guint64): datagrams the kernel dropped because the
 *   socket's receive buffer was full (SO_RXQ_OVFL / SO_MEMINFO): loss at
 *   the receiver, which the sender sees as loss and resends
 *
 * ALLOCATION queries are answered by the element itself (it needs no
 * pool): a serialized query would wait in a queue downstream until
 * everything before it has gone, while no datagram is read or
 * acknowledged.
 *
 * With #GstErapSrc:passphrase or #GstErapSrc:key set (the same as the
 * sender's), every data packet must carry a valid AES-256-GCM tag under
 * the session's key and a sequence number not seen before (replay
 * window); anything else is dropped before it reaches the receiver and
 * counted, and the ACKs are sealed too (docs/security.md). The sender is
 * fixed by the first packet that authenticates. Without either the
 * transfer is plaintext and unauthenticated: for a lab only. When nothing
 * has authenticated after 100 failures the source posts a warning (wrong
 * passphrase or key?).
 *
 * * `encrypted` (gboolean): passphrase or key set
 * * `authenticated` (guint64): data packets that passed the AEAD check
 * * `auth-failures` (guint64): data packets dropped: bad tag, wrong
 *   session, not sealed
 * * `replays` (guint64): authentic data packets dropped as seen before
 *   or older than the replay window
 * * `hellos-sent` (guint64): hellos sent (#GstErapSrc:hello-host)
 * * `hello-errors` (guint64): hellos the socket refused
 *
 * ## Behind NAT: the hello
 *
 * A receiver behind NAT cannot be sent to first. With
 * #GstErapSrc:hello-host and #GstErapSrc:hello-port set (the sender's
 * address and #GstErapSink:current-port), the source sends a small *hello*
 * (24 bytes; 40 sealed with the key when #GstErapSrc:passphrase or
 * #GstErapSrc:key is set) from the socket it receives on, naming the
 * session by #GstErapSrc:hello-id, at once and every
 * #GstErapSrc:hello-interval until data arrives (a hello may be lost),
 * then every #GstErapSrc:keepalive-interval so the NAT keeps the mapping
 * while the flow is idle. An erapsink with #GstErapSink:learn-peer sends
 * to where the hello came from (docs/security.md, NAT).
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 erapsrc port=5004 ! filesink location=copy.ts
 * ]| Receives what `gst-launch-1.0 filesrc location=video.ts ! erapsink
 * host=127.0.0.1 port=5004` sends, and exits at its end of stream.
 * |[
 * gst-launch-1.0 erapsrc port=0 hello-host=SERVER hello-port=5006 hello-id=42 ! filesink location=copy.ts
 * ]| Behind NAT: says hello from its socket to SERVER's port 5006 until data
 * comes (then every 15 s); the sender there runs `erapsink learn-peer=true
 * hello-id=42 bind-port=5006 host=<the NAT's public address>`.
 */
#define _GNU_SOURCE             /* recvmmsg */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include "twoflownet.h"
#include "gsterapsrc.h"
#include "gsterapsink.h"            /* GST_TYPE_ERAP_PROTOCOL */

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

GST_DEBUG_CATEGORY_STATIC (erap_src_debug);
#define GST_CAT_DEFAULT erap_src_debug

#define DEFAULT_ADDRESS            "0.0.0.0"
#define DEFAULT_PORT               5004
#define DEFAULT_MAX_REORDER_BYTES  GST_ERAP_DEFAULT_MAX_REORDER_BYTES
#define DEFAULT_LINGER             (300 * GST_MSECOND)
#define DEFAULT_BUFFER_SIZE        (4 * 1024 * 1024)
#define MAX_DATAGRAM               65536
/* datagrams per receive call (recvmmsg) */
#define RX_BATCH                   16
/* ACK records per datagram: within the sender's ACK buffer and one MTU */
#define ACK_DATAGRAM               1400

enum {
  PROP_0,
  PROP_HELLO_FIRST,
  PROP_HELLO_LAST = PROP_HELLO_FIRST + TWOFLOW_HELLO_RECEIVER_N_PROPS - 1,
  PROP_ADDRESS,
  PROP_PORT,
  PROP_MAX_REORDER_BYTES,
  PROP_LINGER,
  PROP_CAPS,
  PROP_URI,
  PROP_STATS,
  PROP_PASSPHRASE,
  PROP_KEY,
  PROP_PROTOCOL,
  PROP_BUFFER_SIZE,
};

#define DEFAULT_PROTOCOL           GST_ERAP_PROTOCOL_ERAP

#define DEFAULT_PASSPHRASE         NULL
#define DEFAULT_KEY                NULL
/* auth failures with nothing authentic before the element warns */
#define AUTH_WARN_THRESHOLD        100

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

#define gst_erap_src_parent_class parent_class
static void gst_erap_src_uri_handler_init (gpointer g_iface,
    gpointer iface_data);
G_DEFINE_TYPE_WITH_CODE (GstErapSrc, gst_erap_src, GST_TYPE_PUSH_SRC,
    G_IMPLEMENT_INTERFACE (GST_TYPE_URI_HANDLER,
        gst_erap_src_uri_handler_init));
GST_ELEMENT_REGISTER_DEFINE (erapsrc, "erapsrc", GST_RANK_NONE,
    GST_TYPE_ERAP_SRC);

static void gst_erap_src_finalize (GObject * object);
static void gst_erap_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_erap_src_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean gst_erap_src_start (GstBaseSrc * bsrc);
static gboolean gst_erap_src_stop (GstBaseSrc * bsrc);
static gboolean gst_erap_src_unlock (GstBaseSrc * bsrc);
static gboolean gst_erap_src_unlock_stop (GstBaseSrc * bsrc);
static GstCaps *gst_erap_src_get_caps (GstBaseSrc * bsrc, GstCaps * filter);
static GstFlowReturn gst_erap_src_create (GstPushSrc * psrc,
    GstBuffer ** buf);

static void
gst_erap_src_class_init (GstErapSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *bs_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *ps_class = GST_PUSH_SRC_CLASS (klass);

  gobject_class->finalize = gst_erap_src_finalize;
  gobject_class->set_property = gst_erap_src_set_property;
  gobject_class->get_property = gst_erap_src_get_property;
  /**
   * GstErapSrc:uri:
   *
   * The local address and port to receive on as an `erap://address:port`
   * URI: `erap://:5004` (every IPv4 address), `erap://[::]:5004` (IPv6),
   * `erap://[::1]:5004`; no port means 5004. Query parameters set other
   * properties by name, with values as on a gst-launch-1.0 line:
   * `erap://:5004?linger=1000000000&caps=video/mpeg`.
   * Reading it back gives `erap://address:port` from #GstErapSrc:address
   * and #GstErapSrc:port, with the query of the URI last set: the same
   * keys with the properties' current values. The same URI makes an
   * erapsrc with gst_element_make_from_uri().
   */
  g_object_class_install_property (gobject_class, PROP_URI,
      g_param_spec_string ("uri", "URI",
          "erap://address:port[?property=value&...] to receive on",
          "erap://" DEFAULT_ADDRESS ":5004", G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));

  /**
   * GstErapSrc:address:
   *
   * Local address to receive on.
   */
  g_object_class_install_property (gobject_class, PROP_ADDRESS,
      g_param_spec_string ("address", "Address", "Local address to receive on",
          DEFAULT_ADDRESS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSrc:port:
   *
   * UDP port to receive on; 0 picks a free one (read it back once started).
   */
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Port",
          "UDP port to receive on (0 = any; read back after start)", 0,
          65535, DEFAULT_PORT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSrc:max-reorder-bytes:
   *
   * Most payload bytes held while waiting for a missing packet.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_REORDER_BYTES,
      g_param_spec_uint64 ("max-reorder-bytes", "Max reorder bytes",
          "Most payload bytes held out of order", 1024, G_MAXUINT64,
          DEFAULT_MAX_REORDER_BYTES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSrc:linger:
   *
   * After the end of stream, keep acknowledging retransmissions until
   * nothing arrived for this long (ns), then push EOS.
   */
  g_object_class_install_property (gobject_class, PROP_LINGER,
      g_param_spec_uint64 ("linger", "Linger",
          "Quiet time after the end of stream before EOS (ns)", 0,
          G_MAXUINT64, DEFAULT_LINGER,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  /**
   * GstErapSrc:buffer-size:
   *
   * Kernel receive buffer in bytes (SO_RCVBUFFORCE when allowed, else
   * SO_RCVBUF, which the kernel caps at net.core.rmem_max: then a warning
   * says so and stats' `buffer-size-granted` has what it gave).
   */
  g_object_class_install_property (gobject_class, PROP_BUFFER_SIZE,
      g_param_spec_int ("buffer-size", "Buffer size",
          "Kernel receive buffer in bytes (0 = the system default)", 0,
          G_MAXINT, DEFAULT_BUFFER_SIZE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSrc:caps:
   *
   * Caps of the received buffers (ANY when unset).
   */
  g_object_class_install_property (gobject_class, PROP_CAPS,
      g_param_spec_boxed ("caps", "Caps", "Caps of the received buffers",
          GST_TYPE_CAPS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSrc:stats:
   *
   * Statistics, `application/x-erapsrc-stats` (fields in the element
   * documentation).
   */
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics", "Receiver statistics",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstErapSrc:passphrase:
   *
   * Shared secret (10 to 79 characters, as srtsrc's): the session keys are
   * derived from it (PBKDF2, then HKDF with the sender's per-session salt)
   * and every packet is authenticated and encrypted (AES-256-GCM). Unset,
   * together with #GstErapSrc:key, means plaintext (lab use only).
   */
  g_object_class_install_property (gobject_class, PROP_PASSPHRASE,
      g_param_spec_string ("passphrase", "Passphrase",
          "Shared secret for authentication and encryption (10..79 chars)",
          DEFAULT_PASSPHRASE, G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  /**
   * GstErapSrc:key:
   *
   * A 32-byte master key as 64 hexadecimal digits (e.g. handed over by a
   * control channel), instead of #GstErapSrc:passphrase.
   */
  g_object_class_install_property (gobject_class, PROP_KEY,
      g_param_spec_string ("key", "Key",
          "Master key, 64 hex digits (instead of passphrase)", DEFAULT_KEY,
          G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstErapSrc:protocol:
   *
   * `erap`, or `rap`: the receiving end of the RAP baseline (24-byte
   * header, one ACK datagram per packet); the same as the sender's. No
   * keyed mode with `rap`.
   */
  g_object_class_install_property (gobject_class, PROP_PROTOCOL,
      g_param_spec_enum ("protocol", "Protocol",
          "erap, or rap: the RAP baseline (24-byte header, one ACK datagram "
          "per packet)", GST_TYPE_ERAP_PROTOCOL, DEFAULT_PROTOCOL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /* NAT traversal (hello-*, accept-host), the group erap and rudp share:
   * gst/common/twoflowprops.c */
  twoflow_hello_receiver_props_install (gobject_class, PROP_HELLO_FIRST);

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "ERAP source",
      "Source/Network",
      "Receives buffers sent reliably over UDP by erapsink (ERAP)",
      "twoflow developers <dev@twoflow.invalid>");
  gst_element_class_add_static_metadata (element_class,
      GST_ELEMENT_METADATA_DOC_URI, TWOFLOW_DOC_URI_BASE "erap.md");

  bs_class->start = GST_DEBUG_FUNCPTR (gst_erap_src_start);
  bs_class->stop = GST_DEBUG_FUNCPTR (gst_erap_src_stop);
  bs_class->unlock = GST_DEBUG_FUNCPTR (gst_erap_src_unlock);
  bs_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_erap_src_unlock_stop);
  bs_class->get_caps = GST_DEBUG_FUNCPTR (gst_erap_src_get_caps);
  ps_class->create = GST_DEBUG_FUNCPTR (gst_erap_src_create);

  GST_DEBUG_CATEGORY_INIT (erap_src_debug, "erapsrc", 0, "ERAP source");
}

static void
gst_erap_src_init (GstErapSrc * src)
{
  twoflow_hello_receiver_props_init (&src->hello_props);
  src->address = g_strdup (DEFAULT_ADDRESS);
  src->port = DEFAULT_PORT;
  src->max_reorder_bytes = DEFAULT_MAX_REORDER_BYTES;
  src->linger = DEFAULT_LINGER;
  src->buffer_size = DEFAULT_BUFFER_SIZE;
  src->protocol = DEFAULT_PROTOCOL;
  g_mutex_init (&src->lock);
  g_queue_init (&src->ready);
  gst_base_src_set_live (GST_BASE_SRC (src), TRUE);
  gst_base_src_set_format (GST_BASE_SRC (src), GST_FORMAT_TIME);
  twoflow_net_answer_allocation (GST_BASE_SRC_PAD (src));
}

static void
gst_erap_src_finalize (GObject * object)
{
  GstErapSrc *src = GST_ERAP_SRC (object);
  twoflow_hello_receiver_props_clear (&src->hello_props);

  g_free (src->address);
  g_free (src->passphrase);
  g_free (src->key);
  gst_clear_caps (&src->caps);
  g_mutex_clear (&src->lock);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static GstStructure *
make_stats (GstErapSrc * src)
{
  GstErapReceiverStats st;
  GstErapCryptoStats cs;
  GstStructure *s;
  guint32 drops;

  g_mutex_lock (&src->lock);
  /* also the drops after the last datagram read */
  if (src->socket && twoflow_net_socket_drops (src->socket, &drops)
      && drops > src->kernel_drops)
    src->kernel_drops = drops;
  if (src->receiver)
    gst_erap_receiver_get_stats (src->receiver, &src->last);
  if (src->crypto)
    gst_erap_crypto_get_stats (src->crypto, &src->last_crypto);
  if (src->hello)
    gst_twoflow_hello_get_stats (src->hello, &src->last_hello);
  st = src->last;
  cs = src->last_crypto;
  s = gst_structure_new ("application/x-erapsrc-stats",
      "packets-received", G_TYPE_UINT64, st.packets_received,
      "duplicates", G_TYPE_UINT64, st.duplicates,
      "malformed", G_TYPE_UINT64, st.malformed,
      "foreign", G_TYPE_UINT64, src->foreign,
      "dropped-no-memory", G_TYPE_UINT64, st.dropped_no_memory,
      "acks-sent", G_TYPE_UINT64, st.acks,
      "ack-errors", G_TYPE_UINT64, src->ack_errors,
      "ack-datagrams", G_TYPE_UINT64, src->ack_datagrams,
      "messages", G_TYPE_UINT64, st.messages_delivered,
      "bytes", G_TYPE_UINT64, st.bytes_delivered,
      "reorder-bytes", G_TYPE_UINT64, st.reorder_bytes,
      "max-reorder-bytes-seen", G_TYPE_UINT64, st.max_reorder_bytes_seen,
      "buffer-size-granted", G_TYPE_INT, src->rcvbuf_granted,
      "kernel-drops", G_TYPE_UINT64, (guint64) src->kernel_drops,
      "encrypted", G_TYPE_BOOLEAN, src->encrypted,
      "authenticated", G_TYPE_UINT64, cs.opened,
      "auth-failures", G_TYPE_UINT64, cs.auth_failures,
      "replays", G_TYPE_UINT64, cs.replays,
      "hellos-sent", G_TYPE_UINT64, src->last_hello.hellos,
      "hello-errors", G_TYPE_UINT64, src->hello_errors, NULL);
  g_mutex_unlock (&src->lock);
  return s;
}

static void
gst_erap_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstErapSrc *src = GST_ERAP_SRC (object);

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
    case PROP_MAX_REORDER_BYTES:
      src->max_reorder_bytes = g_value_get_uint64 (value);
      break;
    case PROP_LINGER:
      src->linger = g_value_get_uint64 (value);
      break;
    case PROP_CAPS:
      gst_caps_replace (&src->caps, g_value_get_boxed (value));
      break;
    case PROP_PASSPHRASE:
      g_free (src->passphrase);
      src->passphrase = g_value_dup_string (value);
      break;
    case PROP_KEY:
      g_free (src->key);
      src->key = g_value_dup_string (value);
      break;
    case PROP_PROTOCOL:
      src->protocol = g_value_get_enum (value);
      break;
    case PROP_BUFFER_SIZE:
      src->buffer_size = g_value_get_int (value);
      break;
    default:
      if (!twoflow_hello_receiver_props_set (&src->hello_props,
              prop_id - PROP_HELLO_FIRST, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (src);
}

static void
gst_erap_src_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstErapSrc *src = GST_ERAP_SRC (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (src));
    return;
  }
  if (prop_id == PROP_URI) {
    g_value_take_string (value,
        gst_uri_handler_get_uri (GST_URI_HANDLER (object)));
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
    case PROP_MAX_REORDER_BYTES:
      g_value_set_uint64 (value, src->max_reorder_bytes);
      break;
    case PROP_PROTOCOL:
      g_value_set_enum (value, src->protocol);
      break;
    case PROP_LINGER:
      g_value_set_uint64 (value, src->linger);
      break;
    case PROP_CAPS:
      gst_value_set_caps (value, src->caps);
      break;
    case PROP_BUFFER_SIZE:
      g_value_set_int (value, src->buffer_size);
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
gst_erap_src_get_caps (GstBaseSrc * bsrc, GstCaps * filter)
{
  GstErapSrc *src = GST_ERAP_SRC (bsrc);
  GstCaps *caps;

  GST_OBJECT_LOCK (src);
  caps = src->caps ? gst_caps_ref (src->caps) : gst_caps_new_any ();
  GST_OBJECT_UNLOCK (src);
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, caps,
        GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (caps);
    caps = tmp;
  }
  return caps;
}

static gboolean
gst_erap_src_start (GstBaseSrc * bsrc)
{
  GstErapSrc *src = GST_ERAP_SRC (bsrc);
  GstErapReceiverConfig rc;
  GError *err = NULL;
  GSocket *sock;
  gchar *address;
  guint port;
  guint8 master[GST_ERAP_KEY_SIZE];
  gint keyed;
  gchar *hello_host;
  guint hello_port;
  GInetSocketAddress *hello_dest = NULL;
  gint rcvbuf, granted;
  TwoflowNetIp accept_ip;
  gboolean accept_set = FALSE;
  GstClockTime hello_interval, keepalive_interval;

  GST_OBJECT_LOCK (src);
  address = g_strdup (src->address);
  port = src->port;
  hello_host = g_strdup (src->hello_props.host);
  hello_port = src->hello_props.port;
  hello_interval = src->hello_props.interval;
  keepalive_interval = src->hello_props.keepalive_interval;
  gst_erap_receiver_config_init (&rc);
  rc.max_reorder_bytes = src->max_reorder_bytes;
  rc.protocol = src->protocol;
  keyed = gst_erap_crypto_master_from_settings (src->passphrase, src->key,
      master, &err);
  GST_OBJECT_UNLOCK (src);
  if (keyed < 0) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS, (NULL), ("%s", err->message));
    g_clear_error (&err);
    g_free (address);
    return FALSE;
  }
  if (keyed > 0 && rc.protocol == GST_ERAP_PROTOCOL_RAP) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS, (NULL),
        ("protocol=rap has no keyed mode (passphrase or key)"));
    memset (master, 0, sizeof (master));
    g_free (address);
    return FALSE;
  }

  if (hello_host && *hello_host && rc.protocol == GST_ERAP_PROTOCOL_RAP) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS, (NULL),
        ("protocol=rap has no hellos (hello-host)"));
    g_free (hello_host);
    g_free (address);
    return FALSE;
  }
  if (!twoflow_net_hello_resolve (GST_ELEMENT (src), hello_host, hello_port,
          &hello_dest)) {
    g_free (hello_host);
    g_free (address);
    return FALSE;
  }
  g_free (hello_host);
  /* whose data counts: accept-host's, else the sender we say hello to */
  if (!twoflow_net_accept_host (GST_ELEMENT (src), &accept_ip, &accept_set)) {
    g_free (address);
    g_clear_object (&hello_dest);
    return FALSE;
  }
  if (!accept_set && hello_dest)
    accept_set = twoflow_net_ip_from_address (G_SOCKET_ADDRESS (hello_dest),
        &accept_ip);
  GST_OBJECT_LOCK (src);
  rcvbuf = src->buffer_size;
  GST_OBJECT_UNLOCK (src);
  sock = twoflow_net_udp_open (address, port, TWOFLOW_NET_REUSE |
      TWOFLOW_NET_FORCE_BUFFERS, rcvbuf, 0, &err);
  if (!sock) {
    if (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT))
      GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS, (NULL),
          ("address '%s' is not an IP address", address));
    else
      GST_ELEMENT_ERROR (src, RESOURCE, OPEN_READ, (NULL),
          ("cannot bind %s:%u: %s", address, port, err->message));
    g_clear_error (&err);
    g_free (address);
    g_clear_object (&hello_dest);
    return FALSE;
  }
  g_free (address);
  granted = twoflow_net_rcvbuf_setup (GST_ELEMENT (src), sock, rcvbuf);
  /* take a sender's UDP_SEGMENT runs whole where the path keeps them
   * (the RAP baseline reads packet by packet) */
  if (rc.protocol != GST_ERAP_PROTOCOL_RAP)
    g_socket_set_option (sock, SOL_UDP, UDP_GRO, 1, NULL);
  port = twoflow_net_local_port (sock);
  GST_OBJECT_LOCK (src);
  src->port = port;
  GST_OBJECT_UNLOCK (src);
  rc.port = port;

  g_mutex_lock (&src->lock);
  src->socket = sock;
  src->receiver = gst_erap_receiver_new (&rc);
  src->encrypted = keyed > 0;
  src->crypto = keyed > 0 ?
      gst_erap_crypto_new (GST_ERAP_CRYPTO_RECEIVER, master, NULL) : NULL;
  memset (master, 0, sizeof (master));
  memset (&src->last_crypto, 0, sizeof (src->last_crypto));
  src->auth_warned = FALSE;
  src->scratch = g_malloc ((gsize) MAX_DATAGRAM * RX_BATCH);
  twoflow_cancel_init (&src->cancel);
  src->eos = FALSE;
  src->accept_set = accept_set;
  if (accept_set)
    src->accept_ip = accept_ip;
  src->foreign = src->ack_errors = src->ack_datagrams = 0;
  src->rcvbuf_granted = granted;
  src->kernel_drops = 0;
  memset (&src->last, 0, sizeof (src->last));
  memset (&src->last_hello, 0, sizeof (src->last_hello));
  src->hello_errors = 0;
  src->clock = gst_system_clock_obtain ();
  if (hello_dest) {
    src->hello_dest = G_SOCKET_ADDRESS (hello_dest);
    /* wall-clock microseconds: a later session's hellos count higher */
    src->hello = gst_twoflow_hello_new (hello_interval, keepalive_interval,
        g_get_real_time (), gst_clock_get_time (src->clock));
  }
  g_mutex_unlock (&src->lock);
  GST_INFO_OBJECT (src, "receiving on port %u", port);
  return TRUE;
}

static gboolean
gst_erap_src_stop (GstBaseSrc * bsrc)
{
  GstErapSrc *src = GST_ERAP_SRC (bsrc);

  g_mutex_lock (&src->lock);
  if (src->receiver) {
    gst_erap_receiver_get_stats (src->receiver, &src->last);
    gst_erap_receiver_free (src->receiver);
    src->receiver = NULL;
  }
  if (src->crypto) {
    gst_erap_crypto_get_stats (src->crypto, &src->last_crypto);
    gst_erap_crypto_free (src->crypto);
    src->crypto = NULL;
  }
  if (src->socket) {
    guint32 drops;

    if (twoflow_net_socket_drops (src->socket, &drops)
        && drops > src->kernel_drops)
      src->kernel_drops = drops;
    g_socket_close (src->socket, NULL);
    g_clear_object (&src->socket);
  }
  g_clear_object (&src->peer);
  if (src->hello) {
    gst_twoflow_hello_get_stats (src->hello, &src->last_hello);
    g_clear_pointer (&src->hello, gst_twoflow_hello_free);
  }
  g_clear_object (&src->hello_dest);
  gst_clear_object (&src->clock);
  g_queue_clear_full (&src->ready, (GDestroyNotify) gst_buffer_unref);
  g_clear_pointer (&src->scratch, g_free);
  twoflow_cancel_clear (&src->cancel);
  g_mutex_unlock (&src->lock);
  return TRUE;
}

static gboolean
gst_erap_src_unlock (GstBaseSrc * bsrc)
{
  twoflow_cancel_cancel (&GST_ERAP_SRC (bsrc)->cancel);
  return TRUE;
}

static gboolean
gst_erap_src_unlock_stop (GstBaseSrc * bsrc)
{
  twoflow_cancel_replace (&GST_ERAP_SRC (bsrc)->cancel);
  return TRUE;
}

/* The sender's address, compared without allocating an object per
 * datagram. */
static gboolean
same_native_address (const struct sockaddr_storage *a,
    const struct sockaddr_storage *b)
{
  if (a->ss_family != b->ss_family)
    return FALSE;
  if (a->ss_family == AF_INET) {
    const struct sockaddr_in *x = (const void *) a, *y = (const void *) b;

    return x->sin_port == y->sin_port &&
        x->sin_addr.s_addr == y->sin_addr.s_addr;
  }
  if (a->ss_family == AF_INET6) {
    const struct sockaddr_in6 *x = (const void *) a, *y = (const void *) b;

    return x->sin6_port == y->sin6_port &&
        memcmp (&x->sin6_addr, &y->sin6_addr, sizeof (x->sin6_addr)) == 0;
  }
  return FALSE;
}

/* With the lock: warns once when nothing authentic has arrived yet and
 * failures pile up (wrong passphrase or key, or an attack) */
static void
auth_failed (GstErapSrc * src)
{
  GstErapCryptoStats cs;

  if (src->auth_warned)
    return;
  gst_erap_crypto_get_stats (src->crypto, &cs);
  if (!cs.salt_pinned && cs.auth_failures >= AUTH_WARN_THRESHOLD) {
    src->auth_warned = TRUE;
    src->auth_warn_pending = cs.auth_failures;
  }
}

/* Without the lock (a bus sync handler may read stats) */
static void
post_auth_warning (GstErapSrc * src)
{
  guint64 n = src->auth_warn_pending;

  if (!n)
    return;
  src->auth_warn_pending = 0;
  GST_ELEMENT_WARNING (src, RESOURCE, READ,
      ("No packet authenticates: wrong passphrase or key?"),
      ("%" G_GUINT64_FORMAT " packets failed authentication and none "
          "passed", n));
}

/* The ACKs collected so far, in one datagram (every accepted packet came
 * from the peer). */
static void
send_acks (GstErapSrc * src, const guint8 * acks, gsize len, guint n_acks)
{
  GError *err = NULL;
  guint8 sealed[ACK_DATAGRAM + GST_ERAP_ACK_SEAL_OVERHEAD];

  if (n_acks && src->crypto) {
    len = gst_erap_crypto_seal_ack (src->crypto, acks, len, sealed);
    if (!len)
      return;
    acks = sealed;
  }
  if (n_acks)
    src->ack_datagrams++;
  if (n_acks && g_socket_send_to (src->socket, src->peer,
          (const gchar *) acks, len, NULL, &err) < 0) {
    /* a full socket buffer: these ACKs are lost, later ones repeat what
     * they said */
    src->ack_errors += n_acks;
    GST_LOG_OBJECT (src, "%u ACKs not sent: %s", n_acks, err->message);
    g_clear_error (&err);
  }
}

/* Receives and acknowledges what is there: RX_BATCH datagrams per system
 * call, each of which may hold several packets of one size (UDP_GRO), and
 * their ACK records bundled in datagrams of up to ACK_DATAGRAM bytes. */
static gboolean
receive_some (GstErapSrc * src)
{
  gint fd = g_socket_get_fd (src->socket);

  for (;;) {
    struct mmsghdr mm[RX_BATCH];
    struct iovec iov[RX_BATCH];
    struct sockaddr_storage from[RX_BATCH];
    union {
      gchar buf[CMSG_SPACE (sizeof (gint)) + TWOFLOW_NET_CMSG_DROPS_SPACE];
      struct cmsghdr align;
    } ctl[RX_BATCH];
    guint8 acks[ACK_DATAGRAM];
    gsize acks_len = 0;
    guint n_acks = 0;
    gint n, i;

    memset (mm, 0, sizeof (mm));
    for (i = 0; i < RX_BATCH; i++) {
      iov[i].iov_base = src->scratch + (gsize) i * MAX_DATAGRAM;
      iov[i].iov_len = MAX_DATAGRAM;
      mm[i].msg_hdr.msg_name = &from[i];
      mm[i].msg_hdr.msg_namelen = sizeof (from[i]);
      mm[i].msg_hdr.msg_iov = &iov[i];
      mm[i].msg_hdr.msg_iovlen = 1;
      mm[i].msg_hdr.msg_control = ctl[i].buf;
      mm[i].msg_hdr.msg_controllen = sizeof (ctl[i].buf);
    }
    n = recvmmsg (fd, mm, RX_BATCH, MSG_DONTWAIT, NULL);
    if (n <= 0) {
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        GST_WARNING_OBJECT (src, "receive error: %s", g_strerror (errno));
      return TRUE;
    }

    g_mutex_lock (&src->lock);
    for (i = 0; i < n; i++) {
      const guint8 *data = iov[i].iov_base;
      gsize len = mm[i].msg_len, seg = len, off;
      struct cmsghdr *c;
      guint32 drops;

      if (mm[i].msg_hdr.msg_namelen == 0)
        continue;
      if (src->peer && !same_native_address (&src->peer_native, &from[i])) {
        src->foreign++;
        continue;
      }
      if (!src->peer && src->accept_set) {
        TwoflowNetIp ip;

        if (!twoflow_net_ip_from_native (&from[i], mm[i].msg_hdr.msg_namelen,
                &ip) || !twoflow_net_ip_equal (&ip, &src->accept_ip)) {
          src->foreign++;
          continue;
        }
      }
      for (c = CMSG_FIRSTHDR (&mm[i].msg_hdr); c;
          c = CMSG_NXTHDR (&mm[i].msg_hdr, c))
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO)
          seg = *(gint *) CMSG_DATA (c);
        else if (twoflow_net_cmsg_drops (c, &drops) &&
            drops > src->kernel_drops)
          src->kernel_drops = drops;
      if (seg == 0)
        seg = len;

      /* the packets the kernel coalesced, one by one (an empty datagram
       * once: the receiver counts it as malformed) */
      off = 0;
      do {
        gsize plen = MIN (seg, len - off), ack_len = 0;
        GBytes *pkt, *msg;
        gboolean eos = FALSE;
        GstErapDataResult res;

        if (src->crypto && gst_erap_crypto_open_data (src->crypto,
                (guint8 *) data + off, plen, &plen) != GST_ERAP_OPEN_OK) {
          /* forged, damaged, another session's or replayed: never seen
           * by the receiver, never acknowledged */
          auth_failed (src);
          off += seg;
          continue;
        }
        /* RAP: one ACK datagram per data packet */
        if (acks_len + GST_ERAP_ACK_MAX_SIZE > sizeof (acks) ||
            (n_acks > 0 && src->protocol == GST_ERAP_PROTOCOL_RAP)) {
          g_mutex_unlock (&src->lock);
          send_acks (src, acks, acks_len, n_acks);
          g_mutex_lock (&src->lock);
          acks_len = 0;
          n_acks = 0;
        }
        pkt = g_bytes_new (data + off, plen);
        res = gst_erap_receiver_handle_data (src->receiver, pkt,
            acks + acks_len, &ack_len);
        g_bytes_unref (pkt);
        if (res != GST_ERAP_DATA_MALFORMED) {
          if (src->hello)
            gst_twoflow_hello_handle_data (src->hello,
                gst_clock_get_time (src->clock));
          if (!src->peer) {
            /* the sender: the first well-formed (authentic, when keyed)
             * packet's, from the address allowed */
            src->peer = g_socket_address_new_from_native (&from[i],
                mm[i].msg_hdr.msg_namelen);
            src->peer_native = from[i];
          }
        }
        GST_LOG_OBJECT (src, "datagram of %" G_GSIZE_FORMAT " bytes: %d",
            plen, res);
        while ((msg = gst_erap_receiver_poll (src->receiver, &eos))) {
          /* the buffer takes its own reference */
          g_queue_push_tail (&src->ready, gst_buffer_new_wrapped_bytes (msg));
          g_bytes_unref (msg);
        }
        if (eos && !src->eos) {
          GST_DEBUG_OBJECT (src, "in-band end of stream");
          src->eos = TRUE;
        }
        if (ack_len) {
          acks_len += ack_len;
          n_acks++;
        }
        off += seg;
      } while (off < len);
    }
    g_mutex_unlock (&src->lock);

    post_auth_warning (src);
    send_acks (src, acks, acks_len, n_acks);
    /* deliver before reading more: what downstream has not taken waits
     * in the socket buffer, not in an unbounded queue here (a sender
     * faster than downstream then sees losses and slows down) */
    if (n < RX_BATCH || !g_queue_is_empty (&src->ready))
      return TRUE;
  }
}

/* NAT: the hellos due now, from our socket; returns the microseconds
 * until the next one (-1: none). now = clock; core(now); the caller waits
 * on the socket until next_wakeup(). */
static gint64
say_hello (GstErapSrc * src)
{
  GstClockTime now, next;
  guint64 counter;
  gint64 wait;

  g_mutex_lock (&src->lock);
  if (!src->hello) {
    g_mutex_unlock (&src->lock);
    return -1;
  }
  now = gst_clock_get_time (src->clock);
  while (gst_twoflow_hello_poll (src->hello, now, &counter)) {
    GstErapHello h = { src->hello_props.id, counter, src->port, FALSE };
    guint8 out[GST_ERAP_SEALED_HELLO_SIZE];
    gsize len = GST_ERAP_HELLO_SIZE;
    GError *err = NULL;

    if (src->crypto) {
      if (!gst_erap_crypto_seal_hello (src->crypto, &h, out)) {
        src->hello_errors++;
        continue;
      }
      len = GST_ERAP_SEALED_HELLO_SIZE;
    } else {
      gst_erap_hello_write (&h, out);
    }
    if (g_socket_send_to (src->socket, src->hello_dest, (const gchar *) out,
            len, NULL, &err) < 0) {
      src->hello_errors++;
      GST_DEBUG_OBJECT (src, "hello not sent: %s", err->message);
      g_clear_error (&err);
    } else {
      GST_LOG_OBJECT (src, "hello %" G_GUINT64_FORMAT " sent", counter);
    }
  }
  next = gst_twoflow_hello_next_wakeup (src->hello);
  g_mutex_unlock (&src->lock);
  if (!GST_CLOCK_TIME_IS_VALID (next))
    return -1;
  wait = next > now ? (gint64) ((next - now) / GST_USECOND) : 0;
  return MAX (wait, 1);
}

static GstFlowReturn
gst_erap_src_create (GstPushSrc * psrc, GstBuffer ** buf)
{
  GstErapSrc *src = GST_ERAP_SRC (psrc);

  for (;;) {
    GError *err = NULL;

    if ((*buf = g_queue_pop_head (&src->ready)))
      return GST_FLOW_OK;
    if (src->eos) {
      /* the sender may not have our ACK of the end yet: keep answering
       * until it is quiet */
      while (g_socket_condition_timed_wait (src->socket, G_IO_IN,
              src->linger / GST_USECOND, src->cancel.cancellable, &err))
        receive_some (src);
      if (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_clear_error (&err);
        return GST_FLOW_FLUSHING;
      }
      g_clear_error (&err);
      GST_INFO_OBJECT (src, "end of stream");
      return GST_FLOW_EOS;
    }
    if (!g_socket_condition_timed_wait (src->socket, G_IO_IN,
            say_hello (src), src->cancel.cancellable, &err)) {
      gboolean cancelled = g_error_matches (err, G_IO_ERROR,
          G_IO_ERROR_CANCELLED);
      g_clear_error (&err);
      if (cancelled)
        return GST_FLOW_FLUSHING;
      continue;
    }
    receive_some (src);
  }
}

/* erap://address:port URIs (GstURIHandler), as srtsrc has srt:// */

static GstURIType
gst_erap_src_uri_get_type (GType type)
{
  return GST_URI_SRC;
}

static const gchar *const *
gst_erap_src_uri_get_protocols (GType type)
{
  static const gchar *protocols[] = { "erap", NULL };

  return protocols;
}

static gchar *
gst_erap_src_uri_get_uri (GstURIHandler * handler)
{
  return twoflow_uri_make (GST_ELEMENT (handler), "erap", "address", "port");
}

static gboolean
gst_erap_src_uri_set_uri (GstURIHandler * handler, const gchar * str,
    GError ** error)
{
  return twoflow_uri_apply (GST_ELEMENT (handler), str, "erap", "address",
      "port", DEFAULT_ADDRESS, DEFAULT_PORT, 0, error);
}

static void
gst_erap_src_uri_handler_init (gpointer g_iface, gpointer iface_data)
{
  GstURIHandlerInterface *iface = (GstURIHandlerInterface *) g_iface;

  iface->get_type = gst_erap_src_uri_get_type;
  iface->get_protocols = gst_erap_src_uri_get_protocols;
  iface->get_uri = gst_erap_src_uri_get_uri;
  iface->set_uri = gst_erap_src_uri_set_uri;
}
