/* group_sync_in_group.c - group.sync-in-group, 2 ranks.
 *   buggy: each rank posts send+recv in a group and synchronizes the
 *          communication stream before ncclGroupEnd, then reads the receive
 *          buffer: the operations are not launched yet, so the data is
 *          stale (the program prints what it read, then completes);
 *   fixed: ncclGroupEnd first, then synchronize. */
#include "e2e_common.h"

#define N 1024

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int fixed = *(int *)arg;
  cudaStream_t s = e2e_stream();
  int peer = 1 - rank;
  float host[N];
  for (int i = 0; i < N; i++) host[i] = (float)(rank + 1);
  float *send = e2e_dalloc(N * sizeof(float));
  float *recv = e2e_dalloc(N * sizeof(float));
  E2E_CUDA(cudaMemcpy(send, host, sizeof host, cudaMemcpyHostToDevice));
  E2E_NCCL(ncclGroupStart());
  E2E_NCCL(ncclSend(send, N, ncclFloat, peer, comm, s));
  E2E_NCCL(ncclRecv(recv, N, ncclFloat, peer, comm, s));
  if (!fixed) {
    E2E_CUDA(cudaStreamSynchronize(s)); /* does not wait for the group */
    E2E_CUDA(cudaMemcpy(host, recv, sizeof host, cudaMemcpyDeviceToHost));
    printf("rank %d read %g before ncclGroupEnd (expected %d)\n", rank, host[0], peer + 1);
  }
  E2E_NCCL(ncclGroupEnd());
  E2E_CUDA(cudaStreamSynchronize(s));
  E2E_CUDA(cudaMemcpy(host, recv, sizeof host, cudaMemcpyDeviceToHost));
  printf("rank %d read %g after ncclGroupEnd\n", rank, host[0]);
  return host[0] == (float)(peer + 1) ? 0 : 1;
}

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  return e2e_run_ranks(2, NULL, rank_main, &fixed);
}
