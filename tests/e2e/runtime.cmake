# tests/e2e/runtime.cmake - end-to-end tests of the process runtime
# (ctest -R '^rt\.'): options, the warnings log, the exit policy, fork, and
# transparency with the real CUDA/NCCL libraries. The unit suites of the
# runtime's pure modules are tests/unit/test_options.c, test_log_checks.c
# and test_log_format.c.

find_package(Python3 COMPONENTS Interpreter QUIET)
set(A2A_RT_TEST_DIR ${CMAKE_BINARY_DIR}/tests/rt)

# The real libraries, when installed (shim.cmake looks for them too).
find_library(A2A_RT_REAL_NCCL NAMES libnccl.so.2 nccl
  HINTS ${CUDAToolkit_LIBRARY_DIR} ${NCCL_HOME}/lib ENV NCCL_HOME PATHS /usr/local/cuda/lib64)
find_library(A2A_RT_REAL_CUDART NAMES libcudart.so.13 cudart
  HINTS ${CUDAToolkit_LIBRARY_DIR} PATHS /usr/local/cuda/lib64)

function(a2a_rt_program name)
  add_executable(${name} ${ARGN})
  target_include_directories(${name} PRIVATE ${A2A_CUDA_INCLUDE} ${A2A_NCCL_INCLUDE}
                             ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${name} PRIVATE -g -O1 -fno-omit-frame-pointer)
  target_link_libraries(${name} PRIVATE Threads::Threads)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${A2A_RT_TEST_DIR})
  add_dependencies(${name} a2acheck)
endfunction()

# The DWARF unit test reads its own line tables: -g whatever the build type.
if(TARGET test_log_dwarf)
  target_compile_options(test_log_dwarf PRIVATE -g)
endif()

# ---- transparency and A2ACHECK_DISABLE, with the real libraries ----------
a2a_rt_program(rt_real ${CMAKE_CURRENT_LIST_DIR}/rt_real.c)
if(A2A_RT_REAL_NCCL AND A2A_RT_REAL_CUDART)
  target_link_libraries(rt_real PRIVATE ${A2A_RT_REAL_NCCL} ${A2A_RT_REAL_CUDART})
  set(A2A_RT_REAL_MODE expect-real)
else()
  target_link_libraries(rt_real PRIVATE a2asim_nccl a2asim_cudart)
  set(A2A_RT_REAL_MODE sim)
endif()
add_test(NAME rt.real_transparent
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/rt_real.sh $<TARGET_FILE:rt_real>
                 $<TARGET_FILE:a2acheck> ${A2A_RT_TEST_DIR}/real ${A2A_RT_REAL_MODE})
set_tests_properties(rt.real_transparent PROPERTIES TIMEOUT 200 LABELS rt)

# ---- findings, log files, exit policy (on the simulator) ----------------
a2a_rt_program(rt_group_unbalanced ${CMAKE_CURRENT_LIST_DIR}/rt_group_unbalanced.c)
target_link_libraries(rt_group_unbalanced PRIVATE a2asim_nccl a2asim_cudart)
a2a_rt_program(rt_fork ${CMAKE_CURRENT_LIST_DIR}/rt_fork.c)
target_link_libraries(rt_fork PRIVATE a2asim_nccl a2asim_cudart)
a2a_rt_program(rt_last_error ${CMAKE_CURRENT_LIST_DIR}/rt_last_error.c)
target_link_libraries(rt_last_error PRIVATE a2asim_nccl a2asim_cudart)
a2a_rt_program(rt_threads ${CMAKE_CURRENT_LIST_DIR}/rt_threads.c)
target_link_libraries(rt_threads PRIVATE a2asim_nccl a2asim_cudart ${CMAKE_DL_LIBS})
add_library(rt_stall_sites SHARED ${CMAKE_CURRENT_LIST_DIR}/rt_stall_sites.c)
target_include_directories(rt_stall_sites PRIVATE ${A2A_NCCL_INCLUDE})
target_link_libraries(rt_stall_sites PRIVATE a2asim_nccl)
set_target_properties(rt_stall_sites PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${A2A_RT_TEST_DIR})
add_dependencies(rt_threads rt_stall_sites)

add_library(rt_static_nccl SHARED ${CMAKE_CURRENT_LIST_DIR}/rt_static_nccl.c)
target_link_options(rt_static_nccl PRIVATE -Wl,-Bsymbolic)
set_target_properties(rt_static_nccl PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${A2A_RT_TEST_DIR})
a2a_rt_program(rt_not_intercepting ${CMAKE_CURRENT_LIST_DIR}/rt_not_intercepting.c)
target_link_libraries(rt_not_intercepting PRIVATE a2asim_cudart ${CMAKE_DL_LIBS})
add_dependencies(rt_not_intercepting a2asim_nccl rt_static_nccl)

if(Python3_Interpreter_FOUND)
  set(A2A_RT_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/rt_check.py)
  foreach(case group repeat failon badoption unwritable checks suppress optranges help rank
               logdir)
    add_test(NAME rt.${case}
             COMMAND ${A2A_RT_CHECK} ${case} --shim $<TARGET_FILE:a2acheck>
                     --prog $<TARGET_FILE:rt_group_unbalanced> --work ${A2A_RT_TEST_DIR}/${case})
  endforeach()
  add_test(NAME rt.fork
           COMMAND ${A2A_RT_CHECK} fork --shim $<TARGET_FILE:a2acheck>
                   --prog $<TARGET_FILE:rt_fork> --work ${A2A_RT_TEST_DIR}/fork)
  add_test(NAME rt.threads
           COMMAND ${A2A_RT_CHECK} threads --shim $<TARGET_FILE:a2acheck>
                   --prog $<TARGET_FILE:rt_threads> --work ${A2A_RT_TEST_DIR}/threads)
  add_test(NAME rt.threads_stall
           COMMAND ${A2A_RT_CHECK} stall --shim $<TARGET_FILE:a2acheck>
                   --prog $<TARGET_FILE:rt_threads> --arg $<TARGET_FILE:rt_stall_sites>
                   --work ${A2A_RT_TEST_DIR}/stall)
  add_test(NAME rt.not_intercepting_dlsym
           COMMAND ${A2A_RT_CHECK} dlsym --shim $<TARGET_FILE:a2acheck>
                   --prog $<TARGET_FILE:rt_not_intercepting> --arg $<TARGET_FILE:a2asim_nccl>
                   --work ${A2A_RT_TEST_DIR}/dlsym)
  add_test(NAME rt.not_intercepting_static
           COMMAND ${A2A_RT_CHECK} static --shim $<TARGET_FILE:a2acheck>
                   --prog $<TARGET_FILE:rt_not_intercepting> --arg $<TARGET_FILE:rt_static_nccl>
                   --work ${A2A_RT_TEST_DIR}/static)
  add_test(NAME rt.last_error
           COMMAND ${A2A_RT_CHECK} lasterror --shim $<TARGET_FILE:a2acheck>
                   --prog $<TARGET_FILE:rt_last_error> --work ${A2A_RT_TEST_DIR}/last_error)
  add_test(NAME rt.unresolved
           COMMAND ${A2A_RT_CHECK} unresolved --shim $<TARGET_FILE:a2acheck>
                   --prog $<TARGET_FILE:rt_not_intercepting> --work ${A2A_RT_TEST_DIR}/unresolved)
  set_tests_properties(rt.group rt.repeat rt.failon rt.badoption rt.unwritable rt.checks
                       rt.help rt.rank rt.logdir rt.fork rt.threads rt.threads_stall rt.not_intercepting_dlsym rt.not_intercepting_static rt.unresolved
                       rt.last_error
                       PROPERTIES TIMEOUT 200 LABELS rt)
endif()

# ---- README.md's options table matches the library's ---------------------
if(Python3_Interpreter_FOUND AND EXISTS ${PROJECT_SOURCE_DIR}/README.md)
  add_test(NAME rt.readme_options
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/rt_readme_options.py
                   --shim $<TARGET_FILE:a2acheck> --prog $<TARGET_FILE:rt_group_unbalanced>
                   --readme ${PROJECT_SOURCE_DIR}/README.md)
  set_tests_properties(rt.readme_options PROPERTIES TIMEOUT 100 LABELS rt)
endif()

# ---- log files: attacks (F5, F6), full disk, run directory per job --------
# rt_logfiles.py; fulldisk and dirowner need root (CI), else they skip with a
# message and fail under CI=true.
if(Python3_Interpreter_FOUND)
  foreach(case modes symlink fifo precreated dirmode dirowner rename fsize fulldisk nocall perjob)
    add_test(NAME rt.logfiles.${case}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/rt_logfiles.py ${case}
                     --shim $<TARGET_FILE:a2acheck> --prog $<TARGET_FILE:rt_group_unbalanced>
                     --cudaprog $<TARGET_FILE:rt_not_intercepting> --tool $<TARGET_FILE:a2acheck_cli>
                     --work ${A2A_RT_TEST_DIR}/logfiles)
    set_tests_properties(rt.logfiles.${case} PROPERTIES TIMEOUT 120 LABELS rt)
  endforeach()
endif()

# ---- scale: 10^7 operations with findings firing constantly --------------
# (about 5 s on the 2-core test machine; figures in docs/reliability.md).
a2a_rt_program(rt_soak ${CMAKE_CURRENT_LIST_DIR}/rt_soak.c)
target_link_libraries(rt_soak PRIVATE a2asim_nccl a2asim_cudart)
if(Python3_Interpreter_FOUND)
  add_test(NAME rt.soak
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/rt_soak.py --ops 10000000
                   --shim $<TARGET_FILE:a2acheck> --prog $<TARGET_FILE:rt_soak>
                   --work ${A2A_RT_TEST_DIR}/soak)
  set_tests_properties(rt.soak PROPERTIES TIMEOUT 300 LABELS "rt;soak")
endif()
