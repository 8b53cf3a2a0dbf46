#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end checks of what a new user meets first: `pure --version` (and that --help lists it);
# distinct key encodings (keygen prints pure-priv:... into a 0600 file, pubkey pure-pub:...; a
# public key or bare base64 given as a private key, and a private key given as --peer-key or in
# an --allow file, are refused with one line and exit 2; bare base64 still works as a
# --peer-key); a warning for a private key file others can read; exit 130 on SIGINT and 143 on
# SIGTERM for an interrupted client; and `pure serve --stats-every` printing per-link and total
# counters as JSON lines.
# Usage: tests/scripts/e2e_cli.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
pure="$(cd "$1" && pwd)/pure"
[ -x "$pure" ] || { echo "e2e_cli: $pure not built" >&2; exit 1; }
tmp=$(mktemp -d)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
bad() { echo "e2e_cli: FAIL $*" >&2; fail=1; }
ok() { echo "e2e_cli: ok $*"; }

# expect NAME CODE PATTERN LINES CMD...: exit code CODE, stderr contains PATTERN and has exactly
# LINES lines (- for any number)
expect() {
    local name=$1 code=$2 pat=$3 lines=$4 rc=0
    shift 4
    timeout 30 "$@" </dev/null >"$tmp/out" 2>"$tmp/err" || rc=$?
    local n
    n=$(wc -l <"$tmp/err")
    if [ "$rc" -ne "$code" ] || ! grep -qF -- "$pat" "$tmp/err" || { [ "$lines" != - ] && [ "$n" -ne "$lines" ]; }; then
        bad "$name: exit $rc (want $code), $n lines of stderr: $(cat "$tmp/err")"
    else
        ok "$name: $(head -1 "$tmp/err")"
    fi
}

# --version
v=$("$pure" --version)
[[ "$v" =~ ^pure\ [0-9]+\.[0-9]+\.[0-9]+$ ]] && ok "--version: $v" || bad "--version printed '$v'"
grep -q -- "--version" <<<"$("$pure" --help)" && ok "--help lists --version" || bad "--help does not list --version"

# keys
umask 022
"$pure" keygen >"$tmp/server.key"
"$pure" keygen >"$tmp/client.key"
grep -qE '^pure-priv:[A-Za-z0-9+/]{43}=$' "$tmp/server.key" && ok "keygen prints pure-priv:" || bad "keygen printed $(cat "$tmp/server.key")"
[ "$(stat -c %a "$tmp/server.key")" = 600 ] && ok "keygen made its file 0600 under umask 022" ||
    bad "keygen's file has mode $(stat -c %a "$tmp/server.key")"
"$pure" pubkey <"$tmp/server.key" >"$tmp/server.pub"
chmod 600 "$tmp/server.pub"
grep -qE '^pure-pub:[A-Za-z0-9+/]{43}=$' "$tmp/server.pub" && ok "pubkey prints pure-pub:" || bad "pubkey printed $(cat "$tmp/server.pub")"
pub=$(cat "$tmp/server.pub")
priv=$(cat "$tmp/server.key")
expect "public key as --key" 2 "holds a public key (pure-pub:...), not a private key" 1 \
    "$pure" serve --listen 127.0.0.1:0 --key "$tmp/server.pub" --allow-any
expect "public key to pubkey" 2 "stdin holds a public key" 1 sh -c "\"$pure\" pubkey <\"$tmp/server.pub\""
sed 's/^pure-priv://' "$tmp/server.key" >"$tmp/bare.key"
chmod 600 "$tmp/bare.key"
expect "bare base64 as --key" 2 "holds bare base64, which may be a public key" 1 \
    "$pure" serve --listen 127.0.0.1:0 --key "$tmp/bare.key" --allow-any
expect "private key as --peer-key" 2 "--peer-key is a private key" 1 \
    "$pure" send 127.0.0.1:9 --peer-key "$priv"
cp "$tmp/server.key" "$tmp/priv.allow"
expect "private key in --allow" 2 "line 1 is a private key" 1 \
    "$pure" serve --listen 127.0.0.1:0 --key "$tmp/server.key" --allow "$tmp/priv.allow"
cp "$tmp/client.key" "$tmp/open.key"
chmod 644 "$tmp/open.key"
expect "world-readable key warns" 1 "warning: private key file $tmp/open.key is readable by everyone (mode 0644): chmod 600" - \
    "$pure" send 127.0.0.1:9 --peer-key "$pub" --key "$tmp/open.key" --handshake-timeout 0.3
chmod 640 "$tmp/open.key"
expect "group-readable key warns" 1 "is readable by its group (mode 0640)" - \
    "$pure" send 127.0.0.1:9 --peer-key "$pub" --key "$tmp/open.key" --handshake-timeout 0.3
chmod 600 "$tmp/open.key"
expect "private key file 0600: no warning" 1 "127.0.0.1:9: connection refused" 1 \
    "$pure" send 127.0.0.1:9 --peer-key "$pub" --key "$tmp/open.key" --handshake-timeout 0.3

# a server with --stats-every; a bare-base64 public key still works as --peer-key
"$pure" serve --listen 127.0.0.1:0 --key "$tmp/server.key" --allow-any --stats-every 0.2 \
    >"$tmp/srv.out" 2>"$tmp/srv.err" &
srv=$!
for _ in $(seq 100); do grep -q public_key "$tmp/srv.out" 2>/dev/null && break; sleep 0.05; done
port=$(sed -n '1s/.*"port": *\([0-9]*\).*/\1/p' "$tmp/srv.out")
announced=$(sed -n '1s/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/srv.out")
[ "$announced" = "$pub" ] && ok "serve announces pure pubkey's text" || bad "serve announced '$announced', pubkey said '$pub'"
out=$({ printf 'a\nbb\nccc\n'; sleep 0.6; } | timeout 20 "$pure" send "127.0.0.1:$port" --peer-key "${pub#pure-pub:}" --key "$tmp/client.key") &&
    [ "$out" = "$(printf 'a\nbb\nccc')" ] && ok "bare base64 --peer-key echoes" || bad "send with a bare --peer-key: '$out'"

# interrupted clients: 130 after SIGINT, 143 after SIGTERM
mkfifo "$tmp/stdin" # stdin that stays open, so send is still running at the signal
"$pure" send "127.0.0.1:$port" --peer-key "$pub" --service sink <"$tmp/stdin" 2>"$tmp/int.err" &
cpid=$!
exec 3>"$tmp/stdin"
sleep 0.5
kill -INT "$cpid"; rc=0; wait "$cpid" || rc=$?
exec 3>&-
[ "$rc" -eq 130 ] && ok "send exits 130 on SIGINT: $(cat "$tmp/int.err")" || bad "send exited $rc on SIGINT: $(cat "$tmp/int.err")"
"$pure" drain "127.0.0.1:$port" 100000000 1000 --peer-key "$pub" 2>"$tmp/term.err" >/dev/null &
cpid=$!
sleep 0.5
kill -TERM "$cpid"; rc=0; wait "$cpid" || rc=$?
[ "$rc" -eq 143 ] && ok "drain exits 143 on SIGTERM: $(cat "$tmp/term.err")" || bad "drain exited $rc on SIGTERM: $(cat "$tmp/term.err")"

sleep 0.6
kill -INT "$srv"; rc=0; wait "$srv" || rc=$?; srv=""
[ "$rc" -eq 0 ] && ok "serve exits 0 on SIGINT" || bad "serve exited $rc on SIGINT: $(cat "$tmp/srv.err")"
# --stats-every: every line after the first is JSON; a link line saw the echo link's 3
# messages, and the last total counts 3 links accepted (echo, sink, drain) and carries the
# core's and the guard counters
python3 - "$tmp/srv.out" <<'PY' && ok "--stats-every: $(grep -c '"total"' "$tmp/srv.out") total lines, $(grep -c '"link"' "$tmp/srv.out") link lines" || bad "--stats-every output: $(head -c 2000 "$tmp/srv.out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()[1:]
recs = [json.loads(l) for l in lines]
links = [r for r in recs if r["stats"] == "link"]
totals = [r for r in recs if r["stats"] == "total"]
assert len(totals) >= 3, "fewer than 3 total lines"
assert any(r["service"] == "echo" and r["messages_received"] == 3 and r["bytes_received"] == 6 for r in links), "no echo link with 3 messages"
last = totals[-1]
assert last["accepted"] == 3 and last["messages_received"] >= 3, last
# the core's own counters and every guard counter (pure_guard_stats), as numbers
for k in ("core_links", "handshakes_accepted", "cookies_sent", "dh_ops", "inits_replayed",
          "inits_throttled", "inits_half_open_cap", "inits_bad_mac", "inits_silent",
          "inits_duplicate", "cookie_replies_bad", "rejects_bad", "failed_opens",
          "links_integrity_closed", "rx_memory", "rx_memory_peak", "rx_memory_stalls",
          "inits_other_version"):
    assert isinstance(last.get(k), int) and last[k] >= 0, (k, last)
assert last["handshakes_accepted"] >= 3, last
ts = [r["t"] for r in totals]
assert ts == sorted(ts), ts
PY
exit $fail
