#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""docs/architecture.md names only what exists (issue 25): every
repository path it gives (a file, a folder, a glob), every pkg-config name
(a backquoted gst*-1.0: one the build generates) and every element (a
backquoted name ending in sink or src, twoflowsplit, twoflowmerge,
ratetranscoder: a factory of the build's plugins or of the system's)."""
import glob
import os
import re
import subprocess
import sys

SRC = os.environ['TWOFLOW_SOURCE_ROOT']
BUILD = os.environ['TWOFLOW_BUILD_ROOT']
DOC = os.path.join(SRC, 'docs', 'architecture.md')
TOP = ('gst-libs', 'gst', 'tools', 'tests', 'docs', 'scripts', 'experiments',
       'python', 'examples', 'subprojects')


def paths(text):
    for m in re.finditer(r'(?<![\w/.-])((?:%s)/[A-Za-z0-9_./*{}-]*)' % '|'.join(TOP), text):
        p = m.group(1).rstrip('.,;:)')
        # "networkcongestion.[ch]" and "twoflowframe.{c,h}" read as ".": the stem
        p = re.sub(r'\.(\[ch\]|\{[a-z,]+\})?$', '', p)
        yield p


def exists(p):
    full = os.path.join(SRC, p)
    if '*' in p:
        return bool(glob.glob(full))
    if '{' in p:
        head, alts, tail = re.match(r'(.*)\{([^}]*)\}(.*)', p).groups()
        return all(exists(head + a + tail) for a in alts.split(','))
    # a stem ("gst-libs/gst/twoflow/twoflowframe"): some file of it
    return os.path.exists(full) or bool(glob.glob(full + '.*'))


def pkgconfig_names():
    names = set()
    for mb in glob.glob(os.path.join(SRC, 'gst-libs', '**', 'meson.build'), recursive=True):
        names.update('gstreamer-%s-1.0' % n for n in re.findall(
            r"name\s*:\s*'gstreamer-([a-z]+)-'\s*\+\s*gst_api", open(mb).read()))
    return names


def factories():
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(BUILD, 'gst'))
    out = subprocess.run(['gst-inspect-1.0'], env=env, capture_output=True,
                         text=True, timeout=120).stdout
    return {m.group(1) for m in re.finditer(r'^[\w-]+:\s+([\w-]+):', out, re.M)}


def main():
    text = open(DOC).read()
    bad = []
    seen = sorted(set(paths(text)))
    bad += ['path %s does not exist' % p for p in seen if not exists(p)]
    pcs = set(re.findall(r'`(gst[a-z-]*-1\.0)`', text))
    known = pkgconfig_names()
    bad += ['pkg-config name %s is not one the build generates (%s)'
            % (n, ', '.join(sorted(known))) for n in sorted(pcs - known)
            if n not in ('gstreamer-base-1.0', 'gstreamer-codecparsers-1.0',
                         'gst-launch-1.0', 'gst-inspect-1.0')]
    facts = factories()
    elems = set(re.findall(r'`([a-z0-9]+(?:sink|src)|twoflow(?:split|merge)|ratetranscoder)`', text))
    bad += ['element %s is no factory here' % e for e in sorted(elems - facts)]
    print('%d paths, %d pkg-config names, %d elements checked'
          % (len(seen), len(pcs), len(elems)))
    for b in bad:
        print('FAIL ' + b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
