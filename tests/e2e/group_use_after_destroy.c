/* group_use_after_destroy.c - group.use-after-destroy.
 *   buggy: ncclAllReduce on a communicator after ncclCommDestroy (a cached
 *          handle outliving the process group);
 *   fixed: a new communicator is created and used instead. */
#include "e2e_common.h"

#define N 1024

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  E2E_CUDA(cudaSetDevice(0));
  cudaStream_t s = e2e_stream();
  float *buf = e2e_dalloc(N * sizeof(float));
  ncclComm_t comm = e2e_comm1();
  E2E_NCCL(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comm, s));
  E2E_CUDA(cudaStreamSynchronize(s));
  E2E_NCCL(ncclCommDestroy(comm));
  ncclComm_t fresh = fixed ? e2e_comm1() : NULL;
  E2E_TRY(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, fixed ? fresh : comm, s));
  E2E_CUDA(cudaStreamSynchronize(s));
  if (fresh) E2E_NCCL(ncclCommDestroy(fresh));
  return 0;
}
