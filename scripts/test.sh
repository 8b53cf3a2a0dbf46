#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite, as CI runs it: installs dependencies, builds with gcc and warnings as
# errors, builds everything again with clang and warnings as errors (a build only, to keep CI's
# time down), runs every test (unit, simulator, interop, end-to-end, fuzz smoke, peers' quick
# drain), then rebuilds Pure's own code under AddressSanitizer + UndefinedBehaviorSanitizer and
# runs its tests again; the Python package (python/test.sh: installed into a venv under build/,
# pytest) runs after each. Exits non-zero if anything fails.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh || { echo "test.sh: installing dependencies failed" >&2; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
status=0

step() { echo; echo "== $*"; }

step "build (gcc, -Werror)"
cmake -S . -B build -G Ninja -DPURE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
    ninja -C build || { echo "test.sh: build failed" >&2; exit 1; }

step "build (clang, -Werror; not run: the gcc and sanitizer builds run the tests)"
CC=clang cmake -S . -B build-clang -G Ninja -DPURE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    >/dev/null && ninja -C build-clang || { echo "test.sh: clang build failed" >&2; status=1; }

# CI's budget is 15 minutes on 2 cores: the soak runs 10 seeds here (its scenarios take 8 s a
# seed; the other simulator tests keep 20) and a long run of 2,000,000 messages (memory is
# checked flat over its rounds all the same; `build/soak_test long` alone runs the full
# 10,000,000), and each fuzz target at most 10 s (fuzz/README.md has the long runs).
step "tests"
PURE_SOAK_SEEDS=10 PURE_SOAK_MESSAGES=2000000 FUZZ_SECONDS=10 \
    ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs" || status=1

step "python package (installed into build/pyvenv, pytest)"
bash python/test.sh || status=1

step "build under ASan + UBSan"
cmake -S . -B build-asan -G Ninja -DPURE_WERROR=ON -DPURE_SANITIZE=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && ninja -C build-asan ||
    { echo "test.sh: sanitizer build failed" >&2; exit 1; }

step "tests under ASan + UBSan"
# The peers are other projects' code (hol_peers_smoke runs only theirs; rpc_smoke runs Pure's
# rows alone, PURE_SMOKE_PEERS=0), the fuzz smoke test is sanitized already, deb_test and
# install_test build and install their own (unsanitized) packages, as the first run did, and the
# source checks (format, SPDX, layout, exported symbols) read the same files as above. The
# simulator runs fewer seeds and links here: 20 seeds (the soak 10) and 10,000 links ran above; the
# soak (a minute a seed under the sanitizers) 1 seed and a long run of 300,000 messages. paths_test
# (congestion scenarios in virtual time, deterministic: the runs above again, 68 s sanitized) is
# left out; the congestion code runs sanitized in the soak and the other scenarios.
PURE_SIM_SEEDS=3 PURE_SOAK_SEEDS=1 PURE_IDLE_LINKS=2000 PURE_SOAK_MESSAGES=300000 PURE_SMOKE_PEERS=0 \
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure --no-tests=error -j "$jobs" \
    -E '^(peers_quick|hol_peers_smoke|fuzz_smoke|deb_test|install_test|format_check|spdx_check|code_layout|abi_symbols|paths_test)$' ||
    status=1

step "python package under ASan + UBSan"
PURE_PY_SANITIZE=1 bash python/test.sh || status=1

echo
if [ "$status" -eq 0 ]; then echo "test.sh: all test runs passed"; else echo "test.sh: FAILURES above"; fi
exit "$status"
