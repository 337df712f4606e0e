/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP rate levels: the table sender and receiver agree on. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include "rudplevels.h"

void
gst_rudp_levels_init_default (GstRudpLevels * l)
{
  guint i;

  memset (l, 0, sizeof (*l));
  l->n = GST_RUDP_DEFAULT_N_LEVELS;
  for (i = 0; i < l->n; i++)
    l->rate[i] = (guint64) (i + 1) * GST_RUDP_DEFAULT_LEVEL_STEP;
}

gboolean
gst_rudp_levels_set (GstRudpLevels * l, const guint64 * rates, guint n)
{
  guint i;

  if (n == 0 || n > GST_RUDP_MAX_LEVELS)
    return FALSE;
  for (i = 0; i < n; i++)
    if (rates[i] == 0 || (i > 0 && rates[i] <= rates[i - 1]))
      return FALSE;
  memset (l, 0, sizeof (*l));
  l->n = n;
  memcpy (l->rate, rates, n * sizeof (guint64));
  return TRUE;
}

guint
gst_rudp_levels_for_bitrate (const GstRudpLevels * l, guint64 bitrate)
{
  guint i, best = 0;

  for (i = 0; i < l->n; i++)
    if (l->rate[i] * 1000 <= bitrate * 1001)
      best = i;
  return best;
}

gchar *
gst_rudp_levels_to_string (const GstRudpLevels * l)
{
  GString *s = g_string_new (NULL);
  guint i;

  for (i = 0; i < l->n; i++)
    g_string_append_printf (s, "%s%" G_GUINT64_FORMAT, i ? "," : "",
        l->rate[i]);
  return g_string_free (s, FALSE);
}

gboolean
gst_rudp_levels_from_string (GstRudpLevels * l, const gchar * str)
{
  guint64 rates[GST_RUDP_MAX_LEVELS];
  gchar **parts;
  guint i, n = 0;
  gboolean ok = TRUE;

  if (!str)
    return FALSE;
  parts = g_strsplit_set (str, ", ;<>", -1);
  for (i = 0; parts[i] && ok; i++) {
    gchar *end;
    guint64 v;

    if (parts[i][0] == '\0')
      continue;
    v = g_ascii_strtoull (parts[i], &end, 10);
    if (*end != '\0' || n == GST_RUDP_MAX_LEVELS)
      ok = FALSE;
    else
      rates[n++] = v;
  }
  g_strfreev (parts);
  return ok && gst_rudp_levels_set (l, rates, n);
}
