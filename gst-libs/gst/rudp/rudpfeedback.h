/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP feedback codec (sans-IO).
 *
 * The receiver's request is an RTCP compound packet (RFC 3550, sent on the
 * RTP port as in RFC 5761):
 *   RR      report block for the media SSRC (fraction and cumulative lost,
 *           extended highest sequence number)
 *   RTPFB   TMMBR (RFC 5104, FMT 3): the level's rate as maximum bitrate
 *   APP     name "RUDP", subtype 0: level, number of levels, the
 *           receiver's timestamp (NTP short format), its SRTT in us and,
 *           in a fourth word when it has one (never from older
 *           receivers), its RTT sample since the last request in us
 * The sender answers each request with
 *   RR      no report blocks (it receives no RTP)
 *   RTPFB   TMMBN (FMT 4): the bitrate now in force
 *   APP     "RUDP", subtype 1: the level in force and the RTP sequence
 *           number from which it is, the echoed timestamp and the delay
 *           between receiving the request and answering, so the receiver
 *           measures the RTT as in RFC 3550's LSR/DLSR.
 * The APP level is exact; TMMBR lets a peer with another level table (or a
 * plain RFC 5104 sender) follow by bitrate.
 *
 * NAT traversal: the receiver's hello (gst-libs/gst/twoflow/twoflowhello.h),
 * sent from its RTP socket to the sender's, is a 36-byte RTCP compound
 * (SRTCP when the flow is keyed: then authenticated like any feedback):
 *   RR      no report blocks, the receiver's SSRC
 *   APP     name "HELO", subtype 0: hello id (64), counter (64)
 */
#ifndef __GST_RUDP_FEEDBACK_H__
#define __GST_RUDP_FEEDBACK_H__

#include <gst/gst.h>
#include <gst/rudp/rudp-prelude.h>

G_BEGIN_DECLS

#define GST_RUDP_APP_NAME "RUDP"
#define GST_RUDP_APP_REQUEST 0
#define GST_RUDP_APP_NOTICE 1
/* IPv4 + UDP: the overhead TMMBR reports per packet */
#define GST_RUDP_PACKET_OVERHEAD 28

typedef struct {
  guint32 ssrc;                 /* the receiver's own SSRC */
  guint32 media_ssrc;           /* the RTP flow asked to change */
  /* report block */
  guint8 fraction_lost;
  guint32 packets_lost;         /* 24 bits on the wire */
  guint32 ext_max_seq;
  /* TMMBR */
  gboolean has_bitrate;
  guint64 bitrate;              /* bit/s */
  guint overhead;               /* bytes per packet */
  /* APP */
  gboolean has_level;
  guint level, n_levels;
  guint32 timestamp;            /* NTP short */
  guint32 srtt_us;
  guint32 rtt_us;               /* the sample since the last request, 0 none */
} GstRudpRequest;

typedef struct {
  guint32 ssrc;                 /* the sender's SSRC */
  guint32 requester_ssrc;
  gboolean has_bitrate;
  guint64 bitrate;
  guint overhead;
  gboolean has_level;
  guint level, n_levels;
  guint16 since_seq;            /* first RTP packet sent at this level */
  guint32 echo_timestamp;       /* NTP short, the request's */
  guint32 delay;                /* NTP short units (1/65536 s) */
} GstRudpNotice;

/* Retransmission requests (the receiver's rtpjitterbuffer asks, rudpsrc
 * sends): an RTCP compound of an RR without report blocks and a Generic
 * NACK (RFC 4585 section 6.2.1, RTPFB FMT 1), FCI entries PID + BLP. */
TWOFLOW_RUDP_API
GstBuffer *gst_rudp_nack_write (guint32 ssrc, guint32 media_ssrc,
    const guint16 * seqs, guint n);
/* Appends the sequence numbers a NACK asks for to @seqs (guint16);
 * FALSE when @buf holds no Generic NACK. */
TWOFLOW_RUDP_API
gboolean gst_rudp_nack_parse (GstBuffer * buf, guint32 * media_ssrc,
    GArray * seqs);

#define GST_RUDP_HELLO_NAME "HELO"
#define GST_RUDP_HELLO_SIZE 36

/* The hello, written into @out. */
TWOFLOW_RUDP_API
void gst_rudp_hello_write (guint8 out[GST_RUDP_HELLO_SIZE], guint32 ssrc,
    guint64 id, guint64 counter);
/* TRUE if @data is exactly a (plain or unprotected) hello. */
TWOFLOW_RUDP_API
gboolean gst_rudp_hello_parse (const guint8 * data, gsize len, guint32 * ssrc,
    guint64 * id, guint64 * counter);

/* Whether a datagram on an RTP port is RTCP (RFC 5761 section 4). */
TWOFLOW_RUDP_API
gboolean gst_rudp_is_rtcp (const guint8 * data, gsize len);

/* NTP short format (16.16 seconds) of a time, and back for differences. */
TWOFLOW_RUDP_API
guint32 gst_rudp_ntp_short (GstClockTime t);
TWOFLOW_RUDP_API
GstClockTime gst_rudp_ntp_short_to_time (guint32 v);

/* TMMBR/TMMBN FCI word 2: exponent, 17-bit mantissa, 9-bit overhead. */
TWOFLOW_RUDP_API
guint32 gst_rudp_tmmbr_encode (guint64 bitrate, guint overhead);
TWOFLOW_RUDP_API
void gst_rudp_tmmbr_decode (guint32 word, guint64 * bitrate, guint * overhead);

TWOFLOW_RUDP_API
GstBuffer *gst_rudp_request_write (const GstRudpRequest * req);
TWOFLOW_RUDP_API
gboolean gst_rudp_request_parse (GstBuffer * buf, GstRudpRequest * req);
TWOFLOW_RUDP_API
GstBuffer *gst_rudp_notice_write (const GstRudpNotice * n);
TWOFLOW_RUDP_API
gboolean gst_rudp_notice_parse (GstBuffer * buf, GstRudpNotice * n);

G_END_DECLS

#endif
