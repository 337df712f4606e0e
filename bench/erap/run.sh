#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# ERAP benchmarks, side by side in one run. Usage:
#   bench/erap/run.sh [BUILD_DIR]
# (a) loopback goodput and CPU per GB: erap vs srt vs tcp, unpaced (srt
#     paced by its own live-mode ceiling of 1 Gbit/s), capped at the same
#     rate, and paced by the source; (b) 1..10,000 sessions in one
#     process: threads, RSS, CPU per packet; (c) header bytes per payload
#     byte vs RAP (printed with (a)); (d) encrypted: erap-enc (passphrase,
#     AES-256-GCM) vs srt-enc (passphrase, pbkeylen=32), also with (a).
set -e
build=${1:-build}
build=$(cd "$build" && pwd)
export GST_PLUGIN_PATH_1_0="$build/gst"
export GST_REGISTRY_1_0="$build/bench/erap/registry.bin"
b="$build/bench/erap"
echo "== (a) transports, unpaced, 1316-byte buffers"
"$b/bench-erap-transports" -s ${ERAP_BENCH_MB:-200} -b 1316 -r 2
echo "== (a) transports, erap and srt capped at 400 Mbit/s"
"$b/bench-erap-transports" -s ${ERAP_BENCH_MB:-200} -b 1316 -m 400 -r 2
echo "== (a) transports, paced (identity sleep-time=20 per buffer)"
"$b/bench-erap-transports" -s ${ERAP_BENCH_PACED_MB:-30} -b 1316 -p 20
echo "== (a) erap and tcp, 64 KB buffers"
"$b/bench-erap-transports" -s ${ERAP_BENCH_MB:-200} -b 65536 || true
echo "== (b) sessions"
"$b/bench-erap-sessions" -w 10 1 100 1000 10000
