#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Real media end to end on loopback (suite 'system').

The corpus of scripts/make-corpus.sh (MP4/MKV/TS/PS, H.264 or MPEG-2 with
AAC, Opus, MP3, MP2 or AC-3, a PTS wrap, open GOPs, interlaced H.264) goes
through twoflow-server and twoflow-proxy:

* fetch to a container (by the output's extension): ffprobe finds a video
  and an audio stream; decoded video frames = the source's; the pictures'
  PTS span the source's time (Matroska's B frames have no DTS); decoded audio
  duration within 50 ms of the source's; audio start - video start within
  one frame of the source's; no more decode errors than the source's;
* RTSP, recorded by ffmpeg over TCP and over UDP (and by GStreamer's
  rtspsrc over TCP for one file): the same frame count, audio present, no
  more decode errors than the source's; rtspsrc ! decodebin plays a file
  whose audio starts 1.5 s before its video with all of the audio and
  the source's A/V offset;
* bad input (a truncated MP4, an audio-only MP4, a text file named .mp4):
  the fetch fails with the reason, the RTSP viewer gets it in DESCRIBE's
  answer, the server logs it, and a good file is served afterwards;
* track selection: of a file with an English AAC and a French MP3 track,
  --audio-track fra/fre/eng/1/none fetch the right one (or none); deu
  fails naming the tracks.

With --new-codecs (test system-media-codecs) the H.265 and AV1 clips of
make-corpus.sh --new-codecs (libx265 closed and open GOPs with B pyramids,
Main 10 in MPEG-TS, interlaced field pictures in MPEG-TS, SVT-AV1
hierarchical, libaom alt-refs, 1080p; AAC or
Opus) at the programs' defaults: INFO names the codec and counts every
frame; fetched to .mkv and .mp4 (and .ts for H.265; .h265 a byte stream
of the video that decodes whole) and played over RTSP
(H.265 in MPEG-TS, ffmpeg over TCP, one over UDP too) every frame and the
audio as above; an AV1 .ts fetch fails and its RTSP DESCRIBE gets 415,
both saying why; the page's list (/videos) marks the AV1 files with the
reason, and the H.265 ones (hls.js 1.5 reads no H.265 from MPEG-TS),
whose HLS segments hold every frame (an AV1 playlist: 503 with the
reason); the server sends both through ratetranscoder (no "no coder"
line in its log).

usage: test_media.py SERVER_EXE PROXY_EXE MAKE_CORPUS CORPUS_DIR [--new-codecs]
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from twoflowlab.checks import check, free_port, wait_port
from twoflowlab.loopback import (control, ffprobe, finish, side_by_side, start_server,
                                stop)

SEGMENT = "1"

# corpus file -> fetch outputs (extension decides the container)
GOOD = {
    "h264-aac.mp4": ["mp4", "ts"],
    "h264-aac.mkv": ["mkv", "mp4"],
    # Opus: transcoded to AAC for MP4 (mp4mux 1.22 writes a dOps box that
    # loses 0.3 s of audio), the whole duration kept
    "h264-opengop-opus.mkv": ["mkv", "mp4"],
    "h264-field-mp3.ts": ["ts"],
    # MP4: the MPEG-2 video re-encoded to H.264 (mp4mux takes no MPEG-2),
    # every frame
    "mpeg2-mp2.ts": ["ts", "mkv", "mp4"],
    "mpeg2-ac3.ts": ["ts"],
    "mpeg2-ac3.mpg": ["ts"],
    # E-AC-3: transcoded to AAC for TS and MP4, carried as is in MKV
    "h264-eac3.ts": ["ts", "mp4", "mkv"],
    # the video 1.5 s after the audio: the audio before it is kept
    "h264-late-video.mp4": ["mkv", "ts"],
    # 0.6 s: the session sends the picture that lead early
    "h264-early-audio.mp4": ["ts"],
    # 25 then 15 fps: mp4mux's edit list once ended before the last picture
    "h264-vfr.mp4": ["mp4"],
}
# make-corpus.sh --new-codecs: file -> fetch outputs, and the RTSP viewers
NEW_CODECS = {
    "h265-aac.mp4": ["mkv", "mp4", "ts"],
    "h265-opengop-main10-aac.ts": ["ts"],
    # Opus: to AAC for MP4, as with H.264
    "h265-opus.mkv": ["mkv", "mp4"],
    "h265-1080p-aac.mp4": ["mp4"],
    # field pictures (x265 interlace=tff, pic_struct SEI)
    "h265-interlaced-aac.ts": ["mkv", "ts"],
    "av1-svt-opus.mkv": ["mkv", "mp4"],
    # libaom in MP4: qtdemux's AV1 codec_data made av1C again for Matroska
    "av1-aom-aac.mp4": ["mkv"],
    "av1-1080p-opus.mkv": ["mkv"],
}
NEW_RTSP = [("h265-aac.mp4", "tcp"), ("h265-opengop-main10-aac.ts", "tcp"),
            ("h265-opengop-main10-aac.ts", "udp"), ("h265-opus.mkv", "tcp"),
            ("h265-interlaced-aac.ts", "tcp")]
AV1_WHY = "no AV1-in-MPEG-TS muxer and no AV1 RTP payloader"
# the page's hls.js 1.5 (its HLS playlist is served all the same)
H265_PAGE_WHY = "reads no H.265 from MPEG-TS segments"
BAD = {
    "bad-truncated.mp4": "no playable streams",
    "bad-audio-only.mp4": "no video stream",
    "bad-text.mp4": "Could not determine type",
}


def media_facts(path):
    """Streams, decoded video frames, decoded audio duration, A/V start
    offset and decode errors of a file, as ffprobe/ffmpeg see them."""
    f = {"video": None, "audio": None}
    for s in ffprobe(path, "-show_entries",
                     "stream=codec_type,codec_name,start_time").get("streams", []):
        kind = s.get("codec_type")
        if kind in ("video", "audio") and f[kind] is None:
            f[kind] = s.get("codec_name")
            f[kind + "_start"] = float(s.get("start_time", "nan"))
    v = ffprobe(path, "-select_streams", "v:0", "-count_frames",
                "-show_entries", "stream=nb_read_frames", timeout=60).get("streams", [{}])
    f["frames"] = int(v[0].get("nb_read_frames", 0) or 0) if v else 0
    # the time the pictures span (first to last PTS): a Matroska source's
    # B-frame video has no DTS, which an MP4 once took for twice its length
    pts = [float(p["pts_time"]) for p in ffprobe(
        path, "-select_streams", "v:0", "-show_entries", "packet=pts_time").get(
            "packets", []) if p.get("pts_time") not in (None, "N/A")]
    f["span"] = max(pts) - min(pts) if pts else 0.0
    a = ffprobe(path, "-select_streams", "a:0", "-show_entries",
                "frame=nb_samples:stream=sample_rate")
    rate = int((a.get("streams") or [{}])[0].get("sample_rate", 0) or 0)
    f["audio_duration"] = sum(int(x.get("nb_samples", 0)) for x in a.get("frames", [])) \
        / rate if rate else 0.0
    if f["video"] and f["audio"]:
        f["av_offset"] = f["audio_start"] - f["video_start"]
    res = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-v", "error", "-i", path,
                          "-map", "0", "-f", "null", "-"],
                         capture_output=True, text=True, timeout=60)
    f["errors"] = decode_errors(res.stderr)
    return f


def decode_errors(stderr):
    """ffmpeg's error lines, without the null muxer's complaints about
    timestamps (not decoding)."""
    return len([ln for ln in stderr.splitlines() if ln.strip()
                and "to muxer in stream" not in ln and "Last message repeated" not in ln])


def rtsp_view(url, transport, wav):
    """ffmpeg plays an RTSP URL: decoded video frames (its progress
    report), the audio decoded into a WAV, and its error lines."""
    res = subprocess.run(["ffmpeg", "-hide_banner", "-v", "error", "-y",
                          "-rtsp_transport", transport, "-i", url,
                          "-map", "0:v:0", "-f", "null", "-",
                          "-map", "0:a:0?", "-f", "wav", wav,
                          "-progress", "pipe:1"],
                         capture_output=True, text=True, timeout=60)
    frames = [int(m) for m in re.findall(r"^frame=(\d+)", res.stdout, re.M)]
    audio = 0.0
    if os.path.exists(wav) and os.path.getsize(wav) > 44:
        a = ffprobe(wav, "-show_entries", "stream=duration")
        audio = float((a.get("streams") or [{}])[0].get("duration", 0) or 0)
    return {"rc": res.returncode, "frames": frames[-1] if frames else 0,
            "audio_duration": audio, "errors": decode_errors(res.stderr),
            "stderr": res.stderr}


RTSPSRC = """
import sys, gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst
Gst.init(None)
p = Gst.parse_launch(f"rtspsrc location={sys.argv[1]} protocols=tcp ! rtpmp2tdepay ! "
                     f"filesink location={sys.argv[2]}")
p.set_state(Gst.State.PLAYING)
m = p.get_bus().timed_pop_filtered(60 * Gst.SECOND,
                                   Gst.MessageType.EOS | Gst.MessageType.ERROR)
p.set_state(Gst.State.NULL)
if m is None or m.type != Gst.MessageType.EOS:
    print(m.parse_error()[0].message if m else "timeout")
    sys.exit(1)
"""


# GStreamer's client decoding: the audio it decodes (s) and where the
# first picture comes after the first audio (s), as JSON
RTSPSRC_DECODE = """
import json, sys, gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst
Gst.init(None)
p = Gst.parse_launch(f"rtspsrc location={sys.argv[1]} protocols=tcp ! decodebin name=d")
got = {"samples": 0, "rate": 0, "audio_pts": None, "video_pts": None}
def probe(pad, info, kind):
    b = info.get_buffer()
    if kind == "audio":
        s = pad.get_current_caps().get_structure(0)
        got["rate"] = s.get_value("rate")
        got["samples"] += b.get_size() // (s.get_value("channels") * 4 if
                                           s.get_value("format") == "F32LE" else
                                           s.get_value("channels") * 2)
    key = kind + "_pts"
    if got[key] is None and b.pts != Gst.CLOCK_TIME_NONE:
        got[key] = b.pts
    return Gst.PadProbeReturn.OK
def added(_d, pad):
    kind = pad.query_caps(None).get_structure(0).get_name().split("/")[0]
    sink = Gst.ElementFactory.make("fakesink", None)
    sink.set_property("sync", False)
    p.add(sink)
    sink.sync_state_with_parent()
    pad.link(sink.get_static_pad("sink"))
    if kind in ("audio", "video"):
        sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, probe, kind)
p.get_by_name("d").connect("pad-added", added)
p.set_state(Gst.State.PLAYING)
m = p.get_bus().timed_pop_filtered(60 * Gst.SECOND,
                                   Gst.MessageType.EOS | Gst.MessageType.ERROR)
p.set_state(Gst.State.NULL)
ok = m is not None and m.type == Gst.MessageType.EOS
print(json.dumps({"ok": ok, "audio": got["samples"] / got["rate"] if got["rate"] else 0,
                  "offset": (got["video_pts"] - got["audio_pts"]) / Gst.SECOND
                  if None not in (got["video_pts"], got["audio_pts"]) else None}))
"""


def rtspsrc_decode(url):
    """rtspsrc ! decodebin plays url: {ok, audio (s), offset (s from the
    first audio to the first picture)}."""
    res = subprocess.run(["/usr/bin/python3", "-c", RTSPSRC_DECODE, url],
                         capture_output=True, text=True, timeout=90)
    try:
        return json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ok": False, "audio": 0, "offset": None, "error": res.stderr[-300:]}


def rtspsrc_record(url, out):
    """GStreamer's RTSP client records the stream to its end (the first
    EOS or error on the bus; gst-launch also failed on rtspsrc's PAUSE
    after the end when the server had already closed the connection)."""
    res = subprocess.run(["/usr/bin/python3", "-c", RTSPSRC, url, out],
                         capture_output=True, text=True, timeout=90)
    return None if res.returncode == 0 else (res.stdout + res.stderr).strip()[-200:]


def compare(what, src, got, video=None, audio_tol=0.050):
    video = video or src["video"]
    check(got["video"] == video and got["audio"] is not None,
          f"{what}: video {got['video']} (want {video}), audio {got['audio']} "
          f"(source {src['audio']})")
    check(got["frames"] == src["frames"],
          f"{what}: {got['frames']} video frames decoded (source {src['frames']})")
    check(abs(got["span"] - src["span"]) <= 0.045,
          f"{what}: the pictures span {got['span']:.3f} s (source {src['span']:.3f} s)")
    check(abs(got["audio_duration"] - src["audio_duration"]) <= audio_tol,
          f"{what}: audio {got['audio_duration']:.3f} s decoded (source "
          f"{src['audio_duration']:.3f} s)")
    if "av_offset" in got and "av_offset" in src:
        check(abs(got["av_offset"] - src["av_offset"]) <= 0.040 + 1e-6,
              f"{what}: A/V start offset {got['av_offset'] * 1000:.1f} ms (source "
              f"{src['av_offset'] * 1000:.1f} ms)")
    else:
        check(False, f"{what}: no A/V start offset")
    check(got["errors"] <= src["errors"],
          f"{what}: {got['errors']} decode error lines (source {src['errors']})")


def hls_frames(http_port, name, work):
    """Asks the proxy for name's HLS, waits for its VOD playlist (at most
    60 s) and counts the video frames and audio seconds of its segments."""
    base = f"http://127.0.0.1:{http_port}/hls/{urllib.parse.quote(name)}/"
    playlist = ""
    for _ in range(120):
        try:
            with urllib.request.urlopen(base + "index.m3u8", timeout=10) as r:
                playlist = r.read().decode()
        except OSError:
            pass
        if "#EXT-X-ENDLIST" in playlist:
            break
        time.sleep(0.5)
    out = os.path.join(work, name + ".hls.ts")
    with open(out, "wb") as f:
        for seg in [ln for ln in playlist.splitlines() if ln.endswith(".ts")]:
            with urllib.request.urlopen(base + seg, timeout=10) as r:
                f.write(r.read())
    return media_facts(out) if "#EXT-X-ENDLIST" in playlist else None


def new_codecs_main(server_exe, proxy_exe, make_corpus, corpus):
    """The H.265 and AV1 clips end to end (the module's doc)."""
    t0 = time.monotonic()
    res = subprocess.run([make_corpus, "--new-codecs", corpus], capture_output=True,
                         text=True, timeout=300)
    check(res.returncode == 0, f"H.265/AV1 corpus made in {time.monotonic() - t0:.1f} s "
          f"({res.stderr.strip()[-300:]})")
    work = tempfile.mkdtemp(prefix="twoflow-codecs-")
    server_log = os.path.join(work, "server.log")
    proxy_log = os.path.join(work, "proxy.log")
    procs = []
    try:
        rport, hport = free_port(), free_port()
        server, cport = start_server(server_exe, corpus, server_log)
        procs.append(server)
        # the programs' defaults: no tuning flag
        proxy_base = [proxy_exe, "--server", f"127.0.0.1:{cport}", "--insecure",
                      "--prefix-dir", os.path.join(work, "prefix")]
        sources = dict(zip(NEW_CODECS, side_by_side(
            lambda name: media_facts(os.path.join(corpus, name)), NEW_CODECS)))
        for name in NEW_CODECS:
            info = control(cport, {"cmd": "INFO", "video": name}, timeout=60)
            want = "av1" if name.startswith("av1") else "h265"
            check(info.get("ok") and info.get("codec") == want
                  and info.get("frames") == sources[name]["frames"]
                  and info.get("audio_records", 0) > 0,
                  f"INFO {name}: {info.get('codec')} (want {want}), {info.get('frames')} "
                  f"frames (source {sources[name]['frames']}), audio "
                  f"{info.get('audio_codec')} {info.get('error', '')}")

        proxy = subprocess.Popen(proxy_base + ["--rtsp-port", str(rport),
                                               "--rtsp-address", "127.0.0.1",
                                               "--http-port", str(hport),
                                               "--http-address", "127.0.0.1",
                                               "--hls-dir", os.path.join(work, "hls")],
                                 stdout=open(proxy_log, "w"), stderr=subprocess.STDOUT)
        procs.append(proxy)
        wait_port(rport)

        # fetches, RTSP viewers and the HLS copy: live-paced 2-3 s clips,
        # mostly waiting: side by side, six at a time
        def run(job):
            kind, name, ext = job
            if kind == "rtsp":
                return rtsp_view(f"rtsp://127.0.0.1:{rport}/video/{name}", ext,
                                 os.path.join(work, f"{name}.rtsp-{ext}.wav"))
            if kind == "hls":
                return hls_frames(hport, name, work)
            out = os.path.join(work, f"{name}.{ext}")
            res = subprocess.run(proxy_base + ["--fetch", name, "--output", out],
                                 capture_output=True, text=True, timeout=90)
            m = re.search(r'"first_frame_s":([0-9.]+)', res.stdout)
            return res, media_facts(out) if res.returncode == 0 else None, \
                float(m.group(1)) if m else None

        jobs = [("fetch", name, ext) for name, exts in NEW_CODECS.items() for ext in exts]
        # .h265: the video alone, hvc1 from MP4 made a byte stream
        jobs += [("fetch", "av1-aom-aac.mp4", "ts"), ("fetch", "h265-aac.mp4", "h265"),
                 ("hls", "h265-aac.mp4", None)]
        jobs += [("rtsp", name, t) for name, t in NEW_RTSP]
        results = dict(zip(jobs, side_by_side(run, jobs, 6)))
        for (kind, name, ext), r in results.items():
            if kind != "fetch":
                continue
            res, got, first = r
            what = f"fetch {name} -> .{ext}"
            if name.startswith("av1") and ext == "ts":
                check(res.returncode != 0 and AV1_WHY in res.stderr,
                      f"{what}: refused with the reason ({res.stderr.strip()[-200:]})")
                continue
            check(res.returncode == 0 and got is not None,
                  f"{what}: exit {res.returncode} {res.stderr.strip()[-200:]}")
            if got is not None and ext == "h265":
                check(got["video"] == "hevc" and got["frames"] == sources[name]["frames"]
                      and got["errors"] == 0,
                      f"{what}: {got['video']}, {got['frames']} frames decoded (source "
                      f"{sources[name]['frames']}), {got['errors']} decode errors")
            elif got is not None:
                src = sources[name]
                print(f"     {what}: {got['frames']}/{src['frames']} frames, audio "
                      f"{got['audio_duration']:.3f}/{src['audio_duration']:.3f} s, "
                      f"first frame {first} s")
                # ffmpeg's Opus (its 312-sample pre-skip) re-encoded to AAC
                # for MP4: + AAC's priming frame (no edit list from mp4mux
                # 1.22) and the last frame's padding, 51 ms in all
                compare(what, src, got, audio_tol=0.075 if ext == "mp4"
                        and src["audio"] == "opus" else 0.050)

        for name, transport in NEW_RTSP:
            got = results[("rtsp", name, transport)]
            src, what = sources[name], f"RTSP {name} over {transport}"
            print(f"     {what}: {got['frames']}/{src['frames']} frames, audio "
                  f"{got['audio_duration']:.3f}/{src['audio_duration']:.3f} s")
            check(got["rc"] == 0 and got["frames"] == src["frames"],
                  f"{what}: exit {got['rc']}, {got['frames']} video frames decoded "
                  f"(source {src['frames']}) {got['stderr'].strip()[-200:]}")
            check(abs(got["audio_duration"] - src["audio_duration"]) <= 0.1,
                  f"{what}: audio {got['audio_duration']:.3f} s decoded (source "
                  f"{src['audio_duration']:.3f} s)")
            check(got["errors"] <= src["errors"],
                  f"{what}: {got['errors']} decode error lines (source {src['errors']})")
        res = subprocess.run(["ffmpeg", "-hide_banner", "-nostats", "-rtsp_transport",
                              "tcp", "-i", f"rtsp://127.0.0.1:{rport}/video/av1-aom-aac.mp4",
                              "-f", "null", "-"], capture_output=True, text=True, timeout=60)
        check(res.returncode != 0 and "415" in res.stderr and AV1_WHY in res.stderr,
              f"RTSP av1-aom-aac.mp4: DESCRIBE answered 415 with the reason "
              f"({res.stderr.strip()[-200:]})")

        # the page: AV1 marked with the reason; H.265's HLS whole
        with urllib.request.urlopen(f"http://127.0.0.1:{hport}/videos", timeout=30) as r:
            listing = json.loads(r.read())
        marked = listing.get("unsupported", {})
        check(all(AV1_WHY in marked.get(n, "") for n in NEW_CODECS if n.startswith("av1"))
              and all(H265_PAGE_WHY in marked.get(n, "") for n in NEW_CODECS
                      if n.startswith("h265")),
              f"/videos marks the AV1 and H.265 files with the reason: {marked}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{hport}/hls/av1-aom-aac.mp4/"
                                   "index.m3u8", timeout=30).close()
            status, body = 200, ""
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read().decode(errors="replace")
        check(status == 503 and AV1_WHY in body,
              f"HLS of an AV1 file: {status} with the reason ({body[:200]})")
        name = "h265-aac.mp4"
        got = results[("hls", name, None)]
        src = sources[name]
        check(got is not None and got["frames"] == src["frames"] and got["video"] == "hevc"
              and abs(got["audio_duration"] - src["audio_duration"]) <= 0.05,
              f"HLS {name}: {got and got['frames']} frames (source {src['frames']}), "
              f"audio {got and round(got['audio_duration'], 3)} s (source "
              f"{src['audio_duration']:.3f} s)")
        check(proxy.poll() is None and server.poll() is None,
              "server and proxy still running")
        # ratetranscoder has a coder for both (H.265: libx265 keep=none,
        # dropping under keep=i|ip; AV1: dropping): the server puts it in
        # the enhanced pipeline, not the fallback (docs/transcoder.md,
        # "Codecs the server passes without a coder")
        with open(server_log, errors="replace") as f:
            sout = f.read()
        for codec in ("h265", "av1"):
            check(re.search(rf"session \d+: {codec} video: no coder in ratetranscoder",
                            sout) is None,
                  f"the server sends {codec} through ratetranscoder")
    finally:
        for p, log in ((procs[0] if procs else None, server_log),
                       (procs[1] if len(procs) > 1 else None, proxy_log)):
            if p is not None and p.poll() not in (None, 0, -signal.SIGTERM):
                with open(log, errors="replace") as f:
                    print(f"{p.args[0]} exited {p.returncode}; its log ends:\n"
                          + "".join(f.readlines()[-40:]))
        stop(procs)
        if os.environ.get("TWOFLOW_KEEP") is None:
            shutil.rmtree(work, ignore_errors=True)
    return finish(t0, "all H.265/AV1 media checks passed")


def main():
    server_exe, proxy_exe, make_corpus, corpus = sys.argv[1:5]
    if "--new-codecs" in sys.argv[5:]:
        return new_codecs_main(server_exe, proxy_exe, make_corpus, corpus)
    t0 = time.monotonic()
    res = subprocess.run([make_corpus, corpus], capture_output=True, text=True,
                         timeout=300)
    check(res.returncode == 0, f"corpus made in {time.monotonic() - t0:.1f} s "
          f"({res.stderr.strip()[-300:]})")
    work = tempfile.mkdtemp(prefix="twoflow-media-")
    procs = []
    # logs to files: a pipe nobody reads until the end fills up and
    # blocks the program
    server_log = os.path.join(work, "server.log")
    proxy_log = os.path.join(work, "proxy.log")
    try:
        rport = free_port()
        server, cport = start_server(server_exe, corpus, server_log)
        procs.append(server)
        proxy_base = [proxy_exe, "--server", f"127.0.0.1:{cport}", "--insecure",
                      "--segment-duration", SEGMENT,
                      "--prefix-dir", os.path.join(work, "prefix")]
        # independent cases (fetches, viewers: live-paced, mostly waiting)
        # run side by side; their checks follow in order
        sources = dict(zip(GOOD, side_by_side(
            lambda name: media_facts(os.path.join(corpus, name)), GOOD)))

        # 1. INFO: the audio is counted
        for name in GOOD:
            info = control(cport, {"cmd": "INFO", "video": name}, timeout=30)
            check(info.get("ok") and info.get("audio_codec") not in (None, "none")
                  and info.get("audio_records", 0) > 0
                  and info.get("essential_peak_rate", 0) > info.get("audio_mean_rate", 0) > 0,
                  f"INFO {name}: {info.get('codec')} + {info.get('audio_codec')}, "
                  f"{info.get('audio_records')} audio records, "
                  f"{info.get('audio_mean_rate')} bit/s audio in the essential flow")

        # 2. fetch to containers
        def fetch(job):
            name, ext = job
            out = os.path.join(work, f"{name}.{ext}")
            res = subprocess.run(proxy_base + ["--fetch", name, "--output", out],
                                 capture_output=True, text=True, timeout=60)
            return res, media_facts(out) if res.returncode == 0 else None

        jobs = [(name, ext) for name, exts in GOOD.items() for ext in exts]
        for (name, ext), (res, got) in zip(jobs, side_by_side(fetch, jobs)):
            check(res.returncode == 0 and got is not None,
                  f"fetch {name} -> .{ext}: exit {res.returncode} "
                  f"{res.stderr.strip()[-200:]}")
            # an edit list's skipped audio (AAC priming) is not sent: it took
            # the next frame's time, a zero-length sample in mp4mux
            check("zero duration" not in res.stderr,
                  f"fetch {name} -> .{ext}: no zero-length sample")
            if got is not None:
                compare(f"fetch {name} -> .{ext}", sources[name], got,
                        "h264" if ext == "mp4" and sources[name]["video"] in
                        ("mpeg1video", "mpeg2video") else None)

        # 2b. track selection: by language (ISO 639-1 or -2), by index, none
        def select(sel):
            out = os.path.join(work, f"2audio-{sel}.mkv")
            res = subprocess.run(proxy_base + ["--audio-track", sel, "--fetch",
                                               "h264-2audio.mkv", "--output", out],
                                 capture_output=True, text=True, timeout=60)
            return res, media_facts(out) if res.returncode == 0 else \
                {"audio": "?", "frames": 0}

        wants = (("fra", "mp3"), ("fre", "mp3"), ("eng", "aac"), ("1", "mp3"),
                 ("none", None))
        for (sel, want), (res, got) in zip(wants, side_by_side(
                select, [sel for sel, _ in wants])):
            check(res.returncode == 0 and got["audio"] == want and got["frames"] == 75,
                  f"fetch h264-2audio.mkv --audio-track {sel}: audio {got['audio']} "
                  f"(want {want}), {got['frames']} frames {res.stderr.strip()[-200:]}")
        res = subprocess.run(proxy_base + ["--audio-track", "deu", "--fetch",
                                           "h264-2audio.mkv", "--output",
                                           os.path.join(work, "2audio-deu.mkv")],
                             capture_output=True, text=True, timeout=60)
        check(res.returncode != 0 and "no audio track 'deu'" in res.stderr,
              f"fetch --audio-track deu: {res.stderr.strip()[-200:]}")

        # 3. RTSP viewers, each with its own server session
        proxy = subprocess.Popen(proxy_base + ["--rtsp-port", str(rport),
                                               "--rtsp-address", "127.0.0.1"],
                                 stdout=open(proxy_log, "w"), stderr=subprocess.STDOUT)
        procs.append(proxy)
        time.sleep(0.5)

        def view(job):
            name, transport = job
            return rtsp_view(f"rtsp://127.0.0.1:{rport}/video/{name}", transport,
                             os.path.join(work, f"{name}.rtsp-{transport}.wav"))

        jobs = [(name, transport) for name in GOOD for transport in ("tcp", "udp")]
        for (name, transport), got in zip(jobs, side_by_side(view, jobs)):
            src = sources[name]
            what = f"RTSP {name} over {transport}"
            check(got["rc"] == 0, f"{what}: ffmpeg exit {got['rc']} "
                  f"{got['stderr'].strip()[-200:]}")
            check(got["frames"] == src["frames"],
                  f"{what}: {got['frames']} video frames decoded (source {src['frames']})")
            check(abs(got["audio_duration"] - src["audio_duration"]) <= 0.1,
                  f"{what}: audio {got['audio_duration']:.3f} s decoded (source "
                  f"{src['audio_duration']:.3f} s)")
            check(got["errors"] <= src["errors"],
                  f"{what}: {got['errors']} decode error lines (source {src['errors']})")
        # GStreamer's client
        name = "h264-aac.mp4"
        rec = os.path.join(work, "rtspsrc.ts")
        err = rtspsrc_record(f"rtsp://127.0.0.1:{rport}/video/{name}", rec)
        got = media_facts(rec) if err is None else {"frames": 0, "audio": None}
        check(err is None and got["frames"] == sources[name]["frames"]
              and got["audio"] == sources[name]["audio"],
              f"RTSP {name} with rtspsrc: {got['frames']} frames, audio {got['audio']} "
              f"({err})")

        # the audio before the first picture reaches GStreamer's client too
        # (its tsdemux timestamps nothing before the first PCR: the proxy
        # puts the PCR on the audio then)
        # (h264-early-audio.mp4's 0.6 s lead: the picture sent that lead
        # early, the audio before it at once, docs/system.md "Start-up")
        for name in ("h264-late-video.mp4", "h264-early-audio.mp4"):
            got = rtspsrc_decode(f"rtsp://127.0.0.1:{rport}/video/{name}")
            src = sources[name]
            check(got["ok"] and abs(got["audio"] - src["audio_duration"]) <= 0.1
                  and got["offset"] is not None
                  and abs(got["offset"] + src["av_offset"]) <= 0.08,
                  f"RTSP {name} decoded by rtspsrc: audio {got['audio']:.3f} s (source "
                  f"{src['audio_duration']:.3f} s), the first picture {got['offset']} s "
                  f"after the audio (source {-src['av_offset']:.3f} s) "
                  f"{got.get('error', '')}")

        check(proxy.poll() is None, f"proxy still running after the viewers "
              f"(exit {proxy.returncode})")

        # 4. bad input: clear errors to the viewer and in the log
        def bad(name):
            fetched = subprocess.run(proxy_base + ["--fetch", name, "--output",
                                                   os.path.join(work, name + ".out.ts")],
                                     capture_output=True, text=True, timeout=60)
            viewed = subprocess.run(["ffmpeg", "-hide_banner", "-nostats",
                                     "-rtsp_transport", "tcp", "-i",
                                     f"rtsp://127.0.0.1:{rport}/video/{name}",
                                     "-f", "null", "-"], capture_output=True, text=True,
                                    timeout=60)
            return fetched, viewed

        for (name, reason), (res, view_res) in zip(BAD.items(), side_by_side(bad, BAD)):
            check(res.returncode != 0 and reason in res.stderr,
                  f"fetch {name}: fails with '{reason}' ({res.stderr.strip()[-200:]})")
            res = view_res
            check(res.returncode != 0 and reason in res.stderr and "415" in res.stderr,
                  f"RTSP {name}: DESCRIBE answered 415 with '{reason}' "
                  f"({res.stderr.strip()[-200:]})")
        out = os.path.join(work, "after-bad.ts")
        res = subprocess.run(proxy_base + ["--fetch", "mpeg2-mp2.ts", "--output", out],
                             capture_output=True, text=True, timeout=60)
        check(res.returncode == 0 and media_facts(out)["frames"] == sources["mpeg2-mp2.ts"]["frames"],
              "a good file is served after the bad ones")
        check(server.poll() is None, "server still running")

        proxy.send_signal(signal.SIGTERM)
        proxy.wait(timeout=10)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
        with open(server_log) as f:
            sout = f.read()
        with open(proxy_log) as f:
            pout = f.read()
        for name, reason in BAD.items():
            check(re.search(re.escape(name) + ".*" + re.escape(reason), sout) is not None,
                  f"server log names {name}: {reason}")
            check(re.search(re.escape(name) + ".*" + re.escape(reason), pout) is not None,
                  f"proxy log names {name}: {reason}")
    finally:
        for p, log in ((procs[0] if procs else None, server_log),
                       (procs[1] if len(procs) > 1 else None, proxy_log)):
            if p is not None and p.poll() not in (None, 0, -signal.SIGTERM):
                # a program that died: its last words (a CRITICAL under
                # G_DEBUG=fatal-criticals, a crash)
                with open(log, errors="replace") as f:
                    print(f"{p.args[0]} exited {p.returncode}; its log ends:\n"
                          + "".join(f.readlines()[-40:]))
        stop(procs)
        if os.environ.get("TWOFLOW_KEEP") is None:
            shutil.rmtree(work, ignore_errors=True)
    return finish(t0, "all media checks passed")


if __name__ == "__main__":
    sys.exit(main())
