#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the shape issue #13 set for the core: no src/lib file over 600 lines and no function
# over 80 (from its first line to its closing brace). Prints what breaks a limit and exits 1,
# else prints the largest file and function. Usage: scripts/code_shape.sh [dir] (default src/lib)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-src/lib}
/usr/bin/python3 - "$dir" <<'PY'
import glob, os, re, sys
d = sys.argv[1]
FILE_MAX, FUNC_MAX = 600, 80
bad, files, funcs = [], [], []
for f in sorted(glob.glob(os.path.join(d, "*.[ch]"))):
    lines = open(f).read().split("\n")
    n = len(lines) - (1 if lines[-1] == "" else 0)
    files.append((n, f))
    if n > FILE_MAX:
        bad.append(f"{f}: {n} lines (limit {FILE_MAX})")
    start = name = None
    for i, l in enumerate(lines):
        m = re.match(r"^[A-Za-z_][\w \*]*?\b(\w+)\(", l)
        if start is None and m and not l.rstrip().endswith(";") and not l.startswith("#"):
            if l.rstrip().endswith("}"):
                continue  # a one-line function
            start, name = i, m.group(1)
        elif start is not None and l == "}":
            length = i - start + 1
            funcs.append((length, f"{f}:{start + 1} {name}"))
            if length > FUNC_MAX:
                bad.append(f"{f}:{start + 1}: {name} is {length} lines (limit {FUNC_MAX})")
            start = None
if os.environ.get("CODE_SHAPE_TOP"):
    for n, w in sorted(funcs)[-int(os.environ["CODE_SHAPE_TOP"]):]:
        print(f"{n:4d} {w}")
for b in bad:
    print("code_shape: " + b, file=sys.stderr)
if bad:
    sys.exit(1)
print(f"code_shape: {len(files)} files, largest {max(files)[1]} ({max(files)[0]} lines); "
      f"{len(funcs)} functions, longest {max(funcs)[1]} ({max(funcs)[0]} lines)")
PY
