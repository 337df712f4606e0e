/* twoflow — rUDP rate levels and the receiver algorithm (sans-IO). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>
#include "rudplevels.h"

void
gst_rudp_levels_init_default (GstRudpLevels * l)
{
  guint i;

  memset (l, 0, sizeof (*l));
  l->n = GST_RUDP_DEFAULT_N_LEVELS;
  for (i = 0; i < l->n; i++)
    l->rate[i] = (guint64) (i + 1) * GST_RUDP_DEFAULT_LEVEL_STEP;
}

gboolean
gst_rudp_levels_set (GstRudpLevels * l, const guint64 * rates, guint n)
{
  guint i;

  if (n == 0 || n > GST_RUDP_MAX_LEVELS)
    return FALSE;
  for (i = 0; i < n; i++)
    if (rates[i] == 0 || (i > 0 && rates[i] <= rates[i - 1]))
      return FALSE;
  memset (l, 0, sizeof (*l));
  l->n = n;
  memcpy (l->rate, rates, n * sizeof (guint64));
  return TRUE;
}

guint
gst_rudp_levels_for_bitrate (const GstRudpLevels * l, guint64 bitrate)
{
  guint i, best = 0;

  for (i = 0; i < l->n; i++)
    if (l->rate[i] * 8 * 1000 <= bitrate * 1001)
      best = i;
  return best;
}

gchar *
gst_rudp_levels_to_string (const GstRudpLevels * l)
{
  GString *s = g_string_new (NULL);
  guint i;

  for (i = 0; i < l->n; i++)
    g_string_append_printf (s, "%s%" G_GUINT64_FORMAT, i ? "," : "",
        l->rate[i]);
  return g_string_free (s, FALSE);
}

gboolean
gst_rudp_levels_from_string (GstRudpLevels * l, const gchar * str)
{
  guint64 rates[GST_RUDP_MAX_LEVELS];
  gchar **parts;
  guint i, n = 0;
  gboolean ok = TRUE;

  if (!str)
    return FALSE;
  parts = g_strsplit_set (str, ", ;<>", -1);
  for (i = 0; parts[i] && ok; i++) {
    gchar *end;
    guint64 v;

    if (parts[i][0] == '\0')
      continue;
    v = g_ascii_strtoull (parts[i], &end, 10);
    if (*end != '\0' || n == GST_RUDP_MAX_LEVELS)
      ok = FALSE;
    else
      rates[n++] = v;
  }
  g_strfreev (parts);
  return ok && gst_rudp_levels_set (l, rates, n);
}

/* ------------------------------------------------------------------ */

struct _GstRudpReceiver {
  GstRudpReceiverConfig c;
  guint level;

  gboolean have_seq;
  guint32 cycles;               /* seq wraps << 16 */
  guint16 max_seq;
  guint32 base_seq;
  guint64 received;

  /* the interval being judged */
  GstClockTime round_start;     /* NONE until the first packet */
  guint64 round_expected0;
  guint64 round_lost;           /* gaps that count, minus late arrivals */

  /* after a decrease: losses below hold_seq do not count */
  gboolean holding;
  guint64 hold_seq;             /* G_MAXUINT64 until the sender's notice */
  GstClockTime hold_deadline;

  GstClockTime srtt;
  guint64 rtt_samples;
  gboolean level_changed;
  GstClockTime last_feedback;

  guint64 increases, decreases, rounds;
  guint8 fraction_lost;
};

void
gst_rudp_receiver_config_init (GstRudpReceiverConfig * c)
{
  c->n_levels = GST_RUDP_DEFAULT_N_LEVELS;
  c->initial_level = 0;
  c->initial_rtt = 100 * GST_MSECOND;
  c->min_interval = 10 * GST_MSECOND;
  c->feedback_interval = 200 * GST_MSECOND;
}

GstRudpReceiver *
gst_rudp_receiver_new (const GstRudpReceiverConfig * c)
{
  GstRudpReceiver *r = g_new0 (GstRudpReceiver, 1);

  r->c = *c;
  r->c.n_levels = CLAMP (r->c.n_levels, 1, GST_RUDP_MAX_LEVELS);
  r->level = MIN (c->initial_level, r->c.n_levels - 1);
  r->round_start = GST_CLOCK_TIME_NONE;
  r->last_feedback = GST_CLOCK_TIME_NONE;
  return r;
}

void
gst_rudp_receiver_free (GstRudpReceiver * r)
{
  g_free (r);
}

static guint64
expected_of (GstRudpReceiver * r)
{
  if (!r->have_seq)
    return 0;
  return (guint64) (r->cycles + r->max_seq) - r->base_seq + 1;
}

static GstClockTime
round_length (GstRudpReceiver * r)
{
  GstClockTime rtt = r->rtt_samples ? r->srtt : r->c.initial_rtt;

  return MAX (rtt, r->c.min_interval);
}

static guint64
ext_max (GstRudpReceiver * r)
{
  return (guint64) r->cycles + r->max_seq;
}

/* extended form of @seq, the one nearest the highest so far */
static guint64
extend (GstRudpReceiver * r, guint16 seq)
{
  gint16 d = (gint16) (seq - r->max_seq);
  gint64 e = (gint64) ext_max (r) + d;

  return e < 0 ? 0 : (guint64) e;
}

static gboolean
counts (GstRudpReceiver * r, guint64 ext)
{
  return !r->holding || ext >= r->hold_seq;
}

void
gst_rudp_receiver_packet (GstRudpReceiver * r, guint16 seq, GstClockTime now)
{
  if (!r->have_seq) {
    r->have_seq = TRUE;
    r->max_seq = seq;
    r->base_seq = seq;
    r->cycles = 0;
  } else {
    guint16 delta = seq - r->max_seq;
    guint64 ext = extend (r, seq);

    /* ahead (modulo 2^16, less than half the space): the newest packet,
     * and the gap before it is lost (for now); otherwise a duplicate or a
     * late packet, which takes back one loss */
    if (delta != 0 && delta < 0x8000) {
      guint64 first = ext_max (r) + 1;

      if (r->holding)
        first = MAX (first, r->hold_seq);
      if (ext > first)
        r->round_lost += ext - first;
      if (seq < r->max_seq)
        r->cycles += 0x10000;
      r->max_seq = seq;
    } else if (delta != 0 && counts (r, ext) && r->round_lost > 0) {
      r->round_lost--;
    }
    if (r->holding && ext >= r->hold_seq)
      r->holding = FALSE;       /* packets at the new level arrive */
  }
  r->received++;
  if (!GST_CLOCK_TIME_IS_VALID (r->round_start)) {
    r->round_start = now;
    /* this packet belongs to the first round */
    r->round_expected0 = expected_of (r) - 1;
  }
}

void
gst_rudp_receiver_level_applied (GstRudpReceiver * r, guint level,
    guint16 seq)
{
  if (r->holding && level == r->level && r->have_seq)
    r->hold_seq = extend (r, seq);
}

void
gst_rudp_receiver_rtt_sample (GstRudpReceiver * r, GstClockTime rtt)
{
  if (r->rtt_samples == 0)
    r->srtt = rtt;
  else                          /* Jacobson's gain of 1/8 */
    r->srtt = (7 * r->srtt + rtt) / 8;
  r->rtt_samples++;
}

static void
judge_round (GstRudpReceiver * r, GstClockTime now)
{
  guint64 exp = expected_of (r);
  gint64 d_exp = exp - r->round_expected0;
  guint64 lost = r->round_lost;

  r->round_expected0 = exp;
  r->round_lost = 0;
  if (d_exp <= 0)
    return;                     /* nothing sent: no verdict */
  r->rounds++;
  r->fraction_lost = (guint8) MIN (255, (lost * 256) / d_exp);
  if (r->holding && now >= r->hold_deadline)
    r->holding = FALSE;         /* no notice came: judge again */
  if (lost > 0) {
    if (r->level > 0) {
      r->level /= 2;
      r->decreases++;
      r->level_changed = TRUE;
      r->holding = TRUE;
      r->hold_seq = G_MAXUINT64;
      r->hold_deadline = now + 2 * round_length (r);
    }
  } else if (r->holding) {
    return;                     /* the new level is not in force yet */
  } else if (r->level + 1 < r->c.n_levels) {
    r->level++;
    r->increases++;
    r->level_changed = TRUE;
  }
}

gboolean
gst_rudp_receiver_advance (GstRudpReceiver * r, GstClockTime now)
{
  if (GST_CLOCK_TIME_IS_VALID (r->round_start)) {
    GstClockTime len = round_length (r);

    if (now >= r->round_start + len) {
      judge_round (r, now);
      /* the next round starts now: a late wakeup stretches one round
       * rather than judging several empty ones */
      r->round_start = now;
    }
  }
  if (r->level_changed)
    return TRUE;
  if (!GST_CLOCK_TIME_IS_VALID (r->round_start))
    return FALSE;               /* nothing received yet: nobody to tell */
  return !GST_CLOCK_TIME_IS_VALID (r->last_feedback)
      || now >= r->last_feedback + r->c.feedback_interval;
}

void
gst_rudp_receiver_feedback_sent (GstRudpReceiver * r, GstClockTime now)
{
  r->level_changed = FALSE;
  r->last_feedback = now;
}

GstClockTime
gst_rudp_receiver_next_wakeup (GstRudpReceiver * r)
{
  GstClockTime t;

  if (!GST_CLOCK_TIME_IS_VALID (r->round_start))
    return GST_CLOCK_TIME_NONE;
  t = r->round_start + round_length (r);
  if (GST_CLOCK_TIME_IS_VALID (r->last_feedback))
    t = MIN (t, r->last_feedback + r->c.feedback_interval);
  return t;
}

guint
gst_rudp_receiver_get_level (GstRudpReceiver * r)
{
  return r->level;
}

void
gst_rudp_receiver_get_stats (GstRudpReceiver * r, GstRudpReceiverStats * st)
{
  guint64 exp = expected_of (r);

  memset (st, 0, sizeof (*st));
  st->received = r->received;
  st->expected = exp;
  st->lost = exp > r->received ? exp - r->received : 0;
  st->holding = r->holding;
  st->ext_max_seq = r->cycles + r->max_seq;
  st->level = r->level;
  st->increases = r->increases;
  st->decreases = r->decreases;
  st->rounds = r->rounds;
  st->srtt = r->srtt;
  st->rtt_samples = r->rtt_samples;
  st->fraction_lost = r->fraction_lost;
}
