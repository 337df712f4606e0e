#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Makes a throw-away CA, a server certificate (for the given IP addresses and
# names, default 127.0.0.1 localhost) and a client certificate (CN=proxy1)
# with GnuTLS's certtool, for tests and lab runs: none are committed.
#   scripts/make-test-certs.sh DIR [ADDR_OR_NAME...]
# Writes DIR/{ca,server,client}.{pem,key}, DIR/server.sha256 (the pin) and
# DIR/tokens ("proxy1 <random token>") and DIR/proxy.token (that token alone).
set -euo pipefail
dir=$1; shift
[ $# -gt 0 ] || set -- 127.0.0.1 localhost
mkdir -p "$dir"; cd "$dir"
q() { certtool "$@" >/dev/null 2>&1; }
san=""
for a in "$@"; do
  if [[ $a =~ ^[0-9.:]+$ ]]; then san+="ip_address = \"$a\""$'\n'
  else san+="dns_name = \"$a\""$'\n'; fi
done
q --generate-privkey --key-type=ecdsa --outfile ca.key
cat > ca.tmpl <<T
cn = "twoflow test CA"
ca
cert_signing_key
expiration_days = 30
T
q --generate-self-signed --load-privkey ca.key --template ca.tmpl --outfile ca.pem
q --generate-privkey --key-type=ecdsa --outfile server.key
printf 'cn = "twoflow-server"\ntls_www_server\nexpiration_days = 30\n%s' "$san" > server.tmpl
q --generate-certificate --load-privkey server.key --load-ca-certificate ca.pem \
  --load-ca-privkey ca.key --template server.tmpl --outfile server.pem
q --generate-privkey --key-type=ecdsa --outfile client.key
printf 'cn = "proxy1"\ntls_www_client\nexpiration_days = 30\n' > client.tmpl
q --generate-certificate --load-privkey client.key --load-ca-certificate ca.pem \
  --load-ca-privkey ca.key --template client.tmpl --outfile client.pem
certtool --certificate-info --infile server.pem --hash sha256 2>/dev/null \
  | sed -n 's/^\s*sha256:\s*//p' | head -1 > server.sha256 || true
if [ ! -s server.sha256 ]; then
  # older certtool: the fingerprint of the DER
  certtool --certificate-info --infile server.pem --outder 2>/dev/null | sha256sum | cut -d' ' -f1 > server.sha256
fi
echo "proxy1 $(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" > tokens
# proxy1's token alone, for the proxy's --token-file (its unit's credential)
cut -d' ' -f2 tokens > proxy.token
rm -f ca.tmpl server.tmpl client.tmpl
