/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — runs a libFuzzer target over files (a corpus, regressions)
 * without libFuzzer, so they run in the normal test suite. Arguments are
 * files or directories. */
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <glib.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static guint
run_path (const gchar * path)
{
  gchar *contents;
  gsize len;
  GError *err = NULL;
  guint n = 0;

  if (g_file_test (path, G_FILE_TEST_IS_DIR)) {
    GDir *dir = g_dir_open (path, 0, NULL);
    const gchar *name;

    while (dir && (name = g_dir_read_name (dir))) {
      gchar *p = g_build_filename (path, name, NULL);
      n += run_path (p);
      g_free (p);
    }
    if (dir)
      g_dir_close (dir);
    return n;
  }
  if (!g_file_get_contents (path, &contents, &len, &err)) {
    g_printerr ("%s\n", err->message);
    g_error_free (err);
    return 0;
  }
  LLVMFuzzerTestOneInput ((const uint8_t *) contents, len);
  g_free (contents);
  return 1;
}

int
main (int argc, char **argv)
{
  guint n = 0;
  int i;

  for (i = 1; i < argc; i++)
    n += run_path (argv[i]);
  /* plus some deterministic random inputs */
  {
    GRand *r = g_rand_new_with_seed (1);
    guint8 buf[512];
    guint k, j;

    for (k = 0; k < 2000; k++) {
      guint len = g_rand_int_range (r, 0, sizeof (buf));
      for (j = 0; j < len; j++)
        buf[j] = g_rand_int (r);
      LLVMFuzzerTestOneInput (buf, len);
    }
    g_rand_free (r);
  }
  printf ("%u corpus inputs + 2000 random inputs OK\n", n);
  return n > 0 ? 0 : 1;
}
