/* rt_not_intercepting.c - NCCL reached without going through
 * liba2acheck.so, the two ways a2acheck.not-intercepting explains:
 *   rt_not_intercepting dlsym <libnccl.so path>
 *       loads NCCL with dlopen and calls ncclGetVersion through the pointer
 *       dlsym() returned for that handle (vLLM's pynccl does this);
 *   rt_not_intercepting static <librt_static_nccl.so path>
 *       loads librt_static_nccl.so, a stand-in for a library with NCCL
 *       linked in statically (it defines ncclSend itself, like a
 *       libtorch_cuda.so built from source), and calls into it.
 *   rt_not_intercepting unresolved -
 *       no NCCL at all: calls ncclGetVersion found with
 *       dlsym(RTLD_DEFAULT), i.e. liba2acheck.so's wrapper, whose real
 *       function cannot be resolved (a2acheck.unresolved, ncclInternalError).
 * All make one intercepted CUDA runtime call first, so the runtime is
 * initialized and its exit handler runs. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  cudaDeviceSynchronize();
  if (argc < 3) return 2;
  if (strcmp(argv[1], "dlsym") == 0) {
    void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      return 2;
    }
    int (*get_version)(int *) = (int (*)(int *))dlsym(h, "ncclGetVersion");
    int v = 0;
    if (!get_version || get_version(&v) != 0) return 2;
    printf("version %d via dlsym\n", v);
    return 0;
  }
  if (strcmp(argv[1], "unresolved") == 0) {
    int (*get_version)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "ncclGetVersion");
    int v = -1;
    if (!get_version) return 2;   /* only meaningful under the shim */
    int r = get_version(&v);
    printf("ncclGetVersion -> %d, version %d\n", r, v);
    return 0;
  }
  if (strcmp(argv[1], "static") == 0) {
    void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    int (*use)(void) = h ? (int (*)(void))dlsym(h, "rt_static_nccl_use") : NULL;
    if (!use) return 2;
    printf("static ncclSend -> %d\n", use());
    return 0;
  }
  return 2;
}
