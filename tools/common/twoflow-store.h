/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* On-disk stores of the proxy: the prefix store's size limit with LRU
 * eviction (a file's mtime is its last use), removing a cached tree. */
#ifndef TWOFLOW_STORE_H
#define TWOFLOW_STORE_H

#include <glib.h>

G_BEGIN_DECLS

/* Marks @path used now (its mtime). */
void twoflow_store_touch (const gchar * path);

/* Removes the least recently used files of @dir whose names end in
 * @suffix until they hold at most @max_bytes (0: no limit); @keep (may be
 * NULL) is never removed. Returns how many files were removed; @total_out:
 * the bytes left. */
guint twoflow_store_evict (const gchar * dir, const gchar * suffix,
    guint64 max_bytes, const gchar * keep, guint64 * total_out);

/* rm -rf @dir (one level of files and the directory) */
void twoflow_store_remove_tree (const gchar * dir);

G_END_DECLS
#endif
