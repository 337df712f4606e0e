/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — export macro of libgstpicturetype (as GStreamer's *-prelude.h).
 * The library is built with hidden visibility: only what is marked
 * TWOFLOW_PICTURETYPE_API is in its dynamic symbol table, for the project's
 * own plugins, programs and tests. A private sans-IO core, not an
 * application API: no stability (the public API is gstreamer-twoflow-1.0's
 * TWOFLOW_API, twoflow-prelude.h). */
#ifndef __TWOFLOW_PICTURETYPE_PRELUDE_H__
#define __TWOFLOW_PICTURETYPE_PRELUDE_H__

#include <gst/gst.h>

#ifdef BUILDING_GST_PICTURETYPE
#define TWOFLOW_PICTURETYPE_API GST_API_EXPORT
#else
#define TWOFLOW_PICTURETYPE_API GST_API_IMPORT
#endif

#endif /* __TWOFLOW_PICTURETYPE_PRELUDE_H__ */
