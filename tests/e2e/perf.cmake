# tests/e2e/perf.cmake - end-to-end tests of the perf.* checks (ctest -R
# e2e.perf): tests/e2e/perf_patterns.c runs each slow pattern on 2 simulated
# ranks with liba2acheck.so preloaded and the simulator's cost model on
# (A2ASIM_LAUNCH_US, A2ASIM_BW_GBPS); check_jsonl.py asserts which checks
# fire and perf_check.py that the reported numbers match what the program
# did (counts exactly, times and bandwidths within 20% of the cost model).

find_package(Python3 COMPONENTS Interpreter QUIET)

if(TARGET a2acheck AND Python3_Interpreter_FOUND)
  set(A2A_PERF_E2E ${CMAKE_CURRENT_LIST_DIR})
  set(A2A_PERF_LOGS ${CMAKE_BINARY_DIR}/tests/e2e/logs/perf)
  a2a_e2e_program(perf_patterns ${CMAKE_CURRENT_LIST_DIR}/perf_patterns.c)

  # a2a_perf_test(NAME PATTERN STATUS "ENV=V;..." CHECKER-ARGS...)
  # Runs perf_patterns PATTERN under the preloaded tool with a fresh log
  # directory and the given extra environment, requires exit status STATUS,
  # then runs the checkers: every argument up to "--num" goes to
  # check_jsonl.py, the rest to perf_check.py.
  function(a2a_perf_test name pattern status envs)
    set(dir ${A2A_PERF_LOGS}/${name})
    add_test(NAME e2e.perf.${name}
      COMMAND sh -c [=[
dir=$1 preload=$2 libdir=$3 want=$4 prog=$5 pattern=$6 envs=$7 py=$8 e2e=$9; shift 9
rm -rf "$dir" && mkdir -p "$dir" || exit 1
IFS=';'; set -f; extra=""; for kv in $envs; do extra="$extra $kv"; done; unset IFS
env LD_PRELOAD="$preload" LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  A2ACHECK_LOG_DIR="$dir" NCCL_SOCKET_IFNAME=lo A2ASIM_LAUNCH_US=5000 A2ASIM_BW_GBPS=0.1 \
  $extra timeout 120 "$prog" "$pattern"
st=$?
if [ "$st" != "$want" ]; then echo "FAIL: exit status $st, expected $want"; exit 1; fi
a=""; b=""; num=0
for x in "$@"; do
  if [ "$x" = "--num" ]; then num=1; continue; fi
  if [ $num = 0 ]; then a="$a '$x'"; else b="$b '$x'"; fi
done
eval "\"$py\" \"$e2e/check_jsonl.py\" \"$dir\" $a" || exit 1
if [ -n "$b" ]; then eval "\"$py\" \"$e2e/perf_check.py\" \"$dir\" $b" || exit 1; fi
exit 0
]=] sh ${dir} $<TARGET_FILE:a2acheck> ${CMAKE_BINARY_DIR}/sim/lib ${status}
        $<TARGET_FILE:perf_patterns> ${pattern} "${envs}" ${Python3_EXECUTABLE} ${A2A_PERF_E2E}
        ${ARGN})
    set_tests_properties(e2e.perf.${name} PROPERTIES TIMEOUT 180 RUN_SERIAL TRUE LABELS "e2e;perf")
  endfunction()
endif()

if(TARGET a2acheck AND Python3_Interpreter_FOUND)
  # Cost model of every run: 5 ms per operation + bytes / 0.1 GB/s. A 1 MiB
  # AlltoAll on 2 ranks: 5e-3 + 1048576/1e8 s -> busbw = 1048576/1e9/T * 1/2.
  set(T1M "(5e-3+1048576/1e8)")
  set(BUS1M "1048576/1e9/${T1M}*0.5")

  # The fixed program of every pattern: nothing but the summary.
  a2a_perf_test(clean clean 0 "" --ignore perf.summary --none
    --num "perf.summary@0:ops=20" "perf.summary@0:measured_ops=20"
    "perf.summary@0:buckets[op=AlltoAll,bucket_lo_bytes=1048576].best_busbw_gbps~${BUS1M}")

  # The overlap fraction, measured on samples (a wider band than the other
  # numbers: it is a ratio of two sampled windows and drifts under CPU load): 10 ms of independent compute
  # (5 ms of work + the 5 ms launch cost) under each 5 ms + 10.49 ms
  # AlltoAll. One rank, so that no peer skew lengthens the operation.
  a2a_perf_test(overlap overlap@1 0 "" --ignore perf.summary --none
    --num "perf.summary:overlap_samples>=1"
    "perf.summary:overlap_fraction>=0.5*10e-3/${T1M}" "perf.summary:overlap_fraction<=1.3*10e-3/${T1M}")

  # perf.small-messages: 200 AlltoAlls of 32 KiB after 8 of 4 MiB.
  # Per-operation cost = the model's 5 ms; 193 operations saved by batching
  # into 7; share of time: 200*(5e-3+32768/1e8) / (that + 8*(5e-3+4194304/1e8)).
  a2a_perf_test(small small 0 "" --expect perf.small-messages:warning=2 --only --allow perf.summary
    --num "perf.small-messages:small_ops=200" "perf.small-messages:ops=208"
    "perf.small-messages:small_bytes=6553600" "perf.small-messages:batched_ops=7"
    "perf.small-messages:per_op_cost_s~5e-3" "perf.small-messages:estimated_gain_s~193*5e-3"
    "perf.small-messages:small_time_fraction~200*(5e-3+32768/1e8)/(200*(5e-3+32768/1e8)+8*(5e-3+4194304/1e8))")
  a2a_perf_test(batched batched 0 "" --ignore perf.summary --none)

  # perf.low-bandwidth: a genuinely slower transfer. From the 17th of 48
  # AlltoAlls of 1 MiB on, every rank's communication stream is delayed
  # (a2asim_stream_set_delay: +20 ms per timed operation) on both ranks
  # alike. Windows of 8 after the warm-up op: 2 at the model's speed (the
  # best), 3 slowed (the typical).
  a2a_perf_test(lowbw slowlink 0 "" --expect perf.low-bandwidth:warning=2 --only --allow perf.summary
    --num "perf.low-bandwidth:reason=below-best"
    "perf.low-bandwidth:best_busbw_gbps~${BUS1M}"
    "perf.low-bandwidth:busbw_gbps~1048576/1e9/(${T1M}+20e-3)*0.5"
    "perf.low-bandwidth:bucket_lo_bytes=1048576" "perf.low-bandwidth:windows=5"
    "perf.low-bandwidth:includes=waiting for the slowest rank")
  # Rank imbalance is not slow bandwidth, but an operation's time includes
  # waiting for the slowest rank: rank 0, which waits 60 ms for rank 1 in
  # 32 of 48 operations, is told so; the straggler sees its own fast
  # operations and gets nothing (docs/checks.md).
  a2a_perf_test(imbalance imbalance 0 "" --expect perf.low-bandwidth:warning@0=1 --only
    --allow perf.summary --contains "perf.low-bandwidth=time includes waiting for the slowest rank"
    --num "perf.low-bandwidth@0:best_busbw_gbps~${BUS1M}")
  # QA F1, the fixed programs: arrival skew of a correct program (a late
  # rank one step in four, a host synchronization per step), and
  # latency-bound 4 KiB operations on 4 ranks without the cost model.
  a2a_perf_test(skew skew 0 "" --ignore perf.summary --forbid perf.low-bandwidth
    --num "perf.summary:buckets[op=AlltoAll,bucket_lo_bytes=1048576].measured_ops=48")
  a2a_perf_test(latency latency@4 0 "A2ASIM_LAUNCH_US=0;A2ASIM_BW_GBPS=0" --ignore perf.summary
    --forbid perf.low-bandwidth --num "perf.summary:buckets[op=AlltoAll,bucket_lo_bytes=4096].measured_ops=40")
  # ... and below an expectation the model cannot reach (1 GB/s).
  a2a_perf_test(expected clean 0 "A2ACHECK_EXPECTED_BUSBW=1"
    --expect perf.low-bandwidth:warning=2 --only --allow perf.summary
    --num "perf.low-bandwidth:reason=below-expected"
    "perf.low-bandwidth:best_busbw_gbps~${BUS1M}" "perf.low-bandwidth:busbw_gbps<=1.2*${BUS1M}")

  # QA F4: rank 1's forked data-loader child (no CUDA, exit(0)) writes its
  # own log but no perf.summary: rank 1's 8 operations are reported once.
  a2a_perf_test(fork_child forkchild 0 "" --ignore perf.summary --none
    --num "count:perf.summary@1=1" "count:perf.summary@0=1" "perf.summary@1:ops=8")

  # perf.no-overlap, both patterns.
  a2a_perf_test(blocking blocking 0 "" --expect perf.no-overlap:warning=2 --only --allow perf.summary
    --num "perf.no-overlap:blocked_after_ops=20" "perf.no-overlap:ops=20"
    "perf.no-overlap:pattern=host-blocks-after-communication"
    "perf.no-overlap:blocking_call=cudaStreamSynchronize")
  a2a_perf_test(serial serial 0 "" --expect perf.no-overlap:warning=2 --only --allow perf.summary
    --num "perf.no-overlap:serialized_ops=20" "perf.no-overlap:pattern=single-stream")

  # perf.sync-heavy: reported once the 16th synchronized step is seen.
  a2a_perf_test(devsync devsync 0 "" --expect perf.sync-heavy:warning=2 --only --allow perf.summary
    --num "perf.sync-heavy:synchronized_steps=16" "perf.sync-heavy:comm_ops=16")

  # perf.stream-churn: one stream per step (plus the 2 long-lived ones),
  # judged at exit: microseconds of host time per 15 ms step, an info.
  a2a_perf_test(churn churn 0 "" --expect perf.stream-churn:info=2 --only --allow perf.summary
    --num "perf.stream-churn:kind=stream" "perf.stream-churn:comm_ops=20"
    "perf.stream-churn:created=22" "perf.stream-churn:destroyed=22"
    "perf.stream-churn:host_time_fraction<=0.01")

  # perf.stream-priority: a 4 MiB AlltoAll on priority 0 vs compute on the
  # highest priority; once per call site.
  a2a_perf_test(priority priority 0 "" --expect perf.stream-priority:info=2 --only --allow perf.summary
    --num "perf.stream-priority:comm_priority=0" "perf.stream-priority:compute_priority<=-1"
    "perf.stream-priority:bytes=4194304")

  # Measuring adds no synchronization: with every AlltoAll timed by events
  # on its stream, the racy consumer still reads stale data (exit 3) and the
  # happens-before analyzer still sees the missing edge; with the edge, the
  # data is right and nothing is reported.
  a2a_perf_test(race_still_races race 3 "" --expect stream.unsynced-output:error --only
    --allow perf.summary --num "perf.summary:measured_ops=1")
  a2a_perf_test(race_fixed racefixed 0 "" --ignore perf.summary --none
    --num "perf.summary:measured_ops=1")

  # perf.env: the seed document's settings and a typo, read once at start.
  a2a_perf_test(env clean 0 "NCCL_ALGO=tree;NCCL_BUFFSIZE=4194304;NCCL_SOKET_IFNAME=lo"
    --expect perf.env:warning --expect perf.env:info --only --allow perf.summary
    --contains "perf.env=no effect on AlltoAll" --contains "perf.env=is a no-op"
    --contains "perf.env=did you mean NCCL_SOCKET_IFNAME")
endif()

# ---- the GPU validation script's parts that run without a GPU ------------
# (tests/gpu/run.sh; the full run is the gpu.validation entry in
# tests/CMakeLists.txt, skipped with 77 where there is no GPU.)
set(A2A_GPU_RUN ${PROJECT_SOURCE_DIR}/tests/gpu/run.sh)
if(EXISTS ${A2A_GPU_RUN})
  # Argument parsing: --help succeeds, unknown or malformed arguments are
  # usage errors (2).
  add_test(NAME gpu.script-args COMMAND sh -c [=[
run=$1
bash "$run" --help | grep -q -- '--check-only' || { echo "FAIL: --help"; exit 1; }
bash "$run" --bogus >/dev/null 2>&1; [ $? = 2 ] || { echo "FAIL: --bogus not rejected"; exit 1; }
bash "$run" --timeout x >/dev/null 2>&1; [ $? = 2 ] || { echo "FAIL: --timeout x not rejected"; exit 1; }
bash "$run" --out >/dev/null 2>&1; [ $? = 2 ] || { echo "FAIL: --out without a value"; exit 1; }
bash "$run" --prebuilt >/dev/null 2>&1; [ $? = 2 ] || { echo "FAIL: --prebuilt without a value"; exit 1; }
bash "$run" --nccl-tests /nonexistent/a2a >/dev/null 2>&1; [ $? = 2 ] || { echo "FAIL: --nccl-tests of no directory"; exit 1; }
bash "$run" --help | grep -q -- '--nccl-tests' || { echo "FAIL: --help lacks --nccl-tests"; exit 1; }
exit 0
]=] sh ${A2A_GPU_RUN})
  # The skip path, even on a machine with a GPU: an nvidia-smi that fails.
  add_test(NAME gpu.script-skip COMMAND sh -c [=[
run=$1 dir=$2
mkdir -p "$dir" && printf '#!/bin/sh\nexit 9\n' > "$dir/nvidia-smi" && chmod +x "$dir/nvidia-smi"
out=$(PATH="$dir:$PATH" bash "$run" --out "$dir/out" 2>&1); st=$?
[ "$st" = 77 ] || { echo "FAIL: exit $st, expected 77: $out"; exit 1; }
[ "$out" = "skipped: no GPU" ] || { echo "FAIL: printed: $out"; exit 1; }
[ ! -e "$dir/out" ] || { echo "FAIL: skipped run wrote results"; exit 1; }
exit 0
]=] sh ${A2A_GPU_RUN} ${CMAKE_BINARY_DIR}/tests/gpu-skip)
  # The .cu programs compile for sm_90 (nvcc needs no GPU); 77 without nvcc.
  add_test(NAME gpu.compile COMMAND bash ${A2A_GPU_RUN} --compile-only)
  # The NCCL and race steps of the script on the simulator (the programs'
  # kernels replaced by host stand-ins): the script's machinery, the
  # programs and their expected findings, without a GPU.
  if(TARGET a2acheck AND TARGET a2asim_cudart)
    add_test(NAME gpu.programs-sim COMMAND bash ${A2A_GPU_RUN} --sim ${CMAKE_BINARY_DIR}
             --out ${CMAKE_BINARY_DIR}/tests/gpu-sim --timeout 60)
    set_tests_properties(gpu.programs-sim PROPERTIES TIMEOUT 400 SKIP_RETURN_CODE 77 LABELS gpu
      RUN_SERIAL TRUE)
  endif()
  set_tests_properties(gpu.script-args gpu.script-skip PROPERTIES TIMEOUT 60 LABELS gpu)
  set_tests_properties(gpu.compile PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS gpu)
endif()
