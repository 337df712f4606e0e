/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — NAT traversal: the receiver's hello (see twoflowhello.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include "twoflowhello.h"

struct _GstTwoflowHello {
  GstClockTime retry, keepalive;
  GstClockTime next;            /* next hello due, NONE: never */
  GstClockTime last_sent;       /* NONE: none yet */
  guint64 counter;              /* of the next hello */
  GstTwoflowHelloStats st;
};

GstTwoflowHello *
gst_twoflow_hello_new (GstClockTime retry_interval,
    GstClockTime keepalive_interval, guint64 first_counter, GstClockTime now)
{
  GstTwoflowHello *h = g_new0 (GstTwoflowHello, 1);

  h->retry = MAX (retry_interval, GST_MSECOND);
  h->keepalive = keepalive_interval;
  h->next = now;
  h->last_sent = GST_CLOCK_TIME_NONE;
  h->counter = MAX (first_counter, 1);
  return h;
}

void
gst_twoflow_hello_free (GstTwoflowHello * h)
{
  g_free (h);
}

void
gst_twoflow_hello_handle_data (GstTwoflowHello * h, GstClockTime now)
{
  if (h->st.data_seen)
    return;
  h->st.data_seen = TRUE;
  /* the last hello got through: the next one keeps the mapping */
  if (h->keepalive == 0)
    h->next = GST_CLOCK_TIME_NONE;
  else if (GST_CLOCK_TIME_IS_VALID (h->last_sent))
    h->next = h->last_sent + h->keepalive;
  else
    h->next = now + h->keepalive;
}

gboolean
gst_twoflow_hello_poll (GstTwoflowHello * h, GstClockTime now,
    guint64 * counter)
{
  if (!GST_CLOCK_TIME_IS_VALID (h->next) || now < h->next)
    return FALSE;
  *counter = h->counter++;
  h->st.counter = *counter;
  h->st.hellos++;
  h->last_sent = now;
  if (!h->st.data_seen)
    h->next = now + h->retry;
  else if (h->keepalive)
    h->next = now + h->keepalive;
  else
    h->next = GST_CLOCK_TIME_NONE;
  return TRUE;
}

GstClockTime
gst_twoflow_hello_next_wakeup (GstTwoflowHello * h)
{
  return h->next;
}

void
gst_twoflow_hello_get_stats (GstTwoflowHello * h, GstTwoflowHelloStats * st)
{
  *st = h->st;
}

/* ------------------------------------------------------------ learner */

struct _GstTwoflowHelloLearner {
  guint8 allowed[16];
  gsize allowed_len;
  gboolean keyed;
  guint64 last_counter;
  GstTwoflowHelloLearnerStats st;
};

static const guint8 v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* IPv4-mapped IPv6 -> IPv4 */
static void
normalize (const guint8 * addr, gsize len, const guint8 ** out, gsize * out_len)
{
  if (len == 16 && memcmp (addr, v4mapped, 12) == 0) {
    *out = addr + 12;
    *out_len = 4;
  } else {
    *out = addr;
    *out_len = len;
  }
}

GstTwoflowHelloLearner *
gst_twoflow_hello_learner_new (const guint8 * allowed, gsize allowed_len,
    gboolean keyed)
{
  GstTwoflowHelloLearner *l;
  const guint8 *a;
  gsize n;

  g_return_val_if_fail (allowed_len == 4 || allowed_len == 16, NULL);
  l = g_new0 (GstTwoflowHelloLearner, 1);
  normalize (allowed, allowed_len, &a, &n);
  memcpy (l->allowed, a, n);
  l->allowed_len = n;
  l->keyed = keyed;
  l->st.last_hello = GST_CLOCK_TIME_NONE;
  return l;
}

void
gst_twoflow_hello_learner_free (GstTwoflowHelloLearner * l)
{
  g_free (l);
}

gboolean
gst_twoflow_hello_learner_allows (GstTwoflowHelloLearner * l,
    const guint8 * addr, gsize addr_len)
{
  const guint8 *a;
  gsize n;

  normalize (addr, addr_len, &a, &n);
  return n == l->allowed_len && memcmp (a, l->allowed, n) == 0;
}

GstTwoflowHelloVerdict
gst_twoflow_hello_learner_handle (GstTwoflowHelloLearner * l,
    const guint8 * addr, gsize addr_len, guint16 port, guint64 counter,
    gboolean authentic, GstClockTime now)
{
  const guint8 *a;
  gsize n;
  GstTwoflowHelloVerdict v;

  normalize (addr, addr_len, &a, &n);
  /* no reflection: only the control peer's address may name a destination */
  if (!gst_twoflow_hello_learner_allows (l, addr, addr_len)) {
    l->st.foreign++;
    return GST_TWOFLOW_HELLO_FOREIGN;
  }
  if (l->keyed && !authentic) {
    l->st.forged++;
    return GST_TWOFLOW_HELLO_FORGED;
  }
  if (l->st.learned && counter <= l->last_counter) {
    l->st.replayed++;
    return GST_TWOFLOW_HELLO_REPLAYED;
  }
  l->last_counter = counter;
  l->st.accepted++;
  l->st.last_hello = now;
  if (!l->st.learned) {
    v = GST_TWOFLOW_HELLO_LEARNED;
  } else if (port != l->st.port) {
    l->st.moved++;
    v = GST_TWOFLOW_HELLO_MOVED;
  } else {
    return GST_TWOFLOW_HELLO_KEPT;
  }
  l->st.learned = TRUE;
  memcpy (l->st.addr, a, n);
  l->st.addr_len = n;
  l->st.port = port;
  return v;
}

void
gst_twoflow_hello_learner_get_stats (GstTwoflowHelloLearner * l,
    GstTwoflowHelloLearnerStats * st)
{
  *st = l->st;
}

const gchar *
gst_twoflow_hello_verdict_name (GstTwoflowHelloVerdict v)
{
  static const gchar *names[] = { "learned", "moved", "kept", "foreign",
    "forged", "replayed"
  };

  return v <= GST_TWOFLOW_HELLO_REPLAYED ? names[v] : "?";
}
