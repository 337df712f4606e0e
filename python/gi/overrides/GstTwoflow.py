# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyGObject overrides of GstTwoflow-1.0: the congestion event's names
before 0.1.0 (GstTwoflow.NetworkCongestionType, network_congestion_*,
NETWORK_CONGESTION_NAME), kept for one release as deprecated aliases of
the twoflow-namespace ones (TwoflowCongestionType, twoflow_congestion_*,
TWOFLOW_CONGESTION_NAME). Using one warns (PyGIDeprecationWarning).
Installed with the typelib into gi/overrides; from the build tree it is
found when python/ is on PYTHONPATH."""
from ..module import get_introspection_module
from ..overrides import deprecated_attr

GstTwoflow = get_introspection_module('GstTwoflow')

__all__ = []

_ALIASES = {'NetworkCongestionType': 'TwoflowCongestionType',
            'NETWORK_CONGESTION_NAME': 'TWOFLOW_CONGESTION_NAME'}
for _fn in ('event_new', 'event_parse', 'message_new', 'message_parse',
            'notify', 'structure_new', 'structure_parse', 'type_from_string',
            'type_to_string'):
    _ALIASES['network_congestion_' + _fn] = 'twoflow_congestion_' + _fn

for _old, _new in _ALIASES.items():
    globals()[_old] = getattr(GstTwoflow, _new)
    __all__.append(_old)
    deprecated_attr('GstTwoflow', _old, 'GstTwoflow.' + _new)
