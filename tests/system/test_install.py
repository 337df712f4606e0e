#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A relocatable install (suite 'install', ~15 s, loopback): `meson install
--destdir` puts the build's install into a temporary directory, i.e. the
files of --prefix PREFIX under DESTDIR/PREFIX, a place the build never
named; from there, with LD_LIBRARY_PATH unset and no build directory on
any path:

  * every installed plugin and program finds the private libraries
    (libgsttwoflow-1.0 and the cores) through its $ORIGIN-relative RUNPATH
    (ldd resolves them inside the temporary tree);
  * gst-inspect-1.0 loads all ten elements with GST_PLUGIN_PATH set to the
    installed plugin directory alone;
  * `twoflow-server --version` and `twoflow-proxy --version` run;
  * a fetch: the installed twoflow-server (TLS, tokens, HTTP basic auth
    with --http-password-file) and the installed twoflow-proxy (--fetch
    with --tls-ca and --token-file) on loopback: every frame arrives;
  * the installed proxy serves the installed page (and hls.js), found
    relative to its executable;
    the server says READY=1 on NOTIFY_SOCKET (sd_notify) once it listens
    when built with libsystemd.

  test_install.py BUILD_DIR PREFIX BINDIR LIBDIR DATADIR SERVICE_TYPE
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import base64

from twoflowlab.checks import check, failures, free_port, mpeg2_clip_argv, result_line, wait_port

SOURCE = os.environ.get("TWOFLOW_SOURCE_ROOT",
                        os.path.join(os.path.dirname(__file__), "../.."))
PRIVATE = ("libgsttwoflow-", "libgsterap-", "libgstctcp-", "libgstrudp-",
           "libgstratecontrol-", "libgstpicturetype-")
ELEMENTS = ["twoflowsplit", "twoflowmerge", "twoflowtracesrc", "ratetranscoder",
            "erapsink", "erapsrc", "ctcpsink", "ctcpsrc", "rudpsink", "rudpsrc"]


def clean_env(plugindir, registry):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LD_LIBRARY_PATH", "GST_PLUGIN_PATH", "GST_REGISTRY"))}
    env["GST_PLUGIN_PATH"] = plugindir
    env["GST_REGISTRY_1_0"] = registry
    return env


def http_status(url, auth=None):
    req = urllib.request.Request(url)
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    build, prefix, bindir, libdir, datadir, service_type = sys.argv[1:7]
    meson = shutil.which("meson")
    if meson is None:
        print("SKIP: meson missing")
        return 77
    work = tempfile.mkdtemp(prefix="twoflow-install-")
    procs = []
    try:
        dest = os.path.join(work, "dest")
        res = subprocess.run([meson, "install", "-C", build, "--no-rebuild", "--quiet",
                              "--destdir", dest], capture_output=True, text=True,
                             timeout=300)
        check(res.returncode == 0, f"meson install --destdir: rc {res.returncode} "
              f"{res.stderr.strip()[-300:]}")
        if res.returncode != 0:
            return 1
        root = dest + prefix
        bin_dir = os.path.join(root, bindir)
        lib_dir = os.path.join(root, libdir)
        plugindir = os.path.join(lib_dir, "gstreamer-1.0")
        env = clean_env(plugindir, os.path.join(work, "registry.bin"))

        # 1. RUNPATH: the private libraries resolve inside the moved tree
        plugins = sorted(f for f in os.listdir(plugindir) if f.endswith(".so"))
        exes = [os.path.join(bin_dir, p) for p in ("twoflow-server", "twoflow-proxy")]
        for obj in [os.path.join(plugindir, p) for p in plugins] + exes:
            ldd = subprocess.run(["ldd", obj], capture_output=True, text=True, env=env).stdout
            # "libgsttwoflow-1.0.so.0 => /path/libgsttwoflow-1.0.so.0 (0x...)"
            private = [l.split() for l in ldd.splitlines()
                       if l.strip().startswith(PRIVATE)]
            bad = [l for l in private if len(l) < 3 or not os.path.realpath(l[2]).startswith(
                os.path.realpath(lib_dir) + "/")]
            rp = subprocess.run(["readelf", "-d", obj], capture_output=True, text=True).stdout
            runpath = [l.split("[", 1)[1].rstrip("]") for l in rp.splitlines()
                       if "RUNPATH" in l or "RPATH" in l]
            check(private and not bad and runpath and "$ORIGIN" in runpath[0],
                  f"{os.path.relpath(obj, root)}: RUNPATH {runpath}, "
                  f"{len(private)} private libraries from the moved tree"
                  + (f", wrong: {bad}" if bad else ""))

        # 2. the plugins load from the installed directory alone
        for e in ELEMENTS:
            r = subprocess.run(["gst-inspect-1.0", e], capture_output=True, text=True,
                               env=env, timeout=120)
            fname = [l.split()[-1] for l in r.stdout.splitlines()
                     if l.strip().startswith("Filename")]
            check(r.returncode == 0 and fname and fname[0].startswith(plugindir),
                  f"gst-inspect-1.0 {e}: rc {r.returncode}, {fname[:1]} "
                  f"{r.stderr.strip()[-200:]}")

        # 3. the programs run
        for exe in exes:
            r = subprocess.run([exe, "--version"], capture_output=True, text=True, env=env,
                               timeout=60)
            check(r.returncode == 0 and "twoflow-" in r.stdout,
                  f"{os.path.relpath(exe, root)} --version: {r.stdout.strip()} "
                  f"{r.stderr.strip()[-200:]}")

        # 4. a fetch between the installed programs, secrets from files
        certs = os.path.join(work, "certs")
        subprocess.run([os.path.join(SOURCE, "scripts", "make-test-certs.sh"), certs],
                       check=True)
        videos = os.path.join(work, "videos")
        os.makedirs(videos)
        subprocess.run(mpeg2_clip_argv(os.path.join(videos, "clip.m2v"), 50),
                       check=True, timeout=120, env=env)
        password = os.urandom(12).hex()
        pwfile = os.path.join(certs, "http-password")
        with open(pwfile, "w") as f:
            f.write(password + "\n")
        notify_path = os.path.join(work, "notify")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.settimeout(30)
        cport, hport = free_port(), free_port()
        senv = dict(env, NOTIFY_SOCKET=notify_path)
        procs.append(subprocess.Popen(
            [exes[0], "--dir", videos, "--port", str(cport), "--address", "127.0.0.1",
             "--tls-cert", os.path.join(certs, "server.pem"),
             "--tls-key", os.path.join(certs, "server.key"),
             "--tokens", os.path.join(certs, "tokens"),
             "--http-port", str(hport), "--http-user", "ops",
             "--http-password-file", pwfile],
            stdout=open(os.path.join(work, "server.log"), "w"), stderr=subprocess.STDOUT,
            env=senv))
        if service_type == "notify":
            try:
                msg = notify.recv(4096).decode()
            except socket.timeout:
                msg = ""
            check("READY=1" in msg.split("\n"),
                  f"the server notifies readiness on NOTIFY_SOCKET: {msg!r}")
        wait_port(cport)
        wait_port(hport)
        url = f"http://127.0.0.1:{hport}/metrics"
        codes = (http_status(url), http_status(url, "ops:" + password),
                 http_status(url, "ops:wrong"))
        check(codes == (401, 200, 401),
              f"/metrics with the password of --http-password-file: "
              f"none/right/wrong -> {codes}")
        out = os.path.join(work, "out.m2v")
        r = subprocess.run(
            [exes[1], "--server", f"127.0.0.1:{cport}", "--segment-duration", "1",
             "--rtsp-port", "0", "--prefix-dir", os.path.join(work, "prefix"),
             "--tls-ca", os.path.join(certs, "ca.pem"),
             "--token-file", os.path.join(certs, "proxy.token"),
             "--fetch", "clip.m2v", "--output", out],
            capture_output=True, text=True, env=env, timeout=120, cwd=work)
        rep = result_line(r.stdout, "FETCH-RESULT")
        frames = rep["merge"]["output-frames"] if rep else None
        check(r.returncode == 0 and frames == 50 and os.path.getsize(out) > 0,
              f"fetch by the installed proxy (TLS, --token-file) from the installed "
              f"server: rc {r.returncode}, {frames} of 50 frames, "
              f"{os.path.getsize(out) if os.path.exists(out) else 0} bytes "
              f"{r.stderr.strip()[-300:]}")
        # the installed proxy serves the installed page (found relative to
        # its executable), hls.js with it
        www = os.path.join(root, datadir, "twoflow", "www")
        marker = b"<!-- installed copy -->\n"
        with open(os.path.join(www, "index.html"), "ab") as f:
            f.write(marker)  # not in the build tree's copy
        hp2, rp2 = free_port(), free_port()
        prx = subprocess.Popen(
            [exes[1], "--server", f"127.0.0.1:{cport}", "--rtsp-port", str(rp2),
             "--http-port", str(hp2), "--prefix-dir", os.path.join(work, "prefix"),
             "--hls-dir", os.path.join(work, "hls"),
             "--tls-ca", os.path.join(certs, "ca.pem"),
             "--token-file", os.path.join(certs, "proxy.token")],
            stdout=open(os.path.join(work, "proxy.log"), "w"), stderr=subprocess.STDOUT,
            env=env, cwd=work)
        procs.append(prx)
        wait_port(hp2)
        page = {}
        for path in ("/", "/app.js", "/hls.min.js"):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{hp2}{path}", timeout=10) as r:
                    page[path] = r.read()
            except (OSError, urllib.error.HTTPError):
                page[path] = b""
        same = all(page[p] == open(os.path.join(www, "index.html" if p == "/" else p[1:]),
                                   "rb").read()
                   for p in page if os.path.exists(
                       os.path.join(www, "index.html" if p == "/" else p[1:])))
        check(page["/"].endswith(marker) and page["/app.js"] and same
              and (len(page["/hls.min.js"]) > 100000
                   or not os.path.exists(os.path.join(www, "hls.min.js"))),
              f"the installed proxy serves the installed page: "
              f"{ {p: len(v) for p, v in page.items()} } bytes, identical to "
              f"{os.path.relpath(www, root)}: {same}")
        # --token and --token-file together: refused before anything runs
        r = subprocess.run([exes[1], "--token", "x", "--token-file",
                            os.path.join(certs, "proxy.token"), "--fetch", "clip.m2v",
                            "--output", out], capture_output=True, text=True, env=env,
                           timeout=60)
        check(r.returncode == 2 and "token-file" in r.stderr,
              f"--token with --token-file refused: rc {r.returncode} {r.stderr.strip()}")
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
