/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "twoflow-config.h"

#include <gst/gst.h>
#include <string.h>
#include <stdlib.h>

static const GOptionEntry *
find_entry (const GOptionEntry * entries, const gchar * key)
{
  for (; entries->long_name; entries++)
    if (g_str_equal (entries->long_name, key))
      return entries;
  return NULL;
}

static gboolean
apply (const GOptionEntry * e, GKeyFile * kf, const gchar * group,
    const gchar * key, GError ** error)
{
  GError *err = NULL;

  switch (e->arg) {
    case G_OPTION_ARG_STRING:
    case G_OPTION_ARG_FILENAME:{
      gchar *v = g_key_file_get_string (kf, group, key, &err);
      if (v) {
        gchar **dst = e->arg_data;
        g_free (*dst);
        *dst = v;
      }
      break;
    }
    case G_OPTION_ARG_INT:{
      gint v = g_key_file_get_integer (kf, group, key, &err);
      if (!err)
        *(gint *) e->arg_data = v;
      break;
    }
    case G_OPTION_ARG_INT64:{
      gint64 v = g_key_file_get_int64 (kf, group, key, &err);
      if (!err)
        *(gint64 *) e->arg_data = v;
      break;
    }
    case G_OPTION_ARG_DOUBLE:{
      gdouble v = g_key_file_get_double (kf, group, key, &err);
      if (!err)
        *(gdouble *) e->arg_data = v;
      break;
    }
    case G_OPTION_ARG_NONE:{
      gboolean v = g_key_file_get_boolean (kf, group, key, &err);
      if (!err)
        *(gboolean *) e->arg_data = v;
      break;
    }
    default:
      g_set_error (&err, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
          "option type of %s not supported in a config file", key);
  }
  if (err) {
    g_propagate_prefixed_error (error, err, "[%s] %s: ", group, key);
    return FALSE;
  }
  return TRUE;
}

gboolean
twoflow_config_load (const GOptionEntry * entries, const gchar * path,
    GError ** error)
{
  GKeyFile *kf = g_key_file_new ();
  gchar **groups, **keys;
  gboolean ok = TRUE;
  guint g, k;

  if (!g_key_file_load_from_file (kf, path, G_KEY_FILE_NONE, error)) {
    g_prefix_error (error, "%s: ", path);
    g_key_file_free (kf);
    return FALSE;
  }
  groups = g_key_file_get_groups (kf, NULL);
  for (g = 0; ok && groups[g]; g++) {
    keys = g_key_file_get_keys (kf, groups[g], NULL, NULL);
    for (k = 0; ok && keys && keys[k]; k++) {
      const GOptionEntry *e = find_entry (entries, keys[k]);
      if (!e || g_str_equal (keys[k], "config")) {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
            "%s: [%s] %s: no such option", path, groups[g], keys[k]);
        ok = FALSE;
      } else {
        ok = apply (e, kf, groups[g], keys[k], error);
        if (!ok)
          g_prefix_error (error, "%s: ", path);
      }
    }
    g_strfreev (keys);
  }
  g_strfreev (groups);
  g_key_file_free (kf);
  return ok;
}

gboolean
twoflow_config_load_from_args (const GOptionEntry * entries, int argc,
    char **argv, gchar ** path_out, GError ** error)
{
  const gchar *path = NULL;
  gint i;

  for (i = 1; i < argc; i++) {
    if (g_str_equal (argv[i], "--"))
      break;
    if (g_str_equal (argv[i], "--config") && i + 1 < argc)
      path = argv[++i];
    else if (g_str_has_prefix (argv[i], "--config="))
      path = argv[i] + strlen ("--config=");
  }
  if (path_out)
    *path_out = g_strdup (path);
  if (!path)
    return TRUE;
  return twoflow_config_load (entries, path, error);
}

void
twoflow_config_print_version (const gchar * program)
{
  gchar *gst = gst_version_string ();

  g_print ("%s %s (%s)\n", program, PACKAGE_VERSION, gst);
  g_free (gst);
}

gint
twoflow_config_parse_command_line (const GOptionEntry * entries,
    const gchar * program, const gchar * summary, const gboolean * version,
    gint * argc, gchar *** argv)
{
  GOptionContext *ctx;
  GError *err = NULL;

  if (!twoflow_config_load_from_args (entries, *argc, *argv, NULL, &err)) {
    g_printerr ("%s\n", err->message);
    g_error_free (err);
    return 2;
  }
  ctx = g_option_context_new (summary);
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, argc, argv, &err)) {
    g_printerr ("%s\n", err->message);
    g_error_free (err);
    g_option_context_free (ctx);
    return 2;
  }
  g_option_context_free (ctx);
  if (*version) {
    twoflow_config_print_version (program);
    return 0;
  }
  return -1;
}

gboolean
twoflow_config_check_elements (const gchar * program,
    const gchar * const *factories)
{
  GString *missing = g_string_new (NULL);
  gboolean ok;

  for (; *factories; factories++) {
    GstElementFactory *f = gst_element_factory_find (*factories);

    if (f)
      gst_object_unref (f);
    else
      g_string_append_printf (missing, "%s%s", missing->len ? ", " : "",
          *factories);
  }
  ok = missing->len == 0;
  if (!ok)
    g_printerr ("%s: missing GStreamer elements: %s (are the twoflow plugins "
        "on GST_PLUGIN_PATH, and the Debian packages of scripts/"
        "install-deps.sh installed?)\n", program, missing->str);
  g_string_free (missing, TRUE);
  return ok;
}
