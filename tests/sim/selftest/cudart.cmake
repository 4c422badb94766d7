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
  target_link_libraries(${name} PRIVATE a2asim_cudart PkgConfig::CHECK Threads::Threads m)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/sim)
  add_test(NAME sim.cudart.${short} COMMAND ${name})
  set_tests_properties(sim.cudart.${short} PROPERTIES TIMEOUT 90 LABELS sim)
endforeach()
