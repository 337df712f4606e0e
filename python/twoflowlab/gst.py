# SPDX-License-Identifier: LGPL-2.1-or-later
"""GStreamer runner helpers (PyGObject, hence Debian's /usr/bin/python3)
shared by the tools run inside the testbed's namespaces, the experiments
and the main job: a pipeline to EOS, decoded-frame counting, element
stats as dicts, and a GLib main loop that watches the bus.

GST_PLUGIN_PATH_1_0 (or GST_PLUGIN_PATH) must name the build's gst/
directory; the callers set it (meson's test environment, setup_env()).
"""

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

__all__ = ["GLib", "Gst", "init", "structure_to_dict", "stats", "run_to_eos",
           "count_frames", "bus_loop"]


def init():
    """Gst.init once; returns the Gst module."""
    if not Gst.is_initialized():
        Gst.init(None)
    return Gst


def structure_to_dict(s, skip=(), scalars_only=False):
    """A GstStructure's fields as a dict (fields in `skip` left out; with
    scalars_only, only int/float/str/bool values)."""
    out = {}
    for i in range(s.n_fields()):
        name = s.nth_field_name(i)
        if name in skip:
            continue
        v = s.get_value(name)
        if scalars_only and not isinstance(v, (int, float, str, bool)):
            continue
        out[name] = v
    return out


def stats(pipeline, name):
    """The `stats` property of the element `name` as a dict."""
    return structure_to_dict(pipeline.get_by_name(name).get_property("stats"))


def _error_text(msg):
    err, dbg = msg.parse_error()
    return f"{msg.src.get_name()}: {err.message} ({dbg})"


def run_to_eos(desc, timeout=300):
    """Runs a pipeline description to EOS; returns the pipeline (in NULL).
    Raises RuntimeError on an error message or after `timeout` s."""
    init()
    pipeline = Gst.parse_launch(desc)
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    msg = bus.timed_pop_filtered(int(timeout * Gst.SECOND),
                                 Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if msg is None:
        raise RuntimeError("pipeline timed out: " + desc)
    if msg.type == Gst.MessageType.ERROR:
        raise RuntimeError(_error_text(msg))
    return pipeline


def count_frames(desc, sink="sink", timeout=120, stop_on_warning=False):
    """Runs `desc` (which has a sink element named `sink`) until EOS, an
    error (or a warning, with stop_on_warning) or `timeout` s, counting the
    buffers reaching that sink. Returns (count, error or None)."""
    init()
    p = Gst.parse_launch(desc)
    n = [0]

    def probe(_pad, _info):
        n[0] += 1
        return Gst.PadProbeReturn.OK

    p.get_by_name(sink).get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, probe)
    types = Gst.MessageType.EOS | Gst.MessageType.ERROR
    if stop_on_warning:
        types |= Gst.MessageType.WARNING
    p.set_state(Gst.State.PLAYING)
    m = p.get_bus().timed_pop_filtered(int(timeout * Gst.SECOND), types)
    p.set_state(Gst.State.NULL)
    err = None
    if m is None:
        err = "timeout"
    elif m.type == Gst.MessageType.ERROR:
        e, dbg = m.parse_error()
        err = f"{e.message}: {(dbg or '').splitlines()[-1] if dbg else ''}"
    elif m.type == Gst.MessageType.WARNING:
        e, _dbg = m.parse_warning()
        err = f"warning: {e.message}"
    return n[0], err


def bus_loop(pipeline, duration=None, on_element=None, on_tick=None, tick=0.25):
    """A GLib main loop that ends on EOS, on an error, or after `duration`
    s; on_element(msg) gets the element messages, on_tick() runs every
    `tick` s. Returns (loop, result) with result {"eos", "error"} filled in
    as the loop runs; start the pipeline, then loop.run()."""
    loop = GLib.MainLoop()
    result = {"error": None, "eos": False}
    bus = pipeline.get_bus()
    bus.add_signal_watch()

    def on_msg(_bus, msg):
        if msg.type == Gst.MessageType.EOS:
            result["eos"] = True
            loop.quit()
        elif msg.type == Gst.MessageType.ERROR:
            result["error"] = _error_text(msg)
            loop.quit()
        elif msg.type == Gst.MessageType.ELEMENT and on_element:
            on_element(msg)
        return True

    bus.connect("message", on_msg)
    if on_tick:
        GLib.timeout_add(int(tick * 1000), lambda: on_tick() or True)
    if duration:
        GLib.timeout_add(int(duration * 1000), lambda: loop.quit() or False)
    return loop, result
