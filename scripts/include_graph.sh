#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Prints the include graph of src/lib (who includes whom among the core's own files, one
# "file -> header" line each, headers named by their file pair: link.c and link.h are "link"),
# then the layers it implies, lowest first, and exits 1 if the graph has a cycle (it names the
# modules on it). Usage: scripts/include_graph.sh [--quiet]
set -euo pipefail
cd "$(dirname "$0")/.."
quiet=0; [ "${1:-}" = --quiet ] && quiet=1
edges=$(for f in src/lib/*.c src/lib/*.h; do
    from=$(basename "$f"); from=${from%.*}
    sed -n 's/^#include "\([a-z_0-9]*\)\.h".*/\1/p' "$f" | while read -r to; do
        [ -e "src/lib/$to.h" ] && [ "$to" != "$from" ] && echo "$from $to"
    done
done | sort -u)
[ "$quiet" -eq 1 ] || { echo "# src/lib include graph (module -> module it includes)"; echo "$edges" | sed 's/ / -> /'; }
# layers: repeatedly peel the modules that include nothing left (tsort-like, with cycle report)
/usr/bin/python3 - "$quiet" <<PY
import sys
quiet = sys.argv[1] == "1"
edges = [l.split() for l in """$edges""".strip().splitlines() if l.strip()]
nodes = sorted({a for a, b in edges} | {b for a, b in edges})
deps = {n: {b for a, b in edges if a == n} for n in nodes}
layer, done = 0, set()
while len(done) < len(nodes):
    ready = sorted(n for n in nodes if n not in done and deps[n] <= done)
    if not ready:
        left = sorted(n for n in nodes if n not in done)
        print("include_graph: CYCLE among: " + " ".join(left), file=sys.stderr)
        sys.exit(1)
    if not quiet:
        print(f"# layer {layer}: " + " ".join(ready), flush=True)
    done |= set(ready)
    layer += 1
print(f"include_graph: {len(nodes)} modules in {layer} layers, no cycle")
PY
