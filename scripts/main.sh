#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job: installs what is missing, builds, and runs the twoflow
# session on bundled media, ending with a report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build
export GST_PLUGIN_PATH="$PWD/build/gst"
# the harness package (python/pyproject.toml), as meson's tests find it
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 scripts/main_job.py --build build "$@"
