#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""/metrics an operator graphs, and the programs' log lines (issue 26).

A server and a proxy on loopback; two HLS sessions run at once while both
/metrics are scraped:

- the text is strict Prometheus exposition (every line a HELP, a TYPE or
  a sample of a family declared before; names and label sets well formed;
  counters end in _total) and prometheus_client parses it;
- twoflow_build_info carries the meson version; per-session families
  (rates and bytes per flow, RTT, retransmissions, loss, missing frames,
  the transcoder's target) are there with sane values;
- the label sets are bounded: with TWOFLOW_METRICS_MAX_SESSIONS=1 only one
  of the two sessions has series, the other is counted as unexposed;
- every log line of both programs has an ISO 8601 UTC timestamp and a
  level, except the "TAG {json}" records scripts read;
- with stderr on the journal, an error is a journald entry with PRIORITY
  and SYSLOG_IDENTIFIER (root on a machine without journald: the test
  plays journald's two sockets under /run/systemd/journal; skipped where
  a journal runs).

  test_metrics.py SERVER PROXY MAKE_CORPUS CORPUS_DIR
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families
from twoflowlab.checks import free_port, stop_programs, wait_log  # noqa: E402

failures = []
SOURCE = os.environ.get("TWOFLOW_SOURCE_ROOT",
                        os.path.join(os.path.dirname(__file__), "../.."))
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABELS = r'\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,(?=[a-zA-Z_]))?)*\}'
VALUE = r"(?:[-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf)|NaN)"
SAMPLE = re.compile(rf"^({NAME})({LABELS})? {VALUE}$")
LOG = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z "
                 r"(error|critical|warning|notice|info|debug) \S")
RECORD = re.compile(r"^[A-Z][A-Z0-9_-]* [{\[]")


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def get(url, timeout=40):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()



def strict(text):
    """Problems of the exposition text, by line (empty: none)."""
    problems, types, helps = [], {}, set()
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
            if name in helps:
                problems.append(f"{n}: second HELP of {name}")
            helps.add(name)
        elif line.startswith("# TYPE "):
            parts = line.split(" ")
            if len(parts) != 4 or parts[3] not in ("counter", "gauge") or parts[2] in types:
                problems.append(f"{n}: bad TYPE {line!r}")
            else:
                types[parts[2]] = parts[3]
                if parts[3] == "counter" and not parts[2].endswith("_total"):
                    problems.append(f"{n}: counter {parts[2]} not _total")
        else:
            m = SAMPLE.match(line)
            if not m:
                problems.append(f"{n}: not a sample {line!r}")
            elif m.group(1) not in types:
                problems.append(f"{n}: {m.group(1)} without TYPE before")
    if not text.endswith("\n"):
        problems.append("no final newline")
    return problems


def samples(text):
    out = []
    for fam in text_string_to_metric_families(text):
        out.extend(fam.samples)
    return out


def values(smp, name, **labels):
    return [s for s in smp if s.name == name
            and all(s.labels.get(k) == v for k, v in labels.items())]


def journald(server_exe):
    """The server's error as a journald entry, stderr on a fake journal."""
    jdir = "/run/systemd/journal"
    if os.geteuid() != 0 or os.path.exists(jdir):
        print("skip  journald entries (not root, or a journal runs here)")
        return
    made = [d for d in ("/run/systemd", jdir) if not os.path.exists(d)]
    for d in made:
        os.mkdir(d)
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    native = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        stream.bind(jdir + "/stdout")
        stream.listen(1)
        native.bind(jdir + "/socket")
        native.settimeout(20)
        # the program's stderr connected to journald's stream socket, as
        # systemd does for StandardError=journal
        err = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        err.connect(jdir + "/stdout")
        # no --dir: an error after the log is set up
        p = subprocess.Popen([server_exe, "--port", "0"], stderr=err.fileno(),
                             stdout=subprocess.DEVNULL)
        err.close()
        entry = native.recv(65536).decode(errors="replace")
        p.wait(20)
        fields = dict(l.split("=", 1) for l in entry.splitlines() if "=" in l)
        check(fields.get("PRIORITY") == "3" and
              fields.get("SYSLOG_IDENTIFIER") == "twoflow-server" and
              "--dir" in fields.get("MESSAGE", "") and p.returncode != 0,
              f"journald: the error as an entry {fields}")
    finally:
        stream.close()
        native.close()
        for s in ("/stdout", "/socket"):
            if os.path.exists(jdir + s):
                os.unlink(jdir + s)
        for d in reversed(made):
            os.rmdir(d)


def main():
    server_exe, proxy_exe, make_corpus, corpus = sys.argv[1:5]
    r = subprocess.run([make_corpus, corpus], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "corpus made")
    version = re.search(r"version : '([^']+)'",
                        open(os.path.join(SOURCE, "meson.build")).read()).group(1)
    work = tempfile.mkdtemp(prefix="twoflow-metrics-")
    procs = []
    env = dict(os.environ, TWOFLOW_METRICS_MAX_SESSIONS="1")
    try:
        cport, sport, hport, rport = (free_port() for _ in range(4))
        slog, plog = os.path.join(work, "server.log"), os.path.join(work, "proxy.log")
        procs.append(subprocess.Popen(
            [server_exe, "--dir", corpus, "--port", str(cport), "--address", "127.0.0.1",
             "--http-port", str(sport), "--insecure"],
            stdout=open(slog, "w"), stderr=subprocess.STDOUT, env=env))
        check(wait_log(slog, "HTTP on port"), "server started")
        procs.append(subprocess.Popen(
            [proxy_exe, "--server", f"127.0.0.1:{cport}", "--insecure",
             "--rtsp-port", str(rport), "--http-port", str(hport),
             "--hls-dir", os.path.join(work, "hls"),
             "--prefix-dir", os.path.join(work, "prefix"), "--segment-duration", "1"],
            stdout=open(plog, "w"), stderr=subprocess.STDOUT, env=env))
        check(wait_log(plog, "HTTP on port"), "proxy started")

        # two live sessions (HLS of two videos), scraped while both run
        videos = ["h264-aac.mkv", "h264-aac.mp4"]
        threads = [threading.Thread(target=get, daemon=True,
                                    args=(f"http://127.0.0.1:{hport}/hls/{v}/index.m3u8",))
                   for v in videos]
        for th in threads:
            th.start()
        stext = ptext = ""
        t0 = time.monotonic()
        # until both sessions run and data flowed (loaded machine: poll)
        while time.monotonic() - t0 < 30:
            stext = get(f"http://127.0.0.1:{sport}/metrics")
            ptext = get(f"http://127.0.0.1:{hport}/metrics")
            ps, ss = samples(ptext), samples(stext)
            if (values(ss, "twoflow_server_sessions") and
                    values(ss, "twoflow_server_sessions")[0].value == 2 and
                    values(ps, "twoflow_proxy_sessions")[0].value == 2 and
                    all(s.value > 0 for s in
                        values(ps, "twoflow_proxy_session_received_bytes_total") +
                        values(ss, "twoflow_server_session_sent_bytes_total")) and
                    len(values(ps, "twoflow_proxy_session_received_bytes_total")) == 2 and
                    len(values(ss, "twoflow_server_session_sent_bytes_total")) == 2):
                break
            time.sleep(0.3)
        with open(os.path.join(work, "server.metrics"), "w") as f:
            f.write(stext)
        with open(os.path.join(work, "proxy.metrics"), "w") as f:
            f.write(ptext)

        for who, text in (("server", stext), ("proxy", ptext)):
            p = strict(text)
            check(not p, f"{who} /metrics is strict exposition text ({len(text.splitlines())} lines)"
                  + (f": {p[:5]}" if p else ""))
            smp = samples(text)     # raises if prometheus_client cannot parse it
            check(len(smp) > 20, f"{who} /metrics parsed by prometheus_client: {len(smp)} samples")
            bi = values(smp, "twoflow_build_info", version=version)
            check(len(bi) == 1 and bi[0].value == 1 and
                  bi[0].labels.get("program") == f"twoflow-{who}" and
                  bi[0].labels.get("gstreamer", "").startswith("1."),
                  f"{who}: twoflow_build_info{{version=\"{version}\"}}: "
                  f"{bi[0].labels if bi else None}")

        ss, ps = samples(stext), samples(ptext)
        # bounded: one session shown, one counted
        for who, smp in (("server", ss), ("proxy", ps)):
            shown = {s.labels["session"] for s in smp if "session" in s.labels}
            unexp = values(smp, f"twoflow_{who}_sessions_unexposed")
            check(values(smp, f"twoflow_{who}_sessions")[0].value == 2 and len(shown) == 1
                  and unexp and unexp[0].value == 1,
                  f"{who}: 2 sessions, series of {len(shown)} (cap 1), "
                  f"unexposed {unexp[0].value if unexp else None}")

        def one(smp, name, **labels):
            v = values(smp, name, **labels)
            return v[0].value if len(v) == 1 else None

        for flow in ("essential", "enhanced"):
            b = one(ss, "twoflow_server_session_sent_bytes_total", flow=flow)
            r = one(ss, "twoflow_server_session_send_rate_bits_per_second", flow=flow)
            rtt = one(ss, "twoflow_server_session_rtt_seconds", flow=flow)
            check(b and b > 0 and r and r > 0 and rtt is not None and 0 < rtt < 5,
                  f"server {flow}: sent {b} bytes, rate {r} bit/s, RTT {rtt} s")
            rx = one(ss, "twoflow_server_session_retransmissions_total", flow=flow)
            check(rx is not None and rx >= 0, f"server {flow}: {rx} retransmissions")
            pb = one(ps, "twoflow_proxy_session_received_bytes_total", flow=flow)
            pr = one(ps, "twoflow_proxy_session_rate_bits_per_second", flow=flow)
            check(pb and pb > 0 and pr is not None and pr >= 0,
                  f"proxy {flow}: received {pb} bytes, rate {pr} bit/s")
        check(one(ss, "twoflow_server_session_lost_packets_total", flow="enhanced") is not None
              and one(ss, "twoflow_server_session_loss_ratio", flow="enhanced") is not None,
              "server: the enhanced flow's lost packets and loss ratio")
        tt = one(ss, "twoflow_server_session_transcoder_target_bits_per_second")
        check(tt and tt > 0, f"server: transcoder target {tt} bit/s")
        miss = values(ps, "twoflow_proxy_session_missing_frames_total")
        check(sorted(s.labels["type"] for s in miss) == ["b", "i", "p", "unknown"]
              and all(s.value >= 0 for s in miss),
              f"proxy: missing frames per type {[s.value for s in miss]}")
        prtt = one(ps, "twoflow_proxy_session_rtt_seconds", flow="enhanced")
        check(prtt is not None and 0 < prtt < 5, f"proxy: enhanced RTT {prtt} s")
        for name in ("twoflow_proxy_session_damaged_frames_total",
                     "twoflow_proxy_session_lost_packets_total",
                     "twoflow_proxy_session_retransmissions_recovered_total",
                     "twoflow_proxy_session_late_packets_total"):
            check(values(ps, name), f"proxy: {name}")

        for th in threads:
            th.join(60)
    finally:
        stop_programs(("twoflow-server", "twoflow-proxy"), procs, timeout=20,
                      check=check)

    for who, path in (("server", slog), ("proxy", plog)):
        with open(path) as f:
            lines = f.read().splitlines()
        # GStreamer's own debug output (GST_DEBUG) is not the programs' log
        own = [l for l in lines if not re.match(r"^\d+:\d\d:\d\d\.\d+ ", l)]
        bad = [l for l in own if not (LOG.match(l) or RECORD.match(l))]
        check(len(own) >= 3 and not bad,
              f"{who}: {len(own)} log lines, each timestamped with a level or a record"
              + (f"; not: {bad[:3]}" if bad else ""))
    journald(server_exe)
    if failures:
        print(f"{len(failures)} failure(s); logs in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
