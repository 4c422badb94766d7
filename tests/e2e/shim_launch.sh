#!/bin/sh
# shim_launch.sh - nvcc-built programs under the preloaded shim.
#   usage: shim_launch.sh <liba2acheck.so> <workdir> <program> <symbol>...
# Runs the program plain and preloaded; requires identical output and that
# each named symbol of the program was bound to the shim's wrapper (the
# program's references are versioned, cudaLaunchKernel@libcudart.so.13: the
# shim's unversioned definitions must satisfy them).
set -eu
shim=$(readlink -f "$1") work=$2 prog=$(readlink -f "$3")
shift 3
rm -rf "$work"
mkdir -p "$work"
cd "$work"
timeout 60 "$prog" >plain.out 2>plain.err || { echo "plain run failed"; cat plain.err; exit 1; }
LD_PRELOAD="$shim" A2ACHECK_LOG_DIR="$work/logs" LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/ld" \
  timeout 60 "$prog" >shim.out 2>shim.err || { echo "preloaded run failed"; cat shim.err; exit 1; }
fail=0
diff -u plain.out shim.out || { echo "FAIL: output differs under the shim"; fail=1; }
prog_base=$(basename "$prog") shim_base=$(basename "$shim")
for sym in "$@"; do
  if ! grep -q "binding file [^ ]*$prog_base \[0\] to [^ ]*$shim_base \[0\]: normal symbol \`$sym'" ld.*; then
    echo "FAIL: $sym of $prog_base was not bound to the shim"; fail=1
  fi
done
[ $fail -eq 0 ] && echo "PASS: $prog_base"
exit $fail
