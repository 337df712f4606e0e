#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""systemd-analyze verify of tools/systemd/*.service (suite 'web'). The
units name the installed programs (/usr/local/bin); verify checks that
ExecStart is executable, so the copies verified here point at the build's
programs, nothing else changed. A unit with an unknown key must be
reported (the check can fail). Skipped (77) when systemd-analyze is
missing or cannot run in this container.

  test_units.py UNIT_DIR SERVER PROXY
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


def main():
    unit_dir, server, proxy = sys.argv[1:4]
    if not shutil.which("systemd-analyze"):
        print("SKIP: systemd-analyze missing")
        return 77
    work = tempfile.mkdtemp(prefix="twoflow-units-")
    probe = os.path.join(work, "probe.service")
    with open(probe, "w") as f:
        f.write("[Service]\nExecStart=/bin/true\n")
    rc, out = verify(probe)
    if rc != 0:
        print(f"SKIP: systemd-analyze cannot run here: {out}")
        return 77
    fails = 0
    for name, exe in (("twoflow-server.service", server), ("twoflow-proxy.service", proxy)):
        text = open(os.path.join(unit_dir, name)).read()
        inst = "/usr/local/bin/" + name.replace(".service", "")
        assert inst in text, f"{name} runs {inst}"
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
