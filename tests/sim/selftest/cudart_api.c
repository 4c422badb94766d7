/* cudart_api.c - the completeness layer of the simulated runtime: stubs of
 * unmodelled functions (cudaErrorNotSupported, recorded as the last error;
 * documented no-ops), the small functions modelled for completeness, and
 * cudaGetDriverEntryPoint(ByVersion), which resolves through the simulated
 * driver's cuGetProcAddress (build/sim/lib/libcuda.so.1, next to the
 * runtime). The export list itself is ctest sim.api.exports. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include <cuda_profiler_api.h>

#include "cudart_test.h"
#include "a2asim_reference.h"

/* cudaGetDriverEntryPoint is deprecated since 13.0, and tested on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

START_TEST(unmodelled_functions_are_not_supported) {
  void *p;
  CK_CUDA(cudaMalloc(&p, 64));
  cudaIpcMemHandle_t h;
  ck_assert_int_eq(cudaIpcGetMemHandle(&h, p), cudaErrorNotSupported);
  ck_assert_int_eq(cudaGetLastError(), cudaErrorNotSupported);
  ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
  static int symbol;
  int v = 1;
  ck_assert_int_eq(cudaMemcpyToSymbol(&symbol, &v, sizeof v, 0, cudaMemcpyHostToDevice), cudaErrorNotSupported);
  int blocks = -1;
  ck_assert_int_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (const void *)&symbol, 128, 0),
                   cudaErrorNotSupported);
  ck_assert_int_eq(blocks, -1);   /* outputs untouched */
  cudaMemPool_t pool;
  ck_assert_int_eq(cudaDeviceGetDefaultMemPool(&pool, 0), cudaErrorNotSupported);
  ck_assert_int_eq(cudaPeekAtLastError(), cudaErrorNotSupported);
  cudaGetLastError();
  CK_CUDA(cudaFree(p));
}
END_TEST

START_TEST(documented_noops_succeed_without_touching_the_last_error) {
  ck_assert_int_eq(cudaSetDevice(99), cudaErrorInvalidDevice);
  CK_CUDA(cudaProfilerStart());
  CK_CUDA(cudaProfilerStop());
  CK_CUDA(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
  ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidDevice);
}
END_TEST

START_TEST(small_modelled_functions) {
  struct cudaChannelFormatDesc d = cudaCreateChannelDesc(8, 16, 0, 0, cudaChannelFormatKindUnsigned);
  ck_assert_int_eq(d.x, 8);
  ck_assert_int_eq(d.y, 16);
  ck_assert_int_eq(d.z, 0);
  ck_assert_int_eq(d.f, cudaChannelFormatKindUnsigned);
}
END_TEST

/* cudaGetDriverEntryPoint* return the simulated driver's functions: the
 * same addresses dlsym finds in libcuda.so.1, with cuda.h's versioning. */
typedef int (*drv_int_fn)(int *);

START_TEST(driver_entry_points) {
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
  CK_CUDA(cudaGetDriverEntryPointByVersion("cuDeviceGet", &fn, 12000, cudaEnableDefault, &st));
  ck_assert_int_eq(st, cudaDriverEntryPointSuccess);
  ck_assert_ptr_nonnull(fn);
  void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ck_assert_msg(drv != NULL, "the runtime loaded no libcuda.so.1");
  ck_assert_ptr_nonnull(dlsym(drv, "a2asim_driver_marker"));
  ck_assert_ptr_eq(fn, dlsym(drv, "cuDeviceGet"));
  int dev = -1;
  ck_assert_int_eq(((int (*)(int *, int))fn)(&dev, 3), 0);
  ck_assert_int_eq(dev, 3);

  /* Versioned ABIs: cuMemAlloc is cuMemAlloc_v2 since 3.2. */
  CK_CUDA(cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault, &st));
  ck_assert_ptr_eq(fn, dlsym(drv, "cuMemAlloc_v2"));
  CK_CUDA(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 3000, cudaEnableDefault, &st));
  ck_assert_ptr_eq(fn, dlsym(drv, "cuMemAlloc"));
  /* Per-thread default stream variants, and the _ptsz entry point's
   * default. */
  CK_CUDA(cudaGetDriverEntryPointByVersion("cuStreamQuery", &fn, 12000, cudaEnablePerThreadDefaultStream, &st));
  ck_assert_ptr_eq(fn, dlsym(drv, "cuStreamQuery_ptsz"));
  CK_CUDA(cudaGetDriverEntryPointByVersion("cuStreamQuery", &fn, 12000, cudaEnableLegacyStream, &st));
  ck_assert_ptr_eq(fn, dlsym(drv, "cuStreamQuery"));
  cudaError_t (*by_version_ptsz)(const char *, void **, unsigned, unsigned long long,
                                 enum cudaDriverEntryPointQueryResult *) =
      (cudaError_t (*)(const char *, void **, unsigned, unsigned long long,
                       enum cudaDriverEntryPointQueryResult *))dlsym(RTLD_DEFAULT,
                                                                     "cudaGetDriverEntryPointByVersion_ptsz");
  ck_assert_ptr_nonnull(by_version_ptsz);
  CK_CUDA(by_version_ptsz("cuStreamQuery", &fn, 12000, cudaEnableDefault, &st));
  ck_assert_ptr_eq(fn, dlsym(drv, "cuStreamQuery_ptsz"));

  /* Unknown and too-new symbols: success, NULL, the reason in the status. */
  fn = &fn;
  CK_CUDA(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &fn, 12000, cudaEnableDefault, &st));
  ck_assert_ptr_null(fn);
  ck_assert_int_eq(st, cudaDriverEntryPointSymbolNotFound);
  CK_CUDA(cudaGetDriverEntryPointByVersion("cuStreamBeginCaptureToCig", &fn, 13000, cudaEnableDefault, &st));
  ck_assert_ptr_null(fn);
  ck_assert_int_eq(st, cudaDriverEntryPointVersionNotSufficent);
  /* A version newer than the driver, bad flags, missing arguments. */
  ck_assert_int_eq(cudaGetDriverEntryPointByVersion("cuDeviceGet", &fn, A2ASIM_REFERENCE_CUDA_VERSION + 10,
                                                    cudaEnableDefault, &st), cudaErrorInvalidValue);
  ck_assert_int_eq(cudaGetDriverEntryPoint("cuDeviceGet", &fn, 4, &st), cudaErrorInvalidValue);
  ck_assert_int_eq(cudaGetDriverEntryPoint(NULL, &fn, cudaEnableDefault, &st), cudaErrorInvalidValue);
  ck_assert_int_eq(cudaGetDriverEntryPoint("cuDeviceGet", NULL, cudaEnableDefault, &st), cudaErrorInvalidValue);
  cudaGetLastError();
  /* driverStatus is optional. */
  CK_CUDA(cudaGetDriverEntryPoint("cuDriverGetVersion", &fn, cudaEnableDefault, NULL));
  int dv = 0, rv = 0;
  ck_assert_int_eq(((drv_int_fn)fn)(&dv), 0);
  CK_CUDA(cudaDriverGetVersion(&rv));
  ck_assert_int_eq(dv, rv);
  /* An unmodelled driver function resolves to its stub. */
  CK_CUDA(cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 12000, cudaEnableDefault, &st));
  ck_assert_int_eq(st, cudaDriverEntryPointSuccess);
  ck_assert_ptr_eq(fn, dlsym(drv, "cuMemCreate"));
  dlclose(drv);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim.cudart.api");
  TCase *tc = tcase_create("api");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, unmodelled_functions_are_not_supported);
  tcase_add_test(tc, documented_noops_succeed_without_touching_the_last_error);
  tcase_add_test(tc, small_modelled_functions);
  tcase_add_test(tc, driver_entry_points);
  suite_add_tcase(s, tc);
  return test_run_suite(s);
}
