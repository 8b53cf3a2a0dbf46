#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_idle: 2,000 links between two processes over loopback, idle, then woken (pure bench idle).
# Without keepalive: no packet and no timer while idle, every link answers on wake-up, and the
# memory per link stays small. With a 1 s keepalive: about one PING per link per second from the
# initiators, each answered by one ACK. Argument: the build directory.
set -euo pipefail
build=${1:?usage: e2e_idle.sh BUILD_DIR}
pure="$build/pure"
json() { sed -n "s/.*\"$2\": *\([-0-9.a-z]*\).*/\1/p" "$1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$pure" bench idle --links 2000 --idle 3 --json > "$tmp/quiet" 2> "$tmp/quiet.err" ||
    { echo "e2e_idle: bench idle failed:"; cat "$tmp/quiet" "$tmp/quiet.err"; exit 1; }
tail -1 "$tmp/quiet"
[ "$(json "$tmp/quiet" packets_while_idle)" = 0 ] || { echo "e2e_idle: packets were sent while idle"; exit 1; }
[ "$(json "$tmp/quiet" timers_fired_while_idle)" = 0 ] || { echo "e2e_idle: timers fired while idle"; exit 1; }
[ "$(json "$tmp/quiet" woke)" = 2000 ] || { echo "e2e_idle: not every link answered on wake-up"; exit 1; }
# Memory is a property of the normal build: under AddressSanitizer freed memory sits in its
# quarantine and every block carries redzones, so RSS says nothing there.
if grep -q '^PURE_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "e2e_idle: sanitizer build: memory per link not checked"
else
    for side in client_bytes_per_link server_bytes_per_link; do
        b=$(json "$tmp/quiet" $side)
        # RSS at only 2,000 links carries page-granular noise; 100,000 links measure ~975 B
        [ "${b%.*}" -le 4096 ] || { echo "e2e_idle: $side is $b"; exit 1; }
    done
fi

"$pure" bench idle --links 2000 --idle 3 --keepalive 1 --json > "$tmp/ka" 2> "$tmp/ka.err" ||
    { echo "e2e_idle: bench idle --keepalive failed:"; cat "$tmp/ka" "$tmp/ka.err"; exit 1; }
tail -1 "$tmp/ka"
p=$(json "$tmp/ka" packets_while_idle)
# 3 s at one PING per link per second, and the peer's ACK for each: 2 x 2000 x 3, give or take
# the intervals cut at the ends of the idle period
[ "$p" -ge $((2 * 2000 * 2)) ] && [ "$p" -le $((2 * 2000 * 4)) ] ||
    { echo "e2e_idle: $p packets while idle with a 1 s keepalive (want about 12000)"; exit 1; }
[ "$(json "$tmp/ka" woke)" = 2000 ] || { echo "e2e_idle: not every link answered on wake-up"; exit 1; }
echo "e2e_idle: ok"
