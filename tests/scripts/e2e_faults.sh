#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end drains through the fault-injecting forwarder (tools/udpfwd.c): `pure serve`,
# `udpfwd` in front of it, and `pure drain` through the forwarder, over loopback. Cases: no
# fault (the baseline at the same path), 1%, 5% and 20% random loss, reordering together with
# duplication, burst loss, and two NAT rebindings (SIGUSR2) in the middle of a drain.
# Each case fails unless the drain exits 0, its JSON line shows the server counted exactly N
# messages and N*SIZE bytes, and the forwarder's stats show the fault really happened (drops,
# duplicates, reorders, bursts, rebinds), plus for the loss cases that the client saw losses and
# retransmitted. Prints the wall time of the 5% loss drain (N=20000, SIZE=1024) beside the
# lossless drain through the same forwarder.
# Usage: tests/scripts/e2e_faults.sh BUILD_DIR   (PURE_FAULT_SEED=N changes every case's seed)
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
bdir="$(cd "$1" && pwd)"
pure="$bdir/pure" fwdbin="$bdir/udpfwd"
for b in "$pure" "$fwdbin"; do
    [ -x "$b" ] || { echo "e2e_faults: $b not built" >&2; exit 1; }
done
seed0=${PURE_FAULT_SEED:-7}
tmp=$(mktemp -d)
srv="" fwd="" drn=""
cleanup() {
    for p in $drn $fwd $srv; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

say() { echo "e2e_faults: $*"; }
die() { echo "e2e_faults: FAIL: $*" >&2; exit 1; }

# wait_line FILE PID WHAT: waits (up to 30 s) for the first line of FILE from process PID
wait_line() {
    for _ in $(seq 600); do
        [ -s "$1" ] && grep -q '"port"' "$1" && return 0
        kill -0 "$2" 2>/dev/null || die "$3 died: $(cat "$1.err" 2>/dev/null)"
        sleep 0.05
    done
    die "$3 printed no port line in 30 s"
}

# jget FILE [up|down] KEY: a number or string field of a one-line JSON file (the forwarder's
# stats, the server's and drain's lines), empty if absent. Pure bash: it runs in polling loops.
jget() {
    local line="" re
    [ -r "$1" ] && line=$(<"$1")
    if [ $# -eq 3 ]; then
        re="\"$2\": \{([^}]*)\}"
        [[ $line =~ $re ]] || return 0
        line=${BASH_REMATCH[1]}
        shift
    fi
    re="\"$2\": *(\"([^\"]*)\"|([0-9.]+))"
    [[ $line =~ $re ]] || return 0
    echo "${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
}

# need WHAT VALUE OP LIMIT: fails the run unless VALUE OP LIMIT (numeric; -gt, -ge, -eq)
need() {
    local v=${2:-x}
    [[ "$v" =~ ^[0-9]+$ ]] || die "$CASE: $1 is '$2', not a number"
    [ "$v" "$3" "$4" ] || die "$CASE: expected $1 $3 $4, got $v"
}

"$pure" serve --ephemeral --listen 127.0.0.1:0 --services drain >"$tmp/srv" 2>"$tmp/srv.err" &
srv=$!
wait_line "$tmp/srv" "$srv" "pure serve"
sport=$(jget "$tmp/srv" port)
key=$(jget "$tmp/srv" public_key)
[ -n "$sport" ] && [ -n "$key" ] || die "bad server line: $(cat "$tmp/srv")"

# start_fwd SEED [FAULTS...]: a forwarder in front of the server; sets $fwd and $fport
start_fwd() {
    local seed=$1
    shift
    rm -f "$tmp/fwd" "$tmp/fwd.json"
    "$fwdbin" --listen 127.0.0.1:0 --to "127.0.0.1:$sport" --seed "$seed" --stats "$tmp/fwd.json" \
        --stats-interval 0.05 "$@" >"$tmp/fwd" 2>"$tmp/fwd.err" &
    fwd=$!
    wait_line "$tmp/fwd" "$fwd" "udpfwd"
    fport=$(jget "$tmp/fwd" port)
}

# stop_fwd: SIGTERM; its final stats land in $tmp/fwd.json
stop_fwd() {
    kill -TERM "$fwd"
    local rc=0
    wait "$fwd" || rc=$?
    fwd=""
    [ "$rc" -eq 0 ] || die "$CASE: udpfwd exited $rc"
}

# start_drain N SIZE: the drain through the forwarder, in the background; sets $drn
start_drain() {
    t0=$(date +%s.%N)
    timeout 110 "$pure" drain "127.0.0.1:$fport" "$1" "$2" --peer-key "$key" --timeout 100 \
        --stats >"$tmp/drain" 2>"$tmp/drain.err" &
    drn=$!
}

# end_drain N SIZE: waits for the drain and checks its exit status and counts; sets $wall
end_drain() {
    local rc=0
    wait "$drn" || rc=$?
    drn=""
    wall=$(echo "$(date +%s.%N) $t0" | awk '{ printf "%.3f", $1 - $2 }')
    local sm sb
    sm=$(jget "$tmp/drain" server_messages)
    sb=$(jget "$tmp/drain" server_bytes)
    if [ "$rc" -ne 0 ] || [ "$sm" != "$1" ] || [ "$sb" != "$(($1 * $2))" ] ||
       [ "$(jget "$tmp/drain" messages)" != "$1" ]; then
        cat "$tmp/drain" "$tmp/drain.err" "$tmp/fwd.err" >&2
        die "$CASE: drain of $1 x $2 B exited $rc, server counted '$sm' messages, '$sb' bytes"
    fi
    kill -0 "$srv" 2>/dev/null || die "$CASE: pure serve died: $(cat "$tmp/srv.err")"
}

# client_stat WORD: a number from the drain's --stats link line ("lost N", "retransmitted N B")
client_stat() { sed -n "s/.*link:.* $1 \([0-9]*\).*/\1/p" "$tmp/drain.err" | head -1; }

# fstat DIR FIELD: a counter from the forwarder's final stats
fstat() { jget "$tmp/fwd.json" "$@"; }

# run_case NAME SEED N SIZE [FAULTS...]: one drain through a forwarder with these faults
run_case() {
    CASE=$1
    local seed=$2 n=$3 size=$4
    shift 4
    start_fwd "$seed" "$@"
    start_drain "$n" "$size"
    end_drain "$n" "$size"
    stop_fwd
}

# The losses the client saw and repaired: for the loss cases
check_recovered() {
    need "client packets lost" "$(client_stat lost)" -gt 0
    need "client bytes retransmitted" "$(client_stat retransmitted)" -gt 0
}

CASE=lossless
run_case lossless "$seed0" 20000 1024
need "dropped up" "$(fstat up dropped)" -eq 0
need "dropped down" "$(fstat down dropped)" -eq 0
lossless_wall=$wall lossless_secs=$(jget "$tmp/drain" seconds)
say "ok lossless through the forwarder: 20000 x 1024 B in $wall s (drain says $lossless_secs s)"

run_case "loss 1%" $((seed0 + 1)) 20000 1024 --loss 0.01
need "lost up" "$(fstat up lost)" -gt 0
check_recovered
say "ok loss 1%: 20000 x 1024 B in $wall s; forwarder lost $(fstat up lost) up, $(fstat down lost) down"

run_case "loss 5%" $((seed0 + 2)) 20000 1024 --loss 0.05
need "lost up" "$(fstat up lost)" -gt 0
need "lost down" "$(fstat down lost)" -gt 0
check_recovered
loss5_wall=$wall loss5_secs=$(jget "$tmp/drain" seconds)
say "ok loss 5%: 20000 x 1024 B in $wall s; forwarder lost $(fstat up lost) up, $(fstat down lost) down; client lost $(client_stat lost), retransmitted $(client_stat retransmitted) B"

run_case "loss 20%" $((seed0 + 3)) 2000 1024 --loss 0.2
need "lost up" "$(fstat up lost)" -gt 0
need "lost down" "$(fstat down lost)" -gt 0
check_recovered
say "ok loss 20%: 2000 x 1024 B in $wall s; forwarder lost $(fstat up lost) up, $(fstat down lost) down"

run_case "reorder+dup" $((seed0 + 4)) 20000 1024 --reorder 0.05:5 --dup 0.05
need "reordered up" "$(fstat up reordered)" -gt 0
need "duplicated up" "$(fstat up duplicated)" -gt 0
need "reordered down" "$(fstat down reordered)" -gt 0
need "duplicated down" "$(fstat down duplicated)" -gt 0
say "ok reorder 5%:5ms + dup 5%: 20000 x 1024 B in $wall s; up reordered $(fstat up reordered), duplicated $(fstat up duplicated)"

run_case "burst loss" $((seed0 + 5)) 20000 1024 --burst 0.005:16
need "burst-dropped up" "$(fstat up burst)" -gt 16
check_recovered
say "ok burst loss 0.5% x 16: 20000 x 1024 B in $wall s; forwarder burst-dropped $(fstat up burst) up, $(fstat down burst) down"

# NAT rebinding, twice, while the drain is in full flow: SIGUSR2 once the forwarder has passed
# 20,000 and then 50,000 datagrams upstream (of ~107,000 for 150,000 x 1 KiB). Each rebind must
# be seen in the stats while the drain still runs, and both directions must carry traffic after
# the last one (the server must answer the new source port for the drain to finish at all).
CASE="NAT rebinding"
n=150000 size=1024
start_fwd $((seed0 + 6))
start_drain $n $size
k=0
for at in 20000 50000; do
    k=$((k + 1))
    for _ in $(seq 2400); do
        v=$(jget "$tmp/fwd.json" up in)
        [ -n "$v" ] && [ "$v" -ge "$at" ] && break
        kill -0 "$drn" 2>/dev/null || break
        sleep 0.05
    done
    kill -0 "$drn" 2>/dev/null || die "$CASE: the drain ended (or died) before rebind $k: $(cat "$tmp/drain" "$tmp/drain.err")"
    kill -USR2 "$fwd"
    for _ in $(seq 200); do
        [ "$(jget "$tmp/fwd.json" rebinds)" = "$k" ] && break
        sleep 0.05
    done
    need "rebinds (live)" "$(jget "$tmp/fwd.json" rebinds)" -eq $k
    kill -0 "$drn" 2>/dev/null || die "$CASE: the drain finished before rebind $k took effect; raise N"
done
up_at=$(jget "$tmp/fwd.json" up out)
down_at=$(jget "$tmp/fwd.json" down out)
end_drain $n $size
stop_fwd
need "rebinds" "$(fstat rebinds)" -eq 2
need "rebind log lines" "$(grep -c 'udpfwd: rebind' "$tmp/fwd.err" || true)" -eq 2
need "datagrams up after the last rebind" $(($(fstat up out) - up_at)) -gt 100
need "datagrams down after the last rebind" $(($(fstat down out) - down_at)) -gt 0
say "ok NAT rebinding x2 mid-drain: $n x $size B in $wall s; $(($(fstat up out) - up_at)) datagrams up and $(($(fstat down out) - down_at)) down after the last rebind"

CASE=shutdown
kill -TERM "$srv"
rc=0
wait "$srv" || rc=$?
srv=""
[ "$rc" -eq 0 ] || die "pure serve exited $rc on SIGTERM"

ratio=$(awk -v a="$loss5_wall" -v b="$lossless_wall" 'BEGIN { printf "%.2f", a / b }')
say "5% loss drain 20000 x 1024 B: wall $loss5_wall s (drain's own figure $loss5_secs s); lossless through the same forwarder: $lossless_wall s ($lossless_secs s); ratio $ratio"
say "all cases passed"
