/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — process-wide shared services: see twoflowservice.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "twoflowservice.h"

GST_DEBUG_CATEGORY_STATIC (twoflow_service_debug);
#define GST_CAT_DEFAULT twoflow_service_debug

struct _TwoflowService {
  gchar *name;
  const TwoflowServiceInfo *info;
  gint refcount;                /* under registry_lock */
  gpointer data;
  GThread *thread;

  GMutex lock;
  GCond wake;
  GstClock *clock;
  GstClockID id;                /* the thread's wait, while it waits */
  gboolean running;
  gboolean kicked;

  GMainContext *context;        /* GMainContext services */
};

static GMutex registry_lock;
static GHashTable *registry;    /* name -> TwoflowService */

static gpointer
clock_loop (gpointer data)
{
  TwoflowService *s = data;

  g_mutex_lock (&s->lock);
  while (s->running) {
    GstClockTime now = gst_clock_get_time (s->clock), next;
    GstClockID id;

    s->kicked = FALSE;
    next = s->info->dispatch (s, s->data, now);
    if (!s->running)
      break;
    if (s->kicked)
      continue;
    if (!GST_CLOCK_TIME_IS_VALID (next)) {
      g_cond_wait (&s->wake, &s->lock);
      continue;
    }
    if (next <= now)
      continue;
    id = gst_clock_new_single_shot_id (s->clock, next);
    s->id = id;
    g_mutex_unlock (&s->lock);
    gst_clock_id_wait (id, NULL);
    g_mutex_lock (&s->lock);
    s->id = NULL;
    gst_clock_id_unref (id);
  }
  g_mutex_unlock (&s->lock);
  return NULL;
}

static gpointer
context_loop (gpointer data)
{
  TwoflowService *s = data;

  g_main_context_push_thread_default (s->context);
  /* not a GMainLoop: a quit before the loop ran would be lost, while the
   * context's wakeup stays pending until the next iteration polls */
  while (g_atomic_int_get (&s->running))
    g_main_context_iteration (s->context, TRUE);
  g_main_context_pop_thread_default (s->context);
  return NULL;
}

TwoflowService *
twoflow_service_acquire (const gchar * name, const TwoflowServiceInfo * info,
    gpointer arg, GError ** error)
{
  TwoflowService *s;

  g_return_val_if_fail (name != NULL && info != NULL, NULL);

  g_mutex_lock (&registry_lock);
  if (!twoflow_service_debug)
    GST_DEBUG_CATEGORY_INIT (twoflow_service_debug, "twoflowservice", 0,
        "twoflow process-wide services");
  if (!registry)
    registry = g_hash_table_new (g_str_hash, g_str_equal);
  s = g_hash_table_lookup (registry, name);
  if (s) {
    g_warn_if_fail (s->info == info);
    s->refcount++;
    g_mutex_unlock (&registry_lock);
    return s;
  }
  s = g_new0 (TwoflowService, 1);
  s->name = g_strdup (name);
  s->info = info;
  s->refcount = 1;
  g_mutex_init (&s->lock);
  g_cond_init (&s->wake);
  s->clock = gst_system_clock_obtain ();
  if (!info->dispatch)
    s->context = g_main_context_new ();
  s->data = info->create (s, arg, error);
  if (!s->data) {
    g_mutex_unlock (&registry_lock);
    if (s->context)
      g_main_context_unref (s->context);
    gst_object_unref (s->clock);
    g_mutex_clear (&s->lock);
    g_cond_clear (&s->wake);
    g_free (s->name);
    g_free (s);
    return NULL;
  }
  s->running = TRUE;
  s->thread = g_thread_new (info->thread_name,
      info->dispatch ? clock_loop : context_loop, s);
  g_hash_table_insert (registry, s->name, s);
  g_mutex_unlock (&registry_lock);
  GST_INFO ("service %s started", name);
  return s;
}

void
twoflow_service_release (TwoflowService * s)
{
  g_mutex_lock (&registry_lock);
  if (--s->refcount > 0) {
    g_mutex_unlock (&registry_lock);
    return;
  }
  g_hash_table_remove (registry, s->name);
  g_mutex_unlock (&registry_lock);

  g_mutex_lock (&s->lock);
  g_atomic_int_set (&s->running, FALSE);
  twoflow_service_kick (s);
  g_mutex_unlock (&s->lock);
  g_thread_join (s->thread);
  s->info->destroy (s->data);
  if (s->context)
    g_main_context_unref (s->context);
  gst_object_unref (s->clock);
  g_mutex_clear (&s->lock);
  g_cond_clear (&s->wake);
  GST_INFO ("service %s stopped", s->name);
  g_free (s->name);
  g_free (s);
}

gpointer
twoflow_service_get_data (TwoflowService * s)
{
  return s->data;
}

const gchar *
twoflow_service_get_name (TwoflowService * s)
{
  return s->name;
}

GMainContext *
twoflow_service_get_context (TwoflowService * s)
{
  return s->context;
}

GstClock *
twoflow_service_get_clock (TwoflowService * s)
{
  return s->clock;
}

GstClockTime
twoflow_service_now (TwoflowService * s)
{
  return gst_clock_get_time (s->clock);
}

void
twoflow_service_lock (TwoflowService * s)
{
  g_mutex_lock (&s->lock);
}

void
twoflow_service_unlock (TwoflowService * s)
{
  g_mutex_unlock (&s->lock);
}

GMutex *
twoflow_service_get_mutex (TwoflowService * s)
{
  return &s->lock;
}

void
twoflow_service_kick (TwoflowService * s)
{
  s->kicked = TRUE;
  if (s->id)
    gst_clock_id_unschedule (s->id);
  g_cond_signal (&s->wake);
  if (s->context)
    g_main_context_wakeup (s->context);
}
