/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — erapsrc tests: a hand-made sender (the codec of the core
 * library on a plain socket) checks ACKs, reordering, duplicates, the
 * in-band end of stream and robustness; plus a 200 MB file transfer. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gio/gio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/erap/erap.h>
#include "elementstats.h"

typedef struct {
  GSocket *sock;
  GSocketAddress *to;
  guint8 ackbuf[2048];          /* the last ACK datagram */
  gsize ack_len, ack_off;
} Tx;

static Tx *
tx_new (guint port, const gchar * from)
{
  Tx *tx = g_new0 (Tx, 1);
  GSocketAddress *a;

  tx->sock = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  a = g_inet_socket_address_new_from_string (from, 0);
  fail_unless (g_socket_bind (tx->sock, a, FALSE, NULL));
  g_object_unref (a);
  tx->to = g_inet_socket_address_new_from_string ("127.0.0.1", port);
  return tx;
}

static void
tx_free (Tx * tx)
{
  g_object_unref (tx->sock);
  g_object_unref (tx->to);
  g_free (tx);
}

static void
tx_send (Tx * tx, guint32 seqno, guint32 appseq, guint8 flags,
    const gchar * payload)
{
  GstErapDataHeader h = { seqno, appseq, flags };
  guint8 buf[2000];
  gsize n = payload ? strlen (payload) : 0;

  gst_erap_data_header_write (&h, buf);
  if (n)
    memcpy (buf + 8, payload, n);
  fail_unless (g_socket_send_to (tx->sock, tx->to, (gchar *) buf, 8 + n,
          NULL, NULL) == (gssize) (8 + n));
}

/* The next ACK record: erapsrc bundles the ACKs of the packets it read
 * together into one datagram, one record per data packet. */
static gboolean
tx_ack (Tx * tx, GstErapAck * ack)
{
  gssize n;

  if (gst_erap_ack_parse_next (tx->ackbuf, tx->ack_len, &tx->ack_off, ack))
    return TRUE;
  fail_unless (tx->ack_off == tx->ack_len, "malformed ACK records");
  if (!g_socket_condition_timed_wait (tx->sock, G_IO_IN, 5 * G_USEC_PER_SEC,
          NULL, NULL))
    return FALSE;
  n = g_socket_receive (tx->sock, (gchar *) tx->ackbuf, sizeof (tx->ackbuf),
      NULL, NULL);
  if (n <= 0)
    return FALSE;
  tx->ack_len = n;
  tx->ack_off = 0;
  return gst_erap_ack_parse_next (tx->ackbuf, tx->ack_len, &tx->ack_off, ack);
}

static void
set_args (GstElement * e, const gchar * args)
{
  gchar **kv = g_strsplit (args ? args : "", " ", -1);
  guint i;

  for (i = 0; kv[i]; i++) {
    gchar **p = g_strsplit (kv[i], "=", 2);
    if (p[0] && p[1])
      gst_util_set_object_arg (G_OBJECT (e), p[0], p[1]);
    g_strfreev (p);
  }
  g_strfreev (kv);
}

static GstHarness *
new_src (guint * port, const gchar * extra)
{
  GstHarness *h = gst_harness_new ("erapsrc");

  set_args (h->element, "port=0 linger=50000000");
  set_args (h->element, extra);
  gst_harness_use_systemclock (h);
  gst_harness_play (h);
  g_object_get (h->element, "port", port, NULL);
  return h;
}

static void
expect_buffer (GstHarness * h, const gchar * content)
{
  GstBuffer *b = gst_harness_pull (h);

  fail_unless (b != NULL);
  fail_unless_equals_int (gst_buffer_get_size (b), strlen (content));
  fail_unless (gst_buffer_memcmp (b, 0, content, strlen (content)) == 0);
  gst_buffer_unref (b);
}

static guint64
stats_u64 (GstElement * e, const gchar * field)
{
  GstStructure *s;
  guint64 v = 0;

  g_object_get (e, "stats", &s, NULL);
  fail_unless (gst_structure_get_uint64 (s, field, &v), "no %s", field);
  gst_structure_free (s);
  return v;
}

static void
wait_for_eos (GstHarness * h)
{
  GstEvent *ev;

  while ((ev = gst_harness_pull_event (h))) {
    GstEventType t = GST_EVENT_TYPE (ev);
    gst_event_unref (ev);
    if (t == GST_EVENT_EOS)
      return;
  }
  fail ("no EOS");
}

#define BE (GST_ERAP_FRAG_BEGIN | GST_ERAP_FRAG_END)

GST_START_TEST (test_properties)
{
  GstElement *e = gst_element_factory_make ("erapsrc", NULL);
  GstStructure *s;
  guint port;
  gchar *addr;

  fail_unless (e != NULL);
  g_object_get (e, "port", &port, "address", &addr, "stats", &s, NULL);
  fail_unless_equals_int (port, 5004);
  fail_unless_equals_string (addr, "0.0.0.0");
  fail_unless (gst_structure_has_name (s, "application/x-erapsrc-stats"));
  fail_unless (gst_structure_has_field_typed (s, "packets-received",
          G_TYPE_UINT64));
  fail_unless (gst_structure_has_field_typed (s, "foreign", G_TYPE_UINT64));
  fail_unless (gst_structure_has_field_typed (s, "kernel-drops",
          G_TYPE_UINT64));
  fail_unless (gst_structure_has_field_typed (s, "buffer-size-granted",
          G_TYPE_INT));
  g_free (addr);
  gst_structure_free (s);
  {
    gint size;

    g_object_get (e, "buffer-size", &size, NULL);
    fail_unless_equals_int (size, 4 * 1024 * 1024);
  }
  gst_object_unref (e);
}

GST_END_TEST;

/* "1 _ _ 4 _ _ 7", then the holes filled, duplicates, in-band EOS */
GST_START_TEST (test_acks_order_and_eos)
{
  guint port;
  GstHarness *h = new_src (&port, NULL);
  Tx *tx = tx_new (port, "127.0.0.1");
  GstErapAck a;
  const gchar *msg[] = { "m0", "m1", "m2", "m3", "m4", "m5", "m6" };
  guint i;

  for (i = 0; i < 7; i += 3) {
    tx_send (tx, i + 1, i, BE, msg[i]);
    fail_unless (tx_ack (tx, &a));
    fail_unless_equals_int (a.seq, i + 1);
  }
  fail_unless_equals_int (a.port, port);
  fail_unless_equals_int (a.last_recv, 7);
  fail_unless_equals_int (a.last_miss, 6);
  fail_unless_equals_int (a.prev_recv, 4);
  expect_buffer (h, "m0");

  /* the missing appSeqs come as new seqnos 8..11, one twice */
  tx_send (tx, 8, 2, BE, msg[2]);
  tx_send (tx, 9, 1, BE, msg[1]);
  tx_send (tx, 10, 1, BE, msg[1]);
  tx_send (tx, 11, 4, GST_ERAP_FRAG_BEGIN, "m");
  tx_send (tx, 12, 5, GST_ERAP_FRAG_END, "45");
  tx_send (tx, 13, 7, 0, NULL);         /* end of stream */
  for (i = 0; i < 6; i++)
    fail_unless (tx_ack (tx, &a));
  fail_unless_equals_int (a.seq, 13);
  expect_buffer (h, "m1");
  expect_buffer (h, "m2");
  expect_buffer (h, "m3");
  expect_buffer (h, "m45");
  expect_buffer (h, "m6");
  /* the ACK of the end got lost: its retransmission is acknowledged too */
  tx_send (tx, 14, 7, 0, NULL);
  fail_unless (tx_ack (tx, &a));
  fail_unless_equals_int (a.seq, 14);
  wait_for_eos (h);
  fail_unless_equals_uint64 (stats_u64 (h->element, "duplicates"), 2);
  fail_unless_equals_uint64 (stats_u64 (h->element, "messages"), 6);
  tx_free (tx);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_robustness)
{
  guint port;
  GstHarness *h = new_src (&port, "max-reorder-bytes=1024");
  Tx *tx = tx_new (port, "127.0.0.1");
  Tx *other = tx_new (port, "127.0.0.1");
  GstErapAck a;
  gchar big[901];
  guint i;

  memset (big, 'x', 900);
  big[900] = 0;
  tx_send (tx, 1, 0, BE, "a");
  fail_unless (tx_ack (tx, &a));
  /* another sender: ignored */
  tx_send (other, 2, 1, BE, "evil");
  /* not ERAP data */
  g_socket_send_to (tx->sock, tx->to, "abc", 3, NULL, NULL);
  /* out of order beyond the reorder memory: dropped unacknowledged */
  tx_send (tx, 3, 2, BE, big);
  fail_unless (tx_ack (tx, &a));
  fail_unless_equals_int (a.seq, 3);
  tx_send (tx, 4, 3, BE, big);
  tx_send (tx, 5, 1, BE, "b");
  fail_unless (tx_ack (tx, &a));
  fail_unless_equals_int (a.seq, 5);    /* no ACK for seq 4 */
  tx_send (tx, 6, 3, BE, big);          /* resent: now it fits */
  fail_unless (tx_ack (tx, &a));
  fail_unless_equals_int (a.seq, 6);
  tx_send (tx, 7, 4, 0, NULL);
  fail_unless (tx_ack (tx, &a));

  expect_buffer (h, "a");
  expect_buffer (h, "b");
  expect_buffer (h, big);
  expect_buffer (h, big);
  wait_for_eos (h);
  fail_unless_equals_uint64 (stats_u64 (h->element, "foreign"), 1);
  fail_unless_equals_uint64 (stats_u64 (h->element, "malformed"), 1);
  fail_unless_equals_uint64 (stats_u64 (h->element, "dropped-no-memory"), 1);
  fail_unless (stats_u64 (h->element, "max-reorder-bytes-seen") <= 1024);
  fail_unless_equals_uint64 (stats_u64 (h->element, "kernel-drops"), 0);
  for (i = 0; i < 1; i++)
    fail_if (g_socket_condition_timed_wait (other->sock, G_IO_IN, 1000, NULL,
            NULL));
  tx_free (tx);
  tx_free (other);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* filesrc ! erapsink -> erapsrc ! filesink moves 200 MB bit-exactly
 * (ERAP_TRANSFER_MB overrides the size). */
static gchar *
file_checksum (const gchar * path)
{
  GChecksum *c = g_checksum_new (G_CHECKSUM_SHA256);
  FILE *f = fopen (path, "rb");
  guint8 *buf = g_malloc (1 << 20);
  gsize n;
  gchar *sum;

  fail_unless (f != NULL);
  while ((n = fread (buf, 1, 1 << 20, f)) > 0)
    g_checksum_update (c, buf, n);
  fclose (f);
  g_free (buf);
  sum = g_strdup (g_checksum_get_string (c));
  g_checksum_free (c);
  return sum;
}

static void
write_random_file (const gchar * path, gsize size)
{
  FILE *f = fopen (path, "wb");
  GRand *r = g_rand_new_with_seed (3);
  guint32 *d = g_malloc (1 << 20);
  gsize done = 0, i;

  fail_unless (f != NULL);
  while (done < size) {
    gsize n = MIN ((gsize) 1 << 20, size - done);
    for (i = 0; i < n / 4; i++)
      d[i] = g_rand_int (r);
    fail_unless (fwrite (d, 1, n, f) == n);
    done += n;
  }
  fclose (f);
  g_free (d);
  g_rand_free (r);
}

/* Bytes malloc has handed out, all arenas. */
static gsize
heap_in_use (void)
{
  struct mallinfo2 mi = mallinfo2 ();

  return mi.uordblks + mi.hblkhd;
}

GST_START_TEST (test_file_transfer)
{
  const gchar *mb = g_getenv ("ERAP_TRANSFER_MB");
  gsize size = (gsize) (mb ? atoi (mb) : 200) * 1000 * 1000;
  gchar *dir = g_dir_make_tmp ("erap-XXXXXX", NULL);
  gchar *in = g_build_filename (dir, "in.bin", NULL);
  gchar *out = g_build_filename (dir, "out.bin", NULL);
  gchar *desc, *s1, *s2;
  GstElement *rx, *tx, *src;
  GstMessage *msg;
  GstBus *bus;
  guint port;
  gsize heap0, heap1;

  write_random_file (in, size);
  heap0 = heap_in_use ();
  desc = g_strdup_printf ("erapsrc name=src port=0 ! filesink location=%s",
      out);
  rx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  src = gst_bin_get_by_name (GST_BIN (rx), "src");
  g_object_get (src, "port", &port, NULL);
  desc = g_strdup_printf ("filesrc location=%s blocksize=65536 ! erapsink "
      "name=sink host=127.0.0.1 port=%u", in, port);
  tx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (gst_element_set_state (tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);

  bus = gst_element_get_bus (tx);
  msg = gst_bus_timed_pop_filtered (bus, 100 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_object_unref (bus);
  bus = gst_element_get_bus (rx);
  msg = gst_bus_timed_pop_filtered (bus, 100 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_object_unref (bus);
  {
    GstElement *sink = gst_bin_get_by_name (GST_BIN (tx), "sink");
    GstStructure *st;
    guint64 acked, lost, sent;

    g_object_get (sink, "stats", &st, NULL);
    gst_structure_get (st, "bytes-acked", G_TYPE_UINT64, &acked,
        "packets-lost", G_TYPE_UINT64, &lost, "packets-sent", G_TYPE_UINT64,
        &sent, NULL);
    GST_INFO ("sent %" G_GUINT64_FORMAT " packets, lost %" G_GUINT64_FORMAT,
        sent, lost);
    fail_unless_equals_uint64 (acked, size);
    gst_structure_free (st);
    gst_object_unref (sink);
  }
  /* delivered data is released: a buffer that kept its message alive
   * would leave the whole file on the heap (it did once) */
  heap1 = heap_in_use ();
  GST_INFO ("heap grew by %" G_GSIZE_FORMAT " bytes", heap1 - MIN (heap1,
          heap0));
  fail_unless (heap1 < heap0 + 64 * 1000 * 1000, "heap grew by %"
      G_GSIZE_FORMAT " MB", (heap1 - heap0) / 1000000);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (tx);
  gst_object_unref (rx);

  s1 = file_checksum (in);
  s2 = file_checksum (out);
  fail_unless_equals_string (s1, s2);
  g_free (s1);
  g_free (s2);
  g_unlink (in);
  g_unlink (out);
  g_rmdir (dir);
  g_free (in);
  g_free (out);
  g_free (dir);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* keyed sessions (docs/security.md) */

typedef struct {
  GstElement *rx, *tx, *src, *sink;
  gchar *dir, *in, *out;
} Keyed;

static void
keyed_start (Keyed * k, gsize size, const gchar * rx_opts,
    const gchar * tx_opts)
{
  gchar *desc;
  guint port;

  k->dir = g_dir_make_tmp ("erap-keyed-XXXXXX", NULL);
  k->in = g_build_filename (k->dir, "in.bin", NULL);
  k->out = g_build_filename (k->dir, "out.bin", NULL);
  write_random_file (k->in, size);
  desc = g_strdup_printf ("erapsrc name=src port=0 linger=200000000 %s ! "
      "filesink location=%s", rx_opts, k->out);
  k->rx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (gst_element_set_state (k->rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  k->src = gst_bin_get_by_name (GST_BIN (k->rx), "src");
  g_object_get (k->src, "port", &port, NULL);
  desc = g_strdup_printf ("filesrc location=%s blocksize=65536 ! erapsink "
      "name=sink host=127.0.0.1 port=%u linger=1000000000 %s", k->in, port,
      tx_opts);
  k->tx = gst_parse_launch (desc, NULL);
  g_free (desc);
  k->sink = gst_bin_get_by_name (GST_BIN (k->tx), "sink");
  fail_unless (gst_element_set_state (k->tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
}

static void
keyed_stop (Keyed * k)
{
  gst_element_set_state (k->tx, GST_STATE_NULL);
  gst_element_set_state (k->rx, GST_STATE_NULL);
  gst_object_unref (k->src);
  gst_object_unref (k->sink);
  gst_object_unref (k->tx);
  gst_object_unref (k->rx);
  g_unlink (k->in);
  g_unlink (k->out);
  g_rmdir (k->dir);
  g_free (k->in);
  g_free (k->out);
  g_free (k->dir);
}

static void
keyed_transfer_ok (const gchar * rx_opts, const gchar * tx_opts)
{
  gsize size = 20 * 1000 * 1000;
  Keyed k;
  GstMessage *msg;
  GstBus *bus;
  gchar *s1, *s2;

  keyed_start (&k, size, rx_opts, tx_opts);
  bus = gst_element_get_bus (k.tx);
  msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_object_unref (bus);
  bus = gst_element_get_bus (k.rx);
  msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_object_unref (bus);

  fail_unless (stat_bool (k.src, "encrypted"));
  fail_unless (stat_bool (k.sink, "encrypted"));
  fail_unless_equals_uint64 (stat_u64 (k.sink, "bytes-acked"), size);
  fail_unless (stat_u64 (k.src, "authenticated") >= size / 1400);
  fail_unless_equals_uint64 (stat_u64 (k.src, "auth-failures"), 0);
  fail_unless_equals_uint64 (stat_u64 (k.src, "replays"), 0);
  fail_unless (stat_u64 (k.sink, "acks-authenticated") > 0);
  /* GSO/GRO bursts survive sealing (each segment sealed on its own, all
   * of one size): erapsrc answers each receive call of up to 16 datagrams
   * with ACK datagrams, so more than 16 ACK records per ACK datagram on
   * average means it received runs of packets as single datagrams */
  GST_INFO ("%" G_GUINT64_FORMAT " ACK records in %" G_GUINT64_FORMAT
      " sealed datagrams", stat_u64 (k.src, "acks-sent"),
      stat_u64 (k.sink, "acks-authenticated"));
  fail_unless (stat_u64 (k.src, "acks-sent") > 16 * stat_u64 (k.sink,
          "acks-authenticated"));
  fail_unless_equals_uint64 (stat_u64 (k.sink, "auth-failures"), 0);
  fail_unless_equals_uint64 (stat_u64 (k.sink, "replays"), 0);
  s1 = file_checksum (k.in);
  s2 = file_checksum (k.out);
  fail_unless_equals_string (s1, s2);
  g_free (s1);
  g_free (s2);
  keyed_stop (&k);
}

GST_START_TEST (test_keyed_transfer)
{
  keyed_transfer_ok ("passphrase=correct-horse-battery",
      "passphrase=correct-horse-battery");
  /* a raw key (the control channel's), and a smaller MTU: still within */
  keyed_transfer_ok
      ("key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
      "mtu=600 key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
}

GST_END_TEST;

GST_START_TEST (test_wrong_passphrase)
{
  Keyed k;
  GstMessage *msg;
  GstBus *bus;
  GError *err = NULL;
  gchar *dbg = NULL, *contents = NULL;
  gsize len = 1;

  keyed_start (&k, 1000 * 1000, "passphrase=correct-horse-battery",
      "passphrase=correct-horse-batterz linger=20000000000");
  bus = gst_element_get_bus (k.rx);
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING);
  gst_message_parse_warning (msg, &err, &dbg);
  fail_unless (strstr (err->message, "wrong passphrase") != NULL, "%s",
      err->message);
  g_clear_error (&err);
  g_free (dbg);
  gst_message_unref (msg);
  gst_object_unref (bus);
  /* the sender says so too */
  bus = gst_element_get_bus (k.tx);
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING);
  gst_message_parse_warning (msg, &err, &dbg);
  fail_unless (strstr (err->message, "No authenticated ACK") != NULL, "%s",
      err->message);
  g_clear_error (&err);
  g_free (dbg);
  gst_message_unref (msg);
  gst_object_unref (bus);
  /* the sender gets no ACK it can authenticate: nothing counts as
   * delivered; the receiver delivers nothing */
  fail_unless_equals_uint64 (stat_u64 (k.sink, "bytes-acked"), 0);
  fail_unless (stat_u64 (k.src, "auth-failures") >= 100);
  fail_unless_equals_uint64 (stat_u64 (k.src, "authenticated"), 0);
  fail_unless_equals_uint64 (stat_u64 (k.src, "bytes"), 0);
  fail_unless_equals_uint64 (stat_u64 (k.src, "acks-sent"), 0);
  gst_element_set_state (k.rx, GST_STATE_NULL);
  fail_unless (g_file_get_contents (k.out, &contents, &len, NULL));
  fail_unless_equals_int (len, 0);
  g_free (contents);
  keyed_stop (&k);
}

GST_END_TEST;

/* a plain sender to a keyed receiver: nothing delivered either */
GST_START_TEST (test_plain_sender_refused)
{
  Keyed k;

  keyed_start (&k, 1000 * 1000, "passphrase=correct-horse-battery", "");
  /* (the first packets are refused at once; polled, a loaded machine
   * may be slow to send them) */
  for (guint i = 0; i < 2000 && stat_u64 (k.src, "auth-failures") == 0; i++)
    g_usleep (10000);
  g_usleep (200000);
  fail_unless (stat_u64 (k.src, "auth-failures") > 0);
  fail_unless_equals_uint64 (stat_u64 (k.src, "packets-received"), 0);
  fail_unless_equals_uint64 (stat_u64 (k.src, "bytes"), 0);
  fail_unless_equals_uint64 (stat_u64 (k.sink, "bytes-acked"), 0);
  keyed_stop (&k);
}

GST_END_TEST;

static void
start_fails (const gchar * desc, const gchar * what)
{
  GstElement *p = gst_parse_launch (desc, NULL);
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *msg;
  GError *err = NULL;
  gchar *dbg = NULL;

  fail_unless (p != NULL);
  /* refused at start: an error (the state change fails or, for a sink
   * started asynchronously, the error ends it) */
  gst_element_set_state (p, GST_STATE_PLAYING);
  msg = gst_bus_timed_pop_filtered (bus, 5 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, &dbg);
  fail_unless (dbg && strstr (dbg, what) != NULL, "%s", dbg);
  g_clear_error (&err);
  g_free (dbg);
  gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
}

GST_START_TEST (test_key_settings_refused)
{
  start_fails ("erapsrc port=0 passphrase=short ! fakesink", "passphrase");
  start_fails ("erapsrc port=0 key=0011 ! fakesink", "hexadecimal");
  start_fails ("erapsrc port=0 passphrase=correct-horse-battery key=00112233"
      "44556677001122334455667700112233445566770011223344556677 ! fakesink",
      "not both");
  start_fails ("fakesrc ! erapsink host=127.0.0.1 port=9 passphrase=short",
      "passphrase");
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* NAT traversal: the receiver's hello, the sender's learn-peer */

/* The sender first (learn-peer: it waits), then the receiver, saying
 * hello to the sender's bound port. */
static void
nat_start (Keyed * k, gsize size, const gchar * rx_opts,
    const gchar * tx_opts)
{
  gchar *desc;
  guint port;

  k->dir = g_dir_make_tmp ("erap-nat-XXXXXX", NULL);
  k->in = g_build_filename (k->dir, "in.bin", NULL);
  k->out = g_build_filename (k->dir, "out.bin", NULL);
  write_random_file (k->in, size);
  desc = g_strdup_printf ("filesrc location=%s blocksize=65536 ! erapsink "
      "name=sink learn-peer=true linger=3000000000 %s", k->in, tx_opts);
  k->tx = gst_parse_launch (desc, NULL);
  g_free (desc);
  k->sink = gst_bin_get_by_name (GST_BIN (k->tx), "sink");
  fail_unless (gst_element_set_state (k->tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  g_object_get (k->sink, "bound-port", &port, NULL);
  fail_unless (port > 0);
  desc = g_strdup_printf ("erapsrc name=src address=127.0.0.1 port=0 "
      "linger=200000000 hello-host=127.0.0.1 hello-port=%u "
      "hello-interval=100000000 %s ! filesink location=%s", port, rx_opts,
      k->out);
  k->rx = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (gst_element_set_state (k->rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  k->src = gst_bin_get_by_name (GST_BIN (k->rx), "src");
}

static void
wait_eos (GstElement * pipe)
{
  GstBus *bus = gst_element_get_bus (pipe);
  GstMessage *msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);

  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_object_unref (bus);
}

static gchar *
stat_str (GstElement * e, const gchar * field)
{
  GstStructure *st;
  gchar *v;

  g_object_get (e, "stats", &st, NULL);
  v = g_strdup (gst_structure_get_string (st, field));
  fail_unless (v != NULL, "no %s", field);
  gst_structure_free (st);
  return v;
}

static void
nat_check_delivered (Keyed * k, gsize size)
{
  gchar *s1, *s2, *peer, *want;
  guint port;

  wait_eos (k->tx);
  wait_eos (k->rx);
  fail_unless_equals_uint64 (stat_u64 (k->sink, "bytes-acked"), size);
  /* the destination is where the hello came from: the receiver's socket */
  g_object_get (k->src, "port", &port, NULL);
  want = g_strdup_printf ("127.0.0.1:%u", port);
  peer = stat_str (k->sink, "peer");
  fail_unless_equals_string (peer, want);
  g_free (peer);
  g_free (want);
  fail_unless (stat_u64 (k->sink, "hellos") >= 1);
  fail_unless (stat_u64 (k->src, "hellos-sent") >= stat_u64 (k->sink,
          "hellos"));
  fail_unless_equals_uint64 (stat_u64 (k->sink, "hellos-foreign"), 0);
  fail_unless_equals_uint64 (stat_u64 (k->sink, "hellos-forged"), 0);
  fail_unless_equals_uint64 (stat_u64 (k->src, "hello-errors"), 0);
  s1 = file_checksum (k->in);
  s2 = file_checksum (k->out);
  fail_unless_equals_string (s1, s2);
  g_free (s1);
  g_free (s2);
}

/* Two sessions on the sender's one shared socket (bind-port 0), told
 * apart by their hello ids, one plaintext and one keyed: each learns its
 * receiver's port from the hello and delivers its file bit-exact. */
GST_START_TEST (test_learn_peer)
{
  gsize size = 2 * 1000 * 1000;
  Keyed a, b;
  guint pa, pb;

  nat_start (&a, size, "hello-id=11", "host=127.0.0.1 hello-id=11");
  nat_start (&b, size, "hello-id=12 passphrase=correct-horse-battery",
      "host=127.0.0.1 hello-id=12 passphrase=correct-horse-battery");
  g_object_get (a.sink, "bound-port", &pa, NULL);
  g_object_get (b.sink, "bound-port", &pb, NULL);
  fail_unless_equals_int (pa, pb);
  nat_check_delivered (&a, size);
  nat_check_delivered (&b, size);
  fail_unless (stat_bool (b.sink, "encrypted"));
  keyed_stop (&a);
  keyed_stop (&b);
}

GST_END_TEST;

/* Nothing is ever sent before a hello, and a hello counts only from the
 * address the sender was given (no reflection) and, keyed, only sealed
 * under the session's key. */
static void
nat_refused (const gchar * rx_opts, const gchar * tx_opts,
    const gchar * counter)
{
  Keyed k;

  nat_start (&k, 100 * 1000, rx_opts, tx_opts);
  /* five hellos (one per 200 ms hello-interval: a second unloaded, and
   * exactly five of them then: counted, not timed) */
  for (guint i = 0; i < 2000 && (stat_u64 (k.src, "hellos-sent") < 5 ||
          stat_u64 (k.sink, counter) < 5); i++)
    g_usleep (10000);
  fail_unless (stat_u64 (k.src, "hellos-sent") >= 5);
  fail_unless (stat_u64 (k.sink, counter) >= 5, "%s: %" G_GUINT64_FORMAT,
      counter, stat_u64 (k.sink, counter));
  fail_unless_equals_uint64 (stat_u64 (k.sink, "hellos"), 0);
  fail_unless_equals_uint64 (stat_u64 (k.sink, "packets-sent"), 0);
  fail_unless_equals_uint64 (stat_u64 (k.src, "packets-received"), 0);
  {
    gchar *peer = stat_str (k.sink, "peer");

    fail_unless_equals_string (peer, "");
    g_free (peer);
  }
  keyed_stop (&k);
}

GST_START_TEST (test_learn_peer_foreign_refused)
{
  /* the control peer is 127.0.0.2; the hello comes from 127.0.0.1 */
  nat_refused ("hello-id=21", "host=127.0.0.2 hello-id=21",
      "hellos-foreign");
}

GST_END_TEST;

GST_START_TEST (test_learn_peer_forged_refused)
{
  /* another key, and a plain hello to a keyed session */
  nat_refused ("hello-id=31 passphrase=correct-horse-batterz",
      "host=127.0.0.1 hello-id=31 passphrase=correct-horse-battery",
      "hellos-forged");
  nat_refused ("hello-id=32",
      "host=127.0.0.1 hello-id=32 passphrase=correct-horse-battery",
      "hellos-forged");
  /* a hello naming another session is not this one's */
  nat_refused ("hello-id=34", "host=127.0.0.1 hello-id=33",
      "hellos-unknown");
}

GST_END_TEST;

/* The NAT re-maps the receiver: a hello from a new port (counter higher)
 * moves the destination there; the same hello again is a replay. */
GST_START_TEST (test_learn_peer_moved)
{
  Keyed k;
  GSocket *s;
  GSocketAddress *any, *dest, *local;
  GInetAddress *lo;
  GstErapHello h = { 41, 0, 0, FALSE };
  guint8 hello[GST_ERAP_HELLO_SIZE], data[2048];
  gchar *peer, *want;
  guint port;
  gssize n;

  /* 4 MB at 8 Mbit/s: it is still sending when the NAT moves */
  nat_start (&k, 4 * 1000 * 1000, "hello-id=41",
      "host=127.0.0.1 hello-id=41 max-rate=8000000");
  for (guint i = 0; i < 2000 && stat_u64 (k.sink, "hellos") == 0; i++)
    g_usleep (5000);
  fail_unless_equals_uint64 (stat_u64 (k.sink, "hellos"), 1);
  g_object_get (k.sink, "bound-port", &port, NULL);
  s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  any = g_inet_socket_address_new (lo, 0);
  fail_unless (g_socket_bind (s, any, FALSE, NULL));
  dest = g_inet_socket_address_new (lo, port);
  local = g_socket_get_local_address (s, NULL);
  h.counter = g_get_real_time () + 1000000000;
  h.port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (local));
  gst_erap_hello_write (&h, hello);
  fail_unless_equals_int (g_socket_send_to (s, dest, (gchar *) hello,
          sizeof (hello), NULL, NULL), sizeof (hello));
  /* the data comes here now */
  g_socket_set_timeout (s, 2);
  n = g_socket_receive (s, (gchar *) data, sizeof (data), NULL, NULL);
  fail_unless (n > GST_ERAP_DATA_HEADER_SIZE);
  fail_unless_equals_uint64 (stat_u64 (k.sink, "hellos-moved"), 1);
  want = g_strdup_printf ("127.0.0.1:%u", h.port);
  peer = stat_str (k.sink, "peer");
  fail_unless_equals_string (peer, want);
  g_free (peer);
  g_free (want);
  fail_unless_equals_int (g_socket_send_to (s, dest, (gchar *) hello,
          sizeof (hello), NULL, NULL), sizeof (hello));
  for (guint i = 0; i < 2000 && stat_u64 (k.sink, "hellos-replayed") == 0;
      i++)
    g_usleep (5000);
  fail_unless_equals_uint64 (stat_u64 (k.sink, "hellos-replayed"), 1);
  fail_unless_equals_uint64 (stat_u64 (k.sink, "hellos-moved"), 1);
  keyed_stop (&k);
  g_object_unref (local);
  g_object_unref (dest);
  g_object_unref (any);
  g_object_unref (lo);
  g_object_unref (s);
}

GST_END_TEST;

static Suite *
erapsrc_suite (void)
{
  Suite *s = suite_create ("erapsrc");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_acks_order_and_eos);
  tcase_add_test (tc, test_robustness);
  tcase_add_test (tc, test_file_transfer);
  tcase_add_test (tc, test_keyed_transfer);
  tcase_add_test (tc, test_wrong_passphrase);
  tcase_add_test (tc, test_plain_sender_refused);
  tcase_add_test (tc, test_key_settings_refused);
  tcase_add_test (tc, test_learn_peer);
  tcase_add_test (tc, test_learn_peer_foreign_refused);
  tcase_add_test (tc, test_learn_peer_forged_refused);
  tcase_add_test (tc, test_learn_peer_moved);
  return s;
}

GST_CHECK_MAIN (erapsrc);
