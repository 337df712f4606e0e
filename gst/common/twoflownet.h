/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the network plumbing the elements share (not installed): name
 * resolution, opening and binding UDP sockets, and the cancellable of an
 * element's blocking waits, kept as udpsrc keeps it. Blocking I/O lives
 * here, never in the sans-IO libraries under gst-libs/. */
#ifndef __TWOFLOW_NET_H__
#define __TWOFLOW_NET_H__

#include <gio/gio.h>
#include <gst/gst.h>

G_BEGIN_DECLS

/* @host is an IP address or a name (looked up with the default GResolver,
 * blocking). With @family G_SOCKET_FAMILY_INVALID the first address of
 * any family is taken, otherwise the first of @family (a socket already
 * bound can only reach its own family). NULL with @error set when there
 * is none. */
GInetSocketAddress *twoflow_net_resolve (const gchar * host, guint port,
    GSocketFamily family, GError ** error);

typedef enum {
  TWOFLOW_NET_REUSE = 1 << 0,   /* SO_REUSEADDR */
  TWOFLOW_NET_BLOCKING = 1 << 1,        /* else non-blocking */
  /* buffer sizes with SO_RCVBUFFORCE/SO_SNDBUFFORCE first (root may
   * exceed the sysctl maxima), else plain SO_RCVBUF/SO_SNDBUF */
  TWOFLOW_NET_FORCE_BUFFERS = 1 << 2,
} TwoflowNetFlags;

/* A UDP socket bound to @address (an IP literal) and @port (0: an
 * ephemeral port), with receive/send buffer sizes @rcvbuf/@sndbuf when
 * > 0. NULL with @error set (G_IO_ERROR_INVALID_ARGUMENT when @address is
 * no IP address). */
GSocket *twoflow_net_udp_open (const gchar * address, guint port,
    TwoflowNetFlags flags, gint rcvbuf, gint sndbuf, GError ** error);
/* A UDP socket of @family bound to the wildcard address, ephemeral port. */
GSocket *twoflow_net_udp_open_any (GSocketFamily family,
    TwoflowNetFlags flags, gint rcvbuf, gint sndbuf, GError ** error);
/* Receive-buffer accounting of a receiving UDP socket. Turns SO_RXQ_OVFL
 * on (each datagram then carries the socket's cumulative count of
 * datagrams the kernel dropped because the buffer was full) and returns
 * the buffer the kernel granted, in the units SO_RCVBUF is set in (half
 * of what getsockopt reports: the kernel doubles the request for its
 * bookkeeping). When @requested > 0 and the kernel granted less (it caps
 * SO_RCVBUF at net.core.rmem_max, and SO_RCVBUFFORCE needs
 * CAP_NET_ADMIN), posts a GST_ELEMENT_WARNING on @element saying so. */
gint twoflow_net_rcvbuf_setup (GstElement * element, GSocket * socket,
    gint requested);
/* Whether @cmsg is the SO_RXQ_OVFL control message; its counter in
 * *@drops (cumulative since the socket opened, modulo 2^32). @cmsg is a
 * struct cmsghdr *. */
gboolean twoflow_net_cmsg_drops (gconstpointer cmsg, guint32 * drops);
/* Control-message room a receive needs for SO_RXQ_OVFL */
#define TWOFLOW_NET_CMSG_DROPS_SPACE 32
/* The socket's kernel drop counter (SO_MEMINFO's SK_MEMINFO_DROPS: the
 * same counter SO_RXQ_OVFL reports, also when no datagram came after the
 * drops); FALSE if the kernel does not tell. */
gboolean twoflow_net_socket_drops (GSocket * socket, guint32 * drops);
/* Makes the element behind @srcpad answer ALLOCATION queries itself: a
 * receiver that copies every datagram into its own memory needs no pool,
 * and a serialized query sent downstream waits behind everything queued
 * there (rtpjitterbuffer holds it until the playout buffer has drained:
 * seconds) while no datagram is read. */
void twoflow_net_answer_allocation (GstPad * srcpad);

/* The port a socket is bound to (0 if unknown). */
guint16 twoflow_net_local_port (GSocket * socket);
/* Whether two textual addresses are the same IP (an IPv4-mapped IPv6
 * address equals its IPv4 one); FALSE if either is NULL or no IP. */
gboolean twoflow_net_same_ip (const gchar * a, const gchar * b);
/* The peer-address check of the plaintext receivers (accept-host): an
 * IP as a 16-byte key, an IPv4 address (or an IPv4-mapped IPv6 one) as
 * ::ffff:a.b.c.d, so both forms compare equal. */
typedef struct {
  guint8 b[16];
} TwoflowNetIp;

/* The IP of @host (a literal, or a name looked up, blocking) in *@ip;
 * FALSE with @error set if there is none. */
gboolean twoflow_net_ip_from_host (const gchar * host, TwoflowNetIp * ip,
    GError ** error);
/* @element's accept-host property resolved: TRUE with *@set TRUE and *@ip
 * its address, TRUE with *@set FALSE when it is unset or empty, FALSE
 * (an element error posted) when it names no address. Blocking. */
gboolean twoflow_net_accept_host (GstElement * element, TwoflowNetIp * ip,
    gboolean * set);
/* The IP of a native socket address (struct sockaddr_in or sockaddr_in6
 * of @len bytes) in *@ip; FALSE for another family. */
gboolean twoflow_net_ip_from_native (gconstpointer sa, gsize len,
    TwoflowNetIp * ip);
/* The IP of @addr (a GInetSocketAddress) in *@ip; FALSE otherwise. */
gboolean twoflow_net_ip_from_address (GSocketAddress * addr,
    TwoflowNetIp * ip);
gboolean twoflow_net_ip_equal (const TwoflowNetIp * a, const TwoflowNetIp * b);
/* The connected peer of @socket as "ip:port" (NULL if unknown); *@ip, if
 * given, gets the IP alone (NULL if unknown). */
gchar *twoflow_net_peer_address (GSocket * socket, gchar ** ip);
/* NAT hellos (the receivers' hello-host/hello-port): the address to say
 * hello to, in *@dest (NULL: no hello-host set, no hellos). FALSE, with a
 * RESOURCE/SETTINGS error posted on @element, if it does not resolve or
 * @port is 0. */
gboolean twoflow_net_hello_resolve (GstElement * element,
    const gchar * host, guint port, GInetSocketAddress ** dest);
/* A GstClockTime timeout as whole seconds for a socket timeout, rounded
 * up (0: none). */
guint twoflow_net_timeout_seconds (GstClockTime timeout);

/* The local address to bind so that @host can be reached: @bind_address
 * itself, except that the IPv4 wildcard "0.0.0.0" (the elements' default)
 * becomes the IPv6 wildcard "::" when @host is an IPv6 literal or a name
 * with IPv6 addresses only (looked up blocking). Free with g_free(). */
gchar *twoflow_net_bind_address_for (const gchar * bind_address,
    const gchar * host);

/* Sets the query parameters of @uri (`?key=value&...`) as properties of
 * @object: each key names a writable property (not one of the NULL
 * terminated @reserved names), its value is parsed as gst-launch-1.0
 * parses property values (enum nicks, caps, numbers...). Every parameter
 * is checked (name, value, range) before any is set; on failure nothing
 * is set and @error has GST_URI_ERROR_BAD_URI. */
gboolean twoflow_uri_set_query_properties (GObject * object, GstUri * uri,
    const gchar * const *reserved, GError ** error);

/* A network element's URI, @scheme://host:port[?property=value&...]:
 * sets @element's @host_prop and @port_prop and the properties the query
 * names. A missing host is @default_host (NULL: an error), a missing port
 * @default_port; a port below @min_port is an error. Refused above READY;
 * nothing is set on failure. The query's keys are kept for
 * twoflow_uri_make(). */
gboolean twoflow_uri_apply (GstElement * element, const gchar * str,
    const gchar * scheme, const gchar * host_prop, const gchar * port_prop,
    const gchar * default_host, guint default_port, guint min_port,
    GError ** error);

/* A "uri" property's new value, through @element's GstURIHandler: a bad
 * URI leaves everything as it was, with a warning (a property setter
 * cannot fail). */
void twoflow_uri_property_set (GstElement * element, const GValue * value);

/* @scheme://host:port[?property=value&...] from @element's @host_prop and
 * @port_prop, and the query of the last URI twoflow_uri_apply() set, the
 * same keys with the properties' current values: what set_uri() got reads
 * back. */
gchar *twoflow_uri_make (GstElement * element, const gchar * scheme,
    const gchar * host_prop, const gchar * port_prop);

/* The cancellable of a source's waits, as udpsrc has it: created with its
 * poll fd (so every wait does not open and close an eventfd), cancelled
 * in unlock() and *replaced* in unlock_stop(): g_cancellable_reset() on a
 * cancellable another thread may be waiting on is undefined. */
typedef struct {
  GCancellable *cancellable;
  GPollFD pollfd;
  gboolean made_fd;
} TwoflowCancel;

void twoflow_cancel_init (TwoflowCancel * c);   /* start() */
void twoflow_cancel_clear (TwoflowCancel * c);  /* stop() */
void twoflow_cancel_cancel (TwoflowCancel * c); /* unlock() */
void twoflow_cancel_replace (TwoflowCancel * c);        /* unlock_stop() */

G_END_DECLS

#endif
