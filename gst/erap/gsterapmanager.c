/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP manager.
 *
 * Every erapsink of a process that binds the same local address and port
 * shares one non-blocking UDP socket and one thread: a shared service
 * (gst/common/twoflowservice.h) per address and port, whose GMainContext
 * thread runs a socket source. The source receives
 * the ACKs of all those sessions and dispatches each to its session by
 * (receiver address, receiver port): the address is the ACK's source, or
 * the address the ACK carries when the receiver sends from another one.
 * A keyed session's ACKs are found by the salt they carry and count only
 * if they authenticate; a plaintext session's count only if they come
 * from its destination, the very address and port it sends to (others
 * naming it are dropped and counted: `acks-foreign`), so a third address
 * cannot acknowledge what the receiver never got.
 * Data is sent by the sessions themselves (from their timers) on the same
 * socket, so the receivers' ACKs come back here.
 *
 * NAT traversal: a session may start without a destination and learn it
 * from the receiver's hellos (erappacket.h), which arrive here too. A
 * hello names its session by a hello id; whether it counts is the sans-IO
 * learner's decision (gst-libs/gst/twoflow/twoflowhello.h: the control
 * peer's address only, sealed under the session key when keyed, a counter
 * above the last one); the session's owner is then told its destination.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include "twoflownet.h"
#include "twoflowservice.h"
#include "gsterapmanager.h"

GST_DEBUG_CATEGORY_STATIC (erap_manager_debug);
#define GST_CAT_DEFAULT erap_manager_debug

struct _GstErapManagerSession {
  gchar *key;
  GstObject *owner;
  GstErapAckFunc func;
  guint64 rate, queued;         /* used payload bit/s, bytes queued */
  gboolean active;
  gint busy;                    /* dispatches running, under manager lock */
  GstErapCrypto *crypto;        /* keyed session: only sealed ACKs count */
  guint64 salt;
  /* NAT: the destination learnt from hellos */
  GstTwoflowHelloLearner *learner;
  guint64 hello_id;
  GstErapHelloFunc hello_func;
  GInetSocketAddress *learnt;   /* to hand to hello_func */
  /* plaintext: ACKs count only from the destination (address and port) */
  gboolean has_dest;
  TwoflowNetIp dest_ip;
  guint16 dest_port;
  guint64 acks_foreign;
};

#define ACK_BATCH 32            /* datagrams per receive call (recvmmsg) */
#define ACK_BUF 2048            /* bytes per datagram */
/* ACK records a batch can hold */
#define ACK_RECORDS (ACK_BATCH * (ACK_BUF / GST_ERAP_ACK_SIZE))

typedef struct {
  GstErapManagerSession *s;
  guint first, n;               /* a run of ACKs of one session */
} Run;

struct _GstErapManager {
  TwoflowService *service;
  GSocket *socket;
  GSource *source;              /* in the service's context */
  /* the service thread's receive buffers */
  guint8 (*buf)[ACK_BUF];
  GstErapAck *acks;
  GSocketAddress **ack_from;
  GstErapManagerSession **ack_sess;     /* of a sealed ACK, else NULL */
  Run *runs;

  GMutex lock;
  GCond idle;                   /* a dispatch finished */
  gint removing;                /* remove_session() waiting on idle */
  GHashTable *sessions;         /* key -> GstErapManagerSession */
  GHashTable *by_salt;          /* &salt -> keyed GstErapManagerSession */
  GHashTable *by_hello;         /* &hello_id -> learning session */
  GstErapManagerStats st;
};


/* With the manager lock: where the session sends to, for the plaintext
 * ACK check. */
static void
set_dest_locked (GstErapManagerSession * s, GInetSocketAddress * dest)
{
  s->has_dest = twoflow_net_ip_from_address (G_SOCKET_ADDRESS (dest),
      &s->dest_ip);
  s->dest_port = g_inet_socket_address_get_port (dest);
}

/* Whether a plaintext ACK from @from may speak for @s. */
static gboolean
from_dest (GstErapManagerSession * s, GSocketAddress * from)
{
  TwoflowNetIp ip;

  return s->has_dest && twoflow_net_ip_from_address (from, &ip) &&
      twoflow_net_ip_equal (&ip, &s->dest_ip) &&
      g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (from)) ==
      s->dest_port;
}

static gchar *
make_key (GInetAddress * addr, guint16 port)
{
  gchar *a = g_inet_address_to_string (addr);
  gchar *k = g_strdup_printf ("%s|%u", a, port);

  g_free (a);
  return k;
}

/* Finds the session of each ACK and groups consecutive ACKs of a session
 * into runs; the address key is only rebuilt when the sender of the ACKs
 * changes. Called with the manager lock; marks the sessions busy. */
static guint
group_locked (GstErapManager * m, GstErapAck * acks, GSocketAddress ** from,
    GstErapManagerSession ** sess, guint n, Run * runs)
{
  GstErapManagerSession *cur = NULL;
  const guint8 *last_addr = NULL;
  gsize last_len = 0;
  guint last_port = 0, n_runs = 0, i, kept = 0;

  for (i = 0; i < n; i++) {
    GstErapAck *a = &acks[i];
    const guint8 *addr;
    gsize len;
    GInetAddress *ia = NULL;

    if (sess[i]) {
      /* authenticated: the session is the one whose key opened it */
      cur = sess[i];
      last_addr = NULL;
      goto found;
    }
    if (a->addr_len) {
      addr = a->addr;
      len = a->addr_len;
    } else {
      ia = g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (from[i]));
      addr = g_inet_address_to_bytes (ia);
      len = g_inet_address_get_native_size (ia);
    }
    if (!last_addr || len != last_len || a->port != last_port ||
        memcmp (addr, last_addr, len) != 0) {
      gchar *key;

      if (a->addr_len)
        ia = g_inet_address_new_from_bytes (addr, len == 4 ?
            G_SOCKET_FAMILY_IPV4 : G_SOCKET_FAMILY_IPV6);
      else
        g_object_ref (ia);
      key = make_key (ia, a->port);
      g_object_unref (ia);
      cur = g_hash_table_lookup (m->sessions, key);
      if (!cur)
        GST_LOG ("ACK for unknown session %s", key);
      g_free (key);
      last_addr = addr;
      last_len = len;
      last_port = a->port;
    }
    if (!cur) {
      m->st.acks_unknown++;
      continue;
    }
    if (cur->crypto) {
      /* a plain ACK record for a keyed session: forged or misconfigured */
      gst_erap_crypto_count_failure (cur->crypto);
      continue;
    }
    if (!from_dest (cur, from[i])) {
      /* plaintext, but not from where the session sends: a third address
       * (naming the receiver in the record) or another port */
      cur->acks_foreign++;
      continue;
    }
  found:
    acks[kept] = *a;
    if (n_runs > 0 && runs[n_runs - 1].s == cur) {
      runs[n_runs - 1].n++;
    } else {
      runs[n_runs].s = cur;
      runs[n_runs].first = kept;
      runs[n_runs].n = 1;
      cur->busy++;
      n_runs++;
    }
    kept++;
  }
  return n_runs;
}

/* In the service thread, when ACKs are there: drains the socket, a batch
 * per system call, and dispatches each batch's ACKs by session. */
/* A hello (NAT traversal): the learner decides; on a new destination the
 * session is re-keyed for plaintext ACKs and returned busy, for its
 * owner to be told without the lock. Called with the manager lock. */
static GstErapManagerSession *
hello_locked (GstErapManager * m, const guint8 * data, gsize len,
    GSocketAddress * from)
{
  GstErapHello h;
  GstErapManagerSession *s;
  GInetAddress *ia;
  GstTwoflowHelloVerdict v;
  gboolean authentic = FALSE;
  gchar *key;

  if (!from || !G_IS_INET_SOCKET_ADDRESS (from) ||
      !gst_erap_hello_parse (data, len, &h) ||
      !(s = g_hash_table_lookup (m->by_hello, &h.id))) {
    m->st.hellos_unknown++;
    return NULL;
  }
  ia = g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (from));
  /* the MAC only for a hello from the right address (the learner checks
   * the address first: an outsider's hello costs no key work) */
  if (s->crypto && h.sealed && gst_twoflow_hello_learner_allows (s->learner,
          g_inet_address_to_bytes (ia), g_inet_address_get_native_size (ia)))
    authentic = gst_erap_crypto_open_hello (s->crypto, data, len);
  v = gst_twoflow_hello_learner_handle (s->learner,
      g_inet_address_to_bytes (ia), g_inet_address_get_native_size (ia),
      g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (from)),
      h.counter, authentic, g_get_monotonic_time () * GST_USECOND);
  GST_LOG ("hello for session %" G_GUINT64_FORMAT ": %s", h.id,
      gst_twoflow_hello_verdict_name (v));
  if (v != GST_TWOFLOW_HELLO_LEARNED && v != GST_TWOFLOW_HELLO_MOVED)
    return NULL;
  /* plaintext ACKs name the session by (their source, the receiver's data
   * port): behind NAT the public address and the port the hello carries */
  if (s->key && g_hash_table_lookup (m->sessions, s->key) == s)
    g_hash_table_remove (m->sessions, s->key);
  g_free (s->key);
  s->key = NULL;
  key = make_key (ia, h.port);
  if (!g_hash_table_contains (m->sessions, key)) {
    s->key = key;
    g_hash_table_insert (m->sessions, key, s);
  } else {
    GST_WARNING ("another session already has ACK key %s", key);
    g_free (key);
  }
  g_clear_object (&s->learnt);
  s->learnt = g_object_ref (G_INET_SOCKET_ADDRESS (from));
  set_dest_locked (s, s->learnt);
  s->busy++;
  return s;
}

static gboolean
on_acks (GSocket * socket, GIOCondition cond, gpointer data)
{
  GstErapManager *m = data;
  GInputVector iv[ACK_BATCH];
  GInputMessage im[ACK_BATCH];
  GSocketAddress *from[ACK_BATCH];
  gint n, i;

  do {
    GError *err = NULL;
    guint n_acks = 0, n_runs, r, malformed = 0, n_hellos = 0;
    GstErapManagerSession *hellos[ACK_BATCH];

    memset (im, 0, sizeof (im));
    for (i = 0; i < ACK_BATCH; i++) {
      iv[i].buffer = m->buf[i];
      iv[i].size = sizeof (m->buf[i]);
      from[i] = NULL;
      im[i].address = &from[i];
      im[i].vectors = &iv[i];
      im[i].num_vectors = 1;
    }
    n = g_socket_receive_messages (m->socket, im, ACK_BATCH, 0, NULL, &err);
    if (n < 0) {
      if (!g_error_matches (err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        GST_DEBUG ("receive error: %s", err->message);
      g_clear_error (&err);
      break;
    }
    g_mutex_lock (&m->lock);
    for (i = 0; i < n; i++) {
      gsize off = 0, len = im[i].bytes_received;
      guint before = n_acks;
      guint8 *rec = m->buf[i];
      GstErapManagerSession *sealed_by = NULL;
      guint64 salt;

      if (gst_erap_is_hello (rec, len)) {
        GstErapManagerSession *hs = hello_locked (m, rec, len, from[i]);

        if (hs)
          hellos[n_hellos++] = hs;
        continue;
      }
      if (gst_erap_crypto_peek_ack (rec, len, &salt)) {
        /* sealed: find the session by its salt, authenticate, decrypt */
        sealed_by = g_hash_table_lookup (m->by_salt, &salt);
        if (!sealed_by) {
          m->st.acks_unknown++;
          continue;
        }
        if (gst_erap_crypto_open_ack (sealed_by->crypto, rec, len, &len) !=
            GST_ERAP_OPEN_OK)
          continue;             /* counted by the session's crypto */
        rec += GST_ERAP_SEALED_ACK_HEADER;
      }
      if (from[i] && G_IS_INET_SOCKET_ADDRESS (from[i]))
        while (n_acks < ACK_RECORDS && gst_erap_ack_parse_next (rec,
                len, &off, &m->acks[n_acks])) {
          m->ack_sess[n_acks] = sealed_by;
          m->ack_from[n_acks++] = from[i];
        }
      /* a datagram that is not wholly ACK records counts once */
      if (n_acks == before || off != len)
        malformed++;
    }
    m->st.acks_malformed += malformed;
    n_runs = group_locked (m, m->acks, m->ack_from, m->ack_sess, n_acks,
        m->runs);
    g_mutex_unlock (&m->lock);

    /* a new destination first: the ACKs that follow may be its */
    for (r = 0; r < n_hellos; r++)
      hellos[r]->hello_func (hellos[r]->owner, hellos[r]->learnt);
    for (r = 0; r < n_runs; r++)
      m->runs[r].s->func (m->runs[r].s->owner, m->acks + m->runs[r].first,
          m->runs[r].n);

    g_mutex_lock (&m->lock);
    for (r = 0; r < n_runs; r++)
      m->runs[r].s->busy--;
    for (r = 0; r < n_hellos; r++)
      hellos[r]->busy--;
    if ((n_runs || n_hellos) && m->removing)
      g_cond_broadcast (&m->idle);
    g_mutex_unlock (&m->lock);
    for (i = 0; i < n; i++)
      g_clear_object (&from[i]);
  } while (n == ACK_BATCH);
  return G_SOURCE_CONTINUE;
}

typedef struct {
  const gchar *address;
  guint port;
} Bind;

static gpointer
manager_create (TwoflowService * service, gpointer arg, GError ** error)
{
  Bind *b = arg;
  GstErapManager *m;
  GSocket *sock;

  /* room for bursts of many sessions and for their ACKs */
  sock = twoflow_net_udp_open (b->address, b->port, 0, 4 * 1024 * 1024,
      4 * 1024 * 1024, error);
  if (!sock)
    return NULL;
  m = g_new0 (GstErapManager, 1);
  m->service = service;
  m->socket = sock;
  m->buf = g_malloc (ACK_BATCH * ACK_BUF);
  m->acks = g_new (GstErapAck, ACK_RECORDS);
  m->ack_from = g_new (GSocketAddress *, ACK_RECORDS);
  m->ack_sess = g_new (GstErapManagerSession *, ACK_RECORDS);
  m->runs = g_new (Run, ACK_RECORDS);
  g_mutex_init (&m->lock);
  g_cond_init (&m->idle);
  m->sessions = g_hash_table_new (g_str_hash, g_str_equal);
  m->by_salt = g_hash_table_new (g_int64_hash, g_int64_equal);
  m->by_hello = g_hash_table_new (g_int64_hash, g_int64_equal);
  m->st.local_port = twoflow_net_local_port (sock);
  m->source = g_socket_create_source (sock, G_IO_IN, NULL);
  g_source_set_callback (m->source, G_SOURCE_FUNC (on_acks), m, NULL);
  g_source_attach (m->source, twoflow_service_get_context (service));
  GST_INFO ("manager %s on port %u", twoflow_service_get_name (service),
      m->st.local_port);
  return m;
}

static void
manager_destroy (gpointer data)
{
  GstErapManager *m = data;

  g_source_destroy (m->source);
  g_source_unref (m->source);
  g_socket_close (m->socket, NULL);
  g_object_unref (m->socket);
  g_hash_table_unref (m->sessions);
  g_hash_table_unref (m->by_salt);
  g_hash_table_unref (m->by_hello);
  g_mutex_clear (&m->lock);
  g_cond_clear (&m->idle);
  g_free (m->buf);
  g_free (m->acks);
  g_free (m->ack_from);
  g_free (m->ack_sess);
  g_free (m->runs);
  g_free (m);
}

static const TwoflowServiceInfo manager_info = {
  "erap-acks", manager_create, NULL, manager_destroy
};

GstErapManager *
gst_erap_manager_acquire (const gchar * bind_address, guint bind_port,
    GError ** error)
{
  TwoflowService *service;
  Bind b = { bind_address, bind_port };
  gchar *name;

  if (!erap_manager_debug)
    GST_DEBUG_CATEGORY_INIT (erap_manager_debug, "erapmanager", 0,
        "ERAP socket and ACK thread manager");
  name = g_strdup_printf ("erap-acks|%s|%u", bind_address, bind_port);
  service = twoflow_service_acquire (name, &manager_info, &b, error);
  g_free (name);
  if (!service) {
    if (error && *error && g_error_matches (*error, G_IO_ERROR,
            G_IO_ERROR_INVALID_ARGUMENT)) {
      g_clear_error (error);
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
          "bind-address '%s' is not an IP address", bind_address);
    }
    return NULL;
  }
  return twoflow_service_get_data (service);
}

void
gst_erap_manager_release (GstErapManager * m)
{
  twoflow_service_release (m->service);
}

GSocket *
gst_erap_manager_get_socket (GstErapManager * m)
{
  return m->socket;
}

GstErapManagerSession *
gst_erap_manager_add_session (GstErapManager * m, GInetSocketAddress * peer,
    GstObject * owner, GstErapAckFunc func)
{
  GstErapManagerSession *s;
  gchar *key = peer ? make_key (g_inet_socket_address_get_address (peer),
      g_inet_socket_address_get_port (peer)) : NULL;

  g_mutex_lock (&m->lock);
  if (key && g_hash_table_contains (m->sessions, key)) {
    g_mutex_unlock (&m->lock);
    g_free (key);
    return NULL;
  }
  s = g_new0 (GstErapManagerSession, 1);
  s->key = key;
  s->owner = owner;
  s->func = func;
  if (peer)
    set_dest_locked (s, peer);
  if (key)
    g_hash_table_insert (m->sessions, key, s);
  m->st.sessions++;
  g_mutex_unlock (&m->lock);
  return s;
}

void
gst_erap_manager_remove_session (GstErapManager * m,
    GstErapManagerSession * s)
{
  g_mutex_lock (&m->lock);
  if (s->key && g_hash_table_lookup (m->sessions, s->key) == s)
    g_hash_table_remove (m->sessions, s->key);
  if (s->learner && g_hash_table_lookup (m->by_hello, &s->hello_id) == s)
    g_hash_table_remove (m->by_hello, &s->hello_id);
  if (s->crypto && g_hash_table_lookup (m->by_salt, &s->salt) == s)
    g_hash_table_remove (m->by_salt, &s->salt);
  m->st.sessions--;
  if (s->active)
    __atomic_fetch_sub (&m->st.active_sessions, 1, __ATOMIC_RELAXED);
  __atomic_fetch_sub (&m->st.exit_bandwidth, s->rate, __ATOMIC_RELAXED);
  __atomic_fetch_sub (&m->st.queued_bits, s->queued * 8, __ATOMIC_RELAXED);
  m->removing++;
  while (s->busy)
    g_cond_wait (&m->idle, &m->lock);
  m->removing--;
  g_mutex_unlock (&m->lock);
  g_free (s->key);
  g_clear_pointer (&s->learner, gst_twoflow_hello_learner_free);
  g_clear_object (&s->learnt);
  g_free (s);
}

gboolean
gst_erap_manager_session_learn (GstErapManager * m, GstErapManagerSession * s,
    guint64 hello_id, GInetAddress * allowed, GstErapHelloFunc func)
{
  g_mutex_lock (&m->lock);
  if (g_hash_table_contains (m->by_hello, &hello_id)) {
    g_mutex_unlock (&m->lock);
    return FALSE;
  }
  s->hello_id = hello_id;
  s->hello_func = func;
  s->learner = gst_twoflow_hello_learner_new (g_inet_address_to_bytes
      (allowed), g_inet_address_get_native_size (allowed), s->crypto != NULL);
  g_hash_table_insert (m->by_hello, &s->hello_id, s);
  g_mutex_unlock (&m->lock);
  return TRUE;
}

gboolean
gst_erap_manager_session_get_hello_stats (GstErapManager * m,
    GstErapManagerSession * s, GstTwoflowHelloLearnerStats * st)
{
  gboolean ok;

  g_mutex_lock (&m->lock);
  ok = s->learner != NULL;
  if (ok)
    gst_twoflow_hello_learner_get_stats (s->learner, st);
  g_mutex_unlock (&m->lock);
  return ok;
}

guint64
gst_erap_manager_session_get_acks_foreign (GstErapManager * m,
    GstErapManagerSession * s)
{
  guint64 n;

  g_mutex_lock (&m->lock);
  n = s->acks_foreign;
  g_mutex_unlock (&m->lock);
  return n;
}

void
gst_erap_manager_session_set_crypto (GstErapManager * m,
    GstErapManagerSession * s, GstErapCrypto * crypto)
{
  g_mutex_lock (&m->lock);
  s->crypto = crypto;
  s->salt = gst_erap_crypto_get_salt (crypto);
  /* 2^-64 per pair of sessions: a collision leaves the newer one keyed
   * but unreachable (its ACKs go to the older one and fail there) */
  if (!g_hash_table_contains (m->by_salt, &s->salt))
    g_hash_table_insert (m->by_salt, &s->salt, s);
  g_mutex_unlock (&m->lock);
}

/* Called on every round of sending: atomics rather than the manager lock,
 * which the ACK thread takes for every batch. */
void
gst_erap_manager_session_update (GstErapManager * m,
    GstErapManagerSession * s, guint64 rate, guint64 queued_bytes,
    gboolean active)
{
  /* an idle session uses nothing, whatever its last window said */
  if (!active)
    rate = 0;
  if (active != s->active) {
    if (active)
      __atomic_fetch_add (&m->st.active_sessions, 1, __ATOMIC_RELAXED);
    else
      __atomic_fetch_sub (&m->st.active_sessions, 1, __ATOMIC_RELAXED);
    s->active = active;
  }
  if (rate != s->rate)
    __atomic_fetch_add (&m->st.exit_bandwidth, rate - s->rate,
        __ATOMIC_RELAXED);
  if (queued_bytes != s->queued)
    __atomic_fetch_add (&m->st.queued_bits, (queued_bytes - s->queued) * 8,
        __ATOMIC_RELAXED);
  s->rate = rate;
  s->queued = queued_bytes;
}

void
gst_erap_manager_get_stats (GstErapManager * m, GstErapManagerStats * st)
{
  g_mutex_lock (&m->lock);
  *st = m->st;
  st->exit_bandwidth = __atomic_load_n (&m->st.exit_bandwidth,
      __ATOMIC_RELAXED);
  st->queued_bits = __atomic_load_n (&m->st.queued_bits, __ATOMIC_RELAXED);
  st->active_sessions = __atomic_load_n (&m->st.active_sessions,
      __ATOMIC_RELAXED);
  g_mutex_unlock (&m->lock);
}
