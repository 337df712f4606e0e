/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — who may use the control channel, and how much
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#include <string.h>
#include "twoflow-auth.h"

struct _TwoflowTokens
{
  GPtrArray *names, *tokens;
};

TwoflowTokens *
twoflow_tokens_load (const gchar * path, GError ** error)
{
  gchar *text = NULL, **lines;
  TwoflowTokens *t;
  gint i;

  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  t = g_new0 (TwoflowTokens, 1);
  t->names = g_ptr_array_new_with_free_func (g_free);
  t->tokens = g_ptr_array_new_with_free_func (g_free);
  lines = g_strsplit (text, "\n", -1);
  g_free (text);
  for (i = 0; lines[i]; i++) {
    gchar *l = g_strstrip (lines[i]), **f;
    if (*l == '\0' || *l == '#')
      continue;
    f = g_strsplit_set (l, " \t", -1);
    {
      gchar *name = NULL, *tok = NULL;
      gint j;
      for (j = 0; f[j]; j++) {
        if (*f[j] == '\0')
          continue;
        if (!name)
          name = f[j];
        else if (!tok)
          tok = f[j];
      }
      if (!name || !tok || strlen (tok) < 16) {
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
            "%s:%d: expected \"name token\" (a token of 16 characters or "
            "more)", path, i + 1);
        g_strfreev (f);
        g_strfreev (lines);
        twoflow_tokens_free (t);
        return NULL;
      }
      g_ptr_array_add (t->names, g_strdup (name));
      g_ptr_array_add (t->tokens, g_strdup (tok));
    }
    g_strfreev (f);
  }
  g_strfreev (lines);
  if (t->tokens->len == 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
        "%s: no tokens", path);
    twoflow_tokens_free (t);
    return NULL;
  }
  return t;
}

guint
twoflow_tokens_count (TwoflowTokens * t)
{
  return t ? t->tokens->len : 0;
}

/* equal length and bytes, in time independent of where they differ */
static gboolean
equal_ct (const gchar * a, const gchar * b)
{
  gsize la = strlen (a), lb = strlen (b), i;
  guint8 d = la != lb;

  for (i = 0; i < la; i++)
    d |= (guint8) a[i] ^ (guint8) b[lb ? i % lb : 0];
  return d == 0;
}

const gchar *
twoflow_tokens_check (TwoflowTokens * t, const gchar * token)
{
  const gchar *found = NULL;
  guint i;

  if (t == NULL || token == NULL || *token == '\0')
    return NULL;
  for (i = 0; i < t->tokens->len; i++)
    if (equal_ct (token, g_ptr_array_index (t->tokens, i)) && !found)
      found = g_ptr_array_index (t->names, i);
  return found;
}

void
twoflow_tokens_free (TwoflowTokens * t)
{
  if (t == NULL)
    return;
  g_ptr_array_unref (t->names);
  g_ptr_array_unref (t->tokens);
  g_free (t);
}

static GInetAddress *
parse_unmapped (const gchar * s)
{
  GInetAddress *a = s ? g_inet_address_new_from_string (s) : NULL;

  if (a && g_inet_address_get_family (a) == G_SOCKET_FAMILY_IPV6) {
    const guint8 *b = g_inet_address_to_bytes (a);
    static const guint8 mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
      0xff
    };
    if (memcmp (b, mapped, 12) == 0) {
      GInetAddress *v4 = g_inet_address_new_from_bytes (b + 12,
          G_SOCKET_FAMILY_IPV4);
      g_object_unref (a);
      a = v4;
    }
  }
  return a;
}

gboolean
twoflow_same_address (const gchar * a, const gchar * b)
{
  GInetAddress *x = parse_unmapped (a), *y = parse_unmapped (b);
  gboolean same = x && y && g_inet_address_equal (x, y);

  g_clear_object (&x);
  g_clear_object (&y);
  return same;
}
