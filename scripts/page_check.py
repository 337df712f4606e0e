#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Opens the proxy's web page in headless Chromium (DevTools protocol over
--remote-debugging-port, python3-websocket), optionally starts a video
(?play=NAME), samples the page's window.twoflowReport() and saves a
screenshot. Prints one JSON line: the reports, the screenshot's pixel
statistics (decoded here, PNG) and where it is.

  page_check.py URL [--play NAME] [--seconds S] [--screenshot FILE]
"""
import argparse
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib


def chromium_binary():
    for b in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(b)
        if p:
            return p
    return None


def png_pixels(data):
    """(width, height, channels, rows of bytes) of an 8-bit PNG"""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8, "PNG depth"
            ch = {2: 3, 6: 4, 0: 1, 4: 2}[ctype]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * ch
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b = prev[i]
            c = prev[i - ch] if i >= ch else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else
                                      b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, ch, rows


def region_stats(png, box):
    """mean and variance of the luma in box (x, y, w, h), CSS px = png px"""
    w, h, ch, rows = png_pixels(png)
    x0, y0 = max(0, int(box[0])), max(0, int(box[1]))
    x1, y1 = min(w, int(box[0] + box[2])), min(h, int(box[1] + box[3]))
    vals = []
    for y in range(y0, y1, 2):
        r = rows[y]
        for x in range(x0, x1, 2):
            p = r[x * ch:x * ch + 3] if ch >= 3 else r[x * ch:x * ch + 1] * 3
            vals.append(0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2])
    if not vals:
        return 0.0, 0.0
    m = sum(vals) / len(vals)
    return m, sum((v - m) ** 2 for v in vals) / len(vals)


class DevTools:
    def __init__(self, ws_url):
        import websocket  # python3-websocket
        self.ws = websocket.create_connection(ws_url, timeout=30,
                                              suppress_origin=True)
        self.n = 0

    def call(self, method, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method,
                                 "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.n:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True,
                      awaitPromise=True)
        return r.get("result", {}).get("value")


def free_port():
    """Chromium's debugging port: twoflowlab's pick below the kernel's
    ephemeral range (tests binding port 0 in parallel cannot take it)."""
    from twoflowlab.checks import free_port as pick
    return pick()


def run(url, play=None, seconds=8.0, screenshot=None, width=1400, height=900,
        actions=(), until=None):
    """... actions: (t, javascript) pairs, each evaluated once t s after the
    page was opened (a seek: "player.currentTime = 1; player.play()");
    until: a predicate on the reports so far that ends the run before
    @seconds (then @seconds is a bound a loaded machine may need)."""
    exe = chromium_binary()
    if not exe:
        return {"ok": False, "error": "no chromium"}
    port = free_port()
    prof = tempfile.mkdtemp(prefix="twoflow-chromium-")
    proc = subprocess.Popen([exe, "--headless=new", "--no-sandbox",
                             "--disable-gpu", "--no-first-run",
                             "--autoplay-policy=no-user-gesture-required",
                             f"--remote-debugging-port={port}",
                             f"--user-data-dir={prof}",
                             f"--window-size={width},{height}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {"ok": False, "reports": []}
    try:
        ws_url = None
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json") as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                if pages:
                    ws_url = pages[0]["webSocketDebuggerUrl"]
                    break
            except OSError:
                pass
            time.sleep(0.1)
        if not ws_url:
            out["error"] = "chromium's DevTools did not answer"
            return out
        dt = DevTools(ws_url)
        dt.call("Page.enable")
        dt.call("Emulation.setDeviceMetricsOverride", width=width,
                height=height, deviceScaleFactor=1, mobile=False)
        full = url + (("&" if "?" in url else "?") + "play=" + play if play else "")
        dt.call("Page.navigate", url=full)
        t0 = time.monotonic()
        todo = sorted(actions)
        while time.monotonic() - t0 < seconds:
            time.sleep(0.5)
            while todo and time.monotonic() - t0 >= todo[0][0]:
                dt.eval("(() => { const player = document.getElementById('player'); "
                        + todo.pop(0)[1] + "; return true; })()")
            rep = dt.eval("window.twoflowReport ? window.twoflowReport() : null")
            if rep:
                rep["t"] = round(time.monotonic() - t0, 2)
                out["reports"].append(rep)
            if until and not todo and until(out["reports"]):
                break
        box = dt.eval("(() => { const r = document.getElementById('player')"
                      ".getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })()")
        shot = base64.b64decode(dt.call("Page.captureScreenshot",
                                        format="png")["data"])
        out["video_box"] = box
        out["video_luma_mean"], out["video_luma_var"] = region_stats(shot, box)
        out["page_luma_mean"], out["page_luma_var"] = region_stats(
            shot, (0, 0, width, height))
        if screenshot:
            with open(screenshot, "wb") as f:
                f.write(shot)
            out["screenshot"] = os.path.abspath(screenshot)
        out["ok"] = True
        return out
    except Exception as e:  # report, the caller decides
        out["error"] = f"{type(e).__name__}: {e}"
        return out
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(prof, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--play")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--screenshot")
    a = ap.parse_args()
    r = run(a.url, a.play, a.seconds, a.screenshot)
    print(json.dumps(r))
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
