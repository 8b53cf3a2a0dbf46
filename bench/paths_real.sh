#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/paths_real.sh: the real-socket side of `paths_sim --drain N`. For each row of the
# real-paths matrix, `pure serve` and `pure drain 127.0.0.1:PORT N 16384` on loopback through
# `udpfwd --rate 50mbit --delay 20` and the row's queue (or CoDel, or random loss on the data
# direction), printing the same columns as `paths_sim --drain N`: seconds from connect to the
# server's count, goodput, and udpfwd's up-direction counters (forwarded, tail drops, CoDel
# drops, queueing delay median and p95). Prints figures, asserts nothing.
# Usage: bench/paths_real.sh BUILD_DIR [N [RATE_MBIT [RTT_MS]]] (defaults 1500, 50, 40)
set -euo pipefail
if [ $# -lt 1 ]; then echo "usage: $0 BUILD_DIR [N [RATE_MBIT [RTT_MS]]]" >&2; exit 2; fi
b=$(cd "$1" && pwd)
n=${2:-1500}
rate=${3:-50}
rtt=${4:-40}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
# queues of 0.25, 1 and 4 BDP in 1472-byte datagrams, rounded as paths_sim does
bdps() { "$py" -c "print(round($1 * $rate * 1e6 / 8 * $rtt / 1e3 / 1472))"; }
bdp=$(bdps 1)
field() { "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }

row() { # NAME udpfwd-args...
    local name=$1
    shift
    rm -f "$tmp"/*.json "$tmp/fwd.port" # a file of the last row must not be read as this one's
    "$b/pure" serve --listen 127.0.0.1:0 --ephemeral >"$tmp/serve.json" 2>/dev/null &
    local sp=$!
    pids+=("$sp")
    for _ in $(seq 50); do [ -s "$tmp/serve.json" ] && break; sleep 0.1; done
    "$b/udpfwd" --listen 127.0.0.1:0 --to "127.0.0.1:$(field "$tmp/serve.json" '["port"]')" \
        --seed 1 --stats "$tmp/fwd.json" --rate "${rate}mbit" --delay "$(echo "$rtt / 2" | bc -l)" \
        "$@" >"$tmp/fwd.port" 2>/dev/null &
    local fp=$!
    pids+=("$fp")
    for _ in $(seq 50); do [ -s "$tmp/fwd.port" ] && break; sleep 0.1; done
    "$b/pure" drain "127.0.0.1:$(field "$tmp/fwd.port" '["port"]')" "$n" 16384 \
        --peer-key "$(field "$tmp/serve.json" '["public_key"]')" >"$tmp/drain.json" 2>/dev/null ||
        { echo "$name: pure drain failed" >&2; kill "$fp" "$sp"; return; }
    kill "$fp"
    wait "$fp" || true
    kill "$sp"
    wait "$sp" || true
    "$py" - "$name" "$tmp/drain.json" "$tmp/fwd.json" <<'EOF'
import json, sys
name, d, f = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))["up"]
print("%-9s | %7.2f %6.1f | %9d %7d %7d | %7.1f %7.1f" % (
    name, d["seconds"], d["bytes"] * 8 / d["seconds"] / 1e6, f["out"], f["queue_drop"],
    f["codel_drop"], f["qdelay_p50_us"] / 1000, f["qdelay_p95_us"] / 1000))
EOF
}

printf "%s Mbit/s each way, %s ms RTT, through udpfwd: pure drain %s x 16 KiB\n" "$rate" "$rtt" "$n"
printf "%-9s | %7s %6s | %9s %7s %7s | %7s %7s\n" row seconds Mbit/s forwarded "q drop" codel \
    "q50 ms" "q95 ms"
row q10 --queue-packets 10
row q0.25bdp --queue-packets "$(bdps 0.25)"
row q1bdp --queue-packets "$bdp"
row q4bdp --queue-packets "$(bdps 4)"
row codel --queue-packets 1000 --codel
row loss0.5% --queue-packets "$bdp" --loss-up 0.005
row loss2% --queue-packets "$bdp" --loss-up 0.02
