/* group_device_mismatch.c - group.device-mismatch, 2 ranks on 2 devices
 * (A2ASIM_DEVICES=2).
 *   buggy: after creating its communicator on device rank, each rank
 *          switches the current device to (rank + 1) % 2 (a helper thread's
 *          or a library's cudaSetDevice) and then calls ncclAllReduce;
 *   fixed: the current device is the communicator's at the call. */
#include "local_common.h"

#define N 1024

static int rank_main(int rank, int nranks, ncclComm_t comm, void *arg) {
  int fixed = *(int *)arg;
  cudaStream_t s = lc_stream();
  float *buf = lc_dalloc(N * sizeof(float));
  if (!fixed) LC_CUDA(cudaSetDevice((rank + 1) % 2));
  LC_TRY(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comm, s));
  LC_CUDA(cudaSetDevice(rank));
  LC_CUDA(cudaStreamSynchronize(s));
  return 0;
}

int main(int argc, char **argv) {
  int fixed = lc_fixed(argc, argv);
  return lc_run_ranks(2, rank_main, &fixed);
}
