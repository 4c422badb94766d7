#!/bin/bash
# tests/gpu/nt_families.sh SHIM NT_BIN_DIR [ROUNDS]
# Where the shim's host time goes per NCCL call on a real GPU (run on the
# GPU machine; docs/gpu-validation.md has the figures): nccl-tests -g 1 at
# 1 KiB-16 KiB, where a one-rank in-place AllReduce or AlltoAll does no
# device work, so its time is the host's. Plain, under the shim, and with
# one check family off at a time; interleaved, ROUNDS rounds (default 2).
# Prints, per configuration, the mean out-of-place and in-place us per
# iteration over the three sizes. Reported, never asserted.
set -u
[ $# -ge 2 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
S=$1 NT=$2 ROUNDS=${3:-2}
NL=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)/lib
export LD_LIBRARY_PATH=$NL:/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
LOGS=$(mktemp -d)
one() {
  local label=$1; shift; local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" A2ACHECK_LOG_DIR="$LOGS" A2ACHECK_LOG_STDERR=none timeout 60 "$NT/$1" -g 1 -b 1K -e 16K -f 4 -w 100 -n 2000 -c 0 2>&1 |
    awk -v l="$label" '$1 ~ /^[0-9]+$/ && NF >= 9 {o += $6; i += $10; n++}
      END {if (n) printf "%-12s oop %6.2f ip %6.2f\n", l, o / n, i / n; else print l, "no rows"}'
}
for p in all_reduce_perf alltoall_perf; do
  echo "== $p (mean over 1K/4K/16K, us per iteration)"
  for _ in $(seq "$ROUNDS"); do
    one plain X=1 -- "$p"
    one shim LD_PRELOAD="$S" -- "$p"
    for f in layout stream perf group size; do one "-$f" LD_PRELOAD="$S" A2ACHECK_CHECKS=all,-$f -- "$p"; done
    one measure0 LD_PRELOAD="$S" A2ACHECK_PERF_MEASURE=0 -- "$p"
    one -all LD_PRELOAD="$S" A2ACHECK_CHECKS=-all -- "$p"
  done
done
rm -rf "$LOGS"
