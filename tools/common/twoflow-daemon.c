/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "twoflow-daemon.h"

#include <string.h>
#ifdef TWOFLOW_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

void
twoflow_daemon_notify (const gchar * state)
{
#ifdef TWOFLOW_HAVE_LIBSYSTEMD
  /* 0 unless run with NOTIFY_SOCKET; a failure to notify is systemd's to
   * report (the start times out), not a reason to stop */
  sd_notify (0, state);
#endif
}

gboolean
twoflow_daemon_read_secret (const gchar * option, const gchar * file,
    gchar ** value, GError ** error)
{
  gchar *contents = NULL;
  gsize len;

  if (file == NULL)
    return TRUE;
  if (*value != NULL) {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
        "--%s and --%s-file: give one of them", option, option);
    return FALSE;
  }
  if (!g_file_get_contents (file, &contents, &len, error)) {
    g_prefix_error (error, "--%s-file: ", option);
    return FALSE;
  }
  /* the first line: `echo secret > file` writes a newline after it */
  contents[strcspn (contents, "\r\n")] = '\0';
  if (contents[0] == '\0') {
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
        "--%s-file: %s holds no secret", option, file);
    g_free (contents);
    return FALSE;
  }
  *value = contents;
  return TRUE;
}
