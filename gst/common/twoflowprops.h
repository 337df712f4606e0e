/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — property plumbing the elements share (not installed): the
 * deprecated aliases that keep a renamed property's old name working for
 * one release (docs/conventions.md, "Names and units"), and the property
 * groups several elements have, installed, set and read by one helper as
 * srt's gst_srt_object_install_properties_helper() does: NAT traversal's
 * hello-* (erapsrc and rudpsrc; learn-peer and hello-id of erapsink and
 * rudpsink) and the tls-* both cTCP ends have (ctcpsink, ctcpsrc). A group takes consecutive property ids from the first one the
 * element reserves; its set/get helpers take the id relative to that and
 * return FALSE for one not theirs. The element holds its lock around them
 * as around its own properties. */
#ifndef __TWOFLOW_PROPS_H__
#define __TWOFLOW_PROPS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* Installs @old_name as a deprecated alias of the already installed
 * property @new_name of @klass: the same type, range, default and flags
 * plus G_PARAM_DEPRECATED, blurb "Deprecated: use @new_name", and the same
 * @prop_id, so the class's set/get_property read and write the one value
 * without a case of their own. GLib warns on its use only with
 * G_ENABLE_DIAGNOSTIC=1. */
void twoflow_property_install_alias (GObjectClass * klass, guint prop_id,
    const gchar * old_name, const gchar * new_name);

/* The receiver's side of NAT traversal (twoflowhello): hello-host,
 * hello-port, hello-id, hello-interval, keepalive-interval, accept-host. */
typedef struct {
  gchar *host;                  /* say hello to host:port */
  guint port;
  guint64 id;
  GstClockTime interval;        /* between hellos until the flow arrives */
  GstClockTime keepalive_interval;
  gchar *accept_host;           /* packets only from this address */
} TwoflowHelloReceiverProps;

enum {
  TWOFLOW_HELLO_RECEIVER_PROP_HOST,
  TWOFLOW_HELLO_RECEIVER_PROP_PORT,
  TWOFLOW_HELLO_RECEIVER_PROP_ID,
  TWOFLOW_HELLO_RECEIVER_PROP_INTERVAL,
  TWOFLOW_HELLO_RECEIVER_PROP_KEEPALIVE_INTERVAL,
  TWOFLOW_HELLO_RECEIVER_PROP_ACCEPT_HOST,
  TWOFLOW_HELLO_RECEIVER_N_PROPS
};

void twoflow_hello_receiver_props_install (GObjectClass * klass,
    guint first_id);
void twoflow_hello_receiver_props_init (TwoflowHelloReceiverProps * props);
void twoflow_hello_receiver_props_clear (TwoflowHelloReceiverProps * props);
gboolean twoflow_hello_receiver_props_set (TwoflowHelloReceiverProps * props,
    guint id, const GValue * value);
gboolean twoflow_hello_receiver_props_get (const TwoflowHelloReceiverProps *
    props, guint id, GValue * value);

/* The sender's side: learn-peer and hello-id. */
typedef struct {
  gboolean learn_peer;          /* the destination from the hellos */
  guint64 id;
} TwoflowHelloSenderProps;

enum {
  TWOFLOW_HELLO_SENDER_PROP_LEARN_PEER,
  TWOFLOW_HELLO_SENDER_PROP_ID,
  TWOFLOW_HELLO_SENDER_N_PROPS
};

void twoflow_hello_sender_props_install (GObjectClass * klass,
    guint first_id);
void twoflow_hello_sender_props_init (TwoflowHelloSenderProps * props);
gboolean twoflow_hello_sender_props_set (TwoflowHelloSenderProps * props,
    guint id, const GValue * value);
gboolean twoflow_hello_sender_props_get (const TwoflowHelloSenderProps *
    props, guint id, GValue * value);

/* The TLS settings both ends of cTCP have: tls, tls-ca-file, tls-pin,
 * tls-token (write-only). Setting any of the strings turns TLS on
 * (twoflow_tls_props_enabled()). The element keeps its own role-specific
 * ones (ctcpsink's tls-role, tls-certificate, tls-key; ctcpsrc's
 * tls-server-name). */
typedef struct {
  gboolean tls;                 /* the tls property */
  gchar *ca_file;
  gchar *pin;
  gchar *token;                 /* never read back */
} TwoflowTlsProps;

enum {
  TWOFLOW_TLS_PROP_TLS,
  TWOFLOW_TLS_PROP_CA_FILE,
  TWOFLOW_TLS_PROP_PIN,
  TWOFLOW_TLS_PROP_TOKEN,
  TWOFLOW_TLS_N_PROPS
};

void twoflow_tls_props_install (GObjectClass * klass, guint first_id);
void twoflow_tls_props_init (TwoflowTlsProps * props);
void twoflow_tls_props_clear (TwoflowTlsProps * props);
gboolean twoflow_tls_props_enabled (const TwoflowTlsProps * props);
gboolean twoflow_tls_props_set (TwoflowTlsProps * props, guint id,
    const GValue * value);
gboolean twoflow_tls_props_get (const TwoflowTlsProps * props, guint id,
    GValue * value);

/* A time in seconds (a deprecated double property) as the ns of its
 * GstClockTime replacement, rounded to the nearest ns. */
static inline guint64
twoflow_seconds_to_ns (gdouble seconds)
{
  return seconds > 0 ? (guint64) (seconds * GST_SECOND + 0.5) : 0;
}

G_END_DECLS

#endif /* __TWOFLOW_PROPS_H__ */
