#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One quick run of the RPC workload against `rpc_bench serve --threads T` with C client
# processes sharing 100 links (P = 16, 61 B, 4 s after a 1 s warm-up), on loopback: each
# client's figures and the server's exit line (requests per thread). docs/performance.md,
# "Every core". Usage: bench/threads_rpc.sh BUILD_DIR THREADS CLIENTS
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 BUILD_DIR THREADS CLIENTS" >&2; exit 2; }
B=$(cd "$1" && pwd) t=$2 c=$3
tmp=$(mktemp -d)
"$B/rpc_bench" serve --threads "$t" >"$tmp/srv" 2>"$tmp/srv.err" &
sp=$!
trap 'kill $sp 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [ -s "$tmp/srv" ] && break; sleep 0.05; done
port=$(sed -n 's/.*"port": \([0-9]*\).*/\1/p' "$tmp/srv" | head -1)
key=$(sed -n 's/.*"public_key": "\([^"]*\)".*/\1/p' "$tmp/srv" | head -1)
cps=()
for i in $(seq "$c"); do
    "$B/rpc_bench" client "127.0.0.1:$port" --peer-key "$key" --links $((100 / c)) --outstanding 16 \
        --size 61 --duration 4 --warmup 1 >"$tmp/c$i" 2>"$tmp/c$i.err" &
    cps+=($!)
done
for p in "${cps[@]}"; do wait "$p"; done
kill -TERM $sp; wait $sp || true
for i in $(seq "$c"); do tail -1 "$tmp/c$i"; done
tail -1 "$tmp/srv"
