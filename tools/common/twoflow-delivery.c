/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — the delivery accounting (twoflow-delivery.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "twoflow-delivery.h"

/**
 * gst_twoflow_delivery_judge:
 * @c: what the session's elements and the sender counted
 * @d: (out): what was lost, and why
 *
 * Frames lost are those the source has and the output lacks (or the
 * merge saw missing, if more). Packets lost are the receiver's sequence
 * gaps, or, when the sender's count is known, sent − received if more
 * (the tail after the last packet received is in no gap); the network
 * lost those less the datagrams the receiver's kernel dropped. A lost
 * packet takes at most one record with it (a record starts a packet of
 * its own), so of the frames that never arrived, the network's losses
 * and the transcoder's drops explain at most that many; frames dropped
 * for a missing reference count as explained when some of those are.
 * The packets the playout gave up on count as lost too when more (a
 * resend that arrived twice makes up for a packet that never came in
 * the receiver's count). The rest, and any missing audio record (the
 * audio is reliable), are unexplained.
 */
void
gst_twoflow_delivery_judge (const GstTwoflowDeliveryCounts * c,
    GstTwoflowDelivery * d)
{
  gint64 direct, explained, late, playout;
  gboolean receiver_dropped = c->kernel_drops + c->other_kernel_drops > 0;

  d->lost_frames = MAX (MAX (c->frames - c->output_frames, 0),
      c->missing_frames);
  d->packets_lost = c->packets_lost;
  if (c->packets_sent >= 0 && c->packets_sent - c->packets_received >
      d->packets_lost)
    d->packets_lost = c->packets_sent - c->packets_received;
  d->network_lost_packets = MAX (d->packets_lost - c->kernel_drops, 0);
  d->audio_missing = c->audio_expected ?
      MAX (c->audio_records - c->audio_output, 0) : 0;

  /* a packet that came after its playout time (resent after a loss, or
   * queued on the path) is the network's, unless the receiver's kernel
   * dropped too: then the receiver fell behind (stopped, overloaded) and
   * its own lateness is no network cause; a second copy of a packet
   * already played is late too, and explains nothing */
  late = receiver_dropped ? 0 :
      MAX (c->late_packets - c->duplicate_packets, 0);
  playout = receiver_dropped ? 0 : c->playout_lost;
  direct = MAX (d->lost_frames - c->dependent_dropped, 0);
  explained = MIN (direct, c->transcoder_dropped
      + MAX (d->network_lost_packets + late, playout));
  if (explained > 0)
    explained = MIN (d->lost_frames, explained + c->dependent_dropped);
  d->unexplained_frames = d->lost_frames - explained + d->audio_missing;
  d->complete = d->lost_frames == 0 && d->audio_missing == 0;

  /* a local cause seen first; a session cut short (not finished) is
   * expected to lack frames */
  if (d->complete)
    d->cause = GST_TWOFLOW_DELIVERY_NONE;
  else if (d->unexplained_frames > 0 && receiver_dropped)
    d->cause = GST_TWOFLOW_DELIVERY_RECEIVER;
  else if (d->unexplained_frames > 0 && c->late_packets > 0)
    d->cause = GST_TWOFLOW_DELIVERY_LATE;
  else if (!c->finished)
    d->cause = GST_TWOFLOW_DELIVERY_UNFINISHED;
  else if (d->unexplained_frames > 0)
    d->cause = GST_TWOFLOW_DELIVERY_UNEXPLAINED;
  else if (d->network_lost_packets > 0)
    d->cause = GST_TWOFLOW_DELIVERY_NETWORK;
  else
    d->cause = GST_TWOFLOW_DELIVERY_TRANSCODER;
}

/**
 * gst_twoflow_delivery_cause_name:
 * @cause: a cause
 *
 * Returns: its name in the logs: "none", "network", "transcoder",
 * "receiver", "late", "unexplained", "unfinished"
 */
const gchar *
gst_twoflow_delivery_cause_name (GstTwoflowDeliveryCause cause)
{
  static const gchar *names[] = { "none", "network", "transcoder",
    "receiver", "late", "unexplained", "unfinished"
  };

  return (guint) cause < G_N_ELEMENTS (names) ? names[cause] : "?";
}
