#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Adds an SPDX-License-Identifier line to every source file of Pure's own that lacks one: the
# first line of C files, the line after the shebang of scripts. Idempotent; run it after adding
# files (scripts/spdx.sh --check exits 1 and lists the files that lack one, changing nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
check=0; [ "${1:-}" = --check ] && check=1
tag="SPDX-License-Identifier: MIT"
missing=0
while IFS= read -r f; do
    head -3 "$f" | grep -q "SPDX-License-Identifier" && continue
    missing=1
    if [ "$check" -eq 1 ]; then echo "$f"; continue; fi
    case "$f" in
    *.c|*.h) sed -i "1i /* $tag */" "$f" ;;
    *)  if head -1 "$f" | grep -q '^#!'; then sed -i "1a # $tag" "$f"; else sed -i "1i # $tag" "$f"; fi ;;
    esac
done < <(git ls-files -co --exclude-standard -- 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 'tests/*.sh' \
    'tools/*.c' 'fuzz/*.c' 'examples/*.c' 'scripts/*.sh' 'bench/*.py' 'bench/*.c' 'peers/*.c' CMakeLists.txt)
[ "$check" -eq 1 ] && exit "$missing"
exit 0
