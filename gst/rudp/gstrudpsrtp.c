/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — SRTP/SRTCP for rudpsink and rudpsrc.
 *
 * libsrtp2 through its C API, not the srtpenc/srtpdec elements: rudpsink
 * sends each packet from the process-wide pacer thread at its paced time
 * and reads the RTCP feedback on the same socket from that thread, and
 * rudpsrc demultiplexes RTP and RTCP (RFC 5761) on one socket and needs
 * the verdict of each packet (authentication failure or replay, counted in
 * stats, never pushed) before its loss counting and rate core see it.
 * srtpenc/srtpdec are request-pad elements keyed through caps and the
 * request-key signal, and only report failures as debug output: embedding
 * them would mean an appsrc/appsink pair per direction around the socket,
 * another thread hop per packet and no per-packet verdict.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <srtp2/srtp.h>
#include "gstrudpsrtp.h"

G_STATIC_ASSERT (GST_RUDP_SRTP_TRAILER == SRTP_MAX_TRAILER_LEN);

struct _GstRudpSrtp {
  srtp_t tx;                    /* ssrc_any_outbound */
  srtp_t rx;                    /* ssrc_any_inbound */
};

GType
gst_rudp_srtp_cipher_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_RUDP_SRTP_CIPHER_AUTO,
        "From the key length: 30 bytes AES-128-ICM, 46 AES-256-ICM", "auto"},
    {GST_RUDP_SRTP_CIPHER_AES_128_ICM, "AES-128 counter mode (30-byte key)",
        "aes-128-icm"},
    {GST_RUDP_SRTP_CIPHER_AES_256_ICM, "AES-256 counter mode (46-byte key)",
        "aes-256-icm"},
    {GST_RUDP_SRTP_CIPHER_AES_128_GCM, "AES-128-GCM AEAD (28-byte key)",
        "aes-128-gcm"},
    {GST_RUDP_SRTP_CIPHER_AES_256_GCM, "AES-256-GCM AEAD (44-byte key)",
        "aes-256-gcm"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstRudpSrtpCipher", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_rudp_srtp_auth_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_RUDP_SRTP_AUTH_HMAC_SHA1_80, "HMAC-SHA1, 80-bit tag",
        "hmac-sha1-80"},
    {GST_RUDP_SRTP_AUTH_HMAC_SHA1_32, "HMAC-SHA1, 32-bit tag on RTP (80 on "
          "RTCP)", "hmac-sha1-32"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstRudpSrtpAuth", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
parse_hex (const gchar * hex, guint8 * out, gsize max, gsize * len)
{
  gsize n = 0;

  for (; *hex; hex++) {
    gint hi, lo;

    if (*hex == ':' || *hex == ' ' || *hex == '-')
      continue;
    hi = g_ascii_xdigit_value (hex[0]);
    lo = hex[1] ? g_ascii_xdigit_value (hex[1]) : -1;
    if (hi < 0 || lo < 0 || n >= max)
      return FALSE;
    out[n++] = (hi << 4) | lo;
    hex++;
  }
  *len = n;
  return TRUE;
}

static void
set_policy (srtp_crypto_policy_t * rtp, srtp_crypto_policy_t * rtcp,
    GstRudpSrtpCipher cipher, GstRudpSrtpAuth auth)
{
  switch (cipher) {
    case GST_RUDP_SRTP_CIPHER_AES_256_ICM:
      if (auth == GST_RUDP_SRTP_AUTH_HMAC_SHA1_32)
        srtp_crypto_policy_set_aes_cm_256_hmac_sha1_32 (rtp);
      else
        srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80 (rtp);
      srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80 (rtcp);
      break;
    case GST_RUDP_SRTP_CIPHER_AES_128_GCM:
      srtp_crypto_policy_set_aes_gcm_128_16_auth (rtp);
      srtp_crypto_policy_set_aes_gcm_128_16_auth (rtcp);
      break;
    case GST_RUDP_SRTP_CIPHER_AES_256_GCM:
      srtp_crypto_policy_set_aes_gcm_256_16_auth (rtp);
      srtp_crypto_policy_set_aes_gcm_256_16_auth (rtcp);
      break;
    default:
      if (auth == GST_RUDP_SRTP_AUTH_HMAC_SHA1_32)
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32 (rtp);
      else
        srtp_crypto_policy_set_rtp_default (rtp);
      srtp_crypto_policy_set_rtcp_default (rtcp);
      break;
  }
}

static gsize
key_length (GstRudpSrtpCipher c)
{
  switch (c) {
    case GST_RUDP_SRTP_CIPHER_AES_128_ICM:
      return 30;
    case GST_RUDP_SRTP_CIPHER_AES_256_ICM:
      return 46;
    case GST_RUDP_SRTP_CIPHER_AES_128_GCM:
      return 28;
    case GST_RUDP_SRTP_CIPHER_AES_256_GCM:
      return 44;
    default:
      return 0;
  }
}

GstRudpSrtp *
gst_rudp_srtp_new (const gchar * key, GstRudpSrtpCipher cipher,
    GstRudpSrtpAuth auth, GError ** error)
{
  static gsize inited = 0;
  guint8 k[64];
  gsize len = 0;
  srtp_policy_t policy;
  srtp_err_status_t st;
  GstRudpSrtp *s;

  if (g_once_init_enter (&inited)) {
    srtp_init ();
    g_once_init_leave (&inited, 1);
  }
  if (!parse_hex (key, k, sizeof (k), &len)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "the SRTP key is not a hex string of at most 64 bytes");
    return NULL;
  }
  if (cipher == GST_RUDP_SRTP_CIPHER_AUTO)
    cipher = len == 46 ? GST_RUDP_SRTP_CIPHER_AES_256_ICM :
        GST_RUDP_SRTP_CIPHER_AES_128_ICM;
  if (len != key_length (cipher)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "the SRTP key has %" G_GSIZE_FORMAT " bytes, the cipher needs %"
        G_GSIZE_FORMAT " (master key and salt)", len, key_length (cipher));
    memset (k, 0, sizeof (k));
    return NULL;
  }
  s = g_new0 (GstRudpSrtp, 1);
  memset (&policy, 0, sizeof (policy));
  set_policy (&policy.rtp, &policy.rtcp, cipher, auth);
  policy.key = k;
  policy.window_size = 1024;
  policy.allow_repeat_tx = 0;
  policy.ssrc.type = ssrc_any_outbound;
  st = srtp_create (&s->tx, &policy);
  if (st == srtp_err_status_ok) {
    policy.ssrc.type = ssrc_any_inbound;
    st = srtp_create (&s->rx, &policy);
  }
  memset (k, 0, sizeof (k));
  if (st != srtp_err_status_ok) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
        "libsrtp2 refused the policy (error %d)", st);
    gst_rudp_srtp_free (s);
    return NULL;
  }
  return s;
}

void
gst_rudp_srtp_free (GstRudpSrtp * s)
{
  if (!s)
    return;
  if (s->tx)
    srtp_dealloc (s->tx);
  if (s->rx)
    srtp_dealloc (s->rx);
  g_free (s);
}

gint
gst_rudp_srtp_protect (GstRudpSrtp * s, guint8 * buf, gint len, gboolean rtcp)
{
  srtp_err_status_t st = rtcp ? srtp_protect_rtcp (s->tx, buf, &len) :
      srtp_protect (s->tx, buf, &len);

  return st == srtp_err_status_ok ? len : -1;
}

GstRudpSrtpResult
gst_rudp_srtp_unprotect (GstRudpSrtp * s, guint8 * buf, gint * len,
    gboolean rtcp)
{
  srtp_err_status_t st = rtcp ? srtp_unprotect_rtcp (s->rx, buf, len) :
      srtp_unprotect (s->rx, buf, len);

  switch (st) {
    case srtp_err_status_ok:
      return GST_RUDP_SRTP_OK;
    case srtp_err_status_replay_fail:
    case srtp_err_status_replay_old:
      return GST_RUDP_SRTP_REPLAYED;
    default:
      return GST_RUDP_SRTP_AUTH_FAILED;
  }
}

gboolean
gst_rudp_same_address (GSocketAddress * a, GSocketAddress * b)
{
  GInetSocketAddress *ia, *ib;

  if (!G_IS_INET_SOCKET_ADDRESS (a) || !G_IS_INET_SOCKET_ADDRESS (b))
    return FALSE;
  ia = G_INET_SOCKET_ADDRESS (a);
  ib = G_INET_SOCKET_ADDRESS (b);
  return g_inet_socket_address_get_port (ia) ==
      g_inet_socket_address_get_port (ib)
      && g_inet_address_equal (g_inet_socket_address_get_address (ia),
      g_inet_socket_address_get_address (ib));
}
