/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "twoflowprops.h"

#include <string.h>

#include <gst/twoflow/twoflowhello.h>
#include "twoflowtls.h"

void
twoflow_property_install_alias (GObjectClass * klass, guint prop_id,
    const gchar * old_name, const gchar * new_name)
{
  GParamSpec *target = g_object_class_find_property (klass, new_name);
  GParamSpec *alias = NULL;
  GParamFlags flags;
  gchar *blurb;

  g_return_if_fail (target != NULL);
  /* the strings are copied: only the target's are static */
  flags = (target->flags & ~G_PARAM_STATIC_STRINGS) | G_PARAM_DEPRECATED;
  blurb = g_strdup_printf ("Deprecated: use %s", new_name);
  if (G_IS_PARAM_SPEC_UINT64 (target)) {
    GParamSpecUInt64 *p = G_PARAM_SPEC_UINT64 (target);

    alias = g_param_spec_uint64 (old_name, target->_nick, blurb, p->minimum,
        p->maximum, p->default_value, flags);
  } else if (G_IS_PARAM_SPEC_UINT (target)) {
    GParamSpecUInt *p = G_PARAM_SPEC_UINT (target);

    alias = g_param_spec_uint (old_name, target->_nick, blurb, p->minimum,
        p->maximum, p->default_value, flags);
  } else if (G_IS_PARAM_SPEC_INT (target)) {
    GParamSpecInt *p = G_PARAM_SPEC_INT (target);

    alias = g_param_spec_int (old_name, target->_nick, blurb, p->minimum,
        p->maximum, p->default_value, flags);
  } else if (G_IS_PARAM_SPEC_DOUBLE (target)) {
    GParamSpecDouble *p = G_PARAM_SPEC_DOUBLE (target);

    alias = g_param_spec_double (old_name, target->_nick, blurb, p->minimum,
        p->maximum, p->default_value, flags);
  } else if (G_IS_PARAM_SPEC_BOOLEAN (target)) {
    alias = g_param_spec_boolean (old_name, target->_nick, blurb,
        G_PARAM_SPEC_BOOLEAN (target)->default_value, flags);
  } else if (G_IS_PARAM_SPEC_STRING (target)) {
    alias = g_param_spec_string (old_name, target->_nick, blurb,
        G_PARAM_SPEC_STRING (target)->default_value, flags);
  }
  g_free (blurb);
  g_return_if_fail (alias != NULL);
  g_object_class_install_property (klass, prop_id, alias);
}

#define GROUP_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | \
    GST_PARAM_MUTABLE_READY)

void
twoflow_hello_receiver_props_install (GObjectClass * klass, guint first_id)
{
  /*
   * hello-host:
   *
   * NAT traversal: the sender's address to send hellos to (with
   * hello-port), from the socket the flow is received on; unset (the
   * default), no hello is sent.
   */
  g_object_class_install_property (klass,
      first_id + TWOFLOW_HELLO_RECEIVER_PROP_HOST,
      g_param_spec_string ("hello-host", "Hello host",
          "Sender address to say hello to from our socket (NAT traversal)",
          NULL, GROUP_FLAGS));
  /*
   * hello-port:
   *
   * The sender's UDP port for hellos (its current-port).
   */
  g_object_class_install_property (klass,
      first_id + TWOFLOW_HELLO_RECEIVER_PROP_PORT,
      g_param_spec_uint ("hello-port", "Hello port",
          "Sender UDP port to say hello to", 0, 65535, 0, GROUP_FLAGS));
  /*
   * hello-id:
   *
   * The session id hellos carry (the sender's hello-id).
   */
  g_object_class_install_property (klass,
      first_id + TWOFLOW_HELLO_RECEIVER_PROP_ID,
      g_param_spec_uint64 ("hello-id", "Hello id",
          "Session id carried by the hellos", 0, G_MAXUINT64, 0,
          GROUP_FLAGS));
  /*
   * hello-interval:
   *
   * Time between hellos until the sender's packets arrive (ns).
   */
  g_object_class_install_property (klass,
      first_id + TWOFLOW_HELLO_RECEIVER_PROP_INTERVAL,
      g_param_spec_uint64 ("hello-interval", "Hello interval",
          "Time between hellos until the sender's packets arrive (ns)",
          GST_MSECOND, G_MAXUINT64, GST_TWOFLOW_HELLO_DEFAULT_RETRY,
          GROUP_FLAGS));
  /*
   * keepalive-interval:
   *
   * Time between hellos once the sender's packets arrived (ns), keeping
   * the NAT's mapping while the flow is idle; 0: none.
   */
  g_object_class_install_property (klass,
      first_id + TWOFLOW_HELLO_RECEIVER_PROP_KEEPALIVE_INTERVAL,
      g_param_spec_uint64 ("keepalive-interval", "Keepalive interval",
          "Time between hellos once the sender's packets arrived (ns, 0 = "
          "none)", 0, G_MAXUINT64, GST_TWOFLOW_HELLO_DEFAULT_KEEPALIVE,
          GROUP_FLAGS));
  /*
   * accept-host:
   *
   * The sender's address (an IP, or a name resolved at start): packets
   * only from it, everything else dropped and counted in the stats. NULL
   * (the default): hello-host's address when set, else the first
   * sender's.
   */
  g_object_class_install_property (klass,
      first_id + TWOFLOW_HELLO_RECEIVER_PROP_ACCEPT_HOST,
      g_param_spec_string ("accept-host", "Accept host",
          "Accept packets only from this sender address (NULL: hello-host, "
          "else the first sender)", NULL, GROUP_FLAGS));
}

void
twoflow_hello_receiver_props_init (TwoflowHelloReceiverProps * props)
{
  memset (props, 0, sizeof (*props));
  props->interval = GST_TWOFLOW_HELLO_DEFAULT_RETRY;
  props->keepalive_interval = GST_TWOFLOW_HELLO_DEFAULT_KEEPALIVE;
}

void
twoflow_hello_receiver_props_clear (TwoflowHelloReceiverProps * props)
{
  g_clear_pointer (&props->host, g_free);
  g_clear_pointer (&props->accept_host, g_free);
}

gboolean
twoflow_hello_receiver_props_set (TwoflowHelloReceiverProps * props, guint id,
    const GValue * value)
{
  switch (id) {
    case TWOFLOW_HELLO_RECEIVER_PROP_HOST:
      g_free (props->host);
      props->host = g_value_dup_string (value);
      return TRUE;
    case TWOFLOW_HELLO_RECEIVER_PROP_PORT:
      props->port = g_value_get_uint (value);
      return TRUE;
    case TWOFLOW_HELLO_RECEIVER_PROP_ID:
      props->id = g_value_get_uint64 (value);
      return TRUE;
    case TWOFLOW_HELLO_RECEIVER_PROP_INTERVAL:
      props->interval = g_value_get_uint64 (value);
      return TRUE;
    case TWOFLOW_HELLO_RECEIVER_PROP_KEEPALIVE_INTERVAL:
      props->keepalive_interval = g_value_get_uint64 (value);
      return TRUE;
    case TWOFLOW_HELLO_RECEIVER_PROP_ACCEPT_HOST:
      g_free (props->accept_host);
      props->accept_host = g_value_dup_string (value);
      return TRUE;
    default:
      return FALSE;
  }
}

gboolean
twoflow_hello_receiver_props_get (const TwoflowHelloReceiverProps * props,
    guint id, GValue * value)
{
  switch (id) {
    case TWOFLOW_HELLO_RECEIVER_PROP_HOST:
      g_value_set_string (value, props->host);
      return TRUE;
    case TWOFLOW_HELLO_RECEIVER_PROP_PORT:
      g_value_set_uint (value, props->port);
      return TRUE;
    case TWOFLOW_HELLO_RECEIVER_PROP_ID:
      g_value_set_uint64 (value, props->id);
      return TRUE;
    case TWOFLOW_HELLO_RECEIVER_PROP_INTERVAL:
      g_value_set_uint64 (value, props->interval);
      return TRUE;
    case TWOFLOW_HELLO_RECEIVER_PROP_KEEPALIVE_INTERVAL:
      g_value_set_uint64 (value, props->keepalive_interval);
      return TRUE;
    case TWOFLOW_HELLO_RECEIVER_PROP_ACCEPT_HOST:
      g_value_set_string (value, props->accept_host);
      return TRUE;
    default:
      return FALSE;
  }
}

void
twoflow_hello_sender_props_install (GObjectClass * klass, guint first_id)
{
  /*
   * learn-peer:
   *
   * Send to where the receiver's hellos come from (NAT traversal) instead
   * of host:port: host is then only the address hellos must come from,
   * port is ignored. Nothing is sent before the first hello.
   */
  g_object_class_install_property (klass,
      first_id + TWOFLOW_HELLO_SENDER_PROP_LEARN_PEER,
      g_param_spec_boolean ("learn-peer", "Learn peer",
          "Send to the address and port the receiver's hellos come from "
          "(from host's address only)", FALSE, GROUP_FLAGS));
  /*
   * hello-id:
   *
   * With learn-peer: the session id the receiver's hellos must carry
   * (the receiver's hello-id), unique among the senders sharing a socket.
   */
  g_object_class_install_property (klass,
      first_id + TWOFLOW_HELLO_SENDER_PROP_ID,
      g_param_spec_uint64 ("hello-id", "Hello id",
          "Session id carried by the receiver's hellos (learn-peer)", 0,
          G_MAXUINT64, 0, GROUP_FLAGS));
}

void
twoflow_hello_sender_props_init (TwoflowHelloSenderProps * props)
{
  props->learn_peer = FALSE;
  props->id = 0;
}

gboolean
twoflow_hello_sender_props_set (TwoflowHelloSenderProps * props, guint id,
    const GValue * value)
{
  switch (id) {
    case TWOFLOW_HELLO_SENDER_PROP_LEARN_PEER:
      props->learn_peer = g_value_get_boolean (value);
      return TRUE;
    case TWOFLOW_HELLO_SENDER_PROP_ID:
      props->id = g_value_get_uint64 (value);
      return TRUE;
    default:
      return FALSE;
  }
}

gboolean
twoflow_hello_sender_props_get (const TwoflowHelloSenderProps * props,
    guint id, GValue * value)
{
  switch (id) {
    case TWOFLOW_HELLO_SENDER_PROP_LEARN_PEER:
      g_value_set_boolean (value, props->learn_peer);
      return TRUE;
    case TWOFLOW_HELLO_SENDER_PROP_ID:
      g_value_set_uint64 (value, props->id);
      return TRUE;
    default:
      return FALSE;
  }
}

void
twoflow_tls_props_install (GObjectClass * klass, guint first_id)
{
  /* tls:
   *
   * TLS on the connection. FALSE (the default, lab use) is plain TCP
   * unless one of the other tls-* properties is set, which turns TLS on.
   */
  g_object_class_install_property (klass, first_id + TWOFLOW_TLS_PROP_TLS,
      g_param_spec_boolean ("tls", "TLS", "TLS on the connection (also on "
          "when any tls-* property is set)", FALSE, GROUP_FLAGS));
  /* tls-ca-file:
   *
   * PEM file of the CA certificates the TLS server's certificate must
   * chain to (NULL: the system's), absolute or relative to the current
   * directory. Setting it turns TLS on.
   */
  g_object_class_install_property (klass,
      first_id + TWOFLOW_TLS_PROP_CA_FILE,
      g_param_spec_string ("tls-ca-file", "TLS CA file",
          "PEM file of trusted CAs (NULL: the system's)", NULL,
          GROUP_FLAGS));
  /* tls-pin:
   *
   * SHA-256 fingerprint of the TLS server's certificate (DER; the
   * receiver's, or the sender's with ctcpsink tls-role=server), 64 hex
   * digits, `:` allowed, optional `sha256:` prefix. Alone, it replaces CA
   * validation; with tls-ca-file both must hold. Setting it turns TLS on.
   */
  g_object_class_install_property (klass, first_id + TWOFLOW_TLS_PROP_PIN,
      g_param_spec_string ("tls-pin", "TLS pin",
          "SHA-256 fingerprint of the TLS server's certificate", NULL,
          GROUP_FLAGS));
  /* tls-token:
   *
   * The secret the receiver sends as the first bytes inside TLS, once it
   * has checked the sender's certificate (ctcpsink tls-role=server and
   * ctcpsrc); the sender sends nothing before it and refuses a receiver
   * that does not send it. Setting it turns TLS on. Write-only.
   */
  g_object_class_install_property (klass, first_id + TWOFLOW_TLS_PROP_TOKEN,
      g_param_spec_string ("tls-token", "TLS token",
          "Secret the receiver sends first inside TLS (ctcpsink: "
          "tls-role=server)", NULL, G_PARAM_WRITABLE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
}

void
twoflow_tls_props_init (TwoflowTlsProps * props)
{
  memset (props, 0, sizeof (*props));
}

void
twoflow_tls_props_clear (TwoflowTlsProps * props)
{
  g_clear_pointer (&props->ca_file, g_free);
  g_clear_pointer (&props->pin, g_free);
  g_clear_pointer (&props->token, g_free);
}

gboolean
twoflow_tls_props_enabled (const TwoflowTlsProps * props)
{
  return props->tls || props->ca_file || props->pin || props->token;
}

gboolean
twoflow_tls_props_set (TwoflowTlsProps * props, guint id, const GValue * value)
{
  switch (id) {
    case TWOFLOW_TLS_PROP_TLS:
      props->tls = g_value_get_boolean (value);
      return TRUE;
    case TWOFLOW_TLS_PROP_CA_FILE:
      g_free (props->ca_file);
      props->ca_file = g_value_dup_string (value);
      return TRUE;
    case TWOFLOW_TLS_PROP_PIN:
      g_free (props->pin);
      props->pin = g_value_dup_string (value);
      return TRUE;
    case TWOFLOW_TLS_PROP_TOKEN:
      twoflow_tls_token_set (&props->token, g_value_get_string (value));
      return TRUE;
    default:
      return FALSE;
  }
}

gboolean
twoflow_tls_props_get (const TwoflowTlsProps * props, guint id,
    GValue * value)
{
  switch (id) {
    case TWOFLOW_TLS_PROP_TLS:
      g_value_set_boolean (value, props->tls);
      return TRUE;
    case TWOFLOW_TLS_PROP_CA_FILE:
      g_value_set_string (value, props->ca_file);
      return TRUE;
    case TWOFLOW_TLS_PROP_PIN:
      g_value_set_string (value, props->pin);
      return TRUE;
    default:                   /* tls-token is write-only */
      return FALSE;
  }
}
