/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP sender side of the rate levels (sans-IO). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include "rudpfeedback.h"
#include "rudpsender.h"

typedef struct {
  guint32 requester_ssrc;
  gboolean has_level;
  guint32 timestamp;
  GstClockTime received;
  gpointer peer;
  GDestroyNotify peer_free;
} Pending;

struct _GstRudpSender {
  GstRudpSenderConfig c;
  GstRudpSenderStats st;
  guint16 next_seq;             /* of the next RTP packet to leave */
  gboolean level_pending;       /* a LEVEL output to give */
  GQueue answers;               /* Pending */
};

void
gst_rudp_sender_config_init (GstRudpSenderConfig * c)
{
  gst_rudp_levels_init_default (&c->levels);
  c->initial_level = 0;
  c->follow = TRUE;
}

GstRudpSender *
gst_rudp_sender_new (const GstRudpSenderConfig * c)
{
  GstRudpSender *s = g_new0 (GstRudpSender, 1);

  s->c = *c;
  if (s->c.levels.n == 0)
    gst_rudp_levels_init_default (&s->c.levels);
  s->st.level = MIN (c->initial_level, s->c.levels.n - 1);
  s->st.bitrate = s->c.levels.rate[s->st.level];
  g_queue_init (&s->answers);
  return s;
}

static void
pending_free (Pending * p)
{
  if (p->peer_free && p->peer)
    p->peer_free (p->peer);
  g_free (p);
}

void
gst_rudp_sender_free (GstRudpSender * s)
{
  g_queue_clear_full (&s->answers, (GDestroyNotify) pending_free);
  g_free (s);
}

void
gst_rudp_sender_handle_rtp (GstRudpSender * s, const guint8 * data,
    gsize len)
{
  if (len < 12 || (data[0] >> 6) != 2)
    return;
  s->next_seq = GST_READ_UINT16_BE (data + 2) + 1;
  s->st.ssrc = GST_READ_UINT32_BE (data + 8);
}

static void
switch_level (GstRudpSender * s, guint level)
{
  level = MIN (level, s->c.levels.n - 1);
  if (level == s->st.level)
    return;
  s->st.level = level;
  s->st.bitrate = s->c.levels.rate[level];
  s->st.level_seq = s->next_seq;
  s->st.level_changes++;
  s->level_pending = TRUE;
}

gboolean
gst_rudp_sender_handle_request (GstRudpSender * s, const guint8 * data,
    gsize len, gpointer peer, GDestroyNotify peer_free, GstClockTime now)
{
  GstBuffer *buf;
  GstRudpRequest req;
  Pending *p;
  gboolean ok;
  guint level;

  buf = gst_buffer_new_memdup (data, len);
  ok = gst_rudp_is_rtcp (data, len) && gst_rudp_request_parse (buf, &req);
  gst_buffer_unref (buf);
  if (!ok) {
    s->st.invalid++;
    if (peer_free && peer)
      peer_free (peer);
    return FALSE;
  }
  s->st.requests++;
  if (req.ext_max_seq != 0 && (req.media_ssrc == s->st.ssrc
          || s->st.ssrc == 0)) {
    s->st.rr_reports++;
    s->st.rr_ext_max_seq = req.ext_max_seq;
    /* 24-bit signed on the wire */
    s->st.rr_lost = req.packets_lost <= 0xffffff
        && (req.packets_lost & 0x800000) ?
        (gint32) (req.packets_lost | 0xff000000) : (gint32) req.packets_lost;
    s->st.rr_fraction_lost = req.fraction_lost;
  }
  /* the exact level when the peer shares our table, else by bitrate */
  if (req.has_level && req.n_levels == s->c.levels.n)
    level = req.level;
  else if (req.has_bitrate)
    level = gst_rudp_levels_for_bitrate (&s->c.levels, req.bitrate);
  else
    level = s->st.level;
  if (req.has_level)
    s->st.srtt = (GstClockTime) req.srtt_us * GST_USECOND;
  if (req.has_level && req.rtt_us) {
    s->st.rtt = (GstClockTime) req.rtt_us * GST_USECOND;
    s->st.rtt_samples++;
  }
  if (s->c.follow)
    switch_level (s, level);

  p = g_new0 (Pending, 1);
  p->requester_ssrc = req.ssrc;
  p->has_level = req.has_level;
  p->timestamp = req.timestamp;
  p->received = now;
  p->peer = peer;
  p->peer_free = peer_free;
  g_queue_push_tail (&s->answers, p);
  return TRUE;
}

void
gst_rudp_sender_set_level (GstRudpSender * s, guint level, GstClockTime now)
{
  switch_level (s, level);
}

gboolean
gst_rudp_sender_poll (GstRudpSender * s, GstClockTime now,
    GstRudpSenderOutput * out)
{
  GstRudpNotice n = { 0 };
  Pending *p;

  memset (out, 0, sizeof (*out));
  if (s->level_pending) {
    s->level_pending = FALSE;
    out->type = GST_RUDP_SENDER_OUTPUT_LEVEL;
    out->level = s->st.level;
    out->bitrate = s->st.bitrate;
    out->srtt = s->st.srtt ? s->st.srtt : GST_CLOCK_TIME_NONE;
    return TRUE;
  }
  p = g_queue_pop_head (&s->answers);
  if (!p)
    return FALSE;
  n.ssrc = s->st.ssrc;
  n.requester_ssrc = p->requester_ssrc;
  n.has_bitrate = TRUE;
  n.bitrate = s->st.bitrate;
  n.overhead = GST_RUDP_PACKET_OVERHEAD;
  n.has_level = p->has_level;
  n.level = s->st.level;
  n.n_levels = s->c.levels.n;
  n.since_seq = s->st.level_seq;
  n.echo_timestamp = p->timestamp;
  n.delay = gst_rudp_ntp_short (now > p->received ? now - p->received : 0);
  out->type = GST_RUDP_SENDER_OUTPUT_NOTICE;
  out->buffer = gst_rudp_notice_write (&n);
  out->peer = p->peer;
  s->st.notices++;
  g_free (p);
  return TRUE;
}

GstClockTime
gst_rudp_sender_next_wakeup (GstRudpSender * s)
{
  return s->level_pending || !g_queue_is_empty (&s->answers) ? 0 :
      GST_CLOCK_TIME_NONE;
}

guint
gst_rudp_sender_get_level (GstRudpSender * s)
{
  return s->st.level;
}

guint64
gst_rudp_sender_get_bitrate (GstRudpSender * s)
{
  return s->st.bitrate;
}

void
gst_rudp_sender_get_stats (GstRudpSender * s, GstRudpSenderStats * st)
{
  *st = s->st;
}
