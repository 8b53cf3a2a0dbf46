#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Smoke test of the peers' rows of the head-of-line benchmark (bench/README.md "hol", issue #23):
# each peer's hol client runs ~1 s in each of its modes against its hol server on loopback at 0%
# loss (quinn and ngtcp2: alone, same, separate; TCP+TLS: alone, same), and the JSON line must
# show the fixed request rate (requests within 2% of rate x duration: they are paced, not sent
# back to back), every request answered, percentiles in order (0 < p50 <= p99 <= p99.9 <= max),
# and bulk goodput reported by the server (> 0 with bulk, 0 alone); TCP+TLS "same" again three
# times with the client on core 0 and a p50 under 250 ms (a server that stops echoing while it
# reads fails it). tls-hol must refuse --mode separate and every client a bad --mode. Then, as
# root with build/udpfwd present, one cell per transport through bench/hol_peers.py at 1% loss: ngtcp2 separate through udpfwd, and
# TCP+TLS same between two network namespaces whose packets peers/tls/tunpath carries through
# udpfwd. Peers that do not build are skipped (quinn only when its binary exists: its first cargo
# build takes minutes); exit 77 only if none can run.
# Usage: tests/scripts/hol_peers_smoke.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
py=/usr/bin/python3
impls=""
if "$root/peers/tls/build.sh" "$build/peers" >/dev/null 2>&1; then impls="tls"; else
    echo "hol_peers_smoke: note: peers/tls does not build here: TCP+TLS row skipped"; fi
if "$root/peers/ngtcp2/build.sh" "$build/peers" >/dev/null 2>&1; then impls="$impls ngtcp2"; else
    echo "hol_peers_smoke: note: peers/ngtcp2 does not build here: ngtcp2 row skipped"; fi
if [ -x "$build/peers/quinn" ] && "$build/peers/quinn" --help 2>/dev/null | grep -q hol-client; then
    impls="$impls quinn"
else
    echo "hol_peers_smoke: note: $build/peers/quinn absent or without hol (peers/quinn/build.sh): quinn row skipped"
fi
if [ -z "$impls" ]; then echo "hol_peers_smoke: SKIP: no peer builds"; exit 77; fi
tmp=$(mktemp -d)
srv=""
cleanup() { if [ -n "$srv" ]; then kill "$srv" 2>/dev/null || true; fi; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
bad() { echo "hol_peers_smoke: FAIL: $*" >&2; fail=1; }

for impl in $impls; do
    case $impl in
        tls) bin="$build/peers/tls-hol" serve=(serve) client=(client) modes="alone same" ;;
        ngtcp2) bin="$build/peers/ngtcp2" serve=(hol-serve) client=(hol-client) modes="alone same separate" ;;
        quinn) bin="$build/peers/quinn" serve=(hol-serve) client=(hol-client) modes="alone same separate" ;;
    esac
    "$bin" "${serve[@]}" >"$tmp/$impl.srv" 2>"$tmp/$impl.srv.err" &
    srv=$!
    for _ in $(seq 100); do [ -s "$tmp/$impl.srv" ] && break; sleep 0.05; done
    read -r port pin < <($py -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); print(d["port"], d.get("cert_sha256", "-"))' "$tmp/$impl.srv") \
        || { bad "$impl: no server line: $(cat "$tmp/$impl.srv.err")"; kill "$srv"; srv=""; continue; }
    addr=$port extra=()
    [ "$impl" = tls ] && addr="127.0.0.1:$port"
    [ "$pin" != "-" ] && extra=(--cert-sha256 "$pin")
    runs=$modes
    # TCP+TLS "same" three times more with the client on one core: there the bulk arrives as fast
    # as the server reads it, and a server that reads until the socket is empty neither echoes
    # nor logs the bulk's time for seconds (p50 0.1-4 s, and 0 bulk bytes in the window in 2 of
    # 6 runs, before peers/tls/hol.c bounded its reads; ~5 ms after).
    cpu1=()
    if [ "$impl" = tls ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
        runs="$modes same:1 same:2 same:3" cpu1=(taskset -c 0)
    fi
    for run in $runs; do
        mode=${run%%:*} cpu=()
        [ "$run" != "$mode" ] && cpu=("${cpu1[@]}")
        out="$tmp/$impl.$run.json"
        if ! timeout 40 "${cpu[@]}" "$bin" "${client[@]}" "$addr" "${extra[@]}" --mode "$mode" --duration 1 \
                --warmup 0.3 --rate 1000 >"$out" 2>"$tmp/$impl.$mode.err"; then
            bad "$impl $run: client exit non-zero: $(tail -3 "$tmp/$impl.$mode.err")"
            continue
        fi
        if ! msg=$($py - "$out" "$mode" "$impl" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
mode, impl = sys.argv[2], sys.argv[3]
errs = []
if impl == "tls" and mode == "same" and not r["p50_us"] < 250000:
    errs.append(f"p50 {r['p50_us'] / 1000:.0f} ms on loopback (the server stopped echoing while it read?)")
if r.get("mode") != mode: errs.append(f"mode {r.get('mode')!r}")
if not 980 <= r["requests"] <= 1020: errs.append(f"requests {r['requests']} (1000/s for 1 s: paced?)")
if r["answered"] != r["requests"]: errs.append(f"answered {r['answered']} of {r['requests']}")
if not 0 < r["p50_us"] <= r["p99_us"] <= r["p999_us"] <= r["max_us"]: errs.append("percentiles out of order")
if not r["goodput_answered"]: errs.append("no goodput answer")
if mode == "alone" and r["bulk_mbps"] != 0: errs.append(f"bulk {r['bulk_mbps']} Mbit/s alone")
if mode != "alone" and not r["bulk_mbps"] > 0: errs.append(f"bulk {r['bulk_mbps']} Mbit/s")
if errs: sys.exit("; ".join(errs))
print(f"p50 {r['p50_us']:.0f} us, p99 {r['p99_us']:.0f} us, bulk {r['bulk_mbps']:.0f} Mbit/s")
EOF
        ); then
            bad "$impl $run: $msg: $(cat "$out")"
        else
            echo "hol_peers_smoke: $impl $run${cpu:+ (client on core 0)} ok: $msg"
        fi
    done
    rc=0; "$bin" "${client[@]}" "$addr" "${extra[@]}" --mode both --duration 1 >/dev/null 2>&1 || rc=$?
    [ $rc -eq 2 ] || bad "$impl: --mode both: exit $rc, expected 2"
    if [ "$impl" = tls ]; then
        rc=0; "$bin" client "$addr" "${extra[@]}" --mode separate --duration 1 >/dev/null 2>&1 || rc=$?
        [ $rc -eq 2 ] || bad "tls: --mode separate: exit $rc, expected 2 (TCP has one stream)"
    fi
    kill -TERM "$srv"; wait "$srv" || true; srv=""
    grep -q "bulk bytes" "$tmp/$impl.srv.err" || bad "$impl: the server reported no connection: $(cat "$tmp/$impl.srv.err")"
done

# Through udpfwd with loss, by the runner's own code (bench/hol_peers.py).
if [ "$(id -u)" = 0 ] && [ -x "$build/udpfwd" ]; then
    cells=""
    case " $impls " in *" ngtcp2 "*) cells="ngtcp2:separate" ;; esac
    case " $impls " in *" tls "*) cells="$cells tls:same" ;; esac
    for cell in $cells; do
        if out=$($py "$root/bench/hol_peers.py" --build-dir "$build" --only "${cell%%:*}" --modes "${cell##*:}" \
                --losses 0.01 --duration 1 --warmup 0.3 --path "--delay 1" 2>&1); then
            echo "hol_peers_smoke: ${cell%%:*} ${cell##*:} at 1% loss through udpfwd ok: ${out:0:110}"
        else
            bad "${cell%%:*} ${cell##*:} through udpfwd: $out"
        fi
    done
else
    echo "hol_peers_smoke: note: not root or no $build/udpfwd: the cells through udpfwd are skipped"
fi
[ $fail -eq 0 ] || exit 1
echo "hol_peers_smoke: 1 passed, 0 failed"
