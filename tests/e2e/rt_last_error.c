/* rt_last_error.c - the CUDA "last error" the application sees is never
 * changed by a2acheck's own runtime calls (docs/design.md, the last-error
 * rule). A 1-rank communicator sends from a host (stack) buffer to itself,
 * twice; the layout analyzer asks the runtime about the unknown pointer
 * (cudaPointerGetAttributes, through the host services):
 *   site A, no error pending: the query runs, layout.host-memory is reported;
 *   site B, right after a failed cudaMalloc left cudaErrorMemoryAllocation
 *           pending: the host service must not call the runtime at all (so
 *           nothing is reported there), and the application must still read
 *           the pending error afterwards.
 * stdout is diffed between runs with and without the shim (rt_check.py). */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

static ncclComm_t comm;
static float *dbuf;

/* A macro, not a function: each site has its own ncclSend call site, so
 * the findings of A and B are not folded into one entry. */
#define EXCHANGE(host)                                                        \
  int r1 = ncclGroupStart();                                                  \
  int r2 = ncclSend((host), 256, ncclFloat, 0, comm, NULL);                   \
  int r3 = ncclRecv(dbuf, 256, ncclFloat, 0, comm, NULL);                     \
  int r4 = ncclGroupEnd();                                                    \
  __asm__ volatile("" ::: "memory");                                          \
  return r1 | r2 | r3 | r4

__attribute__((noinline)) static int site_a(const float *host) { EXCHANGE(host); }
__attribute__((noinline)) static int site_b(const float *host) { EXCHANGE(host); }

int main(void) {
  ncclUniqueId id;
  float host[256];
  memset(host, 0, sizeof host);
  if (ncclGetUniqueId(&id) || ncclCommInitRank(&comm, 1, id, 0)) return 2;
  printf("cudaMalloc -> %d\n", (int)cudaMalloc((void **)&dbuf, 256 * sizeof(float)));

  printf("site A -> %d\n", site_a(host));
  printf("cudaStreamSynchronize -> %d\n", (int)cudaStreamSynchronize(NULL));
  printf("cudaGetLastError -> %d\n", (int)cudaGetLastError());

  void *huge = NULL;
  printf("cudaMalloc(huge) -> %d\n", (int)cudaMalloc(&huge, (size_t)1 << 60));
  printf("site B -> %d\n", site_b(host));
  printf("cudaPeekAtLastError -> %d\n", (int)cudaPeekAtLastError());
  printf("cudaGetLastError -> %d\n", (int)cudaGetLastError());
  printf("cudaGetLastError -> %d\n", (int)cudaGetLastError());
  printf("cudaStreamSynchronize -> %d\n", (int)cudaStreamSynchronize(NULL));
  ncclCommDestroy(comm);
  cudaFree(dbuf);
  return 0;
}
