/* group_unbalanced.c - group.unbalanced.
 *   extra-end: ncclGroupEnd once more than ncclGroupStart (NCCL returns
 *              ncclInvalidUsage);
 *   blocking:  a group opened and never closed before cudaStreamSynchronize
 *              of a stream the group does not use (the missing ncclGroupEnd
 *              on an early-return path), closed later;
 *   open-exit: the process exits with a group still open;
 *   fixed:     balanced, nested groups around an operation. */
#include "e2e_common.h"

#define N 1024

__attribute__((noinline)) static void post_allreduce(ncclComm_t comm, float *buf, cudaStream_t s) {
  E2E_NCCL(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comm, s));
}

int main(int argc, char **argv) {
  E2E_CUDA(cudaSetDevice(0));
  ncclComm_t comm = e2e_comm1();
  cudaStream_t s = e2e_stream(), other = e2e_stream();
  float *buf = e2e_dalloc(N * sizeof(float));
  if (e2e_arg_is(argc, argv, "extra-end")) {
    E2E_NCCL(ncclGroupStart());
    post_allreduce(comm, buf, s);
    E2E_NCCL(ncclGroupEnd());
    E2E_TRY(ncclGroupEnd());
  } else if (e2e_arg_is(argc, argv, "blocking")) {
    E2E_NCCL(ncclGroupStart());
    E2E_CUDA(cudaStreamSynchronize(other));
    post_allreduce(comm, buf, s);
    E2E_NCCL(ncclGroupEnd());
  } else if (e2e_arg_is(argc, argv, "open-exit")) {
    E2E_NCCL(ncclGroupStart());
    printf("exiting with the group open\n");
    fflush(stdout);
    exit(0); /* no communicator teardown: NCCL is inside a group */
  } else {
    E2E_NCCL(ncclGroupStart());
    E2E_NCCL(ncclGroupStart());
    post_allreduce(comm, buf, s);
    E2E_NCCL(ncclGroupEnd());
    E2E_NCCL(ncclGroupEnd());
  }
  E2E_CUDA(cudaStreamSynchronize(s));
  E2E_NCCL(ncclCommDestroy(comm));
  return 0;
}
