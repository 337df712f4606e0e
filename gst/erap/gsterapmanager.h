/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP manager: one UDP socket per local address and port, and
 * one thread receiving the ACKs of every session on it. */
#ifndef __GST_ERAP_MANAGER_H__
#define __GST_ERAP_MANAGER_H__

#include <gio/gio.h>
#include <gst/gst.h>
#include <gst/erap/erap.h>
#include <gst/twoflow/twoflowhello.h>

G_BEGIN_DECLS

typedef struct _GstErapManager GstErapManager;
typedef struct _GstErapManagerSession GstErapManagerSession;

/* Called in the manager's thread for each well-formed ACK of the session.
 * @owner is referenced for the duration of the call. */
/* @n_acks ACKs of one session, in arrival order */
typedef void (*GstErapAckFunc) (GstObject * owner, const GstErapAck * acks,
    guint n_acks);

/* Called in the manager's thread when a hello moved the session's
 * destination to @peer (NAT traversal; @owner referenced for the call). */
typedef void (*GstErapHelloFunc) (GstObject * owner, GInetSocketAddress * peer);

typedef struct {
  guint64 exit_bandwidth;       /* bandwidth actually used: payload bit/s
                                 * of the active sessions (idle ones send
                                 * nothing and are left out) */
  guint64 queued_bits;          /* bits queued over all sessions */
  guint sessions;
  guint active_sessions;        /* sessions with data to send */
  guint64 acks_malformed;
  guint64 acks_unknown;         /* no session for that address and port */
  guint64 hellos_unknown;       /* hellos naming no session (or malformed) */
  guint16 local_port;
} GstErapManagerStats;

/* bind_port 0: the process-wide socket on an ephemeral port for that
 * address. */
GstErapManager *gst_erap_manager_acquire (const gchar * bind_address,
    guint bind_port, GError ** error);
void gst_erap_manager_release (GstErapManager * m);
GSocket *gst_erap_manager_get_socket (GstErapManager * m);

/* Registers @owner as the session sending to @peer; FALSE if another
 * session on this socket already does. @peer NULL: the destination is
 * learnt from a hello (gst_erap_manager_session_learn()). */
GstErapManagerSession *gst_erap_manager_add_session (GstErapManager * m,
    GInetSocketAddress * peer, GstObject * owner, GstErapAckFunc func);
/* After this returns, @func is not running and will not be called. */
void gst_erap_manager_remove_session (GstErapManager * m,
    GstErapManagerSession * s);
/* Makes @s a keyed session: its ACKs are accepted only sealed with
 * @crypto's session key (found by the salt they carry); plain ACK records
 * naming it are dropped and counted as @crypto's auth failures. @crypto
 * (a sender's) must outlive the session. */
void gst_erap_manager_session_set_crypto (GstErapManager * m,
    GstErapManagerSession * s, GstErapCrypto * crypto);
/* Makes @s learn its destination from hellos naming @hello_id, accepted
 * only from @allowed (the control peer's address; any port) and, when the
 * session is keyed (set_crypto() first), only sealed under its key; each
 * accepted hello from a new address or port calls @func and, for a
 * plaintext session, makes its ACKs be found by (that address, the port
 * the hello carries). FALSE if another session uses @hello_id. */
gboolean gst_erap_manager_session_learn (GstErapManager * m,
    GstErapManagerSession * s, guint64 hello_id, GInetAddress * allowed,
    GstErapHelloFunc func);
/* The session's hello counters (FALSE if it does not learn). */
gboolean gst_erap_manager_session_get_hello_stats (GstErapManager * m,
    GstErapManagerSession * s, GstTwoflowHelloLearnerStats * st);
/* Plaintext ACK records naming @s that did not come from its destination
 * (address and port), dropped. */
guint64 gst_erap_manager_session_get_acks_foreign (GstErapManager * m,
    GstErapManagerSession * s);
/* Keeps the manager's running totals (the scheduler's view) up to date. */
void gst_erap_manager_session_update (GstErapManager * m,
    GstErapManagerSession * s, guint64 used_rate, guint64 queued_bytes,
    gboolean active);
void gst_erap_manager_get_stats (GstErapManager * m, GstErapManagerStats * st);

G_END_DECLS

#endif
