# tests/e2e/shim.cmake - tests of the interposition layer (ctest -R shim\.
# and unit.test_resolve): what liba2acheck.so exports and links, and how it
# finds the real NCCL / CUDA runtime (including behind dlopen(RTLD_LOCAL)).

find_package(Python3 COMPONENTS Interpreter QUIET)
set(A2A_SHIM_TEST_DIR ${CMAKE_BINARY_DIR}/tests/shim)

# The real libraries, when installed (the acceptance tests use them; on a
# machine without them the simulator's libraries stand in).
find_library(A2A_REAL_NCCL_LIB NAMES libnccl.so.2 nccl
  HINTS ${CUDAToolkit_LIBRARY_DIR} ${NCCL_HOME}/lib ENV NCCL_HOME PATHS /usr/local/cuda/lib64)
find_library(A2A_REAL_CUDART_LIB NAMES libcudart.so.13 cudart
  HINTS ${CUDAToolkit_LIBRARY_DIR} PATHS /usr/local/cuda/lib64)

# ---- exports and DT_NEEDED ---------------------------------------------
if(Python3_Interpreter_FOUND)
  set(A2A_SHIM_EXPORTS ${CMAKE_CURRENT_LIST_DIR}/shim_exports.py)
  add_test(NAME shim.exports_nccl COMMAND ${Python3_EXECUTABLE} ${A2A_SHIM_EXPORTS} nccl
           $<TARGET_FILE:a2acheck> --nccl-h ${A2A_NCCL_INCLUDE}/nccl.h)
  if(A2A_REAL_CUDART_LIB)
    add_test(NAME shim.exports_cuda COMMAND ${Python3_EXECUTABLE} ${A2A_SHIM_EXPORTS} cuda
             $<TARGET_FILE:a2acheck> --cudart ${A2A_REAL_CUDART_LIB})
  else()
    add_test(NAME shim.exports_cuda COMMAND ${Python3_EXECUTABLE} ${A2A_SHIM_EXPORTS} cuda
             $<TARGET_FILE:a2acheck>)
  endif()
  add_test(NAME shim.exports_only COMMAND ${Python3_EXECUTABLE} ${A2A_SHIM_EXPORTS} only
           $<TARGET_FILE:a2acheck>)
  add_test(NAME shim.needed COMMAND ${Python3_EXECUTABLE} ${A2A_SHIM_EXPORTS} needed
           $<TARGET_FILE:a2acheck>)
  set_tests_properties(shim.exports_nccl shim.exports_cuda shim.exports_only shim.needed
                       PROPERTIES TIMEOUT 60 LABELS shim)
endif()

# ---- fake libraries for the resolution unit test -------------------------
# Loaded with dlopen(RTLD_LOCAL) by tests/unit/test_resolve.c.
function(a2a_shim_fake name src outdir)
  add_library(${name} SHARED ${src})
  set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${outdir})
  target_compile_options(${name} PRIVATE -Wno-unused-parameter)
endfunction()
a2a_shim_fake(a2a_fake_nccl ${CMAKE_CURRENT_LIST_DIR}/shim_fake_nccl.c ${A2A_SHIM_TEST_DIR}/fake)
# The same fake under the soname libnccl.so.2, in its own directory so it
# never shadows the simulator's or the real library.
a2a_shim_fake(a2a_fake_nccl_soname ${CMAKE_CURRENT_LIST_DIR}/shim_fake_nccl.c
              ${A2A_SHIM_TEST_DIR}/fake-soname)
set_target_properties(a2a_fake_nccl_soname PROPERTIES OUTPUT_NAME nccl SOVERSION 2 VERSION 2.0.0)
a2a_shim_fake(a2a_fake_cudart ${CMAKE_CURRENT_LIST_DIR}/shim_fake_cudart.c ${A2A_SHIM_TEST_DIR}/fake)
a2a_shim_fake(a2a_fake_cudart_decoy ${CMAKE_CURRENT_LIST_DIR}/shim_fake_cudart.c
              ${A2A_SHIM_TEST_DIR}/fake)
target_compile_definitions(a2a_fake_cudart_decoy PRIVATE A2A_FAKE_DECOY)

if(TARGET test_resolve)
  # test_resolve.c links shim/resolve.c itself (not the preloaded library).
  target_sources(test_resolve PRIVATE ${PROJECT_SOURCE_DIR}/shim/resolve.c)
  target_include_directories(test_resolve PRIVATE ${PROJECT_SOURCE_DIR}/shim
                             ${A2A_CUDA_INCLUDE} ${A2A_NCCL_INCLUDE})
  target_link_libraries(test_resolve PRIVATE ${CMAKE_DL_LIBS})
  target_compile_definitions(test_resolve PRIVATE
    A2A_FAKE_NCCL_SCAN="$<TARGET_FILE:a2a_fake_nccl>"
    A2A_FAKE_NCCL_SONAME="$<TARGET_FILE:a2a_fake_nccl_soname>"
    A2A_FAKE_CUDART="$<TARGET_FILE:a2a_fake_cudart>"
    A2A_FAKE_CUDART_DECOY="$<TARGET_FILE:a2a_fake_cudart_decoy>")
  add_dependencies(test_resolve a2a_fake_nccl a2a_fake_nccl_soname a2a_fake_cudart
                   a2a_fake_cudart_decoy)
  set_tests_properties(unit.test_resolve PROPERTIES TIMEOUT 60)
endif()

# ---- RTLD_LOCAL fallback, end to end -------------------------------------
# A "Python extension" linked to NCCL and the CUDA runtime, loaded with
# dlopen(RTLD_LOCAL): the real libraries when installed, else the simulator.
add_library(shim_local_helper SHARED ${CMAKE_CURRENT_LIST_DIR}/shim_local_helper.c)
target_include_directories(shim_local_helper PRIVATE ${A2A_CUDA_INCLUDE} ${A2A_NCCL_INCLUDE})
set_target_properties(shim_local_helper PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${A2A_SHIM_TEST_DIR})
if(A2A_REAL_NCCL_LIB AND A2A_REAL_CUDART_LIB)
  target_link_libraries(shim_local_helper PRIVATE ${A2A_REAL_NCCL_LIB} ${A2A_REAL_CUDART_LIB})
else()
  target_link_libraries(shim_local_helper PRIVATE a2asim_nccl a2asim_cudart)
endif()
add_executable(shim_local_main ${CMAKE_CURRENT_LIST_DIR}/shim_local_main.c)
target_link_libraries(shim_local_main PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(shim_local_main PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${A2A_SHIM_TEST_DIR})
add_dependencies(shim_local_main shim_local_helper a2acheck)
add_test(NAME shim.rtld_local_fallback
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/shim_local.sh local $<TARGET_FILE:shim_local_main>
                 $<TARGET_FILE:shim_local_helper> $<TARGET_FILE:a2acheck>
                 ${A2A_SHIM_TEST_DIR}/rtld_local)
# The same calls with the libraries in the global scope (linked in).
add_executable(shim_direct_main ${CMAKE_CURRENT_LIST_DIR}/shim_direct_main.c)
target_link_libraries(shim_direct_main PRIVATE shim_local_helper)
set_target_properties(shim_direct_main PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${A2A_SHIM_TEST_DIR})
add_dependencies(shim_direct_main a2acheck)
add_test(NAME shim.passthrough_direct
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/shim_local.sh direct $<TARGET_FILE:shim_direct_main>
                 $<TARGET_FILE:shim_local_helper> $<TARGET_FILE:a2acheck>
                 ${A2A_SHIM_TEST_DIR}/direct)
set_tests_properties(shim.rtld_local_fallback shim.passthrough_direct PROPERTIES TIMEOUT 150 LABELS shim)

# ---- the wrappers, against a fake NCCL/CUDA and a fake runtime -------------
# shim_wrap_test links the wrappers and resolve.c with its own a2a_rt_* and
# a2a_dispatch (recording events); it exports its symbols so the fake's PLT
# calls (ncclBcast -> ncclBroadcast) reach the wrappers, as under LD_PRELOAD.
a2a_shim_fake(a2a_fake_wrap ${CMAKE_CURRENT_LIST_DIR}/shim_wrap_fake.c ${A2A_SHIM_TEST_DIR}/fake)
add_executable(shim_wrap_test ${CMAKE_CURRENT_LIST_DIR}/shim_wrap_test.c
               ${PROJECT_SOURCE_DIR}/shim/wrap_nccl.c ${PROJECT_SOURCE_DIR}/shim/wrap_cuda.c
               ${PROJECT_SOURCE_DIR}/shim/resolve.c)
target_include_directories(shim_wrap_test PRIVATE ${PROJECT_SOURCE_DIR}/shim
                           ${PROJECT_SOURCE_DIR}/analyzers ${A2A_CUDA_INCLUDE} ${A2A_NCCL_INCLUDE})
target_link_libraries(shim_wrap_test PRIVATE PkgConfig::CHECK Threads::Threads ${CMAKE_DL_LIBS} m)
set_target_properties(shim_wrap_test PROPERTIES ENABLE_EXPORTS ON
                      RUNTIME_OUTPUT_DIRECTORY ${A2A_SHIM_TEST_DIR})
add_dependencies(shim_wrap_test a2a_fake_wrap)
add_test(NAME shim.wrappers COMMAND shim_wrap_test $<TARGET_FILE:a2a_fake_wrap>)
set_tests_properties(shim.wrappers PROPERTIES TIMEOUT 60 LABELS shim)

# ---- nvcc-built launches (only where nvcc is installed) ---------------------
# Built with nvcc directly (the project does not enable the CUDA language);
# `-cudart shared` because the default static cudart cannot be interposed.
# nvcc is probed once at configure time (it needs a supported host compiler):
# a toolkit that cannot build the test must not break the build.
find_program(A2A_NVCC nvcc HINTS ${CUDAToolkit_BIN_DIR} PATHS /usr/local/cuda/bin)
if(A2A_NVCC AND NOT DEFINED A2A_NVCC_WORKS)
  execute_process(COMMAND ${A2A_NVCC} -cudart shared -o ${CMAKE_BINARY_DIR}/CMakeFiles/a2a_nvcc_probe
                          ${CMAKE_CURRENT_LIST_DIR}/shim_launch.cu
                  RESULT_VARIABLE a2a_nvcc_rc OUTPUT_QUIET ERROR_QUIET TIMEOUT 300)
  if(a2a_nvcc_rc EQUAL 0)
    set(A2A_NVCC_WORKS ON CACHE BOOL "nvcc can build the launch tests")
  else()
    set(A2A_NVCC_WORKS OFF CACHE BOOL "nvcc can build the launch tests")
  endif()
  message(STATUS "a2acheck: nvcc launch tests: ${A2A_NVCC_WORKS}")
endif()
if(A2A_NVCC AND A2A_NVCC_WORKS)
  foreach(variant legacy per-thread)
    set(exe ${A2A_SHIM_TEST_DIR}/shim_launch_${variant})
    add_custom_command(OUTPUT ${exe}
      COMMAND ${A2A_NVCC} -cudart shared --default-stream ${variant}
              -o ${exe} ${CMAKE_CURRENT_LIST_DIR}/shim_launch.cu
      DEPENDS ${CMAKE_CURRENT_LIST_DIR}/shim_launch.cu
      COMMENT "nvcc shim_launch.cu (--default-stream ${variant})" VERBATIM)
    list(APPEND A2A_SHIM_LAUNCH_EXES ${exe})
  endforeach()
  add_custom_target(shim_launch_programs ALL DEPENDS ${A2A_SHIM_LAUNCH_EXES})
  add_test(NAME shim.launch_legacy_stream
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/shim_launch.sh $<TARGET_FILE:a2acheck>
                   ${A2A_SHIM_TEST_DIR}/launch_legacy ${A2A_SHIM_TEST_DIR}/shim_launch_legacy
                   __cudaLaunchKernel cudaLaunchKernel cudaLaunchCooperativeKernel
                   cudaLaunchKernelExC cudaMemcpy cudaGetLastError)
  add_test(NAME shim.launch_per_thread_stream
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/shim_launch.sh $<TARGET_FILE:a2acheck>
                   ${A2A_SHIM_TEST_DIR}/launch_per_thread ${A2A_SHIM_TEST_DIR}/shim_launch_per-thread
                   __cudaLaunchKernel_ptsz cudaLaunchKernel_ptsz cudaLaunchCooperativeKernel_ptsz
                   cudaLaunchKernelExC_ptsz cudaMemcpy_ptds cudaGetLastError)
  set_tests_properties(shim.launch_legacy_stream shim.launch_per_thread_stream
                       PROPERTIES TIMEOUT 120 LABELS shim)
endif()

# ---- invalid arguments: identical behaviour with and without the shim -------
add_executable(shim_invalid ${CMAKE_CURRENT_LIST_DIR}/shim_invalid.c)
target_include_directories(shim_invalid PRIVATE ${A2A_CUDA_INCLUDE} ${A2A_NCCL_INCLUDE})
target_link_libraries(shim_invalid PRIVATE a2asim_nccl a2asim_cudart)
set_target_properties(shim_invalid PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${A2A_SHIM_TEST_DIR})
add_dependencies(shim_invalid a2acheck)
add_test(NAME shim.invalid_args
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/shim_invalid.sh $<TARGET_FILE:shim_invalid>
                 $<TARGET_FILE:a2acheck> ${A2A_SHIM_TEST_DIR}/invalid)
set_tests_properties(shim.invalid_args PROPERTIES TIMEOUT 150 LABELS shim)
