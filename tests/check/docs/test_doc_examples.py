#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every gst-launch-1.0 example of the elements' doc blocks, run.

Each example runs as written in a scratch directory holding the files the
examples name (greyramp.m2v, movie.mp4, video.ts, in.bin, test
certificates, data/), display sinks swapped for fakesink and the
placeholder addresses (SERVER, 192.0.2.7) for loopback; an example that
needs a peer runs with the peer pipeline its doc names. An example runs to
EOS, or (a receiver, an endless sender) until its run's other pipelines
are done; none may print an ERROR, and the run's outputs are checked.
Every example of every block must be in a run here, so a new example
fails this test until it is."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import doc_examples  # noqa: E402

SRC = os.environ['TWOFLOW_SOURCE_ROOT']
MEDIA = os.environ['TWOFLOW_MEDIA']
SUBST = {'autovideosink': 'fakesink', 'autoaudiosink': 'fakesink',
         'host=192.0.2.7': 'host=127.0.0.1',
         'hello-host=SERVER': 'hello-host=127.0.0.1'}
EOS_TIMEOUT = 90          # generous: mpeg2enc/x264 on a loaded 2-core box
READY = re.compile(r'Pipeline is PREROLLING|Pipeline is live|Setting pipeline to PLAYING')

# Runs in order (later ones read what earlier ones wrote). A step is
# (ref, mode): ref 'elem[b]' (block b), 'elem[b].i' (its i-th command),
# 'elem`p`' (the p-th command quoted in its prose); mode 'eos' (must end
# by itself, 0 and EOS), 'peer' (started first, waited for to be ready,
# interrupted when the run's eos steps are done unless it ended), or
# 'bounded:S' (interrupted after S s: a slow example, checked for no
# error and data flowing), S counted from PLAYING. Checks: 'nonempty'
# files, 'same' file pairs, 'sinks' (n, media type): fakesink n got caps
# of that type and a buffer, read from basesink's own log lines (gst-launch
# -v's caps lines are property-notify messages that two streaming threads
# negotiating at once sometimes lose).
RUNS = [
    {'steps': [('twoflowsplit[0]', 'eos')],
     'nonempty': ['essential.twf', 'enhanced.twf']},
    {'steps': [('twoflowmerge[0]', 'eos')]},
    {'steps': [('twoflowsplit[1]', 'eos')],
     'nonempty': ['essential.twf', 'enhanced.twf']},
    {'steps': [('twoflowmerge[1]', 'eos')],
     'sinks': [(0, 'video/x-raw'), (1, 'audio/x-raw')]},
    {'steps': [('twoflowtracesrc[0]', 'eos')]},
    {'steps': [('twoflowtracesrc[1]', 'eos')]},
    {'steps': [('ratetranscoder[0]', 'bounded:5')], 'nonempty': ['out.m2v']},
    {'steps': [('ratetranscoder[1]', 'bounded:5')], 'nonempty': ['out.mkv']},
    {'steps': [('ratetranscoder[2]', 'bounded:5')],
     'nonempty': ['out-h265.mkv']},
    # cTCP: the stock receiver and the two senders (10 s of 1 s segments,
    # mpeg2enc's first one took over 6 s on a loaded machine,
    # and 15 s of a 27 kB/s flow: a few seconds of each)
    {'steps': [('ctcpsink[0]', 'peer'), ('ctcpsink[1]', 'bounded:10')],
     'nonempty': ['essential.twoflow']},
    {'steps': [('ctcpsink[0]', 'peer'), ('ctcpsink[2]', 'bounded:5')],
     'nonempty': ['essential.twoflow']},
    {'steps': [('ctcpsrc[0].0', 'eos'), ('ctcpsrc[0].1', 'eos')],
     'same': [('in.bin', 'essential.twoflow')]},
    # ERAP: each sender with its receiver (the doc's pairs)
    {'steps': [('erapsink`0`', 'eos'), ('erapsink[0]', 'eos')],
     'same': [('video.ts', 'copy.ts')]},
    {'steps': [('erapsrc[0]', 'eos'), ('erapsrc`0`', 'eos')],
     'same': [('video.ts', 'copy.ts')]},
    {'steps': [('erapsink`0`', 'eos'), ('erapsink[1]', 'eos')],
     'same': [('video.ts', 'copy.ts')]},
    {'steps': [('erapsink[2]', 'eos'), ('erapsink`1`', 'eos')],
     'same': [('video.ts', 'copy.ts')]},
    {'steps': [('erapsink[2]', 'eos'), ('erapsrc[1]', 'eos')],
     'same': [('video.ts', 'copy.ts')]},
    # rUDP: endless senders and receivers, a few seconds each
    {'steps': [('rudpsink[0]', 'bounded:3')]},
    {'steps': [('rudpsink`0`', 'peer'), ('rudpsink[1]', 'bounded:4')],
     'sinks': [(0, 'video/x-raw')]},
    {'steps': [('rudpsrc[0]', 'peer'), ('rudpsrc`0`', 'bounded:4')],
     'sinks': [(0, 'video/x-raw')]},
    {'steps': [('rudpsink[2]', 'eos'), ('rudpsink`1`', 'peer')],
     'sinks': [(0, 'video/x-raw')]},
    {'steps': [('rudpsink[2]', 'eos'), ('rudpsrc[1]', 'peer')],
     'sinks': [(0, 'video/x-raw')]},
]


def resolve(ex, ref):
    m = re.fullmatch(r'(\w+)(?:\[(\d+)\](?:\.(\d+))?|`(\d+)`)', ref)
    elem = ex[m.group(1)]
    if m.group(4) is not None:
        return elem['prose'][int(m.group(4))]
    block = elem['blocks'][int(m.group(2))]
    if m.group(3) is None:
        assert len(block) == 1, ref
        return block[0]
    return block[int(m.group(3))]


def gst_launch(cmd, cwd, env):
    args = doc_examples.argv(cmd, SUBST)
    assert args[0] == 'gst-launch-1.0', cmd
    p = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors='replace')
    p.out = []
    p.ready = threading.Event()
    p.playing = threading.Event()

    def reader():
        for line in p.stdout:
            p.out.append(line)
            if READY.search(line):
                p.ready.set()
            if 'Setting pipeline to PLAYING' in line:
                p.playing.set()
        p.ready.set()
        p.playing.set()
    p.reader = threading.Thread(target=reader, daemon=True)
    p.reader.start()
    return p


def interrupt(p):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise AssertionError('did not stop on SIGINT')
    p.reader.join(10)


def prepare(tmp, env):
    os.symlink(os.path.join(MEDIA, 'greyramp.m2v'), os.path.join(tmp, 'greyramp.m2v'))
    os.symlink(os.path.join(SRC, 'data'), os.path.join(tmp, 'data'))
    with open(os.path.join(tmp, 'in.bin'), 'wb') as f:
        f.write(os.urandom(1 << 20))

    def make(*pipeline):
        subprocess.run(['gst-launch-1.0', '-q', *pipeline], cwd=tmp, env=env,
                       check=True, stdout=subprocess.DEVNULL, timeout=120)
    make(*'filesrc location=greyramp.m2v ! mpegvideoparse ! mpegtsmux ! filesink location=video.ts'.split())
    # an H.264 + AAC movie for twoflowsplit's audio example
    make(*('videotestsrc num-buffers=75 ! video/x-raw,width=320,height=240,framerate=25/1 ! '
           'x264enc key-int-max=25 bframes=2 ! h264parse ! mp4mux name=mux ! filesink location=movie.mp4 '
           'audiotestsrc num-buffers=140 ! audio/x-raw,rate=48000 ! voaacenc ! aacparse ! mux.').split())
    subprocess.run([os.path.join(SRC, 'scripts', 'make-test-certs.sh'), tmp, '127.0.0.1'],
                   check=True, stdout=subprocess.DEVNULL, timeout=120)


def run(tmp, env, ex, spec):
    procs, failures = [], []
    try:
        if spec.get('sinks'):
            env = dict(env, GST_DEBUG='basesink:5', GST_DEBUG_NO_COLOR='1')
        for ref, mode in spec['steps']:
            p = gst_launch(resolve(ex, ref), tmp, env)
            p.ref, p.mode, p.start = ref, mode, time.monotonic()
            procs.append(p)
            # a receiver listens (or a sender waits for its hello) before
            # its peer starts
            if not p.ready.wait(60):
                failures.append(f'{ref}: not started in 60 s')
        for p in procs:
            if p.mode == 'eos':
                try:
                    p.wait(EOS_TIMEOUT)
                except subprocess.TimeoutExpired:
                    failures.append(f'{p.ref}: no EOS in {EOS_TIMEOUT} s')
            elif p.mode.startswith('bounded:'):
                # S seconds of PLAYING (an encoder's preroll may be slow)
                p.playing.wait(60)
                try:
                    p.wait(float(p.mode.split(':')[1]))
                except subprocess.TimeoutExpired:
                    pass
        # senders before their receivers (a receiver gone first is a
        # sender's error)
        for p in reversed(procs):
            interrupt(p)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    out = ''
    for p in procs:
        text = ''.join(p.out)
        out += f'--- {p.ref} ({p.mode}) rc={p.returncode}\n{text}'
        if re.search(r'ERROR|CRITICAL', text):
            failures.append(f'{p.ref}: ERROR in its output')
        if p.mode == 'eos':
            if p.returncode != 0 or 'Got EOS' not in text:
                failures.append(f'{p.ref}: did not end with EOS (rc {p.returncode})')
        elif 'Setting pipeline to PLAYING' not in text:
            failures.append(f'{p.ref}: never PLAYING')
    for n, media in spec.get('sinks', []):
        if not re.search(rf'gst_base_sink_event:<fakesink{n}> received event .* caps event.*{media}', out):
            failures.append(f'fakesink{n} got no {media} caps')
        if not re.search(rf'<fakesink{n}> setting last buffer to 0x', out):
            failures.append(f'fakesink{n} got no buffer')
    for name in spec.get('nonempty', []):
        path = os.path.join(tmp, name)
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            failures.append(f'{name} empty or missing')
    for a, b in spec.get('same', []):
        with open(os.path.join(tmp, a), 'rb') as fa, open(os.path.join(tmp, b), 'rb') as fb:
            if fa.read() != fb.read():
                failures.append(f'{b} differs from {a}')
    return failures, out


def main():
    ex = doc_examples.examples(SRC)
    # every command of every block is run somewhere above
    used = set()
    for spec in RUNS:
        for ref, _ in spec['steps']:
            used.add(resolve(ex, ref))
    unrun = [c for e in ex.values() for b in e['blocks'] for c in b if c not in used]
    n = sum(len(b) for e in ex.values() for b in e['blocks'])
    print(f'{n} examples in {sum(len(e["blocks"]) for e in ex.values())} blocks of {len(ex)} elements')
    assert len(ex) == 10, sorted(ex)
    assert not unrun, f'examples no run covers: {unrun}'
    env = dict(os.environ)
    env.pop('GST_DEBUG', None)     # gst-launch's own ERROR lines are what count
    failed = 0
    with tempfile.TemporaryDirectory(prefix='twoflow-docs-') as tmp:
        prepare(tmp, env)
        for spec in RUNS:
            for name in ('copy.ts', 'essential.twoflow'):
                if os.path.exists(os.path.join(tmp, name)):
                    os.unlink(os.path.join(tmp, name))
            t0 = time.monotonic()
            failures, out = run(tmp, env, ex, spec)
            refs = ' + '.join(r for r, _ in spec['steps'])
            print(f'{"FAIL" if failures else "ok"}: {refs} ({time.monotonic() - t0:.1f} s)')
            if failures:
                failed += 1
                print('\n'.join('  ' + f for f in failures))
                print(out)
    if failed:
        sys.exit(f'{failed} of {len(RUNS)} runs failed')


if __name__ == '__main__':
    main()
