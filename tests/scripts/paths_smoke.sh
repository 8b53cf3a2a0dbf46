#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Smoke test of the real-paths matrix (bench/README.md "paths"): `bench/run.py paths --quick`, one
# RTT (40 ms), a 1-BDP drop-tail queue and CoDel behind udpfwd's 50 Mbit/s bottleneck, 150 x 16 KiB
# per flow alone, then two Pure flows and Pure beside each QUIC peer through one bottleneck.
# Asserts that the run exits 0 and reports, for Pure (CUBIC and NewReno) and each peer whose binary exists, a row per
# path with a goodput above 0 and at most the link's 50 Mbit/s (+5%), a loss rate and a queueing
# delay that make sense (0 <= loss <= 100, 0 <= p50 <= p95); and for each sharing row a share per
# flow above 0, an aggregate at most the link, Jain's index in (0, 1], the same from 0.5 s on (--late)
# and a second-by-second timeline; and that it wrote its
# json, md and png. Timing is not asserted: a loaded machine changes the figures, not the checks.
# Builds the ngtcp2 peer if it can (quick, as rpc_smoke does); quinn only when its binary exists
# (its first cargo build takes minutes: peers/quinn/build.sh). Exits 77 when udpfwd or pure is
# not built. About 20 s.
# Usage: tests/scripts/paths_smoke.sh BUILD_DIR
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 BUILD_DIR" >&2; exit 2; fi
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if [ ! -x "$build/udpfwd" ] || [ ! -x "$build/pure" ]; then
    echo "paths_smoke: $build/udpfwd or $build/pure not built: skipped"
    exit 77
fi
rows="pure,pure-newreno,2pure"
if "$root/peers/ngtcp2/build.sh" "$build/peers" >/dev/null 2>&1; then
    rows="$rows,ngtcp2,pure+ngtcp2"
else
    echo "paths_smoke: note: peers/ngtcp2 does not build here (libngtcp2-dev missing?): its rows skipped"
fi
if [ -x "$build/peers/quinn" ]; then
    rows="$rows,quinn,pure+quinn"
else
    echo "paths_smoke: note: $build/peers/quinn not built (peers/quinn/build.sh): its rows skipped"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
timeout 150 "$py" "$root/bench/run.py" paths --quick --no-build --build-dir "$build" --only "$rows" --out "$tmp" \
    --fair-n 1200 --late 0.5 --json >"$tmp/out.txt" 2>"$tmp/err.txt" || rc=$?
grep '^\[paths' "$tmp/out.txt" || true
"$py" - "$tmp" "$rows" "$rc" <<'EOF'
import glob, json, os, sys

tmp, rows, rc = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
failures, passed = [], []

def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    (passed if cond else failures).append(what)

out = open(os.path.join(tmp, "out.txt")).read()
check(rc == 0, "bench/run.py paths --quick exits 0 (%d)" % rc)
res = None
for line in reversed(out.splitlines()):
    if line.startswith("{"):
        res = json.loads(line)
        break
check(res is not None and res.get("experiment") == "paths", "a summary JSON line")
if res is None:
    sys.stderr.write(open(os.path.join(tmp, "err.txt")).read()[-2000:])
    print("%d passed, %d failed" % (len(passed), len(failures)))
    sys.exit(1)
summary = res["summary"]
LINK = 50.0
for impl in [r for r in rows if r != "2pure" and "+" not in r]:
    for path in ("q1bdp", "codel"):
        r = next((x for x in summary if x["kind"] == "alone" and x["impl"] == impl and x["path"] == path), None)
        ok = (r is not None and r.get("ok_runs") == 1 and 0 < r.get("mbit", 0) <= LINK * 1.05
              and 0 <= r["loss_pct"] <= 100 and 0 <= r["q50_ms"] <= r["q95_ms"])
        check(ok, "%s alone, %s: %s" % (impl, path, r and {k: r.get(k) for k in
                                                          ("mbit", "loss_pct", "q50_ms", "q95_ms", "error")}))
for group in [r for r in rows if r == "2pure" or "+" in r]:
    r = next((x for x in summary if x["kind"] == "shared" and x["impl"] == group and x["path"] == "q1bdp"), None)
    ok = (r is not None and r.get("ok_runs") == 1 and len(r.get("flow_mbit", [])) == 2
          and all(f > 0 for f in r["flow_mbit"]) and r["aggregate_mbit"] <= LINK * 1.05 and 0 < r["jain"] <= 1)
    check(ok, "%s sharing q1bdp: %s" % (group, r and {k: r.get(k) for k in ("flow_mbit", "aggregate_mbit", "jain",
                                                                             "error")}))
    # --late 0.5: each flow's share from 0.5 s after the last start, and a second-by-second timeline
    ok = (r is not None and len(r.get("late_mbit", [])) == 2 and all(f > 0 for f in r["late_mbit"])
          and 0 < r.get("late_jain", 0) <= 1 and r.get("late_s") == 0.5 and r.get("late_window_s", 0) >= 1.0)
    check(ok, "%s sharing q1bdp from 0.5 s: %s" % (group, r and {k: r.get(k) for k in ("late_mbit", "late_jain",
                                                                                     "late_window_s")}))
    files = glob.glob(os.path.join(tmp, "paths-*.json"))
    runs = [x for x in (json.load(open(files[0]))["runs"] if files else [])
            if x.get("kind") == "shared" and x.get("impl") == group]
    tl = runs[0].get("timeline", []) if runs else []
    check(len(tl) >= 1 and all(len(t) == 3 and t[0] >= 0 for t in tl),
          "%s sharing q1bdp: a timeline of [seconds, flow 1, flow 2] (%d rows)" % (group, len(tl)))
for ext in ("json", "md", "png"):
    check(len(glob.glob(os.path.join(tmp, "paths-*." + ext))) == 1, "wrote paths-*.%s" % ext)
if failures:
    sys.stderr.write(open(os.path.join(tmp, "err.txt")).read()[-2000:])
print("%d passed, %d failed" % (len(passed), len(failures)))
sys.exit(1 if failures else 0)
EOF
