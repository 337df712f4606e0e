#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Public vs private (docs/conventions.md, "Public and private API"): each
library under gst-libs/ is built with hidden visibility, and its dynamic
symbol table (nm -D) holds exactly the functions and variables its
headers mark with its export macro. libgsttwoflow's public API
(TWOFLOW_API) is the frame format and the congestion event, the headers
it installs; the rest of it is TWOFLOW_PRIVATE_API."""
import os
import re
import subprocess
import sys

SRC = os.environ['TWOFLOW_SOURCE_ROOT']
BUILD = os.environ['TWOFLOW_BUILD_ROOT']
LIBS = {'twoflow': 'TWOFLOW', 'erap': 'TWOFLOW_ERAP', 'ctcp': 'TWOFLOW_CTCP',
        'rudp': 'TWOFLOW_RUDP', 'ratecontrol': 'TWOFLOW_RATECONTROL',
        'picturetype': 'TWOFLOW_PICTURETYPE'}
PUBLIC_HEADERS = {'twoflowframe.h', 'networkcongestion.h'}
# a macro on its own line, then the declaration up to its name and '(';
# or a variable: MACRO const Type name;
DECL = re.compile(r'^(TWOFLOW\w*_API)\n[^;{]*?(\w+)\s*\(', re.M)
VAR = re.compile(r'^(TWOFLOW\w*_API) const \w+ (\w+);', re.M)


def exported(path):
    out = subprocess.run(['nm', '-D', '--defined-only', path], check=True,
                         capture_output=True, text=True).stdout
    # "__odr_asan.NAME": what AddressSanitizer adds beside each exported
    # variable (the ASan build runs this test too)
    return {f[2] for f in (ln.split() for ln in out.splitlines())
            if len(f) == 3 and f[1] in 'TDBR' and not f[2].startswith('__')}


def main():
    failures = 0
    for lib, prefix in LIBS.items():
        so = os.path.join(BUILD, 'gst-libs', 'gst', lib, f'libgst{lib}-1.0.so')
        if not os.path.exists(so):
            continue
        marked = {}
        d = os.path.join(SRC, 'gst-libs', 'gst', lib)
        for h in sorted(os.listdir(d)):
            if not h.endswith('.h'):
                continue
            text = open(os.path.join(d, h)).read()
            for m in list(DECL.finditer(text)) + list(VAR.finditer(text)):
                macro, name = m.group(1), m.group(2)
                if lib == 'twoflow':
                    want = 'TWOFLOW_API' if h in PUBLIC_HEADERS else 'TWOFLOW_PRIVATE_API'
                else:
                    want = prefix + '_API'
                if macro != want:
                    print(f'FAIL {h}: {name} marked {macro}, not {want}')
                    failures += 1
                marked[name] = h
        syms = exported(so)
        for name in sorted(set(marked) - syms):
            print(f'FAIL {lib}: {name} ({marked[name]}) marked but not exported')
            failures += 1
        for name in sorted(syms - set(marked)):
            print(f'FAIL {lib}: {name} exported but marked in no header')
            failures += 1
        public = sum(1 for h in marked.values() if h in PUBLIC_HEADERS)
        print(f'libgst{lib}-1.0: {len(syms)} symbols exported'
              + (f', {public} of them the public API' if lib == 'twoflow' else ''))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
