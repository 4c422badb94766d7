/* scenario_extra.c - more correct shapes, data verified.
 *
 *   multidev   NCCL's "Multiple Devices per Thread" example: 2 processes
 *              with 2 devices each (4 ranks); each process creates its two
 *              communicators inside ncclGroupStart/End (cudaSetDevice +
 *              ncclCommInitRank per device), then issues AllReduce and a
 *              grouped all-to-all for both devices inside one group
 *   single     one process, nranks = 1: ncclSend/ncclRecv to itself inside
 *              a group, AllReduce, AlltoAll, AllGather (the single-GPU
 *              validation program)
 *   ptds       4 ranks; the collectives run on cudaStreamPerThread (the
 *              per-thread default stream is an ordinary stream, not the
 *              legacy one: no stream.default-stream)
 *   legacy     2 ranks; legacy default stream semantics: a producer kernel
 *              on the legacy default stream (0), the AllReduce on a
 *              BLOCKING stream (cudaStreamCreate), the consumer kernel on
 *              stream 0 again: the implicit synchronization of the legacy
 *              stream with blocking streams orders everything (the
 *              communication stream is delayed so a missing order shows)
 *   churn      2 ranks, 200 steps; every step creates its communication
 *              stream and events and destroys them afterwards (code that
 *              calls cudaStreamCreate in the loop; torch.cuda.Stream() takes
 *              a pooled stream and creates none): correct; the churn costs
 *              host microseconds per step, perf.stream-churn says so (info)
 *   churn_race BUGGY: the same, and from step 150 on the communication
 *              stream no longer waits for the producer's event
 *              -> stream.unsynced-input (plus perf.stream-churn)
 *   watchdog   4 ranks; ProcessGroupNCCL's watchdog: a second thread polls
 *              ncclCommGetAsyncError(comm) and cudaEventQuery(end event of
 *              the latest work) every few hundred microseconds while the
 *              main thread issues async_op collectives on the same
 *              communicator (NCCL allows ncclCommGetAsyncError from another
 *              thread: no group.concurrent-use)
 *   scale16    16 ranks (A2ASIM_DEVICES=16): AlltoAll + AllReduce on the world
 *              communicator and AllReduce on 4 split groups of 4, 4 steps
 *   many_comms 4 ranks, 40 communicators split from the world (per-layer
 *              groups: color k % 2 == 0 ? 0 : rank % 2), all used every
 *              step in the same order, 3 steps
 *   wide_group 2 ranks, 12 communicators (split copies of the world), each
 *              with its own stream; one ncclGroupStart/End holds an
 *              AllReduce on every one of them (more streams per group than
 *              a2acheck tracks per group)
 *   wide_skip  BUGGY: the same, and rank 1 leaves the AllReduce of the 11th
 *              communicator out of its group -> group.deadlock, exit 66
 *   perf_sane  2 ranks, 150 steps of a well-behaved loop: 2 MiB gradient
 *              AllReduce on a high-priority communication stream overlapping
 *              a compute kernel on the compute stream, event edges only,
 *              cudaDeviceSynchronize only every 50 steps (a checkpoint),
 *              streams and events created once: no perf.* warning may fire
 *   shrink     4 ranks; rank 3 leaves after step 2 (destroys its
 *              communicator and exits normally); ranks 0-2 call
 *              ncclCommShrink excluding it and go on with an AllReduce
 * Correct: exit 0, no error/warning finding.
 */
#include "scenario_common.h"

#define N 2048L

static const char *mode;
static int is(const char *m) { return strcmp(mode, m) == 0; }

static long check_all(const float *d, long n, float want, const char *what) {
  float *h = malloc(n * sizeof(float));
  SC_CUDA(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
  long bad = 0;
  for (long i = 0; i < n; i++)
    if (h[i] != want && bad++ < 3) fprintf(stderr, "rank %d: %s[%ld]=%g want %g\n", sc_rank, what, i, h[i], want);
  free(h);
  return bad;
}

/* ---- multidev: process p owns ranks 2p, 2p+1 on devices 2p, 2p+1 ---- */
static int multidev_proc(int proc, int nprocs, ncclUniqueId id, void *arg) {
  (void)arg;
  const int nranks = 2 * nprocs;
  ncclComm_t comms[2];
  cudaStream_t s[2];
  float *buf[2], *a2a_in[2], *a2a_out[2];
  for (int i = 0; i < 2; i++) {
    SC_CUDA(cudaSetDevice(2 * proc + i));
    SC_CUDA(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    SC_CUDA(cudaMalloc((void **)&buf[i], N * sizeof(float)));
    SC_CUDA(cudaMalloc((void **)&a2a_in[i], nranks * N * sizeof(float)));
    SC_CUDA(cudaMalloc((void **)&a2a_out[i], nranks * N * sizeof(float)));
  }
  SC_NCCL(ncclGroupStart());
  for (int i = 0; i < 2; i++) {
    SC_CUDA(cudaSetDevice(2 * proc + i));
    SC_NCCL(ncclCommInitRank(&comms[i], nranks, id, 2 * proc + i));
  }
  SC_NCCL(ncclGroupEnd());
  long bad = 0;
  for (int t = 0; t < 4; t++) {
    for (int i = 0; i < 2; i++) {
      SC_CUDA(cudaSetDevice(2 * proc + i));
      int r = 2 * proc + i;
      sc_fill(buf[i], N, (float)(r + t), 0.0f, s[i]);
      sc_fill(a2a_in[i], nranks * N, (float)(r * 10 + t), 0.0f, s[i]);
    }
    SC_NCCL(ncclGroupStart());
    for (int i = 0; i < 2; i++) {
      SC_NCCL(ncclAllReduce(buf[i], buf[i], N, ncclFloat32, ncclSum, comms[i], s[i]));
      for (int p = 0; p < nranks; p++) {
        SC_NCCL(ncclSend(a2a_in[i] + p * N, N, ncclFloat32, p, comms[i], s[i]));
        SC_NCCL(ncclRecv(a2a_out[i] + p * N, N, ncclFloat32, p, comms[i], s[i]));
      }
    }
    SC_NCCL(ncclGroupEnd());
    for (int i = 0; i < 2; i++) {
      SC_CUDA(cudaSetDevice(2 * proc + i));
      SC_CUDA(cudaStreamSynchronize(s[i]));
      bad += check_all(buf[i], N, (float)(0 + 1 + 2 + 3 + 4 * t), "allreduce");
      for (int p = 0; p < nranks; p++) bad += check_all(a2a_out[i] + p * N, N, (float)(p * 10 + t), "a2a");
    }
  }
  for (int i = 0; i < 2; i++) {
    SC_CUDA(cudaSetDevice(2 * proc + i));
    SC_CUDA(cudaFree(buf[i]));
    SC_CUDA(cudaFree(a2a_in[i]));
    SC_CUDA(cudaFree(a2a_out[i]));
    SC_CUDA(cudaStreamDestroy(s[i]));
    SC_NCCL(ncclCommDestroy(comms[i]));
  }
  sc_sh->result[proc] = bad;
  return bad ? SC_DATA_WRONG : 0;
}

static int run_single(void) {
  sc_rank = 0;
  sc_register_kernels();
  ncclUniqueId id;
  ncclComm_t comm;
  SC_NCCL(ncclGetUniqueId(&id));
  SC_NCCL(ncclCommInitRank(&comm, 1, id, 0));
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *a, *b;
  SC_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, N * sizeof(float)));
  long bad = 0;
  sc_fill(a, N, 5.0f, 0.0f, s);
  SC_NCCL(ncclGroupStart());
  SC_NCCL(ncclSend(a, N, ncclFloat32, 0, comm, s));
  SC_NCCL(ncclRecv(b, N, ncclFloat32, 0, comm, s));
  SC_NCCL(ncclGroupEnd());
  SC_CUDA(cudaStreamSynchronize(s));
  bad += check_all(b, N, 5.0f, "self p2p");
  SC_NCCL(ncclAllReduce(a, a, N, ncclFloat32, ncclSum, comm, s));
  SC_NCCL(ncclAlltoAll(a, b, N, ncclFloat32, comm, s));
  SC_CUDA(cudaStreamSynchronize(s));
  bad += check_all(b, N, 5.0f, "alltoall");
  SC_NCCL(ncclAllGather(b, a, N, ncclFloat32, comm, s));
  SC_CUDA(cudaStreamSynchronize(s));
  bad += check_all(a, N, 5.0f, "allgather");
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  SC_CUDA(cudaStreamDestroy(s));
  SC_NCCL(ncclCommDestroy(comm));
  printf("errors %ld\n", bad);
  return bad ? SC_DATA_WRONG : 0;
}

static int ptds_rank(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t s = cudaStreamPerThread;
  float *a, *g;
  SC_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&g, nranks * N * sizeof(float)));
  long bad = 0;
  for (int t = 0; t < 4; t++) {
    sc_fill(a, N, (float)(rank + t), 0.0f, s);
    SC_NCCL(ncclAllGather(a, g, N, ncclFloat32, comm, s));
    SC_NCCL(ncclAllReduce(a, a, N, ncclFloat32, ncclSum, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
    bad += check_all(a, N, (float)(6 + 4 * t), "allreduce");
    for (int p = 0; p < nranks; p++) bad += check_all(g + p * N, N, (float)(p + t), "allgather");
  }
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(g));
  SC_NCCL(ncclCommDestroy(comm));
  sc_sh->result[rank] = bad;
  return bad ? SC_DATA_WRONG : 0;
}

static int legacy_rank(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t s;
  SC_CUDA(cudaStreamCreate(&s)); /* blocking */
  SC_CUDA((cudaError_t)a2asim_stream_set_delay(s, 3000));
  float *a, *b, *acc;
  SC_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&acc, N * sizeof(float)));
  SC_CUDA(cudaMemsetAsync(acc, 0, N * sizeof(float), 0));
  for (int t = 0; t < 5; t++) {
    sc_fill(a, N, (float)(rank + t), 0.0f, 0); /* legacy default stream */
    SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, comm, s));
    sc_axpy(acc, b, N, 1.0f, 0); /* waits for s (legacy semantics) */
  }
  SC_CUDA(cudaDeviceSynchronize());
  long bad = check_all(acc, N, (float)(1 * 5 + 2 * (0 + 1 + 2 + 3 + 4)), "acc"); /* sum_t (0+t)+(1+t) */
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  SC_CUDA(cudaFree(acc));
  SC_CUDA(cudaStreamDestroy(s));
  SC_NCCL(ncclCommDestroy(comm));
  sc_sh->result[rank] = bad;
  return bad ? SC_DATA_WRONG : 0;
}

static int churn_rank(int rank, int nranks, ncclUniqueId id, void *arg) {
  int race = *(int *)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t comp;
  SC_CUDA(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  SC_CUDA((cudaError_t)a2asim_stream_set_delay(comp, 200));
  float *in, *out;
  SC_CUDA(cudaMalloc((void **)&in, 256 * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&out, 256 * sizeof(float)));
  long bad = 0;
  for (int t = 0; t < 200; t++) {
    cudaStream_t cs;
    cudaEvent_t e1, e2;
    SC_CUDA(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    SC_CUDA(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
    SC_CUDA(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
    sc_fill(in, 256, (float)(rank + t), 0.0f, comp);
    SC_CUDA(cudaEventRecord(e1, comp));
    if (!(race && t >= 150)) SC_CUDA(cudaStreamWaitEvent(cs, e1, 0));
    SC_NCCL(ncclAllReduce(in, out, 256, ncclFloat32, ncclSum, comm, cs));
    SC_CUDA(cudaEventRecord(e2, cs));
    SC_CUDA(cudaStreamWaitEvent(comp, e2, 0));
    SC_CUDA(cudaStreamSynchronize(comp));
    float v;
    SC_CUDA(cudaMemcpy(&v, out + 255, sizeof v, cudaMemcpyDeviceToHost));
    if (v != (float)(1 + 2 * t)) bad++;
    SC_CUDA(cudaEventDestroy(e1));
    SC_CUDA(cudaEventDestroy(e2));
    SC_CUDA(cudaStreamDestroy(cs));
  }
  SC_CUDA(cudaFree(in));
  SC_CUDA(cudaFree(out));
  SC_CUDA(cudaStreamDestroy(comp));
  SC_NCCL(ncclCommDestroy(comm));
  sc_sh->result[rank] = bad;
  return bad ? SC_DATA_WRONG : 0;
}

#include <stdatomic.h>
static ncclComm_t wd_comm;
static cudaEvent_t wd_events[8];
static atomic_int wd_latest = -1, wd_stop;
static atomic_long wd_polls;
static void *watchdog_thread(void *arg) {
  int dev = *(int *)arg;
  SC_CUDA(cudaSetDevice(dev));
  while (!atomic_load(&wd_stop)) {
    ncclResult_t st;
    SC_NCCL(ncclCommGetAsyncError(wd_comm, &st));
    if (st != ncclSuccess) fprintf(stderr, "watchdog: async error %d\n", (int)st);
    int k = atomic_load(&wd_latest);
    if (k >= 0) {
      cudaError_t q = cudaEventQuery(wd_events[k]);
      if (q != cudaSuccess && q != cudaErrorNotReady) fprintf(stderr, "watchdog: query %d\n", (int)q);
    }
    atomic_fetch_add(&wd_polls, 1);
    struct timespec ts = {0, 300 * 1000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static int watchdog_rank(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  SC_NCCL(ncclCommInitRank(&wd_comm, nranks, id, rank));
  int lo, hi;
  SC_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t cur, pool;
  SC_CUDA(cudaStreamCreate(&cur));
  SC_CUDA(cudaStreamCreateWithPriority(&pool, cudaStreamNonBlocking, hi));
  cudaEvent_t start;
  SC_CUDA(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
  for (int k = 0; k < 8; k++) SC_CUDA(cudaEventCreateWithFlags(&wd_events[k], cudaEventDisableTiming));
  float *a, *b;
  SC_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, N * sizeof(float)));
  int dev = rank;
  pthread_t th;
  pthread_create(&th, NULL, watchdog_thread, &dev);
  /* The loop below takes ~70 ms; on a loaded machine the watchdog thread
   * may not be scheduled within it. Wait (up to 10 s) for its first poll,
   * so that it polls while the operations run and wd_polls == 0 below
   * means a watchdog that cannot poll, not a slow scheduler. */
  for (int w = 0; w < 10000 && atomic_load(&wd_polls) == 0; w++) {
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  long bad = 0;
  for (int t = 0; t < 40; t++) {
    int k = t % 8;
    sc_fill(a, N, (float)(rank + t), 0.0f, cur);
    SC_CUDA(cudaEventRecord(start, cur));
    SC_CUDA(cudaStreamWaitEvent(pool, start, 0));
    SC_NCCL(ncclAllReduce(a, b, N, ncclFloat32, ncclSum, wd_comm, pool));
    SC_CUDA(cudaEventRecord(wd_events[k], pool));
    atomic_store(&wd_latest, k);
    SC_CUDA(cudaStreamWaitEvent(cur, wd_events[k], 0)); /* work.wait() */
    if (t % 10 == 9) {
      SC_CUDA(cudaStreamSynchronize(cur));
      bad += check_all(b, N, (float)(6 + 4 * t), "allreduce");
    }
  }
  SC_CUDA(cudaStreamSynchronize(cur));
  atomic_store(&wd_stop, 1);
  pthread_join(th, NULL);
  if (atomic_load(&wd_polls) == 0) bad++;
  for (int k = 0; k < 8; k++) SC_CUDA(cudaEventDestroy(wd_events[k]));
  SC_CUDA(cudaEventDestroy(start));
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  SC_CUDA(cudaStreamDestroy(cur));
  SC_CUDA(cudaStreamDestroy(pool));
  SC_NCCL(ncclCommDestroy(wd_comm));
  sc_sh->result[rank] = bad;
  return bad ? SC_DATA_WRONG : 0;
}

static int scale_rank(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t world, quad;
  SC_NCCL(ncclCommInitRank(&world, nranks, id, rank));
  SC_NCCL(ncclCommSplit(world, rank / 4, rank, &quad, NULL));
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  long c = 64;
  float *a, *b, *r;
  SC_CUDA(cudaMalloc((void **)&a, nranks * c * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&b, nranks * c * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&r, c * sizeof(float)));
  long bad = 0;
  for (int t = 0; t < 4; t++) {
    sc_fill(a, nranks * c, (float)(rank * 100 + t), 0.0f, s);
    SC_NCCL(ncclAlltoAll(a, b, c, ncclFloat32, world, s));
    sc_fill(r, c, 1.0f, 0.0f, s);
    SC_NCCL(ncclAllReduce(r, r, c, ncclFloat32, ncclSum, world, s));
    SC_NCCL(ncclAllReduce(r, r, c, ncclFloat32, ncclSum, quad, s));
    SC_CUDA(cudaStreamSynchronize(s));
    bad += check_all(r, c, (float)(nranks * 4), "allreduce");
    for (int p = 0; p < nranks; p++) bad += check_all(b + p * c, c, (float)(p * 100 + t), "alltoall");
  }
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaFree(b));
  SC_CUDA(cudaFree(r));
  SC_CUDA(cudaStreamDestroy(s));
  SC_NCCL(ncclCommDestroy(quad));
  SC_NCCL(ncclCommDestroy(world));
  sc_sh->result[rank] = bad;
  return bad ? SC_DATA_WRONG : 0;
}

static int many_rank(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  enum { K = 40 };
  ncclComm_t world, c[K];
  SC_NCCL(ncclCommInitRank(&world, nranks, id, rank));
  for (int k = 0; k < K; k++) SC_NCCL(ncclCommSplit(world, k % 2 == 0 ? 0 : rank % 2, rank, &c[k], NULL));
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *a;
  SC_CUDA(cudaMalloc((void **)&a, 256 * sizeof(float)));
  long bad = 0;
  for (int t = 0; t < 3; t++) {
    for (int k = 0; k < K; k++) {
      sc_fill(a, 256, 1.0f, 0.0f, s);
      SC_NCCL(ncclAllReduce(a, a, 256, ncclFloat32, ncclSum, c[k], s));
    }
    SC_CUDA(cudaStreamSynchronize(s));
    bad += check_all(a, 256, 2.0f, "allreduce"); /* the last (k odd) group has 2 members */
  }
  for (int k = 0; k < K; k++) SC_NCCL(ncclCommDestroy(c[k]));
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaStreamDestroy(s));
  SC_NCCL(ncclCommDestroy(world));
  sc_sh->result[rank] = bad;
  return bad ? SC_DATA_WRONG : 0;
}

static int wide_rank(int rank, int nranks, ncclUniqueId id, void *arg) {
  int skip = *(int *)arg;
  enum { K = 12 };
  ncclComm_t world, c[K];
  cudaStream_t s[K];
  float *a[K];
  SC_NCCL(ncclCommInitRank(&world, nranks, id, rank));
  for (int k = 0; k < K; k++) {
    SC_NCCL(ncclCommSplit(world, 0, rank, &c[k], NULL));
    SC_CUDA(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    SC_CUDA(cudaMalloc((void **)&a[k], 1024 * sizeof(float)));
  }
  long bad = 0;
  for (int t = 0; t < 3; t++) {
    for (int k = 0; k < K; k++) sc_fill(a[k], 1024, (float)(k + t), 0.0f, s[k]);
    SC_NCCL(ncclGroupStart());
    for (int k = 0; k < K; k++)
      if (!(skip && rank == 1 && k == 10 && t == 1)) SC_NCCL(ncclAllReduce(a[k], a[k], 1024, ncclFloat32, ncclSum, c[k], s[k]));
    SC_NCCL(ncclGroupEnd());
    for (int k = 0; k < K; k++) {
      SC_CUDA(cudaStreamSynchronize(s[k]));
      if (!skip) bad += check_all(a[k], 1024, (float)(2 * (k + t)), "allreduce");
    }
  }
  for (int k = 0; k < K; k++) {
    SC_NCCL(ncclCommDestroy(c[k]));
    SC_CUDA(cudaStreamDestroy(s[k]));
    SC_CUDA(cudaFree(a[k]));
  }
  SC_NCCL(ncclCommDestroy(world));
  sc_sh->result[rank] = bad;
  return bad ? SC_DATA_WRONG : 0;
}

static int perf_sane_rank(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  int lo, hi;
  SC_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t comp, cs;
  SC_CUDA(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  SC_CUDA(cudaStreamCreateWithPriority(&cs, cudaStreamNonBlocking, hi));
  cudaEvent_t grad_ready[2], reduced[2];
  for (int k = 0; k < 2; k++) {
    SC_CUDA(cudaEventCreateWithFlags(&grad_ready[k], cudaEventDisableTiming));
    SC_CUDA(cudaEventCreateWithFlags(&reduced[k], cudaEventDisableTiming));
  }
  const long G = (2L << 20) / sizeof(float);
  float *grad[2], *act;
  for (int k = 0; k < 2; k++) SC_CUDA(cudaMalloc((void **)&grad[k], G * sizeof(float)));
  SC_CUDA(cudaMalloc((void **)&act, 4096 * sizeof(float)));
  long bad = 0;
  for (int t = 0; t < 150; t++) {
    int k = t % 2;
    if (t >= 2) SC_CUDA(cudaStreamWaitEvent(comp, reduced[k], 0)); /* buffer k free again */
    sc_fill(grad[k], G, (float)(rank + 1), 0.0f, comp);             /* backward */
    SC_CUDA(cudaEventRecord(grad_ready[k], comp));
    SC_CUDA(cudaStreamWaitEvent(cs, grad_ready[k], 0));
    SC_NCCL(ncclAllReduce(grad[k], grad[k], G, ncclFloat32, ncclSum, comm, cs));
    SC_CUDA(cudaEventRecord(reduced[k], cs));
    sc_fill(act, 4096, (float)t, 1.0f, comp); /* next forward overlaps the AllReduce */
    if (t % 50 == 49) {
      SC_CUDA(cudaDeviceSynchronize()); /* checkpoint */
      bad += check_all(grad[k], 1024, 3.0f, "grad");
    }
  }
  SC_CUDA(cudaDeviceSynchronize());
  for (int k = 0; k < 2; k++) {
    SC_CUDA(cudaFree(grad[k]));
    SC_CUDA(cudaEventDestroy(grad_ready[k]));
    SC_CUDA(cudaEventDestroy(reduced[k]));
  }
  SC_CUDA(cudaFree(act));
  SC_CUDA(cudaStreamDestroy(comp));
  SC_CUDA(cudaStreamDestroy(cs));
  SC_NCCL(ncclCommDestroy(comm));
  sc_sh->result[rank] = bad;
  return bad ? SC_DATA_WRONG : 0;
}

static int shrink_rank(int rank, int nranks, ncclUniqueId id, void *arg) {
  (void)arg;
  ncclComm_t comm;
  SC_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t s;
  SC_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *a;
  SC_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
  long bad = 0;
  for (int t = 0; t < 2; t++) {
    sc_fill(a, N, 1.0f, 0.0f, s);
    SC_NCCL(ncclAllReduce(a, a, N, ncclFloat32, ncclSum, comm, s));
    SC_CUDA(cudaStreamSynchronize(s));
    bad += check_all(a, N, (float)nranks, "allreduce");
  }
  sc_barrier(); /* everyone is done with the 4-rank communicator */
  if (rank == 3) {
    SC_NCCL(ncclCommDestroy(comm));
    sc_sh->result[rank] = bad;
    return bad ? SC_DATA_WRONG : 0;
  }
  int excl[1] = {3};
  ncclComm_t small;
  SC_NCCL(ncclCommShrink(comm, excl, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
  int n = 0;
  SC_NCCL(ncclCommCount(small, &n));
  for (int t = 0; t < 3; t++) {
    sc_fill(a, N, 1.0f, 0.0f, s);
    SC_NCCL(ncclAllReduce(a, a, N, ncclFloat32, ncclSum, small, s));
    SC_CUDA(cudaStreamSynchronize(s));
    bad += check_all(a, N, (float)n, "allreduce after shrink");
  }
  if (n != 3) bad++;
  SC_NCCL(ncclCommDestroy(small));
  SC_NCCL(ncclCommDestroy(comm));
  SC_CUDA(cudaFree(a));
  SC_CUDA(cudaStreamDestroy(s));
  sc_sh->result[rank] = bad;
  return bad ? SC_DATA_WRONG : 0;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "multidev";
  if (is("single")) return run_single();
  if (is("multidev")) return sc_fork_ranks(2, multidev_proc, NULL);
  if (is("ptds")) return sc_fork_ranks(4, ptds_rank, NULL);
  if (is("shrink")) return sc_fork_ranks(4, shrink_rank, NULL);
  if (is("legacy")) return sc_fork_ranks(2, legacy_rank, NULL);
  if (is("watchdog")) return sc_fork_ranks(4, watchdog_rank, NULL);
  if (is("scale16")) return sc_fork_ranks(16, scale_rank, NULL);
  if (is("perf_sane")) return sc_fork_ranks(2, perf_sane_rank, NULL);
  if (is("many_comms")) return sc_fork_ranks(4, many_rank, NULL);
  int wskip = is("wide_skip");
  if (is("wide_group") || wskip) return sc_fork_ranks(2, wide_rank, &wskip);
  int race = is("churn_race");
  if (is("churn") || race) return sc_fork_ranks(2, churn_rank, &race);
  return 1;
}
