#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Traffic through the director scripts/fleet_nft.sh generates (conntrack mode): a client
# namespace, a director namespace running the ruleset for the address 10.9.0.1:4433, and two
# server namespaces running `pure serve --server-id 0/1` with one key. 24 `pure ping`s (each its
# own socket) must all complete through the shared address and land on both servers. Exits 77
# (skip) when not root or when namespaces or nft are refused. Usage: fleet_director_netns.sh BUILD
set -uo pipefail
pure="$(cd "$1" && pwd)/pure"
gen="$(cd "$(dirname "$0")/../.." && pwd)/scripts/fleet_nft.sh"
[ "$(id -u)" = 0 ] && command -v nft >/dev/null || { echo "fleet_director_netns: SKIP: needs root and nft"; exit 77; }
p=pf$$ c=${p}c d=${p}d tmp=$(mktemp -d) pids=()
cleanup() {
    for x in "${pids[@]}"; do kill "$x" 2>/dev/null; done
    wait 2>/dev/null
    for n in $c $d ${p}s0 ${p}s1; do ip netns del $n 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add $d 2>/dev/null || { echo "fleet_director_netns: SKIP: ip netns add refused"; exit 77; }
set -e
ip netns add $c
ip -n $d link set lo up
ip netns exec $d sysctl -qw net.ipv4.ip_forward=1
link() { # link NS DIRECTOR_ADDR NS_ADDR
    ip link add ${p}x type veth peer name ${p}y
    ip link set ${p}x netns $d
    ip link set ${p}y netns $1
    ip -n $d link set ${p}x name "v$1" 2>/dev/null || true
    ip -n $d addr add $2/24 dev "v$1"; ip -n $d link set "v$1" up
    ip -n $1 addr add $3/24 dev ${p}y; ip -n $1 link set ${p}y up; ip -n $1 link set lo up
    ip -n $1 route add default via $2
}
link $c 10.1.0.1 10.1.0.2
"$pure" keygen >"$tmp/key"
for i in 0 1; do
    ip netns add ${p}s$i
    link ${p}s$i 10.2.$i.1 10.2.$i.2
    ip netns exec ${p}s$i "$pure" serve --listen 0.0.0.0:4433 --key "$tmp/key" --allow-any --threads 1 \
        --services echo --server-id $i --verbose >"$tmp/s$i.out" 2>"$tmp/s$i.err" &
    pids+=($!)
done
"$gen" --vip 10.9.0.1:4433 --server 0=10.2.0.2 --server 1=10.2.1.2 | ip netns exec $d nft -f - ||
    { echo "fleet_director_netns: SKIP: the ruleset was refused"; exit 77; }
set +e
for _ in $(seq 100); do [ -s "$tmp/s0.out" ] && [ -s "$tmp/s1.out" ] && break; sleep 0.05; done
key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/s0.out")
ok=0
for _ in $(seq 24); do
    timeout 10 ip netns exec $c "$pure" ping 10.9.0.1:4433 3 100 --peer-key "$key" >/dev/null 2>>"$tmp/ping.err" && ok=$((ok + 1))
done
n0=$(grep -c "accepted" "$tmp/s0.err"); n1=$(grep -c "accepted" "$tmp/s1.err")
echo "fleet_director_netns: $ok of 24 pings through 10.9.0.1:4433; links opened: server 0 $n0, server 1 $n1"
if [ $ok = 24 ] && [ "$n0" -ge 3 ] && [ "$n1" -ge 3 ]; then echo "fleet_director_netns: 1 passed, 0 failed"; exit 0; fi
echo "fleet_director_netns: FAIL $(head -3 "$tmp/ping.err") $(head -3 "$tmp/s0.err")" >&2
echo "fleet_director_netns: 0 passed, 1 failed"; exit 1
