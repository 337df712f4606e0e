/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — ERAP: reliable, rate-based, TCP-friendly transport over UDP.
 * Sans-IO core: packet codec, sender, receiver, congestion control laws. */
#ifndef __GST_ERAP_H__
#define __GST_ERAP_H__

#include <gst/erap/erappacket.h>
#include <gst/erap/erapcc.h>
#include <gst/erap/eraplibra.h>
#include <gst/erap/erapsender.h>
#include <gst/erap/erapreceiver.h>
#include <gst/erap/erapcrypto.h>

#endif
