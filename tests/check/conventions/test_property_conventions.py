#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The names-and-units convention (docs/conventions.md, "Names and units")
over every property of every element the build's plugins register, and
every deprecated alias against the property it names.

A property is a time when its name says so (-duration, -interval,
-timeout, -rtt, -rto, -time, latency, linger, lead, ahead, -quantum) or
its blurb gives a unit of time; a time is a guint64 in ns (blurb: "ns" or
"nanoseconds") unless its name ends in -ms. A property whose blurb gives
bit/s is a rate: guint64, named `rate` or `*-bitrate`. A port is a guint
(0..65535). Names that mean one thing in one element and the same thing
under another name elsewhere are refused (`timeout`, `bound-port`,
`*-rate`). A deprecated property's blurb starts "Deprecated: use NEW";
NEW exists, is not deprecated, and the two read and write one value
(the libra-* doubles in seconds against their ns replacements)."""
import os
import re
import sys

import gi

gi.require_version('Gst', '1.0')
from gi.repository import GObject, Gst  # noqa: E402

BUILD_GST = os.path.realpath(os.path.join(os.environ['TWOFLOW_BUILD_ROOT'], 'gst'))

TIME_NAME = re.compile(r'(^|-)(duration|interval|timeout|rtt|rto|time|latency|linger|lead|ahead|quantum)$')
TIME_BLURB = re.compile(r'\b(ns|nanoseconds?|ms|milliseconds?|seconds?)\b|\(s[;,)]', re.I)
PER_SECOND = re.compile(r'per second', re.I)
NS_BLURB = re.compile(r'\b(ns|nanoseconds)\b', re.I)
MS_BLURB = re.compile(r'\b(ms|milliseconds)\b', re.I)
RATE_BLURB = re.compile(r'bit/s')
ACCEL_BLURB = re.compile(r'bit/s per second')
BANNED = {'timeout': 'connect-timeout', 'bound-port': 'current-port'}
DEPRECATED = re.compile(r'^Deprecated: use ([a-z0-9-]+)')

failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL', msg)


def own_properties(factory):
    element = factory.create(None)
    assert element is not None, factory.get_name()
    gtype = element.__gtype__
    return element, [p for p in element.list_properties() if p.owner_type == gtype]


def check_property(ename, p):
    name, blurb, vtype = p.name, p.blurb or '', p.value_type
    if not blurb:
        fail(f'{ename}:{name} has no blurb')
    if p.flags & GObject.ParamFlags.DEPRECATED:
        return
    scalar = vtype in (GObject.TYPE_INT, GObject.TYPE_UINT, GObject.TYPE_INT64,
                       GObject.TYPE_UINT64, GObject.TYPE_DOUBLE)
    # a list of rates (rudp's levels) keeps its own name
    is_rate = scalar and RATE_BLURB.search(blurb) and not ACCEL_BLURB.search(blurb)
    is_time = TIME_NAME.search(name) or (
        scalar and TIME_BLURB.search(PER_SECOND.sub('', blurb)) and not RATE_BLURB.search(blurb))
    if is_time:
        if name.endswith('-ms'):
            if not MS_BLURB.search(blurb):
                fail(f'{ename}:{name}: an -ms time whose blurb does not say ms')
        elif vtype != GObject.TYPE_UINT64 or not NS_BLURB.search(blurb):
            fail(f'{ename}:{name}: a time, not a guint64 in ns ({vtype.name}: "{blurb}")')
    if is_rate:
        if not (name == 'rate' or name.endswith('-bitrate')):
            fail(f'{ename}:{name}: a rate in bit/s named neither rate nor *-bitrate')
        if vtype != GObject.TYPE_UINT64:
            fail(f'{ename}:{name}: a rate that is not a guint64 ({vtype.name})')
    if name == 'port' or name.endswith('-port'):
        if vtype != GObject.TYPE_UINT or p.maximum != 65535:
            fail(f'{ename}:{name}: a port that is not a guint up to 65535 ({vtype.name})')
    if name in BANNED:
        fail(f'{ename}:{name}: named {BANNED[name]} elsewhere')
    if name.endswith('-rate'):
        fail(f'{ename}:{name}: a rate is named rate or *-bitrate')


def test_value(p, default):
    lo, hi = p.minimum, p.maximum
    for v in (lo + 1, lo + 2, hi):
        if v != default and lo <= v <= hi:
            return v
    return lo


def check_alias(ename, element, p, props):
    m = DEPRECATED.match(p.blurb or '')
    if not m:
        fail(f'{ename}:{p.name} deprecated, its blurb not "Deprecated: use X"')
        return 0
    new = props.get(m.group(1))
    if new is None or new.flags & GObject.ParamFlags.DEPRECATED:
        fail(f'{ename}:{p.name} names {m.group(1)}, not a current property')
        return 0
    writable = p.flags & GObject.ParamFlags.WRITABLE
    if p.value_type == new.value_type:
        if writable:
            v = test_value(new, new.default_value)
            element.set_property(p.name, v)
            if element.get_property(new.name) != v:
                fail(f'{ename}: {p.name}={v} reads {new.name}={element.get_property(new.name)}')
            element.set_property(new.name, new.default_value)
            if element.get_property(p.name) != new.default_value:
                fail(f'{ename}: {new.name} set back, {p.name} reads {element.get_property(p.name)}')
            # as a launch line sets it
            Gst.util_set_object_arg(element, p.name, str(v))
            if element.get_property(new.name) != v:
                fail(f'{ename}: {p.name}="{v}" (launch line) reads {new.name}={element.get_property(new.name)}')
            element.set_property(new.name, new.default_value)
        elif element.get_property(p.name) != element.get_property(new.name):
            fail(f'{ename}: {p.name} and {new.name} read differently')
        for attr in ('minimum', 'maximum', 'default_value'):
            if getattr(p, attr, None) != getattr(new, attr, None):
                fail(f'{ename}: {p.name}.{attr} differs from {new.name}\'s')
        return 1
    # a time in seconds (double) replaced by one in ns (guint64)
    if p.value_type != GObject.TYPE_DOUBLE or new.value_type != GObject.TYPE_UINT64:
        fail(f'{ename}: {p.name} ({p.value_type.name}) and {new.name} ({new.value_type.name})')
        return 0
    if not NS_BLURB.search(new.blurb) or 'seconds' not in p.blurb:
        fail(f'{ename}: {p.name} is not seconds against {new.name} in ns')
    if round(p.default_value * Gst.SECOND) != new.default_value:
        fail(f'{ename}: default {p.name}={p.default_value} s but {new.name}={new.default_value} ns')
    element.set_property(new.name, 3 * Gst.MSECOND + 7)
    if abs(element.get_property(p.name) - 0.003000007) > 1e-12:
        fail(f'{ename}: {new.name}=3000007 ns reads {p.name}={element.get_property(p.name)} s')
    element.set_property(p.name, 0.25)
    if element.get_property(new.name) != Gst.SECOND // 4:
        fail(f'{ename}: {p.name}=0.25 s reads {new.name}={element.get_property(new.name)} ns')
    return 1


def check_uri_alias():
    """An old name in a URI's query sets the new property and reads back
    under the name it was set with (the round trip)."""
    sink = Gst.ElementFactory.make('erapsink', None)
    uri = 'erap://127.0.0.1:5004?max-rate=7000000&libra-a=0.5'
    if not Gst.URIHandler.set_uri(sink, uri):
        fail(f'erapsink refused {uri}')
        return
    if sink.get_property('max-bitrate') != 7000000:
        fail(f'{uri}: max-bitrate={sink.get_property("max-bitrate")}')
    if sink.get_property('libra-a-time') != Gst.SECOND // 2:
        fail(f'{uri}: libra-a-time={sink.get_property("libra-a-time")}')
    sink.set_property('max-bitrate', 6000000)
    back = Gst.URIHandler.get_uri(sink)
    if back != 'erap://127.0.0.1:5004?max-rate=6000000&libra-a=0.5':
        fail(f'{uri} read back as {back}')


def main():
    Gst.init(None)
    factories = []
    for plugin in Gst.Registry.get().get_plugin_list():
        fn = plugin.get_filename()
        if fn and os.path.realpath(fn).startswith(BUILD_GST + os.sep):
            for f in Gst.Registry.get().get_feature_list_by_plugin(plugin.get_name()):
                if isinstance(f, Gst.ElementFactory):
                    factories.append(f)
    factories.sort(key=lambda f: f.get_name())
    if len(factories) < 10:
        print('only', [f.get_name() for f in factories], 'of the 10 elements')
        return 1
    total = aliases = 0
    for factory in factories:
        ename = factory.get_name()
        element, plist = own_properties(factory)
        props = {p.name: p for p in plist}
        for p in plist:
            total += 1
            check_property(ename, p)
            if p.flags & GObject.ParamFlags.DEPRECATED:
                aliases += check_alias(ename, element, p, props)
    check_uri_alias()
    print(f'{len(factories)} elements, {total} properties, {aliases} deprecated aliases checked')
    if aliases < 1:
        fail('no deprecated alias found')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
