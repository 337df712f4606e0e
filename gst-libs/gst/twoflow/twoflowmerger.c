/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow
 * The two-flow merge. Output starts at the first essential frame. Frames
 * go out in frame_no order: essential frames are reliable, so the merge
 * waits for them; an enhanced frame is missing once both flows have moved
 * past its number (or ended), or, with a latency, that long after its turn
 * came while the essential flow had already moved past it. A missing
 * frame's type comes from the history of a later record (or the end
 * record). The audio track (essential flow only) goes out in its order,
 * each buffer once its PTS is not after the time (DTS, else PTS) of the
 * next frame to go out, or once the video has ended.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "twoflowmerger.h"
#include "twoflowdamage.h"

#define DEFAULT_MAX_ESSENTIAL_BYTES  (256 * 1024 * 1024)
#define DEFAULT_MAX_RECORDS          (1 << 18)

typedef struct
{
  GstTwoflowFrameHeader hdr;
  GstBuffer *payload;
} Record;

/* One flow's waiting frames, ordered by frame_no: a balanced tree, so a
 * flow delivered in any order costs O(log n) per record. */
typedef struct
{
  const gchar *name;
  GSequence *frames;            /* Record, increasing frame_no */
  gsize queued_bytes;           /* payload + GST_TWOFLOW_MERGER_RECORD_OVERHEAD
                                 * per record */
  guint32 last_frame_no;        /* GST_TWOFLOW_NO_FRAME before the first */
  gboolean eos;
  gboolean end;                 /* its end record came (essential flow) */
} Input;

struct _GstTwoflowMerger
{
  GstTwoflowMergerConfig config;
  Input essential, enhanced;

  gchar *caps;
  gchar *audio_caps;
  gboolean audio_announced;     /* AUDIO_CAPS was polled */
  gboolean video_out;           /* a frame was polled */
  GstClockTime hold_start;      /* the first frame held since, NONE: not */

  gboolean started;
  guint32 next_frame_no;
  guint32 frame_count;          /* from an end record, else NO_FRAME */
  guint64 end_history;
  guint32 wait_frame;           /* frame whose latency wait runs, or NO_FRAME */
  GstClockTime wait_start;
  gboolean discont;
  GstClockTime segment_start;
  gboolean done;                /* EOS was polled */

  GQueue audio;                 /* Record, consecutive numbers */
  gsize audio_queued_bytes;
  guint32 audio_next_in;        /* next audio number taken, NO_FRAME before */
  guint32 audio_next_out;       /* next audio number output, NO_FRAME before */

  GstTwoflowMergerResult error;
  gchar *error_reason;

  GstTwoflowDamage damage;
  guint64 duplicates;
  guint64 prefix_frames;
  guint64 output_frames;
  guint64 audio_buffers;
  guint64 audio_duplicates;
};

void
gst_twoflow_merger_config_init (GstTwoflowMergerConfig * config)
{
  config->max_essential_bytes = DEFAULT_MAX_ESSENTIAL_BYTES;
  config->max_records = DEFAULT_MAX_RECORDS;
  config->latency = 0;
  config->drop_dependent = TRUE;
  config->first_hold = 0;
}

static void
record_free (Record * r)
{
  gst_buffer_unref (r->payload);
  g_free (r);
}

static void
record_free_func (gpointer r, gpointer unused)
{
  record_free (r);
}

/* What a record holds: its payload and its bookkeeping, so that empty
 * records count too. */
static gsize
record_bytes (GstBuffer * payload)
{
  return gst_buffer_get_size (payload) + GST_TWOFLOW_MERGER_RECORD_OVERHEAD;
}

static void
input_init (Input * in, const gchar * name)
{
  in->name = name;
  if (in->frames == NULL)
    in->frames = g_sequence_new (NULL);  /* records are freed by hand */
  in->queued_bytes = 0;
  in->last_frame_no = GST_TWOFLOW_NO_FRAME;
  in->eos = FALSE;
  in->end = FALSE;
}

static void
input_clear (Input * in)
{
  g_sequence_foreach (in->frames, record_free_func, NULL);
  g_sequence_remove_range (g_sequence_get_begin_iter (in->frames),
      g_sequence_get_end_iter (in->frames));
  input_init (in, in->name);
}

static void
input_free (Input * in)
{
  g_sequence_foreach (in->frames, record_free_func, NULL);
  g_sequence_free (in->frames);
  in->frames = NULL;
}

static Record *
input_peek (Input * in)
{
  GSequenceIter *it = g_sequence_get_begin_iter (in->frames);

  return g_sequence_iter_is_end (it) ? NULL : g_sequence_get (it);
}

/**
 * gst_twoflow_merger_new: (skip)
 *
 * The merge core; C only (an opaque struct, not a registered type).
 */
GstTwoflowMerger *
gst_twoflow_merger_new (const GstTwoflowMergerConfig * config)
{
  GstTwoflowMerger *m = g_new0 (GstTwoflowMerger, 1);

  m->config = *config;
  input_init (&m->essential, "essential");
  input_init (&m->enhanced, "enhanced");
  m->frame_count = GST_TWOFLOW_NO_FRAME;
  m->wait_frame = GST_TWOFLOW_NO_FRAME;
  m->wait_start = GST_CLOCK_TIME_NONE;
  m->discont = TRUE;
  m->segment_start = GST_CLOCK_TIME_NONE;
  m->hold_start = GST_CLOCK_TIME_NONE;
  g_queue_init (&m->audio);
  m->audio_next_in = m->audio_next_out = GST_TWOFLOW_NO_FRAME;
  gst_twoflow_damage_init (&m->damage);
  return m;
}

void
gst_twoflow_merger_free (GstTwoflowMerger * m)
{
  if (!m)
    return;
  input_free (&m->essential);
  input_free (&m->enhanced);
  g_queue_clear_full (&m->audio, (GDestroyNotify) record_free);
  g_free (m->caps);
  g_free (m->audio_caps);
  g_free (m->error_reason);
  g_free (m);
}

void
gst_twoflow_merger_set_config (GstTwoflowMerger * m,
    const GstTwoflowMergerConfig * config)
{
  m->config = *config;
}

static GstTwoflowMergerResult
fail (GstTwoflowMerger * m, GstTwoflowMergerResult error, gchar * reason)
{
  if (m->error == GST_TWOFLOW_MERGER_OK) {
    m->error = error;
    m->error_reason = reason;
  } else {
    g_free (reason);
  }
  return error;
}

static guint32
input_head (Input * in)
{
  Record *r = input_peek (in);

  return r ? r->hdr.frame_no : GST_TWOFLOW_NO_FRAME;
}

/* Takes the first record out of the flow (the caller owns it). */
static Record *
input_pop (Input * in)
{
  GSequenceIter *it = g_sequence_get_begin_iter (in->frames);
  Record *r = g_sequence_get (it);

  g_sequence_remove (it);
  in->queued_bytes -= record_bytes (r->payload);
  return r;
}

/* Whether the flow can no longer deliver frame @n. */
static gboolean
input_passed (Input * in, guint32 n)
{
  guint32 head = input_head (in);

  return (head != GST_TWOFLOW_NO_FRAME && head > n)
      || ((in->eos || in->end) && head == GST_TWOFLOW_NO_FRAME);
}

static gint
record_cmp (gconstpointer a, gconstpointer b, gpointer data)
{
  guint32 x = ((const Record *) a)->hdr.frame_no;
  guint32 y = ((const Record *) b)->hdr.frame_no;

  return x < y ? -1 : x > y;
}

/* Puts a frame that came out of order into its place in the queue,
 * O(log n). Returns FALSE for a frame already queued. */
static gboolean
input_insert (Input * in, Record * r)
{
  if (g_sequence_lookup (in->frames, r, record_cmp, NULL))
    return FALSE;
  g_sequence_insert_sorted (in->frames, r, record_cmp, NULL);
  return TRUE;
}

static gchar *
payload_string (GstBuffer * payload)
{
  GstMapInfo map;
  gchar *str;

  gst_buffer_map (payload, &map, GST_MAP_READ);
  str = g_strndup ((const gchar *) map.data, map.size);
  gst_buffer_unmap (payload, &map);
  return str;
}

/* Whether the next frame waits only for the enhanced flow: its turn has
 * come, the essential flow has moved past it, the enhanced one has not. */
static gboolean
waiting_for_enhanced (GstTwoflowMerger * m)
{
  guint32 n = m->next_frame_no;

  return m->started && !m->done && m->config.latency > 0
      && (m->frame_count == GST_TWOFLOW_NO_FRAME || n < m->frame_count)
      && input_head (&m->essential) != n && input_head (&m->enhanced) != n
      && input_passed (&m->essential, n) && !input_passed (&m->enhanced, n);
}

/* Starts the latency wait for the next frame when it begins now. */
static void
update_wait (GstTwoflowMerger * m, GstClockTime now)
{
  if (m->wait_frame != m->next_frame_no && waiting_for_enhanced (m)) {
    m->wait_frame = m->next_frame_no;
    m->wait_start = now;
  }
}

static GstTwoflowMergerResult
take_audio (GstTwoflowMerger * m, const GstTwoflowFrameHeader * hdr,
    GstBuffer * payload)
{
  Record *r;

  if (hdr->kind == GST_TWOFLOW_RECORD_AUDIO_CAPS) {
    gchar *str;
    GstCaps *caps;

    if (m->audio_caps)
      return GST_TWOFLOW_MERGER_OK;     /* again, e.g. prefix and pad */
    str = payload_string (payload);
    caps = gst_caps_from_string (str);
    if (!caps || !gst_caps_is_fixed (caps)) {
      gst_clear_caps (&caps);
      return fail (m, GST_TWOFLOW_MERGER_INVALID,
          g_strdup_printf ("unusable audio caps record '%s'", str));
    }
    gst_caps_unref (caps);
    if (m->video_out) {
      g_free (str);
      return fail (m, GST_TWOFLOW_MERGER_INVALID,
          g_strdup ("audio caps record after the video started"));
    }
    m->audio_caps = str;
    return GST_TWOFLOW_MERGER_OK;
  }

  if (!m->audio_caps)
    return fail (m, GST_TWOFLOW_MERGER_INVALID,
        g_strdup_printf ("audio record %u before the audio caps record",
            hdr->frame_no));
  if (!GST_CLOCK_TIME_IS_VALID (hdr->pts))
    return fail (m, GST_TWOFLOW_MERGER_INVALID,
        g_strdup_printf ("audio record %u without PTS", hdr->frame_no));
  if (m->audio_next_in != GST_TWOFLOW_NO_FRAME) {
    if (hdr->frame_no < m->audio_next_in) {
      m->audio_duplicates++;
      return GST_TWOFLOW_MERGER_OK;
    }
    if (hdr->frame_no > m->audio_next_in)
      return fail (m, GST_TWOFLOW_MERGER_INVALID,
          g_strdup_printf ("audio record %u out of order (expected %u)",
              hdr->frame_no, m->audio_next_in));
  }
  m->audio_next_in = hdr->frame_no + 1;
  r = g_new (Record, 1);
  r->hdr = *hdr;
  r->payload = gst_buffer_ref (payload);
  g_queue_push_tail (&m->audio, r);
  m->audio_queued_bytes += record_bytes (payload);
  return GST_TWOFLOW_MERGER_OK;
}

static GstTwoflowMergerResult
take_record (GstTwoflowMerger * m, GstTwoflowMergerFlow flow,
    const GstTwoflowFrameHeader * hdr, GstBuffer * payload)
{
  Input *in = flow == GST_TWOFLOW_MERGER_ENHANCED ? &m->enhanced :
      &m->essential;
  Record *r;

  switch (hdr->kind) {
    case GST_TWOFLOW_RECORD_CAPS:
      if (!m->caps)
        m->caps = payload_string (payload);
      return GST_TWOFLOW_MERGER_OK;
    case GST_TWOFLOW_RECORD_END:
      m->frame_count = hdr->frame_no;
      m->end_history = hdr->history;
      /* the reliable flow is in order: nothing follows its end record */
      if (in == &m->essential)
        m->essential.end = TRUE;
      return GST_TWOFLOW_MERGER_OK;
    case GST_TWOFLOW_RECORD_AUDIO_CAPS:
    case GST_TWOFLOW_RECORD_AUDIO:
      if (in != &m->essential)
        return fail (m, GST_TWOFLOW_MERGER_INVALID,
            g_strdup_printf ("audio record %u on the %s flow (audio travels "
                "only in the essential flow)", hdr->frame_no, in->name));
      return take_audio (m, hdr, payload);
    case GST_TWOFLOW_RECORD_FRAME:
      break;
  }

  if (m->started && hdr->frame_no < m->next_frame_no) {
    /* its turn has passed (late, or before the first essential frame) */
    m->duplicates++;
    return GST_TWOFLOW_MERGER_OK;
  }
  r = g_new (Record, 1);
  r->hdr = *hdr;
  r->payload = gst_buffer_ref (payload);
  if (in->last_frame_no == GST_TWOFLOW_NO_FRAME
      || hdr->frame_no > in->last_frame_no) {
    in->last_frame_no = hdr->frame_no;
    g_sequence_append (in->frames, r);
  } else if (in == &m->essential || !input_insert (in, r)) {
    /* The essential pad may repeat what the prefix already gave; the
     * enhanced flow may repeat or reorder what the network delivered. */
    m->duplicates++;
    record_free (r);
    return GST_TWOFLOW_MERGER_OK;
  }
  in->queued_bytes += record_bytes (payload);
  if (flow == GST_TWOFLOW_MERGER_PREFIX)
    m->prefix_frames++;
  return GST_TWOFLOW_MERGER_OK;
}

GstTwoflowMergerResult
gst_twoflow_merger_handle_record (GstTwoflowMerger * m,
    GstTwoflowMergerFlow flow, const GstTwoflowFrameHeader * hdr,
    GstBuffer * payload, GstClockTime now)
{
  GstTwoflowMergerResult res;
  guint64 held;

  if (m->error) {
    gst_buffer_unref (payload);
    return m->error;
  }
  res = take_record (m, flow, hdr, payload);
  gst_buffer_unref (payload);
  if (res != GST_TWOFLOW_MERGER_OK)
    return res;
  held = m->essential.queued_bytes + m->audio_queued_bytes;
  if (flow == GST_TWOFLOW_MERGER_ESSENTIAL
      && held > m->config.max_essential_bytes)
    return fail (m, GST_TWOFLOW_MERGER_FULL,
        g_strdup_printf ("The essential flow is too far ahead: %"
            G_GUINT64_FORMAT " bytes held, max-essential-bytes is %"
            G_GUINT64_FORMAT, held, m->config.max_essential_bytes));
  if (m->config.max_records > 0
      && gst_twoflow_merger_queued_records (m) > m->config.max_records)
    return fail (m, GST_TWOFLOW_MERGER_FULL,
        g_strdup_printf ("Too many records waiting: %u (essential %d, "
            "enhanced %d, audio %u), max-records is %u",
            gst_twoflow_merger_queued_records (m),
            g_sequence_get_length (m->essential.frames),
            g_sequence_get_length (m->enhanced.frames), m->audio.length,
            m->config.max_records));
  update_wait (m, now);
  return GST_TWOFLOW_MERGER_OK;
}

void
gst_twoflow_merger_handle_eos (GstTwoflowMerger * m,
    GstTwoflowMergerFlow flow, GstClockTime now)
{
  if (flow == GST_TWOFLOW_MERGER_PREFIX)
    return;
  (flow == GST_TWOFLOW_MERGER_ENHANCED ? &m->enhanced : &m->essential)->eos =
      TRUE;
  update_wait (m, now);
}

void
gst_twoflow_merger_flush (GstTwoflowMerger * m, GstTwoflowMergerFlow flow)
{
  if (flow == GST_TWOFLOW_MERGER_ENHANCED) {
    input_clear (&m->enhanced);
    return;
  }
  input_clear (&m->essential);
  g_queue_clear_full (&m->audio, (GDestroyNotify) record_free);
  m->audio_queued_bytes = 0;
  m->audio_next_in = m->audio_next_out;
}

void
gst_twoflow_merger_restart_wait (GstTwoflowMerger * m, GstClockTime now)
{
  if (m->wait_frame != GST_TWOFLOW_NO_FRAME)
    m->wait_start = now;
}

/* The type of missing frame @n from the history of a later record. */
static gboolean
type_of (GstTwoflowMerger * m, guint32 n, GstTwoflowPictureType * type,
    gboolean * reference)
{
  Input *inputs[] = { &m->enhanced, &m->essential };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (inputs); i++) {
    Record *r = input_peek (inputs[i]);

    if (r && r->hdr.frame_no > n
        && gst_twoflow_history_get (r->hdr.history, r->hdr.frame_no - n, type,
            reference))
      return TRUE;
  }
  if (m->frame_count != GST_TWOFLOW_NO_FRAME && m->frame_count > n)
    return gst_twoflow_history_get (m->end_history, m->frame_count - n, type,
        reference);
  return FALSE;
}

/* How many missing frames from next_frame_no on lie before the history
 * window of the next record (or of the end record): their types cannot
 * become known, so they go out as one run. At least 1. */
static guint32
unknown_run (GstTwoflowMerger * m)
{
  guint32 n = m->next_frame_no;
  guint32 next = MIN (input_head (&m->essential), input_head (&m->enhanced));

  /* with a latency wait running the enhanced flow may still bring them */
  if (!input_passed (&m->enhanced, n))
    return 1;
  if (next == GST_TWOFLOW_NO_FRAME)
    next = m->frame_count;
  if (next == GST_TWOFLOW_NO_FRAME || next <= n
      || next - n <= GST_TWOFLOW_HISTORY_LEN)
    return 1;
  return next - n - GST_TWOFLOW_HISTORY_LEN;
}

/* The time a frame is ordered by against audio PTS: DTS, else PTS. */
static GstClockTime
frame_time (const GstTwoflowFrameHeader * hdr)
{
  return GST_CLOCK_TIME_IS_VALID (hdr->dts) ? hdr->dts : hdr->pts;
}

/* What happens to video frame next_frame_no: FRAME (*video is the frame,
 * still at the head of *from), MISSING, EOS or WAIT. */
static GstTwoflowMergerAction
next_video (GstTwoflowMerger * m, GstClockTime now, Record ** video,
    Input ** from)
{
  guint32 n;

  if (!m->started) {
    Record *first = input_peek (&m->essential);

    /* Decoding starts at the first essential frame. */
    if (!first)
      return m->essential.eos || m->essential.end ? GST_TWOFLOW_MERGER_EOS :
          GST_TWOFLOW_MERGER_WAIT;
    m->started = TRUE;
    m->next_frame_no = first->hdr.frame_no;
  }

  n = m->next_frame_no;
  /* enhanced frames before the first essential one, or that came from
   * both flows */
  while (input_head (&m->enhanced) < n) {
    record_free (input_pop (&m->enhanced));
    m->duplicates++;
  }
  if (m->frame_count != GST_TWOFLOW_NO_FRAME && n >= m->frame_count)
    return GST_TWOFLOW_MERGER_EOS;
  *from = input_head (&m->essential) == n ? &m->essential :
      input_head (&m->enhanced) == n ? &m->enhanced : NULL;
  if (*from) {
    *video = input_peek (*from);
    return GST_TWOFLOW_MERGER_FRAME;
  }
  if (!input_passed (&m->essential, n))
    return GST_TWOFLOW_MERGER_WAIT;     /* reliable: it will come */
  if (input_passed (&m->enhanced, n)) {
    /* Both flows ended with nothing left and no end record: done. */
    if (m->essential.eos && m->enhanced.eos
        && g_sequence_is_empty (m->essential.frames)
        && g_sequence_is_empty (m->enhanced.frames)
        && m->frame_count == GST_TWOFLOW_NO_FRAME)
      return GST_TWOFLOW_MERGER_EOS;
    return GST_TWOFLOW_MERGER_MISSING;
  }
  if (m->config.latency == 0)
    return GST_TWOFLOW_MERGER_WAIT;
  update_wait (m, now);
  if (now >= m->wait_start + m->config.latency)
    return GST_TWOFLOW_MERGER_MISSING;
  return GST_TWOFLOW_MERGER_WAIT;
}

/* Whether frame @n is waiting in @in. */
static gboolean
input_has (Input * in, guint32 n)
{
  GSequenceIter *it;

  for (it = g_sequence_get_begin_iter (in->frames);
      !g_sequence_iter_is_end (it); it = g_sequence_iter_next (it)) {
    Record *r = g_sequence_get (it);

    if (r->hdr.frame_no >= n)
      return r->hdr.frame_no == n;
  }
  return FALSE;
}

/* first-hold: whether the first frame (next_frame_no) still waits for the
 * one after it at @now */
static gboolean
hold_first (GstTwoflowMerger * m, GstClockTime now)
{
  guint32 n = m->next_frame_no + 1;

  if (m->config.first_hold == 0 || m->video_out)
    return FALSE;
  /* the second frame is there, or will never be */
  if ((m->frame_count != GST_TWOFLOW_NO_FRAME && n >= m->frame_count)
      || input_has (&m->essential, n) || input_has (&m->enhanced, n)
      || ((m->essential.eos || m->essential.end) && m->enhanced.eos)
      || (input_passed (&m->enhanced, n) && (m->essential.eos
              || m->essential.end || input_head (&m->essential) > n
              || g_sequence_get_length (m->essential.frames) > 1))) {
    m->hold_start = GST_CLOCK_TIME_NONE;
    return FALSE;
  }
  if (!GST_CLOCK_TIME_IS_VALID (m->hold_start))
    m->hold_start = now;
  if (now >= m->hold_start + m->config.first_hold) {
    m->hold_start = GST_CLOCK_TIME_NONE;
    return FALSE;
  }
  return TRUE;
}

static GstBuffer *
output_buffer (Record * r)
{
  GstBuffer *buf = gst_buffer_make_writable (r->payload);

  GST_BUFFER_PTS (buf) = r->hdr.pts;
  GST_BUFFER_DTS (buf) = r->hdr.dts;
  GST_BUFFER_DURATION (buf) = r->hdr.duration;
  g_free (r);
  return buf;
}

GstTwoflowMergerAction
gst_twoflow_merger_poll (GstTwoflowMerger * m, GstClockTime now,
    GstTwoflowMergerOutput * out)
{
  Record *video = NULL, *audio, *r;
  Input *from = NULL;
  GstTwoflowMergerAction action;

  memset (out, 0, sizeof (*out));
  gst_twoflow_frame_header_init (&out->hdr);
  if (m->error) {
    out->reason = m->error_reason;
    return out->action = GST_TWOFLOW_MERGER_ERROR;
  }
  if (m->done)
    return out->action = GST_TWOFLOW_MERGER_EOS;
  if (m->audio_caps && !m->audio_announced) {
    m->audio_announced = TRUE;
    out->caps = m->audio_caps;
    return out->action = GST_TWOFLOW_MERGER_AUDIO_CAPS;
  }

  action = next_video (m, now, &video, &from);
  if (action == GST_TWOFLOW_MERGER_FRAME && hold_first (m, now))
    action = GST_TWOFLOW_MERGER_WAIT;
  if (action == GST_TWOFLOW_MERGER_WAIT)
    return out->action = action;
  if (action == GST_TWOFLOW_MERGER_MISSING) {
    GstTwoflowPictureType type = GST_TWOFLOW_PICTURE_NONE;
    gboolean reference = TRUE;
    gboolean known = type_of (m, m->next_frame_no, &type, &reference);
    guint32 run = known ? 1 : unknown_run (m);

    out->hdr.frame_no = m->next_frame_no;
    out->count = run;
    if (run > 1) {
      /* a jump in frame numbers (a forged or broken stream): what lies
       * before the history of the next record is accounted in O(1) */
      gst_twoflow_damage_missing_run (&m->damage, m->next_frame_no, run);
    } else {
      gst_twoflow_damage_missing (&m->damage, m->next_frame_no, type, known,
          reference);
      out->hdr.picture_type = known ? type : GST_TWOFLOW_PICTURE_NONE;
      out->hdr.flags = known && reference ? GST_TWOFLOW_FLAG_REFERENCE : 0;
    }
    m->next_frame_no += run;
    m->discont = TRUE;
    return out->action = action;
  }

  audio = g_queue_peek_head (&m->audio);
  if (!GST_CLOCK_TIME_IS_VALID (m->segment_start)) {
    /* the first output: the segment starts at the earliest time */
    GstClockTime t = video ? frame_time (&video->hdr) : GST_CLOCK_TIME_NONE;

    if (audio && (!GST_CLOCK_TIME_IS_VALID (t) || audio->hdr.pts < t))
      t = audio->hdr.pts;
    m->segment_start = t;
  }
  if (audio && (action == GST_TWOFLOW_MERGER_EOS
          || !GST_CLOCK_TIME_IS_VALID (frame_time (&video->hdr))
          || audio->hdr.pts <= frame_time (&video->hdr))) {
    r = g_queue_pop_head (&m->audio);
    m->audio_queued_bytes -= record_bytes (r->payload);
    m->audio_next_out = r->hdr.frame_no + 1;
    m->audio_buffers++;
    out->hdr = r->hdr;
    out->buffer = output_buffer (r);
    GST_BUFFER_OFFSET (out->buffer) = out->hdr.frame_no;
    return out->action = GST_TWOFLOW_MERGER_AUDIO;
  }

  if (action == GST_TWOFLOW_MERGER_EOS) {
    /* the rest of the audio may still be on its way in the essential flow */
    if (m->audio_caps && !m->essential.eos && !m->essential.end)
      return out->action = GST_TWOFLOW_MERGER_WAIT;
    gst_twoflow_damage_finish (&m->damage);
    m->done = TRUE;
    return out->action = action;
  }

  r = input_pop (from);
  m->next_frame_no++;
  out->hdr = r->hdr;
  if (!gst_twoflow_damage_frame (&m->damage, &r->hdr)
      && m->config.drop_dependent) {
    m->discont = TRUE;
    record_free (r);
    return out->action = GST_TWOFLOW_MERGER_DROPPED;
  }
  m->output_frames++;
  m->video_out = TRUE;
  out->buffer = output_buffer (r);
  if (m->discont) {
    GST_BUFFER_FLAG_SET (out->buffer, GST_BUFFER_FLAG_DISCONT);
    m->discont = FALSE;
  }
  if (out->hdr.picture_type != GST_TWOFLOW_PICTURE_I)
    GST_BUFFER_FLAG_SET (out->buffer, GST_BUFFER_FLAG_DELTA_UNIT);
  return out->action = GST_TWOFLOW_MERGER_FRAME;
}

GstClockTime
gst_twoflow_merger_next_wakeup (GstTwoflowMerger * m)
{
  if (!m->error && !m->video_out && GST_CLOCK_TIME_IS_VALID (m->hold_start))
    return m->hold_start + m->config.first_hold;
  if (m->error || m->wait_frame != m->next_frame_no
      || !waiting_for_enhanced (m))
    return GST_CLOCK_TIME_NONE;
  return m->wait_start + m->config.latency;
}

const gchar *
gst_twoflow_merger_get_caps (GstTwoflowMerger * m)
{
  return m->caps;
}

const gchar *
gst_twoflow_merger_get_audio_caps (GstTwoflowMerger * m)
{
  return m->audio_caps;
}

GstClockTime
gst_twoflow_merger_get_segment_start (GstTwoflowMerger * m)
{
  return m->segment_start;
}

guint
gst_twoflow_merger_queued_records (GstTwoflowMerger * m)
{
  return g_sequence_get_length (m->essential.frames)
      + g_sequence_get_length (m->enhanced.frames) + m->audio.length;
}

guint64
gst_twoflow_merger_queued_bytes (GstTwoflowMerger * m,
    GstTwoflowMergerFlow flow)
{
  if (flow == GST_TWOFLOW_MERGER_ENHANCED)
    return m->enhanced.queued_bytes;
  return m->essential.queued_bytes + m->audio_queued_bytes;
}

const gchar *
gst_twoflow_merger_get_error (GstTwoflowMerger * m)
{
  return m->error_reason;
}

GstStructure *
gst_twoflow_merger_get_stats (GstTwoflowMerger * m)
{
  GstStructure *s =
      gst_structure_new_empty ("application/x-twoflowmerge-stats");

  gst_twoflow_damage_to_structure (&m->damage, s);
  gst_structure_set (s,
      "output-frames", G_TYPE_UINT64, m->output_frames,
      "prefix-frames", G_TYPE_UINT64, m->prefix_frames,
      "duplicates", G_TYPE_UINT64, m->duplicates,
      "audio-buffers", G_TYPE_UINT64, m->audio_buffers,
      "audio-duplicates", G_TYPE_UINT64, m->audio_duplicates,
      "essential-queued-bytes", G_TYPE_UINT64,
      gst_twoflow_merger_queued_bytes (m, GST_TWOFLOW_MERGER_ESSENTIAL),
      "enhanced-queued-bytes", G_TYPE_UINT64,
      gst_twoflow_merger_queued_bytes (m, GST_TWOFLOW_MERGER_ENHANCED),
      "queued-records", G_TYPE_UINT, gst_twoflow_merger_queued_records (m),
      NULL);
  return s;
}
