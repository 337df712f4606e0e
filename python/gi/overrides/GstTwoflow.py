# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyGObject overrides of GstTwoflow-1.0: the names of earlier releases,
kept for one release as deprecated aliases (using one warns,
PyGIDeprecationWarning):
* before 0.1.0 the congestion event was GstTwoflow.NetworkCongestionType,
  network_congestion_*, NETWORK_CONGESTION_NAME;
* up to 0.1.0 the typelib repeated the namespace in every name
  (GstTwoflow.TwoflowCodec, twoflow_frame_header_parse, TWOFLOW_MAGIC):
  now GstTwoflow.Codec, frame_header_parse, MAGIC.
Installed with the typelib into gi/overrides; from the build tree it is
found when python/ is on PYTHONPATH."""
from gi import _gi

from ..module import get_introspection_module
from ..overrides import deprecated_attr

GstTwoflow = get_introspection_module('GstTwoflow')

__all__ = []


def _aliases():
    """{old name: new name} for every name the typelib has."""
    out = {}
    for info in _gi.Repository.get_default().get_infos('GstTwoflow'):
        new = info.get_name()
        if isinstance(info, _gi.FunctionInfo):
            # gst_twoflow_X was twoflow_X (gst_buffer_* kept its name)
            if info.get_symbol().startswith('gst_twoflow_'):
                out['twoflow_' + new] = new
                if new.startswith('congestion_'):
                    out['network_' + new] = new
        elif isinstance(info, _gi.ConstantInfo):
            out['TWOFLOW_' + new] = new
            if new.startswith('CONGESTION_'):
                out['NETWORK_' + new] = new
        else:
            out['Twoflow' + new] = new
            if new.startswith('Congestion'):
                out['Network' + new] = new
    return out


for _old, _new in sorted(_aliases().items()):
    if hasattr(GstTwoflow, _old):
        continue
    globals()[_old] = getattr(GstTwoflow, _new)
    __all__.append(_old)
    deprecated_attr('GstTwoflow', _old, 'GstTwoflow.' + _new)
