/* group_use_after_destroy.c - group.use-after-destroy.
 *   buggy: ncclAllReduce on a communicator after ncclCommDestroy (a cached
 *          handle outliving the process group);
 *   fixed: a new communicator is created and used instead. */
#include "local_common.h"

#define N 1024

int main(int argc, char **argv) {
  int fixed = lc_fixed(argc, argv);
  LC_CUDA(cudaSetDevice(0));
  cudaStream_t s = lc_stream();
  float *buf = lc_dalloc(N * sizeof(float));
  ncclComm_t comm = lc_comm1();
  LC_NCCL(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comm, s));
  LC_CUDA(cudaStreamSynchronize(s));
  LC_NCCL(ncclCommDestroy(comm));
  ncclComm_t fresh = fixed ? lc_comm1() : NULL;
  LC_TRY(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, fixed ? fresh : comm, s));
  LC_CUDA(cudaStreamSynchronize(s));
  if (fresh) LC_NCCL(ncclCommDestroy(fresh));
  return 0;
}
