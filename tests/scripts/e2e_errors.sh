#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end refusals and usage errors (and a --silent server that answers neither of the first
# two): a wrong --peer-key, a key not on the allow list and an
# unknown service give exit code 3 and a message naming the problem; a client with no server at
# the address, with a wrong --peer-key, or aiming at the other address family fails within a
# second (ICMP port unreachable, REJECT: e2e_fastfail.sh times them), one a --silent server does
# not answer within its --handshake-timeout (plus the core's up to 1 s between retries), each with
# exactly one line; bad flags, bad key text,
# bad addresses and a --key server without an allow policy give exit code 2 and a message;
# `pure keygen | pure pubkey` agrees with the public key `pure serve --key` announces.
# Usage: tests/scripts/e2e_errors.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
pure="$(cd "$1" && pwd)/pure"
[ -x "$pure" ] || { echo "e2e_errors: $pure not built" >&2; exit 1; }
tmp=$(mktemp -d)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0

# expect NAME CODE PATTERN CMD...: runs CMD (stdin from $tmp/in, or from $expect_stdin when set),
# checks its exit code and that stderr contains PATTERN (a fixed string; EMPTY: stderr must be
# empty)
expect() {
    local name=$1 code=$2 pat=$3 rc=0
    shift 3
    timeout 30 "$@" <"${expect_stdin:-$tmp/in}" >"$tmp/out" 2>"$tmp/err" || rc=$?
    local ok=1
    if [ "$pat" = EMPTY ]; then [ -s "$tmp/err" ] && ok=0; else grep -qF -- "$pat" "$tmp/err" || ok=0; fi
    if [ "$rc" -ne "$code" ] || [ $ok -eq 0 ]; then
        echo "e2e_errors: FAIL $name: exit $rc (want $code), stderr: $(cat "$tmp/err")" >&2
        fail=1
    else
        echo "e2e_errors: ok $name: $(head -1 "$tmp/err")"
    fi
}
echo hello >"$tmp/in"

# expect_timed NAME CODE PATTERN MAX_SECONDS CMD...: like expect, and stderr must be exactly one
# line and the command must end within MAX_SECONDS; prints the time it took
expect_timed() {
    local name=$1 code=$2 pat=$3 max=$4 rc=0 t0 t1 secs
    shift 4
    t0=$(date +%s%N)
    timeout 30 "$@" <"$tmp/in" >"$tmp/out" 2>"$tmp/err" || rc=$?
    t1=$(date +%s%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    local lines
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -ne "$code" ] || ! grep -qF -- "$pat" "$tmp/err" || [ "$lines" -ne 1 ] ||
        ! awk -v s="$secs" -v m="$max" 'BEGIN { exit !(s <= m) }'; then
        echo "e2e_errors: FAIL $name: exit $rc (want $code) after $secs s (max $max), $lines lines: $(cat "$tmp/err")" >&2
        fail=1
    else
        echo "e2e_errors: ok $name in $secs s: $(cat "$tmp/err")"
    fi
}

# keys: keygen | pubkey round trip, and serve --key announces the same public key
"$pure" keygen >"$tmp/server.key"
"$pure" keygen >"$tmp/client.key"
"$pure" keygen >"$tmp/other.key"
[ "$(wc -c <"$tmp/server.key")" -eq 55 ] || { echo "e2e_errors: FAIL keygen output is not pure-priv: + 44 chars + newline" >&2; fail=1; }
cmp -s "$tmp/server.key" "$tmp/client.key" && { echo "e2e_errors: FAIL keygen repeated a key" >&2; fail=1; }
"$pure" pubkey <"$tmp/server.key" >"$tmp/server.pub"
"$pure" pubkey <"$tmp/client.key" >"$tmp/allow"
printf '# a comment line\n\n' >>"$tmp/allow"
cmp -s "$tmp/server.pub" "$tmp/allow" && { echo "e2e_errors: FAIL two keys share a public key" >&2; fail=1; }

"$pure" serve --listen 127.0.0.1:0 --key "$tmp/server.key" --allow "$tmp/allow" --services echo \
    >"$tmp/srv.out" 2>"$tmp/srv.err" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/srv.out" ] && break; sleep 0.05; done
port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srv.out")
key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/srv.out")
[ -n "$port" ] || { echo "e2e_errors: no server line: $(cat "$tmp/srv.err")" >&2; exit 1; }
if [ "$key" != "$(cat "$tmp/server.pub")" ]; then
    echo "e2e_errors: FAIL pubkey says $(cat "$tmp/server.pub"), serve announces $key" >&2; fail=1
else
    echo "e2e_errors: ok keygen | pubkey matches serve's public_key"
fi
addr=127.0.0.1:$port

# the allowed client gets its echo: the refusals below are about the key, not the setup
expect "allowed key" 0 EMPTY "$pure" send "$addr" --peer-key "$key" --key "$tmp/client.key" --timeout 10
grep -qx hello "$tmp/out" || { echo "e2e_errors: FAIL allowed client got no echo" >&2; fail=1; }

wrong=$("$pure" pubkey <"$tmp/other.key")
expect "wrong peer key" 3 "peer-key $wrong" "$pure" send "$addr" --peer-key "$wrong" --key "$tmp/client.key" --timeout 4
expect "wrong peer key (drain)" 3 "peer-key $wrong" "$pure" drain "$addr" 10 10 --peer-key "$wrong" --timeout 4
ourpub=$("$pure" pubkey <"$tmp/other.key")
expect "key not allowed" 3 "does not allow our key $ourpub" "$pure" send "$addr" --peer-key "$key" --key "$tmp/other.key" --timeout 10
expect "unknown service" 3 "refused service 'nosuch'" "$pure" send "$addr" --peer-key "$key" --key "$tmp/client.key" --service nosuch --timeout 10
# a REJECT ends the handshake after the hint's grace (200 ms), well before --handshake-timeout
expect_timed "wrong peer key, timed" 3 "peer-key $wrong" 1 "$pure" send "$addr" --peer-key "$wrong" --key "$tmp/client.key" --handshake-timeout 2
# an IPv6 target while the server listens on 127.0.0.1: [::1] answers port unreachable, and the
# client sees the port taken on 127.0.0.1
expect_timed "IPv6 target, IPv4 server" 1 "over IPv6 (ICMP port unreachable), but port $port is in use on 127.0.0.1:$port" 1 "$pure" send "[::1]:$port" --peer-key "$key" --key "$tmp/client.key" --handshake-timeout 2
expect "service not offered" 3 "refused service 'drain' (is pure serve running with --services drain?)" "$pure" drain "$addr" 10 10 --peer-key "$key" --key "$tmp/client.key" --timeout 10

kill -TERM "$srv"; rc=0; wait "$srv" || rc=$?; srv=""
[ $rc -eq 0 ] || { echo "e2e_errors: FAIL server exited $rc on SIGTERM" >&2; fail=1; }

# --silent: the same server answers nothing to a wrong peer key or a key not allowed (the
# client can only time out), and still serves an allowed client
"$pure" serve --listen 127.0.0.1:0 --key "$tmp/server.key" --allow "$tmp/allow" --services echo \
    --silent >"$tmp/srvs.out" 2>"$tmp/srvs.err" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/srvs.out" ] && break; sleep 0.05; done
ports=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srvs.out")
[ -n "$ports" ] || { echo "e2e_errors: no --silent server line: $(cat "$tmp/srvs.err")" >&2; exit 1; }
expect "silent: allowed key" 0 EMPTY "$pure" send "127.0.0.1:$ports" --peer-key "$key" --key "$tmp/client.key" --timeout 10
expect_timed "silent: wrong peer key" 1 "no answer from 127.0.0.1:$ports within 2.0 s" 4 "$pure" send "127.0.0.1:$ports" --peer-key "$wrong" --key "$tmp/client.key" --handshake-timeout 2
expect_timed "silent: key not allowed" 1 "no answer from 127.0.0.1:$ports within 2.0 s" 4 "$pure" send "127.0.0.1:$ports" --peer-key "$key" --key "$tmp/other.key" --handshake-timeout 2
kill -TERM "$srv"; rc=0; wait "$srv" || rc=$?; srv=""
[ $rc -eq 0 ] || { echo "e2e_errors: FAIL --silent server exited $rc on SIGTERM" >&2; fail=1; }

# nothing listens on the port any more: ICMP port unreachable, at once
expect_timed "no server" 1 "$addr: connection refused" 1 "$pure" send "$addr" --peer-key "$key" --handshake-timeout 2
expect_timed "no server (drain)" 1 "$addr: connection refused" 1 "$pure" drain "$addr" 10 10 --peer-key "$key" --handshake-timeout 2
# an IPv4 target while the server listens on [::1] (where the machine has IPv6)
"$pure" serve --listen '[::1]:0' --ephemeral --services echo >"$tmp/srv6.out" 2>"$tmp/srv6.err" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/srv6.out" ] && break; kill -0 "$srv" 2>/dev/null || break; sleep 0.05; done
port6=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srv6.out")
key6=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/srv6.out")
if [ -n "$port6" ]; then
    expect "IPv6 server reachable" 0 EMPTY "$pure" send "[::1]:$port6" --peer-key "$key6" --timeout 10
    expect_timed "IPv4 target, IPv6 server" 1 "over IPv4 (ICMP port unreachable), but port $port6 is in use on [::1]:$port6" 1 "$pure" send "127.0.0.1:$port6" --peer-key "$key6" --handshake-timeout 2
    kill -TERM "$srv"; wait "$srv" || true
else
    echo "e2e_errors: SKIP IPv4 target, IPv6 server: cannot listen on [::1]: $(cat "$tmp/srv6.err")"
    wait "$srv" || true
fi
srv=""

# usage errors: exit 2 with a message naming the problem
printf 'not a key\n' >"$tmp/bad.key"
expect "bad --peer-key text" 2 "--peer-key 'abc' is not a public key" "$pure" drain 127.0.0.1:9 1 1 --peer-key abc
expect "unknown flag" 2 "unknown option --frobnicate" "$pure" drain 127.0.0.1:9 1 1 --peer-key "$key" --frobnicate
# the client commands share one option parser: another command's option is still unknown here
expect "another command's flag" 2 "unknown option --service" "$pure" drain 127.0.0.1:9 1 1 --peer-key "$key" --service x
expect "another command's flag" 2 "unknown option --stats" "$pure" bench handshakes 127.0.0.1:9 5 --peer-key "$key" --stats
expect "empty service" 2 "--service '' is not a service name" "$pure" send 127.0.0.1:9 --peer-key "$key" --service ""
expect "flag without value" 2 "option --peer-key needs a value" "$pure" send 127.0.0.1:9 --peer-key
expect "missing --peer-key" 2 "--peer-key PUBKEY is required" "$pure" drain 127.0.0.1:9 1 1
expect "bad count" 2 "N '1e6' is not a count" "$pure" drain 127.0.0.1:9 1e6 1 --peer-key "$key"
expect "negative count" 2 "unknown option -5" "$pure" drain 127.0.0.1:9 -5 1 --peer-key "$key"
expect "size too big" 2 "SIZE '99999999' is not a message size" "$pure" drain 127.0.0.1:9 1 99999999 --peer-key "$key"
expect "bad address" 2 "'nowhere' is not an address" "$pure" drain nowhere 1 1 --peer-key "$key"
expect "port 0" 2 "has port 0" "$pure" send 127.0.0.1:0 --peer-key "$key"
expect "bad timeout" 2 "--timeout 'soon' is not" "$pure" send 127.0.0.1:9 --peer-key "$key" --timeout soon
expect "bad --stats-every" 2 "--stats-every '0.0001' is not a number of seconds (0.001 or more)" "$pure" drain 127.0.0.1:9 1 1 --peer-key "$key" --stats-every 0.0001
expect "another command's flag" 2 "unknown option --stats-every" "$pure" ping 127.0.0.1:9 1 1 --peer-key "$key" --stats-every 1
# below a nanosecond: refused, not rounded to 0 (which for --keepalive means no keepalive)
expect "keepalive under 1 ns" 2 "--keepalive '0.0000000001' is not a number of seconds" "$pure" serve --listen 127.0.0.1:0 --ephemeral --keepalive 0.0000000001
expect "bad handshake timeout" 2 "--handshake-timeout '0' is not a positive" "$pure" send 127.0.0.1:9 --peer-key "$key" --handshake-timeout 0
expect "bad key file" 2 "bad.key does not hold a private key" "$pure" drain 127.0.0.1:9 1 1 --peer-key "$key" --key "$tmp/bad.key"
expect "missing key file" 2 "cannot read key file $tmp/none" "$pure" serve --listen 127.0.0.1:0 --key "$tmp/none" --allow-any
expect "bad pubkey stdin" 2 "stdin does not hold a private key" "$pure" pubkey
expect "serve --key without allow policy" 2 "--allow FILE (client public keys) or --allow-any" "$pure" serve --listen 127.0.0.1:0 --key "$tmp/server.key"
expect "serve without a key" 2 "exactly one of --key FILE" "$pure" serve --listen 127.0.0.1:0
expect "serve bad listen" 2 "--listen 'localhost' is not an address" "$pure" serve --listen localhost --ephemeral
expect "serve unknown service" 2 "unknown service 'ftp'" "$pure" serve --listen 127.0.0.1:0 --ephemeral --services echo,ftp
printf 'garbage\n' >"$tmp/bad.allow"
expect "serve bad allow file" 2 "bad.allow line 1 is not a public key" "$pure" serve --listen 127.0.0.1:0 --key "$tmp/server.key" --allow "$tmp/bad.allow"
# a directory where a file belongs opens, and its read fails: an error saying so, not "larger
# than one key", not an empty allow list that starts a server refusing every client
mkdir -p "$tmp/adir"
expect "key file is a directory" 2 "cannot read key file $tmp/adir: Is a directory" "$pure" serve --listen 127.0.0.1:0 --key "$tmp/adir" --allow-any
expect "allow file is a directory" 2 "cannot read the --allow file $tmp/adir: Is a directory" "$pure" serve --listen 127.0.0.1:0 --key "$tmp/server.key" --allow "$tmp/adir"
expect_stdin="$tmp/adir" expect "pubkey stdin is a directory" 2 "cannot read stdin: Is a directory" "$pure" pubkey
expect "unknown command" 2 "unknown command 'frob'" "$pure" frob
expect "bench with an argument" 2 "no benchmark 'x'" "$pure" bench x
for cmd in keygen pubkey serve drain send bench; do
    expect "$cmd --help" 0 EMPTY "$pure" "$cmd" --help
    grep -q "^usage: pure $cmd" "$tmp/out" || { echo "e2e_errors: FAIL $cmd --help prints no usage line" >&2; fail=1; }
    grep -q "exit codes" "$tmp/out" || { echo "e2e_errors: FAIL $cmd --help lists no exit codes" >&2; fail=1; }
done
exit $fail
