#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One Pure drain over loopback, measured: builds Pure (Release, into build/), starts
#   pure serve --ephemeral --listen 127.0.0.1:0 --services drain
# runs
#   pure drain 127.0.0.1:PORT N SIZE --peer-key KEY          (default N 1000000, SIZE 1024)
# and prints the throughput and each side's CPU (user + system) per message: the client's from
# its own getrusage (in its JSON line), the server's from /proc/PID/task/*/schedstat (every one
# of its threads) around the drain.
# Usage: scripts/drain_demo.sh [N [SIZE]]      (run scripts/deps.sh first on a fresh machine)
# PURE_BUILD_DIR=DIR: use the pure binary of that already configured build directory (built if
# out of date) instead of configuring build/ as a Release build (tests/scripts/drain_demo.sh).
set -euo pipefail
n=${1:-1000000}
size=${2:-1024}
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"

if [ -n "${PURE_BUILD_DIR:-}" ]; then
    build=$PURE_BUILD_DIR
else
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    # build/ may have been configured before (by CI with another build type): keep its
    # generator, make it a Release build
    [ -f "$build/CMakeCache.txt" ] && gen=()
    cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target pure >/dev/null
pure="$build/pure"

tmp=$(mktemp -d)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

"$pure" serve --ephemeral --listen 127.0.0.1:0 --services drain >"$tmp/srv.out" 2>"$tmp/srv.err" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/srv.out" ] && break; sleep 0.05; done
port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srv.out")
key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/srv.out")
if [ -z "$port" ] || [ -z "$key" ]; then
    echo "drain_demo: the server printed no {\"port\": N, \"public_key\": ...} line: $(cat "$tmp/srv.err")" >&2
    exit 1
fi

# ns the server has spent on a CPU: the sum of schedstat's first field over its threads (pure
# serve runs a loop per core on threads of its own; the main thread only waits for the signal),
# or /proc/PID/stat's ticks for the whole process without schedstat.
server_cpu_ns() {
    if [ -r "/proc/$srv/schedstat" ]; then
        cat /proc/"$srv"/task/*/schedstat 2>/dev/null | awk '{ t += $1 } END { printf "%.0f\n", t }'
    else
        awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.0f\n", ($12 + $13) * 1e9 / hz }' "/proc/$srv/stat"
    fi
}

echo "drain_demo: $n messages of $size bytes to 127.0.0.1:$port" >&2
s0=$(server_cpu_ns)
rc=0
"$pure" drain "127.0.0.1:$port" "$n" "$size" --peer-key "$key" >"$tmp/drain.out" 2>"$tmp/drain.err" || rc=$?
s1=$(server_cpu_ns)
kill -TERM "$srv"; wait "$srv" || true; srv=""
if [ $rc -ne 0 ]; then
    echo "drain_demo: pure drain failed (exit $rc):" >&2
    cat "$tmp/drain.err" "$tmp/drain.out" >&2
    exit 1
fi
cat "$tmp/drain.out"
field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" "$tmp/drain.out"; }
awk -v n="$n" -v size="$size" -v secs="$(field seconds)" -v ccpu="$(field client_cpu_us_per_message)" \
    -v scpu_ns="$((s1 - s0))" -v counted="$(field server_messages)" 'BEGIN {
    scpu = n ? scpu_ns / 1e3 / n : 0
    printf "server counted %d of %d messages\n", counted, n
    printf "throughput: %.1f MB/s, %.0f messages/s (%.3f s)\n", n * size / secs / 1e6, n / secs, secs
    printf "CPU per message: client %.3f us, server %.3f us, both %.3f us\n", ccpu, scpu, ccpu + scpu
}'
