/* cudart_error.c - self-tests of the simulated runtime's error state
 * (per-thread last error, sticky errors raised by a faulting "kernel",
 * error names and strings) and of device queries. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "cudart_test.h"
#include "a2asim_reference.h"

START_TEST(error_names_and_strings) {
  ck_assert_str_eq(cudaGetErrorName(cudaSuccess), "cudaSuccess");
  ck_assert_str_eq(cudaGetErrorString(cudaSuccess), "no error");
  ck_assert_str_eq(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  ck_assert_str_eq(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
  ck_assert_str_eq(cudaGetErrorName(cudaErrorIllegalAddress), "cudaErrorIllegalAddress");
  ck_assert_str_eq(cudaGetErrorString(cudaErrorIllegalAddress), "an illegal memory access was encountered");
  ck_assert_str_eq(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady");
  ck_assert_str_eq(cudaGetErrorName(cudaErrorInvalidResourceHandle), "cudaErrorInvalidResourceHandle");
  ck_assert_str_eq(cudaGetErrorName((cudaError_t)12345), "unrecognized error code");
}
END_TEST

static void *thread_last_error(void *p) {
  /* Another thread's error is not this thread's last error. */
  *(cudaError_t *)p = cudaGetLastError();
  ck_assert_int_eq(cudaSetDevice(77), cudaErrorInvalidDevice);
  return NULL;
}

START_TEST(last_error_is_per_thread_and_reset_by_get) {
  ck_assert_int_eq(cudaSetDevice(-1), cudaErrorInvalidDevice);
  ck_assert_int_eq(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  ck_assert_int_eq(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  cudaError_t other = (cudaError_t)-1;
  pthread_t t;
  pthread_create(&t, NULL, thread_last_error, &other);
  pthread_join(t, NULL);
  ck_assert_int_eq(other, cudaSuccess);
  ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidDevice);
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
  /* Invalid handles. */
  ck_assert_int_eq(cudaStreamSynchronize((cudaStream_t)(uintptr_t)0x4000), cudaErrorInvalidResourceHandle);
  ck_assert_int_eq(cudaEventQuery((cudaEvent_t)(uintptr_t)0x4000), cudaErrorInvalidResourceHandle);
  ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}
END_TEST

static void fault_kernel(void) {}
static void fault_impl(void **args, const a2asim_launch_info *li) { a2asim_raise_sticky(cudaErrorIllegalAddress); }
static atomic_int after_fault_ran;
static void after_fault(void *p) { atomic_store(&after_fault_ran, 1); }

START_TEST(sticky_error_from_kernel) {
  ck_assert_int_eq(a2asim_register_kernel((const void *)fault_kernel, fault_impl, "fault", 0, NULL), 0);
  cudaStream_t s;
  CK_CUDA(cudaStreamCreate(&s));
  dim3 g = {1, 1, 1};
  ck_assert_int_eq(a2asim_stream_set_delay(s, 50000), 0);
  CK_CUDA(cudaLaunchKernel((const void *)fault_kernel, g, g, NULL, 0, s));  /* asynchronous */
  CK_CUDA(cudaLaunchHostFunc(s, after_fault, NULL));
  ck_assert_int_eq(cudaStreamSynchronize(s), cudaErrorIllegalAddress);
  /* Work queued after the fault did not execute. */
  ck_assert_int_eq(atomic_load(&after_fault_ran), 0);
  /* Sticky: every call on the device reports it; GetLastError does not clear it. */
  ck_assert_int_eq(cudaGetLastError(), cudaErrorIllegalAddress);
  ck_assert_int_eq(cudaGetLastError(), cudaErrorIllegalAddress);
  ck_assert_int_eq(cudaPeekAtLastError(), cudaErrorIllegalAddress);
  void *p;
  ck_assert_int_eq(cudaMalloc(&p, 16), cudaErrorIllegalAddress);
  ck_assert_int_eq(cudaLaunchKernel((const void *)fault_kernel, g, g, NULL, 0, s), cudaErrorIllegalAddress);
  ck_assert_int_eq(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  ck_assert_int_eq(cudaStreamQuery(s), cudaErrorIllegalAddress);
  /* Another device is unaffected; the thread's last error is still the one
   * the failing calls returned, and reading it there clears it. */
  CK_CUDA(cudaSetDevice(1));
  CK_CUDA(cudaMalloc(&p, 16));
  ck_assert_int_eq(cudaGetLastError(), cudaErrorIllegalAddress);
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
  /* Back on the faulted device it is sticky again, until cudaDeviceReset. */
  CK_CUDA(cudaSetDevice(0));
  ck_assert_int_eq(cudaGetLastError(), cudaErrorIllegalAddress);
  CK_CUDA(cudaDeviceReset());
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
  CK_CUDA(cudaMalloc(&p, 16));
}
END_TEST

START_TEST(device_queries) {
  int v;
  /* The reference release whose ABI the simulator exports. */
  CK_CUDA(cudaRuntimeGetVersion(&v));
  ck_assert_int_eq(v, A2ASIM_REFERENCE_CUDA_VERSION);
  CK_CUDA(cudaDriverGetVersion(&v));
  ck_assert_int_eq(v, A2ASIM_REFERENCE_CUDA_VERSION);
  struct cudaDeviceProp p;
  CK_CUDA(cudaGetDeviceProperties(&p, 7));
  ck_assert_str_eq(p.name, "A2ASIM CPU device");
  ck_assert_int_eq(p.pciBusID, 0x17);
  ck_assert_int_gt(p.multiProcessorCount, 0);
  ck_assert_int_eq(cudaGetDeviceProperties(&p, 8), cudaErrorInvalidDevice);
  char bus[32];
  CK_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, 3));
  int d = -1;
  CK_CUDA(cudaDeviceGetByPCIBusId(&d, bus));
  ck_assert_int_eq(d, 3);
  CK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
  ck_assert_int_eq(v, p.multiProcessorCount);
  CK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrPciBusId, 2));
  ck_assert_int_eq(v, 0x12);
  ck_assert_int_eq(cudaDeviceGetAttribute(&v, (enum cudaDeviceAttr)100000, 0), cudaErrorInvalidValue);
  ck_assert_int_eq(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 9), cudaErrorInvalidDevice);
  int can;
  CK_CUDA(cudaDeviceCanAccessPeer(&can, 2, 2));
  ck_assert_int_eq(can, 0);
}
END_TEST

int main(void) {
  unsetenv("A2ASIM_DEVICES");
  Suite *s = suite_create("sim.cudart.error");
  TCase *tc = tcase_create("error");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, error_names_and_strings);
  tcase_add_test(tc, last_error_is_per_thread_and_reset_by_get);
  tcase_add_test(tc, sticky_error_from_kernel);
  tcase_add_test(tc, device_queries);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
