#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The systemd units meson configured (suite 'web'): they run the
programs and load the plugins from the configured prefix (no
/usr/local hard-coded), are Type=notify when built with libsystemd, hand
the keys and tokens over with LoadCredential= (the token by file, never on
the command line), and pass systemd-analyze verify. verify checks that
ExecStart is executable, so the copies verified here point at the build's
programs, nothing else changed. A unit with an unknown key must be
reported (the check can fail). The verify part is skipped (77) when
systemd-analyze is missing or cannot run in this container.

  test_units.py UNIT_DIR BINDIR PLUGINDIR SERVICE_TYPE SERVER PROXY
"""
import os
import shutil
import subprocess
import sys
import tempfile


def verify(path):
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", path],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, (r.stdout + r.stderr).strip()


def check_text(name, text, bindir, plugindir, service_type):
    """The configured unit's content; returns the number of failures."""
    fails = 0
    exe = os.path.join(bindir, name.replace(".service", ""))
    lines = text.splitlines()
    checks = [
        ("ExecStart runs the prefix's program",
         any(line.startswith("ExecStart=" + exe + " ") for line in lines)),
        ("GST_PLUGIN_PATH is the prefix's plugin dir",
         "Environment=GST_PLUGIN_PATH=" + plugindir in lines),
        ("no @VAR@ left", "@" not in text.replace("@.service", "")),
        ("no /usr/local unless the prefix is",
         "/usr/local" not in text or bindir.startswith("/usr/local")),
        (f"Type={service_type}", f"Type={service_type}" in lines),
        ("keys/tokens through LoadCredential=",
         sum(line.startswith("LoadCredential=") for line in lines) >= 2),
        ("no secret on the command line",
         not any(line.startswith("ExecStart=") and
                 ("--token " in line or "--http-password " in line or
                  "--rtsp-password " in line) for line in lines)),
    ]
    for what, ok in checks:
        print(("ok    " if ok else "FAIL  ") + f"{name}: {what}")
        fails += not ok
    return fails


def main():
    unit_dir, bindir, plugindir, service_type, server, proxy = sys.argv[1:7]
    fails = 0
    texts = {}
    for name in ("twoflow-server.service", "twoflow-proxy.service"):
        texts[name] = open(os.path.join(unit_dir, name)).read()
        fails += check_text(name, texts[name], bindir, plugindir, service_type)
    if not shutil.which("systemd-analyze"):
        print("SKIP: systemd-analyze missing")
        return 1 if fails else 77
    work = tempfile.mkdtemp(prefix="twoflow-units-")
    probe = os.path.join(work, "probe.service")
    with open(probe, "w") as f:
        f.write("[Service]\nExecStart=/bin/true\n")
    rc, out = verify(probe)
    if rc != 0:
        print(f"SKIP: systemd-analyze cannot run here: {out}")
        shutil.rmtree(work, ignore_errors=True)
        return 1 if fails else 77
    for (name, exe) in (("twoflow-server.service", server), ("twoflow-proxy.service", proxy)):
        text = texts[name]
        inst = os.path.join(bindir, name.replace(".service", ""))
        # one directory per unit: verify loads the units beside it
        good, bad = (os.path.join(work, d, name) for d in ("good", "bad"))
        for path, extra in ((good, ""), (bad, "NoSuchKey=1\n")):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text.replace(inst, os.path.abspath(exe)) + extra)
        rc, out = verify(good)
        ok = rc == 0 and not out
        print(("ok    " if ok else "FAIL  ") + f"systemd-analyze verify {name}: {rc} {out}")
        fails += not ok
        shutil.rmtree(os.path.dirname(good))
        rc, out = verify(bad)
        shutil.rmtree(os.path.dirname(bad))
        ok = "NoSuchKey" in out
        print(("ok    " if ok else "FAIL  ") + f"a broken {name} is reported: {out}")
        fails += not ok
    shutil.rmtree(work, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
