#!/bin/sh
# Builds the TCP + TLS 1.3 drain peer: OUTDIR/tls (OpenSSL 3.0 from Debian's libssl-dev).
# Idempotent: does nothing when OUTDIR/tls is newer than its sources.
set -eu
if [ $# -ne 1 ]; then echo "usage: $0 OUTDIR" >&2; exit 2; fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)/tls
srcs="$here/tls.c $here/drain_stream.h $here/build.sh"
if [ -x "$out" ]; then
  stale=0
  for s in $srcs; do [ "$s" -nt "$out" ] && stale=1; done
  [ $stale -eq 0 ] && exit 0
fi
if [ ! -f /usr/include/openssl/ssl.h ]; then
  echo "tls build: OpenSSL headers missing: apt-get install libssl-dev" >&2; exit 1
fi
${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-function -o "$out.tmp" "$here/tls.c" -lssl -lcrypto
mv -f "$out.tmp" "$out"
echo "built $out" >&2
