#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Prints the ninja targets (paths relative to the build directory) that
a partial build needs, so scripts/test.sh can build the ASan and fuzz
trees without compiling everything a second and third time.

  ninja-targets.py BUILD --suite unit --suite fuzz   what those suites' tests run
  ninja-targets.py BUILD --fuzzers                   the libFuzzer executables
"""
import argparse
import json
import os
import subprocess


def introspect(build, what):
    out = subprocess.run(["meson", "introspect", build, what],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--suite", action="append", default=[])
    ap.add_argument("--fuzzers", action="store_true")
    args = ap.parse_args()

    targets = introspect(args.build, "--targets")
    wanted = []
    if args.fuzzers:
        wanted = [t for t in targets
                  if t["name"].startswith("fuzz-")
                  and not t["name"].endswith("-corpus")
                  and t["type"] == "executable"]
    if args.suite:
        suites = {s if ":" in s else "twoflow:" + s for s in args.suite}
        ids = set()
        for test in introspect(args.build, "--tests"):
            if suites & set(test["suite"]):
                ids.update(test["depends"])
        wanted += [t for t in targets if t["id"] in ids]
    for t in wanted:
        print(*(os.path.relpath(f, args.build) for f in t["filename"]))


if __name__ == "__main__":
    main()
