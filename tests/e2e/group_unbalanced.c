/* group_unbalanced.c - group.unbalanced.
 *   extra-end: ncclGroupEnd once more than ncclGroupStart (NCCL returns
 *              ncclInvalidUsage);
 *   blocking:  a group opened and never closed before cudaStreamSynchronize
 *              of a stream the group does not use (the missing ncclGroupEnd
 *              on an early-return path), closed later;
 *   open-exit: the process exits with a group still open;
 *   fixed:     balanced, nested groups around an operation. */
#include "local_common.h"

#define N 1024

__attribute__((noinline)) static void post_allreduce(ncclComm_t comm, float *buf, cudaStream_t s) {
  LC_NCCL(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comm, s));
}

int main(int argc, char **argv) {
  LC_CUDA(cudaSetDevice(0));
  ncclComm_t comm = lc_comm1();
  cudaStream_t s = lc_stream(), other = lc_stream();
  float *buf = lc_dalloc(N * sizeof(float));
  if (lc_arg_is(argc, argv, "extra-end")) {
    LC_NCCL(ncclGroupStart());
    post_allreduce(comm, buf, s);
    LC_NCCL(ncclGroupEnd());
    LC_TRY(ncclGroupEnd());
  } else if (lc_arg_is(argc, argv, "blocking")) {
    LC_NCCL(ncclGroupStart());
    LC_CUDA(cudaStreamSynchronize(other));
    post_allreduce(comm, buf, s);
    LC_NCCL(ncclGroupEnd());
  } else if (lc_arg_is(argc, argv, "open-exit")) {
    LC_NCCL(ncclGroupStart());
    printf("exiting with the group open\n");
    fflush(stdout);
    exit(0); /* no communicator teardown: NCCL is inside a group */
  } else {
    LC_NCCL(ncclGroupStart());
    LC_NCCL(ncclGroupStart());
    post_allreduce(comm, buf, s);
    LC_NCCL(ncclGroupEnd());
    LC_NCCL(ncclGroupEnd());
  }
  LC_CUDA(cudaStreamSynchronize(s));
  LC_NCCL(ncclCommDestroy(comm));
  return 0;
}
