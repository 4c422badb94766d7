#!/bin/sh
# shim_local.sh - the RTLD_LOCAL fallback, end to end.
#   usage: shim_local.sh <shim_local_main> <libshim_local_helper.so> <liba2acheck.so> <workdir>
# Runs the program twice - plain, then with liba2acheck.so preloaded - and
# requires: identical output (results, errno, sticky CUDA errors); that the
# real NCCL answered (ncclGetVersion returned 0, not the shim's
# ncclInternalError fallback); that the helper's calls were bound to the
# shim's wrappers; and that the shim found the real functions in a library
# the global scope cannot see.
set -eu
main=$(readlink -f "$1") helper=$(readlink -f "$2") shim=$(readlink -f "$3") work=$4
rm -rf "$work"
mkdir -p "$work"
cd "$work"
export NCCL_SOCKET_IFNAME=lo
unset NCCL_DEBUG A2ACHECK_DISABLE || true

timeout 60 "$main" "$helper" >plain.out 2>plain.err || { echo "plain run failed"; cat plain.err; exit 1; }
LD_PRELOAD="$shim${SHIM_EXTRA_PRELOAD:+ $SHIM_EXTRA_PRELOAD}" A2ACHECK_LOG_DIR="$work/logs" LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/ld" \
  timeout 60 "$main" "$helper" >shim.out 2>shim.err || { echo "preloaded run failed"; cat shim.err; exit 1; }

fail=0
if ! diff -u plain.out shim.out; then
  echo "FAIL: the application observed a difference under the shim"; fail=1
fi
grep -q '^ncclGetVersion *-> 0 ' plain.out || { echo "FAIL: real ncclGetVersion did not succeed"; fail=1; }

helper_base=$(basename "$helper")
shim_base=$(basename "$shim")
for sym in ncclGetVersion ncclSend cudaMalloc cudaGetLastError; do
  if ! grep -q "binding file [^ ]*$helper_base \[0\] to [^ ]*$shim_base \[0\]: normal symbol \`$sym'" ld.*; then
    echo "FAIL: the helper's $sym was not bound to the shim"; fail=1
  fi
done
# The shim's own lookups: RTLD_NEXT cannot see the locally loaded libraries
# (the loader logs the failed dlsym), and the fallback then binds the real
# symbol inside them.
for sym in pncclGetVersion cudaMalloc; do
  if ! grep -q "$shim_base: error: symbol lookup error: undefined symbol: $sym" ld.*; then
    echo "FAIL: no failed RTLD_NEXT lookup of $sym: the fallback was not exercised"; fail=1
  fi
  if ! grep -q "to [^ ]*lib\(nccl\|cudart\)[^ ]* \[0\]: normal symbol \`$sym'" ld.*; then
    echo "FAIL: $sym was not resolved in the locally loaded library"; fail=1
  fi
done
[ $fail -eq 0 ] && echo "PASS: RTLD_LOCAL fallback"
exit $fail
