/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP sender side of the rate levels (sans-IO).
 *
 * Follows the receiver's requests (RTCP RR + TMMBR + APP "RUDP", see
 * rudpfeedback.h): the exact level when the receiver's table has as many
 * levels, else the highest level whose rate is not above the TMMBR
 * bitrate (so a plain RFC 5104 receiver works too). Remembers from which
 * RTP sequence number a new level holds (the next packet to leave) and
 * answers every request with a notice (RR + TMMBN + APP): the level in
 * force, that sequence number, the echoed timestamp and the time between
 * the request's arrival and the answer (the receiver's RTT excludes it).
 *
 * The shell feeds it the RTP packets it sends (handle_rtp) and the
 * datagrams that come back (handle_request, with an opaque peer that is
 * handed back with the notice), and polls: a LEVEL output is a new rate
 * for the pacing bucket (and an event to announce upstream), a NOTICE
 * output a datagram to send to the peer. Not thread-safe.
 */
#ifndef __GST_RUDP_SENDER_H__
#define __GST_RUDP_SENDER_H__

#include <gst/gst.h>
#include <gst/rudp/rudp-prelude.h>
#include <gst/rudp/rudplevels.h>

G_BEGIN_DECLS

typedef struct _GstRudpSender GstRudpSender;

typedef struct {
  GstRudpLevels levels;         /* bit/s, as the receiver's */
  guint initial_level;
  /* FALSE: requests are read (report block, SRTT) and answered, but the
   * level stays where gst_rudp_sender_set_level() puts it (the sink's
   * fixed rate control: the application, e.g. the server's session rate
   * controller, decides from the reports) */
  gboolean follow;
} GstRudpSenderConfig;

typedef struct {
  guint level;                  /* in force */
  guint64 bitrate;              /* of that level, bit/s */
  guint16 level_seq;            /* first RTP seqnum sent at that level */
  guint32 ssrc;                 /* of the RTP flow (our RTCP SSRC) */
  guint64 requests;             /* well-formed requests handled */
  guint64 invalid;              /* datagrams that were no request */
  guint64 notices;              /* notices written */
  guint64 level_changes;
  GstClockTime srtt;            /* the receiver's SRTT, 0 until reported */
  GstClockTime rtt;             /* the receiver's latest RTT sample (sent
                                 * once, with the request after it), 0
                                 * until reported */
  guint64 rtt_samples;          /* requests that carried one */
  /* the last report block (RFC 3550) of the receiver: */
  guint64 rr_reports;           /* requests that carried one */
  guint32 rr_ext_max_seq;       /* extended highest sequence number */
  gint32 rr_lost;               /* cumulative number of packets lost */
  guint8 rr_fraction_lost;      /* since its previous report, 8-bit fixed */
} GstRudpSenderStats;

typedef enum {
  GST_RUDP_SENDER_OUTPUT_NONE = 0,
  /* a new level: pace at @bitrate and announce it */
  GST_RUDP_SENDER_OUTPUT_LEVEL,
  /* send @buffer to @peer (both the caller's now) */
  GST_RUDP_SENDER_OUTPUT_NOTICE,
} GstRudpSenderOutputType;

typedef struct {
  GstRudpSenderOutputType type;
  /* LEVEL */
  guint level;
  guint64 bitrate;              /* bit/s */
  GstClockTime srtt;            /* the receiver's, GST_CLOCK_TIME_NONE unknown */
  /* NOTICE */
  GstBuffer *buffer;
  gpointer peer;
} GstRudpSenderOutput;

TWOFLOW_RUDP_API
void gst_rudp_sender_config_init (GstRudpSenderConfig * c);
TWOFLOW_RUDP_API
GstRudpSender *gst_rudp_sender_new (const GstRudpSenderConfig * c);
/* Pending peers are freed with their destroy notify. */
TWOFLOW_RUDP_API
void gst_rudp_sender_free (GstRudpSender * s);

/* An RTP packet leaves now (its sequence number and SSRC are read). */
TWOFLOW_RUDP_API
void gst_rudp_sender_handle_rtp (GstRudpSender * s, const guint8 * data,
    gsize len);
/* A datagram from the receiver at @now; @peer (freed with @peer_free when
 * the core drops it) comes back with the notice. FALSE (and @peer freed)
 * when it is no request. */
TWOFLOW_RUDP_API
gboolean gst_rudp_sender_handle_request (GstRudpSender * s,
    const guint8 * data, gsize len, gpointer peer, GDestroyNotify peer_free,
    GstClockTime now);
/* A level chosen locally (the sink's rate property). */
TWOFLOW_RUDP_API
void gst_rudp_sender_set_level (GstRudpSender * s, guint level,
    GstClockTime now);
/* The next output due at @now; FALSE when there is none. */
TWOFLOW_RUDP_API
gboolean gst_rudp_sender_poll (GstRudpSender * s, GstClockTime now,
    GstRudpSenderOutput * out);
/* @now's caller should poll again at: 0 while outputs are pending (at
 * once), else GST_CLOCK_TIME_NONE (the core only answers). */
TWOFLOW_RUDP_API
GstClockTime gst_rudp_sender_next_wakeup (GstRudpSender * s);

TWOFLOW_RUDP_API
guint gst_rudp_sender_get_level (GstRudpSender * s);
TWOFLOW_RUDP_API
guint64 gst_rudp_sender_get_bitrate (GstRudpSender * s);
TWOFLOW_RUDP_API
void gst_rudp_sender_get_stats (GstRudpSender * s, GstRudpSenderStats * st);

G_END_DECLS

#endif
