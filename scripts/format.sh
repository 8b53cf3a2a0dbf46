#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Formats Pure's own C sources with clang-format (.clang-format at the top). With --check,
# changes nothing and lists the files that differ (exit 1). Third-party code and generated
# files are not ours to format. Usage: scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format.sh: clang-format is not installed" >&2; exit 2; }
mapfile -t files < <(git ls-files -- 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 'tools/*.[ch]' \
    'bench/*.[ch]' 'fuzz/*.[ch]' 'examples/*.[ch]' 'peers/*.[ch]' 'python/*.[ch]' 2>/dev/null ||
    find src include tests tools bench fuzz examples peers python -name '*.[ch]')
if [ "${1:-}" = --check ]; then
    # One clang-format for every file (one process a file took 25 s of CI's time, mostly its
    # start-up): each violation is reported as "FILE:LINE:COL: error: ...".
    rc=0
    out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1 >/dev/null) || rc=$?
    mapfile -t bad < <(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
    if [ "$rc" -ne 0 ] && [ "${#bad[@]}" -eq 0 ]; then
        printf 'format.sh: clang-format failed: %s\n' "$out" >&2
        exit 2
    fi
    if [ "${#bad[@]}" -gt 0 ]; then
        printf 'format.sh: not formatted (run bash scripts/format.sh): %s\n' "${bad[@]}" >&2
        exit 1
    fi
    echo "format.sh: ${#files[@]} files formatted"
    exit 0
fi
clang-format -i "${files[@]}"
