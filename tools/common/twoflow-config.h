/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One GKeyFile config for every option of a program: keys are named like
 * the long flags (http-port=8080), in the group [twoflow-proxy] or
 * [twoflow-server] (or any group: all are read); flags on the command line
 * override the file. */
#ifndef TWOFLOW_CONFIG_H
#define TWOFLOW_CONFIG_H

#include <glib.h>

G_BEGIN_DECLS

/* Finds --config FILE (or --config=FILE) in argv and applies the file's
 * keys to @entries' variables. Returns FALSE (and @error) on an unreadable
 * file, an unknown key or a bad value. @path_out: the file, or NULL. */
gboolean twoflow_config_load_from_args (const GOptionEntry * entries,
    int argc, char **argv, gchar ** path_out, GError ** error);

/* Applies one config file to @entries. */
gboolean twoflow_config_load (const GOptionEntry * entries,
    const gchar * path, GError ** error);

/* --version: "PROGRAM VERSION (GStreamer x.y.z)" on stdout */
void twoflow_config_print_version (const gchar * program);

/* A program's command line: --config FILE first, then the options and
 * GStreamer's over it, --version (@version, an entry's variable) printed.
 * Returns -1 to go on, else the exit status (0 after --version, 2 on an
 * error, said on stderr). */
gint twoflow_config_parse_command_line (const GOptionEntry * entries,
    const gchar * program, const gchar * summary, const gboolean * version,
    gint * argc, gchar *** argv);

/* Whether every element factory in the NULL-terminated @factories is
 * installed; else says which are missing on stderr (the program then
 * exits instead of failing in its first session). */
gboolean twoflow_config_check_elements (const gchar * program,
    const gchar * const *factories);

G_END_DECLS
#endif
