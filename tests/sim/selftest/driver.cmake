# Self-tests of the simulator's CUDA driver (libcuda.so.1), without the
# shim: one Check suite per tests/sim/selftest/driver_*.c, run by ctest as
# sim.driver.<name>, linked to the simulated driver and runtime.
file(GLOB A2ASIM_DRIVER_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/driver_*.c)
foreach(src ${A2ASIM_DRIVER_TESTS})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^driver_" "" short ${name})
  add_executable(${name} ${src})
  target_include_directories(${name} PRIVATE ${A2A_CUDA_INCLUDE} ${CMAKE_CURRENT_LIST_DIR}/../include
                             ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(${name} PRIVATE a2asim_cuda a2asim_cudart PkgConfig::CHECK Threads::Threads m
                        ${CMAKE_DL_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/sim)
  add_test(NAME sim.driver.${short} COMMAND ${name})
  set_tests_properties(sim.driver.${short} PROPERTIES TIMEOUT 90 LABELS sim)
endforeach()
