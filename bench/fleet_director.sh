#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the fleet's director (scripts/fleet_nft.sh --stateless: nftables marks and policy routing,
# docs/fleet.md) costs: added round-trip time and CPU per packet, against the same path with the
# director's namespace as a plain router and against a direct link with no hop at all.
#
# Namespaces: a client (10.1.0.2), a director (10.1.0.1 / 10.2.0.1) and a server holding the
# shared address 10.9.0.1 on lo (10.2.0.2 towards the director, 10.3.0.2 on a direct veth to the
# client, 10.3.0.1). `pure serve --listen 10.9.0.1:4433 --server-id 0` serves echo. Three paths
# to 10.9.0.1, switched by routes between runs:
#   director  through the director namespace with the ruleset and its policy routes loaded
#   router    through the same namespace with the ruleset removed (a route to the server)
#   direct    over the direct veth
# Latency: `pure ping` (N round trips of 61 B, one link) on each path: p50 and p99.
# CPU per packet: one Python thread sends P datagrams of 64 B shaped like a Pure DATA packet
# for server 0 as fast as it can; the veth hops, the director's forwarding and nftables all run
# in softirq context on the sender's CPU. Measured: the whole machine's busy time from
# /proc/stat (user+nice+system+irq+softirq) per datagram, and the sender's own CPU (rusage);
# the director's cost per packet is the director path's figure less the direct path's, the
# ruleset's alone the director path's less the router's. The sender's own figure is the steadier
# one (the softirq work its sends cause is charged to it, and other load on the machine is not). Each path runs ROUNDS times, interleaved;
# medians. The machine is shared: /proc/stat counts everything on it, so run it on a quiet one.
# Prints a table and one JSON line last. Needs root and nft; exits 77 otherwise.
# Usage: bench/fleet_director.sh BUILD_DIR [PINGS (2000)] [PACKETS (300000)] [ROUNDS (3)]
set -euo pipefail
bdir="$(cd "${1:?usage: bench/fleet_director.sh BUILD_DIR [PINGS] [PACKETS] [ROUNDS]}" && pwd)"
pings=${2:-2000} packets=${3:-300000} rounds=${4:-3}
pure="$bdir/pure"
gen="$(cd "$(dirname "$0")/.." && pwd)/scripts/fleet_nft.sh"
[ "$(id -u)" = 0 ] && command -v nft >/dev/null || { echo "fleet_director: SKIP: needs root and nft"; exit 77; }
py=/usr/bin/python3
c=pfd$$c d=pfd$$d s=pfd$$s vip=10.9.0.1 tmp=$(mktemp -d) spid=""
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null; wait 2>/dev/null
    for n in $c $d $s; do ip netns del $n 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
for n in $c $d $s; do ip netns add $n; ip -n $n link set lo up; done
ip netns exec $d sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
pair() { # pair NS1 NAME1 ADDR1 NS2 NAME2 ADDR2
    ip link add $2 netns $1 type veth peer name $5 netns $4
    ip -n $1 addr add $3/24 dev $2; ip -n $1 link set $2 up
    ip -n $4 addr add $6/24 dev $5; ip -n $4 link set $5 up
}
pair $c cd 10.1.0.2 $d dc 10.1.0.1
pair $d ds 10.2.0.1 $s sd 10.2.0.2
pair $c cs 10.3.0.1 $s sc 10.3.0.2
ip -n $s addr add $vip/32 dev lo
ip -n $s route add default via 10.2.0.1
ip -n $d route add $vip/32 via 10.2.0.2 # the plain router's route (the ruleset's marks win)
"$gen" --vip $vip:4433 --server 0=10.2.0.2 --stateless --routes | ip -n $d -force -batch - >/dev/null 2>&1 || true
"$pure" keygen >"$tmp/key"
ip netns exec $s "$pure" serve --listen $vip:4433 --key "$tmp/key" --allow-any --threads 1 \
    --services echo --server-id 0 >"$tmp/s.out" 2>"$tmp/s.err" &
spid=$!
for _ in $(seq 100); do [ -s "$tmp/s.out" ] && break; sleep 0.05; done
key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/s.out")
[ -n "$key" ] || { echo "fleet_director: pure serve did not start: $(cat "$tmp/s.err")" >&2; exit 1; }

path() { # path director|router|direct
    case $1 in
    director) "$gen" --vip $vip:4433 --server 0=10.2.0.2 --stateless | ip netns exec $d nft -f -
        ip -n $c route replace $vip/32 via 10.1.0.1; ip -n $s route del 10.1.0.2/32 2>/dev/null || true ;;
    router) ip netns exec $d nft delete table ip pure_fleet 2>/dev/null || true
        ip -n $c route replace $vip/32 via 10.1.0.1; ip -n $s route del 10.1.0.2/32 2>/dev/null || true ;;
    direct) ip -n $c route replace $vip/32 via 10.3.0.2; ip -n $s route replace 10.1.0.2/32 via 10.3.0.1 ;;
    esac
}
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; } # jiffies (USER_HZ)
hz=$(getconf CLK_TCK)
flood() { # sends $packets datagrams; prints the sender's CPU seconds
    ip netns exec $c $py -c '
import os, resource, socket, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((sys.argv[2], 4433))
pkt = bytes([0x08, 0x11, 0x22, 0x33, 0x00]) + bytes(59)  # DATA for an index of server 0
send = s.send
for _ in range(n):
    send(pkt)
r = resource.getrusage(resource.RUSAGE_SELF)
print(r.ru_utime + r.ru_stime)
' "$packets" $vip
}
fwd() { ip netns exec $d awk '/^Ip: [0-9]/{print $7}' /proc/net/snmp; } # ForwDatagrams
declare -A p50 p99 busy_us send_us
for r in $(seq "$rounds"); do
    for m in director router direct; do
        path $m
        j=$(ip netns exec $c "$pure" ping $vip:4433 "$pings" 61 --peer-key "$key")
        p50[$m]+="$(sed -n 's/.*"p50_us": *\([0-9.]*\).*/\1/p' <<<"$j") "
        p99[$m]+="$(sed -n 's/.*"p99_us": *\([0-9.]*\).*/\1/p' <<<"$j") "
        f0=$(fwd); b0=$(busy)
        cpu=$(flood)
        b1=$(busy); f1=$(fwd)
        if [ $m != direct ] && [ $((f1 - f0)) -lt $((packets * 9 / 10)) ]; then
            echo "fleet_director: the $m path forwarded $((f1 - f0)) of $packets datagrams" >&2; exit 1
        fi
        busy_us[$m]+="$(awk -v b=$((b1 - b0)) -v hz="$hz" -v n="$packets" 'BEGIN{printf "%.3f", b / hz / n * 1e6}') "
        send_us[$m]+="$(awk -v c="$cpu" -v n="$packets" 'BEGIN{printf "%.3f", c / n * 1e6}') "
    done
done
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }
printf "%-9s %9s %9s %16s %16s\n" path p50_us p99_us busy_us/packet sender_us/packet
json="{\"pings\": $pings, \"packets\": $packets, \"rounds\": $rounds"
for m in director router direct; do
    a=$(med "${p50[$m]}") b=$(med "${p99[$m]}") e=$(med "${busy_us[$m]}") f=$(med "${send_us[$m]}")
    printf "%-9s %9s %9s %16s %16s\n" $m "$a" "$b" "$e" "$f"
    json+=", \"$m\": {\"p50_us\": $a, \"p99_us\": $b, \"busy_us_per_packet\": $e, \"sender_us_per_packet\": $f}"
    eval "m_$m=\$e; s_$m=\$f; l_$m=\$a"
done
d() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a - b}'; }
hop=$(d "$s_director" "$s_direct") rules=$(d "$s_director" "$s_router")
hopb=$(d "$m_director" "$m_direct") rulesb=$(d "$m_director" "$m_router")
rtt=$(awk -v a="$l_director" -v b="$l_direct" 'BEGIN{printf "%.1f", a - b}')
echo "director hop: +$hop us of the sender's CPU per packet (the ruleset alone +$rules us); machine busy time +$hopb us (+$rulesb us); +$rtt us round trip (p50) against the direct path"
echo "$json, \"director_cpu_us_per_packet\": $hop, \"ruleset_cpu_us_per_packet\": $rules, \"director_busy_us_per_packet\": $hopb, \"ruleset_busy_us_per_packet\": $rulesb, \"added_rtt_p50_us\": $rtt}"
