#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Path MTU found, not assumed (RFC 8899 in the core, pmtud.c): three network namespaces, client
# -- router -- server, joined by veth pairs; the router's far link (to the server) has a smaller
# MTU, as a tunnel has. Over IPv4 and IPv6, with the far link at 1400 and at 1280, and with the
# router's ICMP errors (Fragmentation Needed, Packet Too Big) allowed or dropped (common), a
# `pure drain 20000 1024` from the client namespace to `pure serve` in the server namespace must
# complete within 2x its time on the same path at 1500 (the baseline, per family), and within a
# hard timeout, so a black hole shows as a failure, never a hang. One line per case with its
# time. The router drops its own ICMP by policy routing (ip rule ipproto icmp/ipv6-icmp to a
# blackhole table): iproute2 only, no firewall needed.
# The machine may be shared and busy: each time is the best of up to three runs (the baseline
# the median of three), and a case counts as slow only if all three are.
# Needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN): without them it prints SKIP and exits 77 (ctest:
# "Not Run (Skipped)"); any other failure to set up the namespaces fails the test.
# Usage: tests/scripts/pmtu_netns.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
pure="$(cd "$1" && pwd)/pure"
[ -x "$pure" ] || { echo "pmtu_netns: $pure not built" >&2; exit 1; }

say() { echo "pmtu_netns: $*"; }
die() { echo "pmtu_netns: FAIL: $*" >&2; exit 1; }

capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
[ -n "$capeff" ] || die "cannot read CapEff from /proc/self/status"
has_cap() { [ $(( (0x$capeff >> $1) & 1 )) -eq 1 ]; }
if ! has_cap 21 || ! has_cap 12; then
    say "SKIP: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN (running as uid $(id -u), CapEff $capeff); run it as root with its full capability set"
    exit 77
fi
command -v ip >/dev/null || die "the ip command (iproute2) is missing: bash scripts/deps.sh"

N=20000 SIZE=1024
tag="pm$$"
nsc="${tag}c" nsr="${tag}r" nss="${tag}s"   # client, router, server
vcr="${tag}a" vrc="${tag}b"                 # client <-> router (client end, router end)
vrs="${tag}d" vsr="${tag}e"                 # router <-> server (router end, server end)
c4=10.214.1.2 rc4=10.214.1.1 rs4=10.214.2.1 s4=10.214.2.2
c6=fd00:214:1::2 rc6=fd00:214:1::1 rs6=fd00:214:2::1 s6=fd00:214:2::2
tmp=$(mktemp -d)
srv=""
created=()
cleanup() {
    if [ -n "$srv" ]; then kill "$srv" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    for ns in "${created[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

if ! ip netns add "$nsc" 2>"$tmp/err"; then
    if grep -qi 'operation not permitted\|permission denied' "$tmp/err"; then
        say "SKIP: ip netns add is not permitted here although CapEff has the capabilities: $(cat "$tmp/err")"
        exit 77
    fi
    die "ip netns add $nsc: $(cat "$tmp/err")"
fi
created+=("$nsc")
for ns in "$nsr" "$nss"; do ip netns add "$ns" || die "ip netns add $ns"; created+=("$ns"); done
# Each veth pair is made inside the router namespace and one end moved out: nothing appears in
# the caller's namespace.
ip -n "$nsr" link add "$vrc" type veth peer name "$vcr" netns "$nsc" || die "cannot create a veth pair"
ip -n "$nsr" link add "$vrs" type veth peer name "$vsr" netns "$nss" || die "cannot create a veth pair"
for ns in "$nsc" "$nsr" "$nss"; do ip -n "$ns" link set lo up; done
ip -n "$nsc" addr add "$c4/24" dev "$vcr"
ip -n "$nsr" addr add "$rc4/24" dev "$vrc"
ip -n "$nsr" addr add "$rs4/24" dev "$vrs"
ip -n "$nss" addr add "$s4/24" dev "$vsr"
ip -n "$nsc" -6 addr add "$c6/64" dev "$vcr" nodad
ip -n "$nsr" -6 addr add "$rc6/64" dev "$vrc" nodad
ip -n "$nsr" -6 addr add "$rs6/64" dev "$vrs" nodad
ip -n "$nss" -6 addr add "$s6/64" dev "$vsr" nodad
ip -n "$nsc" link set "$vcr" up
ip -n "$nsr" link set "$vrc" up
ip -n "$nsr" link set "$vrs" up
ip -n "$nss" link set "$vsr" up
ip -n "$nsc" route add default via "$rc4"
ip -n "$nss" route add default via "$rs4"
ip -n "$nsc" -6 route add default via "$rc6"
ip -n "$nss" -6 route add default via "$rs6"
ip netns exec "$nsr" sysctl -qw net.ipv4.ip_forward=1
ip netns exec "$nsr" sysctl -qw net.ipv6.conf.all.forwarding=1
for _ in $(seq 100); do
    ok=1
    for pair in "$nsc $vcr" "$nsr $vrc" "$nsr $vrs" "$nss $vsr"; do
        set -- $pair
        ip -n "$1" link show "$2" | grep -q LOWER_UP || ok=0
    done
    [ "$ok" -eq 1 ] && break
    sleep 0.05
done
[ "$ok" -eq 1 ] || die "a veth pair has no carrier"

# far_mtu MTU: the router's far link (both ends), and the client forgets what it learnt of it
far_mtu() {
    ip -n "$nsr" link set "$vrs" mtu "$1"
    ip -n "$nss" link set "$vsr" mtu "$1"
    ip -n "$nsc" route flush cache 2>/dev/null || true
    ip -n "$nsc" -6 route flush cache 2>/dev/null || true
}
# icmp on|off: the router's own ICMP errors go out, or into a blackhole
icmp() {
    if [ "$1" = off ]; then
        ip -n "$nsr" rule add ipproto icmp table 100 2>/dev/null || die "ip rule ipproto icmp unsupported"
        ip -n "$nsr" -6 rule add ipproto ipv6-icmp table 100
        ip -n "$nsr" route add blackhole default table 100
        ip -n "$nsr" -6 route add blackhole default table 100
    else
        ip -n "$nsr" rule del ipproto icmp table 100 2>/dev/null || true
        ip -n "$nsr" -6 rule del ipproto ipv6-icmp table 100 2>/dev/null || true
        ip -n "$nsr" route flush table 100 2>/dev/null || true
        ip -n "$nsr" -6 route flush table 100 2>/dev/null || true
    fi
}

# Reachability through the router first (a failure here is the setup's, not Pure's).
far_mtu 1500
ping_ok=0
for _ in $(seq 40); do
    if ip netns exec "$nsc" ping -c1 -W1 "$s4" >/dev/null 2>&1 &&
       ip netns exec "$nsc" ping -6 -c1 -W1 "$s6" >/dev/null 2>&1; then ping_ok=1; break; fi
    sleep 0.1
done
if [ "$ping_ok" -ne 1 ] && command -v ping >/dev/null; then die "the server is not reachable through the router"; fi

start_server() { # ADDR: pure serve in the server namespace; sets $srv, $port, $key
    : >"$tmp/srv"
    ip netns exec "$nss" "$pure" serve --ephemeral --listen "$1" --services drain \
        >"$tmp/srv" 2>"$tmp/srv.err" &
    srv=$!
    for _ in $(seq 600); do
        grep -q '"port"' "$tmp/srv" 2>/dev/null && break
        kill -0 "$srv" 2>/dev/null || die "server died: $(cat "$tmp/srv.err")"
        sleep 0.05
    done
    port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srv")
    key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/srv")
    [ -n "$port" ] && [ -n "$key" ] || die "bad server line: $(cat "$tmp/srv")"
}
stop_server() {
    kill -TERM "$srv"
    wait "$srv" || true
    srv=""
}

json() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" "$2"; }

# drain HOST: one drain from the client namespace; prints its seconds, or fails the test
drain() {
    local rc=0
    timeout 25 ip netns exec "$nsc" "$pure" drain "$1:$port" "$N" "$SIZE" --peer-key "$key" \
        --timeout 20 --stats >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [ "$rc" -ne 0 ] || [ "$(json messages "$tmp/out")" != "$N" ] ||
       [ "$(json server_messages "$tmp/out")" != "$N" ]; then
        cat "$tmp/out" "$tmp/err" >&2
        return 1
    fi
    sed -n 's/.*datagrams of \([0-9]*\) B.*/\1/p' "$tmp/err" >"$tmp/dgram"
    json seconds "$tmp/out"
}

best_of() { # HOST LIMIT: up to three drains, stopping at the first within LIMIT; prints the best
    local best="" t
    for _ in 1 2 3; do
        t=$(drain "$1") || return 1
        if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
        awk "BEGIN{exit !($best <= $2)}" && break
    done
    echo "$best"
}

fail=0
for fam in 4 6; do
    if [ "$fam" = 4 ]; then host=$s4 listen="$s4:0"; else host="[$s6]" listen="[$s6]:0"; fi
    icmp on
    far_mtu 1500
    start_server "$listen"
    runs=()
    for _ in 1 2 3; do
        t=$(drain "$host") || die "IPv$fam drain on the 1500 path failed"
        runs+=("$t")
    done
    base=$(printf '%s\n' "${runs[@]}" | sort -g | sed -n 2p)
    limit=$(awk "BEGIN{print 2 * $base}")
    say "IPv$fam  MTU 1500: ${base} s (median of ${runs[*]}), datagrams of $(cat "$tmp/dgram") B"
    for mtu in 1400 1280; do
        for ic in on off; do
            far_mtu "$mtu"
            icmp "$ic"
            if ! t=$(best_of "$host" "$limit"); then
                say "IPv$fam  MTU $mtu ICMP $([ "$ic" = on ] && echo allowed || echo dropped): FAILED (no completion within 20 s)"
                fail=1
                icmp on
                continue
            fi
            verdict=ok
            awk "BEGIN{exit !($t <= $limit)}" || { verdict="SLOW (> 2x ${base} s)"; fail=1; }
            say "IPv$fam  MTU $mtu ICMP $([ "$ic" = on ] && echo allowed || echo dropped): ${t} s, datagrams of $(cat "$tmp/dgram") B: $verdict"
            icmp on
        done
    done
    stop_server
done
[ "$fail" -eq 0 ] || die "a case failed or was more than 2x its baseline"
say "all 8 cases within 2x the 1500 baseline"
