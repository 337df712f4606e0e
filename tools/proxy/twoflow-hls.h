/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-proxy's HLS writer: mpegtsmux ! multifilesink, cut at the video's
 * key frames once a segment holds the target duration, with a playlist that
 * lists the segment being written. hlssink2 (splitmuxsink) holds each GOP
 * until the next key frame before writing it and publishes the playlist only
 * once a segment is closed, one key frame later: with 2 s GOPs the first
 * segment was listed ~4 s after the merge's first frame (HLS started in
 * ~5 s). Here every buffer is written as it is muxed, the playlist names
 * the open segment at once and the HTTP side streams that segment as it
 * grows (chunked), so a player has the first frames in well under 2 s. */
#ifndef TWOFLOW_HLS_H
#define TWOFLOW_HLS_H

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct _TwoflowHls TwoflowHls;

/* @mux: the mpegtsmux (its video input linked), @files: a multifilesink
 * (added to the mux's bin and linked here); segments and index.m3u8 go
 * into @dir. NULL + @error when the mux has no video input. */
TwoflowHls *twoflow_hls_new (const gchar * dir, GstClockTime target,
    GstElement * mux, GstElement * files, GError ** error);

/* TRUE while @name (a file of the directory) is the segment being written:
 * the HTTP side streams it as it grows instead of serving a short file */
gboolean twoflow_hls_growing (TwoflowHls * h, const gchar * name);

/* the stream ended (EOS, all written): the last segment is closed and
 * the playlist gets EXT-X-ENDLIST */
void twoflow_hls_finish (TwoflowHls * h);

void twoflow_hls_free (TwoflowHls * h);

G_END_DECLS
#endif
