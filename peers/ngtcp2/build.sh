#!/bin/sh
# Builds the ngtcp2 drain peer: peers/ngtcp2/build.sh OUTDIR -> OUTDIR/ngtcp2
# Needs Debian packages: libngtcp2-dev libngtcp2-crypto-gnutls-dev
# libgnutls28-dev pkg-config.  Rebuilds only when drain.c, idle.c or this script
# is newer than the binary.
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
out=$1
mkdir -p "$out"
bin="$out/ngtcp2"
if [ -x "$bin" ] && [ "$bin" -nt "$here/drain.c" ] && [ "$bin" -nt "$here/idle.c" ] && [ "$bin" -nt "$here/build.sh" ]; then
  exit 0
fi
pkgs="libngtcp2 libngtcp2_crypto_gnutls gnutls"
if ! pkg-config --exists $pkgs 2>/dev/null; then
  echo "$0: missing pkg-config modules ($pkgs); install with:" >&2
  echo "  apt-get install -y pkg-config libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev" >&2
  exit 1
fi
${CC:-cc} -O2 -g -Wall -Wextra -std=gnu11 -o "$bin.tmp" "$here/drain.c" "$here/idle.c" \
  $(pkg-config --cflags --libs $pkgs)
mv -f "$bin.tmp" "$bin"
