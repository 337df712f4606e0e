/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow — process-wide shared services (not installed).
 *
 * A service is a refcounted singleton keyed by name: the first
 * twoflow_service_acquire() of a name builds its state and starts its one
 * thread, the last twoflow_service_release() stops the thread and frees
 * the state. The thread runs either
 *
 *  - a GstClockID loop (info->dispatch set): dispatch(now) under the
 *    service lock, then a wait on a single-shot GstClockID for the time it
 *    returned (on the system clock, so a GstTestClock installed with
 *    gst_system_clock_set_default() drives it), or on a condition variable
 *    while it returned GST_CLOCK_TIME_NONE; twoflow_service_kick() makes it
 *    dispatch again at once. Users take the service lock around their
 *    changes to the shared state (and may wait on their own GConds with it).
 *  - a GMainContext (info->dispatch NULL): users attach GSources (socket
 *    sources, ...) to twoflow_service_get_context(); they run in the
 *    service thread.
 *
 * Used by the ERAP manager (one per local address and port: a socket
 * source for every session's ACKs) and the rUDP pacer (one per process:
 * the shared pacing timer).
 */
#ifndef __TWOFLOW_SERVICE_H__
#define __TWOFLOW_SERVICE_H__

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct _TwoflowService TwoflowService;

typedef struct {
  const gchar *thread_name;
  /* Builds the state on the first acquire (no thread yet, service lock
   * not held); NULL with @error set refuses the acquire. */
  gpointer (*create) (TwoflowService * s, gpointer arg, GError ** error);
  /* GstClockID loop: called in the thread with the lock held (it may drop
   * and retake it); returns when to be called next on the service clock,
   * GST_CLOCK_TIME_NONE for "when kicked". NULL: a GMainContext thread. */
  GstClockTime (*dispatch) (TwoflowService * s, gpointer data,
      GstClockTime now);
  /* Frees the state once the thread has ended. */
  void (*destroy) (gpointer data);
} TwoflowServiceInfo;

/* The service @name (created from @info and @arg if it does not run). */
TwoflowService *twoflow_service_acquire (const gchar * name,
    const TwoflowServiceInfo * info, gpointer arg, GError ** error);
void twoflow_service_release (TwoflowService * s);

gpointer twoflow_service_get_data (TwoflowService * s);
const gchar *twoflow_service_get_name (TwoflowService * s);
GMainContext *twoflow_service_get_context (TwoflowService * s);
GstClock *twoflow_service_get_clock (TwoflowService * s);
GstClockTime twoflow_service_now (TwoflowService * s);

void twoflow_service_lock (TwoflowService * s);
void twoflow_service_unlock (TwoflowService * s);
/* The service lock, to wait on a GCond of the user's with it. */
GMutex *twoflow_service_get_mutex (TwoflowService * s);
/* With the lock held: dispatch again as soon as possible. */
void twoflow_service_kick (TwoflowService * s);

G_END_DECLS

#endif
