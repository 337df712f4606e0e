/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "twoflow-log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static gboolean to_journal;
static GMutex lock;

static const gchar *
level_name (GLogLevelFlags level)
{
  /* syslog's names */
  if (level & G_LOG_LEVEL_ERROR)
    return "error";
  if (level & G_LOG_LEVEL_CRITICAL)
    return "critical";
  if (level & G_LOG_LEVEL_WARNING)
    return "warning";
  if (level & G_LOG_LEVEL_MESSAGE)
    return "notice";
  if (level & G_LOG_LEVEL_INFO)
    return "info";
  return "debug";
}

static const gchar *
priority (GLogLevelFlags level)
{
  if (level & G_LOG_LEVEL_ERROR)
    return "3";
  if (level & G_LOG_LEVEL_CRITICAL)
    return "2";
  if (level & G_LOG_LEVEL_WARNING)
    return "4";
  if (level & G_LOG_LEVEL_MESSAGE)
    return "5";
  if (level & G_LOG_LEVEL_INFO)
    return "6";
  return "7";
}

/* one line: TIMESTAMP LEVEL [DOMAIN: ]MESSAGE */
static void
write_line (GLogLevelFlags level, const gchar * domain, const gchar * message)
{
  GDateTime *now = g_date_time_new_now_utc ();
  gchar *ts = g_date_time_format (now, "%Y-%m-%dT%H:%M:%S.%fZ");
  FILE *out = (level & (G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG)) ?
      stdout : stderr;

  g_mutex_lock (&lock);
  fprintf (out, "%s %s %s%s%s\n", ts, level_name (level),
      domain ? domain : "", domain ? ": " : "", message);
  fflush (out);
  g_mutex_unlock (&lock);
  g_free (ts);
  g_date_time_unref (now);
}

static void
log_text (GLogLevelFlags level, const gchar * message)
{
  if (to_journal) {
    const GLogField fields[] = {
      {"MESSAGE", message, -1},
      {"PRIORITY", priority (level), -1},
      {"SYSLOG_IDENTIFIER", g_get_prgname (), -1},
    };
    g_log_writer_journald (level, fields, G_N_ELEMENTS (fields), NULL);
  } else {
    write_line (level, NULL, message);
  }
}

static GLogWriterOutput
writer (GLogLevelFlags level, const GLogField * fields, gsize n,
    gpointer data)
{
  const gchar *message = NULL, *domain = NULL;
  gsize i;

  /* debug and info only with G_MESSAGES_DEBUG, as GLib's own writer */
  if (g_log_writer_default_would_drop (level, NULL))
    return G_LOG_WRITER_HANDLED;
  if (to_journal &&
      g_log_writer_journald (level, fields, n, data) == G_LOG_WRITER_HANDLED)
    return G_LOG_WRITER_HANDLED;
  for (i = 0; i < n; i++) {
    if (g_str_equal (fields[i].key, "MESSAGE") && fields[i].length < 0)
      message = fields[i].value;
    else if (g_str_equal (fields[i].key, "GLIB_DOMAIN")
        && fields[i].length < 0)
      domain = fields[i].value;
  }
  write_line (level, domain, message ? message : "");
  return G_LOG_WRITER_HANDLED;
}

/* "TAG {json}": a record for scripts, not a log line */
static gboolean
is_record (const gchar * line)
{
  const gchar *p = line;

  if (!g_ascii_isupper (*p))
    return FALSE;
  while (g_ascii_isupper (*p) || g_ascii_isdigit (*p) || *p == '-'
      || *p == '_')
    p++;
  return p[0] == ' ' && (p[1] == '{' || p[1] == '[');
}

static void
print_lines (const gchar * text, gboolean err)
{
  gchar **lines = g_strsplit (text, "\n", -1);
  guint i, n = g_strv_length (lines);

  for (i = 0; i < n; i++) {
    const gchar *line = lines[i];

    if (!*line)
      continue;                 /* spacing, not a message */
    if (!err && is_record (line)) {
      g_mutex_lock (&lock);
      fprintf (stdout, "%s\n", line);
      fflush (stdout);
      g_mutex_unlock (&lock);
    } else if (err && g_str_has_prefix (line, "warning: ")) {
      log_text (G_LOG_LEVEL_WARNING, line + strlen ("warning: "));
    } else {
      log_text (err ? G_LOG_LEVEL_ERROR : G_LOG_LEVEL_INFO, line);
    }
  }
  g_strfreev (lines);
}

static void
print_handler (const gchar * text)
{
  print_lines (text, FALSE);
}

static void
printerr_handler (const gchar * text)
{
  print_lines (text, TRUE);
}

void
twoflow_log_init (void)
{
  to_journal = g_log_writer_is_journald (fileno (stderr));
  g_log_set_writer_func (writer, NULL, NULL);
  g_set_print_handler (print_handler);
  g_set_printerr_handler (printerr_handler);
}
