# tests/e2e/xrank.cmake - end-to-end tests of cross-rank checking
# (ctest -R e2e.xrank): xrank_scenarios SCENARIO runs ranks as processes
# forked by a parent that created the ncclUniqueId, with liba2acheck.so
# preloaded on the simulator; xrank_check.py asserts on the per-rank exit
# statuses and times the program prints and on the per-rank JSONL logs.
find_package(Python3 COMPONENTS Interpreter QUIET)

if(TARGET a2acheck AND Python3_Interpreter_FOUND)
  a2a_e2e_program(xrank_scenarios ${CMAKE_CURRENT_LIST_DIR}/xrank_scenarios.c)
  set(A2A_XRANK_LOGS ${CMAKE_BINARY_DIR}/tests/e2e/logs/xrank)

  # a2a_xrank_test(NAME TIMEOUT "SCENARIO ARGS" checker-args...)
  function(a2a_xrank_test name timeout args)
    add_test(NAME e2e.xrank.${name}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/xrank_check.py
        --dir ${A2A_XRANK_LOGS}/${name} --preload $<TARGET_FILE:a2acheck>
        --libdir ${CMAKE_BINARY_DIR}/sim/lib --limit ${timeout}
        --prog $<TARGET_FILE:xrank_scenarios> --args "${args}" ${ARGN})
    math(EXPR ctest_timeout "${timeout} + 30")
    set_tests_properties(e2e.xrank.${name} PROPERTIES TIMEOUT ${ctest_timeout} LABELS "e2e;xrank")
  endfunction()

  # Rank 2 receives 1 MiB from rank 1, which sends 4 MiB: the mismatch is in
  # the logs of ranks 1 and 2 with both sizes; the sender hangs and the
  # deadlock ends every stuck rank with 66 within 15 s.
  a2a_xrank_test(p2p_mismatch 60 "p2p_mismatch"
    --status 0,66 --within 15
    --expect "size.p2p-mismatch@1" --expect "size.p2p-mismatch@2"
    --contains "size.p2p-mismatch=rank 1 sends 4194304 B"
    --contains "size.p2p-mismatch=rank 2 receives 1048576 B"
    --if-any-status 66 --expect group.deadlock)
  # The same kind of mismatch, small enough not to hang, and every rank ends
  # with _exit() right after ncclCommDestroy (no exit hook runs): the wait
  # at ncclCommDestroy still gets the verdict into the logs of ranks 1 and 2.
  a2a_xrank_test(p2p_exit 60 "p2p_exit" --status 0 --within 15
    --expect "size.p2p-mismatch@1" --expect "size.p2p-mismatch@2"
    --contains "size.p2p-mismatch=rank 1 sends 256 B"
    --contains "size.p2p-mismatch=rank 2 receives 192 B")
  # Rank 3 skips one all-to-all, then ends: ranks 0-2 hang in the last one;
  # rank 3 is named as the missing rank and they exit 66 within 15 s.
  a2a_xrank_test(skip 60 "skip"
    --rank-status 0=66 --rank-status 1=66 --rank-status 2=66 --rank-status 3=0 --within 15
    --expect "group.deadlock@0" --expect "group.deadlock@1" --expect "group.deadlock@2"
    --contains "group.deadlock=rank 3 is the missing rank")
  # A2ACHECK_ON_DEADLOCK=wait: the deadlock is reported, the ranks stay alive
  # (the program kills them at its 8 s limit).
  a2a_xrank_test(deadlock_wait 60 "order" --env A2ACHECK_ON_DEADLOCK=wait
    --env XRANK_WAIT_LIMIT=8 --killed-ok --expect "group.deadlock@0" --expect "group.deadlock@1")
  # A hostile local process sends malformed, unauthenticated, oversized and
  # stalled messages to the coordinator first: it still finds the deadlock.
  a2a_xrank_test(garbage 60 "garbage" --rank-status 0=66 --rank-status 1=66 --within 15
    --expect "group.deadlock@0" --expect "group.deadlock@1")
  # The same skip, but rank 3 then sleeps outside CUDA: it might still post,
  # so no group.deadlock; A2ACHECK_HANG_TIMEOUT=4 reports group.hang to the
  # waiting ranks and to the awaited one (the job must end: exit 66 all).
  a2a_xrank_test(hang 60 "hang" --env A2ACHECK_HANG_TIMEOUT=4
    --rank-status 0=66 --rank-status 1=66 --rank-status 2=66 --rank-status 3=66
    --contains "group.hang=waits for rank 3 to post its receive #10"
    --after 4 --within 12
    --expect "group.hang@0" --expect "group.hang@2" --forbid group.deadlock)
  # Two communicators in opposite orders on one stream by two ranks.
  a2a_xrank_test(order 60 "order"
    --rank-status 0=66 --rank-status 1=66 --within 15
    --expect "group.deadlock@0" --expect "group.deadlock@1" --contains-two-comms group.deadlock)
  # One rank's AllReduce count differs: size.collective-mismatch; the
  # simulator hangs like NCCL and the known mismatch ends it.
  a2a_xrank_test(coll_count 60 "coll_count"
    --status 0,66 --within 15
    --expect "size.collective-mismatch@2"
    --contains "size.collective-mismatch=count 1000")
  # Ranks disagree on nranks at init: group.init-mismatch before the init
  # hangs; the ranks stuck in it end with 66.
  a2a_xrank_test(init_nranks 60 "init_nranks" --status 0,1,66 --within 15
    --expect group.init-mismatch --contains "group.init-mismatch=nranks=3"
    --if-any-status 66 --expect group.deadlock)
  # ---- real clients' patterns (issue 11) ----
  # Ranks 0-1 call ncclAlltoAll (equal splits), ranks 2-3 a grouped
  # send/recv loop; rank 2 receives less from rank 0 once: matched pair by
  # pair as NCCL does, the mismatch names both operations and sizes.
  a2a_xrank_test(a2a_mixed 60 "a2a_mixed" --status 0
    --expect "size.p2p-mismatch@0" --expect "size.p2p-mismatch@2"
    --contains "size.p2p-mismatch=rank 0 sends 256 B (64 x float32) to rank 2"
    --contains "size.p2p-mismatch=ncclAlltoAll at"
    --contains "size.p2p-mismatch=rank 2 receives 128 B (32 x float32) from rank 0"
    --contains "size.p2p-mismatch=ncclRecv at" --forbid size.collective-mismatch)
  # nccl-tests alltoall_perf on two ranks against sendrecv_perf on the other
  # two, every rank waiting by polling cudaStreamQuery: a proven deadlock,
  # within the confirmation window, naming the AlltoAll and the polling.
  a2a_xrank_test(a2a_vs_sendrecv 60 "a2a_vs_sendrecv"
    --status 66 --within 15
    --expect "group.deadlock@0" --expect "group.deadlock@1" --expect "group.deadlock@2"
    --expect "group.deadlock@3"
    --contains "group.deadlock=ncclAlltoAll(count 64, float32) as sends and receives"
    --contains "group.deadlock=cudaStreamQuery polling loop")
  # Every rank in ncclAlltoAll, one count differs: the collective-level message.
  a2a_xrank_test(a2a_count 60 "a2a_count" --status 0,66
    --expect "size.collective-mismatch@2"
    --contains "size.collective-mismatch=ncclAlltoAll on communicator"
    --contains "size.collective-mismatch=ncclAlltoAll(count 48, float32)"
    --forbid size.p2p-mismatch)
  # The same bytes with another dtype in an AllReduce: the dtype mismatch it
  # is (nothing hangs), not "a different count".
  a2a_xrank_test(coll_dtype 60 "coll_dtype" --status 0
    --expect "size.dtype-mismatch@2" --forbid size.collective-mismatch
    --contains "size.dtype-mismatch=a different dtype at the same bytes")
  # `skip` with polling waits (nccl-tests' loop): the deadlock is proven
  # within A2ACHECK_HANG_CONFIRM, not at A2ACHECK_HANG_TIMEOUT.
  a2a_xrank_test(poll_skip 60 "poll_skip"
    --rank-status 0=66 --rank-status 1=66 --rank-status 2=66 --rank-status 3=0 --within 15
    --expect "group.deadlock@0" --expect "group.deadlock@1" --expect "group.deadlock@2"
    --contains "group.deadlock=rank 3 is the missing rank"
    --contains "group.deadlock=cudaStreamQuery polling loop")
  # Its negative control: a correct polling run in which one rank is slow
  # and a watchdog thread polls events: no finding.
  a2a_xrank_test(poll_slow 90 "poll_slow" --status 0 --none)
  # Ranks wait in host code, not in CUDA: no proof possible; group.stall says
  # early who waits for whom, group.hang ends the waiting ranks later.
  a2a_xrank_test(host_stuck 60 "host_stuck"
    --env A2ACHECK_STALL_WARNING=3 --env A2ACHECK_HANG_TIMEOUT=8
    --rank-status 0=66 --rank-status 1=66 --rank-status 2=66 --rank-status 3=0 --after 8
    --expect "group.stall@0" --expect "group.hang@0" --earlier "group.stall<group.hang"
    --contains "group.stall=for rank 3 to post its collective #13"
    --contains "group.hang=rank 3 (global rank 3"
    --contains "group.hang=posted 12 collectives"
    --contains "group.hang=in no CUDA/NCCL wait"
    --forbid group.deadlock)
  # A correct MoE-like run: zero findings, exit 0.
  a2a_xrank_test(moe_clean 90 "moe 1000" --status 0 --none)
  # Its negative control: one count differs on a split comm at step 19.
  a2a_xrank_test(moe_badhalf 60 "moe 100 badhalf" --status 0,66 --within 15
    --expect "size.collective-mismatch@5" --contains "size.collective-mismatch=count 32")
  # The id's creator (the coordinator) is killed mid-run: ranks continue.
  a2a_xrank_test(coord_kill 90 "coord_kill" --status 0 --only-no-coordinator)
  # torchrun-like: rank 0 creates the id and hosts the coordinator.
  a2a_xrank_test(rank0_host_skip 60 "skip" --env XRANK_RANK0_ID=1
    --rank-status 0=66 --rank-status 1=66 --rank-status 2=66 --rank-status 3=0 --within 15
    --expect "group.deadlock@1" --contains "group.deadlock=rank 3 is the missing rank")
  a2a_xrank_test(rank0_host_clean 60 "moe 300" --env XRANK_RANK0_ID=1 --status 0 --none)
  # Ids without a coordinator record: A2ACHECK_COORDINATOR=host:port (the
  # first rank that binds it hosts it) still finds the deadlock ...
  a2a_xrank_test(fallback_order 60 "order" --env XRANK_STRIP_ID=1
    --env "A2ACHECK_COORDINATOR=127.0.0.1:{free_port}"
    --rank-status 0=66 --rank-status 1=66 --within 15 --expect "group.deadlock@0")
  # ... and without it cross-rank checks are off, said once per comm.
  a2a_xrank_test(no_coordinator 60 "moe 100" --env XRANK_STRIP_ID=1 --status 0
    --only-no-coordinator)
  # One rank 30 s outside CUDA (busy, then sleeping): not a deadlock.
  a2a_xrank_test(moe_busy 80 "moe 1000 busy" --status 0 --none)
  a2a_xrank_test(moe_sleep 80 "moe 1000 sleep" --status 0 --none)
  set_tests_properties(e2e.xrank.moe_busy e2e.xrank.moe_sleep PROPERTIES LABELS "e2e;xrank;slow")
endif()
