#!/usr/bin/env bash
# tests/gpu/run.sh - prove a2acheck on a real GPU with real CUDA, real NCCL
# and real PyTorch (issue 7). docs/gpu-validation.md says how to run it and
# records the results.
#
#   tests/gpu/run.sh                 full run (needs a GPU); results in $OUT
#   tests/gpu/run.sh --check-only    prerequisites only (the ctest entry)
#   tests/gpu/run.sh --compile-only  compile the .cu programs with
#                                    nvcc -arch=sm_90 (no GPU needed)
#   tests/gpu/run.sh --sim BUILD     no GPU: run the NCCL and race steps on
#                                    the CPU simulator of an existing build
#                                    (its lib/liba2acheck.so, sim/lib), the
#                                    kernels replaced by host stand-ins
#   options: --out DIR (default $OUT, else ./gpu-results), --build DIR
#            (default build-gpu), --timeout S (per step, default 120),
#            --only NAME[,NAME] (run only these steps), --help,
#            --prebuilt DIR  use DIR/lib/liba2acheck.so, built elsewhere
#                            (a GPU machine without libunwind-dev); only
#                            the .cu programs are compiled here
#            --nccl-tests DIR  also run NVIDIA nccl-tests' alltoall_perf,
#                            sendrecv_perf and all_reduce_perf from DIR
#                            (built with -cudart shared, MPI=0; see
#                            ../shared/thirdparty/README.md), one rank
#
# Exit status: 0 every step passed; 1 a step failed; 2 usage error;
# 77 skipped (no GPU: `nvidia-smi -L` fails or /dev/nvidia0 is missing; or,
# with --compile-only, no nvcc/nccl.h).
#
# Steps (each under `timeout`, each line of the summary table is one step):
#   build             cmake + the shim; nvcc -arch=sm_90 for tests/gpu/*.cu
#   nccl-single       one-rank NCCL: send/recv to self in a group, AllReduce,
#                     AlltoAll; data right, zero findings, perf.summary timed
#   nccl-self-unmatched  a send to self without a receive in its group and
#                     the reverse: NCCL's ncclInvalidUsage reaches the
#                     program, no finding
#   nccl-nonblocking  a non-blocking communicator (blocking=0, polled),
#                     AllReduce, a non-blocking split, AlltoAll on the child:
#                     data right, zero findings, perf.summary counts both
#                     communicators' operations and knows the child's size
#   race-*            real-kernel races: unsynced-input, unsynced-output,
#                     free-in-flight (each -> its stream.* check) and their
#                     fixed versions (-> nothing); hostfn-output and
#                     callback-output (a host function / stream callback
#                     after the AlltoAll; the host launches the consumer
#                     without waiting for it -> stream.unsynced-output;
#                     waiting for its flag -> nothing)
#   hostfn-graph      2,000 pending host functions and one captured into a
#                     graph launched 4 times, each run exactly as enqueued
#   torch-nowait      all_to_all_single(async_op=True) without wait()
#                     -> stream.unsynced-output
#   torch-pyline      ... naming torch_a2a.py:<consumer line>
#   torch-wait        with wait() -> nothing
#   torch-plain       a training step with all_to_all + all_reduce -> nothing;
#                     records which NCCL path torch took
#   torch-nonblocking TORCH_NCCL_USE_COMM_NONBLOCKING=1, a subgroup,
#                     all_to_all_single and all_reduce -> nothing
#   overhead          CUDA-event-timed loop with and without the shim (ratio)
#   nt-<prog>         (--nccl-tests) nccl-tests -g 1 under the shim, its data
#                     check on (-c 1; -c 0 on the simulator): the findings
#                     the nccltests suite expects (the in-place columns'
#                     layout.overlap), nccl-tests' own "0 OK"
#   nt-overhead-<prog> (--nccl-tests) the time per iteration with and
#                     without the shim, 3 runs each, interleaved: the median
#                     ratio per size (INFO: reported, never asserted)
# Everything goes to $OUT: logs/<step>.out, jsonl/<step>/*.jsonl, env.json,
# results.json and summary.txt.

set -u

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; }

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GPU_DIR="$ROOT/tests/gpu"
MODE=full
OUT_DIR="${OUT:-}"
BUILD=""
STEP_TIMEOUT=120
ONLY=""
PREBUILT=""
NT_DIR=""
while [ $# -gt 0 ]; do
  case "$1" in
    --check-only) MODE=check ;;
    --compile-only) MODE=compile ;;
    --sim) [ $# -ge 2 ] || { echo "run.sh: --sim needs a build directory" >&2; exit 2; }
      MODE=sim; BUILD=$(cd "$2" 2>/dev/null && pwd) || { echo "run.sh: no directory $2" >&2; exit 2; }; shift ;;
    --out) [ $# -ge 2 ] || { echo "run.sh: --out needs a directory" >&2; exit 2; }; OUT_DIR=$2; shift ;;
    --build) [ $# -ge 2 ] || { echo "run.sh: --build needs a directory" >&2; exit 2; }; BUILD=$2; shift ;;
    --timeout)
      [ $# -ge 2 ] && [ "$2" -gt 0 ] 2>/dev/null || { echo "run.sh: --timeout needs seconds > 0" >&2; exit 2; }
      STEP_TIMEOUT=$2; shift ;;
    --prebuilt) [ $# -ge 2 ] || { echo "run.sh: --prebuilt needs a build directory" >&2; exit 2; }
      PREBUILT=$(cd "$2" 2>/dev/null && pwd) || { echo "run.sh: no directory $2" >&2; exit 2; }; shift ;;
    --nccl-tests) [ $# -ge 2 ] || { echo "run.sh: --nccl-tests needs a directory" >&2; exit 2; }
      NT_DIR=$(cd "$2" 2>/dev/null && pwd) || { echo "run.sh: no directory $2" >&2; exit 2; }; shift ;;
    --only) [ $# -ge 2 ] || { echo "run.sh: --only needs step names" >&2; exit 2; }; ONLY=",$2,"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# ---- locating the toolchain -------------------------------------------------

find_nvcc() {
  if command -v nvcc >/dev/null 2>&1; then command -v nvcc; return 0; fi
  for d in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-13 /usr/local/cuda-12; do
    [ -n "$d" ] && [ -x "$d/bin/nvcc" ] && { echo "$d/bin/nvcc"; return 0; }
  done
  return 1
}

# The directory of nccl.h / libnccl.so.2: NCCL_HOME, the CUDA toolkit, the
# system, then the pip wheel PyTorch ships (nvidia-nccl-cu*).
py_nccl_dir() {
  python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0])' 2>/dev/null
}
find_nccl_include() {
  for d in "${NCCL_HOME:+$NCCL_HOME/include}" /usr/local/cuda/include /usr/include "$(py_nccl_dir)/include"; do
    [ -n "$d" ] && [ -f "$d/nccl.h" ] && { echo "$d"; return 0; }
  done
  return 1
}
find_nccl_lib() {
  for d in "${NCCL_HOME:+$NCCL_HOME/lib}" /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64 "$(py_nccl_dir)/lib"; do
    [ -n "$d" ] && [ -e "$d/libnccl.so.2" ] && { echo "$d"; return 0; }
  done
  return 1
}

# A2A_GPU_ASSUME_PRESENT=1 skips the detection: only to exercise the
# script's own flow (recording, summary, results.json) on a machine without
# a GPU, where every GPU step then fails.
have_gpu() {
  [ "${A2A_GPU_ASSUME_PRESENT:-0}" = 1 ] && return 0
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -e /dev/nvidia0 ]
}

# Compile the .cu programs into $1 (no GPU needed).
compile_programs() {
  local dest=$1 nvcc inc lib rc=0
  nvcc=$(find_nvcc) || { echo "no nvcc"; return 77; }
  inc=$(find_nccl_include) || { echo "no nccl.h"; return 77; }
  lib=$(find_nccl_lib) || lib=""
  mkdir -p "$dest"
  # -cudart shared: nvcc links the runtime statically by default, and calls
  # into a static libcudart cannot be interposed by the preloaded shim.
  local cudalib
  cudalib=$(cd "$(dirname "$nvcc")/.." && pwd)/lib64
  for prog in nccl_single races overhead; do
    local link=()
    if [ -n "$lib" ]; then link=(-Xlinker "$lib/libnccl.so.2" -Xlinker "-rpath=$lib"); else link=(-lnccl); fi
    if ! "$nvcc" -arch=sm_90 -O2 -std=c++17 -cudart shared -I"$inc" -I"$GPU_DIR" -o "$dest/$prog" \
         "$GPU_DIR/$prog.cu" "${link[@]}" -Xlinker "-rpath=$cudalib"; then
      echo "nvcc failed for $prog.cu"
      rc=1
    fi
  done
  return $rc
}

if [ "$MODE" = compile ]; then
  tmp=$(mktemp -d)
  compile_programs "$tmp"
  rc=$?
  rm -rf "$tmp"
  case $rc in
    0) echo "compiled: nccl_single.cu races.cu overhead.cu (nvcc -arch=sm_90)"; exit 0 ;;
    77) echo "skipped: no nvcc or nccl.h"; exit 77 ;;
    *) exit 1 ;;
  esac
fi

if [ "$MODE" != sim ] && ! have_gpu; then
  echo "skipped: no GPU"
  exit 77
fi
# The environment of every program run: on the simulator, its libraries.
RUN_ENV=()
if [ "$MODE" = sim ]; then
  [ -e "$BUILD/lib/liba2acheck.so" ] && [ -e "$BUILD/sim/lib/libcudart.so.13" ] ||
    { echo "run.sh: $BUILD has no lib/liba2acheck.so and sim/lib (build it first)" >&2; exit 2; }
  find_nvcc >/dev/null && find_nccl_include >/dev/null || { echo "skipped: no nvcc or nccl.h"; exit 77; }
  RUN_ENV=(LD_LIBRARY_PATH="$BUILD/sim/lib" NCCL_SOCKET_IFNAME=lo)
fi

if [ "$MODE" = check ]; then
  missing=0
  for tool in cmake python3 timeout; do
    command -v $tool >/dev/null 2>&1 || { echo "missing: $tool"; missing=1; }
  done
  find_nvcc >/dev/null || { echo "missing: nvcc"; missing=1; }
  find_nccl_include >/dev/null || { echo "missing: nccl.h"; missing=1; }
  python3 -c 'import torch, torch.distributed' 2>/dev/null || echo "note: no torch (torch steps would fail)"
  nvidia-smi -L
  [ $missing = 0 ] && echo "prerequisites present" || echo "prerequisites missing"
  exit $missing
fi

# ---- full run -----------------------------------------------------------------

OUT_DIR=${OUT_DIR:-$PWD/gpu-results}
BUILD=${BUILD:-$ROOT/build-gpu}
[ -n "$PREBUILT" ] && [ "$MODE" != sim ] && BUILD=$PREBUILT
mkdir -p "$OUT_DIR/logs" "$OUT_DIR/jsonl" || exit 1
OUT_DIR=$(cd "$OUT_DIR" && pwd)
RESULTS_TSV="$OUT_DIR/results.tsv"
: > "$RESULTS_TSV"
SHIM="$BUILD/lib/liba2acheck.so"
PROGS="$BUILD/gpu"
[ "$MODE" = sim ] || [ -n "$PREBUILT" ] && PROGS="$OUT_DIR/programs"
CHECK_JSONL=(python3 "$ROOT/tests/e2e/check_jsonl.py")
PERF_CHECK=(python3 "$ROOT/tests/e2e/perf_check.py")
T_START=$(date +%s)

want() { [ -z "$ONLY" ] || [[ "$ONLY" == *",$1,"* ]]; }

# record NAME STATUS SECONDS NOTE
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4//$'\t'/ }" >> "$RESULTS_TSV"; }

# run_shim NAME TIMEOUT CMD... : run CMD under the shim, logs to $OUT_DIR.
# Sets RUN_RC and RUN_SECS; stdout+stderr in logs/NAME.out.
run_shim() {
  local name=$1 limit=$2; shift 2
  local dir="$OUT_DIR/jsonl/$name" t0
  rm -rf "$dir"; mkdir -p "$dir"
  t0=$(date +%s)
  env "${RUN_ENV[@]}" LD_PRELOAD="$SHIM" A2ACHECK_LOG_DIR="$dir" A2ACHECK_LOG_STDERR=warning \
    timeout -k 10 "$limit" "$@" > "$OUT_DIR/logs/$name.out" 2>&1
  RUN_RC=$?
  RUN_SECS=$(( $(date +%s) - t0 ))
}

# step NAME WANT_RC CHECK_ARGS -- CMD... : run under the shim, require the
# exit status, then check_jsonl.py with CHECK_ARGS on its logs.
step() {
  local name=$1 want_rc=$2; shift 2
  local cargs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cargs+=("$1"); shift; done
  shift
  want "$name" || return 0
  run_shim "$name" "$STEP_TIMEOUT" "$@"
  if [ "$RUN_RC" = 124 ] || [ "$RUN_RC" = 137 ]; then
    record "$name" FAIL "$RUN_SECS" "timed out after ${STEP_TIMEOUT}s"; return 1
  fi
  if [ "$RUN_RC" != "$want_rc" ]; then
    record "$name" FAIL "$RUN_SECS" "exit status $RUN_RC, expected $want_rc (logs/$name.out)"; return 1
  fi
  if ! "${CHECK_JSONL[@]}" "$OUT_DIR/jsonl/$name" "${cargs[@]}" >> "$OUT_DIR/logs/$name.out" 2>&1; then
    record "$name" FAIL "$RUN_SECS" "findings differ: $(tail -n 3 "$OUT_DIR/logs/$name.out" | tr '\n' ' ' | cut -c1-160)"
    return 1
  fi
  record "$name" PASS "$RUN_SECS" "${STEP_NOTE:-}"
  return 0
}

# ---- environment ------------------------------------------------------------

{
  echo "{"
  echo "  \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo "  \"gpu\": \"$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)\","
  echo "  \"driver\": \"$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)\","
  echo "  \"nvcc\": \"$( (find_nvcc >/dev/null && "$(find_nvcc)" --version | tail -n 2 | head -n 1) 2>/dev/null)\","
  echo "  \"nccl_h\": \"$(find_nccl_include 2>/dev/null)\","
  echo "  \"nccl_lib\": \"$(find_nccl_lib 2>/dev/null)\","
  echo "  \"torch\": \"$(python3 -c 'import torch; print(torch.__version__, torch.version.cuda, ".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null)\""
  echo "}"
} > "$OUT_DIR/env.json"
cat "$OUT_DIR/env.json"

# ---- build ------------------------------------------------------------------

if [ "$MODE" = sim ]; then
  t0=$(date +%s)
  compile_programs "$PROGS" > "$OUT_DIR/logs/build.out" 2>&1
  crc=$?
  record build "$([ $crc = 0 ] && echo PASS || echo FAIL)" "$(( $(date +%s) - t0 ))" \
    "simulator mode: shim of $BUILD, nvcc rc $crc"
elif [ -n "$PREBUILT" ]; then
  t0=$(date +%s)
  compile_programs "$PROGS" > "$OUT_DIR/logs/build.out" 2>&1
  crc=$?
  if [ $crc != 0 ] || [ ! -e "$SHIM" ]; then
    record build FAIL "$(( $(date +%s) - t0 ))" "prebuilt $SHIM present: $([ -e "$SHIM" ] && echo yes || echo no), nvcc rc $crc (logs/build.out)"
  else
    record build PASS "$(( $(date +%s) - t0 ))" "prebuilt shim ($SHIM) + 3 programs (sm_90)"
  fi
elif want build || [ ! -e "$SHIM" ]; then
  t0=$(date +%s)
  {
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DA2A_BUILD_TESTS=OFF &&
      cmake --build "$BUILD" -j "$(nproc)" --target a2acheck
  } > "$OUT_DIR/logs/build.out" 2>&1
  brc=$?
  compile_programs "$PROGS" >> "$OUT_DIR/logs/build.out" 2>&1
  crc=$?
  secs=$(( $(date +%s) - t0 ))
  if [ $brc != 0 ] || [ $crc != 0 ] || [ ! -e "$SHIM" ]; then
    record build FAIL "$secs" "cmake rc $brc, nvcc rc $crc (logs/build.out)"
  else
    record build PASS "$secs" "liba2acheck.so + 3 programs (sm_90)"
  fi
fi

IGN=(--ignore perf.summary --ignore perf.env)

# ---- 1. single-rank NCCL ------------------------------------------------------

# A program the build did not produce fails its steps (not silently skipped).
built() {
  [ -x "$PROGS/$1" ] && return 0
  shift
  for n in "$@"; do want "$n" && record "$n" FAIL 0 "not built (logs/build.out)"; done
  return 1
}

if want nccl-single && built nccl_single nccl-single; then
  STEP_NOTE="" step nccl-single 0 "${IGN[@]}" --none -- "$PROGS/nccl_single" &&
    { "${PERF_CHECK[@]}" "$OUT_DIR/jsonl/nccl-single" "perf.summary:ops>=3" "perf.summary:measured_ops>=1" \
        >> "$OUT_DIR/logs/nccl-single.out" 2>&1 ||
      record nccl-single-timed FAIL 0 "perf.summary shows no timed operation (logs/nccl-single.out)"; }
fi

# NCCL refuses a send to self without a receive from self in its group
# (ncclInvalidUsage at ncclGroupEnd, not a hang): the application gets that
# result through the shim, and nothing is left in flight.
if want nccl-self-unmatched && built nccl_single nccl-self-unmatched; then
  STEP_NOTE="ncclInvalidUsage both ways" step nccl-self-unmatched 0 "${IGN[@]}" --none \
    -- "$PROGS/nccl_single" self-unmatched
fi

if want nccl-nonblocking && built nccl_single nccl-nonblocking; then
  STEP_NOTE="blocking=0: init, AllReduce, split, AlltoAll" step nccl-nonblocking 0 "${IGN[@]}" --none \
    -- "$PROGS/nccl_single" nonblocking &&
    { "${PERF_CHECK[@]}" "$OUT_DIR/jsonl/nccl-nonblocking" "perf.summary:ops>=1" "perf.summary:nranks>=1" \
        >> "$OUT_DIR/logs/nccl-nonblocking.out" 2>&1 ||
      record nccl-nonblocking-ops FAIL 0 "perf.summary misses an operation or a size (logs/nccl-nonblocking.out)"; }
fi

# ---- 2. real-kernel races -----------------------------------------------------

for r in unsynced-input unsynced-output free-in-flight hostfn-output callback-output; do
  if built races "race-$r" "race-$r-fixed"; then
    case $r in
      hostfn-output|callback-output) exp="stream.unsynced-output:error" ;;
      *) exp="stream.$r:error" ;;
    esac
    if [ "$MODE" = sim ] && [ "$r" = free-in-flight ]; then
      # The simulator unmaps freed memory: the racing AlltoAll would crash.
      want "race-$r" && record "race-$r" SKIP 0 "simulator: the freed buffer is unmapped"
    else
      step "race-$r" 0 --expect "$exp" --only --allow perf.summary --allow perf.env \
        -- "$PROGS/races" "$r"
    fi
    step "race-$r-fixed" 0 "${IGN[@]}" --none -- "$PROGS/races" "$r" fixed
  fi
done
# The driver runs host functions on its own thread; the shim's trampoline
# (shim/rt_hostfn.c) must run each exactly once, also past its slot count
# and never for a captured one (a graph's host node runs once per launch).
if want hostfn-graph && built races hostfn-graph; then
  # (no NCCL call: a2acheck.not-intercepting says so, info)
  STEP_NOTE="2,000 pending + a captured one x4" step hostfn-graph 0 "${IGN[@]}" --ignore a2acheck.not-intercepting \
    --none -- "$PROGS/races" hostfn-graph
fi

# ---- 3. PyTorch ---------------------------------------------------------------

if [ "$MODE" = sim ]; then
  : # PyTorch and the overhead need a real GPU
elif python3 -c 'import torch, torch.distributed' 2>/dev/null; then
  TORCH_T=$(( STEP_TIMEOUT > 180 ? STEP_TIMEOUT : 180 ))
  STEP_TIMEOUT_SAVE=$STEP_TIMEOUT; STEP_TIMEOUT=$TORCH_T
  if want torch-nowait && step torch-nowait 0 --expect stream.unsynced-output --only --allow 'perf.*' \
       -- python3 "$GPU_DIR/torch_a2a.py" nowait; then
    line=$(sed -n 's/^CONSUMER_LINE=//p' "$OUT_DIR/logs/torch-nowait.out" | tail -n 1)
    if "${CHECK_JSONL[@]}" "$OUT_DIR/jsonl/torch-nowait" --contains "stream.unsynced-output=torch_a2a.py:$line" \
         > /dev/null 2>&1 ||
       "${CHECK_JSONL[@]}" "$OUT_DIR/jsonl/torch-nowait" --stack-has "stream.unsynced-output=torch_a2a.py:$line" \
         > /dev/null 2>&1; then
      record torch-pyline PASS 0 "finding names torch_a2a.py:$line"
    else
      record torch-pyline FAIL 0 "finding does not name torch_a2a.py:$line"
    fi
  fi
  step torch-wait 0 "${IGN[@]}" --none -- python3 "$GPU_DIR/torch_a2a.py" wait
  step torch-nonblocking 0 "${IGN[@]}" --none -- python3 "$GPU_DIR/torch_a2a.py" nonblocking
  if want torch-plain && step torch-plain 0 "${IGN[@]}" --none -- python3 "$GPU_DIR/torch_a2a.py" plain; then
    # Which NCCL path did all_to_all_single take? perf.summary names it.
    path=$(python3 - "$OUT_DIR/jsonl/torch-plain" <<'PY'
import json, os, sys
ops = set()
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        if f.endswith(".jsonl"):
            for line in open(os.path.join(root, f)):
                r = json.loads(line)
                if r.get("check") == "perf.summary":
                    for b in r.get("details", {}).get("buckets", []):
                        ops.add(b.get("op"))
if "AlltoAll" in ops: print("ncclAlltoAll")
elif "AlltoAll(send/recv)" in ops: print("grouped ncclSend/ncclRecv")
else: print("unknown (ops seen: %s)" % ",".join(sorted(o for o in ops if o)))
PY
)
    record torch-nccl-path INFO 0 "all_to_all_single -> $path"
  fi
  STEP_TIMEOUT=$STEP_TIMEOUT_SAVE
else
  record torch FAIL 0 "python3 cannot import torch (torch steps not run)"
fi

# ---- 4. overhead --------------------------------------------------------------

if [ "$MODE" != sim ] && want overhead && built overhead overhead; then
  t0=$(date +%s)
  plain=(); shim=(); orc=0
  for _ in 1 2 3; do
    o=$(timeout "$STEP_TIMEOUT" "$PROGS/overhead" 2000 2>>"$OUT_DIR/logs/overhead.out") || orc=1
    echo "plain: $o" >> "$OUT_DIR/logs/overhead.out"
    plain+=("$(echo "$o" | python3 -c 'import json,sys; print(json.load(sys.stdin)["us_per_iter"])' 2>/dev/null)")
    mkdir -p "$OUT_DIR/jsonl/overhead"
    o=$(env LD_PRELOAD="$SHIM" A2ACHECK_LOG_DIR="$OUT_DIR/jsonl/overhead" A2ACHECK_LOG_STDERR=none \
          timeout "$STEP_TIMEOUT" "$PROGS/overhead" 2000 2>>"$OUT_DIR/logs/overhead.out") || orc=1
    echo "shim:  $o" >> "$OUT_DIR/logs/overhead.out"
    shim+=("$(echo "$o" | python3 -c 'import json,sys; print(json.load(sys.stdin)["us_per_iter"])' 2>/dev/null)")
  done
  secs=$(( $(date +%s) - t0 ))
  note=$(python3 - "${plain[*]}" "${shim[*]}" <<'PY'
import statistics, sys
try:
    p = statistics.median(float(x) for x in sys.argv[1].split())
    s = statistics.median(float(x) for x in sys.argv[2].split())
    print("%.2f us/iter plain, %.2f us/iter with shim, ratio %.3f" % (p, s, s / p))
except Exception as e:
    print("ERROR %s" % e)
PY
)
  ratio=$(echo "$note" | sed -n 's/.*ratio \([0-9.]*\).*/\1/p')
  if [ $orc = 0 ] && [ -n "$ratio" ] && python3 -c "import sys; sys.exit(0 if float('$ratio') <= ${A2A_GPU_MAX_OVERHEAD:-2.0} else 1)"; then
    record overhead PASS "$secs" "$note"
  else
    record overhead FAIL "$secs" "$note (limit ${A2A_GPU_MAX_OVERHEAD:-2.0})"
  fi
fi

# ---- 5. nccl-tests (--nccl-tests DIR) ------------------------------------------
# NVIDIA's nccl-tests, a real client nobody here wrote, as one rank (-g 1: one
# GPU). Under the shim its in-place columns are the findings the nccltests
# suite expects (tests/nccltests/CMakeLists.txt: AlltoAll and the grouped
# send/recv pass sendbuff == recvbuff; AllReduce in place is NCCL's documented
# form); its data check (device kernels, so -c 0 on the simulator) must say
# "0 OK". Then the time per iteration with and without the shim.

# nt_parse FILE...: "size:time" (out-of-place, microseconds) for every size
# in every run (one file each), the median over the runs.
nt_parse() {
  python3 - "$@" <<'PY'
import statistics, sys
runs = []
for path in sys.argv[1:]:
    rows = {}
    for line in open(path, errors="replace"):
        f = line.split()
        if len(f) >= 9 and f[0].isdigit():
            try:
                rows[int(f[0])] = float(f[5])
            except ValueError:
                pass
    runs.append(rows)
print(" ".join("%d:%.3f" % (size, statistics.median(r[size] for r in runs if size in r))
               for size in sorted(set().union(*runs)) if all(size in r for r in runs)))
PY
}

if [ -n "$NT_DIR" ]; then
  NT_CHECK=1
  [ "$MODE" = sim ] && NT_CHECK=0  # the data check kernels are device code
  NT_ENV=("${RUN_ENV[@]}")
  if [ "$MODE" != sim ]; then
    # nccl-tests links libcudart.so.13 and libnccl.so.2 without a run path.
    nt_libs="$(find_nccl_lib 2>/dev/null):$(cd "$(dirname "$(find_nvcc)")/.." 2>/dev/null && pwd)/lib64"
    NT_ENV+=(LD_LIBRARY_PATH="$nt_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  fi
  RUN_ENV_SAVE=("${RUN_ENV[@]}")
  for p in alltoall sendrecv all_reduce; do
    want "nt-$p" || want "nt-overhead-$p" || continue
    if [ ! -x "$NT_DIR/${p}_perf" ]; then
      record "nt-$p" FAIL 0 "no $NT_DIR/${p}_perf"; continue
    fi
    case $p in
      all_reduce) exp=("${IGN[@]}" --none) ;;
      *) exp=(--expect layout.overlap:error --only --allow perf.summary --allow perf.env) ;;
    esac
    RUN_ENV=("${NT_ENV[@]}")
    if want "nt-$p" && STEP_NOTE="-g 1 -b 1K -e 16M -f 4 -c $NT_CHECK" \
         step "nt-$p" 0 "${exp[@]}" -- "$NT_DIR/${p}_perf" -g 1 -b 1K -e 16M -f 4 -w 5 -n 20 -c $NT_CHECK; then
      log="$OUT_DIR/logs/nt-$p.out"
      rows=$(nt_parse "$log" | wc -w)
      if ! grep -q "Out of bounds values : 0 OK" "$log" || [ "$rows" -lt 7 ]; then
        record "nt-$p-output" FAIL 0 "nccl-tests' output: $rows result rows, $(grep -m1 'Out of bounds' "$log" || echo 'no Out of bounds line')"
      fi
    fi
    if [ "$MODE" != sim ] && want "nt-overhead-$p"; then
      t0=$(date +%s); nrc=0
      mkdir -p "$OUT_DIR/nt-time/$p" "$OUT_DIR/jsonl/nt-overhead-$p"
      for i in 1 2 3; do
        env "${NT_ENV[@]}" timeout "$STEP_TIMEOUT" "$NT_DIR/${p}_perf" -g 1 -b 1K -e 1M -f 4 -w 50 -n 1000 -c 0 \
          > "$OUT_DIR/nt-time/$p/plain.$i" 2>&1 || nrc=1
        env "${NT_ENV[@]}" LD_PRELOAD="$SHIM" A2ACHECK_LOG_DIR="$OUT_DIR/jsonl/nt-overhead-$p" A2ACHECK_LOG_STDERR=none \
          timeout "$STEP_TIMEOUT" "$NT_DIR/${p}_perf" -g 1 -b 1K -e 1M -f 4 -w 50 -n 1000 -c 0 \
          > "$OUT_DIR/nt-time/$p/shim.$i" 2>&1 || nrc=1
      done
      plain_t=$(nt_parse "$OUT_DIR"/nt-time/$p/plain.*)
      shim_t=$(nt_parse "$OUT_DIR"/nt-time/$p/shim.*)
      note=$(python3 - "$plain_t" "$shim_t" <<'PY'
import sys
p = dict(kv.split(":") for kv in sys.argv[1].split())
s = dict(kv.split(":") for kv in sys.argv[2].split())
def size(b):
    b = int(b)
    return "%dM" % (b >> 20) if b >= 1 << 20 else "%dK" % (b >> 10) if b >= 1024 else "%dB" % b
print(", ".join("%s %.1f/%.1f us x%.3f" % (size(k), float(p[k]), float(s[k]), float(s[k]) / float(p[k]))
                for k in sorted(p, key=int) if k in s and float(p[k]) > 0) or "no rows")
PY
)
      record "nt-overhead-$p" "$([ $nrc = 0 ] && echo INFO || echo FAIL)" "$(( $(date +%s) - t0 ))" \
        "median of 3, out-of-place time plain/shim: $note"
    fi
    RUN_ENV=("${RUN_ENV_SAVE[@]}")
  done
fi

# ---- summary ------------------------------------------------------------------

python3 - "$RESULTS_TSV" "$OUT_DIR/env.json" "$OUT_DIR/results.json" "$(( $(date +%s) - T_START ))" <<'PY' | tee "$OUT_DIR/summary.txt"
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
env = json.load(open(sys.argv[2]))
steps = [{"step": r[0], "status": r[1], "seconds": int(r[2] or 0), "note": r[3] if len(r) > 3 else ""} for r in rows]
failed = [s["step"] for s in steps if s["status"] == "FAIL"]
json.dump({"env": env, "steps": steps, "failed": failed, "total_seconds": int(sys.argv[4]),
           "passed": not failed and any(s["status"] == "PASS" for s in steps)},
          open(sys.argv[3], "w"), indent=2)
w = max([len(s["step"]) for s in steps] + [4])
print("%-*s  %-6s %5s  %s" % (w, "step", "status", "secs", "note"))
for s in steps:
    print("%-*s  %-6s %5d  %s" % (w, s["step"], s["status"], s["seconds"], s["note"][:150]))
print("GPU: %s, driver %s; %s; torch %s" % (env.get("gpu"), env.get("driver"), env.get("nvcc"), env.get("torch")))
print("RESULT: %s (%d failed) in %ss" % ("PASS" if not failed and steps else "FAIL", len(failed), sys.argv[4]))
PY
grep -q '	FAIL	' "$RESULTS_TSV" && exit 1
grep -q '	PASS	' "$RESULTS_TSV" || exit 1
exit 0
