/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: unit tests of the NAT hello core (gst-libs/gst/twoflow/
 * twoflowhello.h) on a virtual clock: when the receiver says hello, and
 * which hellos the sender learns its destination from. */
#include <gst/check/gstcheck.h>
#include <gst/twoflow/twoflowhello.h>

#define MS GST_MSECOND
#define S GST_SECOND

/* Collects the times at which hellos are due between @from and @to,
 * stepping the virtual clock from wakeup to wakeup as a shell does. */
static GArray *
run (GstTwoflowHello * h, GstClockTime from, GstClockTime to,
    GstClockTime data_at)
{
  GArray *at = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  GstClockTime now = from;
  guint64 counter, last = 0;

  while (now <= to) {
    GstClockTime next;

    if (GST_CLOCK_TIME_IS_VALID (data_at) && now >= data_at) {
      gst_twoflow_hello_handle_data (h, data_at);
      data_at = GST_CLOCK_TIME_NONE;
    }
    while (gst_twoflow_hello_poll (h, now, &counter)) {
      if (last)
        fail_unless_equals_uint64 (counter, last + 1);
      last = counter;
      g_array_append_val (at, now);
    }
    next = gst_twoflow_hello_next_wakeup (h);
    if (GST_CLOCK_TIME_IS_VALID (data_at) && (!GST_CLOCK_TIME_IS_VALID (next)
            || data_at < next))
      next = data_at;
    if (!GST_CLOCK_TIME_IS_VALID (next))
      break;
    fail_unless (next > now);
    now = next;
  }
  return at;
}

#define AT(a, i) g_array_index (a, GstClockTime, i)

GST_START_TEST (test_retry_until_data_then_keepalive)
{
  GstTwoflowHello *h = gst_twoflow_hello_new (200 * MS, 15 * S, 1000, 0);
  GstTwoflowHelloStats st;
  GArray *at;
  guint i;

  /* data after 0.5 s: hellos at 0, 0.2, 0.4 s; then keepalives 15 s after
   * the last hello: 15.4, 30.4, 45.4 s */
  at = run (h, 0, 50 * S, 500 * MS);
  fail_unless_equals_int (at->len, 6);
  for (i = 0; i < 3; i++)
    fail_unless_equals_uint64 (AT (at, i), i * 200 * MS);
  for (i = 3; i < 6; i++)
    fail_unless_equals_uint64 (AT (at, i), 400 * MS + (i - 2) * 15 * S);
  gst_twoflow_hello_get_stats (h, &st);
  fail_unless (st.data_seen);
  fail_unless_equals_uint64 (st.hellos, 6);
  fail_unless_equals_uint64 (st.counter, 1005);
  g_array_free (at, TRUE);
  gst_twoflow_hello_free (h);
}

GST_END_TEST;

GST_START_TEST (test_no_data_keeps_retrying)
{
  GstTwoflowHello *h = gst_twoflow_hello_new (250 * MS, 15 * S, 1, 3 * S);
  GArray *at = run (h, 3 * S, 5 * S, GST_CLOCK_TIME_NONE);

  /* a lost hello is repeated: 3, 3.25, ..., 5 s */
  fail_unless_equals_int (at->len, 9);
  fail_unless_equals_uint64 (AT (at, 8), 5 * S);
  g_array_free (at, TRUE);
  gst_twoflow_hello_free (h);
}

GST_END_TEST;

GST_START_TEST (test_no_keepalive)
{
  GstTwoflowHello *h = gst_twoflow_hello_new (200 * MS, 0, 1, 0);
  GArray *at = run (h, 0, 100 * S, 300 * MS);

  fail_unless_equals_int (at->len, 2);
  fail_unless (!GST_CLOCK_TIME_IS_VALID (gst_twoflow_hello_next_wakeup (h)));
  g_array_free (at, TRUE);
  gst_twoflow_hello_free (h);
}

GST_END_TEST;

GST_START_TEST (test_late_poll_no_burst)
{
  GstTwoflowHello *h = gst_twoflow_hello_new (200 * MS, 15 * S, 1, 0);
  guint64 c;

  /* a shell woken late sends one hello, not the ones it missed */
  fail_unless (gst_twoflow_hello_poll (h, 0, &c));
  fail_unless (gst_twoflow_hello_poll (h, 10 * S, &c));
  fail_if (gst_twoflow_hello_poll (h, 10 * S, &c));
  fail_unless_equals_uint64 (gst_twoflow_hello_next_wakeup (h),
      10 * S + 200 * MS);
  gst_twoflow_hello_free (h);
}

GST_END_TEST;

static const guint8 peer[4] = { 203, 0, 113, 7 };
static const guint8 other[4] = { 198, 51, 100, 9 };
static const guint8 peer_mapped[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0xff, 0xff, 203, 0, 113, 7
};

GST_START_TEST (test_learner_plain)
{
  GstTwoflowHelloLearner *l = gst_twoflow_hello_learner_new (peer, 4, FALSE);
  GstTwoflowHelloLearnerStats st;

  fail_unless (gst_twoflow_hello_learner_allows (l, peer_mapped, 16));
  fail_if (gst_twoflow_hello_learner_allows (l, other, 4));
  /* another address is never learnt, whatever it claims */
  fail_unless_equals_int (gst_twoflow_hello_learner_handle (l, other, 4,
          4000, 10, TRUE, 0), GST_TWOFLOW_HELLO_FOREIGN);
  gst_twoflow_hello_learner_get_stats (l, &st);
  fail_if (st.learned);
  /* the peer's address, any port (the NAT's), as IPv4-mapped IPv6 too */
  fail_unless_equals_int (gst_twoflow_hello_learner_handle (l, peer_mapped,
          16, 40001, 10, FALSE, 1 * S), GST_TWOFLOW_HELLO_LEARNED);
  fail_unless_equals_int (gst_twoflow_hello_learner_handle (l, peer, 4,
          40001, 11, FALSE, 2 * S), GST_TWOFLOW_HELLO_KEPT);
  /* an old counter: a replay */
  fail_unless_equals_int (gst_twoflow_hello_learner_handle (l, peer, 4,
          40009, 11, FALSE, 3 * S), GST_TWOFLOW_HELLO_REPLAYED);
  /* the NAT moved the mapping */
  fail_unless_equals_int (gst_twoflow_hello_learner_handle (l, peer, 4,
          40009, 12, FALSE, 4 * S), GST_TWOFLOW_HELLO_MOVED);
  gst_twoflow_hello_learner_get_stats (l, &st);
  fail_unless (st.learned);
  fail_unless_equals_int (st.addr_len, 4);
  fail_unless (memcmp (st.addr, peer, 4) == 0);
  fail_unless_equals_int (st.port, 40009);
  fail_unless_equals_uint64 (st.accepted, 3);
  fail_unless_equals_uint64 (st.moved, 1);
  fail_unless_equals_uint64 (st.foreign, 1);
  fail_unless_equals_uint64 (st.replayed, 1);
  fail_unless_equals_uint64 (st.forged, 0);
  fail_unless_equals_uint64 (st.last_hello, 4 * S);
  gst_twoflow_hello_learner_free (l);
}

GST_END_TEST;

GST_START_TEST (test_learner_keyed)
{
  GstTwoflowHelloLearner *l = gst_twoflow_hello_learner_new (peer_mapped, 16,
      TRUE);
  GstTwoflowHelloLearnerStats st;

  fail_unless_equals_int (gst_twoflow_hello_learner_handle (l, peer, 4,
          5000, 1, FALSE, 0), GST_TWOFLOW_HELLO_FORGED);
  /* foreign before forged: an outsider's hello costs no key check */
  fail_unless_equals_int (gst_twoflow_hello_learner_handle (l, other, 4,
          5000, 1, FALSE, 0), GST_TWOFLOW_HELLO_FOREIGN);
  gst_twoflow_hello_learner_get_stats (l, &st);
  fail_if (st.learned);
  fail_unless_equals_int (gst_twoflow_hello_learner_handle (l, peer, 4,
          5001, 1, TRUE, 0), GST_TWOFLOW_HELLO_LEARNED);
  /* a forged hello cannot move it */
  fail_unless_equals_int (gst_twoflow_hello_learner_handle (l, peer, 4,
          6666, 99, FALSE, 0), GST_TWOFLOW_HELLO_FORGED);
  gst_twoflow_hello_learner_get_stats (l, &st);
  fail_unless_equals_int (st.port, 5001);
  fail_unless_equals_uint64 (st.forged, 2);
  fail_unless_equals_uint64 (st.foreign, 1);
  fail_unless_equals_string (gst_twoflow_hello_verdict_name
      (GST_TWOFLOW_HELLO_FORGED), "forged");
  gst_twoflow_hello_learner_free (l);
}

GST_END_TEST;

static Suite *
twoflowhello_suite (void)
{
  Suite *s = suite_create ("twoflowhello");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_retry_until_data_then_keepalive);
  tcase_add_test (tc, test_no_data_keeps_retrying);
  tcase_add_test (tc, test_no_keepalive);
  tcase_add_test (tc, test_late_poll_no_burst);
  tcase_add_test (tc, test_learner_plain);
  tcase_add_test (tc, test_learner_keyed);
  return s;
}

GST_CHECK_MAIN (twoflowhello);
