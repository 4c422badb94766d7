# tests/e2e/stream.cmake - end-to-end tests of the stream happens-before
# checks (ctest -R e2e.stream): each program runs on the simulator with
# liba2acheck.so preloaded; the test asserts on the program's exit status
# (0 data right, 3 data wrong: the race did harm) and on the JSONL logs with
# check_jsonl.py. Buggy/fixed pairs: the same program, argument "buggy" or
# "fixed". perf.* findings are ignored: tiny simulated transfers are "slow"
# by design and say nothing about stream ordering. So is the tool-health
# info a2acheck.no-coordinator (the cross-rank side channel closing early at
# exit, which is intermittent and not about the program under test).

find_package(Python3 COMPONENTS Interpreter QUIET)

if(TARGET a2acheck AND Python3_Interpreter_FOUND)
  set(A2A_STREAM_CHECK_JSONL ${CMAKE_CURRENT_LIST_DIR}/check_jsonl.py)
  set(A2A_STREAM_LOGS ${CMAKE_BINARY_DIR}/tests/e2e/logs/stream)

  foreach(prog unsynced_input unsynced_output free_in_flight default_stream alltoall_8rank
               send_reader)
    a2a_e2e_program(stream_${prog} ${CMAKE_CURRENT_LIST_DIR}/stream_${prog}.c)
  endforeach()

  # a2a_stream_test(NAME PROGRAM ARG STATUS TIMEOUT check_jsonl-assertions...)
  # Runs PROGRAM ARG (split at blanks) under the preloaded tool with a fresh log directory,
  # requires exit status STATUS, then runs check_jsonl.py on the logs.
  # LD_PRELOAD is set for the program only (not for the checker).
  function(a2a_stream_test name prog arg status timeout)
    set(dir ${A2A_STREAM_LOGS}/${name})
    add_test(NAME e2e.stream.${name}
      COMMAND sh -c [=[
dir=$1 preload=$2 libdir=$3 want=$4 limit=$5 prog=$6 arg=$7; shift 7
rm -rf "$dir" && mkdir -p "$dir" || exit 1
LD_PRELOAD="$preload" LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  A2ACHECK_LOG_DIR="$dir" NCCL_SOCKET_IFNAME=lo timeout "$limit" "$prog" $arg
st=$?
if [ "$st" != "$want" ]; then
  echo "FAIL: exit status $st, expected $want"
  exit 1
fi
exec "$@" "$dir"
]=] sh ${dir} $<TARGET_FILE:a2acheck> ${CMAKE_BINARY_DIR}/sim/lib ${status} ${timeout}
        $<TARGET_FILE:stream_${prog}> ${arg}
        ${Python3_EXECUTABLE} ${A2A_STREAM_CHECK_JSONL} --ignore "perf.*"
        --ignore a2acheck.no-coordinator ${ARGN})
    math(EXPR ctest_timeout "${timeout} + 30")
    set_tests_properties(e2e.stream.${name} PROPERTIES TIMEOUT ${ctest_timeout} LABELS "e2e;stream")
  endfunction()

  # The race programs: buggy -> wrong data (3) and exactly that check;
  # fixed -> right data (0) and no finding at all.
  a2a_stream_test(unsynced_input_buggy unsynced_input buggy 3 60
    --expect stream.unsynced-input:error --only)
  a2a_stream_test(unsynced_input_fixed unsynced_input fixed 0 60 --none)
  # A fresh cudaMallocAsync block per step, uploaded on the compute stream
  # (every use is a first use: found through the recent-copy ring).
  a2a_stream_test(unsynced_input_fresh_buggy unsynced_input buggy-fresh 3 60
    --expect stream.unsynced-input:error --only)
  a2a_stream_test(unsynced_input_fresh_fixed unsynced_input fixed-fresh 0 60 --none)
  a2a_stream_test(unsynced_output_buggy unsynced_output buggy 3 60
    --expect stream.unsynced-output:error --only)
  a2a_stream_test(unsynced_output_fixed unsynced_output fixed 0 60 --none)
  # QA: a post-processing kernel on the communication stream hid the
  # forgotten wait; an asynchronous copy into pageable memory is a host wait.
  a2a_stream_test(unsynced_output_post_buggy unsynced_output buggy-post 3 60
    --expect stream.unsynced-output:error --only)
  a2a_stream_test(unsynced_output_post_fixed unsynced_output fixed-post 0 60 --none)
  a2a_stream_test(unsynced_output_pageable_fixed unsynced_output fixed-pageable 0 60 --none)
  a2a_stream_test(unsynced_output_registered_buggy unsynced_output buggy-registered 3 60
    --expect stream.unsynced-output:error --only)
  a2a_stream_test(unsynced_output_host_buggy unsynced_output buggy-host 3 60
    --expect stream.unsynced-output:error --contains "stream.unsynced-output=the host" --only)
  a2a_stream_test(unsynced_output_host_fixed unsynced_output fixed-host 0 60 --none)
  a2a_stream_test(free_in_flight_buggy free_in_flight buggy 3 60
    --expect stream.free-in-flight:error --only)
  a2a_stream_test(free_in_flight_fixed free_in_flight fixed 0 60 --none)
  # Not a race: the data is right either way.
  a2a_stream_test(default_stream_buggy default_stream buggy 0 60
    --expect stream.default-stream:warning --only)
  a2a_stream_test(default_stream_fixed default_stream fixed 0 60 --none)
  # 8 ranks, 1,000 grouped all-to-alls, compute + communication streams with
  # proper event edges: zero findings.
  a2a_stream_test(alltoall_8rank_clean alltoall_8rank 1000 0 90 --none)
  # Its negative control: the same program without work.wait(): the checkers
  # read receive buffers too early. (The next step's producer kernel also
  # rewrites the send buffer in flight, which is not reported: a kernel on
  # an in-flight send buffer is presumed to read it.)
  a2a_stream_test(alltoall_8rank_nowait alltoall_8rank "50 nowait" 3 90
    --expect stream.unsynced-output:error --only)
  # A kernel reads the send buffer of an all-to-all in flight (a residual
  # connection reading the MoE input): correct, data verified, no finding.
  a2a_stream_test(send_reader_clean send_reader clean 0 60 --none)
  # The same with the wait forgotten: the residual is right, the receive
  # buffer is read too early (negative control).
  a2a_stream_test(send_reader_nowait send_reader nowait 3 60
    --expect stream.unsynced-output:error --only)
endif()
