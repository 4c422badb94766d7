/* layout_scattered.c - layout.scattered, 3 ranks.
 *   buggy: a grouped all-to-all whose per-peer send chunks are views of a
 *          strided tensor (chunk p at base + 2*p*chunk): three separate
 *          regions instead of one;
 *   fixed: the all_to_all_single layout, chunks back to back in rank order
 *          with unequal splits (no finding). */
#include "e2e_common.h"

#define C 1024

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int fixed = *(int *)arg;
  cudaStream_t s = e2e_stream();
  float *send = e2e_dalloc(2 * (size_t)nranks * C * sizeof(float));
  float *recv = e2e_dalloc((size_t)nranks * C * sizeof(float));
  /* Unequal splits in the fixed variant: peer p gets C - 64*p elements
   * (the same on every rank, so sends and receives match). */
  size_t off = 0;
  E2E_NCCL(ncclGroupStart());
  for (int p = 0; p < nranks; p++) {
    if (p == rank) continue;
    size_t n = fixed ? C - 64 * (size_t)p : C;
    const float *chunk = fixed ? send + off : send + 2 * (size_t)p * C;
    E2E_NCCL(ncclSend(chunk, n, ncclFloat, p, comm, s));
    off += n;
  }
  off = 0;
  for (int p = 0; p < nranks; p++) {
    if (p == rank) continue;
    size_t n = fixed ? C - 64 * (size_t)rank : C;
    E2E_NCCL(ncclRecv(recv + off, n, ncclFloat, p, comm, s));
    off += n;
  }
  E2E_TRY(ncclGroupEnd());
  E2E_CUDA(cudaStreamSynchronize(s));
  return 0;
}

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  return e2e_run_ranks(3, NULL, rank_main, &fixed);
}
