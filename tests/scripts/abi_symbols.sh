#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# abi_symbols.sh BUILD_DIR: every function the shared library exports is listed in
# debian/libpure0.symbols, and every symbol listed there is exported (a new PURE_API function
# must be added to the list, with the version that brought it: docs/abi.md). Prints the
# differences and exits 1, or says how many symbols agree.
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
src=$(cd "$(dirname "$0")/../.." && pwd)
lib=$(ls "$1"/libpure.so.*.*.* 2>/dev/null | head -1 || true)
if [ -z "$lib" ]; then echo "abi_symbols: no libpure.so.X.Y.Z in $1" >&2; exit 1; fi
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort -u)
listed=$(sed -n 's/^ \([A-Za-z_0-9]*\)@Base .*/\1/p' "$src/debian/libpure0.symbols" | sort -u)
missing=$(comm -23 <(echo "$exported") <(echo "$listed"))
stale=$(comm -13 <(echo "$exported") <(echo "$listed"))
fail=0
if [ -n "$missing" ]; then
    echo "abi_symbols: exported but not in debian/libpure0.symbols:" $missing >&2
    fail=1
fi
if [ -n "$stale" ]; then
    echo "abi_symbols: in debian/libpure0.symbols but not exported:" $stale >&2
    fail=1
fi
[ "$fail" = 0 ] && echo "abi_symbols: $(echo "$exported" | wc -l) exported functions, all listed"
exit "$fail"
