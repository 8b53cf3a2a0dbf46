#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Interop with the build before transport parameters and the VERSION reply (docs/protocol.md,
# "How the wire may evolve, and what stays fixed"): builds that commit's `pure` from this
# repository's history into BUILD_DIR/prev-COMMIT (once; ~10 s on 2 cores) and runs, on loopback:
#   (a) old `pure send` -> new `pure serve`: the echo works (the new responder takes an INIT
#       without parameters and answers with the 62-byte RESP the old initiator requires), and an
#       old `pure drain` of 20 MB completes;
#   (b) new `pure send` -> old `pure serve`: the old responder refuses an INIT whose payload goes
#       on after the service name with a REJECT, so the new client fails fast with exit 3
#       (PURE_EKEY), within 1 s, not at the 10 s handshake timeout: the documented limit of
#       builds made before parameters, which were never released;
#   (c) both new, as a control.
# There is no release tag with the current wire (0.1.0 speaks another INIT; 0.2.0 is not out):
# the commit is PURE_PREV_REF (default: main just before this change). Skips (77) without git,
# the commit, cmake or ninja, e.g. in a source tarball.
# Usage: tests/scripts/interop_prev.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
pure="$build/pure"
[ -x "$pure" ] || { echo "interop_prev: $pure not built" >&2; exit 1; }
ref=${PURE_PREV_REF:-f745ca7}
skip() { echo "interop_prev: SKIP: $*"; exit 77; }
command -v git >/dev/null && command -v cmake >/dev/null && command -v ninja >/dev/null ||
    skip "needs git, cmake and ninja"
commit=$(git -C "$root" rev-parse --verify -q "$ref^{commit}" 2>/dev/null) || skip "no commit $ref here"
prev="$build/prev-${commit:0:12}"
old="$prev/build/pure"
if [ ! -x "$old" ]; then
    # a private copy of the tree (git archive: the repository's worktrees and index untouched)
    rm -rf "$prev"
    mkdir -p "$prev/src"
    git -C "$root" archive "$commit" | tar -x -C "$prev/src"
    cmake -S "$prev/src" -B "$prev/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DPURE_BUILD_TESTS=OFF >"$prev/configure.log" 2>&1 ||
        { cat "$prev/configure.log" >&2; echo "interop_prev: configuring $ref failed" >&2; exit 1; }
    ninja -C "$prev/build" -j2 pure >"$prev/build.log" 2>&1 ||
        { tail -20 "$prev/build.log" >&2; echo "interop_prev: building $ref failed" >&2; exit 1; }
fi

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
printf 'one\ntwo\nthree\n' >"$tmp/in"

# serve BIN NAME: starts BIN serve on 127.0.0.1, sets port and key
serve() {
    "$1" serve --listen 127.0.0.1:0 --ephemeral --services echo,drain >"$tmp/$2.out" 2>"$tmp/$2.err" &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$tmp/$2.out" ] && break; sleep 0.05; done
    port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$tmp/$2.out")
    key=$(sed -n 's/.*"public_key": *"\([^"]*\)".*/\1/p' "$tmp/$2.out")
    [ -n "$port" ] && [ -n "$key" ] || { echo "interop_prev: $2 server did not start: $(cat "$tmp/$2.err")" >&2; exit 1; }
}

# run NAME CODE PATTERN BIN: BIN send to port/key must exit CODE within 1 s; with CODE 0 it
# must echo the input, else print PATTERN on stderr
run() {
    local name=$1 code=$2 pat=$3 bin=$4 rc=0 t0 t1 secs
    t0=$(date +%s%N)
    timeout 30 "$bin" send "127.0.0.1:$port" --peer-key "$key" <"$tmp/in" >"$tmp/o" 2>"$tmp/e" || rc=$?
    t1=$(date +%s%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    if [ "$rc" -ne "$code" ] || ! awk -v s="$secs" 'BEGIN { exit !(s < 1.0) }' ||
        { [ "$code" -eq 0 ] && ! cmp -s "$tmp/in" "$tmp/o"; } ||
        { [ "$code" -ne 0 ] && ! grep -qF -- "$pat" "$tmp/e"; }; then
        echo "interop_prev: FAIL $name: exit $rc (want $code) after $secs s: $(cat "$tmp/e")" >&2
        fail=1
    else
        echo "interop_prev: ok $name in $secs s${pat:+: $(cat "$tmp/e")}"
    fi
}

serve "$pure" new
run "(a) ${ref} client -> new server" 0 "" "$old"
# and a drain of 20 MB: the whole data path between the two builds, both directions' ACKs
if out=$(timeout 30 "$old" drain "127.0.0.1:$port" 20000 1000 --peer-key "$key" 2>"$tmp/e") &&
    grep -q '"messages": *20000' <<<"$out"; then
    echo "interop_prev: ok (a) ${ref} drain -> new server: $out"
else
    echo "interop_prev: FAIL (a) ${ref} drain -> new server: $out $(cat "$tmp/e")" >&2
    fail=1
fi
run "(c) new client -> new server" 0 "" "$pure"
serve "$old" old
run "(b) new client -> ${ref} server (its REJECT: the documented limit)" 3 "rejected the handshake" "$pure"
run "    ${ref} client -> ${ref} server" 0 "" "$old"
exit $fail
