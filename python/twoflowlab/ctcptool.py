#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Sender and receiver of the cTCP experiments (GStreamer via PyGObject,
hence Debian's /usr/bin/python3).  Run inside testbed namespaces.

  python3 -m twoflowlab.ctcptool recv --port P [--out FILE] [--duration S]
      tcpserversrc ! filesink/fakesink; prints JSON {bytes, first_s, last_s}
  python3 -m twoflowlab.ctcptool send --host H --port P [--mode ctcp|tcp] [--target-rate B/s]
      [--cc reno] [--size BYTES | --file F | --trace F --scale C --minutes M]
      [--segment-duration S] [--max-catch-up X] [--duration S]
      [--sample-interval S]
      ctcpsink; prints JSON: events [[t, type]], samples [[t, bytes-acked,
      retransmissions]], final stats, and the deltas of this network
      namespace's TcpExt counters (TCPTimeouts, TCPSackRecovery, ...).

Times are CLOCK_MONOTONIC seconds.  GST_PLUGIN_PATH must name the build's
gst/ directory (twoflowlab.ctcpbed.setup_env() sets it).
"""

import argparse
import json
import lzma
import os
import sys
import threading
import time

from twoflowlab.gst import Gst, bus_loop, structure_to_dict

KEYS = ("TCPTimeouts", "TCPSackRecovery", "TCPRenoRecovery", "TCPLossProbes",
        "TCPLossUndo", "TCPFullUndo", "TCPPartialUndo", "TCPSpuriousRTOs",
        "TCPSackRecoveryFail", "TCPRenoRecoveryFail", "TCPLossFailures")


def netstat():
    """TcpExt counters of this process's network namespace."""
    out = {}
    with open("/proc/net/netstat") as f:
        lines = f.read().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        n, v = names.split(), values.split()
        if n[0] == "TcpExt:":
            out.update({k: int(x) for k, x in zip(n[1:], v[1:])})
    return {k: out.get(k, 0) for k in KEYS}


def slack_list(s):
    # Gst.ValueArray does not always convert: serialise and parse
    txt = s.to_string()
    i = txt.find("deadline-slack=")
    if i < 0:
        return []
    j = txt.index("<", i)
    k = txt.index(">", j)
    body = txt[j + 1:k].strip()
    if not body:
        return []
    return [int(x.strip().split(")")[-1]) for x in body.split(",")]


def trace_frames(path, scale, minutes, types):
    """(dts_ns, size) of the essential frames of a trace, scaled in time
    and size by 1/scale (so the rate stays the same)."""
    frames = []
    limit = minutes * 60 * 1000 if minutes else None
    with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as f:
        for line in f:
            p = line.split()
            if len(p) < 4:
                continue
            idx, typ, size = int(p[0]), p[1], int(p[3])
            t_ms = (idx - 1) * 40.0          # decode order, 25 fps
            if limit is not None and t_ms >= limit:
                break
            if typ in types:
                frames.append((int(t_ms * 1e6 / scale),
                               max(1, int(round(size / scale)))))
    return frames


def cmd_recv(a):
    Gst.init(None)
    sink = ("filesink location=%s" % a.out) if a.out else \
        "fakesink sync=false name=fs signal-handoffs=true"
    p = Gst.parse_launch("tcpserversrc host=0.0.0.0 port=%d ! %s"
                         % (a.port, sink))
    stat = {"bytes": 0, "first_s": None, "last_s": None}
    if not a.out:
        def handoff(el, buf, pad):
            now = time.monotonic()
            stat["bytes"] += buf.get_size()
            if stat["first_s"] is None:
                stat["first_s"] = now
            stat["last_s"] = now
        p.get_by_name("fs").connect("handoff", handoff)
    loop, result = bus_loop(p, a.duration)
    p.set_state(Gst.State.PLAYING)
    print(json.dumps({"ready": True}), flush=True)
    loop.run()
    p.set_state(Gst.State.NULL)
    if a.out:
        stat["bytes"] = os.path.getsize(a.out)
    stat["eos"] = result["eos"]
    stat["error"] = result["error"]
    print(json.dumps(stat), flush=True)


def cmd_send(a):
    Gst.init(None)
    props = "host=%s port=%d mode=%s events=rexmt+dupack+recovered" % (
        a.host, a.port, a.mode)
    if a.target_rate:
        # the option is bytes/s (the experiments' unit); the property bit/s
        props += " target-rate=%d" % (a.target_rate * 8)
    if a.cc:
        props += " congestion-control=%s" % a.cc
    if a.segment_duration:
        props += " segment-duration=%d" % int(a.segment_duration * 1e9)
    if a.max_catch_up:
        props += " max-catch-up=%g" % a.max_catch_up
    frames = None
    if a.trace:
        frames = trace_frames(a.trace, a.scale, a.minutes, a.types)
        src = "appsrc name=src format=time block=true max-bytes=1000000 " \
              "caps=application/x-twoflow"
    elif a.file:
        src = "filesrc location=%s" % a.file
    else:
        n = (a.size + 65535) // 65536 if a.size else -1
        src = "filesrc location=/dev/zero blocksize=65536 num-buffers=%d" % n
    p = Gst.parse_launch("%s ! ctcpsink name=s %s" % (src, props))
    sink = p.get_by_name("s")
    t0 = time.monotonic()
    events, samples = [], []
    ns0 = netstat()

    def on_element(msg):
        s = msg.get_structure()
        if s and s.get_name() == "GstNetworkCongestion":
            events.append([time.monotonic(), s.get_string("type"),
                           s.get_value("estimated-bitrate")])

    def tick():
        st = sink.get_property("stats")
        samples.append([time.monotonic(), st.get_value("bytes-acked"),
                        st.get_value("retransmissions"),
                        st.get_value("target-rate"), st.get_value("w-target"),
                        st.get_value("cwnd"), st.get_value("srtt")])

    loop, result = bus_loop(p, a.duration, on_element, tick, a.sample_interval)

    if frames is not None:
        appsrc = p.get_by_name("src")

        def feed():
            for dts, size in frames:
                buf = Gst.Buffer.new_wrapped(bytes(size))
                buf.pts = buf.dts = dts
                buf.duration = int(40e6 / a.scale)
                if appsrc.emit("push-buffer", buf) != Gst.FlowReturn.OK:
                    return
            appsrc.emit("end-of-stream")
        threading.Thread(target=feed, daemon=True).start()

    if p.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        result["error"] = result["error"] or "could not start"
    else:
        loop.run()
    t_end = time.monotonic()
    st = sink.get_property("stats")
    final = {k: v for k, v in structure_to_dict(st, ("deadline-slack",)).items()
             if not isinstance(v, (list, tuple))}
    final["deadline-slack"] = slack_list(st)
    p.set_state(Gst.State.NULL)
    ns1 = netstat()
    out = {"t0": t0, "t_end": t_end, "eos": result["eos"],
           "error": result["error"], "events": events, "samples": samples,
           "stats": final, "netstat": {k: ns1[k] - ns0[k] for k in ns0}}
    if frames is not None:
        out["frames"] = len(frames)
        out["bytes"] = sum(s for _, s in frames)
    print(json.dumps(out, default=str), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--out")
    r.add_argument("--duration", type=float)
    s = sub.add_parser("send")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--mode", default="ctcp", choices=("ctcp", "tcp"))
    s.add_argument("--target-rate", type=int, default=0)
    s.add_argument("--cc")
    s.add_argument("--size", type=int)
    s.add_argument("--file")
    s.add_argument("--trace")
    s.add_argument("--scale", type=float, default=1.0)
    s.add_argument("--minutes", type=float, default=20)
    s.add_argument("--types", default="I")
    s.add_argument("--segment-duration", type=float)
    s.add_argument("--max-catch-up", type=float)
    s.add_argument("--duration", type=float)
    s.add_argument("--sample-interval", type=float, default=0.25)
    a = ap.parse_args()
    (cmd_recv if a.cmd == "recv" else cmd_send)(a)


if __name__ == "__main__":
    main()
