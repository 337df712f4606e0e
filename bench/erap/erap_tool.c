/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — bench helper for testbed experiments: runs one ERAP sender or
 * receiver and logs what the scheduler sees, with CLOCK_MONOTONIC times.
 *
 *   bench-erap-tool send HOST PORT FILE [-d SECONDS] [-c CSV] [-r RATE]
 *       [-l LINGER_SECONDS] [-o "PROP=VALUE ..."] [-b BLOCKSIZE]
 *       [-p ON,OFF]
 *       filesrc ! erapsink; every 50 ms a CSV row: t_s, rate_bps, srtt_ms,
 *       packets_sent, packets_lost, loss_reactions, retransmitted,
 *       bytes_acked, bytes_sent, used_bps, ticks, idle_wakeups; stops at
 *       EOS (all acknowledged) or after -d seconds; -o adds erapsink
 *       properties (e.g. "congestion-control=libra", "protocol=rap");
 *       -b reads the file in blocks of that size (default 1392); -p
 *       pauses the application: ON seconds of data, then OFF seconds of
 *       nothing, and so on (from the first buffer).
 *   bench-erap-tool recv PORT FILE [-t SECONDS] [-o "PROP=VALUE ..."]
 *       [-c CSV]
 *       erapsrc ! filesink; exits at the sender's end of stream; -c logs
 *       every 50 ms: t_s, bytes, packets_received, acks_sent,
 *       ack_datagrams.
 * The last line on stdout is a summary, key=value (the sender's includes
 * its process CPU seconds, cpu_s).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <gst/gst.h>

static gdouble
cpu_seconds (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
      ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* -p ON,OFF: the application's pauses, as a probe on filesrc's pad that
 * holds each buffer falling into an OFF phase until it ends */
typedef struct {
  gdouble on, off;
  gint64 t0;
} Pauses;

static GstPadProbeReturn
pause_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Pauses *p = data;
  gint64 now = g_get_monotonic_time ();
  gdouble t, cycle = p->on + p->off, in;

  if (p->t0 == 0)
    p->t0 = now;
  t = (now - p->t0) / 1e6;
  in = t - cycle * (gint64) (t / cycle);
  if (in >= p->on)
    g_usleep ((gulong) ((cycle - in) * 1e6));
  return GST_PAD_PROBE_OK;
}

static gboolean
wait_done (GstElement * p, gdouble limit_s, GstElement * sink, FILE * csv,
    GstElement * src, FILE * rcsv)
{
  GstBus *bus = gst_element_get_bus (p);
  gint64 t0 = g_get_monotonic_time ();
  gboolean eos = FALSE;

  for (;;) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, 50 * GST_MSECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
    gint64 now = g_get_monotonic_time ();

    if (m) {
      if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS) {
        eos = TRUE;
      } else {
        GError *e;
        if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR)
          gst_message_parse_error (m, &e, NULL);
        else
          gst_message_parse_warning (m, &e, NULL);
        fprintf (stderr, "%s: %s\n", GST_MESSAGE_TYPE_NAME (m), e->message);
        if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR)
          eos = TRUE;
        g_error_free (e);
      }
      gst_message_unref (m);
    }
    if (sink && csv) {
      GstStructure *s;
      guint64 rate, srtt, sent, lost, react, rtx, acked, bsent, used, ticks,
          idle;

      g_object_get (sink, "stats", &s, NULL);
      gst_structure_get (s, "rate", G_TYPE_UINT64, &rate, "srtt",
          G_TYPE_UINT64, &srtt, "packets-sent", G_TYPE_UINT64, &sent,
          "packets-lost", G_TYPE_UINT64, &lost, "loss-reactions",
          G_TYPE_UINT64, &react, "packets-retransmitted", G_TYPE_UINT64,
          &rtx, "bytes-acked", G_TYPE_UINT64, &acked, "bytes-sent",
          G_TYPE_UINT64, &bsent, "used-bandwidth", G_TYPE_UINT64, &used,
          "ticks", G_TYPE_UINT64, &ticks, "idle-wakeups", G_TYPE_UINT64,
          &idle, NULL);
      gst_structure_free (s);
      fprintf (csv, "%.3f,%" G_GUINT64_FORMAT ",%.3f,%" G_GUINT64_FORMAT ",%"
          G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%"
          G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%"
          G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT "\n", now / 1e6, rate,
          srtt / 1e6, sent, lost, react, rtx, acked, bsent, used, ticks,
          idle);
    }
    if (src && rcsv) {
      GstStructure *s;
      guint64 bytes = 0, pkts = 0, acks = 0, dgrams = 0;

      g_object_get (src, "stats", &s, NULL);
      gst_structure_get (s, "bytes", G_TYPE_UINT64, &bytes,
          "packets-received", G_TYPE_UINT64, &pkts, "acks-sent",
          G_TYPE_UINT64, &acks, "ack-datagrams", G_TYPE_UINT64, &dgrams,
          NULL);
      gst_structure_free (s);
      fprintf (rcsv, "%.3f,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%"
          G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT "\n", now / 1e6, bytes,
          pkts, acks, dgrams);
    }
    if (eos)
      break;
    if (limit_s > 0 && (now - t0) / 1e6 >= limit_s)
      break;
  }
  gst_object_unref (bus);
  return eos;
}

int
main (int argc, char **argv)
{
  GstElement *p, *e;
  gchar *d;
  gdouble limit = 0;
  const gchar *csvpath = NULL;
  const gchar *extra = "";
  guint64 rate = 1000000;
  gdouble linger = 30;
  guint blocksize = 1392;
  Pauses pauses = { 0, 0, 0 };
  gint i;
  gboolean eos;
  gint64 t0;

  gst_init (&argc, &argv);
  if (argc < 4) {
    fprintf (stderr, "usage: see the source\n");
    return 2;
  }
  for (i = 1; i + 1 < argc; i++) {
    if (!strcmp (argv[i], "-d") || !strcmp (argv[i], "-t"))
      limit = atof (argv[i + 1]);
    else if (!strcmp (argv[i], "-c"))
      csvpath = argv[i + 1];
    else if (!strcmp (argv[i], "-l"))
      linger = atof (argv[i + 1]);
    else if (!strcmp (argv[i], "-r"))
      rate = g_ascii_strtoull (argv[i + 1], NULL, 10);
    else if (!strcmp (argv[i], "-o"))
      extra = argv[i + 1];
    else if (!strcmp (argv[i], "-b"))
      blocksize = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "-p"))
      sscanf (argv[i + 1], "%lf,%lf", &pauses.on, &pauses.off);
  }
  t0 = g_get_monotonic_time ();
  if (!strcmp (argv[1], "send") && argc >= 5) {
    FILE *csv = csvpath ? fopen (csvpath, "w") : NULL;
    GstStructure *s;
    guint64 sent, lost, react, rtx, acked;
    gdouble cap = 0, w = 0;
    guint64 tmo = 0, spur = 0, undone = 0;
    guint pairs = 0;
    guint64 ticks = 0, idle = 0, bsent = 0;

    d = g_strdup_printf ("filesrc name=f location=%s blocksize=%u ! erapsink "
        "name=s host=%s port=%s initial-rate=%" G_GUINT64_FORMAT
        " scheduler-interval=%s linger=%" G_GUINT64_FORMAT " %s", argv[4],
        blocksize, argv[2], argv[3], rate, csv ? "500000000" : "0",
        (guint64) (linger * GST_SECOND), extra);
    p = gst_parse_launch (d, NULL);
    g_free (d);
    e = gst_bin_get_by_name (GST_BIN (p), "s");
    if (pauses.on > 0 && pauses.off > 0) {
      GstElement *f = gst_bin_get_by_name (GST_BIN (p), "f");
      GstPad *pad = gst_element_get_static_pad (f, "src");

      gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, pause_probe,
          &pauses, NULL);
      gst_object_unref (pad);
      gst_object_unref (f);
    }
    if (csv)
      fprintf (csv, "t_s,rate_bps,srtt_ms,packets_sent,packets_lost,"
          "loss_reactions,retransmitted,bytes_acked,bytes_sent,used_bps,"
          "ticks,idle_wakeups\n");
    gst_element_set_state (p, GST_STATE_PLAYING);
    eos = wait_done (p, limit, e, csv, NULL, NULL);
    g_object_get (e, "stats", &s, NULL);
    gst_structure_get (s, "packets-sent", G_TYPE_UINT64, &sent,
        "packets-lost", G_TYPE_UINT64, &lost, "loss-reactions", G_TYPE_UINT64,
        &react, "packets-retransmitted", G_TYPE_UINT64, &rtx, "bytes-acked",
        G_TYPE_UINT64, &acked, NULL);
    gst_structure_get (s, "capacity-estimate", G_TYPE_DOUBLE, &cap,
        "pair-samples", G_TYPE_UINT, &pairs, "libra-window", G_TYPE_DOUBLE,
        &w, "timeout-losses", G_TYPE_UINT64, &tmo, "spurious-losses",
        G_TYPE_UINT64, &spur, "reactions-undone", G_TYPE_UINT64, &undone,
        NULL);
    gst_structure_get (s, "ticks", G_TYPE_UINT64, &ticks, "idle-wakeups",
        G_TYPE_UINT64, &idle, "bytes-sent", G_TYPE_UINT64, &bsent, NULL);
    gst_structure_free (s);
    printf ("eos=%d seconds=%.3f sent=%" G_GUINT64_FORMAT " lost=%"
        G_GUINT64_FORMAT " reactions=%" G_GUINT64_FORMAT " retransmitted=%"
        G_GUINT64_FORMAT " acked=%" G_GUINT64_FORMAT " capacity_estimate=%.3f"
        " pair_samples=%u window=%.2f timeouts=%" G_GUINT64_FORMAT
        " spurious=%" G_GUINT64_FORMAT " undone=%" G_GUINT64_FORMAT
        " ticks=%" G_GUINT64_FORMAT
        " idle_wakeups=%" G_GUINT64_FORMAT " bytes_sent=%" G_GUINT64_FORMAT
        " cpu_s=%.3f\n", eos,
        (g_get_monotonic_time () - t0) / 1e6, sent, lost, react, rtx, acked,
        cap / 1e6 /* Mbit/s, as the experiments read it */ , pairs, w, tmo,
        spur, undone, ticks, idle, bsent, cpu_seconds ());
    if (csv)
      fclose (csv);
  } else if (!strcmp (argv[1], "recv")) {
    GstStructure *s;
    guint64 bytes, dups, acks = 0, dgrams = 0;
    FILE *rcsv = csvpath ? fopen (csvpath, "w") : NULL;

    d = g_strdup_printf ("erapsrc name=r port=%s %s ! filesink location=%s",
        argv[2], extra, argv[3]);
    p = gst_parse_launch (d, NULL);
    g_free (d);
    e = gst_bin_get_by_name (GST_BIN (p), "r");
    if (rcsv)
      fprintf (rcsv, "t_s,bytes,packets_received,acks_sent,ack_datagrams\n");
    gst_element_set_state (p, GST_STATE_PLAYING);
    eos = wait_done (p, limit, NULL, NULL, e, rcsv);
    g_object_get (e, "stats", &s, NULL);
    gst_structure_get (s, "bytes", G_TYPE_UINT64, &bytes, "duplicates",
        G_TYPE_UINT64, &dups, "acks-sent", G_TYPE_UINT64, &acks,
        "ack-datagrams", G_TYPE_UINT64, &dgrams, NULL);
    gst_structure_free (s);
    printf ("eos=%d seconds=%.3f bytes=%" G_GUINT64_FORMAT " duplicates=%"
        G_GUINT64_FORMAT " acks=%" G_GUINT64_FORMAT " ack_datagrams=%"
        G_GUINT64_FORMAT "\n", eos, (g_get_monotonic_time () - t0) / 1e6,
        bytes, dups, acks, dgrams);
    if (rcsv)
      fclose (rcsv);
  } else {
    return 2;
  }
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (e);
  gst_object_unref (p);
  return 0;
}
