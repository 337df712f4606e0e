/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * Decodability and the two-flow paper's damage metrics of a frame sequence
 * seen in decode order. Sans-IO: twoflowmerge feeds it, tests drive it.
 */
#ifndef __GST_TWOFLOW_DAMAGE_H__
#define __GST_TWOFLOW_DAMAGE_H__

#include <gst/gst.h>
#include <gst/twoflow/twoflow-prelude.h>
#include "twoflowframe.h"

G_BEGIN_DECLS

typedef struct {
  /* frames that arrived / never arrived, per GstTwoflowPictureType
   * (index 0 of missing: type unknown) */
  guint64 received[4];
  guint64 missing[4];
  guint64 dropped;              /* arrived but undecodable (broken reference) */

  /* E_f, E_g, G_* of the two-flow paper, over P/B frames */
  guint64 affected_frames;      /* E_f */
  guint64 affected_gops;        /* E_g */
  guint64 gop_affected_max;     /* G_max */
  guint64 con_total;            /* G_con_total */
  guint64 con_max;              /* G_con_max */

  /* running state */
  guint32 last_broken_ref;      /* newest broken reference, or NO_FRAME */
  guint64 gop_affected;
  guint64 gop_run, gop_run_max;
} GstTwoflowDamage;

TWOFLOW_PRIVATE_API
void gst_twoflow_damage_init (GstTwoflowDamage * d);
TWOFLOW_PRIVATE_API
gboolean gst_twoflow_damage_frame (GstTwoflowDamage * d,
    const GstTwoflowFrameHeader * hdr);
TWOFLOW_PRIVATE_API
void gst_twoflow_damage_missing (GstTwoflowDamage * d, guint32 frame_no,
    GstTwoflowPictureType type, gboolean type_known, gboolean reference);
/* @count frames from @first on missing, their types unknown: the same as
 * @count calls of gst_twoflow_damage_missing, in O(1). */
void gst_twoflow_damage_missing_run (GstTwoflowDamage * d, guint32 first,
    guint32 count);
TWOFLOW_PRIVATE_API
void gst_twoflow_damage_finish (GstTwoflowDamage * d);
TWOFLOW_PRIVATE_API
void gst_twoflow_damage_to_structure (const GstTwoflowDamage * d,
    GstStructure * s);

G_END_DECLS

#endif
