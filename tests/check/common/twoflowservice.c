/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — gst/common/twoflowservice: one refcounted service per name,
 * its one thread, the GstClockID loop on a GstTestClock (exact dispatch
 * times, kick, sleep while idle), the GMainContext flavour, and a create
 * that fails. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/check/gstcheck.h>
#include <gst/check/gsttestclock.h>
#include <gio/gio.h>
#include "twoflowservice.h"

static guint
count_threads (const gchar * name)
{
  GDir *d = g_dir_open ("/proc/self/task", 0, NULL);
  const gchar *e;
  guint n = 0;

  while ((e = g_dir_read_name (d))) {
    gchar *path = g_strdup_printf ("/proc/self/task/%s/comm", e), *comm;

    if (g_file_get_contents (path, &comm, NULL, NULL)) {
      g_strchomp (comm);
      if (!name || g_str_equal (comm, name))
        n++;
      g_free (comm);
    }
    g_free (path);
  }
  g_dir_close (d);
  return n;
}

/* the thread names itself once running: wait a little for it */
static guint
wait_threads (const gchar * name, guint want)
{
  guint i, n = count_threads (name);

  for (i = 0; i < 1000 && n != want; i++) {
    g_usleep (1000);
    n = count_threads (name);
  }
  return n;
}

/* a periodic job: every @period from the first dispatch, until @until */
typedef struct {
  GstClockTime period, next, until;
  GArray *at;                   /* dispatch times */
  gint destroyed;
} Job;

static gpointer
job_create (TwoflowService * s, gpointer arg, GError ** error)
{
  Job *j = g_new0 (Job, 1);

  if (arg == NULL) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "refused");
    g_free (j);
    return NULL;
  }
  j->period = *(GstClockTime *) arg;
  j->next = GST_CLOCK_TIME_NONE;
  j->until = GST_CLOCK_TIME_NONE;
  j->at = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  return j;
}

static GstClockTime
job_dispatch (TwoflowService * s, gpointer data, GstClockTime now)
{
  Job *j = data;

  g_array_append_val (j->at, now);
  if (!GST_CLOCK_TIME_IS_VALID (j->next))
    j->next = now;
  while (j->next <= now)
    j->next += j->period;
  /* idle (no wakeup) once past @until */
  return GST_CLOCK_TIME_IS_VALID (j->until) && j->next > j->until ?
      GST_CLOCK_TIME_NONE : j->next;
}

static gint jobs_destroyed;

static void
job_destroy (gpointer data)
{
  Job *j = data;

  g_array_free (j->at, TRUE);
  g_free (j);
  g_atomic_int_inc (&jobs_destroyed);
}

static const TwoflowServiceInfo job_info = {
  "test-svc", job_create, job_dispatch, job_destroy
};

GST_START_TEST (test_clock_loop)
{
  GstClock *clock = gst_test_clock_new_with_start_time (GST_SECOND);
  GstTestClock *tc = GST_TEST_CLOCK (clock);
  GstClockTime period = 10 * GST_MSECOND;
  TwoflowService *a, *b;
  GstClockID id;
  Job *j;
  guint i, before = count_threads (NULL);

  gst_system_clock_set_default (clock);
  a = twoflow_service_acquire ("job", &job_info, &period, NULL);
  b = twoflow_service_acquire ("job", &job_info, &period, NULL);
  /* one service per name, one thread */
  fail_unless (a == b);
  fail_unless_equals_int (wait_threads ("test-svc", 1), 1);
  fail_unless_equals_int (count_threads (NULL), before + 1);
  fail_unless (twoflow_service_get_context (a) == NULL);
  fail_unless (twoflow_service_get_clock (a) == clock);
  j = twoflow_service_get_data (a);
  /* the thread waits on GstClockIDs, one per period */
  for (i = 1; i <= 5; i++) {
    gst_test_clock_wait_for_next_pending_id (tc, &id);
    fail_unless_equals_uint64 (gst_clock_id_get_time (id),
        GST_SECOND + i * period);
    gst_clock_id_unref (id);
    fail_unless (gst_test_clock_crank (tc));
  }
  gst_test_clock_wait_for_next_pending_id (tc, NULL);
  twoflow_service_lock (a);
  fail_unless_equals_int (j->at->len, 6);
  for (i = 0; i < 6; i++)
    fail_unless_equals_uint64 (g_array_index (j->at, GstClockTime, i),
        GST_SECOND + i * period);
  /* nothing more to do: the thread sleeps without a timer, until kicked */
  j->until = GST_SECOND + 5 * period;
  twoflow_service_kick (a);
  twoflow_service_unlock (a);
  for (i = 0; i < 1000; i++) {
    guint n;

    twoflow_service_lock (a);
    n = j->at->len;
    twoflow_service_unlock (a);
    if (n == 7)
      break;
    g_usleep (1000);
  }
  g_usleep (20000);
  fail_unless_equals_int (gst_test_clock_peek_id_count (tc), 0);
  twoflow_service_lock (a);
  fail_unless_equals_int (j->at->len, 7);
  j->until = GST_CLOCK_TIME_NONE;
  twoflow_service_kick (a);
  twoflow_service_unlock (a);
  gst_test_clock_wait_for_next_pending_id (tc, &id);
  fail_unless_equals_uint64 (gst_clock_id_get_time (id),
      GST_SECOND + 6 * period);
  gst_clock_id_unref (id);

  /* the last release stops the thread and frees the state */
  twoflow_service_release (b);
  fail_unless_equals_int (count_threads ("test-svc"), 1);
  fail_unless_equals_int (g_atomic_int_get (&jobs_destroyed), 0);
  twoflow_service_release (a);
  fail_unless_equals_int (count_threads ("test-svc"), 0);
  fail_unless_equals_int (g_atomic_int_get (&jobs_destroyed), 1);
  gst_system_clock_set_default (NULL);
  gst_object_unref (clock);
}

GST_END_TEST;

GST_START_TEST (test_create_fails)
{
  GError *err = NULL;

  fail_if (twoflow_service_acquire ("refused", &job_info, NULL, &err));
  fail_unless (g_error_matches (err, G_IO_ERROR, G_IO_ERROR_FAILED));
  g_clear_error (&err);
  fail_unless_equals_int (count_threads ("test-svc"), 0);
}

GST_END_TEST;

typedef struct {
  GThread *ran_in;
  gint runs;
} Ctx;

static gpointer
ctx_create (TwoflowService * s, gpointer arg, GError ** error)
{
  return g_new0 (Ctx, 1);
}

static void
ctx_destroy (gpointer data)
{
  g_free (data);
}

static const TwoflowServiceInfo ctx_info = {
  "test-ctx", ctx_create, NULL, ctx_destroy
};

static gboolean
in_service (gpointer data)
{
  Ctx *c = data;

  c->ran_in = g_thread_self ();
  g_atomic_int_inc (&c->runs);
  return G_SOURCE_REMOVE;
}

GST_START_TEST (test_main_context)
{
  TwoflowService *s = twoflow_service_acquire ("ctx", &ctx_info, NULL, NULL);
  TwoflowService *other = twoflow_service_acquire ("ctx2", &ctx_info, NULL,
      NULL);
  Ctx *c = twoflow_service_get_data (s);
  GSource *src;
  guint i;

  /* two names, two services, two threads */
  fail_unless (s != other);
  fail_unless_equals_int (wait_threads ("test-ctx", 2), 2);
  src = g_idle_source_new ();
  g_source_set_callback (src, in_service, c, NULL);
  g_source_attach (src, twoflow_service_get_context (s));
  g_source_unref (src);
  for (i = 0; i < 1000 && g_atomic_int_get (&c->runs) == 0; i++)
    g_usleep (1000);
  fail_unless_equals_int (g_atomic_int_get (&c->runs), 1);
  fail_unless (c->ran_in != NULL && c->ran_in != g_thread_self ());
  twoflow_service_release (other);
  twoflow_service_release (s);
  fail_unless_equals_int (count_threads ("test-ctx"), 0);
  /* released at once after acquiring: the thread still ends */
  s = twoflow_service_acquire ("ctx", &ctx_info, NULL, NULL);
  twoflow_service_release (s);
  fail_unless_equals_int (count_threads ("test-ctx"), 0);
}

GST_END_TEST;

static Suite *
twoflowservice_suite (void)
{
  Suite *s = suite_create ("twoflowservice");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_clock_loop);
  tcase_add_test (tc, test_create_fails);
  tcase_add_test (tc, test_main_context);
  return s;
}

GST_CHECK_MAIN (twoflowservice);
