#!/bin/sh
# Builds the TCP + TLS 1.3 peers (OpenSSL 3.0 from Debian's libssl-dev):
#   OUTDIR/tls      the drain, latency and handshakes peer (tls.c)
#   OUTDIR/tls-rpc  the RPC workload's epoll server and client (rpc.c, on ../../bench/rpc_work.h)
#   OUTDIR/tls-hol  the head-of-line benchmark's server and client (hol.c, on ../../bench/hol_work.h)
#   OUTDIR/tunpath  carries two network namespaces' IP packets through udpfwd (tunpath.c; no TLS)
# both on tls_setup.c, the TLS configuration they share.
# Idempotent: builds a binary only when it is older than one of its sources.
set -eu
if [ $# -ne 1 ]; then echo "usage: $0 OUTDIR" >&2; exit 2; fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
outdir=$(cd "$1" && pwd)
if [ ! -f /usr/include/openssl/ssl.h ]; then
  echo "tls build: OpenSSL headers missing: apt-get install libssl-dev" >&2; exit 1
fi
shared="$here/tls_setup.c $here/tls_setup.h $here/build.sh"
# build NAME MAIN_SOURCE EXTRA_DEPENDENCIES...
build() {
  name=$1 main=$2; shift 2
  out=$outdir/$name
  if [ -x "$out" ]; then
    stale=0
    for s in "$main" $shared "$@"; do [ "$s" -nt "$out" ] && stale=1; done
    [ $stale -eq 0 ] && return 0
  fi
  ${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-function -I"$here" -I"$here/../../bench" \
    -o "$out.tmp" "$main" "$here/tls_setup.c" -lssl -lcrypto -lpthread
  mv -f "$out.tmp" "$out"
  echo "built $out" >&2
}
build tls "$here/tls.c" "$here/drain_stream.h"
build tls-rpc "$here/rpc.c" "$here/../../bench/rpc_work.h"
build tls-hol "$here/hol.c" "$here/../../bench/hol_work.h"
if [ ! -x "$outdir/tunpath" ] || [ "$here/tunpath.c" -nt "$outdir/tunpath" ] || [ "$here/build.sh" -nt "$outdir/tunpath" ]; then
  ${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -o "$outdir/tunpath.tmp" "$here/tunpath.c"
  mv -f "$outdir/tunpath.tmp" "$outdir/tunpath"
  echo "built $outdir/tunpath" >&2
fi
