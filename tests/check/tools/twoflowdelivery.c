/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow: unit tests of the delivery accounting (gst-libs/gst/twoflow/
 * twoflowdelivery.h): complete, lost to the network, dropped by the
 * transcoder, dropped by the receiver's kernel, missing without a cause,
 * the tail sent after the last packet received, missing audio, a session
 * that ended early. The counts are those of issue 23's measurements. */
#include <gst/check/gstcheck.h>
#include "twoflow-delivery.h"

static GstTwoflowDeliveryCounts
counts (gint64 frames, gint64 out)
{
  GstTwoflowDeliveryCounts c = { 0, };

  c.frames = frames;
  c.output_frames = out;
  c.packets_sent = -1;
  c.audio_records = c.audio_output = 250;
  c.audio_expected = TRUE;
  c.finished = TRUE;
  return c;
}

GST_START_TEST (test_complete)
{
  GstTwoflowDeliveryCounts c = counts (133, 133);
  GstTwoflowDelivery d;

  c.packets_sent = c.packets_received = 1211;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless (d.complete);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_NONE);
  fail_unless_equals_int64 (d.lost_frames, 0);
  fail_unless_equals_int64 (d.unexplained_frames, 0);
  fail_unless_equals_string (gst_twoflow_delivery_cause_name (d.cause),
      "none");
}

GST_END_TEST;

/* 15 % loss and a transcoder under congestion (system-measured-h264):
 * 249 of 300 missing, 161 dropped on purpose, 22 packets lost, 72
 * dependent: all explained */
GST_START_TEST (test_network_and_transcoder)
{
  GstTwoflowDeliveryCounts c = counts (300, 51);
  GstTwoflowDelivery d;

  c.missing_frames = 177;
  c.dependent_dropped = 72;
  c.transcoder_dropped = 161;
  c.packets_lost = 22;
  gst_twoflow_delivery_judge (&c, &d);
  fail_if (d.complete);
  fail_unless_equals_int64 (d.lost_frames, 249);
  fail_unless_equals_int64 (d.network_lost_packets, 22);
  fail_unless_equals_int64 (d.unexplained_frames, 0);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_NETWORK);
  /* the transcoder alone */
  c.packets_lost = 0;
  c.missing_frames = 161;
  c.dependent_dropped = 0;
  c.output_frames = 139;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.unexplained_frames, 0);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_TRANSCODER);
}

GST_END_TEST;

/* H.264 across 15 % loss with retransmission (system-measured-h264 after
 * the session rate controller): a resent packet that came after its
 * playout time is the network's too: 164 of 300 missing, 143 dropped by
 * the transcoder, 3 packets lost, 1 late, 17 dependent: all explained;
 * with the receiver's kernel dropping, lateness is the receiver's */
GST_START_TEST (test_late_retransmission)
{
  GstTwoflowDeliveryCounts c = counts (300, 136);
  GstTwoflowDelivery d;

  c.missing_frames = 147;
  c.dependent_dropped = 17;
  c.transcoder_dropped = 143;
  c.packets_lost = 3;
  c.late_packets = 1;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.lost_frames, 164);
  fail_unless_equals_int64 (d.unexplained_frames, 0);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_NETWORK);
  c.kernel_drops = 1;
  c.packets_lost = 4;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.unexplained_frames, 1);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_RECEIVER);
}

GST_END_TEST;

/* H.264 across 15 % loss with retransmission (system-measured-h264, a CI
 * run): 86 of 300 missing, 38 dropped by the transcoder, 44 dependent;
 * the receiver counted every packet sent (296, a resend answered twice
 * among them), 3 came late, and the jitterbuffer gave up on 5: the
 * 4 frames lost directly are the network's, not 1 unexplained */
GST_START_TEST (test_playout_lost)
{
  GstTwoflowDeliveryCounts c = counts (300, 214);
  GstTwoflowDelivery d;

  c.missing_frames = 42;
  c.dependent_dropped = 44;
  c.transcoder_dropped = 38;
  c.packets_sent = c.packets_received = 296;
  c.late_packets = 3;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.unexplained_frames, 1);
  c.playout_lost = 5;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.lost_frames, 86);
  fail_unless_equals_int64 (d.unexplained_frames, 0);
  /* late copies of packets played explain nothing: 3 late, 2 of them
   * second copies (the playout's 5 still do) */
  c.playout_lost = 0;
  c.duplicate_packets = 2;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.unexplained_frames, 3);
  c.playout_lost = 5;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.unexplained_frames, 0);
  /* the receiver's kernel dropping: the playout's losses are its own */
  c.kernel_drops = 2;
  c.packets_lost = 2;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.unexplained_frames, 4);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_RECEIVER);
}

GST_END_TEST;

/* the 30 s 1080p fetch before the fix: 1031 packets lost, all of them
 * dropped by the receiver's kernel: 304 frames missing without a network
 * cause */
GST_START_TEST (test_receiver_drops)
{
  GstTwoflowDeliveryCounts c = counts (750, 446);
  GstTwoflowDelivery d;

  c.missing_frames = 304;
  c.packets_lost = 1031;
  c.kernel_drops = 1031;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.network_lost_packets, 0);
  fail_unless_equals_int64 (d.unexplained_frames, 304);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_RECEIVER);
  /* dependents of kernel-dropped frames are not the network's either */
  c.missing_frames = 27;
  c.dependent_dropped = 29;
  c.output_frames = 694;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.lost_frames, 56);
  fail_unless_equals_int64 (d.unexplained_frames, 56);
  /* some network loss besides: only as many frames as lost packets */
  c.packets_lost = 1031 + 10;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.network_lost_packets, 10);
  fail_unless_equals_int64 (d.unexplained_frames, 56 - 10 - 29);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_RECEIVER);
}

GST_END_TEST;

/* the 5.3 s clip before the fix: 2 of 133 output, nothing lost on any
 * count (the packets sat unread in the socket): unexplained; with the
 * sender's count the tail is lost packets, then the network's */
GST_START_TEST (test_unexplained_and_tail)
{
  GstTwoflowDeliveryCounts c = counts (133, 2);
  GstTwoflowDelivery d;

  c.packets_received = 25;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.lost_frames, 131);
  fail_unless_equals_int64 (d.unexplained_frames, 131);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_UNEXPLAINED);
  c.late_packets = 3;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_LATE);
  c.late_packets = 0;
  c.packets_sent = 1369;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int64 (d.packets_lost, 1344);
  fail_unless_equals_int64 (d.unexplained_frames, 0);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_NETWORK);
}

GST_END_TEST;

/* audio is reliable: a missing record is never the network's; without
 * audio in the output it is not counted; a session cut short says so */
GST_START_TEST (test_audio_and_unfinished)
{
  GstTwoflowDeliveryCounts c = counts (133, 133);
  GstTwoflowDelivery d;

  c.audio_output = 240;
  c.packets_lost = 100;
  gst_twoflow_delivery_judge (&c, &d);
  fail_if (d.complete);
  fail_unless_equals_int64 (d.audio_missing, 10);
  fail_unless_equals_int64 (d.unexplained_frames, 10);
  c.audio_expected = FALSE;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless (d.complete);
  c.output_frames = 60;
  c.finished = FALSE;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_UNFINISHED);
  fail_unless_equals_string (gst_twoflow_delivery_cause_name (d.cause),
      "unfinished");
  /* kernel drops explain it better than the early end */
  c.packets_lost = c.kernel_drops = 5;
  gst_twoflow_delivery_judge (&c, &d);
  fail_unless_equals_int (d.cause, GST_TWOFLOW_DELIVERY_RECEIVER);
}

GST_END_TEST;

static Suite *
twoflowdelivery_suite (void)
{
  Suite *s = suite_create ("twoflowdelivery");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_complete);
  tcase_add_test (tc, test_network_and_transcoder);
  tcase_add_test (tc, test_late_retransmission);
  tcase_add_test (tc, test_playout_lost);
  tcase_add_test (tc, test_receiver_drops);
  tcase_add_test (tc, test_unexplained_and_tail);
  tcase_add_test (tc, test_audio_and_unfinished);
  return s;
}

GST_CHECK_MAIN (twoflowdelivery);
