#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# deb_test.sh BUILD_DIR: the Debian packages as a Debian user meets them. Copies the source tree
# (git's files, committed or not; dpkg-buildpackage writes ../*.deb, so never in the repository)
# to a temporary directory, builds the binary packages with `dpkg-buildpackage -us -uc -b`, runs
# lintian on them (errors and warnings fail), lists each package, then installs libpure0,
# libpure-dev and pure-tools, builds a program against them with pkg-config only, runs it and
# `pure --version`, and removes the packages again. As root with none of the three installed
# before, the packages are installed for real with dpkg -i and purged at the end; otherwise they
# are unpacked with dpkg -x into a temporary root and used from there. BUILD_DIR is unused.
# Needs dpkg-dev, debhelper and lintian (scripts/deps.sh installs them) and the Build-Depends.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
say() { echo "deb_test: $*"; }
fail=0
bad() { echo "deb_test: FAIL $*" >&2; fail=1; }

missing=()
for tool in dpkg-buildpackage:dpkg-dev dh:debhelper lintian:lintian; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deb_test: FAIL missing ${missing[*]}: run scripts/deps.sh" \
         "(or apt-get install --no-install-recommends ${missing[*]})" >&2
    exit 1
fi

tmp=$(mktemp -d)
installed=()
cleanup() {
    if [ ${#installed[@]} -gt 0 ]; then
        dpkg --purge "${installed[@]}" >"$tmp/purge.log" 2>&1 ||
            { echo "deb_test: FAIL dpkg --purge ${installed[*]}" >&2; cat "$tmp/purge.log" >&2; }
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP # so the packages are purged if ctest times the test out
start=$SECONDS

# The source: git's tracked and untracked-but-not-ignored files as they are on disk (works in a
# fresh clone and with uncommitted changes); without git, the tree less build directories.
version=$(cd "$src" && dpkg-parsechangelog -SVersion)
tree=$tmp/pure-$version
mkdir -p "$tree"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$src" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
        xargs -0 cp --parents -t "$tree")
else
    tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$tree" -xf -
fi

say "dpkg-buildpackage -us -uc -b (pure $version)"
(cd "$tree" && DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-"parallel=2 nocheck"} \
    dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1 ||
    { tail -40 "$tmp/build.log" >&2; echo "deb_test: FAIL dpkg-buildpackage (log above)" >&2; exit 1; }
grep -i 'warning:' "$tmp/build.log" | grep -v '^CMake Warning' | sed 's/^/deb_test: build /' || true
changes=$tmp/pure_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).changes
[ -f "$changes" ] || { echo "deb_test: FAIL no $changes" >&2; exit 1; }

say "lintian --fail-on error,warning"
lintian --fail-on error,warning --display-info "$changes" >"$tmp/lintian.log" 2>&1 || lintian_rc=$?
grep -v 'running with root privileges' "$tmp/lintian.log" | sed 's/^/  /' || true
[ "${lintian_rc:-0}" -eq 0 ] && say "ok lintian clean (no errors or warnings)" ||
    bad "lintian reports errors or warnings (exit ${lintian_rc:-0})"

pkgs=(libpure0 libpure-dev pure-tools)
debs=()
for p in "${pkgs[@]}"; do
    deb=$(ls "$tmp/${p}_${version}_"*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || { bad "no $p package built"; continue; }
    debs+=("$deb")
    dpkg -c "$deb" >"$tmp/$p.contents"
    echo "deb_test: dpkg -c $(basename "$deb"):"
    awk '{print "  " $1, $6, $7, $8}' "$tmp/$p.contents"
done
[ ${#debs[@]} -eq 3 ] || exit 1
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
want() { # want PACKAGE PATH...: each path is in the package
    local p=$1; shift
    for f in "$@"; do grep -q " \./${f#/}\( ->.*\)\?$" "$tmp/$p.contents" || bad "$p lacks $f"; done
}
want libpure0 "/usr/lib/$ma/libpure.so.0" "/usr/lib/$ma/libpure.so.$version" /usr/share/doc/libpure0/copyright
want libpure-dev /usr/include/pure.h /usr/include/pure_loop.h "/usr/lib/$ma/libpure.so" \
    "/usr/lib/$ma/libpure.a" "/usr/lib/$ma/pkgconfig/pure.pc"
want pure-tools /usr/bin/pure /usr/share/man/man1/pure.1.gz
grep -q '\.so -> ' "$tmp/libpure0.contents" && bad "libpure0 ships the libpure.so development symlink"

# Install: for real when we may and nothing of ours is there; else unpack into a temporary root.
ours=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${pkgs[@]}" 2>/dev/null | grep -c '^.i' || true)
if [ "$(id -u)" -eq 0 ] && [ "$ours" -eq 0 ]; then
    say "dpkg -i ${pkgs[*]}"
    installed=("${pkgs[@]}") # purged on exit, even after a partial install
    dpkg -i "${debs[@]}" >"$tmp/install.log" 2>&1 ||
        { cat "$tmp/install.log" >&2; echo "deb_test: FAIL dpkg -i" >&2; exit 1; }
    root=""
    pc=(pkg-config)
    run=(env)
else
    say "not root, or a Pure package is installed already: unpacking into a temporary root instead"
    root=$tmp/root
    for deb in "${debs[@]}"; do dpkg -x "$deb" "$root"; done
    pc=(env PKG_CONFIG_PATH="$root/usr/lib/$ma/pkgconfig" pkg-config --define-variable=prefix="$root/usr")
    run=(env LD_LIBRARY_PATH="$root/usr/lib/$ma")
fi

out=$("${run[@]}" "$root/usr/bin/pure" --version 2>&1) || true
[ "$out" = "pure $version" ] && say "ok pure --version: $out" || bad "pure --version: '$out', not 'pure $version'"
[ -z "$root" ] && { [ "$(command -v pure)" = /usr/bin/pure ] || bad "pure is not /usr/bin/pure on PATH"; }
[ -z "$root" ] && { pure --help >/dev/null 2>&1 || bad "pure --help"; }

cat >"$tmp/prog.c" <<'C'
#include <pure.h>
#include <pure_loop.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    if (strcmp(pure_version(), PURE_VERSION_STRING) != 0) {
        fprintf(stderr, "header %s, library %s\n", PURE_VERSION_STRING, pure_version());
        return 1;
    }
    pure_settings s;
    pure_ctx *ctx;
    pure_loop *loop;
    pure_settings_default(&s);
    s.allow_any = 1;
    pure_keygen(s.private_key);
    if (pure_ctx_new(&s, &ctx) || pure_loop_new(ctx, "127.0.0.1:0", &loop))
        return 1;
    int ok = pure_loop_port(loop) != 0;
    pure_loop_free(loop);
    pure_ctx_free(ctx);
    printf("%s %s\n", ok ? "ok" : "no port", pure_version());
    return !ok;
}
C
cflags=$("${pc[@]}" --cflags pure)
libs=$("${pc[@]}" --libs pure)
say "pkg-config --cflags --libs pure: $cflags $libs"
grep -q rpath <<<"$libs" && bad "the packaged pure.pc (prefix /usr) gives an rpath: $libs"
if cc -Wall -Werror -o "$tmp/prog" "$tmp/prog.c" $cflags $libs; then
    out=$("${run[@]}" "$tmp/prog" 2>&1) || true
    [ "$out" = "ok $version" ] && say "ok program built with pkg-config against the packages: $out" ||
        bad "program against the packages printed '$out'"
    # ldd's output held first: with pipefail, grep -q quitting early could fail ldd on SIGPIPE
    deps=$(ldd "$tmp/prog")
    [ -z "$root" ] && { grep -Eq "libpure\.so\.0 => (/usr)?/lib/$ma/libpure\.so\.0" <<<"$deps" ||
        bad "the program does not load the packaged libpure.so.0: $(grep pure <<<"$deps")"; }
else
    bad "a program does not build with pkg-config --cflags --libs pure against the packages"
fi
# libpure.a as README.md says: -Wl,-Bstatic in front of pkg-config --static --libs pure (its
# libraries are the ones the -dev package depends on, linked shared)
if cc -Wall -Werror -o "$tmp/prog_static" "$tmp/prog.c" $cflags -Wl,-Bstatic $("${pc[@]}" --static --libs pure); then
    out=$("$tmp/prog_static" 2>&1) || true
    [ "$out" = "ok $version" ] && say "ok program linked with libpure.a: $out" || bad "static program printed '$out'"
    grep -q libpure <<<"$(ldd "$tmp/prog_static")" && bad "the libpure.a program loads a shared libpure"
else
    bad "a program does not link the packaged libpure.a"
fi

if [ ${#installed[@]} -gt 0 ]; then
    dpkg --purge "${installed[@]}" >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log" >&2; bad "dpkg --purge"; }
    installed=()
    [ -e "/usr/lib/$ma/libpure.so.0" ] || [ -e /usr/bin/pure ] || [ -e /usr/include/pure.h ] &&
        bad "files left after dpkg --purge"
    say "removed ${pkgs[*]} again"
fi
say "took $((SECONDS - start)) s"
[ "$fail" -eq 0 ] && say "ok" || exit 1
