# Self-tests of the simulator's NCCL (no shim), ctest names sim.nccl.*.
# Each program runs its ranks as processes or threads; hang tests observe
# the hang with a bounded poll and kill the ranks (PASS = hung as expected).
set(A2ASIM_NCCL_ST ${CMAKE_CURRENT_SOURCE_DIR}/selftest)

add_library(a2asim_nccl_harness STATIC ${A2ASIM_NCCL_ST}/nccl_harness.c)
target_include_directories(a2asim_nccl_harness PUBLIC ${A2ASIM_NCCL_ST}
  ${CMAKE_CURRENT_SOURCE_DIR}/include ${A2A_CUDA_INCLUDE} ${A2A_NCCL_INCLUDE})
target_link_libraries(a2asim_nccl_harness PUBLIC a2asim_cudart a2asim_nccl Threads::Threads m)

foreach(prog nccl_battery nccl_semantics nccl_hang nccl_lifecycle nccl_shm nccl_graph nccl_bounds)
  if(EXISTS ${A2ASIM_NCCL_ST}/${prog}.c)
    add_executable(${prog} ${A2ASIM_NCCL_ST}/${prog}.c)
    target_link_libraries(${prog} PRIVATE a2asim_nccl_harness)
    set_target_properties(${prog} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/sim)
  endif()
endforeach()

function(a2asim_nccl_test name timeout)
  add_test(NAME sim.nccl.${name} COMMAND ${ARGN})
  set_tests_properties(sim.nccl.${name} PROPERTIES TIMEOUT ${timeout} LABELS "sim;sim.nccl"
    ENVIRONMENT "LD_LIBRARY_PATH=${A2ASIM_LIBDIR};A2ASIM_DEVICES=8")
endfunction()

if(TARGET nccl_battery)
  foreach(n 2 4 8)
    a2asim_nccl_test(proc${n} 60 nccl_battery proc ${n})
    a2asim_nccl_test(thread${n} 60 nccl_battery thread ${n})
  endforeach()
  a2asim_nccl_test(proc4_large 60 nccl_battery proc 4 large)
  a2asim_nccl_test(group4 60 nccl_battery group 4)
  a2asim_nccl_test(initall3 60 nccl_battery initall 3)
endif()

if(TARGET nccl_semantics)
  a2asim_nccl_test(p2p_semantics 60 nccl_semantics)
endif()

if(TARGET nccl_hang)
  foreach(sc missing_recv wrong_order mismatch missing_rank dead_rank abort)
    a2asim_nccl_test(hang_${sc} 30 nccl_hang ${sc})
  endforeach()
endif()

if(TARGET nccl_lifecycle)
  foreach(t nonblocking dupgpu shrink scalable misc memalloc singlethread singlethread_legacy cost timeline)
    a2asim_nccl_test(lifecycle_${t} 30 nccl_lifecycle ${t})
  endforeach()
  # timing bounds: keep other tests off the 2 cores meanwhile
  set_tests_properties(sim.nccl.lifecycle_cost PROPERTIES RUN_SERIAL TRUE)
endif()

if(TARGET nccl_shm)
  a2asim_nccl_test(shm_cleanup 30 nccl_shm)
endif()

# Export rule (docs/simulator-nccl.md): exactly NCCL 2.30.7's dynamic
# symbols, and (exports_real) everything the installed NCCL exports.
a2asim_nccl_test(exports 30 sh ${A2ASIM_NCCL_ST}/nccl_exports.sh $<TARGET_FILE:a2asim_nccl>
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/exports-2.30.7.txt)
find_file(A2ASIM_REAL_NCCL libnccl.so.2 HINTS ${A2A_NCCL_INCLUDE}/../lib64 ${A2A_NCCL_INCLUDE}/../lib
  /usr/local/cuda/lib64 NO_CACHE)
if(NOT A2ASIM_REAL_NCCL)
  set(A2ASIM_REAL_NCCL ${A2A_NCCL_INCLUDE}/../lib64/libnccl.so.2)
endif()
a2asim_nccl_test(exports_real 30 sh ${A2ASIM_NCCL_ST}/nccl_exports.sh $<TARGET_FILE:a2asim_nccl>
  ${CMAKE_CURRENT_SOURCE_DIR}/nccl/exports-2.30.7.txt ${A2ASIM_REAL_NCCL})
set_tests_properties(sim.nccl.exports_real PROPERTIES SKIP_RETURN_CODE 77)

# NCCL work captured into CUDA graphs (nccl_graph.c).
if(TARGET nccl_graph)
  a2asim_nccl_test(graph_replay_proc4 60 nccl_graph replay proc 4)
  a2asim_nccl_test(graph_replay_thread3 60 nccl_graph replay thread 3)
  a2asim_nccl_test(graph_mixed_proc4 60 nccl_graph mixed proc 4)
  a2asim_nccl_test(graph_mixed_thread2 60 nccl_graph mixed thread 2)
  a2asim_nccl_test(graph_single4 60 nccl_graph single 4)
  a2asim_nccl_test(graph_forkjoin_proc2 60 nccl_graph forkjoin proc 2)
  a2asim_nccl_test(graph_forkjoin_thread3 60 nccl_graph forkjoin thread 3)
  a2asim_nccl_test(graph_hang 30 nccl_graph hang)
  a2asim_nccl_test(graph_errors 30 nccl_graph errors)
endif()

# Out-of-bounds buffers: never touch memory past the allocation (nccl_bounds.c).
if(TARGET nccl_bounds)
  a2asim_nccl_test(bounds_proc 30 nccl_bounds proc)
  a2asim_nccl_test(bounds_thread 30 nccl_bounds thread)
endif()

# The 2.29/2.30 API surface and the unmodelled table (nccl_api230.c).
if(EXISTS ${A2ASIM_NCCL_ST}/nccl_api230.c)
  add_executable(nccl_api230 ${A2ASIM_NCCL_ST}/nccl_api230.c)
  target_include_directories(nccl_api230 PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/nccl)
  target_link_libraries(nccl_api230 PRIVATE a2asim_nccl_harness)
  set_target_properties(nccl_api230 PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/sim)
  a2asim_nccl_test(api230 30 nccl_api230)
endif()
