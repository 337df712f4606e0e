/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — SRTP/SRTCP for rudpsink and rudpsrc, on libsrtp2's C API */
#ifndef __GST_RUDP_SRTP_H__
#define __GST_RUDP_SRTP_H__

#include <gst/gst.h>
#include <gio/gio.h>

G_BEGIN_DECLS

typedef enum {
  GST_RUDP_SRTP_CIPHER_AUTO = 0,
  GST_RUDP_SRTP_CIPHER_AES_128_ICM = 1,
  GST_RUDP_SRTP_CIPHER_AES_256_ICM = 2,
  GST_RUDP_SRTP_CIPHER_AES_128_GCM = 3,
  GST_RUDP_SRTP_CIPHER_AES_256_GCM = 4,
} GstRudpSrtpCipher;

typedef enum {
  GST_RUDP_SRTP_AUTH_HMAC_SHA1_80 = 0,
  GST_RUDP_SRTP_AUTH_HMAC_SHA1_32 = 1,
} GstRudpSrtpAuth;

#define GST_TYPE_RUDP_SRTP_CIPHER (gst_rudp_srtp_cipher_get_type ())
GType gst_rudp_srtp_cipher_get_type (void);
#define GST_TYPE_RUDP_SRTP_AUTH (gst_rudp_srtp_auth_get_type ())
GType gst_rudp_srtp_auth_get_type (void);

/* room protect needs after the packet (libsrtp's SRTP_MAX_TRAILER_LEN) */
#define GST_RUDP_SRTP_TRAILER 144

typedef enum {
  GST_RUDP_SRTP_OK = 0,
  GST_RUDP_SRTP_AUTH_FAILED,    /* bad tag, plaintext, wrong key, garbage */
  GST_RUDP_SRTP_REPLAYED,       /* an index already seen or too old */
} GstRudpSrtpResult;

typedef struct _GstRudpSrtp GstRudpSrtp;

/* @key: the master key and salt in hex (30 bytes for AES-128-ICM, 46 for
 * AES-256-ICM, 28 / 44 for the GCM ciphers); AUTO picks the ICM cipher
 * from the length. One context protects what we send (any SSRC of ours)
 * and checks what we receive (any SSRC of the peer, replay window 1024). */
GstRudpSrtp *gst_rudp_srtp_new (const gchar * key, GstRudpSrtpCipher cipher,
    GstRudpSrtpAuth auth, GError ** error);
void gst_rudp_srtp_free (GstRudpSrtp * s);

/* In place; @buf holds @len bytes and room for GST_RUDP_SRTP_TRAILER more.
 * Returns the new length, or -1. */
gint gst_rudp_srtp_protect (GstRudpSrtp * s, guint8 * buf, gint len,
    gboolean rtcp);
/* In place; on GST_RUDP_SRTP_OK *@len is the plaintext length. */
GstRudpSrtpResult gst_rudp_srtp_unprotect (GstRudpSrtp * s, guint8 * buf,
    gint * len, gboolean rtcp);

/* whether two socket addresses are the same IP and port */
gboolean gst_rudp_same_address (GSocketAddress * a, GSocketAddress * b);

G_END_DECLS

#endif
