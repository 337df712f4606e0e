/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP in plaintext (lab mode, every gst-launch-1.0 pipeline
 * without a key) against a third address, and erapsink never reporting
 * success for lost data (docs/security.md, issue 24). No raw sockets: the
 * third address is 127.0.0.2, a socket bound there (loopback), so these
 * run as any user.
 *
 * * A datagram from a third address before the sender (a well-formed data
 *   packet, garbage): erapsrc with accept-host drops and counts it and
 *   receives the genuine transfer bit-exact; without accept-host, garbage
 *   does not fix the sender.
 * * Forged ACKs from a third address naming the receiver, acknowledging
 *   everything sent, towards a sender whose receiver reads nothing: no
 *   byte counts as acknowledged (acks-foreign), no EOS, an error; with a
 *   genuine receiver the transfer is bit-exact and what the sender
 *   reports acknowledged is what the receiver has.
 * * No receiver (a port nobody reads, a closed port), a wrong passphrase:
 *   an ERROR "Could not connect" after connect-timeout, never EOS.
 * * The receiver going away mid-transfer: the linger ends in an ERROR
 *   naming the bytes not acknowledged, never EOS; with the queue full
 *   (no EOS to linger on), an ERROR "Lost the receiver" after
 *   connect-timeout without an ACK.
 * Nothing asserts wall-clock times. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <gio/gio.h>
#include <gst/check/gstcheck.h>
#include <gst/erap/erap.h>
#include "elementstats.h"

typedef struct {
  gchar *dir, *in, *out;
  gsize size;
} Files;

static void
files_new (Files * f, gsize size, guint seed)
{
  gchar *contents = g_malloc (size);
  GRand *r = g_rand_new_with_seed (seed);
  gsize i;

  for (i = 0; i < size; i++)
    contents[i] = g_rand_int (r);
  g_rand_free (r);
  f->dir = g_dir_make_tmp ("erap-security-XXXXXX", NULL);
  fail_unless (f->dir != NULL);
  f->in = g_build_filename (f->dir, "in.bin", NULL);
  f->out = g_build_filename (f->dir, "out.bin", NULL);
  f->size = size;
  fail_unless (g_file_set_contents (f->in, contents, size, NULL));
  g_free (contents);
}

static void
files_free (Files * f)
{
  g_unlink (f->in);
  g_unlink (f->out);
  g_rmdir (f->dir);
  g_free (f->in);
  g_free (f->out);
  g_free (f->dir);
}

static gboolean
same_files (const gchar * a, const gchar * b)
{
  gchar *x = NULL, *y = NULL;
  gsize lx = 0, ly = 0;
  gboolean same;

  fail_unless (g_file_get_contents (a, &x, &lx, NULL));
  fail_unless (g_file_get_contents (b, &y, &ly, NULL));
  same = lx == ly && memcmp (x, y, lx) == 0;
  g_free (x);
  g_free (y);
  return same;
}

static GstElement *
launch (const gchar * desc, GstElement ** named, const gchar * name)
{
  GstElement *p = gst_parse_launch (desc, NULL);

  fail_unless (p != NULL, "%s", desc);
  fail_if (gst_element_set_state (p, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE);
  if (named)
    *named = gst_bin_get_by_name (GST_BIN (p), name);
  return p;
}

/* The first EOS or ERROR of @p within @secs (NULL if none); *@text gets
 * an error's message and debug text. */
static GstMessageType
wait_end (GstElement * p, guint secs, gchar ** text)
{
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, secs * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  GstMessageType t = m ? GST_MESSAGE_TYPE (m) : GST_MESSAGE_UNKNOWN;

  if (m && t == GST_MESSAGE_ERROR && text) {
    GError *e = NULL;
    gchar *dbg = NULL;

    gst_message_parse_error (m, &e, &dbg);
    *text = g_strdup_printf ("%s | %s", e->message, dbg ? dbg : "");
    g_error_free (e);
    g_free (dbg);
  }
  if (m)
    gst_message_unref (m);
  gst_object_unref (bus);
  return t;
}

/* A receiver and a sender of one file: erapsrc (@rx_props, any port)
 * writing f.out, then erapsink (@tx_props) reading f.in toward it. */
typedef struct {
  Files f;
  GstElement *rx, *tx, *src, *sink;
  guint port;
} Pair;

static void
pair_receive (Pair * p, gsize size, guint seed, const gchar * rx_props)
{
  gchar *desc;

  memset (p, 0, sizeof (*p));
  files_new (&p->f, size, seed);
  desc = g_strdup_printf ("erapsrc name=src port=0 %s ! filesink "
      "location=%s", rx_props, p->f.out);
  p->rx = launch (desc, &p->src, "src");
  g_free (desc);
  g_object_get (p->src, "port", &p->port, NULL);
}

static void
pair_send (Pair * p, const gchar * tx_props)
{
  gchar *desc = g_strdup_printf ("filesrc location=%s ! erapsink name=sink "
      "host=127.0.0.1 port=%u %s", p->f.in, p->port, tx_props);

  p->tx = launch (desc, &p->sink, "sink");
  g_free (desc);
}

static void
pair_free (Pair * p)
{
  gst_element_set_state (p->tx, GST_STATE_NULL);
  gst_element_set_state (p->rx, GST_STATE_NULL);
  gst_object_unref (p->src);
  gst_object_unref (p->sink);
  gst_object_unref (p->tx);
  gst_object_unref (p->rx);
  files_free (&p->f);
}

/* A UDP socket on @ip, any port (@port 0) or @port. */
static GSocket *
udp_on (const gchar * ip, guint port)
{
  GSocket *s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, NULL);
  GSocketAddress *a = g_inet_socket_address_new_from_string (ip, port);

  fail_unless (s != NULL);
  fail_unless (g_socket_bind (s, a, FALSE, NULL));
  g_object_unref (a);
  return s;
}

static guint
local_port (GSocket * s)
{
  GSocketAddress *a = g_socket_get_local_address (s, NULL);
  guint port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (a));

  g_object_unref (a);
  return port;
}

static void
send_to (GSocket * s, guint port, const guint8 * data, gsize len)
{
  GSocketAddress *to = g_inet_socket_address_new_from_string ("127.0.0.1",
      port);

  fail_unless_equals_int (g_socket_send_to (s, to, (const gchar *) data, len,
          NULL, NULL), len);
  g_object_unref (to);
}

/* A plain ERAP data packet as a sender's first: seqno 1, appSeq 0, one
 * whole message. */
static gsize
forged_data (guint8 * pkt)
{
  GstErapDataHeader h = { 1, 0, GST_ERAP_FRAG_BEGIN | GST_ERAP_FRAG_END };

  gst_erap_data_header_write (&h, pkt);
  memcpy (pkt + GST_ERAP_DATA_HEADER_SIZE, "forged essential data", 21);
  return GST_ERAP_DATA_HEADER_SIZE + 21;
}

static void
wait_stat (GstElement * e, const gchar * field, guint64 at_least)
{
  guint i;

  for (i = 0; i < 500 && stat_u64 (e, field) < at_least; i++)
    g_usleep (10000);
  fail_unless (stat_u64 (e, field) >= at_least, "%s %" G_GUINT64_FORMAT
      " < %" G_GUINT64_FORMAT, field, stat_u64 (e, field), at_least);
}

/* Before: a datagram from a third address, sent before the sender's
 * first, fixed it as the sender (0 bytes delivered). Now: erapsrc with
 * accept-host (the proxy sets the server's address) drops and counts a
 * well-formed data packet and garbage from 127.0.0.2, acknowledges
 * neither, and takes the genuine transfer bit-exact. */
GST_START_TEST (test_third_address_first)
{
  Pair p;
  gchar *err = NULL;
  GSocket *evil;
  guint8 pkt[64], buf[64];
  gssize n;

  pair_receive (&p, 1000 * 1000, 1, "accept-host=127.0.0.1 linger=200000000");
  evil = udp_on ("127.0.0.2", 0);
  send_to (evil, p.port, pkt, forged_data (pkt));
  send_to (evil, p.port, (const guint8 *) "garbage", 7);
  wait_stat (p.src, "foreign", 2);

  pair_send (&p, "");
  fail_unless (wait_end (p.tx, 60, &err) == GST_MESSAGE_EOS, "%s", err);
  fail_unless (wait_end (p.rx, 60, &err) == GST_MESSAGE_EOS, "%s", err);
  /* the attacker got no ACK */
  g_socket_set_blocking (evil, FALSE);
  n = g_socket_receive (evil, (gchar *) buf, sizeof (buf), NULL, NULL);
  fail_unless (n < 0, "the third address got %" G_GSSIZE_FORMAT " bytes", n);
  fail_unless_equals_uint64 (stat_u64 (p.src, "foreign"), 2);
  fail_unless_equals_uint64 (stat_u64 (p.src, "malformed"), 0);
  fail_unless_equals_uint64 (stat_u64 (p.src, "bytes"), p.f.size);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "bytes-acked"), p.f.size);
  fail_unless (same_files (p.f.in, p.f.out));
  g_object_unref (evil);
  pair_free (&p);
}

GST_END_TEST;

/* Without accept-host (a gst-launch-1.0 receiver) the first sender is the
 * first *well-formed* packet's: garbage from a third address first does
 * not fix it (it is counted as malformed), and the genuine sender gets
 * through. */
GST_START_TEST (test_garbage_does_not_fix_sender)
{
  Pair p;
  gchar *err = NULL;
  GSocket *evil;

  pair_receive (&p, 200 * 1000, 2, "linger=200000000");
  evil = udp_on ("127.0.0.2", 0);
  send_to (evil, p.port, (const guint8 *) "garbage", 7);
  wait_stat (p.src, "malformed", 1);

  pair_send (&p, "");
  fail_unless (wait_end (p.tx, 60, &err) == GST_MESSAGE_EOS, "%s", err);
  fail_unless (wait_end (p.rx, 60, &err) == GST_MESSAGE_EOS, "%s", err);
  fail_unless_equals_uint64 (stat_u64 (p.src, "foreign"), 0);
  fail_unless (same_files (p.f.in, p.f.out));
  g_object_unref (evil);
  pair_free (&p);
}

GST_END_TEST;

typedef struct {
  GstElement *sink;
  guint rx_port;
  gint stop;
  guint64 sent;
} Forger;

/* Forged ACKs, as fast as the sender sends: from 127.0.0.2, and from the
 * receiver's address but another port, each naming the receiver
 * (127.0.0.1, its port) and acknowledging every seqno sent so far. */
static gpointer
forger_thread (gpointer data)
{
  Forger *fg = data;
  GSocket *third = udp_on ("127.0.0.2", 0), *other = udp_on ("127.0.0.1", 0);

  while (!g_atomic_int_get (&fg->stop)) {
    GstErapAck a = { 0 };
    guint8 pkt[GST_ERAP_ACK_MAX_SIZE];
    guint64 sent = stat_u64 (fg->sink, "packets-sent");
    guint port = stat_uint (fg->sink, "local-port");
    gsize len;

    if (sent > 0 && port > 0) {
      a.port = fg->rx_port;
      a.seq = a.last_recv = (guint32) sent;
      a.addr_len = 4;
      a.addr[0] = 127;
      a.addr[3] = 1;
      len = gst_erap_ack_write (&a, pkt);
      send_to (third, port, pkt, len);
      send_to (other, port, pkt, len);
      fg->sent += 2;
    }
    g_usleep (1000);
  }
  g_object_unref (third);
  g_object_unref (other);
  return NULL;
}

/* Before: forged ACKs from a third address made the sender report the
 * whole file acknowledged and post EOS while the receiver had 131,072
 * bytes. Now, toward a receiver that reads nothing: nothing counts as
 * acknowledged, every forged ACK is counted (acks-foreign), and the
 * session ends in an error, not EOS. */
GST_START_TEST (test_forged_acks_no_receiver)
{
  Files f;
  gchar *desc, *err = NULL;
  GstElement *tx, *sink;
  GSocket *hole = udp_on ("127.0.0.1", 0);      /* never read */
  Forger fg = { 0 };
  GThread *t;
  GstMessageType end;

  files_new (&f, 2 * 1000 * 1000, 3);
  fg.rx_port = local_port (hole);
  desc = g_strdup_printf ("filesrc location=%s ! erapsink name=sink "
      "host=127.0.0.1 port=%u max-rate=20000000 connect-timeout=1000000000 "
      "linger=5000000000", f.in, fg.rx_port);
  tx = launch (desc, &sink, "sink");
  g_free (desc);
  fg.sink = sink;
  t = g_thread_new ("forger", forger_thread, &fg);
  end = wait_end (tx, 60, &err);
  g_atomic_int_set (&fg.stop, 1);
  g_thread_join (t);
  GST_INFO ("%" G_GUINT64_FORMAT " forged ACKs; acks-foreign %"
      G_GUINT64_FORMAT ": %s", fg.sent, stat_u64 (sink, "acks-foreign"), err);
  fail_unless_equals_int (end, GST_MESSAGE_ERROR);
  fail_unless (strstr (err, "Could not connect to 127.0.0.1:") != NULL, "%s",
      err);
  fail_unless_equals_uint64 (stat_u64 (sink, "bytes-acked"), 0);
  fail_unless_equals_uint64 (stat_u64 (sink, "acks-received"), 0);
  fail_unless (stat_u64 (sink, "acks-foreign") > 0);
  gst_element_set_state (tx, GST_STATE_NULL);
  /* every forged ACK that reached the socket was counted (after stop) */
  fail_unless (stat_u64 (sink, "acks-foreign") <= fg.sent);
  g_free (err);
  g_object_unref (hole);
  gst_object_unref (sink);
  gst_object_unref (tx);
  files_free (&f);
}

GST_END_TEST;

/* The same forged ACKs during a genuine transfer: bit-exact, and what the
 * sender reports acknowledged is exactly what the receiver delivered. */
GST_START_TEST (test_forged_acks_genuine_receiver)
{
  Pair p;
  gchar *err = NULL;
  Forger fg = { 0 };
  GThread *t;
  GstMessageType end;

  pair_receive (&p, 2 * 1000 * 1000, 4,
      "accept-host=127.0.0.1 linger=200000000");
  fg.rx_port = p.port;
  pair_send (&p, "max-rate=20000000");
  fg.sink = p.sink;
  t = g_thread_new ("forger", forger_thread, &fg);
  end = wait_end (p.tx, 60, &err);
  g_atomic_int_set (&fg.stop, 1);
  g_thread_join (t);
  fail_unless (end == GST_MESSAGE_EOS, "%s", err);
  fail_unless (wait_end (p.rx, 60, &err) == GST_MESSAGE_EOS, "%s", err);
  fail_unless (stat_u64 (p.sink, "acks-foreign") > 0);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "bytes-acked"), p.f.size);
  fail_unless_equals_uint64 (stat_u64 (p.src, "bytes"), p.f.size);
  fail_unless (same_files (p.f.in, p.f.out));
  pair_free (&p);
}

GST_END_TEST;

/* Before: no receiver -> EOS, exit 0, a warning. Now an error after
 * connect-timeout, for a port nobody reads and for a closed one. */
static void
no_receiver (gboolean closed)
{
  Files f;
  gchar *desc, *err = NULL, *want;
  GstElement *tx, *sink;
  GSocket *hole = udp_on ("127.0.0.1", 0);
  guint port = local_port (hole);

  if (closed)
    g_clear_object (&hole);     /* ICMP port unreachable from now on */
  files_new (&f, 100 * 1000, 5);
  desc = g_strdup_printf ("filesrc location=%s ! erapsink name=sink "
      "host=127.0.0.1 port=%u connect-timeout=1000000000", f.in, port);
  tx = launch (desc, &sink, "sink");
  g_free (desc);
  fail_unless_equals_int (wait_end (tx, 60, &err), GST_MESSAGE_ERROR);
  want = g_strdup_printf ("Could not connect to 127.0.0.1:%u", port);
  fail_unless (strstr (err, want) != NULL, "%s", err);
  fail_unless (strstr (err, "connect-timeout") != NULL, "%s", err);
  fail_unless (stat_u64 (sink, "packets-sent") > 0);
  fail_unless_equals_uint64 (stat_u64 (sink, "bytes-acked"), 0);
  gst_element_set_state (tx, GST_STATE_NULL);
  g_free (want);
  g_free (err);
  g_clear_object (&hole);
  gst_object_unref (sink);
  gst_object_unref (tx);
  files_free (&f);
}

GST_START_TEST (test_no_receiver)
{
  GstElement *e = gst_element_factory_make ("erapsink", NULL);
  guint64 t = 0;

  /* the default */
  g_object_get (e, "connect-timeout", &t, NULL);
  fail_unless_equals_uint64 (t, 10 * GST_SECOND);
  gst_object_unref (e);
  no_receiver (FALSE);
  no_receiver (TRUE);
}

GST_END_TEST;

/* Before: a wrong passphrase -> EOS, exit 0, warnings. Now the sender
 * fails with "Could not connect" (and says a key may be wrong); the
 * receiver delivers nothing. */
GST_START_TEST (test_wrong_passphrase_error)
{
  Pair p;
  gchar *err = NULL;

  pair_receive (&p, 200 * 1000, 6, "passphrase=correct-horse-battery");
  pair_send (&p, "passphrase=correct-horse-batterz "
      "connect-timeout=1000000000");
  fail_unless_equals_int (wait_end (p.tx, 60, &err), GST_MESSAGE_ERROR);
  fail_unless (strstr (err, "Could not connect to 127.0.0.1:") != NULL, "%s",
      err);
  fail_unless (strstr (err, "passphrase or key") != NULL, "%s", err);
  fail_unless_equals_uint64 (stat_u64 (p.sink, "bytes-acked"), 0);
  fail_unless_equals_uint64 (stat_u64 (p.src, "bytes"), 0);
  fail_unless (stat_u64 (p.src, "auth-failures") > 0);
  g_free (err);
  pair_free (&p);
}

GST_END_TEST;

/* The receiver goes away in the middle: once the linger is over, an error
 * tells how many bytes were not acknowledged; no EOS. (The file fits in
 * max-queue-bytes, so rendering ends and EOS comes at once; the linger is
 * longer than the transfer at its rate cap would take.) */
GST_START_TEST (test_receiver_gone_linger_error)
{
  Pair p;
  gchar *err = NULL;

  pair_receive (&p, 2 * 1000 * 1000, 7, "");
  pair_send (&p, "max-rate=4000000 linger=6000000000");
  wait_stat (p.src, "bytes", 100 * 1000);
  gst_element_set_state (p.rx, GST_STATE_NULL);
  fail_unless_equals_int (wait_end (p.tx, 60, &err), GST_MESSAGE_ERROR);
  fail_unless (strstr (err, "bytes were not acknowledged") != NULL, "%s",
      err);
  fail_unless (stat_u64 (p.sink, "bytes-acked") < p.f.size);
  g_free (err);
  pair_free (&p);
}

GST_END_TEST;

/* The receiver goes away while more than max-queue-bytes are still to
 * send: rendering blocks on the full queue and EOS never comes, so the
 * linger cannot end it; the sink errors once data has been outstanding
 * for connect-timeout after the last ACK (before: blocked for ever). */
GST_START_TEST (test_receiver_gone_queue_full)
{
  Pair p;
  gchar *err = NULL, *want;

  pair_receive (&p, 4 * 1000 * 1000, 8, "");
  pair_send (&p, "max-rate=4000000 max-queue-bytes=200000 "
      "connect-timeout=1000000000");
  wait_stat (p.src, "bytes", 100 * 1000);
  gst_element_set_state (p.rx, GST_STATE_NULL);
  fail_unless_equals_int (wait_end (p.tx, 60, &err), GST_MESSAGE_ERROR);
  want = g_strdup_printf ("Lost the receiver 127.0.0.1:%u", p.port);
  fail_unless (strstr (err, want) != NULL, "%s", err);
  fail_unless (stat_u64 (p.sink, "bytes-acked") < p.f.size);
  g_free (want);
  g_free (err);
  pair_free (&p);
}

GST_END_TEST;

static Suite *
erapsecurity_suite (void)
{
  Suite *s = suite_create ("erapsecurity");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 180);
  tcase_add_test (tc, test_third_address_first);
  tcase_add_test (tc, test_garbage_does_not_fix_sender);
  tcase_add_test (tc, test_forged_acks_no_receiver);
  tcase_add_test (tc, test_forged_acks_genuine_receiver);
  tcase_add_test (tc, test_no_receiver);
  tcase_add_test (tc, test_wrong_passphrase_error);
  tcase_add_test (tc, test_receiver_gone_linger_error);
  tcase_add_test (tc, test_receiver_gone_queue_full);
  return s;
}

GST_CHECK_MAIN (erapsecurity);
