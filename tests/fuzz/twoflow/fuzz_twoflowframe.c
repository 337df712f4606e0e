/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — fuzz target: the twoflow frame parser, fed the input as a byte
 * stream cut at the places the first byte chooses. It must never crash,
 * never return a record larger than what it was given, and once it reports
 * an error it must keep reporting one (the format has no resync). */
#include <stdint.h>
#include <stddef.h>
#include <gst/gst.h>
#include <gst/twoflow/twoflowframe.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static gboolean inited = FALSE;
  GstTwoflowParser *p;
  GstTwoflowFrameHeader hdr;
  GstTwoflowParseResult res = GST_TWOFLOW_PARSE_NEED_MORE;
  gsize off = 1, chunk, taken = 0;

  if (!inited) {
    gst_init (NULL, NULL);
    inited = TRUE;
  }
  if (size < 1)
    return 0;

  /* the bare header parser on the input as it is */
  (void) gst_twoflow_frame_header_parse (data + 1, size - 1, &hdr);

  p = gst_twoflow_parser_new ();
  chunk = data[0] + 1;
  while (off < size) {
    gsize len = MIN (chunk, size - off);
    GstBuffer *payload;

    gst_twoflow_parser_push (p, gst_buffer_new_memdup (data + off, len));
    off += len;
    while ((res = gst_twoflow_parser_pop (p, &hdr, &payload)) ==
        GST_TWOFLOW_PARSE_OK) {
      g_assert (gst_buffer_get_size (payload) == hdr.payload_size);
      taken += GST_TWOFLOW_HEADER_SIZE + hdr.payload_size;
      gst_buffer_unref (payload);
    }
    if (res != GST_TWOFLOW_PARSE_NEED_MORE)
      break;
  }
  g_assert (taken <= size - 1);
  if (res != GST_TWOFLOW_PARSE_NEED_MORE) {
    GstBuffer *payload = NULL;

    g_assert (gst_twoflow_parser_pop (p, &hdr, &payload) == res);
    g_assert (payload == NULL);
  }
  gst_twoflow_parser_free (p);
  return 0;
}
