#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""rUDP cedes bandwidth under congestion (two-flow paper Fig. 14): one
MPEG-2 session through twoflow-server and twoflow-proxy across the emulated
WAN, and a bulk TCP flow (iperf3, Reno) that joins for a while. The
server forwards the essential transport's (cTCP's) congestion events to
the enhanced path's ratetranscoder, which lowers the enhanced flow's
bitrate (rexmt/dupack back off multiplicatively, recovery is additive): the
rUDP flow gives up bandwidth to the TCP flow while the congestion lasts and
takes it back afterwards.

Two runs of the same session, side by side: without and with the cross
traffic. Setup (root; traffic only inside the twoflowlab.testbed
namespaces): a generated MPEG-2 video (videotestsrc smpte moving, 352x288,
25 fps, GOP 12 IBBPBB..., mpeg2enc at --kbps), segments of --segment s
(the enhanced flow starts one segment after the fetch), cTCP essential
flow; the pipe (server -> proxy) --capacity bit/s, 20 ms each way,
drop-tail queue of 100 ms; the TCP flow from the server's to the proxy's
namespace from --cross-on to --cross-off s after the fetch started.

Output (--out): cedes.json (per run: 1 s rates of the essential, enhanced
and cross flows from the emulator, the transcoder's and the transports'
end stats, the merge's damage; the means inside and outside the cross
interval) and cedes.png.

  sudo experiments/system/cedes.py --build build --out /tmp/twoflow-cedes --doc
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
from tables import ENH_BASE, ESS_BASE, PORTS  # noqa: E402
from twoflowlab.records import tagged  # noqa: E402
from twoflowlab.systembed import SystemTestbed  # noqa: E402

CROSS_PORT = 5201
FPS = 25


def ensure_video(path, seconds, kbps):
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    part = path + ".part"
    subprocess.run(
        ["gst-launch-1.0", "-q", "videotestsrc", "pattern=smpte", "horizontal-speed=5",
         f"num-buffers={int(seconds * FPS)}", "!",
         "video/x-raw,width=352,height=288,framerate=25/1", "!",
         "mpeg2enc", "format=3", f"bitrate={kbps}", "b-per-refframe=2",
         "min-gop-size=12", "max-gop-size=12", "!", "mpegvideoparse", "!",
         "filesink", f"location={part}"], check=True)
    os.rename(part, path)
    return path


def one_run(args, build, videos, name, cross, workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    ports = PORTS + [CROSS_PORT]
    iperf = None
    with SystemTestbed(build, workdir, videos, args.capacity, 100.0, ports,
                       ["--enhanced-rate", args.enhanced_rate]) as st:
        t0 = time.monotonic()
        fetch = st.proxy(["--segment-duration", str(args.segment), "--essential", "ctcp",
                          "--fetch", name, "--output", os.path.join(workdir, "out.m2v"),
                          "--prefix-dir", os.path.join(workdir, "prefix"),
                          "--essential-ports", str(ESS_BASE), "--enhanced-ports",
                          str(ENH_BASE)])
        if cross:
            srv = st.tb.client.popen(["iperf3", "-s", "-1", "-p", str(CROSS_PORT)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(max(0, args.cross_on - (time.monotonic() - t0)))
            iperf = st.tb.server.popen(
                ["iperf3", "-c", st.tb.client.ip, "-p", str(CROSS_PORT), "-C", "reno",
                 "-t", str(args.cross_off - args.cross_on), "-J"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            text = fetch.communicate(timeout=args.seconds + args.segment + 90)[0]
        except subprocess.TimeoutExpired:
            fetch.kill()
            text = fetch.communicate()[0]
        with open(os.path.join(workdir, "proxy.log"), "w") as f:
            f.write(text)
        if iperf:
            iperf.communicate(timeout=60)
            srv.wait(timeout=10)
    csv_rows = st.tb.read_csv("fwd")
    off = t0 - st.summary.get("start_monotonic_s", t0 - 0.5)
    res = (tagged(text, "FETCH-RESULT") or [{"result": text[-300:]}])[0]
    with open(os.path.join(workdir, "server.log")) as f:
        end = (tagged(f.read(), "SESSION-END") or [{}])[0]
    dt = (csv_rows[1]["time_s"] - csv_rows[0]["time_s"]) if len(csv_rows) > 1 else 0.1

    def series(match):
        cols = [c for c in csv_rows[0] if c.startswith("bytes_") and match(c)]
        per = {}
        for r in csv_rows:
            t = r["time_s"] - off
            if t >= 0:
                per[int(t)] = per.get(int(t), 0) + sum(r[c] for c in cols)
        last = max(per) if per else 0
        return [round(per.get(k, 0) * 8 / 1e3) for k in range(last + 1)]   # kbit/s

    ess = series(lambda c: str(ESS_BASE) in c)
    enh = series(lambda c: str(ENH_BASE) in c)
    xt = series(lambda c: str(CROSS_PORT) in c)
    _ = dt
    m = res.get("merge", {})
    tc = end.get("transcoder_stats", {})
    es = end.get("essential_stats", {})
    return {"cross": cross, "result": res.get("result"),
            "rates_kbps": {"essential": ess, "enhanced": enh, "cross": xt},
            "E_f": m.get("E_f"), "frames": m.get("output-frames"),
            "rudp_lost": res.get("rudpsrc", {}).get("lost"),
            "transcoder": {k: tc.get(k) for k in (
                "events", "events-rexmt", "events-dupack", "events-recovered",
                "events-ignored", "frames-reencoded", "frames-passed", "frames-dropped",
                "floor-bitrate", "input-bitrate", "max-reaction-latency")},
            "retransmissions": es.get("retransmissions"), "timeouts": es.get("timeouts"),
            "recoveries": es.get("recoveries"),
            "forwarded_events": end.get("forwarded_events"),
            "link_drops": (st.summary.get("fwd", {}).get("drops_queue") or 0)}


def mean(v, a, b):
    s = v[int(a):int(b)]
    return round(sum(s) / len(s)) if s else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="/tmp/twoflow-cedes")
    ap.add_argument("--seconds", type=float, default=60.0, help="video length, s")
    ap.add_argument("--kbps", type=int, default=1500, help="mpeg2enc bitrate, kbit/s")
    ap.add_argument("--capacity", type=float, default=3e6, help="pipe, bit/s")
    ap.add_argument("--segment", type=float, default=5.0)
    ap.add_argument("--cross-on", type=float, default=25.0)
    ap.add_argument("--cross-off", type=float, default=45.0)
    ap.add_argument("--enhanced-rate", choices=["smooth", "peak"], default="smooth",
                    help="the server's pacing of the enhanced flow (smooth: its default; "
                    "peak: the level above 1.25 x the 1 s peak, as before the smoothing)")
    ap.add_argument("--doc", action="store_true",
                    help="write experiments/system/results/cedes.{json,png} and the section "
                    "in docs/results.md")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    os.environ["GST_PLUGIN_PATH"] = os.path.join(build, "gst")
    os.environ.setdefault("TWOFLOW_BUILD_ROOT", build)
    os.makedirs(args.out, exist_ok=True)
    videos = os.path.join(args.out, "videos")
    name = f"smpte-{int(args.seconds)}s-{args.kbps}k.m2v"
    ensure_video(os.path.join(videos, name), args.seconds, args.kbps)
    runs = [one_run(args, build, videos, name, cross,
                    os.path.join(args.out, "cross" if cross else "alone"))
            for cross in (False, True)]
    a, b = args.cross_on, args.cross_off
    # after the cross traffic: as long as it lasted, within the video
    c = min(b + (b - a), args.seconds + args.segment)
    for r in runs:
        v = r["rates_kbps"]
        r["means_kbps"] = {
            "before": {k: mean(v[k], args.segment + 2, a) for k in v},
            "during": {k: mean(v[k], a, b) for k in v},
            "after": {k: mean(v[k], b, c) for k in v}}
        print(json.dumps({k: v for k, v in r.items() if k != "rates_kbps"}), flush=True)
    res = {"capacity_bps": args.capacity, "segment_s": args.segment, "kbps": args.kbps,
           "enhanced_rate": args.enhanced_rate,
           "seconds": args.seconds, "cross_on": a, "cross_off": b, "runs": runs}
    with open(os.path.join(args.out, "cedes.json"), "w") as f:
        json.dump(res, f, indent=1)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 3.8), dpi=80)
    alone, cross = runs
    ax.plot(alone["rates_kbps"]["enhanced"], color="tab:green", ls="--",
            label="enhanced (rUDP), no cross traffic")
    ax.plot(cross["rates_kbps"]["enhanced"], color="tab:green",
            label="enhanced (rUDP), with the TCP flow")
    ax.plot(cross["rates_kbps"]["essential"], color="tab:blue", lw=0.8,
            label="essential (cTCP), with the TCP flow")
    ax.plot(cross["rates_kbps"]["cross"], color="tab:red", label="TCP flow (iperf3, Reno)")
    ax.axvspan(a, b, color="grey", alpha=0.15)
    ax.axhline(args.capacity / 1e3, color="grey", ls=":", lw=0.8, label="pipe")
    ax.set_xlabel("time since the fetch started (s)")
    ax.set_ylabel("kbit/s at the bottleneck (1 s)")
    ax.set_title(f"rUDP cedes bandwidth: MPEG-2 {args.kbps} kbit/s, "
                 f"{args.capacity / 1e6:g} Mbit/s pipe", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    png = os.path.join(args.out, "cedes.png")
    fig.savefig(png)
    text = doc_text(res)
    print(text)
    if args.doc:
        d = os.path.join(HERE, "results")
        shutil.copy(png, os.path.join(d, "cedes.png"))
        with open(os.path.join(d, "cedes.json"), "w") as f:
            json.dump(res, f, indent=1)
        import report_tables
        report_tables.replace_section("cedes", text)


def doc_text(res):
    alone, cross = res["runs"]
    lines = ["| run | enhanced before / during / after (kbit/s) | essential during | "
             "TCP flow during | transcoder events (rexmt, dupack) | frames re-encoded | "
             "cTCP rexmits | E_f | rUDP lost |", "|---|---|---|---|---|---|---|---|---|"]
    for name, r in (("no cross traffic", alone), ("TCP flow joins", cross)):
        m, t = r["means_kbps"], r["transcoder"]
        lines.append(
            f"| {name} | {m['before']['enhanced']} / {m['during']['enhanced']} / "
            f"{m['after']['enhanced']} | {m['during']['essential']} | {m['during']['cross']} | "
            f"{t.get('events')} ({t.get('events-rexmt')}, {t.get('events-dupack')}) | "
            f"{t.get('frames-reencoded')} | {r['retransmissions']} | {r['E_f']} | "
            f"{r['rudp_lost']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
