#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/fleet_nft.sh, the director's ruleset generator: its output for three servers (one
# drained) and for the stateless mode with thread bits loads into nftables in a throwaway
# network namespace, and the kernel's listing shows DATA routed by the index's server bits to
# every server, drained or not, and INITs hashed over the servers not drained only; the
# stateless mode's --routes load into policy routing; bad arguments exit 2. Exits 77 (skip) when not root or when nft or namespaces are refused.
# Usage: tests/scripts/fleet_nft_rules.sh BUILD_DIR
set -uo pipefail
gen="$(cd "$(dirname "$0")/../.." && pwd)/scripts/fleet_nft.sh"
fail=0 passed=0
ok() { echo "fleet_nft_rules: ok $1"; passed=$((passed + 1)); }
bad() { echo "fleet_nft_rules: FAIL $1" >&2; fail=$((fail + 1)); }
# bad arguments need no root
for args in "--server 0=10.0.0.1" "--vip 10.9.0.1:4433" "--vip 10.9.0.1:4433 --server 4=10.0.0.1 --server-id-bits 2" \
    "--vip 10.9.0.1:4433 --server 0=10.0.0.1 --server 0=10.0.0.2" "--vip 10.9.0.1:4433 --server 0=10.0.0.1 --drain 0" \
    "--vip 10.9.0.1:4433 --server 0=10.0.0.1 --drain 3" "--vip 10.9.0.1:4433 --server 0=10.0.0.1 --thread-bits 4 --server-id-bits 5" \
    "--vip 10.9.0.1:4433 --server 0=10.0.0.1 --routes"; do
    rc=0; "$gen" $args >/dev/null 2>&1 || rc=$?
    [ $rc = 2 ] && ok "refuses '$args'" || bad "'$args' gave exit $rc, not 2"
done
if [ "$(id -u)" != 0 ] || ! command -v nft >/dev/null; then
    echo "fleet_nft_rules: SKIP: needs root and nft (apt-get install nftables)"; exit 77
fi
ns=pure_fleet_rules_$$
ip netns add "$ns" 2>/dev/null || { echo "fleet_nft_rules: SKIP: ip netns add refused"; exit 77; }
trap 'ip netns del "$ns" 2>/dev/null' EXIT
out=$("$gen" --vip 10.9.0.1:4433 --server 0=10.0.0.1 --server 1=10.0.0.2 --server 2=10.0.0.3 --drain 1)
if ! err=$(ip netns exec "$ns" nft -f - <<<"$out" 2>&1); then
    if grep -qi "not supported\|Operation not permitted" <<<"$err"; then
        echo "fleet_nft_rules: SKIP: nftables refused here: $err"; exit 77
    fi
    bad "conntrack ruleset does not load: $err"
else
    list=$(ip netns exec "$ns" nft list table ip pure_fleet)
    grep -q 'dnat to @th,96,8 map { 0 : 10.0.0.1, 1 : 10.0.0.2, 2 : 10.0.0.3 }' <<<"$list" &&
        ok "DATA routed by the top byte to all three" || bad "DATA rule: $list"
    grep -q 'jhash ip saddr . udp sport . @th,72,32 mod 2 map { 0 : 10.0.0.1, 1 : 10.0.0.3 }' <<<"$list" &&
        ok "INITs hashed over the two not drained" || bad "INIT rule: $list"
    # loading again replaces the table, not adds to it
    ip netns exec "$ns" nft -f - <<<"$out" && [ "$(ip netns exec "$ns" nft list ruleset | grep -c jhash)" = 1 ] &&
        ok "reloading replaces" || bad "reloading did not replace the table"
fi
out=$("$gen" --vip 10.9.0.1:4433 --server 0=10.0.0.1 --server 5=10.0.0.2 --thread-bits 2 --server-id-bits 3 --stateless)
if err=$(ip netns exec "$ns" nft -f - <<<"$out" 2>&1); then
    list=$(ip netns exec "$ns" nft list table ip pure_fleet)
    # thread bits 7..6 of the byte, server bits 5..3: id 5 is 0x28 (40) under mask 0x38
    grep -q 'notrack' <<<"$list" && grep -q 'meta mark set @th,96,8 & 0x38 map { 0 : 0x50550000, 40 : 0x50550005 }' <<<"$list" &&
        ok "stateless: notrack, server bits below two thread bits" || bad "stateless rules: $list"
else
    bad "stateless ruleset does not load: $err"
fi
# the stateless mode's policy routes: a rule per mark, the VIP via the server in its table
ip -n "$ns" link add pfr0 type veth peer name pfr1 && ip -n "$ns" addr add 10.0.0.254/24 dev pfr0 &&
    ip -n "$ns" link set pfr0 up && ip -n "$ns" link set pfr1 up
"$gen" --vip 10.9.0.1:4433 --server 0=10.0.0.1 --server 5=10.0.0.2 --stateless --routes |
    ip -n "$ns" -force -batch - >/dev/null 2>&1
routes=$(ip -n "$ns" rule; ip -n "$ns" route show table all)
grep -q "fwmark 0x50550005 lookup 20005" <<<"$routes" && grep -q "10.9.0.1 via 10.0.0.2 dev pfr0 table 20005" <<<"$routes" &&
    grep -q "10.9.0.1 via 10.0.0.1 dev pfr0 table 20000" <<<"$routes" &&
    ok "stateless: --routes loads a rule and a table per server" || bad "stateless routes: $routes"
echo "fleet_nft_rules: $passed passed, $fail failed"
[ $fail = 0 ]
