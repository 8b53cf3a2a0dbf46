#!/bin/sh
# Builds the ngtcp2 peer: peers/ngtcp2/build.sh OUTDIR -> OUTDIR/ngtcp2
# Needs Debian packages: libngtcp2-dev libngtcp2-crypto-gnutls-dev
# libgnutls28-dev pkg-config.  Rebuilds only when a source here (or
# bench/rpc_work.h or bench/hol_work.h, or this script) is newer than the binary,
# or the library it was built against changed.
# NGTCP2_PREFIX=DIR links the static libngtcp2 and libngtcp2_crypto_gnutls
# installed under DIR instead (an ngtcp2 1.x built from source with
# -DENABLE_GNUTLS=ON: README.md, "Against ngtcp2 1.x").
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
out=$1
mkdir -p "$out"
bin="$out/ngtcp2"
srcs="$here/drain.c $here/idle.c $here/rpc.c $here/multi.c $here/shared.c $here/hol.c"
deps="$srcs $here/shared.h $here/multi.h $here/../../bench/rpc_work.h $here/../../bench/hol_work.h $here/build.sh"
from="${NGTCP2_PREFIX:-debian}"
fresh=1
[ -x "$bin" ] || fresh=0
[ "$(cat "$bin.from" 2>/dev/null)" = "$from" ] || fresh=0
for f in $deps; do
  [ "$bin" -nt "$f" ] || fresh=0
done
[ $fresh -eq 1 ] && exit 0
if [ -n "${NGTCP2_PREFIX:-}" ]; then
  lib="$NGTCP2_PREFIX/lib"
  for a in "$lib/libngtcp2_crypto_gnutls.a" "$lib/libngtcp2.a" "$NGTCP2_PREFIX/include/ngtcp2/ngtcp2.h"; do
    if [ ! -f "$a" ]; then
      echo "$0: NGTCP2_PREFIX=$NGTCP2_PREFIX has no $a" >&2
      exit 1
    fi
  done
  ${CC:-cc} -O2 -g -Wall -Wextra -std=gnu11 -I"$here/../../bench" -I"$NGTCP2_PREFIX/include" \
    -o "$bin.tmp" $srcs "$lib/libngtcp2_crypto_gnutls.a" "$lib/libngtcp2.a" \
    $(pkg-config --cflags --libs gnutls)
  mv -f "$bin.tmp" "$bin"
  echo "$from" > "$bin.from"
  exit 0
fi
pkgs="libngtcp2 libngtcp2_crypto_gnutls gnutls"
if ! pkg-config --exists $pkgs 2>/dev/null; then
  echo "$0: missing pkg-config modules ($pkgs); install with:" >&2
  echo "  apt-get install -y pkg-config libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev" >&2
  exit 1
fi
${CC:-cc} -O2 -g -Wall -Wextra -std=gnu11 -I"$here/../../bench" -o "$bin.tmp" $srcs \
  $(pkg-config --cflags --libs $pkgs)
mv -f "$bin.tmp" "$bin"
echo "$from" > "$bin.from"
