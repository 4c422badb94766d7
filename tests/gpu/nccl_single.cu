/* nccl_single.cu - a single-rank NCCL program under the shim on a real GPU
 * (tests/gpu/run.sh step "nccl-single"): ncclSend/ncclRecv to self inside a
 * group, AllReduce, AlltoAll, all with the data checked, every buffer and
 * stream ordered correctly. Expected: exit 0 and zero a2acheck findings
 * (perf.summary aside).
 *
 *   nccl_single self-unmatched   (step "nccl-self-unmatched") a send to self
 *       with no receive from self in its group, then the reverse: NCCL
 *       refuses each group with ncclInvalidUsage ("Trying to send to self
 *       without a matching recv"), never a hang; the shim must hand the
 *       application that same result. Exit 0 when both are refused so.
 *
 *   nccl_single nonblocking      (step "nccl-nonblocking") a non-blocking
 *       communicator (config.blocking = 0: init, operations and split may
 *       return ncclInProgress; the program polls ncclCommGetAsyncError as
 *       NCCL documents), an AllReduce on it, a non-blocking ncclCommSplit,
 *       an AlltoAll on the child; data checked, zero findings expected and
 *       perf.summary counting the operations the communicators accepted. */
#include <string.h>

#include "gpu_common.h"

/* Waits until a non-blocking communicator's pending call is done. */
static void g_nb_wait(ncclComm_t comm) {
  ncclResult_t st;
  do G_NCCL(ncclCommGetAsyncError(comm, &st));
  while (st == ncclInProgress);
  G_NCCL(st);
}
#define G_NB(call, comm)                                                           \
  do {                                                                             \
    ncclResult_t r_ = (call);                                                      \
    if (r_ != ncclInProgress) G_NCCL(r_);                                          \
    g_nb_wait(comm);                                                               \
  } while (0)

/* The buffers every mode uses: n floats to send and receive, a pinned
 * error counter (zeroed), a non-blocking stream. */
static void g_buffers(size_t n, float **send, float **recv, unsigned long long **errors, cudaStream_t *s) {
  G_CUDA(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  G_CUDA(cudaMalloc((void **)send, n * sizeof(float)));
  G_CUDA(cudaMalloc((void **)recv, n * sizeof(float)));
  G_CUDA(cudaMallocHost((void **)errors, sizeof **errors));
  **errors = 0;
}
static void g_buffers_free(float *send, float *recv, unsigned long long *errors, cudaStream_t s) {
  G_CUDA(cudaFree(send));
  G_CUDA(cudaFree(recv));
  G_CUDA(cudaFreeHost(errors));
  G_CUDA(cudaStreamDestroy(s));
}

static int nonblocking(void) {
  g_sim_register();
  G_CUDA(cudaSetDevice(0));
  const size_t n = 1 << 20;
  ncclUniqueId id;
  ncclComm_t comm, child = NULL;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  G_NCCL(ncclGetUniqueId(&id));
  G_NB(ncclCommInitRankConfig(&comm, 1, id, 0, &cfg), comm);
  float *send, *recv;
  unsigned long long *errors;
  cudaStream_t s;
  g_buffers(n, &send, &recv, &errors, &s);
  g_fill<<<64, 256, 0, s>>>(recv, n, 3.0f);
  G_NB(ncclAllReduce(recv, recv, n, ncclFloat, ncclSum, comm, s), comm);
  g_check<<<64, 256, 0, s>>>(recv, n, 3.0f, errors);
  G_CUDA(cudaStreamSynchronize(s));
  unsigned long long e1 = *errors;
  /* As NCCL documents and PyTorch does: the parent polled (above), then
   * the pointer NCCL stores when the child's job ends, then the child. */
  G_NB(ncclCommSplit(comm, 0, 0, &child, &cfg), comm);
  while (!__atomic_load_n(&child, __ATOMIC_ACQUIRE)) {
  }
  g_nb_wait(child);
  int cn = 0, cr = -1;
  G_NCCL(ncclCommCount(child, &cn));
  G_NCCL(ncclCommUserRank(child, &cr));
  g_fill<<<64, 256, 0, s>>>(send, n, 5.0f);
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  G_NB(ncclAlltoAll(send, recv, n, ncclFloat, child, s), child);
#else
  G_NCCL(ncclGroupStart());
  G_NCCL(ncclSend(send, n, ncclFloat, 0, child, s));
  G_NCCL(ncclRecv(recv, n, ncclFloat, 0, child, s));
  G_NB(ncclGroupEnd(), child);
#endif
  g_check<<<64, 256, 0, s>>>(recv, n, 5.0f, errors);
  G_CUDA(cudaStreamSynchronize(s));
  unsigned long long e2 = *errors - e1;
  printf("{\"mode\": \"nonblocking\", \"child_size\": %d, \"child_rank\": %d, \"allreduce_errors\": %llu, "
         "\"alltoall_errors\": %llu}\n",
         cn, cr, e1, e2);
  /* A non-blocking communicator is finalized (polled) before it is freed. */
  G_NB(ncclCommFinalize(child), child);
  G_NB(ncclCommFinalize(comm), comm);
  G_NCCL(ncclCommDestroy(child));
  G_NCCL(ncclCommDestroy(comm));
  g_buffers_free(send, recv, errors, s);
  return (e1 || e2 || cn != 1 || cr != 0) ? 3 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "nonblocking") == 0) return nonblocking();
  ncclComm_t comm = g_one_rank_comm();
  const size_t n = 1 << 20;
  if (argc > 1 && strcmp(argv[1], "self-unmatched") == 0) {
    float *buf;
    cudaStream_t hs;
    G_CUDA(cudaStreamCreateWithFlags(&hs, cudaStreamNonBlocking));
    G_CUDA(cudaMalloc((void **)&buf, n * sizeof(float)));
    G_NCCL(ncclGroupStart());
    G_NCCL(ncclSend(buf, n, ncclFloat, 0, comm, hs));
    ncclResult_t r1 = ncclGroupEnd();
    G_NCCL(ncclGroupStart());
    G_NCCL(ncclRecv(buf, n, ncclFloat, 0, comm, hs));
    ncclResult_t r2 = ncclGroupEnd();
    G_CUDA(cudaStreamSynchronize(hs));
    printf("{\"send_to_self_alone\": %d, \"recv_from_self_alone\": %d}\n", (int)r1, (int)r2);
    G_NCCL(ncclCommDestroy(comm));
    return r1 == ncclInvalidUsage && r2 == ncclInvalidUsage ? 0 : 1;
  }
  float *send, *recv;
  unsigned long long *errors;
  cudaStream_t s;
  g_buffers(n, &send, &recv, &errors, &s);

  /* 1. send/recv to self in a group. */
  g_fill<<<64, 256, 0, s>>>(send, n, 1.0f);
  g_fill<<<64, 256, 0, s>>>(recv, n, -7.0f);
  G_NCCL(ncclGroupStart());
  G_NCCL(ncclSend(send, n, ncclFloat, 0, comm, s));
  G_NCCL(ncclRecv(recv, n, ncclFloat, 0, comm, s));
  G_NCCL(ncclGroupEnd());
  g_check<<<64, 256, 0, s>>>(recv, n, 1.0f, errors);
  G_CUDA(cudaStreamSynchronize(s));
  unsigned long long e1 = *errors;

  /* 2. AllReduce (sum over one rank = identity), in place. */
  g_fill<<<64, 256, 0, s>>>(recv, n, 3.0f);
  G_NCCL(ncclAllReduce(recv, recv, n, ncclFloat, ncclSum, comm, s));
  g_check<<<64, 256, 0, s>>>(recv, n, 3.0f, errors);
  G_CUDA(cudaStreamSynchronize(s));
  unsigned long long e2 = *errors - e1;

  /* 3. AlltoAll (one peer: a copy). */
  g_fill<<<64, 256, 0, s>>>(send, n, 5.0f);
  g_alltoall(send, recv, n, comm, s);
  g_check<<<64, 256, 0, s>>>(recv, n, 5.0f, errors);
  G_CUDA(cudaStreamSynchronize(s));
  unsigned long long e3 = *errors - e1 - e2;

  int version = 0;
  G_NCCL(ncclGetVersion(&version));
  printf("{\"nccl_version\": %d, \"sendrecv_errors\": %llu, \"allreduce_errors\": %llu, "
         "\"alltoall_errors\": %llu, \"alltoall_api\": \"%s\"}\n",
         version, e1, e2, e3,
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
         "ncclAlltoAll"
#else
         "grouped send/recv"
#endif
  );
  G_NCCL(ncclCommDestroy(comm));
  g_buffers_free(send, recv, errors, s);
  return (e1 || e2 || e3) ? 3 : 0;
}
