/* layout_out_of_bounds.c - layout.out-of-bounds, 2 ranks.
 *   buggy: ncclReduceScatter with recvcount N and a send buffer of N
 *          elements; NCCL reads nranks*N (the overflow is a read, so the
 *          program itself survives it);
 *   fixed: the send buffer holds nranks*N elements. */
#include "e2e_common.h"

#define N 256

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int fixed = *(int *)arg;
  cudaStream_t s = e2e_stream();
  size_t send_elems = fixed ? (size_t)nranks * N : N;
  float *send = e2e_dalloc(send_elems * sizeof(float));
  float *recv = e2e_dalloc(N * sizeof(float));
  E2E_TRY(ncclReduceScatter(send, recv, N, ncclFloat, ncclSum, comm, s));
  E2E_CUDA(cudaStreamSynchronize(s));
  return 0;
}

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  return e2e_run_ranks(2, NULL, rank_main, &fixed);
}
