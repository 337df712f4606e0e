/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — helpers of the rudp element tests: a UDP receiver thread that
 * logs arrivals, RTP packet making, and a lossy relay. */
#ifndef __RUDP_TEST_UTIL_H__
#define __RUDP_TEST_UTIL_H__

#include <gst/gst.h>
#include <gio/gio.h>

typedef struct {
  gint64 t_us;                  /* CLOCK_MONOTONIC arrival */
  guint32 ssrc;
  guint16 seq;
  guint16 size;
} RudpArrival;

typedef struct {
  GSocket *socket;
  guint16 port;
  GThread *thread;
  gint stop;
  GMutex lock;
  GArray *log;                  /* RudpArrival */
} RudpReceiver;

RudpReceiver *rudp_receiver_start (void);
void rudp_receiver_stop (RudpReceiver * r);
/* the arrivals of @ssrc (0 = all) in [@from_us, @to_us), in arrival order */
GArray *rudp_receiver_arrivals (RudpReceiver * r, guint32 ssrc,
    gint64 from_us, gint64 to_us);
/* With RUDP_TEST_DUMP=prefix set, writes the whole arrival log to
 * prefix.PID ("t_us ssrc seq size" lines), to look into a failed check */
void rudp_receiver_dump (RudpReceiver * r);
gint64 rudp_receiver_first (RudpReceiver * r, guint32 ssrc);

GstBuffer *rudp_make_packet (guint32 ssrc, guint16 seq, gsize size);

/* Forwards between a sender (whatever sends to relay->port first) and
 * 127.0.0.1:@dest_port, dropping sender packets while drop is set. */
typedef struct {
  GSocket *socket;
  guint16 port;
  guint16 dest_port;
  GSocketAddress *sender;
  GThread *thread;
  gint stop;
  gint drop;                    /* drop every forward packet while set */
  gint dropped;
} RudpRelay;

RudpRelay *rudp_relay_start (guint16 dest_port);
void rudp_relay_stop (RudpRelay * r);

guint rudp_count_threads (const gchar * name);
/* nice -10 for this thread and the threads it creates from now on (the
 * pacer, producers), when allowed: the CBR checks measure the pacing, not
 * how CFS shares two cores with other people's compilers. */
gboolean rudp_boost_priority (void);

#endif
