#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install_test.sh BUILD_DIR: Pure as a new user meets it. Configures a FRESH build directory (a
# first configure: pure.pc's paths must be right without a second run), installs it to a
# temporary prefix with `cmake --install`, checks every file a user needs is there, then builds
# a program against the installed library with pkg-config only (PKG_CONFIG_PATH to the prefix;
# no path into the source tree) and runs it as README.md's "Install" says: shared (the prefix is
# outside the linker's and the loader's default path and LD_LIBRARY_PATH is unset, so it runs
# only through the -Wl,-rpath pure.pc gives), then with libpure.a (-Wl,-Bstatic in front of
# pkg-config --static --libs pure). BUILD_DIR is unused: the point is a fresh directory.
set -euo pipefail
unset LD_LIBRARY_PATH # the programs below must find libpure.so.0 the way a user's would
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail=0
bad() { echo "install_test: FAIL $*" >&2; fail=1; }

cmake -S "$src" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPURE_BUILD_TESTS=OFF \
    -DCMAKE_INSTALL_PREFIX="$prefix" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log" >&2; exit 1; }
ninja -C "$tmp/build" -j1 >"$tmp/build.log" 2>&1 || { tail -30 "$tmp/build.log" >&2; exit 1; }
cmake --install "$tmp/build" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; exit 1; }
echo "install_test: installed files:"
(cd "$prefix" && find . -type f -o -type l | sort | sed 's/^/  /')

libdir=$(cd "$(dirname "$(find "$prefix" -name pure.pc)")/.." && pwd)
for f in include/pure.h include/pure_loop.h bin/pure share/man/man1/pure.1; do
    [ -e "$prefix/$f" ] || bad "cmake --install did not install $f"
done
for f in libpure.a libpure.so libpure.so.0; do
    [ -e "$libdir/$f" ] || bad "cmake --install did not install $f"
done

export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name pure.pc)")
pc_cflags=$(pkg-config --cflags pure)
pc_libs=$(pkg-config --libs pure)
echo "install_test: pkg-config --cflags --libs pure: $pc_cflags $pc_libs"
grep -q -- "-I$prefix/include" <<<"$pc_cflags" || bad "pure.pc Cflags do not point into the prefix: $pc_cflags"
grep -q -- "-L$prefix/lib" <<<"$pc_libs" || bad "pure.pc Libs do not point into the prefix: $pc_libs"
pkg-config --print-requires-private pure >"$tmp/req"
pc_private=$(pkg-config --static --libs pure)
echo "install_test: pkg-config --static --libs pure: $pc_private"
if grep -q "^GNUTLS_FOUND:INTERNAL=1" "$tmp/build/CMakeCache.txt"; then
    grep -q -- "-lgnutls" <<<"$pc_private" || bad "pure.pc's static libraries lack -lgnutls, which the build linked"
else
    grep -q -- "-lgnutls" <<<"$pc_private" && bad "pure.pc names -lgnutls, which the build did not link"
fi
if grep -q "^NETTLE_FOUND:INTERNAL=1" "$tmp/build/CMakeCache.txt"; then
    grep -q "^nettle" "$tmp/req" || bad "pure.pc does not require nettle, which the build linked"
else
    grep -q "^nettle" "$tmp/req" && bad "pure.pc requires nettle, which the build did not link"
fi
# only what libpure calls: not GnuTLS's private closure (no static libunistring/p11-kit here)
for lib in unistring idn2 tasn1 p11-kit; do
    grep -q -- "-l$lib\b" <<<"$pc_private" && bad "pkg-config --static --libs pure drags in -l$lib"
done
grep -q -- "-Wl,-rpath,$libdir " <<<"$pc_libs " || bad "pure.pc gives no -Wl,-rpath for a prefix outside the linker's path: $pc_libs"
# a system prefix (the Debian packages' /usr) gets no rpath: configure only, and read the file
cmake -S "$src" -B "$tmp/build-usr" -G Ninja -DPURE_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr \
    -DCMAKE_INSTALL_LIBDIR=lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu) >/dev/null 2>&1 ||
    bad "configure with the prefix /usr"
grep -q rpath "$tmp/build-usr/pure.pc" && bad "pure.pc for the prefix /usr has an rpath: $(grep ^Libs: "$tmp/build-usr/pure.pc")"

grep -qx "pure [0-9]*\.[0-9]*\.[0-9]*" <<<"$("$prefix/bin/pure" --version)" || bad "installed pure --version: $("$prefix/bin/pure" --version)"
MANPAGER=cat man -l "$prefix/share/man/man1/pure.1" >/dev/null 2>&1 ||
    { command -v man >/dev/null && bad "man -l cannot format the installed pure.1"; }

# A program outside the source tree, built from the installed files only: the version macros
# match the library, and one echo round trip between two contexts over loopback with pure_loop.
cat >"$tmp/prog.c" <<'C'
#include <pure.h>
#include <pure_loop.h>
#include <stdio.h>
#include <string.h>

static int got;
static void on_msg(pure_link *l, void *u, const uint8_t *d, size_t n)
{
    if (pure_link_user(l) == NULL) { /* the server's side: echo it */
        pure_link_send(l, d, n);
        return;
    }
    got = n == 5 && memcmp(d, "hello", 5) == 0;
    pure_loop_stop(u);
}
static int on_accept(pure_link *l, const char *svc, const uint8_t k[PURE_KEY_LEN], void *u) { return 0; }

int main(void)
{
    if (strcmp(pure_version(), PURE_VERSION_STRING) != 0) {
        fprintf(stderr, "header %s, library %s\n", PURE_VERSION_STRING, pure_version());
        return 1;
    }
    static const pure_callbacks cb = {.on_accept = on_accept, .on_message = on_msg};
    pure_settings s;
    pure_ctx *srv, *cli;
    pure_loop *ls, *lc;
    pure_settings_default(&s);
    s.callbacks = &cb;
    s.allow_any = 1;
    pure_keygen(s.private_key);
    if (pure_ctx_new(&s, &srv) || pure_ctx_add_service(srv, "echo") ||
        pure_loop_new(srv, "127.0.0.1:0", &ls))
        return 1;
    pure_keygen(s.private_key);
    if (pure_ctx_new(&s, &cli) || pure_loop_new(cli, "127.0.0.1:0", &lc))
        return 1;
    pure_addr to;
    char a[PURE_ADDR_STRLEN];
    snprintf(a, sizeof a, "127.0.0.1:%u", pure_loop_port(ls));
    pure_addr_from_string(&to, a);
    pure_link *link;
    if (pure_connect(cli, &to, pure_ctx_public_key(srv), "echo", lc, &link, pure_now()) ||
        pure_link_send(link, "hello", 5) != 0)
        return 1;
    for (int i = 0; i < 5000 && !got; i++) { /* two loops, one thread: 1 ms slices each */
        pure_loop_run(lc, 1000000);
        pure_loop_run(ls, 1000000);
    }
    pure_loop_free(lc);
    pure_loop_free(ls);
    pure_ctx_free(cli);
    pure_ctx_free(srv);
    printf("%s\n", got ? "echoed" : "no echo");
    return !got;
}
C
# README.md's two recipes, as written there
cc -Wall -Werror -o "$tmp/prog_shared" "$tmp/prog.c" $(pkg-config --cflags --libs pure) ||
    bad "a program does not build with pkg-config --cflags --libs pure"
if [ -x "$tmp/prog_shared" ]; then
    out=$("$tmp/prog_shared" 2>&1) || true
    [ "$out" = echoed ] && echo "install_test: ok shared build, run from the prefix: $out" || bad "shared build ran: '$out'"
    loads=$(ldd "$tmp/prog_shared")
    grep -q "libpure\.so\.0 => $libdir/libpure\.so\.0" <<<"$loads" ||
        bad "the shared build does not load the installed libpure.so.0: $(grep pure <<<"$loads")"
fi
cc -Wall -Werror -o "$tmp/prog_static" "$tmp/prog.c" $(pkg-config --cflags pure) -Wl,-Bstatic $(pkg-config --static --libs pure) ||
    bad "a program does not link libpure.a with -Wl,-Bstatic \$(pkg-config --static --libs pure)"
if [ -x "$tmp/prog_static" ]; then
    out=$("$tmp/prog_static" 2>&1) || true
    [ "$out" = echoed ] && echo "install_test: ok static build (libpure.a): $out" || bad "static build ran: '$out'"
    loads=$(ldd "$tmp/prog_static")
    grep -q libpure <<<"$loads" && bad "the libpure.a build loads a shared libpure: $(grep pure <<<"$loads")"
    echo "install_test: the libpure.a build loads: $(awk '{print $1}' <<<"$loads" | paste -sd' ')"
fi

# The examples, built against the prefix the same way (if the tree has them).
for ex in "$src"/examples/*.c; do
    [ -e "$ex" ] || continue
    name=$(basename "$ex" .c)
    cc -Wall -Werror -o "$tmp/$name" "$ex" $(pkg-config --cflags --libs pure) ||
        bad "examples/$name.c does not build against the installed library"
done
# and run two of them, on the installed shared library (found through pure.pc's rpath)
if [ -x "$tmp/echo_server" ] && [ -x "$tmp/echo_client" ]; then
    "$tmp/echo_server" >"$tmp/srv.out" 2>&1 &
    spid=$!
    for _ in $(seq 100); do [ -s "$tmp/srv.out" ] && break; sleep 0.05; done
    read -r port key <"$tmp/srv.out" || true
    out=$(timeout 30 "$tmp/echo_client" "127.0.0.1:${port:-0}" "${key:-x}" 500 2>&1) &&
        echo "install_test: ok examples against the install: $out" || bad "installed echo_client: $out"
    grep -q "libpure\.so\.0 => $libdir/libpure\.so\.0" <<<"$(ldd "$tmp/echo_client")" ||
        bad "echo_client does not load the installed libpure.so.0: $(ldd "$tmp/echo_client" | grep pure)"
    kill -TERM "$spid" 2>/dev/null; wait "$spid" || bad "installed echo_server exited non-zero"
fi
[ "$fail" -eq 0 ] && echo "install_test: ok" || exit 1
