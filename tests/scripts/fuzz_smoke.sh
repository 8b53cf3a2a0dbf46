#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fuzz_smoke.sh: builds the libFuzzer targets (fuzz/*_fuzz.c) with clang in their own build
# directory and runs each one for a bounded time over its seed corpus (fuzz/corpus/<target>/).
# Fails if any target crashes, leaks, times out or breaks one of its checks.
#
# Usage: tests/scripts/fuzz_smoke.sh [build-dir]   (the argument, given by ctest, is ignored:
# the fuzz build needs clang and its own flags).
# Environment:
#   PURE_FUZZ_BUILD   build directory (default: <repo>/build-fuzz)
#   FUZZ_RUNS         runs per target (default 20000)
#   FUZZ_SECONDS      time cap per target in seconds (default 25)
# Whole run: about 1.5 minutes on 2 cores once built (the whole-context targets, packet_fuzz,
# recv_fuzz and link_fuzz, run into the time cap; the parsers finish their runs in seconds).
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${PURE_FUZZ_BUILD:-$root/build-fuzz}
runs=${FUZZ_RUNS:-20000}
seconds=${FUZZ_SECONDS:-25}

fail() {
    echo "fuzz_smoke: $*" >&2
    exit 1
}

# ---- the toolchain: clang with libFuzzer, ASan and UBSan ----
command -v clang >/dev/null 2>&1 ||
    fail "clang not found (scripts/deps.sh installs clang and libclang-rt-14-dev)"
command -v cmake >/dev/null 2>&1 || fail "cmake not found"
probe=$(mktemp -d "${TMPDIR:-/tmp}/pure-fuzz-probe.XXXXXX") || fail "mktemp failed"
trap 'rm -rf "$probe"' EXIT
cat >"$probe/p.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }
EOF
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
    cat "$probe/err" >&2
    fail "clang cannot link a libFuzzer program: libFuzzer or the sanitizer runtimes are missing" \
        "(Debian: apt-get install libclang-rt-14-dev; scripts/deps.sh installs it)"
fi

# ---- build (serialised: ctest runs of several build directories share this one) ----
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$build/CMakeCache.txt"; then
    generator=()
fi
mkdir -p "$build" || fail "cannot create $build"
exec 9>"$build/.fuzz_smoke.lock"
flock 9 2>/dev/null || true

targets=()
for src in "$root"/fuzz/*_fuzz.c; do
    [ -e "$src" ] || continue
    targets+=("$(basename "$src" .c)")
done
[ ${#targets[@]} -gt 0 ] || fail "no fuzz/*_fuzz.c targets"

# The library itself must carry the coverage instrumentation (fuzzer-no-link), or libFuzzer sees
# only the harness; CMakeLists adds -fsanitize=fuzzer to the fuzz executables alone.
if ! CC=clang cmake -S "$root" -B "$build" "${generator[@]}" -DPURE_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
    >"$build/fuzz_smoke_configure.log" 2>&1; then
    cat "$build/fuzz_smoke_configure.log" >&2
    fail "cmake configure failed"
fi
if ! cmake --build "$build" --target "${targets[@]}" >"$build/fuzz_smoke_build.log" 2>&1; then
    tail -40 "$build/fuzz_smoke_build.log" >&2
    fail "building the fuzz targets failed"
fi

# ---- run ----
# UBSan must stop the run, not just print (belt and braces with -fno-sanitize-recover).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
for t in "${targets[@]}"; do
    bin="$build/$t"
    name=${t%_fuzz}
    seeds="$root/fuzz/corpus/$name"
    work="$probe/$name"
    mkdir -p "$work/corpus" "$work/artifacts"
    args=(-runs="$runs" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
          -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus")
    [ -d "$seeds" ] && args+=("$seeds") || echo "fuzz_smoke: $t has no seed corpus ($seeds)"
    start=$(date +%s)
    if "$bin" "${args[@]}" >"$work/log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
        echo "fuzz_smoke: $t ok (${execs:-?} runs, $(( $(date +%s) - start )) s)"
    else
        status=1
        echo "fuzz_smoke: $t FAILED; log tail:" >&2
        tail -40 "$work/log" >&2
        for a in "$work"/artifacts/*; do
            [ -e "$a" ] || continue
            keep="$build/$(basename "$a")-$t"
            cp "$a" "$keep"
            echo "fuzz_smoke: reproducer saved as $keep (run: $bin $keep)" >&2
        done
    fi
done
exit $status
