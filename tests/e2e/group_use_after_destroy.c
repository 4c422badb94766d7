/* group_use_after_destroy.c - group.use-after-destroy.
 *   buggy: ncclAllReduce on a communicator after ncclCommDestroy (a cached
 *          handle outliving the process group);
 *   query: ncclCommCount and ncclCommGetAsyncError on it after
 *          ncclCommDestroy (the hot query wrappers' events), each answered
 *          ncclInvalidArgument as without the tool;
 *   fixed: a new communicator is created and used instead;
 *   loop-destroy, loop-abort, loop-finalize: ncclCommCount from one call
 *          site, QUERIES times before the end of the communicator (the
 *          query wrappers' quiet path once the thread's lookup memo holds
 *          it) and QUERIES times after it: one finding counted QUERIES
 *          times after ncclCommDestroy or ncclCommAbort (each answered
 *          ncclInvalidArgument), none after ncclCommFinalize (answered);
 *   threads: another thread queries the communicator from one site, quiet
 *          before the main thread destroys it, then QUERIES times after:
 *          one finding counted QUERIES times. */
#include "e2e_common.h"

#define N 1024
#define QUERIES 3

/* ncclCommCount on comm from one call site, `times` times, each answered
 * `want` (and, when answered, the size 1). */
__attribute__((noinline)) static int count_queries(ncclComm_t comm, int times, ncclResult_t want) {
  for (int i = 0; i < times; i++) {
    int n = -1;
    if (ncclCommCount(comm, &n) != want) return E2E_FAILED;
    if (want == ncclSuccess && n != 1) return E2E_FAILED;
  }
  return 0;
}

static ncclComm_t g_comm;
static e2e_barrier g_bar;

static void *query_thread(void *arg) {
  int *st = arg;
  *st = count_queries(g_comm, QUERIES, ncclSuccess);
  e2e_barrier_wait(&g_bar); /* queried while active */
  e2e_barrier_wait(&g_bar); /* destroyed by the main thread */
  if (*st == 0) *st = count_queries(g_comm, QUERIES, ncclInvalidArgument);
  return NULL;
}

static int loop_mode(const char *how) {
  E2E_CUDA(cudaSetDevice(0));
  ncclComm_t comm = e2e_comm1();
  if (count_queries(comm, QUERIES, ncclSuccess)) return E2E_FAILED;
  if (strcmp(how, "finalize") == 0) {
    E2E_NCCL(ncclCommFinalize(comm));
    if (count_queries(comm, QUERIES, ncclSuccess)) return E2E_FAILED;
    E2E_NCCL(ncclCommDestroy(comm));
    return 0;
  }
  if (strcmp(how, "abort") == 0) E2E_NCCL(ncclCommAbort(comm));
  else E2E_NCCL(ncclCommDestroy(comm));
  return count_queries(comm, QUERIES, ncclInvalidArgument);
}

static int threads_mode(void) {
  E2E_CUDA(cudaSetDevice(0));
  g_comm = e2e_comm1();
  e2e_barrier_init(&g_bar, 2);
  int st = 0;
  pthread_t t;
  if (pthread_create(&t, NULL, query_thread, &st) != 0) return E2E_FAILED;
  e2e_barrier_wait(&g_bar);
  E2E_NCCL(ncclCommDestroy(g_comm));
  e2e_barrier_wait(&g_bar);
  pthread_join(t, NULL);
  return st;
}

int main(int argc, char **argv) {
  if (argc > 1 && strncmp(argv[1], "loop-", 5) == 0) return loop_mode(argv[1] + 5);
  if (e2e_arg_is(argc, argv, "threads")) return threads_mode();
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
