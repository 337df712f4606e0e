#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A proxy behind NAT (suite 'system-net', root; exit 77 otherwise).

Three namespaces: the server (10.201.0.1), a router that masquerades
(nftables) what the proxy's side (10.202.0.0/24) sends to the server's and
forwards only replies back (no inbound connection reaches the proxy; the
server has no route to 10.202.0.0/24 at all), and the proxy (10.202.0.2,
default route via the router). The server sees the proxy as 10.201.0.2.

* direct mode (the server connects to the proxy) fails behind the NAT;
* --nat (the proxy connects out; ctcpsink listen=true on the server)
  stores the first segment over cTCP, byte-identical to the same prestage
  done without NAT (in the server's namespace), and the server reports
  the masqueraded address as the peer;
* --nat with plain TCP as the essential transport, the same;
* --nat --fetch with --essential erap and with --essential ctcp, each with
  the enhanced rUDP flow (the proxy says hello from its ERAP and rUDP
  sockets, the server learns the NAT's address and port from the hellos):
  every frame arrives, the output equals the same fetch without NAT
  (byte for byte), E_f 0; in plaintext (--insecure), and ERAP over TLS
  (keys from the control channel: a sealed ERAP hello, SRTCP rUDP hellos);
* an RTSP session served by a proxy behind the NAT (ffprobe in the
  proxy's namespace counts every frame).

usage: test_system_nat.py SERVER_EXE PROXY_EXE
"""
import filecmp
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from twoflowlab import testbed as tbm
from twoflowlab.checks import wait_log
from twoflowlab.checks import check, failures, mpeg2_clip_argv, result_line

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def sh(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


# the router answers a connection to itself with a reset (as the server's
# connect in direct mode would otherwise hang until TCP gives up)
NFT_RULES = """
table ip twoflow_nat {
  chain masq {
    type nat hook postrouting priority srcnat; policy accept;
    oifname "rtw" masquerade
  }
}
table inet twoflow_fw {
  chain through_router {
    type filter hook forward priority filter; policy drop;
    ct state established,related accept
    iifname "rtl" oifname "rtw" accept
  }
  chain to_router {
    type filter hook input priority filter; policy drop;
    ct state established,related accept
    iifname "lo" accept
    meta l4proto tcp reject with tcp reset
    reject
  }
}
"""


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Nat:
    def __init__(self):
        tag = "%d-%04x" % (os.getpid(), random.getrandbits(16))
        self.srv, self.rtr, self.prx = ("tfnat-%s-%s" % (n, tag)
                                        for n in ("srv", "rtr", "prx"))

    def __enter__(self):
        try:
            return self._setup()
        except BaseException:
            self.__exit__()
            raise

    def _setup(self):
        for ns in (self.srv, self.rtr, self.prx):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", self.srv, "link", "add", "sv0", "type", "veth", "peer",
           "name", "rtw", "netns", self.rtr)
        sh("ip", "-n", self.prx, "link", "add", "px0", "type", "veth", "peer",
           "name", "rtl", "netns", self.rtr)
        for ns, dev, addr in ((self.srv, "sv0", "10.201.0.1/24"),
                              (self.rtr, "rtw", "10.201.0.2/24"),
                              (self.rtr, "rtl", "10.202.0.1/24"),
                              (self.prx, "px0", "10.202.0.2/24")):
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", self.prx, "route", "add", "default", "via", "10.202.0.1")
        sh("ip", "netns", "exec", self.rtr, "sysctl", "-qw",
           "net.ipv4.ip_forward=1")
        r = subprocess.run(["ip", "netns", "exec", self.rtr, "nft", "-f", "-"],
                           input=NFT_RULES, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("nft: " + r.stderr.strip())
        return self

    def __exit__(self, *exc):
        for ns in (self.srv, self.rtr, self.prx):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def main():
    try:
        tbm.check_environment()
    except tbm.SkipTest as e:
        print(f"skip: {e}")
        return 77
    if not shutil.which("nft"):
        print("skip: nft not installed")
        return 77
    server_exe, proxy_exe = (os.path.abspath(a) for a in sys.argv[1:3])
    work = tempfile.mkdtemp(prefix="twoflow-system-nat-")
    videos = os.path.join(work, "videos")
    os.makedirs(videos)
    server = None
    servers = []
    try:
        r = subprocess.run(mpeg2_clip_argv(f"{videos}/ball.m2v", 250, gop12=True),
                           capture_output=True, timeout=120)
        check(r.returncode == 0, "generated a 250-frame MPEG-2 stream")
        r = subprocess.run(mpeg2_clip_argv(f"{videos}/ball100.m2v", 100, gop12=True),
                           capture_output=True, timeout=120)
        check(r.returncode == 0, "generated a 100-frame MPEG-2 stream")
        certs = os.path.join(work, "certs")
        subprocess.run([os.path.join(SOURCE, "scripts", "make-test-certs.sh"), certs,
                        "10.201.0.1"], check=True, capture_output=True)
        token = open(os.path.join(certs, "tokens")).read().split()[1]
        with Nat() as nat:
            # the proxy's side cannot be reached from the server's
            r = subprocess.run(["ip", "netns", "exec", nat.srv, "ping", "-c1", "-W1",
                                "10.202.0.2"], capture_output=True)
            check(r.returncode != 0, "no route from the server to the proxy's network")
            slog_path = os.path.join(work, "server.log")
            slog = open(slog_path, "w")
            server = subprocess.Popen(
                ["ip", "netns", "exec", nat.srv, server_exe, "--dir", videos,
                 "--port", "5500", "--address", "10.201.0.1", "--insecure"],
                stdout=slog, stderr=subprocess.STDOUT)
            # a second server over TLS (keys from the control channel)
            tserver = subprocess.Popen(
                ["ip", "netns", "exec", nat.srv, server_exe, "--dir", videos,
                 "--port", "5501", "--address", "10.201.0.1",
                 "--tls-cert", os.path.join(certs, "server.pem"),
                 "--tls-key", os.path.join(certs, "server.key"),
                 "--tokens", os.path.join(certs, "tokens")],
                stdout=slog, stderr=subprocess.STDOUT)
            servers.append(tserver)
            wait_log(slog_path, "control port", count=2)

            def proxy(ns, prefix, *extra):
                return subprocess.run(
                    ["ip", "netns", "exec", ns, proxy_exe, "--server", "10.201.0.1:5500",
                     "--insecure", "--segment-duration", "2", "--prefix-dir",
                     os.path.join(work, prefix)] + list(extra),
                    capture_output=True, text=True, timeout=60)

            # reference: the same prestage with no NAT (server's namespace)
            ref = proxy(nat.srv, "ref", "--prestage", "ball.m2v")
            ref_file = os.path.join(work, "ref", "ball.m2v.prefix.twf")
            check(ref.returncode == 0 and os.path.getsize(ref_file) > 0,
                  "prestage without NAT stored the first segment (%d B)"
                  % (os.path.getsize(ref_file) if os.path.exists(ref_file) else -1))

            # direct mode behind the NAT: the server's connection is refused
            t0 = time.monotonic()
            d = proxy(nat.prx, "direct", "--prestage", "ball.m2v")
            check(d.returncode != 0 and '"result":"ok"' not in d.stdout,
                  "direct mode behind the NAT fails (rc %d, %.1f s)"
                  % (d.returncode, time.monotonic() - t0))

            for ess in ("ctcp", "tcp"):
                t0 = time.monotonic()
                n = proxy(nat.prx, "nat-" + ess, "--nat", "--essential", ess,
                          "--prestage", "ball.m2v")
                f = os.path.join(work, "nat-" + ess, "ball.m2v.prefix.twf")
                ok = n.returncode == 0 and os.path.exists(f)
                check(ok and '"result":"ok"' in n.stdout,
                      "--nat %s prestage behind the NAT succeeds (%.1f s)"
                      % (ess, time.monotonic() - t0))
                if not ok:
                    print(n.stdout[-2000:], n.stderr[-2000:])
                check(ok and filecmp.cmp(f, ref_file, shallow=False),
                      "--nat %s: the stored segment equals the one without NAT (%d B)"
                      % (ess, os.path.getsize(f) if os.path.exists(f) else -1))
            # whole fetches (both flows) of a 100-frame clip: the reference
            # without NAT, then behind it, ERAP and cTCP, plaintext and TLS
            def fetch(ns, tag, *extra, server="10.201.0.1:5500", sec=("--insecure",)):
                out = os.path.join(work, tag + ".m2v")
                r = subprocess.run(
                    ["ip", "netns", "exec", ns, proxy_exe, "--server", server]
                    + list(sec) + ["--segment-duration", "2", "--prefix-dir",
                                   os.path.join(work, "p-" + tag)]
                    + list(extra) + ["--fetch", "ball100.m2v", "--output", out],
                    capture_output=True, text=True, timeout=60)
                rep = result_line(r.stdout, "FETCH-RESULT")
                if r.returncode != 0 or rep is None:
                    print(r.stdout[-2000:], r.stderr[-2000:])
                return r.returncode, rep, out

            rc, ref_rep, ref_out = fetch(nat.srv, "fetch-ref")
            ref_m = (ref_rep or {}).get("merge", {})
            check(rc == 0 and ref_m.get("output-frames") == 100 and ref_m.get("E_f") == 0,
                  "fetch without NAT: %s frames, E_f %s, %.1f s after PLAY" % (
                      ref_m.get("output-frames"), ref_m.get("E_f"),
                      (ref_rep or {}).get("elapsed", -1)))
            tls = ("--tls-ca", os.path.join(certs, "ca.pem"), "--token", token)
            # (cTCP over TLS adds nothing here: its rUDP hello is the SRTCP
            # one the ERAP run over TLS has)
            for ess, sec in (("erap", "plain"), ("ctcp", "plain"), ("erap", "tls")):
                t0 = time.monotonic()
                if sec == "plain":
                    rc, rep, out = fetch(nat.prx, "fetch-%s-%s" % (ess, sec), "--nat",
                                         "--essential", ess)
                else:
                    rc, rep, out = fetch(nat.prx, "fetch-%s-%s" % (ess, sec), "--nat",
                                         "--essential", ess, server="10.201.0.1:5501",
                                         sec=tls)
                m = (rep or {}).get("merge", {})
                what = "--nat --fetch --essential %s (%s, %.1f s, %.1f s after PLAY)" % (
                    ess, sec, time.monotonic() - t0, (rep or {}).get("elapsed", -1))
                check(rc == 0 and m.get("output-frames") == ref_m.get("output-frames")
                      and m.get("E_f") == 0 and m.get("received-b", 0) > 0
                      and all(m.get(k) == ref_m.get(k) for k in
                              ("received-i", "received-p", "received-b")),
                      "%s: %s frames (reference %s; I/P/B %s/%s/%s), E_f %s" % (
                          what, m.get("output-frames"), ref_m.get("output-frames"),
                          m.get("received-i"), m.get("received-p"), m.get("received-b"),
                          m.get("E_f")))
                check(rc == 0 and sha(out) == sha(ref_out),
                      "%s: output byte-identical to the fetch without NAT" % what)
                rs = (rep or {}).get("rudpsrc", {})
                check(rs.get("hellos-sent", 0) >= 1 and rs.get("received", 0) > 0
                      and rs.get("lost", 1) == 0 and rs.get("srtp") == (sec == "tls"),
                      "%s: rUDP hellos %s, %s packets received, %s lost, srtp %s"
                      % (what, rs.get("hellos-sent"), rs.get("received"),
                         rs.get("lost"), rs.get("srtp")))
                if ess == "erap":
                    es = (rep or {}).get("erapsrc", {})
                    check(es.get("hellos-sent", 0) >= 1 and es.get("auth-failures") == 0
                          and es.get("encrypted") == (sec == "tls"),
                          "%s: ERAP hellos %s, encrypted %s" % (
                              what, es.get("hellos-sent"), es.get("encrypted")))

            # an RTSP session served from behind the NAT
            plog_path = os.path.join(work, "proxy-rtsp.log")
            plog = open(plog_path, "w")
            rproxy = subprocess.Popen(
                ["ip", "netns", "exec", nat.prx, proxy_exe, "--server", "10.201.0.1:5500",
                 "--insecure", "--segment-duration", "2", "--nat", "--prefix-dir",
                 os.path.join(work, "p-rtsp"), "--rtsp-port", "8554",
                 "--rtsp-address", "127.0.0.1"], stdout=plog, stderr=subprocess.STDOUT)
            try:
                time.sleep(1.0)
                r = subprocess.run(
                    ["ip", "netns", "exec", nat.prx, "ffprobe", "-v", "error",
                     "-rtsp_transport", "tcp", "-count_frames", "-select_streams", "v:0",
                     "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0",
                     "rtsp://127.0.0.1:8554/video/ball100.m2v"],
                    capture_output=True, text=True, timeout=40)
                n = r.stdout.strip().split(",")[0] if r.returncode == 0 else ""
                check(n == str(ref_m.get("output-frames")),
                      "RTSP from behind the NAT (--nat): ffprobe decoded %s frames (%s)"
                      % (n or "none", r.stderr.strip()[-200:]))
            finally:
                rproxy.terminate()
                try:
                    rproxy.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    rproxy.kill()
                    rproxy.wait()
                plog.close()

            slog.flush()
            log = open(slog_path).read()
            check("(10.201.0.2)" in log and "(10.202.0.2)" not in log,
                  "the server saw the proxy as the router's address 10.201.0.2")
            server.terminate()
            server.wait(timeout=10)
            server = None
            for t in servers:
                t.terminate()
                t.wait(timeout=10)
            servers = []
    finally:
        for t in ([server] if server else []) + servers:
            t.kill()
            t.wait()
    if failures:
        print("server log:\n" + open(os.path.join(work, "server.log")).read()[-3000:])
        print(f"{len(failures)} failure(s); work dir {work}")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
