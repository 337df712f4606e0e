#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""One TCP connection carrying Poisson-arriving, Pareto-sized transfers,
or a bulk (FTP-like, always backlogged) transfer.

  paretotcp.py send HOST PORT --rate 22 --mean 10000 --shape 1.5 --duration 50 --seed 1
  paretotcp.py send HOST PORT --bulk --mss 1000 --duration 50
  paretotcp.py recv PORT --duration 55        (prints the bytes received as JSON)

The sender queues a transfer at each Poisson arrival (rate per second)
with a Pareto size (shape a, mean m: scale m (a-1)/a) and writes the
backlog into the one connection as fast as TCP takes it. With --bulk the
backlog never empties (ns-2's FTP source). --mss clamps the segment size
(TCP_MAXSEG, before connecting).
"""

import argparse
import json
import random
import socket
import sys
import threading
import time


def send(a):
    rng = random.Random(a.seed)
    scale = a.mean * (a.shape - 1) / a.shape
    # the receiver may still be starting (a loaded machine): retry for 5 s
    deadline = time.monotonic() + 5.0
    while True:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if a.mss:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, a.mss)
        try:
            s.connect((a.host, a.port))
            break
        except ConnectionRefusedError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    if a.cc:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    lock = threading.Condition()
    state = {"backlog": 0, "offered": 0, "transfers": 0, "done": False}

    def arrivals():
        if a.bulk:
            with lock:
                state["backlog"] = 1 << 62
            return
        t_end = time.monotonic() + a.duration
        t = time.monotonic()
        while True:
            t += rng.expovariate(a.rate)
            if t >= t_end:
                break
            time.sleep(max(0.0, t - time.monotonic()))
            size = int(scale / (rng.random() ** (1.0 / a.shape)))
            with lock:
                state["backlog"] += size
                state["offered"] += size
                state["transfers"] += 1
                lock.notify()
        with lock:
            state["done"] = True
            lock.notify()

    threading.Thread(target=arrivals, daemon=True).start()
    chunk = b"\0" * 65536
    sent = 0
    t_stop = time.monotonic() + a.duration
    s.settimeout(1.0)
    while time.monotonic() < t_stop:
        with lock:
            while state["backlog"] == 0 and not state["done"]:
                lock.wait(0.5)
            if state["backlog"] == 0 and state["done"]:
                break
            n = min(state["backlog"], len(chunk))
        try:
            n = s.send(chunk[:n])
        except socket.timeout:
            continue
        except OSError:
            break
        sent += n
        with lock:
            state["backlog"] -= n
    s.close()
    # what was still queued at the end is not sent
    json.dump({"offered": sent if a.bulk else state["offered"], "sent": sent,
               "transfers": state["transfers"]}, sys.stdout)
    print()


def recv(a):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", a.port))
    ls.listen(1)
    ls.settimeout(a.duration)
    total = 0
    try:
        c, _ = ls.accept()
        c.settimeout(a.duration)
        t_end = time.monotonic() + a.duration
        while time.monotonic() < t_end:
            try:
                d = c.recv(65536)
            except socket.timeout:
                break
            if not d:
                break
            total += len(d)
    except socket.timeout:
        pass
    json.dump({"received": total}, sys.stdout)
    print()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    ps = sub.add_parser("send")
    ps.add_argument("host")
    ps.add_argument("port", type=int)
    ps.add_argument("--rate", type=float, default=22.0)
    ps.add_argument("--mean", type=float, default=10000.0)
    ps.add_argument("--shape", type=float, default=1.5)
    ps.add_argument("--duration", type=float, default=50.0)
    ps.add_argument("--seed", type=int, default=1)
    ps.add_argument("--cc", default=None)
    ps.add_argument("--bulk", action="store_true",
                    help="always backlogged (FTP), no Pareto transfers")
    ps.add_argument("--mss", type=int, default=0)
    pr = sub.add_parser("recv")
    pr.add_argument("port", type=int)
    pr.add_argument("--duration", type=float, default=55.0)
    a = p.parse_args()
    send(a) if a.cmd == "send" else recv(a)


if __name__ == "__main__":
    main()
