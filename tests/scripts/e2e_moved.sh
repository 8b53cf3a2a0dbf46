#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `pure serve --moved-on-stop`: on SIGTERM mid-stream the server drains, closing its link with
# Pure's "moved" code, and the streaming client (`pure drain`) fails with PURE_EMOVED's message
# ("the server is draining"); without the flag the same stop is a plain close, not "draining".
# SIGUSR2 (pure_ctx_drain), with --threads 1 and 2: the stream fails the same way, the server runs
# on, a new link to it (`pure ping`) is refused as "draining" at once (not at its handshake
# timeout), and SIGTERM then stops the server with exit 0.
# Usage: tests/scripts/e2e_moved.sh BUILD_DIR
set -uo pipefail
pure="$(cd "$1" && pwd)/pure"
tmp=$(mktemp -d) sp="" cp=""
trap '[ -n "$sp" ] && kill $sp 2>/dev/null; [ -n "$cp" ] && kill $cp 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
# waits until the server has accepted the drain link (--verbose), then lets it stream a moment: a
# fixed half second was not always enough on a loaded machine for the client to have connected
streaming() {
    for _ in $(seq 200); do grep -q "accepted drain" "$tmp/s.err" 2>/dev/null && break; sleep 0.05; done
    sleep 0.3
}
# run FLAG: serve with FLAG, stream to it, SIGTERM the server; the client's stderr in $tmp/c.err
run() {
    : >"$tmp/s.out"; : >"$tmp/s.err" # the last run's lines must not answer this run's waits
    "$pure" serve --listen 127.0.0.1:0 --ephemeral --threads 1 --services drain --verbose $1 >"$tmp/s.out" 2>"$tmp/s.err" &
    sp=$!
    for _ in $(seq 400); do grep -q "public_key.*}" "$tmp/s.out" 2>/dev/null && break; sleep 0.05; done # the whole line, not its first bytes
    local port key
    port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/s.out")
    key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/s.out")
    timeout 20 "$pure" drain "127.0.0.1:$port" 50000000 1000 --peer-key "$key" >"$tmp/c.out" 2>"$tmp/c.err" &
    cp=$!
    streaming
    kill -TERM $sp; wait $sp; sp=""
    wait $cp; crc=$?; cp=""
}
run --moved-on-stop
if [ $crc = 1 ] && grep -q "the server is draining" "$tmp/c.err"; then
    echo "e2e_moved: ok --moved-on-stop: $(cat "$tmp/c.err")"
else
    echo "e2e_moved: FAIL --moved-on-stop: client exit $crc: $(cat "$tmp/c.err")" >&2; fail=1
fi
run ""
if ! grep -q "draining" "$tmp/c.err"; then
    echo "e2e_moved: ok without the flag: exit $crc $(head -c 200 "$tmp/c.err")"
else
    echo "e2e_moved: FAIL without the flag the client saw a drain: $(cat "$tmp/c.err")" >&2; fail=1
fi
for t in 1 2; do
    # emptied first: the background job truncates them only once it runs, and the wait below
    # could read the last server's port line meanwhile (an empty port: once in CI, loaded)
    : >"$tmp/s.out"; : >"$tmp/s.err"
    "$pure" serve --listen 127.0.0.1:0 --ephemeral --threads $t --services drain,echo --verbose >"$tmp/s.out" 2>"$tmp/s.err" &
    sp=$!
    for _ in $(seq 400); do grep -q "public_key.*}" "$tmp/s.out" 2>/dev/null && break; sleep 0.05; done # the whole line, not its first bytes
    port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/s.out")
    key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/s.out")
    timeout 20 "$pure" drain "127.0.0.1:$port" 50000000 1000 --peer-key "$key" >"$tmp/c.out" 2>"$tmp/c.err" &
    cp=$!
    streaming
    kill -USR2 $sp
    wait $cp; crc=$?; cp=""
    t0=$(date +%s%N)
    timeout 10 "$pure" ping "127.0.0.1:$port" 1 10 --peer-key "$key" >/dev/null 2>"$tmp/p.err"; prc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    alive=0; kill -0 $sp 2>/dev/null && alive=1
    kill -TERM $sp; wait $sp; src=$?; sp=""
    if [ $crc = 1 ] && grep -q "the server is draining" "$tmp/c.err" && [ $prc != 0 ] &&
        grep -q "the server is draining" "$tmp/p.err" && [ $ms -lt 2000 ] && [ $alive = 1 ] &&
        [ $src = 0 ] && grep -q "draining: 1 links told to go elsewhere" "$tmp/s.err"; then
        echo "e2e_moved: ok SIGUSR2 --threads $t: stream moved, new link refused in $ms ms, server ran on"
    else
        echo "e2e_moved: FAIL SIGUSR2 --threads $t: stream exit $crc ($(cat "$tmp/c.err")), ping exit $prc in $ms ms ($(cat "$tmp/p.err")), alive $alive, serve exit $src: $(cat "$tmp/s.err")" >&2
        fail=1
    fi
done
[ $fail = 0 ] && echo "e2e_moved: 4 passed, 0 failed" || echo "e2e_moved: failed"
exit $fail
