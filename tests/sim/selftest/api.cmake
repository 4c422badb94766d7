# The simulator's export rule (docs/simulator.md, "Export rule"), checked by
# tests/sim/tools/check_api.py:
#   sim.api.exports     both simulated libraries export exactly the committed
#                       reference lists, and everything the real
#                       libcudart.so.13 / stub libcuda.so found on this
#                       machine export (version nodes included);
#   sim.api.docs        docs/simulator.md lists exactly the stub tables;
#   sim.api.prototypes  every definition compiles against the reference
#                       (newest) CUDA headers: A2A_CUDA_REF_INCLUDE, by
#                       default the torch venv's nvidia/cu13/include. Skipped
#                       (77) where those headers are absent, unless CI=true.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "a2acheck: no python3; sim.api.* tests not registered")
  return()
endif()

set(A2ASIM_CHECK_API ${CMAKE_CURRENT_LIST_DIR}/../tools/check_api.py)
get_filename_component(A2ASIM_TORCH_VENV "${A2A_TORCH_PYTHON}" DIRECTORY)
file(GLOB A2ASIM_REF_DEFAULT LIST_DIRECTORIES true
     "${A2ASIM_TORCH_VENV}/../lib/python3*/site-packages/nvidia/cu13")
set(A2A_CUDA_REF_INCLUDE "" CACHE PATH
    "Reference CUDA headers (the newest runtime a supported torch wheel ships); empty: the torch venv's")
set(A2ASIM_REF_INC "${A2A_CUDA_REF_INCLUDE}")
set(A2ASIM_REF_LIBS "")
if(NOT A2ASIM_REF_INC AND A2ASIM_REF_DEFAULT)
  list(GET A2ASIM_REF_DEFAULT 0 A2ASIM_REF_ROOT)
  set(A2ASIM_REF_INC "${A2ASIM_REF_ROOT}/include")
  set(A2ASIM_REF_LIBS --real-cudart "${A2ASIM_REF_ROOT}/lib/libcudart.so.13")
endif()
if(NOT A2ASIM_REF_INC)
  set(A2ASIM_REF_INC "${CMAKE_BINARY_DIR}/no-reference-cuda-headers")
endif()

add_test(NAME sim.api.exports
  COMMAND ${Python3_EXECUTABLE} ${A2ASIM_CHECK_API} exports --sim-lib-dir ${A2ASIM_LIBDIR}
          --real-cudart ${A2A_CUDA_INCLUDE}/../lib64/libcudart.so.13 ${A2ASIM_REF_LIBS}
          --real-cuda ${A2A_CUDA_INCLUDE}/../lib64/stubs/libcuda.so)
add_test(NAME sim.api.docs COMMAND ${Python3_EXECUTABLE} ${A2ASIM_CHECK_API} docs)
add_test(NAME sim.api.prototypes
  COMMAND ${Python3_EXECUTABLE} ${A2ASIM_CHECK_API} prototypes --cc ${CMAKE_C_COMPILER}
          --include ${A2ASIM_REF_INC} --fallback-include ${A2A_CUDA_INCLUDE} --fallback-include ${A2A_NCCL_INCLUDE})
set_tests_properties(sim.api.exports sim.api.docs sim.api.prototypes PROPERTIES TIMEOUT 120 LABELS sim)
set_tests_properties(sim.api.prototypes PROPERTIES SKIP_RETURN_CODE 77)
