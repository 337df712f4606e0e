/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The programs as services: readiness for systemd (Type=notify) and
 * secrets read from files (LoadCredential=) instead of the command line,
 * where every user sees them in ps. */
#ifndef TWOFLOW_DAEMON_H
#define TWOFLOW_DAEMON_H

#include <glib.h>

G_BEGIN_DECLS

/* sd_notify(3) @state ("READY=1", "STOPPING=1", ...) when built with
 * libsystemd and run by systemd (NOTIFY_SOCKET); otherwise nothing. */
void twoflow_daemon_notify (const gchar * state);

/* --OPTION-file FILE: the secret is FILE's first line (a trailing newline
 * or CR is not part of it), stored in *@value. Nothing to do when @file is
 * NULL. An error when both --@option and --@option-file are given, or when
 * the file cannot be read or holds an empty secret. */
gboolean twoflow_daemon_read_secret (const gchar * option, const gchar * file,
    gchar ** value, GError ** error);

G_END_DECLS
#endif
