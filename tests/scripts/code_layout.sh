#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The core's layout holds: src/lib's include graph is layered with no cycle
# (scripts/include_graph.sh), and no file there is over 600 lines or function over 80
# (scripts/code_shape.sh). Usage: tests/scripts/code_layout.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
status=0
bash scripts/include_graph.sh --quiet || status=1
bash scripts/code_shape.sh || status=1
[ "$status" -eq 0 ] && echo "code_layout: ok" || echo "code_layout: FAIL (above)" >&2
exit "$status"
