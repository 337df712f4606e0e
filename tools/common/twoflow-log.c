/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "twoflow-log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Lines are written by a thread of their own, from a bounded queue: a
 * reader that stops reading our stdout (a stalled pipe, a stuck terminal)
 * must not stop the main loop that serves every client, nor its SIGTERM.
 * Over the limit lines are dropped, and counted in a line of their own
 * once the reader is back. */
#define MAX_QUEUED_BYTES (1 << 20)

typedef struct
{
  gint fd;                      /* 1 or 2, or -1: to the journal */
  GLogLevelFlags level;         /* for the journal */
  gchar *text;                  /* with its newline (stdio) or without */
  gchar *domain;                /* the journal's GLIB_DOMAIN, or NULL */
} LogLine;

static gboolean to_journal;
static GMutex lock;
static GCond cond;
static GQueue queue = G_QUEUE_INIT;
static gsize queued_bytes;
static guint64 dropped;
static gboolean writing;        /* the writer holds a line */
static guint64 written;         /* lines the writer has written */
static GThread *writer_thread;

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
static gchar *
format_line (GLogLevelFlags level, const gchar * domain, const gchar * message)
{
  GDateTime *now = g_date_time_new_now_utc ();
  gchar *ts = g_date_time_format (now, "%Y-%m-%dT%H:%M:%S.%fZ");
  gchar *line = g_strdup_printf ("%s %s %s%s%s\n", ts, level_name (level),
      domain ? domain : "", domain ? ": " : "", message);

  g_free (ts);
  g_date_time_unref (now);
  return line;
}

static void
write_all (gint fd, const gchar * text)
{
  gsize len = strlen (text), off = 0;

  while (off < len) {
    gssize n = write (fd, text + off, len - off);

    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;                   /* closed or broken: nothing to do */
    off += n;
  }
}

static gpointer
writer_main (gpointer data)
{
  g_mutex_lock (&lock);
  for (;;) {
    LogLine *line;
    guint64 lost;

    while (g_queue_is_empty (&queue))
      g_cond_wait (&cond, &lock);
    line = g_queue_pop_head (&queue);
    queued_bytes -= strlen (line->text);
    lost = dropped;
    dropped = 0;
    writing = TRUE;
    g_mutex_unlock (&lock);

    if (lost > 0) {
      gchar *msg = g_strdup_printf ("%" G_GUINT64_FORMAT " log lines "
          "dropped: the output was not read", lost);
      gchar *note = format_line (G_LOG_LEVEL_WARNING, NULL, msg);

      g_free (msg);
      write_all (2, note);
      g_free (note);
    }
    if (line->fd < 0) {
      const GLogField fields[] = {
        {"MESSAGE", line->text, -1},
        {"PRIORITY", priority (line->level), -1},
        {"SYSLOG_IDENTIFIER", g_get_prgname (), -1},
        {"GLIB_DOMAIN", line->domain, -1},
      };
      /* (the domain last: left out when there is none) */
      g_log_writer_journald (line->level, fields,
          G_N_ELEMENTS (fields) - (line->domain ? 0 : 1), NULL);
    } else {
      write_all (line->fd, line->text);
    }
    g_free (line->text);
    g_free (line->domain);
    g_free (line);

    g_mutex_lock (&lock);
    writing = FALSE;
    written++;
    g_cond_broadcast (&cond);
  }
  return NULL;
}

static void
enqueue (gint fd, GLogLevelFlags level, const gchar * domain, gchar * text)
{
  gsize len = strlen (text);

  g_mutex_lock (&lock);
  if (!writer_thread) {
    /* before twoflow_log_init (or a failed thread): write in place */
    g_mutex_unlock (&lock);
    write_all (fd < 0 ? 2 : fd, text);
    g_free (text);
    return;
  }
  if (queued_bytes + len > MAX_QUEUED_BYTES) {
    dropped++;
    g_mutex_unlock (&lock);
    g_free (text);
    return;
  }
  {
    LogLine *line = g_new (LogLine, 1);

    line->fd = fd;
    line->level = level;
    line->text = text;
    line->domain = g_strdup (domain);
    g_queue_push_tail (&queue, line);
  }
  queued_bytes += len;
  g_cond_broadcast (&cond);
  g_mutex_unlock (&lock);
}

static void
write_line (GLogLevelFlags level, const gchar * domain, const gchar * message)
{
  gint fd = (level & (G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG)) ? 1 : 2;

  enqueue (fd, level, NULL, format_line (level, domain, message));
}

static void
log_text (GLogLevelFlags level, const gchar * message)
{
  if (to_journal) {
    enqueue (-1, level, NULL, g_strdup (message));
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
  for (i = 0; i < n; i++) {
    if (g_str_equal (fields[i].key, "MESSAGE") && fields[i].length < 0)
      message = fields[i].value;
    else if (g_str_equal (fields[i].key, "GLIB_DOMAIN")
        && fields[i].length < 0)
      domain = fields[i].value;
  }
  /* the journal too through the queue: a stalled journald must not
   * block the loop that serves the clients */
  if (to_journal)
    enqueue (-1, level, domain, g_strdup (message ? message : ""));
  else
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
      enqueue (1, G_LOG_LEVEL_INFO, NULL, g_strconcat (line, "\n", NULL));
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

/* At exit the queue is written out while the reader takes it: a slow
 * reader gets every line, one that takes nothing for half a second (gone
 * or stalled) does not hold the process. */
static void
drain_at_exit (void)
{
  gint64 deadline = g_get_monotonic_time () + G_TIME_SPAN_SECOND / 2;
  guint64 seen;

  g_mutex_lock (&lock);
  seen = written;
  while (!g_queue_is_empty (&queue) || writing) {
    if (!g_cond_wait_until (&cond, &lock, deadline)) {
      if (written == seen)
        break;
      seen = written;
      deadline = g_get_monotonic_time () + G_TIME_SPAN_SECOND / 2;
    }
  }
  g_mutex_unlock (&lock);
}

void
twoflow_log_init (void)
{
  to_journal = g_log_writer_is_journald (fileno (stderr));
  g_mutex_lock (&lock);
  if (!writer_thread) {
    writer_thread = g_thread_new ("twoflow-log", writer_main, NULL);
    atexit (drain_at_exit);
  }
  g_mutex_unlock (&lock);
  g_log_set_writer_func (writer, NULL, NULL);
  g_set_print_handler (print_handler);
  g_set_printerr_handler (printerr_handler);
}
