#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's first command, small: scripts/drain_demo.sh over this build directory must count
# every message on the server and report both sides' CPU per message as more than zero (the
# server's CPU is the sum over its threads: with one loop per core on threads of its own, the
# main thread alone showed 0.000).
set -euo pipefail
build=$(cd "${1:?usage: drain_demo.sh BUILD_DIR}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(PURE_BUILD_DIR="$build" bash "$root/scripts/drain_demo.sh" 20000 1024 2>&1)
echo "$out"
echo "$out" | grep -q "server counted 20000 of 20000 messages" || { echo "FAIL: the server did not count 20000"; exit 1; }
cpu=$(echo "$out" | sed -n 's/^CPU per message: client \([0-9.]*\) us, server \([0-9.]*\) us.*/\1 \2/p')
[ -n "$cpu" ] || { echo "FAIL: no CPU per message line"; exit 1; }
read -r c s <<<"$cpu"
awk -v c="$c" -v s="$s" 'BEGIN { exit !(c > 0 && s > 0) }' || { echo "FAIL: CPU per message client $c, server $s: both must be > 0"; exit 1; }
echo "drain_demo: ok (client $c us, server $s us per message)"
