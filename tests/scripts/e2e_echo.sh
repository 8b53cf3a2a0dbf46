#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end echo: `pure send` to `pure serve`'s echo service over loopback; what comes back must
# be byte-identical to what went in (an empty line, a 300 KB line, non-ASCII bytes, a last line
# without a newline, many lines that overflow the send backlog), from a file and from a pipe;
# the sink service returns nothing and exits 0; the same on channels (--channel 7 and 255: the
# echo comes back on the channel, the end of input waits for the server to have every line).
# Usage: tests/scripts/e2e_echo.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
pure="$(cd "$1" && pwd)/pure"
[ -x "$pure" ] || { echo "e2e_echo: $pure not built" >&2; exit 1; }
tmp=$(mktemp -d)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

"$pure" serve --ephemeral --listen 127.0.0.1:0 --services echo,sink >"$tmp/srv.out" 2>"$tmp/srv.err" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/srv.out" ] && break; sleep 0.05; done
port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srv.out")
key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/srv.out")
[ -n "$port" ] && [ -n "$key" ] || { echo "e2e_echo: no server line: $(cat "$tmp/srv.err")" >&2; exit 1; }

fail=0
check() { # check NAME EXPECTED ACTUAL RC
    if [ "$4" -ne 0 ] || ! cmp -s "$2" "$3"; then
        echo "e2e_echo: FAIL $1 (exit $4): $(cmp "$2" "$3" 2>&1 | head -1)" >&2
        fail=1
    else
        echo "e2e_echo: ok $1 ($(wc -c <"$2") bytes)"
    fi
}

{
    printf 'first line\n\nafter an empty line\n'
    head -c 300000 /dev/zero | tr '\0' 'L'; printf '\n'
    printf '\t\xc3\xbc\xff\x01 bytes\r\n'
} >"$tmp/few"
rc=0; timeout 30 "$pure" send "127.0.0.1:$port" --peer-key "$key" --timeout 25 <"$tmp/few" >"$tmp/few.out" || rc=$?
check "few lines from a file" "$tmp/few" "$tmp/few.out" $rc
rc=0; cat "$tmp/few" | timeout 30 "$pure" send "127.0.0.1:$port" --peer-key "$key" --timeout 25 >"$tmp/few.out2" || rc=$?
check "few lines from a pipe" "$tmp/few" "$tmp/few.out2" $rc

# no newline at the end: sent anyway, and echoed with one
printf 'last' >"$tmp/nonl"; printf 'last\n' >"$tmp/nonl.want"
rc=0; timeout 30 "$pure" send "127.0.0.1:$port" --peer-key "$key" --timeout 25 <"$tmp/nonl" >"$tmp/nonl.out" || rc=$?
check "a last line without newline" "$tmp/nonl.want" "$tmp/nonl.out" $rc

# ~19 MB of short lines: more than the 8 MiB backlog, so sending waits for on_writable
awk 'BEGIN { for (i = 0; i < 300000; i++) { printf "line %d ", i; for (j = 0; j < i % 100; j++) printf "y"; printf "\n" } }' >"$tmp/many"
rc=0; cat "$tmp/many" | timeout 50 "$pure" send "127.0.0.1:$port" --peer-key "$key" --timeout 45 >"$tmp/many.out" || rc=$?
check "300000 lines from a pipe" "$tmp/many" "$tmp/many.out" $rc

# channels: the echo comes back on the channel, all of it, also past the backlog
rc=0; timeout 30 "$pure" send "127.0.0.1:$port" --peer-key "$key" --channel 7 --timeout 25 <"$tmp/few" >"$tmp/ch.out" || rc=$?
check "few lines on channel 7" "$tmp/few" "$tmp/ch.out" $rc
rc=0; cat "$tmp/many" | timeout 50 "$pure" send "127.0.0.1:$port" --peer-key "$key" --channel 255 --timeout 45 >"$tmp/ch.many" || rc=$?
check "300000 lines on channel 255" "$tmp/many" "$tmp/ch.many" $rc
rc=0; timeout 30 "$pure" send "127.0.0.1:$port" --peer-key "$key" --channel 3 --service sink --timeout 25 <"$tmp/few" >"$tmp/ch.sink" || rc=$?
check "sink on channel 3" /dev/null "$tmp/ch.sink" $rc
rc=0; echo x | "$pure" send "127.0.0.1:$port" --peer-key "$key" --channel 256 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] && echo "e2e_echo: ok --channel 256 is a usage error" ||
    { echo "e2e_echo: FAIL --channel 256 exited $rc, not 2" >&2; fail=1; }

# sink: nothing comes back, exit 0
rc=0; timeout 30 "$pure" send "127.0.0.1:$port" --peer-key "$key" --service sink --timeout 25 <"$tmp/few" >"$tmp/sink.out" || rc=$?
check "sink" /dev/null "$tmp/sink.out" $rc

kill -TERM "$srv"; rc=0; wait "$srv" || rc=$?; srv=""
[ $rc -eq 0 ] || { echo "e2e_echo: FAIL server exited $rc on SIGTERM" >&2; fail=1; }
exit $fail
