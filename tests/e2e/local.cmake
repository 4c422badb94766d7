# tests/e2e/local.cmake - end-to-end tests of the local analyzers: buffer
# layout (ctest -R e2e.layout) and group/communicator API misuse
# (ctest -R e2e.group). Each program (tests/e2e/layout_*.c, group_*.c) runs
# on the CPU simulator with liba2acheck.so preloaded and a fresh log
# directory; the test then asserts on the JSONL logs with check_jsonl.py:
# the buggy variant yields exactly its check (and nothing else), the fixed
# variant yields no finding at all.

find_package(Python3 COMPONENTS Interpreter QUIET)

if(TARGET a2acheck AND Python3_Interpreter_FOUND)
  set(A2A_LOCAL_CHECK_JSONL ${CMAKE_CURRENT_LIST_DIR}/check_jsonl.py)
  set(A2A_LOCAL_LOGS ${CMAKE_BINARY_DIR}/tests/e2e/logs/local)

  foreach(prog layout_host_memory layout_wrong_device layout_out_of_bounds layout_overlap
               layout_misaligned layout_scattered layout_hidden_copy
               group_unbalanced group_sync_in_group group_device_mismatch
               group_duplicate_device group_use_after_destroy group_concurrent_use
               group_async_error)
    a2a_e2e_program(${prog} ${CMAKE_CURRENT_LIST_DIR}/${prog}.c)
  endforeach()

  # a2a_local_test(NAME PROGRAM ARG [STATUS s] [TIMEOUT t] [ENV VAR=VALUE...]
  #                CHECK check_jsonl-assertions...)
  # Runs PROGRAM ARG under the preloaded tool (LD_PRELOAD for the program
  # only, not for the checker) with the simulator's libraries and a fresh
  # log directory; requires exit status STATUS (default 0), then runs
  # check_jsonl.py on the logs. The test is named e2e.NAME.
  function(a2a_local_test name prog arg)
    cmake_parse_arguments(T "" "STATUS;TIMEOUT" "ENV;CHECK" ${ARGN})
    if(NOT DEFINED T_STATUS)
      set(T_STATUS 0)
    endif()
    if(NOT DEFINED T_TIMEOUT)
      set(T_TIMEOUT 20)
    endif()
    set(dir ${A2A_LOCAL_LOGS}/${name})
    string(REPLACE ";" " " envs "${T_ENV}")
    add_test(NAME e2e.${name}
      COMMAND sh -c [=[
dir=$1 preload=$2 libdir=$3 want=$4 limit=$5 prog=$6 arg=$7 envs=$8; shift 8
rm -rf "$dir" && mkdir -p "$dir" || exit 1
env $envs LD_PRELOAD="$preload" LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  A2ACHECK_LOG_DIR="$dir" NCCL_SOCKET_IFNAME=lo timeout "$limit" "$prog" "$arg"
st=$?
if [ "$st" != "$want" ]; then
  echo "FAIL: exit status $st, expected $want"
  exit 1
fi
exec "$@" "$dir"
]=] sh ${dir} $<TARGET_FILE:a2acheck> ${CMAKE_BINARY_DIR}/sim/lib ${T_STATUS} ${T_TIMEOUT}
        $<TARGET_FILE:${prog}> ${arg} "${envs}"
        ${Python3_EXECUTABLE} ${A2A_LOCAL_CHECK_JSONL} ${T_CHECK})
    math(EXPR ctest_timeout "${T_TIMEOUT} + 20")
    string(REGEX MATCH "^[a-z]+" area ${name})
    set_tests_properties(e2e.${name} PROPERTIES TIMEOUT ${ctest_timeout} LABELS "e2e;${area}")
  endfunction()

  set(TWO_DEVICES ENV A2ASIM_DEVICES=2)

  # ---- layout ----
  a2a_local_test(layout.host-memory.buggy layout_host_memory buggy
    CHECK --expect layout.host-memory:error=1 --only
          --stack-has layout.host-memory=main)
  a2a_local_test(layout.host-memory.fixed layout_host_memory fixed CHECK --none)
  a2a_local_test(layout.wrong-device.buggy layout_wrong_device buggy ${TWO_DEVICES}
    CHECK --expect layout.wrong-device:error=1 --only --contains layout.wrong-device=ncclAllReduce)
  a2a_local_test(layout.wrong-device.fixed layout_wrong_device fixed ${TWO_DEVICES} CHECK --none)
  a2a_local_test(layout.out-of-bounds.buggy layout_out_of_bounds buggy
    CHECK --expect layout.out-of-bounds:error@0 --expect layout.out-of-bounds:error@1 --only
          --stack-has layout.out-of-bounds=rank_main)
  a2a_local_test(layout.out-of-bounds.fixed layout_out_of_bounds fixed CHECK --none)
  a2a_local_test(layout.overlap.buggy layout_overlap buggy
    CHECK --expect layout.overlap:error@0=1 --expect layout.overlap:error@1=1 --only
          --stack-has layout.overlap=rank_main)
  a2a_local_test(layout.overlap.fixed layout_overlap fixed CHECK --none)
  # In-place AllGather with sendbuff == recvbuff: only rank 1 is wrong.
  a2a_local_test(layout.overlap.inplace-buggy layout_overlap inplace-buggy
    CHECK --expect layout.overlap:error@1=1 --only --contains layout.overlap=rank*sendcount)
  a2a_local_test(layout.overlap.inplace-fixed layout_overlap inplace-fixed CHECK --none)
  a2a_local_test(layout.misaligned.buggy layout_misaligned buggy
    CHECK --expect layout.misaligned:warning=1 --only)
  a2a_local_test(layout.misaligned.fixed layout_misaligned fixed CHECK --none)
  a2a_local_test(layout.scattered.buggy layout_scattered buggy
    CHECK --expect layout.scattered:warning@0 --expect layout.scattered:warning@1
          --expect layout.scattered:warning@2 --only)
  a2a_local_test(layout.scattered.fixed layout_scattered fixed CHECK --none)
  a2a_local_test(layout.hidden-copy.buggy layout_hidden_copy buggy
    CHECK --expect layout.hidden-copy:info=1 --only --contains layout.hidden-copy=cudaMemcpyAsync
          --contains layout.hidden-copy=copy_ms)
  a2a_local_test(layout.hidden-copy.kernel layout_hidden_copy kernel
    CHECK --expect layout.hidden-copy:info=1 --only --contains layout.hidden-copy=direct_copy
          --contains layout.hidden-copy=copy_ms)
  a2a_local_test(layout.hidden-copy.fixed layout_hidden_copy fixed CHECK --none)

  # ---- group ----
  a2a_local_test(group.unbalanced.extra-end group_unbalanced extra-end
    CHECK --expect group.unbalanced:error=1 --only --stack-has group.unbalanced=main)
  a2a_local_test(group.unbalanced.blocking group_unbalanced blocking
    CHECK --expect group.unbalanced:error=1 --only
          --contains group.unbalanced=cudaStreamSynchronize)
  a2a_local_test(group.unbalanced.open-exit group_unbalanced open-exit
    CHECK --expect group.unbalanced:error=1 --only --contains "group.unbalanced=exits"
          --stack-has group.unbalanced=main)
  a2a_local_test(group.unbalanced.fixed group_unbalanced fixed CHECK --none)
  a2a_local_test(group.sync-in-group.buggy group_sync_in_group buggy
    CHECK --expect group.sync-in-group:error@0 --expect group.sync-in-group:error@1 --only
          --stack-has group.sync-in-group=rank_main)
  a2a_local_test(group.sync-in-group.fixed group_sync_in_group fixed CHECK --none)
  a2a_local_test(group.device-mismatch.buggy group_device_mismatch buggy ${TWO_DEVICES}
    CHECK --expect group.device-mismatch:error@0=1 --expect group.device-mismatch:error@1=1 --only
          --stack-has group.device-mismatch=rank_main)
  a2a_local_test(group.device-mismatch.fixed group_device_mismatch fixed ${TWO_DEVICES}
    CHECK --none)
  a2a_local_test(group.duplicate-device.buggy group_duplicate_device buggy ${TWO_DEVICES}
    CHECK --expect group.duplicate-device:error --only
          --stack-has group.duplicate-device=rank_thread)
  a2a_local_test(group.duplicate-device.fixed group_duplicate_device fixed ${TWO_DEVICES}
    CHECK --none)
  a2a_local_test(group.use-after-destroy.buggy group_use_after_destroy buggy
    CHECK --expect group.use-after-destroy:error=1 --only
          --stack-has group.use-after-destroy=main)
  a2a_local_test(group.use-after-destroy.fixed group_use_after_destroy fixed CHECK --none)
  # ncclCommCount and ncclCommGetAsyncError after the destroy: one finding
  # per call site (the queries' hot wrappers).
  a2a_local_test(group.use-after-destroy.query group_use_after_destroy query
    CHECK --expect group.use-after-destroy:error=2 --only
          --stack-has group.use-after-destroy=main)
  # The queries' quiet path (no event for an active communicator the
  # thread's memo holds) against the reference: queries from one site
  # before the end and after it, on the thread that ended the
  # communicator or on another; one finding, each query after the end
  # counted; none after ncclCommFinalize; none with the check off.
  a2a_local_test(group.use-after-destroy.loop-destroy group_use_after_destroy loop-destroy
    CHECK --expect group.use-after-destroy:error=1 --only --occurrences group.use-after-destroy=3
          --stack-has group.use-after-destroy=count_queries
          --contains group.use-after-destroy=ncclCommCount
          --contains "group.use-after-destroy=already destroyed")
  a2a_local_test(group.use-after-destroy.loop-abort group_use_after_destroy loop-abort
    CHECK --expect group.use-after-destroy:error=1 --only --occurrences group.use-after-destroy=3
          --contains "group.use-after-destroy=already aborted")
  a2a_local_test(group.use-after-destroy.loop-finalize group_use_after_destroy loop-finalize
    CHECK --none)
  a2a_local_test(group.use-after-destroy.threads group_use_after_destroy threads
    CHECK --expect group.use-after-destroy:error=1 --only --occurrences group.use-after-destroy=3
          --stack-has group.use-after-destroy=query_thread)
  a2a_local_test(group.use-after-destroy.check-off group_use_after_destroy loop-destroy
    ENV A2ACHECK_CHECKS=all,-group.use-after-destroy CHECK --none)
  a2a_local_test(group.concurrent-use.buggy group_concurrent_use buggy
    CHECK --expect group.concurrent-use:error=1 --only --stack-has group.concurrent-use=thread_b)
  a2a_local_test(group.concurrent-use.fixed group_concurrent_use fixed CHECK --none)
  # (The program makes its async error by joining rank 0 of one id twice:
  # the coordinator says so, group.init-mismatch, since non-blocking inits
  # register at their call.)
  a2a_local_test(group.async-error.buggy group_async_error buggy
    CHECK --expect group.async-error:error=1 --expect group.init-mismatch:error
          --contains "group.init-mismatch=rank 0 was created twice" --only
          --stack-has group.async-error=main)
  a2a_local_test(group.async-error.fixed group_async_error fixed
    CHECK --expect group.init-mismatch:error --only)
endif()
