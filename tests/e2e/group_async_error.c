/* group_async_error.c - group.async-error.
 * A non-blocking ncclCommInitRank fails asynchronously: the process joins
 * rank 0 of a 2-rank communicator twice with one id (the second join fails
 * with ncclInvalidUsage, reported by ncclCommGetAsyncError).
 *   buggy: the program polls the async error, ignores it and posts an
 *          all-reduce on the failed communicator;
 *   fixed: it sees the error and aborts the communicator. */
#include "e2e_common.h"

#define N 1024

int main(int argc, char **argv) {
  int fixed = e2e_fixed(argc, argv);
  E2E_CUDA(cudaSetDevice(0));
  cudaStream_t s = e2e_stream();
  float *buf = e2e_dalloc(N * sizeof(float));
  ncclUniqueId id;
  E2E_NCCL(ncclGetUniqueId(&id));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t a = NULL, b = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&a, 2, id, 0, &cfg);
  printf("first join -> %d\n", (int)r);
  r = ncclCommInitRankConfig(&b, 2, id, 0, &cfg);
  printf("second join -> %d\n", (int)r);
  if (!a || !b) return 1;
  /* The two joins race for rank 0: whichever loses fails; the winner waits
   * for a rank 1 that never comes. Poll both until one reports an error. */
  ncclComm_t failed = NULL, pending = NULL;
  ncclResult_t async = ncclInProgress;
  while (!failed) {
    E2E_NCCL(ncclCommGetAsyncError(a, &async));
    if (async != ncclInProgress) { failed = a; pending = b; break; }
    E2E_NCCL(ncclCommGetAsyncError(b, &async));
    if (async != ncclInProgress) { failed = b; pending = a; }
  }
  printf("async error of the losing join: %d\n", (int)async);
  if (!fixed) E2E_TRY(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, failed, s));
  E2E_TRY(ncclCommAbort(failed));
  E2E_TRY(ncclCommAbort(pending)); /* rank 1 never comes: end its init */
  return 0;
}
