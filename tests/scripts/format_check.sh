#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every C source of Pure's own is formatted as .clang-format says (scripts/format.sh formats
# them; this lists the files that differ). Usage: tests/scripts/format_check.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/format.sh --check
