#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ECN over real sockets: `pure drain` through udpfwd's 20 Mbit/s bottleneck (10 ms RTT, a
# 1000-datagram queue) managed by CoDel that marks ECN-capable datagrams CE instead of dropping
# them (--codel --ecn), over IPv4 and IPv6 loopback. Pure's sockets send ECT(0) and read each
# datagram's ECN bits (IP_RECVTOS / IPV6_RECVTCLASS); the server reports CE marks beside its
# ACKs and the client slows down. Checks, per family: udpfwd marked datagrams; the client heard
# of marks (its stats' "reported"); CoDel dropped nothing and the tail nothing (the marks did the
# work); the median queueing delay stays near CoDel's 5 ms target (below 20 ms, typically 7; before Pure read
# ECN it was hundreds of ms: CoDel marked on while the queue filled to its limit); the drain
# completed. Usage: tests/scripts/ecn_path.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
b=$(cd "$1" && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
field() { "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }
fail=0

run() { # FAMILY HOST (as it goes before :PORT: 127.0.0.1 or [::1])
    local fam=$1 lo=$2
    rm -f "$tmp"/*
    "$b/pure" serve --listen "$lo:0" --ephemeral --services drain >"$tmp/serve.json" 2>/dev/null &
    pids+=($!)
    local sp=$!
    wait_file "$tmp/serve.json" || { echo "ecn_path: IPv$fam: pure serve did not start"; fail=1; return; }
    "$b/udpfwd" --listen "$lo:0" --to "$lo:$(field "$tmp/serve.json" '["port"]')" --seed 1 \
        --rate 20mbit --delay 5 --queue-packets 1000 --codel --ecn --stats "$tmp/fwd.json" \
        >"$tmp/fwd.port" 2>/dev/null &
    pids+=($!)
    local fp=$!
    wait_file "$tmp/fwd.port" || { echo "ecn_path: IPv$fam: udpfwd did not start"; fail=1; return; }
    local dst="$lo:$(field "$tmp/fwd.port" '["port"]')"
    if ! timeout 60 "$b/pure" drain "$dst" 400 16384 --stats \
        --peer-key "$(field "$tmp/serve.json" '["public_key"]')" >"$tmp/drain.json" 2>"$tmp/err"; then
        echo "ecn_path: IPv$fam: pure drain failed: $(tail -c 400 "$tmp/err")"
        fail=1
    fi
    kill "$fp" "$sp" 2>/dev/null || true
    wait "$fp" 2>/dev/null || true
    wait "$sp" 2>/dev/null || true
    local reported
    reported=$(sed -n 's/.*ECN CE received [0-9]* reported \([0-9]*\).*/\1/p' "$tmp/err" | tail -1)
    "$py" - "$fam" "$tmp/fwd.json" "${reported:-0}" <<'PY' || fail=1
import json, sys
fam, up, reported = sys.argv[1], json.load(open(sys.argv[2]))["up"], int(sys.argv[3])
p50 = up["qdelay_p50_us"] / 1000
print("ecn_path: IPv%s: %d datagrams forwarded, %d marked CE, %d CoDel drops, %d tail drops, "
      "queueing median %.1f ms p95 %.1f ms; the client heard of %d marks"
      % (fam, up["out"], up["ecn_marked"], up["codel_drop"], up["queue_drop"], p50,
         up["qdelay_p95_us"] / 1000, reported))
bad = []
if up["ecn_marked"] == 0: bad.append("udpfwd marked nothing (no ECT(0) on Pure's datagrams?)")
if reported == 0: bad.append("the client heard of no CE mark")
if up["codel_drop"] or up["queue_drop"]: bad.append("drops: the marks did not slow the sender")
if p50 > 20: bad.append("median queueing %.1f ms (CoDel's target is 5)" % p50)
for b in bad: print("ecn_path: IPv%s: FAIL: %s" % (fam, b))
sys.exit(1 if bad else 0)
PY
}

run 4 127.0.0.1
if "$py" -c 'import socket; s=socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(("::1", 0))' 2>/dev/null; then
    run 6 '[::1]'
else
    echo "ecn_path: no IPv6 loopback: IPv6 not checked"
fi
[ "$fail" = 0 ] && echo "ecn_path: ok" || echo "ecn_path: FAILED"
exit "$fail"
