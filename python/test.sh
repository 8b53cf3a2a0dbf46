#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the pure package into a venv under build/ (never the system's Python) exactly as
# python/README.md tells a user to, and runs its pytest suite there. Needs the `pure` command
# built in build/ (the interop tests run it). Exits non-zero on any failure, including
# pytest's exit 5 (no tests collected).
#   PURE_PY_SANITIZE=1  builds libpure and the extension with ASan + UBSan (build/pyvenv-asan)
#                       and runs the tests with the sanitizer runtime preloaded.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=build/pyvenv
[ "${PURE_PY_SANITIZE:-0}" = 1 ] && venv=build/pyvenv-asan
/usr/bin/python3 -m venv --system-site-packages "$venv" || exit 1
# The build directory inside python/ is per flavour, so a sanitized build never mixes with the
# plain one.
rm -rf python/build python/*.egg-info
"$venv/bin/pip" install -q --no-build-isolation --no-index ./python || { echo "python: install failed" >&2; exit 1; }
rm -rf python/build python/*.egg-info
cd python/tests # import the installed package, not the source tree
if [ "${PURE_PY_SANITIZE:-0}" = 1 ]; then
    # Python itself leaks by design at exit: leak checking off, every other check on.
    export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
    export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    export PURE_PY_MEMORY_MESSAGES=${PURE_PY_MEMORY_MESSAGES:-100000} # tracemalloc + ASan: slow
    export PURE_PY_SKIP_RSS=1 # ASan's quarantine keeps freed blocks resident; tracemalloc still checks
fi
"../../$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir=.. -c ../pyproject.toml . "$@"
rc=$?
if [ "$rc" -eq 5 ]; then echo "python: pytest collected no tests" >&2; exit 1; fi
exit "$rc"
