/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — bench: CPU per packet of 50 paced flows at an aggregate
 * 10,000 packets/s (250-byte packets, 50 KB/s each), measured side by side:
 *   rudp     50 x (fakesrc ! rudpsink rate=400000): one shared pacing thread
 *   udpsink  50 x (fakesrc datarate=50000 ! udpsink sync=true): a clock
 *            wait per packet in each flow's own streaming thread
 * Both send to one socket in this process, drained by a thread whose CPU is
 * left out. Prints packets/s reached, CPU us per packet, the ratio, and
 * the rudp pacer thread's own share.
 *
 *   bench-rudp-flows [--flows 50] [--seconds 5] [--pps 10000]
 */
#include <gst/gst.h>
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>

static gint stop;
static guint64 received;
static gint drain_tid;

static gpointer
drain (gpointer data)
{
  GSocket *s = data;
  gchar buf[2048];

  drain_tid = syscall (SYS_gettid);
  while (!g_atomic_int_get (&stop)) {
    if (!g_socket_condition_timed_wait (s, G_IO_IN, 50000, NULL, NULL))
      continue;
    while (g_socket_receive (s, buf, sizeof (buf), NULL, NULL) > 0)
      g_atomic_pointer_add (&received, 1);
  }
  return NULL;
}

/* CPU seconds of one thread (utime + stime from /proc), or of all when
 * tid == 0 */
static gdouble
cpu_of (gint tid)
{
  gchar *path, *text = NULL, *p;
  unsigned long ut = 0, st = 0;
  gdouble hz = sysconf (_SC_CLK_TCK);

  if (tid == 0) {
    struct rusage ru;

    getrusage (RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
        ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  }
  path = g_strdup_printf ("/proc/self/task/%d/stat", tid);
  if (g_file_get_contents (path, &text, NULL, NULL)
      && (p = strrchr (text, ')')))
    sscanf (p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
        &ut, &st);
  g_free (text);
  g_free (path);
  return (ut + st) / hz;
}

static gint
tid_named (const gchar * name)
{
  GDir *d = g_dir_open ("/proc/self/task", 0, NULL);
  const gchar *e;
  gint tid = 0;

  while (d && (e = g_dir_read_name (d)) && !tid) {
    gchar *path = g_strdup_printf ("/proc/self/task/%s/comm", e), *comm;

    if (g_file_get_contents (path, &comm, NULL, NULL)) {
      g_strchomp (comm);
      if (strcmp (comm, name) == 0)
        tid = atoi (e);
      g_free (comm);
    }
    g_free (path);
  }
  if (d)
    g_dir_close (d);
  return tid;
}

typedef struct {
  gdouble pps, us_per_packet, pacer_us_per_packet;
} Result;

static Result
run (const gchar * kind, guint flows, guint pps, gdouble seconds, guint port)
{
  GstElement **pipes = g_new0 (GstElement *, flows);
  guint per_flow_rate = pps / flows * 250;
  guint i;
  guint64 r0, r1;
  gdouble c0, c1, d0, d1, p0 = 0, p1 = 0;
  gint pacer = 0;
  Result res;

  for (i = 0; i < flows; i++) {
    gchar *desc;

    if (strcmp (kind, "rudp") == 0)
      desc = g_strdup_printf ("fakesrc sizetype=fixed sizemax=250 "
          "filltype=zero ! application/x-rtp ! rudpsink host=127.0.0.1 "
          "port=%u rate=%u buffer-size=5000", port, per_flow_rate * 8);
    else
      desc = g_strdup_printf ("fakesrc sizetype=fixed sizemax=250 "
          "filltype=zero datarate=%u ! application/x-rtp ! "
          "udpsink host=127.0.0.1 port=%u sync=true", per_flow_rate, port);
    pipes[i] = gst_parse_launch (desc, NULL);
    g_free (desc);
    gst_element_set_state (pipes[i], GST_STATE_PLAYING);
  }
  g_usleep (G_USEC_PER_SEC);    /* settle */
  if (strcmp (kind, "rudp") == 0)
    pacer = tid_named ("rudp-pacer");
  r0 = g_atomic_pointer_get (&received);
  c0 = cpu_of (0);
  d0 = cpu_of (drain_tid);
  if (pacer)
    p0 = cpu_of (pacer);
  g_usleep (seconds * G_USEC_PER_SEC);
  r1 = g_atomic_pointer_get (&received);
  c1 = cpu_of (0);
  d1 = cpu_of (drain_tid);
  if (pacer)
    p1 = cpu_of (pacer);
  for (i = 0; i < flows; i++) {
    gst_element_set_state (pipes[i], GST_STATE_NULL);
    gst_object_unref (pipes[i]);
  }
  g_free (pipes);
  res.pps = (r1 - r0) / seconds;
  res.us_per_packet = ((c1 - c0) - (d1 - d0)) * 1e6 / MAX (1, r1 - r0);
  res.pacer_us_per_packet = (p1 - p0) * 1e6 / MAX (1, r1 - r0);
  return res;
}

int
main (int argc, char **argv)
{
  guint flows = 50, pps = 10000;
  gdouble seconds = 5;
  GSocket *s;
  GInetAddress *lo;
  GSocketAddress *sa;
  guint port;
  GThread *t;
  Result a, b;
  gint i;

  gst_init (&argc, &argv);
  for (i = 1; i + 1 < argc; i += 2) {
    if (!strcmp (argv[i], "--flows"))
      flows = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "--seconds"))
      seconds = atof (argv[i + 1]);
    else if (!strcmp (argv[i], "--pps"))
      pps = atoi (argv[i + 1]);
  }
  s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  sa = g_inet_socket_address_new (lo, 0);
  g_socket_bind (s, sa, FALSE, NULL);
  g_object_unref (sa);
  g_object_unref (lo);
  g_socket_set_option (s, SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20, NULL);
  g_socket_set_blocking (s, FALSE);
  sa = g_socket_get_local_address (s, NULL);
  port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (sa));
  g_object_unref (sa);
  t = g_thread_new ("drain", drain, s);
  while (!g_atomic_int_get (&drain_tid))
    g_usleep (1000);

  a = run ("rudp", flows, pps, seconds, port);
  b = run ("udpsink", flows, pps, seconds, port);
  g_print ("%u flows, target %u packets/s of 250 bytes, %.0f s each\n",
      flows, pps, seconds);
  g_print ("%-8s %10s %14s\n", "sender", "pkt/s", "CPU us/packet");
  g_print ("%-8s %10.0f %14.2f   (pacer thread alone %.2f)\n", "rudp",
      a.pps, a.us_per_packet, a.pacer_us_per_packet);
  g_print ("%-8s %10.0f %14.2f\n", "udpsink", b.pps, b.us_per_packet);
  g_print ("ratio rudp/udpsink CPU per packet: %.2f\n",
      a.us_per_packet / b.us_per_packet);
  g_atomic_int_set (&stop, 1);
  g_thread_join (t);
  g_object_unref (s);
  return 0;
}
