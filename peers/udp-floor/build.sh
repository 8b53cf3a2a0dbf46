#!/bin/sh
# Builds the raw-UDP floor drain peer: OUTDIR/udp-floor (libcrypto from Debian's libssl-dev, for --seal
# and aead-rate). Shares the stream pattern/parser header with the tls peer (../tls/drain_stream.h).
# Idempotent: does nothing when OUTDIR/udp-floor is newer than its sources.
set -eu
if [ $# -ne 1 ]; then echo "usage: $0 OUTDIR" >&2; exit 2; fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)/udp-floor
srcs="$here/udp_floor.c $here/../tls/drain_stream.h $here/build.sh"
if [ -x "$out" ]; then
  stale=0
  for s in $srcs; do [ "$s" -nt "$out" ] && stale=1; done
  [ $stale -eq 0 ] && exit 0
fi
if [ ! -f /usr/include/openssl/evp.h ]; then
  echo "udp-floor build: OpenSSL headers missing: apt-get install libssl-dev" >&2; exit 1
fi
${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-function -I"$here/../tls" -o "$out.tmp" "$here/udp_floor.c" -lcrypto
mv -f "$out.tmp" "$out"
echo "built $out" >&2
