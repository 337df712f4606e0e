/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP: a growable ring of fixed-size elements indexed by a
 * 64-bit number (seqno, appSeq). Private to the library. */
#ifndef __GST_ERAP_RING_H__
#define __GST_ERAP_RING_H__

#include <glib.h>
#include <string.h>

typedef struct {
  guint8 *data;
  gsize elt;
  guint cap;                    /* power of two */
  guint head;
  guint len;
  guint64 base;                 /* number of element 0 */
} ErapRing;

static inline void
erap_ring_init (ErapRing * r, gsize elt, guint64 base)
{
  memset (r, 0, sizeof (*r));
  r->elt = elt;
  r->base = base;
}

static inline void
erap_ring_clear (ErapRing * r)
{
  g_free (r->data);
  r->data = NULL;
  r->cap = r->len = r->head = 0;
}

static inline gpointer
erap_ring_nth (const ErapRing * r, guint i)
{
  return r->data + (gsize) ((r->head + i) & (r->cap - 1)) * r->elt;
}

/* Element numbered @n, or NULL when outside the ring. */
static inline gpointer
erap_ring_get (const ErapRing * r, guint64 n)
{
  if (n < r->base || n - r->base >= r->len)
    return NULL;
  return erap_ring_nth (r, (guint) (n - r->base));
}

static inline guint64
erap_ring_end (const ErapRing * r)
{
  return r->base + r->len;
}

/* Appends a zeroed element numbered erap_ring_end(). */
static inline gpointer
erap_ring_push (ErapRing * r)
{
  gpointer p;

  if (r->len == r->cap) {
    guint ncap = r->cap ? r->cap * 2 : 64;
    guint8 *nd = g_malloc (ncap * r->elt);
    guint i;

    for (i = 0; i < r->len; i++)
      memcpy (nd + (gsize) i * r->elt, erap_ring_nth (r, i), r->elt);
    g_free (r->data);
    r->data = nd;
    r->cap = ncap;
    r->head = 0;
  }
  p = erap_ring_nth (r, r->len);
  memset (p, 0, r->elt);
  r->len++;
  return p;
}

static inline void
erap_ring_pop (ErapRing * r)
{
  g_assert (r->len > 0);
  r->head = (r->head + 1) & (r->cap - 1);
  r->len--;
  r->base++;
}

#endif
