/* layout_overlap.c - layout.overlap, 2 ranks.
 *   buggy: in one group each rank receives two messages from its peer into
 *          regions that overlap by half (an offset computed in bytes where
 *          elements were meant);
 *   fixed: the second receive starts where the first ends. */
#include "local_common.h"

#define N 1024

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int fixed = *(int *)arg;
  cudaStream_t s = lc_stream();
  int peer = 1 - rank;
  float *send = lc_dalloc(2 * N * sizeof(float));
  float *recv = lc_dalloc(2 * N * sizeof(float));
  float *second = fixed ? recv + N : recv + N / 2;
  LC_NCCL(ncclGroupStart());
  LC_NCCL(ncclSend(send, N, ncclFloat, peer, comm, s));
  LC_NCCL(ncclSend(send + N, N, ncclFloat, peer, comm, s));
  LC_NCCL(ncclRecv(recv, N, ncclFloat, peer, comm, s));
  LC_NCCL(ncclRecv(second, N, ncclFloat, peer, comm, s));
  LC_TRY(ncclGroupEnd());
  LC_CUDA(cudaStreamSynchronize(s));
  return 0;
}

int main(int argc, char **argv) {
  int fixed = lc_fixed(argc, argv);
  return lc_run_ranks(2, rank_main, &fixed);
}
