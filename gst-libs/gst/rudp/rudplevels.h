/* twoflow — rUDP rate levels and the receiver algorithm (sans-IO).
 *
 * Sender and receiver agree on a table of rate levels (0 = lowest). The
 * receiver counts, from RTP sequence numbers, the packets lost in each
 * round-trip time; at the end of each RTT it halves the level if any was
 * lost and raises it by one otherwise ("Congestion-aware TCP-friendly
 * system for multimedia transmission based on UDP").
 * One reaction per loss episode (as in RAP and TFRC): after a decrease,
 * losses of packets the sender sent before it switched do not count. The
 * sender's notice says from which sequence number the new level is in
 * force; until it arrives (or for two rounds, if none comes) no loss
 * counts and the level does not rise.
 */
#ifndef __GST_RUDP_LEVELS_H__
#define __GST_RUDP_LEVELS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_RUDP_DEFAULT_N_LEVELS 10
#define GST_RUDP_MAX_LEVELS 64
/* Default table: level i = (i + 1) * 20,000 bytes/s (160 kbit/s .. 1.6 Mbit/s) */
#define GST_RUDP_DEFAULT_LEVEL_STEP 20000

typedef struct {
  guint n;
  guint64 rate[GST_RUDP_MAX_LEVELS];    /* bytes/s, increasing */
} GstRudpLevels;

void gst_rudp_levels_init_default (GstRudpLevels * l);
/* FALSE unless 1..GST_RUDP_MAX_LEVELS strictly increasing positive rates */
gboolean gst_rudp_levels_set (GstRudpLevels * l, const guint64 * rates,
    guint n);
/* Highest level whose rate (in bit/s) is at most @bitrate (+0.1% for the
 * rounding of TMMBR's mantissa); 0 when none is. */
guint gst_rudp_levels_for_bitrate (const GstRudpLevels * l, guint64 bitrate);
/* "20000,40000,..." ; parse accepts commas, spaces or semicolons */
gchar *gst_rudp_levels_to_string (const GstRudpLevels * l);
gboolean gst_rudp_levels_from_string (GstRudpLevels * l, const gchar * str);

typedef struct _GstRudpReceiver GstRudpReceiver;

typedef struct {
  guint n_levels;
  guint initial_level;
  GstClockTime initial_rtt;     /* judging interval before an RTT sample */
  GstClockTime min_interval;    /* floor of the judging interval */
  GstClockTime feedback_interval;       /* resend the level at least this often */
} GstRudpReceiverConfig;

typedef struct {
  guint64 received;             /* RTP packets (duplicates included) */
  guint64 lost;                 /* expected - received, cumulative, >= 0 */
  guint64 expected;
  guint32 ext_max_seq;          /* extended highest sequence number */
  guint level;
  guint64 increases, decreases;
  guint64 rounds;               /* judged intervals */
  GstClockTime srtt;
  guint64 rtt_samples;
  guint8 fraction_lost;         /* of the last judged interval, 8-bit fixed */
  gboolean holding;             /* waiting for a decrease to take effect */
} GstRudpReceiverStats;

void gst_rudp_receiver_config_init (GstRudpReceiverConfig * c);
GstRudpReceiver *gst_rudp_receiver_new (const GstRudpReceiverConfig * c);
void gst_rudp_receiver_free (GstRudpReceiver * r);

/* An RTP packet with sequence number @seq arrived at @now. */
void gst_rudp_receiver_packet (GstRudpReceiver * r, guint16 seq,
    GstClockTime now);
void gst_rudp_receiver_rtt_sample (GstRudpReceiver * r, GstClockTime rtt);
/* The sender's notice: @level is in force from RTP sequence number @seq. */
void gst_rudp_receiver_level_applied (GstRudpReceiver * r, guint level,
    guint16 seq);
/* Judges the intervals that ended by @now. Returns TRUE when feedback is
 * due (the level changed, or feedback_interval passed since the last);
 * then call gst_rudp_receiver_feedback_sent(). */
gboolean gst_rudp_receiver_advance (GstRudpReceiver * r, GstClockTime now);
void gst_rudp_receiver_feedback_sent (GstRudpReceiver * r, GstClockTime now);
/* When gst_rudp_receiver_advance() has something to do next. */
GstClockTime gst_rudp_receiver_next_wakeup (GstRudpReceiver * r);
guint gst_rudp_receiver_get_level (GstRudpReceiver * r);
void gst_rudp_receiver_get_stats (GstRudpReceiver * r,
    GstRudpReceiverStats * st);

G_END_DECLS

#endif
