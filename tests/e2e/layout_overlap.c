/* layout_overlap.c - layout.overlap, 2 ranks.
 *   buggy:         in one group each rank receives two messages from its
 *                  peer into regions that overlap by half;
 *   fixed:         the second receive starts where the first ends;
 *   inplace-buggy: an in-place ncclAllGather with sendbuff == recvbuff on
 *                  every rank: right for rank 0 only (nccl.h requires
 *                  sendbuff == recvbuff + rank*sendcount);
 *   inplace-fixed: sendbuff = recvbuff + rank*sendcount. */
#include "e2e_common.h"

#define N 1024

static int inplace_allgather(int rank, int nranks, ncclComm_t comm, int fixed) {
  cudaStream_t s = e2e_stream();
  float *recv = e2e_dalloc((size_t)nranks * N * sizeof(float));
  float *send = fixed ? recv + (size_t)rank * N : recv;
  E2E_TRY(ncclAllGather(send, recv, N, ncclFloat, comm, s));
  E2E_CUDA(cudaStreamSynchronize(s));
  return 0;
}

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int mode = *(int *)arg, fixed = mode & 1;
  if (mode & 2) return inplace_allgather(rank, nranks, comm, fixed);
  cudaStream_t s = e2e_stream();
  int peer = 1 - rank;
  float *send = e2e_dalloc(2 * N * sizeof(float));
  float *recv = e2e_dalloc(2 * N * sizeof(float));
  float *second = fixed ? recv + N : recv + N / 2;
  E2E_NCCL(ncclGroupStart());
  E2E_NCCL(ncclSend(send, N, ncclFloat, peer, comm, s));
  E2E_NCCL(ncclSend(send + N, N, ncclFloat, peer, comm, s));
  E2E_NCCL(ncclRecv(recv, N, ncclFloat, peer, comm, s));
  E2E_NCCL(ncclRecv(second, N, ncclFloat, peer, comm, s));
  E2E_TRY(ncclGroupEnd());
  E2E_CUDA(cudaStreamSynchronize(s));
  return 0;
}

int main(int argc, char **argv) {
  /* bit 0: fixed, bit 1: the in-place AllGather variant */
  int mode = e2e_fixed(argc, argv) || e2e_arg_is(argc, argv, "inplace-fixed");
  if (e2e_arg_is(argc, argv, "inplace-buggy") || e2e_arg_is(argc, argv, "inplace-fixed")) mode |= 2;
  return e2e_run_ranks(2, NULL, rank_main, &mode);
}
