/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — CPU cost of ctcpsink's event polling for many connections
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 *
 * Opens N loopback TCP connections (default 100) with data in flight and
 * measures, on this thread's CPU clock, one poll as ctcpsink does it:
 * getsockopt(TCP_INFO) + SIOCOUTQ + SIOCOUTQNSD, then the sans-IO core
 * (GstCtcpSender, a 100 kB/s cTCP flow): handle_tcp_info (controller,
 * schedule, event detector), poll and next_wakeup. Side by side, the cost of what a sender does anyway:
 * send() of one 1448-byte packet on the same sockets. Prints the ratio
 * and the CPU share of polling every 1, 5 and 20 ms (RTT/4 of 4, 20 and
 * 80 ms) for all N connections.
 *
 *   bench-ctcp-poll [N] [rounds]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <gst/ctcp/ctcp.h>

static double
cpu_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 100;
  int rounds = argc > 2 ? atoi (argv[2]) : 2000;
  int lfd, *c, *s, i, r;
  struct sockaddr_in a = { 0 };
  socklen_t al = sizeof (a);
  GstCtcpSender **core;
  GstCtcpSenderConfig cfg = { TRUE, 10 * GST_SECOND, 0.05, 8 * GST_SECOND,
    800000, 4.0
  };
  guint8 info[256], pkt[1448];
  double t0, t_poll, t_send;
  guint64 sink = 0;

  memset (pkt, 0x55, sizeof (pkt));
  lfd = socket (AF_INET, SOCK_STREAM, 0);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  if (bind (lfd, (struct sockaddr *) &a, sizeof (a)) < 0 || listen (lfd, n) < 0
      || getsockname (lfd, (struct sockaddr *) &a, &al) < 0) {
    perror ("listen");
    return 1;
  }
  c = g_new (int, n);
  s = g_new (int, n);
  core = g_new0 (GstCtcpSender *, n);
  for (i = 0; i < n; i++) {
    c[i] = socket (AF_INET, SOCK_STREAM, 0);
    if (connect (c[i], (struct sockaddr *) &a, sizeof (a)) < 0) {
      perror ("connect");
      return 1;
    }
    s[i] = accept (lfd, NULL, NULL);
    core[i] = gst_ctcp_sender_new (&cfg);
    /* data to send, so poll has work to judge */
    gst_ctcp_sender_handle_buffer (core[i], GST_CLOCK_TIME_NONE,
        GST_CLOCK_TIME_NONE, 1 << 20, 0);
  }

  /* polls, as ctcpsink's sender thread does per wakeup */
  t0 = cpu_now ();
  for (r = 0; r < rounds; r++) {
    for (i = 0; i < n; i++) {
      socklen_t len = sizeof (info);
      int outq = 0, nsd = 0;
      GstCtcpTcpInfo ti = { 0, };
      GstCtcpSenderOutput out;
      GstClockTime now = (guint64) r * GST_MSECOND;
      guint32 v32;

      getsockopt (c[i], IPPROTO_TCP, TCP_INFO, info, &len);
      ioctl (c[i], SIOCOUTQ, &outq);
      ioctl (c[i], SIOCOUTQNSD, &nsd);
      ti.ca_state = info[1];
      ti.retransmits = info[2];
      memcpy (&v32, info + 16, 4);
      ti.snd_mss = v32;
      memcpy (&v32, info + 68, 4);
      ti.rtt_us = v32;
      memcpy (&v32, info + 100, 4);
      ti.total_retrans = v32;
      gst_ctcp_sender_handle_tcp_info (core[i], &ti, MAX (outq, 0),
          outq > nsd ? outq - nsd : 0, now);
      gst_ctcp_sender_poll (core[i], now, &out);
      sink += out.write + out.n_events +
          gst_ctcp_sender_next_wakeup (core[i], now) / GST_MSECOND;
    }
  }
  t_poll = (cpu_now () - t0) / ((double) rounds * n);

  /* side by side: sending one packet on the same sockets (receivers
   * drained now and then so the buffers never fill) */
  t0 = cpu_now ();
  for (r = 0; r < rounds / 10; r++) {
    for (i = 0; i < n; i++)
      sink += send (c[i], pkt, sizeof (pkt), MSG_DONTWAIT) > 0;
    if (r % 16 == 15) {
      double pause = cpu_now ();
      for (i = 0; i < n; i++)
        while (recv (s[i], info, sizeof (info), MSG_DONTWAIT) > 0);
      t0 += cpu_now () - pause;
    }
  }
  t_send = (cpu_now () - t0) / ((double) (rounds / 10) * n);

  printf ("connections: %d, rounds: %d (checksum %" G_GUINT64_FORMAT ")\n",
      n, rounds, sink);
  printf ("one poll (TCP_INFO + 2 ioctls + core: info, poll, wakeup): %.2f us\n",
      t_poll * 1e6);
  printf ("one send() of 1448 bytes:                                  %.2f us\n",
      t_send * 1e6);
  printf ("ratio poll / send: %.2f\n", t_poll / t_send);
  printf ("CPU share of polling %d connections every 1 / 5 / 20 ms: "
      "%.1f %% / %.2f %% / %.2f %% of one core\n", n,
      100 * n * t_poll / 1e-3, 100 * n * t_poll / 5e-3,
      100 * n * t_poll / 20e-3);
  printf ("(a 100 kB/s flow sends ~69 packets/s; polling at 20 ms costs "
      "as much as %.0f of those sends per second)\n", 50 * t_poll / t_send);
  for (i = 0; i < n; i++)
    gst_ctcp_sender_free (core[i]);
  g_free (core);
  return 0;
}
