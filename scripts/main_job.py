#!/usr/bin/python3
"""twoflow main job: runs the project's pipelines on bundled media and prints
a report.

For now (foundation): for the shared sample and a generated MPEG-2 stream,
split → merge in one pipeline, verify the merged stream is byte-identical to
the parsed source, decode it, and show frame counts per picture type; then the
same with 10% of the enhanced frames lost, with the merge's damage metrics.

Run through scripts/main.sh (which installs and builds first), or directly:
  GST_PLUGIN_PATH=build/gst /usr/bin/python3 scripts/main_job.py --build build
"""
import argparse
import hashlib
import os
import sys
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared")


def run(desc, timeout=300):
    """Runs a pipeline description to EOS; returns the pipeline (in NULL)."""
    pipeline = Gst.parse_launch(desc)
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    msg = bus.timed_pop_filtered(timeout * Gst.SECOND,
                                 Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if msg is None:
        raise RuntimeError("pipeline timed out: " + desc)
    if msg.type == Gst.MessageType.ERROR:
        err, dbg = msg.parse_error()
        raise RuntimeError(f"{msg.src.get_name()}: {err.message} ({dbg})")
    return pipeline


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def stats(pipeline, name):
    s = pipeline.get_by_name(name).get_property("stats")
    return {s.nth_field_name(i): s.get_value(s.nth_field_name(i))
            for i in range(s.n_fields())}


def count_decoded(path):
    counter = {"n": 0}
    p = Gst.parse_launch(f"filesrc location={path} ! mpegvideoparse ! "
                         "avdec_mpeg2video ! fakesink name=sink")
    pad = p.get_by_name("sink").get_static_pad("sink")

    def probe(_pad, _info):
        counter["n"] += 1
        return Gst.PadProbeReturn.OK

    pad.add_probe(Gst.PadProbeType.BUFFER, probe)
    bus = p.get_bus()
    p.set_state(Gst.State.PLAYING)
    msg = bus.timed_pop_filtered(300 * Gst.SECOND, Gst.MessageType.EOS |
                                 Gst.MessageType.ERROR | Gst.MessageType.WARNING)
    p.set_state(Gst.State.NULL)
    if msg is None or msg.type != Gst.MessageType.EOS:
        return None
    return counter["n"]


def generated_stream(build):
    path = os.path.join(build, "mainjob", "ball-600.m2v")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        run("videotestsrc num-buffers=600 pattern=ball ! "
            "video/x-raw,width=352,height=288,framerate=25/1 ! "
            "mpeg2enc format=3 b-per-refframe=2 min-gop-size=12 max-gop-size=12 "
            f"! filesink location={path}.tmp")
        os.rename(path + ".tmp", path)
    return path


SPLIT_MERGE = (
    "filesrc location={src} ! mpegvideoparse ! twoflowsplit name=s "
    "twoflowmerge name=m ! filesink location={out} "
    "s.essential ! queue max-size-buffers=0 max-size-bytes=0 max-size-time=0 ! m.essential "
    "s.enhanced ! queue ! {loss} m.enhanced")


def session(title, src, workdir, loss):
    parsed = os.path.join(workdir, "parsed.m2v")
    merged = os.path.join(workdir, "merged.m2v")
    run(f"filesrc location={src} ! mpegvideoparse ! filesink location={parsed}")
    lossdesc = f"identity drop-probability={loss} !" if loss else ""
    t0 = time.monotonic()
    p = run(SPLIT_MERGE.format(src=src, out=merged, loss=lossdesc))
    elapsed = time.monotonic() - t0
    split, merge = stats(p, "s"), stats(p, "m")
    decoded = count_decoded(merged)
    identical = sha256(parsed) == sha256(merged)
    print(f"\n== {title}: {os.path.basename(src)}"
          f"{f' with {loss:.0%} of enhanced records lost' if loss else ''}")
    print(f"  frames in:        I {split['frames-i']}  P {split['frames-p']}  "
          f"B {split['frames-b']}  (total {split['frames-i'] + split['frames-p'] + split['frames-b']})")
    print(f"  essential flow:   {split['essential-frames']} frames, "
          f"{split['essential-bytes']} bytes")
    print(f"  enhanced flow:    {split['enhanced-frames']} frames, "
          f"{split['enhanced-bytes']} bytes")
    print(f"  merged:           {merge['output-frames']} frames out, "
          f"received I/P/B {merge['received-i']}/{merge['received-p']}/{merge['received-b']}, "
          f"missing P/B {merge['missing-p']}/{merge['missing-b']}, dropped {merge['dropped']}")
    print(f"  damage:           E_f {merge['E_f']}  E_g {merge['E_g']}  "
          f"G_max {merge['G_max']}  G_avg {merge['G_avg']:.2f}  "
          f"G_con_total {merge['G_con_total']}  G_con_max {merge['G_con_max']}  "
          f"G_con_avg {merge['G_con_avg']:.2f}")
    print(f"  decoded frames:   {decoded}"
          f"{'' if decoded is not None else ' (DECODER ERROR)'}")
    print(f"  byte-identical:   {'yes' if identical else 'no'}"
          f"  ({elapsed * 1000:.0f} ms split+merge)")
    ok = decoded == merge["output-frames"]
    if not loss:
        ok = ok and identical and merge["E_f"] == 0
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    os.environ.setdefault("GST_PLUGIN_PATH", os.path.join(args.build, "gst"))
    Gst.init(None)
    for el in ("twoflowsplit", "twoflowmerge"):
        if Gst.ElementFactory.find(el) is None:
            sys.exit(f"element {el} not found: build first (scripts/main.sh)")

    workdir = os.path.join(args.build, "mainjob")
    os.makedirs(workdir, exist_ok=True)
    print("twoflow main job — split/merge round trips")
    ok = True
    for src in (os.path.join(SHARED, "media", "greyramp.m2v"),
                generated_stream(args.build)):
        ok &= session("round trip", src, workdir, 0)
    ok &= session("lossy enhanced flow", generated_stream(args.build), workdir, 0.10)
    print("\nRESULT:", "all checks passed" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
