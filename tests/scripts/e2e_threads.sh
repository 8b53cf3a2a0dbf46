#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `pure serve --threads 2` on loopback (docs/performance.md, "Every core"): ten `pure ping`
# links, each through its own udpfwd, which rebinds (a new source port towards the server, as a
# NAT would; SIGUSR2) once the server's stats show all ten links open and the pings under way. Asserts: every ping gets every echo back; every forwarder
# rebound; each link (a thread and an id in the --stats-every link lines) is seen from two
# peer ports under the same thread, still receiving after the change; while all ten links are
# open, no thread's context has dropped a packet for a link it does not hold
# (dropped_unknown_link 0 per thread) and nothing needed a hand-off (udpfwd never merges
# datagrams, so the BPF program alone steered every one); then 64 handshakes from one client
# socket spread over both threads. Usage: tests/scripts/e2e_threads.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
bdir=$(cd "$1" && pwd)
pure="$bdir/pure" fwd="$bdir/udpfwd"
for b in "$pure" "$fwd"; do [ -x "$b" ] || { echo "e2e_threads: $b not built" >&2; exit 1; }; done
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
die() { echo "e2e_threads: FAIL: $*" >&2; exit 1; }
json() { sed -n "s/.*\"$2\": *\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" "$1" | head -1; }
wait_line() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; die "no line from $2: $(cat "$1.err" 2>/dev/null)"; }

"$pure" serve --ephemeral --listen 127.0.0.1:0 --services echo --threads 2 --stats-every 0.1 \
    >"$tmp/srv" 2>"$tmp/srv.err" &
srv=$!
pids+=("$srv")
wait_line "$tmp/srv" "pure serve"
port=$(json "$tmp/srv" port) key=$(json "$tmp/srv" public_key)
[ "$(json "$tmp/srv" threads)" = 2 ] || die "the server line lacks \"threads\": 2: $(head -1 "$tmp/srv")"

LINKS=10 RT=800
for i in $(seq $LINKS); do
    "$fwd" --listen 127.0.0.1:0 --to "127.0.0.1:$port" --delay 1 \
        --stats "$tmp/fwd$i.json" >"$tmp/fwd$i" 2>"$tmp/fwd$i.err" &
    pids+=($!)
    wait_line "$tmp/fwd$i" udpfwd
done
ping_pids=()
for i in $(seq $LINKS); do
    fport=$(json "$tmp/fwd$i" port)
    timeout 30 "$pure" ping "127.0.0.1:$fport" $RT 200 --peer-key "$key" >"$tmp/ping$i" 2>"$tmp/ping$i.err" &
    ping_pids+=($!)
done
# every link open and a stats tick later (the link lines show the first peer): rebind them all
for _ in $(seq 200); do
    grep -q "\"stats\": \"total\".*\"links\": $LINKS," "$tmp/srv" && break
    sleep 0.05
done
grep -q "\"stats\": \"total\".*\"links\": $LINKS," "$tmp/srv" || die "the server never held $LINKS links at once"
sleep 0.2
for p in "${pids[@]:1}"; do kill -USR2 "$p"; done
for i in $(seq $LINKS); do
    rc=0; wait "${ping_pids[$((i - 1))]}" || rc=$?
    [ $rc -eq 0 ] || die "ping $i exited $rc: $(cat "$tmp/ping$i.err")"
    [ "$(json "$tmp/ping$i" echoes)" = $RT ] || die "ping $i: $(cat "$tmp/ping$i")"
    grep -q 'udpfwd: rebind' "$tmp/fwd$i.err" || die "forwarder $i never rebound: $(cat "$tmp/fwd$i.err")"
done
echo "e2e_threads: $LINKS pings of $RT round trips each through a rebinding forwarder: every echo back"

# 64 handshakes from one client socket: both threads take some
"$pure" bench handshakes "127.0.0.1:$port" 64 --peer-key "$key" >"$tmp/hs" 2>"$tmp/hs.err" ||
    die "bench handshakes: $(cat "$tmp/hs.err")"
sleep 0.3 # a stats tick after the last handshake
kill -TERM "$srv"
wait "$srv" || die "pure serve exited $?: $(cat "$tmp/srv.err")"

python3 - "$tmp/srv" "$LINKS" <<'PY' || die "the server's stats (above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"stats"')]
links = int(sys.argv[2])
ok = True
def fail(msg):
    global ok
    ok = False
    print("e2e_threads:", msg, file=sys.stderr)
# each link: one thread, two peer ports, receiving after the change
seen = {}
for l in lines:
    if l["stats"] == "link":
        seen.setdefault((l["thread"], l["id"]), []).append(l)
ping_links = [k for k, v in seen.items() if max(x["messages_received"] for x in v) >= 100]
if len(ping_links) != links:
    fail(f"{len(ping_links)} links received 100 messages or more, not {links}: {sorted(seen)}")
for k in ping_links:
    v = seen[k]
    peers = []
    for x in v:
        if not peers or peers[-1] != x["peer"]:
            peers.append(x["peer"])
    if len(peers) != 2:
        fail(f"link {k}: peers {peers}: expected one change (the rebinding)")
        continue
    after = [x["messages_received"] for x in v if x["peer"] == peers[1]]
    if after[-1] <= after[0]:
        fail(f"link {k}: nothing received after the rebinding ({after})")
threads = sorted({k[0] for k in ping_links})
print(f"e2e_threads: ping links per thread: " +
      ", ".join(f"{t}: {sum(1 for k in ping_links if k[0] == t)}" for t in threads))
# while all ten were open: no packet for a link a thread does not hold, no hand-off
by_t = {}
for l in lines:
    if l["stats"] == "thread":
        by_t.setdefault(l["t"], {})[l["thread"]] = l
full = [t for t, d in sorted(by_t.items())
        if len(d) == 2 and sum(x["links"] for x in d.values()) == links and
        sum(x["closed"] for x in d.values()) == 0]
if not full:
    fail("no stats tick with all links open")
else:
    d = by_t[full[-1]]
    for th, x in sorted(d.items()):
        if x["dropped_unknown_link"] or x["handed_off"] or x["handoff_dropped"] or x["dropped"]:
            fail(f"thread {th} at t={full[-1]}: {x}")
    print(f"e2e_threads: at t={full[-1]} ({links} links open) per thread: " + "; ".join(
        f"{th}: links {x['links']}, messages {x['messages_received']}, unknown-link drops "
        f"{x['dropped_unknown_link']}, hand-offs {x['handed_off']}" for th, x in sorted(d.items())))
# the handshakes spread
last = {}
for l in lines:
    if l["stats"] == "thread":
        last[l["thread"]] = l
acc = {t: x["accepted"] for t, x in sorted(last.items())}
if len(acc) != 2 or sum(acc.values()) != links + 64 or min(acc.values()) < 10:
    fail(f"accepted per thread {acc}: expected {links + 64} spread over both")
else:
    print(f"e2e_threads: links accepted per thread {acc}")
tot = [l for l in lines if l["stats"] == "total"]
if not tot or tot[-1].get("threads") != 2 or tot[-1]["accepted"] != sum(acc.values()):
    fail(f"the total line does not sum the threads: {tot[-1] if tot else None}")
sys.exit(0 if ok else 1)
PY
echo "e2e_threads: ok"
