/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* showdownarrivals — a GStreamer tracer that logs when each coded frame
 * leaves a parser, on CLOCK_MONOTONIC
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
/*
 * The showdown benchmark (experiments/showdown/) times every receiver at
 * the same point: the moment a complete coded frame leaves the video
 * parser in front of the decoder (or, in twoflow-proxy --fetch, in front
 * of the output muxer). twoflow-proxy is a program of its own, so a pad
 * probe cannot be added from outside; a tracer can, through the
 * environment:
 *
 *   GST_PLUGIN_PATH=<build>/experiments/showdown GST_TRACERS=showdownarrivals
 *   TWOFLOW_ARRIVALS_FILE=/tmp/arrivals.txt twoflow-proxy --fetch ...
 *
 * One line per buffer pushed from the src pad of an element made by one
 * of the factories in TWOFLOW_ARRIVALS_FACTORIES (comma separated;
 * default mpegvideoparse,h264parse):
 *
 *   monotonic_ns pts_ns dts_ns bytes flags element
 *
 * (pts/dts -1 when unset; flags the GstBufferFlags in hex). The clock is
 * CLOCK_MONOTONIC, comparable with the other processes of the machine and
 * with twoflow-linkemu's start_monotonic_s. Lines are flushed one by one:
 * a killed process keeps what it logged.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <gst/gst.h>

#define GST_TYPE_SHOWDOWN_TRACER (gst_showdown_tracer_get_type ())
G_DECLARE_FINAL_TYPE (GstShowdownTracer, gst_showdown_tracer, GST,
    SHOWDOWN_TRACER, GstTracer);

struct _GstShowdownTracer
{
  GstTracer parent;
  FILE *out;
  gchar **factories;
  GMutex lock;
};

G_DEFINE_TYPE (GstShowdownTracer, gst_showdown_tracer, GST_TYPE_TRACER);

static gboolean
watched (GstShowdownTracer * self, GstPad * pad)
{
  GstObject *parent;
  GstElementFactory *f;
  gboolean yes = FALSE;

  if (GST_PAD_DIRECTION (pad) != GST_PAD_SRC)
    return FALSE;
  parent = GST_OBJECT_PARENT (pad);
  if (!parent || !GST_IS_ELEMENT (parent))
    return FALSE;
  f = gst_element_get_factory (GST_ELEMENT (parent));
  if (f) {
    const gchar *name = GST_OBJECT_NAME (f);
    for (gchar ** p = self->factories; *p && !yes; p++)
      yes = g_str_equal (*p, name);
  }
  return yes;
}

static void
log_buffer (GstShowdownTracer * self, GstPad * pad, GstBuffer * buf,
    gint64 now)
{
  GstClockTime pts = GST_BUFFER_PTS (buf), dts = GST_BUFFER_DTS (buf);

  g_mutex_lock (&self->lock);
  fprintf (self->out, "%" G_GINT64_FORMAT " %" G_GINT64_FORMAT " %"
      G_GINT64_FORMAT " %" G_GSIZE_FORMAT " %x %s\n", now,
      GST_CLOCK_TIME_IS_VALID (pts) ? (gint64) pts : (gint64) - 1,
      GST_CLOCK_TIME_IS_VALID (dts) ? (gint64) dts : (gint64) - 1,
      gst_buffer_get_size (buf), GST_BUFFER_FLAGS (buf),
      GST_OBJECT_NAME (GST_OBJECT_PARENT (pad)));
  fflush (self->out);
  g_mutex_unlock (&self->lock);
}

static gint64
monotonic_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
push_pre (GstShowdownTracer * self, guint64 ts, GstPad * pad, GstBuffer * buf)
{
  if (self->out && watched (self, pad))
    log_buffer (self, pad, buf, monotonic_ns ());
}

static void
push_list_pre (GstShowdownTracer * self, guint64 ts, GstPad * pad,
    GstBufferList * list)
{
  if (self->out && watched (self, pad)) {
    gint64 now = monotonic_ns ();
    guint n = gst_buffer_list_length (list);
    for (guint i = 0; i < n; i++)
      log_buffer (self, pad, gst_buffer_list_get (list, i), now);
  }
}

static void
gst_showdown_tracer_finalize (GObject * obj)
{
  GstShowdownTracer *self = GST_SHOWDOWN_TRACER (obj);

  if (self->out)
    fclose (self->out);
  g_strfreev (self->factories);
  g_mutex_clear (&self->lock);
  G_OBJECT_CLASS (gst_showdown_tracer_parent_class)->finalize (obj);
}

static void
gst_showdown_tracer_class_init (GstShowdownTracerClass * klass)
{
  G_OBJECT_CLASS (klass)->finalize = gst_showdown_tracer_finalize;
}

static void
gst_showdown_tracer_init (GstShowdownTracer * self)
{
  const gchar *path = g_getenv ("TWOFLOW_ARRIVALS_FILE");
  const gchar *fac = g_getenv ("TWOFLOW_ARRIVALS_FACTORIES");

  g_mutex_init (&self->lock);
  self->factories = g_strsplit (fac && *fac ? fac :
      "mpegvideoparse,h264parse", ",", -1);
  if (path && *path) {
    self->out = fopen (path, "w");
    if (!self->out)
      g_printerr ("showdownarrivals: cannot write %s\n", path);
  }
  gst_tracing_register_hook (GST_TRACER (self), "pad-push-pre",
      G_CALLBACK (push_pre));
  gst_tracing_register_hook (GST_TRACER (self), "pad-push-list-pre",
      G_CALLBACK (push_list_pre));
}

static gboolean
plugin_init (GstPlugin * plugin)
{
  return gst_tracer_register (plugin, "showdownarrivals",
      GST_TYPE_SHOWDOWN_TRACER);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, showdowntracer,
    "The showdown benchmark's arrival tracer", plugin_init, VERSION, "LGPL",
    GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
