#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Issue 23's acceptance, as a new user would try it: files the project's
corpus does not have (scripts/make-corpus.sh, make-defaults-media.sh),
made here with ffmpeg, served by `twoflow-server --dir DIR` and
`twoflow-proxy --server ...` on loopback with no tuning flag (--insecure
for the lab's plaintext control channel; a fresh --prefix-dir and
--hls-dir per case, so every file is one the proxy has never seen), on
every viewer path:

  fetch-mp4, fetch-mkv, fetch-ts  twoflow-proxy --fetch V --output X.EXT
                                  (then ffprobe -count_frames on X)
  rtsp-ffmpeg                     ffmpeg -rtsp_transport tcp -i rtsp://...
                                  (showinfo per decoded frame, audio to WAV)
  rtsp-rtspsrc                    rtspsrc protocols=tcp ! decodebin
                                  (frames and audio samples counted)
  hls                             ffmpeg on /hls/V/index.m3u8 as it grows,
                                  then ffprobe -count_frames on the
                                  finished playlist
  page                            the proxy's web page in headless
                                  Chromium (?play=V): getVideoPlaybackQuality;
                                  the first frame's time is the page's own
                                  (requestVideoFrameCallback, from the
                                  navigation), the 0.2 s sampling's kept
                                  as first_frame_poll_s

For each file and path: video frames delivered against the source's
(ffprobe -count_frames, first video track), the first audio track's
decoded seconds against the source's, the seconds from the request to
the first decoded frame, the A/V start offset where the output keeps
timestamps, the exit code and the result line. A case passes when every
frame and the audio (within 50 ms; the page: audio decoded at all) got
through, the frames span the source's time (within 0.1 s) with its
picture size and aspect ratio and its A/V offset (within 50 ms), the
program exited 0 and the first frame came in under 2 s. One JSON line per case
(RESULT ...; `load`: the 1-minute load average at its start, the machine
being shared), a table at the end with a summary per path, --out FILE for
all of it as JSON.

  /usr/bin/python3 experiments/system/unseen_files.py [--build build]
      [--media DIR] [--files a,b] [--paths fetch-mp4,rtsp-ffmpeg,...]
      [--jobs 2] [--out FILE] [--keep]
  /usr/bin/python3 experiments/system/unseen_files.py --table FILE  (judge again)
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from twoflowlab.checks import free_port  # noqa: E402
from twoflowlab.loopback import control, ffprobe, start_server, stop  # noqa: E402
from twoflowlab.records import tagged  # noqa: E402

PATHS = ["fetch-mp4", "fetch-mkv", "fetch-ts", "rtsp-ffmpeg", "rtsp-rtspsrc",
         "hls", "page"]
SHOWINFO = re.compile(r"Parsed_showinfo.*\] n:\s*(\d+) .*pts_time:\s*([-\d.]+)")

X264 = ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"]
SINE = "sine=frequency=440:sample_rate=48000"
TESTSRC = "testsrc2=size={}:rate={}"


def lavfi(src):
    return ["-f", "lavfi", "-i", src]


# name -> (what it is, ffmpeg arguments before the output file)
MEDIA = {
    "hd50-8mbit-51.mp4": (
        "20 s 1920x1080 50 fps H.264 High 8 Mbit/s + AAC 5.1",
        lavfi(TESTSRC.format("1920x1080", 50)) + lavfi(SINE) + ["-t", "20"] + X264 +
        ["-profile:v", "high", "-g", "100", "-b:v", "8M", "-maxrate", "8M",
         "-bufsize", "16M", "-af",
         "pan=5.1|FL=c0|FR=c0|FC=c0|LFE=c0|BL=c0|BR=c0",
         "-c:a", "aac", "-b:a", "384k", "-f", "mp4"]),
    "clip3s-mp3.mp4": (
        "3 s 640x360 25 fps H.264 + MP3 in MP4",
        lavfi(TESTSRC.format("640x360", 25)) + lavfi(SINE) + ["-t", "3"] + X264 +
        ["-g", "50", "-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp4"]),
    "h264-opus.mkv": (
        "8 s 1280x720 30 fps H.264 + Opus in Matroska",
        lavfi(TESTSRC.format("1280x720", 30)) + lavfi(SINE) + ["-t", "8"] + X264 +
        ["-g", "60", "-c:a", "libopus", "-b:a", "96k", "-f", "matroska"]),
    "mpeg2-mp2-ps.mpg": (
        "8 s 720x576 25 fps MPEG-2 (B frames) + MP2 in a program stream",
        lavfi(TESTSRC.format("720x576", 25)) + lavfi(SINE) + ["-t", "8"] +
        ["-c:v", "mpeg2video", "-b:v", "5M", "-g", "12", "-bf", "2",
         "-c:a", "mp2", "-b:a", "192k", "-f", "vob"]),
    "h264-ac3.ts": (
        "8 s 1280x720 25 fps H.264 + AC-3 5.1 in MPEG-TS",
        lavfi(TESTSRC.format("1280x720", 25)) + lavfi(SINE) + ["-t", "8"] + X264 +
        ["-g", "50", "-af", "pan=5.1|FL=c0|FR=c0|FC=c0|LFE=c0|BL=c0|BR=c0",
         "-c:a", "ac3", "-b:a", "448k", "-f", "mpegts"]),
    "odd-854x480-2997.mp4": (
        "8 s 854x480 29.97 fps H.264 + AAC",
        lavfi(TESTSRC.format("854x480", "30000/1001")) + lavfi(SINE) + ["-t", "8"] +
        X264 + ["-g", "60", "-c:a", "aac", "-f", "mp4"]),
    "pal-sar16-15.mkv": (
        "8 s 720x576 25 fps SAR 16:15 H.264 + AAC in Matroska",
        lavfi(TESTSRC.format("720x576", 25)) + lavfi(SINE) + ["-t", "8"] + X264 +
        ["-g", "50", "-vf", "setsar=16/15", "-c:a", "aac", "-f", "matroska"]),
    "bpyramid-gop250.mp4": (
        "12 s 1280x720 25 fps H.264, 3 B frames with B-pyramid, 250-frame GOP + AAC",
        lavfi(TESTSRC.format("1280x720", 25)) + lavfi(SINE) + ["-t", "12"] + X264 +
        ["-bf", "3", "-x264-params", "b-pyramid=normal:keyint=250:min-keyint=250:scenecut=0",
         "-c:a", "aac", "-f", "mp4"]),
    "gop12s-30fps.mp4": (
        "16 s 960x540 30 fps H.264, one key frame every 12 s (longer than a segment) + AAC",
        lavfi(TESTSRC.format("960x540", 30)) + lavfi(SINE) + ["-t", "16"] + X264 +
        ["-x264-params", "keyint=360:min-keyint=360:scenecut=0", "-c:a", "aac",
         "-f", "mp4"]),
    # made below: the video muxed 0.7 s after the audio (an MP4 edit list)
    "audio-early-0.7.mp4": (
        "8 s 1280x720 25 fps H.264 + AAC, the audio 0.7 s before the first picture",
        None),
    "no-audio.mp4": (
        "6 s 1280x720 25 fps H.264, no audio",
        lavfi(TESTSRC.format("1280x720", 25)) + ["-t", "6"] + X264 + ["-g", "50", "-f", "mp4"]),
    "two-video.mkv": (
        "6 s, two H.264 video tracks (1280x720 and 640x360, 25 fps) + AAC in Matroska",
        lavfi(TESTSRC.format("1280x720", 25)) + lavfi(TESTSRC.format("640x360", 25)) +
        lavfi(SINE) + ["-t", "6", "-map", "0:v", "-map", "1:v", "-map", "2:a"] + X264 +
        ["-g", "50", "-c:a", "aac", "-f", "matroska"]),
    # made below from three parts: 25, 30 and 15 fps
    "vfr-concat.mp4": ("11 s variable frame rate H.264 (25, 30 then 15 fps, joined by ffmpeg's concat filter) + AAC",
                       None),
}


def ffmpeg(args, timeout=900):
    res = subprocess.run(["ffmpeg", "-v", "error", "-y", "-nostdin"] + args,
                         capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"ffmpeg {' '.join(args)}: {res.stderr.strip()[-400:]}")


def make_vfr(d, part):
    """25, 30 then 15 fps parts joined by the concat filter, encoded once
    with their own timestamps (-vsync vfr)."""
    parts = [(25, 4), (30, 4), (15, 3)]
    args = []
    for fps, secs in parts:
        args += lavfi(TESTSRC.format("1280x720", fps) + f":duration={secs}")
        args += lavfi(SINE + f":duration={secs}")
    graph = "".join(f"[{2 * i}:v][{2 * i + 1}:a]" for i in range(len(parts)))
    graph += f"concat=n={len(parts)}:v=1:a=1[v][a]"
    ffmpeg(args + ["-filter_complex", graph, "-map", "[v]", "-map", "[a]",
                   "-vsync", "vfr"] + X264 + ["-g", "50", "-c:a", "aac", "-f", "mp4", part])


def make_audio_early(d, part):
    v, a = os.path.join(d, ".early-v.mp4"), os.path.join(d, ".early-a.m4a")
    ffmpeg(lavfi(TESTSRC.format("1280x720", 25)) + ["-t", "7.3"] + X264 +
           ["-g", "50", "-f", "mp4", v])
    ffmpeg(lavfi(SINE) + ["-t", "8", "-c:a", "aac", "-f", "mp4", a])
    ffmpeg(["-i", a, "-itsoffset", "0.7", "-i", v, "-map", "1:v", "-map", "0:a",
            "-c", "copy", "-f", "mp4", part])
    os.unlink(v)
    os.unlink(a)


def make_media(d):
    d = os.path.abspath(d)
    os.makedirs(d, exist_ok=True)
    for name, (_, args) in MEDIA.items():
        out = os.path.join(d, name)
        if os.path.exists(out) and os.path.getsize(out) > 0:
            continue
        ext = os.path.splitext(name)[1]
        part = out + ".part" + ext
        if args is not None:
            ffmpeg(args + [part])
        elif name.startswith("vfr"):
            make_vfr(d, part)
        else:
            make_audio_early(d, part)
        os.rename(part, out)


def facts(path, *extra):
    """Decoded video frames (first video track) and the seconds they span
    (last timestamp - first), the picture size and aspect ratio, the first
    audio track's decoded seconds, and the A/V start offset (first video
    timestamp - first audio timestamp)."""
    v = ffprobe(path, *extra, "-select_streams", "v:0", "-show_entries",
                "frame=best_effort_timestamp_time:stream=width,height,sample_aspect_ratio",
                timeout=600)
    a = ffprobe(path, *extra, "-select_streams", "a:0", "-show_entries",
                "frame=nb_samples,pts_time:stream=sample_rate", timeout=600)
    rate = int((a.get("streams") or [{}])[0].get("sample_rate", 0) or 0)
    frames = a.get("frames", [])
    audio = sum(int(x.get("nb_samples", 0)) for x in frames) / rate if rate else 0.0

    def num(x):
        try:
            return float(x)
        except (TypeError, ValueError):
            return None
    vts = [t for t in (num(f.get("best_effort_timestamp_time"))
                       for f in v.get("frames", [])) if t is not None]
    vs = (v.get("streams") or [{}])[0]
    astart = num(frames[0].get("pts_time")) if frames else None
    return {"frames": len(v.get("frames", [])), "audio": round(audio, 3),
            "span": round(max(vts) - min(vts), 3) if vts else None,
            "size": f"{vs.get('width')}x{vs.get('height')}"
            f" {vs.get('sample_aspect_ratio', '1:1')}" if vs else None,
            "av_offset": round(min(vts) - astart, 3)
            if vts and astart is not None else None}


class Proc:
    """A program whose output is read line by line (timed) by a thread."""

    def __init__(self, argv, env, log):
        self.t0 = time.monotonic()
        self.log = open(log, "w")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env=env, bufsize=1, errors="replace")
        self.lines, self.frames = [], []
        self.th = threading.Thread(target=self._read, daemon=True)
        self.th.start()

    def _read(self):
        for line in self.p.stdout:
            t = time.monotonic() - self.t0
            self.lines.append(line)
            self.log.write(f"{t:8.3f} {line}")
            m = SHOWINFO.search(line)
            if m:
                self.frames.append((t, float(m.group(2))))

    def wait(self, timeout):
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.th.join(timeout=5)
        self.log.close()
        return "".join(self.lines)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
        return self.wait(10)


def last_error(text):
    """The last line of text that names an error (else its last line)."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    errs = [x for x in lines
            if re.search(r"error|fail|warn|invalid|refus|503|404", x, re.I)]
    return (errs or lines or [""])[-1][-240:]


def rtspsrc_main(url, timeout, wav_sink=None):
    """--rtspsrc URL: rtspsrc protocols=tcp ! decodebin; one JSON line:
    first frame's seconds, frames decoded, audio seconds, error."""
    import gi
    gi.require_version("Gst", "1.0")
    from gi.repository import Gst
    Gst.init(None)
    t0 = time.monotonic()
    pipe = Gst.parse_launch(f"rtspsrc location={url} protocols=tcp ! decodebin name=d")
    times, audio = [], {"samples": 0, "rate": 0, "first_pts": None}
    vpts = []

    def vprobe(_pad, info):
        times.append(time.monotonic() - t0)
        if info.get_buffer().pts != Gst.CLOCK_TIME_NONE:
            vpts.append(info.get_buffer().pts)
        return Gst.PadProbeReturn.OK

    def aprobe(pad, info):
        buf = info.get_buffer()
        caps = pad.get_current_caps()
        s = caps.get_structure(0)
        ch = s.get_value("channels")
        rate = s.get_value("rate")
        fmt = s.get_value("format")
        width = {"S16LE": 2, "F32LE": 4, "S32LE": 4, "S24LE": 3, "F64LE": 8, "U8": 1}.get(fmt, 2)
        audio["rate"] = rate
        audio["samples"] += buf.get_size() // (width * ch)
        if audio["first_pts"] is None:
            audio["first_pts"] = buf.pts
        return Gst.PadProbeReturn.OK

    def pad_added(_d, pad):
        caps = pad.get_current_caps() or pad.query_caps(None)
        kind = caps.get_structure(0).get_name() if caps and caps.get_size() else ""
        sink = Gst.ElementFactory.make("fakesink", None)
        sink.set_property("sync", False)
        pipe.add(sink)
        sink.sync_state_with_parent()
        pad.link(sink.get_static_pad("sink"))
        probe = vprobe if kind.startswith("video/") else aprobe \
            if kind.startswith("audio/") else None
        if probe:
            sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, probe)

    pipe.get_by_name("d").connect("pad-added", pad_added)
    pipe.set_state(Gst.State.PLAYING)
    msg = pipe.get_bus().timed_pop_filtered(int(timeout * Gst.SECOND),
                                            Gst.MessageType.EOS | Gst.MessageType.ERROR)
    err = None
    if msg is None:
        err = "timeout"
    elif msg.type == Gst.MessageType.ERROR:
        e, dbg = msg.parse_error()
        err = f"{e.message} ({(dbg or '').splitlines()[-1:] and dbg.splitlines()[-1][-160:]})"
    pipe.set_state(Gst.State.NULL)
    off = None
    if vpts and audio["first_pts"] is not None and vpts[0] != Gst.CLOCK_TIME_NONE:
        off = round((vpts[0] - audio["first_pts"]) / Gst.SECOND, 3)
    print(json.dumps({"first_frame_s": round(times[0], 3) if times else None,
                      "frames": len(times),
                      "audio": round(audio["samples"] / audio["rate"], 3)
                      if audio["rate"] else 0.0,
                      "av_offset": off, "error": err,
                      "span": round((max(vpts) - min(vpts)) / Gst.SECOND, 3)
                      if vpts else None}), flush=True)
    return 0 if err is None else 1


class Lab:
    def __init__(self, args):
        self.args = args
        build = os.path.abspath(args.build)
        self.proxy_exe = os.path.join(build, "tools", "proxy", "twoflow-proxy")
        self.server_exe = os.path.join(build, "tools", "server", "twoflow-server")
        self.env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(build, "gst"))
        self.work = tempfile.mkdtemp(prefix="twoflow-unseen-")

    def start(self, media):
        os.environ["GST_PLUGIN_PATH"] = self.env["GST_PLUGIN_PATH"]
        self.server, self.port = start_server(self.server_exe, media,
                                              os.path.join(self.work, "server.log"))
        # the catalog checks each file in a thread of its own
        for _ in range(600):
            listing = control(self.port, {"cmd": "LIST"})
            if not listing.get("checking"):
                break
            time.sleep(0.5)
        self.listing = listing

    def proxy_base(self, tag):
        return [self.proxy_exe, "--server", f"127.0.0.1:{self.port}", "--insecure",
                "--prefix-dir", os.path.join(self.work, f"prefix-{tag}")]

    def viewer_proxy(self, tag):
        ports = {"rtsp": free_port(), "http": free_port()}
        p = Proc(self.proxy_base(tag) +
                 ["--rtsp-port", str(ports["rtsp"]), "--rtsp-address", "127.0.0.1",
                  "--http-port", str(ports["http"]), "--http-address", "127.0.0.1",
                  "--hls-dir", os.path.join(self.work, f"hls-{tag}")],
                 self.env, os.path.join(self.work, f"proxy-{tag}.log"))
        # ready when the RTSP port answers
        import socket
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", ports["rtsp"]), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        return p, ports

    def case(self, name, path, src, duration):
        tag = f"{path}-{name}"
        out = {"file": name, "path": path, "src_frames": src["frames"],
               "src_audio": src["audio"], "src_av_offset": src["av_offset"],
               "src_span": src["span"], "src_size": src["size"]}
        timeout = duration + 120
        # the machine is shared: the 1-minute load average at the case's start
        out["load"] = round(os.getloadavg()[0], 2)
        t0 = time.monotonic()
        try:
            if path.startswith("fetch-"):
                out.update(self.fetch(name, path[6:], tag, timeout))
            elif path == "rtsp-ffmpeg":
                out.update(self.rtsp_ffmpeg(name, tag, src, timeout))
            elif path == "rtsp-rtspsrc":
                out.update(self.rtsp_rtspsrc(name, tag, timeout))
            elif path == "hls":
                out.update(self.hls(name, tag, src, timeout))
            elif path == "page":
                out.update(self.page(name, tag, duration, timeout))
        except Exception as e:  # a case that broke is a result too
            out.update(exit=None, result=f"{type(e).__name__}: {e}")
        out["wall_s"] = round(time.monotonic() - t0, 1)
        self.judge(out)
        print("RESULT " + json.dumps(out), flush=True)
        return out

    @staticmethod
    def judge(r):
        why = []
        if r.get("frames") != r["src_frames"]:
            why.append(f"frames {r.get('frames')}/{r['src_frames']}")
        if r["path"] == "page":
            if r["src_audio"] > 0 and not r.get("audio_present"):
                why.append("no audio")
        elif r["src_audio"] > 0 and abs((r.get("audio") or 0) - r["src_audio"]) > 0.05:
            why.append(f"audio {r.get('audio')}/{r['src_audio']} s")
        if r["src_audio"] == 0 and (r.get("audio") or 0) > 0.05:
            why.append(f"audio {r.get('audio')} s from a file with none")
        # rtspsrc's timestamps are its live clock's (jitter buffer, tsdemux
        # in live mode), not the file's: its span is shown, not judged
        if r.get("span") is not None and r["src_span"] is not None \
                and r["path"] != "rtsp-rtspsrc" \
                and abs(r["span"] - r["src_span"]) > 0.1:
            why.append(f"video spans {r['span']} s (source {r['src_span']} s)")
        if r.get("av_offset") is not None and r["src_av_offset"] is not None \
                and abs(r["av_offset"] - r["src_av_offset"]) > 0.05:
            why.append(f"A/V offset {r['av_offset']} s (source {r['src_av_offset']} s)")
        if r.get("size") and r["path"] != "page" and r["size"] != r["src_size"]:
            why.append(f"picture {r['size']} (source {r['src_size']})")
        if r.get("first_frame_s") is None or r["first_frame_s"] >= 2.0:
            why.append(f"first frame {r.get('first_frame_s')} s")
        if r.get("exit") not in (0, None) or (r["path"].startswith("fetch")
                                             and r.get("exit") != 0):
            why.append(f"exit {r.get('exit')}")
        r["pass"] = not why
        r["why"] = "; ".join(why)

    def fetch(self, name, ext, tag, timeout):
        outf = os.path.join(self.work, f"{tag}.{ext}")
        p = Proc(self.proxy_base(tag) + ["--fetch", name, "--output", outf], self.env,
                 os.path.join(self.work, f"{tag}.log"))
        text = p.wait(timeout)
        rep = (tagged(text, "FETCH-RESULT") or [{}])[-1]
        got = facts(outf) if os.path.exists(outf) else {
            "frames": 0, "audio": 0.0, "av_offset": None, "span": None, "size": None}
        d = rep.get("delivery", {})
        return {"exit": p.p.returncode, "result": rep.get("result") or last_error(text),
                "frames": got["frames"], "audio": got["audio"], "av_offset": got["av_offset"],
                "span": got["span"], "size": got["size"],
                "first_frame_s": rep.get("first_frame_s"),
                "merge_frames": f"{d.get('output_frames')}/{d.get('frames')}",
                "kernel_drops": d.get("kernel_drops")}

    def ffmpeg_viewer(self, url, tag, src, timeout, pre=()):
        wav = os.path.join(self.work, f"{tag}.wav")
        argv = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "info", *pre, "-i", url,
                "-map", "0:v:0", "-vf", "showinfo", "-f", "null", "-"]
        if src["audio"] > 0:
            argv += ["-map", "0:a:0", "-c:a", "pcm_s16le", "-f", "wav", "-y", wav]
        p = Proc(argv, self.env, os.path.join(self.work, f"{tag}.ffmpeg.log"))
        text = p.wait(timeout)
        audio = facts(wav)["audio"] if os.path.exists(wav) else 0.0
        return p, text, {"exit": p.p.returncode,
                         "result": "ok" if p.p.returncode == 0 else last_error(text),
                         "frames": len(p.frames), "audio": audio,
                         "first_frame_s": round(p.frames[0][0], 3) if p.frames else None,
                         "first_pts": p.frames[0][1] if p.frames else None,
                         "span": round(max(f[1] for f in p.frames) -
                                       min(f[1] for f in p.frames), 3)
                         if p.frames else None}

    def rtsp_ffmpeg(self, name, tag, src, timeout):
        proxy, ports = self.viewer_proxy(tag)
        try:
            _, _, r = self.ffmpeg_viewer(f"rtsp://127.0.0.1:{ports['rtsp']}/video/{name}",
                                         tag, src, timeout, pre=["-rtsp_transport", "tcp"])
        finally:
            ptext = proxy.stop()
        r.update(self.session_end(ptext))
        return r

    def rtsp_rtspsrc(self, name, tag, timeout):
        proxy, ports = self.viewer_proxy(tag)
        try:
            p = Proc(["/usr/bin/python3", os.path.abspath(__file__), "--rtspsrc",
                      f"rtsp://127.0.0.1:{ports['rtsp']}/video/{name}",
                      "--timeout", str(timeout)], self.env,
                     os.path.join(self.work, f"{tag}.rtspsrc.log"))
            text = p.wait(timeout + 15)
        finally:
            ptext = proxy.stop()
        js = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
        r = js[-1] if js else {"error": last_error(text)}
        out = {"exit": p.p.returncode, "result": r.get("error") or "ok",
               "frames": r.get("frames", 0), "audio": r.get("audio", 0.0),
               "av_offset": r.get("av_offset"), "first_frame_s": r.get("first_frame_s"),
               "span": r.get("span")}
        out.update(self.session_end(ptext))
        return out

    def hls(self, name, tag, src, timeout):
        proxy, ports = self.viewer_proxy(tag)
        url = f"http://127.0.0.1:{ports['http']}/hls/{name}/index.m3u8"
        try:
            _, text, r = self.ffmpeg_viewer(url, tag, src, timeout)
            # the finished playlist (VOD) as ffprobe counts it
            time.sleep(2)
            got = facts(url)
            r.update(probe_frames=got["frames"], probe_audio=got["audio"],
                     probe_span=got["span"], av_offset=got["av_offset"], size=got["size"])
            if got["frames"] != r["frames"]:
                r["result"] = (f"ffprobe on the finished playlist: {got['frames']} "
                               f"frames, {got['audio']} s audio; " + r["result"])
        finally:
            ptext = proxy.stop()
        r.update(self.session_end(ptext))
        return r

    def page(self, name, tag, duration, timeout):
        import page_check
        proxy, ports = self.viewer_proxy(tag)
        try:
            r = page_play(f"http://127.0.0.1:{ports['http']}/", name, duration, timeout,
                          page_check)
        finally:
            ptext = proxy.stop()
        r.update(self.session_end(ptext))
        return r

    @staticmethod
    def session_end(text):
        ends = tagged(text, "SESSION-END")
        if not ends:
            errs = [x for x in text.splitlines() if " error " in x or " warning " in x]
            return {"proxy": (errs[-1][-240:] if errs else "no SESSION-END")}
        d = ends[-1].get("delivery", {})
        return {"merge_frames": f"{d.get('output_frames')}/{d.get('frames')}",
                "kernel_drops": d.get("kernel_drops"),
                "proxy": ends[-1].get("result") or ends[-1].get("reason")}


def page_play(url, name, duration, timeout, page_check):
    """The page with ?play=NAME in headless Chromium, sampled every 0.2 s
    until the video ends (or timeout): decoded frames, time to the first
    one, audio decoded, the page's own report."""
    import urllib.request
    exe = page_check.chromium_binary()
    if not exe:
        return {"exit": None, "result": "no chromium"}
    port = page_check.free_port()
    prof = tempfile.mkdtemp(prefix="twoflow-chromium-")
    proc = subprocess.Popen([exe, "--headless=new", "--no-sandbox", "--disable-gpu",
                             "--no-first-run", "--autoplay-policy=no-user-gesture-required",
                             "--mute-audio",
                             f"--remote-debugging-port={port}", f"--user-data-dir={prof}",
                             "--window-size=1280,900", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {"exit": None, "frames": 0, "audio_present": False, "first_frame_s": None}
    try:
        ws = None
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json") as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                if pages:
                    ws = pages[0]["webSocketDebuggerUrl"]
                    break
            except OSError:
                pass
            time.sleep(0.1)
        if not ws:
            out["result"] = "chromium's DevTools did not answer"
            return out
        dt = page_check.DevTools(ws)
        dt.call("Page.enable")
        t0 = time.monotonic()
        dt.call("Page.navigate", url=url + "?play=" + name)
        expr = ("(() => { const v = document.getElementById('player');"
                " const q = v.getVideoPlaybackQuality();"
                " const r = window.twoflowReport ? window.twoflowReport() : {};"
                " return {frames: q.totalVideoFrames, dropped: q.droppedVideoFrames,"
                " t: v.currentTime, ended: v.ended, dur: v.duration,"
                " audio: v.webkitAudioDecodedByteCount || 0, w: v.videoWidth,"
                " h: v.videoHeight, errors: r.errors || [], why: r.why || null,"
                " vc: r.videoCodec || null, ac: r.audioCodec || null,"
                " first: r.firstFramePageS}; })()")
        last, still, prev_t = {}, 0, None
        while time.monotonic() - t0 < timeout:
            time.sleep(0.2)
            try:
                rep = dt.eval(expr) or {}
            except Exception:  # navigation in progress
                continue
            if rep.get("frames") and out["first_frame_s"] is None:
                out["first_frame_s"] = round(time.monotonic() - t0, 2)
            last = rep
            if rep.get("ended"):
                break
            # a player stuck for 20 s after it had started (or 40 s after
            # the end it should have reached) will not end
            still = still + 1 if rep.get("t") == prev_t else 0
            prev_t = rep.get("t")
            if (out["first_frame_s"] and still > 100) or \
               time.monotonic() - t0 > duration + 40 and still > 25:
                break
        # the page's own time of its first frame (requestVideoFrameCallback's
        # presentation time from the navigation's start), not this loop's
        # sampling every 0.2 s (up to 0.2 s and a DevTools round trip late)
        out["first_frame_poll_s"] = out["first_frame_s"]
        if isinstance(last.get("first"), (int, float)):
            out["first_frame_s"] = round(last["first"], 2)
        out.update(frames=last.get("frames", 0), dropped=last.get("dropped"),
                   audio_present=(last.get("audio") or 0) > 0,
                   played_s=round(last.get("t") or 0, 2), ended=last.get("ended"),
                   size=f"{last.get('w')}x{last.get('h')}",
                   codecs=f"{last.get('vc')}/{last.get('ac')}",
                   result=("ended" if last.get("ended") else "did not end") +
                   (f"; why: {last['why']}" if last.get("why") else "") +
                   (f"; errors: {last['errors'][-2:]}" if last.get("errors") else ""))
        return out
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(prof, ignore_errors=True)


def table(rows):
    cols = [("file", 21), ("path", 12), ("frames", 10), ("span s", 11), ("audio s", 13),
            ("A/V offset", 11),
            ("1st s", 6), ("rc", 4), ("ok", 3), ("result / why", 0)]
    lines = ["| " + " | ".join(c for c, _ in cols) + " |",
             "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        audio = (("yes" if r.get("audio_present") else "no") if r["path"] == "page"
                 else f"{r.get('audio')}/{r['src_audio']}")
        av = f"{r.get('av_offset')}/{r['src_av_offset']}" \
            if r.get("av_offset") is not None else "-"
        res = str(r.get("result") or "")[:90]
        if r.get("why"):
            res += f" — {r['why']}"
        lines.append("| " + " | ".join([
            r["file"], r["path"], f"{r.get('frames')}/{r['src_frames']}",
            f"{r.get('span')}/{r['src_span']}" if r.get("span") is not None else "-",
            audio, av,
            "-" if r.get("first_frame_s") is None else f"{r['first_frame_s']:.2f}",
            str(r.get("exit")), "✓" if r["pass"] else "✗",
            res.replace("|", "/")]) + " |")
    return "\n".join(lines)


def summary(rows):
    """Per path: passes, passes without the 2 s criterion, first frame
    median (max), and the load averages the cases ran at."""
    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

    lines = ["| path | pass | pass without the 2 s criterion | first frame median (max) s "
             "| load average |", "|---|---|---|---|---|"]
    paths = [p for p in PATHS if any(r["path"] == p for r in rows)] + ["all"]
    for p in paths:
        rs = [r for r in rows if p in ("all", r["path"])]
        firsts = [r["first_frame_s"] for r in rs if r.get("first_frame_s") is not None]
        loads = [r["load"] for r in rs if r.get("load") is not None]
        no2 = sum(1 for r in rs if r["pass"] or r["why"].startswith("first frame"))
        lines.append(f"| {p} | {sum(r['pass'] for r in rs)}/{len(rs)} | {no2}/{len(rs)} | "
                     + (f"{median(firsts):.2f} ({max(firsts):.2f})" if firsts else "-")
                     + " | " + (f"{min(loads):.1f}–{max(loads):.1f}" if loads else "-")
                     + " |")
    return "\n".join(lines)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--rtspsrc":
        ap = argparse.ArgumentParser()
        ap.add_argument("--rtspsrc")
        ap.add_argument("--timeout", type=float, default=120)
        a = ap.parse_args()
        return rtspsrc_main(a.rtspsrc, a.timeout)
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--media", default=None,
                    help="default: BUILD/experiments/unseen-media (made if absent)")
    ap.add_argument("--files", default=",".join(MEDIA))
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--jobs", type=int, default=2,
                    help="cases side by side (the page's Chromium always alone)")
    ap.add_argument("--out")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--table", metavar="JSON",
                    help="only judge again and print the table of an earlier --out")
    args = ap.parse_args()
    if args.table:
        with open(args.table) as f:
            rows = json.load(f)["rows"]
        for r in rows:
            Lab.judge(r)
        print(table(rows))
        print(f"\n{sum(r['pass'] for r in rows)} passed, "
              f"{sum(not r['pass'] for r in rows)} failed")
        print(summary(rows))
        return 0
    media = os.path.abspath(args.media or os.path.join(args.build, "experiments",
                                                       "unseen-media"))
    make_media(media)
    lab = Lab(args)
    lab.start(media)
    print(f"work directory {lab.work}; catalog: unsupported "
          f"{lab.listing.get('unsupported')}", flush=True)
    files = args.files.split(",")
    src = {}
    for f in files:
        src[f] = facts(os.path.join(media, f))
        dur = ffprobe(os.path.join(media, f), "-show_entries", "format=duration")
        src[f]["duration"] = float(dur.get("format", {}).get("duration", 20))
        print(f"source {f}: {src[f]}", flush=True)
    paths = args.paths.split(",")
    cases = [(f, p) for p in paths if p != "page" for f in files]
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            rows = list(pool.map(lambda c: lab.case(c[0], c[1], src[c[0]],
                                                    src[c[0]]["duration"]), cases))
        rows += [lab.case(f, "page", src[f], src[f]["duration"])
                 for f in files if "page" in paths]
    finally:
        stop([lab.server])
    order = {p: i for i, p in enumerate(PATHS)}
    rows.sort(key=lambda r: (files.index(r["file"]), order.get(r["path"], 99)))
    print()
    print(table(rows))
    print(f"\n{sum(r['pass'] for r in rows)} passed, "
          f"{sum(not r['pass'] for r in rows)} failed")
    print(summary(rows))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"sources": src, "listing": lab.listing, "rows": rows}, f, indent=1)
    if not args.keep:
        shutil.rmtree(lab.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
