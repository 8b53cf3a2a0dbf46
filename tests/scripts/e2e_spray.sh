#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end robustness against junk: while two drains run against one `pure serve` listener,
# tools/spray.c sprays the listener's port (127.0.0.1 only) with random datagrams, truncated
# ones, datagrams with valid type bytes (0x01-0x04, 0x08, 0x09) and random link indices, forged
# packets carrying the live link's real index, mutated and replayed copies of the real INIT it
# captured, and mutated, old and duplicate copies of real DATA packets; and three times a copy of
# a fresh DATA packet races ahead of the original from another port (as an on-path attacker
# could). One drain goes through spray's relay (which is how it captures the real INIT and DATA
# packets), the other goes straight to the listener.
# Fails unless: both drains exit 0 with the server's count equal to N and N*SIZE; every kind of
# junk was sent; the listener answered the mutated INITs with REJECTs and the replayed copies of
# the authentic INIT with nothing; the listener is still alive and serves a further drain afterwards; the
# drains' links closed gracefully (closed by the peer, not by an error); the listener's counters
# (pure serve --verbose: the loop's datagrams received, minus the packets its links accepted)
# show it received at least a quarter of the junk (the rest may overflow its socket buffer) and
# took none of it for link traffic; and pure serve exits 0 on SIGTERM (under ASan: no error, no
# leak).
# pure serve has no way to print its context's drop counters (dropped_malformed, dropped_auth,
# dropped_replay, dropped_unknown_link): the figure above is what it does print.
# Usage: tests/scripts/e2e_spray.sh BUILD_DIR   (works with the ASan build's directory too)
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
bdir="$(cd "$1" && pwd)"
pure="$bdir/pure" spray="$bdir/spray"
for b in "$pure" "$spray"; do
    [ -x "$b" ] || { echo "e2e_spray: $b not built" >&2; exit 1; }
done
seed=${PURE_SPRAY_SEED:-11}
tmp=$(mktemp -d)
srv="" spr="" d1="" d2=""
cleanup() {
    for p in $d1 $d2 $spr $srv; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${KEEP_TMP:-}" ] && echo "kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT

say() { echo "e2e_spray: $*"; }
die() { echo "e2e_spray: FAIL: $*" >&2; exit 1; }

# jget FILE [OBJECT] KEY: a field of a one-line JSON file, empty if absent (pure bash)
jget() {
    local line="" re
    [ -r "$1" ] && line=$(<"$1")
    line=${line##*$'\n'}                  # the last line (spray prints its port line first)
    if [ $# -eq 3 ]; then
        re="\"$2\": \\{([^}]*)\\}"
        [[ $line =~ $re ]] || return 0
        line=${BASH_REMATCH[1]}
        shift
    fi
    re="\"$2\": *(\"([^\"]*)\"|([0-9.]+))"
    [[ $line =~ $re ]] || return 0
    echo "${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
}

# need WHAT VALUE OP LIMIT
need() {
    local v=${2:-x}
    [[ "$v" =~ ^[0-9]+$ ]] || die "$1 is '$2', not a number"
    [ "$v" "$3" "$4" ] || die "expected $1 $3 $4, got $v"
}

# wait_port FILE PID WHAT: waits up to 30 s for a {"port": N} line
wait_port() {
    for _ in $(seq 600); do
        grep -q '"port"' "$1" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || die "$3 died: $(cat "$1.err" 2>/dev/null)"
        sleep 0.05
    done
    die "$3 printed no port line in 30 s"
}

# check_drain OUT N SIZE RC WHAT
check_drain() {
    local sm sb
    sm=$(jget "$1" server_messages)
    sb=$(jget "$1" server_bytes)
    if [ "$4" -ne 0 ] || [ "$sm" != "$2" ] || [ "$sb" != "$(($2 * $3))" ] ||
       [ "$(jget "$1" messages)" != "$2" ]; then
        cat "$1" "$1.err" >&2
        die "$5 drain of $2 x $3 B: exit $4, server counted '$sm' messages, '$sb' bytes"
    fi
    say "ok $5 drain: $2 x $3 B in $(jget "$1" seconds) s"
}

# One thread: the junk accounting below reads one loop's datagram counter (with --threads N
# each thread's loop has its own).
"$pure" serve --ephemeral --listen 127.0.0.1:0 --services drain --verbose --threads 1 \
    >"$tmp/srv" 2>"$tmp/srv.err" &
srv=$!
wait_port "$tmp/srv" "$srv" "pure serve"
sport=$(jget "$tmp/srv" port)
key=$(jget "$tmp/srv" public_key)
[ -n "$sport" ] && [ -n "$key" ] || die "bad server line: $(cat "$tmp/srv")"

"$spray" --to "127.0.0.1:$sport" --listen 127.0.0.1:0 --rate "${PURE_SPRAY_RATE:-10000}" --seed "$seed" --race 3 \
    >"$tmp/spray" 2>"$tmp/spray.err" &
spr=$!
wait_port "$tmp/spray" "$spr" "spray"
rport=$(jget "$tmp/spray" port)

# The junk starts before the drains (random and typed kinds need nothing captured) and goes on
# until both are done. N is sized so that the relayed drain carries well over 4096 DATA packets
# (data_old needs that much history) and both still finish in seconds under ASan.
n1=40000 s1=1024 n2=50000 s2=1024
rc1=0 rc2=0
timeout 110 "$pure" drain "127.0.0.1:$rport" $n1 $s1 --peer-key "$key" --timeout 100 --stats \
    >"$tmp/d1" 2>"$tmp/d1.err" &
d1=$!
timeout 110 "$pure" drain "127.0.0.1:$sport" $n2 $s2 --peer-key "$key" --timeout 100 --stats \
    >"$tmp/d2" 2>"$tmp/d2.err" &
d2=$!
wait $d1 || rc1=$?
d1=""
wait $d2 || rc2=$?
d2=""
kill -0 "$spr" 2>/dev/null || die "spray died: $(cat "$tmp/spray.err")"
kill -TERM "$spr"
src=0
wait "$spr" || src=$?
spr=""
[ "$src" -eq 0 ] || die "spray exited $src: $(cat "$tmp/spray.err")"
check_drain "$tmp/d1" $n1 $s1 $rc1 "relayed"
check_drain "$tmp/d2" $n2 $s2 $rc2 "direct"
say "spray: $(tail -1 "$tmp/spray")"

# Every kind of junk went out, and the listener answered the INITs as it should.
junk=$(jget "$tmp/spray" junk)
need "junk sent" "$junk" -gt 1000
for k in random truncated typed live_index init_mutated init_replayed data_mutated data_old data_recent; do
    need "junk of kind $k" "$(jget "$tmp/spray" "$k")" -gt 0
done
need "REJECTs for mutated INITs" "$(jget "$tmp/spray" replies reject)" -gt 0
# Copies of the authentic INIT are replays: the listener drops them before any key exchange
# and makes no link (before replay protection, each one cost 4 DH and got a RESP). While the
# INIT's link is still half-open, at most 3 copies of its RESP go to other addresses (the
# initiator's NAT may have moved it).
need "RESPs for replayed INIT copies" "$(jget "$tmp/spray" replies resp)" -le 3
need "datagrams relayed up" "$(jget "$tmp/spray" relayed_up)" -gt 4096
# Three fresh DATA packets were raced ahead of their originals from another port: each may move
# the link's path to the sprayer until the client's next packet moves it back (the relayed
# drain's count above shows the link survived; pure serve does not print path_changes).
need "raced copies" "$(jget "$tmp/spray" races)" -eq 3

# The listener is alive and still serves (a drain that starts after the junk).
kill -0 "$srv" 2>/dev/null || die "pure serve died: $(cat "$tmp/srv.err")"
rc3=0
timeout 60 "$pure" drain "127.0.0.1:$sport" 1000 100 --peer-key "$key" --timeout 50 \
    >"$tmp/d3" 2>"$tmp/d3.err" || rc3=$?
check_drain "$tmp/d3" 1000 100 $rc3 "after-spray"

# The server's own view (pure serve --verbose, printed as each link closes): three drain links,
# each closed gracefully by its client; the loop's datagram count at the last close, minus the
# authenticated packets of the three links, is the junk the listener received and dropped.
closes=0
for _ in $(seq 200); do
    closes=$(grep -c '^pure serve: closed drain' "$tmp/srv.err" || true)
    [ "$closes" -ge 3 ] && break
    sleep 0.05
done
need "links closed" "$closes" -eq 3
need "links closed gracefully by their client" \
    "$(grep '^pure serve: closed drain' "$tmp/srv.err" | grep -c ': closed by the peer' || true)" -eq 3
accepted=$(sed -n 's/^pure serve: link: .* received \([0-9]*\),.*/\1/p' "$tmp/srv.err" |
    awk '{ s += $1 } END { print s + 0 }')
received=$(sed -n 's/^pure serve: loop: .* datagrams \([0-9]*\) (.*/\1/p' "$tmp/srv.err" | tail -1)
need "datagrams the listener received" "$received" -gt 0
unclaimed=$((received - accepted))
say "listener: $received datagrams received, $accepted accepted by the drain links, $unclaimed dropped as junk (of $junk sprayed)"
need "junk the listener received and dropped" "$unclaimed" -ge $((junk / 4))
# Not more than was sprayed, give or take the handshakes' own INITs and late CLOSE repeats.
need "datagrams dropped by the listener" "$unclaimed" -le $((junk + 200))

kill -TERM "$srv"
rc=0
wait "$srv" || rc=$?
srv=""
[ "$rc" -eq 0 ] || die "pure serve exited $rc on SIGTERM: $(tail -20 "$tmp/srv.err")"
say "all checks passed"
