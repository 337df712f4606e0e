# SPDX-License-Identifier: LGPL-2.0-or-later
"""Runs examples/python/congestion.py against the build tree's
GstTwoflow-1.0 typelib and checks what it printed: the upstream event and
the bus message, both parsed by the library's helpers, carry the values
given (a bitrate chosen here), the type and the sink's name. Then checks
the bindings directly: round trips of structure, event and message, the
flags type, and that a foreign event or message is refused."""
import os
import subprocess
import sys

BUILD = os.environ["TWOFLOW_BUILD_ROOT"]
SOURCE = os.environ["TWOFLOW_SOURCE_ROOT"]
LIBDIR = os.path.join(BUILD, "gst-libs", "gst", "twoflow")


def env():
    e = dict(os.environ)
    e["GI_TYPELIB_PATH"] = LIBDIR + os.pathsep + e.get("GI_TYPELIB_PATH", "")
    e["LD_LIBRARY_PATH"] = LIBDIR + os.pathsep + e.get("LD_LIBRARY_PATH", "")
    return e


def check_example():
    bitrate = 1234567
    out = subprocess.run(
        [sys.executable, os.path.join(SOURCE, "examples", "python",
                                      "congestion.py"), str(bitrate)],
        env=env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
    lines = out.stdout.splitlines()
    want = ["%s: type=loss estimated-bitrate=%d srtt=40000000 "
            "source=transport" % (k, bitrate) for k in ("event", "message")]
    assert lines == want, (lines, want)
    # GStreamer criticals and warnings are bugs
    assert "CRITICAL" not in out.stderr and "WARN" not in out.stderr, \
        out.stderr
    print("\n".join(lines))


def check_bindings():
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstTwoflow", "1.0")
    from gi.repository import Gst, GstTwoflow
    Gst.init(None)
    T = GstTwoflow.NetworkCongestionType
    assert GstTwoflow.NETWORK_CONGESTION_NAME == "GstNetworkCongestion"
    names = ["rexmt", "dupack", "recovered", "loss", "rate"]
    for flag, name in zip([T.REXMT, T.DUPACK, T.RECOVERED, T.LOSS, T.RATE],
                          names):
        assert GstTwoflow.network_congestion_type_to_string(flag) == name
        ok, back = GstTwoflow.network_congestion_type_from_string(name)
        assert ok and back == flag, (name, back)
    assert GstTwoflow.network_congestion_type_to_string(T.LOSS | T.RATE) \
        is None
    assert not GstTwoflow.network_congestion_type_from_string("cubic")[0]

    s = GstTwoflow.network_congestion_structure_new(T.DUPACK, 777, 5, "ctcp0")
    assert s.get_name() == "GstNetworkCongestion"
    assert s.get_string("type") == "dupack"
    assert tuple(GstTwoflow.network_congestion_structure_parse(s)) == \
        (True, T.DUPACK, 777, 5, "ctcp0")

    ev = GstTwoflow.network_congestion_event_new(T.REXMT, 10, 20, "s")
    assert ev.type == Gst.EventType.CUSTOM_UPSTREAM
    assert tuple(GstTwoflow.network_congestion_event_parse(ev)) == \
        (True, T.REXMT, 10, 20, "s")
    assert not GstTwoflow.network_congestion_event_parse(Gst.Event.new_eos())[0]

    sink = Gst.ElementFactory.make("fakesink", "named")
    msg = GstTwoflow.network_congestion_message_new(sink, T.RATE, 99,
                                                    Gst.CLOCK_TIME_NONE)
    assert msg.type == Gst.MessageType.ELEMENT and msg.src == sink
    assert tuple(GstTwoflow.network_congestion_message_parse(msg)) == \
        (True, T.RATE, 99, Gst.CLOCK_TIME_NONE, "named")
    other = Gst.Message.new_element(sink, Gst.Structure.new_empty("x"))
    assert not GstTwoflow.network_congestion_message_parse(other)[0]
    print("bindings ok")


if __name__ == "__main__":
    # the build tree's typelib and library, for this process too (the
    # dynamic loader reads LD_LIBRARY_PATH only at start)
    if os.environ.get("TWOFLOW_GI_TEST_ENV") != "1":
        e = env()
        e["TWOFLOW_GI_TEST_ENV"] = "1"
        os.execve(sys.executable, [sys.executable] + sys.argv, e)
    check_example()
    check_bindings()
