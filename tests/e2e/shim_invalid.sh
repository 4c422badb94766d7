#!/bin/sh
# shim_invalid.sh - invalid arguments pass through the shim unchanged.
#   usage: shim_invalid.sh <shim_invalid> <liba2acheck.so> <workdir>
# Runs the program plain, then with liba2acheck.so preloaded (all checks on,
# findings never change the exit status), and requires: the same exit
# status, identical stdout (every result code, errno and peeked CUDA error),
# and that the shim was really analyzing (its JSONL log holds the
# group.unbalanced finding of the unmatched ncclGroupEnd).
set -eu
prog=$(readlink -f "$1") shim=$(readlink -f "$2") work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work"
export NCCL_SOCKET_IFNAME=lo
unset NCCL_DEBUG A2ACHECK_DISABLE A2ACHECK_CHECKS A2ACHECK_FAIL_ON || true

set +e
timeout 60 "$prog" >plain.out 2>plain.err
plain=$?
LD_PRELOAD="$shim" A2ACHECK_LOG_DIR="$work/logs" A2ACHECK_FAIL_ON=never \
  timeout 60 "$prog" >shim.out 2>shim.err
shimst=$?
set -e

fail=0
[ "$plain" -eq 0 ] || { echo "FAIL: plain run exited $plain"; cat plain.err; fail=1; }
[ "$shimst" -eq "$plain" ] || { echo "FAIL: exit status $shimst under the shim, $plain without"; tail -20 shim.err; fail=1; }
if ! diff -u plain.out shim.out; then
  echo "FAIL: the application observed a difference under the shim"; fail=1
fi
if ! cat logs/*.jsonl 2>/dev/null | grep -q '"check": *"group.unbalanced"'; then
  echo "FAIL: no group.unbalanced finding: the shim did not analyze the run"; fail=1
fi
[ $fail -eq 0 ] && echo "ok: $(wc -l <plain.out) calls observed identically"
exit $fail
