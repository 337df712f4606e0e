/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — bench: loopback goodput and CPU per GB of erapsink->erapsrc,
 * srtsink->srtsrc and tcpclientsink->tcpserversrc, with the same buffers
 * (filesrc of one file, same blocksize), measured one after the other in
 * one run. CPU is the whole process (sender and receiver pipelines both
 * run here), from getrusage.
 *
 * Usage: bench-erap-transports [-s MB] [-b BLOCKSIZE] [-r RUNS] [-p US]
 *   [-m MBIT/S] [-t erap,srt,tcp,erap-enc,srt-enc]
 *   erap-enc and srt-enc: the same with a passphrase (ERAP: AES-256-GCM on
 *          data and ACKs; SRT: pbkeylen=32, AES-256-CTR on its payloads).
 *   -p US: sleep US microseconds per buffer (identity sleep-time) in every
 *          sender.
 *   -m MBIT/S: cap erap (max-rate) and srt (maxbw) at this rate; without
 *          it erap is unbounded and srt runs at its live-mode ceiling of
 *          1 Gbit/s. tcp is never capped.
 *
 * SRT (live mode, what srtsink is for) needs its sender paced: pushed
 * faster than its receiver buffer (8192 packets, 10.8 MB of 1316-byte
 * payloads) drains within the latency, the receiver advertises a zero
 * window, and libsrt 1.5.1 sends no new ACK once the application has read
 * the buffer empty, so the sender waits forever (the stall after 10.8 MB).
 * Its own pacing (maxbw) with a latency of 20 ms keeps rate x latency far
 * below the buffer; tlpktdrop=0 makes it reliable like the others.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <glib/gstdio.h>
#include <gst/gst.h>

typedef struct {
  GMutex lock;
  GCond cond;
  guint64 bytes, want;
  guint buffers;
  gint64 last_t;                /* time and CPU when data last arrived */
  gdouble last_cpu;
} Count;

static gdouble cpu_now (void);

static GstPadProbeReturn
count_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Count *c = data;
  GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER (info);

  g_mutex_lock (&c->lock);
  c->bytes += gst_buffer_get_size (b);
  if (c->bytes >= c->want || (c->buffers++ & 63) == 0) {
    c->last_t = g_get_monotonic_time ();
    c->last_cpu = cpu_now ();
  }
  if (c->bytes >= c->want)
    g_cond_broadcast (&c->cond);
  g_mutex_unlock (&c->lock);
  return GST_PAD_PROBE_OK;
}

static gdouble
cpu_now (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
      ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static gboolean
bus_error (GstElement * p, const gchar * who)
{
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  gboolean err = m != NULL;

  if (m) {
    GError *e;
    gst_message_parse_error (m, &e, NULL);
    g_printerr ("%s error: %s\n", who, e->message);
    g_error_free (e);
    gst_message_unref (m);
  }
  gst_object_unref (bus);
  return err;
}

typedef struct {
  const gchar *name;
  const gchar *rx;              /* %u: port */
  const gchar *tx;              /* the sink, %u: port, %s: rate options */
} Transport;

#define BENCH_PASSPHRASE "bench-passphrase-0123"

static const Transport transports[] = {
  {"erap", "erapsrc port=%u ! fakesink name=out sync=false",
      "erapsink name=esink host=127.0.0.1 port=%u initial-rate=10000000%s"},
  /* live mode without too-late drops (reliable like the others), paced by
   * its own maxbw, latency small against its receiver buffer (above) */
  {"srt", "srtsrc uri=\"srt://127.0.0.1:%u?mode=listener&tlpktdrop=0"
        "&latency=20\" ! fakesink name=out sync=false",
      "srtsink name=ssink uri=\"srt://127.0.0.1:%u?mode=caller&tlpktdrop=0"
        "&latency=20%s\""},
  {"tcp", "tcpserversrc host=127.0.0.1 port=%u ! fakesink name=out "
        "sync=false",
      "tcpclientsink host=127.0.0.1 port=%u%s"},
  /* encrypted: ERAP's AES-256-GCM on data and ACKs (docs/security.md)
   * against SRT's AES-CTR with a 32-byte key (pbkeylen=32) */
  {"erap-enc", "erapsrc port=%u passphrase=" BENCH_PASSPHRASE
        " ! fakesink name=out sync=false",
      "erapsink name=esink host=127.0.0.1 port=%u initial-rate=10000000 "
        "passphrase=" BENCH_PASSPHRASE "%s"},
  {"srt-enc", "srtsrc passphrase=" BENCH_PASSPHRASE " pbkeylen=32 "
        "uri=\"srt://127.0.0.1:%u?mode=listener&tlpktdrop=0"
        "&latency=20\" ! fakesink name=out sync=false",
      "srtsink name=ssink passphrase=" BENCH_PASSPHRASE " pbkeylen=32 "
        "uri=\"srt://127.0.0.1:%u?mode=caller&tlpktdrop=0&latency=20%s\""},
};

static guint cap_mbps;

static gchar *
rate_options (const Transport * t)
{
  if (g_str_has_prefix (t->name, "erap"))
    return cap_mbps ? g_strdup_printf (" max-rate=%" G_GUINT64_FORMAT,
        (guint64) cap_mbps * 1000000) : g_strdup ("");
  if (g_str_has_prefix (t->name, "srt"))
    /* bytes/s; SRT's live-mode ceiling is 1 Gbit/s */
    return g_strdup_printf ("&maxbw=%" G_GUINT64_FORMAT,
        (guint64) (cap_mbps ? cap_mbps : 1000) * 1000000 / 8);
  return g_strdup ("");
}

static gboolean
run_one (const Transport * t, const gchar * file, guint64 size, guint bs,
    guint pace_us, guint port, gdouble * secs, gdouble * cpu, guint64 * got)
{
  gchar *d, *sinkd, *pace;
  GstElement *rx, *tx, *out;
  GstPad *pad;
  Count c = { 0 };
  gint64 t0, deadline;
  gdouble c0;
  gboolean ok = TRUE;

  g_mutex_init (&c.lock);
  g_cond_init (&c.cond);
  c.want = size;
  d = g_strdup_printf (t->rx, port);
  rx = gst_parse_launch (d, NULL);
  g_free (d);
  {
    gchar *ro = rate_options (t);
    sinkd = g_strdup_printf (t->tx, port, ro);
    g_free (ro);
  }
  pace = pace_us ? g_strdup_printf ("identity sleep-time=%u ! ", pace_us) :
      g_strdup ("");
  d = g_strdup_printf ("filesrc location=%s blocksize=%u ! %s%s", file, bs,
      pace, sinkd);
  tx = gst_parse_launch (d, NULL);
  g_free (d);
  g_free (sinkd);
  g_free (pace);
  if (!rx || !tx)
    return FALSE;
  out = gst_bin_get_by_name (GST_BIN (rx), "out");
  pad = gst_element_get_static_pad (out, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_probe, &c, NULL);
  gst_object_unref (pad);
  gst_object_unref (out);

  gst_element_set_state (rx, GST_STATE_PLAYING);
  g_usleep (300000);            /* listeners up */
  c0 = cpu_now ();
  t0 = g_get_monotonic_time ();
  gst_element_set_state (tx, GST_STATE_PLAYING);
  deadline = t0 + 300 * G_USEC_PER_SEC;
  c.last_t = t0;
  c.last_cpu = c0;
  g_mutex_lock (&c.lock);
  while (c.bytes < c.want) {
    if (!g_cond_wait_until (&c.cond, &c.lock, g_get_monotonic_time () +
            G_USEC_PER_SEC / 10)) {
      gint64 now = g_get_monotonic_time ();
      /* stalled for 5 s: count what arrived up to the last arrival */
      if (now > deadline || now - c.last_t > 5 * G_USEC_PER_SEC ||
          bus_error (tx, t->name) || bus_error (rx, t->name)) {
        ok = FALSE;
        break;
      }
    }
  }
  *got = c.bytes;
  *secs = (c.last_t - t0) / 1e6;
  *cpu = c.last_cpu - c0;
  g_mutex_unlock (&c.lock);
  {
    /* header bytes on the wire per payload byte, ERAP against RAP's
     * 24-byte header on data and ACKs, for the same packets */
    GstElement *e = gst_bin_get_by_name (GST_BIN (tx), "esink");
    if (e) {
      GstStructure *st;
      guint64 pk, acks, payload, rtx, reactions, errors;
      gdouble ip = 28;          /* IPv4 + UDP, on both */

      g_object_get (e, "stats", &st, NULL);
      gst_structure_get (st, "packets-sent", G_TYPE_UINT64, &pk,
          "acks-received", G_TYPE_UINT64, &acks, "bytes-acked", G_TYPE_UINT64,
          &payload, "packets-retransmitted", G_TYPE_UINT64, &rtx,
          "loss-reactions", G_TYPE_UINT64, &reactions, "send-errors",
          G_TYPE_UINT64, &errors, NULL);
      gst_structure_free (st);
      gst_object_unref (e);
      printf ("#   erap: %" G_GUINT64_FORMAT " packets (%" G_GUINT64_FORMAT
          " retransmitted, %" G_GUINT64_FORMAT " send errors, %"
          G_GUINT64_FORMAT " loss reactions), %" G_GUINT64_FORMAT
          " ACKs for %" G_GUINT64_FORMAT " payload bytes\n", pk, rtx, errors,
          reactions, acks, payload);
      printf ("#   header bytes per payload byte: erap %.4f, rap %.4f "
          "(rap/erap %.2f); with IP+UDP: erap %.4f, rap %.4f\n",
          (8.0 * pk + 20.0 * acks) / payload,
          (24.0 * pk + 24.0 * acks) / payload,
          (24.0 * pk + 24.0 * acks) / (8.0 * pk + 20.0 * acks),
          ((8 + ip) * pk + (20 + ip) * acks) / payload,
          ((24 + ip) * pk + (24 + ip) * acks) / payload);
      {
        gboolean enc = FALSE;
        guint64 dgrams = 0;

        g_object_get (e, "stats", &st, NULL);
        gst_structure_get (st, "encrypted", G_TYPE_BOOLEAN, &enc,
            "acks-authenticated", G_TYPE_UINT64, &dgrams, NULL);
        gst_structure_free (st);
        if (enc)
          /* sealed: 8 + 24 per data packet, 20 per ACK record plus 36 per
           * sealed ACK datagram */
          printf ("#   sealed: header bytes per payload byte %.4f (plain "
              "erap %.4f): 32 B per data packet, 20 B per ACK record + 36 B "
              "per ACK datagram (%" G_GUINT64_FORMAT " datagrams for %"
              G_GUINT64_FORMAT " records)\n",
              (32.0 * pk + 20.0 * acks + 36.0 * dgrams) / payload,
              (8.0 * pk + 20.0 * acks) / payload, dgrams, acks);
      }
    }
  }
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (tx);
  gst_object_unref (rx);
  return ok;
}

int
main (int argc, char **argv)
{
  guint mb = 200, bs = 1316, runs = 1, pace = 0, i, r;
  const gchar *only = NULL;
  gchar *file;
  FILE *f;
  guint8 *buf;
  guint64 size;
  gdouble gput[G_N_ELEMENTS (transports)] = { 0 };
  gdouble cpugb[G_N_ELEMENTS (transports)] = { 0 };
  gboolean okv[G_N_ELEMENTS (transports)];

  for (i = 1; i + 1 < (guint) argc; i += 2) {
    /* -s MB, -b BLOCKSIZE, -r RUNS, -p US */
    if (!strcmp (argv[i], "-s"))
      mb = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "-b"))
      bs = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "-r"))
      runs = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "-p"))
      pace = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "-t"))
      only = argv[i + 1];
    else if (!strcmp (argv[i], "-m"))
      cap_mbps = atoi (argv[i + 1]);
  }
  gst_init (&argc, &argv);
  size = (guint64) mb * 1000 * 1000;
  file = g_build_filename (g_get_tmp_dir (), "bench-erap-transports.bin",
      NULL);
  f = fopen (file, "wb");
  buf = g_malloc (1 << 20);
  for (i = 0; i < (1 << 20); i++)
    buf[i] = g_random_int ();
  for (i = 0; i < mb; i++)
    fwrite (buf, 1, 1000 * 1000, f);
  fclose (f);
  g_free (buf);

  printf ("# %u MB, %u-byte buffers, loopback, %u run(s), source %s, %s\n",
      mb, bs, runs, pace ? "paced by identity sleep-time" : "unpaced",
      cap_mbps ? "erap and srt capped" : "erap unbounded, srt at 1 Gbit/s");
  if (cap_mbps)
    printf ("# cap %u Mbit/s (erap max-rate, srt maxbw)\n", cap_mbps);
  printf ("%-8s %10s %10s %12s %14s\n", "", "seconds", "Mbit/s",
      "CPU s/GB", "Mbit/s per CPU");
  for (i = 0; i < G_N_ELEMENTS (transports); i++) {
    okv[i] = TRUE;
    if (only && !strstr (only, transports[i].name))
      continue;
    for (r = 0; r < runs; r++) {
      gdouble secs = 1, cpu = 1;
      guint64 got = 0;
      gboolean ok = run_one (&transports[i], file, size, bs, pace,
          41000 + i * 10 + r, &secs, &cpu, &got);

      okv[i] &= ok;
      gput[i] += got * 8 / secs / 1e6 / runs;
      cpugb[i] += cpu / (got / 1e9) / runs;
      printf ("%-8s %10.2f %10.1f %12.2f %14.1f%s\n", transports[i].name,
          secs, got * 8 / secs / 1e6, cpu / (got / 1e9),
          (got * 8 / 1e6) / cpu, ok ? "" : "  (stalled)");
      if (!ok)
        printf ("#   %s delivered %.1f of %u MB, then stalled\n",
            transports[i].name, got / 1e6, mb);
      fflush (stdout);
    }
  }
  /* goodput per CPU second is 8000 / (CPU s per GB) Mbit/s */
  printf ("# goodput per CPU second, erap / srt: %.2f, erap / tcp: %.2f\n",
      cpugb[1] / cpugb[0], cpugb[2] / cpugb[0]);
  printf ("# goodput, erap / srt: %.2f, erap / tcp: %.2f\n",
      gput[0] / gput[1], gput[0] / gput[2]);
  printf ("# encrypted, goodput per CPU second: erap-enc / srt-enc: %.2f, "
      "erap-enc / erap: %.2f, srt-enc / srt: %.2f\n", cpugb[4] / cpugb[3],
      cpugb[0] / cpugb[3], cpugb[1] / cpugb[4]);
  printf ("# encrypted, goodput: erap-enc / srt-enc: %.2f\n",
      gput[3] / gput[4]);
  g_unlink (file);
  g_free (file);
  return okv[0] ? 0 : 1;
}
