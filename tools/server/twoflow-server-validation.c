/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — address validation: stateless tokens that prove a media
 * address asked (docs/security.md, "No reflection")
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include <sys/random.h>
#include <glib.h>
#include "twoflow-server-validation.h"


static guint8 validation_secret[32];

gchar *
validation_token (const gchar * identity, const gchar * host, gint port,
    gint64 expiry)
{
  gchar *msg = g_strdup_printf ("%s\n%s\n%d\n%" G_GINT64_FORMAT, identity,
      host, port, expiry);
  gchar *mac = g_compute_hmac_for_string (G_CHECKSUM_SHA256,
      validation_secret, sizeof (validation_secret), msg, -1);
  gchar *tok = g_strdup_printf ("%" G_GINT64_FORMAT ".%.40s", expiry, mac);

  g_free (msg);
  g_free (mac);
  return tok;
}

gboolean
validation_check (const gchar * identity, const gchar * host, gint port,
    const gchar * token)
{
  gint64 now = g_get_real_time () / G_USEC_PER_SEC, expiry;
  gchar *end = NULL, *want;
  guint8 d = 0;
  gsize i, n;

  if (!token)
    return FALSE;
  expiry = g_ascii_strtoll (token, &end, 10);
  if (end == token || *end != '.' || expiry < now
      || expiry > now + VALIDATION_LIFETIME)
    return FALSE;
  want = validation_token (identity, host, port, expiry);
  n = strlen (want);
  if (strlen (token) != n) {
    g_free (want);
    return FALSE;
  }
  for (i = 0; i < n; i++)
    d |= (guint8) token[i] ^ (guint8) want[i];
  g_free (want);
  return d == 0;
}

/* The tokens' key, new at every start; FALSE: no randomness */
gboolean
validation_init (void)
{
  return getrandom (validation_secret, sizeof (validation_secret), 0) ==
      sizeof (validation_secret);
}
