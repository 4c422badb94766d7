#!/bin/sh
# shim_local.sh - pass-through of the preloaded shim, end to end.
#   usage: shim_local.sh local  <shim_local_main>  <libshim_local_helper.so> <liba2acheck.so> <workdir>
#          shim_local.sh direct <shim_direct_main> <libshim_local_helper.so> <liba2acheck.so> <workdir>
# Runs the program twice - plain, then with liba2acheck.so preloaded - and
# requires: identical output (results, errno, sticky CUDA errors); that the
# real NCCL answered (ncclGetVersion returned 0, not the shim's
# ncclInternalError fallback); that the helper's calls were bound to the
# shim's wrappers; and where the shim found the real functions:
#   local   the helper was dlopen()ed RTLD_LOCAL: RTLD_NEXT fails and the
#           fallback finds the functions in the library the global scope
#           cannot see;
#   direct  the helper is linked in: RTLD_NEXT finds them.
set -eu
mode=$1
shift
main=$(readlink -f "$1") helper=$(readlink -f "$2") shim=$(readlink -f "$3") work=$4
rm -rf "$work"
mkdir -p "$work"
cd "$work"
export NCCL_SOCKET_IFNAME=lo
unset NCCL_DEBUG A2ACHECK_DISABLE || true

args=
[ "$mode" = local ] && args=$helper
timeout 60 "$main" $args >plain.out 2>plain.err || { echo "plain run failed"; cat plain.err; exit 1; }
LD_PRELOAD="$shim" A2ACHECK_LOG_DIR="$work/logs" LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/ld" \
  timeout 60 "$main" $args >shim.out 2>shim.err || { echo "preloaded run failed"; cat shim.err; exit 1; }

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
for sym in pncclGetVersion cudaMalloc; do
  failed_next=0
  grep -q "$shim_base: error: symbol lookup error: undefined symbol: $sym" ld.* && failed_next=1
  if [ "$mode" = local ]; then
    # RTLD_NEXT cannot see the locally loaded libraries (the loader logs the
    # failed dlsym); the fallback binds the symbol inside them.
    [ $failed_next -eq 1 ] || { echo "FAIL: no failed RTLD_NEXT lookup of $sym: fallback not exercised"; fail=1; }
    if ! grep -q "to [^ ]*lib\(nccl\|cudart\)[^ ]* \[0\]: normal symbol \`$sym'" ld.*; then
      echo "FAIL: $sym was not resolved in the locally loaded library"; fail=1
    fi
  else
    [ $failed_next -eq 0 ] || { echo "FAIL: RTLD_NEXT lookup of $sym failed in the global scope"; fail=1; }
    if ! grep -q "binding file [^ ]*$shim_base \[0\] to [^ ]*lib\(nccl\|cudart\)[^ ]* \[0\]: normal symbol \`$sym'" ld.*; then
      echo "FAIL: the shim did not bind $sym with RTLD_NEXT"; fail=1
    fi
  fi
done
[ $fail -eq 0 ] && echo "PASS: $mode"
exit $fail
