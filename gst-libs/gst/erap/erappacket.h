/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP
 * Wire format of ERAP packets. Sans-IO: pure encode/decode, no sockets.
 *
 * Data packet (receiver-bound), 8-byte header then payload:
 *
 *   0                   1                   2                   3
 *   +---------------------------------------------------------------+
 *   |                     seqno (32, network order)                 |
 *   +-+-+-----------------------------------------------------------+
 *   |B|E|                 appSeq (30)                               |
 *   +-+-+-----------------------------------------------------------+
 *   |                     payload ...                               |
 *
 *   seqno:  transmission number, new for every packet sent (also for a
 *           retransmission); never 0 modulo 2^32 (0 means "none" in ACKs).
 *   appSeq: number of the application fragment; a retransmission keeps it.
 *   B:      this fragment begins a message; E: it ends a message.
 *   A fragment with neither B nor E and an empty payload is the in-band end
 *   of stream; it is sent and acknowledged like any other fragment.
 *   An empty message is a fragment with B and E and an empty payload.
 *
 * ACK packet (sender-bound), 20 bytes (+4 or +16 for the address):
 *
 *   +-------------------------------+---------------+---------------+
 *   |   port (16)                   | type 0xA1 (8) | addr fam (8)  |
 *   +-------------------------------+---------------+---------------+
 *   |   seq (32): the data seqno this ACK answers                   |
 *   |   lastRecv (32)                                               |
 *   |   lastMiss (32)                                               |
 *   |   prevRecv (32)                                               |
 *   +---------------------------------------------------------------+
 *   |   receiver address (0, 4 or 16 bytes, by addr fam 0, 4, 6)    |
 *
 *   port: the receiver's data port (the destination port of the data);
 *         with the address it names the session at a shared sender socket.
 *   seqno x counts as received iff
 *         (lastRecv >= x && x > lastMiss) || x == prevRecv.
 *
 * An ACK datagram carries one or more such ACK records back to back (the
 * receiver bundles the ACKs of the data packets it read together: still
 * one ACK per data packet, fewer datagrams). Each record's length follows
 * from its addr fam byte.
 *
 * RAP baseline (GST_ERAP_PROTOCOL_RAP), for comparisons in one core: the
 * header of RAP (Rejaie, Handley, Estrin 1999; ns-2's hdr_rap) on data and
 * ACKs alike, six 32-bit words, 24 bytes, one ACK datagram per data packet:
 *
 *   | seqno | size | flags | lastRecv | lastMiss | prevRecv |
 *
 *   flags: RH_DATA 0x01 or RH_ACK 0x02; on data also 0x10 (begins a
 *          message) and 0x20 (ends one).
 *   size:  payload bytes (data), 0 (ACK).
 *   RAP itself is unreliable and has no appSeq; data packets leave
 *   lastRecv/lastMiss/prevRecv unused, so the baseline carries the appSeq
 *   (30 bits, as in ERAP) in the lastRecv word and sends the other two as
 *   0. No port or address: a RAP session has its own socket.
 *
 * Hello (sender-bound, NAT traversal), 24 bytes,
 * 40 sealed: a receiver behind NAT sends it from its data socket to the
 * sender's port, which learns the observed address and port from it
 * (gst-libs/gst/twoflow/twoflowhello.h):
 *
 *   +-------------------------------+---------------+---------------+
 *   |   0 (16)                      | type 0xA3 (8) | flags (8)     |
 *   +-------------------------------+---------------+---------------+
 *   |   hello id (64): names the session at a shared sender socket  |
 *   |   counter (64): grows by one per hello (replays)              |
 *   +-------------------------------+-------------------------------+
 *   |   port (16): the receiver's   |   0 (16)                      |
 *   |   data port, as in its ACKs   |                               |
 *   +-------------------------------+-------------------------------+
 *   |   tag (128), flags bit 0 (sealed) only: erapcrypto.h          |
 *
 * Byte 2 (0xA3) tells it from an ACK record (0xA1) and a sealed ACK
 * datagram (0xA2).
 */
#ifndef __GST_ERAP_PACKET_H__
#define __GST_ERAP_PACKET_H__

#include <glib.h>
#include <gst/erap/erap-prelude.h>

G_BEGIN_DECLS

#define GST_ERAP_DATA_HEADER_SIZE   8
#define GST_ERAP_ACK_SIZE           20
#define GST_ERAP_ACK_MAX_SIZE       (GST_ERAP_ACK_SIZE + 16)
#define GST_ERAP_ACK_TYPE           0xA1
#define GST_ERAP_HELLO_TYPE         0xA3
#define GST_ERAP_HELLO_SIZE         24
#define GST_ERAP_HELLO_SEALED       0x01
#define GST_ERAP_APPSEQ_BITS        30
#define GST_ERAP_APPSEQ_MASK        ((1u << GST_ERAP_APPSEQ_BITS) - 1)

#define GST_ERAP_RAP_HEADER_SIZE    24
#define GST_ERAP_RAP_FLAG_DATA      0x01
#define GST_ERAP_RAP_FLAG_ACK       0x02
/* the largest data header of any protocol */
#define GST_ERAP_MAX_DATA_HEADER_SIZE GST_ERAP_RAP_HEADER_SIZE

/**
 * GstErapProtocol:
 * @GST_ERAP_PROTOCOL_ERAP: ERAP's 8-byte data header and 20-byte ACK
 *   records (bundled), shared ACK thread, timers off while idle
 * @GST_ERAP_PROTOCOL_RAP: the RAP baseline: RAP's 24-byte header on data
 *   and ACKs, one ACK datagram per packet, a thread per session, and
 *   RAP's timers running while the application has nothing to send
 */
typedef enum {
  GST_ERAP_PROTOCOL_ERAP = 0,
  GST_ERAP_PROTOCOL_RAP = 1,
} GstErapProtocol;

typedef enum {
  GST_ERAP_FRAG_BEGIN = (1 << 1),
  GST_ERAP_FRAG_END   = (1 << 0),
} GstErapFragFlags;

typedef struct {
  guint32 seqno;
  guint32 appseq;               /* 30 bits on the wire */
  guint8 flags;                 /* GstErapFragFlags */
} GstErapDataHeader;

typedef struct {
  guint16 port;
  guint32 seq;
  guint32 last_recv;
  guint32 last_miss;
  guint32 prev_recv;
  guint8 addr_len;              /* 0, 4 or 16 */
  guint8 addr[16];
} GstErapAck;

typedef struct {
  guint64 id;
  guint64 counter;
  guint16 port;
  gboolean sealed;              /* parse: a tag follows */
} GstErapHello;

TWOFLOW_ERAP_API
void     gst_erap_data_header_write (const GstErapDataHeader * h,
    guint8 out[GST_ERAP_DATA_HEADER_SIZE]);
TWOFLOW_ERAP_API
gboolean gst_erap_data_header_parse (const guint8 * data, gsize len,
    GstErapDataHeader * h);

TWOFLOW_ERAP_API
gsize    gst_erap_ack_write (const GstErapAck * ack,
    guint8 out[GST_ERAP_ACK_MAX_SIZE]);
TWOFLOW_ERAP_API
gboolean gst_erap_ack_parse (const guint8 * data, gsize len, GstErapAck * ack);
/* The record at *offset of an ACK datagram; advances *offset past it.
 * FALSE at the end or on a malformed record (then the rest is dropped). */
TWOFLOW_ERAP_API
gboolean gst_erap_ack_parse_next (const guint8 * data, gsize len,
    gsize * offset, GstErapAck * ack);

/* RAP baseline codec (24 bytes each). */
TWOFLOW_ERAP_API
void     gst_erap_rap_data_header_write (const GstErapDataHeader * h,
    guint32 payload_len, guint8 out[GST_ERAP_RAP_HEADER_SIZE]);
TWOFLOW_ERAP_API
gboolean gst_erap_rap_data_header_parse (const guint8 * data, gsize len,
    GstErapDataHeader * h);
TWOFLOW_ERAP_API
gsize    gst_erap_rap_ack_write (const GstErapAck * ack,
    guint8 out[GST_ERAP_RAP_HEADER_SIZE]);
TWOFLOW_ERAP_API
gboolean gst_erap_rap_ack_parse (const guint8 * data, gsize len,
    GstErapAck * ack);

/* By protocol: header sizes, and the data/ACK codec of @proto. */
TWOFLOW_ERAP_API
guint    gst_erap_protocol_data_header_size (GstErapProtocol proto);
TWOFLOW_ERAP_API
guint    gst_erap_protocol_ack_size (GstErapProtocol proto);
TWOFLOW_ERAP_API
gboolean gst_erap_protocol_data_header_parse (GstErapProtocol proto,
    const guint8 * data, gsize len, GstErapDataHeader * h);
TWOFLOW_ERAP_API
gboolean gst_erap_protocol_ack_parse (GstErapProtocol proto,
    const guint8 * data, gsize len, GstErapAck * ack);

/* The plain hello (sealed = FALSE; erapcrypto.h seals it). */
TWOFLOW_ERAP_API
void     gst_erap_hello_write (const GstErapHello * h,
    guint8 out[GST_ERAP_HELLO_SIZE]);
/* TRUE if @data is a well-formed hello (24 bytes plain, 40 sealed). */
TWOFLOW_ERAP_API
gboolean gst_erap_hello_parse (const guint8 * data, gsize len,
    GstErapHello * h);
/* TRUE if @data looks like a hello (type byte): not an ACK. */
static inline gboolean
gst_erap_is_hello (const guint8 * data, gsize len)
{
  return len >= 4 && data[2] == GST_ERAP_HELLO_TYPE;
}

/* Extends a 32-bit wire number to 64 bits, choosing the value nearest to
 * @ref (serial number arithmetic, RFC 1982). */
static inline gint64
gst_erap_unwrap32 (guint32 wire, gint64 ref)
{
  return ref + (gint32) (wire - (guint32) ref);
}

static inline gint64
gst_erap_unwrap30 (guint32 wire, gint64 ref)
{
  gint32 d = (gint32) (((wire - (guint32) ref) & GST_ERAP_APPSEQ_MASK)
      << (32 - GST_ERAP_APPSEQ_BITS)) >> (32 - GST_ERAP_APPSEQ_BITS);
  return ref + d;
}

G_END_DECLS

#endif
