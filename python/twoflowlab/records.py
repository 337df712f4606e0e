# SPDX-License-Identifier: LGPL-2.1-or-later
"""The tagged JSON lines twoflow-server and twoflow-proxy print
("FETCH-RESULT {...}", "SESSION-END {...}", "ADMISSION {...}", ...), read
by the tests, the main job and the experiments (standard library only):
``from twoflowlab.records import tagged``."""

import json


def tagged(text, tag):
    """Every record of `tag` in text, in order (malformed ones skipped)."""
    out = []
    for line in text.splitlines():
        if line.startswith(tag + " "):
            try:
                out.append(json.loads(line[len(tag) + 1:]))
            except ValueError:
                pass
    return out
