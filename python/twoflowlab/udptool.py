#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Small UDP traffic tools for the testbed (standard library only).

  python3 -m twoflowlab.udptool send --to IP --port P [--rate BPS] [--size B] (--count N | --duration S)
  python3 -m twoflowlab.udptool recv --port P [--duration S] [--idle S] [--count N] [--out FILE]
  python3 -m twoflowlab.udptool echo --port P [--duration S]
  python3 -m twoflowlab.udptool ping --to IP --port P [--count N] [--interval S] [--size B]

Each datagram carries a 64-bit sequence number and the send time
(CLOCK_MONOTONIC, shared by all namespaces).  recv writes JSON: the list of
[seq, arrival_time, length] and totals; ping writes the RTTs in ms.
Arrival times are the kernel's (SO_TIMESTAMPNS), not when this Python
process got round to reading the packet: a receiver held up on a loaded
machine does not move them.  echo writes the time it held each request
(kernel arrival to its reply) after the header; ping takes it off the
RTT, so the RTT is the path's, not the echo process's scheduling.
--rate paces by Ethernet frame size (payload + 42 bytes of UDP/IPv4/Ethernet
headers); without --rate packets go back to back (a burst).
"""

import argparse
import json
import socket
import struct
import sys
import time

HDR = struct.Struct("!Qd")
HOLD = struct.Struct("!d")    # echo's hold time, after HDR (0: not given)
WIRE_OVERHEAD = 42            # Ethernet 14 + IPv4 20 + UDP 8
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)      # Linux
TIMESPEC = struct.Struct("@qq")


def stamped(s):
    """Kernel receive timestamps on @s; returns a recv function giving
    (data, peer, CLOCK_MONOTONIC arrival time)."""
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    # the kernel stamps CLOCK_REALTIME: mapped onto CLOCK_MONOTONIC
    offset = time.monotonic() - time.time()

    def recv(bufsize=65536):
        data, anc, _, peer = s.recvmsg(bufsize, socket.CMSG_SPACE(TIMESPEC.size))
        t = time.monotonic()
        for level, kind, cdata in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and \
                    len(cdata) >= TIMESPEC.size:
                sec, nsec = TIMESPEC.unpack_from(cdata)
                t = sec + nsec / 1e9 + offset
        return data, peer, t
    return recv


def cmd_send(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    if a.sport:
        s.bind(("0.0.0.0", a.sport))
    pad = b"\0" * max(0, a.size - HDR.size)
    gap = (a.size + WIRE_OVERHEAD) * 8.0 / a.rate if a.rate else 0.0
    start = time.monotonic()
    end = start + a.duration if a.duration else None
    seq = 0
    nxt = start
    while True:
        now = time.monotonic()
        if a.count is not None and seq >= a.count:
            break
        if end is not None and now >= end:
            break
        if gap:
            if now < nxt:
                time.sleep(nxt - now)
            elif a.max_burst and now - nxt > a.max_burst * gap:
                # descheduled: catch up at most max_burst packets at once
                # (a burst of all that was due is the machine's, not the
                # flow's)
                nxt = now - a.max_burst * gap
            nxt += gap
        try:
            s.sendto(HDR.pack(seq, time.monotonic()) + pad, (a.to, a.port))
        except OSError:
            pass
        seq += 1
    print(json.dumps({"sent": seq, "start": start, "end": time.monotonic()}))


SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)     # Linux


def big_rcvbuf(s, size=8 << 20):
    """SO_RCVBUF is capped at net.core.rmem_max (~208 KB: ~30 ms of
    small packets at 10 Mbit/s, less than a loaded machine's scheduling
    delay); as root the cap does not apply."""
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, size)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)


def cmd_recv(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    big_rcvbuf(s)
    s.bind(("0.0.0.0", a.port))
    recv = stamped(s)
    pkts = []
    start = time.monotonic()
    end = start + a.duration if a.duration else None
    last = None
    while True:
        now = time.monotonic()
        timeout = 0.5
        if end is not None:
            timeout = min(timeout, end - now)
        if last is not None and a.idle:
            timeout = min(timeout, last + a.idle - now)
        if timeout <= 0:
            break
        s.settimeout(timeout)
        try:
            data, _, t = recv()
        except socket.timeout:
            continue
        last = t
        seq = HDR.unpack_from(data)[0] if len(data) >= HDR.size else -1
        pkts.append([seq, t, len(data)])
        if a.count is not None and len(pkts) >= a.count:
            break
    out = {"packets": pkts, "received": len(pkts),
           "bytes": sum(p[2] for p in pkts), "start": start}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f)
    else:
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")


def cmd_echo(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    big_rcvbuf(s)
    s.bind(("0.0.0.0", a.port))
    recv = stamped(s)
    end = time.monotonic() + a.duration if a.duration else None
    while end is None or time.monotonic() < end:
        s.settimeout(0.5)
        try:
            data, peer, t = recv()
        except socket.timeout:
            continue
        if len(data) >= HDR.size + HOLD.size:
            data = data[:HDR.size] + HOLD.pack(time.monotonic() - t) + \
                data[HDR.size + HOLD.size:]
        s.sendto(data, peer)


def cmd_ping(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if a.sport:
        s.bind(("0.0.0.0", a.sport))
    recv = stamped(s)
    # room for the echo's hold time
    pad = b"\0" * max(HOLD.size, a.size - HDR.size)
    rtts = []
    lost = 0
    for seq in range(a.count):
        t0 = time.monotonic()
        s.sendto(HDR.pack(seq, t0) + pad, (a.to, a.port))
        deadline = t0 + a.timeout
        got = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            s.settimeout(left)
            try:
                data, _, t = recv()
            except socket.timeout:
                break
            if HDR.unpack_from(data)[0] == seq:
                hold = 0.0
                if len(data) >= HDR.size + HOLD.size:
                    hold = HOLD.unpack_from(data, HDR.size)[0]
                rtts.append((t - t0 - hold) * 1000.0)
                got = True
                break
        if not got:
            lost += 1
        rest = t0 + a.interval - time.monotonic()
        if rest > 0:
            time.sleep(rest)
    print(json.dumps({"rtt_ms": rtts, "lost": lost}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("send")
    p.add_argument("--to", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--sport", type=int)
    p.add_argument("--rate", type=float, help="bit/s of Ethernet frames")
    p.add_argument("--size", type=int, default=1000, help="UDP payload bytes")
    p.add_argument("--count", type=int)
    p.add_argument("--duration", type=float)
    p.add_argument("--max-burst", type=int, default=0, help="after a delay, "
                   "send at most this many late packets back to back "
                   "(0: all of them, keeping the mean rate)")
    p = sub.add_parser("recv")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--duration", type=float)
    p.add_argument("--idle", type=float, help="stop this long after the "
                   "last packet")
    p.add_argument("--count", type=int)
    p.add_argument("--out")
    p = sub.add_parser("echo")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--duration", type=float)
    p = sub.add_parser("ping")
    p.add_argument("--to", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--sport", type=int)
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--interval", type=float, default=0.05)
    p.add_argument("--timeout", type=float, default=2.0)
    p.add_argument("--size", type=int, default=64)
    a = ap.parse_args(argv)
    {"send": cmd_send, "recv": cmd_recv, "echo": cmd_echo,
     "ping": cmd_ping}[a.cmd](a)


if __name__ == "__main__":
    main()
