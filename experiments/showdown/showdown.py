#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The showdown: one clip over twoflow and its peers on the same emulated
link, scenario by scenario (issue 28, item 4; README.md here).

Systems (each started fresh per scenario, the same link and seed):
  twoflow-ctcp  twoflow-server + twoflow-proxy --fetch, cTCP/rUDP, defaults
  twoflow-erap  the same with --essential erap (ERAP/rUDP)
  srt-120       filesrc ! tsparse set-timestamps ! clocksync ! srtsink
                latency=120 (caller) -> srtsrc (listener) latency=120
  srt-1000      the same with latency=1000
  rist          ... ! clocksync ! rtpmp2tpay ! ristsink -> ristsrc !
                rtpmp2tdepay (defaults: 1000 ms receiver buffer)
  tcp           real-time TCP: ... ! clocksync ! tcpclientsink ->
                tcpserversrc (the namespace's default TCP, bbr here)
The peers send the clip's MPEG-TS paced at real time by its PCR.
Every receiver logs the CLOCK_MONOTONIC time each coded frame leaves its
video parser (the showdownarrivals tracer; in twoflow-proxy: the parser
before the output muxer) and keeps the stream it got (the peers: the TS
as received; twoflow: the fetched .ts); analysis.py decodes it and
scores it against the clip (freeze-aware PSNR, frames shown, stall,
start-up). The emulator's counters give the bytes on the link.

Link (fwd = server -> client, rev copies the delay): 10 Mbit/s, 20 ms
each way (RTT 40 ms), 80-packet drop-tail queue; scenarios change it:
  clean; loss0.5 loss1 loss3 loss5 (random, data direction);
  burst (Gilbert-Elliott p=0.0025 r=0.25: mean bursts of 4, ~1 % loss);
  step (10 -> 1.5 Mbit/s at 8 s, back to 10 at 20 s after the request);
  bulk-cubic, bulk-bbr (5 Mbit/s, one iperf3 flow started 3 s earlier);
  rtt200 (100 ms each way).
Beyond those (only when named): cap2 (2 Mbit/s throughout), loss1-rtt200,
  jitter10 (0-10 ms extra delay per packet, no reordering), bulk2-cubic
  (two cubic flows on 5 Mbit/s).

  sudo experiments/showdown/showdown.py [--out DIR] [--clips mpeg2 h264]
       [--systems ...] [--scenarios ...] [--seed 1] [--playout-ms 200]
       [--keep] [--doc] [--server-arg=--enhanced-rate=total ...]
  sudo experiments/showdown/showdown.py --smoke --check   (the meson test)
  sudo experiments/showdown/showdown.py --reanalyse DIR   (runs kept with --keep)

Writes DIR/showdown.json, showdown.md, showdown-CLIP.png (default DIR
/tmp/twoflow-showdown); --doc also to experiments/showdown/results/ and
the generated block of docs/results.md, "Showdown", where these runs
replace the recorded ones of the same clip, scenario and system (the
others stay: `--systems twoflow-ctcp twoflow-erap --doc` updates twoflow's
rows beside the recorded peers'); `report.py [--doc] SHOWDOWN.JSON...`
redoes the tables and plots from JSON files, merged the same way.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
from twoflowlab import build_dir  # noqa: E402
from twoflowlab.checks import wait_log  # noqa: E402
from twoflowlab.testbed import (GilbertElliott, Link, SkipTest,  # noqa: E402
                                Testbed, check_environment)

CLIPS = {"mpeg2": ("mpeg2-360p.ts", "mpeg2"), "h264": ("h264-aac-360p.ts", "h264"),
         "mpeg2-10s": ("mpeg2-360p-10s.ts", "mpeg2")}     # (file, codec)
SYSTEMS = ["twoflow-ctcp", "twoflow-erap", "srt-120", "srt-1000", "rist", "tcp"]
RATE, DELAY, QUEUE = 10e6, 20, 80
SCENARIOS = {
    "clean": {},
    "loss0.5": {"loss": 0.005},
    "loss1": {"loss": 0.01},
    "loss3": {"loss": 0.03},
    "loss5": {"loss": 0.05},
    "burst": {"ge": (0.0025, 0.25)},
    # after the request: the runners start the request 1 s after the emulator
    "step": {"schedule": [(8 + 1.0, 1.5e6), (20 + 1.0, 10e6)]},
    "bulk-cubic": {"rate": 5e6, "bulk": "cubic"},
    "bulk-bbr": {"rate": 5e6, "bulk": "bbr"},
    "rtt200": {"delay": 100},
}
# beyond the list (not run by default): conditions the scenarios
# above do not cover, for a check on links the controller was not tuned on
EXTRA_SCENARIOS = {
    "cap2": {"rate": 2e6},                      # a path below the clip's rate
    "loss1-rtt200": {"loss": 0.01, "delay": 100},
    "jitter10": {"jitter": 10},                 # 0-10 ms per packet, in order
    "bulk2-cubic": {"rate": 5e6, "bulk": "cubic", "bulk_flows": 2},
    # 2 % random loss both ways: ACKs, NACKs and receiver reports lost too
    "loss2-both": {"loss": 0.02, "rev_loss": 0.02},
    # a bloated 5 Mbit/s link (500 packets, 1.2 s of queue) beside a bulk
    # cubic flow that fills it
    "bloat-cubic": {"rate": 5e6, "bulk": "cubic", "queue": 500},
}
PORT_ESS, PORT_ENH, PORT_SRT, PORT_RIST, PORT_TCP, PORT_CTL = 7000, 7100, 7200, 7300, 7400, 5500
PORT_BULK = 5201
FRAME_S = 0.04
SERVER_ARGS = []   # --server-arg (set in main)
REGISTRY = ["registry.bin"]   # one for every process of a run (set in main)
LINGER_S = 2.5     # a peer's sender keeps its transport open after the clip
MEDIA_PORTS = (7000, 7499)
# counted apart (the emulator's first match wins): twoflow's essential and
# enhanced flows, the peers' ports
TRACK_ESS, TRACK_ENH, TRACK_PEERS = (7000, 7099), (7100, 7199), (7200, 7499)
BULK_LEAD = 3.0


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def ensure_media(media, smoke_only=False):
    env = dict(os.environ, SHOWDOWN_SMOKE_ONLY="1" if smoke_only else "0")
    subprocess.run([os.path.join(ROOT, "scripts", "make-showdown-media.sh"), media],
                   check=True, env=env)


def gst_env(build, workdir, arrivals=None):
    env = dict(os.environ)
    env["GST_PLUGIN_PATH_1_0"] = os.pathsep.join(
        [os.path.join(build, "gst"), os.path.join(build, "experiments", "showdown")])
    env["GST_PLUGIN_PATH"] = env["GST_PLUGIN_PATH_1_0"]
    env["GST_REGISTRY_1_0"] = REGISTRY[0]
    env.setdefault("GST_DEBUG", "*:1")
    env.pop("GST_TRACERS", None)
    if arrivals:
        env["GST_TRACERS"] = "showdownarrivals"
        env["TWOFLOW_ARRIVALS_FILE"] = arrivals
    return env


def stop(p, sig=signal.SIGINT, wait=5.0):
    if p is None or p.poll() is not None:
        return
    try:
        p.send_signal(sig)
        p.wait(wait)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(5)


def receiver_desc(system, codec, rx_ts):
    parse = {"mpeg2": "mpegvideoparse", "h264": "h264parse"}[codec]
    if system.startswith("srt"):
        lat = system.split("-")[1]
        src = f"srtsrc uri=srt://:{PORT_SRT} mode=listener latency={lat}"
    elif system == "rist":
        src = (f"ristsrc address=0.0.0.0 port={PORT_RIST} ! "
               "application/x-rtp,media=video,encoding-name=MP2T,clock-rate=90000 ! "
               "rtpmp2tdepay")
    else:
        src = f"tcpserversrc host=0.0.0.0 port={PORT_TCP}"
    q = "queue max-size-buffers=0 max-size-bytes=0 max-size-time=0"
    return (f"{src} ! tee name=t ! {q} ! filesink location={rx_ts} buffer-mode=2 "
            f"sync=false async=false t. ! {q} ! tsdemux ! {parse} ! "
            "fakesink sync=false async=false")


def sender_desc(system, clip, client_ip):
    src = (f"filesrc location={clip} ! tsparse set-timestamps=true alignment=7 ! "
           "clocksync name=pace")
    if system.startswith("srt"):
        lat = system.split("-")[1]
        return (f"{src} ! srtsink uri=srt://{client_ip}:{PORT_SRT} mode=caller "
                f"latency={lat} sync=false")
    if system == "rist":
        return f"{src} ! rtpmp2tpay ! ristsink address={client_ip} port={PORT_RIST}"
    return f"{src} ! tcpclientsink host={client_ip} port={PORT_TCP} sync=false"


def run_peer(tb, system, clip, codec, wd, build, timeout):
    arrivals = os.path.join(wd, "arrivals.txt")
    rx_ts = os.path.join(wd, "rx.ts")
    rlog = open(os.path.join(wd, "receiver.log"), "w")
    slog = open(os.path.join(wd, "sender.log"), "w")
    rx = tb.client.popen(["gst-launch-1.0", "-e", "-q"] +
                         receiver_desc(system, codec, rx_ts).split(),
                         env=gst_env(build, wd, arrivals), stdout=rlog,
                         stderr=subprocess.STDOUT)
    time.sleep(1.0)
    t_req = time.monotonic()
    tx = tb.server.popen(["/usr/bin/python3", os.path.join(HERE, "sender.py"), str(LINGER_S)] +
                         sender_desc(system, clip, tb.client_ip).split(),
                         env=gst_env(build, wd), stdout=slog,
                         stderr=subprocess.STDOUT)
    try:
        tx.wait(timeout)
    except subprocess.TimeoutExpired:
        stop(tx)
    # what is still in flight (buffers of up to 1 s, retransmissions)
    end = time.monotonic() + 2.0
    while time.monotonic() < end and rx.poll() is None:
        time.sleep(0.1)
    stop(rx)
    stop(tx, signal.SIGKILL)
    rlog.close()
    slog.close()
    return {"t_req": t_req, "stream": rx_ts, "arrivals": arrivals,
            "sender_rc": tx.returncode}


def run_twoflow(tb, system, clip, codec, wd, build, timeout):
    arrivals = os.path.join(wd, "arrivals.txt")
    out_ts = os.path.join(wd, "out.ts")
    videos = os.path.dirname(clip)
    essential = system.split("-")[1]
    slog = open(os.path.join(wd, "server.log"), "w")
    server = tb.server.popen(
        [os.path.join(build, "tools", "server", "twoflow-server"), "--dir", videos,
         "--port", str(PORT_CTL), "--insecure"] + SERVER_ARGS,
        env=gst_env(build, wd), stdout=slog, stderr=subprocess.STDOUT)
    # (listening: a fixed second was too short on a loaded machine, the
    # proxy's connect refused and the run scored 0 frames)
    wait_log(os.path.join(wd, "server.log"), "control port", proc=server)
    t_req = time.monotonic()
    proxy = tb.client.popen(
        [os.path.join(build, "tools", "proxy", "twoflow-proxy"),
         "--server", f"{tb.server_ip}:{PORT_CTL}", "--insecure",
         "--fetch", os.path.basename(clip), "--output", out_ts,
         "--prefix-dir", os.path.join(wd, "prefix"), "--essential", essential,
         "--essential-ports", str(PORT_ESS), "--enhanced-ports", str(PORT_ENH)],
        env=gst_env(build, wd, arrivals), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        text = proxy.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        stop(proxy, signal.SIGTERM, 15)
        text = proxy.communicate()[0]
    with open(os.path.join(wd, "proxy.log"), "w") as f:
        f.write(text or "")
    stop(server, signal.SIGTERM, 10)
    slog.close()
    fetch = {}
    for line in (text or "").splitlines():
        if line.startswith("FETCH-RESULT "):
            try:
                fetch = json.loads(line.split(" ", 1)[1])
            except ValueError:
                pass
    if not os.path.exists(out_ts) and os.path.exists(out_ts + ".part"):
        out_ts += ".part"
    return {"t_req": t_req, "stream": out_ts, "arrivals": arrivals,
            "fetch": {k: fetch.get(k) for k in ("result", "lead", "frames",
                                                 "essential_bytes", "enhanced_bytes")},
            "merge": fetch.get("merge", {})}


def link_for(sc):
    fwd = Link(rate_bps=sc.get("rate", RATE), delay_ms=sc.get("delay", DELAY),
               queue_pkts=sc.get("queue", QUEUE), loss=sc.get("loss", 0.0),
               ge=GilbertElliott(*sc["ge"]) if "ge" in sc else None,
               schedule=sc.get("schedule"), jitter_ms=sc.get("jitter", 0.0))
    rev = Link(delay_ms=sc.get("delay", DELAY), loss=sc.get("rev_loss", 0.0))
    return fwd, rev


def link_counters(summary, rows, t_start_link, clip_bps, sc):
    """Bytes on the link of the media (its ports and twoflow's control
    connection) and of the bulk flow (emulator CSV counters), and the
    shares over the interval the media was on the link."""
    res = {}

    mkey = "media"
    bkey = "bytes_%d" % PORT_BULK
    def col(r, what, ports):
        return r.get("%s_%d-%d" % (what, ports[0], ports[1]), 0)

    def media_of(r, what="bytes"):
        # runs before the ports were split had one column for them all
        return (col(r, what, MEDIA_PORTS) + col(r, what, TRACK_ESS) + col(r, what, TRACK_ENH)
                + col(r, what, TRACK_PEERS))
    rows = [dict(r, media=media_of(r) + r.get("bytes_%d" % PORT_CTL, 0),
                 media_drops=media_of(r, "drops"))
            for r in rows]
    fwd = [r for r in rows if r["dir"] == "fwd"]
    rev = [r for r in rows if r["dir"] == "rev"]
    res["media_fwd_bytes"] = int(sum(r.get(mkey, 0) for r in fwd))
    res["media_rev_bytes"] = int(sum(r.get(mkey, 0) for r in rev))
    res["link_fwd_bytes"] = int(sum(r.get("delivered_bytes", 0) for r in fwd))
    res["link_drops"] = int(sum(r.get("drops_queue", 0) + r.get("drops_loss", 0)
                                for r in fwd))
    res["essential_fwd_bytes"] = int(sum(col(r, "bytes", TRACK_ESS) for r in fwd))
    res["enhanced_fwd_bytes"] = int(sum(col(r, "bytes", TRACK_ENH) for r in fwd))
    if sc.get("schedule"):
        res.update(step_link(fwd, sc, clip_bps))
    # (more than a packet per 100 ms: a teardown's stray ACK long after the
    # clip stretched the interval to minutes and the share to 0)
    active = [r for r in fwd if r.get(mkey, 0) > 1500]
    if active:
        t0, t1 = active[0]["time_s"], active[-1]["time_s"]
        win = [r for r in fwd if t0 <= r["time_s"] <= t1]
        dt = max(1e-9, (t1 - t0) + 0.1)
        res["media_rate_bps"] = round(sum(r.get(mkey, 0) for r in win) * 8 / dt)
        if sc.get("bulk"):
            # the share in steady state: the second half of the media's time
            # on the link (twoflow's first segment goes ahead alone at cTCP's
            # or ERAP's start-up rate); the whole interval as *_all
            fair = min(sc.get("rate", RATE) / (1 + sc.get("bulk_flows", 1)), clip_bps)
            tm = (t0 + t1) / 2
            half = [r for r in win if r["time_s"] >= tm]
            dh = max(1e-9, (t1 - tm) + 0.1)
            media_h = sum(r.get(mkey, 0) for r in half) * 8 / dh
            tcp_h = sum(r.get(bkey, 0) for r in half) * 8 / dh
            tcp = sum(r.get(bkey, 0) for r in win) * 8 / dt
            res.update(fair_share_bps=round(fair),
                       media_rate_steady_bps=round(media_h), bulk_rate_bps=round(tcp_h),
                       fair_ratio=round(media_h / fair, 3),
                       bulk_rate_all_bps=round(tcp),
                       fair_ratio_all=round(res["media_rate_bps"] / fair, 3),
                       window_link_s=[round(t0, 1), round(t1 + 0.1, 1)])
    return res


def step_link(fwd, sc, clip_bps):
    """The capacity step seen on the link (emulator time, the request 1 s
    after its start): how long after the drop the media's packets still
    overflowed the queue (the last media drop before the capacity
    returns), and how long after the return the media's rate over 1 s
    first reached 0.9 x the clip's mean rate (the rate back), with the
    media's mean rate during the dip."""
    (t_down, _), (t_up, _) = sc["schedule"][0], sc["schedule"][-1]
    out = {}
    dips = [r for r in fwd if t_down <= r["time_s"] - 0.1 < t_up]
    last_drop = max((r["time_s"] for r in dips if r.get("media_drops", 0) > 0), default=None)
    out["step_overflow_s"] = round(last_drop - t_down, 2) if last_drop is not None else 0.0
    out["step_dip_media_bps"] = round(sum(r.get("media", 0) for r in dips) * 8 /
                                      max(1e-9, t_up - t_down))
    after = [r for r in fwd if r["time_s"] - 0.1 >= t_up]
    back = None
    for i in range(len(after)):
        win = after[i:i + 10]
        if len(win) < 10:
            break
        if sum(r.get("media", 0) for r in win) * 8 / 1.0 >= 0.9 * clip_bps:
            back = round(win[-1]["time_s"] - t_up, 2)
            break
    out["step_rate_back_s"] = back
    return out


def run_scenario(a, tb, scname, clip, name, codec, ref, outdir):
    from analysis import analyse
    sc = SCENARIOS[scname] if scname in SCENARIOS else EXTRA_SCENARIOS[scname]
    tb.fwd, tb.rev = link_for(sc)
    rows = []
    clip_s = ref.n * FRAME_S
    clip_bps = os.path.getsize(clip) * 8 / clip_s
    for system in a.systems:
        wd = os.path.join(outdir, name, scname, system)
        shutil.rmtree(wd, ignore_errors=True)
        os.makedirs(wd)
        load = os.getloadavg()[0]
        tb.start_emulator()
        emu_t0 = tb.emulator_start
        bulk = []
        if sc.get("bulk"):
            bulk.append(tb.server.popen(["iperf3", "-s", "-1", "-p", str(PORT_BULK)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(0.3)
            bulk.append(tb.client.popen(
                ["iperf3", "-c", tb.server_ip, "-p", str(PORT_BULK), "-R", "-t", "70",
                 "-C", sc["bulk"], "-P", str(sc.get("bulk_flows", 1)), "-J"],
                stdout=open(os.path.join(wd, "iperf3.json"), "w"),
                stderr=subprocess.STDOUT))
            time.sleep(BULK_LEAD)
        t_run = time.monotonic()
        if system.startswith("twoflow"):
            r = run_twoflow(tb, system, clip, codec, wd, a.build, timeout=clip_s + 45)
        else:
            r = run_peer(tb, system, clip, codec, wd, a.build, timeout=clip_s + LINGER_S + 8)
        for p in bulk:
            stop(p, signal.SIGTERM)
        summary = tb.stop_emulator()
        shutil.copy(tb.csv_path, os.path.join(wd, "linkemu.csv"))
        csv_rows = tb.read_csv()
        start_mono = (summary or {}).get("start_monotonic_s") or emu_t0
        step_up = None
        if sc.get("schedule"):
            step_up = start_mono + sc["schedule"][-1][0]
        m = analyse(ref, r["stream"], codec, r["arrivals"], r["t_req"],
                    a.playout_ms, step_up, retimed_for(system))
        row = {"clip": name, "scenario": scname, "system": system,
               "run": a.started, "seed": a.seed, "load1": round(load, 2),
               "wall_s": round(time.monotonic() - t_run, 1),
               "t_req_link_s": round(r["t_req"] - start_mono, 3),
               "t_req_mono": r["t_req"], "step_up_mono": step_up,
               "stream": os.path.relpath(r["stream"], wd)}
        row.update(link_counters(summary, csv_rows, start_mono, clip_bps, sc))
        if "fetch" in r:
            row["fetch"] = r["fetch"]
            row["merge"] = {k: r["merge"].get(k) for k in
                            ("output-frames", "missing-p", "missing-b", "dropped", "E_f")}
        row.update(m)
        with open(os.path.join(wd, "result.json"), "w") as f:
            json.dump(row, f)
        for big in ("rx.ts", "out.ts"):
            if not a.keep and os.path.exists(os.path.join(wd, big)):
                os.unlink(os.path.join(wd, big))
        log(f"{name} {scname:10s} {system:13s} shown {m.get('shown')}/{m['N']} "
            f"PSNR {m.get('psnr_db')} lossless {m.get('lossless')} "
            f"stall {m.get('stall_s')} s start {m.get('startup_s')} s "
            f"fwd {row.get('media_fwd_bytes', 0) / 1e6:.2f} MB "
            + (f"share {row.get('fair_ratio')} " if sc.get('bulk') else "")
            + (f"recovery {m.get('recovery_s')} rate back {row.get('step_rate_back_s')} s "
               f"overflow {row.get('step_overflow_s')} s " if step_up else "")
            + f"(load {load:.1f})")
        rows.append(row)
    return rows


def retimed_for(system):
    """How far off a decoded frame's PTS is taken as tsdemux's re-timing:
    twoflow's receiver logs the source's timestamps, the peers' re-stamp
    (analysis.RETIMED_*)."""
    from analysis import RETIMED_EXACT_NS, RETIMED_LIVE_NS
    return RETIMED_EXACT_NS if system.startswith("twoflow") else RETIMED_LIVE_NS


def reanalyse(a):
    """Scores the kept runs of an earlier --out again (analysis changes)."""
    sys.path.insert(0, HERE)
    from analysis import Reference, analyse
    import report
    a.build = build_dir(a.build)
    media = a.media or os.path.join(a.build, "experiments", "showdown", "media")
    with open(os.path.join(a.reanalyse, "showdown.json")) as f:
        old = json.load(f)
    refs, rows = {}, []
    for row in old["runs"]:
        name = row["clip"]
        file, codec = CLIPS[name]
        if name not in refs:
            refs[name] = Reference(os.path.join(media, file), codec)
        wd = os.path.join(a.reanalyse, name, row["scenario"], row["system"])
        stream = os.path.join(wd, row.get("stream", "rx.ts"))
        if not os.path.exists(stream):
            rows.append(row)
            continue
        m = analyse(refs[name], stream, codec, os.path.join(wd, "arrivals.txt"),
                    row["t_req_mono"], old["meta"].get("playout_ms", a.playout_ms),
                    row.get("step_up_mono"), retimed_for(row["system"]))
        row.update(m)
        rows.append(row)
        log(f"{name} {row['scenario']:10s} {row['system']:13s} shown {m.get('shown')} "
            f"PSNR {m.get('psnr_db')} lossless {m.get('lossless')} stall {m.get('stall_s')} "
            f"start {m.get('startup_s')}")
    report.write(a.reanalyse, rows, old["meta"])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/tmp/twoflow-showdown")
    ap.add_argument("--build", default=None)
    ap.add_argument("--media", default=None, help="clip cache (default BUILD/experiments/showdown/media)")
    ap.add_argument("--clips", nargs="+", default=["mpeg2", "h264"], choices=list(CLIPS))
    ap.add_argument("--systems", nargs="+", default=SYSTEMS, choices=SYSTEMS)
    ap.add_argument("--scenarios", nargs="+", default=list(SCENARIOS),
                    choices=list(SCENARIOS) + list(EXTRA_SCENARIOS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--playout-ms", type=float, default=200.0,
                    help="extra playout delay of the display model, every system")
    ap.add_argument("--smoke", action="store_true",
                    help="clean and loss1, mpeg2, twoflow-ctcp and srt-120")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every run is sane and every system shows frames on the clean link")
    ap.add_argument("--keep", action="store_true", help="keep the received streams")
    ap.add_argument("--doc", action="store_true",
                    help="also write showdown.json/.md/-CLIP.png to experiments/showdown/results/")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="an extra twoflow-server argument (repeatable), e.g. "
                    "--server-arg=--enhanced-rate=total")
    ap.add_argument("--reanalyse", metavar="DIR",
                    help="score the runs kept (--keep) in DIR again and rewrite its results")
    a = ap.parse_args()
    if a.reanalyse:
        return reanalyse(a)
    SERVER_ARGS[:] = a.server_arg
    if a.smoke:
        a.clips, a.scenarios, a.systems = ["mpeg2-10s"], ["clean", "loss1"], ["twoflow-ctcp", "srt-120"]
    a.build = build_dir(a.build)
    try:
        check_environment()
    except SkipTest as e:
        print("SKIP:", e)
        return 77
    for e in ("srtsink", "ristsink", "tcpclientsink", "tsparse", "clocksync"):
        if subprocess.run(["gst-inspect-1.0", "--exists", e]).returncode:
            print(f"SKIP: no {e} (gstreamer1.0-plugins-bad/-base)")
            return 77
    media = a.media or os.path.join(a.build, "experiments", "showdown", "media")
    ensure_media(media, smoke_only=a.clips == ["mpeg2-10s"])
    os.makedirs(a.out, exist_ok=True)
    REGISTRY[0] = os.path.join(os.path.abspath(a.out), "registry.bin")
    # build the registry once, not in the timed processes
    subprocess.run(["gst-inspect-1.0", "srtsink"], env=gst_env(a.build, a.out),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sys.path.insert(0, HERE)
    from analysis import Reference
    import report
    t0 = time.time()
    rows = []
    a.started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    meta = {"started": a.started,
            "load_at_start": os.getloadavg(), "nproc": os.cpu_count(),
            "argv": sys.argv[1:], "playout_ms": a.playout_ms, "seed": a.seed,
            "clips": a.clips,
            "link": {"rate_bps": RATE, "rtt_ms": 2 * DELAY, "queue_pkts": QUEUE}}
    tb = Testbed(rate_bps=RATE, delay_ms=DELAY, queue_pkts=QUEUE, seed=a.seed,
                 track_ports=[TRACK_ESS, TRACK_ENH, TRACK_PEERS, PORT_BULK, PORT_CTL],
                 workdir=os.path.join(a.out, "testbed"), keep_workdir=True,
                 start_emulator=False)
    with tb:
        meta["tcp_default_cc"] = tb.client.run(
            ["sysctl", "-n", "net.ipv4.tcp_congestion_control"]).stdout.strip()
        for name in a.clips:
            clip, codec = os.path.join(media, CLIPS[name][0]), CLIPS[name][1]
            ref = Reference(clip, codec)
            log(f"reference {name}: {ref.n} frames")
            for scname in a.scenarios:
                rows += run_scenario(a, tb, scname, clip, name, codec, ref, a.out)
                report.write(a.out, rows, meta)
    meta["elapsed_s"] = round(time.time() - t0)
    meta["load_at_end"] = os.getloadavg()
    report.write(a.out, rows, meta)
    if a.doc:
        # these runs replace the recorded ones of their clip, scenario and
        # system; the rest stay (e.g. the peers' rows when only twoflow ran)
        docdir = os.path.join(HERE, "results")
        kept, metas = [], []
        try:
            with open(os.path.join(docdir, "showdown.json")) as f:
                old = json.load(f)
            kept, metas = old["runs"], report.metas_of(old)
        except (OSError, ValueError, KeyError):
            pass
        rows_doc, metas = report.merge(kept, metas, rows, [meta])
        meta_doc = metas if len(metas) > 1 else meta
        report.write(docdir, rows_doc, meta_doc)
        report.write_doc(os.path.join(ROOT, "docs", "results.md"), rows_doc, meta_doc)
    log(f"results in {a.out}/showdown.md ({meta['elapsed_s']} s)")
    if a.check:
        bad = report.sanity(rows)
        for b in bad:
            print("FAIL:", b)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
