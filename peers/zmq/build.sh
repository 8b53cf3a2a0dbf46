#!/bin/sh
# Builds the ZeroMQ + CURVE peer (Debian's libzmq3-dev, libzmq 4.3 on libsodium):
#   OUTDIR/zmq  the drain (PUSH/PULL) and the RPC workload (DEALER/ROUTER, ../../bench/rpc_work.h)
# Idempotent: builds only when the binary is older than one of its sources. Exit 3 when the
# packages are not installed (bench/run.py and tests/scripts/rpc_smoke.sh then skip the row).
set -eu
if [ $# -ne 1 ]; then echo "usage: $0 OUTDIR" >&2; exit 2; fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)/zmq
srcs="$here/zmq.c $here/../../bench/rpc_work.h $here/build.sh"
if [ -x "$out" ]; then
  stale=0
  for s in $srcs; do [ "$s" -nt "$out" ] && stale=1; done
  [ $stale -eq 0 ] && exit 0
fi
if [ ! -f /usr/include/zmq.h ]; then
  echo "zmq build: ZeroMQ headers missing: apt-get install libzmq3-dev" >&2; exit 3 # packages absent: bench/run.py skips the row
fi
${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-function -I"$here/../../bench" \
  -o "$out.tmp" "$here/zmq.c" -lzmq
mv -f "$out.tmp" "$out"
echo "built $out" >&2
