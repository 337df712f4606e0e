/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — property plumbing the elements share (not installed): the
 * deprecated aliases that keep a renamed property's old name working for
 * one release (docs/conventions.md, "Names and units"). */
#ifndef __TWOFLOW_PROPS_H__
#define __TWOFLOW_PROPS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* Installs @old_name as a deprecated alias of the already installed
 * property @new_name of @klass: the same type, range, default and flags
 * plus G_PARAM_DEPRECATED, blurb "Deprecated: use @new_name", and the same
 * @prop_id, so the class's set/get_property read and write the one value
 * without a case of their own. GLib warns on its use only with
 * G_ENABLE_DIAGNOSTIC=1. */
void twoflow_property_install_alias (GObjectClass * klass, guint prop_id,
    const gchar * old_name, const gchar * new_name);

/* A time in seconds (a deprecated double property) as the ns of its
 * GstClockTime replacement, rounded to the nearest ns. */
static inline guint64
twoflow_seconds_to_ns (gdouble seconds)
{
  return seconds > 0 ? (guint64) (seconds * GST_SECOND + 0.5) : 0;
}

G_END_DECLS

#endif /* __TWOFLOW_PROPS_H__ */
