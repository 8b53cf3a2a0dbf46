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
    bad=()
    for f in "${files[@]}"; do
        clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done
    if [ "${#bad[@]}" -gt 0 ]; then
        printf 'format.sh: not formatted (run bash scripts/format.sh): %s\n' "${bad[@]}" >&2
        exit 1
    fi
    echo "format.sh: ${#files[@]} files formatted"
    exit 0
fi
clang-format -i "${files[@]}"
