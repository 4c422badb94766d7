# Self-tests of the simulator's CUDA runtime, without the shim: one Check
# suite per tests/sim/selftest/cudart_*.c, run by ctest as sim.cudart.<name>.
# Each program is linked to the simulator's libcudart.so.13 only.
file(GLOB A2ASIM_CUDART_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cudart_*.c)
foreach(src ${A2ASIM_CUDART_TESTS})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^cudart_" "" short ${name})
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${A2A_CUDA_INCLUDE} ${CMAKE_CURRENT_LIST_DIR}/../include
                             ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(${name} PRIVATE a2asim_cudart PkgConfig::CHECK Threads::Threads m ${CMAKE_DL_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/sim)
  add_test(NAME sim.cudart.${short} COMMAND ${name})
  set_tests_properties(sim.cudart.${short} PROPERTIES TIMEOUT 90 LABELS sim)
endforeach()

# An nvcc-compiled program, built at test time (the project itself is C only):
# checks that nvcc 13's launch path and registration hooks work on the
# simulator. Not registered when nvcc is not installed.
find_program(A2ASIM_NVCC nvcc HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
if(A2ASIM_NVCC)
  add_test(NAME sim.cudart.nvcc
    COMMAND sh -c [=[
nvcc=$1 src=$2 inc=$3 libdir=$4 out=$5
mkdir -p "$(dirname "$out")" || exit 1
"$nvcc" -I"$inc" -o "$out" "$src" -L"$libdir" -cudart shared -Xlinker -rpath="$libdir" || exit 1
LD_LIBRARY_PATH="$libdir" timeout 60 "$out"
]=] sh ${A2ASIM_NVCC} ${CMAKE_CURRENT_LIST_DIR}/cudart_nvcc.cu ${CMAKE_CURRENT_LIST_DIR}/../include
      ${A2ASIM_LIBDIR} ${CMAKE_BINARY_DIR}/tests/sim/cudart_nvcc)
  set_tests_properties(sim.cudart.nvcc PROPERTIES TIMEOUT 300 LABELS sim
    REQUIRED_FILES $<TARGET_FILE:a2asim_cudart>)
endif()
