#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Handshakes that cannot succeed fail fast on loopback (docs/protocol.md, "Failing fast"), with
# the default 10 s handshake timeout: `pure send` to (a) a closed port (ICMP port unreachable:
# PURE_EUNREACH), (b) a UDP service that answers with junk (PURE_ENOTPURE), (c) a real `pure
# serve` with a wrong --peer-key (REJECT: PURE_EKEY), (d) the other address family ([::1]
# while the server listens on 127.0.0.1 only) and (e) a server of protocol version 2 (a small
# responder here answers each INIT with a VERSION reply listing 2: PURE_EVERSION) each end in
# under 1 s with exit code 1, 1, 3, 1, 1 and one line on stderr that names the problem; `pure
# drain` too for (a). Prints the times.
# Usage: tests/scripts/e2e_fastfail.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
pure="$(cd "$1" && pwd)/pure"
[ -x "$pure" ] || { echo "e2e_fastfail: $pure not built" >&2; exit 1; }
py=/usr/bin/python3
[ -x "$py" ] || { echo "e2e_fastfail: SKIP: no $py for the junk responder"; exit 0; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
echo hello >"$tmp/in"

# fast NAME CODE PATTERN CMD...: CMD must exit with CODE within 1 s, with exactly one line on
# stderr containing PATTERN (a fixed string); prints the time it took
fast() {
    local name=$1 code=$2 pat=$3 rc=0 t0 t1 secs lines
    shift 3
    t0=$(date +%s%N)
    timeout 30 "$@" <"$tmp/in" >"$tmp/out" 2>"$tmp/err" || rc=$?
    t1=$(date +%s%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -ne "$code" ] || ! grep -qF -- "$pat" "$tmp/err" || [ "$lines" -ne 1 ] ||
        ! awk -v s="$secs" 'BEGIN { exit !(s < 1.0) }'; then
        echo "e2e_fastfail: FAIL $name: exit $rc (want $code) after $secs s (max 1), $lines lines: $(cat "$tmp/err")" >&2
        fail=1
    else
        echo "e2e_fastfail: ok $name in $secs s: $(cat "$tmp/err")"
    fi
}

# a port nothing listens on (bound, then closed), and a UDP service that is not Pure
closed=$("$py" -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$py" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
while True:
    d, a = s.recvfrom(65536)
    s.sendto(b"HTTP/1.0 400 Bad Request\r\n\r\n", a)
' >"$tmp/junk.port" &
pids+=($!)
"$pure" serve --listen 127.0.0.1:0 --ephemeral --services echo >"$tmp/srv.out" 2>"$tmp/srv.err" &
pids+=($!)
# a server of version 2: a VERSION reply (type 5, the INIT's index, the 16 bytes after it, the
# versions spoken) to every INIT (docs/protocol.md, "Protocol versions")
"$py" -c '
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
while True:
    d, a = s.recvfrom(65536)
    if len(d) >= 64 and d[0] == 1:
        s.sendto(b"\x05" + d[1:5] + d[5:21] + struct.pack(">I", 2), a)
' >"$tmp/v2.port" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/srv.out" ] && [ -s "$tmp/junk.port" ] && [ -s "$tmp/v2.port" ] && break; sleep 0.05; done
port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srv.out")
key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/srv.out")
junk=$(cat "$tmp/junk.port")
v2=$(cat "$tmp/v2.port")
[ -n "$port" ] && [ -n "$junk" ] || { echo "e2e_fastfail: no server or junk responder: $(cat "$tmp/srv.err")" >&2; exit 1; }
wrong=$("$pure" keygen | "$pure" pubkey)

# the server works: the failures below are about the address, the port or the key
fast "echo works" 0 "" sh -c "\"$pure\" send 127.0.0.1:$port --peer-key $key && echo done >&2"

fast "(a) closed port" 1 "127.0.0.1:$closed: connection refused: nothing listens on that UDP port" \
    "$pure" send "127.0.0.1:$closed" --peer-key "$key"
fast "(a) closed port, drain" 1 "127.0.0.1:$closed: connection refused" \
    "$pure" drain "127.0.0.1:$closed" 10 10 --peer-key "$key"
fast "(b) not a Pure server" 1 "127.0.0.1:$junk is not a Pure server" \
    "$pure" send "127.0.0.1:$junk" --peer-key "$key"
fast "(c) wrong peer key" 3 "rejected the handshake: it does not have the private key of --peer-key $wrong" \
    "$pure" send "127.0.0.1:$port" --peer-key "$wrong"
fast "(e) a server of protocol version 2" 1 "127.0.0.1:$v2 speaks version 2 of the Pure protocol, this pure speaks version 1" \
    "$pure" send "127.0.0.1:$v2" --peer-key "$key"
if "$py" -c 'import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).bind(("::1", 0))' 2>/dev/null; then
    fast "(d) IPv6 target, IPv4 server" 1 "nothing listens on [::1]:$port over IPv6 (ICMP port unreachable), but port $port is in use on 127.0.0.1:$port" \
        "$pure" send "[::1]:$port" --peer-key "$key"
else
    echo "e2e_fastfail: SKIP (d): no IPv6 loopback"
fi
exit $fail
