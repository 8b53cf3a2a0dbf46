#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the examples (examples/*.c, built into BUILD_DIR/examples): echo_server, then against it
# echo_client (2,000 messages), request_client (20,000 requests, 512 outstanding) and
# poll_sansio (the core in its own poll() loop); each must exit 0, and the server must exit 0
# on SIGTERM after closing its links. Then fleet_client (2 sockets x 3 streams of 2,000) against
# `pure serve`'s drain service: every stream's count must add up. Then fanout_broker: 3 healthy
# subscribers and one that stops reading, 2 publishers of 10,000 messages: the healthy ones get
# all 20,000 in order, the broker drops the slow one by its queue statistics and says so.
# Also: the examples use only pure.h and pure_loop.h.
# Usage: tests/scripts/examples.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
ex="$(cd "$1" && pwd)/examples"
src=$(cd "$(dirname "$0")/../.." && pwd)/examples
tmp=$(mktemp -d)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
for f in "$src"/*.c; do
    if grep -E '^#include "' "$f" >/dev/null || grep -E '^#include <pure' "$f" | grep -vqE '<pure(_loop)?\.h>'; then
        echo "examples: FAIL $(basename "$f") includes more than the public headers" >&2; fail=1
    fi
done

"$ex/echo_server" 127.0.0.1:0 >"$tmp/srv.out" 2>"$tmp/srv.err" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/srv.out" ] && break; sleep 0.05; done
read -r port key <"$tmp/srv.out" || { echo "examples: FAIL echo_server printed no port and key: $(cat "$tmp/srv.err")" >&2; exit 1; }

run() { # NAME CMD...: must exit 0 within 60 s
    local name=$1 rc=0
    shift
    timeout 60 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "examples: FAIL $name exited $rc: $(cat "$tmp/$name.out" "$tmp/$name.err")" >&2; fail=1
    else
        echo "examples: ok $(cat "$tmp/$name.out")"
    fi
}
run echo_client "$ex/echo_client" "127.0.0.1:$port" "$key" 2000
run request_client "$ex/request_client" "127.0.0.1:$port" "$key" 20000 512
run poll_sansio "$ex/poll_sansio" "127.0.0.1:$port" "$key" 300
kill -TERM "$srv"; rc=0; wait "$srv" || rc=$?; srv=""
[ "$rc" -eq 0 ] && echo "examples: ok echo_server stopped by SIGTERM" ||
    { echo "examples: FAIL echo_server exited $rc: $(cat "$tmp/srv.err")" >&2; fail=1; }
# fleet_client against pure serve's drain service (its drains and failovers: fleet_netns.sh)
"$(cd "$1" && pwd)/pure" serve --listen 127.0.0.1:0 --ephemeral --threads 1 --services drain >"$tmp/fleet.out" 2>&1 &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/fleet.out" ] && break; sleep 0.05; done
fport=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/fleet.out")
fkey=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/fleet.out")
run fleet_client "$ex/fleet_client" "127.0.0.1:$fport" "$fkey" --sockets 2 --links 3 --messages 2000
kill -TERM "$srv"; wait "$srv" || true; srv=""
# fanout_broker: shared sends to every subscriber; the slow one found and dropped
"$ex/fanout_broker" broker 127.0.0.1:0 --limit 1048576 --max-age 1500 >"$tmp/broker.out" 2>"$tmp/broker.err" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/broker.out" ] && break; sleep 0.05; done
read -r bport bkey <"$tmp/broker.out" || { echo "examples: FAIL fanout_broker printed no port and key" >&2; exit 1; }
subs=()
for i in 1 2 3; do
    timeout 60 "$ex/fanout_broker" subscribe "127.0.0.1:$bport" "$bkey" 20000 >"$tmp/sub$i.out" 2>&1 &
    subs+=($!)
done
timeout 60 "$ex/fanout_broker" subscribe "127.0.0.1:$bport" "$bkey" 20000 --slow >"$tmp/slow.out" 2>&1 &
subs+=($!)
for i in 1 2 3; do # each prints "subscribed" once its link is up: publish only then
    for _ in $(seq 200); do grep -q subscribed "$tmp/sub$i.out" 2>/dev/null && break; sleep 0.05; done
done
for _ in $(seq 200); do grep -q subscribed "$tmp/slow.out" 2>/dev/null && break; sleep 0.05; done
timeout 60 "$ex/fanout_broker" publish "127.0.0.1:$bport" "$bkey" 0 10000 200 5000 >"$tmp/pub0.out" 2>&1 &
pub0=$!
run fanout_publish "$ex/fanout_broker" publish "127.0.0.1:$bport" "$bkey" 1 10000 200 5000
wait "$pub0" || { echo "examples: FAIL fanout_broker publisher 0: $(cat "$tmp/pub0.out")" >&2; fail=1; }
for i in 0 1 2 3; do
    name=sub$((i + 1)); [ "$i" = 3 ] && name=slow
    if wait "${subs[$i]}"; then
        echo "examples: ok fanout_broker $name: $(grep -v subscribed "$tmp/$name.out")"
    else
        echo "examples: FAIL fanout_broker $name: $(cat "$tmp/$name.out")" >&2; fail=1
    fi
done
kill -TERM "$srv"; wait "$srv" || true; srv=""
if grep -q '"dropped": 1,' "$tmp/broker.out" && grep -q "dropping a slow subscriber" "$tmp/broker.err"; then
    echo "examples: ok fanout_broker $(tail -1 "$tmp/broker.out"); $(cat "$tmp/broker.err")"
else
    echo "examples: FAIL fanout_broker did not drop exactly the slow subscriber: $(cat "$tmp/broker.out" "$tmp/broker.err")" >&2; fail=1
fi
exit $fail
