#!/bin/sh
# nccl_exports.sh SIM_LIB REFERENCE_LIST - ctest sim.nccl.exports
# nccl_exports.sh SIM_LIB REFERENCE_LIST REAL_LIB - ctest sim.nccl.exports_real
#
# Without REAL_LIB: the simulator's libnccl.so.2 must export exactly the
# dynamic symbols of the reference list (NCCL 2.30.7,
# tests/sim/nccl/exports-2.30.7.txt) with the same binding (ncclX weak,
# pncclX strong), each weak ncclX at the address of its pncclX (so a
# preloaded ncclX can forward to pncclX).
# With REAL_LIB: it must also export every symbol (name and binding) the
# real NCCL at REAL_LIB (the installed 2.28.9) exports. REAL_LIB missing:
# exit 77 (SKIP, "not run") outside CI, failure in CI.
sim=$1 ref=$2 real=$3
if [ -n "$real" ] && [ ! -r "$real" ]; then
  if [ "${CI:-}" = true ]; then
    echo "FAIL: the real NCCL library '$real' is missing (CI)"
    exit 1
  fi
  echo "SKIP: not run - no real libnccl.so.2 at '$real' to compare with"
  exit 77
fi
fail=0
tmp=${TMPDIR:-/tmp}/nccl_exports.$$
trap 'rm -f "$tmp".*' EXIT

nm -D --defined-only "$sim" >"$tmp.nm" || { echo "FAIL: nm $sim"; exit 1; }
awk '{print $2, $3}' "$tmp.nm" | sort -k2 >"$tmp.sim"
grep -v '^#' "$ref" | sort -k2 >"$tmp.ref"
if ! diff "$tmp.ref" "$tmp.sim" >"$tmp.diff"; then
  echo "FAIL: exports differ from $ref ('<' reference only, '>' simulator only):"
  cat "$tmp.diff"
  fail=1
fi
echo "$(wc -l <"$tmp.sim") symbols exported, $(wc -l <"$tmp.ref") in the reference"

# weak ncclX and strong pncclX at one address
awk '{a[$3] = $1} END {
  n = 0
  for (s in a) if (s ~ /^nccl/ && (("p" s) in a) && a[s] != a["p" s]) {
    print "FAIL: " s " at " a[s] " but p" s " at " a["p" s]; n++
  }
  exit n > 0
}' "$tmp.nm" || fail=1

if [ -n "$real" ]; then
  nm -D --defined-only "$real" | awk '{print $2, $3}' | LC_ALL=C sort >"$tmp.real"
  LC_ALL=C sort "$tmp.sim" >"$tmp.simc"
  missing=$(LC_ALL=C comm -23 "$tmp.real" "$tmp.simc")
  if [ -n "$missing" ]; then
    echo "FAIL: exported by $real but not by the simulator (binding, name):"
    echo "$missing"
    fail=1
  else
    echo "everything $real exports ($(wc -l <"$tmp.real") symbols) is exported"
  fi
fi
[ "$fail" = 0 ] && echo PASS
exit $fail
