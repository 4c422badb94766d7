/* scenario_lazy_p2p.c - pipeline parallelism the way torch does lazy p2p:
 * 4 ranks as forked processes, a world communicator from the launcher's id,
 * and one 2-rank communicator per neighbour pair (r, r+1) created at first
 * use: the pair's lower rank calls ncclGetUniqueId and publishes the id
 * (a TCPStore stand-in: shared memory + a host barrier), both call
 * ncclCommInitRank(2). Each pair communicator has its own stream.
 * 6 micro-batches: forward (recv from r-1, compute, send to r+1), backward
 * (recv from r+1, send to r-1), every p2p op outside a group (isend/irecv)
 * with event edges to the compute stream, then a world AllReduce of the
 * "gradients". Data verified. Correct: exit 0, no finding.
 *
 *   scenario_lazy_p2p ok
 *   scenario_lazy_p2p batch    the same, every stage's recv+send in one
 *                              group (batch_isend_irecv), zero-count
 *                              sends/recvs at the pipeline ends
 *   scenario_lazy_p2p pipe_size  BUGGY: at micro-batch 2 stage 2 receives
 *                              only N/2 activations from stage 1 (on the
 *                              pair communicator whose id stage 1 created)
 *                              -> size.p2p-mismatch naming ranks 1 and 2
 *   scenario_lazy_p2p cross_cycle  BUGGY: ranks 0 and 1 on one stream each:
 *                              rank 0 does a world AllReduce, then sends to 1
 *                              on the pair communicator; rank 1 first receives
 *                              from 0, then does the AllReduce (ranks 2, 3 just
 *                              do the AllReduce): a cycle through two
 *                              communicators -> group.deadlock, exit 66
 *   scenario_lazy_p2p p2p_cycle  BUGGY: stages 0 and 1 exchange 4 MiB with
 *                              blocking-style ncclSend then ncclRecv, each
 *                              outside a group, both sending first: each
 *                              send waits for a receive queued behind the
 *                              peer's own send -> group.deadlock, exit 66
 */
#include "scenario_common.h"

#define NR 4
#define N 2048L

static const char *mode;

/* id of pair (r, r+1) lives in sc_sh->ids[r] */
static ncclComm_t pair_comm(int lo, int me) {
  ncclComm_t c;
  SC_NCCL(ncclCommInitRank(&c, 2, sc_sh->ids[lo], me == lo ? 0 : 1));
  return c;
}

/* p2p_cycle: only the pair (0, 1) communicates */
static int cycle_main(int rank) {
  if (rank + 1 < NR) SC_NCCL(ncclGetUniqueId(&sc_sh->ids[rank]));
  sc_barrier();
  if (rank > 1) return 0;
  ncclComm_t c = pair_comm(0, rank);
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  size_t big = (size_t)4 << 20;
  void *sb, *rb;
  SC_CUDA(cudaMalloc(&sb, big));
  SC_CUDA(cudaMalloc(&rb, big));
  int peer = 1 - rank;
  SC_NCCL(ncclSend(sb, big, ncclUint8, peer, c, s)); /* the bug: both send first, */
  SC_NCCL(ncclRecv(rb, big, ncclUint8, peer, c, s)); /* outside a group */
  SC_CUDA(cudaStreamSynchronize(s));
  SC_CUDA(cudaFree(sb));
  SC_CUDA(cudaFree(rb));
  SC_NCCL(ncclCommDestroy(c));
  return 0;
}

static int cross_main(int rank, int nranks, ncclUniqueId id) {
  ncclComm_t world, pair = NULL;
  SC_NCCL(ncclCommInitRank(&world, nranks, id, rank));
  if (rank == 0) SC_NCCL(ncclGetUniqueId(&sc_sh->ids[0]));
  sc_barrier();
  if (rank < 2) pair = pair_comm(0, rank);
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *a, *b;
  SC_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, N * sizeof(float)));
  if (rank == 1) SC_NCCL(ncclRecv(b, N, ncclFloat32, 0, pair, s));
  SC_NCCL(ncclAllReduce(a, a, N, ncclFloat32, ncclSum, world, s));
  if (rank == 0) SC_NCCL(ncclSend(a, N, ncclFloat32, 1, pair, s));
  SC_CUDA(cudaStreamSynchronize(s));
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  if (pair) SC_NCCL(ncclCommDestroy(pair));
  SC_NCCL(ncclCommDestroy(world));
  return 0;
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  if (strcmp(mode, "p2p_cycle") == 0) return cycle_main(rank);
  if (strcmp(mode, "cross_cycle") == 0) return cross_main(rank, nranks, id);
  (void)arg;
  ncclComm_t world, prev = NULL, next = NULL;
  SC_NCCL(ncclCommInitRank(&world, nranks, id, rank));
  cudaStream_t comp, sprev = NULL, snext = NULL, sworld;
  SC_CUDA(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithFlags(&sworld, cudaStreamNonBlocking));
  /* lazy creation: ids first (lower rank of each pair), then the inits in
   * pair order, so no two ranks wait for each other */
  if (rank + 1 < nranks) SC_NCCL(ncclGetUniqueId(&sc_sh->ids[rank]));
  sc_barrier();
  if (rank > 0) {
    prev = pair_comm(rank - 1, rank);
    SC_CUDA(cudaStreamCreateWithFlags(&sprev, cudaStreamNonBlocking));
  }
  if (rank + 1 < nranks) {
    next = pair_comm(rank, rank);
    SC_CUDA(cudaStreamCreateWithFlags(&snext, cudaStreamNonBlocking));
  }
  int batch = strcmp(mode, "batch") == 0;
  float *act, *grad, *wgrad;
  SC_CUDA(cudaMalloc((void **)&act, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&grad, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&wgrad, N * sizeof(float)));
  SC_CUDA(cudaMemsetAsync(wgrad, 0, N * sizeof(float), comp));
  cudaEvent_t e_comp, e_comm;
  SC_CUDA(cudaEventCreateWithFlags(&e_comp, cudaEventDisableTiming));
  SC_CUDA(cudaEventCreateWithFlags(&e_comm, cudaEventDisableTiming));
  const int mb = 6;
  for (int m = 0; m < mb; m++) {
    /* forward: activations = m + rank (each stage adds 1 to what it got) */
    if (rank == 0) {
      sc_fill(act, N, (float)m, 0.0f, comp);
    } else {
      if (batch) {
        SC_NCCL(ncclGroupStart());
        SC_NCCL(ncclRecv(act, N, ncclFloat32, 0, prev, sprev));
        SC_NCCL(ncclSend(act, 0, ncclFloat32, 0, prev, sprev)); /* zero-count */
        SC_NCCL(ncclGroupEnd());
      } else {
        long cnt = strcmp(mode, "pipe_size") == 0 && rank == 2 && m == 2 ? N / 2 : N; /* the bug */
        SC_NCCL(ncclRecv(act, cnt, ncclFloat32, 0, prev, sprev));
      }
      SC_CUDA(cudaEventRecord(e_comm, sprev));
      SC_CUDA(cudaStreamWaitEvent(comp, e_comm, 0));
      float one = 1.0f;
      float *ones;
      SC_CUDA(cudaMallocAsync((void **)&ones, N * sizeof(float), comp));
      sc_fill(ones, N, one, 0.0f, comp);
      sc_axpy(act, ones, N, 1.0f, comp);
      SC_CUDA(cudaFreeAsync(ones, comp));
    }
    if (next) {
      SC_CUDA(cudaEventRecord(e_comp, comp));
      SC_CUDA(cudaStreamWaitEvent(snext, e_comp, 0));
      if (batch) {
        SC_NCCL(ncclGroupStart());
        SC_NCCL(ncclSend(act, N, ncclFloat32, 1, next, snext));
        SC_NCCL(ncclRecv(grad, 0, ncclFloat32, 1, next, snext)); /* zero-count */
        SC_NCCL(ncclGroupEnd());
      } else {
        SC_NCCL(ncclSend(act, N, ncclFloat32, 1, next, snext));
      }
      /* the next micro-batch rewrites act on comp: wait for the send */
      SC_CUDA(cudaEventRecord(e_comm, snext));
      SC_CUDA(cudaStreamWaitEvent(comp, e_comm, 0));
    }
    /* backward: the last stage starts grad = act; others receive it */
    if (!next) {
      sc_copy(grad, act, N, comp);
    } else {
      SC_NCCL(ncclRecv(grad, N, ncclFloat32, 1, next, snext));
      SC_CUDA(cudaEventRecord(e_comm, snext));
      SC_CUDA(cudaStreamWaitEvent(comp, e_comm, 0));
    }
    sc_axpy(wgrad, grad, N, 1.0f, comp);
    if (prev) {
      SC_CUDA(cudaEventRecord(e_comp, comp));
      SC_CUDA(cudaStreamWaitEvent(sprev, e_comp, 0));
      SC_NCCL(ncclSend(grad, N, ncclFloat32, 0, prev, sprev));
      SC_CUDA(cudaEventRecord(e_comm, sprev));
      SC_CUDA(cudaStreamWaitEvent(comp, e_comm, 0));
    }
  }
  /* data-parallel style gradient AllReduce on the world communicator */
  SC_CUDA(cudaEventRecord(e_comp, comp));
  SC_CUDA(cudaStreamWaitEvent(sworld, e_comp, 0));
  SC_NCCL(ncclAllReduce(wgrad, wgrad, N, ncclFloat32, ncclSum, world, sworld));
  SC_CUDA(cudaStreamSynchronize(sworld));
  /* every stage accumulated sum_m (m + nranks - 1); the AllReduce sums 4 */
  float want = 0;
  for (int m = 0; m < mb; m++) want += (float)(m + nranks - 1);
  want *= (float)nranks;
  float *h = malloc(N * sizeof(float));
  SC_CUDA(cudaMemcpy(h, wgrad, N * sizeof(float), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (long i = 0; i < N; i++)
    if (h[i] != want && bad++ < 3) fprintf(stderr, "rank %d: wgrad[%ld]=%g want %g\n", rank, i, h[i], want);
  sc_sh->result[rank] = bad;
  free(h);
  SC_CUDA(cudaStreamSynchronize(comp));
  SC_CUDA(cudaFree(act));
  SC_CUDA(cudaFree(grad));
  SC_CUDA(cudaFree(wgrad));
  SC_CUDA(cudaEventDestroy(e_comp));
  SC_CUDA(cudaEventDestroy(e_comm));
  if (prev) SC_NCCL(ncclCommDestroy(prev));
  if (next) SC_NCCL(ncclCommDestroy(next));
  SC_NCCL(ncclCommDestroy(world));
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "ok";
  return sc_fork_ranks(NR, rank_main, NULL);
}
