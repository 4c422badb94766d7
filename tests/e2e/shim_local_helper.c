/* shim_local_helper.c - a "Python extension": a shared library linked to
 * libnccl.so.2 and libcudart.so.13 that the test program loads with
 * dlopen(RTLD_LOCAL), so neither library is in the global lookup scope and
 * the preloaded shim's dlsym(RTLD_NEXT) cannot find them: the shim must fall
 * back to dlopen(RTLD_NOLOAD) / the loaded-object scan.
 *
 * shim_local_run() makes a fixed series of NCCL and CUDA runtime calls and
 * prints every result, the errno it observes after each call, and the
 * sticky CUDA error state; the test runs it with and without the shim and
 * requires identical output. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

int shim_local_run(FILE *out);

/* errno is set to a marker before each call: the shim must not change what
 * the application sees afterwards. */
#define CALL(label, expr)                                                     \
  do {                                                                        \
    errno = 4321;                                                             \
    long r_ = (long)(expr);                                                   \
    fprintf(out, "%-28s -> %ld (errno %d)\n", label, r_, errno);              \
  } while (0)

int shim_local_run(FILE *out)
{
  int v = -1;
  CALL("ncclGetVersion", ncclGetVersion(&v));
  fprintf(out, "version %d\n", v);
  for (int r = 0; r <= ncclNumResults; r++) {
    errno = 4321;
    const char *s = ncclGetErrorString((ncclResult_t)r);
    fprintf(out, "ncclGetErrorString(%d) = %s (errno %d)\n", r, s ? s : "(null)", errno);
  }
  CALL("ncclGroupStart", ncclGroupStart());
  CALL("ncclGroupEnd", ncclGroupEnd());
  CALL("ncclSend(comm=NULL)", ncclSend(NULL, 1, ncclFloat, 0, NULL, NULL));
  CALL("ncclBcast(comm=NULL)", ncclBcast(NULL, 1, ncclFloat, 0, NULL, NULL));

  CALL("cudaPeekAtLastError", cudaPeekAtLastError());
  void *p = NULL;
  CALL("cudaMalloc", cudaMalloc(&p, 256));
  CALL("cudaPeekAtLastError", cudaPeekAtLastError());
  CALL("cudaGetLastError", cudaGetLastError());
  CALL("cudaGetLastError", cudaGetLastError());
  cudaStream_t s = NULL;
  CALL("cudaStreamCreate", cudaStreamCreate(&s));
  CALL("cudaStreamSynchronize", cudaStreamSynchronize(s));
  CALL("cudaMemsetAsync", cudaMemsetAsync(p, 0, 256, s));
  CALL("cudaFree", cudaFree(p));
  CALL("cudaGetLastError", cudaGetLastError());
  return 0;
}
