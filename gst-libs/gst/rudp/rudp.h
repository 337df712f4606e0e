/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — rUDP: rate-controlled RTP/UDP with receiver-driven rate levels.
 * Sans-IO core: leaky bucket, shared-timer scheduler, rate levels and the
 * receiver algorithm, the sender side of the levels, RTCP feedback codec. */
#ifndef __GST_RUDP_H__
#define __GST_RUDP_H__

#include <gst/rudp/rudpbucket.h>
#include <gst/rudp/rudpscheduler.h>
#include <gst/rudp/rudplevels.h>
#include <gst/rudp/rudpreceiver.h>
#include <gst/rudp/rudpfeedback.h>
#include <gst/rudp/rudpsender.h>

#endif
