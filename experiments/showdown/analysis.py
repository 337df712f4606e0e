# SPDX-License-Identifier: LGPL-2.1-or-later
"""The showdown's measurement: a received stream and its frames' arrival
times -> frames shown, freeze-aware PSNR, stall, start-up (README.md).

Inputs of one run:
* the stream the receiver got (MPEG-TS: the peers' receivers record what
  their transport delivered, twoflow-proxy --fetch writes its output file);
* arrivals: one line per coded frame as it left the receiver's video
  parser (the showdownarrivals tracer, gstshowdowntracer.c):
  `monotonic_ns pts dts bytes flags element`;
* t_req (CLOCK_MONOTONIC, s): when the request was made (the sender or
  the proxy started).

The reference is the clip decoded by the same pipeline. Both are decoded
with GStreamer (tsdemux ! parser ! avdec_*); a decoded picture is
identified by its PTS, the offset between the two timelines by content
(the picture's best match among the reference's), and its arrival by the
parser's PTS sequence (the arrivals in the receiver's timeline are aligned
to the decode's by their common decode order).

Display model (one per run, the same for every system): slot k (display
index k of N) is due at D_k = A_f + (PTS_k - DTS_f) + playout, where f is
the first frame to arrive and A_f its arrival (a player starts its clock
when the first frame is there, DTS_f -> A_f, presents by PTS, and keeps a
playout buffer of `playout`, 200 ms by default: a frame paced at real
time arrives at about its DTS, and a B frame's PTS is its DTS, so
without a buffer the slightest jitter would make every B frame late); slot k
shows the newest frame j <= k that had arrived (and decoded) by D_k, or
mid-grey before any; a late frame is thereby shown once it arrives if no
newer one has, and the picture freezes on the last shown frame meanwhile.
"""

import os

import numpy as np

import gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

FRAME_NS = 40_000_000          # 25 fps
# a decoded frame whose PTS is this far off the receiver's was re-timed by
# tsdemux (after a gap). Receivers that log the source's own timestamps
# (twoflow-proxy's parser after the merge) are exact: there most of a
# frame (a shift of 100 ms after an H.264 GOP tail dropped beside a bulk
# TCP was missed at 100 ms: 35 of 730 frames matched). The peers'
# receivers re-stamp live sources and jitter by more than a frame (at
# most of a frame their recorded runs lost up to 700 frames): 100 ms.
RETIMED_EXACT_NS = FRAME_NS - 5_000_000
RETIMED_LIVE_NS = 100_000_000
GOOD_PSNR = 40.0               # a slot counts as recovered at or above this

PARSERS = {"mpeg2": ("mpegvideoparse", "avdec_mpeg2video"),
           "h264": ("h264parse", "avdec_h264")}


def decode(path, codec, max_frames=100000):
    """Decodes the video of an MPEG-TS file. Returns (parsed, frames):
    parsed = [(pts, dts, bytes)] of the coded frames in decode order (-1 unset),
    frames = [(pts, Y as uint8 HxW)] in output order. A broken stream
    decodes as far as it goes."""
    if not Gst.is_initialized():
        Gst.init(None)
    parse, dec = PARSERS[codec]
    p = Gst.parse_launch(
        f"filesrc location={path} ! tsdemux ! {parse} name=p ! {dec} ! "
        "videoconvert ! video/x-raw,format=GRAY8 ! "
        "appsink name=s sync=false max-buffers=4")
    parsed = []

    def probe(pad, info):
        b = info.get_buffer()
        parsed.append((b.pts if b.pts != Gst.CLOCK_TIME_NONE else -1,
                       b.dts if b.dts != Gst.CLOCK_TIME_NONE else -1,
                       b.get_size()))
        return Gst.PadProbeReturn.OK

    p.get_by_name("p").get_static_pad("src").add_probe(
        Gst.PadProbeType.BUFFER, probe)
    sink = p.get_by_name("s")
    frames = []
    p.set_state(Gst.State.PLAYING)
    w = h = None
    while len(frames) < max_frames:
        s = sink.emit("try-pull-sample", 30 * Gst.SECOND)
        if s is None:
            break
        if w is None:
            st = s.get_caps().get_structure(0)
            w, h = st.get_value("width"), st.get_value("height")
        b = s.get_buffer()
        ok, m = b.map(Gst.MapFlags.READ)
        if not ok:
            continue
        stride = (w + 3) & ~3
        y = np.frombuffer(m.data, dtype=np.uint8, count=stride * h)
        y = y.reshape(h, stride)[:, :w].copy()
        b.unmap(m)
        frames.append((b.pts, y))
    p.set_state(Gst.State.NULL)
    return parsed, frames


class Reference:
    """The clip decoded: Y planes in display order, PTS and DTS of each."""

    def __init__(self, path, codec):
        cache = path + ".ref.npz"     # decoding takes a minute on a busy machine
        if os.path.exists(cache) and os.path.getmtime(cache) >= os.path.getmtime(path):
            z = np.load(cache)
            self.pts, self.y, parsed = z["pts"], z["y"], z["parsed"]
        else:
            parsed, frames = decode(path, codec)
            frames.sort(key=lambda f: f[0])
            self.pts = np.array([f[0] for f in frames], dtype=np.int64)
            self.y = np.stack([f[1] for f in frames])
            parsed = np.array(parsed, dtype=np.int64)
            np.savez(cache + ".tmp.npz", pts=self.pts, y=self.y, parsed=parsed)
            os.replace(cache + ".tmp.npz", cache)
        self.n = len(self.pts)
        self.dts_of = {int(p[0]): int(p[1]) for p in parsed if p[0] >= 0}
        self.small = self.y[:, ::4, ::4].astype(np.int32)

    def index_of(self, pts):
        """Display index of a reference PTS (nearest, within 5 ms)."""
        i = int(np.searchsorted(self.pts, pts))
        best = None
        for j in (i - 1, i):
            if 0 <= j < self.n and abs(int(self.pts[j]) - pts) <= 5_000_000:
                best = j
        return best

    def best_match(self, y):
        d = self.small - y[::4, ::4].astype(np.int32)[None]
        return int(np.argmin((d * d).mean(axis=(1, 2))))


def mode(xs):
    if not xs:
        return None
    vals, counts = np.unique(np.array(xs, dtype=np.int64), return_counts=True)
    return int(vals[np.argmax(counts)])


def read_arrivals(path):
    """The tracer's lines of the element that logged the most frames:
    [(monotonic_ns, pts, dts, bytes)] in push order."""
    by_el = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) >= 6:
                    by_el.setdefault(p[5], []).append(
                        (int(p[0]), int(p[1]), int(p[2]), int(p[3])))
    except OSError:
        return []
    return max(by_el.values(), key=len) if by_el else []


def end_fixed(arr, tail=3):
    """tsdemux emits a PES when the next one begins and the parser a frame
    when the next start code comes, so the stream's last frames leave
    only at EOS, whose timing depends on how (and whether) each transport
    signals the end. Each of the last `tail` frames' arrival is therefore
    taken as at most its predecessor's plus one frame."""
    arr = list(arr)
    for i in range(max(1, len(arr) - tail), len(arr)):
        if arr[i][0] > arr[i - 1][0] + FRAME_NS:
            arr[i] = (arr[i - 1][0] + FRAME_NS,) + tuple(arr[i][1:])
    return arr


def align(parsed, arr, span=60, lags=40):
    """Offset from the receiver's PTS timeline to the decode's: the same
    coded frames, recognised by their sizes (a GOP-periodic PTS pattern
    alone is ambiguous), in the same decode order up to a shift."""
    best = (0, 0)
    for lag in range(-lags, lags + 1):
        d = []
        for i in range(min(span, len(arr))):
            j = i + lag
            if 0 <= j < len(parsed) and parsed[j][2] == arr[i][3] \
                    and parsed[j][0] >= 0 and arr[i][1] >= 0:
                d.append(parsed[j][0] - arr[i][1])
        if d:
            m = mode(d)
            c = sum(1 for x in d if x == m)
            if c > best[0]:
                best = (c, m)
    return best[1]


def psnr(mse):
    if mse <= 0:
        return float("inf")
    return 10.0 * np.log10(255.0 * 255.0 / mse)


def analyse(ref, stream, codec, arrivals_path, t_req, playout_ms=0.0,
            step_up=None, retimed_ns=RETIMED_LIVE_NS):
    """Metrics of one run (see the module doc). step_up: CLOCK_MONOTONIC s
    of a capacity rise, for the recovery time."""
    out = {"N": ref.n}
    arr = end_fixed(read_arrivals(arrivals_path))
    parsed, frames = decode(stream, codec) if os.path.exists(stream) else ([], [])
    out.update(arrived_frames=len(arr), decoded_frames=len(frames))
    if not arr or not frames:
        out.update(shown=0, psnr_db=psnr(mse_all_grey(ref)), lossless=False,
                   stall_s=ref.n * FRAME_NS / 1e9, startup_s=None,
                   late=0, missing=ref.n, note="no frames")
        return out
    # arrival time per display index: each arrival is the decode's coded
    # frame of the same size next in decode order (live sources re-stamp:
    # the receiver's PTS can jitter), else by the PTS offset
    off_arr = align(parsed, arr)
    # tsdemux re-times the frames after a gap in the video (no PCR while
    # the merge dropped 39 H.264 frames, 1.6 s: the decode put the frames
    # after it 1.14 s early, where the file's PES and the receiver's
    # parser had them right): where the decode's PTS of a coded frame is
    # more than retimed_ns off the receiver's, the receiver's counts, on the
    # decode's timeline as the first frame (before any gap) puts it (the
    # offset align() finds is the most frequent one: after a gap in the
    # first GOP, the re-timed one)
    off_first = off_arr
    if arr and parsed and arr[0][3] == parsed[0][2] and arr[0][1] >= 0 \
            and parsed[0][0] >= 0:
        off_first = parsed[0][0] - arr[0][1]
    fix = {}
    j = 0
    for mono, pts, dts, size in arr:
        for jj in range(j, min(len(parsed), j + 12)):
            if parsed[jj][2] == size and parsed[jj][0] >= 0:
                if pts >= 0 and abs(pts + off_first - parsed[jj][0]) > retimed_ns:
                    fix[parsed[jj][0]] = pts + off_first
                j = jj + 1
                break
    # decoded timeline (re-timed frames put back) -> reference: by
    # content, over the first pictures
    offs = []
    for pt, y in frames[:12]:
        offs.append(fix.get(pt, pt) - int(ref.pts[ref.best_match(y)]))
    off_ref = mode(offs)
    A = np.full(ref.n, -1, dtype=np.int64)
    j = 0
    for mono, pts, dts, size in arr:
        pt = None
        for jj in range(j, min(len(parsed), j + 12)):
            if parsed[jj][2] == size and parsed[jj][0] >= 0:
                pt, j = fix.get(parsed[jj][0], parsed[jj][0]), jj + 1
                break
        if pt is None and pts >= 0:
            pt = pts + off_arr
        if pt is None:
            continue
        k = ref.index_of(pt - off_ref)
        if k is not None and A[k] < 0:
            A[k] = mono
    Y = [None] * ref.n
    for pt, y in frames:
        k = ref.index_of(fix.get(pt, pt) - off_ref)
        if k is not None and Y[k] is None:
            Y[k] = y
    have = [k for k in range(ref.n) if A[k] >= 0]
    if not have:
        out.update(shown=0, psnr_db=psnr(mse_all_grey(ref)), lossless=False,
                   stall_s=ref.n * FRAME_NS / 1e9, startup_s=None, late=0,
                   missing=ref.n, note="arrivals not matched")
        return out
    f = min(have, key=lambda k: A[k])
    dts_f = ref.dts_of.get(int(ref.pts[f]), int(ref.pts[f]))
    D = A[f] + (ref.pts - dts_f) + int(playout_ms * 1e6)
    # slot k shows the newest j <= k that arrived and decoded by D_k
    usable = [k for k in range(ref.n) if A[k] >= 0 and Y[k] is not None]
    grey = np.full_like(ref.y[0], 128)
    shown_idx = np.full(ref.n, -1)
    mse = np.zeros(ref.n)
    exact = True
    for k in range(ref.n):
        best = -1
        for j in usable:
            if j > k:
                break
            if A[j] <= D[k]:
                best = j
        shown_idx[k] = best
        pic = Y[best] if best >= 0 else grey
        e = (pic.astype(np.int32) - ref.y[k].astype(np.int32))
        mse[k] = float((e * e).mean())
        if best != k or mse[k] != 0.0:
            exact = False
    own = shown_idx == np.arange(ref.n)
    # stall: runs of >= 2 slots without their own frame
    stall_slots, run, max_run = 0, 0, 0
    for k in range(ref.n + 1):
        if k < ref.n and not own[k]:
            run += 1
            continue
        if run >= 2:
            stall_slots += run
        max_run = max(max_run, run)
        run = 0
    late = sum(1 for k in range(ref.n) if A[k] >= 0 and Y[k] is not None
               and not own[k])
    slot_psnr = [min(psnr(m), 99.0) for m in mse]
    # the start-up a player would need to show every frame that came on
    # time: slot 0 no earlier than max_k (A_k - (PTS_k - PTS_0))
    need = max(int(A[k]) - int(ref.pts[k] - ref.pts[0]) for k in usable)
    out.update(
        stall_free_startup_s=round((need - t_req * 1e9) / 1e9, 3),
        shown=int(own.sum()),
        shown_pct=round(100.0 * own.sum() / ref.n, 2),
        psnr_db=round(psnr(mse.mean()), 2) if mse.mean() > 0 else None,
        lossless=bool(exact),
        mean_slot_psnr_db=round(float(np.mean(slot_psnr)), 2),
        stall_s=round(stall_slots * FRAME_NS / 1e9, 2),
        max_freeze_s=round(max_run * FRAME_NS / 1e9, 2),
        # the first picture: the first slot that shows its own frame
        startup_s=round((int(D[int(np.argmax(own))]) - t_req * 1e9) / 1e9, 3)
        if own.any() else None,
        first_arrival_s=round((A[f] - t_req * 1e9) / 1e9, 3),
        late=int(late),
        missing=int(ref.n - len(usable)),
        not_decoded=int(sum(1 for k in range(ref.n) if A[k] >= 0 and Y[k] is None)),
        offsets_ns=[off_ref, off_arr],
        slot_psnr=[round(x, 2) for x in slot_psnr],
        slot_own=[bool(x) for x in own],
        slot_due_s=[round((int(x) - t_req * 1e9) / 1e9, 3) for x in D],
    )
    if step_up is not None:
        out["recovery_s"] = recovery(D, own, slot_psnr, step_up)
    return out


def recovery(D, own, slot_psnr, step_up, hold=50):
    """Seconds from a capacity rise (monotonic s) to the first slot due
    after it from which `hold` slots (2 s) all show their own frame at
    GOOD_PSNR or better (0: never degraded after the rise; None: never)."""
    t = int(step_up * 1e9)
    n = len(D)
    good = [own[k] and slot_psnr[k] >= GOOD_PSNR for k in range(n)]
    start = next((k for k in range(n) if D[k] >= t), None)
    if start is None:
        return None
    for k in range(start, n):
        end = min(n, k + hold)
        if all(good[k:end]) and end - k >= min(hold, n - start):
            return round(max(0.0, (int(D[k]) - t) / 1e9), 2)
    return None


def mse_all_grey(ref):
    e = ref.y.astype(np.int32) - 128
    return float((e * e).mean())
