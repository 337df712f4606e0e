# SPDX-License-Identifier: LGPL-2.1-or-later
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
    T = GstTwoflow.CongestionType
    assert GstTwoflow.CONGESTION_NAME == "GstNetworkCongestion"
    names = ["rexmt", "dupack", "recovered", "loss", "rate"]
    for flag, name in zip([T.REXMT, T.DUPACK, T.RECOVERED, T.LOSS, T.RATE],
                          names):
        assert GstTwoflow.congestion_type_to_string(flag) == name
        ok, back = GstTwoflow.congestion_type_from_string(name)
        assert ok and back == flag, (name, back)
    assert GstTwoflow.congestion_type_to_string(T.LOSS | T.RATE) \
        is None
    assert not GstTwoflow.congestion_type_from_string("cubic")[0]

    s = GstTwoflow.congestion_structure_new(T.DUPACK, 777, 5, "ctcp0")
    assert s.get_name() == "GstNetworkCongestion"
    assert s.get_string("type") == "dupack"
    assert tuple(GstTwoflow.congestion_structure_parse(s)) == \
        (True, T.DUPACK, 777, 5, "ctcp0")

    ev = GstTwoflow.congestion_event_new(T.REXMT, 10, 20, "s")
    assert ev.type == Gst.EventType.CUSTOM_UPSTREAM
    assert tuple(GstTwoflow.congestion_event_parse(ev)) == \
        (True, T.REXMT, 10, 20, "s")
    assert not GstTwoflow.congestion_event_parse(Gst.Event.new_eos())[0]

    sink = Gst.ElementFactory.make("fakesink", "named")
    msg = GstTwoflow.congestion_message_new(sink, T.RATE, 99,
                                                    Gst.CLOCK_TIME_NONE)
    assert msg.type == Gst.MessageType.ELEMENT and msg.src == sink
    assert tuple(GstTwoflow.congestion_message_parse(msg)) == \
        (True, T.RATE, 99, Gst.CLOCK_TIME_NONE, "named")
    other = Gst.Message.new_element(sink, Gst.Structure.new_empty("x"))
    assert not GstTwoflow.congestion_message_parse(other)[0]

    # the frame format: a record written by the library, read back
    hdr = GstTwoflow.FrameHeader()
    hdr.kind = GstTwoflow.RecordKind.FRAME
    hdr.codec = GstTwoflow.Codec.MPEG2
    hdr.picture_type = GstTwoflow.PictureType.P
    hdr.frame_no, hdr.gop_no, hdr.segment_no = 41, 3, 1
    hdr.depends_from = 38
    hdr.pts, hdr.dts, hdr.duration = 2 * Gst.SECOND, Gst.SECOND, 40000000
    rec = GstTwoflow.record_new(hdr, Gst.Buffer.new_wrapped(
        b"\x00\x00\x01\x00picture"))
    data = rec.extract_dup(0, rec.get_size())
    assert len(data) == GstTwoflow.HEADER_SIZE + 11, len(data)
    res, back = GstTwoflow.frame_header_parse(data)
    assert res == GstTwoflow.ParseResult.OK, \
        GstTwoflow.parse_result_to_string(res)
    assert (back.picture_type, back.frame_no, back.gop_no, back.segment_no,
            back.depends_from, back.pts, back.dts, back.payload_size) == \
        (GstTwoflow.PictureType.P, 41, 3, 1, 38, 2 * Gst.SECOND,
         Gst.SECOND, 11), back
    bad = bytearray(data)
    bad[20] ^= 0xff
    assert GstTwoflow.frame_header_parse(bytes(bad))[0] != \
        GstTwoflow.ParseResult.OK
    assert GstTwoflow.frame_header_parse(data[:10])[0] == \
        GstTwoflow.ParseResult.NEED_MORE
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
