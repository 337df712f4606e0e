/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — export macros of libgsttwoflow, as GStreamer's *-prelude.h.
 * The library is built with hidden visibility: only what is marked here is
 * in its dynamic symbol table.
 *
 * TWOFLOW_API: the public API applications use, the frame format
 * (twoflowframe.h) and the congestion event (networkcongestion.h):
 * installed headers, in the GstTwoflow-1.0 typelib, stable.
 * TWOFLOW_PRIVATE_API: the sans-IO cores the project's own plugins,
 * programs and tests use across libraries (merger, sequencer, hello, …):
 * exported so they link, headers not installed, no stability. */
#ifndef __TWOFLOW_PRELUDE_H__
#define __TWOFLOW_PRELUDE_H__

#include <gst/gst.h>

#ifdef BUILDING_GST_TWOFLOW
#define TWOFLOW_API GST_API_EXPORT
#else
#define TWOFLOW_API GST_API_IMPORT
#endif
#define TWOFLOW_PRIVATE_API TWOFLOW_API

#endif /* __TWOFLOW_PRELUDE_H__ */
