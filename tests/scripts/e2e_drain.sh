#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end drain over loopback: `pure serve` and `pure drain` as separate processes over real
# UDP sockets, IPv4 and IPv6, at 61 B, 1 KiB and 16 KiB. Fails unless every drain exits 0 and
# its JSON line shows the server counted exactly N messages and N*SIZE bytes, and its --stats
# show GSO at work (more than 2 datagrams per sendmsg on average); `--cc newreno` drains too and
# `--cc` with another name is a usage error (exit 2); `--stats-every` prints the sender's counters
# as JSON lines on stderr while the link is open, times never falling and counts never falling.
# Usage: tests/scripts/e2e_drain.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
pure="$(cd "$1" && pwd)/pure"
[ -x "$pure" ] || { echo "e2e_drain: $pure not built" >&2; exit 1; }
tmp=$(mktemp -d)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# start_server LISTEN: runs pure serve in the background, sets $srv, $port, $key
start_server() {
    # empty the file first: the child truncates it only after the fork, and until then the
    # previous server's line would pass the wait below and then vanish
    : >"$tmp/srv.out"
    "$pure" serve --ephemeral --listen "$1" --services drain >"$tmp/srv.out" 2>"$tmp/srv.err" &
    srv=$!
    for _ in $(seq 100); do
        [ -s "$tmp/srv.out" ] && break
        kill -0 "$srv" 2>/dev/null || { echo "e2e_drain: server died: $(cat "$tmp/srv.err")" >&2; exit 1; }
        sleep 0.05
    done
    port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srv.out")
    key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/srv.out")
    [ -n "$port" ] && [ -n "$key" ] || { echo "e2e_drain: bad server line: $(cat "$tmp/srv.out")" >&2; exit 1; }
}

stop_server() {
    kill -TERM "$srv"
    local rc=0
    wait "$srv" || rc=$?
    srv=""
    [ "$rc" -eq 0 ] || { echo "e2e_drain: server exited $rc on SIGTERM" >&2; exit 1; }
}

# json FIELD FILE: a numeric field of the drain's JSON line
json() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" "$2"; }

fail=0
for fam in 4 6; do
    if [ $fam = 4 ]; then start_server 127.0.0.1:0; host=127.0.0.1; else start_server '[::1]:0'; host='[::1]'; fi
    for run in "61 200000" "1024 50000" "16384 5000"; do
        set -- $run
        size=$1 n=$2
        rc=0
        timeout 60 "$pure" drain "$host:$port" "$n" "$size" --peer-key "$key" --timeout 50 \
            --stats >"$tmp/out" 2>"$tmp/err" || rc=$?
        # GSO: many datagrams per sendmsg (the loop's counters, printed by --stats)
        ppc=$(sed -n 's/.*packets [0-9]* (\([0-9.]*\) per call).*/\1/p' "$tmp/err" | head -1)
        if ! awk -v p="${ppc:-0}" 'BEGIN { exit !(p > 2) }'; then
            echo "e2e_drain: FAIL IPv$fam size $size: ${ppc:-no} datagrams per sendmsg (GSO bursts expected)" >&2
            fail=1
        fi
        sm=$(json server_messages "$tmp/out")
        sb=$(json server_bytes "$tmp/out")
        if [ "$rc" -ne 0 ] || [ "$(json messages "$tmp/out")" != "$n" ] || [ "$sm" != "$n" ] ||
           [ "$sb" != "$((n * size))" ] || [ "$(json bytes "$tmp/out")" != "$((n * size))" ]; then
            echo "e2e_drain: FAIL IPv$fam size $size n $n: exit $rc, server counted '$sm' messages '$sb' bytes" >&2
            cat "$tmp/out" "$tmp/err" >&2
            fail=1
        else
            echo "e2e_drain: ok IPv$fam size $size n $n: $(json seconds "$tmp/out") s, $ppc datagrams per sendmsg"
        fi
    done
    if [ $fam = 4 ]; then
        # --cc: the sender's controller; NewReno carries the same drain, a name that is neither
        # controller is a usage error naming the option
        rc=0
        timeout 60 "$pure" drain "$host:$port" 20000 1024 --peer-key "$key" --timeout 50 --cc newreno \
            >"$tmp/out" 2>"$tmp/err" || rc=$?
        if [ "$rc" -ne 0 ] || [ "$(json server_messages "$tmp/out")" != 20000 ]; then
            echo "e2e_drain: FAIL --cc newreno: exit $rc, server counted '$(json server_messages "$tmp/out")'" >&2
            cat "$tmp/out" "$tmp/err" >&2
            fail=1
        else
            echo "e2e_drain: ok --cc newreno: 20000 x 1024 B counted in $(json seconds "$tmp/out") s"
        fi
        # --stats-every: JSON lines of the sender's counters on stderr while the link is open,
        # times and counters never falling (two ticks may print the same millisecond); stdout
        # still holds the one result line
        rc=0
        timeout 60 "$pure" drain "$host:$port" 20000 1024 --peer-key "$key" --timeout 50 \
            --stats-every 0.002 >"$tmp/out" 2>"$tmp/err" || rc=$?
        lines=$(grep -c '^{"stats": "link", "t": ' "$tmp/err" || true)
        if [ "$rc" -ne 0 ] || [ "$(json server_messages "$tmp/out")" != 20000 ] || [ "$(wc -l <"$tmp/out")" -ne 1 ] ||
           [ "$lines" -lt 1 ] || [ "$lines" -ne "$(wc -l <"$tmp/err")" ] ||
           ! awk -F'[:,]' '{ t = $4 + 0; s = $14 + 0; m = $22 + 0
                 if (NR > 1 && (t < pt || s < ps || m < pm)) exit 1; pt = t; ps = s; pm = m }
                 END { exit !(NR > 0 && ps > 0 && pm > 0) }' "$tmp/err" ||
           ! grep -q '"cwnd": [1-9][0-9]*, "bytes_in_flight": [0-9]*, "rtt_us": [0-9.]*, "rtt_min_us": [0-9.]*, "packets_sent": [0-9]*, "packets_lost": [0-9]*, "random_losses": [0-9]*, "messages_sent": [0-9]*, "messages_acked": [0-9]*, "datagram_size": [0-9]*, "paced_bursts": [0-9]*, "ecn_ce_reported": [0-9]*}$' "$tmp/err"; then
            echo "e2e_drain: FAIL --stats-every: exit $rc, $lines stats lines" >&2
            cat "$tmp/out" >&2; head -5 "$tmp/err" >&2
            fail=1
        else
            echo "e2e_drain: ok --stats-every 0.002: $lines stats lines, e.g. $(tail -1 "$tmp/err")"
        fi
        rc=0
        "$pure" drain "$host:$port" 10 10 --peer-key "$key" --cc vegas >/dev/null 2>"$tmp/err" || rc=$?
        if [ "$rc" -ne 2 ] || ! grep -q -- "--cc 'vegas'" "$tmp/err"; then
            echo "e2e_drain: FAIL --cc vegas: exit $rc (want 2): $(cat "$tmp/err")" >&2
            fail=1
        else
            echo "e2e_drain: ok --cc vegas exits 2: $(head -1 "$tmp/err")"
        fi
    fi
    stop_server
done
exit $fail
