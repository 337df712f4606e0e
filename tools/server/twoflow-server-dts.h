/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — decode timestamps for video a container gives only
 * presentation timestamps (Matroska, WebM, FLV with B frames)
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_DTS_H__
#define __TWOFLOW_SERVER_DTS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct _DtsState DtsState;

DtsState *dts_state_new (void);
void dts_state_free (DtsState * d);
GstClockTime dts_state_shift (DtsState * d);
GstPadProbeReturn dts_probe (GstPad * pad, GstPadProbeInfo * info,
    gpointer user_data);
void twoflow_server_dts_init (void);

G_END_DECLS
#endif
