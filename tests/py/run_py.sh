#!/bin/sh
# run_py.sh - Python call sites on one CPython (ctest py.sites.*): runs
# tests/py/py_sites.py on the CPU simulator with a2acheck preloaded, in
# each mode, and checks the findings' frames with tests/py/check_sites.py.
#
#   run_py.sh --python PY --run A2ASIM_RUN --shim LIB --fail VM_READV_FAIL_LIB
#             --checker PY3 --tool A2ACHECK --logs DIR [--unsupported]
#
# --unsupported: a CPython a2acheck has no layout for (3.8, 3.14+): one run
# (released) that must say "Python frames: off" once and keep native frames.
#
# Modes (py_sites.py's, plus two that exercise the runtime's checked first
# walk, shim/rt_python.c):
#   released  GIL released during each call (ctypes.CDLL; what torch does)
#   held      GIL held (ctypes.PyDLL)
#   thread    from a threading.Thread
#   pipe      released, process_vm_readv refused (EPERM): the pipe fallback
#   refused   released, every checked read faults (EFAULT): Python frames
#             refused for the process, said on stderr, native frames only
#   suppress  released, with A2ACHECK_SUPPRESSIONS silencing layout.overlap by
#             its Python function and stream.default-stream by its Python
#             file (frames only Python has): both absent from the logs and
#             counted in the summaries, size.p2p-mismatch still reported
#   deadlock  both ranks receive first and wait: group.deadlock (status 66)
#             starting at the synchronization's line, its story naming the
#             receive and the synchronization by their Python lines
# Each must exit 0 (no crash, no hang) with the expected first frames: the
# program's line on both ranks for size.p2p-mismatch (raised on the
# cross-rank thread, from the sites captured at the calls), the peer's
# Python site in its message, the program's line for layout.overlap and
# stream.default-stream (raised in the call), and SARIF locations there.
set -u
py= run= shim= fail= checker= tool= logs= modes="released held thread pipe refused suppress deadlock"
while [ $# -gt 0 ]; do
  case $1 in
    --python) py=$2; shift 2 ;;
    --run) run=$2; shift 2 ;;
    --shim) shim=$2; shift 2 ;;
    --fail) fail=$2; shift 2 ;;
    --checker) checker=$2; shift 2 ;;
    --tool) tool=$2; shift 2 ;;
    --logs) logs=$2; shift 2 ;;
    --unsupported) modes=unsupported; shift ;;
    *) echo "run_py.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
prog=$here/py_sites.py
if ! [ -x "$py" ]; then
  echo "FAIL: no interpreter at $py (it was found when the build was configured)"
  exit 1
fi
"$py" -c 'import sys; print("run_py.sh: " + sys.version.replace("\n", " "))'

status=0
for mode in $modes; do
  dir=$logs/$mode
  rm -rf "$dir" && mkdir -p "$dir"
  arg=$mode preload=$shim
  case $mode in
    pipe) arg=released preload="$fail:$shim"; export A2A_TEST_VM_READV=EPERM ;;
    refused) arg=released preload="$fail:$shim"; export A2A_TEST_VM_READV=EFAULT ;;
    unsupported) arg=released; unset A2A_TEST_VM_READV ;;
    suppress) arg=released; unset A2A_TEST_VM_READV
      printf '# Python frames only\nlayout.overlap:^gather_in_place$\nstream.default-stream:py_sites.py$\n' \
        > "$dir/supp.txt"
      export A2ACHECK_SUPPRESSIONS="$dir/supp.txt" ;;
    *) unset A2A_TEST_VM_READV ;;
  esac
  [ "$mode" = suppress ] || unset A2ACHECK_SUPPRESSIONS
  start=$(date +%s)
  LD_PRELOAD="$preload" A2ACHECK_LOG_DIR="$dir" A2ACHECK_LOG_STDERR=error \
    timeout 120 "$run" A2ASIM_DEVICES=2 "$py" "$prog" "$arg" > "$dir/out.txt" 2>&1
  rc=$?
  echo "--- $mode: exit $rc in $(( $(date +%s) - start )) s"
  sed 's/^/    /' "$dir/out.txt"
  if [ "$mode" = deadlock ]; then
    if [ "$rc" -ne 66 ]; then
      echo "FAIL: deadlock: py_sites.py exited $rc, not 66"
      status=1
      continue
    fi
    "$checker" "$here/check_sites.py" --logs "$dir" --script "$prog" \
      --first group.deadlock@0=deadlock:dlsync --first group.deadlock@1=deadlock:dlsync \
      --names group.deadlock@0=dlsync --names group.deadlock@0=dlrecv \
      --names group.deadlock@1=dlsync --names group.deadlock@1=dlrecv || status=1
    continue
  fi
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: $mode: py_sites.py exited $rc"
    status=1
    continue
  fi
  if [ "$mode" = suppress ]; then
    "$checker" - "$dir" <<'PYEOF' || status=1
import glob, json, sys
recs = [json.loads(l) for j in glob.glob(sys.argv[1] + "/a2acheck.*.jsonl") for l in open(j)]
got = {r["check"] for r in recs}
sup = {}
for r in recs:
    if r["check"] == "a2acheck.summary":
        for c in r["details"]["checks"]:
            sup[c["check"]] = sup.get(c["check"], 0) + c.get("suppressed_by_file", 0)
bad = []
if got & {"layout.overlap", "stream.default-stream"}:
    bad.append("silenced findings logged: %r" % sorted(got))
if "size.p2p-mismatch" not in got:
    bad.append("size.p2p-mismatch no longer reported")
if sup.get("layout.overlap") != 1 or sup.get("stream.default-stream", 0) < 2:
    bad.append("summaries' suppressed_by_file: %r" % sup)
print("FAIL: suppress: " + "; ".join(bad) if bad else
      "suppress: layout.overlap and stream.default-stream silenced by Python frames (%r)" % sup)
sys.exit(1 if bad else 0)
PYEOF
    continue
  fi
  if [ "$mode" = refused ] || [ "$mode" = unsupported ]; then
    if ! grep -q 'Python frames: off' "$dir/out.txt"; then
      echo "FAIL: $mode: no 'Python frames: off' warning on stderr"
      status=1
    fi
    "$checker" "$here/check_sites.py" --logs "$dir" --script "$prog" \
      --native size.p2p-mismatch --native layout.overlap || status=1
    continue
  fi
  extra=
  [ "$mode" = thread ] && extra="--frame=layout.overlap@1=frames in stdlib"
  "$checker" "$here/check_sites.py" --logs "$dir" --script "$prog" --sarif "$tool" \
    --first size.p2p-mismatch@1=exchange:send --first size.p2p-mismatch@0=exchange:recv \
    --names size.p2p-mismatch@0=send --names size.p2p-mismatch@1=recv \
    --first layout.overlap@1=gather_in_place:allgather \
    --frame "layout.overlap@1=rank_main (" \
    --first stream.default-stream@0=gather_in_place:allgather \
    --first stream.default-stream@1=gather_in_place:allgather \
    ${extra:+"$extra"} || status=1
done
[ "$status" -eq 0 ] && echo PASS
exit "$status"
