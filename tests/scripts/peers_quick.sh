#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Smoke test of the comparison runner and every drain peer: builds the peers that are missing
# (peers/*/build.sh into BUILD_DIR/peers; CI starts from a fresh clone), then runs
# `bench/run.py --quick` — one small drain per implementation and size (N = 2000 / 1000 / 200) —
# then `bench/run.py latency --quick` (200 round trips of a 61-byte message through each row's
# echo server), `bench/run.py handshakes --quick` (20 connections, one echo each; TLS also
# resuming a session) and the same from 2 client processes at once (`--clients 2`), and fails
# if any peer fails to build, any server's count differs from what its client sent, or any echo
# is missing or differs from what was sent (the rows without an echo mode, udp and udp-seal,
# take part in the drain only).
# Pure's row is included when BUILD_DIR/pure exists (this script never builds Pure itself); a
# peer whose build.sh exits 3 (its Debian packages are absent: zmq, grpc) is left out with a note.
# Timings are not asserted. Usage: tests/scripts/peers_quick.sh BUILD_DIR   (e.g. build)
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
build=$(cd "$1" && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=python3

skip=()
for b in "$root"/peers/*/build.sh; do
  name=$(basename "$(dirname "$b")")
  start=$(date +%s)
  echo "peers_quick: building $name" >&2
  brc=0; "$b" "$build/peers" || brc=$?
  if [ $brc -eq 3 ]; then # its Debian packages are not installed (zmq, grpc): leave its row out
    echo "peers_quick: peer $name skipped: its packages are not installed" >&2
    skip+=(--skip "$name")
    continue
  elif [ $brc -ne 0 ]; then
    echo "peers_quick: FAILED to build peer $name ($b)" >&2
    exit 1
  fi
  took=$(( $(date +%s) - start ))
  if [ "$took" -ge 5 ]; then echo "peers_quick: $name built in ${took} s" >&2; fi
done

if [ ! -x "$build/pure" ]; then
  echo "peers_quick: $build/pure not built: leaving out Pure's row" >&2
  skip=(--skip pure)
fi
# Rows whose peer directory does not exist in this checkout are left out too.
for row in ngtcp2 quinn; do
  [ -x "$root/peers/$row/build.sh" ] || skip+=(--skip "$row")
done
# --skip takes one comma list: merge the repeats.
list=$(printf '%s\n' "${skip[@]}" | grep -v '^--skip$' | paste -sd, - || true)
args=(--quick --no-build --build-dir "$build" --json)
if [ -n "$list" ]; then args+=(--skip "$list"); fi
rc=0
for exp in drain latency handshakes "handshakes --clients 2"; do
  echo "peers_quick: bench/run.py $exp --quick" >&2
  # shellcheck disable=SC2086 # $exp is the experiment and its own options
  if ! "$py" "$root/bench/run.py" $exp "${args[@]}"; then
    echo "peers_quick: FAILED: bench/run.py $exp --quick" >&2
    rc=1
  fi
done
exit $rc
