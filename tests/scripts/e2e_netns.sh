#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end drain between two network namespaces joined by a veth pair: a real link between
# two network stacks rather than loopback, with a 1500-byte MTU for IPv4 (the design's path).
# `pure serve` listens on its veth address in one
# namespace (10.213.7.1/24, fd00:213:7::1/64), `pure drain` runs in the other (10.213.7.2,
# fd00:213:7::2). The addresses exist only inside these two namespaces, which the test creates
# and deletes. Fails unless every drain exits 0 with the server's count equal to N messages and
# N*SIZE bytes, and the server logged the link as coming from the client namespace's address.
# Needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN): without them it prints SKIP and exits 77, which
# ctest shows as "Not Run (Skipped)" (SKIP_RETURN_CODE in CMakeLists.txt); any other failure to
# set up the namespaces fails the test.
# Usage: tests/scripts/e2e_netns.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
pure="$(cd "$1" && pwd)/pure"
[ -x "$pure" ] || { echo "e2e_netns: $pure not built" >&2; exit 1; }

say() { echo "e2e_netns: $*"; }
die() { echo "e2e_netns: FAIL: $*" >&2; exit 1; }

# Permission: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN in the initial user
# namespace. Only their absence is a reason to skip.
capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
[ -n "$capeff" ] || die "cannot read CapEff from /proc/self/status"
has_cap() { [ $(( (0x$capeff >> $1) & 1 )) -eq 1 ]; }
if ! has_cap 21 || ! has_cap 12; then
    say "SKIP: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN (running as uid $(id -u), CapEff $capeff); run it as root with its full capability set"
    exit 77
fi
command -v ip >/dev/null || die "the ip command (iproute2) is missing: bash scripts/deps.sh"

tag="pt3$$"
nss="${tag}s" nsc="${tag}c"        # namespace names
vs="${tag}a" vc="${tag}b"          # veth ends (<= 15 characters)
sa4=10.213.7.1 ca4=10.213.7.2 sa6=fd00:213:7::1 ca6=fd00:213:7::2
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

if ! ip netns add "$nss" 2>"$tmp/err"; then
    if grep -qi 'operation not permitted\|permission denied' "$tmp/err"; then
        say "SKIP: ip netns add is not permitted here although CapEff has the capabilities: $(cat "$tmp/err")"
        exit 77
    fi
    die "ip netns add $nss: $(cat "$tmp/err")"
fi
created+=("$nss")
ip netns add "$nsc" || die "ip netns add $nsc"
created+=("$nsc")
# The veth pair is created inside the server namespace, so nothing ever appears in the
# caller's namespace even for a moment; one end then moves to the client namespace.
ip -n "$nss" link add "$vs" type veth peer name "$vc" netns "$nsc" || die "cannot create a veth pair"
for ns in "$nss" "$nsc"; do ip -n "$ns" link set lo up; done
ip -n "$nss" addr add "$sa4/24" dev "$vs"
ip -n "$nsc" addr add "$ca4/24" dev "$vc"
ip -n "$nss" -6 addr add "$sa6/64" dev "$vs" nodad
ip -n "$nsc" -6 addr add "$ca6/64" dev "$vc" nodad
ip -n "$nss" link set "$vs" up
ip -n "$nsc" link set "$vc" up
# Both ends up with carrier before Pure is tried (a failure here is the setup's, not Pure's).
for _ in $(seq 100); do
    ip -n "$nss" link show "$vs" | grep -q LOWER_UP && ip -n "$nsc" link show "$vc" | grep -q LOWER_UP && break
    sleep 0.05
done
ip -n "$nsc" link show "$vc" | grep -q LOWER_UP || die "the veth pair has no carrier: $(ip -n "$nsc" link show "$vc")"
# The namespaces really are separate: the server's address is not in the client's stack.
if ip -n "$nsc" -4 addr show | grep -q "$sa4/"; then die "$sa4 is visible in the client namespace"; fi

# start_server ADDR: pure serve inside the server namespace; sets $srv, $port, $key
start_server() {
    : >"$tmp/srv"
    ip netns exec "$nss" "$pure" serve --ephemeral --listen "$1" --services drain --verbose \
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
    local rc=0
    wait "$srv" || rc=$?
    srv=""
    [ "$rc" -eq 0 ] || die "pure serve exited $rc on SIGTERM: $(cat "$tmp/srv.err")"
}

json() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" "$2"; }

# drain HOST N SIZE CLIENT_ADDR: one drain from the client namespace
drain() {
    local host=$1 n=$2 size=$3 caddr=$4 rc=0
    timeout 70 ip netns exec "$nsc" "$pure" drain "$host:$port" "$n" "$size" --peer-key "$key" \
        --timeout 60 --stats >"$tmp/out" 2>"$tmp/err" || rc=$?
    local sm sb
    sm=$(json server_messages "$tmp/out")
    sb=$(json server_bytes "$tmp/out")
    if [ "$rc" -ne 0 ] || [ "$(json messages "$tmp/out")" != "$n" ] || [ "$sm" != "$n" ] ||
       [ "$sb" != "$((n * size))" ]; then
        cat "$tmp/out" "$tmp/err" "$tmp/srv.err" >&2
        die "drain $host $n x $size B: exit $rc, server counted '$sm' messages, '$sb' bytes"
    fi
    # The server saw the link come from the client namespace's veth address.
    local acc=0
    for _ in $(seq 100); do
        acc=$(grep -c "accepted drain from $caddr" "$tmp/srv.err" || true)
        [ "$acc" -ge 1 ] && break
        sleep 0.05
    done
    [ "$acc" -ge 1 ] || die "the server logged no link from $caddr: $(cat "$tmp/srv.err")"
    say "ok $host (MTU $(ip -n "$nsc" -o link show "$vc" | sed -n 's/.* mtu \([0-9]*\).*/\1/p')): $n x $size B in $(json seconds "$tmp/out") s"
}

start_server "$sa4:0"
drain "$sa4" 100000 1024 "$ca4"
drain "$sa4" 10000 16384 "$ca4"
drain "$sa4" 200000 61 "$ca4"
stop_server

# IPv6 over a 1500-byte MTU: 1472-byte UDP payloads do not fit under a 40-byte IPv6 header, so
# the first bursts fail with EMSGSIZE and the link must shrink its datagrams
# (pure_ctx_burst_too_big) to get through. Then a 1300-byte MTU, a tunnel-like path.
mtu6=${PURE_NETNS_IPV6_MTU:-1500}
ip -n "$nss" link set "$vs" mtu "$mtu6"
ip -n "$nsc" link set "$vc" mtu "$mtu6"
start_server "[$sa6]:0"
drain "[$sa6]" 50000 1024 "\\[$ca6\\]"
stop_server
ip -n "$nss" link set "$vs" mtu 1300
ip -n "$nsc" link set "$vc" mtu 1300
start_server "[$sa6]:0"
drain "[$sa6]" 20000 1024 "\\[$ca6\\]"
stop_server
say "all drains passed"
