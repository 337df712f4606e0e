/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the process-wide pacer of all rudpsinks.
 *
 * One shared service (gst/common/twoflowservice.h, "rudp-pacer"): one
 * thread and one timer serve every rudpsink of the process. The thread is
 * the service's GstClockID loop on the system clock (so a GstTestClock
 * installed as the default system clock drives it): at each wakeup the
 * flows send, in turn, what their leaky buckets allow (the core
 * scheduler's poll, one packet at a time, the clock read before each),
 * and the thread sleeps until the scheduler's next wakeup (on its shared
 * grid), or until kicked while no packet is queued anywhere.
 *
 * The same thread reads the RTCP feedback of the sinks in `receiver` rate
 * control from their own sockets (one non-blocking poll over all of them
 * per wakeup, at least every FEEDBACK_POLL) and hands it to each sink's
 * sans-IO sender core (gst-libs/gst/rudp/rudpsender.h), whose outputs are
 * a new rate for the flow and the notices to send back.
 *
 * With a key, each packet is protected as SRTP just before it leaves (the
 * bucket paid for the plaintext size; the tag adds 10 bytes, 4 with
 * hmac-sha1-32, 16 with GCM), each notice as SRTCP, and feedback is
 * unprotected before the sender core sees it: failures are dropped and
 * counted. Without a key, feedback from any address but the destination's
 * is dropped and counted.
 *
 * NAT traversal (learn-peer): the same poll reads the receiver's hellos
 * (rudpfeedback.h), and the sans-IO learner (gst-libs/gst/twoflow/
 * twoflowhello.h) decides whether one sets the destination; until one
 * does, render waits (nothing is queued, so nothing falls due).
 *
 * Everything below runs under the service lock, which is also the lock of
 * the sinks' queues; packets are sent with it held so a sink that stops
 * (and closes its socket) never races a send. Upstream events are sent
 * without it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include "gstrudppacer.h"
#include "twoflowservice.h"

GST_DEBUG_CATEGORY_STATIC (rudp_pacer_debug);
#define GST_CAT_DEFAULT rudp_pacer_debug

/* how often the thread looks for feedback while nothing is to be sent */
#define FEEDBACK_POLL (20 * GST_MSECOND)
/* most packets sent per wakeup before the lock is let go (the thread then
 * goes on at once) */
#define MAX_BURST 1024

typedef struct {
  GstRudpScheduler *sched;
  GList *sessions;              /* GstRudpPacerSession*: their owners
                                 * remove them before closing the socket */
  GstClockTime fixed_next_read; /* fixed sinks' feedback, at most every
                                 * FEEDBACK_POLL */
} Pacer;

#define PACER(s) ((Pacer *) twoflow_service_get_data (s))

/* One rudpsink's flow; everything but owner, callbacks and service under
 * the service lock */
struct _GstRudpPacerSession {
  TwoflowService *service;
  GstObject *owner;             /* not reffed: it removes the session */
  GstRudpPacerCallbacks callbacks;
  GstRudpPacerParams params;
  gboolean follow;              /* receiver rate control */

  GSocket *socket;
  GSocketAddress *dest;         /* NULL until learnt (learn-peer) */
  GstRudpSrtp *srtp;            /* NULL in plaintext mode */
  guint8 *scratch;              /* the packet being protected */
  gsize scratch_size;
  gsize scratch_len;            /* of the last protected datagram */
  guint64 hello_id;
  GstTwoflowHelloLearner *learner;      /* learn-peer */
  GstRudpFlow *flow;
  GstRudpSender *sender;        /* sans-IO levels core */
  gboolean flushing;
  GCond space;                  /* render and drain: packets of ours left */
  gboolean sent;                /* this tick sent packets of ours */
  guint64 send_errors;
  guint64 auth_failures;
  guint64 replayed;
  guint64 foreign_feedback;
  guint64 dropped_no_peer;
  guint64 hellos_unknown;
  /* retransmission: the datagrams sent in the last rtx_time, as sent
   * (protected under SRTP), oldest first (RtxEntry) */
  GstClockTime rtx_time;
  GQueue rtx_history;
  guint64 rtx_requested;
  guint64 rtx_repeated;
  guint64 rtx_sent;
  guint64 rtx_missing;
  guint64 rtx_skipped;
  guint64 rtx_charged;
  GstClockTime rtx_last_nack;   /* monotonic, of the last NACK */
  gboolean lingering;           /* drained, answering NACKs a while */
  gdouble rtx_tokens;           /* the retransmission budget, bytes */
  GstClockTime rtx_tokens_at;
  gdouble sent_rate;            /* bytes/s sent over the last full second */
  GstClockTime sent_window_start;
  guint64 sent_window_bytes;
  gboolean notify_pending;      /* a level change to announce */
  guint64 notify_bitrate;
  GstClockTime notify_srtt;
};

/* Protects @len bytes of @data into the sink's scratch; NULL on failure. */
static const guint8 *
protect (GstRudpPacerSession * ses, const guint8 * data, gsize len, gboolean rtcp,
    gint * out_len)
{
  gsize need = len + GST_RUDP_SRTP_TRAILER;

  if (len > G_MAXINT - GST_RUDP_SRTP_TRAILER)
    return NULL;
  if (ses->scratch_size < need) {
    g_free (ses->scratch);
    ses->scratch = g_malloc (need);
    ses->scratch_size = need;
  }
  memcpy (ses->scratch, data, len);
  *out_len = gst_rudp_srtp_protect (ses->srtp, ses->scratch, len, rtcp);
  return *out_len < 0 ? NULL : ses->scratch;
}

/* Sends a datagram of ours (SRTP/SRTCP with a key); FALSE on failure. */
static gboolean
send_datagram (GstRudpPacerSession * ses, GSocketAddress * to, const guint8 * data,
    gsize len, gboolean rtcp, GError ** err)
{
  if (ses->srtp) {
    gint n = 0;

    data = protect (ses, data, len, rtcp, &n);
    ses->scratch_len = n;
    if (!data) {
      g_set_error (err, G_IO_ERROR, G_IO_ERROR_FAILED,
          "SRTP protection failed");
      return FALSE;
    }
    len = n;
  }
  return g_socket_send_to (ses->socket, to, (const gchar *) data, len, NULL,
      err) >= 0;
}

/* A datagram kept for retransmission: the bytes as sent */
typedef struct {
  GstClockTime sent;
  guint16 seq;
  guint nacked;                 /* times asked for */
  guint sends;                  /* times resent */
  gsize len;
  guint8 data[];
} RtxEntry;

static void
rtx_keep (GstRudpPacerSession * ses, const guint8 * data, gsize len, guint16 seq)
{
  GstClockTime now = g_get_monotonic_time () * GST_USECOND;
  RtxEntry *e, *old;

  if (ses->rtx_time == 0)
    return;
  /* what the flow sends, over windows of a second */
  if (!GST_CLOCK_TIME_IS_VALID (ses->sent_window_start)) {
    ses->sent_window_start = now;
    ses->sent_window_bytes = 0;
  }
  ses->sent_window_bytes += len;
  if (now >= ses->sent_window_start + GST_SECOND) {
    ses->sent_rate = ses->sent_window_bytes * (gdouble) GST_SECOND /
        (now - ses->sent_window_start);
    ses->sent_window_start = now;
    ses->sent_window_bytes = 0;
  }
  while ((old = g_queue_peek_head (&ses->rtx_history))
      && old->sent + ses->rtx_time < now)
    g_free (g_queue_pop_head (&ses->rtx_history));
  e = g_malloc (sizeof (RtxEntry) + len);
  e->sent = now;
  e->seq = seq;
  e->nacked = 0;
  e->sends = 0;
  e->len = len;
  memcpy (e->data, data, len);
  g_queue_push_tail (&ses->rtx_history, e);
}

/* A Generic NACK from the receiver: resend what is kept, at once, each
 * packet at most RTX_MAX_SENDS times. An eighth of what the flow sent over
 * the last second (a bucket of RTX_BURST bytes) goes as extra load; beyond
 * it a paced flow's bucket pays (the resends take the place of new
 * packets, the flow keeps its rate): under congestion the repeated
 * requests of a jitterbuffer would otherwise add to the queue that lost
 * them (a share of the configured rate was too much where the path
 * carries less: in a capacity drop a smoothed flow paced at 2.5 Mbit/s
 * resent 0.4 Mbit/s into a 1.5 Mbit/s link). */
#define RTX_SHARE 8
#define RTX_BURST (16 * 1400)
#define RTX_MAX_SENDS 4
#define RTX_FIRST_WINDOW (100 * GST_MSECOND)
#define RTX_RESERVE (2 * 1400)
#define RTX_LINGER (1 * GST_SECOND)
#define RTX_LINGER_QUIET (300 * GST_MSECOND)

static gboolean
rtx_budget (GstRudpPacerSession * ses, gsize len, gsize reserve)
{
  GstClockTime now = g_get_monotonic_time () * GST_USECOND;
  gdouble rate = ses->sent_rate / RTX_SHARE;    /* bytes/s */

  /* in the first second, what was sent so far: at 0 the budget never
   * refilled there, and beside a full queue the first GOP's losses
   * outran the bucket (H.264 beside a bulk TCP: 48 frames lost) */
  if (ses->sent_rate == 0 && GST_CLOCK_TIME_IS_VALID (ses->sent_window_start)
      && now >= ses->sent_window_start + RTX_FIRST_WINDOW)
    rate = ses->sent_window_bytes * (gdouble) GST_SECOND /
        (now - ses->sent_window_start) / RTX_SHARE;

  if (!GST_CLOCK_TIME_IS_VALID (ses->rtx_tokens_at))
    ses->rtx_tokens = RTX_BURST;
  else if (now > ses->rtx_tokens_at)
    ses->rtx_tokens += rate * (now - ses->rtx_tokens_at) / 1e9;
  ses->rtx_tokens = MIN (ses->rtx_tokens, RTX_BURST);
  ses->rtx_tokens_at = now;
  if (ses->rtx_tokens < len + reserve)
    return FALSE;
  ses->rtx_tokens -= len;
  return TRUE;
}

static guint64 flow_rate (GstRudpPacerSession * ses);

static void
rtx_answer (GstRudpPacerSession * ses, GArray * seqs)
{
  guint i;

  ses->rtx_last_nack = g_get_monotonic_time () * GST_USECOND;

  for (i = 0; i < seqs->len; i++) {
    guint16 seq = g_array_index (seqs, guint16, i);
    GList *l;
    RtxEntry *e = NULL;

    /* the newest first: a NACK is for a recent packet */
    for (l = ses->rtx_history.tail; l; l = l->prev)
      if (((RtxEntry *) l->data)->seq == seq) {
        e = l->data;
        break;
      }
    if (!e) {
      ses->rtx_missing++;
      continue;
    }
    if (e->nacked)
      ses->rtx_repeated++;
    else
      ses->rtx_requested++;
    e->nacked++;
    /* the resends count, not the requests. Within the budget a packet
     * not resent yet goes first: a repeat (its resend may still
     * be on its way) leaves RTX_RESERVE in the bucket. A burst longer
     * than the bucket (19 packets, GE bursts) otherwise waited while the
     * tokens went to the repeats of its first 16; a reserve of half the
     * bucket starved the repeats of resends lost beside a bulk TCP,
     * where the bucket stayed below half */
    if (e->sends >= RTX_MAX_SENDS) {
      ses->rtx_skipped++;
      continue;
    }
    if (!rtx_budget (ses, e->len, e->sends > 0 ? RTX_RESERVE : 0)) {
      /* over the budget: the resend takes the place of new packets (the
       * flow's bucket pays for it), so it counts toward the rate instead
       * of adding to it. Skipped, beside a bulk TCP's full queue the
       * flow's first GOP lost packets asked for 8-14 times */
      if (flow_rate (ses) == 0) {
        ses->rtx_skipped++;
        GST_LOG_OBJECT (ses->owner, "resend of %u skipped: %u sends, "
            "budget %.0f bytes", seq, e->sends, ses->rtx_tokens);
        continue;
      }
      gst_rudp_flow_charge (ses->flow, e->len,
          twoflow_service_now (ses->service));
      ses->rtx_charged++;
    }
    GST_LOG_OBJECT (ses->owner, "resend of %u (%u), budget %.0f bytes", seq,
        e->sends + 1, ses->rtx_tokens);
    e->sends++;
    if (ses->dest && g_socket_send_to (ses->socket, ses->dest,
            (const gchar *) e->data, e->len, NULL, NULL) >= 0)
      ses->rtx_sent++;
    else
      ses->send_errors++;
  }
}

static void
send_packet (GstRudpFlow * flow, gpointer packet, gsize size,
    gpointer user_data)
{
  GstRudpPacerSession *ses = gst_rudp_flow_get_user_data (flow);
  GstBuffer *buf = packet;
  GstMapInfo map;
  GError *err = NULL;

  ses->sent = TRUE;
  if (!gst_buffer_map (buf, &map, GST_MAP_READ)) {
    ses->send_errors++;
    gst_buffer_unref (buf);
    return;
  }
  if (!ses->dest) {
    /* learn-peer: no hello yet, nowhere to send */
    ses->dropped_no_peer++;
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
    return;
  }
  gst_rudp_sender_handle_rtp (ses->sender, map.data, map.size);
  if (send_datagram (ses, ses->dest, map.data, map.size, FALSE, &err)) {
    /* kept as sent: an SRTP packet must not be protected twice */
    if (map.size >= 12)
      rtx_keep (ses, ses->srtp ? ses->scratch : map.data,
          ses->srtp ? ses->scratch_len : map.size,
          GST_READ_UINT16_BE (map.data + 2));
  } else {
    /* a warning, never fatal: the flow goes on */
    if (ses->send_errors++ == 0 && ses->callbacks.send_error)
      ses->callbacks.send_error (ses->owner, err);
    GST_LOG_OBJECT (ses->owner, "send error: %s", err->message);
    g_clear_error (&err);
  }
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
}

static guint64
flow_rate (GstRudpPacerSession * ses)
{
  guint64 bitrate = ses->follow ?
      gst_rudp_sender_get_bitrate (ses->sender) : ses->params.rate;

  return bitrate / 8;           /* the bucket counts bytes */
}

/* What the sender core has to do: a new rate, notices to send. */
static void
run_sender (TwoflowService * s, GstRudpPacerSession * ses)
{
  GstRudpSenderOutput out;
  GstClockTime now = twoflow_service_now (s);

  while (gst_rudp_sender_poll (ses->sender, now, &out)) {
    if (out.type == GST_RUDP_SENDER_OUTPUT_LEVEL) {
      GST_DEBUG_OBJECT (ses->owner, "level %u (%" G_GUINT64_FORMAT " bit/s)",
          out.level, out.bitrate);
      gst_rudp_flow_set_rate (ses->flow, out.bitrate / 8, now);
      ses->notify_pending = TRUE;
      ses->notify_bitrate = out.bitrate;
      ses->notify_srtt = out.srtt;
    } else if (out.type == GST_RUDP_SENDER_OUTPUT_NOTICE) {
      GstMapInfo map;

      if (gst_buffer_map (out.buffer, &map, GST_MAP_READ)) {
        if (!send_datagram (ses, out.peer, map.data, map.size, TRUE, NULL))
          ses->send_errors++;
        gst_buffer_unmap (out.buffer, &map);
      }
      gst_buffer_unref (out.buffer);
      g_object_unref (out.peer);
    }
  }
}

/* A datagram that parses as a hello (@authentic: it was SRTCP and
 * unprotected); TRUE if it was one. Moves the destination when the
 * learner accepts it from a new address or port. */
static gboolean
handle_hello (GstRudpPacerSession * ses, const guint8 * data, gsize len,
    GSocketAddress * from, gboolean authentic, GstClockTime now)
{
  guint32 ssrc;
  guint64 id, counter;
  GInetAddress *ia;
  GstTwoflowHelloVerdict v;

  if (!ses->learner || !gst_rudp_hello_parse (data, len, &ssrc, &id,
          &counter) || !G_IS_INET_SOCKET_ADDRESS (from))
    return FALSE;
  if (id != ses->hello_id) {
    GST_LOG_OBJECT (ses->owner, "hello for another session (%" G_GUINT64_FORMAT
        ")", id);
    ses->hellos_unknown++;
    return TRUE;
  }
  ia = g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (from));
  v = gst_twoflow_hello_learner_handle (ses->learner,
      g_inet_address_to_bytes (ia), g_inet_address_get_native_size (ia),
      g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (from)), counter,
      authentic, now);
  GST_LOG_OBJECT (ses->owner, "hello: %s", gst_twoflow_hello_verdict_name (v));
  if (v == GST_TWOFLOW_HELLO_LEARNED || v == GST_TWOFLOW_HELLO_MOVED) {
    GST_INFO_OBJECT (ses->owner, "%s the destination from a hello (port %u)",
        v == GST_TWOFLOW_HELLO_LEARNED ? "learnt" : "moved",
        g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (from)));
    g_clear_object (&ses->dest);
    ses->dest = g_object_ref (from);
    g_cond_broadcast (&ses->space);    /* render waits for it */
  }
  return TRUE;
}

/* One datagram of a sink's socket, non-blocking, as
 * g_socket_receive_from(), and when it arrived (*@arrival, on the clock of
 * @now): the kernel's receive time (SO_TIMESTAMPNS) taken back from @now
 * by the time the datagram waited in the socket. The pacer reads the
 * feedback when it wakes for its own packets, up to a packet interval
 * late at low rates; the sender core's answer counts that wait in its
 * delay (RFC 3550's DLSR) only when it knows the arrival, else the
 * receiver's RTT holds it (measured: 40-90 ms too high below 1 Mbit/s). */
static gssize
receive_stamped (GstRudpPacerSession * ses, guint8 * data, gsize size,
    GSocketAddress ** from, GstClockTime now, GstClockTime * arrival)
{
  struct sockaddr_storage ss;
  struct iovec iov = { data, size };
  union {
    struct cmsghdr align;
    gchar buf[CMSG_SPACE (sizeof (struct timespec))];
  } ctl;
  struct msghdr msg;
  struct cmsghdr *cm;
  gssize n;

  *from = NULL;
  *arrival = now;
  memset (&msg, 0, sizeof (msg));
  msg.msg_name = &ss;
  msg.msg_namelen = sizeof (ss);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctl.buf;
  msg.msg_controllen = sizeof (ctl.buf);
  do
    n = recvmsg (g_socket_get_fd (ses->socket), &msg, MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -1;
  for (cm = CMSG_FIRSTHDR (&msg); cm; cm = CMSG_NXTHDR (&msg, cm)) {
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_TIMESTAMPNS
        && cm->cmsg_len >= CMSG_LEN (sizeof (struct timespec))) {
      struct timespec ts, rt;
      GstClockTime stamp, real;

      memcpy (&ts, CMSG_DATA (cm), sizeof (ts));
      clock_gettime (CLOCK_REALTIME, &rt);
      stamp = GST_TIMESPEC_TO_TIME (ts);
      real = GST_TIMESPEC_TO_TIME (rt);
      /* (a wall clock stepped back, or a wait beyond a second: no stamp) */
      if (real >= stamp && real - stamp < GST_SECOND && now >= real - stamp)
        *arrival = now - (real - stamp);
    }
  }
  *from = g_socket_address_new_from_native (&ss, msg.msg_namelen);
  return n;
}

/* One poll over the sinks' sockets: the receiver's requests (followed
 * under receiver rate control, read for the stats and answered under
 * fixed), hellos of sinks learning their destination. TRUE when a sink
 * needs it polled on a timer (receiver control, learning). */
static gboolean
read_feedback (TwoflowService * s, Pacer * p, GstClockTime now)
{
  guint n = 0, i, max = g_list_length (p->sessions);
  GPollFD *fds = g_newa (GPollFD, MAX (max, 1));
  GstRudpPacerSession **owners = g_newa (GstRudpPacerSession *,
      MAX (max, 1));
  gboolean need_poll = FALSE, fixed_due = now >= p->fixed_next_read;
  GList *l;

  if (fixed_due)
    p->fixed_next_read = now + FEEDBACK_POLL;
  for (l = p->sessions; l; l = l->next) {
    GstRudpPacerSession *ses = l->data;

    /* fixed rate control: read when the pacer runs anyway (its own
     * packets), at most every FEEDBACK_POLL, with no timer of its own */
    if (ses->follow || ses->learner || ses->lingering)
      need_poll = TRUE;
    else if (!fixed_due)
      continue;
    fds[n].fd = g_socket_get_fd (ses->socket);
    fds[n].events = G_IO_IN;
    fds[n].revents = 0;
    owners[n++] = ses;
  }
  if (n == 0)
    return FALSE;
  if (g_poll (fds, n, 0) <= 0)
    return need_poll;
  for (i = 0; i < n; i++) {
    GstRudpPacerSession *ses = owners[i];
    guint8 data[1500];
    GSocketAddress *from = NULL;
    GstClockTime arrival;
    gssize len;

    if (!(fds[i].revents & G_IO_IN))
      continue;
    while ((len = receive_stamped (ses, data, sizeof (data), &from,
                twoflow_service_now (s), &arrival)) >= 0) {
      if (ses->srtp) {
        gint n = len;
        GstRudpSrtpResult r = gst_rudp_is_rtcp (data, len) ?
            gst_rudp_srtp_unprotect (ses->srtp, data, &n, TRUE) :
            GST_RUDP_SRTP_AUTH_FAILED;

        if (r != GST_RUDP_SRTP_OK) {
          /* a plain hello to a keyed sink (libsrtp may take its bytes
           * for an old index): counted as forged too, after the address
           * check; a genuine SRTCP hello never parses as a plain one */
          if (handle_hello (ses, data, len, from, FALSE, now))
            ses->auth_failures++;
          else if (r == GST_RUDP_SRTP_REPLAYED)
            ses->replayed++;
          else
            ses->auth_failures++;
          GST_LOG_OBJECT (ses->owner, "feedback dropped: %s", r ==
              GST_RUDP_SRTP_REPLAYED ? "replayed" : "not authentic");
          g_clear_object (&from);
          continue;
        }
        len = n;
        if (handle_hello (ses, data, len, from, TRUE, now)) {
          g_clear_object (&from);
          continue;
        }
      } else if (handle_hello (ses, data, len, from, FALSE, now)) {
        g_clear_object (&from);
        continue;
      } else if (!ses->dest || !gst_rudp_same_address (from, ses->dest)) {
        ses->foreign_feedback++;
        GST_LOG_OBJECT (ses->owner, "feedback from a foreign address dropped");
        g_clear_object (&from);
        continue;
      }
      {
        GstBuffer *b = gst_buffer_new_memdup (data, len);
        GArray *seqs = g_array_new (FALSE, FALSE, sizeof (guint16));
        gboolean nack = gst_rudp_is_rtcp (data, len)
            && gst_rudp_nack_parse (b, NULL, seqs);

        gst_buffer_unref (b);
        if (nack)
          rtx_answer (ses, seqs);
        g_array_unref (seqs);
        if (nack) {
          g_clear_object (&from);
          continue;
        }
      }
      gst_rudp_sender_handle_request (ses->sender, data, len, from,
          g_object_unref, arrival);
      from = NULL;
    }
    run_sender (s, ses);
  }
  return need_poll;
}

/* Wakes the render/drain of the sinks that sent (not all: a broadcast to
 * every producer at each tick would wake 50 threads per millisecond). */
static void
wake_senders (Pacer * p)
{
  GList *l;

  for (l = p->sessions; l; l = l->next) {
    GstRudpPacerSession *ses = l->data;

    if (ses->sent) {
      ses->sent = FALSE;
      g_cond_broadcast (&ses->space);
    }
  }
}

typedef struct {
  GstObject *owner;
  void (*func) (GstObject * owner, guint64 bitrate, GstClockTime srtt);
  guint64 bitrate;
  GstClockTime srtt;
} Announce;

/* Tells the owners of the level changes, without the lock. */
static void
announce_levels (TwoflowService * s, Pacer * p)
{
  GList *l;
  GArray *todo = NULL;
  guint i;

  for (l = p->sessions; l; l = l->next) {
    GstRudpPacerSession *ses = l->data;
    Announce a;

    if (!ses->notify_pending)
      continue;
    ses->notify_pending = FALSE;
    if (!ses->callbacks.level_changed)
      continue;
    a.owner = gst_object_ref (ses->owner);
    a.func = ses->callbacks.level_changed;
    a.bitrate = ses->notify_bitrate;
    a.srtt = ses->notify_srtt;
    if (!todo)
      todo = g_array_new (FALSE, FALSE, sizeof (Announce));
    g_array_append_val (todo, a);
  }
  if (!todo)
    return;
  twoflow_service_unlock (s);
  for (i = 0; i < todo->len; i++) {
    Announce *a = &g_array_index (todo, Announce, i);

    a->func (a->owner, a->bitrate, a->srtt);
    gst_object_unref (a->owner);
  }
  g_array_free (todo, TRUE);
  twoflow_service_lock (s);
}

static GstClockTime
pacer_dispatch (TwoflowService * s, gpointer data, GstClockTime now)
{
  Pacer *p = data;
  gboolean feedback = read_feedback (s, p, now);
  GstClockTime next;
  GstRudpFlow *flow;
  gpointer packet;
  gsize size;
  guint n = 0;

  /* one packet at a time, each paid at the moment it is sent: a thread
   * held up between two packets (descheduled, 50 flows' sends) then
   * catches up at most the bucket's depth, instead of sending late what
   * was paid at the wakeup and being credited the wait once more (see
   * gst_rudp_scheduler_poll); MAX_BURST bounds the time the lock is held */
  while (n < MAX_BURST
      && gst_rudp_scheduler_poll (p->sched, now, &flow, &packet, &size)) {
    send_packet (flow, packet, size, p);
    n++;
    now = twoflow_service_now (s);
  }
  if (n > 0)
    wake_senders (p);
  announce_levels (s, p);
  next = gst_rudp_scheduler_next_wakeup (p->sched, now);
  if (feedback && (!GST_CLOCK_TIME_IS_VALID (next)
          || next > now + FEEDBACK_POLL))
    next = now + FEEDBACK_POLL;
  return next;
}

static gpointer
pacer_create (TwoflowService * s, gpointer arg, GError ** error)
{
  const GstRudpPacerParams *first = arg;
  Pacer *p = g_new0 (Pacer, 1);

  p->sched = gst_rudp_scheduler_new (first->timer_interval,
      twoflow_service_now (s));
  return p;
}

static void
pacer_destroy (gpointer data)
{
  Pacer *p = data;

  gst_rudp_scheduler_free (p->sched);
  g_free (p);
}

static const TwoflowServiceInfo pacer_info = {
  "rudp-pacer", pacer_create, pacer_dispatch, pacer_destroy
};

static void
update_interval (Pacer * p)
{
  GstClockTime iv = GST_CLOCK_TIME_NONE;
  GList *l;

  for (l = p->sessions; l; l = l->next)
    iv = MIN (iv, ((GstRudpPacerSession *) l->data)->params.timer_interval);
  if (GST_CLOCK_TIME_IS_VALID (iv))
    gst_rudp_scheduler_set_interval (p->sched, iv);
}


GstRudpPacerSession *
gst_rudp_pacer_add_session (const GstRudpPacerSessionConfig * config,
    GstObject * owner, const GstRudpPacerCallbacks * callbacks)
{
  GstRudpPacerSession *ses = g_new0 (GstRudpPacerSession, 1);
  TwoflowService *s;
  Pacer *p;

  if (!rudp_pacer_debug)
    GST_DEBUG_CATEGORY_INIT (rudp_pacer_debug, "rudppacer", 0,
        "rudpsink shared pacer");
  ses->owner = owner;
  if (callbacks)
    ses->callbacks = *callbacks;
  ses->params = config->params;
  ses->follow = config->sender.follow;
  ses->socket = g_object_ref (config->socket);
  /* the feedback's arrival time (receive_stamped) */
  if (!g_socket_set_option (ses->socket, SOL_SOCKET, SO_TIMESTAMPNS, 1, NULL))
    GST_WARNING_OBJECT (owner, "no SO_TIMESTAMPNS: the receiver's RTT will "
        "count the time its feedback waits to be read");
  ses->dest = config->dest ? g_object_ref (config->dest) : NULL;
  ses->srtp = config->srtp;
  ses->hello_id = config->hello_id;
  if (config->allowed)
    /* the destination comes from the hellos of this address only */
    ses->learner = gst_twoflow_hello_learner_new (g_inet_address_to_bytes
        (config->allowed), g_inet_address_get_native_size (config->allowed),
        config->srtp != NULL);
  ses->sender = gst_rudp_sender_new (&config->sender);
  ses->rtx_time = config->rtx_time;
  g_queue_init (&ses->rtx_history);
  ses->rtx_tokens_at = GST_CLOCK_TIME_NONE;
  ses->sent_window_start = GST_CLOCK_TIME_NONE;
  g_cond_init (&ses->space);

  s = twoflow_service_acquire (pacer_info.thread_name, &pacer_info,
      (gpointer) & config->params, NULL);
  p = PACER (s);
  ses->service = s;
  twoflow_service_lock (s);
  ses->flow = gst_rudp_scheduler_add_flow (p->sched, flow_rate (ses),
      ses->params.bucket_depth, ses, twoflow_service_now (s));
  p->sessions = g_list_append (p->sessions, ses);
  update_interval (p);
  twoflow_service_kick (s);
  twoflow_service_unlock (s);
  return ses;
}

void
gst_rudp_pacer_remove_session (GstRudpPacerSession * ses)
{
  TwoflowService *s = ses->service;
  Pacer *p = PACER (s);

  twoflow_service_lock (s);
  gst_rudp_scheduler_remove_flow (p->sched, ses->flow,
      (GDestroyNotify) gst_buffer_unref);
  ses->flow = NULL;
  p->sessions = g_list_remove (p->sessions, ses);
  update_interval (p);
  g_cond_broadcast (&ses->space);
  twoflow_service_unlock (s);
  twoflow_service_release (s);

  g_clear_object (&ses->socket);
  g_clear_object (&ses->dest);
  g_clear_pointer (&ses->learner, gst_twoflow_hello_learner_free);
  g_clear_pointer (&ses->srtp, gst_rudp_srtp_free);
  g_clear_pointer (&ses->sender, gst_rudp_sender_free);
  g_free (ses->scratch);
  g_queue_clear_full (&ses->rtx_history, g_free);
  g_cond_clear (&ses->space);
  g_free (ses);
}

gboolean
gst_rudp_pacer_session_queue (GstRudpPacerSession * ses, GstBuffer * buf)
{
  TwoflowService *s = ses->service;
  gsize size = gst_buffer_get_size (buf);

  twoflow_service_lock (s);
  /* learn-peer: nothing to send to before the first hello; wait for it
   * (what would be queued meanwhile could only be dropped) */
  while (!ses->flushing && ses->learner && !ses->dest)
    g_cond_wait (&ses->space, twoflow_service_get_mutex (s));
  /* backpressure: wait for room; an empty queue takes any buffer */
  while (!ses->flushing && gst_rudp_flow_queued_packets (ses->flow) > 0
      && gst_rudp_flow_queued_bytes (ses->flow) + size >
      ses->params.buffer_size)
    g_cond_wait (&ses->space, twoflow_service_get_mutex (s));
  if (ses->flushing) {
    twoflow_service_unlock (s);
    gst_buffer_unref (buf);
    return FALSE;
  }
  gst_rudp_flow_handle_packet (ses->flow, buf, size);
  /* a packet into an empty queue may be due at once */
  if (gst_rudp_flow_queued_packets (ses->flow) == 1)
    twoflow_service_kick (s);
  twoflow_service_unlock (s);
  return TRUE;
}

gboolean
gst_rudp_pacer_session_drain (GstRudpPacerSession * ses)
{
  TwoflowService *s = ses->service;
  gboolean ok;

  twoflow_service_lock (s);
  while (!ses->flushing && gst_rudp_flow_queued_packets (ses->flow) > 0)
    g_cond_wait (&ses->space, twoflow_service_get_mutex (s));
  /* the last packets' losses are asked for after they left: answer
   * NACKs until none came for RTX_LINGER_QUIET, at most RTX_LINGER (the
   * session ended at once, and the receiver's last frame was lost at 5 %
   * loss) */
  if (ses->rtx_time > 0 && !ses->flushing) {
    gint64 start = g_get_monotonic_time ();

    ses->lingering = TRUE;
    twoflow_service_kick (s);
    while (!ses->flushing) {
      gint64 now = g_get_monotonic_time ();
      gint64 quiet_from = MAX (start,
          (gint64) (ses->rtx_last_nack / GST_USECOND));
      gint64 until = MIN (start + RTX_LINGER / GST_USECOND,
          quiet_from + RTX_LINGER_QUIET / GST_USECOND);

      if (now >= until)
        break;
      g_cond_wait_until (&ses->space, twoflow_service_get_mutex (s), until);
    }
    ses->lingering = FALSE;
  }
  ok = !ses->flushing;
  twoflow_service_unlock (s);
  return ok;
}

void
gst_rudp_pacer_session_set_flushing (GstRudpPacerSession * ses,
    gboolean flushing)
{
  twoflow_service_lock (ses->service);
  ses->flushing = flushing;
  g_cond_broadcast (&ses->space);
  twoflow_service_unlock (ses->service);
}

void
gst_rudp_pacer_session_flush (GstRudpPacerSession * ses)
{
  twoflow_service_lock (ses->service);
  gst_rudp_flow_flush (ses->flow, (GDestroyNotify) gst_buffer_unref);
  g_cond_broadcast (&ses->space);
  twoflow_service_unlock (ses->service);
}

void
gst_rudp_pacer_session_reconfigure (GstRudpPacerSession * ses,
    const GstRudpPacerParams * params)
{
  TwoflowService *s = ses->service;

  twoflow_service_lock (s);
  ses->params = *params;
  gst_rudp_flow_set_rate (ses->flow, flow_rate (ses),
      twoflow_service_now (s));
  gst_rudp_flow_set_depth (ses->flow, ses->params.bucket_depth);
  update_interval (PACER (s));
  g_cond_broadcast (&ses->space);       /* buffer-size may have grown */
  twoflow_service_kick (s);
  twoflow_service_unlock (s);
}

void
gst_rudp_pacer_session_set_level (GstRudpPacerSession * ses, guint level)
{
  TwoflowService *s = ses->service;

  twoflow_service_lock (s);
  gst_rudp_sender_set_level (ses->sender, level, twoflow_service_now (s));
  run_sender (s, ses);
  twoflow_service_kick (s);
  twoflow_service_unlock (s);
}

void
gst_rudp_pacer_session_get_stats (GstRudpPacerSession * ses,
    GstRudpPacerSessionStats * st)
{
  TwoflowService *s = ses->service;

  memset (st, 0, sizeof (*st));
  twoflow_service_lock (s);
  gst_rudp_flow_get_stats (ses->flow, twoflow_service_now (s), &st->flow);
  gst_rudp_sender_get_stats (ses->sender, &st->sender);
  if (ses->learner)
    gst_twoflow_hello_learner_get_stats (ses->learner, &st->hello);
  st->send_errors = ses->send_errors;
  st->auth_failures = ses->auth_failures;
  st->replayed = ses->replayed;
  st->foreign_feedback = ses->foreign_feedback;
  st->dropped_no_peer = ses->dropped_no_peer;
  st->hellos_unknown = ses->hellos_unknown;
  st->rtx_requested = ses->rtx_requested;
  st->rtx_repeated = ses->rtx_repeated;
  st->rtx_sent = ses->rtx_sent;
  st->rtx_missing = ses->rtx_missing;
  st->rtx_skipped = ses->rtx_skipped;
  st->rtx_charged = ses->rtx_charged;
  st->srtp = ses->srtp != NULL;
  if (ses->dest) {
    GInetSocketAddress *ia = G_INET_SOCKET_ADDRESS (ses->dest);
    gchar *a = g_inet_address_to_string (g_inet_socket_address_get_address
        (ia));

    st->peer = g_strdup_printf ("%s:%u", a,
        g_inet_socket_address_get_port (ia));
    g_free (a);
  }
  twoflow_service_unlock (s);
}
