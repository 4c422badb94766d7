/* group_device_mismatch.c - group.device-mismatch, 2 ranks on 2 devices
 * (A2ASIM_DEVICES=2).
 *   buggy: after creating its communicator on device rank, each rank
 *          switches the current device to (rank + 1) % 2 (a helper thread's
 *          or a library's cudaSetDevice) and then calls ncclAllReduce;
 *   fixed: the current device is the communicator's at the call. */
#include "e2e_common.h"

#define N 1024

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int fixed = *(int *)arg;
  cudaStream_t s = e2e_stream();
  float *buf = e2e_dalloc(N * sizeof(float));
  if (!fixed) E2E_CUDA(cudaSetDevice((rank + 1) % 2));
  E2E_TRY(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comm, s));
  E2E_CUDA(cudaSetDevice(rank));
  E2E_CUDA(cudaStreamSynchronize(s));
  return 0;
}

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  return e2e_run_ranks(2, NULL, rank_main, &fixed);
}
