/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP packet codec. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include "erappacket.h"

static inline void
put32 (guint8 * p, guint32 v)
{
  p[0] = v >> 24;
  p[1] = v >> 16;
  p[2] = v >> 8;
  p[3] = v;
}

static inline guint32
get32 (const guint8 * p)
{
  return ((guint32) p[0] << 24) | ((guint32) p[1] << 16) |
      ((guint32) p[2] << 8) | p[3];
}

void
gst_erap_data_header_write (const GstErapDataHeader * h,
    guint8 out[GST_ERAP_DATA_HEADER_SIZE])
{
  put32 (out, h->seqno);
  put32 (out + 4, ((guint32) (h->flags & 3) << GST_ERAP_APPSEQ_BITS) |
      (h->appseq & GST_ERAP_APPSEQ_MASK));
}

/**
 * gst_erap_data_header_parse:
 *
 * Returns: %FALSE for a datagram that cannot be ERAP data (too short, or
 * seqno 0, which is never sent).
 */
gboolean
gst_erap_data_header_parse (const guint8 * data, gsize len,
    GstErapDataHeader * h)
{
  guint32 w;

  if (data == NULL || len < GST_ERAP_DATA_HEADER_SIZE)
    return FALSE;
  h->seqno = get32 (data);
  if (h->seqno == 0)
    return FALSE;
  w = get32 (data + 4);
  h->appseq = w & GST_ERAP_APPSEQ_MASK;
  h->flags = w >> GST_ERAP_APPSEQ_BITS;
  return TRUE;
}

gsize
gst_erap_ack_write (const GstErapAck * ack, guint8 out[GST_ERAP_ACK_MAX_SIZE])
{
  guint8 fam = ack->addr_len == 4 ? 4 : ack->addr_len == 16 ? 6 : 0;

  out[0] = ack->port >> 8;
  out[1] = ack->port & 0xff;
  out[2] = GST_ERAP_ACK_TYPE;
  out[3] = fam;
  put32 (out + 4, ack->seq);
  put32 (out + 8, ack->last_recv);
  put32 (out + 12, ack->last_miss);
  put32 (out + 16, ack->prev_recv);
  if (fam == 0)
    return GST_ERAP_ACK_SIZE;
  memcpy (out + GST_ERAP_ACK_SIZE, ack->addr, ack->addr_len);
  return GST_ERAP_ACK_SIZE + ack->addr_len;
}

/**
 * gst_erap_ack_parse:
 *
 * Strict: the length must match the address family exactly, seq and
 * lastRecv are never 0, and the fields must be consistent
 * (seq <= lastRecv, prevRecv < lastMiss <= lastRecv when set), in serial
 * arithmetic.
 */
gboolean
gst_erap_ack_parse (const guint8 * data, gsize len, GstErapAck * ack)
{
  gsize alen;

  if (data == NULL || len < GST_ERAP_ACK_SIZE || data[2] != GST_ERAP_ACK_TYPE)
    return FALSE;
  switch (data[3]) {
    case 0:
      alen = 0;
      break;
    case 4:
      alen = 4;
      break;
    case 6:
      alen = 16;
      break;
    default:
      return FALSE;
  }
  if (len != GST_ERAP_ACK_SIZE + alen)
    return FALSE;
  ack->port = ((guint16) data[0] << 8) | data[1];
  ack->seq = get32 (data + 4);
  ack->last_recv = get32 (data + 8);
  ack->last_miss = get32 (data + 12);
  ack->prev_recv = get32 (data + 16);
  ack->addr_len = alen;
  memset (ack->addr, 0, sizeof (ack->addr));
  if (alen)
    memcpy (ack->addr, data + GST_ERAP_ACK_SIZE, alen);

  if (ack->seq == 0 || ack->last_recv == 0)
    return FALSE;
  /* the answered packet is at or below the highest received one */
  if ((gint32) (ack->last_recv - ack->seq) < 0)
    return FALSE;
  if (ack->last_miss != 0) {
    /* lastMiss == lastRecv is a receiver's way to claim nothing at all */
    if ((gint32) (ack->last_recv - ack->last_miss) < 0)
      return FALSE;
    if (ack->prev_recv != 0 &&
        (gint32) (ack->last_miss - ack->prev_recv) <= 0)
      return FALSE;
  } else if (ack->prev_recv != 0) {
    return FALSE;
  }
  return TRUE;
}

gboolean
gst_erap_ack_parse_next (const guint8 * data, gsize len, gsize * offset,
    GstErapAck * ack)
{
  gsize off = *offset, rec;

  if (data == NULL || off >= len || len - off < GST_ERAP_ACK_SIZE)
    return FALSE;
  switch (data[off + 3]) {
    case 0:
      rec = GST_ERAP_ACK_SIZE;
      break;
    case 4:
      rec = GST_ERAP_ACK_SIZE + 4;
      break;
    case 6:
      rec = GST_ERAP_ACK_SIZE + 16;
      break;
    default:
      return FALSE;
  }
  if (rec > len - off || !gst_erap_ack_parse (data + off, rec, ack))
    return FALSE;
  *offset = off + rec;
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* RAP baseline: ns-2's hdr_rap, six 32-bit words */

#define RAP_FLAG_BEGIN 0x10
#define RAP_FLAG_END   0x20

void
gst_erap_rap_data_header_write (const GstErapDataHeader * h,
    guint32 payload_len, guint8 out[GST_ERAP_RAP_HEADER_SIZE])
{
  put32 (out, h->seqno);
  put32 (out + 4, payload_len);
  put32 (out + 8, GST_ERAP_RAP_FLAG_DATA |
      ((h->flags & GST_ERAP_FRAG_BEGIN) ? RAP_FLAG_BEGIN : 0) |
      ((h->flags & GST_ERAP_FRAG_END) ? RAP_FLAG_END : 0));
  put32 (out + 12, h->appseq & GST_ERAP_APPSEQ_MASK);
  put32 (out + 16, 0);
  put32 (out + 20, 0);
}

/**
 * gst_erap_rap_data_header_parse:
 *
 * Returns: %FALSE unless @data is a RAP data packet whose size field
 * matches its payload.
 */
gboolean
gst_erap_rap_data_header_parse (const guint8 * data, gsize len,
    GstErapDataHeader * h)
{
  guint32 fl;

  if (data == NULL || len < GST_ERAP_RAP_HEADER_SIZE)
    return FALSE;
  fl = get32 (data + 8);
  if ((fl & ~(guint32) (RAP_FLAG_BEGIN | RAP_FLAG_END)) !=
      GST_ERAP_RAP_FLAG_DATA)
    return FALSE;
  if (get32 (data + 4) != len - GST_ERAP_RAP_HEADER_SIZE)
    return FALSE;
  h->seqno = get32 (data);
  if (h->seqno == 0)
    return FALSE;
  h->appseq = get32 (data + 12);
  if (h->appseq & ~GST_ERAP_APPSEQ_MASK)
    return FALSE;
  h->flags = ((fl & RAP_FLAG_BEGIN) ? GST_ERAP_FRAG_BEGIN : 0) |
      ((fl & RAP_FLAG_END) ? GST_ERAP_FRAG_END : 0);
  return TRUE;
}

gsize
gst_erap_rap_ack_write (const GstErapAck * ack,
    guint8 out[GST_ERAP_RAP_HEADER_SIZE])
{
  put32 (out, ack->seq);
  put32 (out + 4, 0);
  put32 (out + 8, GST_ERAP_RAP_FLAG_ACK);
  put32 (out + 12, ack->last_recv);
  put32 (out + 16, ack->last_miss);
  put32 (out + 20, ack->prev_recv);
  return GST_ERAP_RAP_HEADER_SIZE;
}

gboolean
gst_erap_rap_ack_parse (const guint8 * data, gsize len, GstErapAck * ack)
{
  if (data == NULL || len != GST_ERAP_RAP_HEADER_SIZE)
    return FALSE;
  if (get32 (data + 8) != GST_ERAP_RAP_FLAG_ACK || get32 (data + 4) != 0)
    return FALSE;
  memset (ack, 0, sizeof (*ack));
  ack->seq = get32 (data);
  ack->last_recv = get32 (data + 12);
  ack->last_miss = get32 (data + 16);
  ack->prev_recv = get32 (data + 20);
  return ack->seq != 0;
}

guint
gst_erap_protocol_data_header_size (GstErapProtocol proto)
{
  return proto == GST_ERAP_PROTOCOL_RAP ? GST_ERAP_RAP_HEADER_SIZE :
      GST_ERAP_DATA_HEADER_SIZE;
}

guint
gst_erap_protocol_ack_size (GstErapProtocol proto)
{
  return proto == GST_ERAP_PROTOCOL_RAP ? GST_ERAP_RAP_HEADER_SIZE :
      GST_ERAP_ACK_SIZE;
}

gboolean
gst_erap_protocol_data_header_parse (GstErapProtocol proto,
    const guint8 * data, gsize len, GstErapDataHeader * h)
{
  return proto == GST_ERAP_PROTOCOL_RAP ?
      gst_erap_rap_data_header_parse (data, len, h) :
      gst_erap_data_header_parse (data, len, h);
}

gboolean
gst_erap_protocol_ack_parse (GstErapProtocol proto, const guint8 * data,
    gsize len, GstErapAck * ack)
{
  return proto == GST_ERAP_PROTOCOL_RAP ?
      gst_erap_rap_ack_parse (data, len, ack) :
      gst_erap_ack_parse (data, len, ack);
}

void
gst_erap_hello_write (const GstErapHello * h, guint8 out[GST_ERAP_HELLO_SIZE])
{
  memset (out, 0, GST_ERAP_HELLO_SIZE);
  out[2] = GST_ERAP_HELLO_TYPE;
  out[3] = h->sealed ? GST_ERAP_HELLO_SEALED : 0;
  put32 (out + 4, h->id >> 32);
  put32 (out + 8, h->id & 0xffffffff);
  put32 (out + 12, h->counter >> 32);
  put32 (out + 16, h->counter & 0xffffffff);
  out[20] = h->port >> 8;
  out[21] = h->port & 0xff;
}

gboolean
gst_erap_hello_parse (const guint8 * data, gsize len, GstErapHello * h)
{
  if (data == NULL || len < GST_ERAP_HELLO_SIZE || data[0] || data[1] ||
      data[2] != GST_ERAP_HELLO_TYPE || (data[3] & ~GST_ERAP_HELLO_SEALED) ||
      data[22] || data[23])
    return FALSE;
  h->sealed = (data[3] & GST_ERAP_HELLO_SEALED) != 0;
  if (len != GST_ERAP_HELLO_SIZE + (h->sealed ? 16 : 0))
    return FALSE;
  h->id = ((guint64) get32 (data + 4) << 32) | get32 (data + 8);
  h->counter = ((guint64) get32 (data + 12) << 32) | get32 (data + 16);
  h->port = ((guint16) data[20] << 8) | data[21];
  return TRUE;
}
