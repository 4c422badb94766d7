#!/bin/sh
# run_torch.sh - runs a PyTorch program on the CPU simulator for ctest
# (label torch): torchrun with N workers under build/sim/bin/a2asim-run,
# optionally with a2acheck preloaded in front of the simulator.
#
#   run_torch.sh --run A2ASIM_RUN --nproc N --expect TEXT [--shim LIB --logs DIR]
#                [--check COMMAND] -- PROGRAM [ARG...]
#
# Passes when torchrun exits 0, exactly N lines contain TEXT (each worker
# checks its own data and prints TEXT only if every byte was right), and the
# simulator never reported a kernel it could not run (these programs move
# data with copies only, so such a line would mean work silently dropped).
# With --shim, every finding a2acheck reports is echoed to stderr
# (A2ACHECK_LOG_STDERR=info) and listed at the end; the logs go to DIR.
# --check: a shell command run after the program (with $A2A_LOGS set to DIR)
# that asserts on the logs; the test fails if it fails.
#
# The Python is $A2A_TORCH_PYTHON, else ~/.cache/a2acheck/venv-torch/bin/python
# (.ci/torch-venv.sh makes it). Without torch the test is skipped (exit 77)
# with a message saying so - except in CI (CI=true), where it fails.
set -u

run= nproc= expect= shim= logs= check=
while [ $# -gt 0 ]; do
  case $1 in
    --run) run=$2; shift 2 ;;
    --nproc) nproc=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --shim) shim=$2; shift 2 ;;
    --logs) logs=$2; shift 2 ;;
    --check) check=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "run_torch.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

py=${A2A_TORCH_PYTHON:-}
[ -n "$py" ] || py=$HOME/.cache/a2acheck/venv-torch/bin/python
if ! [ -x "$py" ] || ! "$py" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)' 2>/dev/null; then
  msg="no PyTorch at $py (set A2A_TORCH_PYTHON, or create it with .ci/torch-venv.sh)"
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $msg; the torch suite is required in CI"
    exit 1
  fi
  echo "SKIPPED: $msg: the torch tests were NOT run"
  exit 77
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
set -- "$py" -m torch.distributed.run --standalone --nproc-per-node "$nproc" --max-restarts 0 "$@"
start=$(date +%s)
if [ -n "$shim" ]; then
  rm -rf "$logs" && mkdir -p "$logs"
  LD_PRELOAD="$shim${LD_PRELOAD:+:$LD_PRELOAD}" A2ACHECK_LOG_DIR="$logs" A2ACHECK_LOG_STDERR=info \
    "$run" A2ASIM_DEVICES="$nproc" "$@" > "$out" 2>&1
else
  "$run" A2ASIM_DEVICES="$nproc" "$@" > "$out" 2>&1
fi
status=$?
cat "$out"
echo "run_torch.sh: $nproc ranks$( [ -n "$shim" ] && echo ' under a2acheck'): exit $status in $(( $(date +%s) - start )) s"

fail=0
if [ "$status" -ne 0 ]; then
  echo "FAIL: torchrun exited $status"
  fail=1
fi
# Occurrences, not lines: the ranks share one output file, and an
# unbuffered Python print writes its text and its newline separately, so
# two ranks' lines can land on one ("rank 1/2: ... donerank 0/2: ... done").
ok=$(grep -oF -- "$expect" "$out" | wc -l)
if [ "$ok" -ne "$nproc" ]; then
  echo "FAIL: $ok of $nproc ranks reported \"$expect\""
  fail=1
fi
if grep -q 'a2asim: kernel .* has no host implementation' "$out"; then
  echo "FAIL: a kernel was launched that the simulator cannot run"
  fail=1
fi
if [ -n "$shim" ]; then
  n=$(grep -c '^a2acheck: \[rank' "$out")
  echo "a2acheck reported $n finding line(s):"
  grep '^a2acheck: \[rank' "$out" | sed 's/^/  /'
fi
if [ -n "$check" ] && ! A2A_LOGS="$logs" sh -c "$check"; then
  echo "FAIL: the check of the logs failed: $check"
  fail=1
fi
[ "$fail" -eq 0 ] && echo PASS
exit "$fail"
