#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""gst_plugins_cache.json for the twoflow plugins, by introspection.

The layout of upstream's gst-hotdoc-plugins-scanner cache (plugins ->
elements -> pad-templates, properties, signals; other-types for their
enums and flags), made with GObject introspection (python3-gi) because
neither the scanner nor hotdoc is available on Debian 12 (see
docs/plugins/README.md). Only the plugins loaded from PLUGIN_DIR are
written; defaults are the param specs' own (not an instance's, so the
cache does not depend on the machine).

  plugins_cache.py PLUGIN_DIR OUTPUT        write the cache
  plugins_cache.py --check PLUGIN_DIR CACHE exit 1 with a diff if the
                                            built plugins differ from CACHE
"""
import difflib
import json
import re
import os
import sys

import gi
gi.require_version('Gst', '1.0')
from gi.repository import GObject, Gst  # noqa: E402

# properties and signals of these classes are documented upstream
UPSTREAM = {'GObject', 'GInitiallyUnowned', 'GstObject', 'GstElement', 'GstBin',
            'GstPipeline', 'GstBaseSink', 'GstBaseSrc', 'GstPushSrc',
            'GstBaseTransform', 'GstAggregator', 'GstBaseParse'}
MUTABLE = [(Gst.PARAM_MUTABLE_PLAYING, 'playing'), (Gst.PARAM_MUTABLE_PAUSED, 'paused'),
           (Gst.PARAM_MUTABLE_READY, 'ready')]


def docdir_free(uri):
    """The installed documentation (the default origin and doc-uri,
    file://PREFIX/share/doc/twoflow/...) without the prefix the build was
    configured with, so the cache is one for every --prefix."""
    if uri and uri.startswith('file://'):
        return re.sub(r'^file://.*/doc/twoflow', 'file://$(docdir)', uri)
    return uri


def hierarchy(gtype):
    out = []
    while gtype and gtype.name != 'invalid':
        out.append(gtype.name)
        gtype = gtype.parent
    return out


def enum_values(pspec):
    if GObject.type_is_a(pspec.value_type, GObject.TYPE_ENUM):
        values = pspec.enum_class.__enum_values__
        return 'enum', {int(v): (v.value_nick, v.value_name) for v in values.values()}
    values = pspec.flags_class.__flags_values__
    return 'flags', {int(v): (v.first_value_nick, v.first_value_name)
                     for v in values.values()}


def default(pspec, kind):
    value = pspec.default_value
    if kind in ('enum', 'flags'):
        _, values = enum_values(pspec)
        if kind == 'enum':
            return f'{values[int(value)][0]} ({int(value)})'
        nicks = [n for v, (n, _) in sorted(values.items()) if v and int(value) & v == v]
        return '+'.join(nicks) or '(none)'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if value is None:
        return 'NULL' if pspec.value_type == GObject.TYPE_STRING else None
    return str(value)


def prop(pspec, other_types):
    flags = int(pspec.flags)
    kind = None
    if GObject.type_is_a(pspec.value_type, GObject.TYPE_ENUM):
        kind = 'enum'
    elif GObject.type_is_a(pspec.value_type, GObject.TYPE_FLAGS):
        kind = 'flags'
    out = {
        'blurb': pspec.blurb,
        'conditionally-available': bool(flags & Gst.PARAM_CONDITIONALLY_AVAILABLE),
        'construct': bool(flags & GObject.ParamFlags.CONSTRUCT),
        'construct-only': bool(flags & GObject.ParamFlags.CONSTRUCT_ONLY),
        'controllable': bool(flags & Gst.PARAM_CONTROLLABLE),
        'mutable': next((name for bit, name in MUTABLE if flags & bit), 'null'),
        'readable': bool(flags & GObject.ParamFlags.READABLE),
        'type': pspec.value_type.name,
        'writable': bool(flags & GObject.ParamFlags.WRITABLE),
    }
    value = default(pspec, kind)
    if value is not None:
        out['default'] = value
    for key, attr in (('min', 'minimum'), ('max', 'maximum')):
        if hasattr(pspec, attr):
            out[key] = str(getattr(pspec, attr))
    if kind:
        _, values = enum_values(pspec)
        other_types[pspec.value_type.name] = {
            'kind': kind,
            'values': [{'desc': name, 'name': nick, 'value': str(v)}
                       for v, (nick, name) in sorted(values.items())]}
    return out


def signals(gtype):
    out = {}
    for t in hierarchy(gtype):
        if t in UPSTREAM:
            break
        for sid in GObject.signal_list_ids(GObject.type_from_name(t)):
            q = GObject.signal_query(sid)
            s = {'args': [{'name': f'arg{i}', 'type': p.name}
                          for i, p in enumerate(q.param_types)],
                 'return-type': q.return_type.name,
                 'when': 'last' if q.signal_flags & GObject.SignalFlags.RUN_LAST else 'first'}
            if q.signal_flags & GObject.SignalFlags.ACTION:
                s['action'] = True
            out[q.signal_name] = s
    return out


def element(factory, other_types):
    obj = factory.create(None)
    gtype = obj.__gtype__
    props = {}
    for pspec in obj.list_properties():
        if pspec.owner_type.name in UPSTREAM:
            continue
        props[pspec.name] = prop(pspec, other_types)
    pads = {}
    for t in factory.get_static_pad_templates():
        pads[t.name_template] = {
            'caps': t.static_caps.string,
            'direction': t.direction.value_nick,
            'presence': t.presence.value_nick,
        }
    out = {
        'author': factory.get_metadata('author'),
        'description': factory.get_metadata('description'),
        'hierarchy': hierarchy(gtype),
        'klass': factory.get_metadata('klass'),
        'long-name': factory.get_metadata('long-name'),
        'pad-templates': pads,
        'properties': props,
        'rank': Gst.Rank(factory.get_rank()).value_nick
                if factory.get_rank() in (0, 64, 128, 256) else str(factory.get_rank()),
        'signals': signals(gtype),
    }
    interfaces = [i.name for i in GObject.type_interfaces(gtype)]
    if interfaces:
        out['interfaces'] = interfaces
    doc_uri = docdir_free(factory.get_metadata('doc-uri'))
    if doc_uri:
        out['doc-uri'] = doc_uri
    return out


def scan(plugin_dir):
    plugin_dir = os.path.realpath(plugin_dir)
    cache = {}
    for plugin in Gst.Registry.get().get_plugin_list():
        filename = plugin.get_filename()
        if not filename or not os.path.realpath(filename).startswith(plugin_dir + os.sep):
            continue
        other_types = {}
        elements = {}
        for f in Gst.Registry.get().get_feature_list_by_plugin(plugin.get_name()):
            if isinstance(f, Gst.ElementFactory):
                elements[f.get_name()] = element(f, other_types)
        base = os.path.basename(filename)
        base = base[3:] if base.startswith('lib') else base
        cache[plugin.get_name()] = {
            'description': plugin.get_description(),
            'elements': elements,
            'filename': base.split('.')[0],
            'license': plugin.get_license(),
            'other-types': other_types,
            'package': plugin.get_package(),
            'source': plugin.get_source(),
            'tracers': {},
            'url': docdir_free(plugin.get_origin()),
        }
    return cache


def dump(cache):
    return json.dumps(cache, indent=4, sort_keys=True, ensure_ascii=False) + '\n'


def main(argv):
    Gst.init(None)
    if argv[1:2] == ['--check']:
        plugin_dir, path = argv[2:4]
        built = scan(plugin_dir)
        with open(path, encoding='utf-8') as f:
            kept = json.load(f)
        # a plugin this build leaves out (meson -Dname=disabled) is not compared
        missing = sorted(set(kept) - set(built))
        for name in missing:
            print(f'not built here, not compared: {name}')
        kept = {k: v for k, v in kept.items() if k in built}
        new = sorted(set(built) - set(kept))
        if dump(built) == dump(kept):
            print(f'{len(built)} plugins, '
                  f'{sum(len(p["elements"]) for p in built.values())} elements as in {path}')
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            dump(kept).splitlines(True), dump(built).splitlines(True), path, 'built'))
        if new:
            print(f'plugins not in the cache: {new}')
        print('the elements differ from the cache: update it with '
              '`ninja -C build update_plugins_cache` and commit the change')
        return 1
    plugin_dir, path = argv[1:3]
    text = dump(scan(plugin_dir))
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
