/* layout_overlap.c - layout.overlap, 2 ranks.
 *   buggy:         in one group each rank receives two messages from its
 *                  peer into regions that overlap by half;
 *   fixed:         the second receive starts where the first ends;
 *   inplace-buggy: an in-place ncclAllGather with sendbuff == recvbuff on
 *                  every rank: right for rank 0 only (nccl.h requires
 *                  sendbuff == recvbuff + rank*sendcount);
 *   inplace-fixed: sendbuff = recvbuff + rank*sendcount. */
#include "local_common.h"

#define N 1024

static int inplace_allgather(int rank, int nranks, ncclComm_t comm, int fixed) {
  cudaStream_t s = lc_stream();
  float *recv = lc_dalloc((size_t)nranks * N * sizeof(float));
  float *send = fixed ? recv + (size_t)rank * N : recv;
  LC_TRY(ncclAllGather(send, recv, N, ncclFloat, comm, s));
  LC_CUDA(cudaStreamSynchronize(s));
  return 0;
}

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int mode = *(int *)arg, fixed = mode & 1;
  if (mode & 2) return inplace_allgather(rank, nranks, comm, fixed);
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
  /* bit 0: fixed, bit 1: the in-place AllGather variant */
  int mode = lc_fixed(argc, argv) || lc_arg_is(argc, argv, "inplace-fixed");
  if (lc_arg_is(argc, argv, "inplace-buggy") || lc_arg_is(argc, argv, "inplace-fixed")) mode |= 2;
  return lc_run_ranks(2, rank_main, &mode);
}
