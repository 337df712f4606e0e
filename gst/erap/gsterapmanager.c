/* SPDX-License-Identifier: LGPL-2.0-or-later */
/* twoflow — ERAP manager.
 *
 * Every erapsink of a process that binds the same local address and port
 * shares one non-blocking UDP socket and one thread. The thread receives
 * the ACKs of all those sessions and dispatches each to its session by
 * (receiver address, receiver port): the address is the ACK's source, or
 * the address the ACK carries when the receiver sends from another one.
 * Data is sent by the sessions themselves (from their timers) on the same
 * socket, so the receivers' ACKs come back here.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <sys/socket.h>
#include "gsterapmanager.h"

GST_DEBUG_CATEGORY_STATIC (erap_manager_debug);
#define GST_CAT_DEFAULT erap_manager_debug

struct _GstErapManagerSession {
  gchar *key;
  GstObject *owner;
  GstErapAckFunc func;
  guint64 rate, queued;
  gint busy;                    /* dispatches running, under manager lock */
};

struct _GstErapManager {
  gchar *key;
  gint refcount;
  GSocket *socket;
  GCancellable *cancellable;
  GThread *thread;

  GMutex lock;
  GCond idle;                   /* a dispatch finished */
  gint removing;                /* remove_session() waiting on idle */
  GHashTable *sessions;         /* key -> GstErapManagerSession */
  GstErapManagerStats st;
};

G_LOCK_DEFINE_STATIC (managers);
static GHashTable *managers;

static gchar *
make_key (GInetAddress * addr, guint16 port)
{
  gchar *a = g_inet_address_to_string (addr);
  gchar *k = g_strdup_printf ("%s|%u", a, port);

  g_free (a);
  return k;
}

#define ACK_BATCH 32            /* datagrams per receive call (recvmmsg) */
#define ACK_BUF 2048            /* bytes per datagram */
/* ACK records a batch can hold */
#define ACK_RECORDS (ACK_BATCH * (ACK_BUF / GST_ERAP_ACK_SIZE))

typedef struct {
  GstErapManagerSession *s;
  guint first, n;               /* a run of ACKs of one session */
} Run;

/* Finds the session of each ACK and groups consecutive ACKs of a session
 * into runs; the address key is only rebuilt when the sender of the ACKs
 * changes. Called with the manager lock; marks the sessions busy. */
static guint
group_locked (GstErapManager * m, GstErapAck * acks, GSocketAddress ** from,
    guint n, Run * runs)
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

static gpointer
ack_thread (gpointer data)
{
  GstErapManager *m = data;
  guint8 (*buf)[ACK_BUF] = g_malloc (ACK_BATCH * ACK_BUF);
  GInputVector iv[ACK_BATCH];
  GInputMessage im[ACK_BATCH];
  GSocketAddress *from[ACK_BATCH];
  GstErapAck *acks = g_new (GstErapAck, ACK_RECORDS);
  GSocketAddress **ack_from = g_new (GSocketAddress *, ACK_RECORDS);
  Run *runs = g_new (Run, ACK_RECORDS);
  GPollFD cfd;

  /* keeps the cancellable's eventfd open: otherwise every wait below
   * creates and closes one */
  g_cancellable_make_pollfd (m->cancellable, &cfd);
  while (!g_cancellable_is_cancelled (m->cancellable)) {
    GError *err = NULL;
    gint n, i;
    guint n_acks = 0, n_runs, r, malformed;

    if (!g_socket_condition_wait (m->socket, G_IO_IN, m->cancellable, &err)) {
      g_clear_error (&err);
      continue;                 /* cancelled: the loop ends */
    }
    /* drain what is there, a batch per system call, then wait again */
    do {
      memset (im, 0, sizeof (im));
      for (i = 0; i < ACK_BATCH; i++) {
        iv[i].buffer = buf[i];
        iv[i].size = sizeof (buf[i]);
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
      n_acks = malformed = 0;
      for (i = 0; i < n; i++) {
        gsize off = 0;
        guint before = n_acks;

        if (from[i] && G_IS_INET_SOCKET_ADDRESS (from[i]))
          while (n_acks < ACK_RECORDS && gst_erap_ack_parse_next (buf[i],
                  im[i].bytes_received, &off, &acks[n_acks]))
            ack_from[n_acks++] = from[i];
        /* a datagram that is not wholly ACK records counts once */
        if (n_acks == before || off != im[i].bytes_received)
          malformed++;
      }
      g_mutex_lock (&m->lock);
      m->st.acks_malformed += malformed;
      n_runs = group_locked (m, acks, ack_from, n_acks, runs);
      g_mutex_unlock (&m->lock);

      for (r = 0; r < n_runs; r++)
        runs[r].s->func (runs[r].s->owner, acks + runs[r].first, runs[r].n);

      g_mutex_lock (&m->lock);
      for (r = 0; r < n_runs; r++)
        runs[r].s->busy--;
      if (n_runs && m->removing)
        g_cond_broadcast (&m->idle);
      g_mutex_unlock (&m->lock);
      for (i = 0; i < n; i++)
        g_clear_object (&from[i]);
    } while (n == ACK_BATCH);
  }
  g_cancellable_release_fd (m->cancellable);
  g_free (buf);
  g_free (acks);
  g_free (ack_from);
  g_free (runs);
  return NULL;
}

static GstErapManager *
manager_new (const gchar * key, const gchar * bind_address, guint bind_port,
    GError ** error)
{
  GstErapManager *m;
  GInetAddress *ia;
  GSocketAddress *sa;
  GSocket *sock;

  ia = g_inet_address_new_from_string (bind_address);
  if (!ia) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "bind-address '%s' is not an IP address", bind_address);
    return NULL;
  }
  sock = g_socket_new (g_inet_address_get_family (ia), G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, error);
  if (!sock) {
    g_object_unref (ia);
    return NULL;
  }
  sa = g_inet_socket_address_new (ia, bind_port);
  g_object_unref (ia);
  if (!g_socket_bind (sock, sa, FALSE, error)) {
    g_object_unref (sa);
    g_object_unref (sock);
    return NULL;
  }
  g_object_unref (sa);
  g_socket_set_blocking (sock, FALSE);
  /* room for bursts of many sessions and for their ACKs */
  g_socket_set_option (sock, SOL_SOCKET, SO_SNDBUF, 4 * 1024 * 1024, NULL);
  g_socket_set_option (sock, SOL_SOCKET, SO_RCVBUF, 4 * 1024 * 1024, NULL);

  m = g_new0 (GstErapManager, 1);
  m->key = g_strdup (key);
  m->refcount = 1;
  m->socket = sock;
  m->cancellable = g_cancellable_new ();
  g_mutex_init (&m->lock);
  g_cond_init (&m->idle);
  m->sessions = g_hash_table_new (g_str_hash, g_str_equal);
  sa = g_socket_get_local_address (sock, NULL);
  if (sa) {
    m->st.local_port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS
        (sa));
    g_object_unref (sa);
  }
  m->thread = g_thread_new ("erap-acks", ack_thread, m);
  GST_INFO ("manager %s on port %u", key, m->st.local_port);
  return m;
}

GstErapManager *
gst_erap_manager_acquire (const gchar * bind_address, guint bind_port,
    GError ** error)
{
  GstErapManager *m;
  gchar *key;

  key = g_strdup_printf ("%s|%u", bind_address, bind_port);
  G_LOCK (managers);
  if (!erap_manager_debug)
    GST_DEBUG_CATEGORY_INIT (erap_manager_debug, "erapmanager", 0,
        "ERAP socket and ACK thread manager");
  if (!managers)
    managers = g_hash_table_new (g_str_hash, g_str_equal);
  m = g_hash_table_lookup (managers, key);
  if (m) {
    m->refcount++;
  } else if ((m = manager_new (key, bind_address, bind_port, error))) {
    g_hash_table_insert (managers, m->key, m);
  }
  G_UNLOCK (managers);
  g_free (key);
  return m;
}

void
gst_erap_manager_release (GstErapManager * m)
{
  G_LOCK (managers);
  if (--m->refcount > 0) {
    G_UNLOCK (managers);
    return;
  }
  g_hash_table_remove (managers, m->key);
  G_UNLOCK (managers);

  g_cancellable_cancel (m->cancellable);
  g_thread_join (m->thread);
  g_object_unref (m->cancellable);
  g_socket_close (m->socket, NULL);
  g_object_unref (m->socket);
  g_hash_table_unref (m->sessions);
  g_mutex_clear (&m->lock);
  g_cond_clear (&m->idle);
  g_free (m->key);
  g_free (m);
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
  gchar *key = make_key (g_inet_socket_address_get_address (peer),
      g_inet_socket_address_get_port (peer));

  g_mutex_lock (&m->lock);
  if (g_hash_table_contains (m->sessions, key)) {
    g_mutex_unlock (&m->lock);
    g_free (key);
    return NULL;
  }
  s = g_new0 (GstErapManagerSession, 1);
  s->key = key;
  s->owner = owner;
  s->func = func;
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
  g_hash_table_remove (m->sessions, s->key);
  m->st.sessions--;
  __atomic_fetch_sub (&m->st.exit_bandwidth, s->rate, __ATOMIC_RELAXED);
  __atomic_fetch_sub (&m->st.queued_bits, s->queued * 8, __ATOMIC_RELAXED);
  m->removing++;
  while (s->busy)
    g_cond_wait (&m->idle, &m->lock);
  m->removing--;
  g_mutex_unlock (&m->lock);
  g_free (s->key);
  g_free (s);
}

/* Called on every round of sending: atomics rather than the manager lock,
 * which the ACK thread takes for every batch. */
void
gst_erap_manager_session_update (GstErapManager * m,
    GstErapManagerSession * s, guint64 rate, guint64 queued_bytes)
{
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
  g_mutex_unlock (&m->lock);
}
