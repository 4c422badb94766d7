/* scenario_async_op.c - torch's async_op=True pattern (torch >= 2.8), 4
 * ranks as forked processes, 12 steps:
 *   input produced by a kernel on the current stream;
 *   cudaEventRecord(start, current); cudaStreamWaitEvent(comm_stream, start);
 *   the collective on the process group's pool stream (non-blocking, high
 *   priority); cudaEventRecord(end, comm_stream);
 *   work.wait(): cudaStreamWaitEvent(current, end);
 *   the consumer kernel reads the output on the current stream.
 * The comm stream is delayed (a2asim) so that a missing edge shows as
 * wrong data.
 *
 *   scenario_async_op wait      correct (all_reduce + all_to_all)
 *   scenario_async_op record_stream  correct (torch <= 2.7): every step's
 *                               input is a fresh block from a small caching
 *                               allocator; "freeing" it records an event on
 *                               the pool stream (record_stream) and the
 *                               allocator reuses a block only once
 *                               cudaEventQuery says that event completed
 *   scenario_async_op query     correct: the host polls work.is_completed()
 *                               (cudaEventQuery(end) until cudaSuccess), then
 *                               the consumer runs on a third stream with no
 *                               event edge (the host already observed end)
 *   scenario_async_op squery    correct: the host polls cudaStreamQuery(pool)
 *                               until cudaSuccess, consumer on a third stream
 *   scenario_async_op devsync   correct: torch.cuda.synchronize()
 *                               (cudaDeviceSynchronize), consumer on a third
 *                               stream
 *   scenario_async_op sync      correct: work.synchronize() via
 *                               cudaEventSynchronize(end), consumer on a
 *                               third stream
 *   scenario_async_op early     BUGGY: work.wait() is issued before the end
 *                               event is recorded for this step
 *                               (cudaStreamWaitEvent captures the event's
 *                               PREVIOUS record: last step's) ->
 *                               stream.unsynced-output
 *   scenario_async_op chain_skip  BUGGY: "wait", but rank 3 skips the AllReduce
 *                               of step 2, and every step ends with the
 *                               host in cudaEventSynchronize on an event of
 *                               the CURRENT stream, which waits for the pool
 *                               stream's end event behind the hung AllReduce
 *                               -> group.deadlock through the cross-stream
 *                               chain, exit 66
 *   scenario_async_op third     BUGGY: work.wait() was forgotten; the
 *                               consumer runs on a third stream that waits
 *                               for the input's event only
 *                               (stream.unsynced-output, wrong data)
 * Exit status: 0 data right, 3 data wrong (see scenario_common.h). */
#include "scenario_common.h"

#define NR 4
#define N 4096L /* floats per rank */

static const char *mode;

/* A caching allocator in miniature (record_stream mode). */
typedef struct cblock { float *p; cudaEvent_t freed; int busy, has_event; } cblock;
static cblock g_blocks[16];
static float *cache_alloc(void) {
  for (int i = 0; i < 16; i++) {
    cblock *b = &g_blocks[i];
    if (!b->p || b->busy) continue;
    if (b->has_event) {
      cudaError_t q = cudaEventQuery(b->freed);
      if (q == cudaErrorNotReady) continue; /* still used by a side stream */
      SC_CUDA(q);
    }
    b->busy = 1;
    return b->p;
  }
  for (int i = 0; i < 16; i++)
    if (!g_blocks[i].p) {
      SC_CUDA(cudaMalloc((void **)&g_blocks[i].p, N * sizeof(float)));
      SC_CUDA(cudaEventCreateWithFlags(&g_blocks[i].freed, cudaEventDisableTiming));
      g_blocks[i].busy = 1;
      return g_blocks[i].p;
    }
  fprintf(stderr, "cache exhausted\n");
  exit(1);
}
/* free with record_stream(side): the block is reusable once side's work up
 * to now has completed */
static void cache_free(float *p, cudaStream_t side) {
  for (int i = 0; i < 16; i++)
    if (g_blocks[i].p == p) {
      SC_CUDA(cudaEventRecord(g_blocks[i].freed, side));
      g_blocks[i].has_event = 1;
      g_blocks[i].busy = 0;
      return;
    }
}

static int rank_main(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  int lo, hi;
  SC_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t cur, pool, third;
  SC_CUDA(cudaStreamCreate(&cur));
  SC_CUDA(cudaStreamCreateWithPriority(&pool, cudaStreamNonBlocking, hi));
  SC_CUDA(cudaStreamCreateWithFlags(&third, cudaStreamNonBlocking));
  SC_CUDA((cudaError_t)a2asim_stream_set_delay(pool, 3000));
  float *in, *red, *a2a, *acc;
  SC_CUDA(cudaMalloc((void **)&in, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&red, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&a2a, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&acc, 2 * N * sizeof(float)));
  SC_CUDA(cudaMemsetAsync(acc, 0, 2 * N * sizeof(float), cur));
  cudaEvent_t start, end;
  SC_CUDA(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
  SC_CUDA(cudaEventCreateWithFlags(&end, cudaEventDisableTiming));
  const int steps = 12;
  int rs = strcmp(mode, "record_stream") == 0;
  float *in0 = in;
  for (int t = 0; t < steps; t++) {
    if (rs) in = cache_alloc();
    /* in[i] = rank + t + i */
    sc_fill(in, N, (float)(rank + t), 1.0f, cur);
    SC_CUDA(cudaEventRecord(start, cur));
    SC_CUDA(cudaStreamWaitEvent(pool, start, 0));
    if (strcmp(mode, "early") == 0) SC_CUDA(cudaStreamWaitEvent(cur, end, 0)); /* the bug */
    if (!(strcmp(mode, "chain_skip") == 0 && rank == 3 && t == 2))
      SC_NCCL(ncclAllReduce(in, red, N, ncclFloat32, ncclSum, comm, pool));
    SC_NCCL(ncclAlltoAll(in, a2a, N / nranks, ncclFloat32, comm, pool));
    SC_CUDA(cudaEventRecord(end, pool));
    cudaStream_t consumer = cur;
    if (strcmp(mode, "early") == 0) {
      /* consumer = cur, already "waited" */
    } else if (strcmp(mode, "wait") == 0 || strcmp(mode, "chain_skip") == 0 || rs) {
      SC_CUDA(cudaStreamWaitEvent(cur, end, 0));
    } else if (strcmp(mode, "query") == 0) {
      cudaError_t q;
      while ((q = cudaEventQuery(end)) == cudaErrorNotReady) sched_yield();
      SC_CUDA(q);
      consumer = third;
    } else if (strcmp(mode, "squery") == 0) {
      cudaError_t q;
      while ((q = cudaStreamQuery(pool)) == cudaErrorNotReady) sched_yield();
      SC_CUDA(q);
      consumer = third;
    } else if (strcmp(mode, "devsync") == 0) {
      SC_CUDA(cudaDeviceSynchronize());
      consumer = third;
    } else if (strcmp(mode, "sync") == 0) {
      SC_CUDA(cudaEventSynchronize(end));
      consumer = third;
    } else { /* third: forgot work.wait() */
      SC_CUDA(cudaStreamWaitEvent(third, start, 0));
      consumer = third;
    }
    sc_axpy(acc, red, N, 1.0f, consumer);
    sc_axpy(acc + N, a2a, N, 1.0f, consumer);
    /* the next step's fill overwrites `in`, which the pool stream reads:
     * torch's caching allocator would not reuse it before `end` either */
    if (rs) cache_free(in, pool); /* record_stream + free: no wait needed */
    else if (strcmp(mode, "early") != 0) SC_CUDA(cudaStreamWaitEvent(cur, end, 0));
    if (consumer != cur) {
      cudaEvent_t done;
      SC_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      SC_CUDA(cudaEventRecord(done, consumer));
      SC_CUDA(cudaStreamWaitEvent(cur, done, 0));
      SC_CUDA(cudaEventDestroy(done));
    }
    if (strcmp(mode, "chain_skip") == 0) {
      cudaEvent_t step_done;
      SC_CUDA(cudaEventCreateWithFlags(&step_done, cudaEventDisableTiming));
      SC_CUDA(cudaEventRecord(step_done, cur));
      SC_CUDA(cudaEventSynchronize(step_done)); /* loss.item() */
      SC_CUDA(cudaEventDestroy(step_done));
    }
  }
  SC_CUDA(cudaStreamSynchronize(cur));
  float *h = malloc(2 * N * sizeof(float));
  SC_CUDA(cudaMemcpy(h, acc, 2 * N * sizeof(float), cudaMemcpyDeviceToHost));
  long bad = 0;
  int chunk = (int)(N / nranks);
  for (long i = 0; i < N; i++) {
    /* sum over t and r of (r + t + i) */
    double want = 0, want2 = 0;
    for (int t = 0; t < steps; t++) {
      for (int r = 0; r < nranks; r++) want += r + t + i;
      /* a2a: element i comes from rank p = i / chunk, its element rank*chunk + i%chunk */
      int p = (int)(i / chunk);
      want2 += p + t + (rank * chunk + i % chunk);
    }
    if (h[i] != (float)want && bad++ < 3) fprintf(stderr, "rank %d: red[%ld]=%g want %g\n", rank, i, h[i], want);
    if (h[N + i] != (float)want2 && bad++ < 3)
      fprintf(stderr, "rank %d: a2a[%ld]=%g want %g\n", rank, i, h[N + i], want2);
  }
  sc_sh->result[rank] = bad;
  free(h);
  SC_CUDA(cudaEventDestroy(start));
  SC_CUDA(cudaEventDestroy(end));
  SC_CUDA(cudaStreamSynchronize(pool));
  for (int i = 0; i < 16; i++)
    if (g_blocks[i].p) {
      SC_CUDA(cudaFree(g_blocks[i].p));
      SC_CUDA(cudaEventDestroy(g_blocks[i].freed));
    }
  SC_CUDA(cudaFree(in0));
  SC_CUDA(cudaFree(red));
  SC_CUDA(cudaFree(a2a));
  SC_CUDA(cudaFree(acc));
  SC_CUDA(cudaStreamDestroy(cur));
  SC_CUDA(cudaStreamDestroy(pool));
  SC_CUDA(cudaStreamDestroy(third));
  SC_NCCL(ncclCommDestroy(comm));
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "wait";
  return sc_fork_ranks(NR, rank_main, NULL);
}
