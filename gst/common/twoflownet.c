/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the network plumbing the elements share. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/sock_diag.h>        /* SK_MEMINFO_DROPS */
#include "twoflownet.h"

GInetSocketAddress *
twoflow_net_resolve (const gchar * host, guint port, GSocketFamily family,
    GError ** error)
{
  GInetAddress *ia;
  GInetSocketAddress *sa;

  g_return_val_if_fail (host != NULL, NULL);

  ia = g_inet_address_new_from_string (host);
  if (ia && family != G_SOCKET_FAMILY_INVALID &&
      g_inet_address_get_family (ia) != family) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
        "%s is not of the local socket's address family", host);
    g_object_unref (ia);
    return NULL;
  }
  if (!ia) {
    GResolver *r = g_resolver_get_default ();
    GList *l, *addrs = g_resolver_lookup_by_name (r, host, NULL, error);

    g_object_unref (r);
    for (l = addrs; l; l = l->next) {
      if (family == G_SOCKET_FAMILY_INVALID ||
          g_inet_address_get_family (l->data) == family) {
        ia = g_object_ref (l->data);
        break;
      }
    }
    if (addrs)
      g_resolver_free_addresses (addrs);
    if (!ia) {
      if (error && !*error)
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
            "no address of the local socket's family for %s", host);
      return NULL;
    }
  }
  sa = G_INET_SOCKET_ADDRESS (g_inet_socket_address_new (ia, port));
  g_object_unref (ia);
  return sa;
}

static void
set_buffer (GSocket * s, gboolean force, gint force_opt, gint opt,
    gint bytes)
{
  if (bytes <= 0)
    return;
  if (!force || !g_socket_set_option (s, SOL_SOCKET, force_opt, bytes, NULL))
    g_socket_set_option (s, SOL_SOCKET, opt, bytes, NULL);
}

static GSocket *
open_bound (GInetAddress * ia, guint port, TwoflowNetFlags flags,
    gint rcvbuf, gint sndbuf, GError ** error)
{
  gboolean force = (flags & TWOFLOW_NET_FORCE_BUFFERS) != 0;
  GSocketAddress *sa;
  GSocket *s;

  s = g_socket_new (g_inet_address_get_family (ia), G_SOCKET_TYPE_DATAGRAM,
      G_SOCKET_PROTOCOL_UDP, error);
  if (!s)
    return NULL;
  sa = g_inet_socket_address_new (ia, port);
  if (!g_socket_bind (s, sa, (flags & TWOFLOW_NET_REUSE) != 0, error)) {
    g_object_unref (sa);
    g_object_unref (s);
    return NULL;
  }
  g_object_unref (sa);
  g_socket_set_blocking (s, (flags & TWOFLOW_NET_BLOCKING) != 0);
  set_buffer (s, force, SO_RCVBUFFORCE, SO_RCVBUF, rcvbuf);
  set_buffer (s, force, SO_SNDBUFFORCE, SO_SNDBUF, sndbuf);
  return s;
}

GSocket *
twoflow_net_udp_open (const gchar * address, guint port,
    TwoflowNetFlags flags, gint rcvbuf, gint sndbuf, GError ** error)
{
  GInetAddress *ia;
  GSocket *s;

  ia = address ? g_inet_address_new_from_string (address) : NULL;
  if (!ia) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
        "'%s' is not an IP address", address ? address : "(null)");
    return NULL;
  }
  s = open_bound (ia, port, flags, rcvbuf, sndbuf, error);
  g_object_unref (ia);
  return s;
}

GSocket *
twoflow_net_udp_open_any (GSocketFamily family, TwoflowNetFlags flags,
    gint rcvbuf, gint sndbuf, GError ** error)
{
  GInetAddress *ia = g_inet_address_new_any (family);
  GSocket *s = open_bound (ia, 0, flags, rcvbuf, sndbuf, error);

  g_object_unref (ia);
  return s;
}

gint
twoflow_net_rcvbuf_setup (GstElement * element, GSocket * socket,
    gint requested)
{
  GError *err = NULL;
  gint got = 0;

  if (!g_socket_set_option (socket, SOL_SOCKET, SO_RXQ_OVFL, 1, &err)) {
    GST_WARNING_OBJECT (element, "SO_RXQ_OVFL: %s (kernel drops not "
        "counted per datagram)", err->message);
    g_clear_error (&err);
  }
  if (!g_socket_get_option (socket, SOL_SOCKET, SO_RCVBUF, &got, NULL))
    return 0;
  got /= 2;
  if (requested > 0 && got < requested)
    GST_ELEMENT_WARNING (element, RESOURCE, SETTINGS,
        ("The kernel gave a receive buffer of %d bytes instead of %d: "
            "datagrams may be dropped in bursts", got, requested),
        ("SO_RCVBUF is capped at net.core.rmem_max (SO_RCVBUFFORCE, which "
            "may exceed it, needs CAP_NET_ADMIN); raise it with sysctl -w "
            "net.core.rmem_max=%d", requested));
  return got;
}

gboolean
twoflow_net_cmsg_drops (gconstpointer cmsg, guint32 * drops)
{
  const struct cmsghdr *cm = cmsg;

  if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SO_RXQ_OVFL
      || cm->cmsg_len < CMSG_LEN (sizeof (guint32)))
    return FALSE;
  memcpy (drops, CMSG_DATA (cm), sizeof (guint32));
  return TRUE;
}

gboolean
twoflow_net_socket_drops (GSocket * socket, guint32 * drops)
{
  guint32 mem[SK_MEMINFO_VARS];
  socklen_t len = sizeof (mem);

  memset (mem, 0, sizeof (mem));
  if (getsockopt (g_socket_get_fd (socket), SOL_SOCKET, SO_MEMINFO, mem,
          &len) < 0 || len < (SK_MEMINFO_DROPS + 1) * sizeof (guint32))
    return FALSE;
  *drops = mem[SK_MEMINFO_DROPS];
  return TRUE;
}

static GstPadProbeReturn
answer_allocation (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstQuery *q = GST_PAD_PROBE_INFO_QUERY (info);

  /* answered empty: no pool, no allocator; the default allocation */
  if (GST_QUERY_TYPE (q) == GST_QUERY_ALLOCATION)
    return GST_PAD_PROBE_HANDLED;
  return GST_PAD_PROBE_OK;
}

void
twoflow_net_answer_allocation (GstPad * srcpad)
{
  gst_pad_add_probe (srcpad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
      answer_allocation, NULL, NULL);
}

guint16
twoflow_net_local_port (GSocket * socket)
{
  GSocketAddress *sa = g_socket_get_local_address (socket, NULL);
  guint16 port = 0;

  if (sa && G_IS_INET_SOCKET_ADDRESS (sa))
    port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (sa));
  g_clear_object (&sa);
  return port;
}

gchar *
twoflow_net_bind_address_for (const gchar * bind_address, const gchar * host)
{
  GInetAddress *ia;
  gboolean v4 = FALSE, v6 = FALSE;

  if (g_strcmp0 (bind_address, "0.0.0.0") != 0 || host == NULL)
    return g_strdup (bind_address);
  ia = g_inet_address_new_from_string (host);
  if (ia) {
    v6 = g_inet_address_get_family (ia) == G_SOCKET_FAMILY_IPV6;
    g_object_unref (ia);
  } else {
    GResolver *r = g_resolver_get_default ();
    GList *l, *addrs = g_resolver_lookup_by_name (r, host, NULL, NULL);

    g_object_unref (r);
    for (l = addrs; l; l = l->next) {
      if (g_inet_address_get_family (l->data) == G_SOCKET_FAMILY_IPV6)
        v6 = TRUE;
      else
        v4 = TRUE;
    }
    if (addrs)
      g_resolver_free_addresses (addrs);
    /* a name with both families keeps IPv4, as before */
    v6 = v6 && !v4;
  }
  return g_strdup (v6 ? "::" : bind_address);
}

/* The query keys of the last URI set, in its order: get_uri() gives them
 * back with the properties' current values (the round trip). */
static G_DEFINE_QUARK (twoflow-uri-query, uri_query);

/* RFC 3986 sub-delims and pchars a query value keeps as they are, minus
 * the '&' that separates the parameters ('=' stays: a parameter is split at
 * its first one, so caps read as written; '+' stays: GstUri reads it as
 * '+', and flags are written a+b) */
#define URI_QUERY_VALUE_ALLOWED "!$'()*+,;=:@/?"

static void
uri_query_keys_remember (GstElement * element, const gchar * str)
{
  /* from the string, not the GstUri: its query is a hash table, and the
   * keys read back in the order they were written */
  const gchar *q = strchr (str, '?');
  gchar *query = q ? g_strndup (q + 1, strcspn (q + 1, "#")) : NULL;
  gchar **params = query ? g_strsplit (query, "&", -1) : NULL;
  GPtrArray *names = g_ptr_array_new ();
  guint i, j;

  for (i = 0; params && params[i]; i++) {
    gchar *key = g_strndup (params[i], strcspn (params[i], "="));
    gchar *name = g_uri_unescape_string (key, NULL);
    GParamSpec *pspec = name ? g_object_class_find_property
        (G_OBJECT_GET_CLASS (element), name) : NULL;
    gboolean seen = FALSE;

    /* the canonical name: "max_rate" is read back as "max-rate" */
    for (j = 0; pspec && j < names->len; j++)
      seen |= strcmp (g_ptr_array_index (names, j), pspec->name) == 0;
    if (pspec && !seen)
      g_ptr_array_add (names, g_strdup (pspec->name));
    g_free (name);
    g_free (key);
  }
  g_ptr_array_add (names, NULL);
  g_strfreev (params);
  g_free (query);
  g_object_set_qdata_full (G_OBJECT (element), uri_query_quark (),
      g_ptr_array_free (names, FALSE), (GDestroyNotify) g_strfreev);
}

/* A property value as gst_value_deserialize() reads it back: enums and
 * flags by nick (gst_value_serialize() gives the C names), the rest as
 * gst-launch-1.0 writes them. */
static gchar *
uri_value_serialize (const GValue * v)
{
  if (G_VALUE_HOLDS_ENUM (v)) {
    GEnumClass *k = g_type_class_ref (G_VALUE_TYPE (v));
    GEnumValue *e = g_enum_get_value (k, g_value_get_enum (v));
    gchar *s = e ? g_strdup (e->value_nick) :
        g_strdup_printf ("%d", g_value_get_enum (v));

    g_type_class_unref (k);
    return s;
  }
  if (G_VALUE_HOLDS_FLAGS (v)) {
    GFlagsClass *k = g_type_class_ref (G_VALUE_TYPE (v));
    guint flags = g_value_get_flags (v), i;
    GString *s = g_string_new (NULL);

    for (i = 0; i < k->n_values; i++) {
      GFlagsValue *f = &k->values[i];

      if (f->value != 0 && (flags & f->value) == f->value) {
        g_string_append_printf (s, "%s%s", s->len ? "+" : "", f->value_nick);
        flags &= ~f->value;
      }
    }
    if (flags != 0 || s->len == 0)
      g_string_printf (s, "0x%08x", g_value_get_flags (v));
    g_type_class_unref (k);
    return g_string_free (s, FALSE);
  }
  /* an array without the (guint64) of each element: its pspec types it */
  if (GST_VALUE_HOLDS_ARRAY (v)) {
    GString *s = g_string_new ("<");
    guint i, n = gst_value_array_get_size (v);

    for (i = 0; i < n; i++) {
      const GValue *ev = gst_value_array_get_value (v, i);
      /* strings quoted inside the brackets */
      gchar *e = G_VALUE_HOLDS_STRING (ev) ? gst_value_serialize (ev) :
          uri_value_serialize (ev);

      g_string_append_printf (s, "%s%s", i ? ", " : "", e ? e : "");
      g_free (e);
    }
    g_string_append_c (s, '>');
    return g_string_free (s, FALSE);
  }
  if (G_VALUE_HOLDS (v, GST_TYPE_CAPS))
    return gst_value_get_caps (v) ? gst_caps_to_string (gst_value_get_caps
        (v)) : NULL;
  /* a string as it is, unless it would read back as another one */
  if (G_VALUE_HOLDS_STRING (v) && g_value_get_string (v) &&
      g_value_get_string (v)[0] != '"' &&
      strcmp (g_value_get_string (v), "NULL") != 0)
    return g_value_dup_string (v);
  return gst_value_serialize (v);
}

gboolean
twoflow_uri_set_query_properties (GObject * object, GstUri * uri,
    const gchar * const *reserved, GError ** error)
{
  GList *keys = gst_uri_get_query_keys (uri), *l;
  GArray *values = g_array_new (FALSE, TRUE, sizeof (GValue));
  GPtrArray *names = g_ptr_array_new ();
  gboolean ok = TRUE;
  guint i;

  g_array_set_clear_func (values, (GDestroyNotify) g_value_unset);
  for (l = keys; l && ok; l = l->next) {
    const gchar *key = l->data;
    const gchar *str = gst_uri_get_query_value (uri, key);
    GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS
        (object), key);
    GValue v = G_VALUE_INIT;

    if (pspec == NULL || !(pspec->flags & G_PARAM_WRITABLE) ||
        (pspec->flags & G_PARAM_CONSTRUCT_ONLY) ||
        (reserved && g_strv_contains (reserved, key))) {
      g_set_error (error, GST_URI_ERROR, GST_URI_ERROR_BAD_URI,
          "'%s' is not a property that can be set in the URI", key);
      ok = FALSE;
      break;
    }
    g_value_init (&v, G_PARAM_SPEC_VALUE_TYPE (pspec));
    /* with the pspec, as gst-launch-1.0 does: arrays of guint64 */
    if (str == NULL || !gst_value_deserialize_with_pspec (&v, str, pspec) ||
        g_param_value_validate (pspec, &v)) {
      g_set_error (error, GST_URI_ERROR, GST_URI_ERROR_BAD_URI,
          "invalid value '%s' for %s", str ? str : "", key);
      g_value_unset (&v);
      ok = FALSE;
      break;
    }
    g_array_append_val (values, v);
    g_ptr_array_add (names, (gpointer) pspec->name);
  }
  if (ok) {
    for (i = 0; i < names->len; i++)
      g_object_set_property (object, g_ptr_array_index (names, i),
          &g_array_index (values, GValue, i));
  }
  g_array_unref (values);
  g_ptr_array_unref (names);
  g_list_free (keys);
  return ok;
}

gboolean
twoflow_uri_apply (GstElement * element, const gchar * str,
    const gchar * scheme, const gchar * host_prop, const gchar * port_prop,
    const gchar * default_host, guint default_port, guint min_port,
    GError ** error)
{
  const gchar *reserved[] = { host_prop, port_prop, "uri", NULL };
  GstUri *uri;
  const gchar *host;
  guint port;
  gint gport = -1;
  gboolean ok;

  if (GST_STATE (element) > GST_STATE_READY) {
    g_set_error (error, GST_URI_ERROR, GST_URI_ERROR_BAD_STATE,
        "the URI of %s can only be set in NULL or READY",
        GST_OBJECT_NAME (gst_element_get_factory (element)));
    return FALSE;
  }
  uri = str ? gst_uri_from_string (str) : NULL;
  if (uri == NULL || g_strcmp0 (gst_uri_get_scheme (uri), scheme) != 0) {
    g_set_error (error, GST_URI_ERROR, GST_URI_ERROR_BAD_URI,
        "'%s' is not a %s:// URI", GST_STR_NULL (str), scheme);
    goto fail;
  }
  host = gst_uri_get_host (uri);
  if (host == NULL || *host == '\0')
    host = default_host;
  if (host == NULL) {
    g_set_error (error, GST_URI_ERROR, GST_URI_ERROR_BAD_URI,
        "'%s' names no host", str);
    goto fail;
  }
  /* GstUri reads ":0" as no port (GST_URI_NO_PORT is 0), GUri does not:
   * a source's port 0 is "any free port" */
  if (!g_uri_split (str, G_URI_FLAGS_NONE, NULL, NULL, NULL, &gport, NULL,
          NULL, NULL, NULL))
    gport = gst_uri_get_port (uri) == GST_URI_NO_PORT ? -1 :
        (gint) gst_uri_get_port (uri);
  port = gport < 0 ? default_port : (guint) gport;
  if (port < min_port || port > 65535) {
    g_set_error (error, GST_URI_ERROR, GST_URI_ERROR_BAD_URI,
        "port %u of '%s' is out of range", port, str);
    goto fail;
  }
  ok = twoflow_uri_set_query_properties (G_OBJECT (element), uri, reserved,
      error);
  if (ok) {
    g_object_set (element, host_prop, host, port_prop, port, NULL);
    uri_query_keys_remember (element, str);
  }
  gst_uri_unref (uri);
  return ok;

fail:
  if (uri)
    gst_uri_unref (uri);
  return FALSE;
}

void
twoflow_uri_property_set (GstElement * element, const GValue * value)
{
  GError *err = NULL;

  if (!gst_uri_handler_set_uri (GST_URI_HANDLER (element),
          g_value_get_string (value), &err)) {
    GST_WARNING_OBJECT (element, "cannot set uri: %s", err->message);
    g_clear_error (&err);
  }
}

gchar *
twoflow_uri_make (GstElement * element, const gchar * scheme,
    const gchar * host_prop, const gchar * port_prop)
{
  gchar *host = NULL, *str;
  guint port = 0, i;
  const gchar *const *keys;
  GString *query = g_string_new (NULL);

  g_object_get (element, host_prop, &host, port_prop, &port, NULL);
  /* by hand: GstUri would drop a port 0 (its "no port") */
  str = g_strdup_printf ("%s://%s%s%s:%u", scheme,
      host && strchr (host, ':') ? "[" : "", host ? host : "",
      host && strchr (host, ':') ? "]" : "", port);
  keys = g_object_get_qdata (G_OBJECT (element), uri_query_quark ());
  for (i = 0; keys && keys[i]; i++) {
    GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS
        (element), keys[i]);
    GValue v = G_VALUE_INIT;
    gchar *vs;

    /* write-only properties (tokens, keys) are not read back */
    if (pspec == NULL || !(pspec->flags & G_PARAM_READABLE))
      continue;
    g_value_init (&v, G_PARAM_SPEC_VALUE_TYPE (pspec));
    g_object_get_property (G_OBJECT (element), keys[i], &v);
    vs = uri_value_serialize (&v);
    if (vs) {
      gchar *ev = g_uri_escape_string (vs, URI_QUERY_VALUE_ALLOWED, FALSE);

      g_string_append_printf (query, "%c%s=%s", query->len ? '&' : '?',
          keys[i], ev);
      g_free (ev);
    }
    g_free (vs);
    g_value_unset (&v);
  }
  if (query->len) {
    gchar *with_query = g_strconcat (str, query->str, NULL);

    g_free (str);
    str = with_query;
  }
  g_string_free (query, TRUE);
  g_free (host);
  return str;
}

void
twoflow_cancel_init (TwoflowCancel * c)
{
  c->cancellable = g_cancellable_new ();
  c->made_fd = g_cancellable_make_pollfd (c->cancellable, &c->pollfd);
}

void
twoflow_cancel_clear (TwoflowCancel * c)
{
  if (!c->cancellable)
    return;
  if (c->made_fd)
    g_cancellable_release_fd (c->cancellable);
  c->made_fd = FALSE;
  g_clear_object (&c->cancellable);
}

void
twoflow_cancel_cancel (TwoflowCancel * c)
{
  if (c->cancellable)
    g_cancellable_cancel (c->cancellable);
}

void
twoflow_cancel_replace (TwoflowCancel * c)
{
  if (!c->cancellable)
    return;
  twoflow_cancel_clear (c);
  twoflow_cancel_init (c);
}

gboolean
twoflow_net_same_ip (const gchar * a, const gchar * b)
{
  const gchar *pre = "::ffff:";
  GInetAddress *x, *y;
  gboolean same;

  if (!a || !b)
    return FALSE;
  if (g_str_has_prefix (a, pre) && strchr (a, '.'))
    a += strlen (pre);
  if (g_str_has_prefix (b, pre) && strchr (b, '.'))
    b += strlen (pre);
  x = g_inet_address_new_from_string (a);
  y = g_inet_address_new_from_string (b);
  same = x && y && g_inet_address_equal (x, y);
  g_clear_object (&x);
  g_clear_object (&y);
  return same;
}

static void
ip_from_bytes (const guint8 * b, gsize n, TwoflowNetIp * ip)
{
  memset (ip->b, 0, sizeof (ip->b));
  if (n == 4) {
    ip->b[10] = ip->b[11] = 0xff;
    memcpy (ip->b + 12, b, 4);
  } else {
    memcpy (ip->b, b, 16);
  }
}

gboolean
twoflow_net_ip_from_native (gconstpointer sa, gsize len, TwoflowNetIp * ip)
{
  const struct sockaddr *s = sa;

  if (len >= sizeof (struct sockaddr_in) && s->sa_family == AF_INET) {
    ip_from_bytes ((const guint8 *) &((const struct sockaddr_in *) sa)->
        sin_addr, 4, ip);
    return TRUE;
  }
  if (len >= sizeof (struct sockaddr_in6) && s->sa_family == AF_INET6) {
    ip_from_bytes ((const guint8 *) &((const struct sockaddr_in6 *) sa)->
        sin6_addr, 16, ip);
    return TRUE;
  }
  return FALSE;
}

gboolean
twoflow_net_ip_from_address (GSocketAddress * addr, TwoflowNetIp * ip)
{
  GInetAddress *ia;

  if (!addr || !G_IS_INET_SOCKET_ADDRESS (addr))
    return FALSE;
  ia = g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (addr));
  ip_from_bytes (g_inet_address_to_bytes (ia),
      g_inet_address_get_native_size (ia), ip);
  return TRUE;
}

gboolean
twoflow_net_ip_from_host (const gchar * host, TwoflowNetIp * ip,
    GError ** error)
{
  GInetSocketAddress *sa = twoflow_net_resolve (host, 0,
      G_SOCKET_FAMILY_INVALID, error);
  gboolean ok;

  if (!sa)
    return FALSE;
  ok = twoflow_net_ip_from_address (G_SOCKET_ADDRESS (sa), ip);
  g_object_unref (sa);
  return ok;
}

gboolean
twoflow_net_accept_host (GstElement * element, TwoflowNetIp * ip,
    gboolean * set)
{
  gchar *host = NULL;
  GError *err = NULL;
  gboolean ok = TRUE;

  g_object_get (element, "accept-host", &host, NULL);
  *set = FALSE;
  if (host && *host) {
    ok = *set = twoflow_net_ip_from_host (host, ip, &err);
    if (!ok) {
      GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS, (NULL),
          ("accept-host '%s': %s", host, err->message));
      g_clear_error (&err);
    }
  }
  g_free (host);
  return ok;
}

gboolean
twoflow_net_ip_equal (const TwoflowNetIp * a, const TwoflowNetIp * b)
{
  return memcmp (a->b, b->b, sizeof (a->b)) == 0;
}

gchar *
twoflow_net_peer_address (GSocket * socket, gchar ** ip)
{
  GSocketAddress *ra = g_socket_get_remote_address (socket, NULL);
  gchar *addr = NULL, *s = NULL;

  if (ra && G_IS_INET_SOCKET_ADDRESS (ra)) {
    addr = g_inet_address_to_string (g_inet_socket_address_get_address
        (G_INET_SOCKET_ADDRESS (ra)));
    s = g_strdup_printf ("%s:%u", addr,
        g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (ra)));
  }
  g_clear_object (&ra);
  if (ip)
    *ip = addr;
  else
    g_free (addr);
  return s;
}

guint
twoflow_net_timeout_seconds (GstClockTime timeout)
{
  if (!timeout)
    return 0;
  return MAX (1, (timeout + GST_SECOND - 1) / GST_SECOND);
}

gboolean
twoflow_net_hello_resolve (GstElement * element, const gchar * host,
    guint port, GInetSocketAddress ** dest)
{
  GError *err = NULL;

  *dest = NULL;
  if (!host || !*host)
    return TRUE;
  *dest = twoflow_net_resolve (host, port, G_SOCKET_FAMILY_INVALID, &err);
  if (!*dest || port == 0) {
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS, (NULL),
        ("cannot say hello to %s:%u: %s", host, port,
            err ? err->message : "no port"));
    g_clear_error (&err);
    g_clear_object (dest);
    return FALSE;
  }
  return TRUE;
}
