/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — helpers of the rudp element tests. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <gst/rtp/gstrtpbuffer.h>
#include "rudptestutil.h"

static GSocket *
bind_loopback (guint16 * port)
{
  GSocket *s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *sa = g_inet_socket_address_new (lo, 0), *local;

  g_assert_true (g_socket_bind (s, sa, FALSE, NULL));
  g_object_unref (sa);
  g_object_unref (lo);
  /* root may exceed rmem_max: room for 50 flows' bursts */
  if (!g_socket_set_option (s, SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20, NULL))
    g_socket_set_option (s, SOL_SOCKET, SO_RCVBUF, 16 << 20, NULL);
  local = g_socket_get_local_address (s, NULL);
  *port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (local));
  g_object_unref (local);
  g_socket_set_timeout (s, 0);
  /* arrival times from the kernel: a test thread held up on a loaded
   * machine must not move packets into the next window */
  g_socket_set_option (s, SOL_SOCKET, SO_TIMESTAMPNS, 1, NULL);
  return s;
}

/* One datagram; its kernel arrival time in monotonic microseconds (the
 * kernel stamps CLOCK_REALTIME; @offset maps it), or now without one. */
static gssize
receive_stamped (GSocket * s, guint8 * buf, gsize len, gint64 offset,
    gint64 * t_us)
{
  union {
    struct cmsghdr align;
    gchar buf[CMSG_SPACE (sizeof (struct timespec))];
  } control;
  struct iovec iov = { buf, len };
  struct msghdr msg = { 0 };
  struct cmsghdr *cm;
  gssize n;

  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof (control.buf);
  n = recvmsg (g_socket_get_fd (s), &msg, MSG_DONTWAIT);
  if (n < 0)
    return n;
  *t_us = g_get_monotonic_time ();
  for (cm = CMSG_FIRSTHDR (&msg); cm; cm = CMSG_NXTHDR (&msg, cm)) {
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
      struct timespec ts;

      memcpy (&ts, CMSG_DATA (cm), sizeof (ts));
      *t_us = (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000 + offset;
    }
  }
  return n;
}

static gpointer
receiver_thread (gpointer data)
{
  RudpReceiver *r = data;
  guint8 buf[65536];
  gint64 offset = g_get_monotonic_time () - g_get_real_time ();

  while (!g_atomic_int_get (&r->stop)) {
    gssize n;
    RudpArrival a;

    if (!g_socket_condition_timed_wait (r->socket, G_IO_IN, 50000, NULL,
            NULL))
      continue;
    while ((n = receive_stamped (r->socket, buf, sizeof (buf), offset,
                &a.t_us)) >= 0) {
      a.size = n;
      a.seq = n >= 4 ? GST_READ_UINT16_BE (buf + 2) : 0;
      a.ssrc = n >= 12 ? GST_READ_UINT32_BE (buf + 8) : 0;
      g_mutex_lock (&r->lock);
      g_array_append_val (r->log, a);
      g_mutex_unlock (&r->lock);
    }
  }
  return NULL;
}

RudpReceiver *
rudp_receiver_start (void)
{
  RudpReceiver *r = g_new0 (RudpReceiver, 1);

  r->socket = bind_loopback (&r->port);
  g_socket_set_blocking (r->socket, FALSE);
  g_mutex_init (&r->lock);
  r->log = g_array_new (FALSE, FALSE, sizeof (RudpArrival));
  r->thread = g_thread_new ("test-receiver", receiver_thread, r);
  return r;
}

void
rudp_receiver_stop (RudpReceiver * r)
{
  g_atomic_int_set (&r->stop, 1);
  g_thread_join (r->thread);
  g_object_unref (r->socket);
  g_array_free (r->log, TRUE);
  g_mutex_clear (&r->lock);
  g_free (r);
}

gint64
rudp_receiver_first (RudpReceiver * r, guint32 ssrc)
{
  gint64 t = -1;
  guint i;

  g_mutex_lock (&r->lock);
  for (i = 0; i < r->log->len; i++) {
    RudpArrival *a = &g_array_index (r->log, RudpArrival, i);

    if (!ssrc || a->ssrc == ssrc) {
      t = a->t_us;
      break;
    }
  }
  g_mutex_unlock (&r->lock);
  return t;
}

GArray *
rudp_receiver_arrivals (RudpReceiver * r, guint32 ssrc, gint64 from_us,
    gint64 to_us)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (RudpArrival));
  guint i;

  g_mutex_lock (&r->lock);
  for (i = 0; i < r->log->len; i++) {
    RudpArrival *a = &g_array_index (r->log, RudpArrival, i);

    if ((!ssrc || a->ssrc == ssrc) && a->t_us >= from_us && a->t_us < to_us)
      g_array_append_val (out, *a);
  }
  g_mutex_unlock (&r->lock);
  return out;
}

/* diagnosis: RUDP_TEST_DUMP=prefix writes the arrival log to prefix.PID */
void
rudp_receiver_dump (RudpReceiver * r)
{
  const gchar *prefix = g_getenv ("RUDP_TEST_DUMP");
  gchar *path;
  FILE *f;
  guint i;

  if (!prefix)
    return;
  path = g_strdup_printf ("%s.%d", prefix, (int) getpid ());
  f = fopen (path, "w");
  g_free (path);
  if (!f)
    return;
  g_mutex_lock (&r->lock);
  for (i = 0; i < r->log->len; i++) {
    RudpArrival *a = &g_array_index (r->log, RudpArrival, i);

    fprintf (f, "%" G_GINT64_FORMAT " %08x %u %u\n", a->t_us, a->ssrc, a->seq,
        a->size);
  }
  g_mutex_unlock (&r->lock);
  fclose (f);
}

GstBuffer *
rudp_make_packet (guint32 ssrc, guint16 seq, gsize size)
{
  GstBuffer *buf = gst_rtp_buffer_new_allocate (size - 12, 0, 0);
  GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;

  gst_rtp_buffer_map (buf, GST_MAP_WRITE, &rtp);
  gst_rtp_buffer_set_ssrc (&rtp, ssrc);
  gst_rtp_buffer_set_seq (&rtp, seq);
  gst_rtp_buffer_set_payload_type (&rtp, 96);
  gst_rtp_buffer_set_timestamp (&rtp, seq * 90);
  memset (gst_rtp_buffer_get_payload (&rtp), 0x5a, size - 12);
  gst_rtp_buffer_unmap (&rtp);
  return buf;
}

static gpointer
relay_thread (gpointer data)
{
  RudpRelay *r = data;
  GInetAddress *lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *dest = g_inet_socket_address_new (lo, r->dest_port);
  guint8 buf[65536];

  g_object_unref (lo);
  while (!g_atomic_int_get (&r->stop)) {
    GSocketAddress *from = NULL;
    gssize n;

    if (!g_socket_condition_timed_wait (r->socket, G_IO_IN, 50000, NULL,
            NULL))
      continue;
    while ((n = g_socket_receive_from (r->socket, &from, (gchar *) buf,
                sizeof (buf), NULL, NULL)) >= 0) {
      guint16 fport = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS
          (from));

      if (fport == r->dest_port) {
        /* feedback: back to the sender */
        if (r->sender)
          g_socket_send_to (r->socket, r->sender, (gchar *) buf, n, NULL,
              NULL);
      } else {
        if (!r->sender)
          r->sender = g_object_ref (from);
        if (g_atomic_int_get (&r->drop))
          g_atomic_int_inc (&r->dropped);
        else
          g_socket_send_to (r->socket, dest, (gchar *) buf, n, NULL, NULL);
      }
      g_clear_object (&from);
    }
  }
  g_object_unref (dest);
  return NULL;
}

RudpRelay *
rudp_relay_start (guint16 dest_port)
{
  RudpRelay *r = g_new0 (RudpRelay, 1);

  r->socket = bind_loopback (&r->port);
  g_socket_set_blocking (r->socket, FALSE);
  r->dest_port = dest_port;
  r->thread = g_thread_new ("test-relay", relay_thread, r);
  return r;
}

void
rudp_relay_stop (RudpRelay * r)
{
  g_atomic_int_set (&r->stop, 1);
  g_thread_join (r->thread);
  g_clear_object (&r->sender);
  g_object_unref (r->socket);
  g_free (r);
}

guint
rudp_count_threads (const gchar * name)
{
  GDir *d = g_dir_open ("/proc/self/task", 0, NULL);
  const gchar *e;
  guint n = 0;

  while (d && (e = g_dir_read_name (d))) {
    gchar *path, *comm = NULL;

    if (!name) {
      n++;
      continue;
    }
    path = g_strdup_printf ("/proc/self/task/%s/comm", e);
    if (g_file_get_contents (path, &comm, NULL, NULL)) {
      g_strchomp (comm);
      if (strcmp (comm, name) == 0)
        n++;
    }
    g_free (comm);
    g_free (path);
  }
  if (d)
    g_dir_close (d);
  return n;
}

gboolean
rudp_boost_priority (void)
{
  /* Linux: the calling thread only; threads created later inherit it */
  if (setpriority (PRIO_PROCESS, 0, -10) == 0)
    return TRUE;
  GST_INFO ("cannot raise the priority (not root?): timing checks may "
      "suffer on a loaded machine");
  return FALSE;
}
