/* driver_entry.c - cudaGetDriverEntryPoint(ByVersion): driver function
 * pointers for runtime users (PyTorch asks for cuDeviceGet, cuMemCreate,
 * cuGetErrorString... this way), resolved, as by the real runtime, through
 * the driver's cuGetProcAddress - here the simulated driver, libcuda.so.1.
 *
 * The driver is the one installed next to this library (build/sim/lib),
 * found from this library's own path, so a real libcuda.so.1 on the machine
 * is never mixed with the simulated runtime; failing that, a libcuda.so.1
 * the loader finds is used only if it is the simulator's (it defines
 * a2asim_driver_marker). Without a simulated driver the calls answer
 * cudaErrorInsufficientDriver, as the real runtime does without a driver.
 * The library is opened once, lazily, at the first call.
 */
#define _GNU_SOURCE   /* dladdr */
#include "sim_rt.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "a2asim_reference.h"

/* cuGetProcAddress_v2 with the driver's types spelled as their ABI (CUresult
 * and CUdriverProcAddressQueryResult are enumerations, cuuint64_t is 64-bit;
 * the query results and flags share their values with the runtime's). */
typedef int (*getproc_fn)(const char *symbol, void **pfn, int cudaVersion,
                          unsigned long long flags, int *symbolStatus);

static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static getproc_fn drv_getproc;

static void *open_sim_driver(void) {
  Dl_info di;
  char path[PATH_MAX];
  if (dladdr((void *)&open_sim_driver, &di) && di.dli_fname) {
    const char *slash = strrchr(di.dli_fname, '/');
    if (slash && (size_t)(slash - di.dli_fname) + sizeof "/libcuda.so.1" <= sizeof path) {
      snprintf(path, sizeof path, "%.*s/libcuda.so.1", (int)(slash - di.dli_fname), di.dli_fname);
      void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
      if (h) return h;
    }
  }
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h && !dlsym(h, "a2asim_driver_marker")) {
    dlclose(h);
    h = NULL;
  }
  return h;
}

static void drv_load(void) {
  void *h = open_sim_driver();
  if (h) drv_getproc = (getproc_fn)dlsym(h, "cuGetProcAddress_v2");
}

static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned version,
                               unsigned long long flags, enum cudaDriverEntryPointQueryResult *status,
                               int ptsz) {
  sim_init();
  if (!symbol || !funcPtr) return cudaErrorInvalidValue;
  if (flags & ~(unsigned long long)(cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream))
    return cudaErrorInvalidValue;
  /* The per-thread entry point (code built with per-thread default streams)
   * turns cudaEnableDefault into the per-thread search. */
  if (ptsz && flags == cudaEnableDefault) flags = cudaEnablePerThreadDefaultStream;
  pthread_once(&drv_once, drv_load);
  if (!drv_getproc) return cudaErrorInsufficientDriver;
  int st = cudaDriverEntryPointSymbolNotFound;
  int r = drv_getproc(symbol, funcPtr, (int)version, flags, &st);
  if (status) *status = (enum cudaDriverEntryPointQueryResult)st;
  /* The driver's CUresult codes used here (success, invalid value, not
   * supported) have the same values as the runtime's. */
  return (cudaError_t)r;
}

SIM_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                               enum cudaDriverEntryPointQueryResult *driverStatus) {
  return sim_ret(entry_point(symbol, funcPtr, A2ASIM_REFERENCE_CUDA_VERSION, flags, driverStatus, 0));
}
SIM_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                                    enum cudaDriverEntryPointQueryResult *driverStatus) {
  return sim_ret(entry_point(symbol, funcPtr, A2ASIM_REFERENCE_CUDA_VERSION, flags, driverStatus, 1));
}
SIM_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                                        unsigned int cudaVersion, unsigned long long flags,
                                                        enum cudaDriverEntryPointQueryResult *driverStatus) {
  return sim_ret(entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus, 0));
}
SIM_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                             unsigned int cudaVersion, unsigned long long flags,
                                                             enum cudaDriverEntryPointQueryResult *driverStatus) {
  return sim_ret(entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus, 1));
}
