#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks Pure's Noise IK against dissononce (an independent Noise implementation) and the
# cacophony test vector. Usage: noise_interop.sh BUILD_DIR. Exits non-zero on any mismatch.
set -euo pipefail
build=$(cd "${1:?usage: noise_interop.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ ! -x "$build/noise_vector" ]; then
  echo "noise_interop: $build/noise_vector is missing (build the tools first)" >&2
  exit 1
fi
# Debian's python3-dissononce is only visible to the system interpreter.
if ! /usr/bin/python3 -c 'import dissononce' 2>/dev/null; then
  echo "noise_interop: python3-dissononce is not installed (scripts/deps.sh installs it)" >&2
  exit 1
fi
exec /usr/bin/python3 "$here/../interop/noise_interop.py" "$build"
