/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP feedback codec (sans-IO). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <gst/rtp/gstrtcpbuffer.h>
#include "rudpfeedback.h"

gboolean
gst_rudp_is_rtcp (const guint8 * data, gsize len)
{
  /* version 2, and a packet type of 192..223 in place of M+PT */
  return len >= 8 && (data[0] >> 6) == 2 && data[1] >= 192 && data[1] <= 223;
}

guint32
gst_rudp_ntp_short (GstClockTime t)
{
  return (guint32) gst_util_uint64_scale (t, 65536, GST_SECOND);
}

GstClockTime
gst_rudp_ntp_short_to_time (guint32 v)
{
  return gst_util_uint64_scale (v, GST_SECOND, 65536);
}

guint32
gst_rudp_tmmbr_encode (guint64 bitrate, guint overhead)
{
  guint exp = 0;
  guint64 m = bitrate;

  /* smallest exponent whose rounded mantissa fits in 17 bits */
  while (m >= (1 << 17) && exp < 63) {
    exp++;
    m = (bitrate + (G_GUINT64_CONSTANT (1) << (exp - 1))) >> exp;
  }
  return (exp << 26) | ((guint32) (m & 0x1ffff) << 9) | MIN (overhead, 511);
}

void
gst_rudp_tmmbr_decode (guint32 word, guint64 * bitrate, guint * overhead)
{
  guint exp = word >> 26;
  guint64 m = (word >> 9) & 0x1ffff;

  *bitrate = exp < 47 ? m << exp : G_MAXUINT64;
  *overhead = word & 0x1ff;
}

static void
put_fb_tmm (GstRTCPBuffer * rtcp, GstRTCPFBType type, guint32 ssrc,
    guint32 fci_ssrc, guint64 bitrate, guint overhead)
{
  GstRTCPPacket p;
  guint8 *fci;

  if (!gst_rtcp_buffer_add_packet (rtcp, GST_RTCP_TYPE_RTPFB, &p))
    return;
  gst_rtcp_packet_fb_set_type (&p, type);
  gst_rtcp_packet_fb_set_sender_ssrc (&p, ssrc);
  gst_rtcp_packet_fb_set_media_ssrc (&p, 0);    /* RFC 5104 4.2.1.2 */
  gst_rtcp_packet_fb_set_fci_length (&p, 2);
  fci = gst_rtcp_packet_fb_get_fci (&p);
  GST_WRITE_UINT32_BE (fci, fci_ssrc);
  GST_WRITE_UINT32_BE (fci + 4, gst_rudp_tmmbr_encode (bitrate, overhead));
}

static void
put_app (GstRTCPBuffer * rtcp, guint subtype, guint32 ssrc, guint level,
    guint n_levels, guint16 seq, guint32 w1, guint32 w2, const guint32 * w3)
{
  GstRTCPPacket p;
  guint8 *d;

  if (!gst_rtcp_buffer_add_packet (rtcp, GST_RTCP_TYPE_APP, &p))
    return;
  gst_rtcp_packet_app_set_subtype (&p, subtype);
  gst_rtcp_packet_app_set_ssrc (&p, ssrc);
  gst_rtcp_packet_app_set_name (&p, GST_RUDP_APP_NAME);
  gst_rtcp_packet_app_set_data_length (&p, w3 ? 4 : 3);
  d = gst_rtcp_packet_app_get_data (&p);
  if (w3)
    GST_WRITE_UINT32_BE (d + 12, *w3);
  d[0] = level;
  d[1] = n_levels;
  GST_WRITE_UINT16_BE (d + 2, seq);
  GST_WRITE_UINT32_BE (d + 4, w1);
  GST_WRITE_UINT32_BE (d + 8, w2);
}

GstBuffer *
gst_rudp_request_write (const GstRudpRequest * req)
{
  GstBuffer *buf = gst_rtcp_buffer_new (1400);
  GstRTCPBuffer rtcp = GST_RTCP_BUFFER_INIT;
  GstRTCPPacket p;

  gst_rtcp_buffer_map (buf, GST_MAP_READWRITE, &rtcp);
  if (gst_rtcp_buffer_add_packet (&rtcp, GST_RTCP_TYPE_RR, &p)) {
    gst_rtcp_packet_rr_set_ssrc (&p, req->ssrc);
    gst_rtcp_packet_add_rb (&p, req->media_ssrc, req->fraction_lost,
        MIN (req->packets_lost, 0x7fffff), req->ext_max_seq, 0, 0, 0);
  }
  if (req->has_bitrate)
    put_fb_tmm (&rtcp, GST_RTCP_RTPFB_TYPE_TMMBR, req->ssrc, req->media_ssrc,
        req->bitrate, req->overhead);
  if (req->has_level)
    put_app (&rtcp, GST_RUDP_APP_REQUEST, req->ssrc, req->level,
        req->n_levels, 0, req->timestamp, req->srtt_us,
        req->rtt_us ? &req->rtt_us : NULL);
  gst_rtcp_buffer_unmap (&rtcp);
  return buf;
}

GstBuffer *
gst_rudp_notice_write (const GstRudpNotice * n)
{
  GstBuffer *buf = gst_rtcp_buffer_new (1400);
  GstRTCPBuffer rtcp = GST_RTCP_BUFFER_INIT;
  GstRTCPPacket p;

  gst_rtcp_buffer_map (buf, GST_MAP_READWRITE, &rtcp);
  if (gst_rtcp_buffer_add_packet (&rtcp, GST_RTCP_TYPE_RR, &p))
    gst_rtcp_packet_rr_set_ssrc (&p, n->ssrc);
  if (n->has_bitrate)
    put_fb_tmm (&rtcp, GST_RTCP_RTPFB_TYPE_TMMBN, n->ssrc,
        n->requester_ssrc, n->bitrate, n->overhead);
  if (n->has_level)
    put_app (&rtcp, GST_RUDP_APP_NOTICE, n->ssrc, n->level, n->n_levels,
        n->since_seq, n->echo_timestamp, n->delay, NULL);
  gst_rtcp_buffer_unmap (&rtcp);
  return buf;
}

/* Walks a compound packet; calls back for the parts we know. */
typedef struct {
  gboolean have_rr;
  guint32 rr_ssrc;
  gboolean have_rb;
  guint32 rb_ssrc, rb_lost, rb_ext;
  guint8 rb_fraction;
  gboolean have_tmm;
  guint32 tmm_sender, tmm_ssrc, tmm_word;
  gboolean have_app;
  guint32 app_ssrc;
  guint8 app_d[16];             /* the fourth word 0 when absent */
} Parsed;

static gboolean
parse_compound (GstBuffer * buf, GstRTCPFBType want_fb, guint want_app,
    Parsed * out)
{
  GstRTCPBuffer rtcp = GST_RTCP_BUFFER_INIT;
  GstRTCPPacket p;
  gboolean more;

  memset (out, 0, sizeof (*out));
  if (!gst_rtcp_buffer_validate_reduced (buf))
    return FALSE;
  if (!gst_rtcp_buffer_map (buf, GST_MAP_READ, &rtcp))
    return FALSE;
  for (more = gst_rtcp_buffer_get_first_packet (&rtcp, &p); more;
      more = gst_rtcp_packet_move_to_next (&p)) {
    switch (gst_rtcp_packet_get_type (&p)) {
      case GST_RTCP_TYPE_RR:
        out->have_rr = TRUE;
        out->rr_ssrc = gst_rtcp_packet_rr_get_ssrc (&p);
        if (gst_rtcp_packet_get_rb_count (&p) > 0) {
          guint8 fl;
          gint32 lost;
          guint32 ext, jit, lsr, dlsr;

          gst_rtcp_packet_get_rb (&p, 0, &out->rb_ssrc, &fl, &lost, &ext,
              &jit, &lsr, &dlsr);
          out->have_rb = TRUE;
          out->rb_fraction = fl;
          out->rb_lost = lost < 0 ? 0 : lost;
          out->rb_ext = ext;
        }
        break;
      case GST_RTCP_TYPE_RTPFB:
        if (gst_rtcp_packet_fb_get_type (&p) == want_fb
            && gst_rtcp_packet_fb_get_fci_length (&p) >= 2) {
          guint8 *fci = gst_rtcp_packet_fb_get_fci (&p);

          out->have_tmm = TRUE;
          out->tmm_sender = gst_rtcp_packet_fb_get_sender_ssrc (&p);
          out->tmm_ssrc = GST_READ_UINT32_BE (fci);
          out->tmm_word = GST_READ_UINT32_BE (fci + 4);
        }
        break;
      case GST_RTCP_TYPE_APP:{
        const gchar *name = gst_rtcp_packet_app_get_name (&p);

        if (name && memcmp (name, GST_RUDP_APP_NAME, 4) == 0
            && gst_rtcp_packet_app_get_subtype (&p) == want_app
            && gst_rtcp_packet_app_get_data_length (&p) >= 3) {
          out->have_app = TRUE;
          out->app_ssrc = gst_rtcp_packet_app_get_ssrc (&p);
          memcpy (out->app_d, gst_rtcp_packet_app_get_data (&p),
              gst_rtcp_packet_app_get_data_length (&p) >= 4 ? 16 : 12);
        }
        break;
      }
      default:
        break;
    }
  }
  gst_rtcp_buffer_unmap (&rtcp);
  return out->have_tmm || out->have_app;
}

gboolean
gst_rudp_request_parse (GstBuffer * buf, GstRudpRequest * req)
{
  Parsed p;

  memset (req, 0, sizeof (*req));
  if (!parse_compound (buf, GST_RTCP_RTPFB_TYPE_TMMBR, GST_RUDP_APP_REQUEST,
          &p))
    return FALSE;
  req->ssrc = p.have_app ? p.app_ssrc : p.have_tmm ? p.tmm_sender : p.rr_ssrc;
  if (p.have_rb) {
    req->media_ssrc = p.rb_ssrc;
    req->fraction_lost = p.rb_fraction;
    req->packets_lost = p.rb_lost;
    req->ext_max_seq = p.rb_ext;
  }
  if (p.have_tmm) {
    req->has_bitrate = TRUE;
    req->media_ssrc = p.tmm_ssrc;
    gst_rudp_tmmbr_decode (p.tmm_word, &req->bitrate, &req->overhead);
  }
  if (p.have_app) {
    req->has_level = TRUE;
    req->level = p.app_d[0];
    req->n_levels = p.app_d[1];
    req->timestamp = GST_READ_UINT32_BE (p.app_d + 4);
    req->srtt_us = GST_READ_UINT32_BE (p.app_d + 8);
    req->rtt_us = GST_READ_UINT32_BE (p.app_d + 12);
  }
  return TRUE;
}

gboolean
gst_rudp_notice_parse (GstBuffer * buf, GstRudpNotice * n)
{
  Parsed p;

  memset (n, 0, sizeof (*n));
  if (!parse_compound (buf, GST_RTCP_RTPFB_TYPE_TMMBN, GST_RUDP_APP_NOTICE,
          &p))
    return FALSE;
  n->ssrc = p.have_app ? p.app_ssrc : p.tmm_sender;
  if (p.have_tmm) {
    n->has_bitrate = TRUE;
    n->requester_ssrc = p.tmm_ssrc;
    gst_rudp_tmmbr_decode (p.tmm_word, &n->bitrate, &n->overhead);
  }
  if (p.have_app) {
    n->has_level = TRUE;
    n->level = p.app_d[0];
    n->n_levels = p.app_d[1];
    n->since_seq = GST_READ_UINT16_BE (p.app_d + 2);
    n->echo_timestamp = GST_READ_UINT32_BE (p.app_d + 4);
    n->delay = GST_READ_UINT32_BE (p.app_d + 8);
  }
  return TRUE;
}

void
gst_rudp_hello_write (guint8 out[GST_RUDP_HELLO_SIZE], guint32 ssrc,
    guint64 id, guint64 counter)
{
  /* RR, no report blocks: length 1 (two words) */
  out[0] = 0x80;
  out[1] = 201;
  GST_WRITE_UINT16_BE (out + 2, 1);
  GST_WRITE_UINT32_BE (out + 4, ssrc);
  /* APP, subtype 0: 7 words, length 6 */
  out[8] = 0x80;
  out[9] = 204;
  GST_WRITE_UINT16_BE (out + 10, 6);
  GST_WRITE_UINT32_BE (out + 12, ssrc);
  memcpy (out + 16, GST_RUDP_HELLO_NAME, 4);
  GST_WRITE_UINT64_BE (out + 20, id);
  GST_WRITE_UINT64_BE (out + 28, counter);
}

gboolean
gst_rudp_hello_parse (const guint8 * data, gsize len, guint32 * ssrc,
    guint64 * id, guint64 * counter)
{
  if (len != GST_RUDP_HELLO_SIZE || data[0] != 0x80 || data[1] != 201 ||
      GST_READ_UINT16_BE (data + 2) != 1 || data[8] != 0x80 ||
      data[9] != 204 || GST_READ_UINT16_BE (data + 10) != 6 ||
      memcmp (data + 16, GST_RUDP_HELLO_NAME, 4) != 0 ||
      GST_READ_UINT32_BE (data + 4) != GST_READ_UINT32_BE (data + 12))
    return FALSE;
  *ssrc = GST_READ_UINT32_BE (data + 4);
  *id = GST_READ_UINT64_BE (data + 20);
  *counter = GST_READ_UINT64_BE (data + 28);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Generic NACK */

GstBuffer *
gst_rudp_nack_write (guint32 ssrc, guint32 media_ssrc, const guint16 * seqs,
    guint n)
{
  GstBuffer *buf = gst_rtcp_buffer_new (1400);
  GstRTCPBuffer rtcp = GST_RTCP_BUFFER_INIT;
  GstRTCPPacket p;
  guint32 fci[64];
  guint n_fci = 0, i, j;
  gboolean *done = g_newa (gboolean, MAX (n, 1));

  memset (done, 0, sizeof (gboolean) * MAX (n, 1));
  /* PID and the bitmask of the 16 sequence numbers after it */
  for (i = 0; i < n && n_fci < G_N_ELEMENTS (fci); i++) {
    guint16 blp = 0;

    if (done[i])
      continue;
    for (j = i + 1; j < n; j++) {
      guint16 d = seqs[j] - seqs[i];
      if (!done[j] && d >= 1 && d <= 16) {
        blp |= 1 << (d - 1);
        done[j] = TRUE;
      }
    }
    fci[n_fci++] = ((guint32) seqs[i] << 16) | blp;
  }
  gst_rtcp_buffer_map (buf, GST_MAP_READWRITE, &rtcp);
  if (gst_rtcp_buffer_add_packet (&rtcp, GST_RTCP_TYPE_RR, &p))
    gst_rtcp_packet_rr_set_ssrc (&p, ssrc);
  if (gst_rtcp_buffer_add_packet (&rtcp, GST_RTCP_TYPE_RTPFB, &p)) {
    gst_rtcp_packet_fb_set_type (&p, GST_RTCP_RTPFB_TYPE_NACK);
    gst_rtcp_packet_fb_set_sender_ssrc (&p, ssrc);
    gst_rtcp_packet_fb_set_media_ssrc (&p, media_ssrc);
    if (gst_rtcp_packet_fb_set_fci_length (&p, n_fci)) {
      guint8 *f = gst_rtcp_packet_fb_get_fci (&p);
      for (i = 0; i < n_fci; i++)
        GST_WRITE_UINT32_BE (f + 4 * i, fci[i]);
    }
  }
  gst_rtcp_buffer_unmap (&rtcp);
  return buf;
}

gboolean
gst_rudp_nack_parse (GstBuffer * buf, guint32 * media_ssrc, GArray * seqs)
{
  GstRTCPBuffer rtcp = GST_RTCP_BUFFER_INIT;
  GstRTCPPacket p;
  gboolean more, found = FALSE;

  if (!gst_rtcp_buffer_validate_reduced (buf))
    return FALSE;
  if (!gst_rtcp_buffer_map (buf, GST_MAP_READ, &rtcp))
    return FALSE;
  for (more = gst_rtcp_buffer_get_first_packet (&rtcp, &p); more;
      more = gst_rtcp_packet_move_to_next (&p)) {
    guint len, i, b;
    guint8 *f;

    if (gst_rtcp_packet_get_type (&p) != GST_RTCP_TYPE_RTPFB
        || gst_rtcp_packet_fb_get_type (&p) != GST_RTCP_RTPFB_TYPE_NACK)
      continue;
    found = TRUE;
    if (media_ssrc)
      *media_ssrc = gst_rtcp_packet_fb_get_media_ssrc (&p);
    len = gst_rtcp_packet_fb_get_fci_length (&p);
    f = gst_rtcp_packet_fb_get_fci (&p);
    for (i = 0; f && i < len; i++) {
      guint16 pid = GST_READ_UINT16_BE (f + 4 * i);
      guint16 blp = GST_READ_UINT16_BE (f + 4 * i + 2);

      g_array_append_val (seqs, pid);
      for (b = 0; b < 16; b++)
        if (blp & (1 << b)) {
          guint16 q = pid + b + 1;
          g_array_append_val (seqs, q);
        }
    }
  }
  gst_rtcp_buffer_unmap (&rtcp);
  return found;
}
