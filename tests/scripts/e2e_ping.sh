#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end `pure ping` and `pure bench handshakes` against `pure serve`'s echo service: the
# JSON line of each must report every round trip / link done and no mismatch (61-byte, 0-byte
# and 100 KB messages); a service that does not echo (sink) makes ping fail with exit 1 at its
# --timeout, a wrong --peer-key gives exit 3, and bad arguments give exit 2 with a message.
# Timings are not asserted. Usage: tests/scripts/e2e_ping.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
pure="$(cd "$1" && pwd)/pure"
[ -x "$pure" ] || { echo "e2e_ping: $pure not built" >&2; exit 1; }
tmp=$(mktemp -d)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0

"$pure" serve --ephemeral --listen 127.0.0.1:0 --services echo,sink >"$tmp/srv.out" 2>"$tmp/srv.err" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/srv.out" ] && break; sleep 0.05; done
port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srv.out")
key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/srv.out")
[ -n "$port" ] && [ -n "$key" ] || { echo "e2e_ping: no server line: $(cat "$tmp/srv.err")" >&2; exit 1; }
addr="127.0.0.1:$port"

# field NAME FILE: the numeric value of "NAME" in FILE's JSON line
field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" "$2"; }

# run_ok NAME WANT KEY DONE_KEY CMD...: exit 0, JSON with KEY == DONE_KEY == WANT, mismatches 0
run_ok() {
    local name=$1 want=$2 k=$3 d=$4 rc=0
    shift 4
    timeout 60 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [ $rc -ne 0 ] || [ "$(field "$k" "$tmp/out")" != "$want" ] ||
       [ "$(field "$d" "$tmp/out")" != "$want" ] || [ "$(field mismatches "$tmp/out")" != 0 ] ||
       [ -z "$(field p50_us "$tmp/out")" ]; then
        echo "e2e_ping: FAIL $name (exit $rc): $(cat "$tmp/out") $(cat "$tmp/err")" >&2
        fail=1
    else
        echo "e2e_ping: ok $name: $(cat "$tmp/out")"
    fi
}

# expect NAME CODE PATTERN CMD...: exit CODE and PATTERN (fixed string) on stderr
expect() {
    local name=$1 code=$2 pat=$3 rc=0
    shift 3
    timeout 30 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [ $rc -ne "$code" ] || ! grep -qF -- "$pat" "$tmp/err"; then
        echo "e2e_ping: FAIL $name: exit $rc (want $code), stderr: $(cat "$tmp/err")" >&2
        fail=1
    else
        echo "e2e_ping: ok $name: $(head -1 "$tmp/err")"
    fi
}

run_ok "ping 2000 x 61 B" 2000 round_trips echoes "$pure" ping "$addr" 2000 61 --peer-key "$key"
run_ok "ping 50 x 0 B" 50 round_trips echoes "$pure" ping "$addr" 50 0 --peer-key "$key"
run_ok "ping 20 x 100 KB" 20 round_trips echoes "$pure" ping "$addr" 20 100000 --peer-key "$key"
run_ok "bench handshakes 200" 200 handshakes ok "$pure" bench handshakes "$addr" 200 --peer-key "$key"
run_ok "bench handshakes 20 --size 3000" 20 handshakes ok \
    "$pure" bench handshakes "$addr" 20 --size 3000 --peer-key "$key"

# no echo comes back from the sink: ping must fail, not report success
expect "ping to a sink times out" 1 "timed out" \
    "$pure" ping "$addr" 10 61 --peer-key "$key" --service sink --timeout 1
other=$("$pure" keygen | "$pure" pubkey)
expect "ping with a wrong --peer-key" 3 "rejected the handshake" \
    "$pure" ping "$addr" 10 61 --peer-key "$other" --timeout 4
expect "handshakes with a wrong --peer-key" 3 "rejected the handshake" \
    "$pure" bench handshakes "$addr" 10 --peer-key "$other" --timeout 4
expect "ping to an unknown service" 3 "refused service" \
    "$pure" ping "$addr" 10 61 --peer-key "$key" --service nosuch

# usage errors: exit 2 with a message
expect "ping: bad flag" 2 "--bogus" "$pure" ping --bogus
expect "ping: missing arguments" 2 "expected HOST:PORT N SIZE" "$pure" ping "$addr" 10 --peer-key "$key"
expect "ping: bad N" 2 "not a count" "$pure" ping "$addr" ten 61 --peer-key "$key"
expect "ping: bad SIZE" 2 "not a message size" "$pure" ping "$addr" 10 12x --peer-key "$key"
expect "ping: SIZE too big" 2 "not a message size" "$pure" ping "$addr" 10 16777217 --peer-key "$key"
expect "ping: no --peer-key" 2 "--peer-key PUBKEY is required" "$pure" ping "$addr" 10 61
expect "ping: bad --peer-key" 2 "--peer-key" "$pure" ping "$addr" 10 61 --peer-key nonsense
expect "ping: bad address" 2 "ping" "$pure" ping "no-port" 10 61 --peer-key "$key"
expect "ping: bad --timeout" 2 "--timeout" "$pure" ping "$addr" 10 61 --peer-key "$key" --timeout x
expect "handshakes: N = 0" 2 "not a count of links" "$pure" bench handshakes "$addr" 0 --peer-key "$key"
expect "handshakes: bad --size" 2 "--size" "$pure" bench handshakes "$addr" 5 --peer-key "$key" --size big
expect "handshakes: missing --size value" 2 "size" "$pure" bench handshakes "$addr" 5 --peer-key "$key" --size
expect "handshakes: extra argument" 2 "expected HOST:PORT N" \
    "$pure" bench handshakes "$addr" 5 6 --peer-key "$key"
expect "bench: unknown benchmark" 2 "no benchmark" "$pure" bench nosuch
grep -q "usage: pure ping" <<<"$("$pure" ping --help)" || { echo "e2e_ping: FAIL ping --help" >&2; fail=1; }
grep -q "usage: pure bench handshakes" <<<"$("$pure" bench handshakes --help)" ||
    { echo "e2e_ping: FAIL bench handshakes --help" >&2; fail=1; }

kill -TERM "$srv"; rc=0; wait "$srv" || rc=$?; srv=""
[ $rc -eq 0 ] || { echo "e2e_ping: FAIL server exited $rc on SIGTERM" >&2; fail=1; }
exit $fail
