/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * A frame is decodable when it arrived and no reference frame it may predict
 * from (frame numbers depends_from … frame_no-1) is missing or undecodable.
 * Frames are fed strictly in decode order, so it is enough to remember the
 * newest broken reference: any broken reference in the range implies the
 * newest one is in it too.
 *
 * Damage metrics (two-flow paper), over P and B frames, per GOP (an I frame
 * and the frames after it in decode order up to the next I frame):
 *   E_f          P/B frames affected (missing or undecodable)
 *   E_g          GOPs with at least one affected P/B frame
 *   G_max/G_avg  most / mean affected P/B frames per affected GOP
 *   G_con_*      longest run of consecutive affected P/B frames (decode
 *                order) in each affected GOP: sum, max, mean
 */
#include <string.h>

#include "twoflowdamage.h"

void
gst_twoflow_damage_init (GstTwoflowDamage * d)
{
  memset (d, 0, sizeof (*d));
  d->last_broken_ref = GST_TWOFLOW_NO_FRAME;
}

static void
close_gop (GstTwoflowDamage * d)
{
  if (d->gop_affected > 0) {
    d->affected_gops++;
    d->gop_affected_max = MAX (d->gop_affected_max, d->gop_affected);
    d->con_total += d->gop_run_max;
    d->con_max = MAX (d->con_max, d->gop_run_max);
  }
  d->gop_affected = d->gop_run = d->gop_run_max = 0;
}

static void
account (GstTwoflowDamage * d, gboolean affected)
{
  if (affected) {
    d->affected_frames++;
    d->gop_affected++;
    d->gop_run++;
    d->gop_run_max = MAX (d->gop_run_max, d->gop_run);
  } else {
    d->gop_run = 0;
  }
}

/* Returns whether the frame is decodable. */
gboolean
gst_twoflow_damage_frame (GstTwoflowDamage * d,
    const GstTwoflowFrameHeader * hdr)
{
  gboolean broken;

  d->received[hdr->picture_type & 0x3]++;
  if (hdr->picture_type == GST_TWOFLOW_PICTURE_I) {
    close_gop (d);
    return TRUE;
  }

  broken = d->last_broken_ref != GST_TWOFLOW_NO_FRAME
      && hdr->depends_from != GST_TWOFLOW_NO_FRAME
      && d->last_broken_ref >= hdr->depends_from;
  if (broken) {
    d->dropped++;
    if (hdr->flags & GST_TWOFLOW_FLAG_REFERENCE)
      d->last_broken_ref = hdr->frame_no;
  }
  account (d, broken);
  return !broken;
}

/* A frame that never arrived. Without its type it is taken for a P/B
 * reference: the safe guess, since only essential (I) frames are reliable. */
void
gst_twoflow_damage_missing (GstTwoflowDamage * d, guint32 frame_no,
    GstTwoflowPictureType type, gboolean type_known, gboolean reference)
{
  if (!type_known) {
    type = GST_TWOFLOW_PICTURE_NONE;
    reference = TRUE;
  }
  d->missing[type & 0x3]++;
  if (reference)
    d->last_broken_ref = frame_no;
  if (type == GST_TWOFLOW_PICTURE_I)
    close_gop (d);
  else
    account (d, TRUE);
}

void
gst_twoflow_damage_missing_run (GstTwoflowDamage * d, guint32 first,
    guint32 count)
{
  /* what @count calls of damage_missing with an unknown type do */
  if (count == 0)
    return;
  d->missing[GST_TWOFLOW_PICTURE_NONE] += count;
  d->last_broken_ref = first + count - 1;
  d->affected_frames += count;
  d->gop_affected += count;
  d->gop_run += count;
  d->gop_run_max = MAX (d->gop_run_max, d->gop_run);
}

void
gst_twoflow_damage_finish (GstTwoflowDamage * d)
{
  close_gop (d);
}

/* Adds the fields documented on twoflowmerge's stats property. */
void
gst_twoflow_damage_to_structure (const GstTwoflowDamage * d,
    GstStructure * s)
{
  /* the GOP still open counts as if it ended now */
  GstTwoflowDamage f = *d;

  close_gop (&f);
  gst_structure_set (s,
      "received-i", G_TYPE_UINT64, f.received[GST_TWOFLOW_PICTURE_I],
      "received-p", G_TYPE_UINT64, f.received[GST_TWOFLOW_PICTURE_P],
      "received-b", G_TYPE_UINT64, f.received[GST_TWOFLOW_PICTURE_B],
      "missing-i", G_TYPE_UINT64, f.missing[GST_TWOFLOW_PICTURE_I],
      "missing-p", G_TYPE_UINT64, f.missing[GST_TWOFLOW_PICTURE_P],
      "missing-b", G_TYPE_UINT64, f.missing[GST_TWOFLOW_PICTURE_B],
      "missing-unknown", G_TYPE_UINT64, f.missing[GST_TWOFLOW_PICTURE_NONE],
      "dropped", G_TYPE_UINT64, f.dropped,
      "E_f", G_TYPE_UINT64, f.affected_frames,
      "E_g", G_TYPE_UINT64, f.affected_gops,
      "G_max", G_TYPE_UINT64, f.gop_affected_max,
      "G_avg", G_TYPE_DOUBLE, f.affected_gops ?
      (gdouble) f.affected_frames / f.affected_gops : 0.0,
      "G_con_total", G_TYPE_UINT64, f.con_total,
      "G_con_max", G_TYPE_UINT64, f.con_max,
      "G_con_avg", G_TYPE_DOUBLE, f.affected_gops ?
      (gdouble) f.con_total / f.affected_gops : 0.0, NULL);
}
