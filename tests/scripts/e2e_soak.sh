#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end soak over real sockets (issue #10): build/soak opens many links at once and checks
# every echo byte for byte and by hash (tools/soak.c); one run with the keys changing every 512
# packets. Checks, each printing one line:
#  (a) 50 links x seeded random sizes up to 1 MiB (with 0, 1, max, and max+1 refused) both
#      ways, against `soak serve` and against `pure serve --services echo`; then the count
#      service, and links closed or aborted (pure_link_abort) early at random moments;
#  (b) 250 links with small messages;
#  (c) the server killed (SIGKILL) mid-run: every link must close with an error within the
#      idle timeout (3 s here), no hang, no crash; then a restarted server serves a clean run;
#  (d) SIGINT to `pure serve` and to `soak serve` while 20 links send: exit 0, no signal
#      (139), no sanitizer report, and soak serve saw no callback after on_closed.
# Sizes are smaller under ASan+UBSan (a build dir configured with PURE_SANITIZE=ON).
# PURE_SOAK_SEED changes the seed. Usage: tests/scripts/e2e_soak.sh BUILD_DIR
set -uo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
bdir="$(cd "$1" && pwd)"
pure="$bdir/pure" soak="$bdir/soak"
[ -x "$pure" ] && [ -x "$soak" ] || { echo "e2e_soak: $pure or $soak not built" >&2; exit 1; }
seed=${PURE_SOAK_SEED:-$(date +%s)}
if grep -q '^PURE_SANITIZE:BOOL=ON' "$bdir/CMakeCache.txt" 2>/dev/null || [[ "$bdir" == *asan* ]]; then
    asan=1; big_msgs=6; small_links=200; small_msgs=20
else
    asan=0; big_msgs=8; small_links=250; small_msgs=40
fi
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
echo "e2e_soak: seed $seed (PURE_SOAK_SEED), sanitizer build: $asan"

jget() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" "$2" | tail -1; }
now() { date +%s%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }
sanitizer_report() { grep -lE 'AddressSanitizer|LeakSanitizer|runtime error:' "$@" 2>/dev/null | head -1; }

# start_server NAME CMD...: starts a server printing {"port", "public_key"}; sets port, key, spid
start_server() {
    local name=$1
    shift
    "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    spid=$!
    pids+=("$spid")
    for _ in $(seq 200); do [ -s "$tmp/$name.out" ] && break; kill -0 "$spid" 2>/dev/null || break; sleep 0.05; done
    port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/$name.out")
    key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/$name.out")
    [ -n "$port" ] && [ -n "$key" ] || { echo "e2e_soak: FAIL $name did not start: $(cat "$tmp/$name.err")" >&2; exit 1; }
}

# run NAME EXPECT_RC ARGS...: soak run against $port/$key; prints the figures
run() {
    local name=$1 want=$2 rc=0 t0
    shift 2
    t0=$(now)
    timeout 120 "$soak" run "$port" "$key" "$@" >"$tmp/$name.json" 2>"$tmp/$name.err" || rc=$?
    local s
    s=$(secs_since "$t0")
    local line="links $(jget links "$tmp/$name.json") ok $(jget links_ok "$tmp/$name.json"),"
    line+=" messages $(jget messages_sent "$tmp/$name.json")/$(jget messages_received "$tmp/$name.json"),"
    line+=" bytes $(jget bytes_sent "$tmp/$name.json")/$(jget bytes_received "$tmp/$name.json"),"
    line+=" $(jget seconds "$tmp/$name.json") s, eagain $(jget eagain "$tmp/$name.json"), failures $(jget failures "$tmp/$name.json")"
    if [ "$rc" -ne "$want" ] || [ -n "$(sanitizer_report "$tmp/$name.err")" ]; then
        echo "e2e_soak: FAIL $name: exit $rc (want $want) after $s s: $line" >&2
        head -5 "$tmp/$name.err" | sed 's/^/    /' >&2
        fail=1
        return 1
    fi
    echo "e2e_soak: ok $name: $line"
}

# stop_server NAME: SIGINT, then it must exit 0 within 10 s without a sanitizer report
stop_server() {
    local name=$1 rc=0
    kill -INT "$spid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$spid" 2>/dev/null && { kill -9 "$spid"; echo "e2e_soak: FAIL $name did not exit within 10 s of SIGINT" >&2; fail=1; }
    wait "$spid" || rc=$?
    if [ "$rc" -ne 0 ] || [ -n "$(sanitizer_report "$tmp/$name.err")" ]; then
        echo "e2e_soak: FAIL $name exited $rc on SIGINT: $(grep -m3 -E 'ERROR|runtime error|after on_closed' "$tmp/$name.err")" >&2
        fail=1
        return 1
    fi
    echo "e2e_soak: ok $name exited 0 on SIGINT $(tail -1 "$tmp/$name.out" | grep -v public_key)"
}

big=(--links 50 --messages "$big_msgs" --max-size 1048576 --idle-timeout 10)

# (a) large random sizes both ways
start_server soak_serve "$soak" serve
run "a: 50 links to soak serve (echo)" 0 "${big[@]}" --seed "$seed"
run "a: 50 links to soak serve (count)" 0 "${big[@]}" --seed "$((seed + 1))" --service count
run "a: 50 links closed or aborted early at random" 0 "${big[@]}" --seed "$((seed + 2))" --loss-close 0.05 --abort 0.05
# (b) many links, small messages
run "b: $small_links links, small messages" 0 --links "$small_links" --messages "$small_msgs" --max-size 2048 --seed "$((seed + 3))"
stop_server soak_serve

# (a) again with keys that change every 512 packets on both sides (through GSO bursts and GRO
# batches that straddle a switch), early closes and aborts too: every link must have rekeyed
start_server soak_rekey "$soak" serve --rekey-packets 512
if run "a: 50 links, keys changed every 512 packets" 0 "${big[@]}" --seed "$((seed + 9))" \
    --loss-close 0.05 --abort 0.05 --rekey-packets 512; then
    rk=$(jget rekeys "$tmp/a: 50 links, keys changed every 512 packets.json")
    if [ "${rk:-0}" -lt 50 ]; then
        echo "e2e_soak: FAIL a: rekeys: only ${rk:-0} key changes on 50 links" >&2
        fail=1
    else
        echo "e2e_soak: ok a: $rk key changes on the client's side"
    fi
fi
stop_server soak_rekey

start_server pure_serve "$pure" serve --ephemeral --listen 127.0.0.1:0 --services echo
run "a: 50 links to pure serve (echo)" 0 "${big[@]}" --seed "$((seed + 4))"
run "b: $small_links links to pure serve (echo)" 0 --links "$small_links" --messages "$small_msgs" --max-size 2048 --seed "$((seed + 5))"
stop_server pure_serve

# (c) the server dies mid-run: every link must fail within the idle timeout, not hang
start_server soak_kill "$soak" serve
"$soak" run "$port" "$key" --links 20 --duration 30 --max-size 65536 --idle-timeout 3 \
    --seed "$((seed + 6))" >"$tmp/kill.json" 2>"$tmp/kill.err" &
cpid=$!
pids+=("$cpid")
sleep 1.5
kill -9 "$spid"; wait "$spid" 2>/dev/null
t_kill=$(now)
for _ in $(seq 150); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
took=$(secs_since "$t_kill")
rc=0
if kill -0 "$cpid" 2>/dev/null; then
    kill -9 "$cpid"; wait "$cpid"; rc=hang
else
    wait "$cpid" || rc=$?
fi
errs=$(jget link_errors "$tmp/kill.json") unclosed=$(jget unclosed "$tmp/kill.json")
if [ "$rc" != 1 ] || [ "$errs" != 20 ] || [ "$unclosed" != 0 ] || [ -n "$(sanitizer_report "$tmp/kill.err")" ]; then
    echo "e2e_soak: FAIL c: server killed: client exit $rc after $took s, link errors ${errs:-?}/20, unclosed ${unclosed:-?}: $(head -3 "$tmp/kill.err")" >&2
    fail=1
else
    echo "e2e_soak: ok c: server killed: all 20 links closed with an error $took s after SIGKILL (idle timeout 3 s; timed out $(jget timed_out "$tmp/kill.json"), longest silence before close $(jget max_silence_to_close "$tmp/kill.json") s), client exit 1"
    awk -v t="$took" 'BEGIN { exit !(t > 8) }' && { echo "e2e_soak: FAIL c: $took s is over 8 s" >&2; fail=1; }
fi
start_server soak_restart "$soak" serve
run "c: restarted server" 0 --links 20 --messages 20 --max-size 65536 --seed "$((seed + 7))"
stop_server soak_restart

# (d) SIGINT while 20 links send: a clean exit, and the client hears a close, not silence
for srv in pure soak; do
    if [ $srv = pure ]; then
        start_server sigint_pure "$pure" serve --ephemeral --listen 127.0.0.1:0 --services echo
    else
        start_server sigint_soak "$soak" serve
    fi
    "$soak" run "$port" "$key" --links 20 --duration 30 --max-size 262144 --idle-timeout 5 \
        --seed "$((seed + 8))" >"$tmp/int_$srv.json" 2>"$tmp/int_$srv.err" &
    cpid=$!
    pids+=("$cpid")
    sleep 1.5
    t_int=$(now)
    stop_server "sigint_$srv"
    for _ in $(seq 100); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.1; done
    rc=0
    if kill -0 "$cpid" 2>/dev/null; then kill -9 "$cpid"; wait "$cpid"; rc=hang; else wait "$cpid" || rc=$?; fi
    if [ "$rc" = hang ] || [ "$rc" -gt 1 ] || [ "$(jget unclosed "$tmp/int_$srv.json")" != 0 ] ||
        [ "$(jget late_callbacks "$tmp/int_$srv.json")" != 0 ]; then
        echo "e2e_soak: FAIL d: client of $srv serve after SIGINT: exit $rc: $(tail -1 "$tmp/int_$srv.json")" >&2
        fail=1
    else
        echo "e2e_soak: ok d: $srv serve SIGINT with 20 links sending: client done $(secs_since "$t_int") s later, links closed by the server $(jget losses "$tmp/int_$srv.json")/20 (timed out $(jget timed_out "$tmp/int_$srv.json")), messages $(jget messages_sent "$tmp/int_$srv.json")/$(jget messages_received "$tmp/int_$srv.json")"
    fi
done
exit $fail
