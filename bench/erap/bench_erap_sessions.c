/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — bench: many concurrent low-rate erapsink sessions in one
 * process. For N = 1, 100, 1,000, 10,000 sessions (one bind port), each
 * sending one 1000-byte buffer per second, reports the process's thread
 * count, RSS and CPU time per packet. The receivers (the ERAP core on N
 * sockets, one epoll loop) run in a child process so they are not counted.
 *
 * With -p rap the sessions are the RAP baseline (erapsink protocol=rap:
 * a socket and an ACK thread per session, 24-byte headers, RAP's timers
 * running between buffers) and the receivers answer with RAP's ACKs; -r
 * sets the buffers per second per session (default 1), -s their size.
 * -c prints one CSV line per N instead of the table: protocol, n,
 * threads_added, rss_mb, cpu_us_per_packet, cpu_percent, packets.
 *
 * -W sets the warm-up before the measured window (default 3 s).
 *
 * Usage: bench-erap-sessions [-w SECONDS] [-W SECONDS] [-p erap|rap] [-r RATE]
 *        [-s SIZE] [-c] [N ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <gst/gst.h>
#include <gst/erap/erap.h>

/* ------------------------------------------------------------------ */
/* receiver process */

static GstErapProtocol protocol = GST_ERAP_PROTOCOL_ERAP;
static guint per_second = 1, buf_size = 1000, warmup = 3;
static gboolean csv_out = FALSE;

static void
receiver_main (guint n, int report_fd, int stop_fd)
{
  int ep = epoll_create1 (0);
  int *fds = calloc (n, sizeof (int));
  GstErapReceiver **rx = calloc (n, sizeof (gpointer));
  guint i;
  static guint8 buf[70000];

  for (i = 0; i < n; i++) {
    struct sockaddr_in a = { 0 };
    socklen_t al = sizeof (a);
    struct epoll_event ev = { 0 };
    GstErapReceiverConfig rc;
    guint16 port;

    fds[i] = socket (AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    if (bind (fds[i], (struct sockaddr *) &a, sizeof (a)) < 0)
      _exit (2);
    getsockname (fds[i], (struct sockaddr *) &a, &al);
    port = ntohs (a.sin_port);
    gst_erap_receiver_config_init (&rc);
    rc.port = port;
    rc.protocol = protocol;
    rx[i] = gst_erap_receiver_new (&rc);
    ev.events = EPOLLIN;
    ev.data.u32 = i;
    epoll_ctl (ep, EPOLL_CTL_ADD, fds[i], &ev);
    if (write (report_fd, &port, sizeof (port)) != sizeof (port))
      _exit (3);
  }
  {
    struct epoll_event ev = { 0 };
    ev.events = EPOLLIN;
    ev.data.u32 = G_MAXUINT32;
    epoll_ctl (ep, EPOLL_CTL_ADD, stop_fd, &ev);
  }
  for (;;) {
    struct epoll_event evs[64];
    int k, ne = epoll_wait (ep, evs, 64, -1);

    for (k = 0; k < ne; k++) {
      guint s = evs[k].data.u32;
      if (s == G_MAXUINT32)
        _exit (0);
      for (;;) {
        struct sockaddr_in from;
        socklen_t fl = sizeof (from);
        ssize_t r = recvfrom (fds[s], buf, sizeof (buf), 0,
            (struct sockaddr *) &from, &fl);
        guint8 ack[GST_ERAP_ACK_MAX_SIZE];
        gsize ack_len;
        GBytes *pkt, *m;

        if (r < 0)
          break;
        pkt = g_bytes_new (buf, r);
        gst_erap_receiver_handle_data (rx[s], pkt, ack, &ack_len);
        g_bytes_unref (pkt);
        while ((m = gst_erap_receiver_poll (rx[s], NULL)))
          g_bytes_unref (m);
        if (ack_len)
          sendto (fds[s], ack, ack_len, 0, (struct sockaddr *) &from, fl);
      }
    }
  }
}

/* ------------------------------------------------------------------ */
/* sender process */

static guint
count_threads (void)
{
  GDir *d = g_dir_open ("/proc/self/task", 0, NULL);
  guint n = 0;

  while (g_dir_read_name (d))
    n++;
  g_dir_close (d);
  return n;
}

static guint64
rss_kb (void)
{
  gchar *s = NULL, *p;
  guint64 v = 0;

  g_file_get_contents ("/proc/self/status", &s, NULL, NULL);
  if (s && (p = strstr (s, "VmRSS:")))
    v = g_ascii_strtoull (p + 6, NULL, 10);
  g_free (s);
  return v;
}

static gdouble
cpu_now (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
      ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

typedef struct {
  GstElement *sink;
  GstPad *pad;                  /* our src pad feeding the sink */
} Session;

static guint64
total_packets (Session * s, guint n)
{
  guint64 t = 0, v;
  guint i;

  for (i = 0; i < n; i++) {
    GstStructure *st;
    g_object_get (s[i].sink, "stats", &st, NULL);
    gst_structure_get_uint64 (st, "packets-sent", &v);
    t += v;
    gst_structure_free (st);
  }
  return t;
}

static void
run (guint n, guint window, guint64 base_rss, guint base_threads)
{
  int rep[2], stop[2];
  pid_t pid;
  Session *s = g_new0 (Session, n);
  guint i, cursor = 0;
  GstSegment seg;
  GstBuffer *payload;
  gint64 t0, next;

  guint64 p0, p1;
  gdouble c0, c1;

  if (pipe (rep) < 0 || pipe (stop) < 0)
    exit (1);
  pid = fork ();
  if (pid == 0) {
    close (rep[0]);
    close (stop[1]);
    receiver_main (n, rep[1], stop[0]);
  }
  close (rep[1]);
  close (stop[0]);

  gst_segment_init (&seg, GST_FORMAT_BYTES);
  payload = gst_buffer_new_allocate (NULL, buf_size, NULL);
  gst_buffer_memset (payload, 0, 0x5a, buf_size);
  for (i = 0; i < n; i++) {
    guint16 port;
    GstPad *sinkpad;

    if (read (rep[0], &port, sizeof (port)) != sizeof (port))
      exit (1);
    s[i].sink = gst_element_factory_make ("erapsink", NULL);
    g_object_set (s[i].sink, "host", "127.0.0.1", "port", (guint) port,
        "async", FALSE, "scheduler-interval", (guint64) 0, NULL);
    gst_util_set_object_arg (G_OBJECT (s[i].sink), "protocol",
        protocol == GST_ERAP_PROTOCOL_RAP ? "rap" : "erap");
    s[i].pad = gst_pad_new ("src", GST_PAD_SRC);
    sinkpad = gst_element_get_static_pad (s[i].sink, "sink");
    gst_pad_link (s[i].pad, sinkpad);
    gst_object_unref (sinkpad);
    gst_pad_set_active (s[i].pad, TRUE);
    if (gst_element_set_state (s[i].sink, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE)
      exit (1);
    gst_pad_push_event (s[i].pad, gst_event_new_stream_start ("erap"));
    gst_pad_push_event (s[i].pad, gst_event_new_segment (&seg));
  }

  /* each session sends per_second buffers per second, spread evenly */
  t0 = g_get_monotonic_time ();
  next = t0;
  p0 = 0;
  c0 = 0;
  for (;;) {
    gint64 now = g_get_monotonic_time ();
    guint due = (guint) ((now - t0) * (gint64) n * per_second /
        G_USEC_PER_SEC);

    while (cursor < due) {
      gst_pad_push (s[cursor % n].pad, gst_buffer_ref (payload));
      cursor++;
    }
    if (p0 == 0 && now - t0 >= (gint64) warmup * G_USEC_PER_SEC) {
      p0 = total_packets (s, n) + 1;
      c0 = cpu_now ();
    }
    if (now - t0 >= ((gint64) warmup + window) * G_USEC_PER_SEC)
      break;
    /* sleep until the next push is due (no polling of our own) */
    next = t0 + (gint64) (cursor + 1) * G_USEC_PER_SEC / (n * per_second);
    if (p0 == 0)
      next = MIN (next, t0 + (gint64) warmup * G_USEC_PER_SEC);
    next = MIN (next, t0 + ((gint64) warmup + window) * G_USEC_PER_SEC);
    if (next > now)
      g_usleep (next - now);
  }
  c1 = cpu_now ();
  p1 = total_packets (s, n);
  if (csv_out)
    printf ("%s,%u,%u,%.1f,%.2f,%.2f,%" G_GUINT64_FORMAT "\n",
        protocol == GST_ERAP_PROTOCOL_RAP ? "rap" : "erap", n,
        count_threads () - base_threads, rss_kb () / 1024.0,
        (c1 - c0) / (p1 - p0 + 1) * 1e6, (c1 - c0) / window * 100,
        p1 - p0 + 1);
  else
    printf ("%6u %8u %10.1f %10.1f %12.2f %10" G_GUINT64_FORMAT "\n", n,
        count_threads () - base_threads, rss_kb () / 1024.0,
        ((gdouble) rss_kb () - base_rss) / 1024.0,
        (c1 - c0) / (p1 - p0 + 1) * 1e6, p1 - p0 + 1);
  fflush (stdout);

  for (i = 0; i < n; i++) {
    gst_element_set_state (s[i].sink, GST_STATE_NULL);
    gst_object_unref (s[i].sink);
    gst_object_unref (s[i].pad);
  }
  gst_buffer_unref (payload);
  g_free (s);
  close (stop[1]);
  close (rep[0]);
  waitpid (pid, NULL, 0);
}

int
main (int argc, char **argv)
{
  guint window = 10, ns[16], nn = 0, i;
  guint64 base_rss;
  guint base_threads;
  struct rlimit rl;

  for (i = 1; i < (guint) argc; i++) {
    if (!strcmp (argv[i], "-w") && i + 1 < (guint) argc)
      window = atoi (argv[++i]);
    else if (!strcmp (argv[i], "-p") && i + 1 < (guint) argc)
      protocol = !strcmp (argv[++i], "rap") ? GST_ERAP_PROTOCOL_RAP :
          GST_ERAP_PROTOCOL_ERAP;
    else if (!strcmp (argv[i], "-r") && i + 1 < (guint) argc)
      per_second = atoi (argv[++i]);
    else if (!strcmp (argv[i], "-s") && i + 1 < (guint) argc)
      buf_size = atoi (argv[++i]);
    else if (!strcmp (argv[i], "-W") && i + 1 < (guint) argc)
      warmup = atoi (argv[++i]);
    else if (!strcmp (argv[i], "-c"))
      csv_out = TRUE;
    else if (nn < G_N_ELEMENTS (ns))
      ns[nn++] = atoi (argv[i]);
  }
  per_second = MAX (per_second, 1);
  buf_size = MAX (buf_size, 1);
  if (nn == 0) {
    ns[0] = 1;
    ns[1] = 100;
    ns[2] = 1000;
    ns[3] = 10000;
    nn = 4;
  }
  /* 10,000 receiver sockets */
  getrlimit (RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit (RLIMIT_NOFILE, &rl);
  gst_init (&argc, &argv);
  {
    /* load the plugin and the clock thread before the baseline */
    GstElement *e = gst_element_factory_make ("erapsink", NULL);
    if (!e) {
      fprintf (stderr, "no erapsink (GST_PLUGIN_PATH_1_0?)\n");
      return 1;
    }
    gst_object_unref (e);
  }
  base_rss = rss_kb ();
  base_threads = count_threads ();
  if (!csv_out) {
    printf ("# %s; %u s windows after %u s warm-up; %u x %u-byte buffer per "
        "session per second; baseline %u threads, RSS %.1f MB\n",
        protocol == GST_ERAP_PROTOCOL_RAP ? "RAP baseline" : "ERAP", window,
        warmup, per_second, buf_size, base_threads, base_rss / 1024.0);
    printf ("%6s %8s %10s %10s %12s %10s\n", "N", "+threads", "RSS MB",
        "+RSS MB", "CPU us/pkt", "packets");
  }
  for (i = 0; i < nn; i++)
    run (ns[i], window, base_rss, base_threads);
  return 0;
}
