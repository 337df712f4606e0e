/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — the parser H.265 and AV1 video goes through between the
 * demuxer and twoflowsplit, and AV1's codec_data made an av1C record
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_PARSE_H__
#define __TWOFLOW_SERVER_PARSE_H__

#include <gst/gst.h>

G_BEGIN_DECLS

GstElement *video_parse_chain (GstElement * queue, const GstStructure * st);
GstBuffer *av1c_from_codec_data (GstBuffer * cd);
void twoflow_server_parse_init (void);

G_END_DECLS
#endif
