#!/bin/sh
# Builds the quinn drain peer: OUTDIR/quinn, from Debian's packaged crates only
# (librust-quinn-dev and friends, a directory source at /usr/share/cargo/registry;
# see .cargo/config.toml). Target directory: OUTDIR/quinn-target, never the source tree.
# Idempotent: cargo rebuilds only what changed; the copy happens only when the binary differs.
set -eu
if [ $# -ne 1 ]; then echo "usage: $0 OUTDIR" >&2; exit 2; fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
outdir=$(cd "$1" && pwd)
out="$outdir/quinn"
target="$outdir/quinn-target"

reg=/usr/share/cargo/registry
for c in quinn-0.9 quinn-proto-0.9 quinn-udp-0.3 rustls-0.20 rustls-pemfile-1 socket2-0.4 tokio-1 ring-0.16; do
  if ! ls -d "$reg/$c".* >/dev/null 2>&1; then
    echo "quinn build: crate $c missing from $reg: apt-get install librust-quinn-dev librust-quinn-udp-dev" \
         "librust-quinn-proto-dev librust-tokio-dev librust-rustls-dev librust-rustls-pemfile-dev librust-socket2-dev" >&2
    exit 1
  fi
done

# The cargo on PATH (rustup's, e.g. /root/.cargo/bin/cargo) is preferred; Debian's
# cargo package is the fallback. Either builds Debian's 0.9-era crates.
cargo=""
for c in "$(command -v cargo 2>/dev/null || true)" "$HOME/.cargo/bin/cargo" /usr/bin/cargo; do
  if [ -n "$c" ] && [ -x "$c" ]; then cargo=$c; break; fi
done
if [ -z "$cargo" ]; then
  echo "quinn build: no cargo found: apt-get install cargo (or install rustup's toolchain)" >&2
  exit 1
fi

# cargo reads .cargo/config.toml from the working directory upwards.
cd "$here"
CARGO_TARGET_DIR="$target" nice -n 10 "$cargo" build --release --offline --quiet
bin="$target/release/quinn"
if [ ! -x "$out" ] || ! cmp -s "$bin" "$out"; then
  cp -f "$bin" "$out.tmp"
  mv -f "$out.tmp" "$out"
  echo "built $out" >&2
fi
