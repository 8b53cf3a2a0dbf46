#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every source file of Pure's own carries its SPDX-License-Identifier line (scripts/spdx.sh adds
# missing ones; this fails and lists them). Usage: tests/scripts/spdx_check.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! out=$(bash scripts/spdx.sh --check); then
    echo "spdx_check: FAIL: these files lack an SPDX line (run bash scripts/spdx.sh):" >&2
    echo "$out" >&2
    exit 1
fi
echo "spdx_check: ok"
