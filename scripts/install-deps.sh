#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs the Debian 12 packages twoflow needs to build, test and run its
# experiments. Idempotent: does nothing (quickly) when all are present.
set -euo pipefail

PACKAGES=(
  # build
  meson ninja-build pkg-config gcc clang libclang-rt-14-dev
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  libgstreamer-plugins-bad1.0-dev libgstrtspserver-1.0-dev
  libavcodec-dev libavutil-dev libswscale-dev zlib1g-dev libjson-glib-dev
  liblzma-dev xz-utils
  libgnutls28-dev  # ERAP keyed sessions (AES-GCM, PBKDF2, HKDF)
  glib-networking gnutls-bin  # control channel over TLS (GTlsConnection); certtool for test certificates
  # run and test
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav
  # real media: the system tests' ffprobe/ffmpeg viewer, VLC as a viewer;
  # ffmpeg's libavcodec59 brings libx265, libsvtav1, libaom and dav1d (the
  # H.265/AV1 test clips), plugins-bad h265parse, av1parse, x265enc, av1enc
  # and av1dec, gstreamer1.0-libav avdec_h265
  ffmpeg vlc-bin vlc-plugin-base
  # testbed and experiments
  iproute2 ethtool iperf3 python3 python3-matplotlib python3-numpy procps
  python3-pip python3-setuptools python3-wheel
  nftables  # the NAT test: a masquerading router namespace
  python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
  # GObject introspection of gstreamer-twoflow-1.0 (GstTwoflow-1.0.typelib)
  gobject-introspection libgirepository1.0-dev
  # the proxy's HTTP side (HLS, page, /metrics), its Chromium test and units
  libsoup-3.0-dev chromium python3-websocket python3-prometheus-client systemd
  libsystemd-dev  # sd_notify: the units' Type=notify readiness
  # security: SRTP for rUDP (libsrtp2), TLS for cTCP (GnuTLS certtool in tests, glib-networking)
  libsrtp2-dev gnutls-bin glib-networking
)
# hls.js for the page comes from npm: Debian's when the machine has none
command -v npm >/dev/null || PACKAGES+=(npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "twoflow: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
