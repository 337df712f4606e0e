/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "twoflow-store.h"

#include <glib/gstdio.h>
#include <sys/stat.h>
#include <utime.h>

void
twoflow_store_touch (const gchar * path)
{
  g_utime (path, NULL);
}

typedef struct
{
  gchar *path;
  guint64 size;
  gint64 mtime_ns;
} Entry;

static gint
by_age (gconstpointer a, gconstpointer b)
{
  const Entry *x = a, *y = b;
  return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

guint
twoflow_store_evict (const gchar * dir, const gchar * suffix,
    guint64 max_bytes, const gchar * keep, guint64 * total_out)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  GArray *all = g_array_new (FALSE, FALSE, sizeof (Entry));
  guint64 total = 0;
  guint removed = 0, i;
  const gchar *n;

  while (d && (n = g_dir_read_name (d))) {
    Entry e;
    struct stat st;

    if (!g_str_has_suffix (n, suffix))
      continue;
    e.path = g_build_filename (dir, n, NULL);
    if (stat (e.path, &st) != 0 || !S_ISREG (st.st_mode)) {
      g_free (e.path);
      continue;
    }
    e.size = st.st_size;
    e.mtime_ns = (gint64) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    total += e.size;
    g_array_append_val (all, e);
  }
  if (d)
    g_dir_close (d);
  g_array_sort (all, by_age);
  for (i = 0; i < all->len; i++) {
    Entry *e = &g_array_index (all, Entry, i);
    if (max_bytes > 0 && total > max_bytes && g_strcmp0 (e->path, keep) != 0
        && g_unlink (e->path) == 0) {
      g_print ("prefix store: evicted %s (%" G_GUINT64_FORMAT " bytes)\n",
          e->path, e->size);
      total -= e->size;
      removed++;
    }
    g_free (e->path);
  }
  g_array_free (all, TRUE);
  if (total_out)
    *total_out = total;
  return removed;
}

void
twoflow_store_remove_tree (const gchar * dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  const gchar *n;

  while (d && (n = g_dir_read_name (d))) {
    gchar *p = g_build_filename (dir, n, NULL);
    g_unlink (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  g_rmdir (dir);
}
