#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs everything Pure's build, tests and benchmarks need on Debian bookworm.
# Idempotent: packages already present are skipped, so repeated runs are quick.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev
  libssl-dev
  debhelper lintian
  python3 python3-dissononce python3-matplotlib
  python3-dev python3-pip python3-setuptools python3-wheel python3-venv python3-pytest python3-pytest-asyncio python3-zmq
  libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev nettle-dev
  librust-quinn-dev librust-quinn-udp-dev librust-quinn-proto-dev librust-tokio-dev librust-rustls-dev
  librust-rustls-pemfile-dev librust-socket2-dev openssl
  libzmq3-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  iproute2 nftables strace valgrind
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Rust for the quinn peer: the image's rustup toolchain if present, else Debian's.
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends cargo rustc >/dev/null
fi
