/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The programs' log (issue 26): every line with a level and a timestamp,
 * or journald fields (PRIORITY, SYSLOG_IDENTIFIER, ...) when stderr is
 * the journal (systemd). */
#ifndef TWOFLOW_LOG_H
#define TWOFLOW_LOG_H

#include <glib.h>

G_BEGIN_DECLS

/* Installs a GLib log writer and print handlers, after option parsing
 * (--help and --version print as they are). g_print() lines are logged at
 * level info, g_printerr() ones at error ("warning: ..." at warning),
 * g_log() messages at their own level; result records ("TAG {json}", read
 * by scripts) stay bare lines on stdout. Without journald:
 *   2026-11-27T21:50:00.123456Z info twoflow-server: HTTP on port 8080 ...
 * on stdout (info, debug) or stderr (the rest). */
void twoflow_log_init (void);

G_END_DECLS
#endif
