#!/bin/sh
# Builds the gRPC-over-TLS peer (Debian's libgrpc++-dev 1.51, protobuf-compiler-grpc, libssl-dev):
#   OUTDIR/grpc  the drain (a client-streaming Drain) and the RPC workload (an async unary Echo,
#                ../../bench/rpc_work.h), service bench.proto
# The protobuf and gRPC code is generated at build time (protoc --cpp_out --grpc_out) into
# OUTDIR/grpc-gen. Idempotent: builds only when the binary is older than one of its sources.
# Exit 3 when the packages are not installed (bench/run.py and tests/scripts/rpc_smoke.sh then
# skip the row).
set -eu
if [ $# -ne 1 ]; then echo "usage: $0 OUTDIR" >&2; exit 2; fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
outdir=$(cd "$1" && pwd)
out=$outdir/grpc
srcs="$here/grpc_peer.cc $here/bench.proto $here/../../bench/rpc_work.h $here/build.sh"
if [ -x "$out" ]; then
  stale=0
  for s in $srcs; do [ "$s" -nt "$out" ] && stale=1; done
  [ $stale -eq 0 ] && exit 0
fi
plugin=$(command -v grpc_cpp_plugin || true)
if [ ! -f /usr/include/grpcpp/grpcpp.h ] || ! command -v protoc >/dev/null 2>&1 || [ -z "$plugin" ] ||
   ! pkg-config --exists grpc++ protobuf; then
  echo "grpc build: gRPC C++ missing: apt-get install libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler" >&2
  exit 3 # packages absent: bench/run.py skips the row
fi
if [ ! -f /usr/include/openssl/ssl.h ]; then
  echo "grpc build: OpenSSL headers missing: apt-get install libssl-dev" >&2; exit 3
fi
gen=$outdir/grpc-gen
mkdir -p "$gen"
protoc -I"$here" --cpp_out="$gen" --grpc_out="$gen" --plugin=protoc-gen-grpc="$plugin" "$here/bench.proto"
# shellcheck disable=SC2046
${CXX:-c++} -std=c++17 -O2 -g -Wall -Wextra -Wno-unused-parameter -I"$gen" -I"$here/../../bench" \
  -o "$out.tmp" "$here/grpc_peer.cc" "$gen/bench.pb.cc" "$gen/bench.grpc.pb.cc" \
  $(pkg-config --cflags --libs grpc++ protobuf) -lssl -lcrypto -lpthread
mv -f "$out.tmp" "$out"
echo "built $out" >&2
