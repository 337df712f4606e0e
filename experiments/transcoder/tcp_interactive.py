#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The TCP-interactive experiment of "Jitter and Delay Reduction for Time
Sensitive Elastic Traffic for TCP-interactive based World Wide Video
Streaming" (Table 3) on the emulated WAN testbed.  Run as root:

  sudo /usr/bin/python3 experiments/transcoder/tcp_interactive.py \\
      [--build build] [--runs 5] [--seconds 60] [--out DIR]

Topology (twoflowlab.testbed): two server hosts and one client
host (the proxy/player) across one bottleneck (default 6 Mbit/s, 20 ms
one way, 40-packet drop-tail queue, both directions' delay equal).

* s0, the video server, a live stream from a file:
    filesrc ! mpegvideoparse ! ratetranscoder ! clocksync
            ! ctcpsink mode=tcp events=rexmt+dupack congestion-control=cubic
  clocksync releases every picture at its DTS, so the file leaves as a
  live 25 fps stream; plain TCP (cubic) carries it.
* s1, cross traffic: iperf3 (cubic) to the client, on during
  [10, 20), [30, 40), [50, 60) s of the video (10 s on / 10 s off).
* c0, the player: tcpserversrc ! mpegvideoparse ! fakesink; every TCP
  read is timestamped (CLOCK_MONOTONIC) and every picture's arrival is
  when its last byte arrived.

The video (720x576, 25 fps, MPEG-2, ~4 Mbit/s, generated with mpeg2enc
and cached in the build directory) fits the bottleneck alone but not
beside the cross traffic.  Symbiosis on: ratetranscoder reacts to the
rexmt/dupack events ctcpsink sends upstream (backs off by half, recovers
additively).  Off: the same pipeline with ratetranscoder events=0, so it
passes the source through and the excess queues in the TCP buffers.

Per picture i (decode order = sending order): referential jitter
J_i = a_i - (a_0 + i/fps) (with dropped pictures: a_0 + DTS_i - DTS_0),
inter-arrival a_i - a_(i-1); per run the time
per video a_(N-1) - a_0 and frames per second (N-1)/that.  Runs alternate
on/off.  Writes into --out (default experiments/transcoder/results/):
table.md, summary.json, jitter.png, rates.png; the raw data of every run
(sender and player JSON, link CSV, frames.csv with every picture's
arrival and jitter) stay in <build>/tcp-interactive/runs/<mode>-<run>/.

  tcp_interactive.py send|recv ...   (the two ends, run in the namespaces)
  tcp_interactive.py analyse DIR     (tables and plots from saved runs)
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "../../python"))  # twoflowlab
PY = "/usr/bin/python3"            # Debian's, with PyGObject and matplotlib
FPS = 25
VIDEO_PORT = 5600
CROSS_PORT = 5201


# --------------------------------------------------------------------------
# the two ends (GStreamer through PyGObject, inside the namespaces)

def _gst():
    from twoflowlab.gst import GLib, Gst, init
    init()
    return GLib, Gst


def _run_loop(pipeline, on_element=None):
    from twoflowlab.gst import bus_loop
    return bus_loop(pipeline, None, on_element)


def _struct(s):
    from twoflowlab.gst import structure_to_dict
    return structure_to_dict(s, ("deadline-slack",), scalars_only=True)


def cmd_send(a):
    GLib, Gst = _gst()
    tc_events = "rexmt+dupack" if a.symbiosis == "on" else "0"
    # clocksync after the transcoder: every picture leaves at its DTS
    # (the codecs' reorder delay would otherwise release them in bursts)
    desc = ("filesrc location=%s ! mpegvideoparse ! "
            "ratetranscoder name=tc events=%s min-bitrate=%d recovery=%d "
            "backoff=%g ! clocksync ! ctcpsink name=sink mode=tcp "
            "events=rexmt+dupack "
            "congestion-control=%s host=%s port=%d"
            % (a.file, tc_events, a.min_bitrate, a.recovery, a.backoff,
               a.cc, a.host, a.port))
    p = Gst.parse_launch(desc)
    tc, sink = p.get_by_name("tc"), p.get_by_name("sink")
    sent, events, tcmsgs, ticks = [], [], [], []

    def on_buffer(_pad, info):
        buf = info.get_buffer()
        dts = buf.dts if buf.dts != Gst.CLOCK_TIME_NONE else buf.pts
        sent.append((time.monotonic(), buf.get_size(),
                     dts if dts != Gst.CLOCK_TIME_NONE else -1))
        return Gst.PadProbeReturn.OK
    sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, on_buffer)

    def on_element(msg):
        s = msg.get_structure()
        if s is None:
            return
        if s.get_name() == "GstNetworkCongestion":
            events.append((time.monotonic(), s.get_string("type"),
                           s.get_value("estimated-bitrate")))
        elif s.get_name() == "application/x-ratetranscoder-stats":
            tcmsgs.append((time.monotonic(), s.get_value("target-bitrate"),
                           s.get_value("output-bitrate")))

    def tick():
        t = tc.get_property("stats")
        k = sink.get_property("stats")
        ticks.append((time.monotonic(), t.get_value("target-bitrate"),
                      t.get_value("output-bitrate"),
                      t.get_value("input-bitrate"),
                      t.get_value("quantizer"),
                      k.get_value("bytes-queued"),
                      k.get_value("bytes-sent") - k.get_value("bytes-acked"),
                      k.get_value("cwnd"), k.get_value("srtt")))
        return True

    loop, res = _run_loop(p, on_element)
    GLib.timeout_add(100, tick)
    if p.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        res["error"] = res["error"] or "could not start the sender"
        print(json.dumps({"ready": False, "error": res["error"]}), flush=True)
    else:
        p.get_state(Gst.CLOCK_TIME_NONE)
        # the system clock is CLOCK_MONOTONIC: base time = the video's t=0
        t0 = p.get_base_time() / 1e9
        print(json.dumps({"ready": True, "t0": t0}), flush=True)
        if a.duration:
            GLib.timeout_add(int(a.duration * 1000), loop.quit)
        loop.run()
    tick()
    out = {"t0": p.get_base_time() / 1e9, "t_end": time.monotonic(),
           "eos": res["eos"], "error": res["error"], "pipeline": desc,
           "sent": sent, "events": events, "tc_messages": tcmsgs,
           "ticks": ticks,
           "tc_stats": _struct(tc.get_property("stats")),
           "sink_stats": _struct(sink.get_property("stats"))}
    p.set_state(Gst.State.NULL)
    with open(a.out, "w") as f:
        json.dump(out, f)
    print(json.dumps({"done": True, "eos": res["eos"],
                      "error": res["error"]}), flush=True)


def _picture_type(data):
    """MPEG-2 picture_coding_type of the first picture header in data."""
    i = data.find(b"\x00\x00\x01\x00")
    if i < 0 or i + 6 > len(data):
        return "?"
    return {1: "I", 2: "P", 3: "B"}.get((data[i + 5] >> 3) & 7, "?")


def cmd_recv(a):
    GLib, Gst = _gst()
    p = Gst.parse_launch(
        "tcpserversrc name=src host=0.0.0.0 port=%d ! mpegvideoparse "
        "name=parse ! fakesink sync=false" % a.port)
    chunks, frames = [], []

    def on_chunk(_pad, info):
        chunks.append((time.monotonic(), info.get_buffer().get_size()))
        return Gst.PadProbeReturn.OK

    def on_frame(_pad, info):
        buf = info.get_buffer()
        n = buf.get_size()
        head = buf.extract_dup(0, min(n, 4096))
        frames.append((buf.offset, n, _picture_type(head)))
        return Gst.PadProbeReturn.OK
    p.get_by_name("src").get_static_pad("src").add_probe(
        Gst.PadProbeType.BUFFER, on_chunk)
    p.get_by_name("parse").get_static_pad("src").add_probe(
        Gst.PadProbeType.BUFFER, on_frame)
    loop, res = _run_loop(p)
    p.set_state(Gst.State.PLAYING)
    print(json.dumps({"ready": True}), flush=True)
    if a.duration:
        GLib.timeout_add(int(a.duration * 1000), loop.quit)
    loop.run()
    p.set_state(Gst.State.NULL)
    with open(a.out, "w") as f:
        json.dump({"eos": res["eos"], "error": res["error"],
                   "chunks": chunks, "frames": frames}, f)
    print(json.dumps({"done": True, "eos": res["eos"],
                      "error": res["error"]}), flush=True)


# --------------------------------------------------------------------------
# per-run analysis

def frame_arrivals(rx):
    """Arrival time of every picture: when the TCP read holding its last
    byte returned.  Pictures are contiguous in the byte stream (the parser
    puts sequence/GOP headers with the picture that follows them)."""
    chunks, frames = rx["chunks"], rx["frames"]
    out, ci, got, end = [], 0, 0, 0
    for off, size, typ in frames:
        # trust the parser's byte offsets when it gives them
        end = (off + size) if 0 <= off < 2 ** 62 else end + size
        while ci < len(chunks) and got < end:
            got += chunks[ci][1]
            ci += 1
        t = chunks[ci - 1][0] if ci else chunks[0][0]
        out.append((t, size, typ))
    return out


def ideal_offsets(rx, tx, fps=FPS):
    """Ideal arrival of picture i after picture 0: i/fps, or, when the
    transcoder dropped pictures, the source timing of the i-th picture
    sent (TCP delivers them in order: the receiver's i-th picture is the
    sender's i-th buffer, which carries its source DTS)."""
    n = len(rx["frames"])
    dts = [s[2] for s in tx["sent"]]
    if len(dts) == n and n and min(dts) >= 0:
        return [(d - dts[0]) / 1e9 for d in dts]
    return [i / fps for i in range(n)]


def analyse_run(rx, tx, fps=FPS):
    arr = frame_arrivals(rx)
    n = len(arr)
    a = [x[0] for x in arr]
    ideal = ideal_offsets(rx, tx, fps)
    jit = [(a[i] - (a[0] + ideal[i])) * 1e3 for i in range(n)]
    ia = [(a[i] - a[i - 1]) * 1e3 for i in range(1, n)]
    tpv = a[-1] - a[0]
    sent_bytes = sum(s[1] for s in tx["sent"])
    dur = tx["tc_stats"].get("frames-in", len(tx["sent"])) / fps
    ev = [e[1] for e in tx["events"]]
    return {
        "frames": n, "frames_sent": len(tx["sent"]),
        "jitter_mean_ms": statistics.fmean(jit),
        "jitter_abs_mean_ms": statistics.fmean(abs(j) for j in jit),
        "jitter_max_ms": max(jit),
        "jitter_p95_ms": sorted(jit)[int(0.95 * (n - 1))],
        "interarrival_mean_ms": statistics.fmean(ia),
        "interarrival_std_ms": statistics.pstdev(ia),
        "interarrival_max_ms": max(ia),
        "time_per_video_s": tpv, "fps": (n - 1) / tpv,
        "video_mbps": sent_bytes * 8 / dur / 1e6 if dur else 0,
        "rexmt": ev.count("rexmt"), "dupack": ev.count("dupack"),
        "tc_frames_dropped": tx["tc_stats"].get("frames-dropped", 0),
        "tc_events": tx["tc_stats"].get("events", 0),
        "tc_events_ignored": tx["tc_stats"].get("events-ignored", 0),
        "_arrivals": arr, "_jitter": jit, "_ideal": ideal,
    }


def write_frames_csv(path, r, t0):
    with open(path, "w") as f:
        f.write("frame,type,bytes,arrival_s,ideal_s,jitter_ms,"
                "interarrival_ms\n")
        arr = r["_arrivals"]
        for i, (t, size, typ) in enumerate(arr):
            ideal = arr[0][0] + r["_ideal"][i]
            ia = (t - arr[i - 1][0]) * 1e3 if i else 0.0
            f.write("%d,%s,%d,%.6f,%.6f,%.3f,%.3f\n" % (
                i, typ, size, t - t0, ideal - t0, (t - ideal) * 1e3, ia))


# --------------------------------------------------------------------------
# orchestration

def cross_schedule(seconds, on, off, first):
    out, t = [], first
    while t < seconds:
        out.append((t, min(t + on, seconds)))
        t += on + off
    return out


def ensure_video(build, seconds, kbps):
    n = int(seconds * FPS)
    d = os.path.join(build, "tcp-interactive")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "source-%d-%dk.m2v" % (n, kbps))
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return path
    print("encoding %s (%d frames, mpeg2enc: a minute or two)..." % (path, n),
          flush=True)
    part = path + ".part"
    subprocess.run(
        ["gst-launch-1.0", "-q", "videotestsrc", "pattern=smpte",
         "horizontal-speed=5", "num-buffers=%d" % n, "!",
         "video/x-raw,width=720,height=576,framerate=25/1", "!",
         "mpeg2enc", "format=3", "bitrate=%d" % kbps, "b-per-refframe=2",
         "!", "mpegvideoparse", "!", "filesink", "location=" + part],
        check=True)
    os.rename(part, path)
    return path


def _ready(p, what):
    line = p.stdout.readline()
    try:
        msg = json.loads(line)
    except ValueError:
        msg = {}
    if not msg.get("ready"):
        raise RuntimeError("%s did not start: %r" % (what, line))
    return msg


def one_run(a, video, mode, k, rundir):
    from twoflowlab.testbed import Testbed
    os.makedirs(rundir, exist_ok=True)
    rxf, txf = os.path.join(rundir, "recv.json"), os.path.join(rundir,
                                                              "send.json")
    sched = cross_schedule(a.seconds, a.on, a.off, a.first_on)
    with Testbed(rate_bps=a.rate * 1e6, delay_ms=a.delay, queue_pkts=a.queue,
                 n_servers=2, n_clients=1,
                 track_ports=[VIDEO_PORT, CROSS_PORT], workdir=rundir,
                 seed=k + 1) as tb:
        cip = tb.client.ip
        tb.client.popen(["iperf3", "-s", "-p", str(CROSS_PORT)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rx = tb.client.popen([PY, __file__, "recv", "--port",
                              str(VIDEO_PORT), "--out", rxf,
                              "--duration", str(a.seconds * 3 + 60)],
                             stdout=subprocess.PIPE, text=True)
        _ready(rx, "receiver")
        time.sleep(0.3)
        tx = tb.servers[0].popen(
            [PY, __file__, "send", "--host", cip, "--port", str(VIDEO_PORT),
             "--file", video, "--symbiosis", mode, "--out", txf,
             "--cc", a.cc, "--min-bitrate", str(a.min_bitrate),
             "--recovery", str(a.recovery), "--backoff", str(a.backoff),
             "--duration", str(a.seconds * 3 + 50)],
            stdout=subprocess.PIPE, text=True)
        t0 = _ready(tx, "sender")["t0"]
        cross = []
        for on_s, off_s in sched:
            delay = t0 + on_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            start = time.monotonic()
            p = tb.servers[1].popen(
                ["iperf3", "-c", cip, "-p", str(CROSS_PORT), "-C", a.cc,
                 "-t", "%g" % (off_s - on_s), "-J"],
                stdout=subprocess.PIPE, text=True)
            cross.append((start, p))
        cross_res = []
        for start, p in cross:
            out, _ = p.communicate(timeout=a.off + a.on + 60)
            try:
                j = json.loads(out)
                mbps = j["end"]["sum_received"]["bits_per_second"] / 1e6
            except (ValueError, KeyError):
                mbps = None
            cross_res.append({"start": start - t0, "mbps": mbps})
        tx.communicate(timeout=a.seconds * 3 + 120)
        rx.communicate(timeout=60)
        tb.stop_emulator()
    with open(rxf) as f:
        rxd = json.load(f)
    with open(txf) as f:
        txd = json.load(f)
    meta = {"mode": mode, "run": k, "t0": t0, "cross": cross_res,
            "schedule": sched}
    with open(os.path.join(rundir, "meta.json"), "w") as f:
        json.dump(meta, f)
    for name, d in (("sender", txd), ("receiver", rxd)):
        if d["error"] or not d["eos"]:
            print("  warning: %s: eos %s, error %s" % (name, d["eos"],
                                                       d["error"]))
    return rxd, txd, meta


def main_run(a):
    from twoflowlab.testbed import check_environment, SkipTest
    build = os.path.abspath(a.build)
    os.environ["GST_PLUGIN_PATH_1_0"] = os.path.join(build, "gst")
    os.environ["GST_PLUGIN_PATH"] = os.path.join(build, "gst")
    os.environ["GST_REGISTRY_1_0"] = os.path.join(
        build, "tcp-interactive-registry.bin")
    os.environ["TWOFLOW_BUILD_ROOT"] = build
    os.environ["TWOFLOW_LINKEMU"] = os.path.join(build, "tools", "linkemu",
                                                 "twoflow-linkemu")
    try:
        check_environment()
    except SkipTest as e:
        sys.exit("cannot run the testbed: %s" % e)
    video = os.path.abspath(a.video) if a.video else \
        ensure_video(build, a.seconds, a.kbps)
    raw = os.path.join(a.work or os.path.join(build, "tcp-interactive"),
                       "runs")
    if os.path.isdir(raw):
        shutil.rmtree(raw)
    order = []
    for k in range(a.runs):
        order += [("on", k), ("off", k)] if k % 2 == 0 else \
                 [("off", k), ("on", k)]
    t_start = time.monotonic()
    for mode, k in order:
        rundir = os.path.join(raw, "%s-%d" % (mode, k + 1))
        print("run %d symbiosis %s ..." % (k + 1, mode), flush=True)
        rxd, txd, meta = one_run(a, video, mode, k, rundir)
        r = analyse_run(rxd, txd)
        print("  frames %d, referential jitter %.1f ms (max %.0f), "
              "inter-arrival %.1f +- %.1f ms, %.2f s, %.2f fps, "
              "%.2f Mbit/s, events rexmt %d dupack %d  [%.0f s elapsed]" % (
                  r["frames"], r["jitter_mean_ms"], r["jitter_max_ms"],
                  r["interarrival_mean_ms"], r["interarrival_std_ms"],
                  r["time_per_video_s"], r["fps"], r["video_mbps"],
                  r["rexmt"], r["dupack"], time.monotonic() - t_start),
              flush=True)
    with open(os.path.join(raw, "config.json"), "w") as f:
        json.dump(vars(a), f)
    analyse_dir(raw, a.out, vars(a))


# --------------------------------------------------------------------------
# tables and plots

def load_runs(raw):
    runs = []
    for d in sorted(os.listdir(raw)):
        p = os.path.join(raw, d)
        if not os.path.isfile(os.path.join(p, "meta.json")):
            continue
        with open(os.path.join(p, "meta.json")) as f:
            meta = json.load(f)
        with open(os.path.join(p, "recv.json")) as f:
            rxd = json.load(f)
        with open(os.path.join(p, "send.json")) as f:
            txd = json.load(f)
        runs.append((meta, rxd, txd, p))
    runs.sort(key=lambda x: (x[0]["mode"] != "on", x[0]["run"]))
    return runs


def analyse_dir(raw, out, cfg=None):
    if cfg is None and os.path.exists(os.path.join(raw, "config.json")):
        with open(os.path.join(raw, "config.json")) as f:
            cfg = json.load(f)
    cfg = cfg or {}
    os.makedirs(out, exist_ok=True)
    runs = load_runs(raw)
    rows = []
    for meta, rxd, txd, path in runs:
        r = analyse_run(rxd, txd)
        r["mode"], r["run"] = meta["mode"], meta["run"] + 1
        r["cross_mbps"] = [c["mbps"] for c in meta["cross"]]
        write_frames_csv(os.path.join(path, "frames.csv"), r, meta["t0"])
        rows.append((r, meta, rxd, txd, path))

    cols = [("jitter_mean_ms", "%.1f"), ("jitter_abs_mean_ms", "%.1f"),
            ("jitter_max_ms", "%.0f"),
            ("interarrival_mean_ms", "%.2f"), ("interarrival_std_ms", "%.1f"),
            ("time_per_video_s", "%.2f"), ("fps", "%.2f"),
            ("video_mbps", "%.2f")]
    lines = ["| symbiosis | run | frames | ref. jitter mean ms | mean abs ms "
             "| max ms | inter-arrival mean ms | std ms | time per video s | "
             "fps | video Mbit/s | rexmt / dupack events |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    means = {}
    for mode in ("on", "off"):
        sel = [x[0] for x in rows if x[0]["mode"] == mode]
        for r in sel:
            lines.append("| %s | %d | %d | " % (mode, r["run"], r["frames"]) +
                         " | ".join(f % r[c] for c, f in cols) +
                         " | %d / %d |" % (r["rexmt"], r["dupack"]))
        if sel:
            m = {c: statistics.fmean(r[c] for r in sel) for c, _ in cols}
            m["jitter_abs_mean_ms"] = statistics.fmean(
                r["jitter_abs_mean_ms"] for r in sel)
            m["frames"] = statistics.fmean(r["frames"] for r in sel)
            m["rexmt"] = statistics.fmean(r["rexmt"] for r in sel)
            m["dupack"] = statistics.fmean(r["dupack"] for r in sel)
            means[mode] = m
            lines.append("| **%s, mean** | | %.0f | " % (mode, m["frames"]) +
                         " | ".join("**" + (f % m[c]) + "**"
                                    for c, f in cols) +
                         " | %.1f / %.1f |" % (m["rexmt"], m["dupack"]))
    ratio = ratio_abs = None
    if "on" in means and "off" in means and means["off"]["jitter_mean_ms"]:
        on, off = means["on"], means["off"]
        ratio = on["jitter_mean_ms"] / off["jitter_mean_ms"]
        ratio_abs = on["jitter_abs_mean_ms"] / off["jitter_abs_mean_ms"]
        lines.append("")
        lines.append("Average referential jitter, symbiosis on / off: "
                     "%.1f / %.1f ms = %.3f; mean |J| %.1f / %.1f ms = %.3f "
                     "(goal <= 1/3; paper 4.9 / 15.9 = 0.31)." % (
                         on["jitter_mean_ms"], off["jitter_mean_ms"], ratio,
                         on["jitter_abs_mean_ms"], off["jitter_abs_mean_ms"],
                         ratio_abs))
    cross = [c for x in rows for c in x[0]["cross_mbps"] if c]
    hdr = ["# TCP-interactive experiment (Table 3)", ""]
    if cfg:
        hdr.append("Bottleneck %g Mbit/s, %g ms one way, %d-packet drop-tail "
                   "queue; video %g s of 720x576 25 fps MPEG-2 at %d kbit/s "
                   "(mpeg2enc); cross traffic iperf3 %s, %g s on / %g s off "
                   "from %g s; ratetranscoder backoff %g, recovery %d bit/s "
                   "per s, min-bitrate %d; ctcpsink mode=tcp "
                   "congestion-control=%s events=rexmt+dupack." % (
                       cfg.get("rate"), cfg.get("delay"), cfg.get("queue"),
                       cfg.get("seconds"), cfg.get("kbps"), cfg.get("cc"),
                       cfg.get("on"), cfg.get("off"), cfg.get("first_on"),
                       cfg.get("backoff"), cfg.get("recovery"),
                       cfg.get("min_bitrate"), cfg.get("cc")))
        hdr.append("")
    lines.append("")
    lines.append("Referential jitter J_i = a_i - (a_0 + (DTS_i - DTS_0)), "
                 "a_i the arrival of picture i's last byte at the player; "
                 "mean (signed) and mean |J|; fps = (N-1) / time per "
                 "video; video Mbit/s = bytes sent / source duration.")
    if cross:
        lines.append("Cross traffic while on: %.2f Mbit/s on average "
                     "(iperf3 receiver)." % statistics.fmean(cross))
    text = "\n".join(hdr + lines) + "\n"
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    summ = {"config": cfg, "means": means, "ratio": ratio,
            "ratio_abs": ratio_abs,
            "runs": [{k: v for k, v in x[0].items() if not k.startswith("_")}
                     for x in rows]}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summ, f, indent=1)
    print(text)
    try:
        plot(rows, out)
    except ImportError as e:
        print("no plots: %s" % e)


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"on": "tab:blue", "off": "tab:red"}
    fig, axes = plt.subplots(2, 1, figsize=(11, 7.5), sharex=True)
    for r, meta, _rx, _tx, _p in rows:
        arr = r["_arrivals"]
        x = r["_ideal"]
        first = r["run"] == 1
        kw = dict(color=colors[r["mode"]], lw=1.2 if first else 0.5,
                  alpha=1.0 if first else 0.45)
        if first:
            kw["label"] = "symbiosis %s" % r["mode"]
        axes[0].plot(x, r["_jitter"], **kw)
        ia = [0.0] + [(arr[i][0] - arr[i - 1][0]) * 1e3
                      for i in range(1, len(arr))]
        if first:
            axes[1].plot(x, ia, color=colors[r["mode"]], lw=0.6,
                         alpha=0.8, label="symbiosis %s, run 1" % r["mode"])
    sched = rows[0][1]["schedule"] if rows else []
    for ax in axes:
        for a, b in sched:
            ax.axvspan(a, b, color="0.85", zorder=0)
    axes[0].set_ylabel("referential jitter (ms)")
    axes[0].set_title("Per-frame referential jitter, arrival - ideal"
                      " (bold: run 1, thin: runs 2-5; grey: cross traffic on)")
    axes[0].legend(loc="upper left")
    axes[1].set_ylabel("inter-arrival (ms)")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("frame's source time (s of video)")
    axes[1].legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "jitter.png"), dpi=90)
    plt.close(fig)

    # rates of run 1 of each mode: transcoder target/output, link shares
    from twoflowlab.testbed import read_csv
    fig, axes = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    for ax, mode in zip(axes, ("on", "off")):
        sel = [x for x in rows if x[0]["mode"] == mode and x[0]["run"] == 1]
        if not sel:
            continue
        r, meta, _rx, tx, path = sel[0]
        t0 = meta["t0"]
        csvp = os.path.join(path, "linkemu.csv")
        if os.path.exists(csvp):
            rows_csv = read_csv(csvp, "fwd")
            for col, lab, c in (("bytes_%d" % VIDEO_PORT, "video at link",
                                 "tab:green"),
                                ("bytes_%d" % CROSS_PORT, "cross traffic",
                                 "tab:gray")):
                if rows_csv and col in rows_csv[0]:
                    iv = (rows_csv[1]["time_s"] - rows_csv[0]["time_s"]) \
                        if len(rows_csv) > 1 else 0.1
                    t = [q["time_s"] - (t0 - link_t0(path)) for q in rows_csv]
                    v = smooth([q[col] * 8 / iv / 1e6 for q in rows_csv], 5)
                    ax.plot(t, v, color=c, lw=0.8, label=lab)
        ticks = tx["ticks"]
        ax.plot([q[0] - t0 for q in ticks], [q[1] / 1e6 for q in ticks],
                color="tab:blue", lw=1.2, label="transcoder target")
        # sent rate per second from the frames leaving the transcoder
        sent = tx["sent"]
        if sent:
            per = {}
            for t, s, _dts in sent:
                per[int(t - t0)] = per.get(int(t - t0), 0) + s
            xs = sorted(per)
            ax.step(xs, [per[s] * 8 / 1e6 for s in xs], where="post",
                    color="tab:orange", lw=1, label="video sent (1 s)")
        ax2 = ax.twinx()
        ax2.plot([q[0] - t0 for q in ticks],
                 [(q[5] + q[6]) / 1e6 for q in ticks], color="tab:red",
                 lw=0.8, ls="--", label="bytes in sink + socket")
        ax2.set_ylabel("queued at sender (MB)")
        for a, b in meta["schedule"]:
            ax.axvspan(a, b, color="0.9", zorder=0)
        ax.set_ylabel("Mbit/s")
        ax.set_title("symbiosis %s, run 1" % mode)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="upper right", fontsize=8)
    axes[-1].set_xlabel("s since the video started")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rates.png"), dpi=90)
    plt.close(fig)


def link_t0(path):
    """CLOCK_MONOTONIC of the emulator's t=0 (from its summary)."""
    try:
        with open(os.path.join(path, "linkemu-summary.json")) as f:
            return json.load(f)["start_monotonic_s"]
    except (OSError, ValueError, KeyError):
        return 0.0


def smooth(xs, n):
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= n:
            acc -= xs[i - n]
        out.append(acc / min(i + 1, n))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    s = sub.add_parser("send")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--file", required=True)
    s.add_argument("--symbiosis", choices=("on", "off"), required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--cc", default="cubic")
    s.add_argument("--min-bitrate", type=int, default=0)
    s.add_argument("--recovery", type=int, default=50000)
    s.add_argument("--backoff", type=float, default=0.5)
    s.add_argument("--duration", type=float)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--duration", type=float)
    an = sub.add_parser("analyse")
    an.add_argument("raw", help="the runs/ directory of an earlier run")
    an.add_argument("--out", default=os.path.join(HERE, "results"))

    # the experiment itself (no subcommand)
    ap.add_argument("--build", default=os.environ.get(
        "TWOFLOW_BUILD_ROOT", os.path.join(ROOT, "build")))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--work", help="raw run data (default <build>/"
                    "tcp-interactive)")
    ap.add_argument("--video", help="MPEG-2 elementary stream to send "
                    "(default: generated and cached in the build directory)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--kbps", type=int, default=4000,
                    help="mpeg2enc bitrate of the source")
    ap.add_argument("--rate", type=float, default=6.0,
                    help="bottleneck Mbit/s")
    ap.add_argument("--delay", type=float, default=20.0, help="one way, ms")
    ap.add_argument("--queue", type=int, default=40, help="packets")
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--on", type=float, default=10.0)
    ap.add_argument("--off", type=float, default=10.0)
    ap.add_argument("--first-on", type=float, default=10.0)
    ap.add_argument("--backoff", type=float, default=0.5)
    ap.add_argument("--recovery", type=int, default=200000)
    ap.add_argument("--min-bitrate", type=int, default=1500000)
    a = ap.parse_args()
    if a.cmd == "send":
        cmd_send(a)
    elif a.cmd == "recv":
        cmd_recv(a)
    elif a.cmd == "analyse":
        analyse_dir(a.raw, a.out)
    else:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
        main_run(a)


if __name__ == "__main__":
    main()
