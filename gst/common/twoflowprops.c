/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "twoflowprops.h"

void
twoflow_property_install_alias (GObjectClass * klass, guint prop_id,
    const gchar * old_name, const gchar * new_name)
{
  GParamSpec *target = g_object_class_find_property (klass, new_name);
  GParamSpec *alias = NULL;
  GParamFlags flags;
  gchar *blurb;

  g_return_if_fail (target != NULL);
  /* the strings are copied: only the target's are static */
  flags = (target->flags & ~G_PARAM_STATIC_STRINGS) | G_PARAM_DEPRECATED;
  blurb = g_strdup_printf ("Deprecated: use %s", new_name);
  if (G_IS_PARAM_SPEC_UINT64 (target)) {
    GParamSpecUInt64 *p = G_PARAM_SPEC_UINT64 (target);

    alias = g_param_spec_uint64 (old_name, target->_nick, blurb, p->minimum,
        p->maximum, p->default_value, flags);
  } else if (G_IS_PARAM_SPEC_UINT (target)) {
    GParamSpecUInt *p = G_PARAM_SPEC_UINT (target);

    alias = g_param_spec_uint (old_name, target->_nick, blurb, p->minimum,
        p->maximum, p->default_value, flags);
  } else if (G_IS_PARAM_SPEC_INT (target)) {
    GParamSpecInt *p = G_PARAM_SPEC_INT (target);

    alias = g_param_spec_int (old_name, target->_nick, blurb, p->minimum,
        p->maximum, p->default_value, flags);
  } else if (G_IS_PARAM_SPEC_DOUBLE (target)) {
    GParamSpecDouble *p = G_PARAM_SPEC_DOUBLE (target);

    alias = g_param_spec_double (old_name, target->_nick, blurb, p->minimum,
        p->maximum, p->default_value, flags);
  } else if (G_IS_PARAM_SPEC_BOOLEAN (target)) {
    alias = g_param_spec_boolean (old_name, target->_nick, blurb,
        G_PARAM_SPEC_BOOLEAN (target)->default_value, flags);
  } else if (G_IS_PARAM_SPEC_STRING (target)) {
    alias = g_param_spec_string (old_name, target->_nick, blurb,
        G_PARAM_SPEC_STRING (target)->default_value, flags);
  }
  g_free (blurb);
  g_return_if_fail (alias != NULL);
  g_object_class_install_property (klass, prop_id, alias);
}
