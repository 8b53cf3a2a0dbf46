#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `pure serve --server-id N`: every link index the server draws carries N just below the thread
# bits (docs/protocol.md). A UDP relay on loopback between `pure ping` and the server reads the
# index each datagram names: the server's RESP (sender index, bytes 1..4) and every DATA the
# client sends (receiver index, bytes 1..4) must carry the id in the index's top byte (wire byte
# 4) with one thread, and in bits 30..23 with two. Usage: tests/scripts/e2e_server_id.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
pure="$(cd "$1" && pwd)/pure"
[ -x "$pure" ] || { echo "e2e_server_id: $pure not built" >&2; exit 1; }
tmp=$(mktemp -d)
srv="" relay=""
cleanup() {
    [ -n "$srv" ] && kill "$srv" 2>/dev/null
    [ -n "$relay" ] && kill "$relay" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail=0

cat >"$tmp/relay.py" <<'PY'
import socket, struct, sys, select
port, out = int(sys.argv[1]), sys.argv[2]
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); c.bind(("127.0.0.1", 0))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
print(c.getsockname()[1], flush=True)
peer = None
log = open(out, "w")
while True:
    r, _, _ = select.select([c, s], [], [])
    if c in r:
        d, peer = c.recvfrom(65536)
        if d and d[0] in (8, 9) and len(d) >= 5:
            log.write("data %d\n" % struct.unpack("<I", d[1:5])[0]); log.flush()
        s.sendto(d, ("127.0.0.1", port))
    if s in r:
        d, _ = s.recvfrom(65536)
        if d and d[0] == 2 and len(d) >= 5:
            log.write("resp %d\n" % struct.unpack("<I", d[1:5])[0]); log.flush()
        if peer: c.sendto(d, peer)
PY

# check THREADS ID BITS SHIFT: serve with --server-id ID, ping through the relay, every index
# seen has (index >> SHIFT) & (2^BITS - 1) == ID
check() {
    local threads=$1 id=$2 bits=$3 shift=$4
    : >"$tmp/srv.out"
    "$pure" serve --ephemeral --listen 127.0.0.1:0 --services echo --threads "$threads" \
        --server-id "$id" --server-id-bits "$bits" >"$tmp/srv.out" 2>"$tmp/srv.err" &
    srv=$!
    for _ in $(seq 100); do [ -s "$tmp/srv.out" ] && break; sleep 0.05; done
    local port key
    port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srv.out")
    key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/srv.out")
    : >"$tmp/relay.out"
    /usr/bin/python3 "$tmp/relay.py" "$port" "$tmp/log" >"$tmp/relay.out" &
    relay=$!
    for _ in $(seq 100); do [ -s "$tmp/relay.out" ] && break; sleep 0.05; done
    local rport
    rport=$(head -1 "$tmp/relay.out")
    for _ in 1 2 3; do
        timeout 20 "$pure" ping "127.0.0.1:$rport" 5 100 --peer-key "$key" >/dev/null 2>"$tmp/err" ||
            { echo "e2e_server_id: FAIL ping ($threads threads): $(cat "$tmp/err")" >&2; fail=1; }
    done
    kill "$srv" "$relay" 2>/dev/null; wait 2>/dev/null || true
    srv="" relay=""
    local seen bad
    seen=$(grep -c . "$tmp/log" || true)
    bad=$(awk -v s="$shift" -v b="$bits" -v id="$id" \
        '{ if (int($2 / 2^s) % 2^b != id) n++ } END { print n + 0 }' "$tmp/log")
    if [ "$(grep -c '^resp' "$tmp/log" || true)" -lt 3 ] || [ "$seen" -lt 20 ] || [ "$bad" != 0 ]; then
        echo "e2e_server_id: FAIL id $id ($threads threads): $bad of $seen indices without it" >&2
        head -5 "$tmp/log" >&2
        fail=1
    else
        echo "e2e_server_id: ok id $id, $bits bits, $threads threads: $seen indices carry it"
    fi
}

check 1 165 8 24
check 2 5 3 28 # one thread bit (31), then the 3 server bits 30..28
# bad arguments
rc=0; "$pure" serve --ephemeral --listen 127.0.0.1:0 --server-id 256 2>/dev/null || rc=$?
[ $rc = 2 ] || { echo "e2e_server_id: FAIL --server-id 256 gave $rc" >&2; fail=1; }
rc=0; "$pure" serve --ephemeral --listen 127.0.0.1:0 --server-id 4 --server-id-bits 2 2>/dev/null || rc=$?
[ $rc = 2 ] || { echo "e2e_server_id: FAIL --server-id 4 in 2 bits gave $rc" >&2; fail=1; }
rc=0; "$pure" serve --ephemeral --listen 127.0.0.1:0 --server-id 1 --server-id-bits 9 2>/dev/null || rc=$?
[ $rc = 2 ] || { echo "e2e_server_id: FAIL --server-id-bits 9 gave $rc" >&2; fail=1; }
[ $fail = 0 ] && echo "e2e_server_id: 5 passed, 0 failed" || echo "e2e_server_id: failed" >&2
exit $fail
