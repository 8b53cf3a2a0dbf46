#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Smoke test of the RPC workload (bench/README.md, "RPC"): Pure's rpc_bench, the TCP+TLS
# tls-rpc and (when their peers build) ngtcp2's, quinn's, ZeroMQ+CURVE's and gRPC's
# rpc-serve/rpc-client, each ~1 s at L = 100 links, P = 16 requests in flight, 61-byte requests on loopback.
# Asserts behaviour, not timing: the client exits 0 with no bad or missing reply and replies ==
# sent, the server (on SIGTERM) counts exactly the requests the client sent, sent each back, and
# accepted 100 links; and a client whose server corrupts one reply in 500 (--corrupt-every) or
# leaves one unanswered (--drop-every) exits non-zero and says so. Then the fan-in drain and a
# paced run (--fanin, --rate; bench/README.md "Fan-in" and "Cost growth") of each.
# Builds the tls, ngtcp2, zmq and grpc peers if needed (peers/*/build.sh, as peers_quick does;
# ngtcp2, zmq and grpc are skipped if their packages are missing); rpc_bench comes from the CMake
# build. For zmq and grpc, also: a client given another server's key or certificate exits
# non-zero at once, saying why (CURVE and TLS refuse the handshake; nothing hangs).
# With PURE_SMOKE_PEERS=0 only Pure's rows run (no peer is built).
# Usage: tests/scripts/rpc_smoke.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
[ -x "$build/rpc_bench" ] || { echo "rpc_smoke: $build/rpc_bench not built" >&2; exit 1; }
# PURE_SMOKE_PEERS=0: Pure's rows alone (scripts/test.sh's sanitized pass: the peers are other
# projects' code, unsanitized, and ran in the first pass)
if [ "${PURE_SMOKE_PEERS:-1}" = 0 ]; then
    impls="pure"
else
    "$root/peers/tls/build.sh" "$build/peers" >/dev/null
    impls="pure tls"
    if "$root/peers/ngtcp2/build.sh" "$build/peers" >/dev/null 2>&1; then
        impls="$impls ngtcp2"
    else
        echo "rpc_smoke: note: peers/ngtcp2 does not build here (libngtcp2-dev missing?): ngtcp2 row skipped"
    fi
    # quinn only when its binary exists: its first cargo build takes minutes (peers/quinn/build.sh)
    [ -x "$build/peers/quinn" ] && impls="$impls quinn"
    # the incumbents (issue #21): their build.sh exits 3 when the Debian packages are absent (then
    # the row is skipped); any other build failure is a failure here
    for peer in zmq grpc; do
        rc=0; "$root/peers/$peer/build.sh" "$build/peers" >"$build/peers/$peer.build.log" 2>&1 || rc=$?
        if [ $rc -eq 0 ]; then
            impls="$impls $peer"
        elif [ $rc -eq 3 ]; then
            echo "rpc_smoke: note: $(tail -1 "$build/peers/$peer.build.log"): $peer row skipped"
        else
            echo "rpc_smoke: FAIL peers/$peer/build.sh (exit $rc):" >&2; tail -20 "$build/peers/$peer.build.log" >&2
            exit 1
        fi
    done
fi
tmp=$(mktemp -d)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
json() { sed -n "s/.*\"$2\": *\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" "$1" | tail -1; }

# start_server NAME ARGV...: runs it, waits for its JSON line, sets $srv and $extra (client args)
start_server() {
    local name=$1; shift
    "$@" >"$tmp/$name.srv" 2>"$tmp/$name.srv.err" &
    srv=$!
    for _ in $(seq 100); do [ -s "$tmp/$name.srv" ] && break; sleep 0.05; done
    port=$(json "$tmp/$name.srv" port)
    [ -n "$port" ] || { echo "rpc_smoke: $name: no server line: $(cat "$tmp/$name.srv.err")" >&2; exit 1; }
    local key fp zkey cert
    key=$(json "$tmp/$name.srv" public_key); fp=$(json "$tmp/$name.srv" cert_sha256)
    zkey=$(json "$tmp/$name.srv" server_key); cert=$(json "$tmp/$name.srv" cert_b64)
    addr="$port"; extra=()
    if [ -n "$key" ]; then addr="127.0.0.1:$port"; extra=(--peer-key "$key"); elif [ -n "$fp" ]; then extra=(--cert-sha256 "$fp"); fi
    if [ -n "$zkey" ]; then extra=(--server-key "$zkey"); elif [ -n "$cert" ]; then extra=(--cert-b64 "$cert"); fi
}
stop_server() { kill -TERM "$srv"; wait "$srv" || true; srv=""; }

common=(--links 100 --outstanding 16 --size 61 --duration 1 --warmup 0.2 --drain-timeout 3)
# cmds IMPL: sets bin (argv), serve and client (its subcommands)
cmds() {
    case $1 in
        pure) bin=("$build/rpc_bench"); serve=serve; client=client ;;
        tls) bin=("$build/peers/tls-rpc"); serve=serve; client=client ;;
        ngtcp2) bin=("$build/peers/ngtcp2"); serve=rpc-serve; client=rpc-client ;;
        quinn) bin=("$build/peers/quinn"); serve=rpc-serve; client=rpc-client ;;
        zmq) bin=("$build/peers/zmq"); serve=rpc-serve; client=rpc-client ;;
        grpc) bin=("$build/peers/grpc"); serve=rpc-serve; client=rpc-client ;;
    esac
}
for impl in $impls; do
    cmds $impl
    # 1. a clean run: every reply intact, the counts agree on both sides
    start_server $impl "${bin[@]}" $serve
    rc=0; timeout 30 "${bin[@]}" $client "$addr" "${extra[@]}" "${common[@]}" >"$tmp/$impl.cli" 2>"$tmp/$impl.cli.err" || rc=$?
    stop_server
    sent=$(json "$tmp/$impl.cli" sent); replies=$(json "$tmp/$impl.cli" replies)
    errors=$(json "$tmp/$impl.cli" errors); missing=$(json "$tmp/$impl.cli" missing)
    requests=$(json "$tmp/$impl.cli" requests)
    served=$(json "$tmp/$impl.srv" served); taken=$(json "$tmp/$impl.srv" requests); links=$(json "$tmp/$impl.srv" links)
    if [ $rc -ne 0 ] || [ "$errors" != 0 ] || [ "$missing" != 0 ] || [ -z "$sent" ] || [ "$sent" != "$replies" ] ||
       [ "$served" != "$sent" ] || [ "$taken" != "$sent" ] || [ "$links" != 100 ] || [ "${requests:-0}" -le 0 ]; then
        echo "rpc_smoke: FAIL $impl clean run: exit $rc, client sent=$sent replies=$replies errors=$errors" \
             "missing=$missing in-window=$requests; server requests=$taken served=$served links=$links" >&2
        cat "$tmp/$impl.cli.err" "$tmp/$impl.srv.err" >&2
        fail=1
    else
        echo "rpc_smoke: ok $impl: $sent requests on 100 links, every reply checked ($requests in the window)"
    fi
    # 2. a server that corrupts one reply in 500, 3. one that leaves one in 500 unanswered
    for fault in corrupt drop; do
        start_server $impl-$fault "${bin[@]}" $serve --$fault-every 500
        rc=0; timeout 30 "${bin[@]}" $client "$addr" "${extra[@]}" "${common[@]}" --duration 0.3 --drain-timeout 1 \
            >"$tmp/$impl-$fault.cli" 2>"$tmp/$impl-$fault.cli.err" || rc=$?
        stop_server
        errors=$(json "$tmp/$impl-$fault.cli" errors)
        if [ $rc -eq 0 ] || [ "${errors:-0}" = 0 ]; then
            echo "rpc_smoke: FAIL $impl: the client exited $rc with errors=$errors against a server" \
                 "with --$fault-every 500" >&2
            fail=1
        else
            echo "rpc_smoke: ok $impl: a server with --$fault-every 500 makes the client exit $rc" \
                 "($(json "$tmp/$impl-$fault.cli" first_error))"
        fi
    done
done

# 4. the fan-in drain (--fanin): 20 links x 500 one-way requests; the server counts all 10,000
# and echoes only each link's last; 5. a paced run (--rate 2000 over 50 links) holds its rate
for impl in $impls; do
    cmds $impl
    start_server $impl-fanin "${bin[@]}" $serve
    rc=0; timeout 30 "${bin[@]}" $client "$addr" "${extra[@]}" --links 20 --size 200 --fanin 500 --drain-timeout 10 \
        >"$tmp/$impl-fanin.cli" 2>"$tmp/$impl-fanin.cli.err" || rc=$?
    stop_server
    sent=$(json "$tmp/$impl-fanin.cli" sent); replies=$(json "$tmp/$impl-fanin.cli" replies)
    msgs=$(json "$tmp/$impl-fanin.cli" messages)
    served=$(json "$tmp/$impl-fanin.srv" served); taken=$(json "$tmp/$impl-fanin.srv" requests)
    if [ $rc -ne 0 ] || [ "$sent" != 10000 ] || [ "$msgs" != 10000 ] || [ "$replies" != 20 ] ||
       [ "$taken" != 10000 ] || [ "$served" != 20 ]; then
        echo "rpc_smoke: FAIL $impl fan-in: exit $rc, client sent=$sent messages=$msgs echoes=$replies;" \
             "server requests=$taken served=$served (want 10000, 10000, 20; 10000, 20)" >&2
        cat "$tmp/$impl-fanin.cli.err" "$tmp/$impl-fanin.srv.err" >&2
        fail=1
    else
        echo "rpc_smoke: ok $impl fan-in: 10000 one-way requests on 20 links counted, 20 last ones echoed"
    fi
    start_server $impl-rate "${bin[@]}" $serve
    rc=0; timeout 30 "${bin[@]}" $client "$addr" "${extra[@]}" --links 50 --outstanding 4 --size 61 --duration 1 \
        --warmup 0.2 --rate 2000 >"$tmp/$impl-rate.cli" 2>"$tmp/$impl-rate.cli.err" || rc=$?
    stop_server
    rps=$(json "$tmp/$impl-rate.cli" requests_per_s); sent=$(json "$tmp/$impl-rate.cli" sent)
    taken=$(json "$tmp/$impl-rate.srv" requests)
    if [ $rc -ne 0 ] || [ "$taken" != "$sent" ] || ! awk -v r="${rps:-0}" 'BEGIN { exit !(r >= 1700 && r <= 2300) }'; then
        echo "rpc_smoke: FAIL $impl --rate 2000: exit $rc, $rps requests/s in the window, sent=$sent," \
             "server took $taken" >&2
        cat "$tmp/$impl-rate.cli.err" >&2
        fail=1
    else
        echo "rpc_smoke: ok $impl --rate 2000: $rps requests/s in the window, every reply checked"
    fi
done

# 6. zmq and grpc: a client that pins another server's key / certificate is refused at the
# handshake and exits non-zero in seconds (ZeroMQ would otherwise retry CURVE quietly forever)
for impl in $impls; do
    case $impl in zmq | grpc) ;; *) continue ;; esac
    cmds $impl
    start_server $impl-other "${bin[@]}" $serve
    other=("${extra[@]}"); stop_server
    start_server $impl-pin "${bin[@]}" $serve
    rc=0; t0=$(date +%s)
    timeout 30 "${bin[@]}" $client "$addr" "${other[@]}" "${common[@]}" >"$tmp/$impl-pin.cli" \
        2>"$tmp/$impl-pin.cli.err" || rc=$?
    took=$(( $(date +%s) - t0 ))
    stop_server
    if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $took -gt 10 ] ||
       ! grep -q "handshake failed\|did not connect" "$tmp/$impl-pin.cli.err"; then
        echo "rpc_smoke: FAIL $impl: a client pinning another server's key exited $rc after $took s:" >&2
        cat "$tmp/$impl-pin.cli.err" >&2
        fail=1
    else
        echo "rpc_smoke: ok $impl: another server's key is refused (exit $rc in $took s:" \
             "$(grep -m1 "handshake failed\|did not connect" "$tmp/$impl-pin.cli.err"))"
    fi
done
exit $fail
