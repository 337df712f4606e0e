#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The congestion event's API under the twoflow namespace, and its names
before 0.1.0 as deprecated aliases: in Python (python/gi/overrides/
GstTwoflow.py, each old name the new object and a PyGIDeprecationWarning
on use) and in C (networkcongestion.h's macros: a program written against
the old names builds and runs, one built with TWOFLOW_DISABLE_DEPRECATED
does not see them)."""
import os
import subprocess
import sys
import tempfile

BUILD = os.environ['TWOFLOW_BUILD_ROOT']
SOURCE = os.environ['TWOFLOW_SOURCE_ROOT']
LIBDIR = os.path.join(BUILD, 'gst-libs', 'gst', 'twoflow')

PY = r'''
import warnings
import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstTwoflow", "1.0")
from gi.repository import Gst, GstTwoflow
Gst.init(None)
new = GstTwoflow.CongestionType
assert GstTwoflow.CONGESTION_NAME == "GstNetworkCongestion"
s = GstTwoflow.congestion_structure_new(new.LOSS, 2000000, 40 * Gst.MSECOND, "x")
assert s.get_name() == "GstNetworkCongestion"
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    # before 0.1.0: NetworkCongestion*
    assert GstTwoflow.NetworkCongestionType is new
    assert GstTwoflow.NETWORK_CONGESTION_NAME == GstTwoflow.CONGESTION_NAME
    ok, ctype, rate, srtt, src = GstTwoflow.network_congestion_structure_parse(s)
    assert ok and ctype == new.LOSS and rate == 2000000 and src == "x", (ok, ctype, rate, src)
    assert GstTwoflow.network_congestion_type_to_string(new.RATE) == "rate"
    # up to 0.1.0 every name repeated the namespace
    assert GstTwoflow.TwoflowCodec is GstTwoflow.Codec
    assert GstTwoflow.TwoflowCongestionType is new
    assert GstTwoflow.TWOFLOW_MAGIC == GstTwoflow.MAGIC
    assert GstTwoflow.twoflow_codec_to_string(GstTwoflow.Codec.H264) == "h264"
names = sorted({str(x.message).split()[0] for x in w})
assert names == ["GstTwoflow.NETWORK_CONGESTION_NAME", "GstTwoflow.NetworkCongestionType",
                 "GstTwoflow.TWOFLOW_MAGIC", "GstTwoflow.TwoflowCodec",
                 "GstTwoflow.TwoflowCongestionType", "GstTwoflow.network_congestion_structure_parse",
                 "GstTwoflow.network_congestion_type_to_string",
                 "GstTwoflow.twoflow_codec_to_string"], names
print("python: old names alias the new ones and warn")
'''

C = r'''
#include <gst/twoflow/networkcongestion.h>
int main (void) {
  GstNetworkCongestionType t = GST_NETWORK_CONGESTION_DUPACK;
  GstStructure *s;
  GstTwoflowCongestionType back = 0;
  gst_init (NULL, NULL);
  g_assert (GST_TYPE_NETWORK_CONGESTION_TYPE == GST_TYPE_TWOFLOW_CONGESTION_TYPE);
  g_assert (g_str_equal (GST_NETWORK_CONGESTION_NAME, "GstNetworkCongestion"));
  s = gst_network_congestion_structure_new (t, 1000, GST_MSECOND, "c");
  g_assert (gst_twoflow_congestion_structure_parse (s, &back, NULL, NULL, NULL));
  g_assert (back == GST_TWOFLOW_CONGESTION_DUPACK);
  gst_structure_free (s);
  return 0;
}
'''


def env():
    e = dict(os.environ)
    e['GI_TYPELIB_PATH'] = LIBDIR + os.pathsep + e.get('GI_TYPELIB_PATH', '')
    e['LD_LIBRARY_PATH'] = LIBDIR + os.pathsep + e.get('LD_LIBRARY_PATH', '')
    e['PYTHONPATH'] = os.path.join(SOURCE, 'python') + os.pathsep + e.get('PYTHONPATH', '')
    return e


def cflags():
    out = subprocess.run(['pkg-config', '--cflags', '--libs', 'gstreamer-1.0'],
                         check=True, capture_output=True, text=True).stdout.split()
    return ['-I' + os.path.join(SOURCE, 'gst-libs'), '-I' + BUILD] + out + \
        ['-L' + LIBDIR, '-lgsttwoflow-1.0', '-Wl,-rpath,' + LIBDIR]


def main():
    subprocess.run([sys.executable, '-c', PY], check=True, env=env())
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, 'old.c')
        with open(src, 'w') as f:
            f.write(C)
        exe = os.path.join(d, 'old')
        subprocess.run(['cc', '-o', exe, src] + cflags(), check=True)
        subprocess.run([exe], check=True, env=env())
        print('C: a program on the old names builds and runs')
        r = subprocess.run(['cc', '-DTWOFLOW_DISABLE_DEPRECATED', '-o', exe, src] + cflags(),
                           capture_output=True, text=True)
        if r.returncode == 0:
            print('FAIL: TWOFLOW_DISABLE_DEPRECATED still declares the old names')
            return 1
        print('C: with TWOFLOW_DISABLE_DEPRECATED the old names are gone')
    return 0


if __name__ == '__main__':
    sys.exit(main())
