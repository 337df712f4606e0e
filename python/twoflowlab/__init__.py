# SPDX-License-Identifier: LGPL-2.1-or-later
"""twoflowlab: the Python side of twoflow's tests, experiments, benchmarks
and scripts (standard library, plus PyGObject for the GStreamer tools).

Modules:
  testbed     the emulated WAN: network namespaces + twoflow-linkemu
              (Testbed, Link, Red, GilbertElliott, ...); also a command
              line tool: python/twoflowlab/testbed.py --help
  records     tagged(): the server's and proxy's tagged JSON lines
  checks      what the system test scripts share: check()/failures,
              free_port(), result_line(), wait_port(), mpeg2_clip_argv(),
              TlsControl (a TLS control connection to twoflow-server)
  gst         GStreamer runner helpers (run a pipeline to EOS, count
              decoded frames, element stats as dicts, a bus main loop)
  ctcpbed     ctcptool senders and receivers across a Testbed
  systembed   SystemTestbed: the WAN + twoflow-server + proxies of the
              system experiments
  ctcptool, rudptool, udptool, viewer
              programs run inside the namespaces:
              python3 -m twoflowlab.<tool> --help (python/ on PYTHONPATH)

How it is found: python/ is a package (python/pyproject.toml, the
distribution "twoflowlab"); nothing in the tests, experiments, benchmarks
or scripts touches sys.path. meson's test environment puts python/ on
PYTHONPATH (tests/meson.build), as scripts/main.sh does for the main
job; by hand, either ``pip install -e python`` (in a virtualenv, or with
--break-system-packages for Debian's python3, which the GStreamer tools
need for PyGObject) or ``PYTHONPATH=$PWD/python``. The tools a script
starts (``python3 -m twoflowlab.<tool>`` inside namespaces, via ``ip
netns exec``) inherit that environment.
"""

import os

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_ROOT = os.path.dirname(PYTHON_DIR)
PY = "/usr/bin/python3"           # Debian's, with PyGObject (the GStreamer tools)


def tool_argv(name, python=PY):
    """argv that runs the twoflowlab tool `name` (ctcptool, rudptool,
    udptool, viewer) with `python`; its options follow."""
    return [python, "-m", "twoflowlab." + name]


def build_dir(build=None):
    """The build tree: `build`, $TWOFLOW_BUILD_ROOT, else SOURCE_ROOT/build."""
    return os.path.abspath(build or os.environ.get("TWOFLOW_BUILD_ROOT")
                           or os.path.join(SOURCE_ROOT, "build"))
