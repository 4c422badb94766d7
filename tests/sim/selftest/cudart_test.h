/* cudart_test.h - helpers shared by the simulator's CUDA runtime
 * self-tests (tests/sim/selftest/cudart_*.c). */
#ifndef A2ASIM_CUDART_TEST_H
#define A2ASIM_CUDART_TEST_H

#include <check.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <time.h>

#include "a2asim.h"
#include "a2asim_internal.h"

#define CK_CUDA(call)                                                              \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    ck_assert_msg(e_ == cudaSuccess, "%s -> %d (%s)", #call, (int)e_,              \
                  cudaGetErrorName(e_));                                           \
  } while (0)

static inline double test_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline void test_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A host function that holds its stream until *(atomic_int *)gate != 0:
 * keeps work pending for exactly as long as a test needs, independent of
 * the machine's load (sleep-based delays are not). */
static inline void test_gate_fn(void *gate) {
  while (!__atomic_load_n((int *)gate, __ATOMIC_ACQUIRE)) test_sleep_ms(1);
}
static inline void test_gate_open(int *gate) { __atomic_store_n(gate, 1, __ATOMIC_RELEASE); }

/* Runs one suite in fork mode (a crash or hang fails one test) and returns
 * the process exit status. */
static inline int test_run_suite(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
