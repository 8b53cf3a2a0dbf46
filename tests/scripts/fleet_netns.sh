#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A fleet behind one address, end to end (docs/fleet.md): a director namespace running the
# stateless ruleset of scripts/fleet_nft.sh (firewall marks and policy routing, no conntrack),
# three server namespaces each holding the shared address 10.9.0.1 on lo and running
# `pure serve --listen 10.9.0.1:4433 --threads 2 --server-id I --server-id-bits 7` (one key; the
# ruleset masks the thread bit: --thread-bits 1), and two client namespaces running
# examples/fleet_client (6 sockets x 25 streams each: 300 links; every stream a numbered run of
# messages to the drain service, resent from first_unacked on PURE_EMOVED / PURE_ETIMEDOUT).
# Servers answer from the shared address straight back (direct server return). Three rounds:
#   spread+rebind  300 links spread over the three servers within +-40% (the INIT hash); half-way
#                  every client's source port changes (a stateless nft rule in each client
#                  namespace xors it with 0x2000 both ways: a NAT rebinding), and every link stays
#                  on its server (routed by its index): no link fails, moves or is opened again,
#                  and the servers count exactly every message
#   drain          half-way, the ruleset is regenerated with server 1 out of the INIT hash and
#                  server 1 gets SIGUSR2 (pure_ctx_drain): its links close with "moved", the
#                  clients reconnect to servers 0 and 2 and resend exactly the unacknowledged ids:
#                  the three servers together count every message exactly once, every stream's
#                  counts add up, and server 1 accepts no link after its drain
#   kill           (server 1 replaced by a fresh one) half-way, server 2 is killed (SIGKILL) and,
#                  as a health check would, the ruleset regenerated without it in the hash: its
#                  links fail with PURE_ETIMEDOUT within the clients' idle_timeout (1 s, +0.5 s
#                  for the loss detection and the loop) of the kill, reconnect to the others, and
#                  the survivors count exactly the messages the dead server had not acknowledged
# Prints one summary line; exits 1 on any failure, 77 (skip) when not root or when nft or
# namespaces are refused. Takes about 8 s. Usage: tests/scripts/fleet_netns.sh BUILD_DIR
set -uo pipefail
bdir="$(cd "$1" && pwd)"
pure="$bdir/pure" client="$bdir/examples/fleet_client"
gen="$(cd "$(dirname "$0")/../.." && pwd)/scripts/fleet_nft.sh"
[ -x "$client" ] || { echo "fleet_netns: FAIL: $client not built" >&2; exit 1; }
[ "$(id -u)" = 0 ] && command -v nft >/dev/null || { echo "fleet_netns: SKIP: needs root and nft"; exit 77; }
p=pfl$$ d=pfl$$d tmp=$(mktemp -d) spid=(0 0 0) fails=() passed=0
vip=10.9.0.1 port=4433 sockets=6 links=25 msgs=400 rate=250 idle=1
cleanup() {
    for x in "${spid[@]}"; do [ "$x" != 0 ] && kill -9 "$x" 2>/dev/null; done
    wait 2>/dev/null
    for n in $d ${p}c0 ${p}c1 ${p}s0 ${p}s1 ${p}s2; do ip netns del $n 2>/dev/null; done
    [ -n "${KEEP_TMP:-}" ] && echo "fleet_netns: kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
ok() { echo "fleet_netns: ok $*"; passed=$((passed + 1)); }
bad() { echo "fleet_netns: FAIL $*" >&2; fails+=("$1"); }
ip netns add $d 2>/dev/null || { echo "fleet_netns: SKIP: ip netns add refused"; exit 77; }
set -e
ip -n $d link set lo up
ip netns exec $d sysctl -qw net.ipv4.ip_forward=1
# replies leave the servers from the shared address, which the director has no route to
ip netns exec $d sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
link() { # link NS DIRECTOR_ADDR NS_ADDR
    ip netns add $1
    ip link add ${p}x type veth peer name ${p}y
    ip link set ${p}x netns $d
    ip link set ${p}y netns $1
    ip -n $d link set ${p}x name "v$1"
    ip netns exec $d sysctl -qw "net.ipv4.conf.v$1.rp_filter=0"
    ip -n $d addr add $2/24 dev "v$1"; ip -n $d link set "v$1" up
    ip -n $1 addr add $3/24 dev ${p}y; ip -n $1 link set ${p}y up; ip -n $1 link set lo up
    ip -n $1 route add default via $2
}
for i in 0 1; do
    link ${p}c$i 10.1.$i.1 10.1.$i.2
    # A GSO burst crosses veth whole, and the director would route all its packets (several
    # links' of one socket) by the first one's index: segment it before it leaves, as a NIC does
    ip -n ${p}c$i link set ${p}y gso_max_segs 1
done
for i in 0 1 2; do
    link ${p}s$i 10.2.$i.1 10.2.$i.2
    ip -n ${p}s$i addr add $vip/32 dev lo
done
"$pure" keygen >"$tmp/key"
servers=(--server 0=10.2.0.2 --server 1=10.2.1.2 --server 2=10.2.2.2 --thread-bits 1 --server-id-bits 7)
"$gen" --vip $vip:$port "${servers[@]}" --stateless --routes | ip -n $d -force -batch - 2>/dev/null || true
set +e
"$gen" --vip $vip:$port "${servers[@]}" --stateless | ip netns exec $d nft -f - 2>"$tmp/nft.err" ||
    { echo "fleet_netns: SKIP: the ruleset was refused: $(cat "$tmp/nft.err")"; exit 77; }
rules=$(ip -n $d rule; ip -n $d route show table all) # not piped into grep -q: pipefail and SIGPIPE
for i in 0 1 2; do
    grep -q "fwmark 0x5055000$i lookup 2000$i" <<<"$rules" && grep -q "$vip via 10.2.$i.2 .*table 2000$i" <<<"$rules" ||
        { echo "fleet_netns: FAIL: the policy routes for server $i did not load: $rules" >&2; exit 1; }
done

start_server() { # start_server I
    : >"$tmp/s$1.out"
    ip netns exec ${p}s$1 "$pure" serve --listen $vip:$port --key "$tmp/key" --allow-any --threads 2 \
        --services drain --server-id $1 --server-id-bits 7 --stats-every 0.1 >"$tmp/s$1.out" 2>"$tmp/s$1.err" &
    spid[$1]=$!
    for _ in $(seq 100); do [ -s "$tmp/s$1.out" ] && return 0; sleep 0.05; done
    echo "fleet_netns: FAIL: server $1 did not start: $(cat "$tmp/s$1.err")" >&2; exit 1
}
# total FIELD I: server I's FIELD in its latest total line (a line is 0.1 s old at most)
total() { grep '"stats": "total"' "$tmp/s$2.out" | tail -1 | sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p"; }
settle() { sleep 0.35; } # two stats lines after the last event
field() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$2"; }
sum() { echo $(($(field "$1" "$tmp/c0.json") + $(field "$1" "$tmp/c1.json"))); }
for i in 0 1 2; do start_server $i; done
key=$(sed -n '1s/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/s0.out")
cpid=()
round=0
clients() { # start both clients
    cpid=() round=$((round + 1))
    for i in 0 1; do
        ip netns exec ${p}c$i "$client" $vip:$port "$key" --sockets $sockets --links $links \
            --messages $msgs --rate $rate --idle-timeout $idle --deadline 20 >"$tmp/c$i.json" 2>"$tmp/c$i.$round.err" &
        cpid+=($!)
    done
}
# Every stream's first handshake done before the path changes under it: a handshake still under way
# when the rebinding flips the source port resends its INIT from the new port, which the director
# may hash to another server (a second accepted link that the client never uses)
established() { # established: wait (up to 20 s) until both clients say every link is established
    for _ in $(seq 1000); do
        grep -q "all $((sockets * links)) links established" "$tmp/c0.$round.err" &&
            grep -q "all $((sockets * links)) links established" "$tmp/c1.$round.err" &&
            { sleep 0.25; return 0; } # and the servers' stats lines newer than the last accept
        sleep 0.02
    done
    bad "round $round: not every link was established within 20 s: $(cat "$tmp/c0.$round.err" "$tmp/c1.$round.err" | head -3)"
}
wait_clients() { local rc=0; for x in "${cpid[@]}"; do wait "$x" || rc=1; done; return $rc; }
want=$((2 * sockets * links * msgs)) nlinks=$((2 * sockets * links))
check_client() { # ROUND: both clients completed every stream, each adding up exactly
    local c e
    c=$(sum complete) e=$(sum exact)
    [ "$c" = $nlinks ] && [ "$e" = $nlinks ] && ok "$1: $nlinks streams complete, each adding up exactly" ||
        bad "$1: $c of $nlinks streams complete, $e add up: $(cat "$tmp/c0.json" "$tmp/c0.$round.err" | head -5)"
}

# ---- round 1: spread, and a rebinding half-way ----
declare -a acc0 msg0
for i in 0 1 2; do acc0[$i]=$(total accepted $i); msg0[$i]=$(total messages_received $i); done
clients
sleep 0.8
established
for i in 0 1; do
    ip netns exec ${p}c$i nft -f - <<EOF
table ip rebind {
    chain out { type filter hook output priority raw; policy accept;
        ip daddr $vip udp dport $port notrack
        ip daddr $vip udp dport $port udp sport set udp sport ^ 0x2000 counter
    }
    chain in { type filter hook prerouting priority raw; policy accept;
        ip saddr $vip udp sport $port notrack
        ip saddr $vip udp sport $port udp dport set udp dport ^ 0x2000 counter
    }
}
EOF
done
wait_clients
settle
# Each link lands on a server by a hash of its INIT: binomial, 100 +- 8.2 a server at 300 links.
# Within +-25% (3 sigma) failed about one run in 150 by chance alone; +-40% (4.9 sigma) almost
# never does, and still fails a hash that favours a server.
spread=() got=0 lo=$((nlinks / 3 * 3 / 5)) hi=$((nlinks / 3 * 7 / 5)) inrange=1
for i in 0 1 2; do
    n=$(($(total accepted $i) - acc0[i])); spread+=($n)
    [ $n -ge $lo ] && [ $n -le $hi ] || inrange=0
    got=$((got + $(total messages_received $i) - msg0[i]))
done
[ $inrange = 1 ] && [ $((spread[0] + spread[1] + spread[2])) = $nlinks ] &&
    ok "spread: $nlinks links on the servers ${spread[*]} (each within $lo..$hi)" ||
    bad "spread: links per server ${spread[*]}, want $nlinks within $lo..$hi each"
rw=$(ip netns exec ${p}c0 nft list table ip rebind | sed -n 's/.*udp sport set .* counter packets \([0-9]*\).*/\1/p')
moved=$(sum moved) to=$(sum timeouts) other=$(sum other) refused=$(sum refused)
[ "${rw:-0}" -gt 100 ] && [ "$moved$to$other$refused" = 0000 ] && [ $got = $want ] &&
    ok "rebinding: ${rw} packets of one client left from a new port; no link failed or moved; the servers counted $got of $want" ||
    bad "rebinding: ${rw:-?} rewritten, moved $moved, timeouts $to, other $other, refused $refused; servers counted $got of $want"
check_client "spread+rebind"
for i in 0 1; do ip netns exec ${p}c$i nft delete table ip rebind; done

# ---- round 2: drain server 1 half-way ----
for i in 0 1 2; do acc0[$i]=$(total accepted $i); msg0[$i]=$(total messages_received $i); done
clients
sleep 0.8
established
"$gen" --vip $vip:$port "${servers[@]}" --stateless --drain 1 | ip netns exec $d nft -f -
kill -USR2 ${spid[1]}
sleep 0.2
acc1=$(total accepted 1)
wait_clients
settle
got=0
for i in 0 1 2; do got=$((got + $(total messages_received $i) - msg0[i])); done
drained=$(sed -n 's/.*draining: \([0-9]*\) links told.*/\1/p' "$tmp/s1.err" | awk '{n += $1} END {print n + 0}')
moved=$(sum moved) to=$(sum timeouts) other=$(sum other) refused=$(sum refused) resent=$(sum resent)
[ "${drained:-0}" -gt 0 ] && [ "$moved" = "$drained" ] && [ "$to$other" = 00 ] &&
    ok "drain: server 1 told $drained links to go elsewhere, the clients saw $moved moved ($refused refused handshakes), resent $resent" ||
    bad "drain: server 1 drained ${drained:-?} links, clients moved $moved, timeouts $to, other $other, refused $refused"
[ $got = $want ] && ok "drain: the three servers counted exactly $got messages: none lost, none twice" ||
    bad "drain: the servers counted $got messages, want $want"
accs=$(($(total accepted 0) - acc0[0] + $(total accepted 1) - acc0[1] + $(total accepted 2) - acc0[2]))
[ "$(total accepted 1)" = "$acc1" ] && [ $accs = $((nlinks + moved)) ] &&
    ok "drain: server 1 accepted nothing after it; the $moved moved links opened again on servers 0 and 2" ||
    bad "drain: server 1 accepted $(($(total accepted 1) - acc1)) after the drain; links accepted $accs, want $nlinks + $moved"
check_client "drain"

# ---- round 3: kill server 2 half-way (server 1 replaced, back in the hash) ----
kill -TERM ${spid[1]}; wait ${spid[1]}; spid[1]=0
start_server 1
"$gen" --vip $vip:$port "${servers[@]}" --stateless | ip netns exec $d nft -f -
for i in 0 1; do msg0[$i]=$(total messages_received $i); done
clients
sleep 0.8
established
had=$(($(total links 2)))
t_kill=$(date +%s%N)
kill -9 ${spid[2]}; wait ${spid[2]} 2>/dev/null; spid[2]=0
sleep 0.1 # the health check's delay
"$gen" --vip $vip:$port "${servers[@]}" --stateless --drain 2 | ip netns exec $d nft -f -
wait_clients
settle
got=$(($(total messages_received 0) - msg0[0] + $(total messages_received 1) - msg0[1]))
to=$(sum timeouts) dead=$(sum dead_acked) other=$(sum other) moved=$(sum moved)
last=0
for i in 0 1; do x=$(field timeout_last_ns "$tmp/c$i.json"); [ "${x:-0}" -gt $last ] && last=$x; done
late_ms=$(((last - t_kill) / 1000000))
[ "$to" -gt 0 ] && [ "$to" = "$had" ] && [ $late_ms -le $((idle * 1000 + 500)) ] && [ "$other$moved" = 00 ] &&
    ok "kill: server 2's $had links failed with PURE_ETIMEDOUT, the last $late_ms ms after the kill (idle_timeout ${idle} s)" ||
    bad "kill: server 2 had $had links; timeouts $to, the last $late_ms ms after the kill; other $other, moved $moved"
[ $((got + dead)) = $want ] && ok "kill: the survivors counted $got = $want less the $dead server 2 acknowledged before it died" ||
    bad "kill: survivors counted $got + $dead acknowledged by server 2 = $((got + dead)), want $want"
check_client "kill"

if [ ${#fails[@]} = 0 ]; then
    echo "fleet_netns: $passed passed, 0 failed (300 links: spread ${spread[*]}; rebinding, drain and kill lost nothing)"
    exit 0
fi
echo "fleet_netns: $passed passed, ${#fails[@]} failed: ${fails[*]}"
exit 1
