# Tests of build/sim/bin/a2asim-run (ctest sim.run.*), with the probes of
# tests/sim/run: the simulator owns libcudart.so.13, libnccl.so.2 and
# libcuda.so.1 in the launched program (probe linked with nothing CUDA);
# LD_PRELOAD keeps what it held first (the shim first) and gains nothing on
# a nested run; A2ASIM_* settings reach the program, leading NAME=VALUE words
# too; --env prints the same settings for eval; and a program linked with a
# DT_RPATH to a real libcudart.so.13 (like PyTorch) runs on the simulator.
set(A2ASIM_RUN_DIR ${CMAKE_CURRENT_LIST_DIR}/../run)
add_executable(run_probe ${A2ASIM_RUN_DIR}/run_probe.c)
target_link_libraries(run_probe PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(run_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/sim)

# want PATTERN...: every pattern (a grep -E regex) must match the output.
set(A2ASIM_RUN_LIB [=[
out=$(mktemp); trap 'rm -f "$out"' EXIT
want() { for p in "$@"; do grep -Eq -- "$p" "$out" || { echo "FAIL: no line matching: $p"; cat "$out"; exit 1; }; done; }
]=])

set(A2ASIM_RUN_WRAPPER_SH [=[
run=$1 probe=$2 lib=$(cd "$(dirname "$1")/../lib" && pwd) shim=$3
env -u LD_PRELOAD -u LD_LIBRARY_PATH A2ASIM_DEVICES=3 "$run" "$probe" > "$out" || exit 1
want "^LD_PRELOAD=$lib/libcudart.so.13:$lib/libnccl.so.2:$lib/libcuda.so.1\$" \
     "^libcudart.so.13=$lib/libcudart.so.13\$" "^libnccl.so.2=$lib/libnccl.so.2\$" \
     "^libcuda.so.1=$lib/libcuda.so.1\$" "^devices=3\$" "^sim_driver=1\$"
# The checker (or any earlier preload) stays first; a nested run adds nothing.
LD_PRELOAD="$shim" "$run" A2ASIM_DEVICES=5 "$run" -- "$probe" > "$out" || exit 1
want "^LD_PRELOAD=$shim:$lib/libcudart.so.13:$lib/libnccl.so.2:$lib/libcuda.so.1\$" "^devices=5\$"
# --env gives the same environment to whoever evaluates it.
( unset LD_PRELOAD; eval "$("$run" --env)"; "$probe" ) > "$out" || exit 1
want "^libcuda.so.1=$lib/libcuda.so.1\$" "^sim_driver=1\$"
"$run" > "$out" 2>&1 && exit 1
want "^usage: a2asim-run"
echo PASS
]=])
add_test(NAME sim.run.wrapper
  COMMAND sh -c "${A2ASIM_RUN_LIB}${A2ASIM_RUN_WRAPPER_SH}" sh ${A2ASIM_RUN} $<TARGET_FILE:run_probe>
          $<TARGET_FILE:a2acheck>)
set_tests_properties(sim.run.wrapper PROPERTIES TIMEOUT 60 LABELS sim)

# The DT_RPATH case needs a real libcudart.so.13 to be linked against.
find_library(A2ASIM_REAL_CUDART NAMES libcudart.so.13 cudart
             HINTS ${CUDAToolkit_LIBRARY_DIR} ${A2A_CUDA_INCLUDE}/../lib64 NO_DEFAULT_PATH)
if(A2ASIM_REAL_CUDART)
  get_filename_component(A2ASIM_REAL_CUDART_DIR ${A2ASIM_REAL_CUDART} DIRECTORY)
  add_executable(rpath_probe ${A2ASIM_RUN_DIR}/rpath_probe.c)
  target_include_directories(rpath_probe PRIVATE ${A2A_CUDA_INCLUDE})
  target_link_libraries(rpath_probe PRIVATE ${A2ASIM_REAL_CUDART})
  # DT_RPATH (not RUNPATH): it outranks LD_LIBRARY_PATH, as in torch.
  target_link_options(rpath_probe PRIVATE -Wl,--disable-new-dtags -Wl,-rpath,${A2ASIM_REAL_CUDART_DIR})
  set_target_properties(rpath_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/sim
                        SKIP_BUILD_RPATH TRUE)
  set(A2ASIM_RUN_RPATH_SH [=[
run=$1 probe=$2
readelf -d "$probe" | grep -q '(RPATH)' || { echo "FAIL: probe has no DT_RPATH"; exit 1; }
env -u LD_PRELOAD "$probe" > "$out"
grep -q '^cudaGetDeviceCount=0 ' "$out" && { echo "FAIL: the real runtime found devices?"; exit 1; }
env -u LD_PRELOAD LD_LIBRARY_PATH="$(dirname "$run")/../lib" "$probe" > "$out"
grep -q '^cudaGetDeviceCount=0 ' "$out" && { echo "FAIL: LD_LIBRARY_PATH beat DT_RPATH?"; exit 1; }
env -u LD_PRELOAD A2ASIM_DEVICES=4 "$run" "$probe" > "$out" || exit 1
want '^cudaGetDeviceCount=0 devices=4$'
echo PASS
]=])
  add_test(NAME sim.run.rpath
    COMMAND sh -c "${A2ASIM_RUN_LIB}${A2ASIM_RUN_RPATH_SH}" sh ${A2ASIM_RUN} $<TARGET_FILE:rpath_probe>)
  set_tests_properties(sim.run.rpath PROPERTIES TIMEOUT 60 LABELS sim)
endif()
