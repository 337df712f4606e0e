/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP congestion control laws: rap here, libra in eraplibra.c. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>
#include "erapcc.h"
#include "eraplibra.h"

/* RAP (Rejaie, Handley, Estrin 1999): additive increase of one packet per
 * RTT, applied once per SRTT; multiplicative decrease of the rate by beta. */
static void
rap_tick (GstErapCC * cc, const GstErapCCInfo * info)
{
  gdouble c = info->srtt;

  if (!info->rate_used || c <= 0)
    return;
  gst_erap_cc_set_ipg (cc, cc->ipg * c / (cc->ipg + c));
}

static void
rap_on_loss (GstErapCC * cc, const GstErapCCInfo * info)
{
  gst_erap_cc_set_ipg (cc, cc->ipg / GST_ERAP_RAP_BETA);
}

const GstErapCongestionOps gst_erap_cc_rap = {
  .name = "rap",
  .tick = rap_tick,
  .on_loss = rap_on_loss,
};

/* The laws by name: rap (also for NULL) and libra. */
const GstErapCongestionOps *
gst_erap_cc_find (const gchar * name)
{
  if (name == NULL || strcmp (name, gst_erap_cc_rap.name) == 0)
    return &gst_erap_cc_rap;
  if (strcmp (name, gst_erap_cc_libra.name) == 0)
    return &gst_erap_cc_libra;
  return NULL;
}

GstErapCC *
gst_erap_cc_new (const GstErapCongestionOps * ops, gdouble ipg,
    gdouble min_ipg, gdouble max_ipg)
{
  GstErapCC *cc = g_new0 (GstErapCC, 1);

  cc->ops = ops ? ops : &gst_erap_cc_rap;
  cc->min_ipg = min_ipg;
  cc->max_ipg = max_ipg;
  if (cc->ops->priv_size)
    cc->priv = g_malloc0 (cc->ops->priv_size);
  gst_erap_cc_set_ipg (cc, ipg);
  if (cc->ops->init)
    cc->ops->init (cc);
  return cc;
}

void
gst_erap_cc_free (GstErapCC * cc)
{
  if (!cc)
    return;
  if (cc->ops->release)
    cc->ops->release (cc);
  g_free (cc->priv);
  g_free (cc);
}

void
gst_erap_cc_set_ipg (GstErapCC * cc, gdouble ipg)
{
  if (cc->max_ipg > 0 && ipg > cc->max_ipg)
    ipg = cc->max_ipg;
  if (ipg < cc->min_ipg)
    ipg = cc->min_ipg;
  /* never a zero gap: 1 ns is 1 packet per ns, far above any link */
  if (ipg < 1e-9)
    ipg = 1e-9;
  cc->ipg = ipg;
}

void
gst_erap_cc_set_window (GstErapCC * cc, gdouble w, gdouble t)
{
  if (w <= 0 || t <= 0)
    return;
  gst_erap_cc_set_ipg (cc, t / w);
}
