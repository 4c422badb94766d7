#!/bin/sh
# rt_real.sh - the application observes the same thing with and without
# liba2acheck.so, and A2ACHECK_DISABLE=1 is a pure pass-through.
#   usage: rt_real.sh <rt_real program> <liba2acheck.so> <workdir> [expect-real]
# Runs the program plain, preloaded, and preloaded with A2ACHECK_DISABLE=1;
# requires identical stdout for all three; with the real libraries
# ("expect-real") also the acceptance values (ncclGetVersion 22809,
# ncclCommInitRank -> ncclUnhandledCudaError, cudaGetDeviceCount -> 35);
# for the disabled run: no log directory and the same number of threads as
# the plain run; for the enabled run: the log files exist.
set -eu
prog=$(readlink -f "$1") shim=$(readlink -f "$2") work=$3 mode=${4:-}
rm -rf "$work"
mkdir -p "$work"
cd "$work"
export NCCL_SOCKET_IFNAME=lo
unset NCCL_DEBUG A2ACHECK_DISABLE A2ACHECK_HELP A2ACHECK_CHECKS A2ACHECK_FAIL_ON || true
fail=0

timeout 60 "$prog" >plain.out 2>plain.err || { echo "plain run failed"; cat plain.err; exit 1; }
LD_PRELOAD="$shim" A2ACHECK_LOG_DIR="$work/logs" timeout 60 "$prog" >shim.out 2>shim.err ||
  { echo "preloaded run failed"; cat shim.err; exit 1; }
LD_PRELOAD="$shim" A2ACHECK_DISABLE=1 A2ACHECK_LOG_DIR="$work/logs-disabled" \
  timeout 60 "$prog" >disabled.out 2>disabled.err ||
  { echo "disabled run failed"; cat disabled.err; exit 1; }
cat plain.out

diff -u plain.out shim.out || { echo "FAIL: output differs under the shim"; fail=1; }
diff -u plain.out disabled.out || { echo "FAIL: output differs with A2ACHECK_DISABLE=1"; fail=1; }
diff -u plain.err disabled.err ||
  { echo "FAIL: A2ACHECK_DISABLE=1 changed stderr or the thread count"; fail=1; }
[ ! -e logs-disabled ] || { echo "FAIL: A2ACHECK_DISABLE=1 created files"; fail=1; }
ls logs/a2acheck.*.log logs/a2acheck.*.jsonl >/dev/null 2>&1 ||
  { echo "FAIL: the enabled run wrote no logs"; cat shim.err; fail=1; }

if [ "$mode" = expect-real ]; then
  grep -q '^version 22809$' plain.out || { echo "FAIL: ncclGetVersion is not 22809"; fail=1; }
  grep -q '^ncclCommInitRank  *-> 1 ' plain.out ||
    { echo "FAIL: ncclCommInitRank did not return ncclUnhandledCudaError"; fail=1; }
  grep -q '^cudaGetDeviceCount  *-> 35 ' plain.out ||
    { echo "FAIL: cudaGetDeviceCount did not return 35"; fail=1; }
  grep -q '^ncclGetErrorString(1) = unhandled cuda error' plain.out ||
    { echo "FAIL: ncclGetErrorString text"; fail=1; }
fi
[ $fail -eq 0 ] && echo ok
exit $fail
