#!/usr/bin/env bash
# bench/run_bench.sh BUILD_DIR [CALLS] [STEPS] - the shim's overhead on the
# CPU simulator: runs bench_overhead (built in BUILD_DIR) without the shim,
# with it but without communication timing (A2ACHECK_PERF_MEASURE=0), and
# with everything on, each REPEAT times (default 3, median), with the
# simulator's cost model on for the step time (2 ms per operation, 1 GB/s).
# Prints a table: per-call host cost and step time, and their ratios to the
# plain run. See docs/performance.md, "Overhead".
set -u
build=${1:?usage: run_bench.sh BUILD_DIR [CALLS] [STEPS]}
calls=${2:-20000}
steps=${3:-50}
repeat=${REPEAT:-3}
prog="$build/bench/bench_overhead"
shim="$build/lib/liba2acheck.so"
lib="$build/sim/lib"
[ -x "$prog" ] && [ -e "$shim" ] || { echo "build bench_overhead and a2acheck in $build first" >&2; exit 2; }
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
run() { # label, extra env...: part 1 without the cost model, part 2 with it
  local label=$1; shift
  for _ in $(seq "$repeat"); do
    a=$(env LD_LIBRARY_PATH="$lib" NCCL_SOCKET_IFNAME=lo A2ACHECK_LOG_DIR="$logs" \
          A2ACHECK_LOG_STDERR=none "$@" timeout 600 "$prog" "$calls" 0)
    b=$(env LD_LIBRARY_PATH="$lib" A2ASIM_LAUNCH_US=2000 A2ASIM_BW_GBPS=1 NCCL_SOCKET_IFNAME=lo \
          A2ACHECK_LOG_DIR="$logs" A2ACHECK_LOG_STDERR=none "$@" timeout 600 "$prog" 0 "$steps")
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.update(json.loads(sys.argv[2])); print(sys.argv[3], json.dumps(d))' "$a" "$b" "$label"
  done
}
{
  run plain
  run shim-count-only LD_PRELOAD="$shim" A2ACHECK_PERF_MEASURE=0
  run shim-measure LD_PRELOAD="$shim" A2ACHECK_PERF_MEASURE=1
} | python3 -c '
import json, statistics, sys
rows = {}
for line in sys.stdin:
    label, js = line.split(" ", 1)
    rows.setdefault(label, []).append(json.loads(js))
keys = [k for k in rows["plain"][0] if k.endswith("_ns")] + ["step_ms"]
med = {l: {k: statistics.median(r[k] for r in rs) for k in keys} for l, rs in rows.items()}
print("%-22s" % "median of %d" % len(rows["plain"]) + "".join("%22s" % k for k in keys))
for l in med:
    print("%-22s" % l + "".join("%22.2f" % med[l][k] for k in keys))
for l in med:
    if l != "plain":
        print("%-22s" % (l + " / plain") + "".join("%22.3f" % (med[l][k] / med["plain"][k]) for k in keys))
'
