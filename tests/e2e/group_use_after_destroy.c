/* group_use_after_destroy.c - group.use-after-destroy.
 *   buggy: ncclAllReduce on a communicator after ncclCommDestroy (a cached
 *          handle outliving the process group);
 *   query: ncclCommCount and ncclCommGetAsyncError on it after
 *          ncclCommDestroy (the hot query wrappers' events), each answered
 *          ncclInvalidArgument as without the tool;
 *   fixed: a new communicator is created and used instead. */
#include "e2e_common.h"

#define N 1024

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv), query = e2e_arg_is(argc, argv, "query");
  E2E_CUDA(cudaSetDevice(0));
  cudaStream_t s = e2e_stream();
  float *buf = e2e_dalloc(N * sizeof(float));
  ncclComm_t comm = e2e_comm1();
  int n = 0;
  ncclResult_t async = ncclSuccess;
  E2E_NCCL(ncclCommCount(comm, &n));
  E2E_NCCL(ncclCommGetAsyncError(comm, &async));
  if (n != 1 || async != ncclSuccess) return E2E_FAILED;
  E2E_NCCL(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comm, s));
  E2E_CUDA(cudaStreamSynchronize(s));
  E2E_NCCL(ncclCommDestroy(comm));
  if (query) {
    if (ncclCommCount(comm, &n) != ncclInvalidArgument) return E2E_FAILED;
    if (ncclCommGetAsyncError(comm, &async) != ncclInvalidArgument) return E2E_FAILED;
    return 0;
  }
  ncclComm_t fresh = fixed ? e2e_comm1() : NULL;
  E2E_TRY(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, fixed ? fresh : comm, s));
  E2E_CUDA(cudaStreamSynchronize(s));
  if (fresh) E2E_NCCL(ncclCommDestroy(fresh));
  return 0;
}
