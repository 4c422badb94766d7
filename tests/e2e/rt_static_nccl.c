/* rt_static_nccl.c - stands in for a library into which NCCL was linked
 * statically (libtorch_cuda.so built from source): it defines and exports
 * ncclSend itself and calls it directly, so the call never reaches the
 * preloaded liba2acheck.so. -Bsymbolic (see runtime.cmake) binds the
 * internal call to this definition, as a static link would. */
#include <stddef.h>

int ncclSend(const void *buf, size_t count, int type, int peer, void *comm, void *stream) {
  (void)buf, (void)count, (void)type, (void)peer, (void)comm, (void)stream;
  return 0;
}

int rt_static_nccl_use(void) { return ncclSend(NULL, 0, 0, 0, NULL, NULL); }
