/* layout_out_of_bounds.c - layout.out-of-bounds, 2 ranks.
 *   buggy: ncclReduceScatter with recvcount N and a send buffer of N
 *          elements; NCCL reads nranks*N (the overflow is a read, so the
 *          program itself survives it);
 *   fixed: the send buffer holds nranks*N elements. */
#include "local_common.h"

#define N 256

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int fixed = *(int *)arg;
  cudaStream_t s = lc_stream();
  size_t send_elems = fixed ? (size_t)nranks * N : N;
  float *send = lc_dalloc(send_elems * sizeof(float));
  float *recv = lc_dalloc(N * sizeof(float));
  LC_TRY(ncclReduceScatter(send, recv, N, ncclFloat, ncclSum, comm, s));
  LC_CUDA(cudaStreamSynchronize(s));
  return 0;
}

int main(int argc, char **argv) {
  int fixed = lc_fixed(argc, argv);
  return lc_run_ranks(2, rank_main, &fixed);
}
